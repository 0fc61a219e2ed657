//! Measures `nabla test` on 500 trivial tests: writes them to a temporary directory, runs the
//! `nabla` binary built beside this example (build it first: `cargo build -p cli`, or
//! `--release` for both) with one worker and with every core, and prints the wall time and the
//! time per core. `cargo run -p cli --example test_runner_500 [--release]`.

use std::{path::PathBuf, process::Command, time::Instant};

use tempfile::TempDir;

fn main() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|err| err.to_string())?;
    // target/<profile>/examples/test_runner_500 -> target/<profile>/nabla
    let nabla: PathBuf = exe
        .parent()
        .and_then(|examples| examples.parent())
        .map(|profile| profile.join("nabla"))
        .ok_or("cannot find the target directory")?;
    if !nabla.exists() {
        return Err(format!("{} does not exist: build the cli first", nabla.display()));
    }
    // Removed when `dir` is dropped, on an early return too.
    let dir = TempDir::with_prefix("nabla-test-500-").map_err(|err| err.to_string())?;
    let program: String = (0..500)
        .map(|i| format!("test \"trivial {i}\" {{\n    assert_eq({i} + 1, {});\n}}\n\n", i + 1))
        .collect();
    std::fs::write(dir.path().join("trivial.nb"), program).map_err(|err| err.to_string())?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    for jobs in [1, cores] {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = Instant::now();
            let output = Command::new(&nabla)
                .args(["test", "-j", &jobs.to_string()])
                .current_dir(dir.path())
                .output()
                .map_err(|err| format!("cannot run {}: {err}", nabla.display()))?;
            let elapsed = start.elapsed().as_secs_f64();
            let stdout = String::from_utf8_lossy(&output.stdout);
            if !stdout.ends_with("test result: 500 passed, 0 failed\n") {
                return Err(format!("unexpected output:\n{stdout}"));
            }
            best = best.min(elapsed);
        }
        println!(
            "500 trivial tests, {jobs} worker(s): {:.3} s wall, {:.3} s wall x cores used",
            best,
            best * jobs as f64
        );
    }
    Ok(())
}
