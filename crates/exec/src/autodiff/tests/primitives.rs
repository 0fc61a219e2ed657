//! First derivatives of every differentiable primitive against central finite differences, at
//! several shapes, broadcasting included, for floats and tensors.

use std::rc::Rc;

use super::{assert_close, assert_gradients, assert_hessian, sample, sample_float, tensor, vector};
use crate::autodiff::{Tape, grad};
use crate::ops;
use crate::value::Value;
use tensor::einsum::{Contraction, EinsumSpec};
use tensor::{BinaryOp, Index, ReduceOp, UnaryOp};

/// Inputs inside every unary function's domain and away from its kinks.
fn unary_domain(op: UnaryOp) -> (f64, f64) {
    match op {
        UnaryOp::Asin | UnaryOp::Acos => (-0.8, 0.8),
        UnaryOp::Ln | UnaryOp::Log2 | UnaryOp::Log10 | UnaryOp::Sqrt => (0.5, 2.0),
        UnaryOp::Tan => (-1.0, 1.0),
        UnaryOp::Log1p => (-0.5, 2.0),
        _ => (-1.5, 1.5),
    }
}

/// Moves samples away from zero, where `abs` and `relu` have kinks.
fn away_from_zero(value: Value) -> Value {
    let tensor = value.as_tensor().unwrap().clone();
    Value::tensor(tensor.map(|x| if x.abs() < 0.2 { x + 0.5 } else { x }))
}

#[test]
fn unary_functions_on_floats_and_tensors() {
    for (index, op) in UnaryOp::ALL.into_iter().enumerate() {
        let (low, high) = unary_domain(op);
        let seed = index as u64;
        let matrix = away_from_zero(sample(&[2, 3], low, high, seed));
        let f = move |t: &mut Tape, args: Vec<Value>| ops::unary(t, op, args[0].clone());
        assert_gradients(op.name(), &f, vec![matrix]);
        let mut scalar = sample_float(low, high, seed + 100);
        if scalar.as_f64().unwrap().abs() < 0.2 {
            scalar = Value::Float(0.7);
        }
        assert_gradients(op.name(), &f, vec![scalar]);
    }
}

/// Operand ranges that keep each binary operator smooth: divisors away from zero, `fmod` away
/// from its jumps, powers of positive bases.
fn binary_domains(op: BinaryOp) -> ((f64, f64), (f64, f64)) {
    match op {
        BinaryOp::Div => ((-2.0, 2.0), (0.5, 2.0)),
        BinaryOp::Rem | BinaryOp::Mod => ((2.2, 2.4), (1.0, 1.05)),
        BinaryOp::Pow => ((0.5, 2.0), (-1.5, 2.5)),
        _ => ((-2.0, 2.0), (-2.0, 2.0)),
    }
}

const ARITHMETIC: [BinaryOp; 11] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
    BinaryOp::Pow,
    BinaryOp::Max,
    BinaryOp::Min,
    BinaryOp::Mod,
    BinaryOp::Atan2,
    BinaryOp::Hypot,
];

#[test]
fn binary_arithmetic_with_broadcasting() {
    let shapes: [(&[usize], &[usize]); 7] = [
        (&[2, 3], &[2, 3]),
        (&[2, 3], &[3]),
        (&[2, 1], &[1, 3]),
        (&[], &[2, 3]),
        (&[3], &[]),
        (&[2, 2, 1], &[2]),
        (&[1], &[2, 3]),
    ];
    for (index, op) in ARITHMETIC.into_iter().enumerate() {
        let ((a_low, a_high), (b_low, b_high)) = binary_domains(op);
        let f = move |t: &mut Tape, args: Vec<Value>| {
            ops::binary(t, op, args[0].clone(), args[1].clone())
        };
        for (case, (a_shape, b_shape)) in shapes.into_iter().enumerate() {
            let seed = (index * 10 + case) as u64;
            let a = sample(a_shape, a_low, a_high, seed);
            let b = sample(b_shape, b_low, b_high, seed + 500);
            let name = format!("{} {a_shape:?} {b_shape:?}", op.symbol());
            assert_gradients(&name, &f, vec![a, b]);
        }
        // Floats with floats and floats with tensors, both ways round.
        let a = sample_float(a_low, a_high, index as u64);
        let b = sample_float(b_low, b_high, index as u64 + 7);
        assert_gradients(op.symbol(), &f, vec![a.clone(), b.clone()]);
        assert_gradients(op.symbol(), &f, vec![a, sample(&[2, 2], b_low, b_high, 3)]);
        assert_gradients(op.symbol(), &f, vec![sample(&[3], a_low, a_high, 4), b]);
    }
}

#[test]
fn scalar_fast_path_agrees_with_the_tensor_rules() {
    // Rank-0 tensors take the general path; floats take the fast one: the derivatives must agree.
    for op in ARITHMETIC {
        let ((a_low, a_high), (b_low, b_high)) = binary_domains(op);
        let (a, b) = (sample_float(a_low, a_high, 1), sample_float(b_low, b_high, 2));
        let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
        let mut f =
            |t: &mut Tape, args: Vec<Value>| ops::binary(t, op, args[0].clone(), args[1].clone());
        let mut tape = Tape::new();
        for wrt in 0..2 {
            let fast = grad(&mut tape, &mut f, vec![a.clone(), b.clone()], wrt).unwrap();
            let general =
                grad(&mut tape, &mut f, vec![tensor(&[], &[x]), tensor(&[], &[y])], wrt).unwrap();
            assert_close(&fast, &super::numbers(&general), 1e-14, op.symbol());
        }
    }
    for op in UnaryOp::ALL {
        let (low, high) = unary_domain(op);
        let x = sample_float(low, high, 5).as_f64().unwrap();
        let mut f = |t: &mut Tape, args: Vec<Value>| ops::unary(t, op, args[0].clone());
        let mut tape = Tape::new();
        let fast = grad(&mut tape, &mut f, vec![Value::Float(x)], 0).unwrap();
        let general = grad(&mut tape, &mut f, vec![tensor(&[], &[x])], 0).unwrap();
        assert_close(&fast, &super::numbers(&general), 1e-14, op.name());
    }
}

#[test]
fn kinks_and_ties_follow_the_documented_choices() {
    let mut tape = Tape::new();
    let derivative = |tape: &mut Tape, op: UnaryOp, x: Value| {
        let mut f = |t: &mut Tape, args: Vec<Value>| ops::unary(t, op, args[0].clone());
        grad(tape, &mut f, vec![x], 0).unwrap()
    };
    for x in [Value::Float(0.0), tensor(&[1], &[0.0])] {
        assert_eq!(super::numbers(&derivative(&mut tape, UnaryOp::Abs, x.clone())), [0.0]);
        assert_eq!(super::numbers(&derivative(&mut tape, UnaryOp::Relu, x)), [0.0]);
    }
    // Binary max/min split ties equally, so max(x, x) has derivative 1.
    for x in [Value::Float(1.5), tensor(&[2], &[1.5, -0.5])] {
        for op in [BinaryOp::Max, BinaryOp::Min] {
            let mut f = |t: &mut Tape, args: Vec<Value>| {
                let y = ops::binary(t, op, args[0].clone(), args[0].clone())?;
                super::scalarize(t, y)
            };
            let mut plain = |t: &mut Tape, args: Vec<Value>| super::scalarize(t, args[0].clone());
            let tied = grad(&mut tape, &mut f, vec![x.clone()], 0).unwrap();
            let identity = grad(&mut tape, &mut plain, vec![x.clone()], 0).unwrap();
            assert_close(&tied, &super::numbers(&identity), 1e-15, op.symbol());
            let mut left = |t: &mut Tape, args: Vec<Value>| {
                let y = ops::binary(t, op, args[0].clone(), args[1].clone())?;
                super::scalarize(t, y)
            };
            let half = grad(&mut tape, &mut left, vec![x.clone(), x.clone()], 0).unwrap();
            let halves: Vec<f64> = super::numbers(&identity).iter().map(|g| g / 2.0).collect();
            assert_close(&half, &halves, 1e-15, op.symbol());
        }
    }
    // Reductions split among tied extremes.
    let mut max =
        |t: &mut Tape, args: Vec<Value>| ops::reduce(t, ReduceOp::Max, args[0].clone(), None);
    let shares = grad(&mut tape, &mut max, vec![vector(&[1.0, 3.0, 3.0, 2.0])], 0).unwrap();
    assert_close(&shares, &[0.0, 0.5, 0.5, 0.0], 0.0, "max ties");
    let min =
        |t: &mut Tape, args: Vec<Value>| ops::reduce(t, ReduceOp::Min, args[0].clone(), Some(1));
    let mut weighted = |t: &mut Tape, args: Vec<Value>| {
        let y = min(t, args)?;
        ops::reduce(t, ReduceOp::Sum, y, None)
    };
    let rows = tensor(&[2, 3], &[1.0, 1.0, 4.0, 0.0, 2.0, 5.0]);
    let shares = grad(&mut tape, &mut weighted, vec![rows], 0).unwrap();
    assert_close(&shares, &[0.5, 0.5, 0.0, 1.0, 0.0, 0.0], 0.0, "min ties");
    // pow at a zero base and a zero exponent.
    let mut power = |t: &mut Tape, args: Vec<Value>| ops::pow(t, args[0].clone(), args[1].clone());
    for base in [Value::Float(0.0), tensor(&[1], &[0.0])] {
        let exponent = Value::Float(2.0);
        let d_base = grad(&mut tape, &mut power, vec![base.clone(), exponent.clone()], 0).unwrap();
        let d_exponent = grad(&mut tape, &mut power, vec![base, exponent], 1).unwrap();
        assert_eq!((super::numbers(&d_base), super::numbers(&d_exponent)), (vec![0.0], vec![0.0]));
    }
    let d_base =
        grad(&mut tape, &mut power, vec![Value::Float(0.0), Value::Float(0.0)], 0).unwrap();
    assert_eq!(super::numbers(&d_base), [0.0]);
}

#[test]
fn comparisons_and_integers_are_never_tracked() {
    let mut tape = Tape::new();
    let x = tape.leaf(vector(&[1.0, -2.0])).unwrap();
    let mask = ops::binary(&mut tape, BinaryOp::Gt, x.clone(), Value::Float(0.0)).unwrap();
    assert!(!mask.is_tracked());
    assert_eq!(super::numbers(&mask), [1.0, 0.0]);
    let s = tape.leaf(Value::Float(2.0)).unwrap();
    let test = ops::binary(&mut tape, BinaryOp::Le, s.clone(), Value::Float(3.0)).unwrap();
    assert!(matches!(test, Value::Bool(true)));
    let sum = ops::binary(&mut tape, BinaryOp::Add, Value::Int(2), Value::Int(3)).unwrap();
    assert!(matches!(sum, Value::Int(5)));
    let mixed = ops::binary(&mut tape, BinaryOp::Mul, Value::Int(2), s).unwrap();
    assert!(mixed.is_tracked() && mixed.as_f64() == Some(4.0));
    let overflow = ops::binary(&mut tape, BinaryOp::Add, Value::Int(i64::MAX), Value::Int(1));
    assert!(overflow.is_err());
    let division = ops::binary(&mut tape, BinaryOp::Rem, Value::Int(1), Value::Int(0));
    assert_eq!(division.unwrap_err().to_string(), "integer division by zero");
}

#[test]
fn matrix_products_in_every_rank_case() {
    let f = |t: &mut Tape, args: Vec<Value>| ops::matmul(t, args[0].clone(), args[1].clone());
    let cases: [(&[usize], &[usize]); 10] = [
        (&[3], &[3]),
        (&[3], &[3, 4]),
        (&[2, 3], &[3]),
        (&[2, 3], &[3, 4]),
        (&[2, 2, 3], &[2, 3, 4]),
        (&[2, 2, 3], &[3, 4]),
        (&[3], &[2, 3, 4]),
        (&[2, 2, 3], &[3]),
        (&[1, 2, 3], &[3, 3, 2]),
        (&[2, 1, 2, 3], &[3, 3, 2]),
    ];
    for (index, (a_shape, b_shape)) in cases.into_iter().enumerate() {
        let a = sample(a_shape, -1.0, 1.0, index as u64);
        let b = sample(b_shape, -1.0, 1.0, index as u64 + 40);
        assert_gradients(&format!("{a_shape:?} @ {b_shape:?}"), &f, vec![a, b]);
    }
}

#[test]
fn reductions_with_and_without_an_axis() {
    let ops_and_domains = [
        (ReduceOp::Sum, (-2.0, 2.0)),
        (ReduceOp::Mean, (-2.0, 2.0)),
        (ReduceOp::Max, (-2.0, 2.0)),
        (ReduceOp::Min, (-2.0, 2.0)),
        (ReduceOp::Prod, (0.5, 1.5)),
        (ReduceOp::Norm, (-2.0, 2.0)),
        (ReduceOp::LogSumExp, (-2.0, 2.0)),
    ];
    for (index, (op, (low, high))) in ops_and_domains.into_iter().enumerate() {
        for axis in [None, Some(0), Some(1), Some(-1)] {
            let f = move |t: &mut Tape, args: Vec<Value>| ops::reduce(t, op, args[0].clone(), axis);
            let x = sample(&[3, 4], low, high, index as u64);
            assert_gradients(&format!("{} axis {axis:?}", op.name()), &f, vec![x]);
        }
        let f = move |t: &mut Tape, args: Vec<Value>| ops::reduce(t, op, args[0].clone(), Some(1));
        assert_gradients(op.name(), &f, vec![sample(&[2, 3, 2], low, high, 9)]);
    }
}

#[test]
fn prod_is_exact_with_zeros() {
    for axis in [None, Some(0), Some(1)] {
        let f = move |t: &mut Tape, args: Vec<Value>| {
            ops::reduce(t, ReduceOp::Prod, args[0].clone(), axis)
        };
        let one_zero = tensor(&[2, 3], &[0.5, 0.0, 2.0, 1.5, -1.0, 0.7]);
        assert_gradients("prod with one zero", &f, vec![one_zero]);
        let two_zeros = tensor(&[2, 3], &[0.0, 0.0, 2.0, 0.0, -1.0, 0.7]);
        assert_gradients("prod with two zeros", &f, vec![two_zeros]);
    }
    let mut tape = Tape::new();
    let mut prod =
        |t: &mut Tape, args: Vec<Value>| ops::reduce(t, ReduceOp::Prod, args[0].clone(), None);
    let gradient = grad(&mut tape, &mut prod, vec![vector(&[2.0, 0.0, 3.0])], 0).unwrap();
    assert_close(&gradient, &[0.0, 6.0, 0.0], 0.0, "prod gradient at a zero");
}

#[test]
fn softmax_and_log_softmax_are_stable() {
    for axis in [0, 1, -1] {
        let soft = move |t: &mut Tape, args: Vec<Value>| ops::softmax(t, args[0].clone(), axis);
        let log = move |t: &mut Tape, args: Vec<Value>| ops::log_softmax(t, args[0].clone(), axis);
        let x = sample(&[3, 4], -2.0, 2.0, axis.unsigned_abs() + 3);
        assert_gradients("softmax", &soft, vec![x.clone()]);
        assert_gradients("log_softmax", &log, vec![x]);
    }
    let mut tape = Tape::new();
    let mut loss = |t: &mut Tape, args: Vec<Value>| {
        let y = ops::log_softmax(t, args[0].clone(), 0)?;
        let picked = ops::get(t, y, &[Index::At(0)])?;
        ops::neg(t, picked)
    };
    let huge = vector(&[1000.0, -1000.0, 999.0]);
    let gradient = grad(&mut tape, &mut loss, vec![huge], 0).unwrap();
    let values = super::numbers(&gradient);
    assert!(values.iter().all(|g| g.is_finite()), "{values:?}");
    let e = (-1.0f64).exp();
    assert_close(&gradient, &[1.0 / (1.0 + e) - 1.0, 0.0, e / (1.0 + e)], 1e-12, "stable");
    let lse =
        |t: &mut Tape, args: Vec<Value>| ops::reduce(t, ReduceOp::LogSumExp, args[0].clone(), None);
    let mut lse_mut = lse;
    let gradient = grad(&mut tape, &mut lse_mut, vec![vector(&[800.0, 800.0])], 0).unwrap();
    assert_close(&gradient, &[0.5, 0.5], 1e-12, "logsumexp");
}

#[test]
fn shape_functions() {
    let cases: Vec<(&str, super::TestFn<'_>, Vec<Value>)> = vec![
        (
            "reshape",
            &|t, a| ops::reshape(t, a[0].clone(), &[3, 2]),
            vec![sample(&[2, 3], -1.0, 1.0, 1)],
        ),
        ("reshape float", &|t, a| ops::reshape(t, a[0].clone(), &[1, 1]), vec![Value::Float(0.3)]),
        (
            "transpose",
            &|t, a| ops::transpose(t, a[0].clone()),
            vec![sample(&[2, 3, 4], -1.0, 1.0, 2)],
        ),
        (
            "permute",
            &|t, a| ops::permute(t, a[0].clone(), &[2, 0, -2]),
            vec![sample(&[2, 3, 4], -1.0, 1.0, 3)],
        ),
        (
            "expand_dims",
            &|t, a| ops::expand_dims(t, a[0].clone(), -1),
            vec![sample(&[2, 3], -1.0, 1.0, 4)],
        ),
        (
            "concat 0",
            &|t, a| ops::concat(t, a[0].clone(), a[1].clone(), 0),
            vec![sample(&[2, 3], -1.0, 1.0, 5), sample(&[1, 3], -1.0, 1.0, 6)],
        ),
        (
            "concat 1",
            &|t, a| ops::concat(t, a[0].clone(), a[1].clone(), -1),
            vec![sample(&[2, 3], -1.0, 1.0, 7), sample(&[2, 2], -1.0, 1.0, 8)],
        ),
        (
            "stack",
            &|t, a| ops::stack(t, a[0].clone(), a[1].clone()),
            vec![sample(&[2, 3], -1.0, 1.0, 9), sample(&[2, 3], -1.0, 1.0, 10)],
        ),
        (
            "tensor literal of floats",
            &|t, a| {
                let product = ops::mul(t, a[0].clone(), a[1].clone())?;
                ops::from_elements(
                    t,
                    &[2, 2],
                    vec![a[0].clone(), product, Value::Int(3), a[1].clone()],
                )
            },
            vec![Value::Float(0.7), Value::Float(-1.2)],
        ),
        ("diag of a vector", &|t, a| ops::diag(t, a[0].clone()), vec![sample(&[3], -1.0, 1.0, 11)]),
        (
            "diag of a matrix",
            &|t, a| ops::diag(t, a[0].clone()),
            vec![sample(&[3, 3], -1.0, 1.0, 12)],
        ),
        (
            "diag of a tall matrix",
            &|t, a| ops::diag(t, a[0].clone()),
            vec![sample(&[4, 2], -1.0, 1.0, 13)],
        ),
        (
            "diag of a wide matrix",
            &|t, a| ops::diag(t, a[0].clone()),
            vec![sample(&[2, 4], -1.0, 1.0, 14)],
        ),
        ("trace", &|t, a| ops::trace(t, a[0].clone()), vec![sample(&[3, 2], -1.0, 1.0, 15)]),
        (
            "broadcast_to",
            &|t, a| ops::broadcast_to(t, a[0].clone(), &[2, 3, 4]),
            vec![sample(&[3, 1], -1.0, 1.0, 16)],
        ),
        (
            "sum_to_shape",
            &|t, a| ops::sum_to_shape(t, a[0].clone(), &[3, 1]),
            vec![sample(&[2, 3, 4], -1.0, 1.0, 17)],
        ),
        ("full", &|t, a| ops::full(t, &[2, 2], a[0].clone()), vec![Value::Float(0.4)]),
        (
            "float to tensor and back",
            &|t, a| {
                let as_tensor = ops::to_tensor(t, a[0].clone())?;
                let doubled = ops::mul(t, as_tensor, Value::Float(2.0))?;
                ops::to_float(t, doubled)
            },
            vec![Value::Float(0.4)],
        ),
        (
            "select",
            &|t, a| ops::select(t, &tensor(&[3], &[1.0, 0.0, 1.0]), a[0].clone(), a[1].clone()),
            vec![sample(&[2, 3], -1.0, 1.0, 18), Value::Float(0.5)],
        ),
    ];
    for (name, f, args) in cases {
        assert_gradients(name, f, args);
    }
}

#[test]
fn indexing_gathers_and_scatters() {
    let x = sample(&[3, 4], -1.0, 1.0, 1);
    let cases: Vec<(&str, super::TestFn<'_>, Vec<Value>)> = vec![
        ("get a row", &|t, a| ops::get(t, a[0].clone(), &[Index::At(1)]), vec![x.clone()]),
        (
            "get an element",
            &|t, a| ops::get(t, a[0].clone(), &[Index::At(2), Index::At(3)]),
            vec![x.clone()],
        ),
        (
            "get a block",
            &|t, a| ops::get(t, a[0].clone(), &[Index::range(1, 3), Index::range(0, 2)]),
            vec![x.clone()],
        ),
        (
            "set a row",
            &|t, a| ops::set(t, a[0].clone(), &[Index::At(1)], a[1].clone()),
            vec![x.clone(), sample(&[4], -1.0, 1.0, 2)],
        ),
        (
            "set an element to a float",
            &|t, a| ops::set(t, a[0].clone(), &[Index::At(0), Index::At(2)], a[1].clone()),
            vec![x.clone(), Value::Float(0.3)],
        ),
        (
            "set a column from a broadcast float",
            &|t, a| ops::set(t, a[0].clone(), &[Index::full(3), Index::At(1)], a[1].clone()),
            vec![x.clone(), Value::Float(0.3)],
        ),
        (
            "add a row",
            &|t, a| ops::add_at(t, a[0].clone(), &[Index::At(2)], a[1].clone()),
            vec![x.clone(), sample(&[4], -1.0, 1.0, 3)],
        ),
        (
            "scale a block",
            &|t, a| {
                let index = [Index::range(0, 2), Index::range(1, 3)];
                ops::update_at(t, a[0].clone(), &index, BinaryOp::Mul, a[1].clone())
            },
            vec![x.clone(), sample(&[2, 1], -1.0, 1.0, 4)],
        ),
    ];
    for (name, f, args) in cases {
        assert_gradients(name, f, args);
    }
}

#[test]
fn steps_reversals_and_new_axes_differentiate() {
    let x = sample(&[4, 5], -1.0, 1.0, 21);
    const REVERSED: Index = Index::Range { start: 3, step: -2, len: 2 };
    const EVERY_OTHER: Index = Index::Range { start: 0, step: 2, len: 3 };
    let cases: Vec<(&str, super::TestFn<'_>, Vec<Value>)> = vec![
        (
            "get rows backwards and every other column",
            &|t, a| ops::get(t, a[0].clone(), &[REVERSED, EVERY_OTHER]),
            vec![x.clone()],
        ),
        (
            "get a column with a new axis",
            &|t, a| {
                ops::get(
                    t,
                    a[0].clone(),
                    &[Index::full(4), Index::NewAxis { len: 1 }, Index::At(4)],
                )
            },
            vec![x.clone()],
        ),
        (
            "set a strided block backwards",
            &|t, a| ops::set(t, a[0].clone(), &[REVERSED, EVERY_OTHER], a[1].clone()),
            vec![x.clone(), sample(&[2, 3], -1.0, 1.0, 22)],
        ),
        (
            "add to a reversed column",
            &|t, a| ops::add_at(t, a[0].clone(), &[REVERSED, Index::At(1)], a[1].clone()),
            vec![x.clone(), sample(&[2], -1.0, 1.0, 23)],
        ),
        (
            "divide a strided block",
            &|t, a| {
                let index = [Index::full(4), EVERY_OTHER];
                ops::update_at(t, a[0].clone(), &index, BinaryOp::Div, a[1].clone())
            },
            vec![x.clone(), sample(&[3], 1.0, 2.0, 24)],
        ),
    ];
    for (name, f, args) in cases {
        assert_gradients(name, f, args);
    }
    // Second order: reads and a write that mix the elements non-linearly.
    const ODD: [Index; 1] = [Index::Range { start: 5, step: -2, len: 3 }];
    const EVEN: [Index; 1] = [Index::Range { start: 0, step: 2, len: 3 }];
    assert_hessian(
        "strided reads and a reversed write",
        &|t, a| {
            let v = a[0].clone();
            let backwards = ops::get(t, v.clone(), &ODD)?;
            let forwards = ops::get(t, v.clone(), &EVEN)?;
            let product = ops::mul(t, backwards.clone(), forwards)?;
            let squared = ops::mul(t, product, backwards)?;
            let written = ops::set(t, v, &ODD, squared)?;
            ops::mul(t, written.clone(), written)
        },
        vec![sample(&[6], -1.0, 1.0, 25)],
    );
}

/// The map of `x[entries]` for a tensor of `shape`, with the index tensors given.
fn advanced(shape: &[usize], entries: &[tensor::Entry]) -> Rc<tensor::Gather> {
    Rc::new(tensor::Gather::advanced(shape, entries).unwrap())
}

#[test]
fn gathers_and_scatters_through_index_tensors_differentiate() {
    use tensor::{Entry, Subscript};
    let ids = tensor::Tensor::from_vec(&[5], vec![2.0, 0.0, 2.0, -1.0, 2.0]).unwrap();
    let rows = tensor::Tensor::from_vec(&[3], vec![0.0, 2.0, 3.0]).unwrap();
    let cols = tensor::Tensor::from_vec(&[3], vec![1.0, 0.0, 1.0]).unwrap();
    // An embedding lookup with repeated rows; one element per row; indexed axes apart.
    let lookup = advanced(&[4, 3], &[Entry::Indices(&ids)]);
    let picks = advanced(&[4, 3], &[Entry::Indices(&rows), Entry::Indices(&cols)]);
    let apart = advanced(
        &[4, 3, 2],
        &[Entry::Indices(&rows), Entry::Basic(Subscript::FULL), Entry::Basic(Subscript::At(1))],
    );
    assert_eq!(apart.output_shape(), [3, 3]);
    let table = sample(&[4, 3], -1.0, 1.0, 31);
    let (lookup, picks, apart) = (&lookup, &picks, &apart);
    assert_gradients(
        "gather rows",
        &|t, a| ops::gather(t, a[0].clone(), lookup),
        vec![table.clone()],
    );
    assert_gradients(
        "gather elements",
        &|t, a| ops::gather(t, a[0].clone(), picks),
        vec![table.clone()],
    );
    assert_gradients(
        "gather apart",
        &|t, a| ops::gather(t, a[0].clone(), apart),
        vec![sample(&[4, 3, 2], -1.0, 1.0, 32)],
    );
    let scatter = |t: &mut Tape, a: Vec<Value>| ops::scatter_add(t, a[0].clone(), lookup);
    assert_gradients("scatter-add with duplicates", &scatter, vec![sample(&[5, 3], -1.0, 1.0, 33)]);
    let assign =
        |t: &mut Tape, a: Vec<Value>| ops::set_gathered(t, a[0].clone(), lookup, a[1].clone());
    assert_gradients(
        "assign with duplicates",
        &assign,
        vec![table.clone(), sample(&[5, 3], -1.0, 1.0, 34)],
    );
    assert_gradients(
        "assign a broadcast row",
        &assign,
        vec![table.clone(), sample(&[3], -1.0, 1.0, 35)],
    );
    let add = |t: &mut Tape, a: Vec<Value>| {
        ops::update_gathered(t, a[0].clone(), lookup, BinaryOp::Add, a[1].clone())
    };
    assert_gradients(
        "add with duplicates",
        &add,
        vec![table.clone(), sample(&[5, 3], -1.0, 1.0, 36)],
    );
    let multiply = |t: &mut Tape, a: Vec<Value>| {
        ops::update_gathered(t, a[0].clone(), picks, BinaryOp::Mul, a[1].clone())
    };
    assert_gradients(
        "multiply elements",
        &multiply,
        vec![table.clone(), sample(&[3], -1.0, 1.0, 37)],
    );
    // Second order: a gather, a product and a scatter-add with duplicates, non-linear in `x`.
    assert_hessian(
        "gather, scatter-add and assignment with duplicates",
        &|t, a| {
            let x = a[0].clone();
            let gathered = ops::gather(t, x.clone(), lookup)?;
            let squared = ops::mul(t, gathered.clone(), gathered.clone())?;
            let scattered = ops::scatter_add(t, squared, lookup)?;
            let product = ops::mul(t, scattered, x.clone())?;
            let picked = ops::gather(t, x, picks)?;
            let picked = ops::mul(t, picked.clone(), picked)?;
            let written = ops::set_gathered(t, product, picks, picked)?;
            let added = ops::update_gathered(t, written, lookup, BinaryOp::Add, gathered)?;
            ops::mul(t, added.clone(), added)
        },
        vec![table.clone()],
    );
}

#[test]
fn selections_and_writes_through_masks_differentiate() {
    use tensor::{Entry, Subscript};
    // A mask of the leading axes (rows 0, 2 and 3) and one of every element; a mask on axis 1.
    let rows = tensor::Tensor::from_vec(&[4], vec![1.0, 0.0, 1.0, 1.0]).unwrap();
    let elements =
        tensor::Tensor::from_vec(&[4, 3], (0..12).map(|k| (k % 3 % 2) as f64).collect()).unwrap();
    let columns = tensor::Tensor::from_vec(&[3], vec![0.0, 1.0, 1.0]).unwrap();
    let by_rows = advanced(&[4, 3], &[Entry::Mask(&rows)]);
    let by_elements = advanced(&[4, 3], &[Entry::Mask(&elements)]);
    let by_columns = advanced(&[4, 3], &[Entry::Basic(Subscript::FULL), Entry::Mask(&columns)]);
    assert_eq!(by_rows.output_shape(), [3, 3]);
    assert_eq!(by_elements.output_shape(), [4]);
    assert_eq!(by_columns.output_shape(), [4, 2]);
    let table = sample(&[4, 3], -1.0, 1.0, 41);
    let (by_rows, by_elements, by_columns) = (&by_rows, &by_elements, &by_columns);
    for (name, map) in [("rows", by_rows), ("elements", by_elements), ("columns", by_columns)] {
        assert_gradients(name, &|t, a| ops::gather(t, a[0].clone(), map), vec![table.clone()]);
    }
    let assign =
        |t: &mut Tape, a: Vec<Value>| ops::set_gathered(t, a[0].clone(), by_rows, a[1].clone());
    assert_gradients("assign rows", &assign, vec![table.clone(), sample(&[3, 3], -1.0, 1.0, 42)]);
    let add = |t: &mut Tape, a: Vec<Value>| {
        ops::update_gathered(t, a[0].clone(), by_elements, BinaryOp::Add, a[1].clone())
    };
    assert_gradients("add elements", &add, vec![table.clone(), sample(&[4], -1.0, 1.0, 43)]);
    // Second order: selections, products and writes through masks, non-linear in `x`.
    assert_hessian(
        "selections and writes through masks",
        &|t, a| {
            let x = a[0].clone();
            let picked = ops::gather(t, x.clone(), by_rows)?;
            let squared = ops::mul(t, picked.clone(), picked)?;
            let written = ops::set_gathered(t, x.clone(), by_rows, squared)?;
            let columns = ops::gather(t, x, by_columns)?;
            let columns = ops::mul(t, columns.clone(), columns)?;
            let added = ops::update_gathered(t, written, by_columns, BinaryOp::Mul, columns)?;
            ops::mul(t, added.clone(), added)
        },
        vec![table.clone()],
    );
}

/// A well-conditioned matrix: a multiple of the identity plus small random entries.
fn well_conditioned(n: usize, seed: u64) -> Value {
    let noise = super::numbers(&sample(&[n, n], -0.5, 0.5, seed));
    let values: Vec<f64> =
        (0..n * n).map(|k| noise[k] + if k / n == k % n { 2.0 } else { 0.0 }).collect();
    tensor(&[n, n], &values)
}

/// `(a + a^T) / 2 + n I`, symmetric positive definite for small `a`.
pub(super) fn spd(t: &mut Tape, a: Value) -> Result<Value, crate::autodiff::AdError> {
    let n = a.shape()[0];
    let a_t = ops::transpose(t, a.clone())?;
    let sum = ops::add(t, a, a_t)?;
    let half = ops::mul(t, sum, Value::Float(0.5))?;
    let identity = Value::tensor(tensor::Tensor::eye(n)?);
    let shifted = ops::mul(t, identity, Value::Float(n as f64))?;
    ops::add(t, half, shifted)
}

#[test]
fn linear_algebra() {
    let cases: Vec<(&str, super::TestFn<'_>, Vec<Value>)> = vec![
        ("inv", &|t, a| ops::inv(t, a[0].clone()), vec![well_conditioned(3, 1)]),
        ("det", &|t, a| ops::det(t, a[0].clone()), vec![well_conditioned(3, 2)]),
        (
            "det of a singular matrix",
            &|t, a| ops::det(t, a[0].clone()),
            vec![tensor(&[3, 3], &[1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 0.5, -1.0, 2.0])],
        ),
        (
            "solve with a vector",
            &|t, a| ops::solve(t, a[0].clone(), a[1].clone()),
            vec![well_conditioned(3, 3), sample(&[3], -1.0, 1.0, 4)],
        ),
        (
            "solve with a matrix",
            &|t, a| ops::solve(t, a[0].clone(), a[1].clone()),
            vec![well_conditioned(3, 5), sample(&[3, 2], -1.0, 1.0, 6)],
        ),
        (
            "cholesky of a symmetrised matrix",
            &|t, a| {
                let s = spd(t, a[0].clone())?;
                ops::cholesky(t, s)
            },
            vec![sample(&[3, 3], -0.5, 0.5, 7)],
        ),
    ];
    for (name, f, args) in cases {
        assert_gradients(name, f, args);
    }
}

#[test]
fn cholesky_gradient_is_symmetric() {
    let mut tape = Tape::new();
    let a = {
        let mut t = Tape::new();
        spd(&mut t, sample(&[3, 3], -0.5, 0.5, 1)).unwrap().detach()
    };
    let mut f = |t: &mut Tape, args: Vec<Value>| {
        let factor = ops::cholesky(t, args[0].clone())?;
        super::scalarize(t, factor)
    };
    let gradient = super::numbers(&grad(&mut tape, &mut f, vec![a], 0).unwrap());
    for i in 0..3 {
        for j in 0..3 {
            assert!((gradient[3 * i + j] - gradient[3 * j + i]).abs() < 1e-14, "{gradient:?}");
        }
    }
}

#[test]
fn contractions() {
    let contraction = |spec: &str| Rc::new(Contraction::from_spec(spec).unwrap());
    let specs: Vec<(&str, Vec<Vec<usize>>)> = vec![
        ("ik,kj->ij", vec![vec![2, 3], vec![3, 4]]),
        ("ii->i", vec![vec![3, 3]]),
        ("ii->", vec![vec![3, 3]]),
        ("i,j->ij", vec![vec![2], vec![3]]),
        ("ij->ji", vec![vec![2, 3]]),
        ("ij,jk,kl->il", vec![vec![2, 3], vec![3, 2], vec![2, 4]]),
        ("ij,ij->ij", vec![vec![2, 3], vec![2, 3]]),
        ("ac,cb->abc", vec![vec![2, 3], vec![3, 2]]),
        ("ij,->ij", vec![vec![2, 3], vec![]]),
    ];
    for (index, (spec, shapes)) in specs.into_iter().enumerate() {
        let rc = contraction(spec);
        let f = move |t: &mut Tape, args: Vec<Value>| ops::einsum(t, &rc, args);
        let args = shapes
            .iter()
            .enumerate()
            .map(|(k, shape)| sample(shape, -1.0, 1.0, (index * 10 + k) as u64))
            .collect();
        assert_gradients(spec, &f, args);
    }
    let scaled =
        Rc::new(Contraction::from_labels(&[["i", "k"], ["k", "j"]], &["i", "j"], 0.5).unwrap());
    let f = move |t: &mut Tape, args: Vec<Value>| ops::einsum(t, &scaled, args);
    let args = vec![sample(&[2, 3], -1.0, 1.0, 1), sample(&[3, 2], -1.0, 1.0, 2)];
    assert_gradients("scaled index statement", &f, args);
    let with_float = contraction("ij,->ij");
    let f = move |t: &mut Tape, args: Vec<Value>| ops::einsum(t, &with_float, args);
    assert_gradients("float factor", &f, vec![sample(&[2, 2], -1.0, 1.0, 3), Value::Float(0.7)]);
}

#[test]
fn ellipsis_contractions() {
    let specs: Vec<(&str, Vec<Vec<usize>>)> = vec![
        ("...ij,...jk->...ik", vec![vec![2, 2, 3], vec![2, 3, 2]]),
        // Batch axes [2, 1] and [3] broadcast: the extent-1 axis is reshaped away and its
        // gradient comes back in the operand's own shape.
        ("...ij,...jk->...ik", vec![vec![2, 1, 2, 3], vec![3, 3, 2]]),
        ("...ii->...i", vec![vec![2, 3, 3]]),
        ("i...->...", vec![vec![3, 2, 2]]),
        ("...i,...i", vec![vec![2, 3], vec![1, 3]]),
        ("ba...,...", vec![vec![3, 2, 2], vec![2]]),
        ("...,...", vec![vec![2, 3], vec![]]),
    ];
    for (index, (spec, shapes)) in specs.into_iter().enumerate() {
        let parsed = EinsumSpec::parse(spec).unwrap();
        let f = move |t: &mut Tape, args: Vec<Value>| ops::einsum_ellipsis(t, &parsed, args);
        let args = shapes
            .iter()
            .enumerate()
            .map(|(k, shape)| sample(shape, -1.0, 1.0, (index * 10 + k + 100) as u64))
            .collect();
        assert_gradients(spec, &f, args);
    }
}
