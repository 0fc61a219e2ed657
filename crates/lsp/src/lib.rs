//! lsp: see architecture.md.
