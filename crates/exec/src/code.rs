//! The executable form of a checked program: one [`Unit`] of register code per definition (each
//! function, each test, each file's top level), with every name resolved to a numbered slot of
//! the unit's frame, a global, a unit index or a built-in operation.
//!
//! Instructions are specialised by the static types the checker proved (`int` arithmetic with
//! overflow checks, comparisons fused with jumps, floats with a fast path for plain numbers), and
//! everything else dispatches to the differentiable operations of [`crate::ops`]. Nothing here is
//! looked up by name while running. [`crate::lower`] builds this form, [`crate::interp`] runs it.
//!
//! Each instruction has a span (the source of the operation it performs), so a failing instruction
//! names its place in the source without any extra work on the fast path.

mod display;

use std::path::PathBuf;
use std::rc::Rc;

use hir::{Builtin, DefId, Ratio, RelSpan, SizeExpr, TransformOp};

use crate::value::Value;
use tensor::einsum::{Contraction, EinsumSpec};
use tensor::{BinaryOp, ReduceOp, UnaryOp};

/// A slot of the current frame: the `index`-th value of the unit's frame.
///
/// A slot holds its byte offset in the frame (the index times the size of a [`Value`]) rather
/// than its index, so that the interpreter addresses it with one machine instruction, the frame's
/// address plus the offset. From an index it took two, a multiplication by 3 and an address
/// scaled by 8, and three when the compiler kept the frame's address in r13 or rbp (registers
/// that need a displacement as a base), so which register `run_code` happened to get moved
/// programs whose code did not change by a few percent. Measured with callgrind against the
/// index encoding, outputs identical: the 13 programs of bench/interpreter 0.967 (geometric
/// mean; 0.936-0.995 each, fib 1.019), the sin gradient of bench/autodiff repeated in one
/// process 791 M -> 777 M instructions a repetition.
///
/// Everything outside the interpreter names slots by index ([`Slot::new`], [`Slot::index`],
/// `slot + n`), and `Debug` prints the index.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot(u32);

impl Slot {
    const SIZE: u32 = size_of::<Value>() as u32;
    /// The number of slots a frame can have: their offsets leave room for [`Operand`]'s flags.
    pub const MAX: u32 = Operand::FRESH / Self::SIZE;

    /// The slot `index`; an index past [`Slot::MAX`] gives a slot no frame has (see
    /// [`Program::verify`]).
    pub const fn new(index: u32) -> Slot {
        if index < Self::MAX { Slot(index * Self::SIZE) } else { NO_SLOT }
    }

    /// The slot's index in the frame.
    pub const fn index(self) -> u32 {
        self.0 / Self::SIZE
    }

    /// Whether the slot is one of a frame of `n_slots` slots.
    pub fn in_frame(self, n_slots: u32) -> bool {
        self.0.is_multiple_of(Self::SIZE) && self.index() < n_slots
    }

    /// The slot's byte offset from the frame's first value.
    #[inline(always)]
    pub(crate) const fn offset(self) -> usize {
        self.0 as usize
    }
}

/// `slot + n`: the slot `n` places after `slot`; after [`NO_SLOT`] or past [`Slot::MAX`],
/// `NO_SLOT`.
impl std::ops::Add<u32> for Slot {
    type Output = Slot;

    fn add(self, n: u32) -> Slot {
        match self.index().checked_add(n) {
            Some(index) if self != NO_SLOT => Slot::new(index),
            _ => NO_SLOT,
        }
    }
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if *self == NO_SLOT { write!(f, "NO_SLOT") } else { write!(f, "{}", self.index()) }
    }
}

/// The destination of a call whose result is not kept.
pub const NO_SLOT: Slot = Slot(u32::MAX);

/// A slot read by an instruction: either copied (a variable keeps its value) or taken (a
/// temporary is used exactly once, so its tensor can be overwritten in place).
///
/// A taken operand may also be *fresh*: the temporary was written only by the arithmetic or
/// element-wise instruction that computed it, so its value is the only reference to the tape node
/// that instruction recorded, and a scalar operation reading it may fuse that record into its own
/// (see `Tape::fuse1`). A temporary copied from a variable is never fresh.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Operand(u32);

impl Operand {
    const TAKE: u32 = 1 << 31;
    const FRESH: u32 = 1 << 30;
    const FLAGS: u32 = Self::TAKE | Self::FRESH;

    /// Reads `slot` and leaves it as it is.
    pub fn copy(slot: Slot) -> Operand {
        Operand(slot.0 & !Self::FLAGS)
    }

    /// Reads `slot` and leaves a placeholder in it.
    pub fn take(slot: Slot) -> Operand {
        Operand((slot.0 & !Self::FLAGS) | Self::TAKE)
    }

    /// Takes the fresh temporary in `slot` (see the type's documentation).
    pub fn fresh(slot: Slot) -> Operand {
        Operand((slot.0 & !Self::FLAGS) | Self::FLAGS)
    }

    pub fn slot(self) -> Slot {
        Slot(self.0 & !Self::FLAGS)
    }

    pub fn is_take(self) -> bool {
        self.0 & Self::TAKE != 0
    }

    pub fn is_fresh(self) -> bool {
        self.0 & Self::FRESH != 0
    }
}

impl std::fmt::Debug for Operand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_fresh() {
            write!(f, "fresh %{:?}", self.slot())
        } else if self.is_take() {
            write!(f, "take %{:?}", self.slot())
        } else {
            write!(f, "%{:?}", self.slot())
        }
    }
}

/// Integer operators, all with C semantics and overflow checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    And,
    Xor,
    Or,
}

impl IntOp {
    /// Whether `a op b` is `b op a`.
    pub fn commutes(self) -> bool {
        matches!(self, IntOp::Add | IntOp::Mul | IntOp::And | IntOp::Xor | IntOp::Or)
    }
}

/// Comparison operators.
///
/// Each discriminant is the set of outcomes of comparing `a` with `b` for which the operator
/// holds, one bit each: less (1), equal (2), greater (4) and unordered (8, when a NaN is
/// involved). Evaluating one is then a shift and a mask of the outcome, without a branch on the
/// operator: the hot loops and calls of the interpreter test one on every iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Cmp {
    Lt = 0b0001,
    Le = 0b0011,
    Gt = 0b0100,
    Ge = 0b0110,
    Eq = 0b0010,
    Ne = 0b1101,
}

impl Cmp {
    /// The comparison that holds exactly when this one does not (for integers, where there is no
    /// NaN).
    pub fn negate(self) -> Cmp {
        match self {
            Cmp::Lt => Cmp::Ge,
            Cmp::Le => Cmp::Gt,
            Cmp::Gt => Cmp::Le,
            Cmp::Ge => Cmp::Lt,
            Cmp::Eq => Cmp::Ne,
            Cmp::Ne => Cmp::Eq,
        }
    }

    #[inline]
    pub fn ints(self, a: i64, b: i64) -> bool {
        // Less 0, equal 1, greater 2: two flag reads of one compare, where `partial_cmp` built
        // a three-way ordering first.
        let outcome = u8::from(a >= b) + u8::from(a > b);
        (self as u8 >> outcome) & 1 != 0
    }

    /// Whether `a self b` holds (false for every comparison but `!=` when a NaN is involved).
    ///
    /// Less 0, equal 1, greater 2, unordered 3, from flag reads, where `partial_cmp` built an
    /// `Option<Ordering>` first. The negated compares are the point: each also holds for
    /// unordered operands. Measured (callgrind, 2026-11-26): the interpreter suite 0.996 of
    /// `partial_cmp`'s instructions, and 0.998 of the same outcome written as
    /// `(a >= b) + (a > b) + 3 * unordered`.
    #[inline]
    #[allow(clippy::neg_cmp_op_on_partial_ord)]
    pub fn floats(self, a: f64, b: f64) -> bool {
        let unordered = a.is_nan() || b.is_nan();
        let outcome = u8::from(!(a < b)) + u8::from(!(a <= b)) + u8::from(unordered);
        (self as u8 >> outcome) & 1 != 0
    }

    pub fn binary_op(self) -> BinaryOp {
        match self {
            Cmp::Lt => BinaryOp::Lt,
            Cmp::Le => BinaryOp::Le,
            Cmp::Gt => BinaryOp::Gt,
            Cmp::Ge => BinaryOp::Ge,
            Cmp::Eq => BinaryOp::Eq,
            Cmp::Ne => BinaryOp::Ne,
        }
    }
}

/// An explicit conversion `(T)x`, or an implicit one the checker allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CastKind {
    /// To `int`: floats truncate toward zero; NaN and out-of-range values are errors.
    Int,
    /// To `float`; a tracked float or one-element tensor keeps its gradient.
    Float,
    /// To `char`: the value modulo 256, as C's conversion to `unsigned char`.
    Char,
    /// To `bool`: non-zero is true.
    Bool,
}

/// One entry of a bracket of an index expression: `i`, `i:j:s`, `...`, `none`, a tensor of
/// indices or a mask (NumPy's advanced indexing; such a bracket is always alone in its chain).
#[derive(Clone, Copy, Debug)]
pub enum IndexEntry {
    At(Operand),
    Indices(Operand),
    Mask(Operand),
    Slice { start: Option<Operand>, end: Option<Operand>, step: Option<Operand> },
    Ellipsis,
    NewAxis,
}

/// The brackets of an index expression `a[i, j][k:]`, each a list of entries, applied one after
/// the other.
pub type IndexChain = Box<[Box<[IndexEntry]>]>;

/// One extent of a shape that is checked or bound at run time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimSpec {
    /// A fixed extent.
    Known(usize),
    /// The current value of a shape variable (or `cns int`) in a slot of the frame.
    Slot(Slot),
    /// The current value of a global shape variable.
    Global(u32),
    /// A size expression over shape variables (`2*n + 1`, `n / 2`), evaluated when the check
    /// runs; a remainder or a negative value is an error.
    Size(Rc<SizeSpec>),
    /// A fresh shape variable bound to the extent found, in a slot.
    BindSlot(Slot),
    /// A fresh global shape variable bound to the extent found.
    BindGlobal(u32),
    /// A shape variable bound so that a size expression equals the extent found: `m` in `2*m`.
    Solve(Rc<SolveSpec>),
    /// Anything (a dimension the checker knows nothing about).
    Any,
}

impl DimSpec {
    /// The variable the spec binds, if it binds one.
    pub fn binds(&self) -> Option<SizePlace> {
        match self {
            DimSpec::BindSlot(slot) => Some(SizePlace::Slot(*slot)),
            DimSpec::BindGlobal(global) => Some(SizePlace::Global(*global)),
            DimSpec::Solve(solve) => Some(solve.var),
            _ => None,
        }
    }
}

/// Shape variables by name with where their values live, for messages (`N = 5`).
pub type SizeNames = Vec<(String, SizePlace)>;

/// Where a size expression reads a variable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizePlace {
    Slot(Slot),
    Global(u32),
}

/// A size expression to evaluate, with what its messages need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeSpec {
    pub expr: SizeExpr<SizePlace>,
    /// The size as written: `n - q + 1`.
    pub text: Box<str>,
    /// Its variables by name, for messages (`n = 2, q = 4`).
    pub vars: Box<[(Box<str>, SizePlace)]>,
}

/// How an extent binds a variable that occurs in it linearly:
/// `var = (extent - rest) / coefficient`, which must be a whole number of zero or more.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SolveSpec {
    pub var: SizePlace,
    pub coefficient: Ratio,
    pub rest: SizeExpr<SizePlace>,
    /// The extent as written (`2*m`) and the variable's name, for messages.
    pub text: Box<str>,
    pub name: Box<str>,
}

/// What a run-time shape check is about, for its message.
#[derive(Clone, Debug)]
pub enum CheckContext {
    /// The initializer of a variable's declaration.
    Initializer { name: String },
    /// An assignment to a variable.
    Assign { name: String },
    /// Argument `index` (from 0) of a call of `function`.
    Argument { function: String, index: usize },
    /// The value returned by `function`.
    Return { function: String },
    /// A field of a literal of the record type `record`.
    Literal { record: String },
}

/// A shape a value must have: the declared type as written (`Tensor[N][3]`) and its extents.
#[derive(Clone, Debug)]
pub struct ShapeCheck {
    pub context: CheckContext,
    pub declared: String,
    /// The shape variables of the declared type.
    pub vars: SizeNames,
    pub dims: Vec<DimSpec>,
    /// Whether a scalar may stand for the tensor (it is broadcast instead of checked).
    pub ranked: bool,
}

/// A shape given to a constructor: a list of `int` operands, or a tensor holding the extents.
#[derive(Clone, Debug)]
pub enum DimsArg {
    Ints(Box<[Operand]>),
    Tensor(Operand),
}

/// The shape a scalar is broadcast to where a tensor is expected.
#[derive(Clone, Debug)]
pub enum TargetShape {
    /// Rank 0: the scalar becomes a one-element tensor.
    Scalar,
    /// The extents (fixed, or shape variables read at run time).
    Dims(Box<[DimSpec]>),
}

/// A value or a string literal: an item of `print` or `write`, or an argument of a library
/// built-in, whose options are string literals (`pad(t, widths, "reflect")`).
#[derive(Clone, Debug)]
pub enum PrintItem {
    Value(Operand),
    Text(Box<str>),
    /// `format("...", values...)` as an item of `print` or `write`.
    Format(Box<[FormatPiece]>),
}

/// A piece of a `format` text: text as it is, or a placeholder with the value that fills it.
#[derive(Clone, Debug)]
pub enum FormatPiece {
    Text(Box<str>),
    Value(Operand, hir::FormatSpec),
    /// A string literal given as a value.
    Literal(Box<str>, hir::FormatSpec),
}

/// The arguments of `print_options`.
#[derive(Clone, Debug)]
pub enum PrintOptionsArgs {
    /// `"default"`, `"line"` or `"exact"`.
    Mode(tensor::PrintOptions),
    /// Precision, threshold, line width (`int`s) and whether to suppress small numbers (`bool`),
    /// as many as were given.
    Values(Box<[Operand]>),
}

/// What a chart call draws (see [`crate::plot::Chart`]).
#[derive(Clone, Copy, Debug)]
pub enum ChartArgs {
    Lines(Operand),
    Scatter(Operand, Operand),
    Histogram { x: Operand, bins: Operand },
}

/// How the right-hand side of an index statement combines with the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexAssign {
    Assign,
    Add,
    Mul,
}

/// A built-in function call that is not on any hot path, with its operands.
#[derive(Clone, Debug)]
pub enum BuiltinCall {
    /// `sum(t)`, `max(t, axis)`, ...
    Reduce {
        op: ReduceOp,
        x: Operand,
        axis: Option<Operand>,
    },
    Softmax {
        log: bool,
        x: Operand,
        axis: Option<Operand>,
    },
    /// `zeros`, `ones`, `rand`, `randn`, `full`.
    Construct {
        kind: Construct,
        dims: DimsArg,
        value: Option<Operand>,
    },
    Eye(Operand),
    Arange(Operand),
    Reshape {
        x: Operand,
        dims: DimsArg,
        /// The shapes of `x` and of the result as the checker wrote them, when sizes such as
        /// `n*m` make them differ from the values: messages name both.
        written: Option<Box<[String; 2]>>,
    },
    Transpose {
        x: Operand,
        axes: Option<DimsArg>,
    },
    Concat {
        a: Operand,
        b: Operand,
        axis: Operand,
    },
    Stack {
        a: Operand,
        b: Operand,
    },
    ShapeOf {
        x: Operand,
        axis: Operand,
    },
    Rank(Operand),
    All(Operand),
    Any(Operand),
    Seed(Operand),
    Inv(Operand),
    Det(Operand),
    Solve(Operand, Operand),
    Cholesky(Operand),
    Trace(Operand),
    Diag(Operand),
    Print(Box<[PrintItem]>),
    /// `write`: the items of `print` without the newline, then a flush.
    Write(Box<[PrintItem]>),
    /// `print_options(...)`: a mode (`"line"`), or the numeric options given, in order.
    PrintOptions(PrintOptionsArgs),
    /// `plot`, `scatter`, `histogram`: a chart written to `path`.
    Chart {
        path: PathBuf,
        chart: ChartArgs,
        labels: crate::plot::Labels,
    },
    /// `save_image(path, x)`.
    SaveImage {
        x: Operand,
        path: PathBuf,
    },
    Load {
        path: PathBuf,
        csv: bool,
    },
    Save {
        x: Operand,
        path: PathBuf,
    },
    /// `save(net, path)` of a record: an `.npz` archive of its leaves, each named by its
    /// dotted field name (`l1.w`).
    SaveNpz {
        leaves: Box<[(Box<str>, Operand)]>,
        path: PathBuf,
    },
    /// `load(path)` where a record is expected: the `.npz` archive's array of each leaf's dotted
    /// name, written to the instruction's `dst`, `dst + 1`, ... as a record's leaves are (`true`
    /// for a tensor leaf, `false` for a float, which is a rank-0 array).
    LoadNpz {
        path: PathBuf,
        leaves: Box<[(Box<str>, bool)]>,
    },
    /// `backward(y)`; `text` is `y` as written, for the message when its graph was released.
    Backward {
        y: Operand,
        text: Box<str>,
    },
    /// `grad(x)` of a variable: the operand is the variable's slot, refreshed when it is `var`.
    GradOf(Operand),
    /// `stop_gradient(x)`: the value with every box removed, a constant at every level.
    StopGradient(Operand),
    Assert {
        cond: Operand,
        message: Option<Box<str>>,
    },
    AssertEq {
        a: Operand,
        b: Operand,
        text: Box<str>,
    },
    AssertClose {
        a: Operand,
        b: Operand,
        rtol: Option<Operand>,
        atol: Option<Operand>,
        text: Box<str>,
    },
    Gradcheck {
        /// The checked function, as a callable (so that its derivative rule, if any, is used).
        callable: u32,
        name: Box<str>,
        args: Box<[Operand]>,
        /// The checked arguments, the first parameter's leaves (the first argument, or those of
        /// a record), by their dotted field names (empty but for a record).
        checked: Box<[Box<str>]>,
    },
    Einsum {
        contraction: Rc<Contraction>,
        operands: Box<[Operand]>,
    },
    /// An `einsum` whose spec has `...` in an operand: expanded for the operands' ranks on each
    /// call.
    EinsumEllipsis {
        spec: Rc<EinsumSpec>,
        operands: Box<[Operand]>,
    },
    /// A library built-in (`clip`, `std`, `conv2d`, ...), by the form the checker gave it:
    /// `interp::library` reads the arguments as its rule says.
    Library {
        builtin: Builtin,
        args: Box<[PrintItem]>,
    },
    /// A library built-in of several results (`topk`, `split`): it writes its `results` values
    /// to the instruction's `dst`, `dst + 1`, ..., as a call of a function of several results
    /// does.
    LibraryTuple {
        builtin: Builtin,
        args: Box<[PrintItem]>,
        results: u32,
    },
    /// A tensor literal whose rows are tensors: stacked along a new first axis.
    StackRows(Box<[Operand]>),
    /// A tensor literal of scalars laid out row-major in `shape`.
    FromElements {
        shape: Box<[usize]>,
        items: Box<[Operand]>,
    },
    /// `sizeof x` of a value whose size the checker does not know.
    Sizeof(Operand),
    /// `sizeof(Tensor[n][3])` with shape variables.
    SizeofDims(Box<[DimSpec]>),
    /// A scalar where a tensor is expected, broadcast to the target's shape.
    ToTensor {
        x: Operand,
        shape: TargetShape,
    },
    /// `target -= scale * x` (or `+=`, with the factors in either order) on a tensor variable: one
    /// pass over the elements instead of a product and a difference (`ops::scaled_update`).
    ScaledUpdate {
        target: Operand,
        subtract: bool,
        scale: Operand,
        x: Operand,
    },
    /// An index statement: `target(labels) op= factors...`, as a contraction of the operands
    /// (the target's current value first for `*=`).
    IndexStatement {
        target: Slot,
        name: Box<str>,
        op: IndexAssign,
        contraction: Rc<Contraction>,
        operands: Box<[Operand]>,
        labels: Box<[Box<str>]>,
    },
}

/// `zeros`, `ones`, `full`, `rand`, `randn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Construct {
    Zeros,
    Ones,
    Full,
    Rand,
    Randn,
}

/// One instruction. Slots are relative to the frame; jump targets are instruction indices.
#[derive(Clone, Debug)]
pub enum Instr {
    /// `dst = src`.
    Copy {
        dst: Slot,
        src: Operand,
    },
    LoadInt {
        dst: Slot,
        value: i64,
    },
    LoadFloat {
        dst: Slot,
        value: f64,
    },
    /// A constant of the unit's table (bools, chars, tensors).
    LoadConst {
        dst: Slot,
        index: u32,
    },
    LoadGlobal {
        dst: Slot,
        global: u32,
    },
    StoreGlobal {
        global: u32,
        src: Operand,
    },
    /// Makes the `var` variable in `slot` a live node of the program tape before it is read.
    RefreshVar {
        slot: Slot,
    },
    /// A `var` declaration: the value in `slot` becomes a leaf.
    Leaf {
        slot: Slot,
    },
    /// `dst = a op b` on integers.
    IntArith {
        op: IntOp,
        dst: Slot,
        a: Slot,
        b: Slot,
    },
    /// `dst = a op imm` on integers; `imm op a` when `imm_first`, which only a commutative
    /// operation has (`3 * n + 1`) and only its error message and listing show.
    IntArithImm {
        op: IntOp,
        dst: Slot,
        a: Slot,
        imm: i32,
        imm_first: bool,
    },
    /// `dst = a cmp b` on integers (`int`, `char`, `bool`).
    IntCmp {
        op: Cmp,
        dst: Slot,
        a: Slot,
        b: Slot,
    },
    /// Jumps to `target` when `a cmp b` holds, on integers.
    JumpIntCmp {
        op: Cmp,
        a: Slot,
        b: Slot,
        target: u32,
    },
    /// The step and test of a counted loop: `slot += delta` (overflow checked), then a jump back
    /// to `target` while `slot cmp imm` holds.
    LoopIntImm {
        slot: Slot,
        delta: i32,
        op: Cmp,
        imm: i32,
        target: u32,
    },
    /// [`Instr::LoopIntImm`] with the bound in a slot.
    LoopInt {
        slot: Slot,
        delta: i32,
        op: Cmp,
        rhs: Slot,
        target: u32,
    },
    /// Jumps to `target` when `a cmp imm` holds, on integers.
    JumpIntCmpImm {
        op: Cmp,
        a: Slot,
        imm: i32,
        target: u32,
    },
    /// `dst = a op b` on scalars with a float result: plain floats directly, anything else (a
    /// tracked float) through the differentiable operation. `+` and `*` have an instruction
    /// each ([`Instr::FloatAdd`], [`Instr::FloatMul`]; the lowering picks through
    /// [`Instr::float_arith`]).
    FloatArith {
        op: BinaryOp,
        dst: Slot,
        a: Operand,
        b: Operand,
    },
    /// [`Instr::FloatArith`] for `+`. An operator with an instruction of its own, as in Lua's and
    /// CPython's machines, is a constant in its arm: the addition and its partial derivatives
    /// (recorded for tracked floats) compile without a branch on the operator. Measured with
    /// [`Instr::FloatMul`] against `FloatArith` for both (callgrind, 2026-11-27, outputs
    /// identical): the interpreter suite 0.978 (mandelbrot 0.895, matmul 0.949, simpson 0.954,
    /// gauss_seidel 0.955, edit_distance 0.972; the integer programs unchanged), the
    /// `x * a + sin(x) * b` gradient 0.949, a repetition of it in one process 737 M instructions
    /// against 777 M, the `x = x + one` gradient 0.936.
    FloatAdd {
        dst: Slot,
        a: Operand,
        b: Operand,
    },
    /// [`Instr::FloatArith`] for `*`, like [`Instr::FloatAdd`].
    FloatMul {
        dst: Slot,
        a: Operand,
        b: Operand,
    },
    /// `dst = a cmp b` on numbers (a `bool`).
    FloatCmp {
        op: Cmp,
        dst: Slot,
        a: Slot,
        b: Slot,
    },
    /// Jumps to `target` when `a cmp b` holds (or, with `negate`, when it does not), on numbers.
    JumpFloatCmp {
        op: Cmp,
        negate: bool,
        a: Slot,
        b: Slot,
        target: u32,
    },
    /// Any element-wise binary operation, with broadcasting and recording.
    Binary {
        op: BinaryOp,
        dst: Slot,
        a: Operand,
        b: Operand,
    },
    Unary {
        op: UnaryOp,
        dst: Slot,
        a: Operand,
    },
    /// `-a` on an integer.
    NegInt {
        dst: Slot,
        a: Slot,
    },
    /// `!a` (C truth).
    Not {
        dst: Slot,
        a: Slot,
    },
    /// `(T)a`, and the implicit `int` to `float`. `(int)` of a plain float in range and
    /// `(float)` of an `int` run on the interpreter's fast path. Measured (callgrind,
    /// `bench/interpreter`, 2026-11-27, together with `int` and `float` declarations without a
    /// value loading their zero as a literal): `bst` 0.61 of the instructions, `quicksort` 0.965,
    /// `heap_sort` 0.983, the suite's geometric mean 0.958 (0.995 without `bst`).
    Cast {
        kind: CastKind,
        dst: Slot,
        a: Operand,
    },
    Matmul {
        dst: Slot,
        a: Operand,
        b: Operand,
    },
    Jump {
        target: u32,
    },
    /// Jumps when the truth of `cond` equals `when`.
    JumpIf {
        cond: Slot,
        when: bool,
        target: u32,
    },
    /// A call of a Nabla function: the arguments become the callee's first slots.
    Call {
        unit: u32,
        dst: Slot,
        args: ArgRange,
    },
    /// A call of a derivative built by `grad`, `jvp`, ... (see [`Callable`]).
    CallTransform {
        callable: u32,
        dst: Slot,
        args: ArgRange,
    },
    /// Returns from the unit, with a value or without.
    Return {
        src: Option<Operand>,
    },
    /// Returns the elements of a tuple from a function of several results (see
    /// [`Unit::results`]): the caller receives them in consecutive slots from the call's `dst`.
    ReturnTuple {
        items: ArgRange,
    },
    /// `dst = base[i, j, ...]`: one element of a tensor, by an index chain of integers only
    /// (`u[i][j]` is `u[i, j]`), whose result the checker typed a `float`. The integers are read
    /// from the slots `i` and `j` (for one index `j` is [`NO_SLOT`]; for three or more both are,
    /// and the integers are the entries of the chain `index`). An untracked tensor whose rank is
    /// the number of indices, each in range, is read in place, without an index list; anything
    /// else (a tracked tensor, a negative index, an error to report) runs as
    /// [`Instr::GetIndex`] of the chain `index` does.
    GetElem {
        dst: Slot,
        base: Operand,
        i: Slot,
        j: Slot,
        index: u32,
    },
    /// `target[i, j, ...] = value`, or `op=` with `op`: one element of a tensor, with the indices
    /// of [`Instr::GetElem`]. A plain number written into an untracked tensor in range goes into
    /// its buffer, in place when nothing else shares it (copied once first otherwise: copy on
    /// write); anything else runs as [`Instr::SetIndex`] of the chain `index` does.
    SetElem {
        target: Slot,
        value: Operand,
        op: Option<BinaryOp>,
        i: Slot,
        j: Slot,
        index: u32,
    },
    /// `dst = base[index...]`, with the entries at `index` in the unit's index lists.
    GetIndex {
        dst: Slot,
        base: Operand,
        index: u32,
    },
    /// `target[index...] = value`, or `op=` with `op`.
    SetIndex {
        target: Slot,
        index: u32,
        value: Operand,
        op: Option<BinaryOp>,
    },
    /// Checks (and binds) the shape of the value in `slot`; see [`ShapeCheck`].
    CheckShape {
        slot: Slot,
        check: u32,
    },
    /// The zero of a declared type: `false`, `'\0'` or zeros of a shape (a variable or record
    /// field declared `int` or `float` without a value loads its zero as a literal does,
    /// [`Instr::LoadInt`], [`Instr::LoadFloat`]).
    Zero {
        dst: Slot,
        kind: Box<ZeroKind>,
    },
    /// A built-in without a dedicated instruction.
    Builtin {
        dst: Slot,
        call: Box<BuiltinCall>,
    },
}

/// The arguments of a call: a range of the unit's argument pool, so that instructions stay
/// small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgRange {
    pub start: u32,
    pub len: u32,
}

impl ArgRange {
    /// The operands in `pool` (the unit's `args`); empty if the range is outside it.
    pub fn of<'a>(&self, pool: &'a [Operand]) -> &'a [Operand] {
        let start = self.start as usize;
        pool.get(start..start + self.len as usize).unwrap_or_default()
    }
}

/// The value of a declaration without an initializer.
#[derive(Clone, Debug)]
pub enum ZeroKind {
    Bool,
    Char,
    Tensor(Box<[DimSpec]>),
}

/// What a transform call invokes: a function, or a derivative of another callable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Callable {
    Unit(u32),
    /// A function with a custom derivative rule (`derivative` clause): when an argument is
    /// tracked, the call records one operation whose backward rule runs the unit `rule`.
    Custom {
        function: u32,
        rule: u32,
    },
    /// `op` of the callable `inner`, differentiating in the parameters `wrt` (in order; one for
    /// every transform but `grad(f, [i, j])` and `value_and_grad(f, [i, j])`, none for
    /// `checkpoint`).
    Transform {
        op: TransformOp,
        wrt: Box<[usize]>,
        inner: u32,
    },
    /// `checkpoint(segment, n)` of the callable `inner`: the call's last argument is `n`.
    Segments {
        inner: u32,
    },
    /// `vmap` of the callable `inner`: called on slice i of the arguments at `batched` (the
    /// others whole) for each i along their leading axis, each of its `results` stacked.
    Map {
        batched: Box<[usize]>,
        inner: u32,
        results: u32,
    },
}

impl Callable {
    /// The number of consecutive slots a call's result fills from its `dst`: one, or the
    /// elements of the tuple of `grad(f, [i, j])`, `value_and_grad(f)` and a `vmap` of a
    /// function of several results, or the leaves of the record of `grad`, `vjp` and `jacobian`
    /// with respect to a record.
    pub fn results(&self) -> usize {
        match self {
            Callable::Transform {
                op: TransformOp::Grad | TransformOp::Vjp | TransformOp::Jacobian,
                wrt,
                ..
            } => wrt.len().max(1),
            Callable::Transform { op: TransformOp::ValueAndGrad, wrt, .. } => 1 + wrt.len(),
            Callable::Map { results, .. } => *results as usize,
            _ => 1,
        }
    }
}

/// The code of one definition.
#[derive(Debug)]
pub struct Unit {
    /// The name stack traces show: the function's, `test "..."` or `<top level>`.
    pub name: String,
    pub def: DefId,
    /// Parameters occupy the first slots.
    pub n_params: u32,
    /// How many slots the unit's result fills in its caller's frame: 1, or the number of
    /// elements for a function of several results.
    ///
    /// A tuple is never a [`Value`]: its elements live in as many consecutive slots. A call of
    /// a function of several results writes them to `dst`, `dst + 1`, ... (the callee's
    /// [`Instr::ReturnTuple`] moves them there), and a destructuring declaration moves each to
    /// its variable, so returning several results costs what returning them one by one would.
    pub results: u32,
    /// Every slot of a frame: parameters, locals, temporaries.
    pub n_slots: u32,
    pub code: Vec<Instr>,
    /// The source of each instruction, parallel to `code`.
    pub spans: Vec<RelSpan>,
    pub constants: Vec<Value>,
    pub checks: Vec<ShapeCheck>,
    /// The arguments of the unit's calls (see [`ArgRange`]).
    pub args: Vec<Operand>,
    /// The entries of the unit's index expressions.
    pub indices: Vec<IndexChain>,
    /// Instructions before this index check the arguments: their errors are reported at the call.
    pub prologue_end: u32,
    /// Whether a slot may hold a tensor or a boxed value that must be released when the frame
    /// returns (false for functions of integers only, which return without that walk).
    pub holds_heap: bool,
}

/// A whole program: the units of every file it imports, and how to start it.
#[derive(Debug)]
pub struct Program {
    pub units: Vec<Unit>,
    pub callables: Vec<Callable>,
    /// How many global slots the top-level constants of all files need.
    pub globals: u32,
    /// The name of each global, for errors.
    pub global_names: Vec<String>,
    /// The top levels of imported files (only their declarations), dependencies first.
    pub imports: Vec<u32>,
    /// The main file's top level.
    pub main: u32,
    /// The declarations of the main file's top-level constants alone, which tests read.
    pub main_constants: u32,
    /// The main file's tests: name and unit.
    pub tests: Vec<(String, u32)>,
    /// How the program continues a session, when it was lowered by
    /// [`crate::lower::lower_entry`]; `None` for whole programs.
    pub entry: Option<EntryLayout>,
}

/// Where a program lowered as a session's next entry keeps what outlives it (see
/// [`crate::session`]).
///
/// Top-level constants and shape variables live in globals anyway. Each top-level *variable* of
/// the main file keeps its frame slot, so every instruction that reads or writes it is the one a
/// whole program uses, and also gets a *home*: a global the session fills before the run and reads
/// after it. The main unit loads the variables declared before the entry from their homes when it
/// starts and stores every variable into its home when it ends; after a run-time error the
/// interpreter stores the earlier variables from the frame instead (see
/// [`EntryVariable::fits`]), so that an interrupted loop keeps what it computed.
#[derive(Clone, Debug)]
pub struct EntryLayout {
    /// For each global of the program, in order: the file whose top level declares it, and whether
    /// the entry itself declares it.
    pub globals: Vec<(hir::SourceFile, bool)>,
    /// The main file's top-level variables.
    pub variables: Vec<EntryVariable>,
    /// Whether the main unit returns the value of the entry's last statement (see
    /// [`crate::lower::Entry::returns_value`]).
    pub returns_value: bool,
}

/// A top-level variable of a session's main file (see [`EntryLayout`]).
#[derive(Clone, Copy, Debug)]
pub struct EntryVariable {
    /// Its slot in the main unit's frame.
    pub slot: Slot,
    /// Its home global.
    pub global: u32,
    /// What its declared type holds.
    pub kind: VariableKind,
    /// Whether the entry declares it (else it was declared by an earlier entry).
    pub in_entry: bool,
}

/// The kind of value a variable's type holds, to tell a slot that holds the variable's value
/// from one an interrupted operation left empty.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariableKind {
    Int,
    Float,
    Bool,
    Char,
    Tensor,
}

impl EntryVariable {
    /// Whether `value` is a value of this variable's type: an instruction that updates a tensor
    /// in place takes it out of its slot first, so a slot read after an error may hold a
    /// placeholder instead.
    pub fn fits(&self, value: &Value) -> bool {
        match (self.kind, value) {
            (VariableKind::Int, Value::Int(_))
            | (VariableKind::Bool, Value::Bool(_))
            | (VariableKind::Char, Value::Char(_)) => true,
            (VariableKind::Float, Value::Float(_) | Value::TrackedFloat { .. }) => true,
            (VariableKind::Tensor, Value::Tensor(_)) => true,
            (VariableKind::Float | VariableKind::Tensor, Value::Tracked(_)) => true,
            // A rank-0 tensor may hold a number.
            (VariableKind::Tensor, Value::Float(_) | Value::TrackedFloat { .. }) => true,
            _ => false,
        }
    }
}

impl Program {
    /// Checks the invariants the interpreter's fast path relies on instead of checking them per
    /// instruction: every slot an instruction names is inside its unit's frame, every jump lands
    /// inside the unit, every call names a unit with as many parameters as it passes, every
    /// constant and shape check exists, and every unit ends with a `Return` (so execution never
    /// runs past the end).
    pub fn verify(&self) -> Result<(), String> {
        for (index, unit) in self.units.iter().enumerate() {
            unit.verify(self)
                .map_err(|reason| format!("unit {index} ({}): {reason}", unit.name))?;
        }
        for callable in &self.callables {
            let ok = match *callable {
                Callable::Unit(unit) => (unit as usize) < self.units.len(),
                Callable::Custom { function, rule } => {
                    (function as usize) < self.units.len() && (rule as usize) < self.units.len()
                }
                Callable::Transform { inner, .. }
                | Callable::Segments { inner }
                | Callable::Map { inner, .. } => (inner as usize) < self.callables.len(),
            };
            if !ok {
                return Err("a callable names nothing".to_owned());
            }
        }
        let entries = self
            .imports
            .iter()
            .chain([&self.main, &self.main_constants])
            .chain(self.tests.iter().map(|(_, u)| u));
        for &unit in entries {
            match self.units.get(unit as usize) {
                Some(code) if code.n_params == 0 => {}
                _ => return Err("an entry unit is missing or takes parameters".to_owned()),
            }
        }
        Ok(())
    }
}

impl Instr {
    /// The jump target of a jump, for rewriting it.
    pub fn target_mut(&mut self) -> Option<&mut u32> {
        match self {
            Instr::Jump { target }
            | Instr::JumpIf { target, .. }
            | Instr::JumpIntCmp { target, .. }
            | Instr::JumpIntCmpImm { target, .. }
            | Instr::LoopIntImm { target, .. }
            | Instr::LoopInt { target, .. }
            | Instr::JumpFloatCmp { target, .. } => Some(target),
            _ => None,
        }
    }
}

impl Instr {
    /// `dst = a op b` on scalars with a float result: [`Instr::FloatArith`], or the instruction
    /// of `op` when it has one of its own.
    pub fn float_arith(op: BinaryOp, dst: Slot, a: Operand, b: Operand) -> Instr {
        match op {
            BinaryOp::Add => Instr::FloatAdd { dst, a, b },
            BinaryOp::Mul => Instr::FloatMul { dst, a, b },
            op => Instr::FloatArith { op, dst, a, b },
        }
    }

    /// The operator and slots of an instruction [`Instr::float_arith`] makes.
    pub fn as_float_arith(&self) -> Option<(BinaryOp, Slot, Operand, Operand)> {
        Some(match *self {
            Instr::FloatArith { op, dst, a, b } => (op, dst, a, b),
            Instr::FloatAdd { dst, a, b } => (BinaryOp::Add, dst, a, b),
            Instr::FloatMul { dst, a, b } => (BinaryOp::Mul, dst, a, b),
            _ => return None,
        })
    }
}

/// What the slow-path instructions compute, for `--check-nan` (see `interp::trace`).
impl Instr {
    /// The slot an instruction off the fast path writes a computed `float` or tensor to:
    /// `None` for instructions that compute no such value (control flow, integers, printing,
    /// moves of values computed before).
    pub fn result_slot(&self) -> Option<Slot> {
        let slot = match self {
            Instr::LoadConst { dst, .. }
            | Instr::Binary { dst, .. }
            | Instr::Cast { dst, .. }
            | Instr::Matmul { dst, .. }
            | Instr::CallTransform { dst, .. }
            | Instr::GetIndex { dst, .. }
            | Instr::GetElem { dst, .. } => *dst,
            Instr::SetIndex { target, .. } | Instr::SetElem { target, .. } => *target,
            Instr::Builtin { dst, call } => match **call {
                BuiltinCall::IndexStatement { target, .. } => target,
                _ => *dst,
            },
            _ => return None,
        };
        (slot != NO_SLOT).then_some(slot)
    }

    /// The operands an instruction with a [`Instr::result_slot`] reads, in the unit `unit`.
    pub fn operands(&self, unit: &Unit) -> Vec<Operand> {
        match self {
            Instr::Binary { a, b, .. } | Instr::Matmul { a, b, .. } => vec![*a, *b],
            Instr::Cast { a, .. } => vec![*a],
            Instr::CallTransform { args, .. } => args.of(&unit.args).to_vec(),
            Instr::GetIndex { base, .. } | Instr::GetElem { base, .. } => vec![*base],
            Instr::SetIndex { target, value, .. } | Instr::SetElem { target, value, .. } => {
                vec![Operand::copy(*target), *value]
            }
            Instr::Builtin { call, .. } => call.operands(),
            _ => Vec::new(),
        }
    }

    /// What an instruction off the fast path computes, as a message names it.
    pub fn operation(&self) -> &'static str {
        match self {
            Instr::LoadConst { .. } => "a constant",
            Instr::Binary { op, .. } => op.symbol(),
            instr if let Some((op, ..)) = instr.as_float_arith() => op.symbol(),
            Instr::Unary { op, .. } => op.name(),
            Instr::Cast { .. } => "a conversion",
            Instr::Matmul { .. } => "@",
            Instr::CallTransform { .. } => "a derivative",
            Instr::GetIndex { .. } | Instr::GetElem { .. } => "indexing",
            Instr::SetIndex { .. } | Instr::SetElem { .. } => "an indexed assignment",
            Instr::Builtin { call, .. } => call.name(),
            _ => "an operation",
        }
    }
}

impl BuiltinCall {
    /// The operands the call reads.
    pub fn operands(&self) -> Vec<Operand> {
        let dims = |dims: &DimsArg| match dims {
            DimsArg::Ints(ints) => ints.to_vec(),
            DimsArg::Tensor(tensor) => vec![*tensor],
        };
        let items = |items: &[PrintItem]| {
            items
                .iter()
                .flat_map(|item| match item {
                    PrintItem::Value(operand) => vec![*operand],
                    PrintItem::Text(_) => Vec::new(),
                    PrintItem::Format(pieces) => pieces
                        .iter()
                        .filter_map(|piece| match piece {
                            FormatPiece::Value(operand, _) => Some(*operand),
                            FormatPiece::Text(_) | FormatPiece::Literal(..) => None,
                        })
                        .collect(),
                })
                .collect()
        };
        match self {
            BuiltinCall::Reduce { x, axis, .. } | BuiltinCall::Softmax { x, axis, .. } => {
                std::iter::once(*x).chain(*axis).collect()
            }
            BuiltinCall::Construct { dims: d, value, .. } => {
                dims(d).into_iter().chain(*value).collect()
            }
            BuiltinCall::Reshape { x, dims: d, .. } => std::iter::once(*x).chain(dims(d)).collect(),
            BuiltinCall::Transpose { x, axes } => {
                std::iter::once(*x).chain(axes.iter().flat_map(dims)).collect()
            }
            BuiltinCall::Concat { a, b, axis } => vec![*a, *b, *axis],
            BuiltinCall::Stack { a, b }
            | BuiltinCall::Solve(a, b)
            | BuiltinCall::AssertEq { a, b, .. } => vec![*a, *b],
            BuiltinCall::ShapeOf { x, axis } => vec![*x, *axis],
            BuiltinCall::Eye(x)
            | BuiltinCall::Arange(x)
            | BuiltinCall::Rank(x)
            | BuiltinCall::All(x)
            | BuiltinCall::Any(x)
            | BuiltinCall::Seed(x)
            | BuiltinCall::Inv(x)
            | BuiltinCall::Det(x)
            | BuiltinCall::Cholesky(x)
            | BuiltinCall::Trace(x)
            | BuiltinCall::Diag(x)
            | BuiltinCall::Save { x, .. }
            | BuiltinCall::SaveImage { x, .. }
            | BuiltinCall::Backward { y: x, .. }
            | BuiltinCall::GradOf(x)
            | BuiltinCall::StopGradient(x)
            | BuiltinCall::Sizeof(x)
            | BuiltinCall::ToTensor { x, .. } => vec![*x],
            BuiltinCall::Print(printed)
            | BuiltinCall::Write(printed)
            | BuiltinCall::Library { args: printed, .. }
            | BuiltinCall::LibraryTuple { args: printed, .. } => items(printed),
            BuiltinCall::PrintOptions(PrintOptionsArgs::Mode(_)) => Vec::new(),
            BuiltinCall::Chart { chart, .. } => match *chart {
                ChartArgs::Lines(y) => vec![y],
                ChartArgs::Scatter(x, y) | ChartArgs::Histogram { x, bins: y } => vec![x, y],
            },
            BuiltinCall::PrintOptions(PrintOptionsArgs::Values(values)) => values.to_vec(),
            BuiltinCall::SaveNpz { leaves, .. } => leaves.iter().map(|&(_, x)| x).collect(),
            BuiltinCall::Load { .. } | BuiltinCall::LoadNpz { .. } | BuiltinCall::SizeofDims(_) => {
                Vec::new()
            }
            BuiltinCall::Assert { cond, .. } => vec![*cond],
            BuiltinCall::AssertClose { a, b, rtol, atol, .. } => {
                [*a, *b].into_iter().chain(*rtol).chain(*atol).collect()
            }
            BuiltinCall::Gradcheck { args, .. }
            | BuiltinCall::Einsum { operands: args, .. }
            | BuiltinCall::EinsumEllipsis { operands: args, .. }
            | BuiltinCall::StackRows(args)
            | BuiltinCall::FromElements { items: args, .. } => args.to_vec(),
            BuiltinCall::ScaledUpdate { target, scale, x, .. } => vec![*target, *scale, *x],
            BuiltinCall::IndexStatement { target, operands, .. } => {
                std::iter::once(Operand::copy(*target)).chain(operands.iter().copied()).collect()
            }
        }
    }

    /// The built-in's name, as messages write it.
    pub fn name(&self) -> &'static str {
        match self {
            BuiltinCall::Reduce { op, .. } => op.name(),
            BuiltinCall::Softmax { log: false, .. } => "softmax",
            BuiltinCall::Softmax { log: true, .. } => "log_softmax",
            BuiltinCall::Construct { kind, .. } => match kind {
                Construct::Zeros => "zeros",
                Construct::Ones => "ones",
                Construct::Full => "full",
                Construct::Rand => "rand",
                Construct::Randn => "randn",
            },
            BuiltinCall::Eye(_) => "eye",
            BuiltinCall::Arange(_) => "arange",
            BuiltinCall::Reshape { .. } => "reshape",
            BuiltinCall::Transpose { .. } => "transpose",
            BuiltinCall::Concat { .. } => "concat",
            BuiltinCall::Stack { .. } | BuiltinCall::StackRows(_) => "stack",
            BuiltinCall::ShapeOf { .. } => "shape",
            BuiltinCall::Rank(_) => "rank",
            BuiltinCall::All(_) => "all",
            BuiltinCall::Any(_) => "any",
            BuiltinCall::Seed(_) => "seed",
            BuiltinCall::Inv(_) => "inv",
            BuiltinCall::Det(_) => "det",
            BuiltinCall::Solve(..) => "solve",
            BuiltinCall::Cholesky(_) => "cholesky",
            BuiltinCall::Trace(_) => "trace",
            BuiltinCall::Diag(_) => "diag",
            BuiltinCall::Library { builtin, .. } | BuiltinCall::LibraryTuple { builtin, .. } => {
                builtin.name()
            }
            BuiltinCall::Print(_) => "print",
            BuiltinCall::Write(_) => "write",
            BuiltinCall::PrintOptions(_) => "print_options",
            BuiltinCall::Load { csv: false, .. } | BuiltinCall::LoadNpz { .. } => "load",
            BuiltinCall::Load { csv: true, .. } => "load_csv",
            BuiltinCall::Save { .. } | BuiltinCall::SaveNpz { .. } => "save",
            BuiltinCall::Chart { chart: ChartArgs::Lines(_), .. } => "plot",
            BuiltinCall::Chart { chart: ChartArgs::Scatter(..), .. } => "scatter",
            BuiltinCall::Chart { chart: ChartArgs::Histogram { .. }, .. } => "histogram",
            BuiltinCall::SaveImage { .. } => "save_image",
            BuiltinCall::Backward { .. } => "backward",
            BuiltinCall::GradOf(_) => "grad",
            BuiltinCall::StopGradient(_) => "stop_gradient",
            BuiltinCall::Assert { .. } => "assert",
            BuiltinCall::AssertEq { .. } => "assert_eq",
            BuiltinCall::AssertClose { .. } => "assert_close",
            BuiltinCall::Gradcheck { .. } => "gradcheck",
            BuiltinCall::Einsum { .. } | BuiltinCall::EinsumEllipsis { .. } => "einsum",
            BuiltinCall::FromElements { .. } => "a tensor literal",
            BuiltinCall::Sizeof(_) | BuiltinCall::SizeofDims(_) => "sizeof",
            BuiltinCall::ToTensor { .. } => "a conversion to a tensor",
            BuiltinCall::ScaledUpdate { subtract: false, .. } => "+=",
            BuiltinCall::ScaledUpdate { subtract: true, .. } => "-=",
            BuiltinCall::IndexStatement { .. } => "an index statement",
        }
    }
}

impl Unit {
    /// Whether the indices of an element access name slots of the frame and an index chain of
    /// the unit whose entries are integers in slots of the frame, as many as the slots `i` and
    /// `j` say (one, two, or three and more when both are [`NO_SLOT`]).
    fn element_ok(&self, i: Slot, j: Slot, index: u32) -> bool {
        let Some(chain) = self.indices.get(index as usize) else { return false };
        let mut slots = Vec::new();
        for entry in chain.iter().flat_map(|bracket| bracket.iter()) {
            match entry {
                IndexEntry::At(operand) if operand.slot().in_frame(self.n_slots) => {
                    slots.push(operand.slot())
                }
                _ => return false,
            }
        }
        match (i, j) {
            (NO_SLOT, NO_SLOT) => slots.len() > 2,
            (i, NO_SLOT) => slots == [i],
            (i, j) => slots == [i, j],
        }
    }

    fn verify(&self, program: &Program) -> Result<(), String> {
        if self.spans.len() != self.code.len() {
            return Err("spans and code differ in length".to_owned());
        }
        if !matches!(self.code.last(), Some(Instr::Return { .. } | Instr::ReturnTuple { .. })) {
            return Err("the code does not end with a return".to_owned());
        }
        if self.n_params > self.n_slots {
            return Err("more parameters than slots".to_owned());
        }
        if self.n_slots > Slot::MAX {
            return Err("more slots than a frame can have".to_owned());
        }
        let len = self.code.len();
        let slot_ok = |slot: Slot| slot.in_frame(self.n_slots);
        let operand_ok = |operand: Operand| operand.slot().in_frame(self.n_slots);
        let target_ok = |target: u32| (target as usize) < len;
        for (pc, instr) in self.code.iter().enumerate() {
            let ok = match instr {
                Instr::Copy { dst, src } => slot_ok(*dst) && operand_ok(*src),
                Instr::LoadInt { dst, .. } | Instr::LoadFloat { dst, .. } => slot_ok(*dst),
                Instr::LoadConst { dst, index } => {
                    slot_ok(*dst) && (*index as usize) < self.constants.len()
                }
                Instr::LoadGlobal { dst, .. } => slot_ok(*dst),
                Instr::StoreGlobal { src, .. } => operand_ok(*src),
                Instr::RefreshVar { slot } | Instr::Leaf { slot } => slot_ok(*slot),
                Instr::IntArith { dst, a, b, .. } | Instr::IntCmp { dst, a, b, .. } => {
                    slot_ok(*dst) && slot_ok(*a) && slot_ok(*b)
                }
                Instr::IntArithImm { dst, a, .. } => slot_ok(*dst) && slot_ok(*a),
                Instr::JumpIntCmp { a, b, target, .. } => {
                    slot_ok(*a) && slot_ok(*b) && target_ok(*target)
                }
                Instr::JumpIntCmpImm { a, target, .. } => slot_ok(*a) && target_ok(*target),
                Instr::LoopIntImm { slot, target, .. } => slot_ok(*slot) && target_ok(*target),
                Instr::LoopInt { slot, rhs, target, .. } => {
                    slot_ok(*slot) && slot_ok(*rhs) && target_ok(*target)
                }
                Instr::FloatArith { dst, a, b, .. }
                | Instr::FloatAdd { dst, a, b }
                | Instr::FloatMul { dst, a, b }
                | Instr::Binary { dst, a, b, .. }
                | Instr::Matmul { dst, a, b } => slot_ok(*dst) && operand_ok(*a) && operand_ok(*b),
                Instr::FloatCmp { dst, a, b, .. } => slot_ok(*dst) && slot_ok(*a) && slot_ok(*b),
                Instr::JumpFloatCmp { a, b, target, .. } => {
                    slot_ok(*a) && slot_ok(*b) && target_ok(*target)
                }
                Instr::Unary { dst, a, .. } | Instr::Cast { dst, a, .. } => {
                    slot_ok(*dst) && operand_ok(*a)
                }
                Instr::NegInt { dst, a } | Instr::Not { dst, a } => slot_ok(*dst) && slot_ok(*a),
                Instr::Jump { target } => target_ok(*target),
                Instr::JumpIf { cond, target, .. } => slot_ok(*cond) && target_ok(*target),
                Instr::Call { unit, dst, args } => {
                    let callee = program.units.get(*unit as usize);
                    let operands = args.of(&self.args);
                    callee.is_some_and(|c| {
                        c.n_params == args.len
                            && (*dst == NO_SLOT || slot_ok(*dst + (c.results.max(1) - 1)))
                    }) && operands.len() == args.len as usize
                        && operands.iter().all(|&a| operand_ok(a))
                }
                Instr::CallTransform { callable, dst, args } => {
                    let operands = args.of(&self.args);
                    let results = program.callables.get(*callable as usize).map(Callable::results);
                    results.is_some_and(|results| {
                        *dst == NO_SLOT || slot_ok(*dst + (results as u32 - 1))
                    }) && operands.len() == args.len as usize
                        && operands.iter().all(|&a| operand_ok(a))
                }
                Instr::Return { src } => src.is_none_or(operand_ok),
                Instr::ReturnTuple { items } => {
                    let operands = items.of(&self.args);
                    operands.len() == items.len as usize
                        && items.len == self.results
                        && items.len > 1
                        && operands.iter().all(|&a| operand_ok(a))
                }
                Instr::GetIndex { dst, base, index } => {
                    slot_ok(*dst) && operand_ok(*base) && (*index as usize) < self.indices.len()
                }
                Instr::GetElem { dst, base, i, j, index } => {
                    slot_ok(*dst) && operand_ok(*base) && self.element_ok(*i, *j, *index)
                }
                Instr::SetElem { target, value, i, j, index, .. } => {
                    slot_ok(*target) && operand_ok(*value) && self.element_ok(*i, *j, *index)
                }
                Instr::SetIndex { target, value, index, .. } => {
                    slot_ok(*target) && operand_ok(*value) && (*index as usize) < self.indices.len()
                }
                Instr::CheckShape { slot, check } => {
                    slot_ok(*slot) && (*check as usize) < self.checks.len()
                }
                Instr::Zero { dst, .. } => slot_ok(*dst),
                Instr::Builtin { dst, call } => match **call {
                    BuiltinCall::LibraryTuple { results, .. } => {
                        results > 1 && slot_ok(*dst + (results - 1))
                    }
                    BuiltinCall::LoadNpz { ref leaves, .. } => u32::try_from(leaves.len())
                        .ok()
                        .and_then(|n| n.checked_sub(1))
                        .is_some_and(|last| slot_ok(*dst + last)),
                    _ => *dst == NO_SLOT || slot_ok(*dst),
                },
            };
            if !ok {
                return Err(format!("instruction {pc} ({instr:?}) is malformed"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every comparison agrees with Rust's operator on integers and on floats, NaN included.
    #[test]
    fn comparisons_agree_with_the_operators() {
        type Operator = fn(f64, f64) -> bool;
        let cases: [(Cmp, Operator); 6] = [
            (Cmp::Lt, |a, b| a < b),
            (Cmp::Le, |a, b| a <= b),
            (Cmp::Gt, |a, b| a > b),
            (Cmp::Ge, |a, b| a >= b),
            (Cmp::Eq, |a, b| a == b),
            (Cmp::Ne, |a, b| a != b),
        ];
        let floats = [f64::NEG_INFINITY, -1.5, -0.0, 0.0, 2.0, f64::INFINITY, f64::NAN];
        for (cmp, operator) in cases {
            for a in floats {
                for b in floats {
                    assert_eq!(cmp.floats(a, b), operator(a, b), "{a} {cmp:?} {b}");
                }
            }
            for a in [i64::MIN, -3, 0, 3, i64::MAX] {
                for b in [i64::MIN, -3, 0, 3, i64::MAX] {
                    assert_eq!(cmp.ints(a, b), operator(a as f64, b as f64), "{a} {cmp:?} {b}");
                    assert_eq!(cmp.negate().ints(a, b), !cmp.ints(a, b), "{a} {cmp:?} {b}");
                }
            }
        }
    }

    #[test]
    fn instructions_stay_small() {
        assert!(size_of::<Instr>() <= 24, "{}", size_of::<Instr>());
    }

    #[test]
    fn operands_pack_the_take_flag() {
        let seven = Slot::new(7);
        let take = Operand::take(seven);
        assert!(take.is_take() && take.slot() == seven && !take.is_fresh());
        assert!(!Operand::copy(seven).is_take());
        let fresh = Operand::fresh(seven);
        assert!(fresh.is_take() && fresh.is_fresh() && fresh.slot() == seven);
        assert_eq!(format!("{fresh:?}"), "fresh %7");
    }

    /// A slot keeps its index through an operand, and the last slot a frame can have still fits
    /// beside the operand's flags; past it, and from `NO_SLOT`, no slot is in any frame.
    #[test]
    fn slots_are_byte_offsets_of_their_index() {
        let last = Slot::new(Slot::MAX - 1);
        assert_eq!(last.index(), Slot::MAX - 1);
        assert_eq!(last.offset(), (Slot::MAX as usize - 1) * size_of::<Value>());
        assert_eq!(Operand::fresh(last).slot(), last);
        assert!(last.in_frame(Slot::MAX) && !last.in_frame(Slot::MAX - 1));
        assert_eq!(Slot::new(Slot::MAX), NO_SLOT);
        assert_eq!(last + 1, NO_SLOT);
        assert_eq!(NO_SLOT + 0, NO_SLOT);
        assert!(!NO_SLOT.in_frame(Slot::MAX));
        assert!(!Operand::copy(NO_SLOT).slot().in_frame(Slot::MAX));
        assert_eq!(Slot::new(3) + 2, Slot::new(5));
        assert_eq!(format!("{:?} {NO_SLOT:?}", Slot::new(3)), "3 NO_SLOT");
    }
}
