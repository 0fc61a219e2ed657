//! Fuzzes the interpreter: a program without check errors runs without a panic or an internal
//! error, and a run-time error's spans lie inside the file. Only programs whose running time the
//! input bounds are run (see `invariants::run`), with small tensors.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::run_bytes(data));
