//! The records of the tape: one [`Rec`] of 16 bytes per tape slot, in execution order.
//!
//! Scalar operations whose local derivatives are plain numbers (the common case: a float tracked
//! at one level only) record those derivatives directly: [`Rec::Scalar1`] is one input and its
//! partial, a function of two inputs takes two slots ([`Rec::Pair`] for the first input, then
//! [`Rec::Scalar2`], whose slot is the node). The backward pass over them is one multiply-add per
//! input. Every other operation is a [`Rec::General`] naming an [`Op`] in its level's `general`
//! arena, which holds its inputs and names its saved values, operand kinds and bulky parameters
//! (index lists, permutations, contractions) by position in the level's other arenas
//! ([`Records::values`], [`Records::kinds`], [`Records::extras`]). A record never holds a node of
//! another level: inputs that are not tracked at the record's level are [`Arg::CONSTANT`] and get
//! no gradient there.
//!
//! Records and ops are plain data with no destructor, so releasing a recording of a million
//! records is a few length resets.
//!
//! This module only describes records; `ops` and the tape write them and `backward` reads them.

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

/// One slot of a level's tape. Every slot but a [`Rec::Pair`] is a node, whose tape index (its
/// position) is what [`Arg`]s and the adjoint store use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Rec {
    /// A `var` (program level) or the argument a transform differentiates. A `var` re-leafed after
    /// a `backward` remembers the serial of the program-level node it continues (`origin`), so
    /// that `grad(x)` still finds that node's gradient; otherwise `origin` is [`Rec::NO_ORIGIN`].
    Leaf { origin: u64 },
    /// A float function of one tracked float with the plain local derivative `dx`.
    Scalar1 { x: u32, dx: f64 },
    /// The first input of the [`Rec::Scalar2`] in the next slot and its partial; not a node.
    Pair { a: u32, da: f64 },
    /// A float function of two tracked floats with plain local derivatives: `b` and its partial
    /// here, the other input in the [`Rec::Pair`] just before.
    Scalar2 { b: u32, db: f64 },
    /// Any other operation: the index of its [`Op`] in the level's `general` arena.
    General { op: u32 },
}

impl Rec {
    pub(crate) const NO_ORIGIN: u64 = u64::MAX;
}

/// The records of one level in chunks of [`RecStore::CHUNK`] records, so that a growing recording
/// never copies what it holds (a copy would also fault in fresh memory for all of it, which costs
/// more than the copy itself on machines where first touches are slow).
#[derive(Debug, Default)]
pub(crate) struct RecStore {
    /// Every chunk has room for `CHUNK` records; chunk `k` holds records `k * CHUNK` up to the
    /// length or `(k + 1) * CHUNK`, whichever is less, so the ones before the chunk holding the
    /// last record are full and the ones after it empty (kept for reuse). Every method keeps this
    /// invariant, and [`RecStore::get`] relies on it.
    chunks: Vec<Vec<Rec>>,
    len: usize,
}

impl RecStore {
    const CHUNK_BITS: u32 = 12;
    /// Records per chunk (64 KiB of records).
    pub(crate) const CHUNK: usize = 1 << Self::CHUNK_BITS;

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many records fit without a new chunk.
    pub(crate) fn capacity(&self) -> usize {
        self.chunks.len() * Self::CHUNK
    }

    /// The record at `index`, if it is below the length: one comparison, because the invariant
    /// of the `chunks` field makes every index below the length a record.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<&Rec> {
        if index >= self.len {
            return None;
        }
        debug_assert!(self.chunks[index >> Self::CHUNK_BITS].len() > index & (Self::CHUNK - 1));
        // SAFETY: chunk `index >> CHUNK_BITS` exists and holds the record, by the invariant.
        Some(unsafe {
            self.chunks
                .get_unchecked(index >> Self::CHUNK_BITS)
                .get_unchecked(index & (Self::CHUNK - 1))
        })
    }

    /// [`RecStore::get`], for writing.
    #[inline]
    pub(crate) fn get_mut(&mut self, index: usize) -> Option<&mut Rec> {
        if index >= self.len {
            return None;
        }
        debug_assert!(self.chunks[index >> Self::CHUNK_BITS].len() > index & (Self::CHUNK - 1));
        // SAFETY: as in `get`.
        Some(unsafe {
            self.chunks
                .get_unchecked_mut(index >> Self::CHUNK_BITS)
                .get_unchecked_mut(index & (Self::CHUNK - 1))
        })
    }

    /// The chunks holding records `0..len`, in order.
    pub(crate) fn chunks(&self) -> &[Vec<Rec>] {
        let used = self.len.div_ceil(Self::CHUNK).min(self.chunks.len());
        &self.chunks[..used]
    }

    /// Appends a record; the caller made room ([`RecStore::reserve`]).
    #[inline(always)]
    pub(crate) fn push(&mut self, rec: Rec) {
        match self.chunks.get_mut(self.len >> Self::CHUNK_BITS) {
            Some(chunk) => push_record(chunk, rec),
            None => {
                let mut chunk = Vec::with_capacity(Self::CHUNK);
                chunk.push(rec);
                self.chunks.push(chunk);
            }
        }
        self.len += 1;
    }

    /// Makes room for `more` records, one chunk at a time; errors when memory runs out.
    pub(crate) fn reserve(&mut self, more: usize) -> Result<(), super::AdError> {
        while self.len + more > self.capacity() {
            let mut chunk = Vec::new();
            chunk
                .try_reserve_exact(Self::CHUNK)
                .map_err(|_| super::AdError::from(super::AdErrorKind::TapeFull))?;
            self.chunks.push(chunk);
        }
        Ok(())
    }

    /// Forgets the records from `len` on, keeping the chunks.
    pub(crate) fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        let first = len >> Self::CHUNK_BITS;
        for (position, chunk) in self.chunks.iter_mut().enumerate().skip(first) {
            chunk.truncate(if position == first { len & (Self::CHUNK - 1) } else { 0 });
        }
        self.len = len;
    }

    /// Forgets the last record.
    #[inline(always)]
    pub(crate) fn pop(&mut self) {
        if let Some(last) = self.len.checked_sub(1)
            && let Some(chunk) = self.chunks.get_mut(last >> Self::CHUNK_BITS)
        {
            chunk.pop();
            self.len = last;
        }
    }

    /// Forgets every record, keeping the chunks.
    pub(crate) fn clear(&mut self) {
        self.truncate(0);
    }
}

/// Appends `rec` to a chunk.
///
/// `Vec::push` makes the compiler build a record on the stack (it must survive the call that
/// would grow the vector) and copy it into the buffer with wide loads that cannot be forwarded
/// from the narrow stores that built it, a stall on every recorded scalar operation. Writing into
/// the spare capacity builds it in place.
#[inline(always)]
fn push_record(chunk: &mut Vec<Rec>, rec: Rec) {
    let len = chunk.len();
    match chunk.spare_capacity_mut().first_mut() {
        Some(slot) => {
            slot.write(rec);
            // SAFETY: the element at `len` was just initialised, and `len < capacity` because the
            // spare capacity was not empty.
            unsafe { chunk.set_len(len + 1) };
        }
        // A full chunk is never pushed to (see `RecStore::push`); should it be, it grows.
        None => chunk.push(rec),
    }
}

/// A recorded operation other than a leaf or a scalar one. Field names follow the operation's
/// operands; `values` and `kinds` point into the level's arenas, with the entries listed on each
/// variant.
#[derive(Debug)]
pub(crate) enum Op {
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

/// The recording of one level: its records in order (already topological) and the arenas they
/// point into. `base` is the serial of the first record.
#[derive(Debug, Default)]
pub(crate) struct Records {
    /// Whoever changes `base` or the capacity of `ops` calls [`Records::fit_room`] after.
    pub(crate) base: u64,
    pub(crate) ops: RecStore,
    /// Scalar records may take the positions below this one without growing `ops` and without a
    /// node index or serial outgrowing an [`Arg`] or a `NodeRef` (see [`Records::fit_room`]), so
    /// the recording fast path checks its room with one comparison.
    pub(crate) room_end: usize,
    pub(crate) general: Vec<Op>,
    pub(crate) values: Vec<Value>,
    pub(crate) kinds: Vec<Kind>,
    pub(crate) extras: Vec<Extra>,
    /// The bytes of the tensors saved in `values` (each counted as if it had its own buffer).
    pub(crate) saved_bytes: usize,
}

impl Records {
    /// Forgets every record, keeping the allocations for the next recording, and moves `base`
    /// past the forgotten serials so that boxes naming them are stale from now on.
    pub(crate) fn release(&mut self) {
        self.base += self.ops.len() as u64;
        self.fit_room();
        self.ops.clear();
        self.general.clear();
        self.values.clear();
        self.kinds.clear();
        self.extras.clear();
        self.saved_bytes = 0;
    }

    /// Recomputes `room_end` from the capacity and `base`: a record may start at position `len`
    /// and take `slots` slots when `len + slots <= room_end`, which keeps every position below
    /// `u32::MAX - 2` (so that [`Arg::CONSTANT`] stays distinct) and every serial within
    /// `NodeRef::MAX_SERIAL`.
    pub(crate) fn fit_room(&mut self) {
        self.room_end = self.current_room_end();
    }

    fn current_room_end(&self) -> usize {
        let serials_left = (crate::value::NodeRef::MAX_SERIAL + 1).saturating_sub(self.base);
        let serials_left = usize::try_from(serials_left).unwrap_or(usize::MAX);
        self.ops.capacity().min(u32::MAX as usize - 3).min(serials_left)
    }

    /// Whether a scalar record of `slots` slots fits after the last one; see
    /// [`Records::fit_room`].
    #[inline(always)]
    pub(crate) fn has_room(&self, slots: usize) -> bool {
        debug_assert_eq!(self.room_end, self.current_room_end(), "a stale room_end");
        self.ops.len() + slots <= self.room_end
    }

    /// The general operation of a [`Rec::General`].
    pub(crate) fn op(&self, index: u32) -> Result<&Op, super::AdError> {
        self.general
            .get(index as usize)
            .ok_or(super::AdError::internal("a record names an operation it lacks"))
    }

    /// The bytes the recording takes (its allocations and the tensors it saved), for the
    /// allocation limit.
    pub(crate) fn bytes(&self) -> usize {
        self.ops.capacity() * size_of::<Rec>()
            + self.general.capacity() * size_of::<Op>()
            + self.values.capacity() * size_of::<Value>()
            + self.kinds.capacity() * size_of::<Kind>()
            + self.extras.capacity() * size_of::<Extra>()
            + self.saved_bytes
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
    fn the_store_grows_by_chunks_and_forgets_from_the_end() {
        let chunk = RecStore::CHUNK;
        let mut store = RecStore::default();
        let n = chunk * 2 + 5;
        store.reserve(n).unwrap();
        assert_eq!(store.capacity(), chunk * 3);
        for i in 0..n {
            store.push(Rec::Scalar1 { x: i as u32, dx: 1.0 });
        }
        assert_eq!((store.len(), store.chunks().len()), (n, 3));
        assert_eq!(store.get(chunk + 1), Some(&Rec::Scalar1 { x: chunk as u32 + 1, dx: 1.0 }));
        store.truncate(chunk - 1);
        assert_eq!((store.len(), store.chunks().len()), (chunk - 1, 1));
        assert!(store.get(chunk).is_none() && store.get(chunk - 2).is_some());
        store.pop();
        assert_eq!(store.len(), chunk - 2);
        assert!(store.get(chunk - 2).is_none());
        store.clear();
        assert!(store.is_empty() && store.chunks().is_empty());
        assert_eq!(store.capacity(), chunk * 3, "the chunks are kept for reuse");
    }

    #[test]
    fn records_are_small() {
        assert_eq!(size_of::<Rec>(), 16);
        assert!(size_of::<Op>() <= 32, "{}", size_of::<Op>());
        assert!(!std::mem::needs_drop::<Op>(), "releasing a recording must not visit records");
        assert!(!std::mem::needs_drop::<Rec>());
    }
}
