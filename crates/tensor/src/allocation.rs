//! The allocation limit: every tensor whose size a program chooses is checked against it before
//! its memory is requested, so a huge shape is a run-time error instead of an abort.
//!
//! The limit is per tensor and process-wide, because every operation that can grow a tensor
//! (constructors, broadcasting, products, loads) needs it and threading it through each call would
//! burden every caller for a value the command line sets once.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::error::TensorError;

/// The default limit for one tensor: 8 GiB, a third of the project's machines' memory.
pub const DEFAULT_ALLOCATION_LIMIT_BYTES: usize = 8 << 30;

const ELEMENT_BYTES: u128 = size_of::<f64>() as u128;

static ALLOCATION_LIMIT_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_ALLOCATION_LIMIT_BYTES);

/// Sets the largest number of bytes one tensor may take, for the rest of the process.
pub fn set_allocation_limit(bytes: usize) {
    ALLOCATION_LIMIT_BYTES.store(bytes, Ordering::Relaxed);
}

/// The largest number of bytes one tensor may take.
pub fn allocation_limit() -> usize {
    ALLOCATION_LIMIT_BYTES.load(Ordering::Relaxed)
}

/// Returns the element count of `shape` if a tensor of that shape fits in `limit_bytes`, and
/// [`TensorError::Allocation`] otherwise (including when the count overflows).
///
/// An empty shape whose other extents multiply past `isize::MAX` (`[0][2^62][4]`) is refused too,
/// reporting that product as its element count: ndarray cannot lay such a shape out.
pub fn check_allocation_against(shape: &[usize], limit_bytes: usize) -> Result<usize, TensorError> {
    let elements = saturating_product(shape.iter().copied());
    let laid_out = saturating_product(shape.iter().copied().filter(|&extent| extent != 0));
    let fits =
        elements.checked_mul(ELEMENT_BYTES).is_some_and(|bytes| bytes <= limit_bytes as u128);
    match usize::try_from(elements) {
        Ok(count) if fits && laid_out <= isize::MAX as u128 => Ok(count),
        _ => Err(TensorError::Allocation {
            shape: shape.to_vec(),
            elements: elements.max(laid_out),
            limit_bytes,
        }),
    }
}

/// The product of `extents`, saturating at `u128::MAX`.
fn saturating_product(extents: impl Iterator<Item = usize>) -> u128 {
    extents.fold(1u128, |acc, extent| acc.saturating_mul(extent as u128))
}

/// Checks `shape` against the process-wide limit; see [`check_allocation_against`].
pub fn check_allocation(shape: &[usize]) -> Result<usize, TensorError> {
    check_allocation_against(shape, allocation_limit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tensor;

    #[test]
    fn shapes_within_the_limit_give_their_element_count() {
        assert_eq!(check_allocation_against(&[2, 3], 48), Ok(6));
        assert_eq!(check_allocation_against(&[], 8), Ok(1));
        assert_eq!(check_allocation_against(&[0, isize::MAX as usize], 0), Ok(0));
    }

    #[test]
    fn shapes_over_the_limit_are_errors() {
        assert_eq!(
            check_allocation_against(&[2, 3], 47),
            Err(TensorError::Allocation { shape: vec![2, 3], elements: 6, limit_bytes: 47 })
        );
        // An element count that overflows saturates instead of wrapping to a small number.
        let error = check_allocation_against(&[usize::MAX, usize::MAX, 4], 1 << 30).unwrap_err();
        assert!(matches!(error, TensorError::Allocation { elements: u128::MAX, .. }));
        let max = usize::MAX;
        assert!(
            error
                .to_string()
                .starts_with(&format!("Tensor[{max}][{max}][4] has {} elements", u128::MAX))
        );
    }

    #[test]
    fn empty_shapes_that_ndarray_cannot_lay_out_are_errors() {
        assert!(check_allocation_against(&[0, usize::MAX], 8).is_err());
        assert!(check_allocation_against(&[0, 1 << 62, 4], 8).is_err());
        assert!(Tensor::zeros(&[0, 1 << 62, 4]).is_err());
        assert!(Tensor::full(&[1 << 62, 0, 4], 1.0).is_err());
    }

    #[test]
    fn the_default_limit_rejects_a_terabyte() {
        assert!(check_allocation(&[1 << 20, 1 << 20]).is_err());
        assert_eq!(check_allocation(&[1024, 1024]), Ok(1 << 20));
    }
}
