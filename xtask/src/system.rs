//! Installs what the build and the checks need when it is missing, through `apt-get`, so a fresh
//! Debian machine with only Rust can run them: OpenBLAS with LAPACK and LAPACKE, Node.js, the
//! Lua 5.4 interpreter the benchmarks compare with, and Neovim for the language server's editor
//! test.

use std::process::Command;

/// Debian packages the workspace links against.
const PACKAGES: &[&str] = &["libopenblas-dev", "liblapacke-dev", "pkg-config"];

/// Shared objects whose presence shows the packages are installed.
const LIBRARIES: &[&str] = &["libopenblas.so", "liblapacke.so"];

pub fn ensure_libraries() -> Result<(), String> {
    let missing: Vec<&str> =
        LIBRARIES.iter().copied().filter(|lib| !library_present(lib)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    eprintln!("==> installing {} (missing: {})", PACKAGES.join(" "), missing.join(", "));
    apt_install(PACKAGES)
}

/// Node.js and npm, for the VS Code extension's checks.
pub fn ensure_node() -> Result<(), String> {
    if which("npm") && which("node") {
        return Ok(());
    }
    eprintln!("==> installing nodejs npm (missing)");
    apt_install(&["nodejs", "npm"])
}

/// Debian's Lua 5.4 interpreter, `lua5.4`, for the interpreter benchmarks.
pub fn ensure_lua() -> Result<(), String> {
    if which("lua5.4") {
        return Ok(());
    }
    eprintln!("==> installing lua5.4 (missing)");
    apt_install(&["lua5.4"])
}

/// Neovim, for the test that drives `nabla lsp` from a real editor.
pub fn ensure_neovim() -> Result<(), String> {
    if which("nvim") {
        return Ok(());
    }
    eprintln!("==> installing neovim (missing)");
    apt_install(&["neovim"])
}

fn apt_install(packages: &[&str]) -> Result<(), String> {
    let sudo = !is_root() && which("sudo");
    let apt = |args: &[&str]| -> Result<(), String> {
        let mut command = if sudo { Command::new("sudo") } else { Command::new("apt-get") };
        if sudo {
            command.arg("apt-get");
        }
        command.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        super::run(&mut command)
    };
    apt(&["update", "-qq"])?;
    let mut install = vec!["install", "-y", "-qq"];
    install.extend(packages);
    apt(&install)
}

fn library_present(name: &str) -> bool {
    Command::new("ldconfig")
        .arg("-p")
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).contains(&format!("{name} ")))
        .unwrap_or(false)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
        .unwrap_or(false)
}

fn which(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .map(|output| output.status.success())
        .unwrap_or(false)
}
