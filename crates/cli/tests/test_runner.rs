//! `nabla test` end to end: each directory in `crates/cli/test_data/test_runner` is a case. The
//! runner runs in that directory with the arguments in its `args` file (if any) and the
//! environment variables of its `env` file (`NAME=VALUE` lines, if any), and its standard
//! output, its standard error (after a `--- stderr` line, when there is any) and a last line
//! `[exit status N]` must equal the case's `expected` file. Durations in JSON output are replaced
//! by `"duration":"*"`. Run with `UPDATE_EXPECT=1` to rewrite the expectations.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use tempfile::TempDir;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data/test_runner")
}

/// Replaces the number after every `"duration":` by `"*"`.
fn mask_durations(text: &str) -> String {
    const KEY: &str = "\"duration\":";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(KEY) {
        out.push_str(&rest[..at + KEY.len()]);
        rest = &rest[at + KEY.len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+')))
            .unwrap_or(rest.len());
        out.push_str("\"*\"");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

fn run_case(dir: &Path) -> String {
    let args: Vec<String> = std::fs::read_to_string(dir.join("args"))
        .map(|text| text.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let env: Vec<(String, String)> = std::fs::read_to_string(dir.join("env"))
        .map(|text| {
            text.lines()
                .filter_map(|line| line.split_once('='))
                .map(|(name, value)| (name.to_owned(), value.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let output = Command::new(env!("CARGO_BIN_EXE_nabla"))
        .current_dir(dir)
        .arg("test")
        .args(&args)
        .env("NO_COLOR", "1")
        .envs(env)
        .output()
        .unwrap_or_else(|err| panic!("cannot run nabla: {err}"));
    let mut text = mask_durations(&String::from_utf8_lossy(&output.stdout));
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !stderr.is_empty() {
        text.push_str("--- stderr\n");
        text.push_str(&stderr);
    }
    text.push_str(&format!("[exit status {}]\n", output.status.code().unwrap_or(-1)));
    text
}

#[test]
fn runner_output_matches_the_expectations() {
    let root = data_dir();
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", root.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 7, "too few cases in {}", root.display());
    let mut failures = Vec::new();
    for case in &cases {
        let found = run_case(case);
        let expected_path = case.join("expected");
        if update {
            std::fs::write(&expected_path, &found).unwrap_or_else(|err| panic!("{err}"));
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if found != expected {
            failures.push(format!(
                "{}: output differs\n--- expected\n{expected}--- found\n{found}",
                case.display()
            ));
        }
    }
    assert!(failures.is_empty(), "{}\n(run with UPDATE_EXPECT=1 to accept)", failures.join("\n"));
}

/// Many tests across workers still report in source order, and `-j 1` gives the same output.
#[test]
fn order_is_stable_whatever_the_parallelism() {
    let dir = TempDir::with_prefix("nabla-test-order-").unwrap_or_else(|err| panic!("{err}"));
    let mut program = String::new();
    for i in 0..60 {
        // Every seventh test fails; some take longer than others.
        let work = (i % 5) * 2000;
        program.push_str(&format!(
            "test \"t{i:02}\" {{\n    int s = 0;\n    loop (int k = 0; k < {work}; k += 1) {{ s += 1; }}\n    assert(s == {work} && {i} % 7 != 3);\n}}\n\n"
        ));
    }
    std::fs::write(dir.path().join("many.nb"), program).unwrap_or_else(|err| panic!("{err}"));
    let run = |jobs: &str| {
        let output = Command::new(env!("CARGO_BIN_EXE_nabla"))
            .current_dir(dir.path())
            .args(["test", "-j", jobs])
            .env("NO_COLOR", "1")
            .output()
            .unwrap_or_else(|err| panic!("cannot run nabla: {err}"));
        (String::from_utf8_lossy(&output.stdout).into_owned(), output.status.code())
    };
    let (parallel, status) = run("4");
    let (serial, _) = run("1");
    assert_eq!(status, Some(1));
    assert_eq!(parallel, serial);
    let names: Vec<&str> = parallel
        .lines()
        .filter_map(|line| line.strip_prefix("test t"))
        .map(|line| &line[..2])
        .collect();
    let expected: Vec<String> = (0..60).map(|i| format!("{i:02}")).collect();
    assert_eq!(names, expected);
    assert!(parallel.ends_with("test result: 51 passed, 9 failed\n"), "{parallel}");
}
