//! Turns the lexer's tokens and the parser's events into a rowan tree, re-attaching trivia, and
//! places every error on a range of the text.
//!
//! Trivia before a node's first token goes to the enclosing node, so a node's range starts at its
//! first significant token; trivia at the end of the file belongs to the root.
//!
//! The tree is at most [`MAX_TREE_DEPTH`] nodes deep, whatever the input: the parser's nesting
//! limit bounds recursion, but a chain such as `1 + 1 + ...` or `f()()...` nests one node per
//! operator without recursing. Nodes that would open deeper are left out (their tokens go to the
//! deepest node), with an error, so that the tools that walk the tree, and dropping it, cannot
//! overflow the stack.

use std::hash::{Hash, Hasher};

use rowan::{GreenNode, GreenToken, NodeOrToken, TextRange, TextSize};
use rustc_hash::{FxHashMap, FxHasher};

use crate::{
    SyntaxError, SyntaxKind, fixes,
    lexer::{Lexed, lex},
    parser::{Event, Input, ParseError, parse_source_file},
};

pub(crate) fn parse_text(text: &str) -> (GreenNode, Vec<SyntaxError>) {
    let lexed = lex(text);
    let mut input = Input::with_capacity(text, lexed.tokens.len());
    let mut offset = 0usize;
    for token in &lexed.tokens {
        let end = offset + token.len as usize;
        if !invisible_to_parser(token.kind) {
            input.push(token.kind, offset, end);
        }
        offset = end;
    }
    let (events, errors) = parse_source_file(input);
    let (green, mut errors, plans) = build_tree(text, &lexed, events, errors);
    if !plans.is_empty() {
        fixes::attach(&green, &mut errors, plans);
    }
    errors.sort_by_key(|error| error.range.start());
    (green, errors)
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
    builder: TreeBuilder<'a>,
    errors: Vec<SyntaxError>,
    depth: usize,
    /// Whether the tree reached its maximum depth, which is reported once.
    too_deep: bool,
}

/// How many nodes deep a syntax tree may be, the root included. Far above what the parser's
/// nesting limit allows, so only long chains reach it; low enough that freeing such a tree
/// (rowan drops a node's children recursively, about 100 bytes of stack per level in a debug
/// build) or walking it recursively fits a 2 MiB thread stack with room to spare.
pub const MAX_TREE_DEPTH: usize = 10_000;

/// Builds the green tree, sharing equal small nodes and equal tokens as rowan's
/// `GreenNodeBuilder` does. Rowan's node cache re-hashes every cached subtree recursively each
/// time its table grows, which is quadratic in time and overflows the stack on a long chain of
/// small nodes (`f()()()...`, `1+1+1...`); this cache keeps each node's hash beside it instead.
struct TreeBuilder<'a> {
    /// The open nodes: their kinds and where their children start in `children`.
    parents: Vec<(SyntaxKind, usize)>,
    /// Children of the open nodes, each with its hash if it is shared (0 if not).
    children: Vec<(u64, NodeOrToken<GreenNode, GreenToken>)>,
    tokens: FxHashMap<(SyntaxKind, &'a str), (u64, GreenToken)>,
    /// Shared nodes by hash; a node whose hash is taken by another is simply not shared.
    nodes: FxHashMap<u64, GreenNode>,
    /// Nodes not opened because the tree was at its maximum depth, still to be closed.
    skipped: usize,
}

/// Nodes with more children than this are not shared: they rarely repeat.
const MAX_SHARED_CHILDREN: usize = 3;

impl<'a> TreeBuilder<'a> {
    fn new() -> TreeBuilder<'a> {
        TreeBuilder {
            parents: Vec::new(),
            children: Vec::new(),
            tokens: FxHashMap::default(),
            nodes: FxHashMap::default(),
            skipped: 0,
        }
    }

    /// Opens a node, or returns `false` and opens nothing if the tree is too deep already.
    fn start_node(&mut self, kind: SyntaxKind) -> bool {
        if self.skipped > 0 || self.parents.len() >= MAX_TREE_DEPTH {
            self.skipped += 1;
            return false;
        }
        self.parents.push((kind, self.children.len()));
        true
    }

    fn finish_node(&mut self) {
        if self.skipped > 0 {
            self.skipped -= 1;
            return;
        }
        let Some((kind, first)) = self.parents.pop() else { return };
        let children = &self.children[first..];
        let shareable = children.len() <= MAX_SHARED_CHILDREN && children.iter().all(|c| c.0 != 0);
        let hash = shareable.then(|| {
            let mut hasher = FxHasher::default();
            kind.hash(&mut hasher);
            children.iter().for_each(|(hash, _)| hash.hash(&mut hasher));
            hasher.finish().max(1)
        });
        let shared = hash.and_then(|hash| self.nodes.get(&hash)).filter(|node| {
            node.kind() == kind.into()
                && node.children().len() == children.len()
                && node.children().zip(children).all(|pair| match pair {
                    (NodeOrToken::Node(a), (_, NodeOrToken::Node(b))) => std::ptr::eq(a, &**b),
                    (NodeOrToken::Token(a), (_, NodeOrToken::Token(b))) => std::ptr::eq(a, &**b),
                    _ => false,
                })
        });
        let node = match shared {
            Some(node) => {
                let node = node.clone();
                self.children.truncate(first);
                node
            }
            None => {
                let node =
                    GreenNode::new(kind.into(), self.children.drain(first..).map(|(_, c)| c));
                if let Some(hash) = hash {
                    self.nodes.insert(hash, node.clone());
                }
                node
            }
        };
        self.children.push((hash.unwrap_or(0), NodeOrToken::Node(node)));
    }

    fn token(&mut self, kind: SyntaxKind, text: &'a str) {
        let (hash, token) = self.tokens.entry((kind, text)).or_insert_with(|| {
            let mut hasher = FxHasher::default();
            (kind, text).hash(&mut hasher);
            (hasher.finish().max(1), GreenToken::new(kind.into(), text))
        });
        self.children.push((*hash, NodeOrToken::Token(token.clone())));
    }

    /// The root: the one node left once every node is closed.
    fn finish(mut self) -> GreenNode {
        while !self.parents.is_empty() {
            self.finish_node();
        }
        match self.children.pop() {
            Some((_, NodeOrToken::Node(root))) if self.children.is_empty() => root,
            last => {
                self.children.extend(last);
                let children = self.children.into_iter().map(|(_, child)| child);
                GreenNode::new(SyntaxKind::SOURCE_FILE.into(), children)
            }
        }
    }
}

impl<'a> TreeSink<'a> {
    fn add_token(&mut self) {
        let Some(token) = self.lexed.tokens.get(self.next) else { return };
        self.add_token_as(token.kind);
    }

    /// Adds the next token with the kind the parser read it as (a misspelt keyword as the
    /// keyword it means).
    fn add_token_as(&mut self, kind: SyntaxKind) {
        let Some(token) = self.lexed.tokens.get(self.next) else { return };
        let end = self.offset + token.len as usize;
        self.builder.token(kind, &self.text[self.offset..end]);
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

/// The tree, its errors, and the fix-its still to compute: (index in the errors, plan).
type Built = (GreenNode, Vec<SyntaxError>, Vec<(usize, fixes::FixPlan)>);

fn build_tree(
    text: &str,
    lexed: &Lexed,
    mut events: Vec<Event>,
    parse_errors: Vec<ParseError>,
) -> Built {
    let mut plans = Vec::new();
    let mut sink = TreeSink {
        text,
        lexed,
        next: 0,
        offset: 0,
        last_significant_end: 0,
        builder: TreeBuilder::new(),
        errors: Vec::new(),
        depth: 0,
        too_deep: false,
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
                    if !sink.builder.start_node(kind) && !sink.too_deep {
                        sink.too_deep = true;
                        sink.errors.push(SyntaxError::new(
                            format!(
                                "this nests too deeply: syntax trees are limited to \
                                 {MAX_TREE_DEPTH} levels; split the expression"
                            ),
                            sink.next_significant_range(),
                        ));
                    }
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
            Event::Token { kind } => {
                sink.add_trivia();
                sink.add_token_as(kind);
            }
            Event::Error(index) => {
                let Some(error) = parse_errors.get(index as usize) else { continue };
                let range = match error.missing {
                    Some(_) => range(sink.last_significant_end, sink.last_significant_end),
                    None => sink.next_significant_range(),
                };
                if let Some(plan) = &error.fix {
                    plans.push((sink.errors.len(), plan.clone()));
                }
                sink.errors.push(SyntaxError {
                    kind: error.kind,
                    message: error.message.clone(),
                    range,
                    missing: error.missing,
                    help: error.help.clone(),
                    fix: None,
                });
            }
        }
    }
    // The errors are in token order: one pass finds where each token starts.
    let (mut token, mut start) = (0usize, 0usize);
    for lex_error in &lexed.errors {
        while token < lex_error.token.min(lexed.tokens.len()) {
            start += lexed.tokens[token].len as usize;
            token += 1;
        }
        let len = lexed.tokens.get(lex_error.token).map_or(0, |t| t.len as usize);
        sink.errors.push(SyntaxError {
            kind: lex_error.kind,
            help: lex_error.help.clone(),
            ..SyntaxError::new(lex_error.message.clone(), range(start, start + len))
        });
    }
    (sink.builder.finish(), sink.errors, plans)
}

/// Adds what the parser left over before the root closes: trailing trivia and, if the parser
/// stopped early, the remaining tokens wrapped in one `ERROR` node.
fn finish_root(sink: &mut TreeSink<'_>) {
    sink.add_trivia();
    if sink.next < sink.lexed.tokens.len() {
        let start = sink.offset;
        sink.builder.start_node(SyntaxKind::ERROR);
        while sink.next < sink.lexed.tokens.len() {
            sink.add_token();
        }
        sink.builder.finish_node();
        sink.errors.push(SyntaxError::new(
            "the parser could not make sense of the rest of the file",
            range(start, sink.offset),
        ));
    }
}
