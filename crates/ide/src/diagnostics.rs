//! The checker's diagnostics of a file, with their labels as related information and their
//! fix-its as [`Assist`]s.

use syntax::TextRange;

use crate::{Assist, FileId, FileRange, SourceChange, TextEdit};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    Error,
    Warning,
}

/// A diagnostic of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The stable code, such as `E0100`.
    pub code: &'static str,
    pub severity: Severity,
    pub message: String,
    pub range: TextRange,
    /// Labels on related code: the declaration a write conflicts with, the other operand.
    pub related: Vec<RelatedInfo>,
    pub help: Option<String>,
    pub fixes: Vec<Assist>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelatedInfo {
    pub location: FileRange,
    pub message: String,
}

pub(crate) fn diagnostics(db: &hir::Database, file: FileId) -> Vec<Diagnostic> {
    let text = file.0.text(db);
    hir::file_diagnostics(db, file.0)
        .iter()
        .filter(|d| d.file == file.0)
        .map(|d| convert(d, file, text))
        .collect()
}

/// A diagnostic with its fix-its as assists; a warning also gets the assist that silences it
/// with `// allow(CODE)` on the line above (`docs/errors.md`, "Silencing a warning").
fn convert(d: &hir::Diagnostic, file: FileId, text: &str) -> Diagnostic {
    let severity = match d.severity {
        hir::Severity::Error => Severity::Error,
        hir::Severity::Warning => Severity::Warning,
    };
    Diagnostic {
        code: d.code.as_str(),
        severity,
        message: d.message.clone(),
        range: d.range,
        related: d
            .labels
            .iter()
            .map(|label| RelatedInfo {
                location: FileRange { file: FileId(label.file), range: label.range },
                message: label.message.clone(),
            })
            .collect(),
        help: d.help.clone(),
        fixes: d
            .fixes
            .iter()
            .map(|fix| Assist {
                label: fix.label.clone(),
                target: FileRange { file, range: d.range },
                change: SourceChange::from_edits(fix.edits.iter().map(|edit| {
                    (FileId(edit.file), TextEdit { range: edit.range, insert: edit.insert.clone() })
                })),
            })
            .chain(silence(d, file, text))
            .collect(),
    }
}

fn silence(d: &hir::Diagnostic, file: FileId, text: &str) -> Option<Assist> {
    if d.severity != hir::Severity::Warning {
        return None;
    }
    let (at, insert) = hir::allow_comment_edit(text, d.range.start(), d.code);
    Some(Assist {
        label: format!("allow {} here", d.code),
        target: FileRange { file, range: d.range },
        change: SourceChange::from_edits([(
            file,
            TextEdit { range: TextRange::empty(at), insert },
        )]),
    })
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let diagnostics = fixture.analysis.diagnostics(fixture.file).unwrap_or_default();
        let source = fixture.analysis.file_text(fixture.file).unwrap_or_default();
        let ranges: Vec<_> = diagnostics
            .iter()
            .map(|d| {
                let mut label = format!("{} {:?}: {}", d.code, d.severity, d.message);
                if let Some(help) = &d.help {
                    label.push_str(&format!(" (help: {help})"));
                }
                for fix in &d.fixes {
                    label.push_str(&format!(" [fix: {}]", fix.label));
                }
                (d.range, label)
            })
            .collect();
        expect.assert_eq(&fixture::annotate(&source, &ranges));
    }

    #[test]
    fn unresolved_name() {
        check(
            r#"
var Tensor w[2][3] = zeros([2, 3]);
float y = sum(w) + undefined_name;
"#,
            expect![[r#"

                var Tensor w[2][3] = zeros([2, 3]);
                float y = sum(w) + undefined_name;
                      ^ W0006 Warning: the variable `y` is never read (help: remove it, or name it `_y` if it is meant to be unused) [fix: allow W0006 here]
                                   ^^^^^^^^^^^^^^ E0100 Error: cannot find `undefined_name` in this scope
            "#]],
        );
    }

    #[test]
    fn missing_semicolon_has_a_fix() {
        check(
            "int a = 1\nint b = 2;\n",
            expect![[r#"
                int a = 1
                         ^ E0002 Error: expected `;` [fix: insert `;`]
                int b = 2;
            "#]],
        );
    }

    #[test]
    fn clean_file_has_none() {
        check(
            "int a = 1;\nprint(a);\n",
            expect![[r#"
            int a = 1;
            print(a);
        "#]],
        );
    }
}
