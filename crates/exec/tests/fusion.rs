//! The fused recording of scalar operations, end to end: how many tape records a program leaves,
//! and that the derivatives stay those of the unfused operations. The golden program
//! `test_data/run/ad_fused.nb` checks many more against closed forms, and `tests/lowering.rs`
//! shows which temporaries the lowering marks fresh.

use exec::interp::{Limits, Machine};

mod common;
use common::{load, scratch};

/// Runs `text` and returns what it printed, the words left on the program tape and the average
/// tape bytes per recorded operation.
fn run(name: &str, text: &str) -> (String, usize, Option<f64>) {
    let dir = scratch(name);
    let (db, main) = load(dir.path(), text);
    let program = exec::lower::lower_program(&db, main).unwrap_or_else(|err| panic!("{err}"));
    let mut out = Vec::new();
    let mut machine =
        Machine::new(&program, &mut out, Limits::default()).unwrap_or_else(|err| panic!("{err}"));
    machine.run().unwrap_or_else(|err| panic!("{err}"));
    let (records, bytes) =
        (machine.tape_ref().program_len(), machine.tape_ref().bytes_per_operation());
    drop(machine);
    (String::from_utf8_lossy(&out).into_owned(), records, bytes)
}

#[test]
fn the_nilang_loop_leaves_one_record_per_iteration() {
    let text = "var float x0 = 0.5;\nfloat x = x0;\nloop (int i = 0; i < 1000; i++) {\n    x = x * 0.9 + sin(x) * 0.1;\n}\nprint(x);\n";
    let (out, records, bytes) = run("nilang", text);
    // The leaf, then one record per iteration instead of four, each one word: its input is the
    // record before.
    assert_eq!(records, 1001);
    // Four operations share each 8-byte word.
    let bytes = bytes.unwrap_or_else(|| panic!("nothing recorded"));
    assert!(bytes < 2.1, "{bytes} bytes per operation");
    let mut x = 0.5f64;
    for _ in 0..1000 {
        x = x * 0.9 + x.sin() * 0.1;
    }
    assert_eq!(out.trim().parse::<f64>().ok(), Some(x));
}

#[test]
fn values_held_by_variables_are_never_fused_away() {
    // `u` and `v` stay bound, so the records that made them stay; only the fresh temporaries of
    // `sin(u) * 2.0 + u * u` fuse, into one record of `u` (then `v * 0.5 + u` into one of two
    // inputs, a pair of four words; the others are one word each, their inputs being the records
    // just before).
    let text = "var float w = 0.3;\nfloat u = w * 3.0;\nfloat v = sin(u) * 2.0 + u * u;\nfloat z = v * 0.5 + u;\nbackward(z);\nprint(grad(u), grad(v), grad(w));\n";
    let (out, records, _) = run("bound", text);
    // `backward` released the tape; reading `w` for `grad(w)` made it a fresh leaf.
    assert_eq!(records, 1);
    let u = 0.9f64;
    let du = u.cos() + u + 1.0;
    assert_eq!(out, format!("{du:?} 0.5 {:?}\n", 3.0 * du));
    let text = "var float w = 0.3;\nfloat u = w * 3.0;\nfloat v = sin(u) * 2.0 + u * u;\nfloat z = v * 0.5 + u;\nprint(z);\n";
    let (_, records, _) = run("bound-records", text);
    assert_eq!(records, 1 + 1 + 1 + 4);
}
