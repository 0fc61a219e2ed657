//! Element-wise operations on values: the unary functions, arithmetic with NumPy broadcasting,
//! comparisons, `max`/`min`, and the constant-mask `select` that backward rules use.
//!
//! Floats tracked at one level take the fast path: compute the value and the local derivatives as
//! plain numbers and push a scalar record, nothing else (`unary_fused`, for
//! the interpreter, also fuses the record of a fresh temporary, see `Tape::fuse1`). Everything
//! else goes through the general path shared by all operations: lift the operands to the highest
//! live level, compute the primal by calling the operation itself on the unboxed operands (so
//! lower levels record it too), save what the backward rule needs, and box the result.

use crate::autodiff::{AdError, Arg, BinaryValues, Kind, Lifted, Op, Tape};
use crate::ops::plain;
use crate::ops::scalar::{self, Input};
use crate::value::Value;
use tensor::{self, BinaryOp, Tensor, UnaryOp};

/// A plain float's number, or a single-level tracked float's number and (live) node; `None` for
/// anything else.
#[inline]
fn scalar_operand(t: &Tape, value: &Value) -> Option<(f64, Option<Input>)> {
    match *value {
        Value::Float(x) => Some((x, None)),
        Value::TrackedFloat { value, node } => {
            Some((value, t.is_live(node).then_some(Input { node, fresh: false })))
        }
        _ => None,
    }
}

/// `op(x)` element-wise: `-x`, `sin(x)`, ... An `int` is converted to `float` (except for `-`).
#[inline]
pub fn unary(t: &mut Tape, op: UnaryOp, x: Value) -> Result<Value, AdError> {
    unary_fused(t, op, x, false)
}

/// [`unary`] for the interpreter, which knows whether `x` is a fresh temporary (see
/// `code::Operand`): the record of a fresh single-level float is fused into this one.
#[inline]
pub fn unary_fused(t: &mut Tape, op: UnaryOp, x: Value, fresh: bool) -> Result<Value, AdError> {
    match x {
        Value::Float(x) => Ok(Value::Float(op.apply(x))),
        Value::TrackedFloat { value, node } if t.is_live(node) => {
            let (value, node) = scalar::record_unary(t, op, value, Input { node, fresh })?;
            Ok(Value::TrackedFloat { value, node })
        }
        x => unary_general(t, op, x),
    }
}

/// [`unary`] for everything but plain and single-level floats.
#[inline(never)]
fn unary_general(t: &mut Tape, op: UnaryOp, x: Value) -> Result<Value, AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => plain::unary(op, x),
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let out = unary(t, op, x.clone())?;
            t.push(level, Op::Unary { op, x: tracked(arg)?, input: x, output: out.clone() }, out)
        }
    }
}

/// `a op b` with NumPy broadcasting, for every [`BinaryOp`]. Comparisons give a `bool` for scalars
/// and a 0/1 mask for tensors, never tracked. Two integers (`int`, `char`, `bool`) use C's integer
/// arithmetic with overflow and division by zero as errors; an integer meeting a float or a tensor
/// is converted to `float`.
#[inline]
pub fn binary(t: &mut Tape, op: BinaryOp, a: Value, b: Value) -> Result<Value, AdError> {
    match (&a, &b) {
        (Value::Float(x), Value::Float(y)) => return Ok(plain::float_binary(op, *x, *y)),
        (
            Value::Float(_) | Value::TrackedFloat { .. },
            Value::Float(_) | Value::TrackedFloat { .. },
        ) => {
            if let Some(result) = scalar_binary(t, op, &a, &b) {
                return result;
            }
        }
        _ => {}
    }
    binary_general(t, op, a, b)
}

/// [`binary`] for everything but floats tracked at one level at most.
#[inline(never)]
fn binary_general(t: &mut Tape, op: BinaryOp, a: Value, b: Value) -> Result<Value, AdError> {
    if op.is_comparison() {
        return plain::binary(op, a.detach(), b.detach());
    }
    let (a, b) = match (plain::is_integral(&a), plain::is_integral(&b)) {
        (true, true) => return plain::binary(op, a, b),
        (true, false) => (to_float(&a)?, b),
        (false, true) => (a, to_float(&b)?),
        (false, false) => (a, b),
    };
    match t.lift([a, b]) {
        Lifted::Plain([a, b]) => plain::binary(op, a, b),
        Lifted::Tracked { level, inner: [a, b], args: [lhs, rhs] } => {
            let (lhs_kind, rhs_kind) = (Kind::of(&a), Kind::of(&b));
            let needs_values = !matches!(op, BinaryOp::Add | BinaryOp::Sub);
            let saved = needs_values.then(|| (a.clone(), b.clone()));
            let out = binary(t, op, a, b)?;
            let values =
                saved.map(|(lhs, rhs)| Box::new(BinaryValues { lhs, rhs, out: out.clone() }));
            t.push(level, Op::Binary { op, lhs, rhs, lhs_kind, rhs_kind, values }, out)
        }
    }
}

/// `a + s * x`, or `a - s * x` when `subtract`: the update `a += s * x` (or `-=`) of a tensor
/// variable by a number times a tensor, for the interpreter.
///
/// With a plain number `s`, an untracked tensor `x` and a tensor `a` of `x`'s shape, it computes
/// the values and records the operation of [`mul`] then [`add`] or [`sub`] in one pass, writing
/// into `a`'s buffer when no one else holds it, so the product is never materialised; any other
/// operands take those two operations.
pub fn scaled_update(
    t: &mut Tape,
    a: Value,
    subtract: bool,
    s: Value,
    x: Value,
) -> Result<Value, AdError> {
    let op = if subtract { BinaryOp::Sub } else { BinaryOp::Add };
    match (t.settled(s), t.settled(x)) {
        (Value::Float(scale), Value::Tensor(x)) if a.is_tensor() && a.shape() == x.shape() => {
            scaled_update_of(t, a, op, scale, plain::take_tensor(x))
        }
        (s, x) => {
            let product = mul(t, s, x)?;
            binary(t, op, a, product)
        }
    }
}

/// [`scaled_update`] once its operands qualify: recorded like [`binary_general`] records `a op b`
/// for an untracked `b` (nothing saved, `b`'s kind for its shape), at every level that tracks `a`.
fn scaled_update_of(
    t: &mut Tape,
    a: Value,
    op: BinaryOp,
    scale: f64,
    x: Tensor,
) -> Result<Value, AdError> {
    match t.lift([a]) {
        Lifted::Plain([a]) => {
            let a = plain::into_tensor(a, op.symbol())?;
            Ok(Value::tensor(tensor::scaled_update(a, op == BinaryOp::Sub, scale, x)?))
        }
        Lifted::Tracked { level, inner: [a], args: [lhs] } => {
            let (lhs_kind, rhs_kind) = (Kind::of(&a), Kind::Tensor(x.shape().into()));
            let out = scaled_update_of(t, a, op, scale, x)?;
            let rhs = Arg::CONSTANT;
            t.push(level, Op::Binary { op, lhs, rhs, lhs_kind, rhs_kind, values: None }, out)
        }
    }
}

/// The fast path of [`binary`] for two floats: `None` when they are tracked at different levels,
/// which the general path handles.
#[inline]
fn scalar_binary(
    t: &mut Tape,
    op: BinaryOp,
    a: &Value,
    b: &Value,
) -> Option<Result<Value, AdError>> {
    let x = scalar_operand(t, a)?;
    let y = scalar_operand(t, b)?;
    if op.is_comparison() || (x.1.is_none() && y.1.is_none()) {
        return Some(Ok(plain::float_binary(op, x.0, y.0)));
    }
    let recorded = scalar::record_binary(t, op, x, y)?;
    Some(recorded.map(|(value, node)| Value::TrackedFloat { value, node }))
}

/// An integer operand as a float.
fn to_float(value: &Value) -> Result<Value, AdError> {
    value.as_f64().map(Value::Float).ok_or_else(|| plain::operand("arithmetic", value))
}

/// The node of an operand that must be tracked at the record's level.
pub(crate) fn tracked(arg: Arg) -> Result<u32, AdError> {
    match arg.index() {
        Some(index) => Ok(index as u32),
        None => Err(AdError::internal("an untracked operand where a tracked one is due")),
    }
}

/// `mask != 0 ? a : b` element-wise with broadcasting, where `mask` is a constant (its boxes are
/// ignored): differentiable in `a` and `b`, and unlike `mask * a + (1 - mask) * b` it keeps an
/// infinite or NaN branch out of the other branch's elements.
pub fn select(t: &mut Tape, mask: &Value, a: Value, b: Value) -> Result<Value, AdError> {
    let mask = mask.detach();
    match t.lift([a, b]) {
        Lifted::Plain([a, b]) => plain::select(&mask, a, b),
        Lifted::Tracked { level, inner: [a, b], args: [lhs, rhs] } => {
            let (a_kind, b_kind) = (Kind::of(&a), Kind::of(&b));
            let out = select(t, &mask, a, b)?;
            t.push(level, Op::Select { a: lhs, b: rhs, mask, a_kind, b_kind }, out)
        }
    }
}

#[inline]
pub fn neg(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    unary(t, UnaryOp::Neg, x)
}

#[inline]
pub fn add(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    binary(t, BinaryOp::Add, a, b)
}

#[inline]
pub fn sub(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    binary(t, BinaryOp::Sub, a, b)
}

#[inline]
pub fn mul(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    binary(t, BinaryOp::Mul, a, b)
}

#[inline]
pub fn div(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    binary(t, BinaryOp::Div, a, b)
}

#[inline]
pub fn pow(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    binary(t, BinaryOp::Pow, a, b)
}
