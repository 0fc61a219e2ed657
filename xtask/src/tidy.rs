//! Repository hygiene checked under `cargo test`: every Rust file opens with a `//!` doc comment,
//! no line has trailing whitespace, no test is silenced with `#[ignore]` or `#[should_panic]`,
//! every `unsafe` block carries its own `// SAFETY:` comment, the crates below the interpreter
//! stay below it (`tensor`, `einsum-notation` and `index-rules` depend on neither `hir` nor
//! `exec`, in their manifests or their code), and `hir` is a boundary: its modules are private,
//! other crates name only what `hir/src/lib.rs` exports, and only `syntax` and `hir` read the
//! syntax of dimensions, so sizes are resolved once, in `hir`.

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
    problems.extend(check_safety_comments(path, text));
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

/// `unsafe` blocks without a `// SAFETY:` comment of their own: on the line itself, or in the
/// comment lines just above the statement the block is part of (a statement may span lines
/// before the block). A comment is used by one block only, so two blocks need two comments.
fn check_safety_comments(path: &Path, text: &str) -> Vec<String> {
    let marker = concat!("unsafe", " {");
    let lines: Vec<&str> = text.lines().collect();
    let mut problems = Vec::new();
    // The line of the last comment a block used, so that the next block needs its own.
    let mut used = None;
    for (i, line) in lines.iter().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        if !code.contains(marker) {
            continue;
        }
        let mut found = line.contains("SAFETY:").then_some(i);
        let mut k = i;
        while found.is_none() && k > 0 && i - k < 40 {
            k -= 1;
            let above = lines[k].trim();
            let comment = above.starts_with("//");
            // Comments and attributes above, and earlier lines of the same statement (which end
            // neither a statement nor a block), belong to the block.
            let continuation = !above.is_empty()
                && !above.ends_with(';')
                && !above.ends_with('}')
                && !above.ends_with('{');
            if comment && above.contains("SAFETY:") {
                found = Some(k);
            } else if !(comment || above.starts_with("#[") || continuation) {
                break;
            }
        }
        match found {
            Some(comment) if used != Some(comment) => used = Some(comment),
            _ => problems.push(format!(
                "{}:{}: `unsafe` block without a `// SAFETY:` comment of its own",
                path.display(),
                i + 1
            )),
        }
    }
    problems
}

/// Crates that must not depend on the checker or the interpreter, and the crates they must not
/// name: the tensor engine is the seam a second backend would use, and the einsum notation and
/// the indexing rules are shared by the checker and the engine.
const LOWER_CRATES: [(&str, &[&str]); 3] = [
    ("crates/tensor", &["hir", "exec", "syntax"]),
    ("crates/einsum-notation", &["hir", "exec"]),
    ("crates/index-rules", &["hir", "exec", "tensor"]),
];

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

/// Problems with `hir` as a boundary, as messages: a `pub mod` in `hir/src/lib.rs` (its modules
/// are private and `lib.rs` re-exports the API), a path into one of its modules from another
/// crate (`hir::body::Expr`, or `body::Expr` inside `use hir::{...}`), and dimension syntax
/// (`ast::Dim`) read outside `syntax` and `hir`, which would resolve sizes a second time.
pub fn check_hir_boundary(root: &Path) -> Vec<String> {
    let lib = Path::new("crates/hir/src/lib.rs");
    let text = fs::read_to_string(root.join(lib)).unwrap_or_default();
    let mut problems = check_hir_lib(lib, &text);
    for path in rust_files(root) {
        let relative = path.strip_prefix(root).unwrap_or(&path);
        if relative.starts_with("crates/hir/src") || relative.starts_with("xtask/src/tidy.rs") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap_or_default();
        problems.extend(check_hir_paths(relative, &text));
        if !relative.starts_with("crates/syntax") && !relative.starts_with("crates/hir") {
            problems.extend(check_dimension_syntax(relative, &text));
        }
    }
    problems
}

/// `pub mod` declarations in `hir/src/lib.rs`.
fn check_hir_lib(path: &Path, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.trim_start().starts_with("pub mod "))
        .map(|(i, _)| {
            format!(
                "{}:{}: a public module of `hir`; make it `pub(crate)` and re-export from \
                 `lib.rs` what other crates need",
                path.display(),
                i + 1
            )
        })
        .collect()
}

/// Paths into `hir`'s modules: `hir::` followed by a lowercase segment and `::`, directly or
/// inside a `use hir::{...}` group.
fn check_hir_paths(path: &Path, text: &str) -> Vec<String> {
    let code = strip_comments(text);
    let mut problems = Vec::new();
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    for (at, _) in code.match_indices("hir::") {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let rest = &code[at + "hir::".len()..];
        let segments: Vec<(usize, &str)> = if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            let start = at + "hir::{".len();
            module_segments(&group[..end]).into_iter().map(|(i, s)| (start + i, s)).collect()
        } else {
            let start = at + "hir::".len();
            let name_len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(0);
            let is_module = rest[name_len..].starts_with("::")
                && !rest[name_len..].starts_with("::<")
                && rest.starts_with(|c: char| c.is_ascii_lowercase());
            if is_module { vec![(start, &rest[..name_len])] } else { Vec::new() }
        };
        for (at, module) in segments {
            problems.push(format!(
                "{}:{}: names `hir::{module}::`, a module of `hir`; use what `hir` exports \
                 at its root",
                path.display(),
                line_of(at)
            ));
        }
    }
    problems
}

/// The lowercase segments followed by `::` in the text of a `use` group, with their offsets.
fn module_segments(group: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (at, _) in group.match_indices("::") {
        let start =
            group[..at].rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        let name = &group[start..at];
        let after_path = group[..start].ends_with("::");
        if !after_path && name.starts_with(|c: char| c.is_ascii_lowercase()) && name != "self" {
            out.push((start, name));
        }
    }
    out
}

/// Dimension syntax read outside `syntax` and `hir`.
fn check_dimension_syntax(path: &Path, text: &str) -> Vec<String> {
    let code = strip_comments(text);
    let mut problems = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let reads = line.match_indices("ast::Dim").any(|(at, _)| {
            let after = line[at + "ast::Dim".len()..].chars().next();
            !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        });
        if reads {
            problems.push(format!(
                "{}:{}: reads the syntax of a dimension; its sizes are resolved in `hir` \
                 (`Local::ty`, `BodySourceMap::size_uses`)",
                path.display(),
                i + 1
            ));
        }
    }
    problems
}

/// The text with `//` comments blanked out, lines kept.
fn strip_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
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
    fn safety_comments_are_required_once_per_block() {
        let block = concat!("unsafe", " {");
        let text = format!(
            "fn f() {{\n    // SAFETY: the pointer is valid.\n    let x = {block} *p }};\n    let y =\n        {block} *q }};\n    // SAFETY: the first.\n    // more words\n    let z =\n        {block} *r }};\n}}\n"
        );
        let problems = check_safety_comments(Path::new("x.rs"), &text);
        assert_eq!(problems, ["x.rs:5: `unsafe` block without a `// SAFETY:` comment of its own"]);
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
    fn hir_is_a_boundary() {
        let problems = check_hir_boundary(&crate::project_root());
        assert!(problems.is_empty(), "hir boundary problems:\n{}", problems.join("\n"));
    }

    #[test]
    fn hir_boundary_flags_what_it_should() {
        let lib = "pub mod body;\npub(crate) mod infer;\nmod literal;\n";
        assert_eq!(check_hir_lib(Path::new("lib.rs"), lib).len(), 1);
        let code = "use hir::{Ty, body::{Expr, Literal}, Dim::Known};\n\
                    let t = hir::infer::ty_of_ref(&r);\nlet b = hir::body(db, def);\n\
                    // hir::body::Expr in a comment\nlet e: hir::Expr = x; mir::body::y();\n\
                    use hir::{\n    db::{item_tree},\n};\n";
        let problems = check_hir_paths(Path::new("x.rs"), code);
        let lines: Vec<&str> = problems.iter().map(|p| p.split(':').nth(1).unwrap_or("")).collect();
        assert_eq!(lines, ["1", "2", "7"], "{problems:?}");
        let syntax = "fn f(d: ast::Dim) {}\nlet e = ast::DimList::cast(n);\n";
        assert_eq!(check_dimension_syntax(Path::new("x.rs"), syntax).len(), 1);
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
