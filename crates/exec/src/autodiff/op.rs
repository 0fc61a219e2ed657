//! What the tape records: one [`Op`] per differentiable operation whose operand was tracked,
//! holding the nodes of its inputs and whatever its backward rule needs.
//!
//! To make a new operation differentiable:
//! 1. add a variant here, holding its tracked inputs (an [`Arg`] for an operand that may be a
//!    constant, a `u32` node for one that is tracked whenever the operation is recorded) and the
//!    values, kinds or parameters its rule reads; list the values in [`Op::saved`];
//! 2. in its function in `ops`, lift the operands with `Tape::lift` and, when one is tracked,
//!    compute the result on the unboxed operands (so that lower levels record it too) and record
//!    it with `Tape::push(level, Op::..., out)`;
//! 3. add its rule to `backward::pullback_value` (and, if it maps a uniform gradient to another
//!    one cheaply, to `backward::pullback_uniform`), written with the differentiable `ops`, so
//!    that higher derivatives come out right;
//! 4. check it against finite differences in `tests/primitives.rs`.
//!
//! How the records are stored (scalar records packed into 8-byte words) is the business of
//! `store.rs`; nothing else needs to know.

use std::rc::Rc;

use crate::value::{Primal, Value};
use tensor::einsum::Contraction;
use tensor::{BinaryOp, Index, ReduceOp, UnaryOp};

/// An input of a recorded operation: the index on its level's tape of the node that produced it,
/// or [`Arg::CONSTANT`] for an operand not tracked at that level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Arg(u32);

impl Arg {
    pub(crate) const CONSTANT: Arg = Arg(u32::MAX);

    pub(crate) fn node(index: u32) -> Arg {
        Arg(index)
    }

    /// The tape index of a tracked input, `None` for a constant.
    pub(crate) fn index(self) -> Option<usize> {
        (self != Arg::CONSTANT).then_some(self.0 as usize)
    }
}

/// What an operand was, so that its gradient can be given the same type and shape: a `float`
/// (whose gradient is a `float`) or a tensor of a shape.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    Float,
    Tensor(Box<[usize]>),
}

impl Kind {
    /// The kind of a value's primal; integers count as floats, because they only reach a recorded
    /// operation converted.
    pub(crate) fn of(value: &Value) -> Kind {
        match value.primal() {
            Primal::Tensor(tensor) => Kind::Tensor(tensor.shape().into()),
            _ => Kind::Float,
        }
    }

    /// The shape: none for a float.
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Kind::Float => &[],
            Kind::Tensor(shape) => shape,
        }
    }
}

/// The operands and result of a broadcasting binary operation, for the rules that read them.
#[derive(Clone, Debug)]
pub(crate) struct BinaryValues {
    pub(crate) lhs: Value,
    pub(crate) rhs: Value,
    pub(crate) out: Value,
}

/// A recorded operation. Inputs are nodes of the record's own level (values tracked only at other
/// levels are constants here); saved values are unboxed at the record's level and may still be
/// tracked at lower ones, so that a rule written with `ops` records the backward pass there.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    /// A `var` (program level) or the argument a transform differentiates. A `var` re-leafed after
    /// a `backward` remembers the serial of the program-level node it continues (`origin`), so
    /// that `grad(x)` still finds that node's gradient.
    Leaf { origin: Option<u64> },
    /// A float function of one tracked float, with the plain local derivative `dx`.
    Scalar1 { x: u32, dx: f64 },
    /// A float function of two tracked floats, with plain local derivatives.
    Scalar2 { a: u32, da: f64, b: u32, db: f64 },
    /// An element-wise function of `x`, which gave `output`.
    Unary { op: UnaryOp, x: u32, input: Value, output: Value },
    /// Broadcasting arithmetic; `values` is `None` for `+` and `-`, whose rules need only the
    /// kinds.
    Binary {
        op: BinaryOp,
        lhs: Arg,
        rhs: Arg,
        lhs_kind: Kind,
        rhs_kind: Kind,
        values: Option<Box<BinaryValues>>,
    },
    /// `mask ? a : b` element-wise with a constant mask.
    Select { a: Arg, b: Arg, mask: Value, a_kind: Kind, b_kind: Kind },
    /// `lhs_value @ rhs_value`.
    Matmul { lhs: Arg, rhs: Arg, lhs_value: Value, rhs_value: Value },
    /// A reduction over all elements (`axis` is `None`) or one axis.
    Reduce { op: ReduceOp, x: u32, axis: Option<u32>, input: Value, output: Value },
    /// For every element of `input`, the product of the other elements of its lane (the gradient
    /// of `prod` where an element is zero).
    ProdOthers { x: u32, axis: Option<u32>, input: Value },
    /// For every element `k` of a lane, the sum over the lane's other elements `i` of `v[i]` times
    /// the product of the elements of `input` other than `i` and `k`: the gradient of
    /// [`Op::ProdOthers`], linear in the tracked `v`, with `input` constant.
    ProdPairs { v: u32, axis: Option<u32>, input: Value },
    /// The running sums of `x` along `axis`, from the end of each lane when `reverse`.
    Cumsum { x: u32, axis: u32, reverse: bool },
    /// Softmax along an axis, which gave `output`.
    Softmax { x: u32, axis: u32, output: Value },
    /// Log-softmax along an axis, which gave `output`.
    LogSoftmax { x: u32, axis: u32, output: Value },
    /// A change of shape (`reshape`, an inserted axis) of `x`, which was of `kind`.
    Reshape { x: u32, kind: Kind },
    /// All axes reversed.
    Transpose { x: u32 },
    /// Axes permuted: axis `i` of the result is axis `axes[i]` of the input.
    Permute { x: u32, axes: Box<[usize]> },
    /// `concat(lhs, rhs, axis)`, where `lhs` has extent `split` along `axis`.
    Concat { lhs: Arg, rhs: Arg, axis: u32, split: u32 },
    /// Items of the given kinds stacked along a new first axis.
    Stack { items: Box<[Arg]>, kinds: Box<[Kind]> },
    /// `diag`: vector to matrix or matrix to vector, of `x` of `kind`.
    Diag { x: u32, kind: Kind },
    /// `trace` of the matrix `x` of `kind`.
    Trace { x: u32, kind: Kind },
    /// `x[index]`, a gather, of `x` of `kind`.
    Get { x: u32, index: Box<[Index]>, kind: Kind },
    /// `target[index] = value`, a scatter of `value` of `kind`. `consumed` says that nothing
    /// else held the target's value when it was written (a variable written in place), so no
    /// `grad` can ask for its gradient and the program's backward pass need not keep it: a
    /// loop of writes then costs what it writes.
    Set { target: Arg, value: Arg, index: Box<[Index]>, kind: Kind, consumed: bool },
    /// `target[index] += value`, of `value` of `kind`; `consumed` as for [`Op::Set`].
    AddAt { target: Arg, value: Arg, index: Box<[Index]>, kind: Kind, consumed: bool },
    /// `x` rearranged by an index map: output element `i` is the input element the map gives
    /// for it (`E[ids]`, `p[arange(k), y]`, and any built-in that is a `tensor::Gather`). Its
    /// rule is a [`Op::ScatterAdd`] through the same map.
    Gather { x: u32, map: Rc<tensor::Gather> },
    /// The transpose of a gather: each element of `x` (of the map's output shape) added into the
    /// element of the map's input shape it was gathered from, duplicates accumulating
    /// (`index_add`, the gradient of a gather). Its rule is a [`Op::Gather`] through the map.
    ScatterAdd { x: u32, map: Rc<tensor::Gather> },
    /// `x` of `kind` broadcast to a larger shape.
    BroadcastTo { x: u32, kind: Kind },
    /// A tensor summed down to the shape of `kind`, which it broadcasts from.
    SumToShape { x: u32, kind: Kind },
    /// A float as a rank-0 tensor.
    ToTensor { x: u32 },
    /// A one-element tensor of `kind` as a float.
    ToFloat { x: u32, kind: Kind },
    /// `inv`, which gave `output`.
    Inv { x: u32, output: Value },
    /// `det` of `input`, which gave `output`.
    Det { x: u32, input: Value, output: Value },
    /// `solve(a, b)` with the matrix `matrix` and a right-hand side of `rhs_shape`, which gave
    /// `solution`.
    Solve { a: Arg, b: Arg, matrix: Value, rhs_shape: Box<[usize]>, solution: Value },
    /// `qr` of `x`, which gave `q` and `r`; its output is the two packed into one vector.
    Qr { x: u32, q: Value, r: Value },
    /// `svd` of `x`, which gave `u`, `s` and `vh`, packed into its output.
    Svd { x: u32, u: Value, s: Value, vh: Value },
    /// `eigh` of `x`, which gave `values` and `vectors`, packed into its output.
    Eigh { x: u32, values: Value, vectors: Value },
    /// The `log |det|` of `slogdet` of `input`.
    LogAbsDet { x: u32, input: Value },
    /// `pinv` of `input`, which gave `output`.
    Pinv { x: u32, input: Value, output: Value },
    /// `cholesky`, which gave the lower factor `factor`.
    Cholesky { x: u32, factor: Value },
    /// One of a convolution's three bilinear maps (`tensor::Face`: the convolution itself, its
    /// input gradient, its filter gradient) of `a` and `b`, whose values are `a_value` and
    /// `b_value`. Its rule gives each operand's cotangent by the other two maps, so one record
    /// differentiates to any order.
    Conv {
        face: tensor::Face,
        conv: Rc<tensor::Convolution>,
        a: Arg,
        b: Arg,
        a_value: Value,
        b_value: Value,
    },
    /// A contraction (`einsum`, index statements) of `operands`, whose nodes are `args`.
    Einsum { contraction: Rc<Contraction>, args: Box<[Arg]>, operands: Box<[Value]> },
    /// A call of a function with a custom derivative rule, or of a `checkpoint`ed function, on
    /// `arguments` (whose nodes are `inputs`), which gave `output`. Its rule is Nabla code,
    /// which only the interpreter can run: the backward pass stops here and hands the call to
    /// its driver (`backward::RuleCall`), which runs it and resumes.
    Custom { rule: Rule, inputs: Box<[Arg]>, arguments: Box<[Value]>, output: Value },
}

/// What the backward pass runs for an [`Op::Custom`] record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// A custom derivative rule, the interpreter's unit: run on the arguments, the result and
    /// the result's gradient, it gives the gradient of the one differentiable argument.
    Derivative(u32),
    /// `checkpoint(f)`, with `f` the interpreter's callable: the call is run again at a fresh
    /// level, and that recording's backward pass gives the arguments' gradients.
    Recompute(u32),
}

impl Op {
    /// The nodes of the record's tracked inputs, in operand order (a scalar record's inputs, a
    /// binary operation's tracked operands, every tracked operand of a contraction...): the
    /// edges of the graph the records form, for the picture of it and the NaN check.
    pub(crate) fn inputs(&self) -> Vec<u32> {
        fn args(args: &[Arg]) -> impl Iterator<Item = u32> + '_ {
            args.iter().filter_map(|arg| arg.index()).map(|i| i as u32)
        }
        match self {
            Op::Leaf { .. } => Vec::new(),
            Op::Scalar1 { x, .. } => vec![*x],
            Op::Scalar2 { a, b, .. } => vec![*a, *b],
            Op::Unary { x, .. }
            | Op::Reduce { x, .. }
            | Op::ProdOthers { x, .. }
            | Op::Softmax { x, .. }
            | Op::LogSoftmax { x, .. }
            | Op::Cumsum { x, .. }
            | Op::Reshape { x, .. }
            | Op::Transpose { x }
            | Op::Permute { x, .. }
            | Op::Diag { x, .. }
            | Op::Trace { x, .. }
            | Op::Get { x, .. }
            | Op::Gather { x, .. }
            | Op::ScatterAdd { x, .. }
            | Op::BroadcastTo { x, .. }
            | Op::SumToShape { x, .. }
            | Op::ToTensor { x }
            | Op::ToFloat { x, .. }
            | Op::Inv { x, .. }
            | Op::Det { x, .. }
            | Op::Cholesky { x, .. }
            | Op::Qr { x, .. }
            | Op::Svd { x, .. }
            | Op::Eigh { x, .. }
            | Op::LogAbsDet { x, .. }
            | Op::Pinv { x, .. } => vec![*x],
            Op::ProdPairs { v, .. } => vec![*v],
            Op::Binary { lhs, rhs, .. }
            | Op::Matmul { lhs, rhs, .. }
            | Op::Concat { lhs, rhs, .. } => args(&[*lhs, *rhs]).collect(),
            Op::Select { a, b, .. } | Op::Solve { a, b, .. } | Op::Conv { a, b, .. } => {
                args(&[*a, *b]).collect()
            }
            Op::Set { target, value, .. } | Op::AddAt { target, value, .. } => {
                args(&[*target, *value]).collect()
            }
            Op::Stack { items, .. } => args(items).collect(),
            Op::Einsum { args: operands, .. } => args(operands).collect(),
            Op::Custom { inputs, .. } => args(inputs).collect(),
        }
    }

    /// What the record computes, as a reader names it: the operator or built-in (`@`, `sin`,
    /// `sum`), `var` for a leaf, and `float op` for a scalar record, whose operation the tape
    /// does not keep (the instruction that made it does).
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::Leaf { .. } => "var",
            Op::Scalar1 { .. } | Op::Scalar2 { .. } => "float op",
            Op::Unary { op, .. } => op.name(),
            Op::Binary { op, .. } => op.symbol(),
            Op::Select { .. } => "select",
            Op::Matmul { .. } => "@",
            Op::Reduce { op, .. } => op.name(),
            Op::ProdOthers { .. } => "prod of the others",
            Op::ProdPairs { .. } => "prod of pairs",
            Op::Cumsum { .. } => "cumsum",
            Op::Softmax { .. } => "softmax",
            Op::LogSoftmax { .. } => "log_softmax",
            Op::Reshape { .. } => "reshape",
            Op::Transpose { .. } => "transpose",
            Op::Permute { .. } => "permute",
            Op::Concat { .. } => "concat",
            Op::Stack { .. } => "stack",
            Op::Diag { .. } => "diag",
            Op::Trace { .. } => "trace",
            Op::Get { .. } => "index",
            Op::Set { .. } => "indexed assignment",
            Op::AddAt { .. } => "indexed +=",
            Op::Gather { .. } => "gather",
            Op::ScatterAdd { .. } => "scatter-add",
            Op::BroadcastTo { .. } => "broadcast",
            Op::SumToShape { .. } => "sum to shape",
            Op::ToTensor { .. } => "to tensor",
            Op::ToFloat { .. } => "to float",
            Op::Inv { .. } => "inv",
            Op::Det { .. } => "det",
            Op::Solve { .. } => "solve",
            Op::Cholesky { .. } => "cholesky",
            Op::Qr { .. } => "qr",
            Op::Svd { .. } => "svd",
            Op::Eigh { .. } => "eigh",
            Op::LogAbsDet { .. } => "slogdet",
            Op::Pinv { .. } => "pinv",
            Op::Conv { face: tensor::Face::Forward, .. } => "conv",
            Op::Conv { face: tensor::Face::InputGradient, .. } => "conv input gradient",
            Op::Conv { face: tensor::Face::FilterGradient, .. } => "conv filter gradient",
            Op::Einsum { .. } => "einsum",
            Op::Custom { rule: Rule::Derivative(_), .. } => "derivative rule",
            Op::Custom { rule: Rule::Recompute(_), .. } => "checkpoint",
        }
    }

    /// The values the record keeps alive, for the tape's memory limit.
    pub(crate) fn saved(&self) -> Vec<&Value> {
        match self {
            Op::Leaf { .. }
            | Op::Scalar1 { .. }
            | Op::Scalar2 { .. }
            | Op::Cumsum { .. }
            | Op::Reshape { .. }
            | Op::Transpose { .. }
            | Op::Permute { .. }
            | Op::Concat { .. }
            | Op::Stack { .. }
            | Op::Diag { .. }
            | Op::Trace { .. }
            | Op::Get { .. }
            | Op::Set { .. }
            | Op::AddAt { .. }
            | Op::Gather { .. }
            | Op::ScatterAdd { .. }
            | Op::BroadcastTo { .. }
            | Op::SumToShape { .. }
            | Op::ToTensor { .. }
            | Op::ToFloat { .. } => Vec::new(),
            Op::Binary { values, .. } => match values {
                Some(values) => vec![&values.lhs, &values.rhs, &values.out],
                None => Vec::new(),
            },
            Op::Unary { input, output, .. }
            | Op::Reduce { input, output, .. }
            | Op::Det { input, output, .. } => vec![input, output],
            Op::Select { mask, .. } => vec![mask],
            Op::Matmul { lhs_value, rhs_value, .. } => vec![lhs_value, rhs_value],
            Op::Conv { a_value, b_value, .. } => vec![a_value, b_value],
            Op::ProdOthers { input, .. } | Op::ProdPairs { input, .. } => vec![input],
            Op::Softmax { output, .. } | Op::LogSoftmax { output, .. } | Op::Inv { output, .. } => {
                vec![output]
            }
            Op::Solve { matrix, solution, .. } => vec![matrix, solution],
            Op::Cholesky { factor, .. } => vec![factor],
            Op::Qr { q, r, .. } => vec![q, r],
            Op::Svd { u, s, vh, .. } => vec![u, s, vh],
            Op::Eigh { values, vectors, .. } => vec![values, vectors],
            Op::LogAbsDet { input, .. } => vec![input],
            Op::Pinv { input, output, .. } => vec![input, output],
            Op::Einsum { operands, .. } => operands.iter().collect(),
            Op::Custom { arguments, output, .. } => {
                arguments.iter().chain(std::iter::once(output)).collect()
            }
        }
    }

    /// The tracked input whose adjoint only this record's rule needs: the target of a write
    /// that consumed it.
    pub(crate) fn consumed_input(&self) -> Option<usize> {
        match self {
            Op::Set { target, consumed: true, .. } | Op::AddAt { target, consumed: true, .. } => {
                target.index()
            }
            _ => None,
        }
    }

    /// The bytes of the tensors the record keeps alive (each counted as if it had its own
    /// buffer), and of the index map of a gather or scatter.
    pub(crate) fn saved_bytes(&self) -> usize {
        let map = match self {
            Op::Gather { map, .. } | Op::ScatterAdd { map, .. } => map.bytes(),
            _ => 0,
        };
        self.saved()
            .into_iter()
            .filter_map(Value::as_tensor)
            .map(|tensor| tensor.len().saturating_mul(size_of::<f64>()))
            .fold(map, usize::saturating_add)
    }
}
