//! Linear algebra on LAPACK through ndarray-linalg, batched over leading axes as NumPy's
//! `linalg` is: `inv`, `det`, `slogdet`, `solve`, `cholesky`, `qr`, `svd`, `svdvals`, `eigh`,
//! `eigvalsh`, `pinv`, `lstsq` and the matrix norms. A tensor of shape `[..., m, n]` is a stack of
//! `m` by `n` matrices; every result keeps the leading axes.
//!
//! Singularity is what LAPACK's LU factorisation reports: an exactly zero pivot. Nearly singular
//! matrices give large, inaccurate results, as in NumPy. Debian's OpenBLAS 0.3.21 divides by a
//! pivot through its reciprocal, which overflows for a subnormal pivot and turns the factors into
//! NaN (`det([[1e-310, 0], [0, 1]])` came out NaN); when the factors of a finite matrix are not
//! finite, the factorisation is redone with every row scaled by a power of two that brings its
//! largest element near 1, which is exact, and the scales are undone in the results.
//!
//! Decompositions follow LAPACK's conventions, as NumPy's do: `qr` is the reduced
//! factorisation of `dgeqrf`/`dorgqr` (the diagonal of `R` may be negative), `svd` the reduced
//! one of `dgesdd` with singular values in descending order, and `eigh` gives eigenvalues in
//! ascending order. `eigh` and `eigvalsh` decompose `(A + A^T) / 2`, as JAX does (NumPy reads the
//! lower triangle; the two agree on symmetric matrices). Singular vectors and eigenvectors are
//! unique only up to sign (and within repeated values, up to rotation).

use ndarray::{Array1, Array2, Axis, Ix2, IxDyn, s};
use ndarray_linalg::error::LinalgError;
use ndarray_linalg::{
    Cholesky, EigValsh, Eigh, JobSvd, Lapack, MatrixLayout, QRInto, SVDDC, Transpose, UPLO,
};

use super::Tensor;
use super::allocation::check_allocation;
use super::broadcast::broadcast_shapes;
use super::error::TensorError;

/// The leading (batch) extents of a stack of matrices and its matrices, each a row-major copy.
struct Stack {
    batch: Vec<usize>,
    matrices: Vec<Array2<f64>>,
}

impl Stack {
    /// The matrices of `x`, which must have rank 2 or more (and square matrices when `square`).
    fn of(op: &'static str, x: &Tensor, square: bool) -> Result<Stack, TensorError> {
        let shape = x.shape();
        let rank = shape.len();
        if rank < 2 {
            let expected = if square { "a square matrix" } else { "a matrix" };
            return Err(TensorError::Rank { op, expected, shape: shape.to_vec() });
        }
        let (m, n) = (shape[rank - 2], shape[rank - 1]);
        if square && m != n {
            return Err(TensorError::NotSquare { op, shape: shape.to_vec() });
        }
        let batch = shape[..rank - 2].to_vec();
        let count: usize = batch.iter().product();
        let standard = x.array().as_standard_layout();
        let stacked = standard
            .to_shape(IxDyn(&[count, m, n]))
            .map_err(|_| TensorError::Reshape { from: shape.to_vec(), to: vec![count, m, n] })?;
        let matrices = stacked
            .axis_iter(Axis(0))
            .map(|matrix| {
                matrix.to_owned().into_dimensionality::<Ix2>().map_err(|_| TensorError::Rank {
                    op,
                    expected: "a matrix",
                    shape: shape.to_vec(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Stack { batch, matrices })
    }
}

/// One result per matrix, each of shape `inner`, stacked behind the batch extents.
fn stacked<D: ndarray::Dimension>(
    batch: &[usize],
    inner: &[usize],
    parts: Vec<ndarray::Array<f64, D>>,
) -> Result<Tensor, TensorError> {
    let shape = [batch, inner].concat();
    check_allocation(&shape)?;
    let mut values = Vec::with_capacity(shape.iter().product());
    for part in &parts {
        values.extend(part.iter().copied());
    }
    Tensor::from_vec(&shape, values)
}

/// The layout LAPACK needs for an `n` by `n` row-major matrix; LAPACK counts elements in `i32`,
/// which bounds `n` at 46340.
fn row_major_layout(op: &'static str, n: usize) -> Result<MatrixLayout, TensorError> {
    let too_large = || TensorError::Lapack {
        op,
        reason: format!("a {n} by {n} matrix is larger than LAPACK takes"),
    };
    let n = i32::try_from(n).map_err(|_| too_large())?;
    n.checked_mul(n).ok_or_else(too_large)?;
    Ok(MatrixLayout::C { row: n, lda: n })
}

/// Checks that an `m` by `n` matrix fits LAPACK's `i32` element counts.
fn check_lapack_size(op: &'static str, m: usize, n: usize) -> Result<(), TensorError> {
    let fits = i32::try_from(m.max(1).saturating_mul(n.max(1))).is_ok();
    match fits {
        true => Ok(()),
        false => Err(TensorError::Lapack {
            op,
            reason: format!("a {m} by {n} matrix is larger than LAPACK takes"),
        }),
    }
}

/// Maps a failure of a LAPACK routine. For the well-formed matrices this module passes, the only
/// error LAPACK itself reports from an LU-based routine is an exactly zero pivot.
fn lapack_error(op: &'static str, error: LinalgError) -> TensorError {
    match error {
        LinalgError::Lapack(_) => TensorError::Singular { op },
        other => TensorError::Lapack { op, reason: other.to_string() },
    }
}

/// An LU factorisation with partial pivoting of a square matrix, `P D A = L U`, where `D` is the
/// identity or, after a factorisation that overflowed, the diagonal of powers of two
/// `2^row_exponents[i]` (see the module documentation).
struct Lu {
    factors: Array2<f64>,
    /// LAPACK's row interchanges, counted from 1; empty when a pivot is exactly zero.
    pivots: Vec<i32>,
    row_exponents: Option<Vec<i32>>,
    layout: MatrixLayout,
}

impl Lu {
    /// Factors `matrix`; `None` for an exactly singular matrix.
    fn of(op: &'static str, matrix: &Array2<f64>) -> Result<Option<Lu>, TensorError> {
        let n = matrix.nrows();
        let layout = row_major_layout(op, n)?;
        let plain = Lu::factor(layout, matrix.clone(), None);
        let finite_input = matrix.iter().all(|x| x.is_finite());
        match plain {
            Some(lu) if !finite_input || lu.factors.iter().all(|x| x.is_finite()) => Ok(Some(lu)),
            // Exactly singular, or factors that overflowed: scaled rows, which tell them apart.
            _ => {
                let exponents: Vec<i32> = matrix
                    .rows()
                    .into_iter()
                    .map(|row| {
                        let largest = row.iter().fold(0.0f64, |acc, x| acc.max(x.abs()));
                        if largest == 0.0 { 0 } else { -libm::frexp(largest).1 }
                    })
                    .collect();
                let mut scaled = matrix.clone();
                for (mut row, &e) in scaled.rows_mut().into_iter().zip(&exponents) {
                    row.mapv_inplace(|x| libm::ldexp(x, e));
                }
                Ok(Lu::factor(layout, scaled, Some(exponents)))
            }
        }
    }

    fn factor(
        layout: MatrixLayout,
        mut matrix: Array2<f64>,
        row_exponents: Option<Vec<i32>>,
    ) -> Option<Lu> {
        let entries = matrix.as_slice_mut()?;
        let pivots = f64::lu(layout, entries).ok()?;
        Some(Lu { factors: matrix, pivots, row_exponents, layout })
    }

    /// `det(A)`: the product of the pivots, signed by the interchanges, with the row scales
    /// undone; exact for small integer matrices factored without scaling.
    fn det(&self) -> f64 {
        let swaps = self
            .pivots
            .iter()
            .enumerate()
            .filter(|&(row, &pivot)| usize::try_from(pivot) != Ok(row + 1))
            .count();
        let sign = if swaps % 2 == 0 { 1.0 } else { -1.0 };
        match &self.row_exponents {
            None => sign * self.factors.diag().product(),
            Some(exponents) => {
                // The product as a mantissa and an exponent, so that no partial product
                // overflows or underflows before the scales are undone.
                let (mut mantissa, mut exponent) = (sign, 0i32);
                for &pivot in self.factors.diag() {
                    let (m, e) = libm::frexp(mantissa * pivot);
                    (mantissa, exponent) = (m, exponent + e);
                }
                let scale: i32 = exponents.iter().sum();
                libm::ldexp(mantissa, exponent - scale)
            }
        }
    }

    /// `ln |det(A)|` and the sign of `det(A)`, without overflow.
    fn slogdet(&self) -> (f64, f64) {
        let det_sign = self.det().signum();
        let mut log = 0.0;
        let mut sign = 1.0;
        for &pivot in self.factors.diag() {
            log += pivot.abs().ln();
            sign *= pivot.signum();
        }
        if let Some(exponents) = &self.row_exponents {
            let scale: i32 = exponents.iter().sum();
            log -= f64::from(scale) * std::f64::consts::LN_2;
        }
        // The sign of the determinant, also when the product itself underflowed to 0.
        let sign = if det_sign == 0.0 { sign * self.interchange_sign() } else { det_sign };
        (sign, log)
    }

    fn interchange_sign(&self) -> f64 {
        let swaps = self
            .pivots
            .iter()
            .enumerate()
            .filter(|&(row, &pivot)| usize::try_from(pivot) != Ok(row + 1))
            .count();
        if swaps % 2 == 0 { 1.0 } else { -1.0 }
    }

    /// Solves `A x = b` in place for one right-hand side.
    fn solve(&self, op: &'static str, b: &mut [f64]) -> Result<(), TensorError> {
        if let Some(exponents) = &self.row_exponents {
            for (value, &e) in b.iter_mut().zip(exponents) {
                *value = libm::ldexp(*value, e);
            }
        }
        let entries = self.factors.as_slice().unwrap_or_default();
        f64::solve(self.layout, Transpose::No, entries, &self.pivots, b)
            .map_err(|error| lapack_error(op, LinalgError::from(error)))
    }

    /// `A^-1`.
    fn inverse(mut self, op: &'static str) -> Result<Array2<f64>, TensorError> {
        let layout = self.layout;
        let entries = self.factors.as_slice_mut().unwrap_or_default();
        f64::inv(layout, entries, &self.pivots)
            .map_err(|error| lapack_error(op, LinalgError::from(error)))?;
        // (D A)^-1 = A^-1 D^-1, so A^-1 = (D A)^-1 D: column j scaled by 2^e_j.
        if let Some(exponents) = &self.row_exponents {
            for (mut column, &e) in self.factors.columns_mut().into_iter().zip(exponents) {
                column.mapv_inplace(|x| libm::ldexp(x, e));
            }
        }
        Ok(self.factors)
    }
}

/// The inverse of every square matrix of `x`.
pub fn inv(x: &Tensor) -> Result<Tensor, TensorError> {
    let Stack { batch, matrices } = Stack::of("inv", x, true)?;
    let n = x.shape()[x.rank() - 1];
    let mut parts = Vec::with_capacity(matrices.len());
    for matrix in &matrices {
        parts.push(match n {
            0 => matrix.clone(),
            _ => {
                Lu::of("inv", matrix)?.ok_or(TensorError::Singular { op: "inv" })?.inverse("inv")?
            }
        });
    }
    stacked(&batch, &[n, n], parts)
}

/// The determinant of every square matrix of `x`: the product of the LU factorisation's pivots,
/// so that integer matrices give exact integers where the arithmetic allows (1 for a 0 by 0
/// matrix, 0 for an exactly singular one). A single matrix gives a rank-0 tensor.
pub fn det(x: &Tensor) -> Result<Tensor, TensorError> {
    let Stack { batch, matrices } = Stack::of("det", x, true)?;
    let mut values = Vec::with_capacity(matrices.len());
    for matrix in &matrices {
        values.push(match matrix.nrows() {
            0 => 1.0,
            _ => Lu::of("det", matrix)?.map_or(0.0, |lu| lu.det()),
        });
    }
    Tensor::from_vec(&batch, values)
}

/// The sign (-1, 0 or 1) and the natural logarithm of the absolute value of every determinant of
/// `x` (NumPy's `slogdet`): `(0, -inf)` for a singular matrix.
pub fn slogdet(x: &Tensor) -> Result<(Tensor, Tensor), TensorError> {
    let Stack { batch, matrices } = Stack::of("slogdet", x, true)?;
    let (mut signs, mut logs) = (Vec::new(), Vec::new());
    for matrix in &matrices {
        let (sign, log) = match matrix.nrows() {
            0 => (1.0, 0.0),
            _ => Lu::of("slogdet", matrix)?.map_or((0.0, f64::NEG_INFINITY), |lu| lu.slogdet()),
        };
        signs.push(sign);
        logs.push(log);
    }
    Ok((Tensor::from_vec(&batch, signs)?, Tensor::from_vec(&batch, logs)?))
}

/// The solution `x` of `a @ x = b` for every square matrix of `a`, as NumPy 2's `solve`: a
/// vector `b` (rank 1) is one right-hand side for every matrix, giving `[..., n]`; otherwise `b`
/// is a stack `[..., n, k]` of right-hand sides in columns, whose leading axes broadcast against
/// `a`'s.
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor, TensorError> {
    let Stack { batch: a_batch, matrices } = Stack::of("solve", a, true)?;
    let n = a.shape()[a.rank() - 1];
    let mismatch = || TensorError::Solve { matrix: a.shape().to_vec(), rhs: b.shape().to_vec() };
    let (vector, b_batch, k) = match b.shape() {
        [rows] if *rows == n => (true, Vec::new(), 1),
        [.., rows, k] if *rows == n => (false, b.shape()[..b.rank() - 2].to_vec(), *k),
        _ => return Err(mismatch()),
    };
    let batch = broadcast_shapes(&a_batch, &b_batch).map_err(|_| mismatch())?;
    let rhs_shape: Vec<usize> = match vector {
        true => [&batch[..], &[n, 1]].concat(),
        false => [&batch[..], &[n, k]].concat(),
    };
    check_allocation(&rhs_shape)?;
    let rhs_view = match vector {
        true => b.array().view().insert_axis(Axis(1)),
        false => b.view(),
    };
    let rhs = rhs_view.broadcast(IxDyn(&rhs_shape)).ok_or_else(mismatch)?;
    let count: usize = batch.iter().product();
    let rhs = rhs.as_standard_layout();
    let rhs = rhs.to_shape(IxDyn(&[count, n, k])).map_err(|_| mismatch())?;
    // Matrix `i` of the broadcast batch is matrix `a_index(i)` of `a`.
    let a_count = matrices.len().max(1);
    let a_index = |i: usize| -> usize {
        let (mut rest, mut index, mut a_stride) = (i, 0, 1);
        for (axis, &extent) in batch.iter().enumerate().rev() {
            let position = rest % extent.max(1);
            rest /= extent.max(1);
            let a_axis = (axis + a_batch.len()).checked_sub(batch.len());
            if let Some(a_axis) = a_axis {
                let a_extent = a_batch[a_axis];
                index += if a_extent == 1 { 0 } else { position } * a_stride;
                a_stride *= a_extent;
            }
        }
        index % a_count
    };
    let mut values = Vec::with_capacity(count * n * k);
    let mut column = vec![0.0; n];
    let mut solution = Array2::zeros((n, k));
    let mut factored: Option<(usize, Lu)> = None;
    for i in 0..count {
        let which = a_index(i);
        if n > 0 && factored.as_ref().is_none_or(|(index, _)| *index != which) {
            let lu =
                Lu::of("solve", &matrices[which])?.ok_or(TensorError::Singular { op: "solve" })?;
            factored = Some((which, lu));
        }
        let rhs_matrix = rhs.index_axis(Axis(0), i);
        for j in 0..k {
            for (slot, row) in column.iter_mut().zip(0..n) {
                *slot = rhs_matrix[[row, j]];
            }
            if let Some((_, lu)) = &factored {
                lu.solve("solve", &mut column)?;
            }
            for (row, &value) in column.iter().enumerate() {
                solution[[row, j]] = value;
            }
        }
        values.extend(solution.iter().copied());
    }
    let shape = match vector {
        true => [&batch[..], &[n]].concat(),
        false => rhs_shape,
    };
    Tensor::from_vec(&shape, values)
}

/// The lower-triangular `L` with `L @ transpose(L) = a` for every symmetric positive definite
/// matrix of `a` (only its lower triangle is read).
pub fn cholesky(x: &Tensor) -> Result<Tensor, TensorError> {
    let Stack { batch, matrices } = Stack::of("cholesky", x, true)?;
    let n = x.shape()[x.rank() - 1];
    let mut parts = Vec::with_capacity(matrices.len());
    for matrix in matrices {
        if n == 0 {
            parts.push(matrix);
            continue;
        }
        row_major_layout("cholesky", n)?;
        parts.push(matrix.cholesky(UPLO::Lower).map_err(|error| match error {
            LinalgError::Lapack(_) => TensorError::NotPositiveDefinite,
            other => lapack_error("cholesky", other),
        })?);
    }
    stacked(&batch, &[n, n], parts)
}

/// The reduced QR factorisation `A = Q R` of every matrix of `x` (`[..., m, n]`), with
/// `k = min(m, n)`: `Q` is `[..., m, k]` with orthonormal columns and `R` is `[..., k, n]`,
/// upper triangular.
pub fn qr(x: &Tensor) -> Result<(Tensor, Tensor), TensorError> {
    let Stack { batch, matrices } = Stack::of("qr", x, false)?;
    let (m, n) = (x.shape()[x.rank() - 2], x.shape()[x.rank() - 1]);
    let k = m.min(n);
    let (mut qs, mut rs) = (Vec::new(), Vec::new());
    for matrix in matrices {
        if k == 0 {
            qs.push(Array2::zeros((m, 0)));
            rs.push(Array2::zeros((0, n)));
            continue;
        }
        check_lapack_size("qr", m, n)?;
        let (q, r) = matrix.qr_into().map_err(|error| lapack_error("qr", error))?;
        qs.push(q);
        rs.push(r);
    }
    Ok((stacked(&batch, &[m, k], qs)?, stacked(&batch, &[k, n], rs)?))
}

/// The reduced singular value decomposition `A = U diag(S) Vh` of every matrix of `x`
/// (`[..., m, n]`, `k = min(m, n)`): `U` is `[..., m, k]`, `S` is `[..., k]` in descending order
/// and `Vh` is `[..., k, n]`.
pub fn svd(x: &Tensor) -> Result<(Tensor, Tensor, Tensor), TensorError> {
    let Stack { batch, matrices } = Stack::of("svd", x, false)?;
    let (m, n) = (x.shape()[x.rank() - 2], x.shape()[x.rank() - 1]);
    let k = m.min(n);
    let (mut us, mut ss, mut vhs) = (Vec::new(), Vec::new(), Vec::new());
    for matrix in matrices {
        if k == 0 {
            us.push(Array2::zeros((m, 0)));
            ss.push(Array1::zeros(0));
            vhs.push(Array2::zeros((0, n)));
            continue;
        }
        check_lapack_size("svd", m, n)?;
        let (u, s, vh) = matrix.svddc(JobSvd::Some).map_err(|error| svd_error("svd", error))?;
        let (Some(u), Some(vh)) = (u, vh) else {
            return Err(TensorError::Lapack { op: "svd", reason: "no singular vectors".into() });
        };
        us.push(u);
        ss.push(s);
        vhs.push(vh);
    }
    Ok((stacked(&batch, &[m, k], us)?, stacked(&batch, &[k], ss)?, stacked(&batch, &[k, n], vhs)?))
}

/// The singular values of every matrix of `x`, in descending order (NumPy's `svdvals`).
pub fn svdvals(x: &Tensor) -> Result<Tensor, TensorError> {
    let Stack { batch, matrices } = Stack::of("svdvals", x, false)?;
    let (m, n) = (x.shape()[x.rank() - 2], x.shape()[x.rank() - 1]);
    let k = m.min(n);
    let mut ss = Vec::with_capacity(matrices.len());
    for matrix in matrices {
        if k == 0 {
            ss.push(Array1::zeros(0));
            continue;
        }
        check_lapack_size("svdvals", m, n)?;
        let (_, s, _) = matrix.svddc(JobSvd::None).map_err(|error| svd_error("svdvals", error))?;
        ss.push(s);
    }
    stacked(&batch, &[k], ss)
}

/// LAPACK's SVD fails only when its iteration does not converge (a NaN in the input).
fn svd_error(op: &'static str, error: LinalgError) -> TensorError {
    match error {
        LinalgError::Lapack(_) => TensorError::Lapack {
            op,
            reason: "the decomposition did not converge (is there a NaN or an infinity?)".into(),
        },
        other => TensorError::Lapack { op, reason: other.to_string() },
    }
}

/// `(A + A^T) / 2` of a square matrix.
fn symmetrized(matrix: &Array2<f64>) -> Array2<f64> {
    let mut symmetric = matrix.clone();
    symmetric += &matrix.t();
    symmetric.mapv_inplace(|x| 0.5 * x);
    symmetric
}

/// The eigenvalues (ascending, `[..., n]`) and orthonormal eigenvectors (in columns,
/// `[..., n, n]`) of the symmetric part of every square matrix of `x`.
pub fn eigh(x: &Tensor) -> Result<(Tensor, Tensor), TensorError> {
    let Stack { batch, matrices } = Stack::of("eigh", x, true)?;
    let n = x.shape()[x.rank() - 1];
    let (mut ws, mut vs) = (Vec::new(), Vec::new());
    for matrix in &matrices {
        if n == 0 {
            ws.push(Array1::zeros(0));
            vs.push(Array2::zeros((0, 0)));
            continue;
        }
        row_major_layout("eigh", n)?;
        let (w, v) =
            symmetrized(matrix).eigh(UPLO::Lower).map_err(|error| svd_error("eigh", error))?;
        ws.push(w);
        vs.push(v);
    }
    Ok((stacked(&batch, &[n], ws)?, stacked(&batch, &[n, n], vs)?))
}

/// The eigenvalues, ascending, of the symmetric part of every square matrix of `x`.
pub fn eigvalsh(x: &Tensor) -> Result<Tensor, TensorError> {
    let Stack { batch, matrices } = Stack::of("eigvalsh", x, true)?;
    let n = x.shape()[x.rank() - 1];
    let mut ws = Vec::with_capacity(matrices.len());
    for matrix in &matrices {
        if n == 0 {
            ws.push(Array1::zeros(0));
            continue;
        }
        row_major_layout("eigvalsh", n)?;
        let w = symmetrized(matrix)
            .eigvalsh(UPLO::Lower)
            .map_err(|error| svd_error("eigvalsh", error))?;
        ws.push(w);
    }
    stacked(&batch, &[n], ws)
}

/// The default relative cutoff of `pinv` and `lstsq` for an `m` by `n` matrix: singular values
/// below `max(m, n) * eps` times the largest count as zero (NumPy 2's `rtol` default).
pub fn default_rtol(m: usize, n: usize) -> f64 {
    m.max(n) as f64 * f64::EPSILON
}

/// The Moore-Penrose pseudo-inverse of every matrix of `x` (`[..., m, n]` to `[..., n, m]`), from
/// its SVD: singular values at most `rtol` times the largest are treated as zero.
pub fn pinv(x: &Tensor, rtol: f64) -> Result<Tensor, TensorError> {
    let (m, n) = match x.shape() {
        [.., m, n] => (*m, *n),
        shape => {
            return Err(TensorError::Rank {
                op: "pinv",
                expected: "a matrix",
                shape: shape.to_vec(),
            });
        }
    };
    let batch = x.shape()[..x.rank() - 2].to_vec();
    let (u, s, vh) = svd(x)?;
    let k = m.min(n);
    let count: usize = batch.iter().product();
    let u = u.array().to_shape(IxDyn(&[count, m, k])).map(|a| a.to_owned());
    let vh = vh.array().to_shape(IxDyn(&[count, k, n])).map(|a| a.to_owned());
    let s = s.array().to_shape(IxDyn(&[count, k])).map(|a| a.to_owned());
    let (Ok(u), Ok(vh), Ok(s)) = (u, vh, s) else {
        return Err(TensorError::Lapack { op: "pinv", reason: "inconsistent SVD shapes".into() });
    };
    let mut parts = Vec::with_capacity(count);
    for i in 0..count {
        let u = u.slice(s![i, .., ..]);
        let vh = vh.slice(s![i, .., ..]);
        let s = s.slice(s![i, ..]);
        let largest = s.iter().fold(0.0f64, |acc, &x| acc.max(x));
        let cutoff = rtol * largest;
        // pinv = V diag(1/s) U^T over the singular values above the cutoff.
        let mut scaled_vt: Array2<f64> = vh.t().to_owned();
        for (mut column, &value) in scaled_vt.columns_mut().into_iter().zip(s.iter()) {
            let inverse = if value > cutoff { 1.0 / value } else { 0.0 };
            column.mapv_inplace(|x| x * inverse);
        }
        parts.push(scaled_vt.dot(&u.t()));
    }
    stacked(&batch, &[n, m], parts)
}

/// The least-squares solution `x` minimising `|a @ x - b|` for one matrix `a` (`[m][n]`) and a
/// vector or matrix `b` (`[m]` or `[m][k]`), through the pseudo-inverse with cutoff `rtol`
/// (the minimum-norm solution when `a` is rank-deficient, as NumPy's `lstsq` gives).
pub fn lstsq(a: &Tensor, b: &Tensor, rtol: f64) -> Result<Tensor, TensorError> {
    let mismatch = || TensorError::Solve { matrix: a.shape().to_vec(), rhs: b.shape().to_vec() };
    match (a.shape(), b.shape()) {
        ([m, _], [rows]) | ([m, _], [rows, _]) if m == rows => {}
        ([_, _], _) => return Err(mismatch()),
        (shape, _) => {
            return Err(TensorError::Rank {
                op: "lstsq",
                expected: "a matrix",
                shape: shape.to_vec(),
            });
        }
    }
    super::matmul(&pinv(a, rtol)?, b)
}

/// The norm of order `ord` of every matrix of `x`, over its last two axes (NumPy's
/// `matrix_norm`): `fro` and `nuc` (the sum of the singular values), `2` and `-2` (the largest and
/// smallest singular value), `1` and `-1` (the largest and smallest column sum of magnitudes),
/// `inf` and `-inf` (the same of row sums).
pub fn matrix_norm(x: &Tensor, ord: MatrixOrd) -> Result<Tensor, TensorError> {
    let Stack { batch, matrices } = Stack::of("matrix_norm", x, false)?;
    let mut values = Vec::with_capacity(matrices.len());
    let extreme = |sums: Array1<f64>, largest: bool| {
        let fold = if largest { f64::max } else { f64::min };
        let start = if largest { f64::NEG_INFINITY } else { f64::INFINITY };
        sums.iter().fold(start, |acc, &x| fold(acc, x))
    };
    for matrix in &matrices {
        let abs = matrix.mapv(f64::abs);
        let empty = matrix.is_empty();
        values.push(match ord {
            MatrixOrd::Frobenius => matrix.iter().map(|x| x * x).sum::<f64>().sqrt(),
            MatrixOrd::Nuclear | MatrixOrd::Spectral { .. } => {
                let s = svdvals(&Tensor::from(matrix.clone().into_dyn()))?.to_vec();
                match ord {
                    MatrixOrd::Nuclear => s.iter().sum(),
                    MatrixOrd::Spectral { largest: true } => s.first().copied().unwrap_or(0.0),
                    _ => s.last().copied().unwrap_or(0.0),
                }
            }
            MatrixOrd::Columns { largest } if !empty => extreme(abs.sum_axis(Axis(0)), largest),
            MatrixOrd::Rows { largest } if !empty => extreme(abs.sum_axis(Axis(1)), largest),
            MatrixOrd::Columns { .. } | MatrixOrd::Rows { .. } => {
                return Err(TensorError::EmptyReduction {
                    op: "matrix_norm",
                    shape: x.shape().to_vec(),
                    axis: None,
                });
            }
        });
    }
    Tensor::from_vec(&batch, values)
}

/// The orders of [`matrix_norm`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixOrd {
    Frobenius,
    Nuclear,
    /// `2` (largest singular value) or `-2` (smallest).
    Spectral {
        largest: bool,
    },
    /// `1` (largest column sum of magnitudes) or `-1` (smallest).
    Columns {
        largest: bool,
    },
    /// `inf` (largest row sum of magnitudes) or `-inf` (smallest).
    Rows {
        largest: bool,
    },
}

impl MatrixOrd {
    /// The order written as NumPy writes it: `"fro"`, `"nuc"`, or a number (1, -1, 2, -2, inf,
    /// -inf).
    pub fn from_number(ord: f64) -> Option<MatrixOrd> {
        Some(match ord {
            1.0 => MatrixOrd::Columns { largest: true },
            -1.0 => MatrixOrd::Columns { largest: false },
            2.0 => MatrixOrd::Spectral { largest: true },
            -2.0 => MatrixOrd::Spectral { largest: false },
            f64::INFINITY => MatrixOrd::Rows { largest: true },
            f64::NEG_INFINITY => MatrixOrd::Rows { largest: false },
            _ => return None,
        })
    }

    pub fn from_name(name: &str) -> Option<MatrixOrd> {
        match name {
            "fro" => Some(MatrixOrd::Frobenius),
            "nuc" => Some(MatrixOrd::Nuclear),
            "inf" => Some(MatrixOrd::Rows { largest: true }),
            "-inf" => Some(MatrixOrd::Rows { largest: false }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{matmul, transpose};

    fn tensor(shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_vec(shape, values.to_vec()).unwrap()
    }

    fn assert_close(actual: &Tensor, expected: &[f64]) {
        assert_close_within(actual, expected, 1e-12);
    }

    fn assert_close_within(actual: &Tensor, expected: &[f64], tolerance: f64) {
        let values = actual.to_vec();
        assert_eq!(values.len(), expected.len(), "{actual}");
        for (a, e) in values.iter().zip(expected) {
            assert!((a - e).abs() <= tolerance * (1.0 + e.abs()), "{actual} != {expected:?}");
        }
    }

    fn scalar(x: Result<Tensor, TensorError>) -> Result<f64, TensorError> {
        x.map(|t| t.to_scalar().unwrap())
    }

    #[test]
    fn inverse_of_a_matrix() {
        let a = tensor(&[2, 2], &[4.0, 7.0, 2.0, 6.0]);
        assert_close(&inv(&a).unwrap(), &[0.6, -0.7, -0.2, 0.4]);
        assert_close(&inv(&transpose(&a)).unwrap(), &[0.6, -0.2, -0.7, 0.4]);
        assert_eq!(inv(&Tensor::zeros(&[0, 0]).unwrap()).unwrap().shape(), [0, 0]);
        assert_eq!(
            inv(&tensor(&[2, 2], &[1.0, 2.0, 2.0, 4.0])).unwrap_err().to_string(),
            "inv: the matrix is singular"
        );
        assert_eq!(
            inv(&Tensor::zeros(&[2, 3]).unwrap()).unwrap_err().to_string(),
            "inv needs a square matrix, got Tensor[2][3]"
        );
        assert_eq!(
            inv(&Tensor::zeros(&[2]).unwrap()).unwrap_err().to_string(),
            "inv needs a square matrix, got Tensor[2]"
        );
    }

    #[test]
    fn determinants_are_exact_for_small_integers() {
        let det = |shape: &[usize], values: &[f64]| scalar(det(&tensor(shape, values)));
        assert_eq!(det(&[2, 2], &[1.0, 2.0, 3.0, 4.0]), Ok(-2.0));
        assert_eq!(det(&[2, 2], &[0.0, 1.0, 1.0, 0.0]), Ok(-1.0));
        assert_eq!(det(&[3, 3], &[2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 4.0]), Ok(24.0));
        assert_eq!(det(&[2, 2], &[1.0, 2.0, 2.0, 4.0]), Ok(0.0));
        assert_eq!(det(&[0, 0], &[]), Ok(1.0));
        assert_eq!(det(&[1, 1], &[5.0]), Ok(5.0));
        assert_eq!(
            scalar(super::det(&transpose(&tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0])))),
            Ok(-2.0)
        );
    }

    #[test]
    fn subnormal_pivots_do_not_turn_into_nan() {
        // NumPy 2.4: det 1e-310, solve [1.0, 1.0]; the inverse's first entry overflows (NumPy's
        // own OpenBLAS gives [[inf, nan], [0, 1]]; the exact inverse has 0 off the diagonal).
        let a = tensor(&[2, 2], &[1e-310, 0.0, 0.0, 1.0]);
        assert_eq!(scalar(det(&a)), Ok(1e-310));
        assert_eq!(solve(&a, &tensor(&[2], &[1e-310, 1.0])).unwrap().to_vec(), [1.0, 1.0]);
        assert_eq!(inv(&a).unwrap().to_vec(), [f64::INFINITY, 0.0, 0.0, 1.0]);
        let (sign, log) = slogdet(&a).unwrap();
        assert_eq!((sign.to_scalar(), log.to_scalar()), (Ok(1.0), Ok(1e-310f64.ln())));
        // A permutation with a subnormal pivot keeps its sign.
        let b = tensor(&[2, 2], &[0.0, 1.0, -1e-310, 0.0]);
        assert_eq!(scalar(det(&b)), Ok(1e-310));
    }

    #[test]
    fn batched_determinants_and_inverses() {
        // Computed once with NumPy 2.4: np.linalg.det, np.linalg.slogdet, np.linalg.inv.
        let x = tensor(&[2, 2, 2], &[1.0, 2.0, 3.0, 4.0, 2.0, 0.0, 0.0, 0.5]);
        let d = det(&x).unwrap();
        assert_eq!((d.shape(), d.to_vec()), (&[2][..], vec![-2.0, 1.0]));
        assert_close(&inv(&x).unwrap(), &[-2.0, 1.0, 1.5, -0.5, 0.5, 0.0, 0.0, 2.0]);
        let (sign, log) = slogdet(&x).unwrap();
        assert_eq!(sign.to_vec(), [-1.0, 1.0]);
        assert_close(&log, &[std::f64::consts::LN_2, 0.0]);
        let (sign, log) = slogdet(&tensor(&[2, 2], &[1.0, 2.0, 2.0, 4.0])).unwrap();
        assert_eq!((sign.to_scalar(), log.to_scalar()), (Ok(0.0), Ok(f64::NEG_INFINITY)));
        // A determinant beyond the range of f64 still has its logarithm.
        let big = Tensor::eye(40).unwrap().map(|x| x * 1e10);
        let (sign, log) = slogdet(&big).unwrap();
        assert_eq!(sign.to_scalar(), Ok(1.0));
        assert_close(&log, &[40.0 * 1e10f64.ln()]);
        assert_eq!(det(&Tensor::zeros(&[3, 0, 0]).unwrap()).unwrap().to_vec(), [1.0; 3]);
    }

    #[test]
    fn solve_vectors_matrices_and_batches() {
        let a = tensor(&[2, 2], &[3.0, 1.0, 1.0, 2.0]);
        let x = solve(&a, &tensor(&[2], &[9.0, 8.0])).unwrap();
        assert_eq!(x.shape(), [2]);
        assert_close(&x, &[2.0, 3.0]);
        let b = tensor(&[2, 2], &[9.0, 1.0, 8.0, 2.0]);
        let xs = solve(&a, &b).unwrap();
        assert_close(&matmul(&a, &xs).unwrap(), &b.to_vec());
        assert_eq!(
            solve(&a, &tensor(&[3], &[1.0, 2.0, 3.0])).unwrap_err().to_string(),
            "solve: right-hand side Tensor[3] does not match the matrix Tensor[2][2]"
        );
        assert_eq!(
            solve(&tensor(&[2, 2], &[1.0, 2.0, 2.0, 4.0]), &tensor(&[2], &[1.0, 1.0]))
                .unwrap_err()
                .to_string(),
            "solve: the matrix is singular"
        );
        assert_eq!(
            solve(&Tensor::zeros(&[0, 0]).unwrap(), &Tensor::zeros(&[0]).unwrap()).unwrap().shape(),
            [0]
        );
        // Computed once with NumPy 2.4: a stack of two matrices against one vector, and one
        // matrix against a stack of right-hand sides.
        let stack = tensor(&[2, 2, 2], &[3.0, 1.0, 1.0, 2.0, 2.0, 0.0, 0.0, 4.0]);
        let x = solve(&stack, &tensor(&[2], &[9.0, 8.0])).unwrap();
        assert_eq!(x.shape(), [2, 2]);
        assert_close(&x, &[2.0, 3.0, 4.5, 2.0]);
        let rhs = tensor(&[3, 2, 1], &[9.0, 8.0, 1.0, 0.0, 0.0, 1.0]);
        let x = solve(&a, &rhs).unwrap();
        assert_eq!(x.shape(), [3, 2, 1]);
        assert_close(&x, &[2.0, 3.0, 0.4, -0.2, -0.2, 0.6]);
        let x = solve(&stack, &tensor(&[1, 2, 1], &[9.0, 8.0])).unwrap();
        assert_close(&x, &[2.0, 3.0, 4.5, 2.0]);
    }

    #[test]
    fn cholesky_factors_positive_definite_matrices() {
        let a = tensor(&[2, 2], &[4.0, 2.0, 2.0, 3.0]);
        let factor = cholesky(&a).unwrap();
        assert_close(&factor, &[2.0, 0.0, 1.0, 2f64.sqrt()]);
        assert_close(&matmul(&factor, &transpose(&factor)).unwrap(), &a.to_vec());
        assert_eq!(
            cholesky(&tensor(&[2, 2], &[1.0, 2.0, 2.0, 1.0])).unwrap_err().to_string(),
            "cholesky: the matrix is not positive definite"
        );
        assert!(cholesky(&Tensor::zeros(&[1, 2]).unwrap()).is_err());
        assert_eq!(
            row_major_layout("det", 46_341).unwrap_err().to_string(),
            "det: LAPACK failed: a 46341 by 46341 matrix is larger than LAPACK takes"
        );
        let stack = tensor(&[2, 2, 2], &[4.0, 2.0, 2.0, 3.0, 1.0, 0.0, 0.0, 9.0]);
        assert_close(&cholesky(&stack).unwrap(), &[2.0, 0.0, 1.0, 2f64.sqrt(), 1.0, 0.0, 0.0, 3.0]);
    }

    /// `a` (`[m][n]`) from its factors, for checks that do not depend on signs.
    fn product(factors: &[&Tensor]) -> Tensor {
        factors.iter().skip(1).fold((*factors[0]).clone(), |acc, f| matmul(&acc, f).unwrap())
    }

    const A: [f64; 12] = [4.0, 1.0, -2.0, 2.0, 1.0, 3.0, 0.5, -1.0, -2.0, 0.5, 5.0, 1.0];

    #[test]
    fn qr_matches_numpy() {
        // np.linalg.qr(A) (mode "reduced") of the 4 x 3 A below, computed once with NumPy 2.4.
        let a = tensor(&[4, 3], &A);
        let (q, r) = qr(&a).unwrap();
        assert_eq!((q.shape(), r.shape()), (&[4, 3][..], &[3, 3][..]));
        #[rustfmt::skip]
        assert_close(&r, &[
            -4.527692569068709, -1.7669044171975448, 0.5521576303742326,
            0.0, -4.9877899695644565, -1.799516381176196,
            0.0, 0.0, 3.8022181348652313,
        ]);
        assert_close(&product(&[&q, &r]), &A);
        let qtq = matmul(&transpose(&q), &q).unwrap();
        assert_close(&qtq, &Tensor::eye(3).unwrap().to_vec());
        // Wide matrices and batches.
        let (q, r) = qr(&transpose(&a)).unwrap();
        assert_eq!((q.shape(), r.shape()), (&[3, 3][..], &[3, 4][..]));
        assert_close(&product(&[&q, &r]), &transpose(&a).to_vec());
        let (q, r) = qr(&tensor(&[2, 2, 1], &[3.0, 4.0, 0.0, -2.0])).unwrap();
        assert_eq!((q.shape(), r.shape()), (&[2, 2, 1][..], &[2, 1, 1][..]));
        assert_close(&r, &[-5.0, -2.0]);
    }

    #[test]
    fn svd_and_eigh_match_numpy() {
        // np.linalg.svd(A, full_matrices=False)[1] and np.linalg.eigh of AᵀA, computed once
        // with NumPy 2.4.
        let a = tensor(&[4, 3], &A);
        let (u, s, vh) = svd(&a).unwrap();
        assert_close(&s, &[5.919680278101912, 4.670192665146719, 3.105911440376409]);
        let diag = crate::diag(&s).unwrap();
        assert_close(&product(&[&u, &diag, &vh]), &A);
        assert_close(&svdvals(&a).unwrap(), &s.to_vec());
        assert_close(&svdvals(&transpose(&a)).unwrap(), &s.to_vec());
        let gram = matmul(&transpose(&a), &a).unwrap();
        let (w, v) = eigh(&gram).unwrap();
        assert_close_within(&w, &[9.64668587546106, 21.810699529590224, 35.04261459494871], 1e-11);
        assert_close(&eigvalsh(&gram).unwrap(), &w.to_vec());
        let vw = product(&[&v, &crate::diag(&w).unwrap(), &transpose(&v)]);
        assert_close_within(&vw, &gram.to_vec(), 1e-11);
        // Only the symmetric part counts.
        let skewed = tensor(&[2, 2], &[2.0, 3.0, -1.0, 2.0]);
        assert_close(&eigvalsh(&skewed).unwrap(), &[1.0, 3.0]);
        assert!(svd(&tensor(&[2, 2], &[f64::NAN, 0.0, 0.0, 1.0])).is_err());
        assert_eq!(svdvals(&Tensor::zeros(&[2, 0, 3]).unwrap()).unwrap().shape(), [2, 0]);
    }

    #[test]
    fn pinv_lstsq_and_matrix_norms_match_numpy() {
        // Computed once with NumPy 2.4: np.linalg.pinv, np.linalg.lstsq(rcond=None)[0] and
        // np.linalg.matrix_norm of the 4 x 3 A.
        let a = tensor(&[4, 3], &A);
        let p = pinv(&a, default_rtol(4, 3)).unwrap();
        assert_eq!(p.shape(), [3, 4]);
        assert_close(&product(&[&a, &p, &a]), &A);
        let rank_one = tensor(&[2, 2], &[1.0, 2.0, 2.0, 4.0]);
        let expected =
            [0.039999999999999994, 0.07999999999999999, 0.07999999999999999, 0.15999999999999998];
        assert_close(&pinv(&rank_one, default_rtol(2, 2)).unwrap(), &expected);
        let b = tensor(&[4], &[1.0, 2.0, 3.0, 4.0]);
        let x = lstsq(&a, &b, default_rtol(4, 3)).unwrap();
        #[rustfmt::skip]
        assert_close(&x, &[0.27777024277770235, 0.6782856367828564, -0.15176997151769958]);
        let norm = |ord| matrix_norm(&a, ord).unwrap().to_scalar().unwrap();
        assert!((norm(MatrixOrd::Frobenius) - 8.154753215150045).abs() < 1e-12);
        assert!((norm(MatrixOrd::Nuclear) - 13.695784383625043).abs() < 1e-12);
        assert!((norm(MatrixOrd::Spectral { largest: true }) - 5.919680278101913).abs() < 1e-12);
        assert!((norm(MatrixOrd::Spectral { largest: false }) - 3.1059114403764103).abs() < 1e-12);
        assert_eq!(norm(MatrixOrd::Columns { largest: true }), 8.0);
        assert_eq!(norm(MatrixOrd::Columns { largest: false }), 7.0);
        assert_eq!(norm(MatrixOrd::Rows { largest: true }), 7.0);
        assert_eq!(norm(MatrixOrd::Rows { largest: false }), 3.5);
    }
}
