//! Compiles trees of scalar float operations into [`Instr::FloatExpr`] instructions.
//!
//! An expression such as `x * a + sin(x) * b` lowers to one instruction per operation, each
//! writing a temporary that the next takes as a fresh operand. Run one by one, every operation
//! pays for dispatch, for matching its operands' values and, when they are tracked, for recording
//! and fusing a tape record. This pass finds such trees in a unit's code and puts an
//! [`Instr::FloatExpr`] before each: the interpreter evaluates the whole tree on plain numbers,
//! with the partial derivatives of the result with respect to its (at most two) tracked operands,
//! and records one record, the one the fused step-by-step recording would have left. The original
//! instructions stay in place behind it, for the operands the fast path does not take.
//!
//! A tree is a run of consecutive [`Instr::FloatArith`] and [`Instr::Unary`] instructions with no
//! jump landing inside it, in which every result but the last is a temporary read once, as a
//! fresh operand, by a later instruction of the run, and every other operand (a leaf) is a slot
//! that no instruction of the run has written before it reads it and that is not itself a fresh
//! temporary (whose record the step-by-step path would fuse).

use rustc_hash::FxHashMap;

use crate::code::{ExprLeaf, ExprOp, ExprStep, FloatExpr, Instr, Operand, Slot, Unit};

/// An instruction a [`FloatExpr`] may hold: its operation, destination and operands (one for a
/// unary operation).
struct Step {
    op: ExprOp,
    dst: Slot,
    operands: [Operand; 2],
    arity: usize,
}

impl Step {
    fn of(instr: &Instr) -> Option<Step> {
        match *instr {
            Instr::FloatArith { op, dst, a, b } if !op.is_comparison() => {
                Some(Step { op: ExprOp::Binary(op), dst, operands: [a, b], arity: 2 })
            }
            Instr::Unary { op, dst, a } => {
                Some(Step { op: ExprOp::Unary(op), dst, operands: [a, a], arity: 1 })
            }
            _ => None,
        }
    }

    fn operands(&self) -> &[Operand] {
        &self.operands[..self.arity]
    }
}

/// A tree found in the code: the positions of its first and last instruction, and the tree.
struct Tree {
    first: usize,
    last: usize,
    dst: Slot,
    expr: FloatExpr,
}

/// Finds the unit's float expression trees and compiles each into an [`Instr::FloatExpr`] placed
/// before it; jump targets, spans, the end of the prologue and the base case follow the moved
/// instructions.
pub(super) fn compile(unit: &mut Unit) {
    let len = unit.code.len();
    // Positions a jump lands on, and the end of the prologue: a tree may start there but not
    // continue across.
    let mut boundary = vec![false; len + 1];
    for instr in unit.code.iter_mut() {
        if let Some(&mut target) = instr.target_mut() {
            boundary[(target as usize).min(len)] = true;
        }
    }
    boundary[(unit.prologue_end as usize).min(len)] = true;
    let steps: Vec<Option<Step>> = unit.code.iter().map(Step::of).collect();
    let mut trees = Vec::new();
    let mut start = 0;
    while start < len {
        if steps[start].is_none() {
            start += 1;
            continue;
        }
        let mut end = start + 1;
        while end < len && !boundary[end] && steps[end].is_some() {
            end += 1;
        }
        let run: Vec<&Step> = steps[start..end].iter().flatten().collect();
        trees_of_run(&run, start, &mut trees);
        start = end;
    }
    if trees.is_empty() {
        return;
    }
    // `before[i]`: how many expressions are placed before old position `i`; a jump to the first
    // instruction of a tree lands on its expression.
    let mut before = vec![0u32; len + 1];
    for tree in &trees {
        before[tree.first + 1] += 1;
    }
    for i in 1..=len {
        before[i] += before[i - 1];
    }
    let moved = |old: u32| old + before[(old as usize).min(len)];
    let mut code = Vec::with_capacity(len + trees.len());
    let mut spans = Vec::with_capacity(len + trees.len());
    let mut trees = trees.into_iter().peekable();
    let old_spans = std::mem::take(&mut unit.spans);
    for (i, (mut instr, span)) in unit.code.drain(..).zip(old_spans).enumerate() {
        if let Some(tree) = trees.next_if(|tree| tree.first == i) {
            let skip = (tree.last - tree.first + 1) as u32;
            let expr = unit.exprs.len() as u32;
            unit.exprs.push(tree.expr);
            code.push(Instr::FloatExpr { dst: tree.dst, expr, skip });
            // An error of the expression (a full tape) is reported at its root.
            spans.push(span);
        }
        if let Some(target) = instr.target_mut() {
            *target = moved(*target);
        }
        code.push(instr);
        spans.push(span);
    }
    unit.prologue_end = moved(unit.prologue_end);
    unit.code = code;
    unit.spans = spans;
    unit.base_case = Unit::base_case_of(&unit.code, unit.n_params);
}

/// Splits a run of candidate instructions, the first at position `start`, into trees and adds the
/// ones that compile to `trees`.
fn trees_of_run(run: &[&Step], start: usize, trees: &mut Vec<Tree>) {
    // An instruction ends a tree unless its result is next used as a fresh operand later in the
    // run (before anything writes its slot again).
    let ends_tree = |k: usize| {
        let dst = run[k].dst;
        for later in &run[k + 1..] {
            if let Some(operand) = later.operands().iter().find(|o| o.slot() == dst) {
                return !operand.is_fresh();
            }
            if later.dst == dst {
                return true;
            }
        }
        true
    };
    let mut first = 0;
    for last in 0..run.len() {
        if ends_tree(last) {
            if let Some(expr) = tree(&run[first..=last]) {
                let dst = run[last].dst;
                trees.push(Tree { first: start + first, last: start + last, dst, expr });
            }
            first = last + 1;
        }
    }
}

/// What an operand of a step reads while a tree is being compiled: a leaf or an earlier step.
#[derive(Clone, Copy)]
enum Ref {
    Leaf(usize),
    Step(usize),
}

/// The expression of the instructions `steps`, if they form a tree of at least two operations
/// (see the module documentation).
fn tree(steps: &[&Step]) -> Option<FloatExpr> {
    if steps.len() < 2 {
        return None;
    }
    let mut leaves: Vec<ExprLeaf> = Vec::new();
    let mut refs: Vec<(ExprOp, Ref, Ref)> = Vec::with_capacity(steps.len());
    // The step whose result each slot holds, while no later step has read it.
    let mut unread: FxHashMap<Slot, usize> = FxHashMap::default();
    let mut written: Vec<Slot> = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        let mut operands = [Ref::Leaf(0); 2];
        for (read, operand) in operands.iter_mut().zip(step.operands()) {
            let slot = operand.slot();
            *read = match unread.remove(&slot) {
                // The result of an earlier step: a temporary read only here.
                Some(result) if operand.is_fresh() => Ref::Step(result),
                Some(_) => return None,
                // A leaf: a slot the tree has not written before, and not a fresh temporary
                // (whose record the step-by-step recording would fuse into this one).
                None if operand.is_fresh() || written.contains(&slot) => return None,
                None => {
                    let binary = matches!(step.op, ExprOp::Binary(_));
                    match leaves.iter().position(|leaf| leaf.slot == slot) {
                        Some(leaf) => {
                            leaves[leaf].int_ok &= binary;
                            Ref::Leaf(leaf)
                        }
                        None => {
                            leaves.push(ExprLeaf { slot, int_ok: binary });
                            Ref::Leaf(leaves.len() - 1)
                        }
                    }
                }
            };
        }
        // A result written over before anything read it would be lost.
        if unread.insert(step.dst, index).is_some() {
            return None;
        }
        written.push(step.dst);
        let [a, b] = operands;
        refs.push((step.op, a, if step.arity == 2 { b } else { a }));
    }
    // Every result but the root's has been read.
    if unread.len() != 1 || leaves.len() + steps.len() > FloatExpr::MAX_ENTRIES {
        return None;
    }
    let n_leaves = leaves.len();
    let entry = |read: Ref| match read {
        Ref::Leaf(leaf) => leaf as u8,
        Ref::Step(step) => (n_leaves + step) as u8,
    };
    let steps = refs.into_iter().map(|(op, a, b)| ExprStep { op, a: entry(a), b: entry(b) });
    Some(FloatExpr { leaves: leaves.into(), steps: steps.collect() })
}
