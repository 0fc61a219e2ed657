//! Running a checked program: lowering it, executing its top level with an output stream and
//! limits, and reporting what the benchmark harness wants to know.

use std::io::Write;
use std::time::Instant;

use hir::{Db, SourceFile};

use crate::autodiff::Tape;
use crate::error::RuntimeError;
use crate::graph::{Graph, TraceOptions};
use crate::interp::{Limits, Machine};
use crate::lower::lower_program;

/// The native stack the interpreter runs on. Nabla calls do not use it (they live on the
/// interpreter's own stack), but each nesting level of derivatives does, and it is the second line
/// of defence behind the transform-depth limit.
pub const INTERPRETER_STACK_BYTES: usize = 256 << 20;

/// What a finished run measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunReport {
    /// Lowering and execution, without reading, parsing or checking.
    pub run_seconds: f64,
    /// The bytes of autodiff tape records per recorded operation over the run (the size of one
    /// record when nothing was recorded).
    pub tape_bytes_per_op: Option<f64>,
    /// How many indexed writes copied a tensor's buffer because another value shared it
    /// ([`Machine::tensor_copies`]).
    pub tensor_copies: u64,
}

/// Lowers the program whose main file is `main` (which must be free of errors, like everything it
/// imports) and runs its top level, printing to `out`.
///
/// On a run-time error the output printed before it has been written to `out`; the error carries
/// the span of the failing operation and the stack of calls.
pub fn run_program(
    db: &dyn Db,
    main: SourceFile,
    out: &mut dyn Write,
    limits: Limits,
) -> Result<RunReport, RuntimeError> {
    run_traced(db, main, out, limits, TraceOptions::default()).result
}

/// What a traced run gives: its result, and the graph its trace options asked for (also after a
/// run-time error, with what was recorded until then).
#[derive(Debug)]
pub struct TracedRun {
    pub result: Result<RunReport, RuntimeError>,
    pub graph: Option<Graph>,
}

/// [`run_program`] traced with `trace` (see [`Machine::trace`]): `--graph`, `nabla graph` and
/// `--check-nan`.
pub fn run_traced(
    db: &dyn Db,
    main: SourceFile,
    out: &mut dyn Write,
    limits: Limits,
    trace: TraceOptions,
) -> TracedRun {
    let start = Instant::now();
    let program = match lower_program(db, main) {
        Ok(program) => program,
        Err(error) => return TracedRun { result: Err(error), graph: None },
    };
    let mut machine = match Machine::new(&program, out, limits) {
        Ok(machine) => machine,
        Err(error) => return TracedRun { result: Err(error), graph: None },
    };
    machine.trace(trace);
    let result = machine.run().map(|()| {
        let run_seconds = start.elapsed().as_secs_f64();
        // What the run's recordings took per recorded operation (fused scalar operations share
        // a record), or the size of one record when nothing was recorded.
        let tape = machine.tape_ref();
        let tape_bytes_per_op = tape.bytes_per_operation().unwrap_or(Tape::record_bytes() as f64);
        let tensor_copies = machine.tensor_copies();
        RunReport { run_seconds, tape_bytes_per_op: Some(tape_bytes_per_op), tensor_copies }
    });
    TracedRun { result, graph: machine.take_graph() }
}

/// Runs `f` on a new thread with [`INTERPRETER_STACK_BYTES`] of stack and returns its result, or
/// `None` if the thread could not be started or did not finish normally.
pub fn on_interpreter_stack<T: Send>(f: impl FnOnce() -> T + Send) -> Option<T> {
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("nabla-interpreter".to_owned())
            .stack_size(INTERPRETER_STACK_BYTES)
            .spawn_scoped(scope, f)
            .ok()?;
        handle.join().ok()
    })
}
