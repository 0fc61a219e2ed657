//! The adjoint store of a backward pass: one slot per node, zero-filled on first use.
//!
//! Most adjoints of a scalar program are plain floats, so every node gets one `f64` (8 bytes) and
//! only the others (tensors, and values tracked by an enclosing level) live in a side pool. The
//! number slot tells which case holds by NaN-boxing: a signalling-NaN bit pattern marks a node no
//! gradient has reached, another carries the index of its adjoint in the pool. Arithmetic only
//! ever produces quiet NaNs, and the store canonicalises any NaN it is given, so a real NaN
//! adjoint is never mistaken for a marker. Resetting the store between passes is a fill of
//! numbers, without a destructor to run per node.

use super::error::AdError;
use super::tape::Tape;
use crate::ops;
use crate::value::Value;

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

/// One adjoint per node of a recording, up to the node the pass started from.
#[derive(Debug, Default)]
pub(crate) struct Adjoints {
    numbers: Vec<f64>,
    pool: Vec<Value>,
}

impl Adjoints {
    /// Empties the store and sizes it for `len` nodes, keeping its allocations.
    pub(crate) fn reset(&mut self, len: usize) {
        self.numbers.clear();
        self.numbers.resize(len, f64::from_bits(ABSENT));
        self.pool.clear();
    }

    /// Releases the adjoints while keeping the allocations.
    pub(crate) fn clear(&mut self) {
        self.numbers.clear();
        self.pool.clear();
    }

    pub(crate) fn len(&self) -> usize {
        self.numbers.len()
    }

    /// The allocation size, for choosing which store to keep.
    pub(crate) fn capacity(&self) -> usize {
        self.numbers.capacity()
    }

    /// The raw number slot of node `index`: its adjoint when that is a plain float (not NaN),
    /// a NaN otherwise (a marker, or a NaN adjoint). The fast path of the backward pass reads it.
    #[inline]
    pub(crate) fn number(&self, index: usize) -> f64 {
        self.numbers.get(index).copied().unwrap_or(f64::from_bits(ABSENT))
    }

    /// The adjoint of node `index`, if any gradient reached it.
    pub(crate) fn get(&self, index: usize) -> Option<Value> {
        match decode(self.number(index)) {
            Slot::Absent => None,
            Slot::Number(number) => Some(Value::Float(number)),
            Slot::Pooled(position) => self.pool.get(position).cloned(),
        }
    }

    /// Moves the adjoint of node `index` out, leaving the node without one.
    pub(crate) fn take(&mut self, index: usize) -> Option<Value> {
        let slot = self.numbers.get_mut(index)?;
        let taken = match decode(*slot) {
            Slot::Absent => None,
            Slot::Number(number) => Some(Value::Float(number)),
            Slot::Pooled(position) => {
                self.pool.get_mut(position).map(|value| std::mem::replace(value, Value::Int(0)))
            }
        };
        *slot = f64::from_bits(ABSENT);
        taken
    }

    /// Sets the adjoint of a node that has none.
    pub(crate) fn set(&mut self, index: usize, value: Value) -> Result<(), AdError> {
        let slot = self.numbers.get_mut(index).ok_or_else(missing_node)?;
        match value {
            Value::Float(number) => *slot = canonical(number),
            other => {
                let position = self.pool.len() as u64;
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
    #[inline]
    pub(crate) fn add_number(
        &mut self,
        t: &mut Tape,
        index: usize,
        value: f64,
    ) -> Result<(), AdError> {
        let slot = self.numbers.get_mut(index).ok_or_else(missing_node)?;
        let current = *slot;
        if !current.is_nan() {
            *slot = canonical(current + value);
            return Ok(());
        }
        match decode(current) {
            Slot::Absent => *slot = canonical(value),
            Slot::Number(_) => {}
            Slot::Pooled(_) => self.add(t, index, Value::Float(value))?,
        }
        Ok(())
    }

    /// Adds `contribution` to node `index`'s adjoint, which starts as zero.
    pub(crate) fn add(
        &mut self,
        t: &mut Tape,
        index: usize,
        contribution: Value,
    ) -> Result<(), AdError> {
        let current = *self.numbers.get(index).ok_or_else(missing_node)?;
        match (decode(current), contribution) {
            (Slot::Absent, contribution) => self.set(index, contribution),
            (Slot::Number(number), Value::Float(value)) => {
                self.numbers[index] = canonical(number + value);
                Ok(())
            }
            (Slot::Number(number), contribution) => {
                let sum = ops::add(t, Value::Float(number), contribution)?;
                self.numbers[index] = f64::from_bits(ABSENT);
                self.set(index, sum)
            }
            (Slot::Pooled(position), contribution) => {
                let previous = self
                    .pool
                    .get_mut(position)
                    .map(|value| std::mem::replace(value, Value::Int(0)))
                    .ok_or_else(missing_node)?;
                let sum = ops::add(t, previous, contribution)?;
                match sum {
                    // A float sum goes back to the number slot; its pool entry stays unused.
                    Value::Float(number) => self.numbers[index] = canonical(number),
                    sum => self.pool[position] = sum,
                }
                Ok(())
            }
        }
    }
}

fn missing_node() -> AdError {
    AdError::internal("an adjoint for a node outside the store")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_markers_and_pooled_values() {
        let mut tape = Tape::new();
        let mut store = Adjoints::default();
        store.reset(3);
        assert!(store.get(0).is_none());
        store.add_number(&mut tape, 0, 1.5).unwrap();
        store.add_number(&mut tape, 0, 2.0).unwrap();
        assert!(matches!(store.get(0), Some(Value::Float(x)) if x == 3.5));
        store.add(&mut tape, 1, Value::tensor(crate::tensor::Tensor::vector(vec![1.0]))).unwrap();
        store.add(&mut tape, 1, Value::Float(2.0)).unwrap();
        assert_eq!(store.get(1).unwrap().as_tensor().unwrap().to_vec(), [3.0]);
        // NaN adjoints are values, never markers.
        store.add_number(&mut tape, 2, f64::from_bits(ABSENT)).unwrap();
        assert!(matches!(store.get(2), Some(Value::Float(x)) if x.is_nan()));
        assert!(store.take(1).is_some() && store.get(1).is_none());
        store.reset(2);
        assert!(store.get(0).is_none() && store.get(1).is_none());
    }
}
