//! How `print` writes values (language.md 7.1): floats as the shortest text that reads back to
//! the same value, tensors as nested brackets on one line, summarised NumPy-style past 1000
//! elements.

use std::fmt::{self, Write};

use ndarray::{ArrayViewD, Axis};

use super::Tensor;

/// Tensors with more elements than this are summarised.
const SUMMARY_THRESHOLD: usize = 1000;

/// How many leading and trailing entries a summarised axis shows.
const EDGE_ITEMS: usize = 3;

/// Writes a float as the shortest text that reads back to the same value, always with a decimal
/// point or an exponent.
///
/// Python's `repr` decides between the notations: positional when the decimal exponent is in
/// `-4..16`, scientific otherwise. Exponents have no `+` and no zero padding (`1e-7`, `6.02e23`,
/// `1e16`), and the special values print as `inf`, `-inf` and `nan`.
pub fn format_float(value: f64) -> String {
    let mut text = String::new();
    // Writing to a `String` cannot fail.
    let _ = write_float(&mut text, value);
    text
}

/// Writes an `int` as decimal digits.
pub fn format_int(value: i64) -> String {
    value.to_string()
}

/// Writes a `bool` as `true` or `false`.
pub fn format_bool(value: bool) -> String {
    value.to_string()
}

/// Writes a `char` as the character itself; bytes above 127 are read as Latin-1.
pub fn format_char(value: u8) -> String {
    char::from(value).to_string()
}

/// Writes a tensor on one line: rank 0 as its float, otherwise nested brackets, summarised when it
/// has more than 1000 elements by showing the first three and last three entries of every axis
/// longer than six, with `...` between them.
pub fn format_tensor(tensor: &Tensor) -> String {
    tensor.to_string()
}

impl fmt::Display for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let summarise = self.len() > SUMMARY_THRESHOLD;
        write_nested(f, self.view(), summarise)
    }
}

fn write_nested(out: &mut impl Write, view: ArrayViewD<'_, f64>, summarise: bool) -> fmt::Result {
    if view.ndim() == 0 {
        return match view.iter().next() {
            Some(&value) => write_float(out, value),
            None => Ok(()),
        };
    }
    let extent = view.len_of(Axis(0));
    out.write_char('[')?;
    let elided = summarise && extent > 2 * EDGE_ITEMS;
    let mut first = true;
    for (position, entry) in view.outer_iter().enumerate() {
        if elided && position >= EDGE_ITEMS && position < extent - EDGE_ITEMS {
            if position == EDGE_ITEMS {
                out.write_str(", ...")?;
            }
            continue;
        }
        if !first {
            out.write_str(", ")?;
        }
        first = false;
        write_nested(out, entry, summarise)?;
    }
    out.write_char(']')
}

fn write_float(out: &mut impl Write, value: f64) -> fmt::Result {
    if value.is_nan() {
        return out.write_str("nan");
    }
    if value.is_infinite() {
        return out.write_str(if value > 0.0 { "inf" } else { "-inf" });
    }
    if value == 0.0 {
        return out.write_str(if value.is_sign_negative() { "-0.0" } else { "0.0" });
    }
    // `{:e}` gives the shortest round-trip digits as `d.ddde<exponent>`.
    let scientific = format!("{value:e}");
    let exponent = scientific
        .rsplit_once('e')
        .and_then(|(_, exponent)| exponent.parse::<i32>().ok())
        .unwrap_or(0);
    if (-4..16).contains(&exponent) {
        // `{}` gives the same shortest digits in positional notation.
        let positional = value.to_string();
        out.write_str(&positional)?;
        if !positional.contains('.') {
            out.write_str(".0")?;
        }
        Ok(())
    } else {
        out.write_str(&scientific)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python_repr_with_short_exponents() {
        let cases = [
            (7.0, "7.0"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (1e-7, "1e-7"),
            (1.5e-5, "1.5e-5"),
            (0.0001, "0.0001"),
            (6.02e23, "6.02e23"),
            (1e16, "1e16"),
            (1e15, "1000000000000000.0"),
            (123456789.125, "123456789.125"),
            (1.0 / 3.0, "0.3333333333333333"),
            (f64::MAX, "1.7976931348623157e308"),
            (5e-324, "5e-324"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ];
        for (value, text) in cases {
            assert_eq!(format_float(value), text);
            if value.is_finite() {
                assert_eq!(text.parse::<f64>(), Ok(value));
            }
        }
    }

    #[test]
    fn scalars_of_other_types_print_plainly() {
        assert_eq!(format_int(-5), "-5");
        assert_eq!(format_bool(true), "true");
        assert_eq!(format_char(b'a'), "a");
    }

    #[test]
    fn tensors_print_as_nested_brackets() {
        assert_eq!(Tensor::scalar(3.0).to_string(), "3.0");
        assert_eq!(Tensor::vector(vec![7.0, 10.0]).to_string(), "[7.0, 10.0]");
        let column = Tensor::from_vec(&[2, 1], vec![9.0, 17.0]).unwrap();
        assert_eq!(format_tensor(&column), "[[9.0], [17.0]]");
        assert_eq!(Tensor::zeros(&[0]).unwrap().to_string(), "[]");
        assert_eq!(Tensor::zeros(&[2, 0]).unwrap().to_string(), "[[], []]");
        let transposed = Tensor::from(
            Tensor::from_vec(&[2, 2], vec![1.0, 2.0, 3.0, 4.0])
                .unwrap()
                .into_array()
                .reversed_axes(),
        );
        assert_eq!(transposed.to_string(), "[[1.0, 3.0], [2.0, 4.0]]");
    }

    #[test]
    fn tensors_over_1000_elements_are_summarised() {
        let small = Tensor::arange(1000).unwrap().to_string();
        assert!(small.ends_with("998.0, 999.0]") && !small.contains("..."));
        assert_eq!(
            Tensor::arange(2000).unwrap().to_string(),
            "[0.0, 1.0, 2.0, ..., 1997.0, 1998.0, 1999.0]"
        );
        let grid = Tensor::from_vec(&[100, 20], (0..2000).map(f64::from).collect()).unwrap();
        assert_eq!(
            grid.to_string(),
            "[[0.0, 1.0, 2.0, ..., 17.0, 18.0, 19.0], [20.0, 21.0, 22.0, ..., 37.0, 38.0, 39.0], \
             [40.0, 41.0, 42.0, ..., 57.0, 58.0, 59.0], ..., \
             [1940.0, 1941.0, 1942.0, ..., 1957.0, 1958.0, 1959.0], \
             [1960.0, 1961.0, 1962.0, ..., 1977.0, 1978.0, 1979.0], \
             [1980.0, 1981.0, 1982.0, ..., 1997.0, 1998.0, 1999.0]]"
        );
        // Axes of six or fewer entries are shown whole even in a summarised tensor.
        let tall = Tensor::from_vec(&[1001, 2], (0..2002).map(f64::from).collect()).unwrap();
        assert_eq!(
            tall.to_string(),
            "[[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], ..., [1996.0, 1997.0], [1998.0, 1999.0], \
             [2000.0, 2001.0]]"
        );
    }
}
