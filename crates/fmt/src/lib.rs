//! The Nabla formatter: one canonical layout of a file, computed from its lossless syntax tree,
//! for `nabla fmt` and the language server's format-on-save.
//!
//! [`format()`] builds a document (`doc.rs`, a Wadler/Prettier-style pretty printer) from the tree
//! (`layout.rs`), with every comment attached to a token (`comments.rs`), and prints it in lines
//! of at most [`WIDTH`] columns where it can. A file with syntax errors is not formatted: the
//! errors come back instead. The layout in short (`docs/formatting.md` has all of it):
//!
//! - 4-space indentation, one item or statement per line, `{` on the line of what it opens and
//!   `}` on a line of its own, `} elif (...) {` and `} else {` on the line of the `}`; `{}` for an
//!   empty block without comments.
//! - One space around binary and assignment operators and after commas; none inside brackets,
//!   after unary operators, before postfix ones, before `(` of a call or `[` of an index, in
//!   slices, casts and dimensions: `C(i, j) = A(i, k) * B(k, j);`, `var Tensor w[3][1] = f(-x);`.
//! - Long lists (arguments, parameters, tensor literals, the fields of a record literal) break one
//!   element per line with a trailing comma; a tensor literal of numbers packs as many per line as
//!   fit. Long operator chains break after the operators; long conditions go on lines of their
//!   own. A `struct` has one field per line; a record literal that fits is `Linear { w: x, b: y }`.
//! - Blank lines between items and statements are kept, at most one; none at the start or the
//!   end of a block. The file ends with one line break.
//! - Comments keep their text and their place: own-line comments stay on their own line, comments
//!   after code stay at the end of its line, inline block comments stay inline.
//! - Normalisations besides whitespace: `Bool` is written `bool`; a trailing comma is added to a
//!   list broken over lines and removed from one on a single line; trailing whitespace of line
//!   comments and `\r` of line endings go.
//!
//! Before it returns, [`format()`] checks that its output has the same tokens and comments as the
//! input (up to those normalisations), so a bug in the formatter is reported as
//! [`FormatError::Internal`] instead of changing a program. This crate depends on `syntax` only.

mod comments;
mod doc;
mod layout;

use std::fmt;

use syntax::{SyntaxError, SyntaxKind};

/// The line width the formatter aims for.
pub const WIDTH: usize = 100;

/// Why a file was not formatted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatError {
    /// The file has syntax errors, sorted by position. Nothing is formatted.
    Syntax(Vec<SyntaxError>),
    /// The formatter's output would not have been the same program: a bug in the formatter,
    /// described by the message. Nothing is formatted.
    Internal(String),
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::Syntax(errors) => {
                write!(f, "the file has {} syntax error(s)", errors.len())?;
                if let Some(first) = errors.first() {
                    write!(f, "; the first: {}", first.message)?;
                }
                Ok(())
            }
            FormatError::Internal(message) => {
                write!(f, "internal formatter error, the file is left as it is: {message}")
            }
        }
    }
}

impl std::error::Error for FormatError {}

/// Formats a whole file. The result is the file's canonical layout; formatting it again gives it
/// back unchanged.
pub fn format(text: &str) -> Result<String, FormatError> {
    let parse = syntax::parse(text);
    if !parse.errors().is_empty() {
        return Err(FormatError::Syntax(parse.errors().to_vec()));
    }
    let root = parse.syntax_node();
    let comments = comments::attach(&root);
    let (doc, all_comments) = layout::Builder::new(comments).source_file(&root);
    if !all_comments {
        return Err(FormatError::Internal("a comment was not placed".to_owned()));
    }
    let printed = doc::print(doc, WIDTH);
    let trimmed = printed.trim_end();
    let output = if trimmed.is_empty() { String::new() } else { format!("{trimmed}\n") };
    verify(text, &output).map_err(FormatError::Internal)?;
    Ok(output)
}

/// What must be equal between a file and its formatted text: the significant tokens, with the
/// normalisations applied, and the comments in order.
#[derive(Debug, PartialEq, Eq)]
struct Essence {
    tokens: Vec<(SyntaxKind, String)>,
    comments: Vec<String>,
}

fn essence(text: &str) -> Essence {
    let mut tokens = Vec::new();
    let mut comments = Vec::new();
    let mut offset = 0usize;
    for token in syntax::lex(text).tokens {
        let end = offset + token.len as usize;
        let token_text = text.get(offset..end).unwrap_or_default();
        offset = end;
        match token.kind {
            SyntaxKind::WHITESPACE => {}
            SyntaxKind::COMMENT => comments.push(comments::normalize(token_text)),
            SyntaxKind::CAPITAL_BOOL_KW => tokens.push((SyntaxKind::BOOL_KW, "bool".to_owned())),
            kind => tokens.push((kind, token_text.to_owned())),
        }
    }
    // A comma right before a closing bracket (or the brace of a record literal) is a trailing
    // comma, which the layout decides.
    let mut kept: Vec<(SyntaxKind, String)> = Vec::with_capacity(tokens.len());
    for token in tokens {
        if matches!(token.0, SyntaxKind::R_PAREN | SyntaxKind::R_BRACK | SyntaxKind::R_CURLY)
            && kept.last().is_some_and(|last| last.0 == SyntaxKind::COMMA)
        {
            kept.pop();
        }
        kept.push(token);
    }
    Essence { tokens: kept, comments }
}

fn verify(input: &str, output: &str) -> Result<(), String> {
    let before = essence(input);
    let after = essence(output);
    if before.tokens != after.tokens {
        let at = before.tokens.iter().zip(&after.tokens).position(|(a, b)| a != b);
        let at = at.unwrap_or(before.tokens.len().min(after.tokens.len()));
        return Err(format!(
            "the tokens would change at token {at}: {:?} became {:?}",
            before.tokens.get(at),
            after.tokens.get(at)
        ));
    }
    if before.comments != after.comments {
        return Err("the comments would change".to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_are_returned_not_formatted() {
        let Err(FormatError::Syntax(errors)) = format("int x = ;\n") else {
            panic!("expected syntax errors")
        };
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn empty_files_stay_empty() {
        assert_eq!(format(""), Ok(String::new()));
        assert_eq!(format(" \n\n\t"), Ok(String::new()));
    }

    #[test]
    fn windows_line_endings_become_unix_ones() {
        let text = "int x=1;\r\n// A comment.   \r\nif (x) {\r\n    /* A block\r\n       \
                    comment. */\r\n    x = 2; // Trailing.\r\n}\r\n";
        let expected = "int x = 1;\n// A comment.\nif (x) {\n    /* A block\n       comment. */\n    \
                        x = 2; // Trailing.\n}\n";
        assert_eq!(format(text), Ok(expected.to_owned()));
    }

    /// Found by the `format` fuzz target: `\r\r\n` became `\r\n`, whose essence is `\n`, so the
    /// output did not keep the input's comment.
    #[test]
    fn every_carriage_return_before_a_line_break_goes() {
        assert_eq!(format("/*\r\r\n*/"), Ok("/*\n*/\n".to_owned()));
        assert_eq!(format("x; /* a\r\r\r\n b\r */\r\n"), Ok("x; /* a\n b\r */\n".to_owned()));
    }

    /// Found by the `format` fuzz target: a trailing block comment over several lines counted
    /// with all its lines when deciding whether the code before it fits, and left the column
    /// past its last line's width, so formatting the output again broke the call.
    #[test]
    fn trailing_comments_over_several_lines_count_their_first_line() {
        let text = "print(\"a \\\"\\n\",'x','\\'','\\\\','\\0',421.5);/* trailing (\n\
                    // Comment *//* trailing *(\n// Comment */";
        let once = format(text).unwrap_or_else(|err| panic!("{err}"));
        assert!(
            once.starts_with("print(\"a \\\"\\n\", 'x', '\\'', '\\\\', '\\0', 421.5); /*"),
            "{once}"
        );
        assert_eq!(format(&once), Ok(once.clone()));
    }

    /// Found by the `format` fuzz target: a field of a number literal lost the space before its
    /// dot, and `52 .s` became the malformed number `52.s`.
    #[test]
    fn a_number_keeps_its_space_before_a_field() {
        assert_eq!(format("int step=52 .s ;\n"), Ok("int step = 52 .s;\n".to_owned()));
        assert_eq!(format("x = 2. .y+1e3 .z;\n"), Ok("x = 2. .y + 1e3 .z;\n".to_owned()));
        assert_eq!(format("x = a .b .c (1) [2];\n"), Ok("x = a.b.c(1)[2];\n".to_owned()));
    }

    #[test]
    fn trailing_commas_are_a_normalisation() {
        assert_eq!(essence("f(a, b,);"), essence("f(a, b);"));
        assert_ne!(essence("f(a, b);"), essence("f(a, c);"));
        assert_eq!(essence("Bool x;"), essence("bool x;"));
    }
}
