//! Element-wise operations: the unary math functions and the binary arithmetic, comparison and
//! `max`/`min` operators, with NumPy broadcasting.
//!
//! Every operation takes its tensors by value and writes into an operand's buffer when no clone
//! shares it and it already has the result's shape, so chains like `exp(a) * b + c` allocate one
//! buffer. Each operator is matched once per call, outside the loop, so the loop body is a plain
//! function call the compiler can inline and vectorise.

use ndarray::{IxDyn, Zip};

use super::allocation::check_allocation;
use super::broadcast::broadcast_shapes;
use super::error::TensorError;
use super::{Tensor, vector_math};

/// A differentiable function of one number, applied to every element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    /// Computed by a vectorised routine within one unit in the last place that gives the same
    /// bits on every machine.
    Tanh,
    /// `e^x`, computed by a vectorised routine within one unit in the last place that gives
    /// the same bits on every machine.
    Exp,
    /// The natural logarithm, Nabla's `ln` and `log`.
    Ln,
    Log2,
    Log10,
    Sqrt,
    Abs,
    /// `1 / (1 + e^-x)`, computed without overflow for any `x`.
    Sigmoid,
    /// `max(x, 0)`; NaN stays NaN.
    Relu,
    /// `ln(1 + e^x)`, computed without overflow for any `x`.
    Softplus,
    /// The largest integer not above `x`; its derivative is 0.
    Floor,
    /// The smallest integer not below `x`; its derivative is 0.
    Ceil,
    /// The nearest integer, halves to even as NumPy and PyTorch round; its derivative is 0.
    Round,
    /// `x` with its fraction dropped (towards zero); its derivative is 0.
    Trunc,
    /// -1, 0 or 1 (NaN stays NaN); its derivative is 0.
    Sign,
    /// The error function, musl's (through the `libm` crate), the same on every machine.
    Erf,
    /// `1 - erf(x)` without the cancellation for large `x`.
    Erfc,
    /// `x Φ(x)` with Φ the standard normal distribution function, written `x erfc(-x / √2) / 2`
    /// so that it stays accurate for negative `x`.
    Gelu,
    /// GELU's tanh approximation `x (1 + tanh(√(2/π) (x + 0.044715 x^3))) / 2` (PyTorch's
    /// `approximate="tanh"`).
    GeluTanh,
    /// `x sigmoid(x)`.
    Silu,
    /// `x / (1 + |x|)`.
    Softsign,
    /// `ln(1 + x)`, accurate for small `x`.
    Log1p,
    /// `e^x - 1`, accurate for small `x`.
    Expm1,
    /// `2^x`, exact at integers.
    Exp2,
    /// The real cube root.
    Cbrt,
}

/// Runs `$body` with `$kernel` bound to the scalar function of a [`UnaryOp`], so that each
/// operator gets its own monomorphised loop.
macro_rules! with_unary_kernel {
    ($op:expr, $kernel:ident => $body:expr) => {
        match $op {
            UnaryOp::Neg => {
                let $kernel = |x: f64| -x;
                $body
            }
            UnaryOp::Sin => {
                let $kernel = f64::sin;
                $body
            }
            UnaryOp::Cos => {
                let $kernel = f64::cos;
                $body
            }
            UnaryOp::Tan => {
                let $kernel = f64::tan;
                $body
            }
            UnaryOp::Asin => {
                let $kernel = f64::asin;
                $body
            }
            UnaryOp::Acos => {
                let $kernel = f64::acos;
                $body
            }
            UnaryOp::Atan => {
                let $kernel = f64::atan;
                $body
            }
            UnaryOp::Sinh => {
                let $kernel = f64::sinh;
                $body
            }
            UnaryOp::Cosh => {
                let $kernel = f64::cosh;
                $body
            }
            UnaryOp::Tanh => {
                let $kernel = vector_math::tanh;
                $body
            }
            UnaryOp::Exp => {
                let $kernel = vector_math::exp;
                $body
            }
            UnaryOp::Ln => {
                let $kernel = f64::ln;
                $body
            }
            UnaryOp::Log2 => {
                let $kernel = f64::log2;
                $body
            }
            UnaryOp::Log10 => {
                let $kernel = f64::log10;
                $body
            }
            UnaryOp::Sqrt => {
                let $kernel = f64::sqrt;
                $body
            }
            UnaryOp::Abs => {
                let $kernel = f64::abs;
                $body
            }
            UnaryOp::Sigmoid => {
                let $kernel = sigmoid;
                $body
            }
            UnaryOp::Relu => {
                let $kernel = relu;
                $body
            }
            UnaryOp::Softplus => {
                let $kernel = softplus;
                $body
            }
            UnaryOp::Floor => {
                let $kernel = f64::floor;
                $body
            }
            UnaryOp::Ceil => {
                let $kernel = f64::ceil;
                $body
            }
            UnaryOp::Round => {
                let $kernel = f64::round_ties_even;
                $body
            }
            UnaryOp::Trunc => {
                let $kernel = f64::trunc;
                $body
            }
            UnaryOp::Sign => {
                let $kernel = sign;
                $body
            }
            UnaryOp::Erf => {
                let $kernel = libm::erf;
                $body
            }
            UnaryOp::Erfc => {
                let $kernel = libm::erfc;
                $body
            }
            UnaryOp::Gelu => {
                let $kernel = gelu;
                $body
            }
            UnaryOp::GeluTanh => {
                let $kernel = gelu_tanh;
                $body
            }
            UnaryOp::Silu => {
                let $kernel = |x: f64| x * sigmoid(x);
                $body
            }
            UnaryOp::Softsign => {
                let $kernel = |x: f64| x / (1.0 + x.abs());
                $body
            }
            UnaryOp::Log1p => {
                let $kernel = f64::ln_1p;
                $body
            }
            UnaryOp::Expm1 => {
                let $kernel = f64::exp_m1;
                $body
            }
            UnaryOp::Exp2 => {
                let $kernel = f64::exp2;
                $body
            }
            UnaryOp::Cbrt => {
                let $kernel = f64::cbrt;
                $body
            }
        }
    };
}

impl UnaryOp {
    /// Every unary operation, for tests and tables.
    pub const ALL: [UnaryOp; 34] = [
        UnaryOp::Neg,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Tan,
        UnaryOp::Asin,
        UnaryOp::Acos,
        UnaryOp::Atan,
        UnaryOp::Sinh,
        UnaryOp::Cosh,
        UnaryOp::Tanh,
        UnaryOp::Exp,
        UnaryOp::Ln,
        UnaryOp::Log2,
        UnaryOp::Log10,
        UnaryOp::Sqrt,
        UnaryOp::Abs,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Softplus,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Trunc,
        UnaryOp::Sign,
        UnaryOp::Erf,
        UnaryOp::Erfc,
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
        UnaryOp::Silu,
        UnaryOp::Softsign,
        UnaryOp::Log1p,
        UnaryOp::Expm1,
        UnaryOp::Exp2,
        UnaryOp::Cbrt,
    ];

    /// The Nabla built-in's name (`neg` for unary minus, `ln` for the natural logarithm).
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Tan => "tan",
            UnaryOp::Asin => "asin",
            UnaryOp::Acos => "acos",
            UnaryOp::Atan => "atan",
            UnaryOp::Sinh => "sinh",
            UnaryOp::Cosh => "cosh",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Exp => "exp",
            UnaryOp::Ln => "ln",
            UnaryOp::Log2 => "log2",
            UnaryOp::Log10 => "log10",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Abs => "abs",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::Softplus => "softplus",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Trunc => "trunc",
            UnaryOp::Sign => "sign",
            UnaryOp::Erf => "erf",
            UnaryOp::Erfc => "erfc",
            UnaryOp::Gelu => "gelu",
            // Nabla's `gelu(x, "tanh")`.
            UnaryOp::GeluTanh => "gelu_tanh",
            UnaryOp::Silu => "silu",
            UnaryOp::Softsign => "softsign",
            UnaryOp::Log1p => "log1p",
            UnaryOp::Expm1 => "expm1",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::Cbrt => "cbrt",
        }
    }

    /// The operation a built-in name denotes; `log` is the natural logarithm like `ln`.
    pub fn from_name(name: &str) -> Option<UnaryOp> {
        match name {
            "log" => Some(UnaryOp::Ln),
            _ => UnaryOp::ALL.into_iter().find(|op| op.name() == name),
        }
    }

    /// The operation on one number, exactly as the tensor operation computes it per element.
    #[inline]
    pub fn apply(self, x: f64) -> f64 {
        with_unary_kernel!(self, kernel => kernel(x))
    }
}

/// A function of two numbers, applied element-wise with broadcasting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    /// C's `fmod`: the result has the sign of the dividend.
    Rem,
    Pow,
    /// The larger operand; the left one on ties, NaN if either is NaN.
    Max,
    /// The smaller operand; the left one on ties, NaN if either is NaN.
    Min,
    /// Floored modulo, Python's and NumPy's `%`: the result has the sign of the divisor.
    Mod,
    /// `atan2(y, x)`: the angle of the point `(x, y)`, in `[-π, π]`.
    Atan2,
    /// `sqrt(x^2 + y^2)` without overflow or underflow in the squares.
    Hypot,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

/// Runs `$body` with `$kernel` bound to the scalar function of a [`BinaryOp`].
macro_rules! with_binary_kernel {
    ($op:expr, $kernel:ident => $body:expr) => {
        match $op {
            BinaryOp::Add => {
                let $kernel = |x: f64, y: f64| x + y;
                $body
            }
            BinaryOp::Sub => {
                let $kernel = |x: f64, y: f64| x - y;
                $body
            }
            BinaryOp::Mul => {
                let $kernel = |x: f64, y: f64| x * y;
                $body
            }
            BinaryOp::Div => {
                let $kernel = |x: f64, y: f64| x / y;
                $body
            }
            BinaryOp::Rem => {
                let $kernel = |x: f64, y: f64| x % y;
                $body
            }
            BinaryOp::Pow => {
                let $kernel = f64::powf;
                $body
            }
            BinaryOp::Max => {
                let $kernel = maximum;
                $body
            }
            BinaryOp::Min => {
                let $kernel = minimum;
                $body
            }
            BinaryOp::Mod => {
                let $kernel = floored_mod;
                $body
            }
            BinaryOp::Atan2 => {
                let $kernel = f64::atan2;
                $body
            }
            BinaryOp::Hypot => {
                let $kernel = f64::hypot;
                $body
            }
            BinaryOp::Lt => {
                let $kernel = |x: f64, y: f64| mask(x < y);
                $body
            }
            BinaryOp::Le => {
                let $kernel = |x: f64, y: f64| mask(x <= y);
                $body
            }
            BinaryOp::Gt => {
                let $kernel = |x: f64, y: f64| mask(x > y);
                $body
            }
            BinaryOp::Ge => {
                let $kernel = |x: f64, y: f64| mask(x >= y);
                $body
            }
            BinaryOp::Eq => {
                let $kernel = |x: f64, y: f64| mask(x == y);
                $body
            }
            BinaryOp::Ne => {
                let $kernel = |x: f64, y: f64| mask(x != y);
                $body
            }
        }
    };
}

impl BinaryOp {
    /// The operator as written in Nabla (`max` and `min` are built-in functions).
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Pow => "pow",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Mod => "mod",
            BinaryOp::Atan2 => "atan2",
            BinaryOp::Hypot => "hypot",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
        }
    }

    /// Whether the result is a 0.0/1.0 mask (and so has no gradient).
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne
        )
    }

    /// The operation on two numbers, exactly as the tensor operation computes it per element.
    #[inline]
    pub fn apply(self, x: f64, y: f64) -> f64 {
        with_binary_kernel!(self, kernel => kernel(x, y))
    }
}

/// Applies `op` to every element of `tensor`, in place when its buffer is not shared.
pub fn unary(op: UnaryOp, tensor: Tensor) -> Tensor {
    with_unary_kernel!(op, kernel => tensor.map(kernel))
}

/// `lhs op rhs` element-wise with NumPy broadcasting.
pub fn binary(op: BinaryOp, lhs: Tensor, rhs: Tensor) -> Result<Tensor, TensorError> {
    with_binary_kernel!(op, kernel => zip_map(lhs, rhs, kernel))
}

/// `lhs op rhs` for a tensor and a number, without materialising the number as a tensor.
pub fn binary_scalar_rhs(op: BinaryOp, lhs: Tensor, rhs: f64) -> Tensor {
    with_binary_kernel!(op, kernel => lhs.map(|x| kernel(x, rhs)))
}

/// `lhs op rhs` for a number and a tensor, without materialising the number as a tensor.
pub fn binary_scalar_lhs(op: BinaryOp, lhs: f64, rhs: Tensor) -> Tensor {
    with_binary_kernel!(op, kernel => rhs.map(|y| kernel(lhs, y)))
}

/// `target + scale * x`, or `target - scale * x` when `subtract`, in one pass over the elements
/// (in place when `target`'s buffer is not shared): the values of [`binary_scalar_lhs`] then
/// [`binary`], without the intermediate product.
pub fn scaled_update(
    target: Tensor,
    subtract: bool,
    scale: f64,
    x: Tensor,
) -> Result<Tensor, TensorError> {
    match subtract {
        true => zip_map(target, x, |a, b| a - scale * b),
        false => zip_map(target, x, |a, b| a + scale * b),
    }
}

/// Combines `lhs` and `rhs` element-wise with `f` after broadcasting them together.
///
/// The result reuses the buffer of an operand that has the result's shape and is not shared; an
/// operand with a single element is treated as a number rather than broadcast.
pub fn zip_map(
    lhs: Tensor,
    rhs: Tensor,
    f: impl Fn(f64, f64) -> f64 + Sync,
) -> Result<Tensor, TensorError> {
    let shape = if lhs.shape() == rhs.shape() {
        lhs.shape().to_vec()
    } else {
        broadcast_shapes(lhs.shape(), rhs.shape())?
    };
    if lhs.shape() == shape {
        if rhs.len() == 1 {
            let y = rhs.to_scalar()?;
            return Ok(lhs.map(|x| f(x, y)));
        }
        if lhs.is_unique() {
            let mut array = lhs.into_array();
            match (array.as_slice_mut(), rhs.array().as_slice()) {
                (Some(values), Some(other)) if rhs.shape() == shape => {
                    vector_math::zip_in_place(values, other, &f);
                }
                _ => array.zip_mut_with(rhs.array(), |x, &y| *x = f(*x, y)),
            }
            return Ok(Tensor::from(array));
        }
    }
    if rhs.shape() == shape {
        if lhs.len() == 1 {
            let x = lhs.to_scalar()?;
            return Ok(rhs.map(|y| f(x, y)));
        }
        if rhs.is_unique() {
            let mut array = rhs.into_array();
            match (array.as_slice_mut(), lhs.array().as_slice()) {
                (Some(values), Some(other)) if lhs.shape() == shape => {
                    vector_math::zip_in_place(values, other, |y, x| f(x, y));
                }
                _ => array.zip_mut_with(lhs.array(), |y, &x| *y = f(x, *y)),
            }
            return Ok(Tensor::from(array));
        }
    }
    if lhs.shape() == rhs.shape()
        && let (Some(lhs_values), Some(rhs_values)) =
            (lhs.array().as_slice(), rhs.array().as_slice())
    {
        return Tensor::from_vec(&shape, vector_math::zip_to_vec(lhs_values, rhs_values, f));
    }
    check_allocation(&shape)?;
    let broadcast_error =
        || TensorError::Broadcast { lhs: lhs.shape().to_vec(), rhs: rhs.shape().to_vec() };
    let lhs_view = lhs.array().broadcast(IxDyn(&shape)).ok_or_else(broadcast_error)?;
    let rhs_view = rhs.array().broadcast(IxDyn(&shape)).ok_or_else(broadcast_error)?;
    Ok(Tensor::from(Zip::from(lhs_view).and(rhs_view).map_collect(|&x, &y| f(x, y))))
}

fn mask(condition: bool) -> f64 {
    if condition { 1.0 } else { 0.0 }
}

pub(super) fn maximum(x: f64, y: f64) -> f64 {
    if x >= y || x.is_nan() { x } else { y }
}

pub(super) fn minimum(x: f64, y: f64) -> f64 {
    if x <= y || x.is_nan() { x } else { y }
}

fn sigmoid(x: f64) -> f64 {
    // Only ever exponentiate a non-positive number, so nothing overflows.
    if x >= 0.0 {
        1.0 / (1.0 + vector_math::exp(-x))
    } else {
        let e = vector_math::exp(x);
        e / (1.0 + e)
    }
}

/// -1, 0 or 1 by the sign of `x`, 0 for both zeros, NaN for NaN (NumPy's `sign`).
fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    }
}

/// `x - floor(x / y) y` as NumPy computes it: C's `fmod`, moved by one divisor when the signs
/// differ, and a zero with the divisor's sign.
fn floored_mod(x: f64, y: f64) -> f64 {
    let remainder = x % y;
    if remainder != 0.0 && (remainder < 0.0) != (y < 0.0) {
        remainder + y
    } else if remainder == 0.0 {
        0.0f64.copysign(y)
    } else {
        remainder
    }
}

/// `1/√2`.
const FRAC_1_SQRT_2: f64 = std::f64::consts::FRAC_1_SQRT_2;

fn gelu(x: f64) -> f64 {
    0.5 * x * libm::erfc(-x * FRAC_1_SQRT_2)
}

/// `√(2/π)`, the scale of GELU's tanh approximation.
pub const GELU_TANH_SCALE: f64 = 0.797_884_560_802_865_4;

/// The cubic coefficient of GELU's tanh approximation.
pub const GELU_TANH_CUBIC: f64 = 0.044_715;

fn gelu_tanh(x: f64) -> f64 {
    let inner = GELU_TANH_SCALE * (x + GELU_TANH_CUBIC * x * x * x);
    0.5 * x * (1.0 + vector_math::tanh(inner))
}

fn relu(x: f64) -> f64 {
    if x <= 0.0 { 0.0 } else { x }
}

fn softplus(x: f64) -> f64 {
    // ln(1 + e^x) = max(x, 0) + ln(1 + e^-|x|), whose exponential never overflows.
    x.max(0.0) + vector_math::exp(-x.abs()).ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_vec(shape, values.to_vec()).unwrap()
    }

    #[test]
    fn arithmetic_broadcasts_rank_zero_and_rank_one_operands() {
        let matrix = tensor(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let row = tensor(&[3], &[10.0, 20.0, 30.0]);
        let sum = binary(BinaryOp::Add, matrix.clone(), row.clone()).unwrap();
        assert_eq!(sum.to_string(), "[[11.0, 22.0, 33.0], [14.0, 25.0, 36.0]]");
        let difference = binary(BinaryOp::Sub, row, matrix.clone()).unwrap();
        assert_eq!(difference.to_string(), "[[9.0, 18.0, 27.0], [6.0, 15.0, 24.0]]");
        let scaled = binary(BinaryOp::Mul, Tensor::scalar(2.0), matrix.clone()).unwrap();
        assert_eq!(scaled.to_string(), "[[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]]");
        let halved = binary(BinaryOp::Div, matrix, Tensor::scalar(2.0)).unwrap();
        assert_eq!(halved.to_string(), "[[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]]");
    }

    #[test]
    fn broadcasting_grows_both_operands() {
        let column = tensor(&[2, 1], &[1.0, 2.0]);
        let row = tensor(&[3], &[10.0, 20.0, 30.0]);
        let product = binary(BinaryOp::Mul, column, row).unwrap();
        assert_eq!(product.to_string(), "[[10.0, 20.0, 30.0], [20.0, 40.0, 60.0]]");
        // A single element of higher rank is not a number: the result takes its rank.
        let grown = binary(BinaryOp::Add, tensor(&[2], &[1.0, 2.0]), tensor(&[1, 1], &[1.0]));
        assert_eq!(grown.unwrap().shape(), [1, 2]);
        let scalars = binary(BinaryOp::Add, Tensor::scalar(1.0), Tensor::scalar(2.0)).unwrap();
        assert_eq!((scalars.rank(), scalars.to_scalar()), (0, Ok(3.0)));
    }

    #[test]
    fn mismatched_shapes_are_errors() {
        let error =
            binary(BinaryOp::Add, Tensor::zeros(&[2, 3]).unwrap(), Tensor::zeros(&[2]).unwrap());
        assert_eq!(
            error.unwrap_err().to_string(),
            "shape mismatch: Tensor[2][3] and Tensor[2] cannot be broadcast together"
        );
    }

    #[test]
    fn unique_operands_are_overwritten_and_shared_ones_are_not() {
        let lhs = tensor(&[2], &[1.0, 2.0]);
        let pointer = lhs.array().as_ptr();
        let rhs = tensor(&[2], &[3.0, 4.0]);
        let kept = rhs.clone();
        let sum = binary(BinaryOp::Add, lhs, rhs).unwrap();
        assert_eq!(sum.array().as_ptr(), pointer);
        assert_eq!((sum.to_vec(), kept.to_vec()), (vec![4.0, 6.0], vec![3.0, 4.0]));

        // The right operand's buffer is reused when only it has the result's shape.
        let matrix = tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let pointer = matrix.array().as_ptr();
        let shifted = binary(BinaryOp::Sub, tensor(&[2], &[10.0, 20.0]), matrix).unwrap();
        assert_eq!(shifted.array().as_ptr(), pointer);
        assert_eq!(shifted.to_vec(), [9.0, 18.0, 7.0, 16.0]);

        // Squaring a tensor by itself reads both operands from one shared buffer.
        let x = tensor(&[2], &[3.0, 4.0]);
        assert_eq!(binary(BinaryOp::Mul, x.clone(), x.clone()).unwrap().to_vec(), [9.0, 16.0]);
        assert_eq!(x.to_vec(), [3.0, 4.0]);
    }

    #[test]
    fn scaled_updates_match_the_product_then_the_sum() {
        let target = tensor(&[2, 2], &[1.0, -2.0, 0.3, 4.0]);
        let x = tensor(&[2, 2], &[0.7, 0.1, -3.0, 1e-3]);
        for subtract in [true, false] {
            let op = if subtract { BinaryOp::Sub } else { BinaryOp::Add };
            let product = binary_scalar_lhs(BinaryOp::Mul, 0.01, x.clone());
            let expected = binary(op, target.clone(), product).unwrap();
            let fused = scaled_update(target.clone(), subtract, 0.01, x.clone()).unwrap();
            assert_eq!(fused.to_vec(), expected.to_vec());
        }
        // A target nobody else holds is updated in place; a shared one is left alone.
        let unique = tensor(&[2], &[1.0, 2.0]);
        let pointer = unique.array().as_ptr();
        let updated = scaled_update(unique, true, 0.5, tensor(&[2], &[2.0, 2.0])).unwrap();
        assert_eq!((updated.array().as_ptr(), updated.to_vec()), (pointer, vec![0.0, 1.0]));
        let kept = updated.clone();
        let moved = scaled_update(updated, false, 2.0, tensor(&[2], &[1.0, 1.0])).unwrap();
        assert_eq!((kept.to_vec(), moved.to_vec()), (vec![0.0, 1.0], vec![2.0, 3.0]));
    }

    #[test]
    fn remainder_is_fmod_and_pow_is_powf() {
        let x = tensor(&[4], &[7.0, -7.0, 7.5, 1.0]);
        let y = tensor(&[4], &[3.0, 3.0, 2.0, 0.0]);
        let remainder = binary(BinaryOp::Rem, x, y).unwrap().to_vec();
        assert_eq!(remainder[..3], [1.0, -1.0, 1.5]);
        assert!(remainder[3].is_nan());
        assert_eq!(
            binary_scalar_rhs(BinaryOp::Pow, tensor(&[2], &[2.0, 3.0]), 2.0).to_vec(),
            [4.0, 9.0]
        );
        assert_eq!(
            binary_scalar_lhs(BinaryOp::Pow, 2.0, tensor(&[2], &[3.0, 0.5])).to_vec(),
            [8.0, 2f64.sqrt()]
        );
    }

    #[test]
    fn comparisons_give_masks() {
        let x = tensor(&[3], &[1.0, 2.0, f64::NAN]);
        let two = Tensor::scalar(2.0);
        let cases = [
            (BinaryOp::Lt, [1.0, 0.0, 0.0]),
            (BinaryOp::Le, [1.0, 1.0, 0.0]),
            (BinaryOp::Gt, [0.0, 0.0, 0.0]),
            (BinaryOp::Ge, [0.0, 1.0, 0.0]),
            (BinaryOp::Eq, [0.0, 1.0, 0.0]),
            (BinaryOp::Ne, [1.0, 0.0, 1.0]),
        ];
        for (op, expected) in cases {
            assert!(op.is_comparison());
            assert_eq!(binary(op, x.clone(), two.clone()).unwrap().to_vec(), expected, "{op:?}");
        }
    }

    #[test]
    fn max_and_min_propagate_nan_and_prefer_the_left_operand() {
        assert_eq!(BinaryOp::Max.apply(1.0, 2.0), 2.0);
        assert_eq!(BinaryOp::Min.apply(1.0, 2.0), 1.0);
        assert!(BinaryOp::Max.apply(f64::NAN, 2.0).is_nan());
        assert!(BinaryOp::Max.apply(2.0, f64::NAN).is_nan());
        assert!(BinaryOp::Min.apply(2.0, f64::NAN).is_nan());
        assert!(BinaryOp::Max.apply(0.0, -0.0).is_sign_positive());
        assert!(BinaryOp::Max.apply(-0.0, 0.0).is_sign_negative());
    }

    #[test]
    fn unary_functions_match_their_definitions() {
        let x = tensor(&[3], &[-1.0, 0.0, 2.0]);
        assert_eq!(unary(UnaryOp::Neg, x.clone()).to_vec(), [1.0, -0.0, -2.0]);
        assert_eq!(unary(UnaryOp::Abs, x.clone()).to_vec(), [1.0, 0.0, 2.0]);
        assert_eq!(unary(UnaryOp::Relu, x.clone()).to_vec(), [0.0, 0.0, 2.0]);
        assert_eq!(unary(UnaryOp::Exp, x.clone()).to_vec(), [(-1f64).exp(), 1.0, 2f64.exp()]);
        assert_eq!(unary(UnaryOp::Sigmoid, Tensor::scalar(0.0)).to_scalar(), Ok(0.5));
        assert_eq!(unary(UnaryOp::Log2, Tensor::scalar(8.0)).to_scalar(), Ok(3.0));
        assert_eq!(unary(UnaryOp::Log10, Tensor::scalar(1000.0)).to_scalar(), Ok(3.0));
        assert_eq!(unary(UnaryOp::Sqrt, Tensor::scalar(9.0)).to_scalar(), Ok(3.0));
        assert_eq!(unary(UnaryOp::Ln, Tensor::scalar(1.0)).to_scalar(), Ok(0.0));
        assert!(UnaryOp::Relu.apply(f64::NAN).is_nan());
        for op in UnaryOp::ALL {
            assert_eq!(UnaryOp::from_name(op.name()), Some(op));
        }
        assert_eq!(UnaryOp::from_name("log"), Some(UnaryOp::Ln));
        assert_eq!(UnaryOp::from_name("erfcx"), None);
    }

    /// `actual` equals `expected` within `tolerance` relative to each expected value's magnitude
    /// (and bit for bit in the sign of zeros and in NaN).
    fn assert_values(name: &str, actual: &[f64], expected: &[f64], tolerance: f64) {
        assert_eq!(actual.len(), expected.len(), "{name}");
        for (i, (&a, &e)) in actual.iter().zip(expected).enumerate() {
            let close = (a - e).abs() <= tolerance * e.abs().max(f64::MIN_POSITIVE)
                && a.is_sign_negative() == e.is_sign_negative();
            assert!(close || (a.is_nan() && e.is_nan()), "{name}[{i}]: {a:e} against {e:e}");
        }
    }

    // The tables are NumPy's output pasted as printed, some of which clippy takes for constants.
    #[allow(clippy::approx_constant)]
    #[test]
    fn new_unary_functions_match_numpy_scipy_and_pytorch() {
        // Computed once with NumPy 2.4 (`floor` ... `sign`, `log1p`, `expm1`, `exp2`, `cbrt`),
        // SciPy 1.17 (`erf`, `erfc`) and PyTorch 2.15 in float64 (the activations), except
        // `gelu`, from mpmath at 40 digits: PyTorch's `0.5 x (1 + erf(x/√2))` loses digits
        // for negative x (-0.00404969409489031 at -3, 77 units in the last place away).
        let halves = [-3.5, -2.5, -1.5, -0.5, -0.0, 0.0, 0.3, 0.5, 1.5, 2.5, 7.25];
        let cases: [(UnaryOp, &[f64], &[f64]); 5] = [
            (
                UnaryOp::Floor,
                &halves,
                &[-4.0, -3.0, -2.0, -1.0, -0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 7.0],
            ),
            (UnaryOp::Ceil, &halves, &[-3.0, -2.0, -1.0, -0.0, -0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 8.0]),
            // Halves round to even.
            (
                UnaryOp::Round,
                &halves,
                &[-4.0, -2.0, -2.0, -0.0, -0.0, 0.0, 0.0, 0.0, 2.0, 2.0, 7.0],
            ),
            (
                UnaryOp::Trunc,
                &halves,
                &[-3.0, -2.0, -1.0, -0.0, -0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 7.0],
            ),
            (UnaryOp::Sign, &halves, &[-1.0, -1.0, -1.0, -1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]),
        ];
        for (op, x, expected) in cases {
            let actual: Vec<f64> = x.iter().map(|&x| op.apply(x)).collect();
            assert_values(op.name(), &actual, expected, 0.0);
        }
        assert!(UnaryOp::Sign.apply(f64::NAN).is_nan());
        let y = [-3.0, -1.0, -0.5, 0.0, 0.25, 1.0, 2.5, 6.0];
        #[rustfmt::skip]
        let cases: [(UnaryOp, &[f64], &[f64]); 7] = [
            (UnaryOp::Erf, &y, &[-0.9999779095030014, -0.8427007929497148, -0.5204998778130465, 0.0, 0.2763263901682369, 0.8427007929497148, 0.999593047982555, 1.0]),
            (UnaryOp::Erfc, &y, &[1.9999779095030015, 1.8427007929497148, 1.5204998778130465, 1.0, 0.7236736098317631, 0.15729920705028516, 0.00040695201744495886, 2.1519736712498913e-17]),
            (UnaryOp::Gelu, &y, &[-0.0040496940948902835, -0.15865525393145705, -0.15426876936299344, 0.0, 0.14967658142073093, 0.8413447460685429, 2.4844758366855597, 5.999999994080474]),
            (UnaryOp::GeluTanh, &y, &[-0.0036373920817729943, -0.1588080093917233, -0.15428599017485606, 0.0, 0.149675350701685, 0.8411919906082768, 2.484915733910001, 5.9999999999156035]),
            (UnaryOp::Silu, &y, &[-0.14227761953270035, -0.2689414213699951, -0.1887703343990727, 0.0, 0.14054412522144952, 0.7310585786300049, 2.3103545499468914, 5.985164261060192]),
            (UnaryOp::Softsign, &y, &[-0.75, -0.5, -0.3333333333333333, 0.0, 0.2, 0.5, 0.7142857142857143, 0.8571428571428571]),
            (UnaryOp::Log1p, &[-0.5, -1e-10, 0.0, 1e-10, 0.5, 3.0], &[-0.6931471805599453, -1.00000000005e-10, 0.0, 9.999999999500001e-11, 0.4054651081081644, 1.3862943611198906]),
        ];
        for (op, x, expected) in cases {
            let actual: Vec<f64> = x.iter().map(|&x| op.apply(x)).collect();
            // The rounding of x/√2 moves erfc by up to 2e-15 relative in the tail.
            assert_values(op.name(), &actual, expected, 2e-15);
        }
        #[rustfmt::skip]
        let cases: [(UnaryOp, &[f64], &[f64]); 3] = [
            (UnaryOp::Expm1, &[-0.5, -1e-10, 0.0, 1e-10, 0.5, 3.0], &[-0.3934693402873666, -9.999999999500001e-11, 0.0, 1.00000000005e-10, 0.6487212707001282, 19.085536923187668]),
            (UnaryOp::Exp2, &[-2.0, -0.5, 0.0, 0.5, 3.0, 10.0], &[0.25, 0.7071067811865476, 1.0, 1.4142135623730951, 8.0, 1024.0]),
            // NumPy's own cbrt gives -3.0000000000000004 for -27; the correctly rounded root is -3.
            (UnaryOp::Cbrt, &[-27.0, -2.0, 0.0, 1e-300, 8.0, 10.0], &[-3.0, -1.2599210498948734, 0.0, 1e-100, 2.0, 2.1544346900318834]),
        ];
        for (op, x, expected) in cases {
            let actual: Vec<f64> = x.iter().map(|&x| op.apply(x)).collect();
            assert_values(op.name(), &actual, expected, 4e-16);
        }
    }

    #[allow(clippy::approx_constant)]
    #[test]
    fn new_binary_functions_match_numpy() {
        let apply = |op: BinaryOp, x: &[f64], y: &[f64]| -> Vec<f64> {
            x.iter().zip(y).map(|(&x, &y)| op.apply(x, y)).collect()
        };
        // Computed once with NumPy 2.4: `arctan2`, `hypot`, `mod`.
        let (y, x) =
            ([1.0, -1.0, 0.0, -0.0, 3.0, -2.0, 0.0], [1.0, 1.0, 1.0, -1.0, -4.0, -2.0, 0.0]);
        let expected =
            [0.7853981633974483, -0.7853981633974483, 0.0, -3.141592653589793, 2.498091544796509];
        let expected = [&expected[..], &[-2.356194490192345, 0.0]].concat();
        assert_values("atan2", &apply(BinaryOp::Atan2, &y, &x), &expected, 2e-16);
        let (a, b) = ([3.0, -5.0, 0.0, 1e300, 1e-300], [4.0, 12.0, 0.0, 1e300, 1e-300]);
        let expected = [5.0, 13.0, 0.0, 1.4142135623730952e300, 1.414213562373095e-300];
        assert_values("hypot", &apply(BinaryOp::Hypot, &a, &b), &expected, 2e-16);
        let a = [7.0, -7.0, 7.0, -7.0, 7.5, -0.5, 0.0, 1e-20, 0.0];
        let b = [3.0, 3.0, -3.0, -3.0, 2.0, 2.0, 3.0, 3.0, -3.0];
        let expected = [1.0, 2.0, -2.0, -1.0, 1.5, 1.5, 0.0, 1e-20, -0.0];
        assert_values("mod", &apply(BinaryOp::Mod, &a, &b), &expected, 0.0);
        assert!(BinaryOp::Mod.apply(1.0, 0.0).is_nan());
    }

    #[test]
    fn sigmoid_and_softplus_are_stable_at_the_extremes() {
        assert_eq!(UnaryOp::Sigmoid.apply(1000.0), 1.0);
        assert_eq!(UnaryOp::Sigmoid.apply(-1000.0), 0.0);
        assert_eq!(UnaryOp::Sigmoid.apply(-800.0), 0.0);
        assert_eq!(UnaryOp::Softplus.apply(1000.0), 1000.0);
        assert_eq!(UnaryOp::Softplus.apply(-1000.0), 0.0);
        assert_eq!(UnaryOp::Softplus.apply(0.0), 2f64.ln());
        assert_eq!(UnaryOp::Softplus.apply(-40.0), vector_math::exp(-40.0).ln_1p());
    }

    #[test]
    fn strided_operands_are_combined_in_logical_order() {
        let matrix = tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let transposed = Tensor::from(matrix.array().clone().reversed_axes());
        let sum = binary(BinaryOp::Add, transposed, matrix).unwrap();
        assert_eq!(sum.to_vec(), [2.0, 5.0, 5.0, 8.0]);
    }
}
