//! Incrementality: after an edit inside one function's body, salsa re-runs the lowering and
//! inference of that function only. The event log of executed queries is snapshotted.

use expect_test::expect;
use hir::Database;

const PROGRAM: &str = "\
cns int N = 3;
function float first(float x) {
    return x + 1.0;
}
function float second(float x) {
    return x * 2.0;
}
function float third(Tensor t[n]) {
    return sum(t) + first(1.0) + second(2.0);
}
test \"third\" {
    assert(third([1, 2, 3]) > 0);
}
Tensor v[N] = [1, 2, 3];
print(third(v));
";

#[test]
fn editing_one_function_reinfers_only_that_function() {
    let mut db = Database::with_event_log();
    let file = db.set_file("/work/main.nb", PROGRAM);
    assert!(hir::file_diagnostics(&db, file).is_empty());
    db.take_executed();

    // An edit that shifts the text of everything after it, and changes `second`'s body.
    let edited = PROGRAM.replace("return x * 2.0;", "float y = x * 2.0;\n    return y + 0.5;");
    db.set_file("/work/main.nb", edited);
    assert!(hir::file_diagnostics(&db, file).is_empty());
    let executed = db.take_executed();
    expect![[r#"
        [
            "file_diagnostics(main.nb)",
            "item_tree(main.nb)",
            "item_diagnostics(main.nb)",
            "def_source(<top level>)",
            "const_ints(main.nb)",
            "defs_query(main.nb)",
            "file_exports(main.nb)",
            "file_scope(main.nb)",
            "def_source(third)",
            "def_source(first)",
            "def_source(second)",
            "body_query(second)",
            "infer(second)",
            "differentiated_functions(main.nb)",
            "signature_query(second)",
            "def_source(test \"third\")",
            "def_lints(second)",
        ]
    "#]]
    .assert_debug_eq(&executed);
    let inferred: Vec<&String> = executed.iter().filter(|q| q.starts_with("infer(")).collect();
    assert_eq!(inferred, ["infer(second)"]);
}

#[test]
fn editing_whitespace_reinfers_nothing() {
    let mut db = Database::with_event_log();
    let file = db.set_file("/work/main.nb", PROGRAM);
    let _ = hir::file_diagnostics(&db, file);
    db.take_executed();
    db.set_file("/work/main.nb", format!("\n\n{PROGRAM}"));
    let _ = hir::file_diagnostics(&db, file);
    let executed = db.take_executed();
    assert!(
        !executed.iter().any(|q| q.starts_with("infer(") || q.starts_with("body_query(")),
        "{executed:#?}"
    );
}

#[test]
fn expressions_at_offsets_have_types_and_resolutions() {
    let mut db = Database::default();
    let text = "var Tensor w[2][3];\nfunction float f(float x) { return x; }\nprint(w, f(1.0));\n";
    let file = db.set_file("/work/editor.nb", text);
    let at = |needle: &str| syntax::TextSize::from(text.rfind(needle).unwrap_or(0) as u32);
    let declared = |def, resolution: Option<hir::Resolution>| {
        let span = hir::declaration(&db, def, resolution?)?;
        Some(hir::file_range(&db, span).1)
    };

    let (def, w) = hir::expr_at(&db, file, at("w,")).expect("an expression at `w`");
    let result = hir::infer(&db, def);
    assert_eq!(result.type_of_expr(w).to_string(), "Tensor[2][3]");
    assert_eq!(
        declared(def, result.resolution(w)),
        Some(syntax::TextRange::new(11.into(), 12.into()))
    );
    let (def, f) = hir::expr_at(&db, file, at("f(1")).expect("an expression at `f`");
    let start = declared(def, hir::infer(&db, def).resolution(f)).map(|range| range.start());
    assert_eq!(start, Some(syntax::TextSize::from(text.find("f(float").unwrap_or(0) as u32)));
}

#[test]
fn names_in_scope_follow_blocks_and_shadowing() {
    let mut db = Database::default();
    let text = "cns int N = 2;\nint top = 1;\nfunction float f(float x) {\n    float y = x;\n    {\n        int y = 2;\n        print(y);\n    }\n    return y;\n}\n";
    let file = db.set_file("/work/scope.nb", text);
    let names = |offset: usize| -> Vec<String> {
        hir::names_in_scope(&db, file, syntax::TextSize::from(offset as u32))
            .into_iter()
            .filter(|(_, kind)| !matches!(kind, hir::ScopeName::Builtin(_)))
            .map(|(name, _)| name)
            .collect()
    };
    let inner = text.find("print(y)").unwrap_or(0);
    assert_eq!(names(inner), ["y", "x", "N", "f"]);
    let outer = text.find("return y").unwrap_or(0);
    assert_eq!(names(outer), ["y", "x", "N", "f"]);
    let top = text.len();
    assert_eq!(names(top), ["top", "N", "f"]);
}
