//! OpenBLAS's idle workers, stopped by `stop_idle_blas_threads`, start again for the next threaded
//! product. The only test of its binary, so that no other thread makes a BLAS call while the
//! workers stop, as `main` guarantees in `nabla`.

use tensor::{Tensor, matmul, stop_idle_blas_threads};

#[test]
fn products_are_exact_after_the_idle_threads_stop() {
    // Large enough for OpenBLAS to split the product between threads; every entry is a sum of
    // small integers, so the result is exact whatever the order of the sums.
    let n = 400;
    let a: Vec<f64> = (0..n * n).map(|k| ((k * 7 + k / n) % 5) as f64).collect();
    let expected: Vec<f64> =
        (0..n * n).map(|k| (0..n).map(|j| a[(k / n) * n + j] * a[j * n + k % n]).sum()).collect();
    let a = Tensor::from_vec(&[n, n], a).unwrap();
    for _ in 0..3 {
        stop_idle_blas_threads();
        assert_eq!(matmul(&a, &a).unwrap().to_vec(), expected);
    }
}
