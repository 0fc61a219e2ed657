//! `nabla fmt` end to end: in-place rewrites, `--check` diffs and exit statuses, standard input,
//! directories, and files with syntax errors left untouched.

use std::{
    io::Write,
    path::{Path, PathBuf},
    process::{Command, Stdio},
};

use tempfile::TempDir;

const UGLY: &str = "int x=1;\nif(x){print( x );}\n";
const PRETTY: &str = "int x = 1;\nif (x) {\n    print(x);\n}\n";

/// Runs `nabla` with `args` in `dir`, feeding it `stdin`; returns stdout, stderr and the status.
fn nabla(dir: &Path, args: &[&str], stdin: &str) -> (String, String, i32) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nabla"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot run nabla: {err}"));
    if let Some(mut input) = child.stdin.take() {
        input.write_all(stdin.as_bytes()).unwrap_or_else(|err| panic!("{err}"));
    }
    let output = child.wait_with_output().unwrap_or_else(|err| panic!("{err}"));
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

/// A fresh directory holding `files` (path and text), removed when the guard is dropped.
fn scratch(name: &str, files: &[(&str, &str)]) -> TempDir {
    let dir =
        TempDir::with_prefix(format!("nabla-fmt-{name}-")).unwrap_or_else(|err| panic!("{err}"));
    for (path, text) in files {
        let path = dir.path().join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap_or_else(|err| panic!("{err}"));
        }
        std::fs::write(&path, text).unwrap_or_else(|err| panic!("{err}"));
    }
    dir
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The names of the files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("{err}"))
        .filter_map(Result::ok)
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn check_prints_a_diff_changes_nothing_and_exits_1() {
    let dir = scratch("check", &[("a.nb", UGLY), ("b.nb", PRETTY)]);
    let (stdout, _, status) = nabla(dir.path(), &["fmt", "--check"], "");
    assert_eq!(status, 1);
    let a = Path::new(".").join("a.nb").display().to_string();
    let expected = format!(
        "--- {a}
+++ {a}
@@ -1,2 +1,4 @@
-int x=1;
-if(x){{print( x );}}
+int x = 1;
+if (x) {{
+    print(x);
+}}
"
    );
    assert_eq!(stdout, expected);
    assert_eq!(read(dir.path().join("a.nb")), UGLY);
    let (stdout, _, status) = nabla(dir.path(), &["fmt", "--check", "b.nb"], "");
    assert_eq!((stdout.as_str(), status), ("", 0));
}

#[test]
fn files_and_directories_are_rewritten_in_place() {
    let dir = scratch(
        "in-place",
        &[("a.nb", UGLY), ("sub/deeper/b.nb", UGLY), ("notes.txt", UGLY), (".hidden/c.nb", UGLY)],
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let permissions = std::fs::Permissions::from_mode(0o640);
        std::fs::set_permissions(dir.path().join("a.nb"), permissions)
            .unwrap_or_else(|err| panic!("{err}"));
    }
    let (stdout, stderr, status) = nabla(dir.path(), &["fmt"], "");
    assert_eq!((stdout.as_str(), stderr.as_str(), status), ("", "", 0));
    assert_eq!(read(dir.path().join("a.nb")), PRETTY);
    assert_eq!(read(dir.path().join("sub/deeper/b.nb")), PRETTY);
    assert_eq!(read(dir.path().join("notes.txt")), UGLY, "only .nb files are formatted");
    assert_eq!(read(dir.path().join(".hidden/c.nb")), UGLY, "hidden directories are skipped");
    assert_eq!(
        listing(dir.path()),
        [".hidden", "a.nb", "notes.txt", "sub"],
        "no temporary file is left"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode =
            std::fs::metadata(dir.path().join("a.nb")).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o640), "the file keeps its permissions");
    }
    let (_, _, status) = nabla(dir.path(), &["fmt", "--check", "a.nb", "sub"], "");
    assert_eq!(status, 0, "a formatted file is left as it is");
}

#[test]
fn standard_input_goes_to_standard_output() {
    let dir = scratch("stdin", &[]);
    let (stdout, stderr, status) = nabla(dir.path(), &["fmt", "-"], UGLY);
    assert_eq!((stdout.as_str(), stderr.as_str(), status), (PRETTY, "", 0));
    let (stdout, _, status) = nabla(dir.path(), &["fmt", "--check", "-"], UGLY);
    assert_eq!(status, 1);
    assert!(stdout.starts_with("--- <stdin>\n+++ <stdin>\n@@ "), "{stdout}");
    let (stdout, _, status) = nabla(dir.path(), &["fmt", "--check", "-"], PRETTY);
    assert_eq!((stdout.as_str(), status), ("", 0));
}

#[test]
fn files_with_syntax_errors_are_left_untouched() {
    let broken = "int x = ;\nif(x){print( x );}\n";
    let dir = scratch("errors", &[("bad.nb", broken), ("good.nb", UGLY)]);
    let (stdout, stderr, status) = nabla(dir.path(), &["fmt", "bad.nb", "good.nb"], "");
    assert_eq!(status, 1);
    assert_eq!(stdout, "");
    assert_eq!(
        stderr,
        "bad.nb:1:9: error: expected an initializer\nbad.nb: not formatted: the file has syntax errors\n"
    );
    assert_eq!(read(dir.path().join("bad.nb")), broken);
    assert_eq!(read(dir.path().join("good.nb")), PRETTY, "the other files are still formatted");
    let (stdout, stderr, status) = nabla(dir.path(), &["fmt", "-"], broken);
    assert_eq!(status, 1);
    assert_eq!(stdout, broken, "standard input with errors is written back as it is");
    assert!(stderr.starts_with("<stdin>:1:9: error: expected an initializer\n"), "{stderr}");
}

#[test]
fn a_missing_path_is_an_error() {
    let dir = scratch("missing", &[]);
    let (_, stderr, status) = nabla(dir.path(), &["fmt", "nowhere.nb"], "");
    assert_eq!(status, 1);
    assert!(stderr.starts_with("error: cannot read nowhere.nb"), "{stderr}");
}
