//! `einsum` with a literal specification (section 6), checked against the operands' static
//! types as the interpreter's engine checks it against their shapes: the spec's syntax, the
//! number of operands, each operand's rank against its labels, every label's extent, and NumPy's
//! ellipsis `...`, whose axes broadcast together right-aligned.
//!
//! What the types do not settle (an operand of unknown rank, extents that are shape variables) is
//! left to the run-time check; the inferred result shape is then as precise as the types allow.

use rustc_hash::FxHashMap;

use super::InferCtx;
use crate::{
    body::{Expr, ExprId, Literal},
    diagnostics::Code,
    ty::{Dim, Shape, Ty},
};

/// The number of distinct labels a spec can use: the ASCII letters.
const LETTER_COUNT: usize = 52;

/// One operand's labels, or the output's, as written: letters, and where `...` sits among them.
#[derive(Default)]
struct Term {
    letters: Vec<char>,
    /// How many of the letters come before the `...`, when the term has one.
    ellipsis: Option<usize>,
}

impl Term {
    /// The letters before the `...` (all of them without one) and those after it.
    fn split(&self) -> (&[char], &[char]) {
        self.letters.split_at(self.ellipsis.unwrap_or(self.letters.len()))
    }

    /// The term as written, without whitespace: `...ij`.
    fn text(&self) -> String {
        let (before, after) = self.split();
        let ellipsis = if self.ellipsis.is_some() { "..." } else { "" };
        before.iter().collect::<String>() + ellipsis + &after.iter().collect::<String>()
    }
}

/// A spec's operand terms and, with `->`, its output term.
type ParsedSpec = (Vec<Term>, Option<Term>);

/// Parses a spec as the engine does (letters, `,`, one `->`, at most one `...` per term,
/// whitespace ignored), or says what is malformed.
fn parse_spec(spec: &str) -> Result<ParsedSpec, String> {
    let chars: Vec<char> = spec.chars().collect();
    let mut operands: Vec<Term> = Vec::new();
    let mut current = Term::default();
    let mut in_output = false;
    let mut position = 0;
    while let Some(&c) = chars.get(position) {
        let arrow = c == '-' && chars.get(position + 1) == Some(&'>');
        match c {
            _ if c.is_whitespace() => {}
            _ if c.is_ascii_alphabetic() => current.letters.push(c),
            ',' if !in_output => operands.push(std::mem::take(&mut current)),
            '-' if arrow && !in_output => {
                operands.push(std::mem::take(&mut current));
                in_output = true;
                position += 1;
            }
            '-' if arrow => return Err("the specification has a second `->`".to_owned()),
            '.' if chars[position..].starts_with(&['.', '.', '.']) => {
                if current.ellipsis.is_some() {
                    let place = match in_output {
                        true => "the output".to_owned(),
                        false => format!("operand {}", operands.len() + 1),
                    };
                    return Err(format!(
                        "the specification has a second `...` in {place}; each operand and the \
                         output may have one"
                    ));
                }
                current.ellipsis = Some(current.letters.len());
                position += 2;
            }
            '.' => {
                return Err(
                    "the specification has a `.` that is not part of an ellipsis `...`".to_owned()
                );
            }
            _ => return Err(format!("einsum labels are letters, but the specification has `{c}`")),
        }
        position += 1;
    }
    match in_output {
        true => Ok((operands, Some(current))),
        false => {
            operands.push(current);
            Ok((operands, None))
        }
    }
}

/// NumPy's broadcasting of two extents as far as the types know them, or `None` when they
/// cannot broadcast: a known 1 takes the other, a known extent wins over a variable or an
/// unknown one (at run time the other must be 1 or equal), and a variable agrees with itself.
fn broadcast_dim(a: &Dim, b: &Dim) -> Option<Dim> {
    match (a, b) {
        (Dim::Known(x), Dim::Known(y)) if x == y => Some(a.clone()),
        (Dim::Known(1), _) => Some(b.clone()),
        (_, Dim::Known(1)) => Some(a.clone()),
        (Dim::Known(_), Dim::Known(_)) => None,
        (Dim::Known(_), _) => Some(a.clone()),
        (_, Dim::Known(_)) => Some(b.clone()),
        (Dim::Var(x), Dim::Var(y)) if x == y => Some(a.clone()),
        _ => Some(Dim::Unknown),
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
        let (inputs, output) = match parse_spec(&spec) {
            Ok(parsed) => parsed,
            Err(message) => {
                self.report(Code::EinsumSpec, span, message);
                return Ty::Error;
            }
        };
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
        let mut counts: FxHashMap<char, usize> = FxHashMap::default();
        // Each operand's `...` extents, while every operand with `...` has a known rank.
        let mut ellipses: Option<Vec<(usize, Vec<Dim>)>> = Some(Vec::new());
        for (i, (term, shape)) in inputs.iter().zip(&shapes).enumerate() {
            for &c in &term.letters {
                *counts.entry(c).or_default() += 1;
            }
            let Shape::Ranked(dims) = shape else {
                if term.ellipsis.is_some() {
                    ellipses = None;
                }
                continue;
            };
            let labels = term.letters.len();
            let too_few = match term.ellipsis {
                Some(_) => dims.len() < labels,
                None => dims.len() != labels,
            };
            if too_few {
                let arg_span = self.expr_span(operands[i]);
                let besides = if term.ellipsis.is_some() { " besides `...`" } else { "" };
                self.report(
                    Code::IndexLabelCount,
                    arg_span,
                    format!(
                        "operand {} is Tensor{shape} (rank {}), but the specification gives it \
                         {}{besides} \"{}\"",
                        i + 1,
                        dims.len(),
                        plural(labels, "label", "labels"),
                        term.text()
                    ),
                );
                return Ty::Error;
            }
            let (before, after) = term.split();
            let tail = dims.len() - after.len();
            if let Some(ellipses) = &mut ellipses
                && term.ellipsis.is_some()
            {
                ellipses.push((i, dims[before.len()..tail].to_vec()));
            }
            let labelled = before.iter().zip(&dims[..before.len()]);
            for (&c, dim) in labelled.chain(after.iter().zip(&dims[tail..])) {
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
        if let Some(output) = &output {
            for (k, c) in output.letters.iter().enumerate() {
                if output.letters[..k].contains(c) {
                    self.report(
                        Code::EinsumSpec,
                        span,
                        format!("output label `{c}` appears twice"),
                    );
                    return Ty::Error;
                }
                if !counts.contains_key(c) {
                    self.report(
                        Code::EinsumSpec,
                        span,
                        format!("output label `{c}` does not occur in any operand"),
                    );
                    return Ty::Error;
                }
            }
        }
        if let Some(broadcast) = &broadcast {
            if let Some(output) = &output
                && output.ellipsis.is_none()
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
            if counts.len() + broadcast.len() > LETTER_COUNT {
                self.report(
                    Code::EinsumSpec,
                    span,
                    format!(
                        "the specification needs {} labels, {} and {} for `...`, but there are \
                         only {LETTER_COUNT} ASCII letters",
                        counts.len() + broadcast.len(),
                        plural(counts.len(), "letter", "letters"),
                        plural(broadcast.len(), "axis", "axes")
                    ),
                );
                return Ty::Error;
            }
        }
        let dim_of = |c: &char| extents.get(c).map_or(Dim::Unknown, |(d, _)| d.clone());
        let has_ellipsis = inputs.iter().any(|term| term.ellipsis.is_some());
        let dims: Vec<Dim> = match &output {
            Some(output) => {
                let (before, after) = output.split();
                let middle = match (output.ellipsis, &broadcast) {
                    (None, _) => Vec::new(),
                    (Some(_), Some(broadcast)) => broadcast.clone(),
                    (Some(_), None) => return Ty::unranked(),
                };
                let before = before.iter().map(dim_of);
                before.chain(middle).chain(after.iter().map(dim_of)).collect()
            }
            None => {
                let mut once: Vec<char> =
                    counts.iter().filter(|(_, n)| **n == 1).map(|(c, _)| *c).collect();
                once.sort_unstable();
                let ellipsis = match (has_ellipsis, broadcast) {
                    (false, _) => Vec::new(),
                    (true, Some(broadcast)) => broadcast,
                    (true, None) => return Ty::unranked(),
                };
                ellipsis.into_iter().chain(once.iter().map(dim_of)).collect()
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
        let rank = ellipses.iter().map(|(_, dims)| dims.len()).max().unwrap_or(0);
        let mut broadcast = Vec::with_capacity(rank);
        for axis in 0..rank {
            // The operand that decided the extent so far, by its place in `ellipses`.
            let mut decided: Option<(usize, Dim)> = None;
            for (index, (_, dims)) in ellipses.iter().enumerate() {
                let Some(position) = (axis + dims.len()).checked_sub(rank) else { continue };
                let dim = &dims[position];
                decided = match decided {
                    None => Some((index, dim.clone())),
                    Some((first, known)) => match broadcast_dim(&known, dim) {
                        // The operand that changed the extent decides it from now on, so
                        // that a conflict names the operand with that extent.
                        Some(joined) if joined != known => Some((index, joined)),
                        Some(_) => Some((first, known)),
                        None => {
                            let (a, a_dims) = &ellipses[first];
                            let (b, b_dims) = &ellipses[index];
                            let a_shape = Shape::Ranked(a_dims.clone());
                            let b_shape = Shape::Ranked(b_dims.clone());
                            let message = format!(
                                "`...` is {a_shape} in operand {} but {b_shape} in operand {}, \
                                 which do not broadcast ({known} against {dim})",
                                a + 1,
                                b + 1
                            );
                            let span = self.expr_span(operands[*b]);
                            let first_span = self.expr_span(operands[*a]);
                            self.report(Code::IndexLabelExtent, span, message)
                                .label(first_span, format!("`...` is {a_shape} here"))
                                .help(
                                    "the `...` axes of the operands broadcast as in NumPy: \
                                     aligned on the right, an extent of 1 stretches, and other \
                                     extents must be equal",
                                );
                            return None;
                        }
                    },
                };
            }
            broadcast.push(decided.map_or(Dim::Known(1), |(_, dim)| dim));
        }
        Some(broadcast)
    }
}
