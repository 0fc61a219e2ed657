//! Rename: every occurrence of a local, top-level name, function, shape variable or index label,
//! after checking that the new name is an identifier, not a keyword or a built-in, and that it
//! would not clash with, or be captured by, another name where it is used.

use std::fmt;

use hir::DefKind;
use syntax::{SyntaxKind, TextRange};

use crate::{
    FilePosition, SourceChange, TextEdit,
    references::occurrences_of,
    semantic::{self, Definition},
};

/// Why a rename is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenameError(pub String);

impl fmt::Display for RenameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn error<T>(message: impl Into<String>) -> Result<T, RenameError> {
    Err(RenameError(message.into()))
}

pub(crate) fn prepare_rename(
    db: &hir::Database,
    position: FilePosition,
) -> Result<TextRange, RenameError> {
    let Some(occurrence) = semantic::occurrence_at(db, position.file, position.offset) else {
        return error("there is no name to rename here");
    };
    if let Definition::Builtin(_) = occurrence.definition {
        return error("built-in functions cannot be renamed");
    }
    Ok(occurrence.range)
}

pub(crate) fn rename(
    db: &hir::Database,
    position: FilePosition,
    new_name: &str,
) -> Result<SourceChange, RenameError> {
    prepare_rename(db, position)?;
    let Some(occurrence) = semantic::occurrence_at(db, position.file, position.offset) else {
        return error("there is no name to rename here");
    };
    let definition = occurrence.definition;
    let old_name = semantic::definition_name(db, &definition);
    check_identifier(new_name)?;
    if new_name == old_name {
        return Ok(SourceChange::default());
    }
    let references = occurrences_of(db, &definition);
    match &definition {
        Definition::Label { def, stmt, .. } => {
            let taken = semantic::def_occurrences(db, *def).into_iter().any(|o| {
                matches!(&o.definition, Definition::Label { stmt: s, name, .. } if s == stmt && name == new_name)
            });
            if taken {
                return error(format!("the label `{new_name}` is already used in this statement"));
            }
        }
        _ => {
            if hir::Builtin::from_name(new_name).is_some() {
                return error(format!(
                    "`{new_name}` is a built-in function; the new name would hide it"
                ));
            }
            check_conflicts(db, &definition, &references, new_name)?;
        }
    }
    Ok(SourceChange::from_edits(
        references
            .into_iter()
            .map(|r| (r.file, TextEdit { range: r.range, insert: new_name.to_owned() })),
    ))
}

fn check_identifier(name: &str) -> Result<(), RenameError> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return error(format!("`{name}` is not an identifier"));
    }
    if SyntaxKind::from_keyword(name).is_some() {
        return error(format!("`{name}` is a keyword"));
    }
    Ok(())
}

/// Whether the new name is already visible where the definition is declared or used, or
/// declared beside it in the same scope.
fn check_conflicts(
    db: &hir::Database,
    definition: &Definition,
    references: &[crate::Reference],
    new_name: &str,
) -> Result<(), RenameError> {
    // A field and a record type do not live in the scope of names: only their siblings clash.
    match definition {
        Definition::Local { def, .. } if def.kind(db) == DefKind::Struct => {
            let body = hir::body(db, *def);
            if body.params.iter().any(|&field| body.locals[field].name == new_name) {
                return error(format!("the record already has a field `{new_name}`"));
            }
            return Ok(());
        }
        Definition::Record(def) => {
            let files = std::iter::once(def.file(db)).chain(references.iter().map(|r| r.file.0));
            for file in files {
                if hir::record_types(db, file).contains_key(new_name) {
                    return error(format!("the record type `{new_name}` already exists"));
                }
            }
            return Ok(());
        }
        _ => {}
    }
    for reference in references {
        let visible = hir::names_in_scope(db, reference.file.0, reference.range.start());
        if visible.iter().any(|(name, _)| name == new_name) {
            return error(format!("`{new_name}` is already defined where this name is used"));
        }
    }
    let (file, item_level) = match definition {
        Definition::Function(def) => (def.file(db), true),
        Definition::Local { def, local } => {
            let body = hir::body(db, *def);
            let target = &body.locals[*local];
            let clash = body.locals.iter().any(|(other, data)| {
                if data.name != new_name || data.scope_depth != target.scope_depth {
                    return false;
                }
                let span = body.source_map.local(other);
                let at = hir::ScopeEnd { chunk: span.chunk, offset: span.range.start() };
                let target_span = body.source_map.local(*local);
                let target_at =
                    hir::ScopeEnd { chunk: target_span.chunk, offset: target_span.range.start() };
                body.source_map.is_visible(*local, at)
                    || body.source_map.is_visible(other, target_at)
            });
            if clash {
                return error(format!("`{new_name}` is already declared in this scope"));
            }
            let global = def.kind(db) == DefKind::TopLevel && target.scope_depth == 0;
            (def.file(db), global)
        }
        Definition::Builtin(_) | Definition::Label { .. } | Definition::Record(_) => {
            return Ok(());
        }
    };
    if item_level {
        let files = std::iter::once(file).chain(references.iter().map(|r| r.file.0));
        for file in files {
            if hir::file_scope(db, file).get(new_name).is_some() {
                return error(format!("`{new_name}` is already defined at the top level"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    /// Applies the rename and prints every changed file, or the error.
    fn check(new_name: &str, text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let actual = match fixture.analysis.rename(fixture.position(), new_name) {
            Ok(Ok(change)) => {
                let mut out = String::new();
                for (file, edits) in change.edits {
                    let mut text = fixture.analysis.file_text(file).unwrap_or_default().to_string();
                    for edit in edits.iter().rev() {
                        text.replace_range(
                            std::ops::Range::<usize>::from(edit.range),
                            &edit.insert,
                        );
                    }
                    let path = fixture.analysis.file_path(file).unwrap_or_default();
                    out.push_str(&format!("//- {}\n{text}", path.display()));
                }
                out
            }
            Ok(Err(error)) => format!("error: {error}\n"),
            Err(_) => "cancelled\n".to_owned(),
        };
        expect.assert_eq(&actual);
    }

    #[test]
    fn local_variable() {
        check(
            "total",
            "function float f(float x) {\n    float y$0 = x * 2.0;\n    return y + y;\n}\n",
            expect![[r#"
                //- /fixture/main.nb
                function float f(float x) {
                    float total = x * 2.0;
                    return total + total;
                }
            "#]],
        );
    }

    #[test]
    fn function_across_files() {
        check(
            "sq",
            r#"
//- main.nb
import "lib.nb";
print(square$0(2.0));
//- lib.nb
function float square(float x) {
    return x * x;
}
"#,
            expect![[r#"
                //- /fixture/main.nb
                import "lib.nb";
                print(sq(2.0));
                //- /fixture/lib.nb
                function float sq(float x) {
                    return x * x;
                }
            "#]],
        );
    }

    #[test]
    fn shape_variable_everywhere_it_is_written() {
        check(
            "rows",
            "function Tensor[n][1] f(Tensor a[n$0][2]) {\n    Tensor b[n][1] = a @ ones([2, 1]);\n    return b * n;\n}\n",
            expect![[r#"
                //- /fixture/main.nb
                function Tensor[rows][1] f(Tensor a[rows][2]) {
                    Tensor b[rows][1] = a @ ones([2, 1]);
                    return b * rows;
                }
            "#]],
        );
    }

    #[test]
    fn index_label() {
        check(
            "p",
            "Tensor A[2][3];\nTensor B[3][4];\nTensor C[2][4];\nC(i,j) = A(i,k$0) * B(k,j);\n",
            expect![[r#"
                //- /fixture/main.nb
                Tensor A[2][3];
                Tensor B[3][4];
                Tensor C[2][4];
                C(i,j) = A(i,p) * B(p,j);
            "#]],
        );
    }

    #[test]
    fn rejects_a_keyword() {
        check(
            "loop",
            "int a$0 = 1;\n",
            expect![[r#"
            error: `loop` is a keyword
        "#]],
        );
    }

    #[test]
    fn rejects_a_non_identifier() {
        check(
            "2x",
            "int a$0 = 1;\n",
            expect![[r#"
            error: `2x` is not an identifier
        "#]],
        );
    }

    #[test]
    fn rejects_a_builtin_name() {
        check(
            "sum",
            "int a$0 = 1;\n",
            expect![[r#"
            error: `sum` is a built-in function; the new name would hide it
        "#]],
        );
    }

    #[test]
    fn rejects_a_builtin() {
        check(
            "total",
            "print(su$0m([1.0]));\n",
            expect![[r#"
            error: built-in functions cannot be renamed
        "#]],
        );
    }

    #[test]
    fn rejects_a_clash_in_the_same_scope() {
        check(
            "b",
            "function float f() {\n    float a$0 = 1.0;\n    float b = 2.0;\n    return a + b;\n}\n",
            expect![[r#"
                error: `b` is already defined where this name is used
            "#]],
        );
    }

    #[test]
    fn rejects_capturing_a_function() {
        check(
            "g",
            "function float g(float x) {\n    return x;\n}\nfunction float f(float x$0) {\n    return g(x);\n}\n",
            expect![[r#"
                error: `g` is already defined where this name is used
            "#]],
        );
    }

    #[test]
    fn shape_variable_in_size_expressions() {
        check(
            "len",
            "function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q$0]) {\n    Tensor y[n - q + 1];\n    return y;\n}\nTensor s[8];\n",
            expect![[r#"
                //- /fixture/main.nb
                function Tensor[n - len + 1] conv1d_valid(Tensor x[n], Tensor k[len]) {
                    Tensor y[n - len + 1];
                    return y;
                }
                Tensor s[8];
            "#]],
        );
    }

    #[test]
    fn field_everywhere_it_is_used() {
        check(
            "weight",
            "struct Linear {\n    Tensor w$0[n][m];\n    Tensor b[m];\n}\nfunction float f(Linear l) {\n    return sum(l.w);\n}\nLinear l = Linear { w: zeros([2, 3]), b: zeros([3]) };\nl.w[0, 0] = 1;\nprint(f(l));\n",
            expect![[r#"
                //- /fixture/main.nb
                struct Linear {
                    Tensor weight[n][m];
                    Tensor b[m];
                }
                function float f(Linear l) {
                    return sum(l.weight);
                }
                Linear l = Linear { weight: zeros([2, 3]), b: zeros([3]) };
                l.weight[0, 0] = 1;
                print(f(l));
            "#]],
        );
    }

    #[test]
    fn field_onto_a_sibling_is_refused() {
        check(
            "b",
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nLinear l = Linear { w: zeros([2, 3]), b: zeros([3]) };\nprint(l.w$0);\n",
            expect![[r#"
                error: the record already has a field `b`
            "#]],
        );
    }

    #[test]
    fn record_type() {
        check(
            "Dense",
            "struct Linear$0 {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nstruct Mlp {\n    Linear[i][h] l1;\n}\nfunction float f(Linear[n][m] l) {\n    return sum(l.w);\n}\nLinear l = Linear { w: zeros([2, 3]), b: zeros([3]) };\nprint(f(l));\n",
            expect![[r#"
                //- /fixture/main.nb
                struct Dense {
                    Tensor w[n][m];
                    Tensor b[m];
                }
                struct Mlp {
                    Dense[i][h] l1;
                }
                function float f(Dense[n][m] l) {
                    return sum(l.w);
                }
                Dense l = Dense { w: zeros([2, 3]), b: zeros([3]) };
                print(f(l));
            "#]],
        );
    }
}
