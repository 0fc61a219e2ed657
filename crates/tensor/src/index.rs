//! Indexing: `a[i]`, `a[i:j]` and their combinations on the leading axes, reading (a view that
//! shares the buffer) and writing (copy-on-write, with the value broadcast to the region).
//!
//! Bounds are strict: an index must satisfy `0 <= i < extent` and a slice
//! `0 <= start <= end <= extent` (an omitted start is 0, an omitted end the extent). Negative
//! indices and out-of-range slice ends are errors naming the axis, the index and the extent; they
//! are not clamped or counted from the end as in NumPy.

use ndarray::{ArcArray, Axis, IxDyn, Slice};

use super::Tensor;
use super::error::TensorError;

/// One entry of an index expression, applying to the next leading axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Index {
    /// `a[i]`: selects one position and drops the axis.
    At(i64),
    /// `a[i:j]`, `a[:j]`, `a[i:]`, `a[:]`: selects a range and keeps the axis.
    Slice(Option<i64>, Option<i64>),
}

/// An [`Index`] checked against its axis.
#[derive(Clone, Copy, Debug)]
enum Resolved {
    At(usize),
    Range(usize, usize),
}

/// The shape of the region `indices` select in a tensor of `shape`.
pub fn indexed_shape(shape: &[usize], indices: &[Index]) -> Result<Vec<usize>, TensorError> {
    let resolved = resolve(shape, indices)?;
    let mut region = Vec::with_capacity(shape.len());
    for entry in &resolved {
        if let Resolved::Range(start, end) = *entry {
            region.push(end - start);
        }
    }
    region.extend_from_slice(&shape[resolved.len()..]);
    Ok(region)
}

/// The region `indices` select, sharing the tensor's buffer (no copy). Indexing every axis with
/// [`Index::At`] gives a rank-0 tensor.
pub fn get(tensor: &Tensor, indices: &[Index]) -> Result<Tensor, TensorError> {
    let resolved = resolve(tensor.shape(), indices)?;
    let mut array = tensor.array().clone();
    select(&mut array, &resolved);
    Ok(Tensor::from(array))
}

/// `tensor` with the region `indices` select overwritten by `value`, broadcast to the region's
/// shape. The buffer is copied first only if another clone shares it.
pub fn set(tensor: Tensor, indices: &[Index], value: &Tensor) -> Result<Tensor, TensorError> {
    update(tensor, indices, value, |slot, &new| *slot = new)
}

/// `tensor` with `value`, broadcast to the region `indices` select, added to that region: the
/// gradient rule of indexing, and Nabla's `a[i] += v`.
pub fn add_at(tensor: Tensor, indices: &[Index], value: &Tensor) -> Result<Tensor, TensorError> {
    update(tensor, indices, value, |slot, &new| *slot += new)
}

fn update(
    tensor: Tensor,
    indices: &[Index],
    value: &Tensor,
    combine: impl FnMut(&mut f64, &f64),
) -> Result<Tensor, TensorError> {
    let resolved = resolve(tensor.shape(), indices)?;
    let region = indexed_shape(tensor.shape(), indices)?;
    let source = value.array().broadcast(IxDyn(&region)).ok_or_else(|| {
        TensorError::BroadcastTo { from: value.shape().to_vec(), to: region.clone() }
    })?;
    let mut array = tensor.into_array();
    {
        // Taking a mutable view makes the buffer unique, copying it if it is shared.
        let mut target = array.view_mut();
        let mut axis = 0;
        for entry in &resolved {
            match *entry {
                Resolved::At(position) => target.index_axis_inplace(Axis(axis), position),
                Resolved::Range(start, end) => {
                    target.slice_axis_inplace(Axis(axis), Slice::from(start..end));
                    axis += 1;
                }
            }
        }
        target.zip_mut_with(&source, combine);
    }
    Ok(Tensor::from(array))
}

fn select(array: &mut ArcArray<f64, IxDyn>, resolved: &[Resolved]) {
    let mut axis = 0;
    for entry in resolved {
        match *entry {
            Resolved::At(position) => array.index_axis_inplace(Axis(axis), position),
            Resolved::Range(start, end) => {
                array.slice_axis_inplace(Axis(axis), Slice::from(start..end));
                axis += 1;
            }
        }
    }
}

fn resolve(shape: &[usize], indices: &[Index]) -> Result<Vec<Resolved>, TensorError> {
    if indices.len() > shape.len() {
        return Err(TensorError::TooManyIndices { count: indices.len(), rank: shape.len() });
    }
    indices
        .iter()
        .zip(shape)
        .enumerate()
        .map(|(axis, (&index, &extent))| match index {
            Index::At(position) => match usize::try_from(position) {
                Ok(resolved) if resolved < extent => Ok(Resolved::At(resolved)),
                _ => Err(TensorError::IndexOutOfRange { axis, index: position, extent }),
            },
            Index::Slice(start, end) => {
                let extent_signed = i64::try_from(extent).unwrap_or(i64::MAX);
                let (start, end) = (start.unwrap_or(0), end.unwrap_or(extent_signed));
                let in_range = 0 <= start && start <= end && end <= extent_signed;
                match (in_range, usize::try_from(start), usize::try_from(end)) {
                    (true, Ok(first), Ok(last)) => Ok(Resolved::Range(first, last)),
                    _ => Err(TensorError::SliceOutOfRange { axis, start, end, extent }),
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counting(shape: &[usize]) -> Tensor {
        let len = shape.iter().product::<usize>();
        Tensor::from_vec(shape, (0..len).map(|i| i as f64).collect()).unwrap()
    }

    fn show(tensor: &Tensor, indices: &[Index]) -> String {
        match get(tensor, indices) {
            Ok(region) => region.to_string(),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn integer_indices_drop_axes_and_slices_keep_them() {
        let x = counting(&[3, 4]);
        assert_eq!(show(&x, &[Index::At(1)]), "[4.0, 5.0, 6.0, 7.0]");
        assert_eq!(show(&x, &[Index::At(1), Index::At(2)]), "6.0");
        assert_eq!(get(&x, &[Index::At(1), Index::At(2)]).unwrap().rank(), 0);
        assert_eq!(show(&x, &[Index::Slice(Some(1), Some(2))]), "[[4.0, 5.0, 6.0, 7.0]]");
        assert_eq!(show(&x, &[Index::Slice(None, None), Index::At(3)]), "[3.0, 7.0, 11.0]");
        assert_eq!(
            show(&x, &[Index::Slice(Some(1), None), Index::Slice(None, Some(2))]),
            "[[4.0, 5.0], [8.0, 9.0]]"
        );
        assert_eq!(show(&x, &[]), x.to_string());
    }

    #[test]
    fn slices_may_reach_both_ends_and_be_empty() {
        let x = counting(&[3]);
        assert_eq!(show(&x, &[Index::Slice(Some(0), Some(3))]), "[0.0, 1.0, 2.0]");
        assert_eq!(show(&x, &[Index::Slice(Some(3), None)]), "[]");
        assert_eq!(show(&x, &[Index::Slice(Some(1), Some(1))]), "[]");
        assert_eq!(show(&x, &[Index::Slice(None, Some(0))]), "[]");
    }

    #[test]
    fn out_of_range_indices_are_errors() {
        let x = counting(&[3, 4]);
        assert_eq!(show(&x, &[Index::At(3)]), "index 3 is out of range for axis 0 with extent 3");
        assert_eq!(
            show(&x, &[Index::At(0), Index::At(-1)]),
            "index -1 is out of range for axis 1 with extent 4"
        );
        assert_eq!(
            show(&x, &[Index::Slice(Some(2), Some(5))]),
            "slice 2:5 is out of range for axis 0 with extent 3 \
             (bounds must satisfy 0 <= start <= end <= 3)"
        );
        assert!(get(&x, &[Index::Slice(Some(2), Some(1))]).is_err());
        assert!(get(&x, &[Index::Slice(Some(-1), None)]).is_err());
        assert!(get(&x, &[Index::Slice(Some(4), None)]).is_err());
        assert_eq!(
            show(&x, &[Index::At(0), Index::At(0), Index::At(0)]),
            "3 indices for a tensor of rank 2"
        );
        assert!(get(&Tensor::scalar(1.0), &[Index::At(0)]).is_err());
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
        let rows = set(x.clone(), &[Index::Slice(Some(1), None)], &Tensor::vector(vec![7.0, 8.0]));
        assert_eq!(rows.unwrap().to_string(), "[[0.0, 1.0], [7.0, 8.0], [7.0, 8.0]]");
        let column =
            set(x.clone(), &[Index::Slice(None, None), Index::At(1)], &Tensor::scalar(-1.0));
        assert_eq!(column.unwrap().to_string(), "[[0.0, -1.0], [2.0, -1.0], [4.0, -1.0]]");
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
        let twice = add_at(once, &[Index::Slice(None, None), Index::At(0)], &Tensor::scalar(10.0));
        assert_eq!(twice.unwrap().to_string(), "[[10.0, 0.0, 0.0], [11.0, 2.0, 3.0]]");
        assert_eq!(
            indexed_shape(&[4, 5, 6], &[Index::Slice(Some(1), Some(3)), Index::At(0)]),
            Ok(vec![2, 6])
        );
    }
}
