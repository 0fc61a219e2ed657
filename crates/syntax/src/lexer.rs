//! The lexer: splits source text into tokens, trivia included, and never stops on bad input.
//!
//! Malformed tokens still get a kind (an unterminated string is still a `STRING`) so the parser
//! can go on; the problem is recorded as a [`LexError`] beside the token. Characters that start no
//! token become `ERROR` tokens, one per run of them, so that a line of stray bytes is one error
//! and not one per character.

use crate::{
    SyntaxErrorKind,
    SyntaxKind::{self, *},
};

/// One token: its kind and its length in bytes. Offsets follow from the lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: SyntaxKind,
    pub len: u32,
}

/// A problem with one token, found while lexing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexError {
    /// Index of the token in the token list.
    pub token: usize,
    pub kind: SyntaxErrorKind,
    pub message: String,
    pub help: Option<String>,
}

#[derive(Debug, Default)]
pub struct Lexed {
    pub tokens: Vec<Token>,
    pub errors: Vec<LexError>,
}

/// Splits `text` into tokens. The lengths of the tokens add up to `text.len()`.
pub fn lex(text: &str) -> Lexed {
    let mut lexer =
        Lexer { bytes: text.as_bytes(), text, pos: 0, lexed: Lexed::default(), foreign: None };
    while lexer.pos < lexer.bytes.len() {
        let start = lexer.pos;
        let (kind, error) = lexer.token();
        debug_assert!(lexer.pos > start, "the lexer must advance");
        let len = u32::try_from(lexer.pos - start).unwrap_or(u32::MAX);
        let token = lexer.lexed.tokens.len();
        if let Some(message) = error {
            let kind = SyntaxErrorKind::Syntax;
            lexer.lexed.errors.push(LexError { token, kind, message, help: None });
        }
        if lexer.foreign.is_some()
            && let Some((message, help)) = lexer.foreign.take()
        {
            let kind = SyntaxErrorKind::ForeignSyntax;
            lexer.lexed.errors.push(LexError { token, kind, message, help: Some(help) });
        }
        lexer.lexed.tokens.push(Token { kind, len });
    }
    lexer.lexed
}

struct Lexer<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
    lexed: Lexed,
    /// The message and help of a token from another language (a preprocessor line), reported
    /// as foreign syntax rather than as a syntax error.
    foreign: Option<(String, String)>,
}

impl Lexer<'_> {
    fn peek(&self, n: usize) -> u8 {
        self.bytes.get(self.pos + n).copied().unwrap_or(0)
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn eat_while(&mut self, pred: impl Fn(u8) -> bool) {
        while !self.at_end() && pred(self.bytes[self.pos]) {
            self.pos += 1;
        }
    }

    /// Lexes one token starting at `self.pos`, which is not at the end.
    fn token(&mut self) -> (SyntaxKind, Option<String>) {
        match self.known_token() {
            Some(token) => token,
            None => self.stray_chars(),
        }
    }

    /// Lexes the token starting at `self.pos`, which is not at the end; `None`, without moving,
    /// when the character there starts no token.
    fn known_token(&mut self) -> Option<(SyntaxKind, Option<String>)> {
        let token = match self.peek(0) {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {
                self.eat_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c));
                (WHITESPACE, None)
            }
            b'/' if self.peek(1) == b'/' => {
                self.eat_while(|b| b != b'\n');
                (COMMENT, None)
            }
            b'/' if self.peek(1) == b'*' => self.block_comment(),
            b'0'..=b'9' => self.number(),
            b'.' if self.peek(1).is_ascii_digit() => self.number(),
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                self.eat_while(|b| b.is_ascii_alphanumeric() || b == b'_');
                let ident = &self.text[self.pos_start_of_ident()..self.pos];
                (SyntaxKind::from_keyword(ident).unwrap_or(IDENT), None)
            }
            b'#' if self.peek(1).is_ascii_alphabetic() => self.directive(),
            b'"' => self.quoted(b'"'),
            b'\'' => self.quoted(b'\''),
            _ => return self.punct().map(|kind| (kind, None)),
        };
        Some(token)
    }

    /// Whether a token starts at `self.pos`. Nothing moves: the token is lexed and forgotten.
    fn at_token(&mut self) -> bool {
        let (pos, foreign) = (self.pos, self.foreign.take());
        let found = self.known_token().is_some();
        (self.pos, self.foreign) = (pos, foreign);
        found
    }

    fn pos_start_of_ident(&self) -> usize {
        let mut start = self.pos;
        while start > 0 && {
            let b = self.bytes[start - 1];
            b.is_ascii_alphanumeric() || b == b'_'
        } {
            start -= 1;
        }
        start
    }

    /// A C preprocessor line, `#include <stdio.h>`: one `ERROR` token to the end of the line,
    /// which the parser reads past, reported once with what Nabla writes instead.
    fn directive(&mut self) -> (SyntaxKind, Option<String>) {
        let start = self.pos;
        self.eat_while(|b| b != b'\n');
        let line = &self.text[start..self.pos];
        let word: String =
            line[1..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let help = match word.as_str() {
            "include" | "import" => {
                "`import \"lib.nb\";` makes another Nabla file's functions and `cns` constants visible; the built-ins need no include"
            }
            "define" => "a constant is `cns int N = 10;` (or `cns float`)",
            _ => "Nabla has no conditional compilation or pragmas",
        };
        let message = format!("Nabla has no preprocessor: `#{word}` is not Nabla");
        self.foreign = Some((message, help.to_owned()));
        (ERROR, None)
    }

    fn block_comment(&mut self) -> (SyntaxKind, Option<String>) {
        self.pos += 2;
        match self.text[self.pos..].find("*/") {
            Some(end) => {
                self.pos += end + 2;
                (COMMENT, None)
            }
            None => {
                self.pos = self.bytes.len();
                (COMMENT, Some("unterminated block comment: `/*` has no closing `*/`".to_owned()))
            }
        }
    }

    /// `0`, `42`, `1.0`, `.5`, `2.`, `3e-4`, `6.02E23`. Letters glued to a number are taken into
    /// the token and reported, so `12abc` is one bad number, not a number and a name. Two dots
    /// end an integer: `0..n` is another language's range, which the parser reports.
    fn number(&mut self) -> (SyntaxKind, Option<String>) {
        let mut kind = INT_NUMBER;
        self.eat_while(|b| b.is_ascii_digit());
        if self.peek(0) == b'.' && self.peek(1) == b'.' {
            return (kind, None);
        }
        if self.peek(0) == b'.' {
            kind = FLOAT_NUMBER;
            self.pos += 1;
            self.eat_while(|b| b.is_ascii_digit());
        }
        if matches!(self.peek(0), b'e' | b'E') {
            let sign = usize::from(matches!(self.peek(1), b'+' | b'-'));
            if self.peek(1 + sign).is_ascii_digit() {
                kind = FLOAT_NUMBER;
                self.pos += 1 + sign;
                self.eat_while(|b| b.is_ascii_digit());
            }
        }
        let start = self.pos;
        self.eat_while(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
        if self.pos > start {
            return (
                kind,
                Some(format!("invalid suffix `{}` on a number", &self.text[start..self.pos])),
            );
        }
        (kind, None)
    }

    /// A string `"..."` or a char `'.'`, with escapes `\n \t \r \0 \\ \' \"`. Neither may span
    /// lines; an unterminated one ends at the end of its line.
    fn quoted(&mut self, quote: u8) -> (SyntaxKind, Option<String>) {
        let kind = if quote == b'"' { STRING } else { CHAR_LITERAL };
        let what = if quote == b'"' { "string" } else { "character" };
        self.pos += 1;
        let mut error = None;
        let mut chars = 0usize;
        loop {
            match self.peek(0) {
                _ if self.at_end() => {
                    error.get_or_insert(format!("unterminated {what} literal"));
                    break;
                }
                b'\n' => {
                    error.get_or_insert(format!("unterminated {what} literal"));
                    break;
                }
                b if b == quote => {
                    self.pos += 1;
                    break;
                }
                b'\\' => {
                    let escaped = self.peek(1);
                    match escaped {
                        b'n' | b't' | b'r' | b'0' | b'\\' | b'\'' | b'"' => self.pos += 2,
                        b'\n' | 0 if self.pos + 1 >= self.bytes.len() || escaped == b'\n' => {
                            self.pos += 1;
                        }
                        _ => {
                            let len = utf8_len(escaped);
                            let end = (self.pos + 1 + len).min(self.bytes.len());
                            let shown = self.text.get(self.pos..end).unwrap_or("\\");
                            error.get_or_insert(format!("invalid escape `{shown}`"));
                            self.pos = end;
                        }
                    }
                    chars += 1;
                }
                b => {
                    self.pos += utf8_len(b).min(self.bytes.len() - self.pos);
                    chars += 1;
                }
            }
        }
        if quote == b'\'' && error.is_none() {
            if chars == 0 {
                error = Some("empty character literal".to_owned());
            } else if chars > 1 {
                error = Some("character literal holds more than one character".to_owned());
            } else if self.text[..self.pos].chars().rev().nth(1).is_some_and(|c| !c.is_ascii()) {
                error = Some("character literal is not ASCII: `char` is 8 bits".to_owned());
            }
        }
        (kind, error)
    }

    fn punct(&mut self) -> Option<SyntaxKind> {
        let (kind, len) = match (self.peek(0), self.peek(1), self.peek(2)) {
            (b'<', b'<', b'=') => (SHLEQ, 3),
            (b'.', b'.', b'.') => (DOT3, 3),
            (b'.', b'.', _) => (DOT2, 2),
            (b'.', _, _) => (DOT, 1),
            (b'>', b'>', b'=') => (SHREQ, 3),
            (b'+', b'+', _) => (PLUS2, 2),
            (b'-', b'-', _) => (MINUS2, 2),
            (b'<', b'<', _) => (SHL, 2),
            (b'>', b'>', _) => (SHR, 2),
            (b'<', b'=', _) => (LTEQ, 2),
            (b'>', b'=', _) => (GTEQ, 2),
            (b'=', b'=', _) => (EQ2, 2),
            (b'!', b'=', _) => (NEQ, 2),
            (b'&', b'&', _) => (AMP2, 2),
            (b'|', b'|', _) => (PIPE2, 2),
            (b'+', b'=', _) => (PLUSEQ, 2),
            (b'-', b'=', _) => (MINUSEQ, 2),
            (b'*', b'=', _) => (STAREQ, 2),
            (b'/', b'=', _) => (SLASHEQ, 2),
            (b'%', b'=', _) => (PERCENTEQ, 2),
            (b'@', b'=', _) => (ATEQ, 2),
            (b'&', b'=', _) => (AMPEQ, 2),
            (b'^', b'=', _) => (CARETEQ, 2),
            (b'|', b'=', _) => (PIPEEQ, 2),
            (b'(', _, _) => (L_PAREN, 1),
            (b')', _, _) => (R_PAREN, 1),
            (b'[', _, _) => (L_BRACK, 1),
            (b']', _, _) => (R_BRACK, 1),
            (b'{', _, _) => (L_CURLY, 1),
            (b'}', _, _) => (R_CURLY, 1),
            (b',', _, _) => (COMMA, 1),
            (b';', _, _) => (SEMICOLON, 1),
            (b':', _, _) => (COLON, 1),
            (b'?', _, _) => (QUESTION, 1),
            (b'+', _, _) => (PLUS, 1),
            (b'-', _, _) => (MINUS, 1),
            (b'*', _, _) => (STAR, 1),
            (b'/', _, _) => (SLASH, 1),
            (b'%', _, _) => (PERCENT, 1),
            (b'@', _, _) => (AT, 1),
            (b'=', _, _) => (EQ, 1),
            (b'!', _, _) => (BANG, 1),
            (b'~', _, _) => (TILDE, 1),
            (b'<', _, _) => (L_ANGLE, 1),
            (b'>', _, _) => (R_ANGLE, 1),
            (b'&', _, _) => (AMP, 1),
            (b'|', _, _) => (PIPE, 1),
            (b'^', _, _) => (CARET, 1),
            _ => return None,
        };
        self.pos += len;
        Some(kind)
    }

    /// A run of characters that start no token, each taken whole even when it is several bytes
    /// long. The run ends where a token starts; that token is lexed once to see it and again as
    /// the next token, so lexing stays linear.
    fn stray_chars(&mut self) -> (SyntaxKind, Option<String>) {
        let start = self.pos;
        let mut count = 0usize;
        loop {
            let ch = self.text[self.pos..].chars().next().unwrap_or('\u{fffd}');
            self.pos += ch.len_utf8();
            count += 1;
            if self.at_end() || self.at_token() {
                break;
            }
        }
        let run = &self.text[start..self.pos];
        let message = match run.chars().next() {
            Some('#') if count == 1 => {
                "unexpected `#`: Nabla has no preprocessor; use `import \"file.nb\";`".to_owned()
            }
            Some('.') if count == 1 => "unexpected `.`: Nabla has no member access".to_owned(),
            Some(ch) if count == 1 && ch.is_control() => {
                format!("unexpected control character U+{:04X}", u32::from(ch))
            }
            _ if count == 1 => format!("unexpected character `{run}`"),
            _ => format!("unexpected characters `{}` ({count} characters)", shown(run)),
        };
        (ERROR, Some(message))
    }
}

/// At most the first 16 characters of a run of stray characters, control characters escaped.
fn shown(run: &str) -> String {
    let mut out = String::new();
    for (i, ch) in run.chars().enumerate() {
        if i == 16 {
            out.push('…');
            break;
        }
        if ch.is_control() {
            out.extend(ch.escape_default());
        } else {
            out.push(ch);
        }
    }
    out
}

/// The byte length of the UTF-8 sequence that starts with `first` (1 for a stray continuation).
fn utf8_len(first: u8) -> usize {
    match first {
        0xf0..=0xff => 4,
        0xe0..=0xef => 3,
        0xc0..=0xdf => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(SyntaxKind, &str)> {
        let lexed = lex(text);
        let mut pos = 0;
        lexed
            .tokens
            .iter()
            .map(|token| {
                let start = pos;
                pos += token.len as usize;
                (token.kind, &text[start..pos])
            })
            .collect()
    }

    fn errors(text: &str) -> Vec<String> {
        lex(text).errors.into_iter().map(|e| e.message).collect()
    }

    #[test]
    fn numbers() {
        for (text, kind) in [
            ("0", INT_NUMBER),
            ("42", INT_NUMBER),
            ("1.0", FLOAT_NUMBER),
            (".5", FLOAT_NUMBER),
            ("2.", FLOAT_NUMBER),
            ("3e-4", FLOAT_NUMBER),
            ("6.02E23", FLOAT_NUMBER),
            ("1e+9", FLOAT_NUMBER),
        ] {
            assert_eq!(kinds(text), vec![(kind, text)], "{text}");
            assert!(errors(text).is_empty(), "{text}");
        }
        assert_eq!(errors("12abc"), vec!["invalid suffix `abc` on a number"]);
        assert_eq!(kinds("1e"), vec![(INT_NUMBER, "1e")]);
        // Another language's range: the number ends at the two dots.
        assert_eq!(kinds("0..3"), vec![(INT_NUMBER, "0"), (DOT2, ".."), (INT_NUMBER, "3")]);
        assert_eq!(kinds("1...")[0], (INT_NUMBER, "1"));
        assert!(errors("0..n").is_empty());
    }

    #[test]
    fn operators_take_the_longest_match() {
        let got: Vec<_> = kinds("<<= >>= @= ++ -- && || a@b").into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            got,
            vec![
                SHLEQ, WHITESPACE, SHREQ, WHITESPACE, ATEQ, WHITESPACE, PLUS2, WHITESPACE, MINUS2,
                WHITESPACE, AMP2, WHITESPACE, PIPE2, WHITESPACE, IDENT, AT, IDENT
            ]
        );
    }

    #[test]
    fn keywords_and_identifiers() {
        assert_eq!(
            kinds("Bool bool Tensor tensor _x1"),
            vec![
                (CAPITAL_BOOL_KW, "Bool"),
                (WHITESPACE, " "),
                (BOOL_KW, "bool"),
                (WHITESPACE, " "),
                (TENSOR_KW, "Tensor"),
                (WHITESPACE, " "),
                (IDENT, "tensor"),
                (WHITESPACE, " "),
                (IDENT, "_x1"),
            ]
        );
    }

    #[test]
    fn strings_chars_and_escapes() {
        assert_eq!(kinds(r#""a\"b""#), vec![(STRING, r#""a\"b""#)]);
        assert_eq!(kinds(r"'\''"), vec![(CHAR_LITERAL, r"'\''")]);
        assert!(errors(r"'\0' '\\' '\n' 'a'").is_empty());
        assert_eq!(errors(r#""a\qb""#), vec!["invalid escape `\\q`"]);
        assert_eq!(errors("\"abc\nx"), vec!["unterminated string literal"]);
        assert_eq!(kinds("\"abc\nx")[0], (STRING, "\"abc"));
        assert_eq!(errors("'ab'"), vec!["character literal holds more than one character"]);
        assert_eq!(errors("''"), vec!["empty character literal"]);
        assert_eq!(errors("'é'"), vec!["character literal is not ASCII: `char` is 8 bits"]);
        assert_eq!(errors("'"), vec!["unterminated character literal"]);
    }

    #[test]
    fn comments() {
        assert_eq!(
            kinds("// x\n/* y */"),
            vec![(COMMENT, "// x"), (WHITESPACE, "\n"), (COMMENT, "/* y */")]
        );
        assert_eq!(errors("/* open"), vec!["unterminated block comment: `/*` has no closing `*/`"]);
        assert_eq!(kinds("/* /* */ */").len(), 4, "block comments do not nest");
    }

    #[test]
    fn stray_characters_are_error_tokens() {
        assert_eq!(kinds("a $ b")[2], (ERROR, "$"));
        assert_eq!(kinds("é")[0], (ERROR, "é"));
        assert_eq!(
            kinds("a é$\u{1}`b"),
            vec![(IDENT, "a"), (WHITESPACE, " "), (ERROR, "é$\u{1}`"), (IDENT, "b")]
        );
        assert_eq!(
            errors("x = é$\u{1}`;"),
            vec!["unexpected characters `é$\\u{1}`` (4 characters)"]
        );
        let long = "é$".repeat(40_000);
        assert_eq!(kinds(&long), vec![(ERROR, long.as_str())]);
        assert_eq!(
            errors(&long),
            vec!["unexpected characters `é$é$é$é$é$é$é$é$…` (80000 characters)"]
        );
        // A run ends where a preprocessor line starts, which is reported once, as its own.
        assert_eq!(kinds("$#define N 3"), vec![(ERROR, "$"), (ERROR, "#define N 3")]);
        assert_eq!(
            errors("$#define N 3"),
            vec!["unexpected character `$`", "Nabla has no preprocessor: `#define` is not Nabla"]
        );
        assert_eq!(
            errors("# x"),
            vec!["unexpected `#`: Nabla has no preprocessor; use `import \"file.nb\";`"]
        );
    }

    #[test]
    fn a_preprocessor_line_is_one_token() {
        assert_eq!(
            kinds("#include <a.h>\nx"),
            vec![(ERROR, "#include <a.h>"), (WHITESPACE, "\n"), (IDENT, "x")]
        );
        assert_eq!(
            errors("#define N 3"),
            vec!["Nabla has no preprocessor: `#define` is not Nabla"]
        );
    }

    #[test]
    fn lengths_cover_the_input() {
        for text in ["", "int a = 1;", "\"open", "'", "/*", "\\", "é\u{0}\u{7f}", "1.2.3e", "'\\"]
        {
            let total: u32 = lex(text).tokens.iter().map(|t| t.len).sum();
            assert_eq!(total as usize, text.len(), "{text:?}");
        }
    }
}
