//! One comparative group's Markdown section: each row's Nabla figure beside its reference's, the
//! ratio of the two and the target, marked pass or fail only when both sides were
//! measured. Nothing here invents a number: a side that was not measured says why.

use std::{collections::HashMap, path::Path};

use super::{
    groups::{Group, Program, Reference, Row, Target},
    nabla::Nabla,
    python::Figure,
};

/// A measured time in seconds, or why there is none.
type Measured = Result<f64, String>;

/// What a group's section needs besides the group: both sides and how the run was set up.
pub struct Run<'a> {
    pub root: &'a Path,
    pub nabla: &'a mut Nabla,
    /// The reference script's figures, or why the script gave none.
    pub figures: Result<HashMap<String, Figure>, String>,
    /// A line on when and how the group was measured.
    pub measured: String,
}

pub fn section(group: &Group, run: &mut Run<'_>) -> String {
    let mut text = format!("## {}\n\n{}\n", group.title, run.measured);
    if let Some(reason) = run.nabla.unavailable() {
        text.push_str(&format!(
            "\nNabla not measured: {reason}. The reference figures are real; the Nabla cells \
             and the ratios stay empty until the harness can run the programs under `bench/`.\n"
        ));
    }
    if let Err(err) = &run.figures {
        text.push_str(&format!("\nThe reference script `bench/{}` failed: {err}.\n", group.script));
    }
    text.push_str("\n| benchmark | Nabla | reference | ratio | target |\n|---|---|---|---|---|\n");
    for row in group.rows {
        for cells in rows(row, run) {
            text.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
    text.push_str(&format!(
        "\nRatio: Nabla's time over the reference's (below 1, Nabla is faster); ✓ or ✗ marks a \
         measured ratio inside or outside the issue's target. {}\n",
        group.notes
    ));
    text
}

/// The table rows one group row becomes, as cells.
fn rows(row: &Row, run: &mut Run<'_>) -> Vec<[String; 5]> {
    match row {
        Row::Time { benchmark, nabla, reference, target } => {
            let nabla_seconds = program_seconds(run, *nabla);
            let (tool, reference_seconds) = reference_seconds(run, reference);
            vec![time_row(benchmark, &nabla_seconds, &tool, &reference_seconds, *target)]
        }
        Row::EachAndFastest { benchmark, nabla, tools, target } => {
            let nabla_seconds = program_seconds(run, *nabla);
            let mut rows = Vec::new();
            for &(key, tool) in *tools {
                let reference = Reference::Script { key, tool };
                let (tool, seconds) = reference_seconds(run, &reference);
                rows.push(time_row(benchmark, &nabla_seconds, &tool, &seconds, None));
            }
            let (tool, seconds) = reference_seconds(run, &Reference::Fastest(tools));
            rows.push(time_row(benchmark, &nabla_seconds, &tool, &seconds, *target));
            rows
        }
        Row::TapeBytes { benchmark, nabla } => {
            let bytes = match run.nabla.timings(run.root, nabla.file) {
                Ok(timings) => match timings.tape_bytes_per_op {
                    Some(bytes) => format!("{bytes:.0} bytes"),
                    None => "not reported".to_owned(),
                },
                Err(reason) => format!("not measured: {reason}"),
            };
            vec![[benchmark.to_string(), bytes, "—".into(), "—".into(), "reported".into()]]
        }
    }
}

fn time_row(
    benchmark: &str,
    nabla: &Measured,
    tool: &str,
    reference: &Measured,
    target: Option<Target>,
) -> [String; 5] {
    let nabla_cell = match nabla {
        Ok(seconds) => format_seconds(*seconds),
        Err(reason) => format!("not measured: {reason}"),
    };
    let reference_cell = match reference {
        Ok(seconds) => format!("{tool}: {}", format_seconds(*seconds)),
        Err(reason) => format!("{tool}: {reason}"),
    };
    let ratio = match (nabla, reference) {
        (Ok(n), Ok(r)) if *r > 0.0 => Some(n / r),
        _ => None,
    };
    let ratio_cell = ratio.map_or_else(|| "—".to_owned(), format_ratio);
    let target_cell = match (target, ratio) {
        (Some(target), Some(ratio)) if ratio <= target.max_ratio => format!("{} ✓", target.text),
        (Some(target), Some(_)) => format!("{} ✗", target.text),
        (Some(target), None) => target.text.to_owned(),
        (None, _) => "—".to_owned(),
    };
    [benchmark.to_owned(), nabla_cell, reference_cell, ratio_cell, target_cell]
}

/// A program's time less its baseline's, per repetition of its kernel.
fn program_seconds(run: &mut Run<'_>, program: Program) -> Measured {
    let total = run.nabla.timings(run.root, program.file)?.run_seconds;
    let baseline = match program.baseline {
        Some(file) => run.nabla.timings(run.root, file)?.run_seconds,
        None => 0.0,
    };
    if total <= baseline {
        return Err(format!("no slower than its set-up alone ({})", format_seconds(baseline)));
    }
    Ok((total - baseline) / program.per)
}

/// The reference's name for the table and its time.
fn reference_seconds(run: &mut Run<'_>, reference: &Reference) -> (String, Measured) {
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
    }

    #[test]
    fn a_ratio_is_marked_only_when_both_sides_are_measured() {
        let target = Some(Target { max_ratio: 1.1, text: "≤ 1.1" });
        let row = time_row("mm", &Ok(0.2), "NumPy", &Ok(0.1), target);
        assert_eq!(row[3], "2.00");
        assert_eq!(row[4], "≤ 1.1 ✗");
        let row = time_row("mm", &Ok(0.1), "NumPy", &Ok(0.1), target);
        assert_eq!(row[4], "≤ 1.1 ✓");
        let row =
            time_row("mm", &Err("`nabla run` is not built yet".into()), "NumPy", &Ok(0.1), target);
        assert_eq!(row[1], "not measured: `nabla run` is not built yet");
        assert_eq!(row[2], "NumPy: 100 ms");
        assert_eq!((row[3].as_str(), row[4].as_str()), ("—", "≤ 1.1"));
    }
}
