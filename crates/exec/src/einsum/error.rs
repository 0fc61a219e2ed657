//! Errors of the tensor-algebra engine: malformed specs, and shapes that do not fit a contraction.
//!
//! Every variant carries the data a caller needs to re-word it in its own terms (the checker names
//! operands as `A(i,k)` rather than by position), and `Display` gives a complete sentence.

use std::fmt;

/// Where one occurrence of a label sits: an axis of an operand, or an axis of the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Operand(usize),
    Output,
}

/// One occurrence of a label with the extent it was given there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelSite {
    pub place: Place,
    pub axis: usize,
    pub extent: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EinsumError {
    /// A character of an `einsum` spec that is neither a label, `,`, `->` nor whitespace.
    InvalidCharacter {
        character: char,
        position: usize,
    },
    /// An `einsum` spec uses NumPy's ellipsis, which Nabla does not support.
    Ellipsis {
        position: usize,
    },
    /// An `einsum` spec with a second `->`.
    MultipleArrows {
        position: usize,
    },
    OutputLabelRepeated {
        label: String,
    },
    OutputLabelUnknown {
        label: String,
    },
    OperandCount {
        expected: usize,
        found: usize,
    },
    RankMismatch {
        operand: usize,
        labels: usize,
        rank: usize,
    },
    ExtentMismatch {
        label: String,
        first: LabelSite,
        second: LabelSite,
    },
    OutputRankMismatch {
        labels: usize,
        rank: usize,
    },
    /// An output label that no operand carries, executed without an output shape to size it.
    UnboundOutputLabel {
        label: String,
    },
    OperandIndex {
        operand: usize,
        count: usize,
    },
    /// A result or intermediate with more elements than an address space holds.
    TooLarge {
        shape: Vec<usize>,
    },
    /// A plan executed on tensors of other shapes than it was made for.
    PlanShape {
        operand: usize,
        expected: Vec<usize>,
        found: Vec<usize>,
    },
    /// A broken internal invariant; reaching it is a bug in the engine, not in the program.
    Internal {
        message: String,
    },
}

impl EinsumError {
    pub(crate) fn internal(message: impl Into<String>) -> EinsumError {
        EinsumError::Internal { message: message.into() }
    }
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 { format!("{count} {noun}") } else { format!("{count} {noun}s") }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Operand(operand) => write!(f, "operand {operand}"),
            Place::Output => write!(f, "the output"),
        }
    }
}

impl fmt::Display for EinsumError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EinsumError::InvalidCharacter { character, position } => write!(
                f,
                "invalid character {character:?} at position {position} of the einsum spec; \
                 labels are ASCII letters"
            ),
            EinsumError::Ellipsis { position } => write!(
                f,
                "the einsum spec uses '...' at position {position}, which is not supported; \
                 write every label out"
            ),
            EinsumError::MultipleArrows { position } => write!(
                f,
                "the einsum spec has a second '->' at position {position}; it may have only one"
            ),
            EinsumError::OutputLabelRepeated { label } => {
                write!(f, "output label {label} appears more than once")
            }
            EinsumError::OutputLabelUnknown { label } => {
                write!(f, "output label {label} does not appear in any operand")
            }
            EinsumError::OperandCount { expected, found } => write!(
                f,
                "the contraction has {} but {} given",
                plural(*expected, "operand"),
                if *found == 1 {
                    "1 tensor was".to_owned()
                } else {
                    format!("{found} tensors were")
                }
            ),
            EinsumError::RankMismatch { operand, labels, rank } => write!(
                f,
                "operand {operand} has {} but its tensor has rank {rank}",
                plural(*labels, "label")
            ),
            EinsumError::ExtentMismatch { label, first, second } if first.place == second.place => {
                write!(
                    f,
                    "label {label} is {} at axis {} but {} at axis {} of {}",
                    first.extent, first.axis, second.extent, second.axis, first.place
                )
            }
            EinsumError::ExtentMismatch { label, first, second } => write!(
                f,
                "label {label} is {} in {} but {} in {}",
                first.extent, first.place, second.extent, second.place
            ),
            EinsumError::OutputRankMismatch { labels, rank } => write!(
                f,
                "the output has {} but the requested output shape has rank {rank}",
                plural(*labels, "label")
            ),
            EinsumError::UnboundOutputLabel { label } => write!(
                f,
                "output label {label} appears in no operand, so an output shape must give its extent"
            ),
            EinsumError::OperandIndex { operand, count } => write!(
                f,
                "operand {operand} is out of range: the contraction has {}",
                plural(*count, "operand")
            ),
            EinsumError::TooLarge { shape } => write!(
                f,
                "a tensor of shape {shape:?} would have more elements than memory can hold"
            ),
            EinsumError::PlanShape { operand, expected, found } => write!(
                f,
                "operand {operand} has shape {found:?} but the plan was made for shape {expected:?}"
            ),
            EinsumError::Internal { message } => write!(f, "internal einsum error: {message}"),
        }
    }
}

impl std::error::Error for EinsumError {}
