//! Completion: the locals and parameters in scope, the file's functions and the constants it may
//! read (its own and its imports'), the built-ins with their signatures, and keywords; inside the
//! index-labelled views of an index statement, the statement's labels; after `.`, the fields of
//! the record before it.
//!
//! Where a new name is being declared (after a type) or inside a comment or a string, nothing is
//! offered. The editor filters by the prefix typed so far, so every candidate is returned.

use hir::ScopeName;
use syntax::{AstNode, SyntaxKind, SyntaxNode, SyntaxToken, TextSize, ast};

use crate::{FilePosition, semantic};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionItem {
    pub label: String,
    pub kind: CompletionKind,
    /// A type or a signature.
    pub detail: Option<String>,
    /// Markdown documentation.
    pub documentation: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompletionKind {
    Local,
    Parameter,
    ShapeVariable,
    Global,
    Function,
    Builtin,
    Keyword,
    IndexLabel,
    /// A field of a record, after `.`.
    Field,
}

/// Keywords that start a statement or an item.
const STATEMENT_KEYWORDS: &[&str] = &[
    "int", "float", "char", "bool", "Tensor", "void", "var", "cns", "if", "elif", "else", "loop",
    "break", "continue", "return", "function", "test", "import", "struct",
];

/// Keywords that may appear inside an expression.
const EXPRESSION_KEYWORDS: &[&str] = &["true", "false", "sizeof"];

pub(crate) fn completions(db: &hir::Database, position: FilePosition) -> Vec<CompletionItem> {
    if !crate::in_file(db, position.file, position.offset) {
        return Vec::new();
    }
    let root = hir::parse(db, position.file.0).syntax_node();
    let offset = position.offset;
    if let Some(token) = token_left_of(&root, offset)
        && inside_text(&token, offset)
    {
        return Vec::new();
    }
    if let Some(labels) = index_labels(&root, offset) {
        return labels;
    }
    let previous = previous_significant(&root, offset);
    if let Some(dot) = previous.as_ref().filter(|token| token.kind() == SyntaxKind::DOT) {
        return fields_after(db, position, dot);
    }
    if previous.as_ref().is_some_and(declares_a_name) {
        return Vec::new();
    }
    let mut items = Vec::new();
    for (name, scope_name) in hir::names_in_scope(db, position.file.0, offset) {
        items.push(item_for(db, name, scope_name));
    }
    let at_statement_start = previous.as_ref().is_none_or(|token| {
        matches!(token.kind(), SyntaxKind::SEMICOLON | SyntaxKind::L_CURLY | SyntaxKind::R_CURLY)
    });
    if at_statement_start {
        items.extend(STATEMENT_KEYWORDS.iter().map(|k| keyword(k)));
    }
    items.extend(EXPRESSION_KEYWORDS.iter().map(|k| keyword(k)));
    items
}

/// After `net.`: the fields of the record `net` is, with their types for its sizes; nothing
/// after something that is not a record.
fn fields_after(
    db: &hir::Database,
    position: FilePosition,
    dot: &SyntaxToken,
) -> Vec<CompletionItem> {
    let Some(base) = dot.parent().and_then(ast::FieldExpr::cast).and_then(|field| field.expr())
    else {
        return Vec::new();
    };
    let Some((def, expr)) = hir::expr_covering(db, position.file.0, base.syntax().text_range())
    else {
        return Vec::new();
    };
    let hir::Ty::Record(record) = hir::infer(db, def).type_of_expr(expr) else { return Vec::new() };
    hir::record_fields(db, record)
        .into_iter()
        .map(|field| CompletionItem {
            label: field.name.to_string(),
            kind: CompletionKind::Field,
            detail: Some(field.ty.to_string()),
            documentation: None,
        })
        .collect()
}

fn keyword(name: &str) -> CompletionItem {
    CompletionItem {
        label: name.to_owned(),
        kind: CompletionKind::Keyword,
        detail: None,
        documentation: None,
    }
}

fn item_for(db: &hir::Database, name: String, scope_name: ScopeName) -> CompletionItem {
    match scope_name {
        ScopeName::Local(def, local) => {
            let kind = match hir::body(db, def).locals[local].kind {
                hir::LocalKind::Param => CompletionKind::Parameter,
                hir::LocalKind::ShapeVar => CompletionKind::ShapeVariable,
                hir::LocalKind::Variable => CompletionKind::Local,
            };
            CompletionItem {
                label: name,
                kind,
                detail: Some(semantic::local_type_text(db, def, local)),
                documentation: None,
            }
        }
        ScopeName::Item(hir::ScopeItem::Function(def)) => CompletionItem {
            label: name,
            kind: CompletionKind::Function,
            detail: Some(semantic::function_header(db, def)),
            documentation: None,
        },
        ScopeName::Item(hir::ScopeItem::Global { def, local, .. }) => CompletionItem {
            label: name,
            kind: CompletionKind::Global,
            detail: Some(semantic::local_type_text(db, def, local)),
            documentation: None,
        },
        ScopeName::Builtin(builtin) => {
            let info = semantic::builtin_info(builtin);
            CompletionItem {
                label: name,
                kind: CompletionKind::Builtin,
                detail: info.map(|i| i.signature.to_owned()),
                documentation: info.map(|i| i.doc.to_owned()),
            }
        }
    }
}

/// Whether `offset` is inside a comment, a string or a character literal: after its start and
/// before its end, or anywhere after the start of a line comment.
fn inside_text(token: &SyntaxToken, offset: TextSize) -> bool {
    let range = token.text_range();
    match token.kind() {
        SyntaxKind::COMMENT if token.text().starts_with("//") => range.start() < offset,
        SyntaxKind::COMMENT | SyntaxKind::STRING | SyntaxKind::CHAR_LITERAL => {
            range.start() < offset && offset < range.end()
        }
        _ => false,
    }
}

/// The token that ends at or contains `offset`.
fn token_left_of(root: &SyntaxNode, offset: TextSize) -> Option<SyntaxToken> {
    match root.token_at_offset(offset) {
        rowan::TokenAtOffset::None => None,
        rowan::TokenAtOffset::Single(token) => Some(token),
        rowan::TokenAtOffset::Between(left, _) => Some(left),
    }
}

/// The last token before `offset` that is not trivia, skipping the identifier being typed.
fn previous_significant(root: &SyntaxNode, offset: TextSize) -> Option<SyntaxToken> {
    let mut token = token_left_of(root, offset)?;
    if token.text_range().start() >= offset {
        token = token.prev_token()?;
    }
    if token.kind() == SyntaxKind::IDENT && token.text_range().end() >= offset {
        token = token.prev_token()?;
    }
    while token.kind().is_trivia() {
        token = token.prev_token()?;
    }
    Some(token)
}

/// Whether the token before the cursor means a new name comes next: a type, or a `test` or
/// `import` keyword (which take a string).
fn declares_a_name(token: &SyntaxToken) -> bool {
    use SyntaxKind::*;
    let in_cast_or_sizeof = token.parent().is_some_and(|parent| {
        matches!(parent.kind(), SIZEOF_TYPE | CAST_EXPR)
            || parent.parent().is_some_and(|p| matches!(p.kind(), SIZEOF_TYPE | CAST_EXPR))
    });
    let is_type = matches!(
        token.kind(),
        INT_KW | FLOAT_KW | CHAR_KW | BOOL_KW | CAPITAL_BOOL_KW | TENSOR_KW | VOID_KW
    ) || (token.kind() == R_BRACK
        && token.parent().is_some_and(|p| {
            p.kind() == DIM && p.parent().is_some_and(|pp| pp.kind() == TENSOR_TYPE)
        }));
    (is_type && !in_cast_or_sizeof) || matches!(token.kind(), TEST_KW | IMPORT_KW)
}

/// Inside the parentheses of an index-labelled view of an index statement, the labels the
/// statement already uses.
fn index_labels(root: &SyntaxNode, offset: TextSize) -> Option<Vec<CompletionItem>> {
    let token = token_left_of(root, offset)?;
    let arg_list = token.parent_ancestors().find_map(ast::ArgList::cast).filter(|list| {
        let range = list.syntax().text_range();
        range.start() < offset && (offset < range.end() || list.r_paren_token().is_none())
    })?;
    let call = arg_list.syntax().parent().and_then(ast::CallExpr::cast)?;
    let statement = call.syntax().ancestors().find_map(ast::ExprStmt::cast)?;
    let ast::Expr::BinExpr(assign) = statement.expr()? else { return None };
    let is_index_op = matches!(
        assign.op_kind(),
        Some(ast::BinaryOp::Assign(None | Some(ast::ArithOp::Add | ast::ArithOp::Mul)))
    );
    let Some(ast::Expr::CallExpr(target)) = assign.lhs() else { return None };
    if !is_index_op || !is_labelled_view(&target) {
        return None;
    }
    let mut labels: Vec<String> = Vec::new();
    for view in statement.syntax().descendants().filter_map(ast::CallExpr::cast) {
        if !is_labelled_view(&view) {
            continue;
        }
        for arg in view.args() {
            if let ast::Expr::PathExpr(path) = arg
                && let Some(name) = path.name_ref()
                && name.syntax().text_range().end() != offset
            {
                let text = name.text();
                if !labels.contains(&text) {
                    labels.push(text);
                }
            }
        }
    }
    Some(
        labels
            .into_iter()
            .map(|label| CompletionItem {
                label,
                kind: CompletionKind::IndexLabel,
                detail: Some("index label".to_owned()),
                documentation: None,
            })
            .collect(),
    )
}

/// `A(i, k)`: a name called with names only.
fn is_labelled_view(call: &ast::CallExpr) -> bool {
    matches!(call.callee(), Some(ast::Expr::PathExpr(_)))
        && call.args().all(|arg| matches!(arg, ast::Expr::PathExpr(_)))
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let items = fixture.analysis.completions(fixture.position()).unwrap_or_default();
        let mut out = String::new();
        for item in items {
            // Built-ins and keywords are many and fixed; list just a few to keep the snapshot
            // readable.
            let listed = match item.kind {
                crate::CompletionKind::Builtin => matches!(item.label.as_str(), "softmax" | "sum"),
                crate::CompletionKind::Keyword => matches!(item.label.as_str(), "loop" | "true"),
                _ => true,
            };
            if listed {
                let line =
                    format!("{:?} {} {}", item.kind, item.label, item.detail.unwrap_or_default());
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn transforms_among_the_builtins() {
        let fixture =
            fixture::load("function float f(float x) {\n    return x;\n}\nprint(vm$0);\n");
        let items = fixture.analysis.completions(fixture.position()).unwrap_or_default();
        let vmap = items.iter().find(|item| item.label == "vmap");
        let detail = vmap.and_then(|item| item.detail.clone()).unwrap_or_default();
        expect!["vmap(f)(xs, ...) | vmap(f, k)(args) | vmap(f, [i, j])(args)"].assert_eq(&detail);
    }

    #[test]
    fn top_level_names_and_builtins() {
        check(
            "var Tensor w[2][3] = zeros([2, 3]);\nfloat y = sum(w);\nprint($0);\n",
            expect![[r#"
                Local y float
                Local w var Tensor[2][3]
                Builtin sum sum(t) | sum(t, axis, keepdims)
                Builtin softmax softmax(t, axis)
                Keyword true
            "#]],
        );
    }

    #[test]
    fn locals_parameters_and_functions_in_a_function() {
        check(
            r#"
//- main.nb
import "lib.nb";
cns float RATE = 0.1;
float hidden = 1.0;
function float f(Tensor x[n]) {
    float s = sum(x);
    {
        float inner = 1.0;
    }
    return s$0;
}
//- lib.nb
function float helper(float x) {
    return x;
}
cns int SIZE = 3;
"#,
            expect![[r#"
                Local s float
                Parameter x Tensor[n]
                ShapeVariable n int
                Global RATE cns float
                Global SIZE cns int
                Function f function float f(Tensor x[n])
                Function helper function float helper(float x)
                Builtin sum sum(t) | sum(t, axis, keepdims)
                Builtin softmax softmax(t, axis)
                Keyword true
            "#]],
        );
    }

    #[test]
    fn keywords_at_the_start_of_a_statement() {
        check(
            "int a = 1;\nlo$0\n",
            expect![[r#"
                Local a int
                Builtin sum sum(t) | sum(t, axis, keepdims)
                Builtin softmax softmax(t, axis)
                Keyword loop
                Keyword true
            "#]],
        );
    }

    #[test]
    fn index_labels_in_an_index_statement() {
        check(
            "Tensor A[2][3];\nTensor B[3][4];\nTensor C[2][4];\nC(i,j) = A(i,k) * B(k,$0);\n",
            expect![[r#"
                IndexLabel i index label
                IndexLabel j index label
                IndexLabel k index label
            "#]],
        );
    }

    #[test]
    fn nothing_where_a_name_is_declared() {
        check("int a = 1;\nfloat $0\n", expect![[""]]);
    }

    #[test]
    fn nothing_in_a_comment() {
        check("int a = 1; // a$0\n", expect![""]);
    }

    #[test]
    fn sizes_as_written_and_as_bound() {
        check(
            "function float f(Tensor x[n][2*m]) {\n    Tensor h[n - 1][m];\n    return $0;\n}\n",
            expect![[r#"
                Local h Tensor[n - 1][m]
                Parameter x Tensor[n][2*m]
                ShapeVariable m int
                ShapeVariable n int
                Function f function float f(Tensor x[n][2*m])
                Builtin sum sum(t) | sum(t, axis, keepdims)
                Builtin softmax softmax(t, axis)
                Keyword true
            "#]],
        );
    }

    #[test]
    fn fields_after_a_dot() {
        check(
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nstruct Mlp {\n    Linear[i][h] l1;\n    float scale;\n}\nMlp net = Mlp { l1: Linear { w: zeros([2, 3]), b: zeros([3]) }, scale: 1.0 };\nprint(net.l1.$0);\n",
            expect![[r#"
                Field w Tensor[2][3]
                Field b Tensor[3]
            "#]],
        );
    }
}
