//! `cargo xtask bench [--threads N] [--rounds N] [--baseline PATH] [NAME...]`: runs benchmarks and
//! writes their tables to `docs/performance.md`.
//!
//! Two kinds of benchmark, selected by name (`all`, the default, runs every one):
//!
//! - `parse`, `check`: `harness = false` bench targets of our crates that print a Markdown section.
//! - `engine`, `autodiff`, `einsum`, `library`, `indexing`: Nabla programs under `bench/` measured side by
//!   side with reference tools (CPython, NumPy, opt_einsum, PyTorch, JAX) in one run, on the same
//!   number of threads, each figure the median of repeated runs after a warm-up. The references run from a
//!   Python environment in `target/bench-venv`, installed on first use (see [`python`]); the
//!   Nabla side runs the release `nabla` binary (see [`nabla`]) and is reported as not measured
//!   while it cannot run programs.
//! - `flags`: the same programs with a debugging option of `nabla run` (`--check-nan`,
//!   `--graph`) against themselves without it.
//! - `records`: the MLP training step with its parameters in records against the same step on
//!   loose tensors.
//! - `interpreter`: the suite of `bench/interpreter/`, each program in Nabla, CPython and Lua 5.4
//!   (Debian's `lua5.4`, installed when missing), with per-program ratios and their geometric
//!   means, element access times and the growth of an in-place sort (see [`suite`]).
//!
//! The page keeps one marked section per benchmark, so running some benchmarks replaces their
//! sections and leaves the others as they were.
//!
//! With `--baseline PATH`, another `nabla` binary (a release build of an older commit), the
//! interpreter suite and the comparative groups run every Nabla program with this build and with
//! PATH in the same rounds, one right after the other, and report this build's figures over the
//! baseline's, marking ratios above 1.10 (issue 23's bound) and giving each group's geometric
//! mean (see [`baseline`]). That is a development check, not the page: the reference tools do not
//! run, the Rust bench targets cannot be selected, and the tables go to standard output and
//! `target/bench-baseline.md`, leaving `docs/performance.md` as it was.

mod baseline;
mod compare;
mod groups;
mod json;
mod nabla;
mod python;
mod suite;

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use groups::GROUPS;

/// Bench targets: (name on the command line, package, bench target).
const BENCHES: &[(&str, &str, &str)] = &[
    ("parse", "syntax", "parse"),
    ("check", "hir", "check"),
    ("lsp", "lsp", "lsp"),
    ("tape", "exec", "autodiff"),
];

/// The page's sections in order; `reference-tools` describes the Python side.
const SECTION_ORDER: &[&str] = &[
    "reference-tools",
    "parse",
    "check",
    "lsp",
    "tape",
    "interpreter",
    "engine",
    "autodiff",
    "einsum",
    "library",
    "indexing",
    "flags",
    "records",
];

const USAGE: &str = "usage: cargo xtask bench [--threads N] [--rounds N] [--baseline PATH] \
                     [all | parse | check | lsp | tape | interpreter | engine | autodiff | einsum | library | indexing | flags | records]...\n\
                     --baseline PATH: run this build's Nabla programs and the `nabla` binary \
                     PATH's in the same rounds, print their ratios and write them to \
                     target/bench-baseline.md, not docs/performance.md (interpreter and the \
                     comparative groups only)";

struct Options {
    names: Vec<String>,
    threads: usize,
    /// How many times each comparative group is measured, both sides each time.
    rounds: usize,
    /// Another `nabla` binary to measure this build against, instead of writing the page.
    baseline: Option<PathBuf>,
}

/// Rounds of each comparative group by default: an odd number, so that one has the median.
const DEFAULT_ROUNDS: usize = 3;

/// The positive number an option `flag` is given.
fn positive(flag: &str, value: Option<&String>) -> Result<usize, String> {
    value
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{flag} needs a positive number\n{USAGE}"))
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut names = Vec::new();
        let mut threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut rounds = DEFAULT_ROUNDS;
        let mut baseline = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--threads" => threads = positive(arg, args.next())?,
                "--rounds" => rounds = positive(arg, args.next())?,
                "--baseline" => match args.next() {
                    Some(path) if !path.starts_with('-') => baseline = Some(PathBuf::from(path)),
                    _ => {
                        return Err(format!(
                            "--baseline needs the path of a nabla binary\n{USAGE}"
                        ));
                    }
                },
                "all" => {}
                name if name.starts_with('-') => {
                    return Err(format!("unknown option {name}\n{USAGE}"));
                }
                name => names.push(name.to_owned()),
            }
        }
        let known: Vec<&str> = BENCHES
            .iter()
            .map(|(name, _, _)| *name)
            .chain(GROUPS.iter().map(|group| group.name))
            .chain([INTERPRETER])
            .collect();
        if let Some(unknown) = names.iter().find(|name| !known.contains(&name.as_str())) {
            return Err(format!("no benchmark named {unknown}; known: all, {}", known.join(", ")));
        }
        if baseline.is_some() {
            let rust = BENCHES.iter().map(|(name, _, _)| *name);
            if let Some(name) = rust.clone().find(|name| names.iter().any(|n| n == name)) {
                return Err(format!(
                    "{name} is a Rust bench target, not Nabla programs: --baseline compares \
                     nabla binaries on {INTERPRETER} and {}",
                    GROUPS.iter().map(|group| group.name).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        Ok(Options { names, threads, rounds, baseline })
    }

    fn selects(&self, name: &str) -> bool {
        self.names.is_empty() || self.names.iter().any(|n| n == name)
    }
}

pub fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let options = Options::parse(args)?;
    if let Some(path) = &options.baseline {
        return baseline::run(root, &options, path);
    }
    let mut sections = Vec::new();
    for (name, package, target) in BENCHES.iter().filter(|(name, _, _)| options.selects(name)) {
        eprintln!("==> bench {name}");
        let text = rust_bench(root, name, package, target)?;
        // A bench target that prints nothing (a placeholder) leaves its old section alone.
        if !text.trim().is_empty() {
            sections.push((name.to_string(), text));
        }
    }
    let groups: Vec<_> = GROUPS.iter().filter(|group| options.selects(group.name)).collect();
    let suite = options.selects(INTERPRETER);
    if !groups.is_empty() || suite {
        let env = thread_env(options.threads);
        let python = python::Python::ensure(root)?;
        if suite {
            crate::system::ensure_lua()?;
        }
        // Build before measuring anything, so the build does not load the machine meanwhile.
        let mut nabla = nabla::Nabla::prepare(root, &env);
        let tools = python.environment(root, &env)?;
        sections.push(("reference-tools".to_owned(), reference_tools(&tools, options.threads)));
        if suite {
            let tools = suite::Tools {
                lineup: vec![
                    (suite::Tool::Nabla, nabla.binary().to_path_buf()),
                    (suite::Tool::CPython, python.interpreter().to_path_buf()),
                    (suite::Tool::Lua, PathBuf::from("lua5.4")),
                ],
                env: env.clone(),
            };
            let text = interpreter_section(root, &tools, &options);
            print!("{text}");
            sections.push((INTERPRETER.to_owned(), text));
        }
        for group in groups {
            let text = comparative_section(root, group, &python, &mut nabla, &env, &options);
            print!("{text}");
            sections.push((group.name.to_owned(), text));
        }
    }
    write_page(root, sections)
}

/// The name of the interpreter suite on the command line and its section on the page.
const INTERPRETER: &str = "interpreter";

/// Runs the interpreter suite [`Options::rounds`] times and renders its section.
fn interpreter_section(root: &Path, tools: &suite::Tools, options: &Options) -> String {
    eprintln!("==> bench interpreter: bench/interpreter/ in Nabla, CPython and Lua 5.4");
    let busy = cpu_busy(Duration::from_secs(2));
    let rounds: Vec<suite::Round> = (1..=options.rounds)
        .map(|round| {
            eprintln!("    round {round} of {}", options.rounds);
            suite::measure(root, tools)
        })
        .collect();
    let lua = command_output("lua5.4", &["-v"]);
    let measured = format!(
        "Measured {}, Nabla built from {}, {} (Debian's `lua5.4`), in {} round{}; just before, \
         other processes kept the CPUs {:.0}% busy{}.",
        today(),
        source_revision(root),
        lua.split("  ").next().unwrap_or("Lua 5.4"),
        options.rounds,
        if options.rounds == 1 { "" } else { "s" },
        busy * 100.0,
        if busy > 0.1 { ", so these figures are noisier than an idle machine's" } else { "" },
    );
    suite::section(&rounds, &measured)
}

/// Runs one group's reference script and then its Nabla programs, [`Options::rounds`] times, and
/// renders the section.
fn comparative_section(
    root: &Path,
    group: &groups::Group,
    python: &python::Python,
    nabla: &mut nabla::Nabla,
    env: &[(String, String)],
    options: &Options,
) -> String {
    match group.script {
        Some(script) => {
            eprintln!("==> bench {}: bench/{script} and its Nabla programs", group.name)
        }
        None => eprintln!("==> bench {}: Nabla programs", group.name),
    }
    // Sampled while this command is idle, so it is other processes' load, not ours.
    let busy = cpu_busy(Duration::from_secs(2));
    if busy > 0.1 {
        eprintln!(
            "    the CPUs are {:.0}% busy with other work: figures will be noisy",
            busy * 100.0
        );
    }
    let mut rounds = Vec::with_capacity(options.rounds);
    let mut script_error = None;
    for round in 1..=options.rounds {
        eprintln!("    round {round} of {}", options.rounds);
        let figures = match group.script {
            Some(script) => python.figures(root, script, env),
            None => Ok(Default::default()),
        };
        if let Err(err) = &figures {
            eprintln!("    {err}");
            script_error.get_or_insert_with(|| err.clone());
        }
        nabla.forget();
        rounds.push(compare::measure(group, &mut compare::Round { root, nabla, figures }));
    }
    let priority = match niceness() {
        0 => String::new(),
        nice => format!(" (this run at nice {nice})"),
    };
    let threads = options.threads;
    let measured = format!(
        "Measured {} on {threads} thread{} for every tool, Nabla built from {}, in {} round{}; \
         just before, other processes kept the CPUs {:.0}% busy{}{priority}.",
        today(),
        if threads == 1 { "" } else { "s" },
        source_revision(root),
        options.rounds,
        if options.rounds == 1 { "" } else { "s" },
        busy * 100.0,
        if busy > 0.1 { ", so these figures are noisier than an idle machine's" } else { "" },
    );
    compare::section(group, &rounds, &measured, nabla.unavailable(), script_error.as_deref())
}

fn rust_bench(root: &Path, name: &str, package: &str, target: &str) -> Result<String, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(cargo)
        .args(["bench", "--quiet", "-p", package, "--bench", target])
        .current_dir(root)
        .output()
        .map_err(|err| format!("cannot run cargo bench: {err}"))?;
    if !output.status.success() {
        return Err(format!("bench {name} failed:\n{}", String::from_utf8_lossy(&output.stderr)));
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    print!("{text}");
    Ok(text)
}

/// The same thread count for every tool: OpenMP, OpenBLAS and MKL (NumPy, PyTorch, Nabla's BLAS),
/// `torch.set_num_threads` (through `NABLA_BENCH_THREADS`, read by `bench/timing.py`) and XLA.
fn thread_env(threads: usize) -> Vec<(String, String)> {
    let n = threads.to_string();
    let mut env: Vec<(String, String)> = [
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "RAYON_NUM_THREADS",
        "NABLA_BENCH_THREADS",
    ]
    .iter()
    .map(|key| (key.to_string(), n.clone()))
    .collect();
    let xla = format!(
        "--xla_cpu_multi_thread_eigen={} intra_op_parallelism_threads={threads}",
        threads > 1
    );
    let xla = match std::env::var("XLA_FLAGS") {
        Ok(user) if !user.trim().is_empty() => format!("{user} {xla}"),
        _ => xla,
    };
    env.push(("XLA_FLAGS".to_owned(), xla));
    env.push(("JAX_PLATFORMS".to_owned(), "cpu".to_owned()));
    env
}

fn reference_tools(tools: &[(String, String)], threads: usize) -> String {
    fn label(key: &str) -> &str {
        match key {
            "python" => "Python",
            "numpy" => "NumPy",
            "numpy_blas" => "NumPy's BLAS",
            "opt_einsum" => "opt_einsum",
            "torch" => "PyTorch (PyPI's CUDA build, run on the CPU)",
            "torch_blas" => "PyTorch's BLAS",
            "torch_threads" => "torch.get_num_threads()",
            "jax" => "JAX",
            "xla_flags" => "XLA_FLAGS",
            "threads" => "threads asked for",
            other => other,
        }
    }
    let mut text = format!(
        "## Reference tools\n\nA Python virtual environment in `target/bench-venv`, pinned by \
         `bench/requirements.txt`, measured {} with {threads} thread{} for every tool \
         (`OMP_NUM_THREADS`, `OPENBLAS_NUM_THREADS`, `MKL_NUM_THREADS`, `torch.set_num_threads`, \
         `XLA_FLAGS`).\n\n",
        today(),
        if threads == 1 { "" } else { "s" },
    );
    for (key, value) in tools {
        text.push_str(&format!("- {}: {value}\n", label(key)));
    }
    text
}

/// The page the benchmarks write, relative to the repository root.
const PAGE: &str = "docs/performance.md";

fn write_page(root: &Path, fresh: Vec<(String, String)>) -> Result<(), String> {
    let path = root.join(PAGE);
    let old = fs::read_to_string(&path).unwrap_or_default();
    let mut sections = marked_sections(&old);
    for (name, text) in fresh {
        match sections.iter_mut().find(|(n, _)| *n == name) {
            Some(section) => section.1 = text,
            None => sections.push((name, text)),
        }
    }
    let rank = |name: &str| SECTION_ORDER.iter().position(|n| *n == name).unwrap_or(usize::MAX);
    sections.sort_by_key(|(name, _)| rank(name));
    let body: Vec<String> = sections
        .iter()
        .map(|(name, text)| {
            format!("<!-- bench:{name} -->\n{}\n<!-- /bench:{name} -->\n", text.trim())
        })
        .collect();
    let page = format!(
        "# Performance\n\nWritten by `cargo xtask bench`; do not edit by hand. Figures are medians \
         of repeated runs after a warm-up; each section says when it was measured.\n\n\
         ## Machine\n\n{}\n\n{}",
        machine_description(),
        body.join("\n")
    );
    fs::write(&path, page).map_err(|err| format!("cannot write {}: {err}", path.display()))
}

/// The sections of a page this command wrote, by name, in page order.
fn marked_sections(page: &str) -> Vec<(String, String)> {
    let mut sections = Vec::new();
    let mut rest = page;
    while let Some(start) = rest.find("<!-- bench:") {
        let after = &rest[start + "<!-- bench:".len()..];
        let Some(name_end) = after.find(" -->") else { break };
        let name = &after[..name_end];
        let body = &after[name_end + " -->".len()..];
        let close = format!("<!-- /bench:{name} -->");
        let Some(end) = body.find(&close) else { break };
        sections.push((name.to_owned(), body[..end].trim().to_owned()));
        rest = &body[end + close.len()..];
    }
    sections
}

fn machine_description() -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = field(&cpuinfo, "model name", ':').unwrap_or_else(|| "unknown CPU".to_owned());
    let flags = field(&cpuinfo, "flags", ':').unwrap_or_default();
    let vector: Vec<&str> = [("avx2", "AVX2"), ("avx512f", "AVX-512F"), ("fma", "FMA")]
        .iter()
        .filter(|(flag, _)| flags.split_whitespace().any(|f| f == *flag))
        .map(|(_, name)| *name)
        .collect();
    let cpu = if vector.is_empty() { cpu } else { format!("{cpu} ({})", vector.join(", ")) };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let memory = memory_bytes().map_or_else(
        || "unknown".to_owned(),
        |bytes| format!("{:.1} GiB", bytes as f64 / 1024.0 / 1024.0 / 1024.0),
    );
    let os = field(&fs::read_to_string("/etc/os-release").unwrap_or_default(), "PRETTY_NAME", '=')
        .map(|name| name.trim_matches('"').to_owned())
        .unwrap_or_else(|| "unknown OS".to_owned());
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let rustc = command_output("rustc", &["--version"]);
    let coretype = match std::env::var("OPENBLAS_CORETYPE") {
        Ok(kind) => format!("`OPENBLAS_CORETYPE={kind}`"),
        Err(_) => {
            "`OPENBLAS_CORETYPE` not set (the system OpenBLAS picks its kernel itself)".to_owned()
        }
    };
    format!(
        "- CPU: {cpu}, {cores} cores available\n- Memory: {memory}\n- OS: {os}, Linux {}\n\
         - Compiler: {rustc}\n- BLAS kernel: {coretype}",
        kernel.trim()
    )
}

/// The machine's memory (`MemTotal` of /proc/meminfo), in bytes.
pub fn memory_bytes() -> Option<u64> {
    field(&fs::read_to_string("/proc/meminfo").unwrap_or_default(), "MemTotal", ':')
        .and_then(|kb| kb.trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb.saturating_mul(1024))
}

/// The value of the first `key<sep>value` line of `text`.
fn field(text: &str, key: &str, separator: char) -> Option<String> {
    text.lines()
        .find(|line| line.starts_with(key))
        .and_then(|line| line.split_once(separator))
        .map(|(_, value)| value.trim().to_owned())
}

fn command_output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The commit the working tree is at, and whether it has changes on top. The page this command
/// writes is not one: running the benchmarks group by group rewrites it between runs, and its
/// figures never depend on it. Read-only: with `GIT_OPTIONAL_LOCKS=0`, `git status` does not even
/// refresh the index.
fn source_revision(root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .current_dir(root)
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let outside_page = format!(":(exclude){PAGE}");
    let Some(commit) = git(&["rev-parse", "--short", "HEAD"]) else {
        return "a tree outside git".to_owned();
    };
    match git(&["status", "--porcelain", "--untracked-files=no", "--", ".", &outside_page]) {
        Some(changes) if !changes.is_empty() => format!("commit {commit} with local changes"),
        _ => format!("commit {commit}"),
    }
}

fn today() -> String {
    command_output("date", &["-u", "+%Y-%m-%d"])
}

/// This process's scheduling niceness (the benchmarks inherit it), 0 when unreadable.
fn niceness() -> i64 {
    let stat = fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name in parentheses start at the state, field 3; nice is field 19.
    stat.rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().nth(16).and_then(|nice| nice.parse().ok()))
        .unwrap_or(0)
}

/// The fraction of CPU time spent busy over `period`, from `/proc/stat`; 0 when unreadable.
fn cpu_busy(period: Duration) -> f64 {
    fn sample() -> Option<(u64, u64)> {
        let stat = fs::read_to_string("/proc/stat").ok()?;
        let fields: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .filter_map(|field| field.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal ...; idle and iowait are not busy.
        let total: u64 = fields.iter().take(8).sum();
        let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
        Some((total, idle))
    }
    let Some((total0, idle0)) = sample() else { return 0.0 };
    std::thread::sleep(period);
    let Some((total1, idle1)) = sample() else { return 0.0 };
    let total = total1.saturating_sub(total0);
    if total == 0 {
        return 0.0;
    }
    total.saturating_sub(idle1.saturating_sub(idle0)) as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_survive_a_rewrite() {
        let page = "# Performance\n\n## Machine\n\n- CPU\n\n<!-- bench:parse -->\n## Parser\n\n| a |\n\
                    <!-- /bench:parse -->\n\n<!-- bench:engine -->\n## Engine\n<!-- /bench:engine -->\n";
        let sections = marked_sections(page);
        assert_eq!(
            sections,
            [
                ("parse".to_owned(), "## Parser\n\n| a |".to_owned()),
                ("engine".to_owned(), "## Engine".to_owned())
            ]
        );
        assert!(marked_sections("no markers, as before this command wrote them").is_empty());
    }

    #[test]
    fn options_select_benchmarks() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let options = Options::parse(&args(&["--threads", "1", "parse"])).unwrap();
        assert_eq!(options.threads, 1);
        assert!(options.selects("parse") && !options.selects("engine"));
        assert!(Options::parse(&args(&["all"])).unwrap().selects("einsum"));
        assert!(Options::parse(&args(&["nope"])).is_err());
        assert!(Options::parse(&args(&["--threads", "0"])).is_err());
        assert_eq!(Options::parse(&args(&[])).unwrap().rounds, DEFAULT_ROUNDS);
        assert_eq!(Options::parse(&args(&["--rounds", "5", "engine"])).unwrap().rounds, 5);
        assert!(Options::parse(&args(&["--rounds", "0"])).is_err());
    }

    #[test]
    fn a_baseline_takes_a_path_and_only_nabla_benchmarks() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let options =
            Options::parse(&args(&["--baseline", "/tmp/old/nabla", "--rounds", "1", "autodiff"]))
                .unwrap();
        assert_eq!(options.baseline.as_deref(), Some(Path::new("/tmp/old/nabla")));
        assert_eq!(options.rounds, 1);
        assert!(options.selects("autodiff") && !options.selects("interpreter"));
        assert_eq!(Options::parse(&args(&["engine"])).unwrap().baseline, None);
        assert!(Options::parse(&args(&["--baseline", "old", "interpreter"])).is_ok());
        for missing in [&["--baseline"][..], &["--baseline", "--rounds", "1"]] {
            let err = Options::parse(&args(missing)).err().unwrap();
            assert!(err.starts_with("--baseline needs the path of a nabla binary\n"), "{err}");
        }
        let err = Options::parse(&args(&["--baseline", "old", "engine", "parse"])).err().unwrap();
        assert_eq!(
            err,
            "parse is a Rust bench target, not Nabla programs: --baseline compares nabla binaries \
             on interpreter and engine, autodiff, einsum, library, indexing, flags, records"
        );
    }
}
