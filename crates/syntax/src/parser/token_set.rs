//! A compact set of token kinds, usable in `const` recovery and first sets.

use crate::SyntaxKind;

#[derive(Clone, Copy)]
pub(crate) struct TokenSet(u128);

impl TokenSet {
    pub(crate) const fn new(kinds: &[SyntaxKind]) -> TokenSet {
        let mut bits = 0u128;
        let mut i = 0;
        while i < kinds.len() {
            bits |= mask(kinds[i]);
            i += 1;
        }
        TokenSet(bits)
    }

    pub(crate) const fn union(self, other: TokenSet) -> TokenSet {
        TokenSet(self.0 | other.0)
    }

    pub(crate) const fn contains(&self, kind: SyntaxKind) -> bool {
        self.0 & mask(kind) != 0
    }
}

/// Token kinds come first in `SyntaxKind`, well below 128; node kinds never enter a set.
const fn mask(kind: SyntaxKind) -> u128 {
    let raw = kind as u16;
    if raw < 128 { 1u128 << raw } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_token_kind_fits_in_a_set() {
        assert!((SyntaxKind::ERROR as u16) < 128);
        let set = TokenSet::new(&[SyntaxKind::ERROR, SyntaxKind::IDENT]);
        assert!(set.contains(SyntaxKind::ERROR));
        assert!(!set.contains(SyntaxKind::L_PAREN));
    }
}
