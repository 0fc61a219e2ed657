//! Reductions on values (`sum mean max min prod norm logsumexp`, over everything or one axis) and
//! `softmax`/`log_softmax` along an axis.

use crate::autodiff::{AdError, Lifted, Op, Tape};
use crate::ops::elementwise::tracked;
use crate::ops::{plain, shape};
use crate::value::Value;
use tensor::{self, ReduceOp};

/// `op(x)` over all elements (a float) or along `axis` (a tensor without that axis). A float
/// operand counts as a rank-0 tensor.
pub fn reduce(t: &mut Tape, op: ReduceOp, x: Value, axis: Option<i64>) -> Result<Value, AdError> {
    let x = shape::as_tensor(t, x, op.name())?;
    match t.lift([x]) {
        Lifted::Plain([x]) => plain::reduce(op, x, axis),
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let resolved = match axis {
                None => None,
                Some(axis) => Some(tensor::normalize_axis(axis, x.shape().len())? as u32),
            };
            let out = reduce(t, op, x.clone(), axis)?;
            let (input, output) = (x, out.clone());
            t.push(level, Op::Reduce { op, x: tracked(arg)?, axis: resolved, input, output }, out)
        }
    }
}

/// The running sums of every lane of the tensor `x` along `axis` (a resolved axis), from the
/// end of each lane when `reverse`: linear, its gradient is the running sum of the gradient the
/// other way.
pub fn cumsum(t: &mut Tape, x: Value, axis: usize, reverse: bool) -> Result<Value, AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let x = plain::into_tensor(x, "cumsum")?;
            Ok(Value::tensor(tensor::scan(tensor::ScanOp::Sum, &x, axis, reverse)?))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let out = cumsum(t, x, axis, reverse)?;
            t.push(level, Op::Cumsum { x: tracked(arg)?, axis: axis as u32, reverse }, out)
        }
    }
}

/// `exp(x) / sum(exp(x))` along `axis`, shifted so nothing overflows.
pub fn softmax(t: &mut Tape, x: Value, axis: i64) -> Result<Value, AdError> {
    softmax_like(t, x, axis, false)
}

/// `x - logsumexp(x)` along `axis`.
pub fn log_softmax(t: &mut Tape, x: Value, axis: i64) -> Result<Value, AdError> {
    softmax_like(t, x, axis, true)
}

fn softmax_like(t: &mut Tape, x: Value, axis: i64, log: bool) -> Result<Value, AdError> {
    let name = if log { "log_softmax" } else { "softmax" };
    let x = shape::as_tensor(t, x, name)?;
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let x = plain::into_tensor(x, name)?;
            let out = if log { tensor::log_softmax(&x, axis)? } else { tensor::softmax(&x, axis)? };
            Ok(Value::tensor(out))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let axis_slot = tensor::normalize_axis(axis, x.shape().len())? as u32;
            let out = softmax_like(t, x, axis, log)?;
            let (x, output) = (tracked(arg)?, out.clone());
            let op = match log {
                true => Op::LogSoftmax { x, axis: axis_slot, output },
                false => Op::Softmax { x, axis: axis_slot, output },
            };
            t.push(level, op, out)
        }
    }
}

/// For every element of the tensor `x`, the product of the other elements of its lane along
/// `axis` (or of all elements): the gradient of `prod` that stays exact when elements are zero.
pub(crate) fn prod_others(t: &mut Tape, x: Value, axis: Option<usize>) -> Result<Value, AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let x = plain::into_tensor(x, "prod")?;
            Ok(Value::tensor(plain::prod_others(&x, axis)?))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let out = prod_others(t, x.clone(), axis)?;
            let axis = axis.map(|axis| axis as u32);
            t.push(level, Op::ProdOthers { x: tracked(arg)?, axis, input: x }, out)
        }
    }
}

/// For every element `k` of a lane of `x` (along `axis`, or all elements), the sum over the other
/// elements `i` of `v[i]` times the product of the elements other than `i` and `k`. It is linear
/// in `v`, which may be tracked; `x` is taken as a constant.
pub(crate) fn prod_pairs(
    t: &mut Tape,
    x: &Value,
    v: Value,
    axis: Option<usize>,
) -> Result<Value, AdError> {
    let x = x.detach();
    match t.lift([v]) {
        Lifted::Plain([v]) => {
            let elements = plain::into_tensor(x, "prod")?;
            let cotangent = plain::into_tensor(v, "prod")?;
            Ok(Value::tensor(plain::prod_others_backward(&elements, &cotangent, axis)?))
        }
        Lifted::Tracked { level, inner: [v], args: [arg] } => {
            let out = prod_pairs(t, &x, v, axis)?;
            let axis = axis.map(|axis| axis as u32);
            t.push(level, Op::ProdPairs { v: tracked(arg)?, axis, input: x }, out)
        }
    }
}
