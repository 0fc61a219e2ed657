//! The program tape (language.md 3.1): `var` leaves, `backward`, `grad(x)`, the release of the
//! graph after each `backward`, in-place updates and scatters, and transforms inside a program
//! that also calls `backward`.

use super::{assert_close, numbers, tensor, vector};
use crate::autodiff::{AdError, AdErrorKind, Tape, grad};
use crate::ops;
use crate::value::Value;
use tensor::{BinaryOp, Index, ReduceOp, UnaryOp};

/// Reads a `var` slot the way the interpreter must: refreshed first.
fn read(tape: &mut Tape, slot: &mut Value) -> Value {
    tape.refresh_var(slot).unwrap();
    slot.clone()
}

#[test]
fn the_training_loop_of_the_language_reference() {
    let mut tape = Tape::new();
    let x = tensor(&[4, 2], &[0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0]);
    let y = tensor(&[4, 1], &[0.0, 1.0, 1.0, 2.0]);
    let mut w = tape.leaf(tensor(&[2, 1], &[0.0, 0.0])).unwrap();
    let mut b = tape.leaf(Value::Float(0.0)).unwrap();
    for _ in 0..500 {
        let w_now = read(&mut tape, &mut w);
        let product = ops::matmul(&mut tape, x.clone(), w_now).unwrap();
        let b_now = read(&mut tape, &mut b);
        let shifted = ops::add(&mut tape, product, b_now).unwrap();
        let err = ops::sub(&mut tape, shifted, y.clone()).unwrap();
        let squared = ops::mul(&mut tape, err.clone(), err).unwrap();
        let loss = ops::reduce(&mut tape, ReduceOp::Mean, squared, None).unwrap();
        tape.backward(&loss).unwrap();
        assert_eq!(tape.program_len(), 0, "the graph is released");
        // `w -= 0.1 * grad(w)` with the read of `w` before `grad(w)`.
        let current = read(&mut tape, &mut w);
        let gradient = tape.grad_of(&current).unwrap();
        let step = ops::mul(&mut tape, Value::Float(0.1), gradient).unwrap();
        w = ops::sub(&mut tape, current, step).unwrap();
        // `b -= 0.1 * grad(b)` with `grad(b)` first.
        let gradient = tape.grad_of(&b).unwrap();
        let step = ops::mul(&mut tape, Value::Float(0.1), gradient).unwrap();
        let current = read(&mut tape, &mut b);
        b = ops::sub(&mut tape, current, step).unwrap();
    }
    assert_close(&w, &[1.0, 1.0], 1e-3, "w");
    assert_close(&b, &[0.0], 1e-3, "b");
    // Between backwards the tape holds one loop body only: the memory stays flat.
    assert!(tape.program_len() <= 4, "{}", tape.program_len());
}

#[test]
fn grad_reads_leaves_and_intermediates_and_zeros_for_the_unused() {
    let mut tape = Tape::new();
    assert_eq!(
        tape.grad_of(&Value::Float(1.0)).unwrap_err().kind(),
        &AdErrorKind::GradBeforeBackward
    );
    let a = tape.leaf(tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0])).unwrap();
    let unused = tape.leaf(Value::Float(5.0)).unwrap();
    let p = ops::matmul(&mut tape, a.clone(), a.clone()).unwrap();
    let h = ops::unary(&mut tape, UnaryOp::Neg, p.clone()).unwrap();
    let loss = ops::reduce(&mut tape, ReduceOp::Sum, h.clone(), None).unwrap();
    tape.backward(&loss).unwrap();
    // d sum(-(a @ a)) / da = -(1 a^T + a^T 1), as in the language reference's test block.
    assert_close(&tape.grad_of(&a).unwrap(), &[-7.0, -11.0, -9.0, -13.0], 0.0, "grad(a)");
    assert_close(&tape.grad_of(&p).unwrap(), &[-1.0; 4], 0.0, "grad(p)");
    assert_close(&tape.grad_of(&h).unwrap(), &[1.0; 4], 0.0, "grad(h)");
    assert_close(&tape.grad_of(&loss).unwrap(), &[1.0], 0.0, "grad(loss)");
    assert!(matches!(tape.grad_of(&unused).unwrap(), Value::Float(x) if x == 0.0));
    assert_eq!(numbers(&tape.grad_of(&vector(&[1.0, 2.0])).unwrap()), [0.0, 0.0]);
    assert!(!tape.grad_of(&a).unwrap().is_tracked());
    // A second backward replaces the gradients instead of adding to them.
    // The interpreter writes the refreshed leaf back into the variable's slot.
    let mut a_slot = a.clone();
    let a_now = read(&mut tape, &mut a_slot);
    let doubled = ops::mul(&mut tape, Value::Float(2.0), a_now).unwrap();
    let loss = ops::reduce(&mut tape, ReduceOp::Sum, doubled, None).unwrap();
    tape.backward(&loss).unwrap();
    assert_close(&tape.grad_of(&a_slot).unwrap(), &[2.0; 4], 0.0, "grad(a), second backward");
    // The value `a` held before the refresh belongs to the first recording, which is gone.
    assert_close(&tape.grad_of(&a).unwrap(), &[0.0; 4], 0.0, "grad of a released value");
    assert_close(&tape.grad_of(&p).unwrap(), &[0.0; 4], 0.0, "an old intermediate is unused now");
}

#[test]
fn backward_of_a_non_scalar_sums_it() {
    let mut tape = Tape::new();
    let x = tape.leaf(vector(&[1.0, 2.0, 3.0])).unwrap();
    let squares = ops::mul(&mut tape, x.clone(), x.clone()).unwrap();
    tape.backward(&squares).unwrap();
    assert_close(&tape.grad_of(&x).unwrap(), &[2.0, 4.0, 6.0], 0.0, "grad(x)");
}

#[test]
fn released_values_are_constants_and_vars_become_fresh_leaves() {
    let mut tape = Tape::new();
    let mut w = tape.leaf(Value::Float(3.0)).unwrap();
    let current = read(&mut tape, &mut w);
    let h = ops::mul(&mut tape, current.clone(), current).unwrap();
    tape.backward(&h).unwrap();
    assert_close(&tape.grad_of(&w).unwrap(), &[6.0], 0.0, "grad(w)");
    // `h` is a plain constant of the new recording; `w` is a new leaf.
    let current = read(&mut tape, &mut w);
    let y = ops::mul(&mut tape, h.clone(), current).unwrap();
    assert_eq!(tape.program_len(), 2, "a re-leafed var and one product");
    tape.backward(&y).unwrap();
    assert_close(&tape.grad_of(&w).unwrap(), &[9.0], 0.0, "grad(w) with h constant");
    // `h` did not take part in the second recording.
    assert_close(&tape.grad_of(&h).unwrap(), &[0.0], 0.0, "grad(h)");
    // A value that depends on no var cannot be differentiated.
    let constant = ops::mul(&mut tape, h.clone(), Value::Float(2.0)).unwrap();
    assert_eq!(tape.backward(&constant).unwrap_err().kind(), &AdErrorKind::BackwardWithoutVar);
    assert_eq!(
        tape.backward(&Value::Float(1.0)).unwrap_err().kind(),
        &AdErrorKind::BackwardWithoutVar
    );
    // A value whose own graph was released says so, and which `backward` released it.
    assert_eq!(
        tape.backward(&y).unwrap_err().kind(),
        &AdErrorKind::ReleasedGraph { by_last: true }
    );
    assert_eq!(
        tape.backward(&h).unwrap_err().kind(),
        &AdErrorKind::ReleasedGraph { by_last: false }
    );
    // A var assigned a constant is a leaf again when read.
    let mut v = Value::Float(4.0);
    let current = read(&mut tape, &mut v);
    let y = ops::unary(&mut tape, UnaryOp::Sin, current).unwrap();
    tape.backward(&y).unwrap();
    assert_close(&tape.grad_of(&v).unwrap(), &[4.0f64.cos()], 1e-15, "grad(v)");
    // The release hook refreshes a set of slots at once.
    let mut slots = [(w.clone(), true), (y, false)];
    tape.release(slots.iter_mut().map(|(value, is_var)| (value, *is_var))).unwrap();
    assert!(slots[0].0.is_tracked());
    assert_close(&tape.grad_of(&slots[0].0).unwrap(), &[0.0], 0.0, "w took no part");
}

#[test]
fn assignment_never_cuts_the_graph() {
    let mut tape = Tape::new();
    // var x; x = 2 * x; x = x + x; backward(x): d/dx0 = 4.
    let mut x = tape.leaf(Value::Float(1.5)).unwrap();
    let x0 = x.clone();
    let current = read(&mut tape, &mut x);
    x = ops::mul(&mut tape, Value::Float(2.0), current).unwrap();
    let current = read(&mut tape, &mut x);
    x = ops::add(&mut tape, current.clone(), current).unwrap();
    tape.backward(&x).unwrap();
    assert_close(&tape.grad_of(&x0).unwrap(), &[4.0], 0.0, "grad(x0)");
    assert_close(&tape.grad_of(&x).unwrap(), &[1.0], 0.0, "grad(x)");
}

#[test]
fn in_place_updates_in_loops() {
    let mut tape = Tape::new();
    // x *= y three times, x += y: x = x0 y^3 + y.
    let x0 = tape.leaf(Value::Float(1.5)).unwrap();
    let y = tape.leaf(Value::Float(0.5)).unwrap();
    let mut x = x0.clone();
    for _ in 0..3 {
        x = ops::binary(&mut tape, BinaryOp::Mul, x, y.clone()).unwrap();
    }
    x = ops::binary(&mut tape, BinaryOp::Add, x, y.clone()).unwrap();
    tape.backward(&x).unwrap();
    assert_close(&tape.grad_of(&x0).unwrap(), &[0.125], 1e-15, "dx/dx0");
    assert_close(&tape.grad_of(&y).unwrap(), &[1.5 * 3.0 * 0.25 + 1.0], 1e-15, "dx/dy");
}

#[test]
fn scatter_zeroes_the_overwritten_region() {
    let mut tape = Tape::new();
    let a0 = tape.leaf(tensor(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])).unwrap();
    let v = tape.leaf(Value::Float(10.0)).unwrap();
    let row = tape.leaf(vector(&[1.0, 1.0, 1.0])).unwrap();
    // a[0][1] = v; a[1] += row * v; loss = sum(a * a).
    let a = ops::set(&mut tape, a0.clone(), &[Index::At(0), Index::At(1)], v.clone()).unwrap();
    let scaled = ops::mul(&mut tape, row.clone(), v.clone()).unwrap();
    let a = ops::add_at(&mut tape, a, &[Index::At(1)], scaled).unwrap();
    let squares = ops::mul(&mut tape, a.clone(), a.clone()).unwrap();
    let loss = ops::reduce(&mut tape, ReduceOp::Sum, squares, None).unwrap();
    tape.backward(&loss).unwrap();
    // a = [[1, 10, 3], [14, 15, 16]].
    assert_close(&tape.grad_of(&a0).unwrap(), &[2.0, 0.0, 6.0, 28.0, 30.0, 32.0], 0.0, "grad(a0)");
    assert_close(&tape.grad_of(&v).unwrap(), &[20.0 + 2.0 * (14.0 + 15.0 + 16.0)], 0.0, "grad(v)");
    assert_close(&tape.grad_of(&row).unwrap(), &[280.0, 300.0, 320.0], 0.0, "grad(row)");
    // Assigning every element in a loop leaves nothing of the original.
    let b0 = read(&mut tape, &mut a0.clone());
    let mut b = b0.clone();
    let mut v_slot = v.clone();
    for i in 0..2 {
        for j in 0..3 {
            let value = Value::Float((i * 3 + j) as f64);
            let v_now = read(&mut tape, &mut v_slot);
            let value = ops::add(&mut tape, value, v_now).unwrap();
            b = ops::set(&mut tape, b, &[Index::At(i), Index::At(j)], value).unwrap();
        }
    }
    tape.backward(&b).unwrap();
    assert_close(&tape.grad_of(&b).unwrap(), &[1.0; 6], 0.0, "grad(b)");
    assert_close(&tape.grad_of(&b0).unwrap(), &[0.0; 6], 0.0, "nothing of b0 is left");
    assert_close(&tape.grad_of(&v_slot).unwrap(), &[6.0], 0.0, "grad(v) through six assignments");
}

#[test]
fn nilang_accumulation_loop() {
    // y += one, ten thousand times: dy/d(one) = 10000.
    let mut tape = Tape::new();
    let one = tape.leaf(Value::Float(1.0)).unwrap();
    let mut y = Value::Float(0.0);
    for _ in 0..10_000 {
        y = ops::add(&mut tape, y, one.clone()).unwrap();
    }
    tape.backward(&y).unwrap();
    assert!(matches!(tape.grad_of(&one).unwrap(), Value::Float(g) if g == 10_000.0));
    // The same as a transform.
    let mut accumulate = |t: &mut Tape, args: Vec<Value>| {
        let mut y = Value::Float(0.0);
        for _ in 0..10_000 {
            y = ops::add(t, y, args[0].clone())?;
        }
        Ok::<_, AdError>(y)
    };
    let g = grad(&mut tape, &mut accumulate, vec![Value::Float(1.0)], 0).unwrap();
    assert!(matches!(g, Value::Float(g) if g == 10_000.0));
}

#[test]
fn transforms_inside_a_program_that_calls_backward() {
    let mut tape = Tape::new();
    let cube = |t: &mut Tape, args: Vec<Value>| {
        let square = ops::mul(t, args[0].clone(), args[0].clone())?;
        ops::mul(t, square, args[0].clone())
    };
    let mut w = tape.leaf(Value::Float(2.0)).unwrap();
    for step in 0..3 {
        // loss = grad(cube)(w) = 3 w^2, so grad(w) = 6 w: the inner backward is recorded.
        let current = read(&mut tape, &mut w);
        let mut f = cube;
        let loss = grad(&mut tape, &mut f, vec![current.clone()], 0).unwrap();
        let w_value = current.as_f64().unwrap();
        assert_close(&loss, &[3.0 * w_value * w_value], 1e-14, "grad(cube)(w)");
        assert!(loss.is_tracked(), "step {step}: the result depends on w");
        tape.backward(&loss).unwrap();
        assert_eq!(tape.program_len(), 0);
        let g = tape.grad_of(&w).unwrap();
        assert_close(&g, &[6.0 * w_value], 1e-14, "grad(w)");
        let current = read(&mut tape, &mut w);
        let step = ops::mul(&mut tape, g, Value::Float(0.01)).unwrap();
        w = ops::sub(&mut tape, current, step).unwrap();
    }
    // backward inside a transform is an error, and the level is closed afterwards.
    let mut bad = |t: &mut Tape, args: Vec<Value>| {
        t.backward(&args[0])?;
        Ok::<_, AdError>(args[0].clone())
    };
    let error = grad(&mut tape, &mut bad, vec![Value::Float(1.0)], 0).unwrap_err();
    assert_eq!(error.kind(), &AdErrorKind::BackwardInsideTransform);
    assert_eq!(tape.depth(), 1);
    // A var declared inside a differentiated function still carries the transform's tracking.
    let mut with_var = |t: &mut Tape, args: Vec<Value>| {
        let mut local = t.leaf(args[0].clone())?;
        t.refresh_var(&mut local)?;
        ops::mul(t, local.clone(), local)
    };
    let g = grad(&mut tape, &mut with_var, vec![Value::Float(3.0)], 0).unwrap();
    assert_close(&g, &[6.0], 0.0, "grad through a local var");
}

#[test]
fn errors_are_values() {
    let mut tape = Tape::new();
    let mut vector_valued = |_: &mut Tape, args: Vec<Value>| Ok::<_, AdError>(args[0].clone());
    let error = grad(&mut tape, &mut vector_valued, vec![vector(&[1.0, 2.0])], 0).unwrap_err();
    assert_eq!(
        error.to_string(),
        "grad needs a function that returns a single float, but it returned Tensor[2]"
    );
    let error = grad(&mut tape, &mut vector_valued, vec![Value::Int(1)], 0).unwrap_err();
    assert!(matches!(error.kind(), AdErrorKind::NotDifferentiable { .. }), "{error:?}");
    let error = grad(&mut tape, &mut vector_valued, vec![Value::Float(1.0)], 3).unwrap_err();
    assert!(matches!(error.kind(), AdErrorKind::Argument { .. }), "{error:?}");
    let error = crate::autodiff::vjp(
        &mut tape,
        &mut vector_valued,
        vec![vector(&[1.0])],
        Value::Float(1.0),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "vjp: the tangent must have the type Tensor[1], but it has float"
    );
    let x = tape.leaf(tensor(&[2, 3], &[0.0; 6])).unwrap();
    let error = ops::matmul(&mut tape, x.clone(), x).unwrap_err();
    assert!(matches!(error.kind(), AdErrorKind::Tensor(_)), "{error:?}");
    let error = tape.leaf(Value::Bool(true)).unwrap_err();
    assert!(matches!(error.kind(), AdErrorKind::NotDifferentiable { .. }), "{error:?}");
    assert_eq!(tape.depth(), 1);
}

#[test]
fn program_tape_and_transforms_agree_on_second_derivatives_of_tensors() {
    // f(x, w) = sum(tanh(w @ x)); loss(w) = sum(sin(grad(f, 0)(x, w))) with w a `var`.
    fn f(t: &mut Tape, args: Vec<Value>) -> Result<Value, AdError> {
        let product = ops::matmul(t, args[1].clone(), args[0].clone())?;
        let squashed = ops::unary(t, UnaryOp::Tanh, product)?;
        ops::reduce(t, ReduceOp::Sum, squashed, None)
    }
    fn loss(t: &mut Tape, w: Value, x: Value) -> Result<Value, AdError> {
        let mut function = f;
        let g = grad(t, &mut function, vec![x, w], 0)?;
        let wave = ops::unary(t, UnaryOp::Sin, g)?;
        ops::reduce(t, ReduceOp::Sum, wave, None)
    }
    let x = vector(&[0.3, -0.7, 1.1]);
    let w0 = tensor(&[2, 3], &[0.2, -0.4, 0.6, 0.9, 0.1, -0.3]);
    let mut tape = Tape::new();
    let mut w = tape.leaf(w0.clone()).unwrap();
    tape.refresh_var(&mut w).unwrap();
    let value = loss(&mut tape, w.clone(), x.clone()).unwrap();
    tape.backward(&value).unwrap();
    let on_the_tape = tape.grad_of(&w).unwrap();
    let mut as_function = |t: &mut Tape, args: Vec<Value>| loss(t, args[0].clone(), x.clone());
    let by_transform = grad(&mut tape, &mut as_function, vec![w0.clone()], 0).unwrap();
    assert_close(&on_the_tape, &numbers(&by_transform), 1e-14, "grad(w)");
    super::assert_gradients(
        "loss of a gradient",
        &|t, args| loss(t, args[0].clone(), args[1].clone()),
        vec![w0, vector(&[0.3, -0.7, 1.1])],
    );
}
