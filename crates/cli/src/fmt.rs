//! `nabla fmt [--check] [PATH ...]`: formats files and directories (recursively, every `.nb`
//! file) in place, or, with `--check`, prints a unified diff of what would change and exits with 1
//! if anything would. `-` formats standard input to standard output. A file with syntax errors is
//! left untouched; its errors are printed as `FILE:LINE:COL: error: message` and the exit status
//! is 1.
//!
//! A file is rewritten through a temporary file in its directory, renamed over it, so that a
//! crash never leaves half a file; the file keeps its permissions.

use std::{
    fs,
    io::{Read, Write},
    path::{Path, PathBuf},
    process::ExitCode,
};

use crate::source;

/// What `nabla fmt` does with the files.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Write nothing; print a diff per file that would change.
    pub check: bool,
}

/// What happened to one input, for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Unchanged,
    /// Rewritten, or with `--check`, would be.
    Changed,
    /// Not read, not formatted or not written; the reason is printed.
    Failed,
}

pub fn run(paths: &[PathBuf], options: Options) -> ExitCode {
    let roots: Vec<PathBuf> =
        if paths.is_empty() { vec![PathBuf::from(".")] } else { paths.to_vec() };
    let mut outcomes = Vec::new();
    for root in &roots {
        if root.as_os_str() == "-" {
            outcomes.push(standard_input(options));
            continue;
        }
        let mut files = Vec::new();
        match source::collect(root, &mut files) {
            Ok(()) => outcomes.extend(files.iter().map(|file| one_file(file, options))),
            Err(message) => {
                eprintln!("error: {message}");
                outcomes.push(Outcome::Failed);
            }
        }
    }
    let failed = outcomes.contains(&Outcome::Failed);
    let would_change = options.check && outcomes.contains(&Outcome::Changed);
    if failed || would_change { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn one_file(path: &Path, options: Options) -> Outcome {
    let text = match source::read(path) {
        Ok(text) => text,
        Err(message) => {
            eprintln!("error: {message}");
            return Outcome::Failed;
        }
    };
    let label = path.display().to_string();
    let Some(formatted) = format_or_report(&label, &text) else { return Outcome::Failed };
    if formatted == text {
        return Outcome::Unchanged;
    }
    if options.check {
        print_diff(&label, &text, &formatted);
        return Outcome::Changed;
    }
    match write_atomically(path, &formatted) {
        Ok(()) => Outcome::Changed,
        Err(message) => {
            eprintln!("error: {message}");
            Outcome::Failed
        }
    }
}

/// `-`: standard input to standard output. With syntax errors the input is written back as it
/// is, so that a pipe never loses the text.
fn standard_input(options: Options) -> Outcome {
    let mut bytes = Vec::new();
    let limit = source::max_source_bytes();
    if let Err(err) = std::io::stdin().take(limit + 1).read_to_end(&mut bytes) {
        eprintln!("error: cannot read standard input: {err}");
        return Outcome::Failed;
    }
    if bytes.len() as u64 > limit {
        eprintln!("error: standard input is over the limit of {limit} bytes");
        return Outcome::Failed;
    }
    let Ok(text) = String::from_utf8(bytes) else {
        eprintln!("error: standard input is not valid UTF-8; Nabla sources are UTF-8");
        return Outcome::Failed;
    };
    let label = "<stdin>";
    let formatted = format_or_report(label, &text);
    if options.check {
        return match formatted {
            Some(formatted) if formatted != text => {
                print_diff(label, &text, &formatted);
                Outcome::Changed
            }
            Some(_) => Outcome::Unchanged,
            None => Outcome::Failed,
        };
    }
    let (output, outcome) = match &formatted {
        Some(formatted) if *formatted == text => (formatted.as_str(), Outcome::Unchanged),
        Some(formatted) => (formatted.as_str(), Outcome::Changed),
        None => (text.as_str(), Outcome::Failed),
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(err) = stdout.write_all(output.as_bytes()).and_then(|()| stdout.flush()) {
        eprintln!("error: cannot write standard output: {err}");
        return Outcome::Failed;
    }
    outcome
}

/// The formatted text, or `None` after printing why there is none.
fn format_or_report(label: &str, text: &str) -> Option<String> {
    match ::fmt::format(text) {
        Ok(formatted) => Some(formatted),
        Err(::fmt::FormatError::Syntax(errors)) => {
            let index = syntax::LineIndex::new(text);
            for error in &errors {
                let (line, col) = index.line_col_1based(error.range.start());
                eprintln!("{label}:{line}:{col}: error: {}", error.message);
            }
            eprintln!("{label}: not formatted: the file has syntax errors");
            None
        }
        Err(err @ ::fmt::FormatError::Internal(_)) => {
            eprintln!("{label}: error: {err}");
            None
        }
    }
}

/// A unified diff of `before` and `after`, with three lines of context.
fn print_diff(label: &str, before: &str, after: &str) {
    let diff = similar::TextDiff::from_lines(before, after);
    let text = diff.unified_diff().context_radius(3).header(label, label).to_string();
    let mut stdout = std::io::stdout().lock();
    // A closed pipe (`nabla fmt --check | head`) is not an error worth reporting.
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Replaces the file at `path` with `text`: written to a temporary file beside it, then renamed
/// over it. A symbolic link is followed, so the file it points to is the one replaced.
fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let cannot =
        |what: &str, err: std::io::Error| format!("cannot {what} {}: {err}", path.display());
    let target = fs::canonicalize(path).map_err(|err| cannot("resolve", err))?;
    let permissions = fs::metadata(&target).map_err(|err| cannot("read", err))?.permissions();
    let dir = target.parent().ok_or_else(|| format!("{} has no directory", path.display()))?;
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (temporary, mut file) = create_temporary(dir, &name).map_err(|err| cannot("write", err))?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| fs::set_permissions(&temporary, permissions))
        .and_then(|()| fs::rename(&temporary, &target));
    drop(file);
    written.map_err(|err| {
        let _ = fs::remove_file(&temporary);
        cannot("write", err)
    })
}

/// A new file `.NAME.N.nabla-fmt` in `dir`, with the first `N` not taken.
fn create_temporary(dir: &Path, name: &str) -> std::io::Result<(PathBuf, fs::File)> {
    let mut attempt = 0u32;
    loop {
        let path = dir.join(format!(".{name}.{}.{attempt}.nabla-fmt", std::process::id()));
        match fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, file)),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                attempt += 1;
            }
            Err(err) => return Err(err),
        }
    }
}
