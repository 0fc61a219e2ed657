//! Run-time shape checks and bindings of shape variables, index composition (`a[1:3][0]` reads
//! row 1), and the zero values of declarations.

use crate::code::{CheckContext, DimSpec, IndexEntry, Operand, ShapeCheck, ZeroKind};
use crate::error::RuntimeError;
use crate::value::Value;
use tensor::{Index, ShapeText, Tensor, TensorError};

use super::{Machine, int_of};

impl Machine<'_, '_> {
    /// The integer in a slot (an index, a bound, an extent).
    pub(super) fn int_at(&self, base: usize, operand: Operand) -> Result<i64, RuntimeError> {
        let value = &self.stack[base + operand.slot() as usize];
        int_of(value).ok_or_else(|| super::not_an_integer(value))
    }

    /// The value of a shape variable or extent.
    fn dim_value(&self, base: usize, spec: &DimSpec) -> Option<i64> {
        match spec {
            DimSpec::Known(n) => i64::try_from(*n).ok(),
            DimSpec::Slot(slot) => int_of(&self.stack[base + *slot as usize]),
            DimSpec::Global(global) => {
                self.globals.get(*global as usize).and_then(Option::as_ref).and_then(int_of)
            }
            DimSpec::BindSlot(_) | DimSpec::BindGlobal(_) | DimSpec::Any => None,
        }
    }

    /// Resolves extents for a constructor or a broadcast.
    pub(super) fn dims(&self, base: usize, specs: &[DimSpec]) -> Result<Vec<usize>, RuntimeError> {
        specs
            .iter()
            .map(|spec| {
                let value = self
                    .dim_value(base, spec)
                    .ok_or_else(|| RuntimeError::internal("an extent that is not known"))?;
                usize::try_from(value)
                    .map_err(|_| RuntimeError::new(format!("dimension {value} is negative")))
            })
            .collect()
    }

    /// Checks the value in `slot` against a declared shape, binding fresh shape variables.
    pub(super) fn check_shape(
        &mut self,
        base: usize,
        slot: u32,
        check: &ShapeCheck,
    ) -> Result<(), RuntimeError> {
        let shape = self.stack[base + slot as usize].shape().to_vec();
        let is_tensor = self.stack[base + slot as usize].is_tensor();
        if !is_tensor && !check.ranked {
            return Ok(());
        }
        let mut ok = shape.len() == check.dims.len();
        if ok {
            for (&extent, spec) in shape.iter().zip(&check.dims) {
                let value = extent as i64;
                match spec {
                    DimSpec::BindSlot(s) => self.stack[base + *s as usize] = Value::Int(value),
                    DimSpec::BindGlobal(g) => {
                        if let Some(global) = self.globals.get_mut(*g as usize) {
                            *global = Some(Value::Int(value));
                        }
                    }
                    DimSpec::Any => {}
                    other => {
                        if self.dim_value(base, other) != Some(value) {
                            ok = false;
                        }
                    }
                }
            }
        }
        if ok {
            return Ok(());
        }
        Err(RuntimeError::new(self.shape_message(base, check, &shape)))
    }

    fn shape_message(&self, base: usize, check: &ShapeCheck, shape: &[usize]) -> String {
        let mut bindings = Vec::new();
        for (spec, name) in check.dims.iter().zip(&check.names) {
            let (Some(name), Some(value)) = (name, self.dim_value(base, spec)) else { continue };
            let binding = format!("{name} = {value}");
            if !bindings.contains(&binding) {
                bindings.push(binding);
            }
        }
        let declared = match bindings.is_empty() {
            true => check.declared.clone(),
            false => format!("{} with {}", check.declared, bindings.join(", ")),
        };
        let found = ShapeText(shape);
        match &check.context {
            CheckContext::Variable { name } => {
                format!("shape mismatch: `{name}` is declared {declared}, but the value is {found}")
            }
            CheckContext::Argument { function, index } => format!(
                "shape mismatch: argument {} of `{function}` must be {declared}, but it is {found}",
                index + 1
            ),
            CheckContext::Return { function } => format!(
                "shape mismatch: `{function}` returns {declared}, but this value is {found}"
            ),
        }
    }

    /// The indices of a chain of `[...]` on a tensor of `shape`, composed so that each entry
    /// applies to the first axis of what the previous ones selected: an entry after a slice
    /// indexes within the slice.
    pub(super) fn index(
        &self,
        base: usize,
        shape: &[usize],
        entries: &[IndexEntry],
    ) -> Result<Vec<Index>, RuntimeError> {
        let mut out: Vec<Index> = Vec::with_capacity(entries.len());
        for entry in entries {
            let axis = out.len().saturating_sub(1);
            if let Some(&Index::Slice(Some(start), Some(end))) = out.last() {
                // Index within the slice that is the view's first axis.
                let extent = (end - start) as usize;
                let composed = match *entry {
                    IndexEntry::At(i) => {
                        let i = self.int_at(base, i)?;
                        if i < 0 || i >= end - start {
                            return Err(
                                TensorError::IndexOutOfRange { axis, index: i, extent }.into()
                            );
                        }
                        Index::At(start + i)
                    }
                    IndexEntry::Slice(lo, hi) => {
                        let lo = lo.map(|o| self.int_at(base, o)).transpose()?.unwrap_or(0);
                        let hi =
                            hi.map(|o| self.int_at(base, o)).transpose()?.unwrap_or(end - start);
                        if lo < 0 || lo > hi || hi > end - start {
                            return Err(TensorError::SliceOutOfRange {
                                axis,
                                start: lo,
                                end: hi,
                                extent,
                            }
                            .into());
                        }
                        Index::Slice(Some(start + lo), Some(start + hi))
                    }
                };
                if let Some(last) = out.last_mut() {
                    *last = composed;
                }
                continue;
            }
            let axis = out.len();
            let Some(&extent) = shape.get(axis) else {
                return Err(
                    TensorError::TooManyIndices { count: axis + 1, rank: shape.len() }.into()
                );
            };
            let signed_extent = extent as i64;
            out.push(match *entry {
                IndexEntry::At(i) => {
                    let i = self.int_at(base, i)?;
                    if i < 0 || i >= signed_extent {
                        return Err(TensorError::IndexOutOfRange { axis, index: i, extent }.into());
                    }
                    Index::At(i)
                }
                IndexEntry::Slice(lo, hi) => {
                    let lo = lo.map(|o| self.int_at(base, o)).transpose()?.unwrap_or(0);
                    let hi = hi.map(|o| self.int_at(base, o)).transpose()?.unwrap_or(signed_extent);
                    if lo < 0 || lo > hi || hi > signed_extent {
                        return Err(TensorError::SliceOutOfRange {
                            axis,
                            start: lo,
                            end: hi,
                            extent,
                        }
                        .into());
                    }
                    Index::Slice(Some(lo), Some(hi))
                }
            });
        }
        Ok(out)
    }

    /// The value of a declaration without an initializer.
    pub(super) fn zero(&self, base: usize, kind: &ZeroKind) -> Result<Value, RuntimeError> {
        Ok(match kind {
            ZeroKind::Int => Value::Int(0),
            ZeroKind::Float => Value::Float(0.0),
            ZeroKind::Bool => Value::Bool(false),
            ZeroKind::Char => Value::Char(0),
            ZeroKind::Tensor(dims) => {
                let shape = self.dims(base, dims)?;
                Value::tensor(Tensor::zeros(&shape)?)
            }
        })
    }
}
