//! Properties of the formatter over the whole test corpus (the parser's valid programs, the
//! formatter's golden files and `examples/`), over random re-spacings of it, over random comments
//! added to it, and over arbitrary text:
//!
//! - formatting is idempotent;
//! - the formatted file parses, without errors, to the same tree up to whitespace, comments and
//!   the documented normalisations (`Bool` to `bool`, trailing commas);
//! - every comment is kept, with its text, in order;
//! - the output does not depend on the input's whitespace, beyond blank lines and on whether a
//!   line break separates a comment from its neighbours;
//! - no input makes the formatter panic, and only syntax errors stop it.

use std::{fs, path::PathBuf};

use proptest::prelude::*;
use syntax::{SyntaxKind, WalkEvent};

/// The corpus: every `.nb` file of the three directories, with its path.
fn corpus() -> Vec<(PathBuf, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dirs = [
        root.join("../syntax/test_data/parser/ok"),
        root.join("test_data"),
        root.join("../../examples"),
    ];
    let mut files = Vec::new();
    for dir in dirs {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for path in entries.filter_map(Result::ok).map(|entry| entry.path()) {
            if path.extension().is_some_and(|ext| ext == "nb")
                && let Ok(text) = fs::read_to_string(&path)
            {
                files.push((path, text));
            }
        }
    }
    files.sort();
    files
}

/// The tree without whitespace and comments, normalised: node kinds and token texts in order.
fn shape(text: &str) -> Vec<String> {
    let parse = syntax::parse(text);
    let mut out = Vec::new();
    for event in parse.syntax_node().preorder_with_tokens() {
        let WalkEvent::Enter(element) = event else { continue };
        match element {
            syntax::SyntaxElement::Node(node) => out.push(format!("{:?}", node.kind())),
            syntax::SyntaxElement::Token(token) => match token.kind() {
                SyntaxKind::WHITESPACE | SyntaxKind::COMMENT => {}
                SyntaxKind::CAPITAL_BOOL_KW => out.push("BOOL_KW bool".to_owned()),
                SyntaxKind::COMMA if is_trailing_comma(&token) => {}
                kind => out.push(format!("{kind:?} {}", token.text())),
            },
        }
    }
    out
}

fn is_trailing_comma(token: &syntax::SyntaxToken) -> bool {
    let mut next = token.next_sibling_or_token();
    while let Some(element) = next {
        if !element.kind().is_trivia() {
            return matches!(
                element.kind(),
                SyntaxKind::R_PAREN | SyntaxKind::R_BRACK | SyntaxKind::R_CURLY
            );
        }
        next = element.next_sibling_or_token();
    }
    false
}

/// The comments of a text, in order, as the formatter normalises them.
fn comments(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    for token in syntax::lex(text).tokens {
        let end = offset + token.len as usize;
        if token.kind == SyntaxKind::COMMENT {
            let comment = &text[offset..end];
            out.push(if comment.starts_with("//") {
                comment.trim_end().to_owned()
            } else {
                comment.replace("\r\n", "\n")
            });
        }
        offset = end;
    }
    out
}

/// Checks every property of one formatting of `text`, and returns the output.
fn check(name: &str, text: &str) -> Result<String, TestCaseError> {
    let output = match fmt::format(text) {
        Ok(output) => output,
        Err(err) => return Err(TestCaseError::fail(format!("{name}: {err}"))),
    };
    let parse = syntax::parse(&output);
    prop_assert!(parse.errors().is_empty(), "{name}: output has errors: {:?}", parse.errors());
    prop_assert_eq!(shape(&output), shape(text), "{}: the tree changed", name);
    prop_assert_eq!(comments(&output), comments(text), "{}: the comments changed", name);
    prop_assert_eq!(fmt::format(&output), Ok(output.clone()), "{}: not idempotent", name);
    prop_assert!(output.is_empty() || (output.ends_with('\n') && !output.ends_with("\n\n")));
    for (i, line) in output.lines().enumerate() {
        prop_assert!(
            !line.ends_with(' ') && !line.ends_with('\t') || in_block_comment(&output, i),
            "{}: trailing whitespace on line {}",
            name,
            i + 1
        );
    }
    Ok(output)
}

/// Whether line `line` (0-based) of `text` ends inside a block comment, whose text is kept as
/// it is, trailing whitespace included.
fn in_block_comment(text: &str, line: usize) -> bool {
    let end_of_line: usize = text.lines().take(line + 1).map(|l| l.len() + 1).sum::<usize>() - 1;
    let mut offset = 0usize;
    for token in syntax::lex(text).tokens {
        let end = offset + token.len as usize;
        if token.kind == SyntaxKind::COMMENT && offset < end_of_line && end_of_line < end {
            return true;
        }
        offset = end;
    }
    false
}

#[test]
fn the_corpus_formats_idempotently_and_keeps_tokens_and_comments() {
    let corpus = corpus();
    assert!(corpus.len() >= 20, "the corpus is too small: {}", corpus.len());
    for (path, text) in &corpus {
        if let Err(err) = check(&path.display().to_string(), text) {
            panic!("{err}");
        }
    }
}

/// One piece of a re-spaced file: a token's text, or the whitespace between two tokens with what
/// the formatter may see of it.
#[derive(Debug, Clone)]
enum Piece {
    Token(String),
    Gap {
        /// Line breaks in the original gap, up to two: blank lines and line comments need them.
        newlines: usize,
        /// Next to a comment: whether a line break is there matters.
        by_comment: bool,
        /// The tokens were glued together; any whitespace keeps them apart, none is needed.
        empty: bool,
    },
}

fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    let mut gap = String::new();
    let mut prev_comment = false;
    let mut first = true;
    for token in syntax::lex(text).tokens {
        let end = offset + token.len as usize;
        let token_text = &text[offset..end];
        offset = end;
        if token.kind == SyntaxKind::WHITESPACE {
            gap.push_str(token_text);
            continue;
        }
        let comment = token.kind == SyntaxKind::COMMENT;
        if !first {
            out.push(Piece::Gap {
                newlines: gap.matches('\n').count().min(2),
                by_comment: comment || prev_comment,
                empty: gap.is_empty(),
            });
        }
        gap.clear();
        first = false;
        prev_comment = comment;
        out.push(Piece::Token(token_text.to_owned()));
    }
    out
}

/// Whitespace for one gap, drawn from `choice`: spaces and tabs, and the line breaks it needs.
fn respace(newlines: usize, by_comment: bool, empty: bool, choice: u32) -> String {
    let pad = |n: u32| -> String {
        (0..n % 4).map(|i| if (choice >> (i + 8)) & 1 == 1 { '\t' } else { ' ' }).collect()
    };
    let lines = match (newlines, by_comment) {
        (2.., _) => 2 + (choice >> 2) as usize % 3,
        (1, true) => 1,
        (0, true) => 0,
        // Between two tokens a single line break means nothing to the formatter.
        (_, false) => (choice >> 2) as usize % 2,
    };
    let mut out = pad(choice >> 4);
    for _ in 0..lines {
        out.push('\n');
        out.push_str(&pad(choice >> 6));
    }
    // Glued tokens may stay glued; anything else needs some whitespace to stay apart.
    if out.is_empty() && (by_comment || !empty) {
        out.push(' ');
    }
    out
}

fn rebuild(pieces: &[Piece], choices: &[u32]) -> String {
    let mut out = String::new();
    for (i, piece) in pieces.iter().enumerate() {
        match piece {
            Piece::Token(text) => out.push_str(text),
            Piece::Gap { newlines, by_comment, empty } => {
                let choice = choices.get(i % choices.len().max(1)).copied().unwrap_or(0);
                out.push_str(&respace(
                    *newlines,
                    *by_comment,
                    *empty,
                    choice.wrapping_add(i as u32),
                ));
            }
        }
    }
    out.push('\n');
    out
}

/// `text` with a comment put between two of its tokens, at each of `positions`, in one of
/// several forms chosen by the `u8`.
fn with_comments(text: &str, positions: &[(usize, u8)]) -> String {
    let pieces = pieces(text);
    let gaps: Vec<usize> =
        (0..pieces.len()).filter(|&i| matches!(pieces[i], Piece::Gap { .. })).collect();
    let mut chosen: Vec<(usize, u8)> = Vec::new();
    if !gaps.is_empty() {
        for &(at, line) in positions {
            chosen.push((gaps[at % gaps.len()], line));
        }
    }
    let mut out = String::new();
    let mut offset = 0usize;
    let mut original = Vec::new();
    for token in syntax::lex(text).tokens {
        let end = offset + token.len as usize;
        original.push((token.kind, &text[offset..end]));
        offset = end;
    }
    // Rebuild from the original text, so that its whitespace stays, and add the comments in the
    // gaps, counted as `pieces` counts them.
    let mut piece = 0usize;
    let mut seen_token = false;
    for (kind, token_text) in original {
        if kind == SyntaxKind::WHITESPACE {
            out.push_str(token_text);
            continue;
        }
        if seen_token {
            for (n, &(gap, form)) in chosen.iter().enumerate() {
                if gap != piece {
                    continue;
                }
                // A comment glued to a `/` would make `//`.
                if out.ends_with('/') {
                    out.push(' ');
                }
                let comment = match form % 6 {
                    0 => format!(" // c{n}\n"),
                    1 => format!(" /* c{n} */ "),
                    2 => format!("/* c{n} */"),
                    3 => format!("\n/* c{n} */\n"),
                    4 => format!("\n\n// c{n}\n\n"),
                    _ => format!(" /* c{n}\n  on two lines */\n"),
                };
                out.push_str(&comment);
            }
            piece += 1;
        }
        seen_token = true;
        out.push_str(token_text);
        piece += 1;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn whitespace_does_not_matter(file in 0usize..1000, choices in prop::collection::vec(any::<u32>(), 1..64)) {
        let corpus = corpus();
        let (path, text) = &corpus[file % corpus.len()];
        let expected = check(&path.display().to_string(), text)?;
        let respaced = rebuild(&pieces(text), &choices);
        let name = format!("{} re-spaced as {respaced:?}", path.display());
        let actual = check(&name, &respaced)?;
        prop_assert_eq!(actual, expected, "{}", name);
    }

    #[test]
    fn comments_anywhere_are_kept(
        file in 0usize..1000,
        positions in prop::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        choices in prop::collection::vec(any::<u32>(), 1..64),
    ) {
        let corpus = corpus();
        let (path, text) = &corpus[file % corpus.len()];
        let commented = with_comments(text, &positions);
        let name = format!("{} with comments as {commented:?}", path.display());
        let expected = check(&name, &commented)?;
        let respaced = rebuild(&pieces(&commented), &choices);
        let name = format!("{name} re-spaced as {respaced:?}");
        prop_assert_eq!(check(&name, &respaced)?, expected, "{}", name);
    }

    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
        match fmt::format(&text) {
            Ok(_) | Err(fmt::FormatError::Syntax(_)) => {}
            Err(err) => prop_assert!(false, "{text:?}: {err}"),
        }
    }

    #[test]
    fn token_soup_formats_or_reports_syntax_errors(
        parts in prop::collection::vec(
            prop::sample::select(vec![
                "(", ")", "[", "]", "{", "}", ",", ";", ":", "?", "@", "=", "+=", "++", "-", "--",
                "!", "&", "*", "if", "elif", "else", "loop", "function", "test", "return", "var",
                "Tensor", "float", "int", "Bool", "x", "f", "1", "2.5", "\"s\"", " ", "\n",
                "/* c */", "// c\n", "sizeof", "&&", "break", "+", "/",
            ]),
            0..60,
        )
    ) {
        let text: String = parts.concat();
        match fmt::format(&text) {
            Ok(output) => {
                check(&format!("{text:?}"), &text)?;
                prop_assert_eq!(fmt::format(&output), Ok(output.clone()));
            }
            Err(fmt::FormatError::Syntax(_)) => {}
            Err(err) => prop_assert!(false, "{text:?}: {err}"),
        }
    }
}

#[test]
fn long_chains_do_not_overflow_the_stack() {
    let sum = format!("x = {}1;\n", "1 + ".repeat(9_000));
    let index = format!("x = a{};\n", "[0]".repeat(9_000));
    let calls = format!("x = f{};\n", "()".repeat(9_000));
    for text in [sum, index, calls] {
        let output = fmt::format(&text).map_err(|err| err.to_string());
        assert!(output.is_ok(), "{output:?}");
    }
}

/// The deepest nesting the parser accepts, of each kind of bracket and of blocks and
/// statements, formats (on a test thread's small stack).
#[test]
fn deep_nesting_formats() {
    let shapes: [(&str, &str, &str, &str, &str); 7] = [
        ("x = ", "(", "1", ")", ";"),
        ("x = ", "[", "1", "]", ";"),
        ("x = ", "f(", "1", ")", ";"),
        ("x = ", "-", "1", "", ";"),
        ("x = ", "a ? b : ", "1", "", ";"),
        ("", "{", "x;", "}", ""),
        ("", "if (x) {", "x;", "}", ""),
    ];
    for (before, open, middle, close, after) in shapes {
        let deepest = (1..=syntax::MAX_NESTING as usize).rev().find_map(|depth| {
            let text =
                format!("{before}{}{middle}{}{after}\n", open.repeat(depth), close.repeat(depth));
            syntax::parse(&text).errors().is_empty().then_some(text)
        });
        let Some(text) = deepest else { panic!("{open}: no depth parses") };
        let output = fmt::format(&text).map_err(|err| err.to_string());
        assert!(output.is_ok(), "{open}: {output:?}");
    }
}
