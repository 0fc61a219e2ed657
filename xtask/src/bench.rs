//! `cargo xtask bench`: runs the benchmarks and writes their tables to `docs/performance.md`.
//!
//! Each benchmark is a `harness = false` bench target that prints a Markdown section on standard
//! output; this command runs the ones asked for (all by default), in release mode, and puts the
//! sections under a description of the machine they ran on.

use std::{fs, path::Path, process::Command};

/// Bench targets: (name on the command line, package, bench target).
const BENCHES: &[(&str, &str, &str)] = &[("parse", "syntax", "parse")];

pub fn run(root: &Path, names: &[String]) -> Result<(), String> {
    let selected: Vec<_> = BENCHES
        .iter()
        .filter(|(name, _, _)| names.is_empty() || names.iter().any(|n| n == name))
        .collect();
    if selected.is_empty() {
        let known: Vec<_> = BENCHES.iter().map(|(name, _, _)| *name).collect();
        return Err(format!(
            "no benchmark named {}; known: {}",
            names.join(", "),
            known.join(", ")
        ));
    }
    let mut sections = Vec::new();
    for (name, package, target) in selected {
        eprintln!("==> bench {name}");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let output = Command::new(cargo)
            .args(["bench", "--quiet", "-p", package, "--bench", target])
            .current_dir(root)
            .output()
            .map_err(|err| format!("cannot run cargo bench: {err}"))?;
        if !output.status.success() {
            return Err(format!(
                "bench {name} failed:\n{}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        print!("{text}");
        sections.push(text);
    }
    let page = format!(
        "# Performance\n\nWritten by `cargo xtask bench`; do not edit by hand. Figures are medians \
         of repeated runs after a warm-up.\n\n## Machine\n\n{}\n\n{}",
        machine_description(),
        sections.join("\n")
    );
    let path = root.join("docs/performance.md");
    fs::write(&path, page).map_err(|err| format!("cannot write {}: {err}", path.display()))
}

fn machine_description() -> String {
    let cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split(':').nth(1))
                .map(|name| name.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let rustc = Command::new("rustc")
        .arg("--version")
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_default();
    format!("- CPU: {cpu}, {cores} cores available\n- Compiler: {rustc}")
}
