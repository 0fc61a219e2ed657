//! `einsum` with a literal specification (section 6), parsed by [`einsum_notation`] as the
//! engine parses it, and checked against the operands' static types as the engine checks it
//! against their shapes: the spec's syntax and output labels, the number of operands, each
//! operand's rank against its labels, every label's extent, and NumPy's ellipsis `...`, whose axes
//! broadcast together right-aligned.
//!
//! What the types do not settle (an operand of unknown rank, extents that are shape variables) is
//! left to the run-time check; the inferred result shape is then as precise as the types allow.

use einsum_notation::{LETTER_COUNT, SpecError};
use rustc_hash::FxHashMap;

use super::InferCtx;
use crate::{
    body::{Expr, ExprId, Literal},
    diagnostics::Code,
    ty::{Dim, Shape, Ty},
};

/// The checker's wording of a malformed spec, which names operands from 1.
fn spec_error_message(error: &SpecError) -> String {
    match error {
        SpecError::InvalidCharacter { character, .. } => {
            format!("einsum labels are letters, but the specification has `{character}`")
        }
        SpecError::StrayDot { .. } => {
            "the specification has a `.` that is not part of an ellipsis `...`".to_owned()
        }
        SpecError::RepeatedEllipsis { place, .. } => {
            format!(
                "the specification has a second `...` in {place}; each operand and the output \
                 may have one"
            )
        }
        SpecError::MultipleArrows { .. } => "the specification has a second `->`".to_owned(),
        SpecError::OutputLabelRepeated { label } => format!("output label `{label}` appears twice"),
        SpecError::OutputLabelUnknown { label } => {
            format!("output label `{label}` does not occur in any operand")
        }
    }
}

fn plural(count: usize, noun: &str, nouns: &str) -> String {
    if count == 1 { format!("1 {noun}") } else { format!("{count} {nouns}") }
}

impl InferCtx<'_> {
    pub(crate) fn infer_einsum(&mut self, args: &[ExprId], tys: &[Ty]) -> Ty {
        let spec_expr = args[0];
        let Expr::Literal(Literal::String(spec)) = self.body.exprs[spec_expr].clone() else {
            if tys[0] != Ty::Str {
                let span = self.expr_span(spec_expr);
                let message = format!(
                    "the first argument of `einsum` must be a string such as \"ik,kj->ij\", \
                     found {}",
                    tys[0]
                );
                self.report(Code::EinsumSpec, span, message);
                return Ty::Error;
            }
            return Ty::unranked();
        };
        let operands = &args[1..];
        let mut shapes = Vec::new();
        for (i, (&arg, ty)) in operands.iter().zip(&tys[1..]).enumerate() {
            match ty {
                Ty::Tensor(shape) => shapes.push(shape.clone()),
                other => {
                    let span = self.expr_span(arg);
                    self.report(
                        Code::TypeMismatch,
                        span,
                        format!("operand {} of `einsum` must be a tensor, found {other}", i + 1),
                    );
                    return Ty::Error;
                }
            }
        }
        let span = self.expr_span(spec_expr);
        let notation = match einsum_notation::Spec::parse(&spec) {
            Ok(notation) => notation,
            Err(error) => {
                self.report(Code::EinsumSpec, span, spec_error_message(&error));
                return Ty::Error;
            }
        };
        let inputs = notation.operands();
        if inputs.len() != operands.len() {
            self.report(
                Code::EinsumSpec,
                span,
                format!(
                    "the specification \"{spec}\" describes {} operand{}, but {} {} given",
                    inputs.len(),
                    if inputs.len() == 1 { "" } else { "s" },
                    operands.len(),
                    if operands.len() == 1 { "is" } else { "are" }
                ),
            );
            return Ty::Error;
        }
        let mut extents: FxHashMap<char, (Dim, usize)> = FxHashMap::default();
        // Each operand's `...` extents, while every operand with `...` has a known rank.
        let mut ellipses: Option<Vec<(usize, Vec<Dim>)>> = Some(Vec::new());
        for (i, (term, shape)) in inputs.iter().zip(&shapes).enumerate() {
            let Shape::Ranked(dims) = shape else {
                if term.has_ellipsis() {
                    ellipses = None;
                }
                continue;
            };
            let Some((head, middle, tail)) = term.align(dims) else {
                let arg_span = self.expr_span(operands[i]);
                let besides = if term.has_ellipsis() { " besides `...`" } else { "" };
                self.report(
                    Code::IndexLabelCount,
                    arg_span,
                    format!(
                        "operand {} is Tensor{shape} (rank {}), but the specification gives it \
                         {}{besides} \"{term}\"",
                        i + 1,
                        dims.len(),
                        plural(term.letters().len(), "label", "labels"),
                    ),
                );
                return Ty::Error;
            };
            if let Some(ellipses) = &mut ellipses
                && term.has_ellipsis()
            {
                ellipses.push((i, middle.to_vec()));
            }
            let (before, after) = term.split();
            for (&c, dim) in before.iter().zip(head).chain(after.iter().zip(tail)) {
                match extents.get(&c) {
                    Some((first, j)) if first.conflicts(dim) => {
                        let arg_span = self.expr_span(operands[i]);
                        let message = format!(
                            "label `{c}` is {first} in operand {} but {dim} in operand {}",
                            j + 1,
                            i + 1
                        );
                        let first_span = self.expr_span(operands[*j]);
                        self.report(Code::IndexLabelExtent, arg_span, message)
                            .label(first_span, format!("`{c}` is {first} here"));
                        return Ty::Error;
                    }
                    Some(_) => {}
                    None => {
                        extents.insert(c, (dim.clone(), i));
                    }
                }
            }
        }
        // The broadcast `...` axes, when every operand with `...` has a known rank.
        let broadcast = match ellipses {
            Some(ellipses) => match self.broadcast_ellipses(operands, &ellipses) {
                Some(broadcast) => Some(broadcast),
                None => return Ty::Error,
            },
            None => None,
        };
        if let Err(error) = notation.check_output() {
            self.report(Code::EinsumSpec, span, spec_error_message(&error));
            return Ty::Error;
        }
        let output = notation.output();
        if let Some(broadcast) = &broadcast {
            if let Some(output) = output
                && !output.has_ellipsis()
                && !broadcast.is_empty()
            {
                self.report(
                    Code::EinsumSpec,
                    span,
                    format!(
                        "the output has no `...`, but the operands' `...` stands for {} of shape \
                         {}; write `...` in the output to keep them, or labels to sum them",
                        plural(broadcast.len(), "axis", "axes"),
                        Shape::Ranked(broadcast.clone())
                    ),
                );
                return Ty::Error;
            }
            let letters = notation.letters().len();
            if letters + broadcast.len() > LETTER_COUNT {
                self.report(
                    Code::EinsumSpec,
                    span,
                    format!(
                        "the specification needs {} labels, {} and {} for `...`, but there are \
                         only {LETTER_COUNT} ASCII letters",
                        letters + broadcast.len(),
                        plural(letters, "letter", "letters"),
                        plural(broadcast.len(), "axis", "axes")
                    ),
                );
                return Ty::Error;
            }
        }
        let dim_of = |c: &char| extents.get(c).map_or(Dim::Unknown, |(d, _)| d.clone());
        let dims: Vec<Dim> = match output {
            Some(output) => {
                let (before, after) = output.split();
                let middle = match (output.has_ellipsis(), &broadcast) {
                    (false, _) => Vec::new(),
                    (true, Some(broadcast)) => broadcast.clone(),
                    (true, None) => return Ty::unranked(),
                };
                let before = before.iter().map(dim_of);
                before.chain(middle).chain(after.iter().map(dim_of)).collect()
            }
            None => {
                let ellipsis = match (notation.ellipsis(), broadcast) {
                    (None, _) => Vec::new(),
                    (Some(_), Some(broadcast)) => broadcast,
                    (Some(_), None) => return Ty::unranked(),
                };
                ellipsis.into_iter().chain(notation.implicit_output().iter().map(dim_of)).collect()
            }
        };
        match dims.is_empty() {
            true => Ty::Float,
            false => Ty::tensor(dims),
        }
    }

    /// Broadcasts the operands' `...` extents (operand index and extents) right-aligned, as
    /// NumPy does, reporting the first pair that cannot broadcast.
    fn broadcast_ellipses(
        &mut self,
        operands: &[ExprId],
        ellipses: &[(usize, Vec<Dim>)],
    ) -> Option<Vec<Dim>> {
        let shapes: Vec<&[Dim]> = ellipses.iter().map(|(_, dims)| dims.as_slice()).collect();
        let conflict = match einsum_notation::broadcast(&shapes, Dim::broadcast) {
            Ok(broadcast) => return Some(broadcast),
            Err(conflict) => conflict,
        };
        let (a, a_dims) = &ellipses[conflict.first];
        let (b, b_dims) = &ellipses[conflict.second];
        let a_shape = Shape::Ranked(a_dims.clone());
        let b_shape = Shape::Ranked(b_dims.clone());
        let message = format!(
            "`...` is {a_shape} in operand {} but {b_shape} in operand {}, which do not broadcast \
             ({} against {})",
            a + 1,
            b + 1,
            conflict.first_extent,
            conflict.second_extent
        );
        let span = self.expr_span(operands[*b]);
        let first_span = self.expr_span(operands[*a]);
        self.report(Code::IndexLabelExtent, span, message)
            .label(first_span, format!("`...` is {a_shape} here"))
            .help(
                "the `...` axes of the operands broadcast as in NumPy: aligned on the right, an \
                 extent of 1 stretches, and other extents must be equal",
            );
        None
    }
}
