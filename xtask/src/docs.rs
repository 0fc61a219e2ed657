//! The check of the Nabla code blocks in the documentation (`README.md` and `docs/**/*.md`), a
//! step of `cargo xtask test` and `cargo xtask docs`: every fenced block whose info string is
//! `nabla` must pass the real `nabla check`, and the blocks marked `run` must also pass
//! `nabla run`. `docs/README.md` ("Code blocks in these docs") documents the markers:
//!
//! - `nabla`: checks without any diagnostic;
//! - `nabla,run`: also runs, exiting with status 0;
//! - `nabla,error=E0204`: the check fails, and reports that code;
//! - `nabla,warning=W0001`: the check passes, and reports that warning;
//! - `nabla,run-error=R0200`: the check passes without errors, and `nabla run` fails with that
//!   run-time code;
//! - `nabla,ignore`: not checked (a fragment, or pseudo-code).
//!
//! `check-nan` beside `run` or `run-error=` runs the block with `nabla run --check-nan`. A fence
//! `text,output` right after a block that runs holds what `nabla run` prints (both streams,
//! without colour), and must equal it.
//!
//! A block that starts with `//- NAME.nb` holds several files, each after its `//- ` line (the
//! fixture format of the checker's tests); the first one is checked and run, and imports the
//! others. This module knows Markdown fences and the `nabla` command line, nothing of the crates.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

/// What a block promises.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// `nabla check` passes with no diagnostic.
    Check,
    /// `nabla check` passes with no diagnostic, and `nabla run` exits with 0.
    Run,
    /// `nabla check` fails with an error of this code.
    Error(String),
    /// `nabla check` passes and reports a warning of this code.
    Warning(String),
    /// `nabla check` passes (warnings allowed), and `nabla run` fails with this run-time code.
    RunError(String),
    /// Not checked.
    Ignore,
}

/// A fenced Nabla code block of a Markdown file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The 1-based line of the opening fence.
    pub line: usize,
    pub expect: Expect,
    /// The text between the fences, with the fence's indentation removed.
    pub text: String,
    /// `check-nan`: run with `nabla run --check-nan`.
    pub check_nan: bool,
    /// The text of a `text,output` block right after this one: what the run must print.
    pub output: Option<String>,
}

/// The Nabla blocks of a Markdown text, or the first malformed info string or unclosed fence.
pub fn nabla_blocks(markdown: &str) -> Result<Vec<Block>, String> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut lines = markdown.lines().enumerate();
    // Whether the last fenced block was the last of `blocks` (a `text,output` block belongs to it).
    let mut last_was_nabla = false;
    while let Some((index, line)) = lines.next() {
        let Some(fence) = Fence::open(line) else { continue };
        let mut text = String::new();
        let mut closed = false;
        for (_, inner) in lines.by_ref() {
            if fence.closes(inner) {
                closed = true;
                break;
            }
            text.push_str(strip_indent(inner, fence.indent));
            text.push('\n');
        }
        if !closed {
            return Err(format!("line {}: the code block is never closed", index + 1));
        }
        if is_output(fence.info) {
            let runs = |block: &Block| matches!(block.expect, Expect::Run | Expect::RunError(_));
            match blocks.last_mut() {
                Some(block) if last_was_nabla && runs(block) && block.output.is_none() => {
                    block.output = Some(text);
                }
                _ => {
                    return Err(format!(
                        "line {}: a `text,output` block must follow a `nabla,run` or \
                         `nabla,run-error=` block",
                        index + 1
                    ));
                }
            }
            last_was_nabla = false;
            continue;
        }
        let (expect, check_nan) = match parse_info(fence.info) {
            Ok(Some(parsed)) => parsed,
            Ok(None) => {
                last_was_nabla = false;
                continue;
            }
            Err(message) => return Err(format!("line {}: {message}", index + 1)),
        };
        blocks.push(Block { line: index + 1, expect, text, check_nan, output: None });
        last_was_nabla = true;
    }
    Ok(blocks)
}

/// Whether a fence's info string is `text,output`: the output of the Nabla block before it.
fn is_output(info: &str) -> bool {
    let words: Vec<&str> = info.split([',', ' ']).filter(|word| !word.is_empty()).collect();
    words == ["text", "output"]
}

/// An opening code fence: three or more backticks or tildes, then the info string.
struct Fence<'a> {
    indent: usize,
    marker: char,
    len: usize,
    info: &'a str,
}

impl<'a> Fence<'a> {
    fn open(line: &'a str) -> Option<Fence<'a>> {
        let rest = line.trim_start_matches(' ');
        let indent = line.len() - rest.len();
        let marker = rest.chars().next().filter(|c| matches!(c, '`' | '~'))?;
        let len = rest.chars().take_while(|&c| c == marker).count();
        let info = rest[len..].trim();
        // A backtick fence's info string may not contain a backtick (CommonMark); that line is
        // inline code.
        let inline_code = marker == '`' && info.contains('`');
        (len >= 3 && !inline_code).then_some(Fence { indent, marker, len, info })
    }

    fn closes(&self, line: &str) -> bool {
        let rest = line.trim();
        rest.len() >= self.len && rest.chars().all(|c| c == self.marker)
    }
}

/// `line` without up to `indent` leading spaces.
fn strip_indent(line: &str, indent: usize) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(indent)..]
}

/// What an info string asks for, and whether it runs with `--check-nan`: `None` when the block
/// is not Nabla.
fn parse_info(info: &str) -> Result<Option<(Expect, bool)>, String> {
    let mut words = info.split([',', ' ']).map(str::trim).filter(|word| !word.is_empty());
    if words.next() != Some("nabla") {
        return Ok(None);
    }
    let mut expect = Expect::Check;
    let mut check_nan = false;
    for word in words {
        if word == "check-nan" {
            check_nan = true;
            continue;
        }
        let next = match word.split_once('=') {
            None if word == "run" => Expect::Run,
            None if word == "ignore" => Expect::Ignore,
            Some(("error", code)) if is_code(code, 'E') => Expect::Error(code.to_owned()),
            Some(("warning", code)) if is_code(code, 'W') => Expect::Warning(code.to_owned()),
            Some(("run-error", code)) if is_code(code, 'R') => Expect::RunError(code.to_owned()),
            _ => {
                return Err(format!(
                    "unknown marker `{word}` in `{info}`; a Nabla block is marked `nabla`, \
                     `nabla,run`, `nabla,error=E0000`, `nabla,warning=W0000`, \
                     `nabla,run-error=R0000` or `nabla,ignore`, and `check-nan` may follow \
                     `run` or `run-error=`"
                ));
            }
        };
        if expect != Expect::Check {
            return Err(format!("`{info}` has more than one marker"));
        }
        expect = next;
    }
    if check_nan && !matches!(expect, Expect::Run | Expect::RunError(_)) {
        return Err(format!("`{info}`: `check-nan` needs `run` or `run-error=`"));
    }
    Ok(Some((expect, check_nan)))
}

/// `E0204` for `prefix` `E`: the letter and four digits.
fn is_code(code: &str, prefix: char) -> bool {
    code.len() == 5 && code.starts_with(prefix) && code[1..].chars().all(|c| c.is_ascii_digit())
}

/// The files of a block: `(name, text)`, the first being the one to check and run.
pub fn block_files(text: &str) -> Vec<(String, String)> {
    if !text.starts_with("//- ") {
        return vec![("main.nb".to_owned(), text.to_owned())];
    }
    let mut files: Vec<(String, String)> = Vec::new();
    for line in text.split_inclusive('\n') {
        match line.strip_prefix("//- ") {
            Some(name) => files.push((name.trim().to_owned(), String::new())),
            None => {
                if let Some((_, body)) = files.last_mut() {
                    body.push_str(line);
                }
            }
        }
    }
    files
}

/// The Markdown files whose blocks are checked: `README.md` and everything under `docs/`.
fn markdown_files(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|err| format!("cannot read {}: {err}", dir.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// What running `nabla` printed, both streams, and whether it exited with 0.
struct Outcome {
    success: bool,
    output: String,
}

fn nabla(binary: &Path, dir: &Path, args: &[&str]) -> Result<Outcome, String> {
    let output = Command::new(binary)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .map_err(|err| format!("cannot start {}: {err}", binary.display()))?;
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    Ok(Outcome { success: output.status.success(), output: text })
}

/// Checks (and runs) one block in a fresh temporary directory, removed on return; `Err` says how
/// it broke its promise.
fn check_block(binary: &Path, block: &Block) -> Result<(), String> {
    let dir = tempfile::TempDir::with_prefix("nabla-docs-")
        .map_err(|err| format!("cannot create a temporary directory: {err}"))?;
    let scratch = dir.path();
    let files = block_files(&block.text);
    for (name, text) in &files {
        let path = scratch.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
        }
        std::fs::write(&path, text)
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    }
    let main = files.first().map_or("main.nb", |(name, _)| name.as_str());
    let check = nabla(binary, scratch, &["check", main])?;
    let run_args: &[&str] =
        if block.check_nan { &["run", "--check-nan", main] } else { &["run", main] };
    let reported = |kind: &str, code: &str| check.output.contains(&format!("{kind}[{code}]"));
    match &block.expect {
        Expect::Ignore => Ok(()),
        Expect::Check | Expect::Run if !check.success || !check.output.is_empty() => {
            Err(format!("`nabla check` reports:\n{}", check.output))
        }
        Expect::Check => Ok(()),
        Expect::Run => {
            let run = nabla(binary, scratch, run_args)?;
            match run.success {
                true => same_output(block, &run.output),
                false => Err(format!("`nabla run` fails:\n{}", run.output)),
            }
        }
        Expect::Error(code) if check.success || !reported("error", code) => Err(format!(
            "the block is marked `error={code}`, but `nabla check` {}:\n{}",
            if check.success { "passes" } else { "does not report it" },
            check.output
        )),
        Expect::Warning(code) if !check.success || !reported("warning", code) => Err(format!(
            "the block is marked `warning={code}`, but `nabla check` {}:\n{}",
            if check.success { "does not report it" } else { "fails" },
            check.output
        )),
        Expect::RunError(_) if !check.success => Err(format!(
            "the block is marked `run-error`, but `nabla check` fails:\n{}",
            check.output
        )),
        Expect::RunError(code) => {
            let run = nabla(binary, scratch, run_args)?;
            match !run.success && run.output.contains(&format!("error[{code}]")) {
                true => same_output(block, &run.output),
                false => Err(format!(
                    "the block is marked `run-error={code}`, but `nabla run` {}:\n{}",
                    if run.success { "succeeds" } else { "does not report it" },
                    run.output
                )),
            }
        }
        Expect::Error(_) | Expect::Warning(_) => Ok(()),
    }
}

/// `Err` when the block is followed by a `text,output` block that is not what the run printed
/// (trailing white space aside).
fn same_output(block: &Block, printed: &str) -> Result<(), String> {
    match &block.output {
        Some(shown) if shown.trim_end() != printed.trim_end() => Err(format!(
            "the `text,output` block after it is not what `nabla run` prints:\n{printed}"
        )),
        _ => Ok(()),
    }
}

/// Checks every Nabla block of the documentation with the `nabla` binary at `binary`.
pub fn check(root: &Path, binary: &Path) -> Result<(), String> {
    let mut failures = Vec::new();
    let mut counts = [0usize; 6];
    let mut outputs = 0;
    for path in markdown_files(root)? {
        let shown = path.strip_prefix(root).unwrap_or(&path).display().to_string();
        let text = std::fs::read_to_string(&path)
            .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
        let blocks = match nabla_blocks(&text) {
            Ok(blocks) => blocks,
            Err(message) => {
                failures.push(format!("{shown}:{message}"));
                continue;
            }
        };
        for block in &blocks {
            counts[match block.expect {
                Expect::Check => 0,
                Expect::Run => 1,
                Expect::Error(_) => 2,
                Expect::Warning(_) => 3,
                Expect::RunError(_) => 4,
                Expect::Ignore => 5,
            }] += 1;
            outputs += usize::from(block.output.is_some());
            if let Err(message) = check_block(binary, block) {
                failures.push(format!("{shown}:{}: {message}", block.line));
            }
        }
    }
    let [checked, run, errors, warnings, run_errors, ignored] = counts;
    eprintln!(
        "docs: {} Nabla code blocks: {checked} checked, {run} also run, {errors} with an expected \
         error, {warnings} with an expected warning, {run_errors} with an expected run-time \
         error, {ignored} ignored; {outputs} outputs compared; {} failed",
        checked + run + errors + warnings + run_errors + ignored,
        failures.len()
    );
    match failures.is_empty() {
        true => Ok(()),
        false => Err(format!("{} code blocks failed:\n\n{}", failures.len(), failures.join("\n"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expects(markdown: &str) -> Vec<(usize, Expect, String)> {
        let blocks = nabla_blocks(markdown).unwrap_or_else(|err| panic!("{err}"));
        blocks.into_iter().map(|b| (b.line, b.expect, b.text)).collect()
    }

    #[test]
    fn markers_say_what_a_block_promises() {
        let markdown = "text\n```nabla\nprint(1);\n```\n```nabla,run\nprint(2);\n```\n\
                        ```nabla,error=E0204\nint x = 1.5;\n```\n\
                        ```nabla, warning=W0001\nx;\n```\n```nabla,run-error=R0200\ny;\n```\n\
                        ```nabla,ignore\n...\n```\n";
        assert_eq!(
            expects(markdown),
            [
                (2, Expect::Check, "print(1);\n".to_owned()),
                (5, Expect::Run, "print(2);\n".to_owned()),
                (8, Expect::Error("E0204".to_owned()), "int x = 1.5;\n".to_owned()),
                (11, Expect::Warning("W0001".to_owned()), "x;\n".to_owned()),
                (14, Expect::RunError("R0200".to_owned()), "y;\n".to_owned()),
                (17, Expect::Ignore, "...\n".to_owned()),
            ]
        );
    }

    #[test]
    fn other_blocks_are_skipped_whole() {
        // The `nabla` inside the shell block is not a fence; the tilde block holds backticks.
        let markdown = "```sh\nnabla run x.nb\n```nabla\n```\n~~~\n```nabla\n~~~\n```\nplain\n```\n\
                        `` ```nabla `` is inline code\n";
        assert_eq!(expects(markdown), []);
    }

    #[test]
    fn indented_blocks_lose_the_fence_indentation() {
        let markdown = "1. A list item:\n\n   ```nabla\n   if (x) {\n       y;\n   }\n   ```\n";
        assert_eq!(expects(markdown), [(3, Expect::Check, "if (x) {\n    y;\n}\n".to_owned())]);
    }

    #[test]
    fn malformed_markers_and_unclosed_blocks_are_errors() {
        let unknown = nabla_blocks("```nabla,runn\nx\n```\n").err().unwrap_or_default();
        assert!(unknown.starts_with("line 1: unknown marker `runn`"), "{unknown}");
        let bad_code = nabla_blocks("```nabla,error=W0001\nx\n```\n").err().unwrap_or_default();
        assert!(bad_code.starts_with("line 1: unknown marker `error=W0001`"), "{bad_code}");
        let two = nabla_blocks("```nabla,run,ignore\nx\n```\n").err().unwrap_or_default();
        assert_eq!(two, "line 1: `nabla,run,ignore` has more than one marker");
        let open = nabla_blocks("a\n````nabla\nx\n```\n").err().unwrap_or_default();
        assert_eq!(open, "line 2: the code block is never closed");
    }

    #[test]
    fn a_run_may_check_nans_and_show_its_output() {
        let markdown = "```nabla,run-error=R0604,check-nan\nx;\n```\n\n```text,output\n\
                        error[R0604]: ...\n```\n```nabla,run\ny;\n```\n```text\nnot compared\n```\n";
        let blocks = nabla_blocks(markdown).unwrap_or_else(|err| panic!("{err}"));
        let summary: Vec<_> = blocks
            .iter()
            .map(|b| (b.line, b.expect.clone(), b.check_nan, b.output.clone()))
            .collect();
        assert_eq!(
            summary,
            [
                (
                    1,
                    Expect::RunError("R0604".to_owned()),
                    true,
                    Some("error[R0604]: ...\n".to_owned())
                ),
                (8, Expect::Run, false, None),
            ]
        );
        let lone = nabla_blocks("```text,output\nx\n```\n").err().unwrap_or_default();
        assert!(lone.starts_with("line 1: a `text,output` block must follow"), "{lone}");
        let after_check =
            nabla_blocks("```nabla\nx;\n```\n```text,output\nx\n```\n").err().unwrap_or_default();
        assert!(
            after_check.starts_with("line 4: a `text,output` block must follow"),
            "{after_check}"
        );
        let nan_check = nabla_blocks("```nabla,check-nan\nx;\n```\n").err().unwrap_or_default();
        assert_eq!(nan_check, "line 1: `nabla,check-nan`: `check-nan` needs `run` or `run-error=`");
    }

    #[test]
    fn a_block_may_hold_several_files() {
        let text =
            "//- main.nb\nimport \"lib/f.nb\";\n//- lib/f.nb\nfunction int f() { return 1; }\n";
        assert_eq!(
            block_files(text),
            [
                ("main.nb".to_owned(), "import \"lib/f.nb\";\n".to_owned()),
                ("lib/f.nb".to_owned(), "function int f() { return 1; }\n".to_owned()),
            ]
        );
        assert_eq!(block_files("print(1);\n"), [("main.nb".to_owned(), "print(1);\n".to_owned())]);
    }
}
