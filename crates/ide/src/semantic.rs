//! What each name in a file means: every declaration and use of a local, a top-level variable,
//! a function, a built-in, a shape variable, an index label, a record type or a field, with its
//! file range. Hover,
//! references, rename and semantic tokens all read this one index.
//!
//! All of it comes from HIR, which resolved every name once: the resolutions of name
//! expressions, the spans of locals, and the names used in dimensions (`Tensor a[n][N]`), which
//! are not expressions.

use hir::{Builtin, DefId, DefKind, Expr, LocalId, Resolution, StmtId};
use smol_str::SmolStr;
use syntax::{AstNode, SyntaxKind, SyntaxNode, SyntaxToken, TextRange, TextSize, ast};

use rowan::TokenAtOffset;

use crate::FileId;

/// What a name refers to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Definition {
    /// A local of a body: a variable, a parameter or a shape variable. A top-level variable is a
    /// local of its file's top-level body.
    Local {
        def: DefId,
        local: LocalId,
    },
    Function(DefId),
    /// A record type: its `struct`.
    Record(DefId),
    Builtin(Builtin),
    /// An index label, which lives only inside its index statement.
    Label {
        def: DefId,
        stmt: StmtId,
        name: SmolStr,
    },
}

/// One occurrence of a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Occurrence {
    pub(crate) range: TextRange,
    pub(crate) definition: Definition,
    pub(crate) is_decl: bool,
}

/// The syntax chunks of a definition with their offsets in the file.
pub(crate) fn def_chunks(db: &dyn hir::Db, def: DefId) -> Vec<(SyntaxNode, TextSize)> {
    let tree = hir::item_tree(db, def.file(db));
    let index = def.index(db) as usize;
    match def.kind(db) {
        DefKind::Function => tree
            .functions
            .get(index)
            .map(|f| (SyntaxNode::new_root(f.node.clone()), f.offset))
            .into_iter()
            .collect(),
        DefKind::Test => tree
            .tests
            .get(index)
            .map(|t| (SyntaxNode::new_root(t.node.clone()), t.offset))
            .into_iter()
            .collect(),
        DefKind::TopLevel => tree
            .top_level
            .iter()
            .map(|s| (SyntaxNode::new_root(s.node.clone()), s.offset))
            .collect(),
        DefKind::Struct => tree
            .structs
            .get(index)
            .map(|s| (SyntaxNode::new_root(s.node.clone()), s.offset))
            .into_iter()
            .collect(),
    }
}

/// The file range of a span relative to a definition.
pub(crate) fn file_range(db: &dyn hir::Db, def: DefId, span: hir::RelSpan) -> TextRange {
    hir::file_range(db, hir::HirSpan { def, span }).1
}

/// Every name occurrence of one definition, in no particular order.
pub(crate) fn def_occurrences(db: &dyn hir::Db, def: DefId) -> Vec<Occurrence> {
    let body = hir::body(db, def);
    let result = hir::infer(db, def);
    let mut out = Vec::new();
    for (expr, data) in body.exprs.iter() {
        if !matches!(data, Expr::Name { .. }) {
            continue;
        }
        let definition = match result.resolution(expr) {
            Some(resolution) => definition_of(def, resolution),
            None => continue,
        };
        let range = file_range(db, def, body.source_map.expr(expr));
        out.push(Occurrence { range, definition, is_decl: false });
    }
    for (local, data) in body.locals.iter() {
        // The hidden size variables of a record type written without sizes (`l.n`) are
        // declared by the type's name, which names the record type.
        if data.name.is_empty() || data.name.contains('.') {
            continue;
        }
        let range = file_range(db, def, body.source_map.local(local));
        out.push(Occurrence { range, definition: Definition::Local { def, local }, is_decl: true });
    }
    if def.kind(db) == DefKind::Function
        && let Some(span) = hir::signature(db, def).name_span
    {
        let range = file_range(db, def, span);
        out.push(Occurrence { range, definition: Definition::Function(def), is_decl: true });
    }
    if def.kind(db) == DefKind::Struct
        && let Some(span) = hir::signature(db, def).name_span
    {
        let range = file_range(db, def, span);
        out.push(Occurrence { range, definition: Definition::Record(def), is_decl: true });
    }
    // Record types named in types and literals, and the fields of literals and accesses.
    for &(span, record) in body.source_map.record_uses() {
        let range = file_range(db, def, span);
        out.push(Occurrence { range, definition: Definition::Record(record), is_decl: false });
    }
    for &(span, record, field) in &result.field_uses {
        let range = file_range(db, def, span);
        let definition = Definition::Local { def: record, local: field };
        out.push(Occurrence { range, definition, is_decl: false });
    }
    // The rule a `derivative` clause names, resolved in the file scope as the checker does.
    if def.kind(db) == DefKind::Function
        && let Some((name, span)) = &hir::signature(db, def).derivative
        && let Some(hir::ScopeItem::Function(rule)) = hir::file_scope(db, def.file(db)).get(name)
    {
        let range = file_range(db, def, *span);
        out.push(Occurrence { range, definition: Definition::Function(rule), is_decl: false });
    }
    for (stmt, data) in body.stmts.iter() {
        let hir::Stmt::Index(index) = data else { continue };
        let operands =
            std::iter::once(&index.target).chain(index.factors.iter().filter_map(|factor| {
                match factor {
                    hir::IndexFactor::Tensor(operand) => Some(operand),
                    hir::IndexFactor::Scalar(_) => None,
                }
            }));
        for operand in operands {
            for label in &operand.labels {
                let range = file_range(db, def, label.span);
                let definition = Definition::Label { def, stmt, name: label.name.clone() };
                out.push(Occurrence { range, definition, is_decl: false });
            }
        }
    }
    out.extend(dimension_occurrences(db, def));
    out
}

fn definition_of(def: DefId, resolution: Resolution) -> Definition {
    match resolution {
        Resolution::Local(local) => Definition::Local { def, local },
        Resolution::Global { def, local } => Definition::Local { def, local },
        Resolution::Function(function) => Definition::Function(function),
        Resolution::Builtin(builtin) => Definition::Builtin(builtin),
    }
}

/// Names used in dimensions (`Tensor a[n][2*N]`), as `hir` resolved them while lowering.
fn dimension_occurrences(db: &dyn hir::Db, def: DefId) -> Vec<Occurrence> {
    let body = hir::body(db, def);
    body.source_map
        .size_uses()
        .iter()
        .map(|&(span, target, local)| Occurrence {
            range: file_range(db, def, span),
            definition: Definition::Local { def: target, local },
            is_decl: false,
        })
        .collect()
}

/// Every name occurrence of a file, sorted by position.
pub(crate) fn file_occurrences(db: &dyn hir::Db, file: FileId) -> Vec<Occurrence> {
    let mut out: Vec<Occurrence> =
        hir::all_defs(db, file.0).into_iter().flat_map(|def| def_occurrences(db, def)).collect();
    out.sort_by_key(|o| (o.range.start(), o.range.end()));
    out.dedup_by(|a, b| a.range == b.range);
    out
}

/// The occurrence of a name at `offset`, if there is one.
pub(crate) fn occurrence_at(
    db: &dyn hir::Db,
    file: FileId,
    offset: TextSize,
) -> Option<Occurrence> {
    let token = ident_at(db, file, offset)?;
    let range = token.text_range();
    let (def, _, _) = hir::def_at(db, file.0, range.start())?;
    def_occurrences(db, def).into_iter().find(|o| o.range == range)
}

/// The identifier token at `offset`, preferring one that starts or ends there.
pub(crate) fn ident_at(db: &dyn hir::Db, file: FileId, offset: TextSize) -> Option<SyntaxToken> {
    if usize::from(offset) > file.0.text(db).len() {
        return None;
    }
    let root = hir::parse(db, file.0).syntax_node();
    match root.token_at_offset(offset) {
        TokenAtOffset::None => None,
        TokenAtOffset::Single(token) => (token.kind() == SyntaxKind::IDENT).then_some(token),
        TokenAtOffset::Between(left, right) => {
            [right, left].into_iter().find(|t| t.kind() == SyntaxKind::IDENT)
        }
    }
}

/// The token at `offset` that is not trivia, preferring the one on the right.
pub(crate) fn token_at(root: &SyntaxNode, offset: TextSize) -> Option<SyntaxToken> {
    match root.token_at_offset(offset) {
        TokenAtOffset::None => None,
        TokenAtOffset::Single(token) => Some(token),
        TokenAtOffset::Between(left, right) => {
            let significant = |t: &SyntaxToken| !t.kind().is_trivia();
            if significant(&right) && right.kind() == SyntaxKind::IDENT {
                Some(right)
            } else if significant(&left) && left.kind() == SyntaxKind::IDENT {
                Some(left)
            } else if significant(&right) {
                Some(right)
            } else {
                Some(left)
            }
        }
    }
}

/// The name of what a definition names, for messages.
pub(crate) fn definition_name(db: &dyn hir::Db, definition: &Definition) -> String {
    match definition {
        Definition::Local { def, local } => hir::body(db, *def).locals[*local].name.to_string(),
        Definition::Function(def) | Definition::Record(def) => {
            hir::signature(db, *def).name.to_string()
        }
        Definition::Builtin(builtin) => builtin_info(*builtin).map(|i| i.name).unwrap_or("").into(),
        Definition::Label { name, .. } => name.to_string(),
    }
}

pub(crate) fn builtin_info(builtin: Builtin) -> Option<&'static hir::BuiltinInfo> {
    hir::BUILTINS.iter().find(|info| info.builtin == builtin)
}

/// A function's header as written, `function float mse(Tensor p[n], Tensor y[n])`, with runs of
/// whitespace and comments collapsed to one space.
pub(crate) fn function_header(db: &dyn hir::Db, def: DefId) -> String {
    let Some((node, _)) = def_chunks(db, def).into_iter().next() else { return String::new() };
    let Some(function) = ast::FnDef::cast(node) else { return String::new() };
    let mut out = String::new();
    let mut pending_space = false;
    for element in function.syntax().children_with_tokens() {
        if element.kind() == SyntaxKind::BLOCK {
            break;
        }
        let tokens: Vec<SyntaxToken> = match element {
            rowan::NodeOrToken::Token(token) => vec![token],
            rowan::NodeOrToken::Node(node) => {
                node.descendants_with_tokens().filter_map(|e| e.into_token()).collect()
            }
        };
        for token in tokens {
            if token.kind().is_trivia() {
                pending_space = !out.is_empty();
                continue;
            }
            let before_closing = matches!(token.kind(), SyntaxKind::R_PAREN | SyntaxKind::COMMA);
            if pending_space && !before_closing && !out.ends_with('(') {
                out.push(' ');
            }
            pending_space = false;
            out.push_str(token.text());
        }
    }
    out
}

/// The size variables a call binds, as inlay hints and signature help show them:
/// `n = 8, q = 3`, without those bound to an unknown extent; `None` when no variable is left.
pub(crate) fn bindings_text(bindings: &[(hir::SizeVar, hir::Dim)]) -> Option<String> {
    let shown: Vec<String> = bindings
        .iter()
        .filter(|(_, dim)| *dim != hir::Dim::Unknown)
        .map(|(var, dim)| format!("{var} = {dim}"))
        .collect();
    (!shown.is_empty()).then(|| shown.join(", "))
}

/// How a local is declared, for hovers and completion details: `var Tensor[2][3]`.
pub(crate) fn local_type_text(db: &dyn hir::Db, def: DefId, local: LocalId) -> String {
    let data = &hir::body(db, def).locals[local];
    let ty = hir::infer(db, def).type_of_local(local);
    let qualifier = match (data.kind, data.qualifier) {
        (hir::LocalKind::ShapeVar, _) => "",
        (_, Some(hir::Qualifier::Var)) => "var ",
        (_, Some(hir::Qualifier::Cns)) => "cns ",
        (_, None) => "",
    };
    format!("{qualifier}{ty}")
}

/// What kind of local it is, in words.
pub(crate) fn local_kind_text(db: &dyn hir::Db, def: DefId, local: LocalId) -> &'static str {
    let data = &hir::body(db, def).locals[local];
    let is_struct = def.kind(db) == DefKind::Struct;
    match data.kind {
        hir::LocalKind::Param if is_struct => "field",
        hir::LocalKind::ShapeVar if is_struct => "size parameter",
        hir::LocalKind::Param => "parameter",
        hir::LocalKind::ShapeVar => "shape variable",
        hir::LocalKind::Variable if def.kind(db) == DefKind::TopLevel && data.scope_depth == 0 => {
            match data.qualifier {
                Some(hir::Qualifier::Cns) => "top-level constant",
                _ => "top-level variable",
            }
        }
        hir::LocalKind::Variable => "local variable",
    }
}
