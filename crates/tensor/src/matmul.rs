//! The matrix product `@` with NumPy's `matmul` rules, on BLAS (`dgemm`, `dgemv`, `ddot`).
//!
//! `[m][k] @ [k][n] -> [m][n]`, `[k] @ [k][n] -> [n]`, `[m][k] @ [k] -> [m]`, `[k] @ [k] -> []`;
//! with a rank above 2 the leading axes are batch axes that broadcast, and a rank-1 operand is a
//! matrix with one row (left) or one column (right) whose axis the result drops. Operands that
//! are neither row- nor column-major (slices with steps, permuted batches) are copied to row-major
//! first, because BLAS only takes those two layouts; a column-major operand (a transpose) goes to
//! BLAS as it is, with the transpose flag.
//!
//! The product of two matrices is written by `dgemm` straight into a fresh buffer: BLAS overwrites
//! every element when `beta` is 0, so zero-filling the buffer first (as ndarray's
//! `general_mat_mul` needs, to hand it an initialised array) would only write it twice.

use std::ffi::c_int;

use ndarray::linalg::{general_mat_mul, general_mat_vec_mul};
use ndarray::{
    Array, Array1, Array2, ArrayD, ArrayView, ArrayView2, ArrayViewD, Axis, CowArray, Dimension,
    Ix1, Ix2, Ix3, IxDyn,
};

use super::Tensor;
use super::allocation::check_allocation;
use super::broadcast::broadcast_shapes;
use super::buffer;
use super::error::TensorError;

/// The operands' dimensions as `matmul` sees them.
struct Plan {
    batch: Vec<usize>,
    m: usize,
    n: usize,
    result_shape: Vec<usize>,
}

/// The shape of `lhs @ rhs`, or the error that product would raise.
pub fn matmul_shape(lhs: &[usize], rhs: &[usize]) -> Result<Vec<usize>, TensorError> {
    plan(lhs, rhs).map(|plan| plan.result_shape)
}

/// `lhs @ rhs` under NumPy's `matmul` rules (see the module documentation).
pub fn matmul(lhs: &Tensor, rhs: &Tensor) -> Result<Tensor, TensorError> {
    let plan = plan(lhs.shape(), rhs.shape())?;
    check_allocation(&plan.result_shape)?;
    let lhs_view = lhs.view();
    let rhs_view = rhs.view();
    let product = match (lhs.rank(), rhs.rank()) {
        (1, 1) => {
            let lhs_vector = fixed::<Ix1>(lhs_view)?;
            Tensor::scalar(lhs_vector.dot(&fixed::<Ix1>(rhs_view)?))
        }
        (2, 1) => {
            let matrix = blas_ready(fixed::<Ix2>(lhs_view)?);
            let mut result = Array1::zeros(plan.m);
            general_mat_vec_mul(1.0, &matrix, &fixed::<Ix1>(rhs_view)?, 0.0, &mut result);
            Tensor::from(result.into_dyn())
        }
        (1, 2) => {
            // `v @ B` is `B^T v`; the transpose is a view that BLAS reads column-major.
            let matrix = blas_ready(fixed::<Ix2>(rhs_view)?);
            let mut result = Array1::zeros(plan.n);
            general_mat_vec_mul(1.0, &matrix.t(), &fixed::<Ix1>(lhs_view)?, 0.0, &mut result);
            Tensor::from(result.into_dyn())
        }
        (2, 2) => {
            let lhs_matrix = blas_ready(fixed::<Ix2>(lhs_view)?);
            let rhs_matrix = blas_ready(fixed::<Ix2>(rhs_view)?);
            let result = match dgemm_into_new(&lhs_matrix.view(), &rhs_matrix.view()) {
                Some(product) => product,
                None => {
                    let mut result = owned::<Ix2>(buffer::zeros(&[plan.m, plan.n]))?;
                    general_mat_mul(1.0, &lhs_matrix, &rhs_matrix, 0.0, &mut result);
                    result
                }
            };
            Tensor::from(result.into_dyn())
        }
        _ => batched(lhs, rhs, &plan)?,
    };
    Ok(product)
}

fn plan(lhs: &[usize], rhs: &[usize]) -> Result<Plan, TensorError> {
    let (lhs_batch, m, lhs_inner) = match lhs {
        [] => return Err(scalar_operand(lhs)),
        [k] => (&[][..], 1, *k),
        [batch @ .., m, k] => (batch, *m, *k),
    };
    let (rhs_batch, rhs_inner, n) = match rhs {
        [] => return Err(scalar_operand(rhs)),
        [k] => (&[][..], *k, 1),
        [batch @ .., k, n] => (batch, *k, *n),
    };
    if lhs_inner != rhs_inner {
        return Err(TensorError::MatmulInner {
            lhs: lhs.to_vec(),
            rhs: rhs.to_vec(),
            lhs_inner,
            rhs_inner,
        });
    }
    let batch = broadcast_shapes(lhs_batch, rhs_batch)
        .map_err(|_| TensorError::MatmulBatch { lhs: lhs.to_vec(), rhs: rhs.to_vec() })?;
    let mut result_shape = batch.clone();
    if lhs.len() > 1 {
        result_shape.push(m);
    }
    if rhs.len() > 1 {
        result_shape.push(n);
    }
    Ok(Plan { batch, m, n, result_shape })
}

fn scalar_operand(shape: &[usize]) -> TensorError {
    TensorError::Rank { op: "matmul", expected: "tensors of rank 1 or more", shape: shape.to_vec() }
}

/// Products with batch axes: one BLAS call per pair of matrices, written straight into the
/// result.
fn batched(lhs: &Tensor, rhs: &Tensor, plan: &Plan) -> Result<Tensor, TensorError> {
    // A vector is a one-row (left) or one-column (right) matrix for the duration of the product.
    let lhs_view = match lhs.rank() {
        1 => lhs.view().insert_axis(Axis(0)),
        _ => lhs.view(),
    };
    let rhs_view = match rhs.rank() {
        1 => rhs.view().insert_axis(Axis(1)),
        _ => rhs.view(),
    };
    let lhs_standard = lhs_view.as_standard_layout();
    let rhs_standard = rhs_view.as_standard_layout();
    let lhs_stack = as_stack(&lhs_standard)?;
    let rhs_stack = as_stack(&rhs_standard)?;
    let lhs_strides = batch_strides(&lhs_view.shape()[..lhs_view.ndim() - 2], &plan.batch);
    let rhs_strides = batch_strides(&rhs_view.shape()[..rhs_view.ndim() - 2], &plan.batch);

    let count = plan.batch.iter().product();
    let mut result = owned::<Ix3>(buffer::zeros(&[count, plan.m, plan.n]))?;
    for (flat, mut matrix) in result.outer_iter_mut().enumerate() {
        // Decompose the flat batch position into coordinates, last axis fastest, and map them
        // to each operand's own (possibly broadcast) batch position.
        let (mut lhs_position, mut rhs_position, mut rest) = (0, 0, flat);
        for ((&extent, &lhs_stride), &rhs_stride) in
            plan.batch.iter().zip(&lhs_strides).zip(&rhs_strides).rev()
        {
            let coordinate = rest % extent;
            rest /= extent;
            lhs_position += coordinate * lhs_stride;
            rhs_position += coordinate * rhs_stride;
        }
        general_mat_mul(
            1.0,
            &lhs_stack.index_axis(Axis(0), lhs_position),
            &rhs_stack.index_axis(Axis(0), rhs_position),
            0.0,
            &mut matrix,
        );
    }
    let result = result.into_shape_with_order(IxDyn(&plan.result_shape)).map_err(|_| {
        TensorError::MatmulBatch { lhs: lhs.shape().to_vec(), rhs: rhs.shape().to_vec() }
    })?;
    Ok(Tensor::from(result))
}

/// A row-major operand of rank 2 or more viewed as a stack of matrices `[count][rows][cols]`.
fn as_stack<'a>(
    operand: &'a CowArray<'_, f64, IxDyn>,
) -> Result<ArrayView<'a, f64, Ix3>, TensorError> {
    let shape = operand.shape();
    let error = || TensorError::Rank {
        op: "matmul",
        expected: "a row-major operand",
        shape: shape.to_vec(),
    };
    let [batch @ .., rows, cols] = shape else {
        return Err(error());
    };
    let count = batch.iter().product::<usize>();
    operand.view().into_shape_with_order((count, *rows, *cols)).map_err(|_| error())
}

/// For each axis of the result's batch shape, how far one step along it moves in an operand's
/// stack of matrices: 0 where the operand lacks the axis or broadcasts it from extent 1.
fn batch_strides(operand_batch: &[usize], batch: &[usize]) -> Vec<usize> {
    let missing = batch.len() - operand_batch.len();
    let mut strides = vec![0; batch.len()];
    let mut stride = 1;
    for (axis, &extent) in operand_batch.iter().enumerate().rev() {
        if extent != 1 {
            strides[missing + axis] = stride;
        }
        stride *= extent;
    }
    strides
}

/// Converts a dynamic-rank view to a fixed rank the caller has already checked.
fn fixed<D: Dimension>(view: ArrayViewD<'_, f64>) -> Result<ArrayView<'_, f64, D>, TensorError> {
    let shape = view.shape().to_vec();
    view.into_dimensionality::<D>().map_err(|_| TensorError::Rank {
        op: "matmul",
        expected: "a vector or a matrix",
        shape,
    })
}

/// Converts a dynamic-rank result buffer to the fixed rank it was created with.
fn owned<D: Dimension>(array: ArrayD<f64>) -> Result<Array<f64, D>, TensorError> {
    let shape = array.shape().to_vec();
    array.into_dimensionality::<D>().map_err(|_| TensorError::Rank {
        op: "matmul",
        expected: "a vector or a matrix",
        shape,
    })
}

unsafe extern "C" {
    /// CBLAS's `C = alpha op(A) op(B) + beta C` on doubles, from the OpenBLAS that ndarray links.
    pub(super) fn cblas_dgemm(
        layout: c_int,
        trans_a: c_int,
        trans_b: c_int,
        m: c_int,
        n: c_int,
        k: c_int,
        alpha: f64,
        a: *const f64,
        lda: c_int,
        b: *const f64,
        ldb: c_int,
        beta: f64,
        c: *mut f64,
        ldc: c_int,
    );
}

/// CBLAS's `CblasRowMajor`, `CblasNoTrans` and `CblasTrans`.
pub(super) const CBLAS_ROW_MAJOR: c_int = 101;
pub(super) const CBLAS_NO_TRANS: c_int = 111;
pub(super) const CBLAS_TRANS: c_int = 112;

/// Up to this extent on every axis, ndarray multiplies without BLAS (its `GEMM_BLAS_CUTOFF`); such
/// products keep going through ndarray, so that their results stay what they were.
const BLAS_CUTOFF: usize = 7;

/// How BLAS reads a matrix that [`blas_ready`] returned: its transpose flag and leading
/// dimension, or `None` for a layout BLAS cannot take.
fn blas_operand(matrix: &ArrayView2<'_, f64>) -> Option<(c_int, c_int)> {
    let (rows, cols) = matrix.dim();
    // A row-major matrix has its element (i, j) at offset i * cols + j from the first one, a
    // column-major one at j * rows + i: BLAS reads the latter as the transpose of a row-major
    // `cols` by `rows` matrix.
    if matrix.is_standard_layout() {
        Some((CBLAS_NO_TRANS, c_int::try_from(cols.max(1)).ok()?))
    } else if matrix.t().is_standard_layout() {
        Some((CBLAS_TRANS, c_int::try_from(rows.max(1)).ok()?))
    } else {
        None
    }
}

/// `lhs @ rhs` written by one `dgemm` into a new row-major buffer, or `None` when ndarray should
/// compute it instead: small or empty products, and extents beyond BLAS's 32-bit integers.
fn dgemm_into_new(lhs: &ArrayView2<'_, f64>, rhs: &ArrayView2<'_, f64>) -> Option<Array2<f64>> {
    let ((m, k), n) = (lhs.dim(), rhs.dim().1);
    if m.max(n).max(k) <= BLAS_CUTOFF || m == 0 || n == 0 || k == 0 {
        return None;
    }
    let (trans_a, lda) = blas_operand(lhs)?;
    let (trans_b, ldb) = blas_operand(rhs)?;
    let (m_blas, n_blas, k_blas) =
        (c_int::try_from(m).ok()?, c_int::try_from(n).ok()?, c_int::try_from(k).ok()?);
    let len = m.checked_mul(n)?;
    let mut values = buffer::with_capacity(len);
    // SAFETY: `lhs` is m by k and `rhs` k by n, both laid out as their flags and leading
    // dimensions say (see `blas_operand`), so BLAS reads only their elements; `values` has room
    // for the m by n row-major result (leading dimension n), and with `beta` 0 BLAS writes every
    // one of those elements without reading any ("when beta is zero, C need not be set on
    // input", in the BLAS reference), which makes the first `len` initialised.
    unsafe {
        cblas_dgemm(
            CBLAS_ROW_MAJOR,
            trans_a,
            trans_b,
            m_blas,
            n_blas,
            k_blas,
            1.0,
            lhs.as_ptr(),
            lda,
            rhs.as_ptr(),
            ldb,
            0.0,
            values.as_mut_ptr(),
            n_blas,
        );
        values.set_len(len);
    }
    Array2::from_shape_vec((m, n), values).ok()
}

/// The matrix itself when BLAS can read it (row- or column-major), otherwise a row-major copy.
fn blas_ready(matrix: ArrayView2<'_, f64>) -> CowArray<'_, f64, Ix2> {
    if matrix.is_standard_layout() || matrix.t().is_standard_layout() {
        CowArray::from(matrix)
    } else {
        CowArray::from(matrix.as_standard_layout().into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BinaryOp, Index, binary, permute, transpose};

    fn tensor(shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_vec(shape, values.to_vec()).unwrap()
    }

    fn counting(shape: &[usize]) -> Tensor {
        let len = shape.iter().product::<usize>();
        Tensor::from_vec(shape, (1..=len).map(|i| i as f64).collect()).unwrap()
    }

    /// The textbook triple loop, to check every BLAS path against.
    fn reference(lhs: &Tensor, rhs: &Tensor) -> Vec<f64> {
        let (a, b) = (lhs.view(), rhs.view());
        let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
        let mut result = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                result[i * n + j] =
                    (0..k).map(|p| a[[i, p].as_slice()] * b[[p, j].as_slice()]).sum();
            }
        }
        result
    }

    #[test]
    fn the_specification_example() {
        let product = matmul(&tensor(&[2], &[1.0, 2.0]), &tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0]));
        assert_eq!(product.unwrap().to_string(), "[7.0, 10.0]");
    }

    #[test]
    fn every_rank_combination() {
        let matrix = counting(&[2, 3]);
        let vector = tensor(&[3], &[1.0, 0.0, -1.0]);
        assert_eq!(matmul(&matrix, &vector).unwrap().to_string(), "[-2.0, -2.0]");
        let dot = matmul(&vector, &counting(&[3])).unwrap();
        assert_eq!((dot.rank(), dot.to_scalar()), (0, Ok(-2.0)));
        let square = matmul(&matrix, &transpose(&matrix)).unwrap();
        assert_eq!(square.to_string(), "[[14.0, 32.0], [32.0, 77.0]]");
        assert_eq!(matmul(&counting(&[1, 2]), &counting(&[2, 1])).unwrap().to_string(), "[[5.0]]");
    }

    #[test]
    fn batched_products_broadcast_batch_axes() {
        let stack = counting(&[2, 2, 3]);
        let matrix = counting(&[3, 2]);
        let product = matmul(&stack, &matrix).unwrap();
        assert_eq!(product.shape(), [2, 2, 2]);
        assert_eq!(
            product.to_string(),
            "[[[22.0, 28.0], [49.0, 64.0]], [[76.0, 100.0], [103.0, 136.0]]]"
        );
        // Batch axes broadcast against each other: [2][1] and [3] give [2][3].
        let lhs = counting(&[2, 1, 2, 2]);
        let rhs = counting(&[3, 2, 1]);
        let product = matmul(&lhs, &rhs).unwrap();
        assert_eq!(product.shape(), [2, 3, 2, 1]);
        for i in 0..2 {
            for j in 0..3 {
                let a = crate::get(&lhs, &[Index::At(i), Index::At(0)]).unwrap();
                let b = crate::get(&rhs, &[Index::At(j)]).unwrap();
                let expected = reference(&a, &b);
                let actual = crate::get(&product, &[Index::At(i), Index::At(j)]).unwrap();
                assert_eq!(actual.to_vec(), expected);
            }
        }
        // Vectors on either side of a stack drop their axis from the result.
        let left = matmul(&tensor(&[2], &[1.0, 1.0]), &counting(&[3, 2, 2])).unwrap();
        assert_eq!(left.to_string(), "[[4.0, 6.0], [12.0, 14.0], [20.0, 22.0]]");
        let right = matmul(&counting(&[3, 2, 2]), &tensor(&[2], &[1.0, 1.0])).unwrap();
        assert_eq!(right.to_string(), "[[3.0, 7.0], [11.0, 15.0], [19.0, 23.0]]");
    }

    #[test]
    fn strided_and_transposed_operands_give_the_same_products() {
        // Large enough that ndarray hands the product to BLAS rather than its own kernel.
        let a = counting(&[80, 70]);
        let b = binary(BinaryOp::Rem, counting(&[70, 90]), Tensor::scalar(7.0)).unwrap();
        let expected = reference(&a, &b);
        assert_eq!(matmul(&a, &b).unwrap().to_vec(), expected);
        let a_transposed = Tensor::from(transpose(&a).array().as_standard_layout().into_owned());
        assert_eq!(matmul(&transpose(&a_transposed), &b).unwrap().to_vec(), expected);
        // Every other column of a wider matrix is neither row- nor column-major.
        let wide = counting(&[70, 180]);
        let stepped = Tensor::from(wide.into_array().slice_move(ndarray::s![.., ..;2]).into_dyn());
        assert_eq!(matmul(&a, &stepped).unwrap().to_vec(), reference(&a, &stepped));
        let permuted = permute(&counting(&[3, 2, 4]), &[1, 0, 2]).unwrap();
        let batched = matmul(&permuted, &counting(&[4, 1])).unwrap();
        assert_eq!(batched.to_vec(), [30.0, 110.0, 190.0, 70.0, 150.0, 230.0]);
        let column = matmul(&transpose(&counting(&[2, 3])), &tensor(&[2], &[1.0, 1.0])).unwrap();
        assert_eq!(column.to_vec(), [5.0, 7.0, 9.0]);
    }

    #[test]
    fn every_layout_pair_and_thin_shape_gives_the_reference_product() {
        // Small integers keep every sum exact, so BLAS and the triple loop agree to the bit.
        let values =
            |shape: &[usize]| binary(BinaryOp::Rem, counting(shape), Tensor::scalar(5.0)).unwrap();
        // A column-major copy: the same values, laid out as a transpose is.
        let column_major = |tensor: &Tensor| {
            let stored = transpose(tensor).array().as_standard_layout().into_owned();
            Tensor::from(stored.reversed_axes().into_shared())
        };
        for (m, k, n) in [(9, 13, 11), (1, 40, 12), (12, 40, 1), (30, 1, 20), (8, 8, 8)] {
            let (a, b) = (values(&[m, k]), values(&[k, n]));
            let expected = reference(&a, &b);
            for lhs in [a.clone(), column_major(&a)] {
                for rhs in [b.clone(), column_major(&b)] {
                    let product = matmul(&lhs, &rhs).unwrap();
                    assert_eq!(product.shape(), [m, n]);
                    assert_eq!(product.to_vec(), expected, "{m}x{k} @ {k}x{n}");
                }
            }
        }
    }

    #[test]
    fn empty_products_are_zeros() {
        let product =
            matmul(&Tensor::zeros(&[100, 0]).unwrap(), &Tensor::zeros(&[0, 100]).unwrap());
        let product = product.unwrap();
        assert_eq!(product.shape(), [100, 100]);
        assert!(product.to_vec().iter().all(|&x| x == 0.0));
        assert_eq!(
            matmul(&Tensor::zeros(&[0]).unwrap(), &Tensor::zeros(&[0]).unwrap())
                .unwrap()
                .to_scalar(),
            Ok(0.0)
        );
        let no_batch =
            matmul(&Tensor::zeros(&[0, 2, 3]).unwrap(), &Tensor::zeros(&[3, 4]).unwrap());
        assert_eq!(no_batch.unwrap().shape(), [0, 2, 4]);
    }

    #[test]
    fn mismatches_are_errors() {
        assert_eq!(
            matmul(&counting(&[2, 3]), &counting(&[4, 5])).unwrap_err().to_string(),
            "matmul of Tensor[2][3] and Tensor[4][5]: inner dimensions 3 and 4 differ"
        );
        assert_eq!(
            matmul(&counting(&[3]), &counting(&[4])).unwrap_err().to_string(),
            "matmul of Tensor[3] and Tensor[4]: inner dimensions 3 and 4 differ"
        );
        assert_eq!(
            matmul(&counting(&[2, 2, 2]), &counting(&[3, 2, 2])).unwrap_err().to_string(),
            "matmul of Tensor[2][2][2] and Tensor[3][2][2]: batch dimensions cannot be broadcast \
             together"
        );
        assert_eq!(
            matmul(&Tensor::scalar(1.0), &counting(&[2])).unwrap_err().to_string(),
            "matmul needs tensors of rank 1 or more, got Tensor[]"
        );
        assert_eq!(matmul_shape(&[5, 1, 2, 3], &[4, 3, 6]), Ok(vec![5, 4, 2, 6]));
        assert_eq!(matmul_shape(&[3], &[2, 3, 4]), Ok(vec![2, 4]));
    }
}
