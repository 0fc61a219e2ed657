//! `cargo xtask bench --baseline PATH`: this build's `nabla` against another `nabla` binary (a
//! release build of an older commit), both measured in the same rounds, so that a machine whose
//! speed drifts from hour to hour moves both sides together.
//!
//! Each Nabla program of the selected comparative groups and of the interpreter suite runs with
//! both binaries, one right after the other (same program, same flags, same environment), the
//! binary that goes first alternating from round to round. Each figure is derived from the
//! programs as the page derives it ([`compare::seconds`], [`compare::bytes`], the suite's
//! [`suite::measure`]), for each binary alike. A table line is one Nabla figure of a group's
//! rows (a row whose reference is another Nabla program gives two); its ratio is this build's
//! over the baseline's, from the round whose ratio is the median, with the range of the rounds'
//! ratios. The reference tools do not run, and `docs/performance.md` is left alone: the tables go
//! to standard output and to [`REPORT`].

use std::{fs, path::Path, time::Duration};

use super::{
    INTERPRETER, Options,
    compare::{self, Measured},
    groups::{GROUPS, Group, Program, Reference, Row},
    nabla::{Nabla, Timings},
    suite,
};

/// Where the tables are written, relative to the repository root.
pub const REPORT: &str = "target/bench-baseline.md";

/// The largest ratio of this build's figure over the baseline's that issue 23 accepts: "no worse
/// than the page at filing by more than 10%".
pub const BOUND: f64 = 1.10;

/// What a line's figures are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    Seconds,
    Bytes,
    BytesPerOp,
}

/// One line of a table as one round measured it: a figure of this build and the same figure of
/// the baseline.
#[derive(Clone, Debug)]
pub struct Line {
    pub label: String,
    pub unit: Unit,
    pub this: Measured,
    pub baseline: Measured,
    /// Whether the line counts in the table's geometric mean.
    pub in_mean: bool,
}

impl Line {
    /// This build's figure over the baseline's, when both are measured and positive (an element
    /// access can come out at zero or less).
    fn ratio(&self) -> Option<f64> {
        match (&self.this, &self.baseline) {
            (Ok(this), Ok(baseline)) if *this > 0.0 && *baseline > 0.0 => Some(this / baseline),
            _ => None,
        }
    }
}

/// Which figure of a Nabla program a line shows.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Figure {
    /// Its time less its set-up's, per repetition ([`compare::seconds`]).
    Seconds,
    /// Its peak memory less its baseline program's ([`compare::bytes`]).
    PeakAbove,
    /// Its peak memory.
    Peak,
    /// The tape memory it reports per recorded operation.
    TapeBytes,
}

/// One Nabla figure of a group.
#[derive(Clone, Debug, PartialEq)]
struct Measurement {
    label: String,
    figure: Figure,
    program: Program,
}

/// The Nabla figures of `group`'s rows in their order, each once: a row's Nabla program, and
/// its reference when that is a Nabla program too.
fn measurements(group: &Group) -> Vec<Measurement> {
    let mut all: Vec<Measurement> = Vec::new();
    let mut add = |label: String, figure, program| {
        if !all.iter().any(|m| m.figure == figure && m.program == program) {
            all.push(Measurement { label, figure, program });
        }
    };
    for row in group.rows {
        match row {
            Row::Time { benchmark, nabla, reference, .. } => {
                add(benchmark.to_string(), Figure::Seconds, *nabla);
                if let Reference::Nabla { program, tool } = reference {
                    add(format!("{benchmark} — reference: {tool}"), Figure::Seconds, *program);
                }
            }
            Row::EachAndFastest { benchmark, nabla, .. } => {
                add(benchmark.to_string(), Figure::Seconds, *nabla)
            }
            Row::TapeBytes { benchmark, nabla } => {
                add(benchmark.to_string(), Figure::TapeBytes, *nabla)
            }
            Row::PeakMemory { benchmark, nabla } => {
                add(benchmark.to_string(), Figure::Peak, *nabla)
            }
            Row::MemoryRatio { benchmark, nabla, reference, tool, .. } => {
                add(benchmark.to_string(), Figure::PeakAbove, *nabla);
                add(format!("{benchmark} — reference: {tool}"), Figure::PeakAbove, *reference);
            }
        }
    }
    all
}

/// `figure` of `program` from `timings`, the timings of each program file it runs.
fn derive(
    figure: Figure,
    program: Program,
    mut timings: impl FnMut(&'static str) -> Result<Timings, String>,
) -> Measured {
    let reported = |value: Option<f64>| value.ok_or_else(|| "not reported".to_owned());
    match figure {
        Figure::Seconds => compare::seconds(program, timings),
        Figure::PeakAbove => compare::bytes(program, timings).0,
        Figure::Peak => reported(timings(program.file)?.peak_bytes),
        Figure::TapeBytes => reported(timings(program.file)?.tape_bytes_per_op),
    }
}

/// The two binaries in the order round `round` (from 1) runs them: this build first in odd
/// rounds, the baseline first in even ones.
fn in_turn<T>(round: usize, this: T, baseline: T) -> [T; 2] {
    if round % 2 == 1 { [this, baseline] } else { [baseline, this] }
}

/// One round of `group`: every program file it needs, run with both binaries in turn, then its
/// lines.
fn measure_group(
    root: &Path,
    group: &Group,
    round: usize,
    this: &mut Nabla,
    baseline: &mut Nabla,
) -> Vec<Line> {
    let measurements = measurements(group);
    let mut runs: Vec<(&'static str, &'static [&'static str])> = Vec::new();
    for Measurement { program, .. } in &measurements {
        for file in std::iter::once(program.file).chain(program.baseline) {
            if !runs.contains(&(file, program.flags)) {
                runs.push((file, program.flags));
            }
        }
    }
    this.forget();
    baseline.forget();
    for (file, flags) in runs {
        for nabla in in_turn(round, &mut *this, &mut *baseline) {
            // Kept by `nabla` for the lines below, error and all.
            let _ = nabla.timings(root, file, flags);
        }
    }
    measurements
        .into_iter()
        .map(|Measurement { label, figure, program }| Line {
            label,
            unit: match figure {
                Figure::Seconds => Unit::Seconds,
                Figure::PeakAbove | Figure::Peak => Unit::Bytes,
                Figure::TapeBytes => Unit::BytesPerOp,
            },
            this: derive(figure, program, |file| this.timings(root, file, program.flags)),
            baseline: derive(figure, program, |file| baseline.timings(root, file, program.flags)),
            in_mean: figure == Figure::Seconds,
        })
        .collect()
}

fn value_cell(unit: Unit, value: &Measured) -> String {
    match (unit, value) {
        (_, Err(reason)) => format!("not measured: {reason}"),
        (Unit::Seconds, Ok(seconds)) if *seconds <= 0.0 => "below the noise".to_owned(),
        (Unit::Seconds, Ok(seconds)) => compare::format_seconds(*seconds),
        (Unit::Bytes, Ok(bytes)) => compare::format_bytes(*bytes),
        (Unit::BytesPerOp, Ok(bytes)) => format!("{bytes:.0} bytes"),
    }
}

/// A ratio cell: the ratio with its range, marked when it exceeds [`BOUND`].
fn ratio_cell(ratio: f64, range: Option<(f64, f64)>) -> String {
    let mark = if ratio > BOUND { " ✗" } else { "" };
    format!("{}{mark}", compare::ratio_text(ratio, range))
}

/// The table of a group's or the suite's rounds (each the same lines in the same order): each
/// line from the round whose ratio is the median, then the geometric mean of the median ratios of
/// the lines that count in it and have a ratio in every round, with the range of the rounds'
/// geometric means over the same lines.
pub fn table(rounds: &[Vec<Line>]) -> String {
    let mut text = "| benchmark | this build | baseline | ratio (range over rounds) |\n\
                    |---|---|---|---|\n"
        .to_owned();
    let count = rounds.iter().map(Vec::len).min().unwrap_or(0);
    let mut medians = Vec::new();
    let mut per_round = vec![Vec::new(); rounds.len()];
    let mut counted = 0;
    for index in 0..count {
        let lines: Vec<&Line> = rounds.iter().map(|lines| &lines[index]).collect();
        let ratios: Vec<Option<f64>> = lines.iter().map(|line| line.ratio()).collect();
        let (chosen, range) = compare::median_round(&ratios);
        let line = lines[chosen.unwrap_or(0)];
        let ratio = chosen.and_then(|i| ratios[i]);
        let cell = ratio.map_or_else(|| "—".to_owned(), |ratio| ratio_cell(ratio, range));
        text.push_str(&format!(
            "| {} | {} | {} | {cell} |\n",
            line.label,
            value_cell(line.unit, &line.this),
            value_cell(line.unit, &line.baseline),
        ));
        if line.in_mean {
            counted += 1;
            if let (Some(ratio), true) = (ratio, ratios.iter().all(Option::is_some)) {
                medians.push(ratio);
                for (round, ratio) in per_round.iter_mut().zip(&ratios) {
                    round.extend(*ratio);
                }
            }
        }
    }
    let mean = suite::geometric_mean(&medians);
    let round_means: Vec<Option<f64>> =
        per_round.iter().map(|ratios| suite::geometric_mean(ratios)).collect();
    let (_, range) = compare::median_round(&round_means);
    let lines = match (medians.len(), counted) {
        (1, 1) => "1 line".to_owned(),
        (n, all) if n == all => format!("{n} lines"),
        (n, all) => format!("{n} of {all} lines: those measured in every round"),
    };
    let cell = mean.map_or_else(|| "—".to_owned(), |mean| ratio_cell(mean, range));
    text.push_str(&format!("| **geometric mean** ({lines}) | | | {cell} |\n"));
    text
}

/// A section: the title, when and how it was measured, the table and how to read it.
fn section(title: &str, measured: &str, rounds: &[Vec<Line>], mean: &str) -> String {
    format!(
        "## {title}\n\n{measured}\n\n{}\nRatio: this build's figure over the baseline's (below \
         1, this build is faster), from the round whose ratio is the median, with the range of \
         the rounds' ratios in parentheses; ✗ marks a ratio above {BOUND:.2} (issue 23: no worse \
         by more than 10%). The geometric mean is over {mean}.\n",
        table(rounds)
    )
}

/// How a group or the suite was measured.
fn measured(options: &Options, busy: f64) -> String {
    let (threads, rounds) = (options.threads, options.rounds);
    format!(
        "Measured {} on {threads} thread{}, in {rounds} round{}, each program with both binaries \
         one after the other (this build first in odd rounds, the baseline in even ones); just \
         before, other processes kept the CPUs {:.0}% busy.",
        super::today(),
        if threads == 1 { "" } else { "s" },
        if rounds == 1 { "" } else { "s" },
        busy * 100.0,
    )
}

/// Measures the selected groups and the suite with this build and `path`, and prints and writes
/// their tables.
pub fn run(root: &Path, options: &Options, path: &Path) -> Result<(), String> {
    let env = super::thread_env(options.threads);
    let path =
        path.canonicalize().map_err(|err| format!("--baseline {}: {err}", path.display()))?;
    let mut baseline = Nabla::baseline(root, &path, &env)?;
    let mut this = Nabla::prepare(root, &env);
    if let Some(reason) = this.unavailable() {
        return Err(format!("this build cannot run programs: {reason}"));
    }
    let version = super::command_output(&path.to_string_lossy(), &["--version"]);
    let version = if version.is_empty() { String::new() } else { format!(" (`{version}`)") };
    let mut text = format!(
        "# This build against a baseline\n\nWritten by `cargo xtask bench --baseline`. This \
         build: {}, `{}`. Baseline: `{}`{version}.\n",
        super::source_revision(root),
        this.binary().display(),
        path.display(),
    );
    print!("{text}");
    let busy = || super::cpu_busy(Duration::from_secs(2));
    if options.selects(INTERPRETER) {
        eprintln!("==> bench interpreter: bench/interpreter/ with both binaries");
        let measured = measured(options, busy());
        let rounds: Vec<Vec<Line>> = (1..=options.rounds)
            .map(|round| {
                eprintln!("    round {round} of {}", options.rounds);
                let lineup = in_turn(
                    round,
                    (suite::Tool::Nabla, this.binary().to_path_buf()),
                    (suite::Tool::Baseline, path.clone()),
                );
                let tools = suite::Tools { lineup: lineup.into(), env: env.clone() };
                suite::baseline_lines(&suite::measure(root, &tools))
            })
            .collect();
        let mean = format!("the {} programs, the suite's figure", suite::PROGRAMS.len());
        let section = section("Interpreter (issue 23)", &measured, &rounds, &mean);
        print!("\n{section}");
        text.push_str(&format!("\n{section}"));
    }
    for group in GROUPS.iter().filter(|group| options.selects(group.name)) {
        eprintln!("==> bench {}: Nabla programs with both binaries", group.name);
        let measured = measured(options, busy());
        let rounds: Vec<Vec<Line>> = (1..=options.rounds)
            .map(|round| {
                eprintln!("    round {round} of {}", options.rounds);
                measure_group(root, group, round, &mut this, &mut baseline)
            })
            .collect();
        let section = section(group.title, &measured, &rounds, "the time lines");
        print!("\n{section}");
        text.push_str(&format!("\n{section}"));
    }
    let report = root.join(REPORT);
    fs::write(&report, text).map_err(|err| format!("cannot write {}: {err}", report.display()))?;
    eprintln!("==> written to {REPORT}; docs/performance.md is left as it was");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(label: &str, this: Measured, baseline: Measured) -> Line {
        Line { label: label.to_owned(), unit: Unit::Seconds, this, baseline, in_mean: true }
    }

    #[test]
    fn the_binaries_take_turns_going_first() {
        assert_eq!(in_turn(1, "this", "baseline"), ["this", "baseline"]);
        assert_eq!(in_turn(2, "this", "baseline"), ["baseline", "this"]);
        assert_eq!(in_turn(3, "this", "baseline"), ["this", "baseline"]);
    }

    /// Every Nabla figure of the rows, each once, and a Nabla reference as a line of its own.
    #[test]
    fn a_groups_lines_are_its_nabla_figures() {
        let autodiff = GROUPS.iter().find(|group| group.name == "autodiff").unwrap();
        let lines = measurements(autodiff);
        let labels: Vec<&str> = lines.iter().map(|m| m.label.as_str()).collect();
        assert_eq!(labels[0], "loop `x = x + one`, 10^6 iterations: gradient / forward only");
        assert_eq!(
            labels[1],
            "loop `x = x + one`, 10^6 iterations: gradient / forward only — reference: Nabla, \
             forward only"
        );
        // The forward-only program is the reference of the next row too: not measured twice.
        assert_eq!(
            labels[2],
            "loop `x = x + one`, 10^6 iterations: gradient repeated in one process / forward only"
        );
        let warm = &lines[2].program;
        assert_eq!(
            (warm.file, warm.baseline, warm.per),
            ("autodiff/add_gradient_warm.nb", Some("autodiff/add_gradient.nb"), 4.0)
        );
        // The MLP step has two rows (against PyTorch and NumPy) and one line.
        let mlp = |m: &&Measurement| m.program.file == "autodiff/mlp_step.nb";
        assert_eq!(lines.iter().filter(mlp).count(), 1);
        // The per-iteration rows keep their own derivation.
        let per_iteration = lines.iter().find(|m| m.label.ends_with("per iteration")).unwrap();
        assert_eq!((per_iteration.figure, per_iteration.program.per), (Figure::Seconds, 1e6));
        let figures: Vec<Figure> = lines.iter().map(|m| m.figure).collect();
        assert_eq!(figures.iter().filter(|f| **f == Figure::PeakAbove).count(), 2);
        assert_eq!(figures.iter().filter(|f| **f == Figure::TapeBytes).count(), 2);
        // A flag's row: the program with the flag, and without it once for all its flags' rows.
        let flags = GROUPS.iter().find(|group| group.name == "flags").unwrap();
        let lines = measurements(flags);
        let add = |m: &&Measurement| m.program.file == "autodiff/add_gradient.nb";
        let flagged: Vec<&[&str]> = lines.iter().filter(add).map(|m| m.program.flags).collect();
        assert_eq!(flagged, [&["--check-nan"][..], &[], &["--graph", "graph.dot"]]);
    }

    #[test]
    fn a_figure_the_baseline_does_not_report_says_so() {
        let program = Program { file: "a.nb", baseline: None, per: 1.0, flags: &[] };
        let timings =
            |_| Ok(Timings { run_seconds: 2.0, tape_bytes_per_op: None, peak_bytes: None });
        assert_eq!(derive(Figure::Seconds, program, timings), Ok(2.0));
        assert_eq!(derive(Figure::Peak, program, timings), Err("not reported".to_owned()));
        assert_eq!(derive(Figure::TapeBytes, program, timings), Err("not reported".to_owned()));
        let failed = |_| Err("failed (exit status: 2): unexpected argument".to_owned());
        assert_eq!(
            derive(Figure::Seconds, program, failed),
            Err("failed (exit status: 2): unexpected argument".to_owned())
        );
    }

    /// Each line shows the round of its median ratio, marked above the bound; the geometric mean
    /// takes the lines measured in every round.
    #[test]
    fn the_table_shows_median_rounds_and_their_geometric_mean() {
        let rounds = [
            vec![
                line("fib", Ok(1.0), Ok(1.0)),
                line("sort", Ok(1.2), Ok(1.0)),
                line("new", Ok(1.0), Err("failed".into())),
            ],
            vec![
                line("fib", Ok(0.9), Ok(1.0)),
                line("sort", Ok(1.5), Ok(1.0)),
                line("new", Ok(1.0), Err("failed".into())),
            ],
            vec![
                line("fib", Ok(2.0), Ok(2.5)),
                line("sort", Ok(1.1), Ok(1.0)),
                line("new", Ok(1.0), Err("failed".into())),
            ],
        ];
        let table = table(&rounds);
        let rows: Vec<&str> = table.lines().collect();
        assert_eq!(rows[0], "| benchmark | this build | baseline | ratio (range over rounds) |");
        assert_eq!(rows[2], "| fib | 900 ms | 1.00 s | 0.90 (0.80–1.00) |");
        assert_eq!(rows[3], "| sort | 1.20 s | 1.00 s | 1.20 (1.10–1.50) ✗ |");
        assert_eq!(rows[4], "| new | 1.00 s | not measured: failed | — |");
        // sqrt(0.9 * 1.2) = 1.04; the rounds' means: sqrt(1.2), sqrt(0.9 * 1.5), sqrt(0.8 * 1.1).
        assert_eq!(
            rows[5],
            "| **geometric mean** (2 of 3 lines: those measured in every round) | | | \
             1.04 (0.94–1.16) |"
        );
        // A line outside the mean (an element access) does not count, even unmeasured.
        let mut access = line("read", Ok(-1e-9), Ok(5e-9));
        access.in_mean = false;
        let table = super::table(&[vec![line("fib", Ok(1.2), Ok(1.0)), access]]);
        let rows: Vec<&str> = table.lines().collect();
        assert_eq!(rows[2], "| fib | 1.20 s | 1.00 s | 1.20 ✗ |");
        assert_eq!(rows[3], "| read | below the noise | 5.00 ns | — |");
        assert_eq!(rows[4], "| **geometric mean** (1 line) | | | 1.20 ✗ |");
    }
}
