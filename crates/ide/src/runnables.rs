//! Runnables: the `test "name" { ... }` blocks of a file, for a "Run test" code lens.

use syntax::{AstNode, TextRange, ast};

use crate::FileId;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runnable {
    /// The test's header, `test "name"`.
    pub range: TextRange,
    /// The test's name, as `nabla test --filter` takes it.
    pub test_name: String,
}

pub(crate) fn runnables(db: &hir::Database, file: FileId) -> Vec<Runnable> {
    hir::item_tree(db, file.0)
        .tests
        .iter()
        .map(|test| {
            let node = syntax::SyntaxNode::new_root(test.node.clone());
            let header = ast::TestDef::cast(node).and_then(|def| {
                let start = def.test_token()?.text_range().start();
                let end = def.string_token().map_or(start, |s| s.text_range().end());
                Some(TextRange::new(start, end.max(start)))
            });
            let range = header.unwrap_or_else(|| TextRange::empty(0.into())) + test.offset;
            Runnable { range, test_name: test.name.clone() }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use crate::fixture;

    #[test]
    fn one_per_test() {
        let fixture = fixture::load(
            "function float f() {\n    return 1.0;\n}\ntest \"f is one\" {\n    assert(f() == 1.0);\n}\n  test \"another\" {}\n",
        );
        let source = fixture.analysis.file_text(fixture.file).unwrap_or_default();
        let runnables = fixture.analysis.runnables(fixture.file).unwrap_or_default();
        let out: Vec<String> =
            runnables.iter().map(|r| format!("{} -> {}", &source[r.range], r.test_name)).collect();
        expect![[r#"
            [
                "test \"f is one\" -> f is one",
                "test \"another\" -> another",
            ]
        "#]]
        .assert_debug_eq(&out);
    }
}
