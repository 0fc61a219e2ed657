//! Turns the lexer's tokens and the parser's events into a rowan tree, re-attaching trivia, and
//! places every error on a range of the text.
//!
//! Trivia before a node's first token goes to the enclosing node, so a node's range starts at its
//! first significant token; trivia at the end of the file belongs to the root.

use rowan::{GreenNode, GreenNodeBuilder, TextRange, TextSize};

use crate::{
    SyntaxError, SyntaxKind,
    lexer::{Lexed, lex},
    parser::{Event, ParseError, parse_source_file},
};

pub(crate) fn parse_text(text: &str) -> (GreenNode, Vec<SyntaxError>) {
    let lexed = lex(text);
    let significant: Vec<SyntaxKind> =
        lexed.tokens.iter().map(|t| t.kind).filter(|&k| !invisible_to_parser(k)).collect();
    let (events, errors) = parse_source_file(&significant);
    build_tree(text, &lexed, events, errors)
}

/// Trivia, and the `ERROR` tokens of stray characters: the lexer has reported those already, so
/// the parser reads past them as if they were whitespace and reports nothing twice.
fn invisible_to_parser(kind: SyntaxKind) -> bool {
    kind.is_trivia() || kind == SyntaxKind::ERROR
}

struct TreeSink<'a> {
    text: &'a str,
    lexed: &'a Lexed,
    /// Index of the next raw token to add.
    next: usize,
    /// Offset of the next raw token.
    offset: usize,
    /// End of the last significant token added: where "expected X" errors go.
    last_significant_end: usize,
    builder: GreenNodeBuilder<'static>,
    errors: Vec<SyntaxError>,
    depth: usize,
}

impl TreeSink<'_> {
    fn add_token(&mut self) {
        let Some(token) = self.lexed.tokens.get(self.next) else { return };
        let end = self.offset + token.len as usize;
        self.builder.token(token.kind.into(), &self.text[self.offset..end]);
        if !invisible_to_parser(token.kind) {
            self.last_significant_end = end;
        }
        self.offset = end;
        self.next += 1;
    }

    fn add_trivia(&mut self) {
        while self.lexed.tokens.get(self.next).is_some_and(|t| invisible_to_parser(t.kind)) {
            self.add_token();
        }
    }

    /// The range of the next significant token, or the empty range at the end of the text.
    fn next_significant_range(&self) -> TextRange {
        let mut offset = self.offset;
        for token in &self.lexed.tokens[self.next..] {
            let end = offset + token.len as usize;
            if !invisible_to_parser(token.kind) {
                return range(offset, end);
            }
            offset = end;
        }
        range(self.text.len(), self.text.len())
    }
}

fn range(start: usize, end: usize) -> TextRange {
    let to_size = |n: usize| TextSize::from(u32::try_from(n).unwrap_or(u32::MAX));
    TextRange::new(to_size(start), to_size(end.max(start)))
}

fn build_tree(
    text: &str,
    lexed: &Lexed,
    mut events: Vec<Event>,
    parse_errors: Vec<ParseError>,
) -> (GreenNode, Vec<SyntaxError>) {
    let mut sink = TreeSink {
        text,
        lexed,
        next: 0,
        offset: 0,
        last_significant_end: 0,
        builder: GreenNodeBuilder::new(),
        errors: Vec::new(),
        depth: 0,
    };
    let mut forward_parents = Vec::new();
    for i in 0..events.len() {
        match std::mem::replace(
            &mut events[i],
            Event::Start { kind: SyntaxKind::TOMBSTONE, forward_parent: None },
        ) {
            Event::Start { kind, forward_parent } => {
                // Open the chain of nodes that `precede` linked: outermost first.
                forward_parents.push(kind);
                let mut idx = i;
                let mut fp = forward_parent;
                while let Some(step) = fp {
                    idx += step as usize;
                    fp = match std::mem::replace(
                        &mut events[idx],
                        Event::Start { kind: SyntaxKind::TOMBSTONE, forward_parent: None },
                    ) {
                        Event::Start { kind, forward_parent } => {
                            forward_parents.push(kind);
                            forward_parent
                        }
                        _ => None,
                    };
                }
                for kind in forward_parents.drain(..).rev() {
                    if kind == SyntaxKind::TOMBSTONE {
                        continue;
                    }
                    if sink.depth > 0 {
                        sink.add_trivia();
                    }
                    sink.builder.start_node(kind.into());
                    sink.depth += 1;
                }
            }
            Event::Finish => {
                if sink.depth == 1 {
                    finish_root(&mut sink);
                }
                sink.builder.finish_node();
                sink.depth = sink.depth.saturating_sub(1);
            }
            Event::Token { .. } => {
                sink.add_trivia();
                sink.add_token();
            }
            Event::Error(index) => {
                let Some(error) = parse_errors.get(index as usize) else { continue };
                let range = match error.missing {
                    Some(_) => range(sink.last_significant_end, sink.last_significant_end),
                    None => sink.next_significant_range(),
                };
                sink.errors.push(SyntaxError {
                    message: error.message.clone(),
                    range,
                    missing: error.missing,
                });
            }
        }
    }
    for lex_error in &lexed.errors {
        let start: usize = lexed.tokens[..lex_error.token].iter().map(|t| t.len as usize).sum();
        let len = lexed.tokens.get(lex_error.token).map_or(0, |t| t.len as usize);
        sink.errors.push(SyntaxError {
            message: lex_error.message.clone(),
            range: range(start, start + len),
            missing: None,
        });
    }
    sink.errors.sort_by_key(|error| error.range.start());
    (sink.builder.finish(), sink.errors)
}

/// Adds what the parser left over before the root closes: trailing trivia and, if the parser
/// stopped early, the remaining tokens wrapped in one `ERROR` node.
fn finish_root(sink: &mut TreeSink<'_>) {
    sink.add_trivia();
    if sink.next < sink.lexed.tokens.len() {
        let start = sink.offset;
        sink.builder.start_node(SyntaxKind::ERROR.into());
        while sink.next < sink.lexed.tokens.len() {
            sink.add_token();
        }
        sink.builder.finish_node();
        sink.errors.push(SyntaxError {
            message: "the parser could not make sense of the rest of the file".to_owned(),
            range: range(start, sink.offset),
            missing: None,
        });
    }
}
