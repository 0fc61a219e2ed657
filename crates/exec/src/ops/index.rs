//! Indexing on values: reads (`a[i]`, `a[i:j]`, a gather) and indexed assignment and update
//! (`a[i][j] = v`, `a[i] += row`, a scatter), all differentiable.
//!
//! An indexed assignment produces a new tensor value (reusing the target's buffer when nothing
//! else shares it), so assignment never cuts the graph: the overwritten region's old elements get
//! zero gradient and the rest of the target's gradient flows through.
//!
//! Indexing by index tensors (NumPy's advanced indexing, `E[ids]`, `p[arange(k), y]`) is a
//! [`gather`] through a `tensor::Gather` map, and its writes are a [`scatter_add`] through the
//! same map: `+=` adds every written element (duplicate indices accumulate, as `index_add`), `=`
//! keeps the last of duplicates (as NumPy) and selects between the scattered values and the old
//! target, so the overwritten elements of the old value get no gradient. The two records are
//! each other's rule, so both differentiate to any order; built-ins that rearrange elements
//! (`take_along_axis`, `sort`, `flip`...) record the same pair with their own maps. A write
//! through a map where nothing is tracked goes into the target's buffer in place
//! (`Gather::write_into`), at the cost of the elements written; a recorded one still makes a
//! pass over the target.

use std::rc::Rc;

use crate::autodiff::{AdError, Kind, Lifted, Op, Tape};
use crate::ops::elementwise::{binary, select, tracked};
use crate::ops::plain;
use crate::ops::shape::broadcast_to;
use crate::value::Value;
use tensor::{self, BinaryOp, Gather, Index};

/// `x[index]`: integer indices drop their axis, slices keep it; indexing every axis with integers
/// gives a float.
pub fn get(t: &mut Tape, x: Value, index: &[Index]) -> Result<Value, AdError> {
    if !x.is_tensor() {
        return Err(plain::operand("indexing", &x));
    }
    match t.lift([x]) {
        Lifted::Plain([x]) => plain::get(&plain::into_tensor(x, "indexing")?, index),
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let kind = Kind::of(&x);
            let out = get(t, x, index)?;
            t.push(level, Op::Get { x: tracked(arg)?, index: index.into(), kind }, out)
        }
    }
}

/// `target[index] = value`, returning the updated tensor; `value` broadcasts to the region.
pub fn set(t: &mut Tape, target: Value, index: &[Index], value: Value) -> Result<Value, AdError> {
    scatter(t, target, index, value, false)
}

/// `target[index] += value`, returning the updated tensor; `value` broadcasts to the region.
pub fn add_at(
    t: &mut Tape,
    target: Value,
    index: &[Index],
    value: Value,
) -> Result<Value, AdError> {
    scatter(t, target, index, value, true)
}

/// `target[index] op= value` for any arithmetic operator: `+=` is [`add_at`]; the others read the
/// region, combine and write it back, which differentiates exactly.
pub fn update_at(
    t: &mut Tape,
    target: Value,
    index: &[Index],
    op: BinaryOp,
    value: Value,
) -> Result<Value, AdError> {
    if op == BinaryOp::Add {
        return add_at(t, target, index, value);
    }
    let region = get(t, target.clone(), index)?;
    let combined = binary(t, op, region, value)?;
    set(t, target, index, combined)
}

fn scatter(
    t: &mut Tape,
    target: Value,
    index: &[Index],
    value: Value,
    accumulate: bool,
) -> Result<Value, AdError> {
    if !target.is_tensor() {
        return Err(plain::operand("indexed assignment", &target));
    }
    if !value.is_differentiable() && value.as_f64().is_none() {
        return Err(plain::operand("indexed assignment", &value));
    }
    // Whether the write consumes the target's value: a tracked tensor that nothing else holds.
    let consumed = matches!(&target, Value::Tracked(tracked) if Rc::strong_count(tracked) == 1);
    match t.lift([target, value]) {
        Lifted::Plain([target, value]) => {
            let target = plain::into_tensor(target, "indexed assignment")?;
            let value = plain::into_tensor(value, "indexed assignment")?;
            let updated = match accumulate {
                true => tensor::add_at(target, index, &value)?,
                false => tensor::set(target, index, &value)?,
            };
            Ok(Value::tensor(updated))
        }
        Lifted::Tracked { level, inner: [target, value], args: [target_arg, value_arg] } => {
            let kind = match value.as_f64() {
                Some(_) if !value.is_tensor() => Kind::Float,
                _ => Kind::of(&value),
            };
            let out = scatter(t, target, index, value, accumulate)?;
            let (target, value, index) = (target_arg, value_arg, index.into());
            let op = match accumulate {
                true => Op::AddAt { target, value, index, kind, consumed },
                false => Op::Set { target, value, index, kind, consumed },
            };
            t.push(level, op, out)
        }
    }
}

/// `x` rearranged by `map` (whose input shape is `x`'s): a gather, differentiable to any order.
pub fn gather(t: &mut Tape, x: Value, map: &Rc<Gather>) -> Result<Value, AdError> {
    if !x.is_tensor() {
        return Err(plain::operand("indexing", &x));
    }
    match t.lift([x]) {
        Lifted::Plain([x]) => Ok(Value::tensor(map.apply(&plain::into_tensor(x, "indexing")?)?)),
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let out = gather(t, x, map)?;
            t.push(level, Op::Gather { x: tracked(arg)?, map: map.clone() }, out)
        }
    }
}

/// Each element of `y` (of `map`'s output shape) added into the element of `map`'s input shape
/// it was gathered from, in a tensor of zeros: the transpose of [`gather`], with duplicates
/// accumulating as `index_add` does.
pub fn scatter_add(t: &mut Tape, y: Value, map: &Rc<Gather>) -> Result<Value, AdError> {
    if !y.is_tensor() {
        return Err(plain::operand("indexed assignment", &y));
    }
    match t.lift([y]) {
        Lifted::Plain([y]) => {
            Ok(Value::tensor(map.scatter_add(&plain::into_tensor(y, "indexed assignment")?)?))
        }
        Lifted::Tracked { level, inner: [y], args: [arg] } => {
            let out = scatter_add(t, y, map)?;
            t.push(level, Op::ScatterAdd { x: tracked(arg)?, map: map.clone() }, out)
        }
    }
}

/// `target[indices] = value` through the map of an advanced index: `value` broadcasts to the
/// map's output; where indices repeat, the last write wins.
pub fn set_gathered(
    t: &mut Tape,
    target: Value,
    map: &Rc<Gather>,
    value: Value,
) -> Result<Value, AdError> {
    if !target.is_tensor() {
        return Err(plain::operand("indexed assignment", &target));
    }
    if !target.is_tracked() && !value.is_tracked() {
        return write_untracked(target, map, value, false);
    }
    let value = broadcast_to(t, value, map.output_shape())?;
    let kept = Value::tensor(map.last_reads()?);
    let value = select(t, &kept, value, Value::Float(0.0))?;
    let scattered = scatter_add(t, value, map)?;
    let written = Value::tensor(map.read_mask()?);
    select(t, &written, scattered, target)
}

/// `target[indices] op= value` through the map of an advanced index: `+=` adds the scattered
/// values (duplicates accumulate); the other operators read, combine and write back.
pub fn update_gathered(
    t: &mut Tape,
    target: Value,
    map: &Rc<Gather>,
    op: BinaryOp,
    value: Value,
) -> Result<Value, AdError> {
    if !target.is_tensor() {
        return Err(plain::operand("indexed assignment", &target));
    }
    if op == BinaryOp::Add && !target.is_tracked() && !value.is_tracked() {
        return write_untracked(target, map, value, true);
    }
    if op == BinaryOp::Add {
        let value = broadcast_to(t, value, map.output_shape())?;
        let scattered = scatter_add(t, value, map)?;
        return binary(t, BinaryOp::Add, target, scattered);
    }
    let region = gather(t, target.clone(), map)?;
    let combined = binary(t, op, region, value)?;
    set_gathered(t, target, map, combined)
}

/// A write through `map` where nothing is tracked: the value, broadcast to the selection, written
/// into the target's buffer in place ([`Gather::write_into`]), at the cost of the elements written.
fn write_untracked(
    target: Value,
    map: &Gather,
    value: Value,
    accumulate: bool,
) -> Result<Value, AdError> {
    let target = plain::into_tensor(target, "indexed assignment")?;
    let value = plain::into_tensor(value, "indexed assignment")?;
    let value = tensor::broadcast_to(&value, map.output_shape())?;
    Ok(Value::tensor(map.write_into(target, &value, accumulate)?))
}
