//! Operations on untracked values: what every differentiable operation computes once no operand is
//! tracked at a live level, and the constants (masks, signs) that backward rules need.
//!
//! Values here are plain (`Int`, `Float`, `Bool`, `Char`, `Tensor`); callers strip boxes first.
//! This module knows nothing of the tape.

use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn, Zip};

use crate::autodiff::{AdError, AdErrorKind};
use crate::value::{Primal, Value};
use tensor::{self, BinaryOp, Index, ReduceOp, Tensor, TensorError, UnaryOp};

/// The tensor of an `Rc`, without copying its buffer when the `Rc` is not shared.
pub(crate) fn take_tensor(shared: Rc<Tensor>) -> Tensor {
    Rc::try_unwrap(shared).unwrap_or_else(|shared| (*shared).clone())
}

/// A plain number or tensor as a tensor (a number becomes rank 0).
pub(crate) fn into_tensor(value: Value, op: &'static str) -> Result<Tensor, AdError> {
    match value {
        Value::Tensor(shared) => Ok(take_tensor(shared)),
        other => match other.primal() {
            Primal::Tensor(tensor) => Ok(tensor.clone()),
            _ => match other.as_f64() {
                Some(x) => Ok(Tensor::scalar(x)),
                None => Err(operand(op, &other)),
            },
        },
    }
}

/// The error for an operand of the wrong type.
pub(crate) fn operand(op: &'static str, value: &Value) -> AdError {
    AdErrorKind::Operand { op, found: value.type_name() }.into()
}

/// Whether a plain value is an integer for arithmetic (`int`, `char`, `bool`, as in C).
pub(crate) fn is_integral(value: &Value) -> bool {
    matches!(value, Value::Int(_) | Value::Char(_) | Value::Bool(_))
}

fn integral(value: &Value) -> Option<i64> {
    match *value {
        Value::Int(x) => Some(x),
        Value::Char(x) => Some(i64::from(x)),
        Value::Bool(x) => Some(i64::from(x)),
        _ => None,
    }
}

pub(crate) fn unary(op: UnaryOp, x: Value) -> Result<Value, AdError> {
    match x {
        Value::Tensor(shared) => Ok(Value::tensor(tensor::unary(op, take_tensor(shared)))),
        Value::Int(n) if op == UnaryOp::Neg => n
            .checked_neg()
            .map(Value::Int)
            .ok_or_else(|| AdErrorKind::IntegerOverflow { op: "-" }.into()),
        other => match other.as_f64() {
            Some(x) => Ok(Value::Float(op.apply(x))),
            None => Err(operand(op.name(), &other)),
        },
    }
}

/// Two floats: arithmetic gives a float, comparisons a `bool`.
#[inline]
pub(crate) fn float_binary(op: BinaryOp, x: f64, y: f64) -> Value {
    match op {
        BinaryOp::Lt => Value::Bool(x < y),
        BinaryOp::Le => Value::Bool(x <= y),
        BinaryOp::Gt => Value::Bool(x > y),
        BinaryOp::Ge => Value::Bool(x >= y),
        BinaryOp::Eq => Value::Bool(x == y),
        BinaryOp::Ne => Value::Bool(x != y),
        _ => Value::Float(op.apply(x, y)),
    }
}

/// C's integer arithmetic, with overflow and division by zero as errors.
fn int_binary(op: BinaryOp, x: i64, y: i64) -> Result<Value, AdError> {
    let overflow = |op| AdError::from(AdErrorKind::IntegerOverflow { op });
    Ok(match op {
        BinaryOp::Add => Value::Int(x.checked_add(y).ok_or(overflow("+"))?),
        BinaryOp::Sub => Value::Int(x.checked_sub(y).ok_or(overflow("-"))?),
        BinaryOp::Mul => Value::Int(x.checked_mul(y).ok_or(overflow("*"))?),
        BinaryOp::Div | BinaryOp::Rem | BinaryOp::Mod if y == 0 => {
            return Err(AdErrorKind::DivisionByZero.into());
        }
        BinaryOp::Div => Value::Int(x.checked_div(y).ok_or(overflow("/"))?),
        BinaryOp::Rem => Value::Int(crate::interp::int_rem(x, y).ok_or(overflow("%"))?),
        // Integers beyond 2^53 round, as C's conversion does.
        BinaryOp::Pow => Value::Float((x as f64).powf(y as f64)),
        BinaryOp::Max => Value::Int(x.max(y)),
        BinaryOp::Min => Value::Int(x.min(y)),
        BinaryOp::Mod => {
            // Python's `%`: the remainder moves by one divisor when its sign differs from the
            // divisor's.
            let remainder = x.checked_rem(y).ok_or(overflow("mod"))?;
            match remainder != 0 && (remainder < 0) != (y < 0) {
                true => Value::Int(remainder + y),
                false => Value::Int(remainder),
            }
        }
        BinaryOp::Atan2 | BinaryOp::Hypot => Value::Float(op.apply(x as f64, y as f64)),
        BinaryOp::Lt => Value::Bool(x < y),
        BinaryOp::Le => Value::Bool(x <= y),
        BinaryOp::Gt => Value::Bool(x > y),
        BinaryOp::Ge => Value::Bool(x >= y),
        BinaryOp::Eq => Value::Bool(x == y),
        BinaryOp::Ne => Value::Bool(x != y),
    })
}

pub(crate) fn binary(op: BinaryOp, a: Value, b: Value) -> Result<Value, AdError> {
    if let (Some(x), Some(y)) = (integral(&a), integral(&b)) {
        return int_binary(op, x, y);
    }
    match (a, b) {
        (Value::Tensor(a), Value::Tensor(b)) => {
            Ok(Value::tensor(tensor::binary(op, take_tensor(a), take_tensor(b))?))
        }
        (Value::Tensor(a), b) => match b.as_f64() {
            Some(y) => Ok(Value::tensor(tensor::binary_scalar_rhs(op, take_tensor(a), y))),
            None => Err(operand(op.symbol(), &b)),
        },
        (a, Value::Tensor(b)) => match a.as_f64() {
            Some(x) => Ok(Value::tensor(tensor::binary_scalar_lhs(op, x, take_tensor(b)))),
            None => Err(operand(op.symbol(), &a)),
        },
        (a, b) => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => Ok(float_binary(op, x, y)),
            (None, _) => Err(operand(op.symbol(), &a)),
            (_, None) => Err(operand(op.symbol(), &b)),
        },
    }
}

/// `f` applied element-wise to the primals of two values with broadcasting: a float when both are
/// scalars, a tensor otherwise. Backward rules build their constant masks with it.
pub(crate) fn zip_primals(
    a: &Value,
    b: &Value,
    f: impl Fn(f64, f64) -> f64 + Sync,
) -> Result<Value, AdError> {
    match (a.primal(), b.primal()) {
        (Primal::Tensor(x), Primal::Tensor(y)) => {
            Ok(Value::tensor(tensor::zip_map(x.clone(), y.clone(), f)?))
        }
        (Primal::Tensor(x), _) => {
            let y = b.as_f64().ok_or_else(|| operand("mask", b))?;
            Ok(Value::tensor(x.clone().map(|x| f(x, y))))
        }
        (_, Primal::Tensor(y)) => {
            let x = a.as_f64().ok_or_else(|| operand("mask", a))?;
            Ok(Value::tensor(y.clone().map(|y| f(x, y))))
        }
        _ => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => Ok(Value::Float(f(x, y))),
            _ => Err(operand("mask", a)),
        },
    }
}

/// `f` applied element-wise to the primal of a value.
pub(crate) fn map_primal(value: &Value, f: impl Fn(f64) -> f64 + Sync) -> Result<Value, AdError> {
    match value.primal() {
        Primal::Tensor(tensor) => Ok(Value::tensor(tensor.clone().map(f))),
        _ => value.as_f64().map(|x| Value::Float(f(x))).ok_or_else(|| operand("mask", value)),
    }
}

/// `mask != 0 ? a : b` element-wise with broadcasting of all three; a float when all are scalars.
pub(crate) fn select(mask: &Value, a: Value, b: Value) -> Result<Value, AdError> {
    let scalars = [mask, &a, &b].iter().all(|value| !value.is_tensor());
    if scalars {
        let (m, x, y) = (mask.as_f64(), a.as_f64(), b.as_f64());
        return match (m, x, y) {
            (Some(m), Some(x), Some(y)) => Ok(Value::Float(if m != 0.0 { x } else { y })),
            _ => Err(operand("select", mask)),
        };
    }
    let mask = into_tensor(mask.clone(), "select")?;
    let a = into_tensor(a, "select")?;
    let b = into_tensor(b, "select")?;
    let shape = tensor::broadcast_shapes(mask.shape(), a.shape())?;
    let shape = tensor::broadcast_shapes(&shape, b.shape())?;
    tensor::check_allocation(&shape)?;
    let error = || TensorError::BroadcastTo { from: mask.shape().to_vec(), to: shape.clone() };
    let m = mask.array().broadcast(IxDyn(&shape)).ok_or_else(error)?;
    let x = a.array().broadcast(IxDyn(&shape)).ok_or_else(error)?;
    let y = b.array().broadcast(IxDyn(&shape)).ok_or_else(error)?;
    let result = Zip::from(m).and(x).and(y).map_collect(|&m, &x, &y| if m != 0.0 { x } else { y });
    Ok(Value::tensor(Tensor::from(result)))
}

pub(crate) fn reduce(op: ReduceOp, x: Value, axis: Option<i64>) -> Result<Value, AdError> {
    let tensor = into_tensor(x, op.name())?;
    match axis {
        None => Ok(Value::Float(tensor::reduce_all(op, &tensor)?)),
        Some(axis) => Ok(Value::tensor(tensor::reduce_axis(op, &tensor, axis)?)),
    }
}

/// For every element, the product of the other elements of its lane along `axis` (of all
/// elements when `axis` is `None`), computed from prefix and suffix products, so it is exact when
/// elements are zero.
pub(crate) fn prod_others(x: &Tensor, axis: Option<usize>) -> Result<Tensor, AdError> {
    match axis {
        None => {
            let mut flat: Vec<f64> = x.to_vec();
            exclusive_products(&mut flat);
            Ok(Tensor::from_vec(x.shape(), flat)?)
        }
        Some(axis) => {
            let mut result = x.array().to_owned();
            for mut lane in result.lanes_mut(Axis(axis)) {
                let mut values: Vec<f64> = lane.iter().copied().collect();
                exclusive_products(&mut values);
                lane.iter_mut().zip(values).for_each(|(slot, value)| *slot = value);
            }
            Ok(Tensor::from(result))
        }
    }
}

/// Replaces every entry by the product of all the others.
fn exclusive_products(values: &mut [f64]) {
    let mut prefix = Vec::with_capacity(values.len());
    let mut running = 1.0;
    for &value in values.iter() {
        prefix.push(running);
        running *= value;
    }
    let mut suffix = 1.0;
    for (slot, before) in values.iter_mut().zip(prefix).rev() {
        let value = *slot;
        *slot = before * suffix;
        suffix *= value;
    }
}

/// The gradient of [`prod_others`] given the cotangent `v`: for element `k`, the sum over `i != k`
/// of `v[i]` times the product of the lane's elements other than `i` and `k`, by the same prefix
/// and suffix recurrences extended with one cotangent term.
pub(crate) fn prod_others_backward(
    x: &Tensor,
    v: &Tensor,
    axis: Option<usize>,
) -> Result<Tensor, AdError> {
    match axis {
        None => {
            let v = tensor::broadcast_to(v, x.shape())?;
            let (xs, vs) = (x.to_vec(), v.to_vec());
            Ok(Tensor::from_vec(x.shape(), lane_second_products(&xs, &vs))?)
        }
        Some(axis) => {
            let mut result = x.array().to_owned();
            let v = v.array().broadcast(IxDyn(x.shape())).ok_or_else(|| {
                TensorError::BroadcastTo { from: v.shape().to_vec(), to: x.shape().to_vec() }
            })?;
            Zip::from(result.lanes_mut(Axis(axis))).and(v.lanes(Axis(axis))).for_each(
                |mut lane, cotangent| {
                    let xs: Vec<f64> = lane.iter().copied().collect();
                    let vs: Vec<f64> = cotangent.iter().copied().collect();
                    let products = lane_second_products(&xs, &vs);
                    lane.iter_mut().zip(products).for_each(|(slot, value)| *slot = value);
                },
            );
            Ok(Tensor::from(result))
        }
    }
}

/// `h[k] = sum_{i != k} v[i] prod_{j not in {i, k}} x[j]` in linear time: with `A` and `C` the
/// products before and after `k`, and `B` and `D` the sums of `v[i]` times the products before
/// (after) `k` without `i`, `h[k] = B C + A D`.
fn lane_second_products(x: &[f64], v: &[f64]) -> Vec<f64> {
    let n = x.len();
    let mut before = vec![(1.0, 0.0); n];
    let (mut a, mut b) = (1.0, 0.0);
    for k in 0..n {
        before[k] = (a, b);
        b = b * x[k] + v[k] * a;
        a *= x[k];
    }
    let mut result = vec![0.0; n];
    let (mut c, mut d) = (1.0, 0.0);
    for k in (0..n).rev() {
        let (a, b) = before[k];
        result[k] = b * c + a * d;
        d = d * x[k] + v[k] * c;
        c *= x[k];
    }
    result
}

/// The share of a `max`/`min` reduction's gradient each element gets: the elements equal to the
/// extreme split it equally (1/count each); when the extreme is NaN, the first NaN takes it all.
pub(crate) fn extreme_shares(
    x: &Tensor,
    axis: Option<usize>,
    largest: bool,
) -> Result<Tensor, AdError> {
    match axis {
        None => Ok(Tensor::from_vec(x.shape(), lane_shares(&x.to_vec(), largest))?),
        Some(axis) => {
            let mut result = ArrayD::<f64>::zeros(IxDyn(x.shape()));
            Zip::from(result.lanes_mut(Axis(axis))).and(x.array().lanes(Axis(axis))).for_each(
                |mut shares, lane| {
                    let values: Vec<f64> = lane.iter().copied().collect();
                    let computed = lane_shares(&values, largest);
                    shares.iter_mut().zip(computed).for_each(|(slot, share)| *slot = share);
                },
            );
            Ok(Tensor::from(result))
        }
    }
}

fn lane_shares(values: &[f64], largest: bool) -> Vec<f64> {
    if let Some(first_nan) = values.iter().position(|x| x.is_nan()) {
        let mut shares = vec![0.0; values.len()];
        shares[first_nan] = 1.0;
        return shares;
    }
    let best = values.iter().copied().fold(
        if largest { f64::NEG_INFINITY } else { f64::INFINITY },
        |best, x| {
            if (largest && x > best) || (!largest && x < best) { x } else { best }
        },
    );
    let count = values.iter().filter(|&&x| x == best).count().max(1);
    // Lane lengths convert to `f64` exactly.
    let share = 1.0 / count as f64;
    values.iter().map(|&x| if x == best { share } else { 0.0 }).collect()
}

/// The rectangular identity: ones on the main diagonal of an `m` by `n` matrix.
pub(crate) fn eye_rect(m: usize, n: usize) -> Result<Tensor, AdError> {
    tensor::check_allocation(&[m, n])?;
    let mut array = ArrayD::<f64>::zeros(IxDyn(&[m, n]));
    for i in 0..m.min(n) {
        array[[i, i].as_slice()] = 1.0;
    }
    Ok(Tensor::from(array))
}

/// The 0/1 mask of the lower triangle (diagonal included when `diagonal`) of an `n` by `n` matrix.
pub(crate) fn lower_mask(n: usize, diagonal: bool) -> Result<Tensor, AdError> {
    tensor::check_allocation(&[n, n])?;
    let array = ArrayD::from_shape_fn(IxDyn(&[n, n]), |index| {
        let (i, j) = (index[0], index[1]);
        if i > j || (diagonal && i == j) { 1.0 } else { 0.0 }
    });
    Ok(Tensor::from(array))
}

/// Items of one shape (numbers or tensors) stacked along a new first axis.
pub(crate) fn stack_many(items: &[Value]) -> Result<Tensor, AdError> {
    let first_shape = items.first().map_or(&[][..], Value::shape).to_vec();
    let mut shape = vec![items.len()];
    shape.extend_from_slice(&first_shape);
    tensor::check_allocation(&shape)?;
    let mut data = Vec::with_capacity(shape.iter().product());
    for item in items {
        match item.primal() {
            Primal::Tensor(tensor) if tensor.shape() == first_shape.as_slice() => {
                tensor.append_to(&mut data);
            }
            Primal::Tensor(tensor) => {
                return Err(AdError::from(TensorError::Stack {
                    lhs: first_shape.clone(),
                    rhs: tensor.shape().to_vec(),
                }));
            }
            _ if first_shape.is_empty() => {
                data.push(item.as_f64().ok_or_else(|| operand("a tensor literal", item))?);
            }
            _ => {
                return Err(AdError::from(TensorError::Stack {
                    lhs: first_shape.clone(),
                    rhs: Vec::new(),
                }));
            }
        }
    }
    Ok(Tensor::from_vec(&shape, data)?)
}

/// The region `index` selects, as a float when every axis is indexed by an integer.
pub(crate) fn get(x: &Tensor, index: &[Index]) -> Result<Value, AdError> {
    let region = tensor::get(x, index)?;
    let all_integers =
        index.len() == x.rank() && index.iter().all(|entry| matches!(entry, Index::At(_)));
    match all_integers {
        true => Ok(Value::Float(region.to_scalar()?)),
        false => Ok(Value::tensor(region)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_products_handle_zeros() {
        let mut values = [2.0, 0.0, 3.0, 4.0];
        exclusive_products(&mut values);
        assert_eq!(values, [0.0, 24.0, 0.0, 0.0]);
        let mut values = [2.0, 5.0];
        exclusive_products(&mut values);
        assert_eq!(values, [5.0, 2.0]);
    }

    #[test]
    fn second_products_match_the_definition() {
        let x = [2.0, 0.0, 3.0, -1.5];
        let v = [0.5, -1.0, 2.0, 0.25];
        let result = lane_second_products(&x, &v);
        for (k, &computed) in result.iter().enumerate() {
            let mut expected = 0.0;
            for (i, &weight) in v.iter().enumerate().filter(|&(i, _)| i != k) {
                let others = x.iter().enumerate().filter(|&(j, _)| j != i && j != k);
                expected += weight * others.map(|(_, x)| x).product::<f64>();
            }
            assert!((computed - expected).abs() < 1e-12, "{k}: {computed} {expected}");
        }
    }

    #[test]
    fn extreme_shares_split_ties() {
        let x = Tensor::from_vec(&[2, 3], vec![1.0, 3.0, 3.0, 5.0, 2.0, 1.0]).unwrap();
        let all = extreme_shares(&x, None, true).unwrap();
        assert_eq!(all.to_vec(), [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
        let rows = extreme_shares(&x, Some(1), true).unwrap();
        assert_eq!(rows.to_vec(), [0.0, 0.5, 0.5, 1.0, 0.0, 0.0]);
        let smallest = extreme_shares(&x, Some(0), false).unwrap();
        assert_eq!(smallest.to_vec(), [1.0, 0.0, 0.0, 0.0, 1.0, 1.0]);
        let nan = Tensor::vector(vec![1.0, f64::NAN, f64::NAN]);
        assert_eq!(extreme_shares(&nan, None, true).unwrap().to_vec(), [0.0, 1.0, 0.0]);
    }
}
