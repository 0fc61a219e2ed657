//! Executing a planned contraction on ndarray tensors.
//!
//! Each operand first takes its diagonals (a strided view, no copy) and sums the labels nothing
//! else needs. Each pairwise step that sums a label is one matrix product: both tensors are viewed
//! as stacks of matrices `[batch, free, summed]`, copied only when their axes are not already in
//! such block order, and multiplied by BLAS `dgemm` through ndarray (one call per batch entry).
//! Steps that sum nothing (Hadamard and outer products) and the final layout of the output are one
//! `Zip` pass over broadcast views. No step loops over elements itself.

use ndarray::{ArrayD, ArrayView, ArrayViewD, ArrayViewMut, Axis, CowArray, Ix3, IxDyn};
use ndarray::{ShapeBuilder, Zip, linalg::general_mat_mul};

use super::error::EinsumError;
use super::label::{Label, LabelSet};
use super::plan::Plan;

/// A tensor in flight with the label of each of its axes; labels are distinct.
struct Labeled<'a> {
    labels: Vec<Label>,
    array: CowArray<'a, f64, IxDyn>,
}

pub(crate) fn run(
    plan: &Plan,
    operands: &[ArrayViewD<'_, f64>],
) -> Result<ArrayD<f64>, EinsumError> {
    let contraction = plan.contraction();
    let extents = plan.extents();
    let output = contraction.output();
    let factor = contraction.factor();
    let mut used = contraction.operands().iter().flatten().chain(output);
    // An empty sum is zero and an empty output is empty, so a zero extent anywhere settles it.
    if used.any(|label| extents[label.index()] == 0) {
        return zeros(plan.output_shape());
    }
    let mut slots: Vec<Option<Labeled<'_>>> = Vec::with_capacity(2 * operands.len());
    for ((view, labels), prepared) in
        operands.iter().zip(contraction.operands()).zip(plan.prepared())
    {
        slots.push(Some(prepare(view.clone(), labels, prepared)?));
    }
    let capacity = contraction.label_count();
    let output_set = LabelSet::from_labels(capacity, output);
    // The labels the last tensor carries: the output's, once each, where some operand has them.
    let mut core: Vec<Label> = Vec::new();
    for label in output {
        let bound = plan.prepared().iter().any(|labels| labels.contains(label));
        if bound && !core.contains(label) {
            core.push(*label);
        }
    }
    let steps = plan.path().steps();
    for (step, &[x, y]) in steps.iter().enumerate() {
        let mut take = |id: usize| {
            slots.get_mut(id).and_then(Option::take).ok_or_else(|| {
                EinsumError::internal(format!("path step {step} reads tensor {id}, which is gone"))
            })
        };
        let (a, b) = (take(x)?, take(y)?);
        let mut keep = output_set.clone();
        for label in slots.iter().flatten().flat_map(|tensor| &tensor.labels) {
            keep.insert(*label);
        }
        let last = step + 1 == steps.len();
        // The factor rides on the last step, where dgemm's alpha or the Zip pass applies it free.
        let step_factor = if last { factor } else { 1.0 };
        let target = if last { Some(core.as_slice()) } else { None };
        slots.push(Some(contract_pair(a, b, &keep, target, step_factor, extents)?));
    }
    let mut remaining = slots.into_iter().flatten();
    let result = match (remaining.next(), remaining.next()) {
        (Some(result), None) => result,
        (None, None) => {
            Labeled { labels: Vec::new(), array: CowArray::from(ArrayD::ones(IxDyn(&[]))) }
        }
        (Some(_), Some(_)) => return Err(EinsumError::internal("the path left several tensors")),
        (None, Some(_)) => return Err(EinsumError::internal("the path lost a tensor")),
    };
    let result = sum_out(result, |label| core.contains(&label));
    let remaining_factor = if steps.is_empty() { factor } else { 1.0 };
    assemble(result, output, plan.output_shape(), remaining_factor)
}

/// Takes an operand's diagonals and sums away its labels missing from `prepared`.
fn prepare<'a>(
    view: ArrayViewD<'a, f64>,
    labels: &[Label],
    prepared: &[Label],
) -> Result<Labeled<'a>, EinsumError> {
    let mut distinct: Vec<Label> = Vec::with_capacity(labels.len());
    for label in labels {
        if !distinct.contains(label) {
            distinct.push(*label);
        }
    }
    let tensor = match distinct.len() < labels.len() {
        true => Labeled { array: diagonal(view, labels, &distinct)?, labels: distinct },
        false => Labeled { labels: labels.to_vec(), array: CowArray::from(view) },
    };
    Ok(sum_out(tensor, |label| prepared.contains(&label)))
}

/// The view of `view` with one axis per distinct label, reading only where the axes of a repeated
/// label agree: a strided view whose stride for a label is the sum of its axes' strides.
fn diagonal<'a>(
    view: ArrayViewD<'a, f64>,
    labels: &[Label],
    distinct: &[Label],
) -> Result<CowArray<'a, f64, IxDyn>, EinsumError> {
    let shape = view.shape().to_vec();
    let (dims, strides) = diagonal_layout(&shape, labels, distinct);
    let layout = IxDyn(&dims).strides(IxDyn(&strides));
    let broken =
        |error: ndarray::ShapeError| EinsumError::internal(format!("diagonal view: {error}"));
    match view.to_slice() {
        Some(data) => Ok(CowArray::from(ArrayView::from_shape(layout, data).map_err(broken)?)),
        None => {
            let copy = to_standard(view, 1.0);
            let data =
                copy.as_slice().ok_or_else(|| EinsumError::internal("copy not contiguous"))?;
            Ok(CowArray::from(to_standard(
                ArrayView::from_shape(layout, data).map_err(broken)?,
                1.0,
            )))
        }
    }
}

/// Extents and element strides of the diagonal of a row-major array of `shape`, one axis per
/// label of `distinct`.
fn diagonal_layout(
    shape: &[usize],
    labels: &[Label],
    distinct: &[Label],
) -> (Vec<usize>, Vec<usize>) {
    let mut row_major = vec![1usize; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        row_major[axis] = row_major[axis + 1] * shape[axis + 1];
    }
    let mut dims = vec![1usize; distinct.len()];
    let mut strides = vec![0usize; distinct.len()];
    for (axis, label) in labels.iter().enumerate() {
        if let Some(position) = distinct.iter().position(|known| known == label) {
            dims[position] = shape[axis];
            strides[position] += row_major[axis];
        }
    }
    (dims, strides)
}

/// Sums the axes whose labels `keep` rejects, largest first so later passes read less.
fn sum_out<'a>(mut tensor: Labeled<'a>, keep: impl Fn(Label) -> bool) -> Labeled<'a> {
    let mut summed: Vec<Label> =
        tensor.labels.iter().copied().filter(|&label| !keep(label)).collect();
    if summed.is_empty() {
        return tensor;
    }
    if summed.len() == tensor.labels.len() {
        let total = tensor.array.sum();
        return Labeled {
            labels: Vec::new(),
            array: CowArray::from(ArrayD::from_elem(IxDyn(&[]), total)),
        };
    }
    let extent = |tensor: &Labeled<'_>, label: Label| {
        tensor
            .labels
            .iter()
            .position(|&known| known == label)
            .map_or(0, |axis| tensor.array.shape()[axis])
    };
    summed.sort_by_key(|&label| std::cmp::Reverse(extent(&tensor, label)));
    for label in summed {
        if let Some(axis) = tensor.labels.iter().position(|&known| known == label) {
            tensor.array = CowArray::from(tensor.array.sum_axis(Axis(axis)));
            tensor.labels.remove(axis);
        }
    }
    tensor
}

/// Contracts two tensors, keeping the labels in `keep` and summing the shared ones it lacks.
///
/// `target`, given for the last step, is the order the result's labels should come in.
fn contract_pair<'r>(
    a: Labeled<'_>,
    b: Labeled<'_>,
    keep: &LabelSet,
    target: Option<&[Label]>,
    factor: f64,
    extents: &[usize],
) -> Result<Labeled<'r>, EinsumError> {
    // Labels that neither the other tensor nor anything later needs go first; the planner
    // normally leaves none.
    let a = sum_out(a, |label| keep.contains(label) || b.labels.contains(&label));
    let b = sum_out(b, |label| keep.contains(label) || a.labels.contains(&label));
    let shared = |label: &&Label| a.labels.contains(label) && b.labels.contains(label);
    let any_summed = a.labels.iter().filter(shared).any(|&label| !keep.contains(label));
    if !any_summed {
        let mut order: Vec<Label> = a.labels.clone();
        order.extend(b.labels.iter().filter(|label| !a.labels.contains(label)));
        if let Some(target) = target.filter(|target| same_labels(target, &order)) {
            order = target.to_vec();
        }
        return broadcast_product(&a, &b, order, factor, extents);
    }
    matrix_product(&a, &b, keep, factor, extents)
}

fn same_labels(x: &[Label], y: &[Label]) -> bool {
    x.len() == y.len() && x.iter().all(|label| y.contains(label))
}

/// An elementwise product over the union of the labels, broadcasting each side: Hadamard and outer
/// products in one pass.
fn broadcast_product<'r>(
    a: &Labeled<'_>,
    b: &Labeled<'_>,
    order: Vec<Label>,
    factor: f64,
    extents: &[usize],
) -> Result<Labeled<'r>, EinsumError> {
    let shape: Vec<usize> = order.iter().map(|label| extents[label.index()]).collect();
    let mut product = zeros(&shape)?;
    let a_aligned = align(a.array.view(), &a.labels, &order)?;
    let b_aligned = align(b.array.view(), &b.labels, &order)?;
    let unbroadcastable = || EinsumError::internal("operand does not broadcast to the product");
    let a_full = a_aligned.broadcast(IxDyn(&shape)).ok_or_else(unbroadcastable)?;
    let b_full = b_aligned.broadcast(IxDyn(&shape)).ok_or_else(unbroadcastable)?;
    Zip::from(product.view_mut())
        .and(&a_full)
        .and(&b_full)
        .for_each(|out, &x, &y| *out = factor * x * y);
    Ok(Labeled { labels: order, array: CowArray::from(product) })
}

/// Which block comes first in a tensor viewed as a stack of matrices.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Blocks {
    /// `[batch, free, summed]`.
    FreeFirst,
    /// `[batch, summed, free]`.
    SummedFirst,
}

/// The labels of a pairwise product sorted into its roles; the order inside each group fixes the
/// axis order the matrices are laid out in.
struct Roles {
    batch: Vec<Label>,
    summed: Vec<Label>,
    left: Vec<Label>,
    right: Vec<Label>,
}

impl Roles {
    /// Groups the labels, taking the batch and summed orders from `leader`.
    fn new(a: &[Label], b: &[Label], leader: &[Label], keep: &LabelSet) -> Roles {
        let shared = |label: &&Label| a.contains(label) && b.contains(label);
        Roles {
            batch: leader
                .iter()
                .filter(shared)
                .copied()
                .filter(|&label| keep.contains(label))
                .collect(),
            summed: leader
                .iter()
                .filter(shared)
                .copied()
                .filter(|&label| !keep.contains(label))
                .collect(),
            left: a.iter().copied().filter(|label| !b.contains(label)).collect(),
            right: b.iter().copied().filter(|label| !a.contains(label)).collect(),
        }
    }

    /// The axis order of a tensor with free labels `free` in the given block order.
    fn order(&self, free: &[Label], blocks: Blocks) -> Vec<Label> {
        let (first, second) = match blocks {
            Blocks::FreeFirst => (free, &self.summed[..]),
            Blocks::SummedFirst => (&self.summed[..], free),
        };
        [&self.batch[..], first, second].concat()
    }

    /// The block order `tensor` already has, if it needs no copy to be viewed as matrices.
    fn layout_of(&self, tensor: &Labeled<'_>, free: &[Label]) -> Option<Blocks> {
        if !tensor.array.is_standard_layout() {
            return None;
        }
        [Blocks::FreeFirst, Blocks::SummedFirst]
            .into_iter()
            .find(|&blocks| tensor.labels == self.order(free, blocks))
    }
}

/// A pairwise contraction that sums at least one label, as one `dgemm` per batch entry.
fn matrix_product<'r>(
    a: &Labeled<'_>,
    b: &Labeled<'_>,
    keep: &LabelSet,
    factor: f64,
    extents: &[usize],
) -> Result<Labeled<'r>, EinsumError> {
    // The batch and summed labels must come in one order in both tensors; take it from the one
    // whose copy would cost more, unless that one needs copying anyway.
    let copied_size = |roles: &Roles| {
        let a_size = if roles.layout_of(a, &roles.left).is_some() { 0 } else { a.array.len() };
        let b_size = if roles.layout_of(b, &roles.right).is_some() { 0 } else { b.array.len() };
        a_size + b_size
    };
    let by_a = Roles::new(&a.labels, &b.labels, &a.labels, keep);
    let by_b = Roles::new(&a.labels, &b.labels, &b.labels, keep);
    let roles = if copied_size(&by_b) < copied_size(&by_a) { by_b } else { by_a };
    // Saturating, so that an impossible size reaches the allocation check and is reported there.
    let size = |labels: &[Label]| {
        labels.iter().fold(1usize, |size, label| size.saturating_mul(extents[label.index()]))
    };
    let (batch, m, k, n) =
        (size(&roles.batch), size(&roles.left), size(&roles.summed), size(&roles.right));
    let (a_blocks, a_stack) = matrices(a, &roles, &roles.left, Blocks::FreeFirst, (batch, m, k))?;
    let (b_blocks, b_stack) =
        matrices(b, &roles, &roles.right, Blocks::SummedFirst, (batch, k, n))?;
    let mut product = zeros(&[batch, m, n])?
        .into_dimensionality::<Ix3>()
        .map_err(|error| EinsumError::internal(format!("matrix product stack: {error}")))?;
    for entry in 0..batch {
        // BLAS takes transposed operands as they are, so a tensor stored `[summed, free]` is
        // passed as the transpose of a row-major matrix rather than copied.
        let a_matrix = a_stack.index_axis(Axis(0), entry);
        let a_matrix =
            if a_blocks == Blocks::FreeFirst { a_matrix } else { a_matrix.reversed_axes() };
        let b_matrix = b_stack.index_axis(Axis(0), entry);
        let b_matrix =
            if b_blocks == Blocks::SummedFirst { b_matrix } else { b_matrix.reversed_axes() };
        let mut out = product.index_axis_mut(Axis(0), entry);
        match (m, n) {
            // A dot product; `dgemm` on 1x1 outputs is needlessly slow.
            (1, 1) => out.fill(factor * a_matrix.row(0).dot(&b_matrix.column(0))),
            _ => general_mat_mul(factor, &a_matrix, &b_matrix, 0.0, &mut out),
        }
    }
    let labels = [&roles.batch[..], &roles.left, &roles.right].concat();
    let shape: Vec<usize> = labels.iter().map(|label| extents[label.index()]).collect();
    let array = product
        .into_dyn()
        .into_shape_with_order(IxDyn(&shape))
        .map_err(|error| EinsumError::internal(format!("matrix product reshape: {error}")))?;
    Ok(Labeled { labels, array: CowArray::from(array) })
}

/// Views `tensor` as a stack of matrices, copying it into `preferred` block order only when its
/// axes are not already in a block order.
fn matrices<'t>(
    tensor: &'t Labeled<'_>,
    roles: &Roles,
    free: &[Label],
    preferred: Blocks,
    (batch, rows, cols): (usize, usize, usize),
) -> Result<(Blocks, CowArray<'t, f64, Ix3>), EinsumError> {
    let dims = |blocks: Blocks| match blocks == preferred {
        true => (batch, rows, cols),
        false => (batch, cols, rows),
    };
    let broken =
        |error: ndarray::ShapeError| EinsumError::internal(format!("matrix view: {error}"));
    match roles.layout_of(tensor, free) {
        Some(blocks) => {
            let view = tensor.array.view().into_shape_with_order(dims(blocks)).map_err(broken)?;
            Ok((blocks, CowArray::from(view)))
        }
        None => {
            let order = roles.order(free, preferred);
            let copy = to_standard(align(tensor.array.view(), &tensor.labels, &order)?, 1.0);
            let stack = copy.into_shape_with_order(dims(preferred)).map_err(broken)?;
            Ok((preferred, CowArray::from(stack)))
        }
    }
}

/// Permutes `view`'s axes into the order of `order` and inserts length-one axes for the labels of
/// `order` it lacks, ready to broadcast.
fn align<'b>(
    view: ArrayViewD<'b, f64>,
    labels: &[Label],
    order: &[Label],
) -> Result<ArrayViewD<'b, f64>, EinsumError> {
    let permutation: Vec<usize> =
        order.iter().filter_map(|label| labels.iter().position(|known| known == label)).collect();
    if permutation.len() != labels.len() {
        return Err(EinsumError::internal("a tensor carries a label its target lacks"));
    }
    let mut view = view.permuted_axes(permutation);
    for (position, label) in order.iter().enumerate() {
        if !labels.contains(label) {
            view = view.insert_axis(Axis(position));
        }
    }
    Ok(view)
}

/// A zero-filled row-major array, or an error where ndarray would panic: when the product of the
/// non-zero extents overflows the address space. Shapes come from user programs.
fn zeros(shape: &[usize]) -> Result<ArrayD<f64>, EinsumError> {
    let bytes = shape
        .iter()
        .filter(|&&extent| extent != 0)
        .try_fold(size_of::<f64>(), |bytes, &extent| bytes.checked_mul(extent));
    match bytes {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(ArrayD::zeros(IxDyn(shape))),
        _ => Err(EinsumError::TooLarge { shape: shape.to_vec() }),
    }
}

/// A standard-layout copy of `view`, multiplied by `factor`.
fn to_standard(view: ArrayViewD<'_, f64>, factor: f64) -> ArrayD<f64> {
    let mut copy = ArrayD::zeros(view.raw_dim());
    Zip::from(copy.view_mut()).and(&view).for_each(|out, &x| *out = factor * x);
    copy
}

/// Lays the final tensor out as the output: permuted to the output's order, broadcast along output
/// labels no operand carries, written onto the diagonal where the output repeats a label, and
/// multiplied by what remains of the factor.
fn assemble(
    result: Labeled<'_>,
    output: &[Label],
    output_shape: &[usize],
    factor: f64,
) -> Result<ArrayD<f64>, EinsumError> {
    if result.labels == output && result.array.is_standard_layout() {
        let mut array = result.array.into_owned();
        if factor != 1.0 {
            array.mapv_inplace(|x| factor * x);
        }
        return Ok(array);
    }
    let mut distinct: Vec<Label> = Vec::with_capacity(output.len());
    for label in output {
        if !distinct.contains(label) {
            distinct.push(*label);
        }
    }
    let (dims, strides) = diagonal_layout(output_shape, output, &distinct);
    let aligned = align(result.array.view(), &result.labels, &distinct)?;
    let source = aligned
        .broadcast(IxDyn(&dims))
        .ok_or_else(|| EinsumError::internal("result does not broadcast to the output"))?;
    let mut array = zeros(output_shape)?;
    if distinct.len() == output.len() {
        Zip::from(array.view_mut()).and(&source).for_each(|out, &x| *out = factor * x);
        return Ok(array);
    }
    let data =
        array.as_slice_mut().ok_or_else(|| EinsumError::internal("output not contiguous"))?;
    let mut diagonal = ArrayViewMut::from_shape(IxDyn(&dims).strides(IxDyn(&strides)), data)
        .map_err(|error| EinsumError::internal(format!("output diagonal: {error}")))?;
    Zip::from(&mut diagonal).and(&source).for_each(|out, &x| *out = factor * x);
    Ok(array)
}
