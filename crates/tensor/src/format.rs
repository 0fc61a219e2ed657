//! How `print` writes values (language.md 7.1): floats as the shortest text that reads back to
//! the same value; tensors laid out as NumPy lays them out, one row per line with aligned columns
//! and a common number of decimals, summarised past a threshold ([`PrintOptions`], which the
//! `print_options` built-in sets), or on one line in the shortest round-trip form
//! ([`Layout::Line`], the form `Display` always gives).
//!
//! The grid follows NumPy's `array2string` with `floatmode="maxprec_equal"` and `", "` between
//! entries, so that the text reads back as a Nabla tensor literal, with two differences: every
//! number shows at least one decimal (`1.0`, not `1.`), as Nabla's floats do, and a wide range of
//! magnitudes alone does not switch to scientific notation (NumPy prints `arange(2000)` as
//! `1.999e+03`); only numbers from `1e8` up, or nonzero ones below `1e-4`, do.

use std::fmt::{self, Write};

use ndarray::{ArrayViewD, Axis};

use super::Tensor;

/// How tensors are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One row per line, aligned columns, a common number of decimals.
    Grid,
    /// Nested brackets on one line, each number in its shortest round-trip form: the form of
    /// Nabla before the grid, and of `Display`.
    Line,
}

/// The options of tensor printing: the `print_options` built-in sets them for a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrintOptions {
    pub layout: Layout,
    /// The most decimals a grid shows (numbers are rounded to them); `None` shows as many as the
    /// shortest round-trip form of the longest number needs.
    pub precision: Option<usize>,
    /// Tensors with more elements than this are summarised.
    pub threshold: usize,
    /// How many leading and trailing entries a summarised axis shows.
    pub edge_items: usize,
    /// How wide a line of a grid may be before a row wraps.
    pub line_width: usize,
    /// Whether numbers too small for the precision print as zero instead of switching the tensor
    /// to scientific notation.
    pub suppress_small: bool,
}

impl PrintOptions {
    /// The largest precision `print_options` accepts: more decimals than an `f64` holds.
    pub const MAX_PRECISION: usize = 17;
}

impl Default for PrintOptions {
    /// NumPy's defaults: 8 decimals, summarised past 1000 elements with 3 at each edge, lines of
    /// 75 characters.
    fn default() -> PrintOptions {
        PrintOptions {
            layout: Layout::Grid,
            precision: Some(8),
            threshold: 1000,
            edge_items: 3,
            line_width: 75,
            suppress_small: false,
        }
    }
}

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

/// Writes a tensor on one line with the default options of [`Layout::Line`]: rank 0 as its
/// float, otherwise nested brackets, summarised past 1000 elements.
pub fn format_tensor(tensor: &Tensor) -> String {
    tensor.to_string()
}

/// Writes a tensor as `print` does with `options`, its first line starting at `column` (after the
/// text before it on the line): the following lines are indented to that column, and the line
/// width counts from it.
pub fn format_tensor_with(tensor: &Tensor, options: &PrintOptions, column: usize) -> String {
    let view = tensor.view();
    if view.ndim() == 0 {
        return view.iter().next().map_or_else(String::new, |&v| format_float(v));
    }
    let summarise = tensor.len() > options.threshold;
    let mut out = String::new();
    match options.layout {
        Layout::Line => {
            let _ = write_nested(&mut out, view, summarise, options.edge_items);
        }
        Layout::Grid => {
            let shown = shown_values(view.clone(), summarise, options.edge_items);
            let numbers = Numbers::new(&shown, options);
            let limit = column + options.line_width;
            let grid = Grid { numbers: &numbers, options, summarise, rank: view.ndim(), limit };
            grid.block(&mut out, view, column, column);
        }
    }
    out
}

impl fmt::Display for Tensor {
    /// The one-line form, [`Layout::Line`] with the default threshold.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let options = PrintOptions::default();
        write_nested(f, self.view(), self.len() > options.threshold, options.edge_items)
    }
}

/// Whether entry `position` of an axis of `extent` entries is left out of a summary.
fn elided(summarise: bool, extent: usize, edge: usize, position: usize) -> bool {
    summarise && extent > 2 * edge && position >= edge && position < extent - edge
}

fn write_nested(
    out: &mut impl Write,
    view: ArrayViewD<'_, f64>,
    summarise: bool,
    edge: usize,
) -> fmt::Result {
    if view.ndim() == 0 {
        return match view.iter().next() {
            Some(&value) => write_float(out, value),
            None => Ok(()),
        };
    }
    let extent = view.len_of(Axis(0));
    out.write_char('[')?;
    let mut first = true;
    for (position, entry) in view.outer_iter().enumerate() {
        if elided(summarise, extent, edge, position) {
            if position == edge {
                out.write_str(", ...")?;
            }
            continue;
        }
        if !first {
            out.write_str(", ")?;
        }
        first = false;
        write_nested(out, entry, summarise, edge)?;
    }
    out.write_char(']')
}

/// The values a summary shows: their common format is chosen from these alone, as NumPy does.
fn shown_values(view: ArrayViewD<'_, f64>, summarise: bool, edge: usize) -> Vec<f64> {
    if !summarise {
        return view.iter().copied().collect();
    }
    let mut out = Vec::new();
    collect_shown(&view, edge, &mut out);
    out
}

fn collect_shown(view: &ArrayViewD<'_, f64>, edge: usize, out: &mut Vec<f64>) {
    if view.ndim() == 0 {
        out.extend(view.iter().copied());
        return;
    }
    let extent = view.len_of(Axis(0));
    for (position, entry) in view.outer_iter().enumerate() {
        if !elided(true, extent, edge, position) {
            collect_shown(&entry, edge, out);
        }
    }
}

/// The common format of the numbers of one tensor: fixed with `decimals` decimals, or
/// scientific with `decimals` in the mantissa and exponents of `exponent_digits` digits.
struct Numbers {
    scientific: bool,
    decimals: usize,
    exponent_digits: usize,
    /// The width every entry is padded to.
    width: usize,
}

impl Numbers {
    fn new(values: &[f64], options: &PrintOptions) -> Numbers {
        let finite = values.iter().copied().filter(|v| v.is_finite());
        let magnitudes: Vec<f64> = finite.clone().map(f64::abs).filter(|&v| v != 0.0).collect();
        let largest = magnitudes.iter().copied().fold(0.0, f64::max);
        let smallest = magnitudes.iter().copied().fold(f64::INFINITY, f64::min);
        let scientific = !magnitudes.is_empty()
            && (largest >= 1e8 || !options.suppress_small && smallest < 1e-4);
        // The decimals a number needs: those of its shortest round-trip form, or, with a
        // precision, those left of its rounded form once trailing zeros go (NumPy's
        // "maxprec_equal").
        let needed = |value: f64| match (scientific, options.precision) {
            (true, None) => decimals_of(&format!("{value:e}")),
            (false, None) => decimals_of(&value.to_string()),
            (true, Some(p)) => decimals_of(trim_zeros(&format!("{value:.p$e}"))),
            (false, Some(p)) => decimals_of(trim_zeros(&format!("{value:.p$}"))),
        };
        let decimals = finite.clone().map(needed).max().unwrap_or(0).max(1);
        let exponent_digits = match scientific {
            true => finite.map(|v| exponent_of(v).unsigned_abs().to_string().len()).max(),
            false => None,
        }
        .unwrap_or(0)
        .max(2);
        let mut numbers = Numbers { scientific, decimals, exponent_digits, width: 0 };
        numbers.width = values.iter().map(|&v| numbers.text(v).len()).max().unwrap_or(0);
        numbers
    }

    /// One number in the common format, not padded.
    fn text(&self, value: f64) -> String {
        if value.is_nan() {
            return "nan".to_owned();
        }
        if value.is_infinite() {
            return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
        }
        if !self.scientific {
            return format!("{value:.*}", self.decimals);
        }
        // `{:.Ne}` rounds the mantissa; the exponent it gives is the rounded one.
        let text = format!("{value:.*e}", self.decimals);
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let sign = if exponent < 0 { '-' } else { '+' };
        let digits = self.exponent_digits;
        format!("{mantissa}e{sign}{:0digits$}", exponent.unsigned_abs())
    }

    fn padded(&self, value: f64) -> String {
        format!("{:>width$}", self.text(value), width = self.width)
    }
}

/// How many digits follow the decimal point of a number's text (`1.25` and `1.25e3` have 2).
fn decimals_of(text: &str) -> usize {
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    mantissa.split_once('.').map_or(0, |(_, decimals)| decimals.len())
}

/// A number's text without the zeros that end its decimals (`1.2500` is `1.25`, `2.000e3` is
/// `2.e3`).
fn trim_zeros(text: &str) -> &str {
    let (mantissa, _) = text.split_once(['e', 'E']).unwrap_or((text, ""));
    match mantissa.contains('.') {
        true => &mantissa[..mantissa.trim_end_matches('0').len()],
        false => mantissa,
    }
}

/// The decimal exponent of a finite number's shortest scientific form.
fn exponent_of(value: f64) -> i32 {
    format!("{value:e}").rsplit_once('e').and_then(|(_, e)| e.parse().ok()).unwrap_or(0)
}

/// A tensor laid out NumPy's way.
struct Grid<'a> {
    numbers: &'a Numbers,
    options: &'a PrintOptions,
    summarise: bool,
    /// The rank of the whole tensor.
    rank: usize,
    /// The column rows wrap at: the line width counted from the tensor's first bracket, so that
    /// a tensor printed after other values keeps the shape it has alone.
    limit: usize,
}

impl Grid<'_> {
    /// Writes the block of `view` whose `[` is at `column` of the current line; `indent` is the
    /// column of that `[` for the lines the block continues on.
    fn block(&self, out: &mut String, view: ArrayViewD<'_, f64>, column: usize, indent: usize) {
        let extent = view.len_of(Axis(0));
        let edge = self.options.edge_items;
        if view.ndim() == 1 {
            self.row(out, view, column, indent);
            return;
        }
        out.push('[');
        // Blocks of rank 3 and more are separated by blank lines, one per axis above 2.
        let separator = format!(",{}{}", "\n".repeat(view.ndim() - 1), " ".repeat(indent + 1));
        let mut first = true;
        for (position, entry) in view.outer_iter().enumerate() {
            if elided(self.summarise, extent, edge, position) {
                if position == edge {
                    out.push_str(&separator);
                    out.push_str("...");
                }
                continue;
            }
            match first {
                true => self.block(out, entry, column + 1, indent + 1),
                false => {
                    out.push_str(&separator);
                    self.block(out, entry, indent + 1, indent + 1);
                }
            }
            first = false;
        }
        out.push(']');
    }

    /// One row, `[a, b, c]`, wrapped at the line width with its lines starting under the first
    /// entry.
    fn row(&self, out: &mut String, view: ArrayViewD<'_, f64>, column: usize, indent: usize) {
        let extent = view.len();
        let edge = self.options.edge_items;
        let mut words: Vec<String> = Vec::with_capacity(extent.min(2 * edge + 1));
        for (position, &value) in view.iter().enumerate() {
            if elided(self.summarise, extent, edge, position) {
                if position == edge {
                    words.push("...".to_owned());
                }
                continue;
            }
            words.push(self.numbers.padded(value));
        }
        // A vector that fits on its line has no columns to align: its numbers are not padded
        // (`[7.0, 10.0]`, as the specification prints it).
        let one_line: usize = words.iter().map(|w| w.trim_start().len() + 2).sum();
        if view.ndim() == self.rank && column + one_line <= self.limit {
            for word in &mut words {
                *word = word.trim_start().to_owned();
            }
        }
        out.push('[');
        let mut at = column + 1;
        let last = words.len().saturating_sub(1);
        for (i, word) in words.iter().enumerate() {
            // Each entry is followed by its `,`, or by the `]` that closes the row.
            if i > 0 {
                if at + 1 + word.len() + 1 > self.limit {
                    out.push('\n');
                    out.push_str(&" ".repeat(indent + 1));
                    at = indent + 1;
                } else {
                    out.push(' ');
                    at += 1;
                }
            }
            out.push_str(word);
            out.push(if i == last { ']' } else { ',' });
            at += word.len() + 1;
        }
        if words.is_empty() {
            out.push(']');
        }
    }
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

    fn grid(values: &[f64], shape: &[usize], options: &PrintOptions) -> String {
        let tensor = Tensor::from_vec(shape, values.to_vec()).unwrap();
        format_tensor_with(&tensor, options, 0)
    }

    /// Outputs of `numpy.array2string(a, separator=", ", floatmode="maxprec_equal")`, computed
    /// once with NumPy 2, with Nabla's one decimal at least (`1.0` for NumPy's `1.`).
    #[test]
    fn grids_are_laid_out_as_numpy_lays_them_out() {
        let defaults = PrintOptions::default();
        assert_eq!(grid(&[0.1, 0.25], &[2], &defaults), "[0.10, 0.25]");
        assert_eq!(grid(&[1.0, 2.0, 3.0, 4.0], &[2, 2], &defaults), "[[1.0, 2.0],\n [3.0, 4.0]]");
        let special = [f64::NAN, 2.5, f64::NEG_INFINITY, 0.125];
        assert_eq!(grid(&special, &[2, 2], &defaults), "[[  nan, 2.500],\n [ -inf, 0.125]]");
        assert_eq!(grid(&[1e-120, 1e120], &[2], &defaults), "[1.0e-120, 1.0e+120]");
        assert_eq!(grid(&[1.0 / 3.0, 2.0 / 3.0], &[2], &defaults), "[0.33333333, 0.66666667]");
        let narrow = PrintOptions { precision: Some(4), line_width: 30, ..defaults };
        let sevenths: Vec<f64> = (0..6).map(|i| f64::from(i) / 7.0).collect();
        assert_eq!(
            grid(&sevenths, &[6], &narrow),
            "[0.0000, 0.1429, 0.2857,\n 0.4286, 0.5714, 0.7143]"
        );
        let blocks: Vec<f64> = (0..8).map(f64::from).collect();
        assert_eq!(
            grid(&blocks, &[2, 2, 2], &defaults),
            "[[[0.0, 1.0],\n  [2.0, 3.0]],\n\n [[4.0, 5.0],\n  [6.0, 7.0]]]"
        );
    }

    #[test]
    fn small_numbers_can_be_suppressed_and_continued_lines_follow_the_column() {
        let suppress =
            PrintOptions { precision: Some(4), suppress_small: true, ..Default::default() };
        assert_eq!(grid(&[1e-9, 1.0], &[2], &suppress), "[0.0, 1.0]");
        let tensor = Tensor::from_vec(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(
            format_tensor_with(&tensor, &PrintOptions::default(), 4),
            "[[1.0, 2.0],\n     [3.0, 4.0]]"
        );
        let line = PrintOptions { layout: Layout::Line, ..Default::default() };
        assert_eq!(format_tensor_with(&tensor, &line, 4), "[[1.0, 2.0], [3.0, 4.0]]");
    }
}
