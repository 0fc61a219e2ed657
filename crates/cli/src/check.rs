//! `nabla check [PATH ...]`: checks files and directories (recursively, every `.nb` file) and
//! prints the diagnostics rustc-style, or as one JSON array with `--format json`. Exits with 1
//! when there are errors.

use std::{
    io::{IsTerminal, Write},
    path::{Path, PathBuf},
    process::ExitCode,
};

use hir::{Database, Severity};

use crate::{render, source};

/// How `check` prints diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// rustc-style text with the source line and carets.
    Human,
    /// One JSON array of objects {file, line, column, end_line, end_column, severity, code,
    /// message}.
    Json,
}

pub fn run(paths: &[PathBuf], format: Format) -> ExitCode {
    let roots: Vec<PathBuf> =
        if paths.is_empty() { vec![PathBuf::from(".")] } else { paths.to_vec() };
    let mut files = Vec::new();
    let mut failed = false;
    for root in &roots {
        match source::collect(root, &mut files) {
            Ok(()) => {}
            Err(message) => {
                eprintln!("error: {message}");
                failed = true;
            }
        }
    }
    let mut db = Database::default();
    let mut checked = Vec::new();
    for path in &files {
        match db.load_with_imports(path, &mut |p: &Path| source::read(p)) {
            Ok(file) => checked.push(file),
            Err(message) => {
                eprintln!("error: {message}");
                failed = true;
            }
        }
    }
    let mut diagnostics = Vec::new();
    for &file in &checked {
        diagnostics.extend(hir::file_diagnostics(&db, file).iter().cloned());
    }
    let errors = diagnostics.iter().filter(|d| d.severity == Severity::Error).count();
    let warnings = diagnostics.len() - errors;
    let stdout = std::io::stdout();
    let colour = stdout.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let text = match format {
        Format::Json => render::json(&db, &diagnostics),
        Format::Human => {
            let mut text = String::new();
            for diagnostic in &diagnostics {
                text.push_str(&render::human(&db, diagnostic, colour));
                text.push('\n');
            }
            if !diagnostics.is_empty() {
                text.push_str(&render::summary(errors, warnings, colour));
            }
            text
        }
    };
    let mut out = stdout.lock();
    // A closed pipe (`nabla check | head`) is not an error worth reporting.
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    if errors > 0 || failed { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}
