//! NumPy's `einsum` notation: parsing spec strings such as `"...ij,...jk->...ik"` and expanding
//! the ellipsis for the operands' shapes into a plain [`Contraction`].
//!
//! Each operand's `...` stands for its axes that no letter names (its rank minus its letter
//! count). The `...` axes of all operands broadcast together right-aligned, as NumPy's
//! broadcasting does: an axis of extent 1 stretches to the others' extent, and any other
//! disagreement is an error. Expansion gives every broadcast `...` axis a fresh letter (one the
//! spec does not use), and drops an operand's extent-1 axis where the broadcast extent is
//! another: the contraction does not depend on that axis, so the caller removes it from the
//! operand (a reshape, which autodiff differentiates like any other) and the engine never sees a
//! label with two extents. A spec without `...` expands to the same contraction for every shape.

use super::error::{EinsumError, EllipsisSite, Place};
use super::label::Label;
use super::spec::{Contraction, intern};

/// One operand's labels, or the output's, as written: letters, and where `...` sits among them.
#[derive(Clone, Debug, Default, PartialEq)]
struct Term {
    letters: Vec<char>,
    /// How many of the letters come before the `...`, when the term has one.
    ellipsis: Option<usize>,
}

/// A parsed NumPy `einsum` spec. Without `...` it is one [`Contraction`] for every shape; with
/// `...` it is expanded for the operands' shapes by [`EinsumSpec::expand`].
#[derive(Clone, Debug, PartialEq)]
pub struct EinsumSpec {
    operands: Vec<Term>,
    /// `None` without `->`: NumPy's implicit output.
    output: Option<Term>,
    /// The position in the spec string of the first `...` in an operand.
    ellipsis: Option<usize>,
}

/// A spec expanded for some operand shapes: the contraction, and per operand the axes (of
/// extent 1, in increasing order) to remove from it before contracting.
#[derive(Clone, Debug, PartialEq)]
pub struct Expansion {
    pub contraction: Contraction,
    pub dropped_axes: Vec<Vec<usize>>,
}

impl EinsumSpec {
    /// Parses a NumPy `einsum` spec.
    ///
    /// Labels are ASCII letters and whitespace is ignored, but the three dots of `...` must be
    /// adjacent. Each operand and the output may have one `...`. Output labels must be distinct
    /// and each must occur in some operand.
    pub fn parse(spec: &str) -> Result<EinsumSpec, EinsumError> {
        let chars: Vec<char> = spec.chars().collect();
        let mut operands: Vec<Term> = Vec::new();
        let mut current = Term::default();
        let mut in_output = false;
        let mut first_ellipsis = None;
        let mut position = 0;
        while let Some(&character) = chars.get(position) {
            let arrow = character == '-' && chars.get(position + 1) == Some(&'>');
            match character {
                _ if character.is_whitespace() => {}
                _ if character.is_ascii_alphabetic() => current.letters.push(character),
                ',' if !in_output => operands.push(std::mem::take(&mut current)),
                '-' if arrow && !in_output => {
                    operands.push(std::mem::take(&mut current));
                    in_output = true;
                    position += 1;
                }
                '-' if arrow => return Err(EinsumError::MultipleArrows { position }),
                '.' if chars[position..].starts_with(&['.', '.', '.']) => {
                    if current.ellipsis.is_some() {
                        let place = match in_output {
                            true => Place::Output,
                            false => Place::Operand(operands.len()),
                        };
                        return Err(EinsumError::RepeatedEllipsis { place, position });
                    }
                    current.ellipsis = Some(current.letters.len());
                    if !in_output {
                        first_ellipsis.get_or_insert(position);
                    }
                    position += 2;
                }
                '.' => return Err(EinsumError::StrayDot { position }),
                _ => return Err(EinsumError::InvalidCharacter { character, position }),
            }
            position += 1;
        }
        let output = match in_output {
            true => Some(current),
            false => {
                operands.push(current);
                None
            }
        };
        if let Some(output) = &output {
            for (index, &letter) in output.letters.iter().enumerate() {
                if output.letters[..index].contains(&letter) {
                    return Err(EinsumError::OutputLabelRepeated { label: letter.to_string() });
                }
                if !operands.iter().any(|term| term.letters.contains(&letter)) {
                    return Err(EinsumError::OutputLabelUnknown { label: letter.to_string() });
                }
            }
        }
        Ok(EinsumSpec { operands, output, ellipsis: first_ellipsis })
    }

    /// The position of the first `...` in an operand, if any operand has one.
    pub fn ellipsis(&self) -> Option<usize> {
        self.ellipsis
    }

    /// The contraction of a spec without `...` in its operands, which is the same for every
    /// shape (a `...` in the output alone stands for no axes).
    pub fn to_contraction(&self) -> Result<Contraction, EinsumError> {
        if let Some(position) = self.ellipsis {
            return Err(EinsumError::Ellipsis { position });
        }
        let empty: Vec<usize> = Vec::new();
        let shapes: Vec<&[usize]> = self.operands.iter().map(|_| empty.as_slice()).collect();
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
        if shapes.len() != self.operands.len() {
            return Err(EinsumError::OperandCount {
                expected: self.operands.len(),
                found: shapes.len(),
            });
        }
        // The `...` axes of each operand, right-aligned against the broadcast ones.
        let mut ellipsis_shapes: Vec<&[usize]> = Vec::with_capacity(shapes.len());
        for (operand, (term, shape)) in self.operands.iter().zip(shapes).enumerate() {
            let shape = shape.as_ref();
            let axes = match term.ellipsis {
                Some(before) => {
                    let after = term.letters.len() - before;
                    if shape.len() < term.letters.len() {
                        return Err(EinsumError::EllipsisRank {
                            operand,
                            labels: term.letters.len(),
                            rank: shape.len(),
                        });
                    }
                    &shape[before..shape.len() - after]
                }
                None => &[],
            };
            ellipsis_shapes.push(axes);
        }
        let broadcast = broadcast_shape(&ellipsis_shapes)?;
        if let Some(output) = &self.output
            && output.ellipsis.is_none()
            && !broadcast.is_empty()
        {
            return Err(EinsumError::OutputEllipsisMissing { shape: broadcast });
        }
        let mut letters: Vec<char> = Vec::new();
        for term in &self.operands {
            for &letter in &term.letters {
                if !letters.contains(&letter) {
                    letters.push(letter);
                }
            }
        }
        let fresh = fresh_letters(&letters, broadcast.len()).ok_or(EinsumError::TooManyLabels {
            letters: letters.len(),
            ellipsis_axes: broadcast.len(),
        })?;
        let mut names: Vec<String> = Vec::new();
        let mut operands = Vec::with_capacity(self.operands.len());
        let mut dropped_axes = Vec::with_capacity(self.operands.len());
        for (term, axes) in self.operands.iter().zip(&ellipsis_shapes) {
            let before = term.ellipsis.unwrap_or(term.letters.len());
            let mut labels: Vec<Label> = Vec::with_capacity(term.letters.len() + axes.len());
            let mut dropped = Vec::new();
            for &letter in &term.letters[..before] {
                labels.push(intern(&mut names, &letter.to_string()));
            }
            let offset = broadcast.len() - axes.len();
            for (index, &extent) in axes.iter().enumerate() {
                match extent == 1 && broadcast[offset + index] != 1 {
                    true => dropped.push(before + index),
                    false => labels.push(intern(&mut names, &fresh[offset + index].to_string())),
                }
            }
            for &letter in &term.letters[before..] {
                labels.push(intern(&mut names, &letter.to_string()));
            }
            operands.push(labels);
            dropped_axes.push(dropped);
        }
        let output: Vec<Label> = match &self.output {
            Some(term) => {
                let before = term.ellipsis.unwrap_or(term.letters.len());
                let ellipsis = match term.ellipsis {
                    Some(_) => fresh.as_slice(),
                    None => &[],
                };
                let letters =
                    term.letters[..before].iter().chain(ellipsis).chain(&term.letters[before..]);
                letters.map(|letter| intern(&mut names, &letter.to_string())).collect()
            }
            None => {
                let once = implicit_letters(&self.operands);
                let letters = fresh.iter().chain(&once);
                letters.map(|letter| intern(&mut names, &letter.to_string())).collect()
            }
        };
        let contraction = Contraction::new(names, operands, output, 1.0)?;
        Ok(Expansion { contraction, dropped_axes })
    }
}

/// NumPy's broadcasting of the operands' `...` axes, aligned on the right: equal extents agree,
/// and an extent of 1 takes the other's.
fn broadcast_shape(shapes: &[&[usize]]) -> Result<Vec<usize>, EinsumError> {
    let rank = shapes.iter().map(|shape| shape.len()).max().unwrap_or(0);
    let mut broadcast = Vec::with_capacity(rank);
    for axis in 0..rank {
        // The operand that decided the extent so far, with that extent.
        let mut decided: Option<(usize, usize)> = None;
        for (operand, shape) in shapes.iter().enumerate() {
            let Some(index) = (axis + shape.len()).checked_sub(rank) else { continue };
            let extent = shape[index];
            decided = match decided {
                None => Some((operand, extent)),
                Some((_, known)) if known == extent || extent == 1 => decided,
                Some((_, 1)) => Some((operand, extent)),
                Some((first, known)) => {
                    let site = |operand: usize, extent: usize| EllipsisSite {
                        operand,
                        shape: shapes[operand].to_vec(),
                        extent,
                    };
                    return Err(EinsumError::EllipsisBroadcast {
                        first: site(first, known),
                        second: site(operand, extent),
                    });
                }
            };
        }
        broadcast.push(decided.map_or(1, |(_, extent)| extent));
    }
    Ok(broadcast)
}

/// `count` letters the spec does not use, in alphabetical order (lowercase first), or `None` when
/// the 52 ASCII letters are not enough.
fn fresh_letters(used: &[char], count: usize) -> Option<Vec<char>> {
    if used.len() + count > 52 {
        return None;
    }
    let fresh: Vec<char> =
        ('a'..='z').chain('A'..='Z').filter(|letter| !used.contains(letter)).take(count).collect();
    (fresh.len() == count).then_some(fresh)
}

/// NumPy's implicit output letters: those that occur exactly once, sorted by character code.
fn implicit_letters(operands: &[Term]) -> Vec<char> {
    let all: Vec<char> = operands.iter().flat_map(|term| term.letters.iter().copied()).collect();
    let mut once: Vec<char> = Vec::new();
    for &letter in &all {
        if all.iter().filter(|&&other| other == letter).count() == 1 {
            once.push(letter);
        }
    }
    once.sort_unstable();
    once
}
