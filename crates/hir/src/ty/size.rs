//! Size expressions and their normal form.
//!
//! A dimension is written as an integer expression over literals and variables under `+`, `-`,
//! `*`, and `/` and `%` by a constant ([`SizeExpr`]). Two sizes are compared by a polynomial
//! normal form over their variables with rational coefficients ([`Poly`]): exact division by a
//! constant scales the coefficients, and `e % c` is an atom of its own. So `n + n` and `2*n`
//! agree, as do `(n + 1)*2` and `2*n + 2`, and `n / 2 * 2` and `n` (the run-time check of a
//! declaration refuses an `n` that `/ 2` does not divide).
//!
//! The tree keeps what was written, for messages; the normal form decides. Both live in
//! [`super::Dim`], which is what the rest of the checker uses.

use std::{cmp::Ordering, collections::BTreeMap, fmt};

use salsa::plumbing::AsId;
use smol_str::SmolStr;

use crate::{DefId, body::LocalId};

/// A variable a size names: a shape variable, or an `int` whose value is fixed where the size is
/// used, as a local of some definition's body. The name is for messages.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SizeVar {
    pub def: DefId,
    pub local: LocalId,
    pub name: SmolStr,
}

impl Ord for SizeVar {
    /// Declaration order first, so that a normal form reads in the order the names were bound.
    fn cmp(&self, other: &SizeVar) -> Ordering {
        (self.local, self.def.as_id(), &self.name).cmp(&(
            other.local,
            other.def.as_id(),
            &other.name,
        ))
    }
}

impl PartialOrd for SizeVar {
    fn partial_cmp(&self, other: &SizeVar) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for SizeVar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// An operator of a size expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SizeOp {
    Add,
    Sub,
    Mul,
    /// Exact division: a remainder is an error, not truncated.
    Div,
    Rem,
}

impl SizeOp {
    fn symbol(self) -> &'static str {
        match self {
            SizeOp::Add => " + ",
            SizeOp::Sub => " - ",
            SizeOp::Mul => "*",
            SizeOp::Div => " / ",
            SizeOp::Rem => " % ",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            SizeOp::Add | SizeOp::Sub => 1,
            SizeOp::Mul | SizeOp::Div | SizeOp::Rem => 2,
        }
    }
}

/// A size as written, over leaves `L`: the checker's [`SizeVar`]s, or the places an engine reads
/// a variable's value from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SizeExpr<L> {
    Const(i64),
    Var(L),
    Neg(Box<SizeExpr<L>>),
    Binary(SizeOp, Box<SizeExpr<L>>, Box<SizeExpr<L>>),
}

/// Why a size has no value, or no normal form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeError {
    /// `dividend / divisor` leaves a remainder.
    Inexact {
        dividend: i64,
        divisor: i64,
    },
    DivisionByZero,
    /// A divisor or modulus that is not a constant.
    NonConstantDivisor,
    /// The value is negative.
    Negative(i64),
    /// An intermediate value does not fit in 64 bits.
    Overflow,
    /// A variable has no value.
    Unbound,
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeError::Inexact { dividend, divisor } => {
                write!(f, "{dividend} / {divisor} is not an integer")
            }
            SizeError::DivisionByZero => f.write_str("it divides by zero"),
            SizeError::NonConstantDivisor => {
                f.write_str("it divides by a size that is not a constant")
            }
            SizeError::Negative(value) => write!(f, "it is negative ({value})"),
            SizeError::Overflow => f.write_str("it does not fit in a 64-bit int"),
            SizeError::Unbound => f.write_str("a variable in it has no value"),
        }
    }
}

impl<L> SizeExpr<L> {
    pub fn binary(op: SizeOp, lhs: SizeExpr<L>, rhs: SizeExpr<L>) -> SizeExpr<L> {
        SizeExpr::Binary(op, Box::new(lhs), Box::new(rhs))
    }

    /// The same expression with each leaf replaced by an expression.
    pub fn map<M>(&self, leaf: &mut impl FnMut(&L) -> SizeExpr<M>) -> SizeExpr<M> {
        match self {
            SizeExpr::Const(value) => SizeExpr::Const(*value),
            SizeExpr::Var(var) => leaf(var),
            SizeExpr::Neg(inner) => SizeExpr::Neg(Box::new(inner.map(leaf))),
            SizeExpr::Binary(op, lhs, rhs) => SizeExpr::binary(*op, lhs.map(leaf), rhs.map(leaf)),
        }
    }

    /// The leaves, left to right.
    pub fn leaves(&self) -> Vec<&L> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(expr) = stack.pop() {
            match expr {
                SizeExpr::Const(_) => {}
                SizeExpr::Var(var) => out.push(var),
                SizeExpr::Neg(inner) => stack.push(inner),
                SizeExpr::Binary(_, lhs, rhs) => {
                    stack.push(rhs);
                    stack.push(lhs);
                }
            }
        }
        out
    }

    /// Whether every value of the expression is a size when its variables are: no subtraction,
    /// negation, negative constant or division that could leave a remainder.
    pub fn is_always_valid(&self) -> bool {
        match self {
            SizeExpr::Const(value) => *value >= 0,
            SizeExpr::Var(_) => true,
            SizeExpr::Neg(_) => false,
            SizeExpr::Binary(SizeOp::Add | SizeOp::Mul, lhs, rhs) => {
                lhs.is_always_valid() && rhs.is_always_valid()
            }
            SizeExpr::Binary(SizeOp::Rem, lhs, rhs) => {
                lhs.is_always_valid() && matches!(**rhs, SizeExpr::Const(c) if c > 0)
            }
            SizeExpr::Binary(SizeOp::Sub | SizeOp::Div, ..) => false,
        }
    }

    /// The value, given the values of the leaves: C's integer arithmetic, except that a division
    /// must be exact and nothing may overflow. The sign of the result is the caller's concern.
    pub fn eval(&self, value: &mut impl FnMut(&L) -> Option<i64>) -> Result<i64, SizeError> {
        match self {
            SizeExpr::Const(c) => Ok(*c),
            SizeExpr::Var(var) => value(var).ok_or(SizeError::Unbound),
            SizeExpr::Neg(inner) => inner.eval(value)?.checked_neg().ok_or(SizeError::Overflow),
            SizeExpr::Binary(op, lhs, rhs) => {
                let a = lhs.eval(value)?;
                let b = rhs.eval(value)?;
                match op {
                    SizeOp::Add => a.checked_add(b).ok_or(SizeError::Overflow),
                    SizeOp::Sub => a.checked_sub(b).ok_or(SizeError::Overflow),
                    SizeOp::Mul => a.checked_mul(b).ok_or(SizeError::Overflow),
                    SizeOp::Div if b == 0 => Err(SizeError::DivisionByZero),
                    SizeOp::Div if a.checked_rem(b) != Some(0) => {
                        Err(SizeError::Inexact { dividend: a, divisor: b })
                    }
                    SizeOp::Div => a.checked_div(b).ok_or(SizeError::Overflow),
                    SizeOp::Rem if b == 0 => Err(SizeError::DivisionByZero),
                    SizeOp::Rem => a.checked_rem(b).ok_or(SizeError::Overflow),
                }
            }
        }
    }

    fn precedence(&self) -> u8 {
        match self {
            SizeExpr::Const(c) if *c < 0 => 3,
            SizeExpr::Const(_) | SizeExpr::Var(_) => 4,
            SizeExpr::Neg(_) => 3,
            SizeExpr::Binary(op, ..) => op.precedence(),
        }
    }
}

impl<L: fmt::Display> fmt::Display for SizeExpr<L> {
    /// Infix, with the parentheses precedence needs: `2*n + 1`, `n - (q - 1)`, `(n + 1) / 2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wrapped = |f: &mut fmt::Formatter<'_>, expr: &SizeExpr<L>, parens: bool| {
            if parens { write!(f, "({expr})") } else { write!(f, "{expr}") }
        };
        match self {
            SizeExpr::Const(c) => write!(f, "{c}"),
            SizeExpr::Var(var) => write!(f, "{var}"),
            SizeExpr::Neg(inner) => {
                f.write_str("-")?;
                wrapped(f, inner, inner.precedence() < 4)
            }
            SizeExpr::Binary(op, lhs, rhs) => {
                let level = op.precedence();
                wrapped(f, lhs, lhs.precedence() < level)?;
                f.write_str(op.symbol())?;
                // `a - (b + c)` and `a / (b * c)` keep their parentheses; `a + (b + c)` need not.
                let right_parens = match op {
                    SizeOp::Add | SizeOp::Mul => rhs.precedence() < level,
                    SizeOp::Sub | SizeOp::Div | SizeOp::Rem => rhs.precedence() <= level,
                };
                wrapped(f, rhs, right_parens)
            }
        }
    }
}

/// An exact rational number in lowest terms, with a positive denominator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ratio {
    num: i64,
    den: i64,
}

impl Ratio {
    pub const ZERO: Ratio = Ratio { num: 0, den: 1 };
    pub const ONE: Ratio = Ratio { num: 1, den: 1 };

    pub fn int(value: i64) -> Ratio {
        Ratio { num: value, den: 1 }
    }

    /// `num / den` in lowest terms; `None` for a zero denominator or on overflow.
    pub fn new(num: i64, den: i64) -> Option<Ratio> {
        Ratio::reduce(i128::from(num), i128::from(den))
    }

    fn reduce(num: i128, den: i128) -> Option<Ratio> {
        if den == 0 {
            return None;
        }
        let g = gcd(num.unsigned_abs(), den.unsigned_abs()).max(1) as i128;
        let (mut num, mut den) = (num / g, den / g);
        if den < 0 {
            num = -num;
            den = -den;
        }
        Some(Ratio { num: i64::try_from(num).ok()?, den: i64::try_from(den).ok()? })
    }

    pub fn numer(self) -> i64 {
        self.num
    }

    pub fn denom(self) -> i64 {
        self.den
    }

    pub fn is_zero(self) -> bool {
        self.num == 0
    }

    /// The value, when it is an integer.
    pub fn as_int(self) -> Option<i64> {
        (self.den == 1).then_some(self.num)
    }

    fn add(self, other: Ratio) -> Option<Ratio> {
        let (a, b) = (i128::from(self.num), i128::from(self.den));
        let (c, d) = (i128::from(other.num), i128::from(other.den));
        Ratio::reduce(a * d + c * b, b * d)
    }

    fn mul(self, other: Ratio) -> Option<Ratio> {
        let num = i128::from(self.num) * i128::from(other.num);
        Ratio::reduce(num, i128::from(self.den) * i128::from(other.den))
    }

    fn recip(self) -> Option<Ratio> {
        Ratio::new(self.den, self.num)
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// What a monomial multiplies: a variable, or `e % c`, which has no polynomial form.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Atom {
    Var(SizeVar),
    Rem(Box<Poly>, i64),
}

/// A product of atoms with their exponents, sorted by atom; empty for the constant term.
type Monomial = Vec<(Atom, u32)>;

/// A polynomial in normal form: its terms sorted by monomial, no zero coefficients. Two sizes
/// are equal when their polynomials are.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Poly {
    terms: Vec<(Monomial, Ratio)>,
}

impl Poly {
    pub fn constant(value: Ratio) -> Poly {
        let mut terms = Vec::new();
        if !value.is_zero() {
            terms.push((Vec::new(), value));
        }
        Poly { terms }
    }

    fn atom(atom: Atom) -> Poly {
        Poly { terms: vec![(vec![(atom, 1)], Ratio::ONE)] }
    }

    pub fn var(var: SizeVar) -> Poly {
        Poly::atom(Atom::Var(var))
    }

    fn from_map(map: BTreeMap<Monomial, Ratio>) -> Poly {
        Poly { terms: map.into_iter().filter(|(_, c)| !c.is_zero()).collect() }
    }

    /// The value of a constant polynomial.
    pub fn as_constant(&self) -> Option<Ratio> {
        match self.terms.as_slice() {
            [] => Some(Ratio::ZERO),
            [(monomial, c)] if monomial.is_empty() => Some(*c),
            _ => None,
        }
    }

    pub fn add(&self, other: &Poly) -> Option<Poly> {
        let mut map: BTreeMap<Monomial, Ratio> = self.terms.iter().cloned().collect();
        for (monomial, c) in &other.terms {
            let entry = map.entry(monomial.clone()).or_insert(Ratio::ZERO);
            *entry = entry.add(*c)?;
        }
        Some(Poly::from_map(map))
    }

    pub fn neg(&self) -> Option<Poly> {
        self.scale(Ratio::int(-1))
    }

    pub fn sub(&self, other: &Poly) -> Option<Poly> {
        self.add(&other.neg()?)
    }

    pub fn scale(&self, factor: Ratio) -> Option<Poly> {
        if factor.is_zero() {
            return Some(Poly::default());
        }
        let terms = self
            .terms
            .iter()
            .map(|(m, c)| Some((m.clone(), c.mul(factor)?)))
            .collect::<Option<Vec<_>>>()?;
        Some(Poly { terms })
    }

    pub fn mul(&self, other: &Poly) -> Option<Poly> {
        let mut map: BTreeMap<Monomial, Ratio> = BTreeMap::new();
        for (a, x) in &self.terms {
            for (b, y) in &other.terms {
                let monomial = multiply_monomials(a, b)?;
                let entry = map.entry(monomial).or_insert(Ratio::ZERO);
                *entry = entry.add(x.mul(*y)?)?;
            }
        }
        Some(Poly::from_map(map))
    }

    /// The normal form of a size expression.
    pub fn of_expr(expr: &SizeExpr<SizeVar>) -> Result<Poly, SizeError> {
        stacker::maybe_grow(
            crate::body::lower::STACK_RED_ZONE,
            crate::body::lower::STACK_SEGMENT,
            || Poly::of_expr_inner(expr),
        )
    }

    fn of_expr_inner(expr: &SizeExpr<SizeVar>) -> Result<Poly, SizeError> {
        let overflow = SizeError::Overflow;
        Ok(match expr {
            SizeExpr::Const(c) => Poly::constant(Ratio::int(*c)),
            SizeExpr::Var(var) => Poly::var(var.clone()),
            SizeExpr::Neg(inner) => Poly::of_expr(inner)?.neg().ok_or(overflow)?,
            SizeExpr::Binary(op, lhs, rhs) => {
                let a = Poly::of_expr(lhs)?;
                let b = Poly::of_expr(rhs)?;
                match op {
                    SizeOp::Add => a.add(&b).ok_or(overflow)?,
                    SizeOp::Sub => a.sub(&b).ok_or(overflow)?,
                    SizeOp::Mul => a.mul(&b).ok_or(overflow)?,
                    SizeOp::Div | SizeOp::Rem => {
                        let divisor = b.as_constant().ok_or(SizeError::NonConstantDivisor)?;
                        let Some(divisor) = divisor.as_int() else {
                            return Err(SizeError::NonConstantDivisor);
                        };
                        if divisor == 0 {
                            return Err(SizeError::DivisionByZero);
                        }
                        match (op, a.as_constant().and_then(Ratio::as_int)) {
                            (SizeOp::Div, Some(dividend)) => {
                                if dividend.checked_rem(divisor) != Some(0) {
                                    return Err(SizeError::Inexact { dividend, divisor });
                                }
                                Poly::constant(Ratio::int(dividend / divisor))
                            }
                            (SizeOp::Div, None) => a
                                .scale(Ratio::int(divisor).recip().ok_or(overflow)?)
                                .ok_or(overflow)?,
                            (_, Some(dividend)) => Poly::constant(Ratio::int(
                                dividend.checked_rem(divisor).ok_or(overflow)?,
                            )),
                            (_, None) => Poly::atom(Atom::Rem(Box::new(a), divisor)),
                        }
                    }
                }
            }
        })
    }

    /// Every variable, including those inside `%`, sorted, without repeats.
    pub fn vars(&self) -> Vec<SizeVar> {
        let mut out = Vec::new();
        self.collect_vars(&mut out);
        out.sort();
        out.dedup();
        out
    }

    fn collect_vars(&self, out: &mut Vec<SizeVar>) {
        for (monomial, _) in &self.terms {
            for (atom, _) in monomial {
                match atom {
                    Atom::Var(var) => out.push(var.clone()),
                    Atom::Rem(inner, _) => inner.collect_vars(out),
                }
            }
        }
    }

    /// `self` as `coefficient * var + rest`, where `rest` does not involve `var`: `None` when
    /// `var` occurs other than linearly (squared, in a product with another variable, in `%`).
    pub fn linear_in(&self, var: &SizeVar) -> Option<(Ratio, Poly)> {
        let mut coefficient = Ratio::ZERO;
        let mut rest = Vec::new();
        for (monomial, c) in &self.terms {
            match monomial.as_slice() {
                [(Atom::Var(v), 1)] if v == var => coefficient = *c,
                _ => {
                    let mentions = monomial.iter().any(|(atom, _)| match atom {
                        Atom::Var(v) => v == var,
                        Atom::Rem(inner, _) => inner.vars().contains(var),
                    });
                    if mentions {
                        return None;
                    }
                    rest.push((monomial.clone(), *c));
                }
            }
        }
        (!coefficient.is_zero()).then_some((coefficient, Poly { terms: rest }))
    }

    /// The polynomial written out: terms in normal-form order with the constant last, over a
    /// common denominator: `2*n - m + 1`, `(n + 1) / 2`.
    pub fn to_expr(&self) -> SizeExpr<SizeVar> {
        let denominator = self.terms.iter().fold(1i64, |acc, (_, c)| {
            let g = gcd(acc.unsigned_abs() as u128, c.den.unsigned_abs() as u128).max(1) as i64;
            acc.checked_mul(c.den / g).unwrap_or(acc)
        });
        let mut ordered: Vec<&(Monomial, Ratio)> = self.terms.iter().collect();
        // The constant term sorts first as the empty monomial; it reads better last.
        ordered.sort_by_key(|(monomial, _)| monomial.is_empty());
        let mut sum: Option<SizeExpr<SizeVar>> = None;
        for (monomial, c) in ordered {
            let scaled = c.mul(Ratio::int(denominator)).and_then(Ratio::as_int).unwrap_or(c.num);
            let magnitude = scaled.unsigned_abs();
            let factor = monomial_expr(monomial);
            let term = match (factor, magnitude) {
                (None, _) => SizeExpr::Const(i64::try_from(magnitude).unwrap_or(i64::MAX)),
                (Some(factor), 1) => factor,
                (Some(factor), _) => SizeExpr::binary(
                    SizeOp::Mul,
                    SizeExpr::Const(i64::try_from(magnitude).unwrap_or(i64::MAX)),
                    factor,
                ),
            };
            sum = Some(match (sum, scaled < 0) {
                (None, false) => term,
                (None, true) => SizeExpr::Neg(Box::new(term)),
                (Some(acc), false) => SizeExpr::binary(SizeOp::Add, acc, term),
                (Some(acc), true) => SizeExpr::binary(SizeOp::Sub, acc, term),
            });
        }
        let sum = sum.unwrap_or(SizeExpr::Const(0));
        match denominator {
            1 => sum,
            d => SizeExpr::binary(SizeOp::Div, sum, SizeExpr::Const(d)),
        }
    }
}

fn multiply_monomials(a: &Monomial, b: &Monomial) -> Option<Monomial> {
    let mut map: BTreeMap<Atom, u32> = a.iter().cloned().collect();
    for (atom, exponent) in b {
        let entry = map.entry(atom.clone()).or_insert(0);
        *entry = entry.checked_add(*exponent)?;
    }
    Some(map.into_iter().collect())
}

fn monomial_expr(monomial: &Monomial) -> Option<SizeExpr<SizeVar>> {
    let mut out: Option<SizeExpr<SizeVar>> = None;
    for (atom, exponent) in monomial {
        let factor = match atom {
            Atom::Var(var) => SizeExpr::Var(var.clone()),
            Atom::Rem(inner, c) => {
                SizeExpr::binary(SizeOp::Rem, inner.to_expr(), SizeExpr::Const(*c))
            }
        };
        for _ in 0..*exponent {
            out = Some(match out {
                None => factor.clone(),
                Some(acc) => SizeExpr::binary(SizeOp::Mul, acc, factor.clone()),
            });
        }
    }
    out
}
