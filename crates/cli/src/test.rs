//! `nabla test [PATH ...]`: runs the `test` blocks of files and directories (every `.nb` file,
//! recursively) in worker processes, and reports them like `cargo test`.
//!
//! The coordinator (this process) checks every file first; the diagnostics of those with errors
//! (their own or an imported file's) go to standard error, with the warnings of the others, and
//! such a file counts as failed while the tests of the others still run. It then lists the tests
//! (file order, then source order), applies `--filter`, and starts one worker per core: the same
//! binary with the hidden subcommand `__test-worker`, given the run limits. Workers speak JSON lines on standard input and output:
//! the coordinator sends `{"file": PATH, "test": INDEX}` and the worker answers
//! `{"status", "message", "location", "output", "duration"}` after running that test on a fresh
//! machine (fresh tape, random seed 0). A worker lowers each file once. The coordinator kills a
//! worker whose test runs past `--timeout` and starts another for the remaining tests; a worker
//! that dies fails the test it was running. Results are printed in the stable order as soon as
//! every test before them is done.
//!
//! Exit statuses: 0 when every test that ran passed, 1 when one failed (assertion, run-time error,
//! timeout or crash), 2 when a file does not check or cannot be read (after the other files'
//! tests ran).

use std::{
    collections::{HashMap, HashSet, VecDeque},
    io::{BufRead, BufReader, IsTerminal, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, ExitCode, Stdio},
    sync::mpsc,
    thread::JoinHandle,
    time::{Duration, Instant},
};

use exec::{
    code::Program,
    error::RuntimeErrorKind,
    graph::TraceOptions,
    interp::{Limits, Machine},
    lower::lower_program,
    run::on_interpreter_stack,
};
use hir::{Database, SourceFile};
use serde_json::{Value, json};
use syntax::LineIndex;

use crate::{render, run::render_error, source};

/// The hidden subcommand that runs a worker.
pub const WORKER_COMMAND: &str = "__test-worker";

/// A hook for the runner's own tests: a worker asked to run the test with this name aborts (is
/// killed by `SIGABRT`) instead, so that the report of a crashed worker can be tested.
pub const CRASH_HOOK_VAR: &str = "NABLA_TEST_WORKER_ABORT_IN";

/// How `nabla test` prints results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per test, then the failures' details and a summary, like `cargo test`.
    Human,
    /// One JSON object per line and test: name, file, line, status, duration, message.
    Json,
}

/// The options of `nabla test`.
#[derive(Debug, Clone)]
pub struct Options {
    /// Run only tests whose name contains this text; the others are skipped.
    pub filter: Option<String>,
    /// The longest a test may run, in seconds.
    pub timeout: f64,
    pub format: Format,
    /// Show every test's output, not only the failing ones'.
    pub nocapture: bool,
    /// How many workers; the number of cores by default.
    pub jobs: Option<usize>,
    pub limits: RunLimits,
}

/// The limits of `nabla run` that `nabla test` also takes, for every test.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    /// The largest tensor, in bytes (`None`: the machine's memory).
    pub max_memory: Option<usize>,
    /// The deepest nesting of function calls.
    pub max_recursion: usize,
    /// Stop a test at the first operation that makes a NaN or an infinity from finite values
    /// (`--check-nan`).
    pub check_nan: bool,
}

/// Parses `--timeout`: a positive number of seconds.
pub fn parse_timeout(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds < 1e9 => Ok(seconds),
        _ => Err(format!("`{text}` is not a positive number of seconds")),
    }
}

/// Exit status when a test failed.
const TEST_FAILED: u8 = 1;
/// Exit status when a file does not check or cannot be read.
const CHECK_ERROR: u8 = 2;

/// How a test ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Passed,
    /// An assertion failed.
    Failed,
    /// A run-time error stopped it.
    Error,
    TimedOut,
    /// The worker running it died.
    Crashed,
    /// `--filter` left it out.
    Skipped,
}

impl Status {
    fn json_name(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Error => "error",
            Status::TimedOut => "timed_out",
            Status::Crashed => "crashed",
            Status::Skipped => "skipped",
        }
    }

    fn from_json_name(name: &str) -> Option<Status> {
        [Status::Passed, Status::Failed, Status::Error, Status::TimedOut, Status::Crashed]
            .into_iter()
            .find(|status| status.json_name() == name)
    }

    fn is_failure(self) -> bool {
        !matches!(self, Status::Passed | Status::Skipped)
    }
}

/// One test block.
#[derive(Debug, Clone)]
struct TestCase {
    path: PathBuf,
    name: String,
    line: u32,
    /// Its index among its file's tests.
    index: usize,
    skipped: bool,
}

/// What running a test gave.
#[derive(Debug, Clone)]
struct Outcome {
    status: Status,
    /// For failures: the rendered error, with its location and source line.
    message: Option<String>,
    /// `FILE:LINE:COL` of the failing operation.
    location: Option<String>,
    /// What the test printed.
    output: String,
    duration: f64,
}

impl Outcome {
    fn without_run(status: Status, message: Option<String>, duration: f64) -> Outcome {
        Outcome { status, message, location: None, output: String::new(), duration }
    }
}

pub fn run(paths: &[PathBuf], options: &Options) -> ExitCode {
    let discovered = discover(paths);
    let tests: Vec<TestCase> = discovered
        .tests
        .into_iter()
        .map(|mut test| {
            test.skipped = options.filter.as_ref().is_some_and(|f| !test.name.contains(f.as_str()));
            test
        })
        .collect();
    let mut reporter = Reporter::new(&tests, &discovered.broken, options);
    reporter.start();
    let to_run: Vec<usize> = (0..tests.len()).filter(|&i| !tests[i].skipped).collect();
    let workers = options
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, to_run.len().max(1));
    let timeout = Duration::from_secs_f64(options.timeout);
    let mut pool = Pool::new(&tests, &to_run, workers, timeout, options.limits);
    pool.run(&mut |index, outcome| reporter.record(index, outcome));
    let failed = reporter.finish();
    if discovered.unreadable || !discovered.broken.is_empty() {
        ExitCode::from(CHECK_ERROR)
    } else if failed {
        ExitCode::from(TEST_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

/// The tests of the files that check, and the files that do not.
struct Discovered {
    tests: Vec<TestCase>,
    /// Files with errors, their own or an imported file's: their tests do not run.
    broken: Vec<PathBuf>,
    /// Whether a path could not be read.
    unreadable: bool,
}

/// Collects the files, checks them and lists the tests of those that check. Prints what cannot
/// be read, the errors, and the warnings of the files that check, to standard error.
fn discover(paths: &[PathBuf]) -> Discovered {
    let roots: Vec<PathBuf> =
        if paths.is_empty() { vec![PathBuf::from(".")] } else { paths.to_vec() };
    let mut files = Vec::new();
    let mut unreadable = false;
    for root in &roots {
        if let Err(message) = source::collect(root, &mut files) {
            eprintln!("error: {message}");
            unreadable = true;
        }
    }
    // `nabla test` with no path walks `.`; `./a.nb` reads better as `a.nb`.
    for path in &mut files {
        if let Ok(rest) = path.strip_prefix(".")
            && !rest.as_os_str().is_empty()
        {
            *path = rest.to_path_buf();
        }
    }
    let mut seen = HashSet::new();
    files.retain(|path| seen.insert(path.clone()));
    let mut db = Database::default();
    let mut loaded: Vec<(PathBuf, SourceFile)> = Vec::new();
    for path in &files {
        match db.load_with_imports(path, &mut |p: &Path| source::read(p)) {
            Ok(file) => loaded.push((path.clone(), file)),
            Err(message) => {
                eprintln!("error: {message}");
                unreadable = true;
            }
        }
    }
    if let Some(text) = render::check_errors(&db) {
        eprint!("{text}");
    } else if let Some(text) = render::warnings(&db) {
        eprint!("{text}");
    }
    let mut tests = Vec::new();
    let mut broken = Vec::new();
    for (path, file) in loaded {
        if !checks(&db, file) {
            broken.push(path);
            continue;
        }
        let index = LineIndex::new(file.text(&db));
        for (i, item) in hir::item_tree(&db, file).tests.iter().enumerate() {
            tests.push(TestCase {
                path: path.clone(),
                name: item.name.clone(),
                line: index.line_col_1based(item.offset).0,
                index: i,
                skipped: false,
            });
        }
    }
    Discovered { tests, broken, unreadable }
}

/// Whether a file and everything it imports, transitively, are free of errors.
fn checks(db: &Database, file: SourceFile) -> bool {
    let mut stack = vec![file];
    let mut seen = HashSet::new();
    while let Some(file) = stack.pop() {
        if !seen.insert(file) {
            continue;
        }
        if hir::file_diagnostics(db, file).iter().any(|d| d.severity == hir::Severity::Error) {
            return false;
        }
        let imports = hir::item_tree(db, file).imports.len();
        stack.extend((0..imports as u32).filter_map(|i| hir::resolve_import(db, file, i)));
    }
    true
}

/// A message from a worker's reader thread: a line of its standard output, or `None` at its end.
struct Event {
    worker: u64,
    line: Option<String>,
}

/// A running worker process.
struct Worker {
    id: u64,
    child: Child,
    stdin: ChildStdin,
    /// Collects what it writes to standard error, for crash reports; the text is complete once
    /// the process has ended.
    stderr: JoinHandle<String>,
    /// The test it is running and when it started.
    current: Option<(usize, Instant)>,
    /// The file of the last test it ran (it has that file lowered).
    file: Option<PathBuf>,
}

/// The worker processes and the tests still to hand out.
struct Pool<'t> {
    tests: &'t [TestCase],
    /// Tests not started yet, per file, in order.
    pending: Vec<(PathBuf, VecDeque<usize>)>,
    slots: Vec<Option<Worker>>,
    timeout: Duration,
    next_id: u64,
    events: mpsc::Receiver<Event>,
    sender: mpsc::Sender<Event>,
    remaining: usize,
    limits: RunLimits,
}

impl<'t> Pool<'t> {
    fn new(
        tests: &'t [TestCase],
        to_run: &[usize],
        workers: usize,
        timeout: Duration,
        limits: RunLimits,
    ) -> Pool<'t> {
        let mut pending: Vec<(PathBuf, VecDeque<usize>)> = Vec::new();
        for &index in to_run {
            let path = &tests[index].path;
            match pending.last_mut() {
                Some((last, queue)) if last == path => queue.push_back(index),
                _ => pending.push((path.clone(), VecDeque::from([index]))),
            }
        }
        let (sender, events) = mpsc::channel();
        Pool {
            tests,
            pending,
            slots: (0..workers).map(|_| None).collect(),
            timeout,
            next_id: 0,
            events,
            sender,
            remaining: to_run.len(),
            limits,
        }
    }

    /// Runs every test, calling `report` with each outcome as it arrives.
    fn run(&mut self, report: &mut dyn FnMut(usize, Outcome)) {
        while self.remaining > 0 {
            self.assign(report);
            if self.remaining == 0 {
                break;
            }
            let now = Instant::now();
            let deadline = self
                .slots
                .iter()
                .flatten()
                .filter_map(|w| w.current.map(|(_, start)| start + self.timeout))
                .min();
            let Some(deadline) = deadline else {
                // Nothing is running and nothing could be started: should not happen, but never
                // wait forever.
                break;
            };
            match self.events.recv_timeout(deadline.saturating_duration_since(now)) {
                Ok(event) => self.handle(event, report),
                Err(mpsc::RecvTimeoutError::Timeout) => self.expire(report),
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        for slot in &mut self.slots {
            if let Some(worker) = slot.take() {
                stop(worker);
            }
        }
    }

    /// The next test for a worker that has `file` loaded: the next of that file if any is left,
    /// otherwise the first pending one.
    fn next_test(&mut self, file: Option<&Path>) -> Option<usize> {
        self.pending.retain(|(_, queue)| !queue.is_empty());
        let same = file.and_then(|file| self.pending.iter().position(|(path, _)| path == file));
        let (_, queue) = self.pending.get_mut(same.unwrap_or(0))?;
        queue.pop_front()
    }

    /// Gives every idle worker a test, starting workers as needed and stopping idle ones when
    /// nothing is left.
    fn assign(&mut self, report: &mut dyn FnMut(usize, Outcome)) {
        for slot in 0..self.slots.len() {
            if self.slots[slot].as_ref().is_some_and(|w| w.current.is_some()) {
                continue;
            }
            let file = self.slots[slot].as_ref().and_then(|w| w.file.clone());
            let Some(test) = self.next_test(file.as_deref()) else {
                if let Some(worker) = self.slots[slot].take() {
                    stop(worker);
                }
                continue;
            };
            if self.slots[slot].is_none() {
                match self.spawn() {
                    Ok(worker) => self.slots[slot] = Some(worker),
                    Err(message) => {
                        self.finish(
                            test,
                            Outcome::without_run(Status::Crashed, Some(message), 0.0),
                            report,
                        );
                        continue;
                    }
                }
            }
            let case = &self.tests[test];
            let request = json!({ "file": case.path, "test": case.index });
            let Some(worker) = self.slots[slot].as_mut() else { continue };
            worker.current = Some((test, Instant::now()));
            worker.file = Some(case.path.clone());
            let sent = writeln!(worker.stdin, "{request}").and_then(|()| worker.stdin.flush());
            if sent.is_err() {
                // The worker is gone; its reader reports the end and the test fails as crashed.
            }
        }
    }

    fn spawn(&mut self) -> Result<Worker, String> {
        let exe = std::env::current_exe().map_err(|err| {
            format!("cannot start a test worker: cannot find this program: {err}")
        })?;
        let mut command = Command::new(exe);
        command.arg(WORKER_COMMAND);
        command.arg("--max-recursion").arg(self.limits.max_recursion.to_string());
        if self.limits.check_nan {
            command.arg("--check-nan");
        }
        if let Some(bytes) = self.limits.max_memory {
            command.arg("--max-memory").arg(bytes.to_string());
        }
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        // The workers already use every core; BLAS threads would only compete with them.
        if std::env::var_os("OPENBLAS_NUM_THREADS").is_none() {
            command.env("OPENBLAS_NUM_THREADS", "1");
        }
        let mut child =
            command.spawn().map_err(|err| format!("cannot start a test worker: {err}"))?;
        let (Some(stdin), Some(stdout), Some(mut stderr_pipe)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("cannot start a test worker: its pipes are missing".to_owned());
        };
        let id = self.next_id;
        self.next_id += 1;
        let sender = self.sender.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(line) => {
                        if sender.send(Event { worker: id, line: Some(line) }).is_err() {
                            return;
                        }
                    }
                    Err(_) => break,
                }
            }
            let _ = sender.send(Event { worker: id, line: None });
        });
        let stderr = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stderr_pipe, &mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        });
        Ok(Worker { id, child, stdin, stderr, current: None, file: None })
    }

    fn finish(&mut self, test: usize, outcome: Outcome, report: &mut dyn FnMut(usize, Outcome)) {
        self.remaining = self.remaining.saturating_sub(1);
        report(test, outcome);
    }

    fn handle(&mut self, event: Event, report: &mut dyn FnMut(usize, Outcome)) {
        // Events of workers already stopped (killed after a timeout) are ignored.
        let Some(slot) =
            self.slots.iter().position(|w| w.as_ref().is_some_and(|w| w.id == event.worker))
        else {
            return;
        };
        let Some(worker) = self.slots[slot].as_mut() else { return };
        let Some((test, start)) = worker.current.take() else {
            // Output with no test running, or the end of an idle worker: replace it.
            if let Some(worker) = self.slots[slot].take() {
                stop(worker);
            }
            return;
        };
        let reply = event.line.as_deref().and_then(parse_reply);
        match reply {
            Some(outcome) => self.finish(test, outcome, report),
            None => {
                let Some(mut worker) = self.slots[slot].take() else { return };
                let _ = worker.child.kill();
                let status = worker.child.wait().ok();
                // The process has ended, so its standard error is closed and the reader's text
                // is complete.
                let stderr = worker.stderr.join().unwrap_or_default();
                let how = match status {
                    Some(status) => describe_exit(status),
                    None => "stopped".to_owned(),
                };
                let mut message = format!("the worker process running this test {how}");
                match stderr.trim_end() {
                    "" => message.push_str(" and wrote nothing to standard error\n"),
                    last_words => {
                        message.push_str("; it wrote to standard error:\n");
                        message.push_str(last_words);
                        message.push('\n');
                    }
                }
                let outcome = Outcome::without_run(
                    Status::Crashed,
                    Some(message),
                    start.elapsed().as_secs_f64(),
                );
                self.finish(test, outcome, report);
            }
        }
    }

    /// Stops the workers whose test ran past the timeout.
    fn expire(&mut self, report: &mut dyn FnMut(usize, Outcome)) {
        let now = Instant::now();
        for slot in 0..self.slots.len() {
            let expired = self.slots[slot]
                .as_ref()
                .and_then(|w| w.current)
                .filter(|(_, start)| now.saturating_duration_since(*start) >= self.timeout);
            let Some((test, start)) = expired else { continue };
            if let Some(mut worker) = self.slots[slot].take() {
                let _ = worker.child.kill();
                let _ = worker.child.wait();
            }
            let message =
                format!("the test ran longer than {} and was stopped\n", seconds(self.timeout));
            let outcome = Outcome::without_run(
                Status::TimedOut,
                Some(message),
                start.elapsed().as_secs_f64(),
            );
            self.finish(test, outcome, report);
        }
    }
}

/// `1s`, `0.5s`.
fn seconds(duration: Duration) -> String {
    let s = duration.as_secs_f64();
    if s.fract() == 0.0 { format!("{s:.0}s") } else { format!("{s}s") }
}

fn describe_exit(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return match signal_name(signal) {
                Some(name) => format!("was killed by signal {signal} ({name})"),
                None => format!("was killed by signal {signal}"),
            };
        }
    }
    match status.code() {
        Some(code) => format!("exited with status {code}"),
        None => "stopped".to_owned(),
    }
}

/// The usual name of the signals that end a process, on Linux and macOS alike.
#[cfg(unix)]
fn signal_name(signal: i32) -> Option<&'static str> {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => return None,
    };
    Some(name)
}

/// Closes a worker's input so that it exits, and waits for it.
fn stop(worker: Worker) {
    let Worker { mut child, stdin, .. } = worker;
    drop(stdin);
    let _ = child.wait();
}

fn parse_reply(line: &str) -> Option<Outcome> {
    let value: Value = serde_json::from_str(line).ok()?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(Outcome {
        status: Status::from_json_name(value.get("status")?.as_str()?)?,
        message: text("message"),
        location: text("location"),
        output: text("output").unwrap_or_default(),
        duration: value.get("duration").and_then(Value::as_f64).unwrap_or(0.0),
    })
}

/// Prints results in the stable order, a progress bar, and the summary.
struct Reporter<'t> {
    tests: &'t [TestCase],
    /// Files that do not check, reported as failed.
    broken: &'t [PathBuf],
    format: Format,
    nocapture: bool,
    results: Vec<Option<Outcome>>,
    /// The first test not printed yet.
    next: usize,
    /// The file whose header was printed last.
    current_file: Option<PathBuf>,
    colour: bool,
    progress: bool,
    done: usize,
    to_run: usize,
    failures: Vec<usize>,
}

impl<'t> Reporter<'t> {
    fn new(tests: &'t [TestCase], broken: &'t [PathBuf], options: &Options) -> Reporter<'t> {
        let to_run = tests.iter().filter(|t| !t.skipped).count();
        let human = options.format == Format::Human;
        Reporter {
            tests,
            broken,
            format: options.format,
            nocapture: options.nocapture,
            results: tests.iter().map(|_| None).collect(),
            next: 0,
            current_file: None,
            colour: human
                && std::io::stdout().is_terminal()
                && std::env::var_os("NO_COLOR").is_none(),
            progress: human && to_run >= 20 && std::io::stderr().is_terminal(),
            done: 0,
            to_run,
            failures: Vec::new(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    fn start(&mut self) {
        for (index, test) in self.tests.iter().enumerate() {
            if test.skipped {
                self.results[index] = Some(Outcome::without_run(Status::Skipped, None, 0.0));
            }
        }
        if self.format == Format::Human {
            let files: HashSet<&Path> =
                self.tests.iter().filter(|t| !t.skipped).map(|t| t.path.as_path()).collect();
            let plural = if self.to_run == 1 { "" } else { "s" };
            let in_files = match files.len() {
                1 => String::new(),
                n => format!(" in {n} files"),
            };
            // A closed standard output stops nothing: the tests still run to their exit status.
            let _ = writeln!(std::io::stdout(), "running {} test{plural}{in_files}", self.to_run);
        }
        self.flush();
    }

    fn record(&mut self, index: usize, outcome: Outcome) {
        if let Some(slot) = self.results.get_mut(index) {
            *slot = Some(outcome);
            self.done += 1;
        }
        self.flush();
    }

    /// Prints every finished result whose predecessors are all printed.
    fn flush(&mut self) {
        let mut text = String::new();
        while let Some(Some(outcome)) = self.results.get(self.next) {
            let test = &self.tests[self.next];
            match self.format {
                Format::Json => {
                    let object = json!({
                        "name": test.name,
                        "file": test.path.display().to_string(),
                        "line": test.line,
                        "status": outcome.status.json_name(),
                        "duration": outcome.duration,
                        "message": outcome.message,
                        "location": outcome.location,
                        "output": outcome.output,
                    });
                    text.push_str(&format!("{object}\n"));
                }
                Format::Human if outcome.status == Status::Skipped => {}
                Format::Human => {
                    if self.current_file.as_deref() != Some(test.path.as_path()) {
                        text.push_str(&format!("\n{}:\n", test.path.display()));
                        self.current_file = Some(test.path.clone());
                    }
                    if self.nocapture && !outcome.output.is_empty() {
                        text.push_str(&outcome.output);
                        if !outcome.output.ends_with('\n') {
                            text.push('\n');
                        }
                    }
                    let verdict = match outcome.status {
                        Status::Passed | Status::Skipped => self.paint("32", "ok"),
                        Status::TimedOut => self.paint("31", "FAILED (timed out)"),
                        Status::Crashed => self.paint("31", "FAILED (crashed)"),
                        Status::Failed | Status::Error => self.paint("31", "FAILED"),
                    };
                    text.push_str(&format!("test {} ... {verdict}\n", test.name));
                }
            }
            if outcome.status.is_failure() {
                self.failures.push(self.next);
            }
            self.next += 1;
        }
        let mut out = std::io::stdout().lock();
        if self.progress {
            eprint!("\r\x1b[K");
        }
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        drop(out);
        if self.progress && self.done < self.to_run {
            eprint!("{}", progress_bar(self.done, self.to_run));
            let _ = std::io::stderr().flush();
        }
    }

    /// Prints the failures and the summary; returns whether a test failed.
    fn finish(&mut self) -> bool {
        if self.progress {
            eprint!("\r\x1b[K");
        }
        let count = |status: &dyn Fn(Status) -> bool| {
            self.results.iter().flatten().filter(|o| status(o.status)).count()
        };
        let passed = count(&|s| s == Status::Passed);
        let failed = count(&|s| s.is_failure());
        let skipped = count(&|s| s == Status::Skipped);
        let not_run = self.results.iter().filter(|r| r.is_none()).count();
        if self.format == Format::Json {
            let mut text = String::new();
            for path in self.broken {
                let object = json!({
                    "file": path.display().to_string(),
                    "status": "check_failed",
                    "message": "the file does not check (its errors went to standard error), so its tests did not run",
                });
                text.push_str(&format!("{object}\n"));
            }
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            return failed > 0 || not_run > 0;
        }
        let mut text = String::new();
        if !self.failures.is_empty() {
            text.push_str("\nfailures:\n");
            for &index in &self.failures {
                let (test, Some(outcome)) = (&self.tests[index], &self.results[index]) else {
                    continue;
                };
                text.push_str(&format!(
                    "\n---- {} ({}:{}) ----\n",
                    test.name,
                    test.path.display(),
                    test.line
                ));
                if let Some(message) = &outcome.message {
                    text.push_str(message);
                }
                if !self.nocapture && !outcome.output.is_empty() {
                    text.push_str("---- output ----\n");
                    text.push_str(&outcome.output);
                    if !outcome.output.ends_with('\n') {
                        text.push('\n');
                    }
                }
            }
            text.push_str("\nfailures:\n");
            for &index in &self.failures {
                let test = &self.tests[index];
                text.push_str(&format!(
                    "    {} ({}:{})\n",
                    test.name,
                    test.path.display(),
                    test.line
                ));
            }
        }
        if !self.broken.is_empty() {
            text.push_str(
                "\nfiles that do not check (their errors are above; their tests did not run):\n",
            );
            for path in self.broken {
                text.push_str(&format!("    {}\n", path.display()));
            }
        }
        text.push_str(&format!("\ntest result: {passed} passed, {failed} failed"));
        if skipped > 0 {
            text.push_str(&format!(", {skipped} skipped"));
        }
        match self.broken.len() {
            0 => {}
            1 => text.push_str("; 1 file does not check"),
            n => text.push_str(&format!("; {n} files do not check")),
        }
        text.push('\n');
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        failed > 0 || not_run > 0
    }
}

/// `[=====>    ] 120/500`
fn progress_bar(done: usize, total: usize) -> String {
    const WIDTH: usize = 30;
    let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH).min(WIDTH);
    let head = if filled < WIDTH { ">" } else { "" };
    let rest = WIDTH - filled - head.len();
    format!("[{}{head}{}] {done}/{total}", "=".repeat(filled), " ".repeat(rest))
}

/// `nabla __test-worker`: answers requests on standard input until it closes.
pub fn worker(limits: RunLimits) -> ExitCode {
    crate::run::prepare_process(limits.max_memory);
    match on_interpreter_stack(|| worker_loop(limits)) {
        Some(()) => ExitCode::SUCCESS,
        None => ExitCode::from(101),
    }
}

fn worker_loop(limits: RunLimits) {
    let mut db = Database::default();
    let mut programs: HashMap<PathBuf, Result<Program, String>> = HashMap::new();
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let request: Option<(PathBuf, usize)> =
            serde_json::from_str::<Value>(&line).ok().and_then(|v| {
                let file = v.get("file")?.as_str()?;
                let test = usize::try_from(v.get("test")?.as_u64()?).ok()?;
                Some((PathBuf::from(file), test))
            });
        let reply = match request {
            Some((path, test)) => run_one(&mut db, &mut programs, &path, test, limits),
            None => {
                json!({ "status": "crashed", "message": "the worker received a malformed request\n" })
            }
        };
        if writeln!(stdout, "{reply}").and_then(|()| stdout.flush()).is_err() {
            return;
        }
    }
}

/// Runs test `index` of the file at `path` on a fresh machine.
fn run_one(
    db: &mut Database,
    programs: &mut HashMap<PathBuf, Result<Program, String>>,
    path: &Path,
    index: usize,
    limits: RunLimits,
) -> Value {
    let start = Instant::now();
    if !programs.contains_key(path) {
        let program = db
            .load_with_imports(path, &mut |p: &Path| source::read(p))
            .and_then(|file| lower_program(&*db, file).map_err(|err| format!("{err}\n")));
        programs.insert(path.to_path_buf(), program);
    }
    let program = match programs.get(path) {
        Some(Ok(program)) => program,
        Some(Err(message)) => {
            return json!({ "status": "error", "message": message, "duration": 0.0 });
        }
        None => return json!({ "status": "error", "message": "the file was not loaded\n" }),
    };
    let Some((name, unit)) = program.tests.get(index) else {
        return json!({ "status": "error", "message": format!("the file has no test number {index}\n") });
    };
    let unit = *unit;
    if std::env::var_os(CRASH_HOOK_VAR).is_some_and(|crash_in| crash_in == name.as_str()) {
        eprintln!("{CRASH_HOOK_VAR} names the test `{name}`: the worker aborts");
        std::process::abort();
    }
    let mut output: Vec<u8> = Vec::new();
    let limits_check_nan = limits.check_nan;
    let limits = Limits { max_call_depth: limits.max_recursion, ..Limits::default() };
    let result = Machine::new(program, &mut output, limits).and_then(|mut machine| {
        machine.trace(TraceOptions { graph: None, check_nan: limits_check_nan });
        machine.run_constants()?;
        machine.run_test(unit)
    });
    let duration = start.elapsed().as_secs_f64();
    let output = String::from_utf8_lossy(&output).into_owned();
    match result {
        Ok(()) => json!({ "status": "passed", "output": output, "duration": duration }),
        Err(error) => {
            let status = match error.kind {
                RuntimeErrorKind::Assertion => Status::Failed,
                RuntimeErrorKind::Error
                | RuntimeErrorKind::Internal
                | RuntimeErrorKind::Interrupted => Status::Error,
            };
            let location = error.span.map(|span| {
                let (file, range) = hir::file_range(&*db, span);
                let (line, col) = LineIndex::new(file.text(&*db)).line_col_1based(range.start());
                format!("{}:{line}:{col}", file.path(&*db).display())
            });
            json!({
                "status": status.json_name(),
                "message": render_error(db, &error, false),
                "location": location,
                "output": output,
                "duration": duration,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bar_fills() {
        assert_eq!(progress_bar(0, 10), format!("[>{}] 0/10", " ".repeat(29)));
        assert_eq!(progress_bar(10, 10), format!("[{}] 10/10", "=".repeat(30)));
        assert_eq!(progress_bar(5, 10), format!("[{}>{}] 5/10", "=".repeat(15), " ".repeat(14)));
    }

    #[test]
    fn timeouts_are_positive_seconds() {
        assert_eq!(parse_timeout("60"), Ok(60.0));
        assert_eq!(parse_timeout("0.5"), Ok(0.5));
        assert!(parse_timeout("0").is_err());
        assert!(parse_timeout("-1").is_err());
        assert!(parse_timeout("soon").is_err());
    }
}
