//! Run-time errors (language.md section 8): a message, the span of the failing operation and the
//! stack of Nabla calls that led to it. Only the command line decides how they are printed.

use std::fmt;

use hir::HirSpan;

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
    pub message: String,
    /// The failing operation; `None` only until the interpreter attaches it.
    pub span: Option<HirSpan>,
    /// Innermost first.
    pub stack: Vec<StackFrame>,
    /// Details shown after the source line, one line each (a failed `assert_close` gives the
    /// first and the largest difference here).
    pub notes: Vec<String>,
    /// Set for checks that run at the start of a function (argument shapes): the error belongs to
    /// the call, so the interpreter reports it there.
    pub(crate) at_call: bool,
    /// Set for an error that belongs to the operation that made a record (a backward rule's NaN
    /// under `--check-nan`): the interpreter reports it at that operation's site.
    pub(crate) origin: Option<crate::autodiff::Site>,
}

impl RuntimeError {
    pub fn new(message: impl Into<String>) -> RuntimeError {
        RuntimeError {
            kind: RuntimeErrorKind::Error,
            message: message.into(),
            span: None,
            stack: Vec::new(),
            notes: Vec::new(),
            at_call: false,
            origin: None,
        }
    }

    pub fn assertion(message: impl Into<String>) -> RuntimeError {
        RuntimeError { kind: RuntimeErrorKind::Assertion, ..RuntimeError::new(message) }
    }

    pub fn internal(message: impl Into<String>) -> RuntimeError {
        let message = format!("internal error in the interpreter: {}", message.into());
        RuntimeError { kind: RuntimeErrorKind::Internal, ..RuntimeError::new(message) }
    }

    pub fn interrupted() -> RuntimeError {
        RuntimeError { kind: RuntimeErrorKind::Interrupted, ..RuntimeError::new("interrupted") }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> RuntimeError {
        self.notes.push(note.into());
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
        let kind = match error.kind() {
            AdErrorKind::Internal { .. } => RuntimeErrorKind::Internal,
            _ => RuntimeErrorKind::Error,
        };
        let mut runtime = RuntimeError { kind, ..RuntimeError::new(error.to_string()) };
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
        RuntimeError::new(error.to_string())
    }
}

impl From<EinsumError> for RuntimeError {
    fn from(error: EinsumError) -> RuntimeError {
        RuntimeError::new(error.to_string())
    }
}
