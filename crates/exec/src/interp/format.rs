//! Filling in the placeholders of `format("epoch {} loss {:.4}", e, l)` when `print` or `write`
//! writes it. The string was read and checked by `hir::parse_format_string`; every spec here fits its
//! value.

use hir::{FormatAlign as Align, FormatNotation as Notation, FormatSpec as Spec};
use tensor::{
    PrintOptions, format_bool, format_char, format_float, format_int, format_tensor_with,
};

use crate::value::{Primal, Value};

/// Writes `value` by `spec`; a tensor's first line starts at `column` of the printed line.
pub(super) fn fill(spec: &Spec, value: &Value, options: &PrintOptions, column: usize) -> String {
    match value.primal() {
        Primal::Int(x) => match (spec.notation, spec.precision) {
            (Notation::Default | Notation::Integer, None) => pad(spec, format_int(x), true),
            _ => pad(spec, float_text(spec, x as f64), true),
        },
        Primal::Float(x) => pad(spec, float_text(spec, x), true),
        Primal::Bool(x) => pad(spec, format_bool(x), false),
        Primal::Char(x) => pad(spec, format_char(x), false),
        Primal::Tensor(tensor) => {
            let options =
                PrintOptions { precision: spec.precision.or(options.precision), ..*options };
            format_tensor_with(tensor, &options, column)
        }
    }
}

/// A string literal's text by `spec` (a width and an alignment at most).
pub(super) fn fill_text(spec: &Spec, text: &str) -> String {
    pad(spec, text.to_owned(), false)
}

/// A float by the notation and precision of `spec`: as `print` writes it by default; `f` (or a
/// precision alone) fixed point, 6 digits unless the precision says; `e` scientific, with a
/// sign and at least two digits in the exponent (`1.2346e+03`), as Python and C write it.
fn float_text(spec: &Spec, x: f64) -> String {
    if !x.is_finite() {
        return format_float(x);
    }
    match (spec.notation, spec.precision) {
        (Notation::Default, None) => format_float(x),
        (Notation::Scientific, precision) => {
            let text = format!("{:.*e}", precision.unwrap_or(6), x);
            match text.split_once('e') {
                Some((mantissa, exponent)) => {
                    let exponent: i32 = exponent.parse().unwrap_or(0);
                    let sign = if exponent < 0 { '-' } else { '+' };
                    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
                }
                None => text,
            }
        }
        (_, precision) => format!("{:.*}", precision.unwrap_or(6), x),
    }
}

/// `text` padded to the spec's width: numbers to the right and text to the left unless the spec
/// aligns them; `0` pads a number with zeros after its sign.
fn pad(spec: &Spec, text: String, number: bool) -> String {
    let text = match spec.sign {
        '+' | ' ' if number && !text.starts_with('-') && text != "nan" => {
            format!("{}{text}", spec.sign)
        }
        _ => text,
    };
    let Some(width) = spec.width else { return text };
    let len = text.chars().count();
    if len >= width {
        return text;
    }
    let missing = width - len;
    if number && spec.zero_pad && spec.align.is_none() {
        let (sign, digits) = match text.strip_prefix(['-', '+', ' ']) {
            Some(rest) => (&text[..1], rest),
            None => ("", text.as_str()),
        };
        return format!("{sign}{}{digits}", "0".repeat(missing));
    }
    let fill = |n: usize| spec.fill.to_string().repeat(n);
    let align = spec.align.unwrap_or(if number { Align::Right } else { Align::Left });
    match align {
        Align::Left => format!("{text}{}", fill(missing)),
        Align::Right => format!("{}{text}", fill(missing)),
        Align::Center => format!("{}{text}{}", fill(missing / 2), fill(missing - missing / 2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Spec {
        let token = format!("\"{{{text}}}\"");
        let format = hir::parse_format_string(&token).unwrap_or_else(|e| panic!("{e:?}"));
        *format.placeholders().next().map(|(_, spec)| spec).unwrap_or_else(|| panic!("{text}"))
    }

    fn show(text: &str, value: Value) -> String {
        fill(&spec(text), &value, &PrintOptions::default(), 0)
    }

    /// The expected texts are Python's `str.format` (`"{:.4f}".format(x)` for `{:.4}`).
    #[test]
    fn numbers_by_their_specs() {
        assert_eq!(show("", Value::Float(0.1)), "0.1");
        assert_eq!(show("", Value::Float(2.0)), "2.0");
        assert_eq!(show(":.4", Value::Float(0.123456)), "0.1235");
        assert_eq!(show(":.4f", Value::Float(-2.5)), "-2.5000");
        assert_eq!(show(":f", Value::Float(1.0 / 3.0)), "0.333333");
        assert_eq!(show(":.2e", Value::Float(12345.678)), "1.23e+04");
        assert_eq!(show(":e", Value::Float(0.000123)), "1.230000e-04");
        assert_eq!(show(":.3e", Value::Float(1e-100)), "1.000e-100");
        assert_eq!(show(":8.3", Value::Float(3.14259)), "   3.143");
        assert_eq!(show(":<8.3", Value::Float(3.14259)), "3.143   ");
        assert_eq!(show(":*^9.1", Value::Float(3.14259)), "***3.1***");
        assert_eq!(show(":08.2", Value::Float(-3.14259)), "-0003.14");
        assert_eq!(show(":.2", Value::Float(f64::NAN)), "nan");
        assert_eq!(show(":.2", Value::Float(f64::NEG_INFINITY)), "-inf");
        assert_eq!(show("", Value::Int(42)), "42");
        assert_eq!(show(":5", Value::Int(42)), "   42");
        assert_eq!(show(":05d", Value::Int(-42)), "-0042");
        assert_eq!(show(":.2", Value::Int(3)), "3.00");
        assert_eq!(show(":+", Value::Float(2.5)), "+2.5");
        assert_eq!(show(": .1", Value::Float(2.5)), " 2.5");
        assert_eq!(show(":+06.1", Value::Float(2.5)), "+002.5");
        assert_eq!(show(":+", Value::Int(-3)), "-3");
        assert_eq!(show(":>6", Value::Bool(true)), "  true");
        assert_eq!(show(":3", Value::Char(b'x')), "x  ");
        assert_eq!(fill_text(&spec(":^7"), "abc"), "  abc  ");
    }

    #[test]
    fn tensors_in_the_print_layout_with_the_precision() {
        let t = tensor::Tensor::from_vec(&[2, 2], vec![1.0, 2.5, -0.125, 4.0])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(show("", Value::tensor(t.clone())), "[[ 1.000,  2.500],\n [-0.125,  4.000]]");
        assert_eq!(show(":.1", Value::tensor(t.clone())), "[[ 1.0,  2.5],\n [-0.1,  4.0]]");
        let options = PrintOptions::default();
        assert_eq!(
            fill(&spec(""), &Value::tensor(t), &options, 3),
            "[[ 1.000,  2.500],\n    [-0.125,  4.000]]"
        );
    }
}
