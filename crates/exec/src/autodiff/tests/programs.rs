//! Whole programs written with the value operations: a Gram–Schmidt QR decomposition, the NiLang
//! recurrence `x = a x + b sin(x)`, and a small network trained with softmax cross-entropy.

use super::{assert_close, assert_gradients, sample};
use crate::autodiff::{AdError, Tape, grad};
use crate::ops;
use crate::value::Value;
use tensor::{Index, ReduceOp, UnaryOp};

/// Classical Gram–Schmidt on the columns of an `m` by `n` matrix: `Q` (`m` by `n`, orthonormal
/// columns) stacked on `R` (`n` by `n`, upper triangular) as one `(m + n)` by `n` tensor.
fn gram_schmidt(t: &mut Tape, a: Value) -> Result<Value, AdError> {
    let (m, n) = (a.shape()[0], a.shape()[1]);
    let mut columns: Vec<Value> = Vec::with_capacity(n);
    let mut r_entries = vec![Value::Float(0.0); n * n];
    for j in 0..n {
        let a_j = ops::get(t, a.clone(), &[Index::full(m), Index::At(j)])?;
        let mut v = a_j.clone();
        for (i, q_i) in columns.iter().enumerate() {
            let projection = ops::matmul(t, q_i.clone(), a_j.clone())?;
            let projection = ops::to_float(t, projection)?;
            r_entries[i * n + j] = projection.clone();
            let component = ops::mul(t, q_i.clone(), projection)?;
            v = ops::sub(t, v, component)?;
        }
        let norm = ops::reduce(t, ReduceOp::Norm, v.clone(), None)?;
        r_entries[j * n + j] = norm.clone();
        columns.push(ops::div(t, v, norm)?);
    }
    let q_rows = ops::stack_many(t, columns)?;
    let q = ops::transpose(t, q_rows)?;
    let r = ops::from_elements(t, &[n, n], r_entries)?;
    debug_assert_eq!(q.shape(), [m, n]);
    ops::concat(t, q, r, 0)
}

#[test]
fn gram_schmidt_qr_passes_gradcheck() {
    let a = sample(&[4, 3], -1.0, 1.0, 7);
    let mut tape = Tape::new();
    let qr = gram_schmidt(&mut tape, a.clone()).unwrap();
    // Q R reproduces A.
    let q = ops::get(&mut tape, qr.clone(), &[Index::range(0, 4)]).unwrap();
    let r = ops::get(&mut tape, qr, &[Index::range(4, 7)]).unwrap();
    let product = ops::matmul(&mut tape, q, r).unwrap();
    assert_close(&product, &super::numbers(&a), 1e-12, "QR");
    assert_gradients("Gram-Schmidt QR", &|t, args| gram_schmidt(t, args[0].clone()), vec![a]);
}

#[test]
fn nilang_recurrence_gradient() {
    // x_{k+1} = a x_k + b sin(x_k): dx_N/dx_0 is the product of (a + b cos(x_k)).
    let (a, b, x0) = (0.9, 0.1, 0.5f64);
    let steps = 1000;
    let mut expected = 1.0;
    let mut x = x0;
    for _ in 0..steps {
        expected *= a + b * x.cos();
        x = a * x + b * x.sin();
    }
    let mut tape = Tape::new();
    let start = tape.leaf(Value::Float(x0)).unwrap();
    let mut value = start.clone();
    for _ in 0..steps {
        let scaled = ops::mul(&mut tape, value.clone(), Value::Float(a)).unwrap();
        let sine = ops::unary(&mut tape, UnaryOp::Sin, value).unwrap();
        let wave = ops::mul(&mut tape, sine, Value::Float(b)).unwrap();
        value = ops::add(&mut tape, scaled, wave).unwrap();
    }
    assert_close(&value, &[x], 0.0, "x_N");
    tape.backward(&value).unwrap();
    assert_close(&tape.grad_of(&start).unwrap(), &[expected], 1e-13, "dx_N/dx_0");
}

/// A two-layer tanh network's mean softmax cross-entropy on a batch.
fn network_loss(t: &mut Tape, args: Vec<Value>) -> Result<Value, AdError> {
    let [w1, b1, w2, b2, x, labels] = <[Value; 6]>::try_from(args)
        .map_err(|_| AdError::internal("the test network takes six arguments"))?;
    let hidden = ops::matmul(t, x, w1)?;
    let hidden = ops::add(t, hidden, b1)?;
    let hidden = ops::unary(t, UnaryOp::Tanh, hidden)?;
    let logits = ops::matmul(t, hidden, w2)?;
    let logits = ops::add(t, logits, b2)?;
    let log_probabilities = ops::log_softmax(t, logits, 1)?;
    let picked = ops::mul(t, log_probabilities, labels)?;
    let total = ops::reduce(t, ReduceOp::Sum, picked, Some(1))?;
    let mean = ops::reduce(t, ReduceOp::Mean, total, None)?;
    ops::neg(t, mean)
}

fn one_hot(rows: usize, classes: usize) -> Value {
    let values: Vec<f64> = (0..rows * classes)
        .map(|k| f64::from(u8::from(k % classes == (k / classes) % classes)))
        .collect();
    super::tensor(&[rows, classes], &values)
}

#[test]
fn small_network_gradients_and_training() {
    let args = vec![
        sample(&[4, 5], -0.5, 0.5, 1),
        sample(&[5], -0.1, 0.1, 2),
        sample(&[5, 3], -0.5, 0.5, 3),
        sample(&[3], -0.1, 0.1, 4),
        sample(&[6, 4], -1.0, 1.0, 5),
        one_hot(6, 3),
    ];
    assert_gradients("network", &network_loss, args.clone());
    // A few steps of gradient descent on the program tape lower the loss.
    let mut tape = Tape::new();
    let mut parameters: Vec<Value> =
        args[..4].iter().map(|p| tape.leaf(p.clone()).unwrap()).collect();
    let mut losses = Vec::new();
    for _ in 0..20 {
        for slot in parameters.iter_mut() {
            tape.refresh_var(slot).unwrap();
        }
        let mut inputs = parameters.clone();
        inputs.extend_from_slice(&args[4..]);
        let loss = network_loss(&mut tape, inputs).unwrap();
        losses.push(loss.as_f64().unwrap());
        tape.backward(&loss).unwrap();
        for slot in parameters.iter_mut() {
            let gradient = tape.grad_of(slot).unwrap();
            let step = ops::mul(&mut tape, gradient, Value::Float(0.5)).unwrap();
            tape.refresh_var(slot).unwrap();
            *slot = ops::sub(&mut tape, slot.clone(), step).unwrap();
        }
    }
    assert!(losses[19] < 0.8 * losses[0], "{losses:?}");
    // The gradient of the loss with respect to the first layer is the same through a transform.
    let mut tape = Tape::new();
    let mut loss = network_loss;
    let g = grad(&mut tape, &mut loss, args, 0).unwrap();
    assert_eq!(g.shape(), [4, 5]);
}

#[test]
fn gradcheck_reports_the_worst_element() {
    use crate::autodiff::{GradcheckConfig, gradcheck};
    // Along the trace at v[1] == 0 the function ignores v[1], but its finite differences see the
    // identity: the check fails there, and says where, with both values and the tolerance.
    let mut f = |t: &mut Tape, args: Vec<Value>| {
        let v = args[0].clone();
        let mut total = Value::Float(0.0);
        for i in 0..3 {
            let element = ops::get(t, v.clone(), &[Index::At(i)])?;
            if element.as_f64() != Some(0.0) {
                total = ops::add(t, total, element)?;
            }
        }
        Ok::<_, AdError>(total)
    };
    let mut tape = Tape::new();
    let config = GradcheckConfig { rtol: 1e-6, atol: 1e-9 };
    let point = super::vector(&[0.5, 0.0, 2.0]);
    let report = gradcheck(&mut tape, &mut f, vec![point], config).unwrap();
    assert!(!report.passed);
    assert_eq!(report.checked, 3);
    let worst = report.worst.unwrap();
    assert_eq!(worst.index, [1]);
    assert_eq!(worst.analytic, 0.0);
    assert!((worst.numeric - 1.0).abs() < 1e-9, "{worst:?}");
    assert!((worst.tolerance - (1e-9 + 1e-6 * worst.numeric)).abs() < 1e-15);
    let report = gradcheck(&mut tape, &mut f, vec![super::vector(&[0.5, 1.0, 2.0])], config);
    assert!(report.unwrap().passed);
}
