//! Runs checked Nabla programs: lowering to register code, the interpreter, the built-ins and the
//! autodiff tape. Tensors and their kernels (BLAS, LAPACK, the einsum engine) live in the
//! `tensor` crate; this crate knows no source text beyond the spans it reports in errors.
//!
//! ```text
//!            hir (checked bodies, types, shapes)
//!                │  lower::lower_program
//!                ▼
//!            code::Program ── one Unit of register code per definition
//!                │  interp::Machine::run / run_test
//!                ▼
//!   interp ──────────────► ops ──────────► tape ──────────► backward
//!   (instructions)     (differentiable   (records per      (one rule per
//!                       operations on     differentiation   record, in
//!                       values)           level)            reverse)
//!                           │
//!                           ▼
//!                     tensor (kernels)
//! ```
//!
//! Entry points: [`run::run_program`] for hosts (the CLI, the fuzz target);
//! [`session::Session`] for hosts that run a program a piece at a time (the REPL);
//! [`lower::lower_program`] and [`interp::Machine`] (`run`, `run_constants`, `run_test`) for
//! hosts that run tests or inspect the code; [`ops`] and [`autodiff::Tape`] to differentiate
//! from Rust without an interpreter (the autodiff benchmarks do).

pub mod autodiff;
pub mod code;
pub mod error;
pub mod graph;
pub mod interp;
pub mod lower;
pub mod ops;
pub mod plot;
pub mod run;
pub mod session;
pub mod value;
