//! The description of one contraction and its two front ends: NumPy `einsum` spec strings (parsed
//! by the `einsum-notation` crate, expanded in `notation.rs`) and the label lists of index statements.
//!
//! A [`Contraction`] knows labels, not shapes: the same value is checked against the operands'
//! shapes each time it is planned. Its meaning, for operands `X_j` with label lists `l_j`, output
//! labels `o` and factor `f`, is
//!
//! `out[a] = f * sum over every assignment s of all labels with s(o) = a of prod_j X_j[s(l_j)]`.
//!
//! The front ends accept only what NumPy accepts: output labels distinct and each carried by some
//! operand. Gradients (see `backward.rs`) produce the general form, whose output may repeat a label
//! (the result is zero off that diagonal) or name a label no operand carries (the result is
//! broadcast along it, and an output shape supplies its extent).

use std::fmt;
use std::str::FromStr;

use super::error::EinsumError;
use super::label::Label;
use super::notation::EinsumSpec;

#[derive(Clone, Debug, PartialEq)]
pub struct Contraction {
    names: Vec<String>,
    operands: Vec<Vec<Label>>,
    output: Vec<Label>,
    factor: f64,
}

impl Contraction {
    /// Parses a NumPy `einsum` spec such as `"ik,kj->ij"` whose operands have no `...`.
    ///
    /// Labels are ASCII letters and whitespace is ignored. Without `->` the output is every label
    /// that occurs exactly once, in alphabetical order (uppercase before lowercase), as in NumPy.
    /// What an operand's `...` stands for depends on the operands' ranks, so such a spec is the
    /// error [`EinsumError::Ellipsis`]; [`EinsumSpec::expand`] expands it for given shapes.
    pub fn from_spec(spec: &str) -> Result<Contraction, EinsumError> {
        EinsumSpec::parse(spec)?.to_contraction()
    }

    /// Builds the contraction of an index statement from its label names: for
    /// `C(i,j) += 0.5 * A(i,k) * B(k,j)` that is
    /// `from_labels(&[&["i", "k"], &["k", "j"]], &["i", "j"], 0.5)`.
    ///
    /// Labels are matched by name; the output labels must be distinct and each must occur on the
    /// right. Labels that occur only on the right are summed.
    pub fn from_labels<O, S>(
        operands: &[O],
        output: &[S],
        factor: f64,
    ) -> Result<Contraction, EinsumError>
    where
        O: AsRef<[S]>,
        S: AsRef<str>,
    {
        let mut names = Vec::new();
        let operands = operands
            .iter()
            .map(|labels| {
                labels.as_ref().iter().map(|name| intern(&mut names, name.as_ref())).collect()
            })
            .collect();
        let output = output.iter().map(|name| intern(&mut names, name.as_ref())).collect();
        Contraction::new(names, operands, output, factor)
    }

    /// Checks the front ends' rules and builds the contraction.
    pub(super) fn new(
        names: Vec<String>,
        operands: Vec<Vec<Label>>,
        output: Vec<Label>,
        factor: f64,
    ) -> Result<Contraction, EinsumError> {
        let contraction = Contraction { names, operands, output, factor };
        for (position, &label) in contraction.output.iter().enumerate() {
            if contraction.output[..position].contains(&label) {
                return Err(EinsumError::OutputLabelRepeated {
                    label: contraction.name(label).to_owned(),
                });
            }
            if !contraction.operands.iter().any(|labels| labels.contains(&label)) {
                return Err(EinsumError::OutputLabelUnknown {
                    label: contraction.name(label).to_owned(),
                });
            }
        }
        Ok(contraction)
    }

    /// Builds a contraction in the general form, without the front ends' rules.
    pub(crate) fn new_general(
        names: Vec<String>,
        operands: Vec<Vec<Label>>,
        output: Vec<Label>,
        factor: f64,
    ) -> Contraction {
        Contraction { names, operands, output, factor }
    }

    /// The same contraction with its factor multiplied by `factor`.
    pub fn scaled(&self, factor: f64) -> Contraction {
        Contraction { factor: self.factor * factor, ..self.clone() }
    }

    pub fn operands(&self) -> &[Vec<Label>] {
        &self.operands
    }

    pub fn output(&self) -> &[Label] {
        &self.output
    }

    pub fn factor(&self) -> f64 {
        self.factor
    }

    /// The number of distinct labels; every label's index is below it.
    pub fn label_count(&self) -> usize {
        self.names.len()
    }

    /// The name of a label, as written in the spec or the index statement.
    pub fn name(&self, label: Label) -> &str {
        self.names.get(label.index()).map_or("?", String::as_str)
    }

    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }
}

impl FromStr for Contraction {
    type Err = EinsumError;

    fn from_str(spec: &str) -> Result<Contraction, EinsumError> {
        Contraction::from_spec(spec)
    }
}

/// Writes the contraction as an `einsum` spec when every name is one letter, and with
/// parenthesised label lists otherwise: `0.5 * (i,k),(k,j)->(i,j)`.
impl fmt::Display for Contraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letters = self.names.iter().all(|name| name.len() == 1);
        let write_labels = |f: &mut fmt::Formatter<'_>, labels: &[Label]| {
            let names: Vec<&str> = labels.iter().map(|&label| self.name(label)).collect();
            match letters {
                true => write!(f, "{}", names.concat()),
                false => write!(f, "({})", names.join(",")),
            }
        };
        if self.factor != 1.0 {
            write!(f, "{} * ", self.factor)?;
        }
        for (index, labels) in self.operands.iter().enumerate() {
            if index > 0 {
                write!(f, ",")?;
            }
            write_labels(f, labels)?;
        }
        write!(f, "->")?;
        write_labels(f, &self.output)
    }
}

pub(super) fn intern(names: &mut Vec<String>, name: &str) -> Label {
    match names.iter().position(|known| known == name) {
        Some(index) => Label::new(index),
        None => {
            names.push(name.to_owned());
            Label::new(names.len() - 1)
        }
    }
}
