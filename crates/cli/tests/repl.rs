//! `nabla repl` driven as a person drives it: through a pseudo-terminal, typing lines, Tab, Ctrl-C
//! and the arrow keys, and reading what the terminal shows.

use std::{path::Path, process::Command, time::Duration};

use expectrl::{ControlCode, Eof, Expect, Regex, session::OsSession};
use tempfile::TempDir;

/// How long one expected output may take (a debug build, two cores shared with other work).
const TIMEOUT: Duration = Duration::from_secs(60);

/// A fresh directory for one test: the data directory and any files it writes. It is removed when
/// the guard is dropped: bind it before the REPL that works in it, so that it outlives the REPL.
fn scratch(name: &str) -> TempDir {
    TempDir::with_prefix(format!("nabla-repl-{name}-")).unwrap_or_else(|err| panic!("{err}"))
}

/// A REPL in a pseudo-terminal, without colours unless `colour`, keeping its history in `dir`,
/// once it shows its first prompt.
fn start_in(dir: &Path, args: &[&str], colour: bool) -> OsSession {
    let mut session = spawn_in(dir, args, colour);
    next_prompt(&mut session);
    session
}

/// [`start_in`], without waiting for the prompt.
fn spawn_in(dir: &Path, args: &[&str], colour: bool) -> OsSession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nabla"));
    command.arg("repl").args(args).current_dir(dir);
    command.env("NABLA_DATA_DIR", dir.join("data")).env("TERM", "xterm-256color");
    if colour {
        command.env_remove("NO_COLOR");
    } else {
        command.env("NO_COLOR", "1");
    }
    let mut session = OsSession::spawn(command).unwrap_or_else(|err| panic!("spawn: {err}"));
    session.set_expect_timeout(Some(TIMEOUT));
    session
}

/// A REPL started in a fresh directory, returned after the directory's guard: bound as
/// `let (_dir, mut repl) = start(..)`, the guard is dropped after the REPL.
fn start(name: &str) -> (TempDir, OsSession) {
    let dir = scratch(name);
    let session = start_in(dir.path(), &[], false);
    (dir, session)
}

/// Waits for `text` in the output, failing with what came instead.
fn expect(session: &mut OsSession, text: &str) {
    if let Err(err) = session.expect(text) {
        panic!("expected {text:?}: {err}");
    }
}

/// Types a line and presses Enter.
fn line(session: &mut OsSession, text: &str) {
    session.send_line(text).unwrap_or_else(|err| panic!("send: {err}"));
}

/// Types an entry, then waits for `output` (unless empty) and the next prompt, which starts a
/// line (the editor redraws the current line after its own prompt).
fn entry(session: &mut OsSession, text: &str, output: &str) -> String {
    line(session, text);
    let mut shown = String::new();
    if !output.is_empty() {
        expect(session, output);
        shown.push_str(output);
    }
    shown.push_str(&next_prompt(session));
    shown
}

/// Waits for a new prompt: one that starts a line (after terminal control sequences), as opposed
/// to the editor redrawing the line being edited after its prompt. Returns what came before it.
fn next_prompt(session: &mut OsSession) -> String {
    match session.expect(Regex("\n(\x1b\\[[0-9;?]*[A-Za-z]|\r)*nabla> ")) {
        Ok(found) => String::from_utf8_lossy(found.before()).into_owned(),
        Err(err) => panic!("expected a new prompt: {err}"),
    }
}

fn quit(mut session: OsSession) {
    line(&mut session, ":quit");
    let _ = session.expect(Eof);
}

#[test]
fn definitions_persist_and_expressions_print_with_their_type() {
    let (_dir, mut repl) = start("persist");
    entry(&mut repl, "Tensor a[2][3] = [[1, 2, 3], [4, 5, 6]];", "");
    entry(&mut repl, "float s = 0.5;", "");
    entry(&mut repl, "a * s", "Tensor[2][3] = [[0.5, 1.0, 1.5], [2.0, 2.5, 3.0]]");
    entry(&mut repl, "sum(a)", "float = 21.0");
    // Redefinition replaces, with a note.
    entry(&mut repl, "float s = 2", "note: `s` is redefined");
    entry(&mut repl, "a[1][2] * s", "float = 12.0");
    // So does a destructuring declaration of the same names.
    entry(&mut repl, "function (float, int) pair(float x) { return (x, 3); }", "");
    entry(&mut repl, "(float s, int k) = pair(4.0);", "note: `s` is redefined");
    entry(&mut repl, "s * k", "float = 12.0");
    quit(repl);
}

#[test]
fn input_continues_while_a_bracket_is_open() {
    let (_dir, mut repl) = start("multiline");
    line(&mut repl, "function float cube(float x) {");
    line(&mut repl, "    float y = x * x;");
    line(&mut repl, "    return y * x;");
    entry(&mut repl, "}", "");
    line(&mut repl, "cube(");
    entry(&mut repl, "    2.0)", "float = 8.0");
    quit(repl);
}

#[test]
fn tab_completes_from_the_language_server_engine() {
    let (_dir, mut repl) = start("complete");
    entry(&mut repl, "float learning_rate = 0.25;", "");
    // `lear` + Tab completes the variable; `transp` + Tab completes the built-in and its `(`.
    repl.send("transp\t").unwrap_or_else(|err| panic!("{err}"));
    expect(&mut repl, "transpose(");
    // Ctrl-U clears the line; `pri` is the start of two built-ins: Tab completes what they share,
    // and Tab again lists them.
    repl.send("\x15pri\t").unwrap_or_else(|err| panic!("{err}"));
    expect(&mut repl, "print");
    repl.send("\t").unwrap_or_else(|err| panic!("{err}"));
    expect(&mut repl, "print_options");
    repl.send("(lear\t").unwrap_or_else(|err| panic!("{err}"));
    expect(&mut repl, "learning_rate");
    entry(&mut repl, " * 4)", "\n1.0");
    quit(repl);
}

#[test]
fn type_shows_the_type_without_running() {
    let (_dir, mut repl) = start("type");
    entry(&mut repl, "var Tensor w[3][2] = ones([3, 2]);", "");
    entry(&mut repl, ":type w", "var Tensor[3][2]");
    entry(&mut repl, ":type transpose(w) @ w", "Tensor[2][2]");
    // Nothing runs: the division by zero is not reached.
    entry(&mut repl, ":type 1 / 0", "\nint");
    entry(&mut repl, ":type w @ w", "error[E0202]");
    quit(repl);
}

#[test]
fn load_and_reload_take_a_file_s_definitions_and_run_its_top_level() {
    let dir = scratch("load");
    let model = dir.path().join("model.nb");
    let write = |text: &str| std::fs::write(&model, text).unwrap_or_else(|err| panic!("{err}"));
    write(
        "function float scale(float x) { return 2 * x; }\nfloat base = scale(10.0);\nprint(base);\n",
    );
    let mut repl = start_in(dir.path(), &[], false);
    entry(&mut repl, ":load model.nb", "20.0");
    entry(&mut repl, "scale(base)", "float = 40.0");
    write(
        "function float scale(float x) { return 3 * x; }\nfloat base = scale(10.0);\nprint(base);\n",
    );
    entry(&mut repl, ":reload", "30.0");
    entry(&mut repl, "scale(base)", "float = 90.0");
    quit(repl);
    // A file on the command line is loaded first.
    let mut repl = start_in(dir.path(), &["model.nb"], false);
    entry(&mut repl, "base + 1", "float = 31.0");
    quit(repl);
}

#[test]
fn an_error_in_an_entry_points_into_it_and_the_session_goes_on() {
    let (_dir, mut repl) = start("errors");
    entry(&mut repl, "int n = 4;", "");
    // Typed ahead while the entry before runs: nothing is lost.
    line(&mut repl, "Tensor t[2] = [1, 2];");
    entry(&mut repl, "t @ n", "error[E0203]");
    // A pasted entry of two lines: the error points at its second line.
    entry(&mut repl, "\x1b[200~n * 2\nt @ n\x1b[201~", "--> <repl>:2:1");
    // A run-time error too: the source line and the carets.
    entry(&mut repl, "int z = n / (n - 4);", "--> <repl>:1:9");
    // An entry cut short: the error is at its end, and the `;` an entry may leave out is not
    // asked for.
    let shown = entry(&mut repl, "n +", "error[E0001]: expected an expression");
    assert!(shown.contains("--> <repl>:1:4") && !shown.contains("E0002"), "{shown}");
    // Nor before a comment that ends the entry.
    entry(&mut repl, "n * 3 // twelve", "int = 12");
    entry(&mut repl, "n * 2", "int = 8");
    quit(repl);
}

#[test]
fn ctrl_c_interrupts_a_long_loop_and_keeps_the_session() {
    let (_dir, mut repl) = start("interrupt");
    entry(&mut repl, "int n = 0;", "");
    line(&mut repl, "loop (;;) { n += 1; }");
    std::thread::sleep(Duration::from_millis(500));
    repl.send(ControlCode::EndOfText).unwrap_or_else(|err| panic!("{err}"));
    expect(&mut repl, "the entry was interrupted");
    expect(&mut repl, "");
    // The loop's progress is kept.
    entry(&mut repl, "n > 0", "bool = true");
    quit(repl);
}

#[test]
fn backward_and_grad_work_across_entries() {
    let (_dir, mut repl) = start("grad");
    // A variable no entry has read yet, and gradients not read yet, are no reason to warn.
    let shown = entry(&mut repl, "var Tensor w[2] = [1, 2];", "");
    assert!(!shown.contains("warning"), "{shown}");
    entry(&mut repl, "float loss = sum(w * w * w);", "");
    let shown = entry(&mut repl, "backward(loss);", "");
    assert!(!shown.contains("warning"), "{shown}");
    entry(&mut repl, "grad(w)", "Tensor[2] = [3.0, 12.0]");
    entry(&mut repl, "w -= 0.5 * grad(w);", "");
    entry(&mut repl, "backward(sum(w * w));", "");
    entry(&mut repl, "grad(w)", "Tensor[2] = [-1.0, -8.0]");
    quit(repl);
}

#[test]
fn history_is_kept_across_sessions() {
    let dir = scratch("history");
    let mut repl = start_in(dir.path(), &[], false);
    entry(&mut repl, "1.25 * 4", "float = 5.0");
    quit(repl);
    let kept =
        std::fs::read_to_string(dir.path().join("data").join("repl_history")).unwrap_or_default();
    assert!(kept.contains("1.25 * 4"), "{kept:?}");
    let mut repl = start_in(dir.path(), &[], false);
    // The up arrow brings earlier entries back: `:quit`, then the expression.
    repl.send("\x1b[A\x1b[A").unwrap_or_else(|err| panic!("{err}"));
    expect(&mut repl, "1.25 * 4");
    entry(&mut repl, "", "float = 5.0");
    quit(repl);
}

#[test]
fn input_is_coloured_where_the_terminal_allows() {
    let dir = scratch("colour");
    let mut repl = start_in(dir.path(), &[], true);
    // The number is yellow, the keyword magenta, as the language server classifies them.
    line(&mut repl, "float x = 2.5;");
    if let Err(err) = repl.expect(Regex("\x1b\\[33m2\\.5\x1b\\[0m")) {
        panic!("no coloured number: {err}");
    }
    expect(&mut repl, "");
    quit(repl);
}

#[test]
fn a_paste_sent_before_the_prompt_is_one_entry() {
    // What VS Code's "Send Selection to REPL" does when it starts the REPL: it types the selection
    // as one bracketed paste at once, before the REPL has shown its first prompt.
    let dir = scratch("early");
    let mut repl = spawn_in(dir.path(), &[], false);
    line(&mut repl, "\x1b[200~function float sq(float x) {\n    return x * x;\n}\x1b[201~");
    line(&mut repl, "sq(3.0)");
    expect(&mut repl, "float = 9.0");
    next_prompt(&mut repl);
    quit(repl);
}

#[test]
fn graph_writes_the_picture_of_what_an_entry_recorded() {
    let (dir, mut repl) = start("graph");
    entry(&mut repl, "var Tensor w[3] = [1.0, 2.0, 3.0];", "");
    entry(&mut repl, "function float loss(Tensor x[3]) { return sum(x * x); }", "");
    // By default an SVG in the session's directory; the entry runs as any other does.
    let svg = dir.path().join("repl.graph.svg");
    let report = "wrote the graph (3 nodes, the recording differentiated by backward number 1) to";
    entry(&mut repl, ":graph backward(loss(w))", &format!("{report} {}", svg.display()));
    let text = std::fs::read_to_string(&svg).unwrap_or_else(|err| panic!("{err}"));
    assert!(text.starts_with("<svg") && text.contains("sum(x * x)"), "{text}");
    entry(&mut repl, "grad(w)", "Tensor[3] = [2.0, 4.0, 6.0]");
    // DOT to a file of one's choosing; `w`'s leaf comes from an earlier entry, the operations are
    // placed in the entries they were typed in.
    entry(
        &mut repl,
        ":graph --dot -o w.dot float y = loss(w) * 2.0;",
        "wrote the graph (4 nodes, the recording at the end of the run, not differentiated) to w.dot",
    );
    entry(&mut repl, "y", "float = 28.0");
    let dot =
        std::fs::read_to_string(dir.path().join("w.dot")).unwrap_or_else(|err| panic!("{err}"));
    expect_test::expect![[r##"
        digraph nabla {
          label="the recording at the end of the run, not differentiated";
          rankdir=TB;
          node [shape=box, style="rounded,filled", fontname="DejaVu Sans Mono", fontsize=11];
          edge [color="#57606a", fontname="DejaVu Sans Mono", fontsize=10];
          n0 [class="leaf", fillcolor="#dafbe1", color="#1a7f37", penwidth=1, label=<<b>var</b><br/>from an earlier entry<br/>Tensor[3]<br/><font color="#1a7f37">= [1.0, 2.0, 3.0]</font>>];
          n1 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>*</b><br/>&lt;repl&gt;:1 in loss: x * x<br/>Tensor[3]<br/><font color="#1a7f37">= [1.0, 4.0, 9.0]</font>>];
          n2 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>sum</b><br/>&lt;repl&gt;:1 in loss: sum(x * x)<br/>float<br/><font color="#1a7f37">= 14.0</font>>];
          n3 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>*</b><br/>&lt;repl&gt;:1: loss(w) * 2.0<br/>float<br/><font color="#1a7f37">= 28.0</font>>];
          n0 -> n1 [label="×2"];
          n1 -> n2;
          n2 -> n3;
        }
    "##]]
    .assert_eq(&dot);
    // An entry that records nothing has no graph; `:graph` alone says what it takes.
    entry(&mut repl, ":graph 1 + 2", "error: the entry recorded no operation on a `var`");
    entry(&mut repl, ":graph", "error: `:graph` runs an entry and draws what it recorded");
    quit(repl);
}
