//! Shape functions: axes, user-given dimensions, reshaping, transposition, concatenation,
//! stacking, diagonals, and the `all`/`any` tests.
//!
//! Axis arguments follow NumPy: an axis `a` of a rank-`r` tensor must satisfy `-r <= a < r`, and a
//! negative axis counts from the end (`-1` is the last axis). Anything else is
//! [`TensorError::Axis`].

use ndarray::{Array2, Axis, IxDyn};

use super::Tensor;
use super::allocation::check_allocation;
use super::error::TensorError;

/// Resolves an axis argument of a rank-`rank` tensor to an axis number, NumPy-style.
pub fn normalize_axis(axis: i64, rank: usize) -> Result<usize, TensorError> {
    let error = || TensorError::Axis { axis, rank };
    let rank_signed = i64::try_from(rank).map_err(|_| error())?;
    let resolved = if axis < 0 { axis + rank_signed } else { axis };
    if (0..rank_signed).contains(&resolved) {
        usize::try_from(resolved).map_err(|_| error())
    } else {
        Err(error())
    }
}

/// Checks dimensions given as integers (`zeros([n, 3])` after the interpreter evaluated them).
pub fn dims_from_i64(dims: &[i64]) -> Result<Vec<usize>, TensorError> {
    dims.iter()
        .map(|&dim| usize::try_from(dim).map_err(|_| TensorError::Dimension { value: dim as f64 }))
        .collect()
}

/// Checks dimensions given as floats, as a shape written as a tensor literal holds them: each
/// must be a non-negative integer.
pub fn dims_from_f64(dims: &[f64]) -> Result<Vec<usize>, TensorError> {
    dims.iter()
        .map(|&value| {
            // 2^53 bounds every float that is still an exact integer; larger ones cannot be a
            // shape anyone can allocate.
            if value >= 0.0 && value.fract() == 0.0 && value <= 9_007_199_254_740_992.0 {
                Ok(value as usize)
            } else {
                Err(TensorError::Dimension { value })
            }
        })
        .collect()
}

/// The shape `reshape` takes from a list of extents for a tensor of shape `from`: one extent may
/// be `-1`, standing for the one that makes the element counts agree (NumPy's rule).
pub fn reshape_extents(from: &[usize], dims: &[i64]) -> Result<Vec<usize>, TensorError> {
    let error = || TensorError::ReshapeInferred { from: from.to_vec(), to: dims.to_vec() };
    let inferred: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == -1).collect();
    let [position] = inferred.as_slice() else {
        if inferred.len() > 1 {
            return Err(error());
        }
        return dims_from_i64(dims);
    };
    let mut extents = dims.to_vec();
    extents[*position] = 1;
    let known = dims_from_i64(&extents)?;
    let len = from.iter().try_fold(1usize, |acc, &e| acc.checked_mul(e)).ok_or_else(error)?;
    let others = known.iter().try_fold(1usize, |acc, &e| acc.checked_mul(e));
    match others {
        Some(others) if others > 0 && len.is_multiple_of(others) => {
            let mut shape = known;
            shape[*position] = len / others;
            Ok(shape)
        }
        _ => Err(error()),
    }
}

/// The extent of one axis: Nabla's `shape(t, axis)`.
pub fn extent(tensor: &Tensor, axis: i64) -> Result<usize, TensorError> {
    let axis = normalize_axis(axis, tensor.rank())?;
    Ok(tensor.shape()[axis])
}

/// The same elements in row-major order laid out in `shape`; the element counts must match.
/// No copy is made when the tensor is already in row-major layout.
pub fn reshape(tensor: &Tensor, shape: &[usize]) -> Result<Tensor, TensorError> {
    let error = || TensorError::Reshape { from: tensor.shape().to_vec(), to: shape.to_vec() };
    let count = shape.iter().try_fold(1usize, |acc, &extent| acc.checked_mul(extent));
    if count != Some(tensor.len()) {
        return Err(error());
    }
    let array = tensor.array();
    let reshaped = if array.is_standard_layout() {
        array.clone().into_shape_with_order(IxDyn(shape)).map_err(|_| error())?
    } else {
        let standard = array.as_standard_layout().into_owned();
        standard.into_shape_with_order(IxDyn(shape)).map_err(|_| error())?.into_shared()
    };
    Ok(Tensor::from(reshaped))
}

/// The tensor with its axes reversed (the matrix transpose for rank 2), without copying.
pub fn transpose(tensor: &Tensor) -> Tensor {
    Tensor::from(tensor.array().clone().reversed_axes())
}

/// The tensor with its axes permuted: axis `i` of the result is axis `axes[i]` of the input, as in
/// NumPy's `transpose(t, axes)`. Negative entries count from the end. No copy is made.
pub fn permute(tensor: &Tensor, axes: &[i64]) -> Result<Tensor, TensorError> {
    let rank = tensor.rank();
    let error = || TensorError::Permutation { permutation: axes.to_vec(), rank };
    if axes.len() != rank {
        return Err(error());
    }
    let mut seen = vec![false; rank];
    let mut resolved = Vec::with_capacity(rank);
    for &axis in axes {
        let axis = normalize_axis(axis, rank).map_err(|_| error())?;
        if std::mem::replace(&mut seen[axis], true) {
            return Err(error());
        }
        resolved.push(axis);
    }
    Ok(Tensor::from(tensor.array().clone().permuted_axes(IxDyn(&resolved))))
}

/// The tensor with two axes exchanged, without copying; the gradient of a batched matrix product
/// uses it on the last two axes.
pub fn swap_axes(tensor: &Tensor, first: i64, second: i64) -> Result<Tensor, TensorError> {
    let first = normalize_axis(first, tensor.rank())?;
    let second = normalize_axis(second, tensor.rank())?;
    let mut array = tensor.array().clone();
    array.swap_axes(first, second);
    Ok(Tensor::from(array))
}

/// The tensor with a new axis of extent 1 inserted before axis `axis`, which may range over
/// `-(rank + 1)..=rank` (NumPy's `expand_dims`); reductions' gradients use it to restore the
/// reduced axis.
pub fn expand_dims(tensor: &Tensor, axis: i64) -> Result<Tensor, TensorError> {
    let axis = normalize_axis(axis, tensor.rank() + 1)
        .map_err(|_| TensorError::Axis { axis, rank: tensor.rank() })?;
    Ok(Tensor::from(tensor.array().clone().insert_axis(Axis(axis))))
}

/// `lhs` and `rhs` joined along `axis`; all other extents must agree.
pub fn concat(lhs: &Tensor, rhs: &Tensor, axis: i64) -> Result<Tensor, TensorError> {
    let axis = normalize_axis(axis, lhs.rank())?;
    let error =
        || TensorError::Concat { lhs: lhs.shape().to_vec(), rhs: rhs.shape().to_vec(), axis };
    let compatible = lhs.rank() == rhs.rank()
        && lhs.shape().iter().zip(rhs.shape()).enumerate().all(|(i, (a, b))| i == axis || a == b);
    if !compatible {
        return Err(error());
    }
    let mut shape = lhs.shape().to_vec();
    shape[axis] = lhs.shape()[axis].checked_add(rhs.shape()[axis]).ok_or_else(error)?;
    check_allocation(&shape)?;
    let joined =
        ndarray::concatenate(Axis(axis), &[lhs.view(), rhs.view()]).map_err(|_| error())?;
    Ok(Tensor::from(joined))
}

/// `lhs` and `rhs` stacked along a new first axis; their shapes must be equal.
pub fn stack(lhs: &Tensor, rhs: &Tensor) -> Result<Tensor, TensorError> {
    let error = || TensorError::Stack { lhs: lhs.shape().to_vec(), rhs: rhs.shape().to_vec() };
    if lhs.shape() != rhs.shape() {
        return Err(error());
    }
    let mut shape = vec![2];
    shape.extend_from_slice(lhs.shape());
    check_allocation(&shape)?;
    let stacked = ndarray::stack(Axis(0), &[lhs.view(), rhs.view()]).map_err(|_| error())?;
    Ok(Tensor::from(stacked))
}

/// For a vector, the square matrix with it on the diagonal; for a matrix (square or not), its
/// main diagonal as a vector.
pub fn diag(tensor: &Tensor) -> Result<Tensor, TensorError> {
    match tensor.shape() {
        &[n] => {
            check_allocation(&[n, n])?;
            let mut matrix = Array2::zeros((n, n));
            for (entry, &value) in matrix.diag_mut().iter_mut().zip(tensor.array().iter()) {
                *entry = value;
            }
            Ok(Tensor::from(matrix.into_dyn()))
        }
        &[_, _] => Ok(Tensor::vector(diagonal(tensor).collect())),
        shape => Err(TensorError::Rank {
            op: "diag",
            expected: "a vector or a matrix",
            shape: shape.to_vec(),
        }),
    }
}

/// The sum of a matrix's main diagonal (square or not).
pub fn trace(tensor: &Tensor) -> Result<f64, TensorError> {
    match tensor.shape() {
        &[_, _] => Ok(diagonal(tensor).sum()),
        shape => {
            Err(TensorError::Rank { op: "trace", expected: "a matrix", shape: shape.to_vec() })
        }
    }
}

/// Whether every element is non-zero (NaN counts as non-zero, as in C); true when empty.
pub fn all(tensor: &Tensor) -> bool {
    tensor.array().iter().all(|&x| x != 0.0)
}

/// Whether some element is non-zero (NaN counts as non-zero, as in C); false when empty.
pub fn any(tensor: &Tensor) -> bool {
    tensor.array().iter().any(|&x| x != 0.0)
}

/// The elements `[i][i]` of a rank-2 tensor.
fn diagonal(tensor: &Tensor) -> impl Iterator<Item = f64> + '_ {
    tensor.array().outer_iter().enumerate().map_while(|(i, row)| row.get(i).copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_extent_may_be_inferred() {
        assert_eq!(reshape_extents(&[12], &[-1, 3]), Ok(vec![4, 3]));
        assert_eq!(reshape_extents(&[3, 4], &[2, -1, 2]), Ok(vec![2, 3, 2]));
        assert_eq!(reshape_extents(&[0], &[-1, 3]), Ok(vec![0, 3]));
        assert_eq!(reshape_extents(&[6], &[2, 3]), Ok(vec![2, 3]));
        assert_eq!(
            reshape_extents(&[3, 4], &[-1, 5]).unwrap_err().to_string(),
            "cannot reshape Tensor[3][4] (12 elements) to [-1, 5]: 12 is not a multiple of 5, \
             the product of the other extents"
        );
        assert_eq!(
            reshape_extents(&[12], &[-1, -1]).unwrap_err().to_string(),
            "cannot reshape Tensor[12] (12 elements) to [-1, -1]: only one extent may be -1"
        );
    }

    fn tensor(shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_vec(shape, values.to_vec()).unwrap()
    }

    fn counting(shape: &[usize]) -> Tensor {
        let len = shape.iter().product::<usize>();
        Tensor::from_vec(shape, (0..len).map(|i| i as f64).collect()).unwrap()
    }

    #[test]
    fn axes_resolve_like_numpy() {
        assert_eq!(normalize_axis(0, 2), Ok(0));
        assert_eq!(normalize_axis(-1, 2), Ok(1));
        assert_eq!(normalize_axis(-2, 2), Ok(0));
        assert_eq!(
            normalize_axis(2, 2).unwrap_err().to_string(),
            "axis 2 is out of range for a tensor of rank 2"
        );
        assert!(normalize_axis(-3, 2).is_err());
        assert!(normalize_axis(0, 0).is_err());
        assert_eq!(extent(&counting(&[2, 3]), -1), Ok(3));
    }

    #[test]
    fn user_dimensions_must_be_non_negative_integers() {
        assert_eq!(dims_from_i64(&[2, 0, 3]), Ok(vec![2, 0, 3]));
        assert_eq!(
            dims_from_i64(&[2, -1]).unwrap_err().to_string(),
            "dimension -1 is not a non-negative integer"
        );
        assert_eq!(dims_from_f64(&[2.0, 3.0]), Ok(vec![2, 3]));
        assert_eq!(
            dims_from_f64(&[2.5]).unwrap_err().to_string(),
            "dimension 2.5 is not a non-negative integer"
        );
        assert!(dims_from_f64(&[f64::NAN]).is_err());
        assert!(dims_from_f64(&[1e300]).is_err());
    }

    #[test]
    fn reshape_keeps_row_major_order() {
        let reshaped = reshape(&counting(&[2, 3]), &[3, 2]).unwrap();
        assert_eq!(reshaped.to_string(), "[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]");
        let of_transpose = reshape(&transpose(&counting(&[2, 3])), &[6]).unwrap();
        assert_eq!(of_transpose.to_vec(), [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
        assert_eq!(reshape(&Tensor::scalar(1.0), &[1, 1]).unwrap().shape(), [1, 1]);
        assert_eq!(
            reshape(&counting(&[2, 3]), &[4]).unwrap_err().to_string(),
            "cannot reshape Tensor[2][3] (6 elements) to Tensor[4] (4 elements)"
        );
        assert!(reshape(&counting(&[0]), &[usize::MAX, 2]).is_err());
    }

    #[test]
    fn transposes_permute_axes() {
        let cube = counting(&[2, 3, 4]);
        assert_eq!(transpose(&cube).shape(), [4, 3, 2]);
        assert_eq!(transpose(&counting(&[2, 2])).to_vec(), [0.0, 2.0, 1.0, 3.0]);
        let permuted = permute(&cube, &[1, 0, 2]).unwrap();
        assert_eq!(permuted.shape(), [3, 2, 4]);
        assert_eq!(permuted.view()[[2, 1, 3].as_slice()], cube.view()[[1, 2, 3].as_slice()]);
        assert_eq!(permute(&cube, &[-1, 0, 1]).unwrap().shape(), [4, 2, 3]);
        assert_eq!(
            permute(&cube, &[0, 0, 1]).unwrap_err().to_string(),
            "[0, 0, 1] is not a permutation of the axes of a tensor of rank 3"
        );
        assert!(permute(&cube, &[0, 1]).is_err());
        assert!(permute(&cube, &[0, 1, 3]).is_err());
        assert_eq!(swap_axes(&cube, -1, -2).unwrap().shape(), [2, 4, 3]);
    }

    #[test]
    fn expand_dims_inserts_an_axis() {
        let matrix = counting(&[2, 3]);
        assert_eq!(expand_dims(&matrix, 0).unwrap().shape(), [1, 2, 3]);
        assert_eq!(expand_dims(&matrix, 2).unwrap().shape(), [2, 3, 1]);
        assert_eq!(expand_dims(&matrix, -1).unwrap().shape(), [2, 3, 1]);
        assert!(expand_dims(&matrix, 3).is_err());
    }

    #[test]
    fn concat_and_stack_join_tensors() {
        let a = counting(&[2, 2]);
        let b = tensor(&[1, 2], &[9.0, 9.0]);
        assert_eq!(concat(&a, &b, 0).unwrap().to_string(), "[[0.0, 1.0], [2.0, 3.0], [9.0, 9.0]]");
        assert_eq!(
            concat(&a, &transpose(&b), 1).unwrap().to_string(),
            "[[0.0, 1.0, 9.0], [2.0, 3.0, 9.0]]"
        );
        assert_eq!(
            concat(&a, &b, 1).unwrap_err().to_string(),
            "cannot concatenate Tensor[2][2] and Tensor[1][2] along axis 1"
        );
        assert!(concat(&Tensor::scalar(1.0), &Tensor::scalar(2.0), 0).is_err());
        let stacked = stack(&tensor(&[2], &[1.0, 2.0]), &tensor(&[2], &[3.0, 4.0])).unwrap();
        assert_eq!(stacked.to_string(), "[[1.0, 2.0], [3.0, 4.0]]");
        assert_eq!(stack(&Tensor::scalar(1.0), &Tensor::scalar(2.0)).unwrap().to_vec(), [1.0, 2.0]);
        assert_eq!(
            stack(&a, &b).unwrap_err().to_string(),
            "cannot stack Tensor[2][2] and Tensor[1][2]: shapes differ"
        );
    }

    #[test]
    fn diag_and_trace() {
        assert_eq!(
            diag(&tensor(&[2], &[1.0, 2.0])).unwrap().to_string(),
            "[[1.0, 0.0], [0.0, 2.0]]"
        );
        assert_eq!(diag(&counting(&[3, 3])).unwrap().to_vec(), [0.0, 4.0, 8.0]);
        assert_eq!(diag(&counting(&[2, 3])).unwrap().to_vec(), [0.0, 4.0]);
        assert_eq!(diag(&transpose(&counting(&[2, 3]))).unwrap().to_vec(), [0.0, 4.0]);
        assert_eq!(
            diag(&Tensor::scalar(1.0)).unwrap_err().to_string(),
            "diag needs a vector or a matrix, got Tensor[]"
        );
        assert_eq!(trace(&counting(&[3, 3])), Ok(12.0));
        assert_eq!(
            trace(&counting(&[3])).unwrap_err().to_string(),
            "trace needs a matrix, got Tensor[3]"
        );
    }

    #[test]
    fn all_and_any_test_for_non_zero() {
        assert!(all(&tensor(&[2], &[1.0, -2.0])));
        assert!(!all(&tensor(&[2], &[1.0, 0.0])));
        assert!(any(&tensor(&[2], &[0.0, f64::NAN])));
        assert!(!any(&tensor(&[2], &[0.0, -0.0])));
        assert!(all(&Tensor::zeros(&[0]).unwrap()));
        assert!(!any(&Tensor::zeros(&[0]).unwrap()));
    }
}
