//! Typing records: literals (a call of the record's constructor, whose parameters are the
//! fields, so the fields bind the record's sizes as arguments bind a function's), field access,
//! and the operations that lift over records field by field.

use smol_str::SmolStr;

use super::{InferCtx, call::Callee};
use crate::{
    Builtin, DefId, Resolution,
    body::{Expr, ExprId, FieldInit, HirSpan, RelSpan, body_query, signature_query},
    diagnostics::Code,
    records::{generic_record, record_fields},
    ty::{Dim, FnTy, RecordTy, Ty},
};

impl InferCtx<'_> {
    /// `Linear { w: ..., b: ... }`: every field once, each value converted to the field's type,
    /// the sizes bound by the values.
    pub(crate) fn infer_record_lit(
        &mut self,
        expr: ExprId,
        def: Option<DefId>,
        name: &SmolStr,
        fields: &[FieldInit],
    ) -> Ty {
        let tys: Vec<Ty> = fields.iter().map(|field| self.infer_value(field.value)).collect();
        let Some(def) = def else { return Ty::Error };
        let signature = signature_query(self.db, def);
        let lowered = body_query(self.db, def);
        let declared: Vec<(SmolStr, crate::LocalId)> = lowered
            .body
            .params
            .iter()
            .map(|&local| (lowered.body.locals[local].name.clone(), local))
            .collect();
        let decl = signature.name_span.map(|span| HirSpan { def, span });
        // The value given for each declared field, in declaration order.
        let mut given: Vec<Option<usize>> = vec![None; declared.len()];
        let mut ok = true;
        for (i, field) in fields.iter().enumerate() {
            match declared.iter().position(|(n, _)| *n == field.name) {
                Some(k) => {
                    self.result.field_uses.push((field.span, def, declared[k].1));
                    match given[k] {
                        None => given[k] = Some(i),
                        Some(first) => {
                            ok = false;
                            let span = self.span(field.span);
                            let first = self.span(fields[first].span);
                            self.report(
                                Code::DuplicateField,
                                span,
                                format!("the field `{}` of `{name}` is given twice", field.name),
                            )
                            .label(first, "first given here".to_owned())
                            .help("give each field once");
                        }
                    }
                }
                None => {
                    ok = false;
                    // The likeliest meaning is a field not given yet.
                    let candidates: Vec<(SmolStr, &'static str)> = declared
                        .iter()
                        .filter(|(n, _)| !fields.iter().any(|f| f.name == *n))
                        .map(|(n, _)| (n.clone(), "field"))
                        .collect();
                    self.unknown_field(field.span, &field.name, name, decl, &candidates);
                }
            }
        }
        let missing: Vec<&SmolStr> = declared
            .iter()
            .zip(&given)
            .filter(|(_, given)| given.is_none())
            .map(|((n, _), _)| n)
            .collect();
        // An unknown field is most likely a missing one misspelt: it was reported alone.
        if !missing.is_empty() && ok {
            let span = self.expr_span(expr);
            let list: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
            let diagnostic = self.report(
                Code::MissingField,
                span,
                format!(
                    "this `{name}` lacks the field{} {}",
                    if missing.len() == 1 { "" } else { "s" },
                    list.join(", ")
                ),
            );
            diagnostic.help("a record literal gives every field of its type a value");
            if let Some(decl) = decl {
                diagnostic.label(decl, format!("`{name}` is declared here"));
            }
            return Ty::Error;
        }
        if !ok || !missing.is_empty() {
            return Ty::Error;
        }
        let record = generic_record(self.db, def);
        let params: Vec<Ty> = record_fields(self.db, &record).into_iter().map(|f| f.ty).collect();
        let callee = Callee {
            fn_ty: FnTy { params, ret: Ty::Record(std::sync::Arc::new(record)) },
            param_spans: signature
                .params
                .iter()
                .map(|p| Some(HirSpan { def, span: p.span }))
                .collect(),
            name: name.to_string(),
            decl,
            fields: Some(declared.iter().map(|(n, _)| n.clone()).collect()),
            mapped: None,
        };
        let args: Vec<ExprId> = given.iter().flatten().map(|&i| fields[i].value).collect();
        let arg_tys: Vec<Ty> = given.iter().flatten().map(|&i| tys[i].clone()).collect();
        self.call_with(expr, &callee, &args, &arg_tys)
    }

    /// `net.l1`: the field of a record, typed for the record's sizes.
    pub(crate) fn infer_field(
        &mut self,
        expr: ExprId,
        base: ExprId,
        name: &SmolStr,
        span: RelSpan,
    ) -> Ty {
        let base_ty = self.infer_expr(base);
        match &base_ty {
            Ty::Error => Ty::Error,
            Ty::Record(record) => {
                let fields = record_fields(self.db, record);
                if let Some(field) = fields.iter().find(|f| f.name == *name) {
                    self.result.field_uses.push((span, record.def, field.local));
                    return field.ty.clone();
                }
                let candidates: Vec<(SmolStr, &'static str)> =
                    fields.iter().map(|f| (f.name.clone(), "field")).collect();
                let signature = signature_query(self.db, record.def);
                let decl = signature.name_span.map(|s| HirSpan { def: record.def, span: s });
                let record_name = record.name.clone();
                self.unknown_field(span, name, &record_name, decl, &candidates);
                Ty::Error
            }
            other => {
                if self.check_value(base, other) {
                    let base_span = self.expr_span(base);
                    let text = self.describe(base);
                    let field_span = self.span(span);
                    let diagnostic = self.report(
                        Code::NotARecord,
                        field_span,
                        format!("{text} is {other}, which has no fields; only records have fields such as `.{name}`"),
                    );
                    diagnostic.label(base_span, format!("{other}"));
                    if other.is_tensor() {
                        diagnostic.help(
                            "a tensor's parts are taken by indexing, as in `t[0]` or `t[:, 1]`",
                        );
                    }
                }
                let _ = expr;
                Ty::Error
            }
        }
    }

    fn unknown_field(
        &mut self,
        span: RelSpan,
        name: &SmolStr,
        record: &SmolStr,
        decl: Option<HirSpan>,
        candidates: &[(SmolStr, &'static str)],
    ) {
        let span = self.span(span);
        let diagnostic = self.report(
            Code::UnknownField,
            span,
            format!("the record type `{record}` has no field `{name}`"),
        );
        if !crate::suggest::did_you_mean_owned(diagnostic, name, span, candidates) {
            let list: Vec<String> = candidates.iter().map(|(n, _)| format!("`{n}`")).collect();
            if !list.is_empty() {
                diagnostic.help(format!("the fields it can be are {}", list.join(", ")));
            }
        }
        if let Some(decl) = decl {
            diagnostic.label(decl, format!("`{record}` is declared here"));
        }
    }

    /// Whether values of the type have gradients: floats, tensors, and records whose every
    /// leaf is one.
    pub(crate) fn is_differentiable(&self, ty: &Ty) -> bool {
        match ty {
            Ty::Record(_) => {
                crate::records::leaves(self.db, ty).iter().all(|leaf| leaf.ty.is_differentiable())
            }
            other => other.is_differentiable(),
        }
    }

    /// `a + b` or `lr * g` with a record operand: the arithmetic operators lift over records
    /// field by field, between two records of one type or a record and a number (used for
    /// every field). Anything else with a record is E0610.
    pub(crate) fn record_binary(
        &mut self,
        expr: ExprId,
        symbol: &str,
        arith: bool,
        operands: [(ExprId, &Ty); 2],
    ) -> Ty {
        let [(lhs, lhs_ty), (rhs, rhs_ty)] = operands;
        let whole = self.describe_whole(expr);
        let lifted = match (lhs_ty, rhs_ty) {
            (Ty::Record(a), Ty::Record(b)) if arith && a.def == b.def => {
                let conflict = a.sizes.iter().zip(&b.sizes).any(|(x, y)| x.conflicts(y));
                if conflict {
                    let span = self.expr_span(expr);
                    self.report(
                        Code::DeclaredShapeMismatch,
                        span,
                        format!("{whole}: the records have different sizes, {lhs_ty} and {rhs_ty}"),
                    )
                    .help("field-wise arithmetic needs two records of one type with equal sizes");
                    return Ty::Error;
                }
                let sizes = a.sizes.iter().zip(&b.sizes).map(|(x, y)| x.join(y)).collect();
                Some(Ty::Record(std::sync::Arc::new(RecordTy { sizes, ..(**a).clone() })))
            }
            (Ty::Record(_), Ty::Int | Ty::Float) if arith => Some(lhs_ty.clone()),
            (Ty::Int | Ty::Float, Ty::Record(_)) if arith => Some(rhs_ty.clone()),
            _ => None,
        };
        match lifted {
            Some(ty) if self.lifts(&ty) => ty,
            Some(ty) => {
                self.not_liftable(expr, &format!("`{symbol}`"), &ty);
                Ty::Error
            }
            None => {
                let span = self.expr_span(expr);
                let (lhs_text, rhs_text) = (self.describe(lhs), self.describe(rhs));
                self.report(
                    Code::RecordOperand,
                    span,
                    format!("`{symbol}` does not apply to {lhs_ty} and {rhs_ty} in {whole} ({lhs_text} and {rhs_text})"),
                )
                .help("over records, `+ - * / %` apply field by field between two records of one type, or a record and a number; take a field, as in `net.w`, for anything else");
                Ty::Error
            }
        }
    }

    /// Whether arithmetic lifts over the record type: every leaf a float or a tensor.
    pub(crate) fn lifts(&self, ty: &Ty) -> bool {
        crate::records::leaves(self.db, ty).iter().all(|leaf| leaf.ty.is_differentiable())
    }

    /// Reports an operation that would lift over a record but for a leaf that is not a float
    /// or a tensor.
    pub(crate) fn not_liftable(&mut self, expr: ExprId, what: &str, ty: &Ty) {
        let span = self.expr_span(expr);
        let leaf = crate::records::leaves(self.db, ty)
            .into_iter()
            .find(|leaf| !leaf.ty.is_differentiable());
        let field =
            leaf.map(|leaf| format!("`{}` is {}", leaf.dotted(), leaf.ty)).unwrap_or_default();
        self.report(
            Code::RecordOperand,
            span,
            format!("{what} applies to a record field by field only when every field is a float or a tensor, but in {ty} {field}"),
        );
    }

    /// Whether `expr` is a call of `load`, which reads a record where one is expected.
    pub(crate) fn is_load(&self, expr: ExprId) -> bool {
        let Expr::Call { callee, .. } = &self.body.exprs[expr] else { return false };
        matches!(self.result.resolutions.get(*callee), Some(Resolution::Builtin(Builtin::Load)))
    }

    /// `Mlp[64][32][10] net = load("net.npz");`: where a record of type `expected` is declared,
    /// assigned or returned, `load` reads one from an `.npz` archive. The call's type is the
    /// record's with unknown sizes, so that every field's shape is checked when it runs, as a
    /// value whose sizes the checker does not know is.
    pub(crate) fn load_record(&mut self, load: ExprId, record: &RecordTy, expected: &Ty) {
        if !self.lifts(expected) {
            self.not_liftable(load, "`load`", expected);
            return;
        }
        let sizes = record.sizes.iter().map(|_| Dim::Unknown).collect();
        let loaded = Ty::Record(std::sync::Arc::new(RecordTy { sizes, ..record.clone() }));
        self.result.expr_types.insert(load, loaded);
    }

    /// An expression whose value is used: its type, or an error when it has no value.
    pub(crate) fn infer_value(&mut self, expr: ExprId) -> Ty {
        let ty = self.infer_expr(expr);
        if self.check_value(expr, &ty) { ty } else { Ty::Error }
    }
}
