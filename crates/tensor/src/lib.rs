//! Dense `f64` tensors on ndarray and OpenBLAS, every tensor operation the language needs, and the
//! index-notation engine ([`einsum`]).
//!
//! A [`Tensor`] is a copy-on-write, reference-counted n-d array: cloning it is O(1), and an
//! operation that takes a tensor by value reuses its buffer when no other clone shares it, so
//! `exp(a) * b + c` allocates once. Operations are free functions grouped by kind (element-wise,
//! products, reductions, shapes, indexing, linear algebra), each described by a small enum
//! (`UnaryOp`, `BinaryOp`, `ReduceOp`) so that the interpreter and the autodiff tape can record and
//! replay them by value. Failures are [`TensorError`] values without spans; nothing here panics on
//! user input.
//!
//! This crate knows nothing of Nabla's syntax, checker, values or tape: it depends on neither
//! `hir` nor `exec` (the tidy test checks), so that it is the seam a second backend would use.

extern crate blas_src;

pub mod einsum;

mod allocation;
mod blas_kernel;
mod broadcast;
mod buffer;
mod conv;
mod elementwise;
mod error;
mod format;
mod gather;
mod index;
mod io;
mod labels;
mod linalg;
mod matmul;
mod parallel;
mod random;
mod reduce;
mod scan;
mod shape;
mod sort;
mod vector_math;

use ndarray::{ArcArray, ArrayD, ArrayViewD, IxDyn};

pub use self::allocation::{
    DEFAULT_ALLOCATION_LIMIT_BYTES, allocation_limit, check_allocation, check_allocation_against,
    set_allocation_limit,
};
pub use self::blas_kernel::{
    CpuFeatures, choose_coretype, ensure_tuned_kernel, needs_retuning, openblas_core_name,
    stop_idle_blas_threads,
};
pub use self::broadcast::{broadcast_shapes, broadcast_to, sum_to_shape};
pub use self::conv::{Convolution, Face, Windows};
pub use self::elementwise::{
    BinaryOp, GELU_TANH_CUBIC, GELU_TANH_SCALE, UnaryOp, binary, binary_scalar_lhs,
    binary_scalar_rhs, scaled_update, unary, zip_map,
};
pub use self::error::ByteCount;
pub use self::error::{ShapeText, TensorError};
pub use self::format::{
    Layout, PrintOptions, format_bool, format_char, format_float, format_int, format_tensor,
    format_tensor_with,
};
pub use self::gather::{Entry, Gather, PadMode, nonzero, nonzero_indices};
pub use self::index::{
    Index, MAX_ELEMENT_RANK, Resolver, Subscript, add_at, get, indexed_shape, resolve, set,
};
pub use self::io::{load_csv, load_npy, load_npz, parse_csv, save_npy, save_npz};
pub use self::labels::{label_positions, one_hot};
pub use self::linalg::{
    MatrixOrd, cholesky, default_rtol, det, eigh, eigvalsh, inv, lstsq, matrix_norm, pinv, qr,
    slogdet, solve, svd, svdvals,
};
pub use self::matmul::{matmul, matmul_shape};
pub use self::parallel::threads;
pub use self::random::Rng;
pub use self::reduce::{
    Extreme, ReduceOp, arg_extreme, arg_extreme_axis, count_nonzero, extreme_mask, log_softmax,
    reduce_all, reduce_axis, softmax, truth_axis,
};
pub use self::scan::{ScanOp, scan};
pub use self::shape::{
    all, any, concat, diag, dims_from_f64, dims_from_i64, expand_dims, extent, normalize_axis,
    permute, reshape, reshape_extents, stack, swap_axes, trace, transpose,
};
pub use self::sort::{argsort, positions_along, sort_gather, sort_values, topk_gather};

/// A dense n-dimensional array of `f64` in row-major logical order, shared copy-on-write.
///
/// The underlying array may be a strided view of a larger buffer (after slicing or
/// transposing); every operation accepts any layout.
#[derive(Clone)]
pub struct Tensor {
    array: ArcArray<f64, IxDyn>,
    /// The rank and the first axes' extents and strides, copied out of `array` when the tensor
    /// is made (its layout never changes after), for [`Tensor::element`].
    head: Head,
}

/// The rank of an array and the extents and strides of its first [`HEAD_RANK`] axes (zero past
/// the rank), in fixed places: an element access of up to that many indices reads them without
/// ndarray's inline-or-heap dispatch on each of `IxDyn`'s shape and strides (callgrind: suite
/// -5.2%, an element read 79 -> 63 instructions, a write 85 -> 66).
#[derive(Clone, Copy)]
struct Head {
    rank: usize,
    extents: [usize; HEAD_RANK],
    strides: [isize; HEAD_RANK],
}

/// How many axes [`Head`] keeps: the one- and two-index accesses the interpreter compiles on
/// their own.
const HEAD_RANK: usize = 2;

impl Head {
    fn of(array: &ArcArray<f64, IxDyn>) -> Head {
        let mut head =
            Head { rank: array.ndim(), extents: [0; HEAD_RANK], strides: [0; HEAD_RANK] };
        for (k, (&extent, &stride)) in array.shape().iter().zip(array.strides()).enumerate() {
            if k == HEAD_RANK {
                break;
            }
            head.extents[k] = extent;
            head.strides[k] = stride;
        }
        head
    }
}

impl Tensor {
    /// The only way a tensor is made: `head` is copied out of `array` here, and neither is
    /// changed after (the unsafe element accesses in `index.rs` rely on it).
    fn new(array: ArcArray<f64, IxDyn>) -> Tensor {
        Tensor { head: Head::of(&array), array }
    }
}

impl PartialEq for Tensor {
    fn eq(&self, other: &Tensor) -> bool {
        self.array == other.array
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor").field("array", &self.array).finish()
    }
}

impl Tensor {
    /// A rank-0 tensor holding `value`.
    pub fn scalar(value: f64) -> Tensor {
        Tensor::new(ArcArray::from_elem(IxDyn(&[]), value))
    }

    /// A rank-1 tensor holding `values`.
    pub fn vector(values: Vec<f64>) -> Tensor {
        Tensor::from(ndarray::Array1::from(values).into_dyn())
    }

    /// Lays `values` out row-major in `shape`; their count must equal the shape's element count.
    pub fn from_vec(shape: &[usize], values: Vec<f64>) -> Result<Tensor, TensorError> {
        let len = values.len();
        ArrayD::from_shape_vec(IxDyn(shape), values)
            .map(Tensor::from)
            .map_err(|_| TensorError::DataLength { shape: shape.to_vec(), len })
    }

    /// A tensor of `shape` filled with `value`, checked against the allocation limit.
    pub fn full(shape: &[usize], value: f64) -> Result<Tensor, TensorError> {
        check_allocation(shape)?;
        Ok(Tensor::from(ArrayD::from_elem(IxDyn(shape), value)))
    }

    /// A tensor of `shape` filled with zeros, checked against the allocation limit.
    pub fn zeros(shape: &[usize]) -> Result<Tensor, TensorError> {
        check_allocation(shape)?;
        Ok(Tensor::from(ArrayD::zeros(IxDyn(shape))))
    }

    /// A tensor of `shape` filled with ones, checked against the allocation limit.
    pub fn ones(shape: &[usize]) -> Result<Tensor, TensorError> {
        Tensor::full(shape, 1.0)
    }

    /// The `n` by `n` identity matrix.
    pub fn eye(n: usize) -> Result<Tensor, TensorError> {
        check_allocation(&[n, n])?;
        Ok(Tensor::from(ndarray::Array2::<f64>::eye(n).into_dyn()))
    }

    /// The vector `[0.0, 1.0, ..., n - 1]`.
    pub fn arange(n: usize) -> Result<Tensor, TensorError> {
        check_allocation(&[n])?;
        // Counts up to 2^53 convert to `f64` exactly, and the allocation limit keeps `n` far below.
        Ok(Tensor::vector((0..n).map(|i| i as f64).collect()))
    }

    /// `num` evenly spaced numbers from `start` to `stop`, both included, computed as NumPy's
    /// `linspace` does: `start + i * step` with `step = (stop - start) / (num - 1)`, and the
    /// last exactly `stop`.
    pub fn linspace(start: f64, stop: f64, num: usize) -> Result<Tensor, TensorError> {
        check_allocation(&[num])?;
        let step = (stop - start) / num.saturating_sub(1).max(1) as f64;
        let mut values: Vec<f64> = (0..num).map(|i| start + i as f64 * step).collect();
        if num > 1
            && let Some(last) = values.last_mut()
        {
            *last = stop;
        }
        Ok(Tensor::vector(values))
    }

    /// `start, start + step, ...` while below `stop` (above it for a negative `step`), as NumPy's
    /// `arange`: `ceil((stop - start) / step)` numbers, each `start + i * step`.
    pub fn arange_step(start: f64, stop: f64, step: f64) -> Result<Tensor, TensorError> {
        if step == 0.0 || !step.is_finite() || !start.is_finite() || !stop.is_finite() {
            return Err(TensorError::Argument {
                op: "arange",
                reason: format!(
                    "start, stop and step must be finite and the step non-zero, got {}, {} and {}",
                    format_float(start),
                    format_float(stop),
                    format_float(step)
                ),
            });
        }
        let count = ((stop - start) / step).ceil().max(0.0);
        if count > 9.0e15 {
            return Err(TensorError::Argument {
                op: "arange",
                reason: format!("{count} elements are too many"),
            });
        }
        let count = count as usize;
        check_allocation(&[count])?;
        Ok(Tensor::vector((0..count).map(|i| start + i as f64 * step).collect()))
    }

    /// The extents of the axes, outermost first.
    pub fn shape(&self) -> &[usize] {
        self.array.shape()
    }

    /// The number of axes.
    pub fn rank(&self) -> usize {
        self.array.ndim()
    }

    /// The number of elements (1 for rank 0).
    pub fn len(&self) -> usize {
        self.array.len()
    }

    /// Whether the tensor has no elements (some extent is 0).
    pub fn is_empty(&self) -> bool {
        self.array.is_empty()
    }

    /// The value of a tensor with exactly one element, whatever its rank.
    pub fn to_scalar(&self) -> Result<f64, TensorError> {
        match self.array.iter().next() {
            Some(&value) if self.array.len() == 1 => Ok(value),
            _ => Err(TensorError::NotScalar { shape: self.shape().to_vec() }),
        }
    }

    /// The elements in row-major logical order.
    pub fn to_vec(&self) -> Vec<f64> {
        let mut values = Vec::with_capacity(self.array.len());
        self.append_to(&mut values);
        values
    }

    /// Appends the elements to `values` in row-major logical order: a row-major tensor (the
    /// common case) as one block copy, any other layout element by element. Element by element
    /// through ndarray's iterator costs about 20-40 instructions an element, so `vmap`'s
    /// stacking of 10^4 gradients of 64x32 spent 800 M instructions there.
    pub fn append_to(&self, values: &mut Vec<f64>) {
        match self.array.as_slice() {
            Some(row_major) => values.extend_from_slice(row_major),
            None => values.extend(self.array.iter().copied()),
        }
    }

    /// The underlying shared array.
    pub fn array(&self) -> &ArcArray<f64, IxDyn> {
        &self.array
    }

    /// A borrowed view of the elements.
    pub fn view(&self) -> ArrayViewD<'_, f64> {
        self.array.view()
    }

    /// The underlying shared array, without copying.
    pub fn into_array(self) -> ArcArray<f64, IxDyn> {
        self.array
    }

    /// Whether no other clone shares this tensor's buffer, so that operations taking it by value
    /// may overwrite it.
    pub fn is_unique(&self) -> bool {
        self.array.is_unique()
    }

    /// Applies `f` to every element, in place when the buffer is not shared. Contiguous tensors
    /// take the vectorised loops of `vector_math`.
    pub fn map(self, f: impl Fn(f64) -> f64 + Sync) -> Tensor {
        let mut array = self.array;
        if array.is_unique() {
            match array.as_slice_memory_order_mut() {
                Some(values) => vector_math::map_in_place(values, f),
                None => array.mapv_inplace(f),
            }
            return Tensor::new(array);
        }
        let mapped = match array.as_slice() {
            Some(values) => {
                ArrayD::from_shape_vec(array.raw_dim(), vector_math::map_to_vec(values, &f))
            }
            None => Ok(array.mapv(&f)),
        };
        // A row-major source always fits its own shape, so the fallback never runs; it exists so
        // that nothing here can panic.
        Tensor::from(mapped.unwrap_or_else(|_| array.mapv(&f)))
    }
}

impl From<ArrayD<f64>> for Tensor {
    fn from(array: ArrayD<f64>) -> Tensor {
        Tensor::new(array.into_shared())
    }
}

impl From<ArcArray<f64, IxDyn>> for Tensor {
    fn from(array: ArcArray<f64, IxDyn>) -> Tensor {
        Tensor::new(array)
    }
}

impl From<f64> for Tensor {
    fn from(value: f64) -> Tensor {
        Tensor::scalar(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_build_the_documented_values() {
        assert_eq!(Tensor::zeros(&[2, 2]).unwrap().to_vec(), [0.0; 4]);
        assert_eq!(Tensor::ones(&[3]).unwrap().to_vec(), [1.0; 3]);
        assert_eq!(Tensor::full(&[], 2.5).unwrap().to_scalar(), Ok(2.5));
        assert_eq!(Tensor::eye(2).unwrap().to_vec(), [1.0, 0.0, 0.0, 1.0]);
        assert_eq!(Tensor::arange(4).unwrap().to_vec(), [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(Tensor::arange(0).unwrap().shape(), [0]);
        let matrix = Tensor::from_vec(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        assert_eq!((matrix.shape(), matrix.rank(), matrix.len()), (&[2, 3][..], 2, 6));
    }

    #[test]
    fn elements_come_out_in_row_major_order_whatever_the_layout() {
        let matrix = Tensor::from_vec(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        // The transpose is a view with reversed strides: not one block.
        let transposed = transpose(&matrix);
        assert_eq!(transposed.to_vec(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
        let mut values = vec![0.0];
        matrix.append_to(&mut values);
        transposed.append_to(&mut values);
        assert_eq!(values, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    }

    #[test]
    fn linspace_and_arange_match_numpy() {
        // Computed once with NumPy 2.4: np.linspace(0, 1, 4), np.linspace(1, -1, 5),
        // np.arange(0, 1, 0.1), np.arange(5, 1, -1.5), np.arange(1, 1).
        let thirds = [0.0, 0.3333333333333333, 0.6666666666666666, 1.0];
        assert_eq!(Tensor::linspace(0.0, 1.0, 4).unwrap().to_vec(), thirds);
        assert_eq!(Tensor::linspace(1.0, -1.0, 5).unwrap().to_vec(), [1.0, 0.5, 0.0, -0.5, -1.0]);
        assert_eq!(Tensor::linspace(2.0, 3.0, 1).unwrap().to_vec(), [2.0]);
        assert_eq!(Tensor::linspace(2.0, 3.0, 0).unwrap().shape(), [0]);
        let tenths = Tensor::arange_step(0.0, 1.0, 0.1).unwrap().to_vec();
        #[rustfmt::skip]
        assert_eq!(tenths, [
            0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001,
            0.8, 0.9,
        ]);
        assert_eq!(Tensor::arange_step(5.0, 1.0, -1.5).unwrap().to_vec(), [5.0, 3.5, 2.0]);
        assert_eq!(Tensor::arange_step(1.0, 1.0, 1.0).unwrap().shape(), [0]);
        assert_eq!(Tensor::arange_step(1.0, 5.0, -1.0).unwrap().shape(), [0]);
        assert_eq!(
            Tensor::arange_step(0.0, 1.0, 0.0).unwrap_err().to_string(),
            "arange: start, stop and step must be finite and the step non-zero, got 0.0, 1.0 and 0.0"
        );
    }

    #[test]
    fn constructors_report_bad_sizes() {
        assert_eq!(
            Tensor::from_vec(&[2, 2], vec![1.0]).unwrap_err().to_string(),
            "1 values cannot fill Tensor[2][2], which has 4 elements"
        );
        assert!(matches!(Tensor::zeros(&[1 << 40, 1 << 40]), Err(TensorError::Allocation { .. })));
        assert!(matches!(Tensor::eye(1 << 40), Err(TensorError::Allocation { .. })));
    }

    #[test]
    fn to_scalar_accepts_exactly_one_element() {
        assert_eq!(Tensor::scalar(3.0).to_scalar(), Ok(3.0));
        assert_eq!(Tensor::from_vec(&[1, 1], vec![4.0]).unwrap().to_scalar(), Ok(4.0));
        assert_eq!(
            Tensor::vector(vec![1.0, 2.0]).to_scalar().unwrap_err().to_string(),
            "expected a single value, got Tensor[2]"
        );
    }

    #[test]
    fn map_reuses_a_unique_buffer_and_copies_a_shared_one() {
        let tensor = Tensor::vector(vec![1.0, 2.0]);
        let pointer = tensor.array().as_ptr();
        let doubled = tensor.map(|x| 2.0 * x);
        assert_eq!(doubled.array().as_ptr(), pointer);

        let shared = doubled.clone();
        let tripled = shared.map(|x| 3.0 * x);
        assert_eq!(doubled.to_vec(), [2.0, 4.0]);
        assert_eq!(tripled.to_vec(), [6.0, 12.0]);
    }

    #[test]
    fn map_keeps_logical_order_for_every_layout() {
        let matrix = Tensor::from_vec(&[2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
        let expected = [10.0, 40.0, 20.0, 50.0, 30.0, 60.0];
        // A transposed tensor is contiguous in column-major order, shared or not.
        let shared = Tensor::from(matrix.array().clone().reversed_axes());
        assert_eq!(shared.map(|x| 10.0 * x).to_vec(), expected);
        let unique = Tensor::from(matrix.clone().into_array().to_owned().reversed_axes());
        assert_eq!(unique.map(|x| 10.0 * x).to_vec(), expected);
        // Every other column is not contiguous at all.
        let stepped =
            Tensor::from(matrix.into_array().slice_move(ndarray::s![.., ..;2]).into_dyn());
        assert_eq!(stepped.map(|x| -x).to_vec(), [-1.0, -3.0, -4.0, -6.0]);
    }
}
