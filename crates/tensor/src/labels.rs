//! Integer labels held in floats (tensors are float): one-hot rows, and the check that a tensor
//! of labels holds integers in range, which `one_hot` and the classification losses share.

use super::Tensor;
use super::allocation::check_allocation;
use super::error::TensorError;

/// The labels of `labels` as positions below `classes`, or the error for the first that is not an
/// integer in `0..classes`.
pub fn label_positions(
    op: &'static str,
    labels: &Tensor,
    classes: usize,
) -> Result<Vec<usize>, TensorError> {
    labels
        .array()
        .iter()
        .map(|&label| {
            if label.fract() == 0.0 && label >= 0.0 && label < classes as f64 {
                Ok(label as usize)
            } else {
                Err(TensorError::Argument {
                    op,
                    reason: format!(
                        "label {} is not an integer from 0 to {} (there are {classes} classes)",
                        super::format_float(label),
                        classes as i64 - 1
                    ),
                })
            }
        })
        .collect()
}

/// `one_hot(labels, n)`: a new last axis of extent `n`, 1.0 at each label's position.
pub fn one_hot(labels: &Tensor, classes: usize) -> Result<Tensor, TensorError> {
    let positions = label_positions("one_hot", labels, classes)?;
    let mut shape = labels.shape().to_vec();
    shape.push(classes);
    let len = check_allocation(&shape)?;
    let mut values = vec![0.0; len];
    for (row, &position) in positions.iter().enumerate() {
        values[row * classes + position] = 1.0;
    }
    Tensor::from_vec(&shape, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_hot_rows_match_pytorch() {
        // torch.nn.functional.one_hot(torch.tensor([[2, 0], [1, 2]]), 3), computed once.
        let labels = Tensor::from_vec(&[2, 2], vec![2.0, 0.0, 1.0, 2.0]).unwrap();
        let rows = one_hot(&labels, 3).unwrap();
        assert_eq!(rows.shape(), [2, 2, 3]);
        #[rustfmt::skip]
        assert_eq!(rows.to_vec(), [
            0.0, 0.0, 1.0, 1.0, 0.0, 0.0,
            0.0, 1.0, 0.0, 0.0, 0.0, 1.0,
        ]);
        assert_eq!(one_hot(&Tensor::scalar(1.0), 2).unwrap().to_vec(), [0.0, 1.0]);
        assert_eq!(
            one_hot(&Tensor::vector(vec![3.0]), 3).unwrap_err().to_string(),
            "one_hot: label 3.0 is not an integer from 0 to 2 (there are 3 classes)"
        );
        assert_eq!(
            one_hot(&Tensor::vector(vec![0.5]), 3).unwrap_err().to_string(),
            "one_hot: label 0.5 is not an integer from 0 to 2 (there are 3 classes)"
        );
        assert_eq!(one_hot(&Tensor::vector(vec![]), 0).unwrap().shape(), [0, 0]);
    }
}
