//! Printing diagnostics: rustc-style text with the source line and carets (coloured on request),
//! and the JSON form of `--format json`.

use std::{cell::RefCell, fmt::Write, rc::Rc, sync::Arc};

use hir::{Database, Diagnostic, Severity, SourceFile};
use syntax::{LineIndex, TextRange, TextSize};

/// A source line longer than this many bytes is shown as a window around the mark, so that a
/// file of one long line with many errors prints in linear time.
const MAX_SHOWN_LINE: usize = 160;

thread_local! {
    /// The line index of the text rendered last: building one is linear in the file's size, and
    /// consecutive diagnostics are mostly in one file.
    static LAST_INDEX: RefCell<Option<(Arc<str>, Rc<LineIndex>)>> = const { RefCell::new(None) };
}

fn line_index(db: &Database, file: SourceFile) -> Rc<LineIndex> {
    let text = file.text(db);
    LAST_INDEX.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((cached, index)) if Arc::ptr_eq(cached, text) => index.clone(),
            _ => {
                let index = Rc::new(LineIndex::new(text));
                *last = Some((text.clone(), index.clone()));
                index
            }
        }
    })
}

/// What of a line to show, given the byte where its first mark starts: the whole line, or a
/// window of it around the mark, cut at character boundaries and marked with `...`, when the
/// line is long; and the byte of the line the shown text starts at.
fn shown_line(line: &str, mark: usize) -> (String, usize) {
    if line.len() <= MAX_SHOWN_LINE {
        return (line.to_owned(), 0);
    }
    let floor = |mut i: usize| {
        i = i.min(line.len());
        while !line.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    let from = floor(mark.saturating_sub(MAX_SHOWN_LINE / 4));
    let to = floor(from + MAX_SHOWN_LINE);
    let prefix = if from > 0 { "..." } else { "" };
    let suffix = if to < line.len() { "..." } else { "" };
    (format!("{prefix}{}{suffix}", &line[from..to]), from)
}

struct Style {
    colour: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    fn severity(&self, severity: Severity, text: &str) -> String {
        match severity {
            Severity::Error => self.paint("1;31", text),
            Severity::Warning => self.paint("1;33", text),
        }
    }

    fn gutter(&self, text: &str) -> String {
        self.paint("1;34", text)
    }

    fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }
}

/// 1-based line and column of each end of `range`.
fn positions(index: &LineIndex, range: TextRange) -> ((u32, u32), (u32, u32)) {
    (index.line_col_1based(range.start()), index.line_col_1based(range.end()))
}

fn path_of(db: &Database, file: SourceFile) -> String {
    file.path(db).display().to_string()
}

/// One diagnostic, rustc-style:
///
/// ```text
/// error[E0203]: `k @ y`: `@` needs two tensors of rank 1 or more, but k is int
///   --> figure1.nb:31:7
///    |
/// 31 | p = m*k@y;
///    |       ^^^
///    = help: to scale a tensor by a number, use `*`
/// ```
pub fn human(db: &Database, diagnostic: &Diagnostic, colour: bool) -> String {
    human_located(db, diagnostic, colour, &|file, line| (path_of(db, file), line))
}

/// Where a line of a file is shown to be: the name and the 1-based line number to print for the
/// 1-based line `line` of `file`. Files on disk are shown as they are; a host that assembles a
/// file from pieces (the REPL) points back into the pieces.
pub type Locate<'a> = &'a dyn Fn(SourceFile, u32) -> (String, u32);

/// [`human`], with the places of lines given by `locate`.
pub fn human_located(
    db: &Database,
    diagnostic: &Diagnostic,
    colour: bool,
    locate: Locate<'_>,
) -> String {
    let style = Style { colour };
    let index = line_index(db, diagnostic.file);
    let ((line, col), _) = positions(&index, diagnostic.range);
    let mut lines: Vec<(SourceFile, TextRange, Option<&str>, bool)> =
        vec![(diagnostic.file, diagnostic.range, None, true)];
    for label in &diagnostic.labels {
        lines.push((label.file, label.range, Some(label.message.as_str()), false));
    }
    let width = lines
        .iter()
        .map(|(file, range, _, _)| {
            let line = line_index(db, *file).line_col_1based(range.start()).0;
            locate(*file, line).1.to_string().len()
        })
        .max()
        .unwrap_or(1);
    let pad = " ".repeat(width);
    let severity = match diagnostic.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}{}",
        style.severity(diagnostic.severity, &format!("{severity}[{}]", diagnostic.code)),
        style.bold(&format!(": {}", diagnostic.message))
    );
    let (name, shown) = locate(diagnostic.file, line);
    let _ = writeln!(out, "{pad}{} {name}:{shown}:{col}", style.gutter("-->"));
    let _ = writeln!(out, "{pad} {}", style.gutter("|"));
    // Annotated lines of the diagnostic's file in order, each printed once with its marks; labels
    // in other files follow under their own `:::` header.
    let mut annotations: Vec<(SourceFile, u32, TextRange, Option<&str>, bool)> = Vec::new();
    for (file, range, message, primary) in lines {
        let line = line_index(db, file).line_col_1based(range.start()).0;
        annotations.push((file, line, range, message, primary));
    }
    annotations.sort_by_key(|(file, line, _, _, primary)| {
        (*file != diagnostic.file, path_of(db, *file), *line, !*primary)
    });
    let mut previous: Option<(SourceFile, u32)> = None;
    let mut window = (String::new(), 0usize);
    for (file, line, range, message, primary) in annotations {
        let index = line_index(db, file);
        if previous.is_some_and(|(f, _)| f != file)
            || (previous.is_none() && file != diagnostic.file)
        {
            let (line, col) = index.line_col_1based(range.start());
            let (name, shown) = locate(file, line);
            let _ = writeln!(out, "{pad}{} {name}:{shown}:{col}", style.gutter(":::"));
        }
        let (_, col) = index.line_col_1based(range.start());
        let byte_col = index.line_col(range.start()).col;
        let line_start = range.start() - TextSize::from(byte_col);
        let source = index.line(line - 1);
        // Marks on the same line as the previous annotation use the window shown for it.
        let same_line = previous == Some((file, line));
        if !same_line {
            window = shown_line(source, byte_col as usize);
            if let Some((f, l)) = previous
                && f == file
                && line > l + 1
            {
                let _ = writeln!(out, "{}", style.gutter("..."));
            }
            let shown = locate(file, line).1;
            let _ = writeln!(
                out,
                "{} {} {}",
                style.gutter(&format!("{shown:>width$}")),
                style.gutter("|"),
                window.0
            );
        }
        previous = Some((file, line));
        let (end_line, end_col) = index.line_col_1based(range.end());
        let line_end = line_start + TextSize::of(source);
        let last =
            if end_line == line { end_col.max(col + 1) } else { index.line_col_1based(line_end).1 };
        let marks = (last.saturating_sub(col)).max(1).min(MAX_SHOWN_LINE as u32) as usize;
        let mark = if primary { "^" } else { "-" };
        let underline: String = mark.repeat(marks);
        let underline = if primary {
            style.severity(diagnostic.severity, &underline)
        } else {
            style.gutter(&underline)
        };
        // The characters before the mark in the shown text: the `...` and the window's start.
        let window_col = index.line_col_1based(line_start + TextSize::from(window.1 as u32)).1;
        let dots = if window.1 > 0 { 3 } else { 0 };
        let lead: String = window
            .0
            .chars()
            .take((col.saturating_sub(window_col) + dots) as usize)
            .map(|c| if c == '\t' { '\t' } else { ' ' })
            .collect();
        match message {
            Some(message) => {
                let _ = writeln!(out, "{pad} {} {lead}{underline} {message}", style.gutter("|"));
            }
            None => {
                let _ = writeln!(out, "{pad} {} {lead}{underline}", style.gutter("|"));
            }
        }
    }
    if let Some(help) = &diagnostic.help {
        let _ = writeln!(out, "{pad} {} {}: {help}", style.gutter("="), style.bold("help"));
    }
    for fix in &diagnostic.fixes {
        let _ = writeln!(out, "{pad} {} {}: {}", style.gutter("="), style.bold("fix"), fix.label);
    }
    out
}

/// Whether what goes to standard error may be coloured: it is a terminal and `NO_COLOR` is unset.
pub fn stderr_colour() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stderr()) && std::env::var_os("NO_COLOR").is_none()
}

/// The check errors of every file in `db`, rendered for standard error with a closing summary
/// line, or `None` when there are none: what `nabla run` and `nabla test` print before refusing
/// to run a program that does not check.
pub fn check_errors(db: &Database) -> Option<String> {
    let diagnostics: Vec<Diagnostic> = db
        .files()
        .into_iter()
        .flat_map(|file| hir::file_diagnostics(db, file).to_vec())
        .filter(|d| d.severity == Severity::Error)
        .collect();
    if diagnostics.is_empty() {
        return None;
    }
    let colour = stderr_colour();
    let mut text = String::new();
    for diagnostic in &diagnostics {
        text.push_str(&human(db, diagnostic, colour));
        text.push('\n');
    }
    text.push_str(&summary(diagnostics.len(), 0, colour));
    Some(text)
}

/// The warnings of every file in the database, rendered for standard error with a summary line,
/// or `None` when there is none: what `nabla run` and `nabla test` show before running.
pub fn warnings(db: &Database) -> Option<String> {
    let diagnostics: Vec<Diagnostic> = db
        .files()
        .into_iter()
        .flat_map(|file| hir::file_diagnostics(db, file).to_vec())
        .filter(|d| d.severity == Severity::Warning)
        .collect();
    if diagnostics.is_empty() {
        return None;
    }
    let colour = stderr_colour();
    let mut text = String::new();
    for diagnostic in &diagnostics {
        text.push_str(&human(db, diagnostic, colour));
        text.push('\n');
    }
    text.push_str(&summary(0, diagnostics.len(), colour));
    Some(text)
}

pub fn summary(errors: usize, warnings: usize, colour: bool) -> String {
    let style = Style { colour };
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let text = format!("{}, {}", plural(errors, "error"), plural(warnings, "warning"));
    if errors > 0 {
        format!("{}: {text}\n", style.severity(Severity::Error, "check failed"))
    } else {
        format!("{}: {text}\n", style.severity(Severity::Warning, "check passed"))
    }
}

/// All diagnostics as one JSON array (`[]` when there are none), with 1-based positions.
pub fn json(db: &Database, diagnostics: &[Diagnostic]) -> String {
    let mut indexes: Vec<(SourceFile, LineIndex)> = Vec::new();
    let mut array = Vec::new();
    for diagnostic in diagnostics {
        let position = indexes.iter().position(|(file, _)| *file == diagnostic.file);
        let index = match position {
            Some(i) => &indexes[i].1,
            None => {
                indexes.push((diagnostic.file, LineIndex::new(diagnostic.file.text(db))));
                &indexes[indexes.len() - 1].1
            }
        };
        let ((line, column), (end_line, end_column)) = positions(index, diagnostic.range);
        array.push(serde_json::json!({
            "file": path_of(db, diagnostic.file),
            "line": line,
            "column": column,
            "end_line": end_line,
            "end_column": end_column,
            "severity": match diagnostic.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            },
            "code": diagnostic.code.as_str(),
            "message": diagnostic.message,
        }));
    }
    let mut text = serde_json::Value::Array(array).to_string();
    text.push('\n');
    text
}
