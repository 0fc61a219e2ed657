//! Splitting large kernels across the cores: contiguous chunks, one per thread, on scoped
//! threads of the standard library.
//!
//! The thread count is OpenBLAS's (`openblas_get_num_threads`: `OPENBLAS_NUM_THREADS` when set,
//! otherwise every core), so that one setting governs every kernel of a program: `nabla test`'s
//! workers, which set it to 1, stay on one thread each, and `cargo xtask bench --threads N`
//! gives Nabla the threads it gives NumPy's BLAS and PyTorch.
//!
//! Only work whose result does not depend on how it is split goes through here: element-wise
//! maps (each element is computed by the same code whatever chunk holds it, so the result is
//! bit-identical to one thread's) and kernels that write disjoint parts of their result (the
//! images of a convolution). Reductions keep their fixed order on one thread.
//!
//! Scoped threads are started per call (tens of microseconds), so work is split only above a
//! size where that start-up is small beside the work; a thread pool (rayon) would save the
//! start-up but keep idle threads spinning beside OpenBLAS's own, on machines of two cores.

use std::sync::OnceLock;

unsafe extern "C" {
    /// The number of threads OpenBLAS runs its kernels on.
    fn openblas_get_num_threads() -> std::ffi::c_int;
}

/// The number of threads kernels may split their work across (at least 1).
pub fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        // SAFETY: `openblas_get_num_threads` takes no arguments and only reads OpenBLAS's
        // configured thread count.
        let count = unsafe { openblas_get_num_threads() };
        usize::try_from(count).unwrap_or(1).max(1)
    })
}

/// A part of an element-wise map split across threads has at least this many elements, so maps
/// of fewer than twice as many (2^17) stay on one thread.
///
/// Measured in a release build on the project's two-core machine, on one thread: `a + b` (the
/// cheapest map, bound by memory) over 2^16 elements takes about 37 µs, 2^15 about 15 µs and 2^12
/// about 3 µs, while starting and joining a scoped thread costs some microseconds to tens of
/// them; from 2^17 elements on, the second thread's half (at least 35 µs of work) outweighs its
/// start. `exp` costs several times more per element, so it would pay earlier; one threshold
/// keeps every map's behaviour alike. (The two-thread times could not be measured on a quiet
/// machine when this was written: the crossover is an estimate from the one-thread times.)
pub(crate) const ELEMENTWISE_PART: usize = 1 << 16;

/// How many parts to split `len` items into, given that a part is worth a thread only with at
/// least `min_part` items: 1 when the work is small or there is one thread.
pub(crate) fn parts(len: usize, min_part: usize) -> usize {
    let threads = threads();
    if threads <= 1 || len < min_part.max(1).saturating_mul(2) {
        return 1;
    }
    threads.min(len / min_part.max(1)).max(1)
}

/// Runs `f` on `parts` contiguous chunks of `items` of nearly equal length (whole multiples of
/// `unit` items, except the last), each with the index of its first item; the chunks after the
/// first run on scoped threads, the first on the caller's. With one part, `f` runs on the whole
/// slice on the caller's thread.
pub(crate) fn for_chunks<T: Send>(
    items: &mut [T],
    unit: usize,
    parts: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    let unit = unit.max(1);
    let units = items.len().div_ceil(unit);
    let parts = parts.clamp(1, units.max(1));
    if parts == 1 {
        f(0, items);
        return;
    }
    let per_part = units.div_ceil(parts) * unit;
    std::thread::scope(|scope| {
        let f = &f;
        let mut chunks = items.chunks_mut(per_part).enumerate();
        let first = chunks.next();
        for (i, chunk) in chunks {
            scope.spawn(move || f(i * per_part, chunk));
        }
        if let Some((_, chunk)) = first {
            f(0, chunk);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_every_item_once_with_their_offsets() {
        for parts in 1..5 {
            let mut items = vec![0usize; 103];
            for_chunks(&mut items, 10, parts, |start, chunk| {
                for (i, item) in chunk.iter_mut().enumerate() {
                    *item += start + i + 1;
                }
            });
            assert!(items.iter().enumerate().all(|(i, &item)| item == i + 1), "{parts} parts");
        }
    }

    #[test]
    fn small_work_stays_on_one_thread() {
        assert_eq!(parts(10, 100), 1);
        assert!(parts(1 << 24, 100) >= 1);
        assert!(threads() >= 1);
    }
}
