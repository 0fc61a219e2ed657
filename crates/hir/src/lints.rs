//! Lints: warnings about programs that check but probably do not do what their author meant —
//! the mistakes that otherwise produce no message at all.
//!
//! | code | what |
//! |---|---|
//! | W0001 | an exact `==` on a differentiable value guards a branch of a differentiated function |
//! | W0002 | an `int` literal where `max`/`min` take either an axis or a value (`max(v, 0)`) |
//! | W0003 | an integer division whose result flows into `float` arithmetic (`(1 / n) * x`) |
//! | W0004 | `grad(x)` of a value that no `var` reaches, so it is always zero |
//! | W0005 | a function named like a built-in, which it replaces in its file |
//! | W0006 | a variable that is never read |
//! | W0007 | a parameter that is never read |
//! | W0008 | a `backward` whose gradients nothing reads through `grad` |
//! | W0009 | code after a `return`, `break` or `continue` |
//!
//! Each is a query per definition ([`def_lints`]) over the lowered body and its inference; none
//! changes what the checker accepts. [`Allowed`] implements the silencing comments: a
//! `// allow(W0006)` on a warning's line or on the line above silences it there, and one at the
//! top of a file (before any code) silences the code in the whole file. Unused names that start
//! with `_` are never reported. Lints are not reported in a file with syntax errors: the parser's
//! recovery may hide the very uses they look for.

use rustc_hash::{FxHashMap, FxHashSet};
use syntax::{LineIndex, SyntaxKind, SyntaxNode, TextRange, TextSize};

use crate::{
    DefId, DefKind, SourceFile,
    body::{
        ArithOp, BinaryOp, Body, Expr, ExprId, HirSpan, IndexFactor, Literal, LocalId, LocalKind,
        Qualifier, RelSpan, Stmt, StmtId, TypeRef, UnaryOp, body_query, lower::Signature,
    },
    builtins::{Builtin, Rule},
    db::{Db, def_source},
    diagnostics::{Code, HirDiagnostic},
    infer::{InferenceResult, Resolution, const_int, infer},
    ty::Ty,
};

/// Every warning of one definition.
#[salsa::tracked(returns(ref))]
pub fn def_lints(db: &dyn Db, def: DefId) -> Vec<HirDiagnostic> {
    // A record type's fields are declarations for other bodies to use.
    if def.kind(db) == DefKind::Struct {
        return Vec::new();
    }
    let lowered = body_query(db, def);
    let mut cx = LintCtx {
        db,
        def,
        kind: def.kind(db),
        body: &lowered.body,
        signature: &lowered.signature,
        infer: infer(db, def),
        out: Vec::new(),
    };
    cx.exact_equality_guards();
    cx.ambiguous_int_arguments();
    cx.integer_divisions();
    cx.untracked_gradients();
    cx.shadowed_builtin();
    cx.unused_locals();
    cx.unread_backward();
    cx.unreachable_code(&lowered.body.root);
    cx.out
}

struct LintCtx<'a> {
    db: &'a dyn Db,
    def: DefId,
    kind: DefKind,
    body: &'a Body,
    signature: &'a Signature,
    infer: &'a InferenceResult,
    out: Vec<HirDiagnostic>,
}

impl LintCtx<'_> {
    fn span(&self, span: RelSpan) -> HirSpan {
        HirSpan { def: self.def, span }
    }

    fn expr_span(&self, expr: ExprId) -> HirSpan {
        self.span(self.body.source_map.expr(expr))
    }

    fn warn(&mut self, code: Code, span: HirSpan, message: String) -> &mut HirDiagnostic {
        self.out.push(HirDiagnostic::new(code, span, message));
        let last = self.out.len() - 1;
        &mut self.out[last]
    }

    /// The source text of a span of this definition.
    fn text(&self, span: RelSpan) -> String {
        let source = def_source(self.db, self.def);
        let Some(chunk) = source.chunks.get(span.chunk as usize) else { return String::new() };
        let root = SyntaxNode::new_root(chunk.clone());
        if span.range.end() > root.text().len() {
            return String::new();
        }
        root.text().slice(span.range).to_string()
    }

    fn builtin_callee(&self, callee: ExprId) -> Option<Builtin> {
        match self.infer.resolution(callee) {
            Some(Resolution::Builtin(builtin)) => Some(builtin),
            _ => None,
        }
    }

    fn ty(&self, expr: ExprId) -> &Ty {
        self.infer.type_of_expr(expr)
    }

    /// W0001, for the functions a file differentiates.
    fn exact_equality_guards(&mut self) {
        if self.kind != DefKind::Function
            || !crate::differentiated_functions(self.db, self.def.file(self.db)).contains(&self.def)
        {
            return;
        }
        let name = self.signature.name.clone();
        for &cond in &self.infer.exact_equality_guards {
            let span = self.expr_span(cond);
            self.warn(
                Code::ExactEqualityBranch,
                span,
                format!("`{name}` is differentiated, and this branch tests a differentiable value for exact equality"),
            )
            .help(
                "the derivative follows the branch taken, so it can differ from the derivative of the function you mean at that point; compare with a tolerance if that matters",
            );
        }
    }

    /// W0002: `max(v, 0)` reduces along axis 0; the element-wise maximum with zero is
    /// `max(v, 0.0)`. A literal written `/*axis=*/ 0` says which is meant.
    fn ambiguous_int_arguments(&mut self) {
        for (expr, data) in self.body.exprs.iter() {
            let Expr::Call { callee, args } = data else { continue };
            let Some(builtin @ (Builtin::Max | Builtin::Min)) = self.builtin_callee(*callee) else {
                continue;
            };
            let [tensor, axis] = args.as_slice() else { continue };
            let Expr::Literal(Literal::Int(value)) = self.body.exprs[*axis] else { continue };
            if !matches!(self.ty(*tensor).rank(), Some(1..) | None) || !self.ty(*tensor).is_tensor()
            {
                continue;
            }
            let axis_span = self.body.source_map.expr(*axis);
            if self.axis_comment_before(axis_span) {
                continue;
            }
            let name = builtin.info().name;
            let call_text = self.text(self.body.source_map.expr(expr));
            let literal = self.text(axis_span);
            let span = self.span(axis_span);
            let diagnostic = self.warn(
                Code::AmbiguousIntArgument,
                span,
                format!(
                    "`{call_text}` reduces along axis {value}; it is not the element-wise {name}imum with {value}"
                ),
            );
            diagnostic.help(format!(
                "an `int` second argument of `{name}` is an axis; write `{value}.0` to compare element-wise, or `/*axis=*/ {value}` to say the axis is meant"
            ));
            diagnostic.fix_replace(
                &format!("compare element-wise with `{value}.0`"),
                span,
                format!("{literal}.0"),
            );
            diagnostic.fix_insert(
                &format!("reduce along axis {value}: `/*axis=*/ {value}`"),
                span,
                "/*axis=*/ ",
            );
        }
    }

    /// Whether the text just before a span ends with the argument comment `/*axis=*/`.
    fn axis_comment_before(&self, span: RelSpan) -> bool {
        let before =
            self.text(RelSpan { chunk: span.chunk, range: TextRange::up_to(span.range.start()) });
        let before = before.trim_end();
        let Some(comment) = before.strip_suffix("*/") else { return false };
        let Some(start) = comment.rfind("/*") else { return false };
        let inner: String = comment[start + 2..].chars().filter(|c| !c.is_whitespace()).collect();
        inner == "axis=" || inner == "axis"
    }

    /// W0003: an `int / int` whose result becomes a `float`: `(1 / n) * sum(x)` is 0 for n > 1.
    fn integer_divisions(&mut self) {
        let mut into_float: Vec<ExprId> = Vec::new();
        let float_like = |ty: &Ty| ty.is_differentiable();
        // `[n / 2, 2]` given to `zeros` or `reshape` is a list of sizes, which stay `int`s.
        let mut shape_lists: FxHashSet<ExprId> = FxHashSet::default();
        for (_, data) in self.body.exprs.iter() {
            let Expr::Call { callee, args } = data else { continue };
            let Some(Resolution::Builtin(builtin)) = self.infer.resolution(*callee) else {
                continue;
            };
            let list = match builtin.info().rule {
                Rule::FromShapeList | Rule::Full => args.first(),
                Rule::Reshape | Rule::Transpose => args.get(1),
                _ => None,
            };
            shape_lists.extend(list.copied());
        }
        for (expr, data) in self.body.exprs.iter() {
            match data {
                Expr::Binary { op: BinaryOp::Arith(op), lhs, rhs } if *op != ArithOp::MatMul => {
                    if float_like(self.ty(*lhs)) {
                        into_float.push(*rhs);
                    }
                    if float_like(self.ty(*rhs)) {
                        into_float.push(*lhs);
                    }
                }
                Expr::Assign { target, value, .. } if float_like(self.ty(*target)) => {
                    into_float.push(*value)
                }
                Expr::TensorLit(elements) if !shape_lists.contains(&expr) => {
                    into_float.extend(elements.iter().copied())
                }
                Expr::Call { callee, args } => match self.infer.resolution(*callee) {
                    Some(Resolution::Function(function)) => {
                        let params = &crate::signature(self.db, function).params;
                        for (arg, param) in args.iter().zip(params) {
                            if matches!(param.ty, TypeRef::Float | TypeRef::Tensor(_)) {
                                into_float.push(*arg);
                            }
                        }
                    }
                    Some(Resolution::Builtin(builtin))
                        if matches!(
                            builtin.info().rule,
                            Rule::Elementwise | Rule::ElementwiseBinary
                        ) =>
                    {
                        into_float.extend(args.iter().copied())
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        for (_, stmt) in self.body.stmts.iter() {
            match stmt {
                Stmt::Decl { local, init: Some(init) }
                    if float_like(self.infer.type_of_local(*local)) =>
                {
                    into_float.push(*init)
                }
                Stmt::Return(Some(value))
                    if matches!(self.signature.ret, TypeRef::Float | TypeRef::Tensor(_)) =>
                {
                    into_float.push(*value)
                }
                _ => {}
            }
        }
        let mut seen = FxHashSet::default();
        for expr in into_float {
            let mut divisions = Vec::new();
            self.int_divisions_in(expr, &mut divisions);
            for division in divisions {
                if seen.insert(division) {
                    self.report_int_division(division);
                }
            }
        }
    }

    /// The integer divisions whose result is (part of) the `int` value of `expr`: through `int`
    /// arithmetic, not through casts or calls.
    fn int_divisions_in(&self, expr: ExprId, out: &mut Vec<ExprId>) {
        if !matches!(self.ty(expr), Ty::Int) {
            return;
        }
        match &self.body.exprs[expr] {
            Expr::Binary { op: BinaryOp::Arith(ArithOp::Div), lhs, rhs } => {
                let constant = |e: ExprId| const_int(self.db, self.body, self.infer, e);
                let exact = matches!((constant(*lhs), constant(*rhs)), (Some(a), Some(b)) if b != 0 && a % b == 0);
                if !exact {
                    out.push(expr);
                }
            }
            Expr::Binary {
                op: BinaryOp::Arith(ArithOp::Add | ArithOp::Sub | ArithOp::Mul),
                lhs,
                rhs,
            } => {
                self.int_divisions_in(*lhs, out);
                self.int_divisions_in(*rhs, out);
            }
            Expr::Unary { op: UnaryOp::Neg | UnaryOp::Plus, operand } => {
                self.int_divisions_in(*operand, out)
            }
            _ => {}
        }
    }

    fn report_int_division(&mut self, division: ExprId) {
        let Expr::Binary { lhs, .. } = self.body.exprs[division] else { return };
        let whole = self.text(self.body.source_map.expr(division));
        let lhs_span = self.expr_span(lhs);
        let lhs_text = self.text(lhs_span.span);
        let (label, edit) = match self.body.exprs[lhs] {
            Expr::Literal(Literal::Int(_)) => {
                (format!("divide as floats: `{lhs_text}.0`"), format!("{lhs_text}.0"))
            }
            _ => (format!("divide as floats: `(float){lhs_text}`"), format!("(float){lhs_text}")),
        };
        let span = self.expr_span(division);
        let diagnostic = self.warn(
            Code::IntegerDivisionToFloat,
            span,
            format!("`{whole}` divides two `int`s, rounding toward zero, before the result becomes a `float`"),
        );
        diagnostic.help("write one operand as a `float` to divide as floats, or cast the quotient, `(float)(a / b)`, if the rounding is meant");
        diagnostic.fix_replace(&label, lhs_span, edit);
    }

    /// W0004: `grad(x)` where `x` is a local that no `var` can reach: not `var` itself, not a
    /// parameter (which a caller or a transform may track), and not assigned from anything that
    /// mentions a tracked local.
    fn untracked_gradients(&mut self) {
        let tracked = self.tracked_locals();
        for (expr, data) in self.body.exprs.iter() {
            let Expr::Call { callee, args } = data else { continue };
            if self.builtin_callee(*callee) != Some(Builtin::Grad) {
                continue;
            }
            let [arg] = args.as_slice() else { continue };
            let Some(Resolution::Local(local)) = self.infer.resolution(*arg) else { continue };
            let data = &self.body.locals[local];
            if tracked.contains(&local)
                || data.kind != LocalKind::Variable
                || !self.infer.type_of_local(local).is_differentiable()
            {
                continue;
            }
            let name = data.name.clone();
            let span = self.expr_span(expr);
            let decl = self.span(self.body.source_map.local(local));
            let declaration_start = self.declaration_start(local);
            let untyped = data.qualifier.is_none();
            let diagnostic = self.warn(
                Code::GradOfUntracked,
                span,
                format!("`grad({name})` is always zero: no `var` flows into `{name}`, so nothing records it"),
            );
            diagnostic.label(decl, format!("`{name}` is declared here, without `var`"));
            diagnostic.help(format!(
                "declare `{name}` with `var` to compute gradients for it, or derive it from a `var`"
            ));
            if let (true, Some(start)) = (untyped, declaration_start) {
                diagnostic.fix_insert(&format!("declare `{name}` with `var`"), start, "var ");
            }
        }
    }

    /// Locals whose value may depend on a `var`: `var` locals, parameters, and, to a fixed
    /// point, locals written from an expression that mentions one.
    fn tracked_locals(&self) -> FxHashSet<LocalId> {
        let mut tracked: FxHashSet<LocalId> = self
            .body
            .locals
            .iter()
            .filter(|(_, data)| {
                data.qualifier == Some(Qualifier::Var) || data.kind == LocalKind::Param
            })
            .map(|(local, _)| local)
            .collect();
        // What each write sends into which local.
        let mut flows: Vec<(LocalId, ExprId)> = Vec::new();
        for (_, stmt) in self.body.stmts.iter() {
            match stmt {
                Stmt::Decl { local, init: Some(init) } => flows.push((*local, *init)),
                Stmt::TupleDecl { locals, init } => {
                    flows.extend(locals.iter().map(|&local| (local, *init)))
                }
                Stmt::Index(index) => {
                    if let Some(Resolution::Local(target)) =
                        self.infer.resolution(index.target.tensor)
                    {
                        for factor in &index.factors {
                            let expr = match factor {
                                IndexFactor::Tensor(operand) => operand.tensor,
                                IndexFactor::Scalar(expr) => *expr,
                            };
                            flows.push((target, expr));
                        }
                    }
                }
                _ => {}
            }
        }
        for (_, data) in self.body.exprs.iter() {
            if let Expr::Assign { target, value, .. } = data
                && let Some(root) = self.write_root(*target)
            {
                flows.push((root, *value));
            }
        }
        let mentions: Vec<(LocalId, Vec<LocalId>)> =
            flows.iter().map(|&(local, expr)| (local, self.locals_in(expr))).collect();
        loop {
            let before = tracked.len();
            for (local, sources) in &mentions {
                if !tracked.contains(local) && sources.iter().any(|s| tracked.contains(s)) {
                    tracked.insert(*local);
                }
            }
            if tracked.len() == before {
                return tracked;
            }
        }
    }

    /// The locals an expression reads, except under `stop_gradient`, whose value no `var`
    /// reaches.
    fn locals_in(&self, expr: ExprId) -> Vec<LocalId> {
        let mut out = Vec::new();
        let mut stack = vec![expr];
        while let Some(expr) = stack.pop() {
            if let Some(Resolution::Local(local)) = self.infer.resolution(expr) {
                out.push(local);
            }
            if let Expr::Call { callee, .. } = &self.body.exprs[expr]
                && self.builtin_callee(*callee) == Some(Builtin::StopGradient)
            {
                continue;
            }
            stack.extend(self.body.expr_children(expr));
        }
        out
    }

    /// The local an assignment target writes: `x`, `x[i]`, `x[i:j][k]`.
    fn write_root(&self, target: ExprId) -> Option<LocalId> {
        match &self.body.exprs[target] {
            Expr::Name { .. } => match self.infer.resolution(target)? {
                Resolution::Local(local) => Some(local),
                _ => None,
            },
            Expr::Index { base, .. } => self.write_root(*base),
            _ => None,
        }
    }

    /// Where the declaration of a local starts (its qualifier or type), for inserting `var `.
    fn declaration_start(&self, local: LocalId) -> Option<HirSpan> {
        let span = self.body.source_map.local(local);
        let source = def_source(self.db, self.def);
        let root = SyntaxNode::new_root(source.chunks.get(span.chunk as usize)?.clone());
        let element = root.covering_element(span.range);
        let decl = element.ancestors().find(|node| node.kind() == SyntaxKind::VAR_DECL)?;
        let start = decl.text_range().start();
        Some(self.span(RelSpan { chunk: span.chunk, range: TextRange::empty(start) }))
    }

    /// W0005: a function named like a built-in replaces it for every call in the file, its own
    /// recursive calls included.
    fn shadowed_builtin(&mut self) {
        if self.kind != DefKind::Function {
            return;
        }
        let name = self.signature.name.clone();
        if Builtin::from_name(&name).is_none() {
            return;
        }
        let Some(span) = self.signature.name_span else { return };
        let span = self.span(span);
        self.warn(
            Code::ShadowsBuiltin,
            span,
            format!("the function `{name}` replaces the built-in `{name}` in this file"),
        )
        .help(format!(
            "every call of `{name}` in this file, this function's own included, calls this function; rename it to keep the built-in"
        ));
    }

    /// W0006 and W0007: locals never read. A write (`x = ...`, `x[i] = ...`, `x += ...`,
    /// `x++`) is not a read.
    fn unused_locals(&mut self) {
        let mut read: FxHashSet<LocalId> = FxHashSet::default();
        let mut written_only: FxHashSet<ExprId> = FxHashSet::default();
        for (_, data) in self.body.exprs.iter() {
            match data {
                Expr::Assign { target, .. } | Expr::IncDec { target, .. } => {
                    if let Expr::Name { .. } = self.body.exprs[*target] {
                        written_only.insert(*target);
                    }
                    let mut base = *target;
                    while let Expr::Index { base: inner, .. } = self.body.exprs[base] {
                        base = inner;
                    }
                    written_only.insert(base);
                }
                _ => {}
            }
        }
        for (_, stmt) in self.body.stmts.iter() {
            if let Stmt::Index(index) = stmt {
                written_only.insert(index.target.tensor);
            }
        }
        for (expr, data) in self.body.exprs.iter() {
            if let Expr::Name { local: Some(local), .. } = data
                && !written_only.contains(&expr)
            {
                read.insert(*local);
            }
        }
        // A name in a dimension reads it: `int k = ...; Tensor t[k];` reads `k`.
        for &(_, def, local) in self.body.source_map.size_uses() {
            if def == self.def {
                read.insert(local);
            }
        }
        // A tensor read only for its shape (`function int rows(Tensor x[r][c]) { return r; }`)
        // is read through the shape variables it binds.
        let binders = self.binder_spans();
        let shape_reads: Vec<RelSpan> = self
            .body
            .locals
            .iter()
            .filter(|(local, data)| data.kind == LocalKind::ShapeVar && read.contains(local))
            .map(|(local, _)| self.body.source_map.local(local))
            .collect();
        for (local, binder) in binders {
            let inside = |span: &RelSpan| {
                span.chunk == binder.chunk && binder.range.contains_range(span.range)
            };
            if shape_reads.iter().any(inside) {
                read.insert(local);
            }
        }
        // A misspelt use (`lenght` for `length`) is one mistake, reported once: not again as
        // an unused `length`.
        let suggested: FxHashSet<&str> = self
            .body
            .diagnostics
            .iter()
            .chain(&self.infer.diagnostics)
            .filter(|d| {
                matches!(d.code, Code::UnresolvedName | Code::UnknownDimension | Code::FormatString)
            })
            .flat_map(|d| &d.fixes)
            .flat_map(|fix| &fix.edits)
            // A `format` fix passes names as `, epoch, loss`.
            .flat_map(|(_, text)| text.split([',', ' ']).filter(|name| !name.is_empty()))
            .collect();
        // A top-level `cns` may be read by functions, tests and importing files.
        for (local, data) in self.body.locals.iter() {
            let unused_kind = match data.kind {
                LocalKind::Variable => Code::UnusedVariable,
                LocalKind::Param => Code::UnusedParameter,
                LocalKind::ShapeVar => continue,
            };
            if read.contains(&local)
                || suggested.contains(data.name.as_str())
                || data.name.is_empty()
                || data.name.starts_with('_')
                || self.kind == DefKind::TopLevel
                    && data.scope_depth == 0
                    && data.qualifier == Some(Qualifier::Cns)
            {
                continue;
            }
            let name = data.name.clone();
            let span = self.span(self.body.source_map.local(local));
            let what = match unused_kind {
                Code::UnusedParameter => "parameter",
                _ => "variable",
            };
            self.warn(unused_kind, span, format!("the {what} `{name}` is never read"))
                .help(format!("remove it, or name it `_{name}` if it is meant to be unused"));
        }
    }

    /// The whole declaration of each parameter and declared variable: where the shape variables
    /// it binds are written.
    fn binder_spans(&self) -> Vec<(LocalId, RelSpan)> {
        let params = self.body.params.iter().zip(&self.signature.params);
        let mut out: Vec<(LocalId, RelSpan)> =
            params.map(|(&local, param)| (local, param.span)).collect();
        for (stmt, data) in self.body.stmts.iter() {
            match data {
                Stmt::Decl { local, .. } => out.push((*local, self.body.source_map.stmt(stmt))),
                Stmt::TupleDecl { locals, .. } => {
                    let span = self.body.source_map.stmt(stmt);
                    out.extend(locals.iter().map(|&local| (local, span)));
                }
                _ => {}
            }
        }
        out
    }

    /// W0008: in a test or the top level, a `backward` when nothing reads a gradient with
    /// `grad(x)`, here or in a function called from here.
    fn unread_backward(&mut self) {
        if self.kind == DefKind::Function {
            return;
        }
        let backwards: Vec<ExprId> = self
            .body
            .exprs
            .iter()
            .filter(|(_, data)| matches!(data, Expr::Call { callee, .. } if self.builtin_callee(*callee) == Some(Builtin::Backward)))
            .map(|(expr, _)| expr)
            .collect();
        if backwards.is_empty() || reads_gradients(self.db, self.def) {
            return;
        }
        for backward in backwards {
            let span = self.expr_span(backward);
            self.warn(
                Code::UnreadBackward,
                span,
                "the gradients this `backward` computes are never read".to_owned(),
            )
            .help("read a gradient with `grad(w)` after it, or remove the `backward`");
        }
    }

    /// W0009: statements after one that always leaves the block.
    fn unreachable_code(&mut self, stmts: &[StmtId]) {
        let mut left = false;
        let mut first_dead: Option<StmtId> = None;
        let mut last_dead: Option<StmtId> = None;
        for &stmt in stmts {
            if left {
                first_dead.get_or_insert(stmt);
                last_dead = Some(stmt);
                continue;
            }
            match &self.body.stmts[stmt] {
                Stmt::Block(inner) => self.unreachable_code(inner),
                Stmt::If { branches, else_branch } => {
                    for branch in branches {
                        self.unreachable_code(&branch.body);
                    }
                    if let Some(else_branch) = else_branch {
                        self.unreachable_code(else_branch);
                    }
                }
                Stmt::Loop { body, .. } => self.unreachable_code(body),
                _ => {}
            }
            left = leaves_block(self.body, stmt);
        }
        let (Some(first), Some(last)) = (first_dead, last_dead) else { return };
        let (first, last) = (self.body.source_map.stmt(first), self.body.source_map.stmt(last));
        if first.chunk != last.chunk {
            return;
        }
        let range = TextRange::new(first.range.start(), last.range.end().max(first.range.start()));
        let span = self.span(RelSpan { chunk: first.chunk, range });
        self.warn(
            Code::UnreachableCode,
            span,
            "this code is never run: the statement before it always leaves the block".to_owned(),
        )
        .help("remove it, or move it before the `return`, `break` or `continue`");
    }
}

/// Whether a statement always leaves its block: `return`, `break`, `continue`, or an `if` whose
/// branches all do.
fn leaves_block(body: &Body, stmt: StmtId) -> bool {
    match &body.stmts[stmt] {
        Stmt::Return(_) | Stmt::Break | Stmt::Continue => true,
        Stmt::Block(stmts) => stmts.iter().any(|&s| leaves_block(body, s)),
        Stmt::If { branches, else_branch: Some(else_branch) } => {
            branches.iter().all(|branch| branch.body.iter().any(|&s| leaves_block(body, s)))
                && else_branch.iter().any(|&s| leaves_block(body, s))
        }
        _ => false,
    }
}

/// Whether a definition, or a function it calls (transitively), reads a gradient with `grad(x)`
/// of a variable.
fn reads_gradients(db: &dyn Db, def: DefId) -> bool {
    let mut stack = vec![def];
    let mut seen = FxHashSet::default();
    while let Some(def) = stack.pop() {
        if !seen.insert(def) {
            continue;
        }
        let result = infer(db, def);
        let body = &body_query(db, def).body;
        let reads = body.exprs.iter().any(|(_, data)| {
            matches!(data, Expr::Call { callee, .. }
                if result.resolution(*callee) == Some(Resolution::Builtin(Builtin::Grad)))
        });
        if reads {
            return true;
        }
        stack.extend(result.callees.iter().copied());
    }
    false
}

/// The silencing comments of a file: `// allow(W0006)` (several codes separated by commas, and
/// any text after the parenthesis) silences those codes on its own line and the next one; before
/// any code, in the whole file.
#[derive(Debug, Default)]
pub struct Allowed {
    file_wide: Vec<Code>,
    /// 0-based line to the codes allowed on it.
    lines: FxHashMap<u32, Vec<Code>>,
}

impl Allowed {
    pub fn of(root: &SyntaxNode, index: &LineIndex) -> Allowed {
        let mut allowed = Allowed::default();
        let mut before_code = true;
        for token in root.descendants_with_tokens().filter_map(|e| e.into_token()) {
            match token.kind() {
                SyntaxKind::COMMENT => {
                    let codes = allowed_codes(token.text());
                    if codes.is_empty() {
                        continue;
                    }
                    if before_code {
                        allowed.file_wide.extend(codes);
                        continue;
                    }
                    let line = index.line_col(token.text_range().start()).line;
                    for line in [line, line + 1] {
                        allowed.lines.entry(line).or_default().extend(codes.iter().copied());
                    }
                }
                kind if kind.is_trivia() => {}
                _ => before_code = false,
            }
        }
        allowed
    }

    pub fn allows(&self, code: Code, at: TextSize, index: &LineIndex) -> bool {
        if self.file_wide.contains(&code) {
            return true;
        }
        let line = index.line_col(at).line;
        self.lines.get(&line).is_some_and(|codes| codes.contains(&code))
    }
}

/// The codes a comment `// allow(W0006, W0002) reason` names.
fn allowed_codes(comment: &str) -> Vec<Code> {
    let text = comment.trim_start_matches('/').trim_start_matches('*').trim_start();
    let Some(rest) = text.strip_prefix("allow(") else { return Vec::new() };
    let Some((list, _)) = rest.split_once(')') else { return Vec::new() };
    list.split(',').filter_map(|code| Code::from_code(code.trim())).collect()
}

/// The line a silencing comment for a warning at `at` goes on, with its indentation, as an edit
/// that inserts `// allow(CODE)` above the warning's line.
pub fn allow_comment_edit(text: &str, at: TextSize, code: Code) -> (TextSize, String) {
    let offset = usize::from(at).min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let indent: String =
        text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect();
    (TextSize::from(line_start as u32), format!("{indent}// allow({code})\n"))
}

/// Whether a file's lints are reported: not when it has syntax errors, whose recovery may hide
/// the uses and writes the lints look for.
pub(crate) fn lint_file(db: &dyn Db, file: SourceFile) -> bool {
    crate::parse(db, file).errors().is_empty()
}
