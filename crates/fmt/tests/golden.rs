//! Golden tests: each `test_data/NAME.nb` formats to `test_data/NAME.expected.nb`, and the expected
//! output is a fixed point of the formatter.
//!
//! Run with `UPDATE_EXPECT=1` to rewrite the expected files after an intended change.

use std::{fs, path::PathBuf};

fn test_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("test_data")
}

#[test]
fn golden_files() {
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let dir = test_data();
    let mut inputs: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", dir.display()))
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.ends_with(".nb") && !name.ends_with(".expected.nb")
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "no golden inputs in {}", dir.display());
    let mut failures = Vec::new();
    for input in &inputs {
        let text =
            fs::read_to_string(input).unwrap_or_else(|err| panic!("{}: {err}", input.display()));
        let actual = fmt::format(&text)
            .unwrap_or_else(|err| panic!("{}: cannot format: {err}", input.display()));
        let expected_path = input.with_extension("expected.nb");
        let expected = fs::read_to_string(&expected_path).unwrap_or_default();
        if actual != expected {
            if update {
                fs::write(&expected_path, &actual).unwrap_or_else(|err| panic!("{err}"));
            } else {
                failures.push(expected_path.display().to_string());
            }
        }
        assert_eq!(
            fmt::format(&actual).as_ref(),
            Ok(&actual),
            "{}: the output is not a fixed point",
            input.display()
        );
    }
    assert!(
        failures.is_empty(),
        "outputs differ (rerun with UPDATE_EXPECT=1 to accept): {failures:#?}"
    );
}
