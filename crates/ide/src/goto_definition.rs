//! Go to definition: a local's or top-level variable's declaration, a function's name (across
//! imports), the first occurrence of an index label in its statement, or the file an `import`
//! names.

use syntax::{AstNode, SyntaxKind, TextRange, TextSize, ast};

use crate::{
    FileId, FilePosition,
    semantic::{self, Definition},
};

/// A place to go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NavigationTarget {
    pub file: FileId,
    /// The whole item or declaration.
    pub full_range: TextRange,
    /// The name in it, where the cursor goes.
    pub focus_range: TextRange,
    pub name: String,
    /// What it is, such as `function` or `parameter`, for symbol lists.
    pub kind: crate::SymbolKind,
    /// Where it is declared, such as the enclosing function, for symbol lists.
    pub container: Option<String>,
}

pub(crate) fn goto_definition(db: &hir::Database, position: FilePosition) -> Vec<NavigationTarget> {
    if !crate::in_file(db, position.file, position.offset) {
        return Vec::new();
    }
    if let Some(target) = import_target(db, position) {
        return vec![target];
    }
    let Some(occurrence) = semantic::occurrence_at(db, position.file, position.offset) else {
        return Vec::new();
    };
    definition_target(db, &occurrence.definition).into_iter().collect()
}

/// Where a definition is declared.
pub(crate) fn definition_target(
    db: &dyn hir::Db,
    definition: &Definition,
) -> Option<NavigationTarget> {
    let name = semantic::definition_name(db, definition);
    match definition {
        Definition::Local { def, local } => {
            let span = hir::body(db, *def).source_map.local(*local);
            let range = semantic::file_range(db, *def, span);
            let is_struct = def.kind(db) == hir::DefKind::Struct;
            let kind = match hir::body(db, *def).locals[*local].kind {
                hir::LocalKind::Param if is_struct => crate::SymbolKind::Field,
                hir::LocalKind::Param => crate::SymbolKind::Parameter,
                hir::LocalKind::ShapeVar => crate::SymbolKind::ShapeVariable,
                hir::LocalKind::Variable => crate::SymbolKind::Variable,
            };
            Some(NavigationTarget {
                file: FileId(def.file(db)),
                full_range: range,
                focus_range: range,
                name,
                kind,
                container: None,
            })
        }
        Definition::Function(def) | Definition::Record(def) => {
            let span = hir::signature(db, *def).name_span?;
            let focus_range = semantic::file_range(db, *def, span);
            let full_range = semantic::def_chunks(db, *def)
                .first()
                .map(|(node, offset)| node.text_range() + *offset)
                .unwrap_or(focus_range);
            Some(NavigationTarget {
                file: FileId(def.file(db)),
                full_range,
                focus_range,
                name,
                kind: match definition {
                    Definition::Record(_) => crate::SymbolKind::Struct,
                    _ => crate::SymbolKind::Function,
                },
                container: None,
            })
        }
        Definition::Builtin(_) => None,
        Definition::Label { def, stmt, name } => {
            let body = hir::body(db, *def);
            let hir::Stmt::Index(index) = &body.stmts[*stmt] else { return None };
            let first = std::iter::once(&index.target)
                .chain(index.factors.iter().filter_map(|factor| match factor {
                    hir::IndexFactor::Tensor(operand) => Some(operand),
                    hir::IndexFactor::Scalar(_) => None,
                }))
                .flat_map(|operand| operand.labels.iter())
                .find(|label| label.name == *name)?;
            let range = semantic::file_range(db, *def, first.span);
            Some(NavigationTarget {
                file: FileId(def.file(db)),
                full_range: range,
                focus_range: range,
                name: name.to_string(),
                kind: crate::SymbolKind::IndexLabel,
                container: None,
            })
        }
    }
}

/// On the string of an `import`, the imported file.
fn import_target(db: &hir::Database, position: FilePosition) -> Option<NavigationTarget> {
    let root = hir::parse(db, position.file.0).syntax_node();
    let token = semantic::token_at(&root, position.offset)?;
    if token.kind() != SyntaxKind::STRING {
        return None;
    }
    let import = token.parent().and_then(ast::Import::cast)?;
    let index = hir::item_tree(db, position.file.0)
        .imports
        .iter()
        .position(|item| item.range == import.syntax().text_range())?;
    let target = hir::resolve_import(db, position.file.0, index as u32)?;
    let empty = TextRange::empty(TextSize::from(0));
    let name = target.path(db).file_name().map(|n| n.to_string_lossy().into_owned());
    Some(NavigationTarget {
        file: FileId(target),
        full_range: empty,
        focus_range: empty,
        name: name.unwrap_or_default(),
        kind: crate::SymbolKind::File,
        container: None,
    })
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let targets = fixture.analysis.goto_definition(fixture.position()).unwrap_or_default();
        let mut out = String::new();
        for target in targets {
            let path = fixture.analysis.file_path(target.file).unwrap_or_default();
            let text = fixture.analysis.file_text(target.file).unwrap_or_default();
            out.push_str(&format!(
                "{} {:?} `{}`\n",
                path.display(),
                target.focus_range,
                &text[target.focus_range]
            ));
        }
        if out.is_empty() {
            out.push_str("no definition\n");
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn local_variable() {
        check(
            "function float f(float x) {\n    float y = x * 2.0;\n    return y$0;\n}\n",
            expect![[r#"
                /fixture/main.nb 38..39 `y`
            "#]],
        );
    }

    #[test]
    fn derivative_rule_of_a_function() {
        check(
            "function float f(float x) derivative f_r$0ule {\n    return x * x;\n}\nfunction float f_rule(float x, float _y, float g) {\n    return 2.0 * x * g;\n}\n",
            expect![[r#"
                /fixture/main.nb 81..87 `f_rule`
            "#]],
        );
    }

    #[test]
    fn function_across_an_import() {
        check(
            r#"
//- main.nb
import "lib.nb";
print(sq$0uare(2.0));
//- lib.nb
function float square(float x) {
    return x * x;
}
"#,
            expect![[r#"
                /fixture/lib.nb 15..21 `square`
            "#]],
        );
    }

    #[test]
    fn the_import_string_opens_the_file() {
        check(
            r#"
//- main.nb
import "li$0b.nb";
//- lib.nb
cns int N = 3;
"#,
            expect![[r#"
                /fixture/lib.nb 0..0 ``
            "#]],
        );
    }

    #[test]
    fn shape_variable_in_the_body() {
        check(
            "function float f(Tensor a[n][2]) {\n    Tensor b[n$0][2] = a;\n    return 0.0;\n}\n",
            expect![[r#"
                /fixture/main.nb 26..27 `n`
            "#]],
        );
    }

    #[test]
    fn index_label() {
        check(
            "Tensor A[2][3];\nTensor B[3][4];\nTensor C[2][4];\nC(i,j) = A(i,k) * B(k$0,j);\n",
            expect![[r#"
                /fixture/main.nb 61..62 `k`
            "#]],
        );
    }

    #[test]
    fn builtins_have_none() {
        check(
            "print(su$0m([1.0]));\n",
            expect![[r#"
            no definition
        "#]],
        );
    }

    #[test]
    fn shape_variable_in_a_size_expression() {
        check(
            "function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q]) {\n    Tensor y[n - q$0 + 1];\n    return y;\n}\n",
            expect![[r#"
                /fixture/main.nb 62..63 `q`
            "#]],
        );
    }

    #[test]
    fn field_of_a_record() {
        check(
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nLinear l = Linear { w: zeros([2, 3]), b: zeros([3]) };\nprint(l.b$0);\n",
            expect![[r#"
                /fixture/main.nb 47..48 `b`
            "#]],
        );
    }

    #[test]
    fn field_in_a_record_literal() {
        check(
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nLinear l = Linear { w$0: zeros([2, 3]), b: zeros([3]) };\nprint(l);\n",
            expect![[r#"
                /fixture/main.nb 27..28 `w`
            "#]],
        );
    }

    #[test]
    fn record_type_in_a_parameter() {
        check(
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nfunction float f(Lin$0ear l) {\n    return sum(l.w);\n}\n",
            expect![[r#"
                /fixture/main.nb 7..13 `Linear`
            "#]],
        );
    }
}
