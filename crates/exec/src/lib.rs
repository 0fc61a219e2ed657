//! Runs checked Nabla programs: values, `ndarray` + OpenBLAS tensors, the autodiff tape and the
//! built-ins. It knows no source text beyond the spans it reports in errors.

extern crate blas_src;

pub mod autodiff;
pub mod code;
pub mod einsum;
pub mod error;
pub mod interp;
pub mod lower;
pub mod ops;
pub mod run;
pub mod tensor;
pub mod value;
