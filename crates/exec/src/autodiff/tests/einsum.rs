//! The autodiff tape's rule for contractions, which takes the uniform form only for a constant
//! output gradient: first derivatives of `sum(einsum(...))` (uniform) and of a weighted sum
//! (not uniform), and second derivatives where the uniform gradient is constant at the inner
//! level and where it is a tracked function of the argument.

use std::rc::Rc;

use tensor::einsum::Contraction;
use tensor::{ReduceOp, Rng, Tensor};

use crate::autodiff::{AdError, GradcheckConfig, Tape, grad, gradcheck, hessian};
use crate::ops;
use crate::value::Value;

fn sample(shape: &[usize], seed: u64) -> Value {
    let mut rng = Rng::from_seed(seed);
    Value::tensor(rng.rand(shape).unwrap().map(|u| 2.0 * u - 1.0))
}

fn numbers(value: &Value) -> Vec<f64> {
    match value.as_tensor() {
        Some(tensor) => tensor.to_vec(),
        None => value.as_f64().into_iter().collect(),
    }
}

fn sum(t: &mut Tape, y: Value) -> Result<Value, AdError> {
    ops::reduce(t, ReduceOp::Sum, y, None)
}

/// `scale * sum(y)` when `weights` is `None`, `sum(weights * y)` otherwise.
fn loss(t: &mut Tape, y: Value, scale: f64, weights: Option<u64>) -> Result<Value, AdError> {
    match weights {
        None => {
            let total = sum(t, y)?;
            ops::mul(t, total, Value::Float(scale))
        }
        Some(seed) => {
            let weights = sample(y.shape(), seed);
            let weighted = ops::mul(t, y, weights)?;
            sum(t, weighted)
        }
    }
}

#[test]
fn gradients_of_summed_and_weighted_contractions() {
    let cases: [(&str, Vec<Vec<usize>>); 5] = [
        ("iab,jbc,kcd,lda->ijkl", vec![vec![2, 3, 2], vec![3, 2, 3], vec![2, 3, 2], vec![2, 2, 3]]),
        ("ia,ajb,bkc,cl->ijkl", vec![vec![2, 3], vec![3, 2, 2], vec![2, 3, 2], vec![2, 3]]),
        ("ii->", vec![vec![3, 3]]),
        ("ii->i", vec![vec![3, 3]]),
        ("iij,jk->ik", vec![vec![2, 2, 3], vec![3, 2]]),
    ];
    for (index, (spec, shapes)) in cases.iter().enumerate() {
        let contraction = Rc::new(Contraction::from_spec(spec).unwrap().scaled(0.5));
        for weights in [None, Some(17)] {
            for position in 0..shapes.len() {
                let mut f = |t: &mut Tape, mut xs: Vec<Value>| {
                    let first = xs.remove(0);
                    xs.insert(position, first);
                    let y = ops::einsum(t, &contraction, xs)?;
                    loss(t, y, -1.25, weights)
                };
                let mut args: Vec<Value> = shapes
                    .iter()
                    .enumerate()
                    .map(|(k, shape)| sample(shape, (10 * index + k) as u64))
                    .collect();
                let moved = args.remove(position);
                args.insert(0, moved);
                let mut tape = Tape::new();
                let config = GradcheckConfig { rtol: 1e-6, atol: 1e-9 };
                let report = gradcheck(&mut tape, &mut f, args, config).unwrap();
                assert!(report.passed, "{spec} wrt {position}, weights {weights:?}: {report:?}");
                assert!(report.checked > 0);
            }
        }
    }
}

/// A matrix from the first `n * n` elements of a vector argument.
fn square(t: &mut Tape, x: &Value, n: usize) -> Result<Value, AdError> {
    ops::reshape(t, x.clone(), &[n, n])
}

/// A function of the arguments under test.
type Function<'a> = &'a dyn Fn(&mut Tape, Vec<Value>) -> Result<Value, AdError>;

/// Compares `hessian(f)` at a fixed point with central differences of `grad(f)`.
fn check_hessian(name: &str, f: Function<'_>) {
    let point = numbers(&sample(&[4], 3));
    let at = |values: &[f64]| Value::tensor(Tensor::from_vec(&[4], values.to_vec()).unwrap());
    let mut tape = Tape::new();
    let mut scalar = |t: &mut Tape, xs: Vec<Value>| f(t, xs);
    let analytic = numbers(&hessian(&mut tape, &mut scalar, vec![at(&point)]).unwrap());
    assert_eq!(analytic.len(), 16, "{name}");
    let step = 1e-5;
    for j in 0..4 {
        let mut gradient_at = |offset: f64| {
            let mut moved = point.clone();
            moved[j] += offset;
            numbers(&grad(&mut tape, &mut scalar, vec![at(&moved)], 0).unwrap())
        };
        let (up, down) = (gradient_at(step), gradient_at(-step));
        for i in 0..4 {
            let numeric = (up[i] - down[i]) / (2.0 * step);
            let a = analytic[4 * i + j];
            assert!(
                (a - numeric).abs() <= 1e-6 * (1.0 + numeric.abs()),
                "{name}: H[{i}][{j}] = {a} vs {numeric}"
            );
        }
    }
}

#[test]
fn second_derivatives_through_uniform_gradients() {
    let spec = Rc::new(Contraction::from_spec("ij,jk,ki->i").unwrap());
    // The inner backward pass sees the constant ones that `sum` broadcasts: the uniform form,
    // recorded at the outer level as a contraction of the tracked operands.
    let constant = {
        let spec = spec.clone();
        move |t: &mut Tape, a: Vec<Value>| {
            let m = square(t, &a[0], 2)?;
            let y = ops::einsum(t, &spec, vec![m.clone(), m.clone(), m])?;
            sum(t, y)
        }
    };
    check_hessian("constant uniform", &constant);
    // Here the uniform output gradient is sum(a), a function of the argument: the full form
    // must be used so that the outer level differentiates through it.
    let tracked = move |t: &mut Tape, a: Vec<Value>| {
        let m = square(t, &a[0], 2)?;
        let y = ops::einsum(t, &spec, vec![m.clone(), m.clone(), m])?;
        let total = sum(t, y)?;
        let s = sum(t, a[0].clone())?;
        ops::mul(t, total, s)
    };
    check_hessian("tracked uniform", &tracked);
}
