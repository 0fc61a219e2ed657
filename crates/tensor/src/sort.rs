//! Sorting along an axis: the stable order of each lane (`argsort`), from which `sort` and `topk`
//! gather their values, so that their gradients flow back through the same [`Gather`].
//!
//! Orders are stable (equal elements keep their order, as NumPy's `kind="stable"`), NaN sorts
//! after every number (as in NumPy), `-0.0` and `0.0` are equal, and a descending order is the
//! ascending order of the reversed comparison (NaN first, as PyTorch's `sort(descending=True)`),
//! still stable. Long lanes are sorted by an LSD radix sort on order-preserving integer keys,
//! short ones by a comparison sort on the same keys. `sort` of values that are not
//! differentiated sorts the keys alone and turns them back into floats ([`sort_values`]);
//! `argsort`, `topk` and a differentiated `sort` sort positions along.

use super::Tensor;
use super::allocation::check_allocation;
use super::error::TensorError;
use super::gather::Gather;

/// Lanes at least this long take the radix sort; shorter ones a comparison sort.
const RADIX_THRESHOLD: usize = 256;

/// Bits per radix digit: seven passes cover the 64-bit keys, and a pass whose digit every key
/// shares is skipped (the top one for floats of one sign and a narrow range of exponents, so six
/// passes for uniform floats in [0, 1)). Measured by `bench/library/sort.nb` (10^6 uniform
/// floats) in release builds that differ in this width alone, run in turn on the shared two-core
/// machine, the fastest of 24 runs: 14.2 ms a sort with 10-bit digits, 17.8 ms with 8-bit ones
/// (eight passes), 24.5 ms with 11-bit ones (six passes: 2,048 buckets are more write streams
/// than the caches keep open).
const DIGIT_BITS: u32 = 10;
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

/// The float whose [`key`] is `key`: for the key of both zeros `0.0`, for that of every NaN one
/// NaN.
#[inline]
fn unkey(key: u64, descending: bool) -> f64 {
    let ascending = if descending { !key } else { key };
    f64::from_bits(if ascending >> 63 == 1 { ascending & !(1 << 63) } else { !ascending })
}

/// Buffers a sort reuses from lane to lane: the spare halves of the radix sort's moves.
#[derive(Default)]
struct Spares<P> {
    keys: Vec<u64>,
    payload: Vec<P>,
}

impl<P: Copy + Default> Spares<P> {
    /// Sorts `keys` stably and permutes `payload` (as long) along by [`radix_sort`], into
    /// themselves or into the spares (grown to their length as needed); returns whether the
    /// result is in the spares.
    fn radix_sort(&mut self, keys: &mut [u64], payload: &mut [P]) -> bool {
        let n = keys.len();
        if self.keys.len() < n {
            self.keys.resize(n, 0);
            self.payload.resize(n, P::default());
        }
        radix_sort(keys, payload, &mut self.keys[..n], &mut self.payload[..n])
    }
}

/// The positions of `lane` in sorted order, in `order`.
fn lane_order(
    lane: &[f64],
    descending: bool,
    keys: &mut Vec<u64>,
    order: &mut Vec<u32>,
    spares: &mut Spares<u32>,
) {
    keys.clear();
    keys.extend(lane.iter().map(|&x| key(x, descending)));
    order.clear();
    order.extend(0..lane.len() as u32);
    if lane.len() < RADIX_THRESHOLD {
        // `sort_by_key` is stable.
        order.sort_by_key(|&i| keys[i as usize]);
        return;
    }
    if spares.radix_sort(keys, order) {
        std::mem::swap(keys, &mut spares.keys);
        std::mem::swap(order, &mut spares.payload);
    }
}

/// `lane` sorted, as the bits of its floats, in `sorted` (as long): its keys alone are sorted
/// and turned back into floats, and the elements that share a key with others of different bits
/// (both zeros, every NaN) are put back into their key's run in their order in the lane, so the
/// result is bit for bit the stable order's.
fn sort_lane_values(lane: &[f64], descending: bool, sorted: &mut [u64], spares: &mut Spares<()>) {
    for (slot, &x) in sorted.iter_mut().zip(lane) {
        *slot = key(x, descending);
    }
    let in_spares = if lane.len() < RADIX_THRESHOLD {
        // Equal keys are equal floats but for the runs put back below.
        sorted.sort_unstable();
        false
    } else {
        // A slice of `()` of any length holds nothing.
        spares.radix_sort(sorted, &mut vec![(); lane.len()])
    };
    let keys = if in_spares { &spares.keys[..lane.len()] } else { &*sorted };
    let run =
        |shared: u64| keys.partition_point(|&k| k < shared)..keys.partition_point(|&k| k <= shared);
    let (zeros, nans) = (run(key(0.0, descending)), run(key(f64::NAN, descending)));
    if in_spares {
        for (slot, &key) in sorted.iter_mut().zip(&spares.keys) {
            *slot = unkey(key, descending).to_bits();
        }
    } else {
        for slot in sorted.iter_mut() {
            *slot = unkey(*slot, descending).to_bits();
        }
    }
    if zeros.is_empty() && nans.is_empty() {
        return;
    }
    let (mut zero, mut nan) = (zeros.start, nans.start);
    for &x in lane {
        if x == 0.0 {
            sorted[zero] = x.to_bits();
            zero += 1;
        } else if x.is_nan() {
            sorted[nan] = x.to_bits();
            nan += 1;
        }
    }
}

/// Sorts `keys` stably and permutes `payload` (as long) along, by least significant digit first,
/// moving both between themselves and the spare slices (as long); a digit that every key shares
/// is skipped. Returns whether the result is in the spare slices.
///
/// The one sort of long lanes, for values alone (a payload of `()`, which moves nothing) and for
/// positions. Measured against it on 10^6 uniform floats, keys alone, in a standalone release
/// build on the shared two-core machine (the fastest of 15 to 30 rounds; 14.4 ms):
/// `sort_unstable` (ipnsort) on the same keys 20.6 ms; the stable `sort` (driftsort) 36 ms; an
/// MSD pass on the highest varying digit until buckets fit in the cache, then this sort in each,
/// 16.2 ms; keys computed by the first move and turned back into floats by the last (two passes
/// over memory fewer) 15.9 ms against 13.7 ms in the same rounds; the two halves sorted on two
/// threads and merged from both ends at once (one thread each) 14.3 ms against 16.5 ms on one
/// thread in the same rounds, but in `bench/library/sort.nb` 18.8 ms a sort against 14.6 ms on
/// one thread (the passes are bound by memory, which the two cores share).
fn radix_sort<P: Copy>(
    keys: &mut [u64],
    payload: &mut [P],
    spare_keys: &mut [u64],
    spare_payload: &mut [P],
) -> bool {
    let n = keys.len();
    // Counts fit in `u32`: lanes are at most `u32::MAX` long.
    let mut histograms = vec![[0u32; BUCKETS]; PASSES];
    for &key in keys.iter() {
        for (pass, histogram) in histograms.iter_mut().enumerate() {
            histogram[digit(key, pass)] += 1;
        }
    }
    let (mut keys, mut spare_keys) = (keys, spare_keys);
    let (mut payload, mut spare_payload) = (payload, spare_payload);
    let mut in_spare = false;
    for (pass, histogram) in histograms.iter_mut().enumerate() {
        if histogram.iter().any(|&count| count as usize == n) {
            continue;
        }
        let mut start = 0;
        for count in histogram.iter_mut() {
            let next = start + *count;
            *count = start;
            start = next;
        }
        for (&key, &item) in keys.iter().zip(payload.iter()) {
            let slot = &mut histogram[digit(key, pass)];
            spare_keys[*slot as usize] = key;
            spare_payload[*slot as usize] = item;
            *slot += 1;
        }
        std::mem::swap(&mut keys, &mut spare_keys);
        std::mem::swap(&mut payload, &mut spare_payload);
        in_spare = !in_spare;
    }
    in_spare
}

#[inline(always)]
fn digit(key: u64, pass: usize) -> usize {
    ((key >> (pass as u32 * DIGIT_BITS)) as usize) & (BUCKETS - 1)
}

/// The lengths of the lanes of `shape` along `axis`, checked: lanes longer than `u32::MAX`
/// elements are an error.
fn checked_extent(shape: &[usize], axis: usize) -> Result<usize, TensorError> {
    let extent = shape[axis];
    if u32::try_from(extent).is_err() {
        return Err(TensorError::Argument {
            op: "sort",
            reason: format!("an axis of {extent} elements is longer than sorting supports"),
        });
    }
    Ok(extent)
}

/// For every lane of `x` along `axis`, the row-major offsets in `x` of its elements in sorted
/// order, laid out like `x`.
fn sorted_offsets(x: &Tensor, axis: usize, descending: bool) -> Result<Vec<usize>, TensorError> {
    let shape = x.shape();
    checked_extent(shape, axis)?;
    let len = check_allocation(shape)?;
    let stride: usize = shape[axis + 1..].iter().product();
    let standard = x.array().as_standard_layout();
    let mut offsets = vec![0usize; len];
    let (mut keys, mut order, mut spares) = (Vec::new(), Vec::new(), Spares::default());
    for_each_lane(&standard.view(), len, axis, |base, lane| {
        lane_order(lane, descending, &mut keys, &mut order, &mut spares);
        for (k, &position) in order.iter().enumerate() {
            offsets[base + k * stride] = base + position as usize * stride;
        }
    });
    Ok(offsets)
}

/// Calls `visit(base, lane)` with the elements of every lane of `array` along `axis`, for a
/// tensor of `len` elements in standard layout: lane `(outer, inner)` holds the elements at
/// `base + k * stride` with `base = outer * extent * stride + inner`. Lanes along the last axis
/// are slices of the tensor; others are copied out.
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
    let mut lane = Vec::with_capacity(if stride == 1 { 0 } else { extent });
    let outer_count = len.checked_div(extent * stride).unwrap_or(0);
    for outer in 0..outer_count {
        for inner in 0..stride {
            let base = outer * extent * stride + inner;
            if stride == 1 {
                visit(base, values.get(base..base + extent).unwrap_or_default());
                continue;
            }
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

/// The values of `sort`, bit for bit what [`sort_gather`]'s map gives, without the map: the
/// keys of each lane sorted alone and turned back into floats in place of the result (half the
/// memory traffic of sorting positions along, and no gather). `bench/library/sort.nb` (10^6
/// uniform floats, release builds run in turn, the fastest of 24 runs): 14.2 ms a sort, where the
/// sort before (11-bit digits, the lane copied out, lanes with a zero or a NaN through their
/// positions) took 26.4 ms; NumPy's `sort` 11.9 ms at the same time.
pub fn sort_values(x: &Tensor, axis: usize, descending: bool) -> Result<Tensor, TensorError> {
    let shape = x.shape();
    let extent = checked_extent(shape, axis)?;
    let stride: usize = shape[axis + 1..].iter().product();
    let len = check_allocation(shape)?;
    let standard = x.array().as_standard_layout();
    // The sorted floats' bits.
    let mut sorted = vec![0u64; len];
    let mut spares = Spares::default();
    let mut lane_sorted = vec![0; if stride == 1 { 0 } else { extent }];
    for_each_lane(&standard.view(), len, axis, |base, lane| {
        if stride == 1 {
            sort_lane_values(lane, descending, &mut sorted[base..base + extent], &mut spares);
            return;
        }
        sort_lane_values(lane, descending, &mut lane_sorted, &mut spares);
        for (k, &bits) in lane_sorted.iter().enumerate() {
            sorted[base + k * stride] = bits;
        }
    });
    // Collected in place: `u64` and `f64` have one size and alignment.
    Tensor::from_vec(shape, sorted.into_iter().map(f64::from_bits).collect())
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
            lane_order(&values, descending, &mut keys, &mut order, &mut Spares::default());
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

    /// Lanes of `len` elements with ties, both zeros, infinities and NaN of several payloads.
    fn special_lane(len: usize, seed: u64) -> Vec<f64> {
        let mut rng = crate::Rng::from_seed(seed);
        let specials = [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff8_0000_0000_0001),
            1.0,
            -1.0,
        ];
        (0..len)
            .map(|i| match i % 5 {
                0 => specials[(rng.next_u64() % 9) as usize],
                1 => (rng.next_u64() % 7) as f64 - 3.0,
                _ => (rng.next_uniform() - 0.5) * 10f64.powi((rng.next_u64() % 40) as i32 - 20),
            })
            .collect()
    }

    /// The stable order of `lane` by a comparison sort.
    fn expected_order(lane: &[f64], descending: bool) -> Vec<u32> {
        let mut order: Vec<u32> = (0..lane.len() as u32).collect();
        order.sort_by_key(|&i| key(lane[i as usize], descending));
        order
    }

    fn bits(values: &[f64]) -> Vec<u64> {
        values.iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn sorts_at_the_radix_threshold_keep_the_stable_order() {
        // Lanes just under, at and just over the length that takes the radix sort, sorted for
        // their values and for their positions, along the last axis and along another; then
        // lanes whose keys differ in two radix digits (an even number of moves), in one (one
        // move), and in none (both zeros, no move).
        let lanes = [
            special_lane(RADIX_THRESHOLD - 1, 11),
            special_lane(RADIX_THRESHOLD, 12),
            special_lane(3001, 13),
            (0..3001).map(|i| 2.0 + ((i * 7) % 100) as f64 / 64.0).collect(),
            (0..3001).map(|i| 1.0 + ((i * 7) % 17) as f64 * f64::EPSILON).collect(),
            (0..300).map(|i| if i % 3 == 0 { -0.0 } else { 0.0 }).collect(),
        ];
        for lane in lanes {
            let len = lane.len();
            for descending in [false, true] {
                let order = expected_order(&lane, descending);
                let values: Vec<f64> = order.iter().map(|&i| lane[i as usize]).collect();
                let positions: Vec<f64> = order.iter().map(|&i| f64::from(i)).collect();
                let row = tensor(&[len], &lane);
                let sorted = sort_values(&row, 0, descending).unwrap().to_vec();
                assert_eq!(bits(&sorted), bits(&values), "{len} descending {descending}");
                assert_eq!(argsort(&row, 0, descending).unwrap().to_vec(), positions);
                let column = tensor(&[len, 1], &lane);
                let sorted = sort_values(&column, 0, descending).unwrap().to_vec();
                assert_eq!(bits(&sorted), bits(&values), "{len} descending {descending}");
                assert_eq!(argsort(&column, 0, descending).unwrap().to_vec(), positions);
            }
        }
    }

    #[test]
    fn short_lanes_of_values_keep_zeros_and_nan_in_their_order() {
        // The comparison sort of keys alone: equal keys of different bits are put back in order.
        let nan_payload = f64::from_bits(0x7ff8_0000_0000_0001);
        let x =
            tensor(&[2, 5], &[0.0, nan_payload, -0.0, f64::NAN, -1.0, -0.0, 2.0, 0.0, -0.0, 2.0]);
        for (axis, descending) in [(1, false), (1, true), (0, false), (0, true)] {
            let expected = sorted(&x, axis, descending);
            let actual = sort_values(&x, axis, descending).unwrap().to_vec();
            assert_eq!(bits(&actual), bits(&expected), "axis {axis} descending {descending}");
        }
        let ascending = sort_values(&x, 1, false).unwrap().to_vec();
        assert_eq!(bits(&ascending[..3]), bits(&[-1.0, 0.0, -0.0]));
        assert_eq!(bits(&ascending[3..5]), bits(&[nan_payload, f64::NAN]));
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
