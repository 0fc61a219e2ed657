//! Reproducible random numbers: a seed gives the same numbers on every machine and every build.
//!
//! The generator is PCG-64 (`rand_pcg::Pcg64`, the XSL-RR 128/64 variant) with its state expanded
//! from the seed by `SeedableRng::seed_from_u64`; both are specified algorithms that the rand
//! project documents as portable. On top of its 64-bit outputs, and written here so that no
//! library update can change them:
//!
//! - a uniform number in `[0, 1)` is `(next_u64 >> 11) * 2^-53`: the top 53 bits as a fraction;
//! - standard normal numbers come in pairs by the Box–Muller transform: with `u1 = 1 - uniform()`
//!   (in `(0, 1]`, so the logarithm is finite) and then `u2 = uniform()`,
//!   `r = sqrt(-2 ln u1)`, `z0 = r cos(2 pi u2)`, `z1 = r sin(2 pi u2)`; `z0` is returned and `z1`
//!   kept for the next call. The logarithm, sine and cosine are the `libm` crate's (a port of musl's
//!   libm, the same on every platform), not the system's, so the results are bit-for-bit
//!   identical everywhere.
//!
//! - an integer below `n` (`randint`, `permutation`) rejects raw outputs below `2^64 mod n`, so
//!   that the `2^64 - (2^64 mod n)` accepted ones are a whole number of copies of `0..n`, and
//!   returns the accepted output `mod n` (the method of OpenBSD's `arc4random_uniform`);
//! - `permutation(n)` is the Fisher-Yates shuffle of `0, 1, ..., n - 1`: for `i` from `n - 1` down
//!   to 1, swap element `i` with element `j`, an integer below `i + 1`;
//! - a Bernoulli draw with probability `p` is 1 when `uniform() < p`, else 0.
//!
//! Tensors are filled in row-major order.

use rand::{RngCore, SeedableRng};
use rand_pcg::Pcg64;

use super::Tensor;
use super::error::TensorError;

/// 2^-53, the spacing of the uniform numbers.
const UNIFORM_SCALE: f64 = 1.0 / (1u64 << 53) as f64;

/// The random number generator behind `seed`, `rand` and `randn`.
#[derive(Clone, Debug)]
pub struct Rng {
    pcg: Pcg64,
    /// The second number of the last Box–Muller pair, not yet returned.
    spare_normal: Option<f64>,
}

impl Rng {
    /// A generator whose whole future output is determined by `seed`.
    pub fn from_seed(seed: u64) -> Rng {
        Rng { pcg: Pcg64::seed_from_u64(seed), spare_normal: None }
    }

    /// The next 64 raw bits.
    pub fn next_u64(&mut self) -> u64 {
        self.pcg.next_u64()
    }

    /// A uniform number in `[0, 1)`: `(next_u64 >> 11) * 2^-53`.
    pub fn next_uniform(&mut self) -> f64 {
        // Below 2^53, the conversion to `f64` is exact.
        (self.next_u64() >> 11) as f64 * UNIFORM_SCALE
    }

    /// A standard normal number by the Box–Muller transform described in the module documentation.
    pub fn next_normal(&mut self) -> f64 {
        if let Some(spare) = self.spare_normal.take() {
            return spare;
        }
        let u1 = 1.0 - self.next_uniform();
        let u2 = self.next_uniform();
        let radius = (-2.0 * libm::log(u1)).sqrt();
        let angle = std::f64::consts::TAU * u2;
        self.spare_normal = Some(radius * libm::sin(angle));
        radius * libm::cos(angle)
    }

    /// A tensor of `shape` filled with [`Rng::next_uniform`] numbers.
    pub fn rand(&mut self, shape: &[usize]) -> Result<Tensor, TensorError> {
        let len = super::check_allocation(shape)?;
        let values = (0..len).map(|_| self.next_uniform()).collect();
        Tensor::from_vec(shape, values)
    }

    /// A tensor of `shape` filled with [`Rng::next_normal`] numbers.
    pub fn randn(&mut self, shape: &[usize]) -> Result<Tensor, TensorError> {
        let len = super::check_allocation(shape)?;
        let values = (0..len).map(|_| self.next_normal()).collect();
        Tensor::from_vec(shape, values)
    }
}

impl Rng {
    /// An integer in `0..n` (see the module documentation); `n` must be positive.
    pub fn next_below(&mut self, n: u64) -> u64 {
        let threshold = n.wrapping_neg() % n;
        loop {
            let raw = self.next_u64();
            if raw >= threshold {
                return raw % n;
            }
        }
    }

    /// A tensor of `shape` filled with integers in `low..high`, as floats (`randint`).
    pub fn randint(&mut self, low: i64, high: i64, shape: &[usize]) -> Result<Tensor, TensorError> {
        let empty_range = || TensorError::Argument {
            op: "randint",
            reason: format!("the range {low} to {high} (high excluded) holds no integer"),
        };
        if high <= low {
            return Err(empty_range());
        }
        // The width of the range as an unsigned number, exact for every pair of i64.
        let width = high.wrapping_sub(low) as u64;
        let len = super::check_allocation(shape)?;
        let values = (0..len)
            // Integers beyond 2^53 round, as every conversion of an int to a float does.
            .map(|_| low.wrapping_add(self.next_below(width) as i64) as f64)
            .collect();
        Tensor::from_vec(shape, values)
    }

    /// A random ordering of `0, 1, ..., n - 1`, as floats (`permutation`).
    pub fn permutation(&mut self, n: usize) -> Result<Tensor, TensorError> {
        super::check_allocation(&[n])?;
        let mut values: Vec<f64> = (0..n).map(|i| i as f64).collect();
        for i in (1..n).rev() {
            let j = self.next_below(i as u64 + 1) as usize;
            values.swap(i, j);
        }
        Ok(Tensor::vector(values))
    }

    /// A tensor of `shape` of 0s and 1s, each 1 with the probability in `p` at its position
    /// (`p` broadcasts to `shape`; probabilities outside `[0, 1]` are an error).
    pub fn bernoulli(&mut self, p: &Tensor, shape: &[usize]) -> Result<Tensor, TensorError> {
        if let Some(&bad) = p.array().iter().find(|p| !(0.0..=1.0).contains(*p)) {
            return Err(TensorError::Argument {
                op: "bernoulli",
                reason: format!("the probability {bad} is not between 0 and 1"),
            });
        }
        let probabilities = super::broadcast_to(p, shape)?;
        let values = probabilities
            .array()
            .iter()
            .map(|&p| if self.next_uniform() < p { 1.0 } else { 0.0 })
            .collect();
        Tensor::from_vec(shape, values)
    }
}

impl Default for Rng {
    /// The generator a program starts with, as if it had called `seed(0)`.
    fn default() -> Rng {
        Rng::from_seed(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// These values were also reproduced by an independent Python transcription of the
    /// algorithm in the module documentation (PCG-64 seeded through PCG-32, then the conversions).
    #[test]
    fn the_first_numbers_of_seed_zero_are_pinned() {
        let mut rng = Rng::from_seed(0);
        let raw: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        assert_eq!(raw, [2354861276966075475, 6411218084291373563, 13092586260176364081]);
        let mut rng = Rng::from_seed(0);
        let uniform: Vec<f64> = (0..3).map(|_| rng.next_uniform()).collect();
        assert_eq!(uniform, [0.12765728561943035, 0.34755282876335303, 0.709750523336854]);
        let mut rng = Rng::from_seed(0);
        let normal: Vec<f64> = (0..4).map(|_| rng.next_normal()).collect();
        assert_eq!(
            normal,
            [-0.30065894875962335, 0.42749271215415025, 1.5260914331851951, 0.38088562650912133]
        );
    }

    #[test]
    fn other_seeds_are_pinned_too() {
        let mut rng = Rng::from_seed(42);
        assert_eq!(rng.next_u64(), 4178418447715145737);
        assert_eq!(rng.next_uniform(), 0.23910669031859955);
        assert_eq!(rng.next_normal(), -1.665693121258388);
    }

    #[test]
    fn equal_seeds_give_equal_tensors() {
        let first = Rng::from_seed(7).randn(&[3, 4]).unwrap();
        let second = Rng::from_seed(7).randn(&[3, 4]).unwrap();
        assert_eq!(first, second);
        assert_ne!(first, Rng::from_seed(8).randn(&[3, 4]).unwrap());
        assert_eq!(Rng::default().rand(&[2]).unwrap(), Rng::from_seed(0).rand(&[2]).unwrap());
    }

    #[test]
    fn tensors_are_filled_in_row_major_order() {
        let tensor = Rng::from_seed(3).rand(&[2, 2]).unwrap();
        let mut rng = Rng::from_seed(3);
        let expected: Vec<f64> = (0..4).map(|_| rng.next_uniform()).collect();
        assert_eq!(tensor.to_vec(), expected);
        let normals = Rng::from_seed(3).randn(&[3]).unwrap();
        let mut rng = Rng::from_seed(3);
        let expected: Vec<f64> = (0..3).map(|_| rng.next_normal()).collect();
        assert_eq!(normals.to_vec(), expected);
    }

    #[test]
    fn distributions_have_the_right_moments() {
        let mut rng = Rng::from_seed(1);
        let uniform = rng.rand(&[100_000]).unwrap().to_vec();
        assert!(uniform.iter().all(|&u| (0.0..1.0).contains(&u)));
        let mean = uniform.iter().sum::<f64>() / 1e5;
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
        let normal = rng.randn(&[100_000]).unwrap().to_vec();
        let mean = normal.iter().sum::<f64>() / 1e5;
        let variance = normal.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 1e5;
        assert!(mean.abs() < 0.02 && (variance - 1.0).abs() < 0.02, "{mean} {variance}");
    }

    #[test]
    fn integers_and_permutations_are_pinned_and_uniform() {
        // Pinned from this implementation (seed 0), and checked by hand against the raw outputs
        // pinned above: NumPy's generators are other algorithms.
        let mut rng = Rng::from_seed(0);
        let ints = rng.randint(-2, 3, &[8]).unwrap().to_vec();
        assert_eq!(ints, [-2.0, 1.0, -1.0, 1.0, 1.0, 2.0, -2.0, -2.0]);
        let mut rng = Rng::from_seed(0);
        let order = rng.permutation(6).unwrap().to_vec();
        assert_eq!(order, [4.0, 2.0, 0.0, 1.0, 5.0, 3.0]);
        let mut sorted = order.clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(sorted, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        assert_eq!(rng.permutation(0).unwrap().shape(), [0]);
        // Every value of a small range about equally often.
        let draws = Rng::from_seed(5).randint(0, 4, &[40_000]).unwrap().to_vec();
        for value in 0..4 {
            let count = draws.iter().filter(|&&x| x == value as f64).count();
            assert!((count as f64 - 10_000.0).abs() < 400.0, "{value}: {count}");
        }
        // The widest range does not overflow.
        let extreme = Rng::from_seed(1).randint(i64::MIN, i64::MAX, &[3]).unwrap();
        assert_eq!(extreme.len(), 3);
        assert_eq!(
            Rng::from_seed(0).randint(3, 3, &[1]).unwrap_err().to_string(),
            "randint: the range 3 to 3 (high excluded) holds no integer"
        );
    }

    #[test]
    fn bernoulli_draws_follow_their_probabilities() {
        let mut rng = Rng::from_seed(2);
        let p = Tensor::vector(vec![0.0, 0.25, 1.0]);
        let draws = rng.bernoulli(&p, &[20_000, 3]).unwrap();
        let columns: Vec<f64> = draws.array().sum_axis(ndarray::Axis(0)).iter().copied().collect();
        assert_eq!((columns[0], columns[2]), (0.0, 20_000.0));
        assert!((columns[1] - 5_000.0).abs() < 250.0, "{}", columns[1]);
        assert_eq!(
            rng.bernoulli(&Tensor::scalar(1.5), &[2]).unwrap_err().to_string(),
            "bernoulli: the probability 1.5 is not between 0 and 1"
        );
    }

    #[test]
    fn huge_shapes_are_refused_before_allocating() {
        assert!(matches!(
            Rng::default().randn(&[1 << 40, 1 << 40]),
            Err(TensorError::Allocation { .. })
        ));
    }
}
