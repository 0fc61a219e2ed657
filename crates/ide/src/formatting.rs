//! Formatting through `fmt`: the whole file's canonical layout, as one edit covering only the
//! part that changes, so the editor keeps the cursor and folds outside it.

use syntax::Indel;

use crate::{FileId, TextEdit};

pub(crate) fn format(db: &hir::Database, file: FileId) -> Result<Vec<TextEdit>, String> {
    let text = file.0.text(db);
    let formatted = fmt::format(text).map_err(|error| error.to_string())?;
    Ok(minimal_edit(text, &formatted).into_iter().collect())
}

/// One edit that turns `old` into `new`, spanning from the first to the last difference.
pub(crate) fn minimal_edit(old: &str, new: &str) -> Option<TextEdit> {
    if old == new {
        return None;
    }
    let edit = Indel::between(old, new);
    Some(TextEdit { range: edit.delete, insert: edit.insert })
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let actual = match fixture.analysis.format(fixture.file) {
            Ok(Ok(edits)) => {
                let mut source =
                    fixture.analysis.file_text(fixture.file).unwrap_or_default().to_string();
                let mut out = String::new();
                for edit in edits.iter().rev() {
                    out.push_str(&format!("edit {:?}\n", edit.range));
                    source.replace_range(std::ops::Range::<usize>::from(edit.range), &edit.insert);
                }
                out.push_str(&source);
                out
            }
            Ok(Err(error)) => format!("error: {error}\n"),
            Err(_) => "cancelled\n".to_owned(),
        };
        expect.assert_eq(&actual);
    }

    #[test]
    fn formats_with_one_small_edit() {
        check(
            "int a = 1;\nfunction float f(float x){return x*2.0;}\nprint(a);\n",
            expect![[r#"
                edit 36..50
                int a = 1;
                function float f(float x) {
                    return x * 2.0;
                }
                print(a);
            "#]],
        );
    }

    #[test]
    fn formatted_file_needs_no_edit() {
        check(
            "int a = 1;\n",
            expect![[r#"
            int a = 1;
        "#]],
        );
    }

    #[test]
    fn syntax_errors_are_reported() {
        check(
            "int a = ;\n",
            expect![[r#"
            error: the file has 1 syntax error(s); the first: expected an initializer
        "#]],
        );
    }

    #[test]
    fn minimal_edit_respects_characters() {
        let edit = super::minimal_edit("é = 1;", "è = 1;");
        expect![[r#"
            Some(
                TextEdit {
                    range: 0..2,
                    insert: "è",
                },
            )
        "#]]
        .assert_debug_eq(&edit);
    }
}
