//! Inference: the type and shape of every expression and local of one body, the resolution of
//! every name that lowering left to the file scope, and the diagnostics of sections 2 to 6.
//!
//! Erroneous expressions get [`Ty::Error`], which every rule accepts silently, so one mistake
//! gives one diagnostic.

mod builtin;
pub(crate) mod call;
mod derivative;
mod einsum;
mod expr;
mod index_stmt;
mod library;
mod mask;
mod record;

use std::sync::Arc;

use la_arena::ArenaMap;
use smol_str::SmolStr;

use crate::{
    DefId, DefKind,
    body::{
        Body, Expr, ExprId, HirSpan, LocalId, LocalKind, Qualifier, RelSpan, Stmt, StmtId, TypeRef,
        body_query, lower::Signature,
    },
    builtins::Builtin,
    db::Db,
    diagnostics::{Code, HirDiagnostic, a},
    scope::{FileScope, ScopeItem, file_scope},
    ty::{Dim, SizeVar, Ty},
};

/// What a name in an expression refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resolution {
    /// A local of this body: a variable, a parameter or a shape variable (see
    /// [`crate::body::Local::kind`]).
    Local(LocalId),
    Function(DefId),
    /// A top-level variable of a file (in a function: a `cns` one), by its local in that file's
    /// top-level body.
    Global {
        def: DefId,
        local: LocalId,
    },
    Builtin(Builtin),
}

/// Everything inference learned about one body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InferenceResult {
    pub expr_types: ArenaMap<ExprId, Ty>,
    pub local_types: ArenaMap<LocalId, Ty>,
    pub resolutions: ArenaMap<ExprId, Resolution>,
    /// For each call of a function or a derivative, the callee's shape variables as bound there
    /// (in a call that lacks arguments, by the arguments it has).
    pub shape_bindings: Vec<(ExprId, Vec<(SizeVar, Dim)>)>,
    pub diagnostics: Vec<HirDiagnostic>,
    /// Functions this body calls directly.
    pub callees: Vec<DefId>,
    /// Functions this body differentiates with a transform or `gradcheck`.
    pub differentiated: Vec<DefId>,
    /// Conditions of branches that are an exact `==`/`!=` on a differentiable value.
    pub exact_equality_guards: Vec<ExprId>,
    /// For a function with a `derivative` clause, the function it names, when that function
    /// is a rule that fits (see `infer::derivative`).
    pub derivative: Option<DefId>,
    /// For each transform that differentiates (`grad(f)`, `grad(f, 2)`, `grad(f, [0, 2])`,
    /// `jvp(f)`, ...), the parameters it differentiates in, in order, as the checker read them.
    pub transform_params: ArenaMap<ExprId, Box<[usize]>>,
    /// The index entries that select by a mask (`t[x > 0]`, see `infer::mask`), in order.
    pub mask_entries: Vec<ExprId>,
    /// Every field name of a record literal or a field access that names a field: where, the
    /// `struct`, and the field's local in it.
    pub field_uses: Vec<(RelSpan, DefId, LocalId)>,
}

impl InferenceResult {
    pub fn type_of_expr(&self, expr: ExprId) -> &Ty {
        self.expr_types.get(expr).unwrap_or(&Ty::Error)
    }

    pub fn type_of_local(&self, local: LocalId) -> &Ty {
        self.local_types.get(local).unwrap_or(&Ty::Error)
    }

    pub fn resolution(&self, expr: ExprId) -> Option<Resolution> {
        self.resolutions.get(expr).copied()
    }

    /// The parameters the transform `expr` differentiates in (see
    /// [`InferenceResult::transform_params`]); empty for `checkpoint` and after an error.
    pub fn transform_params(&self, expr: ExprId) -> &[usize] {
        self.transform_params.get(expr).map_or(&[], |params| &params[..])
    }

    /// Whether the index entry `expr` selects by a mask rather than by a tensor of indices.
    pub fn is_mask_entry(&self, expr: ExprId) -> bool {
        self.mask_entries.contains(&expr)
    }
}

/// Infers one body.
#[salsa::tracked(returns(ref))]
pub fn infer(db: &dyn Db, def: DefId) -> Arc<InferenceResult> {
    let lowered = body_query(db, def);
    let scope = file_scope(db, def.file(db));
    let mut ctx = InferCtx {
        db,
        def,
        kind: def.kind(db),
        body: &lowered.body,
        signature: &lowered.signature,
        close_brace: lowered.close_brace,
        scope,
        result: InferenceResult::default(),
        ret_ty: None,
        unresolved: Default::default(),
        mask_locals: mask::mask_locals(&lowered.body),
    };
    ctx.infer_def();
    Arc::new(ctx.result)
}

pub(crate) struct InferCtx<'a> {
    db: &'a dyn Db,
    def: DefId,
    kind: DefKind,
    body: &'a Body,
    signature: &'a Signature,
    close_brace: Option<RelSpan>,
    scope: &'a FileScope,
    result: InferenceResult,
    ret_ty: Option<Ty>,
    /// Names already reported as unresolved: each is reported at its first use only.
    unresolved: rustc_hash::FxHashSet<SmolStr>,
    /// The locals that only ever hold masks (`infer::mask`).
    mask_locals: rustc_hash::FxHashSet<LocalId>,
}

/// A [`TypeRef`] as a [`Ty`].
pub fn ty_of_ref(ty: &TypeRef) -> Ty {
    match ty {
        TypeRef::Int => Ty::Int,
        TypeRef::Float => Ty::Float,
        TypeRef::Char => Ty::Char,
        TypeRef::Bool => Ty::Bool,
        TypeRef::Void => Ty::Void,
        TypeRef::Tensor(dims) => Ty::tensor(dims.clone()),
        TypeRef::Tuple(elements) => Ty::Tuple(elements.iter().map(ty_of_ref).collect()),
        TypeRef::Record(record) => Ty::Record(Arc::new(crate::ty::RecordTy {
            def: record.def,
            name: record.name.clone(),
            sizes: record.sizes.clone(),
        })),
        TypeRef::Error => Ty::Error,
    }
}

impl<'a> InferCtx<'a> {
    fn span(&self, span: RelSpan) -> HirSpan {
        HirSpan { def: self.def, span }
    }

    fn expr_span(&self, expr: ExprId) -> HirSpan {
        self.span(self.body.source_map.expr(expr))
    }

    fn stmt_span(&self, stmt: StmtId) -> HirSpan {
        self.span(self.body.source_map.stmt(stmt))
    }

    fn local_span(&self, local: LocalId) -> HirSpan {
        self.span(self.body.source_map.local(local))
    }

    fn report(&mut self, code: Code, span: HirSpan, message: String) -> &mut HirDiagnostic {
        self.result.diagnostics.push(HirDiagnostic::new(code, span, message));
        let last = self.result.diagnostics.len() - 1;
        &mut self.result.diagnostics[last]
    }

    fn infer_def(&mut self) {
        for &param in &self.body.params {
            let ty = ty_of_ref(&self.body.locals[param].ty);
            self.result.local_types.insert(param, ty);
        }
        for (local, data) in self.body.locals.iter() {
            if data.kind == LocalKind::ShapeVar {
                self.result.local_types.insert(local, Ty::Int);
            }
        }
        if self.kind == DefKind::Function {
            self.ret_ty = Some(ty_of_ref(&self.signature.ret));
            self.check_derivative_clause();
        }
        let root = self.body.root.clone();
        self.infer_stmts(&root);
        if let Some(ret) = self.ret_ty.clone()
            && ret != Ty::Void
            && !ret.is_error()
            && !stmts_diverge(self.body, &root)
        {
            let name = self.signature.name.clone();
            let span = self
                .close_brace
                .or(self.signature.name_span)
                .unwrap_or(RelSpan { chunk: 0, range: Default::default() });
            let ret_span = self.signature.ret_span.map(|span| HirSpan { def: self.def, span });
            let diagnostic = self.report(
                Code::MissingReturn,
                HirSpan { def: self.def, span },
                format!("function `{name}` returns {ret}, but not every path returns a value"),
            );
            diagnostic.help("end every path with `return <value>;`");
            if let Some(ret_span) = ret_span {
                diagnostic.label(ret_span, format!("`{name}` is declared to return {ret}"));
            }
        }
    }

    fn infer_stmts(&mut self, stmts: &[StmtId]) {
        for &stmt in stmts {
            self.infer_stmt(stmt);
        }
    }

    fn infer_stmt(&mut self, stmt: StmtId) {
        stacker::maybe_grow(
            crate::body::lower::STACK_RED_ZONE,
            crate::body::lower::STACK_SEGMENT,
            || self.infer_stmt_inner(stmt),
        )
    }

    fn infer_stmt_inner(&mut self, stmt: StmtId) {
        match &self.body.stmts[stmt] {
            Stmt::Decl { local, init } => self.infer_decl(*local, *init),
            Stmt::Expr(expr) => {
                // A string has no value to compute: it is only ever a built-in's argument.
                if self.infer_expr(*expr) == Ty::Str {
                    self.check_value(*expr, &Ty::Str);
                }
            }
            Stmt::Block(stmts) => self.infer_stmts(stmts),
            Stmt::If { branches, else_branch } => {
                for branch in branches {
                    self.infer_condition(branch.cond);
                    self.infer_stmts(&branch.body);
                }
                if let Some(stmts) = else_branch {
                    self.infer_stmts(stmts);
                }
            }
            Stmt::Loop { init, cond, step, body } => {
                self.infer_stmts(init);
                if let Some(cond) = cond {
                    self.infer_condition(*cond);
                }
                self.infer_stmts(body);
                if let Some(step) = step {
                    self.infer_expr(*step);
                }
            }
            Stmt::Break | Stmt::Continue => {}
            Stmt::Return(value) => self.infer_return(stmt, *value),
            Stmt::Index(index) => self.infer_index_stmt(index),
            Stmt::TupleDecl { locals, init } => self.infer_tuple_decl(stmt, locals, *init),
        }
    }

    fn infer_return(&mut self, stmt: StmtId, value: Option<ExprId>) {
        if let (Some(value), Some(Ty::Tuple(expected))) = (value, self.ret_ty.clone()) {
            self.infer_tuple_return(value, &expected);
            return;
        }
        let value_ty = value.map(|v| (v, self.infer_expr(v)));
        let Some(ret) = self.ret_ty.clone() else {
            if let Some((value, _)) = value_ty {
                let span = self.expr_span(value);
                self.report(
                    Code::ReturnMismatch,
                    span,
                    "only functions return values; this `return` is outside any function"
                        .to_owned(),
                )
                .help("write `return;` to stop early");
            }
            return;
        };
        let name = self.signature.name.clone();
        match (value_ty, &ret) {
            (None, Ty::Void | Ty::Error) => {}
            (Some((value, _)), Ty::Void) => {
                let span = self.expr_span(value);
                self.report(
                    Code::ReturnMismatch,
                    span,
                    format!("function `{name}` returns void, so `return` takes no value"),
                )
                .help("remove the value, or declare the function with a return type");
            }
            (None, ret) => {
                let span = self.stmt_span(stmt);
                self.report(
                    Code::ReturnMismatch,
                    span,
                    format!("function `{name}` returns {ret}, but this `return` has no value"),
                );
            }
            (Some((value, actual)), ret) => {
                let ret = ret.clone();
                self.check_coerce(value, &actual, &ret, Target::Return(name));
            }
        }
    }

    /// `return (a, b);` or `return g(x);` in a function of several results: as many values as
    /// the function declares, each converted to its element type.
    fn infer_tuple_return(&mut self, value: ExprId, expected: &[Ty]) {
        let name = self.signature.name.clone();
        let ret = Ty::Tuple(expected.to_vec());
        let elements: Vec<(ExprId, Ty)> = match &self.body.exprs[value] {
            Expr::Tuple(exprs) => {
                let exprs = exprs.clone();
                let tys = self.infer_tuple_elements(&exprs);
                self.result.expr_types.insert(value, Ty::Tuple(tys.clone()));
                exprs.into_iter().zip(tys).collect()
            }
            _ => match self.infer_expr(value) {
                Ty::Tuple(tys) => tys.into_iter().map(|ty| (value, ty)).collect(),
                Ty::Error => return,
                actual => {
                    if self.check_value(value, &actual) {
                        let span = self.expr_span(value);
                        self.report(
                            Code::ReturnMismatch,
                            span,
                            format!("`{name}` returns {ret}, but this value is {actual}"),
                        )
                        .help(format!("return {} values, as in `return (a, b);`", expected.len()));
                    }
                    return;
                }
            },
        };
        if elements.len() != expected.len() {
            let span = self.expr_span(value);
            self.report(
                Code::ReturnMismatch,
                span,
                format!(
                    "`{name}` returns {} values, {ret}, but this `return` gives {}",
                    expected.len(),
                    elements.len()
                ),
            );
            return;
        }
        for ((element, actual), expected) in elements.into_iter().zip(expected) {
            self.check_coerce(element, &actual, expected, Target::Return(name.clone()));
        }
    }

    fn infer_decl(&mut self, local: LocalId, init: Option<ExprId>) {
        self.infer_runtime_sizes(local);
        let init_ty = init.map(|init| (init, self.infer_expr(init)));
        self.declare_local(local, init_ty, Target::Local(local));
        if let Some(init) = init {
            self.check_constant_init(local, init);
        }
    }

    /// `(float loss, Tensor p[k][2]) = step(x);`: the initializer must be a tuple of as many
    /// values as there are bindings, and each binding takes its element as an initializer.
    fn infer_tuple_decl(&mut self, stmt: StmtId, locals: &[LocalId], init: ExprId) {
        for &local in locals {
            self.infer_runtime_sizes(local);
        }
        let init_ty = self.infer_expr(init);
        let elements = match init_ty {
            Ty::Tuple(elements) if elements.len() == locals.len() => Some(elements),
            Ty::Tuple(elements) => {
                let span = self.expr_span(init);
                let stmt_span = self.stmt_span(stmt);
                let (count, given) = (locals.len(), elements.len());
                self.report(
                    Code::TupleArity,
                    span,
                    format!(
                        "this declaration takes {count} value{}, but the tuple has {given}: {}",
                        if count == 1 { "" } else { "s" },
                        Ty::Tuple(elements)
                    ),
                )
                .label(stmt_span, format!("{count} variables declared here"));
                None
            }
            Ty::Error => None,
            other => {
                if self.check_value(init, &other) {
                    let span = self.expr_span(init);
                    self.report(
                        Code::TupleArity,
                        span,
                        format!("only a tuple can be destructured, but this is {other}"),
                    )
                    .help("a function of several results returns a tuple: `function (float, Tensor[n]) f(...)`");
                }
                None
            }
        };
        match elements {
            Some(elements) => {
                for (&local, element) in locals.iter().zip(elements) {
                    self.declare_local(local, Some((init, element)), Target::Binding(local));
                }
            }
            None => {
                for &local in locals {
                    self.declare_local(local, Some((init, Ty::Error)), Target::Binding(local));
                }
            }
        }
        for &local in locals {
            self.check_constant_init(local, init);
        }
    }

    /// The types of the sizes a declaration evaluates when it runs.
    fn infer_runtime_sizes(&mut self, local: LocalId) {
        let body = self.body;
        for size in body.runtime_sizes.iter().filter(|size| size.decl == local) {
            let ty = self.infer_expr(size.expr);
            self.result.local_types.insert(size.var, Ty::Int);
            if !matches!(ty, Ty::Int | Ty::Error) && self.check_value(size.expr, &ty) {
                let span = self.expr_span(size.expr);
                self.report(
                    Code::InvalidDimension,
                    span,
                    format!("a dimension must be an int, but this is {ty}"),
                )
                .help("convert it with `(int)...` if truncating it is meant");
            }
        }
    }

    /// The type of a declared local, given its initializer's value and type.
    fn declare_local(&mut self, local: LocalId, init_ty: Option<(ExprId, Ty)>, target: Target) {
        let data = &self.body.locals[local];
        let declared = ty_of_ref(&data.ty);
        let ty = match (&data.ty, init_ty) {
            // `Mlp net = Mlp { ... };`: the sizes come from the initializer.
            (TypeRef::Record(record), Some((init, init_ty))) if record.inferred => match init_ty {
                Ty::Record(found) if found.def == record.def => Ty::Record(found),
                Ty::Error => Ty::Error,
                // A file's arrays are read when the program runs: the checker needs the sizes.
                _ if self.is_load(init) => {
                    let (name, var) = (record.name.clone(), data.name.clone());
                    let span = self.local_span(local);
                    self.report(
                        Code::RecordSizes,
                        span,
                        format!("a `{name}` loaded from a file needs its sizes written, as in `{name}[...] {var} = load(...)`: the checker cannot read them from the file"),
                    );
                    Ty::Error
                }
                other => {
                    self.check_coerce(init, &other, &declared, target);
                    Ty::Error
                }
            },
            // `Tensor p = a @ b;`: the shape comes from the initializer.
            (TypeRef::Tensor(dims), Some((init, init_ty))) if dims.is_empty() => match init_ty {
                Ty::Tensor(shape) => Ty::Tensor(shape),
                Ty::Int | Ty::Float => Ty::tensor(Vec::new()),
                Ty::Error => Ty::Error,
                other => {
                    self.check_coerce(init, &other, &Ty::tensor(Vec::new()), target);
                    Ty::Error
                }
            },
            (_, Some((init, init_ty))) => {
                self.check_coerce(init, &init_ty, &declared, target);
                declared
            }
            (_, None) => declared,
        };
        self.result.local_types.insert(local, ty);
    }

    /// A top-level `cns` constant must be computable from constants alone: tests and importing
    /// files evaluate a file's constants without running its other statements, so a constant
    /// that reads a top-level variable would see a value the program never gave it.
    fn check_constant_init(&mut self, constant: LocalId, init: ExprId) {
        let data = &self.body.locals[constant];
        if self.kind != DefKind::TopLevel
            || data.scope_depth != 0
            || data.qualifier != Some(Qualifier::Cns)
        {
            return;
        }
        let constant_name = data.name.clone();
        let mut reported = rustc_hash::FxHashSet::default();
        // What the declaration reads: its sizes (evaluated first), then its initializer.
        let mut stack = vec![init];
        let sizes = self.body.runtime_sizes.iter().filter(|size| size.decl == constant);
        stack.extend(sizes.map(|size| size.expr).collect::<Vec<_>>().into_iter().rev());
        // A size that names a top-level `int` directly reads it too.
        if let TypeRef::Tensor(dims) = &data.ty {
            let decl_span = self.local_span(constant);
            for var in dims.iter().flat_map(Dim::vars) {
                let read = &self.body.locals[var.local];
                if var.def != self.def
                    || read.kind == LocalKind::ShapeVar
                    || read.qualifier == Some(Qualifier::Cns)
                    || !reported.insert(var.local)
                {
                    continue;
                }
                let name = &var.name;
                let decl = self.local_span(var.local);
                self.report(
                    Code::ConstantReadsVariable,
                    decl_span,
                    format!("the constant `{constant_name}` cannot have the size `{name}`, a top-level variable: tests and importing files evaluate constants without running the other top-level statements"),
                )
                .label(decl, format!("`{name}` is declared here, without `cns`"))
                .help(format!("declare `{name}` `cns`, or `{constant_name}` without `cns`"));
            }
        }
        while let Some(expr) = stack.pop() {
            // Children in reverse, so that the first read in the source is reported.
            stack.extend(self.body.expr_children(expr).into_iter().rev());
            let Expr::Name { name, local: Some(read) } = &self.body.exprs[expr] else { continue };
            let read_data = &self.body.locals[*read];
            if read_data.scope_depth != 0
                || read_data.qualifier == Some(Qualifier::Cns)
                || !reported.insert(*read)
            {
                continue;
            }
            let (label, help) = match read_data.kind {
                LocalKind::ShapeVar => (
                    format!("`{name}` is bound here, by a declaration without `cns`"),
                    format!(
                        "declare the tensor that binds `{name}` `cns`, or `{constant_name}` without `cns`"
                    ),
                ),
                _ => (
                    format!("`{name}` is declared here, without `cns`"),
                    format!("declare `{name}` `cns`, or `{constant_name}` without `cns`"),
                ),
            };
            let span = self.expr_span(expr);
            let decl = self.local_span(*read);
            self.report(
                Code::ConstantReadsVariable,
                span,
                format!("the constant `{constant_name}` cannot be computed from the top-level variable `{name}`: tests and importing files evaluate constants without running the other top-level statements"),
            )
            .label(decl, label)
            .help(help);
        }
    }

    /// A condition of `if`, `elif`, a loop or `?:`: a scalar, or a tensor of rank 0.
    fn infer_condition(&mut self, cond: ExprId) {
        let ty = self.infer_expr(cond);
        self.check_condition(cond, &ty);
        if self.is_exact_equality_on_differentiable(cond) {
            self.result.exact_equality_guards.push(cond);
        }
    }

    fn check_condition(&mut self, cond: ExprId, ty: &Ty) {
        if ty.is_condition() {
            return;
        }
        let span = self.expr_span(cond);
        match ty {
            Ty::Tensor(_) => {
                let start = HirSpan {
                    span: RelSpan {
                        range: syntax::TextRange::empty(span.span.range.start()),
                        ..span.span
                    },
                    ..span
                };
                let end = HirSpan {
                    span: RelSpan {
                        range: syntax::TextRange::empty(span.span.range.end()),
                        ..span.span
                    },
                    ..span
                };
                let diagnostic = self.report(
                    Code::TensorCondition,
                    span,
                    format!("a condition must be a single truth value, but this is {}", a(&ty)),
                );
                diagnostic.help("reduce the tensor with `all(...)` (every element) or `any(...)` (some element)");
                for wrapper in ["all", "any"] {
                    diagnostic.fixes.push(crate::diagnostics::HirFix {
                        label: format!("wrap the condition in `{wrapper}(...)`"),
                        edits: vec![(start, format!("{wrapper}(")), (end, ")".to_owned())],
                    });
                }
            }
            _ => {
                self.report(
                    Code::TypeMismatch,
                    span,
                    format!("a condition must be a scalar, found {ty}"),
                );
            }
        }
    }

    fn is_exact_equality_on_differentiable(&self, cond: ExprId) -> bool {
        use crate::body::{BinaryOp, CmpOp};
        match &self.body.exprs[cond] {
            Expr::Binary { op: BinaryOp::Cmp(CmpOp::Eq | CmpOp::Ne), lhs, rhs } => {
                self.result.type_of_expr(*lhs).is_differentiable()
                    || self.result.type_of_expr(*rhs).is_differentiable()
            }
            Expr::Binary { op: BinaryOp::Logic(_), lhs, rhs } => {
                self.is_exact_equality_on_differentiable(*lhs)
                    || self.is_exact_equality_on_differentiable(*rhs)
            }
            _ => false,
        }
    }

    /// Resolves a name that no local binds.
    fn resolve_global(&mut self, expr: ExprId, name: &SmolStr) -> Option<Resolution> {
        if let Some(item) = self.scope.get(name) {
            let resolution = match item {
                ScopeItem::Function(def) => Resolution::Function(def),
                ScopeItem::Global { def, local, is_cns } => {
                    if self.kind == DefKind::TopLevel && def.file(self.db) == self.def.file(self.db)
                    {
                        // A top-level name that lexical scoping did not find is declared later.
                        let span = self.expr_span(expr);
                        let decl = HirSpan {
                            def,
                            span: body_query(self.db, def).body.source_map.local(local),
                        };
                        self.report(
                            Code::UnresolvedName,
                            span,
                            format!("`{name}` is used before its declaration"),
                        )
                        .label(decl, format!("`{name}` is declared here"))
                        .help("move the declaration above its first use");
                        return None;
                    }
                    if !is_cns {
                        let span = self.expr_span(expr);
                        let lowered = body_query(self.db, def);
                        let decl = HirSpan { def, span: lowered.body.source_map.local(local) };
                        let what = if self.kind == DefKind::Test { "a test" } else { "a function" };
                        let (label, help) = match lowered.body.locals[local].kind {
                            LocalKind::ShapeVar => (
                                format!("`{name}` is bound here, by a declaration without `cns`"),
                                format!(
                                    "pass `{name}` as a parameter, or declare the tensor that binds it `cns`"
                                ),
                            ),
                            _ => (
                                format!("`{name}` is declared here, without `cns`"),
                                format!(
                                    "pass `{name}` as a parameter, or declare it `cns` if it never changes"
                                ),
                            ),
                        };
                        self.report(
                            Code::TopLevelVariableInFunction,
                            span,
                            format!("{what} cannot use the top-level variable `{name}`: only `cns` constants are visible here"),
                        )
                        .label(decl, label)
                        .help(help);
                        return None;
                    }
                    Resolution::Global { def, local }
                }
            };
            return Some(resolution);
        }
        if let Some(builtin) = Builtin::from_name(name) {
            return Some(Resolution::Builtin(builtin));
        }
        let span = self.expr_span(expr);
        if !name.is_empty() && !self.scope.incomplete && self.unresolved.insert(name.clone()) {
            let candidates =
                crate::suggest::expr_candidates(self.body, self.kind, self.scope, expr);
            let diagnostic = self.report(
                Code::UnresolvedName,
                span,
                format!("cannot find `{name}` in this scope"),
            );
            crate::suggest::did_you_mean_owned(diagnostic, name, span, &candidates);
        }
        None
    }

    /// The type of a global variable, from its file's top-level inference.
    fn global_ty(&self, def: DefId, local: LocalId) -> Ty {
        if def == self.def {
            return self.result.type_of_local(local).clone();
        }
        infer(self.db, def).type_of_local(local).clone()
    }

    /// The declaration of a global's or local's qualifier, for writes.
    fn qualifier_of(
        &self,
        resolution: Resolution,
    ) -> Option<(Option<Qualifier>, LocalKind, HirSpan, SmolStr)> {
        match resolution {
            Resolution::Local(local) => {
                let data = &self.body.locals[local];
                Some((data.qualifier, data.kind, self.local_span(local), data.name.clone()))
            }
            Resolution::Global { def, local } => {
                let lowered = body_query(self.db, def);
                let data = &lowered.body.locals[local];
                let span = HirSpan { def, span: lowered.body.source_map.local(local) };
                Some((data.qualifier, data.kind, span, data.name.clone()))
            }
            _ => None,
        }
    }
}

/// Where a value is being stored, for messages.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    Local(LocalId),
    /// A variable of a destructuring declaration, initialised by one element of a tuple: as
    /// [`Target::Local`], but no fix can rewrite the element alone.
    Binding(LocalId),
    /// A write through `resolution` (an assignment to a variable or an element of it).
    Assign {
        name: Option<(SmolStr, HirSpan)>,
        element: bool,
    },
    Return(SmolStr),
    /// An argument of a call, or a field of a record literal: `what` names it ("argument 2 of
    /// `f`", "field `w` of `Linear`").
    Argument {
        what: String,
        param: Option<HirSpan>,
    },
}

/// Whether a statement list never falls through its end: it returns, or loops forever.
fn stmts_diverge(body: &Body, stmts: &[StmtId]) -> bool {
    stmts.iter().any(|&stmt| stmt_diverges(body, stmt))
}

fn stmt_diverges(body: &Body, stmt: StmtId) -> bool {
    stacker::maybe_grow(
        crate::body::lower::STACK_RED_ZONE,
        crate::body::lower::STACK_SEGMENT,
        || match &body.stmts[stmt] {
            Stmt::Return(_) => true,
            Stmt::Block(stmts) => stmts_diverge(body, stmts),
            Stmt::If { branches, else_branch: Some(else_branch) } => {
                branches.iter().all(|branch| stmts_diverge(body, &branch.body))
                    && stmts_diverge(body, else_branch)
            }
            Stmt::Loop { cond: None, body: loop_body, .. } => !contains_break(body, loop_body),
            _ => false,
        },
    )
}

/// Whether a `break` in these statements leaves this loop (not a nested one).
fn contains_break(body: &Body, stmts: &[StmtId]) -> bool {
    stmts.iter().any(|&stmt| match &body.stmts[stmt] {
        Stmt::Break => true,
        Stmt::Block(inner) => contains_break(body, inner),
        Stmt::If { branches, else_branch } => {
            branches.iter().any(|branch| contains_break(body, &branch.body))
                || else_branch.as_ref().is_some_and(|e| contains_break(body, e))
        }
        _ => false,
    })
}

/// The value of an integer constant expression of `body` (literals, `cns` locals and globals with
/// a known value, `-`, `+` and checked integer arithmetic on them), given the resolutions of its
/// inference, or `None` when it is not one or overflows. The checker uses it for shapes, axes
/// and derivative positions; the lowering in `exec` for immediate operands, so the two agree on
/// what is constant.
pub fn const_int(db: &dyn Db, body: &Body, infer: &InferenceResult, expr: ExprId) -> Option<i64> {
    use crate::body::{ArithOp, BinaryOp, Expr, Literal, UnaryOp};
    stacker::maybe_grow(
        crate::body::lower::STACK_RED_ZONE,
        crate::body::lower::STACK_SEGMENT,
        || match &body.exprs[expr] {
            Expr::Literal(Literal::Int(value)) => Some(*value),
            Expr::Name { .. } => match infer.resolution(expr)? {
                Resolution::Local(local) => body.locals[local].const_value,
                Resolution::Global { def, local } => {
                    body_query(db, def).body.locals[local].const_value
                }
                _ => None,
            },
            Expr::Unary { op: UnaryOp::Neg, operand } => {
                const_int(db, body, infer, *operand)?.checked_neg()
            }
            Expr::Unary { op: UnaryOp::Plus, operand } => const_int(db, body, infer, *operand),
            Expr::Binary { op: BinaryOp::Arith(op), lhs, rhs } => {
                let a = const_int(db, body, infer, *lhs)?;
                let b = const_int(db, body, infer, *rhs)?;
                match op {
                    ArithOp::Add => a.checked_add(b),
                    ArithOp::Sub => a.checked_sub(b),
                    ArithOp::Mul => a.checked_mul(b),
                    ArithOp::Div => a.checked_div(b),
                    // C's remainder: `i64::MIN % -1` is 0, as at run time.
                    ArithOp::Rem if b == -1 => Some(0),
                    ArithOp::Rem => a.checked_rem(b),
                    _ => None,
                }
            }
            _ => None,
        },
    )
}
