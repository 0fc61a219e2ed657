//! Typing expressions: names, literals, operators, indexing, casts, assignments, and the
//! conversions of section 2.

use smol_str::SmolStr;
use syntax::{SyntaxNode, TextRange, TextSize};

use super::{InferCtx, Resolution, Target, mask, ty_of_ref};
use crate::{
    body::{
        ArithOp, BinaryOp, CmpOp, Expr, ExprId, HirSpan, IndexEntry, Literal, LocalKind, LogicOp,
        Qualifier, RejectedOp, RelSpan, TypeRef, UnaryOp, body_query,
    },
    db::def_source,
    diagnostics::{Code, HirFix, a},
    ty::{
        Dim, MatmulError, Shape, SizeExpr, SizeOp, SizeVar, Ty, broadcast, matmul,
        shapes_compatible,
    },
};

/// A declaration of a tuple's `i`-th element, for help texts: `float v0`, `Tensor v1[3]`.
fn binding_text(ty: &Ty, i: usize) -> String {
    match ty {
        Ty::Tensor(Shape::Ranked(dims)) => {
            let dims: String = dims.iter().map(|dim| format!("[{dim}]")).collect();
            format!("Tensor v{i}{dims}")
        }
        Ty::Tensor(Shape::Unranked) => format!("Tensor v{i}"),
        other => format!("{other} v{i}"),
    }
}

/// Operand descriptions longer than this are replaced by "the left operand" and such.
const MAX_QUOTED: usize = 32;

impl InferCtx<'_> {
    pub(crate) fn infer_expr(&mut self, expr: ExprId) -> Ty {
        let ty = stacker::maybe_grow(
            crate::body::lower::STACK_RED_ZONE,
            crate::body::lower::STACK_SEGMENT,
            || self.infer_expr_inner(expr),
        );
        self.result.expr_types.insert(expr, ty.clone());
        ty
    }

    fn infer_expr_inner(&mut self, expr: ExprId) -> Ty {
        match &self.body.exprs[expr] {
            Expr::Missing => Ty::Error,
            Expr::Literal(literal) => match literal {
                Literal::Int(_) => Ty::Int,
                Literal::Float(_) => Ty::Float,
                Literal::Char(_) => Ty::Char,
                Literal::Bool(_) => Ty::Bool,
                Literal::String(_) => Ty::Str,
            },
            Expr::Name { name, local } => {
                let ty = self.infer_name(expr, name, *local);
                match ty {
                    Ty::Fn(_) => {
                        let span = self.expr_span(expr);
                        self.report(
                            Code::FunctionAsValue,
                            span,
                            format!(
                                "`{name}` is a function; it can only be called, as in `{name}(...)`"
                            ),
                        );
                        Ty::Error
                    }
                    other => other,
                }
            }
            Expr::TensorLit(elements) => self.infer_tensor_lit(expr, &elements.clone()),
            Expr::Call { callee, args } => self.infer_call(expr, *callee, &args.clone()),
            Expr::Transform { op, .. } => {
                let op = *op;
                let span = self.expr_span(expr);
                self.report(
                    Code::TransformNotCalled,
                    span,
                    format!(
                        "`{}(f)` is a function: call it, as in `{}(f)(x)`",
                        op.name(),
                        op.name()
                    ),
                )
                .help("derivatives of functions can only be called or passed to another transform");
                Ty::Error
            }
            Expr::Index { base, entries } => self.infer_index(expr, *base, &entries.clone()),
            Expr::Unary { op, operand } => self.infer_unary(expr, *op, *operand),
            Expr::IncDec { target, increment, .. } => {
                let (target, increment) = (*target, *increment);
                let ty = self.infer_expr(target);
                self.check_write(target);
                if ty.is_error() || matches!(ty, Ty::Int | Ty::Float | Ty::Char) {
                    return ty;
                }
                let op = if increment { "++" } else { "--" };
                let span = self.expr_span(target);
                self.report(
                    Code::InvalidOperand,
                    span,
                    format!("`{op}` needs an int, float or char, found {ty}"),
                );
                Ty::Error
            }
            Expr::Cast { ty, operand } => self.infer_cast(expr, &ty.clone(), *operand),
            Expr::SizeofExpr(inner) => {
                let ty = self.infer_expr(*inner);
                self.check_value(*inner, &ty);
                Ty::Int
            }
            Expr::SizeofType(_) => Ty::Int,
            Expr::Binary { op, lhs, rhs } => {
                let (op, lhs, rhs) = (*op, *lhs, *rhs);
                let lhs_ty = self.infer_expr(lhs);
                let rhs_ty = self.infer_expr(rhs);
                self.binary_result(expr, op, lhs, &lhs_ty, rhs, &rhs_ty)
            }
            Expr::Assign { op, target, value } => self.infer_assign(expr, *op, *target, *value),
            Expr::Ternary { cond, then_branch, else_branch } => {
                let (cond, then_branch, else_branch) = (*cond, *then_branch, *else_branch);
                self.infer_condition(cond);
                let then_ty = self.infer_expr(then_branch);
                let else_ty = self.infer_expr(else_branch);
                for (branch, ty) in [(then_branch, &then_ty), (else_branch, &else_ty)] {
                    if matches!(ty, Ty::Tuple(_)) && !self.check_value(branch, ty) {
                        return Ty::Error;
                    }
                }
                self.join_branches(else_branch, &then_ty, &else_ty)
            }
            Expr::RecordLit { def, name, fields } => {
                let (def, name, fields) = (*def, name.clone(), fields.clone());
                self.infer_record_lit(expr, def, &name, &fields)
            }
            Expr::Field { base, name, span } => {
                let (base, name, span) = (*base, name.clone(), *span);
                self.infer_field(expr, base, &name, span)
            }
            Expr::Tuple(elements) => {
                // `return (a, b);` types its tuple itself (see `infer_return`): anywhere else a
                // tuple expression has nowhere to go.
                for &element in &elements.clone() {
                    let ty = self.infer_expr(element);
                    self.check_value(element, &ty);
                }
                let span = self.expr_span(expr);
                self.report(
                    Code::TupleValue,
                    span,
                    "a tuple `(a, b)` can only be the value of `return` in a function of several results".to_owned(),
                )
                .help("a function of several results is declared `function (float, Tensor[n]) f(...)`");
                Ty::Error
            }
        }
    }

    /// The types of a tuple expression's elements, each checked as a value.
    pub(crate) fn infer_tuple_elements(&mut self, elements: &[ExprId]) -> Vec<Ty> {
        elements
            .iter()
            .map(|&element| {
                let ty = self.infer_expr(element);
                if self.check_value(element, &ty) { ty } else { Ty::Error }
            })
            .collect()
    }

    /// The type of a name, recording its resolution.
    pub(crate) fn infer_name(
        &mut self,
        expr: ExprId,
        name: &SmolStr,
        local: Option<crate::body::LocalId>,
    ) -> Ty {
        let resolution = match local {
            Some(local) => Some(Resolution::Local(local)),
            None => self.resolve_global(expr, name),
        };
        let Some(resolution) = resolution else { return Ty::Error };
        self.result.resolutions.insert(expr, resolution);
        match resolution {
            Resolution::Local(local) => self.result.type_of_local(local).clone(),
            Resolution::Global { def, local } => self.global_ty(def, local),
            Resolution::Function(def) => Ty::Fn(Box::new(self.fn_ty_of(def))),
            Resolution::Builtin(builtin) => {
                let span = self.expr_span(expr);
                self.report(
                    Code::FunctionAsValue,
                    span,
                    format!(
                        "`{}` is a built-in function; it can only be called, as in `{}`",
                        name,
                        builtin.info().signature
                    ),
                );
                Ty::Error
            }
        }
    }

    fn infer_tensor_lit(&mut self, expr: ExprId, elements: &[ExprId]) -> Ty {
        let mut element_shape: Option<Shape> = None;
        let mut scalars = 0usize;
        let mut error = false;
        for &element in elements {
            let ty = self.infer_expr(element);
            match ty {
                Ty::Int | Ty::Float => scalars += 1,
                Ty::Error => error = true,
                Ty::Tensor(shape) => match &element_shape {
                    None => element_shape = Some(shape),
                    Some(first) if shapes_compatible(first, &shape) => {}
                    Some(first) => {
                        let span = self.expr_span(element);
                        let first = first.clone();
                        self.report(
                            Code::RaggedTensorLiteral,
                            span,
                            format!("rows of a tensor literal must have one shape: this row is {shape}, the first is {first}"),
                        );
                        return Ty::Error;
                    }
                },
                other => {
                    let span = self.expr_span(element);
                    if !self.check_value(element, &other) {
                        return Ty::Error;
                    }
                    self.report(
                        Code::TypeMismatch,
                        span,
                        format!("tensor elements are numbers, found {other}"),
                    )
                    .help("cast it, as in `(float)x`");
                    return Ty::Error;
                }
            }
        }
        if error {
            return Ty::Error;
        }
        let count = elements.len() as i64;
        match element_shape {
            None => Ty::known_tensor(&[count]),
            Some(_) if scalars > 0 => {
                let span = self.expr_span(expr);
                self.report(
                    Code::RaggedTensorLiteral,
                    span,
                    "a tensor literal mixes numbers and rows".to_owned(),
                )
                .help("write every element at the same nesting depth");
                Ty::Error
            }
            Some(Shape::Ranked(dims)) => {
                let mut out = vec![Dim::Known(count)];
                out.extend(dims);
                Ty::tensor(out)
            }
            Some(Shape::Unranked) => Ty::unranked(),
        }
    }

    /// Reports a value that cannot be used as an operand; `false` when it was reported.
    pub(crate) fn check_value(&mut self, expr: ExprId, ty: &Ty) -> bool {
        let span = self.expr_span(expr);
        match ty {
            Ty::Str if self.is_format_call(expr) => {
                self.report(
                    Code::StringValue,
                    span,
                    "the text of `format` can only be printed; it is not a value".to_owned(),
                )
                .help("write it where it is used: `print(format(...))` or `write(format(...))`");
                false
            }
            Ty::Str => {
                self.report(
                    Code::StringValue,
                    span,
                    "a string can only be an argument of a built-in such as `print` or `load`"
                        .to_owned(),
                );
                false
            }
            Ty::Void => {
                self.report(
                    Code::VoidValue,
                    span,
                    "this call returns void; it has no value".to_owned(),
                );
                false
            }
            Ty::Fn(_) => {
                self.report(
                    Code::FunctionAsValue,
                    span,
                    "a function can only be called".to_owned(),
                );
                false
            }
            Ty::Tuple(elements) => {
                let count = elements.len();
                self.report(
                    Code::TupleValue,
                    span,
                    format!("this is a tuple of {count} values, {ty}: a tuple can only be returned or destructured"),
                )
                .help(format!(
                    "take its values apart first: `({}) = ...;`",
                    elements
                        .iter()
                        .enumerate()
                        .map(|(i, element)| binding_text(element, i))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                false
            }
            _ => true,
        }
    }

    /// `base[entries]` as NumPy's basic indexing: an integer drops its axis, a slice keeps it
    /// (with a static extent when its bounds and step are constants or size expressions), `...`
    /// stands for the axes no entry names and `none` inserts an axis of extent 1.
    fn infer_index(&mut self, expr: ExprId, base: ExprId, entries: &[IndexEntry]) -> Ty {
        let base_ty = self.infer_expr(base);
        // NumPy's advanced indexing: the index tensors, and the integers beside them, broadcast
        // together to the shape of the indexed axes. A mask stands for the index tensors of its
        // nonzero positions, one per axis it covers, each of a run-time extent.
        let mut indexed: Option<Shape> = None;
        let mut is_indexed = Vec::with_capacity(entries.len());
        // For each entry, the extents of the mask it is.
        let mut masks: Vec<Option<Vec<Dim>>> = Vec::with_capacity(entries.len());
        for entry in entries {
            let at = matches!(entry, IndexEntry::At(_));
            let mut mask = None;
            for part in entry.exprs() {
                let ty = self.infer_expr(part);
                self.check_index_type(part, &ty, at);
                let is_mask = at && mask::is_mask(self.body, &self.mask_locals, part);
                let ty = match ty {
                    Ty::Tensor(Shape::Ranked(dims)) if is_mask => {
                        self.result.mask_entries.push(part);
                        mask = Some(dims);
                        Ty::tensor(vec![Dim::Unknown])
                    }
                    Ty::Tensor(Shape::Unranked) if is_mask => {
                        self.result.mask_entries.push(part);
                        return Ty::unranked();
                    }
                    ty => ty,
                };
                if let (true, Ty::Tensor(shape)) = (at, &ty) {
                    let joined = match &indexed {
                        None => Ok(shape.clone()),
                        Some(joined) => broadcast(joined, shape),
                    };
                    match joined {
                        Ok(joined) => indexed = Some(joined),
                        Err(_) => {
                            let span = self.expr_span(part);
                            let previous = Ty::Tensor(indexed.clone().unwrap_or(Shape::Unranked));
                            self.report(
                                Code::BroadcastMismatch,
                                span,
                                format!(
                                    "the index tensors of one bracket must broadcast together: \
                                     this one is {ty}, the ones before it give {previous}"
                                ),
                            );
                            return Ty::Error;
                        }
                    }
                }
            }
            is_indexed.push(at);
            masks.push(mask);
        }
        let adjacent =
            match (is_indexed.iter().position(|&at| at), is_indexed.iter().rposition(|&at| at)) {
                (Some(first), Some(last)) => is_indexed[first..=last].iter().all(|&at| at),
                _ => true,
            };
        let first_indexed = is_indexed.iter().position(|&at| at);
        let dims = match base_ty {
            Ty::Error => return Ty::Error,
            Ty::Tensor(Shape::Unranked) => return Ty::unranked(),
            Ty::Tensor(Shape::Ranked(dims)) => dims,
            other => return self.index_non_tensor(expr, base, other),
        };
        let ellipses = entries.iter().filter(|e| matches!(e, IndexEntry::Ellipsis)).count();
        if ellipses > 1 {
            let span = self.expr_span(expr);
            self.report(
                Code::RankMismatch,
                span,
                format!("{ellipses} `...` in one index: at most one may stand for the other axes"),
            );
            return Ty::Error;
        }
        let named: usize = entries
            .iter()
            .zip(&masks)
            .map(|(entry, mask)| match (entry, mask) {
                (_, Some(mask)) => mask.len(),
                (IndexEntry::At(_) | IndexEntry::Slice { .. }, None) => 1,
                _ => 0,
            })
            .sum();
        if let Some(ty) = self.check_masks(base, entries, &masks, &dims, named) {
            return ty;
        }
        if named > dims.len() {
            let span = self.expr_span(expr);
            let base_text = self.describe(base);
            let base_ty = Ty::tensor(dims.clone());
            let message = match dims.len() {
                0 => format!(
                    "too many indices: {base_text} has no axis left to index (it is {base_ty})"
                ),
                rank => format!(
                    "too many indices: {base_text} is {base_ty}, with {rank} {}, but the index \
                     names {named}",
                    if rank == 1 { "axis" } else { "axes" }
                ),
            };
            self.report(Code::RankMismatch, span, message);
            return Ty::Error;
        }
        let indexed_dims = match &indexed {
            None => None,
            Some(Shape::Unranked) => return Ty::unranked(),
            Some(Shape::Ranked(dims)) => Some(dims.clone()),
        };
        let mut out = Vec::with_capacity(dims.len() + entries.len());
        if let (Some(indexed), false) = (&indexed_dims, adjacent) {
            out.extend(indexed.iter().cloned());
        }
        let mut axes = dims.iter();
        let mut dropped = false;
        for (position, entry) in entries.iter().enumerate() {
            match *entry {
                IndexEntry::NewAxis => out.push(Dim::Known(1)),
                IndexEntry::Ellipsis => out.extend(axes.by_ref().take(dims.len() - named).cloned()),
                IndexEntry::At(_) if masks[position].is_some() => {
                    let rank = masks[position].as_ref().map_or(0, Vec::len);
                    axes.by_ref().take(rank).for_each(drop);
                    dropped = true;
                    if let (Some(indexed), true) = (&indexed_dims, adjacent)
                        && Some(position) == first_indexed
                    {
                        out.extend(indexed.iter().cloned());
                    }
                }
                IndexEntry::At(index) => {
                    let Some(extent) = axes.next() else { return Ty::Error };
                    dropped = true;
                    if let (Some(indexed), true) = (&indexed_dims, adjacent)
                        && Some(position) == first_indexed
                    {
                        out.extend(indexed.iter().cloned());
                    }
                    if let (Dim::Known(n), Some(value)) = (extent, self.const_int(index))
                        && (value < -n || value >= *n)
                    {
                        let span = self.expr_span(index);
                        let base_text = self.describe(base);
                        let axis = dims.len() - axes.len() - 1;
                        let diagnostic = self.report(
                            Code::IndexOutOfRange,
                            span,
                            format!(
                                "index {value} is out of range for axis {axis} of {base_text}, \
                                 whose extent is {n}"
                            ),
                        );
                        if *n > 0 {
                            diagnostic.help(format!(
                                "valid indices are -{n} to {} (negative ones count from the end)",
                                n - 1
                            ));
                        }
                    }
                }
                IndexEntry::Slice { start, end, step } => {
                    let Some(extent) = axes.next() else { return Ty::Error };
                    match self.slice_extent(extent, start, end, step) {
                        Ok(dim) => out.push(dim),
                        Err(message) => {
                            let part = start.or(end).or(step).unwrap_or(expr);
                            let span = self.expr_span(part);
                            self.report(Code::IndexOutOfRange, span, message);
                            return Ty::Error;
                        }
                    }
                }
            }
        }
        out.extend(axes.cloned());
        let new_axes = entries.iter().any(|e| matches!(e, IndexEntry::NewAxis));
        match out.is_empty() && dropped && !new_axes && indexed_dims.is_none() {
            true => Ty::Float,
            false => Ty::tensor(out),
        }
    }

    /// E0230 for a mask whose extents cannot be those of the axes it selects from (a mask has the
    /// extents of the axes it covers, as in NumPy), or that runs past the last axis; `Some` with
    /// the type of the index when one is reported.
    fn check_masks(
        &mut self,
        base: ExprId,
        entries: &[IndexEntry],
        masks: &[Option<Vec<Dim>>],
        dims: &[Dim],
        named: usize,
    ) -> Option<Ty> {
        let mut axis = 0;
        for (entry, mask) in entries.iter().zip(masks) {
            let (part, mask) = match (entry, mask) {
                (IndexEntry::At(part), Some(mask)) => (*part, mask),
                (IndexEntry::Ellipsis, _) => {
                    axis += dims.len().saturating_sub(named);
                    continue;
                }
                (IndexEntry::At(_) | IndexEntry::Slice { .. }, None) => {
                    axis += 1;
                    continue;
                }
                (IndexEntry::NewAxis | IndexEntry::Slice { .. }, _) => continue,
            };
            let axes = dims.get(axis..(axis + mask.len()).min(dims.len())).unwrap_or_default();
            let mask_ty = Ty::tensor(mask.clone());
            let axes_text = axes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
            let message = if mask.is_empty() {
                format!(
                    "the mask is {mask_ty}, which selects from no axis: a mask has the extents \
                     of the axes it selects from"
                )
            } else if axes.len() < mask.len() {
                let left = match axes.len() {
                    0 => "no axis".to_owned(),
                    1 => format!("only 1 axis ([{axes_text}])"),
                    n => format!("only {n} axes ([{axes_text}])"),
                };
                format!(
                    "the mask is {mask_ty}, but {} has {left} from axis {axis} on",
                    self.describe(base)
                )
            } else if let Some(at) = mask.iter().zip(axes).position(|(m, a)| m.conflicts(a)) {
                format!(
                    "the mask is {mask_ty}, but {} has extent {} on axis {}, where the mask has \
                     {}: a mask has the extents of the axes it selects from",
                    self.describe(base),
                    axes[at],
                    axis + at,
                    mask[at]
                )
            } else {
                axis += mask.len();
                continue;
            };
            let span = self.expr_span(part);
            let base_span = self.expr_span(base);
            let base_ty = Ty::tensor(dims.to_vec());
            self.report(Code::MaskShape, span, message)
                .label(base_span, format!("this is {base_ty}"));
            return Some(Ty::Error);
        }
        None
    }

    /// The extent of `start:end:step` on an axis of `extent`. Constant bounds on a known axis
    /// follow the rule the engine applies ([`index_rules::slice`]): bounds in
    /// `-extent..=extent`, negative ones counting from the end, the start not past the end in
    /// the direction of the step. A bound that is neither a constant nor a size expression that
    /// cannot be negative gives an unknown extent, checked when the slice runs; so does a step
    /// other than 1 or -1 unless everything is constant.
    fn slice_extent(
        &self,
        extent: &Dim,
        start: Option<ExprId>,
        end: Option<ExprId>,
        step: Option<ExprId>,
    ) -> Result<Dim, String> {
        let zero_step = || "the step of a slice cannot be zero".to_owned();
        let step = match step {
            None => 1,
            Some(step) => match self.const_int(step) {
                Some(0) => return Err(zero_step()),
                Some(value) => value,
                None => return Ok(Dim::Unknown),
            },
        };
        // `Some(None)` for an omitted bound, `None` for one that is not a constant.
        let written = |b: Option<ExprId>| match b {
            None => Some(None),
            Some(b) => self.const_int(b).map(Some),
        };
        // All constant on a known axis: the exact rule.
        if let (Dim::Known(n), Some(lo), Some(hi)) = (extent, written(start), written(end)) {
            return match index_rules::slice(*n, lo, hi, Some(step)) {
                Ok(range) => Ok(Dim::Known(range.len)),
                Err(index_rules::SliceError::ZeroStep) => Err(zero_step()),
                Err(index_rules::SliceError::OutOfRange) => Err(format!(
                    "slice {} is out of range for an axis of extent {n} ({})",
                    index_rules::written(lo, hi, step),
                    index_rules::bounds_rule(n, step)
                )),
            };
        }
        // A bound as a position on the axis: a constant (a negative one counts from the end) or
        // a size expression that is never negative.
        let position = |b: ExprId| -> Dim {
            match self.const_int(b) {
                Some(c) if c < 0 => extent.add(&Dim::Known(c)),
                Some(c) => Dim::Known(c),
                None => match self.size_of_int_expr(b) {
                    Some(size) if size.is_always_valid() => {
                        Dim::from_expr(size).unwrap_or(Dim::Unknown)
                    }
                    _ => Dim::Unknown,
                },
            }
        };
        let known = |dim: &Dim| !matches!(dim, Dim::Unknown);
        let dim = match step {
            1 => {
                let lo = start.map_or(Dim::Known(0), position);
                let hi = end.map_or(extent.clone(), position);
                match known(&lo) && known(&hi) {
                    true => hi.sub(&lo),
                    false => Dim::Unknown,
                }
            }
            -1 => {
                let lo = start.map_or(extent.sub(&Dim::Known(1)), position);
                match end {
                    None if known(&lo) => lo.add(&Dim::Known(1)),
                    Some(hi) => {
                        let hi = position(hi);
                        match known(&lo) && known(&hi) {
                            true => lo.sub(&hi),
                            false => Dim::Unknown,
                        }
                    }
                    None => Dim::Unknown,
                }
            }
            _ => Dim::Unknown,
        };
        // Written from the normal form, so that `n - 1 + 1` reads `n`.
        Ok(match dim {
            Dim::Known(n) if n < 0 => Dim::Unknown,
            Dim::Expr(expr) => Dim::from_expr(expr.normal().to_expr()).unwrap_or(Dim::Unknown),
            dim => dim,
        })
    }

    /// The error of indexing a value that is not a tensor.
    fn index_non_tensor(&mut self, expr: ExprId, base: ExprId, other: Ty) -> Ty {
        if !self.check_value(base, &other) {
            return Ty::Error;
        }
        let base_text = self.describe(base);
        if let Expr::Index { base: inner, .. } = self.body.exprs[base] {
            let span = self.expr_span(expr);
            let root = self.describe(inner);
            self.report(
                Code::RankMismatch,
                span,
                format!(
                    "too many indices: {base_text} is already {}, so it cannot be indexed again",
                    a(&other)
                ),
            )
            .help(format!("index {root} once per axis"));
            return Ty::Error;
        }
        let span = self.expr_span(base);
        self.report(
            Code::IndexScalar,
            span,
            format!("cannot index {base_text}: it is {other}, not a tensor"),
        );
        Ty::Error
    }

    /// An index is an `int`; an entry that is not a slice bound may also be a tensor of indices
    /// (floats holding integers, checked when the index runs).
    fn check_index_type(&mut self, index: ExprId, ty: &Ty, tensor_allowed: bool) {
        match ty {
            Ty::Int | Ty::Char | Ty::Error => {}
            Ty::Tensor(_) if tensor_allowed => {}
            other => {
                if !self.check_value(index, other) {
                    return;
                }
                let span = self.expr_span(index);
                let diagnostic = self.report(
                    Code::TypeMismatch,
                    span,
                    format!("an index must be an int, found {other}"),
                );
                if matches!(other, Ty::Float | Ty::Bool) {
                    diagnostic.help("convert it: `(int)i`");
                    diagnostic.fix_insert("cast to int", span, "(int)");
                }
            }
        }
    }

    fn infer_unary(&mut self, expr: ExprId, op: UnaryOp, operand: ExprId) -> Ty {
        let ty = self.infer_expr(operand);
        if ty.is_error() {
            return Ty::Error;
        }
        match op {
            UnaryOp::Neg | UnaryOp::Plus => match ty {
                Ty::Int | Ty::Float | Ty::Tensor(_) => ty,
                Ty::Record(_) if self.lifts(&ty) => ty,
                Ty::Record(_) => {
                    let sign = if op == UnaryOp::Neg { "unary `-`" } else { "unary `+`" };
                    self.not_liftable(expr, sign, &ty);
                    Ty::Error
                }
                Ty::Char => Ty::Int,
                other => {
                    if self.check_value(operand, &other) {
                        let span = self.expr_span(expr);
                        let sign = if op == UnaryOp::Neg { "-" } else { "+" };
                        self.report(
                            Code::InvalidOperand,
                            span,
                            format!("unary `{sign}` needs a number or a tensor, found {other}"),
                        );
                    }
                    Ty::Error
                }
            },
            // The complement of a mask, element-wise.
            UnaryOp::Not if ty.is_tensor() => ty,
            UnaryOp::Not => {
                if self.check_value(operand, &ty) {
                    self.check_condition(operand, &ty);
                }
                Ty::Bool
            }
            UnaryOp::Rejected(rejected) => {
                let span = self.expr_span(expr);
                let (symbol, why) = match rejected {
                    RejectedOp::BitNot => ("~", "there is no bitwise complement in Nabla"),
                    RejectedOp::AddressOf => ("&", "Nabla has no pointers"),
                    RejectedOp::Deref => ("*", "Nabla has no pointers"),
                    RejectedOp::At => ("@", "`@` is the binary matrix product"),
                };
                self.report(
                    Code::RejectedOperator,
                    span,
                    format!("unary `{symbol}` is not supported: {why}"),
                );
                Ty::Error
            }
        }
    }

    fn infer_cast(&mut self, expr: ExprId, target: &TypeRef, operand: ExprId) -> Ty {
        let ty = self.infer_expr(operand);
        let target_ty = ty_of_ref(target);
        if ty.is_error() || target_ty.is_error() {
            return target_ty;
        }
        if !self.check_value(operand, &ty) {
            return Ty::Error;
        }
        let ok = match (&target_ty, &ty) {
            (
                Ty::Int | Ty::Float | Ty::Char | Ty::Bool,
                Ty::Int | Ty::Float | Ty::Char | Ty::Bool,
            ) => true,
            // A tensor of one element converts to a number; checked at run time.
            (Ty::Int | Ty::Float, Ty::Tensor(shape)) => shape.known_size().is_none_or(|n| n == 1),
            _ => false,
        };
        if !ok {
            let span = self.expr_span(expr);
            let help = match &target_ty {
                Ty::Tensor(_) => {
                    "tensors are built with `reshape`, `zeros` or `full`, not with a cast"
                }
                Ty::Void => "a cast to void has no use: drop the cast",
                _ => "reduce the tensor first, as with `sum(t)`, or take one element with `t[i]`",
            };
            self.report(Code::InvalidCast, span, format!("cannot cast {ty} to {target_ty}"))
                .help(help);
            return Ty::Error;
        }
        target_ty
    }

    /// The result of a binary operator on two typed operands.
    pub(crate) fn binary_result(
        &mut self,
        expr: ExprId,
        op: BinaryOp,
        lhs: ExprId,
        lhs_ty: &Ty,
        rhs: ExprId,
        rhs_ty: &Ty,
    ) -> Ty {
        if lhs_ty.is_error() || rhs_ty.is_error() {
            return Ty::Error;
        }
        if !self.check_value(lhs, lhs_ty) || !self.check_value(rhs, rhs_ty) {
            return Ty::Error;
        }
        if matches!(lhs_ty, Ty::Record(_)) || matches!(rhs_ty, Ty::Record(_)) {
            let (symbol, arith) = match op {
                BinaryOp::Arith(ArithOp::MatMul) => ("@", false),
                BinaryOp::Arith(
                    arith @ (ArithOp::Add
                    | ArithOp::Sub
                    | ArithOp::Mul
                    | ArithOp::Div
                    | ArithOp::Rem),
                ) => (arith_symbol(arith), true),
                BinaryOp::Arith(arith) => (arith_symbol(arith), false),
                BinaryOp::Cmp(cmp) => (cmp_symbol(cmp), false),
                BinaryOp::Logic(LogicOp::And) => ("&&", false),
                BinaryOp::Logic(LogicOp::Or) => ("||", false),
            };
            return self.record_binary(expr, symbol, arith, [(lhs, lhs_ty), (rhs, rhs_ty)]);
        }
        match op {
            BinaryOp::Arith(ArithOp::MatMul) => self.matmul_result(expr, lhs, lhs_ty, rhs, rhs_ty),
            BinaryOp::Arith(
                arith @ (ArithOp::Shl
                | ArithOp::Shr
                | ArithOp::BitAnd
                | ArithOp::BitXor
                | ArithOp::BitOr),
            ) => {
                let int_like = |ty: &Ty| matches!(ty, Ty::Int | Ty::Char);
                if int_like(lhs_ty) && int_like(rhs_ty) {
                    return Ty::Int;
                }
                let (bad, bad_ty) = if int_like(lhs_ty) { (rhs, rhs_ty) } else { (lhs, lhs_ty) };
                let span = self.expr_span(bad);
                let bad_text = self.describe(bad);
                let power = (arith == ArithOp::BitXor).then(|| {
                    let lhs = self.source_text(self.body.source_map.expr(lhs));
                    let rhs = self.source_text(self.body.source_map.expr(rhs));
                    (self.expr_span(expr), format!("pow({lhs}, {rhs})"))
                });
                let diagnostic = self.report(
                    Code::InvalidOperand,
                    span,
                    format!(
                        "`{}` is for ints only, but {bad_text} is {bad_ty}",
                        arith_symbol(arith)
                    ),
                );
                // `x ^ 2` from a language where `^` is a power.
                if let Some((whole, power)) = power {
                    diagnostic.help("`^` is the bitwise exclusive or; a power is `pow(x, p)`");
                    diagnostic.fix_replace(&format!("write `{power}`"), whole, power);
                }
                Ty::Error
            }
            BinaryOp::Arith(arith) => {
                self.elementwise_result(expr, arith_symbol(arith), lhs, lhs_ty, rhs, rhs_ty, false)
            }
            BinaryOp::Cmp(cmp) => {
                self.elementwise_result(expr, cmp_symbol(cmp), lhs, lhs_ty, rhs, rhs_ty, true)
            }
            // Masks combine element-wise, with broadcasting.
            BinaryOp::Logic(logic)
                if (lhs_ty.is_tensor() || rhs_ty.is_tensor())
                    && !matches!(lhs_ty, Ty::Bool)
                    && !matches!(rhs_ty, Ty::Bool) =>
            {
                let symbol = match logic {
                    LogicOp::And => "&&",
                    LogicOp::Or => "||",
                };
                self.elementwise_result(expr, symbol, lhs, lhs_ty, rhs, rhs_ty, true)
            }
            BinaryOp::Logic(logic) => {
                for (operand, ty) in [(lhs, lhs_ty), (rhs, rhs_ty)] {
                    self.check_condition(operand, ty);
                }
                let _ = logic;
                Ty::Bool
            }
        }
    }

    /// `+ - * / %` and comparisons: scalars, or tensors with broadcasting.
    #[allow(clippy::too_many_arguments)]
    fn elementwise_result(
        &mut self,
        expr: ExprId,
        symbol: &str,
        lhs: ExprId,
        lhs_ty: &Ty,
        rhs: ExprId,
        rhs_ty: &Ty,
        comparison: bool,
    ) -> Ty {
        let number = |ty: &Ty| matches!(ty, Ty::Int | Ty::Float | Ty::Char);
        match (lhs_ty, rhs_ty) {
            (Ty::Tensor(a), Ty::Tensor(b)) => match broadcast(a, b) {
                Ok(shape) => Ty::Tensor(shape),
                Err((i, j)) => {
                    let span = self.expr_span(expr);
                    let (lhs_text, rhs_text) = (self.describe(lhs), self.describe(rhs));
                    let whole = self.describe_whole(expr);
                    let (x, y) = (
                        a.dims().and_then(|d| d.get(i)).cloned().unwrap_or(Dim::Unknown),
                        b.dims().and_then(|d| d.get(j)).cloned().unwrap_or(Dim::Unknown),
                    );
                    let (lhs_span, rhs_span) = (self.expr_span(lhs), self.expr_span(rhs));
                    self.report(
                        Code::BroadcastMismatch,
                        span,
                        format!("{whole}: {lhs_text} is {lhs_ty}, {rhs_text} is {rhs_ty}; extents {x} and {y} cannot broadcast"),
                    )
                    .label(lhs_span, format!("{lhs_ty}"))
                    .label(rhs_span, format!("{rhs_ty}"))
                    .help("element-wise operators need equal extents, or an extent of 1, in each aligned axis");
                    Ty::Error
                }
            },
            (Ty::Tensor(shape), other) | (other, Ty::Tensor(shape))
                if matches!(other, Ty::Int | Ty::Float) =>
            {
                Ty::Tensor(shape.clone())
            }
            (a, b) if number(a) && number(b) => {
                if comparison {
                    Ty::Bool
                } else if matches!(a, Ty::Float) || matches!(b, Ty::Float) {
                    Ty::Float
                } else {
                    Ty::Int
                }
            }
            (Ty::Bool, Ty::Bool) if comparison && matches!(symbol, "==" | "!=") => Ty::Bool,
            _ => {
                let span = self.expr_span(expr);
                let whole = self.describe_whole(expr);
                let (lhs_text, rhs_text) = (self.describe(lhs), self.describe(rhs));
                self.report(
                    Code::InvalidOperand,
                    span,
                    format!("`{symbol}` is not defined for {lhs_ty} and {rhs_ty} in {whole} ({lhs_text} and {rhs_text})"),
                )
                .help("arithmetic works on int, float and tensors; cast a bool or char first");
                Ty::Error
            }
        }
    }

    fn matmul_result(
        &mut self,
        expr: ExprId,
        lhs: ExprId,
        lhs_ty: &Ty,
        rhs: ExprId,
        rhs_ty: &Ty,
    ) -> Ty {
        let whole = self.describe_whole(expr);
        let scalar = [(lhs, lhs_ty), (rhs, rhs_ty)]
            .into_iter()
            .find(|(_, ty)| !ty.is_tensor() || ty.rank() == Some(0));
        if let Some((operand, ty)) = scalar {
            let span = self.expr_span(expr);
            let text = self.describe(operand);
            let operator = self.operator_span(lhs, rhs, '@');
            let operand_span = self.expr_span(operand);
            let diagnostic = self.report(
                Code::MatmulScalar,
                span,
                format!("{whole}: `@` needs two tensors of rank 1 or more, but {text} is {ty}"),
            );
            diagnostic.label(operand_span, format!("{ty}"));
            diagnostic.help("to scale a tensor by a number, use `*`");
            if let Some(operator) = operator {
                diagnostic.fix_replace("use `*`", operator, "*".to_owned());
            }
            return Ty::Error;
        }
        let (Ty::Tensor(a), Ty::Tensor(b)) = (lhs_ty, rhs_ty) else { return Ty::Error };
        match matmul(a, b) {
            Ok(shape) => Ty::Tensor(shape),
            Err(err) => {
                let span = self.expr_span(expr);
                let (lhs_text, rhs_text) = (self.describe(lhs), self.describe(rhs));
                let why = match err {
                    MatmulError::Inner(x, y) => format!("inner dimensions {x} and {y} differ"),
                    MatmulError::Batch => "batch dimensions do not broadcast".to_owned(),
                    MatmulError::RankZero => "an operand has rank 0".to_owned(),
                };
                let (lhs_span, rhs_span) = (self.expr_span(lhs), self.expr_span(rhs));
                self.report(
                    Code::MatmulMismatch,
                    span,
                    format!("{whole}: {lhs_text} is {lhs_ty}, {rhs_text} is {rhs_ty}; {why}"),
                )
                .label(lhs_span, format!("{lhs_ty}"))
                .label(rhs_span, format!("{rhs_ty}"))
                .help("`[m][k] @ [k][n]` needs the last extent of the left operand to equal the first of the right's last two");
                Ty::Error
            }
        }
    }

    fn infer_assign(
        &mut self,
        expr: ExprId,
        op: Option<ArithOp>,
        target: ExprId,
        value: ExprId,
    ) -> Ty {
        let target_ty = self.infer_expr(target);
        let value_ty = self.infer_expr(value);
        let writable = self.check_write(target);
        if !writable || target_ty.is_error() {
            return Ty::Error;
        }
        let element = !matches!(self.body.exprs[target], Expr::Name { .. } | Expr::Field { .. });
        let result = match op {
            // A value written into a region broadcasts to it, as in NumPy: `t[:, 0] = 1`,
            // `t[none, 2] = row`.
            None if element && broadcasts_into(&value_ty, &target_ty) => target_ty.clone(),
            None => value_ty,
            Some(arith) => self.binary_result(
                expr,
                BinaryOp::Arith(arith),
                target,
                &target_ty,
                value,
                &value_ty,
            ),
        };
        let name = self.write_root(target);
        self.check_coerce(value, &result, &target_ty, Target::Assign { name, element });
        target_ty
    }

    /// The variable a write through `target` changes, with its declaration.
    fn write_root(&self, target: ExprId) -> Option<(SmolStr, HirSpan)> {
        match &self.body.exprs[target] {
            Expr::Name { name, .. } => {
                let resolution = self.result.resolution(target)?;
                let (_, _, span, _) = self.qualifier_of(resolution)?;
                Some((name.clone(), span))
            }
            Expr::Index { base, .. } => self.write_root(*base),
            _ => None,
        }
    }

    /// Reports writes to constants and to what is not a place; `false` if the write is invalid.
    pub(crate) fn check_write(&mut self, target: ExprId) -> bool {
        match &self.body.exprs[target] {
            Expr::Missing => false,
            Expr::Name { name, .. } => {
                let name = name.clone();
                let Some(resolution) = self.result.resolution(target) else { return false };
                match resolution {
                    Resolution::Function(_) | Resolution::Builtin(_) => {
                        let span = self.expr_span(target);
                        self.report(
                            Code::InvalidAssignTarget,
                            span,
                            format!("cannot assign to the function `{name}`"),
                        );
                        false
                    }
                    _ => {
                        let Some((qualifier, kind, decl, _)) = self.qualifier_of(resolution) else {
                            return false;
                        };
                        if kind == LocalKind::ShapeVar || qualifier == Some(Qualifier::Cns) {
                            let span = self.expr_span(target);
                            let what = if kind == LocalKind::ShapeVar {
                                "shape variable"
                            } else {
                                "constant"
                            };
                            self.report(
                                Code::AssignToConstant,
                                span,
                                format!("cannot write to `{name}`: it is {}", a(&what)),
                            )
                            .label(decl, format!("`{name}` is declared here as {}", a(&what)))
                            .help(if kind == LocalKind::ShapeVar {
                                "a shape variable is bound by a shape and read-only".to_owned()
                            } else {
                                format!(
                                    "drop `cns` from the declaration of `{name}` if it must change"
                                )
                            });
                            return false;
                        }
                        true
                    }
                }
            }
            Expr::Index { base, .. } => {
                let base = *base;
                let mut brackets = 0;
                let mut advanced = false;
                let mut current = target;
                while let Expr::Index { base, entries } = &self.body.exprs[current] {
                    brackets += 1;
                    advanced |= entries.iter().any(|entry| match *entry {
                        IndexEntry::At(index) => self.result.type_of_expr(index).is_tensor(),
                        _ => false,
                    });
                    current = *base;
                }
                if advanced && brackets > 1 {
                    let span = self.expr_span(target);
                    self.report(
                        Code::InvalidAssignTarget,
                        span,
                        "cannot assign through a chain of brackets with index tensors: a gather \
                         selects a copy, so the brackets after it would write into the copy"
                            .to_owned(),
                    )
                    .help("write the indices in one bracket: `t[i, ids]` rather than `t[i][ids]`");
                    return false;
                }
                self.check_write(base)
            }
            // `net.l1.w -= ...`: a field of a variable is written in place.
            Expr::Field { base, .. } => {
                let base = *base;
                self.check_write(base)
            }
            _ => {
                let span = self.expr_span(target);
                self.report(
                    Code::InvalidAssignTarget,
                    span,
                    "cannot assign to this expression: only variables and their elements can be written".to_owned(),
                );
                false
            }
        }
    }

    /// The edits that cast `value` to `ty`: `(float)x`, or `(float)(a + b)` for an operand that
    /// a cast would not cover whole.
    fn cast_edits(&self, value: ExprId, ty: &Ty) -> Vec<(HirSpan, String)> {
        let span = self.expr_span(value);
        let at = |offset| HirSpan {
            span: RelSpan { range: TextRange::empty(offset), ..span.span },
            ..span
        };
        let whole = !matches!(
            self.body.exprs[value],
            Expr::Binary { .. } | Expr::Ternary { .. } | Expr::Assign { .. } | Expr::Cast { .. }
        );
        match whole {
            true => vec![(at(span.span.range.start()), format!("({ty})"))],
            false => vec![
                (at(span.span.range.start()), format!("({ty})(")),
                (at(span.span.range.end()), ")".to_owned()),
            ],
        }
    }

    /// Reports a value of type `actual` stored where `expected` is declared.
    pub(crate) fn check_coerce(
        &mut self,
        value: ExprId,
        actual: &Ty,
        expected: &Ty,
        target: Target,
    ) {
        if actual.is_error() || expected.is_error() {
            return;
        }
        if !self.check_value(value, actual) {
            return;
        }
        if let Ty::Record(record) = expected
            && self.is_load(value)
        {
            self.load_record(value, record, expected);
            return;
        }
        let span = self.expr_span(value);
        match (expected, actual) {
            (Ty::Float, Ty::Int | Ty::Float)
            | (Ty::Int, Ty::Int)
            | (Ty::Char, Ty::Char)
            | (Ty::Bool, Ty::Bool)
            | (Ty::Tensor(_), Ty::Int | Ty::Float) => {}
            (Ty::Tensor(_) | Ty::Record(_), Ty::Tensor(_) | Ty::Record(_))
                if expected.is_tensor() == actual.is_tensor() =>
            {
                let fits = match (expected, actual) {
                    (Ty::Tensor(declared), Ty::Tensor(found)) => {
                        shapes_compatible(declared, found)
                            || self.is_flat_initializer(value, declared, &target)
                    }
                    (Ty::Record(declared), Ty::Record(found)) if declared.def == found.def => {
                        declared.sizes.iter().zip(&found.sizes).all(|(x, y)| !x.conflicts(y))
                    }
                    _ => false,
                };
                if fits {
                    return;
                }
                let other_record = matches!((expected, actual),
                    (Ty::Record(x), Ty::Record(y)) if x.def != y.def);
                let (message, label) = match &target {
                    Target::Local(local) | Target::Binding(local) => {
                        let name = self.body.locals[*local].name.clone();
                        (
                            format!(
                                "the initializer of `{name}` is {actual}, but `{name}` is declared {expected}"
                            ),
                            Some((
                                self.local_span(*local),
                                format!("`{name}` is declared {expected} here"),
                            )),
                        )
                    }
                    Target::Assign { name: Some((name, decl)), element: false } => (
                        format!("cannot assign {} to `{name}`, declared {expected}", a(&actual)),
                        Some((*decl, format!("`{name}` is declared {expected} here"))),
                    ),
                    Target::Assign { .. } => (
                        format!("cannot assign {} to an element of type {expected}", a(&actual)),
                        None,
                    ),
                    Target::Return(name) => {
                        (format!("`{name}` returns {expected}, but this value is {actual}"), None)
                    }
                    Target::Argument { what, param } => (
                        format!("{what} must be {expected}, found {actual}"),
                        param.map(|p| (p, format!("parameter declared {expected} here"))),
                    ),
                };
                let code = match target {
                    _ if other_record => Code::TypeMismatch,
                    Target::Argument { .. } => Code::ShapeVarConflict,
                    _ => Code::DeclaredShapeMismatch,
                };
                let diagnostic = self.report(code, span, message);
                if let Some((label_span, text)) = label {
                    diagnostic.label(label_span, text);
                }
            }
            (expected, actual) => {
                let message = match &target {
                    Target::Local(local) | Target::Binding(local) => {
                        let name = &self.body.locals[*local].name;
                        format!("`{name}` is declared {expected}, but its initializer is {actual}")
                    }
                    Target::Assign { name: Some((name, _)), element: false } => {
                        format!("cannot assign {} to `{name}`, declared {expected}", a(&actual))
                    }
                    Target::Assign { .. } => {
                        format!("cannot assign {} to an element of type {expected}", a(&actual))
                    }
                    Target::Return(name) => {
                        format!("`{name}` returns {expected}, but this value is {actual}")
                    }
                    Target::Argument { what, .. } => {
                        format!("{what} must be {expected}, found {actual}")
                    }
                };
                // A cast of a tuple's element alone cannot be written in place.
                let whole = !matches!(target, Target::Binding(_));
                let cast = whole
                    && matches!(expected, Ty::Int | Ty::Float | Ty::Char | Ty::Bool)
                    && matches!(actual, Ty::Int | Ty::Float | Ty::Char | Ty::Bool);
                let param = match &target {
                    Target::Argument { param, .. } => *param,
                    _ => None,
                };
                let cast_edits = self.cast_edits(value, expected);
                let diagnostic = self.report(Code::TypeMismatch, span, message);
                if cast {
                    diagnostic.help(format!("convert it explicitly: `({expected})...`"));
                    diagnostic
                        .fixes
                        .push(HirFix { label: format!("cast to {expected}"), edits: cast_edits });
                } else if whole
                    && matches!(expected, Ty::Float | Ty::Int)
                    && actual.rank() == Some(0)
                {
                    // A rank-0 tensor has no element to index: it converts with a cast.
                    diagnostic.help(format!("convert the rank-0 tensor with `({expected})...`"));
                    diagnostic
                        .fixes
                        .push(HirFix { label: format!("cast to {expected}"), edits: cast_edits });
                } else if matches!(expected, Ty::Float | Ty::Int) && actual.is_tensor() {
                    diagnostic.help(
                        "reduce the tensor, as with `sum(...)`, or take one element with `[i]`",
                    );
                }
                if let Some(param) = param {
                    diagnostic.label(param, format!("parameter declared {expected} here"));
                }
            }
        }
    }

    /// `var Tensor b[2][1] = [3, 1];`: a flat literal with as many elements as the shape.
    fn is_flat_initializer(&self, value: ExprId, declared: &Shape, target: &Target) -> bool {
        if !matches!(target, Target::Local(_)) {
            return false;
        }
        let Expr::TensorLit(elements) = &self.body.exprs[value] else { return false };
        let flat =
            elements.iter().all(|e| matches!(self.result.type_of_expr(*e), Ty::Int | Ty::Float));
        flat && declared.known_size() == Some(elements.len() as i64)
    }

    /// The type both branches of `?:` have.
    fn join_branches(&mut self, else_branch: ExprId, then_ty: &Ty, else_ty: &Ty) -> Ty {
        match (then_ty, else_ty) {
            (Ty::Error, _) | (_, Ty::Error) => Ty::Error,
            (a, b) if a == b => a.clone(),
            (Ty::Int, Ty::Float) | (Ty::Float, Ty::Int) => Ty::Float,
            (Ty::Tensor(a), Ty::Tensor(b)) if shapes_compatible(a, b) => match (a, b) {
                (Shape::Ranked(x), Shape::Ranked(y)) => {
                    Ty::tensor(x.iter().zip(y).map(|(p, q)| p.join(q)).collect())
                }
                _ => Ty::unranked(),
            },
            (Ty::Tensor(shape), Ty::Int | Ty::Float) | (Ty::Int | Ty::Float, Ty::Tensor(shape)) => {
                Ty::Tensor(shape.clone())
            }
            (a, b) => {
                let span = self.expr_span(else_branch);
                self.report(
                    Code::TypeMismatch,
                    span,
                    format!("the branches of `?:` have different types: {a} and {b}"),
                );
                Ty::Error
            }
        }
    }

    /// The value of an integer constant expression, if it is one (see [`crate::const_int`]).
    pub(crate) fn const_int(&self, expr: ExprId) -> Option<i64> {
        super::const_int(self.db, self.body, &self.result, expr)
    }

    /// An int expression as a dimension: a size expression over constants and shape variables
    /// (`2*n`, `n / 2`), or unknown.
    pub(crate) fn dim_of_int_expr(&self, expr: ExprId) -> Dim {
        match self.size_of_int_expr(expr) {
            Some(size) => Dim::from_expr(size).unwrap_or(Dim::Unknown),
            None => Dim::Unknown,
        }
    }

    fn size_of_int_expr(&self, expr: ExprId) -> Option<SizeExpr<SizeVar>> {
        if let Some(value) = self.const_int(expr) {
            return Some(SizeExpr::Const(value));
        }
        stacker::maybe_grow(
            crate::body::lower::STACK_RED_ZONE,
            crate::body::lower::STACK_SEGMENT,
            || match &self.body.exprs[expr] {
                Expr::Name { name, .. } => {
                    let (def, local) = match self.result.resolution(expr)? {
                        Resolution::Local(local) => (self.def, local),
                        Resolution::Global { def, local } => (def, local),
                        _ => return None,
                    };
                    let kind = match def == self.def {
                        true => self.body.locals[local].kind,
                        false => body_query(self.db, def).body.locals[local].kind,
                    };
                    (kind == LocalKind::ShapeVar)
                        .then(|| SizeExpr::Var(SizeVar { def, local, name: name.clone() }))
                }
                Expr::Unary { op: UnaryOp::Plus, operand } => self.size_of_int_expr(*operand),
                Expr::Unary { op: UnaryOp::Neg, operand } => {
                    Some(SizeExpr::Neg(Box::new(self.size_of_int_expr(*operand)?)))
                }
                Expr::Binary { op: BinaryOp::Arith(op), lhs, rhs } => {
                    let op = match op {
                        ArithOp::Add => SizeOp::Add,
                        ArithOp::Sub => SizeOp::Sub,
                        ArithOp::Mul => SizeOp::Mul,
                        ArithOp::Div => SizeOp::Div,
                        ArithOp::Rem => SizeOp::Rem,
                        _ => return None,
                    };
                    let lhs = self.size_of_int_expr(*lhs)?;
                    Some(SizeExpr::binary(op, lhs, self.size_of_int_expr(*rhs)?))
                }
                _ => None,
            },
        )
    }

    // ----- text for messages -----

    /// The source text of a span of this body.
    pub(crate) fn source_text(&self, span: RelSpan) -> String {
        let source = def_source(self.db, self.def);
        let Some(chunk) = source.chunks.get(span.chunk as usize) else { return String::new() };
        let root = SyntaxNode::new_root(chunk.clone());
        let text = root.text();
        let len = text.len();
        if span.range.end() > len {
            return String::new();
        }
        text.slice(span.range).to_string()
    }

    /// How a message names an operand: its text when short, else "this operand".
    pub(crate) fn describe(&self, expr: ExprId) -> String {
        let text = self.source_text(self.body.source_map.expr(expr));
        if !text.is_empty() && text.len() <= MAX_QUOTED && !text.contains('\n') {
            text
        } else {
            "the operand".to_owned()
        }
    }

    /// How a message names a whole expression: "`a @ b`", or "this expression".
    pub(crate) fn describe_whole(&self, expr: ExprId) -> String {
        let text = self.source_text(self.body.source_map.expr(expr));
        if !text.is_empty() && text.len() <= 2 * MAX_QUOTED && !text.contains('\n') {
            format!("`{text}`")
        } else {
            "this expression".to_owned()
        }
    }

    /// The span of the operator character between two operands.
    fn operator_span(&self, lhs: ExprId, rhs: ExprId, op: char) -> Option<HirSpan> {
        let (l, r) = (self.body.source_map.expr(lhs), self.body.source_map.expr(rhs));
        if l.chunk != r.chunk || l.range.end() > r.range.start() {
            return None;
        }
        let between = TextRange::new(l.range.end(), r.range.start());
        let text = self.source_text(RelSpan { chunk: l.chunk, range: between });
        let at = text.find(op)?;
        let start = between.start() + TextSize::from(at as u32);
        Some(self.span(RelSpan { chunk: l.chunk, range: TextRange::at(start, TextSize::from(1)) }))
    }
}

pub(crate) fn arith_symbol(op: ArithOp) -> &'static str {
    match op {
        ArithOp::MatMul => "@",
        ArithOp::Mul => "*",
        ArithOp::Div => "/",
        ArithOp::Rem => "%",
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        ArithOp::Shl => "<<",
        ArithOp::Shr => ">>",
        ArithOp::BitAnd => "&",
        ArithOp::BitXor => "^",
        ArithOp::BitOr => "|",
    }
}

fn cmp_symbol(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
        CmpOp::Eq => "==",
        CmpOp::Ne => "!=",
    }
}

/// Whether a tensor `value` broadcasts to the shape of the region `target` without changing it:
/// each of its axes, aligned from the last, is 1 or the region's extent (an unknown extent is
/// checked when the write runs).
fn broadcasts_into(value: &Ty, target: &Ty) -> bool {
    let (Some(value), Some(target)) =
        (value.shape().and_then(Shape::dims), target.shape().and_then(Shape::dims))
    else {
        return false;
    };
    value.len() <= target.len()
        && value.iter().rev().zip(target.iter().rev()).all(|(v, t)| {
            matches!(v, Dim::Known(1) | Dim::Unknown)
                || matches!(t, Dim::Unknown)
                || v.equals(t) == Some(true)
        })
}
