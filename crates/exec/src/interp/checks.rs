//! Run-time shape checks and bindings of shape variables, index composition (`a[1:3][0]` reads
//! row 1), and the zero values of declarations.

use hir::{Code, SizeError};

use crate::code::{
    CheckContext, DimSpec, IndexEntry, Operand, ShapeCheck, SizePlace, SizeSpec, Slot, SolveSpec,
    ZeroKind,
};
use crate::error::RuntimeError;
use crate::value::Value;
use std::rc::Rc;

use tensor::{Entry, Gather, Index, Resolver, ShapeText, Subscript, Tensor};

use super::{Machine, int_of};

impl Machine<'_, '_> {
    /// The integer in a slot (an index, a bound, an extent).
    pub(super) fn int_at(&self, base: usize, operand: Operand) -> Result<i64, RuntimeError> {
        let value = &self.stack[base + operand.slot().index() as usize];
        int_of(value).ok_or_else(|| super::not_an_integer(value))
    }

    /// The value of a shape variable.
    fn place_value(&self, base: usize, place: SizePlace) -> Option<i64> {
        match place {
            SizePlace::Slot(slot) => int_of(&self.stack[base + slot.index() as usize]),
            SizePlace::Global(global) => {
                self.globals.get(global as usize).and_then(Option::as_ref).and_then(int_of)
            }
        }
    }

    /// The extent a spec demands; `None` for the specs that bind instead.
    fn dim_value(&self, base: usize, spec: &DimSpec) -> Option<Result<i64, RuntimeError>> {
        Some(Ok(match spec {
            DimSpec::Known(n) => i64::try_from(*n).ok()?,
            DimSpec::Slot(slot) => self.place_value(base, SizePlace::Slot(*slot))?,
            DimSpec::Global(global) => self.place_value(base, SizePlace::Global(*global))?,
            DimSpec::Size(size) => return Some(self.size_value(base, size)),
            DimSpec::BindSlot(_) | DimSpec::BindGlobal(_) | DimSpec::Solve(_) | DimSpec::Any => {
                return None;
            }
        }))
    }

    /// The value of a size expression, which must be a whole number of zero or more.
    fn size_value(&self, base: usize, size: &SizeSpec) -> Result<i64, RuntimeError> {
        let value = size.expr.eval(&mut |&place| self.place_value(base, place));
        let error = match value {
            Ok(value) if value >= 0 => return Ok(value),
            Ok(value) => SizeError::Negative(value),
            Err(error) => error,
        };
        // `the dimension `k` cannot be negative: k is -1`, not `... (with k = -1)`.
        let vars: Vec<(&str, SizePlace)> = size
            .vars
            .iter()
            .filter(|(name, _)| **name != *size.text)
            .map(|(name, place)| (&**name, *place))
            .collect();
        let with = with(&self.var_values(base, &vars));
        let text = &size.text;
        Err(RuntimeError::new(
            Code::DeclaredShapeFailure,
            match error {
                SizeError::Negative(value) => {
                    format!("the dimension `{text}` cannot be negative{with}: {text} is {value}")
                }
                SizeError::Inexact { dividend, divisor } => format!(
                    "the dimension `{text}` is not a whole number{with}: {dividend} / {divisor} leaves a remainder"
                ),
                other => format!("the dimension `{text}` has no value{with}: {other}"),
            },
        ))
    }

    /// `n = 2, q = 4`: the variables that have values.
    fn var_values(&self, base: usize, vars: &[(impl AsRef<str>, SizePlace)]) -> String {
        let mut out: Vec<String> = Vec::new();
        for (name, place) in vars {
            let Some(value) = self.place_value(base, *place) else { continue };
            let binding = format!("{} = {value}", name.as_ref());
            if !out.contains(&binding) {
                out.push(binding);
            }
        }
        out.join(", ")
    }

    /// Resolves extents for a constructor or a broadcast.
    pub(super) fn dims(&self, base: usize, specs: &[DimSpec]) -> Result<Vec<usize>, RuntimeError> {
        specs
            .iter()
            .map(|spec| {
                let value = self
                    .dim_value(base, spec)
                    .ok_or_else(|| RuntimeError::internal("an extent that is not known"))??;
                usize::try_from(value).map_err(|_| {
                    RuntimeError::new(
                        Code::DimensionFailure,
                        format!("a dimension cannot be negative ({value})"),
                    )
                })
            })
            .collect()
    }

    /// Checks the value in `slot` against a declared shape, binding fresh shape variables.
    pub(super) fn check_shape(
        &mut self,
        base: usize,
        slot: Slot,
        check: &ShapeCheck,
    ) -> Result<(), RuntimeError> {
        // A second handle on the value (a reference count, where copying the shape out would
        // allocate on every call), so that the shape stays readable while sizes are bound.
        let value = self.stack[base + slot.index() as usize].clone();
        let shape = value.shape();
        let is_tensor = value.is_tensor();
        if !is_tensor && !check.ranked {
            return Ok(());
        }
        let mut ok = shape.len() == check.dims.len();
        // What makes the first extent that differs differ, when the declared type alone does not
        // say it: `n + 1 is 4`, `no size m makes 2*m equal 7`.
        let mut why = None;
        // How many of the variables it binds the check bound before it failed.
        let mut bound = 0;
        if ok {
            for (&extent, spec) in shape.iter().zip(&check.dims) {
                let value = extent as i64;
                match spec {
                    DimSpec::BindSlot(s) => {
                        self.stack[base + s.index() as usize] = Value::Int(value);
                        bound += 1;
                    }
                    DimSpec::BindGlobal(g) => {
                        self.bind_place(base, SizePlace::Global(*g), value);
                        bound += 1;
                    }
                    DimSpec::Solve(solve) => match self.solve(base, solve, value)? {
                        Ok(solved) => {
                            self.bind_place(base, solve.var, solved);
                            bound += 1;
                        }
                        Err(would_be) => {
                            ok = false;
                            let (var, text) = (&solve.name, &solve.text);
                            why = Some(format!(
                                "no size {var} makes {text} equal {value} ({var} would be {would_be})"
                            ));
                            break;
                        }
                    },
                    DimSpec::Any => {}
                    other => {
                        if let Some(expected) = self.dim_value(base, other)
                            && let expected = expected?
                            && expected != value
                        {
                            ok = false;
                            // `(with b = 3)` says what `b` is.
                            if let DimSpec::Size(size) = other
                                && !size.vars.iter().any(|(name, _)| **name == *size.text)
                            {
                                why = Some(format!("{} is {expected}", size.text));
                            }
                            break;
                        }
                    }
                }
            }
        }
        if ok {
            return Ok(());
        }
        let unbound: Vec<SizePlace> =
            check.dims.iter().filter_map(DimSpec::binds).skip(bound).collect();
        let mut message = self.shape_message(base, check, shape, &unbound);
        if let Some(why) = why {
            message.push_str(&format!(": {why}"));
        }
        Err(RuntimeError::new(Code::DeclaredShapeFailure, message))
    }

    fn bind_place(&mut self, base: usize, place: SizePlace, value: i64) {
        match place {
            SizePlace::Slot(slot) => self.stack[base + slot.index() as usize] = Value::Int(value),
            SizePlace::Global(global) => {
                if let Some(global) = self.globals.get_mut(global as usize) {
                    *global = Some(Value::Int(value));
                }
            }
        }
    }

    /// The value of the variable that makes the extent `extent`; when that is no size, the
    /// value it would need (`7/2`, `-1`).
    fn solve(
        &self,
        base: usize,
        solve: &SolveSpec,
        extent: i64,
    ) -> Result<Result<i64, String>, RuntimeError> {
        let rest =
            solve.rest.eval(&mut |&place| self.place_value(base, place)).map_err(|error| {
                let message = format!("the dimension `{}` cannot be checked: {error}", solve.text);
                RuntimeError::new(Code::DeclaredShapeFailure, message)
            })?;
        let (num, den) =
            (i128::from(solve.coefficient.numer()), i128::from(solve.coefficient.denom()));
        let scaled = (i128::from(extent) - i128::from(rest)) * den;
        if num == 0 {
            return Ok(Err("any".to_owned()));
        }
        if scaled % num == 0
            && let Ok(value) = i64::try_from(scaled / num)
            && value >= 0
        {
            return Ok(Ok(value));
        }
        // The fraction `scaled / num` in lowest terms, with a positive denominator.
        let (mut a, mut b) = (scaled.abs(), num.abs());
        while b != 0 {
            (a, b) = (b, a % b);
        }
        let gcd = a.max(1);
        let sign = if num < 0 { -1 } else { 1 };
        let (top, bottom) = (sign * scaled / gcd, num.abs() / gcd);
        Ok(Err(match bottom {
            1 => top.to_string(),
            _ => format!("{top}/{bottom}"),
        }))
    }

    /// The message of a failed check, in the words of the checker's (`E0204`, `E0209`) with
    /// the values of the sizes: `the initializer of `c` is Tensor[5], but `c` is declared
    /// Tensor[n + 1] (with n = 3)`. `unbound` are the variables the check did not get to bind,
    /// whose values are not shown.
    fn shape_message(
        &self,
        base: usize,
        check: &ShapeCheck,
        shape: &[usize],
        unbound: &[SizePlace],
    ) -> String {
        let vars: Vec<(&str, SizePlace)> = check
            .vars
            .iter()
            .filter(|(_, place)| !unbound.contains(place))
            .map(|(name, place)| (name.as_str(), *place))
            .collect();
        let with = with(&self.var_values(base, &vars));
        let declared = &check.declared;
        let found = ShapeText(shape);
        match &check.context {
            CheckContext::Initializer { name } => format!(
                "the initializer of `{name}` is {found}, but `{name}` is declared {declared}{with}"
            ),
            CheckContext::Assign { name } => {
                format!("cannot assign a {found} to `{name}`, declared {declared}{with}")
            }
            CheckContext::Argument { function, index } => format!(
                "argument {} of `{function}` must be {declared}, found {found}{with}",
                index + 1
            ),
            CheckContext::Return { function } => {
                format!("`{function}` returns {declared}, but this value is {found}{with}")
            }
            CheckContext::Literal { record } => {
                format!("in this `{record}`, the value {found} does not fit {declared}{with}")
            }
        }
    }

    /// What a chain of brackets selects in a tensor of `shape`: basic brackets composed so that
    /// each applies to what the previous ones selected (`tensor::Resolver`), or the map of a
    /// bracket holding index tensors or masks (`tensor::Gather::advanced`), which the lowering
    /// puts alone in its chain.
    pub(super) fn selection(
        &self,
        base: usize,
        shape: &[usize],
        chain: &[Box<[IndexEntry]>],
    ) -> Result<Selection, RuntimeError> {
        let [entries] = chain else {
            return self.index(base, shape, chain).map(Selection::Basic);
        };
        if !entries
            .iter()
            .any(|entry| matches!(entry, IndexEntry::Indices(_) | IndexEntry::Mask(_)))
        {
            return self.index(base, shape, chain).map(Selection::Basic);
        }
        let tensors: Vec<Value> = entries
            .iter()
            .filter_map(|entry| match *entry {
                IndexEntry::Indices(operand) | IndexEntry::Mask(operand) => {
                    Some(self.stack[base + operand.slot().index() as usize].detach())
                }
                _ => None,
            })
            .collect();
        let mut tensors = tensors.iter();
        let mut bracket = Vec::with_capacity(entries.len());
        for entry in entries.iter() {
            let bound = |o: Option<Operand>| o.map(|o| self.int_at(base, o)).transpose();
            bracket.push(match *entry {
                IndexEntry::At(i) => Entry::Basic(Subscript::At(self.int_at(base, i)?)),
                IndexEntry::Indices(_) | IndexEntry::Mask(_) => {
                    let value = tensors.next().and_then(Value::as_tensor).ok_or_else(|| {
                        RuntimeError::internal("an index tensor that is not a tensor")
                    })?;
                    match entry {
                        IndexEntry::Mask(_) => Entry::Mask(value),
                        _ => Entry::Indices(value),
                    }
                }
                IndexEntry::Slice { start, end, step } => Entry::Basic(Subscript::Slice {
                    start: bound(start)?,
                    end: bound(end)?,
                    step: bound(step)?,
                }),
                IndexEntry::Ellipsis => Entry::Basic(Subscript::Ellipsis),
                IndexEntry::NewAxis => Entry::Basic(Subscript::NewAxis),
            });
        }
        Ok(Selection::Gathered(Rc::new(Gather::advanced(shape, &bracket)?)))
    }

    /// The index a chain of basic brackets selects in a tensor of `shape`, composed so that each
    /// bracket applies to what the previous ones selected (`tensor::Resolver`).
    pub(super) fn index(
        &self,
        base: usize,
        shape: &[usize],
        chain: &[Box<[IndexEntry]>],
    ) -> Result<Vec<Index>, RuntimeError> {
        let mut resolver = Resolver::new(shape);
        let mut bracket = Vec::new();
        for entries in chain {
            bracket.clear();
            for entry in entries.iter() {
                let bound = |o: Option<Operand>| o.map(|o| self.int_at(base, o)).transpose();
                bracket.push(match *entry {
                    IndexEntry::At(i) => Subscript::At(self.int_at(base, i)?),
                    IndexEntry::Indices(_) | IndexEntry::Mask(_) => {
                        return Err(RuntimeError::internal("an index tensor in a chain"));
                    }
                    IndexEntry::Slice { start, end, step } => Subscript::Slice {
                        start: bound(start)?,
                        end: bound(end)?,
                        step: bound(step)?,
                    },
                    IndexEntry::Ellipsis => Subscript::Ellipsis,
                    IndexEntry::NewAxis => Subscript::NewAxis,
                });
            }
            resolver.apply(&bracket)?;
        }
        Ok(resolver.finish())
    }

    /// The value of a declaration without an initializer.
    pub(super) fn zero(&self, base: usize, kind: &ZeroKind) -> Result<Value, RuntimeError> {
        Ok(match kind {
            ZeroKind::Bool => Value::Bool(false),
            ZeroKind::Char => Value::Char(0),
            ZeroKind::Tensor(dims) => {
                let shape = self.dims(base, dims)?;
                Value::tensor(Tensor::zeros(&shape)?)
            }
        })
    }
}

/// What an index expression selects: a basic index or the map of a gather.
pub(super) enum Selection {
    Basic(Vec<Index>),
    Gathered(Rc<Gather>),
}

/// ` (with n = 3, m = 4)`, or nothing when no variable has a value.
fn with(bindings: &str) -> String {
    match bindings.is_empty() {
        true => String::new(),
        false => format!(" (with {bindings})"),
    }
}
