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

/// An entry of a tracked evaluation: its value, its partial derivatives with respect to the
/// tracked operands, and which of them (bit `i` for operand `i`) it depends on. A partial whose
/// bit is clear is never read.
#[derive(Clone, Copy)]
struct Entry {
    value: f64,
    partials: [f64; 2],
    mask: u8,
}

/// The partials of a leaf with each mask: a tracked operand's partial with respect to itself is 1.
const SEEDS: [[f64; 2]; 3] = [[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]];

/// The partial of `dx a + dy b` with respect to tracked operand `i`: only the terms of the
/// operands that depend on it, as the fused records have them (`0 * inf` would be NaN). Written
/// out rather than as a closure over `[0, 1]`, which the compiler does not always inline.
#[inline(always)]
fn combine(i: usize, dx: f64, a: &Entry, dy: f64, b: &Entry) -> f64 {
    let (from_a, from_b) = (dx * a.partials[i], dy * b.partials[i]);
    let bit = 1 << i;
    if a.mask & b.mask & bit != 0 {
        from_a + from_b
    } else if a.mask & bit != 0 {
        from_a
    } else {
        from_b
    }
}

/// Entry `index` of `entries`.
///
/// SAFETY: the entry must have been written.
#[inline(always)]
unsafe fn read<T: Copy>(entries: &[MaybeUninit<T>; N], index: u8) -> T {
    // SAFETY: the caller's (the entry was written, so it is inside the array too).
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
    // Every entry is written before a step reads it, so the array needs no initialisation.
    let mut values = [const { MaybeUninit::<f64>::uninit() }; N];
    let n_leaves = expr.leaves.len();
    for (k, leaf) in expr.leaves.iter().enumerate() {
        // SAFETY: a leaf slot of the frame, read only.
        let value = match *unsafe { &*regs.add(leaf.slot as usize) } {
            Value::Float(x) => x,
            // An `int` converts as `(float)i` does: a constant of the tree.
            Value::Int(x) if leaf.int_ok => x as f64,
            // SAFETY: the caller's.
            _ => return unsafe { evaluate_tracked(expr, regs, tape) },
        };
        // SAFETY: `k < n_leaves <= N`.
        unsafe { values.get_unchecked_mut(k) }.write(value);
    }
    for (k, step) in expr.steps.iter().enumerate() {
        // SAFETY: `step.a` indexes an entry written before (`Unit::verify`).
        let x = unsafe { read(&values, step.a) };
        let value = match step.op {
            // SAFETY: `step.b` indexes an entry written before (`Unit::verify`).
            ExprOp::Binary(op) => op.apply(x, unsafe { read(&values, step.b) }),
            ExprOp::Unary(op) => op.apply(x),
        };
        // SAFETY: `n_leaves + k < N` (`Unit::verify`).
        unsafe { values.get_unchecked_mut(n_leaves + k) }.write(value);
    }
    // SAFETY: the root, the last entry, was written last.
    Ok(Evaluated::Plain(unsafe { read(&values, (n_leaves + expr.steps.len() - 1) as u8) }))
}

/// [`evaluate`] when a leaf is not a plain number: the tracked evaluation.
///
/// SAFETY: as for [`evaluate`].
#[inline]
unsafe fn evaluate_tracked(
    expr: &FloatExpr,
    regs: *const Value,
    tape: &mut Tape,
) -> Result<Evaluated, AdError> {
    // Every entry is written before a step reads it, so the array needs no initialisation.
    let mut entries = [const { MaybeUninit::<Entry>::uninit() }; N];
    let mut nodes: [Option<NodeRef>; 2] = [None, None];
    let n_leaves = expr.leaves.len();
    for (k, leaf) in expr.leaves.iter().enumerate() {
        // SAFETY: a leaf slot of the frame, read only.
        let (value, mask) = match *unsafe { &*regs.add(leaf.slot as usize) } {
            Value::Float(x) => (x, 0),
            // An `int` converts as `(float)i` does: a constant of the tree.
            Value::Int(x) if leaf.int_ok => (x as f64, 0),
            Value::TrackedFloat { value, node } if tape.is_live(node) => {
                let mask = match nodes {
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
                (value, mask)
            }
            _ => return Ok(Evaluated::Fallback),
        };
        // SAFETY: `k < n_leaves <= N`, and `mask <= 2`.
        unsafe {
            let partials = *SEEDS.get_unchecked(usize::from(mask));
            entries.get_unchecked_mut(k).write(Entry { value, partials, mask });
        }
    }
    let root = (n_leaves + expr.steps.len() - 1) as u8;
    // Every leaf a plain number: `evaluate` takes that case, so this does not happen.
    let Some(first) = nodes[0] else { return Ok(Evaluated::Fallback) };
    let mut recorded = 0u64;
    for (k, step) in expr.steps.iter().enumerate() {
        // SAFETY: `step.a` indexes an entry written before (`Unit::verify`).
        let a = unsafe { read(&entries, step.a) };
        let result = match step.op {
            ExprOp::Binary(op) => {
                // SAFETY: `step.b` indexes an entry written before (`Unit::verify`).
                let b = unsafe { read(&entries, step.b) };
                if a.mask | b.mask == 0 {
                    Entry { value: op.apply(a.value, b.value), ..a }
                } else {
                    recorded += 1;
                    let (value, dx, dy) = scalar::binary_with_partials(op, a.value, b.value);
                    let partials = [combine(0, dx, &a, dy, &b), combine(1, dx, &a, dy, &b)];
                    Entry { value, partials, mask: a.mask | b.mask }
                }
            }
            ExprOp::Unary(op) if a.mask == 0 => Entry { value: op.apply(a.value), ..a },
            ExprOp::Unary(op) => {
                recorded += 1;
                let (value, dy) = scalar::unary_with_derivative(op, a.value);
                Entry { value, partials: [dy * a.partials[0], dy * a.partials[1]], mask: a.mask }
            }
        };
        // SAFETY: `n_leaves + k <= root < N`.
        unsafe { entries.get_unchecked_mut(n_leaves + k) }.write(result);
    }
    // SAFETY: the root was written last.
    let root = unsafe { read(&entries, root) };
    let term = |node: NodeRef, i: usize| Term { node, partial: root.partials[i], fresh: false };
    // Every leaf flows into the root, so the root depends on every tracked operand.
    let node = match nodes[1] {
        None => tape.fuse1(term(first, 0), root.value)?,
        Some(second) => tape.fuse2(term(first, 0), term(second, 1), root.value)?,
    };
    // The step-by-step recording counts each operation with a tracked operand; `fuse1` and
    // `fuse2` counted one.
    tape.count_fused(recorded - 1);
    Ok(Evaluated::Tracked(root.value, node))
}
