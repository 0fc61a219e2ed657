//! Automatic differentiation: the tape of the program (`var`, `backward`, `grad(x)`) and
//! differentiation as a construct (`grad(f)`, `jvp`, `vjp`, `hessian`, `jacobian`), nested to any
//! order, plus the finite-difference `gradcheck`.
//!
//! The design follows HIPS autograd's boxes and traces (Maclaurin et al.) with a flat tape per
//! level in place of a graph of objects:
//!
//! - Level 0 is the program tape; each transform opens the next level while it runs. A tracked
//!   value is a box naming its level and node (see `value`); a value tracked at several levels is
//!   a box of a box.
//! - An operation is recorded only when an operand is tracked at a live level, at the highest such
//!   level, with its primal computed by the same operation on the operands unboxed at that level,
//!   so lower levels record it too. Each level's records are appended in execution order (already
//!   topological) and its backward pass walks them once in reverse with one rule per operation
//!   (`backward`), accumulating into a store that zero-fills on first use. A record is an `Op`
//!   (`op.rs`, which also says how to add one); scalar operations on floats tracked at one level
//!   record their partial derivatives as numbers (`Op::Scalar1`, `Op::Scalar2`), which `store.rs`
//!   packs into 8-byte words, and the interpreter fuses chains of them into one record
//!   (`Tape::fuse1`). The other rules are built from the same differentiable operations, so
//!   enclosing levels record the backward pass and higher derivatives come out right for every
//!   primitive.
//! - `backward` releases the program tape by moving its serial base, so stale boxes turn into
//!   constants without anyone rewriting them, and `var` slots are re-leafed lazily
//!   ([`Tape::refresh_var`]); `tape.rs` explains the choice.
//! - `backward` is only allowed at the program level (an error inside a transform); transforms may
//!   run anywhere, including in a training loop that calls `backward`, and their results are
//!   recorded on the program tape when their arguments depend on a `var`.
//!
//! The autodiff layer knows values, tensors and contractions; it knows nothing of syntax or the
//! interpreter, which reaches it through the `ops` functions, [`Tape`] and the drivers, and
//! attaches spans to its [`AdError`]s.

mod adjoints;
mod backward;
mod chunk;
mod decompositions;
mod error;
mod op;
mod store;
mod tape;
mod trace;
mod transform;

#[cfg(test)]
mod tests;

pub use error::{AdError, AdErrorKind};
pub use tape::{ProgramPass, Tape};
pub use trace::{
    GraphInput, GraphNode, GraphOptions, InputSource, Site, Summary, TapeGraph, TraceOptions,
};
pub use transform::{
    AdContext, Function, GradcheckConfig, GradcheckElement, GradcheckReport, grad, gradcheck,
    gradcheck_in, hessian, jacobian, jvp, jvp_in, program_backward, value_and_grad, vjp, vjp_in,
};

pub use op::Rule;
pub(crate) use op::{Arg, BinaryValues, Kind, Op};
pub(crate) use tape::{Lifted, LiftedVec, Term};
