//! Basic indexing as NumPy defines it: `a[i, j]`, `a[:, j]`, `a[a:b:s]` (negative steps too),
//! negative indices, `...` and new axes, reading (a view that shares the buffer) and writing
//! (copy-on-write, with the value broadcast to the region).
//!
//! An index expression is written as [`Subscript`]s, one bracket after another (`a[1:][0, ::-1]`);
//! [`Resolver`] checks them against the shape and composes the brackets into one [`Index`] per
//! axis of the original tensor, which is what [`get`], [`set`] and [`add_at`] apply and what the
//! tape keeps.
//!
//! Bounds are checked, not clamped: an index must satisfy `-extent <= i < extent` and a slice
//! bound `-extent <= b <= extent` (negative values count from the end), a slice's start must not
//! be past its end in the direction of its step, and a step is never zero. NumPy clamps slice
//! bounds and gives an empty slice for crossed bounds; Nabla reports both, because its shapes are
//! static and a bound out of range is almost always an off-by-one.

use ndarray::{ArrayBase, Axis, IxDyn, RawData, Slice};

use super::error::TensorError;
use super::{HEAD_RANK, Tensor};

/// The most axes [`Tensor::element`] and [`Tensor::unshared_element_mut`] take; a tensor of more
/// axes is indexed by [`get`] and [`set`].
pub const MAX_ELEMENT_RANK: usize = 8;

impl Tensor {
    /// The element at `index`, one integer per axis (negative ones count from the end, as
    /// [`Subscript::At`]), without building an index; `None` when `index` has another length
    /// than the rank (or more than [`MAX_ELEMENT_RANK`] entries) or an entry out of range: the
    /// caller then indexes through [`get`], which words the error.
    #[inline]
    pub fn element(&self, index: &[i64]) -> Option<f64> {
        let offset = self.element_offset(index)?;
        // SAFETY: `element_offset` found every index inside its axis, by the array's own layout
        // or by `head`, which is that layout (see `Tensor::element_offset`), so the offset by the
        // array's strides names one of its elements.
        Some(unsafe { *self.array.as_ptr().offset(offset) })
    }

    /// The element at `index` for writing in place, as [`Tensor::element`] finds it, when no
    /// other tensor shares the buffer; `None` when one does (the caller then writes through
    /// [`set`], which copies the buffer first) or when `index` names no element.
    ///
    /// One uniqueness check, a load of the buffer's count: ndarray's own `as_mut_ptr` would ask
    /// `Arc::get_mut`, an atomic compare-and-swap, on every write.
    #[inline]
    pub fn unshared_element_mut(&mut self, index: &[i64]) -> Option<&mut f64> {
        if self.shares_buffer() {
            return None;
        }
        // The count of 1 may have been left by another thread dropping its handle: synchronise
        // with that drop (a release decrement) before touching the data, as `Arc::get_mut` does.
        // On x86 this is no instruction.
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        let offset = self.element_offset(index)?;
        // SAFETY: the buffer's reference count is 1 and `self` is borrowed mutably, so this
        // array is the buffer's only handle and nothing else reads or writes it while the
        // returned borrow (tied to `self`) lives. The array's stored pointer is the one
        // ndarray's `as_mut_ptr` returns after finding the buffer unique (its copy on write does
        // nothing then), and `element_offset` found every index inside its axis, so the offset
        // by the array's strides names one of its elements.
        Some(unsafe { &mut *self.array.as_ptr().cast_mut().offset(offset) })
    }

    /// [`element_offset`] for this tensor; up to [`HEAD_RANK`] indices read the layout from
    /// [`Head`], and an index in `0..extent` takes one unsigned compare.
    ///
    /// The unsafe reads and writes of [`Tensor::element`] and [`Tensor::unshared_element_mut`]
    /// rely on `head` being the array's layout: `Tensor::new`, the only way a tensor is made,
    /// copies it out of the array, and nothing assigns the array or changes its layout after.
    #[inline(always)]
    fn element_offset(&self, index: &[i64]) -> Option<isize> {
        debug_assert!(
            self.head.rank == self.array.ndim()
                && self.shape().iter().zip(&self.head.extents).all(|(a, b)| a == b)
        );
        // `index.len()` is a constant where the interpreter's one- and two-index accesses call.
        if index.len() > HEAD_RANK {
            return element_offset(self.shape(), self.array.strides(), index);
        }
        if index.len() != self.head.rank {
            return None;
        }
        let mut offset = 0;
        for (k, &i) in index.iter().enumerate() {
            let extent = self.head.extents[k];
            // A negative `i` is above every extent as a `u64`.
            let i = if (i as u64) < extent as u64 { i as usize } else { position(i, extent)? };
            offset += i as isize * self.head.strides[k];
        }
        Some(offset)
    }

    /// Whether another tensor shares this one's buffer, so that a write copies it first.
    #[inline]
    pub fn shares_buffer(&self) -> bool {
        !self.array.is_unique()
    }
}

/// The distance in elements from the first element of an array of `shape` and `strides` to the
/// one at `index` (one integer per axis, negative ones counting from the end), when `index` has
/// one in-range integer per axis.
#[inline(always)]
fn element_offset(shape: &[usize], strides: &[isize], index: &[i64]) -> Option<isize> {
    if index.len() != shape.len() || index.len() > MAX_ELEMENT_RANK {
        return None;
    }
    // Driven by `index`, whose length the interpreter's one- and two-index accesses fix at
    // compile time, so that the loop unrolls.
    let strides = strides.get(..index.len())?;
    let mut offset = 0;
    for (k, &i) in index.iter().enumerate() {
        offset += position(i, shape[k])? as isize * strides[k];
    }
    Some(offset)
}

/// One entry of a bracket as written, with its operands evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Subscript {
    /// `a[i]`: one position (negative counts from the end); drops the axis.
    At(i64),
    /// `a[start:end:step]`, any part omitted; keeps the axis.
    Slice { start: Option<i64>, end: Option<i64>, step: Option<i64> },
    /// `...`: as many full slices as the axes no other entry names.
    Ellipsis,
    /// `none`: a new axis of extent 1.
    NewAxis,
}

impl Subscript {
    /// `a[start:end]`.
    pub fn range(start: Option<i64>, end: Option<i64>) -> Subscript {
        Subscript::Slice { start, end, step: None }
    }

    /// `:`.
    pub const FULL: Subscript = Subscript::Slice { start: None, end: None, step: None };
}

/// One entry of a resolved index, applying to the next axis of the tensor (a [`Index::NewAxis`]
/// applies to none). Axes after the last entry are taken whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Index {
    /// One position; the axis is dropped.
    At(usize),
    /// `len` positions `start, start + step, ...`; `step` may be negative. `start` is a valid
    /// position unless `len` is zero.
    Range { start: usize, step: isize, len: usize },
    /// A new axis of extent `len` (1, or 0 once sliced empty).
    NewAxis { len: usize },
}

impl Index {
    /// The positions `start..end` with step 1.
    pub fn range(start: usize, end: usize) -> Index {
        Index::Range { start, step: 1, len: end.saturating_sub(start) }
    }

    /// The whole of an axis of `extent`.
    pub fn full(extent: usize) -> Index {
        Index::Range { start: 0, step: 1, len: extent }
    }
}

/// Composes the brackets of an index expression into one [`Index`] per axis: each bracket
/// applies to what the previous ones selected, as NumPy's `a[1:][0]` does.
#[derive(Clone, Debug)]
pub struct Resolver {
    /// One entry per original axis (full until indexed) plus the new axes.
    out: Vec<Index>,
    shape: Vec<usize>,
}

impl Resolver {
    pub fn new(shape: &[usize]) -> Resolver {
        Resolver {
            out: shape.iter().map(|&extent| Index::full(extent)).collect(),
            shape: shape.to_vec(),
        }
    }

    /// Applies one bracket to the current selection.
    pub fn apply(&mut self, bracket: &[Subscript]) -> Result<(), TensorError> {
        let view_rank = self.out.iter().filter(|e| !matches!(e, Index::At(_))).count();
        let named =
            bracket.iter().filter(|s| matches!(s, Subscript::At(_) | Subscript::Slice { .. }));
        let named = named.count();
        let ellipses = bracket.iter().filter(|s| matches!(s, Subscript::Ellipsis)).count();
        if ellipses > 1 {
            return Err(TensorError::Ellipses { count: ellipses });
        }
        if named > view_rank {
            return Err(TensorError::TooManyIndices { count: named, rank: view_rank });
        }
        let mut next = Vec::with_capacity(self.out.len() + bracket.len());
        let mut old = self.out.iter().copied();
        let mut axis = 0;
        // The next entry of the old selection that is an axis of the view, copying the dropped
        // axes before it.
        let missing = TensorError::TooManyIndices { count: named, rank: view_rank };
        let mut next_axis = |next: &mut Vec<Index>| {
            for entry in old.by_ref() {
                match entry {
                    Index::At(_) => next.push(entry),
                    _ => return Some(entry),
                }
            }
            None
        };
        for subscript in bracket {
            match *subscript {
                Subscript::NewAxis => next.push(Index::NewAxis { len: 1 }),
                Subscript::Ellipsis => {
                    for _ in 0..view_rank - named {
                        let entry = next_axis(&mut next).ok_or_else(|| missing.clone())?;
                        next.push(entry);
                        axis += 1;
                    }
                }
                Subscript::At(i) => {
                    let entry = next_axis(&mut next).ok_or_else(|| missing.clone())?;
                    let (start, step, len) = extent_of(entry);
                    let position = position(i, len).ok_or(TensorError::IndexOutOfRange {
                        axis,
                        index: i,
                        extent: len,
                    })?;
                    match entry {
                        // Indexing a new axis removes it.
                        Index::NewAxis { .. } => {}
                        _ => next.push(Index::At(offset(start, step, position))),
                    }
                    axis += 1;
                }
                Subscript::Slice { start: lo, end: hi, step: by } => {
                    let entry = next_axis(&mut next).ok_or_else(|| missing.clone())?;
                    let (start, step, len) = extent_of(entry);
                    let (first, by, count) = slice(axis, len, lo, hi, by)?;
                    next.push(match entry {
                        Index::NewAxis { .. } => Index::NewAxis { len: count },
                        _ if count == 0 => Index::Range { start: 0, step: 1, len: 0 },
                        // One position: its step is never used, and `step * by` may overflow
                        // (`t[::2][::i64::MAX]`). From two on, `|step * by|` is less than the
                        // original extent, since both positions lie inside it.
                        _ if count == 1 => {
                            Index::Range { start: offset(start, step, first), step: 1, len: 1 }
                        }
                        _ => Index::Range {
                            start: offset(start, step, first),
                            step: step * by,
                            len: count,
                        },
                    });
                    axis += 1;
                }
            }
        }
        while let Some(entry) = next_axis(&mut next) {
            next.push(entry);
        }
        self.out = next;
        Ok(())
    }

    /// The composed index, without the whole axes at its end.
    pub fn finish(mut self) -> Vec<Index> {
        let mut axis = self.shape.len();
        while let Some(&last) = self.out.last() {
            let whole = match last {
                Index::Range { start: 0, step: 1, len } => {
                    axis > 0 && self.shape.get(axis - 1) == Some(&len)
                }
                _ => false,
            };
            if !whole {
                break;
            }
            self.out.pop();
            axis -= 1;
        }
        self.out
    }
}

/// The index of `brackets` applied one after the other to a tensor of `shape`.
pub fn resolve(shape: &[usize], brackets: &[&[Subscript]]) -> Result<Vec<Index>, TensorError> {
    let mut resolver = Resolver::new(shape);
    for bracket in brackets {
        resolver.apply(bracket)?;
    }
    Ok(resolver.finish())
}

/// The positions an axis of the view covers in the original axis: start, step and extent.
fn extent_of(entry: Index) -> (usize, isize, usize) {
    match entry {
        Index::Range { start, step, len } => (start, step, len),
        Index::NewAxis { len } => (0, 1, len),
        Index::At(position) => (position, 1, 1),
    }
}

fn offset(start: usize, step: isize, position: usize) -> usize {
    (start as isize + step * position as isize) as usize
}

/// A position `-extent <= i < extent` counted from the front.
pub(crate) fn position(i: i64, extent: usize) -> Option<usize> {
    let extent = i64::try_from(extent).ok()?;
    let i = if i < 0 { i.checked_add(extent)? } else { i };
    (0..extent).contains(&i).then_some(i as usize)
}

/// The first position, the step and the count of `lo:hi:by` on an axis of `extent`, by the
/// rule the checker applies too ([`index_rules::slice`]).
pub fn slice(
    axis: usize,
    extent: usize,
    lo: Option<i64>,
    hi: Option<i64>,
    by: Option<i64>,
) -> Result<(usize, isize, usize), TensorError> {
    let n = i64::try_from(extent).unwrap_or(i64::MAX);
    let step = by.unwrap_or(1);
    let error = || TensorError::SliceOutOfRange { axis, start: lo, end: hi, step, extent };
    let range = match index_rules::slice(n, lo, hi, by) {
        Ok(range) => range,
        Err(index_rules::SliceError::ZeroStep) => return Err(TensorError::ZeroStep { axis }),
        Err(index_rules::SliceError::OutOfRange) => return Err(error()),
    };
    let first = usize::try_from(range.first).map_err(|_| error())?;
    let step = isize::try_from(range.step).map_err(|_| error())?;
    let len = usize::try_from(range.len).map_err(|_| error())?;
    Ok((first, step, len))
}

/// The shape of the region `index` selects in a tensor of `shape`.
pub fn indexed_shape(shape: &[usize], index: &[Index]) -> Result<Vec<usize>, TensorError> {
    let mut region = Vec::with_capacity(shape.len() + index.len());
    let mut axis = 0;
    for entry in index {
        match *entry {
            Index::At(position) => {
                check_axis(shape, axis, position)?;
                axis += 1;
            }
            Index::Range { start, step, len } => {
                check_range(shape, axis, start, step, len)?;
                region.push(len);
                axis += 1;
            }
            Index::NewAxis { len } => region.push(len),
        }
    }
    if axis > shape.len() {
        return Err(TensorError::TooManyIndices { count: axis, rank: shape.len() });
    }
    region.extend_from_slice(&shape[axis..]);
    Ok(region)
}

fn check_axis(shape: &[usize], axis: usize, position: usize) -> Result<(), TensorError> {
    match shape.get(axis) {
        Some(&extent) if position < extent => Ok(()),
        Some(&extent) => Err(TensorError::IndexOutOfRange { axis, index: position as i64, extent }),
        None => Err(TensorError::TooManyIndices { count: axis + 1, rank: shape.len() }),
    }
}

fn check_range(
    shape: &[usize],
    axis: usize,
    start: usize,
    step: isize,
    len: usize,
) -> Result<(), TensorError> {
    let Some(&extent) = shape.get(axis) else {
        return Err(TensorError::TooManyIndices { count: axis + 1, rank: shape.len() });
    };
    let last = start as isize + step * (len as isize - 1);
    let inside = |p: isize| 0 <= p && (p as usize) < extent;
    if len == 0 || (step != 0 && inside(start as isize) && inside(last)) {
        return Ok(());
    }
    Err(TensorError::SliceOutOfRange {
        axis,
        start: Some(start as i64),
        end: Some(last as i64 + step as i64),
        step: step as i64,
        extent,
    })
}

/// Narrows `array` (a whole array or a view) to the region `index` selects.
fn select<S: RawData>(array: &mut ArrayBase<S, IxDyn>, index: &[Index]) {
    let mut axis = 0;
    for entry in index {
        match *entry {
            Index::At(position) => array.index_axis_inplace(Axis(axis), position),
            Index::Range { start, step, len } => {
                array.slice_axis_inplace(Axis(axis), range_slice(start, step, len));
                axis += 1;
            }
            Index::NewAxis { len } => {
                array.insert_axis_inplace(Axis(axis));
                if len == 0 {
                    array.slice_axis_inplace(Axis(axis), Slice::from(0..0));
                }
                axis += 1;
            }
        }
    }
}

/// The ndarray slice of `len` positions from `start` by `step`. With a negative step ndarray
/// takes the range first and walks it from its end, so the range ends just after `start`.
fn range_slice(start: usize, step: isize, len: usize) -> Slice {
    if len == 0 {
        return Slice::from(0..0);
    }
    let span = step.unsigned_abs() * (len - 1);
    match step > 0 {
        true => Slice::new(start as isize, Some((start + span + 1) as isize), step),
        false => Slice::new((start - span) as isize, Some(start as isize + 1), step),
    }
}

/// The region `index` selects, sharing the tensor's buffer (no copy). Indexing every axis with
/// [`Index::At`] gives a rank-0 tensor.
pub fn get(tensor: &Tensor, index: &[Index]) -> Result<Tensor, TensorError> {
    indexed_shape(tensor.shape(), index)?;
    let mut array = tensor.array().clone();
    select(&mut array, index);
    Ok(Tensor::from(array))
}

/// `tensor` with the region `index` selects overwritten by `value`, broadcast to the region's
/// shape. The buffer is copied first only if another clone shares it.
pub fn set(tensor: Tensor, index: &[Index], value: &Tensor) -> Result<Tensor, TensorError> {
    update(tensor, index, value, |slot, &new| *slot = new)
}

/// `tensor` with `value`, broadcast to the region `index` selects, added to that region: the
/// gradient rule of indexing, and Nabla's `a[i] += v`.
pub fn add_at(tensor: Tensor, index: &[Index], value: &Tensor) -> Result<Tensor, TensorError> {
    update(tensor, index, value, |slot, &new| *slot += new)
}

fn update(
    tensor: Tensor,
    index: &[Index],
    value: &Tensor,
    combine: impl FnMut(&mut f64, &f64),
) -> Result<Tensor, TensorError> {
    let region = indexed_shape(tensor.shape(), index)?;
    let source = value.array().broadcast(IxDyn(&region)).ok_or_else(|| {
        TensorError::BroadcastTo { from: value.shape().to_vec(), to: region.clone() }
    })?;
    let mut array = tensor.into_array();
    {
        // Taking a mutable view makes the buffer unique, copying it if it is shared.
        let mut target = array.view_mut();
        select(&mut target, index);
        target.zip_mut_with(&source, combine);
    }
    Ok(Tensor::from(array))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Subscript::{At, Ellipsis, NewAxis};

    fn counting(shape: &[usize]) -> Tensor {
        let len = shape.iter().product::<usize>();
        Tensor::from_vec(shape, (0..len).map(|i| i as f64).collect()).unwrap()
    }

    fn s(start: Option<i64>, end: Option<i64>, step: Option<i64>) -> Subscript {
        Subscript::Slice { start, end, step }
    }

    fn index(tensor: &Tensor, brackets: &[&[Subscript]]) -> Result<Vec<Index>, TensorError> {
        resolve(tensor.shape(), brackets)
    }

    fn show(tensor: &Tensor, brackets: &[&[Subscript]]) -> String {
        match index(tensor, brackets).and_then(|index| get(tensor, &index)) {
            Ok(region) if region.shape().contains(&0) => format!("{:?}", region.shape()),
            Ok(region) => region.to_string(),
            Err(error) => error.to_string(),
        }
    }

    // Expected values from NumPy on `np.arange(12.).reshape(3, 4)`.
    #[test]
    fn every_basic_form_matches_numpy() {
        let x = counting(&[3, 4]);
        let full = Subscript::FULL;
        assert_eq!(show(&x, &[&[At(1), At(2)]]), "6.0");
        assert_eq!(show(&x, &[&[At(1)], &[At(2)]]), "6.0");
        assert_eq!(show(&x, &[&[full, At(3)]]), "[3.0, 7.0, 11.0]");
        assert_eq!(
            show(&x, &[&[s(None, None, Some(-1))]]),
            "[[8.0, 9.0, 10.0, 11.0], [4.0, 5.0, 6.0, 7.0], [0.0, 1.0, 2.0, 3.0]]"
        );
        assert_eq!(
            show(&x, &[&[s(Some(1), None, None), s(None, None, Some(-2))]]),
            "[[7.0, 5.0], [11.0, 9.0]]"
        );
        assert_eq!(show(&x, &[&[At(-1)]]), "[8.0, 9.0, 10.0, 11.0]");
        assert_eq!(show(&x, &[&[Ellipsis, At(0)]]), "[0.0, 4.0, 8.0]");
        assert_eq!(show(&x, &[&[full, NewAxis, At(1)]]), "[[1.0], [5.0], [9.0]]");
        assert_eq!(get(&x, &index(&x, &[&[NewAxis]]).unwrap()).unwrap().shape(), [1, 3, 4]);
        assert_eq!(
            show(&x, &[&[s(Some(2), Some(0), Some(-1)), s(Some(-3), None, None)]]),
            "[[9.0, 10.0, 11.0], [5.0, 6.0, 7.0]]"
        );
        assert_eq!(show(&x, &[&[s(None, Some(0), None)]]), "[0, 4]");
        assert_eq!(show(&x, &[&[NewAxis], &[s(Some(0), Some(0), None)]]), "[0, 3, 4]");
        assert_eq!(
            show(&x, &[&[s(Some(1), None, None)], &[At(0), s(None, None, Some(-1))]]),
            "[7.0, 6.0, 5.0, 4.0]"
        );
        assert_eq!(
            show(&x, &[&[s(None, None, Some(2))], &[s(None, None, Some(-1)), At(1)]]),
            "[9.0, 1.0]"
        );
        assert_eq!(
            show(&x, &[&[s(Some(0), Some(3), Some(2)), s(Some(1), Some(4), Some(2))]]),
            "[[1.0, 3.0], [9.0, 11.0]]"
        );
        assert_eq!(show(&x, &[&[Ellipsis]]), x.to_string());
        assert_eq!(show(&x, &[]), x.to_string());
    }

    #[test]
    fn slices_may_reach_both_ends_and_be_empty() {
        let x = counting(&[3]);
        assert_eq!(show(&x, &[&[s(Some(0), Some(3), None)]]), "[0.0, 1.0, 2.0]");
        assert_eq!(show(&x, &[&[s(Some(3), None, None)]]), "[0]");
        assert_eq!(show(&x, &[&[s(Some(1), Some(1), None)]]), "[0]");
        assert_eq!(show(&x, &[&[s(Some(-3), Some(-1), None)]]), "[0.0, 1.0]");
        assert_eq!(show(&x, &[&[s(Some(-1), None, Some(-2))]]), "[2.0, 0.0]");
        assert_eq!(show(&x, &[&[s(Some(1), Some(1), Some(-1))]]), "[0]");
        assert_eq!(show(&Tensor::zeros(&[0]).unwrap(), &[&[s(None, None, Some(-1))]]), "[0]");
    }

    // NumPy: `np.arange(5.)[::2][::sys.maxsize]` is `[0.]`, `[::-2][::-sys.maxsize]` is `[0.]`.
    #[test]
    fn steps_of_composed_slices_do_not_overflow() {
        let x = counting(&[5]);
        let by = |step| s(None, None, Some(step));
        assert_eq!(show(&x, &[&[by(2)], &[by(i64::MAX)]]), "[0.0]");
        assert_eq!(show(&x, &[&[by(-2)], &[by(-i64::MAX)]]), "[0.0]");
        assert_eq!(show(&x, &[&[by(-2)], &[by(i64::MIN)]]), "[0.0]");
        assert_eq!(show(&x, &[&[by(2)], &[by(i64::MAX)], &[by(i64::MAX)]]), "[0.0]");
    }

    #[test]
    fn out_of_range_indices_are_errors() {
        let x = counting(&[3, 4]);
        assert_eq!(
            show(&x, &[&[At(3)]]),
            "index 3 is out of range for axis 0 with extent 3 (valid: -3 to 2)"
        );
        assert_eq!(
            show(&x, &[&[At(0), At(-5)]]),
            "index -5 is out of range for axis 1 with extent 4 (valid: -4 to 3)"
        );
        assert_eq!(
            show(&x, &[&[s(Some(2), Some(5), None)]]),
            "slice 2:5 is out of range for axis 0 with extent 3 \
             (bounds must lie in -3..=3, the start not after the end)"
        );
        assert_eq!(
            show(&x, &[&[s(Some(3), None, Some(-1))]]),
            "slice 3::-1 is out of range for axis 0 with extent 3 \
             (with a negative step the start must lie in -3..3 and not before the end)"
        );
        assert_eq!(show(&x, &[&[s(None, None, Some(0))]]), "the step of a slice of axis 0 is zero");
        assert!(index(&x, &[&[s(Some(2), Some(1), None)]]).is_err());
        assert!(index(&x, &[&[s(Some(0), Some(2), Some(-1))]]).is_err());
        assert!(index(&x, &[&[s(Some(-4), None, None)]]).is_err());
        assert_eq!(show(&x, &[&[At(0), At(0), At(0)]]), "3 indices for a tensor of rank 2");
        assert_eq!(show(&x, &[&[At(0)], &[At(0), At(0)]]), "2 indices for a tensor of rank 1");
        assert_eq!(
            show(&x, &[&[Ellipsis, At(0), Ellipsis]]),
            "2 `...` in one bracket: at most one may stand for the other axes"
        );
        assert!(index(&Tensor::scalar(1.0), &[&[At(0)]]).is_err());
    }

    #[test]
    fn the_index_keeps_only_what_it_narrows() {
        let x = counting(&[3, 4, 5]);
        assert_eq!(index(&x, &[&[At(1)]]), Ok(vec![Index::At(1)]));
        assert_eq!(
            index(&x, &[&[Subscript::FULL, At(-1)]]),
            Ok(vec![Index::full(3), Index::At(3)])
        );
        assert_eq!(index(&x, &[&[Ellipsis]]), Ok(vec![]));
        assert_eq!(
            index(&x, &[&[s(Some(1), None, None)], &[s(None, None, Some(-1))]]),
            Ok(vec![Index::Range { start: 2, step: -1, len: 2 }])
        );
    }

    #[test]
    fn get_shares_and_set_copies_on_write() {
        let x = counting(&[2, 2]);
        let row = get(&x, &[Index::At(1)]).unwrap();
        let updated = set(x.clone(), &[Index::At(1), Index::At(0)], &Tensor::scalar(9.0)).unwrap();
        assert_eq!(updated.to_string(), "[[0.0, 1.0], [9.0, 3.0]]");
        assert_eq!(x.to_string(), "[[0.0, 1.0], [2.0, 3.0]]");
        assert_eq!(row.to_string(), "[2.0, 3.0]");

        // A tensor nothing else shares is written in place.
        let unique = counting(&[2, 2]);
        let pointer = unique.array().as_ptr();
        let written = set(unique, &[Index::At(0)], &Tensor::scalar(5.0)).unwrap();
        assert_eq!(written.array().as_ptr(), pointer);
        assert_eq!(written.to_string(), "[[5.0, 5.0], [2.0, 3.0]]");
    }

    #[test]
    fn set_broadcasts_the_value_to_the_region() {
        let x = counting(&[3, 2]);
        let rows = set(x.clone(), &[Index::range(1, 3)], &Tensor::vector(vec![7.0, 8.0]));
        assert_eq!(rows.unwrap().to_string(), "[[0.0, 1.0], [7.0, 8.0], [7.0, 8.0]]");
        let column = set(x.clone(), &[Index::full(3), Index::At(1)], &Tensor::scalar(-1.0));
        assert_eq!(column.unwrap().to_string(), "[[0.0, -1.0], [2.0, -1.0], [4.0, -1.0]]");
        let reversed = Index::Range { start: 2, step: -2, len: 2 };
        let ends = set(
            x.clone(),
            &[reversed],
            &Tensor::from_vec(&[2, 2], vec![10.0, 11.0, 12.0, 13.0]).unwrap(),
        );
        assert_eq!(ends.unwrap().to_string(), "[[12.0, 13.0], [2.0, 3.0], [10.0, 11.0]]");
        assert_eq!(
            set(x.clone(), &[Index::At(0)], &Tensor::vector(vec![1.0, 2.0, 3.0]))
                .unwrap_err()
                .to_string(),
            "shape mismatch: Tensor[3] cannot be broadcast to Tensor[2]"
        );
        // Assigning a tensor's own row to another reads the value before writing.
        let own_row = get(&x, &[Index::At(0)]).unwrap();
        let copied = set(x, &[Index::At(2)], &own_row).unwrap();
        assert_eq!(copied.to_string(), "[[0.0, 1.0], [2.0, 3.0], [0.0, 1.0]]");
    }

    #[test]
    fn add_at_accumulates_into_the_region() {
        let zeros = Tensor::zeros(&[2, 3]).unwrap();
        let once = add_at(zeros, &[Index::At(1)], &Tensor::vector(vec![1.0, 2.0, 3.0])).unwrap();
        let twice = add_at(once, &[Index::full(2), Index::At(0)], &Tensor::scalar(10.0));
        assert_eq!(twice.unwrap().to_string(), "[[10.0, 0.0, 0.0], [11.0, 2.0, 3.0]]");
        assert_eq!(
            indexed_shape(
                &[4, 5, 6],
                &[Index::range(1, 3), Index::NewAxis { len: 1 }, Index::At(0)]
            ),
            Ok(vec![2, 1, 6])
        );
    }
}
