//! The built-in functions without a dedicated instruction, each dispatched from its
//! [`BuiltinCall`] to the differentiable operations of [`crate::ops`], the tensor runtime, the
//! tape or the output.

use hir::Code;

use crate::autodiff::{self, AdErrorKind};
use crate::code::{
    BuiltinCall, ChartArgs, Construct, DimsArg, FormatPiece, IndexAssign, Operand, PrintItem,
    PrintOptionsArgs, TargetShape,
};
use crate::error::RuntimeError;
use crate::ops;
use crate::plot;
use crate::value::{Primal, Value};
use tensor::{self, ShapeText, Tensor};

use super::Machine;

impl Machine<'_, '_> {
    /// A value's numbers as a tensor: a tensor's, or a number's as a rank-0 tensor (what a
    /// picture draws and `save` writes).
    fn tensor_data(&self, base: usize, operand: Operand) -> Tensor {
        let x = &self.stack[base + operand.slot().index() as usize];
        match x.primal() {
            Primal::Tensor(tensor) => tensor.clone(),
            _ => Tensor::scalar(x.as_f64().unwrap_or(0.0)),
        }
    }

    pub(super) fn builtin(
        &mut self,
        base: usize,
        call: &BuiltinCall,
    ) -> Result<Value, RuntimeError> {
        Ok(match call {
            BuiltinCall::Reduce { op, x, axis } => {
                let axis = axis.map(|a| self.int_at(base, a)).transpose()?;
                let x = self.fetch(base, *x);
                ops::reduce(&mut self.tape, *op, x, axis)?
            }
            BuiltinCall::Softmax { log, x, axis } => {
                let axis = axis.map(|a| self.int_at(base, a)).transpose()?.unwrap_or(-1);
                let x = self.fetch(base, *x);
                match log {
                    true => ops::log_softmax(&mut self.tape, x, axis)?,
                    false => ops::softmax(&mut self.tape, x, axis)?,
                }
            }
            BuiltinCall::Construct { kind, dims, value } => {
                let shape = self.dims_arg(base, dims)?;
                match kind {
                    Construct::Zeros => Value::tensor(Tensor::zeros(&shape)?),
                    Construct::Ones => Value::tensor(Tensor::ones(&shape)?),
                    Construct::Rand => Value::tensor(self.rng.rand(&shape)?),
                    Construct::Randn => Value::tensor(self.rng.randn(&shape)?),
                    Construct::Full => {
                        let value = match value {
                            Some(v) => self.fetch(base, *v),
                            None => return Err(RuntimeError::internal("full without a value")),
                        };
                        tensor::check_allocation(&shape)?;
                        ops::full(&mut self.tape, &shape, value)?
                    }
                }
            }
            BuiltinCall::Eye(n) => {
                let n = self.extent(base, *n)?;
                Value::tensor(Tensor::eye(n)?)
            }
            BuiltinCall::Arange(n) => {
                let n = self.extent(base, *n)?;
                Value::tensor(Tensor::arange(n)?)
            }
            BuiltinCall::ScaledUpdate { target, subtract, scale, x } => {
                let scale = self.fetch(base, *scale);
                let x = self.fetch(base, *x);
                let target = self.fetch(base, *target);
                ops::scaled_update(&mut self.tape, target, *subtract, scale, x)?
            }
            BuiltinCall::Reshape { x, dims, written } => {
                let extents = self.ints_arg(base, dims)?;
                let value = &self.stack[base + x.slot().index() as usize];
                let from = value.shape();
                let shape = tensor::reshape_extents(from, &extents)?;
                let len = value.len();
                let count = shape.iter().try_fold(1usize, |acc, &e| acc.checked_mul(e));
                if let Some(written) = written
                    && count != Some(len)
                {
                    // As the checker's E0223 says it, with the values of the sizes.
                    let [from, to] = &**written;
                    let count = count.map_or("too many".to_owned(), |c| c.to_string());
                    let message = format!(
                        "cannot reshape {from} = {} ({len} elements) to {to} = {} ({count} elements)",
                        ShapeText(value.shape()),
                        ShapeText(&shape)
                    );
                    return Err(RuntimeError::new(Code::ElementCountFailure, message));
                }
                let x = self.fetch(base, *x);
                ops::reshape(&mut self.tape, x, &shape)?
            }
            BuiltinCall::Transpose { x, axes } => {
                let axes = match axes {
                    Some(axes) => Some(self.ints_arg(base, axes)?),
                    None => None,
                };
                let x = self.fetch(base, *x);
                match axes {
                    Some(axes) => ops::permute(&mut self.tape, x, &axes)?,
                    None => ops::transpose(&mut self.tape, x)?,
                }
            }
            BuiltinCall::Concat { a, b, axis } => {
                let axis = self.int_at(base, *axis)?;
                let a = self.fetch(base, *a);
                let b = self.fetch(base, *b);
                ops::concat(&mut self.tape, a, b, axis)?
            }
            BuiltinCall::Stack { a, b } => {
                let a = self.fetch(base, *a);
                let b = self.fetch(base, *b);
                ops::stack(&mut self.tape, a, b)?
            }
            BuiltinCall::ShapeOf { x, axis } => {
                let axis = self.int_at(base, *axis)?;
                let x = &self.stack[base + x.slot().index() as usize];
                let rank = x.shape().len();
                let resolved = tensor::normalize_axis(axis, rank)?;
                Value::Int(x.shape()[resolved] as i64)
            }
            BuiltinCall::Rank(x) => {
                Value::Int(self.stack[base + x.slot().index() as usize].shape().len() as i64)
            }
            BuiltinCall::All(x) | BuiltinCall::Any(x) => {
                let all = matches!(call, BuiltinCall::All(_));
                let x = &self.stack[base + x.slot().index() as usize];
                Value::Bool(match x.primal() {
                    Primal::Tensor(tensor) if all => tensor::all(tensor),
                    Primal::Tensor(tensor) => tensor::any(tensor),
                    _ => x.truth().unwrap_or(false),
                })
            }
            BuiltinCall::Seed(n) => {
                let n = self.int_at(base, *n)?;
                // A negative seed is read as its two's complement, so every int is a seed.
                self.rng = tensor::Rng::from_seed(n as u64);
                Value::Int(0)
            }
            BuiltinCall::Inv(x) => {
                let x = self.fetch(base, *x);
                ops::inv(&mut self.tape, x)?
            }
            BuiltinCall::Det(x) => {
                let x = self.fetch(base, *x);
                ops::det(&mut self.tape, x)?
            }
            BuiltinCall::Solve(a, b) => {
                let a = self.fetch(base, *a);
                let b = self.fetch(base, *b);
                ops::solve(&mut self.tape, a, b)?
            }
            BuiltinCall::Cholesky(x) => {
                let x = self.fetch(base, *x);
                ops::cholesky(&mut self.tape, x)?
            }
            BuiltinCall::Trace(x) => {
                let x = self.fetch(base, *x);
                ops::trace(&mut self.tape, x)?
            }
            BuiltinCall::Diag(x) => {
                let x = self.fetch(base, *x);
                ops::diag(&mut self.tape, x)?
            }
            BuiltinCall::Print(items) | BuiltinCall::Write(items) => {
                let mut line = String::new();
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        line.push(' ');
                    }
                    match item {
                        PrintItem::Text(text) => line.push_str(text),
                        PrintItem::Format(pieces) => {
                            for piece in pieces {
                                match piece {
                                    FormatPiece::Text(text) => line.push_str(text),
                                    FormatPiece::Literal(text, spec) => {
                                        line.push_str(&super::format::fill_text(spec, text));
                                    }
                                    FormatPiece::Value(operand, spec) => {
                                        let value =
                                            &self.stack[base + operand.slot().index() as usize];
                                        let column = line
                                            .rsplit('\n')
                                            .next()
                                            .map_or(0, |l| l.chars().count());
                                        let text = super::format::fill(
                                            spec,
                                            value,
                                            &self.print_options,
                                            column,
                                        );
                                        line.push_str(&text);
                                    }
                                }
                            }
                        }
                        PrintItem::Value(operand) => {
                            let value = &self.stack[base + operand.slot().index() as usize];
                            match value.as_tensor() {
                                Some(tensor) => {
                                    // Continued lines line up under the tensor's first bracket.
                                    let column =
                                        line.rsplit('\n').next().map_or(0, |l| l.chars().count());
                                    let text = tensor::format_tensor_with(
                                        tensor,
                                        &self.print_options,
                                        column,
                                    );
                                    line.push_str(&text);
                                }
                                None => {
                                    use std::fmt::Write;
                                    let _ = write!(line, "{value}");
                                }
                            }
                        }
                    }
                }
                match call {
                    BuiltinCall::Write(_) => {
                        self.print(&line);
                        self.flush_output();
                    }
                    _ => {
                        line.push('\n');
                        self.print(&line);
                    }
                }
                Value::Int(0)
            }
            BuiltinCall::PrintOptions(args) => {
                self.print_options = match args {
                    PrintOptionsArgs::Mode(options) => *options,
                    PrintOptionsArgs::Values(values) => {
                        let values: Vec<Value> = values
                            .iter()
                            .map(|&v| self.stack[base + v.slot().index() as usize].clone())
                            .collect();
                        print_options_from(self.print_options, &values)?
                    }
                };
                Value::Int(0)
            }
            BuiltinCall::Load { path, csv } => {
                let tensor = match csv {
                    true => tensor::load_csv(path)?,
                    false => tensor::load_npy(path)?,
                };
                Value::tensor(tensor)
            }
            BuiltinCall::Save { x, path } => {
                tensor::save_npy(path, &self.tensor_data(base, *x))?;
                Value::Int(0)
            }
            BuiltinCall::SaveNpz { leaves, path } => {
                let tensors: Vec<Tensor> =
                    leaves.iter().map(|&(_, x)| self.tensor_data(base, x)).collect();
                let named: Vec<(&str, &Tensor)> =
                    leaves.iter().zip(&tensors).map(|((name, _), t)| (&**name, t)).collect();
                tensor::save_npz(path, &named)?;
                Value::Int(0)
            }
            BuiltinCall::LoadNpz { .. } => {
                return Err(RuntimeError::internal("a record loaded as one value"));
            }
            BuiltinCall::Chart { path, chart, labels } => {
                let (x, y, bins) = match *chart {
                    ChartArgs::Lines(y) => (self.tensor_data(base, y), Tensor::scalar(0.0), 0),
                    ChartArgs::Scatter(x, y) => {
                        (self.tensor_data(base, x), self.tensor_data(base, y), 0)
                    }
                    ChartArgs::Histogram { x, bins } => {
                        let bins = self.int_at(base, bins)?;
                        let bins = usize::try_from(bins).map_err(|_| plot::bins_error(bins))?;
                        (self.tensor_data(base, x), Tensor::scalar(0.0), bins)
                    }
                };
                let drawn = match chart {
                    ChartArgs::Lines(_) => plot::Chart::Lines(&x),
                    ChartArgs::Scatter(..) => plot::Chart::Scatter(&x, &y),
                    ChartArgs::Histogram { .. } => plot::Chart::Histogram(&x, bins),
                };
                plot::write_chart(path, drawn, labels)?;
                Value::Int(0)
            }
            BuiltinCall::SaveImage { x, path } => {
                plot::save_image(path, &self.tensor_data(base, *x))?;
                Value::Int(0)
            }
            BuiltinCall::Backward { y, text } => {
                let y = self.fetch(base, *y);
                let here = self.span_at(self.resume.saturating_sub(1) as usize);
                let pass = match self.tape.begin_backward(&y) {
                    Ok(pass) => pass,
                    Err(error) if matches!(error.kind(), AdErrorKind::ReleasedGraph { .. }) => {
                        return Err(self.released_graph(error, text));
                    }
                    Err(error) => return Err(error.into()),
                };
                autodiff::program_backward(self, pass)?;
                self.last_backward = here;
                Value::Int(0)
            }
            BuiltinCall::GradOf(x) => {
                let x = &self.stack[base + x.slot().index() as usize];
                self.tape.grad_of(x)?
            }
            BuiltinCall::StopGradient(x) => match self.fetch(base, *x).detach() {
                Value::Int(n) => Value::Float(n as f64),
                constant => constant,
            },
            BuiltinCall::Assert { cond, message } => {
                let truth = self.stack[base + cond.slot().index() as usize].truth();
                if truth != Some(true) {
                    let message = match message {
                        Some(message) => format!("assertion failed: {message}"),
                        None => "assertion failed".to_owned(),
                    };
                    return Err(RuntimeError::assertion(message));
                }
                Value::Int(0)
            }
            BuiltinCall::AssertEq { a, b, text } => {
                let a = &self.stack[base + a.slot().index() as usize];
                let b = &self.stack[base + b.slot().index() as usize];
                if let Some(failure) = equality_failure(a, b, text) {
                    return Err(failure);
                }
                Value::Int(0)
            }
            BuiltinCall::AssertClose { a, b, rtol, atol, text } => {
                let rtol = match rtol {
                    Some(r) => self.stack[base + r.slot().index() as usize].as_f64().unwrap_or(0.0),
                    None => 1e-6,
                };
                let atol = match atol {
                    Some(r) => self.stack[base + r.slot().index() as usize].as_f64().unwrap_or(0.0),
                    None => 1e-9,
                };
                let a = &self.stack[base + a.slot().index() as usize];
                let b = &self.stack[base + b.slot().index() as usize];
                if let Some(failure) = close_failure(a, b, rtol, atol, text)? {
                    return Err(failure);
                }
                Value::Int(0)
            }
            BuiltinCall::Gradcheck { callable, name, args, checked } => {
                let values: Vec<Value> = args.iter().map(|&a| self.fetch(base, a)).collect();
                let report = self.gradcheck(*callable, values, checked.len())?;
                if !report.passed {
                    let detail = match &report.worst {
                        Some(worst) => {
                            let field = checked.get(worst.argument).map_or("", |name| &**name);
                            let index: String =
                                worst.index.iter().map(|i| format!("[{i}]")).collect();
                            let at = match (field.is_empty(), index.is_empty()) {
                                (true, true) => String::new(),
                                (true, false) => format!(" at element {index}"),
                                (false, true) => format!(" in field `{field}`"),
                                (false, false) => format!(" at element {index} of field `{field}`"),
                            };
                            format!(
                                "{at}: the gradient is {} but central differences give {} (tolerance {})",
                                tensor::format_float(worst.analytic),
                                tensor::format_float(worst.numeric),
                                tensor::format_float(worst.tolerance)
                            )
                        }
                        None => String::new(),
                    };
                    return Err(RuntimeError::assertion(format!(
                        "gradcheck of `{name}` failed{detail}"
                    )));
                }
                Value::Int(0)
            }
            BuiltinCall::Einsum { contraction, operands } => {
                let values: Vec<Value> = operands.iter().map(|&o| self.fetch(base, o)).collect();
                ops::einsum(&mut self.tape, contraction, values)?
            }
            BuiltinCall::EinsumEllipsis { spec, operands } => {
                let values: Vec<Value> = operands.iter().map(|&o| self.fetch(base, o)).collect();
                ops::einsum_ellipsis(&mut self.tape, spec, values)?
            }
            BuiltinCall::Library { builtin, args } => self.library(base, *builtin, args)?,
            BuiltinCall::LibraryTuple { builtin, .. } => {
                return Err(RuntimeError::internal(format!(
                    "`{}` of several results as a single value",
                    builtin.name()
                )));
            }
            BuiltinCall::StackRows(rows) => {
                let values: Vec<Value> = rows.iter().map(|&o| self.fetch(base, o)).collect();
                ops::stack_many(&mut self.tape, values)?
            }
            BuiltinCall::FromElements { shape, items } => {
                let values: Vec<Value> = items.iter().map(|&o| self.fetch(base, o)).collect();
                ops::from_elements(&mut self.tape, shape, values)?
            }
            BuiltinCall::Sizeof(x) => {
                Value::Int(self.stack[base + x.slot().index() as usize].len() as i64)
            }
            BuiltinCall::SizeofDims(dims) => {
                let shape = self.dims(base, dims)?;
                let size = shape
                    .iter()
                    .try_fold(1i64, |acc, &extent| acc.checked_mul(i64::try_from(extent).ok()?))
                    .ok_or_else(|| {
                        RuntimeError::new(
                            Code::IntegerOverflow,
                            "sizeof: the size does not fit in an int",
                        )
                    })?;
                Value::Int(size)
            }
            BuiltinCall::ToTensor { x, shape } => {
                let x = self.fetch(base, *x);
                let x = match x {
                    Value::Int(_) | Value::Char(_) | Value::Bool(_) => {
                        Value::Float(x.as_f64().unwrap_or(0.0))
                    }
                    other => other,
                };
                let scalar = ops::to_tensor(&mut self.tape, x)?;
                match shape {
                    TargetShape::Scalar => scalar,
                    TargetShape::Dims(dims) => {
                        let dims = self.dims(base, dims)?;
                        tensor::check_allocation(&dims)?;
                        ops::broadcast_to(&mut self.tape, scalar, &dims)?
                    }
                }
            }
            BuiltinCall::IndexStatement { target, name, op, contraction, operands, labels } => {
                let values: Vec<Value> = operands.iter().map(|&o| self.fetch(base, o)).collect();
                let result = ops::einsum(&mut self.tape, contraction, values)?;
                let current = self.fetch(base, Operand::take(*target));
                if current.shape() != result.shape() {
                    let message = index_mismatch(name, labels, current.shape(), result.shape());
                    self.stack[base + target.index() as usize] = current;
                    return Err(RuntimeError::new(Code::DeclaredShapeFailure, message));
                }
                let updated = match op {
                    IndexAssign::Assign | IndexAssign::Mul => result,
                    IndexAssign::Add => ops::add(&mut self.tape, current, result)?,
                };
                self.stack[base + target.index() as usize] = updated;
                Value::Int(0)
            }
        })
    }

    /// A non-negative `int` argument used as an extent.
    fn extent(&self, base: usize, operand: Operand) -> Result<usize, RuntimeError> {
        let n = self.int_at(base, operand)?;
        usize::try_from(n).map_err(|_| {
            RuntimeError::new(
                Code::DimensionFailure,
                format!("a dimension cannot be negative ({n})"),
            )
        })
    }

    fn ints_arg(&self, base: usize, dims: &DimsArg) -> Result<Vec<i64>, RuntimeError> {
        match dims {
            DimsArg::Ints(ints) => ints.iter().map(|&o| self.int_at(base, o)).collect(),
            DimsArg::Tensor(operand) => {
                let value = &self.stack[base + operand.slot().index() as usize];
                let numbers: Vec<f64> = match value.primal() {
                    Primal::Tensor(tensor) => tensor.to_vec(),
                    _ => value.as_f64().into_iter().collect(),
                };
                numbers
                    .into_iter()
                    .map(|x| {
                        if x.fract() == 0.0 && x.abs() < 9.0e15 {
                            Ok(x as i64)
                        } else {
                            Err(RuntimeError::new(
                                Code::AxisFailure,
                                format!("axis {} is not an integer", tensor::format_float(x)),
                            ))
                        }
                    })
                    .collect()
            }
        }
    }

    fn dims_arg(&self, base: usize, dims: &DimsArg) -> Result<Vec<usize>, RuntimeError> {
        match dims {
            DimsArg::Ints(ints) => {
                let values: Vec<i64> =
                    ints.iter().map(|&o| self.int_at(base, o)).collect::<Result<_, _>>()?;
                Ok(tensor::dims_from_i64(&values)?)
            }
            DimsArg::Tensor(operand) => {
                let value = &self.stack[base + operand.slot().index() as usize];
                let numbers: Vec<f64> = match value.primal() {
                    Primal::Tensor(tensor) => tensor.to_vec(),
                    _ => value.as_f64().into_iter().collect(),
                };
                Ok(tensor::dims_from_f64(&numbers)?)
            }
        }
    }
}

/// Why `assert_eq(a, b)` fails, or `None` when `a` and `b` are equal: numbers by value, tensors
/// element by element after broadcasting (as the checker allows), so a tensor equals a number
/// when every element does. For tensors the message counts the elements that differ, and notes
/// give the first of them and the one with the largest difference.
/// `load(path)` of a record: the `.npz` archive's array for each of the record's leaves, by
/// dotted name (`true` for a tensor leaf, `false` for a float, a rank-0 array). The archive must
/// hold exactly these names (R0400 otherwise); the shapes of the tensor leaves are checked
/// against the record's type after, as any record value's are.
pub(super) fn load_record(
    path: &std::path::Path,
    leaves: &[(Box<str>, bool)],
) -> Result<Vec<Value>, RuntimeError> {
    let mut arrays = tensor::load_npz(path)?;
    let refuse = |reason: String| tensor::TensorError::Npy { path: path.to_path_buf(), reason };
    let held = |arrays: &[(String, Tensor)]| {
        let names: Vec<String> = arrays.iter().map(|(name, _)| format!("`{name}`")).collect();
        match names.is_empty() {
            true => "it holds no array".to_owned(),
            false => format!("it holds {}", names.join(", ")),
        }
    };
    let mut values = Vec::with_capacity(leaves.len());
    for (name, is_tensor) in leaves {
        let Some(position) = arrays.iter().position(|(held, _)| held == &**name) else {
            let reason =
                format!("the record's field `{name}` has no array of that name: {}", held(&arrays));
            return Err(refuse(reason).into());
        };
        let (_, array) = arrays.remove(position);
        values.push(match is_tensor {
            true => Value::tensor(array),
            false if array.shape().is_empty() => Value::Float(array.to_vec()[0]),
            false => {
                let reason = format!(
                    "the record's field `{name}` is a float, a rank-0 array, but the array is {}",
                    ShapeText(array.shape())
                );
                return Err(refuse(reason).into());
            }
        });
    }
    if !arrays.is_empty() {
        let reason = format!("{} besides the record's fields", held(&arrays));
        return Err(refuse(reason).into());
    }
    Ok(values)
}

fn equality_failure(a: &Value, b: &Value, text: &str) -> Option<RuntimeError> {
    let as_tensor = |v: &Value| match v.primal() {
        Primal::Tensor(tensor) => Some(tensor.clone()),
        _ => v.as_f64().map(Tensor::scalar),
    };
    let values = || {
        RuntimeError::assertion(format!(
            "{text} failed: the left side is {a}, the right side is {b}"
        ))
    };
    let tensors =
        matches!(a.primal(), Primal::Tensor(_)) || matches!(b.primal(), Primal::Tensor(_));
    if !tensors {
        // Integers compare exactly, also beyond 2^53 where their floats would round.
        let equal = match (a.primal(), b.primal()) {
            (Primal::Int(x), Primal::Int(y)) => x == y,
            _ => a.as_f64().is_some_and(|x| Some(x) == b.as_f64()),
        };
        return if equal { None } else { Some(values()) };
    }
    let (Some(left), Some(right)) = (as_tensor(a), as_tensor(b)) else {
        return Some(values());
    };
    let broadcast = tensor::broadcast_shapes(left.shape(), right.shape()).and_then(|shape| {
        Ok((tensor::broadcast_to(&left, &shape)?, tensor::broadcast_to(&right, &shape)?))
    });
    let Ok((left, right)) = broadcast else {
        return Some(RuntimeError::assertion(format!(
            "{text} failed: the left side is {} and the right side is {}, which do not broadcast",
            ShapeText(left.shape()),
            ShapeText(right.shape())
        )));
    };
    let shape = left.shape().to_vec();
    let report = Mismatches::find(&left.to_vec(), &right.to_vec(), |p, q| p != q, |_| 0.0)?;
    if shape.is_empty() {
        return Some(RuntimeError::assertion(format!(
            "{text} failed: the left side is {}, the right side is {}",
            tensor::format_float(report.first.left),
            tensor::format_float(report.first.right)
        )));
    }
    let verb = if report.count == 1 { "differs" } else { "differ" };
    let error = RuntimeError::assertion(format!(
        "{text} failed: {} of {} elements of {} {verb}",
        report.count,
        report.total,
        ShapeText(&shape)
    ));
    Some(report.with_notes(error, &shape, false))
}

/// Why `a` and `b` are not close (`|a - b| <= atol + rtol * |b|` element-wise, with
/// broadcasting), or `None` when they are. For tensors the message counts the elements that are
/// not close, and notes give the first of them and the one with the largest difference, each
/// with its index, both values and its tolerance.
fn close_failure(
    a: &Value,
    b: &Value,
    rtol: f64,
    atol: f64,
    text: &str,
) -> Result<Option<RuntimeError>, RuntimeError> {
    let as_tensor = |v: &Value| match v.primal() {
        Primal::Tensor(tensor) => tensor.clone(),
        _ => Tensor::scalar(v.as_f64().unwrap_or(f64::NAN)),
    };
    let (x, y) = (as_tensor(a), as_tensor(b));
    let shape = tensor::broadcast_shapes(x.shape(), y.shape())?;
    let x = tensor::broadcast_to(&x, &shape)?;
    let y = tensor::broadcast_to(&y, &shape)?;
    let tolerance = |q: f64| atol + rtol * q.abs();
    // A NaN on either side is never close; equal infinities are.
    let close = |p: f64, q: f64| p == q || (p - q).abs() <= tolerance(q);
    let differ = |p: f64, q: f64| !close(p, q);
    let Some(report) = Mismatches::find(&x.to_vec(), &y.to_vec(), differ, tolerance) else {
        return Ok(None);
    };
    let tolerances =
        format!("rtol {}, atol {}", tensor::format_float(rtol), tensor::format_float(atol));
    if shape.is_empty() {
        let Mismatch { left, right, .. } = report.first;
        return Ok(Some(RuntimeError::assertion(format!(
            "{text} failed: {} and {} differ by {}, more than the tolerance {} ({tolerances})",
            tensor::format_float(left),
            tensor::format_float(right),
            tensor::format_float((left - right).abs()),
            tensor::format_float(tolerance(right))
        ))));
    }
    let verb = if report.count == 1 { "is" } else { "are" };
    let error = RuntimeError::assertion(format!(
        "{text} failed: {} of {} elements of {} {verb} not close ({tolerances})",
        report.count,
        report.total,
        ShapeText(&shape)
    ));
    Ok(Some(report.with_notes(error, &shape, true)))
}

/// One element where two tensors of the same shape differ.
#[derive(Clone, Copy, Debug)]
struct Mismatch {
    /// Row-major.
    position: usize,
    left: f64,
    right: f64,
    /// What `assert_close` allowed there.
    tolerance: f64,
}

impl Mismatch {
    /// `|left - right|`, with NaN above every number so that a NaN is the largest difference.
    fn gap(&self) -> f64 {
        let gap = (self.left - self.right).abs();
        if gap.is_nan() { f64::INFINITY } else { gap }
    }

    /// `at [1, 2]: the left side is 6.0, the right side is 9.0 (difference 3.0, tolerance 9e-6)`.
    fn describe(&self, shape: &[usize], with_tolerance: bool) -> String {
        let mut index = Vec::with_capacity(shape.len());
        let mut rest = self.position;
        for &extent in shape.iter().rev() {
            index.push(rest % extent.max(1));
            rest /= extent.max(1);
        }
        index.reverse();
        let index: Vec<String> = index.iter().map(usize::to_string).collect();
        let tolerance = match with_tolerance {
            true => format!(", tolerance {}", tensor::format_float(self.tolerance)),
            false => String::new(),
        };
        format!(
            "at [{}]: the left side is {}, the right side is {} (difference {}{tolerance})",
            index.join(", "),
            tensor::format_float(self.left),
            tensor::format_float(self.right),
            tensor::format_float((self.left - self.right).abs())
        )
    }
}

/// Where two tensors of the same shape differ: how many elements, the first and the largest
/// difference.
#[derive(Clone, Copy, Debug)]
struct Mismatches {
    count: usize,
    total: usize,
    first: Mismatch,
    largest: Mismatch,
}

impl Mismatches {
    /// Compares `left` and `right` element by element; `None` when `differ` holds nowhere.
    fn find(
        left: &[f64],
        right: &[f64],
        differ: impl Fn(f64, f64) -> bool,
        tolerance: impl Fn(f64) -> f64,
    ) -> Option<Mismatches> {
        let mut found: Option<Mismatches> = None;
        for (position, (&p, &q)) in left.iter().zip(right).enumerate() {
            if !differ(p, q) {
                continue;
            }
            let here = Mismatch { position, left: p, right: q, tolerance: tolerance(q) };
            match &mut found {
                None => {
                    found = Some(Mismatches {
                        count: 1,
                        total: left.len(),
                        first: here,
                        largest: here,
                    });
                }
                Some(report) => {
                    report.count += 1;
                    if here.gap() > report.largest.gap() {
                        report.largest = here;
                    }
                }
            }
        }
        found
    }

    /// `error` with notes on the first and the largest difference (one note when they are the
    /// same element).
    fn with_notes(
        &self,
        error: RuntimeError,
        shape: &[usize],
        with_tolerance: bool,
    ) -> RuntimeError {
        if self.first.position == self.largest.position {
            let which = if self.count == 1 {
                "the only difference"
            } else {
                "the first and largest difference"
            };
            return error
                .with_note(format!("{which} is {}", self.first.describe(shape, with_tolerance)));
        }
        error
            .with_note(format!(
                "the first difference is {}",
                self.first.describe(shape, with_tolerance)
            ))
            .with_note(format!(
                "the largest difference is {}",
                self.largest.describe(shape, with_tolerance)
            ))
    }
}

/// The message for an index statement whose right side has other extents than its target.
fn index_mismatch(name: &str, labels: &[Box<str>], target: &[usize], result: &[usize]) -> String {
    for (axis, (label, (&have, &got))) in labels.iter().zip(target.iter().zip(result)).enumerate() {
        if have != got {
            return format!(
                "shape mismatch in an index statement: label `{label}` is {have} in {name} (axis {axis}) but {got} on the right side"
            );
        }
    }
    format!(
        "shape mismatch in an index statement: {name} is {} but the right side gives {}",
        ShapeText(target),
        ShapeText(result)
    )
}

/// The options `print_options(precision, threshold, line_width, suppress_small)` sets, starting
/// from the current ones; the checker has typed the arguments, their values are checked here.
fn print_options_from(
    current: tensor::PrintOptions,
    values: &[Value],
) -> Result<tensor::PrintOptions, RuntimeError> {
    let mut options = tensor::PrintOptions { layout: tensor::Layout::Grid, ..current };
    let int = |i: usize, what: &str, low: i64| -> Result<Option<usize>, RuntimeError> {
        let Some(value) = values.get(i) else { return Ok(None) };
        let n = value.as_f64().unwrap_or(0.0) as i64;
        match usize::try_from(n) {
            Ok(n) if n as i64 >= low => Ok(Some(n)),
            _ => Err(RuntimeError::new(
                Code::OptionFailure,
                format!("{what} of print_options must be at least {low}, not {n}"),
            )),
        }
    };
    if let Some(precision) = int(0, "the precision", 0)? {
        if precision > tensor::PrintOptions::MAX_PRECISION {
            return Err(RuntimeError::new(
                Code::OptionFailure,
                format!(
                    "the precision of print_options must be at most {}, not {precision}",
                    tensor::PrintOptions::MAX_PRECISION
                ),
            ));
        }
        options.precision = Some(precision);
    }
    if let Some(threshold) = int(1, "the threshold", 0)? {
        options.threshold = threshold;
    }
    if let Some(width) = int(2, "the line width", 1)? {
        options.line_width = width;
    }
    if let Some(suppress) = values.get(3) {
        options.suppress_small = suppress.as_f64().is_some_and(|x| x != 0.0);
    }
    Ok(options)
}
