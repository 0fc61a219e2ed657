//! Fuzzes the interpreter: a program without check errors runs without a panic or an internal
//! error, and a run-time error's spans lie inside the file. Programs run under a step budget, with
//! small tensors (see `invariants::run`).

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::run_bytes(data));
