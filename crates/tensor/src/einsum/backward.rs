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
//! differentiate it again for higher-order derivatives. It is planned like any contraction, as one
//! network with the same path search as the forward pass, so its cost is comparable to the
//! forward's: for the ring `iab,jbc,kcd,lda->ijkl` both take the same flop count.
//!
//! A uniform output gradient (every element equal to some `c`, as `backward(sum(y))` seeds or the
//! backward of `sum` broadcasts) is a common special case with a much cheaper exact form: `G`
//! drops out of the sum, so the gradient is the contraction of the other operands alone into
//! operand `k`'s labels with the factor multiplied by `c` ([`Contraction::uniform_gradient`]).
//! Output labels that operand `k` lacks become ordinary summed labels of the other operands, and
//! are summed out of an operand before any pairwise step when only it carries them; output labels
//! only operand `k` carries become broadcast labels; and an output label no operand carries
//! (possible in the general form gradients produce) multiplies the factor by its extent. For the
//! benchmark's ring `iab,jbc,kcd,lda->ijkl` that turns a network of about ten GFLOPs into two
//! small matrix products.
//! Detecting it ([`uniform_value`]) reads the gradient once, which is trivial next to a
//! contraction, and stops at the first element that differs.
//!
//! The uniform form treats `G` as a constant, so its result has no derivative with respect to
//! `G`; callers that differentiate the backward pass again with respect to a `G` that is itself a
//! function of what they differentiate (the autodiff tape under nested differentiation) must use
//! it only for a `G` that is constant there.

use ndarray::{ArrayD, ArrayViewD};

use super::error::EinsumError;
use super::label::Label;
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

    /// The contraction that maps the other operands to operand `operand`'s gradient when every
    /// element of the output's gradient, of shape `output_shape`, equals `value`.
    ///
    /// Its operands are the other operands in their order; its factor is this contraction's times
    /// `value`, times the extent of each output label that neither operand `operand` nor any
    /// other operand carries (possible only in the general form gradients produce: the summand does
    /// not depend on such a label, so summing over it multiplies by its extent). It is exact, not an
    /// approximation: `sum_o value * d out[o] / d X_k` is `value` times the gradient of the plain
    /// sum of the output.
    pub fn uniform_gradient(
        &self,
        operand: usize,
        value: f64,
        output_shape: &[usize],
    ) -> Result<Contraction, EinsumError> {
        let operands = self.operands();
        let Some(wrt) = operands.get(operand) else {
            return Err(EinsumError::OperandIndex { operand, count: operands.len() });
        };
        if output_shape.len() != self.output().len() {
            return Err(EinsumError::OutputRankMismatch {
                labels: self.output().len(),
                rank: output_shape.len(),
            });
        }
        let mut factor = self.factor() * value;
        let mut counted: Vec<Label> = Vec::new();
        for (&label, &extent) in self.output().iter().zip(output_shape) {
            if !counted.contains(&label) && !operands.iter().flatten().any(|&known| known == label)
            {
                counted.push(label);
                factor *= extent as f64;
            }
        }
        let inputs = operands
            .iter()
            .enumerate()
            .filter(|&(other, _)| other != operand)
            .map(|(_, labels)| labels.clone())
            .collect();
        Ok(Contraction::new_general(self.names().to_vec(), inputs, wrt.clone(), factor))
    }
}

/// The value every element of `tensor` holds, when there is at least one element and all are
/// equal (`==`, so a tensor holding a NaN never qualifies and `0.0` equals `-0.0`).
///
/// Reads the elements once in memory order and stops at the first that differs.
pub fn uniform_value(tensor: &ArrayViewD<'_, f64>) -> Option<f64> {
    let first = *tensor.iter().next()?;
    let same = match tensor.as_slice_memory_order() {
        Some(data) => data.iter().all(|&x| x == first),
        None => tensor.iter().all(|&x| x == first),
    };
    same.then_some(first)
}

/// Computes the gradient with respect to operand `operand` of a contraction applied to `operands`,
/// given the gradient of its output. The result has `operands[operand]`'s shape.
///
/// A uniform output gradient takes the cheaper [`Contraction::uniform_gradient`] form.
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
    let Some(wrt) = operands.get(operand) else {
        return Err(EinsumError::OperandIndex { operand, count });
    };
    let full = contraction.gradient(operand)?;
    let mut full_shapes: Vec<&[usize]> = Vec::with_capacity(count);
    full_shapes.push(output_gradient.shape());
    full_shapes.extend(
        operands
            .iter()
            .enumerate()
            .filter(|&(other, _)| other != operand)
            .map(|(_, view)| view.shape()),
    );
    // The output gradient's shape is checked in both forms.
    full.extents(&full_shapes, Some(wrt.shape()))?;
    let mut inputs = Vec::with_capacity(count);
    let gradient = match uniform_value(&output_gradient) {
        Some(value) => contraction.uniform_gradient(operand, value, output_gradient.shape())?,
        None => {
            inputs.push(output_gradient);
            full
        }
    };
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
