//! Calls: of functions (with shape variables unified against the arguments), of built-ins, and
//! of derivatives built by `grad`, `jvp`, `vjp`, `hessian` and `jacobian`.

use rustc_hash::FxHashMap;
use smol_str::SmolStr;

use super::{InferCtx, Resolution, Target, ty_of_ref};
use crate::{
    DefId,
    body::{Expr, ExprId, HirSpan, TransformOp, signature_query},
    diagnostics::Code,
    ty::{Dim, FnTy, Shape, Ty},
};

/// A shape variable bound twice: its name, the first extent and the argument that bound it, and
/// the conflicting extent.
type VarConflict = (SmolStr, Dim, usize, Dim);

/// A callee's type with what messages need: the parameters' declarations and a name.
pub(crate) struct Callee {
    pub fn_ty: FnTy,
    pub param_spans: Vec<Option<HirSpan>>,
    pub name: String,
    pub decl: Option<HirSpan>,
}

impl InferCtx<'_> {
    pub(crate) fn fn_ty_of(&self, def: DefId) -> FnTy {
        let signature = signature_query(self.db, def);
        FnTy {
            params: signature.params.iter().map(|p| ty_of_ref(&p.ty)).collect(),
            ret: ty_of_ref(&signature.ret),
        }
    }

    fn callee_of_function(&self, def: DefId) -> Callee {
        let signature = signature_query(self.db, def);
        Callee {
            fn_ty: self.fn_ty_of(def),
            param_spans: signature
                .params
                .iter()
                .map(|p| Some(HirSpan { def, span: p.span }))
                .collect(),
            name: signature.name.to_string(),
            decl: signature.name_span.map(|span| HirSpan { def, span }),
        }
    }

    pub(crate) fn infer_call(&mut self, expr: ExprId, callee: ExprId, args: &[ExprId]) -> Ty {
        match self.body.exprs[callee].clone() {
            Expr::Name { name, local } => {
                let resolution = match local {
                    Some(local) => Some(Resolution::Local(local)),
                    None => self.resolve_global(callee, &name),
                };
                let Some(resolution) = resolution else {
                    self.infer_args(args);
                    return Ty::Error;
                };
                self.result.resolutions.insert(callee, resolution);
                match resolution {
                    Resolution::Function(def) => {
                        self.result.expr_types.insert(callee, Ty::Fn(Box::new(self.fn_ty_of(def))));
                        self.result.callees.push(def);
                        let target = self.callee_of_function(def);
                        let arg_tys = self.infer_args(args);
                        self.call_with(expr, &target, args, &arg_tys)
                    }
                    Resolution::Builtin(builtin) => self.infer_builtin(expr, builtin, args),
                    Resolution::Local(_) | Resolution::Global { .. } => {
                        let ty = match resolution {
                            Resolution::Local(local) => self.result.type_of_local(local).clone(),
                            Resolution::Global { def, local } => self.global_ty(def, local),
                            _ => Ty::Error,
                        };
                        self.result.expr_types.insert(callee, ty.clone());
                        self.infer_args(args);
                        if ty.is_error() {
                            return Ty::Error;
                        }
                        let span = self.expr_span(callee);
                        let diagnostic = self.report(
                            Code::NotCallable,
                            span,
                            format!("`{name}` is a variable of type {ty}, not a function"),
                        );
                        if ty.is_tensor() {
                            diagnostic.help(format!(
                                "to index, write `{name}[i]`; index-labelled views such as `{name}(i, j)` only appear in index statements"
                            ));
                        }
                        Ty::Error
                    }
                }
            }
            Expr::Transform { .. } => {
                let target = self.transform_callee(callee);
                let arg_tys = self.infer_args(args);
                match target {
                    Some(target) => {
                        self.result
                            .expr_types
                            .insert(callee, Ty::Fn(Box::new(target.fn_ty.clone())));
                        self.call_with(expr, &target, args, &arg_tys)
                    }
                    None => Ty::Error,
                }
            }
            _ => {
                let ty = self.infer_expr(callee);
                self.infer_args(args);
                if !ty.is_error() {
                    let span = self.expr_span(callee);
                    self.report(
                        Code::NotCallable,
                        span,
                        format!("this expression is {ty}, not a function"),
                    );
                }
                Ty::Error
            }
        }
    }

    pub(crate) fn infer_args(&mut self, args: &[ExprId]) -> Vec<Ty> {
        args.iter().map(|&arg| self.infer_expr(arg)).collect()
    }

    /// Checks the arguments against the callee's parameters, binding its shape variables, and
    /// returns the result type with them substituted.
    pub(crate) fn call_with(
        &mut self,
        expr: ExprId,
        callee: &Callee,
        args: &[ExprId],
        arg_tys: &[Ty],
    ) -> Ty {
        let params = &callee.fn_ty.params;
        if args.len() != params.len() {
            let span = self.expr_span(expr);
            let plural = if params.len() == 1 { "" } else { "s" };
            let diagnostic = self.report(
                Code::ArgumentCount,
                span,
                format!(
                    "`{}` takes {} argument{plural}, but {} {} given",
                    callee.name,
                    params.len(),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            );
            if let Some(decl) = callee.decl {
                diagnostic.label(decl, format!("`{}` is defined here", callee.name));
            }
            return Ty::Error;
        }
        let mut bindings: FxHashMap<SmolStr, (Dim, usize)> = FxHashMap::default();
        let mut order: Vec<SmolStr> = Vec::new();
        for (i, ((&arg, arg_ty), param_ty)) in args.iter().zip(arg_tys).zip(params).enumerate() {
            if arg_ty.is_error() || param_ty.is_error() {
                continue;
            }
            let param_span = callee.param_spans.get(i).copied().flatten();
            match (param_ty, arg_ty) {
                (Ty::Tensor(Shape::Ranked(pdims)), Ty::Tensor(Shape::Ranked(adims))) => {
                    if pdims.len() != adims.len() {
                        self.argument_shape_error(
                            arg, arg_ty, param_ty, i, callee, param_span, None,
                        );
                        continue;
                    }
                    for (pd, ad) in pdims.iter().zip(adims) {
                        match pd {
                            Dim::Known(_) if pd.conflicts(ad) => {
                                self.argument_shape_error(
                                    arg, arg_ty, param_ty, i, callee, param_span, None,
                                );
                                break;
                            }
                            Dim::Var(var) => match bindings.get(var) {
                                Some((bound, j)) if bound.conflicts(ad) => {
                                    let conflict = (var.clone(), bound.clone(), *j, ad.clone());
                                    self.argument_shape_error(
                                        arg,
                                        arg_ty,
                                        param_ty,
                                        i,
                                        callee,
                                        param_span,
                                        Some((conflict, args)),
                                    );
                                    break;
                                }
                                Some((bound, j)) => {
                                    let joined = bound.join(ad);
                                    let j = *j;
                                    bindings.insert(var.clone(), (joined, j));
                                }
                                None => {
                                    order.push(var.clone());
                                    bindings.insert(var.clone(), (ad.clone(), i));
                                }
                            },
                            _ => {}
                        }
                    }
                }
                (Ty::Tensor(_), Ty::Tensor(_)) => {}
                _ => {
                    let target = Target::Argument {
                        callee: callee.name.clone(),
                        index: i,
                        param: param_span,
                    };
                    self.check_coerce(arg, arg_ty, param_ty, target);
                }
            }
        }
        let substitution: Vec<(SmolStr, Dim)> =
            order.iter().map(|var| (var.clone(), bindings[var].0.clone())).collect();
        if !substitution.is_empty() {
            self.result.shape_bindings.push((expr, substitution.clone()));
        }
        substitute(&callee.fn_ty.ret, &substitution)
    }

    #[allow(clippy::too_many_arguments)]
    fn argument_shape_error(
        &mut self,
        arg: ExprId,
        arg_ty: &Ty,
        param_ty: &Ty,
        index: usize,
        callee: &Callee,
        param_span: Option<HirSpan>,
        conflict: Option<(VarConflict, &[ExprId])>,
    ) {
        let span = self.expr_span(arg);
        let message = match &conflict {
            Some(((var, bound, j, found), args)) => {
                let first = args.get(*j).map(|&a| self.describe(a)).unwrap_or_default();
                let first_ty =
                    args.get(*j).map(|&a| self.result.type_of_expr(a).clone()).unwrap_or(Ty::Error);
                let this = self.describe(arg);
                format!(
                    "in this call to `{}`, shape variable {var} is {bound} from argument {} ({first} is {first_ty}) but {found} from argument {} ({this} is {arg_ty})",
                    callee.name,
                    j + 1,
                    index + 1
                )
            }
            None => format!(
                "argument {} of `{}` must be {param_ty}, found {arg_ty}",
                index + 1,
                callee.name
            ),
        };
        let diagnostic = self.report(Code::ShapeVarConflict, span, message);
        if let Some(param) = param_span {
            diagnostic.label(param, format!("parameter declared {param_ty} here"));
        }
    }

    /// The function type of a transform such as `grad(f, 1)`, or `None` after reporting why it
    /// has none.
    pub(crate) fn transform_callee(&mut self, expr: ExprId) -> Option<Callee> {
        let Expr::Transform { op, func, wrt } = self.body.exprs[expr].clone() else {
            return None;
        };
        let base = match self.body.exprs[func].clone() {
            Expr::Name { name, local } => {
                let resolution = match local {
                    Some(local) => Some(Resolution::Local(local)),
                    None => self.resolve_global(func, &name),
                };
                let resolution = resolution?;
                self.result.resolutions.insert(func, resolution);
                match resolution {
                    Resolution::Function(def) => {
                        self.result.differentiated.push(def);
                        self.result.expr_types.insert(func, Ty::Fn(Box::new(self.fn_ty_of(def))));
                        self.callee_of_function(def)
                    }
                    Resolution::Builtin(builtin) => {
                        let span = self.expr_span(func);
                        self.report(
                            Code::TransformTarget,
                            span,
                            format!("`{}` applies to functions defined with `function`; `{}` is a built-in", op.name(), builtin.name()),
                        )
                        .help(format!("wrap it: `function float f(float x) {{ return {}(x); }}`", builtin.name()));
                        return None;
                    }
                    Resolution::Local(_) | Resolution::Global { .. } => {
                        let span = self.expr_span(func);
                        self.report(
                            Code::TransformTarget,
                            span,
                            format!("`{}(...)(...)` differentiates a function, but `{name}` is a variable", op.name()),
                        )
                        .help("for the gradient of a variable after `backward`, write `grad(x)` without a call");
                        return None;
                    }
                }
            }
            Expr::Transform { .. } => {
                let inner = self.transform_callee(func)?;
                self.result.expr_types.insert(func, Ty::Fn(Box::new(inner.fn_ty.clone())));
                inner
            }
            _ => {
                let span = self.expr_span(func);
                self.report(
                    Code::TransformTarget,
                    span,
                    format!("`{}` applies to a function name", op.name()),
                );
                return None;
            }
        };
        self.apply_transform(expr, op, wrt, base)
    }

    fn apply_transform(
        &mut self,
        expr: ExprId,
        op: TransformOp,
        wrt: Option<ExprId>,
        base: Callee,
    ) -> Option<Callee> {
        let name = base.name.clone();
        let params = base.fn_ty.params.clone();
        let ret = base.fn_ty.ret.clone();
        let span = self.expr_span(expr);
        if let Some(wrt) = wrt {
            self.infer_expr(wrt);
        }
        let index = match (op, wrt) {
            (TransformOp::Grad, Some(wrt)) => match self.const_int(wrt) {
                Some(k) => k,
                None => {
                    let wrt_span = self.expr_span(wrt);
                    self.report(
                        Code::ParamIndexOutOfRange,
                        wrt_span,
                        "the parameter index of `grad(f, k)` must be an integer literal".to_owned(),
                    );
                    return None;
                }
            },
            (_, Some(wrt)) => {
                let wrt_span = self.expr_span(wrt);
                self.report(
                    Code::ArgumentCount,
                    wrt_span,
                    format!(
                        "`{}` takes only the function; it differentiates in the first parameter",
                        op.name()
                    ),
                );
                return None;
            }
            (_, None) => 0,
        };
        if params.is_empty() {
            self.report(
                Code::ParamIndexOutOfRange,
                span,
                format!("`{name}` has no parameters to differentiate in"),
            );
            return None;
        }
        if index < 0 || index as usize >= params.len() {
            let wrt_span = wrt.map(|w| self.expr_span(w)).unwrap_or(span);
            let count = params.len();
            let diagnostic = self.report(
                Code::ParamIndexOutOfRange,
                wrt_span,
                format!(
                    "`{name}` has {count} parameter{}, so index {index} is out of range (indices start at 0)",
                    if count == 1 { "" } else { "s" }
                ),
            );
            if let Some(decl) = base.decl {
                diagnostic.label(decl, format!("`{name}` is defined here"));
            }
            return None;
        }
        let k = index as usize;
        let wrt_ty = params[k].clone();
        if !wrt_ty.is_differentiable() && !wrt_ty.is_error() {
            let diagnostic = self.report(
                Code::GradOfNonVariable,
                span,
                format!("cannot differentiate `{name}` in parameter {k}: it is {wrt_ty}, which is not differentiable"),
            );
            if let Some(Some(param)) = base.param_spans.get(k) {
                diagnostic.label(*param, format!("parameter {k} is {wrt_ty}"));
            }
            return None;
        }
        let scalar =
            |ty: &Ty| matches!(ty, Ty::Float | Ty::Int | Ty::Error) || ty.rank() == Some(0);
        let needs_scalar = matches!(op, TransformOp::Grad | TransformOp::Hessian);
        if needs_scalar && !scalar(&ret) {
            let diagnostic = self.report(
                Code::GradOfNonScalar,
                span,
                format!(
                    "`{}` needs a function that returns a float, but `{name}` returns {ret}",
                    op.name()
                ),
            );
            diagnostic.help("differentiate a scalar such as `sum(...)` of the result, or use `jacobian` or `vjp`");
            if let Some(decl) = base.decl {
                diagnostic.label(decl, format!("`{name}` returns {ret}"));
            }
            return None;
        }
        let mut param_spans = base.param_spans.clone();
        let fn_ty = match op {
            TransformOp::Grad => FnTy { params: params.clone(), ret: wrt_ty },
            TransformOp::Jvp => {
                param_spans.push(None);
                let mut with_tangent = params.clone();
                with_tangent.push(params[0].clone());
                FnTy { params: with_tangent, ret }
            }
            TransformOp::Vjp => {
                param_spans.push(None);
                let mut with_cotangent = params.clone();
                with_cotangent.push(ret);
                FnTy { params: with_cotangent, ret: params[0].clone() }
            }
            TransformOp::Hessian => {
                let out = match &params[0] {
                    Ty::Float => Ty::Float,
                    Ty::Tensor(Shape::Ranked(dims)) if dims.len() == 1 => {
                        Ty::tensor(vec![dims[0].clone(), dims[0].clone()])
                    }
                    Ty::Tensor(Shape::Unranked) => Ty::unranked(),
                    other => {
                        self.report(
                            Code::TransformShape,
                            span,
                            format!("`hessian` needs the first parameter of `{name}` to be float or Tensor[n], but it is {other}"),
                        );
                        return None;
                    }
                };
                FnTy { params: params.clone(), ret: out }
            }
            TransformOp::Jacobian => {
                let dims_of = |ty: &Ty| -> Option<Vec<Dim>> {
                    match ty {
                        Ty::Float => Some(Vec::new()),
                        Ty::Tensor(Shape::Ranked(dims)) if dims.len() <= 1 => Some(dims.clone()),
                        _ => None,
                    }
                };
                match (dims_of(&ret), dims_of(&params[0])) {
                    (Some(mut out), Some(input)) => {
                        out.extend(input);
                        let out = if out.is_empty() { Ty::Float } else { Ty::tensor(out) };
                        FnTy { params: params.clone(), ret: out }
                    }
                    _ if ret.rank().is_none() || params[0].rank().is_none() => {
                        FnTy { params: params.clone(), ret: Ty::unranked() }
                    }
                    _ => {
                        self.report(
                            Code::TransformShape,
                            span,
                            format!(
                                "`jacobian` needs `{name}` to map a float or Tensor[n] to a float or Tensor[m], but it maps {} to {ret}",
                                params[0]
                            ),
                        );
                        return None;
                    }
                }
            }
        };
        Some(Callee { fn_ty, param_spans, name: format!("{}({name})", op.name()), decl: base.decl })
    }
}

/// `ty` with the callee's shape variables replaced by what a call bound them to; unbound ones
/// become unknown.
pub(crate) fn substitute(ty: &Ty, substitution: &[(SmolStr, Dim)]) -> Ty {
    match ty {
        Ty::Tensor(Shape::Ranked(dims)) => Ty::tensor(
            dims.iter()
                .map(|dim| match dim {
                    Dim::Var(var) => substitution
                        .iter()
                        .find(|(name, _)| name == var)
                        .map_or(Dim::Unknown, |(_, bound)| bound.clone()),
                    other => other.clone(),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}
