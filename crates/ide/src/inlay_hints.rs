//! Inlay hints: the inferred shape after the name of a tensor declared without dimensions
//! (`Tensor p = a @ b;` shows `p[2][4]`), and the shape variables a call binds (`matmul2(a, b)`
//! shows `n = 2, k = 3, m = 4`).

use hir::{DefKind, Stmt, Ty, TypeRef};
use syntax::{TextRange, TextSize};

use crate::{FileId, semantic};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlayHint {
    /// Where the hint goes: just after this offset.
    pub offset: TextSize,
    pub label: String,
    pub kind: InlayKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InlayKind {
    /// The inferred shape of a declaration.
    Shape,
    /// Shape variables bound at a call.
    ShapeBinding,
}

pub(crate) fn inlay_hints(
    db: &hir::Database,
    file: FileId,
    range: Option<TextRange>,
) -> Vec<InlayHint> {
    let tree = hir::item_tree(db, file.0);
    let mut hints = Vec::new();
    for def in hir::all_defs(db, file.0) {
        // Skip functions and tests that lie wholly outside the range without computing them.
        if let Some(range) = range {
            let index = def.index(db) as usize;
            let extent = match def.kind(db) {
                DefKind::Function => {
                    tree.functions.get(index).map(|f| (f.offset, f.node.text_len()))
                }
                DefKind::Test => tree.tests.get(index).map(|t| (t.offset, t.node.text_len())),
                DefKind::Struct => tree.structs.get(index).map(|s| (s.offset, s.node.text_len())),
                DefKind::TopLevel => None,
            };
            if let Some((start, len)) = extent
                && TextRange::at(start, len).intersect(range).is_none()
            {
                continue;
            }
        }
        def_hints(db, def, &mut hints);
    }
    if let Some(range) = range {
        hints.retain(|hint| range.contains_inclusive(hint.offset));
    }
    hints.sort_by_key(|hint| hint.offset);
    hints
}

fn def_hints(db: &dyn hir::Db, def: hir::DefId, hints: &mut Vec<InlayHint>) {
    let body = hir::body(db, def);
    let result = hir::infer(db, def);
    let declared = body.stmts.iter().flat_map(|(_, stmt)| match stmt {
        Stmt::Decl { local, init: Some(_) } => std::slice::from_ref(local),
        Stmt::TupleDecl { locals, .. } => locals.as_slice(),
        _ => &[],
    });
    for local in declared {
        let data = &body.locals[*local];
        if !matches!(&data.ty, TypeRef::Tensor(dims) if dims.is_empty()) {
            continue;
        }
        let Ty::Tensor(shape) = result.type_of_local(*local) else { continue };
        let range = semantic::file_range(db, def, body.source_map.local(*local));
        hints.push(InlayHint {
            offset: range.end(),
            label: shape.to_string(),
            kind: InlayKind::Shape,
        });
    }
    for (call, bindings) in &result.shape_bindings {
        let Some(label) = semantic::bindings_text(bindings) else { continue };
        let range = semantic::file_range(db, def, body.source_map.expr(*call));
        hints.push(InlayHint { offset: range.end(), label, kind: InlayKind::ShapeBinding });
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let hints = fixture.analysis.inlay_hints(fixture.file, fixture.range).unwrap_or_default();
        let mut source = fixture.analysis.file_text(fixture.file).unwrap_or_default().to_string();
        for hint in hints.iter().rev() {
            let label = match hint.kind {
                crate::InlayKind::Shape => format!("«{}»", hint.label),
                crate::InlayKind::ShapeBinding => format!(" «{}»", hint.label),
            };
            source.insert_str(usize::from(hint.offset), &label);
        }
        expect.assert_eq(&source);
    }

    #[test]
    fn shapes_of_declarations_without_dimensions() {
        check(
            "Tensor a[2][3];\nTensor b[3][4];\nTensor p = a @ b;\nvar Tensor q = sum(p, 0);\nTensor s;\nTensor given[2][4] = p;\n",
            expect![[r#"
                Tensor a[2][3];
                Tensor b[3][4];
                Tensor p«[2][4]» = a @ b;
                var Tensor q«[4]» = sum(p, 0);
                Tensor s;
                Tensor given[2][4] = p;
            "#]],
        );
    }

    #[test]
    fn shape_variables_bound_at_calls() {
        check(
            "function Tensor[n][m] matmul2(Tensor a[n][k], Tensor b[k][m]) {\n    return a @ b;\n}\nTensor x[2][3];\nTensor y[3][5];\nTensor z = matmul2(x, y);\n",
            expect![[r#"
                function Tensor[n][m] matmul2(Tensor a[n][k], Tensor b[k][m]) {
                    return a @ b;
                }
                Tensor x[2][3];
                Tensor y[3][5];
                Tensor z«[2][5]» = matmul2(x, y) «n = 2, k = 3, m = 5»;
            "#]],
        );
    }

    #[test]
    fn only_inside_the_range() {
        check(
            "Tensor a[2][3];\nTensor p = a;\n$0Tensor q = a * 2.0;$0\n",
            expect![[r#"
                Tensor a[2][3];
                Tensor p = a;
                Tensor q«[2][3]» = a * 2.0;
            "#]],
        );
    }

    #[test]
    fn sizes_bound_at_calls() {
        check(
            "function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q]) {\n    Tensor y[n - q + 1];\n    return y;\n}\nTensor s[8];\nTensor w[3];\nTensor out = conv1d_valid(s, w);\nfunction float f(Tensor x[n][2*m]) {\n    return 0.0;\n}\nTensor t[3][8];\nfloat r = f(t);\n",
            expect![[r#"
                function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q]) {
                    Tensor y[n - q + 1];
                    return y;
                }
                Tensor s[8];
                Tensor w[3];
                Tensor out«[6]» = conv1d_valid(s, w) «n = 8, q = 3»;
                function float f(Tensor x[n][2*m]) {
                    return 0.0;
                }
                Tensor t[3][8];
                float r = f(t) «n = 3, m = 4»;
            "#]],
        );
    }
}
