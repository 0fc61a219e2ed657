//! The test programs and examples pass every fuzz target (they are the seeds the fuzzer starts
//! from), and a language-server session with every kind of message the `lsp` target sends gets
//! all its answers.

use std::{fs, path::PathBuf};

fn seeds() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut found = Vec::new();
    let mut stack = vec![root.join("crates"), root.join("examples")];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for path in entries.filter_map(Result::ok).map(|entry| entry.path()) {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|ext| ext == "nb") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn seeds_pass_every_target() {
    let seeds = seeds();
    assert!(seeds.len() > 100, "only {} seed programs", seeds.len());
    for (_, target) in invariants::TARGETS {
        for path in &seeds {
            target(&fs::read(path).unwrap_or_default());
        }
    }
}

#[test]
fn every_message_kind_is_answered() {
    let mut data = b"function float f(float x) { return x * x; }\nfloat y = f(2.0);\n".to_vec();
    for kind in 0u8..24 {
        // A NUL, the kind, a position (line 1, character 12), another, and text.
        data.extend_from_slice(&[0, kind, 1, 12, 2, 3]);
        data.extend_from_slice(b"z = 1;");
    }
    invariants::session::session_bytes(&data);
}

/// Nesting ten thousand deep and chains longer than a tree may be deep, through every target
/// (the language server among them) on a test thread's small stack.
#[test]
fn deep_inputs_pass_every_target() {
    let n = 10_000;
    let chain = 30_000;
    let inputs = [
        format!("x = {}1{};\n", "(".repeat(n), ")".repeat(n)),
        format!("x = {}1{};\n", "[".repeat(n), "]".repeat(n)),
        format!("{}x;{}\n", "if (x) {".repeat(n), "}".repeat(n)),
        format!("function float f(float x) {{ return {}x; }}\n", "-".repeat(n)),
        format!("x = {}1;\n", "a ? b : ".repeat(n)),
        "{".repeat(n),
        format!("float x = {}1.0;\n", "1.0 + ".repeat(chain)),
        format!("x = f{};\n", "()".repeat(chain)),
    ];
    for text in inputs {
        for (name, target) in invariants::TARGETS {
            // For the language server: the document, then a hover and a formatting request.
            let mut data = text.clone().into_bytes();
            if *name == "lsp" {
                data.extend_from_slice(&[0, 0, 0, 7, 0, 0, 0, 13, 0, 0, 0, 0]);
            }
            target(&data);
        }
    }
}
