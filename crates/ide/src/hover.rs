//! Hover: for a name, what it is and its type with its shape (`var Tensor[2][3] w`, a field's
//! as declared and where it is used), a function's signature, a record type's fields, or a built-in's signature and documentation; for an index label, the
//! extent it ranges over; elsewhere, the inferred type of the innermost expression.

use hir::{DefId, LocalId};
use syntax::{TextRange, TextSize};

use crate::{
    FileId, FilePosition,
    semantic::{self, Definition},
};

/// Markdown to show, and the range it describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoverResult {
    pub range: TextRange,
    pub markdown: String,
}

pub(crate) fn hover(db: &hir::Database, position: FilePosition) -> Option<HoverResult> {
    if !crate::in_file(db, position.file, position.offset) {
        return None;
    }
    if let Some(occurrence) = semantic::occurrence_at(db, position.file, position.offset) {
        let markdown = match &occurrence.definition {
            Definition::Local { def, local } => {
                let mut text = local_markdown(db, *def, *local);
                // A field where it is used: its type for that record's sizes.
                if def.kind(db) == hir::DefKind::Struct
                    && !occurrence.is_decl
                    && let Some((at, expr)) = hir::expr_at(db, position.file.0, position.offset)
                    && let hir::Expr::Field { .. } = hir::body(db, at).exprs[expr]
                {
                    let ty = hir::infer(db, at).type_of_expr(expr);
                    if !ty.is_error() {
                        text.push_str(&format!("\n\nhere: `{ty}`"));
                    }
                }
                text
            }
            Definition::Function(def) => function_markdown(db, *def),
            Definition::Record(def) => record_markdown(db, *def),
            Definition::Builtin(builtin) => {
                let info = semantic::builtin_info(*builtin)?;
                let mut text = code_block(info.signature);
                text.push_str("\n\n");
                text.push_str(info.doc);
                if info.differentiable {
                    text.push_str("\n\nDifferentiable.");
                }
                text
            }
            Definition::Label { def, stmt, name } => label_markdown(db, *def, *stmt, name),
        };
        return Some(HoverResult { range: occurrence.range, markdown });
    }
    expression_hover(db, position.file, position.offset)
}

fn code_block(code: &str) -> String {
    format!("```nabla\n{code}\n```")
}

fn local_markdown(db: &dyn hir::Db, def: DefId, local: LocalId) -> String {
    let name = &hir::body(db, def).locals[local].name;
    let ty = semantic::local_type_text(db, def, local);
    let kind = semantic::local_kind_text(db, def, local);
    let mut text = code_block(&format!("{ty} {name}"));
    text.push_str(&format!("\n\n{kind}"));
    if matches!(def.kind(db), hir::DefKind::Function | hir::DefKind::Struct) {
        text.push_str(&format!(" of `{}`", hir::signature(db, def).name));
    }
    text
}

/// A record type: its declaration with its size parameters, one field per line.
fn record_markdown(db: &dyn hir::Db, def: DefId) -> String {
    let record = hir::generic_record(db, def);
    let mut code = format!("struct {} {{", hir::Ty::Record(std::sync::Arc::new(record.clone())));
    for field in hir::record_fields(db, &record) {
        code.push_str(&format!("\n    {} {};", field.ty, field.name));
    }
    code.push_str("\n}");
    let mut text = code_block(&code);
    if !record.sizes.is_empty() {
        let names: Vec<String> = record.sizes.iter().map(|size| format!("`{size}`")).collect();
        text.push_str(&format!("\n\nsizes: {}", names.join(", ")));
    }
    text
}

fn function_markdown(db: &dyn hir::Db, def: DefId) -> String {
    let mut text = code_block(&semantic::function_header(db, def));
    let shape_vars = &hir::signature(db, def).shape_vars;
    if !shape_vars.is_empty() {
        let names: Vec<String> = shape_vars.iter().map(|v| format!("`{v}`")).collect();
        text.push_str(&format!("\n\nshape variables: {}", names.join(", ")));
    }
    text
}

/// An index label and the extent it ranges over, from the first operand that fixes it.
fn label_markdown(db: &dyn hir::Db, def: DefId, stmt: hir::StmtId, name: &str) -> String {
    let body = hir::body(db, def);
    let result = hir::infer(db, def);
    let mut extent = None;
    if let hir::Stmt::Index(index) = &body.stmts[stmt] {
        let operands =
            std::iter::once(&index.target).chain(index.factors.iter().filter_map(|factor| {
                match factor {
                    hir::IndexFactor::Tensor(operand) => Some(operand),
                    hir::IndexFactor::Scalar(_) => None,
                }
            }));
        for operand in operands {
            let Some(axis) = operand.labels.iter().position(|l| l.name == name) else { continue };
            let ty = result.type_of_expr(operand.tensor);
            if let Some(dim) = ty.shape().and_then(|s| s.dims()).and_then(|dims| dims.get(axis))
                && *dim != hir::Dim::Unknown
            {
                extent = Some(dim.to_string());
                break;
            }
        }
    }
    let mut text = code_block(&format!("index label {name}"));
    if let Some(extent) = extent {
        text.push_str(&format!("\n\nranges over 0..{extent}"));
    }
    text
}

/// The inferred type of the innermost expression at `offset`, with the qualifier of the variable
/// it names (`var Tensor[2][3]`).
fn expression_hover(db: &hir::Database, file: FileId, offset: TextSize) -> Option<HoverResult> {
    let (def, expr) = hir::expr_at(db, file.0, offset)?;
    let result = hir::infer(db, def);
    let ty = result.type_of_expr(expr).to_string();
    if ty == "{unknown}" {
        return None;
    }
    let qualifier = match result.resolution(expr) {
        Some(hir::Resolution::Local(local)) => hir::body(db, def).locals[local].qualifier,
        Some(hir::Resolution::Global { def, local }) => hir::body(db, def).locals[local].qualifier,
        _ => None,
    };
    let prefix = match qualifier {
        Some(hir::Qualifier::Var) => "var ",
        Some(hir::Qualifier::Cns) => "cns ",
        None => "",
    };
    let range = semantic::file_range(db, def, hir::body(db, def).source_map.expr(expr));
    Some(HoverResult { range, markdown: code_block(&format!("{prefix}{ty}")) })
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let hover = fixture.analysis.hover(fixture.position()).ok().flatten();
        let source = fixture.analysis.file_text(fixture.file).unwrap_or_default();
        let actual = match hover {
            Some(hover) => format!("{}\n{}", &source[hover.range], hover.markdown),
            None => "no hover".to_owned(),
        };
        expect.assert_eq(&actual);
    }

    #[test]
    fn variable_with_qualifier_and_shape() {
        check(
            "var Tensor w[2][3] = zeros([2, 3]);\nfloat y = sum(w$0);\n",
            expect![[r#"
                w
                ```nabla
                var Tensor[2][3] w
                ```

                top-level variable"#]],
        );
    }

    #[test]
    fn inferred_shape_of_a_declaration() {
        check(
            "Tensor a[2][3];\nTensor b[3][4];\nTensor p$0 = a @ b;\n",
            expect![[r#"
                p
                ```nabla
                Tensor[2][4] p
                ```

                top-level variable"#]],
        );
    }

    #[test]
    fn shape_of_an_indexed_expression() {
        check(
            "function float f(Tensor x[n][m][4]) {\n    return sum(x[1:, .$0.., none, ::-2]);\n}\n",
            expect![[r#"
                x[1:, ..., none, ::-2]
                ```nabla
                Tensor[n - 1][m][1][2]
                ```"#]],
        );
        check(
            "Tensor x[3][4];\nprint(x[-1,$0 ::2]);\n",
            expect![[r#"
                x[-1, ::2]
                ```nabla
                Tensor[2]
                ```"#]],
        );
        // A selection by a mask: the selected rows' count is known when it runs.
        check(
            "Tensor x[3][4];\nTensor m[3] = x[:, 0] > 0;\nprint(x[m,$0 :]);\n",
            expect![[r#"
                x[m, :]
                ```nabla
                Tensor[?][4]
                ```"#]],
        );
    }

    #[test]
    fn derivatives_with_tuple_results() {
        let text =
            "function float f(Tensor w[n], float b) {\n    return sum(w) * b;\n}\nTensor s[4];\n";
        check(
            &format!("{text}(float v, Tensor g[4]) = value_and$0_grad(f)(s, 2.0);\n"),
            expect![[r#"
            value_and_grad(f)
            ```nabla
            function(Tensor[n], float) -> (float, Tensor[n])
            ```"#]],
        );
        check(
            &format!("{text}(float v, Tensor g[4]) = value_and_grad(f)(s, 2.0)$0;\n"),
            expect![[r#"
            value_and_grad(f)(s, 2.0)
            ```nabla
            (float, Tensor[4])
            ```"#]],
        );
        check(
            &format!("{text}(Tensor g[4], float d) = grad(f, [0, 1])$0(s, 2.0);\n"),
            expect![[r#"
            grad(f, [0, 1])
            ```nabla
            function(Tensor[n], float) -> (Tensor[n], float)
            ```"#]],
        );
    }

    #[test]
    fn vmap_and_its_call() {
        let text = "function Tensor[m] layer(Tensor w[m][n], Tensor x[n]) {\n    return w @ x;\n}\nTensor w[2][3];\nTensor xs[5][3];\n";
        check(
            &format!("{text}Tensor h[5][2] = vm$0ap(layer, [1])(w, xs);\n"),
            expect![[r#"
                vmap(layer, [1])
                ```nabla
                function(Tensor[m][n], Tensor[batch][n]) -> Tensor[batch][m]
                ```"#]],
        );
        check(
            &format!("{text}Tensor h[5][2] = vmap(layer, [1])(w, xs)$0;\n"),
            expect![[r#"
                vmap(layer, [1])(w, xs)
                ```nabla
                Tensor[5][2]
                ```"#]],
        );
    }

    #[test]
    fn tuple_results_and_destructured_variables() {
        let text =
            "function (float, Tensor[k][2]) step(Tensor x[k][2]) {\n    return (sum(x), x);\n}\n";
        check(
            &format!("{text}(float loss, Tensor p$0[n][2]) = step([[1, 2], [3, 4]]);\n"),
            expect![[r#"
                p
                ```nabla
                Tensor[n][2] p
                ```

                top-level variable"#]],
        );
        check(
            &format!("{text}step$0([[1, 2]]);\n"),
            expect![[r#"
            step
            ```nabla
            function (float, Tensor[k][2]) step(Tensor x[k][2])
            ```

            shape variables: `k`"#]],
        );
    }

    #[test]
    fn expression_shape() {
        check(
            "Tensor a[2][3];\nTensor b[3][4];\nprint(a @$0 b);\n",
            expect![[r#"
                a @ b
                ```nabla
                Tensor[2][4]
                ```"#]],
        );
    }

    #[test]
    fn einsum_with_an_ellipsis_shows_the_broadcast_shape() {
        check(
            "Tensor a[5][1][3][4];\nTensor b[2][4][6];\nprint(einsum(\"...ij,...jk->...ik\", a, b $0));\n",
            expect![[r#"
                einsum("...ij,...jk->...ik", a, b )
                ```nabla
                Tensor[5][2][3][6]
                ```"#]],
        );
    }

    #[test]
    fn parameter_with_shape_variables() {
        check(
            "function float mse(Tensor pred[n][1], Tensor y[n][1]) {\n    return sum(pred$0 - y) / n;\n}\n",
            expect![[r#"
                pred
                ```nabla
                Tensor[n][1] pred
                ```

                parameter of `mse`"#]],
        );
    }

    #[test]
    fn shape_variable_in_a_dimension() {
        check(
            "function float f(Tensor a[n$0][2], Tensor b[n][2]) {\n    return 0.0;\n}\n",
            expect![[r#"
                n
                ```nabla
                int n
                ```

                shape variable of `f`"#]],
        );
    }

    #[test]
    fn function_signature() {
        check(
            "function Tensor[n][m] matmul2(Tensor a[n][k], Tensor b[k][m]) {\n    return a @ b;\n}\nTensor x[2][3];\nprint(matmul2$0(x, transpose(x)));\n",
            expect![[r#"
                matmul2
                ```nabla
                function Tensor[n][m] matmul2(Tensor a[n][k], Tensor b[k][m])
                ```

                shape variables: `n`, `k`, `m`"#]],
        );
    }

    #[test]
    fn derivative_rule_in_a_clause() {
        check(
            "function float f(float x) derivative f_r$0ule {\n    return x * x;\n}\nfunction float f_rule(float x, float _y, float g) {\n    return 2.0 * x * g;\n}\n",
            expect![[r#"
                f_rule
                ```nabla
                function float f_rule(float x, float _y, float g)
                ```"#]],
        );
    }

    #[test]
    fn function_with_a_derivative_rule() {
        check(
            "function float f(float x) derivative f_rule {\n    return x * x;\n}\nfunction float f_rule(float x, float _y, float g) {\n    return 2.0 * x * g;\n}\nprint(f$0(1.0));\n",
            expect![[r#"
                f
                ```nabla
                function float f(float x) derivative f_rule
                ```"#]],
        );
    }

    #[test]
    fn builtin_signature_and_documentation() {
        check(
            "Tensor x[3];\nprint(soft$0max(x, 0));\n",
            expect![[r#"
                softmax
                ```nabla
                softmax(t, axis)
                ```

                Softmax along an axis (the last by default).

                Differentiable."#]],
        );
    }

    #[test]
    fn index_label_extent() {
        check(
            "Tensor A[2][3];\nTensor B[3][4];\nTensor C[2][4];\nC(i,j) = A(i,k$0) * B(k,j);\n",
            expect![[r#"
                k
                ```nabla
                index label k
                ```

                ranges over 0..3"#]],
        );
    }

    #[test]
    fn name_from_an_import() {
        check(
            r#"
//- main.nb
import "lib.nb";
print(SC$0ALE);
//- lib.nb
cns float SCALE = 2.0;
"#,
            expect![[r#"
                SCALE
                ```nabla
                cns float SCALE
                ```

                top-level constant"#]],
        );
    }

    #[test]
    fn out_of_range_offset_is_none() {
        let fixture = fixture::load("int a = 1;\n");
        let position = crate::FilePosition { file: fixture.file, offset: 1000.into() };
        assert_eq!(fixture.analysis.hover(position).ok().flatten(), None);
    }

    #[test]
    fn sizes_as_written_and_as_bound() {
        check(
            "function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q]) {\n    Tensor y[n - q + 1];\n    return y;\n}\nTensor s[8];\nTensor w[3];\nTensor out = conv1d_valid(s, w);\nprint(ou$0t);\n",
            expect![[r#"
                out
                ```nabla
                Tensor[6] out
                ```

                top-level variable"#]],
        );
        check(
            "function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q]) {\n    Tensor y[n - q + 1];\n    return y;\n}\nTensor s[8];\nTensor w[3];\nprint(conv1d_va$0lid(s, w));\n",
            expect![[r#"
                conv1d_valid
                ```nabla
                function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q])
                ```

                shape variables: `n`, `q`"#]],
        );
    }

    #[test]
    fn field_where_it_is_used() {
        check(
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nLinear l = Linear { w: zeros([2, 3]), b: zeros([3]) };\nprint(l.w$0);\n",
            expect![[r#"
                w
                ```nabla
                Tensor[n][m] w
                ```

                field of `Linear`

                here: `Tensor[2][3]`"#]],
        );
    }

    #[test]
    fn record_type() {
        check(
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nfunction float f(Linear$0 l) {\n    return sum(l.w);\n}\n",
            expect![[r#"
                Linear
                ```nabla
                struct Linear[n][m] {
                    Tensor[n][m] w;
                    Tensor[m] b;
                }
                ```

                sizes: `n`, `m`"#]],
        );
    }

    #[test]
    fn record_value() {
        check(
            "struct Linear {\n    Tensor w[n][m];\n    Tensor b[m];\n}\nvar Linear l = Linear { w: zeros([2, 3]), b: zeros([3]) };\nprint(l$0);\n",
            expect![[r#"
                l
                ```nabla
                var Linear[2][3] l
                ```

                top-level variable"#]],
        );
    }
}
