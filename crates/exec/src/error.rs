//! Run-time errors (language.md section 8): a code, a message, the span of the failing operation
//! and the stack of Nabla calls that led to it. Only the command line decides how they are printed.
//!
//! Every error a program can cause carries one of the run-time codes of [`hir::Code`] (`R0001`,
//! ...), which `docs/errors.md` and `nabla explain` explain; the errors of the operations
//! ([`TensorError`], [`AdError`], [`EinsumError`]) get theirs here, in one place. Only a broken
//! invariant of the interpreter and an interruption have none.

use std::fmt;

use hir::{Code, HirSpan};

use crate::autodiff::{AdError, AdErrorKind};
use tensor::TensorError;
use tensor::einsum::EinsumError;

/// What kind of failure stopped the program; a test runner tells assertions from errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuntimeErrorKind {
    /// An operation failed: arithmetic, shapes, indices, files, limits, differentiation.
    Error,
    /// `assert`, `assert_eq`, `assert_close` or `gradcheck` failed.
    Assertion,
    /// A broken invariant of the interpreter itself, never the program's fault.
    Internal,
    /// The host asked the run to stop (a REPL's Ctrl-C).
    Interrupted,
}

/// One call on the stack: the function and the place in it that was executing (for the innermost
/// frame, the failing operation; for the others, the call).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackFrame {
    pub function: String,
    pub span: HirSpan,
}

/// An error that stopped a program.
#[derive(Clone, Debug)]
pub struct RuntimeError {
    pub kind: RuntimeErrorKind,
    /// The run-time code (`R0100`, ...); `None` only for internal errors and interruptions.
    pub code: Option<Code>,
    pub message: String,
    /// The failing operation; `None` only until the interpreter attaches it.
    pub span: Option<HirSpan>,
    /// Innermost first.
    pub stack: Vec<StackFrame>,
    /// Details shown after the source line, one line each (a failed `assert_close` gives the
    /// first and the largest difference here).
    pub notes: Vec<String>,
    /// Another place the error concerns, with what it is (the `backward` that released a graph);
    /// boxed, as errors travel in every operation's `Result`.
    pub related: Option<Box<(HirSpan, String)>>,
    /// Set for checks that run at the start of a function (argument shapes): the error belongs to
    /// the call, so the interpreter reports it there.
    pub(crate) at_call: bool,
    /// Set for an error that belongs to the operation that made a record (a backward rule's NaN
    /// under `--check-nan`): the interpreter reports it at that operation's site.
    pub(crate) origin: Option<crate::autodiff::Site>,
}

impl RuntimeError {
    /// An error of the program, with its run-time code.
    pub fn new(code: Code, message: impl Into<String>) -> RuntimeError {
        RuntimeError::of_kind(RuntimeErrorKind::Error, Some(code), message.into())
    }

    pub fn assertion(message: impl Into<String>) -> RuntimeError {
        let message = message.into();
        RuntimeError::of_kind(RuntimeErrorKind::Assertion, Some(Code::AssertionFailure), message)
    }

    pub fn internal(message: impl Into<String>) -> RuntimeError {
        let message = format!("internal error in the interpreter: {}", message.into());
        RuntimeError::of_kind(RuntimeErrorKind::Internal, None, message)
    }

    pub fn interrupted() -> RuntimeError {
        RuntimeError::of_kind(RuntimeErrorKind::Interrupted, None, "interrupted".to_owned())
    }

    fn of_kind(kind: RuntimeErrorKind, code: Option<Code>, message: String) -> RuntimeError {
        RuntimeError {
            kind,
            code,
            message,
            span: None,
            stack: Vec::new(),
            notes: Vec::new(),
            related: None,
            at_call: false,
            origin: None,
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> RuntimeError {
        self.notes.push(note.into());
        self
    }

    pub(crate) fn with_related(mut self, span: HirSpan, what: impl Into<String>) -> RuntimeError {
        self.related = Some(Box::new((span, what.into())));
        self
    }

    pub(crate) fn at_call(mut self) -> RuntimeError {
        self.at_call = true;
        self
    }

    pub(crate) fn with_span(mut self, span: HirSpan) -> RuntimeError {
        self.span = Some(span);
        self
    }
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RuntimeError {}

impl From<AdError> for RuntimeError {
    fn from(error: AdError) -> RuntimeError {
        let mut runtime = match ad_code(error.kind()) {
            Some(code) => RuntimeError::new(code, error.to_string()),
            None => RuntimeError::of_kind(RuntimeErrorKind::Internal, None, error.to_string()),
        };
        if let AdErrorKind::NonFiniteGradient { site, gradient, result, saved, .. } = error.kind() {
            runtime.origin = *site;
            runtime.notes.push(format!("gradient of the result: {gradient}"));
            runtime.notes.extend(saved.iter().map(|value| format!("the rule read: {value}")));
            runtime.notes.push(format!("the rule made: {result}"));
        }
        runtime
    }
}

impl From<TensorError> for RuntimeError {
    fn from(error: TensorError) -> RuntimeError {
        RuntimeError::new(tensor_code(&error), error.to_string())
    }
}

impl From<EinsumError> for RuntimeError {
    fn from(error: EinsumError) -> RuntimeError {
        match einsum_code(&error) {
            Some(code) => RuntimeError::new(code, error.to_string()),
            None => RuntimeError::of_kind(RuntimeErrorKind::Internal, None, error.to_string()),
        }
    }
}

/// The code of a failed tensor operation.
fn tensor_code(error: &TensorError) -> Code {
    match error {
        TensorError::Broadcast { .. }
        | TensorError::BroadcastTo { .. }
        | TensorError::MatmulBatch { .. }
        | TensorError::Concat { .. }
        | TensorError::Stack { .. }
        | TensorError::Solve { .. } => Code::BroadcastFailure,
        TensorError::MatmulInner { .. } => Code::MatmulFailure,
        TensorError::ReshapeInferred { to, .. } if to.iter().filter(|&&d| d == -1).count() > 1 => {
            Code::DimensionFailure
        }
        TensorError::Reshape { .. }
        | TensorError::ReshapeInferred { .. }
        | TensorError::DataLength { .. } => Code::ElementCountFailure,
        TensorError::Rank { .. }
        | TensorError::NotSquare { .. }
        | TensorError::NotScalar { .. } => Code::RankFailure,
        TensorError::Dimension { .. } => Code::DimensionFailure,
        TensorError::IndexOutOfRange { .. }
        | TensorError::SliceOutOfRange { .. }
        | TensorError::ZeroStep { .. }
        | TensorError::Ellipses { .. }
        | TensorError::TooManyIndices { .. }
        | TensorError::IndexValue { .. }
        | TensorError::MaskShape { .. } => Code::IndexFailure,
        TensorError::TakeAlong { .. } => Code::BroadcastFailure,
        TensorError::Argument { .. } => Code::OptionFailure,
        TensorError::Axis { .. } | TensorError::Permutation { .. } => Code::AxisFailure,
        TensorError::EmptyReduction { .. } => Code::EmptyReduction,
        TensorError::Singular { .. }
        | TensorError::NotPositiveDefinite
        | TensorError::Lapack { .. } => Code::LinearAlgebra,
        TensorError::Io { .. } | TensorError::Npy { .. } | TensorError::Csv { .. } => {
            Code::FileFailure
        }
        TensorError::Allocation { .. } => Code::LimitReached,
    }
}

/// The code of a failed contraction; `None` for a broken invariant of the einsum engine.
fn einsum_code(error: &EinsumError) -> Option<Code> {
    match error {
        EinsumError::TooLarge { .. } => Some(Code::LimitReached),
        EinsumError::Internal { .. } => None,
        _ => Some(Code::EinsumFailure),
    }
}

/// The code of a failed value operation or derivative; `None` for a broken invariant (an operand
/// the checker rules out reaching an operation is one too).
fn ad_code(kind: &AdErrorKind) -> Option<Code> {
    Some(match kind {
        AdErrorKind::Tensor(error) => tensor_code(error),
        AdErrorKind::Einsum(error) => return einsum_code(error),
        AdErrorKind::Operand { .. } | AdErrorKind::Internal { .. } => return None,
        AdErrorKind::IntegerOverflow { .. } => Code::IntegerOverflow,
        AdErrorKind::DivisionByZero => Code::DivisionByZero,
        AdErrorKind::GradBeforeBackward => Code::GradBeforeBackward,
        AdErrorKind::BackwardWithoutVar => Code::BackwardWithoutVar,
        AdErrorKind::ReleasedGraph { .. } => Code::ReleasedGraph,
        AdErrorKind::BackwardInsideTransform => Code::BackwardInTransform,
        AdErrorKind::NotScalarOutput { .. }
        | AdErrorKind::NotDifferentiable { .. }
        | AdErrorKind::Argument { .. }
        | AdErrorKind::TangentShape { .. }
        | AdErrorKind::RuleResult { .. }
        | AdErrorKind::Unsupported { .. }
        | AdErrorKind::NonFiniteGradient { .. } => Code::DerivativeFailure,
        AdErrorKind::NestingTooDeep | AdErrorKind::TapeFull | AdErrorKind::TapeMemory { .. } => {
            Code::LimitReached
        }
    })
}
