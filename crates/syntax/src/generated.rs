//! Code generated from `nabla.ungram` by `cargo xtask codegen`; a test fails when it is stale.

pub(crate) mod kinds;
pub(crate) mod nodes;
