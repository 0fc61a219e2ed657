//! Types and symbolic shapes, and the shape algebra of section 4: NumPy broadcasting and the
//! rules of `@`.
//!
//! A dimension is a known extent, a shape variable (named; equal only to itself) or unknown.
//! Only two known, different extents are a static error; anything involving a variable or an
//! unknown is left for the run-time check.

use std::fmt;

use smol_str::SmolStr;

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
    /// The type of an erroneous expression: it has been reported, so nothing that involves it is.
    Error,
}

/// A function type, as seen by a caller. Dimension names in it are the callee's shape variables.
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

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Dim {
    Known(i64),
    /// A shape variable, by name.
    Var(SmolStr),
    Unknown,
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
}

impl Dim {
    /// Whether two dimensions are certainly different: both known and unequal.
    pub fn conflicts(&self, other: &Dim) -> bool {
        matches!((self, other), (Dim::Known(a), Dim::Known(b)) if a != b)
    }

    /// The dimension both are, as far as is known: the known one wins over a variable.
    pub fn join(&self, other: &Dim) -> Dim {
        match (self, other) {
            (Dim::Known(a), _) => Dim::Known(*a),
            (_, Dim::Known(b)) => Dim::Known(*b),
            (Dim::Var(a), Dim::Var(b)) if a == b => Dim::Var(a.clone()),
            (Dim::Var(a), Dim::Unknown) | (Dim::Unknown, Dim::Var(a)) => Dim::Var(a.clone()),
            _ => Dim::Unknown,
        }
    }
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
            (Some((_, x)), Some((_, y))) if x == y => x.clone(),
            (Some((_, Dim::Known(1))), Some((_, y))) => y.clone(),
            (Some((_, x)), Some((_, Dim::Known(1)))) => x.clone(),
            (Some((i, x)), Some((j, y))) if x.conflicts(y) => return Err((i, j)),
            (Some((_, Dim::Known(n))), Some(_)) | (Some(_), Some((_, Dim::Known(n)))) => {
                Dim::Known(*n)
            }
            _ => Dim::Unknown,
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
    Inner(i64, i64),
    /// The batch dimensions do not broadcast.
    Batch,
}

/// The shape of `a @ b` under NumPy's `matmul` rules.
pub fn matmul(a: &Shape, b: &Shape) -> Result<Shape, MatmulError> {
    let (Shape::Ranked(a), Shape::Ranked(b)) = (a, b) else { return Ok(Shape::Unranked) };
    if a.is_empty() || b.is_empty() {
        return Err(MatmulError::RankZero);
    }
    let inner_a = &a[a.len() - 1];
    let inner_b = if b.len() == 1 { &b[0] } else { &b[b.len() - 2] };
    if let (Dim::Known(x), Dim::Known(y)) = (inner_a, inner_b)
        && x != y
    {
        return Err(MatmulError::Inner(*x, *y));
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
            Dim::Var(name) => f.write_str(name),
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
            Ty::Error => f.write_str("{unknown}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(dims: &[i64]) -> Shape {
        Shape::Ranked(dims.iter().map(|&d| Dim::Known(d)).collect())
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast(&s(&[2, 2]), &s(&[2, 1])), Ok(s(&[2, 2])));
        assert_eq!(broadcast(&s(&[3]), &s(&[2, 3])), Ok(s(&[2, 3])));
        assert_eq!(broadcast(&s(&[2, 3]), &s(&[4, 2])), Err((0, 0)));
        let n = Shape::Ranked(vec![Dim::Var("n".into()), Dim::Known(1)]);
        assert_eq!(broadcast(&n, &s(&[3])).map(|s| s.to_string()), Ok("[n][3]".to_owned()));
    }

    #[test]
    fn matmul_follows_numpy() {
        assert_eq!(matmul(&s(&[2, 3]), &s(&[3, 4])), Ok(s(&[2, 4])));
        assert_eq!(matmul(&s(&[2]), &s(&[2, 2])), Ok(s(&[2])));
        assert_eq!(matmul(&s(&[2, 2]), &s(&[2])), Ok(s(&[2])));
        assert_eq!(matmul(&s(&[5, 2, 3]), &s(&[3, 4])), Ok(s(&[5, 2, 4])));
        assert_eq!(matmul(&s(&[2, 3]), &s(&[4, 2])), Err(MatmulError::Inner(3, 4)));
        assert_eq!(matmul(&s(&[]), &s(&[2])), Err(MatmulError::RankZero));
    }
}
