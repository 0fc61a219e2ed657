//! The `nabla` command line: the one place that decides how results and errors are printed.

mod check;
mod explain;
mod fmt;
mod render;
mod source;

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
    /// Run the language server on standard input and output, for editors.
    Lsp,
    /// Explain a diagnostic code, such as `E0204`.
    Explain {
        /// The code.
        code: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Parse { file } => parse(&file),
        Command::Check { paths, format } => check::run(&paths, format),
        Command::Fmt { paths, check } => fmt::run(&paths, fmt::Options { check }),
        Command::Explain { code } => explain::run(&code),
        Command::Lsp => lsp::run_stdio(),
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
