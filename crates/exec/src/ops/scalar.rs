//! Values and local derivatives of scalar operations, for the fast recording path of floats tracked
//! at one level: an operation there records its derivatives as plain numbers (`Rec::Scalar1`,
//! `Rec::Pair` and `Rec::Scalar2`) instead of saving its operands.
//!
//! Each derivative here is the plain-number form of the corresponding tensor rule in
//! `autodiff::backward`, including the decisions at kinks and ties (documented there); the tests
//! compare the two.

use tensor::{BinaryOp, UnaryOp};

/// `op(x)` and its derivative at `x`.
#[inline]
pub(crate) fn unary_with_derivative(op: UnaryOp, x: f64) -> (f64, f64) {
    let y = op.apply(x);
    let derivative = match op {
        UnaryOp::Neg => -1.0,
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
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne => {
            (0.0, 0.0)
        }
    };
    (z, dx, dy)
}

/// The partials of `x^y = z`: `y x^(y-1)` (zero when `y == 0`, where the power is constant) and
/// `z ln x` (zero when `x == 0`, the limit for positive `y`), as PyTorch and JAX define them.
#[inline]
pub(crate) fn pow_partials(x: f64, y: f64, z: f64) -> (f64, f64) {
    let dx = if y == 0.0 { 0.0 } else { y * x.powf(y - 1.0) };
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

/// The derivative of `relu`: 1 for positive inputs, 0 otherwise (also at 0, as in PyTorch).
#[inline]
pub(crate) fn step(x: f64) -> f64 {
    if x > 0.0 { 1.0 } else { 0.0 }
}
