//! Fuzzes the language server's message handling: a session of arbitrary frames and requests with
//! arbitrary parameters (see `invariants::session`) never makes it panic, every request is
//! answered in time, and `shutdown` and `exit` end it.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::session::session_bytes(data));
