//! Evaluation of [`Instr::FloatExpr`](crate::code::Instr::FloatExpr): a tree of scalar float
//! operations at once, on plain numbers.
//!
//! When operands are tracked, the partial derivatives of the result with respect to each tracked
//! operand are carried forward through the tree (at most two operands, all of one level: what one
//! tape record can name), and the result is recorded as one record of those operands. That is the
//! record the step-by-step recording leaves after fusing the fresh records of the tree's
//! temporaries (`Tape::fuse1`): the same products of the same partials (multiplication is
//! commutative in floating point, and no partial is a sum of more than two terms), so values,
//! gradients and tape words agree bit for bit with the instructions the expression stands for.
//! Anything else (a tensor, a stale or nested box, a third tracked operand) is left to those
//! instructions.

use std::mem::MaybeUninit;

use crate::autodiff::{AdError, Tape, Term};
use crate::code::{ExprOp, FloatExpr};
use crate::ops::scalar;
use crate::value::{NodeRef, Value};

/// The result of an expression, unless its operands need the instructions it stands for.
pub(super) enum Evaluated {
    Plain(f64),
    Tracked(f64, NodeRef),
    Fallback,
}

const N: usize = FloatExpr::MAX_ENTRIES;

/// An entry of a tracked evaluation with `K` tracked operands: its value, its partial derivatives
/// with respect to them, and which of them (bit `i` for operand `i`) it depends on. A partial
/// whose bit is clear is never read.
#[derive(Clone, Copy)]
struct Entry<const K: usize> {
    value: f64,
    partials: [f64; K],
    mask: u8,
}

/// Entry `index` of `entries`.
///
/// SAFETY: the entry must have been written.
#[inline(always)]
unsafe fn read<T: Copy>(entries: &[MaybeUninit<T>; N], index: u8) -> T {
    unsafe { entries.get_unchecked(usize::from(index)).assume_init() }
}

/// Evaluates `expr` on the frame at `regs`, recording it on `tape` when an operand is tracked.
///
/// SAFETY: `regs` must point at a live frame holding every leaf slot of `expr`, and `expr` must
/// have passed `Unit::verify` (at most [`FloatExpr::MAX_ENTRIES`] entries, each step reading
/// earlier ones); no reference to the leaf slots may be in use.
#[inline]
pub(super) unsafe fn evaluate(
    expr: &FloatExpr,
    regs: *const Value,
    tape: &mut Tape,
) -> Result<Evaluated, AdError> {
    // Every entry is written before a step reads it, so the arrays need no initialisation.
    let mut values = [const { MaybeUninit::<f64>::uninit() }; N];
    let mut masks = [0u8; N];
    let mut nodes: [Option<NodeRef>; 2] = [None, None];
    let mut read_int = false;
    let n_leaves = expr.leaves.len();
    for (k, leaf) in expr.leaves.iter().enumerate() {
        // SAFETY: a leaf slot of the frame, read only.
        let value = match *unsafe { &*regs.add(leaf.slot as usize) } {
            Value::Float(x) => x,
            Value::Int(x) if leaf.int_ok => {
                read_int = true;
                x as f64
            }
            Value::TrackedFloat { value, node } if tape.is_live(node) => {
                masks[k] = match nodes {
                    [Some(first), _] if first == node => 1,
                    [_, Some(second)] if second == node => 2,
                    [None, _] => {
                        nodes[0] = Some(node);
                        1
                    }
                    [Some(first), None] if first.level() == node.level() => {
                        nodes[1] = Some(node);
                        2
                    }
                    _ => return Ok(Evaluated::Fallback),
                };
                value
            }
            _ => return Ok(Evaluated::Fallback),
        };
        // SAFETY: `k < n_leaves <= N`.
        unsafe { values.get_unchecked_mut(k) }.write(value);
    }
    let root = (n_leaves + expr.steps.len() - 1) as u8;
    let recorded = match nodes {
        [None, _] => {
            for (k, step) in expr.steps.iter().enumerate() {
                // SAFETY (for `read`): verified indices of entries written before.
                let x = unsafe { read(&values, step.a) };
                let value = match step.op {
                    ExprOp::Binary(op) => op.apply(x, unsafe { read(&values, step.b) }),
                    ExprOp::Unary(op) => op.apply(x),
                };
                // SAFETY: `n_leaves + k <= root < N`.
                unsafe { values.get_unchecked_mut(n_leaves + k) }.write(value);
            }
            // SAFETY: the root was written last.
            return Ok(Evaluated::Plain(unsafe { read(&values, root) }));
        }
        // A tracked float with an `int` goes through the general operation, which converts the
        // `int` itself.
        _ if read_int => return Ok(Evaluated::Fallback),
        [Some(x), None] => {
            let (value, [partial], recorded) = unsafe { tracked::<1>(expr, &values, &masks) };
            (value, tape.fuse1(Term { node: x, partial, fresh: false })?, recorded)
        }
        [Some(x), Some(y)] => {
            let (value, [dx, dy], recorded) = unsafe { tracked::<2>(expr, &values, &masks) };
            let (x, y) = (
                Term { node: x, partial: dx, fresh: false },
                Term { node: y, partial: dy, fresh: false },
            );
            (value, tape.fuse2(x, y)?, recorded)
        }
    };
    let (value, node, recorded) = recorded;
    // The step-by-step recording counts each operation with a tracked operand; `fuse1` and
    // `fuse2` counted one.
    tape.count_fused(recorded - 1);
    Ok(Evaluated::Tracked(value, node))
}

/// The value of a tracked expression, its partial derivatives with respect to the `K` tracked
/// operands, and how many of its steps have a tracked operand. Every leaf flows into the root, so
/// the root depends on every tracked operand.
///
/// SAFETY: the leaves' values and masks are written, and `expr` passed `Unit::verify`.
#[inline(always)]
unsafe fn tracked<const K: usize>(
    expr: &FloatExpr,
    values: &[MaybeUninit<f64>; N],
    masks: &[u8; N],
) -> (f64, [f64; K], u64) {
    let mut entries = [const { MaybeUninit::<Entry<K>>::uninit() }; N];
    let n_leaves = expr.leaves.len();
    for (k, (value, &mask)) in values.iter().zip(masks).take(n_leaves).enumerate() {
        let partials = std::array::from_fn(|i| if mask >> i & 1 != 0 { 1.0 } else { 0.0 });
        // SAFETY: the leaves' values are written; `k < n_leaves <= N`.
        let value = unsafe { value.assume_init() };
        unsafe { entries.get_unchecked_mut(k) }.write(Entry { value, partials, mask });
    }
    let mut recorded = 0;
    for (k, step) in expr.steps.iter().enumerate() {
        // SAFETY (for `read`): verified indices of entries written before.
        let a = unsafe { read(&entries, step.a) };
        let result = match step.op {
            ExprOp::Binary(op) => {
                let b = unsafe { read(&entries, step.b) };
                if a.mask | b.mask == 0 {
                    Entry { value: op.apply(a.value, b.value), ..a }
                } else {
                    recorded += 1;
                    let (value, dx, dy) = scalar::binary_with_partials(op, a.value, b.value);
                    let partials = std::array::from_fn(|i| {
                        match (a.mask >> i & 1 != 0, b.mask >> i & 1 != 0) {
                            (true, true) => dx * a.partials[i] + dy * b.partials[i],
                            (true, false) => dx * a.partials[i],
                            (false, true) => dy * b.partials[i],
                            (false, false) => 0.0,
                        }
                    });
                    Entry { value, partials, mask: a.mask | b.mask }
                }
            }
            ExprOp::Unary(op) if a.mask == 0 => Entry { value: op.apply(a.value), ..a },
            ExprOp::Unary(op) => {
                recorded += 1;
                let (value, dy) = scalar::unary_with_derivative(op, a.value);
                Entry { value, partials: a.partials.map(|partial| dy * partial), mask: a.mask }
            }
        };
        // SAFETY: `n_leaves + k < N`.
        unsafe { entries.get_unchecked_mut(n_leaves + k) }.write(result);
    }
    // SAFETY: the root was written last.
    let root = unsafe { read(&entries, (n_leaves + expr.steps.len() - 1) as u8) };
    (root.value, root.partials, recorded)
}
