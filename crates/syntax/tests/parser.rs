//! Parser tests: golden dumps of `test_data/parser/{ok,err}/*.nb`, losslessness on every input, and
//! property tests that no input makes the parser panic or stall.
//!
//! Run with `UPDATE_EXPECT=1` to rewrite the `.rast` files after an intended change.

use std::{fs, path::PathBuf};

use proptest::prelude::*;
use syntax::{LineIndex, parse};

fn test_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test_data/parser")
}

/// The tree followed by the errors, one per line with 1-based `LINE:COL`.
fn dump(text: &str) -> String {
    let parse = parse(text);
    let mut out = parse.debug_dump();
    let index = LineIndex::new(text);
    for error in parse.errors() {
        let (line, col) = index.line_col_1based(error.range.start());
        out.push_str(&format!("error {line}:{col}: {}\n", error.message));
    }
    out
}

fn check_dir(dir: &str, expect_errors: bool) {
    let dir = test_data().join(dir);
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut entries: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "nb"))
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "no test files in {}", dir.display());
    let mut failures = Vec::new();
    for path in entries {
        let text =
            fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let parse = parse(&text);
        assert_eq!(
            parse.syntax_node().to_string(),
            text,
            "{}: tree is not lossless",
            path.display()
        );
        assert_eq!(
            !parse.errors().is_empty(),
            expect_errors,
            "{}: expected {} errors, got {:?}",
            path.display(),
            if expect_errors { "some" } else { "no" },
            parse.errors()
        );
        let actual = dump(&text);
        let expected_path = path.with_extension("rast");
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            if update {
                fs::write(&expected_path, &actual).unwrap_or_else(|err| panic!("{err}"));
            } else {
                failures.push(expected_path.display().to_string());
            }
        }
    }
    assert!(
        failures.is_empty(),
        "dumps differ (rerun with UPDATE_EXPECT=1 to accept): {failures:#?}"
    );
}

#[test]
fn valid_programs() {
    check_dir("ok", false);
}

#[test]
fn broken_programs_recover() {
    check_dir("err", true);
}

#[test]
fn missing_semicolon_keeps_the_next_declaration() {
    let parse = parse("int a = 1\nint b = 2;");
    let items: Vec<_> = parse.tree().items().map(|item| item.to_string()).collect();
    assert_eq!(items, vec!["int a = 1", "int b = 2;"]);
    assert_eq!(parse.errors().len(), 1);
    assert_eq!(parse.errors()[0].message, "expected `;`");
    assert_eq!(parse.errors()[0].missing, Some(";"));
    assert_eq!(u32::from(parse.errors()[0].range.start()), 9);
}

#[test]
fn missing_loop_paren_keeps_the_body() {
    use syntax::ast::{Item, Stmt};
    let parse = parse("loop (int i = 0; i < n; i++ {\n    c = c + a;\n}\nprint(c);");
    let items: Vec<_> = parse.tree().items().collect();
    assert_eq!(items.len(), 2, "the body and the next statement survive");
    let Some(Item::Stmt(Stmt::LoopStmt(lp))) = items.first() else { panic!("expected a loop") };
    assert_eq!(lp.block().map(|b| b.items().count()), Some(1));
    assert!(lp.loop_step().is_some());
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for (open, close) in [("(", ")"), ("[", "]"), ("{", "}"), ("-", "")] {
        let depth = 10_000;
        let text = format!("x = {}1{};", open.repeat(depth), close.repeat(depth));
        let text = if open == "{" {
            format!("{}{}", open.repeat(depth), close.repeat(depth))
        } else {
            text
        };
        let parse = parse(&text);
        assert_eq!(parse.syntax_node().to_string(), text);
        assert!(
            parse.errors().iter().any(|e| e.message.starts_with("nesting is too deep")),
            "{open}: {:?}",
            parse.errors().first()
        );
    }
}

/// Chains deeper than a tree may be: one error, the text kept, and a tree that can be walked
/// and freed on a 2 MiB stack. Long chains without spaces used to take quadratic time (rowan's
/// node cache re-hashed the chain) and overflow the stack while hashing.
#[test]
fn chains_deeper_than_the_tree_limit_are_one_error() {
    let chains = [
        format!("x = {}1;", "1+".repeat(30_000)),
        format!("x = {}1;", "1 + ".repeat(30_000)),
        format!("x = f{};", "()".repeat(100_000)),
        format!("x = a{};", "[0]".repeat(30_000)),
        format!("x = i{};", "++".repeat(30_000)),
    ];
    for text in chains {
        let outcome = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
            let parse = parse(&text);
            assert_eq!(parse.syntax_node().to_string(), text);
            let messages: Vec<&str> = parse.errors().iter().map(|e| e.message.as_str()).collect();
            assert_eq!(messages.len(), 1, "{messages:?}");
            assert!(messages[0].starts_with("this nests too deeply"), "{messages:?}");
            let (mut depth, mut deepest) = (0, 0);
            for event in parse.syntax_node().preorder() {
                match event {
                    syntax::WalkEvent::Enter(_) => depth += 1,
                    syntax::WalkEvent::Leave(_) => depth -= 1,
                }
                deepest = deepest.max(depth);
            }
            assert!(deepest <= syntax::MAX_TREE_DEPTH, "{deepest}");
        });
        assert!(outcome.map(|handle| handle.join().is_ok()).unwrap_or(false));
    }
}

/// A file of stray characters is one error per run of them, found in linear time (the offsets of
/// the errors used to be summed from the start of the file for each).
#[test]
fn many_stray_characters_are_reported_in_linear_time() {
    let spaced = parse(&"$ ".repeat(150_000));
    assert_eq!(spaced.errors().len(), 150_000);
    assert_eq!(spaced.errors()[149_999].range, syntax::TextRange::at(299_998.into(), 1.into()));
    let run = "é$".repeat(150_000);
    let errors = parse(&run).errors().to_vec();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].range, syntax::TextRange::up_to(450_000.into()));
}

#[test]
fn long_flat_expressions_parse_without_errors() {
    let text = format!("x = {}1;", "1 + ".repeat(9_000));
    let parse = parse(&text);
    assert!(parse.errors().is_empty());
    assert_eq!(parse.syntax_node().to_string(), text);
}

/// Every valid corpus file, for mutation.
fn corpus() -> Vec<String> {
    let dir = test_data().join("ok");
    let mut texts: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "nb"))
                .filter_map(|path| fs::read_to_string(path).ok())
                .collect()
        })
        .unwrap_or_default();
    texts.sort();
    texts
}

/// Byte positions of `text` snapped to character boundaries.
fn snap(text: &str, pos: usize) -> usize {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    pos
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_is_lossless(text in "\\PC{0,200}") {
        let parse = parse(&text);
        prop_assert_eq!(parse.syntax_node().to_string(), text);
    }

    #[test]
    fn token_soup_is_lossless(
        parts in proptest::collection::vec(
            prop::sample::select(vec![
                "(", ")", "[", "]", "{", "}", ",", ";", ":", "?", "@", "=", "+=", "++", "-", "!",
                "if", "elif", "else", "loop", "function", "test", "import", "return", "var", "cns",
                "Tensor", "float", "int", "x", "f", "1", "2.5", "\"s\"", "'c'", " ", "\n", "/*", "//",
                "sizeof", "<<=", "&&", "break", "\"", "'",
            ]),
            0..80,
        )
    ) {
        let text: String = parts.concat();
        let parse = parse(&text);
        prop_assert_eq!(parse.syntax_node().to_string(), text);
    }

    #[test]
    fn mutated_programs_are_lossless(
        file in 0usize..64,
        edits in proptest::collection::vec((any::<usize>(), any::<usize>(), "\\PC{0,4}"), 1..6),
    ) {
        let corpus = corpus();
        let mut text = corpus[file % corpus.len()].clone();
        for (at, len, insert) in edits {
            let start = snap(&text, at % (text.len() + 1));
            let end = snap(&text, start + len % 8);
            text.replace_range(start..end, &insert);
        }
        let parse = parse(&text);
        prop_assert_eq!(parse.syntax_node().to_string(), text.clone());
        for error in parse.errors() {
            prop_assert!(usize::from(error.range.end()) <= text.len());
        }
    }
}
