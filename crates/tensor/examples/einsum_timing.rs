//! Times a few tensor networks through the einsum engine; run with
//! `cargo run --release -p tensor --example einsum_timing`.
//!
//! Not a benchmark harness: it prints wall-clock times once warmed up, for eyeballing speed.

use std::time::Instant;

use ndarray::{ArrayD, ArrayViewD, IxDyn};
use tensor::einsum::{Contraction, EinsumError};

fn time(spec: &str, extent: impl Fn(char) -> usize) -> Result<(), EinsumError> {
    let contraction = Contraction::from_spec(spec)?;
    let shapes: Vec<Vec<usize>> = contraction
        .operands()
        .iter()
        .map(|labels| labels.iter().map(|&label| extent(name(&contraction, label))).collect())
        .collect();
    let inputs: Vec<ArrayD<f64>> = shapes
        .iter()
        .map(|shape| {
            let mut value = 0.0;
            ArrayD::from_shape_simple_fn(IxDyn(shape), || {
                value = (value * 1.7 + 0.3) % 5.0;
                value - 2.5
            })
        })
        .collect();
    let views: Vec<ArrayViewD<'_, f64>> = inputs.iter().map(|input| input.view()).collect();
    let started = Instant::now();
    let plan = contraction.plan(&shapes)?;
    let planned = started.elapsed();
    plan.execute(&views)?;
    let runs = 5;
    let started = Instant::now();
    for _ in 0..runs {
        plan.execute(&views)?;
    }
    let per_run = started.elapsed() / runs;
    println!(
        "{spec:<24} shapes {shapes:?}: {:.1} Mflop on path {:?}, planned in {planned:?}, executed in {per_run:?}",
        plan.path().cost() / 1e6,
        plan.path().steps(),
    );
    Ok(())
}

fn name(contraction: &Contraction, label: tensor::einsum::Label) -> char {
    contraction.name(label).chars().next().unwrap_or('?')
}

fn main() -> Result<(), EinsumError> {
    // The chain's open legs default to 72, where it takes about 0.1 s on two Haswell cores.
    let open: usize = std::env::args().nth(1).and_then(|arg| arg.parse().ok()).unwrap_or(72);
    time("ia,ajb,bkc,cl->ijkl", |c| if "abc".contains(c) { 64 } else { open })?;
    time("iab,jbc,kcd,lda->ijkl", |c| if "abcd".contains(c) { 64 } else { 32 })?;
    time("ab,bc,cd,da->", |_| 1024)?;
    // A plain matrix product, for the BLAS throughput the networks should approach.
    time("ik,kj->ij", |_| 1024)?;
    Ok(())
}
