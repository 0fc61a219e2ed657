//! hir: see architecture.md.
