//! Which index entries select by a mask (`t[x > 0]`) rather than by a tensor of indices.
//!
//! Tensors hold floats, so a mask and a tensor of indices have the same type; what makes an
//! index entry a mask is where its value comes from. An entry is a mask when it is a *mask
//! expression*: a comparison, `!`, `&&` or `||` (on tensors these give masks of `0.0` and `1.0`),
//! a `?:` whose branches are both masks, or a local variable of the same body that only ever
//! holds masks: declared with a mask as its initializer and assigned only masks, whole
//! (`m = m && (x < 3)`), never through an index, an `op=`, `++`/`--`, an index statement or a
//! destructuring. A parameter is never a mask: its argument could be any tensor.
//!
//! The rule is syntactic, so it holds before inference runs and needs no type of its own: a
//! mask's values are `0.0` and `1.0` by construction.
//!
//! Because a parameter is never a mask, a mask passed to a function that uses the parameter as
//! an index entry would select by positions `0` and `1` there: [`param_read_as_indices`] finds
//! such a use, and the call is an error (E0231) rather than a silent change of meaning.

use std::sync::Arc;

use rustc_hash::FxHashSet;

use crate::{
    Db, DefId,
    body::{
        BinaryOp, Body, Expr, ExprId, IndexEntry, LocalId, LocalKind, RelSpan, Stmt, TypeRef,
        UnaryOp, body_query,
    },
};

/// The locals of `body` that only ever hold masks.
pub(crate) fn mask_locals(body: &Body) -> FxHashSet<LocalId> {
    let mut masks: FxHashSet<LocalId> = FxHashSet::default();
    let mut inits = Vec::new();
    for (_, stmt) in body.stmts.iter() {
        if let Stmt::Decl { local, init: Some(init) } = *stmt {
            let data = &body.locals[local];
            if data.kind == LocalKind::Variable && matches!(data.ty, TypeRef::Tensor(_)) {
                masks.insert(local);
                inits.push((local, init));
            }
        }
    }
    // Every other way of writing a local, and each whole assignment's value.
    let mut assigned = Vec::new();
    let mut written = FxHashSet::default();
    for (_, expr) in body.exprs.iter() {
        match *expr {
            Expr::Assign { op: None, target, value } => match body.exprs[target] {
                Expr::Name { local: Some(local), .. } => assigned.push((local, value)),
                _ => written.extend(root_local(body, target)),
            },
            Expr::Assign { target, .. } | Expr::IncDec { target, .. } => {
                written.extend(root_local(body, target));
            }
            _ => {}
        }
    }
    for (_, stmt) in body.stmts.iter() {
        match stmt {
            Stmt::Index(index) => written.extend(root_local(body, index.target.tensor)),
            Stmt::TupleDecl { locals, .. } => written.extend(locals.iter().copied()),
            _ => {}
        }
    }
    masks.retain(|local| !written.contains(local));
    // The largest set whose initializers and assignments are all masks (`m = m && n` keeps `m`).
    loop {
        let before = masks.len();
        let failing: Vec<LocalId> = inits
            .iter()
            .chain(&assigned)
            .filter(|&&(local, value)| masks.contains(&local) && !is_mask(body, &masks, value))
            .map(|&(local, _)| local)
            .collect();
        for local in failing {
            masks.remove(&local);
        }
        if masks.len() == before {
            return masks;
        }
    }
}

/// Whether `expr` is a mask expression, given the locals that hold masks.
pub(crate) fn is_mask(body: &Body, masks: &FxHashSet<LocalId>, expr: ExprId) -> bool {
    match body.exprs[expr] {
        Expr::Binary { op: BinaryOp::Cmp(_) | BinaryOp::Logic(_), .. } => true,
        Expr::Unary { op: UnaryOp::Not, .. } => true,
        Expr::Ternary { then_branch, else_branch, .. } => {
            is_mask(body, masks, then_branch) && is_mask(body, masks, else_branch)
        }
        Expr::Name { local: Some(local), .. } => masks.contains(&local),
        _ => false,
    }
}

/// For each parameter of the function `def`, where its body first uses it as an index entry
/// ([`param_read_as_indices`]). A query of its own, so that a caller that passes a mask depends
/// on this small answer and not on the callee's whole body.
#[salsa::tracked(returns(ref))]
pub(crate) fn params_read_as_indices(db: &dyn Db, def: DefId) -> Arc<Vec<Option<RelSpan>>> {
    let lowered = body_query(db, def);
    let body = &lowered.body;
    let uses = body
        .params
        .iter()
        .map(|&param| param_read_as_indices(body, param).map(|expr| body.source_map.expr(expr)));
    Arc::new(uses.collect())
}

/// The first index entry of `body` that is the parameter `param` itself (`x[p]`, `x[:, p]`),
/// which reads it as a tensor of indices: a parameter is never a mask in its own body. Only
/// tensor parameters with axes are looked for (a rank-0 tensor indexes as one position).
fn param_read_as_indices(body: &Body, param: LocalId) -> Option<ExprId> {
    if !matches!(&body.locals[param].ty, TypeRef::Tensor(dims) if !dims.is_empty()) {
        return None;
    }
    body.exprs.iter().find_map(|(_, expr)| {
        let Expr::Index { entries, .. } = expr else { return None };
        entries.iter().find_map(|entry| match *entry {
            IndexEntry::At(at) => match body.exprs[at] {
                Expr::Name { local: Some(local), .. } if local == param => Some(at),
                _ => None,
            },
            _ => None,
        })
    })
}

/// The local an assignment target writes into: `x` of `x`, `x[i]`, `x[i][j]`.
fn root_local(body: &Body, target: ExprId) -> Option<LocalId> {
    let mut current = target;
    loop {
        match body.exprs[current] {
            Expr::Index { base, .. } => current = base,
            Expr::Name { local, .. } => return local,
            _ => return None,
        }
    }
}
