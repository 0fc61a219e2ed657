//! NumPy broadcasting: the shape two operands broadcast to, materialising a broadcast, and its
//! reverse (summing a gradient back to an operand's shape) for the autodiff tape.

use ndarray::{ArrayD, Axis, IxDyn};

use super::Tensor;
use super::allocation::check_allocation;
use super::error::TensorError;

/// The shape that `lhs` and `rhs` broadcast to under NumPy's rules: shapes are aligned at their
/// last axes, and each pair of extents must be equal or contain a 1.
pub fn broadcast_shapes(lhs: &[usize], rhs: &[usize]) -> Result<Vec<usize>, TensorError> {
    let rank = lhs.len().max(rhs.len());
    let mut shape = vec![0; rank];
    for (position, extent) in shape.iter_mut().enumerate() {
        // Axes missing on the shorter side count as extent 1.
        let lhs_extent = (position + lhs.len()).checked_sub(rank).map_or(1, |i| lhs[i]);
        let rhs_extent = (position + rhs.len()).checked_sub(rank).map_or(1, |i| rhs[i]);
        *extent = match (lhs_extent, rhs_extent) {
            (a, b) if a == b => a,
            (1, b) => b,
            (a, 1) => a,
            _ => return Err(TensorError::Broadcast { lhs: lhs.to_vec(), rhs: rhs.to_vec() }),
        };
    }
    Ok(shape)
}

/// A copy of `tensor` broadcast to `shape` (no copy when the shapes are already equal).
pub fn broadcast_to(tensor: &Tensor, shape: &[usize]) -> Result<Tensor, TensorError> {
    if tensor.shape() == shape {
        return Ok(tensor.clone());
    }
    let view = tensor.array().broadcast(IxDyn(shape)).ok_or_else(|| TensorError::BroadcastTo {
        from: tensor.shape().to_vec(),
        to: shape.to_vec(),
    })?;
    check_allocation(shape)?;
    Ok(Tensor::from(view.to_owned()))
}

/// Sums `tensor` over the axes that broadcasting `shape` to `tensor.shape()` created or
/// stretched, giving a tensor of `shape`: the gradient rule of every broadcasting operation.
pub fn sum_to_shape(tensor: &Tensor, shape: &[usize]) -> Result<Tensor, TensorError> {
    if tensor.shape() == shape {
        return Ok(tensor.clone());
    }
    let mismatch =
        || TensorError::BroadcastTo { from: shape.to_vec(), to: tensor.shape().to_vec() };
    let leading = tensor.rank().checked_sub(shape.len()).ok_or_else(mismatch)?;
    let mut axes: Vec<usize> = (0..leading).collect();
    for (position, (&target, &actual)) in shape.iter().zip(&tensor.shape()[leading..]).enumerate() {
        match (target, actual) {
            (a, b) if a == b => {}
            (1, _) => axes.push(leading + position),
            _ => return Err(mismatch()),
        }
    }
    // Summing the highest axis first keeps the lower axis numbers valid.
    let mut summed: Option<ArrayD<f64>> = None;
    for &axis in axes.iter().rev() {
        summed = Some(match summed {
            None => tensor.array().sum_axis(Axis(axis)),
            Some(array) => array.sum_axis(Axis(axis)),
        });
    }
    let array = summed.unwrap_or_else(|| tensor.array().to_owned());
    let array = array.into_shape_with_order(IxDyn(shape)).map_err(|_| mismatch())?;
    Ok(Tensor::from(array))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_broadcast_from_the_last_axis() {
        assert_eq!(broadcast_shapes(&[2, 3], &[3]), Ok(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[], &[2, 3]), Ok(vec![2, 3]));
        assert_eq!(broadcast_shapes(&[4, 1], &[1, 5]), Ok(vec![4, 5]));
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[7, 1]), Ok(vec![2, 7, 3]));
        assert_eq!(broadcast_shapes(&[0], &[1]), Ok(vec![0]));
        assert_eq!(
            broadcast_shapes(&[2, 3], &[2]).unwrap_err().to_string(),
            "shape mismatch: Tensor[2][3] and Tensor[2] cannot be broadcast together"
        );
    }

    #[test]
    fn broadcast_to_copies_rows() {
        let row = Tensor::vector(vec![1.0, 2.0]);
        assert_eq!(broadcast_to(&row, &[2, 2]).unwrap().to_vec(), [1.0, 2.0, 1.0, 2.0]);
        assert_eq!(
            broadcast_to(&row, &[3]).unwrap_err().to_string(),
            "shape mismatch: Tensor[2] cannot be broadcast to Tensor[3]"
        );
    }

    #[test]
    fn sum_to_shape_reverses_broadcasting() {
        let grid = Tensor::from_vec(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        assert_eq!(sum_to_shape(&grid, &[3]).unwrap().to_vec(), [5.0, 7.0, 9.0]);
        let column = sum_to_shape(&grid, &[2, 1]).unwrap();
        assert_eq!((column.shape(), column.to_vec()), (&[2, 1][..], vec![6.0, 15.0]));
        assert_eq!(sum_to_shape(&grid, &[]).unwrap().to_vec(), [21.0]);
        assert_eq!(sum_to_shape(&grid, &[1, 1]).unwrap().to_vec(), [21.0]);
        assert!(sum_to_shape(&grid, &[2]).is_err());
        assert!(sum_to_shape(&grid, &[1, 2, 3, 4]).is_err());
    }
}
