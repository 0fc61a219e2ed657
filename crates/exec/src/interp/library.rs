//! Running a [`BuiltinCall::Library`](crate::code::BuiltinCall::Library): the arguments read as
//! the built-in's rule in hir's table says (axes and counts as ints, options as text), then the
//! differentiable operation of [`crate::ops`] or the plain kernel of `tensor` that computes it.

use hir::{Builtin, Code};

use crate::code::PrintItem;
use crate::error::RuntimeError;
use crate::ops::{self, library, plain, rearrange};
use crate::value::{Primal, Value};
use tensor::{self, Extreme, PadMode, ReduceOp, ScanOp, Tensor, TensorError};

use super::Machine;

/// The arguments of one call, fetched.
struct Args {
    builtin: Builtin,
    items: Vec<Arg>,
}

enum Arg {
    Value(Value),
    Text(Box<str>),
}

impl Args {
    fn name(&self) -> &'static str {
        self.builtin.name()
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    fn missing(&self, index: usize) -> RuntimeError {
        RuntimeError::internal(format!("`{}` without argument {}", self.name(), index + 1))
    }

    /// Argument `index` as a value, moved out.
    fn value(&mut self, index: usize) -> Result<Value, RuntimeError> {
        match self.items.get_mut(index) {
            Some(Arg::Value(value)) => Ok(std::mem::replace(value, Value::Int(0))),
            _ => Err(self.missing(index)),
        }
    }

    fn borrow(&self, index: usize) -> Result<&Value, RuntimeError> {
        match self.items.get(index) {
            Some(Arg::Value(value)) => Ok(value),
            _ => Err(self.missing(index)),
        }
    }

    fn int(&self, index: usize) -> Result<i64, RuntimeError> {
        let value = self.borrow(index)?;
        match value.primal() {
            Primal::Int(n) => Ok(n),
            _ => Err(super::not_an_integer(value)),
        }
    }

    fn int_if(&self, index: usize) -> Result<Option<i64>, RuntimeError> {
        match index < self.len() {
            true => self.int(index).map(Some),
            false => Ok(None),
        }
    }

    /// A non-negative int used as a count or an extent.
    fn count(&self, index: usize) -> Result<usize, RuntimeError> {
        let n = self.int(index)?;
        usize::try_from(n).map_err(|_| {
            RuntimeError::new(
                Code::DimensionFailure,
                format!("`{}`: the count {n} is negative", self.name()),
            )
        })
    }

    fn count_or(&self, index: usize, default: usize) -> Result<usize, RuntimeError> {
        match index < self.len() {
            true => self.count(index),
            false => Ok(default),
        }
    }

    fn float(&self, index: usize) -> Result<f64, RuntimeError> {
        let value = self.borrow(index)?;
        value.as_f64().ok_or_else(|| self.missing(index))
    }

    fn float_or(&self, index: usize, default: f64) -> Result<f64, RuntimeError> {
        match index < self.len() {
            true => self.float(index),
            false => Ok(default),
        }
    }

    /// A `keepdims` argument, `false` when absent.
    fn flag(&self, index: usize) -> Result<bool, RuntimeError> {
        match index < self.len() {
            true => match self.borrow(index)?.primal() {
                Primal::Bool(flag) => Ok(flag),
                _ => Err(self.missing(index)),
            },
            false => Ok(false),
        }
    }

    fn text(&self, index: usize) -> Option<&str> {
        match self.items.get(index) {
            Some(Arg::Text(text)) => Some(text),
            _ => None,
        }
    }

    /// The integers of a list argument (`[2, 3]`, a tensor holding them, or one int).
    fn ints(&self, index: usize) -> Result<Vec<i64>, RuntimeError> {
        let value = self.borrow(index)?;
        let numbers: Vec<f64> = match value.primal() {
            Primal::Int(n) => return Ok(vec![n]),
            Primal::Tensor(tensor) => tensor.to_vec(),
            _ => value.as_f64().into_iter().collect(),
        };
        numbers
            .into_iter()
            .map(|x| match x.fract() == 0.0 && x.abs() < 9.0e15 {
                true => Ok(x as i64),
                false => Err(RuntimeError::new(
                    Code::DimensionFailure,
                    format!("`{}`: {} is not an integer", self.name(), tensor::format_float(x)),
                )),
            })
            .collect()
    }

    /// A shape argument: a list of non-negative extents.
    fn shape(&self, index: usize) -> Result<Vec<usize>, RuntimeError> {
        Ok(tensor::dims_from_i64(&self.ints(index)?)?)
    }
}

impl Machine<'_, '_> {
    /// The arguments of a call of `builtin`, fetched.
    fn library_args(
        &mut self,
        base: usize,
        builtin: Builtin,
        items: &[PrintItem],
    ) -> Result<Args, RuntimeError> {
        let mut args = Vec::with_capacity(items.len());
        for item in items {
            args.push(match item {
                PrintItem::Value(operand) => Arg::Value(self.fetch(base, *operand)),
                PrintItem::Text(text) => Arg::Text(text.clone()),
                PrintItem::Format(_) => {
                    return Err(RuntimeError::internal("the text of `format` as an option"));
                }
            });
        }
        Ok(Args { builtin, items: args })
    }

    /// Runs the library built-in `builtin` of several results (`topk`, `split`) on `items`: its
    /// `results` values, in order.
    pub(super) fn library_tuple(
        &mut self,
        base: usize,
        builtin: Builtin,
        items: &[PrintItem],
        results: u32,
    ) -> Result<Vec<Value>, RuntimeError> {
        let mut a = self.library_args(base, builtin, items)?;
        let values = match builtin {
            Builtin::Topk => {
                let (k, axis) = (a.count(1)?, a.int_if(2)?);
                let (values, indices) = rearrange::topk(&mut self.tape, a.value(0)?, k, axis)?;
                vec![values, indices]
            }
            Builtin::Split => {
                let axis = a.int_if(2)?.unwrap_or(0);
                match a.borrow(1)?.is_tensor() {
                    true => {
                        let cuts = tensor::dims_from_i64(&a.ints(1)?)?;
                        rearrange::split_at(&mut self.tape, a.value(0)?, &cuts, axis)?
                    }
                    false => rearrange::split(&mut self.tape, a.value(0)?, a.count(1)?, axis)?,
                }
            }
            Builtin::Qr => {
                let (q, r) = ops::qr(&mut self.tape, a.value(0)?)?;
                vec![q, r]
            }
            Builtin::Svd => ops::svd(&mut self.tape, a.value(0)?)?.into(),
            Builtin::Eigh => {
                let (w, v) = ops::eigh(&mut self.tape, a.value(0)?)?;
                vec![w, v]
            }
            Builtin::Slogdet => {
                let (sign, log) = ops::slogdet(&mut self.tape, a.value(0)?)?;
                vec![sign, log]
            }
            _ => Vec::new(),
        };
        match values.len() == results as usize {
            true => Ok(values),
            false => Err(RuntimeError::internal(format!(
                "`{}` of {} results, not {results}",
                builtin.name(),
                values.len()
            ))),
        }
    }

    /// Runs the library built-in `builtin` on `items`.
    pub(super) fn library(
        &mut self,
        base: usize,
        builtin: Builtin,
        items: &[PrintItem],
    ) -> Result<Value, RuntimeError> {
        let mut a = self.library_args(base, builtin, items)?;
        use Builtin as B;
        Ok(match builtin {
            B::LeakyRelu => {
                let slope = a.float_or(1, 0.01)?;
                library::leaky_relu(&mut self.tape, a.value(0)?, slope)?
            }
            B::Elu => {
                let alpha = a.float_or(1, 1.0)?;
                library::elu(&mut self.tape, a.value(0)?, alpha)?
            }
            B::IsNan => library::predicate(a.borrow(0)?, f64::is_nan)?,
            B::IsFinite => library::predicate(a.borrow(0)?, f64::is_finite)?,
            B::Clip => {
                let (x, lo, hi) = (a.value(0)?, a.value(1)?, a.value(2)?);
                library::clip(&mut self.tape, x, lo, hi)?
            }
            B::Where => {
                let mask = a.value(0)?;
                let mask = match mask.primal() {
                    Primal::Bool(truth) => Value::Float(f64::from(u8::from(truth))),
                    _ => mask,
                };
                ops::select(&mut self.tape, &mask, a.value(1)?, a.value(2)?)?
            }
            B::Sum | B::Mean | B::Prod | B::Logsumexp | B::Max | B::Min => {
                let op = match builtin {
                    B::Sum => ReduceOp::Sum,
                    B::Mean => ReduceOp::Mean,
                    B::Prod => ReduceOp::Prod,
                    B::Logsumexp => ReduceOp::LogSumExp,
                    B::Max => ReduceOp::Max,
                    _ => ReduceOp::Min,
                };
                let keepdims = a.flag(2)?;
                library::reduce_keeping(&mut self.tape, op, a.value(0)?, a.int(1)?, keepdims)?
            }
            B::Norm => {
                let ord = match a.text(2) {
                    Some("inf") => library::VectorOrd::Extreme { largest: true },
                    Some("-inf") => library::VectorOrd::Extreme { largest: false },
                    Some(other) => {
                        return Err(RuntimeError::internal(format!("the norm order {other}")));
                    }
                    None => match a.float(2)? {
                        f64::INFINITY => library::VectorOrd::Extreme { largest: true },
                        f64::NEG_INFINITY => library::VectorOrd::Extreme { largest: false },
                        p => library::VectorOrd::P(p),
                    },
                };
                let keepdims = a.flag(3)?;
                library::vector_norm(&mut self.tape, a.value(0)?, a.int(1)?, ord, keepdims)?
            }
            B::Argmax | B::Argmin => {
                let which = if builtin == B::Argmax { Extreme::Max } else { Extreme::Min };
                let x = plain::into_tensor(a.borrow(0)?.detach(), a.name())?;
                match a.int_if(1)? {
                    // Positions below 2^53 convert to `i64` exactly.
                    None => Value::Int(tensor::arg_extreme(which, &x)? as i64),
                    Some(axis) => {
                        let positions = tensor::arg_extreme_axis(which, &x, axis)?;
                        kept(&mut self.tape, positions, &x, axis, a.flag(2)?)?
                    }
                }
            }
            B::CountNonzero => {
                let x = plain::into_tensor(a.borrow(0)?.detach(), a.name())?;
                match a.int_if(1)? {
                    None => Value::Int(tensor::count_nonzero(&x, None)?.to_scalar()? as i64),
                    Some(axis) => {
                        let resolved = tensor::normalize_axis(axis, x.rank())?;
                        let counts = tensor::count_nonzero(&x, Some(resolved))?;
                        kept(&mut self.tape, counts, &x, axis, a.flag(2)?)?
                    }
                }
            }
            B::All | B::Any => {
                let x = plain::into_tensor(a.borrow(0)?.detach(), a.name())?;
                let axis = a.int(1)?;
                let resolved = tensor::normalize_axis(axis, x.rank())?;
                let truths = tensor::truth_axis(&x, resolved, builtin == B::All)?;
                kept(&mut self.tape, truths, &x, axis, a.flag(2)?)?
            }
            B::Argsort => {
                let x = plain::into_tensor(a.borrow(0)?.detach(), a.name())?;
                let axis = match a.int_if(1)? {
                    Some(axis) => tensor::normalize_axis(axis, x.rank())?,
                    None => x.rank().checked_sub(1).ok_or(TensorError::Rank {
                        op: "argsort",
                        expected: "a tensor of rank 1 or more",
                        shape: Vec::new(),
                    })?,
                };
                Value::tensor(tensor::argsort(&x, axis, a.flag(2)?)?)
            }
            B::Sort => {
                let (axis, descending) = (a.int_if(1)?, a.flag(2)?);
                rearrange::sort(&mut self.tape, a.value(0)?, axis, descending)?
            }
            B::Cumsum | B::Cumprod => {
                let op = if builtin == B::Cumsum { ScanOp::Sum } else { ScanOp::Prod };
                let axis = a.int_if(1)?;
                rearrange::cumulative(&mut self.tape, op, a.value(0)?, axis)?
            }
            B::Flip => rearrange::flip(&mut self.tape, a.value(0)?, a.int_if(1)?)?,
            B::Roll => {
                let (shift, axis) = (a.int(1)?, a.int_if(2)?);
                rearrange::roll(&mut self.tape, a.value(0)?, shift, axis)?
            }
            B::Tile => {
                let reps = a.shape(1)?;
                rearrange::tile(&mut self.tape, a.value(0)?, &reps)?
            }
            B::Repeat => {
                let (repeats, axis) = (a.count(1)?, a.int_if(2)?);
                rearrange::repeat(&mut self.tape, a.value(0)?, repeats, axis)?
            }
            B::Pad => {
                let mode = match a.text(2) {
                    None => PadMode::Constant,
                    Some(name) => PadMode::from_name(name)
                        .ok_or_else(|| RuntimeError::internal(format!("the pad mode {name}")))?,
                };
                let rank = a.borrow(0)?.shape().len();
                let widths = pad_widths(&a, rank)?;
                let value = match a.len() > 3 {
                    true => a.value(3)?,
                    false => Value::Float(0.0),
                };
                rearrange::pad(&mut self.tape, a.value(0)?, &widths, mode, value)?
            }
            B::Shuffle => rearrange::shuffle(&mut self.tape, a.value(0)?, &mut self.rng)?,
            B::Pinv => ops::pinv(&mut self.tape, a.value(0)?)?,
            B::Lstsq => {
                let inverse = ops::pinv(&mut self.tape, a.value(0)?)?;
                ops::matmul(&mut self.tape, inverse, a.value(1)?)?
            }
            B::MatrixNorm => {
                let ord = match a.len() {
                    1 => tensor::MatrixOrd::Frobenius,
                    _ => match a.text(1) {
                        Some(name) => tensor::MatrixOrd::from_name(name),
                        None => tensor::MatrixOrd::from_number(a.float(1)?),
                    }
                    .ok_or_else(|| RuntimeError::internal("a matrix norm order"))?,
                };
                library::matrix_norm(&mut self.tape, a.value(0)?, ord)?
            }
            B::Nonzero => {
                let x = plain::into_tensor(a.borrow(0)?.detach(), a.name())?;
                let positions: Vec<f64> =
                    tensor::nonzero(&x).into_iter().map(|p| p as f64).collect();
                Value::tensor(Tensor::from_vec(&[positions.len()], positions)?)
            }
            B::Std | B::Variance => {
                let axis = a.int_if(1)?;
                let ddof = a.float_or(2, 0.0)?;
                let keepdims = a.flag(3)?;
                library::moment(
                    &mut self.tape,
                    a.value(0)?,
                    axis,
                    ddof,
                    keepdims,
                    builtin == B::Std,
                )?
            }
            B::Arange => {
                let (start, stop) = (a.float(0)?, a.float(1)?);
                let step = a.float_or(2, 1.0)?;
                Value::tensor(Tensor::arange_step(start, stop, step)?)
            }
            B::Linspace => {
                let num = a.count(2)?;
                Value::tensor(Tensor::linspace(a.float(0)?, a.float(1)?, num)?)
            }
            B::Concat => {
                let axis_given =
                    matches!(a.borrow(a.len() - 1)?.primal(), Primal::Int(_)) && a.len() > 2;
                let (count, axis) = match axis_given {
                    true => (a.len() - 1, a.int(a.len() - 1)?),
                    false => (a.len(), 0),
                };
                let items = (0..count).map(|i| a.value(i)).collect::<Result<Vec<_>, _>>()?;
                library::concat_many(&mut self.tape, items, axis)?
            }
            B::Stack => {
                let items = (0..a.len()).map(|i| a.value(i)).collect::<Result<Vec<_>, _>>()?;
                ops::stack_many(&mut self.tape, items)?
            }
            B::Squeeze => {
                let axis = a.int_if(1)?;
                library::squeeze(&mut self.tape, a.value(0)?, axis)?
            }
            B::Unsqueeze | B::ExpandDims => {
                let axis = a.int(1)?;
                ops::expand_dims(&mut self.tape, a.value(0)?, axis)?
            }
            B::Tril | B::Triu => {
                let k = a.int_if(1)?.unwrap_or(0);
                library::triangle(&mut self.tape, a.value(0)?, k, builtin == B::Tril)?
            }
            B::OneHot => {
                let labels = plain::into_tensor(a.borrow(0)?.detach(), a.name())?;
                Value::tensor(tensor::one_hot(&labels, a.count(1)?)?)
            }
            B::BroadcastTo => {
                let shape = a.shape(1)?;
                tensor::check_allocation(&shape)?;
                ops::broadcast_to(&mut self.tape, a.value(0)?, &shape)?
            }
            B::Kron => library::kron(&mut self.tape, a.value(0)?, a.value(1)?)?,
            B::Outer => library::outer(&mut self.tape, a.value(0)?, a.value(1)?)?,
            B::Cross => library::cross(&mut self.tape, a.value(0)?, a.value(1)?)?,
            B::Randint => {
                let shape = a.shape(2)?;
                Value::tensor(self.rng.randint(a.int(0)?, a.int(1)?, &shape)?)
            }
            B::Permutation => Value::tensor(self.rng.permutation(a.count(0)?)?),
            B::Uniform | B::Normal => {
                let shape = a.shape(2)?;
                let noise = match builtin {
                    B::Uniform => self.rng.rand(&shape)?,
                    _ => self.rng.randn(&shape)?,
                };
                let (first, second) = (a.value(0)?, a.value(1)?);
                let sample = match builtin {
                    B::Uniform => library::uniform(&mut self.tape, first, second, noise)?,
                    _ => library::normal(&mut self.tape, first, second, noise)?,
                };
                of_shape(sample, &shape, a.name())?
            }
            B::Bernoulli => {
                let shape = a.shape(1)?;
                let p = plain::into_tensor(a.borrow(0)?.detach(), a.name())?;
                Value::tensor(self.rng.bernoulli(&p, &shape)?)
            }
            B::Conv1d | B::Conv2d => {
                let options =
                    [a.count_or(2, 1)?, a.count_or(3, 0)?, a.count_or(4, 1)?, a.count_or(5, 1)?];
                library::conv(&mut self.tape, a.name(), a.value(0)?, a.value(1)?, options)?
            }
            B::MaxPool2d | B::AvgPool2d => {
                let kernel = a.count(1)?;
                let options = [kernel, a.count_or(2, kernel)?, a.count_or(3, 0)?];
                library::pool(&mut self.tape, a.value(0)?, options, builtin == B::MaxPool2d)?
            }
            B::CrossEntropy | B::Nll => {
                let labels = a.value(1)?;
                library::class_loss(
                    &mut self.tape,
                    a.value(0)?,
                    &labels,
                    builtin == B::CrossEntropy,
                )?
            }
            B::Mse => library::mse(&mut self.tape, a.value(0)?, a.value(1)?)?,
            B::BceWithLogits => library::bce_with_logits(&mut self.tape, a.value(0)?, a.value(1)?)?,
            _ => {
                return Err(RuntimeError::internal(format!(
                    "`{}` is not a library built-in",
                    builtin.name()
                )));
            }
        })
    }
}

/// The widths of `pad`: one int for every side of every axis, or a `[before, after]` pair per
/// axis.
fn pad_widths(a: &Args, rank: usize) -> Result<Vec<(usize, usize)>, RuntimeError> {
    let single = matches!(a.borrow(1)?.primal(), Primal::Int(_));
    let widths = tensor::dims_from_i64(&a.ints(1)?)?;
    match (single, widths.as_slice()) {
        (true, &[w]) => Ok(vec![(w, w); rank]),
        (false, _) if widths.len() == 2 * rank => {
            Ok(widths.chunks_exact(2).map(|pair| (pair[0], pair[1])).collect())
        }
        _ => Err(RuntimeError::new(
            Code::DimensionFailure,
            format!(
                "`pad`: {} widths for a tensor of rank {rank}, which takes one [before, after] \
                 pair per axis",
                widths.len()
            ),
        )),
    }
}

/// A plain result along `axis` of `x`, with the axis kept at extent 1 when `keepdims`.
fn kept(
    t: &mut crate::autodiff::Tape,
    y: Tensor,
    x: &Tensor,
    axis: i64,
    keepdims: bool,
) -> Result<Value, RuntimeError> {
    let resolved = tensor::normalize_axis(axis, x.rank())?;
    let y = Value::tensor(y);
    match keepdims {
        true => Ok(library::keep_axis(t, y, x.shape(), resolved)?),
        false => Ok(y),
    }
}

/// Checks that a sample, whose parameters broadcast against its noise, has the shape asked for.
fn of_shape(sample: Value, shape: &[usize], op: &'static str) -> Result<Value, RuntimeError> {
    match sample.shape() == shape {
        true => Ok(sample),
        false => Err(RuntimeError::new(
            Code::BroadcastFailure,
            format!(
                "{op}: parameters that broadcast to {} do not fit the shape {}",
                tensor::ShapeText(sample.shape()),
                tensor::ShapeText(shape)
            ),
        )),
    }
}
