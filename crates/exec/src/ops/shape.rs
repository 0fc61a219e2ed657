//! Shape operations and construction on values: conversions between `float` and rank-0 tensors,
//! `reshape`, `transpose` (both forms), inserted axes, `concat`, `stack`, tensor literals built
//! from scalars, `diag` (both directions), `trace`, `full`, and broadcasting and its reverse.

use crate::autodiff::{AdError, Kind, Lifted, LiftedVec, Op, Tape};
use crate::ops::elementwise::tracked;
use crate::ops::plain;
use crate::value::{Primal, Value};
use tensor::{self, Tensor};

/// A float (or integer) as a rank-0 tensor; a tensor unchanged. This is Nabla's implicit
/// conversion where a tensor is expected.
pub fn to_tensor(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    as_tensor(t, x, "a tensor conversion")
}

/// [`to_tensor`] naming the operation that needed the tensor in its error.
pub(crate) fn as_tensor(t: &mut Tape, x: Value, op: &'static str) -> Result<Value, AdError> {
    match x.primal() {
        Primal::Tensor(_) => Ok(x),
        Primal::Float(_) => match t.lift([x]) {
            Lifted::Plain([x]) => Ok(Value::tensor(plain::into_tensor(x, op)?)),
            Lifted::Tracked { level, inner: [x], args: [arg] } => {
                let out = as_tensor(t, x, op)?;
                t.push(level, Op::ToTensor { x: tracked(arg)? }, out)
            }
        },
        _ => match x.as_f64() {
            Some(value) => Ok(Value::tensor(Tensor::scalar(value))),
            None => Err(plain::operand(op, &x)),
        },
    }
}

/// A tensor with exactly one element (any rank) as a float; a float unchanged.
pub fn to_float(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    match x.primal() {
        Primal::Tensor(_) => match t.lift([x]) {
            Lifted::Plain([x]) => {
                Ok(Value::Float(plain::into_tensor(x, "a float conversion")?.to_scalar()?))
            }
            Lifted::Tracked { level, inner: [x], args: [arg] } => {
                let kind = Kind::of(&x);
                let out = to_float(t, x)?;
                t.push(level, Op::ToFloat { x: tracked(arg)?, kind }, out)
            }
        },
        Primal::Float(_) => Ok(x),
        _ => x.as_f64().map(Value::Float).ok_or_else(|| plain::operand("a float conversion", &x)),
    }
}

/// The same elements in row-major order laid out in `shape`.
pub fn reshape(t: &mut Tape, x: Value, shape: &[usize]) -> Result<Value, AdError> {
    let x = as_tensor(t, x, "reshape")?;
    if x.shape() == shape {
        return Ok(x);
    }
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let x = plain::into_tensor(x, "reshape")?;
            Ok(Value::tensor(tensor::reshape(&x, shape)?))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let kind = Kind::of(&x);
            let out = reshape(t, x, shape)?;
            t.push(level, Op::Reshape { x: tracked(arg)?, kind }, out)
        }
    }
}

/// A new axis of extent 1 before `axis` (NumPy's `expand_dims`).
pub fn expand_dims(t: &mut Tape, x: Value, axis: i64) -> Result<Value, AdError> {
    let x = as_tensor(t, x, "expand_dims")?;
    let rank = x.shape().len();
    let position = tensor::normalize_axis(axis, rank + 1)
        .map_err(|_| tensor::TensorError::Axis { axis, rank })?;
    let mut shape = x.shape().to_vec();
    shape.insert(position, 1);
    reshape(t, x, &shape)
}

/// The tensor with its axes reversed (the matrix transpose for rank 2).
pub fn transpose(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    let x = as_tensor(t, x, "transpose")?;
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            Ok(Value::tensor(tensor::transpose(&plain::into_tensor(x, "transpose")?)))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let out = transpose(t, x)?;
            t.push(level, Op::Transpose { x: tracked(arg)? }, out)
        }
    }
}

/// `transpose(t, axes)`: axis `i` of the result is axis `axes[i]` of `x`; negative entries count
/// from the end.
pub fn permute(t: &mut Tape, x: Value, axes: &[i64]) -> Result<Value, AdError> {
    let x = as_tensor(t, x, "transpose")?;
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            Ok(Value::tensor(tensor::permute(&plain::into_tensor(x, "transpose")?, axes)?))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let rank = x.shape().len();
            let resolved = axes
                .iter()
                .map(|&axis| tensor::normalize_axis(axis, rank))
                .collect::<Result<Box<[usize]>, _>>()?;
            let out = permute(t, x, axes)?;
            t.push(level, Op::Permute { x: tracked(arg)?, axes: resolved }, out)
        }
    }
}

/// The last two axes exchanged (the batched matrix transpose); rank 0 and 1 are unchanged.
pub(crate) fn swap_last_two(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    let rank = x.shape().len();
    if rank < 2 {
        return Ok(x);
    }
    if rank == 2 {
        return transpose(t, x);
    }
    let mut axes: Vec<i64> = (0..rank as i64).collect();
    axes.swap(rank - 2, rank - 1);
    permute(t, x, &axes)
}

/// `concat(a, b, axis)`.
pub fn concat(t: &mut Tape, a: Value, b: Value, axis: i64) -> Result<Value, AdError> {
    let a = as_tensor(t, a, "concat")?;
    let b = as_tensor(t, b, "concat")?;
    match t.lift([a, b]) {
        Lifted::Plain([a, b]) => {
            let (a, b) = (plain::into_tensor(a, "concat")?, plain::into_tensor(b, "concat")?);
            Ok(Value::tensor(tensor::concat(&a, &b, axis)?))
        }
        Lifted::Tracked { level, inner: [a, b], args: [lhs, rhs] } => {
            let resolved = tensor::normalize_axis(axis, a.shape().len())?;
            let split = a.shape().get(resolved).copied().unwrap_or(0) as u32;
            let out = concat(t, a, b, axis)?;
            t.push(level, Op::Concat { lhs, rhs, axis: resolved as u32, split }, out)
        }
    }
}

/// `stack(a, b)`: two values of one shape along a new first axis.
pub fn stack(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    stack_many(t, vec![a, b])
}

/// Any number of values of one shape (floats, or tensors) along a new first axis.
pub fn stack_many(t: &mut Tape, items: Vec<Value>) -> Result<Value, AdError> {
    match t.lift_vec(items) {
        LiftedVec::Plain(items) => Ok(Value::tensor(plain::stack_many(&items)?)),
        LiftedVec::Tracked { level, inner, args } => {
            let kinds = inner.iter().map(Kind::of).collect();
            let out = stack_many(t, inner)?;
            t.push(level, Op::Stack { items: args.into_boxed_slice(), kinds }, out)
        }
    }
}

/// A tensor literal: scalars (floats, integers, tracked floats) laid out row-major in `shape`.
pub fn from_elements(t: &mut Tape, shape: &[usize], items: Vec<Value>) -> Result<Value, AdError> {
    if items.iter().all(|item| !item.is_tracked()) {
        let values = items
            .iter()
            .map(|item| match item {
                Value::Tensor(_) => None,
                other => other.as_f64(),
            })
            .collect::<Option<Vec<f64>>>();
        if let Some(values) = values {
            tensor::check_allocation(shape)?;
            return Ok(Value::tensor(Tensor::from_vec(shape, values)?));
        }
    }
    let stacked = stack_many(t, items)?;
    reshape(t, stacked, shape)
}

/// For a vector, the square matrix with it on the diagonal; for a matrix, its main diagonal.
pub fn diag(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    let x = as_tensor(t, x, "diag")?;
    match t.lift([x]) {
        Lifted::Plain([x]) => Ok(Value::tensor(tensor::diag(&plain::into_tensor(x, "diag")?)?)),
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let kind = Kind::of(&x);
            let out = diag(t, x)?;
            t.push(level, Op::Diag { x: tracked(arg)?, kind }, out)
        }
    }
}

/// The sum of a matrix's main diagonal, a float.
pub fn trace(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    let x = as_tensor(t, x, "trace")?;
    match t.lift([x]) {
        Lifted::Plain([x]) => Ok(Value::Float(tensor::trace(&plain::into_tensor(x, "trace")?)?)),
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let kind = Kind::of(&x);
            let out = trace(t, x)?;
            t.push(level, Op::Trace { x: tracked(arg)?, kind }, out)
        }
    }
}

/// `x` broadcast to `shape` (a float counts as rank 0).
pub fn broadcast_to(t: &mut Tape, x: Value, shape: &[usize]) -> Result<Value, AdError> {
    if x.is_tensor() && x.shape() == shape {
        return Ok(x);
    }
    let x = as_tensor(t, x, "broadcast")?;
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let x = plain::into_tensor(x, "broadcast")?;
            Ok(Value::tensor(tensor::broadcast_to(&x, shape)?))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let kind = Kind::of(&x);
            let out = broadcast_to(t, x, shape)?;
            t.push(level, Op::BroadcastTo { x: tracked(arg)?, kind }, out)
        }
    }
}

/// The tensor `x` summed down to `shape`, which must broadcast to `x`'s shape: the reverse of
/// broadcasting, which gradients of broadcasting operations need.
pub fn sum_to_shape(t: &mut Tape, x: Value, shape: &[usize]) -> Result<Value, AdError> {
    if x.shape() == shape {
        return Ok(x);
    }
    let x = as_tensor(t, x, "sum_to_shape")?;
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let x = plain::into_tensor(x, "sum_to_shape")?;
            Ok(Value::tensor(tensor::sum_to_shape(&x, shape)?))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let kind = Kind::of(&x);
            let out = sum_to_shape(t, x, shape)?;
            t.push(level, Op::SumToShape { x: tracked(arg)?, kind }, out)
        }
    }
}

/// `full(shape, value)`: a tensor of `shape` whose every element is `value`.
pub fn full(t: &mut Tape, shape: &[usize], value: Value) -> Result<Value, AdError> {
    let value = to_float(t, value)?;
    let value = to_tensor(t, value)?;
    broadcast_to(t, value, shape)
}
