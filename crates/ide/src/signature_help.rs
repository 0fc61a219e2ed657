//! Signature help: inside the argument list of a call, the callee's signature (a function's
//! parameters as declared, or a built-in's signature that fits the argument count), which
//! parameter the cursor is on, and the built-in's documentation; for a function with size
//! variables, the sizes the arguments so far bind and, once they fix every size of the result,
//! the call's type. For a derivative (`value_and_grad(f)(...)`), its type as the checker gives it,
//! with the differentiated function's parameters.

use hir::{Dim, ScopeName, Shape, Ty};
use syntax::{AstNode, SyntaxKind, TextRange, TextSize, ast};

use crate::{FileId, FilePosition, semantic};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureHelp {
    /// The signature, such as `float mse(Tensor pred[n][1], Tensor y[n][1])`.
    pub label: String,
    /// Each parameter's range inside `label`.
    pub parameters: Vec<TextRange>,
    pub active_parameter: Option<usize>,
    pub documentation: Option<String>,
    /// The size variables the arguments so far bind, as inlay hints show them: `n = 8, q = 3`.
    pub bound_sizes: Option<String>,
    /// The type of the call with those sizes in it, `Tensor[6]`, once none of its sizes is
    /// unknown (shown only beside [`SignatureHelp::bound_sizes`]).
    pub result: Option<String>,
}

pub(crate) fn signature_help(db: &hir::Database, position: FilePosition) -> Option<SignatureHelp> {
    if !crate::in_file(db, position.file, position.offset) {
        return None;
    }
    let root = hir::parse(db, position.file.0).syntax_node();
    let offset = position.offset;
    let token = match root.token_at_offset(offset) {
        rowan::TokenAtOffset::None => return None,
        rowan::TokenAtOffset::Single(token) | rowan::TokenAtOffset::Between(token, _) => token,
    };
    // In an unclosed call the argument list ends at its last token, so start from the last
    // token before the cursor that is not trivia.
    let mut token = token;
    while token.kind().is_trivia() {
        token = token.prev_token()?;
    }
    let arg_list = token.parent_ancestors().filter_map(ast::ArgList::cast).find(|list| {
        let range = list.syntax().text_range();
        let closed = list.r_paren_token().is_some();
        range.start() < offset && (offset < range.end() || !closed)
    })?;
    let call = arg_list.syntax().parent().and_then(ast::CallExpr::cast)?;
    let active = active_argument(&arg_list, offset);
    let path = match call.callee()? {
        ast::Expr::PathExpr(path) => path,
        ast::Expr::CallExpr(transform) => {
            return transform_help(db, position.file, &call, &transform, active);
        }
        _ => return None,
    };
    let name = path.name_ref()?.text();
    let callee_at = path.syntax().text_range().start();
    let scope_name = hir::names_in_scope(db, position.file.0, callee_at)
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, scope_name)| scope_name)?;
    match scope_name {
        ScopeName::Item(hir::ScopeItem::Function(def)) => {
            let signature = hir::signature(db, def);
            let chunks = semantic::def_chunks(db, def);
            let (node, _) = chunks.first()?;
            let function = ast::FnDef::cast(node.clone())?;
            let ret =
                function.ret_type().map(|r| r.syntax().text().to_string()).unwrap_or_default();
            let params: Vec<String> = function
                .param_list()
                .map(|list| {
                    list.params().map(|p| collapse(&p.syntax().text().to_string())).collect()
                })
                .unwrap_or_default();
            let (label, parameters) = assemble(&format!("{ret} {}", signature.name), &params);
            let (bound_sizes, result) = bound_at(db, position.file, &call);
            Some(SignatureHelp {
                label,
                parameters,
                active_parameter: Some(active),
                documentation: None,
                bound_sizes,
                result,
            })
        }
        ScopeName::Builtin(builtin) => {
            let info = semantic::builtin_info(builtin)?;
            let alternatives: Vec<&str> = info.signature.split(" | ").collect();
            let arity = |alt: &str| {
                let inside = alt.split_once('(').map(|(_, rest)| rest.trim_end_matches(')'));
                inside.map_or(0, |s| if s.trim().is_empty() { 0 } else { s.split(", ").count() })
            };
            let chosen = alternatives
                .iter()
                .copied()
                .find(|alt| arity(alt) > active)
                .or(alternatives.last().copied())?;
            let (name, rest) = chosen.split_once('(')?;
            let inside = rest.strip_suffix(')').unwrap_or(rest);
            let params: Vec<String> =
                if inside.trim().is_empty() { Vec::new() } else { split_top_level(inside) };
            let (label, parameters) = assemble(name, &params);
            let active_parameter =
                (!parameters.is_empty()).then(|| active.min(parameters.len() - 1));
            Some(SignatureHelp {
                label,
                parameters,
                active_parameter,
                documentation: Some(info.doc.to_owned()),
                bound_sizes: None,
                result: None,
            })
        }
        _ => None,
    }
}

/// Inside the arguments of a derivative, `grad(f, [0, 2])(...)`: the derivative's type as the
/// checker gives it (a tuple for `value_and_grad` and lists of parameters), its parameters named
/// as the differentiated function declares them, and the sizes the arguments bind.
fn transform_help(
    db: &hir::Database,
    file: FileId,
    call: &ast::CallExpr,
    transform: &ast::CallExpr,
    active: usize,
) -> Option<SignatureHelp> {
    let (def, expr) = hir::expr_covering(db, file.0, transform.syntax().text_range())?;
    let hir::Expr::Transform { op, .. } = hir::body(db, def).exprs[expr] else { return None };
    let Ty::Fn(fn_ty) = hir::infer(db, def).type_of_expr(expr).clone() else { return None };
    let (declared, mapped) = differentiated_params(db, file, transform).unwrap_or_default();
    let extra = match op {
        hir::TransformOp::Jvp => " tangent",
        hir::TransformOp::Vjp => " cotangent",
        _ => "",
    };
    let params: Vec<String> = fn_ty
        .params
        .iter()
        .enumerate()
        .map(|(i, ty)| match declared.get(i) {
            // Under a `vmap`, a batched parameter's type is not the declared one.
            Some((_, name)) if mapped => format!("{ty} {name}"),
            Some((param, _)) => param.clone(),
            None if i + 1 == fn_ty.params.len() => format!("{ty}{extra}"),
            None => ty.to_string(),
        })
        .collect();
    let callee = collapse(&transform.syntax().text().to_string());
    let (label, parameters) = assemble(&format!("{} {callee}", fn_ty.ret), &params);
    let (bound_sizes, result) = bound_at(db, file, call);
    let active_parameter = (!parameters.is_empty()).then(|| active.min(parameters.len() - 1));
    Some(SignatureHelp {
        label,
        parameters,
        active_parameter,
        documentation: None,
        bound_sizes,
        result,
    })
}

/// The parameters, as declared and their names, of the function a (possibly nested) transform
/// differentiates, and whether a `vmap` is among the transforms.
fn differentiated_params(
    db: &hir::Database,
    file: FileId,
    transform: &ast::CallExpr,
) -> Option<(Vec<(String, String)>, bool)> {
    let mut transform = transform.clone();
    let mut mapped = false;
    let path = loop {
        let is_vmap = matches!(transform.callee(), Some(ast::Expr::PathExpr(path))
            if path.name_ref().is_some_and(|name| name.text() == "vmap"));
        mapped |= is_vmap;
        let first = transform.args().next()?;
        match first {
            ast::Expr::CallExpr(inner) => transform = inner,
            ast::Expr::PathExpr(path) => break path,
            _ => return None,
        }
    };
    let name = path.name_ref()?.text();
    let at = path.syntax().text_range().start();
    let scope_name = hir::names_in_scope(db, file.0, at).into_iter().find(|(n, _)| *n == name)?.1;
    let ScopeName::Item(hir::ScopeItem::Function(function)) = scope_name else { return None };
    let (node, _) = semantic::def_chunks(db, function).into_iter().next()?;
    let list = ast::FnDef::cast(node)?.param_list()?;
    let params = list.params().map(|p| {
        let name = p.name().map(|name| name.text()).unwrap_or_default();
        (collapse(&p.syntax().text().to_string()), name)
    });
    Some((params.collect(), mapped))
}

/// What the arguments of `call` so far bind: the callee's size variables, worded as inlay
/// hints word them, and the call's type once every size in it is known (as hover shows it).
/// Inference binds what it can in a call that lacks arguments, so this follows the typing.
fn bound_at(
    db: &hir::Database,
    file: FileId,
    call: &ast::CallExpr,
) -> (Option<String>, Option<String>) {
    let Some((def, expr)) = hir::expr_covering(db, file.0, call.syntax().text_range()) else {
        return (None, None);
    };
    if !matches!(hir::body(db, def).exprs[expr], hir::Expr::Call { .. }) {
        return (None, None);
    }
    let result = hir::infer(db, def);
    let bound_sizes = result
        .shape_bindings
        .iter()
        .find(|(at, _)| *at == expr)
        .and_then(|(_, bindings)| semantic::bindings_text(bindings));
    let ty = result.type_of_expr(expr);
    let shown = bound_sizes.is_some() && decided(ty);
    (bound_sizes, shown.then(|| ty.to_string()))
}

/// Whether a type has no unknown in it: no error, and no unknown size.
fn decided(ty: &Ty) -> bool {
    match ty {
        Ty::Error => false,
        Ty::Tensor(Shape::Ranked(dims)) => !dims.contains(&Dim::Unknown),
        Ty::Tuple(elements) => elements.iter().all(decided),
        Ty::Record(record) => !record.sizes.contains(&Dim::Unknown),
        _ => true,
    }
}

/// `name(p0, p1)` and the ranges of the parameters in it.
fn assemble(name: &str, params: &[String]) -> (String, Vec<TextRange>) {
    let mut label = format!("{name}(");
    let mut ranges = Vec::new();
    for (i, param) in params.iter().enumerate() {
        if i > 0 {
            label.push_str(", ");
        }
        let start = TextSize::from(label.len() as u32);
        label.push_str(param);
        ranges.push(TextRange::new(start, TextSize::from(label.len() as u32)));
    }
    label.push(')');
    (label, ranges)
}

/// Splits `a, [d0, d1], v` at the commas outside brackets.
fn split_top_level(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for ch in text.chars() {
        match ch {
            '[' | '(' => depth += 1,
            ']' | ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(current.trim().to_owned());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(ch);
    }
    parts.push(current.trim().to_owned());
    parts
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How many of the argument list's own commas come before `offset`.
fn active_argument(list: &ast::ArgList, offset: TextSize) -> usize {
    list.syntax()
        .children_with_tokens()
        .filter_map(|e| e.into_token())
        .filter(|t| t.kind() == SyntaxKind::COMMA && t.text_range().end() <= offset)
        .count()
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let help = fixture.analysis.signature_help(fixture.position()).ok().flatten();
        let actual = match help {
            Some(help) => {
                let params: Vec<&str> = help.parameters.iter().map(|r| &help.label[*r]).collect();
                let mut text = format!(
                    "{}\nparameters: {}\nactive: {:?}\n",
                    help.label,
                    params.join(" | "),
                    help.active_parameter,
                );
                if let Some(sizes) = help.bound_sizes {
                    text.push_str(&format!("bound: {sizes}\n"));
                }
                if let Some(result) = help.result {
                    text.push_str(&format!("result: {result}\n"));
                }
                text.push_str(&help.documentation.unwrap_or_default());
                text
            }
            None => "none".to_owned(),
        };
        expect.assert_eq(&actual);
    }

    #[test]
    fn function_second_argument() {
        check(
            "function float mse(Tensor pred[n][1], Tensor y[n][1]) {\n    return 0.0;\n}\nTensor a[3][1];\nprint(mse(a, $0));\n",
            expect![[r#"
                float mse(Tensor pred[n][1], Tensor y[n][1])
                parameters: Tensor pred[n][1] | Tensor y[n][1]
                active: Some(1)
                bound: n = 3
            "#]],
        );
    }

    #[test]
    fn builtin_picks_the_form_that_fits() {
        check(
            "Tensor t[2][3];\nprint(sum(t, $0));\n",
            expect![[r#"
                sum(t, axis, keepdims)
                parameters: t | axis | keepdims
                active: Some(1)
                Sum of the elements, or along one axis."#]],
        );
    }

    #[test]
    fn unclosed_call() {
        check(
            "Tensor t[2][3];\nprint(full([2, 3], $0\n",
            expect![[r#"
                full([d0, d1, ...], v)
                parameters: [d0, d1, ...] | v
                active: Some(1)
                A tensor of the given shape filled with v."#]],
        );
    }

    #[test]
    fn outside_a_call() {
        check("int a$0 = 1;\n", expect![[r#"none"#]]);
    }

    const CONV: &str = "function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q]) {\n    Tensor y[n - q + 1];\n    return y;\n}\nTensor s[8];\nTensor w[3];\n";

    #[test]
    fn sizes_bound_so_far_and_the_result_once_decided() {
        check(
            &format!("{CONV}Tensor out = conv1d_valid(s$0);\n"),
            expect![[r#"
                Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q])
                parameters: Tensor x[n] | Tensor k[q]
                active: Some(0)
                bound: n = 8
            "#]],
        );
        check(
            &format!("{CONV}Tensor out = conv1d_valid(s, $0);\n"),
            expect![[r#"
                Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q])
                parameters: Tensor x[n] | Tensor k[q]
                active: Some(1)
                bound: n = 8
            "#]],
        );
        check(
            &format!("{CONV}Tensor out = conv1d_valid(s, w$0);\n"),
            expect![[r#"
                Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q])
                parameters: Tensor x[n] | Tensor k[q]
                active: Some(1)
                bound: n = 8, q = 3
                result: Tensor[6]
            "#]],
        );
        // While the call is being typed: no closing parenthesis yet.
        check(
            &format!("{CONV}Tensor out = conv1d_valid(s, w$0\n"),
            expect![[r#"
                Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q])
                parameters: Tensor x[n] | Tensor k[q]
                active: Some(1)
                bound: n = 8, q = 3
                result: Tensor[6]
            "#]],
        );
    }

    #[test]
    fn derivatives_with_tuple_results() {
        let f = "function float f(Tensor w[n], float b, int k) {\n    return sum(w) * b * k;\n}\nTensor s[4];\n";
        check(
            &format!("{f}(float v, Tensor g[4]) = value_and_grad(f)(s, $0);\n"),
            expect![[r#"
                (float, Tensor[n]) value_and_grad(f)(Tensor w[n], float b, int k)
                parameters: Tensor w[n] | float b | int k
                active: Some(1)
                bound: n = 4
            "#]],
        );
        check(
            &format!("{f}(Tensor g[4], float d) = grad(f, [0, 1])(s, 2.0, $0);\n"),
            expect![[r#"
                (Tensor[n], float) grad(f, [0, 1])(Tensor w[n], float b, int k)
                parameters: Tensor w[n] | float b | int k
                active: Some(2)
                bound: n = 4
            "#]],
        );
        check(
            &format!("{f}(Tensor g[4], float d) = grad(f, [0, 1])(s, 2.0, 3$0);\n"),
            expect![[r#"
                (Tensor[n], float) grad(f, [0, 1])(Tensor w[n], float b, int k)
                parameters: Tensor w[n] | float b | int k
                active: Some(2)
                bound: n = 4
                result: (Tensor[4], float)
            "#]],
        );
        check(
            &format!("{f}Tensor t[4] = jvp(grad(f))(s, 1.0, 2, $0);\n"),
            expect![[r#"
            Tensor[n] jvp(grad(f))(Tensor w[n], float b, int k, Tensor[n] tangent)
            parameters: Tensor w[n] | float b | int k | Tensor[n] tangent
            active: Some(3)
            bound: n = 4
        "#]],
        );
    }

    #[test]
    fn vmap_shows_the_batched_types() {
        let f = "function float f(Tensor w[n], Tensor x[n], int k) {\n    return sum(w * x) * k;\n}\nTensor w[3];\nTensor xs[4][3];\n";
        check(
            &format!("{f}Tensor t[4] = vmap(f, [1])(w, xs, $0);\n"),
            expect![[r#"
                Tensor[batch] vmap(f, [1])(Tensor[n] w, Tensor[batch][n] x, int k)
                parameters: Tensor[n] w | Tensor[batch][n] x | int k
                active: Some(2)
                bound: n = 3, batch = 4
            "#]],
        );
        check(
            &format!("{f}Tensor g[4][3] = vmap(grad(f), [1])(w, xs, 2$0);\n"),
            expect![[r#"
                Tensor[batch][n] vmap(grad(f), [1])(Tensor[n] w, Tensor[batch][n] x, int k)
                parameters: Tensor[n] w | Tensor[batch][n] x | int k
                active: Some(2)
                bound: n = 3, batch = 4
                result: Tensor[4][3]
            "#]],
        );
    }

    #[test]
    fn sizes_in_a_tuple_result() {
        check(
            "function (float, Tensor[n - 1]) f(Tensor x[n]) {\n    Tensor d[n - 1];\n    return (0.0, d);\n}\nTensor s[8];\n(float a, Tensor b[7]) = f(s$0);\n",
            expect![[r#"
                (float, Tensor[n - 1]) f(Tensor x[n])
                parameters: Tensor x[n]
                active: Some(0)
                bound: n = 8
                result: (float, Tensor[7])
            "#]],
        );
    }

    #[test]
    fn sizes_bound_by_arithmetic_and_to_sizes_of_the_caller() {
        check(
            "function float f(Tensor x[n][2*m], Tensor y[m]) {\n    return 0.0;\n}\nTensor t[3][8];\nprint(f(t, $0));\n",
            expect![[r#"
                float f(Tensor x[n][2*m], Tensor y[m])
                parameters: Tensor x[n][2*m] | Tensor y[m]
                active: Some(1)
                bound: n = 3, m = 4
            "#]],
        );
        check(
            &format!(
                "{CONV}function Tensor[p - 2] smooth(Tensor a[p], Tensor k3[3]) {{\n    return conv1d_valid(a, k3$0);\n}}\n"
            ),
            expect![[r#"
                Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q])
                parameters: Tensor x[n] | Tensor k[q]
                active: Some(1)
                bound: n = p, q = 3
                result: Tensor[p - 2]
            "#]],
        );
    }
}
