//! Times the tensor runtime's hot paths: a 2048 by 2048 matrix product (reported in GFLOP/s) and
//! the element-wise chain `exp(a) * b + c` on ten million elements.
//!
//! Run it with `cargo run --release -p tensor --example tensor_bench`. Like the CLI, it first lets
//! `ensure_tuned_kernel` re-execute it with the OpenBLAS kernel this CPU needs if OpenBLAS chose a
//! worse one; set `NABLA_NO_REEXEC=1` to measure OpenBLAS's own choice, or `OPENBLAS_CORETYPE` to
//! measure a given kernel.

use std::time::{Duration, Instant};

use tensor::{
    BinaryOp, Rng, TensorError, UnaryOp, binary, ensure_tuned_kernel, matmul, openblas_core_name,
    unary,
};

/// The fastest of `runs` timings of `work`, which is less noisy than the mean.
fn fastest(
    runs: usize,
    mut work: impl FnMut() -> Result<(), TensorError>,
) -> Result<Duration, TensorError> {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let start = Instant::now();
        work()?;
        best = best.min(start.elapsed());
    }
    Ok(best)
}

fn main() -> Result<(), TensorError> {
    ensure_tuned_kernel();
    let coretype = openblas_core_name();
    let mut rng = Rng::from_seed(0);

    let n = 2048;
    let a = rng.rand(&[n, n])?;
    let b = rng.rand(&[n, n])?;
    matmul(&a, &b)?;
    let product = fastest(5, || matmul(&a, &b).map(drop))?;
    let flops = 2.0 * (n as f64).powi(3);
    println!(
        "matmul {n}x{n} ({coretype}): {:.1} ms, {:.1} GFLOP/s",
        product.as_secs_f64() * 1e3,
        flops / product.as_secs_f64() / 1e9
    );

    let len = 10_000_000;
    let x = rng.rand(&[len])?;
    let y = rng.rand(&[len])?;
    let z = rng.rand(&[len])?;
    let chain = fastest(10, || {
        let scaled = binary(BinaryOp::Mul, unary(UnaryOp::Exp, x.clone()), y.clone())?;
        binary(BinaryOp::Add, scaled, z.clone()).map(drop)
    })?;
    let exp_only = fastest(10, || {
        unary(UnaryOp::Exp, x.clone());
        Ok(())
    })?;
    println!(
        "exp(a) * b + c on {len} elements: {:.1} ms (exp alone {:.1} ms)",
        chain.as_secs_f64() * 1e3,
        exp_only.as_secs_f64() * 1e3
    );
    Ok(())
}
