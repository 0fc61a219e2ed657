//! Tests of the autodiff layer: first derivatives of every primitive against central finite
//! differences, second derivatives through nested transforms, the program tape's `backward`,
//! `grad(x)` and release semantics, and whole programs written with the operations.
//!
//! The helpers here turn any function of values into the scalar the checks need (a fixed random
//! weighting of its elements) and compare gradients and Hessians with finite differences.

mod einsum;
mod higher;
mod library;
mod primitives;
mod program;
mod programs;
mod tensor_seeds;

use super::{AdError, GradcheckConfig, Tape, grad, gradcheck, hessian};
use crate::ops;
use crate::value::Value;
use tensor::{ReduceOp, Rng, Tensor};

/// A function under test: the tape and the arguments in, a value out.
pub(super) type TestFn<'a> = &'a dyn Fn(&mut Tape, Vec<Value>) -> Result<Value, AdError>;

pub(super) fn tensor(shape: &[usize], values: &[f64]) -> Value {
    Value::tensor(Tensor::from_vec(shape, values.to_vec()).unwrap())
}

pub(super) fn vector(values: &[f64]) -> Value {
    tensor(&[values.len()], values)
}

/// Reproducible uniform numbers in `[low, high)` of `shape` (a float for the empty shape when
/// `float` is set).
pub(super) fn sample(shape: &[usize], low: f64, high: f64, seed: u64) -> Value {
    let mut rng = Rng::from_seed(seed);
    let unit = rng.rand(shape).unwrap();
    Value::tensor(unit.map(|u| low + (high - low) * u))
}

pub(super) fn sample_float(low: f64, high: f64, seed: u64) -> Value {
    let mut rng = Rng::from_seed(seed);
    Value::Float(low + (high - low) * rng.next_uniform())
}

/// A plain number or the elements of a plain tensor.
pub(super) fn numbers(value: &Value) -> Vec<f64> {
    match value.as_tensor() {
        Some(tensor) => tensor.to_vec(),
        None => value.as_f64().into_iter().collect(),
    }
}

pub(super) fn assert_close(actual: &Value, expected: &[f64], tolerance: f64, what: &str) {
    let actual = numbers(actual);
    assert_eq!(actual.len(), expected.len(), "{what}: {actual:?} vs {expected:?}");
    for (position, (a, e)) in actual.iter().zip(expected).enumerate() {
        let scale = 1.0f64.max(e.abs());
        assert!((a - e).abs() <= tolerance * scale, "{what}[{position}]: {a} vs {e}");
    }
}

/// The scalar a check differentiates: the value itself for a float, otherwise a fixed random
/// weighting of its elements, so that every element's gradient is tested.
pub(super) fn scalarize(t: &mut Tape, y: Value) -> Result<Value, AdError> {
    if !y.is_tensor() {
        return Ok(y);
    }
    let weights = sample(y.shape(), -1.0, 1.0, 99);
    let weighted = ops::mul(t, y, weights)?;
    ops::reduce(t, ReduceOp::Sum, weighted, None)
}

/// `args` with the one at `position` moved to the front, where the transforms differentiate.
pub(super) fn moved_first(args: &[Value], position: usize) -> Vec<Value> {
    let mut reordered = args.to_vec();
    let moved = reordered.remove(position);
    reordered.insert(0, moved);
    reordered
}

/// Undoes [`moved_first`]: the first of `xs` goes back to `position`.
pub(super) fn moved_back(mut xs: Vec<Value>, position: usize) -> Vec<Value> {
    let first = xs.remove(0);
    xs.insert(position, first);
    xs
}

/// Checks the gradient of `f` (scalarized) with respect to every differentiable argument against
/// central finite differences.
pub(super) fn assert_gradients(name: &str, f: TestFn<'_>, args: Vec<Value>) {
    for position in 0..args.len() {
        if !args[position].is_differentiable() {
            continue;
        }
        let reordered = moved_first(&args, position);
        let mut wrapped = |t: &mut Tape, xs: Vec<Value>| {
            let y = f(t, moved_back(xs, position))?;
            scalarize(t, y)
        };
        let mut tape = Tape::new();
        let config = GradcheckConfig { rtol: 1e-5, atol: 1e-7 };
        let report = gradcheck(&mut tape, &mut wrapped, reordered, config)
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(report.passed, "{name}, argument {position}: {report:?}");
        assert_eq!(tape.depth(), 1, "{name}: a level was left open");
    }
}

/// Checks `hessian(f)` at `args` (first argument a vector, or a float) against central finite
/// differences of `grad(f)`, and that it is symmetric.
pub(super) fn assert_hessian(name: &str, f: TestFn<'_>, args: Vec<Value>) {
    let mut tape = Tape::new();
    let mut scalar = |t: &mut Tape, xs: Vec<Value>| {
        let y = f(t, xs)?;
        scalarize(t, y)
    };
    let analytic = hessian(&mut tape, &mut scalar, args.clone())
        .unwrap_or_else(|error| panic!("{name}: {error}"));
    let point = numbers(&args[0]);
    let n = point.len();
    let expected_shape: Vec<usize> = match args[0].is_tensor() {
        true => [args[0].shape(), args[0].shape()].concat(),
        false => Vec::new(),
    };
    assert_eq!(analytic.shape(), expected_shape.as_slice(), "{name}: Hessian shape");
    assert!(!analytic.is_tracked(), "{name}: a Hessian outside any level is a constant");
    let analytic = numbers(&analytic);
    let mut numeric = vec![0.0; n * n];
    for j in 0..n {
        let step = 1e-5 * point[j].abs().max(1.0);
        let mut gradient_at = |offset: f64| -> Vec<f64> {
            let mut moved = point.clone();
            moved[j] += offset;
            let mut shifted = args.clone();
            shifted[0] = match args[0].is_tensor() {
                true => tensor(args[0].shape(), &moved),
                false => Value::Float(moved[0]),
            };
            let g = grad(&mut tape, &mut scalar, shifted, 0)
                .unwrap_or_else(|error| panic!("{name}: {error}"));
            numbers(&g)
        };
        let (forward, backward) = (gradient_at(step), gradient_at(-step));
        for i in 0..n {
            numeric[i * n + j] = (forward[i] - backward[i]) / (2.0 * step);
        }
    }
    for i in 0..n {
        for j in 0..n {
            let (a, e) = (analytic[i * n + j], numeric[i * n + j]);
            let tolerance = 1e-6 + 1e-5 * e.abs().max(a.abs());
            assert!((a - e).abs() <= tolerance, "{name}: H[{i}][{j}] = {a}, numerically {e}");
            let mirrored = analytic[j * n + i];
            assert!(
                (a - mirrored).abs() <= tolerance,
                "{name}: H[{i}][{j}] = {a} but H[{j}][{i}] = {mirrored}"
            );
        }
    }
    assert_eq!(tape.depth(), 1, "{name}: a level was left open");
}
