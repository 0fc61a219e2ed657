//! Index labels and small dense sets of them, shared by the spec, the path search and execution.

use std::fmt;

/// One index label of a contraction: a dense id into the contraction's table of label names.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Label(u32);

impl Label {
    pub(crate) fn new(index: usize) -> Label {
        // A contraction cannot name more labels than it has axes, and no tensor has 2^32 axes.
        Label(u32::try_from(index).unwrap_or(u32::MAX))
    }

    /// The label's position in its contraction's name table.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// A set of labels of one contraction, stored as a bit set sized for that contraction.
///
/// All sets compared with each other must be created with the same capacity, so that equality can
/// compare the words directly.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub(crate) struct LabelSet {
    words: Vec<u64>,
}

impl LabelSet {
    pub(crate) fn empty(capacity: usize) -> LabelSet {
        LabelSet { words: vec![0; capacity.div_ceil(64)] }
    }

    pub(crate) fn from_labels(capacity: usize, labels: &[Label]) -> LabelSet {
        let mut set = LabelSet::empty(capacity);
        for &label in labels {
            set.insert(label);
        }
        set
    }

    pub(crate) fn insert(&mut self, label: Label) {
        let index = label.index();
        if let Some(word) = self.words.get_mut(index / 64) {
            *word |= 1 << (index % 64);
        }
    }

    pub(crate) fn contains(&self, label: Label) -> bool {
        let index = label.index();
        self.words.get(index / 64).is_some_and(|word| word & (1 << (index % 64)) != 0)
    }

    pub(crate) fn union(&self, other: &LabelSet) -> LabelSet {
        let words = self.words.iter().zip(&other.words).map(|(a, b)| a | b).collect();
        LabelSet { words }
    }

    pub(crate) fn intersects(&self, other: &LabelSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    pub(crate) fn len(&self) -> usize {
        self.words.iter().map(|word| word.count_ones() as usize).sum()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = Label> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            (0..64)
                .filter(move |bit| word & (1 << bit) != 0)
                .map(move |bit| Label::new(w * 64 + bit))
        })
    }

    /// The number of elements of a tensor carrying exactly these labels.
    ///
    /// Floating point, because path costs of large networks overflow every integer type.
    pub(crate) fn size(&self, extents: &[usize]) -> f64 {
        self.iter().map(|label| extents.get(label.index()).copied().unwrap_or(1) as f64).product()
    }
}
