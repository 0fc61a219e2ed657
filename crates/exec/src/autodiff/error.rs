//! The errors of operations on values and of differentiation, as complete sentences without spans:
//! the interpreter attaches the span of the failing operation and the call stack.
//!
//! [`AdError`] is one pointer (its [`AdErrorKind`] is boxed), so that `Result<Value, AdError>`, which
//! every operation returns, is no larger than a [`Value`](crate::value::Value): errors are rare,
//! results are not.

use std::fmt;

use tensor::einsum::EinsumError;
use tensor::{ByteCount, TensorError};

/// An error of a value operation, `backward`, `grad` or a transform.
#[derive(Clone, Debug, PartialEq)]
pub struct AdError(Box<AdErrorKind>);

impl AdError {
    pub fn new(kind: AdErrorKind) -> AdError {
        AdError(Box::new(kind))
    }

    pub fn kind(&self) -> &AdErrorKind {
        &self.0
    }

    /// A broken internal invariant.
    pub(crate) fn internal(reason: &'static str) -> AdError {
        AdError::new(AdErrorKind::Internal { reason })
    }
}

impl From<AdErrorKind> for AdError {
    fn from(kind: AdErrorKind) -> AdError {
        AdError::new(kind)
    }
}

/// Everything that can go wrong in a value operation, `backward`, `grad` or a transform.
#[derive(Clone, Debug, PartialEq)]
pub enum AdErrorKind {
    /// A tensor operation failed (shapes, indices, linear algebra, allocation).
    Tensor(TensorError),
    /// A contraction failed (labels, extents).
    Einsum(EinsumError),
    /// An operand of a type the operation does not take; the checker rules these out, so reaching
    /// it means the interpreter passed the wrong value.
    Operand { op: &'static str, found: String },
    /// Integer arithmetic overflowed.
    IntegerOverflow { op: &'static str },
    /// Integer division or remainder by zero.
    DivisionByZero,
    /// `grad(x)` before any `backward`.
    GradBeforeBackward,
    /// `backward(y)` where `y` does not depend on any `var`.
    BackwardWithoutVar,
    /// `backward(y)` where `y` was recorded on a graph that a `backward` has released; `by_last`
    /// when that was the most recent `backward`.
    ReleasedGraph { by_last: bool },
    /// `backward` inside a function that a transform is differentiating.
    BackwardInsideTransform,
    /// `grad(f)` or `hessian(f)` of a function whose result is not a single number.
    NotScalarOutput { transform: &'static str, found: String },
    /// A transform asked to differentiate with respect to a value that is not `float` or a tensor.
    NotDifferentiable { transform: &'static str, found: String },
    /// A transform's parameter index or argument count does not fit the call.
    Argument { transform: &'static str, reason: String },
    /// A cotangent or tangent whose shape differs from the value it belongs to.
    TangentShape { transform: &'static str, expected: String, found: String },
    /// Transforms nested deeper than a node reference can name.
    NestingTooDeep,
    /// A recording longer than the tape can index.
    TapeFull,
    /// The recordings (records, saved values) or a backward pass's adjoints would take more
    /// memory than the allocation limit (`--max-memory`).
    TapeMemory { bytes: u128, limit_bytes: usize },
    /// `--check-nan`: the backward rule of the operation `op`, recorded at `site`, turned the
    /// finite gradient `gradient` into `result`, which holds a NaN or an infinity; `saved` are
    /// the values the rule read.
    NonFiniteGradient {
        op: &'static str,
        site: Option<super::Site>,
        /// Whether `result` holds a NaN (rather than only infinities).
        nan: bool,
        gradient: String,
        result: String,
        saved: Vec<String>,
    },
    /// A custom derivative rule returned a value of another type than the gradient of the
    /// parameter it gives (`expected`).
    RuleResult { expected: String, found: String },
    /// A derivative this implementation does not provide.
    Unsupported { what: &'static str },
    /// A broken internal invariant: a bug in the autodiff engine, not in the program.
    Internal { reason: &'static str },
}

impl fmt::Display for AdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for AdErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdErrorKind::Tensor(error) => write!(f, "{error}"),
            AdErrorKind::Einsum(error) => write!(f, "{error}"),
            AdErrorKind::Operand { op, found } => {
                write!(f, "{op} cannot take a value of type {found}")
            }
            AdErrorKind::IntegerOverflow { op } => write!(f, "integer overflow in {op}"),
            AdErrorKind::DivisionByZero => f.write_str("integer division by zero"),
            AdErrorKind::GradBeforeBackward => {
                f.write_str("grad(x) was called before any backward(...) computed gradients")
            }
            AdErrorKind::BackwardWithoutVar => f.write_str(
                "backward(y): y does not depend on any `var`, so there is nothing to differentiate",
            ),
            AdErrorKind::ReleasedGraph { by_last } => write!(
                f,
                "backward(y): the graph of y was released by {} `backward`; compute y again \
                 after each `backward`",
                if *by_last { "the last" } else { "an earlier" }
            ),
            AdErrorKind::BackwardInsideTransform => f.write_str(
                "backward(...) cannot run inside a function that grad, jvp, vjp, hessian or \
                 jacobian is differentiating; return the value and differentiate it outside",
            ),
            AdErrorKind::NotScalarOutput { transform, found } => write!(
                f,
                "{transform} needs a function that returns a single float, but it returned {found}"
            ),
            AdErrorKind::NotDifferentiable { transform, found } => write!(
                f,
                "{transform} can only differentiate with respect to a float or a Tensor, not {found}"
            ),
            AdErrorKind::Argument { transform, reason } => write!(f, "{transform}: {reason}"),
            AdErrorKind::TangentShape { transform, expected, found } => write!(
                f,
                "{transform}: the tangent must have the type {expected}, but it has {found}"
            ),
            AdErrorKind::NestingTooDeep => f.write_str("differentiation is nested too deeply"),
            AdErrorKind::TapeFull => f.write_str(
                "the autodiff tape is full: too many operations recorded before backward",
            ),
            AdErrorKind::TapeMemory { bytes, limit_bytes } => write!(
                f,
                "the autodiff tape would take {}, over the allocation limit of {}: call \
                 backward(...) to release the recording, or raise --max-memory",
                ByteCount(*bytes),
                ByteCount(*limit_bytes as u128)
            ),
            AdErrorKind::NonFiniteGradient { op, gradient, nan, .. } => {
                let what = if *nan { "a NaN" } else { "an infinity" };
                write!(
                    f,
                    "the backward rule of `{op}` made {what} in a gradient from the finite gradient {gradient} (--check-nan)"
                )
            }
            AdErrorKind::RuleResult { expected, found } => write!(
                f,
                "a derivative rule returned {found}, but the gradient it gives is {expected}"
            ),
            AdErrorKind::Unsupported { what } => write!(f, "not supported: {what}"),
            AdErrorKind::Internal { reason } => write!(f, "internal autodiff error: {reason}"),
        }
    }
}

impl std::error::Error for AdError {}

impl From<TensorError> for AdError {
    fn from(error: TensorError) -> AdError {
        AdError::new(AdErrorKind::Tensor(error))
    }
}

impl From<EinsumError> for AdError {
    fn from(error: EinsumError) -> AdError {
        AdError::new(AdErrorKind::Einsum(error))
    }
}
