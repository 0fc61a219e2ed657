//! The backward pass: one walk over a level's records in reverse, with one rule per operation.
//!
//! Adjoints live in a store indexed by tape position that starts empty and fills on first use
//! (`None` means no gradient reached the node, which also lets the walk skip it). Scalar records
//! carry their local derivatives, so a float adjoint flows through them with a multiply-add per
//! input (a tensor adjoint, or one tracked by an enclosing level, with a recorded product).
//! Every other rule is written with the differentiable operations of `ops`, on the values the
//! record saved (unboxed at the record's level, still tracked at lower levels): when an outer
//! level is recording (a nested transform, or the program tape under a transform), the backward
//! pass is itself recorded there, which is what makes derivatives of every order right.
//!
//! An adjoint is a value or a [`Uniform`] tensor (one number and a shape; see `adjoints`).
//! `backward(y)` of a tensor `y` seeds one, and a plain number through a sum or mean over every
//! element makes one; it is a constant, so its rules may drop it where a tracked gradient would
//! have to stay in the recorded pass. A contraction contracts its other operands alone
//! ([`tensor::einsum::Contraction::uniform_gradient`]); sums, means, broadcasts, reshapes,
//! transposes, negation and additions map it to another uniform adjoint; the other element-wise
//! rules multiply by its number instead of by a tensor of it. Every other rule gets the tensor.
//!
//! Decisions at kinks and ties, shared with the scalar fast path in `ops::scalar`:
//! - `abs'(0) = 0`, `relu'(0) = 0`; `pow(x, y)` has `d/dx = 0` where `x == 0` and `y == 0` and
//!   `d/dy = 0` where `x == 0` (PyTorch and JAX agree on these values). Wherever the formula
//!   `y x^(y-1)` is finite it is used, also at `y == 0`, so that the second derivatives stay
//!   right and the Hessian symmetric; a special case selects its value with `select` and feeds the
//!   formula a harmless base there, so that the branch not taken leaks no NaN into a higher
//!   derivative (the "double where" of JAX's documentation). `norm`, `hypot` and `atan2` do the
//!   same at 0.
//! - `floor ceil round trunc sign` have derivative 0 everywhere (also at their jumps); `mod(a, b)`
//!   and `%` have `d/da = 1` (also at their jumps).
//! - `atan2(a, b)` and `hypot(a, b)` have gradient 0 at the origin.
//! - Binary `max`/`min` give the whole gradient to the larger/smaller operand and split it equally
//!   on a tie, so `max(x, x)` has derivative 1 (PyTorch's `maximum`, JAX's `max`).
//! - Reductions `max`/`min` split the gradient equally among all elements equal to the extreme
//!   (PyTorch's `amax`, JAX's `max`); a NaN extreme sends it to the first NaN.
//! - `prod` divides the output by each element when no element is zero; otherwise it uses the
//!   exact product of the other elements (prefix and suffix products), whose own derivative is
//!   exact in the cotangent and, for second derivatives, in the elements; derivatives of third and
//!   higher order of `prod` at an exactly zero element are not provided (they come out as if that
//!   product were constant).
//! - `norm` has gradient 0 at the zero vector.
//! - `det` uses `det(A) inv(A)^T`; for an exactly singular matrix of order at most 8 it uses the
//!   cofactor matrix built from minors instead (larger singular matrices are an error).
//! - `cholesky` follows the symmetric convention of PyTorch and JAX (Murray 2016): with `L` the
//!   factor and `G` its gradient, `P = tril(L^T G)`, `S = (P + strictly_lower(P)^T) / 2`, and the
//!   gradient is `L^-T S L^-1`, a symmetric matrix.

use std::borrow::Cow;
use std::rc::Rc;

use super::adjoints::{Adjoint, Adjoints, Uniform, chain_run};
use super::chunk;
use super::decompositions;
use super::error::{AdError, AdErrorKind};
use super::op::{Arg, BinaryValues, Kind, Op, Rule};
use super::store::{RecStore, Records};
use super::tape::Tape;
use super::trace::Summary;
use crate::ops::{self, plain, scalar};
use crate::value::Value;
use rustc_hash::FxHashSet;
use tensor::einsum::Contraction;
use tensor::{self, BinaryOp, Index, ReduceOp, Tensor, UnaryOp};

/// Which adjoints the caller needs after the pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// Every node's (the program tape, for `grad(x)` of intermediates).
    Everything,
    /// Only the leaves' (transforms); intermediate adjoints are moved into their rules, which
    /// lets a rule overwrite a tensor adjoint in place.
    Leaves,
}

/// What becomes of the records' words as the pass reads them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Words {
    /// They stay, for another pass over the same records (the rows of a Jacobian).
    Kept,
    /// Each chunk of words goes to the tape's free list as soon as every record in it has been
    /// read, and the adjoint store takes its chunks from there, so the adjoints are written into
    /// memory the recording already faulted in (see `chunk`). The caller releases the records
    /// after the pass.
    GivenBack,
}

/// A backward pass under way: where the walk stands, so that it can stop at a custom rule and
/// resume after its driver ran it (see [`RuleCall`]).
pub(crate) struct Walk {
    /// The position just past the next record to read.
    end: usize,
    /// Nodes whose adjoint only their own rule needs, though `keep` keeps everything: the
    /// targets of writes that consumed them (`Op::consumed_input`).
    consumed: FxHashSet<usize>,
}

/// A call of a custom rule that the walk met ([`Op::Custom`]): the driver runs `rule` on the
/// call's `arguments`, its `output` and the output's `gradient`, hands the gradient of each of
/// `inputs` to [`finish_rule`] and resumes the walk. The rule is Nabla code, which only the
/// driver's context (the interpreter) can run; everything else about the pass stays here.
pub(crate) struct RuleCall {
    pub(crate) rule: Rule,
    pub(crate) arguments: Vec<Value>,
    pub(crate) output: Value,
    pub(crate) gradient: Value,
    /// The tracked arguments: their positions among `arguments`, nodes and kinds.
    pub(crate) inputs: Vec<RuleInput>,
}

/// A tracked argument of a [`RuleCall`].
pub(crate) struct RuleInput {
    pub(crate) position: usize,
    node: usize,
    kind: Kind,
}

/// Starts the backward pass of `records` from node `output` with the adjoint `seed`: checks the
/// memory it needs and resets `adjoints` to one (empty) adjoint per node up to `output`.
pub(crate) fn start_pass(
    t: &mut Tape,
    records: &Records,
    output: usize,
    seed: Adjoint,
    adjoints: &mut Adjoints,
) -> Result<Walk, AdError> {
    if output >= records.ops.len() {
        return Err(AdError::internal("backward from a node that was not recorded"));
    }
    let limit_bytes = tensor::allocation_limit();
    let bytes = (output + 1)
        .saturating_mul(size_of::<f64>())
        .saturating_add(records.bytes())
        .saturating_add(t.recorded_bytes());
    if bytes > limit_bytes {
        return Err(AdErrorKind::TapeMemory { bytes: bytes as u128, limit_bytes }.into());
    }
    adjoints.reset(t, output + 1);
    adjoints.set(t, output, seed)?;
    Ok(Walk { end: output + 1, consumed: FxHashSet::default() })
}

/// Walks the records of `level` in reverse from where `walk` stands, filling `adjoints`, until
/// the pass is done (`None`) or meets a custom rule that a gradient reached (`Some`: the driver
/// runs it, gives its result to [`finish_rule`] and calls this again).
///
/// On a tape that checks for NaN (`--check-nan`), every rule's results are checked as the pass
/// goes: the first rule that turns a finite gradient into a NaN or an infinity stops the pass
/// with [`AdErrorKind::NonFiniteGradient`], naming the record's site. The check is a second copy
/// of the walk, chosen once per pass, so that the pass without it is unchanged.
pub(crate) fn resume_pass(
    t: &mut Tape,
    level: usize,
    records: &mut Records,
    pass: (Keep, Words),
    adjoints: &mut Adjoints,
    walk: &mut Walk,
) -> Result<Option<RuleCall>, AdError> {
    if t.checks_nan() {
        walk_records::<true>(t, level, records, pass, adjoints, walk)
    } else {
        walk_records::<false>(t, level, records, pass, adjoints, walk)
    }
}

/// Adds the gradient a custom rule gave for `input` to its adjoint, after checking that it has
/// that input's type.
pub(crate) fn finish_rule(
    t: &mut Tape,
    adjoints: &mut Adjoints,
    input: &RuleInput,
    gradient: Value,
) -> Result<(), AdError> {
    let fits = match &input.kind {
        Kind::Float => gradient.is_float(),
        Kind::Tensor(shape) => gradient.is_tensor() && gradient.shape() == &shape[..],
    };
    if !fits {
        let expected = match &input.kind {
            Kind::Float => "float".to_owned(),
            Kind::Tensor(shape) => tensor::ShapeText(shape).to_string(),
        };
        return Err(AdErrorKind::RuleResult { expected, found: gradient.type_name() }.into());
    }
    accumulate(t, adjoints, input.node, gradient)
}

/// The walk of [`resume_pass`], with the NaN check when `CHECK`.
fn walk_records<const CHECK: bool>(
    t: &mut Tape,
    level: usize,
    records: &mut Records,
    (keep, words): (Keep, Words),
    adjoints: &mut Adjoints,
    walk: &mut Walk,
) -> Result<Option<RuleCall>, AdError> {
    let Walk { end, consumed } = walk;
    // The records in reverse, from `output`: each one's last word is its node, and the word
    // before its first is the previous record's node.
    // The chunk of words the last record read was in, for the fast path of chains.
    let (mut chunk, mut chunk_start): (&[u64], usize) = (&[], 0);
    while let Some(index) = end.checked_sub(1) {
        if index < chunk_start || index - chunk_start >= chunk.len() {
            (chunk, chunk_start) = records.ops.chunk_of(index).unwrap_or((&[], 0));
        }
        // A chain (a `Scalar1` whose input is the node just before) straight from the chunk;
        // anything else decoded by the store.
        let position = index.wrapping_sub(chunk_start);
        let partial = |q: usize| chunk.get(q).and_then(|&word| RecStore::chain_partial(word));
        let chain = partial(position).filter(|_| index > 0);
        // A run of chains with plain-number adjoints goes straight from the chunk of words to the
        // chunk of adjoints of the same nodes (chunks of both start at the same positions).
        if !CHECK
            && chain.is_some()
            && let Some(numbers) = adjoints.chunk_mut(index >> chunk::BITS)
        {
            let stop = chain_run(numbers, position, partial);
            if stop < position {
                *end = chunk_start + stop + 1;
                continue;
            }
        }
        let chain = chain.map(|dx| (Cow::Owned(Op::Scalar1 { x: index as u32 - 1, dx }), index));
        // The words and the other operations are borrowed apart, so that the words' chunks can
        // be given back while the record is in use.
        let general = &records.general;
        let Some((op, start)) = chain.or_else(|| records.ops.get(general, index)) else {
            return Err(AdError::internal("a tape word that is not a record"));
        };
        *end = start;
        if words == Words::GivenBack && start <= chunk_start && start > 0 {
            // This record was the last to read the current chunk, and it is decoded: the chunk
            // goes back before the record's rule needs a chunk for its input's adjoint.
            records.ops.give_back_after(start - 1, t);
            (chunk, chunk_start) = (&[], 0);
        }
        // With the check, the record's own gradient before its rule runs (the rule may move it).
        let checked = if CHECK { finite_adjoint(adjoints, index) } else { None };
        match *op {
            Op::Leaf { .. } => {}
            Op::Scalar1 { x, dx } => {
                let g = adjoints.number(index);
                if !g.is_nan() {
                    adjoints.add_number(t, x as usize, g * dx)?;
                } else if let Some(g) = gradient(adjoints, index, keep) {
                    accumulate_scaled(t, adjoints, x, g, dx)?;
                }
            }
            Op::Scalar2 { a, da, b, db } => {
                let g = adjoints.number(index);
                if !g.is_nan() {
                    adjoints.add_number(t, a as usize, g * da)?;
                    adjoints.add_number(t, b as usize, g * db)?;
                } else if let Some(g) = gradient(adjoints, index, keep) {
                    accumulate_scaled(t, adjoints, a, g.clone(), da)?;
                    accumulate_scaled(t, adjoints, b, g, db)?;
                }
            }
            Op::Custom { rule, ref inputs, ref arguments, ref output } => {
                let tracked: Vec<RuleInput> = (inputs.iter().zip(arguments.iter()).enumerate())
                    .filter_map(|(position, (arg, value))| {
                        let node = arg.index()?;
                        Some(RuleInput { position, node, kind: Kind::of(value) })
                    })
                    .collect();
                if !tracked.is_empty()
                    && let Some(g) = gradient(adjoints, index, keep)
                {
                    return Ok(Some(RuleCall {
                        rule,
                        arguments: arguments.to_vec(),
                        output: output.clone(),
                        gradient: g.into_value()?,
                        inputs: tracked,
                    }));
                }
            }
            ref op => {
                if keep == Keep::Everything
                    && let Some(target) = op.consumed_input()
                {
                    consumed.insert(target);
                }
                let keep = match consumed.remove(&index) {
                    true => Keep::Leaves,
                    false => keep,
                };
                if let Some(g) = gradient(adjoints, index, keep) {
                    pullback(t, op, g, adjoints)?;
                }
            }
        }
        if let Some(g) = checked {
            check_rule(t, level, records.base + index as u64, &op, g, adjoints)?;
        }
    }
    Ok(None)
}

/// A node's adjoint if it is there and finite, for [`check_rule`].
fn finite_adjoint(adjoints: &Adjoints, index: usize) -> Option<Adjoint> {
    let adjoint = adjoints.get(index)?;
    Summary::of_adjoint(&adjoint).is_some_and(|summary| summary.is_finite()).then_some(adjoint)
}

/// The NaN check of a record's rule: the rule of `op` (the record with `serial` on `level`) ran
/// with the finite gradient `g`; an input whose adjoint is no longer finite got its NaN or
/// infinity from this rule, because the adjoints are checked as they are made.
#[cold]
fn check_rule(
    t: &Tape,
    level: usize,
    serial: u64,
    op: &Op,
    g: Adjoint,
    adjoints: &Adjoints,
) -> Result<(), AdError> {
    for input in op.inputs() {
        let Some(adjoint) = adjoints.get(input as usize) else { continue };
        let Some(summary) = Summary::of_adjoint(&adjoint) else { continue };
        if summary.is_finite() {
            continue;
        }
        let summarise = |value: &Value| Summary::of(value).map(|s| s.to_string());
        let partial = |name: &str, d: f64| format!("{name} {}", tensor::format_float(d));
        let saved = match *op {
            Op::Scalar1 { dx, .. } => vec![partial("local derivative", dx)],
            Op::Scalar2 { da, db, .. } => {
                vec![partial("local derivatives", da), partial("and", db)]
            }
            _ => op.saved().into_iter().filter_map(summarise).collect(),
        };
        return Err(AdErrorKind::NonFiniteGradient {
            op: op.name(),
            site: t.site_of(level, serial),
            nan: summary.has_nan(),
            gradient: Summary::of_adjoint(&g).map(|s| s.to_string()).unwrap_or_default(),
            result: summary.to_string(),
            saved,
        }
        .into());
    }
    Ok(())
}

/// A node's adjoint for its rule, if any gradient reached it: moved out when only the leaves'
/// adjoints are kept (so the rule may overwrite it), cloned otherwise.
#[inline]
fn gradient(adjoints: &mut Adjoints, index: usize, keep: Keep) -> Option<Adjoint> {
    match keep {
        Keep::Everything => adjoints.get(index),
        Keep::Leaves => adjoints.take(index),
    }
}

/// Adds `gradient * derivative` to node `index`'s adjoint.
fn accumulate_scaled(
    t: &mut Tape,
    adjoints: &mut Adjoints,
    index: u32,
    gradient: Adjoint,
    derivative: f64,
) -> Result<(), AdError> {
    match gradient {
        Adjoint::Value(Value::Float(g)) => adjoints.add_number(t, index as usize, g * derivative),
        Adjoint::Value(gradient) => {
            let contribution = ops::mul(t, gradient, Value::Float(derivative))?;
            accumulate(t, adjoints, index as usize, contribution)
        }
        Adjoint::Uniform(gradient) => {
            accumulate(t, adjoints, index as usize, gradient.scaled(derivative))
        }
    }
}

/// Adds `contribution` to node `index`'s adjoint.
fn accumulate(
    t: &mut Tape,
    adjoints: &mut Adjoints,
    index: usize,
    contribution: impl Into<Adjoint>,
) -> Result<(), AdError> {
    adjoints.add(t, index, contribution.into())
}

/// Adds the contribution computed by `rule` to `arg`'s adjoint when `arg` is tracked, and skips
/// the computation for a constant operand.
fn accumulate_arg<A: Into<Adjoint>>(
    t: &mut Tape,
    adjoints: &mut Adjoints,
    arg: Arg,
    rule: impl FnOnce(&mut Tape) -> Result<A, AdError>,
) -> Result<(), AdError> {
    match arg.index() {
        Some(index) => {
            let contribution = rule(t)?;
            accumulate(t, adjoints, index, contribution)
        }
        None => Ok(()),
    }
}

/// The gradient `g` reshaped (or converted) to an operand's kind.
fn reshape_to_kind(t: &mut Tape, g: Value, kind: &Kind) -> Result<Value, AdError> {
    match kind {
        Kind::Float => ops::to_float(t, g),
        Kind::Tensor(shape) => ops::reshape(t, g, shape),
    }
}

/// A gradient of a broadcast result summed back to an operand's kind.
fn unbroadcast(t: &mut Tape, g: Value, kind: &Kind) -> Result<Value, AdError> {
    match kind {
        Kind::Float if g.is_tensor() => ops::reduce(t, ReduceOp::Sum, g, None),
        Kind::Float => Ok(g),
        Kind::Tensor(shape) if !g.is_tensor() => ops::broadcast_to(t, g, shape),
        Kind::Tensor(shape) if g.shape() == &shape[..] => Ok(g),
        Kind::Tensor(shape) => ops::sum_to_shape(t, g, shape),
    }
}

/// The input gradient of a sum or mean (over every element, or along `axis`) of an input of
/// `shape`, when every element of the output's gradient is the constant `value`: that value, or
/// its share of the mean, at every element; `None` for the other reductions.
fn spread(op: ReduceOp, value: f64, shape: &[usize], axis: Option<usize>) -> Option<Uniform> {
    let count = match axis {
        None => shape.iter().product(),
        Some(axis) => shape.get(axis).copied().unwrap_or(1),
    };
    match op {
        ReduceOp::Sum => Some(Uniform::new(value, shape)),
        // Element counts convert to `f64` exactly.
        ReduceOp::Mean => Some(Uniform::new(value / count as f64, shape)),
        _ => None,
    }
}

/// A uniform gradient converted to an operand's kind (a reshape of it).
fn uniform_of_kind(value: f64, kind: &Kind) -> Adjoint {
    match kind {
        Kind::Float => Adjoint::Value(Value::Float(value)),
        Kind::Tensor(shape) => Adjoint::Uniform(Uniform::new(value, shape)),
    }
}

/// [`unbroadcast`] for a uniform gradient: each element of the operand received the gradient of
/// as many output elements as broadcasting made of it, so the sum is uniform again.
fn unbroadcast_uniform(g: &Uniform, kind: &Kind) -> Result<Adjoint, AdError> {
    let shape = kind.shape();
    let mismatch = || {
        let (from, to) = (shape.to_vec(), g.shape.to_vec());
        AdError::from(tensor::TensorError::BroadcastTo { from, to })
    };
    let leading = g.shape.len().checked_sub(shape.len()).ok_or_else(mismatch)?;
    let mut copies: f64 = g.shape[..leading].iter().map(|&extent| extent as f64).product();
    for (&target, &actual) in shape.iter().zip(&g.shape[leading..]) {
        match (target, actual) {
            (a, b) if a == b => {}
            (1, b) => copies *= b as f64,
            _ => return Err(mismatch()),
        }
    }
    Ok(uniform_of_kind(g.value * copies, kind))
}

/// Whether a kind is a tensor of `shape`.
fn is_tensor_of(kind: &Kind, shape: &[usize]) -> bool {
    matches!(kind, Kind::Tensor(own) if **own == *shape)
}

/// An index list that selects `start..end` (`end` defaulting to the extent) along `axis` of a
/// tensor of `shape` and everything along the axes before it.
fn slice_along(shape: &[usize], axis: usize, start: usize, end: Option<usize>) -> Vec<Index> {
    let mut index: Vec<Index> = shape.iter().take(axis).map(|&n| Index::full(n)).collect();
    let extent = shape.get(axis).copied().unwrap_or(0);
    index.push(Index::range(start, end.unwrap_or(extent)));
    index
}

/// A plain tensor with a buffer of its own (a region read from a gradient would otherwise share
/// the gradient's); a tracked value (a higher-order pass) is left as it is.
fn owned(value: Value) -> Value {
    match value.as_tensor() {
        Some(tensor) if !value.is_tracked() => {
            Value::tensor(Tensor::from(tensor.view().as_standard_layout().into_owned()))
        }
        _ => value,
    }
}

/// The shape of a reduction's output with the reduced axis kept at extent 1.
fn kept_shape(shape: &[usize], axis: usize) -> Vec<usize> {
    let mut kept = shape.to_vec();
    if let Some(extent) = kept.get_mut(axis) {
        *extent = 1;
    }
    kept
}

/// One rule per recorded operation: adds the operation's input adjoints given its output's.
fn pullback(t: &mut Tape, op: &Op, g: Adjoint, adjoints: &mut Adjoints) -> Result<(), AdError> {
    match g {
        Adjoint::Value(g) => pullback_value(t, op, g, adjoints),
        Adjoint::Uniform(g) => pullback_uniform(t, op, g, adjoints),
    }
}

/// The rules for an output adjoint that is a value.
fn pullback_value(t: &mut Tape, op: &Op, g: Value, adjoints: &mut Adjoints) -> Result<(), AdError> {
    match op {
        // The backward pass applies the scalar records itself, with plain numbers where it can.
        Op::Leaf { .. } => Ok(()),
        Op::Scalar1 { x, dx } => accumulate_scaled(t, adjoints, *x, g.into(), *dx),
        Op::Scalar2 { a, da, b, db } => {
            accumulate_scaled(t, adjoints, *a, g.clone().into(), *da)?;
            accumulate_scaled(t, adjoints, *b, g.into(), *db)
        }
        Op::Unary { op, x, input, output } => {
            let contribution = unary_rule(t, *op, g, input.clone(), output.clone())?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Binary { op, lhs, rhs, lhs_kind, rhs_kind, values } => {
            let kinds = [lhs_kind, rhs_kind];
            binary_rule(t, *op, [*lhs, *rhs], values.as_deref(), kinds, g, adjoints)
        }
        Op::Select { a, b, mask, a_kind, b_kind } => {
            accumulate_arg(t, adjoints, *a, |t| {
                let routed = ops::select(t, mask, g.clone(), Value::Float(0.0))?;
                unbroadcast(t, routed, a_kind)
            })?;
            accumulate_arg(t, adjoints, *b, |t| {
                let routed = ops::select(t, mask, Value::Float(0.0), g.clone())?;
                unbroadcast(t, routed, b_kind)
            })
        }
        Op::Matmul { lhs, rhs, lhs_value, rhs_value } => {
            let (a, b) = (lhs_value.clone(), rhs_value.clone());
            matmul_rule(t, [*lhs, *rhs], a, b, g, adjoints)
        }
        Op::Reduce { op, x, axis, input, output } => {
            let axis = axis.map(|axis| axis as usize);
            // A plain number is a constant: a sum or mean over every element spreads it evenly,
            // and what it spreads is kept uniform.
            if let (Value::Float(value), None) = (&g, axis)
                && let Some(spread) = spread(*op, *value, input.shape(), None)
            {
                return accumulate(t, adjoints, *x as usize, spread);
            }
            let contribution = reduce_rule(t, *op, input.clone(), output.clone(), axis, g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::ProdOthers { x, axis, input } => {
            let axis = axis.map(|axis| axis as usize);
            let contribution = ops::prod_pairs(t, input, g, axis)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::ProdPairs { v, axis, input } => {
            // The map from `v` is symmetric, so its transpose applies the same map to `g`.
            let axis = axis.map(|axis| axis as usize);
            let contribution = ops::prod_pairs(t, input, g, axis)?;
            accumulate(t, adjoints, *v as usize, contribution)
        }
        Op::Softmax { x, axis, output } => {
            let y = output.clone();
            let kept = kept_shape(y.shape(), *axis as usize);
            let weighted = ops::mul(t, g.clone(), y.clone())?;
            let total = ops::reduce(t, ReduceOp::Sum, weighted, Some(i64::from(*axis)))?;
            let total = ops::reshape(t, total, &kept)?;
            let centred = ops::sub(t, g, total)?;
            let contribution = ops::mul(t, y, centred)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::LogSoftmax { x, axis, output } => {
            let y = output.clone();
            let kept = kept_shape(y.shape(), *axis as usize);
            let total = ops::reduce(t, ReduceOp::Sum, g.clone(), Some(i64::from(*axis)))?;
            let total = ops::reshape(t, total, &kept)?;
            let probabilities = ops::unary(t, UnaryOp::Exp, y)?;
            let spread = ops::mul(t, probabilities, total)?;
            let contribution = ops::sub(t, g, spread)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Reshape { x, kind } | Op::ToFloat { x, kind } => {
            let contribution = reshape_to_kind(t, g, kind)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Transpose { x } => {
            let contribution = ops::transpose(t, g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Permute { x, axes } => {
            let mut inverse = vec![0i64; axes.len()];
            for (position, &axis) in axes.iter().enumerate() {
                if let Some(slot) = inverse.get_mut(axis) {
                    *slot = position as i64;
                }
            }
            let contribution = ops::permute(t, g, &inverse)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Concat { lhs, rhs, axis, split } => {
            let (axis, split) = (*axis as usize, *split as usize);
            accumulate_arg(t, adjoints, *lhs, |t| {
                ops::get(t, g.clone(), &slice_along(g.shape(), axis, 0, Some(split)))
            })?;
            accumulate_arg(t, adjoints, *rhs, |t| {
                ops::get(t, g.clone(), &slice_along(g.shape(), axis, split, None))
            })
        }
        Op::Stack { items, kinds } => {
            for (position, (&item, kind)) in items.iter().zip(kinds.iter()).enumerate() {
                accumulate_arg(t, adjoints, item, |t| {
                    let part = ops::get(t, g.clone(), &[Index::At(position)])?;
                    reshape_to_kind(t, part, kind)
                })?;
            }
            Ok(())
        }
        Op::Diag { x, kind } => {
            let contribution = match kind.shape() {
                &[m, n] => {
                    let square = ops::diag(t, g)?;
                    match m.cmp(&n) {
                        std::cmp::Ordering::Equal => square,
                        std::cmp::Ordering::Greater => {
                            let padding = Value::tensor(Tensor::zeros(&[m - n, n])?);
                            ops::concat(t, square, padding, 0)?
                        }
                        std::cmp::Ordering::Less => {
                            let padding = Value::tensor(Tensor::zeros(&[m, n - m])?);
                            ops::concat(t, square, padding, 1)?
                        }
                    }
                }
                _ => ops::diag(t, g)?,
            };
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Trace { x, kind } => {
            let contribution = match kind.shape() {
                &[m, n] => ops::mul(t, g, Value::tensor(plain::eye_rect(m, n)?))?,
                _ => return Err(AdError::internal("trace of a non-matrix")),
            };
            accumulate(t, adjoints, *x as usize, contribution)
        }
        // The gradient of a read is a scatter into the positions read, added in place to the
        // adjoint of `x` when the store alone holds it.
        Op::Get { x, index, kind } => adjoints.add_region(t, *x as usize, kind.shape(), index, g),
        // The written value gets the region of the gradient, copied out so that `g` stays the
        // only holder of its buffer and is zeroed in place for the target: a write costs what it
        // writes, not a copy of the whole tensor.
        Op::Set { target, value, index, kind, .. } => {
            accumulate_arg(t, adjoints, *value, |t| {
                let region = owned(ops::get(t, g.clone(), index)?);
                unbroadcast(t, region, kind)
            })?;
            accumulate_arg(t, adjoints, *target, |t| ops::set(t, g, index, Value::Float(0.0)))
        }
        Op::AddAt { target, value, index, kind, .. } => {
            accumulate_arg(t, adjoints, *value, |t| {
                let region = owned(ops::get(t, g.clone(), index)?);
                unbroadcast(t, region, kind)
            })?;
            accumulate_arg(t, adjoints, *target, |_| Ok(g))
        }
        // A running sum is linear; its transpose runs the other way along the lane.
        Op::Cumsum { x, axis, reverse } => {
            let contribution = ops::cumsum(t, g, *axis as usize, !reverse)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        // A gather and a scatter-add through the same map are each other's transpose.
        Op::Gather { x, map } => {
            let contribution = ops::scatter_add(t, g, map)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::ScatterAdd { x, map } => {
            // The transpose of the scatter is the gather's linear part: a map that fills (the
            // padding of `pad` or of a max pool) gives zeros there, not its fill.
            let linear = match map.fill() == 0.0 {
                true => map.clone(),
                false => Rc::new(map.linear()),
            };
            let contribution = ops::gather(t, g, &linear)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::BroadcastTo { x, kind } => {
            let contribution = unbroadcast(t, g, kind)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::SumToShape { x, kind } => {
            let contribution = ops::broadcast_to(t, g, kind.shape())?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::ToTensor { x } => {
            let contribution = ops::to_float(t, g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Inv { x, output } => {
            // d(A^-1) = -A^-1 dA A^-1, so the gradient is -Y^T G Y^T with Y = A^-1, for every
            // matrix of a stack.
            let y_t = ops::swap_last_two(t, output.clone())?;
            let left = ops::matmul(t, y_t.clone(), g)?;
            let product = ops::matmul(t, left, y_t)?;
            let contribution = ops::neg(t, product)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Det { x, input, output } => {
            let contribution = det_rule(t, input.clone(), output.clone(), g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Solve { a, b, matrix, rhs_shape, solution } => {
            let values = [matrix.clone(), solution.clone()];
            solve_rule(t, [*a, *b], values, rhs_shape, g, adjoints)
        }
        Op::Cholesky { x, factor } => {
            let contribution = cholesky_rule(t, factor.clone(), g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Conv { face, conv, a, b, a_value, b_value } => {
            // Each map is bilinear, and the cotangent of either operand is another of the three
            // maps, of the output's cotangent and the other operand.
            use tensor::Face::{FilterGradient, Forward, InputGradient};
            let (for_a, for_b) = match face {
                Forward => ((InputGradient, &g, b_value), (FilterGradient, a_value, &g)),
                InputGradient => ((Forward, &g, b_value), (FilterGradient, &g, a_value)),
                FilterGradient => ((InputGradient, b_value, &g), (Forward, a_value, &g)),
            };
            for (arg, (face, first, second)) in [(*a, for_a), (*b, for_b)] {
                accumulate_arg(t, adjoints, arg, |t| {
                    ops::convolution(t, conv, face, first.clone(), second.clone())
                })?;
            }
            Ok(())
        }
        Op::Einsum { contraction, args, operands } => {
            einsum_rule(t, contraction, args, operands, Adjoint::Value(g), adjoints)
        }
        Op::Qr { x, q, r } => {
            let contribution = decompositions::qr_rule(t, q.clone(), r.clone(), g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Svd { x, u, s, vh } => {
            let factors = [u.clone(), s.clone(), vh.clone()];
            let contribution = decompositions::svd_rule(t, factors, g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Eigh { x, values, vectors } => {
            let contribution = decompositions::eigh_rule(t, values.clone(), vectors.clone(), g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::LogAbsDet { x, input } => {
            let contribution = decompositions::log_abs_det_rule(t, input.clone(), g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Pinv { x, input, output } => {
            let contribution = decompositions::pinv_rule(t, input.clone(), output.clone(), g)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::Custom { .. } => Err(AdError::internal("a derivative rule outside its driver")),
    }
}

/// The rules for a [`Uniform`] output adjoint, where they are cheaper than with the tensor (see
/// the module documentation); every other operation gets the tensor.
fn pullback_uniform(
    t: &mut Tape,
    op: &Op,
    g: Uniform,
    adjoints: &mut Adjoints,
) -> Result<(), AdError> {
    let value = g.value;
    match op {
        Op::Einsum { contraction, args, operands } => {
            einsum_rule(t, contraction, args, operands, Adjoint::Uniform(g), adjoints)
        }
        Op::Reduce { op: reduction, x, axis: Some(axis), input, .. } => {
            match spread(*reduction, value, input.shape(), Some(*axis as usize)) {
                Some(spread) => accumulate(t, adjoints, *x as usize, spread),
                None => pullback_value(t, op, g.materialise()?, adjoints),
            }
        }
        Op::Reshape { x, kind } | Op::ToFloat { x, kind } => {
            accumulate(t, adjoints, *x as usize, uniform_of_kind(value, kind))
        }
        Op::ToTensor { x } => accumulate(t, adjoints, *x as usize, Value::Float(value)),
        Op::Transpose { x } => {
            let reversed: Vec<usize> = g.shape.iter().rev().copied().collect();
            accumulate(t, adjoints, *x as usize, Uniform::new(value, &reversed))
        }
        Op::Permute { x, axes } => {
            // Axis `i` of the output is axis `axes[i]` of the input.
            let mut shape = vec![0; axes.len()];
            for (&axis, &extent) in axes.iter().zip(&g.shape) {
                if let Some(slot) = shape.get_mut(axis) {
                    *slot = extent;
                }
            }
            accumulate(t, adjoints, *x as usize, Uniform::new(value, &shape))
        }
        Op::BroadcastTo { x, kind } => {
            let contribution = unbroadcast_uniform(&g, kind)?;
            accumulate(t, adjoints, *x as usize, contribution)
        }
        Op::SumToShape { x, kind } => {
            accumulate(t, adjoints, *x as usize, Uniform::new(value, kind.shape()))
        }
        Op::Unary { op: UnaryOp::Neg, x, .. } => {
            accumulate(t, adjoints, *x as usize, g.scaled(-1.0))
        }
        Op::Unary { op: unary, x, input, output } => {
            match input.is_tensor() && input.shape() == &g.shape[..] {
                // Every other rule multiplies or divides the gradient by a function of the saved
                // input or output, which has the output's shape: a number scales it instead of
                // a tensor of ones.
                true => {
                    let (input, output) = (input.clone(), output.clone());
                    let contribution = unary_rule(t, *unary, Value::Float(value), input, output)?;
                    accumulate(t, adjoints, *x as usize, contribution)
                }
                false => pullback_value(t, op, g.materialise()?, adjoints),
            }
        }
        Op::Binary { op: binary, lhs, rhs, lhs_kind, rhs_kind, values } => {
            let kinds = [lhs_kind, rhs_kind];
            match binary {
                BinaryOp::Add | BinaryOp::Sub => {
                    let sign = match binary {
                        BinaryOp::Add => 1.0,
                        _ => -1.0,
                    };
                    accumulate_arg(t, adjoints, *lhs, |_| unbroadcast_uniform(&g, lhs_kind))?;
                    accumulate_arg(t, adjoints, *rhs, |_| {
                        unbroadcast_uniform(&g.clone().scaled(sign), rhs_kind)
                    })
                }
                // With both operands of the output's shape, every term of the rule has it too:
                // a number scales them instead of a tensor of ones, and nothing is summed back.
                _ if kinds.iter().all(|kind| is_tensor_of(kind, &g.shape)) => {
                    let g = Value::Float(value);
                    let values = values.as_deref();
                    binary_rule(t, *binary, [*lhs, *rhs], values, kinds, g, adjoints)
                }
                _ => pullback_value(t, op, g.materialise()?, adjoints),
            }
        }
        _ => pullback_value(t, op, g.materialise()?, adjoints),
    }
}

/// The gradient of a contraction's operands (whose nodes are `args`) from the output's gradient
/// `g`.
fn einsum_rule(
    t: &mut Tape,
    contraction: &Contraction,
    args: &[Arg],
    operands: &[Value],
    g: Adjoint,
    adjoints: &mut Adjoints,
) -> Result<(), AdError> {
    if args.iter().all(|arg| arg.index().is_none()) {
        return Ok(());
    }
    let count = args.len();
    // A constant uniform gradient drops out of the gradient contractions (see
    // `einsum::backward`); a tracked one stays, so that an outer level can differentiate the
    // result with respect to it. A plain tensor is read to find out whether it is uniform.
    let g = match g {
        Adjoint::Value(Value::Float(value)) => Adjoint::Uniform(Uniform::new(value, &[])),
        Adjoint::Value(Value::Tensor(tensor)) => {
            match tensor::einsum::uniform_value(&tensor.view()) {
                Some(value) => Adjoint::Uniform(Uniform::new(value, tensor.shape())),
                None => Adjoint::Value(Value::Tensor(tensor)),
            }
        }
        g => g,
    };
    for (position, &arg) in args.iter().enumerate() {
        accumulate_arg(t, adjoints, arg, |t| {
            let mut inputs = Vec::with_capacity(count);
            let gradient = Rc::new(match &g {
                Adjoint::Uniform(uniform) => {
                    contraction.uniform_gradient(position, uniform.value, &uniform.shape)?
                }
                Adjoint::Value(g) => {
                    inputs.push(g.clone());
                    contraction.gradient(position)?
                }
            });
            for other in (0..count).filter(|&other| other != position) {
                inputs.push(saved(operands, other)?.clone());
            }
            let shape = saved(operands, position)?.shape().to_vec();
            ops::contract(t, &gradient, inputs, Some(&shape))
        })?;
    }
    Ok(())
}

/// Operand `position` of a contraction's saved operands.
fn saved(operands: &[Value], position: usize) -> Result<&Value, AdError> {
    operands.get(position).ok_or_else(|| AdError::internal("a contraction without its operand"))
}

/// The input gradient of an element-wise function, from the saved input `x` and output `y`.
fn unary_rule(t: &mut Tape, op: UnaryOp, g: Value, x: Value, y: Value) -> Result<Value, AdError> {
    let one = || Value::Float(1.0);
    Ok(match op {
        UnaryOp::Neg => ops::neg(t, g)?,
        UnaryOp::Sin => {
            let derivative = ops::unary(t, UnaryOp::Cos, x)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Cos => {
            let sine = ops::unary(t, UnaryOp::Sin, x)?;
            let product = ops::mul(t, g, sine)?;
            ops::neg(t, product)?
        }
        UnaryOp::Tan => {
            let square = ops::mul(t, y.clone(), y)?;
            let derivative = ops::add(t, one(), square)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Asin | UnaryOp::Acos => {
            let square = ops::mul(t, x.clone(), x)?;
            let complement = ops::sub(t, one(), square)?;
            let root = ops::unary(t, UnaryOp::Sqrt, complement)?;
            let quotient = ops::div(t, g, root)?;
            match op {
                UnaryOp::Asin => quotient,
                _ => ops::neg(t, quotient)?,
            }
        }
        UnaryOp::Atan => {
            let square = ops::mul(t, x.clone(), x)?;
            let denominator = ops::add(t, one(), square)?;
            ops::div(t, g, denominator)?
        }
        UnaryOp::Sinh => {
            let derivative = ops::unary(t, UnaryOp::Cosh, x)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Cosh => {
            let derivative = ops::unary(t, UnaryOp::Sinh, x)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Tanh => {
            let square = ops::mul(t, y.clone(), y)?;
            let derivative = ops::sub(t, one(), square)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Exp => ops::mul(t, g, y)?,
        UnaryOp::Ln => ops::div(t, g, x)?,
        UnaryOp::Log2 | UnaryOp::Log10 => {
            let scale = match op {
                UnaryOp::Log2 => std::f64::consts::LN_2,
                _ => std::f64::consts::LN_10,
            };
            let denominator = ops::mul(t, x, Value::Float(scale))?;
            ops::div(t, g, denominator)?
        }
        UnaryOp::Sqrt => {
            let half = ops::mul(t, g, Value::Float(0.5))?;
            ops::div(t, half, y)?
        }
        UnaryOp::Abs => {
            let sign = plain::map_primal(&x, scalar::sign)?;
            ops::mul(t, g, sign)?
        }
        UnaryOp::Sigmoid => {
            let complement = ops::sub(t, one(), y.clone())?;
            let derivative = ops::mul(t, y, complement)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Relu => {
            let step = plain::map_primal(&x, scalar::step)?;
            ops::mul(t, g, step)?
        }
        UnaryOp::Softplus => {
            let derivative = ops::unary(t, UnaryOp::Sigmoid, x)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc | UnaryOp::Sign => {
            // Piecewise constant: a constant zero of the input's kind, whatever the gradient.
            match x.is_tensor() {
                true => Value::tensor(Tensor::zeros(x.shape())?),
                false => Value::Float(0.0),
            }
        }
        UnaryOp::Erf | UnaryOp::Erfc => {
            // d erf(x) = 2/√π e^(-x^2) dx.
            let square = ops::mul(t, x.clone(), x)?;
            let negated = ops::neg(t, square)?;
            let density = ops::unary(t, UnaryOp::Exp, negated)?;
            let scale = match op {
                UnaryOp::Erf => scalar::ERF_SCALE,
                _ => -scalar::ERF_SCALE,
            };
            let derivative = ops::mul(t, density, Value::Float(scale))?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Gelu => {
            // Φ(x) + x φ(x), with Φ(x) = erfc(-x/√2)/2 and φ(x) = e^(-x^2/2)/√(2π).
            let scaled = ops::mul(t, x.clone(), Value::Float(-std::f64::consts::FRAC_1_SQRT_2))?;
            let complement = ops::unary(t, UnaryOp::Erfc, scaled)?;
            let cdf = ops::mul(t, complement, Value::Float(0.5))?;
            let square = ops::mul(t, x.clone(), x.clone())?;
            let exponent = ops::mul(t, square, Value::Float(-0.5))?;
            let bell = ops::unary(t, UnaryOp::Exp, exponent)?;
            let density = ops::mul(t, bell, Value::Float(scalar::NORMAL_DENSITY_SCALE))?;
            let weighted = ops::mul(t, x, density)?;
            let derivative = ops::add(t, cdf, weighted)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::GeluTanh => {
            // With u = c (x + k x^3) and h = tanh(u):
            // (1 + h) / 2 + x (1 - h^2) c (1 + 3 k x^2) / 2.
            let (c, k) = (tensor::GELU_TANH_SCALE, tensor::GELU_TANH_CUBIC);
            let square = ops::mul(t, x.clone(), x.clone())?;
            let cube = ops::mul(t, square.clone(), x.clone())?;
            let cubic = ops::mul(t, cube, Value::Float(k))?;
            let inner = ops::add(t, x.clone(), cubic)?;
            let u = ops::mul(t, inner, Value::Float(c))?;
            let h = ops::unary(t, UnaryOp::Tanh, u)?;
            let h_square = ops::mul(t, h.clone(), h.clone())?;
            let sech_square = ops::sub(t, one(), h_square)?;
            let slope_terms = ops::mul(t, square, Value::Float(3.0 * k))?;
            let slope = ops::add(t, one(), slope_terms)?;
            let slope = ops::mul(t, slope, Value::Float(0.5 * c))?;
            let chain = ops::mul(t, sech_square, slope)?;
            let chain = ops::mul(t, x, chain)?;
            let shifted = ops::add(t, one(), h)?;
            let half = ops::mul(t, shifted, Value::Float(0.5))?;
            let derivative = ops::add(t, half, chain)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Silu => {
            // s (1 + x (1 - s)) with s = sigmoid(x).
            let s = ops::unary(t, UnaryOp::Sigmoid, x.clone())?;
            let complement = ops::sub(t, one(), s.clone())?;
            let product = ops::mul(t, x, complement)?;
            let factor = ops::add(t, one(), product)?;
            let derivative = ops::mul(t, s, factor)?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Softsign => {
            // 1 / (1 + |x|)^2.
            let magnitude = ops::unary(t, UnaryOp::Abs, x)?;
            let denominator = ops::add(t, one(), magnitude)?;
            let square = ops::mul(t, denominator.clone(), denominator)?;
            ops::div(t, g, square)?
        }
        UnaryOp::Log1p => {
            let denominator = ops::add(t, one(), x)?;
            ops::div(t, g, denominator)?
        }
        UnaryOp::Expm1 => {
            let derivative = ops::add(t, y, one())?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Exp2 => {
            let derivative = ops::mul(t, y, Value::Float(std::f64::consts::LN_2))?;
            ops::mul(t, g, derivative)?
        }
        UnaryOp::Cbrt => {
            // 1 / (3 y^2).
            let square = ops::mul(t, y.clone(), y)?;
            let denominator = ops::mul(t, square, Value::Float(3.0))?;
            ops::div(t, g, denominator)?
        }
    })
}

/// The operand gradients of broadcasting arithmetic.
fn binary_rule(
    t: &mut Tape,
    op: BinaryOp,
    [lhs, rhs]: [Arg; 2],
    values: Option<&BinaryValues>,
    [lhs_kind, rhs_kind]: [&Kind; 2],
    g: Value,
    adjoints: &mut Adjoints,
) -> Result<(), AdError> {
    let missing = || AdError::internal("a binary record without its values");
    let lhs_value = || values.map(|values| values.lhs.clone()).ok_or_else(missing);
    let rhs_value = || values.map(|values| values.rhs.clone()).ok_or_else(missing);
    let out_value = || values.map(|values| values.out.clone()).ok_or_else(missing);
    match op {
        BinaryOp::Add | BinaryOp::Sub => {
            accumulate_arg(t, adjoints, lhs, |t| unbroadcast(t, g.clone(), lhs_kind))?;
            accumulate_arg(t, adjoints, rhs, |t| {
                let routed = match op {
                    BinaryOp::Add => g.clone(),
                    _ => ops::neg(t, g.clone())?,
                };
                unbroadcast(t, routed, rhs_kind)
            })
        }
        BinaryOp::Mul => {
            accumulate_arg(t, adjoints, lhs, |t| {
                let product = ops::mul(t, g.clone(), rhs_value()?)?;
                unbroadcast(t, product, lhs_kind)
            })?;
            accumulate_arg(t, adjoints, rhs, |t| {
                let product = ops::mul(t, g.clone(), lhs_value()?)?;
                unbroadcast(t, product, rhs_kind)
            })
        }
        BinaryOp::Div => {
            accumulate_arg(t, adjoints, lhs, |t| {
                let quotient = ops::div(t, g.clone(), rhs_value()?)?;
                unbroadcast(t, quotient, lhs_kind)
            })?;
            accumulate_arg(t, adjoints, rhs, |t| {
                // d(a/b)/db = -(a/b)/b.
                let scaled = ops::mul(t, g.clone(), out_value()?)?;
                let quotient = ops::div(t, scaled, rhs_value()?)?;
                let negated = ops::neg(t, quotient)?;
                unbroadcast(t, negated, rhs_kind)
            })
        }
        BinaryOp::Rem => {
            accumulate_arg(t, adjoints, lhs, |t| unbroadcast(t, g.clone(), lhs_kind))?;
            accumulate_arg(t, adjoints, rhs, |t| {
                // fmod(a, b) = a - trunc(a/b) b, with trunc(a/b) locally constant.
                let quotients =
                    plain::zip_primals(&lhs_value()?, &rhs_value()?, |a, b| (a / b).trunc())?;
                let product = ops::mul(t, g.clone(), quotients)?;
                let negated = ops::neg(t, product)?;
                unbroadcast(t, negated, rhs_kind)
            })
        }
        BinaryOp::Pow => {
            // Each special case selects its own value where the formula breaks down, and the
            // formula sees a harmless base there, so that no infinity or NaN of the branch not
            // taken reaches a derivative of higher order. Elsewhere the formula is used as it is,
            // so that it depends on both operands at every order (the Hessian stays symmetric).
            accumulate_arg(t, adjoints, lhs, |t| {
                // y x^(y-1), with 0 where x == 0 and y == 0 (0 * inf; the power is constant 1).
                let (base, exponent) = (lhs_value()?, rhs_value()?);
                let special = plain::zip_primals(&base, &exponent, |x, y| {
                    f64::from(u8::from(x == 0.0 && y == 0.0))
                })?;
                let safe_base = ops::select(t, &special, Value::Float(1.0), base)?;
                let lowered = ops::sub(t, exponent.clone(), Value::Float(1.0))?;
                let power = ops::pow(t, safe_base, lowered)?;
                let derivative = ops::mul(t, exponent, power)?;
                let product = ops::mul(t, g.clone(), derivative)?;
                let masked = ops::select(t, &special, Value::Float(0.0), product)?;
                unbroadcast(t, masked, lhs_kind)
            })?;
            accumulate_arg(t, adjoints, rhs, |t| {
                // x^y ln x, with 0 where x == 0 (the limit for positive y).
                let (base, exponent) = (lhs_value()?, rhs_value()?);
                let at_zero = plain::map_primal(&base, |x| f64::from(u8::from(x == 0.0)))?;
                let safe_base = ops::select(t, &at_zero, Value::Float(1.0), base)?;
                let power = ops::pow(t, safe_base.clone(), exponent)?;
                let logarithm = ops::unary(t, UnaryOp::Ln, safe_base)?;
                let derivative = ops::mul(t, power, logarithm)?;
                let product = ops::mul(t, g.clone(), derivative)?;
                let masked = ops::select(t, &at_zero, Value::Float(0.0), product)?;
                unbroadcast(t, masked, rhs_kind)
            })
        }
        BinaryOp::Mod => {
            accumulate_arg(t, adjoints, lhs, |t| unbroadcast(t, g.clone(), lhs_kind))?;
            accumulate_arg(t, adjoints, rhs, |t| {
                // mod(a, b) = a - floor(a/b) b, with floor(a/b) locally constant.
                let quotients =
                    plain::zip_primals(&lhs_value()?, &rhs_value()?, |a, b| (a / b).floor())?;
                let product = ops::mul(t, g.clone(), quotients)?;
                let negated = ops::neg(t, product)?;
                unbroadcast(t, negated, rhs_kind)
            })
        }
        BinaryOp::Atan2 | BinaryOp::Hypot => {
            // atan2(a, b): (b, -a) / (a^2 + b^2); hypot(a, b): (a, b) / hypot(a, b); both 0 where
            // the denominator is, with a harmless denominator there for higher orders.
            let (a, b) = (lhs_value()?, rhs_value()?);
            let denominator = match op {
                BinaryOp::Atan2 => {
                    let a_square = ops::mul(t, a.clone(), a.clone())?;
                    let b_square = ops::mul(t, b.clone(), b.clone())?;
                    ops::add(t, a_square, b_square)?
                }
                _ => out_value()?,
            };
            let at_zero = plain::map_primal(&denominator, |d| f64::from(u8::from(d == 0.0)))?;
            let safe = ops::select(t, &at_zero, Value::Float(1.0), denominator)?;
            let scaled = ops::div(t, g.clone(), safe)?;
            let (lhs_factor, rhs_factor) = match op {
                BinaryOp::Atan2 => (b, ops::neg(t, a)?),
                _ => (a, b),
            };
            accumulate_arg(t, adjoints, lhs, |t| {
                let product = ops::mul(t, scaled.clone(), lhs_factor)?;
                let masked = ops::select(t, &at_zero, Value::Float(0.0), product)?;
                unbroadcast(t, masked, lhs_kind)
            })?;
            accumulate_arg(t, adjoints, rhs, |t| {
                let product = ops::mul(t, scaled.clone(), rhs_factor)?;
                let masked = ops::select(t, &at_zero, Value::Float(0.0), product)?;
                unbroadcast(t, masked, rhs_kind)
            })
        }
        BinaryOp::Max | BinaryOp::Min => {
            let shares = match op {
                BinaryOp::Max => scalar::max_shares,
                _ => scalar::min_shares,
            };
            accumulate_arg(t, adjoints, lhs, |t| {
                let share =
                    plain::zip_primals(&lhs_value()?, &rhs_value()?, |a, b| shares(a, b).0)?;
                let routed = ops::mul(t, g.clone(), share)?;
                unbroadcast(t, routed, lhs_kind)
            })?;
            accumulate_arg(t, adjoints, rhs, |t| {
                let share =
                    plain::zip_primals(&lhs_value()?, &rhs_value()?, |a, b| shares(a, b).1)?;
                let routed = ops::mul(t, g.clone(), share)?;
                unbroadcast(t, routed, rhs_kind)
            })
        }
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne => {
            Ok(())
        }
    }
}

/// The gradients of `a @ b` in every rank case: a vector operand is a one-row (left) or
/// one-column (right) matrix, batch axes broadcast, and each gradient is summed back to its
/// operand's shape.
fn matmul_rule(
    t: &mut Tape,
    [lhs, rhs]: [Arg; 2],
    a: Value,
    b: Value,
    g: Value,
    adjoints: &mut Adjoints,
) -> Result<(), AdError> {
    let (a_shape, b_shape) = (a.shape().to_vec(), b.shape().to_vec());
    let a2 = match a_shape.as_slice() {
        &[k] => ops::reshape(t, a, &[1, k])?,
        _ => a,
    };
    let b2 = match b_shape.as_slice() {
        &[k] => ops::reshape(t, b, &[k, 1])?,
        _ => b,
    };
    let (a2_shape, b2_shape) = (a2.shape().to_vec(), b2.shape().to_vec());
    let g2 = ops::reshape(t, g, &tensor::matmul_shape(&a2_shape, &b2_shape)?)?;
    accumulate_arg(t, adjoints, lhs, |t| {
        let b2_t = ops::swap_last_two(t, b2.clone())?;
        let product = ops::matmul(t, g2.clone(), b2_t)?;
        let summed = ops::sum_to_shape(t, product, &a2_shape)?;
        ops::reshape(t, summed, &a_shape)
    })?;
    accumulate_arg(t, adjoints, rhs, |t| {
        let a2_t = ops::swap_last_two(t, a2.clone())?;
        let product = ops::matmul(t, a2_t, g2.clone())?;
        let summed = ops::sum_to_shape(t, product, &b2_shape)?;
        ops::reshape(t, summed, &b_shape)
    })
}

/// The input gradient of a reduction over all elements (`axis == None`) or one axis.
fn reduce_rule(
    t: &mut Tape,
    op: ReduceOp,
    x: Value,
    y: Value,
    axis: Option<usize>,
    g: Value,
) -> Result<Value, AdError> {
    let shape = x.shape().to_vec();
    // Brings an output-shaped value back to a shape that broadcasts against the input.
    let expand = |t: &mut Tape, value: Value| match axis {
        None => ops::to_tensor(t, value),
        Some(axis) => ops::reshape(t, value, &kept_shape(&shape, axis)),
    };
    Ok(match op {
        ReduceOp::Sum => {
            let expanded = expand(t, g)?;
            ops::broadcast_to(t, expanded, &shape)?
        }
        ReduceOp::Mean => {
            let count = match axis {
                None => x.len(),
                Some(axis) => shape.get(axis).copied().unwrap_or(1),
            };
            // Element counts convert to `f64` exactly.
            let scaled = ops::div(t, g, Value::Float(count as f64))?;
            let expanded = expand(t, scaled)?;
            ops::broadcast_to(t, expanded, &shape)?
        }
        ReduceOp::Max | ReduceOp::Min => {
            let input = plain::into_tensor(x.detach(), op.name())?;
            let shares = plain::extreme_shares(&input, axis, op == ReduceOp::Max)?;
            let expanded = expand(t, g)?;
            ops::mul(t, expanded, Value::tensor(shares))?
        }
        ReduceOp::Prod => {
            let expanded = expand(t, g)?;
            let has_zero = x.as_tensor().is_some_and(|x| x.array().iter().any(|&v| v == 0.0));
            let others = match has_zero {
                true => ops::prod_others(t, x, axis)?,
                false => {
                    let product = expand(t, y)?;
                    ops::div(t, product, x)?
                }
            };
            ops::mul(t, expanded, others)?
        }
        ReduceOp::Norm => {
            // x / norm, with 0 at the zero vector, where the norm seen by the quotient is 1 so
            // that higher orders see no 0/0.
            let norm = expand(t, y)?;
            let at_zero = plain::map_primal(&norm, |n| f64::from(u8::from(n == 0.0)))?;
            let safe = ops::select(t, &at_zero, Value::Float(1.0), norm)?;
            let direction = ops::div(t, x, safe)?;
            let expanded = expand(t, g)?;
            let product = ops::mul(t, expanded, direction)?;
            ops::select(t, &at_zero, Value::Float(0.0), product)?
        }
        ReduceOp::LogSumExp => {
            let total = expand(t, y)?;
            let shifted = ops::sub(t, x, total)?;
            let weights = ops::unary(t, UnaryOp::Exp, shifted)?;
            let expanded = expand(t, g)?;
            ops::mul(t, expanded, weights)?
        }
    })
}

/// The largest matrix whose singular determinant is differentiated through its cofactors.
const COFACTOR_LIMIT: usize = 8;

/// The gradient of `det`: `g det(A) inv(A)^T`, or `g` times the cofactor matrix when some matrix
/// of the stack is exactly singular.
fn det_rule(t: &mut Tape, x: Value, y: Value, g: Value) -> Result<Value, AdError> {
    let singular = match y.detach().as_tensor() {
        Some(determinants) => determinants.array().iter().any(|&d| d == 0.0),
        None => y.as_f64() == Some(0.0),
    };
    if !singular {
        let inverse = ops::inv(t, x)?;
        let inverse_t = ops::swap_last_two(t, inverse)?;
        let scale = ops::mul(t, g, y)?;
        let scale = decompositions::per_matrix(t, scale)?;
        return ops::mul(t, scale, inverse_t);
    }
    let shape = x.shape().to_vec();
    let (rank, n) = (shape.len(), shape.last().copied().unwrap_or(0));
    if rank < 2 {
        return Err(AdError::internal("det of a non-matrix"));
    }
    if n > COFACTOR_LIMIT {
        let what = "the gradient of det at a singular matrix larger than 8 by 8";
        return Err(AdErrorKind::Unsupported { what }.into());
    }
    let mut cofactors = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            let minor = minor(t, &x, i, j, n)?;
            let determinant = ops::det(t, minor)?;
            let sign = if (i + j) % 2 == 0 { 1.0 } else { -1.0 };
            cofactors.push(ops::mul(t, determinant, Value::Float(sign))?);
        }
    }
    let cofactors = match rank {
        2 => ops::from_elements(t, &[n, n], cofactors)?,
        _ => {
            // `[n * n][batch...]`, the cofactor axis moved last and split into the matrix's.
            let stacked = ops::stack_many(t, cofactors)?;
            let mut axes: Vec<i64> = (1..rank as i64 - 1).collect();
            axes.push(0);
            let moved = ops::permute(t, stacked, &axes)?;
            ops::reshape(t, moved, &shape)?
        }
    };
    let g = decompositions::per_matrix(t, g)?;
    ops::mul(t, g, cofactors)
}

/// Every matrix of `x` without row `i` and column `j`.
fn minor(t: &mut Tape, x: &Value, i: usize, j: usize, n: usize) -> Result<Value, AdError> {
    let rank = x.shape().len();
    let rows = without(t, x.clone(), rank - 2, i, n)?;
    without(t, rows, rank - 1, j, n)
}

/// `x` without entry `skip` along `axis` (of extent `n`).
fn without(t: &mut Tape, x: Value, axis: usize, skip: usize, n: usize) -> Result<Value, AdError> {
    let before = ops::get(t, x.clone(), &slice_along(x.shape(), axis, 0, Some(skip)))?;
    let after_index = slice_along(x.shape(), axis, skip + 1, Some(n));
    let after = ops::get(t, x, &after_index)?;
    ops::concat(t, before, after, axis as i64)
}

/// The gradients of `x = solve(a, b)`: `gb = solve(a^T, g)` and `ga = -gb x^T` (an outer product
/// for a vector `b`), for every matrix of a stack, summed back over the axes along which `a` or
/// `b` was broadcast.
fn solve_rule(
    t: &mut Tape,
    [a, b]: [Arg; 2],
    [matrix, solution]: [Value; 2],
    rhs_shape: &[usize],
    g: Value,
    adjoints: &mut Adjoints,
) -> Result<(), AdError> {
    let matrix_shape = matrix.shape().to_vec();
    let matrix_t = ops::swap_last_two(t, matrix)?;
    // A vector `b` is one right-hand side for every matrix: its solutions are `[..., n]`, taken
    // as columns `[..., n, 1]`.
    let vector = rhs_shape.len() == 1;
    let (g, solution) = match vector {
        true => (ops::expand_dims(t, g, -1)?, ops::expand_dims(t, solution, -1)?),
        false => (g, solution),
    };
    let gb = ops::solve(t, matrix_t, g)?;
    accumulate_arg(t, adjoints, a, |t| {
        let solution_t = ops::swap_last_two(t, solution.clone())?;
        let product = ops::matmul(t, gb.clone(), solution_t)?;
        let summed = ops::sum_to_shape(t, product, &matrix_shape)?;
        ops::neg(t, summed)
    })?;
    accumulate_arg(t, adjoints, b, |t| {
        let gb = match vector {
            true => {
                let shape = gb.shape()[..gb.shape().len() - 1].to_vec();
                ops::reshape(t, gb.clone(), &shape)?
            }
            false => gb.clone(),
        };
        ops::sum_to_shape(t, gb, rhs_shape)
    })
}

/// The symmetric gradient of `cholesky` (see the module documentation).
fn cholesky_rule(t: &mut Tape, factor: Value, g: Value) -> Result<Value, AdError> {
    let n = factor.shape().last().copied().unwrap_or(0);
    let factor_t = ops::swap_last_two(t, factor)?;
    let product = ops::matmul(t, factor_t.clone(), g)?;
    let lower = ops::mul(t, product, Value::tensor(plain::lower_mask(n, true)?))?;
    let strict = ops::mul(t, lower.clone(), Value::tensor(plain::lower_mask(n, false)?))?;
    let strict_t = ops::swap_last_two(t, strict)?;
    let sum = ops::add(t, lower, strict_t)?;
    let symmetric = ops::mul(t, sum, Value::Float(0.5))?;
    let left = ops::solve(t, factor_t.clone(), symmetric)?;
    let left_t = ops::swap_last_two(t, left)?;
    let both = ops::solve(t, factor_t, left_t)?;
    ops::swap_last_two(t, both)
}
