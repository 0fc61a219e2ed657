//! Repository hygiene checked under `cargo test`: every Rust file opens with a `//!` doc comment,
//! no line has trailing whitespace, no test is silenced with `#[ignore]` or `#[should_panic]`, and
//! the crates below the interpreter stay below it (`tensor` and `einsum-notation` depend on
//! neither `hir` nor `exec`, in their manifests or their code).

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

/// Crates that must not depend on the checker or the interpreter, and the crates they must not
/// name: the tensor engine is the seam a second backend would use, and the einsum notation is
/// shared by the checker and the engine.
const LOWER_CRATES: [(&str, &[&str]); 2] =
    [("crates/tensor", &["hir", "exec", "syntax"]), ("crates/einsum-notation", &["hir", "exec"])];

/// Problems with the dependencies of the crates in [`LOWER_CRATES`], as messages.
pub fn check_layering(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for (dir, forbidden) in LOWER_CRATES {
        let manifest = root.join(dir).join("Cargo.toml");
        let text = fs::read_to_string(&manifest).unwrap_or_default();
        if text.is_empty() {
            problems.push(format!("{dir}/Cargo.toml: missing"));
        }
        problems.extend(check_manifest(Path::new(dir), &text, forbidden));
        for path in rust_files(&root.join(dir)) {
            let text = fs::read_to_string(&path).unwrap_or_default();
            let relative = path.strip_prefix(root).unwrap_or(&path);
            problems.extend(check_imports(relative, &text, forbidden));
        }
    }
    problems
}

/// Dependencies of a manifest on `forbidden` crates, in any dependency table.
fn check_manifest(dir: &Path, text: &str, forbidden: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut in_dependencies = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_dependencies = line.contains("dependencies");
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
        if in_dependencies && forbidden.contains(&name) {
            problems.push(format!("{}/Cargo.toml: depends on `{name}`", dir.display()));
        }
    }
    problems
}

/// Paths into `forbidden` crates in a Rust file (`hir::`, `use exec`).
fn check_imports(path: &Path, text: &str, forbidden: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        for name in forbidden {
            let path_use = format!("{name}::");
            let crate_use = format!("use {name}");
            let named = code.match_indices(&path_use).any(|(at, _)| {
                // `exec::` inside `crate::exec::` or `foo_exec::` is another path.
                let before = code[..at].chars().next_back();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':')
            });
            if named || code.trim_start().starts_with(&crate_use) {
                problems.push(format!("{}:{}: names the `{name}` crate", path.display(), i + 1));
            }
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
    fn lower_crates_stay_below_the_interpreter() {
        let problems = check_layering(&crate::project_root());
        assert!(problems.is_empty(), "layering problems:\n{}", problems.join("\n"));
    }

    #[test]
    fn layering_flags_what_it_should() {
        let manifest = "[dependencies]\nhir.workspace = true\nndarray = \"1\"\n[dev-dependencies]\nexec = { path = \"x\" }\n";
        let problems = check_manifest(Path::new("crates/tensor"), manifest, &["hir", "exec"]);
        assert_eq!(problems.len(), 2, "{problems:?}");
        let code = "use hir::Ty;\nfn f() { exec::run(); }\n// hir::x in a comment\nlet x = crate::exec::y;\n";
        let problems = check_imports(Path::new("x.rs"), code, &["hir", "exec"]);
        assert_eq!(problems.len(), 2, "{problems:?}");
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
