//! Nested differentiation: second derivatives of the element-wise and matrix primitives
//! (`hessian`, and `grad` of `grad`), the perturbation-confusion examples of Abadi & Plotkin,
//! `jvp`, `vjp` and `jacobian`, derivatives of third order, and the trace semantics at
//! conditionals.

use std::rc::Rc;

use super::primitives::spd;
use super::{assert_close, assert_hessian, numbers, sample, tensor, vector};
use crate::autodiff::{AdError, Tape, grad, hessian, jacobian, jvp, vjp};
use crate::ops;
use crate::value::Value;
use tensor::einsum::Contraction;
use tensor::{BinaryOp, Index, ReduceOp, UnaryOp};

fn slice(t: &mut Tape, v: &Value, start: i64, end: i64) -> Result<Value, AdError> {
    ops::get(t, v.clone(), &[Index::range(start as usize, end as usize)])
}

#[test]
fn second_derivatives_of_unary_functions() {
    for (index, op) in UnaryOp::ALL.into_iter().enumerate() {
        let (low, high) = match op {
            UnaryOp::Asin | UnaryOp::Acos => (-0.8, 0.8),
            UnaryOp::Ln | UnaryOp::Log2 | UnaryOp::Log10 | UnaryOp::Sqrt => (0.5, 2.0),
            UnaryOp::Tan => (-1.0, 1.0),
            UnaryOp::Log1p => (-0.5, 2.0),
            _ => (0.2, 1.5),
        };
        let f = move |t: &mut Tape, args: Vec<Value>| ops::unary(t, op, args[0].clone());
        assert_hessian(op.name(), &f, vec![sample(&[3], low, high, index as u64)]);
        let x = (low + high) / 2.0 + 0.05;
        assert_hessian(op.name(), &f, vec![Value::Float(x)]);
        // The same through `grad` of `grad` and through the tensor path.
        let mut tape = Tape::new();
        let mut first = |t: &mut Tape, args: Vec<Value>| {
            let mut inner = |t: &mut Tape, args: Vec<Value>| ops::unary(t, op, args[0].clone());
            grad(t, &mut inner, args, 0)
        };
        let scalar = grad(&mut tape, &mut first, vec![Value::Float(x)], 0).unwrap();
        let rank_zero = grad(&mut tape, &mut first, vec![tensor(&[], &[x])], 0).unwrap();
        assert_close(&scalar, &numbers(&rank_zero), 1e-12, op.name());
    }
}

#[test]
fn second_derivatives_of_binary_arithmetic() {
    let ops_and_ranges = [
        (BinaryOp::Add, (-1.0, 1.0)),
        (BinaryOp::Sub, (-1.0, 1.0)),
        (BinaryOp::Mul, (-1.0, 1.0)),
        (BinaryOp::Div, (0.5, 2.0)),
        (BinaryOp::Pow, (0.5, 2.0)),
        (BinaryOp::Max, (-1.0, 1.0)),
        (BinaryOp::Min, (-1.0, 1.0)),
        (BinaryOp::Atan2, (-1.0, 1.0)),
        (BinaryOp::Hypot, (-1.0, 1.0)),
    ];
    for (index, (op, (low, high))) in ops_and_ranges.into_iter().enumerate() {
        // Both operands come from one vector, with broadcasting between them.
        let f = move |t: &mut Tape, args: Vec<Value>| {
            let a = slice(t, &args[0], 0, 6)?;
            let a = ops::reshape(t, a, &[2, 3])?;
            let b = slice(t, &args[0], 6, 9)?;
            ops::binary(t, op, a, b)
        };
        assert_hessian(op.symbol(), &f, vec![sample(&[9], low, high, index as u64)]);
        let g = move |t: &mut Tape, args: Vec<Value>| {
            let a = ops::get(t, args[0].clone(), &[Index::At(0)])?;
            let b = ops::get(t, args[0].clone(), &[Index::At(1)])?;
            ops::binary(t, op, a, b)
        };
        assert_hessian(op.symbol(), &g, vec![sample(&[2], low, high, index as u64 + 20)]);
    }
    // fmod away from its jumps.
    let rem = |t: &mut Tape, args: Vec<Value>| {
        let a = slice(t, &args[0], 0, 2)?;
        let b = slice(t, &args[0], 2, 4)?;
        let r = ops::binary(t, BinaryOp::Rem, a, b)?;
        ops::mul(t, r.clone(), r)
    };
    assert_hessian("%", &rem, vec![vector(&[2.3, 2.25, 1.02, 1.01])]);
}

#[test]
fn second_derivatives_of_matrix_primitives() {
    fn square(t: &mut Tape, v: &Value, n: usize) -> Result<Value, AdError> {
        ops::reshape(t, v.clone(), &[n, n])
    }
    let cases: Vec<(&str, super::TestFn<'_>, Vec<Value>)> = vec![
        (
            "matmul",
            &|t, a| {
                let lhs = slice(t, &a[0], 0, 6)?;
                let lhs = ops::reshape(t, lhs, &[2, 3])?;
                let rhs = slice(t, &a[0], 6, 12)?;
                let rhs = ops::reshape(t, rhs, &[3, 2])?;
                let product = ops::matmul(t, lhs.clone(), rhs)?;
                ops::matmul(t, product, lhs)
            },
            vec![sample(&[12], -1.0, 1.0, 1)],
        ),
        (
            "vector matmul",
            &|t, a| {
                let v = slice(t, &a[0], 0, 2)?;
                let m = slice(t, &a[0], 2, 6)?;
                let m = ops::reshape(t, m, &[2, 2])?;
                let mv = ops::matmul(t, m, v.clone())?;
                ops::matmul(t, v, mv)
            },
            vec![sample(&[6], -1.0, 1.0, 2)],
        ),
        (
            "inv",
            &|t, a| {
                let m = square(t, &a[0], 2)?;
                ops::inv(t, m)
            },
            vec![vector(&[2.0, 0.3, -0.2, 1.5])],
        ),
        (
            "det",
            &|t, a| {
                let m = square(t, &a[0], 3)?;
                ops::det(t, m)
            },
            vec![sample(&[9], -1.0, 1.0, 3)],
        ),
        (
            "det of a singular matrix",
            &|t, a| {
                let m = square(t, &a[0], 2)?;
                ops::det(t, m)
            },
            vec![vector(&[1.0, 2.0, 2.0, 4.0])],
        ),
        (
            "solve",
            &|t, a| {
                let m = slice(t, &a[0], 0, 4)?;
                let m = ops::reshape(t, m, &[2, 2])?;
                let b = slice(t, &a[0], 4, 6)?;
                ops::solve(t, m, b)
            },
            vec![vector(&[2.0, 0.3, -0.2, 1.5, 0.7, -0.4])],
        ),
        (
            "cholesky",
            &|t, a| {
                let m = square(t, &a[0], 2)?;
                let s = spd(t, m)?;
                ops::cholesky(t, s)
            },
            vec![sample(&[4], -0.5, 0.5, 4)],
        ),
        (
            "trace and diag",
            &|t, a| {
                let m = square(t, &a[0], 2)?;
                let product = ops::matmul(t, m.clone(), m.clone())?;
                let d = ops::diag(t, product.clone())?;
                let s = ops::trace(t, product)?;
                ops::mul(t, d, s)
            },
            vec![sample(&[4], -1.0, 1.0, 5)],
        ),
        (
            "einsum",
            &|t, a| {
                let m = square(t, &a[0], 2)?;
                let spec = Rc::new(Contraction::from_spec("ij,jk,ki->i").unwrap());
                ops::einsum(t, &spec, vec![m.clone(), m.clone(), m])
            },
            vec![sample(&[4], -1.0, 1.0, 6)],
        ),
    ];
    for (name, f, args) in cases {
        assert_hessian(name, f, args);
    }
}

#[test]
fn second_derivatives_of_reductions_and_softmax() {
    let cases: Vec<(&str, super::TestFn<'_>, Vec<Value>)> = vec![
        (
            "prod",
            &|t, a| ops::reduce(t, ReduceOp::Prod, a[0].clone(), None),
            vec![sample(&[4], 0.5, 1.5, 1)],
        ),
        (
            "prod with a zero",
            &|t, a| ops::reduce(t, ReduceOp::Prod, a[0].clone(), None),
            vec![vector(&[0.5, 0.0, 2.0, -1.5])],
        ),
        (
            "prod with two zeros",
            &|t, a| ops::reduce(t, ReduceOp::Prod, a[0].clone(), None),
            vec![vector(&[0.0, 0.7, 0.0])],
        ),
        (
            "norm",
            &|t, a| ops::reduce(t, ReduceOp::Norm, a[0].clone(), None),
            vec![sample(&[3], -1.0, 1.0, 2)],
        ),
        (
            "logsumexp",
            &|t, a| ops::reduce(t, ReduceOp::LogSumExp, a[0].clone(), None),
            vec![sample(&[3], -1.0, 1.0, 3)],
        ),
        (
            "mean",
            &|t, a| {
                let squares = ops::mul(t, a[0].clone(), a[0].clone())?;
                ops::reduce(t, ReduceOp::Mean, squares, None)
            },
            vec![sample(&[3], -1.0, 1.0, 4)],
        ),
        ("softmax", &|t, a| ops::softmax(t, a[0].clone(), 0), vec![sample(&[4], -1.0, 1.0, 5)]),
        (
            "log_softmax",
            &|t, a| ops::log_softmax(t, a[0].clone(), -1),
            vec![sample(&[4], -1.0, 1.0, 6)],
        ),
        (
            "max of squares",
            &|t, a| {
                let squares = ops::mul(t, a[0].clone(), a[0].clone())?;
                ops::reduce(t, ReduceOp::Max, squares, None)
            },
            vec![vector(&[0.3, -1.2, 0.8])],
        ),
    ];
    for (name, f, args) in cases {
        assert_hessian(name, f, args);
    }
}

#[test]
fn perturbations_are_not_confused() {
    fn inner(t: &mut Tape, args: Vec<Value>) -> Result<Value, AdError> {
        ops::add(t, args[0].clone(), args[1].clone())
    }
    // outer(x) = x * grad(inner, 1)(x, 1.0); grad(outer)(1.0) == 1.0.
    let mut outer = |t: &mut Tape, args: Vec<Value>| {
        let x = args[0].clone();
        let derivative = grad(t, &mut inner, vec![x.clone(), Value::Float(1.0)], 1)?;
        ops::mul(t, x, derivative)
    };
    let mut tape = Tape::new();
    let result = grad(&mut tape, &mut outer, vec![Value::Float(1.0)], 0).unwrap();
    assert!(matches!(result, Value::Float(x) if x == 1.0), "{result:?}");
    // f(x) = grad(inner, 1)(x, 1.0); g(x) = x + f(x); grad(g)(1.0) == 1.0.
    let mut g = |t: &mut Tape, args: Vec<Value>| {
        let x = args[0].clone();
        let f = grad(t, &mut inner, vec![x.clone(), Value::Float(1.0)], 1)?;
        ops::add(t, x, f)
    };
    let result = grad(&mut tape, &mut g, vec![Value::Float(1.0)], 0).unwrap();
    assert!(matches!(result, Value::Float(x) if x == 1.0), "{result:?}");
    // The classic confusion test: d/dx [x * d/dy (x + y)] = 1, not 2.
    let mut confused = |t: &mut Tape, args: Vec<Value>| {
        let x = args[0].clone();
        let mut shifted = |t: &mut Tape, ys: Vec<Value>| ops::add(t, x.clone(), ys[0].clone());
        let derivative = grad(t, &mut shifted, vec![Value::Float(2.0)], 0)?;
        ops::mul(t, args[0].clone(), derivative)
    };
    let result = grad(&mut tape, &mut confused, vec![Value::Float(3.0)], 0).unwrap();
    assert!(matches!(result, Value::Float(x) if x == 1.0), "{result:?}");
    assert_eq!(tape.depth(), 1);
}

#[test]
fn third_derivatives_nest() {
    let mut tape = Tape::new();
    let x = 0.7f64;
    let mut sin = |t: &mut Tape, args: Vec<Value>| ops::unary(t, UnaryOp::Sin, args[0].clone());
    let mut first = |t: &mut Tape, args: Vec<Value>| grad(t, &mut sin, args, 0);
    let mut second = |t: &mut Tape, args: Vec<Value>| grad(t, &mut first, args, 0);
    let third = grad(&mut tape, &mut second, vec![Value::Float(x)], 0).unwrap();
    assert_close(&third, &[-x.cos()], 1e-14, "sin'''");
    // The same on a tensor, through exp and a product.
    let mut cube = |t: &mut Tape, args: Vec<Value>| {
        let e = ops::unary(t, UnaryOp::Exp, args[0].clone())?;
        let squared = ops::mul(t, e, args[0].clone())?;
        ops::reduce(t, ReduceOp::Sum, squared, None)
    };
    // d/dx (x e^x) = (1 + x) e^x, then (2 + x) e^x, then (3 + x) e^x.
    let mut first = |t: &mut Tape, args: Vec<Value>| {
        let g = grad(t, &mut cube, args, 0)?;
        ops::reduce(t, ReduceOp::Sum, g, None)
    };
    let mut second = |t: &mut Tape, args: Vec<Value>| {
        let g = grad(t, &mut first, args, 0)?;
        ops::reduce(t, ReduceOp::Sum, g, None)
    };
    let point = [0.1, -0.4];
    let third = grad(&mut tape, &mut second, vec![vector(&point)], 0).unwrap();
    let expected: Vec<f64> = point.iter().map(|x| (3.0 + x) * x.exp()).collect();
    assert_close(&third, &expected, 1e-13, "(x e^x)'''");
}

#[test]
fn jvp_vjp_and_jacobian() {
    // f(v) = [v0 v1, sin(v1), v0^3] at v = (0.5, -1.2).
    fn f(t: &mut Tape, args: Vec<Value>) -> Result<Value, AdError> {
        let v = args[0].clone();
        let a = ops::get(t, v.clone(), &[Index::At(0)])?;
        let b = ops::get(t, v, &[Index::At(1)])?;
        let ab = ops::mul(t, a.clone(), b.clone())?;
        let sine = ops::unary(t, UnaryOp::Sin, b)?;
        let cube = ops::pow(t, a, Value::Float(3.0))?;
        ops::from_elements(t, &[3], vec![ab, sine, cube])
    }
    let (a, b) = (0.5f64, -1.2f64);
    let expected = [b, a, 0.0, b.cos(), 3.0 * a * a, 0.0];
    let mut tape = Tape::new();
    let mut function = f;
    let j = jacobian(&mut tape, &mut function, vec![vector(&[a, b])]).unwrap();
    assert_eq!(j.shape(), [3, 2]);
    assert_close(&j, &expected, 1e-14, "jacobian");
    let tangent = vector(&[0.3, -0.7]);
    let directional = jvp(&mut tape, &mut function, vec![vector(&[a, b])], tangent).unwrap();
    let expected_jvp: Vec<f64> =
        (0..3).map(|i| expected[2 * i] * 0.3 + expected[2 * i + 1] * -0.7).collect();
    assert_close(&directional, &expected_jvp, 1e-14, "jvp");
    let cotangent = vector(&[1.0, 2.0, -1.0]);
    let pulled = vjp(&mut tape, &mut function, vec![vector(&[a, b])], cotangent).unwrap();
    let expected_vjp: Vec<f64> =
        (0..2).map(|j| expected[j] + 2.0 * expected[2 + j] - expected[4 + j]).collect();
    assert_close(&pulled, &expected_vjp, 1e-14, "vjp");
    // Floats: jvp of sin is cos times the tangent; a jvp nested in grad is a second derivative.
    let mut sin = |t: &mut Tape, args: Vec<Value>| ops::unary(t, UnaryOp::Sin, args[0].clone());
    let d = jvp(&mut tape, &mut sin, vec![Value::Float(0.3)], Value::Float(2.0)).unwrap();
    assert_close(&d, &[2.0 * 0.3f64.cos()], 1e-15, "jvp of sin");
    let mut directional = |t: &mut Tape, args: Vec<Value>| {
        let mut sin = |t: &mut Tape, args: Vec<Value>| ops::unary(t, UnaryOp::Sin, args[0].clone());
        jvp(t, &mut sin, args, Value::Float(1.0))
    };
    let second = grad(&mut tape, &mut directional, vec![Value::Float(0.3)], 0).unwrap();
    assert_close(&second, &[-(0.3f64.sin())], 1e-15, "grad of jvp");
    // A function that ignores its argument has zero derivatives of the right types.
    let mut constant = |_: &mut Tape, _: Vec<Value>| Ok::<_, AdError>(vector(&[1.0, 2.0]));
    let zero = jvp(&mut tape, &mut constant, vec![Value::Float(1.0)], Value::Float(1.0)).unwrap();
    assert_eq!(numbers(&zero), [0.0, 0.0]);
    let zero = jacobian(&mut tape, &mut constant, vec![vector(&[1.0, 2.0, 3.0])]).unwrap();
    assert_eq!(zero.shape(), [2, 3]);
    let mut one = |_: &mut Tape, _: Vec<Value>| Ok::<_, AdError>(Value::Float(1.0));
    let zero = grad(&mut tape, &mut one, vec![vector(&[1.0])], 0);
    assert_eq!(numbers(&zero.unwrap()), [0.0]);
    assert_eq!(tape.depth(), 1);
}

#[test]
fn hessian_matches_jacobian_of_grad_and_jvp_of_grad() {
    fn f(t: &mut Tape, args: Vec<Value>) -> Result<Value, AdError> {
        let v = args[0].clone();
        let squares = ops::mul(t, v.clone(), v.clone())?;
        let s = ops::unary(t, UnaryOp::Sin, squares)?;
        let p = ops::reduce(t, ReduceOp::Prod, v, None)?;
        let total = ops::reduce(t, ReduceOp::Sum, s, None)?;
        ops::add(t, total, p)
    }
    let x = vector(&[0.3, -0.8, 1.1]);
    let mut tape = Tape::new();
    let mut function = f;
    let h = hessian(&mut tape, &mut function, vec![x.clone()]).unwrap();
    let mut gradient = |t: &mut Tape, args: Vec<Value>| grad(t, &mut function, args, 0);
    let j = jacobian(&mut tape, &mut gradient, vec![x.clone()]).unwrap();
    assert_close(&h, &numbers(&j), 1e-14, "hessian vs jacobian of grad");
    let h = numbers(&h);
    for column in 0..3 {
        let mut basis = vec![0.0; 3];
        basis[column] = 1.0;
        let d = jvp(&mut tape, &mut gradient, vec![x.clone()], vector(&basis)).unwrap();
        let expected: Vec<f64> = (0..3).map(|row| h[3 * row + column]).collect();
        assert_close(&d, &expected, 1e-14, "jvp of grad");
    }
    let scalar = hessian(
        &mut tape,
        &mut |t: &mut Tape, a: Vec<Value>| ops::pow(t, a[0].clone(), Value::Float(3.0)),
        vec![Value::Float(2.0)],
    )
    .unwrap();
    assert!(matches!(scalar, Value::Float(x) if (x - 12.0).abs() < 1e-12), "{scalar:?}");
}

#[test]
fn derivatives_follow_the_trace_at_conditionals() {
    // f(x) = x == 0 ? 0 : x, the identity, has derivative 0 at 0 along the trace taken there.
    let mut f = |_: &mut Tape, args: Vec<Value>| -> Result<Value, AdError> {
        match args[0].as_f64() == Some(0.0) {
            true => Ok(Value::Float(0.0)),
            false => Ok(args[0].clone()),
        }
    };
    let mut tape = Tape::new();
    let at_zero = grad(&mut tape, &mut f, vec![Value::Float(0.0)], 0).unwrap();
    let at_one = grad(&mut tape, &mut f, vec![Value::Float(1.0)], 0).unwrap();
    assert_eq!((numbers(&at_zero), numbers(&at_one)), (vec![0.0], vec![1.0]));
}

#[test]
fn taylor_series_exp_has_exact_derivatives() {
    // exp(x) as the loop `term *= x / n; sum += term` until the term is negligible.
    fn taylor_exp(t: &mut Tape, args: Vec<Value>) -> Result<Value, AdError> {
        let x = args[0].clone();
        let mut sum = Value::Float(1.0);
        let mut term = Value::Float(1.0);
        for n in 1..60 {
            let ratio = ops::div(t, x.clone(), Value::Float(f64::from(n)))?;
            term = ops::mul(t, term, ratio)?;
            sum = ops::add(t, sum, term.clone())?;
        }
        Ok(sum)
    }
    let x = 1.6f64;
    let mut tape = Tape::new();
    let mut f = taylor_exp;
    let first = grad(&mut tape, &mut f, vec![Value::Float(x)], 0).unwrap();
    let mut derivative = |t: &mut Tape, args: Vec<Value>| grad(t, &mut f, args, 0);
    let second = grad(&mut tape, &mut derivative, vec![Value::Float(x)], 0).unwrap();
    let h = hessian(&mut tape, &mut f, vec![Value::Float(x)]).unwrap();
    for (value, what) in [(first, "first"), (second, "second"), (h, "hessian")] {
        let value = value.as_f64().unwrap();
        assert!((value - x.exp()).abs() < 1e-9, "{what}: {value} vs {}", x.exp());
    }
}

/// The Hessian of `f` at `x`, row-major.
fn hessian_at(f: super::TestFn<'_>, x: Value) -> Vec<f64> {
    let mut tape = Tape::new();
    let mut f = |t: &mut Tape, args: Vec<Value>| f(t, args);
    numbers(&hessian(&mut tape, &mut f, vec![x]).unwrap())
}

/// The two elements of a vector argument.
fn pair(t: &mut Tape, v: &Value) -> Result<(Value, Value), AdError> {
    let a = ops::get(t, v.clone(), &[Index::At(0)])?;
    let b = ops::get(t, v.clone(), &[Index::At(1)])?;
    Ok((a, b))
}

#[test]
fn special_cases_stay_right_at_second_order() {
    // pow(x, 0) is the constant 1: its second derivative at 0 is 0, not NaN, on both paths.
    let mut tape = Tape::new();
    let mut first = |t: &mut Tape, args: Vec<Value>| {
        let mut inner =
            |t: &mut Tape, args: Vec<Value>| ops::pow(t, args[0].clone(), Value::Float(0.0));
        grad(t, &mut inner, args, 0)
    };
    for x in [Value::Float(0.0), tensor(&[], &[0.0]), Value::Float(2.0)] {
        let second = grad(&mut tape, &mut first, vec![x], 0).unwrap();
        assert_eq!(numbers(&second), [0.0]);
    }
    // The Hessian of pow(v[0], v[1]) is symmetric where the exponent is 0: at [4, 0] it is
    // [[0, 1/4], [1/4, ln(4)^2]] (JAX and PyTorch give 0 for the mixed derivative d/dy of
    // d/dx, and so an asymmetric matrix); at the origin every entry is 0.
    let power = |t: &mut Tape, args: Vec<Value>| {
        let (x, y) = pair(t, &args[0])?;
        ops::pow(t, x, y)
    };
    let ln4 = 4f64.ln();
    assert_eq!(hessian_at(&power, vector(&[4.0, 0.0])), [0.0, 0.25, 0.25, ln4 * ln4]);
    assert_eq!(hessian_at(&power, vector(&[0.0, 0.0])), [0.0; 4]);
    // And elsewhere it is the finite-difference one.
    assert_hessian("pow at [1.5, 0.5]", &power, vec![vector(&[1.5, 0.5])]);
    // norm, hypot and atan2 at 0: zeros, no NaN from the quotient the special case replaced.
    let norm =
        |t: &mut Tape, args: Vec<Value>| ops::reduce(t, ReduceOp::Norm, args[0].clone(), None);
    assert_eq!(hessian_at(&norm, vector(&[0.0, 0.0])), [0.0; 4]);
    for op in [BinaryOp::Hypot, BinaryOp::Atan2] {
        let f = move |t: &mut Tape, args: Vec<Value>| {
            let (x, y) = pair(t, &args[0])?;
            ops::binary(t, op, x, y)
        };
        assert_eq!(hessian_at(&f, vector(&[0.0, 0.0])), [0.0; 4], "{op:?}");
    }
    // abs and max keep their constant choices at second order.
    let abs = |t: &mut Tape, args: Vec<Value>| {
        let y = ops::unary(t, UnaryOp::Abs, args[0].clone())?;
        ops::reduce(t, ReduceOp::Sum, y, None)
    };
    assert_eq!(hessian_at(&abs, vector(&[0.0, 1.0])), [0.0; 4]);
    let max = |t: &mut Tape, args: Vec<Value>| {
        let (x, y) = pair(t, &args[0])?;
        let m = ops::binary(t, BinaryOp::Max, x.clone(), y)?;
        ops::mul(t, m, x)
    };
    // max(x, y) x at a tie: the gradient of max splits in halves, d/dx = max + x/2, d/dy = x/2.
    assert_eq!(hessian_at(&max, vector(&[1.0, 1.0])), [1.0, 0.5, 0.5, 0.0]);
}
