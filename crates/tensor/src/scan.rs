//! Scans along an axis: running sums and products (`cumsum`, `cumprod`), from the start of each
//! lane or, reversed, from its end (the gradient of a running sum is the reversed running sum of
//! the gradient). Each lane is accumulated in order, as NumPy's `add.accumulate` does, so results
//! agree with NumPy's to the bit.

use super::Tensor;
use super::error::TensorError;

/// What a scan accumulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanOp {
    Sum,
    Prod,
}

impl ScanOp {
    /// The Nabla built-in's name.
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Sum => "cumsum",
            ScanOp::Prod => "cumprod",
        }
    }
}

/// The running sums or products of every lane of `x` along `axis`, from its end when `reverse`.
pub fn scan(op: ScanOp, x: &Tensor, axis: usize, reverse: bool) -> Result<Tensor, TensorError> {
    if axis >= x.rank() {
        return Err(TensorError::Axis { axis: axis as i64, rank: x.rank() });
    }
    let mut array = x.array().to_owned();
    for mut lane in array.lanes_mut(ndarray::Axis(axis)) {
        let mut running = match op {
            ScanOp::Sum => 0.0,
            ScanOp::Prod => 1.0,
        };
        let mut step = |value: &mut f64| {
            running = match op {
                ScanOp::Sum => running + *value,
                ScanOp::Prod => running * *value,
            };
            *value = running;
        };
        match reverse {
            false => lane.iter_mut().for_each(&mut step),
            true => lane.iter_mut().rev().for_each(&mut step),
        }
    }
    Ok(Tensor::from(array))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(shape: &[usize], values: &[f64]) -> Tensor {
        Tensor::from_vec(shape, values.to_vec()).unwrap()
    }

    #[test]
    fn scans_match_numpy() {
        // Computed once with NumPy 2.4: np.cumsum, np.cumprod and their reversals.
        let x = tensor(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 0.5, -2.0]);
        assert_eq!(
            scan(ScanOp::Sum, &x, 1, false).unwrap().to_vec(),
            [1.0, 3.0, 6.0, 4.0, 4.5, 2.5]
        );
        assert_eq!(
            scan(ScanOp::Sum, &x, 0, false).unwrap().to_vec(),
            [1.0, 2.0, 3.0, 5.0, 2.5, 1.0]
        );
        assert_eq!(
            scan(ScanOp::Prod, &x, 1, false).unwrap().to_vec(),
            [1.0, 2.0, 6.0, 4.0, 2.0, -4.0]
        );
        assert_eq!(
            scan(ScanOp::Sum, &x, 1, true).unwrap().to_vec(),
            [6.0, 5.0, 3.0, 2.5, -1.5, -2.0]
        );
        assert_eq!(
            scan(ScanOp::Prod, &x, 1, true).unwrap().to_vec(),
            [6.0, 6.0, 3.0, -4.0, -1.0, -2.0]
        );
        let with_nan = tensor(&[3], &[1.0, f64::NAN, 2.0]);
        let sums = scan(ScanOp::Sum, &with_nan, 0, false).unwrap().to_vec();
        assert_eq!(sums[0], 1.0);
        assert!(sums[1].is_nan() && sums[2].is_nan());
        assert_eq!(scan(ScanOp::Sum, &tensor(&[0, 2], &[]), 0, false).unwrap().shape(), [0, 2]);
        assert!(scan(ScanOp::Sum, &x, 2, false).is_err());
    }
}
