//! Repository hygiene checked under `cargo test`: every Rust file opens with a `//!` doc comment,
//! no line has trailing whitespace, and no test is silenced with `#[ignore]` or `#[should_panic]`.

use std::{
    fs,
    path::{Path, PathBuf},
};

/// Rust files of the workspace, outside `target/` and `node_modules/`.
fn rust_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if !matches!(
                    name.as_ref(),
                    "target" | "node_modules" | ".git" | "corpus" | "artifacts"
                ) {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Problems with one file's text, as messages.
pub fn check_file(path: &Path, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if !text.starts_with("//!") {
        problems.push(format!("{}: does not start with a `//!` doc comment", path.display()));
    }
    // The markers are split so that this file does not flag itself.
    let ignore = concat!("#[", "ignore");
    let should_panic = concat!("#[", "should_panic");
    for (i, line) in text.lines().enumerate() {
        let at = format!("{}:{}", path.display(), i + 1);
        if line.ends_with(' ') || line.ends_with('\t') {
            problems.push(format!("{at}: trailing whitespace"));
        }
        if line.trim_start().starts_with(ignore) {
            problems.push(format!("{at}: ignored test; fix it or delete it"));
        }
        if line.trim_start().starts_with(should_panic) {
            problems.push(format!(
                "{at}: `should_panic` test; input must never panic, assert an error value"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_is_tidy() {
        let root = crate::project_root();
        let mut problems = Vec::new();
        for path in rust_files(&root) {
            let text = fs::read_to_string(&path).unwrap_or_default();
            let relative = path.strip_prefix(&root).unwrap_or(&path);
            problems.extend(check_file(relative, &text));
        }
        assert!(problems.is_empty(), "tidy problems:\n{}", problems.join("\n"));
    }

    #[test]
    fn tidy_flags_what_it_should() {
        let text = format!("fn f() {{}} \n{}]\n", concat!("#[", "ignore"));
        let problems = check_file(Path::new("x.rs"), &text);
        assert_eq!(problems.len(), 3, "{problems:?}");
    }

    #[test]
    fn generated_syntax_is_fresh() {
        let root = crate::project_root();
        if let Err(message) = crate::codegen::run(&root, crate::codegen::Mode::Check) {
            panic!("{message}");
        }
    }
}
