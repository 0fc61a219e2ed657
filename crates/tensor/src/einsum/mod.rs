//! Index-notation tensor algebra and `einsum`: specs, contraction paths and BLAS execution.
//!
//! An [`EinsumSpec`] is a parsed NumPy spec string; its ellipsis `...` is expanded for the
//! operands' shapes into a [`Contraction`] (see `notation.rs`).
//!
//! A [`Contraction`] describes one product of labelled tensors (`C(i,j) = 0.5 * A(i,k) * B(k,j)`
//! or `einsum("ik,kj->ij", A, B)`): per operand a list of labels, the output's labels and a scalar
//! factor. Planning it for concrete shapes ([`Contraction::plan`]) checks every extent and picks
//! the pairwise order by estimated flops (optimal for small networks, greedy beyond, as opt_einsum
//! does); executing the [`Plan`] runs one `dgemm` per pairwise contraction. Gradients are
//! contractions too ([`Contraction::gradient`], [`backward`]), with a cheaper exact form for a
//! uniform output gradient ([`Contraction::uniform_gradient`]).
//!
//! The engine works on plain `ndarray` arrays and knows nothing of the interpreter's values, the
//! tape or source spans: callers overwrite, accumulate (`+=`) or scale (`*=`) with the result, and
//! re-word errors in their own terms from the data each [`EinsumError`] carries.

mod backward;
mod contract;
mod error;
mod label;
mod notation;
mod path;
mod plan;
mod spec;

#[cfg(test)]
mod tests;

use ndarray::{ArrayD, ArrayViewD, Axis};

pub use backward::{backward, uniform_value};
pub use error::{EinsumError, EllipsisSite, LabelSite, Place};
pub use label::Label;
pub use notation::{EinsumSpec, Expansion};
pub use path::{OPTIMAL_HARD_LIMIT, OPTIMAL_OPERAND_LIMIT, Path, PathStrategy};
pub use plan::{Plan, PlanConfig};
pub use spec::Contraction;

/// NumPy's `einsum` on `f64` tensors: parses `spec`, expands its ellipsis for the operands,
/// checks it against them and contracts.
pub fn einsum(spec: &str, operands: &[ArrayViewD<'_, f64>]) -> Result<ArrayD<f64>, EinsumError> {
    let shapes: Vec<&[usize]> = operands.iter().map(|operand| operand.shape()).collect();
    let expansion = EinsumSpec::parse(spec)?.expand(&shapes)?;
    let views: Vec<ArrayViewD<'_, f64>> = operands
        .iter()
        .zip(&expansion.dropped_axes)
        .map(|(view, dropped)| {
            // Each dropped axis has extent 1, so index 0 is its only entry; the last goes first
            // so that the others keep their numbers.
            dropped
                .iter()
                .rev()
                .fold(view.clone(), |view, &axis| view.index_axis_move(Axis(axis), 0))
        })
        .collect();
    expansion.contraction.execute(&views)
}
