//! Checker benchmarks, printed as a Markdown section for `cargo xtask bench`: cold `check`
//! throughput on a generated 50,000-line program, and the time to re-check a 10,000-line file
//! after a one-line edit inside one function. A plain `main` (no harness). Setting
//! `NABLA_BENCH_EDITS` to more than 40 runs that many edits on a small cold input, for profiling
//! the re-check alone.

use std::time::Instant;

use hir::Database;

#[path = "support/program.rs"]
mod program;
use program::generate;

fn median(times: &mut [f64]) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn percentile(times: &mut [f64], p: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    let index = ((times.len() as f64 - 1.0) * p).round() as usize;
    times[index.min(times.len() - 1)]
}

fn cold_check(text: &str) -> f64 {
    let start = Instant::now();
    let mut db = Database::default();
    let file = db.set_file("/bench/cold.nb", text);
    let count = hir::file_diagnostics(&db, file).len();
    let elapsed = start.elapsed().as_secs_f64();
    assert_eq!(count, 0, "the generated program must check clean");
    elapsed
}

fn main() {
    let rounds = std::env::var("NABLA_BENCH_EDITS").ok().and_then(|n| n.parse().ok()).unwrap_or(40);
    let big = generate(if rounds > 40 { 100 } else { 50_000 });
    let big_lines = big.lines().count();
    cold_check(&big);
    let mut cold: Vec<f64> = (0..5).map(|_| cold_check(&big)).collect();
    let cold_median = median(&mut cold);

    let medium = generate(10_000);
    let medium_lines = medium.lines().count();
    let mut db = Database::default();
    let file = db.set_file("/bench/edit.nb", medium.as_str());
    assert!(hir::file_diagnostics(&db, file).is_empty());
    // The one line to edit, inside a function in the middle of the file.
    let needle = format!("layer{}(Tensor x", medium_lines / 40);
    let at = medium.find(&needle).unwrap_or(medium.len() / 2);
    let line_start = at + medium[at..].find('\n').map_or(0, |i| i + 1);
    let line_end = line_start + medium[line_start..].find('\n').unwrap_or(0);
    let mut edits = Vec::new();
    for round in 0..rounds {
        let mut edited = medium.clone();
        edited.replace_range(
            line_start..line_end,
            &format!("    Tensor h[n][m] = tanh(x @ w) * scale + {round}.25;"),
        );
        let start = Instant::now();
        db.set_file("/bench/edit.nb", edited);
        let count = hir::file_diagnostics(&db, file).len();
        edits.push(start.elapsed().as_secs_f64());
        assert_eq!(count, 0);
    }
    // The first edits warm caches up.
    let mut edits = edits.split_off(5);
    let edit_median = median(&mut edits);
    let edit_p95 = percentile(&mut edits, 0.95);

    println!("## Checker\n");
    println!("| measurement | input | median | p95 | throughput |");
    println!("|---|---|---|---|---|");
    println!(
        "| cold `check` | generated program, {big_lines} lines ({:.1} MB) | {:.1} ms | | {:.0} lines/s |",
        big.len() as f64 / 1e6,
        cold_median * 1e3,
        big_lines as f64 / cold_median
    );
    println!(
        "| re-check after a one-line edit in one function | {medium_lines} lines | {:.2} ms | {:.2} ms | |",
        edit_median * 1e3,
        edit_p95 * 1e3
    );
    println!(
        "\nCold: a fresh database, parse, lowering, inference and diagnostics of every definition, \
         on one core. Re-check: the same database after replacing one line inside one function: \
         the edited block is reparsed and spliced into the tree, only that function is lowered \
         and inferred again, and what remains (rebuilding the item tree, salsa revalidating each \
         definition) grows with the number of definitions, not with their size."
    );
}
