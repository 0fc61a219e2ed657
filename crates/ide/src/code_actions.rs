//! Code actions: the checker's fix-its for the diagnostics that touch a range.

use crate::{FileRange, SourceChange};

/// A titled change, such as a fix-it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assist {
    pub label: String,
    /// The range of the diagnostic it fixes.
    pub target: FileRange,
    pub change: SourceChange,
}

pub(crate) fn code_actions(db: &hir::Database, range: FileRange) -> Vec<Assist> {
    crate::diagnostics::diagnostics(db, range.file)
        .into_iter()
        .filter(|d| d.range.intersect(range.range).is_some())
        .flat_map(|d| d.fixes)
        .collect()
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::{FileRange, fixture};

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let range = fixture.range.unwrap_or(syntax::TextRange::empty(fixture.offset));
        let assists = fixture
            .analysis
            .code_actions(FileRange { file: fixture.file, range })
            .unwrap_or_default();
        let mut out = String::new();
        for assist in assists {
            let mut source =
                fixture.analysis.file_text(fixture.file).unwrap_or_default().to_string();
            for (_, edits) in &assist.change.edits {
                for edit in edits.iter().rev() {
                    source.replace_range(std::ops::Range::<usize>::from(edit.range), &edit.insert);
                }
            }
            out.push_str(&format!("{}\n{source}", assist.label));
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn wrap_a_tensor_condition() {
        check(
            "Tensor t[3];\nif (t$0 > 0) {\n    print(1);\n}\n",
            expect![[r#"
                wrap the condition in `all(...)`
                Tensor t[3];
                if (all(t > 0)) {
                    print(1);
                }
                wrap the condition in `any(...)`
                Tensor t[3];
                if (any(t > 0)) {
                    print(1);
                }
            "#]],
        );
    }

    #[test]
    fn insert_a_missing_semicolon() {
        check(
            "int a = 1$0\nint b = 2;\n",
            expect![[r#"
            insert `;`
            int a = 1;
            int b = 2;
        "#]],
        );
    }

    #[test]
    fn write_a_similar_name() {
        check(
            "Tensor x[2] = [1.0, 2.0];\nprint(sigm$0od(x));\n",
            expect![[r#"
                write `sigmoid`
                Tensor x[2] = [1.0, 2.0];
                print(sigmoid(x));
            "#]],
        );
    }

    #[test]
    fn rewrite_a_habit_from_another_language() {
        check(
            "int i = 0;\nwh$0ile (i < 3) {\n    i++;\n}\n",
            expect![[r#"
                write `loop (; condition; )`
                int i = 0;
                loop (; i < 3; ) {
                    i++;
                }
            "#]],
        );
        check(
            "float y = 2.0 *$0* 3;\n",
            expect![[r#"
                write `pow(2.0, 3)`
                float y = pow(2.0, 3);
            "#]],
        );
    }

    #[test]
    fn fix_or_silence_a_warning() {
        check(
            "Tensor v[3] = [-1.0, 2.0, 3.0];\nif (true) {\n    print(max(v, $00));\n}\n",
            expect![[r#"
                compare element-wise with `0.0`
                Tensor v[3] = [-1.0, 2.0, 3.0];
                if (true) {
                    print(max(v, 0.0));
                }
                reduce along axis 0: `/*axis=*/ 0`
                Tensor v[3] = [-1.0, 2.0, 3.0];
                if (true) {
                    print(max(v, /*axis=*/ 0));
                }
                allow W0002 here
                Tensor v[3] = [-1.0, 2.0, 3.0];
                if (true) {
                    // allow(W0002)
                    print(max(v, 0));
                }
            "#]],
        );
    }

    #[test]
    fn none_away_from_diagnostics() {
        check("int a$0 = 1;\nprint(a);\n", expect![[r#""#]]);
    }
}
