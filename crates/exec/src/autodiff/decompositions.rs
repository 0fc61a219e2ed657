//! The backward rules of the matrix decompositions `qr`, `svd` and `eigh` and of `pinv` and
//! `slogdet`, as JAX defines their derivatives (its JVP rules, transposed), written with the
//! differentiable `ops` so that higher derivatives come out right.
//!
//! A decomposition records one [`Op`](super::Op) whose output is its results packed into one
//! vector (`ops::linalg::pack`), which the results are read back from; its rule gets the
//! gradient of that vector and reads each result's gradient from it.
//!
//! Degenerate cases, as JAX: the rules of `svd` and `eigh` divide by the gaps between singular
//! values (their squares) or eigenvalues, and the terms whose gap is exactly 0 are left out (the
//! gradient of a function of the values alone, such as `sum(S)`, is then right; one that reads the
//! vectors of a repeated value has no derivative there). `svd` also divides by the singular values
//! for the part of `U` or `V` outside the square, left out where a value is 0. `qr` is
//! differentiable for `m >= n`, as in JAX; `pinv` assumes the rank does not change near the
//! matrix. Every rule works on the last two axes, so stacks of matrices differentiate as one.

use crate::autodiff::AdError;
use crate::autodiff::Tape;
use crate::ops::{self, linalg::unpack, plain};
use crate::value::Value;

fn t_of(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    ops::swap_last_two(t, x)
}

fn mm(t: &mut Tape, a: Value, b: Value) -> Result<Value, AdError> {
    ops::matmul(t, a, b)
}

fn eye(n: usize) -> Result<Value, AdError> {
    Ok(Value::tensor(plain::eye_rect(n, n)?))
}

/// The last extent of a shape.
fn last(shape: &[usize]) -> usize {
    shape.last().copied().unwrap_or(0)
}

/// `[..., k]` to the diagonal matrices `[..., k, k]`.
fn diag_of(t: &mut Tape, v: Value) -> Result<Value, AdError> {
    let k = last(v.shape());
    let row = ops::expand_dims(t, v, -2)?;
    ops::mul(t, row, eye(k)?)
}

/// `1 / x` where `x` is not 0, and 0 where it is, without a NaN or an infinity in any derivative.
fn guarded_reciprocal(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    let mask =
        plain::into_tensor(x.detach(), "a reciprocal")?.map(|v| f64::from(u8::from(v != 0.0)));
    let mask = Value::tensor(mask);
    let safe = ops::select(t, &mask, x, Value::Float(1.0))?;
    let reciprocal = ops::div(t, Value::Float(1.0), safe)?;
    ops::select(t, &mask, reciprocal, Value::Float(0.0))
}

/// `F[i][j] = 1 / (s_j - s_i)` for the values `s` (`[..., k]`), 0 on the diagonal and wherever
/// two values are equal.
fn inverse_gaps(t: &mut Tape, s: Value) -> Result<Value, AdError> {
    let row = ops::expand_dims(t, s.clone(), -2)?;
    let column = ops::expand_dims(t, s, -1)?;
    let gaps = ops::sub(t, row, column)?;
    guarded_reciprocal(t, gaps)
}

/// The symmetric part `(a + a^T) / 2`: the decompositions of symmetric matrices read only it.
fn symmetric_part(t: &mut Tape, a: Value) -> Result<Value, AdError> {
    let a_t = t_of(t, a.clone())?;
    let sum = ops::add(t, a, a_t)?;
    ops::mul(t, sum, Value::Float(0.5))
}

/// `eigh`: `A = V diag(w) V^T`. With `F = 1 / (w_j - w_i)`, the gradient is the symmetric part of
/// `V (diag(gw) + F * (V^T gV)) V^T`.
pub(super) fn eigh_rule(t: &mut Tape, w: Value, v: Value, g: Value) -> Result<Value, AdError> {
    let mut parts = unpack(t, g, &[w.shape(), v.shape()])?.into_iter();
    let (Some(gw), Some(gv)) = (parts.next(), parts.next()) else {
        return Err(AdError::internal("the gradient of eigh in two parts"));
    };
    let f = inverse_gaps(t, w)?;
    let v_t = t_of(t, v.clone())?;
    let projected = mm(t, v_t.clone(), gv)?;
    let off = ops::mul(t, f, projected)?;
    let on = diag_of(t, gw)?;
    let middle = ops::add(t, off, on)?;
    let left = mm(t, v, middle)?;
    let a = mm(t, left, v_t)?;
    symmetric_part(t, a)
}

/// `svd` (reduced): `A = U diag(S) Vh`, `k = min(m, n)`. With `F = 1 / (s_j^2 - s_i^2)`,
/// `J = F * (U^T gU)` and `K = F * (Vh gVh^T)`, the gradient is
/// `U (diag(gS) + (J + J^T) S + S (K + K^T)) Vh`, plus `(gU - U U^T gU) S^-1 Vh` when `m > k`
/// and `U S^-1 (gVh - gVh Vh^T Vh)` when `n > k`.
pub(super) fn svd_rule(t: &mut Tape, [u, s, vh]: [Value; 3], g: Value) -> Result<Value, AdError> {
    let shapes = [u.shape().to_vec(), s.shape().to_vec(), vh.shape().to_vec()];
    let mut parts = unpack(t, g, &[&shapes[0], &shapes[1], &shapes[2]])?.into_iter();
    let (Some(gu), Some(gs), Some(gvh)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(AdError::internal("the gradient of svd in three parts"));
    };
    let m = shapes[0].get(shapes[0].len().wrapping_sub(2)).copied().unwrap_or(0);
    let (k, n) = (last(&shapes[1]), last(&shapes[2]));
    let squares = ops::mul(t, s.clone(), s.clone())?;
    let f = inverse_gaps(t, squares)?;
    let u_t = t_of(t, u.clone())?;
    let u_t_gu = mm(t, u_t, gu.clone())?;
    let j = ops::mul(t, f.clone(), u_t_gu.clone())?;
    let gvh_t = t_of(t, gvh.clone())?;
    let vh_gvh_t = mm(t, vh.clone(), gvh_t)?;
    let kk = ops::mul(t, f, vh_gvh_t)?;
    let s_row = ops::expand_dims(t, s.clone(), -2)?;
    let s_column = ops::expand_dims(t, s.clone(), -1)?;
    let j_t = t_of(t, j.clone())?;
    let j_sym = ops::add(t, j, j_t)?;
    let left = ops::mul(t, j_sym, s_row)?;
    let k_t = t_of(t, kk.clone())?;
    let k_sym = ops::add(t, kk, k_t)?;
    let right = ops::mul(t, s_column, k_sym)?;
    let on = diag_of(t, gs)?;
    let middle = ops::add(t, on, left)?;
    let middle = ops::add(t, middle, right)?;
    let u_middle = mm(t, u.clone(), middle)?;
    let mut a = mm(t, u_middle, vh.clone())?;
    let s_inv = guarded_reciprocal(t, s)?;
    if m > k {
        let inside = mm(t, u.clone(), u_t_gu)?;
        let outside = ops::sub(t, gu, inside)?;
        let s_inv_row = ops::expand_dims(t, s_inv.clone(), -2)?;
        let scaled = ops::mul(t, outside, s_inv_row)?;
        let term = mm(t, scaled, vh.clone())?;
        a = ops::add(t, a, term)?;
    }
    if n > k {
        let vh_t = t_of(t, vh.clone())?;
        let gvh_v = mm(t, gvh.clone(), vh_t)?;
        let inside = mm(t, gvh_v, vh)?;
        let outside = ops::sub(t, gvh, inside)?;
        let s_inv_column = ops::expand_dims(t, s_inv, -1)?;
        let scaled = ops::mul(t, s_inv_column, outside)?;
        let term = mm(t, u, scaled)?;
        a = ops::add(t, a, term)?;
    }
    Ok(a)
}

/// `qr` (reduced, `m >= n`): `A = Q R`. With `M = Q^T gQ - gR R^T`, the gradient is
/// `(gQ + Q (strictly_lower(M - M^T) - M)) R^-T` (the transpose of JAX's JVP rule).
pub(super) fn qr_rule(t: &mut Tape, q: Value, r: Value, g: Value) -> Result<Value, AdError> {
    let mut parts = unpack(t, g, &[q.shape(), r.shape()])?.into_iter();
    let (Some(gq), Some(gr)) = (parts.next(), parts.next()) else {
        return Err(AdError::internal("the gradient of qr in two parts"));
    };
    let n = last(r.shape());
    let q_t = t_of(t, q.clone())?;
    let r_t = t_of(t, r.clone())?;
    let first = mm(t, q_t, gq.clone())?;
    let second = mm(t, gr, r_t)?;
    let m = ops::sub(t, first, second)?;
    let m_t = t_of(t, m.clone())?;
    let skew = ops::sub(t, m.clone(), m_t)?;
    let lower = ops::mul(t, skew, Value::tensor(plain::lower_mask(n, false)?))?;
    let c = ops::sub(t, lower, m)?;
    let qc = mm(t, q, c)?;
    let x = ops::add(t, gq, qc)?;
    // x R^-T = (R^-1 x^T)^T.
    let x_t = t_of(t, x)?;
    let solved = ops::solve(t, r, x_t)?;
    t_of(t, solved)
}

/// `pinv`, `P = A^+`: the gradient is
/// `-P^T G P^T + (I - A P) G^T P P^T + P^T P G^T (I - P A)` (JAX's rule, for a rank that does not
/// change near `A`).
pub(super) fn pinv_rule(t: &mut Tape, a: Value, p: Value, g: Value) -> Result<Value, AdError> {
    let (m, n) = (last(p.shape()), last(a.shape()));
    let p_t = t_of(t, p.clone())?;
    let g_t = t_of(t, g.clone())?;
    let inner = mm(t, p_t.clone(), g)?;
    let first = mm(t, inner, p_t.clone())?;
    let first = ops::neg(t, first)?;
    let ap = mm(t, a.clone(), p.clone())?;
    let not_ap = ops::sub(t, eye(m)?, ap)?;
    let p_pt = mm(t, p.clone(), p_t.clone())?;
    let second = mm(t, not_ap, g_t.clone())?;
    let second = mm(t, second, p_pt)?;
    let pa = mm(t, p.clone(), a)?;
    let not_pa = ops::sub(t, eye(n)?, pa)?;
    let pt_p = mm(t, p_t, p)?;
    let third = mm(t, pt_p, g_t)?;
    let third = mm(t, third, not_pa)?;
    let sum = ops::add(t, first, second)?;
    ops::add(t, sum, third)
}

/// `slogdet`'s `log |det A|`: the gradient is `g A^-T`, for every matrix of a stack.
pub(super) fn log_abs_det_rule(t: &mut Tape, a: Value, g: Value) -> Result<Value, AdError> {
    let inverse = ops::inv(t, a)?;
    let inverse_t = t_of(t, inverse)?;
    let g = per_matrix(t, g)?;
    ops::mul(t, g, inverse_t)
}

/// A float per matrix of a stack (`[...]`, or a float for one matrix) as `[..., 1, 1]`, to scale
/// each matrix by its own.
pub(super) fn per_matrix(t: &mut Tape, g: Value) -> Result<Value, AdError> {
    match g.is_tensor() && !g.shape().is_empty() {
        true => {
            let column = ops::expand_dims(t, g, -1)?;
            ops::expand_dims(t, column, -1)
        }
        false => Ok(g),
    }
}
