//! Rearrangements of elements by an index map: `flip`, `roll`, `tile`, `repeat`, `pad`,
//! `take_along_axis` (which `sort`, `topk` and the losses use) and the sliding windows of
//! pooling are each one [`Gather`].
//!
//! A gather is affine: output element `i` (row-major) is input element `sources[i]`, or a fill
//! value where the map says [`Gather::FILL`] (the zeros of padding, or `-inf` around a max
//! pool). Its linear part has a transpose, [`Gather::scatter_add`], which adds every output
//! element back into the input element it came from; the two are each other's derivative, so one
//! pair of operations on the autodiff tape differentiates every rearrangement to any order.
//! NumPy's advanced indexing (`E[ids]`, `p[arange(k), y]`, mixed with slices) is one too
//! ([`Gather::advanced`]).
//!
//! A map whose sources are whole rows of contiguous elements (an embedding lookup copies rows of
//! the table) keeps one source per row ([`Gather::rows`]), so it costs one `usize` per row, and
//! applying it copies slices.

use std::ops::Range;

use super::Tensor;
use super::allocation::check_allocation;
use super::broadcast::{broadcast_shapes, broadcast_to};
use super::conv::Windows;
use super::error::TensorError;
use super::index::{Subscript, position, slice};

/// An index map from an input shape to an output shape (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Gather {
    input: Box<[usize]>,
    output: Box<[usize]>,
    /// The first input element of each run of `block` output elements, or [`Gather::FILL`].
    sources: Box<[usize]>,
    /// The elements each source stands for: 1, or the length of the rows a row gather copies.
    block: usize,
    fill: f64,
}

/// One entry of a bracket of NumPy's advanced indexing ([`Gather::advanced`]): a basic subscript,
/// a tensor of indices (floats holding integers, negative ones counting from the end), or a mask
/// (selecting the positions of its nonzero elements in as many axes as it has).
#[derive(Clone, Copy, Debug)]
pub enum Entry<'a> {
    Basic(Subscript),
    Indices(&'a Tensor),
    Mask(&'a Tensor),
}

/// How `pad` fills the new elements, as NumPy's `pad` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PadMode {
    /// Zeros.
    Constant,
    /// The mirror image without the edge element: `[1, 2, 3]` padded by 2 is `[3, 2, 1, 2, 3, 2, 1]`.
    Reflect,
    /// The edge element repeated: `[1, 2, 3]` padded by 2 is `[1, 1, 1, 2, 3, 3, 3]`.
    Edge,
}

impl PadMode {
    pub fn from_name(name: &str) -> Option<PadMode> {
        match name {
            "constant" => Some(PadMode::Constant),
            "reflect" => Some(PadMode::Reflect),
            "edge" => Some(PadMode::Edge),
            _ => None,
        }
    }
}

impl Gather {
    /// The marker of an output element that takes the fill value.
    pub const FILL: usize = usize::MAX;

    /// A map from `input` to `output` with the given sources (row-major over `output`), each an
    /// element of `input` or [`Gather::FILL`].
    pub fn new(
        input: &[usize],
        output: &[usize],
        sources: Vec<usize>,
        fill: f64,
    ) -> Result<Gather, TensorError> {
        let input_len = check_allocation(input)?;
        let output_len = check_allocation(output)?;
        if sources.len() != output_len
            || sources.iter().any(|&s| s != Gather::FILL && s >= input_len)
        {
            return Err(TensorError::DataLength { shape: output.to_vec(), len: sources.len() });
        }
        Ok(Gather {
            input: input.into(),
            output: output.into(),
            sources: sources.into(),
            block: 1,
            fill,
        })
    }

    /// A map that copies rows of `block` contiguous elements: output elements
    /// `r * block .. (r + 1) * block` are input elements `sources[r] .. sources[r] + block`.
    pub fn rows(
        input: &[usize],
        output: &[usize],
        sources: Vec<usize>,
        block: usize,
    ) -> Result<Gather, TensorError> {
        let input_len = check_allocation(input)?;
        let output_len = check_allocation(output)?;
        if block == 0
            || sources.len().checked_mul(block) != Some(output_len)
            || sources.iter().any(|&s| s.checked_add(block).is_none_or(|end| end > input_len))
        {
            return Err(TensorError::DataLength { shape: output.to_vec(), len: sources.len() });
        }
        Ok(Gather {
            input: input.into(),
            output: output.into(),
            sources: sources.into(),
            block,
            fill: 0.0,
        })
    }

    /// The bytes the map holds (its sources), which a tape that keeps it counts.
    pub fn bytes(&self) -> usize {
        self.sources.len().saturating_mul(size_of::<usize>())
    }

    /// The value of the output elements that read no input element.
    pub fn fill(&self) -> f64 {
        self.fill
    }

    /// The linear part of the map: the same sources, with zeros where this one fills. The map is
    /// affine, so this is its derivative, and the transpose of [`Gather::scatter_add`].
    pub fn linear(&self) -> Gather {
        Gather { fill: 0.0, ..self.clone() }
    }

    /// The shape the map reads.
    pub fn input_shape(&self) -> &[usize] {
        &self.input
    }

    /// The shape the map writes.
    pub fn output_shape(&self) -> &[usize] {
        &self.output
    }

    /// The output: `x`, which must have the input shape, rearranged.
    pub fn apply(&self, x: &Tensor) -> Result<Tensor, TensorError> {
        self.expect_shape(x, &self.input)?;
        let standard = x.array().as_standard_layout();
        let values = standard.as_slice().unwrap_or_default();
        if self.block > 1 {
            let mut gathered = Vec::with_capacity(self.sources.len() * self.block);
            for &source in self.sources.iter() {
                // `rows` checked every row against the input's length.
                gathered.extend_from_slice(values.get(source..source + self.block).unwrap_or(&[]));
            }
            return Tensor::from_vec(&self.output, gathered);
        }
        let gathered = self
            .sources
            .iter()
            .map(|&source| match source {
                Gather::FILL => self.fill,
                // `new` checked every source against the input's length.
                source => values.get(source).copied().unwrap_or(self.fill),
            })
            .collect();
        Tensor::from_vec(&self.output, gathered)
    }

    /// The transpose of the linear part: each element of `y`, which must have the output shape,
    /// added into the input element it was gathered from; elements that were filled are dropped.
    pub fn scatter_add(&self, y: &Tensor) -> Result<Tensor, TensorError> {
        self.expect_shape(y, &self.output)?;
        let len = check_allocation(&self.input)?;
        let mut sums = vec![0.0; len];
        let standard = y.array().as_standard_layout();
        if self.block > 1 {
            let values = standard.as_slice().unwrap_or_default();
            for (&source, row) in self.sources.iter().zip(values.chunks_exact(self.block)) {
                if let Some(sums) = sums.get_mut(source..source + self.block) {
                    for (sum, value) in sums.iter_mut().zip(row) {
                        *sum += value;
                    }
                }
            }
            return Tensor::from_vec(&self.input, sums);
        }
        for (&source, &value) in self.sources.iter().zip(standard.iter()) {
            if let Some(sum) = sums.get_mut(source) {
                *sum += value;
            }
        }
        Tensor::from_vec(&self.input, sums)
    }

    /// `target` (of the input shape) with `values` (of the output shape) written to the elements
    /// the map reads: each value replaces its element, the last of repeated ones winning, or,
    /// with `accumulate`, is added to it (every repeated one). It costs what it writes: the
    /// target's buffer is copied only when something else shares it (or it is not laid out
    /// row-major). Filled output elements are dropped.
    pub fn write_into(
        &self,
        target: Tensor,
        values: &Tensor,
        accumulate: bool,
    ) -> Result<Tensor, TensorError> {
        self.expect_shape(&target, &self.input)?;
        self.expect_shape(values, &self.output)?;
        let mut array = target.into_array();
        if !array.is_standard_layout() {
            array = array.as_standard_layout().into_owned().into_shared();
        }
        let standard = values.array().as_standard_layout();
        let values = standard.as_slice().unwrap_or_default();
        // Taking a mutable slice makes the buffer unique, copying it if it is shared.
        let Some(slots) = array.as_slice_mut() else {
            return Err(TensorError::Argument {
                op: "indexed assignment",
                reason: "a target that is not laid out row-major".to_owned(),
            });
        };
        let block = self.block.max(1);
        for (&source, row) in self.sources.iter().zip(values.chunks_exact(block)) {
            // `new` and `rows` checked every source against the input's length.
            let Some(slots) = slots.get_mut(source..source.saturating_add(block)) else {
                continue;
            };
            for (slot, &value) in slots.iter_mut().zip(row) {
                match accumulate {
                    true => *slot += value,
                    false => *slot = value,
                }
            }
        }
        Ok(Tensor::from(array))
    }

    fn expect_shape(&self, x: &Tensor, shape: &[usize]) -> Result<(), TensorError> {
        match x.shape() == shape {
            true => Ok(()),
            false => Err(TensorError::Reshape { from: x.shape().to_vec(), to: shape.to_vec() }),
        }
    }

    /// A map whose source index along each axis depends only on the output index along that
    /// axis: `along[axis][o]` is the source index for output index `o`, `None` for a fill.
    fn separable(
        input: &[usize],
        along: &[Vec<Option<usize>>],
        fill: f64,
    ) -> Result<Gather, TensorError> {
        let output: Vec<usize> = along.iter().map(Vec::len).collect();
        let len = check_allocation(&output)?;
        let strides = row_major_strides(input);
        let mut sources = Vec::with_capacity(len);
        if len > 0 {
            // An odometer over the output indices, with the source offset of each prefix.
            let rank = output.len();
            let mut index = vec![0usize; rank];
            loop {
                let mut source = Some(0usize);
                for axis in 0..rank {
                    source = match (source, along[axis][index[axis]]) {
                        (Some(offset), Some(i)) => Some(offset + i * strides[axis]),
                        _ => None,
                    };
                }
                sources.push(source.unwrap_or(Gather::FILL));
                if !advance(&mut index, &output) {
                    break;
                }
            }
        }
        Gather::new(input, &output, sources, fill)
    }

    /// `flip`: the order along each of `axes` reversed.
    pub fn flip(shape: &[usize], axes: &[usize]) -> Result<Gather, TensorError> {
        let along = shape
            .iter()
            .enumerate()
            .map(|(axis, &n)| match axes.contains(&axis) {
                true => (0..n).rev().map(Some).collect(),
                false => (0..n).map(Some).collect(),
            })
            .collect::<Vec<_>>();
        Gather::separable(shape, &along, 0.0)
    }

    /// `roll`: elements shifted by `shift` positions along `axis` (negative shifts move them back),
    /// those past the end coming round to the start; with no axis, along the row-major order of
    /// all elements, as NumPy's `roll`.
    pub fn roll(shape: &[usize], shift: i64, axis: Option<usize>) -> Result<Gather, TensorError> {
        let rolled = |n: usize| -> Vec<Option<usize>> {
            let n_signed = i64::try_from(n).unwrap_or(i64::MAX);
            let shift = if n == 0 { 0 } else { shift.rem_euclid(n_signed) as usize };
            (0..n).map(|o| Some((o + n - shift) % n)).collect()
        };
        match axis {
            Some(axis) => {
                let along = shape
                    .iter()
                    .enumerate()
                    .map(|(a, &n)| match a == axis {
                        true => rolled(n),
                        false => (0..n).map(Some).collect(),
                    })
                    .collect::<Vec<_>>();
                Gather::separable(shape, &along, 0.0)
            }
            None => {
                let len = check_allocation(shape)?;
                let sources = rolled(len).into_iter().map(|s| s.unwrap_or(Gather::FILL)).collect();
                Gather::new(shape, shape, sources, 0.0)
            }
        }
    }

    /// `tile`: the tensor repeated `reps[i]` times along axis `i`; when the lengths differ, the
    /// shorter of the shape and `reps` is extended with leading 1s, as in NumPy.
    pub fn tile(shape: &[usize], reps: &[usize]) -> Result<Gather, TensorError> {
        let rank = shape.len().max(reps.len());
        let padded = with_leading_ones(shape, rank);
        let reps = with_leading_ones(reps, rank);
        let along = padded
            .iter()
            .zip(&reps)
            .map(|(&n, &r)| {
                let extent = n.checked_mul(r).ok_or(TensorError::Allocation {
                    shape: vec![n, r],
                    elements: n as u128 * r as u128,
                    limit_bytes: super::allocation_limit(),
                })?;
                Ok((0..extent).map(|o| Some(o % n)).collect())
            })
            .collect::<Result<Vec<_>, TensorError>>()?;
        let gather = Gather::separable(&padded, &along, 0.0)?;
        // Leading 1s do not change the row-major order the map reads.
        Ok(Gather { input: shape.into(), ..gather })
    }

    /// `repeat`: each element repeated `repeats` times in a row along `axis`; with no axis, of the
    /// row-major order of all elements (a vector), as NumPy's `repeat`.
    pub fn repeat(
        shape: &[usize],
        repeats: usize,
        axis: Option<usize>,
    ) -> Result<Gather, TensorError> {
        let (input, axis) = match axis {
            Some(axis) => (shape.to_vec(), axis),
            None => (vec![shape.iter().product()], 0),
        };
        let along = input
            .iter()
            .enumerate()
            .map(|(a, &n)| match a == axis {
                true => (0..n * repeats).map(|o| Some(o / repeats)).collect(),
                false => (0..n).map(Some).collect(),
            })
            .collect::<Vec<_>>();
        let gather = Gather::separable(&input, &along, 0.0)?;
        // Without an axis the input is the flattened tensor; the map reads it in row-major order,
        // which is also the original tensor's.
        Ok(Gather { input: shape.into(), ..gather })
    }

    /// `pad`: `widths[i] = (before, after)` new elements on either side of axis `i`, filled as
    /// `mode` says. `reflect` needs each width below the axis's extent and `edge` a non-empty
    /// axis, as in NumPy.
    pub fn pad(
        shape: &[usize],
        widths: &[(usize, usize)],
        mode: PadMode,
        value: f64,
    ) -> Result<Gather, TensorError> {
        if widths.len() != shape.len() {
            return Err(TensorError::Argument {
                op: "pad",
                reason: format!(
                    "{} pairs of widths for a tensor of rank {}",
                    widths.len(),
                    shape.len()
                ),
            });
        }
        let mut along = Vec::with_capacity(shape.len());
        for (axis, (&n, &(before, after))) in shape.iter().zip(widths).enumerate() {
            let too_wide = |limit: &str| TensorError::Argument {
                op: "pad",
                reason: format!(
                    "`{}` padding of axis {axis} (extent {n}) needs widths {limit}, got \
                     [{before}, {after}]",
                    match mode {
                        PadMode::Reflect => "reflect",
                        _ => "edge",
                    }
                ),
            };
            match mode {
                PadMode::Reflect if (before > 0 || after > 0) && (before >= n || after >= n) => {
                    return Err(too_wide("below the extent"));
                }
                PadMode::Edge if n == 0 && (before > 0 || after > 0) => {
                    return Err(too_wide("of 0 for an empty axis"));
                }
                _ => {}
            }
            let total = before.checked_add(n).and_then(|sum| sum.checked_add(after)).ok_or(
                TensorError::Argument {
                    op: "pad",
                    reason: "the padded extent overflows".to_owned(),
                },
            )?;
            let last = n.saturating_sub(1) as i64;
            let source = |o: usize| -> Option<usize> {
                let i = o as i64 - before as i64;
                if (0..n as i64).contains(&i) {
                    return Some(i as usize);
                }
                match mode {
                    PadMode::Constant => None,
                    PadMode::Edge => Some(i.clamp(0, last) as usize),
                    // One reflection suffices: the widths are below the extent.
                    PadMode::Reflect if i < 0 => Some((-i) as usize),
                    PadMode::Reflect => Some((2 * last - i) as usize),
                }
            };
            along.push((0..total).map(source).collect());
        }
        Gather::separable(shape, &along, value)
    }

    /// The prefixes of every lane along `axis`: the output has the lane's axis twice,
    /// `[..., j, i, ...]`, and holds input element `[..., i, ...]` where `i <= j`, `fill`
    /// after it. Reduced along the second of the two axes, it gives the running reduction of
    /// every lane (`cumprod` differentiates through a product of prefixes padded with 1s, added
    /// as a constant to the prefixes with a fill of 0: the autodiff rule of a gather is the
    /// scatter-add of its linear part, and that of a scatter-add the whole gather, fill
    /// included, so a map on the tape has a fill of 0).
    pub fn prefixes(shape: &[usize], axis: usize, fill: f64) -> Result<Gather, TensorError> {
        let Some(&n) = shape.get(axis) else {
            return Err(TensorError::Axis { axis: axis as i64, rank: shape.len() });
        };
        let mut output = shape[..axis].to_vec();
        output.extend_from_slice(&[n, n]);
        output.extend_from_slice(&shape[axis + 1..]);
        let len = check_allocation(&output)?;
        let strides = row_major_strides(shape);
        let mut sources = Vec::with_capacity(len);
        if len > 0 {
            let mut index = vec![0usize; output.len()];
            loop {
                let (j, i) = (index[axis], index[axis + 1]);
                let source = match i <= j {
                    true => {
                        let before: usize =
                            index[..axis].iter().zip(&strides).map(|(k, s)| k * s).sum();
                        let after: usize = index[axis + 2..]
                            .iter()
                            .zip(&strides[axis + 1..])
                            .map(|(k, s)| k * s)
                            .sum();
                        before + i * strides[axis] + after
                    }
                    false => Gather::FILL,
                };
                sources.push(source);
                if !advance(&mut index, &output) {
                    break;
                }
            }
        }
        Gather::new(shape, &output, sources, fill)
    }

    /// `take_along_axis(x, indices, axis)`: output element `[..., j, ...]` is
    /// `x[..., indices[..., j, ...], ...]` along `axis`; `indices` has `x`'s rank and extents but
    /// along `axis`, holds integers (negative ones count from the end) and gives the output shape.
    pub fn take_along(
        shape: &[usize],
        indices: &Tensor,
        axis: usize,
    ) -> Result<Gather, TensorError> {
        let rank = shape.len();
        let mismatch = || TensorError::TakeAlong {
            shape: shape.to_vec(),
            indices: indices.shape().to_vec(),
            axis,
        };
        if indices.rank() != rank
            || axis >= rank
            || indices.shape().iter().zip(shape).enumerate().any(|(a, (i, s))| a != axis && i != s)
        {
            return Err(mismatch());
        }
        let extent = shape[axis];
        let strides = row_major_strides(shape);
        let output = indices.shape().to_vec();
        let mut sources = Vec::with_capacity(indices.len());
        let mut position = vec![0usize; rank];
        for &value in indices.array().iter() {
            let index =
                integer_index(value, extent).ok_or(TensorError::IndexValue { value, extent })?;
            let offset: usize = position
                .iter()
                .enumerate()
                .map(|(a, &p)| if a == axis { index } else { p } * strides[a])
                .sum();
            sources.push(offset);
            advance(&mut position, &output);
        }
        Gather::new(shape, &output, sources, 0.0)
    }

    /// `x[entries]` for a bracket holding index tensors, as NumPy's advanced indexing: the index
    /// tensors and the integers of the bracket broadcast together to a shape `B`; each element
    /// of the result takes, on those axes, the positions their elements give at its place in
    /// `B`, and on the other axes what the slices select. The axes of `B` replace the indexed
    /// axes where these are adjacent in the bracket (`p[:, ids]`), and come first otherwise
    /// (`p[ids, :, 0]`). Slices, `...` and new axes follow the rules of basic indexing.
    ///
    /// The map copies whole rows when the axes after the last indexed one are taken whole (an
    /// embedding lookup `E[ids]`).
    ///
    /// A mask entry is the index tensors of its nonzero positions, one per axis it covers
    /// ([`nonzero_indices`]), as in NumPy: `x[m]` with a mask of `x`'s leading axes selects the
    /// elements (or rows) where `m` is nonzero, in row-major order.
    pub fn advanced(shape: &[usize], entries: &[Entry]) -> Result<Gather, TensorError> {
        if entries.iter().any(|entry| matches!(entry, Entry::Mask(_))) {
            let expanded = expand_masks(shape, entries)?;
            let mut owned = expanded.iter();
            let mut flat = Vec::with_capacity(entries.len());
            for entry in entries {
                match entry {
                    Entry::Mask(_) => {
                        let indices = owned.next().map_or(&[][..], Vec::as_slice);
                        flat.extend(indices.iter().map(Entry::Indices));
                    }
                    other => flat.push(*other),
                }
            }
            return Gather::advanced(shape, &flat);
        }
        /// An axis of the result: a slice of an input axis, a new axis, or the axes of `B`.
        enum Out {
            Range { axis: usize, first: usize, step: isize, len: usize },
            New,
            Indexed,
        }
        let rank = shape.len();
        let is_named = |e: &&Entry| {
            matches!(
                e,
                Entry::Indices(_)
                    | Entry::Mask(_)
                    | Entry::Basic(Subscript::At(_) | Subscript::Slice { .. })
            )
        };
        let named = entries.iter().filter(is_named).count();
        let ellipses =
            entries.iter().filter(|e| matches!(e, Entry::Basic(Subscript::Ellipsis))).count();
        if ellipses > 1 {
            return Err(TensorError::Ellipses { count: ellipses });
        }
        if named > rank {
            return Err(TensorError::TooManyIndices { count: named, rank });
        }
        let is_indexed =
            |e: &Entry| matches!(e, Entry::Indices(_) | Entry::Basic(Subscript::At(_)));
        let first = entries.iter().position(is_indexed);
        let last = entries.iter().rposition(is_indexed);
        let adjacent = match (first, last) {
            (Some(first), Some(last)) => entries[first..=last].iter().all(is_indexed),
            _ => true,
        };
        // The broadcast shape of the indices and, for each indexed axis, its positions.
        let mut indexed_shape: Vec<usize> = Vec::new();
        for entry in entries {
            if let Entry::Indices(indices) = entry {
                indexed_shape = broadcast_shapes(&indexed_shape, indices.shape())?;
            }
        }
        let indexed_len = check_allocation(&indexed_shape)?;
        let strides = row_major_strides(shape);
        let mut offsets = vec![0usize; indexed_len];
        let mut outs = Vec::with_capacity(rank + entries.len());
        if !adjacent {
            outs.push(Out::Indexed);
        }
        let mut axis = 0;
        for (position_in_bracket, entry) in entries.iter().enumerate() {
            match *entry {
                Entry::Basic(Subscript::NewAxis) => outs.push(Out::New),
                Entry::Basic(Subscript::Ellipsis) => {
                    for _ in 0..rank - named {
                        outs.push(Out::Range { axis, first: 0, step: 1, len: shape[axis] });
                        axis += 1;
                    }
                }
                Entry::Basic(Subscript::Slice { start, end, step }) => {
                    let (first, step, len) = slice(axis, shape[axis], start, end, step)?;
                    outs.push(Out::Range { axis, first, step, len });
                    axis += 1;
                }
                Entry::Basic(Subscript::At(i)) => {
                    let extent = shape[axis];
                    let at = position(i, extent).ok_or(TensorError::IndexOutOfRange {
                        axis,
                        index: i,
                        extent,
                    })?;
                    offsets.iter_mut().for_each(|offset| *offset += at * strides[axis]);
                    if adjacent && Some(position_in_bracket) == first {
                        outs.push(Out::Indexed);
                    }
                    axis += 1;
                }
                Entry::Mask(_) => {
                    return Err(TensorError::Argument {
                        op: "index",
                        reason: "a mask left in a bracket of index tensors".to_owned(),
                    });
                }
                Entry::Indices(indices) => {
                    let extent = shape[axis];
                    let spread = broadcast_to(indices, &indexed_shape)?;
                    for (offset, &value) in offsets.iter_mut().zip(spread.array().iter()) {
                        let at = integer_index(value, extent)
                            .ok_or(TensorError::IndexValue { value, extent })?;
                        *offset += at * strides[axis];
                    }
                    if adjacent && Some(position_in_bracket) == first {
                        outs.push(Out::Indexed);
                    }
                    axis += 1;
                }
            }
        }
        for (axis, &len) in shape.iter().enumerate().skip(axis) {
            outs.push(Out::Range { axis, first: 0, step: 1, len });
        }
        let mut output = Vec::with_capacity(outs.len() + indexed_shape.len());
        for out in &outs {
            match *out {
                Out::Range { len, .. } => output.push(len),
                Out::New => output.push(1),
                Out::Indexed => output.extend_from_slice(&indexed_shape),
            }
        }
        // The trailing result axes that are whole trailing input axes, in order, form the rows.
        let mut block = 1;
        let mut row_axes = outs.len();
        let mut next_axis = rank;
        while let Some(Out::Range { axis, first: 0, step: 1, len }) =
            row_axes.checked_sub(1).map(|i| &outs[i])
            && *axis + 1 == next_axis
            && *len == shape[*axis]
        {
            block *= len;
            next_axis = *axis;
            row_axes -= 1;
        }
        let outs = &outs[..row_axes];
        // An odometer over the remaining result axes (`B` counted as one), adding up the offsets.
        let extents: Vec<usize> = outs
            .iter()
            .map(|out| match *out {
                Out::Range { len, .. } => len,
                Out::New => 1,
                Out::Indexed => indexed_len,
            })
            .collect();
        let rows = check_allocation(&extents)?;
        let mut sources = Vec::with_capacity(rows);
        if rows > 0 {
            let mut index = vec![0usize; extents.len()];
            loop {
                let mut source = 0isize;
                for (out, &i) in outs.iter().zip(&index) {
                    source += match *out {
                        Out::Range { axis, first, step, .. } => {
                            (first as isize + step * i as isize) * strides[axis] as isize
                        }
                        Out::New => 0,
                        Out::Indexed => offsets[i] as isize,
                    };
                }
                sources.push(source as usize);
                if !advance(&mut index, &extents) {
                    break;
                }
            }
        }
        if block == 0 {
            // An empty row: nothing is read.
            return Gather::new(shape, &output, Vec::new(), 0.0);
        }
        Gather::rows(shape, &output, sources, block)
    }

    /// 1.0 at each output element that is the last (in row-major order) to read its input
    /// element, 0.0 at the others: what an assignment through the map writes when indices repeat
    /// (the last one wins, as in NumPy).
    pub fn last_reads(&self) -> Result<Tensor, TensorError> {
        let input_len = check_allocation(&self.input)?;
        let mut last = vec![usize::MAX; input_len.div_ceil(self.block.max(1))];
        for (row, &source) in self.sources.iter().enumerate() {
            if let Some(slot) = last.get_mut(source / self.block.max(1)) {
                *slot = row;
            }
        }
        let mut kept = Vec::with_capacity(self.sources.len() * self.block);
        for (row, &source) in self.sources.iter().enumerate() {
            let keep = last.get(source / self.block.max(1)) == Some(&row);
            kept.extend(std::iter::repeat_n(if keep { 1.0 } else { 0.0 }, self.block));
        }
        Tensor::from_vec(&self.output, kept)
    }

    /// 1.0 at each input element the map reads, 0.0 at the others.
    pub fn read_mask(&self) -> Result<Tensor, TensorError> {
        let len = check_allocation(&self.input)?;
        let mut mask = vec![0.0; len];
        for &source in self.sources.iter() {
            if let Some(read) = mask.get_mut(source..source.saturating_add(self.block)) {
                read.fill(1.0);
            }
        }
        Tensor::from_vec(&self.input, mask)
    }

    /// The sliding windows of a pooling over `x`'s shape `[N][C][spatial...]`, laid out as
    /// `[N][C][positions...][kernel...]` (each window's elements last, to be reduced), by the
    /// window walk of the convolutions ([`Windows::source`]). Elements in the padding take
    /// `fill`.
    pub fn windows(
        op: &'static str,
        shape: &[usize],
        windows: &Windows,
        fill: f64,
    ) -> Result<Gather, TensorError> {
        let d = windows.kernel.len();
        if shape.len() != d + 2 {
            return Err(TensorError::Rank {
                op,
                expected: if d == 1 { "a Tensor[N][C][L]" } else { "a Tensor[N][C][H][W]" },
                shape: shape.to_vec(),
            });
        }
        let (n, c, spatial) = (shape[0], shape[1], &shape[2..]);
        let positions = windows.positions(op, spatial)?;
        let kernel = &windows.kernel;
        let output: Vec<usize> = [&[n, c][..], &positions, kernel].concat();
        let len = check_allocation(&output)?;
        let strides = row_major_strides(shape);
        let mut sources = Vec::with_capacity(len);
        if len > 0 {
            let mut index = vec![0usize; output.len()];
            let (mut ks, mut ps) = (vec![0; d], vec![0; d]);
            loop {
                ps.copy_from_slice(&index[2..2 + d]);
                ks.copy_from_slice(&index[2 + d..]);
                let (batch, channel) = (index[0], index[1]);
                let mut offset = Some(batch * strides[0] + channel * strides[1]);
                for axis in 0..d {
                    offset = match (offset, windows.source(axis, spatial[axis], ks[axis], ps[axis]))
                    {
                        (Some(offset), Some(i)) => Some(offset + i * strides[2 + axis]),
                        _ => None,
                    };
                }
                sources.push(offset.unwrap_or(Gather::FILL));
                if !advance(&mut index, &output) {
                    break;
                }
            }
        }
        Gather::new(shape, &output, sources, fill)
    }
}

/// The flat (row-major) positions of the nonzero elements of `mask`, in order: NumPy's
/// `flatnonzero` (a NaN is nonzero). The `nonzero` built-in and every selection by a mask use it.
pub fn nonzero(mask: &Tensor) -> Vec<usize> {
    let mut positions = Vec::new();
    for (position, &value) in mask.array().iter().enumerate() {
        if value != 0.0 {
            positions.push(position);
        }
    }
    positions
}

/// The nonzero positions of `mask` as one tensor of indices per axis, each of extent the number
/// of nonzero elements (NumPy's `nonzero`).
pub fn nonzero_indices(mask: &Tensor) -> Result<Vec<Tensor>, TensorError> {
    let positions = nonzero(mask);
    let strides = row_major_strides(mask.shape());
    let mut indices = Vec::with_capacity(mask.rank());
    for (axis, &extent) in mask.shape().iter().enumerate() {
        let along = positions.iter().map(|&p| (p / strides[axis] % extent) as f64).collect();
        indices.push(Tensor::from_vec(&[positions.len()], along)?);
    }
    Ok(indices)
}

/// For each mask entry of `entries`, in order, its index tensors ([`nonzero_indices`]), after
/// checking that its extents are those of the axes it covers.
fn expand_masks(shape: &[usize], entries: &[Entry]) -> Result<Vec<Vec<Tensor>>, TensorError> {
    let named: usize = entries
        .iter()
        .map(|entry| match entry {
            Entry::Mask(mask) => mask.rank(),
            Entry::Indices(_) | Entry::Basic(Subscript::At(_) | Subscript::Slice { .. }) => 1,
            Entry::Basic(Subscript::Ellipsis | Subscript::NewAxis) => 0,
        })
        .sum();
    if named > shape.len() {
        // A mask that runs past the last axis says so; other entries count as too many.
        if let Some(error) = mask_past_end(shape, entries) {
            return Err(error);
        }
        return Err(TensorError::TooManyIndices { count: named, rank: shape.len() });
    }
    let mut expanded = Vec::new();
    let mut axis = 0;
    for entry in entries {
        match entry {
            Entry::Mask(mask) => {
                let axes = &shape[axis..axis + mask.rank()];
                if mask.rank() == 0 || mask.shape() != axes {
                    return Err(TensorError::MaskShape {
                        mask: mask.shape().to_vec(),
                        axis,
                        axes: axes.to_vec(),
                    });
                }
                expanded.push(nonzero_indices(mask)?);
                axis += mask.rank();
            }
            Entry::Basic(Subscript::Ellipsis) => axis += shape.len() - named,
            Entry::Basic(Subscript::NewAxis) => {}
            _ => axis += 1,
        }
    }
    Ok(expanded)
}

/// The error of the first mask of `entries` that covers axes past the last one of `shape`.
fn mask_past_end(shape: &[usize], entries: &[Entry]) -> Option<TensorError> {
    let mut axis = 0;
    for entry in entries {
        match entry {
            Entry::Mask(mask) if axis + mask.rank() > shape.len() => {
                return Some(TensorError::MaskShape {
                    mask: mask.shape().to_vec(),
                    axis,
                    axes: shape.get(axis..).unwrap_or_default().to_vec(),
                });
            }
            Entry::Mask(mask) => axis += mask.rank(),
            Entry::Basic(Subscript::Ellipsis | Subscript::NewAxis) => {}
            _ => axis += 1,
        }
    }
    None
}

/// The row-major strides of `shape`, in elements.
fn row_major_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for axis in (0..shape.len().saturating_sub(1)).rev() {
        strides[axis] = strides[axis + 1] * shape[axis + 1];
    }
    strides
}

/// Steps a row-major multi-index; `false` when it wraps past the last one.
fn advance(index: &mut [usize], shape: &[usize]) -> bool {
    for axis in (0..index.len()).rev() {
        index[axis] += 1;
        if index[axis] < shape[axis] {
            return true;
        }
        index[axis] = 0;
    }
    false
}

/// `dims` with leading 1s up to `rank` entries.
fn with_leading_ones(dims: &[usize], rank: usize) -> Vec<usize> {
    let mut padded = vec![1; rank - dims.len()];
    padded.extend_from_slice(dims);
    padded
}

/// An index held in a float: an exact integer in `-extent..extent`, negative ones counting from
/// the end.
pub(crate) fn integer_index(value: f64, extent: usize) -> Option<usize> {
    let range: Range<f64> = -(extent as f64)..extent as f64;
    if value.fract() != 0.0 || !range.contains(&value) {
        return None;
    }
    let index = value as i64;
    Some(if index < 0 { (index + extent as i64) as usize } else { index as usize })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_vec(shape, values.to_vec()).unwrap()
    }

    fn range(shape: &[usize]) -> Tensor {
        let len = shape.iter().product::<usize>();
        tensor(shape, &(0..len).map(|i| i as f64).collect::<Vec<_>>())
    }

    /// `gather` and `scatter_add` are each other's transpose: <G x, y> = <x, G^T y>.
    fn assert_transposed(gather: &Gather) {
        let x = range(gather.input_shape()).map(|v| (v * 0.37).sin());
        let y = range(gather.output_shape()).map(|v| (v * 0.71).cos());
        let gx = gather.apply(&x).unwrap().map(|v| if v.is_finite() { v } else { 0.0 });
        let lhs: f64 = gx.to_vec().iter().zip(y.to_vec()).map(|(a, b)| a * b).sum();
        let gty = gather.scatter_add(&y).unwrap();
        let rhs: f64 = x.to_vec().iter().zip(gty.to_vec()).map(|(a, b)| a * b).sum();
        assert!((lhs - rhs).abs() < 1e-12, "{lhs} != {rhs}");
    }

    // The expected values below were computed once with NumPy 2.4 (np.flip, np.roll, np.tile,
    // np.repeat, np.pad, np.take_along_axis) on np.arange inputs.

    #[test]
    fn flip_roll_tile_repeat_match_numpy() {
        let x = range(&[2, 3]);
        let flipped = Gather::flip(&[2, 3], &[1]).unwrap();
        assert_eq!(flipped.apply(&x).unwrap().to_vec(), [2.0, 1.0, 0.0, 5.0, 4.0, 3.0]);
        let both = Gather::flip(&[2, 3], &[0, 1]).unwrap();
        assert_eq!(both.apply(&x).unwrap().to_vec(), [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]);
        let rolled = Gather::roll(&[2, 3], 1, Some(1)).unwrap();
        assert_eq!(rolled.apply(&x).unwrap().to_vec(), [2.0, 0.0, 1.0, 5.0, 3.0, 4.0]);
        let back = Gather::roll(&[2, 3], -4, Some(1)).unwrap();
        assert_eq!(back.apply(&x).unwrap().to_vec(), [1.0, 2.0, 0.0, 4.0, 5.0, 3.0]);
        let flat = Gather::roll(&[2, 3], 2, None).unwrap();
        assert_eq!(flat.apply(&x).unwrap().to_vec(), [4.0, 5.0, 0.0, 1.0, 2.0, 3.0]);
        let tiled = Gather::tile(&[2, 3], &[2]).unwrap();
        assert_eq!(tiled.output_shape(), [2, 6]);
        let expected = [0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0];
        assert_eq!(tiled.apply(&x).unwrap().to_vec(), expected);
        let grown = Gather::tile(&[3], &[2, 1]).unwrap();
        assert_eq!(grown.output_shape(), [2, 3]);
        assert_eq!(grown.apply(&range(&[3])).unwrap().to_vec(), [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]);
        let repeated = Gather::repeat(&[2, 3], 2, Some(0)).unwrap();
        assert_eq!(repeated.output_shape(), [4, 3]);
        let expected = [0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0];
        assert_eq!(repeated.apply(&x).unwrap().to_vec(), expected);
        let flat = Gather::repeat(&[2, 2], 2, None).unwrap();
        assert_eq!(flat.output_shape(), [8]);
        let expected = [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0];
        assert_eq!(flat.apply(&range(&[2, 2])).unwrap().to_vec(), expected);
        for gather in [flipped, both, rolled, back, tiled, grown, repeated, flat] {
            assert_transposed(&gather);
        }
        // Empty axes.
        assert_eq!(Gather::roll(&[0], 3, Some(0)).unwrap().apply(&range(&[0])).unwrap().len(), 0);
        assert_eq!(Gather::tile(&[0, 2], &[3, 2]).unwrap().output_shape(), [0, 4]);
    }

    #[test]
    fn pad_matches_numpy() {
        let v = tensor(&[3], &[1.0, 2.0, 3.0]);
        let cases = [
            (PadMode::Constant, (2, 1), vec![0.0, 0.0, 1.0, 2.0, 3.0, 0.0]),
            (PadMode::Reflect, (2, 2), vec![3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]),
            (PadMode::Edge, (2, 1), vec![1.0, 1.0, 1.0, 2.0, 3.0, 3.0]),
        ];
        for (mode, widths, expected) in cases {
            let gather = Gather::pad(&[3], &[widths], mode, 0.0).unwrap();
            assert_eq!(gather.apply(&v).unwrap().to_vec(), expected, "{mode:?}");
            assert_transposed(&gather);
        }
        let x = range(&[2, 3]);
        let gather = Gather::pad(&[2, 3], &[(1, 0), (1, 2)], PadMode::Reflect, 0.0).unwrap();
        assert_eq!(gather.output_shape(), [3, 6]);
        #[rustfmt::skip]
        let expected = [
            4.0, 3.0, 4.0, 5.0, 4.0, 3.0,
            1.0, 0.0, 1.0, 2.0, 1.0, 0.0,
            4.0, 3.0, 4.0, 5.0, 4.0, 3.0,
        ];
        assert_eq!(gather.apply(&x).unwrap().to_vec(), expected);
        assert_transposed(&gather);
        assert_eq!(
            Gather::pad(&[3], &[(3, 0)], PadMode::Reflect, 0.0).unwrap_err().to_string(),
            "pad: `reflect` padding of axis 0 (extent 3) needs widths below the extent, got [3, 0]"
        );
        assert_eq!(
            Gather::pad(&[0], &[(1, 0)], PadMode::Edge, 0.0).unwrap_err().to_string(),
            "pad: `edge` padding of axis 0 (extent 0) needs widths of 0 for an empty axis, got [1, 0]"
        );
        assert_eq!(
            Gather::pad(&[3], &[(1, 0), (1, 1)], PadMode::Edge, 0.0).unwrap_err().to_string(),
            "pad: 2 pairs of widths for a tensor of rank 1"
        );
        // Constant padding of an empty axis is fine.
        assert_eq!(
            Gather::pad(&[0], &[(1, 2)], PadMode::Constant, 0.0).unwrap().output_shape(),
            [3]
        );
    }

    #[test]
    fn prefixes_lay_out_running_lanes() {
        let x = range(&[2, 3]);
        let gather = Gather::prefixes(&[2, 3], 1, 1.0).unwrap();
        assert_eq!(gather.output_shape(), [2, 3, 3]);
        #[rustfmt::skip]
        let expected = [
            0.0, 1.0, 1.0,   0.0, 1.0, 1.0,   0.0, 1.0, 2.0,
            3.0, 1.0, 1.0,   3.0, 4.0, 1.0,   3.0, 4.0, 5.0,
        ];
        assert_eq!(gather.apply(&x).unwrap().to_vec(), expected);
        // The fill is the constant part; the linear part is checked with a fill of 0.
        assert_transposed(&Gather::prefixes(&[2, 3], 1, 0.0).unwrap());
        let down = Gather::prefixes(&[2, 3], 0, 0.0).unwrap();
        assert_eq!(down.output_shape(), [2, 2, 3]);
        let expected = [0.0, 1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(down.apply(&x).unwrap().to_vec(), expected);
        assert_transposed(&down);
        assert_eq!(Gather::prefixes(&[0, 2], 0, 1.0).unwrap().output_shape(), [0, 0, 2]);
    }

    #[test]
    fn take_along_matches_numpy() {
        let x = range(&[2, 3]);
        let indices = tensor(&[2, 2], &[2.0, 0.0, -1.0, 1.0]);
        let gather = Gather::take_along(&[2, 3], &indices, 1).unwrap();
        assert_eq!(gather.apply(&x).unwrap().to_vec(), [2.0, 0.0, 5.0, 4.0]);
        assert_transposed(&gather);
        let rows = tensor(&[1, 3], &[1.0, 0.0, 1.0]);
        let gather = Gather::take_along(&[2, 3], &rows, 0).unwrap();
        assert_eq!(gather.apply(&x).unwrap().to_vec(), [3.0, 1.0, 5.0]);
        assert_eq!(
            Gather::take_along(&[2, 3], &tensor(&[2, 1], &[3.0, 0.0]), 1).unwrap_err().to_string(),
            "index 3 is not an integer in the range -3 to 2"
        );
        assert_eq!(
            Gather::take_along(&[2, 3], &tensor(&[2, 1], &[0.5, 0.0]), 1).unwrap_err().to_string(),
            "index 0.5 is not an integer in the range -3 to 2"
        );
        assert_eq!(
            Gather::take_along(&[2, 3], &tensor(&[3, 1], &[0.0; 3]), 1).unwrap_err().to_string(),
            "take_along_axis: indices Tensor[3][1] do not fit Tensor[2][3] along axis 1"
        );
    }

    // The expected values were computed once with NumPy 2.4 (x[m] on x = np.arange(24.)
    // .reshape(2, 3, 4), np.flatnonzero, np.nonzero).
    #[test]
    fn masks_select_as_numpy_does() {
        let x = range(&[2, 3, 4]);
        let m2 = tensor(&[2, 3], &[1.0, 0.0, 1.0, 0.0, 0.0, 1.0]);
        assert_eq!(nonzero(&m2), [0, 2, 5]);
        let per_axis: Vec<Vec<f64>> =
            nonzero_indices(&m2).unwrap().iter().map(Tensor::to_vec).collect();
        assert_eq!(per_axis, [vec![0.0, 0.0, 1.0], vec![0.0, 2.0, 2.0]]);
        let rows = Gather::advanced(&[2, 3, 4], &[Entry::Mask(&m2)]).unwrap();
        assert_eq!(rows.output_shape(), [3, 4]);
        let expected = [0.0, 1.0, 2.0, 3.0, 8.0, 9.0, 10.0, 11.0, 20.0, 21.0, 22.0, 23.0];
        assert_eq!(rows.apply(&x).unwrap().to_vec(), expected);
        assert_transposed(&rows);
        let m3 = tensor(&[3], &[1.0, 0.0, 1.0]);
        let columns =
            Gather::advanced(&[2, 3, 4], &[Entry::Basic(Subscript::FULL), Entry::Mask(&m3)])
                .unwrap();
        assert_eq!(columns.output_shape(), [2, 2, 4]);
        assert_transposed(&columns);
        let m1 = tensor(&[2], &[0.0, 1.0]);
        let apart = Gather::advanced(
            &[2, 3, 4],
            &[Entry::Mask(&m1), Entry::Basic(Subscript::FULL), Entry::Basic(Subscript::At(1))],
        )
        .unwrap();
        assert_eq!(apart.output_shape(), [1, 3]);
        assert_eq!(apart.apply(&x).unwrap().to_vec(), [13.0, 17.0, 21.0]);
        let none = Gather::advanced(&[3], &[Entry::Mask(&tensor(&[3], &[0.0; 3]))]).unwrap();
        assert_eq!(none.output_shape(), [0]);
        // Extents that differ, a mask past the last axis, and a mask of rank 0.
        let error = |entries: &[Entry]| Gather::advanced(&[2, 3, 4], entries).unwrap_err();
        assert_eq!(
            error(&[Entry::Mask(&m3)]).to_string(),
            "the mask is Tensor[3], but the axes it selects from (from axis 0 on) have extents \
             [2]: a mask has the extents of the axes it selects from"
        );
        assert_eq!(
            error(&[
                Entry::Basic(Subscript::FULL),
                Entry::Basic(Subscript::FULL),
                Entry::Mask(&m2)
            ])
            .to_string(),
            "the mask is Tensor[2][3], but the tensor has only 1 axis ([4]) from axis 2 on"
        );
        assert_eq!(
            error(&[Entry::Mask(&tensor(&[], &[1.0]))]).to_string(),
            "a mask of rank 0 selects from no axis: a mask has the extents of the axes it \
             selects from"
        );
    }

    /// Writes in place agree with the scatter-add (`+=`, np.add.at) and keep the last of
    /// repeated indices (`=`, as NumPy); a shared buffer is copied, not changed.
    #[test]
    fn writes_through_a_map_cost_what_they_write() {
        let ids = tensor(&[3], &[2.0, 0.0, 2.0]);
        let rows = Gather::advanced(&[4, 2], &[Entry::Indices(&ids)]).unwrap();
        let values = tensor(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let target = range(&[4, 2]);
        let shared = target.clone();
        let added = rows.write_into(target.clone(), &values, true).unwrap();
        // np.add.at(np.arange(8.).reshape(4, 2), [2, 0, 2], [[1, 2], [3, 4], [5, 6]])
        assert_eq!(added.to_vec(), [3.0, 5.0, 2.0, 3.0, 10.0, 13.0, 6.0, 7.0]);
        let via_scatter = rows.scatter_add(&values).unwrap().to_vec();
        let expected: Vec<f64> =
            target.to_vec().iter().zip(via_scatter).map(|(a, b)| a + b).collect();
        assert_eq!(added.to_vec(), expected);
        let written = rows.write_into(target, &values, false).unwrap();
        assert_eq!(written.to_vec(), [3.0, 4.0, 2.0, 3.0, 5.0, 6.0, 6.0, 7.0]);
        assert_eq!(shared.to_vec(), range(&[4, 2]).to_vec());
    }

    #[test]
    fn windows_lay_out_patches() {
        // One 3x3 image, 2x2 windows with stride 1: each window's elements last.
        let x = range(&[1, 1, 3, 3]);
        let unit = |n: usize| vec![n, n];
        let windows =
            Windows { kernel: unit(2), stride: unit(1), padding: unit(0), dilation: unit(1) };
        let gather = Gather::windows("avg_pool2d", &[1, 1, 3, 3], &windows, 0.0).unwrap();
        assert_eq!(gather.output_shape(), [1, 1, 2, 2, 2, 2]);
        #[rustfmt::skip]
        let expected = [
            0.0, 1.0, 3.0, 4.0,
            1.0, 2.0, 4.0, 5.0,
            3.0, 4.0, 6.0, 7.0,
            4.0, 5.0, 7.0, 8.0,
        ];
        assert_eq!(gather.apply(&x).unwrap().to_vec(), expected);
        assert_transposed(&gather);
        // Padding 1, stride 2: the corners of a padded 5x5; pooling layout with -inf fill.
        let windows =
            Windows { kernel: unit(2), stride: unit(2), padding: unit(1), dilation: unit(1) };
        let gather =
            Gather::windows("max_pool2d", &[1, 1, 3, 3], &windows, f64::NEG_INFINITY).unwrap();
        assert_eq!(gather.output_shape(), [1, 1, 2, 2, 2, 2]);
        let inf = f64::NEG_INFINITY;
        #[rustfmt::skip]
        let expected = [
            inf, inf, inf, 0.0,
            inf, inf, 1.0, 2.0,
            inf, 3.0, inf, 6.0,
            4.0, 5.0, 7.0, 8.0,
        ];
        assert_eq!(gather.apply(&x).unwrap().to_vec(), expected);
        assert_transposed(&gather);
        // Dilation 2 on a 1-d signal.
        let windows =
            Windows { kernel: vec![2], stride: vec![1], padding: vec![0], dilation: vec![2] };
        let gather = Gather::windows("conv1d", &[1, 1, 4], &windows, 0.0).unwrap();
        assert_eq!(gather.apply(&range(&[1, 1, 4])).unwrap().to_vec(), [0.0, 2.0, 1.0, 3.0]);
        assert_eq!(
            Gather::windows("conv1d", &[1, 1, 2], &windows, 0.0).unwrap_err().to_string(),
            "conv1d: a window spanning 3 elements does not fit an axis of extent 2 with padding 0"
        );
    }
}
