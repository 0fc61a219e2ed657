//! Document symbols (a file's imports, functions, tests, record types with their fields and
//! top-level variables, in order) and workspace symbols (the same for every file, filtered by
//! a query).

use hir::DefKind;
use syntax::{AstNode, TextRange, ast};

use crate::{FileId, NavigationTarget, semantic};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SymbolKind {
    File,
    Import,
    Function,
    Test,
    Variable,
    Constant,
    Parameter,
    ShapeVariable,
    IndexLabel,
    /// A record type (`struct`).
    Struct,
    Field,
}

/// One entry of a file's outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructureNode {
    pub name: String,
    pub kind: SymbolKind,
    /// A signature or a type.
    pub detail: Option<String>,
    pub full_range: TextRange,
    pub focus_range: TextRange,
}

pub(crate) fn document_symbols(db: &hir::Database, file: FileId) -> Vec<StructureNode> {
    let tree = hir::item_tree(db, file.0);
    let mut out = Vec::new();
    for import in &tree.imports {
        out.push(StructureNode {
            name: import.path.clone().unwrap_or_default(),
            kind: SymbolKind::Import,
            detail: None,
            full_range: import.range,
            focus_range: import.path_range.unwrap_or(import.range),
        });
    }
    for def in hir::all_defs(db, file.0) {
        let index = def.index(db) as usize;
        match def.kind(db) {
            DefKind::Function => {
                let Some(function) = tree.functions.get(index) else { continue };
                let full_range = TextRange::at(function.offset, function.node.text_len());
                out.push(StructureNode {
                    name: function.name.to_string(),
                    kind: SymbolKind::Function,
                    detail: Some(semantic::function_header(db, def)),
                    full_range,
                    focus_range: function.name_range.unwrap_or(full_range),
                });
            }
            DefKind::Test => {
                let Some(test) = tree.tests.get(index) else { continue };
                let full_range = TextRange::at(test.offset, test.node.text_len());
                let node = syntax::SyntaxNode::new_root(test.node.clone());
                let focus_range = ast::TestDef::cast(node)
                    .and_then(|t| t.string_token())
                    .map(|s| s.text_range() + test.offset)
                    .unwrap_or(full_range);
                out.push(StructureNode {
                    name: test.name.clone(),
                    kind: SymbolKind::Test,
                    detail: None,
                    full_range,
                    focus_range,
                });
            }
            DefKind::Struct => {
                let Some(record) = tree.structs.get(index) else { continue };
                let full_range = TextRange::at(record.offset, record.node.text_len());
                let generic = hir::generic_record(db, def);
                out.push(StructureNode {
                    name: record.name.to_string(),
                    kind: SymbolKind::Struct,
                    detail: Some(format!("struct {}", hir::Ty::Record(generic.clone().into()))),
                    full_range,
                    focus_range: record.name_range.unwrap_or(full_range),
                });
                let body = hir::body(db, def);
                for field in hir::record_fields(db, &generic) {
                    let focus_range =
                        semantic::file_range(db, def, body.source_map.local(field.local));
                    out.push(StructureNode {
                        name: field.name.to_string(),
                        kind: SymbolKind::Field,
                        detail: Some(field.ty.to_string()),
                        full_range: focus_range,
                        focus_range,
                    });
                }
            }
            DefKind::TopLevel => {
                let body = hir::body(db, def);
                for (local, data) in body.locals.iter() {
                    if data.scope_depth != 0 || data.name.is_empty() {
                        continue;
                    }
                    let focus_range = semantic::file_range(db, def, body.source_map.local(local));
                    let full_range = tree
                        .top_level
                        .iter()
                        .map(|s| TextRange::at(s.offset, s.node.text_len()))
                        .find(|r| r.contains_range(focus_range))
                        .unwrap_or(focus_range);
                    let is_cns = data.qualifier == Some(hir::Qualifier::Cns);
                    out.push(StructureNode {
                        name: data.name.to_string(),
                        kind: if is_cns { SymbolKind::Constant } else { SymbolKind::Variable },
                        detail: Some(semantic::local_type_text(db, def, local)),
                        full_range,
                        focus_range,
                    });
                }
            }
        }
    }
    out.sort_by_key(|node| (node.full_range.start(), node.focus_range.start()));
    out
}

pub(crate) fn workspace_symbols(db: &hir::Database, query: &str) -> Vec<NavigationTarget> {
    let query = query.to_lowercase();
    let mut out = Vec::new();
    for file in db.files() {
        let container = file.path(db).file_name().map(|n| n.to_string_lossy().into_owned());
        for node in document_symbols(db, FileId(file)) {
            if node.kind == SymbolKind::Import || !fuzzy_match(&node.name.to_lowercase(), &query) {
                continue;
            }
            out.push(NavigationTarget {
                file: FileId(file),
                full_range: node.full_range,
                focus_range: node.focus_range,
                name: node.name,
                kind: node.kind,
                container: container.clone(),
            });
        }
    }
    out
}

/// Whether the query's characters appear in the name in order.
fn fuzzy_match(name: &str, query: &str) -> bool {
    let mut chars = name.chars();
    query.chars().all(|q| chars.any(|c| c == q))
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let symbols = fixture.analysis.document_symbols(fixture.file).unwrap_or_default();
        let source = fixture.analysis.file_text(fixture.file).unwrap_or_default();
        let mut out = String::new();
        for symbol in symbols {
            let line = format!(
                "{:?} {} `{}` {}",
                symbol.kind,
                symbol.name,
                &source[symbol.focus_range],
                symbol.detail.unwrap_or_default()
            );
            out.push_str(line.trim_end());
            out.push('\n');
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn outline_of_a_file() {
        check(
            r#"
//- main.nb
import "lib.nb";
cns int N = 3;
var Tensor w[N][1] = zeros([N, 1]);
function float loss(Tensor p[n][1]) {
    return sum(p);
}
test "loss is zero" {
    assert(loss(zeros([2, 1])) == 0.0);
}
print(loss(w));
//- lib.nb
"#,
            expect![[r#"
                Import lib.nb `"lib.nb"`
                Constant N `N` cns int
                Variable w `w` var Tensor[3][1]
                Function loss `loss` function float loss(Tensor p[n][1])
                Test loss is zero `"loss is zero"`
            "#]],
        );
    }

    #[test]
    fn workspace_symbols_match_fuzzily() {
        let fixture = fixture::load(
            "//- main.nb\nfunction float mean_square(float x) {\n    return x;\n}\n//- lib.nb\nfunction float mse(float y) {\n    return y;\n}\nint other = 1;\n",
        );
        let found = fixture.analysis.workspace_symbols("mse").unwrap_or_default();
        let names: Vec<String> =
            found.iter().map(|t| format!("{} in {:?}", t.name, t.container)).collect();
        expect![[r#"
            [
                "mse in Some(\"lib.nb\")",
                "mean_square in Some(\"main.nb\")",
            ]
        "#]]
        .assert_debug_eq(&names);
    }

    #[test]
    fn record_types_and_their_fields() {
        check(
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nstruct Mlp {\n    Linear[i][h] l1;\n    Linear[h][o] l2;\n}\nMlp net = Mlp {\n    l1: Linear { w: zeros([2, 3]), b: zeros([3]) },\n    l2: Linear { w: zeros([3, 1]), b: zeros([1]) },\n};\nprint(net);\n",
            expect![[r#"
                Struct Linear `Linear` struct Linear[n][m]
                Field w `w` Tensor[n][m]
                Field b `b` Tensor[m]
                Struct Mlp `Mlp` struct Mlp[i][h][o]
                Field l1 `l1` Linear[i][h]
                Field l2 `l2` Linear[h][o]
                Variable net `net` Mlp[2][3][1]
            "#]],
        );
    }
}
