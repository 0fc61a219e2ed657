//! Inputs at and past the limits, through the built binary on its default main-thread stack: deep
//! nesting and long chains, files over the size limit, binary files, empty files, directories
//! given as files, and `nabla fmt` dying or failing while it writes. Each gets a clean error and
//! a non-zero exit status (or succeeds, for the empty file); none may crash or lose the file.

use std::{
    io::Write,
    path::Path,
    process::{Command, Output, Stdio},
};

use tempfile::TempDir;

/// What a run printed and how it ended.
struct Run {
    stdout: String,
    stderr: String,
    /// The exit code; `None` if a signal ended the process.
    code: Option<i32>,
}

impl Run {
    fn from(output: Output) -> Run {
        Run {
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            code: output.status.code(),
        }
    }

    fn text(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// Exited with `code` by itself, without a panic.
    fn assert_exit(&self, code: i32, what: &str) {
        let tail: String =
            self.stderr.chars().rev().take(600).collect::<Vec<_>>().into_iter().rev().collect();
        assert_eq!(self.code, Some(code), "{what}: exit status; stderr ends with:\n{tail}");
        assert!(!self.stderr.contains("panicked"), "{what}: panicked:\n{tail}");
    }
}

fn nabla(dir: &Path, args: &[&str], envs: &[(&str, &str)], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nabla"))
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run nabla: {err}"));
    let input = child.stdin.take();
    let stdin = stdin.to_vec();
    // A child that stops reading early (over the limit) closes the pipe: not an error here.
    let writer = std::thread::spawn(move || {
        if let Some(mut input) = input {
            let _ = input.write_all(&stdin);
        }
    });
    let output = child.wait_with_output().unwrap_or_else(|err| panic!("{err}"));
    let _ = writer.join();
    Run::from(output)
}

/// A fresh directory holding `files` (name and bytes), removed when the guard is dropped.
fn scratch(name: &str, files: &[(&str, &[u8])]) -> TempDir {
    let dir =
        TempDir::with_prefix(format!("nabla-limits-{name}-")).unwrap_or_else(|err| panic!("{err}"));
    for (path, bytes) in files {
        std::fs::write(dir.path().join(path), bytes).unwrap_or_else(|err| panic!("{err}"));
    }
    dir
}

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The commands that read a source file, as they are run on `file`, and the exit status each
/// gives for a file it refuses (`nabla run` tells check errors from run-time errors).
const COMMANDS: [(&[&str], i32); 4] =
    [(&["parse"], 1), (&["check"], 1), (&["fmt", "--check"], 1), (&["run"], 2)];

fn with_file<'a>(command: &[&'a str], file: &'a str) -> Vec<&'a str> {
    let mut args = command.to_vec();
    args.push(file);
    args
}

/// Ten thousand levels of every kind of nesting, and chains longer than a tree may be deep.
fn deep_inputs() -> Vec<(&'static str, String)> {
    let n = 10_000;
    let chain = 30_000;
    vec![
        ("parentheses", format!("x = {}1{};\n", "(".repeat(n), ")".repeat(n))),
        ("brackets", format!("x = {}1{};\n", "[".repeat(n), "]".repeat(n))),
        ("call arguments", format!("x = {}1{};\n", "f(".repeat(n), ")".repeat(n))),
        ("blocks", format!("{}x;{}\n", "{".repeat(n), "}".repeat(n))),
        ("if blocks", format!("{}x;{}\n", "if (x) {".repeat(n), "}".repeat(n))),
        ("loops", format!("{}x;{}\n", "loop (;;) {".repeat(n), "}".repeat(n))),
        ("prefix operators", format!("x = {}1;\n", "-".repeat(n))),
        ("negations", format!("x = {}1;\n", "!".repeat(n))),
        ("casts", format!("x = {}1;\n", "(int)".repeat(n))),
        ("sizeof", format!("x = {}x;\n", "sizeof ".repeat(n))),
        ("conditionals", format!("x = {}1;\n", "a ? b : ".repeat(n))),
        ("assignments", format!("{}1;\n", "x = ".repeat(n))),
        ("unclosed parentheses", format!("x = {}\n", "(".repeat(n))),
        ("unclosed blocks", "{".repeat(n)),
        ("operator chain", format!("x = {}1;\n", "1+".repeat(chain))),
        ("spaced operator chain", format!("x = {}1;\n", "1 + ".repeat(chain))),
        ("call chain", format!("x = f{};\n", "()".repeat(chain))),
        ("index chain", format!("x = a{};\n", "[0]".repeat(chain))),
    ]
}

#[test]
fn deep_nesting_and_long_chains_are_clean_errors() {
    let dir = scratch("deep", &[]);
    for (name, text) in deep_inputs() {
        std::fs::write(dir.path().join("deep.nb"), &text).unwrap_or_else(|err| panic!("{err}"));
        for (command, status) in COMMANDS {
            let run = nabla(dir.path(), &with_file(command, "deep.nb"), &[], b"");
            let what = format!("{name}: nabla {}", command.join(" "));
            run.assert_exit(status, &what);
            let output = run.text();
            assert!(
                output.contains("nesting is too deep") || output.contains("nests too deeply"),
                "{what}: no nesting error"
            );
        }
        assert_eq!(read(&dir.path().join("deep.nb")), text.as_bytes(), "{name}: the file changed");
    }
}

#[test]
fn chains_within_the_depth_limit_are_fine() {
    let dir = scratch("chains", &[]);
    let text = format!("float x = {}1.0;\nprint(x);\n", "1.0 + ".repeat(9_000));
    std::fs::write(dir.path().join("chain.nb"), &text).unwrap_or_else(|err| panic!("{err}"));
    for command in [&["parse"][..], &["check"], &["fmt"], &["fmt", "--check"], &["run"]] {
        let run = nabla(dir.path(), &with_file(command, "chain.nb"), &[], b"");
        run.assert_exit(0, &format!("nabla {}", command.join(" ")));
    }
}

#[test]
fn files_over_the_size_limit_are_refused() {
    let text = format!("int x = 1;\n{}", "x = x + 1;\n".repeat(200));
    assert_eq!(text.len(), 2211);
    let dir = scratch("size", &[("big.nb", text.as_bytes())]);
    let limit = [("NABLA_MAX_SOURCE_BYTES", "1000")];
    for (command, status) in COMMANDS {
        let what = format!("nabla {}", command.join(" "));
        let run = nabla(dir.path(), &with_file(command, "big.nb"), &limit, b"");
        run.assert_exit(status, &what);
        assert!(
            run.stderr.contains("is 2211 bytes; source files are limited to 1000 bytes"),
            "{what}: {}",
            run.stderr
        );
        let roomy = nabla(
            dir.path(),
            &with_file(command, "big.nb"),
            &[("NABLA_MAX_SOURCE_BYTES", "2211")],
            b"",
        );
        roomy.assert_exit(0, &format!("{what}, at the limit"));
    }
    let run = nabla(dir.path(), &["fmt", "-"], &limit, text.as_bytes());
    run.assert_exit(1, "nabla fmt -");
    assert!(run.stderr.contains("over the limit of 1000 bytes"), "{}", run.stderr);
    // The variable lowers the limit; it does not raise it past the built-in one.
    let run = nabla(
        dir.path(),
        &["check", "big.nb"],
        &[("NABLA_MAX_SOURCE_BYTES", "1000000000000")],
        b"",
    );
    run.assert_exit(0, "a limit above the built-in one");
}

#[test]
fn binary_files_are_clean_errors() {
    let invalid: &[u8] = b"int x = 1;\nx\x00\xff\xfe = \x80\x81;\n";
    let controls: &[u8] = b"int x = 1;\x00\x00\x01\x7f\x1b[31m;\n\x00";
    let dir = scratch("binary", &[("invalid.nb", invalid), ("controls.nb", controls)]);
    for (command, status) in COMMANDS {
        let what = format!("nabla {}", command.join(" "));
        let run = nabla(dir.path(), &with_file(command, "invalid.nb"), &[], b"");
        run.assert_exit(status, &what);
        assert!(
            run.stderr.contains("invalid.nb:2:3: the file is not valid UTF-8 (byte 0xff)"),
            "{what}: {}",
            run.stderr
        );
        let run = nabla(dir.path(), &with_file(command, "controls.nb"), &[], b"");
        run.assert_exit(status, &what);
        assert!(run.text().contains("unexpected control character"), "{what}: {}", run.text());
    }
    let run = nabla(dir.path(), &["fmt", "-"], &[], invalid);
    run.assert_exit(1, "nabla fmt -");
    assert!(run.stderr.contains("not valid UTF-8"), "{}", run.stderr);
    assert_eq!(read(&dir.path().join("invalid.nb")), invalid);
    assert_eq!(read(&dir.path().join("controls.nb")), controls);
}

#[test]
fn empty_files_are_fine() {
    let dir = scratch("empty", &[("empty.nb", b"")]);
    for command in [&["parse"][..], &["check"], &["fmt"], &["fmt", "--check"], &["run"]] {
        let run = nabla(dir.path(), &with_file(command, "empty.nb"), &[], b"");
        run.assert_exit(0, &format!("nabla {}", command.join(" ")));
    }
    assert_eq!(read(&dir.path().join("empty.nb")), b"");
    let run = nabla(dir.path(), &["fmt", "-"], &[], b"");
    run.assert_exit(0, "nabla fmt -");
    assert_eq!(run.stdout, "");
}

#[test]
fn a_directory_given_as_a_file_is_a_clean_error() {
    let dir = scratch("directory", &[]);
    std::fs::create_dir_all(dir.path().join("sub.nb")).unwrap_or_else(|err| panic!("{err}"));
    let run = nabla(dir.path(), &["parse", "sub.nb"], &[], b"");
    run.assert_exit(1, "nabla parse DIRECTORY");
    assert!(run.stderr.contains("sub.nb is a directory, not a source file"), "{}", run.stderr);
    let run = nabla(dir.path(), &["run", "sub.nb"], &[], b"");
    run.assert_exit(2, "nabla run DIRECTORY");
    assert!(run.stderr.contains("sub.nb is a directory, not a source file"), "{}", run.stderr);
    // Check and fmt take directories, and search them for `.nb` files: this one has none.
    for command in [&["check"][..], &["fmt"]] {
        nabla(dir.path(), &with_file(command, "sub.nb"), &[], b"").assert_exit(0, command[0]);
    }
    let missing = nabla(dir.path(), &["check", "missing.nb"], &[], b"");
    missing.assert_exit(1, "nabla check MISSING");
}

/// An unformatted file bigger than the file-size limit that `sh -c 'ulimit -f 4'` sets (4 blocks
/// of 512 or 1024 bytes, depending on the shell), so that writing its formatted text fails.
fn big_unformatted() -> String {
    "int x=1;\n".repeat(2_000)
}

/// Runs `nabla fmt FILE` under a file-size limit. With `ignore_signal`, exceeding the limit is a
/// write error (`EFBIG`), as a full disk gives `ENOSPC`; without, the kernel kills the process
/// in the middle of writing.
fn fmt_under_size_limit(dir: &Path, file: &str, ignore_signal: bool) -> Run {
    let trap = if ignore_signal { "trap '' XFSZ; " } else { "" };
    let script = format!("{trap}ulimit -f 4 && exec \"$0\" fmt \"$1\"");
    let output = Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_nabla"), file])
        .current_dir(dir)
        .output()
        .unwrap_or_else(|err| panic!("cannot run sh: {err}"));
    Run::from(output)
}

#[test]
fn fmt_killed_while_writing_leaves_the_file_intact() {
    let original = big_unformatted();
    let dir = scratch("killed", &[("prog.nb", original.as_bytes())]);
    let run = fmt_under_size_limit(dir.path(), "prog.nb", false);
    assert_ne!(run.code, Some(0), "nabla fmt wrote past the file-size limit");
    assert_eq!(read(&dir.path().join("prog.nb")), original.as_bytes(), "the file was changed");
}

#[test]
fn fmt_failing_to_write_leaves_the_file_intact_and_no_temporary() {
    let original = big_unformatted();
    let dir = scratch("full", &[("prog.nb", original.as_bytes())]);
    let run = fmt_under_size_limit(dir.path(), "prog.nb", true);
    run.assert_exit(1, "nabla fmt on a full disk");
    assert!(run.stderr.contains("cannot write"), "{}", run.stderr);
    assert_eq!(read(&dir.path().join("prog.nb")), original.as_bytes(), "the file was changed");
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap_or_else(|err| panic!("{err}"))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["prog.nb"], "a temporary file was left behind");
}

/// Errors all over one long line: each is reported with a window of the line around it, so the
/// report grows with the number of errors, not with their product with the line's length.
#[test]
fn many_errors_on_one_long_line_are_reported_in_windows() {
    let line = format!("int x = 1; {}\n", "x = $;".repeat(20_000));
    let dir = scratch("long-line", &[("long.nb", line.as_bytes())]);
    let run = nabla(dir.path(), &["check", "long.nb"], &[], b"");
    run.assert_exit(1, "nabla check");
    let errors = run.stdout.matches("error[E0001]").count();
    assert_eq!(errors, 40_000, "{}", &run.stdout[..run.stdout.len().min(2000)]);
    assert!(run.stdout.len() < errors * 600, "{} bytes for {errors} errors", run.stdout.len());
    assert!(run.stdout.contains("long.nb:1:120005\n"), "the last error's column");
    assert!(run.stdout.contains("1 | ...x = $;x = $;"), "a window of the line");
    let json = nabla(dir.path(), &["check", "--format", "json", "long.nb"], &[], b"");
    json.assert_exit(1, "nabla check --format json");
    assert!(json.stdout.contains("\"column\":120005"), "the last error's column in JSON");
}
