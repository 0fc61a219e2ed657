//! The records of the tape, in execution order, stored as 8-byte words (see [`RecStore`]).
//!
//! Scalar operations whose local derivatives are plain numbers (the common case: a float tracked
//! at one level only) record those derivatives directly: [`Rec::Scalar1`] is one input and its
//! partial (one word when the input is the node just before, two otherwise), and a function of two
//! inputs is a [`Rec::Pair`] for the first input, then a [`Rec::Scalar2`], whose last word is the
//! node. The backward pass over them is one multiply-add per input. Every other operation is a
//! [`Rec::General`] naming an [`Op`] in its level's `general` arena, which holds its inputs and
//! names its saved values, operand kinds and bulky parameters (index lists, permutations,
//! contractions) by position in the level's other arenas ([`Records::values`],
//! [`Records::kinds`], [`Records::extras`]). A record never holds a node of another level: inputs
//! that are not tracked at the record's level are [`Arg::CONSTANT`] and get no gradient there.
//!
//! Words and ops are plain data with no destructor, so releasing a recording of a million
//! records is a few length resets.
//!
//! This module only describes records; `ops` and the tape write them and `backward` reads them.

use std::mem::MaybeUninit;
use std::rc::Rc;

use super::chunk::{self, Chunk};
use crate::value::{Primal, Value};
use tensor::einsum::Contraction;
use tensor::{BinaryOp, Index, ReduceOp, UnaryOp};

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

/// A record of a level's tape, as [`RecStore::rec`] reads it back from its words and
/// [`RecStore::push_rec`] writes it. Every record but a [`Rec::Pair`] is a node, whose tape index
/// (the position of its last word) is what [`Arg`]s and the adjoint store use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Rec {
    /// A `var` (program level) or the argument a transform differentiates. A `var` re-leafed after
    /// a `backward` remembers the serial of the program-level node it continues (`origin`), so
    /// that `grad(x)` still finds that node's gradient; otherwise `origin` is [`Rec::NO_ORIGIN`].
    Leaf { origin: u64 },
    /// A float function of one tracked float with the plain local derivative `dx`.
    Scalar1 { x: u32, dx: f64 },
    /// The first input of the [`Rec::Scalar2`] right after and its partial; not a node.
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

/// How records are laid out in 8-byte words (see [`RecStore`]): a word is either a partial
/// derivative, any `f64` but a signalling NaN of the tags below (the store quiets every NaN it
/// is given), or a tag in the top 16 bits, a signalling-NaN pattern, with a 48-bit payload.
mod word {
    /// A [`super::Rec::Scalar1`] whose input is not the node just before: the payload is the
    /// input, the partial is the word before.
    pub(super) const INPUT: u64 = 0x7FF1;
    /// A [`super::Rec::Pair`]: the payload is the input, the partial is the word before.
    pub(super) const PAIR: u64 = 0x7FF2;
    /// A [`super::Rec::Scalar2`]: the payload is the input, the partial is the word before.
    pub(super) const INPUT2: u64 = 0x7FF3;
    /// A leaf continuing the serial in the payload.
    pub(super) const LEAF: u64 = 0x7FF4;
    /// A leaf without an origin.
    pub(super) const ROOT: u64 = 0x7FF5;
    /// A [`super::Rec::General`]: the payload is the operation's index.
    pub(super) const GENERAL: u64 = 0x7FF6;
    pub(super) const SHIFT: u32 = 48;
    pub(super) const PAYLOAD: u64 = (1 << SHIFT) - 1;

    /// The tag of a word, `None` for a partial derivative.
    #[inline(always)]
    pub(super) fn tag(word: u64) -> Option<u64> {
        let top = word >> SHIFT;
        (top.wrapping_sub(INPUT) <= GENERAL - INPUT).then_some(top)
    }

    /// A tagged word.
    #[inline(always)]
    pub(super) fn tagged(tag: u64, payload: u64) -> u64 {
        debug_assert!(payload <= PAYLOAD);
        (tag << SHIFT) | (payload & PAYLOAD)
    }

    /// The word of a partial derivative: its bits, with a NaN made the one quiet NaN so that it
    /// is never read as a tag.
    #[inline(always)]
    pub(super) fn partial(value: f64) -> u64 {
        if value.is_nan() { f64::NAN.to_bits() } else { value.to_bits() }
    }
}

/// The records of one level as 8-byte words in chunks of [`RecStore::CHUNK`] words, so that a
/// growing recording never copies what it holds (a copy would also fault in fresh memory for all
/// of it, which costs more than the copy itself on machines where first touches are slow).
///
/// A record takes one or two words and ends with its node's word, so a node's tape index is the
/// position of its last word and the store reads backward from any node:
///
/// - a [`Rec::Scalar1`] whose input is the node just before it (a chain such as a loop's
///   `x = f(x)`) is one word, its partial derivative; any other takes two, the partial and then
///   the input under a tag;
/// - a [`Rec::Pair`] and a [`Rec::Scalar2`] take two words each, the partial and then the input;
/// - a [`Rec::Leaf`] and a [`Rec::General`] take one tagged word.
///
/// A loop of scalar operations that fuse into one record an iteration thus takes 8 bytes an
/// iteration.
#[derive(Debug, Default)]
pub(crate) struct RecStore {
    /// Chunk `k` holds words `k * CHUNK` to `(k + 1) * CHUNK`; every word below `len` has been
    /// written, which is what lets [`RecStore::word`] read it. The chunks past the last word are
    /// kept for reuse.
    chunks: Vec<Chunk>,
    len: usize,
}

impl RecStore {
    const CHUNK_BITS: u32 = chunk::BITS;
    /// Words per chunk (64 KiB).
    pub(crate) const CHUNK: usize = chunk::WORDS;
    /// The most words a record takes.
    pub(crate) const MAX_WORDS: usize = 2;

    /// The number of words.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many words fit without a new chunk.
    pub(crate) fn capacity(&self) -> usize {
        self.chunks.len() * Self::CHUNK
    }

    /// The word at `index`, if it is below the length: one comparison, because the invariant
    /// of the `chunks` field makes every index below the length a written word.
    #[inline(always)]
    fn word(&self, index: usize) -> Option<u64> {
        if index >= self.len {
            return None;
        }
        debug_assert!(index >> Self::CHUNK_BITS < self.chunks.len());
        // SAFETY: the word is below the length, so its chunk exists and the word was written.
        Some(unsafe {
            self.chunks.get_unchecked(index >> Self::CHUNK_BITS)[index & (Self::CHUNK - 1)]
                .assume_init()
        })
    }

    /// [`RecStore::word`], for writing.
    #[inline(always)]
    fn word_mut(&mut self, index: usize) -> Option<&mut u64> {
        if index >= self.len {
            return None;
        }
        debug_assert!(index >> Self::CHUNK_BITS < self.chunks.len());
        // SAFETY: as in `word`.
        Some(unsafe {
            self.chunks.get_unchecked_mut(index >> Self::CHUNK_BITS)[index & (Self::CHUNK - 1)]
                .assume_init_mut()
        })
    }

    /// The written words of the chunk holding word `index` and the position of the first, for a
    /// caller reading many words in a row; `None` when `index` is past the end.
    pub(crate) fn chunk_of(&self, index: usize) -> Option<(&[u64], usize)> {
        if index >= self.len {
            return None;
        }
        let start = index & !(Self::CHUNK - 1);
        let chunk = self.chunks.get(index >> Self::CHUNK_BITS)?;
        let written = &chunk[..(self.len - start).min(Self::CHUNK)];
        // SAFETY: the words below the length were written, and `MaybeUninit<u64>` has the layout
        // of `u64`.
        let words = unsafe { &*(written as *const [MaybeUninit<u64>] as *const [u64]) };
        Some((words, start))
    }

    /// The partial derivative a word holds if it is a one-word [`Rec::Scalar1`] (a chain, whose
    /// input is the node before it) when it is a record's last word.
    #[inline(always)]
    pub(crate) fn chain_partial(word: u64) -> Option<f64> {
        word::tag(word).is_none().then(|| f64::from_bits(word))
    }

    /// The record whose last word is at `index` and the position of its first word; `None` when
    /// `index` is past the end or its words are not a record.
    #[inline(always)]
    pub(crate) fn rec(&self, index: usize) -> Option<(Rec, usize)> {
        let word = self.word(index)?;
        let Some(tag) = word::tag(word) else {
            let x = u32::try_from(index.checked_sub(1)?).ok()?;
            return Some((Rec::Scalar1 { x, dx: f64::from_bits(word) }, index));
        };
        let payload = word & word::PAYLOAD;
        let input = payload as u32;
        let partial = || -> Option<(f64, usize)> {
            let start = index.checked_sub(1)?;
            let partial = self.word(start)?;
            word::tag(partial).is_none().then_some((f64::from_bits(partial), start))
        };
        Some(match tag {
            word::INPUT => {
                let (dx, start) = partial()?;
                (Rec::Scalar1 { x: input, dx }, start)
            }
            word::PAIR => {
                let (da, start) = partial()?;
                (Rec::Pair { a: input, da }, start)
            }
            word::INPUT2 => {
                let (db, start) = partial()?;
                (Rec::Scalar2 { b: input, db }, start)
            }
            word::LEAF => (Rec::Leaf { origin: payload }, index),
            word::ROOT => (Rec::Leaf { origin: Rec::NO_ORIGIN }, index),
            _ => (Rec::General { op: input }, index),
        })
    }

    /// Whether a [`Rec::Scalar1`] of `input` starting at position `at` is a chain: one word,
    /// its input the node just before.
    #[inline(always)]
    fn is_chain(input: u32, at: usize) -> bool {
        input as usize + 1 == at
    }

    /// How many words `rec` takes when written from position `at`.
    #[inline(always)]
    pub(crate) fn words(rec: &Rec, at: usize) -> usize {
        match *rec {
            Rec::Scalar1 { x, .. } if Self::is_chain(x, at) => 1,
            Rec::Scalar1 { .. } | Rec::Pair { .. } | Rec::Scalar2 { .. } => 2,
            Rec::Leaf { .. } | Rec::General { .. } => 1,
        }
    }

    /// Appends `rec` and returns the position of its last word (its node). The caller made room
    /// for [`RecStore::MAX_WORDS`] words ([`RecStore::reserve`]) and keeps every position and
    /// serial within 48 bits (see `Records::fit_room`).
    #[inline(always)]
    pub(crate) fn push_rec(&mut self, rec: Rec) -> usize {
        match rec {
            Rec::Scalar1 { x, dx } if Self::is_chain(x, self.len) => self.push(word::partial(dx)),
            Rec::Scalar1 { x, dx } => self.push_with_partial(word::INPUT, x, dx),
            Rec::Pair { a, da } => self.push_with_partial(word::PAIR, a, da),
            Rec::Scalar2 { b, db } => self.push_with_partial(word::INPUT2, b, db),
            Rec::Leaf { origin: Rec::NO_ORIGIN } => self.push(word::tagged(word::ROOT, 0)),
            Rec::Leaf { origin } => self.push(word::tagged(word::LEAF, origin)),
            Rec::General { op } => self.push(word::tagged(word::GENERAL, u64::from(op))),
        }
        self.len - 1
    }

    #[inline(always)]
    fn push_with_partial(&mut self, tag: u64, input: u32, partial: f64) {
        self.push(word::partial(partial));
        self.push(word::tagged(tag, u64::from(input)));
    }

    /// Multiplies the partial derivatives of the scalar record whose node is at `index` (a
    /// [`Rec::Scalar1`], or a [`Rec::Scalar2`] and its [`Rec::Pair`]) by `factor`; `false` (and
    /// nothing changed) when that record is something else.
    #[inline(always)]
    pub(crate) fn scale_partials(&mut self, index: usize, factor: f64) -> bool {
        // Each record's partial is its first word.
        let starts = match self.rec(index) {
            Some((Rec::Scalar1 { .. }, start)) => [Some(start), None],
            Some((Rec::Scalar2 { .. }, start)) => match start.checked_sub(1).map(|i| self.rec(i)) {
                Some(Some((Rec::Pair { .. }, pair))) => [Some(pair), Some(start)],
                _ => return false,
            },
            _ => return false,
        };
        for at in starts.into_iter().flatten() {
            if let Some(slot) = self.word_mut(at) {
                *slot = word::partial(f64::from_bits(*slot) * factor);
            }
        }
        true
    }

    /// How many chunks hold words.
    #[cfg(test)]
    pub(crate) fn chunks_used(&self) -> usize {
        self.len.div_ceil(Self::CHUNK)
    }

    /// The address of each chunk, to check that allocations are reused.
    #[cfg(test)]
    pub(crate) fn chunk_addresses(&self) -> Vec<*const MaybeUninit<u64>> {
        self.chunks.iter().map(|chunk| chunk.as_ptr()).collect()
    }

    /// Appends a word; the caller made room ([`RecStore::reserve`]), or a chunk is allocated.
    #[inline(always)]
    fn push(&mut self, word: u64) {
        let index = self.len;
        match self.chunks.get_mut(index >> Self::CHUNK_BITS) {
            Some(chunk) => {
                chunk[index & (Self::CHUNK - 1)].write(word);
            }
            None => self.push_to_new_chunk(word),
        }
        self.len += 1;
    }

    #[cold]
    #[inline(never)]
    fn push_to_new_chunk(&mut self, word: u64) {
        let layout = std::alloc::Layout::new::<[u64; Self::CHUNK]>();
        let mut chunk = chunk::allocate().unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        chunk[0].write(word);
        self.chunks.push(chunk);
    }

    /// Makes room for `more` words, one chunk at a time, taking chunks from `free` before
    /// allocating; errors when memory runs out.
    pub(crate) fn reserve(
        &mut self,
        more: usize,
        free: &mut Vec<Chunk>,
    ) -> Result<(), super::AdError> {
        let full = || super::AdError::from(super::AdErrorKind::TapeFull);
        while self.len + more > self.capacity() {
            self.chunks.try_reserve(1).map_err(|_| full())?;
            self.chunks.push(chunk::reuse_or_allocate(free).ok_or_else(full)?);
        }
        Ok(())
    }

    /// Gives every chunk after the one holding word `index` to the tape's free list, and with
    /// them the words they held: a backward pass that has read every record past `index` hands
    /// their memory on (see [`chunk`]).
    pub(crate) fn give_back_after(&mut self, index: usize, tape: &mut super::Tape) {
        self.give_back_from((index >> Self::CHUNK_BITS) + 1, tape);
    }

    /// Gives chunk `first` and every chunk after it to the tape's free list, with their words.
    pub(crate) fn give_back_from(&mut self, first: usize, tape: &mut super::Tape) {
        if self.chunks.len() > first {
            self.chunks.drain(first..).for_each(|words| tape.give_chunk(words));
            self.len = self.len.min(first * Self::CHUNK);
        }
    }

    /// Forgets the words from `len` on, keeping the chunks.
    #[inline(always)]
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Forgets every word, keeping the chunks.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
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
    /// Forgets every record, keeping the allocations for the next recording of the level, which
    /// starts at serial `base`: past the forgotten serials, so that boxes naming them are stale
    /// from now on. (The recording's own length no longer tells where it ended once a backward
    /// pass has given its chunks back.)
    pub(crate) fn release(&mut self, base: u64) {
        self.base = base;
        self.fit_room();
        self.ops.clear();
        self.general.clear();
        self.values.clear();
        self.kinds.clear();
        self.extras.clear();
        self.saved_bytes = 0;
    }

    /// Recomputes `room_end` from the capacity and `base`: a record may start at position `len`
    /// and take `words` words when `len + words <= room_end`, which keeps every position below
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

    /// Whether a scalar record of `words` words fits after the last one; see
    /// [`Records::fit_room`].
    #[inline(always)]
    pub(crate) fn has_room(&self, words: usize) -> bool {
        debug_assert_eq!(self.room_end, self.current_room_end(), "a stale room_end");
        self.ops.len() + words <= self.room_end
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
        self.ops.capacity() * size_of::<u64>()
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
        store.reserve(n, &mut Vec::new()).unwrap();
        assert_eq!(store.capacity(), chunk * 3);
        store.push_rec(Rec::Leaf { origin: Rec::NO_ORIGIN });
        for i in 1..n {
            assert_eq!(store.push_rec(Rec::Scalar1 { x: i as u32 - 1, dx: 1.0 }), i);
        }
        assert_eq!((store.len(), store.chunks_used()), (n, 3));
        let rec = Rec::Scalar1 { x: chunk as u32, dx: 1.0 };
        assert_eq!(store.rec(chunk + 1), Some((rec, chunk + 1)));
        store.truncate(chunk - 1);
        assert_eq!((store.len(), store.chunks_used()), (chunk - 1, 1));
        assert!(store.rec(chunk).is_none() && store.rec(chunk - 2).is_some());
        store.clear();
        assert!(store.is_empty() && store.chunks_used() == 0);
        assert_eq!(store.capacity(), chunk * 3, "the chunks are kept for reuse");
    }

    #[test]
    fn every_record_reads_back_as_written() {
        let mut store = RecStore::default();
        store.reserve(32, &mut Vec::new()).unwrap();
        let records = [
            Rec::Leaf { origin: Rec::NO_ORIGIN },
            Rec::Leaf { origin: crate::value::NodeRef::MAX_SERIAL },
            // A chain (the input is the node just before): one word.
            Rec::Scalar1 { x: 1, dx: -0.5 },
            // Not a chain: two words.
            Rec::Scalar1 { x: 0, dx: f64::INFINITY },
            Rec::Pair { a: 2, da: 0.25 },
            Rec::Scalar2 { b: 0, db: -0.0 },
            Rec::General { op: u32::MAX },
            Rec::Scalar1 { x: 9, dx: 3.0 },
        ];
        let mut nodes = Vec::new();
        for rec in records {
            let start = store.len();
            let words = RecStore::words(&rec, store.len());
            let node = store.push_rec(rec);
            assert_eq!(node + 1 - start, words, "{rec:?}");
            nodes.push((node, start));
        }
        assert_eq!(store.len(), 11);
        for (rec, (node, start)) in records.into_iter().zip(nodes) {
            assert_eq!(store.rec(node), Some((rec, start)));
        }
        // A NaN partial, even one with the bits of a tag, is stored as the quiet NaN.
        let tagged = f64::from_bits(word::tagged(word::GENERAL, 7));
        for nan in [f64::NAN, -f64::NAN, tagged] {
            let node = store.push_rec(Rec::Scalar1 { x: 0, dx: nan });
            let Some((Rec::Scalar1 { x: 0, dx }, _)) = store.rec(node) else { panic!("{nan}") };
            assert_eq!(dx.to_bits(), f64::NAN.to_bits());
        }
        // Scaling partials in place, for a one-word and a two-word `Scalar1` and for a `Scalar2`
        // with its `Pair`, and for nothing else.
        assert!(store.scale_partials(2, 2.0) && store.scale_partials(4, -1.0));
        assert_eq!(store.rec(2).map(|(rec, _)| rec), Some(Rec::Scalar1 { x: 1, dx: -1.0 }));
        let dx = f64::NEG_INFINITY;
        assert_eq!(store.rec(4).map(|(rec, _)| rec), Some(Rec::Scalar1 { x: 0, dx }));
        assert!(store.scale_partials(8, -4.0));
        assert_eq!(store.rec(6).map(|(rec, _)| rec), Some(Rec::Pair { a: 2, da: -1.0 }));
        assert_eq!(store.rec(8).map(|(rec, _)| rec), Some(Rec::Scalar2 { b: 0, db: 0.0 }));
        assert!([0, 6, 9].iter().all(|&node| !store.scale_partials(node, 2.0)));
    }

    #[test]
    fn records_are_small() {
        assert!(size_of::<Op>() <= 32, "{}", size_of::<Op>());
        assert!(!std::mem::needs_drop::<Op>(), "releasing a recording must not visit records");
        assert!(!std::mem::needs_drop::<Rec>());
    }
}
