//! The event-based recursive-descent parser.
//!
//! The parser sees only significant tokens (no trivia) and emits flat [`Event`]s: start a node,
//! consume a token, finish a node, report an error. [`crate::parsing`] turns the events into a
//! rowan tree, re-attaching the trivia. Nodes are opened with [`Parser::start`]; a completed node
//! can [`CompletedMarker::precede`] so that binary and postfix expressions wrap their left operand
//! after it was parsed.
//!
//! Two guards keep any input from hanging or overflowing the stack: fuel that runs out when the
//! parser looks at the same token too long without consuming it, and a nesting limit beyond which
//! the rest of a nested construct is skipped as one error.

mod expressions;
mod habits;
mod items;
mod token_set;

use crate::{
    SyntaxErrorKind,
    SyntaxKind::{self, *},
    T,
    fixes::FixPlan,
};
pub(crate) use token_set::TokenSet;

/// How deeply blocks and expressions may nest before the parser stops descending.
pub const MAX_NESTING: u32 = 256;

/// How many times the parser may look at one token without consuming it.
const FUEL: u32 = 256;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// Opens a node. `forward_parent` links to a `Start` that must open before this one (set by
    /// `precede`), as an offset forward in the event list.
    Start {
        kind: SyntaxKind,
        forward_parent: Option<u32>,
    },
    Finish,
    /// Consumes the next significant token.
    Token {
        kind: SyntaxKind,
    },
    /// Reports the error at this index of the parser's error list. Errors live out of line so
    /// that an event stays a few bytes: a large file makes millions of events.
    Error(u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParseError {
    pub kind: SyntaxErrorKind,
    pub message: String,
    /// What to insert to fix the error, for "expected X" errors: placed at the end of the previous
    /// token. Otherwise the error covers the next token.
    pub missing: Option<&'static str>,
    pub help: Option<String>,
    /// How to compute the fix-it once the tree is built.
    pub fix: Option<FixPlan>,
}

impl ParseError {
    fn new(kind: SyntaxErrorKind, message: String) -> ParseError {
        ParseError { kind, message, missing: None, help: None, fix: None }
    }
}

/// What the parser reads: the kinds of the significant tokens, and, for recovery only, where
/// each one is in the text (so that a misspelt keyword can be recognised by its spelling, and a
/// habit from another language by the line it is on).
pub(crate) struct Input<'t> {
    text: &'t str,
    kinds: Vec<SyntaxKind>,
    /// The start and end of each significant token in `text`.
    ranges: Vec<(u32, u32)>,
}

impl<'t> Input<'t> {
    /// An empty input for at most `tokens` tokens.
    pub(crate) fn with_capacity(text: &'t str, tokens: usize) -> Input<'t> {
        Input { text, kinds: Vec::with_capacity(tokens), ranges: Vec::with_capacity(tokens) }
    }

    pub(crate) fn push(&mut self, kind: SyntaxKind, start: usize, end: usize) {
        let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        self.kinds.push(kind);
        self.ranges.push((to_u32(start), to_u32(end)));
    }

    fn text(&self, index: usize) -> &'t str {
        let Some(&(start, end)) = self.ranges.get(index) else { return "" };
        self.text.get(start as usize..end as usize).unwrap_or("")
    }

    /// Whether a line break separates token `index` from the token before it.
    fn on_new_line(&self, index: usize) -> bool {
        let Some(&(start, _)) = self.ranges.get(index) else { return true };
        let end_of_previous = match index.checked_sub(1).and_then(|i| self.ranges.get(i)) {
            Some(&(_, end)) => end,
            None => return true,
        };
        self.text
            .get(end_of_previous as usize..start as usize)
            .is_some_and(|gap| gap.contains('\n'))
    }

    /// Whether token `index` follows the token before it with nothing in between (`**`).
    fn joint(&self, index: usize) -> bool {
        match (index.checked_sub(1).and_then(|i| self.ranges.get(i)), self.ranges.get(index)) {
            (Some(&(_, end)), Some(&(start, _))) => end == start,
            _ => false,
        }
    }
}

pub(crate) struct Parser<'t> {
    input: Input<'t>,
    pos: usize,
    events: Vec<Event>,
    errors: Vec<ParseError>,
    fuel: u32,
    depth: u32,
}

impl<'t> Parser<'t> {
    pub(crate) fn new(input: Input<'t>) -> Parser<'t> {
        Parser {
            pos: 0,
            events: Vec::with_capacity(input.kinds.len() * 3),
            input,
            errors: Vec::new(),
            fuel: FUEL,
            depth: 0,
        }
    }

    pub(crate) fn finish(self) -> (Vec<Event>, Vec<ParseError>) {
        (self.events, self.errors)
    }

    fn push_error(&mut self, error: ParseError) {
        let index = u32::try_from(self.errors.len()).unwrap_or(u32::MAX);
        self.errors.push(error);
        self.events.push(Event::Error(index));
    }

    /// The kind of the significant token `n` ahead. Reads as `EOF` once fuel runs out, so every
    /// loop of the grammar ends even if a rule forgets to consume.
    pub(crate) fn nth(&mut self, n: usize) -> SyntaxKind {
        if self.fuel == 0 {
            return EOF;
        }
        self.fuel -= 1;
        self.input.kinds.get(self.pos + n).copied().unwrap_or(EOF)
    }

    pub(crate) fn current(&mut self) -> SyntaxKind {
        self.nth(0)
    }

    pub(crate) fn at(&mut self, kind: SyntaxKind) -> bool {
        self.current() == kind
    }

    pub(crate) fn nth_at(&mut self, n: usize, kind: SyntaxKind) -> bool {
        self.nth(n) == kind
    }

    pub(crate) fn at_ts(&mut self, set: TokenSet) -> bool {
        set.contains(self.current())
    }

    pub(crate) fn at_end(&mut self) -> bool {
        self.at(EOF)
    }

    /// Opens a node; the returned marker must be completed or abandoned.
    pub(crate) fn start(&mut self) -> Marker {
        let pos = self.events.len();
        self.events.push(Event::Start { kind: TOMBSTONE, forward_parent: None });
        Marker { pos, completed: false }
    }

    /// Consumes the current token, which must be `kind`.
    pub(crate) fn bump(&mut self, kind: SyntaxKind) {
        if !self.eat(kind) {
            self.error("internal parser error: bumped an unexpected token");
        }
    }

    pub(crate) fn bump_any(&mut self) {
        let kind = self.current();
        if kind == EOF {
            return;
        }
        self.pos += 1;
        self.fuel = FUEL;
        self.events.push(Event::Token { kind });
    }

    pub(crate) fn eat(&mut self, kind: SyntaxKind) -> bool {
        if !self.at(kind) {
            return false;
        }
        self.bump_any();
        true
    }

    /// Consumes `kind` or reports that it is missing.
    pub(crate) fn expect(&mut self, kind: SyntaxKind) -> bool {
        if self.eat(kind) {
            return true;
        }
        let text = kind.text().unwrap_or("token");
        self.push_error(ParseError {
            missing: Some(text),
            ..ParseError::new(SyntaxErrorKind::Missing, format!("expected `{text}`"))
        });
        false
    }

    /// Reports an error at the current position without consuming anything.
    pub(crate) fn error(&mut self, message: impl Into<String>) {
        self.push_error(ParseError::new(SyntaxErrorKind::Syntax, message.into()));
    }

    /// Reports a misspelt keyword or a habit from another language at the current token, with
    /// a help line and the fix-it to compute once the tree is built.
    pub(crate) fn mistake(
        &mut self,
        kind: SyntaxErrorKind,
        message: impl Into<String>,
        help: Option<String>,
        fix: Option<FixPlan>,
    ) {
        self.push_error(ParseError { help, fix, ..ParseError::new(kind, message.into()) });
    }

    /// The text of the significant token `n` ahead, for recognising a misspelt keyword or a
    /// foreign one. Only recovery reads it.
    pub(crate) fn nth_text(&self, n: usize) -> &'t str {
        self.input.text(self.pos + n)
    }

    /// Whether a line break comes before the significant token `n` ahead.
    pub(crate) fn nth_on_new_line(&self, n: usize) -> bool {
        self.input.on_new_line(self.pos + n)
    }

    /// Whether the significant token `n` ahead follows the one before it with nothing between.
    pub(crate) fn nth_joint(&self, n: usize) -> bool {
        self.input.joint(self.pos + n)
    }

    /// The kind of the significant token `n` ahead without spending fuel: for lookahead scans
    /// that recovery makes once per statement.
    pub(crate) fn peek_kind(&self, n: usize) -> SyntaxKind {
        self.input.kinds.get(self.pos + n).copied().unwrap_or(EOF)
    }

    /// Reads the current token as `kind` from now on: a misspelt or foreign keyword, once
    /// reported, stands for the Nabla keyword it means, so the rest of the construct parses (and
    /// is checked) as intended instead of cascading into errors.
    pub(crate) fn read_as(&mut self, kind: SyntaxKind) {
        if let Some(slot) = self.input.kinds.get_mut(self.pos) {
            *slot = kind;
        }
    }

    /// Reports an error and wraps the current token in an `ERROR` node, unless the token belongs
    /// to `recovery` (or closes a block), in which case it is left for an enclosing rule.
    pub(crate) fn err_recover(&mut self, message: impl Into<String>, recovery: TokenSet) {
        if self.at_ts(recovery) || self.at(T!['}']) || self.at_end() {
            self.error(message);
            return;
        }
        self.err_and_bump(message);
    }

    pub(crate) fn err_and_bump(&mut self, message: impl Into<String>) {
        let m = self.start();
        self.error(message);
        self.bump_any();
        m.complete(self, ERROR);
    }

    /// Enters one level of nesting. Past [`MAX_NESTING`] it skips the construct that starts here
    /// (up to its balancing bracket) as one error and returns `false`.
    pub(crate) fn enter(&mut self) -> bool {
        if self.depth < MAX_NESTING {
            self.depth += 1;
            return true;
        }
        let m = self.start();
        self.error(format!("nesting is too deep: the limit is {MAX_NESTING} levels"));
        let mut open = 0u32;
        loop {
            let kind = self.current();
            match kind {
                EOF => break,
                T!['('] | T!['['] | T!['{'] => open += 1,
                T![')'] | T![']'] | T!['}'] if open == 0 => break,
                T![')'] | T![']'] | T!['}'] => open -= 1,
                T![;] if open == 0 => break,
                _ => {}
            }
            self.bump_any();
            if open == 0 {
                break;
            }
        }
        m.complete(self, ERROR);
        false
    }

    pub(crate) fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }
}

/// An open node. Dropping one unfinished is a bug caught in debug builds.
pub(crate) struct Marker {
    pos: usize,
    completed: bool,
}

impl Marker {
    pub(crate) fn complete(mut self, p: &mut Parser<'_>, kind: SyntaxKind) -> CompletedMarker {
        self.completed = true;
        if let Some(Event::Start { kind: slot, .. }) = p.events.get_mut(self.pos) {
            *slot = kind;
        }
        p.events.push(Event::Finish);
        CompletedMarker { pos: self.pos }
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        debug_assert!(self.completed || std::thread::panicking(), "marker must be completed");
    }
}

#[derive(Clone, Copy)]
pub(crate) struct CompletedMarker {
    pos: usize,
}

impl CompletedMarker {
    /// Opens a new node that will contain this one: `a` becomes the left operand of `a + b`.
    pub(crate) fn precede(self, p: &mut Parser<'_>) -> Marker {
        let new = p.start();
        if let Some(Event::Start { forward_parent, .. }) = p.events.get_mut(self.pos) {
            *forward_parent = u32::try_from(new.pos - self.pos).ok();
        }
        new
    }
}

/// Parses a whole file.
pub(crate) fn parse_source_file(input: Input<'_>) -> (Vec<Event>, Vec<ParseError>) {
    let mut p = Parser::new(input);
    items::source_file(&mut p);
    p.finish()
}
