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
    fn huge_shapes_are_refused_before_allocating() {
        assert!(matches!(
            Rng::default().randn(&[1 << 40, 1 << 40]),
            Err(TensorError::Allocation { .. })
        ));
    }
}
