//! The interpreter suite (issue 23): programs of different character under `bench/interpreter/`,
//! each written for Nabla (`.nb`), CPython (`.py`) and Lua 5.4 (`.lua`), run side by side.
//!
//! Every program runs as a whole process of its tool (`nabla run`, the reference environment's
//! `python`, `lua5.4`), once as a warm-up and then [`RUNS`] times; its figure is the median
//! wall-clock time less the median of the tool's empty program (`empty.*`: starting, reading a
//! program and stopping). The three tools must print the same result, or the row says they do
//! not. Rounds repeat the whole suite; each cell is the median of the rounds' figures, and a
//! ratio's range over the rounds is shown beside it. The section also reports the time per element
//! access (`access/`, see its README) and how the time of a recursive in-place quicksort grows
//! from 10^5 to 10^6 elements (`scaling/`).

use std::{
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use super::baseline;
use super::compare::{format_ratio, format_seconds};
use super::nabla::median;

/// Measured runs of each program, after one warm-up run.
const RUNS: usize = 5;
/// A run that takes longer than this is stopped and reported as failed.
const TIME_LIMIT: Duration = Duration::from_secs(300);

/// The programs of the suite, by file stem, with what they exercise.
pub const PROGRAMS: &[(&str, &str)] = &[
    ("fib", "recursive Fibonacci, `fib(32)`"),
    ("ackermann", "Ackermann's function A(3, 8), recursion 2,000 deep"),
    ("collatz", "longest Collatz sequence below 60,000"),
    ("primes", "primes below 200,000 by trial division"),
    ("mandelbrot", "Mandelbrot set, 300 x 300 points, 50 iterations"),
    ("simpson", "Simpson's rule for sin(x) exp(-x/3), 10^6 intervals"),
    ("edit_distance", "edit distance of two 800-letter sequences, 801 x 801 table"),
    ("gauss_seidel", "Gauss-Seidel relaxation, 120 x 120 grid, 80 sweeps"),
    ("matmul", "120 x 120 matrix product in scalar loops"),
    ("insertion_sort", "insertion sort of 3,000 numbers from an LCG"),
    ("heap_sort", "heap sort of 10^5 numbers, sift-down in a function"),
    ("quicksort", "recursive in-place quicksort of 2·10^5 numbers"),
    ("bst", "binary search tree of 10^5 numbers in a record, recursive in-order walk"),
];

/// The element accesses of `access/`, each against `loop`.
const ACCESSES: &[(&str, &str)] = &[
    ("read", "read `s += t[j]`"),
    ("write", "write `t[j] = x`"),
    ("update", "update `t[j] += x`"),
    ("update_2d", "update `u[j][j] += x`"),
];
const ACCESS_COUNT: f64 = 1e7;
/// The goal for one element access of Nabla, in seconds.
const ACCESS_GOAL: f64 = 10e-9;

/// The quicksort of `scaling/` at two sizes.
const SCALING: [(&str, f64); 2] =
    [("scaling/quicksort_100000.nb", 1e5), ("scaling/quicksort_1000000.nb", 1e6)];

/// Issue 23's targets for the suite's geometric mean of the ratios.
const CPYTHON_TARGET: f64 = 0.33;
const LUA_TARGET: f64 = 1.0;

/// One of the tools; its number is its cell in a round's [`Cells`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Tool {
    Nabla,
    CPython,
    Lua,
    /// Another `nabla` binary, for `cargo xtask bench --baseline`.
    Baseline,
}

/// How many tools there are.
const TOOL_COUNT: usize = 4;

impl Tool {
    fn extension(self) -> &'static str {
        match self {
            Tool::Nabla | Tool::Baseline => "nb",
            Tool::CPython => "py",
            Tool::Lua => "lua",
        }
    }
}

/// A measured time, or why there is none.
type Measured = Result<f64, String>;

/// One figure for each tool, indexed by `Tool as usize`; a tool a round did not run has an error.
type Cells = [Measured; TOOL_COUNT];

/// The tools a round runs, in the order it runs them on each program, with their binaries.
pub struct Tools {
    pub lineup: Vec<(Tool, PathBuf)>,
    pub env: Vec<(String, String)>,
}

/// A median time, with the program's output, or why there is none.
type Timed = Result<(f64, String), String>;

impl Tools {
    fn command(&self, (tool, binary): &(Tool, PathBuf), program: &Path) -> Command {
        let mut command = Command::new(binary);
        match tool {
            Tool::Nabla | Tool::Baseline => {
                super::nabla::cap_memory(&mut command);
                command.arg("run");
            }
            Tool::CPython => {
                // No `__pycache__` beside the programs in the source tree.
                command.env("PYTHONDONTWRITEBYTECODE", "1");
            }
            Tool::Lua => {}
        }
        command.arg(program).envs(self.env.iter().map(|(k, v)| (k, v)));
        command
    }

    /// The median time of `program` under `tool` over [`RUNS`] runs after a warm-up, and what it
    /// printed (the same every run, or an error).
    fn time(&self, tool: &(Tool, PathBuf), program: &Path) -> Timed {
        let mut times = Vec::with_capacity(RUNS);
        let mut output: Option<String> = None;
        for run in 0..=RUNS {
            let (seconds, printed) = self.run_once(tool, program)?;
            match &output {
                Some(first) if *first != printed => {
                    return Err(format!("printed {first:?}, then {printed:?}"));
                }
                _ => output = Some(printed),
            }
            if run > 0 {
                times.push(seconds);
            }
        }
        let seconds = median(&mut times).unwrap_or(f64::NAN);
        Ok((seconds, output.unwrap_or_default()))
    }

    fn run_once(&self, tool: &(Tool, PathBuf), program: &Path) -> Result<(f64, String), String> {
        let started = Instant::now();
        let mut child = self
            .command(tool, program)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| format!("cannot start: {err}"))?;
        // The programs print one line, so the pipes never fill before they exit.
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() > TIME_LIMIT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("stopped after {} s", TIME_LIMIT.as_secs()));
                }
                Ok(None) => std::thread::sleep(Duration::from_micros(200)),
                Err(err) => return Err(format!("cannot wait: {err}")),
            }
        };
        let seconds = started.elapsed().as_secs_f64();
        let output = child.wait_with_output().map_err(|err| format!("cannot read: {err}"))?;
        if !status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let first = stderr.lines().find(|line| !line.trim().is_empty()).unwrap_or("");
            return Err(match first.trim() {
                "" => format!("failed ({status})"),
                first => format!("failed ({status}): {first}"),
            });
        }
        Ok((seconds, String::from_utf8_lossy(&output.stdout).trim().to_owned()))
    }
}

/// What one round measured: per program and tool, the time less the tool's empty program.
pub struct Round {
    programs: Vec<Cells>,
    accesses: Vec<Cells>,
    /// The quicksort of `scaling/` in the `nabla` binaries.
    scaling: Vec<Cells>,
}

/// Cells for the tools of `lineup`, in their order, placed at their tools' numbers; the others
/// say they were not run.
fn cells(lineup: &[(Tool, PathBuf)], figures: impl IntoIterator<Item = Measured>) -> Cells {
    let mut cells: Cells = std::array::from_fn(|_| Err("not run".to_owned()));
    for ((tool, _), figure) in lineup.iter().zip(figures) {
        cells[*tool as usize] = figure;
    }
    cells
}

/// Measures every program of the suite once in each tool of the lineup, in its order.
pub fn measure(root: &Path, tools: &Tools) -> Round {
    let dir = root.join("bench/interpreter");
    let file = |stem: &str, tool: Tool| dir.join(format!("{stem}.{}", tool.extension()));
    let lineup = &tools.lineup;
    let empty = cells(
        lineup,
        lineup.iter().map(|tool| tools.time(tool, &file("empty", tool.0)).map(|(s, _)| s)),
    );
    // A program's time less its tool's start-up, checked against the other tools' output.
    let timed = |stem: &str| -> Cells {
        eprintln!("    {stem}");
        let runs: Vec<Timed> =
            lineup.iter().map(|tool| tools.time(tool, &file(stem, tool.0))).collect();
        let outputs: Vec<String> =
            runs.iter().filter_map(|run| run.as_ref().ok().map(|(_, out)| out.clone())).collect();
        let agree = outputs.windows(2).all(|pair| pair[0] == pair[1]);
        let figures = runs.into_iter().zip(lineup).map(|(run, (tool, _))| {
            let (seconds, _) = run?;
            if !agree {
                return Err(format!("the tools print different results: {}", outputs.join(" / ")));
            }
            Ok(seconds - empty[*tool as usize].clone()?)
        });
        cells(lineup, figures)
    };
    let programs = PROGRAMS.iter().map(|(stem, _)| timed(stem)).collect();
    let baseline = timed("access/loop");
    let accesses = ACCESSES
        .iter()
        .map(|(stem, _)| {
            let times = timed(&format!("access/{stem}"));
            let mut per_access = times
                .into_iter()
                .zip(&baseline)
                .map(|(time, baseline)| Ok((time? - baseline.clone()?) / ACCESS_COUNT));
            std::array::from_fn(|_| per_access.next().unwrap_or_else(|| Err("not run".to_owned())))
        })
        .collect();
    let scaling = SCALING
        .iter()
        .map(|(program, _)| {
            eprintln!("    {program}");
            let figures = lineup.iter().map(|tool| {
                if tool.0.extension() != "nb" {
                    return Err("not run".to_owned());
                }
                let (seconds, _) = tools.time(tool, &dir.join(program))?;
                Ok(seconds - empty[tool.0 as usize].clone()?)
            });
            cells(lineup, figures)
        })
        .collect();
    Round { programs, accesses, scaling }
}

/// The median of the rounds' values, or the first round's error when no round has one.
fn median_of(values: &[&Result<f64, String>]) -> Result<f64, String> {
    let mut numbers: Vec<f64> = values.iter().filter_map(|v| v.as_ref().ok().copied()).collect();
    match median(&mut numbers) {
        Some(value) => Ok(value),
        None => Err(values
            .first()
            .and_then(|v| v.as_ref().err().cloned())
            .unwrap_or_else(|| "not measured".to_owned())),
    }
}

/// A ratio of two medians with its range over the rounds' ratios.
fn ratio_cell(
    nabla: &Result<f64, String>,
    reference: &Result<f64, String>,
    rounds: &[(f64, f64)],
) -> (Option<f64>, String) {
    let (Ok(n), Ok(r)) = (nabla, reference) else { return (None, "—".to_owned()) };
    let ratio = n / r;
    let mut ratios: Vec<f64> = rounds.iter().map(|(n, r)| n / r).collect();
    ratios.sort_by(f64::total_cmp);
    let text = match (ratios.first(), ratios.last()) {
        (Some(low), Some(high)) if ratios.len() > 1 => {
            format!("{} ({}–{})", format_ratio(ratio), format_ratio(*low), format_ratio(*high))
        }
        _ => format_ratio(ratio),
    };
    (Some(ratio), text)
}

fn time_cell(time: &Result<f64, String>) -> String {
    match time {
        Ok(seconds) => format_seconds(*seconds),
        Err(reason) => format!("not measured: {reason}"),
    }
}

pub fn geometric_mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty())
        .then(|| (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp())
}

fn target_cell(ratio: Option<f64>, target: f64) -> String {
    match ratio {
        Some(ratio) if ratio <= target => format!("{} ✓ (≤ {target:.2})", format_ratio(ratio)),
        Some(ratio) => format!("{} ✗ (≤ {target:.2})", format_ratio(ratio)),
        None => format!("— (≤ {target:.2})"),
    }
}

/// The lines of `cargo xtask bench --baseline`'s table for one round run with [`Tool::Nabla`] and
/// [`Tool::Baseline`]: each program (the lines of the geometric mean, as on the page), each
/// element access and each size of the quicksort, the same figure of both binaries.
pub fn baseline_lines(round: &Round) -> Vec<baseline::Line> {
    let (this, other) = (Tool::Nabla as usize, Tool::Baseline as usize);
    let line = |label: String, cells: &Cells, in_mean| baseline::Line {
        label,
        unit: baseline::Unit::Seconds,
        this: cells[this].clone(),
        baseline: cells[other].clone(),
        in_mean,
    };
    let programs = PROGRAMS
        .iter()
        .zip(&round.programs)
        .map(|((stem, what), cells)| line(format!("`{stem}`: {what}"), cells, true));
    let accesses = ACCESSES.iter().zip(&round.accesses).map(|((_, what), cells)| {
        line(format!("element access: {what}, per access"), cells, false)
    });
    let scaling = SCALING.iter().zip(&round.scaling).map(|((_, n), cells)| {
        line(format!("recursive in-place quicksort of {n:.0} elements"), cells, false)
    });
    programs.chain(accesses).chain(scaling).collect()
}

/// The tools of the page's table, in its columns' order: Nabla's figures are `cells[0]`.
const PAGE_TOOLS: [Tool; 3] = [Tool::Nabla, Tool::CPython, Tool::Lua];

/// The suite's section from its rounds.
pub fn section(rounds: &[Round], measured: &str) -> String {
    let mut text = format!("## Interpreter (issue 23)\n\n{measured}\n\n");
    text.push_str(
        "| program | Nabla | CPython | Lua 5.4 | Nabla / CPython | Nabla / Lua |\n\
         |---|---|---|---|---|---|\n",
    );
    let mut versus = [Vec::new(), Vec::new()];
    let mut per_round = vec![[Vec::new(), Vec::new()]; rounds.len()];
    for (index, (stem, what)) in PROGRAMS.iter().enumerate() {
        let cells: Vec<Result<f64, String>> = PAGE_TOOLS
            .iter()
            .map(|&tool| {
                let tool = tool as usize;
                median_of(
                    &rounds.iter().map(|round| &round.programs[index][tool]).collect::<Vec<_>>(),
                )
            })
            .collect();
        let mut row = format!(
            "| `{stem}`: {what} | {} | {} | {} |",
            time_cell(&cells[0]),
            time_cell(&cells[1]),
            time_cell(&cells[2])
        );
        // CPython's and Lua's numbers, as tools and as columns of `cells` alike.
        for (k, reference) in [1, 2].into_iter().enumerate() {
            let measured: Vec<(f64, f64)> = rounds
                .iter()
                .filter_map(|round| {
                    let cells = &round.programs[index];
                    Some((*cells[0].as_ref().ok()?, *cells[reference].as_ref().ok()?))
                })
                .collect();
            for (r, round) in rounds.iter().enumerate() {
                let cells = &round.programs[index];
                if let (Ok(n), Ok(x)) = (&cells[0], &cells[reference]) {
                    per_round[r][k].push(n / x);
                }
            }
            let (ratio, cell) = ratio_cell(&cells[0], &cells[reference], &measured);
            versus[k].extend(ratio);
            row.push_str(&format!(" {cell} |"));
        }
        text.push_str(&row);
        text.push('\n');
    }
    let complete = versus.iter().all(|ratios| ratios.len() == PROGRAMS.len());
    let mean = |k: usize| complete.then(|| geometric_mean(&versus[k])).flatten();
    let range = |k: usize| {
        let mut means: Vec<f64> = per_round
            .iter()
            .filter(|ratios| ratios[k].len() == PROGRAMS.len())
            .filter_map(|ratios| geometric_mean(&ratios[k]))
            .collect();
        means.sort_by(f64::total_cmp);
        match (means.first(), means.last()) {
            (Some(low), Some(high)) if means.len() > 1 => {
                format!(" (rounds: {}–{})", format_ratio(*low), format_ratio(*high))
            }
            _ => String::new(),
        }
    };
    text.push_str(&format!(
        "| **geometric mean** | | | | {}{} | {}{} |\n",
        target_cell(mean(0), CPYTHON_TARGET),
        range(0),
        target_cell(mean(1), LUA_TARGET),
        range(1),
    ));
    text.push_str(
        "\nEach program runs as a whole process of its tool (`nabla run`, `python`, `lua5.4`); a \
         figure is the median wall-clock time of five runs after a warm-up, less the tool's time \
         to run an empty program, and the median of the rounds' figures. Ratios are Nabla's time \
         over the reference's (below 1, Nabla is faster), with their range over the rounds; the \
         targets apply to the geometric means. The three versions of a program compute the same \
         thing the same way (arrays are Nabla tensors, Python lists, Lua tables; `bst`'s record is \
         a Python object and a Lua table holding its three arrays) and must print the same \
         result.\n\n",
    );
    text.push_str(
        "| element access, 10^7 in a loop | Nabla | CPython list | Lua table | goal |\n\
         |---|---|---|---|---|\n",
    );
    for (index, (_, what)) in ACCESSES.iter().enumerate() {
        let cells: Vec<Result<f64, String>> = PAGE_TOOLS
            .iter()
            .map(|&tool| {
                let tool = tool as usize;
                median_of(
                    &rounds.iter().map(|round| &round.accesses[index][tool]).collect::<Vec<_>>(),
                )
            })
            .collect();
        // An access faster than the loop's own variation can come out negative: say so rather
        // than print a negative time.
        let ns = |cell: &Result<f64, String>| match cell {
            Ok(seconds) if *seconds <= 0.0 => "below the noise".to_owned(),
            Ok(seconds) => format!("{:.1} ns", seconds * 1e9),
            Err(reason) => format!("not measured: {reason}"),
        };
        let goal = match &cells[0] {
            Ok(seconds) if *seconds < ACCESS_GOAL => "< 10 ns ✓",
            Ok(_) => "< 10 ns ✗",
            Err(_) => "< 10 ns",
        };
        text.push_str(&format!(
            "| {what} | {} | {} | {} | {goal} |\n",
            ns(&cells[0]),
            ns(&cells[1]),
            ns(&cells[2])
        ));
    }
    text.push_str(
        "\nThe time of the loop with one access less the same loop without it (`access/loop`), \
         divided by the 10^7 accesses; \
         \"below the noise\" when that difference came out at zero or less.\n\n",
    );
    let sizes: Vec<Result<f64, String>> = (0..SCALING.len())
        .map(|k| {
            let nabla = Tool::Nabla as usize;
            median_of(&rounds.iter().map(|round| &round.scaling[k][nabla]).collect::<Vec<_>>())
        })
        .collect();
    text.push_str("| recursive in-place quicksort | Nabla | growth |\n|---|---|---|\n");
    for (k, (_, n)) in SCALING.iter().enumerate() {
        let growth = match (k.checked_sub(1).map(|j| &sizes[j]), &sizes[k]) {
            (Some(Ok(before)), Ok(after)) => {
                let (m, n0) = (*n, SCALING[k - 1].1);
                let n_log_n = m * m.ln() / (n0 * n0.ln());
                format!(
                    "{:.1}x (n log n: {n_log_n:.1}x, n²: {:.0}x)",
                    after / before,
                    (m / n0).powi(2)
                )
            }
            _ => "—".to_owned(),
        };
        text.push_str(&format!("| {n:.0} elements | {} | {growth} |\n", time_cell(&sizes[k])));
    }
    text.push_str(
        "\n`bench/interpreter/quicksort.nb` at two sizes: each recursive call takes the tensor, \
         writes into it and returns it (`a = quicksort(a, lo, hi)`), which is O(n log n) only \
         when no call copies the tensor.\n",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whichever tool runs first, its figures land in its own cell.
    #[test]
    fn cells_follow_the_tools_not_the_order_they_ran_in() {
        let lineup =
            [(Tool::Baseline, PathBuf::from("old/nabla")), (Tool::Nabla, PathBuf::from("nabla"))];
        let placed = cells(&lineup, [Ok(2.0), Ok(1.0)]);
        assert_eq!(placed[Tool::Nabla as usize], Ok(1.0));
        assert_eq!(placed[Tool::Baseline as usize], Ok(2.0));
        assert_eq!(placed[Tool::Lua as usize], Err("not run".to_owned()));
    }

    #[test]
    fn baseline_lines_pair_the_two_binaries() {
        let pair = |this: f64, baseline: f64| {
            let lineup =
                [(Tool::Nabla, PathBuf::from("nabla")), (Tool::Baseline, PathBuf::from("old"))];
            cells(&lineup, [Ok(this), Ok(baseline)])
        };
        let round = Round {
            programs: PROGRAMS.iter().map(|_| pair(1.0, 2.0)).collect(),
            accesses: ACCESSES.iter().map(|_| pair(5e-9, 3e-7)).collect(),
            scaling: SCALING.iter().map(|_| pair(0.2, 7.0)).collect(),
        };
        let lines = baseline_lines(&round);
        assert_eq!(lines.len(), PROGRAMS.len() + ACCESSES.len() + SCALING.len());
        assert_eq!(lines[0].label, "`fib`: recursive Fibonacci, `fib(32)`");
        assert_eq!((lines[0].this.clone(), lines[0].baseline.clone()), (Ok(1.0), Ok(2.0)));
        assert_eq!(lines.iter().filter(|line| line.in_mean).count(), PROGRAMS.len());
        let access = &lines[PROGRAMS.len()];
        assert_eq!(access.label, "element access: read `s += t[j]`, per access");
        assert!(!access.in_mean);
        assert_eq!(lines.last().unwrap().label, "recursive in-place quicksort of 1000000 elements");
    }
}
