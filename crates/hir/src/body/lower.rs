//! Lowering the AST of one definition into its [`Body`], resolving lexical scopes on the way.
//!
//! Every child of every node may be missing in a broken tree; each one becomes
//! [`Expr::Missing`] or is skipped, never a panic. Long chains such as `1 + 1 + ... + 1` nest
//! deeply, so the recursive walk grows its stack on demand.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};
use smol_str::SmolStr;
use syntax::{AstNode, SyntaxNode, TextRange, TextSize, ast};

use super::*;
use crate::{
    DefKind,
    builtins::Builtin,
    db::{Db, DefSource, def_source, item_tree},
    diagnostics::{Code, HirDiagnostic},
    literal::{parse_float, parse_int, unquote},
    ty::{Dim, SizeError, SizeExpr, SizeOp, SizeVar, binding_plan},
};

/// How much stack recursion may use before a new segment is allocated, and how big one is.
pub(crate) const STACK_RED_ZONE: usize = 128 * 1024;
pub(crate) const STACK_SEGMENT: usize = 2 * 1024 * 1024;

/// A function's signature, as callers see it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Signature {
    pub name: SmolStr,
    pub params: Vec<ParamSig>,
    pub ret: TypeRef,
    /// The return type's syntax.
    pub ret_span: Option<RelSpan>,
    /// Shape variables bound by the parameters, in order of first appearance.
    pub shape_vars: Vec<SmolStr>,
    pub name_span: Option<RelSpan>,
    /// The function named by a `derivative` clause, as written, and where.
    pub derivative: Option<(SmolStr, RelSpan)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamSig {
    pub name: SmolStr,
    pub qualifier: Option<Qualifier>,
    pub ty: TypeRef,
    /// The whole parameter.
    pub span: RelSpan,
}

/// Values of the file's top-level `cns int` constants that are constant expressions: what
/// dimensions in function signatures may name.
#[salsa::tracked(returns(ref))]
pub fn const_ints(db: &dyn Db, file: crate::SourceFile) -> Arc<FxHashMap<SmolStr, i64>> {
    let mut values = FxHashMap::default();
    for item in &item_tree(db, file).top_level {
        let node = SyntaxNode::new_root(item.node.clone());
        let Some(decl) = ast::VarDecl::cast(node) else { continue };
        let is_cns_int = qualifier_of(decl.qualifier()) == Some(Qualifier::Cns)
            && matches!(decl.ty(), Some(ast::Type::PrimType(p)) if p.kind() == Some(ast::PrimTypeKind::Int));
        if !is_cns_int {
            continue;
        }
        for declarator in decl.declarators() {
            let Some(name) = declarator.name() else { continue };
            let value = declarator
                .initializer()
                .and_then(|init| init.expr())
                .and_then(|expr| const_eval(&expr, &|n| values.get(n).copied()));
            if let Some(value) = value {
                values.entry(SmolStr::new(name.text())).or_insert(value);
            }
        }
    }
    Arc::new(values)
}

/// The signature of a function definition (empty for tests and the top level).
#[salsa::tracked(returns(ref))]
pub fn signature_query(db: &dyn Db, def: DefId) -> Arc<Signature> {
    Arc::new(body_query(db, def).signature.clone())
}

/// The lowered body of a definition, with its signature when it is a function.
#[salsa::tracked(returns(ref))]
pub fn body_query(db: &dyn Db, def: DefId) -> Arc<LoweredBody> {
    let source: &DefSource = def_source(db, def);
    let globals = const_ints(db, def.file(db)).clone();
    let mut lowerer = Lowerer::new(db, def, globals);
    lowerer.written = written_names(source);
    match def.kind(db) {
        DefKind::Function => {
            if let Some(node) = source.chunks.first()
                && let Some(fn_def) = ast::FnDef::cast(SyntaxNode::new_root(node.clone()))
            {
                lowerer.lower_fn(&fn_def);
            }
        }
        DefKind::Test => {
            if let Some(node) = source.chunks.first()
                && let Some(test) = ast::TestDef::cast(SyntaxNode::new_root(node.clone()))
                && let Some(block) = test.block()
            {
                lowerer.scope_ends[0] =
                    ScopeEnd { chunk: 0, offset: test.syntax().text_range().end() };
                let root = lowerer.lower_items(block.items());
                lowerer.body.root = root;
            }
        }
        DefKind::Struct => {
            if let Some(node) = source.chunks.first()
                && let Some(def) = ast::StructDef::cast(SyntaxNode::new_root(node.clone()))
            {
                lowerer.lower_struct(&def);
            }
        }
        DefKind::TopLevel => {
            let mut root = Vec::new();
            for (i, node) in source.chunks.iter().enumerate() {
                lowerer.chunk = i as u32;
                let node = SyntaxNode::new_root(node.clone());
                if let Some(stmt) = ast::Stmt::cast(node) {
                    root.extend(lowerer.lower_stmt(&stmt));
                }
            }
            lowerer.body.root = root;
        }
    }
    Arc::new(LoweredBody {
        body: lowerer.body,
        signature: lowerer.signature,
        close_brace: lowerer.close_brace,
    })
}

/// A body with the signature lowered alongside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoweredBody {
    pub body: Body,
    /// The signature, kept apart so that callers do not depend on the body.
    pub signature: Signature,
    /// The closing brace of a function's body, where a missing `return` is reported.
    pub close_brace: Option<RelSpan>,
}

struct Lowerer<'db> {
    db: &'db dyn Db,
    def: DefId,
    body: Body,
    signature: Signature,
    close_brace: Option<RelSpan>,
    scopes: Vec<FxHashMap<SmolStr, LocalId>>,
    /// Where each open scope ends, for the visibility of its locals.
    scope_ends: Vec<ScopeEnd>,
    chunk: u32,
    globals: Arc<FxHashMap<SmolStr, i64>>,
    loop_depth: u32,
    /// Every name the definition assigns or increments anywhere: an `int` with such a name is
    /// read once, when a declaration that uses it as a size runs.
    written: FxHashSet<SmolStr>,
    /// The sizes the declaration being lowered evaluates when it runs.
    runtime_sizes: Vec<(LocalId, ExprId)>,
    /// The name of the parameter or field being lowered: the hidden size variables of a record
    /// type written without sizes are named after it (`l.n`).
    declaring: SmolStr,
}

/// One variable a declaration or a destructuring declaration declares (see
/// [`Lowerer::declare`]).
struct Declared {
    qualifier: Option<Qualifier>,
    qualifier_syntax: Option<ast::Qualifier>,
    ty: Option<ast::Type>,
    name: Option<ast::Name>,
    dims: Vec<ast::Dim>,
    has_init: bool,
    /// The initializer's syntax, for the value of a `cns int`.
    init_expr: Option<ast::Expr>,
    span: RelSpan,
    /// Whether a misused qualifier is still to be reported (once per declaration).
    report_qualifier: bool,
}

/// How the walk treats a name in a dimension that nothing binds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum FreeDims {
    /// A parameter: the name becomes a shape variable of the function.
    BindShapeVar,
    /// A return type: the name is a shape variable the parameters may or may not bind.
    Allow,
    /// A declaration with an initializer: the name is bound to the initializer's extent.
    BindFromInit,
    /// A declaration without an initializer: an error.
    Declare,
    /// A cast or `sizeof`: an error.
    Reject,
}

impl FreeDims {
    /// Whether a size may use `int` values that are not constants: a declaration evaluates them
    /// when it runs. `sizeof(Tensor[n])` may name an `int` that never changes.
    fn runtime_sizes(self) -> RuntimeSizes {
        match self {
            FreeDims::BindShapeVar | FreeDims::Allow => RuntimeSizes::No,
            FreeDims::Reject => RuntimeSizes::Fixed,
            FreeDims::BindFromInit | FreeDims::Declare => RuntimeSizes::Evaluated,
        }
    }
}

/// What a size may use besides constants and shape variables.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RuntimeSizes {
    No,
    /// `int` variables that are never written.
    Fixed,
    /// Any `int` expression, evaluated by the declaration.
    Evaluated,
}

impl<'db> Lowerer<'db> {
    fn new(db: &'db dyn Db, def: DefId, globals: Arc<FxHashMap<SmolStr, i64>>) -> Lowerer<'db> {
        Lowerer {
            db,
            def,
            body: Body::default(),
            signature: Signature::default(),
            close_brace: None,
            scopes: vec![FxHashMap::default()],
            scope_ends: vec![ScopeEnd { chunk: u32::MAX, offset: 0.into() }],
            chunk: 0,
            globals,
            loop_depth: 0,
            written: FxHashSet::default(),
            runtime_sizes: Vec::new(),
            declaring: SmolStr::default(),
        }
    }

    fn span(&self, node: &SyntaxNode) -> RelSpan {
        RelSpan { chunk: self.chunk, range: node.text_range() }
    }

    fn range_span(&self, range: TextRange) -> RelSpan {
        RelSpan { chunk: self.chunk, range }
    }

    fn hir_span(&self, span: RelSpan) -> HirSpan {
        HirSpan { def: self.def, span }
    }

    fn error(&mut self, code: Code, span: RelSpan, message: String) -> &mut HirDiagnostic {
        let diagnostic = HirDiagnostic::new(code, self.hir_span(span), message);
        self.body.diagnostics.push(diagnostic);
        let last = self.body.diagnostics.len() - 1;
        &mut self.body.diagnostics[last]
    }

    fn alloc_expr(&mut self, expr: Expr, span: RelSpan) -> ExprId {
        let id = self.body.exprs.alloc(expr);
        self.body.source_map.expr_spans.push(span);
        id
    }

    fn alloc_stmt(&mut self, stmt: Stmt, span: RelSpan) -> StmtId {
        let id = self.body.stmts.alloc(stmt);
        self.body.source_map.stmt_spans.push(span);
        id
    }

    fn alloc_local(&mut self, local: Local, span: RelSpan) -> LocalId {
        let id = self.body.locals.alloc(local);
        self.body.source_map.local_spans.push(span);
        let end = self
            .scope_ends
            .last()
            .copied()
            .unwrap_or(ScopeEnd { chunk: u32::MAX, offset: 0.into() });
        self.body.source_map.local_visibility.push(Visibility {
            start: ScopeEnd { chunk: span.chunk, offset: span.range.end() },
            end,
        });
        id
    }

    fn lookup(&self, name: &str) -> Option<LocalId> {
        self.scopes.iter().rev().find_map(|scope| scope.get(name).copied())
    }

    fn depth(&self) -> u32 {
        (self.scopes.len() - 1) as u32
    }

    /// Binds `name` in the innermost scope, or reports the redeclaration and keeps the first.
    fn bind(&mut self, name: &SmolStr, local: LocalId) {
        if name.is_empty() {
            return;
        }
        let previous = self.scopes.last().and_then(|scope| scope.get(name).copied());
        match previous {
            Some(previous) => {
                let span = self.body.source_map.local(local);
                let previous_span = self.hir_span(self.body.source_map.local(previous));
                let previous_kind = self.body.locals[previous].kind;
                let is_struct = self.def.kind(self.db) == DefKind::Struct;
                let what = match previous_kind {
                    LocalKind::Param if is_struct => "a field",
                    LocalKind::Param => "a parameter",
                    LocalKind::ShapeVar => "a shape variable",
                    LocalKind::Variable => "a variable",
                };
                self.error(
                    Code::Redeclaration,
                    span,
                    format!("`{name}` is already declared in this scope, as {what}"),
                )
                .label(previous_span, format!("`{name}` first declared here"))
                .help("rename one of them; an inner block `{ ... }` may shadow an outer name");
            }
            None => {
                if let Some(scope) = self.scopes.last_mut() {
                    scope.insert(name.clone(), local);
                }
            }
        }
    }

    /// Opens a scope that ends at `end` (relative to the current chunk).
    fn push_scope(&mut self, end: TextSize) {
        self.scopes.push(FxHashMap::default());
        self.scope_ends.push(ScopeEnd { chunk: self.chunk, offset: end });
    }

    fn pop_scope(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
            self.scope_ends.pop();
        }
    }

    // ----- definitions -----

    fn lower_fn(&mut self, fn_def: &ast::FnDef) {
        self.scope_ends[0] = ScopeEnd { chunk: 0, offset: fn_def.syntax().text_range().end() };
        self.signature.name =
            fn_def.name().map(|name| SmolStr::new(name.text())).unwrap_or_default();
        self.signature.name_span = fn_def.name().map(|name| self.span(name.syntax()));
        self.close_brace = fn_def
            .block()
            .and_then(|block| block.r_curly_token())
            .map(|brace| self.range_span(brace.text_range()));
        for param in fn_def.param_list().into_iter().flat_map(|list| list.params()) {
            self.lower_param(&param);
        }
        let dims = self.param_dims();
        self.check_determined(&dims, &|_| true, "the parameters' extents");
        if let Some(ret) = fn_def.ret_type() {
            self.signature.ret_span = Some(self.span(ret.syntax()));
            self.signature.ret = match (ret.ty(), ret.tuple_type()) {
                (Some(ty), _) => self.lower_type(&ty, Vec::new(), FreeDims::Allow),
                (None, Some(tuple)) => {
                    let elements = tuple
                        .types()
                        .map(|ty| self.lower_type(&ty, Vec::new(), FreeDims::Allow))
                        .collect();
                    TypeRef::Tuple(elements)
                }
                (None, None) => TypeRef::Error,
            };
        }
        self.signature.derivative = fn_def
            .derivative_clause()
            .and_then(|clause| clause.name_ref())
            .map(|name| (SmolStr::new(name.text()), self.span(name.syntax())));
        if let Some(block) = fn_def.block() {
            let root = self.lower_items(block.items());
            self.body.root = root;
        }
    }

    /// The extents and record sizes of the parameters (or fields), which bind the shape
    /// variables.
    fn param_dims(&self) -> Vec<Dim> {
        self.body
            .params
            .iter()
            .flat_map(|&p| match &self.body.locals[p].ty {
                TypeRef::Tensor(dims) => dims.clone(),
                TypeRef::Record(record) => record.sizes.clone(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// `struct Linear { Tensor w[n][m]; Tensor b[m]; }`: each field as a parameter, whose
    /// extents bind the record's size parameters.
    fn lower_struct(&mut self, def: &ast::StructDef) {
        self.scope_ends[0] = ScopeEnd { chunk: 0, offset: def.syntax().text_range().end() };
        self.signature.name = def.name().map(|name| SmolStr::new(name.text())).unwrap_or_default();
        self.signature.name_span = def.name().map(|name| self.span(name.syntax()));
        let mut fields = 0;
        for field in def.field_defs() {
            fields += 1;
            let name = field.name().map(|n| SmolStr::new(n.text())).unwrap_or_default();
            let span = self.span(field.syntax());
            let name_span = field.name().map_or(span, |n| self.span(n.syntax()));
            self.declaring = name.clone();
            let ty = match field.ty() {
                Some(ty) => self.lower_type(&ty, field.dims().collect(), FreeDims::BindShapeVar),
                None => TypeRef::Error,
            };
            if ty == TypeRef::Void {
                self.error(Code::VoidValue, span, format!("field `{name}` cannot have type void"));
            }
            self.declare_param(ParamSig { name, qualifier: None, ty, span }, name_span);
        }
        if fields == 0 && def.name().is_some() {
            let span = self.span(def.syntax());
            let name = self.signature.name.clone();
            self.error(Code::RecordDefinition, span, format!("the record type `{name}` has no fields"))
                .help("declare its fields in the braces, as in `struct Linear { Tensor w[n][m]; Tensor b[m]; }`");
        }
        let dims = self.param_dims();
        self.check_determined(&dims, &|_| true, "the fields' extents");
    }

    /// The record type `name` names, if any: a `struct` of this file or of one it imports.
    fn record_type(&self, name: &str) -> Option<DefId> {
        crate::scope::record_types(self.db, self.def.file(self.db)).get(name).copied()
    }

    fn lower_param(&mut self, param: &ast::Param) {
        let name = param.name().map(|n| SmolStr::new(n.text())).unwrap_or_default();
        let qualifier = qualifier_of(param.qualifier());
        let span = self.span(param.syntax());
        let name_span = param.name().map_or(span, |n| self.span(n.syntax()));
        let dims: Vec<ast::Dim> = param.dims().collect();
        self.declaring = name.clone();
        let ty = match param.ty() {
            Some(ty) => self.lower_type(&ty, dims, FreeDims::BindShapeVar),
            None => TypeRef::Error,
        };
        self.check_qualified_type(qualifier, &ty, &param.qualifier(), span, true);
        if ty == TypeRef::Void {
            self.error(Code::VoidValue, span, format!("parameter `{name}` cannot have type void"));
        }
        self.declare_param(ParamSig { name, qualifier, ty, span }, name_span);
    }

    /// A parameter of a function, or a field of a `struct` (whose fields are its parameters):
    /// its local, bound to its name, and its place in the signature.
    fn declare_param(&mut self, param: ParamSig, name_span: RelSpan) {
        let local = self.alloc_local(
            Local {
                name: param.name.clone(),
                qualifier: param.qualifier,
                ty: param.ty.clone(),
                kind: LocalKind::Param,
                const_value: None,
                scope_depth: 0,
                bound_by: None,
            },
            name_span,
        );
        self.bind(&param.name, local);
        self.body.params.push(local);
        self.signature.params.push(param);
    }

    /// `var` only on differentiable types; `cns` needs an initializer (checked by the caller).
    fn check_qualified_type(
        &mut self,
        qualifier: Option<Qualifier>,
        ty: &TypeRef,
        syntax: &Option<ast::Qualifier>,
        fallback: RelSpan,
        _is_param: bool,
    ) {
        if qualifier != Some(Qualifier::Var) {
            return;
        }
        let what = match ty {
            TypeRef::Int => "int",
            TypeRef::Char => "char",
            TypeRef::Bool => "bool",
            TypeRef::Void => "void",
            _ => return,
        };
        let span = syntax.as_ref().map_or(fallback, |q| self.span(q.syntax()));
        self.error(
            Code::VarNotDifferentiable,
            span,
            format!("`var` cannot qualify `{what}`: {what} values are not differentiable"),
        )
        .help("`var` marks a leaf of the computational graph; use it on `float` or `Tensor`");
    }

    /// The items of a block, in the current scope.
    fn lower_items(&mut self, items: impl Iterator<Item = ast::Item>) -> Vec<StmtId> {
        let mut stmts = Vec::new();
        for item in items {
            // Functions, tests and imports inside a block were reported by the parser.
            if let ast::Item::Stmt(stmt) = item {
                stmts.extend(self.lower_stmt(&stmt));
            }
        }
        stmts
    }

    fn lower_block(&mut self, block: Option<ast::Block>) -> Vec<StmtId> {
        let end = block.as_ref().map_or(0.into(), |b| b.syntax().text_range().end());
        self.push_scope(end);
        let stmts = match block {
            Some(block) => self.lower_items(block.items()),
            None => Vec::new(),
        };
        self.pop_scope();
        stmts
    }

    // ----- statements -----

    fn lower_stmt(&mut self, stmt: &ast::Stmt) -> Vec<StmtId> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.lower_stmt_inner(stmt))
    }

    fn lower_stmt_inner(&mut self, stmt: &ast::Stmt) -> Vec<StmtId> {
        let span = self.span(stmt.syntax());
        let lowered = match stmt {
            ast::Stmt::VarDecl(decl) => return self.lower_decl(decl),
            ast::Stmt::ExprStmt(expr_stmt) => match expr_stmt.expr() {
                Some(expr) => match self.try_lower_index_stmt(&expr) {
                    Some(index) => Stmt::Index(index),
                    None => Stmt::Expr(self.lower_expr(&expr)),
                },
                None => return Vec::new(),
            },
            ast::Stmt::Block(block) => Stmt::Block(self.lower_block(Some(block.clone()))),
            ast::Stmt::IfStmt(if_stmt) => {
                let mut branches = Vec::new();
                let cond = self.lower_condition(if_stmt.condition(), span);
                let body = self.lower_block(if_stmt.block());
                branches.push(IfBranch { cond, body });
                for elif in if_stmt.elif_branches() {
                    let elif_span = self.span(elif.syntax());
                    let cond = self.lower_condition(elif.condition(), elif_span);
                    let body = self.lower_block(elif.block());
                    branches.push(IfBranch { cond, body });
                }
                let else_branch =
                    if_stmt.else_branch().map(|branch| self.lower_block(branch.block()));
                Stmt::If { branches, else_branch }
            }
            ast::Stmt::LoopStmt(loop_stmt) => {
                self.push_scope(loop_stmt.syntax().text_range().end());
                let init = match loop_stmt.loop_init() {
                    Some(init) => match (init.decl(), init.expr()) {
                        (Some(decl), _) => self.lower_decl(&decl),
                        (None, Some(expr)) => {
                            let init_span = self.span(expr.syntax());
                            let expr = self.lower_expr(&expr);
                            vec![self.alloc_stmt(Stmt::Expr(expr), init_span)]
                        }
                        (None, None) => Vec::new(),
                    },
                    None => Vec::new(),
                };
                let cond =
                    loop_stmt.loop_cond().and_then(|c| c.expr()).map(|e| self.lower_expr(&e));
                let step =
                    loop_stmt.loop_step().and_then(|s| s.expr()).map(|e| self.lower_expr(&e));
                self.loop_depth += 1;
                let body = self.lower_block(loop_stmt.block());
                self.loop_depth -= 1;
                self.pop_scope();
                Stmt::Loop { init, cond, step, body }
            }
            ast::Stmt::BreakStmt(_) | ast::Stmt::ContinueStmt(_) => {
                let is_break = matches!(stmt, ast::Stmt::BreakStmt(_));
                if self.loop_depth == 0 {
                    let keyword = if is_break { "break" } else { "continue" };
                    self.error(
                        Code::BreakOutsideLoop,
                        span,
                        format!("`{keyword}` outside of a loop"),
                    )
                    .help(format!("`{keyword}` may only appear inside the body of a `loop`"));
                }
                if is_break { Stmt::Break } else { Stmt::Continue }
            }
            ast::Stmt::ReturnStmt(ret) => Stmt::Return(ret.expr().map(|e| self.lower_expr(&e))),
            ast::Stmt::TupleDecl(decl) => self.lower_tuple_decl(decl, span),
        };
        vec![self.alloc_stmt(lowered, span)]
    }

    fn lower_condition(&mut self, cond: Option<ast::Condition>, fallback: RelSpan) -> ExprId {
        match cond.and_then(|c| c.expr()) {
            Some(expr) => self.lower_expr(&expr),
            None => self.alloc_expr(Expr::Missing, fallback),
        }
    }

    fn lower_decl(&mut self, decl: &ast::VarDecl) -> Vec<StmtId> {
        let qualifier = qualifier_of(decl.qualifier());
        let mut stmts = Vec::new();
        let mut reported_qualifier = false;
        for declarator in decl.declarators() {
            let span = self.span(declarator.syntax());
            let init_expr = declarator.initializer().and_then(|init| init.expr());
            // The initializer is in the scope before the name: `int x = x;` reads an outer `x`.
            let init = init_expr.as_ref().map(|e| self.lower_expr(e));
            let local = self.declare(Declared {
                qualifier,
                qualifier_syntax: decl.qualifier(),
                ty: decl.ty(),
                name: declarator.name(),
                dims: declarator.dims().collect(),
                has_init: declarator.initializer().is_some(),
                init_expr,
                span,
                report_qualifier: !reported_qualifier,
            });
            reported_qualifier |= local.1;
            stmts.push(self.alloc_stmt(Stmt::Decl { local: local.0, init }, span));
        }
        stmts
    }

    /// `(float loss, Tensor p[k][2]) = step(x);`: the initializer first, then each binding as a
    /// declaration initialised by its element.
    fn lower_tuple_decl(&mut self, decl: &ast::TupleDecl, span: RelSpan) -> Stmt {
        let init = match decl.initializer().and_then(|init| init.expr()) {
            Some(expr) => self.lower_expr(&expr),
            None => self.alloc_expr(Expr::Missing, span),
        };
        let mut locals = Vec::new();
        for binding in decl.tuple_bindings() {
            let binding_span = self.span(binding.syntax());
            let (local, _) = self.declare(Declared {
                qualifier: qualifier_of(binding.qualifier()),
                qualifier_syntax: binding.qualifier(),
                ty: binding.ty(),
                name: binding.name(),
                dims: binding.dims().collect(),
                has_init: true,
                init_expr: None,
                span: binding_span,
                report_qualifier: true,
            });
            locals.push(local);
        }
        Stmt::TupleDecl { locals, init }
    }

    /// Declares one variable after its initializer was lowered: its type (binding the shape
    /// variables its initializer determines), qualifier checks and scope. Returns the local and
    /// whether a misused qualifier was reported.
    fn declare(&mut self, declared: Declared) -> (LocalId, bool) {
        let Declared {
            qualifier,
            qualifier_syntax,
            ty,
            name,
            dims,
            has_init,
            init_expr,
            span,
            report_qualifier,
        } = declared;
        let name_span = name.as_ref().map_or(span, |n| self.span(n.syntax()));
        let name = name.map(|n| SmolStr::new(n.text())).unwrap_or_default();
        let free = if has_init { FreeDims::BindFromInit } else { FreeDims::Declare };
        let (ty, fresh) = match ty {
            Some(ty) => self.lower_decl_type(&ty, dims, free),
            None => (TypeRef::Error, Vec::new()),
        };
        let mut reported_qualifier = false;
        if report_qualifier {
            let errors = self.body.diagnostics.len();
            self.check_qualified_type(qualifier, &ty, &qualifier_syntax, span, false);
            reported_qualifier = self.body.diagnostics.len() > errors;
        }
        if ty == TypeRef::Void {
            self.error(
                Code::VoidValue,
                name_span,
                format!("variable `{name}` cannot have type void"),
            );
        }
        if qualifier == Some(Qualifier::Cns) && !has_init {
            let insert_at = self.hir_span(self.range_span(TextRange::empty(span.range.end())));
            self.error(
                Code::CnsWithoutInit,
                name_span,
                format!("constant `{name}` must be initialised"),
            )
            .help(format!("give it a value: `{name} = ...`"))
            .fix_insert("add an initializer", insert_at, " = 0");
        }
        let const_value = match (&ty, qualifier, &init_expr) {
            (TypeRef::Int, Some(Qualifier::Cns), Some(expr)) => {
                const_eval(expr, &|n| self.const_of(n))
            }
            _ => None,
        };
        let local = self.alloc_local(
            Local {
                name: name.clone(),
                qualifier,
                ty,
                kind: LocalKind::Variable,
                const_value,
                scope_depth: self.depth(),
                bound_by: None,
            },
            name_span,
        );
        self.bind(&name, local);
        for (var, expr) in std::mem::take(&mut self.runtime_sizes) {
            // Like the shape variables its initializer binds, a size a `cns` declaration
            // evaluates is a constant that functions and importers may read.
            self.body.locals[var].qualifier = qualifier.filter(|&q| q == Qualifier::Cns);
            self.body.runtime_sizes.push(RuntimeSize { decl: local, var, expr });
        }
        let fresh_dims = match &self.body.locals[local].ty {
            TypeRef::Tensor(dims) => Some(dims.clone()),
            TypeRef::Record(record) => Some(record.sizes.clone()),
            _ => None,
        };
        if !fresh.is_empty()
            && let Some(dims) = fresh_dims
        {
            let def = self.def;
            let is_fresh = |var: &SizeVar| var.def == def && fresh.contains(&var.local);
            self.check_determined(&dims, &is_fresh, "the initializer's extents");
        }
        // The shape variables the initializer binds are named after the declaration's name.
        for var in fresh {
            let data = &mut self.body.locals[var];
            data.bound_by = Some(local);
            // Read-only either way (its kind says so), but only a `cns` declaration makes it
            // a constant that functions, tests and importers may read.
            data.qualifier = qualifier.filter(|&q| q == Qualifier::Cns);
            let var_name = data.name.clone();
            self.bind(&var_name, var);
        }
        (local, reported_qualifier)
    }

    fn const_of(&self, name: &str) -> Option<i64> {
        match self.lookup(name) {
            Some(local) => self.body.locals[local].const_value,
            None => self.globals.get(name).copied(),
        }
    }

    // ----- types -----

    fn lower_type(&mut self, ty: &ast::Type, extra: Vec<ast::Dim>, free: FreeDims) -> TypeRef {
        self.lower_decl_type(ty, extra, free).0
    }

    /// A type and the shape variables its dimensions bind fresh (for a declaration to bind after
    /// its name; their locals exist already, so the dimensions can name them). Parameters bind
    /// theirs at once.
    fn lower_decl_type(
        &mut self,
        ty: &ast::Type,
        extra: Vec<ast::Dim>,
        free: FreeDims,
    ) -> (TypeRef, Vec<LocalId>) {
        let mut fresh = Vec::new();
        let ty = match ty {
            ast::Type::PrimType(prim) => {
                let lowered = match prim.kind() {
                    Some(ast::PrimTypeKind::Int) => TypeRef::Int,
                    Some(ast::PrimTypeKind::Float) => TypeRef::Float,
                    Some(ast::PrimTypeKind::Char) => TypeRef::Char,
                    Some(ast::PrimTypeKind::Bool) => TypeRef::Bool,
                    Some(ast::PrimTypeKind::Void) => TypeRef::Void,
                    None => TypeRef::Error,
                };
                if let Some(first) = extra.first() {
                    let span = self.span(first.syntax());
                    self.error(
                        Code::InvalidDimension,
                        span,
                        "only tensors have dimensions".to_owned(),
                    )
                    .help("declare it as `Tensor` to give it a shape");
                }
                lowered
            }
            ast::Type::RecordType(record) => {
                self.lower_record_type(record, extra, free, &mut fresh)
            }
            ast::Type::TensorType(tensor) => {
                let mut dims = Vec::new();
                for dim in tensor.dims().chain(extra) {
                    dims.push(self.lower_dim(&dim, free, &mut fresh));
                }
                TypeRef::Tensor(dims)
            }
        };
        (ty, fresh)
    }

    /// `Linear[n][m]` (or `Linear l[n][m]`, the sizes after the name, as `extra`): the `struct`
    /// and a size for each of its size parameters.
    fn lower_record_type(
        &mut self,
        record: &ast::RecordType,
        extra: Vec<ast::Dim>,
        free: FreeDims,
        fresh: &mut Vec<LocalId>,
    ) -> TypeRef {
        let Some(name_ref) = record.name_ref() else { return TypeRef::Error };
        let name = SmolStr::new(name_ref.text());
        let name_span = self.span(name_ref.syntax());
        let Some(def) = self.record_type(&name) else {
            let candidates: Vec<(SmolStr, &'static str)> = {
                let types = crate::scope::record_types(self.db, self.def.file(self.db));
                let mut names: Vec<SmolStr> = types.keys().cloned().collect();
                names.sort();
                names.into_iter().map(|n| (n, "record type")).collect()
            };
            let hir_span = self.hir_span(name_span);
            let diagnostic =
                self.error(Code::UnknownType, name_span, format!("cannot find the type `{name}`"));
            if !crate::suggest::did_you_mean_owned(diagnostic, &name, hir_span, &candidates) {
                diagnostic.help(
                    "a type is `int`, `float`, `char`, `bool`, `Tensor`, or a record type declared with `struct`",
                );
            }
            return TypeRef::Error;
        };
        self.body.source_map.record_uses.push((name_span, def));
        if self.def.kind(self.db) == DefKind::Struct
            && crate::records::struct_reaches(self.db, def, self.def)
        {
            let own = self.signature.name.clone();
            let span = self.span(record.syntax());
            let message = match def == self.def {
                true => format!("the record type `{own}` contains itself"),
                false => format!("the record type `{own}` contains itself through `{name}`"),
            };
            self.error(Code::RecordDefinition, span, message)
                .help("a record has a fixed number of leaves; a record cannot contain a record of its own type");
            return TypeRef::Error;
        }
        let params = crate::records::size_params(self.db, def);
        let dims: Vec<ast::Dim> = record.dims().chain(extra).collect();
        let mut inferred = false;
        let sizes = if dims.is_empty() && !params.is_empty() {
            match free {
                // A parameter or field: hidden shape variables that the argument binds.
                FreeDims::BindShapeVar => params
                    .iter()
                    .map(|param| {
                        let hidden = SmolStr::new(format!("{}.{}", self.declaring, param.name));
                        let local = self.alloc_local(
                            Local {
                                name: hidden.clone(),
                                qualifier: Some(Qualifier::Cns),
                                ty: TypeRef::Int,
                                kind: LocalKind::ShapeVar,
                                const_value: None,
                                scope_depth: self.depth(),
                                bound_by: None,
                            },
                            name_span,
                        );
                        self.signature.shape_vars.push(hidden);
                        Dim::var(self.size_var(local))
                    })
                    .collect(),
                FreeDims::Allow => vec![Dim::Unknown; params.len()],
                FreeDims::BindFromInit => {
                    inferred = true;
                    vec![Dim::Unknown; params.len()]
                }
                FreeDims::Declare | FreeDims::Reject => {
                    let span = self.span(record.syntax());
                    let names: Vec<String> =
                        params.iter().map(|p| format!("[{}]", p.name)).collect();
                    self.error(
                        Code::RecordSizes,
                        span,
                        format!("the sizes of `{name}` are not known here"),
                    )
                    .help(format!(
                        "write them, as in `{name}{}`, or give the variable an initializer",
                        names.join("")
                    ));
                    return TypeRef::Error;
                }
            }
        } else {
            if dims.len() != params.len() {
                let span = self.span(record.syntax());
                let names: Vec<String> = params.iter().map(|p| format!("`{}`", p.name)).collect();
                let diagnostic = self.error(
                    Code::RecordSizes,
                    span,
                    format!(
                        "`{name}` has {} size{}{}, but {} {} given",
                        params.len(),
                        if params.len() == 1 { "" } else { "s" },
                        if names.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", names.join(", "))
                        },
                        dims.len(),
                        if dims.len() == 1 { "is" } else { "are" },
                    ),
                );
                diagnostic.help(
                    "a record type takes one size for each size parameter of its `struct`, in the order they first appear in its fields",
                );
                return TypeRef::Error;
            }
            dims.iter().map(|dim| self.lower_dim(dim, free, fresh)).collect()
        };
        TypeRef::Record(RecordRef { def, name, sizes, inferred })
    }

    /// One bracketed dimension: a size expression over literals, `cns int` constants and shape
    /// variables, resolved to this body's locals (an unknown dimension after an error).
    fn lower_dim(&mut self, dim: &ast::Dim, free: FreeDims, fresh: &mut Vec<LocalId>) -> Dim {
        let span = self.span(dim.syntax());
        let Some(expr) = dim.expr() else {
            if dim.r_brack_token().is_some() {
                self.error(
                    Code::InvalidDimension,
                    span,
                    "empty dimension `[]` in a declaration".to_owned(),
                )
                .help("write the extent, as in `[3]`, or leave the brackets out for rank 0");
            }
            return Dim::Unknown;
        };
        let Some(size) = self.lower_size(&expr, free, fresh) else { return Dim::Unknown };
        match Dim::from_expr(size) {
            Ok(dim) => dim,
            Err(error) => {
                let text = expr.syntax().text().to_string();
                let (message, help) = match error {
                    SizeError::Negative(value) => {
                        (format!("a dimension cannot be negative ({value})"), None)
                    }
                    SizeError::Inexact { dividend, divisor } => (
                        format!(
                            "the dimension `{text}` is not a whole number: {dividend} / {divisor} leaves a remainder"
                        ),
                        None,
                    ),
                    SizeError::NonConstantDivisor => (
                        format!("the dimension `{text}` divides by a size that is not a constant"),
                        Some(
                            "a size may be divided only by a constant; compute the quotient into an `int` variable first",
                        ),
                    ),
                    SizeError::DivisionByZero => {
                        (format!("the dimension `{text}` divides by zero"), None)
                    }
                    SizeError::Overflow | SizeError::Unbound => {
                        (format!("the dimension `{text}` does not fit in a 64-bit int"), None)
                    }
                };
                let diagnostic = self.error(Code::InvalidDimension, span, message);
                if let Some(help) = help {
                    diagnostic.help(help);
                }
                Dim::Unknown
            }
        }
    }

    /// A size expression as written, with names resolved; `None` after reporting what is not
    /// one.
    fn lower_size(
        &mut self,
        expr: &ast::Expr,
        free: FreeDims,
        fresh: &mut Vec<LocalId>,
    ) -> Option<SizeExpr<SizeVar>> {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || {
            self.lower_size_inner(expr, free, fresh)
        })
    }

    fn lower_size_inner(
        &mut self,
        expr: &ast::Expr,
        free: FreeDims,
        fresh: &mut Vec<LocalId>,
    ) -> Option<SizeExpr<SizeVar>> {
        let expr_span = self.span(expr.syntax());
        let not_a_size = |this: &mut Lowerer<'db>, expr: &ast::Expr| {
            if free.runtime_sizes() == RuntimeSizes::Evaluated {
                return this.runtime_size(expr);
            }
            this.error(
                Code::InvalidDimension,
                expr_span,
                "a dimension must be an integer expression of literals, `cns int` constants and shape variables under `+ - * / %`".to_owned(),
            )
            .help("a declaration's dimensions may also use any `int` value, which it reads when it runs");
            None
        };
        match expr {
            ast::Expr::Literal(literal) => match (literal.kind(), literal.token()) {
                (Some(ast::LiteralKind::Int), Some(token)) => match parse_int(token.text()) {
                    Some(value) => Some(SizeExpr::Const(value)),
                    None => {
                        self.error(
                            Code::LiteralOutOfRange,
                            expr_span,
                            format!(
                                "integer literal `{}` does not fit in a 64-bit int",
                                token.text()
                            ),
                        );
                        None
                    }
                },
                _ => not_a_size(self, expr),
            },
            ast::Expr::ParenExpr(paren) => self.lower_size(&paren.expr()?, free, fresh),
            ast::Expr::PrefixExpr(prefix) => {
                let operand = self.lower_size(&prefix.expr()?, free, fresh)?;
                match prefix.op_kind()? {
                    ast::PrefixOp::Neg => Some(SizeExpr::Neg(Box::new(operand))),
                    ast::PrefixOp::Plus => Some(operand),
                    _ => not_a_size(self, expr),
                }
            }
            ast::Expr::BinExpr(bin) => {
                let op = match bin.op_kind()? {
                    ast::BinaryOp::Arith(ArithOp::Add) => SizeOp::Add,
                    ast::BinaryOp::Arith(ArithOp::Sub) => SizeOp::Sub,
                    ast::BinaryOp::Arith(ArithOp::Mul) => SizeOp::Mul,
                    ast::BinaryOp::Arith(ArithOp::Div) => SizeOp::Div,
                    ast::BinaryOp::Arith(ArithOp::Rem) => SizeOp::Rem,
                    _ => return not_a_size(self, expr),
                };
                let lhs = self.lower_size(&bin.lhs()?, free, fresh);
                let rhs = self.lower_size(&bin.rhs()?, free, fresh);
                Some(SizeExpr::binary(op, lhs?, rhs?))
            }
            ast::Expr::PathExpr(path) => {
                let name_ref = path.name_ref()?;
                let name = SmolStr::new(name_ref.text());
                self.lower_size_name(expr, name, expr_span, free, fresh)
            }
            _ => not_a_size(self, expr),
        }
    }

    /// A name in a dimension: a shape variable or constant in scope, a top-level constant, or,
    /// where `free` allows, a new shape variable.
    fn lower_size_name(
        &mut self,
        expr: &ast::Expr,
        name: SmolStr,
        span: RelSpan,
        free: FreeDims,
        fresh: &mut Vec<LocalId>,
    ) -> Option<SizeExpr<SizeVar>> {
        let fresh_local = fresh.iter().copied().find(|&l| self.body.locals[l].name == name);
        if let Some(local) = self.lookup(&name).or(fresh_local) {
            let data = &self.body.locals[local];
            let is_int = data.ty == TypeRef::Int;
            return match (data.kind, data.const_value, free.runtime_sizes()) {
                (LocalKind::ShapeVar, _, _) => {
                    self.body.source_map.size_uses.push((span, self.def, local));
                    Some(SizeExpr::Var(self.size_var(local)))
                }
                (_, Some(value), _) => {
                    self.body.source_map.size_uses.push((span, self.def, local));
                    Some(SizeExpr::Const(value))
                }
                // An `int` that never changes is a size of its own, read where it is used.
                (_, None, RuntimeSizes::Fixed | RuntimeSizes::Evaluated)
                    if is_int && !self.written.contains(&name) =>
                {
                    self.body.source_map.size_uses.push((span, self.def, local));
                    Some(SizeExpr::Var(self.size_var(local)))
                }
                (_, None, RuntimeSizes::Evaluated) => self.runtime_size(expr),
                (_, None, runtime) => {
                    let (what, help) = match runtime {
                        RuntimeSizes::No => (
                            "a parameter's or return type's dimension must be an integer literal, a `cns int` or a shape variable",
                            format!(
                                "name a new shape variable, such as `[m]`, and compare it with `{name}` in the body"
                            ),
                        ),
                        _ => (
                            "a dimension here must be an integer literal, a `cns int`, a shape variable or an `int` that never changes",
                            format!("declare it as `cns int {name} = ...;`"),
                        ),
                    };
                    self.error(
                        Code::InvalidDimension,
                        span,
                        format!("`{name}` is not a constant: {what}"),
                    )
                    .help(help);
                    None
                }
            };
        }
        if let Some(value) = self.global_constant(&name, span) {
            return Some(SizeExpr::Const(value));
        }
        let new_var = |this: &mut Lowerer<'db>, qualifier| {
            this.alloc_local(
                Local {
                    name: name.clone(),
                    qualifier,
                    ty: TypeRef::Int,
                    kind: LocalKind::ShapeVar,
                    const_value: None,
                    scope_depth: this.depth(),
                    bound_by: None,
                },
                span,
            )
        };
        match free {
            FreeDims::BindShapeVar => {
                let local = new_var(self, Some(Qualifier::Cns));
                self.bind(&name, local);
                self.signature.shape_vars.push(name.clone());
                Some(SizeExpr::Var(self.size_var(local)))
            }
            FreeDims::Allow | FreeDims::BindFromInit => {
                let local = new_var(self, None);
                fresh.push(local);
                Some(SizeExpr::Var(self.size_var(local)))
            }
            FreeDims::Declare | FreeDims::Reject => {
                let candidates = self.dimension_names();
                let hir_span = self.hir_span(span);
                let diagnostic = self.error(
                    Code::UnknownDimension,
                    span,
                    format!("cannot find `{name}` for this dimension"),
                );
                if !crate::suggest::did_you_mean_owned(diagnostic, &name, hir_span, &candidates) {
                    diagnostic.help(format!(
                        "a new shape variable such as `{name}` can only be bound by a parameter or by a declaration with an initializer"
                    ));
                }
                None
            }
        }
    }

    /// The names a dimension may use here: shape variables and `cns int` constants in scope, for
    /// "did you mean".
    fn dimension_names(&self) -> Vec<(SmolStr, &'static str)> {
        let mut out: Vec<(SmolStr, &'static str)> = Vec::new();
        for scope in self.scopes.iter().rev() {
            let mut names: Vec<_> = scope.iter().collect();
            names.sort_by(|a, b| a.0.cmp(b.0));
            for (name, &local) in names {
                let data = &self.body.locals[local];
                match (data.kind, data.const_value) {
                    (LocalKind::ShapeVar, _) => out.push((name.clone(), "shape variable")),
                    (_, Some(_)) => out.push((name.clone(), "constant")),
                    _ => {}
                }
            }
        }
        let mut globals: Vec<_> = self.globals.keys().cloned().collect();
        globals.sort();
        out.extend(globals.into_iter().map(|name| (name, "constant")));
        out
    }

    /// Reports the shape variables that `dims` are to bind but do not determine (`m` in
    /// `Tensor x[n*m]`).
    fn check_determined(&mut self, dims: &[Dim], fresh: &dyn Fn(&SizeVar) -> bool, by: &str) {
        let (_, undetermined) = binding_plan(dims, fresh);
        for var in undetermined {
            let span = self.body.source_map.local(var.local);
            let written: Vec<String> =
                dims.iter().filter(|d| d.vars().contains(&var)).map(|d| format!("`{d}`")).collect();
            let name = &var.name;
            self.error(
                Code::UndeterminedSize,
                span,
                format!(
                    "shape variable `{name}` is not determined by {by}: it occurs only in {}",
                    written.join(", ")
                ),
            )
            .help(format!(
                "an extent determines a variable when it is the only unbound one in it and occurs linearly, as in `[{name}]` or `[2*{name} + 1]`; give `{name}` an extent of its own"
            ));
        }
    }

    /// A size the declaration evaluates when it runs: an `int` expression, held in a local of
    /// its own (unnamed, so nothing can name it) and named by its text.
    fn runtime_size(&mut self, expr: &ast::Expr) -> Option<SizeExpr<SizeVar>> {
        let span = self.span(expr.syntax());
        let text: String =
            expr.syntax().text().to_string().split_whitespace().collect::<Vec<_>>().join(" ");
        let value = self.lower_expr(expr);
        let id = self.body.locals.alloc(Local {
            name: SmolStr::default(),
            qualifier: None,
            ty: TypeRef::Int,
            kind: LocalKind::ShapeVar,
            const_value: None,
            scope_depth: self.depth(),
            bound_by: None,
        });
        self.body.source_map.local_spans.push(span);
        let never = ScopeEnd { chunk: span.chunk, offset: span.range.start() };
        self.body.source_map.local_visibility.push(Visibility { start: never, end: never });
        self.runtime_sizes.push((id, value));
        Some(SizeExpr::Var(SizeVar { def: self.def, local: id, name: SmolStr::new(text) }))
    }

    /// The value of a top-level `cns int` named in a dimension, recording the use: the file's
    /// own constants for its top level, the file scope's (imports included) elsewhere.
    fn global_constant(&mut self, name: &SmolStr, span: RelSpan) -> Option<i64> {
        // A `struct` reads its own file's constants only: the file scope depends on the top
        // level, whose types depend on the `struct`.
        if matches!(self.def.kind(self.db), DefKind::TopLevel | DefKind::Struct) {
            return self.globals.get(name).copied();
        }
        let scope = crate::scope::file_scope(self.db, self.def.file(self.db));
        let Some(crate::scope::ScopeItem::Global { def, local, is_cns: true }) = scope.get(name)
        else {
            return None;
        };
        let value = body_query(self.db, def).body.locals[local].const_value?;
        self.body.source_map.size_uses.push((span, def, local));
        Some(value)
    }

    fn size_var(&self, local: LocalId) -> SizeVar {
        SizeVar { def: self.def, local, name: self.body.locals[local].name.clone() }
    }

    /// A type inside an expression (a cast or `sizeof`): no new shape variables.
    fn lower_expr_type(&mut self, ty: Option<ast::Type>) -> TypeRef {
        match ty {
            Some(ty) => self.lower_type(&ty, Vec::new(), FreeDims::Reject),
            None => TypeRef::Error,
        }
    }

    // ----- expressions -----

    fn lower_opt_expr(&mut self, expr: Option<ast::Expr>, fallback: &SyntaxNode) -> ExprId {
        match expr {
            Some(expr) => self.lower_expr(&expr),
            None => {
                let span = self.range_span(TextRange::empty(fallback.text_range().end()));
                self.alloc_expr(Expr::Missing, span)
            }
        }
    }

    fn lower_expr(&mut self, expr: &ast::Expr) -> ExprId {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || self.lower_expr_inner(expr))
    }

    fn lower_expr_inner(&mut self, expr: &ast::Expr) -> ExprId {
        let node = expr.syntax();
        let span = self.span(node);
        let lowered = match expr {
            ast::Expr::Literal(literal) => self.lower_literal(literal, span),
            ast::Expr::PathExpr(path) => {
                let name = path.name_ref().map(|n| SmolStr::new(n.text())).unwrap_or_default();
                let local = self.lookup(&name);
                Expr::Name { name, local }
            }
            ast::Expr::ParenExpr(paren) => {
                return match paren.expr() {
                    Some(inner) => self.lower_expr(&inner),
                    None => self.alloc_expr(Expr::Missing, span),
                };
            }
            ast::Expr::TensorLit(lit) => {
                Expr::TensorLit(lit.exprs().map(|e| self.lower_expr(&e)).collect())
            }
            ast::Expr::RecordLit(lit) => {
                let name = lit.name_ref().map(|n| SmolStr::new(n.text())).unwrap_or_default();
                let def = match lit.name_ref() {
                    Some(name_ref) => {
                        let name_span = self.span(name_ref.syntax());
                        let def = self.record_type(&name);
                        match def {
                            Some(def) => self.body.source_map.record_uses.push((name_span, def)),
                            None => {
                                let types =
                                    crate::scope::record_types(self.db, self.def.file(self.db));
                                let mut names: Vec<SmolStr> = types.keys().cloned().collect();
                                names.sort();
                                let candidates: Vec<(SmolStr, &'static str)> =
                                    names.into_iter().map(|n| (n, "record type")).collect();
                                let hir_span = self.hir_span(name_span);
                                let diagnostic = self.error(
                                    Code::UnknownType,
                                    name_span,
                                    format!("cannot find the record type `{name}`"),
                                );
                                if !crate::suggest::did_you_mean_owned(
                                    diagnostic,
                                    &name,
                                    hir_span,
                                    &candidates,
                                ) {
                                    diagnostic.help(
                                        "a record literal names a type declared with `struct`",
                                    );
                                }
                            }
                        }
                        def
                    }
                    None => None,
                };
                let fields = lit
                    .record_fields()
                    .map(|field| {
                        let name =
                            field.name_ref().map(|n| SmolStr::new(n.text())).unwrap_or_default();
                        let span = field
                            .name_ref()
                            .map_or_else(|| self.span(field.syntax()), |n| self.span(n.syntax()));
                        let value = self.lower_opt_expr(field.expr(), field.syntax());
                        FieldInit { name, span, value }
                    })
                    .collect();
                Expr::RecordLit { def, name, fields }
            }
            ast::Expr::FieldExpr(field) => {
                let base = self.lower_opt_expr(field.expr(), node);
                let name = field.name_ref().map(|n| SmolStr::new(n.text())).unwrap_or_default();
                let span = field.name_ref().map_or(span, |n| self.span(n.syntax()));
                Expr::Field { base, name, span }
            }
            ast::Expr::TupleExpr(tuple) => {
                Expr::Tuple(tuple.exprs().map(|e| self.lower_expr(&e)).collect())
            }
            ast::Expr::CallExpr(call) => return self.lower_call(call, span),
            ast::Expr::IndexExpr(index) => {
                let base = self.lower_opt_expr(index.base(), node);
                let entries = index
                    .entries()
                    .map(|entry| match entry {
                        ast::IndexEntry::At(expr) => IndexEntry::At(self.lower_expr(&expr)),
                        ast::IndexEntry::Slice(slice) => IndexEntry::Slice {
                            start: slice.start().map(|e| self.lower_expr(&e)),
                            end: slice.end().map(|e| self.lower_expr(&e)),
                            step: slice.step().map(|e| self.lower_expr(&e)),
                        },
                        ast::IndexEntry::Ellipsis(_) => IndexEntry::Ellipsis,
                        ast::IndexEntry::NewAxis(_) => IndexEntry::NewAxis,
                    })
                    .collect();
                Expr::Index { base, entries }
            }
            ast::Expr::PrefixExpr(prefix) => {
                let operand = self.lower_opt_expr(prefix.expr(), node);
                match prefix.op_kind() {
                    Some(ast::PrefixOp::Neg) => Expr::Unary { op: UnaryOp::Neg, operand },
                    Some(ast::PrefixOp::Plus) => Expr::Unary { op: UnaryOp::Plus, operand },
                    Some(ast::PrefixOp::Not) => Expr::Unary { op: UnaryOp::Not, operand },
                    Some(ast::PrefixOp::PreInc) => {
                        Expr::IncDec { target: operand, increment: true, prefix: true }
                    }
                    Some(ast::PrefixOp::PreDec) => {
                        Expr::IncDec { target: operand, increment: false, prefix: true }
                    }
                    Some(ast::PrefixOp::BitNot) => {
                        Expr::Unary { op: UnaryOp::Rejected(RejectedOp::BitNot), operand }
                    }
                    Some(ast::PrefixOp::AddressOf) => {
                        Expr::Unary { op: UnaryOp::Rejected(RejectedOp::AddressOf), operand }
                    }
                    Some(ast::PrefixOp::Deref) => {
                        Expr::Unary { op: UnaryOp::Rejected(RejectedOp::Deref), operand }
                    }
                    Some(ast::PrefixOp::At) => {
                        Expr::Unary { op: UnaryOp::Rejected(RejectedOp::At), operand }
                    }
                    None => Expr::Missing,
                }
            }
            ast::Expr::PostfixExpr(postfix) => {
                let target = self.lower_opt_expr(postfix.expr(), node);
                Expr::IncDec { target, increment: postfix.is_increment(), prefix: false }
            }
            ast::Expr::CastExpr(cast) => {
                let ty = self.lower_expr_type(cast.ty());
                let operand = self.lower_opt_expr(cast.expr(), node);
                Expr::Cast { ty, operand }
            }
            ast::Expr::SizeofExpr(sizeof) => match (sizeof.sizeof_type(), sizeof.expr()) {
                (Some(ty), _) => Expr::SizeofType(self.lower_expr_type(ty.ty())),
                (None, Some(inner)) => Expr::SizeofExpr(self.lower_expr(&inner)),
                (None, None) => Expr::Missing,
            },
            ast::Expr::BinExpr(bin) => {
                let lhs = self.lower_opt_expr(bin.lhs(), node);
                let rhs = self.lower_opt_expr(bin.rhs(), node);
                match bin.op_kind() {
                    Some(ast::BinaryOp::Arith(op)) => {
                        Expr::Binary { op: BinaryOp::Arith(op), lhs, rhs }
                    }
                    Some(ast::BinaryOp::Cmp(op)) => {
                        Expr::Binary { op: BinaryOp::Cmp(op), lhs, rhs }
                    }
                    Some(ast::BinaryOp::Logic(op)) => {
                        Expr::Binary { op: BinaryOp::Logic(op), lhs, rhs }
                    }
                    Some(ast::BinaryOp::Assign(op)) => Expr::Assign { op, target: lhs, value: rhs },
                    None => Expr::Missing,
                }
            }
            ast::Expr::TernaryExpr(ternary) => {
                let cond = self.lower_opt_expr(ternary.cond(), node);
                let then_branch = self.lower_opt_expr(ternary.then_branch(), node);
                let else_branch = self.lower_opt_expr(ternary.else_branch(), node);
                Expr::Ternary { cond, then_branch, else_branch }
            }
        };
        self.alloc_expr(lowered, span)
    }

    fn lower_literal(&mut self, literal: &ast::Literal, span: RelSpan) -> Expr {
        let Some(token) = literal.token() else { return Expr::Missing };
        let text = token.text();
        match literal.kind() {
            Some(ast::LiteralKind::Int) => match parse_int(text) {
                Some(value) => Expr::Literal(Literal::Int(value)),
                None => {
                    if text.chars().all(|c| c.is_ascii_digit()) {
                        self.error(
                            Code::LiteralOutOfRange,
                            span,
                            format!("integer literal `{text}` does not fit in a 64-bit int"),
                        )
                        .help("write it as a float, such as `1e20`, if you need a large value");
                    }
                    Expr::Missing
                }
            },
            Some(ast::LiteralKind::Float) => Expr::Literal(Literal::float(parse_float(text))),
            Some(ast::LiteralKind::Char) => {
                let value = unquote(text);
                let mut chars = value.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) if c.is_ascii() => Expr::Literal(Literal::Char(c as u8)),
                    // Empty, multi-character and non-ASCII literals were reported by the lexer.
                    _ => Expr::Missing,
                }
            }
            Some(ast::LiteralKind::String) => {
                Expr::Literal(Literal::String(SmolStr::new(unquote(text))))
            }
            Some(ast::LiteralKind::Bool(value)) => Expr::Literal(Literal::Bool(value)),
            None => Expr::Missing,
        }
    }

    fn lower_call(&mut self, call: &ast::CallExpr, span: RelSpan) -> ExprId {
        if let Some(transform) = self.try_lower_transform(call, span) {
            return transform;
        }
        let callee = self.lower_opt_expr(call.callee(), call.syntax());
        let args = call.args().map(|arg| self.lower_expr(&arg)).collect();
        self.alloc_expr(Expr::Call { callee, args }, span)
    }

    /// `grad(f)`, `grad(f, 1)`, `jvp(grad(f))`...: a transform name no local shadows, applied to
    /// a name no local binds (so not `grad(x)` on a variable) or to another transform.
    fn try_lower_transform(&mut self, call: &ast::CallExpr, span: RelSpan) -> Option<ExprId> {
        let op = self.transform_op_of(call)?;
        let mut args = call.args();
        let func = args.next()?;
        let is_function = match &func {
            ast::Expr::PathExpr(path) => {
                let name = path.name_ref().map(|n| n.text()).unwrap_or_default();
                self.lookup(&name).is_none()
            }
            ast::Expr::CallExpr(inner) => self.transform_op_of(inner).is_some(),
            _ => false,
        };
        if !is_function {
            return None;
        }
        let func = self.lower_expr(&func);
        let wrt = args.next().map(|arg| self.lower_expr(&arg));
        if let Some(extra) = args.next() {
            let extra_span = self.span(extra.syntax());
            self.error(
                Code::ArgumentCount,
                extra_span,
                format!("`{}` takes a function and at most a parameter index", op.name()),
            )
            .help(format!("write `{}(f, k)(arguments...)`", op.name()));
        }
        Some(self.alloc_expr(Expr::Transform { op, func, wrt }, span))
    }

    fn transform_op_of(&self, call: &ast::CallExpr) -> Option<TransformOp> {
        let ast::Expr::PathExpr(path) = call.callee()? else { return None };
        let name = path.name_ref()?.text();
        if self.lookup(&name).is_some() {
            return None;
        }
        TransformOp::from_name(&name)
    }

    // ----- index statements -----

    /// `C(i,j) op rhs` where the left side is a name applied to bare names.
    fn try_lower_index_stmt(&mut self, expr: &ast::Expr) -> Option<IndexStmt> {
        let ast::Expr::BinExpr(bin) = expr else { return None };
        let Some(ast::BinaryOp::Assign(op)) = bin.op_kind() else { return None };
        let ast::Expr::CallExpr(lhs) = bin.lhs()? else { return None };
        let target = self.labelled_view(&lhs)?;
        let op = match op {
            None => IndexAssignOp::Assign,
            Some(ArithOp::Add) => IndexAssignOp::AddAssign,
            Some(ArithOp::Mul) => IndexAssignOp::MulAssign,
            Some(_) => {
                let op_span =
                    bin.op_token().map_or(target.span, |t| self.range_span(t.text_range()));
                let op_text = bin.op_token().map(|t| t.text().to_owned()).unwrap_or_default();
                self.error(
                    Code::IndexStmtForm,
                    op_span,
                    format!("index statements support `=`, `+=` and `*=`, not `{op_text}`"),
                )
                .help("to subtract, add a negated product: `C(i,j) += -1.0 * A(i,j);`");
                IndexAssignOp::Assign
            }
        };
        let mut factors = Vec::new();
        if let Some(rhs) = bin.rhs() {
            self.index_factors(&rhs, &mut factors);
        }
        Some(IndexStmt { target, op, factors })
    }

    fn labelled_view(&mut self, call: &ast::CallExpr) -> Option<IndexOperand> {
        let ast::Expr::PathExpr(path) = call.callee()? else { return None };
        let name = path.name_ref()?.text();
        let args: Vec<ast::Expr> = call.args().collect();
        if !args.iter().all(|arg| matches!(arg, ast::Expr::PathExpr(_))) {
            return None;
        }
        if Builtin::from_name(&name).is_some() && self.lookup(&name).is_none() {
            return None;
        }
        let tensor_span = self.span(path.syntax());
        let local = self.lookup(&name);
        let tensor = self.alloc_expr(Expr::Name { name: SmolStr::new(name), local }, tensor_span);
        let labels = args
            .iter()
            .map(|arg| {
                let text = match arg {
                    ast::Expr::PathExpr(p) => p.name_ref().map(|n| n.text()).unwrap_or_default(),
                    _ => String::new(),
                };
                IndexLabel { name: SmolStr::new(text), span: self.span(arg.syntax()) }
            })
            .collect();
        Some(IndexOperand { tensor, labels, span: self.span(call.syntax()) })
    }

    fn index_factors(&mut self, expr: &ast::Expr, out: &mut Vec<IndexFactor>) {
        stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || match expr {
            ast::Expr::BinExpr(bin)
                if bin.op_kind() == Some(ast::BinaryOp::Arith(ArithOp::Mul)) =>
            {
                if let Some(lhs) = bin.lhs() {
                    self.index_factors(&lhs, out);
                }
                if let Some(rhs) = bin.rhs() {
                    self.index_factors(&rhs, out);
                }
            }
            ast::Expr::ParenExpr(paren) => {
                if let Some(inner) = paren.expr() {
                    self.index_factors(&inner, out);
                }
            }
            ast::Expr::CallExpr(call) => match self.labelled_view(call) {
                Some(view) => out.push(IndexFactor::Tensor(view)),
                None => out.push(IndexFactor::Scalar(self.lower_scalar_factor(expr))),
            },
            _ => out.push(IndexFactor::Scalar(self.lower_scalar_factor(expr))),
        })
    }

    /// A scalar factor; labelled views nested inside it (`A(i,j) + B(i,j)`) are not a product.
    fn lower_scalar_factor(&mut self, expr: &ast::Expr) -> ExprId {
        let nested = expr.syntax().descendants().filter_map(ast::CallExpr::cast).find(|call| {
            matches!(call.callee(), Some(ast::Expr::PathExpr(p))
                if p.name_ref().is_some_and(|n| self.lookup(&n.text()).is_some()))
        });
        if let Some(call) = nested {
            let span = self.span(call.syntax());
            self.error(
                Code::IndexStmtForm,
                span,
                "the right side of an index statement must be a product of labelled tensors and scalars"
                    .to_owned(),
            )
            .help("split sums into several statements: `C(i,j) = A(i,j); C(i,j) += B(i,j);`");
            let span = self.span(expr.syntax());
            return self.alloc_expr(Expr::Missing, span);
        }
        self.lower_expr(expr)
    }
}

/// The value of an integer constant expression: literals, constants that `lookup` knows, and
/// arithmetic on them; `None` for anything else or on overflow.
pub(crate) fn const_eval(expr: &ast::Expr, lookup: &dyn Fn(&str) -> Option<i64>) -> Option<i64> {
    stacker::maybe_grow(STACK_RED_ZONE, STACK_SEGMENT, || match expr {
        ast::Expr::Literal(literal) => match literal.kind()? {
            ast::LiteralKind::Int => parse_int(literal.token()?.text()),
            _ => None,
        },
        ast::Expr::PathExpr(path) => lookup(&path.name_ref()?.text()),
        ast::Expr::ParenExpr(paren) => const_eval(&paren.expr()?, lookup),
        ast::Expr::PrefixExpr(prefix) => {
            let value = const_eval(&prefix.expr()?, lookup)?;
            match prefix.op_kind()? {
                ast::PrefixOp::Neg => value.checked_neg(),
                ast::PrefixOp::Plus => Some(value),
                _ => None,
            }
        }
        ast::Expr::BinExpr(bin) => {
            let lhs = const_eval(&bin.lhs()?, lookup)?;
            let rhs = const_eval(&bin.rhs()?, lookup)?;
            match bin.op_kind()? {
                ast::BinaryOp::Arith(op) => match op {
                    ArithOp::Add => lhs.checked_add(rhs),
                    ArithOp::Sub => lhs.checked_sub(rhs),
                    ArithOp::Mul => lhs.checked_mul(rhs),
                    ArithOp::Div => lhs.checked_div(rhs),
                    ArithOp::Rem => lhs.checked_rem(rhs),
                    ArithOp::Shl => u32::try_from(rhs).ok().and_then(|r| lhs.checked_shl(r)),
                    ArithOp::Shr => u32::try_from(rhs).ok().and_then(|r| lhs.checked_shr(r)),
                    ArithOp::BitAnd => Some(lhs & rhs),
                    ArithOp::BitXor => Some(lhs ^ rhs),
                    ArithOp::BitOr => Some(lhs | rhs),
                    ArithOp::MatMul => None,
                },
                _ => None,
            }
        }
        _ => None,
    })
}

/// The names a definition writes anywhere: targets of assignments, `++` and `--`.
fn written_names(source: &DefSource) -> FxHashSet<SmolStr> {
    let mut out = FxHashSet::default();
    for chunk in &source.chunks {
        for node in SyntaxNode::new_root(chunk.clone()).descendants() {
            let target = match_ast_target(&node);
            if let Some(ast::Expr::PathExpr(path)) = target
                && let Some(name) = path.name_ref()
            {
                out.insert(SmolStr::new(name.text()));
            }
        }
    }
    out
}

/// The operand an assignment, `++` or `--` writes, if `node` is one.
fn match_ast_target(node: &SyntaxNode) -> Option<ast::Expr> {
    if let Some(bin) = ast::BinExpr::cast(node.clone()) {
        return match bin.op_kind()? {
            ast::BinaryOp::Assign(_) => bin.lhs(),
            _ => None,
        };
    }
    if let Some(prefix) = ast::PrefixExpr::cast(node.clone()) {
        return match prefix.op_kind()? {
            ast::PrefixOp::PreInc | ast::PrefixOp::PreDec => prefix.expr(),
            _ => None,
        };
    }
    ast::PostfixExpr::cast(node.clone())?.expr()
}
