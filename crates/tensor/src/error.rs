//! The errors of tensor operations, with messages that name shapes the way Nabla writes them.
//!
//! Errors carry no source spans: the interpreter attaches the span of the failing operation.

use std::fmt;
use std::path::PathBuf;

/// A shape written as Nabla writes tensor types: `Tensor[2][3]`, or `Tensor[]` for rank 0.
#[derive(Clone, Copy, Debug)]
pub struct ShapeText<'a>(pub &'a [usize]);

impl fmt::Display for ShapeText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Tensor")?;
        if self.0.is_empty() {
            return f.write_str("[]");
        }
        for extent in self.0 {
            write!(f, "[{extent}]")?;
        }
        Ok(())
    }
}

/// A list of extents as a program writes it: `[-1, 4]`.
struct ExtentList<'a>(&'a [i64]);

impl fmt::Display for ExtentList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, extent) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{extent}")?;
        }
        f.write_str("]")
    }
}

/// Extents as a list: `[3, 4]`.
struct ExtentText<'a>(&'a [usize]);

impl fmt::Display for ExtentText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list: Vec<String> = self.0.iter().map(usize::to_string).collect();
        write!(f, "[{}]", list.join(", "))
    }
}

/// Everything that can go wrong in a tensor operation.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorError {
    /// Two operands of an element-wise operation whose shapes do not broadcast together.
    Broadcast { lhs: Vec<usize>, rhs: Vec<usize> },
    /// A value that cannot be broadcast to a target shape (indexed assignment, `broadcast_to`).
    BroadcastTo { from: Vec<usize>, to: Vec<usize> },
    /// The contracted dimensions of a matrix product differ.
    MatmulInner { lhs: Vec<usize>, rhs: Vec<usize>, lhs_inner: usize, rhs_inner: usize },
    /// The batch dimensions of a batched matrix product do not broadcast together.
    MatmulBatch { lhs: Vec<usize>, rhs: Vec<usize> },
    /// An operation that needs a particular rank got another; `expected` completes
    /// "`op` needs ...".
    Rank { op: &'static str, expected: &'static str, shape: Vec<usize> },
    /// A linear-algebra operation that needs a square matrix got a rectangular one.
    NotSquare { op: &'static str, shape: Vec<usize> },
    /// An integer index outside `-extent..extent`.
    IndexOutOfRange { axis: usize, index: i64, extent: usize },
    /// A slice with a bound outside `-extent..=extent` or a start past its end (in the direction
    /// of its step).
    SliceOutOfRange { axis: usize, start: Option<i64>, end: Option<i64>, step: i64, extent: usize },
    /// A slice whose step is zero.
    ZeroStep { axis: usize },
    /// More than one `...` in a bracket.
    Ellipses { count: usize },
    /// More indices than the tensor has axes.
    TooManyIndices { count: usize, rank: usize },
    /// An axis argument outside `-rank..rank`.
    Axis { axis: i64, rank: usize },
    /// A permutation argument that is not a permutation of `0..rank`.
    Permutation { permutation: Vec<i64>, rank: usize },
    /// A reshape whose element counts differ.
    Reshape { from: Vec<usize>, to: Vec<usize> },
    /// A reshape to a list of extents with a `-1` that no extent can stand for: the other
    /// extents do not divide the element count, or more than one extent is `-1`.
    ReshapeInferred { from: Vec<usize>, to: Vec<i64> },
    /// A flat list of values whose length does not fill the shape it is laid out in.
    DataLength { shape: Vec<usize>, len: usize },
    /// A dimension in a user-given shape that is negative or not an integer.
    Dimension { value: f64 },
    /// Two tensors that cannot be concatenated along an axis.
    Concat { lhs: Vec<usize>, rhs: Vec<usize>, axis: usize },
    /// Two tensors that cannot be stacked because their shapes differ.
    Stack { lhs: Vec<usize>, rhs: Vec<usize> },
    /// A reduction without an identity (`max`, `min`) over no elements.
    EmptyReduction { op: &'static str, shape: Vec<usize>, axis: Option<usize> },
    /// A tensor used where a single value is needed.
    NotScalar { shape: Vec<usize> },
    /// A matrix that has no inverse.
    Singular { op: &'static str },
    /// A matrix given to `cholesky` that is not positive definite.
    NotPositiveDefinite,
    /// The right-hand side of `solve` does not match the matrix.
    Solve { matrix: Vec<usize>, rhs: Vec<usize> },
    /// LAPACK failed in a way the other variants do not describe.
    Lapack { op: &'static str, reason: String },
    /// Reading or writing a file failed.
    Io { path: PathBuf, action: &'static str, reason: String },
    /// A file that is not a `.npy` file this runtime can read.
    Npy { path: PathBuf, reason: String },
    /// A CSV file with a bad field or ragged rows; `line` counts from 1.
    Csv { path: PathBuf, line: usize, reason: String },
    /// A tensor larger than the allocation limit; `elements` saturates at `u128::MAX`.
    Allocation { shape: Vec<usize>, elements: u128, limit_bytes: usize },
    /// An argument of a library function outside what it accepts (a padding wider than `reflect`
    /// allows, a window larger than its input, a zero step); `reason` completes "`op`: ".
    Argument { op: &'static str, reason: String },
    /// A float used as an index that is not an integer in `-extent..extent`.
    IndexValue { value: f64, extent: usize },
    /// Indices of `take_along_axis` whose shape does not fit the tensor's.
    TakeAlong { shape: Vec<usize>, indices: Vec<usize>, axis: usize },
    /// A mask whose extents differ from those of the axes it selects from, starting at `axis`
    /// (`axes` holds the extents of as many axes as the mask has, or fewer when the tensor has
    /// no more).
    MaskShape { mask: Vec<usize>, axis: usize, axes: Vec<usize> },
}

impl fmt::Display for TensorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TensorError::Broadcast { lhs, rhs } => write!(
                f,
                "shape mismatch: {} and {} cannot be broadcast together",
                ShapeText(lhs),
                ShapeText(rhs)
            ),
            TensorError::BroadcastTo { from, to } => {
                write!(
                    f,
                    "shape mismatch: {} cannot be broadcast to {}",
                    ShapeText(from),
                    ShapeText(to)
                )
            }
            TensorError::MatmulInner { lhs, rhs, lhs_inner, rhs_inner } => write!(
                f,
                "matmul of {} and {}: inner dimensions {lhs_inner} and {rhs_inner} differ",
                ShapeText(lhs),
                ShapeText(rhs)
            ),
            TensorError::MatmulBatch { lhs, rhs } => write!(
                f,
                "matmul of {} and {}: batch dimensions cannot be broadcast together",
                ShapeText(lhs),
                ShapeText(rhs)
            ),
            TensorError::Rank { op, expected, shape } => {
                write!(f, "{op} needs {expected}, got {}", ShapeText(shape))
            }
            TensorError::NotSquare { op, shape } => {
                write!(f, "{op} needs a square matrix, got {}", ShapeText(shape))
            }
            TensorError::IndexOutOfRange { axis, index, extent } => {
                write!(f, "index {index} is out of range for axis {axis} with extent {extent}")?;
                match *extent {
                    0 => Ok(()),
                    n => write!(f, " (valid: -{n} to {})", n - 1),
                }
            }
            TensorError::SliceOutOfRange { axis, start, end, step, extent } => write!(
                f,
                "slice {} is out of range for axis {axis} with extent {extent} ({})",
                index_rules::written(*start, *end, *step),
                index_rules::bounds_rule(extent, *step)
            ),
            TensorError::ZeroStep { axis } => {
                write!(f, "the step of a slice of axis {axis} is zero")
            }
            TensorError::Ellipses { count } => {
                write!(f, "{count} `...` in one bracket: at most one may stand for the other axes")
            }
            TensorError::TooManyIndices { count, rank } => {
                write!(f, "{count} indices for a tensor of rank {rank}")
            }
            TensorError::Axis { axis, rank } => {
                write!(f, "axis {axis} is out of range for a tensor of rank {rank}")
            }
            TensorError::Permutation { permutation, rank } => {
                write!(
                    f,
                    "{permutation:?} is not a permutation of the axes of a tensor of rank {rank}"
                )
            }
            TensorError::Reshape { from, to } => write!(
                f,
                "cannot reshape {} ({} elements) to {} ({} elements)",
                ShapeText(from),
                element_count_text(from),
                ShapeText(to),
                element_count_text(to)
            ),
            TensorError::ReshapeInferred { from, to } => {
                let list = ExtentList(to);
                let count = element_count_text(from);
                write!(f, "cannot reshape {} ({count} elements) to {list}: ", ShapeText(from))?;
                match to.iter().filter(|&&d| d == -1).count() {
                    1 => match to
                        .iter()
                        .filter(|&&d| d != -1)
                        .try_fold(1i64, |acc, &d| acc.checked_mul(d))
                    {
                        Some(0) => f.write_str(
                            "the other extents multiply to 0, so no extent can stand for -1",
                        ),
                        None => f.write_str("the other extents multiply past the largest `int`"),
                        Some(others) => write!(
                            f,
                            "{count} is not a multiple of {others}, the product of the other extents"
                        ),
                    },
                    _ => f.write_str("only one extent may be -1"),
                }
            }
            TensorError::DataLength { shape, len } => write!(
                f,
                "{len} values cannot fill {}, which has {} elements",
                ShapeText(shape),
                element_count_text(shape)
            ),
            TensorError::Dimension { value } => {
                write!(f, "dimension {value} is not a non-negative integer")
            }
            TensorError::Concat { lhs, rhs, axis } => write!(
                f,
                "cannot concatenate {} and {} along axis {axis}",
                ShapeText(lhs),
                ShapeText(rhs)
            ),
            TensorError::Stack { lhs, rhs } => {
                write!(f, "cannot stack {} and {}: shapes differ", ShapeText(lhs), ShapeText(rhs))
            }
            TensorError::EmptyReduction { op, shape, axis: None } => {
                write!(f, "{op} of {} is undefined: it has no elements", ShapeText(shape))
            }
            TensorError::EmptyReduction { op, shape, axis: Some(axis) } => write!(
                f,
                "{op} along axis {axis} of {} is undefined: the axis is empty",
                ShapeText(shape)
            ),
            TensorError::NotScalar { shape } => {
                write!(f, "expected a single value, got {}", ShapeText(shape))
            }
            TensorError::Singular { op } => write!(f, "{op}: the matrix is singular"),
            TensorError::NotPositiveDefinite => {
                write!(f, "cholesky: the matrix is not positive definite")
            }
            TensorError::Solve { matrix, rhs } => write!(
                f,
                "solve: right-hand side {} does not match the matrix {}",
                ShapeText(rhs),
                ShapeText(matrix)
            ),
            TensorError::Lapack { op, reason } => write!(f, "{op}: LAPACK failed: {reason}"),
            TensorError::Io { path, action, reason } => {
                write!(f, "cannot {action} {}: {reason}", path.display())
            }
            TensorError::Npy { path, reason } => {
                write!(f, "cannot load {}: {reason}", path.display())
            }
            TensorError::Csv { path, line, reason } => {
                write!(f, "cannot load {} (line {line}): {reason}", path.display())
            }
            TensorError::Allocation { shape, elements, limit_bytes } => write!(
                f,
                "{} has {elements} elements and would take {}, over the allocation limit of {}",
                ShapeText(shape),
                ByteCount(elements.saturating_mul(8)),
                ByteCount(*limit_bytes as u128)
            ),
            TensorError::Argument { op, reason } => write!(f, "{op}: {reason}"),
            TensorError::IndexValue { value, extent: 0 } => {
                write!(f, "index {value} is out of range for an empty axis")
            }
            TensorError::IndexValue { value, extent } => write!(
                f,
                "index {value} is not an integer in the range -{extent} to {}",
                extent - 1
            ),
            TensorError::TakeAlong { shape, indices, axis } => write!(
                f,
                "take_along_axis: indices {} do not fit {} along axis {axis}",
                ShapeText(indices),
                ShapeText(shape)
            ),
            TensorError::MaskShape { mask, .. } if mask.is_empty() => f.write_str(
                "a mask of rank 0 selects from no axis: a mask has the extents of the axes it \
                 selects from",
            ),
            TensorError::MaskShape { mask, axis, axes } if axes.len() < mask.len() => write!(
                f,
                "the mask is {}, but the tensor has {} from axis {axis} on",
                ShapeText(mask),
                match axes.len() {
                    0 => "no axis".to_owned(),
                    1 => format!("only 1 axis ({})", ExtentText(axes)),
                    n => format!("only {n} axes ({})", ExtentText(axes)),
                }
            ),
            TensorError::MaskShape { mask, axis, axes } => write!(
                f,
                "the mask is {}, but the axes it selects from (from axis {axis} on) have extents \
                 {}: a mask has the extents of the axes it selects from",
                ShapeText(mask),
                ExtentText(axes)
            ),
        }
    }
}

impl std::error::Error for TensorError {}

/// The number of elements of a shape, written without overflow for any shape.
fn element_count_text(shape: &[usize]) -> String {
    match shape.iter().try_fold(1usize, |acc, &extent| acc.checked_mul(extent)) {
        Some(count) => count.to_string(),
        None => "too many".to_owned(),
    }
}

/// A byte count in the largest binary unit that keeps it at least 1, e.g. `74.5 GiB`.
pub struct ByteCount(pub u128);

impl fmt::Display for ByteCount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
        if self.0 < 1024 {
            return write!(f, "{} bytes", self.0);
        }
        // Precision loss in the conversion is irrelevant for a one-decimal display.
        let mut value = self.0 as f64 / 1024.0;
        let mut unit = UNITS[0];
        for next in &UNITS[1..] {
            if value < 1024.0 {
                break;
            }
            value /= 1024.0;
            unit = next;
        }
        if value.fract() == 0.0 {
            write!(f, "{value:.0} {unit}")
        } else {
            write!(f, "{value:.1} {unit}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(error: TensorError) -> String {
        error.to_string()
    }

    #[test]
    fn shapes_are_written_as_nabla_types() {
        assert_eq!(ShapeText(&[2, 3]).to_string(), "Tensor[2][3]");
        assert_eq!(ShapeText(&[]).to_string(), "Tensor[]");
        assert_eq!(ShapeText(&[0]).to_string(), "Tensor[0]");
    }

    #[test]
    fn messages_name_shapes_and_positions() {
        assert_eq!(
            message(TensorError::Broadcast { lhs: vec![2, 3], rhs: vec![4] }),
            "shape mismatch: Tensor[2][3] and Tensor[4] cannot be broadcast together"
        );
        assert_eq!(
            message(TensorError::MatmulInner {
                lhs: vec![2, 3],
                rhs: vec![4, 5],
                lhs_inner: 3,
                rhs_inner: 4
            }),
            "matmul of Tensor[2][3] and Tensor[4][5]: inner dimensions 3 and 4 differ"
        );
        assert_eq!(
            message(TensorError::IndexOutOfRange { axis: 1, index: 5, extent: 3 }),
            "index 5 is out of range for axis 1 with extent 3 (valid: -3 to 2)"
        );
        assert_eq!(
            message(TensorError::Reshape { from: vec![2, 3], to: vec![4] }),
            "cannot reshape Tensor[2][3] (6 elements) to Tensor[4] (4 elements)"
        );
        assert_eq!(
            message(TensorError::Io {
                path: PathBuf::from("data/x.npy"),
                action: "read",
                reason: "No such file or directory (os error 2)".to_owned()
            }),
            "cannot read data/x.npy: No such file or directory (os error 2)"
        );
        assert_eq!(
            message(TensorError::NotScalar { shape: vec![] }),
            "expected a single value, got Tensor[]"
        );
    }

    #[test]
    fn allocation_messages_use_binary_units() {
        assert_eq!(
            message(TensorError::Allocation {
                shape: vec![100_000, 100_000],
                elements: 10_000_000_000,
                limit_bytes: 8 << 30
            }),
            "Tensor[100000][100000] has 10000000000 elements and would take 74.5 GiB, \
             over the allocation limit of 8 GiB"
        );
        assert_eq!(ByteCount(1000).to_string(), "1000 bytes");
        assert_eq!(ByteCount(1536).to_string(), "1.5 KiB");
    }
}
