//! NumPy's `einsum` notation, the grammar of spec strings such as `"...ij,...jk->...ik"`, parsed
//! once for the checker (`hir`'s `infer/einsum.rs`) and the engine (`tensor::einsum::EinsumSpec`).
//!
//! A spec is one term of ASCII letters per operand, separated by `,`, then optionally `->` and the
//! output's term. Whitespace is ignored, but the three dots of an ellipsis `...` must be adjacent,
//! and each term may have one. Beside the grammar, this crate holds the rules both sides apply
//! alike: output labels are distinct and each occurs in some operand, NumPy's implicit output, and
//! how an operand's axes line up with its term and the operands' `...` axes broadcast.
//!
//! It knows no types, shapes or wording: extents are whatever the caller broadcasts (the checker's
//! symbolic dimensions, the engine's integers), and errors are values with positions and places
//! that each side words in its own terms.
//!
//! A leaf crate with no dependencies, so that the checker can use it without linking the tensor
//! engine's BLAS and LAPACK, and the engine without depending on the checker.

use std::fmt;

/// The number of distinct labels a spec can use: the ASCII letters.
pub const LETTER_COUNT: usize = 52;

/// One operand's labels, or the output's, as written: letters, and where `...` sits among them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Term {
    letters: Vec<char>,
    /// How many of the letters come before the `...`, when the term has one.
    ellipsis: Option<usize>,
}

impl Term {
    /// The letters in order, without the `...`.
    pub fn letters(&self) -> &[char] {
        &self.letters
    }

    pub fn has_ellipsis(&self) -> bool {
        self.ellipsis.is_some()
    }

    /// The letters before the `...` (all of them without one) and those after it.
    pub fn split(&self) -> (&[char], &[char]) {
        self.letters.split_at(self.ellipsis.unwrap_or(self.letters.len()))
    }

    /// An operand's axes (or their extents) as the term labels them: those of the letters before
    /// the `...`, those the `...` stands for (none without one) and those of the letters after it;
    /// `None` when the rank does not fit the term.
    pub fn align<'a, T>(&self, axes: &'a [T]) -> Option<(&'a [T], &'a [T], &'a [T])> {
        let fits = match self.ellipsis {
            Some(_) => axes.len() >= self.letters.len(),
            None => axes.len() == self.letters.len(),
        };
        if !fits {
            return None;
        }
        let (before, after) = self.split();
        let (head, rest) = axes.split_at(before.len());
        let (middle, tail) = rest.split_at(rest.len() - after.len());
        Some((head, middle, tail))
    }
}

/// The term as written, without whitespace: `...ij`.
impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (before, after) = self.split();
        let ellipsis = if self.has_ellipsis() { "..." } else { "" };
        let letters = |letters: &[char]| letters.iter().collect::<String>();
        write!(f, "{}{ellipsis}{}", letters(before), letters(after))
    }
}

/// Where a term sits in a spec: an operand, counted from 0, or the output. It is shown as
/// messages name it, counting operands from 1: `operand 1`, `the output`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Operand(usize),
    Output,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Operand(operand) => write!(f, "operand {}", operand + 1),
            Place::Output => write!(f, "the output"),
        }
    }
}

/// A malformed spec. Positions count characters of the spec string from 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecError {
    /// A character that is not a letter, whitespace, `,` between operands, `->` or `...`.
    InvalidCharacter { character: char, position: usize },
    /// A `.` that is not part of an ellipsis `...`.
    StrayDot { position: usize },
    /// A second `...` in one term.
    RepeatedEllipsis { place: Place, position: usize },
    /// A second `->`.
    MultipleArrows { position: usize },
    /// An output label written twice ([`Spec::check_output`]).
    OutputLabelRepeated { label: char },
    /// An output label that no operand has ([`Spec::check_output`]).
    OutputLabelUnknown { label: char },
}

/// A parsed spec: the operands' terms and, with `->`, the output's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    operands: Vec<Term>,
    /// `None` without `->`: NumPy's implicit output.
    output: Option<Term>,
    /// The position of the first `...` in an operand.
    ellipsis: Option<usize>,
}

impl Spec {
    /// Parses the grammar of a spec. The output's labels are checked apart, by
    /// [`Spec::check_output`], so that the checker can report the operands' problems first.
    pub fn parse(spec: &str) -> Result<Spec, SpecError> {
        let chars: Vec<char> = spec.chars().collect();
        let mut operands: Vec<Term> = Vec::new();
        let mut current = Term::default();
        let mut in_output = false;
        let mut ellipsis = None;
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
                '-' if arrow => return Err(SpecError::MultipleArrows { position }),
                '.' if chars[position..].starts_with(&['.', '.', '.']) => {
                    let place = match in_output {
                        true => Place::Output,
                        false => Place::Operand(operands.len()),
                    };
                    if current.has_ellipsis() {
                        return Err(SpecError::RepeatedEllipsis { place, position });
                    }
                    current.ellipsis = Some(current.letters.len());
                    if place != Place::Output {
                        ellipsis.get_or_insert(position);
                    }
                    position += 2;
                }
                '.' => return Err(SpecError::StrayDot { position }),
                _ => return Err(SpecError::InvalidCharacter { character, position }),
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
        Ok(Spec { operands, output, ellipsis })
    }

    /// Checks NumPy's rules for an explicit output: its labels are distinct and each occurs in
    /// some operand.
    pub fn check_output(&self) -> Result<(), SpecError> {
        let Some(output) = &self.output else { return Ok(()) };
        for (index, &label) in output.letters.iter().enumerate() {
            if output.letters[..index].contains(&label) {
                return Err(SpecError::OutputLabelRepeated { label });
            }
            if !self.operands.iter().any(|term| term.letters.contains(&label)) {
                return Err(SpecError::OutputLabelUnknown { label });
            }
        }
        Ok(())
    }

    pub fn operands(&self) -> &[Term] {
        &self.operands
    }

    /// The output's term, or `None` without `->`.
    pub fn output(&self) -> Option<&Term> {
        self.output.as_ref()
    }

    /// The position of the first `...` in an operand, if any operand has one.
    pub fn ellipsis(&self) -> Option<usize> {
        self.ellipsis
    }

    /// The distinct letters of the operands, in the order they first occur.
    pub fn letters(&self) -> Vec<char> {
        let mut letters: Vec<char> = Vec::new();
        for &letter in self.operands.iter().flat_map(|term| &term.letters) {
            if !letters.contains(&letter) {
                letters.push(letter);
            }
        }
        letters
    }

    /// NumPy's implicit output letters: those that occur exactly once in the operands, sorted by
    /// character code (uppercase first). The broadcast `...` axes, if any, come before them.
    pub fn implicit_output(&self) -> Vec<char> {
        let all: Vec<char> =
            self.operands.iter().flat_map(|term| term.letters.iter().copied()).collect();
        let mut once: Vec<char> = all
            .iter()
            .copied()
            .filter(|letter| all.iter().filter(|other| *other == letter).count() == 1)
            .collect();
        once.sort_unstable();
        once
    }
}

/// Two operands' `...` axes that do not broadcast: their indices among the shapes given to
/// [`broadcast`], and their extents at the first axis where they disagree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BroadcastConflict<T> {
    pub first: usize,
    pub first_extent: T,
    pub second: usize,
    pub second_extent: T,
}

/// NumPy's broadcasting of the operands' `...` axes, aligned on the right, with `join` saying
/// what two extents broadcast to (`None` when they do not).
///
/// The operand that changed an axis's extent decides it from then on, so that a conflict names
/// the operand with that extent. Operands without `...` have no axes here.
pub fn broadcast<T: Clone + PartialEq>(
    shapes: &[&[T]],
    join: impl Fn(&T, &T) -> Option<T>,
) -> Result<Vec<T>, BroadcastConflict<T>> {
    let rank = shapes.iter().map(|shape| shape.len()).max().unwrap_or(0);
    let mut broadcast = Vec::with_capacity(rank);
    for axis in 0..rank {
        // The operand that decided the extent so far, with that extent.
        let mut decided: Option<(usize, T)> = None;
        for (operand, shape) in shapes.iter().enumerate() {
            let Some(index) = (axis + shape.len()).checked_sub(rank) else { continue };
            let extent = &shape[index];
            decided = match decided {
                None => Some((operand, extent.clone())),
                Some((first, known)) => match join(&known, extent) {
                    Some(joined) if joined != known => Some((operand, joined)),
                    Some(_) => Some((first, known)),
                    None => {
                        return Err(BroadcastConflict {
                            first,
                            first_extent: known,
                            second: operand,
                            second_extent: extent.clone(),
                        });
                    }
                },
            };
        }
        // The longest shape has every axis, so each axis is decided.
        broadcast.extend(decided.map(|(_, extent)| extent));
    }
    Ok(broadcast)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_terms_and_the_first_operand_ellipsis() {
        let spec = Spec::parse("i j, ...jk -> ...ik").unwrap();
        let terms: Vec<String> = spec.operands().iter().map(Term::to_string).collect();
        assert_eq!(terms, ["ij", "...jk"]);
        assert_eq!(spec.output().map(Term::to_string).as_deref(), Some("...ik"));
        assert_eq!(spec.ellipsis(), Some(5));
        assert_eq!(spec.letters(), ['i', 'j', 'k']);
        assert_eq!(Spec::parse("ba,Ac").unwrap().implicit_output(), ['A', 'a', 'b', 'c']);
        assert_eq!(
            spec.operands()[1].align(&[5, 6, 7, 8]),
            Some((&[][..], &[5, 6][..], &[7, 8][..]))
        );
        assert_eq!(spec.operands()[0].align(&[5, 6, 7]), None);
    }

    #[test]
    fn errors_carry_positions_and_places() {
        let cases = [
            ("i$j", SpecError::InvalidCharacter { character: '$', position: 1 }),
            ("ij->i,j", SpecError::InvalidCharacter { character: ',', position: 5 }),
            ("i. ..", SpecError::StrayDot { position: 1 }),
            ("i,......", SpecError::RepeatedEllipsis { place: Place::Operand(1), position: 5 }),
            ("i->...i...", SpecError::RepeatedEllipsis { place: Place::Output, position: 7 }),
            ("i->i->i", SpecError::MultipleArrows { position: 4 }),
        ];
        for (spec, error) in cases {
            assert_eq!(Spec::parse(spec), Err(error), "{spec}");
        }
        let check = |spec: &str| Spec::parse(spec).unwrap().check_output();
        assert_eq!(check("ij->jj"), Err(SpecError::OutputLabelRepeated { label: 'j' }));
        assert_eq!(check("ij->k"), Err(SpecError::OutputLabelUnknown { label: 'k' }));
        assert_eq!(check("ij->ji"), Ok(()));
    }

    #[test]
    fn ellipsis_axes_broadcast_on_the_right() {
        let join = |a: &u32, b: &u32| match (*a, *b) {
            (a, b) if a == b => Some(a),
            (1, other) | (other, 1) => Some(other),
            _ => None,
        };
        assert_eq!(broadcast(&[&[2, 1, 3][..], &[], &[4, 1]], join), Ok(vec![2, 4, 3]));
        let conflict = BroadcastConflict { first: 1, first_extent: 4, second: 2, second_extent: 5 };
        assert_eq!(broadcast(&[&[1, 1][..], &[4, 1], &[5, 1]], join), Err(conflict));
    }
}
