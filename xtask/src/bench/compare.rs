//! One comparative group's Markdown section: each row's Nabla figure beside its reference's, the
//! ratio of the two and the target, marked pass or fail only when both sides were
//! measured. Nothing here invents a number: a side that was not measured says why.

use std::{collections::HashMap, path::Path};

use super::{
    groups::{Group, Program, Reference, Row, Target},
    nabla::{Nabla, Timings},
    python::Figure,
};

/// A measured time in seconds, or why there is none.
pub type Measured = Result<f64, String>;

/// One round of a group: the reference script's figures, then the Nabla programs, run one after
/// the other so that both sides meet the same machine.
pub struct Round<'a> {
    pub root: &'a Path,
    pub nabla: &'a mut Nabla,
    /// The reference script's figures, or why the script gave none.
    pub figures: Result<HashMap<String, Figure>, String>,
}

/// What a line measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Quantity {
    Seconds,
    /// Peak memory above the baseline's, with each side's peak in all (when measured).
    Bytes {
        nabla_total: Option<f64>,
        reference_total: Option<f64>,
    },
}

/// One line of a group's table as one round measured it.
#[derive(Clone, Debug)]
pub enum Line {
    /// A Nabla time (or memory) beside a reference's.
    Time {
        benchmark: String,
        quantity: Quantity,
        nabla: Measured,
        tool: String,
        reference: Measured,
        target: Option<Target>,
    },
    /// Cells that do not vary between rounds (the tape's bytes per operation).
    Fixed([String; 5]),
}

impl Line {
    fn ratio(&self) -> Option<f64> {
        match self {
            Line::Time { nabla: Ok(n), reference: Ok(r), .. } if *r > 0.0 => Some(n / r),
            _ => None,
        }
    }
}

/// Every line of `group`'s table, measured in one round.
pub fn measure(group: &Group, round: &mut Round<'_>) -> Vec<Line> {
    group.rows.iter().flat_map(|row| lines(row, round)).collect()
}

/// A group's section from its rounds (each the lines of [`measure`]). Each line shows the round
/// whose ratio is the median of the rounds' (the lower one of an even count), so its two times
/// and its ratio were measured together, and the range of the ratios beside it.
pub fn section(
    group: &Group,
    rounds: &[Vec<Line>],
    measured: &str,
    nabla_unavailable: Option<&str>,
    script_error: Option<&str>,
) -> String {
    let mut text = format!("## {}\n\n{measured}\n", group.title);
    if let Some(reason) = nabla_unavailable {
        text.push_str(&format!(
            "\nNabla not measured: {reason}. The reference figures are real; the Nabla cells \
             and the ratios stay empty until the harness can run the programs under `bench/`.\n"
        ));
    }
    if let Some(err) = script_error {
        let script = group.script.unwrap_or_default();
        text.push_str(&format!("\nThe reference script `bench/{script}` failed: {err}.\n"));
    }
    text.push_str("\n| benchmark | Nabla | reference | ratio | target |\n|---|---|---|---|---|\n");
    let count = rounds.iter().map(Vec::len).min().unwrap_or(0);
    for index in 0..count {
        let measured: Vec<&Line> = rounds.iter().map(|lines| &lines[index]).collect();
        text.push_str(&format!("| {} |\n", median_line(&measured).join(" | ")));
    }
    text.push_str(&format!(
        "\nRatio: Nabla's time over the reference's (below 1, Nabla is faster){}; ✓ or ✗ marks a \
         measured ratio inside or outside the issue's target. {}\n",
        match rounds.len() {
            0 | 1 => String::new(),
            n => format!(
                ", from the one of {n} rounds whose ratio is the median, with the range of the \
                 {n} rounds' ratios in parentheses"
            ),
        },
        group.notes
    ));
    text
}

/// The cells of the round whose ratio is the median, with the ratios' range when there are
/// several; the first round's when no round has a ratio.
fn median_line(rounds: &[&Line]) -> [String; 5] {
    let ratios: Vec<Option<f64>> = rounds.iter().map(|line| line.ratio()).collect();
    let (chosen, range) = median_round(&ratios);
    match rounds.get(chosen.unwrap_or(0)) {
        Some(Line::Time { benchmark, quantity, nabla, tool, reference, target }) => {
            measured_row(*quantity, benchmark, nabla, tool, reference, *target, range)
        }
        Some(Line::Fixed(cells)) => cells.clone(),
        None => Default::default(),
    }
}

/// Of the rounds' ratios (`None` for a round without one, which is left out), the round whose
/// ratio is the median (the lower one of an even count), and the range of the ratios when more
/// than one round has one.
pub fn median_round(ratios: &[Option<f64>]) -> (Option<usize>, Option<(f64, f64)>) {
    let mut measured: Vec<(f64, usize)> =
        ratios.iter().enumerate().filter_map(|(i, ratio)| Some(((*ratio)?, i))).collect();
    measured.sort_by(|a, b| a.0.total_cmp(&b.0));
    let chosen = measured.get(measured.len().saturating_sub(1) / 2).map(|&(_, i)| i);
    let range = match (measured.first(), measured.last()) {
        (Some(low), Some(high)) if measured.len() > 1 => Some((low.0, high.0)),
        _ => None,
    };
    (chosen, range)
}

/// A ratio, with the range of the rounds' ratios in parentheses when there is one.
pub fn ratio_text(ratio: f64, range: Option<(f64, f64)>) -> String {
    match range {
        Some((low, high)) => {
            format!("{} ({}–{})", format_ratio(ratio), format_ratio(low), format_ratio(high))
        }
        None => format_ratio(ratio),
    }
}

/// The lines one group row becomes.
fn lines(row: &Row, run: &mut Round<'_>) -> Vec<Line> {
    let time = |benchmark: &str, nabla: &Measured, tool: String, reference, target| Line::Time {
        benchmark: benchmark.to_owned(),
        quantity: Quantity::Seconds,
        nabla: nabla.clone(),
        tool,
        reference,
        target,
    };
    match row {
        Row::Time { benchmark, nabla, reference, target } => {
            let nabla_seconds = program_seconds(run, *nabla);
            let (tool, reference_seconds) = reference_seconds(run, reference);
            vec![time(benchmark, &nabla_seconds, tool, reference_seconds, *target)]
        }
        Row::EachAndFastest { benchmark, nabla, tools, target } => {
            let nabla_seconds = program_seconds(run, *nabla);
            let mut lines = Vec::new();
            for &(key, tool) in *tools {
                let reference = Reference::Script { key, tool };
                let (tool, seconds) = reference_seconds(run, &reference);
                lines.push(time(benchmark, &nabla_seconds, tool, seconds, None));
            }
            let (tool, seconds) = reference_seconds(run, &Reference::Fastest(tools));
            lines.push(time(benchmark, &nabla_seconds, tool, seconds, *target));
            lines
        }
        Row::TapeBytes { benchmark, nabla } => vec![reported(run, benchmark, *nabla, |timings| {
            timings.tape_bytes_per_op.map(|bytes| format!("{bytes:.0} bytes"))
        })],
        Row::PeakMemory { benchmark, nabla } => {
            vec![reported(run, benchmark, *nabla, |timings| timings.peak_bytes.map(format_bytes))]
        }
        Row::MemoryRatio { benchmark, nabla, reference, tool, target } => {
            let (nabla, nabla_total) = program_bytes(run, *nabla);
            let (reference, reference_total) = program_bytes(run, *reference);
            vec![Line::Time {
                benchmark: benchmark.to_string(),
                quantity: Quantity::Bytes { nabla_total, reference_total },
                nabla,
                tool: (*tool).to_owned(),
                reference,
                target: *target,
            }]
        }
    }
}

/// The line of a figure a program reports about itself rather than a time (the same in every
/// round): `figure` picks it from the program's timings.
fn reported(
    run: &mut Round<'_>,
    benchmark: &str,
    program: Program,
    figure: impl Fn(&Timings) -> Option<String>,
) -> Line {
    let cell = match run.nabla.timings(run.root, program.file, program.flags) {
        Ok(timings) => figure(&timings).unwrap_or_else(|| "not reported".to_owned()),
        Err(reason) => format!("not measured: {reason}"),
    };
    Line::Fixed([benchmark.to_owned(), cell, "—".into(), "—".into(), "reported".into()])
}

/// A size in bytes with three significant digits in MB (10^6 bytes) or kB.
pub fn format_bytes(bytes: f64) -> String {
    match bytes {
        b if b >= 1e6 => format!("{} MB", significant(b / 1e6)),
        b => format!("{} kB", significant(b / 1e3)),
    }
}

/// A program's peak memory less its baseline's, and its peak in all.
fn program_bytes(run: &mut Round<'_>, program: Program) -> (Measured, Option<f64>) {
    bytes(program, |file| run.nabla.timings(run.root, file, program.flags))
}

/// A program's peak memory less its baseline's, and its peak in all, from `timings`, the timings
/// of a program file run with the program's flags.
pub fn bytes(
    program: Program,
    mut timings: impl FnMut(&'static str) -> Result<Timings, String>,
) -> (Measured, Option<f64>) {
    let mut peak = |file| -> Measured {
        timings(file)?.peak_bytes.ok_or_else(|| "peak memory not reported".to_owned())
    };
    let total = peak(program.file);
    let baseline = match program.baseline {
        Some(file) => peak(file),
        None => Ok(0.0),
    };
    let above = total.clone().and_then(|total| Ok(total - baseline?));
    (above, total.ok())
}

fn measured_row(
    quantity: Quantity,
    benchmark: &str,
    nabla: &Measured,
    tool: &str,
    reference: &Measured,
    target: Option<Target>,
    range: Option<(f64, f64)>,
) -> [String; 5] {
    let format = |value: f64, total: Option<f64>| match (quantity, total) {
        (Quantity::Seconds, _) => format_seconds(value),
        (Quantity::Bytes { .. }, Some(total)) => {
            format!("{} ({} in all)", format_bytes(value), format_bytes(total))
        }
        (Quantity::Bytes { .. }, None) => format_bytes(value),
    };
    let (nabla_total, reference_total) = match quantity {
        Quantity::Bytes { nabla_total, reference_total } => (nabla_total, reference_total),
        Quantity::Seconds => (None, None),
    };
    let nabla_cell = match nabla {
        Ok(value) => format(*value, nabla_total),
        Err(reason) => format!("not measured: {reason}"),
    };
    let reference_cell = match reference {
        Ok(value) => format!("{tool}: {}", format(*value, reference_total)),
        Err(reason) => format!("{tool}: {reason}"),
    };
    let ratio = match (nabla, reference) {
        (Ok(n), Ok(r)) if *r > 0.0 => Some(n / r),
        _ => None,
    };
    let ratio_cell = ratio.map_or_else(|| "—".to_owned(), |ratio| ratio_text(ratio, range));
    let target_cell = match (target, ratio) {
        (Some(target), Some(ratio)) if ratio <= target.max_ratio => format!("{} ✓", target.text),
        (Some(target), Some(_)) => format!("{} ✗", target.text),
        (Some(target), None) => target.text.to_owned(),
        (None, _) => "—".to_owned(),
    };
    [benchmark.to_owned(), nabla_cell, reference_cell, ratio_cell, target_cell]
}

/// A program's time less its baseline's, per repetition of its kernel.
fn program_seconds(run: &mut Round<'_>, program: Program) -> Measured {
    seconds(program, |file| run.nabla.timings(run.root, file, program.flags))
}

/// A program's time less its baseline's, per repetition of its kernel, from `timings`, the
/// timings of a program file run with the program's flags.
pub fn seconds(
    program: Program,
    mut timings: impl FnMut(&'static str) -> Result<Timings, String>,
) -> Measured {
    let total = timings(program.file)?.run_seconds;
    let baseline = match program.baseline {
        Some(file) => timings(file)?.run_seconds,
        None => 0.0,
    };
    if total <= baseline {
        return Err(format!("no slower than its set-up alone ({})", format_seconds(baseline)));
    }
    Ok((total - baseline) / program.per)
}

/// The reference's name for the table and its time.
fn reference_seconds(run: &mut Round<'_>, reference: &Reference) -> (String, Measured) {
    match reference {
        Reference::Script { key, tool } => ((*tool).to_owned(), figure(&run.figures, key)),
        Reference::Nabla { program, tool } => ((*tool).to_owned(), program_seconds(run, *program)),
        Reference::Fastest(tools) => {
            let fastest = tools
                .iter()
                .filter_map(|(key, tool)| Some((*tool, figure(&run.figures, key).ok()?)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            match fastest {
                Some((tool, seconds)) => (format!("fastest: {tool}"), Ok(seconds)),
                None => ("fastest".to_owned(), Err("not measured".to_owned())),
            }
        }
    }
}

fn figure(figures: &Result<HashMap<String, Figure>, String>, key: &str) -> Measured {
    let figures = figures.as_ref().map_err(|_| "not measured: script failed".to_owned())?;
    let figure = figures.get(key).ok_or_else(|| format!("not measured: no figure `{key}`"))?;
    match figure.seconds {
        Some(seconds) => Ok(seconds),
        None => Err(figure.note.clone().unwrap_or_else(|| "not measured".to_owned())),
    }
}

/// Three significant digits in the largest unit that keeps the value at least 1.
pub fn format_seconds(seconds: f64) -> String {
    let (value, unit) = match seconds {
        s if s >= 1.0 => (s, "s"),
        s if s >= 1e-3 => (s * 1e3, "ms"),
        s if s >= 1e-6 => (s * 1e6, "µs"),
        s => (s * 1e9, "ns"),
    };
    format!("{} {unit}", significant(value))
}

fn significant(value: f64) -> String {
    match value {
        v if v >= 100.0 => format!("{v:.0}"),
        v if v >= 10.0 => format!("{v:.1}"),
        v => format!("{v:.2}"),
    }
}

/// Two decimals, or two significant digits for ratios below 0.1.
pub fn format_ratio(ratio: f64) -> String {
    if ratio >= 0.1 || ratio <= 0.0 {
        return format!("{ratio:.2}");
    }
    let decimals = (-ratio.log10().floor()) as usize + 1;
    format!("{ratio:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_times_and_ratios() {
        assert_eq!(format_seconds(1.234), "1.23 s");
        assert_eq!(format_seconds(0.1234), "123 ms");
        assert_eq!(format_seconds(0.01234), "12.3 ms");
        assert_eq!(format_seconds(8.7e-6), "8.70 µs");
        assert_eq!(format_seconds(4.2e-8), "42.0 ns");
        assert_eq!(format_ratio(1.0 / 3.0), "0.33");
        assert_eq!(format_ratio(12.345), "12.35");
        assert_eq!(format_ratio(0.0041), "0.0041");
        assert_eq!(format_ratio(0.05), "0.050");
        assert_eq!(format_bytes(58_720_256.0), "58.7 MB");
        assert_eq!(format_bytes(1_234_567_890.0), "1235 MB");
        assert_eq!(format_bytes(512_000.0), "512 kB");
    }

    #[test]
    fn memory_rows_show_the_part_above_the_baseline_and_the_total() {
        let target = Some(Target { max_ratio: 0.1, text: "≤ 0.1" });
        let quantity = Quantity::Bytes { nabla_total: Some(34e6), reference_total: None };
        let row = measured_row(quantity, "loop", &Ok(7e6), "plain", &Ok(110e6), target, None);
        assert_eq!(row[1], "7.00 MB (34.0 MB in all)");
        assert_eq!(row[2], "plain: 110 MB");
        assert_eq!((row[3].as_str(), row[4].as_str()), ("0.064", "≤ 0.1 ✓"));
    }

    #[test]
    fn a_ratio_is_marked_only_when_both_sides_are_measured() {
        let target = Some(Target { max_ratio: 1.1, text: "≤ 1.1" });
        let row = measured_row(Quantity::Seconds, "mm", &Ok(0.2), "NumPy", &Ok(0.1), target, None);
        assert_eq!(row[3], "2.00");
        assert_eq!(row[4], "≤ 1.1 ✗");
        let row = measured_row(Quantity::Seconds, "mm", &Ok(0.1), "NumPy", &Ok(0.1), target, None);
        assert_eq!(row[4], "≤ 1.1 ✓");
        let row = measured_row(
            Quantity::Seconds,
            "mm",
            &Err("`nabla run` is not built yet".into()),
            "NumPy",
            &Ok(0.1),
            target,
            None,
        );
        assert_eq!(row[1], "not measured: `nabla run` is not built yet");
        assert_eq!(row[2], "NumPy: 100 ms");
        assert_eq!((row[3].as_str(), row[4].as_str()), ("—", "≤ 1.1"));
    }

    #[test]
    fn a_programs_figure_is_its_time_less_its_set_up_per_repetition() {
        let timings = |file: &'static str| -> Result<Timings, String> {
            let run_seconds = match file {
                "warm.nb" => 5.0,
                "once.nb" => 1.0,
                "setup.nb" => 2.0,
                _ => return Err(format!("no {file}")),
            };
            Ok(Timings {
                run_seconds,
                tape_bytes_per_op: None,
                peak_bytes: Some(run_seconds * 1e6),
            })
        };
        let program = |file, baseline, per| Program { file, baseline, per, flags: &[] };
        // Five repetitions less one, per repetition.
        assert_eq!(seconds(program("warm.nb", Some("once.nb"), 4.0), timings), Ok(1.0));
        assert_eq!(seconds(program("once.nb", None, 1e6), timings), Ok(1e-6));
        assert_eq!(
            seconds(program("once.nb", Some("setup.nb"), 1.0), timings),
            Err("no slower than its set-up alone (2.00 s)".to_owned())
        );
        assert_eq!(
            seconds(program("warm.nb", Some("gone.nb"), 4.0), timings),
            Err("no gone.nb".to_owned())
        );
        assert_eq!(bytes(program("warm.nb", Some("once.nb"), 1.0), timings), (Ok(4e6), Some(5e6)));
    }

    #[test]
    fn the_median_round_is_the_lower_middle_of_the_measured_ones() {
        assert_eq!(median_round(&[]), (None, None));
        assert_eq!(median_round(&[None]), (None, None));
        assert_eq!(median_round(&[Some(2.0)]), (Some(0), None));
        assert_eq!(median_round(&[Some(3.0), Some(1.0), Some(2.0)]), (Some(2), Some((1.0, 3.0))));
        assert_eq!(median_round(&[Some(4.0), None, Some(2.0)]), (Some(2), Some((2.0, 4.0))));
        assert_eq!(ratio_text(1.0, Some((0.5, 2.0))), "1.00 (0.50–2.00)");
        assert_eq!(ratio_text(1.0, None), "1.00");
    }

    /// The round of the median ratio supplies all three cells, and the range spans every round.
    #[test]
    fn rounds_show_the_median_ratio_and_their_range() {
        let target = Some(Target { max_ratio: 1.0, text: "≤ 1" });
        let line = |nabla: f64, reference: f64| Line::Time {
            benchmark: "fib".into(),
            quantity: Quantity::Seconds,
            nabla: Ok(nabla),
            tool: "CPython".into(),
            reference: Ok(reference),
            target,
        };
        let rounds = [line(0.3, 1.0), line(0.2, 0.1), line(0.5, 1.0)];
        let cells = median_line(&rounds.iter().collect::<Vec<_>>());
        assert_eq!(cells[1..], ["500 ms", "CPython: 1.00 s", "0.50 (0.30–2.00)", "≤ 1 ✓"]);
        // An even count takes the lower median; a round without a ratio is left out.
        let unmeasured = Line::Time {
            benchmark: "fib".into(),
            quantity: Quantity::Seconds,
            nabla: Err("failed".into()),
            tool: "CPython".into(),
            reference: Ok(1.0),
            target,
        };
        let rounds = [line(0.4, 1.0), unmeasured.clone(), line(0.2, 1.0)];
        let cells = median_line(&rounds.iter().collect::<Vec<_>>());
        assert_eq!(cells[3], "0.20 (0.20–0.40)");
        // With no ratio at all, the first round's cells, without a range.
        let cells = median_line(&[&unmeasured]);
        assert_eq!((cells[1].as_str(), cells[3].as_str()), ("not measured: failed", "—"));
    }
}
