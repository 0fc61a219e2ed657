//! Helpers shared by the execution API's integration tests: scratch directories and programs
//! loaded and checked from them.

use std::path::{Path, PathBuf};

use hir::{Database, Severity, SourceFile};

/// A fresh scratch directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nabla-exec-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|err| panic!("{err}"));
    dir
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
