//! Types and symbolic shapes, and the shape algebra of section 4: NumPy broadcasting and the
//! rules of `@`.
//!
//! A dimension ([`Dim`]) is a known extent, a size expression over shape variables and `int`s
//! fixed where they are used (`2*n + 1`, `n - q + 1`, `n / 2`), or unknown. Sizes compare by
//! their normal form ([`size`]): equal when the normal forms agree, certainly different when
//! they differ by a constant, and undecided otherwise; only a certain difference is a static
//! error, the rest is left for the run-time check.

mod size;

use std::{fmt, sync::Arc};

pub use self::size::{Poly, Ratio, SizeError, SizeExpr, SizeOp, SizeVar};

/// A static type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ty {
    Int,
    Float,
    Char,
    Bool,
    Void,
    /// A string literal: only an argument to built-ins.
    Str,
    Tensor(Shape),
    /// A function, or a derivative of one built by `grad`/`jvp`/...: only callable.
    Fn(Box<FnTy>),
    /// The results of a function of several results, `(float, Tensor[k][2])`: only returned or
    /// destructured (`(float loss, Tensor p[k][2]) = step(x);`). Its elements are never tuples.
    Tuple(Vec<Ty>),
    /// A record: a value of a `struct` type, with the sizes of its size parameters. Its fields
    /// are [`crate::record_fields`].
    Record(Arc<RecordTy>),
    /// The type of an erroneous expression: it has been reported, so nothing that involves it is.
    Error,
}

/// A record type: `Linear[784][256]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordTy {
    /// The `struct`.
    pub def: crate::DefId,
    pub name: smol_str::SmolStr,
    /// One size for each of the `struct`'s size parameters, in order.
    pub sizes: Vec<Dim>,
}

/// A function type, as seen by a caller. Size variables in it are the callee's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FnTy {
    pub params: Vec<Ty>,
    pub ret: Ty,
}

/// A tensor's shape: a list of dimensions, or unknown rank (as `load` returns).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Shape {
    Ranked(Vec<Dim>),
    Unranked,
}

/// One extent of a shape.
///
/// `==` compares the written form too (it is what salsa compares to decide whether a result
/// changed); whether two sizes are the same size is [`Dim::equals`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dim {
    Known(i64),
    /// A size that involves variables; never a constant (that is [`Dim::Known`]).
    Expr(Arc<DimExpr>),
    Unknown,
}

/// A symbolic size: as written, and its normal form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DimExpr {
    written: SizeExpr<SizeVar>,
    normal: Poly,
}

impl DimExpr {
    /// The expression as written (or as built by a shape rule).
    pub fn written(&self) -> &SizeExpr<SizeVar> {
        &self.written
    }

    pub fn normal(&self) -> &Poly {
        &self.normal
    }
}

/// `dim = coefficient * var + rest`, for solving a dimension for one variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Linear {
    pub coefficient: Ratio,
    pub rest: Dim,
}

/// Why a dimension cannot be made to equal an extent by choosing one variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SolveError {
    /// The variable would be this non-integral or negative value.
    NoSize { value: Ratio },
    /// Arithmetic overflowed.
    Overflow,
}

impl Ty {
    pub fn tensor(dims: Vec<Dim>) -> Ty {
        Ty::Tensor(Shape::Ranked(dims))
    }

    pub fn known_tensor(dims: &[i64]) -> Ty {
        Ty::tensor(dims.iter().map(|&d| Dim::Known(d)).collect())
    }

    pub fn unranked() -> Ty {
        Ty::Tensor(Shape::Unranked)
    }

    pub fn is_error(&self) -> bool {
        matches!(self, Ty::Error)
    }

    pub fn is_tensor(&self) -> bool {
        matches!(self, Ty::Tensor(_))
    }

    pub fn record(&self) -> Option<&RecordTy> {
        match self {
            Ty::Record(record) => Some(record),
            _ => None,
        }
    }

    /// `int`, `float`, `char` or `bool`.
    pub fn is_scalar(&self) -> bool {
        matches!(self, Ty::Int | Ty::Float | Ty::Char | Ty::Bool)
    }

    /// `int` or `float`: what arithmetic accepts besides tensors.
    pub fn is_numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Float)
    }

    /// `float` or a tensor: what `var`, `backward` and `grad` accept.
    pub fn is_differentiable(&self) -> bool {
        matches!(self, Ty::Float | Ty::Tensor(_))
    }

    /// What a condition accepts: scalars, and tensors of rank 0.
    pub fn is_condition(&self) -> bool {
        match self {
            Ty::Int | Ty::Float | Ty::Char | Ty::Bool | Ty::Error => true,
            Ty::Tensor(Shape::Ranked(dims)) => dims.is_empty(),
            _ => false,
        }
    }

    pub fn shape(&self) -> Option<&Shape> {
        match self {
            Ty::Tensor(shape) => Some(shape),
            _ => None,
        }
    }

    pub fn rank(&self) -> Option<usize> {
        match self {
            Ty::Tensor(Shape::Ranked(dims)) => Some(dims.len()),
            Ty::Tensor(Shape::Unranked) => None,
            _ => Some(0),
        }
    }

    /// Whether a value of the type is one differentiable number, as `grad(f)` needs of `f`'s
    /// result: a `float`, or a tensor whose every extent is 1 (or whose shape is unknown, which
    /// is then checked at run time).
    pub fn is_one_element(&self) -> bool {
        match self {
            Ty::Float | Ty::Error | Ty::Tensor(Shape::Unranked) => true,
            Ty::Tensor(Shape::Ranked(dims)) => dims.iter().all(|dim| *dim == Dim::Known(1)),
            _ => false,
        }
    }
}

impl Shape {
    pub fn dims(&self) -> Option<&[Dim]> {
        match self {
            Shape::Ranked(dims) => Some(dims),
            Shape::Unranked => None,
        }
    }

    /// The number of elements when every extent is known.
    pub fn known_size(&self) -> Option<i64> {
        let dims = self.dims()?;
        dims.iter().try_fold(1i64, |acc, dim| match dim {
            Dim::Known(n) => acc.checked_mul(*n),
            _ => None,
        })
    }

    /// The number of elements as a size: the product of the extents.
    pub fn size(&self) -> Dim {
        match self.dims() {
            Some(dims) => Dim::product(dims),
            None => Dim::Unknown,
        }
    }
}

impl Dim {
    /// A size that is one variable.
    pub fn var(var: SizeVar) -> Dim {
        let normal = Poly::var(var.clone());
        Dim::Expr(Arc::new(DimExpr { written: SizeExpr::Var(var), normal }))
    }

    /// The size an expression denotes: [`Dim::Known`] when it is constant (which must then be a
    /// whole number of zero or more), else symbolic, keeping the expression as written.
    pub fn from_expr(written: SizeExpr<SizeVar>) -> Result<Dim, SizeError> {
        let normal = Poly::of_expr(&written)?;
        match normal.as_constant() {
            Some(value) => match value.as_int() {
                Some(n) if n < 0 => Err(SizeError::Negative(n)),
                Some(n) => Ok(Dim::Known(n)),
                None => Err(SizeError::Inexact { dividend: value.numer(), divisor: value.denom() }),
            },
            None => Ok(Dim::Expr(Arc::new(DimExpr { written, normal }))),
        }
    }

    /// The size of a polynomial, written out from its normal form.
    fn from_poly(normal: Poly) -> Result<Dim, SizeError> {
        match normal.as_constant() {
            Some(_) => Dim::from_expr(normal.to_expr()),
            None => Ok(Dim::Expr(Arc::new(DimExpr { written: normal.to_expr(), normal }))),
        }
    }

    pub fn known(&self) -> Option<i64> {
        match self {
            Dim::Known(n) => Some(*n),
            _ => None,
        }
    }

    /// The variable this size is, if it is exactly one.
    pub fn as_var(&self) -> Option<&SizeVar> {
        match self {
            Dim::Expr(expr) => match &expr.written {
                SizeExpr::Var(var) => Some(var),
                _ => None,
            },
            _ => None,
        }
    }

    /// The size as an expression; `None` when unknown.
    pub fn to_expr(&self) -> Option<SizeExpr<SizeVar>> {
        match self {
            Dim::Known(n) => Some(SizeExpr::Const(*n)),
            Dim::Expr(expr) => Some(expr.written.clone()),
            Dim::Unknown => None,
        }
    }

    fn normal(&self) -> Option<Poly> {
        match self {
            Dim::Known(n) => Some(Poly::constant(Ratio::int(*n))),
            Dim::Expr(expr) => Some(expr.normal.clone()),
            Dim::Unknown => None,
        }
    }

    /// The variables the size involves, sorted.
    pub fn vars(&self) -> Vec<SizeVar> {
        match self {
            Dim::Expr(expr) => expr.normal.vars(),
            _ => Vec::new(),
        }
    }

    /// Whether two sizes are the same: `Some(true)` when their normal forms agree,
    /// `Some(false)` when they differ by a constant (so no values of the variables make them
    /// equal), `None` when only the values can tell.
    pub fn equals(&self, other: &Dim) -> Option<bool> {
        match (self, other) {
            (Dim::Known(a), Dim::Known(b)) => Some(a == b),
            (Dim::Unknown, _) | (_, Dim::Unknown) => None,
            (Dim::Expr(a), Dim::Expr(b)) if Arc::ptr_eq(a, b) => Some(true),
            _ => {
                let difference = self.normal()?.sub(&other.normal()?)?;
                let constant = difference.as_constant()?;
                Some(constant.is_zero())
            }
        }
    }

    /// Whether the two are certainly different sizes.
    pub fn conflicts(&self, other: &Dim) -> bool {
        self.equals(other) == Some(false)
    }

    /// The dimension both are, where they must be equal: the known one, else the one that is
    /// known to be a size; two sizes the checker cannot compare give an unknown one.
    pub fn join(&self, other: &Dim) -> Dim {
        match (self, other) {
            (Dim::Known(_), _) => self.clone(),
            (_, Dim::Known(_)) => other.clone(),
            (Dim::Unknown, _) => other.clone(),
            (_, Dim::Unknown) => self.clone(),
            _ if self.equals(other) == Some(true) => self.clone(),
            _ => Dim::Unknown,
        }
    }

    /// NumPy's broadcasting of two extents as far as the types know them, or `None` when they
    /// cannot broadcast: a known 1 takes the other, a known extent wins over a symbolic or an
    /// unknown one (at run time the other must be 1 or equal), and equal sizes agree. Only two
    /// different known extents conflict: a symbolic size may turn out to be 1.
    pub fn broadcast(&self, other: &Dim) -> Option<Dim> {
        match (self, other) {
            (Dim::Known(x), Dim::Known(y)) if x == y => Some(self.clone()),
            (Dim::Known(1), _) => Some(other.clone()),
            (_, Dim::Known(1)) => Some(self.clone()),
            (Dim::Known(_), Dim::Known(_)) => None,
            (Dim::Known(_), _) => Some(self.clone()),
            (_, Dim::Known(_)) => Some(other.clone()),
            _ if self.equals(other) == Some(true) => Some(self.clone()),
            _ => Some(Dim::Unknown),
        }
    }

    fn combine(&self, op: SizeOp, other: &Dim) -> Dim {
        let (Some(a), Some(b)) = (self.to_expr(), other.to_expr()) else { return Dim::Unknown };
        Dim::from_expr(SizeExpr::binary(op, a, b)).unwrap_or(Dim::Unknown)
    }

    /// `self + other`, as a shape rule builds it (`concat` of `n` and `m` rows is `n + m`).
    pub fn add(&self, other: &Dim) -> Dim {
        match (self, other) {
            (Dim::Known(a), Dim::Known(b)) => a.checked_add(*b).map_or(Dim::Unknown, Dim::Known),
            (Dim::Known(0), _) => other.clone(),
            (_, Dim::Known(0)) => self.clone(),
            _ => self.combine(SizeOp::Add, other),
        }
    }

    /// `self - other`; unknown when it is certainly negative.
    pub fn sub(&self, other: &Dim) -> Dim {
        match other {
            Dim::Known(0) => self.clone(),
            _ => self.combine(SizeOp::Sub, other),
        }
    }

    /// `self * other`.
    pub fn mul(&self, other: &Dim) -> Dim {
        match (self, other) {
            (Dim::Known(a), Dim::Known(b)) => a.checked_mul(*b).map_or(Dim::Unknown, Dim::Known),
            (Dim::Known(1), _) => other.clone(),
            (_, Dim::Known(1)) => self.clone(),
            _ => self.combine(SizeOp::Mul, other),
        }
    }

    /// `self / divisor` rounded down, for a positive constant `divisor`: written `(e - e % c) / c`,
    /// an exact division, so that it has a normal form (a window count of a strided convolution).
    pub fn div_floor(&self, divisor: i64) -> Dim {
        match (self, divisor) {
            (_, d) if d <= 0 => Dim::Unknown,
            (_, 1) => self.clone(),
            (Dim::Known(n), d) => Dim::Known(n.div_euclid(d)),
            (Dim::Unknown, _) => Dim::Unknown,
            (Dim::Expr(expr), d) => {
                let e = expr.written.clone();
                let rem = SizeExpr::binary(SizeOp::Rem, e.clone(), SizeExpr::Const(d));
                let whole = SizeExpr::binary(SizeOp::Sub, e, rem);
                Dim::from_expr(SizeExpr::binary(SizeOp::Div, whole, SizeExpr::Const(d)))
                    .unwrap_or(Dim::Unknown)
            }
        }
    }

    /// `self / divisor` for a positive constant `divisor` that divides it (the parts of a
    /// `split`): a constant when `self` is one, else the exact quotient as a size.
    pub fn div_exact(&self, divisor: i64) -> Dim {
        match (self, divisor) {
            (_, d) if d <= 0 => Dim::Unknown,
            (_, 1) => self.clone(),
            (Dim::Known(n), d) if n % d == 0 => Dim::Known(n / d),
            (Dim::Known(_), _) | (Dim::Unknown, _) => Dim::Unknown,
            // Written from its normal form: `2*n` in halves is `n`.
            (Dim::Expr(_), d) => match self.combine(SizeOp::Div, &Dim::Known(d)) {
                Dim::Expr(quotient) => {
                    Dim::from_poly(quotient.normal.clone()).unwrap_or(Dim::Unknown)
                }
                other => other,
            },
        }
    }

    /// The product of the extents: how many elements a shape has.
    pub fn product(dims: &[Dim]) -> Dim {
        dims.iter().fold(Dim::Known(1), |acc, dim| acc.mul(dim))
    }

    /// Whether every value of the size is one when its variables are sizes: `n + 1` is, and
    /// `n - 1` or `n / 2` need a check when they are first evaluated.
    pub fn is_always_valid(&self) -> bool {
        match self {
            Dim::Known(n) => *n >= 0,
            Dim::Expr(expr) => expr.written.is_always_valid(),
            Dim::Unknown => true,
        }
    }

    /// The size with variables replaced by what `value` gives them (a callee's shape variables
    /// by what a call bound them to); a variable without a value makes the size unknown. The
    /// written form is kept when variables are renamed, and written from the normal form
    /// otherwise (`n - q + 1` with `n = 8`, `q = 3` is `6`).
    pub fn substitute(
        &self,
        value: &mut dyn FnMut(&SizeVar) -> Option<Dim>,
    ) -> Result<Dim, SizeError> {
        let Dim::Expr(expr) = self else { return Ok(self.clone()) };
        let mut unknown = false;
        let mut renamed_only = true;
        let written = expr.written.map(&mut |var| match value(var) {
            Some(dim) => {
                renamed_only &= dim.as_var().is_some();
                dim.to_expr().unwrap_or_else(|| {
                    unknown = true;
                    SizeExpr::Const(0)
                })
            }
            None => {
                unknown = true;
                SizeExpr::Const(0)
            }
        });
        if unknown {
            return Ok(Dim::Unknown);
        }
        let dim = Dim::from_expr(written)?;
        match dim {
            Dim::Expr(substituted) if !renamed_only => Dim::from_poly(substituted.normal.clone()),
            other => Ok(other),
        }
    }

    /// The size as `coefficient * var + rest`, when `var` occurs in it linearly.
    pub fn linear_in(&self, var: &SizeVar) -> Option<Linear> {
        let Dim::Expr(expr) = self else { return None };
        let (coefficient, rest) = expr.normal.linear_in(var)?;
        let rest = Dim::from_poly(rest).ok()?;
        Some(Linear { coefficient, rest })
    }

    /// The value `var` must have for the size to equal `extent`, when `var` occurs linearly
    /// and `extent` is a size: `2*m` equals 8 for `m = 4`, and no size `m` makes it 7.
    pub fn solve(&self, var: &SizeVar, extent: &Dim) -> Option<Result<Dim, SolveError>> {
        let linear = self.linear_in(var)?;
        let (Some(rest), Some(target)) = (linear.rest.normal(), extent.normal()) else {
            return None;
        };
        let solved = target.sub(&rest).and_then(|p| {
            p.scale(Ratio::new(linear.coefficient.denom(), linear.coefficient.numer())?)
        });
        let Some(solved) = solved else { return Some(Err(SolveError::Overflow)) };
        if let Some(value) = solved.as_constant()
            && (value.as_int().is_none() || value.numer() < 0)
        {
            return Some(Err(SolveError::NoSize { value }));
        }
        Some(Dim::from_poly(solved).map_err(|_| SolveError::Overflow))
    }
}

/// One step of checking declared extents against the extents of values, in the order the
/// steps run (see [`binding_plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindStep {
    /// Which extent, counting through every shape in order.
    pub index: usize,
    /// The variable the extent determines (`var = (extent - rest) / coefficient`), or `None`
    /// when the extent is checked against a size whose variables are bound by then.
    pub bind: Option<(SizeVar, Linear)>,
}

/// How the extents `dims` bind the variables that `fresh` says are theirs to bind (a function's
/// shape variables, a declaration's new ones), as a check that runs in order: each extent binds
/// the one variable it involves that is not yet bound, when it involves it linearly, or is
/// checked once its variables are bound; extents whose variables later extents bind are checked
/// (or bind) after the others. Also returns the variables that no extent determines.
pub fn binding_plan(
    dims: &[Dim],
    fresh: &dyn Fn(&SizeVar) -> bool,
) -> (Vec<BindStep>, Vec<SizeVar>) {
    let mut bound: Vec<SizeVar> = Vec::new();
    let mut steps = Vec::new();
    let mut waiting: Vec<usize> = (0..dims.len()).collect();
    loop {
        let mut progress = false;
        let mut still_waiting = Vec::new();
        for index in waiting {
            let dim = &dims[index];
            let unbound: Vec<SizeVar> =
                dim.vars().into_iter().filter(|v| fresh(v) && !bound.contains(v)).collect();
            match unbound.as_slice() {
                [] => steps.push(BindStep { index, bind: None }),
                [var] => match dim.linear_in(var) {
                    Some(linear) => {
                        bound.push(var.clone());
                        steps.push(BindStep { index, bind: Some((var.clone(), linear)) });
                    }
                    None => {
                        still_waiting.push(index);
                        continue;
                    }
                },
                _ => {
                    still_waiting.push(index);
                    continue;
                }
            }
            progress = true;
        }
        waiting = still_waiting;
        if waiting.is_empty() || !progress {
            break;
        }
    }
    let mut undetermined: Vec<SizeVar> = waiting
        .iter()
        .flat_map(|&i| dims[i].vars())
        .filter(|v| fresh(v) && !bound.contains(v))
        .collect();
    undetermined.sort();
    undetermined.dedup();
    (steps, undetermined)
}

/// Whether `value` may be stored where `declared` is expected: equal ranks, no conflicting extent.
pub fn shapes_compatible(declared: &Shape, value: &Shape) -> bool {
    match (declared, value) {
        (Shape::Ranked(a), Shape::Ranked(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| !x.conflicts(y))
        }
        _ => true,
    }
}

/// Whether the checker proved that `value` has the shape `declared` demands, so that no run-time
/// check is needed: equal ranks and every pair of extents equal by normal form.
pub fn shapes_proven_equal(declared: &Shape, value: &Shape) -> bool {
    match (declared, value) {
        (Shape::Unranked, _) => true,
        (Shape::Ranked(_), Shape::Unranked) => false,
        (Shape::Ranked(a), Shape::Ranked(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.equals(y) == Some(true))
        }
    }
}

/// NumPy broadcasting of two shapes: aligned at the right, an extent of 1 stretches. `Err` holds
/// the positions (from the left of each shape) of the first pair that cannot broadcast.
pub fn broadcast(a: &Shape, b: &Shape) -> Result<Shape, (usize, usize)> {
    let (Shape::Ranked(a), Shape::Ranked(b)) = (a, b) else { return Ok(Shape::Unranked) };
    let rank = a.len().max(b.len());
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let x = (i + a.len()).checked_sub(rank).map(|k| (k, &a[k]));
        let y = (i + b.len()).checked_sub(rank).map(|k| (k, &b[k]));
        let dim = match (x, y) {
            (Some((_, x)), None) => x.clone(),
            (None, Some((_, y))) => y.clone(),
            (Some((i, x)), Some((j, y))) => x.broadcast(y).ok_or((i, j))?,
            (None, None) => Dim::Unknown,
        };
        out.push(dim);
    }
    Ok(Shape::Ranked(out))
}

/// Why `a @ b` has no shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatmulError {
    /// One operand has rank 0.
    RankZero,
    /// The contracted extents differ.
    Inner(Dim, Dim),
    /// The batch dimensions do not broadcast.
    Batch,
}

/// The shape of `a @ b` under NumPy's `matmul` rules; the inner extents must be the same size.
pub fn matmul(a: &Shape, b: &Shape) -> Result<Shape, MatmulError> {
    let (Shape::Ranked(a), Shape::Ranked(b)) = (a, b) else { return Ok(Shape::Unranked) };
    if a.is_empty() || b.is_empty() {
        return Err(MatmulError::RankZero);
    }
    let inner_a = &a[a.len() - 1];
    let inner_b = if b.len() == 1 { &b[0] } else { &b[b.len() - 2] };
    if inner_a.conflicts(inner_b) {
        return Err(MatmulError::Inner(inner_a.clone(), inner_b.clone()));
    }
    let rows: Vec<Dim> = if a.len() >= 2 { vec![a[a.len() - 2].clone()] } else { Vec::new() };
    let cols: Vec<Dim> = if b.len() >= 2 { vec![b[b.len() - 1].clone()] } else { Vec::new() };
    let batch_a = Shape::Ranked(a[..a.len().saturating_sub(2)].to_vec());
    let batch_b = Shape::Ranked(b[..b.len().saturating_sub(2)].to_vec());
    let Shape::Ranked(mut dims) = broadcast(&batch_a, &batch_b).map_err(|_| MatmulError::Batch)?
    else {
        return Ok(Shape::Unranked);
    };
    dims.extend(rows);
    dims.extend(cols);
    Ok(Shape::Ranked(dims))
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Known(n) => write!(f, "{n}"),
            Dim::Expr(expr) => write!(f, "{}", expr.written),
            Dim::Unknown => f.write_str("?"),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::Ranked(dims) if dims.is_empty() => f.write_str("[]"),
            Shape::Ranked(dims) => dims.iter().try_for_each(|dim| write!(f, "[{dim}]")),
            Shape::Unranked => f.write_str("[...]"),
        }
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Int => f.write_str("int"),
            Ty::Float => f.write_str("float"),
            Ty::Char => f.write_str("char"),
            Ty::Bool => f.write_str("bool"),
            Ty::Void => f.write_str("void"),
            Ty::Str => f.write_str("string"),
            Ty::Tensor(shape) => write!(f, "Tensor{shape}"),
            Ty::Fn(fn_ty) => {
                f.write_str("function(")?;
                for (i, param) in fn_ty.params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{param}")?;
                }
                write!(f, ") -> {}", fn_ty.ret)
            }
            Ty::Tuple(elements) => {
                f.write_str("(")?;
                for (i, element) in elements.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{element}")?;
                }
                f.write_str(")")
            }
            Ty::Record(record) => {
                f.write_str(&record.name)?;
                record.sizes.iter().try_for_each(|size| write!(f, "[{size}]"))
            }
            Ty::Error => f.write_str("{unknown}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use la_arena::{Idx, RawIdx};

    use super::*;
    use crate::{Database, DefKind, db::DefId};

    fn s(dims: &[i64]) -> Shape {
        Shape::Ranked(dims.iter().map(|&d| Dim::Known(d)).collect())
    }

    /// Size variables `names[i]` of one definition, and a parser of sizes over them, written
    /// with single-letter variables and the usual precedence.
    struct Vars {
        vars: Vec<SizeVar>,
    }

    impl Vars {
        fn new(db: &Database, names: &[&str]) -> Vars {
            let file = crate::SourceFile::new(db, "/v.nb".into(), Arc::from(""), syntax::parse(""));
            let def = DefId::new(db, file, DefKind::TopLevel, 0);
            let vars = names
                .iter()
                .enumerate()
                .map(|(i, name)| SizeVar {
                    def,
                    local: Idx::from_raw(RawIdx::from_u32(i as u32)),
                    name: (*name).into(),
                })
                .collect();
            Vars { vars }
        }

        fn var(&self, name: &str) -> SizeVar {
            self.vars.iter().find(|v| v.name == name).cloned().expect("a declared variable")
        }

        fn dim(&self, text: &str) -> Dim {
            let tokens: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
            let mut at = 0;
            let expr = self.sum(&tokens, &mut at);
            assert_eq!(at, tokens.len(), "trailing input in {text}");
            Dim::from_expr(expr).expect("a valid size")
        }

        fn sum(&self, t: &[char], at: &mut usize) -> SizeExpr<SizeVar> {
            let mut lhs = self.product(t, at);
            while let Some(&c) = t.get(*at).filter(|c| matches!(c, '+' | '-')) {
                *at += 1;
                let op = if c == '+' { SizeOp::Add } else { SizeOp::Sub };
                lhs = SizeExpr::binary(op, lhs, self.product(t, at));
            }
            lhs
        }

        fn product(&self, t: &[char], at: &mut usize) -> SizeExpr<SizeVar> {
            let mut lhs = self.atom(t, at);
            while let Some(&c) = t.get(*at).filter(|c| matches!(c, '*' | '/' | '%')) {
                *at += 1;
                let op = match c {
                    '*' => SizeOp::Mul,
                    '/' => SizeOp::Div,
                    _ => SizeOp::Rem,
                };
                lhs = SizeExpr::binary(op, lhs, self.atom(t, at));
            }
            lhs
        }

        fn atom(&self, t: &[char], at: &mut usize) -> SizeExpr<SizeVar> {
            let c = t[*at];
            *at += 1;
            match c {
                '(' => {
                    let inner = self.sum(t, at);
                    *at += 1;
                    inner
                }
                '-' => SizeExpr::Neg(Box::new(self.atom(t, at))),
                c if c.is_ascii_digit() => {
                    let mut value = c.to_digit(10).map_or(0, i64::from);
                    while let Some(d) = t.get(*at).and_then(|c| c.to_digit(10)) {
                        value = value * 10 + i64::from(d);
                        *at += 1;
                    }
                    SizeExpr::Const(value)
                }
                c => SizeExpr::Var(self.var(&c.to_string())),
            }
        }
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast(&s(&[2, 2]), &s(&[2, 1])), Ok(s(&[2, 2])));
        assert_eq!(broadcast(&s(&[3]), &s(&[2, 3])), Ok(s(&[2, 3])));
        assert_eq!(broadcast(&s(&[2, 3]), &s(&[4, 2])), Err((0, 0)));
        let db = Database::default();
        let v = Vars::new(&db, &["n"]);
        let n = Shape::Ranked(vec![v.dim("n"), Dim::Known(1)]);
        assert_eq!(broadcast(&n, &s(&[3])).map(|s| s.to_string()), Ok("[n][3]".to_owned()));
        let sum = Shape::Ranked(vec![v.dim("n + n")]);
        let twice = Shape::Ranked(vec![v.dim("2*n")]);
        assert_eq!(broadcast(&sum, &twice).map(|s| s.to_string()), Ok("[n + n]".to_owned()));
    }

    #[test]
    fn matmul_follows_numpy() {
        assert_eq!(matmul(&s(&[2, 3]), &s(&[3, 4])), Ok(s(&[2, 4])));
        assert_eq!(matmul(&s(&[2]), &s(&[2, 2])), Ok(s(&[2])));
        assert_eq!(matmul(&s(&[2, 2]), &s(&[2])), Ok(s(&[2])));
        assert_eq!(matmul(&s(&[5, 2, 3]), &s(&[3, 4])), Ok(s(&[5, 2, 4])));
        assert_eq!(
            matmul(&s(&[2, 3]), &s(&[4, 2])),
            Err(MatmulError::Inner(Dim::Known(3), Dim::Known(4)))
        );
        assert_eq!(matmul(&s(&[]), &s(&[2])), Err(MatmulError::RankZero));
        let db = Database::default();
        let v = Vars::new(&db, &["n", "k"]);
        let a = Shape::Ranked(vec![v.dim("n"), v.dim("k + 1")]);
        let b = Shape::Ranked(vec![v.dim("1 + k"), Dim::Known(2)]);
        assert_eq!(matmul(&a, &b).map(|s| s.to_string()), Ok("[n][2]".to_owned()));
        let c = Shape::Ranked(vec![v.dim("k"), Dim::Known(2)]);
        assert!(matches!(matmul(&a, &c), Err(MatmulError::Inner(..))));
    }

    #[test]
    fn sizes_compare_by_normal_form() {
        let db = Database::default();
        let v = Vars::new(&db, &["n", "m", "q"]);
        let same = |a: &str, b: &str| v.dim(a).equals(&v.dim(b));
        assert_eq!(same("n + n", "2*n"), Some(true));
        assert_eq!(same("(n + 1)*2", "2*n + 2"), Some(true));
        assert_eq!(same("n / 2 * 2", "n"), Some(true));
        assert_eq!(same("(n - q + 1) + q", "n + 1"), Some(true));
        assert_eq!(same("n*m", "m*n"), Some(true));
        assert_eq!(same("(n + m)*(n - m)", "n*n - m*m"), Some(true));
        assert_eq!(same("n % 3 + 1", "1 + n % 3"), Some(true));
        assert_eq!(same("n", "n + 1"), Some(false));
        assert_eq!(same("n / 2", "(n + 1) / 2"), Some(false));
        assert_eq!(same("n", "m"), None);
        assert_eq!(same("2*n", "n"), None);
        assert_eq!(same("n % 2", "n % 3"), None);
        assert_eq!(v.dim("6 / 2 + 1"), Dim::Known(4));
        assert_eq!(v.dim("n - n + 3"), Dim::Known(3));
        assert_eq!(
            Dim::from_expr(SizeExpr::binary(SizeOp::Div, SizeExpr::Const(7), SizeExpr::Const(2))),
            Err(SizeError::Inexact { dividend: 7, divisor: 2 })
        );
        assert_eq!(
            Dim::from_expr(SizeExpr::binary(SizeOp::Sub, SizeExpr::Const(1), SizeExpr::Const(3))),
            Err(SizeError::Negative(-2))
        );
        let n = SizeExpr::Var(v.var("n"));
        let by_m = SizeExpr::binary(SizeOp::Div, n, SizeExpr::Var(v.var("m")));
        assert_eq!(Dim::from_expr(by_m), Err(SizeError::NonConstantDivisor));
    }

    #[test]
    fn sizes_display_as_written() {
        let db = Database::default();
        let v = Vars::new(&db, &["n", "m", "q"]);
        let shown = |text: &str| v.dim(text).to_string();
        assert_eq!(shown("n - q + 1"), "n - q + 1");
        assert_eq!(shown("2 * n + 1"), "2*n + 1");
        assert_eq!(shown("(n + 1) * 2"), "(n + 1)*2");
        assert_eq!(shown("n - (q - 1)"), "n - (q - 1)");
        assert_eq!(shown("n + (q + 1)"), "n + q + 1");
        assert_eq!(shown("(n + 1) / 2"), "(n + 1) / 2");
        assert_eq!(shown("n / (2 * 1)"), "n / (2*1)");
        assert_eq!(shown("-(n - 2) + 2*n"), "-(n - 2) + 2*n");
        assert_eq!(shown("n % 3"), "n % 3");
    }

    #[test]
    fn substitution_and_solving() {
        let db = Database::default();
        let v = Vars::new(&db, &["n", "m", "q", "a"]);
        fn bind(pairs: Vec<(&'static str, Dim)>) -> impl FnMut(&SizeVar) -> Option<Dim> {
            move |var| pairs.iter().find(|(n, _)| *n == var.name).map(|(_, d)| d.clone())
        }
        let conv = v.dim("n - q + 1");
        let known = conv.substitute(&mut bind(vec![("n", Dim::Known(8)), ("q", Dim::Known(3))]));
        assert_eq!(known, Ok(Dim::Known(6)));
        let renamed = conv.substitute(&mut bind(vec![("n", v.dim("a")), ("q", v.dim("m"))]));
        assert_eq!(renamed.map(|d| d.to_string()), Ok("a - m + 1".to_owned()));
        let normal = conv.substitute(&mut bind(vec![("n", v.dim("a + 1")), ("q", Dim::Known(3))]));
        assert_eq!(normal.map(|d| d.to_string()), Ok("a - 1".to_owned()));
        let unbound = conv.substitute(&mut bind(vec![("n", Dim::Known(8))]));
        assert_eq!(unbound, Ok(Dim::Unknown));
        let short = conv.substitute(&mut bind(vec![("n", Dim::Known(2)), ("q", Dim::Known(4))]));
        assert_eq!(short, Err(SizeError::Negative(-1)));

        let m = v.var("m");
        let twice = v.dim("2*m");
        assert_eq!(twice.solve(&m, &Dim::Known(8)), Some(Ok(Dim::Known(4))));
        assert_eq!(
            twice.solve(&m, &Dim::Known(7)),
            Some(Err(SolveError::NoSize { value: Ratio::new(7, 2).expect("a ratio") }))
        );
        let half = twice.solve(&m, &v.dim("a")).map(|r| r.map(|d| d.to_string()));
        assert_eq!(half, Some(Ok("a / 2".to_owned())));
        assert_eq!(v.dim("m + 1").solve(&m, &Dim::Known(0)).map(|r| r.is_err()), Some(true));
        assert_eq!(v.dim("m*m").solve(&m, &Dim::Known(4)), None);
        assert_eq!(v.dim("n*m").solve(&m, &Dim::Known(4)), None);
        let linear =
            v.dim("3*m + n - 1").linear_in(&m).map(|l| (l.coefficient, l.rest.to_string()));
        assert_eq!(linear, Some((Ratio::int(3), "n - 1".to_owned())));
    }

    #[test]
    fn products_and_sums_for_shape_rules() {
        let db = Database::default();
        let v = Vars::new(&db, &["n", "m"]);
        let shape = Shape::Ranked(vec![v.dim("n"), v.dim("m"), Dim::Known(2)]);
        assert_eq!(shape.size().to_string(), "n*m*2");
        assert_eq!(shape.size().equals(&v.dim("2*m*n")), Some(true));
        assert_eq!(v.dim("n").add(&v.dim("m")).to_string(), "n + m");
        assert_eq!(Dim::Known(2).add(&Dim::Known(3)), Dim::Known(5));
        assert_eq!(v.dim("n").add(&Dim::Unknown), Dim::Unknown);
        assert!(v.dim("n + 1").is_always_valid());
        assert!(!v.dim("n - 1").is_always_valid());
        assert!(!v.dim("n / 2").is_always_valid());
    }
}
