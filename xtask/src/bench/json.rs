//! Just enough JSON for the harness's own inputs: the figures the reference scripts print, one
//! object a line, and the timings file that `nabla run --timings-json` writes. Not a general
//! library: numbers are `f64` and nothing is streamed.

/// A parsed JSON value; objects keep their keys in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Value>),
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object; `None` for a missing key or a value that is not an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as it would read in a table cell: strings bare, everything else as JSON.
    pub fn to_text(&self) -> String {
        match self {
            Value::Null => "null".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.clone(),
            Value::Array(items) => {
                let items: Vec<_> = items.iter().map(Value::to_text).collect();
                format!("[{}]", items.join(", "))
            }
            Value::Object(members) => {
                let members: Vec<_> =
                    members.iter().map(|(k, v)| format!("{k}: {}", v.to_text())).collect();
                format!("{{{}}}", members.join(", "))
            }
        }
    }
}

/// Parses one JSON document; anything but whitespace after it is an error.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut parser = Parser { bytes: text.as_bytes(), pos: 0 };
    let value = parser.value()?;
    parser.skip_whitespace();
    if parser.pos != parser.bytes.len() {
        return Err(parser.error("trailing characters"));
    }
    Ok(value)
}

struct Parser<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn value(&mut self) -> Result<Value, String> {
        self.skip_whitespace();
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string().map(Value::String),
            Some(b'n') => self.literal("null", Value::Null),
            Some(b't') => self.literal("true", Value::Bool(true)),
            Some(b'f') => self.literal("false", Value::Bool(false)),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("unexpected character")),
            None => Err(self.error("unexpected end")),
        }
    }

    fn object(&mut self) -> Result<Value, String> {
        self.pos += 1;
        let mut members = Vec::new();
        self.skip_whitespace();
        if self.eat(b'}') {
            return Ok(Value::Object(members));
        }
        loop {
            self.skip_whitespace();
            if self.peek() != Some(b'"') {
                return Err(self.error("expected a key"));
            }
            let key = self.string()?;
            self.skip_whitespace();
            if !self.eat(b':') {
                return Err(self.error("expected `:`"));
            }
            members.push((key, self.value()?));
            self.skip_whitespace();
            if self.eat(b'}') {
                return Ok(Value::Object(members));
            }
            if !self.eat(b',') {
                return Err(self.error("expected `,` or `}`"));
            }
        }
    }

    fn array(&mut self) -> Result<Value, String> {
        self.pos += 1;
        let mut items = Vec::new();
        self.skip_whitespace();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value()?);
            self.skip_whitespace();
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            if !self.eat(b',') {
                return Err(self.error("expected `,` or `]`"));
            }
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The input is a `&str` and the run stops only at ASCII bytes, so this is whole text.
            out.push_str(&String::from_utf8_lossy(&self.bytes[start..self.pos]));
            match self.peek() {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    out.push(self.escape()?);
                }
                Some(_) => return Err(self.error("control character in a string")),
                None => return Err(self.error("unterminated string")),
            }
        }
    }

    fn escape(&mut self) -> Result<char, String> {
        let Some(b) = self.peek() else { return Err(self.error("unterminated escape")) };
        self.pos += 1;
        Ok(match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let high = self.hex4()?;
                if (0xD800..0xDC00).contains(&high) && self.bytes[self.pos..].starts_with(b"\\u") {
                    self.pos += 2;
                    let low = self.hex4()?;
                    let code =
                        0x10000 + ((high - 0xD800) << 10) + (low.wrapping_sub(0xDC00) & 0x3FF);
                    char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
                } else {
                    char::from_u32(high).unwrap_or(char::REPLACEMENT_CHARACTER)
                }
            }
            _ => return Err(self.error("unknown escape")),
        })
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits =
            self.bytes.get(self.pos..self.pos + 4).ok_or_else(|| self.error("short \\u"))?;
        let text = std::str::from_utf8(digits).map_err(|_| self.error("bad \\u"))?;
        let code = u32::from_str_radix(text, 16).map_err(|_| self.error("bad \\u"))?;
        self.pos += 4;
        Ok(code)
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.pos;
        while let Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.bytes[start..self.pos]).unwrap_or_default();
        text.parse().map(Value::Number).map_err(|_| self.error("bad number"))
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Value, String> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("unknown literal"))
        }
    }

    fn skip_whitespace(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        if found {
            self.pos += 1;
        }
        found
    }

    fn error(&self, what: &str) -> String {
        format!("invalid JSON at byte {}: {what}", self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_figure_line() {
        let value =
            parse(r#"{"key": "ring.numpy_true", "seconds": null, "note": "a \"b\"\u00b5", "n": [1, -2.5e-3]}"#)
                .unwrap();
        assert_eq!(value.get("key").and_then(Value::as_str), Some("ring.numpy_true"));
        assert_eq!(value.get("seconds"), Some(&Value::Null));
        assert_eq!(value.get("note").and_then(Value::as_str), Some("a \"b\"\u{b5}"));
        assert_eq!(value.get("n").map(Value::to_text).as_deref(), Some("[1, -0.0025]"));
    }

    #[test]
    fn reads_a_timings_file() {
        let text = "{\n  \"run_seconds\": 0.25,\n  \"check_seconds\": 1e-3,\n  \"tape_bytes_per_op\": 48\n}\n";
        let value = parse(text).unwrap();
        assert_eq!(value.get("run_seconds").and_then(Value::as_f64), Some(0.25));
        assert_eq!(value.get("tape_bytes_per_op").and_then(Value::as_f64), Some(48.0));
        assert_eq!(parse("{}").unwrap(), Value::Object(Vec::new()));
        assert_eq!(parse("\"\\ud83d\\ude00\"").unwrap(), Value::String("\u{1F600}".to_owned()));
    }

    #[test]
    fn rejects_what_is_not_json() {
        for text in ["", "{", "{\"a\" 1}", "[1,]", "nul", "\"open", "1 2", "{\"a\": 1,}"] {
            assert!(parse(text).is_err(), "{text:?}");
        }
    }
}
