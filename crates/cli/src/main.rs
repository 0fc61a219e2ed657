//! The `nabla` command line: the one place that decides how results and errors are printed.

mod check;
mod explain;
mod fmt;
mod graph;
mod render;
mod repl;
mod run;
mod source;
mod test;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Syntax trees and tensors make many small allocations; mimalloc frees them far faster than the
/// system allocator (measured on the parser benchmark).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "nabla", version, about = "Nabla: tensors, shapes and derivatives you can trust")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the syntax tree of a file, then its syntax errors.
    Parse {
        /// The `.nb` file to parse.
        file: std::path::PathBuf,
    },
    /// Check files and directories (every `.nb` file, recursively) for errors.
    Check {
        /// Files or directories; the current directory by default.
        paths: Vec<std::path::PathBuf>,
        /// How to print the diagnostics.
        #[arg(long, value_enum, default_value = "human")]
        format: check::Format,
    },
    /// Format files and directories (every `.nb` file, recursively) in place; `-` formats
    /// standard input to standard output.
    Fmt {
        /// Files, directories or `-`; the current directory by default.
        paths: Vec<std::path::PathBuf>,
        /// Change nothing: print a diff of what would change and exit with 1 if anything would.
        #[arg(long)]
        check: bool,
    },
    /// Run a program: check it, then execute its top-level statements.
    Run {
        /// The `.nb` file to run.
        file: std::path::PathBuf,
        /// The largest tensor the program may create, in bytes or with a unit (`512M`, `2G`);
        /// the machine's memory by default.
        #[arg(long, value_parser = run::parse_size)]
        max_memory: Option<usize>,
        /// The deepest nesting of function calls before the run stops with an error.
        #[arg(long, default_value_t = exec::interp::Limits::DEFAULT_CALL_DEPTH)]
        max_recursion: usize,
        /// Write `{"run_seconds", "check_seconds", "tape_bytes_per_op", "tensor_copies",
        /// "peak_rss_bytes"}` to this file.
        #[arg(long)]
        timings_json: Option<std::path::PathBuf>,
        /// After the run, write the picture of the computational graph of the last `backward`
        /// to this file (SVG, or DOT for `.dot`); `nabla graph` has more choices.
        #[arg(long, value_name = "OUT")]
        graph: Option<std::path::PathBuf>,
        /// Stop at the first operation that makes a NaN or an infinity from finite values, in
        /// the forward pass or in a backward rule, and report it.
        #[arg(long)]
        check_nan: bool,
        /// Print the program in this form instead of running it (`bytecode`: the register code
        /// of every function, test and top level, as the interpreter runs it).
        #[arg(long, value_enum)]
        emit: Option<run::Emit>,
    },
    /// Run a program and write the picture of the computational graph it recorded.
    Graph {
        /// The `.nb` file to run.
        file: std::path::PathBuf,
        /// Where to write the picture; `FILE` with the extension `.graph.svg` by default.
        #[arg(long, short = 'o', value_name = "OUT")]
        output: Option<std::path::PathBuf>,
        /// SVG or DOT; by default the one the output's extension names (DOT for `.dot`).
        #[arg(long, value_enum)]
        format: Option<graph::Format>,
        /// Draw the graph of this `backward` (1 for the first) instead of the last one.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        backward: Option<u64>,
        /// Start from the operations at this line and draw only what they depend on.
        #[arg(long, value_name = "LINE")]
        from: Option<u32>,
        /// Follow inputs at most this many edges back (from `--from`, or from the output of
        /// `backward`).
        #[arg(long, value_name = "N")]
        depth: Option<usize>,
        /// `functions`: draw each call of a function made from the top level as one node.
        #[arg(long, value_enum)]
        group: Option<graph::Grouping>,
        /// Draw a node per recorded operation instead of one per operation and call stack
        /// (loop iterations each get their own node, up to 5000).
        #[arg(long)]
        expand: bool,
        /// The largest tensor the program may create, in bytes or with a unit.
        #[arg(long, value_parser = run::parse_size)]
        max_memory: Option<usize>,
        /// The deepest nesting of function calls before the run stops with an error.
        #[arg(long, default_value_t = exec::interp::Limits::DEFAULT_CALL_DEPTH)]
        max_recursion: usize,
    },
    /// Start an interactive session: enter declarations, statements, functions and
    /// expressions, and see each expression's value and type.
    Repl {
        /// A file whose definitions to load and whose top level to run first.
        file: Option<std::path::PathBuf>,
        /// The largest tensor an entry may create, in bytes or with a unit (`512M`, `2G`); the
        /// machine's memory by default.
        #[arg(long, value_parser = run::parse_size)]
        max_memory: Option<usize>,
        /// The deepest nesting of function calls before an entry stops with an error.
        #[arg(long, default_value_t = exec::interp::Limits::DEFAULT_CALL_DEPTH)]
        max_recursion: usize,
    },
    /// Run the `test` blocks of files and directories (every `.nb` file, recursively).
    Test {
        /// Files or directories; the current directory by default.
        paths: Vec<std::path::PathBuf>,
        /// The largest tensor a test may create, in bytes or with a unit (`512M`, `2G`); the
        /// machine's memory by default.
        #[arg(long, value_parser = run::parse_size)]
        max_memory: Option<usize>,
        /// The deepest nesting of function calls before a test stops with an error.
        #[arg(long, default_value_t = exec::interp::Limits::DEFAULT_CALL_DEPTH)]
        max_recursion: usize,
        /// Run only the tests whose name contains this text; the others are counted as skipped.
        #[arg(long)]
        filter: Option<String>,
        /// Stop a test that runs longer than this many seconds and report it as timed out.
        #[arg(long, default_value = "60", value_parser = test::parse_timeout)]
        timeout: f64,
        /// How to print the results.
        #[arg(long, value_enum, default_value = "human")]
        format: test::Format,
        /// Show the output of every test, not only of the failing ones.
        #[arg(long)]
        nocapture: bool,
        /// How many tests run at once; the number of cores by default.
        #[arg(long, short = 'j')]
        jobs: Option<usize>,
        /// Stop a test at the first operation that makes a NaN or an infinity from finite
        /// values, in the forward pass or in a backward rule, and report it as the failure.
        #[arg(long)]
        check_nan: bool,
    },
    /// Runs tests for `nabla test` (internal).
    #[command(name = "__test-worker", hide = true)]
    TestWorker {
        #[arg(long)]
        max_memory: Option<usize>,
        #[arg(long, default_value_t = exec::interp::Limits::DEFAULT_CALL_DEPTH)]
        max_recursion: usize,
        #[arg(long)]
        check_nan: bool,
    },
    /// Explain a diagnostic or run-time error code, such as `E0204` or `R0200`.
    Explain {
        /// The code.
        code: String,
    },
    /// Run the language server on standard input and output, for editors.
    Lsp,
}

fn main() -> ExitCode {
    // OpenBLAS picks its kernel when it loads; this may re-execute the program with the right
    // one, so it comes before anything else.
    tensor::ensure_tuned_kernel();
    // Its worker threads would spin idle through the first tenth of a second of every program;
    // its first threaded call starts them again.
    tensor::stop_idle_blas_threads();
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Test { .. } | Command::TestWorker { .. }) {
        exit_quietly_on_closed_output();
    }
    match cli.command {
        Command::Parse { file } => parse(&file),
        Command::Check { paths, format } => check::run(&paths, format),
        Command::Fmt { paths, check } => fmt::run(&paths, fmt::Options { check }),
        Command::Run { file, max_memory, max_recursion, timings_json, graph, check_nan, emit } => {
            let graph = graph.map(|path| run::GraphRequest {
                path,
                format: None,
                view: graph::View::default(),
                options: exec::graph::GraphOptions::default(),
            });
            let options =
                run::Options { max_memory, max_recursion, timings_json, graph, check_nan, emit };
            run::run(&file, &options)
        }
        Command::Graph {
            file,
            output,
            format,
            backward,
            from,
            depth,
            group,
            expand,
            max_memory,
            max_recursion,
        } => {
            let path = output.unwrap_or_else(|| graph::default_path(&file, format));
            let view = graph::View {
                from,
                depth,
                group_functions: group == Some(graph::Grouping::Functions),
            };
            let options = exec::graph::GraphOptions { collapse: !expand, backward };
            let graph = Some(run::GraphRequest { path, format, view, options });
            let options = run::Options {
                max_memory,
                max_recursion,
                timings_json: None,
                graph,
                check_nan: false,
                emit: None,
            };
            run::run(&file, &options)
        }
        Command::Repl { file, max_memory, max_recursion } => {
            repl::run(&repl::Options { file, max_memory, max_recursion })
        }
        Command::Test {
            paths,
            max_memory,
            max_recursion,
            filter,
            timeout,
            format,
            nocapture,
            jobs,
            check_nan,
        } => {
            let limits = test::RunLimits { max_memory, max_recursion, check_nan };
            test::run(&paths, &test::Options { filter, timeout, format, nocapture, jobs, limits })
        }
        Command::TestWorker { max_memory, max_recursion, check_nan } => {
            test::worker(test::RunLimits { max_memory, max_recursion, check_nan })
        }
        Command::Explain { code } => explain::run(&code),
        Command::Lsp => lsp::run_stdio(),
    }
}

/// Lets a closed standard output end the process quietly, as a command whose output goes to
/// `head` should: Rust ignores `SIGPIPE`, so that writing to a closed pipe fails, and `println!`
/// panics on that failure ("failed printing to stdout: Broken pipe"). Restoring the default
/// makes the write end the process silently, as it does for C tools. `nabla test` keeps ignoring
/// the signal: it writes to its workers' pipes and handles a worker that has gone away, and its
/// workers answer on a pipe whose closing they handle.
fn exit_quietly_on_closed_output() {
    #[cfg(unix)]
    // SAFETY: `signal` with `SIG_DFL` restores the default disposition of one signal; it takes no
    // pointer, and no handler of this program is replaced (none is installed for `SIGPIPE`).
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn parse(path: &std::path::Path) -> ExitCode {
    let text = match source::read(path) {
        Ok(text) => text,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::FAILURE;
        }
    };
    let parse = syntax::parse(&text);
    print!("{}", parse.debug_dump());
    let index = syntax::LineIndex::new(&text);
    for error in parse.errors() {
        let (line, col) = index.line_col_1based(error.range.start());
        println!("error: {}:{line}:{col}: {}", path.display(), error.message);
    }
    if parse.errors().is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
