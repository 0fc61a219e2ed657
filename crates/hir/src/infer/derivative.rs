//! The `derivative` clause of a function (a custom derivative rule): the name must be another
//! function of the file scope, and that function's signature must fit the rule of this one.
//!
//! A rule of `function U f(T0 p0, ..., Tk pk)` whose one differentiable (`float` or `Tensor`)
//! parameter is `pi` is a function `Ti r(T0 p0, ..., Tk pk, U y, U g)`: it receives the
//! arguments, the result and the result's cotangent and returns the cotangent of `pi`; with
//! several differentiable parameters `pi, pj, ...` it returns the tuple `(Ti, Tj, ...)` of their
//! cotangents, in the parameters' order. The
//! rule's shape variables are its own; they fit when renaming them, parameter by parameter, makes
//! every type the function's (`Tensor x[m]` fits `Tensor x[n]`, `Tensor x[3]` does not).

use rustc_hash::FxHashMap;

use super::InferCtx;
use crate::{
    body::HirSpan,
    diagnostics::{Code, a},
    infer::ty_of_ref,
    scope::ScopeItem,
    ty::{Dim, Shape, SizeVar, Ty},
};

impl InferCtx<'_> {
    /// Checks the `derivative` clause of the function being inferred, if it has one, and
    /// records the rule it names when it fits.
    pub(super) fn check_derivative_clause(&mut self) {
        let Some((name, span)) = self.signature.derivative.clone() else { return };
        let clause = self.span(span);
        let function = self.signature.name.clone();
        let rule = match self.scope.get(&name) {
            Some(ScopeItem::Function(rule)) if rule != self.def => rule,
            Some(ScopeItem::Function(_)) => {
                self.report(
                    Code::DerivativeTarget,
                    clause,
                    format!("`{function}` cannot be its own derivative rule"),
                )
                .help("write the rule as a separate function that takes the parameters, the result and the result's gradient");
                return;
            }
            Some(ScopeItem::Global { .. }) => {
                self.report(
                    Code::DerivativeTarget,
                    clause,
                    format!("`{name}` is a variable; `derivative` names a function"),
                );
                return;
            }
            None if self.scope.incomplete => return,
            None => {
                self.report(
                    Code::DerivativeTarget,
                    clause,
                    format!("no function named `{name}` to give the derivative of `{function}`"),
                );
                return;
            }
        };
        let params: Vec<Ty> = self.signature.params.iter().map(|p| ty_of_ref(&p.ty)).collect();
        let ret = ty_of_ref(&self.signature.ret);
        if params.iter().any(Ty::is_error) || ret.is_error() {
            return;
        }
        let differentiable: Vec<usize> =
            (0..params.len()).filter(|&i| params[i].is_differentiable()).collect();
        let fn_span = self.signature.name_span.map(|span| self.span(span)).unwrap_or(clause);
        if !ret.is_differentiable() {
            self.report(
                Code::DerivativeParams,
                fn_span,
                format!(
                    "`{function}` returns {}, which has no derivative: only a function that returns a float or a tensor can have a derivative rule",
                    a(&ret)
                ),
            );
            return;
        }
        if differentiable.is_empty() {
            self.report(
                Code::DerivativeParams,
                fn_span,
                format!(
                    "`{function}` has no `float` or `Tensor` parameter, so its derivative rule would have nothing to give a gradient to"
                ),
            );
            return;
        }
        let rule_signature = crate::signature(self.db, rule);
        let rule_name = rule_signature.name.clone();
        let rule_span = |span: Option<crate::RelSpan>| span.map(|span| HirSpan { def: rule, span });
        let mut expected: Vec<(Ty, String)> = self
            .signature
            .params
            .iter()
            .zip(&params)
            .map(|(param, ty)| (ty.clone(), format!("`{function}`'s parameter `{}`", param.name)))
            .collect();
        expected.push((ret.clone(), format!("`{function}`'s result")));
        expected.push((ret.clone(), format!("the gradient of `{function}`'s result")));
        if rule_signature.params.len() != expected.len() {
            let wanted: Vec<String> = expected.iter().map(|(ty, _)| ty.to_string()).collect();
            let diagnostic = self.report(
                Code::DerivativeSignature,
                clause,
                format!(
                    "the rule `{rule_name}` takes {} parameters, but a rule of `{function}` takes {}: `{function}`'s parameters, its result and the result's gradient ({})",
                    rule_signature.params.len(),
                    expected.len(),
                    wanted.join(", ")
                ),
            );
            if let Some(span) = rule_span(rule_signature.name_span) {
                diagnostic.label(span, format!("`{rule_name}` is defined here"));
            }
            return;
        }
        let mut renames = FxHashMap::default();
        for (param, (ty, what)) in rule_signature.params.iter().zip(&expected) {
            let found = ty_of_ref(&param.ty);
            if fits(&found, ty, &mut renames) {
                continue;
            }
            let diagnostic = self.report(
                Code::DerivativeSignature,
                clause,
                format!(
                    "the rule `{rule_name}`'s parameter `{}` is {found}, but it receives {what}, {}",
                    param.name,
                    a(ty)
                ),
            );
            diagnostic.label(HirSpan { def: rule, span: param.span }, format!("declared {found}"));
            return;
        }
        let found = ty_of_ref(&rule_signature.ret);
        // One gradient, or a tuple of them in the parameters' order.
        let gradient = match differentiable.as_slice() {
            [wrt] => params[*wrt].clone(),
            several => Ty::Tuple(several.iter().map(|&i| params[i].clone()).collect()),
        };
        if !fits(&found, &gradient, &mut renames) {
            let names: Vec<String> = differentiable
                .iter()
                .map(|&i| format!("`{}`", self.signature.params[i].name))
                .collect();
            let what = match names.as_slice() {
                [parameter] => {
                    format!(
                        "the gradient of `{function}`'s parameter {parameter} is {}",
                        a(&gradient)
                    )
                }
                _ => format!(
                    "the gradients of `{function}`'s differentiable parameters {} are {gradient}",
                    names.join(", ")
                ),
            };
            let diagnostic = self.report(
                Code::DerivativeSignature,
                clause,
                format!("the rule `{rule_name}` returns {found}, but {what}"),
            );
            if let Some(span) = rule_span(rule_signature.ret_span) {
                diagnostic.label(span, format!("`{rule_name}` returns {found}"));
            }
            return;
        }
        self.result.derivative = Some(rule);
    }
}

/// Whether a rule's type `found` is `expected` once the rule's shape variables are renamed;
/// `renames` grows with the first use of each of them.
fn fits(found: &Ty, expected: &Ty, renames: &mut FxHashMap<SizeVar, Dim>) -> bool {
    match (found, expected) {
        (Ty::Error, _) | (_, Ty::Error) => true,
        (Ty::Tensor(Shape::Ranked(found)), Ty::Tensor(Shape::Ranked(expected))) => {
            found.len() == expected.len()
                && found
                    .iter()
                    .zip(expected)
                    .all(|(found, expected)| dim_fits(found, expected, renames))
        }
        (Ty::Tuple(found), Ty::Tuple(expected)) => {
            found.len() == expected.len()
                && found
                    .iter()
                    .zip(expected)
                    .all(|(found, expected)| fits(found, expected, renames))
        }
        (found, expected) => found == expected,
    }
}

fn dim_fits(found: &Dim, expected: &Dim, renames: &mut FxHashMap<SizeVar, Dim>) -> bool {
    if let Some(var) = found.as_var()
        && !renames.contains_key(var)
    {
        renames.insert(var.clone(), expected.clone());
        return true;
    }
    match (found, expected) {
        (Dim::Unknown, Dim::Unknown) => true,
        (Dim::Unknown, _) | (_, Dim::Unknown) => false,
        _ => found
            .substitute(&mut |var| renames.get(var).cloned())
            .is_ok_and(|renamed| renamed.equals(expected) == Some(true)),
    }
}
