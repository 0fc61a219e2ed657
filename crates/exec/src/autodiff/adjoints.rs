//! The adjoint store of a backward pass: one slot per node, zero-filled on first use, and the
//! [`Adjoint`]s it holds.
//!
//! Most adjoints of a scalar program are plain floats, so every node gets one `f64` (8 bytes) and
//! only the others (tensors, values tracked by an enclosing level, and [`Uniform`] tensors kept
//! without their elements) live in a side pool. The number slot tells which case holds by
//! NaN-boxing: a signalling-NaN bit pattern marks a node no gradient has reached, another carries
//! the index of its adjoint in the pool. Arithmetic only ever produces quiet NaNs, and the store
//! canonicalises any NaN it is given, so a real NaN adjoint is never mistaken for a marker.
//! The slots live in chunks taken from the tape's free list ([`chunk`]) as gradients reach them;
//! resetting the store between passes gives the chunks back, without a destructor to run per node.

use super::chunk;
use super::error::AdError;
use super::tape::Tape;
use crate::ops;
use crate::value::Value;
use tensor::Tensor;

/// A signalling NaN (quiet bit clear) marking a node without an adjoint yet.
const ABSENT: u64 = 0x7FF4_0000_0000_0000;
/// A signalling NaN pattern whose low bits index the pool.
const POOLED: u64 = 0x7FF2_0000_0000_0000;
/// The bits that identify the two markers.
const MARKER_MASK: u64 = 0xFFFF_0000_0000_0000;
/// The bits of a pool index.
const INDEX_MASK: u64 = 0x0000_FFFF_FFFF_FFFF;

/// What a node's slot holds.
enum Slot {
    Absent,
    Number(f64),
    Pooled(usize),
}

#[inline]
fn decode(number: f64) -> Slot {
    if !number.is_nan() {
        return Slot::Number(number);
    }
    let bits = number.to_bits();
    match bits & MARKER_MASK {
        ABSENT => Slot::Absent,
        POOLED => Slot::Pooled((bits & INDEX_MASK) as usize),
        _ => Slot::Number(number),
    }
}

/// A NaN in its canonical quiet form, so that it never matches a marker.
#[inline]
fn canonical(number: f64) -> f64 {
    if number.is_nan() { f64::NAN } else { number }
}

/// A node's adjoint in a backward pass.
#[derive(Clone, Debug)]
pub(crate) enum Adjoint {
    /// A number, a tensor, or a value tracked by an enclosing level.
    Value(Value),
    /// A constant tensor whose elements are all equal, without its elements.
    Uniform(Uniform),
}

/// A constant tensor of `shape` whose every element is `value`, held as that number and the
/// shape: the seed of `backward(y)` for a tensor `y` (ones), and what the rules of sums,
/// broadcasts, reshapes and other linear maps make of such a gradient. Rules that know it use
/// the number directly (a contraction drops it, a sum spreads it); the others get the tensor from
/// [`Uniform::materialise`].
///
/// It never depends on anything being differentiated, so it is the same constant at every
/// level: a rule may take shortcuts with it that would lose derivatives of a tracked gradient.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Uniform {
    pub(crate) value: f64,
    pub(crate) shape: Box<[usize]>,
}

impl Uniform {
    pub(crate) fn new(value: f64, shape: &[usize]) -> Uniform {
        Uniform { value, shape: shape.into() }
    }

    /// The same shape with every element multiplied by `factor`.
    pub(crate) fn scaled(self, factor: f64) -> Uniform {
        Uniform { value: self.value * factor, ..self }
    }

    /// The tensor itself, checked against the allocation limit.
    pub(crate) fn materialise(&self) -> Result<Value, AdError> {
        Ok(Value::tensor(Tensor::full(&self.shape, self.value)?))
    }
}

impl Adjoint {
    /// The adjoint as a value, materialising a uniform tensor.
    pub(crate) fn into_value(self) -> Result<Value, AdError> {
        match self {
            Adjoint::Value(value) => Ok(value),
            Adjoint::Uniform(uniform) => uniform.materialise(),
        }
    }
}

impl From<Value> for Adjoint {
    fn from(value: Value) -> Adjoint {
        Adjoint::Value(value)
    }
}

impl From<Uniform> for Adjoint {
    fn from(uniform: Uniform) -> Adjoint {
        Adjoint::Uniform(uniform)
    }
}

/// The sum of two adjoints of one node. Uniform adjoints stay symbolic when the sum is uniform
/// too, and add as a number to a tensor of their shape instead of being materialised.
fn sum(t: &mut Tape, a: Adjoint, b: Adjoint) -> Result<Adjoint, AdError> {
    match (a, b) {
        (Adjoint::Uniform(a), Adjoint::Uniform(b)) if a.shape == b.shape => {
            Ok(Adjoint::Uniform(Uniform { value: a.value + b.value, shape: a.shape }))
        }
        (Adjoint::Uniform(uniform), Adjoint::Value(value))
        | (Adjoint::Value(value), Adjoint::Uniform(uniform)) => match value {
            Value::Float(number) => Ok(Adjoint::Uniform(Uniform {
                value: number + uniform.value,
                shape: uniform.shape,
            })),
            value if value.is_tensor() && value.shape() == &uniform.shape[..] => {
                Ok(Adjoint::Value(ops::add(t, value, Value::Float(uniform.value))?))
            }
            value => Ok(Adjoint::Value(ops::add(t, value, uniform.materialise()?)?)),
        },
        (a, b) => Ok(Adjoint::Value(ops::add(t, a.into_value()?, b.into_value()?)?)),
    }
}

/// One adjoint per node of a recording, up to the node the pass started from.
///
/// The number slots are kept in [`chunk`]s of [`chunk::WORDS`] nodes, each taken from the tape's
/// free list when a gradient first reaches one of its nodes (a chunk no gradient reached stays
/// absent and reads as no adjoint), and given back to it when the store is reset or cleared.
#[derive(Debug, Default)]
pub(crate) struct Adjoints {
    /// Chunk `k` holds the slots of nodes `k * chunk::WORDS` to `(k + 1) * chunk::WORDS`; there
    /// are as many entries as the store's length needs.
    chunks: Vec<Option<chunk::Numbers>>,
    len: usize,
    pool: Vec<Adjoint>,
}

impl Adjoints {
    /// Empties the store, giving its chunks back to the tape, and sizes it for `len` nodes.
    pub(crate) fn reset(&mut self, t: &mut Tape, len: usize) {
        self.clear(t);
        self.chunks.resize_with(len.div_ceil(chunk::WORDS), || None);
        self.len = len;
    }

    /// Releases the adjoints, giving the chunks back to the tape.
    pub(crate) fn clear(&mut self, t: &mut Tape) {
        for numbers in self.chunks.drain(..).flatten() {
            t.give_chunk(chunk::emptied(numbers));
        }
        self.len = 0;
        self.pool.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The address of each chunk the store holds, to check where its memory came from.
    #[cfg(test)]
    pub(crate) fn chunk_addresses(&self) -> Vec<usize> {
        self.chunks.iter().flatten().map(|numbers| numbers.as_ptr() as usize).collect()
    }

    /// The raw number slot of node `index`: its adjoint when that is a plain float (not NaN),
    /// a NaN otherwise (a marker, or a NaN adjoint). The fast path of the backward pass reads it.
    ///
    /// A chunk's slots past the store's length are never written, so they read as absent without
    /// a comparison with the length.
    #[inline(always)]
    pub(crate) fn number(&self, index: usize) -> f64 {
        match self.chunks.get(index >> chunk::BITS) {
            Some(Some(numbers)) => numbers[index & chunk::MASK],
            _ => f64::from_bits(ABSENT),
        }
    }

    /// The slots of the `k`-th chunk of nodes, if a gradient has reached any of them.
    #[inline(always)]
    pub(crate) fn chunk_mut(&mut self, k: usize) -> Option<&mut [f64; chunk::WORDS]> {
        self.chunks.get_mut(k)?.as_deref_mut()
    }

    /// The slot of node `index`, taking a chunk from the tape for it if it has none.
    #[inline(always)]
    fn slot_mut(&mut self, t: &mut Tape, index: usize) -> Result<&mut f64, AdError> {
        if index >= self.len {
            return Err(missing_node());
        }
        let entry = self.chunks.get_mut(index >> chunk::BITS).ok_or_else(missing_node)?;
        if entry.is_none() {
            *entry = Some(absent_numbers(t)?);
        }
        match entry {
            Some(numbers) => Ok(&mut numbers[index & chunk::MASK]),
            None => Err(missing_node()),
        }
    }

    /// The adjoint of node `index`, if any gradient reached it.
    pub(crate) fn get(&self, index: usize) -> Option<Adjoint> {
        match decode(self.number(index)) {
            Slot::Absent => None,
            Slot::Number(number) => Some(Adjoint::Value(Value::Float(number))),
            Slot::Pooled(position) => self.pool.get(position).cloned(),
        }
    }

    /// Moves the adjoint of node `index` out, leaving the node without one.
    pub(crate) fn take(&mut self, index: usize) -> Option<Adjoint> {
        if index >= self.len {
            return None;
        }
        let numbers = self.chunks.get_mut(index >> chunk::BITS)?.as_mut()?;
        let slot = &mut numbers[index & chunk::MASK];
        let taken = match decode(*slot) {
            Slot::Absent => None,
            Slot::Number(number) => Some(Adjoint::Value(Value::Float(number))),
            Slot::Pooled(position) => self.pool.get_mut(position).map(take_pooled),
        };
        *slot = f64::from_bits(ABSENT);
        taken
    }

    /// Sets the adjoint of a node that has none.
    pub(crate) fn set(
        &mut self,
        t: &mut Tape,
        index: usize,
        adjoint: Adjoint,
    ) -> Result<(), AdError> {
        let position = self.pool.len() as u64;
        let slot = self.slot_mut(t, index)?;
        match adjoint {
            Adjoint::Value(Value::Float(number)) => *slot = canonical(number),
            other => {
                if position > INDEX_MASK {
                    return Err(AdError::internal("too many pooled adjoints"));
                }
                *slot = f64::from_bits(POOLED | position);
                self.pool.push(other);
            }
        }
        Ok(())
    }

    /// Adds the plain number `value` to node `index`'s adjoint.
    #[inline(always)]
    pub(crate) fn add_number(
        &mut self,
        t: &mut Tape,
        index: usize,
        value: f64,
    ) -> Result<(), AdError> {
        let slot = self.slot_mut(t, index)?;
        let current = *slot;
        if !current.is_nan() {
            *slot = canonical(current + value);
            return Ok(());
        }
        // The first gradient to reach a node (every node of a chain), without decoding.
        if current.to_bits() == ABSENT {
            *slot = canonical(value);
            return Ok(());
        }
        match decode(current) {
            Slot::Absent => *slot = canonical(value),
            Slot::Number(_) => {}
            Slot::Pooled(_) => self.add(t, index, Adjoint::Value(Value::Float(value)))?,
        }
        Ok(())
    }

    /// Adds `contribution` to node `index`'s adjoint, which starts as zero.
    pub(crate) fn add(
        &mut self,
        t: &mut Tape,
        index: usize,
        contribution: Adjoint,
    ) -> Result<(), AdError> {
        if index >= self.len {
            return Err(missing_node());
        }
        match (decode(self.number(index)), contribution) {
            (Slot::Absent, contribution) => self.set(t, index, contribution),
            (Slot::Number(number), Adjoint::Value(Value::Float(value))) => {
                *self.slot_mut(t, index)? = canonical(number + value);
                Ok(())
            }
            (Slot::Number(number), contribution) => {
                let sum = sum(t, Adjoint::Value(Value::Float(number)), contribution)?;
                *self.slot_mut(t, index)? = f64::from_bits(ABSENT);
                self.set(t, index, sum)
            }
            (Slot::Pooled(position), contribution) => {
                let previous =
                    self.pool.get_mut(position).map(take_pooled).ok_or_else(missing_node)?;
                match sum(t, previous, contribution)? {
                    // A float sum goes back to the number slot; its pool entry stays unused.
                    Adjoint::Value(Value::Float(number)) => {
                        *self.slot_mut(t, index)? = canonical(number)
                    }
                    sum => self.pool[position] = sum,
                }
                Ok(())
            }
        }
    }
}

impl Adjoints {
    /// Adds `contribution` to the region `region` of node `index`'s adjoint, a tensor of
    /// `shape`: the gradient of a read `x[region]`. A plain adjoint tensor that the store alone
    /// holds is updated in place, so a read costs what it reads; a node's first gradient is a
    /// zero tensor with the region added, once. A contribution tracked by an enclosing level
    /// goes through the differentiable `ops::add_at`, so that higher derivatives are recorded.
    pub(crate) fn add_region(
        &mut self,
        t: &mut Tape,
        index: usize,
        shape: &[usize],
        region: &[tensor::Index],
        contribution: Value,
    ) -> Result<(), AdError> {
        if index >= self.len {
            return Err(missing_node());
        }
        let plain_contribution = !contribution.is_tracked();
        let existing = match decode(self.number(index)) {
            Slot::Pooled(position) if plain_contribution => match self.pool.get(position) {
                Some(Adjoint::Value(Value::Tensor(_))) => Some(position),
                _ => None,
            },
            _ => None,
        };
        match existing {
            Some(position) => {
                let Adjoint::Value(previous) = take_pooled(&mut self.pool[position]) else {
                    return Err(missing_node());
                };
                let previous = ops::plain::into_tensor(previous, "a gradient")?;
                let value = ops::plain::into_tensor(contribution, "a gradient")?;
                let updated = tensor::add_at(previous, region, &value)?;
                self.pool[position] = Adjoint::Value(Value::tensor(updated));
                Ok(())
            }
            None => {
                let zeros = Value::tensor(Tensor::zeros(shape)?);
                let scattered = ops::add_at(t, zeros, region, contribution)?;
                self.add(t, index, Adjoint::Value(scattered))
            }
        }
    }
}

/// The backward steps of a run of chains (one-word [`Rec::Scalar1`](super::op::Rec) records, each
/// the function of the node just before it) that end at position `p` of a chunk: `partials(q)` is
/// the partial derivative of the chain at position `q`, if that word is one, and `numbers` the
/// adjoint slots of the same chunk of nodes. Each step adds `g * dx` to the slot before, as
/// [`Adjoints::add_number`] does, while `g` is a plain number and the slot before holds a number
/// or nothing; the run stops at the first record it cannot take (the chunk's first word, whose
/// input is in the chunk before, is never taken) and returns that record's position, for the
/// general path.
#[inline(always)]
pub(crate) fn chain_run(
    numbers: &mut [f64; chunk::WORDS],
    mut p: usize,
    partials: impl Fn(usize) -> Option<f64>,
) -> usize {
    if p == 0 || p >= chunk::WORDS {
        return p;
    }
    // The adjoint each step writes is the next step's `g`, kept in a register: reading it back
    // from the slot put a store and a load on the chain of dependent steps, and the backward pass
    // of the `x * a + sin(x) * b` loop (10^6 chain records) took twice the time (`perf record`,
    // five repetitions in one process: 26 ms against 13 ms).
    let mut g = numbers[p];
    while p > 0 {
        let Some(dx) = partials(p) else { break };
        let before = numbers[p - 1];
        let sum = match (g.is_nan(), before.is_nan()) {
            (false, false) => before + g * dx,
            (false, true) if before.to_bits() == ABSENT => g * dx,
            _ => break,
        };
        g = canonical(sum);
        numbers[p - 1] = g;
        p -= 1;
    }
    p
}

/// A chunk of slots without adjoints, for the first gradient to reach one of its nodes.
#[cold]
#[inline(never)]
fn absent_numbers(t: &mut Tape) -> Result<chunk::Numbers, AdError> {
    Ok(chunk::filled(t.take_chunk()?, f64::from_bits(ABSENT)))
}

/// Moves a pooled adjoint out, leaving a placeholder nothing reads.
fn take_pooled(adjoint: &mut Adjoint) -> Adjoint {
    std::mem::replace(adjoint, Adjoint::Value(Value::Int(0)))
}

fn missing_node() -> AdError {
    AdError::internal("an adjoint for a node outside the store")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The adjoint of node `index` as a value (a uniform one materialised).
    fn value(store: &Adjoints, index: usize) -> Option<Value> {
        store.get(index).map(|adjoint| adjoint.into_value().unwrap())
    }

    fn numbers(value: Option<Value>) -> Vec<f64> {
        value.and_then(|value| value.as_tensor().map(Tensor::to_vec)).unwrap()
    }

    #[test]
    fn numbers_markers_and_pooled_values() {
        let mut tape = Tape::new();
        let mut store = Adjoints::default();
        store.reset(&mut tape, 3);
        assert!(store.get(0).is_none());
        store.add_number(&mut tape, 0, 1.5).unwrap();
        store.add_number(&mut tape, 0, 2.0).unwrap();
        assert!(matches!(value(&store, 0), Some(Value::Float(x)) if x == 3.5));
        store.add(&mut tape, 1, Value::tensor(Tensor::vector(vec![1.0])).into()).unwrap();
        store.add(&mut tape, 1, Value::Float(2.0).into()).unwrap();
        assert_eq!(numbers(value(&store, 1)), [3.0]);
        // NaN adjoints are values, never markers.
        store.add_number(&mut tape, 2, f64::from_bits(ABSENT)).unwrap();
        assert!(matches!(value(&store, 2), Some(Value::Float(x)) if x.is_nan()));
        assert!(store.take(1).is_some() && store.get(1).is_none());
        store.reset(&mut tape, 2);
        assert!(store.get(0).is_none() && store.get(1).is_none());
    }

    #[test]
    fn a_chain_run_stops_where_the_general_path_must_take_over() {
        let absent = f64::from_bits(ABSENT);
        let mut numbers = Box::new([absent; chunk::WORDS]);
        // Chains at positions 2 to 7, with partials 10 + position; position 1 is not a chain.
        let partials = |q: usize| (2..8).contains(&q).then_some(10.0 + q as f64);
        numbers[7] = 1.0;
        numbers[5] = 0.5;
        assert_eq!(chain_run(&mut numbers, 7, partials), 1);
        // 6 gets 17; 5 adds 16 * 17 to its 0.5; and so on down to 1, which the run writes
        // (it is the input of the chain at 2) but does not take.
        let expected_5 = 0.5 + 16.0 * 17.0;
        assert_eq!(&numbers[5..8], &[expected_5, 17.0, 1.0]);
        assert_eq!(numbers[1], 12.0 * 13.0 * 14.0 * 15.0 * expected_5);
        // A pooled slot before, a NaN gradient and a NaN slot before all stop the run.
        let mut numbers = Box::new([absent; chunk::WORDS]);
        numbers[7] = 1.0;
        numbers[6] = f64::from_bits(POOLED | 3);
        assert_eq!(chain_run(&mut numbers, 7, partials), 7);
        numbers[6] = f64::NAN;
        assert_eq!(chain_run(&mut numbers, 7, partials), 7);
        numbers[6] = 2.0;
        numbers[7] = absent;
        assert_eq!(chain_run(&mut numbers, 7, partials), 7);
        // A NaN product is stored as the quiet NaN, never as a marker, and as a NaN gradient it
        // stops the run at the next record.
        numbers[7] = f64::INFINITY;
        numbers[6] = absent;
        assert_eq!(chain_run(&mut numbers, 7, |_| Some(0.0)), 6);
        assert!(numbers[6].is_nan() && numbers[6].to_bits() == f64::NAN.to_bits());
    }

    #[test]
    fn uniform_adjoints_stay_symbolic_until_a_sum_is_not_uniform() {
        let mut tape = Tape::new();
        let mut store = Adjoints::default();
        store.reset(&mut tape, 3);
        // Uniform plus uniform, and plus a number, is uniform.
        store.add(&mut tape, 0, Uniform::new(1.5, &[2, 2]).into()).unwrap();
        store.add(&mut tape, 0, Uniform::new(2.0, &[2, 2]).into()).unwrap();
        store.add_number(&mut tape, 0, 0.5).unwrap();
        assert!(
            matches!(store.get(0), Some(Adjoint::Uniform(u)) if u == Uniform::new(4.0, &[2, 2]))
        );
        // Plus a tensor of its shape, it adds as a number; of another shape, it broadcasts.
        store.add(&mut tape, 0, Value::tensor(Tensor::vector(vec![1.0, 2.0])).into()).unwrap();
        assert_eq!(numbers(value(&store, 0)), [5.0, 6.0, 5.0, 6.0]);
        store.add(&mut tape, 1, Value::tensor(Tensor::vector(vec![1.0, 2.0])).into()).unwrap();
        store.add(&mut tape, 1, Uniform::new(-1.0, &[2]).into()).unwrap();
        assert_eq!(numbers(value(&store, 1)), [0.0, 1.0]);
        // A number slot that receives a uniform becomes uniform; shapes that differ broadcast.
        store.add_number(&mut tape, 2, 1.0).unwrap();
        store.add(&mut tape, 2, Uniform::new(2.0, &[1, 3]).into()).unwrap();
        store.add(&mut tape, 2, Uniform::new(0.5, &[2, 1]).into()).unwrap();
        assert_eq!(numbers(store.take(2).map(|adjoint| adjoint.into_value().unwrap())), [3.5; 6]);
    }
}
