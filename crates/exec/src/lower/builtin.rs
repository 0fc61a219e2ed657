//! Lowering calls of built-in functions: each [`Builtin`] of hir's table, chosen by the static
//! types of its arguments where one name has several forms (`max(a, b)` and `max(t, axis)`), to
//! an instruction or a [`BuiltinCall`]. String arguments (messages, paths, einsum specs) are
//! literals, so they are resolved here: relative paths against the directory of the source file.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use hir::{Builtin, Dim, Expr, ExprId, Literal, Resolution, Ty};

use super::{Dest, Result, UnitLowerer};
use crate::code::{
    BuiltinCall, ChartArgs, Construct, DimsArg, FormatPiece, Instr, Operand, PrintItem,
    PrintOptionsArgs,
};
use tensor::einsum::EinsumSpec;
use tensor::{BinaryOp, ReduceOp, UnaryOp};

impl UnitLowerer<'_, '_> {
    pub(super) fn builtin(
        &mut self,
        expr: ExprId,
        builtin: Builtin,
        args: &[ExprId],
        dest: Dest,
    ) -> Result<Operand> {
        let span = self.span_of(expr);
        let arg = |i: usize| -> Result<ExprId> {
            args.get(i).copied().ok_or_else(|| {
                crate::error::RuntimeError::internal(format!(
                    "`{}` without argument {}",
                    builtin.name(),
                    i + 1
                ))
            })
        };
        use Builtin as B;
        let call = match builtin {
            B::Topk | B::Split | B::Qr | B::Svd | B::Eigh | B::Slogdet => {
                return self.tuple_builtin(expr, builtin, args);
            }
            B::Sin
            | B::Cos
            | B::Tan
            | B::Asin
            | B::Acos
            | B::Atan
            | B::Sinh
            | B::Cosh
            | B::Tanh
            | B::Exp
            | B::Ln
            | B::Log
            | B::Log2
            | B::Log10
            | B::Sqrt
            | B::Abs
            | B::Sigmoid
            | B::Relu
            | B::Softplus
            | B::Floor
            | B::Ceil
            | B::Round
            | B::Trunc
            | B::Sign
            | B::Erf
            | B::Erfc
            | B::Gelu
            | B::Silu
            | B::Softsign
            | B::Log1p
            | B::Expm1
            | B::Exp2
            | B::Cbrt => {
                let op = match builtin {
                    // `gelu(x, "tanh")`; `gelu(x, "none")` is the exact form.
                    B::Gelu
                        if args.get(1).and_then(|&a| self.string(a)).as_deref() == Some("tanh") =>
                    {
                        UnaryOp::GeluTanh
                    }
                    _ => UnaryOp::from_name(builtin.name())
                        .ok_or_else(|| self.internal("this element-wise function", span))?,
                };
                if matches!(self.ty(arg(0)?), Ty::Record(_)) {
                    return self.record_unary(op, arg(0)?, dest, span);
                }
                let a = self.expr(arg(0)?, Dest::Any)?;
                let dst = self.dst(dest);
                self.emit(Instr::Unary { op, dst, a }, span);
                return Ok(Self::fresh_result(dest, dst));
            }
            B::Pow => return self.binary_builtin(expr, BinaryOp::Pow, args, dest),
            B::Atan2 => return self.binary_builtin(expr, BinaryOp::Atan2, args, dest),
            B::Hypot => return self.binary_builtin(expr, BinaryOp::Hypot, args, dest),
            B::Mod => return self.binary_builtin(expr, BinaryOp::Mod, args, dest),
            // `max(t, axis, keepdims)`.
            B::Max | B::Min if args.len() == 3 => self.library(builtin, args)?,
            B::Max | B::Min => {
                let reduce = if builtin == B::Max { ReduceOp::Max } else { ReduceOp::Min };
                let is_reduction = args.len() == 1
                    || (self.ty(arg(0)?).is_tensor() && self.ty(arg(1)?) == Ty::Int);
                if !is_reduction {
                    let op = if builtin == B::Max { BinaryOp::Max } else { BinaryOp::Min };
                    return self.binary_builtin(expr, op, args, dest);
                }
                let x = self.expr(arg(0)?, Dest::Any)?;
                let axis = args.get(1).map(|&a| self.expr(a, Dest::Any)).transpose()?;
                BuiltinCall::Reduce { op: reduce, x, axis }
            }
            // With `keepdims` or a norm's order.
            B::Sum | B::Mean | B::Prod | B::Norm | B::Logsumexp if args.len() > 2 => {
                self.library(builtin, args)?
            }
            B::Sum | B::Mean | B::Prod | B::Norm | B::Logsumexp => {
                let op = match builtin {
                    B::Sum => ReduceOp::Sum,
                    B::Mean => ReduceOp::Mean,
                    B::Prod => ReduceOp::Prod,
                    B::Norm => ReduceOp::Norm,
                    _ => ReduceOp::LogSumExp,
                };
                let x = self.expr(arg(0)?, Dest::Any)?;
                let axis = args.get(1).map(|&a| self.expr(a, Dest::Any)).transpose()?;
                BuiltinCall::Reduce { op, x, axis }
            }
            B::Softmax | B::LogSoftmax => {
                let x = self.expr(arg(0)?, Dest::Any)?;
                let axis = args.get(1).map(|&a| self.expr(a, Dest::Any)).transpose()?;
                BuiltinCall::Softmax { log: builtin == B::LogSoftmax, x, axis }
            }
            B::Zeros | B::Ones | B::Rand | B::Randn | B::Full => {
                let kind = match builtin {
                    B::Zeros => Construct::Zeros,
                    B::Ones => Construct::Ones,
                    B::Rand => Construct::Rand,
                    B::Randn => Construct::Randn,
                    _ => Construct::Full,
                };
                let dims = self.dims_arg(arg(0)?)?;
                let value = match builtin {
                    B::Full => Some(self.expr(arg(1)?, Dest::Any)?),
                    _ => None,
                };
                BuiltinCall::Construct { kind, dims, value }
            }
            B::Eye => BuiltinCall::Eye(self.expr(arg(0)?, Dest::Any)?),
            B::Arange if args.len() == 1 => BuiltinCall::Arange(self.expr(arg(0)?, Dest::Any)?),
            B::Reshape => {
                let x = self.expr(arg(0)?, Dest::Any)?;
                let dims = self.dims_arg(arg(1)?)?;
                let (from, to) = (self.ty(arg(0)?), self.ty(expr));
                let sized = |ty: &Ty| {
                    ty.shape().and_then(hir::Shape::dims).is_some_and(|dims| {
                        dims.iter().all(|d| !matches!(d, Dim::Unknown))
                            && dims.iter().any(|d| matches!(d, Dim::Expr(_)))
                    })
                };
                let written = (sized(&from) || sized(&to))
                    .then(|| Box::new([from.to_string(), to.to_string()]));
                BuiltinCall::Reshape { x, dims, written }
            }
            B::Transpose => {
                let x = self.expr(arg(0)?, Dest::Any)?;
                let axes = args.get(1).map(|&a| self.dims_arg(a)).transpose()?;
                BuiltinCall::Transpose { x, axes }
            }
            B::Concat if args.len() == 3 && self.ty(arg(2)?) == Ty::Int => {
                let a = self.expr(arg(0)?, Dest::Any)?;
                let b = self.expr(arg(1)?, Dest::Any)?;
                let axis = self.expr(arg(2)?, Dest::Any)?;
                BuiltinCall::Concat { a, b, axis }
            }
            B::Stack if args.len() == 2 => {
                let a = self.expr(arg(0)?, Dest::Any)?;
                let b = self.expr(arg(1)?, Dest::Any)?;
                BuiltinCall::Stack { a, b }
            }
            B::Shape => {
                let x = self.expr(arg(0)?, Dest::Any)?;
                let axis = self.expr(arg(1)?, Dest::Any)?;
                BuiltinCall::ShapeOf { x, axis }
            }
            B::Rank => BuiltinCall::Rank(self.expr(arg(0)?, Dest::Any)?),
            B::All if args.len() == 1 => BuiltinCall::All(self.expr(arg(0)?, Dest::Any)?),
            B::Any if args.len() == 1 => BuiltinCall::Any(self.expr(arg(0)?, Dest::Any)?),
            B::Seed => BuiltinCall::Seed(self.expr(arg(0)?, Dest::Any)?),
            B::Inv => BuiltinCall::Inv(self.expr(arg(0)?, Dest::Any)?),
            B::Det => BuiltinCall::Det(self.expr(arg(0)?, Dest::Any)?),
            B::Solve => {
                let a = self.expr(arg(0)?, Dest::Any)?;
                let b = self.expr(arg(1)?, Dest::Any)?;
                BuiltinCall::Solve(a, b)
            }
            B::Cholesky => BuiltinCall::Cholesky(self.expr(arg(0)?, Dest::Any)?),
            B::Trace => BuiltinCall::Trace(self.expr(arg(0)?, Dest::Any)?),
            B::Diag => BuiltinCall::Diag(self.expr(arg(0)?, Dest::Any)?),
            B::Print | B::Write => {
                let mut items = Vec::with_capacity(args.len());
                for &a in args {
                    items.push(match self.string(a) {
                        Some(text) => PrintItem::Text(text.into()),
                        None => match self.format_call(a)? {
                            Some(pieces) => PrintItem::Format(pieces),
                            None if matches!(self.ty(a), Ty::Record(_)) => {
                                PrintItem::Format(self.record_pieces(a)?)
                            }
                            None => PrintItem::Value(self.expr(a, Dest::Any)?),
                        },
                    });
                }
                match builtin {
                    B::Write => BuiltinCall::Write(items.into_boxed_slice()),
                    _ => BuiltinCall::Print(items.into_boxed_slice()),
                }
            }
            // The checker allows `format` only as an item of `print` and `write`.
            B::Format => return Err(self.internal("`format` outside `print` and `write`", span)),
            B::PrintOptions => match self.string(arg(0)?) {
                Some(mode) => {
                    let defaults = tensor::PrintOptions::default();
                    let options = match mode.as_str() {
                        "line" => tensor::PrintOptions { layout: tensor::Layout::Line, ..defaults },
                        "exact" => tensor::PrintOptions { precision: None, ..defaults },
                        "default" => defaults,
                        _ => {
                            return Err(
                                self.internal("a print mode the checker does not know", span)
                            );
                        }
                    };
                    BuiltinCall::PrintOptions(PrintOptionsArgs::Mode(options))
                }
                None => {
                    let mut values = Vec::with_capacity(args.len());
                    for &a in args {
                        values.push(self.expr(a, Dest::Any)?);
                    }
                    BuiltinCall::PrintOptions(PrintOptionsArgs::Values(values.into_boxed_slice()))
                }
            },
            B::Load if matches!(self.ty(expr), Ty::Record(_)) => {
                // A record, where one is expected: the checker gave the call the record's type.
                let ty = self.ty(expr);
                let path = self.path(arg(0)?)?;
                let leaves: Box<[(Box<str>, bool)]> = hir::leaves(self.db(), &ty)
                    .into_iter()
                    .map(|leaf| (leaf.dotted().into_boxed_str(), leaf.ty.is_tensor()))
                    .collect();
                let first = self.temps(self.width(&ty));
                let call = Box::new(BuiltinCall::LoadNpz { path, leaves });
                self.emit(Instr::Builtin { dst: first, call }, span);
                return Ok(Operand::take(first));
            }
            B::Load | B::LoadCsv => {
                let path = self.path(arg(0)?)?;
                BuiltinCall::Load { path, csv: builtin == B::LoadCsv }
            }
            B::Save if matches!(self.ty(arg(0)?), Ty::Record(_)) => {
                let ty = self.ty(arg(0)?);
                let first = self.expr(arg(0)?, Dest::Any)?;
                let names = hir::leaves(self.db(), &ty).into_iter().map(|leaf| leaf.dotted());
                let operands = self.leaf_operands(first, &ty);
                let leaves = names.map(String::into_boxed_str).zip(operands).collect();
                let path = self.path(arg(1)?)?;
                BuiltinCall::SaveNpz { leaves, path }
            }
            B::Save => {
                let x = self.expr(arg(0)?, Dest::Any)?;
                let path = self.path(arg(1)?)?;
                BuiltinCall::Save { x, path }
            }
            B::Plot | B::Scatter | B::Histogram => {
                let path = self.path(arg(0)?)?;
                let data = if builtin == B::Plot { 1 } else { 2 };
                let chart = match builtin {
                    B::Plot => ChartArgs::Lines(self.expr(arg(1)?, Dest::Any)?),
                    B::Scatter => ChartArgs::Scatter(
                        self.expr(arg(1)?, Dest::Any)?,
                        self.expr(arg(2)?, Dest::Any)?,
                    ),
                    _ => ChartArgs::Histogram {
                        x: self.expr(arg(1)?, Dest::Any)?,
                        bins: self.expr(arg(2)?, Dest::Any)?,
                    },
                };
                let text = |i: usize| args.get(data + i).and_then(|&e| self.string(e));
                let labels = crate::plot::Labels { title: text(1), x: text(2), y: text(3) };
                BuiltinCall::Chart { path, chart, labels }
            }
            B::SaveImage => {
                let path = self.path(arg(0)?)?;
                BuiltinCall::SaveImage { x: self.expr(arg(1)?, Dest::Any)?, path }
            }
            B::Backward => {
                let y = arg(0)?;
                let text = self.source_text(self.span_of(y)).into();
                BuiltinCall::Backward { y: self.expr(y, Dest::Any)?, text }
            }
            B::Grad if matches!(self.ty(arg(0)?), Ty::Record(_)) => {
                return self.record_grad(arg(0)?, dest);
            }
            B::Grad => BuiltinCall::GradOf(self.expr(arg(0)?, Dest::Any)?),
            B::StopGradient => BuiltinCall::StopGradient(self.expr(arg(0)?, Dest::Any)?),
            B::ValueAndGrad
            | B::Jvp
            | B::Vjp
            | B::Hessian
            | B::Jacobian
            | B::Checkpoint
            | B::Vmap => {
                return Err(self.internal("a transform outside call position", span));
            }
            B::Assert => {
                let cond = self.expr(arg(0)?, Dest::Any)?;
                let message = match args.get(1) {
                    Some(&m) => Some(
                        self.string(m)
                            .ok_or_else(|| self.internal("an assert message", span))?
                            .into(),
                    ),
                    None => None,
                };
                BuiltinCall::Assert { cond, message }
            }
            B::AssertEq => {
                let a = self.expr(arg(0)?, Dest::Any)?;
                let b = self.expr(arg(1)?, Dest::Any)?;
                BuiltinCall::AssertEq { a, b, text: self.source_text(span).into() }
            }
            B::AssertClose => {
                let a = self.expr(arg(0)?, Dest::Any)?;
                let b = self.expr(arg(1)?, Dest::Any)?;
                let rtol = args
                    .get(2)
                    .map(|&t| self.value_as(t, &Ty::Float, Dest::Any, None))
                    .transpose()?;
                let atol = args
                    .get(3)
                    .map(|&t| self.value_as(t, &Ty::Float, Dest::Any, None))
                    .transpose()?;
                BuiltinCall::AssertClose { a, b, rtol, atol, text: self.source_text(span).into() }
            }
            B::Gradcheck => {
                let function = arg(0)?;
                let Some(Resolution::Function(def)) = self.infer.resolution(function) else {
                    return Err(self.internal("gradcheck of a non-function", span));
                };
                let callable = self.function_callable(def)?;
                let callable = self.builder.intern_callable(callable);
                let signature = hir::signature(self.db(), def);
                let params: Vec<Ty> =
                    signature.params.iter().map(|p| hir::ty_of_ref(&p.ty)).collect();
                let operands = self.arguments(args.get(1..).unwrap_or_default(), &params)?;
                let first = params.first().cloned().unwrap_or(Ty::Error);
                let checked =
                    hir::leaves(self.db(), &first).iter().map(|l| l.dotted().into()).collect();
                BuiltinCall::Gradcheck {
                    callable,
                    name: signature.name.as_str().into(),
                    args: operands,
                    checked,
                }
            }
            B::Einsum => {
                let spec = self
                    .string(arg(0)?)
                    .ok_or_else(|| self.internal("an einsum without a literal spec", span))?;
                let spec = EinsumSpec::parse(&spec)
                    .map_err(|error| self.internal(&format!("an einsum spec ({error})"), span))?;
                let mut operands = Vec::with_capacity(args.len().saturating_sub(1));
                for &a in args.get(1..).unwrap_or_default() {
                    operands.push(self.expr(a, Dest::Any)?);
                }
                let operands = operands.into_boxed_slice();
                match spec.ellipsis() {
                    None => {
                        let contraction = spec.to_contraction().map_err(|error| {
                            self.internal(&format!("an einsum spec ({error})"), span)
                        })?;
                        BuiltinCall::Einsum { contraction: Rc::new(contraction), operands }
                    }
                    // What `...` stands for depends on the operands' ranks, known when it runs.
                    Some(_) => BuiltinCall::EinsumEllipsis { spec: Rc::new(spec), operands },
                }
            }
            B::LeakyRelu
            | B::Elu
            | B::IsNan
            | B::IsFinite
            | B::Clip
            | B::Where
            | B::Argmax
            | B::Argmin
            | B::Std
            | B::Variance
            | B::CountNonzero
            | B::Argsort
            | B::Sort
            | B::Cumsum
            | B::Cumprod
            | B::Flip
            | B::Roll
            | B::Tile
            | B::Repeat
            | B::Pad
            | B::Shuffle
            | B::Pinv
            | B::Lstsq
            | B::MatrixNorm
            | B::Nonzero
            | B::Arange
            | B::Concat
            | B::Stack
            | B::All
            | B::Any
            | B::Linspace
            | B::Squeeze
            | B::Unsqueeze
            | B::ExpandDims
            | B::Tril
            | B::Triu
            | B::OneHot
            | B::BroadcastTo
            | B::Kron
            | B::Outer
            | B::Randint
            | B::Permutation
            | B::Uniform
            | B::Normal
            | B::Bernoulli
            | B::Cross
            | B::Conv1d
            | B::Conv2d
            | B::MaxPool2d
            | B::AvgPool2d
            | B::CrossEntropy
            | B::Nll
            | B::Mse
            | B::BceWithLogits => self.library(builtin, args)?,
        };
        let dst = self.dst(dest);
        self.emit(Instr::Builtin { dst, call: Box::new(call) }, span);
        Ok(Self::result(dest, dst))
    }

    /// A library built-in: its arguments in order, string literals as text.
    fn library(&mut self, builtin: Builtin, args: &[ExprId]) -> Result<BuiltinCall> {
        Ok(BuiltinCall::Library { builtin, args: self.library_args(args)? })
    }

    fn library_args(&mut self, args: &[ExprId]) -> Result<Box<[PrintItem]>> {
        let mut items = Vec::with_capacity(args.len());
        for &a in args {
            items.push(match self.string(a) {
                Some(text) => PrintItem::Text(text.into()),
                None => PrintItem::Value(self.expr(a, Dest::Any)?),
            });
        }
        Ok(items.into_boxed_slice())
    }

    /// A library built-in of several results (`topk`, `split`): as a call of a function of
    /// several results, it writes them to consecutive temporaries, the first of which the
    /// operand names, for a destructuring or a `return` to take apart.
    fn tuple_builtin(
        &mut self,
        expr: ExprId,
        builtin: Builtin,
        args: &[ExprId],
    ) -> Result<Operand> {
        let span = self.span_of(expr);
        let Ty::Tuple(elements) = self.ty(expr) else {
            return Err(self.internal("a built-in of several results without a tuple type", span));
        };
        let args = self.library_args(args)?;
        let first = self.temp();
        for _ in 1..elements.len() {
            self.temp();
        }
        let results = elements.len() as u32;
        let call = Box::new(BuiltinCall::LibraryTuple { builtin, args, results });
        self.emit(Instr::Builtin { dst: first, call }, span);
        Ok(Operand::take(first))
    }

    /// `pow(a, b)`, `max(a, b)`, `min(a, b)` element-wise.
    fn binary_builtin(
        &mut self,
        expr: ExprId,
        op: BinaryOp,
        args: &[ExprId],
        dest: Dest,
    ) -> Result<Operand> {
        let span = self.span_of(expr);
        let (Some(&lhs), Some(&rhs)) = (args.first(), args.get(1)) else {
            return Err(self.internal("a binary built-in without two arguments", span));
        };
        let a = self.expr(lhs, Dest::Any)?;
        let b = self.expr(rhs, Dest::Any)?;
        let dst = self.dst(dest);
        let instr = match self.ty(expr) {
            Ty::Float => Instr::float_arith(op, dst, a, b),
            _ => Instr::Binary { op, dst, a, b },
        };
        self.emit(instr, span);
        Ok(Self::result(dest, dst))
    }

    /// A shape or axis list: `[2, n]` as integers, or any tensor holding the extents.
    fn dims_arg(&mut self, expr: ExprId) -> Result<DimsArg> {
        if let Expr::TensorLit(elements) = &self.body.exprs[expr] {
            let elements = elements.clone();
            if elements.iter().all(|&e| self.ty(e) == Ty::Int) {
                let mut ints = Vec::with_capacity(elements.len());
                for element in elements {
                    ints.push(self.expr(element, Dest::Any)?);
                }
                return Ok(DimsArg::Ints(ints.into_boxed_slice()));
            }
        }
        Ok(DimsArg::Tensor(self.expr(expr, Dest::Any)?))
    }

    /// The pieces of `expr` when it is a call of `format`, its values evaluated in order.
    fn format_call(&mut self, expr: ExprId) -> Result<Option<Box<[FormatPiece]>>> {
        let Expr::Call { callee, args } = &self.body.exprs[expr] else { return Ok(None) };
        if self.infer.resolution(*callee) != Some(Resolution::Builtin(Builtin::Format)) {
            return Ok(None);
        }
        let args = args.clone();
        let span = self.span_of(expr);
        let Some((&string, values)) = args.split_first() else {
            return Err(self.internal("`format` without its string", span));
        };
        let token = self.source_text(self.body.source_map.expr(string));
        let format = hir::parse_format_string(&token)
            .map_err(|_| self.internal("a malformed format string", span))?;
        let mut values = values.iter();
        let mut pieces = Vec::with_capacity(format.pieces.len());
        for piece in format.pieces {
            pieces.push(match piece {
                hir::FormatPart::Text(text) => FormatPiece::Text(text.into()),
                hir::FormatPart::Placeholder { spec, .. } => {
                    let &value = values
                        .next()
                        .ok_or_else(|| self.internal("a placeholder without a value", span))?;
                    match self.string(value) {
                        Some(text) => FormatPiece::Literal(text.into(), spec),
                        None => FormatPiece::Value(self.expr(value, Dest::Any)?, spec),
                    }
                }
            });
        }
        Ok(Some(pieces.into_boxed_slice()))
    }

    /// The text of a string literal.
    fn string(&self, expr: ExprId) -> Option<String> {
        match &self.body.exprs[expr] {
            Expr::Literal(Literal::String(text)) => Some(text.to_string()),
            _ => None,
        }
    }

    /// A path literal resolved against the directory of the file that contains it.
    fn path(&self, expr: ExprId) -> Result<PathBuf> {
        let span = self.span_of(expr);
        let text =
            self.string(expr).ok_or_else(|| self.internal("a path that is not a literal", span))?;
        let file = self.def.file(self.db());
        let dir = file.path(self.db()).parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(dir.join(text))
    }
}
