//! `backward(y)` of a tensor `y`, and gradients through sums: the seed (ones of `y`'s shape) is a
//! uniform adjoint kept without its elements, which contractions, sums, broadcasts, reshapes and
//! element-wise rules map on without materialising it. Each gradient is checked against central
//! finite differences of the sum of `y` and against `vjp` seeded with a tensor of ones, which
//! takes the rules for values; second derivatives check that a uniform gradient is only ever a
//! constant.

use std::rc::Rc;

use super::{
    TestFn, assert_close, assert_gradients, assert_hessian, moved_back, moved_first, numbers,
    sample, tensor,
};
use crate::autodiff::{AdError, Tape, grad, vjp};
use crate::ops;
use crate::value::Value;
use tensor::einsum::Contraction;
use tensor::{BinaryOp, Index, ReduceOp, Tensor, UnaryOp};

fn contraction(spec: &str) -> Rc<Contraction> {
    Rc::new(Contraction::from_spec(spec).unwrap())
}

/// The sum of the elements of `f(args)`, computed on a tape that records nothing.
fn plain_sum(f: TestFn<'_>, args: Vec<Value>) -> f64 {
    let mut tape = Tape::new();
    numbers(&f(&mut tape, args).unwrap()).iter().sum()
}

/// Checks `backward(f(args))` on the program tape for a tensor-valued `f`: `grad(y)` is ones,
/// and the gradient of every argument has the argument's type and equals central finite
/// differences of the sum of `y`'s elements and, to rounding, what `vjp` pulls back from a
/// tensor of ones.
fn assert_backward(name: &str, f: TestFn<'_>, args: Vec<Value>) {
    let mut tape = Tape::new();
    let leaves: Vec<Value> = args.iter().map(|arg| tape.leaf(arg.clone()).unwrap()).collect();
    let y = f(&mut tape, leaves.clone()).unwrap_or_else(|error| panic!("{name}: {error}"));
    assert!(y.is_tensor(), "{name}: the output is a tensor");
    let ones = Value::tensor(Tensor::ones(y.shape()).unwrap());
    tape.backward(&y).unwrap_or_else(|error| panic!("{name}: {error}"));
    assert_close(&tape.grad_of(&y).unwrap(), &numbers(&ones), 0.0, &format!("{name}: grad(y)"));
    for (position, leaf) in leaves.iter().enumerate() {
        let what = |against: &str| format!("{name}: argument {position} against {against}");
        let analytic = tape.grad_of(leaf).unwrap();
        assert_eq!(analytic.is_tensor(), args[position].is_tensor(), "{}", what("its kind"));
        assert_eq!(analytic.shape(), args[position].shape(), "{}", what("its shape"));
        let point = numbers(&args[position]);
        let numeric: Vec<f64> = (0..point.len())
            .map(|j| {
                let step = 1e-6 * point[j].abs().max(1.0);
                let sum_at = |offset: f64| {
                    let mut moved = point.clone();
                    moved[j] += offset;
                    let mut shifted = args.clone();
                    shifted[position] = match args[position].is_tensor() {
                        true => tensor(args[position].shape(), &moved),
                        false => Value::Float(moved[0]),
                    };
                    plain_sum(f, shifted)
                };
                (sum_at(step) - sum_at(-step)) / (2.0 * step)
            })
            .collect();
        assert_close(&analytic, &numeric, 1e-6, &what("finite differences"));
        let mut wrapped = |t: &mut Tape, xs: Vec<Value>| f(t, moved_back(xs, position));
        let reordered = moved_first(&args, position);
        let pulled = vjp(&mut Tape::new(), &mut wrapped, reordered, ones.clone())
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        assert_close(&analytic, &numbers(&pulled), 1e-12, &what("vjp of ones"));
    }
}

#[test]
fn contractions_of_every_form() {
    let cases: Vec<(&str, TestFn<'_>, Vec<Vec<usize>>)> = vec![
        (
            "chain ia,ajb,bkc,cl->ijkl",
            &|t, a| ops::einsum(t, &contraction("ia,ajb,bkc,cl->ijkl"), a),
            vec![vec![2, 3], vec![3, 2, 2], vec![2, 2, 3], vec![3, 2]],
        ),
        (
            "ring iab,jbc,kcd,lda->ijkl",
            &|t, a| ops::einsum(t, &contraction("iab,jbc,kcd,lda->ijkl"), a),
            vec![vec![2, 2, 3], vec![2, 3, 2], vec![2, 2, 2], vec![2, 2, 2]],
        ),
        ("diagonal ii->i", &|t, a| ops::einsum(t, &contraction("ii->i"), a), vec![vec![3, 3]]),
        (
            "outer product i,j->ij",
            &|t, a| ops::einsum(t, &contraction("i,j->ij"), a),
            vec![vec![2], vec![3]],
        ),
        (
            "rank-0 output ij,ij->",
            &|t, a| ops::einsum(t, &contraction("ij,ij->"), a),
            vec![vec![2, 3]; 2],
        ),
        (
            "batched bij,bjk->bik",
            &|t, a| ops::einsum(t, &contraction("bij,bjk->bik"), a),
            vec![vec![2, 2, 3], vec![2, 3, 2]],
        ),
        (
            "a contraction of itself",
            &|t, a| ops::einsum(t, &contraction("bij,bjk->bik"), vec![a[0].clone(), a[0].clone()]),
            vec![vec![2, 3, 3]],
        ),
    ];
    for (index, (name, f, shapes)) in cases.into_iter().enumerate() {
        let args = shapes
            .iter()
            .enumerate()
            .map(|(k, shape)| sample(shape, -1.0, 1.0, (10 * index + k) as u64))
            .collect();
        assert_backward(name, f, args);
    }
}

#[test]
fn index_statements() {
    // C(i,j) = 0.5 * s * A(i,k) * B(k,j), as the lowering builds it: scalar factors are operands
    // without labels, and `s` is a `var` float.
    let scaled = Rc::new(
        Contraction::from_labels(&[&["i", "k"][..], &["k", "j"], &[], &[]], &["i", "j"], 1.0)
            .unwrap(),
    );
    let product = |t: &mut Tape, a: Vec<Value>| {
        let operands = vec![a[0].clone(), a[1].clone(), Value::Float(0.5), a[2].clone()];
        ops::einsum(t, &scaled, operands)
    };
    let (a, b) = (sample(&[2, 3], -1.0, 1.0, 1), sample(&[3, 2], -1.0, 1.0, 2));
    assert_backward("C(i,j) = 0.5 * s * A(i,k) * B(k,j)", &product, vec![a, b, Value::Float(0.7)]);
    // C(i,j) *= A(i,k) * B(k,j): the target is an operand.
    let in_place = Rc::new(
        Contraction::from_labels(&[["i", "j"], ["i", "k"], ["k", "j"]], &["i", "j"], 1.0).unwrap(),
    );
    let multiplied = |t: &mut Tape, a: Vec<Value>| ops::einsum(t, &in_place, a);
    let args = vec![
        sample(&[2, 2], -1.0, 1.0, 3),
        sample(&[2, 3], -1.0, 1.0, 4),
        sample(&[3, 2], -1.0, 1.0, 5),
    ];
    assert_backward("C(i,j) *= A(i,k) * B(k,j)", &multiplied, args.clone());
    // C(i,j) += A(i,k) * B(k,j); C(i) = C(i,j) * C(i,j), a sum over j after the update.
    let rows = contraction("ij,ij->i");
    let updated = |t: &mut Tape, a: Vec<Value>| {
        let product = ops::einsum(t, &contraction("ik,kj->ij"), vec![a[1].clone(), a[2].clone()])?;
        let sum = ops::add(t, a[0].clone(), product)?;
        ops::einsum(t, &rows, vec![sum.clone(), sum])
    };
    assert_backward("C(i,j) += A(i,k) * B(k,j), then rows", &updated, args);
}

#[test]
fn sums_means_and_other_reductions() {
    let cases: Vec<(&str, TestFn<'_>, Vec<Value>)> = vec![
        (
            "sum along an axis of a contraction",
            &|t, a| {
                let product = ops::einsum(t, &contraction("ij,jk->ijk"), a)?;
                ops::reduce(t, ReduceOp::Sum, product, Some(1))
            },
            vec![sample(&[2, 3], -1.0, 1.0, 1), sample(&[3, 2], -1.0, 1.0, 2)],
        ),
        (
            "mean along an axis of a sine",
            &|t, a| {
                let wave = ops::unary(t, UnaryOp::Sin, a[0].clone())?;
                ops::reduce(t, ReduceOp::Mean, wave, Some(0))
            },
            vec![sample(&[3, 4], -1.0, 1.0, 3)],
        ),
        (
            "a sum of a mean inside a tensor result",
            &|t, a| {
                let total = ops::reduce(t, ReduceOp::Mean, a[0].clone(), None)?;
                ops::mul(t, a[1].clone(), total)
            },
            vec![sample(&[2, 3], -1.0, 1.0, 4), sample(&[2], -1.0, 1.0, 5)],
        ),
        (
            "max along an axis (no uniform rule)",
            &|t, a| ops::reduce(t, ReduceOp::Max, a[0].clone(), Some(1)),
            vec![sample(&[3, 4], -1.0, 1.0, 6)],
        ),
        (
            "log-sum-exp along an axis (no uniform rule)",
            &|t, a| ops::reduce(t, ReduceOp::LogSumExp, a[0].clone(), Some(-1)),
            vec![sample(&[3, 4], -1.0, 1.0, 7)],
        ),
        (
            "softmax (no uniform rule)",
            &|t, a| ops::softmax(t, a[0].clone(), 1),
            vec![sample(&[2, 3], -1.0, 1.0, 8)],
        ),
    ];
    for (name, f, args) in cases {
        assert_backward(name, f, args);
    }
}

#[test]
fn element_wise_operations() {
    for (index, op) in UnaryOp::ALL.into_iter().enumerate() {
        let f = move |t: &mut Tape, a: Vec<Value>| ops::unary(t, op, a[0].clone());
        assert_backward(op.name(), &f, vec![sample(&[2, 3], 0.2, 0.8, index as u64)]);
    }
    let binary_ops = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Pow,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Rem,
        BinaryOp::Mod,
        BinaryOp::Atan2,
        BinaryOp::Hypot,
    ];
    for (index, op) in binary_ops.into_iter().enumerate() {
        let f = move |t: &mut Tape, a: Vec<Value>| ops::binary(t, op, a[0].clone(), a[1].clone());
        let seed = 10 * index as u64;
        // Same shapes, a row broadcast, a column against a row, and a float.
        let pairs = [
            (sample(&[2, 3], 0.5, 2.0, seed), sample(&[2, 3], 0.5, 2.0, seed + 1)),
            (sample(&[2, 3], 0.5, 2.0, seed + 2), sample(&[3], 0.5, 2.0, seed + 3)),
            (sample(&[2, 1], 0.5, 2.0, seed + 4), sample(&[1, 3], 0.5, 2.0, seed + 5)),
            (Value::Float(1.25), sample(&[2, 3], 0.5, 2.0, seed + 6)),
        ];
        for (a, b) in pairs {
            let name = format!("{op:?} of {:?} and {:?}", a.shape(), b.shape());
            assert_backward(&name, &f, vec![a.clone(), b.clone()]);
            assert_backward(&format!("{name}, swapped"), &f, vec![b, a]);
        }
    }
    let cases: Vec<(&str, TestFn<'_>, Vec<Value>)> = vec![
        (
            "x + x - (-x)",
            &|t, a| {
                let twice = ops::add(t, a[0].clone(), a[0].clone())?;
                let negated = ops::neg(t, a[0].clone())?;
                ops::sub(t, twice, negated)
            },
            vec![sample(&[2, 3], -1.0, 1.0, 1)],
        ),
        (
            "a contraction plus its operand's sine",
            &|t, a| {
                let product = ops::einsum(t, &contraction("ij,jk->ik"), vec![a[0].clone(); 2])?;
                let wave = ops::unary(t, UnaryOp::Sin, a[0].clone())?;
                ops::add(t, product, wave)
            },
            vec![sample(&[3, 3], -1.0, 1.0, 2)],
        ),
        (
            "select (no uniform rule)",
            &|t, a| {
                let mask = tensor(&[2, 2], &[1.0, 0.0, 0.0, 1.0]);
                ops::select(t, &mask, a[0].clone(), a[1].clone())
            },
            vec![sample(&[2, 2], -1.0, 1.0, 3), sample(&[2], -1.0, 1.0, 4)],
        ),
    ];
    for (name, f, args) in cases {
        assert_backward(name, f, args);
    }
}

#[test]
fn shapes_and_indexing() {
    let cases: Vec<(&str, TestFn<'_>, Vec<Value>)> = vec![
        (
            "reshape",
            &|t, a| ops::reshape(t, a[0].clone(), &[3, 2]),
            vec![sample(&[2, 3], -1.0, 1.0, 1)],
        ),
        (
            "reshape of a float",
            &|t, a| ops::reshape(t, a[0].clone(), &[1, 1]),
            vec![Value::Float(0.3)],
        ),
        ("to_tensor", &|t, a| ops::to_tensor(t, a[0].clone()), vec![Value::Float(0.3)]),
        (
            "to_float inside a tensor",
            &|t, a| {
                let number = ops::to_float(t, a[0].clone())?;
                ops::mul(t, a[1].clone(), number)
            },
            vec![sample(&[1, 1], -1.0, 1.0, 2), sample(&[3], -1.0, 1.0, 3)],
        ),
        (
            "transpose",
            &|t, a| ops::transpose(t, a[0].clone()),
            vec![sample(&[2, 3, 4], -1.0, 1.0, 4)],
        ),
        (
            "permute",
            &|t, a| ops::permute(t, a[0].clone(), &[2, 0, 1]),
            vec![sample(&[2, 3, 4], -1.0, 1.0, 5)],
        ),
        (
            "broadcast_to",
            &|t, a| ops::broadcast_to(t, a[0].clone(), &[2, 4, 3]),
            vec![sample(&[4, 1], -1.0, 1.0, 6)],
        ),
        (
            "sum_to_shape",
            &|t, a| ops::sum_to_shape(t, a[0].clone(), &[1, 3]),
            vec![sample(&[2, 4, 3], -1.0, 1.0, 7)],
        ),
        (
            "a slice (no uniform rule)",
            &|t, a| ops::get(t, a[0].clone(), &[Index::range(1, 3)]),
            vec![sample(&[3, 2], -1.0, 1.0, 8)],
        ),
        (
            "concat (no uniform rule)",
            &|t, a| ops::concat(t, a[0].clone(), a[1].clone(), 1),
            vec![sample(&[2, 2], -1.0, 1.0, 9), sample(&[2, 3], -1.0, 1.0, 10)],
        ),
        (
            "matmul (no uniform rule)",
            &|t, a| ops::matmul(t, a[0].clone(), a[1].clone()),
            vec![sample(&[2, 3], -1.0, 1.0, 11), sample(&[3, 2], -1.0, 1.0, 12)],
        ),
        (
            "a transposed contraction, reshaped, summed, negated and squared",
            &|t, a| {
                let product = ops::einsum(t, &contraction("ij,jk->ijk"), a)?;
                let turned = ops::transpose(t, product)?;
                let flat = ops::reshape(t, turned, &[2, 12])?;
                let rows = ops::reduce(t, ReduceOp::Sum, flat, Some(0))?;
                let negated = ops::neg(t, rows)?;
                ops::mul(t, negated.clone(), negated)
            },
            vec![sample(&[3, 2], -1.0, 1.0, 13), sample(&[2, 4], -1.0, 1.0, 14)],
        ),
    ];
    for (name, f, args) in cases {
        assert_backward(name, f, args);
    }
}

#[test]
fn gradients_of_intermediates_are_ones_and_their_sums() {
    // backward(rows) with rows = sum(T, axis 0): grad(T) is ones of T's shape, grad(rows) ones.
    let mut tape = Tape::new();
    let x = tape.leaf(sample(&[2, 3], -1.0, 1.0, 1)).unwrap();
    let product = ops::einsum(&mut tape, &contraction("ij,ik->ijk"), vec![x.clone(), x]).unwrap();
    let rows = ops::reduce(&mut tape, ReduceOp::Sum, product.clone(), Some(0)).unwrap();
    tape.backward(&rows).unwrap();
    assert_close(&tape.grad_of(&product).unwrap(), &[1.0; 18], 0.0, "grad(T)");
    assert_eq!(tape.grad_of(&product).unwrap().shape(), [2, 3, 3]);
    assert_close(&tape.grad_of(&rows).unwrap(), &[1.0; 9], 0.0, "grad(rows)");
    // A mean spreads a share: grad(T) of backward(mean(T, axis 2)) is a third everywhere.
    let mut tape = Tape::new();
    let x = tape.leaf(sample(&[2, 3], -1.0, 1.0, 2)).unwrap();
    let product = ops::einsum(&mut tape, &contraction("ij,ik->ijk"), vec![x.clone(), x]).unwrap();
    let means = ops::reduce(&mut tape, ReduceOp::Mean, product.clone(), Some(2)).unwrap();
    tape.backward(&means).unwrap();
    assert_close(&tape.grad_of(&product).unwrap(), &[1.0 / 3.0; 18], 0.0, "grad(T), mean");
}

#[test]
fn second_derivatives_through_uniform_gradients() {
    fn square(t: &mut Tape, v: &Value) -> Result<Value, AdError> {
        ops::reshape(t, v.clone(), &[2, 2])
    }
    let cases: Vec<(&str, TestFn<'_>, Vec<Value>)> = vec![
        (
            "sum of a contraction",
            &|t, a| {
                let m = square(t, &a[0])?;
                let product =
                    ops::einsum(t, &contraction("ij,jk,kl->il"), vec![m.clone(), m.clone(), m])?;
                ops::reduce(t, ReduceOp::Sum, product, None)
            },
            vec![sample(&[4], -1.0, 1.0, 1)],
        ),
        (
            // The gradient reaching the contraction is sin(sum(v)) broadcast, a function of the
            // argument: the outer level differentiates through it.
            "sum of a contraction times a function of the argument",
            &|t, a| {
                let m = square(t, &a[0])?;
                let product = ops::einsum(t, &contraction("ij,jk->ik"), vec![m.clone(), m])?;
                let total = ops::reduce(t, ReduceOp::Sum, product, None)?;
                let all = ops::reduce(t, ReduceOp::Sum, a[0].clone(), None)?;
                let wave = ops::unary(t, UnaryOp::Sin, all)?;
                ops::mul(t, total, wave)
            },
            vec![sample(&[4], -1.0, 1.0, 2)],
        ),
        (
            "sum of a contraction scaled by a tensor function of the argument",
            &|t, a| {
                let m = square(t, &a[0])?;
                let product =
                    ops::einsum(t, &contraction("ij,jk->ik"), vec![m.clone(), m.clone()])?;
                let weights = ops::unary(t, UnaryOp::Exp, m)?;
                let weighted = ops::mul(t, product, weights)?;
                ops::reduce(t, ReduceOp::Sum, weighted, None)
            },
            vec![sample(&[4], -1.0, 1.0, 3)],
        ),
        (
            "sum of means along an axis of element-wise products",
            &|t, a| {
                let m = square(t, &a[0])?;
                let growth = ops::unary(t, UnaryOp::Exp, m.clone())?;
                let product = ops::mul(t, m, growth)?;
                let means = ops::reduce(t, ReduceOp::Mean, product, Some(0))?;
                let all = ops::reduce(t, ReduceOp::Sum, a[0].clone(), None)?;
                let shifted = ops::sub(t, means, all)?;
                ops::reduce(t, ReduceOp::Sum, shifted, None)
            },
            vec![sample(&[4], -1.0, 1.0, 4)],
        ),
    ];
    for (name, f, args) in cases {
        assert_hessian(name, f, args);
    }
}

#[test]
fn backward_of_a_tensor_gradient_on_the_program_tape() {
    // f(x, w) = sum(einsum("ij,jk,k->i", w, w, x)); loss(w) = sin(grad(f, 0)(x, w)), a tensor:
    // the transform's seed through the sum is uniform, and backward(loss) seeds another.
    fn f(t: &mut Tape, args: Vec<Value>) -> Result<Value, AdError> {
        let network = contraction("ij,jk,k->i");
        let product =
            ops::einsum(t, &network, vec![args[1].clone(), args[1].clone(), args[0].clone()])?;
        ops::reduce(t, ReduceOp::Sum, product, None)
    }
    fn loss(t: &mut Tape, w: Value, x: Value) -> Result<Value, AdError> {
        let mut function = f;
        let g = grad(t, &mut function, vec![x, w], 0)?;
        ops::unary(t, UnaryOp::Sin, g)
    }
    let x = sample(&[3], -1.0, 1.0, 1);
    let w0 = sample(&[3, 3], -1.0, 1.0, 2);
    let mut tape = Tape::new();
    let w = tape.leaf(w0.clone()).unwrap();
    let value = loss(&mut tape, w.clone(), x.clone()).unwrap();
    tape.backward(&value).unwrap();
    let on_the_tape = tape.grad_of(&w).unwrap();
    let mut summed = |t: &mut Tape, args: Vec<Value>| {
        let wave = loss(t, args[0].clone(), x.clone())?;
        ops::reduce(t, ReduceOp::Sum, wave, None)
    };
    let by_transform = grad(&mut tape, &mut summed, vec![w0.clone()], 0).unwrap();
    assert_close(&on_the_tape, &numbers(&by_transform), 1e-14, "grad(w)");
    assert_backward(
        "loss of a gradient",
        &|t, a| loss(t, a[0].clone(), a[1].clone()),
        vec![w0.clone(), x.clone()],
    );
    assert_gradients(
        "loss of a gradient",
        &|t, a| loss(t, a[0].clone(), a[1].clone()),
        vec![w0, x],
    );
}
