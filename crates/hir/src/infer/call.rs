//! Calls: of functions (with shape variables unified against the arguments), of built-ins, and
//! of derivatives built by `grad`, `jvp`, `vjp`, `hessian` and `jacobian`.

use la_arena::RawIdx;
use smol_str::SmolStr;

use super::{InferCtx, Resolution, Target, mask, ty_of_ref};
use crate::{
    DefId,
    body::{Expr, ExprId, HirSpan, LocalId, TransformOp, signature_query},
    diagnostics::Code,
    ty::{Dim, FnTy, RecordTy, Shape, SizeVar, SolveError, Ty},
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
    /// The fields, for the constructor of a record literal: its arguments are named by them.
    pub fields: Option<Vec<SmolStr>>,
    /// For `vmap(f, ...)`: what it maps over, for the help of an argument that does not fit.
    pub mapped: Option<Mapped>,
}

/// What a `vmap` maps over: its batch extent's size variable, the parameters it slices and the
/// name of the function it maps.
#[derive(Clone)]
pub(crate) struct Mapped {
    batch: SizeVar,
    params: Vec<usize>,
    function: String,
}

impl Mapped {
    /// For an argument of a rank that does not fit its batched parameter: one axis short, it
    /// may be meant whole for every call (did you mean to leave it out of the mapped ones?).
    fn help(&self, index: usize, arg_ty: &Ty, param_ty: &Ty) -> Option<String> {
        let rank = |ty: &Ty| ty.shape().and_then(Shape::dims).map_or(0, <[Dim]>::len);
        let one_short = match arg_ty {
            Ty::Float => rank(param_ty) == 1,
            Ty::Tensor(_) => rank(arg_ty) + 1 == rank(param_ty),
            _ => false,
        };
        if !self.params.contains(&index) || !one_short {
            return None;
        }
        let function = &self.function;
        let others: Vec<String> =
            self.params.iter().filter(|&&k| k != index).map(usize::to_string).collect();
        Some(match others.is_empty() {
            true => format!(
                "`vmap({function})` calls `{function}` on each slice along the leading axis of argument {}, which needs one axis more than the parameter: the batch",
                index + 1
            ),
            false => format!(
                "to pass argument {} whole to every call of `{function}`, leave parameter {index} out of the mapped ones: `vmap({function}, [{}])`",
                index + 1,
                others.join(", ")
            ),
        })
    }
}

impl Callee {
    /// "argument 2 of `f`", or "field `w` of `Linear`" for a record literal.
    pub(crate) fn argument(&self, index: usize) -> String {
        match self.fields.as_ref().and_then(|fields| fields.get(index)) {
            Some(field) => format!("field `{field}` of `{}`", self.name),
            None => format!("argument {} of `{}`", index + 1, self.name),
        }
    }
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
            fields: None,
            mapped: None,
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
                        self.check_masks_passed(def, &target, args);
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

    /// A mask argument (`a > 0`) whose parameter the callee uses as an index entry would select
    /// by positions `0` and `1` there, since a parameter is never a mask in its own body
    /// (`infer::mask`): reported with both places (E0231).
    fn check_masks_passed(&mut self, def: DefId, callee: &Callee, args: &[ExprId]) {
        let masks: Vec<(usize, ExprId)> = (args.iter().copied().enumerate())
            .filter(|&(_, arg)| mask::is_mask(self.body, &self.mask_locals, arg))
            .collect();
        if masks.is_empty() {
            return;
        }
        let uses = mask::params_read_as_indices(self.db, def).clone();
        let signature = signature_query(self.db, def);
        for (i, arg) in masks {
            let (Some(Some(used)), Some(param)) = (uses.get(i), signature.params.get(i)) else {
                continue;
            };
            let name = &param.name;
            let span = self.expr_span(arg);
            let message = format!(
                "this mask is {}, whose parameter `{name}` indexes as a tensor of positions",
                callee.argument(i)
            );
            self.report(Code::MaskReadAsIndices, span, message)
                .label(
                    HirSpan { def, span: *used },
                    format!("`{name}` is read here as positions 0 and 1, not as a mask"),
                )
                .help(format!(
                    "a parameter is never a mask; to select by it in `{}`, index with `{name} != 0`",
                    callee.name
                ));
        }
    }

    /// The types of a call's arguments. No function or built-in takes a tuple: one is reported
    /// here, once for every callee, and typed as an error.
    pub(crate) fn infer_args(&mut self, args: &[ExprId]) -> Vec<Ty> {
        args.iter()
            .map(|&arg| match self.infer_expr(arg) {
                ty @ Ty::Tuple(_) => {
                    self.check_value(arg, &ty);
                    Ty::Error
                }
                ty => ty,
            })
            .collect()
    }

    /// Checks the arguments against the callee's parameters, binding its shape variables, and
    /// returns the result type with them substituted. A call with too few arguments (one being
    /// typed) is an error, but the arguments it has are still checked and bind what they can,
    /// for the editor's signature help.
    pub(crate) fn call_with(
        &mut self,
        expr: ExprId,
        callee: &Callee,
        args: &[ExprId],
        arg_tys: &[Ty],
    ) -> Ty {
        let params = &callee.fn_ty.params;
        let complete = args.len() == params.len();
        if !complete {
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
            if args.len() > params.len() {
                return Ty::Error;
            }
        }
        // Extents of parameters against the arguments': (argument, parameter's, argument's).
        let mut pairs: Vec<(usize, Dim, Dim)> = Vec::new();
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
                    pairs.extend(pdims.iter().zip(adims).map(|(p, a)| (i, p.clone(), a.clone())));
                }
                (Ty::Tensor(_), Ty::Tensor(_)) => {}
                (Ty::Record(p), Ty::Record(a)) if p.def == a.def => {
                    pairs.extend(
                        p.sizes.iter().zip(&a.sizes).map(|(p, a)| (i, p.clone(), a.clone())),
                    );
                }
                _ => {
                    let target = Target::Argument { what: callee.argument(i), param: param_span };
                    self.check_coerce(arg, arg_ty, param_ty, target);
                }
            }
        }
        let bindings = self.unify_sizes(callee, args, arg_tys, &pairs);
        let substitution: Vec<(SizeVar, Dim)> =
            bindings.iter().flatten().map(|b| (b.var.clone(), b.value.clone())).collect();
        if !substitution.is_empty() {
            self.result.shape_bindings.push((expr, substitution.clone()));
        }
        match complete {
            true => substitute(&callee.fn_ty.ret, &substitution),
            false => Ty::Error,
        }
    }

    /// Binds the callee's size variables from the arguments' extents and checks every extent
    /// against what the bindings make of the parameter's. A variable is bound by the first
    /// extent that determines it (`m` in `2*m` by an 8, to 4), trying again while bindings make
    /// more extents solvable; what stays unbound is unknown. `None` after reporting a mismatch.
    fn unify_sizes(
        &mut self,
        callee: &Callee,
        args: &[ExprId],
        arg_tys: &[Ty],
        pairs: &[(usize, Dim, Dim)],
    ) -> Option<Vec<Binding>> {
        let mut bindings: Vec<Binding> = Vec::new();
        let bound = |bindings: &[Binding], var: &SizeVar| {
            bindings.iter().find(|b| b.var == *var).map(|b| b.value.clone())
        };
        loop {
            let mut progress = false;
            for (i, param, arg) in pairs {
                if *arg == Dim::Unknown {
                    continue;
                }
                let unbound: Vec<SizeVar> =
                    param.vars().into_iter().filter(|v| bound(&bindings, v).is_none()).collect();
                let [var] = unbound.as_slice() else { continue };
                let partial = param.substitute(&mut |v| match v == var {
                    true => Some(Dim::var(var.clone())),
                    false => bound(&bindings, v),
                });
                let Ok(partial) = partial else { continue };
                match partial.solve(var, arg) {
                    None => {}
                    Some(Ok(value)) => {
                        bindings.push(Binding { var: var.clone(), value, from: *i });
                        progress = true;
                    }
                    Some(Err(error)) => {
                        let why = match error {
                            SolveError::NoSize { value } if value.denom() == 1 => format!(
                                "no size {var} makes {param} equal {arg} ({var} would be {})",
                                value.numer()
                            ),
                            SolveError::NoSize { value } => format!(
                                "no size {var} makes {param} equal {arg} ({var} would be {}/{})",
                                value.numer(),
                                value.denom()
                            ),
                            SolveError::Overflow => {
                                format!("{param} cannot equal {arg} with a 64-bit {var}")
                            }
                        };
                        self.size_mismatch(callee, args, arg_tys, *i, &bindings, why);
                        return None;
                    }
                }
            }
            if !progress {
                break;
            }
        }
        for (i, param, arg) in pairs {
            let value = param.substitute(&mut |v| bound(&bindings, v));
            let why = match value {
                Ok(value) if !value.conflicts(arg) => continue,
                Ok(value) => {
                    // A variable bound by another argument to a different extent.
                    if let Some(var) = param.as_var()
                        && let Some(first) = bindings.iter().find(|b| b.var == *var)
                    {
                        let conflict =
                            (var.name.clone(), first.value.clone(), first.from, arg.clone());
                        let param_span = callee.param_spans.get(*i).copied().flatten();
                        self.argument_shape_error(
                            args[*i],
                            &arg_tys[*i],
                            &callee.fn_ty.params[*i],
                            *i,
                            callee,
                            param_span,
                            Some((conflict, args)),
                        );
                        return None;
                    }
                    match param.to_string() == value.to_string() {
                        true => String::new(),
                        false => format!("{param} is {value}"),
                    }
                }
                Err(error) => format!("{param} is not a size: {error}"),
            };
            self.size_mismatch(callee, args, arg_tys, *i, &bindings, why);
            return None;
        }
        Some(bindings)
    }

    /// An argument whose shape does not fit its parameter's, saying why and where the sizes
    /// involved were bound.
    fn size_mismatch(
        &mut self,
        callee: &Callee,
        args: &[ExprId],
        arg_tys: &[Ty],
        index: usize,
        bindings: &[Binding],
        why: String,
    ) {
        let arg = args[index];
        let param_ty = &callee.fn_ty.params[index];
        let arg_ty = &arg_tys[index];
        let mut message = format!("{} must be {param_ty}, found {arg_ty}", callee.argument(index));
        let dims = match param_ty {
            Ty::Record(record) => Some(record.sizes.as_slice()),
            other => other.shape().and_then(Shape::dims),
        };
        let vars =
            dims.map_or(Vec::new(), |dims| dims.iter().flat_map(Dim::vars).collect::<Vec<_>>());
        let mut because: Vec<String> = Vec::new();
        let mut labels: Vec<(HirSpan, String)> = Vec::new();
        for binding in bindings.iter().filter(|b| vars.contains(&b.var)) {
            if binding.from == index {
                because.push(format!("{} = {}", binding.var, binding.value));
                continue;
            }
            let from = args[binding.from];
            because.push(format!(
                "{} = {} from argument {} ({} is {})",
                binding.var,
                binding.value,
                binding.from + 1,
                self.describe(from),
                arg_tys[binding.from]
            ));
            labels
                .push((self.expr_span(from), format!("{} is {} here", binding.var, binding.value)));
        }
        because.dedup();
        if !because.is_empty() && !why.contains(" would be ") {
            message.push_str(&format!(" (with {})", because.join(", ")));
        }
        if !why.is_empty() {
            message.push_str(&format!(": {why}"));
        }
        let span = self.expr_span(arg);
        let param_span = callee.param_spans.get(index).copied().flatten();
        let diagnostic = self.report(Code::ShapeVarConflict, span, message);
        for (span, text) in labels {
            diagnostic.label(span, text);
        }
        if let Some(param) = param_span {
            let what = if callee.fields.is_some() { "field" } else { "parameter" };
            diagnostic.label(param, format!("{what} declared {param_ty} here"));
        }
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
                match &callee.fields {
                    Some(fields) => format!(
                        "in this `{}`, size {var} is {bound} from field `{}` ({first} is {first_ty}) but {found} from field `{}` ({this} is {arg_ty})",
                        callee.name,
                        fields.get(*j).cloned().unwrap_or_default(),
                        fields.get(index).cloned().unwrap_or_default(),
                    ),
                    None => format!(
                        "in this call to `{}`, shape variable {var} is {bound} from argument {} ({first} is {first_ty}) but {found} from argument {} ({this} is {arg_ty})",
                        callee.name,
                        j + 1,
                        index + 1
                    ),
                }
            }
            None => format!("{} must be {param_ty}, found {arg_ty}", callee.argument(index)),
        };
        let what = if callee.fields.is_some() { "field" } else { "parameter" };
        let help = callee.mapped.as_ref().and_then(|mapped| match &conflict {
            Some(((var, ..), _)) => (*var == mapped.batch.name).then(|| {
                "`vmap` takes slice i of every batched argument together, so their leading extents are one batch extent".to_owned()
            }),
            None => mapped.help(index, arg_ty, param_ty),
        });
        let diagnostic = self.report(Code::ShapeVarConflict, span, message);
        if let Some(param) = param_span {
            diagnostic.label(param, format!("{what} declared {param_ty} here"));
        }
        if let Some(help) = help {
            diagnostic.help(help);
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
        if op == TransformOp::Vmap {
            return self.vmap_callee(expr, wrt, base);
        }
        if op == TransformOp::Checkpoint {
            if let Some(record) = params.iter().chain([&ret]).find(|ty| matches!(ty, Ty::Record(_)))
            {
                self.report(
                    Code::RecordOperand,
                    span,
                    format!("`checkpoint` of `{name}`, which takes or returns the record {record}: checkpointed functions take and return floats and tensors"),
                )
                .help("checkpoint a function of the record's fields");
                return None;
            }
            // The function itself: any parameters, any result.
            self.one_result(op, span, &base)?;
            if let Some(steps) = wrt {
                return self.checkpoint_segments(expr, steps, base);
            }
            let fn_ty = base.fn_ty.clone();
            let name = format!("checkpoint({name})");
            return Some(Callee {
                fn_ty,
                param_spans: base.param_spans,
                name,
                decl: base.decl,
                fields: None,
                mapped: None,
            });
        }
        let indices = match (op, wrt) {
            (TransformOp::Grad | TransformOp::ValueAndGrad, Some(wrt)) => {
                self.transform_indices(op, wrt)?
            }
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
            (_, None) => vec![(0, span)],
        };
        if params.is_empty() {
            self.report(
                Code::ParamIndexOutOfRange,
                span,
                format!("`{name}` has no parameters to differentiate in"),
            );
            return None;
        }
        let mut wrt_tys = Vec::with_capacity(indices.len());
        for &(index, wrt_span) in &indices {
            let k = self.param_index(index, wrt_span, &base)?;
            let wrt_ty = params[k].clone();
            // `grad`, `value_and_grad`, `jvp` and `vjp` differentiate in every leaf of a record
            // (tangents and cotangents are records of its type); a Hessian with respect to a
            // record would be a record of records, one block for each pair of fields.
            if let Ty::Record(_) = wrt_ty
                && op == TransformOp::Hessian
            {
                self.report(
                    Code::RecordOperand,
                    span,
                    format!(
                        "`hessian` of `{name}` in parameter {k}, the record {wrt_ty}: its second derivatives would be a block for each pair of fields, which no record type holds"
                    ),
                )
                .help("take the Hessian with respect to one field, through a function that takes that field and builds the record; `jvp` of `grad` with respect to a field gives Hessian-vector products");
                return None;
            }
            if !self.is_differentiable(&wrt_ty) && !wrt_ty.is_error() {
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
            wrt_tys.push(wrt_ty);
        }
        let wrt_ty = wrt_tys[0].clone();
        if let Ty::Record(_) = ret {
            self.report(
                Code::RecordOperand,
                span,
                format!(
                    "`{}` of `{name}`, which returns the record {ret}: transforms differentiate float and tensor results",
                    op.name()
                ),
            )
            .help("differentiate a function that returns one float or tensor computed from the record");
            return None;
        }
        self.one_result(op, span, &base)?;
        let needs_scalar =
            matches!(op, TransformOp::Grad | TransformOp::ValueAndGrad | TransformOp::Hessian);
        if needs_scalar && !ret.is_one_element() {
            let diagnostic = self.report(
                Code::GradOfNonScalar,
                span,
                format!(
                    "`{}` needs a function that returns a float (or a tensor of one element), but `{name}` returns {ret}",
                    op.name()
                ),
            );
            diagnostic.help("differentiate a scalar such as `sum(...)` of the result, or use `jacobian` or `vjp`");
            if let Some(decl) = base.decl {
                diagnostic.label(decl, format!("`{name}` returns {ret}"));
            }
            return None;
        }
        let differentiated = indices.iter().map(|&(index, _)| index as usize).collect();
        self.result.transform_params.insert(expr, differentiated);
        // A list of one parameter gives its gradient alone: a tuple has at least two elements.
        let gradients = match wrt_tys.len() {
            1 => wrt_ty,
            _ => Ty::Tuple(wrt_tys.clone()),
        };
        let mut param_spans = base.param_spans.clone();
        let fn_ty = match op {
            TransformOp::Grad => FnTy { params: params.clone(), ret: gradients },
            TransformOp::ValueAndGrad => {
                let elements = std::iter::once(ret).chain(wrt_tys).collect();
                FnTy { params: params.clone(), ret: Ty::Tuple(elements) }
            }
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
            TransformOp::Hessian | TransformOp::Jacobian => {
                // The result's axes followed by the parameter's: the Jacobian of `grad(f)` for
                // `hessian`, whose result is the parameter's type.
                let out_ty = if op == TransformOp::Hessian { &params[0] } else { &ret };
                let out = match (out_ty, &params[0]) {
                    (Ty::Error, _) | (_, Ty::Error) => Ty::Error,
                    (Ty::Float, Ty::Float) => Ty::Float,
                    (Ty::Tensor(Shape::Ranked(out)), Ty::Float) => Ty::tensor(out.clone()),
                    (Ty::Float, Ty::Tensor(Shape::Ranked(input))) => Ty::tensor(input.clone()),
                    (Ty::Tensor(Shape::Ranked(out)), Ty::Tensor(Shape::Ranked(input))) => {
                        Ty::tensor(out.iter().chain(input).cloned().collect())
                    }
                    (Ty::Float | Ty::Tensor(_), Ty::Float | Ty::Tensor(_)) => Ty::unranked(),
                    // The derivatives of a float in each field: its gradient, a record.
                    (Ty::Float, Ty::Record(_)) => params[0].clone(),
                    (Ty::Tensor(_), Ty::Record(_)) => {
                        self.report(
                            Code::RecordOperand,
                            span,
                            format!(
                                "`jacobian` of `{name}`, which returns {ret}, with respect to the record {}: each field's block would have the result's axes before the field's, which no record type holds",
                                params[0]
                            ),
                        )
                        .help("take the Jacobian with respect to one field, through a function that takes that field and builds the record, or pull back one cotangent with `vjp`");
                        return None;
                    }
                    _ => {
                        self.report(
                            Code::TransformShape,
                            span,
                            format!(
                                "`jacobian` needs `{name}` to return a float or a tensor, but it returns {ret}"
                            ),
                        );
                        return None;
                    }
                };
                FnTy { params: params.clone(), ret: out }
            }
            // Both return above, with their own types.
            TransformOp::Checkpoint | TransformOp::Vmap => FnTy { params: params.clone(), ret },
        };
        Some(Callee {
            fn_ty,
            param_spans,
            name: format!("{}({name})", op.name()),
            decl: base.decl,
            fields: None,
            mapped: None,
        })
    }
}

impl InferCtx<'_> {
    /// `checkpoint(segment, n)`: `segment` is a function `T segment(T x, A..., int steps)` that
    /// runs `steps` steps from `x`, and the result is the function `T (T x, A...)` that runs `n`
    /// of them in segments whose recordings are recomputed (see `docs/reference/autodiff.md`).
    fn checkpoint_segments(&mut self, expr: ExprId, steps: ExprId, base: Callee) -> Option<Callee> {
        let name = base.name.clone();
        let span = self.expr_span(expr);
        let steps_ty = self.result.type_of_expr(steps).clone();
        if !matches!(steps_ty, Ty::Int | Ty::Error) {
            let steps_span = self.expr_span(steps);
            self.report(
                Code::CheckpointSegment,
                steps_span,
                format!("the step count of `checkpoint(f, n)` is an `int`, found {steps_ty}"),
            );
            return None;
        }
        let func = match self.body.exprs[expr] {
            Expr::Transform { func, .. } => func,
            _ => return None,
        };
        if !matches!(self.body.exprs[func], Expr::Name { .. }) {
            let func_span = self.expr_span(func);
            self.report(
                Code::CheckpointSegment,
                func_span,
                "`checkpoint(f, n)` repeats a function named by `f`, not a derivative".to_owned(),
            )
            .help("write a function that runs the steps, and differentiate `checkpoint(f, n)` instead");
            return None;
        }
        let FnTy { params, ret } = base.fn_ty.clone();
        let fits = params.len() >= 2
            && params.last().is_some_and(|last| matches!(last, Ty::Int | Ty::Error))
            && (params[0] == ret || params[0].is_error() || ret.is_error())
            && (ret.is_differentiable() || ret.is_error());
        if !fits {
            let shown: Vec<String> = params.iter().map(Ty::to_string).collect();
            let diagnostic = self.report(
                Code::CheckpointSegment,
                span,
                format!(
                    "`checkpoint(f, n)` repeats a segment `T f(T x, ..., int steps)` that runs `steps` steps from `x`, but `{name}` is `{ret} {name}({})`",
                    shown.join(", ")
                ),
            );
            diagnostic.help("its first parameter and its result have one type (a float or a tensor), and its last parameter is the number of steps, an `int`");
            if let Some(decl) = base.decl {
                diagnostic.label(decl, format!("`{name}` is defined here"));
            }
            return None;
        }
        let mut param_spans = base.param_spans.clone();
        param_spans.pop();
        let fn_ty = FnTy { params: params[..params.len() - 1].to_vec(), ret };
        Some(Callee {
            fn_ty,
            param_spans,
            name: format!("checkpoint({name}, n)"),
            decl: base.decl,
            fields: None,
            mapped: None,
        })
    }

    /// The check every transform but `vmap` makes of the function it applies to: one result, not
    /// a tuple. `None` after reporting a tuple.
    fn one_result(&mut self, op: TransformOp, span: HirSpan, base: &Callee) -> Option<()> {
        let (name, ret) = (&base.name, &base.fn_ty.ret);
        let Ty::Tuple(elements) = ret else { return Some(()) };
        let count = elements.len();
        let (does, help) = match op {
            TransformOp::Checkpoint => (
                "recomputes",
                "checkpoint a function that calls `{name}` and returns the one result needed",
            ),
            _ => (
                "differentiates",
                "differentiate a function that calls `{name}` and returns the one result to differentiate",
            ),
        };
        let diagnostic = self.report(
            Code::TransformOfTuple,
            span,
            format!(
                "`{}` {does} a function of one result, but `{name}` returns {count} values: {ret}",
                op.name()
            ),
        );
        diagnostic.help(help.replace("{name}", name));
        if let Some(decl) = base.decl {
            diagnostic.label(decl, format!("`{name}` returns {ret}"));
        }
        None
    }

    /// The parameter `index` of a transform's list (`grad(f, k)`, `vmap(f, [i, j])`), or `None`
    /// after reporting that the function has no such parameter.
    fn param_index(&mut self, index: i64, span: HirSpan, base: &Callee) -> Option<usize> {
        let (name, count) = (&base.name, base.fn_ty.params.len());
        if index >= 0 && (index as usize) < count {
            return Some(index as usize);
        }
        let diagnostic = self.report(
            Code::ParamIndexOutOfRange,
            span,
            format!(
                "`{name}` has {count} parameter{}, so index {index} is out of range (indices start at 0)",
                if count == 1 { "" } else { "s" }
            ),
        );
        if let Some(decl) = base.decl {
            diagnostic.label(decl, format!("`{name}` is defined here"));
        }
        None
    }

    /// `vmap(f)`, `vmap(f, k)` or `vmap(f, [i, j])`: `f` mapped over the leading axis of the
    /// listed parameters (all by default), whose types gain a leading batch extent, a size
    /// variable of its own that the call binds like any other (so batched arguments of
    /// different extents are the usual E0209); the others are passed whole to every call. The
    /// result, or each element of a tuple of results, gains the batch extent in front.
    fn vmap_callee(&mut self, expr: ExprId, wrt: Option<ExprId>, base: Callee) -> Option<Callee> {
        let name = base.name.clone();
        let span = self.expr_span(expr);
        let FnTy { params, ret } = base.fn_ty.clone();
        if params.is_empty() {
            self.report(
                Code::ParamIndexOutOfRange,
                span,
                format!("`{name}` has no parameters to map over"),
            );
            return None;
        }
        let indices = match wrt {
            Some(wrt) => self.transform_indices(TransformOp::Vmap, wrt)?,
            None => (0..params.len()).map(|k| (k as i64, span)).collect(),
        };
        // `batch`, or `batch2` around another `vmap`, ...: a variable of this expression alone.
        let depth = name.matches("vmap(").count();
        let batch = SizeVar {
            def: self.def,
            local: LocalId::from_raw(RawIdx::from_u32(u32::MAX - expr.into_raw().into_u32())),
            name: match depth {
                0 => SmolStr::new("batch"),
                _ => SmolStr::new(format!("batch{}", depth + 1)),
            },
        };
        let stacked = |ty: &Ty| match ty {
            Ty::Float => Some(Ty::tensor(vec![Dim::var(batch.clone())])),
            Ty::Tensor(Shape::Ranked(dims)) => Some(Ty::tensor(
                std::iter::once(Dim::var(batch.clone())).chain(dims.iter().cloned()).collect(),
            )),
            Ty::Tensor(_) => Some(Ty::unranked()),
            Ty::Error => Some(Ty::Error),
            _ => None,
        };
        let mut batched = params.clone();
        let mut mapped = Vec::with_capacity(indices.len());
        for &(index, wrt_span) in &indices {
            let k = self.param_index(index, wrt_span, &base)?;
            let Some(ty) = stacked(&params[k]) else {
                let param_ty = &params[k];
                let diagnostic = self.report(
                    Code::VmapOperand,
                    wrt_span,
                    format!(
                        "`vmap` maps over the leading axis of float and tensor parameters, but parameter {k} of `{name}` is {param_ty}"
                    ),
                );
                if let Some(Some(param)) = base.param_spans.get(k) {
                    diagnostic.label(*param, format!("parameter {k} is {param_ty}"));
                }
                // The listed parameters that can be batched, or else every one that can.
                let can = |j: &usize| stacked(&params[*j]).is_some();
                let listed: Vec<usize> = (0..params.len())
                    .filter(|j| can(j) && indices.iter().any(|&(i, _)| i == *j as i64))
                    .collect();
                let others: Vec<String> = match listed.is_empty() {
                    true => (0..params.len()).filter(can).map(|j| j.to_string()).collect(),
                    false => listed.iter().map(usize::to_string).collect(),
                };
                match others.is_empty() {
                    true => diagnostic.help(format!(
                        "pass {param_ty} values whole to every call, and map over a float or tensor parameter"
                    )),
                    false => diagnostic.help(format!(
                        "to pass it whole to every call, list the parameters to map over: `vmap({name}, [{}])`",
                        others.join(", ")
                    )),
                };
                return None;
            };
            batched[k] = ty;
            mapped.push(k);
        }
        let elements = match &ret {
            Ty::Tuple(elements) => elements.clone(),
            other => vec![other.clone()],
        };
        let mut results = Vec::with_capacity(elements.len());
        for element in &elements {
            let Some(ty) = stacked(element) else {
                let diagnostic = self.report(
                    Code::VmapOperand,
                    span,
                    format!(
                        "`vmap` stacks float and tensor results along a new leading axis, but `{name}` returns {ret}"
                    ),
                );
                if let Some(decl) = base.decl {
                    diagnostic.label(decl, format!("`{name}` returns {ret}"));
                }
                diagnostic.help(match element {
                    Ty::Record(_) => "map a function that returns the record's fields as a tuple",
                    _ => "map a function that returns floats or tensors",
                });
                return None;
            };
            results.push(ty);
        }
        let ret = match ret {
            Ty::Tuple(_) => Ty::Tuple(results),
            _ => results.swap_remove(0),
        };
        self.result.transform_params.insert(expr, mapped.clone().into_boxed_slice());
        Some(Callee {
            fn_ty: FnTy { params: batched, ret },
            param_spans: base.param_spans,
            name: format!("vmap({name})"),
            decl: base.decl,
            fields: None,
            mapped: Some(Mapped { batch, params: mapped, function: name }),
        })
    }

    /// The parameter indices of `grad(f, k)` or `grad(f, [i, j])` (JAX's `argnums`), each with
    /// its span: integer literals, a list of at least one and without repeats. `None` after
    /// reporting what is wrong.
    fn transform_indices(&mut self, op: TransformOp, wrt: ExprId) -> Option<Vec<(i64, HirSpan)>> {
        let wrt_span = self.expr_span(wrt);
        let Expr::TensorLit(items) = self.body.exprs[wrt].clone() else {
            let Some(k) = self.const_int(wrt) else {
                self.report(
                    Code::ParamIndexOutOfRange,
                    wrt_span,
                    format!(
                        "the parameter index of `{}(f, k)` must be an integer literal",
                        op.name()
                    ),
                );
                return None;
            };
            return Some(vec![(k, wrt_span)]);
        };
        if items.is_empty() {
            self.report(
                Code::ParamList,
                wrt_span,
                format!(
                    "`{}(f, [])` lists no parameter to {}",
                    op.name(),
                    if op == TransformOp::Vmap { "map over" } else { "differentiate in" }
                ),
            )
            .help(format!("list at least one: `{}(f, [0])`", op.name()));
            return None;
        }
        let mut indices: Vec<(i64, HirSpan)> = Vec::with_capacity(items.len());
        for item in items {
            let item_span = self.expr_span(item);
            let Some(k) = self.const_int(item) else {
                self.report(
                    Code::ParamList,
                    item_span,
                    format!(
                        "the parameter indices of `{}(f, [i, j])` must be integer literals",
                        op.name()
                    ),
                );
                return None;
            };
            if let Some(&(_, first)) = indices.iter().find(|(earlier, _)| *earlier == k) {
                self.report(Code::ParamList, item_span, format!("parameter {k} is listed twice"))
                    .label(first, "first listed here");
                return None;
            }
            indices.push((k, item_span));
        }
        Some(indices)
    }
}

/// `ty` with the callee's shape variables replaced by what a call bound them to; sizes that
/// involve unbound ones become unknown.
pub(crate) fn substitute(ty: &Ty, substitution: &[(SizeVar, Dim)]) -> Ty {
    match ty {
        Ty::Tensor(Shape::Ranked(dims)) => {
            Ty::tensor(dims.iter().map(|dim| substitute_dim(dim, substitution)).collect())
        }
        Ty::Tuple(elements) => {
            Ty::Tuple(elements.iter().map(|element| substitute(element, substitution)).collect())
        }
        Ty::Record(record) => {
            let sizes = record.sizes.iter().map(|dim| substitute_dim(dim, substitution)).collect();
            Ty::Record(std::sync::Arc::new(RecordTy { sizes, ..(**record).clone() }))
        }
        other => other.clone(),
    }
}

/// A size with the callee's shape variables replaced by what a call bound them to.
fn substitute_dim(dim: &Dim, substitution: &[(SizeVar, Dim)]) -> Dim {
    dim.substitute(&mut |var| substitution.iter().find(|(v, _)| v == var).map(|(_, d)| d.clone()))
        .unwrap_or(Dim::Unknown)
}

/// A size variable of a callee as a call bound it: to what, and by which argument.
#[derive(Debug, Clone)]
struct Binding {
    var: SizeVar,
    value: Dim,
    from: usize,
}
