//! The Nabla side: builds the `nabla` binary in release mode and runs benchmark programs as
//! `nabla run --timings-json OUT FILE`, which writes
//! `{"run_seconds": f, "check_seconds": f, "tape_bytes_per_op": f | null, "peak_rss_bytes": f}`
//! to `OUT`, `run_seconds` excluding reading, parsing and checking, `peak_rss_bytes` the high-water
//! mark of the process's resident set. Each program runs once as a warm-up and then
//! [`RUNS`] times; the figures are the medians.

use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use super::json::{self, Value};

/// Measured runs of each program, after one warm-up run.
const RUNS: usize = 5;
/// A run that takes longer than this is stopped and reported as failed.
const TIME_LIMIT: Duration = Duration::from_secs(300);

/// What the page says in every Nabla cell while the interpreter does not exist.
pub const NOT_BUILT: &str = "`nabla run` is not built yet";

/// Median timings of one program.
#[derive(Debug, Clone, Copy)]
pub struct Timings {
    pub run_seconds: f64,
    pub tape_bytes_per_op: Option<f64>,
    pub peak_bytes: Option<f64>,
}

pub struct Nabla {
    binary: PathBuf,
    /// What the progress lines call the binary: `nabla`, or `baseline` for another build.
    name: &'static str,
    /// Why nothing can be measured, when that is so.
    unavailable: Option<String>,
    env: Vec<(String, String)>,
    scratch: PathBuf,
    /// Timings by program and options of `nabla run`.
    cache: HashMap<(&'static str, &'static [&'static str]), Result<Timings, String>>,
}

impl Nabla {
    /// Builds `nabla` and finds out whether it can run programs yet.
    pub fn prepare(root: &Path, env: &[(String, String)]) -> Nabla {
        eprintln!("==> cargo build --release -p cli");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let built = Command::new(cargo)
            .args(["build", "--quiet", "--release", "-p", "cli"])
            .current_dir(root)
            .status()
            .is_ok_and(|status| status.success());
        let binary = root.join("target/release/nabla");
        let unavailable = if !built {
            Some("`cargo build --release -p cli` failed".to_owned())
        } else if !has_run_command(&binary) {
            Some(NOT_BUILT.to_owned())
        } else {
            None
        };
        if let Some(reason) = &unavailable {
            eprintln!("    Nabla side not measured: {reason}");
        }
        Nabla {
            binary,
            name: "nabla",
            unavailable,
            env: env.to_vec(),
            scratch: root.join("target/bench-timings"),
            cache: HashMap::new(),
        }
    }

    /// Another `nabla` binary, such as a release build of an older commit, to measure beside
    /// this one (`cargo xtask bench --baseline`): not built here, only checked to run programs.
    pub fn baseline(root: &Path, binary: &Path, env: &[(String, String)]) -> Result<Nabla, String> {
        if !has_run_command(binary) {
            return Err(format!(
                "the baseline {} cannot run programs (`{0} run --help` fails)",
                binary.display()
            ));
        }
        Ok(Nabla {
            binary: binary.to_path_buf(),
            name: "baseline",
            unavailable: None,
            env: env.to_vec(),
            scratch: root.join("target/bench-timings/baseline"),
            cache: HashMap::new(),
        })
    }

    /// The binary: the release build, or the baseline.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    pub fn unavailable(&self) -> Option<&str> {
        self.unavailable.as_deref()
    }

    /// Forgets the timings measured so far, so that the next round measures every program again.
    pub fn forget(&mut self) {
        self.cache.clear();
    }

    /// The median timings of `nabla run FLAGS bench/<file>`, measured once per round.
    pub fn timings(
        &mut self,
        root: &Path,
        file: &'static str,
        flags: &'static [&'static str],
    ) -> Result<Timings, String> {
        if let Some(reason) = &self.unavailable {
            return Err(reason.clone());
        }
        if let Some(cached) = self.cache.get(&(file, flags)) {
            return cached.clone();
        }
        let shown: String = flags.iter().map(|flag| format!("{flag} ")).collect();
        eprintln!("    {} run {shown}bench/{file}", self.name);
        let result = self.measure(&root.join("bench").join(file), flags);
        if let Err(err) = &result {
            eprintln!("    {} bench/{file}: {err}", self.name);
        }
        self.cache.insert((file, flags), result.clone());
        result
    }

    fn measure(&self, program: &Path, flags: &[&str]) -> Result<Timings, String> {
        fs::create_dir_all(&self.scratch)
            .map_err(|err| format!("cannot create {}: {err}", self.scratch.display()))?;
        let out = self.scratch.join("timings.json");
        let mut runs = Vec::new();
        for run in 0..=RUNS {
            let timings = self.run_once(program, flags, &out)?;
            if run > 0 {
                runs.push(timings);
            }
        }
        let mut seconds: Vec<f64> = runs.iter().map(|t| t.run_seconds).collect();
        let mut bytes: Vec<f64> = runs.iter().filter_map(|t| t.tape_bytes_per_op).collect();
        let mut peaks: Vec<f64> = runs.iter().filter_map(|t| t.peak_bytes).collect();
        Ok(Timings {
            run_seconds: median(&mut seconds).unwrap_or(f64::NAN),
            tape_bytes_per_op: median(&mut bytes),
            peak_bytes: median(&mut peaks),
        })
    }

    /// One run, in the scratch directory, so that a file a flag names is written there.
    fn run_once(&self, program: &Path, flags: &[&str], out: &Path) -> Result<Timings, String> {
        let _ = fs::remove_file(out);
        // A file rather than a pipe, so a chatty failing program cannot block on a full pipe.
        let errors = self.scratch.join("stderr.txt");
        let stderr = fs::File::create(&errors)
            .map_err(|err| format!("cannot create {}: {err}", errors.display()))?;
        let mut command = Command::new(&self.binary);
        cap_memory(&mut command);
        let mut child = command
            .arg("run")
            .arg("--timings-json")
            .arg(out)
            .args(flags)
            .arg(program)
            .current_dir(&self.scratch)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", self.binary.display()))?;
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() > TIME_LIMIT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("stopped after {} s", TIME_LIMIT.as_secs()));
                }
                Ok(None) => thread::sleep(Duration::from_millis(10)),
                Err(err) => return Err(format!("cannot wait for nabla: {err}")),
            }
        };
        if !status.success() {
            let stderr = fs::read_to_string(&errors).unwrap_or_default();
            let first = stderr.lines().find(|line| !line.trim().is_empty()).unwrap_or("");
            return Err(match first.trim() {
                "" => format!("failed ({status})"),
                first => format!("failed ({status}): {first}"),
            });
        }
        let text = fs::read_to_string(out)
            .map_err(|err| format!("no timings file {}: {err}", out.display()))?;
        let value = json::parse(&text)?;
        let run_seconds = value
            .get("run_seconds")
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("no run_seconds in {text}"))?;
        let tape_bytes_per_op = value.get("tape_bytes_per_op").and_then(Value::as_f64);
        let peak_bytes = value.get("peak_rss_bytes").and_then(Value::as_f64);
        Ok(Timings { run_seconds, tape_bytes_per_op, peak_bytes })
    }
}

/// Caps the address space of a `nabla` process that `command` starts at half of the machine's
/// memory. A build that grows without bound (an older one that `--baseline` runs copied a tensor
/// on every element write and reached 24 GB) then fails its allocation and its row reports the
/// failure, instead of the kernel's out-of-memory killer stopping it or another process. The
/// largest peak that docs/performance.md reports is 247 MB.
pub fn cap_memory(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let Some(bytes) = crate::bench::memory_bytes().map(|total| total / 2) else { return };
    let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
    // SAFETY: the closure runs in the child between `fork` and `exec`, where only
    // async-signal-safe functions may be called: it calls `setrlimit` (one system call) on a
    // value copied in before the fork, and allocates nothing.
    unsafe {
        command.pre_exec(move || match libc::setrlimit(libc::RLIMIT_AS, &limit) {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        });
    }
}

/// Whether the binary knows `run` yet: `nabla run --help` fails while it does not.
fn has_run_command(binary: &Path) -> bool {
    Command::new(binary)
        .args(["run", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The median of `values`, `None` when there are none.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn a_capped_process_has_half_the_memory_as_its_address_space() {
        let mut command = std::process::Command::new("sh");
        super::cap_memory(&mut command);
        let output = command.args(["-c", "ulimit -v"]).output().unwrap();
        let kilobytes = String::from_utf8(output.stdout).unwrap();
        let half = crate::bench::memory_bytes().unwrap() / 2;
        assert_eq!(kilobytes.trim(), (half / 1024).to_string());
    }

    #[test]
    fn a_binary_without_run_is_told_apart() {
        assert!(!super::has_run_command(std::path::Path::new("/bin/false")));
        assert!(!super::has_run_command(std::path::Path::new("/nonexistent/nabla")));
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&mut []), None);
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }
}
