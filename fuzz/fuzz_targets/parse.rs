//! Fuzzes the lexer and parser: the tree's text is the input, and every error lies inside it.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::parse_bytes(data));
