//! From the syntax tree to a [`Doc`]: the layout rules of Nabla code.
//!
//! The builder walks each node's significant children in order, so every token of the tree is
//! printed exactly once, whatever shape the node has; nodes of an unexpected shape fall back to
//! their tokens separated by single spaces. Tokens go through [`Builder::token`], which also prints
//! the comments attached to them (see `comments.rs`).
//!
//! A comment that ends its line is held back ("pending") while the tokens after it are brackets,
//! commas, semicolons or binary operators, and printed before the next line break that the builder
//! emits: so it lands at the end of the line that its token ends up on, after the comma, the
//! semicolon or the operator that follows the token there. Any other token, or one with comments
//! of its own, gets the pending comments printed before it and starts a new line. A pending
//! comment forces the groups around its line break to break. With these rules, formatting the
//! output again attaches every comment where the first formatting put it, and gives the output
//! back unchanged (the property tests check this with comments put anywhere).

use std::borrow::Cow;

use syntax::{SyntaxElement, SyntaxKind, SyntaxKind::*, SyntaxNode, SyntaxToken, ast::BinaryOp};

use crate::{
    comments::{Comment, Comments},
    doc::Doc,
};

pub(crate) struct Builder {
    comments: Comments,
    /// Comments that end their line, waiting for the next line break.
    pending: Vec<Comment>,
    /// The kind of the last token printed.
    last_token: SyntaxKind,
}

impl Builder {
    pub(crate) fn new(comments: Comments) -> Builder {
        Builder { comments, pending: Vec::new(), last_token: SOURCE_FILE }
    }

    /// The document of a whole file, and whether every comment made it into the document.
    pub(crate) fn source_file(mut self, root: &SyntaxNode) -> (Doc, bool) {
        let mut parts = Vec::new();
        let items = significant_children(root);
        let at_end = std::mem::take(&mut self.comments.at_end);
        self.item_list(&mut parts, &items, at_end, true);
        self.flush(&mut parts);
        (Doc::Concat(parts), self.comments.is_empty())
    }

    /// Prints the pending comments, which end the line they are on.
    fn flush(&mut self, parts: &mut Vec<Doc>) {
        if self.pending.is_empty() {
            return;
        }
        let count = self.pending.len();
        let after_bracket = matches!(self.last_token, L_PAREN | L_BRACK);
        for (i, comment) in self.pending.drain(..).enumerate() {
            let ends_line = comment.is_line || i + 1 == count;
            // A block comment right after an opening bracket is tight, as it is inline.
            let space = i > 0 || comment.is_line || !after_bracket;
            parts.push(Doc::TrailingComment { text: comment.text, ends_line, space });
        }
        parts.push(Doc::BreakParent);
    }

    fn line(&mut self, parts: &mut Vec<Doc>) {
        self.flush(parts);
        parts.push(Doc::Line);
    }

    fn softline(&mut self, parts: &mut Vec<Doc>) {
        self.flush(parts);
        parts.push(Doc::SoftLine);
    }

    fn hardline(&mut self, parts: &mut Vec<Doc>) {
        self.flush(parts);
        parts.push(Doc::HardLine);
    }

    fn token(&mut self, parts: &mut Vec<Doc>, token: &SyntaxToken) {
        let text = match token.kind() {
            // `Bool` and `bool` are one type; the formatter writes the lower-case spelling.
            CAPITAL_BOOL_KW => Cow::Borrowed("bool"),
            _ => Cow::Owned(token.text().to_owned()),
        };
        self.token_with(parts, token, Doc::Text(text));
    }

    /// Prints `body` in the place of `token`, with the comments attached to the token.
    fn token_with(&mut self, parts: &mut Vec<Doc>, token: &SyntaxToken, body: Doc) {
        let attached = self.comments.take(token);
        // A comment that ends its line stays on it past the punctuation and the binary operators
        // that follow its token; any other token (`elif` and `else` included), and a token with
        // comments of its own, starts a new line.
        let collides = attached.is_some() && !self.pending.is_empty();
        if attached.is_some() || !carries_comments(token) {
            self.flush(parts);
        }
        self.last_token = token.kind();
        let Some(attached) = attached else {
            parts.push(body);
            return;
        };
        leading_comments(parts, &attached.leading, token.kind());
        parts.push(body);
        for (i, comment) in attached.trailing_inline.into_iter().enumerate() {
            let tight = i == 0 && matches!(token.kind(), L_PAREN | L_BRACK);
            parts.push(Doc::text(if tight { "" } else { " " }));
            parts.push(Doc::Text(Cow::Owned(comment.text)));
        }
        self.pending = attached.trailing_line;
        // After a collision the token starts a line, and its own comments stay right after it:
        // carried further, they would leave the token alone on its line, and formatting the
        // output again would carry the first comments past it.
        if collides {
            self.flush(parts);
        }
    }

    fn element(&mut self, parts: &mut Vec<Doc>, element: &SyntaxElement) {
        match element {
            SyntaxElement::Node(node) => self.node(parts, node),
            SyntaxElement::Token(token) => self.token(parts, token),
        }
    }

    fn node(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        match node.kind() {
            BLOCK => self.block(parts, node),
            PARAM_LIST | ARG_LIST | TENSOR_LIT | TUPLE_TYPE | TUPLE_EXPR => self.list(parts, node),
            CONDITION => self.condition(parts, node),
            LOOP_STMT => self.loop_stmt(parts, node),
            VAR_DECL => self.var_decl(parts, node),
            BIN_EXPR => self.bin_expr(parts, node),
            TERNARY_EXPR => self.ternary(parts, node),
            PREFIX_EXPR => self.prefix(parts, node),
            CALL_EXPR | INDEX_EXPR | POSTFIX_EXPR | FIELD_EXPR => self.postfix_chain(parts, node),
            STRUCT_DEF => self.struct_def(parts, node),
            RECORD_LIT => self.record_lit(parts, node),
            _ => self.sequence(parts, node),
        }
    }

    /// `struct Linear { Tensor w[n][m]; Tensor b[m]; }`: the fields one per line, as the items
    /// of a block.
    fn struct_def(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        let open = children.iter().position(|c| c.kind() == L_CURLY);
        let (Some(open), Some(close)) = (open, children.last().and_then(|c| token_of(c, R_CURLY)))
        else {
            return self.sequence(parts, node);
        };
        self.spaced_run(parts, STRUCT_DEF, &children[..open]);
        parts.push(Doc::text(" "));
        let Some(open_token) = token_of(&children[open], L_CURLY) else {
            return self.sequence(parts, node);
        };
        let fields = &children[open + 1..children.len() - 1];
        if fields.iter().any(|f| f.kind() != FIELD_DEF) {
            // A broken declaration: its tokens as they come.
            self.spaced_run(parts, STRUCT_DEF, &children[open..]);
            return;
        }
        let closing = self.comments.take_leading(&close);
        let (inline_comment, line_comment) = self.comments.has_trailing(&open_token);
        self.token(parts, &open_token);
        if fields.is_empty() && closing.is_empty() && !line_comment {
            if inline_comment {
                parts.push(Doc::text(" "));
            }
            return self.token(parts, &close);
        }
        let mut inner = Vec::new();
        self.item_list(&mut inner, fields, closing, false);
        parts.push(Doc::Indent(inner));
        self.hardline(parts);
        self.token(parts, &close);
    }

    /// `Linear { w: x, b: y }` on one line if it fits, else one field per line with a trailing
    /// comma.
    fn record_lit(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        let open = children.iter().position(|c| c.kind() == L_CURLY);
        let (Some(open), Some(close)) = (open, children.last().and_then(|c| token_of(c, R_CURLY)))
        else {
            return self.sequence(parts, node);
        };
        let Some(open_token) = token_of(&children[open], L_CURLY) else {
            return self.sequence(parts, node);
        };
        let fields = separated(&children[open + 1..children.len() - 1])
            .filter(|fields| fields.iter().all(|(field, _)| field.kind() == RECORD_FIELD));
        let Some(fields) = fields else {
            return self.sequence(parts, node);
        };
        self.spaced_run(parts, RECORD_LIT, &children[..open]);
        if open > 0 {
            parts.push(Doc::text(" "));
        }
        self.bracketed(parts, (&open_token, fields.as_slice(), &close), Bracket::Spaced);
    }

    /// A bracketed list of elements separated by commas, as a group: on one line if it fits
    /// (with spaces inside the brackets for [`Bracket::Spaced`]), else each element on a line of
    /// its own (or, for [`Bracket::Fill`], as many as fit on each line), indented, with a
    /// trailing comma, and the closing bracket on a line of its own after the comments before it.
    fn bracketed(
        &mut self,
        parts: &mut Vec<Doc>,
        (open, elements, close): ListParts<'_>,
        how: Bracket,
    ) {
        let closing = self.comments.take_leading(close);
        let mut group = Vec::new();
        self.token(&mut group, open);
        let mut inner = Vec::new();
        let space = |this: &mut Self, docs: &mut Vec<Doc>| match how {
            Bracket::Spaced => this.line(docs),
            Bracket::Tight | Bracket::Fill => this.softline(docs),
        };
        if let Some(((last, trailing_comma), init)) = elements.split_last() {
            space(self, &mut inner);
            if how == Bracket::Fill {
                let mut fill_parts = Vec::new();
                for (element, comma) in init {
                    let mut content = Vec::new();
                    self.node(&mut content, element);
                    if let Some(comma) = comma {
                        self.token(&mut content, comma);
                    }
                    self.flush(&mut content);
                    fill_parts.push(Doc::Concat(content));
                    fill_parts.push(Doc::Line);
                }
                let mut content = Vec::new();
                self.node(&mut content, last);
                fill_parts.push(Doc::Concat(content));
                inner.push(Doc::Fill(fill_parts));
            } else {
                for (element, comma) in init {
                    self.node(&mut inner, element);
                    if let Some(comma) = comma {
                        self.token(&mut inner, comma);
                    }
                    self.line(&mut inner);
                }
                self.node(&mut inner, last);
            }
            match trailing_comma {
                Some(comma) => self.token_with(&mut inner, comma, Doc::IfBreak(",")),
                None => inner.push(Doc::IfBreak(",")),
            }
        }
        for (j, comment) in closing.iter().enumerate() {
            if j == 0 || comment.own_line() {
                self.hardline(&mut inner);
            } else {
                inner.push(Doc::text(" "));
            }
            inner.push(Doc::Text(Cow::Owned(comment.text.clone())));
        }
        if !inner.is_empty() {
            group.push(Doc::Indent(inner));
            space(self, &mut group);
        }
        self.token(&mut group, close);
        parts.push(Doc::group(group));
    }

    /// The children of `node` one after the other, separated by a space where [`spaced`] says or
    /// where two of them would otherwise lex as one token.
    fn sequence(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        self.spaced_run(parts, node.kind(), &children);
    }

    fn spaced_run(&mut self, parts: &mut Vec<Doc>, parent: SyntaxKind, children: &[SyntaxElement]) {
        for (i, child) in children.iter().enumerate() {
            if i > 0
                && (spaced(parent, children[i - 1].kind(), child.kind())
                    || would_fuse(&children[i - 1], child))
            {
                parts.push(Doc::text(" "));
            }
            self.element(parts, child);
        }
    }

    /// Items of a file or a block, one per line, with their comments and at most one blank line
    /// between them; `closing` are the comments before the `}` or the end of the file.
    fn item_list(
        &mut self,
        parts: &mut Vec<Doc>,
        items: &[SyntaxElement],
        closing: Vec<Comment>,
        file: bool,
    ) {
        for (i, item) in items.iter().enumerate() {
            let first = first_token(item);
            let leading = match &first {
                Some(token) => self.comments.take_leading(token),
                None => Vec::new(),
            };
            let blank = match (leading.first(), &first) {
                (Some(comment), _) => comment.newlines_before >= 2,
                (None, Some(token)) => self.comments.blank_before(token),
                (None, None) => false,
            };
            if i > 0 || !file {
                self.hardline(parts);
            }
            if i > 0 && blank {
                parts.push(Doc::HardLine);
            }
            for (j, comment) in leading.iter().enumerate() {
                if j > 0 {
                    line_breaks(parts, comment.newlines_before);
                }
                parts.push(Doc::Text(Cow::Owned(comment.text.clone())));
            }
            if let Some(last) = leading.last() {
                match last.ends_line() {
                    true => line_breaks(parts, last.newlines_after.max(1)),
                    false => parts.push(Doc::text(" ")),
                }
            }
            self.element(parts, item);
        }
        for (j, comment) in closing.iter().enumerate() {
            if j > 0 {
                line_breaks(parts, comment.newlines_before);
            } else if items.is_empty() {
                // No blank line at the start of a block or a file.
                if !file {
                    self.hardline(parts);
                }
            } else {
                self.hardline(parts);
                if comment.newlines_before >= 2 {
                    parts.push(Doc::HardLine);
                }
            }
            parts.push(Doc::Text(Cow::Owned(comment.text.clone())));
        }
    }

    fn block(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        let (Some(open), Some(close)) = (
            children.first().and_then(|c| token_of(c, L_CURLY)),
            children.last().and_then(|c| token_of(c, R_CURLY)),
        ) else {
            return self.sequence(parts, node);
        };
        let items = children.get(1..children.len() - 1).unwrap_or(&[]);
        let closing = self.comments.take_leading(&close);
        let (inline_comment, line_comment) = self.comments.has_trailing(&open);
        self.token(parts, &open);
        if items.is_empty() && closing.is_empty() && !line_comment {
            if inline_comment {
                parts.push(Doc::text(" "));
            }
            return self.token(parts, &close);
        }
        let mut inner = Vec::new();
        self.item_list(&mut inner, items, closing, false);
        parts.push(Doc::Indent(inner));
        self.hardline(parts);
        self.token(parts, &close);
    }

    /// `(a, b)`, `[1, 2]` and parameter lists: on one line if they fit, else one element per line
    /// (or, for a tensor literal of numbers, as many as fit) with a trailing comma.
    fn list(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        let Some((open, elements, close)) = list_shape(&children) else {
            return self.sequence(parts, node);
        };
        let fill = node.kind() == TENSOR_LIT && elements.iter().all(|(e, _)| is_number(e));
        let how = if fill { Bracket::Fill } else { Bracket::Tight };
        self.bracketed(parts, (&open, elements.as_slice(), &close), how);
    }

    /// `(cond)` of `if` and `elif`: when too long, the condition goes on lines of its own.
    fn condition(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        let [open, expr, close] = children.as_slice() else {
            return self.sequence(parts, node);
        };
        let mut group = Vec::new();
        self.element(&mut group, open);
        let mut inner = Vec::new();
        self.softline(&mut inner);
        self.element(&mut inner, expr);
        group.push(Doc::Indent(inner));
        self.softline(&mut group);
        self.element(&mut group, close);
        parts.push(Doc::group(group));
    }

    /// `loop (init; cond; step) { ... }`, with a space after each `;` that a clause follows.
    fn loop_stmt(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        let open = children.iter().position(|c| c.kind() == L_PAREN);
        let close = children.iter().rposition(|c| c.kind() == R_PAREN);
        let (Some(open), Some(close)) = (open, close) else {
            return self.sequence(parts, node);
        };
        if open > close {
            return self.sequence(parts, node);
        }
        self.spaced_run(parts, LOOP_STMT, &children[..open]);
        if open > 0 {
            parts.push(Doc::text(" "));
        }
        let mut group = Vec::new();
        self.element(&mut group, &children[open]);
        let mut inner = Vec::new();
        self.softline(&mut inner);
        let mut after_semicolon = false;
        for child in &children[open + 1..close] {
            if child.kind() == SEMICOLON {
                self.element(&mut inner, child);
                after_semicolon = true;
            } else {
                if after_semicolon {
                    self.line(&mut inner);
                }
                self.element(&mut inner, child);
                after_semicolon = false;
            }
        }
        group.push(Doc::Indent(inner));
        self.softline(&mut group);
        self.element(&mut group, &children[close]);
        parts.push(Doc::group(group));
        for child in &children[close + 1..] {
            parts.push(Doc::text(" "));
            self.element(parts, child);
        }
    }

    /// A declaration; with several declarators, the ones that do not fit go on lines of their
    /// own, indented.
    fn var_decl(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        let declarators = children.iter().filter(|c| c.kind() == DECLARATOR).count();
        let first = children.iter().position(|c| c.kind() == DECLARATOR);
        let (Some(first), true) = (first, declarators > 1) else {
            return self.sequence(parts, node);
        };
        self.spaced_run(parts, VAR_DECL, &children[..first]);
        if first > 0 {
            parts.push(Doc::text(" "));
        }
        let end = children.iter().rposition(|c| c.kind() == DECLARATOR).unwrap_or(first);
        let mut group = Vec::new();
        self.element(&mut group, &children[first]);
        let mut rest = Vec::new();
        for child in &children[first + 1..=end] {
            if child.kind() == COMMA {
                self.element(&mut rest, child);
            } else {
                self.line(&mut rest);
                self.element(&mut rest, child);
            }
        }
        group.push(Doc::Indent(rest));
        parts.push(Doc::group(group));
        self.spaced_run(parts, VAR_DECL, &children[end + 1..]);
    }

    /// Assignments as `lhs op rhs`; other binary operators as a chain of operands of one
    /// precedence level, broken after the operators when too long.
    fn bin_expr(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let Some((lhs, op, rhs)) = binary_parts(node) else {
            return self.sequence(parts, node);
        };
        let Some(level) = chain_level(op.kind()) else {
            self.node(parts, &lhs);
            parts.push(Doc::text(" "));
            self.token(parts, &op);
            parts.push(Doc::text(" "));
            return self.node(parts, &rhs);
        };
        // `a + b - c` nests to the left; walk down the left operands without recursion, since
        // a chain may be many thousands of operands long.
        let mut links = vec![(op, rhs)];
        let mut first = lhs;
        while let Some((lhs, op, rhs)) = binary_parts(&first) {
            if chain_level(op.kind()) != Some(level) {
                break;
            }
            links.push((op, rhs));
            first = lhs;
        }
        let mut group = Vec::new();
        self.node(&mut group, &first);
        let mut rest = Vec::new();
        for (op, rhs) in links.iter().rev() {
            rest.push(Doc::text(" "));
            self.token(&mut rest, op);
            self.line(&mut rest);
            self.node(&mut rest, rhs);
        }
        // Inside a condition the chain already has lines of its own; inside another chain, that
        // chain indents.
        let parent = node.parent();
        let indent = match parent.as_ref().map(|p| p.kind()) {
            Some(CONDITION | LOOP_COND) => false,
            Some(BIN_EXPR) => parent
                .as_ref()
                .and_then(binary_parts)
                .is_some_and(|(_, op, _)| chain_level(op.kind()).is_none()),
            _ => true,
        };
        group.push(if indent { Doc::Indent(rest) } else { Doc::Concat(rest) });
        parts.push(Doc::group(group));
    }

    /// `c ? a : b`, broken before `?` and `:` when too long.
    fn ternary(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        let [cond, question, then, colon, otherwise] = children.as_slice() else {
            return self.sequence(parts, node);
        };
        let mut group = Vec::new();
        self.element(&mut group, cond);
        let mut rest = Vec::new();
        for (op, operand) in [(question, then), (colon, otherwise)] {
            self.line(&mut rest);
            self.element(&mut rest, op);
            rest.push(Doc::text(" "));
            self.element(&mut rest, operand);
        }
        group.push(Doc::Indent(rest));
        parts.push(Doc::group(group));
    }

    /// `-x`, `!x`: tight, except where the operator would fuse with the operand (`- -x`).
    fn prefix(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let children = significant_children(node);
        let [SyntaxElement::Token(op), operand] = children.as_slice() else {
            return self.sequence(parts, node);
        };
        self.token(parts, op);
        if would_fuse(&SyntaxElement::Token(op.clone()), operand) {
            parts.push(Doc::text(" "));
        }
        self.element(parts, operand);
    }

    /// Calls, indexing, fields and postfix `++`/`--`, all tight: `f(x)[i]++`, `net.l1.w`. They
    /// nest to the left, so the chain is walked down without recursion.
    fn postfix_chain(&mut self, parts: &mut Vec<Doc>, node: &SyntaxNode) {
        let mut links = Vec::new();
        let mut current = node.clone();
        let base = loop {
            // The base is the first child, with nothing before it.
            let first = current.children_with_tokens().find(|child| !child.kind().is_trivia());
            let Some(SyntaxElement::Node(base)) = first else {
                return self.sequence(parts, node);
            };
            links.push(current);
            match base.kind() {
                CALL_EXPR | INDEX_EXPR | POSTFIX_EXPR | FIELD_EXPR => current = base,
                _ => break base,
            }
        };
        self.node(parts, &base);
        let mut last = SyntaxElement::Node(base);
        for link in links.iter().rev() {
            let children = significant_children(link);
            for child in children.iter().skip(1) {
                // A number keeps its space before a field: `52 .s` is not the number `52.s`.
                if would_fuse(&last, child) {
                    parts.push(Doc::text(" "));
                }
                self.element(parts, child);
                last = child.clone();
                // The entries of an index are separated as arguments are: `t[i, :, none]`.
                if child.kind() == COMMA {
                    parts.push(Doc::text(" "));
                }
            }
        }
    }
}

/// Comments before a token inside a statement: own-line ones on lines of their own at the
/// current indentation, inline ones just before the token.
fn leading_comments(parts: &mut Vec<Doc>, comments: &[Comment], next: SyntaxKind) {
    for (i, comment) in comments.iter().enumerate() {
        if comment.own_line() {
            parts.push(Doc::EnsureLineStart);
        } else if i > 0 {
            parts.push(Doc::text(" "));
        }
        parts.push(Doc::Text(Cow::Owned(comment.text.clone())));
    }
    match comments.last() {
        Some(last) if last.ends_line() => parts.push(Doc::HardLine),
        Some(_) if !closes_tight(next) => parts.push(Doc::text(" ")),
        _ => {}
    }
}

/// Whether a comment that ends the line before `token` is printed after `token`: brackets,
/// commas, semicolons and binary operators, which end a line rather than start one.
fn carries_comments(token: &SyntaxToken) -> bool {
    match token.kind() {
        L_PAREN | R_PAREN | L_BRACK | R_BRACK | L_CURLY | R_CURLY | COMMA | SEMICOLON => true,
        kind => {
            BinaryOp::from_kind(kind).is_some()
                && token.parent().is_some_and(|parent| parent.kind() == BIN_EXPR)
        }
    }
}

/// Line breaks between two comments of an item list: one, or two (a blank line) for two or more.
fn line_breaks(parts: &mut Vec<Doc>, newlines: u32) {
    match newlines {
        0 => parts.push(Doc::text(" ")),
        1 => parts.push(Doc::HardLine),
        _ => parts.extend([Doc::HardLine, Doc::HardLine]),
    }
}

/// Whether a space separates two children of a `parent` node that are printed one after the
/// other.
fn spaced(parent: SyntaxKind, prev: SyntaxKind, next: SyntaxKind) -> bool {
    if matches!(next, SEMICOLON | COMMA | R_PAREN | R_BRACK | DIM | PARAM_LIST | ARG_LIST)
        || matches!(prev, L_PAREN | L_BRACK)
    {
        return false;
    }
    match parent {
        RECORD_FIELD => next != COLON,
        TENSOR_TYPE | RECORD_TYPE | FIELD_EXPR | DIM | CAST_EXPR | SIZEOF_TYPE | SLICE
        | PAREN_EXPR | INDEX_EXPR | CALL_EXPR | POSTFIX_EXPR | PREFIX_EXPR => false,
        SIZEOF_EXPR => !matches!(next, SIZEOF_TYPE | PAREN_EXPR),
        _ => true,
    }
}

/// Tokens that an inline comment before them does not get a space from.
fn closes_tight(kind: SyntaxKind) -> bool {
    matches!(kind, R_PAREN | R_BRACK | COMMA | SEMICOLON | COLON)
}

/// The elements of a list `( a, b, )` : the brackets and each element with the comma after it.
type ListShape = (SyntaxToken, Vec<(SyntaxNode, Option<SyntaxToken>)>, SyntaxToken);

/// A bracketed list as [`Builder::bracketed`] lays it out: the brackets and the elements with
/// their commas.
type ListParts<'a> = (&'a SyntaxToken, &'a [(SyntaxNode, Option<SyntaxToken>)], &'a SyntaxToken);

/// How [`Builder::bracketed`] lays out a list that fits on one line, and one that does not.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Bracket {
    /// `(a, b)`: no spaces inside the brackets; one element per line when broken.
    Tight,
    /// `[1, 2, 3]` of numbers: as `Tight`, but as many elements on a line as fit.
    Fill,
    /// `Linear { w: x, b: y }`: spaces inside the braces.
    Spaced,
}

fn list_shape(children: &[SyntaxElement]) -> Option<ListShape> {
    let (first, rest) = children.split_first()?;
    let (last, middle) = rest.split_last()?;
    let open = first.as_token().filter(|t| matches!(t.kind(), L_PAREN | L_BRACK))?.clone();
    let close = last.as_token().filter(|t| matches!(t.kind(), R_PAREN | R_BRACK))?.clone();
    Some((open, separated(middle)?, close))
}

/// Nodes separated by commas (a trailing one allowed), each with the comma after it; `None` when
/// the children are anything else.
fn separated(children: &[SyntaxElement]) -> Option<Vec<(SyntaxNode, Option<SyntaxToken>)>> {
    let mut elements: Vec<(SyntaxNode, Option<SyntaxToken>)> = Vec::new();
    for child in children {
        match child {
            SyntaxElement::Node(node) => {
                if elements.last().is_some_and(|(_, comma)| comma.is_none()) {
                    return None;
                }
                elements.push((node.clone(), None));
            }
            SyntaxElement::Token(token) if token.kind() == COMMA => match elements.last_mut() {
                Some((_, comma @ None)) => *comma = Some(token.clone()),
                _ => return None,
            },
            SyntaxElement::Token(_) => return None,
        }
    }
    Some(elements)
}

/// A number or a name, possibly negated: what a tensor literal packs several of on a line.
fn is_number(node: &SyntaxNode) -> bool {
    match node.kind() {
        LITERAL | PATH_EXPR => true,
        PREFIX_EXPR => {
            let children = significant_children(node);
            matches!(children.as_slice(), [SyntaxElement::Token(_), SyntaxElement::Node(operand)]
                if matches!(operand.kind(), LITERAL | PATH_EXPR))
        }
        _ => false,
    }
}

/// The operands and operator of a binary expression of the usual shape.
fn binary_parts(node: &SyntaxNode) -> Option<(SyntaxNode, SyntaxToken, SyntaxNode)> {
    if node.kind() != BIN_EXPR {
        return None;
    }
    match significant_children(node).as_slice() {
        [SyntaxElement::Node(lhs), SyntaxElement::Token(op), SyntaxElement::Node(rhs)]
            if BinaryOp::from_kind(op.kind()).is_some() =>
        {
            Some((lhs.clone(), op.clone(), rhs.clone()))
        }
        _ => None,
    }
}

/// The precedence level of a binary operator (language.md section 4); `None` for assignments,
/// which do not chain.
fn chain_level(op: SyntaxKind) -> Option<u8> {
    let level = match op {
        AT => 1,
        STAR | SLASH | PERCENT => 2,
        PLUS | MINUS => 3,
        SHL | SHR => 4,
        L_ANGLE | LTEQ | R_ANGLE | GTEQ => 5,
        EQ2 | NEQ => 6,
        AMP => 7,
        CARET => 8,
        PIPE => 9,
        AMP2 => 10,
        PIPE2 => 11,
        _ => return None,
    };
    Some(level)
}

/// Whether two elements printed without a space between them would lex differently: `-` and
/// `-x` make `--x`, `52` and `.s` the number `52.s`.
fn would_fuse(first: &SyntaxElement, second: &SyntaxElement) -> bool {
    match (last_token(first), first_token(second)) {
        (Some(last), Some(next)) => fuses(last.text(), next.text()),
        _ => false,
    }
}

/// Whether two tokens written without a space between them would lex differently.
fn fuses(first: &str, second: &str) -> bool {
    let joined = format!("{first}{second}");
    let lexed = syntax::lex(&joined);
    lexed.tokens.len() != 2 || lexed.tokens[0].len as usize != first.len()
}

fn significant_children(node: &SyntaxNode) -> Vec<SyntaxElement> {
    node.children_with_tokens().filter(|child| !child.kind().is_trivia()).collect()
}

fn token_of(element: &SyntaxElement, kind: SyntaxKind) -> Option<SyntaxToken> {
    element.as_token().filter(|token| token.kind() == kind).cloned()
}

/// The significant tokens of an element, in order.
fn significant_tokens(element: &SyntaxElement) -> impl Iterator<Item = SyntaxToken> {
    let (token, node) = match element {
        SyntaxElement::Token(token) => (Some(token.clone()), None),
        SyntaxElement::Node(node) => (None, Some(node.descendants_with_tokens())),
    };
    let inner = node.into_iter().flatten().filter_map(|e| e.into_token());
    token.into_iter().chain(inner).filter(|token| !token.kind().is_trivia())
}

/// The last significant token of an element.
fn last_token(element: &SyntaxElement) -> Option<SyntaxToken> {
    significant_tokens(element).last()
}

/// The first significant token of an element.
fn first_token(element: &SyntaxElement) -> Option<SyntaxToken> {
    significant_tokens(element).next()
}
