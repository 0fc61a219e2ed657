//! Every operation on values that the interpreter calls, each differentiable where the language
//! says so: element-wise arithmetic and functions, products, reductions, shapes, indexing and
//! indexed assignment, linear algebra and contractions.
//!
//! Every operation takes the [`Tape`](crate::autodiff::Tape) and its operands by value (so a
//! tensor nothing else shares is overwritten in place) and returns the result or an
//! [`AdError`](crate::autodiff::AdError). An operation records itself only when an operand is
//! tracked at a live level; untracked operands cost one branch. The recording scheme (levels,
//! boxes, stale values) is described in `autodiff`.
//!
//! This module knows values and tensors; it does not know statements, variables or source text.

mod elementwise;
mod index;
pub(crate) mod library;
pub(crate) mod linalg;
pub(crate) mod plain;
pub(crate) mod rearrange;
mod reduce;
pub(crate) mod scalar;
pub(crate) mod shape;

pub use elementwise::{
    add, binary, div, mul, neg, pow, scaled_update, select, sub, unary, unary_fused,
};
pub use index::{add_at, gather, get, scatter_add, set, set_gathered, update_at, update_gathered};
pub use linalg::{
    cholesky, det, eigh, einsum, einsum_ellipsis, inv, matmul, pinv, qr, slogdet, solve, svd,
};
pub use reduce::{cumsum, log_softmax, reduce, softmax};
pub use shape::{
    RowStack, broadcast_to, concat, diag, expand_dims, from_elements, full, permute, reshape,
    stack, stack_many, sum_to_shape, to_float, to_tensor, trace, transpose,
};

pub(crate) use library::convolution;
pub(crate) use linalg::contract;
pub(crate) use reduce::{prod_others, prod_pairs};
pub(crate) use shape::swap_last_two;
