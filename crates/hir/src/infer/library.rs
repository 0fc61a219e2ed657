//! Typing the library built-ins of NumPy's and PyTorch's kind (element-wise activations,
//! reductions and scans with an axis, shape functions, random numbers, stacked linear algebra,
//! convolutions, pooling and losses): one method per [`Rule`] that `builtin.rs` dispatches here.
//!
//! Options follow `language.md` section 9: positional, last, in NumPy's order. An option that
//! decides a shape (`keepdims`, a `pad` mode) or a computation (`"tanh"`) is a literal, so that
//! the type is known; a wrong one is [`Code::InvalidOption`]. Extents that come from `int`
//! arguments are sizes when the arguments are constants or shape variables, and unknown
//! otherwise, to be checked when the program runs.

use super::InferCtx;
use crate::{
    body::{Expr, ExprId, Literal},
    builtins::{Builtin, Rule},
    diagnostics::Code,
    ty::{Dim, Shape, Ty, broadcast},
};

/// The extents of `a` times those of `b`, the shorter list extended with leading 1s: the shape of
/// `kron(a, b)`, and of `tile(t, reps)` with `a` the repetitions.
fn aligned_products(a: &[Dim], b: &[Dim]) -> Ty {
    let rank = a.len().max(b.len());
    let padded = |list: &[Dim]| {
        let mut out = vec![Dim::Known(1); rank - list.len()];
        out.extend_from_slice(list);
        out
    };
    let (a, b) = (padded(a), padded(b));
    Ty::tensor(a.iter().zip(&b).map(|(x, y)| x.mul(y)).collect())
}

/// The axis a function along one axis takes when it is not given.
#[derive(Clone, Copy, PartialEq, Eq)]
enum AxisDefault {
    First,
    Last,
    /// Without an axis, the function works on the row-major elements (`roll`).
    None,
}

impl InferCtx<'_> {
    /// The type of a call of a library built-in, whose arguments have been typed and counted.
    pub(super) fn infer_library(
        &mut self,
        expr: ExprId,
        builtin: Builtin,
        args: &[ExprId],
        tys: &[Ty],
    ) -> Ty {
        let name = builtin.name();
        match builtin.info().rule {
            Rule::Activation => {
                if let Some(&option) = args.get(1) {
                    match builtin {
                        Builtin::Gelu => {
                            self.option(option, &tys[1], name, 1, &["none", "tanh"]);
                        }
                        _ => {
                            self.number_arg(option, &tys[1], name, 1);
                        }
                    }
                }
                self.elementwise(args[0], &tys[0], name)
            }
            Rule::Predicate => match &tys[0] {
                Ty::Tensor(shape) => Ty::Tensor(shape.clone()),
                Ty::Int | Ty::Float => Ty::Bool,
                other => self.bad_arg(args[0], name, 0, other, "a number or a tensor"),
            },
            Rule::Ternary => self.ternary(expr, name, args, tys),
            Rule::ArgReduction => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &tys[0]) else {
                    return Ty::Error;
                };
                match args.get(1) {
                    None => Ty::Int,
                    Some(&axis) => self.reduced(name, &shape, axis, &tys[1], args.get(2).copied()),
                }
            }
            Rule::Moment => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &tys[0]) else {
                    return Ty::Error;
                };
                if let Some(&ddof) = args.get(2) {
                    self.number_arg(ddof, &tys[2], name, 2);
                }
                match args.get(1) {
                    None => Ty::Float,
                    Some(&axis) => self.reduced(name, &shape, axis, &tys[1], args.get(3).copied()),
                }
            }
            Rule::Sort => {
                let Some(shape) = self.nonscalar_arg(args[0], name, &tys[0]) else {
                    return Ty::Error;
                };
                if let Some(&axis) = args.get(1) {
                    self.axis_arg(axis, &tys[1], &shape, name);
                }
                if let Some(&descending) = args.get(2)
                    && tys[2] != Ty::Bool
                    && !tys[2].is_error()
                {
                    return self.bad_arg(descending, name, 2, &tys[2], "a bool");
                }
                Ty::Tensor(shape)
            }
            Rule::TopK => {
                let Some(shape) = self.nonscalar_arg(args[0], name, &tys[0]) else {
                    return Ty::Error;
                };
                let Some(k) = self.int_arg(args[1], &tys[1], name, 1) else { return Ty::Error };
                let k = self.nonnegative(args[1], k);
                let Ok(axis) = self.axis_option(name, &shape, args, tys, 2, AxisDefault::Last)
                else {
                    return Ty::Error;
                };
                let Shape::Ranked(mut dims) = shape else {
                    return Ty::Tuple(vec![Ty::unranked(), Ty::unranked()]);
                };
                match axis {
                    Some(axis) => {
                        if let (Some(k), Some(extent)) = (k.known(), dims[axis].known())
                            && k > extent
                        {
                            let span = self.expr_span(args[1]);
                            self.report(
                                Code::ArgumentShapes,
                                span,
                                format!("`topk`: k = {k} is more than the {extent} elements along axis {axis}"),
                            );
                            return Ty::Error;
                        }
                        dims[axis] = k;
                    }
                    None => dims.iter_mut().for_each(|dim| *dim = Dim::Unknown),
                }
                Ty::Tuple(vec![Ty::tensor(dims.clone()), Ty::tensor(dims)])
            }
            Rule::Scan => {
                let Some(shape) = self.nonscalar_arg(args[0], name, &tys[0]) else {
                    return Ty::Error;
                };
                match args.get(1) {
                    Some(&axis) => match self.axis_arg(axis, &tys[1], &shape, name) {
                        Some(_) => Ty::Tensor(shape),
                        None => Ty::Error,
                    },
                    None => Ty::tensor(vec![shape.dims().map_or(Dim::Unknown, Dim::product)]),
                }
            }
            Rule::Roll => {
                let Some(shape) = self.nonscalar_arg(args[0], name, &tys[0]) else {
                    return Ty::Error;
                };
                if tys[1] != Ty::Int {
                    return self.bad_arg(args[1], name, 1, &tys[1], "an int shift");
                }
                match self.axis_option(name, &shape, args, tys, 2, AxisDefault::None) {
                    Ok(_) => Ty::Tensor(shape),
                    Err(()) => Ty::Error,
                }
            }
            Rule::Tile => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &tys[0]) else {
                    return Ty::Error;
                };
                let reps = self.shape_list(args[1], &tys[1], name, 1, None);
                let (Shape::Ranked(dims), Shape::Ranked(reps)) = (shape, reps) else {
                    return Ty::unranked();
                };
                aligned_products(&reps, &dims)
            }
            Rule::Repeat => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &tys[0]) else {
                    return Ty::Error;
                };
                let Some(r) = self.int_arg(args[1], &tys[1], name, 1) else { return Ty::Error };
                let r = self.nonnegative(args[1], r);
                if args.len() < 3 {
                    let size = shape.dims().map_or(Dim::Unknown, Dim::product);
                    return Ty::tensor(vec![r.mul(&size)]);
                }
                if shape.dims().is_some_and(<[Dim]>::is_empty) {
                    self.bad_arg(args[0], name, 0, &tys[0], "a tensor of rank 1 or more");
                    return Ty::Error;
                }
                let Ok(axis) = self.axis_option(name, &shape, args, tys, 2, AxisDefault::None)
                else {
                    return Ty::Error;
                };
                let Shape::Ranked(mut dims) = shape else { return Ty::unranked() };
                match axis {
                    Some(axis) => dims[axis] = r.mul(&dims[axis]),
                    None => dims.iter_mut().for_each(|dim| *dim = Dim::Unknown),
                }
                Ty::tensor(dims)
            }
            Rule::Pad => self.pad(expr, args, tys),
            Rule::Decomposition => self.decomposition(builtin, args, tys),
            Rule::Pinv => {
                let Some(shape) = self.matrix_arg(args[0], name, &tys[0], false) else {
                    return Ty::Error;
                };
                let Shape::Ranked(mut dims) = shape else { return Ty::unranked() };
                let rank = dims.len();
                dims.swap(rank - 2, rank - 1);
                Ty::tensor(dims)
            }
            Rule::Lstsq => {
                let a = self.matrix_arg(args[0], name, &tys[0], false);
                let b = self.tensor_arg(args[1], name, 1, &tys[1]);
                let (Some(a), Some(b)) = (a, b) else { return Ty::Error };
                let (Some(ad), Some(bd)) = (a.dims(), b.dims()) else { return Ty::unranked() };
                if ad.len() != 2 || bd.is_empty() || bd.len() > 2 || ad[0].conflicts(&bd[0]) {
                    let span = self.expr_span(expr);
                    self.report(
                        Code::ArgumentShapes,
                        span,
                        format!("`lstsq` takes a matrix Tensor[m][n] and a Tensor[m] or Tensor[m][k], but they are Tensor{a} and Tensor{b}"),
                    );
                    return Ty::Error;
                }
                let mut dims = vec![ad[1].clone()];
                dims.extend(bd.get(1).cloned());
                Ty::tensor(dims)
            }
            Rule::MatrixNorm => {
                let Some(shape) = self.matrix_arg(args[0], name, &tys[0], false) else {
                    return Ty::Error;
                };
                if let Some(&ord) = args.get(1) {
                    let fits = match &tys[1] {
                        Ty::Str => self
                            .option(ord, &tys[1], name, 1, &["fro", "nuc", "inf", "-inf"])
                            .is_some(),
                        Ty::Int => match self.const_int(ord) {
                            Some(1 | -1 | 2 | -2) => true,
                            other => {
                                let span = self.expr_span(ord);
                                let found = other.map_or(
                                    "a value known only when the program runs".to_owned(),
                                    |n| n.to_string(),
                                );
                                self.report(Code::InvalidOption, span, format!("`matrix_norm` has no order {found}"))
                                    .help("the orders are \"fro\", \"nuc\", 2, -2, 1, -1, \"inf\" and \"-inf\"");
                                false
                            }
                        },
                        other => {
                            self.bad_arg(ord, name, 1, other, "an order such as \"fro\" or 2");
                            false
                        }
                    };
                    if !fits {
                        return Ty::Error;
                    }
                }
                match shape {
                    Shape::Ranked(dims) if dims.len() == 2 => Ty::Float,
                    Shape::Ranked(dims) => Ty::tensor(dims[..dims.len() - 2].to_vec()),
                    Shape::Unranked => Ty::unranked(),
                }
            }
            Rule::Split => self.split(args, tys),
            Rule::Nonzero => match self.nonscalar_arg(args[0], name, &tys[0]) {
                // One position per non-zero element: how many is known when it runs.
                Some(_) => Ty::tensor(vec![Dim::Unknown]),
                None => Ty::Error,
            },
            Rule::Linspace => {
                self.number_arg(args[0], &tys[0], name, 0);
                self.number_arg(args[1], &tys[1], name, 1);
                let Some(num) = self.int_arg(args[2], &tys[2], name, 2) else { return Ty::Error };
                Ty::tensor(vec![self.nonnegative(args[2], num)])
            }
            Rule::Squeeze => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &tys[0]) else {
                    return Ty::Error;
                };
                let Shape::Ranked(mut dims) = shape.clone() else { return Ty::unranked() };
                let Some(&axis_arg) = args.get(1) else {
                    // Which axes go depends on the extents: known only when all are known.
                    if dims.iter().all(|dim| matches!(dim, Dim::Known(_))) {
                        dims.retain(|dim| *dim != Dim::Known(1));
                        return Ty::tensor(dims);
                    }
                    return Ty::unranked();
                };
                let Some(axis) = self.axis_arg(axis_arg, &tys[1], &shape, name) else {
                    return Ty::Error;
                };
                if self.const_int(axis_arg).is_none() {
                    return Ty::tensor(vec![Dim::Unknown; dims.len().saturating_sub(1)]);
                }
                if let Dim::Known(extent) = dims[axis]
                    && extent != 1
                {
                    let span = self.expr_span(axis_arg);
                    self.report(
                        Code::InvalidAxis,
                        span,
                        format!("`squeeze` removes an axis of extent 1, but axis {axis} of Tensor{shape} has extent {extent}"),
                    );
                    return Ty::Error;
                }
                dims.remove(axis);
                Ty::tensor(dims)
            }
            Rule::Unsqueeze => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &tys[0]) else {
                    return Ty::Error;
                };
                let Shape::Ranked(mut dims) = shape else { return Ty::unranked() };
                if tys[1] != Ty::Int {
                    return self.bad_arg(args[1], name, 1, &tys[1], "an int axis");
                }
                let rank = dims.len() as i64;
                match self.const_int(args[1]) {
                    Some(axis) if axis < 0 || axis > rank => {
                        let span = self.expr_span(args[1]);
                        self.report(
                            Code::InvalidAxis,
                            span,
                            format!("a new axis of a tensor of rank {rank} goes at 0 to {rank}, not {axis}"),
                        );
                        Ty::Error
                    }
                    Some(axis) => {
                        dims.insert(axis as usize, Dim::Known(1));
                        Ty::tensor(dims)
                    }
                    None => Ty::tensor(vec![Dim::Unknown; dims.len() + 1]),
                }
            }
            Rule::Triangle => {
                let Some(shape) = self.matrix_arg(args[0], name, &tys[0], false) else {
                    return Ty::Error;
                };
                if let Some(&k) = args.get(1)
                    && tys[1] != Ty::Int
                {
                    return self.bad_arg(k, name, 1, &tys[1], "an int diagonal offset");
                }
                Ty::Tensor(shape)
            }
            Rule::OneHot => {
                let Some(n) = self.int_arg(args[1], &tys[1], name, 1) else { return Ty::Error };
                let n = self.nonnegative(args[1], n);
                match &tys[0] {
                    Ty::Tensor(Shape::Ranked(dims)) => {
                        let mut dims = dims.clone();
                        dims.push(n);
                        Ty::tensor(dims)
                    }
                    Ty::Tensor(Shape::Unranked) => Ty::unranked(),
                    Ty::Int | Ty::Float => Ty::tensor(vec![n]),
                    other => self.bad_arg(args[0], name, 0, other, "a tensor of labels"),
                }
            }
            Rule::BroadcastTo => {
                let Some(shape) = self.tensor_or_number(args[0], name, 0, &tys[0]) else {
                    return Ty::Error;
                };
                let target = self.shape_list(args[1], &tys[1], name, 1, None);
                if broadcast(&shape, &target).is_ok_and(|joint| {
                    crate::ty::shapes_compatible(&target, &joint)
                        && joint.dims().map(<[Dim]>::len) == target.dims().map(<[Dim]>::len)
                }) {
                    return Ty::Tensor(target);
                }
                let span = self.expr_span(expr);
                self.report(
                    Code::BroadcastMismatch,
                    span,
                    format!("Tensor{shape} cannot be broadcast to Tensor{target}"),
                );
                Ty::Error
            }
            Rule::Kron => {
                let a = self.tensor_arg(args[0], name, 0, &tys[0]);
                let b = self.tensor_arg(args[1], name, 1, &tys[1]);
                let (Some(Shape::Ranked(a)), Some(Shape::Ranked(b))) = (a, b) else {
                    return Ty::unranked();
                };
                aligned_products(&a, &b)
            }
            Rule::Outer => {
                let a = self.tensor_or_number(args[0], name, 0, &tys[0]);
                let b = self.tensor_or_number(args[1], name, 1, &tys[1]);
                let (Some(a), Some(b)) = (a, b) else { return Ty::Error };
                let size = |shape: &Shape| shape.dims().map_or(Dim::Unknown, Dim::product);
                Ty::tensor(vec![size(&a), size(&b)])
            }
            Rule::Randint => {
                for i in 0..2 {
                    if tys[i] != Ty::Int {
                        return self.bad_arg(args[i], name, i, &tys[i], "an int");
                    }
                }
                Ty::Tensor(self.shape_list(args[2], &tys[2], name, 2, None))
            }
            Rule::Permutation => {
                let Some(n) = self.int_arg(args[0], &tys[0], name, 0) else { return Ty::Error };
                Ty::tensor(vec![self.nonnegative(args[0], n)])
            }
            Rule::Distribution => {
                let last = args.len() - 1;
                let shape = self.shape_list(args[last], &tys[last], name, last, None);
                for i in 0..last {
                    let Some(param) = self.tensor_or_number(args[i], name, i, &tys[i]) else {
                        return Ty::Error;
                    };
                    let fits = broadcast(&param, &shape).is_ok_and(|joint| {
                        joint.dims().map(<[Dim]>::len) == shape.dims().map(<[Dim]>::len)
                            && crate::ty::shapes_compatible(&shape, &joint)
                    });
                    if !fits {
                        let span = self.expr_span(args[i]);
                        self.report(
                            Code::BroadcastMismatch,
                            span,
                            format!("argument {} of `{name}` is Tensor{param}, which does not broadcast to the shape Tensor{shape}", i + 1),
                        );
                        return Ty::Error;
                    }
                }
                Ty::Tensor(shape)
            }
            Rule::Cross => {
                let a = self.nonscalar_arg(args[0], name, &tys[0]);
                let b = self.nonscalar_arg(args[1], name, &tys[1]);
                let (Some(a), Some(b)) = (a, b) else { return Ty::Error };
                for (i, shape) in [(0, &a), (1, &b)] {
                    if let Some(last) = shape.dims().and_then(<[Dim]>::last)
                        && last.conflicts(&Dim::Known(3))
                    {
                        let span = self.expr_span(args[i]);
                        self.report(
                            Code::ArgumentShapes,
                            span,
                            format!("`cross` takes vectors of 3 along the last axis, but argument {} is Tensor{shape}", i + 1),
                        );
                        return Ty::Error;
                    }
                }
                self.elementwise_binary(expr, name, args, tys)
            }
            Rule::ClassLoss => {
                let scores = self.matrix_arg(args[0], name, &tys[0], false);
                let labels = self.tensor_arg(args[1], name, 1, &tys[1]);
                let (Some(scores), Some(labels)) = (scores, labels) else { return Ty::Error };
                match (scores.dims(), labels.dims()) {
                    (Some(scores_dims), Some(label_dims))
                        if scores_dims.len() != 2
                            || label_dims.len() != 1
                            || scores_dims[0].conflicts(&label_dims[0]) =>
                    {
                        let span = self.expr_span(expr);
                        self.report(
                            Code::ArgumentShapes,
                            span,
                            format!("`{name}` takes scores Tensor[N][C] and labels Tensor[N], but they are Tensor{scores} and Tensor{labels}"),
                        );
                        Ty::Error
                    }
                    _ => Ty::Float,
                }
            }
            Rule::Conv => self.conv(expr, builtin, args, tys),
            Rule::Pool => self.pool(builtin, args, tys),
            Rule::PairLoss => match self.elementwise_binary(expr, name, args, tys) {
                Ty::Error => Ty::Error,
                _ => Ty::Float,
            },
            _ => Ty::Error,
        }
    }

    /// `conv1d` and `conv2d`: signals or images `[N][C][spatial...]` and filters
    /// `[O][C / groups][kernel...]` give `[N][O][positions...]`, a window count per spatial axis.
    fn conv(&mut self, expr: ExprId, builtin: Builtin, args: &[ExprId], tys: &[Ty]) -> Ty {
        let name = builtin.name();
        let d = if builtin == Builtin::Conv1d { 1 } else { 2 };
        let x = self.tensor_arg(args[0], name, 0, &tys[0]);
        let w = self.tensor_arg(args[1], name, 1, &tys[1]);
        let options = self.window_options(name, args, tys, 2, &[1, 0, 1, 1]);
        let (Some(x), Some(w), Some(options)) = (x, w, options) else { return Ty::Error };
        let [stride, padding, dilation, groups] = [0, 1, 2, 3].map(|i| options[i].clone());
        let (Some(xd), Some(wd)) = (x.dims(), w.dims()) else {
            return Ty::tensor(vec![Dim::Unknown; d + 2]);
        };
        let (input, filters) = match d {
            1 => ("signals Tensor[N][C][L]", "filters Tensor[O][C][K]"),
            _ => ("images Tensor[N][C][H][W]", "filters Tensor[O][C][KH][KW]"),
        };
        for (i, dims, shape, what) in [(0, xd, &x, input), (1, wd, &w, filters)] {
            if dims.len() != d + 2 {
                let span = self.expr_span(args[i]);
                self.report(
                    Code::RankMismatch,
                    span,
                    format!("`{name}` takes {what}, but argument {} is Tensor{shape}", i + 1),
                );
                return Ty::Error;
            }
        }
        if xd[1].conflicts(&wd[1].mul(&groups)) {
            let span = self.expr_span(expr);
            let per_group = match groups {
                Dim::Known(1) => String::new(),
                ref g => format!(" per group, in {g} groups"),
            };
            self.report(
                Code::ArgumentShapes,
                span,
                format!("`{name}`: the input has {} channels, but the filters Tensor{w} take {}{per_group}", xd[1], wd[1]),
            );
            return Ty::Error;
        }
        if let (Some(o), Some(g)) = (wd[0].known(), groups.known())
            && o % g != 0
        {
            let span = self.expr_span(args[1]);
            self.report(
                Code::ArgumentShapes,
                span,
                format!("`{name}`: {o} filters cannot be split into {g} groups"),
            );
            return Ty::Error;
        }
        let mut dims = vec![xd[0].clone(), wd[0].clone()];
        for axis in 0..d {
            let window = (&wd[2 + axis], &stride, &padding, &dilation);
            let Some(positions) = self.window_positions(expr, name, &xd[2 + axis], window) else {
                return Ty::Error;
            };
            dims.push(positions);
        }
        Ty::tensor(dims)
    }

    /// `max_pool2d` and `avg_pool2d`: `[N][C][H][W]` to `[N][C][positions][positions]`, for a
    /// square window whose stride is its extent by default.
    fn pool(&mut self, builtin: Builtin, args: &[ExprId], tys: &[Ty]) -> Ty {
        let name = builtin.name();
        let x = self.tensor_arg(args[0], name, 0, &tys[0]);
        let options = self.window_options(name, args, tys, 1, &[1, -1, 0]);
        let (Some(x), Some(options)) = (x, options) else { return Ty::Error };
        let kernel = options[0].clone();
        let stride = match args.get(2) {
            Some(_) => options[1].clone(),
            None => kernel.clone(),
        };
        let padding = options[2].clone();
        if let (Some(k), Some(p)) = (kernel.known(), padding.known())
            && p.saturating_mul(2) > k
        {
            let span = self.expr_span(args[3]);
            self.report(
                Code::InvalidOption,
                span,
                format!("`{name}` pads by at most half the window, {}, not {p}", k / 2),
            );
            return Ty::Error;
        }
        let Some(xd) = x.dims() else { return Ty::tensor(vec![Dim::Unknown; 4]) };
        if xd.len() != 4 {
            let span = self.expr_span(args[0]);
            self.report(
                Code::RankMismatch,
                span,
                format!("`{name}` takes images Tensor[N][C][H][W], but its argument is Tensor{x}"),
            );
            return Ty::Error;
        }
        let mut dims = vec![xd[0].clone(), xd[1].clone()];
        for extent in &xd[2..] {
            let window = (&kernel, &stride, &padding, &Dim::Known(1));
            let Some(positions) = self.window_positions(args[0], name, extent, window) else {
                return Ty::Error;
            };
            dims.push(positions);
        }
        Ty::tensor(dims)
    }

    /// The int options of a convolution or pooling from argument `first` on, as sizes, with
    /// `defaults` for those not given (a default of -1 is a placeholder its caller replaces).
    /// Each must be an int; a constant stride, dilation, group count or kernel extent must be
    /// positive and a padding not negative.
    fn window_options(
        &mut self,
        name: &str,
        args: &[ExprId],
        tys: &[Ty],
        first: usize,
        defaults: &[i64],
    ) -> Option<Vec<Dim>> {
        let pool = first == 1;
        let labels: &[&str] = match pool {
            true => &["window", "stride", "padding"],
            false => &["stride", "padding", "dilation", "groups"],
        };
        let mut dims = Vec::with_capacity(defaults.len());
        for (i, (&default, label)) in defaults.iter().zip(labels).enumerate() {
            let index = first + i;
            let Some(&arg) = args.get(index) else {
                dims.push(Dim::Known(default));
                continue;
            };
            let dim = self.int_arg(arg, &tys[index], name, index)?;
            let least = if *label == "padding" { 0 } else { 1 };
            if let Some(value) = self.const_int(arg)
                && value < least
            {
                let span = self.expr_span(arg);
                let what = if least == 0 { "not be negative" } else { "be positive" };
                self.report(
                    Code::InvalidOption,
                    span,
                    format!("the {label} of `{name}` must {what}, not {value}"),
                );
                return None;
            }
            dims.push(dim);
        }
        Some(dims)
    }

    /// The number of positions of a window of `kernel` elements spaced by `dilation` along an
    /// axis of `extent` padded by `padding` on both sides, moved by `stride`:
    /// `(extent + 2 padding - dilation (kernel - 1) - 1) / stride + 1` rounded down, as PyTorch
    /// computes it; reported when the window does not fit.
    fn window_positions(
        &mut self,
        at: ExprId,
        name: &str,
        extent: &Dim,
        (kernel, stride, padding, dilation): (&Dim, &Dim, &Dim, &Dim),
    ) -> Option<Dim> {
        let span_of = dilation.mul(&kernel.sub(&Dim::Known(1))).add(&Dim::Known(1));
        let shifted = |extent: &Dim, by: i64| match by {
            0.. => extent.add(&Dim::Known(by)),
            _ => extent.sub(&Dim::Known(by.saturating_neg())),
        };
        // The room the window has to move in, extent + 2 padding - span, and with a stride of 1
        // the positions, room + 1, each written as the extent plus a constant when it is one.
        let (room, unit_stride) = match (span_of.known(), padding.known()) {
            (Some(span_len), Some(p)) => {
                let offset = p.saturating_mul(2).saturating_sub(span_len);
                if let Some(n) = extent.known()
                    && n.saturating_add(offset) < 0
                {
                    let span = self.expr_span(at);
                    self.report(
                        Code::ArgumentShapes,
                        span,
                        format!("`{name}`: a window spanning {span_len} elements does not fit an axis of extent {n} with padding {p}"),
                    );
                    return None;
                }
                (shifted(extent, offset), shifted(extent, offset.saturating_add(1)))
            }
            _ => {
                let room = extent.add(&padding.mul(&Dim::Known(2))).sub(&span_of);
                let positions = room.add(&Dim::Known(1));
                (room, positions)
            }
        };
        Some(match stride.known() {
            Some(1) => unit_stride,
            Some(s) => room.div_floor(s).add(&Dim::Known(1)),
            None => Dim::Unknown,
        })
    }

    /// The optional axis at argument `index` of a function along one axis: `Ok(Some(axis))`
    /// when it is a constant (or absent, and `default` gives one), `Ok(None)` when only the
    /// program's run knows it (or the rank is unknown), `Err` when it was reported.
    fn axis_option(
        &mut self,
        name: &str,
        shape: &Shape,
        args: &[ExprId],
        tys: &[Ty],
        index: usize,
        default: AxisDefault,
    ) -> Result<Option<usize>, ()> {
        let rank = shape.dims().map(<[Dim]>::len);
        let Some(&arg) = args.get(index) else {
            return Ok(match default {
                AxisDefault::First => rank.map(|_| 0),
                AxisDefault::Last => rank.and_then(|rank| rank.checked_sub(1)),
                AxisDefault::None => None,
            });
        };
        let axis = self.axis_arg_at(arg, index, &tys[index], shape, name).ok_or(())?;
        Ok(self.const_int(arg).and(rank).map(|_| axis))
    }

    /// `pad(t, w)`, `pad(t, [[b0, a0], ...])`, `pad(t, widths, mode)`,
    /// `pad(t, widths, "constant", value)`: each extent grows by its widths.
    fn pad(&mut self, expr: ExprId, args: &[ExprId], tys: &[Ty]) -> Ty {
        let name = "pad";
        let Some(shape) = self.tensor_arg(args[0], name, 0, &tys[0]) else { return Ty::Error };
        let mode = match args.get(2) {
            Some(&mode) => {
                match self.option(mode, &tys[2], name, 2, &["constant", "reflect", "edge"]) {
                    Some(mode) => Some(mode),
                    None => return Ty::Error,
                }
            }
            None => None,
        };
        if let Some(&value) = args.get(3) {
            if !self.number_arg(value, &tys[3], name, 3) {
                return Ty::Error;
            }
            if let Some(mode) = mode.filter(|mode| mode != "constant") {
                let span = self.expr_span(value);
                self.report(
                    Code::InvalidOption,
                    span,
                    format!("`pad` fills with a value in mode \"constant\", not \"{mode}\""),
                );
                return Ty::Error;
            }
        }
        let Shape::Ranked(dims) = shape else { return Ty::unranked() };
        let widths: Vec<(Dim, Dim)> = match (&tys[1], &self.body.exprs[args[1]]) {
            (Ty::Int, _) => {
                let Some(w) = self.int_arg(args[1], &tys[1], name, 1) else { return Ty::Error };
                let w = self.nonnegative(args[1], w);
                vec![(w.clone(), w); dims.len()]
            }
            (Ty::Tensor(_), Expr::TensorLit(pairs)) => {
                let pairs = pairs.clone();
                let mut widths = Vec::with_capacity(pairs.len());
                for pair in pairs {
                    let Expr::TensorLit(ends) = &self.body.exprs[pair] else {
                        return self.bad_arg(
                            pair,
                            name,
                            1,
                            &tys[1],
                            "a list of [before, after] pairs",
                        );
                    };
                    let ends = ends.clone();
                    if ends.len() != 2 {
                        return self.bad_arg(
                            pair,
                            name,
                            1,
                            &tys[1],
                            "a list of [before, after] pairs",
                        );
                    }
                    let mut both = Vec::with_capacity(2);
                    for end in ends {
                        let ty = self.result.type_of_expr(end).clone();
                        let Some(width) = self.int_arg(end, &ty, name, 1) else { return Ty::Error };
                        both.push(self.nonnegative(end, width));
                    }
                    widths.push((both[0].clone(), both[1].clone()));
                }
                widths
            }
            (Ty::Tensor(_), _) => vec![(Dim::Unknown, Dim::Unknown); dims.len()],
            (other, _) => {
                return self.bad_arg(
                    args[1],
                    name,
                    1,
                    other,
                    "an int or a list of [before, after] pairs",
                );
            }
        };
        if widths.len() != dims.len() {
            let span = self.expr_span(expr);
            self.report(
                Code::ArgumentShapes,
                span,
                format!(
                    "`pad`: {} pair{} of widths for Tensor{}, a tensor of rank {}",
                    widths.len(),
                    if widths.len() == 1 { "" } else { "s" },
                    Shape::Ranked(dims.clone()),
                    dims.len()
                ),
            )
            .help("give one [before, after] pair per axis, or one int for every side");
            return Ty::Error;
        }
        Ty::tensor(dims.iter().zip(&widths).map(|(n, (b, a))| n.add(&b.add(a))).collect())
    }

    /// `qr`, `svd`, `eigh`, `slogdet` of a matrix `[..., m, n]`: the tuple of their factors, with
    /// `k = min(m, n)` where the sizes tell it.
    fn decomposition(&mut self, builtin: Builtin, args: &[ExprId], tys: &[Ty]) -> Ty {
        let name = builtin.name();
        let square = matches!(builtin, Builtin::Eigh | Builtin::Slogdet);
        let Some(shape) = self.matrix_arg(args[0], name, &tys[0], square) else {
            return Ty::Error;
        };
        let count = if builtin == Builtin::Svd { 3 } else { 2 };
        let Shape::Ranked(dims) = shape else { return Ty::Tuple(vec![Ty::unranked(); count]) };
        let rank = dims.len();
        let (batch, m, n) = (&dims[..rank - 2], dims[rank - 2].clone(), dims[rank - 1].clone());
        let k = match (m.known(), n.known()) {
            (Some(a), Some(b)) => Dim::Known(a.min(b)),
            _ if m.equals(&n) == Some(true) => m.clone(),
            _ => Dim::Unknown,
        };
        let with = |tail: &[Dim]| Ty::tensor(batch.iter().chain(tail).cloned().collect());
        Ty::Tuple(match builtin {
            Builtin::Qr => vec![with(&[m, k.clone()]), with(&[k, n])],
            Builtin::Svd => {
                vec![with(&[m, k.clone()]), with(std::slice::from_ref(&k)), with(&[k, n])]
            }
            Builtin::Eigh => vec![with(std::slice::from_ref(&n)), with(&[n.clone(), n])],
            _ if batch.is_empty() => vec![Ty::Float, Ty::Float],
            _ => vec![with(&[]), with(&[])],
        })
    }

    /// `split(t, n)`, `split(t, n, axis)`: a tuple of `n` equal parts; `n` is a constant, since
    /// it is the number of results.
    fn split(&mut self, args: &[ExprId], tys: &[Ty]) -> Ty {
        let name = "split";
        let Some(shape) = self.nonscalar_arg(args[0], name, &tys[0]) else { return Ty::Error };
        if let Expr::TensorLit(points) = &self.body.exprs[args[1]] {
            let points = points.clone();
            return self.split_at(args, tys, shape, &points);
        }
        if tys[1] != Ty::Int {
            return self.bad_arg(args[1], name, 1, &tys[1], "a constant int");
        }
        let parts = match self.const_int(args[1]) {
            Some(n) if n >= 2 => n,
            other => {
                let span = self.expr_span(args[1]);
                let found = other
                    .map_or("a value known only when the program runs".to_owned(), |n| {
                        n.to_string()
                    });
                self.report(
                    Code::InvalidOption,
                    span,
                    format!("`split` makes one result per part, so their number is a constant of 2 or more, not {found}"),
                );
                return Ty::Error;
            }
        };
        let Ok(axis) = self.axis_option(name, &shape, args, tys, 2, AxisDefault::First) else {
            return Ty::Error;
        };
        let count = usize::try_from(parts).unwrap_or(usize::MAX);
        if count > 1024 {
            let span = self.expr_span(args[1]);
            self.report(
                Code::InvalidOption,
                span,
                format!("`split` makes at most 1024 parts, not {parts}"),
            );
            return Ty::Error;
        }
        let Shape::Ranked(mut dims) = shape else { return Ty::Tuple(vec![Ty::unranked(); count]) };
        match axis {
            Some(axis) => {
                if let Some(extent) = dims[axis].known()
                    && extent % parts != 0
                {
                    let span = self.expr_span(args[1]);
                    self.report(
                        Code::ArgumentShapes,
                        span,
                        format!("`split`: {parts} equal parts do not divide the extent {extent} of axis {axis}"),
                    );
                    return Ty::Error;
                }
                dims[axis] = dims[axis].div_exact(parts);
            }
            None => dims.iter_mut().for_each(|dim| *dim = Dim::Unknown),
        }
        Ty::Tuple(vec![Ty::tensor(dims); count])
    }

    /// `split(t, [i, j, ...])`, `split(t, [i, j, ...], axis)`: the parts before `i`, from `i` to
    /// `j`, ..., and from the last index on (NumPy's `split` at indices); the indices are ints,
    /// and their number decides the number of results, so the list is written out. As NumPy's
    /// slices, a part ends at the extent (an index past it is the extent) and a part from an
    /// index to a lower one is empty. An extent known only when the program runs is taken to
    /// hold the indices.
    fn split_at(&mut self, args: &[ExprId], tys: &[Ty], shape: Shape, points: &[ExprId]) -> Ty {
        let name = "split";
        if points.is_empty() || points.len() > 1023 {
            let span = self.expr_span(args[1]);
            self.report(
                Code::InvalidOption,
                span,
                format!("`split` at indices takes from 1 to 1023 of them, not {}", points.len()),
            );
            return Ty::Error;
        }
        let mut cuts = Vec::with_capacity(points.len());
        for &point in points {
            let ty = self.result.type_of_expr(point).clone();
            let Some(cut) = self.int_arg(point, &ty, name, 1) else { return Ty::Error };
            cuts.push(self.nonnegative(point, cut));
        }
        let Ok(axis) = self.axis_option(name, &shape, args, tys, 2, AxisDefault::First) else {
            return Ty::Error;
        };
        let count = points.len() + 1;
        let Shape::Ranked(dims) = shape else { return Ty::Tuple(vec![Ty::unranked(); count]) };
        let Some(axis) = axis else {
            let unknown = vec![Dim::Unknown; dims.len()];
            return Ty::Tuple(vec![Ty::tensor(unknown); count]);
        };
        let extent = dims[axis].known();
        let mut parts = Vec::with_capacity(count);
        let mut start = Dim::Known(0);
        for end in cuts.iter().chain(std::iter::once(&dims[axis])) {
            let mut part = dims.clone();
            part[axis] = match (start.known(), end.known(), extent) {
                (Some(from), Some(to), Some(extent)) => {
                    Dim::Known((to.min(extent) - from.min(extent)).max(0))
                }
                (Some(from), Some(to), None) if to <= from => Dim::Known(0),
                _ => end.sub(&start),
            };
            parts.push(Ty::tensor(part));
            start = end.clone();
        }
        Ty::Tuple(parts)
    }

    /// `sin(x)`'s rule: a number gives a float, a tensor its own shape.
    fn elementwise(&mut self, arg: ExprId, ty: &Ty, name: &str) -> Ty {
        match ty {
            Ty::Tensor(shape) => Ty::Tensor(shape.clone()),
            Ty::Int | Ty::Float => Ty::Float,
            other => self.bad_arg(arg, name, 0, other, "a number or a tensor"),
        }
    }

    /// `clip(x, lo, hi)` and `where(mask, a, b)`: the broadcast shape of the tensors among the
    /// three, or a float when all are numbers.
    fn ternary(&mut self, expr: ExprId, name: &str, args: &[ExprId], tys: &[Ty]) -> Ty {
        let mut joint: Option<Shape> = None;
        for (i, ty) in tys.iter().enumerate() {
            let shape = match ty {
                Ty::Tensor(shape) => shape.clone(),
                Ty::Int | Ty::Float => continue,
                Ty::Bool if name == "where" && i == 0 => continue,
                other => return self.bad_arg(args[i], name, i, other, "a number or a tensor"),
            };
            joint = Some(match joint {
                None => shape,
                Some(so_far) => match broadcast(&so_far, &shape) {
                    Ok(shape) => shape,
                    Err(_) => {
                        let span = self.expr_span(expr);
                        self.report(
                            Code::BroadcastMismatch,
                            span,
                            format!("`{name}`: the arguments are Tensor{so_far} and Tensor{shape} so far, which do not broadcast"),
                        );
                        return Ty::Error;
                    }
                },
            });
        }
        joint.map_or(Ty::Float, Ty::Tensor)
    }

    /// The shape of a reduction of `shape` along `axis`, without it or (with a `keepdims` of
    /// `true`) with extent 1 there.
    pub(super) fn reduced(
        &mut self,
        name: &str,
        shape: &Shape,
        axis_arg: ExprId,
        axis_ty: &Ty,
        keepdims: Option<ExprId>,
    ) -> Ty {
        let keep = match keepdims {
            Some(arg) => match self.keepdims(arg) {
                Some(keep) => keep,
                None => return Ty::Error,
            },
            None => false,
        };
        let Some(axis) = self.axis_arg(axis_arg, axis_ty, shape, name) else {
            return if shape.dims().is_some_and(<[Dim]>::is_empty) {
                Ty::Error
            } else {
                Ty::unranked()
            };
        };
        let Shape::Ranked(mut dims) = shape.clone() else { return Ty::unranked() };
        if self.const_int(axis_arg).is_none() {
            let rank = if keep { dims.len() } else { dims.len().saturating_sub(1) };
            return Ty::tensor(vec![Dim::Unknown; rank]);
        }
        match keep {
            true => dims[axis] = Dim::Known(1),
            false => {
                dims.remove(axis);
            }
        }
        Ty::tensor(dims)
    }

    /// A `keepdims` argument: the literal `true` or `false`.
    fn keepdims(&mut self, arg: ExprId) -> Option<bool> {
        match self.body.exprs[arg] {
            Expr::Literal(Literal::Bool(keep)) => Some(keep),
            _ => {
                let span = self.expr_span(arg);
                self.report(
                    Code::InvalidOption,
                    span,
                    "`keepdims` decides the result's rank, so it is written `true` or `false`"
                        .to_owned(),
                );
                None
            }
        }
    }

    /// A string option: a literal among `options`.
    fn option(
        &mut self,
        arg: ExprId,
        ty: &Ty,
        name: &str,
        index: usize,
        options: &[&str],
    ) -> Option<String> {
        let text = match &self.body.exprs[arg] {
            Expr::Literal(Literal::String(text)) => text.to_string(),
            _ => {
                self.bad_arg(arg, name, index, ty, "a string literal");
                return None;
            }
        };
        if options.contains(&text.as_str()) {
            return Some(text);
        }
        let listed: Vec<String> = options.iter().map(|o| format!("\"{o}\"")).collect();
        let span = self.expr_span(arg);
        self.report(Code::InvalidOption, span, format!("`{name}` has no option \"{text}\""))
            .help(format!("the options are {}", listed.join(", ")));
        None
    }

    /// An `int` or `float` argument; reports and returns `false` otherwise.
    fn number_arg(&mut self, arg: ExprId, ty: &Ty, name: &str, index: usize) -> bool {
        match ty {
            Ty::Int | Ty::Float => true,
            other => {
                self.bad_arg(arg, name, index, other, "a number");
                false
            }
        }
    }

    /// A tensor argument of rank 1 or more.
    fn nonscalar_arg(&mut self, arg: ExprId, name: &str, ty: &Ty) -> Option<Shape> {
        let shape = self.tensor_arg(arg, name, 0, ty)?;
        if shape.dims().is_some_and(<[Dim]>::is_empty) {
            self.bad_arg(arg, name, 0, ty, "a tensor of rank 1 or more");
            return None;
        }
        Some(shape)
    }

    /// A tensor argument, or a number as a rank-0 shape.
    fn tensor_or_number(
        &mut self,
        arg: ExprId,
        name: &str,
        index: usize,
        ty: &Ty,
    ) -> Option<Shape> {
        match ty {
            Ty::Tensor(shape) => Some(shape.clone()),
            Ty::Int | Ty::Float => Some(Shape::Ranked(Vec::new())),
            other => {
                self.bad_arg(arg, name, index, other, "a number or a tensor");
                None
            }
        }
    }

    /// A matrix or a stack of matrices (`[..., m, n]`; square when `square`).
    pub(super) fn matrix_arg(
        &mut self,
        arg: ExprId,
        name: &str,
        ty: &Ty,
        square: bool,
    ) -> Option<Shape> {
        let shape = self.tensor_arg(arg, name, 0, ty)?;
        let Shape::Ranked(dims) = &shape else { return Some(shape) };
        let what = if square {
            "a square matrix Tensor[n][n] or a stack of them"
        } else {
            "a matrix or a stack of matrices"
        };
        if dims.len() < 2 {
            let span = self.expr_span(arg);
            self.report(
                Code::RankMismatch,
                span,
                format!("`{name}` needs {what}, but its argument is {ty}"),
            );
            return None;
        }
        let (m, n) = (&dims[dims.len() - 2], &dims[dims.len() - 1]);
        if square && m.conflicts(n) {
            let span = self.expr_span(arg);
            self.report(
                Code::RankMismatch,
                span,
                format!("`{name}` needs square matrices, but its argument is {ty}"),
            );
            return None;
        }
        if square {
            let joined = m.join(n);
            let mut dims = dims.clone();
            let rank = dims.len();
            dims[rank - 2] = joined.clone();
            dims[rank - 1] = joined;
            return Some(Shape::Ranked(dims));
        }
        Some(shape)
    }

    /// Reports a known negative extent, and turns it into an unknown one.
    fn nonnegative(&mut self, arg: ExprId, dim: Dim) -> Dim {
        match dim {
            Dim::Known(n) if n < 0 => {
                let span = self.expr_span(arg);
                self.report(
                    Code::InvalidDimension,
                    span,
                    format!("a count cannot be negative ({n})"),
                );
                Dim::Unknown
            }
            dim => dim,
        }
    }
}
