//! Errors of the tensor-algebra engine: malformed specs, and shapes that do not fit a contraction.
//!
//! Every variant carries the data a caller needs to re-word it in its own terms (the checker names
//! operands as `A(i,k)` rather than by position), and `Display` gives a complete sentence.

use std::fmt;

use einsum_notation::SpecError;

/// Where one occurrence of a label sits: an axis of an operand, or an axis of the output.
pub use einsum_notation::Place;

/// One occurrence of a label with the extent it was given there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LabelSite {
    pub place: Place,
    pub axis: usize,
    pub extent: usize,
}

/// The axes one operand's `...` stands for, and the extent of the one that does not broadcast.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EllipsisSite {
    pub operand: usize,
    pub shape: Vec<usize>,
    pub extent: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum EinsumError {
    /// A character of an `einsum` spec that is neither a label, `,`, `->` nor whitespace.
    InvalidCharacter {
        character: char,
        position: usize,
    },
    /// A spec with NumPy's ellipsis given where a fixed contraction is needed
    /// ([`Contraction::from_spec`](super::Contraction::from_spec)): what `...` stands for depends
    /// on the operands' ranks, so [`EinsumSpec::expand`](super::EinsumSpec::expand) must expand it.
    Ellipsis {
        position: usize,
    },
    /// A `.` of an `einsum` spec that is not part of an ellipsis `...`.
    StrayDot {
        position: usize,
    },
    /// A second `...` in one operand's labels or in the output's.
    RepeatedEllipsis {
        place: Place,
        position: usize,
    },
    /// An operand with `...` whose tensor has fewer axes than the labels beside the `...`.
    EllipsisRank {
        operand: usize,
        labels: usize,
        rank: usize,
    },
    /// Two operands whose `...` axes do not broadcast together.
    EllipsisBroadcast {
        first: EllipsisSite,
        second: EllipsisSite,
    },
    /// An explicit output without `...` while the operands' `...` stands for some axes (NumPy
    /// refuses this rather than summing them).
    OutputEllipsisMissing {
        shape: Vec<usize>,
    },
    /// More labels than there are ASCII letters, counting one per axis `...` stands for.
    TooManyLabels {
        letters: usize,
        ellipsis_axes: usize,
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

/// The parser's errors, which the engine words itself (see `Display`).
impl From<SpecError> for EinsumError {
    fn from(error: SpecError) -> EinsumError {
        match error {
            SpecError::InvalidCharacter { character, position } => {
                EinsumError::InvalidCharacter { character, position }
            }
            SpecError::StrayDot { position } => EinsumError::StrayDot { position },
            SpecError::RepeatedEllipsis { place, position } => {
                EinsumError::RepeatedEllipsis { place, position }
            }
            SpecError::MultipleArrows { position } => EinsumError::MultipleArrows { position },
            SpecError::OutputLabelRepeated { label } => {
                EinsumError::OutputLabelRepeated { label: label.to_string() }
            }
            SpecError::OutputLabelUnknown { label } => {
                EinsumError::OutputLabelUnknown { label: label.to_string() }
            }
        }
    }
}

fn plural(count: usize, noun: &str) -> String {
    if count == 1 { format!("{count} {noun}") } else { format!("{count} {noun}s") }
}

fn axes(count: usize) -> String {
    if count == 1 { "1 axis".to_owned() } else { format!("{count} axes") }
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
                "the einsum spec uses '...' at position {position}, which stands for axes that \
                 depend on the operands' ranks; expand it for their shapes"
            ),
            EinsumError::StrayDot { position } => write!(
                f,
                "the '.' at position {position} of the einsum spec is not part of an ellipsis '...'"
            ),
            EinsumError::RepeatedEllipsis { place, position } => write!(
                f,
                "the einsum spec has a second '...' in {place} at position {position}; each \
                 operand and the output may have one"
            ),
            EinsumError::EllipsisRank { operand, labels, rank } => write!(
                f,
                "operand {} has {} besides '...' but its tensor has rank {rank}",
                operand + 1,
                plural(*labels, "label")
            ),
            EinsumError::EllipsisBroadcast { first, second } => {
                let (EllipsisSite { operand: a, shape: a_shape, extent: a_extent }, b) =
                    (first, second);
                write!(
                    f,
                    "'...' is {a_shape:?} in operand {} but {:?} in operand {}, which do not \
                     broadcast ({a_extent} against {})",
                    a + 1,
                    b.shape,
                    b.operand + 1,
                    b.extent
                )
            }
            EinsumError::OutputEllipsisMissing { shape } => write!(
                f,
                "the output has no '...' but the operands' '...' stands for {} of shape {shape:?}; \
                 write '...' in the output to keep them, or labels to sum them",
                axes(shape.len())
            ),
            EinsumError::TooManyLabels { letters, ellipsis_axes } => write!(
                f,
                "the einsum spec needs {} labels, {} and {} for '...', but there are only 52 ASCII \
                 letters",
                letters + ellipsis_axes,
                plural(*letters, "letter"),
                axes(*ellipsis_axes)
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
                "operand {} has {} but its tensor has rank {rank}",
                operand + 1,
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
                "operand {} is out of range: the contraction has {}",
                operand + 1,
                plural(*count, "operand")
            ),
            EinsumError::TooLarge { shape } => write!(
                f,
                "a tensor of shape {shape:?} would have more elements than memory can hold"
            ),
            EinsumError::PlanShape { operand, expected, found } => write!(
                f,
                "operand {} has shape {found:?} but the plan was made for shape {expected:?}",
                operand + 1
            ),
            EinsumError::Internal { message } => write!(f, "internal einsum error: {message}"),
        }
    }
}

impl std::error::Error for EinsumError {}
