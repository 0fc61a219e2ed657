//! Nabla's syntax: text to tokens to a lossless rowan tree, and the typed AST over it.
//!
//! Parsing never fails: [`parse`] returns a tree that holds every byte of the input (so
//! `parse(text).syntax_node().to_string() == text` for every input) and the errors beside it.
//! This crate knows nothing of semantics, salsa, or editors; it is one file at a time.

pub mod ast;
pub mod edit_distance;
mod fixes;
mod generated;
mod lexer;
mod line_index;
mod parser;
mod parsing;
mod reparsing;

use std::sync::Arc;

pub use rowan::{TextRange, TextSize, WalkEvent};

pub use crate::{
    ast::AstNode,
    generated::kinds::SyntaxKind,
    lexer::{LexError, Lexed, Token, lex},
    line_index::{LineCol, LineIndex},
    parser::MAX_NESTING,
    parsing::MAX_TREE_DEPTH,
    reparsing::{Indel, tree_depth},
};

/// The rowan language tag of Nabla trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NablaLanguage {}

impl rowan::Language for NablaLanguage {
    type Kind = SyntaxKind;

    fn kind_from_raw(raw: rowan::SyntaxKind) -> SyntaxKind {
        SyntaxKind::from_raw(raw.0)
    }

    fn kind_to_raw(kind: SyntaxKind) -> rowan::SyntaxKind {
        rowan::SyntaxKind(kind as u16)
    }
}

impl From<SyntaxKind> for rowan::SyntaxKind {
    fn from(kind: SyntaxKind) -> rowan::SyntaxKind {
        rowan::SyntaxKind(kind as u16)
    }
}

pub type SyntaxNode = rowan::SyntaxNode<NablaLanguage>;
pub type SyntaxToken = rowan::SyntaxToken<NablaLanguage>;
pub type SyntaxElement = rowan::SyntaxElement<NablaLanguage>;
pub type SyntaxNodeChildren = rowan::SyntaxNodeChildren<NablaLanguage>;
pub type SyntaxNodePtr = rowan::ast::SyntaxNodePtr<NablaLanguage>;
pub use rowan::GreenNode;

/// A syntax error: a message and the range it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SyntaxError {
    pub kind: SyntaxErrorKind,
    pub message: String,
    /// An empty range where something is missing, else the offending token.
    pub range: TextRange,
    /// For "expected X" errors, the text that, inserted at `range`, fixes the error.
    pub missing: Option<&'static str>,
    /// A line that says how Nabla writes what was meant.
    pub help: Option<String>,
    /// A fix-it beyond inserting a missing token: a keyword spelt right, `loop` for `while`.
    pub fix: Option<SyntaxFix>,
}

impl SyntaxError {
    pub fn new(message: impl Into<String>, range: TextRange) -> SyntaxError {
        SyntaxError {
            kind: SyntaxErrorKind::Syntax,
            message: message.into(),
            range,
            missing: None,
            help: None,
            fix: None,
        }
    }

    /// The same error with every range moved by `shift` (for a reparsed piece of a file), or
    /// `None` if a range would leave the file.
    pub fn shifted(&self, shift: impl Fn(TextSize) -> Option<TextSize>) -> Option<SyntaxError> {
        let move_range =
            |range: TextRange| Some(TextRange::new(shift(range.start())?, shift(range.end())?));
        let fix = match &self.fix {
            Some(fix) => Some(SyntaxFix {
                label: fix.label.clone(),
                edits: fix
                    .edits
                    .iter()
                    .map(|(range, text)| Some((move_range(*range)?, text.clone())))
                    .collect::<Option<Vec<_>>>()?,
            }),
            None => None,
        };
        Some(SyntaxError { range: move_range(self.range)?, fix, ..self.clone() })
    }
}

/// What kind of mistake a syntax error is; each has its own diagnostic code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyntaxErrorKind {
    /// Text that does not parse.
    Syntax,
    /// Missing punctuation; `missing` says which.
    Missing,
    /// A misspelt keyword, read as the keyword it stands for (`fucntion`, `lop`, `Tensr`).
    MisspeltKeyword,
    /// A construct from another language that Nabla writes differently (`for`, `while`, `**`,
    /// `{1, 2}`, `def`, `let`).
    ForeignSyntax,
}

/// A fix-it of a syntax error: a titled set of edits to the file's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SyntaxFix {
    pub label: String,
    /// Ranges to replace (empty to insert) and their new text; they do not overlap.
    pub edits: Vec<(TextRange, String)>,
}

/// The result of parsing a file: a green tree (cheap to clone and share between threads) and the
/// syntax errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parse {
    green: GreenNode,
    errors: Arc<[SyntaxError]>,
}

impl Parse {
    /// A parse of a tree and its errors, which are kept in order of their ranges (and messages),
    /// so that two parses of one text are equal however they were made.
    fn new(green: GreenNode, mut errors: Vec<SyntaxError>) -> Parse {
        errors.sort_by(|a, b| {
            (a.range.start(), a.range.end(), &a.message).cmp(&(
                b.range.start(),
                b.range.end(),
                &b.message,
            ))
        });
        Parse { green, errors: errors.into() }
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

    /// The tree as rust-analyzer prints it: one element per line, two spaces of indentation per
    /// level, nodes as `KIND@START..END` and tokens as `KIND@START..END "TEXT"` (TEXT as a JSON
    /// string). Past [`MAX_DUMP_INDENT`] levels the indentation stops growing and the line starts
    /// with its level instead, `[LEVEL] `, so that the dump stays linear in the size of the tree.
    pub fn debug_dump(&self) -> String {
        debug_dump(&self.syntax_node())
    }
}

/// Parses one file.
pub fn parse(text: &str) -> Parse {
    let (green, errors) = parsing::parse_text(text);
    Parse::new(green, errors)
}

/// How many levels [`debug_dump`] indents.
pub const MAX_DUMP_INDENT: usize = 100;

/// See [`Parse::debug_dump`].
pub fn debug_dump(node: &SyntaxNode) -> String {
    let mut out = String::new();
    let mut indent = 0usize;
    for event in node.preorder_with_tokens() {
        match event {
            WalkEvent::Enter(element) => {
                let range = element.text_range();
                out.push_str(&"  ".repeat(indent.min(MAX_DUMP_INDENT)));
                if indent > MAX_DUMP_INDENT {
                    out.push_str(&format!("[{indent}] "));
                }
                out.push_str(&format!("{:?}@{:?}", element.kind(), range));
                if let rowan::NodeOrToken::Token(token) = &element {
                    out.push(' ');
                    out.push_str(&json_string(token.text()));
                }
                out.push('\n');
                if element.as_node().is_some() {
                    indent += 1;
                }
            }
            WalkEvent::Leave(element) => {
                if element.as_node().is_some() {
                    indent = indent.saturating_sub(1);
                }
            }
        }
    }
    out
}

/// `text` as a JSON string literal.
pub fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\u{:04x}", u32::from(c)))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
