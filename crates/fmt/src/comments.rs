//! Where each comment goes: every comment is attached to a significant token, before or after it,
//! in one pass over the tokens of the file.
//!
//! Between two significant tokens `P` and `N` there is a run of comments. The comments on `P`'s
//! line, up to the first one that a line break follows, trail `P`: they stay at the end of `P`'s
//! line. When no line break follows any of them, they sit between `P` and `N` on one line: they
//! trail `P` when `N` closes something (`)`, `]`, `}`, `,`, `;`, `:`), else they lead `N`,
//! inline. The comments after the first line break lead `N`, each on its own line; the ones
//! before the end of the file are kept apart. How many line breaks separate comments from their
//! neighbours is recorded too, for blank lines.

use std::collections::{HashMap, HashSet};

use syntax::{SyntaxKind, SyntaxNode, SyntaxToken, TextSize};

#[derive(Debug, Clone)]
pub(crate) struct Comment {
    /// The text, normalised: see [`normalize`].
    pub(crate) text: String,
    /// A `//` comment: nothing may follow it on its line.
    pub(crate) is_line: bool,
    /// Line breaks between the comment and the token or comment before it. At the start of the
    /// file this is at least one: such a comment starts its own line.
    pub(crate) newlines_before: u32,
    /// Line breaks between the comment and the token or comment after it.
    pub(crate) newlines_after: u32,
}

impl Comment {
    pub(crate) fn own_line(&self) -> bool {
        self.newlines_before > 0
    }

    /// Whether what follows the comment goes on the next line.
    pub(crate) fn ends_line(&self) -> bool {
        self.is_line || self.newlines_after > 0
    }
}

/// The comments attached to one significant token.
#[derive(Debug, Default)]
pub(crate) struct Attached {
    /// Before the token: on lines of their own (`own_line`) or inline just before it.
    pub(crate) leading: Vec<Comment>,
    /// After the token on its line, with the next token on the same line: printed right after it.
    pub(crate) trailing_inline: Vec<Comment>,
    /// After the token on its line, ending the line: printed at the end of the line.
    pub(crate) trailing_line: Vec<Comment>,
}

#[derive(Debug, Default)]
pub(crate) struct Comments {
    by_token: HashMap<TextSize, Attached>,
    /// Tokens with a blank line right before them.
    blank_before: HashSet<TextSize>,
    /// The comments after the last token, own-line ones first in the file order.
    pub(crate) at_end: Vec<Comment>,
}

impl Comments {
    /// Removes and returns everything attached to `token`.
    pub(crate) fn take(&mut self, token: &SyntaxToken) -> Option<Attached> {
        self.by_token.remove(&token.text_range().start())
    }

    /// Removes and returns the comments before `token`, leaving those after it.
    pub(crate) fn take_leading(&mut self, token: &SyntaxToken) -> Vec<Comment> {
        match self.by_token.get_mut(&token.text_range().start()) {
            Some(attached) => std::mem::take(&mut attached.leading),
            None => Vec::new(),
        }
    }

    pub(crate) fn has_trailing(&self, token: &SyntaxToken) -> (bool, bool) {
        match self.by_token.get(&token.text_range().start()) {
            Some(attached) => {
                (!attached.trailing_inline.is_empty(), !attached.trailing_line.is_empty())
            }
            None => (false, false),
        }
    }

    pub(crate) fn blank_before(&self, token: &SyntaxToken) -> bool {
        self.blank_before.contains(&token.text_range().start())
    }

    /// Whether every comment has been taken: what the printer checks at the end.
    pub(crate) fn is_empty(&self) -> bool {
        self.at_end.is_empty()
            && self.by_token.values().all(|attached| {
                attached.leading.is_empty()
                    && attached.trailing_inline.is_empty()
                    && attached.trailing_line.is_empty()
            })
    }

    fn entry(&mut self, token: &SyntaxToken) -> &mut Attached {
        self.by_token.entry(token.text_range().start()).or_default()
    }

    /// Distributes the comments found between `prev` and `next` (`None` at the ends of the file).
    fn place(
        &mut self,
        prev: Option<&SyntaxToken>,
        mut run: Vec<Comment>,
        next: Option<&SyntaxToken>,
    ) {
        if run.is_empty() {
            return;
        }
        let leading = match prev {
            None => run,
            Some(prev) => {
                let same_line = run.iter().take_while(|c| !c.own_line()).count();
                match run[..same_line].iter().position(Comment::ends_line) {
                    Some(last) => {
                        let leading = run.split_off(last + 1);
                        self.entry(prev).trailing_line = run;
                        leading
                    }
                    // No comment on `prev`'s line is followed by a line break, so all of them are
                    // on one line with `next`; with `same_line == 0` they all lead `next`.
                    None if same_line > 0 && next.is_none_or(|n| closes(n.kind())) => {
                        self.entry(prev).trailing_inline = run;
                        Vec::new()
                    }
                    None => run,
                }
            }
        };
        if leading.is_empty() {
            return;
        }
        match next {
            Some(next) => self.entry(next).leading = leading,
            None => self.at_end = leading,
        }
    }
}

/// Tokens before which an inline comment stays with the token before.
fn closes(kind: SyntaxKind) -> bool {
    matches!(
        kind,
        SyntaxKind::R_PAREN
            | SyntaxKind::R_BRACK
            | SyntaxKind::R_CURLY
            | SyntaxKind::COMMA
            | SyntaxKind::SEMICOLON
            | SyntaxKind::COLON
    )
}

/// Attaches every comment of the tree under `root` to a token.
pub(crate) fn attach(root: &SyntaxNode) -> Comments {
    let mut comments = Comments::default();
    let mut prev: Option<SyntaxToken> = None;
    let mut run: Vec<Comment> = Vec::new();
    let mut newlines = 0u32;
    for token in root.descendants_with_tokens().filter_map(|element| element.into_token()) {
        match token.kind() {
            SyntaxKind::WHITESPACE => newlines += count_newlines(token.text()),
            SyntaxKind::COMMENT => {
                if let Some(last) = run.last_mut() {
                    last.newlines_after = newlines;
                }
                let at_start = prev.is_none() && run.is_empty();
                run.push(Comment {
                    text: normalize(token.text()),
                    is_line: token.text().starts_with("//"),
                    newlines_before: if at_start { newlines.max(1) } else { newlines },
                    newlines_after: 0,
                });
                newlines = 0;
            }
            _ => {
                if let Some(last) = run.last_mut() {
                    last.newlines_after = newlines;
                }
                if newlines >= 2 {
                    comments.blank_before.insert(token.text_range().start());
                }
                comments.place(prev.as_ref(), std::mem::take(&mut run), Some(&token));
                newlines = 0;
                prev = Some(token);
            }
        }
    }
    if let Some(last) = run.last_mut() {
        last.newlines_after = newlines;
    }
    comments.place(prev.as_ref(), run, None);
    comments
}

fn count_newlines(text: &str) -> u32 {
    u32::try_from(text.bytes().filter(|&b| b == b'\n').count()).unwrap_or(u32::MAX)
}

/// A comment's text as the formatter writes it: a line comment loses its trailing whitespace
/// (a `\r` of a Windows line ending included), and a block comment's line endings become `\n`:
/// every `\r` right before a `\n` goes, so that normalising twice changes nothing more (`\r\r\n`
/// is `\n`, not `\r\n`). Nothing else changes.
pub(crate) fn normalize(text: &str) -> String {
    if text.starts_with("//") {
        return text.trim_end().to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split('\n').peekable();
    while let Some(line) = lines.next() {
        match lines.peek() {
            Some(_) => {
                out.push_str(line.trim_end_matches('\r'));
                out.push('\n');
            }
            None => out.push_str(line),
        }
    }
    out
}
