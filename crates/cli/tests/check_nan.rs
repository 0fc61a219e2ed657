//! `--check-nan` on the examples: it never fires on a program that makes no NaN, so every
//! example runs to the end with it and prints what it prints without it, and their tests pass
//! with it. (The programs that do make one are golden tests in `crates/exec/test_data/run`,
//! `nan_*.nb`.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn nabla(dir: &Path, args: &[&str]) -> (String, String, i32) {
    let output = Command::new(env!("CARGO_BIN_EXE_nabla"))
        .current_dir(dir)
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

#[test]
fn the_examples_make_no_nan() {
    let dir = examples();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("{err}"))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".nb"))
        .collect();
    names.sort();
    let mut ran: Vec<&str> = Vec::new();
    for name in &names {
        let (plain, _, status) = nabla(&dir, &["run", name]);
        if status == 2 {
            // A program kept for its check errors (the specification's own Figure 1).
            continue;
        }
        let (checked, stderr, checked_status) = nabla(&dir, &["run", "--check-nan", name]);
        assert_eq!((checked_status, status), (0, 0), "{name}: {stderr}");
        assert_eq!(checked, plain, "{name}");
        ran.push(name);
    }
    assert!(ran.len() >= 8, "only {ran:?} ran");
    let args: Vec<&str> = ["test", "--check-nan"].into_iter().chain(ran).collect();
    let (stdout, stderr, status) = nabla(&dir, &args);
    assert_eq!(status, 0, "{stdout}{stderr}");
    assert!(stdout.contains(" 0 failed"), "{stdout}");
}
