//! Incremental reparsing, as rust-analyzer does it: the parse of a file after an edit, from the
//! parse before it. An edit inside one whitespace or comment token relexes that token alone; an
//! edit inside one block `{ ... }` parses the block's new text alone and splices its green node
//! into the old tree, so that every node the edit did not touch is shared with the old tree
//! (and compares equal to it at once). Anything else is a full parse of the new text.
//!
//! The result is always what [`crate::parse`] gives for the new text (the tests compare the two
//! trees and errors on many edits): a piece is reparsed alone only when the edit lies strictly
//! inside it, its new text lexes (or parses) as exactly one piece of the same kind, no error
//! straddles its boundary, and the tree is shallow enough that the parser's nesting limit cannot
//! differ.

use rowan::GreenToken;

use crate::{
    Parse, SyntaxError, SyntaxKind, SyntaxNode, TextRange, TextSize, WalkEvent, lex, parse,
};

/// An edit of a text: the range `delete` is replaced by `insert`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Indel {
    pub delete: TextRange,
    pub insert: String,
}

impl Indel {
    pub fn replace(delete: TextRange, insert: impl Into<String>) -> Indel {
        Indel { delete, insert: insert.into() }
    }

    /// The smallest edit that turns `old` into `new`: what lies between their common prefix and
    /// their common suffix (on character boundaries).
    pub fn between(old: &str, new: &str) -> Indel {
        let mut prefix = old.bytes().zip(new.bytes()).take_while(|(a, b)| a == b).count();
        while !old.is_char_boundary(prefix) || !new.is_char_boundary(prefix) {
            prefix -= 1;
        }
        let max_suffix = old.len().min(new.len()) - prefix;
        let mut suffix = old
            .bytes()
            .rev()
            .zip(new.bytes().rev())
            .take(max_suffix)
            .take_while(|(a, b)| a == b)
            .count();
        while !old.is_char_boundary(old.len() - suffix) || !new.is_char_boundary(new.len() - suffix)
        {
            suffix -= 1;
        }
        Indel {
            delete: TextRange::new(offset(prefix), offset(old.len() - suffix)),
            insert: new[prefix..new.len() - suffix].to_owned(),
        }
    }

    /// Applies the edit to `text`; `None` when its range is not within `text` on character
    /// boundaries.
    pub fn apply(&self, text: &str) -> Option<String> {
        let range = usize::from(self.delete.start())..usize::from(self.delete.end());
        text.get(range.clone())?;
        let mut out = String::with_capacity(text.len() - range.len() + self.insert.len());
        out.push_str(&text[..range.start]);
        out.push_str(&self.insert);
        out.push_str(&text[range.end..]);
        Some(out)
    }

    /// How much longer the text becomes.
    fn delta(&self) -> i64 {
        self.insert.len() as i64 - i64::from(u32::from(self.delete.len()))
    }
}

fn offset(n: usize) -> TextSize {
    TextSize::try_from(n).unwrap_or(TextSize::from(u32::MAX))
}

/// How deep the tree around a reparsed block may be; well below the parser's nesting limit, so
/// that parsing the block alone and in place cannot hit the limit differently.
const MAX_REPARSE_DEPTH: usize = crate::MAX_NESTING as usize / 2;

impl Parse {
    /// The parse of this parse's text after `edit`: the token or block around the edit parsed
    /// again when that is enough, else the whole text. An edit outside the text (or off its
    /// character boundaries) is clamped to a full parse of what the text becomes without it.
    pub fn reparse(&self, edit: &Indel) -> Parse {
        self.reparse_token(edit)
            .or_else(|| self.reparse_block(edit))
            .unwrap_or_else(|| self.full_reparse(edit))
    }

    fn full_reparse(&self, edit: &Indel) -> Parse {
        let text = self.syntax_node().to_string();
        match edit.apply(&text) {
            Some(new_text) => parse(&new_text),
            None => parse(&text),
        }
    }

    /// A whitespace or comment token the edit lies inside, relexed alone.
    fn reparse_token(&self, edit: &Indel) -> Option<Parse> {
        let root = self.syntax_node();
        let token = root.covering_element(edit.delete).into_token()?;
        let kind = token.kind();
        if !matches!(kind, SyntaxKind::WHITESPACE | SyntaxKind::COMMENT) {
            return None;
        }
        let range = token.text_range();
        // Strictly after its start, so that it cannot join the token before; up to its end,
        // where the check below sees whether it joins the token after.
        if !(range.start() < edit.delete.start() && edit.delete.end() <= range.end()) {
            return None;
        }
        let new_text = edit_inside(token.text(), range.start(), edit)?;
        let lexed = lex(&new_text);
        if !lexed.errors.is_empty() || lexed.tokens.len() != 1 || lexed.tokens[0].kind != kind {
            return None;
        }
        // A comment that now reaches into the next token (`/* a` before `*/`) would lex with it.
        if let Some(next) = token.next_token()
            && lex(&format!("{new_text}{}", next.text())).tokens.len() != 2
        {
            return None;
        }
        let errors = self.errors_around(range, edit, &[])?;
        let green = token.replace_with(GreenToken::new(kind.into(), &new_text));
        Some(Parse::new(green, errors))
    }

    /// The innermost block the edit lies strictly inside, parsed alone.
    fn reparse_block(&self, edit: &Indel) -> Option<Parse> {
        let root = self.syntax_node();
        let block = root
            .covering_element(edit.delete)
            .ancestors()
            .filter(|node| node.kind() == SyntaxKind::BLOCK)
            .find(|node| {
                let range = node.text_range();
                range.start() < edit.delete.start() && edit.delete.end() < range.end()
            })?;
        let old_range = block.text_range();
        let outer_depth = block.ancestors().count();
        if outer_depth + 1 >= MAX_REPARSE_DEPTH || !ends_with_own_brace(&block) {
            return None;
        }
        let block_text = edit_inside(&block.to_string(), old_range.start(), edit)?;
        let parsed = parse(&block_text);
        let new_root = parsed.syntax_node();
        let mut children = new_root.children_with_tokens();
        let new_block = children.next()?.into_node()?;
        if children.next().is_some()
            || new_block.kind() != SyntaxKind::BLOCK
            || new_block.text_range().len() != new_root.text_range().len()
            || !ends_with_own_brace(&new_block)
            || tree_depth(&new_block) + outer_depth >= MAX_REPARSE_DEPTH
        {
            return None;
        }
        let errors = self.errors_around(old_range, edit, parsed.errors())?;
        let green = block.replace_with(new_block.green().into_owned());
        Some(Parse::new(green, errors))
    }

    /// The errors of the reparsed text: this parse's errors outside `old_range` (those after it
    /// moved by the edit) and `inside`, the new piece's errors relative to its start. `None`
    /// when an error straddles the piece's boundary.
    fn errors_around(
        &self,
        old_range: TextRange,
        edit: &Indel,
        inside: &[SyntaxError],
    ) -> Option<Vec<SyntaxError>> {
        let delta = edit.delta();
        let shift = |offset: TextSize| -> Option<TextSize> {
            TextSize::try_from(usize::try_from(i64::from(u32::from(offset)) + delta).ok()?).ok()
        };
        let mut errors = Vec::with_capacity(self.errors().len() + inside.len());
        for error in self.errors() {
            let range = error.range;
            if range.end() <= old_range.start() && range.start() < old_range.start()
                || range.start() == old_range.start() && range.is_empty()
            {
                errors.push(error.clone());
            } else if range.start() >= old_range.end() {
                errors.push(error.shifted(shift)?);
            } else if !(range.start() > old_range.start() && range.end() <= old_range.end()) {
                // An error across the piece's boundary: leave it to a full parse.
                return None;
            }
        }
        for error in inside {
            errors.push(error.shifted(|offset| Some(offset + old_range.start()))?);
        }
        Some(errors)
    }
}

/// The text of a piece that starts at `start` and holds `edit`, after the edit.
fn edit_inside(text: &str, start: TextSize, edit: &Indel) -> Option<String> {
    let local = Indel { delete: edit.delete.checked_sub(start)?, insert: edit.insert.clone() };
    local.apply(text)
}

/// Whether a block's last token is its own closing brace (the parser found it).
fn ends_with_own_brace(block: &SyntaxNode) -> bool {
    let last = block.last_child_or_token();
    last.is_some_and(|last| {
        last.kind() == SyntaxKind::R_CURLY && last.text_range().end() == block.text_range().end()
    })
}

/// The depth of the deepest node under `node` (1 for a node without children).
pub fn tree_depth(node: &SyntaxNode) -> usize {
    let mut max = 0;
    let mut current = 0usize;
    for event in node.preorder() {
        match event {
            WalkEvent::Enter(_) => {
                current += 1;
                max = max.max(current);
            }
            WalkEvent::Leave(_) => current -= 1,
        }
    }
    max
}
