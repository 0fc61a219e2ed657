//! `nabla run FILE`: checks a program and everything it imports, and runs it if it has no errors.
//!
//! Exit statuses: 0 when the program finished, 1 on a run-time error (after the output printed
//! before it), 2 when the program has check errors (and nothing ran), or when the file cannot be
//! read. Output is buffered for speed and flushed before an error is printed. Everything from
//! reading to running happens on a thread with a large stack, because each nesting level of
//! derivatives (`grad(grad(f))`) recurses natively in the interpreter.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::ExitCode,
    time::Instant,
};

use exec::{
    error::RuntimeError,
    graph::{GraphOptions, TraceOptions},
    interp::Limits,
    run::{RunReport, on_interpreter_stack, run_traced},
};
use hir::Database;
use syntax::LineIndex;

use crate::{graph, render, source};

/// The options of `nabla run`.
#[derive(Debug, Clone)]
pub struct Options {
    /// The largest tensor, in bytes (`None`: the machine's memory).
    pub max_memory: Option<usize>,
    /// The deepest nesting of function calls.
    pub max_recursion: usize,
    /// Where to write the timings as JSON.
    pub timings_json: Option<PathBuf>,
    /// The picture of the computational graph to write (`--graph`, `nabla graph`).
    pub graph: Option<GraphRequest>,
    /// Stop at the first operation that makes a NaN or an infinity from finite values.
    pub check_nan: bool,
    /// What to print instead of running the program.
    pub emit: Option<Emit>,
}

/// A form of the program that `nabla run --emit` prints instead of running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// The register code of every unit, as the interpreter runs it (`crates/exec/src/code`).
    Bytecode,
}

/// Where and how to write the picture of the computational graph a run recorded.
#[derive(Debug, Clone)]
pub struct GraphRequest {
    pub path: PathBuf,
    /// DOT or SVG; by default the one `path`'s extension names.
    pub format: Option<graph::Format>,
    pub view: graph::View,
    /// Which of the recordings to draw, and whether loop iterations share a node.
    pub options: GraphOptions,
}

/// Exit status for run-time errors.
const RUNTIME_ERROR: u8 = 1;
/// Exit status for programs with check errors (and files that cannot be read).
const CHECK_ERROR: u8 = 2;

pub fn run(path: &Path, options: &Options) -> ExitCode {
    prepare_process(options.max_memory);
    match on_interpreter_stack(|| run_on_this_thread(path, options)) {
        Some(status) => ExitCode::from(status),
        None => {
            eprintln!("error: the interpreter thread could not be started or stopped abnormally");
            ExitCode::from(RUNTIME_ERROR)
        }
    }
}

fn run_on_this_thread(path: &Path, options: &Options) -> u8 {
    let check_start = Instant::now();
    let mut db = Database::default();
    let main = match db.load_with_imports(path, &mut |p: &Path| source::read(p)) {
        Ok(file) => file,
        Err(message) => {
            eprintln!("error: {message}");
            return CHECK_ERROR;
        }
    };
    if let Some(text) = render::check_errors(&db) {
        eprint!("{text}");
        return CHECK_ERROR;
    }
    if let Some(text) = render::warnings(&db) {
        eprint!("{text}");
    }
    if options.emit == Some(Emit::Bytecode) {
        return match exec::lower::lower_program(&db, main) {
            Ok(program) => {
                print!("{program}");
                0
            }
            Err(error) => {
                eprint!("{}", render_error(&db, &error, render::stderr_colour()));
                RUNTIME_ERROR
            }
        };
    }
    let check_seconds = check_start.elapsed().as_secs_f64();
    let limits = Limits { max_call_depth: options.max_recursion, ..Limits::default() };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let trace = TraceOptions {
        graph: options.graph.as_ref().map(|request| request.options),
        check_nan: options.check_nan,
    };
    let traced = run_traced(&db, main, &mut out, limits, trace);
    let result = traced.result;
    // The program's output comes before any error message.
    let _ = out.flush();
    drop(out);
    let mut status = 0;
    if let Some(request) = &options.graph {
        let written = match &traced.graph {
            Some(recorded) => {
                graph::write(&db, recorded, &request.view, &request.path, request.format)
            }
            None => Err("the run recorded no graph".to_owned()),
        };
        match written {
            Ok(report) => eprintln!("{report}"),
            Err(message) => {
                eprintln!("error: {message}");
                status = RUNTIME_ERROR;
            }
        }
    }
    let report = match &result {
        Ok(report) => Some(*report),
        Err(_) => None,
    };
    if let Some(path) = &options.timings_json
        && let Err(message) = write_timings(path, check_seconds, report)
    {
        eprintln!("error: {message}");
    }
    match result {
        Ok(_) => status,
        Err(error) => {
            eprint!("{}", render_error(&db, &error, render::stderr_colour()));
            RUNTIME_ERROR
        }
    }
}

/// Sets up a process that runs Nabla code, as `nabla run` and the workers of `nabla test` both
/// do, so that a test runs under the same conditions as the program: the allocator keeps freed
/// memory (see [`keep_freed_memory`]) and one tensor may take at most `max_memory` bytes (the
/// machine's memory by default).
pub fn prepare_process(max_memory: Option<usize>) {
    keep_freed_memory();
    tensor::set_allocation_limit(max_memory.unwrap_or_else(machine_memory));
}

unsafe extern "C" {
    /// mimalloc's option API (the global allocator of this binary).
    fn mi_option_get(option: std::ffi::c_int) -> std::ffi::c_long;
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc's `mi_option_t` (the same index in its v2 and v3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Tells the allocator never to return freed memory to the operating system.
///
/// Tensor programs free and allocate buffers of the same large sizes over and over (every
/// iteration of `r = exp(a) * b + c` on ten million elements allocates 80 MB). By default
/// mimalloc gives such blocks back to the kernel, which then zero-fills every page again on the
/// next allocation: that tripled the time of element-wise benchmarks. Keeping the memory, as glibc
/// does for NumPy, removes the cost. The option is set only when it still has one of mimalloc's
/// default values, so that a mimalloc whose option numbering changed is left alone.
fn keep_freed_memory() {
    // SAFETY: both functions only read or write one entry of mimalloc's option table; the
    // index is checked against the option's documented defaults (10 ms in v2, 1000 ms in v3)
    // before anything is written.
    unsafe {
        let current = mi_option_get(MI_OPTION_PURGE_DELAY);
        if current == 10 || current == 1000 {
            mi_option_set(MI_OPTION_PURGE_DELAY, -1);
        }
    }
}

/// The machine's physical memory, the default allocation limit (falling back to the runtime's
/// default where it cannot be read).
fn machine_memory() -> usize {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
        let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    });
    total.unwrap_or(tensor::DEFAULT_ALLOCATION_LIMIT_BYTES)
}

/// Parses `--max-memory`: bytes, or a number with a binary unit (`512K`, `2G`, `1.5GiB`).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let value: f64 =
        number.parse().map_err(|_| format!("`{text}` is not a size such as 4096, 512M or 2G"))?;
    let scale: f64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1.0,
        "K" | "KB" | "KIB" => 1024.0,
        "M" | "MB" | "MIB" => 1024.0 * 1024.0,
        "G" | "GB" | "GIB" => 1024.0 * 1024.0 * 1024.0,
        "T" | "TB" | "TIB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("`{text}` has an unknown unit; use K, M, G or T")),
    };
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < 0.0 || bytes > usize::MAX as f64 {
        return Err(format!("`{text}` is not a usable size"));
    }
    Ok(bytes as usize)
}

fn write_timings(path: &Path, check_seconds: f64, report: Option<RunReport>) -> Result<(), String> {
    let json = serde_json::json!({
        "run_seconds": report.map(|r| r.run_seconds),
        "check_seconds": check_seconds,
        "tape_bytes_per_op": report.and_then(|r| r.tape_bytes_per_op),
        "tensor_copies": report.map(|r| r.tensor_copies),
        "peak_rss_bytes": peak_rss_bytes(),
    });
    std::fs::write(path, format!("{json}\n"))
        .map_err(|err| format!("cannot write {}: {err}", path.display()))
}

/// The high-water mark of this process's resident set, in bytes (`getrusage`'s `ru_maxrss`, which
/// Linux gives in KiB); `None` where the call fails.
fn peak_rss_bytes() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` is a writable `rusage` that `getrusage` fills when it returns 0; a zeroed
    // `rusage` is a valid value of the plain C struct either way.
    let (status, usage) = unsafe {
        let status = libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        (status, usage.assume_init())
    };
    (status == 0).then(|| u64::try_from(usage.ru_maxrss).unwrap_or(0).saturating_mul(1024))
}

/// How many frames of a long stack are shown at each end.
const STACK_EDGE: usize = 10;

/// A run-time error in the style of the checker's diagnostics:
///
/// ```text
/// error[R0002]: integer division by zero: 7 / 0
///  --> prog.nb:2:12
///   |
/// 2 |     return a / b;
///   |            ^^^^^
/// stack:
///   at div (prog.nb:2:12)
///   at <top level> (prog.nb:5:7)
/// ```
pub fn render_error(db: &Database, error: &RuntimeError, colour: bool) -> String {
    render_error_located(db, error, colour, &|file, line| {
        (file.path(db).display().to_string(), line)
    })
}

/// [`render_error`], with the places of lines given by `locate` (see [`render::Locate`]).
pub fn render_error_located(
    db: &Database,
    error: &RuntimeError,
    colour: bool,
    locate: render::Locate<'_>,
) -> String {
    let paint = |code: &str, text: &str| {
        if colour { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    };
    let head = match error.code {
        Some(code) => format!("error[{code}]"),
        None => "error".to_owned(),
    };
    let mut out =
        format!("{}{}\n", paint("1;31", &head), paint("1", &format!(": {}", error.message)));
    let Some(span) = error.span else {
        for note in &error.notes {
            out.push_str(&format!("{} {}: {note}\n", paint("1;34", "="), paint("1", "note")));
        }
        return out;
    };
    let (file, range) = hir::file_range(db, span);
    let text = file.text(db);
    let index = LineIndex::new(text);
    let (line, col) = index.line_col_1based(range.start());
    let (end_line, end_col) = index.line_col_1based(range.end());
    let (path, shown) = locate(file, line);
    let width = shown.to_string().len();
    let pad = " ".repeat(width);
    out.push_str(&format!("{pad}{} {path}:{shown}:{col}\n", paint("1;34", "-->")));
    out.push_str(&format!("{pad} {}\n", paint("1;34", "|")));
    let source = index.line(line - 1);
    out.push_str(&format!(
        "{} {} {source}\n",
        paint("1;34", &format!("{shown:>width$}")),
        paint("1;34", "|")
    ));
    let line_chars = source.chars().count() as u32;
    let last = if end_line == line { end_col.max(col + 1) } else { line_chars + 1 };
    let marks = (last.saturating_sub(col)).max(1) as usize;
    let lead: String = source
        .chars()
        .take(col.saturating_sub(1) as usize)
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    out.push_str(&format!(
        "{pad} {} {lead}{}\n",
        paint("1;34", "|"),
        paint("1;31", &"^".repeat(marks))
    ));
    for note in &error.notes {
        out.push_str(&format!("{pad} {} {}: {note}\n", paint("1;34", "="), paint("1", "note")));
    }
    if let Some((span, what)) = error.related.as_deref() {
        let (file, range) = hir::file_range(db, *span);
        let (line, col) = LineIndex::new(file.text(db)).line_col_1based(range.start());
        let (path, line) = locate(file, line);
        let note = format!("{what} is at {path}:{line}:{col}");
        out.push_str(&format!("{pad} {} {}: {note}\n", paint("1;34", "="), paint("1", "note")));
    }
    if error.stack.len() > 1 {
        out.push_str("stack:\n");
        let lines: Vec<String> = error
            .stack
            .iter()
            .map(|frame| {
                let (file, range) = hir::file_range(db, frame.span);
                let index = LineIndex::new(file.text(db));
                let (line, col) = index.line_col_1based(range.start());
                let (path, line) = locate(file, line);
                format!("  at {} ({path}:{line}:{col})\n", frame.function)
            })
            .collect();
        out.push_str(&collapse_stack(&lines));
    }
    out
}

/// Stack lines with runs of identical lines (deep recursion) collapsed, and the middle of a long
/// stack left out.
fn collapse_stack(lines: &[String]) -> String {
    let mut runs: Vec<(String, usize)> = Vec::new();
    for line in lines {
        match runs.last_mut() {
            Some((last, count)) if last == line => *count += 1,
            _ => runs.push((line.clone(), 1)),
        }
    }
    let rendered: Vec<String> = runs
        .into_iter()
        .map(|(line, count)| match count {
            1 => line,
            2 => format!("{line}{line}"),
            _ => format!("{line}  ... the frame above repeated {} more times\n", count - 1),
        })
        .collect();
    if rendered.len() <= 2 * STACK_EDGE {
        return rendered.concat();
    }
    let omitted = rendered.len() - 2 * STACK_EDGE;
    format!(
        "{}  ... {omitted} more frames ...\n{}",
        rendered[..STACK_EDGE].concat(),
        rendered[rendered.len() - STACK_EDGE..].concat()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_accept_binary_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512K"), Ok(512 * 1024));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("3X").is_err());
    }

    #[test]
    fn repeated_frames_collapse() {
        let lines: Vec<String> = (0..5).map(|_| "  at f (a.nb:1:1)\n".to_owned()).collect();
        assert_eq!(
            collapse_stack(&lines),
            "  at f (a.nb:1:1)\n  ... the frame above repeated 4 more times\n"
        );
    }
}
