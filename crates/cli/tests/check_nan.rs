//! `--check-nan` on the examples: it never fires on a program that makes no NaN, so every
//! example runs to the end with it and prints what it prints without it, and their tests pass
//! with it; in `nan_hunt.nb`, which makes one on purpose, it finds the `sqrt` where it starts.
//! (The other programs that make one are golden tests in `crates/exec/test_data/run`, `nan_*.nb`.)

use std::path::{Path, PathBuf};
use std::process::Command;

use expect_test::expect_file;

/// The example that makes a NaN on purpose, to be found.
const NAN_HUNT: &str = "nan_hunt.nb";

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
        .filter(|name| name.ends_with(".nb") && name != NAN_HUNT)
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

/// The NaN hunt: a plain run ends with `nan` and exit status 0; with `--check-nan` the run stops
/// at the backward rule of the `sqrt` in `distance`, with the report `docs/images/nan_hunt.txt`
/// and the README show (`UPDATE_EXPECT=1` rewrites the file).
#[test]
fn the_nan_hunt_finds_the_sqrt_at_a_corner() {
    let root = examples().join("..");
    let file = format!("examples/{NAN_HUNT}");
    let (plain, stderr, status) = nabla(&root, &["run", &file]);
    assert_eq!(status, 0, "{stderr}");
    assert!(plain.contains("-> [nan, nan]"), "{plain}");
    let (stdout, report, status) = nabla(&root, &["run", "--check-nan", &file]);
    assert_eq!((status, stdout.as_str()), (1, ""), "{report}");
    assert!(report.starts_with("error[R0604]: the backward rule of `sqrt`"), "{report}");
    expect_file!["../../../docs/images/nan_hunt.txt"].assert_eq(&report);
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap_or_default();
    assert!(readme.contains(report.trim_end()), "the README shows another report than\n{report}");
    let (stdout, stderr, status) = nabla(&root, &["test", "--check-nan", &file]);
    assert_eq!(status, 0, "{stdout}{stderr}");
}
