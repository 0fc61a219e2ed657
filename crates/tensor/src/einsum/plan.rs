//! Planning a contraction for concrete shapes: extents are checked and fixed, labels only one
//! operand carries are marked for summing first, and the pairwise order is chosen.
//!
//! A [`Plan`] owns everything it needs, so an interpreter can cache it per statement and shape.

use ndarray::{ArrayD, ArrayViewD};

use super::contract;
use super::error::{EinsumError, LabelSite, Place};
use super::label::{Label, LabelSet};
use super::path::{Path, PathProblem, PathStrategy, find_path};
use super::spec::Contraction;

/// How to plan: the path strategy, and the output's shape when the contraction's output carries
/// labels no operand does (gradients broadcast along such labels).
#[derive(Clone, Copy, Debug, Default)]
pub struct PlanConfig<'a> {
    pub strategy: PathStrategy,
    pub output_shape: Option<&'a [usize]>,
}

#[derive(Clone, Debug)]
pub struct Plan {
    contraction: Contraction,
    operand_shapes: Vec<Vec<usize>>,
    output_shape: Vec<usize>,
    extents: Vec<usize>,
    prepared: Vec<Vec<Label>>,
    path: Path,
}

impl Contraction {
    /// Checks the operands' shapes against the labels and plans the contraction.
    pub fn plan<S: AsRef<[usize]>>(&self, shapes: &[S]) -> Result<Plan, EinsumError> {
        self.plan_with(shapes, &PlanConfig::default())
    }

    pub fn plan_with<S: AsRef<[usize]>>(
        &self,
        shapes: &[S],
        config: &PlanConfig<'_>,
    ) -> Result<Plan, EinsumError> {
        let extents = self.extents(shapes, config.output_shape)?;
        let output_shape: Vec<usize> =
            self.output().iter().map(|label| extents[label.index()]).collect();
        let prepared = self.prepared_labels();
        let capacity = self.label_count();
        let problem = PathProblem {
            inputs: prepared.iter().map(|labels| LabelSet::from_labels(capacity, labels)).collect(),
            output: LabelSet::from_labels(capacity, self.output()),
            extents: &extents,
        };
        let path = find_path(&problem, config.strategy);
        Ok(Plan {
            contraction: self.clone(),
            operand_shapes: shapes.iter().map(|shape| shape.as_ref().to_vec()).collect(),
            output_shape,
            extents,
            prepared,
            path,
        })
    }

    /// Plans for the operands' shapes and executes; the result is in standard (row-major) layout.
    pub fn execute(&self, operands: &[ArrayViewD<'_, f64>]) -> Result<ArrayD<f64>, EinsumError> {
        let shapes: Vec<&[usize]> = operands.iter().map(|operand| operand.shape()).collect();
        self.plan(&shapes)?.execute(operands)
    }

    /// The extent of every label, checking that all occurrences of a label agree.
    pub(crate) fn extents<S: AsRef<[usize]>>(
        &self,
        shapes: &[S],
        output_shape: Option<&[usize]>,
    ) -> Result<Vec<usize>, EinsumError> {
        if shapes.len() != self.operands().len() {
            return Err(EinsumError::OperandCount {
                expected: self.operands().len(),
                found: shapes.len(),
            });
        }
        let mut sites: Vec<Option<LabelSite>> = vec![None; self.label_count()];
        let mut record = |label: Label, site: LabelSite| match sites[label.index()] {
            None => {
                sites[label.index()] = Some(site);
                Ok(())
            }
            Some(first) if first.extent != site.extent => Err(EinsumError::ExtentMismatch {
                label: self.name(label).to_owned(),
                first,
                second: site,
            }),
            Some(_) => Ok(()),
        };
        for (operand, (labels, shape)) in self.operands().iter().zip(shapes).enumerate() {
            let shape = shape.as_ref();
            if labels.len() != shape.len() {
                return Err(EinsumError::RankMismatch {
                    operand,
                    labels: labels.len(),
                    rank: shape.len(),
                });
            }
            for (axis, (&label, &extent)) in labels.iter().zip(shape).enumerate() {
                record(label, LabelSite { place: Place::Operand(operand), axis, extent })?;
            }
        }
        match output_shape {
            Some(shape) => {
                if shape.len() != self.output().len() {
                    return Err(EinsumError::OutputRankMismatch {
                        labels: self.output().len(),
                        rank: shape.len(),
                    });
                }
                for (axis, (&label, &extent)) in self.output().iter().zip(shape).enumerate() {
                    record(label, LabelSite { place: Place::Output, axis, extent })?;
                }
            }
            None => {
                if let Some(&label) =
                    self.output().iter().find(|label| sites[label.index()].is_none())
                {
                    return Err(EinsumError::UnboundOutputLabel {
                        label: self.name(label).to_owned(),
                    });
                }
            }
        }
        // A label that occurs nowhere cannot arise from the constructors; its extent is never read.
        Ok(sites.iter().map(|site| site.map_or(1, |site| site.extent)).collect())
    }

    /// Each operand's labels once it has taken its diagonals and summed the labels nothing else
    /// needs: distinct, in order of first occurrence, and carried by another operand or the output.
    fn prepared_labels(&self) -> Vec<Vec<Label>> {
        let operands = self.operands();
        operands
            .iter()
            .enumerate()
            .map(|(operand, labels)| {
                let needed = |label: &Label| {
                    self.output().contains(label)
                        || operands
                            .iter()
                            .enumerate()
                            .any(|(other, labels)| other != operand && labels.contains(label))
                };
                let mut prepared: Vec<Label> = Vec::with_capacity(labels.len());
                for label in labels {
                    if needed(label) && !prepared.contains(label) {
                        prepared.push(*label);
                    }
                }
                prepared
            })
            .collect()
    }
}

impl Plan {
    /// Contracts tensors of the planned shapes; the result is in standard (row-major) layout.
    pub fn execute(&self, operands: &[ArrayViewD<'_, f64>]) -> Result<ArrayD<f64>, EinsumError> {
        if operands.len() != self.operand_shapes.len() {
            return Err(EinsumError::OperandCount {
                expected: self.operand_shapes.len(),
                found: operands.len(),
            });
        }
        for (operand, (view, expected)) in operands.iter().zip(&self.operand_shapes).enumerate() {
            if view.shape() != expected.as_slice() {
                return Err(EinsumError::PlanShape {
                    operand,
                    expected: expected.clone(),
                    found: view.shape().to_vec(),
                });
            }
        }
        contract::run(self, operands)
    }

    pub fn contraction(&self) -> &Contraction {
        &self.contraction
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn output_shape(&self) -> &[usize] {
        &self.output_shape
    }

    /// The extent of every label, indexed by [`Label::index`].
    pub fn extents(&self) -> &[usize] {
        &self.extents
    }

    pub(crate) fn prepared(&self) -> &[Vec<Label>] {
        &self.prepared
    }
}
