//! `cargo xtask fuzz [--seconds N] [--seed N] [TARGET...]`: runs the coverage-guided fuzz targets of `fuzz/`
//! (every target, or those named) for N seconds each, one after the other, and prints what each
//! reached. `cargo xtask test` runs it for a few seconds per target, with a fixed seed, as a
//! smoke test.
//!
//! The targets are built with `cargo fuzz` (installed when missing) on the stable toolchain:
//! `RUSTC_BOOTSTRAP=1` lets it take the unstable flags cargo-fuzz passes, and without a sanitizer
//! (`-s none`), as the code under test is safe Rust and the sanitizer halves the executions per
//! second. Each target's corpus, `fuzz/corpus/TARGET/`, is seeded with every `.nb` program of the
//! test data and examples, the target's own seeds in `fuzz/seeds/TARGET/` (inputs no test program
//! is, such as a language-server session) and the earlier findings in `fuzz/regressions/TARGET/`;
//! the corpus, what libFuzzer finds (`fuzz/artifacts/TARGET/`) and the log of each target's last
//! run (`fuzz/target/logs/TARGET.log`) are not committed. A finding fails the run and names the input that reproduces it.

use std::{
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

/// Seconds per target when none are given.
const DEFAULT_SECONDS: u64 = 60;

/// Seconds per target in `cargo xtask test`: enough to replay the corpus and mutate it a while,
/// so that a regression fails CI.
const SMOKE_SECONDS: u64 = 20;

/// A single input running longer than this is reported as a hang.
const TIMEOUT_SECONDS: u64 = 10;

/// Directories whose `.nb` files (recursively) seed every corpus.
const SEED_DIRS: &[&str] = &["crates", "examples"];

/// The random seed of the smoke run. A fixed seed makes libFuzzer mutate the same way on every
/// run, so CI replays one sequence of inputs (checked clean when it was committed) rather than
/// finding something new at random; the long runs of `cargo xtask fuzz` explore with a fresh
/// seed each time. (The `lsp` target runs the server on threads, so its coverage, and with it
/// the sequence, can still vary a little.)
const SMOKE_SEED: &str = "1";

/// The short run of every target that `cargo xtask test` does.
pub fn smoke(root: &Path) -> Result<(), String> {
    let args = ["--seconds", &SMOKE_SECONDS.to_string(), "--seed", SMOKE_SEED].map(String::from);
    run(root, &args)
}

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let mut seconds = DEFAULT_SECONDS;
    let mut seed = None;
    let mut wanted = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => {
                let value = args.next().ok_or("--seconds needs a number")?;
                seconds = value.parse().map_err(|_| format!("--seconds {value}: not a number"))?;
            }
            "--seed" => {
                let value = args.next().ok_or("--seed needs a number")?;
                let number: u32 =
                    value.parse().map_err(|_| format!("--seed {value}: not a number"))?;
                seed = Some(number);
            }
            name => wanted.push(name.to_owned()),
        }
    }
    ensure_cargo_fuzz()?;
    let fuzz_dir = root.join("fuzz");
    let all = list_targets(root)?;
    if let Some(unknown) = wanted.iter().find(|name| !all.contains(name)) {
        return Err(format!("no fuzz target {unknown}; the targets are {}", all.join(", ")));
    }
    let targets = if wanted.is_empty() { all } else { wanted };
    eprintln!("==> building the fuzz targets");
    super::run(cargo_fuzz(root).args(["build", "-s", "none"]))?;
    let seeds = seed_programs(root);
    let mut reports = Vec::new();
    for target in &targets {
        let corpus = fuzz_dir.join("corpus").join(target);
        let own = [fuzz_dir.join("seeds").join(target), fuzz_dir.join("regressions").join(target)];
        seed_corpus(root, &corpus, &seeds, &own)?;
        eprintln!("==> fuzzing {target} for {seconds} s");
        reports.push(run_target(root, target, &corpus, seconds, seed)?);
    }
    eprintln!(
        "{:<10} {:>12} {:>8} {:>7} {:>8} {:>8}",
        "target", "executions", "exec/s", "cov", "ft", "corpus"
    );
    for r in &reports {
        eprintln!(
            "{:<10} {:>12} {:>8} {:>7} {:>8} {:>8}",
            r.target, r.executions, r.per_second, r.cov, r.features, r.corpus
        );
    }
    Ok(())
}

/// What one run reached, from libFuzzer's last status line and final statistics.
struct Report {
    target: String,
    executions: String,
    per_second: String,
    cov: String,
    features: String,
    corpus: String,
}

fn run_target(
    root: &Path,
    target: &str,
    corpus: &Path,
    seconds: u64,
    seed: Option<u32>,
) -> Result<Report, String> {
    let artifacts = root.join("fuzz/artifacts").join(target);
    // Not among the artifacts: cargo-fuzz takes the newest file there for the failing input.
    let logs = root.join("fuzz/target/logs");
    fs::create_dir_all(&logs).map_err(|err| format!("cannot create {}: {err}", logs.display()))?;
    let log_path = logs.join(format!("{target}.log"));
    let log = fs::File::create(&log_path)
        .map_err(|err| format!("cannot create {}: {err}", log_path.display()))?;
    let status = cargo_fuzz(root)
        .args(["run", "-s", "none", target])
        .arg(corpus)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .args(seed.map(|seed| format!("-seed={seed}")))
        .arg(format!("-timeout={TIMEOUT_SECONDS}"))
        .arg(format!("-dict={}", root.join("fuzz/nabla.dict").display()))
        .arg("-print_final_stats=1")
        .stdout(Stdio::null())
        .stderr(log)
        .status()
        .map_err(|err| format!("cannot start cargo fuzz: {err}"))?;
    let text = fs::read_to_string(&log_path).unwrap_or_default();
    if !status.success() {
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(40)..].join("\n");
        return Err(format!(
            "fuzz target {target} found a problem ({status}):\n{tail}\n\n\
             The input is in {artifacts}/ (the full log: {log}). Reproduce it with\n    \
             RUSTC_BOOTSTRAP=1 cargo fuzz run -s none {target} ARTIFACT\n\
             shrink it with `cargo fuzz tmin -s none {target} ARTIFACT`, fix the bug, and keep the \
             input as fuzz/regressions/{target}/NAME so that `cargo test` replays it.",
            artifacts = artifacts.display(),
            log = log_path.display(),
        ));
    }
    let status_line = text.lines().rev().find(|line| line.contains(" cov: ")).unwrap_or_default();
    let field = |name: &str| after(status_line, name).unwrap_or("?").to_owned();
    let stat =
        |name: &str| text.lines().find_map(|line| after(line, name)).unwrap_or("?").to_owned();
    Ok(Report {
        target: target.to_owned(),
        executions: stat("stat::number_of_executed_units:"),
        per_second: stat("stat::average_exec_per_sec:"),
        cov: field("cov:"),
        features: field("ft:"),
        corpus: field("corp:"),
    })
}

/// The word after `name` in `line`.
fn after<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(name)? + name.len();
    line[start..].split_whitespace().next()
}

/// `cargo fuzz` in the project root, with the stable toolchain allowed cargo-fuzz's flags.
fn cargo_fuzz(root: &Path) -> Command {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command.arg("fuzz").current_dir(root).env("RUSTC_BOOTSTRAP", "1");
    command
}

fn ensure_cargo_fuzz() -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let present = Command::new(&cargo)
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if present {
        return Ok(());
    }
    eprintln!("==> installing cargo-fuzz (missing)");
    super::run(Command::new(cargo).args(["install", "cargo-fuzz", "--locked"]))
}

fn list_targets(root: &Path) -> Result<Vec<String>, String> {
    let output = cargo_fuzz(root)
        .arg("list")
        .output()
        .map_err(|err| format!("cannot start cargo fuzz list: {err}"))?;
    if !output.status.success() {
        return Err(format!(
            "cargo fuzz list failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&output.stdout).split_whitespace().map(str::to_owned).collect())
}

/// Every `.nb` file under the seed directories, outside `target/` and `node_modules/`.
fn seed_programs(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack: Vec<PathBuf> = SEED_DIRS.iter().map(|dir| root.join(dir)).collect();
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                if !matches!(entry.file_name().to_str(), Some("target" | "node_modules")) {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "nb") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Copies the seeds, and every file of the target's `own` directories (its own seeds and its
/// earlier findings), into its corpus under names that say where they came from, so that runs
/// start from the test programs.
fn seed_corpus(
    root: &Path,
    corpus: &Path,
    seeds: &[PathBuf],
    own: &[PathBuf],
) -> Result<(), String> {
    fs::create_dir_all(corpus)
        .map_err(|err| format!("cannot create {}: {err}", corpus.display()))?;
    let mut sources: Vec<PathBuf> = seeds.to_vec();
    for dir in own {
        if let Ok(entries) = fs::read_dir(dir) {
            sources.extend(entries.filter_map(Result::ok).map(|entry| entry.path()));
        }
    }
    for source in sources {
        let relative = source.strip_prefix(root).unwrap_or(&source);
        let name = format!("seed-{}", relative.display()).replace(['/', '\\'], "_");
        let copy = corpus.join(name);
        if !copy.exists() {
            fs::copy(&source, &copy)
                .map_err(|err| format!("cannot copy {} to the corpus: {err}", source.display()))?;
        }
    }
    Ok(())
}
