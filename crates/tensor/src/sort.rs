//! Sorting along an axis: the stable order of each lane (`argsort`), from which `sort` and `topk`
//! gather their values, so that their gradients flow back through the same [`Gather`].
//!
//! Orders are stable (equal elements keep their order, as NumPy's `kind="stable"`), NaN sorts
//! after every number (as in NumPy), `-0.0` and `0.0` are equal, and a descending order is the
//! ascending order of the reversed comparison (NaN first, as PyTorch's `sort(descending=True)`),
//! still stable. Long lanes are sorted by an LSD radix sort on order-preserving integer keys,
//! short ones by a comparison sort on the same keys.

use super::Tensor;
use super::allocation::check_allocation;
use super::error::TensorError;
use super::gather::Gather;

/// Lanes at least this long take the radix sort; shorter ones a comparison sort.
const RADIX_THRESHOLD: usize = 256;

/// Bits per radix digit: six passes cover the 64-bit keys.
const DIGIT_BITS: u32 = 11;
const BUCKETS: usize = 1 << DIGIT_BITS;
const PASSES: usize = 64_usize.div_ceil(DIGIT_BITS as usize);

/// An integer whose unsigned order is the sort order of `x` (see the module documentation).
#[inline]
fn key(x: f64, descending: bool) -> u64 {
    let ascending = if x.is_nan() {
        u64::MAX
    } else {
        // Both zeros take the key of +0.0.
        let bits = if x == 0.0 { 0 } else { x.to_bits() };
        if bits >> 63 == 1 { !bits } else { bits | (1 << 63) }
    };
    if descending { !ascending } else { ascending }
}

/// The positions of `values` in sorted order.
fn lane_order(values: &[f64], descending: bool, keys: &mut Vec<u64>, order: &mut Vec<u32>) {
    keys.clear();
    keys.extend(values.iter().map(|&x| key(x, descending)));
    order.clear();
    order.extend(0..values.len() as u32);
    if values.len() < RADIX_THRESHOLD {
        // `sort_by_key` is stable.
        order.sort_by_key(|&i| keys[i as usize]);
        return;
    }
    radix_sort(keys, order);
}

/// The float whose [`key`] is `key`, for keys of neither zero nor NaN (the two that several
/// floats share).
#[inline]
fn unkey(key: u64, descending: bool) -> f64 {
    let ascending = if descending { !key } else { key };
    f64::from_bits(if ascending >> 63 == 1 { ascending & !(1 << 63) } else { !ascending })
}

/// Sorts `keys` and permutes `payload` (as long, or empty for keys alone: a `Vec<()>` of any
/// length holds nothing) along, stably, by least significant digit first; a digit that every
/// key shares is skipped.
fn radix_sort<P: Copy + Default>(keys: &mut Vec<u64>, payload: &mut Vec<P>) {
    let n = keys.len();
    let mut histograms = vec![[0usize; BUCKETS]; PASSES];
    for &key in keys.iter() {
        for (pass, histogram) in histograms.iter_mut().enumerate() {
            histogram[digit(key, pass)] += 1;
        }
    }
    let mut spare_keys = vec![0u64; n];
    let mut spare_payload = vec![P::default(); n];
    for (pass, histogram) in histograms.iter_mut().enumerate() {
        if histogram.contains(&n) {
            continue;
        }
        let mut start = 0;
        for count in histogram.iter_mut() {
            let next = start + *count;
            *count = start;
            start = next;
        }
        for (i, &key) in keys.iter().enumerate() {
            let slot = &mut histogram[digit(key, pass)];
            spare_keys[*slot] = key;
            if let Some(&item) = payload.get(i) {
                spare_payload[*slot] = item;
            }
            *slot += 1;
        }
        std::mem::swap(keys, &mut spare_keys);
        std::mem::swap(payload, &mut spare_payload);
    }
}

#[inline(always)]
fn digit(key: u64, pass: usize) -> usize {
    ((key >> (pass as u32 * DIGIT_BITS)) as usize) & (BUCKETS - 1)
}

/// For every lane of `x` along `axis`, the row-major offsets in `x` of its elements in sorted
/// order, laid out like `x`; lanes longer than `u32::MAX` elements are an error.
fn sorted_offsets(x: &Tensor, axis: usize, descending: bool) -> Result<Vec<usize>, TensorError> {
    let shape = x.shape();
    let extent = shape[axis];
    if u32::try_from(extent).is_err() {
        return Err(TensorError::Argument {
            op: "sort",
            reason: format!("an axis of {extent} elements is longer than sorting supports"),
        });
    }
    let len = check_allocation(shape)?;
    let stride: usize = shape[axis + 1..].iter().product();
    let standard = x.array().as_standard_layout();
    let mut offsets = vec![0usize; len];
    let (mut keys, mut order) = (Vec::new(), Vec::new());
    for_each_lane(&standard.view(), len, axis, |base, lane| {
        lane_order(lane, descending, &mut keys, &mut order);
        for (k, &position) in order.iter().enumerate() {
            offsets[base + k * stride] = base + position as usize * stride;
        }
    });
    Ok(offsets)
}

/// Calls `visit(base, lane)` with the elements of every lane of `array` along `axis`, for a
/// tensor of `len` elements in standard layout: lane `(outer, inner)` holds the elements at
/// `base + k * stride` with `base = outer * extent * stride + inner`.
fn for_each_lane(
    array: &ndarray::ArrayViewD<f64>,
    len: usize,
    axis: usize,
    mut visit: impl FnMut(usize, &[f64]),
) {
    let shape = array.shape();
    let extent = shape[axis];
    let stride: usize = shape[axis + 1..].iter().product();
    // A tensor in standard layout is contiguous.
    let values = array.as_slice().unwrap_or_default();
    let mut lane = Vec::with_capacity(extent);
    let outer_count = len.checked_div(extent * stride).unwrap_or(0);
    for outer in 0..outer_count {
        for inner in 0..stride {
            let base = outer * extent * stride + inner;
            lane.clear();
            lane.extend((0..extent).map(|k| values.get(base + k * stride).copied().unwrap_or(0.0)));
            visit(base, &lane);
        }
    }
}

/// The [`Gather`] that sorts every lane of `x` along `axis`.
pub fn sort_gather(x: &Tensor, axis: usize, descending: bool) -> Result<Gather, TensorError> {
    let offsets = sorted_offsets(x, axis, descending)?;
    Gather::new(x.shape(), x.shape(), offsets, 0.0)
}

/// The [`Gather`] that takes the first `k` elements of every lane of `x` along `axis` in
/// descending order: the values of `topk`.
pub fn topk_gather(x: &Tensor, k: usize, axis: usize) -> Result<Gather, TensorError> {
    let extent = x.shape()[axis];
    if k > extent {
        return Err(TensorError::Argument {
            op: "topk",
            reason: format!("k = {k} is more than the {extent} elements along axis {axis}"),
        });
    }
    let offsets = sorted_offsets(x, axis, true)?;
    let mut output = x.shape().to_vec();
    output[axis] = k;
    let stride: usize = x.shape()[axis + 1..].iter().product();
    // Keep position `j < k` of every lane.
    let kept = offsets
        .into_iter()
        .enumerate()
        .filter(|(i, _)| (i / stride) % extent.max(1) < k)
        .map(|(_, offset)| offset)
        .collect();
    Gather::new(x.shape(), &output, kept, 0.0)
}

/// For every element of a tensor of `shape`, its position along `axis`, as a float: gathered
/// through [`topk_gather`]'s map, the indices `topk` returns beside its values.
pub fn positions_along(shape: &[usize], axis: usize) -> Result<Tensor, TensorError> {
    let len = check_allocation(shape)?;
    let extent = shape.get(axis).copied().unwrap_or(1).max(1);
    let stride: usize = shape.get(axis + 1..).unwrap_or_default().iter().product();
    // Positions are below 2^53 and convert to `f64` exactly.
    let positions = (0..len).map(|i| ((i / stride.max(1)) % extent) as f64).collect();
    Tensor::from_vec(shape, positions)
}

/// The values of `sort` (what [`sort_gather`]'s map gives, bit for bit) without the map: a
/// lane that holds neither a zero nor a NaN has a different key for every different float, so
/// its keys alone are sorted and turned back into floats (half the memory traffic of sorting
/// positions along, and no gather); other lanes take the positions' order.
pub fn sort_values(x: &Tensor, axis: usize, descending: bool) -> Result<Tensor, TensorError> {
    let shape = x.shape();
    let extent = shape[axis];
    let stride: usize = shape[axis + 1..].iter().product();
    let len = check_allocation(shape)?;
    let standard = x.array().as_standard_layout();
    let mut sorted = vec![0.0; len];
    let (mut keys, mut order) = (Vec::new(), Vec::new());
    for_each_lane(&standard.view(), len, axis, |base, lane| {
        if extent >= RADIX_THRESHOLD && lane.iter().all(|&v| v != 0.0 && !v.is_nan()) {
            keys.clear();
            keys.extend(lane.iter().map(|&v| key(v, descending)));
            radix_sort(&mut keys, &mut vec![(); extent]);
            for (k, &key) in keys.iter().enumerate() {
                sorted[base + k * stride] = unkey(key, descending);
            }
        } else {
            lane_order(lane, descending, &mut keys, &mut order);
            for (k, &position) in order.iter().enumerate() {
                sorted[base + k * stride] = lane[position as usize];
            }
        }
    });
    Tensor::from_vec(shape, sorted)
}

/// `argsort`: the position along `axis` of each element of the sorted lanes, as floats.
pub fn argsort(x: &Tensor, axis: usize, descending: bool) -> Result<Tensor, TensorError> {
    let offsets = sorted_offsets(x, axis, descending)?;
    let shape = x.shape();
    let (extent, stride) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    // An offset's position along the axis; positions convert to `f64` exactly.
    let positions = offsets.iter().map(|&offset| ((offset / stride) % extent) as f64).collect();
    Tensor::from_vec(shape, positions)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_vec(shape, values.to_vec()).unwrap()
    }

    fn sorted(x: &Tensor, axis: usize, descending: bool) -> Vec<f64> {
        sort_gather(x, axis, descending).unwrap().apply(x).unwrap().to_vec()
    }

    // Expected values computed once with NumPy 2.4 (np.sort, np.argsort(kind="stable")) and
    // PyTorch 2.15 (torch.topk, torch.sort(descending=True, stable=True)).

    #[test]
    fn sort_and_argsort_match_numpy() {
        let nan = f64::NAN;
        let x = tensor(&[7], &[3.0, nan, -1.0, 3.0, 0.0, -0.0, -2.5]);
        let ascending = sorted(&x, 0, false);
        assert_eq!(&ascending[..6], [-2.5, -1.0, 0.0, -0.0, 3.0, 3.0]);
        assert!(ascending[6].is_nan());
        assert_eq!(argsort(&x, 0, false).unwrap().to_vec(), [6.0, 2.0, 4.0, 5.0, 0.0, 3.0, 1.0]);
        assert_eq!(argsort(&x, 0, true).unwrap().to_vec(), [1.0, 0.0, 3.0, 4.0, 5.0, 2.0, 6.0]);
        let m = tensor(&[2, 3], &[3.0, 1.0, 2.0, -1.0, 5.0, 0.0]);
        assert_eq!(sorted(&m, 1, false), [1.0, 2.0, 3.0, -1.0, 0.0, 5.0]);
        assert_eq!(sorted(&m, 0, false), [-1.0, 1.0, 0.0, 3.0, 5.0, 2.0]);
        assert_eq!(argsort(&m, 0, false).unwrap().to_vec(), [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]);
        assert_eq!(sorted(&tensor(&[0], &[]), 0, false), Vec::<f64>::new());
    }

    #[test]
    fn the_radix_sort_agrees_with_a_comparison_sort() {
        // Long lanes with ties, both zeros, infinities and NaN.
        let mut rng = crate::Rng::from_seed(3);
        let specials = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1.0, -1.0];
        let values: Vec<f64> = (0..5000)
            .map(|i| match i % 7 {
                0 => specials[(rng.next_u64() % 7) as usize],
                _ => (rng.next_uniform() - 0.5) * 10f64.powi((rng.next_u64() % 40) as i32 - 20),
            })
            .collect();
        for descending in [false, true] {
            let (mut keys, mut order) = (Vec::new(), Vec::new());
            lane_order(&values, descending, &mut keys, &mut order);
            let mut expected: Vec<u32> = (0..values.len() as u32).collect();
            expected.sort_by_key(|&i| key(values[i as usize], descending));
            assert_eq!(order, expected);
        }
    }

    #[test]
    fn sorted_values_are_the_gathered_ones() {
        // Lanes with and without zeros and NaN, long enough for the radix sort, both orders.
        let mut rng = crate::Rng::from_seed(5);
        let plain: Vec<f64> = (0..3000).map(|_| rng.next_uniform() - 0.5).collect();
        let mut special = plain.clone();
        for (i, value) in [0.0, -0.0, f64::NAN, 0.0].into_iter().enumerate() {
            special[i * 700] = value;
        }
        for values in [plain, special] {
            let x = tensor(&[2, 1500], &values);
            for (axis, descending) in [(1, false), (1, true), (0, false)] {
                let expected = sorted(&x, axis, descending);
                let actual = sort_values(&x, axis, descending).unwrap().to_vec();
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&actual), bits(&expected), "axis {axis} descending {descending}");
            }
        }
    }

    #[test]
    fn topk_takes_the_largest_first() {
        let x = tensor(&[2, 4], &[1.0, 4.0, 4.0, 2.0, -1.0, f64::NAN, 7.0, 0.0]);
        let gather = topk_gather(&x, 2, 1).unwrap();
        assert_eq!(gather.output_shape(), [2, 2]);
        let values = gather.apply(&x).unwrap().to_vec();
        assert_eq!(values[..2], [4.0, 4.0]);
        assert!(values[2].is_nan());
        assert_eq!(values[3], 7.0);
        // The first of two tied elements comes first, so it is the one a gradient reaches.
        let y = gather.scatter_add(&tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0])).unwrap();
        assert_eq!(y.to_vec(), [0.0, 1.0, 2.0, 0.0, 0.0, 3.0, 4.0, 0.0]);
        assert_eq!(
            topk_gather(&x, 5, 1).unwrap_err().to_string(),
            "topk: k = 5 is more than the 4 elements along axis 1"
        );
        assert_eq!(topk_gather(&x, 0, 1).unwrap().output_shape(), [2, 0]);
        // Its indices: the positions along the axis, through the same map.
        let positions = positions_along(&[2, 4], 1).unwrap();
        assert_eq!(gather.apply(&positions).unwrap().to_vec(), [1.0, 2.0, 1.0, 2.0]);
        let down = positions_along(&[2, 2], 0).unwrap();
        assert_eq!(down.to_vec(), [0.0, 0.0, 1.0, 1.0]);
    }
}
