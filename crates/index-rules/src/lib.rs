//! The rules of basic indexing on one axis, written once for the checker (`hir`'s constant slice
//! extents) and the engine (`tensor::index`), so that the extent the checker gives a slice is
//! the one the engine produces.
//!
//! A slice `start:end:step` selects what NumPy's does, with its bounds checked instead of
//! clamped: a bound lies in `-extent..=extent` (a negative one counts from the end), the start is
//! not past the end in the direction of the step, with a negative step a given start is a
//! position (`-extent..extent`), and the step is never zero. NumPy clamps bounds and gives an
//! empty slice for crossed bounds; Nabla reports both, because its shapes are static and a bound
//! out of range is almost always an off-by-one.
//!
//! A leaf crate with no dependencies, as `einsum-notation` is, so that the checker can use it
//! without linking the tensor engine's BLAS and LAPACK, and the engine without depending on the
//! checker. Errors are values; each side words them in its own terms, with [`written`] and
//! [`bounds_rule`] for the parts they share.

/// The positions a slice selects on its axis: `first, first + step, ...`, `len` of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SliceRange {
    /// The first position; 0 when the slice is empty.
    pub first: i64,
    /// The step as written (1 when omitted); never zero.
    pub step: i64,
    pub len: i64,
}

/// Why a slice selects nothing valid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SliceError {
    ZeroStep,
    /// A bound outside the axis, or a start past the end in the direction of the step (see
    /// [`bounds_rule`]).
    OutOfRange,
}

/// The positions `start:end:step` selects on an axis of `extent` (any part may be omitted), by
/// the rules of the crate's documentation. The arithmetic cannot overflow, whatever the numbers.
pub fn slice(
    extent: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: Option<i64>,
) -> Result<SliceRange, SliceError> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return Err(SliceError::ZeroStep);
    }
    if extent < 0 {
        return Err(SliceError::OutOfRange);
    }
    // In i128, where `extent + bound` and `-step` always fit.
    let n = i128::from(extent);
    let bound = |b: i64| -> Result<i128, SliceError> {
        match i128::from(b) {
            b if b < -n || b > n => Err(SliceError::OutOfRange),
            b if b < 0 => Ok(b + n),
            b => Ok(b),
        }
    };
    let by = i128::from(step);
    let (first, last) = match step > 0 {
        true => {
            (start.map(bound).transpose()?.unwrap_or(0), end.map(bound).transpose()?.unwrap_or(n))
        }
        false => (
            start.map(bound).transpose()?.unwrap_or(n - 1),
            end.map(bound).transpose()?.unwrap_or(-1),
        ),
    };
    let len = match step > 0 {
        true if first <= last => (last - first + by - 1) / by,
        false if last <= first && first < n => (first - last - by - 1) / -by,
        _ => return Err(SliceError::OutOfRange),
    };
    let first = if len == 0 { 0 } else { first };
    // Both lie in `0..=extent`, so they fit.
    let fit = |v: i128| i64::try_from(v).map_err(|_| SliceError::OutOfRange);
    Ok(SliceRange { first: fit(first)?, step, len: fit(len)? })
}

/// A slice as written, for messages: `2:5`, `3::-1`, `:` (a step of 1 is left out).
pub fn written(start: Option<i64>, end: Option<i64>, step: i64) -> String {
    let bound = |b: Option<i64>| b.map(|b| b.to_string()).unwrap_or_default();
    match step {
        1 => format!("{}:{}", bound(start), bound(end)),
        _ => format!("{}:{}:{step}", bound(start), bound(end)),
    }
}

/// What [`SliceError::OutOfRange`] means for a slice with `step` on an axis of `extent`, in
/// words: `bounds must lie in -3..=3, the start not after the end`.
pub fn bounds_rule(extent: impl std::fmt::Display, step: i64) -> String {
    match step > 0 {
        true => format!("bounds must lie in -{extent}..={extent}, the start not after the end"),
        false => format!(
            "with a negative step the start must lie in -{extent}..{extent} and not before the end"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row: extent, start, end, step, and the first position and length, or the error.
    type Row = (i64, Option<i64>, Option<i64>, Option<i64>, Result<(i64, i64), SliceError>);

    const OUT: Result<(i64, i64), SliceError> = Err(SliceError::OutOfRange);

    // The selections are NumPy's (`np.arange(extent)[start:end:step]`: its first element and
    // length), computed once; the errors are where Nabla checks what NumPy clamps, with what
    // NumPy gives instead.
    const TABLE: &[Row] = &[
        (5, None, None, None, Ok((0, 5))),
        (5, Some(1), None, None, Ok((1, 4))),
        (5, None, Some(3), None, Ok((0, 3))),
        (5, Some(1), Some(4), None, Ok((1, 3))),
        (5, Some(-2), None, None, Ok((3, 2))),
        (5, None, Some(-1), None, Ok((0, 4))),
        (5, Some(-5), Some(5), None, Ok((0, 5))),
        (5, Some(0), Some(5), Some(2), Ok((0, 3))),
        (5, Some(1), Some(5), Some(2), Ok((1, 2))),
        (5, None, None, Some(3), Ok((0, 2))),
        (5, None, None, Some(7), Ok((0, 1))),
        // Empty, at either end or in the middle.
        (5, Some(0), Some(0), None, Ok((0, 0))),
        (5, Some(5), None, None, Ok((0, 0))),
        (5, Some(5), Some(5), None, Ok((0, 0))),
        (5, Some(2), Some(2), Some(-1), Ok((0, 0))),
        (0, None, None, None, Ok((0, 0))),
        (0, Some(0), Some(0), None, Ok((0, 0))),
        (0, None, None, Some(-1), Ok((0, 0))),
        // Negative steps.
        (5, None, None, Some(-1), Ok((4, 5))),
        (5, Some(-1), None, Some(-2), Ok((4, 3))),
        (5, Some(3), Some(0), Some(-1), Ok((3, 3))),
        (5, Some(3), None, Some(-1), Ok((3, 4))),
        (5, None, Some(1), Some(-2), Ok((4, 2))),
        (5, None, None, Some(-7), Ok((4, 1))),
        (1, None, None, Some(-1), Ok((0, 1))),
        // Steps at the ends of i64.
        (5, Some(4), None, Some(i64::MAX), Ok((4, 1))),
        (5, None, None, Some(i64::MIN), Ok((4, 1))),
        (i64::MAX, None, None, Some(i64::MAX), Ok((0, 1))),
        (i64::MAX, Some(i64::MIN), None, None, OUT),
        // Checked where NumPy clamps.
        (5, None, None, Some(0), Err(SliceError::ZeroStep)), // NumPy: ValueError too
        (5, Some(6), None, None, OUT),                       // NumPy: empty
        (5, Some(-6), None, None, OUT),                      // NumPy: all 5
        (5, Some(3), Some(1), None, OUT),                    // NumPy: empty
        (5, Some(1), Some(3), Some(-1), OUT),                // NumPy: empty
        (5, Some(5), None, Some(-1), OUT),                   // NumPy: all 5, from 4
        (5, Some(4), Some(-6), Some(-1), OUT),               // NumPy: all 5, from 4
        (-1, None, None, None, OUT),
    ];

    #[test]
    fn the_rule_on_a_table() {
        for &(extent, start, end, step, expected) in TABLE {
            let actual = slice(extent, start, end, step).map(|range| {
                assert_eq!(range.step, step.unwrap_or(1));
                (range.first, range.len)
            });
            let shown = written(start, end, step.unwrap_or(1));
            assert_eq!(actual, expected, "{shown} on an axis of extent {extent}");
        }
    }

    #[test]
    fn wording() {
        assert_eq!(written(Some(2), Some(5), 1), "2:5");
        assert_eq!(written(Some(3), None, -1), "3::-1");
        assert_eq!(written(None, None, 1), ":");
        assert_eq!(bounds_rule(3, 1), "bounds must lie in -3..=3, the start not after the end");
        assert_eq!(
            bounds_rule(3_usize, -2),
            "with a negative step the start must lie in -3..3 and not before the end"
        );
    }
}
