//! `nabla check` and `nabla explain` end to end: output formats and exit statuses.

use std::process::Command;

use tempfile::TempDir;

fn nabla(args: &[&str]) -> (String, String, i32) {
    let output = Command::new(env!("CARGO_BIN_EXE_nabla"))
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

/// A fresh directory holding `files` (path and text), removed when the guard is dropped.
fn scratch(name: &str, files: &[(&str, &str)]) -> TempDir {
    let dir =
        TempDir::with_prefix(format!("nabla-cli-{name}-")).unwrap_or_else(|err| panic!("{err}"));
    for (path, text) in files {
        let path = dir.path().join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|err| panic!("{err}"));
        }
        std::fs::write(&path, text).unwrap_or_else(|err| panic!("{err}"));
    }
    dir
}

#[test]
fn clean_directory_prints_an_empty_json_array_and_exits_0() {
    let dir =
        scratch("clean", &[("a.nb", "int x = 1;\nprint(x);\n"), ("sub/b.nb", "print(2.0);\n")]);
    let (stdout, _, status) =
        nabla(&["check", "--format", "json", dir.path().to_str().unwrap_or(".")]);
    assert_eq!((stdout.as_str(), status), ("[]\n", 0));
}

#[test]
fn errors_are_printed_rustc_style_and_exit_1() {
    let dir = scratch(
        "errors",
        &[("m.nb", "Tensor a[2][3];\nTensor b[4][2];\nTensor c = a @ b;\nprint(c);\n")],
    );
    let path = dir.path().join("m.nb");
    let (stdout, _, status) = nabla(&["check", path.to_str().unwrap_or(".")]);
    assert_eq!(status, 1);
    let expected = format!(
        "error[E0202]: `a @ b`: a is Tensor[2][3], b is Tensor[4][2]; inner dimensions 3 and 4 differ
 --> {}:3:12
  |
3 | Tensor c = a @ b;
  |            ^^^^^
  |            - Tensor[2][3]
  |                - Tensor[4][2]
  = help: `[m][k] @ [k][n]` needs the last extent of the left operand to equal the first of the right's last two

check failed: 1 error, 0 warnings
",
        path.display()
    );
    assert_eq!(stdout, expected);
    let (json, _, status) = nabla(&["check", "--format", "json", path.to_str().unwrap_or(".")]);
    assert_eq!(status, 1);
    let expected = format!(
        "[{{\"code\":\"E0202\",\"column\":12,\"end_column\":17,\"end_line\":3,\"file\":{:?},\"line\":3,\"message\":\"`a @ b`: a is Tensor[2][3], b is Tensor[4][2]; inner dimensions 3 and 4 differ\",\"severity\":\"error\"}}]\n",
        path.display().to_string()
    );
    assert_eq!(json, expected);
}

#[test]
fn warnings_alone_exit_0() {
    let text = "function float f(float x) {\n    if (x == 0.0) {\n        return 0.0;\n    }\n    return x;\n}\nprint(grad(f)(1.0));\n";
    let dir = scratch("warn", &[("w.nb", text)]);
    let (stdout, _, status) = nabla(&["check", dir.path().to_str().unwrap_or(".")]);
    assert_eq!(status, 0, "{stdout}");
    assert!(stdout.starts_with("warning[W0001]"), "{stdout}");
}

#[test]
fn unreadable_files_are_reported() {
    let dir = scratch("bad", &[]);
    let path = dir.path().join("bad.nb");
    std::fs::write(&path, [0xffu8, 0xfe]).unwrap_or_else(|err| panic!("{err}"));
    let (_, stderr, status) = nabla(&["check", path.to_str().unwrap_or(".")]);
    assert_eq!(status, 1);
    assert!(stderr.contains("not valid UTF-8"), "{stderr}");
}

#[test]
fn explain_prints_the_section() {
    let (stdout, _, status) = nabla(&["explain", "e0204"]);
    assert_eq!(status, 0);
    assert!(stdout.starts_with("## E0204: value does not fit the declared shape"), "{stdout}");
    let (_, stderr, status) = nabla(&["explain", "E9999"]);
    assert_eq!(status, 1);
    assert!(stderr.contains("no diagnostic code"));
}
