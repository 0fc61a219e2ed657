//! Fix-its of syntax errors that need the finished tree: the parser decides that `2 ** 3` wants
//! `pow`, but only the tree knows the text of both operands. The parser attaches a [`FixPlan`]
//! to the error; once the tree is built, [`attach`] turns each plan into edits of the text.
//!
//! A plan that does not find the shape it expects gives no fix-it rather than a wrong one.

use rowan::{GreenNode, NodeOrToken, TextRange};

use crate::{SyntaxError, SyntaxFix, SyntaxKind, SyntaxKind::*, SyntaxNode, SyntaxToken, T};

/// How to fix the error at the token the error covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FixPlan {
    /// Replace the token with this text: a keyword spelt right, `loop` for `for`.
    Replace(&'static str),
    /// Insert this text before the token: `function ` before a C-style definition.
    InsertBefore(&'static str),
    /// `a ** b` (the token is the first `*`) becomes `pow(a, b)`.
    Power,
    /// `{1, {2}}` (the token is the outer `{`) becomes `[1, [2]]`.
    Brackets,
    /// `while (c)` (the token is `while`) becomes `loop (; c; )`.
    WhileHeader,
    /// `if x > 0 {` (the token starts the condition) becomes `if (x > 0) {`.
    ParenthesizeCondition,
    /// `float(x)` (the token is the type) becomes `(float)(x)`.
    CastCall,
    /// `print x;` (the token starts the first argument) becomes `print(x);`.
    CallParens,
    /// `let x = 1.5;` (the token is `let`) becomes `float x = 1.5;` when the initializer is a
    /// literal that says its type.
    DeclareType,
    /// `for i in range(a, b)` (the token is `for`) becomes `loop (int i = a; i < b; i++)`.
    ForRange,
    /// `else if` (the token is `else`) becomes `elif`.
    ElseIf,
}

/// Computes the fix-it of each planned error: `plans` pairs an index into `errors` with its
/// plan.
pub(crate) fn attach(green: &GreenNode, errors: &mut [SyntaxError], plans: Vec<(usize, FixPlan)>) {
    let root = SyntaxNode::new_root(green.clone());
    for (index, plan) in plans {
        let Some(error) = errors.get_mut(index) else { continue };
        let Some(token) = root.token_at_offset(error.range.start()).right_biased() else {
            continue;
        };
        error.fix = fix(&token, &plan);
    }
}

fn fix(token: &SyntaxToken, plan: &FixPlan) -> Option<SyntaxFix> {
    let range = token.text_range();
    let text = token.text();
    match plan {
        FixPlan::Replace(new) => Some(one_edit(format!("write `{new}`"), range, new.to_string())),
        FixPlan::InsertBefore(new) => Some(one_edit(
            format!("insert `{}`", new.trim()),
            TextRange::empty(range.start()),
            new.to_string(),
        )),
        FixPlan::Power => {
            let bin = token.parent().filter(|node| node.kind() == BIN_EXPR)?;
            let (lhs, rhs) = first_and_last_child(&bin)?;
            let new = format!("pow({}, {})", lhs.text(), rhs.text());
            Some(one_edit(format!("write `{new}`"), bin.text_range(), new))
        }
        FixPlan::Brackets => {
            let lit = token.parent().filter(|node| node.kind() == TENSOR_LIT)?;
            let edits = lit
                .descendants_with_tokens()
                .filter_map(NodeOrToken::into_token)
                .filter_map(|t| match t.kind() {
                    T!['{'] => Some((t.text_range(), "[".to_owned())),
                    T!['}'] => Some((t.text_range(), "]".to_owned())),
                    _ => None,
                })
                .collect();
            Some(SyntaxFix { label: "write the tensor literal in brackets".to_owned(), edits })
        }
        FixPlan::WhileHeader => {
            let stmt = token.parent().filter(|node| node.kind() == LOOP_STMT)?;
            let cond = stmt.children().find(|node| node.kind() == LOOP_COND)?;
            let open = child_token(&stmt, T!['(']);
            let close = child_token(&stmt, T![')']);
            let edits = match (open, close) {
                (Some(open), Some(close)) => vec![
                    (range, "loop".to_owned()),
                    (TextRange::empty(open.text_range().end()), "; ".to_owned()),
                    (TextRange::empty(close.text_range().start()), "; ".to_owned()),
                ],
                (None, None) => vec![
                    (range, "loop (;".to_owned()),
                    (TextRange::empty(cond.text_range().end()), "; )".to_owned()),
                ],
                _ => return None,
            };
            Some(SyntaxFix { label: "write `loop (; condition; )`".to_owned(), edits })
        }
        FixPlan::ParenthesizeCondition => {
            let cond = token
                .parent_ancestors()
                .find(|node| matches!(node.kind(), CONDITION | LOOP_COND))?;
            let range = cond.text_range();
            Some(SyntaxFix {
                label: "put the condition in parentheses".to_owned(),
                edits: vec![
                    (TextRange::empty(range.start()), "(".to_owned()),
                    (TextRange::empty(range.end()), ")".to_owned()),
                ],
            })
        }
        FixPlan::CastCall => Some(SyntaxFix {
            label: format!("cast with `({text})`"),
            edits: vec![
                (TextRange::empty(range.start()), "(".to_owned()),
                (TextRange::empty(range.end()), ")".to_owned()),
            ],
        }),
        FixPlan::CallParens => {
            let args = token.parent_ancestors().find(|node| node.kind() == ARG_LIST)?;
            let callee = args.prev_sibling()?;
            let gap = TextRange::new(callee.text_range().end(), args.text_range().start());
            Some(SyntaxFix {
                label: format!("call `{}` with parentheses", callee.text()),
                edits: vec![
                    (gap, "(".to_owned()),
                    (TextRange::empty(args.text_range().end()), ")".to_owned()),
                ],
            })
        }
        FixPlan::DeclareType => {
            let decl = token.parent_ancestors().find(|node| node.kind() == VAR_DECL)?;
            let declarators: Vec<SyntaxNode> =
                decl.children().filter(|node| node.kind() == DECLARATOR).collect();
            let [declarator] = declarators.as_slice() else { return None };
            let init = declarator.children().find(|node| node.kind() == INITIALIZER)?;
            let ty = literal_type(&init.first_child()?)?;
            // A type annotation (`let x: f64 = ...`) goes too.
            let mut edits = vec![(range, ty.to_owned())];
            edits.extend(
                declarator
                    .children()
                    .filter(|node| node.kind() == ERROR)
                    .map(|node| (node.text_range(), String::new())),
            );
            Some(SyntaxFix { label: format!("declare it `{ty}`"), edits })
        }
        FixPlan::ElseIf => {
            let next = next_significant(token)?;
            let whole = TextRange::new(range.start(), next.text_range().end());
            Some(one_edit("write `elif`".to_owned(), whole, "elif".to_owned()))
        }
        FixPlan::ForRange => {
            let stmt = token.parent().filter(|node| node.kind() == LOOP_STMT)?;
            let init = stmt.children().find(|node| node.kind() == LOOP_INIT)?;
            let name = init.descendants().find(|node| node.kind() == NAME)?;
            let header = stmt.children().find(|node| node.kind() == ERROR)?;
            let call = header.children().find(|node| node.kind() == CALL_EXPR)?;
            let args: Vec<SyntaxNode> =
                call.children().find(|node| node.kind() == ARG_LIST)?.children().collect();
            let (start, end) = match args.as_slice() {
                [end] => ("0".to_owned(), end.text().to_string()),
                [start, end] => (start.text().to_string(), end.text().to_string()),
                _ => return None,
            };
            let name = name.text();
            let new = format!("loop (int {name} = {start}; {name} < {end}; {name}++)");
            let whole = TextRange::new(range.start(), header.text_range().end());
            Some(one_edit(format!("write `{new}`"), whole, new))
        }
    }
}

fn one_edit(label: String, range: TextRange, text: String) -> SyntaxFix {
    SyntaxFix { label, edits: vec![(range, text)] }
}

fn first_and_last_child(node: &SyntaxNode) -> Option<(SyntaxNode, SyntaxNode)> {
    let first = node.first_child()?;
    let last = node.last_child()?;
    (first != last).then_some((first, last))
}

fn child_token(node: &SyntaxNode, kind: SyntaxKind) -> Option<SyntaxToken> {
    node.children_with_tokens().filter_map(NodeOrToken::into_token).find(|t| t.kind() == kind)
}

fn next_significant(token: &SyntaxToken) -> Option<SyntaxToken> {
    let mut next = token.next_token();
    while let Some(t) = &next {
        if !t.kind().is_trivia() {
            return next;
        }
        next = t.next_token();
    }
    None
}

/// The type a literal initializer says it has.
fn literal_type(expr: &SyntaxNode) -> Option<&'static str> {
    match expr.kind() {
        TENSOR_LIT => Some("Tensor"),
        LITERAL => match expr.first_token()?.kind() {
            INT_NUMBER => Some("int"),
            FLOAT_NUMBER => Some("float"),
            CHAR_LITERAL => Some("char"),
            T![true] | T![false] => Some("bool"),
            _ => None,
        },
        PREFIX_EXPR if expr.first_token()?.kind() == T![-] => literal_type(&expr.first_child()?),
        _ => None,
    }
}
