//! Helpers shared by the execution API's integration tests: scratch directories and programs
//! loaded and checked from them.

use std::path::Path;

use hir::{Database, Severity, SourceFile};
use tempfile::TempDir;

/// A fresh scratch directory for one test, `nabla-exec-NAME-XXXXXX` in the system temporary
/// directory; it is removed when the guard is dropped, a failing test's included.
pub fn scratch(name: &str) -> TempDir {
    TempDir::with_prefix(format!("nabla-exec-{name}-")).unwrap_or_else(|err| panic!("{err}"))
}

/// Loads `text` as `DIR/main.nb` into a database and checks that it has no errors.
pub fn load(dir: &Path, text: &str) -> (Database, SourceFile) {
    let path = dir.join("main.nb");
    std::fs::write(&path, text).unwrap_or_else(|err| panic!("{err}"));
    let mut db = Database::default();
    let read = &mut |p: &Path| std::fs::read_to_string(p).map_err(|e| e.to_string());
    let main = db.load_with_imports(&path, read).unwrap_or_else(|err| panic!("{err}"));
    for file in db.files() {
        let errors: Vec<_> = hir::file_diagnostics(&db, file)
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.message.clone())
            .collect();
        assert!(errors.is_empty(), "check errors: {errors:?}");
    }
    (db, main)
}
