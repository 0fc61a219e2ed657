//! The values of literal tokens: numbers, characters and strings with their escapes.

/// The contents of a string or char literal token with escapes resolved. Tolerates a missing
/// closing quote (the lexer has reported it) and unknown escapes (kept as written).
pub fn unquote(token: &str) -> String {
    let quote = token.chars().next();
    let mut body = match quote {
        Some(q @ ('"' | '\'')) => &token[q.len_utf8()..],
        _ => token,
    };
    if let Some(q) = quote
        && body.ends_with(q)
        && !body.ends_with(&format!("\\{q}"))
    {
        body = &body[..body.len() - q.len_utf8()];
    } else if let Some(q) = quote
        && body.ends_with(&format!("\\\\{q}"))
    {
        body = &body[..body.len() - q.len_utf8()];
    }
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(ch) = chars.next() {
        if ch != '\\' {
            out.push(ch);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('0') => out.push('\0'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The value of an integer literal, `None` when it does not fit in 64 bits or is malformed.
pub fn parse_int(text: &str) -> Option<i64> {
    text.parse::<i64>().ok()
}

/// The value of a float literal; malformed ones (already reported by the lexer) read as 0.
pub fn parse_float(text: &str) -> f64 {
    let digits: String = text
        .chars()
        .take_while(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        .collect();
    digits.parse::<f64>().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(unquote(r#""a\nb""#), "a\nb");
        assert_eq!(unquote(r"'\''"), "'");
        assert_eq!(unquote(r"'\\'"), "\\");
        assert_eq!(unquote("\"open"), "open");
        assert_eq!(parse_int("99999999999999999999"), None);
        assert_eq!(parse_float("2."), 2.0);
    }
}
