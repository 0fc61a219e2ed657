//! Products and linear algebra on values: `@` in every rank case, contractions (`einsum` and
//! index statements), `inv`, `det`, `solve` and `cholesky`.

use std::rc::Rc;

use ndarray::ArrayViewD;

use crate::autodiff::{AdError, Lifted, LiftedVec, Op, Tape};
use crate::ops::elementwise::tracked;
use crate::ops::plain;
use crate::value::Value;
use tensor::einsum::{Contraction, EinsumSpec, PlanConfig};
use tensor::{self, Tensor};

/// `a @ b` with NumPy's `matmul` rules; both operands must be tensors.
pub fn matmul(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    for operand in [&a, &b] {
        if !operand.is_tensor() {
            return Err(plain::operand("@", operand));
        }
    }
    match t.lift([a, b]) {
        Lifted::Plain([a, b]) => {
            let (a, b) = (plain::into_tensor(a, "@")?, plain::into_tensor(b, "@")?);
            Ok(Value::tensor(tensor::matmul(&a, &b)?))
        }
        Lifted::Tracked { level, inner: [a, b], args: [lhs, rhs] } => {
            let out = matmul(t, a.clone(), b.clone())?;
            t.push(level, Op::Matmul { lhs, rhs, lhs_value: a, rhs_value: b }, out)
        }
    }
}

/// A contraction of `operands` (one per label list of `contraction`; a float is a rank-0 operand
/// with no labels). The result is a tensor laid out in the contraction's output labels.
pub fn einsum(
    t: &mut Tape,
    contraction: &Rc<Contraction>,
    operands: Vec<Value>,
) -> Result<Value, AdError> {
    contract(t, contraction, operands, None)
}

/// A contraction written as a NumPy spec with `...` in some operand: the spec is expanded for the
/// operands' shapes, and an operand's extent-1 `...` axis that broadcasts against a longer one is
/// reshaped away first, so that its gradient comes back in the operand's own shape.
pub fn einsum_ellipsis(
    t: &mut Tape,
    spec: &EinsumSpec,
    operands: Vec<Value>,
) -> Result<Value, AdError> {
    let shapes: Vec<&[usize]> = operands.iter().map(Value::shape).collect();
    let expansion = spec.expand(&shapes)?;
    let mut squeezed = Vec::with_capacity(operands.len());
    for (operand, dropped) in operands.into_iter().zip(&expansion.dropped_axes) {
        squeezed.push(match dropped.is_empty() {
            true => operand,
            false => {
                let shape: Vec<usize> = operand
                    .shape()
                    .iter()
                    .enumerate()
                    .filter(|(axis, _)| !dropped.contains(axis))
                    .map(|(_, &extent)| extent)
                    .collect();
                crate::ops::shape::reshape(t, operand, &shape)?
            }
        });
    }
    einsum(t, &Rc::new(expansion.contraction), squeezed)
}

/// [`einsum`] with the output's shape given, which the general form needs when an output label
/// occurs in no operand (gradients of contractions broadcast along such labels).
pub(crate) fn contract(
    t: &mut Tape,
    contraction: &Rc<Contraction>,
    operands: Vec<Value>,
    output_shape: Option<&[usize]>,
) -> Result<Value, AdError> {
    let operands = operands
        .into_iter()
        .map(|operand| crate::ops::shape::as_tensor(t, operand, "einsum"))
        .collect::<Result<Vec<_>, _>>()?;
    match t.lift_vec(operands) {
        LiftedVec::Plain(operands) => {
            let tensors = operands
                .into_iter()
                .map(|operand| plain::into_tensor(operand, "einsum"))
                .collect::<Result<Vec<Tensor>, _>>()?;
            let views: Vec<ArrayViewD<'_, f64>> = tensors.iter().map(Tensor::view).collect();
            let shapes: Vec<&[usize]> = tensors.iter().map(Tensor::shape).collect();
            let config = PlanConfig { output_shape, ..PlanConfig::default() };
            let result = contraction.plan_with(&shapes, &config)?.execute(&views)?;
            Ok(Value::tensor(Tensor::from(result)))
        }
        LiftedVec::Tracked { level, inner, args } => {
            let out = contract(t, contraction, inner.clone(), output_shape)?;
            let op = Op::Einsum {
                contraction: contraction.clone(),
                args: args.into_boxed_slice(),
                operands: inner.into_boxed_slice(),
            };
            t.push(level, op, out)
        }
    }
}

/// The inverse of a square matrix.
pub fn inv(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => Ok(Value::tensor(tensor::inv(&plain::into_tensor(x, "inv")?)?)),
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let out = inv(t, x)?;
            t.push(level, Op::Inv { x: tracked(arg)?, output: out.clone() }, out)
        }
    }
}

/// The determinant of a square matrix, a float.
pub fn det(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let determinants = tensor::det(&plain::into_tensor(x, "det")?)?;
            Ok(match determinants.rank() {
                0 => Value::Float(determinants.to_scalar()?),
                _ => Value::tensor(determinants),
            })
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let out = det(t, x.clone())?;
            t.push(level, Op::Det { x: tracked(arg)?, input: x, output: out.clone() }, out)
        }
    }
}

/// The solution `x` of `a @ x = b` for a vector or matrix `b`.
pub fn solve(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    match t.lift([a, b]) {
        Lifted::Plain([a, b]) => {
            let (a, b) = (plain::into_tensor(a, "solve")?, plain::into_tensor(b, "solve")?);
            Ok(Value::tensor(tensor::solve(&a, &b)?))
        }
        Lifted::Tracked { level, inner: [a, b], args: [lhs, rhs] } => {
            let out = solve(t, a.clone(), b)?;
            t.push(level, Op::Solve { a: lhs, b: rhs, matrix: a, solution: out.clone() }, out)
        }
    }
}

/// The lower-triangular Cholesky factor `L` of a symmetric positive definite matrix (only its
/// lower triangle is read). Its gradient follows the symmetric convention of PyTorch and JAX.
pub fn cholesky(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            Ok(Value::tensor(tensor::cholesky(&plain::into_tensor(x, "cholesky")?)?))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let out = cholesky(t, x)?;
            t.push(level, Op::Cholesky { x: tracked(arg)?, factor: out.clone() }, out)
        }
    }
}
