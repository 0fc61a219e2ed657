//! Element buffers for large results, backed by transparent huge pages where Linux offers them.
//!
//! A fresh buffer costs one page fault per 4 KiB page on first write, which on this project's
//! virtual machines makes allocating and filling 80 MB three times slower than computing `exp`
//! over it. Like NumPy, buffers of 4 MiB or more ask the kernel for 2 MiB pages instead
//! (`madvise(MADV_HUGEPAGE)`, honoured when transparent huge pages are set to `madvise` or
//! `always`); elsewhere, or if the kernel declines, nothing changes.

use ndarray::{ArrayD, IxDyn};

/// Buffers at least this large (in bytes) get the huge-page advice, as in NumPy.
const HUGE_PAGE_THRESHOLD_BYTES: usize = 4 << 20;

/// An empty vector with room for `len` elements, advised to use huge pages if it is large.
pub(super) fn with_capacity(len: usize) -> Vec<f64> {
    let buffer = Vec::with_capacity(len);
    advise_huge_pages(&buffer);
    buffer
}

/// A zero-filled array of `shape`, through [`with_capacity`].
pub(super) fn zeros(shape: &[usize]) -> ArrayD<f64> {
    let len = shape.iter().product();
    let mut buffer = with_capacity(len);
    buffer.resize(len, 0.0);
    // The buffer has exactly the shape's element count, so the fallback never runs; it exists so
    // that nothing here can panic.
    ArrayD::from_shape_vec(IxDyn(shape), buffer).unwrap_or_else(|_| ArrayD::zeros(IxDyn(shape)))
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(buffer: &Vec<f64>) {
    let bytes = buffer.capacity() * size_of::<f64>();
    if bytes < HUGE_PAGE_THRESHOLD_BYTES {
        return;
    }
    // `madvise` takes whole pages: the largest page-aligned range inside the allocation.
    const PAGE: usize = 4096;
    let start = buffer.as_ptr() as usize;
    let aligned_start = start.next_multiple_of(PAGE);
    let aligned_end = (start + bytes) / PAGE * PAGE;
    if aligned_end <= aligned_start {
        return;
    }
    // SAFETY: the range lies inside this vector's own allocation, and the advice only changes
    // how the kernel backs those pages, never their contents or their validity. Failure (an
    // older kernel, huge pages disabled) leaves ordinary pages, so the result is ignored.
    unsafe {
        libc::madvise(
            aligned_start as *mut libc::c_void,
            aligned_end - aligned_start,
            libc::MADV_HUGEPAGE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_buffer: &Vec<f64>) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_have_the_requested_room() {
        assert!(with_capacity(10).capacity() >= 10);
        let large = with_capacity(1 << 20);
        assert!(large.capacity() >= 1 << 20 && large.is_empty());
    }

    #[test]
    fn zeros_have_the_shape_and_no_other_value() {
        let array = zeros(&[3, 1 << 18]);
        assert_eq!(array.shape(), [3, 1 << 18]);
        assert!(array.iter().all(|&x| x == 0.0));
        assert_eq!(zeros(&[]).len(), 1);
        assert_eq!(zeros(&[0, 5]).len(), 0);
    }
}
