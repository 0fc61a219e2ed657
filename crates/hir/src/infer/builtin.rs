//! Typing calls of built-ins, one arm per [`Rule`] of the table in `builtins.rs`.

use smol_str::SmolStr;

use super::{InferCtx, Resolution};
use crate::{
    body::{Expr, ExprId, HirSpan, Literal, RelSpan},
    builtins::{Builtin, PRINT_MODES, Rule},
    diagnostics::{Code, a},
    ty::{Dim, Shape, Ty, broadcast},
};

impl InferCtx<'_> {
    pub(crate) fn infer_builtin(&mut self, expr: ExprId, builtin: Builtin, args: &[ExprId]) -> Ty {
        let info = builtin.info();
        // Arguments that name functions are typed by their rule, not as values.
        let arg_tys: Vec<Ty> = match info.rule {
            Rule::Gradcheck => {
                let mut tys = vec![Ty::Error];
                tys.extend(self.infer_args(args.get(1..).unwrap_or(&[])));
                tys
            }
            _ => self.infer_args(args),
        };
        let too_few = args.len() < info.min_args;
        let too_many = info.max_args.is_some_and(|max| args.len() > max);
        if too_few || too_many {
            let span = self.expr_span(expr);
            let expected = match info.max_args {
                Some(max) if max == info.min_args => format!("{max}"),
                Some(max) => format!("{} to {max}", info.min_args),
                None => format!("at least {}", info.min_args),
            };
            // `zeros(3, 4)`, from NumPy's `zeros((3, 4))` or PyTorch's `zeros(3, 4)`.
            let shape_list = info.rule == Rule::FromShapeList
                && too_many
                && arg_tys.iter().all(|ty| matches!(ty, Ty::Int));
            let list_edits = match (args.first(), args.last()) {
                (Some(&first), Some(&last)) if shape_list => {
                    let end = self.expr_span(last);
                    let end = HirSpan {
                        span: RelSpan {
                            range: syntax::TextRange::empty(end.span.range.end()),
                            ..end.span
                        },
                        ..end
                    };
                    Some((self.expr_span(first), end))
                }
                _ => None,
            };
            let diagnostic = self.report(
                Code::ArgumentCount,
                span,
                format!(
                    "`{}` takes {expected} argument{}, but {} {} given",
                    info.name,
                    if expected == "1" { "" } else { "s" },
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            );
            match list_edits {
                Some(_) => {
                    diagnostic.help(format!("the shape is one list, as in `{}([3, 4])`", info.name))
                }
                None => diagnostic.help(format!("usage: `{}`", info.signature)),
            };
            if let Some((start, end)) = list_edits {
                let mut start = start;
                start.span.range = syntax::TextRange::empty(start.span.range.start());
                diagnostic.fixes.push(crate::diagnostics::HirFix {
                    label: "put the extents in a list".to_owned(),
                    edits: vec![(start, "[".to_owned()), (end, "]".to_owned())],
                });
            }
            return Ty::Error;
        }
        // Strings are allowed only where the rule takes one; check the rest as values. The text
        // `format` makes is for `print` and `write` alone; elsewhere a string is a literal.
        for (i, (&arg, ty)) in args.iter().zip(&arg_tys).enumerate() {
            if *ty == Ty::Str && info.rule != Rule::Print && self.is_format_call(arg) {
                let span = self.expr_span(arg);
                self.report(
                    Code::StringValue,
                    span,
                    format!(
                        "the text of `format` can only be printed, not be argument {} of `{}`",
                        i + 1,
                        info.name
                    ),
                )
                .help("pass it to `print` or `write`; other built-ins take a string literal here");
                return Ty::Error;
            }
        }
        let string_at: &[usize] = match info.rule {
            Rule::Print => &[],
            Rule::Format => &[],
            Rule::Load | Rule::Einsum | Rule::PrintOptions => &[0],
            Rule::Save | Rule::Assert | Rule::Activation => &[1],
            Rule::Reduction => &[2],
            Rule::Pad => &[2],
            Rule::MatrixNorm => &[1],
            Rule::Plot => &[0, 2, 3, 4],
            Rule::Scatter => &[0, 3, 4, 5],
            Rule::Histogram => &[0, 3],
            Rule::SaveImage => &[0],
            _ => &[],
        };
        for (i, (&arg, ty)) in args.iter().zip(&arg_tys).enumerate() {
            let allowed = matches!(info.rule, Rule::Print | Rule::Format) && matches!(ty, Ty::Str)
                || string_at.contains(&i);
            if !allowed
                && matches!(ty, Ty::Str | Ty::Void | Ty::Fn(_))
                && !self.check_value(arg, ty)
            {
                return Ty::Error;
            }
        }
        if arg_tys.iter().any(Ty::is_error) && info.rule != Rule::Gradcheck {
            return Ty::Error;
        }
        // Records go to the built-ins that lift over them and to `print` and `grad`; to any
        // other, a record is an error of its own rather than a type mismatch.
        let takes_records = matches!(
            info.rule,
            Rule::Print | Rule::GradOfVariable | Rule::Elementwise | Rule::Save
        ) || info.rule == Rule::Gradcheck;
        if !takes_records
            && let Some((&arg, ty)) =
                args.iter().zip(&arg_tys).find(|(_, ty)| matches!(ty, Ty::Record(_)))
        {
            let span = self.expr_span(arg);
            self.report(
                Code::RecordOperand,
                span,
                format!("`{}` does not take a record, and this is {ty}", info.name),
            )
            .help("pass a field, as in `net.w`; over records, the arithmetic operators, the element-wise functions such as `sqrt`, `grad` and `print` apply field by field");
            return Ty::Error;
        }
        let name = info.name;
        match info.rule {
            Rule::Elementwise => match &arg_tys[0] {
                Ty::Tensor(shape) => Ty::Tensor(shape.clone()),
                Ty::Int | Ty::Float => Ty::Float,
                // `sqrt(v)` of a record: field by field.
                Ty::Record(_) if self.lifts(&arg_tys[0]) => arg_tys[0].clone(),
                Ty::Record(_) => {
                    self.not_liftable(expr, &format!("`{name}`"), &arg_tys[0]);
                    Ty::Error
                }
                other => self.bad_arg(args[0], name, 0, other, "a number or a tensor"),
            },
            Rule::ElementwiseBinary => self.elementwise_binary(expr, name, args, &arg_tys),
            Rule::MaxMin => {
                if args.len() == 1 || args.len() == 3 {
                    return self.reduction(name, args, &arg_tys);
                }
                if arg_tys[0].is_tensor() && arg_tys[1] == Ty::Int {
                    return self.reduction(name, args, &arg_tys);
                }
                self.elementwise_binary(expr, name, args, &arg_tys)
            }
            Rule::Reduction => self.reduction(name, args, &arg_tys),
            Rule::SameShapeAxis => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &arg_tys[0]) else {
                    return Ty::Error;
                };
                if let Some(&axis) = args.get(1)
                    && self.axis_arg(axis, &arg_tys[1], &shape, name).is_none()
                {
                    return Ty::Error;
                }
                Ty::Tensor(shape)
            }
            Rule::FromShapeList => Ty::Tensor(self.shape_list(args[0], &arg_tys[0], name, 0, None)),
            Rule::Full => {
                let shape = self.shape_list(args[0], &arg_tys[0], name, 0, None);
                if !matches!(arg_tys[1], Ty::Int | Ty::Float) {
                    return self.bad_arg(args[1], name, 1, &arg_tys[1], "a number");
                }
                Ty::Tensor(shape)
            }
            Rule::Eye => {
                let Some(n) = self.int_arg(args[0], &arg_tys[0], name, 0) else { return Ty::Error };
                Ty::tensor(vec![n.clone(), n])
            }
            Rule::Arange => self.arange(args, &arg_tys),
            Rule::Reshape => {
                let Some(from) = self.tensor_arg(args[0], name, 0, &arg_tys[0]) else {
                    return Ty::Error;
                };
                let to = self.reshape_target(args[1], &arg_tys[1], &from);
                let (a, b) = (from.size(), to.size());
                if a.conflicts(&b) {
                    let span = self.expr_span(expr);
                    let (tensor_span, list_span) =
                        (self.expr_span(args[0]), self.expr_span(args[1]));
                    self.report(
                        Code::ElementCountMismatch,
                        span,
                        format!("cannot reshape Tensor{from} ({a} elements) to Tensor{to} ({b} elements)"),
                    )
                    .label(tensor_span, format!("Tensor{from} has {a} elements"))
                    .label(list_span, format!("Tensor{to} has {b} elements"));
                    return Ty::Error;
                }
                Ty::Tensor(to)
            }
            Rule::Transpose => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &arg_tys[0]) else {
                    return Ty::Error;
                };
                let Shape::Ranked(dims) = shape else { return Ty::unranked() };
                match args.get(1) {
                    None => Ty::tensor(dims.into_iter().rev().collect()),
                    Some(&perm) => self.permute(perm, &dims),
                }
            }
            Rule::Concat => self.concat(expr, args, &arg_tys),
            Rule::Stack => self.stack(expr, args, &arg_tys),
            Rule::ShapeQuery => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &arg_tys[0]) else {
                    return Ty::Error;
                };
                if let Some(&axis) = args.get(1) {
                    self.axis_arg(axis, &arg_tys[1], &shape, name);
                }
                Ty::Int
            }
            Rule::Truth => match (&arg_tys[0], args.get(1)) {
                (Ty::Tensor(_) | Ty::Int | Ty::Float | Ty::Bool | Ty::Char, None) => Ty::Bool,
                (Ty::Tensor(shape), Some(&axis)) => {
                    let shape = shape.clone();
                    self.reduced(name, &shape, axis, &arg_tys[1], args.get(2).copied())
                }
                (other, _) => self.bad_arg(args[0], name, 0, other, "a tensor"),
            },
            Rule::Seed => {
                self.int_arg(args[0], &arg_tys[0], name, 0);
                Ty::Void
            }
            Rule::SquareToSquare | Rule::SquareToScalar => {
                let Some(shape) = self.square_arg(expr, args[0], &arg_tys[0], name) else {
                    return Ty::Error;
                };
                if info.rule == Rule::SquareToScalar { Ty::Float } else { Ty::Tensor(shape) }
            }
            Rule::Solve => {
                let Some(a) = self.square_arg(expr, args[0], &arg_tys[0], name) else {
                    return Ty::Error;
                };
                let Some(b) = self.tensor_arg(args[1], name, 1, &arg_tys[1]) else {
                    return Ty::Error;
                };
                if let (Shape::Ranked(a), Shape::Ranked(bd)) = (&a, &b) {
                    let rows_ok =
                        bd.first().is_some_and(|r| !a[0].conflicts(r)) && matches!(bd.len(), 1 | 2);
                    if !rows_ok {
                        let span = self.expr_span(args[1]);
                        self.report(
                            Code::MatmulMismatch,
                            span,
                            format!("`solve(A, b)`: A is Tensor[{}][{}], so b must be Tensor[{}] or Tensor[{}][k], but it is Tensor{b}", a[0], a[1], a[0], a[0]),
                        );
                        return Ty::Error;
                    }
                }
                Ty::Tensor(b)
            }
            Rule::Diag => {
                let Some(shape) = self.tensor_arg(args[0], name, 0, &arg_tys[0]) else {
                    return Ty::Error;
                };
                match shape {
                    Shape::Ranked(dims) if dims.len() == 1 => {
                        Ty::tensor(vec![dims[0].clone(), dims[0].clone()])
                    }
                    Shape::Ranked(dims) if dims.len() == 2 => {
                        Ty::tensor(vec![dims[0].join(&dims[1])])
                    }
                    Shape::Unranked => Ty::unranked(),
                    Shape::Ranked(_) => {
                        self.bad_arg(args[0], name, 0, &arg_tys[0], "a Tensor[n] or a Tensor[n][n]")
                    }
                }
            }
            Rule::Print => Ty::Void,
            Rule::Format => {
                self.format(args, &arg_tys);
                Ty::Str
            }
            Rule::PrintOptions => {
                self.print_options(expr, args, &arg_tys);
                Ty::Void
            }
            Rule::Load => {
                self.string_arg(args[0], &arg_tys[0], name, 0);
                Ty::unranked()
            }
            Rule::Save => {
                // A number converts to a tensor where one is expected: it is saved as rank 0. A
                // record is saved as an `.npz` archive of its fields.
                match &arg_tys[0] {
                    Ty::Float | Ty::Int => {}
                    Ty::Record(_) if self.lifts(&arg_tys[0]) => {}
                    Ty::Record(_) => self.not_liftable(expr, &format!("`{name}`"), &arg_tys[0]),
                    other => {
                        self.tensor_arg(args[0], name, 0, other);
                    }
                }
                self.string_arg(args[1], &arg_tys[1], name, 1);
                Ty::Void
            }
            Rule::Plot | Rule::Scatter | Rule::Histogram | Rule::SaveImage => {
                self.picture(info.rule, args, &arg_tys);
                Ty::Void
            }
            Rule::Backward => {
                if !arg_tys[0].is_differentiable() {
                    let span = self.expr_span(args[0]);
                    self.report(
                        Code::GradOfNonVariable,
                        span,
                        format!(
                            "`backward` needs a float or a tensor that depends on `var`s, found {}",
                            arg_tys[0]
                        ),
                    );
                }
                Ty::Void
            }
            Rule::GradOfVariable => {
                if args.len() > 1 {
                    let span = self.expr_span(args[1]);
                    self.report(
                        Code::ArgumentCount,
                        span,
                        "`grad(x)` of a variable takes one argument; `grad(f, k)` needs a function"
                            .to_owned(),
                    );
                    return Ty::Error;
                }
                let is_variable = matches!(self.body.exprs[args[0]], Expr::Name { .. })
                    && matches!(
                        self.result.resolution(args[0]),
                        Some(Resolution::Local(_) | Resolution::Global { .. })
                    );
                if !is_variable {
                    let span = self.expr_span(args[0]);
                    self.report(
                        Code::GradOfNonVariable,
                        span,
                        "`grad(x)` takes a variable: the gradient is stored per variable by `backward`".to_owned(),
                    )
                    .help("assign the expression to a variable first, and use that variable in the computation");
                    return Ty::Error;
                }
                if !self.is_differentiable(&arg_tys[0]) {
                    let span = self.expr_span(args[0]);
                    let ty = &arg_tys[0];
                    self.report(
                        Code::GradOfNonVariable,
                        span,
                        format!(
                            "`grad` of {}: only float and tensor values, and records of them, have gradients",
                            a(&ty)
                        ),
                    );
                    return Ty::Error;
                }
                arg_tys[0].clone()
            }
            Rule::TransformOnly => {
                let span = self.expr_span(args[0]);
                self.report(
                    Code::TransformTarget,
                    span,
                    format!("`{name}` applies to a function, as in `{}`", info.signature),
                );
                Ty::Error
            }
            Rule::Assert => {
                self.check_condition(args[0], &arg_tys[0]);
                if let Some(&message) = args.get(1) {
                    self.string_arg(message, &arg_tys[1], name, 1);
                }
                Ty::Void
            }
            Rule::AssertEq | Rule::AssertClose => {
                for (i, &arg) in args.iter().enumerate().skip(2) {
                    if !matches!(arg_tys[i], Ty::Int | Ty::Float) {
                        self.bad_arg(arg, name, i, &arg_tys[i], "a number (a tolerance)");
                    }
                }
                self.elementwise_binary(expr, name, &args[..2], &arg_tys[..2]);
                Ty::Void
            }
            Rule::Gradcheck => {
                let func = args[0];
                let Expr::Name { name: fname, local } = self.body.exprs[func].clone() else {
                    // Not a name: typed as a value, so that what is wrong with it is reported
                    // (`&f` has its own error), then refused.
                    let ty = self.infer_args(&[func]).pop().unwrap_or(Ty::Error);
                    self.bad_arg(func, name, 0, &ty, "the name of a function");
                    return Ty::Void;
                };
                let resolution = match local {
                    Some(local) => Some(Resolution::Local(local)),
                    None => self.resolve_global(func, &fname),
                };
                match resolution {
                    Some(Resolution::Function(def)) => {
                        self.result.resolutions.insert(func, Resolution::Function(def));
                        self.result.differentiated.push(def);
                        let fn_ty = self.fn_ty_of(def);
                        self.result.expr_types.insert(func, Ty::Fn(Box::new(fn_ty.clone())));
                        if !fn_ty.ret.is_one_element() {
                            let span = self.expr_span(func);
                            self.report(
                                Code::GradOfNonScalar,
                                span,
                                format!("`gradcheck` needs a function that returns a float (or a tensor of one element), but `{fname}` returns {}", fn_ty.ret),
                            );
                            return Ty::Void;
                        }
                        // Every field of a record parameter is checked.
                        if let Some(first @ Ty::Record(_)) = fn_ty.params.first()
                            && !self.lifts(first)
                        {
                            self.not_liftable(func, "`gradcheck`", first);
                            return Ty::Void;
                        }
                        let callee = self.callee_of_function_for_check(def);
                        if !arg_tys[1..].iter().any(Ty::is_error) {
                            self.call_with(expr, &callee, &args[1..], &arg_tys[1..]);
                        }
                    }
                    Some(other) => {
                        self.result.resolutions.insert(func, other);
                        let span = self.expr_span(func);
                        self.report(
                            Code::TransformTarget,
                            span,
                            format!("`gradcheck` checks a function, but `{fname}` is not one"),
                        );
                    }
                    None => {}
                }
                Ty::Void
            }
            Rule::Einsum => self.infer_einsum(args, &arg_tys),
            Rule::Activation
            | Rule::Predicate
            | Rule::Ternary
            | Rule::ArgReduction
            | Rule::Moment
            | Rule::Sort
            | Rule::TopK
            | Rule::Scan
            | Rule::Roll
            | Rule::Tile
            | Rule::Repeat
            | Rule::Pad
            | Rule::Split
            | Rule::Decomposition
            | Rule::Pinv
            | Rule::Lstsq
            | Rule::MatrixNorm
            | Rule::Nonzero
            | Rule::Linspace
            | Rule::Squeeze
            | Rule::Unsqueeze
            | Rule::Triangle
            | Rule::OneHot
            | Rule::BroadcastTo
            | Rule::Kron
            | Rule::Outer
            | Rule::Randint
            | Rule::Permutation
            | Rule::Distribution
            | Rule::Cross
            | Rule::Conv
            | Rule::Pool
            | Rule::ClassLoss
            | Rule::PairLoss => self.infer_library(expr, builtin, args, &arg_tys),
        }
    }

    fn callee_of_function_for_check(&self, def: crate::DefId) -> super::call::Callee {
        let signature = crate::body::signature_query(self.db, def);
        super::call::Callee {
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

    /// `print_options("line")`, or up to four numeric options whose literal values must make
    /// sense.
    fn print_options(&mut self, expr: ExprId, args: &[ExprId], arg_tys: &[Ty]) {
        const NAME: &str = "print_options";
        if let Expr::Literal(Literal::String(mode)) = &self.body.exprs[args[0]] {
            let mode = mode.clone();
            if args.len() > 1 {
                let span = self.expr_span(expr);
                self.report(
                    Code::ArgumentCount,
                    span,
                    "`print_options` with a mode takes no other argument".to_owned(),
                );
            }
            if !PRINT_MODES.contains(&mode.as_str()) {
                let span = self.expr_span(args[0]);
                let candidates: Vec<(SmolStr, &'static str)> = PRINT_MODES
                    .iter()
                    .map(|m| (SmolStr::new(format!("\"{m}\"")), "mode"))
                    .collect();
                let quoted = format!("\"{mode}\"");
                let diagnostic = self.report(
                    Code::InvalidOption,
                    span,
                    format!("`print_options` has no mode {quoted}"),
                );
                if !crate::suggest::did_you_mean_owned(diagnostic, &quoted, span, &candidates) {
                    diagnostic.help("the modes are \"default\", \"line\" and \"exact\"");
                }
            }
            return;
        }
        // (what, expected type, smallest literal value, largest)
        let options: [(&str, Ty, i64, i64); 4] = [
            ("the precision", Ty::Int, 0, 17),
            ("the threshold", Ty::Int, 0, i64::MAX),
            ("the line width", Ty::Int, 1, i64::MAX),
            ("suppress_small", Ty::Bool, 0, 0),
        ];
        for (index, ((&arg, ty), (what, expected, low, high))) in
            args.iter().zip(arg_tys).zip(options).enumerate()
        {
            if *ty != expected {
                let article = if expected == Ty::Int { "an int" } else { "a bool" };
                self.bad_arg(arg, NAME, index, ty, article);
                continue;
            }
            if let Some(value) = self.const_int(arg)
                && expected == Ty::Int
                && !(low..=high).contains(&value)
            {
                let span = self.expr_span(arg);
                let range = match high {
                    i64::MAX => format!("at least {low}"),
                    _ => format!("{low} to {high}"),
                };
                self.report(
                    Code::InvalidOption,
                    span,
                    format!("{what} of `print_options` must be {range}, not {value}"),
                );
            }
        }
    }

    pub(super) fn bad_arg(
        &mut self,
        arg: ExprId,
        name: &str,
        index: usize,
        ty: &Ty,
        expected: &str,
    ) -> Ty {
        if !ty.is_error() {
            let span = self.expr_span(arg);
            self.report(
                Code::TypeMismatch,
                span,
                format!("argument {} of `{name}` must be {expected}, found {ty}", index + 1),
            );
        }
        Ty::Error
    }

    pub(super) fn tensor_arg(
        &mut self,
        arg: ExprId,
        name: &str,
        index: usize,
        ty: &Ty,
    ) -> Option<Shape> {
        match ty {
            Ty::Tensor(shape) => Some(shape.clone()),
            other => {
                self.bad_arg(arg, name, index, other, "a tensor");
                None
            }
        }
    }

    /// The arguments of `plot`, `scatter`, `histogram` and `save_image`: the file name and the
    /// labels are string literals; the data are tensors of the ranks the picture draws.
    fn picture(&mut self, rule: Rule, args: &[ExprId], arg_tys: &[Ty]) {
        let (name, tensors, ranks, expected, strings): (_, &[usize], &[usize], _, &[usize]) =
            match rule {
                Rule::Plot => ("plot", &[1], &[1, 2], "a Tensor[n] or a Tensor[k][n]", &[2, 3, 4]),
                Rule::Scatter => ("scatter", &[1, 2], &[], "a tensor", &[3, 4, 5]),
                Rule::Histogram => ("histogram", &[1], &[], "a tensor", &[3]),
                _ => ("save_image", &[1], &[2, 3], "a Tensor[h][w] or a Tensor[n][h][w]", &[]),
            };
        self.string_arg(args[0], &arg_tys[0], name, 0);
        for &i in tensors {
            if let Some(Shape::Ranked(dims)) = self.tensor_arg(args[i], name, i, &arg_tys[i])
                && !ranks.is_empty()
                && !ranks.contains(&dims.len())
            {
                self.bad_arg(args[i], name, i, &arg_tys[i], expected);
            }
        }
        if rule == Rule::Histogram {
            self.int_arg(args[2], &arg_tys[2], name, 2);
        }
        for &i in strings.iter().filter(|&&i| i < args.len()) {
            self.string_arg(args[i], &arg_tys[i], name, i);
        }
    }

    pub(super) fn string_arg(&mut self, arg: ExprId, ty: &Ty, name: &str, index: usize) {
        if *ty != Ty::Str {
            self.bad_arg(arg, name, index, ty, "a string literal");
        }
    }

    /// An int argument as a dimension.
    pub(super) fn int_arg(
        &mut self,
        arg: ExprId,
        ty: &Ty,
        name: &str,
        index: usize,
    ) -> Option<Dim> {
        if *ty != Ty::Int {
            self.bad_arg(arg, name, index, ty, "an int");
            return None;
        }
        Some(self.dim_of_int_expr(arg))
    }

    /// An axis argument (the second): an int, in range when it is a constant.
    pub(super) fn axis_arg(
        &mut self,
        arg: ExprId,
        ty: &Ty,
        shape: &Shape,
        name: &str,
    ) -> Option<usize> {
        self.axis_arg_at(arg, 1, ty, shape, name)
    }

    /// Argument `index`, an axis: an int, in range when it is a constant.
    pub(super) fn axis_arg_at(
        &mut self,
        arg: ExprId,
        index: usize,
        ty: &Ty,
        shape: &Shape,
        name: &str,
    ) -> Option<usize> {
        if *ty != Ty::Int {
            self.bad_arg(arg, name, index, ty, "an int axis");
            return None;
        }
        let value = self.const_int(arg);
        let rank = shape.dims().map(<[Dim]>::len);
        match (value, rank) {
            (Some(axis), Some(rank)) if axis < 0 || axis as usize >= rank => {
                let span = self.expr_span(arg);
                self.report(
                    Code::InvalidAxis,
                    span,
                    format!(
                        "axis {axis} is out of range for a tensor of rank {rank} (Tensor{shape})"
                    ),
                )
                .help(if rank == 0 {
                    "a Tensor[] has no axes".to_owned()
                } else {
                    format!("axes run from 0 to {}", rank - 1)
                });
                None
            }
            (Some(axis), _) => Some(axis as usize),
            // An axis known only at run time: 0 stands in for the static checks.
            (None, _) => Some(0).filter(|_| rank.is_some_and(|r| r > 0)),
        }
    }

    pub(super) fn square_arg(
        &mut self,
        expr: ExprId,
        arg: ExprId,
        ty: &Ty,
        name: &str,
    ) -> Option<Shape> {
        let shape = self.tensor_arg(arg, name, 0, ty)?;
        match &shape {
            Shape::Ranked(dims) if dims.len() == 2 => {
                if dims[0].conflicts(&dims[1]) {
                    let span = self.expr_span(expr);
                    self.report(
                        Code::RankMismatch,
                        span,
                        format!("`{name}` needs a square matrix, but its argument is {ty}"),
                    );
                    return None;
                }
                let n = dims[0].join(&dims[1]);
                Some(Shape::Ranked(vec![n.clone(), n]))
            }
            Shape::Unranked => Some(shape),
            Shape::Ranked(_) => {
                let span = self.expr_span(arg);
                self.report(
                    Code::RankMismatch,
                    span,
                    format!(
                        "`{name}` needs a square matrix Tensor[n][n], but its argument is {ty}"
                    ),
                );
                None
            }
        }
    }

    pub(super) fn elementwise_binary(
        &mut self,
        expr: ExprId,
        name: &str,
        args: &[ExprId],
        tys: &[Ty],
    ) -> Ty {
        let (a, b) = (&tys[0], &tys[1]);
        match (a, b) {
            (Ty::Tensor(x), Ty::Tensor(y)) => match broadcast(x, y) {
                Ok(shape) => Ty::Tensor(shape),
                Err(_) => {
                    let span = self.expr_span(expr);
                    let (lhs_span, rhs_span) = (self.expr_span(args[0]), self.expr_span(args[1]));
                    self.report(
                        Code::BroadcastMismatch,
                        span,
                        format!("`{name}`: the arguments are {a} and {b}, which do not broadcast"),
                    )
                    .label(lhs_span, format!("{a}"))
                    .label(rhs_span, format!("{b}"));
                    Ty::Error
                }
            },
            (Ty::Tensor(shape), Ty::Int | Ty::Float) | (Ty::Int | Ty::Float, Ty::Tensor(shape)) => {
                Ty::Tensor(shape.clone())
            }
            (Ty::Int | Ty::Float, Ty::Int | Ty::Float) => {
                if name == "max" || name == "min" || name == "mod" {
                    if *a == Ty::Int && *b == Ty::Int { Ty::Int } else { Ty::Float }
                } else {
                    Ty::Float
                }
            }
            (Ty::Bool, Ty::Bool) | (Ty::Char, Ty::Char) if name == "assert_eq" => Ty::Bool,
            _ => {
                let (i, bad) =
                    if matches!(a, Ty::Int | Ty::Float | Ty::Tensor(_)) { (1, b) } else { (0, a) };
                self.bad_arg(args[i], name, i, bad, "a number or a tensor")
            }
        }
    }

    pub(super) fn reduction(&mut self, name: &str, args: &[ExprId], tys: &[Ty]) -> Ty {
        let shape = match &tys[0] {
            Ty::Tensor(shape) => shape.clone(),
            Ty::Int | Ty::Float if args.len() == 1 => return Ty::Float,
            other => return self.bad_arg(args[0], name, 0, other, "a tensor"),
        };
        let Some(&axis_arg) = args.get(1) else { return Ty::Float };
        // `norm(t, axis, ord, keepdims)`; the others `(t, axis, keepdims)`.
        let keepdims = match name {
            "norm" => {
                if let Some(&ord) = args.get(2) {
                    self.vector_ord(ord, &tys[2]);
                }
                args.get(3)
            }
            _ => args.get(2),
        };
        self.reduced(name, &shape, axis_arg, &tys[1], keepdims.copied())
    }

    /// The `ord` of `norm`: a number, `"inf"` or `"-inf"`.
    fn vector_ord(&mut self, arg: ExprId, ty: &Ty) {
        match ty {
            Ty::Int | Ty::Float => {}
            Ty::Str => match &self.body.exprs[arg] {
                Expr::Literal(Literal::String(text)) if text == "inf" || text == "-inf" => {}
                _ => {
                    let span = self.expr_span(arg);
                    self.report(
                        Code::InvalidOption,
                        span,
                        "`norm` takes a number, \"inf\" or \"-inf\" as its order".to_owned(),
                    );
                }
            },
            other => {
                self.bad_arg(arg, "norm", 2, other, "a number (the order)");
            }
        }
    }

    /// `arange(n)`, `arange(start, stop)`, `arange(start, stop, step)`.
    fn arange(&mut self, args: &[ExprId], tys: &[Ty]) -> Ty {
        let name = "arange";
        if args.len() == 1 {
            let Some(n) = self.int_arg(args[0], &tys[0], name, 0) else { return Ty::Error };
            return Ty::tensor(vec![n]);
        }
        for (i, ty) in tys.iter().enumerate() {
            if !matches!(ty, Ty::Int | Ty::Float) {
                return self.bad_arg(args[i], name, i, ty, "a number");
            }
        }
        let ints: Option<Vec<i64>> = args.iter().map(|&arg| self.const_int(arg)).collect();
        let length = match ints.as_deref() {
            Some([start, stop]) => Dim::Known((stop - start).max(0)),
            Some([_, _, 0]) => {
                let span = self.expr_span(args[2]);
                self.report(
                    Code::InvalidOption,
                    span,
                    "the step of `arange` cannot be 0".to_owned(),
                );
                return Ty::Error;
            }
            Some(&[start, stop, step]) => {
                let span = i128::from(stop) - i128::from(start);
                let step = i128::from(step);
                // ceil(span / step), and 0 when the step points away from stop.
                let count = (span + step - step.signum()) / step;
                Dim::Known(i64::try_from(count.max(0)).unwrap_or(0))
            }
            // `arange(start, stop)` of symbolic ints: `stop - start` elements.
            None if args.len() == 2 && tys.iter().all(|ty| *ty == Ty::Int) => {
                self.dim_of_int_expr(args[1]).sub(&self.dim_of_int_expr(args[0]))
            }
            _ => Dim::Unknown,
        };
        Ty::tensor(vec![length])
    }

    /// Whether `expr` is a call of `format`.
    pub(crate) fn is_format_call(&self, expr: ExprId) -> bool {
        matches!(&self.body.exprs[expr], Expr::Call { callee, .. }
            if self.result.resolution(*callee) == Some(Resolution::Builtin(Builtin::Format)))
    }

    /// `format("...", values...)`: the first argument is a string literal whose placeholders the
    /// values fill, one each, with specs that fit them.
    fn format(&mut self, args: &[ExprId], tys: &[Ty]) {
        use crate::format_string::{FormatPart, FormatValueKind as ValueKind, parse_format_string};
        let Some((&string, values)) = args.split_first() else { return };
        let string_span = self.expr_span(string);
        if !matches!(self.body.exprs[string], Expr::Literal(Literal::String(_))) {
            let found = tys.first().cloned().unwrap_or(Ty::Error);
            if !found.is_error() {
                self.report(
                    Code::TypeMismatch,
                    string_span,
                    format!("the first argument of `format` is the format string, such as `\"loss {{:.4}}\"`; found {}", a(&found)),
                );
            }
            return;
        }
        let token = self.source_text(string_span.span);
        // A span inside the literal: `range` is relative to its token.
        let inside = |range: syntax::TextRange| HirSpan {
            span: RelSpan { range: range + string_span.span.range.start(), ..string_span.span },
            ..string_span
        };
        let format = match parse_format_string(&token) {
            Ok(format) => format,
            Err(error) => {
                let diagnostic =
                    self.report(Code::FormatString, inside(error.range), error.message);
                if let Some(help) = error.help {
                    diagnostic.help(help);
                }
                return;
            }
        };
        // `{epoch}`: the habit of Python's f-strings. When every placeholder names a value and
        // none follows the string, the fix moves the names after it.
        let named: Vec<(syntax::TextRange, &str, &str)> = format
            .pieces
            .iter()
            .filter_map(|piece| match piece {
                FormatPart::Placeholder { range, name: Some(name), .. } => {
                    let text = &token[usize::from(range.start()) + 1..usize::from(range.end()) - 1];
                    let spec = &text[name.len()..];
                    Some((*range, name.as_str(), spec))
                }
                _ => None,
            })
            .collect();
        if let Some(&(range, name, _)) = named.first() {
            let position = name.bytes().all(|b| b.is_ascii_digit());
            let what = if position { "position" } else { "name" };
            let all_named = named.len() == format.placeholders().count();
            let identifiers = named.iter().all(|(_, name, _)| {
                name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && !name.as_bytes()[0].is_ascii_digit()
            });
            let diagnostic = self.report(
                Code::FormatString,
                inside(range),
                format!("a placeholder of `format` takes no {what}: `{{{name}}}`"),
            );
            diagnostic.help(format!(
                "placeholders are `{{}}` or `{{:spec}}`, filled by the values after the string in order{}",
                if position { String::new() } else { format!(": write `{{}}` and pass `{name}` after the string") }
            ));
            if all_named && identifiers && values.is_empty() {
                let mut edits: Vec<(HirSpan, String)> = named
                    .iter()
                    .map(|&(range, _, spec)| (inside(range), format!("{{{spec}}}")))
                    .collect();
                let end = syntax::TextRange::empty(string_span.span.range.end());
                let names: Vec<&str> = named.iter().map(|&(_, name, _)| name).collect();
                edits.push((
                    HirSpan { span: RelSpan { range: end, ..string_span.span }, ..string_span },
                    format!(", {}", names.join(", ")),
                ));
                diagnostic.fixes.push(crate::diagnostics::HirFix {
                    label: format!(
                        "pass {} after the string",
                        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
                    ),
                    edits,
                });
            }
            return;
        }
        let placeholders: Vec<_> = format.placeholders().map(|(r, spec)| (r, *spec)).collect();
        for (&(range, spec), (&value, ty)) in placeholders.iter().zip(values.iter().zip(&tys[1..]))
        {
            let kind = match ty {
                Ty::Int => ValueKind::Int,
                Ty::Float => ValueKind::Float,
                Ty::Tensor(_) => ValueKind::Tensor,
                Ty::Bool | Ty::Char => ValueKind::Text,
                // A nested `format` was reported with the other arguments.
                Ty::Str => ValueKind::Text,
                _ => continue,
            };
            if let Err(why) = spec.fits(kind) {
                let value_span = self.expr_span(value);
                self.report(
                    Code::FormatString,
                    inside(range),
                    format!("this placeholder cannot write {}", a(ty)),
                )
                .label(value_span, format!("{} here", a(ty)))
                .help(why);
            }
        }
        let count = placeholders.len();
        if values.len() != count {
            let placeholders_text = match count {
                1 => "1 placeholder".to_owned(),
                n => format!("{n} placeholders"),
            };
            let values_text = match values.len() {
                1 => "1 value follows it".to_owned(),
                n => format!("{n} values follow it"),
            };
            let message = format!("the format string has {placeholders_text}, but {values_text}");
            match placeholders.get(values.len()) {
                Some(&(range, _)) => {
                    self.report(Code::FormatArguments, inside(range), message)
                        .help("pass a value for each placeholder, in order, after the string");
                }
                None => {
                    let extra = self.expr_span(values[count]);
                    self.report(Code::FormatArguments, extra, message)
                        .label(string_span, "the placeholders are `{}` in this string")
                        .help("add a placeholder `{}` to the string for each value, or remove this one");
                }
            }
        }
    }

    /// The shape `reshape(t, [d0, ...])` gives: the list, with one `-1` standing for the extent
    /// that keeps the element count.
    fn reshape_target(&mut self, arg: ExprId, ty: &Ty, from: &Shape) -> Shape {
        let Expr::TensorLit(elements) = &self.body.exprs[arg] else {
            return self.shape_list(arg, ty, "reshape", 1, None);
        };
        let elements = elements.clone();
        let inferred: Vec<usize> = elements
            .iter()
            .enumerate()
            .filter(|&(_, &e)| self.const_int(e) == Some(-1))
            .map(|(i, _)| i)
            .collect();
        match inferred.as_slice() {
            [] => self.shape_list(arg, ty, "reshape", 1, None),
            [position] => {
                let Shape::Ranked(mut dims) =
                    self.shape_list(arg, ty, "reshape", 1, Some(*position))
                else {
                    return Shape::Unranked;
                };
                // The inferred extent: the element count over the product of the others.
                let others: Option<i64> = dims
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| i != *position)
                    .try_fold(1i64, |acc, (_, d)| match d {
                        Dim::Known(n) => acc.checked_mul(*n),
                        _ => None,
                    });
                if let (Some(total), Some(others)) = (from.known_size(), others) {
                    if others == 0 || total % others != 0 {
                        let list: Vec<String> = dims
                            .iter()
                            .enumerate()
                            .map(
                                |(i, d)| {
                                    if i == *position { "-1".to_owned() } else { d.to_string() }
                                },
                            )
                            .collect();
                        let why = match others {
                            0 => "the other extents multiply to 0, so no extent can stand for -1"
                                .to_owned(),
                            _ => format!(
                                "{total} is not a multiple of {others}, the product of the other extents"
                            ),
                        };
                        let span = self.expr_span(arg);
                        self.report(
                            Code::ElementCountMismatch,
                            span,
                            format!("cannot reshape Tensor{from} ({total} elements) to [{}]: {why}", list.join(", ")),
                        )
                        .help("-1 stands for the one extent that keeps the element count; choose the other extents so that they divide it");
                        return Shape::Unranked;
                    }
                    dims[*position] = Dim::Known(total / others);
                }
                Shape::Ranked(dims)
            }
            _ => {
                let span = self.expr_span(arg);
                self.report(
                    Code::InvalidDimension,
                    span,
                    "only one extent of `reshape` may be -1".to_owned(),
                );
                Shape::Unranked
            }
        }
    }

    /// `concat(a, b, ..., axis)`: the last argument is the axis when it is an int.
    fn concat(&mut self, expr: ExprId, args: &[ExprId], tys: &[Ty]) -> Ty {
        let name = "concat";
        let (tensors, axis_arg) = match tys.last() {
            Some(Ty::Int) if args.len() > 2 => (&args[..args.len() - 1], args.last().copied()),
            _ => (args, None),
        };
        let mut shapes = Vec::with_capacity(tensors.len());
        for (i, &arg) in tensors.iter().enumerate() {
            let Some(shape) = self.nonscalar_or_report(arg, name, i, &tys[i]) else {
                return Ty::Error;
            };
            shapes.push(shape);
        }
        let axis = match axis_arg {
            Some(arg) => match self.axis_arg(arg, &Ty::Int, &shapes[0], name) {
                Some(axis) => axis,
                None => return Ty::Error,
            },
            None => 0,
        };
        let axis_known = axis_arg.is_none_or(|arg| self.const_int(arg).is_some());
        let Some(mut dims) = shapes[0].dims().map(<[Dim]>::to_vec) else { return Ty::unranked() };
        for (position, shape) in shapes[1..].iter().enumerate() {
            let Some(other) = shape.dims() else { return Ty::unranked() };
            let compatible = other.len() == dims.len()
                && dims
                    .iter()
                    .zip(other)
                    .enumerate()
                    .all(|(i, (p, q))| i == axis || !p.conflicts(q));
            if !compatible {
                let span = self.expr_span(expr);
                let (first_span, other_span) =
                    (self.expr_span(tensors[0]), self.expr_span(tensors[position + 1]));
                let first = &shapes[0];
                self.report(
                    Code::BroadcastMismatch,
                    span,
                    format!("`concat` along axis {axis} needs the other extents to agree, but the operands are Tensor{first} and Tensor{shape}"),
                )
                .label(first_span, format!("Tensor{first}"))
                .label(other_span, format!("Tensor{shape}"));
                return Ty::Error;
            }
            for (i, (p, q)) in dims.iter_mut().zip(other).enumerate() {
                *p = match i == axis {
                    true => p.add(q),
                    false => p.join(q),
                };
            }
        }
        if !axis_known {
            return Ty::tensor(vec![Dim::Unknown; dims.len()]);
        }
        Ty::tensor(dims)
    }

    /// `stack(a, b, ...)`: tensors of one shape along a new first axis.
    fn stack(&mut self, expr: ExprId, args: &[ExprId], tys: &[Ty]) -> Ty {
        let mut joint: Option<Shape> = None;
        for (i, &arg) in args.iter().enumerate() {
            let Some(shape) = self.tensor_arg(arg, "stack", i, &tys[i]) else { return Ty::Error };
            joint = Some(match joint {
                None => shape,
                Some(so_far) => {
                    if !crate::ty::shapes_compatible(&so_far, &shape) {
                        let span = self.expr_span(expr);
                        let (first_span, other_span) =
                            (self.expr_span(args[0]), self.expr_span(arg));
                        self.report(
                            Code::BroadcastMismatch,
                            span,
                            format!("`stack` needs tensors of one shape, but they are Tensor{so_far} and Tensor{shape}"),
                        )
                        .label(first_span, format!("Tensor{so_far}"))
                        .label(other_span, format!("Tensor{shape}"));
                        return Ty::Error;
                    }
                    match (so_far, shape) {
                        (Shape::Ranked(a), Shape::Ranked(b)) => {
                            Shape::Ranked(a.iter().zip(&b).map(|(x, y)| x.join(y)).collect())
                        }
                        (Shape::Ranked(a), _) | (_, Shape::Ranked(a)) => Shape::Ranked(a),
                        _ => Shape::Unranked,
                    }
                }
            });
        }
        match joint {
            Some(Shape::Ranked(dims)) => {
                let mut out = vec![Dim::Known(args.len() as i64)];
                out.extend(dims);
                Ty::tensor(out)
            }
            _ => Ty::unranked(),
        }
    }

    /// A tensor of rank 1 or more, reporting other arguments.
    fn nonscalar_or_report(
        &mut self,
        arg: ExprId,
        name: &str,
        index: usize,
        ty: &Ty,
    ) -> Option<Shape> {
        let shape = self.tensor_arg(arg, name, index, ty)?;
        if shape.dims().is_some_and(<[Dim]>::is_empty) {
            self.bad_arg(arg, name, index, ty, "a tensor of rank 1 or more");
            return None;
        }
        Some(shape)
    }

    /// The shape a list such as `[n, 3]`, argument `index` of `name`, describes; the element at
    /// `inferred` (the `-1` of `reshape`) is left unknown. A tensor value gives an unknown shape.
    pub(super) fn shape_list(
        &mut self,
        arg: ExprId,
        ty: &Ty,
        name: &str,
        index: usize,
        inferred: Option<usize>,
    ) -> Shape {
        if let Expr::TensorLit(elements) = &self.body.exprs[arg] {
            let elements = elements.clone();
            let mut dims = Vec::new();
            for (i, element) in elements.into_iter().enumerate() {
                if inferred == Some(i) {
                    dims.push(Dim::Unknown);
                    continue;
                }
                let element_ty = self.result.type_of_expr(element).clone();
                if element_ty != Ty::Int {
                    if matches!(self.body.exprs[element], Expr::Literal(Literal::Float(_)))
                        || !element_ty.is_error()
                    {
                        self.bad_arg(element, name, index, &element_ty, "a list of int extents");
                    }
                    return Shape::Unranked;
                }
                // A negative constant is no size (`dim_of_int_expr` gives it as unknown).
                if let Some(n) = self.const_int(element)
                    && n < 0
                {
                    let span = self.expr_span(element);
                    self.report(
                        Code::InvalidDimension,
                        span,
                        format!("a dimension cannot be negative ({n})"),
                    );
                    // Reported: unknown from here on, so that no count of it is reported too.
                    dims.push(Dim::Unknown);
                    continue;
                }
                dims.push(self.dim_of_int_expr(element));
            }
            return Shape::Ranked(dims);
        }
        match ty {
            Ty::Tensor(Shape::Ranked(dims)) if dims.len() == 1 => match &dims[0] {
                Dim::Known(rank) => Shape::Ranked(vec![Dim::Unknown; (*rank).max(0) as usize]),
                _ => Shape::Unranked,
            },
            Ty::Tensor(_) => Shape::Unranked,
            other => {
                self.bad_arg(arg, name, index, other, "a list of extents such as `[2, 3]`");
                Shape::Unranked
            }
        }
    }

    fn permute(&mut self, perm: ExprId, dims: &[Dim]) -> Ty {
        let Expr::TensorLit(elements) = &self.body.exprs[perm] else {
            return Ty::tensor(vec![Dim::Unknown; dims.len()]);
        };
        let axes: Option<Vec<i64>> = elements.iter().map(|&e| self.const_int(e)).collect();
        let Some(axes) = axes else { return Ty::tensor(vec![Dim::Unknown; dims.len()]) };
        let mut sorted = axes.clone();
        sorted.sort_unstable();
        let valid =
            sorted.iter().enumerate().all(|(i, &a)| a == i as i64) && axes.len() == dims.len();
        if !valid {
            let span = self.expr_span(perm);
            self.report(
                Code::InvalidAxis,
                span,
                format!(
                    "`transpose` needs a permutation of the axes 0 to {}, found {axes:?}",
                    dims.len().saturating_sub(1)
                ),
            );
            return Ty::Error;
        }
        Ty::tensor(axes.iter().map(|&a| dims[a as usize].clone()).collect())
    }
}
