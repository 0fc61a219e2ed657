//! How a level's records are stored: the compact encoding behind [`RecStore::push`] and
//! [`RecStore::get`], which take and give [`Op`]s.
//!
//! Most records of a scalar program are [`Op::Leaf`], [`Op::Scalar1`] and [`Op::Scalar2`], and a
//! loop records millions of them, so those three are packed into 8-byte words: a chain (a
//! `Scalar1` whose input is the node just before, such as a loop's `x = f(x)`) is one word, its
//! partial derivative. Every other operation is kept whole in an arena beside the words and named
//! by one tagged word. The encoding pays in memory: an `Op` value takes 80 bytes, so a store of
//! `Op`s would take 80 bytes per scalar record where this one takes 8 (a chain, as in the loop
//! `x = x + one`) to 32 (a two-input record), and the 10^7-step sin loop of
//! `cargo xtask bench autodiff`, whose whole recording takes 80 MB here (one word a step, see the
//! "tape memory per recorded scalar op" rows of `docs/performance.md`), would take 800 MB.
//!
//! It pays in time as well. Measured 2026-11-27 against the same tape with this store replaced by
//! a plain `Vec<Op>` (one `Op` a record, read and scaled in place, no chunks given to the
//! adjoints; the patch is kept with the closing note of issue 23), outputs identical:
//!
//! | program (`bench/autodiff/`) | `Vec<Op>` | this store |
//! |---|---|---|
//! | `x * a + sin(x) * b` gradient, 10^6 steps: instructions | 921 M | 835 M |
//! | the same, a repetition in one process: instructions | 901 M | 825 M |
//! | `x = x + one` gradient, 10^6 steps: instructions | 276 M | 211 M |
//! | the sin loop, 10^6 steps: time, peak memory | 0.30 s, 196 MB | 0.11 s, 32 MB |
//! | the sin loop, 10^7 steps: time, peak memory | 7.38 s, 2.1 GB | 0.91 s, 126 MB |
//!
//! Times are the best of three runs of `nabla run` on a machine shared with two builds, memory
//! the peak resident set. The MLP training step, with few records, runs the same instructions and
//! memory with either (672 M, 36 MB). So the encoding stays: its words take 9-24% fewer
//! instructions than 80-byte values, and a store of `Op`s takes three to eight times as long,
//! most of it in memory: ten times the bytes to fault in, copied as the `Vec` grows.
//!
//! The words live in 64 KiB chunks shared with the adjoint store (see `chunk`), which is what
//! lets a backward pass write adjoints into memory it has read records from.

use std::borrow::Cow;
use std::mem::{ManuallyDrop, MaybeUninit};

use super::chunk::{self, Chunk};
use super::op::Op;
use crate::value::NodeRef;

/// How records are laid out in 8-byte words (see [`RecStore`]): a word is either a partial
/// derivative, any `f64` but a signalling NaN of the tags below (the store quiets every NaN it
/// is given), or a tag in the top 16 bits, a signalling-NaN pattern, with a 48-bit payload.
mod word {
    /// An [`Op::Scalar1`](super::Op::Scalar1) whose input is not the node just before: the
    /// payload is the input, the partial is the word before.
    pub(super) const INPUT: u64 = 0x7FF1;
    /// The first input of an [`Op::Scalar2`](super::Op::Scalar2), in the two words before its
    /// second: the payload is the input, the partial is the word before.
    pub(super) const PAIR: u64 = 0x7FF2;
    /// The second input of an [`Op::Scalar2`](super::Op::Scalar2), its last word: the payload is
    /// the input, the partial is the word before.
    pub(super) const INPUT2: u64 = 0x7FF3;
    /// A leaf continuing the serial in the payload.
    pub(super) const LEAF: u64 = 0x7FF4;
    /// A leaf without an origin.
    pub(super) const ROOT: u64 = 0x7FF5;
    /// Any other operation: the payload is its index in the arena.
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

/// A scalar record as [`RecStore::scalar`] reads it: the fields of an [`Op::Scalar1`] or an
/// [`Op::Scalar2`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar {
    One { x: u32, dx: f64 },
    Two { a: u32, da: f64, b: u32, db: f64 },
}

/// The records of one level as 8-byte words in chunks of [`RecStore::CHUNK`] words, so that a
/// growing recording never copies what it holds (a copy would also fault in fresh memory for all
/// of it, which costs more than the copy itself on machines where first touches are slow), and
/// an arena of the operations that are not scalar.
///
/// A record takes one to four words and ends with its node's word, so a node's tape index is the
/// position of its last word and the store reads backward from any node:
///
/// - an [`Op::Scalar1`] whose input is the node just before it (a chain) is one word, its partial
///   derivative; any other takes two, the partial and then the input under a tag;
/// - an [`Op::Scalar2`] takes four: the first input's partial and tagged input, then the
///   second's;
/// - an [`Op::Leaf`] and every other operation take one tagged word.
///
/// A loop of scalar operations that make one record an iteration thus takes 8 bytes an
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
    pub(crate) const MAX_WORDS: usize = 4;

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

    /// The partial derivative a word holds if it is a one-word [`Op::Scalar1`] (a chain, whose
    /// input is the node before it) when it is a record's last word.
    #[inline(always)]
    pub(crate) fn chain_partial(word: u64) -> Option<f64> {
        word::tag(word).is_none().then(|| f64::from_bits(word))
    }

    /// The record whose node is at `index` and the position of its first word, with the other
    /// operations in `general`; `None` when `index` is past the end or is not a node.
    #[inline(always)]
    pub(crate) fn get<'g>(&self, general: &'g [Op], index: usize) -> Option<(Cow<'g, Op>, usize)> {
        let word = self.word(index)?;
        let payload = word & word::PAYLOAD;
        Some(match word::tag(word) {
            None | Some(word::INPUT | word::INPUT2) => {
                let (scalar, start) = self.scalar(index)?;
                let op = match scalar {
                    Scalar::One { x, dx } => Op::Scalar1 { x, dx },
                    Scalar::Two { a, da, b, db } => Op::Scalar2 { a, da, b, db },
                };
                (Cow::Owned(op), start)
            }
            Some(word::LEAF) => (Cow::Owned(Op::Leaf { origin: Some(payload) }), index),
            Some(word::ROOT) => (Cow::Owned(Op::Leaf { origin: None }), index),
            Some(word::GENERAL) => (Cow::Borrowed(general.get(payload as usize)?), index),
            _ => return None,
        })
    }

    /// The scalar record (an [`Op::Scalar1`] or [`Op::Scalar2`]) whose node is at `index`, with
    /// the position of its first word; `None` when `index` is
    /// past the end, is not a node or is another record. [`RecStore::get`] for the recording
    /// path, which fuses the scalar record at the end: no [`Op`] is built (and none dropped).
    #[inline(always)]
    pub(crate) fn scalar(&self, index: usize) -> Option<(Scalar, usize)> {
        let word = self.word(index)?;
        let Some(tag) = word::tag(word) else {
            let x = u32::try_from(index.checked_sub(1)?).ok()?;
            return Some((Scalar::One { x, dx: f64::from_bits(word) }, index));
        };
        let payload = word & word::PAYLOAD;
        match tag {
            word::INPUT => {
                let (dx, start) = self.partial_before(index)?;
                Some((Scalar::One { x: payload as u32, dx }, start))
            }
            word::INPUT2 => {
                let (db, second) = self.partial_before(index)?;
                let pair = self.word(second.checked_sub(1)?)?;
                if word::tag(pair) != Some(word::PAIR) {
                    return None;
                }
                let (da, start) = self.partial_before(second - 1)?;
                let a = (pair & word::PAYLOAD) as u32;
                Some((Scalar::Two { a, da, b: payload as u32, db }, start))
            }
            _ => None,
        }
    }

    /// The partial derivative in the word before the tagged word at `index`, and its position.
    #[inline(always)]
    fn partial_before(&self, index: usize) -> Option<(f64, usize)> {
        let start = index.checked_sub(1)?;
        let partial = self.word(start)?;
        word::tag(partial).is_none().then_some((f64::from_bits(partial), start))
    }

    /// Whether an [`Op::Scalar1`] of `input` starting at position `at` is a chain: one word,
    /// its input the node just before.
    #[inline(always)]
    fn is_chain(input: u32, at: usize) -> bool {
        input as usize + 1 == at
    }

    /// How many words `op` takes when written from position `at`.
    #[inline(always)]
    pub(crate) fn words(op: &Op, at: usize) -> usize {
        match *op {
            Op::Scalar1 { x, .. } if Self::is_chain(x, at) => 1,
            Op::Scalar1 { .. } => 2,
            Op::Scalar2 { .. } => 4,
            _ => 1,
        }
    }

    /// Appends `op`, putting an operation other than a leaf or a scalar one into `general`, and
    /// returns the position of its last word (its node). The caller keeps every position and
    /// serial within 48 bits (see `Records::fit_room`).
    ///
    /// # Safety
    /// The caller made room for the record: `len() + RecStore::words(&op, len()) <= capacity()`
    /// ([`RecStore::reserve`], or [`Records::has_room`] for [`RecStore::MAX_WORDS`]), so that
    /// every word written lands in a chunk the store holds.
    #[inline(always)]
    pub(crate) unsafe fn push(&mut self, general: &mut Vec<Op>, op: Op) -> usize {
        debug_assert!(self.len + Self::words(&op, self.len) <= self.capacity(), "no room");
        // The words copy what they need out of a leaf or a scalar record, which own nothing, so
        // only an arena operation is moved and nothing is dropped: the recording fast path then
        // has no call to the drop glue of `Op`.
        let op = ManuallyDrop::new(op);
        match *op {
            Op::Scalar1 { x, dx } if Self::is_chain(x, self.len) => {
                self.push_word(word::partial(dx))
            }
            Op::Scalar1 { x, dx } => self.push_with_partial(word::INPUT, x, dx),
            Op::Scalar2 { a, da, b, db } => {
                self.push_with_partial(word::PAIR, a, da);
                self.push_with_partial(word::INPUT2, b, db);
            }
            Op::Leaf { origin: None } => self.push_word(word::tagged(word::ROOT, 0)),
            Op::Leaf { origin: Some(origin) } => self.push_word(word::tagged(word::LEAF, origin)),
            _ => {
                let index = general.len() as u64;
                general.push(ManuallyDrop::into_inner(op));
                self.push_word(word::tagged(word::GENERAL, index));
            }
        }
        self.len - 1
    }

    #[inline(always)]
    fn push_with_partial(&mut self, tag: u64, input: u32, partial: f64) {
        self.push_word(word::partial(partial));
        self.push_word(word::tagged(tag, u64::from(input)));
    }

    /// Multiplies the partial derivatives of the scalar record whose node is at `index` (an
    /// [`Op::Scalar1`] or [`Op::Scalar2`]) by `factor`; `false` (and nothing changed) when that
    /// record is something else.
    #[inline(always)]
    pub(crate) fn scale_partials(&mut self, index: usize, factor: f64) -> bool {
        // Each input's partial is the first of its two words (or the chain's only word).
        let (start, two) = match self.scalar(index) {
            Some((Scalar::One { .. }, start)) => (start, false),
            Some((Scalar::Two { .. }, start)) => (start, true),
            None => return false,
        };
        self.scale_word(start, factor);
        if two {
            self.scale_word(start + 2, factor);
        }
        true
    }

    /// Multiplies the partial derivative in the word at `at` by `factor`.
    #[inline(always)]
    fn scale_word(&mut self, at: usize, factor: f64) {
        if let Some(slot) = self.word_mut(at) {
            *slot = word::partial(f64::from_bits(*slot) * factor);
        }
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

    /// Appends a word of a record that [`RecStore::push`] writes.
    #[inline(always)]
    fn push_word(&mut self, word: u64) {
        let index = self.len;
        debug_assert!(index < self.capacity());
        // SAFETY: `index` is below the capacity, because the caller of `RecStore::push` made room
        // for the record (its safety contract), so chunk `index >> CHUNK_BITS` exists.
        let chunk = unsafe { self.chunks.get_unchecked_mut(index >> Self::CHUNK_BITS) };
        chunk[index & (Self::CHUNK - 1)].write(word);
        self.len += 1;
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

    /// Forgets the words from `len` on, keeping the chunks; for the fusion of scalar records at
    /// the end, so the words forgotten are never an arena operation's.
    #[inline(always)]
    pub(crate) fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Forgets every word, keeping the chunks.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }
}

/// The recording of one level: its records in order (already topological). `base` is the serial
/// of the first record.
#[derive(Debug, Default)]
pub(crate) struct Records {
    /// Whoever changes `base` or the capacity of `ops` calls [`Records::fit_room`] after.
    pub(crate) base: u64,
    pub(crate) ops: RecStore,
    /// Scalar records may take the positions below this one without growing `ops` and without a
    /// node index or serial outgrowing an [`Arg`](super::op::Arg) or a [`NodeRef`] (see [`Records::fit_room`]), so
    /// the recording fast path checks its room with one comparison.
    pub(crate) room_end: usize,
    /// The operations other than leaves and scalar ones, named by their words in `ops`.
    pub(crate) general: Vec<Op>,
    /// The bytes of the tensors the records keep alive (see [`Op::saved_bytes`]).
    pub(crate) saved_bytes: usize,
    /// Whether every scalar record takes the tape's out-of-line path (`room_end` stays 0), so
    /// that a tape with a log notes it: set by the tape when it makes room (see
    /// [`Tape::traced`](super::Tape::traced)).
    pub(crate) slow: bool,
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
        if self.slow {
            return 0;
        }
        let serials_left = (NodeRef::MAX_SERIAL + 1).saturating_sub(self.base);
        let serials_left = usize::try_from(serials_left).unwrap_or(usize::MAX);
        self.ops.capacity().min(u32::MAX as usize - 3).min(serials_left)
    }

    /// Appends `op` and returns its node's position.
    ///
    /// # Safety
    /// As for [`RecStore::push`]: the caller made room for the record.
    #[inline(always)]
    pub(crate) unsafe fn push(&mut self, op: Op) -> usize {
        // SAFETY: the caller's contract is the store's.
        unsafe { self.ops.push(&mut self.general, op) }
    }

    /// The record whose node is at `index` and the position of its first word.
    #[inline(always)]
    pub(crate) fn get(&self, index: usize) -> Option<(Cow<'_, Op>, usize)> {
        self.ops.get(&self.general, index)
    }

    /// Whether a scalar record of `words` words fits after the last one; see
    /// [`Records::fit_room`].
    #[inline(always)]
    pub(crate) fn has_room(&self, words: usize) -> bool {
        debug_assert_eq!(self.room_end, self.current_room_end(), "a stale room_end");
        self.ops.len() + words <= self.room_end
    }

    /// The bytes the recording takes (its allocations and the tensors it saved), for the
    /// allocation limit.
    pub(crate) fn bytes(&self) -> usize {
        self.ops.capacity() * size_of::<u64>()
            + self.general.capacity() * size_of::<Op>()
            + self.saved_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record at `node` as text, with where it starts.
    fn read(store: &RecStore, node: usize) -> Option<(String, usize)> {
        store.get(&[], node).map(|(op, start)| (format!("{op:?}"), start))
    }

    #[test]
    fn the_store_grows_by_chunks_and_forgets_from_the_end() {
        let chunk = RecStore::CHUNK;
        let mut store = RecStore::default();
        let n = chunk * 2 + 5;
        store.reserve(n, &mut Vec::new()).unwrap();
        assert_eq!(store.capacity(), chunk * 3);
        let general = &mut Vec::new();
        // SAFETY: room for `n` words was reserved, and each record takes one (a leaf, chains).
        unsafe { store.push(general, Op::Leaf { origin: None }) };
        for i in 1..n {
            // SAFETY: as above.
            let node = unsafe { store.push(general, Op::Scalar1 { x: i as u32 - 1, dx: 1.0 }) };
            assert_eq!(node, i);
        }
        assert_eq!((store.len(), store.chunks_used()), (n, 3));
        let expected = format!("{:?}", Op::Scalar1 { x: chunk as u32, dx: 1.0 });
        assert_eq!(read(&store, chunk + 1), Some((expected, chunk + 1)));
        store.truncate(chunk - 1);
        assert_eq!((store.len(), store.chunks_used()), (chunk - 1, 1));
        assert!(store.get(&[], chunk).is_none() && store.get(&[], chunk - 2).is_some());
        store.clear();
        assert!(store.is_empty() && store.chunks_used() == 0);
        assert_eq!(store.capacity(), chunk * 3, "the chunks are kept for reuse");
    }

    #[test]
    fn every_record_reads_back_as_written() {
        let mut records = Records::default();
        records.ops.reserve(32, &mut Vec::new()).unwrap();
        let ops = [
            Op::Leaf { origin: None },
            Op::Leaf { origin: Some(NodeRef::MAX_SERIAL) },
            // A chain (the input is the node just before): one word.
            Op::Scalar1 { x: 1, dx: -0.5 },
            // Not a chain: two words.
            Op::Scalar1 { x: 0, dx: f64::INFINITY },
            Op::Scalar2 { a: 2, da: 0.25, b: 0, db: -0.0 },
            Op::Transpose { x: 7 },
            Op::Scalar1 { x: 9, dx: 3.0 },
        ];
        let mut nodes = Vec::new();
        for op in ops.clone() {
            let start = records.ops.len();
            let words = RecStore::words(&op, start);
            // SAFETY: room for 32 words was reserved, and the records take 11.
            let node = unsafe { records.push(op.clone()) };
            assert_eq!(node + 1 - start, words, "{op:?}");
            nodes.push((node, start));
        }
        assert_eq!(records.ops.len(), 11);
        for (op, (node, start)) in ops.into_iter().zip(nodes) {
            let read = records.get(node).map(|(op, start)| (format!("{op:?}"), start));
            assert_eq!(read, Some((format!("{op:?}"), start)));
        }
        // The first input of a pair is not a node.
        assert!(records.get(6).is_none());
        let store = &mut records.ops;
        // A NaN partial, even one with the bits of a tag, is stored as the quiet NaN.
        let tagged = f64::from_bits(word::tagged(word::GENERAL, 7));
        for nan in [f64::NAN, -f64::NAN, tagged] {
            // SAFETY: 11 of the 32 words reserved are taken, and these take two each.
            let node = unsafe { store.push(&mut Vec::new(), Op::Scalar1 { x: 0, dx: nan }) };
            let Some((Cow::Owned(Op::Scalar1 { x: 0, dx }), _)) = store.get(&[], node) else {
                panic!("{nan}")
            };
            assert_eq!(dx.to_bits(), f64::NAN.to_bits());
        }
        // Scaling partials in place, for a one-word and a two-word `Scalar1` and for a `Scalar2`,
        // and for nothing else.
        assert!(store.scale_partials(2, 2.0) && store.scale_partials(4, -1.0));
        let dx = f64::NEG_INFINITY;
        assert_eq!(read(store, 2).unwrap().0, format!("{:?}", Op::Scalar1 { x: 1, dx: -1.0 }));
        assert_eq!(read(store, 4).unwrap().0, format!("{:?}", Op::Scalar1 { x: 0, dx }));
        assert!(store.scale_partials(8, -4.0));
        let scaled = Op::Scalar2 { a: 2, da: -1.0, b: 0, db: 0.0 };
        assert_eq!(read(store, 8).unwrap().0, format!("{scaled:?}"));
        assert!([0, 6, 9].iter().all(|&node| !store.scale_partials(node, 2.0)));
    }
}
