//! Every input a fuzz target once failed on, replayed through the same target: the files under
//! `fuzz/regressions/TARGET/`, one input per file, as the fuzzer wrote them. The targets' own
//! seeds, `fuzz/seeds/TARGET/`, are replayed too.

use std::{fs, panic, path::PathBuf};

#[test]
fn earlier_fuzz_findings_pass() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut failures = Vec::new();
    let dirs = ["regressions", "seeds"];
    for ((name, target), dir) in invariants::TARGETS.iter().flat_map(|t| dirs.map(|d| (t, d))) {
        let Ok(entries) = fs::read_dir(root.join(dir).join(name)) else { continue };
        let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
        paths.sort();
        for path in paths {
            let Ok(data) = fs::read(&path) else { continue };
            if panic::catch_unwind(|| target(&data)).is_err() {
                failures.push(path.display().to_string());
            }
        }
    }
    assert!(failures.is_empty(), "fuzz regressions fail again:\n{}", failures.join("\n"));
}
