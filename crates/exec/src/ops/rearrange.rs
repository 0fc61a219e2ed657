//! The library functions that rearrange elements: `sort`, `topk`, `flip`, `roll`, `tile`,
//! `repeat`, `pad` and `shuffle` are each a [`tensor::Gather`] map built from the primal, then
//! one differentiable [`ops::gather`] (whose rule is a scatter-add through the same map, so they
//! differentiate to any order); `split` is slices; `cumsum` is a scan and `cumprod` a product of
//! prefixes.
//!
//! Maps that depend on the values (the order of a sort) are built from the primal and held
//! constant by the derivative, as in JAX: the gradient of a sorted element goes to the element
//! that was sorted to its place.

use std::rc::Rc;

use crate::autodiff::{AdError, Tape};
use crate::ops::{self, plain};
use crate::value::Value;
use tensor::{self, Gather, Index, PadMode, ReduceOp, Rng, ScanOp, Tensor};

/// The primal of a tensor argument of `op`, untracked, for building a map.
fn primal(x: &Value, op: &'static str) -> Result<Tensor, AdError> {
    if !x.is_tensor() {
        return Err(plain::operand(op, x));
    }
    plain::into_tensor(x.detach(), op)
}

/// `axis` resolved against `rank`, or the last axis when none is given.
fn axis_or_last(axis: Option<i64>, rank: usize, op: &'static str) -> Result<usize, AdError> {
    match axis {
        Some(axis) => Ok(tensor::normalize_axis(axis, rank)?),
        None => rank.checked_sub(1).ok_or_else(|| {
            tensor::TensorError::Rank { op, expected: "a tensor of rank 1 or more", shape: vec![] }
                .into()
        }),
    }
}

/// `x` rearranged by `map`.
fn through(t: &mut Tape, x: Value, map: Gather) -> Result<Value, AdError> {
    ops::gather(t, x, &Rc::new(map))
}

/// `sort(x, axis, descending)`: every lane along `axis` (the last by default) in ascending order,
/// stable, NaN last, or in descending order, stable, NaN first (as PyTorch's
/// `sort(descending=True)` and `topk`).
pub fn sort(t: &mut Tape, x: Value, axis: Option<i64>, descending: bool) -> Result<Value, AdError> {
    let plain = primal(&x, "sort")?;
    let axis = axis_or_last(axis, plain.rank(), "sort")?;
    match x.is_tracked() {
        true => through(t, x, tensor::sort_gather(&plain, axis, descending)?),
        // Nothing to differentiate: the values alone, without the map.
        false => Ok(Value::tensor(tensor::sort_values(&plain, axis, descending)?)),
    }
}

/// `topk(x, k, axis)`: the `k` largest elements of every lane, largest first (NaN counts as
/// largest, ties keep their order), and their positions along the axis.
pub fn topk(
    t: &mut Tape,
    x: Value,
    k: usize,
    axis: Option<i64>,
) -> Result<(Value, Value), AdError> {
    let plain = primal(&x, "topk")?;
    let axis = axis_or_last(axis, plain.rank(), "topk")?;
    let map = Rc::new(tensor::topk_gather(&plain, k, axis)?);
    let indices = map.apply(&tensor::positions_along(plain.shape(), axis)?)?;
    Ok((ops::gather(t, x, &map)?, Value::tensor(indices)))
}

/// `cumsum(x, axis)` and `cumprod(x, axis)`: the running sums or products along `axis`, or of the
/// row-major elements without one. A running product that is differentiated is the product of
/// each lane's prefixes (padded with 1s), so that its derivatives of every order are exact where
/// elements are 0; that costs `n^2` per lane of `n`.
pub fn cumulative(t: &mut Tape, op: ScanOp, x: Value, axis: Option<i64>) -> Result<Value, AdError> {
    if !x.is_tensor() {
        return Err(plain::operand(op.name(), &x));
    }
    let (x, axis) = match axis {
        Some(axis) => {
            let resolved = tensor::normalize_axis(axis, x.shape().len())?;
            (x, resolved)
        }
        None => {
            let len = x.shape().iter().product::<usize>();
            (ops::reshape(t, x, &[len])?, 0)
        }
    };
    match op {
        ScanOp::Sum => ops::cumsum(t, x, axis, false),
        ScanOp::Prod if !x.is_tracked() => {
            let x = plain::into_tensor(x, op.name())?;
            Ok(Value::tensor(tensor::scan(ScanOp::Prod, &x, axis, false)?))
        }
        ScanOp::Prod => {
            // The prefixes with 0 after each (the linear map, whose transpose is its rule), plus
            // a constant 1 there.
            let map = Gather::prefixes(x.shape(), axis, 0.0)?;
            let read = map.apply(&Tensor::ones(x.shape())?)?;
            let padding = Value::tensor(read.map(|read| 1.0 - read));
            let prefixes = through(t, x, map)?;
            let padded = ops::add(t, prefixes, padding)?;
            ops::reduce(t, ReduceOp::Prod, padded, Some(axis as i64 + 1))
        }
    }
}

/// `flip(x)` (every axis) or `flip(x, axis)`.
pub fn flip(t: &mut Tape, x: Value, axis: Option<i64>) -> Result<Value, AdError> {
    let shape = primal(&x, "flip")?.shape().to_vec();
    let axes: Vec<usize> = match axis {
        Some(axis) => vec![tensor::normalize_axis(axis, shape.len())?],
        None => (0..shape.len()).collect(),
    };
    through(t, x, Gather::flip(&shape, &axes)?)
}

/// `roll(x, shift)` (the row-major elements) or `roll(x, shift, axis)`.
pub fn roll(t: &mut Tape, x: Value, shift: i64, axis: Option<i64>) -> Result<Value, AdError> {
    let shape = primal(&x, "roll")?.shape().to_vec();
    let axis = axis.map(|axis| tensor::normalize_axis(axis, shape.len())).transpose()?;
    through(t, x, Gather::roll(&shape, shift, axis)?)
}

/// `tile(x, reps)`.
pub fn tile(t: &mut Tape, x: Value, reps: &[usize]) -> Result<Value, AdError> {
    let shape = primal(&x, "tile")?.shape().to_vec();
    through(t, x, Gather::tile(&shape, reps)?)
}

/// `repeat(x, repeats)` (of the row-major elements) or `repeat(x, repeats, axis)`.
pub fn repeat(t: &mut Tape, x: Value, repeats: usize, axis: Option<i64>) -> Result<Value, AdError> {
    let shape = primal(&x, "repeat")?.shape().to_vec();
    let axis = axis.map(|axis| tensor::normalize_axis(axis, shape.len())).transpose()?;
    through(t, x, Gather::repeat(&shape, repeats, axis)?)
}

/// `pad(x, widths, mode, value)`, one `(before, after)` pair per axis; the new elements of mode
/// `Constant` are `value`. A plain value is the map's fill; a tracked one is selected where the
/// map reads nothing, so that its gradient is the sum of theirs.
pub fn pad(
    t: &mut Tape,
    x: Value,
    widths: &[(usize, usize)],
    mode: PadMode,
    value: Value,
) -> Result<Value, AdError> {
    let shape = primal(&x, "pad")?.shape().to_vec();
    match value.as_f64() {
        Some(fill) if !value.is_tracked() => {
            through(t, x, Gather::pad(&shape, widths, mode, fill)?)
        }
        _ => {
            let map = Gather::pad(&shape, widths, mode, 0.0)?;
            let read = map.apply(&Tensor::ones(&shape)?)?;
            let padded = through(t, x, map)?;
            ops::select(t, &Value::tensor(read), padded, value)
        }
    }
}

/// `split(x, parts, axis)`: `parts` equal slices along `axis`.
pub fn split(t: &mut Tape, x: Value, parts: usize, axis: i64) -> Result<Vec<Value>, AdError> {
    let shape = primal(&x, "split")?.shape().to_vec();
    let axis = tensor::normalize_axis(axis, shape.len())?;
    let extent = shape[axis];
    if parts == 0 || extent % parts != 0 {
        return Err(tensor::TensorError::Argument {
            op: "split",
            reason: format!(
                "{parts} equal parts do not divide the extent {extent} of axis {axis} of {}",
                tensor::ShapeText(&shape)
            ),
        }
        .into());
    }
    let step = extent / parts;
    let cuts: Vec<usize> = (1..parts).map(|part| part * step).collect();
    split_at(t, x, &cuts, axis as i64)
}

/// `split(x, cuts, axis)`: the slices of `x` along `axis` before `cuts[0]`, from each cut to the
/// next, and from the last on (NumPy's `split` at indices), each as NumPy's slice: a cut past
/// the extent is the extent, and a slice from a cut to a lower one is empty.
pub fn split_at(t: &mut Tape, x: Value, cuts: &[usize], axis: i64) -> Result<Vec<Value>, AdError> {
    let shape = primal(&x, "split")?.shape().to_vec();
    let axis = tensor::normalize_axis(axis, shape.len())?;
    let extent = shape[axis];
    let mut index: Vec<Index> = shape[..axis].iter().map(|&n| Index::full(n)).collect();
    index.push(Index::full(extent));
    let mut start = 0;
    cuts.iter()
        .chain([&extent])
        .map(|&end| {
            let (from, to) = (start.min(extent), end.min(extent));
            index[axis] = Index::range(from, to.max(from));
            start = end;
            ops::get(t, x.clone(), &index)
        })
        .collect()
}

/// `shuffle(x)`: the leading axis of `x` in an order `rng` draws.
pub fn shuffle(t: &mut Tape, x: Value, rng: &mut Rng) -> Result<Value, AdError> {
    let shape = primal(&x, "shuffle")?.shape().to_vec();
    let Some((&rows, rest)) = shape.split_first() else {
        return Err(tensor::TensorError::Rank {
            op: "shuffle",
            expected: "a tensor of rank 1 or more",
            shape,
        }
        .into());
    };
    let block = rest.iter().product::<usize>();
    let order = rng.permutation(rows)?;
    if block == 0 {
        return Ok(x);
    }
    // A permutation holds integers below `rows`, exactly.
    let sources = order.to_vec().into_iter().map(|row| row as usize * block).collect();
    through(t, x, Gather::rows(&shape, &shape, sources, block)?)
}
