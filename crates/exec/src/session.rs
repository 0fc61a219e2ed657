//! Running a program a piece at a time against state that persists between the pieces: what a
//! REPL needs.
//!
//! The host keeps one source file for the session (its definitions, then the new entry) and checks
//! it; [`Session::run`] then lowers it with [`lower_entry`], so that only the entry's statements
//! run, and runs them on a machine that starts from the session's state:
//!
//! - the value of every top-level variable, constant and shape variable, by file and name (a
//!   variable keeps its frame slot while the entry runs and goes home to a global afterwards,
//!   see [`crate::code::EntryLayout`]);
//! - the constants of imported files, evaluated once per file (until [`Session::forget_file`]);
//! - the autodiff tape (the recording since the last `backward`, and its gradients for `grad(x)`)
//!   and the random generator.
//!
//! An entry that stops with a run-time error, or is interrupted through
//! [`Session::interrupt_flag`], keeps what it changed in the variables of earlier entries; the
//! names it declares itself get no value. Names are the host's to manage: it forgets a name with
//! [`Session::forget`] when it drops or replaces the name's definition.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hir::{Db, SourceFile};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::RuntimeError;
use crate::graph::{Graph, TraceOptions};
use crate::interp::{Carried, Limits, Machine};
use crate::lower::{Entry, lower_entry};
use crate::value::Value;

/// The state a session keeps between entries.
pub struct Session {
    /// Top-level values by file and name.
    values: FxHashMap<(SourceFile, String), Value>,
    /// Imported files whose constants have been evaluated.
    initialized: FxHashSet<SourceFile>,
    /// The tape and the random generator; `None` only while a run has them.
    carried: Option<Carried>,
    interrupt: Arc<AtomicBool>,
}

impl Default for Session {
    fn default() -> Session {
        Session::new()
    }
}

impl Session {
    /// An empty session: no values, an empty tape, the random generator at seed 0.
    pub fn new() -> Session {
        Session {
            values: FxHashMap::default(),
            initialized: FxHashSet::default(),
            carried: Some(Carried::fresh()),
            interrupt: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The flag that interrupts a running entry when set (from a signal handler or another
    /// thread). [`Session::run`] clears it when it returns, not when it starts, so that an
    /// interrupt that comes while the host checks an entry still stops it; a host that starts
    /// new work clears it itself, to drop an interrupt meant for work that has ended.
    pub fn interrupt_flag(&self) -> Arc<AtomicBool> {
        self.interrupt.clone()
    }

    /// The value of the top-level name `name` of `file`, if it has one.
    pub fn value(&self, file: SourceFile, name: &str) -> Option<&Value> {
        self.values.get(&(file, name.to_owned()))
    }

    /// Forgets the value of a top-level name of `file`.
    pub fn forget(&mut self, file: SourceFile, name: &str) {
        self.values.remove(&(file, name.to_owned()));
    }

    /// Forgets the constants of an imported file, so that the next entry evaluates them again
    /// (after the file changed).
    pub fn forget_file(&mut self, file: SourceFile) {
        self.values.retain(|(f, _), _| *f != file);
        self.initialized.remove(&file);
    }

    /// Runs `entry` of `main`, which must be free of errors like everything it imports, printing
    /// to `out`. Returns the value of the entry's last statement when the entry asks for it and
    /// that statement is an expression that has one.
    ///
    /// Imported files whose constants the session has not evaluated yet are evaluated first.
    pub fn run(
        &mut self,
        db: &dyn Db,
        main: SourceFile,
        entry: Entry,
        out: &mut dyn Write,
        limits: Limits,
    ) -> Result<Option<Value>, RuntimeError> {
        self.run_traced(db, main, entry, out, limits, TraceOptions::default()).result
    }

    /// [`Session::run`] traced with `trace` (see [`Machine::trace`]): the graph of what the entry
    /// recorded on the session's tape (the one a `backward` in it differentiated, or the
    /// recording at its end), also after a run-time error. Records of earlier entries are not in
    /// it; later entries are not traced.
    pub fn run_traced(
        &mut self,
        db: &dyn Db,
        main: SourceFile,
        entry: Entry,
        out: &mut dyn Write,
        limits: Limits,
        trace: TraceOptions,
    ) -> TracedEntry {
        let mut graph = None;
        let result = self.run_with(db, main, entry, out, limits, trace, &mut graph);
        TracedEntry { result, graph }
    }

    #[allow(clippy::too_many_arguments)]
    fn run_with(
        &mut self,
        db: &dyn Db,
        main: SourceFile,
        entry: Entry,
        out: &mut dyn Write,
        limits: Limits,
        trace: TraceOptions,
        graph: &mut Option<Graph>,
    ) -> Result<Option<Value>, RuntimeError> {
        let interrupt = self.interrupt.clone();
        let _clear = ClearOnReturn(&interrupt);
        let program = lower_entry(db, main, entry)?;
        let Some(layout) = &program.entry else {
            return Err(RuntimeError::internal("an entry lowered without its layout"));
        };
        let keys: Vec<(SourceFile, String)> = layout
            .globals
            .iter()
            .zip(&program.global_names)
            .map(|(&(file, _), name)| (file, name.clone()))
            .collect();
        let globals = layout
            .globals
            .iter()
            .zip(&keys)
            .map(
                |(&(_, in_entry), key)| if in_entry { None } else { self.values.get(key).cloned() },
            )
            .collect();
        let carried = self.carried.take().unwrap_or_else(Carried::fresh);
        let mut machine =
            Machine::continuing(&program, out, limits, carried, globals, self.interrupt.clone())?;
        machine.trace(trace);
        let mut result = Ok(Value::Int(0));
        for &unit in &program.imports {
            let Some(code) = program.units.get(unit as usize) else { continue };
            let file = code.def.file(db);
            if self.initialized.contains(&file) {
                continue;
            }
            result = machine.run_unit(unit);
            if result.is_err() {
                break;
            }
            self.initialized.insert(file);
        }
        if result.is_ok() {
            result = machine.run_unit(program.main);
        }
        *graph = machine.take_graph();
        let (carried, globals) = machine.into_session_state();
        self.carried = Some(carried);
        let failed = result.is_err();
        for ((&(_, in_entry), key), value) in layout.globals.iter().zip(keys).zip(globals) {
            if let Some(value) = value
                && !(failed && in_entry)
            {
                self.values.insert(key, value);
            }
        }
        let value = result?;
        Ok(layout.returns_value.then_some(value))
    }
}

/// What [`Session::run_traced`] gives: the entry's result and the graph its trace asked for.
#[derive(Debug)]
pub struct TracedEntry {
    pub result: Result<Option<Value>, RuntimeError>,
    pub graph: Option<Graph>,
}

/// Clears the interrupt flag when dropped: when [`Session::run`] returns, however it returns.
struct ClearOnReturn<'a>(&'a AtomicBool);

impl Drop for ClearOnReturn<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Relaxed);
    }
}
