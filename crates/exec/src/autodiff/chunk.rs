//! The fixed blocks of memory the tape's records and the adjoint store are made of: 64 KiB
//! chunks of 8-byte words, handed between the two through the tape's free list.
//!
//! One block size for both is what lets a backward pass of the program tape write the adjoints
//! into memory it has just read the records from: each chunk of records it has walked past goes
//! to the free list, and the adjoint store takes its chunks from there. A long recording then
//! faults in fresh memory once, for its records, rather than again for as many adjoints; on
//! machines where a first touch of a page is slow, that is most of what a cold backward pass
//! costs beyond its arithmetic.
//!
//! This module knows blocks of words, not what records or adjoints are.

use std::mem::MaybeUninit;

/// log2 of [`WORDS`].
pub(crate) const BITS: u32 = 13;
/// Words per chunk (64 KiB).
pub(crate) const WORDS: usize = 1 << BITS;
/// The position of a word within its chunk.
pub(crate) const MASK: usize = WORDS - 1;

/// A chunk of words, not necessarily written.
pub(crate) type Chunk = Box<[MaybeUninit<u64>; WORDS]>;

/// A chunk whose every word is a written `f64`.
pub(crate) type Numbers = Box<[f64; WORDS]>;

/// A new chunk; `None` when memory runs out.
pub(crate) fn allocate() -> Option<Chunk> {
    let mut words = Vec::new();
    words.try_reserve_exact(WORDS).ok()?;
    // SAFETY: the capacity is `WORDS`, and the elements need no initialisation.
    unsafe { words.set_len(WORDS) };
    words.into_boxed_slice().try_into().ok()
}

/// A chunk from `free`, or a new one; `None` when memory runs out.
pub(crate) fn reuse_or_allocate(free: &mut Vec<Chunk>) -> Option<Chunk> {
    free.pop().or_else(allocate)
}

/// `chunk` with every word set to `value`.
pub(crate) fn filled(chunk: Chunk, value: f64) -> Numbers {
    let raw = Box::into_raw(chunk);
    // SAFETY: `raw` is the unique pointer of a live box. Every word is written before the cast,
    // and `[f64; WORDS]` has the size and alignment of `[MaybeUninit<u64>; WORDS]`, so the box
    // rebuilt from it frees the same allocation with the same layout.
    unsafe {
        for word in (*raw).iter_mut() {
            word.write(value.to_bits());
        }
        Box::from_raw(raw.cast::<[f64; WORDS]>())
    }
}

/// The chunk of `numbers`, to be written again from scratch.
pub(crate) fn emptied(numbers: Numbers) -> Chunk {
    // SAFETY: the same layout (see `filled`), and a `MaybeUninit` may hold any bits.
    unsafe { Box::from_raw(Box::into_raw(numbers).cast::<[MaybeUninit<u64>; WORDS]>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_round_trips_through_numbers() {
        let chunk = allocate().unwrap();
        let address = chunk.as_ptr() as usize;
        let numbers = filled(chunk, 2.5);
        assert!(numbers.iter().all(|&x| x == 2.5));
        assert_eq!(numbers.as_ptr() as usize, address);
        let chunk = emptied(numbers);
        assert_eq!(chunk.as_ptr() as usize, address);
        assert_eq!(filled(chunk, -1.0)[WORDS - 1], -1.0);
    }
}
