//! Convolutions (`conv1d`, `conv2d`) as im2col plus one `dgemm` per image and group, and the
//! sliding-window geometry they share with pooling.
//!
//! A convolution `y = conv(x, w)` is bilinear, and its two derivatives are bilinear maps of the
//! same geometry: the input gradient `conv_x^T(g, w)` and the filter gradient `conv_w^T(x, g)`.
//! [`Convolution`] computes all three ([`Face`]), each straight from the input in one pass:
//! - im2col: for one image and group, the column matrix `[C/groups * kernel][positions]` whose
//!   column `p` holds the elements window `p` reads (zeros in the padding), written row by row,
//!   each row a strided copy of the input's rows;
//! - the forward product `w_g [O/groups][C/groups * kernel] @ columns`, written by `dgemm` straight
//!   into the image's rows of the `[N][O][positions...]` result;
//! - the input gradient `w_g^T @ g_n`, a column matrix added back into the image (col2im, the
//!   transpose of im2col);
//! - the filter gradient, `sum_n g_n @ columns_n^T`, accumulated over the images in order.
//!
//! Images are independent in the first two, so those split the batch across the cores
//! ([`parallel`](super::parallel)), each image computed by the same code whatever thread runs
//! it; the filter gradient sums over the images in their order on one thread, so every result
//! is the same on any number of threads.

use std::ffi::c_int;
use std::mem::MaybeUninit;

use super::Tensor;
use super::allocation::check_allocation;
use super::buffer;
use super::error::{ShapeText, TensorError};
use super::matmul::{CBLAS_NO_TRANS, CBLAS_ROW_MAJOR, CBLAS_TRANS, cblas_dgemm};
use super::parallel;

/// The geometry of the sliding windows of a convolution or a pooling over the last `d` axes of
/// a `[N][C][spatial...]` input: for each spatial axis, its kernel extent, stride, padding on
/// both sides and dilation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Windows {
    pub kernel: Vec<usize>,
    pub stride: Vec<usize>,
    pub padding: Vec<usize>,
    pub dilation: Vec<usize>,
}

impl Windows {
    /// The number of window positions along each spatial axis of extents `spatial`:
    /// `(extent + 2 padding - dilation (kernel - 1) - 1) / stride + 1`, as PyTorch computes it, or
    /// an error when the dilated kernel is larger than the padded input or a stride is 0.
    pub fn positions(
        &self,
        op: &'static str,
        spatial: &[usize],
    ) -> Result<Vec<usize>, TensorError> {
        let mut positions = Vec::with_capacity(spatial.len());
        for (axis, &extent) in spatial.iter().enumerate() {
            let (k, s, p, d) =
                (self.kernel[axis], self.stride[axis], self.padding[axis], self.dilation[axis]);
            let bad = |reason: String| TensorError::Argument { op, reason };
            if k == 0 || s == 0 || d == 0 {
                return Err(bad(format!(
                    "kernel size, stride and dilation must be positive, got {k}, {s} and {d}"
                )));
            }
            let padded = extent.checked_add(p.saturating_mul(2));
            let span = d.checked_mul(k - 1).and_then(|span| span.checked_add(1));
            let (Some(padded), Some(span)) = (padded, span) else {
                return Err(bad(format!("the window or the padding of {extent} is too large")));
            };
            if span > padded {
                return Err(bad(format!(
                    "a window spanning {span} elements does not fit an axis of extent {extent} \
                     with padding {p}"
                )));
            }
            positions.push((padded - span) / s + 1);
        }
        Ok(positions)
    }

    /// The index along spatial `axis` (of `extent`) that kernel offset `k` reads at window
    /// position `p`, or `None` in the padding: the one rule of the window walk, for the columns
    /// of a convolution and the index maps of pooling alike.
    #[inline]
    pub(crate) fn source(&self, axis: usize, extent: usize, k: usize, p: usize) -> Option<usize> {
        let i =
            (p * self.stride[axis] + k * self.dilation[axis]).checked_sub(self.padding[axis])?;
        (i < extent).then_some(i)
    }
}

/// Which of a convolution's three bilinear maps: each takes two operands and gives the third
/// tensor of the triple (input, filters, output).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Face {
    /// `(x, w) -> y`.
    Forward,
    /// `(g, w) -> dx`, the transpose of the forward map in `x`.
    InputGradient,
    /// `(x, g) -> dw`, the transpose of the forward map in `w`.
    FilterGradient,
}

/// A convolution of images `[N][C][spatial...]` with filters `[O][C / groups][kernel...]`,
/// giving `[N][O][positions...]`: its shapes, checked once, and its three maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Convolution {
    input: Box<[usize]>,
    filters: Box<[usize]>,
    output: Box<[usize]>,
    windows: Windows,
    groups: usize,
}

impl Convolution {
    /// The convolution `op` (`conv1d` or `conv2d`, which fixes the number of spatial axes) of an
    /// input of shape `input` with filters of shape `filters`, the same `stride`, `padding` and
    /// `dilation` on every spatial axis, in `groups` groups; an error names what does not fit.
    pub fn new(
        op: &'static str,
        input: &[usize],
        filters: &[usize],
        [stride, padding, dilation, groups]: [usize; 4],
    ) -> Result<Convolution, TensorError> {
        let d = if op == "conv1d" { 1 } else { 2 };
        if input.len() != d + 2 {
            return Err(TensorError::Rank {
                op,
                expected: if d == 1 {
                    "signals Tensor[N][C][L]"
                } else {
                    "images Tensor[N][C][H][W]"
                },
                shape: input.to_vec(),
            });
        }
        if filters.len() != d + 2 {
            return Err(TensorError::Rank {
                op,
                expected: if d == 1 {
                    "filters Tensor[O][C][K]"
                } else {
                    "filters Tensor[O][C][KH][KW]"
                },
                shape: filters.to_vec(),
            });
        }
        let bad = |reason: String| TensorError::Argument { op, reason };
        if groups == 0 {
            return Err(bad("the number of groups must be positive, not 0".to_owned()));
        }
        let (count, per_group) = (filters[0], filters[1]);
        if Some(input[1]) != per_group.checked_mul(groups) || count % groups != 0 {
            return Err(bad(format!(
                "the input {} and the filters {} do not fit in {groups} group{}",
                ShapeText(input),
                ShapeText(filters),
                if groups == 1 { "" } else { "s" }
            )));
        }
        let windows = Windows {
            kernel: filters[2..].to_vec(),
            stride: vec![stride; d],
            padding: vec![padding; d],
            dilation: vec![dilation; d],
        };
        let positions = windows.positions(op, &input[2..])?;
        let output: Vec<usize> = [&[input[0], count][..], &positions].concat();
        check_allocation(&output)?;
        let convolution = Convolution {
            input: input.into(),
            filters: filters.into(),
            output: output.into(),
            windows,
            groups,
        };
        // BLAS takes 32-bit extents.
        let (rows, cells) = (convolution.rows(), convolution.cells());
        if [rows, cells, count].iter().any(|&n| c_int::try_from(n).is_err()) {
            return Err(bad("the images or the filters are too large for BLAS".to_owned()));
        }
        Ok(convolution)
    }

    /// The shape of the images.
    pub fn input_shape(&self) -> &[usize] {
        &self.input
    }

    /// The shape of the filters.
    pub fn filter_shape(&self) -> &[usize] {
        &self.filters
    }

    /// The shape of the result, `[N][O][positions...]`.
    pub fn output_shape(&self) -> &[usize] {
        &self.output
    }

    /// The shape of what `face` gives.
    pub fn result_shape(&self, face: Face) -> &[usize] {
        match face {
            Face::Forward => &self.output,
            Face::InputGradient => &self.input,
            Face::FilterGradient => &self.filters,
        }
    }

    /// The shapes `face` takes, in order.
    pub fn operand_shapes(&self, face: Face) -> [&[usize]; 2] {
        match face {
            Face::Forward => [&self.input, &self.filters],
            Face::InputGradient => [&self.output, &self.filters],
            Face::FilterGradient => [&self.input, &self.output],
        }
    }

    /// `face` applied to `a` and `b` (see [`Face`]), whose shapes must be the ones it takes.
    pub fn apply(&self, face: Face, a: &Tensor, b: &Tensor) -> Result<Tensor, TensorError> {
        let [a_shape, b_shape] = self.operand_shapes(face);
        for (operand, shape) in [(a, a_shape), (b, b_shape)] {
            if operand.shape() != shape {
                return Err(TensorError::BroadcastTo {
                    from: operand.shape().to_vec(),
                    to: shape.to_vec(),
                });
            }
        }
        let (a, b) = (contiguous(a), contiguous(b));
        let values = match face {
            Face::Forward => self.forward(&a, &b),
            Face::InputGradient => self.input_gradient(&a, &b),
            Face::FilterGradient => self.filter_gradient(&a, &b),
        };
        Tensor::from_vec(self.result_shape(face), values)
    }

    /// Channels per group times kernel elements: the rows of a column matrix.
    fn rows(&self) -> usize {
        self.filters[1..].iter().product()
    }

    /// Window positions per image: the columns of a column matrix.
    fn cells(&self) -> usize {
        self.output[2..].iter().product()
    }

    /// Elements of one image.
    fn image_len(&self) -> usize {
        self.input[1..].iter().product()
    }

    /// Filters per group.
    fn filters_per_group(&self) -> usize {
        self.filters[0] / self.groups
    }

    /// Images per thread: a part is worth a thread from about a quarter of a million
    /// multiply-adds on.
    fn images_per_part(&self) -> usize {
        let work = self.rows() * self.cells() * self.filters[0];
        (1usize << 18).div_ceil(work.max(1))
    }

    fn forward(&self, x: &[f64], w: &[f64]) -> Vec<f64> {
        let (rows, cells, per_group) = (self.rows(), self.cells(), self.filters_per_group());
        let image_out = self.filters[0] * cells;
        let len = self.output.iter().product();
        if image_out == 0 {
            return vec![0.0; len];
        }
        // Written once, by BLAS: zeroing the result first would write it twice.
        let mut out = buffer::with_capacity(len);
        let parts = parallel::parts(self.input[0], self.images_per_part());
        parallel::for_chunks(
            &mut out.spare_capacity_mut()[..len],
            image_out,
            parts,
            |start, images| {
                let mut columns = vec![0.0; rows * cells];
                for (i, image) in images.chunks_mut(image_out).enumerate() {
                    let n = start / image_out + i;
                    for group in 0..self.groups {
                        self.im2col(x, n, group, &mut columns);
                        let filters = &w[group * per_group * rows..][..per_group * rows];
                        let rows_out = &mut image[group * per_group * cells..][..per_group * cells];
                        // rows_out [per_group][cells] = filters [per_group][rows] @ columns [rows][cells]
                        gemm_into(
                            Product::plain(per_group, cells, rows),
                            filters,
                            &columns,
                            rows_out,
                        );
                    }
                }
            },
        );
        // SAFETY: the chunks cover the first `len` slots, one image each `image_out`, and every
        // group's `per_group * cells` slots of every image were written by `gemm_into`; the
        // groups' rows tile the image (`filters[0] = groups * per_group`).
        unsafe { out.set_len(len) };
        out
    }

    fn input_gradient(&self, g: &[f64], w: &[f64]) -> Vec<f64> {
        let (rows, cells, per_group) = (self.rows(), self.cells(), self.filters_per_group());
        let (image_len, image_out) = (self.image_len(), self.filters[0] * cells);
        let mut dx = vec![0.0; self.input.iter().product()];
        if image_len == 0 || image_out == 0 {
            return dx;
        }
        let parts = parallel::parts(self.input[0], self.images_per_part());
        parallel::for_chunks(&mut dx, image_len, parts, |start, images| {
            let mut columns = vec![0.0; rows * cells];
            for (i, image) in images.chunks_mut(image_len).enumerate() {
                let n = start / image_len + i;
                for group in 0..self.groups {
                    let filters = &w[group * per_group * rows..][..per_group * rows];
                    let g_rows =
                        &g[n * image_out + group * per_group * cells..][..per_group * cells];
                    // columns [rows][cells] = filters^T [rows][per_group] @ g [per_group][cells]
                    let product =
                        Product { trans_a: true, trans_b: false, m: rows, n: cells, k: per_group };
                    gemm(product, filters, g_rows, 0.0, &mut columns);
                    self.col2im(&columns, group, image);
                }
            }
        });
        dx
    }

    fn filter_gradient(&self, x: &[f64], g: &[f64]) -> Vec<f64> {
        let (rows, cells, per_group) = (self.rows(), self.cells(), self.filters_per_group());
        let image_out = self.filters[0] * cells;
        let mut dw = vec![0.0; self.filters.iter().product()];
        if image_out == 0 || rows == 0 {
            return dw;
        }
        let mut columns = vec![0.0; rows * cells];
        for n in 0..self.input[0] {
            for group in 0..self.groups {
                self.im2col(x, n, group, &mut columns);
                let g_rows = &g[n * image_out + group * per_group * cells..][..per_group * cells];
                let filters = &mut dw[group * per_group * rows..][..per_group * rows];
                // filters [per_group][rows] += g [per_group][cells] @ columns^T [cells][rows]
                let product =
                    Product { trans_a: false, trans_b: true, m: per_group, n: rows, k: cells };
                gemm(product, g_rows, &columns, 1.0, filters);
            }
        }
        dw
    }

    /// Calls `f(row, outer, source)` for every row of the column matrix of `group` (a channel of
    /// the group and a kernel offset) and every window position along the spatial axes but the
    /// last (`outer`, row-major), with the offset in the image of the run of elements those
    /// positions read along the last axis, or `None` when they lie in the padding.
    fn walk(&self, group: usize, mut f: impl FnMut(usize, usize, Option<usize>)) {
        let d = self.windows.kernel.len();
        let spatial = &self.input[2..];
        let positions = &self.output[2..];
        let per_group_channels = self.filters[1];
        let kernel_len: usize = self.windows.kernel.iter().product();
        let plane: usize = spatial.iter().product();
        let outer_len: usize = positions[..d - 1].iter().product();
        let mut k = vec![0usize; d];
        let mut p = vec![0usize; d];
        for c in 0..per_group_channels {
            let channel = (group * per_group_channels + c) * plane;
            for kernel_index in 0..kernel_len {
                unflatten(kernel_index, &self.windows.kernel, &mut k);
                let row = c * kernel_len + kernel_index;
                for outer in 0..outer_len {
                    unflatten(outer, &positions[..d - 1], &mut p[..d - 1]);
                    let mut offset = Some(channel);
                    let mut stride = plane;
                    for axis in 0..d - 1 {
                        stride /= spatial[axis];
                        offset = match self.windows.source(axis, spatial[axis], k[axis], p[axis]) {
                            Some(i) => offset.map(|o| o + i * stride),
                            None => None,
                        };
                    }
                    f(row, outer, offset);
                }
            }
        }
    }

    /// The last axis's positions `q` whose element lies inside the image, and the element
    /// position of the first of them along that axis: `(first q, end q, first index)`.
    fn last_axis_run(&self, k: usize) -> (usize, usize, usize) {
        let d = self.windows.kernel.len();
        let (extent, len) = (self.input[d + 1], self.output[d + 1]);
        let (s, dil, pad) =
            (self.windows.stride[d - 1], self.windows.dilation[d - 1], self.windows.padding[d - 1]);
        // q is inside when pad <= q s + k dil < extent + pad.
        let base = k * dil;
        let first = pad.saturating_sub(base).div_ceil(s);
        let end = match (extent + pad).checked_sub(base) {
            Some(limit) => limit.div_ceil(s).min(len),
            None => 0,
        };
        let end = end.max(first);
        let index = (first * s + base).saturating_sub(pad);
        (first, end, index)
    }

    /// Writes the column matrix of image `n` and `group` of `x` into `columns` (`[rows][cells]`).
    fn im2col(&self, x: &[f64], n: usize, group: usize, columns: &mut [f64]) {
        let d = self.windows.kernel.len();
        let image = &x[n * self.image_len()..][..self.image_len()];
        let (cells, last_len) = (self.cells(), self.output[d + 1]);
        let last_kernel = self.windows.kernel[d - 1];
        let s = self.windows.stride[d - 1];
        self.walk(group, |row, outer, offset| {
            let run = &mut columns[row * cells + outer * last_len..][..last_len];
            let Some(offset) = offset else {
                run.fill(0.0);
                return;
            };
            let (first, end, index) = self.last_axis_run(row % last_kernel);
            run[..first].fill(0.0);
            run[end..].fill(0.0);
            let source = &image[offset + index..];
            if s == 1 {
                run[first..end].copy_from_slice(&source[..end - first]);
            } else {
                for (slot, &value) in run[first..end].iter_mut().zip(source.iter().step_by(s)) {
                    *slot = value;
                }
            }
        });
    }

    /// Adds the column matrix `columns` of `group` into `image` (`[C][spatial...]`): the
    /// transpose of [`Convolution::im2col`].
    fn col2im(&self, columns: &[f64], group: usize, image: &mut [f64]) {
        let d = self.windows.kernel.len();
        let (cells, last_len) = (self.cells(), self.output[d + 1]);
        let last_kernel = self.windows.kernel[d - 1];
        let s = self.windows.stride[d - 1];
        self.walk(group, |row, outer, offset| {
            let Some(offset) = offset else { return };
            let run = &columns[row * cells + outer * last_len..][..last_len];
            let (first, end, index) = self.last_axis_run(row % last_kernel);
            let target = &mut image[offset + index..];
            for (slot, &value) in target.iter_mut().step_by(s).zip(&run[first..end]) {
                *slot += value;
            }
        });
    }
}

/// The row-major multi-index of `flat` in `extents`, written into `index`.
fn unflatten(mut flat: usize, extents: &[usize], index: &mut [usize]) {
    for axis in (0..extents.len()).rev() {
        index[axis] = flat % extents[axis];
        flat /= extents[axis];
    }
}

/// The elements of `tensor` in row-major order, borrowed when it is laid out so.
fn contiguous(tensor: &Tensor) -> std::borrow::Cow<'_, [f64]> {
    match tensor.array().as_slice() {
        Some(values) => std::borrow::Cow::Borrowed(values),
        None => std::borrow::Cow::Owned(tensor.to_vec()),
    }
}

/// The shape of one matrix product `op(a) @ op(b)`: `op(a)` is `m` by `k` (`a` stored `k` by `m`
/// when `trans_a`), `op(b)` `k` by `n` (`b` stored `n` by `k` when `trans_b`), the result `m` by
/// `n`, all row-major and stored densely (leading dimension the row length).
#[derive(Clone, Copy)]
struct Product {
    trans_a: bool,
    trans_b: bool,
    m: usize,
    n: usize,
    k: usize,
}

impl Product {
    /// `a @ b` with neither operand transposed.
    fn plain(m: usize, n: usize, k: usize) -> Product {
        Product { trans_a: false, trans_b: false, m, n, k }
    }
}

/// `c = a @ b` for `c` of `m` by `n` (not read, every element written).
fn gemm_into(product: Product, a: &[f64], b: &[f64], c: &mut [MaybeUninit<f64>]) {
    let Product { m, n, k, .. } = product;
    assert!(c.len() >= m * n, "gemm result too short");
    if k == 0 {
        c[..m * n].fill(MaybeUninit::new(0.0));
        return;
    }
    // SAFETY: `c` has room for the `m * n` elements (asserted), which BLAS writes without reading
    // them when beta is 0 ("when beta is zero, C need not be set on input").
    unsafe { gemm_raw(product, a, b, 0.0, c.as_mut_ptr().cast()) }
}

/// `c = op(a) @ op(b) + beta c`.
fn gemm(product: Product, a: &[f64], b: &[f64], beta: f64, c: &mut [f64]) {
    let Product { m, n, k, .. } = product;
    assert!(c.len() >= m * n, "gemm result too short");
    if k == 0 {
        if beta == 0.0 {
            c[..m * n].fill(0.0);
        }
        return;
    }
    // SAFETY: `c` holds the `m * n` initialised elements BLAS reads and writes (asserted).
    unsafe { gemm_raw(product, a, b, beta, c.as_mut_ptr()) }
}

/// CBLAS's `dgemm` for `product` with `k > 0`. Extents were checked to fit BLAS's integers when
/// the convolution was made.
///
/// # Safety
/// `c` must point to `m * n` elements that BLAS may write, initialised unless `beta` is 0, and
/// not overlapping `a` or `b`.
unsafe fn gemm_raw(product: Product, a: &[f64], b: &[f64], beta: f64, c: *mut f64) {
    let Product { trans_a, trans_b, m, n, k } = product;
    if m == 0 || n == 0 {
        return;
    }
    let flag = |trans: bool| if trans { CBLAS_TRANS } else { CBLAS_NO_TRANS };
    let (lda, ldb) = (if trans_a { m } else { k }, if trans_b { k } else { n });
    assert!(a.len() >= m * k && b.len() >= k * n, "gemm operands too short");
    // SAFETY: the assertion above guarantees that `a` holds the `m * k` elements and `b` the
    // `k * n` that BLAS reads with these leading dimensions, and the caller that `c` holds the
    // `m * n` it writes; the extents fit `c_int` (checked by `Convolution::new`).
    unsafe {
        cblas_dgemm(
            CBLAS_ROW_MAJOR,
            flag(trans_a),
            flag(trans_b),
            m as c_int,
            n as c_int,
            k as c_int,
            1.0,
            a.as_ptr(),
            lda as c_int,
            b.as_ptr(),
            ldb as c_int,
            beta,
            c,
            n as c_int,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The convolution computed from its definition, element by element.
    fn reference(conv: &Convolution, x: &Tensor, w: &Tensor) -> Vec<f64> {
        let d = conv.windows.kernel.len();
        let out = conv.output_shape().to_vec();
        let (per_group, channels) = (conv.filters_per_group(), conv.filters[1]);
        let mut values = Vec::new();
        let mut index = vec![0usize; out.len()];
        let kernel_len: usize = conv.windows.kernel.iter().product();
        for _ in 0..out.iter().product::<usize>() {
            let (n, o) = (index[0], index[1]);
            let group = o / per_group;
            let mut sum = 0.0;
            for c in 0..channels {
                for kernel_index in 0..kernel_len {
                    let mut k = vec![0; d];
                    unflatten(kernel_index, &conv.windows.kernel, &mut k);
                    let mut at = vec![n, group * channels + c];
                    let inside = (0..d).all(|axis| {
                        let source = conv.windows.source(
                            axis,
                            conv.input[2 + axis],
                            k[axis],
                            index[2 + axis],
                        );
                        source.map(|i| at.push(i)).is_some()
                    });
                    if inside {
                        let mut w_at = vec![o, c];
                        w_at.extend(&k);
                        sum += x.array()[&at[..]] * w.array()[&w_at[..]];
                    }
                }
            }
            values.push(sum);
            for axis in (0..index.len()).rev() {
                index[axis] += 1;
                if index[axis] < out[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        values
    }

    fn counting(shape: &[usize], scale: f64) -> Tensor {
        let len = shape.iter().product();
        Tensor::from_vec(shape, (0..len).map(|i| ((i * 7 % 11) as f64 - 5.0) * scale).collect())
            .unwrap()
    }

    fn dot(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn the_three_faces_agree_with_the_definition_and_are_transposes() {
        // conv1d and conv2d with strides, padding, dilation and groups.
        type Case<'a> = (&'a str, &'a [usize], &'a [usize], [usize; 4]);
        let cases: [Case; 6] = [
            ("conv2d", &[2, 3, 5, 5], &[4, 3, 3, 3], [1, 0, 1, 1]),
            ("conv2d", &[2, 3, 5, 5], &[4, 3, 3, 3], [2, 1, 1, 1]),
            ("conv2d", &[2, 4, 6, 5], &[6, 2, 2, 3], [2, 2, 2, 2]),
            ("conv2d", &[1, 3, 5, 5], &[6, 1, 3, 3], [1, 1, 2, 3]),
            ("conv1d", &[2, 2, 7], &[3, 2, 3], [2, 1, 1, 1]),
            ("conv1d", &[3, 4, 9], &[4, 2, 2], [3, 3, 2, 2]),
        ];
        for (op, input, filters, params) in cases {
            let conv = Convolution::new(op, input, filters, params).unwrap();
            let (x, w) = (counting(input, 0.25), counting(filters, 0.5));
            let y = conv.apply(Face::Forward, &x, &w).unwrap();
            assert_eq!(y.to_vec(), reference(&conv, &x, &w), "{op} {input:?} {params:?}");
            // <g, conv(x, w)> = <dx(g, w), x> = <dw(x, g), w>.
            let g = counting(conv.output_shape(), 0.125);
            let dx = conv.apply(Face::InputGradient, &g, &w).unwrap();
            let dw = conv.apply(Face::FilterGradient, &x, &g).unwrap();
            let value = dot(&g.to_vec(), &y.to_vec());
            assert_eq!(dot(&dx.to_vec(), &x.to_vec()), value, "{op} {params:?} input");
            assert_eq!(dot(&dw.to_vec(), &w.to_vec()), value, "{op} {params:?} filters");
        }
    }

    #[test]
    fn empty_batches_and_mismatches() {
        let conv = Convolution::new("conv2d", &[0, 3, 5, 5], &[4, 3, 3, 3], [1, 0, 1, 1]).unwrap();
        let y = conv.apply(
            Face::Forward,
            &Tensor::zeros(&[0, 3, 5, 5]).unwrap(),
            &counting(&[4, 3, 3, 3], 1.0),
        );
        assert_eq!(y.unwrap().shape(), [0, 4, 3, 3]);
        let error =
            Convolution::new("conv2d", &[1, 3, 5, 5], &[4, 2, 3, 3], [1, 0, 1, 1]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "conv2d: the input Tensor[1][3][5][5] and the filters Tensor[4][2][3][3] do not fit in 1 group"
        );
    }
}
