//! The parse of a file as the database keeps it, and incremental reparsing: after an edit inside
//! one block `{ ... }`, only that block's text is parsed again and its green node is spliced into
//! the previous tree, so re-checking after a keystroke does not re-parse the whole file.
//!
//! The result is always what a full parse gives (a property test compares the two on random
//! edits): the block is reparsed only when the edit lies strictly between its braces, its new
//! text still parses as exactly one block that ends at its own `}`, no error straddles its
//! boundary, and the tree is shallow enough that the parser's nesting limit cannot differ.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;
use syntax::{AstNode, GreenNode, SyntaxError, SyntaxKind, SyntaxNode, TextRange, TextSize, ast};

/// A parsed file: the green tree and the syntax errors, sorted by position.
#[derive(Debug, Clone, Eq)]
pub struct ParsedFile {
    green: GreenNode,
    errors: Arc<[SyntaxError]>,
}

impl PartialEq for ParsedFile {
    fn eq(&self, other: &ParsedFile) -> bool {
        self.errors == other.errors && crate::db::green_eq(&self.green, &other.green)
    }
}

impl ParsedFile {
    /// A full parse.
    pub fn parse(text: &str) -> ParsedFile {
        let parse = syntax::parse(text);
        ParsedFile::new(parse.green().clone(), parse.errors().to_vec())
    }

    fn new(green: GreenNode, mut errors: Vec<SyntaxError>) -> ParsedFile {
        errors.sort_by(|a, b| {
            (a.range.start(), a.range.end(), &a.message).cmp(&(
                b.range.start(),
                b.range.end(),
                &b.message,
            ))
        });
        ParsedFile { green, errors: errors.into() }
    }

    pub fn green(&self) -> &GreenNode {
        &self.green
    }

    pub fn syntax_node(&self) -> SyntaxNode {
        SyntaxNode::new_root(self.green.clone())
    }

    pub fn tree(&self) -> ast::SourceFile {
        match ast::SourceFile::cast(self.syntax_node()) {
            Some(file) => file,
            None => unreachable!("the root of every parse is a SOURCE_FILE"),
        }
    }

    pub fn errors(&self) -> &[SyntaxError] {
        &self.errors
    }
}

/// The previous text and parse of each file, for [`reparse`]. It only makes parsing faster: the
/// parse it helps produce is the same as a full one.
#[derive(Debug, Default, Clone)]
pub struct ReparseCache {
    entries: Arc<Mutex<FxHashMap<crate::SourceFile, CachedParse>>>,
}

/// A file's text and its parse.
type CachedParse = (Arc<str>, ParsedFile);

impl ReparseCache {
    pub(crate) fn parse(&self, file: crate::SourceFile, text: &Arc<str>) -> ParsedFile {
        let previous = self.entries.lock().ok().and_then(|entries| entries.get(&file).cloned());
        let parsed = match previous {
            Some((old_text, old)) if *old_text == **text => old,
            Some((old_text, old)) => {
                reparse(&old_text, &old, text).unwrap_or_else(|| ParsedFile::parse(text))
            }
            None => ParsedFile::parse(text),
        };
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(file, (text.clone(), parsed.clone()));
        }
        parsed
    }
}

/// How deep the tree around a reparsed block may be; well below the parser's nesting limit, so
/// that parsing the block alone and in place cannot hit the limit differently.
const MAX_REPARSE_DEPTH: usize = syntax::MAX_NESTING as usize / 2;

/// The parse of `new_text`, from the parse of `old_text`, when the edit between them lies inside
/// one block; `None` when a full parse is needed.
pub fn reparse(old_text: &str, old: &ParsedFile, new_text: &str) -> Option<ParsedFile> {
    let prefix = old_text.bytes().zip(new_text.bytes()).take_while(|(a, b)| a == b).count();
    let max_suffix = old_text.len().min(new_text.len()) - prefix;
    let suffix = old_text
        .bytes()
        .rev()
        .zip(new_text.bytes().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let size = |n: usize| TextSize::try_from(n).ok();
    let changed = TextRange::new(size(prefix)?, size(old_text.len() - suffix)?);
    let root = old.syntax_node();
    let block = root
        .covering_element(changed)
        .ancestors()
        .filter(|node| node.kind() == SyntaxKind::BLOCK)
        .find(|node| {
            let range = node.text_range();
            range.start() < changed.start() && changed.end() < range.end()
        })?;
    let old_range = block.text_range();
    if block.ancestors().count() + 1 >= MAX_REPARSE_DEPTH || !ends_with_own_brace(&block) {
        return None;
    }
    let delta = new_text.len() as i64 - old_text.len() as i64;
    let new_end = usize::try_from(i64::from(u32::from(old_range.end())) + delta).ok()?;
    let block_text = new_text.get(usize::from(old_range.start())..new_end)?;
    let parsed = syntax::parse(block_text);
    let new_root = parsed.syntax_node();
    let mut children = new_root.children_with_tokens();
    let new_block = children.next()?.into_node()?;
    if children.next().is_some()
        || new_block.kind() != SyntaxKind::BLOCK
        || new_block.text_range().len() != new_root.text_range().len()
        || !ends_with_own_brace(&new_block)
        || depth(&new_block) + block.ancestors().count() >= MAX_REPARSE_DEPTH
    {
        return None;
    }
    let mut errors = Vec::new();
    for error in old.errors() {
        let range = error.range;
        if range.end() <= old_range.start() && range.start() < old_range.start()
            || range.start() == old_range.start() && range.is_empty()
        {
            errors.push(error.clone());
        } else if range.start() >= old_range.end() {
            let shift = |offset: TextSize| -> Option<TextSize> {
                size(usize::try_from(i64::from(u32::from(offset)) + delta).ok()?)
            };
            errors.push(error.shifted(shift)?);
        } else if !(range.start() > old_range.start() && range.end() <= old_range.end()) {
            // An error across the block's boundary: leave it to a full parse.
            return None;
        }
    }
    for error in parsed.errors() {
        errors.push(error.shifted(|offset| Some(offset + old_range.start()))?);
    }
    let green = block.replace_with(new_block.green().into_owned());
    Some(ParsedFile::new(green, errors))
}

/// Whether a block's last token is its own closing brace (the parser found it).
fn ends_with_own_brace(block: &SyntaxNode) -> bool {
    let last = block.last_child_or_token();
    last.is_some_and(|last| {
        last.kind() == SyntaxKind::R_CURLY && last.text_range().end() == block.text_range().end()
    })
}

/// The depth of the deepest node under `node`.
fn depth(node: &SyntaxNode) -> usize {
    let mut max = 0;
    let mut current = 0usize;
    for event in node.preorder() {
        match event {
            syntax::WalkEvent::Enter(_) => {
                current += 1;
                max = max.max(current);
            }
            syntax::WalkEvent::Leave(_) => current -= 1,
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const PROGRAM: &str = "function float f(float x) {\n    if (x > 0) {\n        return x * 2.0;\n    }\n    return -x;\n}\nint y = 1\nprint(f(1.0));\n";

    #[test]
    fn an_edit_inside_a_block_reparses_the_block() {
        let old = ParsedFile::parse(PROGRAM);
        let new_text = PROGRAM.replace("x * 2.0", "x * 3.0 + (1");
        let incremental = reparse(PROGRAM, &old, &new_text);
        assert!(incremental.is_some(), "the edit lies inside a block");
        assert_eq!(incremental, Some(ParsedFile::parse(&new_text)));
    }

    #[test]
    fn an_edit_of_a_brace_needs_a_full_parse() {
        let old = ParsedFile::parse(PROGRAM);
        let new_text = PROGRAM.replacen("    }\n", "\n", 1);
        assert_eq!(reparse(PROGRAM, &old, &new_text), None);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        /// Whatever the edit, a reparse that succeeds equals a full parse.
        #[test]
        fn reparse_equals_full_parse(
            at in 0usize..PROGRAM.len(),
            len in 0usize..12,
            insert in "[ a-z0-9(){};,+*@=\\[\\]\"/\n]{0,6}",
        ) {
            let end = (at + len).min(PROGRAM.len());
            let mut new_text = PROGRAM.to_owned();
            new_text.replace_range(at..end, &insert);
            let old = ParsedFile::parse(PROGRAM);
            if let Some(incremental) = reparse(PROGRAM, &old, &new_text) {
                prop_assert_eq!(incremental, ParsedFile::parse(&new_text));
            }
        }
    }
}
