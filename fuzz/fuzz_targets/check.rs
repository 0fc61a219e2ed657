//! Fuzzes the checker: it never panics, every diagnostic, label, fix-it, hover and definition
//! range lies inside the file, and after an edit (the text before a NUL byte, edited into the text
//! after it) the diagnostics equal those of a fresh check.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| invariants::check_bytes(data));
