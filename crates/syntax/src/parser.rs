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
mod items;
mod token_set;

use crate::{
    SyntaxKind::{self, *},
    T,
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
    pub message: String,
    /// What to insert to fix the error, for "expected X" errors: placed at the end of the previous
    /// token. Otherwise the error covers the next token.
    pub missing: Option<&'static str>,
}

pub(crate) struct Parser<'t> {
    tokens: &'t [SyntaxKind],
    pos: usize,
    events: Vec<Event>,
    errors: Vec<ParseError>,
    fuel: u32,
    depth: u32,
}

impl<'t> Parser<'t> {
    pub(crate) fn new(tokens: &'t [SyntaxKind]) -> Parser<'t> {
        Parser {
            tokens,
            pos: 0,
            events: Vec::with_capacity(tokens.len() * 3),
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
        self.tokens.get(self.pos + n).copied().unwrap_or(EOF)
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
        self.push_error(ParseError { message: format!("expected `{text}`"), missing: Some(text) });
        false
    }

    /// Reports an error at the current position without consuming anything.
    pub(crate) fn error(&mut self, message: impl Into<String>) {
        self.push_error(ParseError { message: message.into(), missing: None });
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
pub(crate) fn parse_source_file(tokens: &[SyntaxKind]) -> (Vec<Event>, Vec<ParseError>) {
    let mut p = Parser::new(tokens);
    items::source_file(&mut p);
    p.finish()
}
