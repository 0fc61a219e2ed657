//! Sessions: a program run a piece at a time, as a REPL runs it. Each test plays the host: it
//! keeps the session's source (earlier definitions, then the new entry), checks it, and runs the
//! entry against the state earlier entries left.

use std::sync::atomic::Ordering;
use std::time::Duration;

use exec::error::{RuntimeError, RuntimeErrorKind};
use exec::graph::{Graph, GraphOptions, InputSource, TraceOptions};
use exec::interp::Limits;
use exec::lower::Entry;
use exec::session::Session;
use hir::{Database, Severity, SourceFile};
use syntax::TextSize;

/// A host: one database with one session file.
struct Host {
    db: Database,
    session: Session,
    file: Option<SourceFile>,
}

impl Host {
    fn new() -> Host {
        Host { db: Database::default(), session: Session::new(), file: None }
    }

    /// Runs `entry` after `definitions` (which stand for what earlier entries declared), and
    /// returns what it printed and the value it returned (printed), or its error.
    fn run(
        &mut self,
        definitions: &str,
        entry: &str,
    ) -> (String, Result<Option<String>, RuntimeError>) {
        self.run_with(definitions, entry, Limits::default())
    }

    fn run_with(
        &mut self,
        definitions: &str,
        entry: &str,
        limits: Limits,
    ) -> (String, Result<Option<String>, RuntimeError>) {
        let text = format!("{definitions}{entry}");
        let file = self.db.set_file("/session/repl.nb", text);
        self.file = Some(file);
        let errors: Vec<String> = hir::file_diagnostics(&self.db, file)
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| d.message.clone())
            .collect();
        assert!(errors.is_empty(), "check errors: {errors:?}");
        let entry = Entry { from: TextSize::of(definitions), returns_value: true };
        let mut out = Vec::new();
        let result = self.session.run(&self.db, file, entry, &mut out, limits);
        let value = result.map(|value| value.map(|v| v.to_string()));
        (String::from_utf8_lossy(&out).into_owned(), value)
    }

    fn value(&self, name: &str) -> Option<String> {
        let file = self.file?;
        self.session.value(file, name).map(|v| v.to_string())
    }
}

#[test]
fn variables_and_constants_outlive_their_entry() {
    let mut host = Host::new();
    let (out, value) = host.run("", "float a = 2.0;\ncns int n = 3;\nprint(a);\n");
    assert_eq!((out.as_str(), value.ok()), ("2.0\n", Some(None)));
    // Only the new entry runs: the declarations of earlier entries are not run again.
    let (out, value) = host.run("float a;\ncns int n = 3;\n", "a * n;\n");
    assert_eq!((out.as_str(), value.ok()), ("", Some(Some("6.0".to_owned()))));
    let (_, value) = host.run("float a;\ncns int n = 3;\n", "a = a + 1;\n");
    assert_eq!(value.ok(), Some(Some("3.0".to_owned())));
    assert_eq!(host.value("a").as_deref(), Some("3.0"));
    assert_eq!(host.value("n").as_deref(), Some("3"));
}

#[test]
fn the_tape_and_gradients_outlive_their_entry() {
    let mut host = Host::new();
    let (_, value) = host.run("", "var Tensor w[2] = [1, 2];\n");
    assert!(value.is_ok(), "{value:?}");
    let (_, value) = host.run("var Tensor w[2];\n", "float loss = sum(w * w * w);\n");
    assert!(value.is_ok(), "{value:?}");
    let (_, value) = host.run("var Tensor w[2];\nfloat loss;\n", "backward(loss);\n");
    assert!(value.is_ok(), "{value:?}");
    let (_, value) = host.run("var Tensor w[2];\nfloat loss;\n", "grad(w);\n");
    assert_eq!(value.ok(), Some(Some("[3.0, 12.0]".to_owned())));
    // A step of gradient descent, then a new recording from the updated leaf.
    let definitions = "var Tensor w[2];\nfloat loss;\n";
    let (_, value) =
        host.run(definitions, "w -= 0.5 * grad(w);\nbackward(sum(w * w));\ngrad(w);\n");
    assert_eq!(value.ok(), Some(Some("[-1.0, -8.0]".to_owned())));
}

/// A graph as lines: each node's operation, whether its place is known, its value and gradient,
/// and its inputs (`#node` or a constant's value).
fn graph_lines(graph: &Graph) -> Vec<String> {
    graph
        .nodes
        .iter()
        .map(|node| {
            let inputs: Vec<String> = node
                .inputs
                .iter()
                .map(|input| match &input.source {
                    InputSource::Node(from) => format!("#{from}"),
                    InputSource::Constant { value, .. } => value.to_string(),
                })
                .collect();
            let place = if node.stack.is_empty() { "earlier" } else { "entry" };
            let show = |s: &Option<exec::autodiff::Summary>| s.as_ref().map(|s| s.to_string());
            format!(
                "{} ({place}) = {:?}, grad {:?} <- {}",
                node.op,
                show(&node.value),
                show(&node.gradient),
                inputs.join(" ")
            )
        })
        .collect()
}

#[test]
fn a_traced_entry_gives_the_graph_it_recorded_with_earlier_leaves() {
    let mut host = Host::new();
    let (_, value) = host.run("", "var Tensor w[2] = [1, 2];\n");
    assert!(value.is_ok(), "{value:?}");
    let text = "var Tensor w[2];\nfloat loss = sum(w * w * 3.0);\nbackward(loss);\n";
    let file = host.db.set_file("/session/repl.nb", text);
    let entry = Entry { from: TextSize::of("var Tensor w[2];\n"), returns_value: false };
    let trace = TraceOptions { graph: Some(GraphOptions::default()), check_nan: false };
    let mut out = Vec::new();
    let traced = host.session.run_traced(&host.db, file, entry, &mut out, Limits::default(), trace);
    assert!(traced.result.is_ok(), "{:?}", traced.result);
    let graph = traced.graph.expect("a graph");
    assert_eq!(graph.backward, Some(1));
    // `w`'s leaf was recorded by the first entry: it is a node of its own, with no place.
    assert_eq!(
        graph_lines(&graph),
        [
            "var (earlier) = Some(\"[1.0, 2.0]\"), grad Some(\"[6.0, 12.0]\") <- ",
            "* (entry) = Some(\"[1.0, 4.0]\"), grad Some(\"[3.0, 3.0]\") <- #0",
            "* (entry) = Some(\"[3.0, 12.0]\"), grad Some(\"[1.0, 1.0]\") <- #1 3.0",
            "sum (entry) = Some(\"15.0\"), grad Some(\"1.0\") <- #2",
        ]
    );
    // The gradients are the session's, and later entries are not traced.
    let (_, value) = host.run("var Tensor w[2];\n", "grad(w);\n");
    assert_eq!(value.ok(), Some(Some("[6.0, 12.0]".to_owned())));
    let entry = Entry { from: TextSize::of("var Tensor w[2];\n"), returns_value: true };
    let file = host.db.set_file("/session/repl.nb", "var Tensor w[2];\nsum(w * w);\n");
    let traced = host.session.run_traced(
        &host.db,
        file,
        entry,
        &mut out,
        Limits::default(),
        TraceOptions::default(),
    );
    assert!(traced.graph.is_none());
    assert_eq!(traced.result.ok().flatten().map(|v| v.to_string()), Some("5.0".to_owned()));
}

#[test]
fn random_numbers_continue_across_entries() {
    let mut host = Host::new();
    let (first, _) = host.run("", "print(rand([1]));\n");
    let (second, _) = host.run("", "print(rand([1]));\n");
    let mut whole = Host::new();
    let (both, _) = whole.run("", "print(rand([1]));\nprint(rand([1]));\n");
    assert_eq!(format!("{first}{second}"), both);
}

#[test]
fn an_error_keeps_what_the_entry_changed_and_drops_what_it_declared() {
    let mut host = Host::new();
    let (_, value) = host.run("", "int n = 0;\nTensor t[2] = [1, 1];\n");
    assert!(value.is_ok(), "{value:?}");
    let definitions = "int n;\nTensor t[2];\n";
    let entry =
        "loop (int i = 0; i < 10; i++) { n += 1; t *= 2; }\nint z = 5;\nint q = z / (n - 10);\n";
    let (_, value) = host.run(definitions, entry);
    let error = value.err().map(|e| e.message);
    assert_eq!(error.as_deref(), Some("integer division by zero: 5 / 0"));
    assert_eq!(host.value("n").as_deref(), Some("10"));
    assert_eq!(host.value("t").as_deref(), Some("[1024.0, 1024.0]"));
    assert_eq!(host.value("z"), None);
}

#[test]
fn an_interrupt_stops_a_loop_and_keeps_its_progress() {
    let mut host = Host::new();
    let (_, value) = host.run("", "int n = 0;\n");
    assert!(value.is_ok(), "{value:?}");
    let flag = host.session.interrupt_flag();
    let interrupter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        flag.store(true, Ordering::Relaxed);
    });
    // The step budget is a safety net, far above what the interrupt needs.
    let limits = Limits { max_steps: 20_000_000_000, ..Limits::default() };
    let (_, value) = host.run_with("int n;\n", "loop (;;) { n += 1; }\n", limits);
    let _ = interrupter.join();
    let error = value.err();
    assert_eq!(error.as_ref().map(|e| e.kind), Some(RuntimeErrorKind::Interrupted));
    assert!(error.and_then(|e| e.span).is_some());
    let n: i64 = host.value("n").and_then(|n| n.parse().ok()).unwrap_or(0);
    assert!(n > 0, "{n}");
    // The next entry runs normally: the flag is cleared when a run returns.
    let (_, value) = host.run("int n;\n", "n > 0;\n");
    assert_eq!(value.ok(), Some(Some("true".to_owned())));
}

#[test]
fn an_interrupt_before_the_run_stops_it_at_once() {
    let mut host = Host::new();
    // Set while the host checks the entry, before the run starts.
    host.session.interrupt_flag().store(true, Ordering::Relaxed);
    let (_, value) = host.run("", "int n = 0;\nloop (;;) { n += 1; }\n");
    assert_eq!(value.err().map(|e| e.kind), Some(RuntimeErrorKind::Interrupted));
    let (_, value) = host.run("", "1 + 1;\n");
    assert_eq!(value.ok(), Some(Some("2".to_owned())));
}

#[test]
fn an_entry_that_ends_in_a_statement_returns_no_value() {
    let mut host = Host::new();
    let (_, value) = host.run("", "float x = 1.0;\n");
    assert_eq!(value.ok(), Some(None));
    let (out, value) = host.run("float x;\n", "print(x);\n");
    assert_eq!((out.as_str(), value.ok()), ("1.0\n", Some(None)));
}
