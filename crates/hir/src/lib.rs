//! Semantic analysis of Nabla on salsa: files, items, bodies lowered to arenas, name resolution,
//! types and symbolic shapes, and diagnostics with stable codes.
//!
//! This crate knows nothing of editors, the command line or execution; it answers questions
//! about programs.
//!
//! It is a boundary, as rust-analyzer's `hir` is: its modules are private, and what `ide`,
//! `exec`, the command line and the fuzz targets use is what this file defines or re-exports
//! (the tidy check of `xtask/src/tidy.rs` keeps it so). Every name, dimensions included, is
//! resolved here once: a size in a type is a [`Dim`] over [`SizeVar`]s (a definition and a
//! [`LocalId`]), never a name to look up again.
//!
//! # How to use it
//!
//! Put files in a [`Database`] ([`Database::set_file`], or [`Database::load_with_imports`] to
//! read a file and what it imports from disk), then ask:
//!
//! - [`file_diagnostics`]: every diagnostic of a file, sorted, with file ranges, labels, help and
//!   fix-its ([`Diagnostic`]). Codes are [`Code`]; `docs/errors.md` explains each.
//! - [`all_defs`]: the file's definitions ([`DefId`]): its top level (what `nabla run`
//!   executes), each `function` and each `test`.
//! - [`body`]: a definition's HIR ([`Body`]): arenas of [`Expr`], [`Stmt`] and [`Local`], the
//!   parameters, the root statements, and a [`BodySourceMap`] from every node to its
//!   [`RelSpan`]. Index statements are [`Stmt::Index`]; derivatives of functions are
//!   [`Expr::Transform`] (as the callee of an [`Expr::Call`]); `grad(x)` of a variable is a call
//!   of [`Builtin::Grad`].
//! - [`infer`]: the [`InferenceResult`] of a body: the [`Ty`] of every expression and local,
//!   the [`Resolution`] of every name (local, function, global constant, built-in), the shape
//!   variables bound at each call, and the functions it calls and differentiates.
//! - [`signature`]: a function's parameters, return type and shape variables.
//! - [`file_range`]: where a [`HirSpan`] (a definition plus a [`RelSpan`]) is in its file, for
//!   run-time errors and editors; [`def_at`], [`expr_at`] and [`expr_covering`] go the other way.
//! - For editors (the queries themselves are in `ide`): [`expr_at`],
//!   [`InferenceResult::resolution`] and [`declaration`] (hover, go to definition),
//!   [`names_in_scope`] (completion, signature help, rename's conflicts), and
//!   [`InferenceResult::shape_bindings`] (inlay hints and signature help for shape variables
//!   at calls).
//!
//! [`names_in_scope`] stays here, as rust-analyzer keeps `SemanticsScope` in its `hir`: which
//! names an offset sees is name resolution (the scopes, the shadowing of an outer declaration
//! by an inner one, the `cns` globals a function may read), and answering it in `ide` would be
//! a second resolution beside the one lowering and inference use. What `ide` makes of the
//! names (completion items, their details, signature labels) is in `ide`.
//! - [`item_tree`] and [`top_level_def`]: a file's items with their syntax; [`resolve_import`]:
//!   the file an import names; [`file_scope`]: the functions and globals a file sees.
//! - [`BUILTINS`]: every built-in's name, arity, typing rule, differentiability,
//!   signature and documentation.
//!
//! # Incrementality
//!
//! Spans inside a definition are relative to the definition, and every per-definition query reads
//! the definition's text through `db::def_source`, which does not change when text elsewhere
//! moves. So after an edit inside one function, salsa re-runs the lowering and inference of that
//! function only (see `tests/incremental.rs`). Parsing itself is incremental too: a file's parse
//! is an input beside its text, and an edit ([`Database::edit_file`], or a new text, whose
//! difference from the old is the edit) reparses only the token or block around it, with
//! [`syntax::Parse::reparse`].

pub(crate) mod body;
pub(crate) mod builtins;
pub(crate) mod db;
pub(crate) mod diagnostics;
pub(crate) mod format_string;
pub(crate) mod infer;
pub(crate) mod item_tree;
pub(crate) mod lints;
mod literal;
pub(crate) mod records;
pub(crate) mod scope;
pub(crate) mod suggest;
pub(crate) mod ty;

use std::sync::Arc;

use rustc_hash::FxHashSet;
use syntax::{TextRange, TextSize};

pub use crate::{
    body::{
        ArithOp, BinaryOp, Body, BodySourceMap, CmpOp, Expr, ExprId, FieldInit, HirSpan, IfBranch,
        IndexAssignOp, IndexEntry, IndexFactor, IndexLabel, IndexOperand, IndexStmt, Literal,
        Local, LocalId, LocalKind, LogicOp, Qualifier, RecordRef, RejectedOp, RelSpan, RuntimeSize,
        ScopeEnd, Stmt, StmtId, TransformOp, TypeRef, UnaryOp,
        lower::{ParamSig, Signature},
    },
    builtins::{BUILTINS, Builtin, BuiltinInfo, Rule},
    db::{
        Database, Db, DefId, DefKind, SourceFile, import_target, normalize, parse, resolve_import,
    },
    diagnostics::{Code, Diagnostic, Fix, Label, Severity, TextEdit, file_range},
    format_string::{
        FormatAlign, FormatError, FormatNotation, FormatPart, FormatSpec, FormatString,
        FormatValueKind, parse_format_string,
    },
    infer::{InferenceResult, Resolution, const_int, ty_of_ref},
    item_tree::{FunctionItem, ImportItem, ItemTree, TestItem, TopLevelItem},
    lints::allow_comment_edit,
    records::{
        Leaf, RecordField, field_offset, generic_record, leaves, record_fields, size_params, width,
    },
    scope::{FileScope, ScopeItem, file_scope, record_types, top_level_def},
    ty::{
        BindStep, Dim, DimExpr, FnTy, Linear, Ratio, RecordTy, Shape, SizeError, SizeExpr, SizeOp,
        SizeVar, Ty, binding_plan, shapes_proven_equal,
    },
};

/// Every definition of a file: the top level first, then functions, then tests, then record
/// types (`struct`).
pub fn all_defs(db: &dyn Db, file: SourceFile) -> Vec<DefId> {
    defs_query(db, file).clone()
}

/// The definitions of a file, as a query: its value survives edits that keep the number of
/// functions and tests, so what iterates over the definitions does not re-run.
#[salsa::tracked(returns(ref))]
fn defs_query(db: &dyn Db, file: SourceFile) -> Vec<DefId> {
    let tree = db::item_tree(db, file);
    let mut defs = vec![DefId::new(db, file, DefKind::TopLevel, 0)];
    defs.extend(
        (0..tree.functions.len()).map(|i| DefId::new(db, file, DefKind::Function, i as u32)),
    );
    defs.extend((0..tree.tests.len()).map(|i| DefId::new(db, file, DefKind::Test, i as u32)));
    defs.extend((0..tree.structs.len()).map(|i| DefId::new(db, file, DefKind::Struct, i as u32)));
    defs
}

/// A readable name: `f` for a function, `test "name"`, or `<top level>`.
pub fn def_name(db: &dyn Db, def: DefId) -> String {
    let tree = db::item_tree(db, def.file(db));
    let index = def.index(db) as usize;
    match def.kind(db) {
        DefKind::Function => {
            tree.functions.get(index).map(|f| f.name.to_string()).unwrap_or_default()
        }
        DefKind::Test => {
            format!("test {:?}", tree.tests.get(index).map(|t| t.name.as_str()).unwrap_or_default())
        }
        DefKind::TopLevel => "<top level>".to_owned(),
        DefKind::Struct => tree.structs.get(index).map(|s| s.name.to_string()).unwrap_or_default(),
    }
}

/// The items of a file (functions, tests, imports, top-level statements) with their syntax and
/// offsets.
pub fn item_tree(db: &dyn Db, file: SourceFile) -> &Arc<ItemTree> {
    db::item_tree(db, file)
}

/// The HIR of a definition.
pub fn body(db: &dyn Db, def: DefId) -> &Body {
    &body::body_query(db, def).body
}

/// The signature of a function (empty for tests and the top level).
pub fn signature(db: &dyn Db, def: DefId) -> &Signature {
    body::signature_query(db, def)
}

/// The inference result of a definition.
pub fn infer(db: &dyn Db, def: DefId) -> &InferenceResult {
    infer::infer(db, def)
}

/// The definition whose text contains `offset`, preferring functions and tests over the top
/// level, and the chunk and relative offset inside it.
pub fn def_at(db: &dyn Db, file: SourceFile, offset: TextSize) -> Option<(DefId, u32, TextSize)> {
    let tree = db::item_tree(db, file);
    let contains = |start: TextSize, len: TextSize| offset >= start && offset <= start + len;
    for (i, f) in tree.functions.iter().enumerate() {
        if contains(f.offset, f.node.text_len()) {
            return Some((DefId::new(db, file, DefKind::Function, i as u32), 0, offset - f.offset));
        }
    }
    for (i, t) in tree.tests.iter().enumerate() {
        if contains(t.offset, t.node.text_len()) {
            return Some((DefId::new(db, file, DefKind::Test, i as u32), 0, offset - t.offset));
        }
    }
    for (i, s) in tree.structs.iter().enumerate() {
        if contains(s.offset, s.node.text_len()) {
            return Some((DefId::new(db, file, DefKind::Struct, i as u32), 0, offset - s.offset));
        }
    }
    for (i, s) in tree.top_level.iter().enumerate() {
        if contains(s.offset, s.node.text_len()) {
            return Some((DefId::new(db, file, DefKind::TopLevel, 0), i as u32, offset - s.offset));
        }
    }
    None
}

/// The innermost expression at `offset` and its definition, for hovers.
pub fn expr_at(db: &dyn Db, file: SourceFile, offset: TextSize) -> Option<(DefId, ExprId)> {
    expr_covering(db, file, TextRange::empty(offset))
}

/// The innermost expression whose text covers `range` (exactly, for the range of an expression's
/// syntax node) and its definition.
pub fn expr_covering(db: &dyn Db, file: SourceFile, range: TextRange) -> Option<(DefId, ExprId)> {
    let (def, chunk, relative) = def_at(db, file, range.start())?;
    let span = RelSpan { chunk, range: TextRange::at(relative, range.len()) };
    Some((def, body(db, def).source_map.expr_at(span)?))
}

/// The functions of a file that some definition of it differentiates, directly (with a
/// transform or `gradcheck`) or by being called from a differentiated function.
#[salsa::tracked(returns(ref))]
pub fn differentiated_functions(db: &dyn Db, file: SourceFile) -> Arc<FxHashSet<DefId>> {
    let defs = defs_query(db, file);
    let mut set: FxHashSet<DefId> = FxHashSet::default();
    let mut stack: Vec<DefId> = Vec::new();
    for &def in defs {
        stack.extend(infer::infer(db, def).differentiated.iter().copied());
    }
    while let Some(def) = stack.pop() {
        if def.file(db) != file || !set.insert(def) {
            continue;
        }
        stack.extend(infer::infer(db, def).callees.iter().copied());
    }
    Arc::new(set)
}

/// Every diagnostic of a file, sorted by position: syntax errors, item problems, and the
/// problems of each definition.
#[salsa::tracked(returns(ref))]
pub fn file_diagnostics(db: &dyn Db, file: SourceFile) -> Vec<Diagnostic> {
    let parse = parse(db, file);
    let mut out: Vec<Diagnostic> = Vec::new();
    let mut syntax_points: Vec<TextSize> = Vec::new();
    for error in parse.errors() {
        syntax_points.push(error.range.start());
        out.push(syntax_diagnostic(file, error));
    }
    // Sorted, so that whether one lies inside a range is a binary search: a file of stray bytes
    // has tens of thousands of syntax errors.
    syntax_points.sort_unstable();
    out.extend(scope::item_diagnostics(db, file).iter().cloned());
    let lint = lints::lint_file(db, file);
    for def in all_defs(db, file) {
        let lowered = body::body_query(db, def);
        let warnings = match lint {
            true => lints::def_lints(db, def).as_slice(),
            false => &[],
        };
        let semantic = lowered
            .body
            .diagnostics
            .iter()
            .chain(infer::infer(db, def).diagnostics.iter())
            .chain(warnings.iter());
        for diagnostic in semantic {
            let diagnostic = diagnostic.to_file_diagnostic(db);
            // A construct with a syntax error inside it was reported once already.
            let after_start = syntax_points.partition_point(|p| *p <= diagnostic.range.start());
            let inside =
                syntax_points.get(after_start).is_some_and(|p| *p < diagnostic.range.end());
            if diagnostic.file == file && inside {
                continue;
            }
            out.push(diagnostic);
        }
    }
    if out.iter().any(|d| d.severity == Severity::Warning) {
        let text = file.text(db);
        let index = syntax::LineIndex::new(text);
        let allowed = lints::Allowed::of(&parse.syntax_node(), &index);
        out.retain(|d| {
            d.severity != Severity::Warning
                || d.file != file
                || !allowed.allows(d.code, d.range.start(), &index)
        });
    }
    out.sort_by_key(|d| (d.range.start(), d.range.end(), d.code));
    out.dedup();
    out
}

/// A syntax error as a diagnostic: its code from its kind, its fix-it as edits of the file.
fn syntax_diagnostic(file: SourceFile, error: &syntax::SyntaxError) -> Diagnostic {
    let code = match error.kind {
        syntax::SyntaxErrorKind::Syntax => Code::Syntax,
        syntax::SyntaxErrorKind::Missing => Code::MissingToken,
        syntax::SyntaxErrorKind::MisspeltKeyword => Code::MisspeltKeyword,
        syntax::SyntaxErrorKind::ForeignSyntax => Code::ForeignSyntax,
    };
    let edit = |range: TextRange, insert: &str| TextEdit { file, range, insert: insert.to_owned() };
    let mut fixes = Vec::new();
    if let Some(text) = error.missing {
        let at = TextRange::empty(error.range.start());
        fixes.push(Fix { label: format!("insert `{text}`"), edits: vec![edit(at, text)] });
    }
    if let Some(fix) = &error.fix {
        let edits = fix.edits.iter().map(|(range, text)| edit(*range, text)).collect();
        fixes.push(Fix { label: fix.label.clone(), edits });
    }
    Diagnostic {
        code,
        severity: code.severity(),
        message: error.message.clone(),
        file,
        range: error.range,
        labels: Vec::new(),
        help: error.help.clone(),
        fixes,
    }
}

/// Where the name that `resolution` (found in `def`) resolves to is declared: a local's or
/// global's declaration, or a function's name, possibly in an imported file. Built-ins have no
/// declaration in the source.
pub fn declaration(db: &dyn Db, def: DefId, resolution: Resolution) -> Option<HirSpan> {
    let local = |def, local| HirSpan { def, span: body(db, def).source_map.local(local) };
    match resolution {
        Resolution::Local(id) => Some(local(def, id)),
        Resolution::Global { def, local: id } => Some(local(def, id)),
        Resolution::Function(function) => {
            signature(db, function).name_span.map(|span| HirSpan { def: function, span })
        }
        Resolution::Builtin(_) => None,
    }
}

/// What a name in scope at an offset is, for completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeName {
    Local(DefId, LocalId),
    Item(ScopeItem),
    Builtin(Builtin),
}

/// The names that can be used at `offset`: locals in scope (the innermost of each name), then
/// the file's functions and the globals its definition may read, then the built-ins.
pub fn names_in_scope(db: &dyn Db, file: SourceFile, offset: TextSize) -> Vec<(String, ScopeName)> {
    let mut out: Vec<(String, ScopeName)> = Vec::new();
    let mut seen = FxHashSet::default();
    // Between top-level items, the position is just after the last top-level chunk before it.
    let at = def_at(db, file, offset).or_else(|| {
        let before = db::item_tree(db, file).top_level.iter().filter(|s| s.offset < offset).count();
        let chunk = u32::try_from(before).ok()?.checked_sub(1)?;
        Some((DefId::new(db, file, DefKind::TopLevel, 0), chunk, TextSize::from(u32::MAX)))
    });
    if let Some((def, chunk, relative)) = at {
        let body = body(db, def);
        let position = ScopeEnd { chunk, offset: relative };
        let mut locals: Vec<_> = body
            .locals
            .iter()
            .filter(|(local, _)| body.source_map.is_visible(*local, position))
            .collect();
        // Inner declarations shadow outer ones.
        locals.sort_by_key(|(local, data)| {
            (std::cmp::Reverse(data.scope_depth), std::cmp::Reverse(local.into_raw().into_u32()))
        });
        for (local, data) in locals {
            if seen.insert(data.name.clone()) {
                out.push((data.name.to_string(), ScopeName::Local(def, local)));
            }
        }
    }
    let in_function = at.is_some_and(|(def, _, _)| def.kind(db) != DefKind::TopLevel);
    let mut items: Vec<_> = file_scope(db, file).items.iter().collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    for (name, item) in items {
        let visible = match item {
            ScopeItem::Function(_) => true,
            ScopeItem::Global { is_cns, .. } => in_function && *is_cns,
        };
        if visible && seen.insert(name.clone()) {
            out.push((name.to_string(), ScopeName::Item(*item)));
        }
    }
    for info in BUILTINS {
        if seen.insert(info.name.into()) {
            out.push((info.name.to_owned(), ScopeName::Builtin(info.builtin)));
        }
    }
    out
}
