//! Reductions over all elements or along one axis, the stable `softmax`/`log_softmax`, and the
//! arg-max/arg-min helpers that route gradients of `max` and `min` to the chosen element.
//!
//! Axis arguments follow NumPy (see [`normalize_axis`]): `-1` is the last axis. Reducing an axis
//! removes it. `max` and `min` propagate NaN and are errors over no elements; `sum` of nothing is
//! 0, `prod` 1, `mean` NaN, `norm` 0 and `logsumexp` -inf.

use ndarray::{ArrayView, Axis, Dimension, Zip};

use super::Tensor;
use super::elementwise::{maximum, minimum};
use super::error::TensorError;
use super::shape::normalize_axis;
use super::vector_math::exp;

/// A reduction of many numbers to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    /// The Euclidean norm: the square root of the sum of squares.
    Norm,
    /// `ln(sum(exp(x)))`, computed by shifting by the maximum so nothing overflows.
    LogSumExp,
}

impl ReduceOp {
    /// The Nabla built-in's name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
            ReduceOp::Norm => "norm",
            ReduceOp::LogSumExp => "logsumexp",
        }
    }
}

/// Which end of the order a `max`/`min` routing helper selects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extreme {
    Max,
    Min,
}

impl Extreme {
    fn name(self) -> &'static str {
        match self {
            Extreme::Max => "argmax",
            Extreme::Min => "argmin",
        }
    }

    /// Whether `candidate` replaces `best`: strictly beyond it, or the first NaN, so that the
    /// choice is the first occurrence and agrees with the NaN-propagating `max`/`min`.
    fn prefers(self, candidate: f64, best: f64) -> bool {
        let beyond = match self {
            Extreme::Max => candidate > best,
            Extreme::Min => candidate < best,
        };
        beyond || (candidate.is_nan() && !best.is_nan())
    }

    /// The position of the first extreme element of `values`, or `None` when there are none.
    fn position<'a>(self, values: impl IntoIterator<Item = &'a f64>) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (position, &value) in values.into_iter().enumerate() {
            match best {
                Some((_, current)) if !self.prefers(value, current) => {}
                _ => best = Some((position, value)),
            }
        }
        best.map(|(position, _)| position)
    }
}

/// Reduces every element of `tensor` to one number.
pub fn reduce_all(op: ReduceOp, tensor: &Tensor) -> Result<f64, TensorError> {
    let view = tensor.view();
    if matches!(op, ReduceOp::Max | ReduceOp::Min) && view.is_empty() {
        return Err(TensorError::EmptyReduction {
            op: op.name(),
            shape: tensor.shape().to_vec(),
            axis: None,
        });
    }
    Ok(reduce_lane(op, view))
}

/// Reduces `tensor` along `axis`, removing that axis.
pub fn reduce_axis(op: ReduceOp, tensor: &Tensor, axis: i64) -> Result<Tensor, TensorError> {
    let axis = normalize_axis(axis, tensor.rank())?;
    let extent = tensor.shape()[axis];
    let array = tensor.array();
    let reduced = match op {
        ReduceOp::Max | ReduceOp::Min if extent == 0 => {
            return Err(TensorError::EmptyReduction {
                op: op.name(),
                shape: tensor.shape().to_vec(),
                axis: Some(axis),
            });
        }
        ReduceOp::Sum => array.sum_axis(Axis(axis)),
        // The extent converts to `f64` exactly for any tensor that fits in memory.
        ReduceOp::Mean => array.sum_axis(Axis(axis)).mapv_into(|sum| sum / extent as f64),
        ReduceOp::Prod => array.product_axis(Axis(axis)),
        ReduceOp::Max => array.fold_axis(Axis(axis), f64::NEG_INFINITY, |&acc, &x| maximum(acc, x)),
        ReduceOp::Min => array.fold_axis(Axis(axis), f64::INFINITY, |&acc, &x| minimum(acc, x)),
        ReduceOp::Norm | ReduceOp::LogSumExp => {
            array.map_axis(Axis(axis), |lane| reduce_lane(op, lane))
        }
    };
    Ok(Tensor::from(reduced))
}

/// `exp(x) / sum(exp(x))` along `axis`, shifted by each lane's maximum so nothing overflows.
pub fn softmax(tensor: &Tensor, axis: i64) -> Result<Tensor, TensorError> {
    let axis = normalize_axis(axis, tensor.rank())?;
    let mut array = tensor.array().to_owned();
    for mut lane in array.lanes_mut(Axis(axis)) {
        let shift = finite_or_zero(largest(lane.view()));
        lane.mapv_inplace(|x| exp(x - shift));
        let total = lane.sum();
        lane.mapv_inplace(|x| x / total);
    }
    Ok(Tensor::from(array))
}

/// `x - logsumexp(x)` along `axis`, the logarithm of [`softmax`] without its underflow.
pub fn log_softmax(tensor: &Tensor, axis: i64) -> Result<Tensor, TensorError> {
    let axis = normalize_axis(axis, tensor.rank())?;
    let mut array = tensor.array().to_owned();
    for mut lane in array.lanes_mut(Axis(axis)) {
        // Subtracting the shift and the log-sum separately, rather than their sum, keeps the
        // precision of `x - shift` (exact for the largest element).
        let shift = finite_or_zero(largest(lane.view()));
        let log_total = lane.fold(0.0, |acc, &x| acc + exp(x - shift)).ln();
        lane.mapv_inplace(|x| (x - shift) - log_total);
    }
    Ok(Tensor::from(array))
}

/// The row-major position of the first largest (or smallest) element; a NaN counts as the
/// extreme, like NumPy's `argmax`.
pub fn arg_extreme(which: Extreme, tensor: &Tensor) -> Result<usize, TensorError> {
    which.position(tensor.array().iter()).ok_or_else(|| TensorError::EmptyReduction {
        op: which.name(),
        shape: tensor.shape().to_vec(),
        axis: None,
    })
}

/// The position along `axis` of the first largest (or smallest) element of each lane, as floats,
/// with `axis` removed.
pub fn arg_extreme_axis(which: Extreme, tensor: &Tensor, axis: i64) -> Result<Tensor, TensorError> {
    let axis = normalize_axis(axis, tensor.rank())?;
    if tensor.shape()[axis] == 0 {
        return Err(TensorError::EmptyReduction {
            op: which.name(),
            shape: tensor.shape().to_vec(),
            axis: Some(axis),
        });
    }
    let positions = tensor.array().map_axis(Axis(axis), |lane| {
        // Positions are below the extent, which converts to `f64` exactly.
        which.position(lane.iter()).map_or(f64::NAN, |position| position as f64)
    });
    Ok(Tensor::from(positions))
}

/// A 0.0/1.0 tensor of `tensor`'s shape marking the element that `max` (or `min`) selects: over
/// all elements when `axis` is `None`, otherwise in each lane along `axis`. The gradient of
/// `max`/`min` flows only to the marked elements.
pub fn extreme_mask(
    which: Extreme,
    tensor: &Tensor,
    axis: Option<i64>,
) -> Result<Tensor, TensorError> {
    let mut mask = Tensor::zeros(tensor.shape())?.into_array();
    match axis {
        None => {
            let chosen = arg_extreme(which, tensor)?;
            if let Some(slot) = mask.iter_mut().nth(chosen) {
                *slot = 1.0;
            }
        }
        Some(axis) => {
            let axis = normalize_axis(axis, tensor.rank())?;
            Zip::from(tensor.array().lanes(Axis(axis))).and(mask.lanes_mut(Axis(axis))).for_each(
                |lane, mut marks| {
                    if let Some(slot) = which.position(lane.iter()).and_then(|i| marks.get_mut(i)) {
                        *slot = 1.0;
                    }
                },
            );
        }
    }
    Ok(Tensor::from(mask))
}

/// Whether each element is non-zero (NaN is), counted over all elements (`axis` is `None`) or
/// along one axis, as floats: NumPy's `count_nonzero`.
pub fn count_nonzero(tensor: &Tensor, axis: Option<usize>) -> Result<Tensor, TensorError> {
    let nonzero = |x: &f64| f64::from(u8::from(*x != 0.0));
    match axis {
        None => Ok(Tensor::scalar(tensor.array().iter().map(nonzero).sum())),
        Some(axis) if axis < tensor.rank() => Ok(Tensor::from(
            tensor.array().map_axis(Axis(axis), |lane| lane.iter().map(nonzero).sum()),
        )),
        Some(axis) => Err(TensorError::Axis { axis: axis as i64, rank: tensor.rank() }),
    }
}

/// `all` (`every` set) or `any` along `axis`, as a mask of 0.0 and 1.0: every lane is all
/// non-zero, or has a non-zero; `all` of no elements is true and `any` false, as in NumPy.
pub fn truth_axis(tensor: &Tensor, axis: usize, every: bool) -> Result<Tensor, TensorError> {
    if axis >= tensor.rank() {
        return Err(TensorError::Axis { axis: axis as i64, rank: tensor.rank() });
    }
    Ok(Tensor::from(tensor.array().map_axis(Axis(axis), |lane| {
        let truth = match every {
            true => lane.iter().all(|&x| x != 0.0),
            false => lane.iter().any(|&x| x != 0.0),
        };
        f64::from(u8::from(truth))
    })))
}

fn reduce_lane<D: Dimension>(op: ReduceOp, values: ArrayView<'_, f64, D>) -> f64 {
    match op {
        ReduceOp::Sum => values.sum(),
        // The length converts to `f64` exactly for any tensor that fits in memory.
        ReduceOp::Mean => values.sum() / values.len() as f64,
        ReduceOp::Max => largest(values),
        ReduceOp::Min => values.fold(f64::INFINITY, |acc, &x| minimum(acc, x)),
        ReduceOp::Prod => values.product(),
        ReduceOp::Norm => values.fold(0.0, |acc, &x| acc + x * x).sqrt(),
        ReduceOp::LogSumExp => log_sum_exp(values),
    }
}

/// The largest element, NaN if any is NaN, -inf when empty.
fn largest<D: Dimension>(values: ArrayView<'_, f64, D>) -> f64 {
    values.fold(f64::NEG_INFINITY, |acc, &x| maximum(acc, x))
}

fn finite_or_zero(x: f64) -> f64 {
    if x.is_finite() { x } else { 0.0 }
}

fn log_sum_exp<D: Dimension>(values: ArrayView<'_, f64, D>) -> f64 {
    let top = largest(values.view());
    // With an infinite or NaN maximum the shifted sum is meaningless; the maximum itself is the
    // answer (-inf for no elements or all -inf, inf, or NaN).
    if !top.is_finite() {
        return top;
    }
    top + values.fold(0.0, |acc, &x| acc + exp(x - top)).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_truths_along_axes_match_numpy() {
        // Computed once with NumPy 2.4: np.count_nonzero, np.all and np.any.
        let x = Tensor::from_vec(&[2, 3], vec![0.0, 1.0, f64::NAN, 0.0, 0.0, -2.0]).unwrap();
        assert_eq!(count_nonzero(&x, None).unwrap().to_vec(), [3.0]);
        assert_eq!(count_nonzero(&x, Some(0)).unwrap().to_vec(), [0.0, 1.0, 2.0]);
        assert_eq!(count_nonzero(&x, Some(1)).unwrap().to_vec(), [2.0, 1.0]);
        assert_eq!(truth_axis(&x, 0, true).unwrap().to_vec(), [0.0, 0.0, 1.0]);
        assert_eq!(truth_axis(&x, 1, false).unwrap().to_vec(), [1.0, 1.0]);
        let empty = Tensor::zeros(&[0, 2]).unwrap();
        assert_eq!(truth_axis(&empty, 0, true).unwrap().to_vec(), [1.0, 1.0]);
        assert_eq!(truth_axis(&empty, 0, false).unwrap().to_vec(), [0.0, 0.0]);
        assert_eq!(count_nonzero(&empty, Some(1)).unwrap().shape(), [0]);
        assert!(truth_axis(&x, 2, true).is_err());
    }

    fn counting(shape: &[usize]) -> Tensor {
        let len = shape.iter().product::<usize>();
        Tensor::from_vec(shape, (1..=len).map(|i| i as f64).collect()).unwrap()
    }

    #[test]
    fn full_reductions() {
        let x = counting(&[2, 3]);
        let cases = [
            (ReduceOp::Sum, 21.0),
            (ReduceOp::Mean, 3.5),
            (ReduceOp::Max, 6.0),
            (ReduceOp::Min, 1.0),
            (ReduceOp::Prod, 720.0),
            (ReduceOp::Norm, 91f64.sqrt()),
            (ReduceOp::LogSumExp, 6.0 + (1..=6).map(|i| exp(f64::from(i) - 6.0)).sum::<f64>().ln()),
        ];
        for (op, expected) in cases {
            assert_eq!(reduce_all(op, &x), Ok(expected), "{op:?}");
        }
        assert_eq!(reduce_all(ReduceOp::Sum, &Tensor::scalar(2.0)), Ok(2.0));
    }

    #[test]
    fn reductions_along_an_axis_remove_it() {
        let x = counting(&[2, 3]);
        let along = |op, axis| reduce_axis(op, &x, axis).unwrap().to_string();
        assert_eq!(along(ReduceOp::Sum, 0), "[5.0, 7.0, 9.0]");
        assert_eq!(along(ReduceOp::Sum, 1), "[6.0, 15.0]");
        assert_eq!(along(ReduceOp::Sum, -1), "[6.0, 15.0]");
        assert_eq!(along(ReduceOp::Mean, 0), "[2.5, 3.5, 4.5]");
        assert_eq!(along(ReduceOp::Max, 1), "[3.0, 6.0]");
        assert_eq!(along(ReduceOp::Min, 0), "[1.0, 2.0, 3.0]");
        assert_eq!(along(ReduceOp::Prod, 1), "[6.0, 120.0]");
        assert_eq!(
            along(ReduceOp::Norm, 0),
            format!("[{}, {}, {}]", 17f64.sqrt(), 29f64.sqrt(), 45f64.sqrt())
        );
        let vector = reduce_axis(ReduceOp::Sum, &counting(&[3]), 0).unwrap();
        assert_eq!((vector.rank(), vector.to_scalar()), (0, Ok(6.0)));
        assert_eq!(
            reduce_axis(ReduceOp::Sum, &x, 2).unwrap_err().to_string(),
            "axis 2 is out of range for a tensor of rank 2"
        );
    }

    #[test]
    fn empty_reductions() {
        let empty = Tensor::zeros(&[0]).unwrap();
        assert_eq!(reduce_all(ReduceOp::Sum, &empty), Ok(0.0));
        assert_eq!(reduce_all(ReduceOp::Prod, &empty), Ok(1.0));
        assert!(reduce_all(ReduceOp::Mean, &empty).unwrap().is_nan());
        assert_eq!(reduce_all(ReduceOp::LogSumExp, &empty), Ok(f64::NEG_INFINITY));
        assert_eq!(
            reduce_all(ReduceOp::Max, &empty).unwrap_err().to_string(),
            "max of Tensor[0] is undefined: it has no elements"
        );
        let rows = Tensor::zeros(&[2, 0]).unwrap();
        assert_eq!(
            reduce_axis(ReduceOp::Min, &rows, 1).unwrap_err().to_string(),
            "min along axis 1 of Tensor[2][0] is undefined: the axis is empty"
        );
        assert_eq!(reduce_axis(ReduceOp::Max, &rows, 0).unwrap().shape(), [0]);
        assert_eq!(reduce_axis(ReduceOp::Sum, &rows, 1).unwrap().to_vec(), [0.0, 0.0]);
        assert_eq!(reduce_axis(ReduceOp::Prod, &rows, 1).unwrap().to_vec(), [1.0, 1.0]);
        assert_eq!(reduce_axis(ReduceOp::Norm, &rows, 1).unwrap().to_vec(), [0.0, 0.0]);
        let sums = reduce_axis(ReduceOp::LogSumExp, &rows, 1).unwrap().to_vec();
        assert_eq!(sums, [f64::NEG_INFINITY, f64::NEG_INFINITY]);
        assert!(reduce_axis(ReduceOp::Mean, &rows, 1).unwrap().to_vec().iter().all(|x| x.is_nan()));
        assert_eq!(softmax(&rows, 1).unwrap().shape(), [2, 0]);
    }

    #[test]
    fn max_and_min_propagate_nan() {
        let x = Tensor::vector(vec![1.0, f64::NAN, 3.0]);
        assert!(reduce_all(ReduceOp::Max, &x).unwrap().is_nan());
        assert!(reduce_all(ReduceOp::Min, &x).unwrap().is_nan());
        assert_eq!(arg_extreme(Extreme::Max, &x), Ok(1));
    }

    #[test]
    fn logsumexp_is_stable() {
        let big = Tensor::vector(vec![1000.0, 1000.0]);
        assert_eq!(reduce_all(ReduceOp::LogSumExp, &big), Ok(1000.0 + 2f64.ln()));
        let tiny = Tensor::vector(vec![-1000.0, -1000.0]);
        assert_eq!(reduce_all(ReduceOp::LogSumExp, &tiny), Ok(-1000.0 + 2f64.ln()));
        let infinite = Tensor::vector(vec![f64::NEG_INFINITY, f64::NEG_INFINITY]);
        assert_eq!(reduce_all(ReduceOp::LogSumExp, &infinite), Ok(f64::NEG_INFINITY));
        let rows = Tensor::from_vec(&[2, 2], vec![1000.0, 1000.0, 0.0, 0.0]).unwrap();
        assert_eq!(
            reduce_axis(ReduceOp::LogSumExp, &rows, 1).unwrap().to_vec(),
            [1000.0 + 2f64.ln(), 2f64.ln()]
        );
    }

    #[test]
    fn softmax_is_stable_and_sums_to_one() {
        let x = Tensor::from_vec(&[2, 2], vec![1000.0, 1000.0, 0.0, 2f64.ln()]).unwrap();
        let rows = softmax(&x, -1).unwrap();
        assert_eq!(rows.to_vec(), [0.5, 0.5, 1.0 / 3.0, 2.0 / 3.0]);
        let columns = softmax(&x, 0).unwrap();
        assert_eq!(columns.to_vec(), [1.0, 1.0, 0.0, 0.0]);
        let logs = log_softmax(&Tensor::vector(vec![1000.0, 1000.0]), 0).unwrap();
        assert_eq!(logs.to_vec(), [-(2f64.ln()), -(2f64.ln())]);
        let far = log_softmax(&Tensor::vector(vec![0.0, -2000.0]), 0).unwrap();
        assert_eq!(far.to_vec(), [0.0, -2000.0]);
        assert!(softmax(&Tensor::scalar(1.0), 0).is_err());
    }

    #[test]
    fn argmax_helpers_pick_the_first_extreme() {
        let x = Tensor::from_vec(&[2, 3], vec![1.0, 5.0, 5.0, 7.0, 0.0, 0.0]).unwrap();
        assert_eq!(arg_extreme(Extreme::Max, &x), Ok(3));
        assert_eq!(arg_extreme(Extreme::Min, &x), Ok(4));
        assert_eq!(arg_extreme_axis(Extreme::Max, &x, 1).unwrap().to_vec(), [1.0, 0.0]);
        assert_eq!(arg_extreme_axis(Extreme::Min, &x, 0).unwrap().to_vec(), [0.0, 1.0, 1.0]);
        assert_eq!(
            arg_extreme(Extreme::Max, &Tensor::zeros(&[0]).unwrap()).unwrap_err().to_string(),
            "argmax of Tensor[0] is undefined: it has no elements"
        );
        assert_eq!(
            extreme_mask(Extreme::Max, &x, None).unwrap().to_vec(),
            [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
        );
        assert_eq!(
            extreme_mask(Extreme::Max, &x, Some(1)).unwrap().to_vec(),
            [0.0, 1.0, 0.0, 1.0, 0.0, 0.0]
        );
        assert_eq!(
            extreme_mask(Extreme::Min, &x, Some(0)).unwrap().to_vec(),
            [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
        );
        // The mask of a transposed tensor marks positions in the transposed logical order.
        let transposed = super::super::shape::transpose(&x);
        assert_eq!(
            extreme_mask(Extreme::Max, &transposed, None).unwrap().to_vec(),
            [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]
        );
    }
}
