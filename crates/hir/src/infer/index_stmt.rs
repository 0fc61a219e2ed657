//! Index notation (section 6): index statements such as `C(i,j) += A(i,k) * B(k,j);` (`einsum`
//! is in `einsum.rs`). Every occurrence of a label must range over one extent; labels on the left
//! are distinct and occur on the right.

use rustc_hash::FxHashMap;
use smol_str::SmolStr;

use super::{InferCtx, Resolution};
use crate::{
    body::{Expr, HirSpan, IndexAssignOp, IndexFactor, IndexOperand, IndexStmt},
    diagnostics::Code,
    ty::{Dim, Shape, Ty},
};

/// Where a label was first seen, with the extent it had there.
struct LabelSite {
    dim: Dim,
    span: HirSpan,
    view: String,
}

impl InferCtx<'_> {
    pub(crate) fn infer_index_stmt(&mut self, stmt: &IndexStmt) {
        let target = self.index_operand_dims(&stmt.target, true);
        let mut factors = Vec::new();
        for factor in &stmt.factors {
            match factor {
                IndexFactor::Tensor(view) => {
                    factors.push((view, self.index_operand_dims(view, false)))
                }
                IndexFactor::Scalar(expr) => {
                    let ty = self.infer_expr(*expr);
                    let scalar =
                        matches!(ty, Ty::Int | Ty::Float | Ty::Error) || ty.rank() == Some(0);
                    if !scalar && self.check_value(*expr, &ty) {
                        let span = self.expr_span(*expr);
                        self.report(
                            Code::IndexStmtForm,
                            span,
                            format!("a factor without labels must be a scalar, but this is {ty}"),
                        )
                        .help("label the tensor's axes, as in `A(i, j)`");
                    }
                }
            }
        }
        // Labels on the left: distinct, and each present on the right.
        let mut seen: FxHashMap<&SmolStr, HirSpan> = FxHashMap::default();
        for label in &stmt.target.labels {
            let span = self.span(label.span);
            if let Some(&first) = seen.get(&label.name) {
                self.report(
                    Code::IndexLabelRepeated,
                    span,
                    format!("label `{}` appears twice on the left of this index statement", label.name),
                )
                .label(first, "first here")
                .help("to write a diagonal, use distinct labels and a square operand on the right, as in `d(i) = M(i,i)`");
                continue;
            }
            seen.insert(&label.name, span);
            let on_right = stmt.factors.iter().any(|factor| match factor {
                IndexFactor::Tensor(view) => view.labels.iter().any(|l| l.name == label.name),
                IndexFactor::Scalar(_) => false,
            });
            // A right side that is not a product was reported; its labels are not known.
            let malformed = stmt.factors.iter().any(|factor| {
                matches!(factor, IndexFactor::Scalar(e) if self.body.exprs[*e] == Expr::Missing)
            });
            if !on_right && !malformed && stmt.op != IndexAssignOp::MulAssign {
                self.report(
                    Code::IndexLabelUnbound,
                    span,
                    format!("label `{}` on the left does not occur on the right, so its range is unknown", label.name),
                )
                .help("every label of the left side must index some tensor on the right");
            }
        }
        // One extent per label.
        let mut sites: FxHashMap<SmolStr, LabelSite> = FxHashMap::default();
        let operands = std::iter::once((&stmt.target, target)).chain(factors);
        for (view, dims) in operands {
            let Some(dims) = dims else { continue };
            let view_text = self.source_text(view.span);
            for (label, dim) in view.labels.iter().zip(dims) {
                let span = self.span(label.span);
                match sites.get(&label.name) {
                    Some(site) if site.dim.conflicts(&dim) => {
                        let message = format!(
                            "label `{}` is {} in {} but {dim} in {view_text}",
                            label.name, site.dim, site.view
                        );
                        let first = site.span;
                        let first_dim = site.dim.clone();
                        self.report(Code::IndexLabelExtent, span, message)
                            .label(first, format!("`{}` is {first_dim} here", label.name))
                            .help("every occurrence of a label must range over the same extent");
                    }
                    Some(_) => {}
                    None => {
                        sites.insert(
                            label.name.clone(),
                            LabelSite { dim, span, view: view_text.clone() },
                        );
                    }
                }
            }
        }
    }

    /// The dimensions of a labelled tensor, when its rank is known and matches its labels.
    fn index_operand_dims(&mut self, view: &IndexOperand, is_target: bool) -> Option<Vec<Dim>> {
        let Expr::Name { name, local } = self.body.exprs[view.tensor].clone() else { return None };
        let resolution = match local {
            Some(local) => Some(Resolution::Local(local)),
            None => self.resolve_global(view.tensor, &name),
        };
        let resolution = resolution?;
        self.result.resolutions.insert(view.tensor, resolution);
        let ty = match resolution {
            Resolution::Local(local) => self.result.type_of_local(local).clone(),
            Resolution::Global { def, local } => self.global_ty(def, local),
            Resolution::Function(_) | Resolution::Builtin(_) => {
                let span = self.span(view.span);
                self.report(
                    Code::IndexStmtForm,
                    span,
                    format!("`{name}` is a function, but in an index statement `{name}(...)` must label a tensor"),
                )
                .help("compute the function's result into a tensor variable first");
                return None;
            }
        };
        self.result.expr_types.insert(view.tensor, ty.clone());
        if is_target && !self.check_write(view.tensor) {
            return None;
        }
        let labels = view.labels.len();
        match ty {
            Ty::Tensor(Shape::Ranked(dims)) => {
                if dims.len() != labels {
                    let span = self.span(view.span);
                    let tensor_ty = Ty::tensor(dims.clone());
                    self.report(
                        Code::IndexLabelCount,
                        span,
                        format!(
                            "`{name}` is {tensor_ty} (rank {}), but {labels} label{} index it",
                            dims.len(),
                            if labels == 1 { "" } else { "s" }
                        ),
                    )
                    .help("give one label per axis");
                    return None;
                }
                Some(dims)
            }
            Ty::Float if labels == 0 => Some(Vec::new()),
            Ty::Tensor(Shape::Unranked) | Ty::Error => None,
            other => {
                let span = self.span(view.span);
                self.report(
                    Code::IndexStmtForm,
                    span,
                    format!("`{name}` is {other}; index-labelled views need tensors"),
                );
                None
            }
        }
    }
}
