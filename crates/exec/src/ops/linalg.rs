//! Products and linear algebra on values: `@` in every rank case, contractions (`einsum` and
//! index statements), `inv`, `det`, `solve`, `cholesky`, and the decompositions `qr`, `svd`,
//! `eigh`, with `slogdet` and `pinv`.

use std::rc::Rc;

use ndarray::ArrayViewD;

use crate::autodiff::{AdError, Lifted, LiftedVec, Op, Tape};
use crate::ops::elementwise::tracked;
use crate::ops::plain;
use crate::value::Value;
use tensor::einsum::{Contraction, EinsumSpec, PlanConfig};
use tensor::{self, Index, Tensor};

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
            let rhs_shape = b.shape().into();
            let out = solve(t, a.clone(), b)?;
            let op = Op::Solve { a: lhs, b: rhs, matrix: a, rhs_shape, solution: out.clone() };
            t.push(level, op, out)
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

/// The values `parts` flattened and joined into one vector: the output a decomposition records,
/// which its results are read back from ([`unpack`]).
fn pack(t: &mut Tape, parts: &[Value]) -> Result<Value, AdError> {
    let mut flat = Vec::with_capacity(parts.len());
    for part in parts {
        let len = part.shape().iter().product::<usize>();
        flat.push(crate::ops::reshape(t, part.clone(), &[len])?);
    }
    crate::ops::library::concat_many(t, flat, 0)
}

/// The parts of a vector [`pack`] made, with their shapes.
pub(crate) fn unpack(
    t: &mut Tape,
    packed: Value,
    shapes: &[&[usize]],
) -> Result<Vec<Value>, AdError> {
    let mut parts = Vec::with_capacity(shapes.len());
    let mut start = 0;
    for shape in shapes {
        let len = shape.iter().product::<usize>();
        let piece = crate::ops::get(t, packed.clone(), &[Index::range(start, start + len)])?;
        parts.push(crate::ops::reshape(t, piece, shape)?);
        start += len;
    }
    Ok(parts)
}

/// A decomposition whose results `parts` (computed at the levels below `level`) are recorded as
/// one `op` at `level`, and read back from it.
fn record_parts<const N: usize>(
    t: &mut Tape,
    level: usize,
    op: Op,
    parts: [Value; N],
) -> Result<[Value; N], AdError> {
    let shapes: Vec<Vec<usize>> = parts.iter().map(|part| part.shape().to_vec()).collect();
    let packed = pack(t, &parts)?;
    let node = t.push(level, op, packed)?;
    let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
    let read = unpack(t, node, &shapes)?;
    read.try_into().map_err(|_| AdError::internal("a decomposition's results"))
}

/// `qr(x)`: the reduced factorisation `Q R` of every matrix of `x`.
pub fn qr(t: &mut Tape, x: Value) -> Result<(Value, Value), AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let (q, r) = tensor::qr(&plain::into_tensor(x, "qr")?)?;
            Ok((Value::tensor(q), Value::tensor(r)))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            if let &[.., m, n] = x.shape()
                && m < n
            {
                let what = "the derivative of qr of a matrix with more columns than rows (as JAX)";
                return Err(crate::autodiff::AdErrorKind::Unsupported { what }.into());
            }
            let (q, r) = qr(t, x)?;
            let op = Op::Qr { x: tracked(arg)?, q: q.clone(), r: r.clone() };
            let [q, r] = record_parts(t, level, op, [q, r])?;
            Ok((q, r))
        }
    }
}

/// `svd(x)`: the reduced singular value decomposition `U diag(S) Vh` of every matrix of `x`.
pub fn svd(t: &mut Tape, x: Value) -> Result<[Value; 3], AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let (u, s, vh) = tensor::svd(&plain::into_tensor(x, "svd")?)?;
            Ok([Value::tensor(u), Value::tensor(s), Value::tensor(vh)])
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let [u, s, vh] = svd(t, x)?;
            let op = Op::Svd { x: tracked(arg)?, u: u.clone(), s: s.clone(), vh: vh.clone() };
            record_parts(t, level, op, [u, s, vh])
        }
    }
}

/// `eigh(x)`: the eigenvalues (ascending) and eigenvectors (in columns) of the symmetric part of
/// every square matrix of `x`.
pub fn eigh(t: &mut Tape, x: Value) -> Result<(Value, Value), AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let (w, v) = tensor::eigh(&plain::into_tensor(x, "eigh")?)?;
            Ok((Value::tensor(w), Value::tensor(v)))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let (w, v) = eigh(t, x)?;
            let op = Op::Eigh { x: tracked(arg)?, values: w.clone(), vectors: v.clone() };
            let [w, v] = record_parts(t, level, op, [w, v])?;
            Ok((w, v))
        }
    }
}

/// `slogdet(x)`: the sign of the determinant of every square matrix of `x` (a constant) and the
/// logarithm of its absolute value; floats for a single matrix.
pub fn slogdet(t: &mut Tape, x: Value) -> Result<(Value, Value), AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let (sign, log) = tensor::slogdet(&plain::into_tensor(x, "slogdet")?)?;
            let scalar = |tensor: Tensor| -> Result<Value, AdError> {
                Ok(match tensor.rank() {
                    0 => Value::Float(tensor.to_scalar()?),
                    _ => Value::tensor(tensor),
                })
            };
            Ok((scalar(sign)?, scalar(log)?))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let (sign, log) = slogdet(t, x.clone())?;
            let log = t.push(level, Op::LogAbsDet { x: tracked(arg)?, input: x }, log)?;
            Ok((sign.detach(), log))
        }
    }
}

/// `pinv(x)`: the pseudo-inverse of every matrix of `x`, singular values at most NumPy 2's default
/// cutoff times the largest counting as zero.
pub fn pinv(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    match t.lift([x]) {
        Lifted::Plain([x]) => {
            let x = plain::into_tensor(x, "pinv")?;
            let shape = x.shape();
            let (m, n) = match shape.len() {
                0 | 1 => (0, 0),
                rank => (shape[rank - 2], shape[rank - 1]),
            };
            Ok(Value::tensor(tensor::pinv(&x, tensor::default_rtol(m, n))?))
        }
        Lifted::Tracked { level, inner: [x], args: [arg] } => {
            let out = pinv(t, x.clone())?;
            t.push(level, Op::Pinv { x: tracked(arg)?, input: x, output: out.clone() }, out)
        }
    }
}
