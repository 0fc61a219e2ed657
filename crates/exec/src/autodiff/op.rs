//! The records of the tape: one [`Op`] per recorded node, holding its inputs and what its backward
//! rule needs.
//!
//! A record is 32 bytes of plain data with no destructor, so releasing a recording of a million
//! records is one length reset. Scalar operations whose local derivatives are plain numbers (the
//! common case: a float tracked at one level only) record those derivatives directly
//! ([`Op::Scalar1`], [`Op::Scalar2`]), so the backward pass over them is a multiply-add per input.
//! Every other record names its saved values, operand kinds and bulky parameters (index lists,
//! permutations, contractions) by position in its level's arenas ([`Records::values`],
//! [`Records::kinds`], [`Records::extras`]). A record never holds a node of another level: inputs
//! that are not tracked at the record's level are [`Arg::CONSTANT`] and get no gradient there.
//!
//! This module only describes records; `ops` writes them and `backward` reads them.

use std::rc::Rc;

use crate::einsum::Contraction;
use crate::tensor::{BinaryOp, Index, ReduceOp, UnaryOp};
use crate::value::{Primal, Value};

/// An input of a recorded operation: the index on its level's tape of the node that produced it,
/// or [`Arg::CONSTANT`] for an operand not tracked at that level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arg(u32);

impl Arg {
    pub(crate) const CONSTANT: Arg = Arg(u32::MAX);

    pub(crate) fn node(index: u32) -> Arg {
        Arg(index)
    }

    /// The tape index of a tracked input, `None` for a constant.
    pub(crate) fn index(self) -> Option<usize> {
        (self != Arg::CONSTANT).then_some(self.0 as usize)
    }
}

/// The position of a record's first entry in one of its level's arenas.
pub(crate) type Slot = u32;

/// The position value of an axis argument that means "all axes".
pub(crate) const ALL_AXES: u32 = u32::MAX;

/// The position value of a record that saved nothing.
pub(crate) const NOTHING_SAVED: Slot = u32::MAX;

/// What an operand was, so that its gradient can be given the same type and shape: a `float`
/// (whose gradient is a `float`) or a tensor of a shape.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    Float,
    Tensor(Box<[usize]>),
}

impl Kind {
    /// The kind of a value's primal; integers count as floats, because they only reach a recorded
    /// operation converted.
    pub(crate) fn of(value: &Value) -> Kind {
        match value.primal() {
            Primal::Tensor(tensor) => Kind::Tensor(tensor.shape().into()),
            _ => Kind::Float,
        }
    }

    /// The shape: none for a float.
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Kind::Float => &[],
            Kind::Tensor(shape) => shape,
        }
    }
}

/// The index list of a gather or scatter and the kind of the operand whose gradient it produces
/// besides the indexed tensor (the tensor for a gather, the assigned value for a scatter).
#[derive(Debug)]
pub(crate) struct IndexRecord {
    pub(crate) index: Box<[Index]>,
    pub(crate) kind: Kind,
}

/// A contraction and its operands (saved in order from `values`).
#[derive(Debug)]
pub(crate) struct EinsumRecord {
    pub(crate) contraction: Rc<Contraction>,
    pub(crate) args: Box<[Arg]>,
    pub(crate) values: Slot,
}

/// The bulky parameter of a record, kept in its level's `extras` arena.
#[derive(Debug)]
pub(crate) enum Extra {
    /// A permutation: axis `i` of the result is axis `axes[i]` of the input.
    Axes(Box<[usize]>),
    /// The inputs of a stack.
    Items(Box<[Arg]>),
    Index(IndexRecord),
    Einsum(EinsumRecord),
}

/// One recorded operation. Field names follow the operation's operands; `values` and `kinds`
/// point into the level's arenas, with the entries listed on each variant.
#[derive(Debug)]
pub(crate) enum Op {
    /// A `var` (program level) or the argument a transform differentiates. A `var` re-leafed after
    /// a `backward` remembers the serial of the program-level node it continues (`origin`), so
    /// that `grad(x)` still finds that node's gradient; otherwise `origin` is [`Op::NO_ORIGIN`].
    Leaf { origin: u64 },
    /// A float function of one tracked float with the plain local derivative `dx`.
    Scalar1 { x: u32, dx: f64 },
    /// A float function of two tracked floats with plain local derivatives.
    Scalar2 { a: u32, b: u32, da: f64, db: f64 },
    /// An element-wise function; values `[x, out]`.
    Unary { op: UnaryOp, x: u32, values: Slot },
    /// Broadcasting arithmetic; kinds `[lhs, rhs]`; values `[lhs, rhs, out]`, or nothing for `+`
    /// and `-`, which need only the kinds.
    Binary { op: BinaryOp, lhs: Arg, rhs: Arg, values: Slot, kinds: Slot },
    /// `mask ? a : b` element-wise with a constant mask; values `[mask]`; kinds `[a, b]`.
    Select { a: Arg, b: Arg, values: Slot, kinds: Slot },
    /// `lhs @ rhs`; values `[lhs, rhs]`.
    Matmul { lhs: Arg, rhs: Arg, values: Slot },
    /// A reduction over all elements (`axis == ALL_AXES`) or one axis; values `[x, out]`.
    Reduce { op: ReduceOp, x: u32, axis: u32, values: Slot },
    /// For every element, the product of the other elements of its lane (the gradient of `prod`
    /// where an element is zero); values `[x]`.
    ProdOthers { x: u32, axis: u32, values: Slot },
    /// For every element `k` of a lane, the sum over the lane's other elements `i` of `v[i]` times
    /// the product of the elements other than `i` and `k`: the gradient of [`Op::ProdOthers`],
    /// linear in the tracked `v`, with the elements `x` constant; values `[x]`.
    ProdPairs { v: u32, axis: u32, values: Slot },
    /// Softmax along an axis; values `[out]`.
    Softmax { x: u32, axis: u32, values: Slot },
    /// Log-softmax along an axis; values `[out]`.
    LogSoftmax { x: u32, axis: u32, values: Slot },
    /// A change of shape (`reshape`, an inserted axis); kinds `[x]`.
    Reshape { x: u32, kinds: Slot },
    /// All axes reversed.
    Transpose { x: u32 },
    /// Axes permuted; the extra is the [`Extra::Axes`] permutation.
    Permute { x: u32, extra: Slot },
    /// `concat(lhs, rhs, axis)`, where `lhs` has extent `split` along `axis`.
    Concat { lhs: Arg, rhs: Arg, axis: u32, split: u32 },
    /// Items of one shape stacked along a new first axis; the extra is the [`Extra::Items`];
    /// kinds: one per item.
    Stack { extra: Slot, kinds: Slot },
    /// `diag`: vector to matrix or matrix to vector; kinds `[x]`.
    Diag { x: u32, kinds: Slot },
    /// `trace` of a matrix; kinds `[x]`.
    Trace { x: u32, kinds: Slot },
    /// `x[index]`, a gather; the extra is an [`Extra::Index`] whose kind is `x`'s.
    Get { x: u32, extra: Slot },
    /// `target[index] = value`, a scatter; the [`Extra::Index`]'s kind is `value`'s.
    Set { target: Arg, value: Arg, extra: Slot },
    /// `target[index] += value`; the [`Extra::Index`]'s kind is `value`'s.
    AddAt { target: Arg, value: Arg, extra: Slot },
    /// A value broadcast to a larger shape; kinds `[x]`.
    BroadcastTo { x: u32, kinds: Slot },
    /// A tensor summed down to a shape it broadcasts from; kinds `[x]`.
    SumToShape { x: u32, kinds: Slot },
    /// A float as a rank-0 tensor.
    ToTensor { x: u32 },
    /// A one-element tensor as a float; kinds `[x]`.
    ToFloat { x: u32, kinds: Slot },
    /// `inv`; values `[out]`.
    Inv { x: u32, values: Slot },
    /// `det`; values `[x, out]`.
    Det { x: u32, values: Slot },
    /// `solve(a, b)`; values `[a, out]`.
    Solve { a: Arg, b: Arg, values: Slot },
    /// `cholesky`; values `[out]`.
    Cholesky { x: u32, values: Slot },
    /// A contraction (`einsum`, index statements); the extra is an [`Extra::Einsum`].
    Einsum { extra: Slot },
}

impl Op {
    pub(crate) const NO_ORIGIN: u64 = u64::MAX;
}

/// The recording of one level: its records in order (already topological) and the arenas they
/// point into. `base` is the serial of the first record.
#[derive(Debug, Default)]
pub(crate) struct Records {
    pub(crate) base: u64,
    pub(crate) ops: Vec<Op>,
    pub(crate) values: Vec<Value>,
    pub(crate) kinds: Vec<Kind>,
    pub(crate) extras: Vec<Extra>,
}

impl Records {
    /// Forgets every record, keeping the allocations for the next recording, and moves `base`
    /// past the forgotten serials so that boxes naming them are stale from now on.
    pub(crate) fn release(&mut self) {
        self.base += self.ops.len() as u64;
        self.ops.clear();
        self.values.clear();
        self.kinds.clear();
        self.extras.clear();
    }

    /// The saved value at `slot + offset`.
    pub(crate) fn value(&self, slot: Slot, offset: usize) -> Result<&Value, super::AdError> {
        self.values
            .get(slot as usize + offset)
            .ok_or(super::AdError::internal("a record names a saved value it lacks"))
    }

    /// The extra at `slot`.
    pub(crate) fn extra(&self, slot: Slot) -> Result<&Extra, super::AdError> {
        self.extras
            .get(slot as usize)
            .ok_or_else(|| super::AdError::internal("a record names an extra it lacks"))
    }

    /// The saved kind at `slot + offset`.
    pub(crate) fn kind(&self, slot: Slot, offset: usize) -> Result<&Kind, super::AdError> {
        self.kinds
            .get(slot as usize + offset)
            .ok_or(super::AdError::internal("a record names a saved kind it lacks"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_small() {
        assert!(size_of::<Op>() <= 32, "{}", size_of::<Op>());
        assert!(!std::mem::needs_drop::<Op>(), "releasing a recording must not visit records");
    }
}
