//! Fuzzes the formatter: only syntax errors stop it, its output parses, formats to itself, and
//! differs from the input only in whitespace and the documented normalisations.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::format_bytes(data));
