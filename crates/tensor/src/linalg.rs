//! Linear algebra on LAPACK through ndarray-linalg: `inv`, `det`, `solve` and `cholesky`.
//!
//! Singularity is what LAPACK's LU factorisation reports: an exactly zero pivot. Nearly singular
//! matrices give large, inaccurate results, as in NumPy.

use ndarray::{Array2, Axis, Ix2};
use ndarray_linalg::error::LinalgError;
use ndarray_linalg::{Cholesky, Inverse, Lapack, MatrixLayout, Transpose, UPLO};

use super::Tensor;
use super::error::TensorError;

/// The inverse of a square matrix.
pub fn inv(matrix: &Tensor) -> Result<Tensor, TensorError> {
    let square = square_matrix("inv", matrix)?;
    if square.is_empty() {
        return Ok(matrix.clone());
    }
    row_major_layout("inv", square.nrows())?;
    let inverse = square.inv().map_err(|error| lapack_error("inv", error))?;
    Ok(Tensor::from(inverse.into_dyn()))
}

/// The determinant of a square matrix: the product of the LU factorisation's pivots, so that
/// integer matrices give exact integers where the arithmetic allows (1 for a 0 by 0 matrix, 0 for
/// an exactly singular one).
pub fn det(matrix: &Tensor) -> Result<f64, TensorError> {
    let mut square = square_matrix("det", matrix)?;
    let n = square.nrows();
    if n == 0 {
        return Ok(1.0);
    }
    let layout = row_major_layout("det", n)?;
    let Some(entries) = square.as_slice_mut() else {
        return Err(TensorError::Lapack {
            op: "det",
            reason: "the matrix is not contiguous".to_owned(),
        });
    };
    // The only failure LAPACK reports for a well-formed square matrix is an exactly zero pivot.
    let Ok(pivots) = f64::lu(layout, entries) else {
        return Ok(0.0);
    };
    // Each pivot that swapped a row flips the sign; LAPACK numbers rows from 1.
    let swaps = pivots
        .iter()
        .enumerate()
        .filter(|&(row, &pivot)| usize::try_from(pivot) != Ok(row + 1))
        .count();
    let sign = if swaps % 2 == 0 { 1.0 } else { -1.0 };
    Ok(sign * square.diag().product())
}

/// The solution `x` of `a @ x = b` for a square `a` and a vector `b` (giving a vector) or a
/// matrix `b` (giving a matrix, one solution per column).
pub fn solve(a: &Tensor, b: &Tensor) -> Result<Tensor, TensorError> {
    let mut factors = square_matrix("solve", a)?;
    let n = factors.nrows();
    let mismatch = || TensorError::Solve { matrix: a.shape().to_vec(), rhs: b.shape().to_vec() };
    let mut columns = match *b.shape() {
        [rows] if rows == n => b.array().to_owned().insert_axis(Axis(1)),
        [rows, _] if rows == n => b.array().to_owned(),
        _ => return Err(mismatch()),
    }
    .into_dimensionality::<Ix2>()
    .map_err(|_| mismatch())?;
    if n == 0 {
        return Ok(b.clone());
    }
    let layout = row_major_layout("solve", n)?;
    let Some(entries) = factors.as_slice_mut() else {
        return Err(TensorError::Lapack {
            op: "solve",
            reason: "the matrix is not contiguous".to_owned(),
        });
    };
    let pivots = f64::lu(layout, entries)
        .map_err(|error| lapack_error("solve", LinalgError::from(error)))?;
    let mut column = vec![0.0; n];
    for mut rhs in columns.columns_mut() {
        for (slot, &value) in column.iter_mut().zip(rhs.iter()) {
            *slot = value;
        }
        f64::solve(layout, Transpose::No, entries, &pivots, &mut column)
            .map_err(|error| lapack_error("solve", LinalgError::from(error)))?;
        for (slot, &value) in rhs.iter_mut().zip(&column) {
            *slot = value;
        }
    }
    let solution = match b.rank() {
        1 => columns.index_axis_move(Axis(1), 0).into_dyn(),
        _ => columns.into_dyn(),
    };
    Ok(Tensor::from(solution))
}

/// The lower-triangular `L` with `L @ transpose(L) = a`, for a symmetric positive definite `a`
/// (only its lower triangle is read).
pub fn cholesky(matrix: &Tensor) -> Result<Tensor, TensorError> {
    let square = square_matrix("cholesky", matrix)?;
    if square.is_empty() {
        return Ok(matrix.clone());
    }
    row_major_layout("cholesky", square.nrows())?;
    let factor = square.cholesky(UPLO::Lower).map_err(|error| match error {
        LinalgError::Lapack(_) => TensorError::NotPositiveDefinite,
        other => lapack_error("cholesky", other),
    })?;
    Ok(Tensor::from(factor.into_dyn()))
}

/// A row-major copy of a square matrix, which LAPACK overwrites.
fn square_matrix(op: &'static str, matrix: &Tensor) -> Result<Array2<f64>, TensorError> {
    match matrix.shape() {
        &[rows, cols] if rows == cols => matrix
            .array()
            .as_standard_layout()
            .into_owned()
            .into_dimensionality::<Ix2>()
            .map_err(|_| TensorError::NotSquare { op, shape: matrix.shape().to_vec() }),
        &[_, _] => Err(TensorError::NotSquare { op, shape: matrix.shape().to_vec() }),
        shape => Err(TensorError::Rank { op, expected: "a square matrix", shape: shape.to_vec() }),
    }
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

/// Maps a failure of an LU-based routine. For the well-formed square matrices this module passes,
/// the only error LAPACK itself reports is an exactly zero pivot, that is, a singular matrix.
fn lapack_error(op: &'static str, error: LinalgError) -> TensorError {
    match error {
        LinalgError::Lapack(_) => TensorError::Singular { op },
        other => TensorError::Lapack { op, reason: other.to_string() },
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
        let values = actual.to_vec();
        assert_eq!(values.len(), expected.len(), "{actual}");
        for (a, e) in values.iter().zip(expected) {
            assert!((a - e).abs() <= 1e-12 * (1.0 + e.abs()), "{actual} != {expected:?}");
        }
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
        assert_eq!(det(&tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0])), Ok(-2.0));
        assert_eq!(det(&tensor(&[2, 2], &[0.0, 1.0, 1.0, 0.0])), Ok(-1.0));
        assert_eq!(det(&tensor(&[3, 3], &[2.0, 0.0, 0.0, 0.0, 3.0, 0.0, 0.0, 0.0, 4.0])), Ok(24.0));
        assert_eq!(det(&tensor(&[2, 2], &[1.0, 2.0, 2.0, 4.0])), Ok(0.0));
        assert_eq!(det(&Tensor::zeros(&[0, 0]).unwrap()), Ok(1.0));
        assert_eq!(det(&tensor(&[1, 1], &[5.0])), Ok(5.0));
        assert_eq!(det(&transpose(&tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0]))), Ok(-2.0));
    }

    #[test]
    fn solve_vectors_and_matrices() {
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
    }
}
