//! The library functions written with the differentiable primitives, so that their derivatives,
//! of every order, come from the primitives' rules: activations with a parameter, `clip` and
//! `where`, `std` and `variance`, norms of any order, reductions that keep their axis,
//! triangles, `kron`, `outer`, `cross`, joining many tensors, the distributions that take
//! parameters, convolutions and pooling, and the losses. Each composition is exact (no finite differences, no
//! approximation), and the special cases choose their branch with `select`, whose unchosen
//! branch leaks nothing into a gradient.
//!
//! Functions of plain values only (masks, counts, positions) live in `tensor`; this module
//! knows values and the tape.

use crate::autodiff::{AdError, Lifted, Op, Tape};
use crate::ops::{self, plain};
use crate::value::Value;
use std::rc::Rc;

use tensor::{self, BinaryOp, Index, ReduceOp, Tensor, UnaryOp};

/// A 0/1 mask of `a op b` on the primals, with broadcasting: a constant for `select`.
fn compare(op: BinaryOp, a: &Value, b: &Value) -> Result<Value, AdError> {
    let mask = plain::binary(op, a.detach(), b.detach())?;
    // Two numbers compare to a `bool`; `select` takes any number.
    Ok(match mask {
        Value::Bool(truth) => Value::Float(f64::from(u8::from(truth))),
        mask => mask,
    })
}

/// `leaky_relu(x, slope)`: `x` where `x > 0`, else `slope x`.
pub fn leaky_relu(t: &mut Tape, x: Value, slope: f64) -> Result<Value, AdError> {
    let positive = compare(BinaryOp::Gt, &x, &Value::Float(0.0))?;
    let scaled = ops::mul(t, x.clone(), Value::Float(slope))?;
    ops::select(t, &positive, x, scaled)
}

/// `elu(x, alpha)`: `x` where `x > 0`, else `alpha (e^x - 1)`.
pub fn elu(t: &mut Tape, x: Value, alpha: f64) -> Result<Value, AdError> {
    let positive = compare(BinaryOp::Gt, &x, &Value::Float(0.0))?;
    let curve = ops::unary(t, UnaryOp::Expm1, x.clone())?;
    let scaled = ops::mul(t, curve, Value::Float(alpha))?;
    ops::select(t, &positive, x, scaled)
}

/// `clip(x, lo, hi)`: `min(max(x, lo), hi)`, with the gradient to `x` where `lo <= x <= hi`.
pub fn clip(t: &mut Tape, x: Value, lo: Value, hi: Value) -> Result<Value, AdError> {
    let below = compare(BinaryOp::Lt, &x, &lo)?;
    let raised = ops::select(t, &below, lo, x)?;
    let above = compare(BinaryOp::Gt, &raised, &hi)?;
    ops::select(t, &above, hi, raised)
}

/// `isnan(x)` or `isfinite(x)`: a `bool` of a number, a 0/1 mask of a tensor.
pub fn predicate(x: &Value, test: fn(f64) -> bool) -> Result<Value, AdError> {
    match x.detach() {
        Value::Tensor(tensor) => {
            Ok(Value::tensor(tensor.as_ref().clone().map(|v| f64::from(u8::from(test(v))))))
        }
        other => match other.as_f64() {
            Some(v) => Ok(Value::Bool(test(v))),
            None => Err(plain::operand("isnan", &other)),
        },
    }
}

/// A reduction's result reshaped to keep the reduced axis with extent 1.
pub fn keep_axis(t: &mut Tape, y: Value, input: &[usize], axis: usize) -> Result<Value, AdError> {
    let mut kept = input.to_vec();
    if let Some(extent) = kept.get_mut(axis) {
        *extent = 1;
    }
    ops::reshape(t, y, &kept)
}

/// `op` of `x` along `axis`, keeping the axis when `keepdims`.
pub fn reduce_keeping(
    t: &mut Tape,
    op: ReduceOp,
    x: Value,
    axis: i64,
    keepdims: bool,
) -> Result<Value, AdError> {
    let shape = x.shape().to_vec();
    let resolved = tensor::normalize_axis(axis, shape.len())?;
    let y = ops::reduce(t, op, x, Some(axis))?;
    match keepdims {
        true => keep_axis(t, y, &shape, resolved),
        false => Ok(y),
    }
}

/// `std` (when `root`) or `variance` over all elements or along `axis`, dividing the sum of
/// squared deviations by the count less `ddof`. The standard deviation is the norm of the
/// deviations over the square root of that count, so its gradient where all deviations are 0 is
/// 0 (the norm's convention) rather than NaN.
pub fn moment(
    t: &mut Tape,
    x: Value,
    axis: Option<i64>,
    ddof: f64,
    keepdims: bool,
    root: bool,
) -> Result<Value, AdError> {
    let x = ops::shape::as_tensor(t, x, "std")?;
    let shape = x.shape().to_vec();
    let (axis, count) = match axis {
        None => (None, shape.iter().product::<usize>()),
        Some(axis) => {
            let resolved = tensor::normalize_axis(axis, shape.len())?;
            (Some((axis, resolved)), shape[resolved])
        }
    };
    let mean = match axis {
        None => ops::reduce(t, ReduceOp::Mean, x.clone(), None)?,
        Some((axis, resolved)) => {
            let mean = ops::reduce(t, ReduceOp::Mean, x.clone(), Some(axis))?;
            keep_axis(t, mean, &shape, resolved)?
        }
    };
    let deviations = ops::sub(t, x, mean)?;
    // Counts convert to `f64` exactly.
    let divisor = count as f64 - ddof;
    let result = match root {
        true => {
            let norm = ops::reduce(t, ReduceOp::Norm, deviations, axis.map(|(a, _)| a))?;
            ops::div(t, norm, Value::Float(divisor.sqrt()))?
        }
        false => {
            let squares = ops::mul(t, deviations.clone(), deviations)?;
            let total = ops::reduce(t, ReduceOp::Sum, squares, axis.map(|(a, _)| a))?;
            ops::div(t, total, Value::Float(divisor))?
        }
    };
    match (keepdims, axis) {
        (true, Some((_, resolved))) => keep_axis(t, result, &shape, resolved),
        _ => Ok(result),
    }
}

/// The order of a vector norm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum VectorOrd {
    /// `(sum |x|^p)^(1/p)`; 2 is the Euclidean norm.
    P(f64),
    /// The largest `|x|` (`inf`) or the smallest (`-inf`).
    Extreme { largest: bool },
}

/// The vector norm of order `ord` along `axis`, keeping it when `keepdims`; an order of 0
/// counts the non-zero elements (NumPy's convention), which has gradient 0.
pub fn vector_norm(
    t: &mut Tape,
    x: Value,
    axis: i64,
    ord: VectorOrd,
    keepdims: bool,
) -> Result<Value, AdError> {
    let shape = x.shape().to_vec();
    let resolved = tensor::normalize_axis(axis, shape.len())?;
    let y = match ord {
        VectorOrd::P(2.0) => ops::reduce(t, ReduceOp::Norm, x, Some(axis))?,
        VectorOrd::P(0.0) => {
            let x = plain::into_tensor(x.detach(), "norm")?;
            Value::tensor(tensor::count_nonzero(&x, Some(resolved))?)
        }
        VectorOrd::P(1.0) => {
            let magnitudes = ops::unary(t, UnaryOp::Abs, x)?;
            ops::reduce(t, ReduceOp::Sum, magnitudes, Some(axis))?
        }
        VectorOrd::P(p) => {
            // (sum |x|^p)^(1/p), with 0 and a zero gradient where the sum is 0: there the
            // root sees 1 instead, so that no infinity of its derivative leaks.
            let magnitudes = ops::unary(t, UnaryOp::Abs, x)?;
            let powers = ops::pow(t, magnitudes, Value::Float(p))?;
            let total = ops::reduce(t, ReduceOp::Sum, powers, Some(axis))?;
            let at_zero = compare(BinaryOp::Eq, &total, &Value::Float(0.0))?;
            let safe = ops::select(t, &at_zero, Value::Float(1.0), total)?;
            let root = ops::pow(t, safe, Value::Float(1.0 / p))?;
            ops::select(t, &at_zero, Value::Float(0.0), root)?
        }
        VectorOrd::Extreme { largest } => {
            let magnitudes = ops::unary(t, UnaryOp::Abs, x)?;
            let op = if largest { ReduceOp::Max } else { ReduceOp::Min };
            ops::reduce(t, op, magnitudes, Some(axis))?
        }
    };
    match keepdims {
        true => keep_axis(t, y, &shape, resolved),
        false => Ok(y),
    }
}

/// `tril(x, k)` (`lower`) or `triu(x, k)` of every matrix of `x`: the elements on and below (or
/// above) the `k`-th diagonal, the others 0.
pub fn triangle(t: &mut Tape, x: Value, k: i64, lower: bool) -> Result<Value, AdError> {
    let (m, n) = match x.shape() {
        [.., m, n] => (*m, *n),
        shape => {
            return Err(tensor::TensorError::Rank {
                op: if lower { "tril" } else { "triu" },
                expected: "a matrix or a stack of matrices",
                shape: shape.to_vec(),
            }
            .into());
        }
    };
    tensor::check_allocation(&[m, n])?;
    let mut mask = Vec::with_capacity(m * n);
    for i in 0..m as i64 {
        for j in 0..n as i64 {
            let kept = if lower { j - i <= k } else { j - i >= k };
            mask.push(f64::from(u8::from(kept)));
        }
    }
    let mask = Value::tensor(Tensor::from_vec(&[m, n], mask)?);
    ops::select(t, &mask, x, Value::Float(0.0))
}

/// `kron(a, b)`: each element of `a` times the whole of `b`, as NumPy's `kron` (the shorter
/// shape is extended with leading 1s).
pub fn kron(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    let rank = a.shape().len().max(b.shape().len());
    let padded = |shape: &[usize]| {
        let mut out = vec![1; rank - shape.len()];
        out.extend_from_slice(shape);
        out
    };
    let (a_shape, b_shape) = (padded(a.shape()), padded(b.shape()));
    // a as [a0, 1, a1, 1, ...] times b as [1, b0, 1, b1, ...], then the pairs merged.
    let spread = |shape: &[usize], first: bool| -> Vec<usize> {
        shape.iter().flat_map(|&d| if first { [d, 1] } else { [1, d] }).collect()
    };
    let a = ops::reshape(t, a, &spread(&a_shape, true))?;
    let b = ops::reshape(t, b, &spread(&b_shape, false))?;
    let product = ops::mul(t, a, b)?;
    let merged: Vec<usize> = a_shape.iter().zip(&b_shape).map(|(x, y)| x * y).collect();
    ops::reshape(t, product, &merged)
}

/// `outer(a, b)`: `a[i] b[j]` over the elements of `a` and `b` in row-major order.
pub fn outer(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    let (n, m) = (a.len(), b.len());
    let a = ops::shape::as_tensor(t, a, "outer")?;
    let b = ops::shape::as_tensor(t, b, "outer")?;
    let column = ops::reshape(t, a, &[n, 1])?;
    let row = ops::reshape(t, b, &[1, m])?;
    ops::mul(t, column, row)
}

/// `cross(a, b)`: the cross product of vectors of 3 along the last axis, broadcasting.
pub fn cross(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    let shape = tensor::broadcast_shapes(a.shape(), b.shape())?;
    if shape.last() != Some(&3) || a.shape().last() != Some(&3) || b.shape().last() != Some(&3) {
        return Err(tensor::TensorError::Argument {
            op: "cross",
            reason: format!(
                "the vectors must have 3 elements along the last axis, got {} and {}",
                tensor::ShapeText(a.shape()),
                tensor::ShapeText(b.shape())
            ),
        }
        .into());
    }
    let a = ops::broadcast_to(t, a, &shape)?;
    let b = ops::broadcast_to(t, b, &shape)?;
    let rank = shape.len();
    let component = |t: &mut Tape, v: &Value, i: usize| {
        let mut index: Vec<Index> = shape[..rank - 1].iter().map(|&n| Index::full(n)).collect();
        index.push(Index::At(i));
        ops::get(t, v.clone(), &index)
    };
    let mut parts = Vec::with_capacity(3);
    for (i, j) in [(1, 2), (2, 0), (0, 1)] {
        let (ai, bj) = (component(t, &a, i)?, component(t, &b, j)?);
        let (aj, bi) = (component(t, &a, j)?, component(t, &b, i)?);
        let first = ops::mul(t, ai, bj)?;
        let second = ops::mul(t, aj, bi)?;
        parts.push(ops::sub(t, first, second)?);
    }
    // Stacked along a new first axis, which then moves last.
    let stacked = ops::stack_many(t, parts)?;
    let mut axes: Vec<i64> = (1..rank as i64).collect();
    axes.push(0);
    ops::permute(t, stacked, &axes)
}

/// `concat` of any number of tensors along `axis`, one pair at a time.
pub fn concat_many(t: &mut Tape, items: Vec<Value>, axis: i64) -> Result<Value, AdError> {
    let mut items = items.into_iter();
    let first = items.next().ok_or_else(|| AdError::internal("concat of nothing"))?;
    items.try_fold(first, |joined, item| ops::concat(t, joined, item, axis))
}

/// `squeeze(x)` (every axis of extent 1) or `squeeze(x, axis)` (that one, which must have extent
/// 1).
pub fn squeeze(t: &mut Tape, x: Value, axis: Option<i64>) -> Result<Value, AdError> {
    let shape = x.shape().to_vec();
    let kept: Vec<usize> = match axis {
        None => shape.iter().copied().filter(|&extent| extent != 1).collect(),
        Some(axis) => {
            let resolved = tensor::normalize_axis(axis, shape.len())?;
            if shape[resolved] != 1 {
                return Err(tensor::TensorError::Argument {
                    op: "squeeze",
                    reason: format!(
                        "axis {resolved} of {} has extent {}, not 1",
                        tensor::ShapeText(&shape),
                        shape[resolved]
                    ),
                }
                .into());
            }
            shape.iter().enumerate().filter(|&(i, _)| i != resolved).map(|(_, &e)| e).collect()
        }
    };
    ops::reshape(t, x, &kept)
}

/// `conv1d` or `conv2d` (`op`) of `x` (`[N][C][spatial...]`) with the filters `w`
/// (`[O][C / groups][kernel...]`): `[N][O][positions...]`, computed by `tensor::Convolution`
/// (im2col and one `dgemm` per image and group) and recorded as one [`convolution`] record.
pub fn conv(
    t: &mut Tape,
    op: &'static str,
    x: Value,
    w: Value,
    params: [usize; 4],
) -> Result<Value, AdError> {
    let conv = tensor::Convolution::new(op, x.shape(), w.shape(), params)?;
    convolution(t, &Rc::new(conv), tensor::Face::Forward, x, w)
}

/// One of the three bilinear maps of `conv` (see `tensor::Face`) of `a` and `b`. Its rule gives
/// each operand's cotangent by the other two maps, recorded the same way, so a convolution
/// differentiates to any order in its images and its filters.
pub(crate) fn convolution(
    t: &mut Tape,
    conv: &Rc<tensor::Convolution>,
    face: tensor::Face,
    a: Value,
    b: Value,
) -> Result<Value, AdError> {
    match t.lift([a, b]) {
        Lifted::Plain([a, b]) => {
            let op = "conv";
            let (a, b) = (plain::into_tensor(a, op)?, plain::into_tensor(b, op)?);
            Ok(Value::tensor(conv.apply(face, &a, &b)?))
        }
        Lifted::Tracked { level, inner: [a, b], args: [a_arg, b_arg] } => {
            let out = convolution(t, conv, face, a.clone(), b.clone())?;
            let conv = conv.clone();
            let op = Op::Conv { face, conv, a: a_arg, b: b_arg, a_value: a, b_value: b };
            t.push(level, op, out)
        }
    }
}

/// `max_pool2d` (`largest`) or `avg_pool2d` of `x` (`[N][C][H][W]`) over `kernel`-by-`kernel`
/// windows: the largest element or the mean of each, padding included in the mean as PyTorch's
/// default `count_include_pad`. The windows are one gather (`tensor::Gather::windows`, the
/// convolution's window walk), `[N][C][positions...][kernel elements]`, reduced along the last
/// axis; ties for the largest share its gradient equally (`max`'s rule).
pub fn pool(
    t: &mut Tape,
    x: Value,
    [kernel, stride, padding]: [usize; 3],
    largest: bool,
) -> Result<Value, AdError> {
    let op = if largest { "max_pool2d" } else { "avg_pool2d" };
    if padding.saturating_mul(2) > kernel {
        return Err(tensor::TensorError::Argument {
            op,
            reason: format!("the padding {padding} is more than half the window {kernel}"),
        }
        .into());
    }
    let geometry = tensor::Windows {
        kernel: vec![kernel; 2],
        stride: vec![stride; 2],
        padding: vec![padding; 2],
        dilation: vec![1; 2],
    };
    let fill = if largest { f64::NEG_INFINITY } else { 0.0 };
    let map = tensor::Gather::windows(op, x.shape(), &geometry, fill)?;
    let mut flat = map.output_shape()[..4].to_vec();
    flat.push(kernel * kernel);
    let windows = ops::gather(t, x, &Rc::new(map))?;
    let windows = ops::reshape(t, windows, &flat)?;
    let reduction = if largest { ReduceOp::Max } else { ReduceOp::Mean };
    ops::reduce(t, reduction, windows, Some(4))
}

/// The classification losses over a batch: `cross_entropy(logits, labels)` (with
/// `from_logits`) is `nll(log_softmax(logits), labels)`, the mean over rows of minus the entry
/// at each row's label.
pub fn class_loss(
    t: &mut Tape,
    scores: Value,
    labels: &Value,
    from_logits: bool,
) -> Result<Value, AdError> {
    let op = if from_logits { "cross_entropy" } else { "nll" };
    let (n, classes) = match scores.shape() {
        &[n, c] => (n, c),
        shape => {
            return Err(tensor::TensorError::Rank {
                op,
                expected: "scores Tensor[N][C]",
                shape: shape.to_vec(),
            }
            .into());
        }
    };
    let labels = plain::into_tensor(labels.detach(), op)?;
    if labels.shape() != [n] {
        return Err(tensor::TensorError::Argument {
            op,
            reason: format!(
                "the labels are {}, but the scores have {n} rows",
                tensor::ShapeText(labels.shape())
            ),
        }
        .into());
    }
    tensor::label_positions(op, &labels, classes)?;
    let chosen = Value::tensor(tensor::one_hot(&labels, classes)?);
    let log_probabilities = match from_logits {
        true => ops::log_softmax(t, scores, 1)?,
        false => scores,
    };
    let picked = ops::select(t, &chosen, log_probabilities, Value::Float(0.0))?;
    let total = ops::reduce(t, ReduceOp::Sum, picked, None)?;
    // The mean over rows (NaN for no rows, as in PyTorch).
    ops::div(t, total, Value::Float(-(n as f64)))
}

/// `mse(prediction, target)`: the mean of the squared differences.
pub fn mse(t: &mut Tape, prediction: Value, target: Value) -> Result<Value, AdError> {
    let difference = ops::sub(t, prediction, target)?;
    let squares = ops::mul(t, difference.clone(), difference)?;
    mean_of(t, squares)
}

/// `bce_with_logits(x, target)`: the mean of `softplus(x) - x target`, which is
/// `-(target ln sigmoid(x) + (1 - target) ln(1 - sigmoid(x)))` without its overflow.
pub fn bce_with_logits(t: &mut Tape, logits: Value, target: Value) -> Result<Value, AdError> {
    let soft = ops::unary(t, UnaryOp::Softplus, logits.clone())?;
    let product = ops::mul(t, logits, target)?;
    let losses = ops::sub(t, soft, product)?;
    mean_of(t, losses)
}

/// The mean of a float or of a tensor's elements, as a float.
fn mean_of(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    match x.is_tensor() {
        true => ops::reduce(t, ReduceOp::Mean, x, None),
        false => Ok(x),
    }
}

/// `uniform(lo, hi, shape)` from `u`, uniform numbers in `[0, 1)` of the shape: `lo + (hi - lo) u`.
pub fn uniform(t: &mut Tape, lo: Value, hi: Value, u: Tensor) -> Result<Value, AdError> {
    let width = ops::sub(t, hi, lo.clone())?;
    let scaled = ops::mul(t, width, Value::tensor(u))?;
    ops::add(t, lo, scaled)
}

/// `normal(mean, std, shape)` from `z`, standard normal numbers of the shape: `mean + std z`.
pub fn normal(t: &mut Tape, mean: Value, std: Value, z: Tensor) -> Result<Value, AdError> {
    let scaled = ops::mul(t, std, Value::tensor(z))?;
    ops::add(t, mean, scaled)
}

/// `matrix_norm(x, ord)` over the last two axes of `x`: a float for a single matrix. The plain
/// value is the kernel's; a tracked one is differentiated through the definition: the Frobenius
/// norm as the 2-norm of the elements, `nuc`, `2` and `-2` through the singular values of `svd`,
/// the others through the sums of magnitudes, with the conventions of `norm`, `abs` and `max` at
/// zeros and ties.
pub fn matrix_norm(t: &mut Tape, x: Value, ord: tensor::MatrixOrd) -> Result<Value, AdError> {
    use tensor::MatrixOrd;
    let shape = x.shape().to_vec();
    let rank = shape.len();
    if rank < 2 {
        let expected = "a matrix or a stack of matrices";
        return Err(tensor::TensorError::Rank { op: "matrix_norm", expected, shape }.into());
    }
    let y = match (x.is_tracked(), ord) {
        (false, _) => {
            let x = plain::into_tensor(x, "matrix_norm")?;
            Value::tensor(tensor::matrix_norm(&x, ord)?)
        }
        (true, MatrixOrd::Frobenius) => {
            let mut flat = shape[..rank - 2].to_vec();
            flat.push(shape[rank - 2] * shape[rank - 1]);
            let elements = ops::reshape(t, x, &flat)?;
            ops::reduce(t, ReduceOp::Norm, elements, Some(-1))?
        }
        (true, MatrixOrd::Nuclear | MatrixOrd::Spectral { .. }) => {
            let [_, s, _] = ops::svd(t, x)?;
            let op = match ord {
                MatrixOrd::Nuclear => ReduceOp::Sum,
                MatrixOrd::Spectral { largest: true } => ReduceOp::Max,
                _ => ReduceOp::Min,
            };
            ops::reduce(t, op, s, Some(-1))?
        }
        (true, MatrixOrd::Columns { largest } | MatrixOrd::Rows { largest }) => {
            let along = if matches!(ord, MatrixOrd::Columns { .. }) { -2 } else { -1 };
            let magnitudes = ops::unary(t, UnaryOp::Abs, x)?;
            let sums = ops::reduce(t, ReduceOp::Sum, magnitudes, Some(along))?;
            let op = if largest { ReduceOp::Max } else { ReduceOp::Min };
            ops::reduce(t, op, sums, Some(-1))?
        }
    };
    match rank {
        2 => ops::to_float(t, y),
        _ => Ok(y),
    }
}
