//! ide: see architecture.md.
