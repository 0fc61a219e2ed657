//! Values and local derivatives of scalar operations, and their recording for floats tracked at
//! one level: an operation there records its derivatives as plain numbers (`Op::Scalar1` and
//! `Op::Scalar2`) instead of saving its operands. [`record_unary`] and [`record_binary`] are that
//! recording, for the interpreter's instructions and for `ops::unary` and `ops::binary` alike.
//!
//! Each derivative here is the plain-number form of the corresponding tensor rule in
//! `autodiff::backward`, including the decisions at kinks and ties (documented there); the tests
//! compare the two.

use crate::autodiff::{AdError, Tape, Term};
use crate::value::NodeRef;
use tensor::{BinaryOp, UnaryOp};

/// A tracked operand of a recorded scalar operation: its live node, and whether it is a fresh
/// temporary whose record the new one may absorb (see [`Term`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Input {
    pub(crate) node: NodeRef,
    pub(crate) fresh: bool,
}

/// Records `op(x)` for a float `x` tracked at a live level: the value and the new node.
#[inline(always)]
pub(crate) fn record_unary(
    tape: &mut Tape,
    op: UnaryOp,
    x: f64,
    input: Input,
) -> Result<(f64, NodeRef), AdError> {
    let (y, dy) = unary_with_derivative(op, x);
    let node = tape.fuse1(Term { node: input.node, partial: dy, fresh: input.fresh }, y)?;
    Ok((y, node))
}

/// Records `x op y` for an arithmetic `op` (not a comparison) on two floats, each plain or
/// tracked at a live level (`x_input`, `y_input`): the value and the new node. `None` when
/// neither is tracked or they are tracked at two levels, which the general path of
/// `ops::binary` takes.
#[inline(always)]
pub(crate) fn record_binary(
    tape: &mut Tape,
    op: BinaryOp,
    (x, x_input): (f64, Option<Input>),
    (y, y_input): (f64, Option<Input>),
) -> Option<Result<(f64, NodeRef), AdError>> {
    let (z, dx, dy) = binary_with_partials(op, x, y);
    let term = |input: Input, partial| Term { node: input.node, partial, fresh: input.fresh };
    let node = match (x_input, y_input) {
        (Some(p), None) => tape.fuse1(term(p, dx), z),
        (None, Some(q)) => tape.fuse1(term(q, dy), z),
        (Some(p), Some(q)) if p.node.level() == q.node.level() => {
            tape.fuse2(term(p, dx), term(q, dy), z)
        }
        _ => return None,
    };
    Some(node.map(|node| (z, node)))
}

/// `op(x)` and its derivative at `x`.
#[inline]
pub(crate) fn unary_with_derivative(op: UnaryOp, x: f64) -> (f64, f64) {
    // `sin` and `cos` with their derivatives are one `sin_cos`, which the compiler makes one
    // `sincos` call where the C library has one (glibc's gives the bits of `sin` and `cos`; the
    // scalar_float tests compare the recorded values with plain ones bit for bit). This function
    // then takes 0.77 of the instructions for `sin` (callgrind, the `x * a + sin(x) * b` gradient
    // loop: 110 against 142 a call), and the call 13 ns against 16.5 ns for the two (a chain of
    // dependent calls in C).
    match op {
        UnaryOp::Sin => return x.sin_cos(),
        UnaryOp::Cos => {
            let (sin, cos) = x.sin_cos();
            return (cos, -sin);
        }
        _ => {}
    }
    let y = op.apply(x);
    let derivative = match op {
        UnaryOp::Neg => -1.0,
        // Taken above as one `sin_cos`; these are what it computes.
        UnaryOp::Sin => x.cos(),
        UnaryOp::Cos => -x.sin(),
        UnaryOp::Tan => 1.0 + y * y,
        UnaryOp::Asin => 1.0 / (1.0 - x * x).sqrt(),
        UnaryOp::Acos => -1.0 / (1.0 - x * x).sqrt(),
        UnaryOp::Atan => 1.0 / (1.0 + x * x),
        UnaryOp::Sinh => x.cosh(),
        UnaryOp::Cosh => x.sinh(),
        UnaryOp::Tanh => 1.0 - y * y,
        UnaryOp::Exp => y,
        UnaryOp::Ln => 1.0 / x,
        UnaryOp::Log2 => 1.0 / (x * std::f64::consts::LN_2),
        UnaryOp::Log10 => 1.0 / (x * std::f64::consts::LN_10),
        UnaryOp::Sqrt => 0.5 / y,
        UnaryOp::Abs => sign(x),
        UnaryOp::Sigmoid => y * (1.0 - y),
        UnaryOp::Relu => step(x),
        UnaryOp::Softplus => UnaryOp::Sigmoid.apply(x),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc | UnaryOp::Sign => 0.0,
        UnaryOp::Erf => ERF_SCALE * (-x * x).exp(),
        UnaryOp::Erfc => -ERF_SCALE * (-x * x).exp(),
        UnaryOp::Gelu => {
            let cdf = 0.5 * UnaryOp::Erfc.apply(-x * std::f64::consts::FRAC_1_SQRT_2);
            cdf + x * NORMAL_DENSITY_SCALE * (-0.5 * x * x).exp()
        }
        UnaryOp::GeluTanh => {
            use tensor::{GELU_TANH_CUBIC as K, GELU_TANH_SCALE as C};
            let th = UnaryOp::Tanh.apply(C * (x + K * x * x * x));
            0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * C * (1.0 + 3.0 * K * x * x)
        }
        UnaryOp::Silu => {
            let s = UnaryOp::Sigmoid.apply(x);
            s * (1.0 + x * (1.0 - s))
        }
        UnaryOp::Softsign => {
            let d = 1.0 + x.abs();
            1.0 / (d * d)
        }
        UnaryOp::Log1p => 1.0 / (1.0 + x),
        UnaryOp::Expm1 => y + 1.0,
        UnaryOp::Exp2 => y * std::f64::consts::LN_2,
        UnaryOp::Cbrt => 1.0 / (3.0 * y * y),
    };
    (y, derivative)
}

/// `op(x, y)` and its partial derivatives, for the arithmetic operators (not comparisons).
#[inline(always)]
pub(crate) fn binary_with_partials(op: BinaryOp, x: f64, y: f64) -> (f64, f64, f64) {
    // The four arithmetic operators are written out (as `BinaryOp::apply` computes them), so
    // that they and their partials take one branch on `op`.
    let z = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div => x / y,
        _ => op.apply(x, y),
    };
    let (dx, dy) = match op {
        BinaryOp::Add => (1.0, 1.0),
        BinaryOp::Sub => (1.0, -1.0),
        BinaryOp::Mul => (y, x),
        BinaryOp::Div => (1.0 / y, -z / y),
        BinaryOp::Rem => (1.0, -(x / y).trunc()),
        BinaryOp::Pow => pow_partials(x, y, z),
        BinaryOp::Max => max_shares(x, y),
        BinaryOp::Min => min_shares(x, y),
        BinaryOp::Mod => (1.0, -(x / y).floor()),
        BinaryOp::Atan2 => {
            let squares = x * x + y * y;
            match squares == 0.0 {
                true => (0.0, 0.0),
                false => (y / squares, -x / squares),
            }
        }
        BinaryOp::Hypot => match z == 0.0 {
            true => (0.0, 0.0),
            false => (x / z, y / z),
        },
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne => {
            (0.0, 0.0)
        }
    };
    (z, dx, dy)
}

/// `2 / √π`, the scale of the derivative of `erf`.
pub(crate) const ERF_SCALE: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// `1 / √(2π)`, the scale of the standard normal density.
pub(crate) const NORMAL_DENSITY_SCALE: f64 = 0.398_942_280_401_432_7;

/// The partials of `x^y = z`: `y x^(y-1)`, zero where `x == 0` and `y == 0` (where the formula
/// is `0 * inf` and the power is the constant 1), and `z ln x`, zero where `x == 0` (the limit for
/// positive `y`), as in `autodiff::backward`.
#[inline]
pub(crate) fn pow_partials(x: f64, y: f64, z: f64) -> (f64, f64) {
    let dx = if x == 0.0 && y == 0.0 { 0.0 } else { y * x.powf(y - 1.0) };
    let dy = if x == 0.0 { 0.0 } else { z * x.ln() };
    (dx, dy)
}

/// How the gradient of `max(x, y)` splits between `x` and `y`: all to the larger, half each on a
/// tie (so `max(x, x)` has derivative 1, as in PyTorch and JAX), all to a NaN operand (the left
/// one if both are NaN).
#[inline]
pub(crate) fn max_shares(x: f64, y: f64) -> (f64, f64) {
    if x > y {
        (1.0, 0.0)
    } else if x < y {
        (0.0, 1.0)
    } else if x == y {
        (0.5, 0.5)
    } else if x.is_nan() {
        (1.0, 0.0)
    } else {
        (0.0, 1.0)
    }
}

/// How the gradient of `min(x, y)` splits: like [`max_shares`], to the smaller operand.
#[inline]
pub(crate) fn min_shares(x: f64, y: f64) -> (f64, f64) {
    // min(x, y) = -max(-x, -y), NaNs included.
    max_shares(-x, -y)
}

/// The derivative of `abs`: the sign, with 0 at 0 (the subgradient PyTorch and JAX use); NaN stays
/// NaN.
#[inline]
pub(crate) fn sign(x: f64) -> f64 {
    UnaryOp::Sign.apply(x)
}

/// The derivative of `relu`: 1 for positive inputs, 0 otherwise (also at 0, as in PyTorch).
#[inline]
pub(crate) fn step(x: f64) -> f64 {
    if x > 0.0 { 1.0 } else { 0.0 }
}
