//! Gradients of contractions, which are contractions again.
//!
//! A contraction is linear in each operand, so the gradient of `sum(G * out)` with respect to
//! operand `k` contracts the output gradient `G` (labelled like the output) with every other
//! operand into operand `k`'s labels, with the same factor. Where operand `k` repeats a label the
//! gradient lives on that diagonal, and where it carries a label nothing else does (summed in the
//! forward pass) the gradient is broadcast along it; the general form of [`Contraction`] expresses
//! both, and an output shape (operand `k`'s) sizes the broadcast labels.
//!
//! The result is a plain [`Contraction`] value, so the autodiff tape can record it and
//! differentiate it again for higher-order derivatives.

use ndarray::{ArrayD, ArrayViewD};

use super::error::EinsumError;
use super::plan::PlanConfig;
use super::spec::Contraction;

impl Contraction {
    /// The contraction that maps the output's gradient to operand `operand`'s gradient.
    ///
    /// Its operands are the output gradient followed by the other operands in their order.
    pub fn gradient(&self, operand: usize) -> Result<Contraction, EinsumError> {
        let operands = self.operands();
        let Some(wrt) = operands.get(operand) else {
            return Err(EinsumError::OperandIndex { operand, count: operands.len() });
        };
        let mut inputs = Vec::with_capacity(operands.len());
        inputs.push(self.output().to_vec());
        inputs.extend(
            operands
                .iter()
                .enumerate()
                .filter(|&(other, _)| other != operand)
                .map(|(_, labels)| labels.clone()),
        );
        Ok(Contraction::new_general(self.names().to_vec(), inputs, wrt.clone(), self.factor()))
    }
}

/// Computes the gradient with respect to operand `operand` of a contraction applied to `operands`,
/// given the gradient of its output. The result has `operands[operand]`'s shape.
pub fn backward(
    contraction: &Contraction,
    operand: usize,
    output_gradient: ArrayViewD<'_, f64>,
    operands: &[ArrayViewD<'_, f64>],
) -> Result<ArrayD<f64>, EinsumError> {
    let count = contraction.operands().len();
    if operands.len() != count {
        return Err(EinsumError::OperandCount { expected: count, found: operands.len() });
    }
    let gradient = contraction.gradient(operand)?;
    let Some(wrt) = operands.get(operand) else {
        return Err(EinsumError::OperandIndex { operand, count });
    };
    let mut inputs = Vec::with_capacity(count);
    inputs.push(output_gradient);
    inputs.extend(
        operands
            .iter()
            .enumerate()
            .filter(|&(other, _)| other != operand)
            .map(|(_, view)| view.clone()),
    );
    let shapes: Vec<&[usize]> = inputs.iter().map(|input| input.shape()).collect();
    let config = PlanConfig { output_shape: Some(wrt.shape()), ..PlanConfig::default() };
    gradient.plan_with(&shapes, &config)?.execute(&inputs)
}
