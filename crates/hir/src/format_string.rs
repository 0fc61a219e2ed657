//! The format strings of `format("epoch {} loss {:.4}", e, l)`: Python's `str.format` placeholders
//! without names, read once here for both the checker (which reports a malformed string with a
//! span inside it) and the interpreter (which fills the placeholders in).
//!
//! A placeholder is `{}` or `{:spec}`, filled by the arguments after the string in order; `{{` and
//! `}}` write one brace. A spec is `[[fill]align][sign][0][width][.precision][type]`: `align` is `<`,
//! `>` or `^` (numbers align right by default, other values left), `sign` is `+` (a sign on
//! every number) or ` ` (a space before a positive one), `0` pads a number with zeros
//! after its sign, `precision` is the number of digits after the point (as in C's `%.4f` and
//! Rust's `{:.4}`), and `type` is `f` (fixed point, the default with a precision), `e`
//! (scientific) or `d` (an `int`). Which specs fit which values is [`FormatSpec::fits`].

use syntax::{TextRange, TextSize};

/// A format string, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatString {
    pub pieces: Vec<FormatPart>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatPart {
    /// Text written as it is, escapes and `{{` already resolved.
    Text(String),
    /// A placeholder; `range` is where it stands in the string literal's token, braces included.
    /// `name` is what stands before its `:` (`{epoch}`, `{0}`), which `format` does not take:
    /// the checker reports it, with the habit of f-strings in mind.
    Placeholder { range: TextRange, spec: FormatSpec, name: Option<String> },
}

impl FormatString {
    /// The placeholders, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = (TextRange, &FormatSpec)> {
        self.pieces.iter().filter_map(|piece| match piece {
            FormatPart::Placeholder { range, spec, .. } => Some((*range, spec)),
            FormatPart::Text(_) => None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatAlign {
    Left,
    Right,
    Center,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatNotation {
    /// As `print` writes the value, or fixed point when a precision is given.
    Default,
    /// `f`: fixed point.
    Fixed,
    /// `e`: scientific, `1.2346e+03`.
    Scientific,
    /// `d`: an integer.
    Integer,
}

/// How one placeholder writes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormatSpec {
    pub fill: char,
    pub align: Option<FormatAlign>,
    /// `+` writes a sign on every number, ` ` a space before a positive one, `-` (the default)
    /// a sign on negative ones only.
    pub sign: char,
    pub zero_pad: bool,
    pub width: Option<usize>,
    pub precision: Option<usize>,
    pub notation: FormatNotation,
}

impl Default for FormatSpec {
    fn default() -> FormatSpec {
        FormatSpec {
            fill: ' ',
            align: None,
            sign: '-',
            zero_pad: false,
            width: None,
            precision: None,
            notation: FormatNotation::Default,
        }
    }
}

/// What kind of value fills a placeholder, for [`FormatSpec::fits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatValueKind {
    Int,
    Float,
    Tensor,
    /// `bool`, `char` and string literals.
    Text,
}

impl FormatSpec {
    /// Why this spec cannot write a value of `kind`, if it cannot: a tensor takes a precision
    /// only (its layout is `print`'s), `d` takes an `int` only, and text takes no precision,
    /// notation or zero padding.
    pub fn fits(&self, kind: FormatValueKind) -> Result<(), &'static str> {
        let numeric = self.precision.is_some()
            || self.notation != FormatNotation::Default
            || self.sign != '-';
        match kind {
            FormatValueKind::Int | FormatValueKind::Float
                if self.notation == FormatNotation::Integer && kind == FormatValueKind::Float =>
            {
                Err("`d` writes an `int`; a float takes `f`, `e` or a precision such as `.4`")
            }
            FormatValueKind::Int
                if self.notation == FormatNotation::Integer && self.precision.is_some() =>
            {
                Err("an `int` written with `d` has no digits after the point")
            }
            FormatValueKind::Int | FormatValueKind::Float => Ok(()),
            FormatValueKind::Tensor
                if self.width.is_some()
                    || self.align.is_some()
                    || self.zero_pad
                    || self.sign != '-'
                    || matches!(
                        self.notation,
                        FormatNotation::Scientific | FormatNotation::Integer
                    ) =>
            {
                Err(
                    "a tensor is written in `print`'s layout, which takes only a precision such as `{:.4}`",
                )
            }
            FormatValueKind::Tensor => Ok(()),
            FormatValueKind::Text if numeric || self.zero_pad => Err(
                "a `bool`, `char` or string takes only a width and an alignment, such as `{:>8}`",
            ),
            FormatValueKind::Text => Ok(()),
        }
    }
}

/// A malformed format string: `range` lies in the literal's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    pub range: TextRange,
    pub message: String,
    pub help: Option<String>,
}

/// Reads a string literal's token, quotes included, as a format string.
pub fn parse_format_string(token: &str) -> Result<FormatString, FormatError> {
    let at = |start: usize, end: usize| {
        TextRange::new(TextSize::from(start as u32), TextSize::from(end as u32))
    };
    // The closing quote ends the loop below; an unterminated literal ends with the token.
    let body_end = token.len();
    let bytes = token.as_bytes();
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut i = usize::from(token.starts_with('"'));
    while i < body_end {
        let Some(ch) = token[i..].chars().next() else { break };
        match ch {
            '"' => break,
            '\\' => {
                let escaped = token[i + 1..].chars().next();
                text.push(match escaped {
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some('r') => '\r',
                    Some('0') => '\0',
                    Some(other) => other,
                    None => '\\',
                });
                i += 1 + escaped.map_or(0, char::len_utf8);
            }
            '{' if bytes.get(i + 1) == Some(&b'{') => {
                text.push('{');
                i += 2;
            }
            '}' if bytes.get(i + 1) == Some(&b'}') => {
                text.push('}');
                i += 2;
            }
            '}' => {
                return Err(FormatError {
                    range: at(i, i + 1),
                    message: "a `}` that closes no placeholder".to_owned(),
                    help: Some("write `}}` for a brace in the text".to_owned()),
                });
            }
            '{' => {
                let Some(close) = token[i..body_end]
                    .find(['}', '"'])
                    .map(|c| i + c)
                    .filter(|&c| bytes[c] == b'}')
                else {
                    return Err(FormatError {
                        range: at(i, i + 1),
                        message: "this placeholder has no closing `}`".to_owned(),
                        help: Some(
                            "close it with `}`, or write `{{` for a brace in the text".to_owned(),
                        ),
                    });
                };
                if !text.is_empty() {
                    pieces.push(FormatPart::Text(std::mem::take(&mut text)));
                }
                let inner = &token[i + 1..close];
                let (name, spec) = inner.split_once(':').unwrap_or((inner, ""));
                let spec_start = i + 1 + name.len() + 1;
                let spec = parse_spec(spec).map_err(|(offset, len, message)| FormatError {
                    range: at(spec_start + offset, spec_start + offset + len),
                    message,
                    help: Some(
                        "a spec is `[[fill]align][sign][0][width][.precision][type]`, such as `{:.4}`, `{:>8.2}` or `{:e}`"
                            .to_owned(),
                    ),
                })?;
                let name = (!name.is_empty()).then(|| name.to_owned());
                pieces.push(FormatPart::Placeholder { range: at(i, close + 1), spec, name });
                i = close + 1;
            }
            _ => {
                text.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    if !text.is_empty() {
        pieces.push(FormatPart::Text(text));
    }
    Ok(FormatString { pieces })
}

/// Reads the spec after a placeholder's `:`; an error gives its offset and length in the spec.
fn parse_spec(spec: &str) -> Result<FormatSpec, (usize, usize, String)> {
    let mut out = FormatSpec::default();
    let chars: Vec<(usize, char)> = spec.char_indices().collect();
    let mut k = 0;
    let align_of = |c: char| match c {
        '<' => Some(FormatAlign::Left),
        '>' => Some(FormatAlign::Right),
        '^' => Some(FormatAlign::Center),
        _ => None,
    };
    if let (Some(&(_, fill)), Some(align)) =
        (chars.first(), chars.get(1).and_then(|&(_, c)| align_of(c)))
    {
        out.fill = fill;
        out.align = Some(align);
        k = 2;
    } else if let Some(align) = chars.first().and_then(|&(_, c)| align_of(c)) {
        out.align = Some(align);
        k = 1;
    }
    if let Some(&(_, sign @ ('+' | '-' | ' '))) = chars.get(k) {
        out.sign = sign;
        k += 1;
    }
    if chars.get(k).is_some_and(|&(_, c)| c == '0') {
        out.zero_pad = true;
        k += 1;
    }
    let number = |k: &mut usize| -> Option<usize> {
        let start = *k;
        while chars.get(*k).is_some_and(|(_, c)| c.is_ascii_digit()) {
            *k += 1;
        }
        let from = chars.get(start).map_or(spec.len(), |&(o, _)| o);
        let to = chars.get(*k).map_or(spec.len(), |&(o, _)| o);
        spec[from..to].parse().ok()
    };
    out.width = number(&mut k);
    if chars.get(k).is_some_and(|&(_, c)| c == '.') {
        let dot = chars[k].0;
        k += 1;
        out.precision = number(&mut k);
        match out.precision {
            None => {
                return Err((
                    dot,
                    1,
                    "a `.` in a spec is followed by the number of digits after the point"
                        .to_owned(),
                ));
            }
            Some(p) if p > 17 => {
                return Err((
                    dot,
                    1 + p.to_string().len(),
                    format!("a precision of {p} digits is more than a float holds (17)"),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(&(offset, c)) = chars.get(k) {
        out.notation = match c {
            'f' => FormatNotation::Fixed,
            'e' => FormatNotation::Scientific,
            'd' => FormatNotation::Integer,
            _ => {
                return Err((
                    offset,
                    spec.len() - offset,
                    format!("`{}` is not a spec that `format` knows", &spec[offset..]),
                ));
            }
        };
        if let Some(&(rest, _)) = chars.get(k + 1) {
            return Err((
                rest,
                spec.len() - rest,
                format!("`{}` after the type `{c}` of a spec", &spec[rest..]),
            ));
        }
    }
    if out.width.is_some_and(|w| w > 1000) {
        return Err((0, spec.len(), "a width of more than 1000 characters".to_owned()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(token: &str) -> String {
        match parse_format_string(token) {
            Ok(format) => format
                .pieces
                .iter()
                .map(|piece| match piece {
                    FormatPart::Text(text) => format!("{text:?}"),
                    FormatPart::Placeholder { range, spec, name } => {
                        format!("{range:?}{name:?}{spec:?}")
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
            Err(error) => format!("error {:?}: {}", error.range, error.message),
        }
    }

    #[test]
    fn placeholders_specs_and_escapes() {
        expect_test::expect![[r#""epoch " 7..9NoneFormatSpec { fill: ' ', align: None, sign: '-', zero_pad: false, width: None, precision: None, notation: Default } " loss " 15..20NoneFormatSpec { fill: ' ', align: None, sign: '-', zero_pad: false, width: None, precision: Some(4), notation: Default } "\n""#]]
            .assert_eq(&read(r#""epoch {} loss {:.4}\n""#));
        expect_test::expect![[r#""{" 3..13NoneFormatSpec { fill: '*', align: Some(Center), sign: '-', zero_pad: false, width: Some(10), precision: Some(2), notation: Scientific } "}""#]]
            .assert_eq(&read(r#""{{{:*^10.2e}}}""#));
        expect_test::expect!["1..7NoneFormatSpec { fill: ' ', align: None, sign: '-', zero_pad: true, width: Some(5), precision: None, notation: Integer }"]
            .assert_eq(&read(r#""{:05d}""#));
        expect_test::expect![[r#"1..6NoneFormatSpec { fill: ' ', align: Some(Left), sign: '-', zero_pad: false, width: Some(8), precision: None, notation: Default } "\"""#]]
            .assert_eq(&read(r#""{:<8}\"""#));
        expect_test::expect![[r#""epoch " 7..10Some("e")FormatSpec { fill: ' ', align: None, sign: '-', zero_pad: false, width: None, precision: None, notation: Default } " " 11..17Some("0")FormatSpec { fill: ' ', align: None, sign: '-', zero_pad: false, width: None, precision: Some(2), notation: Default } " \\" 20..22NoneFormatSpec { fill: ' ', align: None, sign: '-', zero_pad: false, width: None, precision: None, notation: Default }"#]].assert_eq(&read(r#""epoch {e} {0:.2} \\{}""#));
    }

    #[test]
    fn malformed_strings_point_inside_the_literal() {
        expect_test::expect!["error 7..8: this placeholder has no closing `}`"]
            .assert_eq(&read(r#""epoch {:.4""#));
        expect_test::expect!["error 4..5: a `}` that closes no placeholder"]
            .assert_eq(&read(r#""a b} c""#));
        expect_test::expect!["error 5..7: `x4` is not a spec that `format` knows"]
            .assert_eq(&read(r#""{:.4x4}""#));
        expect_test::expect![
            "error 3..4: a `.` in a spec is followed by the number of digits after the point"
        ]
        .assert_eq(&read(r#""{:.f}""#));
        expect_test::expect!["error 6..7: `e` after the type `f` of a spec"]
            .assert_eq(&read(r#""{:.2fe}""#));
    }
}
