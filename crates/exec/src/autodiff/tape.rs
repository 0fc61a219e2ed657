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

use super::adjoints::Adjoints;
use super::backward::{Keep, backward_pass};
use super::error::{AdError, AdErrorKind};
use super::op::{Arg, Extra, Kind, Op, Records, Slot};
use crate::tensor::Tensor;
use crate::value::{NodeRef, Primal, Tracked, Value};

/// The gradients of the most recent `backward`: one adjoint per node of the released recording
/// (none where no gradient flowed).
#[derive(Debug)]
struct Gradients {
    base: u64,
    adjoints: Adjoints,
}

impl Gradients {
    fn get(&self, serial: u64) -> Option<Value> {
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
    gradients: Option<Gradients>,
    /// An emptied adjoint store whose allocation the next backward pass reuses, so that a loop of
    /// transforms does not allocate (and fault in) a new store each time.
    spare: Adjoints,
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
            gradients: None,
            spare: Adjoints::default(),
        }
    }

    /// The number of records on the program tape (level 0) since the last release.
    pub fn program_len(&self) -> usize {
        self.levels.first().map_or(0, |records| records.ops.len())
    }

    /// How many levels are active: 1 at the program level, one more inside each transform.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// The size of one tape record in bytes, for reports.
    pub fn record_bytes() -> usize {
        size_of::<Op>()
    }

    /// The bytes a backward pass's adjoint store takes per node whose adjoint is a plain float
    /// (other adjoints take a value in a side pool besides), for reports.
    pub fn adjoint_bytes() -> usize {
        size_of::<f64>()
    }

    /// Whether a box was recorded on a level that is active and has not been released since.
    #[inline]
    pub(crate) fn is_live(&self, node: NodeRef) -> bool {
        let level = node.level();
        level < self.depth && self.levels.get(level).is_some_and(|r| node.serial() >= r.base)
    }

    // ----- `var`, `backward`, `grad(x)` -----

    /// Declares a `var`: a new leaf of the program tape holding `value`'s number or tensor (an
    /// `int` is converted to `float`). Tracking by open transforms is kept, so a `var` declared
    /// inside a function being differentiated still carries the transform's perturbation.
    pub fn leaf(&mut self, value: Value) -> Result<Value, AdError> {
        self.leaf_with_origin(value, Op::NO_ORIGIN)
    }

    /// Makes sure a `var` slot holds a live leaf or intermediate of the current program tape; see
    /// the module documentation. Call it on every read of a `var` variable.
    #[inline]
    pub fn refresh_var(&mut self, slot: &mut Value) -> Result<(), AdError> {
        let node = program_node(slot);
        if node.is_some_and(|node| self.is_live(node)) {
            return Ok(());
        }
        let origin = node.map_or(Op::NO_ORIGIN, NodeRef::serial);
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

    fn leaf_with_origin(&mut self, value: Value, origin: u64) -> Result<Value, AdError> {
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
                self.push(0, Op::Leaf { origin }, plain)
            }
        }
    }

    /// `backward(y)`: differentiates the sum of `y`'s elements with respect to every node recorded
    /// on the program tape since the last release, keeps every node's gradient for `grad(x)`
    /// (replacing the previous ones), and releases the graph.
    ///
    /// It runs only at the program level: inside a transform it is an error, because the values
    /// there are functions of the transform's argument and a program-level gradient of them would
    /// silently mix the two levels. A `y` that depends on no `var` is an error, as in PyTorch: it
    /// almost always means the `var` was forgotten.
    pub fn backward(&mut self, y: &Value) -> Result<(), AdError> {
        if self.depth > 1 {
            return Err(AdErrorKind::BackwardInsideTransform.into());
        }
        if !y.is_differentiable() {
            return Err(AdErrorKind::Operand { op: "backward", found: y.type_name() }.into());
        }
        let Some(node) = program_node(y).filter(|&node| self.is_live(node)) else {
            return Err(AdErrorKind::BackwardWithoutVar.into());
        };
        let seed = ones_like(y)?;
        let mut records = std::mem::take(&mut self.levels[0]);
        let base = records.base;
        self.levels[0].base = base + records.ops.len() as u64;
        let output = usize::try_from(node.serial() - base)
            .map_err(|_| AdError::internal("a node beyond the address space"))?;
        // The previous gradients are replaced: their store is emptied and reused.
        let mut adjoints = match self.gradients.take() {
            Some(previous) => previous.adjoints,
            None => self.take_store(),
        };
        let result = backward_pass(self, &records, output, seed, Keep::Everything, &mut adjoints);
        records.release();
        self.recycle(0, records);
        result?;
        self.gradients = Some(Gradients { base, adjoints });
        Ok(())
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
            Some(gradient) => Ok(gradient),
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
        match records.ops.get(index)? {
            Op::Leaf { origin } if *origin != Op::NO_ORIGIN => Some(*origin),
            _ => None,
        }
    }

    // ----- transform levels -----

    /// An empty adjoint store, reusing the spare allocation when there is one.
    pub(crate) fn take_store(&mut self) -> Adjoints {
        std::mem::take(&mut self.spare)
    }

    /// Empties a store the caller is done with and keeps it for the next backward pass.
    pub(crate) fn give_store(&mut self, mut store: Adjoints) {
        store.clear();
        if store.capacity() > self.spare.capacity() {
            self.spare = store;
        }
    }

    /// Opens the next level for a transform and returns its number.
    pub(crate) fn open_level(&mut self) -> Result<usize, AdError> {
        let level = self.depth;
        if level > NodeRef::MAX_LEVEL {
            return Err(AdErrorKind::NestingTooDeep.into());
        }
        if self.levels.len() == level {
            self.levels.push(Records::default());
        }
        self.depth += 1;
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
        let taken = std::mem::take(records);
        records.base = next;
        Ok(taken)
    }

    /// Gives a finished recording's allocations back to its level, if the level has not recorded
    /// anything since.
    pub(crate) fn recycle(&mut self, level: usize, mut records: Records) {
        records.release();
        if let Some(current) = self.levels.get_mut(level)
            && current.ops.is_empty()
            && current.ops.capacity() < records.ops.capacity()
            && current.base == records.base
        {
            *current = records;
        }
    }

    /// Records the argument a transform differentiates: a leaf at `level` around `value`.
    pub(crate) fn transform_leaf(&mut self, level: usize, value: Value) -> Result<Value, AdError> {
        self.push(level, Op::Leaf { origin: Op::NO_ORIGIN }, value)
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

    fn lift_slice(&self, values: &mut [Value], args: &mut [Arg]) -> Option<usize> {
        let mut top = None;
        for value in values.iter_mut() {
            top = top.max(self.settle(value));
        }
        let level = top?;
        for (value, arg) in values.iter_mut().zip(args.iter_mut()) {
            *arg = self.unbox(value, level);
        }
        Some(level)
    }

    /// Prepares the operands of an operation for recording (see [`Lifted`]).
    #[inline]
    pub(crate) fn lift<const N: usize>(&self, mut values: [Value; N]) -> Lifted<N> {
        let mut args = [Arg::CONSTANT; N];
        match self.lift_slice(&mut values, &mut args) {
            None => Lifted::Plain(values),
            Some(level) => Lifted::Tracked { level, inner: values, args },
        }
    }

    /// [`Tape::lift`] for a variable number of operands.
    pub(crate) fn lift_vec(&self, mut values: Vec<Value>) -> LiftedVec {
        let mut args = vec![Arg::CONSTANT; values.len()];
        match self.lift_slice(&mut values, &mut args) {
            None => LiftedVec::Plain(values),
            Some(level) => LiftedVec::Tracked { level, inner: values, args },
        }
    }

    /// Appends `op` to `level`'s recording and returns `out` boxed with the new node.
    pub(crate) fn push(&mut self, level: usize, op: Op, out: Value) -> Result<Value, AdError> {
        let node = self.append(level, op)?;
        Ok(match out {
            Value::Float(value) => Value::TrackedFloat { value, node },
            other => Value::Tracked(Rc::new(Tracked::new(other, node))),
        })
    }

    #[inline]
    fn append(&mut self, level: usize, op: Op) -> Result<NodeRef, AdError> {
        let records = self
            .levels
            .get_mut(level)
            .ok_or_else(|| AdError::internal("a record for a level that was never opened"))?;
        let index = records.ops.len();
        let serial = records.base + index as u64;
        if index >= u32::MAX as usize - 1 || serial > NodeRef::MAX_SERIAL {
            return Err(AdErrorKind::TapeFull.into());
        }
        records.ops.push(op);
        Ok(NodeRef::new(level, serial))
    }

    /// Appends a scalar record built from the tape indices of live nodes of `level` (the caller
    /// checked liveness) and returns the boxed result; one lookup of the level for everything.
    #[inline]
    fn append_scalar<const N: usize>(
        &mut self,
        level: usize,
        nodes: [NodeRef; N],
        build: impl FnOnce([u32; N]) -> Op,
        value: f64,
    ) -> Result<Value, AdError> {
        let records = self
            .levels
            .get_mut(level)
            .ok_or_else(|| AdError::internal("a record for a level that was never opened"))?;
        // Live nodes are fewer than `u32::MAX` records past the base (see the check below).
        let indices = nodes.map(|node| (node.serial() - records.base) as u32);
        let index = records.ops.len();
        let serial = records.base + index as u64;
        if index >= u32::MAX as usize - 1 || serial > NodeRef::MAX_SERIAL {
            return Err(AdErrorKind::TapeFull.into());
        }
        push_record(&mut records.ops, || build(indices))?;
        Ok(Value::TrackedFloat { value, node: NodeRef::new(level, serial) })
    }

    /// Records a float function of the live scalar `x` with the plain local derivative `dx`.
    #[inline]
    pub(crate) fn push_scalar1(
        &mut self,
        x: NodeRef,
        dx: f64,
        value: f64,
    ) -> Result<Value, AdError> {
        self.append_scalar(x.level(), [x], |[x]| Op::Scalar1 { x, dx }, value)
    }

    /// Records a float function of the live scalars `a` and `b`, both of one level.
    #[inline]
    pub(crate) fn push_scalar2(
        &mut self,
        a: NodeRef,
        b: NodeRef,
        da: f64,
        db: f64,
        value: f64,
    ) -> Result<Value, AdError> {
        self.append_scalar(a.level(), [a, b], |[a, b]| Op::Scalar2 { a, b, da, db }, value)
    }

    /// Saves values for a record of `level` and returns the slot of the first.
    pub(crate) fn save_values<const N: usize>(&mut self, level: usize, values: [Value; N]) -> Slot {
        self.save_values_iter(level, values)
    }

    pub(crate) fn save_values_iter(
        &mut self,
        level: usize,
        values: impl IntoIterator<Item = Value>,
    ) -> Slot {
        match self.levels.get_mut(level) {
            Some(records) => {
                let slot = records.values.len() as Slot;
                records.values.extend(values);
                slot
            }
            None => super::op::NOTHING_SAVED,
        }
    }

    /// Saves a record's bulky parameter and returns its slot.
    pub(crate) fn save_extra(&mut self, level: usize, extra: Extra) -> Slot {
        match self.levels.get_mut(level) {
            Some(records) => {
                let slot = records.extras.len() as Slot;
                records.extras.push(extra);
                slot
            }
            None => super::op::NOTHING_SAVED,
        }
    }

    /// Saves operand kinds for a record of `level` and returns the slot of the first.
    pub(crate) fn save_kinds(
        &mut self,
        level: usize,
        kinds: impl IntoIterator<Item = Kind>,
    ) -> Slot {
        match self.levels.get_mut(level) {
            Some(records) => {
                let slot = records.kinds.len() as Slot;
                records.kinds.extend(kinds);
                slot
            }
            None => super::op::NOTHING_SAVED,
        }
    }
}

/// Appends the record `build` makes from `inputs` to `ops`.
///
/// `Vec::push` makes the compiler build a record on the stack (it must survive the call that
/// grows the vector) and copy it into the buffer with wide loads that cannot be forwarded from
/// the narrow stores that built it: a stall of a dozen cycles on every recorded scalar operation,
/// a third of the recording's cost. Growing first and then writing into the spare capacity lets
/// it build the record in place.
#[inline]
fn push_record(ops: &mut Vec<Op>, build: impl FnOnce() -> Op) -> Result<(), AdError> {
    if ops.len() == ops.capacity() {
        grow(ops)?;
    }
    let len = ops.len();
    if let Some(slot) = ops.spare_capacity_mut().first_mut() {
        slot.write(build());
        // SAFETY: the element at `len` was just initialised, and `len < capacity` because the
        // spare capacity was not empty.
        unsafe { ops.set_len(len + 1) };
    }
    Ok(())
}

/// Makes room for more records; kept out of line so that the recording fast path stays small.
#[cold]
#[inline(never)]
fn grow(ops: &mut Vec<Op>) -> Result<(), AdError> {
    ops.try_reserve(ops.capacity().max(1024)).map_err(|_| AdErrorKind::TapeFull.into())
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

    #[test]
    fn backward_keeps_the_allocations_for_the_next_recording() {
        let mut tape = Tape::new();
        for _ in 0..3 {
            let x = tape.leaf(Value::Float(1.0)).unwrap();
            let mut y = x.clone();
            for _ in 0..1000 {
                y = ops::add(&mut tape, y, x.clone()).unwrap();
            }
            let before = tape.levels[0].ops.as_ptr();
            tape.backward(&y).unwrap();
            assert_eq!(tape.program_len(), 0);
            assert!(tape.levels[0].ops.capacity() >= 1001);
            assert_eq!(tape.levels[0].ops.as_ptr(), before);
        }
    }
}
