//! NumPy's `einsum` notation: spec strings such as `"...ij,...jk->...ik"`, parsed by
//! [`einsum_notation`] (the checker's parser too), and their ellipsis expanded for the
//! operands' shapes into a plain [`Contraction`].
//!
//! Each operand's `...` stands for its axes that no letter names (its rank minus its letter
//! count). The `...` axes of all operands broadcast together right-aligned, as NumPy's
//! broadcasting does: an axis of extent 1 stretches to the others' extent, and any other
//! disagreement is an error. Expansion gives every broadcast `...` axis a fresh letter (one the
//! spec does not use), and drops an operand's extent-1 axis where the broadcast extent is
//! another: the contraction does not depend on that axis, so the caller removes it from the
//! operand (a reshape, which autodiff differentiates like any other) and the engine never sees a
//! label with two extents. A spec without `...` expands to the same contraction for every shape.

use einsum_notation::LETTER_COUNT;

use super::error::{EinsumError, EllipsisSite};
use super::label::Label;
use super::spec::{Contraction, intern};

/// A parsed NumPy `einsum` spec. Without `...` it is one [`Contraction`] for every shape; with
/// `...` it is expanded for the operands' shapes by [`EinsumSpec::expand`].
#[derive(Clone, Debug, PartialEq)]
pub struct EinsumSpec {
    /// Parsed with the checker's parser, output labels checked.
    notation: einsum_notation::Spec,
}

/// A spec expanded for some operand shapes: the contraction, and per operand the axes (of
/// extent 1, in increasing order) to remove from it before contracting.
#[derive(Clone, Debug, PartialEq)]
pub struct Expansion {
    pub contraction: Contraction,
    pub dropped_axes: Vec<Vec<usize>>,
}

impl EinsumSpec {
    /// Parses a NumPy `einsum` spec ([`einsum_notation`] has the grammar).
    ///
    /// Labels are ASCII letters and whitespace is ignored, but the three dots of `...` must be
    /// adjacent. Each operand and the output may have one `...`. Output labels must be distinct
    /// and each must occur in some operand.
    pub fn parse(spec: &str) -> Result<EinsumSpec, EinsumError> {
        let notation = einsum_notation::Spec::parse(spec)?;
        notation.check_output()?;
        Ok(EinsumSpec { notation })
    }

    /// The position of the first `...` in an operand, if any operand has one.
    pub fn ellipsis(&self) -> Option<usize> {
        self.notation.ellipsis()
    }

    /// The contraction of a spec without `...` in its operands, which is the same for every
    /// shape (a `...` in the output alone stands for no axes).
    pub fn to_contraction(&self) -> Result<Contraction, EinsumError> {
        if let Some(position) = self.ellipsis() {
            return Err(EinsumError::Ellipsis { position });
        }
        let empty: Vec<usize> = Vec::new();
        let shapes: Vec<&[usize]> =
            self.notation.operands().iter().map(|_| empty.as_slice()).collect();
        self.expand(&shapes).map(|expansion| expansion.contraction)
    }

    /// Expands the spec for operands of the given shapes: checks the ranks against the labels
    /// beside each `...`, broadcasts the `...` axes, and names them with fresh letters.
    ///
    /// Operands without `...` are not checked here: planning the contraction checks every
    /// label's extent. An implicit output is the broadcast `...` axes followed by the letters
    /// that occur exactly once, sorted by character code; an explicit output without `...` is an
    /// error when `...` stands for any axis, as in NumPy.
    pub fn expand<S: AsRef<[usize]>>(&self, shapes: &[S]) -> Result<Expansion, EinsumError> {
        let terms = self.notation.operands();
        if shapes.len() != terms.len() {
            return Err(EinsumError::OperandCount { expected: terms.len(), found: shapes.len() });
        }
        // The `...` axes of each operand, right-aligned against the broadcast ones.
        let mut ellipsis_shapes: Vec<&[usize]> = Vec::with_capacity(shapes.len());
        for (operand, (term, shape)) in terms.iter().zip(shapes).enumerate() {
            let shape = shape.as_ref();
            let axes = match (term.has_ellipsis(), term.align(shape)) {
                (false, _) => &[],
                (true, Some((_, axes, _))) => axes,
                (true, None) => {
                    let labels = term.letters().len();
                    return Err(EinsumError::EllipsisRank { operand, labels, rank: shape.len() });
                }
            };
            ellipsis_shapes.push(axes);
        }
        let broadcast =
            einsum_notation::broadcast(&ellipsis_shapes, broadcast_extent).map_err(|conflict| {
                let site = |operand: usize, extent: usize| EllipsisSite {
                    operand,
                    shape: ellipsis_shapes[operand].to_vec(),
                    extent,
                };
                EinsumError::EllipsisBroadcast {
                    first: site(conflict.first, conflict.first_extent),
                    second: site(conflict.second, conflict.second_extent),
                }
            })?;
        if let Some(output) = self.notation.output()
            && !output.has_ellipsis()
            && !broadcast.is_empty()
        {
            return Err(EinsumError::OutputEllipsisMissing { shape: broadcast });
        }
        let letters = self.notation.letters();
        let fresh = fresh_letters(&letters, broadcast.len()).ok_or(EinsumError::TooManyLabels {
            letters: letters.len(),
            ellipsis_axes: broadcast.len(),
        })?;
        let mut names: Vec<String> = Vec::new();
        let mut operands = Vec::with_capacity(terms.len());
        let mut dropped_axes = Vec::with_capacity(terms.len());
        for (term, axes) in terms.iter().zip(&ellipsis_shapes) {
            let (before, after) = term.split();
            let mut labels: Vec<Label> = Vec::with_capacity(term.letters().len() + axes.len());
            let mut dropped = Vec::new();
            for &letter in before {
                labels.push(intern(&mut names, &letter.to_string()));
            }
            let offset = broadcast.len() - axes.len();
            for (index, &extent) in axes.iter().enumerate() {
                match extent == 1 && broadcast[offset + index] != 1 {
                    true => dropped.push(before.len() + index),
                    false => labels.push(intern(&mut names, &fresh[offset + index].to_string())),
                }
            }
            for &letter in after {
                labels.push(intern(&mut names, &letter.to_string()));
            }
            operands.push(labels);
            dropped_axes.push(dropped);
        }
        let output: Vec<Label> = match self.notation.output() {
            Some(term) => {
                let (before, after) = term.split();
                let ellipsis = match term.has_ellipsis() {
                    true => fresh.as_slice(),
                    false => &[],
                };
                let letters = before.iter().chain(ellipsis).chain(after);
                letters.map(|letter| intern(&mut names, &letter.to_string())).collect()
            }
            None => {
                let once = self.notation.implicit_output();
                let letters = fresh.iter().chain(&once);
                letters.map(|letter| intern(&mut names, &letter.to_string())).collect()
            }
        };
        let contraction = Contraction::new(names, operands, output, 1.0)?;
        Ok(Expansion { contraction, dropped_axes })
    }
}

/// NumPy's broadcasting of two extents: equal extents agree, and an extent of 1 takes the other.
fn broadcast_extent(a: &usize, b: &usize) -> Option<usize> {
    match (*a, *b) {
        (a, b) if a == b => Some(a),
        (1, other) | (other, 1) => Some(other),
        _ => None,
    }
}

/// `count` letters the spec does not use, in alphabetical order (lowercase first), or `None` when
/// the 52 ASCII letters are not enough.
fn fresh_letters(used: &[char], count: usize) -> Option<Vec<char>> {
    if used.len() + count > LETTER_COUNT {
        return None;
    }
    let fresh: Vec<char> =
        ('a'..='z').chain('A'..='Z').filter(|letter| !used.contains(letter)).take(count).collect();
    (fresh.len() == count).then_some(fresh)
}
