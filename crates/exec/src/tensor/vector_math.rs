//! Element loops compiled for the widest vector instructions the CPU has, and an `exp` written so
//! that those loops vectorise.
//!
//! The binary is built for baseline x86-64 (SSE2), so loops over tensor elements would use
//! two-lane vectors at best, and `f64::exp` is a call into the system's libm that no loop can
//! vectorise. NumPy computes `exp` with AVX-512 and is several times faster than that. Here each
//! loop is compiled three times (baseline, AVX2, AVX-512) and chosen at run time, and [`exp`] is
//! plain arithmetic. It never uses fused multiply-add, so every variant computes bit-identical
//! results, on every machine: `exp` is reproducible across platforms, unlike libm's.

/// Applies `f` to every element of `values` in place.
pub(super) fn map_in_place(values: &mut [f64], f: impl Fn(f64) -> f64) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F, the only feature the function is compiled for.
            unsafe { map_in_place_avx512(values, f) };
            return;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, the only feature the function is compiled for.
            unsafe { map_in_place_avx2(values, f) };
            return;
        }
    }
    map_in_place_baseline(values, f);
}

/// `f` applied to every element of `values`, in a new vector.
pub(super) fn map_to_vec(values: &[f64], f: impl Fn(f64) -> f64) -> Vec<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU supports AVX-512F, the only feature the function is compiled for.
            return unsafe { map_to_vec_avx512(values, f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, the only feature the function is compiled for.
            return unsafe { map_to_vec_avx2(values, f) };
        }
    }
    map_to_vec_baseline(values, f)
}

#[inline(always)]
fn map_in_place_baseline(values: &mut [f64], f: impl Fn(f64) -> f64) {
    for value in values {
        *value = f(*value);
    }
}

#[inline(always)]
fn map_to_vec_baseline(values: &[f64], f: impl Fn(f64) -> f64) -> Vec<f64> {
    // A plain loop rather than `extend` or `collect`, whose internal `fold` the compiler may keep
    // out of line, and so compiled for baseline x86-64 even inside the AVX variants.
    let mut mapped = super::buffer::with_capacity(values.len());
    for (slot, &value) in mapped.spare_capacity_mut().iter_mut().zip(values) {
        slot.write(f(value));
    }
    // SAFETY: the capacity is at least `values.len()`, so the loop wrote every one of the first
    // `values.len()` elements.
    unsafe { mapped.set_len(values.len()) };
    mapped
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn map_in_place_avx2(values: &mut [f64], f: impl Fn(f64) -> f64) {
    map_in_place_baseline(values, f);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn map_in_place_avx512(values: &mut [f64], f: impl Fn(f64) -> f64) {
    map_in_place_baseline(values, f);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn map_to_vec_avx2(values: &[f64], f: impl Fn(f64) -> f64) -> Vec<f64> {
    map_to_vec_baseline(values, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn map_to_vec_avx512(values: &[f64], f: impl Fn(f64) -> f64) -> Vec<f64> {
    map_to_vec_baseline(values, f)
}

/// 1.5 * 2^52: adding it rounds a float below 2^51 in magnitude to an integer held in the low
/// bits of the sum, with plain additions that vectorise (unlike `round`).
const ROUNDING_SHIFT: f64 = 6_755_399_441_055_744.0;

/// The high part of ln 2 (fdlibm's `ln2_hi`): its low 32 bits are zero, so `k * LN2_HI` is exact
/// for every `k` this function uses.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);

/// ln 2 - `LN2_HI`, rounded (fdlibm's `ln2_lo`).
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);

/// The Taylor coefficients 1/2!, 1/3!, ..., 1/13! of `e^r`, each correctly rounded.
const EXP_COEFFICIENTS: [f64; 12] = [
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5_040.0,
    1.0 / 40_320.0,
    1.0 / 362_880.0,
    1.0 / 3_628_800.0,
    1.0 / 39_916_800.0,
    1.0 / 479_001_600.0,
    1.0 / 6_227_020_800.0,
];

/// `e^x` within about one unit in the last place (it agrees with glibc's correctly rounded `exp`
/// on about 99% of inputs), without branches, so that loops over it vectorise.
///
/// With `k = round(x / ln 2)` and `r = x - k ln 2` (|r| <= ln 2 / 2, kept as a double-double),
/// `e^x = 2^k e^r`, and `e^r` is its Taylor series to degree 13, whose truncation error is below
/// 1e-17. Clamping `x` to `[-745.2, 709.8]` first makes large inputs overflow to `inf` or underflow
/// to `0` through the same arithmetic, and NaN passes through.
#[inline(always)]
pub(super) fn exp(x: f64) -> f64 {
    let x = x.clamp(-745.2, 709.8);
    let shifted = x * std::f64::consts::LOG2_E + ROUNDING_SHIFT;
    let k = shifted - ROUNDING_SHIFT;
    // The integer k is the difference of the two sums' bit patterns (within +-1100 here).
    let k_bits = (shifted.to_bits() as i64).wrapping_sub(ROUNDING_SHIFT.to_bits() as i64);

    // r = x - k ln 2 as r + r_low; x - k * LN2_HI is exact.
    let reduced = x - k * LN2_HI;
    let correction = k * LN2_LO;
    let r = reduced - correction;
    let r_low = (reduced - r) - correction;

    let mut tail = EXP_COEFFICIENTS[11];
    for &coefficient in EXP_COEFFICIENTS[..11].iter().rev() {
        tail = tail * r + coefficient;
    }
    // 1 + r is split exactly into a sum and its rounding error, and every small term joins the
    // error before the one final rounding.
    let sum = 1.0 + r;
    let error = (1.0 - sum) + r;
    let e_r = sum + (error + (r_low + r_low * r + r * r * tail));

    // 2^k as two normal powers of two, so that subnormal results round only once.
    let k_half = ((k_bits + 2048) as u64 >> 1) as i64 - 1024;
    let k_rest = k_bits - k_half;
    let scale_half = f64::from_bits(((k_half + 1023) as u64) << 52);
    let scale_rest = f64::from_bits(((k_rest + 1023) as u64) << 52);
    e_r * scale_half * scale_rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_of_familiar_values_is_correctly_rounded() {
        for x in [0.0, 1.0, -1.0, 2.0, 0.5, 10.0, -10.0, 100.0, 1e-20, -1e-20, 0.1] {
            assert_eq!(exp(x), x.exp(), "exp({x})");
        }
    }

    #[test]
    fn exp_handles_the_edges_of_the_range() {
        assert_eq!(exp(709.78), 709.78f64.exp());
        assert_eq!(exp(709.79), f64::INFINITY);
        assert_eq!(exp(1e300), f64::INFINITY);
        assert_eq!(exp(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp(-708.5), (-708.5f64).exp());
        assert_eq!(exp(-740.0), (-740.0f64).exp());
        assert_eq!(exp(-745.0), 5e-324);
        assert_eq!(exp(-745.14), 0.0);
        assert_eq!(exp(f64::NEG_INFINITY), 0.0);
        assert!(exp(f64::NAN).is_nan());
    }

    #[test]
    fn exp_is_within_one_ulp_of_libm() {
        let mut differ = 0;
        let count = 200_000;
        for i in 0..count {
            let x = -700.0 + 1400.0 * f64::from(i) / f64::from(count) + 1e-3;
            let (fast, reference) = (exp(x), x.exp());
            if fast != reference {
                differ += 1;
                let ulps = fast.to_bits().abs_diff(reference.to_bits());
                assert_eq!(ulps, 1, "exp({x}) = {fast}, libm {reference}");
            }
        }
        assert!(differ < count / 50, "{differ} of {count} differ");
    }

    #[test]
    fn every_loop_variant_computes_the_same_bits() {
        let inputs: Vec<f64> = (0..1001).map(|i| f64::from(i) * 0.37 - 180.0).collect();
        let mut in_place = inputs.clone();
        map_in_place(&mut in_place, exp);
        let mut baseline = inputs.clone();
        map_in_place_baseline(&mut baseline, exp);
        assert_eq!(in_place, baseline);
        assert_eq!(map_to_vec(&inputs, exp), baseline);
        assert_eq!(map_to_vec_baseline(&inputs, exp), baseline);
    }
}
