//! The tape: one recording per active differentiation level, the program level's `var` leaves,
//! `backward`, `grad(x)` and the release of the graph.
//!
//! Level 0 is the program tape of language.md 3.1; each transform (`grad(f)`, `jvp(f)`, ...) opens
//! the next level for the duration of its call (3.2). A recording is a [`Records`]: records
//! appended in execution order, so reverse order is a topological order for the backward pass.
//!
//! # Releasing the graph: serials instead of a walk over the interpreter's slots
//!
//! Every level numbers its records with serials that only grow, and a box names the serial of the
//! node that made it. `backward` (and the end of a transform) *releases* a recording by moving its
//! level's `base` past the last serial and clearing the records, keeping their allocations, so
//! the tape of a training loop returns to length 0 after every `backward` and its memory stays
//! flat. A box whose serial is below its level's `base` is *stale*: operations treat it as the
//! constant it holds, so nothing has to find and rewrite the values the interpreter still holds.
//! The serial stays in the box, which is what lets `grad(x)` find the gradient of an intermediate
//! after the release.
//!
//! `var` variables must instead become fresh leaves of the new recording. The interpreter calls
//! [`Tape::refresh_var`] on a `var` slot before reading it (a compare and a branch when the slot
//! is live): a stale or untracked value there becomes a new leaf that remembers the serial it
//! continues, so `w -= 0.1 * grad(w)` reads the gradient of the `w` that was differentiated,
//! whichever of its two reads runs first. [`Tape::release`] does the same eagerly for a set of
//! slots, for callers that prefer to walk them once after `backward`.

use std::rc::Rc;

use super::adjoints::{Adjoint, Adjoints, Uniform};
use super::backward::{Keep, Words};
use super::chunk::{self, Chunk};
use super::error::{AdError, AdErrorKind};
use super::op::{Arg, Op};
use super::store::{RecStore, Records, Scalar};
use super::trace::{RecordLog, Site, Summary, TapeGraph, TraceOptions};
use crate::value::{NodeRef, Primal, Tracked, Value};
use tensor::Tensor;

/// The gradients of the most recent `backward`: one adjoint per node of the released recording
/// (none where no gradient flowed).
#[derive(Debug)]
struct Gradients {
    base: u64,
    adjoints: Adjoints,
}

impl Gradients {
    fn get(&self, serial: u64) -> Option<Adjoint> {
        let index = usize::try_from(serial.checked_sub(self.base)?).ok()?;
        if index >= self.adjoints.len() {
            return None;
        }
        self.adjoints.get(index)
    }
}

/// The autodiff state of one program run: the program tape, the transform levels above it and the
/// gradients of the last `backward`.
#[derive(Debug)]
pub struct Tape {
    /// One recording per level that has ever been open; `levels[..depth]` are active. Closed
    /// levels keep their allocations and their `base` for reuse.
    levels: Vec<Records>,
    depth: usize,
    /// For every level in `levels`, the first serial that is live: its `base` while the level is
    /// active, `u64::MAX` (no serial) once it is closed. [`Tape::is_live`] reads only this; every
    /// change of a level's `base` or of `depth` goes through [`Tape::set_floor`].
    floors: Vec<u64>,
    gradients: Option<Gradients>,
    /// Chunks no recording or adjoint store holds, for the next one that needs a chunk: a loop of
    /// recordings, backward passes and transforms reuses the memory it has faulted in, and the
    /// program tape's backward pass writes its adjoints into the chunks of the records it has
    /// read (see [`chunk`](super::chunk)).
    free_chunks: Vec<Chunk>,
    /// Operations recorded over the whole run, and tape words taken by recordings since released
    /// (net of fusion), for [`Tape::bytes_per_operation`]; the active recordings' words are their
    /// lengths, so that recording need not count them.
    operations: u64,
    released_words: u64,
    /// What the tape notes about its records for a host that asked (see `trace`); `None`, the
    /// default, costs nothing on the recording paths.
    log: Option<Box<RecordLog>>,
}

/// A program-level backward pass prepared by [`Tape::begin_backward`]: the released records, the
/// serial of their first node, the node of `y`, the seed and the store for the adjoints.
pub struct ProgramPass {
    pub(crate) records: Records,
    pub(crate) base: u64,
    pub(crate) output: usize,
    pub(crate) seed: Adjoint,
    pub(crate) adjoints: Adjoints,
}

impl ProgramPass {
    /// How the program's pass walks: every adjoint kept for `grad(x)`, the words given back.
    pub(crate) const MODE: (Keep, Words) = (Keep::Everything, Words::GivenBack);
}

/// An operand of a scalar operation being recorded (see [`Tape::fuse1`]): its live node,
/// the operation's partial derivative with respect to it, and whether the operand is a fresh
/// temporary: the result of a scalar operation that nothing but this operand refers to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Term {
    pub(crate) node: NodeRef,
    pub(crate) partial: f64,
    pub(crate) fresh: bool,
}

impl Default for Tape {
    fn default() -> Tape {
        Tape::new()
    }
}

/// Operands prepared for recording: either none is tracked at a live level (and every stale box
/// is gone), or `level` is the highest live level among them, the operands tracked there are
/// unboxed into `inner` with their nodes in `args`, and the others are unchanged with
/// [`Arg::CONSTANT`].
pub(crate) enum Lifted<const N: usize> {
    Plain([Value; N]),
    Tracked { level: usize, inner: [Value; N], args: [Arg; N] },
}

/// [`Lifted`] for a variable number of operands.
pub(crate) enum LiftedVec {
    Plain(Vec<Value>),
    Tracked { level: usize, inner: Vec<Value>, args: Vec<Arg> },
}

impl Tape {
    pub fn new() -> Tape {
        Tape {
            levels: vec![Records::default()],
            depth: 1,
            floors: vec![0],
            gradients: None,
            free_chunks: Vec::new(),
            operations: 0,
            released_words: 0,
            log: None,
        }
    }

    /// A tape that notes what `options` ask about its records (see `trace`): where each was
    /// made, and the program tape's graph. Scalar records then all take the out-of-line path,
    /// and the host must not ask for fusion (fresh operands): each operation is its own record.
    pub fn traced(options: TraceOptions) -> Tape {
        let mut tape = Tape::new();
        tape.trace(options);
        tape
    }

    /// Makes this tape note what `options` ask from now on, as [`Tape::traced`] does from the
    /// start (a REPL traces one entry against the session's tape). The records it already holds
    /// are not noted: a graph shows no edges from them.
    pub fn trace(&mut self, options: TraceOptions) {
        if options == TraceOptions::default() {
            return;
        }
        let records = self.levels[0].ops.len();
        self.log = Some(Box::new(RecordLog::started_after(options, records)));
        self.set_slow(true);
    }

    /// Stops noting (see [`Tape::trace`]): what the log kept is dropped, and scalar records take
    /// the fast path again.
    pub fn untrace(&mut self) {
        if self.log.take().is_some() {
            self.set_slow(false);
        }
    }

    fn set_slow(&mut self, slow: bool) {
        for records in &mut self.levels {
            records.slow = slow;
            records.fit_room();
        }
    }

    /// What the tape was asked to note, if anything.
    pub fn trace_options(&self) -> Option<TraceOptions> {
        self.log.as_ref().map(|log| log.options)
    }

    /// Whether backward passes check their rules for NaN and infinities.
    pub(crate) fn checks_nan(&self) -> bool {
        self.log.as_ref().is_some_and(|log| log.options.check_nan)
    }

    /// Sets the site that the records appended from now on are noted with (see `trace`); does
    /// nothing on a tape without trace options.
    #[inline]
    pub fn set_site(&mut self, site: Site) {
        if let Some(log) = &mut self.log {
            log.site = site;
        }
    }

    /// The site a record of `level` with `serial` was noted with.
    pub(crate) fn site_of(&self, level: usize, serial: u64) -> Option<Site> {
        self.log.as_ref()?.site_of(level, serial)
    }

    /// The program tape's graph the trace options asked for (see [`super::trace::GraphOptions`]),
    /// taken: the one a `backward` differentiated, or the recording so far; `None` when the
    /// tape keeps no graph.
    pub fn take_graph(&mut self) -> Option<TapeGraph> {
        self.log.as_mut()?.take_graph()
    }

    /// The average bytes of tape records per recorded operation so far in this run (several
    /// scalar operations fused into one record share it), or `None` before any recording.
    pub fn bytes_per_operation(&self) -> Option<f64> {
        let active: usize = self.levels.iter().map(|records| records.ops.len()).sum();
        let words = self.released_words + active as u64;
        (self.operations > 0)
            .then(|| (words * size_of::<u64>() as u64) as f64 / self.operations as f64)
    }

    /// The bytes every active recording takes now (records, operations, saved values).
    pub fn recorded_bytes(&self) -> usize {
        self.levels.iter().map(Records::bytes).sum()
    }

    /// An error when the recordings plus `more` bytes would exceed the allocation limit.
    fn check_memory(&self, more: usize) -> Result<(), AdError> {
        let limit_bytes = tensor::allocation_limit();
        let bytes = self.recorded_bytes().saturating_add(more);
        if bytes > limit_bytes {
            return Err(AdErrorKind::TapeMemory { bytes: bytes as u128, limit_bytes }.into());
        }
        Ok(())
    }

    /// The number of records on the program tape (level 0) since the last release.
    pub fn program_len(&self) -> usize {
        self.levels.first().map_or(0, |records| records.ops.len())
    }

    /// How many levels are active: 1 at the program level, one more inside each transform.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The size of one tape word in bytes, for reports: a scalar operation of one recorded input
    /// takes one word when the input is the node just before and two otherwise, one of two
    /// recorded inputs four (see `store.rs`).
    pub fn record_bytes() -> usize {
        size_of::<u64>()
    }

    /// The bytes a backward pass's adjoint store takes per word whose adjoint is a plain float
    /// (other adjoints take a value in a side pool besides), for reports.
    pub fn adjoint_bytes() -> usize {
        size_of::<f64>()
    }

    /// Whether a box was recorded on a level that is active and has not been released since.
    #[inline]
    pub(crate) fn is_live(&self, node: NodeRef) -> bool {
        let level = node.level();
        let live = self.floors.get(level).is_some_and(|&floor| node.serial() >= floor);
        debug_assert_eq!(
            live,
            level < self.depth && self.levels.get(level).is_some_and(|r| node.serial() >= r.base),
            "a stale liveness floor"
        );
        live
    }

    /// Makes `floors[level]` agree with the level's `base` and whether it is active.
    fn set_floor(&mut self, level: usize) {
        let floor = match self.levels.get(level) {
            Some(records) if level < self.depth => records.base,
            _ => u64::MAX,
        };
        if let Some(slot) = self.floors.get_mut(level) {
            *slot = floor;
        }
    }

    // ----- `var`, `backward`, `grad(x)` -----

    /// Declares a `var`: a new leaf of the program tape holding `value`'s number or tensor (an
    /// `int` is converted to `float`). Tracking by open transforms is kept, so a `var` declared
    /// inside a function being differentiated still carries the transform's perturbation.
    pub fn leaf(&mut self, value: Value) -> Result<Value, AdError> {
        self.leaf_with_origin(value, None)
    }

    /// Makes sure a `var` slot holds a live leaf or intermediate of the current program tape; see
    /// the module documentation. Call it on every read of a `var` variable.
    #[inline]
    pub fn refresh_var(&mut self, slot: &mut Value) -> Result<(), AdError> {
        let node = program_node(slot);
        if node.is_some_and(|node| self.is_live(node)) {
            return Ok(());
        }
        let origin = node.map(NodeRef::serial);
        *slot = self.leaf_with_origin(slot.clone(), origin)?;
        Ok(())
    }

    /// Refreshes every `var` slot among `slots` at once (see [`Tape::refresh_var`]); the other
    /// slots need nothing, because their stale boxes already act as constants.
    pub fn release<'a>(
        &mut self,
        slots: impl IntoIterator<Item = (&'a mut Value, bool)>,
    ) -> Result<(), AdError> {
        for (slot, is_var) in slots {
            if is_var {
                self.refresh_var(slot)?;
            }
        }
        Ok(())
    }

    fn leaf_with_origin(&mut self, value: Value, origin: Option<u64>) -> Result<Value, AdError> {
        match value {
            Value::TrackedFloat { value, node } if node.level() > 0 && self.is_live(node) => {
                let inner = self.leaf_with_origin(Value::Float(value), origin)?;
                Ok(Value::Tracked(Rc::new(Tracked::new(inner, node))))
            }
            Value::Tracked(tracked)
                if tracked.node().level() > 0 && self.is_live(tracked.node()) =>
            {
                let node = tracked.node();
                let inner = self.leaf_with_origin(Tracked::into_value(tracked), origin)?;
                Ok(Value::Tracked(Rc::new(Tracked::new(inner, node))))
            }
            other => {
                let plain = match other.detach() {
                    Value::Int(x) => Value::Float(x as f64),
                    plain @ (Value::Float(_) | Value::Tensor(_)) => plain,
                    plain => {
                        return Err(AdErrorKind::NotDifferentiable {
                            transform: "var",
                            found: plain.type_name(),
                        }
                        .into());
                    }
                };
                self.push_op(0, Op::Leaf { origin }, plain)
            }
        }
    }

    /// `backward(y)`: differentiates the sum of `y`'s elements with respect to every node recorded
    /// on the program tape since the last release, keeps every node's gradient for `grad(x)`
    /// (replacing the previous ones), and releases the graph.
    ///
    /// The seed, ones of `y`'s shape, is a [`Uniform`] adjoint: a tensor `y` can be as large as
    /// the forward pass allows, and the rules that know a uniform gradient (contractions, sums,
    /// broadcasts, element-wise operations) never need its elements.
    ///
    /// It runs only at the program level: inside a transform it is an error, because the values
    /// there are functions of the transform's argument and a program-level gradient of them would
    /// silently mix the two levels. A `y` that depends on no `var` is an error, as in PyTorch: it
    /// almost always means the `var` was forgotten.
    pub fn backward(&mut self, y: &Value) -> Result<(), AdError> {
        let pass = self.begin_backward(y)?;
        super::transform::program_backward(self, pass)
    }

    /// The first half of [`Tape::backward`]: checks `y`, takes the program tape's records
    /// (releasing the graph) and prepares the pass, which [`super::program_backward`] runs
    /// with the context that runs custom rules, ending with [`Tape::end_backward`].
    pub fn begin_backward(&mut self, y: &Value) -> Result<ProgramPass, AdError> {
        if self.depth > 1 {
            return Err(AdErrorKind::BackwardInsideTransform.into());
        }
        if !y.is_differentiable() {
            return Err(AdErrorKind::Operand { op: "backward", found: y.type_name() }.into());
        }
        let Some(node) = program_node(y).filter(|&node| self.is_live(node)) else {
            // A program-level box that is not live was recorded before a `backward` moved the
            // level's base past it.
            return Err(match program_node(y) {
                Some(node) => AdErrorKind::ReleasedGraph {
                    by_last: self.gradients.as_ref().is_some_and(|g| node.serial() >= g.base),
                },
                None => AdErrorKind::BackwardWithoutVar,
            }
            .into());
        };
        let seed = match y.primal() {
            Primal::Tensor(tensor) => Adjoint::Uniform(Uniform::new(1.0, tensor.shape())),
            _ => Adjoint::Value(Value::Float(1.0)),
        };
        let records = std::mem::take(&mut self.levels[0]);
        let base = records.base;
        self.released_words += records.ops.len() as u64;
        self.levels[0].base = base + records.ops.len() as u64;
        self.set_floor(0);
        let output = usize::try_from(node.serial() - base)
            .map_err(|_| AdError::internal("a node beyond the address space"))?;
        // The previous gradients are replaced: their store is emptied and reused.
        let adjoints = match self.gradients.take() {
            Some(previous) => previous.adjoints,
            None => Adjoints::default(),
        };
        Ok(ProgramPass { records, base, output, seed, adjoints })
    }

    /// The last half of [`Tape::backward`], after the pass over `records` filled `adjoints`.
    pub(crate) fn end_backward(
        &mut self,
        records: Records,
        base: u64,
        output: usize,
        adjoints: Adjoints,
    ) {
        self.recycle(0, records);
        let gradients = Gradients { base, adjoints };
        if let Some(log) = &mut self.log {
            let gradient = |index: usize| {
                let adjoint = gradients.get(base + index as u64)?;
                Summary::of_adjoint(&adjoint)
            };
            log.finish_backward(output, gradient);
        }
        self.gradients = Some(gradients);
    }

    /// `grad(x)`: the gradient the most recent `backward` computed for the value `x` holds, zeros
    /// of `x`'s type when that value did not influence the output, an error before any
    /// `backward`. The result is never tracked.
    pub fn grad_of(&self, x: &Value) -> Result<Value, AdError> {
        let gradients = self
            .gradients
            .as_ref()
            .ok_or_else(|| AdError::from(AdErrorKind::GradBeforeBackward))?;
        if !x.is_differentiable() {
            return Err(AdErrorKind::Operand { op: "grad", found: x.type_name() }.into());
        }
        let found = program_node(x).and_then(|node| {
            gradients.get(node.serial()).or_else(|| {
                let origin = self.origin(node)?;
                gradients.get(origin)
            })
        });
        match found {
            Some(gradient) => gradient.into_value(),
            None => zeros_like(x),
        }
    }

    /// The serial a live re-leafed `var` continues, if `node` is one.
    fn origin(&self, node: NodeRef) -> Option<u64> {
        if !self.is_live(node) {
            return None;
        }
        let records = self.levels.first()?;
        let index = usize::try_from(node.serial() - records.base).ok()?;
        match *records.get(index)?.0 {
            Op::Leaf { origin } => origin,
            _ => None,
        }
    }

    // ----- transform levels -----

    /// Empties a store the caller is done with, keeping its chunks for the next one.
    pub(crate) fn give_store(&mut self, mut store: Adjoints) {
        store.clear(self);
    }

    /// A chunk from the free list, or a new one.
    pub(crate) fn take_chunk(&mut self) -> Result<Chunk, AdError> {
        chunk::reuse_or_allocate(&mut self.free_chunks).ok_or_else(|| AdErrorKind::TapeFull.into())
    }

    /// Keeps a chunk nothing holds any more for the next [`Tape::take_chunk`].
    pub(crate) fn give_chunk(&mut self, chunk: Chunk) {
        self.free_chunks.push(chunk);
    }

    /// The chunks on the free list.
    #[cfg(test)]
    fn free_chunk_count(&self) -> usize {
        self.free_chunks.len()
    }

    /// Opens the next level for a transform and returns its number.
    pub(crate) fn open_level(&mut self) -> Result<usize, AdError> {
        let level = self.depth;
        if level > NodeRef::MAX_LEVEL {
            return Err(AdErrorKind::NestingTooDeep.into());
        }
        if self.levels.len() == level {
            self.levels.push(Records::default());
            self.floors.push(u64::MAX);
        }
        self.depth += 1;
        self.set_floor(level);
        if let Some(log) = &mut self.log {
            log.forget_level(level);
        }
        Ok(level)
    }

    /// Closes the top level (which must be `level`) and hands its recording over; boxes of the
    /// level are stale from now on.
    pub(crate) fn close_level(&mut self, level: usize) -> Result<Records, AdError> {
        if level + 1 != self.depth || level == 0 {
            return Err(AdError::internal("levels closed out of order"));
        }
        self.depth = level;
        let records = &mut self.levels[level];
        let next = records.base + records.ops.len() as u64;
        self.released_words += records.ops.len() as u64;
        let taken = std::mem::take(records);
        records.base = next;
        records.fit_room();
        self.set_floor(level);
        Ok(taken)
    }

    /// Gives a finished recording's allocations back: to its level, if the level has recorded
    /// nothing since and holds fewer chunks, and its chunks to the free list otherwise.
    pub(crate) fn recycle(&mut self, level: usize, mut records: Records) {
        let mut unused = match self.levels.get_mut(level) {
            Some(current)
                if current.ops.is_empty() && current.ops.capacity() < records.ops.capacity() =>
            {
                // `backward` and `close_level` moved the level's base past every serial of
                // `records`, so the recording continues from there.
                records.release(current.base);
                std::mem::replace(current, records)
            }
            _ => records,
        };
        unused.ops.give_back_from(0, self);
    }

    /// Records the argument a transform differentiates: a leaf at `level` around `value`.
    pub(crate) fn transform_leaf(&mut self, level: usize, value: Value) -> Result<Value, AdError> {
        self.push_op(level, Op::Leaf { origin: None }, value)
    }

    /// The tape index of a value's node at `level`, if it is tracked (live) there at the top.
    pub(crate) fn top_index(&self, value: &Value, level: usize) -> Option<usize> {
        let node = match value {
            Value::TrackedFloat { node, .. } => *node,
            Value::Tracked(tracked) => tracked.node(),
            _ => return None,
        };
        if node.level() != level || !self.is_live(node) {
            return None;
        }
        usize::try_from(node.serial() - self.levels[level].base).ok()
    }

    // ----- recording -----

    /// Strips stale boxes from the top of `value` and returns the live level of its top box.
    #[inline]
    fn settle(&self, value: &mut Value) -> Option<usize> {
        loop {
            let node = match value {
                Value::TrackedFloat { node, .. } => *node,
                Value::Tracked(tracked) => tracked.node(),
                _ => return None,
            };
            if self.is_live(node) {
                return Some(node.level());
            }
            *value = match std::mem::replace(value, Value::Int(0)) {
                Value::TrackedFloat { value, .. } => Value::Float(value),
                Value::Tracked(tracked) => Tracked::into_value(tracked),
                other => other,
            };
        }
    }

    /// The value without the stale boxes at its top.
    pub(crate) fn settled(&self, mut value: Value) -> Value {
        self.settle(&mut value);
        value
    }

    /// Removes the box of `level` from a value tracked there at the top and returns its node.
    fn unbox(&self, value: &mut Value, level: usize) -> Arg {
        let Some(index) = self.top_index(value, level) else { return Arg::CONSTANT };
        *value = match std::mem::replace(value, Value::Int(0)) {
            Value::TrackedFloat { value, .. } => Value::Float(value),
            Value::Tracked(tracked) => Tracked::into_value(tracked),
            other => other,
        };
        // The tape never holds more than `u32::MAX` records (see `push`).
        Arg::node(index as u32)
    }

    fn lift_slice(&mut self, values: &mut [Value], args: &mut [Arg]) -> Option<usize> {
        let mut top = None;
        for value in values.iter_mut() {
            top = top.max(self.settle(value));
        }
        let level = top?;
        for (value, arg) in values.iter_mut().zip(args.iter_mut()) {
            *arg = self.unbox(value, level);
        }
        if level == 0 && self.log.as_ref().is_some_and(|log| log.builds_graph()) {
            for (value, arg) in values.iter().zip(args.iter()) {
                if let Some(index) = arg.index() {
                    self.note_earlier(index, Some(value));
                }
            }
            if let Some(log) = &mut self.log {
                let constants = values.iter().zip(args.iter()).enumerate();
                log.note_constants(
                    constants
                        .filter(|(_, (_, arg))| **arg == Arg::CONSTANT)
                        .map(|(position, (value, _))| (position as u32, value)),
                );
            }
        }
        Some(level)
    }

    /// Prepares the operands of an operation for recording (see [`Lifted`]).
    #[inline]
    pub(crate) fn lift<const N: usize>(&mut self, mut values: [Value; N]) -> Lifted<N> {
        let mut args = [Arg::CONSTANT; N];
        match self.lift_slice(&mut values, &mut args) {
            None => Lifted::Plain(values),
            Some(level) => Lifted::Tracked { level, inner: values, args },
        }
    }

    /// [`Tape::lift`] for a variable number of operands.
    pub(crate) fn lift_vec(&mut self, mut values: Vec<Value>) -> LiftedVec {
        let mut args = vec![Arg::CONSTANT; values.len()];
        match self.lift_slice(&mut values, &mut args) {
            None => LiftedVec::Plain(values),
            Some(level) => LiftedVec::Tracked { level, inner: values, args },
        }
    }

    /// Gives the program tape's record at `index` a node in the graph being built if it was made
    /// before the log started (see [`RecordLog::note_earlier`]); `value` is what an operation
    /// read from it.
    #[cold]
    fn note_earlier(&mut self, index: usize, value: Option<&Value>) {
        let Some(log) = &mut self.log else { return };
        if !log.wants_earlier(index) {
            return;
        }
        if let Some((op, _)) = self.levels[0].get(index) {
            log.note_earlier(index, &op, value.and_then(Summary::of));
        }
    }

    /// Appends `op` to `level`'s recording and returns `out` boxed with the new node: how every
    /// operation but the scalar fast path records itself.
    pub(crate) fn push(&mut self, level: usize, op: Op, out: Value) -> Result<Value, AdError> {
        let saved = op.saved_bytes();
        self.check_memory(saved)?;
        if let Some(records) = self.levels.get_mut(level) {
            records.saved_bytes = records.saved_bytes.saturating_add(saved);
        }
        self.push_op(level, op, out)
    }

    /// Appends `op` to `level`'s recording and returns `out` boxed with the new node.
    fn push_op(&mut self, level: usize, op: Op, out: Value) -> Result<Value, AdError> {
        if self.log.is_some() {
            return self.push_noted(level, op, out);
        }
        let node = self.append(level, op)?;
        Ok(match out {
            Value::Float(value) => Value::TrackedFloat { value, node },
            other => Value::Tracked(Rc::new(Tracked::new(other, node))),
        })
    }

    /// [`Tape::push_op`] on a tape with a log, which notes the record.
    #[cold]
    #[inline(never)]
    fn push_noted(&mut self, level: usize, op: Op, out: Value) -> Result<Value, AdError> {
        let node = self.append(level, op.clone())?;
        self.note(level, node, &op, &out);
        Ok(match out {
            Value::Float(value) => Value::TrackedFloat { value, node },
            other => Value::Tracked(Rc::new(Tracked::new(other, node))),
        })
    }

    /// Notes the record of `node` in the log, if there is one.
    fn note(&mut self, level: usize, node: NodeRef, op: &Op, value: &Value) {
        let base = self.levels.get(level).map_or(0, |records| records.base);
        if let Some(log) = &mut self.log {
            let index = (node.serial() - base) as usize;
            log.note(level, index, node.serial(), op, value);
        }
    }

    fn append(&mut self, level: usize, op: Op) -> Result<NodeRef, AdError> {
        let more = RecStore::MAX_WORDS;
        if self.levels.get(level).is_some_and(|r| r.ops.len() + more > r.ops.capacity()) {
            self.grow(level, more)?;
        }
        let records = self
            .levels
            .get_mut(level)
            .ok_or_else(|| AdError::internal("a record for a level that was never opened"))?;
        let index = records.ops.len() + RecStore::words(&op, records.ops.len()) - 1;
        let serial = records.base + index as u64;
        if index >= u32::MAX as usize - 2 || serial > NodeRef::MAX_SERIAL {
            return Err(AdErrorKind::TapeFull.into());
        }
        // SAFETY: the store was grown above to hold `MAX_WORDS` more words.
        unsafe { records.push(op) };
        self.operations += 1;
        Ok(NodeRef::new(level, serial))
    }

    /// Makes room for at least `more` records on `level` within the allocation limit; kept out of
    /// line so that the recording fast path stays small.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, level: usize, more: usize) -> Result<(), AdError> {
        if level >= self.levels.len() {
            return Err(AdError::internal("a record for a level that was never opened"));
        }
        let additional = more.next_multiple_of(RecStore::CHUNK);
        self.check_memory(additional.saturating_mul(size_of::<u64>()))?;
        let records = &mut self.levels[level];
        let reserved = records.ops.reserve(more, &mut self.free_chunks);
        records.slow = self.log.is_some();
        records.fit_room();
        reserved
    }

    /// Records a float function of one live scalar with the plain partial derivative
    /// `term.partial`, whose result is `value`, and returns the new node.
    ///
    /// Fusion: a fresh operand (see [`Term`]) whose scalar record ends the tape is nobody else's
    /// input, so its record is replaced by the new one, which takes over its inputs with their
    /// partials multiplied by the operand's (the chain rule at recording time). `x * a + sin(x) *
    /// b` with constants `a` and `b` thus leaves one record per evaluation, `x` with the partial
    /// `a + b cos x`, instead of four. Fusion is skipped when the inputs would be more than two;
    /// inputs that appear twice are merged. The common cases are rewritten in place here, the
    /// others in [`Tape::fuse_general`].
    #[inline(always)]
    pub(crate) fn fuse1(&mut self, term: Term, value: f64) -> Result<NodeRef, AdError> {
        let level = term.node.level();
        if let Some(records) = self.levels.get_mut(level) {
            let len = records.ops.len();
            let index = (term.node.serial() - records.base) as usize;
            if term.fresh && index + 1 == len && records.ops.scale_partials(index, term.partial) {
                self.operations += 1;
                return Ok(term.node);
            }
            if records.has_room(RecStore::MAX_WORDS) {
                let op = Op::Scalar1 { x: index as u32, dx: term.partial };
                // SAFETY: `has_room` holds for `MAX_WORDS`, and `room_end` is within the capacity
                // (`Records::fit_room`).
                let node = unsafe { records.push(op) };
                self.operations += 1;
                return Ok(NodeRef::new(level, records.base + node as u64));
            }
        }
        self.fuse_general(&[term], value)
    }

    /// [`Tape::fuse1`] for a function of two live scalars of one level.
    #[inline(always)]
    pub(crate) fn fuse2(&mut self, a: Term, b: Term, value: f64) -> Result<NodeRef, AdError> {
        let level = a.node.level();
        if let Some(records) = self.levels.get_mut(level) {
            let len = records.ops.len();
            let i = (a.node.serial() - records.base) as usize;
            let j = (b.node.serial() - records.base) as usize;
            if a.fresh && b.fresh && j + 1 == len && records.has_room(RecStore::MAX_WORDS) {
                // `f(x) op g(y)` from two fresh one-input records at the end: rewritten as one
                // record of one input (when `x` and `y` are the same node) or of two.
                if let Some((Scalar::One { x: y, dx: dy }, after)) = records.ops.scalar(j)
                    && after == i + 1
                    && let Some((Scalar::One { x, dx }, cut)) = records.ops.scalar(i)
                {
                    let (dx, dy) = (a.partial * dx, b.partial * dy);
                    self.operations += 1;
                    records.ops.truncate(cut);
                    let op = match x == y {
                        true => Op::Scalar1 { x, dx: dx + dy },
                        false => Op::Scalar2 { a: x, da: dx, b: y, db: dy },
                    };
                    // SAFETY: `has_room` held for `MAX_WORDS` before the truncation, which only
                    // shortens the store, and `room_end` is within the capacity
                    // (`Records::fit_room`).
                    let node = unsafe { records.push(op) };
                    return Ok(NodeRef::new(level, records.base + node as u64));
                }
            }
            if !a.fresh && !b.fresh && i != j && records.has_room(RecStore::MAX_WORDS) {
                let op = Op::Scalar2 { a: i as u32, da: a.partial, b: j as u32, db: b.partial };
                // SAFETY: as in `fuse1`: `has_room` holds for `MAX_WORDS`.
                let node = unsafe { records.push(op) };
                self.operations += 1;
                return Ok(NodeRef::new(level, records.base + node as u64));
            }
        }
        self.fuse_general(&[a, b], value)
    }

    /// Every case of [`Tape::fuse1`] and [`Tape::fuse2`], for one or two terms; the only path
    /// of scalar records on a tape with a log (see [`Tape::traced`]), which it notes.
    ///
    /// Cold: the interpreter's tracked float arms inline `fuse1`/`fuse2`, and this call, taken
    /// rarely there, was allocated as a likely path. Marked cold, the arms keep their values in
    /// registers: the `x * a + sin(x) * b` gradient loop 0.955 of the instructions a repetition,
    /// `x = x + one` 0.975, the interpreter suite unchanged (callgrind, 2026-11-27).
    #[cold]
    #[inline(never)]
    fn fuse_general(&mut self, terms: &[Term], value: f64) -> Result<NodeRef, AdError> {
        let Some(first) = terms.first() else {
            return Err(AdError::internal("a scalar record without inputs"));
        };
        let n = terms.len().min(2);
        let terms = &terms[..n];
        let level = first.node.level();
        if level == 0 && self.log.is_some() {
            let base = self.levels[0].base;
            for term in terms.iter().filter(|term| term.node.level() == 0) {
                self.note_earlier((term.node.serial() - base) as usize, None);
            }
        }
        let records = self
            .levels
            .get_mut(level)
            .ok_or_else(|| AdError::internal("a record for a level that was never opened"))?;
        let base = records.base;
        let len = records.ops.len();
        // Live nodes are fewer than `u32::MAX` records past the base (see `append`).
        let mut indices = [0u32; 2];
        for (index, term) in indices.iter_mut().zip(terms) {
            *index = (term.node.serial() - base) as u32;
        }
        let mut edges = [(0u32, 0.0f64); 4];
        let mut count = 0;
        let mut cut = len;
        let mut expanding = true;
        // Newest operand first, so that each expanded record ends what is left of the tape.
        let mut order = [0usize, 1usize];
        if n == 2 && indices[0] < indices[1] {
            order = [1, 0];
        }
        for &k in &order[..n] {
            let (term, index) = (terms[k], indices[k] as usize);
            if expanding && term.fresh && index + 1 == cut {
                match records.ops.scalar(index) {
                    Some((Scalar::One { x, dx }, start)) => {
                        edges[count] = (x, term.partial * dx);
                        count += 1;
                        cut = start;
                        continue;
                    }
                    Some((Scalar::Two { a, da, b, db }, start)) => {
                        edges[count] = (a, term.partial * da);
                        edges[count + 1] = (b, term.partial * db);
                        count += 2;
                        cut = start;
                        continue;
                    }
                    _ => {}
                }
            }
            expanding = false;
            edges[count] = (indices[k], term.partial);
            count += 1;
        }
        let (mut inputs, mut count) = merge(&edges[..count]);
        if count > 2 {
            // Too many inputs for one record: record the operation on its operands.
            cut = len;
            let mut plain = [(0u32, 0.0f64); 2];
            for ((edge, &index), term) in plain.iter_mut().zip(&indices).zip(terms) {
                *edge = (index, term.partial);
            }
            (inputs, count) = merge(&plain[..n]);
        }
        let [(x, dx), (y, dy), ..] = inputs;
        // One word for a chain (the input is the node just before the record), two for any
        // other one-input record, four for a pair.
        let op = match count {
            1 => Op::Scalar1 { x, dx },
            _ => Op::Scalar2 { a: x, da: dx, b: y, db: dy },
        };
        let words = RecStore::words(&op, cut);
        let needed = cut + words;
        if needed > records.ops.capacity() {
            self.grow(level, needed - len)?;
        }
        let node_index = cut + words - 1;
        let serial = base + node_index as u64;
        if node_index >= u32::MAX as usize - 2 || serial > NodeRef::MAX_SERIAL {
            return Err(AdErrorKind::TapeFull.into());
        }
        let records = &mut self.levels[level];
        records.ops.truncate(cut);
        let noted = self.log.is_some().then(|| op.clone());
        // SAFETY: the store holds `needed` words (grown above), and `needed` is the record's
        // end; `RecStore::push` writes no more than that.
        unsafe { records.push(op) };
        debug_assert_eq!(records.ops.len(), node_index + 1);
        self.operations += 1;
        let node = NodeRef::new(level, serial);
        if let Some(op) = noted {
            self.note(level, node, &op, &Value::Float(value));
        }
        Ok(node)
    }
}

/// The distinct inputs among `edges` (at most four) with their partials summed, and how many.
#[inline]
fn merge(edges: &[(u32, f64)]) -> ([(u32, f64); 4], usize) {
    let mut merged = [(0u32, 0.0f64); 4];
    let mut count = 0;
    for &(input, partial) in edges {
        match merged[..count].iter_mut().find(|(seen, _)| *seen == input) {
            Some(entry) => entry.1 += partial,
            None => {
                merged[count] = (input, partial);
                count += 1;
            }
        }
    }
    (merged, count)
}

/// The node of the program-level box of a value (its innermost box, if that is at level 0).
fn program_node(value: &Value) -> Option<NodeRef> {
    let mut value = value;
    let mut found = None;
    loop {
        match value {
            Value::TrackedFloat { node, .. } => {
                found = Some(*node);
                break;
            }
            Value::Tracked(tracked) => {
                found = Some(tracked.node());
                value = tracked.value();
            }
            _ => break,
        }
    }
    found.filter(|node| node.level() == 0)
}

/// A float 1.0, or a tensor of ones of the value's shape.
pub(crate) fn ones_like(value: &Value) -> Result<Value, AdError> {
    match value.primal() {
        Primal::Tensor(tensor) => Ok(Value::tensor(Tensor::ones(tensor.shape())?)),
        _ => Ok(Value::Float(1.0)),
    }
}

/// A float 0.0, or a tensor of zeros of the value's shape.
pub(crate) fn zeros_like(value: &Value) -> Result<Value, AdError> {
    match value.primal() {
        Primal::Tensor(tensor) => Ok(Value::tensor(Tensor::zeros(tensor.shape())?)),
        _ => Ok(Value::Float(0.0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops;
    use tensor::{BinaryOp, ReduceOp};

    #[test]
    fn two_input_records_may_straddle_chunks() {
        // Three leaves, then `sin(x)` in two words (its input is not the node just before), so
        // the four-word pairs of `z + y` start at odd positions and one of them spans the end of
        // the first chunk.
        let mut tape = Tape::new();
        let x = tape.leaf(Value::Float(0.5)).unwrap();
        let y = tape.leaf(Value::Float(2.0)).unwrap();
        tape.leaf(Value::Float(3.0)).unwrap();
        let mut z = ops::unary(&mut tape, tensor::UnaryOp::Sin, x.clone()).unwrap();
        let n = RecStore::CHUNK;
        for _ in 0..n {
            z = ops::add(&mut tape, z, y.clone()).unwrap();
        }
        assert_eq!(tape.program_len(), 5 + 4 * n);
        tape.backward(&z).unwrap();
        let dx = tape.grad_of(&x).unwrap().as_f64();
        let dy = tape.grad_of(&y).unwrap().as_f64();
        assert_eq!((dx, dy), (Some(0.5f64.cos()), Some(n as f64)));
    }

    #[test]
    fn recording_stops_at_the_last_serial() {
        // A program tape whose next serial is five below the last one a node can carry: the
        // leaf, `sin` (a chain: one word) and the product of the two (a pair: four words) take
        // the last six serials, and both the one-word and the pair fast paths then refuse to
        // record rather than wrap a serial.
        let mut tape = Tape::new();
        tape.levels[0].base = NodeRef::MAX_SERIAL - 5;
        tape.levels[0].fit_room();
        tape.set_floor(0);
        let x = tape.leaf(Value::Float(0.5)).unwrap();
        let y = ops::unary(&mut tape, tensor::UnaryOp::Sin, x.clone()).unwrap();
        let z = ops::binary(&mut tape, BinaryOp::Mul, y.clone(), x.clone());
        let z = z.unwrap();
        assert_eq!(program_node(&z).map(NodeRef::serial), Some(NodeRef::MAX_SERIAL));
        let full = |result: Result<Value, AdError>| matches!(result, Err(error) if *error.kind() == AdErrorKind::TapeFull);
        assert!(full(ops::unary(&mut tape, tensor::UnaryOp::Sin, z.clone())));
        assert!(full(ops::binary(&mut tape, BinaryOp::Add, z.clone(), x.clone())));
        tape.backward(&z).unwrap();
        let expected = 0.5f64.cos() * 0.5 + 0.5f64.sin();
        assert_eq!(tape.grad_of(&x).unwrap().as_f64(), Some(expected));
        // Released, the tape's next serial is past the last: no record fits any more.
        assert!(!tape.levels[0].has_room(1));
        assert!(full(tape.leaf(Value::Float(1.0))));
    }

    #[test]
    fn fresh_operands_fuse_and_others_do_not() {
        let mut tape = Tape::new();
        let x = tape.leaf(Value::Float(0.5)).unwrap();
        let Value::TrackedFloat { node: x_node, .. } = x else { panic!("a scalar leaf") };
        // sin(x) * 3 with the product reading a fresh sin: one record, d/dx = 3 cos x.
        let s =
            tape.fuse1(Term { node: x_node, partial: 0.5f64.cos(), fresh: false }, 0.0).unwrap();
        let p = tape.fuse1(Term { node: s, partial: 3.0, fresh: true }, 0.0).unwrap();
        assert_eq!((p, tape.program_len()), (s, 2));
        // p + x * x: the fresh p merges with the repeated x into one record of x.
        let square = tape.fuse2(
            Term { node: x_node, partial: 0.5, fresh: false },
            Term { node: x_node, partial: 0.5, fresh: false },
            0.0,
        );
        // Two words: its input is not the node just before.
        let square = square.unwrap();
        assert_eq!(tape.program_len(), 4);
        let sum = tape
            .fuse2(
                Term { node: p, partial: 1.0, fresh: true },
                Term { node: square, partial: 1.0, fresh: true },
                0.0,
            )
            .unwrap();
        assert_eq!((sum, tape.program_len()), (p, 2));
        let expected = 3.0 * 0.5f64.cos() + 1.0;
        let record = tape.levels[0].get(1).map(|(op, start)| (format!("{op:?}"), start));
        assert_eq!(record, Some((format!("{:?}", Op::Scalar1 { x: 0, dx: expected }), 1)));
        // Not fresh: the record stays, and the product gets its own.
        let q = tape.fuse1(Term { node: sum, partial: 2.0, fresh: false }, 0.0).unwrap();
        assert_eq!((q.serial(), tape.program_len()), (2, 3));
        tape.backward(&Value::TrackedFloat { value: 0.0, node: q }).unwrap();
        let dx = tape.grad_of(&x).unwrap().as_f64();
        assert_eq!(dx, Some(2.0 * expected));
    }

    #[test]
    fn the_seed_of_a_tensor_and_its_sums_stay_uniform() {
        // backward(rows) with rows = sum(T, axis 0) and T a contraction: neither the seed nor
        // T's adjoint is ever a tensor of ones, and the contraction's rule needs neither.
        let mut tape = Tape::new();
        let x =
            Value::tensor(Tensor::from_vec(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap());
        let x = tape.leaf(x).unwrap();
        let contraction = Rc::new(tensor::einsum::Contraction::from_spec("ij,ik->ijk").unwrap());
        let product = ops::einsum(&mut tape, &contraction, vec![x.clone(), x.clone()]).unwrap();
        let rows = ops::reduce(&mut tape, ReduceOp::Sum, product.clone(), Some(0)).unwrap();
        tape.backward(&rows).unwrap();
        let gradients = tape.gradients.as_ref().unwrap();
        let adjoint = |value: &Value| gradients.get(program_node(value).unwrap().serial());
        let ones = |value: &Value, shape: &[usize]| match adjoint(value) {
            Some(Adjoint::Uniform(uniform)) => uniform == Uniform::new(1.0, shape),
            _ => false,
        };
        assert!(ones(&rows, &[3, 3]), "{:?}", adjoint(&rows));
        assert!(ones(&product, &[2, 3, 3]), "{:?}", adjoint(&product));
        // sum_ijk x_ij x_ik = sum_i (sum_j x_ij)^2: d/dx_ij is twice row i's sum.
        let expected = vec![12.0, 12.0, 12.0, 30.0, 30.0, 30.0];
        let gradient = tape.grad_of(&x).unwrap();
        assert_eq!(gradient.as_tensor().map(Tensor::to_vec), Some(expected));
        assert_eq!(
            tape.grad_of(&product).unwrap().as_tensor().map(Tensor::to_vec),
            Some(vec![1.0; 18])
        );
    }

    /// A chain of `n` records after the leaf `x`, each with the partial `d`, and the node
    /// `at` records in.
    fn chain(tape: &mut Tape, n: usize, d: f64, at: usize) -> (Value, NodeRef, NodeRef) {
        let x = tape.leaf(Value::Float(0.5)).unwrap();
        let Value::TrackedFloat { node: mut y, .. } = x else { panic!("a scalar leaf") };
        let mut middle = y;
        for k in 0..n {
            y = tape.fuse1(Term { node: y, partial: d, fresh: false }, 0.0).unwrap();
            if k + 1 == at {
                middle = y;
            }
        }
        (x, middle, y)
    }

    #[test]
    fn backward_writes_the_adjoints_into_the_chunks_of_the_records_it_read() {
        let mut tape = Tape::new();
        let (n, d) = (3 * RecStore::CHUNK + 100, 1.0001);
        let (x, middle, y) = chain(&mut tape, n, d, n / 2);
        let records: Vec<usize> =
            tape.levels[0].ops.chunk_addresses().iter().map(|&a| a as usize).collect();
        assert_eq!(records.len(), 4);
        tape.backward(&Value::TrackedFloat { value: 0.0, node: y }).unwrap();
        // Only the output's chunk of adjoints is taken before any chunk of records is read.
        let adjoints = tape.gradients.as_ref().unwrap().adjoints.chunk_addresses();
        assert_eq!(adjoints.len(), 4);
        assert_eq!(adjoints.iter().filter(|a| !records.contains(a)).count(), 1);
        // The tape keeps its first chunk; the others went to the adjoints.
        assert_eq!(tape.levels[0].ops.capacity(), RecStore::CHUNK);
        assert_eq!(tape.free_chunk_count(), 0);
        // The pass multiplies the partials in the same order as this.
        let power = |k: usize| (0..k).fold(1.0, |g, _| g * d);
        assert_eq!(tape.grad_of(&x).unwrap().as_f64(), Some(power(n)));
        let middle = Value::TrackedFloat { value: 0.0, node: middle };
        assert_eq!(tape.grad_of(&middle).unwrap().as_f64(), Some(power(n - n / 2)));
    }

    #[test]
    fn repeated_backward_passes_reuse_the_same_chunks() {
        let mut tape = Tape::new();
        let mut chunks = Vec::new();
        for round in 0..4 {
            let (x, _, y) = chain(&mut tape, 2 * RecStore::CHUNK, 0.5, 0);
            let held = tape.levels[0].ops.capacity() / RecStore::CHUNK
                + tape.gradients.as_ref().map_or(0, |g| g.adjoints.chunk_addresses().len())
                + tape.free_chunk_count();
            chunks.push(held);
            tape.backward(&Value::TrackedFloat { value: 0.0, node: y }).unwrap();
            let expected = (0..2 * RecStore::CHUNK).fold(1.0, |g, _| g * 0.5);
            assert_eq!(tape.grad_of(&x).unwrap().as_f64(), Some(expected), "round {round}");
        }
        // Three chunks of records and three of adjoints once both exist, then no more.
        assert_eq!(chunks, [3, 6, 6, 6]);
    }

    #[test]
    fn backward_keeps_the_allocations_for_the_next_recording() {
        let mut tape = Tape::new();
        for _ in 0..3 {
            let x = tape.leaf(Value::Float(1.0)).unwrap();
            let mut y = x.clone();
            for _ in 0..1000 {
                y = ops::add(&mut tape, y, x.clone()).unwrap();
            }
            let before = tape.levels[0].ops.chunk_addresses();
            tape.backward(&y).unwrap();
            assert_eq!(tape.program_len(), 0);
            assert!(tape.levels[0].ops.capacity() >= 1001);
            let x = tape.leaf(Value::Float(1.0)).unwrap();
            let y = ops::add(&mut tape, x.clone(), x).unwrap();
            let first = tape.levels[0].ops.chunk_addresses().first().copied();
            assert_eq!(first, before.first().copied());
            tape.backward(&y).unwrap();
        }
    }
}
