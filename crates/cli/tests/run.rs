//! `nabla run` end to end over the programs in `crates/exec/test_data/run`: each `NAME.nb` runs in
//! that directory and its standard output must equal `NAME.stdout`; when it writes to standard
//! error or exits with a non-zero status, `NAME.stderr` holds the error output followed by a line
//! `[exit status N]`. A first line `// args: ...` gives extra command-line arguments. Run with
//! `UPDATE_EXPECT=1` to rewrite the expectations.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use tempfile::TempDir;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../exec/test_data/run")
}

/// A fresh directory for one test's files, removed when the guard is dropped.
fn scratch(name: &str) -> TempDir {
    TempDir::with_prefix(format!("nabla-run-{name}-")).unwrap_or_else(|err| panic!("{err}"))
}

/// Runs `nabla run NAME.nb` (plus the file's extra arguments) in `dir`.
fn run(dir: &Path, name: &str, args: &[String]) -> (String, String, i32) {
    let output = Command::new(env!("CARGO_BIN_EXE_nabla"))
        .current_dir(dir)
        .arg("run")
        .arg(name)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|err| panic!("cannot run nabla: {err}"));
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

/// The extra arguments of a program: its first line, if it is `// args: ...`.
fn extra_args(text: &str) -> Vec<String> {
    text.lines()
        .next()
        .and_then(|line| line.strip_prefix("// args:"))
        .map(|args| args.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Copies a directory tree, so that programs that write files do so outside the repository.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|err| panic!("{err}"));
    let entries = std::fs::read_dir(from).unwrap_or_else(|err| panic!("{err}"));
    for entry in entries.filter_map(Result::ok) {
        let target = to.join(entry.file_name());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap_or_else(|err| panic!("{err}"));
        }
    }
}

#[test]
fn programs_print_their_expected_output() {
    let source = data_dir();
    let dir = scratch("golden");
    copy_tree(&source, dir.path());
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut names: Vec<String> = std::fs::read_dir(&source)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", source.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".nb"))
        .collect();
    names.sort();
    assert!(names.len() > 20, "too few programs in {}", source.display());
    let mut failures = Vec::new();
    for name in &names {
        let stem = name.trim_end_matches(".nb");
        let text = std::fs::read_to_string(source.join(name)).unwrap_or_default();
        let (stdout, stderr, status) = run(dir.path(), name, &extra_args(&text));
        let error = match (status, stderr.is_empty()) {
            (0, true) => None,
            _ => Some(format!("{stderr}[exit status {status}]\n")),
        };
        let stdout_path = source.join(format!("{stem}.stdout"));
        let stderr_path = source.join(format!("{stem}.stderr"));
        if update {
            std::fs::write(&stdout_path, &stdout).unwrap_or_else(|err| panic!("{err}"));
            match &error {
                Some(error) => {
                    std::fs::write(&stderr_path, error).unwrap_or_else(|err| panic!("{err}"))
                }
                None => {
                    let _ = std::fs::remove_file(&stderr_path);
                }
            }
            continue;
        }
        let expected_stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
        let expected_stderr = std::fs::read_to_string(&stderr_path).ok();
        if stdout != expected_stdout {
            failures.push(format!(
                "{name}: standard output differs\n--- expected\n{expected_stdout}--- found\n{stdout}"
            ));
        }
        if error != expected_stderr {
            failures.push(format!(
                "{name}: error output differs\n--- expected\n{}--- found\n{}",
                expected_stderr.unwrap_or_default(),
                error.unwrap_or_default()
            ));
        }
    }
    assert!(failures.is_empty(), "{}\n(run with UPDATE_EXPECT=1 to accept)", failures.join("\n"));
}

/// A program with check errors is not run: its diagnostics go to standard error, exit status 2.
#[test]
fn check_errors_stop_the_run_with_status_2() {
    let dir = scratch("check");
    std::fs::write(dir.path().join("bad.nb"), "print(1);\nint x = 1.5;\n")
        .unwrap_or_else(|err| panic!("{err}"));
    let (stdout, stderr, status) = run(dir.path(), "bad.nb", &[]);
    assert_eq!((stdout.as_str(), status), ("", 2));
    assert!(stderr.starts_with("error[E0200]"), "{stderr}");
    assert!(stderr.ends_with("check failed: 1 error, 0 warnings\n"), "{stderr}");
}

/// `--timings-json` writes the benchmark harness's record, with the count of tensors copied by
/// a write into a shared buffer (`b`'s write copies what it shares with `a`; `a`'s then goes in
/// place).
#[test]
fn timings_are_written_as_json() {
    let dir = scratch("timings");
    let program = "var float x = 2.0;\nbackward(x * x);\nprint(grad(x));\n\
                   Tensor a[3];\nTensor b = a;\nb[1] = 5.0;\na[0] = 1.0;\nprint(a, b);\n";
    std::fs::write(dir.path().join("t.nb"), program).unwrap_or_else(|err| panic!("{err}"));
    let args = vec!["--timings-json".to_owned(), "t.json".to_owned()];
    let (stdout, _, status) = run(dir.path(), "t.nb", &args);
    assert_eq!((stdout.as_str(), status), ("4.0\n[1.0, 0.0, 0.0] [0.0, 5.0, 0.0]\n", 0));
    let json = std::fs::read_to_string(dir.path().join("t.json")).unwrap_or_default();
    let value: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|err| panic!("{err}: {json}"));
    for key in ["run_seconds", "check_seconds", "tape_bytes_per_op"] {
        assert!(value[key].is_number(), "{key} in {json}");
    }
    assert_eq!(value["tensor_copies"], 1, "{json}");
}

/// A file that cannot be read is reported like a check error.
#[test]
fn a_missing_file_exits_with_status_2() {
    let dir = scratch("missing");
    let (stdout, stderr, status) = run(dir.path(), "no-such-file-here.nb", &[]);
    assert_eq!((stdout.as_str(), status), ("", 2));
    assert!(stderr.starts_with("error: cannot read no-such-file-here.nb"), "{stderr}");
}

/// The error index's example of every run-time code (`docs/errors.md`, marked
/// `nabla,run-error=CODE`) fails when run with exactly that code, and its fix (`nabla,run`) runs to
/// the end; every run-time code has such a section.
#[test]
fn error_index_run_time_examples_fail_with_their_code() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/errors.md");
    let index = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{err}"));
    let mut failures = Vec::new();
    let mut seen = Vec::new();
    for section in index.split("\n## ").skip(1) {
        let code = section.split(':').next().unwrap_or_default();
        if !code.starts_with('R') {
            continue;
        }
        seen.push(code.to_owned());
        let block = |marker: &str| {
            let start = section.find(&format!("```nabla{marker}\n"))? + marker.len() + 9;
            Some(section[start..].split("```").next()?.to_owned())
        };
        let (Some(erroneous), Some(fixed)) = (block(&format!(",run-error={code}")), block(",run"))
        else {
            failures.push(format!("{code}: no `nabla,run-error={code}` and `nabla,run` blocks"));
            continue;
        };
        for (text, fails) in [(erroneous, true), (fixed, false)] {
            let dir = scratch(&format!("explain-{code}"));
            std::fs::write(dir.path().join("main.nb"), &text).unwrap_or_else(|err| panic!("{err}"));
            let (_, stderr, status) = run(dir.path(), "main.nb", &[]);
            let head = stderr.lines().find(|line| line.starts_with("error"));
            let expected = format!("error[{code}]: ");
            match fails {
                true if status != 1 || !head.is_some_and(|line| line.starts_with(&expected)) => {
                    failures.push(format!("{code}: the example exits with {status}:\n{stderr}"));
                }
                false if status != 0 => {
                    failures.push(format!("{code}: the fix exits with {status}:\n{stderr}"));
                }
                _ => {}
            }
        }
    }
    let codes: Vec<String> =
        hir::Code::ALL.iter().filter(|c| c.at_run_time()).map(|c| c.to_string()).collect();
    assert_eq!(seen, codes, "the run-time sections of docs/errors.md, in the order of the codes");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
