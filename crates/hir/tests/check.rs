//! Checker tests: every program in `test_data/check/ok` checks clean, every program in
//! `test_data/check/err` gives exactly the diagnostics of its `.txt` golden file, and the
//! specification's Figure 1 gives exactly its real errors. A property test mutates the corpus and
//! checks that nothing panics and every range lies inside its file; another checks very deep
//! input on a small stack.
//!
//! A fixture may hold several files: lines `//- name.nb` start each one; the first is checked.
//! Run with `UPDATE_EXPECT=1` to rewrite the golden files after an intended change.

use std::{fs, path::PathBuf};

use hir::{Database, Diagnostic, SourceFile};
use proptest::prelude::*;
use syntax::LineIndex;

fn test_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test_data/check")
}

/// The files of a fixture, in order.
fn split_fixture(text: &str) -> Vec<(String, String)> {
    if !text.starts_with("//- ") {
        return vec![("main.nb".to_owned(), text.to_owned())];
    }
    let mut files: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        match line.strip_prefix("//- ") {
            Some(name) => files.push((name.trim().to_owned(), String::new())),
            None => {
                if let Some((_, body)) = files.last_mut() {
                    body.push_str(line);
                }
            }
        }
    }
    files
}

fn load(text: &str) -> (Database, SourceFile) {
    let mut db = Database::default();
    let files = split_fixture(text);
    let mut first = None;
    for (name, body) in &files {
        let file = db.set_file(PathBuf::from("/fixture").join(name), body.as_str());
        first.get_or_insert(file);
    }
    let first = first.unwrap_or_else(|| db.set_file("/fixture/main.nb", ""));
    (db, first)
}

/// One line per diagnostic (`LINE:COL: CODE message`), with its labels, help and fixes indented
/// below it.
fn render(db: &Database, diagnostics: &[Diagnostic], main: SourceFile) -> String {
    let mut out = String::new();
    for d in diagnostics {
        let index = LineIndex::new(d.file.text(db));
        let (line, col) = index.line_col_1based(d.range.start());
        let prefix = if d.file == main {
            String::new()
        } else {
            format!("{}:", d.file.path(db).file_name().unwrap_or_default().to_string_lossy())
        };
        out.push_str(&format!("{prefix}{line}:{col}: {} {}\n", d.code, d.message));
        for label in &d.labels {
            let index = LineIndex::new(label.file.text(db));
            let (line, col) = index.line_col_1based(label.range.start());
            out.push_str(&format!("    label {line}:{col}: {}\n", label.message));
        }
        if let Some(help) = &d.help {
            out.push_str(&format!("    help: {help}\n"));
        }
        for fix in &d.fixes {
            let edits: Vec<String> = fix
                .edits
                .iter()
                .map(|edit| {
                    let index = LineIndex::new(edit.file.text(db));
                    let (line, col) = index.line_col_1based(edit.range.start());
                    format!("{line}:{col} {:?}", edit.insert)
                })
                .collect();
            out.push_str(&format!("    fix: {} [{}]\n", fix.label, edits.join(", ")));
        }
    }
    out
}

fn fixtures(dir: &str) -> Vec<PathBuf> {
    let dir = test_data().join(dir);
    let mut entries: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "nb"))
        .collect();
    entries.sort();
    entries
}

fn check_goldens(dir: &str) -> usize {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    let paths = fixtures(dir);
    for path in &paths {
        let text =
            fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let (db, main) = load(&text);
        let diagnostics = hir::file_diagnostics(&db, main);
        assert!(!diagnostics.is_empty(), "{}: expected diagnostics, got none", path.display());
        let actual = render(&db, diagnostics, main);
        let expected_path = path.with_extension("txt");
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            if update {
                fs::write(&expected_path, &actual).unwrap_or_else(|err| panic!("{err}"));
            } else {
                failures.push(format!(
                    "{}:\n--- expected\n{expected}--- actual\n{actual}",
                    path.display()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "diagnostics differ (rerun with UPDATE_EXPECT=1 to accept):\n{}",
        failures.join("\n")
    );
    paths.len()
}

#[test]
fn valid_programs_check_clean() {
    let paths = fixtures("ok");
    assert!(paths.len() >= 10, "too few valid programs");
    let mut failures = Vec::new();
    for path in &paths {
        let text =
            fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        let (db, main) = load(&text);
        let diagnostics = hir::file_diagnostics(&db, main);
        if !diagnostics.is_empty() {
            failures.push(format!("{}:\n{}", path.display(), render(&db, diagnostics, main)));
        }
    }
    assert!(failures.is_empty(), "valid programs have diagnostics:\n{}", failures.join("\n"));
}

#[test]
fn ill_formed_programs_give_their_diagnostics() {
    let count = check_goldens("err");
    assert!(count >= 60, "the corpus must hold at least 60 ill-formed programs, found {count}");
}

/// The corpus of mistakes a newcomer makes: misspelt keywords and names, and the habits of C,
/// Python, Rust and JavaScript. Each program holds one mistake and gives exactly one diagnostic
/// (its golden file shows which, with its help and fix-it), unless its first line documents a
/// few more as `// diagnostics: N, because ...`. Every fix-it, applied, leaves a program that
/// checks clean.
#[test]
fn each_mistake_gives_one_diagnostic_and_its_fix_works() {
    let count = check_goldens("mistakes");
    assert!(count >= 60, "the corpus must hold at least 60 mistakes, found {count}");
    let mut failures = Vec::new();
    for path in fixtures("mistakes") {
        let text = fs::read_to_string(&path).unwrap_or_default();
        let expected = text
            .strip_prefix("// diagnostics: ")
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(1);
        let (db, main) = load(&text);
        let diagnostics = hir::file_diagnostics(&db, main);
        if diagnostics.len() != expected {
            failures.push(format!(
                "{}: {} diagnostics, expected {expected}:\n{}",
                path.display(),
                diagnostics.len(),
                render(&db, diagnostics, main)
            ));
            continue;
        }
        for diagnostic in diagnostics {
            let Some(fix) = diagnostic.fixes.first() else { continue };
            let mut fixed = main.text(&db).to_string();
            let mut edits: Vec<_> = fix.edits.iter().filter(|e| e.file == main).collect();
            edits.sort_by_key(|e| std::cmp::Reverse(e.range.start()));
            for edit in edits {
                fixed.replace_range(std::ops::Range::<usize>::from(edit.range), &edit.insert);
            }
            let mut fixture = text.clone();
            fixture = fixture.replacen(main.text(&db).as_ref(), &fixed, 1);
            let (db, main) = load(&fixture);
            let left = hir::file_diagnostics(&db, main);
            if !left.is_empty() {
                failures.push(format!(
                    "{}: after the fix-it `{}`:\n{fixed}\nit still gives\n{}",
                    path.display(),
                    fix.label,
                    render(&db, left, main)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_code_has_a_test_program() {
    let mut seen = std::collections::BTreeSet::new();
    for path in fixtures("err").into_iter().chain(fixtures("mistakes")) {
        let golden = fs::read_to_string(path.with_extension("txt")).unwrap_or_default();
        for line in golden.lines().filter(|line| !line.starts_with(' ')) {
            if let Some(code) = line.split_whitespace().nth(1) {
                seen.insert(code.to_owned());
            }
        }
    }
    // Run-time codes have their programs in `crates/exec/test_data/run`.
    let missing: Vec<_> = hir::Code::ALL
        .iter()
        .filter(|c| !c.at_run_time())
        .map(|c| c.as_str())
        .filter(|c| !seen.contains(*c))
        .collect();
    assert!(missing.is_empty(), "codes without a test program: {missing:?}");
}

/// Every lint has, besides the programs in `err/` where it fires, a program in `ok/` named
/// `wNNNN_quiet.nb` of the near misses where it must not: the look-alikes that mean what they say
/// and a line silenced by `// allow(WNNNN)`. `valid_programs_check_clean` holds them to no
/// diagnostic at all.
#[test]
fn every_lint_has_a_program_where_it_must_stay_quiet() {
    let quiet: Vec<String> = fixtures("ok")
        .iter()
        .filter_map(|path| path.file_stem()?.to_str()?.strip_suffix("_quiet").map(str::to_owned))
        .collect();
    let missing: Vec<_> = hir::Code::ALL
        .iter()
        .filter(|c| c.severity() == hir::Severity::Warning)
        .map(|c| c.as_str())
        .filter(|c| !quiet.iter().any(|q| q.eq_ignore_ascii_case(c)))
        .collect();
    assert!(missing.is_empty(), "lints without a must-not-fire program in ok/: {missing:?}");
}

/// The `.nb` files under `dir`, recursively, in order.
fn programs_under(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|err| panic!("{}: {err}", dir.display()));
        for path in entries.filter_map(Result::ok).map(|entry| entry.path()) {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "nb") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The lints have no false positives on the programs people read and run: the examples, the
/// programs the runtime's and the test runner's tests run, the benchmarks and the valid programs
/// of this corpus give no warning (the docs' code blocks are held to the same by
/// `cargo xtask docs`). A program there that means what a lint warns about says so with
/// `// allow(CODE)`. Programs with errors (`figure1.nb`, the test runner's `check_error`) are
/// about their errors and left out, and so are the formatter's, the parser's and the editor
/// grammar's fixtures, which declare names only to lay them out.
#[test]
fn lints_stay_quiet_on_the_examples_and_the_test_corpora() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dirs = [
        "examples",
        "crates/exec/test_data/run",
        "crates/cli/test_data/test_runner",
        "bench",
        "crates/hir/test_data/check/ok",
    ];
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in dirs.iter().flat_map(|dir| programs_under(&root.join(dir))) {
        let mut db = Database::default();
        let read = &mut |p: &std::path::Path| fs::read_to_string(p).map_err(|e| e.to_string());
        let Ok(main) = db.load_with_imports(&path, read) else { continue };
        let diagnostics = hir::file_diagnostics(&db, main);
        if diagnostics.iter().any(|d| d.severity == hir::Severity::Error) {
            continue;
        }
        checked += 1;
        if !diagnostics.is_empty() {
            failures.push(format!("{}:\n{}", path.display(), render(&db, diagnostics, main)));
        }
    }
    assert!(checked >= 100, "only {checked} programs checked");
    assert!(
        failures.is_empty(),
        "warnings on programs that mean what they say:\n{}",
        failures.join("\n")
    );
}

#[test]
fn figure_1_gives_exactly_its_errors() {
    check_goldens("figure1");
    let text = fs::read_to_string(test_data().join("figure1/figure1.nb")).unwrap_or_default();
    let (db, main) = load(&text);
    let codes: Vec<&str> =
        hir::file_diagnostics(&db, main).iter().map(|d| d.code.as_str()).collect();
    assert_eq!(
        codes,
        ["E0002", "E0101", "E0204", "E0205", "E0204", "E0204", "E0204", "E0101", "E0002", "E0203"]
    );
}

/// Every range of every diagnostic lies inside its file, on character boundaries.
fn assert_ranges_inside(db: &Database, diagnostics: &[Diagnostic]) {
    for d in diagnostics {
        let mut ranges = vec![(d.file, d.range)];
        ranges.extend(d.labels.iter().map(|l| (l.file, l.range)));
        for (file, range) in ranges {
            let text = file.text(db);
            let end = usize::from(range.end());
            assert!(end <= text.len(), "{d:?}: range past the end of the file");
            assert!(
                text.is_char_boundary(usize::from(range.start())) && text.is_char_boundary(end)
            );
        }
    }
}

fn corpus() -> Vec<String> {
    ["ok", "err", "figure1", "mistakes"]
        .iter()
        .flat_map(|dir| fixtures(dir))
        .filter_map(|path| fs::read_to_string(path).ok())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Cutting, duplicating and splicing pieces of the corpus never panics, and every diagnostic
    /// range stays inside the text.
    #[test]
    fn mutated_programs_never_panic(
        file in any::<prop::sample::Index>(),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), 0usize..40, 0usize..4), 1..6),
    ) {
        let corpus = corpus();
        let mut text = corpus[file.index(corpus.len())].clone();
        let pieces = ["", ";", "}", "{", "(", ")", "[", "]", ",", "@", "Tensor", "grad(", "var", "cns", "=", "x", "0", "\"s\"", "return", "function"];
        for (at, len, piece) in cuts {
            let start = at.index(text.len() + 1);
            let start = (0..=start).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let end = (start + len).min(text.len());
            let end = (end..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
            let replacement = pieces[(piece * 5 + len) % pieces.len()];
            text.replace_range(start..end, replacement);
        }
        let (db, main) = load(&text);
        let diagnostics = hir::file_diagnostics(&db, main);
        assert_ranges_inside(&db, diagnostics);
        for def in hir::all_defs(&db, main) {
            let _ = hir::infer(&db, def);
        }
    }
}

/// Runs `f` on a thread with a 2 MB stack, as test threads and small hosts have.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    let handle = std::thread::Builder::new().stack_size(2 * 1024 * 1024).spawn(f);
    let joined = handle.map(|h| h.join());
    assert!(matches!(joined, Ok(Ok(()))), "checking deep input failed on a 2 MB stack");
}

#[test]
fn long_operator_chains_do_not_overflow_the_stack() {
    on_small_stack(|| {
        let mut text = String::from("float x = 1.0");
        for _ in 0..9_000 {
            text.push_str(" + 1.0");
        }
        text.push_str(";\nprint(x);\nint y = x;\nprint(y);\n");
        let (db, main) = load(&text);
        let codes: Vec<_> = hir::file_diagnostics(&db, main).iter().map(|d| d.code).collect();
        assert_eq!(codes, [hir::Code::TypeMismatch]);
    });
}

#[test]
fn deep_nesting_is_checked_without_overflow() {
    on_small_stack(|| {
        let depth = 300;
        let mut text = String::from("float x = ");
        text.push_str(&"(".repeat(depth));
        text.push('1');
        text.push_str(&")".repeat(depth));
        text.push_str(";\n");
        for _ in 0..depth {
            text.push_str("if (x > 0) {\n");
        }
        text.push_str("x = x @ x;\n");
        text.push_str(&"}\n".repeat(depth));
        let (db, main) = load(&text);
        let diagnostics = hir::file_diagnostics(&db, main);
        assert_ranges_inside(&db, diagnostics);
        assert!(!diagnostics.is_empty());
    });
}

/// The error index: each section's erroneous example (marked `nabla,error=CODE` or
/// `nabla,warning=CODE`, see `docs/README.md`) gives its code, and its fixed example (the last
/// code block, marked `nabla`) checks clean. The example of a run-time code (`nabla,run-error=CODE`)
/// checks without errors and its fix (`nabla,run`) checks clean; `crates/cli/tests/run.rs` runs
/// them. `cargo xtask docs` checks the same blocks with the `nabla` binary; this test keeps the
/// index right under `cargo test`.
#[test]
fn error_index_examples_are_right() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/errors.md");
    let index = fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let mut failures = Vec::new();
    for section in index.split("\n## ").skip(1) {
        let code = section.split(':').next().unwrap_or_default();
        // (info string, text) of each Nabla block.
        let blocks: Vec<(&str, &str)> = section
            .split("```nabla")
            .skip(1)
            .filter_map(|block| block.split_once('\n'))
            .filter_map(|(info, rest)| Some((info, rest.split("```").next()?)))
            .collect();
        let (Some(&(fixed_info, fixed)), Some(&(erroneous_info, erroneous))) =
            (blocks.last(), blocks.first())
        else {
            failures.push(format!("{code}: no example"));
            continue;
        };
        let (marker, fixed_marker) = match code.chars().next() {
            Some('W') => (format!(",warning={code}"), ""),
            Some('R') => (format!(",run-error={code}"), ",run"),
            _ => (format!(",error={code}"), ""),
        };
        if blocks.len() != 2 || erroneous_info != marker || fixed_info != fixed_marker {
            failures.push(format!(
                "{code}: expected a `nabla{marker}` block, then a `nabla{fixed_marker}` one"
            ));
            continue;
        }
        let (db, main) = load(erroneous);
        let diagnostics = hir::file_diagnostics(&db, main);
        let codes: Vec<&str> = diagnostics.iter().map(|d| d.code.as_str()).collect();
        let run_time = code.starts_with('R');
        if run_time && diagnostics.iter().any(|d| d.severity == hir::Severity::Error) {
            failures.push(format!("{code}: the erroneous example does not check: {codes:?}"));
        }
        if !run_time && !codes.contains(&code) {
            failures.push(format!("{code}: the erroneous example gives {codes:?}"));
        }
        let (db, main) = load(fixed);
        let diagnostics = hir::file_diagnostics(&db, main);
        if !diagnostics.is_empty() {
            failures.push(format!(
                "{code}: the fixed example gives\n{}",
                render(&db, diagnostics, main)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
