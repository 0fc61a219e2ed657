//! "Did you mean": what a name that resolves to nothing probably stands for. The candidates are
//! what is visible where the name is used (locals, the file's functions and constants, built-ins,
//! shape variables, and the keywords that can stand where the name stands); the nearest by edit
//! distance ([`syntax::edit_distance::best_match`]) becomes a help line and a fix-it.
//!
//! Names from other tensor libraries (`len`, `matmul`, `numel`) that are not close to any Nabla
//! name get a line saying how Nabla writes them instead.

use smol_str::SmolStr;

use crate::diagnostics::HirDiagnostic;
use crate::{
    DefKind,
    body::{Body, ExprId, HirSpan, LocalKind, ScopeEnd, Stmt},
    builtins::BUILTINS,
    scope::{FileScope, ScopeItem},
};

/// A name that could be meant, and what kind of thing it is ("variable", "function", ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate<'a> {
    pub name: &'a str,
    pub kind: &'static str,
}

/// Adds "a variable with a similar name exists: `length`" and the fix-it that writes it to a
/// diagnostic about the unknown `name` at `span`, or how Nabla writes a name from another
/// library. Candidates earlier in the list win ties, so callers list the likelier kinds first
/// (locals before built-ins). Returns whether it added anything.
pub fn did_you_mean(
    diagnostic: &mut HirDiagnostic,
    name: &str,
    span: HirSpan,
    candidates: &[Candidate<'_>],
) -> bool {
    // A name from another library says how Nabla writes it, rather than whichever Nabla name
    // happens to be spelt alike (`len` is not `ln`).
    if let Some(help) = foreign_name(name) {
        diagnostic.help(help);
        return true;
    }
    let Some(best) = syntax::edit_distance::best_match(name, candidates.iter().map(|c| c.name))
    else {
        return false;
    };
    let kind = candidates.iter().find(|c| c.name == best).map_or("name", |c| c.kind);
    let article = match kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
        true => "an",
        false => "a",
    };
    diagnostic.help(format!("{article} {kind} with a similar name exists: `{best}`"));
    diagnostic.fix_replace(&format!("write `{best}`"), span, best.to_owned());
    true
}

/// What a name used as the expression `expr` of `body` could have meant: the locals visible
/// there, the file's functions and the globals this kind of definition may read, the built-ins,
/// and the keywords that can stand where the name stands.
pub fn expr_candidates(
    body: &Body,
    kind: DefKind,
    scope: &FileScope,
    expr: ExprId,
) -> Vec<(SmolStr, &'static str)> {
    let span = body.source_map.expr(expr);
    let at = ScopeEnd { chunk: span.chunk, offset: span.range.start() };
    let mut out: Vec<(SmolStr, &'static str)> = body
        .locals
        .iter()
        .filter(|(local, _)| body.source_map.is_visible(*local, at))
        .map(|(_, data)| {
            let what = match data.kind {
                LocalKind::Param => "parameter",
                LocalKind::Variable => "variable",
                LocalKind::ShapeVar => "shape variable",
            };
            (data.name.clone(), what)
        })
        .collect();
    let mut items: Vec<_> = scope.items.iter().collect();
    items.sort_by(|a, b| a.0.cmp(b.0));
    for (name, item) in items {
        let what = match item {
            ScopeItem::Function(_) => "function",
            ScopeItem::Global { is_cns: true, .. } => "constant",
            ScopeItem::Global { .. } if kind == DefKind::TopLevel => "variable",
            ScopeItem::Global { .. } => continue,
        };
        out.push((name.clone(), what));
    }
    out.extend(BUILTINS.iter().map(|info| (SmolStr::new(info.name), "built-in")));
    out.extend(["true", "false"].map(|k| (SmolStr::new(k), "keyword")));
    let alone = body.stmts.iter().any(|(_, stmt)| *stmt == Stmt::Expr(expr));
    if alone {
        out.extend(["break", "continue", "return"].map(|k| (SmolStr::new(k), "keyword")));
    }
    out
}

/// [`did_you_mean`] over owned candidates, as [`expr_candidates`] gives them.
pub fn did_you_mean_owned(
    diagnostic: &mut HirDiagnostic,
    name: &str,
    span: HirSpan,
    candidates: &[(SmolStr, &'static str)],
) -> bool {
    let candidates: Vec<Candidate<'_>> =
        candidates.iter().map(|(name, kind)| Candidate { name, kind }).collect();
    did_you_mean(diagnostic, name, span, &candidates)
}

/// How Nabla writes a function that NumPy, PyTorch or C spell differently, when no Nabla name
/// is close to it.
pub fn foreign_name(name: &str) -> Option<&'static str> {
    let help = match name {
        "len" => "the extent of an axis is `shape(t, axis)`; the number of elements is `sizeof t`",
        "size" | "numel" | "length" => "the number of elements of a tensor is `sizeof t`",
        "matmul" | "dot" | "mm" | "bmm" | "matvec" => "the matrix product is the operator `a @ b`",
        "printf" | "println" | "puts" | "console" => "Nabla prints with `print(a, b, ...)`",
        "maximum" | "fmax" => "the element-wise maximum is `max(a, b)`",
        "minimum" | "fmin" => "the element-wise minimum is `min(a, b)`",
        "power" => "a power is `pow(x, p)`",
        "array" | "tensor" | "asarray" => "a tensor literal is written `[1.0, 2.0]`",
        "range" | "linspace" => {
            "`arange(n)` is `[0, 1, ..., n - 1]`; a counting loop is `loop (int i = 0; i < n; i++)`"
        }
        "np" | "numpy" | "torch" | "jnp" | "tf" | "math" => {
            "Nabla's built-ins need no module prefix: `zeros([3])`, `exp(x)`"
        }
        "clip" | "clamp" => "clip with `max(min(x, hi), lo)`",
        "null" | "nullptr" | "NULL" | "None" | "nil" => "Nabla has no null value",
        _ => return None,
    };
    Some(help)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreign_names_have_a_pointer() {
        assert!(foreign_name("len").is_some());
        assert!(foreign_name("sum").is_none());
    }
}
