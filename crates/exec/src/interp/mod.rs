//! The interpreter: runs the register code of [`crate::code`] on one growable value stack.
//!
//! Each call pushes a [`Frame`] (its unit, the base of its slots, where the result goes and where
//! the caller resumes) on an explicit call stack, so Nabla recursion never recurses on the native stack
//! and the recursion limit is an ordinary run-time error whatever depth a program asks for. The
//! derivative constructs (`grad(f)(x)`, `jvp`, `vjp`, `hessian`, `jacobian`, `gradcheck`) call back
//! into the interpreter through the drivers of [`crate::autodiff`], which recurses natively once
//! per nesting level of transforms; that depth has its own limit.
//!
//! The loops and calls run on a fast path with unchecked access to the frame's slots, which
//! [`Program::verify`] makes sound; everything else (tensors, built-ins, derivatives) goes through
//! a checked slow path. Errors are built without a span by the operations and located here: the
//! failing instruction's span, and the stack of Nabla calls that led to it.
//!
//! The fast path also reads the current instruction, a called unit and a call's arguments
//! unchecked (and, on a return, the finished frame and its caller, below the run's first frame).
//! Checked (`get`, with an internal error for what verification rules out), those six
//! reads cost 4.0% of the interpreter suite's instructions (callgrind, geometric mean of
//! `bench/interpreter`, 2026-11-27; fib 1.063, collatz 1.077), and 1.7% with the instruction read
//! alone left unchecked (fib 1.048, simpson 1.041, although simpson makes no call: most of the
//! cost is the loop's register allocation, which any change to it moves). So they stay
//! unchecked, each under its `SAFETY:` comment.

mod builtins;
mod checks;
mod format;
mod library;
mod trace;

use std::io::Write;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hir::{Code, HirSpan, TransformOp};

use crate::autodiff::{
    self, AdContext, AdError, AdErrorKind, Site, Summary, Tape, TapeGraph, TraceOptions,
};
use crate::code::{
    ArgRange, BuiltinCall, Callable, CastKind, IndexEntry, Instr, IntOp, NO_SLOT, Operand, Program,
    Slot, Unit,
};
use crate::error::{RuntimeError, StackFrame};
use crate::graph::{Graph, Node as GraphNodeInfo, NodeKind};
use crate::ops::{self, scalar, scalar::Input};
use crate::value::{NodeRef, Primal, Value};
use tensor::{BinaryOp, PrintOptions, Rng};

use checks::Selection;
use trace::Tracer;

/// The limits of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The deepest nesting of Nabla function calls.
    pub max_call_depth: usize,
    /// The deepest nesting of derivative constructs (each level recurses natively).
    pub max_transform_depth: usize,
    /// How many steps a run may take, a step being a loop's jump back or a call; `u64::MAX`,
    /// the default, is no limit. Hosts that run untrusted programs (the fuzz target) bound
    /// their running time with it.
    pub max_steps: u64,
}

impl Limits {
    pub const DEFAULT_CALL_DEPTH: usize = 10_000;
    pub const DEFAULT_TRANSFORM_DEPTH: usize = 256;
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_call_depth: Limits::DEFAULT_CALL_DEPTH,
            max_transform_depth: Limits::DEFAULT_TRANSFORM_DEPTH,
            max_steps: u64::MAX,
        }
    }
}

/// How much native stack a level of derivatives may use before a new segment is allocated, and
/// how big a segment is.
const NATIVE_RED_ZONE: usize = 512 * 1024;
const NATIVE_SEGMENT: usize = 16 * 1024 * 1024;

/// The value stack's initial length, in slots.
const INITIAL_STACK: usize = 4096;

/// The seed of the random generator when a program has not called `seed`.
pub const DEFAULT_SEED: u64 = 0;

/// How many steps (loop iterations and calls) a machine with an interrupt flag takes between two
/// looks at it. The look is off the fast path, so a small slice costs next to nothing, and an
/// interrupt stops a loop within this many iterations (an iteration that runs one long tensor
/// operation finishes it first).
const INTERRUPT_SLICE: u64 = 16;

/// What outlives one run of a session (see [`crate::session`]): the autodiff tape, with the
/// program tape of `var` and `backward` and the gradients of the last `backward`, the random
/// generator, and the options of `print`.
pub(crate) struct Carried {
    pub(crate) tape: Tape,
    pub(crate) rng: Rng,
    pub(crate) print_options: PrintOptions,
}

impl Carried {
    /// The state a program starts with: an empty tape, the generator at its seed, the default
    /// print options.
    pub(crate) fn fresh() -> Carried {
        Carried {
            tape: Tape::new(),
            rng: Rng::from_seed(DEFAULT_SEED),
            print_options: PrintOptions::default(),
        }
    }
}

/// One active call.
#[derive(Clone, Copy, Debug)]
struct Frame<'p> {
    /// The unit running: a reference, so that a return resumes its caller without looking the
    /// unit up.
    unit: &'p Unit,
    /// Where the caller resumes when this call returns: an instruction of the caller's code
    /// (of the frame below), or, for a frame that native code invoked, the instruction after
    /// the one that ran it (see [`Machine::resume`]), only read to place errors.
    ret: *const Instr,
    base: u32,
    /// The caller's slot for the result.
    dst: Slot,
}

/// The running instruction of [`Machine::run_code`]: a pointer into the current unit's code, so
/// that reaching an instruction is one load, with no index to scale; [`Pc::index`] gives its
/// index, for what the rest of the interpreter reads (errors, traces, `step`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Pc(*const Instr);

impl Pc {
    /// Instruction `index` of `unit`.
    #[inline(always)]
    fn at(unit: &Unit, index: usize) -> Pc {
        Pc(unit.code.as_ptr().wrapping_add(index))
    }

    /// The index of the instruction in the code of `unit`, which holds it.
    fn index(self, unit: &Unit) -> usize {
        (self.0 as usize).wrapping_sub(unit.code.as_ptr() as usize) / size_of::<Instr>()
    }
}

/// The next instructions.
impl std::ops::AddAssign<usize> for Pc {
    #[inline(always)]
    fn add_assign(&mut self, n: usize) {
        self.0 = self.0.wrapping_add(n);
    }
}

/// A running program.
pub struct Machine<'p, 'o> {
    program: &'p Program,
    /// Every frame's slots, innermost last. Slots from `top` on hold no tensors (returning
    /// frames release theirs), only numbers left over, which are overwritten before being read.
    stack: Vec<Value>,
    /// The end of the innermost frame's slots.
    top: usize,
    frames: Vec<Frame<'p>>,
    /// The depth below which a call pushes its frame with no other check: within the recursion
    /// limit (the frame of the top level is not a call, so `max_call_depth` calls are allowed)
    /// and within the capacity of `frames`, which never shrinks. One compare in the call
    /// instruction covers both; [`Machine::make_frame_room`] raises it.
    frame_room: usize,
    /// The top-level constants and shape variables of every file; `None` until their declaration
    /// runs, so that a function that reads a constant too early (called from an earlier
    /// constant's initializer) fails instead of reading 0.
    globals: Vec<Option<Value>>,
    tape: Tape,
    rng: Rng,
    /// How `print` lays out tensors; `print_options` sets it.
    print_options: PrintOptions,
    out: &'o mut dyn Write,
    limits: Limits,
    /// The steps left before the next look at [`Machine::interrupt`] and at the budget: all of
    /// [`Limits::max_steps`] at once when there is no interrupt flag, a few at a time otherwise.
    steps_left: u64,
    /// What is left of [`Limits::max_steps`] beyond `steps_left`.
    budget_left: u64,
    /// Set from another thread (a REPL's Ctrl-C handler) to stop the run at its next step.
    interrupt: Option<Arc<AtomicBool>>,
    transform_depth: usize,
    /// Where the innermost frame resumes after the instruction that is running a nested frame
    /// (a derivative, `gradcheck`); becomes the nested frame's return address.
    resume: u32,
    /// The state of a traced run (see [`Machine::trace`]); `None` runs the untraced loop.
    tracer: Option<Box<Tracer>>,
    /// The most recent `backward` that ran, named when a later one finds the graph it released.
    last_backward: Option<HirSpan>,
    /// The elements after the first of the tuple that the last unit invoked from native code
    /// returned (see [`Machine::invoke_results`]).
    returned_rest: Vec<Value>,
    /// How many indexed writes into an untracked tensor found its buffer shared and copied it
    /// first (copy on write); see [`Machine::tensor_copies`].
    tensor_copies: u64,
}

impl AdContext for Machine<'_, '_> {
    type Error = RuntimeError;

    fn tape(&mut self) -> &mut Tape {
        &mut self.tape
    }

    fn run_rule(&mut self, rule: u32, arguments: Vec<Value>) -> Result<Vec<Value>, RuntimeError> {
        stacker::maybe_grow(NATIVE_RED_ZONE, NATIVE_SEGMENT, || {
            self.invoke_results(rule, arguments)
        })
    }

    fn call(&mut self, callable: u32, arguments: Vec<Value>) -> Result<Value, RuntimeError> {
        stacker::maybe_grow(NATIVE_RED_ZONE, NATIVE_SEGMENT, || {
            self.call_callable(callable, arguments)
        })
    }
}

/// The steps of each segment of `checkpoint(segment, n)`: the least `k` with `k * k >= n`, so
/// that about `sqrt(n)` segments of about `sqrt(n)` steps keep about `2 sqrt(n)` records (one
/// per segment on the tape, and one segment's recording at a time during the backward pass), the
/// least for a single level of checkpoints.
fn segment_length(n: i64) -> i64 {
    let mut k = (n.max(1) as f64).sqrt() as i64;
    while k.saturating_mul(k) < n {
        k += 1;
    }
    k.max(1)
}

/// The integer an `int`, `char` or `bool` holds.
#[inline(always)]
fn int_of(value: &Value) -> Option<i64> {
    match *value {
        Value::Int(x) => Some(x),
        _ => small_int_of(value),
    }
}

/// The integer a `char` or `bool` holds: the rare case of [`int_of`].
#[cold]
#[inline(never)]
fn small_int_of(value: &Value) -> Option<i64> {
    match *value {
        Value::Char(x) => Some(i64::from(x)),
        Value::Bool(x) => Some(i64::from(x)),
        _ => None,
    }
}

/// A slot of the frame at `regs`.
///
/// SAFETY: `regs` must point at a live frame of at least `slot + 1` values, and no other
/// reference to that slot may be in use.
#[inline(always)]
unsafe fn reg<'a>(regs: *mut Value, slot: Slot) -> &'a mut Value {
    // SAFETY: the caller's (a live frame of more than `slot` values, no other reference).
    unsafe { &mut *regs.byte_add(slot.offset()) }
}

/// The value of an operand: the slot's value taken, or a copy.
///
/// SAFETY: as for [`reg`].
#[inline(always)]
unsafe fn fetch(regs: *mut Value, operand: Operand) -> Value {
    // SAFETY: `operand` is a slot of the frame (`Program::verify`).
    let slot = unsafe { reg(regs, operand.slot()) };
    if operand.is_take() { std::mem::replace(slot, Value::Int(0)) } else { slot.clone() }
}

/// Moves (when `take`) or copies the value of `from` into `to`; numbers are written in place, and
/// a taken value is swapped rather than copied through a temporary.
#[inline(always)]
fn transfer(to: &mut Value, from: &mut Value, take: bool) {
    match *from {
        Value::Int(x) => set_int(to, x),
        Value::Float(x) => set_float(to, x),
        _ if take => std::mem::swap(to, from),
        _ => *to = from.clone(),
    }
}

/// Writes an argument into `to`, a parameter slot of the frame being entered: the value of
/// `from`, moved out of it when `take`, copied otherwise. A number is copied word for word.
///
/// SAFETY: `from` and `to` point at live slots of the value stack that do not overlap, and `to`
/// lies at or above `Machine::top`, so it holds a number left over (nothing to drop).
#[inline(always)]
unsafe fn pass(to: *mut Value, from: *mut Value, take: bool) {
    // SAFETY: the caller's (two distinct live slots, `to` holding a number).
    unsafe {
        match *from {
            Value::Tensor(_) | Value::Tracked(_) if take => {
                to.write(std::ptr::replace(from, Value::Int(0)))
            }
            Value::Tensor(_) | Value::Tracked(_) => to.write((*from).clone()),
            // Nothing to count or drop: the words themselves.
            _ => to.copy_from_nonoverlapping(from, 1),
        }
    }
}

/// Releases the tensors a returning frame holds. Numbers left above the top are harmless,
/// because every slot is written before it is read.
///
/// SAFETY: as for [`reg`], for slots `0..n_slots`.
#[inline(always)]
unsafe fn release(regs: *mut Value, n_slots: u32) {
    // SAFETY: the frame's slots (the caller's), to which no other reference is in use.
    let frame = unsafe { std::slice::from_raw_parts_mut(regs, n_slots as usize) };
    for slot in frame {
        if matches!(slot, Value::Tensor(_) | Value::Tracked(_)) {
            *slot = Value::Int(0);
        }
    }
}

/// Stores an `int`, overwriting the number in place when the slot already holds one: the common
/// case in loops, and much cheaper than building and moving a whole value.
#[inline(always)]
fn set_int(slot: &mut Value, value: i64) {
    match slot {
        Value::Int(x) => *x = value,
        other => store(other, Value::Int(value)),
    }
}

/// Stores a `float` like [`set_int`].
#[inline(always)]
fn set_float(slot: &mut Value, value: f64) {
    match slot {
        Value::Float(x) => *x = value,
        other => store(other, Value::Float(value)),
    }
}

/// Stores `value` in `slot`, and drops what the slot held out of line when that was a tensor.
/// The value is written before any call: with an ordinary assignment, the old value's drop (a
/// call) came first, so the new number was spilled to the native stack and reloaded around it on
/// every store.
#[inline(always)]
fn store(slot: &mut Value, value: Value) {
    let old = std::mem::replace(slot, value);
    if matches!(old, Value::Tensor(_) | Value::Tracked(_)) {
        drop_value(old);
    } else {
        // A number: nothing to drop.
        std::mem::forget(old);
    }
}

/// Drops a tensor (or tracked value) that [`store`] replaced.
#[cold]
#[inline(never)]
fn drop_value(value: Value) {
    drop(value);
}

/// Stores a float tracked at one level like [`set_int`].
#[inline(always)]
fn set_tracked(slot: &mut Value, value: f64, node: NodeRef) {
    match slot {
        Value::TrackedFloat { value: x, node: n } => {
            *x = value;
            *n = node;
        }
        other => store(other, Value::TrackedFloat { value, node }),
    }
}

/// The number of a float (or `int`) operand of a recorded scalar operation, with its live node
/// and whether it is fresh if it is tracked; `None` for anything but a plain number or a
/// single-level tracked float.
#[inline(always)]
fn scalar_part(tape: &Tape, value: &Value, operand: Operand) -> Option<(f64, Option<Input>)> {
    match *value {
        Value::Float(x) => Some((x, None)),
        // An `int` beside a tracked float converts as `(float)i` does: a constant of the record.
        Value::Int(x) => Some((x as f64, None)),
        Value::TrackedFloat { value, node } if tape.is_live(node) => {
            Some((value, Some(Input { node, fresh: operand.is_fresh() })))
        }
        _ => None,
    }
}

/// `a op b` for floats tracked at one level (or one of them plain), recorded by
/// [`scalar::record_binary`] with the operands' fresh marks, which fuses the records of fresh
/// operands into the new one; the result and its node come back without building a [`Value`]
/// (returning one through memory costs a store-forwarding stall on every operation). `None` when
/// the operands need the general path.
///
/// SAFETY: as for [`reg`], for the slots of `a` and `b`, which may be the same slot.
#[inline(always)]
unsafe fn record_binary(
    tape: &mut Tape,
    op: BinaryOp,
    regs: *mut Value,
    a: Operand,
    b: Operand,
) -> Option<Result<(f64, NodeRef), AdError>> {
    // SAFETY: shared reads of the two slots, which end before anything is written.
    let (x, y) =
        unsafe { (&*regs.byte_add(a.slot().offset()), &*regs.byte_add(b.slot().offset())) };
    let (x, y) = (scalar_part(tape, x, a)?, scalar_part(tape, y, b)?);
    if op.is_comparison() {
        return None;
    }
    scalar::record_binary(tape, op, x, y)
}

/// Stores a `bool` like [`set_int`].
#[inline(always)]
fn set_bool(slot: &mut Value, value: bool) {
    match slot {
        Value::Bool(x) => *x = value,
        other => store(other, Value::Bool(value)),
    }
}

/// The numbers of the two operands of a float comparison ([`Value::as_f64`]), with two plain
/// floats, the common case, tested first: `as_f64` dispatches on each value's kind through a
/// jump table.
///
/// SAFETY: as for [`reg`], for the slots `a` and `b`.
#[inline(always)]
unsafe fn float_operands(regs: *mut Value, a: Slot, b: Slot) -> (Option<f64>, Option<f64>) {
    // SAFETY: shared reads of two slots of the frame (the caller's), which may be the same.
    let (x, y) = unsafe { (&*regs.byte_add(a.offset()), &*regs.byte_add(b.offset())) };
    match (x, y) {
        (&Value::Float(x), &Value::Float(y)) => (Some(x), Some(y)),
        _ => (x.as_f64(), y.as_f64()),
    }
}

/// The number a plain `float` or `int` holds.
#[inline(always)]
fn plain_number(value: &Value) -> Option<f64> {
    match *value {
        Value::Float(x) => Some(x),
        Value::Int(x) => Some(x as f64),
        _ => None,
    }
}

/// The integers of the unit's index chain `index`, for an element access ([`Instr::GetElem`],
/// [`Instr::SetElem`]) of three indices or more; `None` when one is not an integer or they are
/// more than a tensor's element access takes: the general path reports or handles what that was.
///
/// SAFETY: as for [`reg`], for the slots of the chain's entries.
#[inline(never)]
unsafe fn chain_indices(
    unit: &Unit,
    regs: *const Value,
    index: u32,
) -> Option<([i64; tensor::MAX_ELEMENT_RANK], usize)> {
    let chain = unit.indices.get(index as usize)?;
    let mut values = [0; tensor::MAX_ELEMENT_RANK];
    let mut len = 0;
    for entry in chain.iter().flat_map(|bracket| bracket.iter()) {
        let IndexEntry::At(operand) = entry else { return None };
        // SAFETY: `operand` is a slot of the frame (`Program::verify`).
        *values.get_mut(len)? = int_of(unsafe { &*regs.byte_add(operand.slot().offset()) })?;
        len += 1;
    }
    Some((values, len))
}

/// Writes `x` (or, with `op`, `element op x`) into the element at `ix` of the tensor in `slot`,
/// in place; `None` when `slot` holds no untracked tensor, when another value shares the tensor
/// or its buffer (the general path copies it first, and counts the copy), or when `ix` is not one
/// of its elements.
#[inline(always)]
fn write_element(slot: &mut Value, ix: &[i64], x: f64, op: Option<BinaryOp>) -> Option<()> {
    let Value::Tensor(t) = slot else { return None };
    let element = Rc::get_mut(t)?.unshared_element_mut(ix)?;
    *element = match op {
        None => x,
        Some(op) => op.apply(*element, x),
    };
    Some(())
}

#[cold]
#[inline(never)]
fn not_an_integer(value: &Value) -> RuntimeError {
    RuntimeError::internal(format!("an integer operation found {}", value.type_name()))
}

/// The remainder of `a / b` with the sign of `a`, as C computes it; `None` only for `b == 0`.
/// `i64::MIN % -1` is 0, which fits, although the quotient does not.
#[inline(always)]
pub(crate) fn int_rem(a: i64, b: i64) -> Option<i64> {
    if b == -1 { Some(0) } else { a.checked_rem(b) }
}

/// C's integer arithmetic on 64 bits; `None` on overflow, division by zero or a bad shift.
#[inline(always)]
fn checked_int(op: IntOp, a: i64, b: i64) -> Option<i64> {
    match op {
        IntOp::Add => a.checked_add(b),
        IntOp::Sub => a.checked_sub(b),
        IntOp::Mul => a.checked_mul(b),
        IntOp::Div => a.checked_div(b),
        IntOp::Rem => int_rem(a, b),
        IntOp::Shl => {
            let amount = u32::try_from(b).ok().filter(|&s| s < 64)?;
            let shifted = a << amount;
            (shifted >> amount == a).then_some(shifted)
        }
        IntOp::Shr => u32::try_from(b).ok().filter(|&s| s < 64).map(|s| a >> s),
        IntOp::And => Some(a & b),
        IntOp::Xor => Some(a ^ b),
        IntOp::Or => Some(a | b),
    }
}

/// C's integer arithmetic on 64 bits, with overflow, division by zero and bad shifts as errors.
pub(crate) fn int_arith(op: IntOp, a: i64, b: i64) -> Result<i64, RuntimeError> {
    let overflow = |symbol: &str| {
        RuntimeError::new(
            Code::IntegerOverflow,
            format!("integer overflow: {a} {symbol} {b} does not fit in an int"),
        )
    };
    match op {
        IntOp::Add => a.checked_add(b).ok_or_else(|| overflow("+")),
        IntOp::Sub => a.checked_sub(b).ok_or_else(|| overflow("-")),
        IntOp::Mul => a.checked_mul(b).ok_or_else(|| overflow("*")),
        IntOp::Div => {
            if b == 0 {
                let message = format!("integer division by zero: {a} / 0");
                return Err(RuntimeError::new(Code::DivisionByZero, message));
            }
            a.checked_div(b).ok_or_else(|| overflow("/"))
        }
        IntOp::Rem => {
            if b == 0 {
                let message = format!("integer division by zero: {a} % 0");
                return Err(RuntimeError::new(Code::DivisionByZero, message));
            }
            int_rem(a, b).ok_or_else(|| overflow("%"))
        }
        IntOp::Shl | IntOp::Shr => {
            let Ok(amount) =
                u32::try_from(b).map_err(drop).and_then(|s| if s < 64 { Ok(s) } else { Err(()) })
            else {
                let symbol = if op == IntOp::Shl { "<<" } else { ">>" };
                return Err(RuntimeError::new(
                    Code::IntegerOverflow,
                    format!(
                        "shift amount {b} is out of range in {a} {symbol} {b}: it must be 0 to 63"
                    ),
                ));
            };
            if op == IntOp::Shr {
                return Ok(a >> amount);
            }
            let shifted = a << amount;
            if shifted >> amount != a {
                return Err(overflow("<<"));
            }
            Ok(shifted)
        }
        IntOp::And => Ok(a & b),
        IntOp::Xor => Ok(a ^ b),
        IntOp::Or => Ok(a | b),
    }
}

impl<'p, 'o> Machine<'p, 'o> {
    /// A machine for `program` that prints to `out`, or an error if the program's code breaks an
    /// invariant the interpreter relies on (see [`Program::verify`]).
    pub fn new(
        program: &'p Program,
        out: &'o mut dyn Write,
        limits: Limits,
    ) -> Result<Machine<'p, 'o>, RuntimeError> {
        program.verify().map_err(RuntimeError::internal)?;
        Ok(Machine {
            program,
            stack: vec![Value::Int(0); INITIAL_STACK],
            top: 0,
            frames: Vec::with_capacity(64),
            frame_room: 0,
            globals: vec![None; program.globals as usize],
            tape: Tape::new(),
            rng: Rng::from_seed(DEFAULT_SEED),
            print_options: PrintOptions::default(),
            out,
            limits,
            steps_left: limits.max_steps,
            budget_left: 0,
            interrupt: None,
            transform_depth: 0,
            resume: 0,
            tracer: None,
            last_backward: None,
            returned_rest: Vec::new(),
            tensor_copies: 0,
        })
    }

    /// Makes this (not yet started) machine's runs traced: its tape (a session's too, from the
    /// entry on) notes what `options` ask
    /// (the program tape's graph, for [`Machine::take_graph`]), and with `check_nan` every
    /// operation that makes a NaN or an infinity from finite values, forward or in a backward
    /// rule, stops the run with an error at that operation. See `interp::trace`.
    pub fn trace(&mut self, options: TraceOptions) {
        if options == TraceOptions::default() {
            return;
        }
        self.tape.trace(options);
        self.tracer = Some(Box::new(Tracer::new(options.check_nan)));
    }

    /// The graph of the program tape a traced run kept (see [`crate::graph`]), with each node's
    /// site resolved to its source span and call stack.
    pub fn take_graph(&mut self) -> Option<Graph> {
        let recorded: TapeGraph = self.tape.take_graph()?;
        let tracer = self.tracer.as_deref()?;
        let nodes = recorded
            .nodes
            .into_iter()
            .map(|node| {
                let stack = self.stack_of(&tracer.frames_of(node.site));
                let instr = tracer.frames_of(node.site).first().and_then(|&(unit, pc)| {
                    self.program.units.get(unit as usize)?.code.get(pc as usize)
                });
                // A scalar record does not say what it computed; its instruction does.
                let op = match (node.op, instr) {
                    ("float op", Some(instr)) => instr.operation(),
                    (op, _) => op,
                };
                let kind = if node.is_leaf() { NodeKind::Leaf } else { NodeKind::Operation };
                GraphNodeInfo {
                    op,
                    kind,
                    stack,
                    count: node.count,
                    value: node.value,
                    gradient: node.gradient,
                    inputs: node.inputs,
                }
            })
            .collect();
        Some(Graph {
            nodes,
            backward: recorded.backward,
            output: recorded.output,
            records: recorded.records,
            truncated: recorded.truncated,
        })
    }

    /// A tape for a fresh run of a test: traced as this machine's runs are.
    fn fresh_tape(&self) -> Tape {
        match self.tape.trace_options() {
            Some(options) => Tape::traced(options),
            None => Tape::new(),
        }
    }

    /// A machine that continues a session (see [`crate::session`]): it starts with the given
    /// globals and carried state, and stops with an [`RuntimeErrorKind::Interrupted`] error at
    /// its next loop iteration or call once `interrupt` is set.
    ///
    /// [`RuntimeErrorKind::Interrupted`]: crate::error::RuntimeErrorKind::Interrupted
    pub(crate) fn continuing(
        program: &'p Program,
        out: &'o mut dyn Write,
        limits: Limits,
        carried: Carried,
        globals: Vec<Option<Value>>,
        interrupt: Arc<AtomicBool>,
    ) -> Result<Machine<'p, 'o>, RuntimeError> {
        let mut machine = Machine::new(program, out, limits)?;
        if globals.len() != machine.globals.len() {
            return Err(RuntimeError::internal("a session with the wrong number of globals"));
        }
        machine.globals = globals;
        machine.tape = carried.tape;
        machine.rng = carried.rng;
        machine.print_options = carried.print_options;
        machine.interrupt = Some(interrupt);
        machine.steps_left = 0;
        machine.budget_left = limits.max_steps;
        Ok(machine)
    }

    /// What a session keeps of a finished (or failed) run: the carried state and the globals.
    pub(crate) fn into_session_state(mut self) -> (Carried, Vec<Option<Value>>) {
        // A traced entry's notes end with it; the next entry runs on the fast path.
        self.tape.untrace();
        let carried = Carried { tape: self.tape, rng: self.rng, print_options: self.print_options };
        (carried, self.globals)
    }

    /// Runs one unit without arguments (a session's entry, or an imported file's constants) and
    /// returns its value.
    pub(crate) fn run_unit(&mut self, unit: u32) -> Result<Value, RuntimeError> {
        self.invoke(unit, Vec::new())
    }

    /// The autodiff tape, for reports.
    pub fn tape_ref(&self) -> &Tape {
        &self.tape
    }

    /// How many indexed writes (`t[i] = x`, `t[i:j] += v`) into an untracked tensor found its
    /// buffer shared with another value and copied it before writing, over the run: the copies
    /// that copy on write makes. A program whose writes all go in place makes none.
    pub fn tensor_copies(&self) -> u64 {
        self.tensor_copies
    }

    /// Runs the program: the constants of the imported files, then the main file's top level.
    pub fn run(&mut self) -> Result<(), RuntimeError> {
        let program = self.program;
        for &unit in &program.imports {
            self.invoke(unit, Vec::new())?;
        }
        self.invoke(program.main, Vec::new())?;
        Ok(())
    }

    /// Evaluates the constants of the imported files and of the main file's top level, for
    /// [`Machine::run_test`]: the main file's top-level statements other than declarations do
    /// not run.
    pub fn run_constants(&mut self) -> Result<(), RuntimeError> {
        let program = self.program;
        for &unit in &program.imports {
            self.invoke(unit, Vec::new())?;
        }
        self.invoke(program.main_constants, Vec::new())?;
        Ok(())
    }

    /// Runs one test unit in isolation: a fresh tape and random seed 0.
    pub fn run_test(&mut self, unit: u32) -> Result<(), RuntimeError> {
        self.tape = self.fresh_tape();
        if let Some(tracer) = &mut self.tracer {
            tracer.restart();
        }
        self.rng = Rng::from_seed(DEFAULT_SEED);
        self.frames.clear();
        self.stack.iter_mut().for_each(|slot| *slot = Value::Int(0));
        self.top = 0;
        self.transform_depth = 0;
        self.last_backward = None;
        self.invoke(unit, Vec::new())?;
        Ok(())
    }

    /// The error for reading a global whose declaration has not run yet.
    fn unset_global(&self, global: u32) -> RuntimeError {
        let name = self.program.global_names.get(global as usize).map_or("?", String::as_str);
        RuntimeError::new(
            Code::ConstantBeforeDeclaration,
            format!(
                "the constant `{name}` is read before its declaration has run: a function reads it while the top level is still above that declaration"
            ),
        )
    }

    /// Calls a unit with arguments and runs it to its return.
    fn invoke(&mut self, unit: u32, args: Vec<Value>) -> Result<Value, RuntimeError> {
        let depth = self.frames.len();
        let saved_top = self.top;
        let code = self.unit(unit)?;
        self.check_depth()?;
        self.take_step()?;
        if args.len() != code.n_params as usize {
            return Err(RuntimeError::internal("a call with the wrong number of arguments"));
        }
        let new_top = saved_top + code.n_slots as usize;
        self.grow(new_top)?;
        for (slot, value) in self.stack[saved_top..].iter_mut().zip(args) {
            *slot = value;
        }
        // Where the frame below resumes, for stack traces (see `Machine::resume`).
        let ret = self.frames.last().map_or(std::ptr::null(), |frame| {
            frame.unit.code.as_ptr().wrapping_add(self.resume as usize)
        });
        self.frames.push(Frame { unit: code, ret, base: saved_top as u32, dst: NO_SLOT });
        self.top = new_top;
        let result = self.execute(depth + 1);
        if result.is_err() {
            if unit == self.program.main {
                self.keep_entry_variables(saved_top);
            }
            // Unwind the frames the error left, releasing what they hold.
            let end = self.top.max(new_top).min(self.stack.len());
            self.stack[saved_top..end].iter_mut().for_each(|slot| *slot = Value::Int(0));
            self.frames.truncate(depth);
            self.top = saved_top;
        }
        result
    }

    /// [`Machine::invoke`] of a unit that may return a tuple: the elements of its result.
    fn invoke_results(&mut self, unit: u32, args: Vec<Value>) -> Result<Vec<Value>, RuntimeError> {
        let results = self.unit(unit)?.results as usize;
        let first = self.invoke(unit, args)?;
        let mut elements = Vec::with_capacity(results);
        elements.push(first);
        if results > 1 {
            if self.returned_rest.len() + 1 != results {
                return Err(RuntimeError::internal("a tuple of another length returned"));
            }
            elements.append(&mut self.returned_rest);
        }
        Ok(elements)
    }

    /// After a run-time error in a session's entry, stores the variables of earlier entries from
    /// the entry's frame at `base` into their homes, so that what the entry changed before the
    /// error is kept (see [`crate::code::EntryLayout`]). A slot that holds no value of its
    /// variable's type (an in-place update was under way) leaves the home as it was.
    fn keep_entry_variables(&mut self, base: usize) {
        let Some(entry) = &self.program.entry else { return };
        for variable in entry.variables.iter().filter(|v| !v.in_entry) {
            let Some(value) = self.stack.get(base + variable.slot.index() as usize) else {
                continue;
            };
            if variable.fits(value)
                && let Some(home) = self.globals.get_mut(variable.global as usize)
            {
                *home = Some(value.clone());
            }
        }
    }

    fn unit(&self, unit: u32) -> Result<&'p Unit, RuntimeError> {
        let program = self.program;
        program
            .units
            .get(unit as usize)
            .ok_or_else(|| RuntimeError::internal("a call of a unit that does not exist"))
    }

    #[inline(always)]
    fn check_depth(&self) -> Result<(), RuntimeError> {
        // The frame of the top level is not a call, so this allows `max_call_depth` calls.
        if self.frames.len() > self.limits.max_call_depth {
            return Err(self.depth_error());
        }
        Ok(())
    }

    /// Takes one step of the budget, or gives the error for a run past it or interrupted.
    #[inline(always)]
    fn take_step(&mut self) -> Result<(), RuntimeError> {
        match self.steps_left.checked_sub(1) {
            Some(left) => {
                self.steps_left = left;
                Ok(())
            }
            None => self.next_slice(),
        }
    }

    /// Takes the step that ran out of `steps_left`: looks at the interrupt flag, then takes the
    /// next slice of the budget.
    #[cold]
    #[inline(never)]
    fn next_slice(&mut self) -> Result<(), RuntimeError> {
        if self.interrupt.as_ref().is_some_and(|flag| flag.load(Ordering::Relaxed)) {
            return Err(RuntimeError::interrupted());
        }
        if self.budget_left == 0 {
            return Err(self.steps_error());
        }
        let slice = self.budget_left.min(INTERRUPT_SLICE);
        self.budget_left -= slice;
        self.steps_left = slice - 1;
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn steps_error(&self) -> RuntimeError {
        RuntimeError::new(
            Code::LimitReached,
            format!(
                "the program ran past its budget of {} steps (loop iterations and calls)",
                self.limits.max_steps
            ),
        )
    }

    /// A call at depth [`Machine::frame_room`] or deeper: the depth error past the limit,
    /// otherwise more room for frames.
    #[cold]
    #[inline(never)]
    fn make_frame_room(&mut self) -> Result<(), RuntimeError> {
        self.check_depth()?;
        self.frames.reserve(1);
        self.frame_room = self.frames.capacity().min(self.limits.max_call_depth.saturating_add(1));
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn depth_error(&self) -> RuntimeError {
        RuntimeError::new(
            Code::LimitReached,
            format!(
                "recursion is too deep: more than {} nested calls (raise the limit with --max-recursion)",
                self.limits.max_call_depth
            ),
        )
    }

    /// Makes the value stack at least `len` long (new slots hold `0`), within the allocation
    /// limit.
    fn grow(&mut self, len: usize) -> Result<(), RuntimeError> {
        if len <= self.stack.len() {
            return Ok(());
        }
        let bytes = len.saturating_mul(size_of::<Value>());
        if bytes > tensor::allocation_limit() {
            return Err(RuntimeError::new(
                Code::LimitReached,
                format!(
                    "the call stack needs {bytes} bytes, over the allocation limit of {} bytes",
                    tensor::allocation_limit()
                ),
            ));
        }
        let doubled = self.stack.len().saturating_mul(2).max(len);
        self.stack.resize(doubled, Value::Int(0));
        Ok(())
    }

    /// The span of instruction `pc` of the current frame.
    fn span_at(&self, pc: usize) -> Option<HirSpan> {
        let unit = self.frames.last()?.unit;
        let span = unit.spans.get(pc).or(unit.spans.last())?;
        Some(HirSpan { def: unit.def, span: *span })
    }

    /// The error of `backward(y)` whose `y` belongs to a released graph, with `y` as written and
    /// the `backward` that released it.
    fn released_graph(&self, error: AdError, y: &str) -> RuntimeError {
        let by_last = matches!(error.kind(), AdErrorKind::ReleasedGraph { by_last: true });
        let which = if by_last { "the last" } else { "an earlier" };
        let message = format!(
            "backward({y}): the graph of `{y}` was released by {which} `backward`; compute `{y}` \
             again after each `backward`"
        );
        let error = RuntimeError::new(Code::ReleasedGraph, message);
        match self.last_backward {
            Some(span) if by_last => error.with_related(span, "the `backward` that released it"),
            _ => error,
        }
    }

    /// Attaches the span of instruction `pc` of the current frame and the call stack to an error
    /// that has no place yet. Out of line: the interpreter's loop calls it only on the way out.
    #[cold]
    #[inline(never)]
    fn locate(&self, mut error: RuntimeError, pc: usize) -> RuntimeError {
        if error.span.is_some() {
            return error;
        }
        if let Some(site) = error.origin.take() {
            return self.locate_at_site(error, site, pc);
        }
        let mut stack = Vec::with_capacity(self.frames.len());
        let top = self.frames.len().saturating_sub(1);
        for (depth, frame) in self.frames.iter().enumerate().rev() {
            let unit = frame.unit;
            let at = match self.frames.get(depth + 1) {
                Some(callee) if depth != top => Pc(callee.ret).index(unit).saturating_sub(1),
                _ => pc,
            };
            let span = unit
                .spans
                .get(at)
                .or(unit.spans.last())
                .copied()
                .unwrap_or(hir::RelSpan { chunk: 0, range: Default::default() });
            stack.push(StackFrame {
                function: unit.name.clone(),
                span: HirSpan { def: unit.def, span },
            });
        }
        if error.at_call && stack.len() > 1 {
            stack.remove(0);
        }
        error.at_call = false;
        error.span = stack.first().map(|frame| frame.span);
        error.stack = stack;
        error
    }

    /// Places an error at the operation that made the record of `site` (a backward rule's NaN),
    /// with that operation's call stack, followed by the frame running the backward pass at
    /// `pc`.
    #[cold]
    fn locate_at_site(&self, error: RuntimeError, site: Site, pc: usize) -> RuntimeError {
        let Some(tracer) = self.tracer.as_deref() else { return self.locate(error, pc) };
        let mut stack = self.stack_of(&tracer.frames_of(site));
        if stack.is_empty() {
            return self.locate(error, pc);
        }
        let running = self.locate(RuntimeError::internal(String::new()), pc);
        if let Some(frame) = running.stack.first() {
            stack.push(StackFrame {
                function: format!("the backward pass, run from {}", frame.function),
                span: frame.span,
            });
        }
        let mut error = error;
        // A scalar record does not know its operation; the instruction that made it does.
        if let Some(&(unit, pc)) = tracer.frames_of(site).first()
            && let Some(instr) =
                self.program.units.get(unit as usize).and_then(|u| u.code.get(pc as usize))
        {
            error.message =
                error.message.replace("`float op`", &format!("`{}`", instr.operation()));
        }
        error.span = stack.first().map(|frame| frame.span);
        error.stack = stack;
        error
    }

    /// The stack frames of `(unit, instruction)` pairs, innermost first.
    pub(crate) fn stack_of(&self, frames: &[(u32, u32)]) -> Vec<StackFrame> {
        let program = self.program;
        frames
            .iter()
            .filter_map(|&(unit, pc)| {
                let unit_code = program.units.get(unit as usize)?;
                let span = unit_code.spans.get(pc as usize).or(unit_code.spans.last()).copied()?;
                Some(StackFrame {
                    function: unit_code.name.clone(),
                    span: HirSpan { def: unit_code.def, span },
                })
            })
            .collect()
    }

    #[inline(always)]
    fn fetch(&mut self, base: usize, operand: Operand) -> Value {
        let slot = &mut self.stack[base + operand.slot().index() as usize];
        if operand.is_take() { std::mem::replace(slot, Value::Int(0)) } else { slot.clone() }
    }

    #[inline(always)]
    fn set(&mut self, base: usize, slot: Slot, value: Value) {
        self.stack[base + slot.index() as usize] = value;
    }

    /// Remembers where the current frame resumes, so that a stack trace taken during a nested
    /// run (a derivative, `gradcheck`) names this instruction.
    fn mark_resume(&mut self, pc: usize) {
        self.resume = (pc + 1) as u32;
    }

    /// Runs until the frame at depth `stop - 1` returns, and returns its value.
    ///
    /// The instructions of loops and calls run here on a raw pointer to the current frame's
    /// slots; everything else goes through [`Machine::step`] with ordinary indexing.
    ///
    /// SAFETY of the raw accesses: `Program::verify` (run by `Machine::new`) proved that every
    /// slot an instruction names is below its unit's `n_slots`, that jumps stay inside the code,
    /// that calls pass as many arguments as the callee has parameters, and that every unit ends
    /// with a `Return`. The frame occupies `stack[base..base + n_slots]`, which `grow` keeps in
    /// bounds, and `regs` is re-derived from the stack after everything that may reallocate it
    /// (`grow`, and any call into `step`, which may run nested frames).
    fn execute(&mut self, stop: usize) -> Result<Value, RuntimeError> {
        if self.tracer.is_some() {
            self.run_code::<true>(stop)
        } else {
            self.run_code::<false>(stop)
        }
    }

    /// [`Machine::execute`], traced when `TRACE` (see `interp::trace`).
    fn run_code<const TRACE: bool>(&mut self, stop: usize) -> Result<Value, RuntimeError> {
        let Some(&frame) = self.frames.last() else {
            return Err(RuntimeError::internal("nothing to execute"));
        };
        let mut unit = frame.unit;
        let base = frame.base as usize;
        let mut pc = Pc::at(unit, 0);
        if base + unit.n_slots as usize > self.stack.len() || unit.code.is_empty() {
            return Err(RuntimeError::internal("a frame outside the stack"));
        }
        // SAFETY: `base + n_slots <= stack.len()`, checked above.
        let mut regs: *mut Value = unsafe { self.stack.as_mut_ptr().add(base) };
        // The base of the current frame, which is the last of `frames`: read there by the
        // general paths, so that the loop does not carry it.
        macro_rules! base {
            () => {
                self.frame_base()
            };
        }
        // Locates an error at the instruction `$pc` (a `Pc`) of the current frame and returns it.
        macro_rules! fail {
            ($machine:expr, $error:expr, $pc:expr) => {
                return Err($machine.locate($error, $pc.index(unit)))
            };
        }
        // Unwraps a result, or locates its error at `$pc` and returns it.
        macro_rules! attempt {
            ($machine:expr, $result:expr, $pc:expr) => {
                match $result {
                    Ok(value) => value,
                    Err(error) => fail!($machine, RuntimeError::from(error), $pc),
                }
            };
        }
        // Jumps to `$target`; a jump back (a loop's next iteration) takes a step of the budget.
        macro_rules! goto {
            ($exec:lifetime, $target:expr) => {{
                let target = Pc::at(unit, $target as usize);
                if target <= pc
                    && let Err(error) = self.take_step()
                {
                    fail!(self, error, pc);
                }
                pc = target;
                continue $exec;
            }};
        }
        // The `int` in slot `$slot`, if it holds one: the fast path of the integer instructions.
        macro_rules! int {
            ($slot:expr) => {
                // SAFETY: `$slot` is a slot of the frame (`Program::verify`), read before any
                // slot is written.
                match unsafe { &*regs.byte_add($slot.offset()) } {
                    &Value::Int(x) => Some(x),
                    _ => None,
                }
            };
        }
        // Runs the current integer instruction on what its fast path does not take (see
        // `Machine::int_general`) and goes where it leads.
        macro_rules! int_general {
            ($exec:lifetime, $instr:expr) => {
                match self.int_general(base!(), $instr) {
                    Ok(Some(target)) => goto!($exec, target),
                    Ok(None) => {
                        pc += 1;
                        continue $exec;
                    }
                    Err(error) => fail!(self, error, pc),
                }
            };
        }
        // `dst = a op b` on floats (see `Instr::float_arith`): plain floats here, floats tracked at
        // one level recorded in place (see `record_binary`), anything else in `float_arith`. In
        // the arms of `FloatAdd` and `FloatMul`, `$op` is a constant, so that the operation and
        // its partial derivatives compile without a branch on the operator.
        macro_rules! float_arith {
            ($exec:lifetime, $instr:expr, $op:expr, $dst:expr, $a:expr, $b:expr) => {{
                // SAFETY: shared reads of two slots of the frame (`Program::verify`),
                // which may be the same slot; they end before `dst` is written.
                let (x, y) = unsafe {
                    (&*regs.byte_add($a.slot().offset()), &*regs.byte_add($b.slot().offset()))
                };
                if let (&Value::Float(x), &Value::Float(y)) = (x, y) {
                    let z = $op.apply(x, y);
                    if !TRACE || z.is_finite() {
                        // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                        set_float(unsafe { reg(regs, *$dst) }, z);
                        pc += 1;
                        continue $exec;
                    }
                }
                // Floats tracked at one level: recorded here, with the result written in
                // place (see `record_binary`). SAFETY: `a` and `b` are verified slots of
                // this frame, and no reference to them is held across the call.
                if !TRACE
                    && let Some(result) =
                        unsafe { record_binary(&mut self.tape, $op, regs, *$a, *$b) }
                {
                    match result {
                        // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                        Ok((z, node)) => set_tracked(unsafe { reg(regs, *$dst) }, z, node),
                        Err(error) => fail!(self, RuntimeError::from(error), pc),
                    }
                    pc += 1;
                    continue $exec;
                }
                if let Err(error) = self.float_arith::<TRACE>(base!(), $instr) {
                    fail!(self, error, pc);
                }
            }};
        }
        // Evaluates `$body` (an `Option`) with `$ix` bound to the integers of an element access
        // (`Instr::GetElem`, `Instr::SetElem`): the slots `$i` and `$j` (`NO_SLOT` for one
        // index), each length compiled on its own, or the entries of the chain `$index` when
        // both are `NO_SLOT`; `None` when one is not an integer.
        macro_rules! element_at {
            ($i:expr, $j:expr, $index:expr, $ix:ident => $body:expr) => {{
                let (i, j) = ($i, $j);
                if i == NO_SLOT {
                    // SAFETY: the chain's entries are slots of the frame (`Program::verify`).
                    match unsafe { chain_indices(unit, regs, $index) } {
                        Some((values, len)) => {
                            let $ix = &values[..len];
                            $body
                        }
                        None => None,
                    }
                } else {
                    // SAFETY: `i` and `j` are slots of the frame (`Program::verify`).
                    let first = int_of(unsafe { &*regs.byte_add(i.offset()) });
                    match first {
                        None => None,
                        Some(first) if j == NO_SLOT => {
                            let $ix: &[i64] = &[first];
                            $body
                        }
                        // SAFETY: as above.
                        Some(first) => match int_of(unsafe { &*regs.byte_add(j.offset()) }) {
                            Some(second) => {
                                let $ix: &[i64] = &[first, second];
                                $body
                            }
                            None => None,
                        },
                    }
                }
            }};
        }
        'exec: loop {
            if TRACE {
                self.trace_site(pc.index(unit));
            }
            // SAFETY: `pc` points into the code of `unit`: it is a jump target, or follows an
            // instruction that is not the last (the last is a `Return`), or it is the first
            // instruction of a called unit or a caller's return address (`Program::verify`).
            let instr = unsafe { &*pc.0 };
            // Every arm continues the loop, except returns, which leave this block with the
            // operand to return.
            let src: Option<Operand> = 'run: {
                // SAFETY (for every `reg` below): slots are below `n_slots`, see above.
                match instr {
                    Instr::IntArithImm { op, dst, a, imm, .. } => {
                        let (Some(x), imm) = (int!(*a), i64::from(*imm)) else {
                            int_general!('exec, instr)
                        };
                        let Some(value) = checked_int(*op, x, imm) else {
                            int_general!('exec, instr)
                        };
                        // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                        set_int(unsafe { reg(regs, *dst) }, value);
                    }
                    Instr::IntArith { op, dst, a, b } => {
                        let (Some(x), Some(y)) = (int!(*a), int!(*b)) else {
                            int_general!('exec, instr)
                        };
                        let Some(value) = checked_int(*op, x, y) else {
                            int_general!('exec, instr)
                        };
                        // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                        set_int(unsafe { reg(regs, *dst) }, value);
                    }
                    Instr::JumpIntCmpImm { op, a, imm, target } => {
                        let Some(x) = int!(*a) else { int_general!('exec, instr) };
                        if op.ints(x, i64::from(*imm)) {
                            goto!('exec, *target);
                        }
                    }
                    Instr::LoopIntImm { slot, delta, op, imm, target } => {
                        let Some(x) = int!(*slot) else { int_general!('exec, instr) };
                        let Some(next) = x.checked_add(i64::from(*delta)) else {
                            int_general!('exec, instr)
                        };
                        // SAFETY: `slot` is a slot of the frame (`Program::verify`).
                        set_int(unsafe { reg(regs, *slot) }, next);
                        if op.ints(next, i64::from(*imm)) {
                            goto!('exec, *target);
                        }
                    }
                    Instr::LoopInt { slot, delta, op, rhs, target } => {
                        let (Some(x), Some(bound)) = (int!(*slot), int!(*rhs)) else {
                            int_general!('exec, instr)
                        };
                        let Some(next) = x.checked_add(i64::from(*delta)) else {
                            int_general!('exec, instr)
                        };
                        // SAFETY: `slot` is a slot of the frame (`Program::verify`).
                        set_int(unsafe { reg(regs, *slot) }, next);
                        if op.ints(next, bound) {
                            goto!('exec, *target);
                        }
                    }
                    Instr::JumpIntCmp { op, a, b, target } => {
                        let (Some(x), Some(y)) = (int!(*a), int!(*b)) else {
                            int_general!('exec, instr)
                        };
                        if op.ints(x, y) {
                            goto!('exec, *target);
                        }
                    }
                    Instr::Jump { target } => {
                        goto!('exec, *target);
                    }
                    Instr::Copy { dst, src } => {
                        if *dst != src.slot() {
                            // SAFETY: `dst` and `src` are slots of the frame (`Program::verify`).
                            let (to, from) = unsafe { (reg(regs, *dst), reg(regs, src.slot())) };
                            transfer(to, from, src.is_take());
                        }
                    }
                    // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                    Instr::LoadInt { dst, value } => set_int(unsafe { reg(regs, *dst) }, *value),
                    Instr::LoadFloat { dst, value } => {
                        // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                        set_float(unsafe { reg(regs, *dst) }, *value)
                    }
                    Instr::FloatAdd { dst, a, b } => {
                        float_arith!('exec, instr, BinaryOp::Add, dst, a, b)
                    }
                    Instr::FloatMul { dst, a, b } => {
                        float_arith!('exec, instr, BinaryOp::Mul, dst, a, b)
                    }
                    Instr::FloatArith { op, dst, a, b } => {
                        float_arith!('exec, instr, *op, dst, a, b)
                    }
                    Instr::IntCmp { op, dst, a, b } => {
                        let (Some(x), Some(y)) = (int!(*a), int!(*b)) else {
                            int_general!('exec, instr)
                        };
                        // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                        set_bool(unsafe { reg(regs, *dst) }, op.ints(x, y));
                    }
                    Instr::FloatCmp { op, dst, a, b } => {
                        // SAFETY: `a` and `b` are slots of the frame (`Program::verify`).
                        let (x, y) = unsafe { float_operands(regs, *a, *b) };
                        let (Some(x), Some(y)) = (x, y) else {
                            fail!(self, RuntimeError::internal("a comparison of non-numbers"), pc)
                        };
                        // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                        set_bool(unsafe { reg(regs, *dst) }, op.floats(x, y));
                    }
                    Instr::JumpFloatCmp { op, negate, a, b, target } => {
                        // SAFETY: `a` and `b` are slots of the frame (`Program::verify`).
                        let (x, y) = unsafe { float_operands(regs, *a, *b) };
                        let (Some(x), Some(y)) = (x, y) else {
                            fail!(self, RuntimeError::internal("a comparison of non-numbers"), pc)
                        };
                        if op.floats(x, y) != *negate {
                            goto!('exec, *target);
                        }
                    }
                    Instr::JumpIf { cond, when, target } => {
                        // SAFETY: `cond` is a slot of the frame (`Program::verify`).
                        let Some(truth) = unsafe { reg(regs, *cond) }.truth() else {
                            fail!(
                                self,
                                RuntimeError::internal("a condition that is not a scalar"),
                                pc
                            )
                        };
                        if truth == *when {
                            goto!('exec, *target);
                        }
                    }
                    Instr::Unary { op, dst, a } => {
                        // SAFETY: `a` is a slot of the frame (`Program::verify`).
                        let value = unsafe { reg(regs, a.slot()) };
                        if let Value::Float(x) = *value {
                            let y = op.apply(x);
                            // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                            set_float(unsafe { reg(regs, *dst) }, y);
                            if TRACE && !y.is_finite() {
                                let input = [Value::Float(x)];
                                if let Err(error) = self.check_made(instr, &input, &Value::Float(y))
                                {
                                    fail!(self, error, pc);
                                }
                            }
                        } else if !TRACE
                            && let Value::TrackedFloat { value: x, node } = *value
                            && self.tape.is_live(node)
                        {
                            let input = Input { node, fresh: a.is_fresh() };
                            match scalar::record_unary(&mut self.tape, *op, x, input) {
                                // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                                Ok((y, node)) => set_tracked(unsafe { reg(regs, *dst) }, y, node),
                                Err(error) => fail!(self, RuntimeError::from(error), pc),
                            }
                        } else {
                            // As for `FloatArith`, the tape never touches the value stack.
                            // SAFETY: `a` is a slot of the frame (`Program::verify`).
                            let x = unsafe { fetch(regs, *a) };
                            let input = TRACE.then(|| [x.clone()]);
                            let fresh = a.is_fresh() && !TRACE;
                            match ops::unary_fused(&mut self.tape, *op, x, fresh) {
                                // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                                Ok(value) => unsafe { *reg(regs, *dst) = value },
                                Err(error) => fail!(self, RuntimeError::from(error), pc),
                            }
                            // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                            if let Some(input) = input
                                && let Err(error) =
                                    self.check_made(instr, &input, unsafe { reg(regs, *dst) })
                            {
                                fail!(self, error, pc);
                            }
                        }
                    }
                    Instr::RefreshVar { slot } => {
                        // SAFETY: `slot` is a slot of the frame (`Program::verify`).
                        let value = unsafe { reg(regs, *slot) };
                        attempt!(self, self.tape.refresh_var(value), pc);
                    }
                    Instr::NegInt { dst, a } => {
                        let Some(value) = int!(*a).and_then(i64::checked_neg) else {
                            int_general!('exec, instr)
                        };
                        // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                        set_int(unsafe { reg(regs, *dst) }, value);
                    }
                    Instr::Not { dst, a } => {
                        // SAFETY: `a` is a slot of the frame (`Program::verify`).
                        let Some(truth) = unsafe { reg(regs, *a) }.truth() else {
                            fail!(self, RuntimeError::internal("`!` of a tensor"), pc)
                        };
                        // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                        set_bool(unsafe { reg(regs, *dst) }, !truth);
                    }
                    Instr::Call { unit: callee, dst, args } => {
                        // SAFETY: the range was verified to lie inside the pool.
                        let operands = unsafe {
                            unit.args.get_unchecked(
                                args.start as usize..(args.start + args.len) as usize,
                            )
                        };
                        // SAFETY: verified to name an existing unit.
                        let code = unsafe { self.program.units.get_unchecked(*callee as usize) };
                        let depth = self.frames.len();
                        if depth >= self.frame_room
                            && let Err(error) = self.make_frame_room()
                        {
                            fail!(self, error, pc);
                        }
                        if let Err(error) = self.take_step() {
                            fail!(self, error, pc);
                        }
                        let new_base = self.top;
                        let new_top = new_base + code.n_slots as usize;
                        if new_top > self.stack.len() {
                            if let Err(error) = self.grow(new_top) {
                                fail!(self, error, pc);
                            }
                            // `grow` may have moved the stack.
                            regs = self.frame_regs(base!());
                        }
                        let new_regs = self.frame_regs(new_base);
                        for (i, &arg) in operands.iter().enumerate() {
                            // SAFETY: the caller's slots are verified; the callee has at least
                            // as many slots as arguments (verified), inside the stack after
                            // `grow`, from `top` on, so the two frames never overlap.
                            unsafe {
                                pass(
                                    new_regs.add(i),
                                    regs.byte_add(arg.slot().offset()),
                                    arg.is_take(),
                                )
                            };
                        }
                        let ret = pc.0.wrapping_add(1);
                        let frame = Frame { unit: code, ret, base: new_base as u32, dst: *dst };
                        // SAFETY: `depth < frame_room <= frames.capacity()` (see the field).
                        unsafe {
                            self.frames.as_mut_ptr().add(depth).write(frame);
                            self.frames.set_len(depth + 1);
                        }
                        self.top = new_top;
                        unit = code;
                        regs = new_regs;
                        pc = Pc::at(code, 0);
                        continue 'exec;
                    }
                    // A traced run takes the general path, which checks what it made.
                    Instr::GetElem { dst, base: tensor, i, j, index } if !TRACE => {
                        // SAFETY: a shared read of a slot of the frame (`Program::verify`),
                        // which ends before anything is written.
                        // A taken tensor (its last read) goes to the general path, which releases
                        // it: the fast path neither drops a value nor keeps the operand's flag.
                        let read = match unsafe { &*regs.byte_add(tensor.slot().offset()) } {
                            Value::Tensor(t) if !tensor.is_take() => {
                                element_at!(*i, *j, *index, ix => t.element(ix))
                            }
                            _ => None,
                        };
                        match read {
                            // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                            Some(x) => set_float(unsafe { reg(regs, *dst) }, x),
                            None => {
                                if let Err(error) = self.step(unit, base!(), pc, instr) {
                                    fail!(self, error, pc);
                                }
                                regs = self.frame_regs(base!());
                            }
                        }
                    }
                    Instr::SetElem { target, value, op, i, j, index } if !TRACE => {
                        // SAFETY: `value` is a slot of the frame (`Program::verify`).
                        let x = plain_number(unsafe { reg(regs, value.slot()) });
                        // The indices are read (`element_at`) before `target` is borrowed.
                        let written = x.and_then(|x| {
                            element_at!(*i, *j, *index, ix => {
                                // SAFETY: `target` is a slot of the frame (`Program::verify`),
                                // and nothing else borrows it.
                                write_element(unsafe { reg(regs, *target) }, ix, x, *op)
                            })
                        });
                        if written.is_none() {
                            if let Err(error) = self.step(unit, base!(), pc, instr) {
                                fail!(self, error, pc);
                            }
                            regs = self.frame_regs(base!());
                        }
                    }
                    Instr::Return { src } => break 'run *src,
                    Instr::ReturnTuple { items } => {
                        // SAFETY: `regs` points at the slots of this frame, of `unit`, and no
                        // reference to them is in use.
                        break 'run unsafe { self.return_rest(unit, regs, *items, stop) };
                    }
                    // `(int)` of a float and `(float)` of an int; the other casts, and a float
                    // outside the range of an `int` (the error to report), take the general path.
                    Instr::Cast { kind, dst, a } => {
                        // SAFETY: `a` is a slot of the frame (`Program::verify`), read before
                        // `dst` is written.
                        match (kind, unsafe { &*regs.byte_add(a.slot().offset()) }) {
                            (CastKind::Int, &Value::Float(x))
                                if (-INT_LIMIT..INT_LIMIT).contains(&x) =>
                            {
                                // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                                set_int(unsafe { reg(regs, *dst) }, x as i64)
                            }
                            (CastKind::Float, &Value::Int(n)) => {
                                // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                                set_float(unsafe { reg(regs, *dst) }, n as f64)
                            }
                            _ => {
                                if let Err(error) = self.step(unit, base!(), pc, instr) {
                                    fail!(self, error, pc);
                                }
                                regs = self.frame_regs(base!());
                            }
                        }
                    }
                    // Listed rather than matched by `_`: with every kind of instruction named,
                    // the dispatch is a jump table with no range check and no default block
                    // beside it, and the loop's state stays in the same registers across it
                    // (with `_`, every dispatch paid 3-5 register moves and a reload):
                    // 0.950 of the suite's instructions (callgrind, 2026-11-27).
                    Instr::LoadConst { .. }
                    | Instr::LoadGlobal { .. }
                    | Instr::StoreGlobal { .. }
                    | Instr::Leaf { .. }
                    | Instr::Binary { .. }
                    | Instr::Matmul { .. }
                    | Instr::CallTransform { .. }
                    | Instr::GetElem { .. }
                    | Instr::SetElem { .. }
                    | Instr::GetIndex { .. }
                    | Instr::SetIndex { .. }
                    | Instr::CheckShape { .. }
                    | Instr::Zero { .. }
                    | Instr::Builtin { .. } => {
                        if let Err(error) = self.step(unit, base!(), pc, instr) {
                            fail!(self, error, pc);
                        }
                        regs = self.frame_regs(base!());
                    }
                }
                pc += 1;
                continue 'exec;
            };
            let depth = self.frames.len();
            if depth <= stop {
                let Some(finished) = self.frames.pop() else {
                    return Err(RuntimeError::internal("a return without a frame"));
                };
                self.top = finished.base as usize;
                let value = match src {
                    // SAFETY: `operand` is a slot of the frame (`Program::verify`).
                    Some(operand) => unsafe { fetch(regs, operand) },
                    None => Value::Int(0),
                };
                if unit.holds_heap {
                    // SAFETY: the frame's slots are `0..n_slots`, and none is borrowed.
                    unsafe { release(regs, unit.n_slots) };
                }
                return Ok(value);
            }
            // SAFETY: `depth > stop >= 1` (`execute` runs with a frame pushed), so the finished
            // frame and its caller are the last two.
            let (finished, caller) = unsafe {
                (*self.frames.get_unchecked(depth - 1), *self.frames.get_unchecked(depth - 2))
            };
            self.frames.truncate(depth - 1);
            self.top = finished.base as usize;
            let caller_regs = self.frame_regs(caller.base as usize);
            if finished.dst != NO_SLOT {
                // SAFETY: the caller's `dst` was verified; its frame lies below this one.
                let to = unsafe { reg(caller_regs, finished.dst) };
                match src {
                    Some(operand) => {
                        // SAFETY: `operand` is a slot of the frame (`Program::verify`).
                        let from = unsafe { reg(regs, operand.slot()) };
                        transfer(to, from, operand.is_take());
                    }
                    None => set_int(to, 0),
                }
            }
            if unit.holds_heap {
                // SAFETY: the frame's slots are `0..n_slots`, and none is borrowed.
                unsafe { release(regs, unit.n_slots) };
            }
            unit = caller.unit;
            pc = Pc(finished.ret);
            regs = caller_regs;
        }
    }

    /// The elements of a [`Instr::ReturnTuple`] of the innermost frame, of `unit` with its slots
    /// at `regs`, after the first: into the slots after the caller's `dst`, or, for a frame that
    /// native code invoked (at depth `stop`), into `returned_rest`. Returns the first, which
    /// returns as a single result does. Out of line: tuples are rare, and the loop of
    /// [`Machine::run_code`] is smaller without them.
    ///
    /// SAFETY: `regs` points at the slots of the innermost frame, whose unit is `unit`, and no
    /// reference to them is in use.
    #[inline(never)]
    unsafe fn return_rest(
        &mut self,
        unit: &Unit,
        regs: *mut Value,
        items: ArgRange,
        stop: usize,
    ) -> Option<Operand> {
        // SAFETY: the range was verified to lie inside the pool.
        let operands = unsafe {
            unit.args.get_unchecked(items.start as usize..(items.start + items.len) as usize)
        };
        let depth = self.frames.len();
        if depth == stop {
            // A frame that native code invoked (a derivative rule): the elements after the
            // first wait for `invoke_results`.
            self.returned_rest.clear();
            for &item in operands.iter().skip(1) {
                // SAFETY: the operands were verified to lie in the frame (the caller's `regs`).
                let value = unsafe { fetch(regs, item) };
                self.returned_rest.push(value);
            }
        } else if depth >= 2 && depth > stop {
            let finished = self.frames[depth - 1];
            let caller = self.frames[depth - 2];
            if finished.dst != NO_SLOT {
                let caller_regs = self.frame_regs(caller.base as usize);
                for (i, &item) in operands.iter().enumerate().skip(1) {
                    // SAFETY: `dst + results - 1` was verified to lie inside the caller's frame,
                    // which lies below this one; the operands lie in this frame (`regs`).
                    let (to, from) = unsafe {
                        (reg(caller_regs, finished.dst + i as u32), reg(regs, item.slot()))
                    };
                    transfer(to, from, item.is_take());
                }
            }
        }
        operands.first().copied()
    }

    /// The integer instructions on what their fast paths in [`Machine::run_code`] do not take:
    /// a `char` or `bool` operand, an overflow, a division by zero or a bad shift (the error to
    /// report), with ordinary indexing. Returns where the instruction jumps, if it does.
    #[cold]
    #[inline(never)]
    fn int_general(&mut self, base: usize, instr: &Instr) -> Result<Option<u32>, RuntimeError> {
        let int = |machine: &Self, slot: Slot| {
            let value = &machine.stack[base + slot.index() as usize];
            int_of(value).ok_or_else(|| not_an_integer(value))
        };
        let (dst, value) = match *instr {
            Instr::IntArith { op, dst, a, b } => {
                (dst, Value::Int(int_arith(op, int(self, a)?, int(self, b)?)?))
            }
            Instr::IntArithImm { op, dst, a, imm, imm_first } => {
                let (x, imm) = (int(self, a)?, i64::from(imm));
                let (a, b) = if imm_first { (imm, x) } else { (x, imm) };
                (dst, Value::Int(int_arith(op, a, b)?))
            }
            Instr::IntCmp { op, dst, a, b } => {
                (dst, Value::Bool(op.ints(int(self, a)?, int(self, b)?)))
            }
            Instr::NegInt { dst, a } => {
                let x = int(self, a)?;
                let Some(value) = x.checked_neg() else {
                    let message = format!("integer overflow: -({x}) does not fit in an int");
                    return Err(RuntimeError::new(Code::IntegerOverflow, message));
                };
                (dst, Value::Int(value))
            }
            Instr::JumpIntCmp { op, a, b, target } => {
                return Ok(op.ints(int(self, a)?, int(self, b)?).then_some(target));
            }
            Instr::JumpIntCmpImm { op, a, imm, target } => {
                return Ok(op.ints(int(self, a)?, i64::from(imm)).then_some(target));
            }
            Instr::LoopInt { slot, delta, op, rhs, target } => {
                let (x, bound) = (int(self, slot)?, int(self, rhs)?);
                let next = int_arith(IntOp::Add, x, i64::from(delta))?;
                self.set(base, slot, Value::Int(next));
                return Ok(op.ints(next, bound).then_some(target));
            }
            Instr::LoopIntImm { slot, delta, op, imm, target } => {
                let next = int_arith(IntOp::Add, int(self, slot)?, i64::from(delta))?;
                self.set(base, slot, Value::Int(next));
                return Ok(op.ints(next, i64::from(imm)).then_some(target));
            }
            _ => return Err(RuntimeError::internal("an integer instruction expected")),
        };
        self.set(base, dst, value);
        Ok(None)
    }

    /// [`Instr::FloatArith`] on what [`Machine::run_code`] does not take on its fast paths (two
    /// plain floats, and floats tracked at one level, recorded by [`record_binary`]): an `int`
    /// operand, any other value (through [`ops::binary`]), and in a traced run everything,
    /// with the check of what it made.
    #[inline(never)]
    fn float_arith<const TRACE: bool>(
        &mut self,
        base: usize,
        instr: &Instr,
    ) -> Result<(), RuntimeError> {
        let Some((op, dst, a, b)) = instr.as_float_arith() else {
            return Err(RuntimeError::internal("float arithmetic without its instruction"));
        };
        let regs = self.frame_regs(base);
        // SAFETY: `a` is a slot of the frame (`Program::verify`).
        let x = plain_number(unsafe { reg(regs, a.slot()) });
        // SAFETY: `b` is a slot of the frame (`Program::verify`).
        let y = plain_number(unsafe { reg(regs, b.slot()) });
        match (x, y) {
            (Some(x), Some(y)) => {
                let z = op.apply(x, y);
                // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                set_float(unsafe { reg(regs, dst) }, z);
                if TRACE && !z.is_finite() {
                    let inputs = [Value::Float(x), Value::Float(y)];
                    self.check_made(instr, &inputs, &Value::Float(z))?;
                }
            }
            _ => {
                // Anything else: the operation records itself on the tape, which never touches
                // the value stack, so `regs` stays valid.
                // SAFETY: `a` and `b` are slots of the frame (`Program::verify`).
                let (x, y) = unsafe { (fetch(regs, a), fetch(regs, b)) };
                // Each operation here is recorded alone, as a traced run needs
                // (`interp::trace`): fresh operands are fused by `record_binary` only.
                let inputs = TRACE.then(|| [x.clone(), y.clone()]);
                let value = ops::binary(&mut self.tape, op, x, y)?;
                // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                unsafe { *reg(regs, dst) = value };
                if let Some(inputs) = inputs {
                    // SAFETY: `dst` is a slot of the frame (`Program::verify`).
                    self.check_made(instr, &inputs, unsafe { reg(regs, dst) })?;
                }
            }
        }
        Ok(())
    }

    /// The base of the innermost frame.
    #[inline(always)]
    fn frame_base(&self) -> usize {
        self.frames.last().map_or(0, |frame| frame.base as usize)
    }

    /// A pointer to the slots of the frame at `base`.
    #[inline(always)]
    fn frame_regs(&mut self, base: usize) -> *mut Value {
        // SAFETY: frames lie inside the stack (`grow` runs before a frame is pushed).
        unsafe { self.stack.as_mut_ptr().add(base) }
    }

    /// `a op b` on values other than plain numbers.
    #[inline(never)]
    fn binary_slow(
        &mut self,
        base: usize,
        op: BinaryOp,
        dst: Slot,
        a: Operand,
        b: Operand,
    ) -> Result<(), RuntimeError> {
        let x = self.fetch(base, a);
        let y = self.fetch(base, b);
        let value = ops::binary(&mut self.tape, op, x, y)?;
        self.set(base, dst, value);
        Ok(())
    }

    /// Every instruction outside loops and calls, with ordinary checked indexing. Errors come
    /// back without a place; the caller locates them. A run that checks for NaN checks what the
    /// instruction computed (see [`Machine::check_made`]).
    #[inline(never)]
    fn step(
        &mut self,
        unit: &'p Unit,
        base: usize,
        pc: Pc,
        instr: &Instr,
    ) -> Result<(), RuntimeError> {
        let pc = pc.index(unit);
        let checked = self.tracer.as_ref().is_some_and(|tracer| tracer.check_nan);
        let result = match instr.result_slot() {
            Some(slot) if checked => slot,
            _ => return self.step_inner(unit, base, pc, instr),
        };
        let inputs: Vec<Value> = instr
            .operands(unit)
            .iter()
            .filter_map(|operand| self.stack.get(base + operand.slot().index() as usize).cloned())
            .collect();
        self.step_inner(unit, base, pc, instr)?;
        match self.stack.get(base + result.index() as usize) {
            Some(value) => self.check_made(instr, &inputs, value),
            None => Ok(()),
        }
    }

    /// [`Machine::step`] without the check.
    #[inline]
    fn step_inner(
        &mut self,
        unit: &'p Unit,
        base: usize,
        pc: usize,
        instr: &Instr,
    ) -> Result<(), RuntimeError> {
        match instr {
            Instr::LoadConst { dst, index } => {
                let value = unit
                    .constants
                    .get(*index as usize)
                    .cloned()
                    .ok_or_else(|| RuntimeError::internal("a missing constant"))?;
                self.set(base, *dst, value);
            }
            Instr::LoadGlobal { dst, global } => {
                let value = match self.globals.get(*global as usize) {
                    Some(Some(value)) => value.clone(),
                    _ => return Err(self.unset_global(*global)),
                };
                self.set(base, *dst, value);
            }
            Instr::StoreGlobal { global, src } => {
                let value = self.fetch(base, *src);
                if let Some(slot) = self.globals.get_mut(*global as usize) {
                    *slot = Some(value);
                }
            }
            Instr::Leaf { slot } => {
                let value = self.fetch(base, Operand::take(*slot));
                let leaf = self.tape.leaf(value)?;
                self.set(base, *slot, leaf);
            }
            Instr::Binary { op, dst, a, b } => self.binary_slow(base, *op, *dst, *a, *b)?,
            Instr::Cast { kind, dst, a } => {
                let x = self.fetch(base, *a);
                let value = self.cast(*kind, x)?;
                self.set(base, *dst, value);
            }
            Instr::Matmul { dst, a, b } => {
                let x = self.fetch(base, *a);
                let y = self.fetch(base, *b);
                let value = ops::matmul(&mut self.tape, x, y)?;
                self.set(base, *dst, value);
            }
            Instr::CallTransform { callable, dst, args } => {
                let values: Vec<Value> =
                    args.of(&unit.args).iter().map(|&arg| self.fetch(base, arg)).collect();
                self.mark_resume(pc);
                let results = self.call_results(*callable, values)?;
                if *dst != NO_SLOT {
                    for (i, value) in results.into_iter().enumerate() {
                        self.set(base, *dst + i as u32, value);
                    }
                }
            }
            Instr::GetIndex { dst, base: tensor, index }
            | Instr::GetElem { dst, base: tensor, index, .. } => {
                let index = unit.indices.get(*index as usize).map_or(&[][..], |list| &list[..]);
                let x = self.fetch(base, *tensor);
                let value = match self.selection(base, x.shape(), index)? {
                    Selection::Basic(entries) => ops::get(&mut self.tape, x, &entries)?,
                    Selection::Gathered(map) => ops::gather(&mut self.tape, x, &map)?,
                };
                self.set(base, *dst, value);
            }
            Instr::SetIndex { target, index, value, op }
            | Instr::SetElem { target, index, value, op, .. } => {
                let index = unit.indices.get(*index as usize).map_or(&[][..], |list| &list[..]);
                let v = self.fetch(base, *value);
                // The selection is made before the target is taken: an index may read it.
                let shape = self.stack[base + target.index() as usize].shape();
                let selection = self.selection(base, shape, index)?;
                let x = self.fetch(base, Operand::take(*target));
                let shared = match &x {
                    Value::Tensor(t) => Rc::strong_count(t) > 1 || t.shares_buffer(),
                    _ => false,
                };
                let t = &mut self.tape;
                let updated = match (selection, op) {
                    (Selection::Basic(entries), None) => ops::set(t, x, &entries, v)?,
                    (Selection::Basic(entries), Some(op)) => {
                        ops::update_at(t, x, &entries, *op, v)?
                    }
                    (Selection::Gathered(map), None) => ops::set_gathered(t, x, &map, v)?,
                    (Selection::Gathered(map), Some(op)) => {
                        ops::update_gathered(t, x, &map, *op, v)?
                    }
                };
                self.tensor_copies += u64::from(shared);
                self.set(base, *target, updated);
            }
            Instr::CheckShape { slot, check } => {
                let check = unit
                    .checks
                    .get(*check as usize)
                    .ok_or_else(|| RuntimeError::internal("a missing shape check"))?;
                if let Err(error) = self.check_shape(base, *slot, check) {
                    // A failed check of an argument belongs to the call.
                    return Err(if (pc as u32) < unit.prologue_end {
                        error.at_call()
                    } else {
                        error
                    });
                }
            }
            Instr::Zero { dst, kind } => {
                let value = self.zero(base, kind)?;
                self.set(base, *dst, value);
            }
            Instr::Builtin { dst, call } => {
                self.mark_resume(pc);
                let values = match &**call {
                    BuiltinCall::LibraryTuple { builtin, args, results } => {
                        Some(self.library_tuple(base, *builtin, args, *results)?)
                    }
                    BuiltinCall::LoadNpz { path, leaves } => {
                        Some(builtins::load_record(path, leaves)?)
                    }
                    _ => None,
                };
                if let Some(values) = values {
                    for (i, value) in (0..).zip(values) {
                        self.set(base, *dst + i, value);
                    }
                    return Ok(());
                }
                let value = self.builtin(base, call)?;
                if *dst != NO_SLOT {
                    self.set(base, *dst, value);
                }
            }
            _ => return Err(RuntimeError::internal("an instruction outside its path")),
        }
        Ok(())
    }

    /// `(T)x` and the implicit `int` to `float`.
    fn cast(&mut self, kind: CastKind, x: Value) -> Result<Value, RuntimeError> {
        match kind {
            CastKind::Float => match x {
                Value::Int(n) => Ok(Value::Float(n as f64)),
                Value::Char(c) => Ok(Value::Float(f64::from(c))),
                Value::Bool(b) => Ok(Value::Float(f64::from(u8::from(b)))),
                other if other.is_tensor() => Ok(ops::to_float(&mut self.tape, other)?),
                other => Ok(other),
            },
            CastKind::Bool => match x.truth() {
                Some(truth) => Ok(Value::Bool(truth)),
                None => Ok(Value::Bool(number_of(&x)? != 0.0)),
            },
            CastKind::Int => match x {
                Value::Int(n) => Ok(Value::Int(n)),
                Value::Char(c) => Ok(Value::Int(i64::from(c))),
                Value::Bool(b) => Ok(Value::Int(i64::from(b))),
                other => Ok(Value::Int(float_to_int(number_of(&other)?)?)),
            },
            CastKind::Char => {
                let n = match x {
                    Value::Int(n) => n,
                    Value::Char(c) => i64::from(c),
                    Value::Bool(b) => i64::from(b),
                    other => float_to_int(number_of(&other)?)?,
                };
                // As C's conversion to `unsigned char`: the value modulo 256.
                Ok(Value::Char(n.rem_euclid(256) as u8))
            }
        }
    }

    /// Calls a function or a derivative of one with evaluated arguments: the elements of its
    /// result (one, or those of the tuple of `grad(f, [i, j])` and `value_and_grad(f)`).
    fn call_results(
        &mut self,
        callable: u32,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, RuntimeError> {
        let program = self.program;
        match program.callables.get(callable as usize) {
            Some(Callable::Transform {
                op: op @ (TransformOp::Grad | TransformOp::ValueAndGrad),
                wrt,
                inner,
            }) => {
                let (op, inner) = (*op, *inner);
                let (value, mut gradients) = self.in_transform(|machine| {
                    autodiff::value_and_grad(machine, &mut Self::callback(inner), args, wrt)
                })?;
                if op == TransformOp::ValueAndGrad {
                    gradients.insert(0, value);
                }
                Ok(gradients)
            }
            Some(Callable::Map { batched, inner, results }) => {
                self.call_map(batched, *inner, *results as usize, args)
            }
            Some(Callable::Unit(unit)) => self.invoke_results(*unit, args),
            // With respect to a record: a pullback for each of its leaves; the Jacobian of a
            // float, its gradient.
            Some(Callable::Transform { op: TransformOp::Vjp, wrt, inner }) if wrt.len() > 1 => {
                let inner = *inner;
                let mut args = args;
                let Some(cotangent) = args.pop() else {
                    return Err(RuntimeError::internal("a vjp without its cotangent"));
                };
                self.in_transform(|machine| {
                    autodiff::vjp_in(machine, &mut Self::callback(inner), args, wrt, cotangent)
                })
            }
            Some(Callable::Transform { op: TransformOp::Jacobian, wrt, inner })
                if wrt.len() > 1 =>
            {
                let inner = *inner;
                let (_, gradients) = self.in_transform(|machine| {
                    autodiff::value_and_grad(machine, &mut Self::callback(inner), args, wrt)
                })?;
                Ok(gradients)
            }
            _ => Ok(vec![self.call_callable(callable, args)?]),
        }
    }

    /// `vmap(f)(args)` for the function of the callable `inner` and the arguments at `batched`:
    /// `f` called on slice i of each batched argument (the others whole) for each i along their
    /// leading axis, and each of its `results` stacked along a new leading axis. A loop of
    /// calls, not a vectorisation: the slices are recorded reads `x[i]` and the stacks recorded
    /// `stack`s, so every transform differentiates through it and nests with it.
    fn call_map(
        &mut self,
        batched: &[usize],
        inner: u32,
        results: usize,
        mut args: Vec<Value>,
    ) -> Result<Vec<Value>, RuntimeError> {
        let mut batch: Option<(usize, usize)> = None;
        for &k in batched {
            let Some(arg) = args.get(k) else {
                return Err(RuntimeError::internal("a vmap of a missing argument"));
            };
            let Some(&extent) = arg.shape().first() else {
                let message = format!(
                    "`vmap` maps over the leading axis of argument {}, but it is a float",
                    k + 1
                );
                return Err(RuntimeError::new(Code::RankFailure, message));
            };
            match batch {
                Some((first, j)) if first != extent => {
                    let message = format!(
                        "`vmap` takes slice i of its batched arguments together, but argument {} has {first} along its leading axis and argument {} has {extent}",
                        j + 1,
                        k + 1
                    );
                    return Err(RuntimeError::new(Code::DeclaredShapeFailure, message));
                }
                Some(_) => {}
                None => batch = Some((extent, k)),
            }
        }
        let Some((extent, _)) = batch else {
            return Err(RuntimeError::internal("a vmap that maps over nothing"));
        };
        if extent == 0 {
            let message = "`vmap` over an empty batch: with no call of the function, the shape of its results is unknown".to_owned();
            return Err(RuntimeError::new(Code::DimensionFailure, message));
        }
        let mut columns: Vec<ops::RowStack> =
            (0..results).map(|_| ops::RowStack::new(extent)).collect();
        let whole: Vec<Value> = batched.iter().map(|&k| args[k].clone()).collect();
        for i in 0..extent {
            for (&k, x) in batched.iter().zip(&whole) {
                args[k] = ops::get(&mut self.tape, x.clone(), &[tensor::Index::At(i)])?;
            }
            let slice = self.call_results(inner, args.clone())?;
            if slice.len() != results {
                return Err(RuntimeError::internal("a vmap of a function of another arity"));
            }
            for (column, value) in columns.iter_mut().zip(slice) {
                column.push(value)?;
            }
        }
        let mut stacked = Vec::with_capacity(results);
        for column in columns {
            stacked.push(column.finish(&mut self.tape)?);
        }
        Ok(stacked)
    }

    /// Runs `body`, a transform's driver, one level of derivatives deeper (see
    /// [`Limits::max_transform_depth`]).
    fn in_transform<T>(
        &mut self,
        body: impl FnOnce(&mut Self) -> Result<T, RuntimeError>,
    ) -> Result<T, RuntimeError> {
        if self.transform_depth >= self.limits.max_transform_depth {
            return Err(RuntimeError::new(
                Code::LimitReached,
                format!(
                    "derivatives are nested too deeply: more than {} levels of grad, jvp, vjp, hessian or jacobian at once",
                    self.limits.max_transform_depth
                ),
            ));
        }
        self.transform_depth += 1;
        let result = body(self);
        self.transform_depth -= 1;
        result
    }

    /// Calls a function or a derivative of one with evaluated arguments.
    fn call_callable(
        &mut self,
        callable: u32,
        mut args: Vec<Value>,
    ) -> Result<Value, RuntimeError> {
        let program = self.program;
        let Some(target) = program.callables.get(callable as usize) else {
            return Err(RuntimeError::internal("a missing callable"));
        };
        let (op, wrt, inner) = match *target {
            Callable::Unit(unit) => return self.invoke(unit, args),
            Callable::Custom { function, rule } => return self.call_custom(function, rule, args),
            Callable::Transform { op: TransformOp::Checkpoint, inner, .. } => {
                return self.call_checkpoint(inner, args);
            }
            Callable::Segments { inner } => return self.call_segments(inner, args),
            Callable::Map { .. } => {
                let mut results = self.call_results(callable, args)?;
                return match results.len() {
                    1 => Ok(results.swap_remove(0)),
                    _ => Err(RuntimeError::internal("a tuple of results as one value")),
                };
            }
            // Along a tangent of each leaf of a record.
            Callable::Transform { op: TransformOp::Jvp, ref wrt, inner } if wrt.len() > 1 => {
                let tangents = args.split_off(args.len().saturating_sub(wrt.len()));
                return self.in_transform(|machine| {
                    autodiff::jvp_in(machine, &mut Self::callback(inner), args, wrt, tangents)
                });
            }
            Callable::Transform { op, ref wrt, inner } => match **wrt {
                [wrt] if op != TransformOp::ValueAndGrad => (op, wrt, inner),
                _ => return Err(RuntimeError::internal("a tuple of derivatives as one value")),
            },
        };
        self.in_transform(|machine| {
            let mut f = Self::callback(inner);
            match op {
                TransformOp::Grad => autodiff::grad(machine, &mut f, args, wrt),
                TransformOp::Hessian => autodiff::hessian(machine, &mut f, args),
                TransformOp::Jacobian => autodiff::jacobian(machine, &mut f, args),
                TransformOp::Checkpoint | TransformOp::ValueAndGrad | TransformOp::Vmap => {
                    Err(RuntimeError::internal("a checkpoint or tuple as a transform"))
                }
                TransformOp::Jvp | TransformOp::Vjp => match args.pop() {
                    Some(last) if op == TransformOp::Jvp => {
                        autodiff::jvp(machine, &mut f, args, last)
                    }
                    Some(last) => autodiff::vjp(machine, &mut f, args, last),
                    None => Err(RuntimeError::internal("a jvp or vjp without its tangent")),
                },
            }
        })
    }

    /// The callable `inner` as a transform's driver calls it. Each level of derivatives
    /// recurses natively (driver, callback, interpreter); the native stack grows on demand, so
    /// that the depth limit is the only limit whatever thread runs the program.
    fn callback(
        inner: u32,
    ) -> impl FnMut(&mut Machine<'p, 'o>, Vec<Value>) -> Result<Value, RuntimeError> {
        move |machine: &mut Machine<'p, 'o>, args: Vec<Value>| {
            stacker::maybe_grow(NATIVE_RED_ZONE, NATIVE_SEGMENT, || {
                machine.call_callable(inner, args)
            })
        }
    }

    /// A call of the function `function` whose derivative is the rule `rule`: when an argument
    /// is tracked, the call runs on the arguments unboxed at the highest level that tracks one
    /// (so that lower levels record it the same way) and is recorded there as one operation
    /// whose backward rule runs `rule`; the function's own operations are not recorded at that
    /// level.
    fn call_custom(
        &mut self,
        function: u32,
        rule: u32,
        args: Vec<Value>,
    ) -> Result<Value, RuntimeError> {
        match self.tape.lift_vec(args) {
            autodiff::LiftedVec::Plain(args) => self.invoke(function, args),
            autodiff::LiftedVec::Tracked { level, inner, args: inputs } => {
                let output = self.call_custom(function, rule, inner.clone())?;
                let op = autodiff::Op::Custom {
                    rule: autodiff::Rule::Derivative(rule),
                    inputs: inputs.into_boxed_slice(),
                    arguments: inner.into_boxed_slice(),
                    output: output.clone(),
                };
                Ok(self.tape.push(level, op, output)?)
            }
        }
    }

    /// `checkpoint(f)(args)` for the function of `callable`: when an argument is tracked, the
    /// call runs on the arguments unboxed at the highest level that tracks one, so that level
    /// records nothing of it but one operation, whose backward rule runs the call again at a
    /// fresh level and pulls the gradient back through that recording (lower levels record
    /// the call the same way).
    fn call_checkpoint(&mut self, callable: u32, args: Vec<Value>) -> Result<Value, RuntimeError> {
        match self.tape.lift_vec(args) {
            autodiff::LiftedVec::Plain(args) => self.call_callable(callable, args),
            autodiff::LiftedVec::Tracked { level, inner, args: inputs } => {
                let output = self.call_checkpoint(callable, inner.clone())?;
                let op = autodiff::Op::Custom {
                    rule: autodiff::Rule::Recompute(callable),
                    inputs: inputs.into_boxed_slice(),
                    arguments: inner.into_boxed_slice(),
                    output: output.clone(),
                };
                Ok(self.tape.push(level, op, output)?)
            }
        }
    }

    /// `checkpoint(segment, n)(x, args...)` for the function of `callable`, with `n` the last of
    /// `args`: `x = checkpoint(segment)(x, args..., steps)` for consecutive segments of
    /// [`segment_length`] steps (the last one shorter) that add up to `n` (none when `n <= 0`).
    fn call_segments(
        &mut self,
        callable: u32,
        mut args: Vec<Value>,
    ) -> Result<Value, RuntimeError> {
        let (Some(&Value::Int(total)), true) = (args.last(), args.len() >= 2) else {
            return Err(RuntimeError::internal("a checkpointed loop without its step count"));
        };
        let last = args.len() - 1;
        let length = segment_length(total);
        let mut done = 0;
        while done < total {
            let steps = length.min(total - done);
            args[last] = Value::Int(steps);
            let x = self.call_checkpoint(callable, args.clone())?;
            args[0] = x;
            done += steps;
        }
        Ok(args.swap_remove(0))
    }

    /// `gradcheck(f, args...)` for the function of `callable` (its rule's derivative when it
    /// has one), in its first `checked` arguments (the leaves of its first parameter).
    fn gradcheck(
        &mut self,
        callable: u32,
        args: Vec<Value>,
        checked: usize,
    ) -> Result<autodiff::GradcheckReport, RuntimeError> {
        let mut f = move |machine: &mut Machine<'p, 'o>, args: Vec<Value>| {
            machine.call_callable(callable, args)
        };
        let wrt: Vec<usize> = (0..checked.max(1)).collect();
        autodiff::gradcheck_in(self, &mut f, args, &wrt, autodiff::GradcheckConfig::default())
    }

    /// Tells the tape the site of the instruction at `pc` of the current frame, in a traced run.
    #[inline(never)]
    fn trace_site(&mut self, pc: usize) {
        let Some(tracer) = self.tracer.as_deref_mut() else { return };
        let (program, frames) = (self.program, &self.frames);
        // Each frame as its unit's number and its return address as an index into the code of
        // the frame below (the outermost frame's is not read).
        let stack = tracer.sync((0..frames.len()).map(|depth| {
            let frame = &frames[depth];
            let ret = match depth.checked_sub(1) {
                Some(below) => Pc(frame.ret).index(frames[below].unit) as u32,
                None => 0,
            };
            (unit_index(program, frame.unit), ret)
        }));
        self.tape.set_site(Site { stack, pc: pc as u32 });
    }

    /// `--check-nan`: an error when `instr` made the value `made`, holding a NaN or an
    /// infinity, from `inputs`. The inputs are finite, because every value was checked as it
    /// was made; the error lists them.
    fn check_made(
        &self,
        instr: &Instr,
        inputs: &[Value],
        made: &Value,
    ) -> Result<(), RuntimeError> {
        if !self.tracer.as_ref().is_some_and(|tracer| tracer.check_nan) {
            return Ok(());
        }
        let Some(result) = Summary::of(made) else { return Ok(()) };
        if result.is_finite() {
            return Ok(());
        }
        Err(non_finite_error(instr.operation(), inputs, &result))
    }

    fn print(&mut self, text: &str) {
        // A closed pipe (`nabla run x.nb | head`) ends the output, not the program.
        let _ = self.out.write_all(text.as_bytes());
    }

    /// Pushes what was printed to its destination, for `write`, whose line has no newline to
    /// trigger a terminal's line buffer.
    fn flush_output(&mut self) {
        let _ = self.out.flush();
    }
}

/// The number of `unit`, one of the units of `program`.
fn unit_index(program: &Program, unit: &Unit) -> u32 {
    let offset = (unit as *const Unit as usize).wrapping_sub(program.units.as_ptr() as usize);
    (offset / size_of::<Unit>()) as u32
}

/// The error of `--check-nan` for the operation `operation`, which made `result` from `inputs`.
#[cold]
fn non_finite_error(operation: &str, inputs: &[Value], result: &Summary) -> RuntimeError {
    let what = result.non_finite_kind();
    let message = format!("`{operation}` made {what} from finite values (--check-nan)");
    let mut error = RuntimeError::new(Code::DerivativeFailure, message);
    for input in inputs.iter().filter_map(Summary::of) {
        error = error.with_note(format!("input: {} {input}", input.type_text()));
    }
    error.with_note(format!("result: {} {result}", result.type_text()))
}

/// The number a scalar or one-element tensor holds.
fn number_of(value: &Value) -> Result<f64, RuntimeError> {
    match value.primal() {
        Primal::Tensor(tensor) => Ok(tensor.to_scalar()?),
        _ => value.as_f64().ok_or_else(|| RuntimeError::internal("a number expected")),
    }
}

/// 2^63, exactly representable: every float below it in magnitude truncates into an `i64`, and
/// `x as i64` of such a float is C's truncation toward zero.
const INT_LIMIT: f64 = 9_223_372_036_854_775_808.0;

/// A float truncated toward zero, as C converts it; NaN and values out of range are errors.
fn float_to_int(x: f64) -> Result<i64, RuntimeError> {
    if !(-INT_LIMIT..INT_LIMIT).contains(&x) {
        return Err(RuntimeError::new(
            Code::IntConversion,
            format!(
                "cannot convert {} to int: it is not a number in the range of a 64-bit int",
                tensor::format_float(x)
            ),
        ));
    }
    Ok(x.trunc() as i64)
}
