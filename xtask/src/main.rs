//! Project automation, run as `cargo xtask <command>`:
//!
//! - `demo`: the main demo.
//! - `codegen [--check]`: regenerate the syntax kinds and typed AST from `nabla.ungram`.
//! - `test`: every check CI runs, after installing the system libraries that are missing.
//! - `docs`: checks (and runs) the Nabla code blocks of `README.md` and `docs/` with `nabla`.
//! - `fuzz [--seconds N] [--seed N] [TARGET...]`: the fuzz targets of `fuzz/`, N seconds each.
//! - `bench`: the benchmarks, written to `docs/performance.md` (with `--baseline PATH`, this build
//!   against another `nabla` binary, written to `target/bench-baseline.md`).
//! - `dist`: the release binary and the VS Code extension's `.vsix`, in `target/dist/`.

mod bench;
mod codegen;
mod docs;
mod fuzz;
mod system;
#[cfg(test)]
mod tidy;

use std::{
    path::{Path, PathBuf},
    process::{Command, ExitCode},
};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = project_root();
    let result = match args.first().map(String::as_str) {
        Some("codegen") => {
            let mode = if args.iter().any(|arg| arg == "--check") {
                codegen::Mode::Check
            } else {
                codegen::Mode::Write
            };
            codegen::run(&root, mode)
        }
        Some("test") => run_tests(&root),
        Some("docs") => docs_check(&root),
        Some("bench") => bench::run(&root, &args[1..]),
        Some("fuzz") => fuzz::run(&root, &args[1..]),
        Some("demo") => demo(&root),
        Some("dist") => dist(&root),
        Some("install-deps") => system::ensure_libraries(),
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

const USAGE: &str = "usage: cargo xtask <demo | test | docs | codegen [--check] | bench [NAME...] \
                     | fuzz [--seconds N] [--seed N] [TARGET...] | dist | install-deps>";

/// Where cargo puts its builds: `CARGO_TARGET_DIR` when set (relative to the root if relative),
/// else `target/` in the root.
fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => root.join(dir),
        _ => root.join("target"),
    }
}

fn project_root() -> PathBuf {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned());
    Path::new(&manifest).parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
}

/// The main demo: trains the two-layer digits classifier of `examples/digits.nb` and prints its
/// training progress and accuracy.
fn demo(root: &Path) -> Result<(), String> {
    system::ensure_libraries()?;
    cargo(root, &["run", "--quiet", "--release", "-p", "cli", "--", "run", "examples/digits.nb"])
}

/// The release binary and the VS Code extension packaged as a `.vsix`, both in `target/dist/`.
fn dist(root: &Path) -> Result<(), String> {
    system::ensure_libraries()?;
    system::ensure_node()?;
    cargo(root, &["build", "--release", "-p", "cli"])?;
    let out = target_dir(root).join("dist");
    std::fs::create_dir_all(&out)
        .map_err(|err| format!("cannot create {}: {err}", out.display()))?;
    let binary = target_dir(root).join("release/nabla");
    std::fs::copy(&binary, out.join("nabla"))
        .map_err(|err| format!("cannot copy {}: {err}", binary.display()))?;
    let vscode = root.join("editors/vscode");
    let version = env!("CARGO_PKG_VERSION");
    let vsix = out.join(format!("nabla-{version}.vsix"));
    run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&vscode))?;
    run(Command::new("npm")
        .args(["run", "package", "--", "--out"])
        .arg(&vsix)
        .current_dir(&vscode))?;
    eprintln!("==> {} and {}", out.join("nabla").display(), vsix.display());
    Ok(())
}

/// Everything CI checks, in order of how fast each step fails.
fn run_tests(root: &Path) -> Result<(), String> {
    system::ensure_libraries()?;
    step("codegen is fresh", || codegen::run(root, codegen::Mode::Check))?;
    step("cargo fmt --check", || cargo(root, &["fmt", "--all", "--check"]))?;
    step("cargo clippy", || {
        cargo(root, &["clippy", "--workspace", "--all-targets", "--", "-D", "warnings"])
    })?;
    // The Neovim test runs when Neovim is there or can be installed, and is then required to.
    let neovim = system::ensure_neovim()
        .inspect_err(|err| {
            eprintln!("==> Neovim cannot be installed, so the Neovim test is skipped: {err}");
        })
        .is_ok();
    step("cargo test", || {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let mut command = Command::new(cargo);
        command.args(["test", "--workspace"]).current_dir(root);
        if neovim {
            command.env("NABLA_REQUIRE_NVIM", "1");
        }
        run(&mut command)
    })?;
    step("nabla test and nabla run over the examples", || nabla_test_examples(root))?;
    step("nabla check and nabla run over the code blocks of the docs", || docs_check(root))?;
    step("fuzz smoke test", || fuzz::smoke(root))?;
    step("VS Code extension: npm ci && npm test", || vscode_tests(root))?;
    Ok(())
}

/// Runs the test blocks of the example programs, then each program, whose output is shown only
/// when it fails. `figure1.nb` is left out: it is the specification's program, errors included,
/// kept for the parser's golden tests (`figure1_corrected.nb` is the one that runs).
fn nabla_test_examples(root: &Path) -> Result<(), String> {
    cargo(root, &["build", "-p", "cli"])?;
    let dir = root.join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|err| format!("cannot read {}: {err}", dir.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "nb"))
        .filter(|path| path.file_name().is_some_and(|name| name != "figure1.nb"))
        .collect();
    files.sort();
    let nabla = target_dir(root).join("debug/nabla");
    run(Command::new(&nabla).arg("test").args(&files).current_dir(root))?;
    for file in &files {
        let output = Command::new(&nabla)
            .arg("run")
            .arg(file)
            .current_dir(root)
            .output()
            .map_err(|err| format!("cannot start {}: {err}", nabla.display()))?;
        if !output.status.success() {
            return Err(format!(
                "nabla run {} failed with {}:\n{}{}",
                file.display(),
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        eprintln!("nabla run {}: ok", file.strip_prefix(root).unwrap_or(file).display());
    }
    Ok(())
}

/// Checks the Nabla code blocks of the documentation with a debug `nabla` (see `docs.rs`).
fn docs_check(root: &Path) -> Result<(), String> {
    cargo(root, &["build", "-p", "cli"])?;
    docs::check(root, &target_dir(root).join("debug/nabla"))
}

fn vscode_tests(root: &Path) -> Result<(), String> {
    system::ensure_node()?;
    let dir = root.join("editors/vscode");
    run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(&dir))?;
    run(Command::new("npm").arg("test").current_dir(&dir))?;
    // The protocol test talks to a real `nabla lsp`.
    cargo(root, &["build", "-p", "cli"])?;
    let binary = target_dir(root).join("debug/nabla");
    run(Command::new("npm")
        .args(["run", "test:protocol"])
        .env("NABLA_BIN", binary)
        .current_dir(&dir))
}

fn step(name: &str, run: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    eprintln!("==> {name}");
    run().map_err(|err| format!("{name}: {err}"))
}

fn cargo(root: &Path, args: &[&str]) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    run(Command::new(cargo).args(args).current_dir(root))
}

fn run(command: &mut Command) -> Result<(), String> {
    let status = command.status().map_err(|err| format!("cannot start {command:?}: {err}"))?;
    if status.success() { Ok(()) } else { Err(format!("{command:?} failed with {status}")) }
}
