//! The promises Nabla's tools keep on every input, written once as functions that panic with a
//! readable message when one is broken: the parser is lossless and its trees are no deeper than
//! their limit; the checker's ranges lie inside the file and an edit checks to what a fresh start
//! gives; the formatter is idempotent and changes only whitespace; the interpreter never fails
//! internally; the language server answers every request in time ([`session`]).
//!
//! Three kinds of callers check the same promises: the coverage-guided fuzz targets in `fuzz/`
//! (one per entry of [`TARGETS`]; there a panic is a finding), the property tests of this crate
//! over generated programs, and the regression test that replays every input under
//! `fuzz/regressions/`. Panicking is this crate's way of reporting; nothing in the tools depends
//! on it.

pub mod session;

use hir::{Database, Diagnostic, SourceFile};
use syntax::{LineIndex, SyntaxKind, TextRange, TextSize};

/// A fuzz target: it takes the fuzzer's bytes and panics when a promise is broken.
pub type Target = fn(&[u8]);

/// The fuzz targets by name, each taking the fuzzer's bytes: `fuzz/fuzz_targets/NAME.rs` calls
/// the function, and the regression test replays `fuzz/regressions/NAME/*` through it.
pub const TARGETS: &[(&str, Target)] = &[
    ("parse", parse_bytes),
    ("check", check_bytes),
    ("format", format_bytes),
    ("run", run_bytes),
    ("lsp", session::session_bytes),
];

/// [`parse`] of the bytes read as UTF-8 (invalid sequences replaced, as no tool sees them).
pub fn parse_bytes(data: &[u8]) {
    parse(&String::from_utf8_lossy(data));
}

/// [`check`] of the bytes read as UTF-8; with a NUL byte, [`check_edit`] from the text before
/// the first NUL to the text after it.
pub fn check_bytes(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match text.split_once('\0') {
        Some((old, new)) => check_edit(old, new),
        None => check(&text),
    }
}

/// [`format`] of the bytes read as UTF-8.
pub fn format_bytes(data: &[u8]) {
    format(&String::from_utf8_lossy(data));
}

/// [`run`] of the bytes read as UTF-8.
pub fn run_bytes(data: &[u8]) {
    run(&String::from_utf8_lossy(data));
}

/// The path the checked text is given in the database.
const MAIN: &str = "/fuzz/main.nb";

/// How many offsets of a file the editor queries probe.
const PROBES: usize = 48;

/// Lexing and parsing: the tokens cover the text exactly, the tree holds every byte of it and is
/// no deeper than its limit, and every error lies inside the text on character boundaries.
pub fn parse(text: &str) {
    let lexed = syntax::lex(text);
    let mut covered = 0usize;
    for token in &lexed.tokens {
        assert!(token.len > 0, "an empty {:?} token at byte {covered}", token.kind);
        covered += token.len as usize;
    }
    assert_eq!(covered, text.len(), "the tokens cover {covered} of {} bytes", text.len());
    for error in &lexed.errors {
        assert!(error.token < lexed.tokens.len(), "a lexer error names token {}", error.token);
    }

    let parse = syntax::parse(text);
    let root = parse.syntax_node();
    assert_eq!(root.kind(), SyntaxKind::SOURCE_FILE);
    assert!(root.to_string() == text, "the tree's text is not the input");
    let deepest = syntax::tree_depth(&root);
    assert!(deepest <= syntax::MAX_TREE_DEPTH, "the tree is {deepest} nodes deep");
    let index = LineIndex::new(text);
    for error in parse.errors() {
        assert_inside(text, error.range, &error.message);
        let _ = index.line_col_1based(error.range.start());
    }
    let _ = parse.debug_dump();
}

/// Checking one file: no panic; every diagnostic's range, label and fix-it lies inside its file;
/// what the editor queries read (the expression at an offset, where its name is declared, the
/// names in scope) answers at any offset with ranges inside the file.
pub fn check(text: &str) {
    let mut db = Database::default();
    let file = db.set_file(MAIN, text);
    let diagnostics = hir::file_diagnostics(&db, file);
    assert_diagnostics_inside(&db, diagnostics);
    for def in hir::all_defs(&db, file) {
        let _ = hir::def_name(&db, def);
        let _ = hir::signature(&db, def);
        let _ = hir::body(&db, def);
        let _ = hir::infer(&db, def);
    }
    for offset in probes(text) {
        if let Some((def, expr)) = hir::expr_at(&db, file, offset) {
            let span = hir::HirSpan { def, span: hir::body(&db, def).source_map.expr(expr) };
            assert_inside(text, hir::file_range(&db, span).1, "an expression");
            let resolution = hir::infer(&db, def).resolution(expr);
            let declared = resolution.and_then(|r| hir::declaration(&db, def, r));
            if let Some(span) = declared {
                let (target, range) = hir::file_range(&db, span);
                assert_inside(target.text(&db), range, "a definition");
            }
        }
        let _ = hir::names_in_scope(&db, file, offset);
    }
}

/// Checking after an edit: the database that saw `old` first and then `new` gives exactly the
/// diagnostics of a database that only saw `new`, as an editor's incremental session must.
pub fn check_edit(old: &str, new: &str) {
    let mut db = Database::default();
    let file = db.set_file(MAIN, old);
    assert_diagnostics_inside(&db, hir::file_diagnostics(&db, file));
    for def in hir::all_defs(&db, file) {
        let _ = hir::infer(&db, def);
    }
    let file = db.set_file(MAIN, new);
    let edited = hir::file_diagnostics(&db, file);
    assert_diagnostics_inside(&db, edited);

    let mut fresh_db = Database::default();
    let fresh_file = fresh_db.set_file(MAIN, new);
    let fresh = hir::file_diagnostics(&fresh_db, fresh_file);
    let edited = render_diagnostics(&db, edited);
    let fresh = render_diagnostics(&fresh_db, fresh);
    assert!(
        edited == fresh,
        "after the edit the diagnostics are\n{edited}\nbut from scratch they are\n{fresh}"
    );
}

/// Formatting: a file that parses formats, and only syntax errors stop the formatter; the output
/// parses without errors, formats to itself, and differs from the input only in whitespace and
/// the documented normalisations (`Bool` to `bool`, trailing commas, trailing whitespace of line
/// comments, `\r` before line breaks in block comments).
pub fn format(text: &str) {
    let has_errors = !syntax::parse(text).errors().is_empty();
    let output = match fmt::format(text) {
        Ok(output) => output,
        Err(fmt::FormatError::Syntax(errors)) => {
            assert!(has_errors && !errors.is_empty(), "a syntax error the parser does not report");
            return;
        }
        Err(err @ fmt::FormatError::Internal(_)) => panic!("{err}"),
    };
    assert!(!has_errors, "a file with syntax errors was formatted");
    let errors = syntax::parse(&output).errors().to_vec();
    assert!(errors.is_empty(), "the output has syntax errors: {errors:?}\n{output}");
    let again = fmt::format(&output).map_err(|err| err.to_string());
    assert!(
        again.as_ref() == Ok(&output),
        "formatting is not idempotent: once\n{output}\ntwice\n{}",
        again.as_deref().unwrap_or_else(|err| err)
    );
    let (before, after) = (essence(text), essence(&output));
    if let Some(at) = first_difference(&before.tokens, &after.tokens) {
        let (was, is) = (before.tokens.get(at), after.tokens.get(at));
        panic!("formatting changed token {at}: {was:?} became {is:?}\n{output}");
    }
    if let Some(at) = first_difference(&before.comments, &after.comments) {
        let (was, is) = (before.comments.get(at), after.comments.get(at));
        panic!("formatting changed comment {at}: {was:?} became {is:?}\n{output}");
    }
}

fn first_difference<T: PartialEq>(a: &[T], b: &[T]) -> Option<usize> {
    (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i))
}

/// The largest tensor a fuzzed program may make, in bytes: enough for every operation, small
/// enough that none takes long.
const RUN_ALLOCATION_LIMIT: usize = 64 * 1024;

/// The most derivative constructs a fuzzed program may contain; each nesting level multiplies
/// the work.
const RUN_MAX_TRANSFORMS: usize = 4;

/// How many steps (loop iterations and calls) a fuzzed program may take: with tensors of at most
/// [`RUN_ALLOCATION_LIMIT`] bytes, a run takes well under the fuzzer's time limit.
const RUN_MAX_STEPS: u64 = 2_000;

/// Running a program without errors: no panic, no internal error of the interpreter, and every
/// span of a run-time error inside its file.
///
/// Programs run under a budget of [`RUN_MAX_STEPS`] steps, with tensors of at most
/// [`RUN_ALLOCATION_LIMIT`] bytes and a few derivative constructs at most; programs that touch
/// files (`load`, `load_csv`, `save`, `import`) are not run.
pub fn run(text: &str) {
    if !bounded_program(text) {
        return;
    }
    // Everything runs on the interpreter's thread with its large stack, as `nabla run` does.
    let finished = exec::run::on_interpreter_stack(|| run_here(text));
    assert!(finished.is_some(), "the interpreter thread failed");
}

fn run_here(text: &str) {
    let mut db = Database::default();
    let file = db.set_file(MAIN, text);
    let has_errors =
        hir::file_diagnostics(&db, file).iter().any(|d| d.severity == hir::Severity::Error);
    if has_errors {
        return;
    }
    tensor::set_allocation_limit(RUN_ALLOCATION_LIMIT);
    let limits = exec::interp::Limits { max_steps: RUN_MAX_STEPS, ..Default::default() };
    let Err(error) = exec::run::run_program(&db, file, &mut std::io::sink(), limits) else {
        return;
    };
    assert!(error.kind != exec::error::RuntimeErrorKind::Internal, "{}", error.message);
    let spans = error.span.iter().chain(error.stack.iter().map(|frame| &frame.span));
    for &span in spans {
        let (span_file, range) = hir::file_range(&db, span);
        assert_inside(span_file.text(&db), range, &error.message);
    }
}

/// Whether `text` may run (see [`run`]): no file access, a few derivative constructs at most.
fn bounded_program(text: &str) -> bool {
    let mut transforms = 0;
    let mut offset = 0usize;
    for token in syntax::lex(text).tokens {
        let token_text = text.get(offset..offset + token.len as usize).unwrap_or_default();
        offset += token.len as usize;
        match (token.kind, token_text) {
            (SyntaxKind::IMPORT_KW, _) => return false,
            (SyntaxKind::IDENT, "load" | "load_csv" | "save") => return false,
            (SyntaxKind::IDENT, "grad" | "jvp" | "vjp" | "hessian" | "jacobian" | "gradcheck") => {
                transforms += 1;
            }
            _ => {}
        }
    }
    transforms <= RUN_MAX_TRANSFORMS
}

/// Every range a diagnostic carries lies inside its file, on character boundaries, and the
/// edits of one fix-it do not overlap (so that an editor can apply them together).
fn assert_diagnostics_inside(db: &Database, diagnostics: &[Diagnostic]) {
    for d in diagnostics {
        assert_inside(d.file.text(db), d.range, &d.message);
        for label in &d.labels {
            assert_inside(label.file.text(db), label.range, &label.message);
        }
        for fix in &d.fixes {
            for edit in &fix.edits {
                assert_inside(edit.file.text(db), edit.range, &fix.label);
            }
            let mut edits: Vec<_> = fix.edits.iter().map(|e| (e.file, e.range)).collect();
            edits.sort_by_key(|(_, range)| (range.start(), range.end()));
            for pair in edits.windows(2) {
                let ((a_file, a), (b_file, b)) = (pair[0], pair[1]);
                assert!(
                    a_file != b_file || a.end() <= b.start() && (a != b || a.is_empty()),
                    "the edits of `{}` overlap: {a:?} and {b:?}",
                    fix.label
                );
            }
        }
    }
}

fn assert_inside(text: &str, range: TextRange, what: &str) {
    let (start, end) = (usize::from(range.start()), usize::from(range.end()));
    assert!(end <= text.len(), "{range:?} ({what}) ends past the end of the text ({})", text.len());
    assert!(
        text.is_char_boundary(start) && text.is_char_boundary(end),
        "{range:?} ({what}) splits a character"
    );
}

/// Diagnostics as comparable text: everything but the salsa ids of files, which differ between
/// databases.
fn render_diagnostics(db: &Database, diagnostics: &[Diagnostic]) -> String {
    let name = |file: SourceFile| file.path(db).display().to_string();
    let mut out = String::new();
    for d in diagnostics {
        let (code, range, message) = (d.code, d.range, &d.message);
        out.push_str(&format!("{code:?} {} {range:?} {message}\n", name(d.file)));
        for label in &d.labels {
            out.push_str(&format!(
                "  label {} {:?} {}\n",
                name(label.file),
                label.range,
                label.message
            ));
        }
        if let Some(help) = &d.help {
            out.push_str(&format!("  help {help}\n"));
        }
        for fix in &d.fixes {
            out.push_str(&format!("  fix {}\n", fix.label));
            for edit in &fix.edits {
                out.push_str(&format!(
                    "    {} {:?} {:?}\n",
                    name(edit.file),
                    edit.range,
                    edit.insert
                ));
            }
        }
    }
    out
}

/// Offsets spread over the text, on character boundaries, the ends included.
fn probes(text: &str) -> Vec<TextSize> {
    let len = text.len();
    let step = (len / PROBES).max(1);
    let mut offsets: Vec<usize> = (0..=len).step_by(step).collect();
    offsets.push(len);
    offsets.dedup();
    offsets
        .into_iter()
        .filter(|&offset| text.is_char_boundary(offset))
        .filter_map(|offset| TextSize::try_from(offset).ok())
        .collect()
}

/// The significant tokens and the comments of a text, normalised as the formatter may normalise
/// them: what formatting must keep. A comment may move past a token (one before an operator
/// moves after it when a chain breaks there), so the two are kept apart.
struct Essence {
    tokens: Vec<(SyntaxKind, String)>,
    comments: Vec<(SyntaxKind, String)>,
}

fn essence(text: &str) -> Essence {
    let mut tokens: Vec<(SyntaxKind, String)> = Vec::new();
    let mut comments = Vec::new();
    let mut offset = 0usize;
    for token in syntax::lex(text).tokens {
        let end = offset + token.len as usize;
        let token_text = text.get(offset..end).unwrap_or_default();
        offset = end;
        match token.kind {
            SyntaxKind::WHITESPACE => {}
            SyntaxKind::COMMENT if token_text.starts_with("//") => {
                comments.push((token.kind, token_text.trim_end().to_owned()));
            }
            SyntaxKind::COMMENT => {
                let lines: Vec<&str> = token_text.split('\n').collect();
                let last = lines.len() - 1;
                let lines = lines.iter().enumerate().map(|(i, line)| match i == last {
                    true => *line,
                    false => line.trim_end_matches('\r'),
                });
                comments.push((token.kind, lines.collect::<Vec<_>>().join("\n")));
            }
            SyntaxKind::CAPITAL_BOOL_KW => tokens.push((SyntaxKind::BOOL_KW, "bool".to_owned())),
            // A comma before a closing bracket (or the brace of a record literal) is a trailing
            // comma: the layout decides whether there is one.
            SyntaxKind::R_PAREN | SyntaxKind::R_BRACK | SyntaxKind::R_CURLY => {
                if tokens.last().is_some_and(|(kind, _)| *kind == SyntaxKind::COMMA) {
                    tokens.pop();
                }
                tokens.push((token.kind, token_text.to_owned()));
            }
            _ => tokens.push((token.kind, token_text.to_owned())),
        }
    }
    Essence { tokens, comments }
}
