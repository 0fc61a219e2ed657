//! `nabla repl [FILE]`: an interactive loop over the checker and the interpreter.
//!
//! Each entry (a declaration, a statement, a function, an expression, or several of them) is
//! checked in the context of the session's definitions, the way a file is checked: the REPL
//! assembles one source file from the definitions earlier entries left and the entry (see
//! [`source`]), asks `hir` for its diagnostics, and runs only the entry's statements with
//! [`exec::session::Session`], whose variables, tape and random generator persist. A new
//! definition replaces the one of the same name; definitions that no longer check against it are
//! removed, each with a note. An expression written without `;` at the end of an entry is
//! printed with its type.
//!
//! Nothing an entry does ends the session: check errors leave it as it was, a run-time error or
//! Ctrl-C stops the entry (keeping what it changed in existing variables), and a panic, which
//! would be a bug, is caught and reported.

mod editor;
mod source;

use std::{
    io::{IsTerminal, Write},
    panic::AssertUnwindSafe,
    path::{Path, PathBuf},
    process::ExitCode,
    sync::{Arc, atomic::AtomicBool},
    time::{Duration, Instant},
};

use exec::{
    error::RuntimeErrorKind,
    graph::{Graph, GraphOptions, TraceOptions},
    interp::Limits,
    run::on_interpreter_stack,
    session::Session,
};
use hir::{Code, Database, Diagnostic, HirSpan, LocalKind, Qualifier, Severity, SourceFile, Ty};
use rustyline::{
    Config, Editor, config::CompletionType, error::ReadlineError, history::FileHistory,
};
use syntax::{AstNode, TextSize, ast};

use self::{
    editor::EditorHelper,
    source::{Assembled, Definition, Group, Key, Origin},
};
use crate::{graph, render, run as run_cmd, source as files};

/// The options of `nabla repl`.
#[derive(Debug, Clone)]
pub struct Options {
    /// A file to load first.
    pub file: Option<PathBuf>,
    /// The largest tensor, in bytes (`None`: the machine's memory).
    pub max_memory: Option<usize>,
    /// The deepest nesting of function calls.
    pub max_recursion: usize,
}

const PROMPT: &str = "nabla> ";
const CONTINUATION: &str = "  ...> ";
/// The name entries typed at the prompt have in messages.
const PROMPT_ORIGIN: &str = "<repl>";

const HELP: &str = "\
Enter declarations, statements, functions and expressions; an expression without `;` at the
end is printed with its type. Input continues on the next line while a bracket is open.

  :type EXPR    the type of an expression, without running it
  :load FILE    load a file's definitions and run its top level
  :reload       load the loaded files again
  :reset        forget every definition and value
  :time ENTRY   run an entry and say how long checking and running took
  :graph ENTRY  run an entry and write the picture of the graph it recorded (repl.graph.svg;
                --dot for Graphviz's DOT, -o FILE for another file)
  :help         this text
  :quit         leave (or Ctrl-D)

Ctrl-C stops a running entry and keeps the session. History is kept in the user's data
directory (or $NABLA_DATA_DIR).
";

pub fn run(options: &Options) -> ExitCode {
    run_cmd::prepare_process(options.max_memory);
    match on_interpreter_stack(|| run_on_this_thread(options)) {
        Some(status) => ExitCode::from(status),
        None => {
            eprintln!("error: the REPL's thread could not be started or stopped abnormally");
            ExitCode::from(1)
        }
    }
}

fn run_on_this_thread(options: &Options) -> u8 {
    let dir = match &options.file {
        Some(file) => file.parent().map(Path::to_path_buf).unwrap_or_default(),
        None => PathBuf::new(),
    };
    let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let limits = Limits { max_call_depth: options.max_recursion, ..Limits::default() };
    let mut repl = Repl::new(&dir, limits);
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let colour = interactive
        && std::env::var_os("NO_COLOR").is_none()
        && std::env::var("TERM").map_or(true, |term| term != "dumb");
    let config = Config::builder()
        .auto_add_history(false)
        .history_ignore_dups(true)
        .and_then(|builder| builder.max_history_size(10_000))
        .map(|builder| builder.completion_type(CompletionType::List).build());
    let mut editor: Editor<EditorHelper, FileHistory> = match config.and_then(Editor::with_config) {
        Ok(editor) => editor,
        Err(error) => {
            eprintln!("error: cannot start the line editor: {error}");
            return 1;
        }
    };
    editor.set_helper(Some(EditorHelper::new(&dir, colour)));
    let history = editor::history_path();
    if let Some(path) = &history {
        if let Some(parent) = path.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        // A missing history file is the first session's normal state.
        let _ = editor.load_history(path);
    }
    if let Some(file) = &options.file {
        if let Err(message) = files::read(file) {
            eprintln!("error: {message}");
            return 2;
        }
        repl.guarded(|repl| repl.load(file));
    }
    if interactive {
        println!(
            "Nabla {} REPL. :help lists the commands, :quit or Ctrl-D leaves.",
            env!("CARGO_PKG_VERSION")
        );
    }
    let mut pending = String::new();
    loop {
        if let Some(helper) = editor.helper_mut() {
            helper.set_definitions(&repl.definitions_text());
        }
        let prompt = if pending.is_empty() { PROMPT } else { CONTINUATION };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            // Ctrl-C at the prompt abandons the input, as in a shell.
            Err(ReadlineError::Interrupted) => {
                pending.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(error) => {
                eprintln!("error: cannot read the input: {error}");
                return 1;
            }
        };
        pending.push_str(&line);
        pending.push('\n');
        // The editor continues an entry while a bracket is open; input that is not a terminal
        // arrives a line at a time and is continued here.
        if !pending.trim_start().starts_with(':') && editor::open_brackets(&pending) > 0 {
            continue;
        }
        let input = std::mem::take(&mut pending);
        let input = input.trim_end();
        if input.trim().is_empty() {
            continue;
        }
        if editor.add_history_entry(input).unwrap_or(false)
            && let Some(path) = &history
        {
            // Written after every entry, so that history survives a session that is killed.
            let _ = editor.append_history(path);
        }
        if repl.guarded(|repl| repl.handle(input)) == Flow::Quit {
            break;
        }
    }
    0
}

/// Whether the loop goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// An entry before checking: its text (with the `;` a final expression lacks), where it came from,
/// what it defines, and whether its value is printed.
struct Entry {
    text: String,
    origin: Origin,
    /// The keys of the definitions it makes (see [`Key`]), which replace earlier ones.
    keys: Vec<Key>,
    /// Functions, tests and imports: key, group and text range in `text`.
    items: Vec<(Key, Group, syntax::TextRange)>,
    /// Whether the last statement is an expression written without `;`.
    shows_value: bool,
    /// The last variable of a declaration written without `;` at the end of the entry, whose
    /// value is printed.
    shows_variable: Option<String>,
}

/// An entry that checked: the session file it was checked in, and what its definitions did to
/// the session's.
struct Checked {
    assembled: Assembled,
    file: SourceFile,
    /// The session's definitions that remain beside the entry's.
    kept: Vec<Definition>,
    /// Definitions the entry replaces.
    replaced: Vec<Definition>,
    /// Definitions that no longer check beside the entry's, with why.
    removed: Vec<(Definition, String)>,
}

/// Where `:graph` writes its picture: `repl.graph.svg` (or `.dot`) in the session's directory
/// unless a file is named; the format the file name asks for unless `--dot` is given.
struct GraphRequest {
    path: Option<PathBuf>,
    format: Option<graph::Format>,
}

/// How long an entry took.
#[derive(Default)]
struct Timing {
    check: Duration,
    run: Duration,
}

struct Repl {
    db: Database,
    session: Session,
    definitions: Vec<Definition>,
    /// Files loaded with `:load` or on the command line, for `:reload`.
    loaded: Vec<PathBuf>,
    /// The session file: beside it is where relative paths in entries are taken from.
    path: PathBuf,
    limits: Limits,
    colour: bool,
    /// The SIGINT handler that interrupts the session's runs.
    signal: Option<signal_hook::SigId>,
}

impl Repl {
    fn new(dir: &Path, limits: Limits) -> Repl {
        let mut repl = Repl {
            db: Database::default(),
            session: Session::new(),
            definitions: Vec::new(),
            loaded: Vec::new(),
            path: hir::normalize(&dir.join(PROMPT_ORIGIN)),
            limits,
            colour: render::stderr_colour(),
            signal: None,
        };
        repl.listen_for_interrupts();
        repl
    }

    /// Makes Ctrl-C (SIGINT) interrupt the session's runs instead of ending the process. While
    /// the editor reads a line the terminal is in raw mode and Ctrl-C reaches the editor as a key.
    fn listen_for_interrupts(&mut self) {
        if let Some(id) = self.signal.take() {
            signal_hook::low_level::unregister(id);
        }
        let flag: Arc<AtomicBool> = self.session.interrupt_flag();
        self.signal = signal_hook::flag::register(signal_hook::consts::SIGINT, flag).ok();
    }

    /// Runs `f`, turning a panic (a bug) into a message: the session goes on with its
    /// definitions, and with a fresh tape if the run that panicked had it.
    fn guarded(&mut self, f: impl FnOnce(&mut Repl) -> Flow) -> Flow {
        // A Ctrl-C from before this entry was meant for something that has ended; one from now on
        // stops the entry, even while it is still being checked.
        self.session.interrupt_flag().store(false, std::sync::atomic::Ordering::Relaxed);
        match std::panic::catch_unwind(AssertUnwindSafe(|| f(self))) {
            Ok(flow) => flow,
            Err(_) => {
                eprintln!(
                    "error: internal error: the REPL stopped this entry on a bug (see the message above); the session goes on"
                );
                Flow::Continue
            }
        }
    }

    /// The definitions as the assembled file starts, for the editor.
    fn definitions_text(&self) -> String {
        let origin = Origin { name: PROMPT_ORIGIN.to_owned(), line: 1 };
        Assembled::new(&self.definitions, "", &origin).text
    }

    fn handle(&mut self, input: &str) -> Flow {
        let trimmed = input.trim();
        if let Some(command) = trimmed.strip_prefix(':') {
            return self.command(command);
        }
        let origin = Origin { name: PROMPT_ORIGIN.to_owned(), line: 1 };
        self.enter(input, origin);
        Flow::Continue
    }

    fn command(&mut self, text: &str) -> Flow {
        let (name, argument) = match text.split_once(char::is_whitespace) {
            Some((name, argument)) => (name, argument.trim()),
            None => (text, ""),
        };
        match name {
            "q" | "quit" | "exit" => return Flow::Quit,
            "h" | "help" | "?" => print!("{HELP}"),
            "t" | "type" => self.type_of(argument),
            "l" | "load" => {
                if argument.is_empty() {
                    eprintln!("error: `:load` needs a file: `:load model.nb`");
                } else {
                    self.load(Path::new(argument));
                }
            }
            "r" | "reload" => self.reload(),
            "reset" => self.reset(),
            "time" => {
                let start = Instant::now();
                let origin = Origin { name: PROMPT_ORIGIN.to_owned(), line: 1 };
                let timing = self.enter(argument, origin);
                let total = start.elapsed();
                println!(
                    "time: {} (check {}, run {})",
                    seconds(total),
                    seconds(timing.check),
                    seconds(timing.run)
                );
            }
            "graph" => self.graph(argument),
            _ => eprintln!("error: unknown command `:{name}`; `:help` lists the commands"),
        }
        let _ = std::io::stdout().flush();
        Flow::Continue
    }

    /// Writes the picture of the graph an entry recorded, with its operations placed in the
    /// entries and files they came from, and says where.
    fn write_graph(&self, request: &GraphRequest, recorded: Option<&Graph>, assembled: &Assembled) {
        let Some(recorded) = recorded.filter(|recorded| !recorded.nodes.is_empty()) else {
            eprintln!(
                "error: the entry recorded no operation on a `var`, so there is no graph to draw; `:graph backward(sum(w * w))` draws one for `var Tensor w[3]`"
            );
            return;
        };
        let format = request.format.or(request.path.as_deref().map(graph::Format::of_path));
        let path = match &request.path {
            Some(path) => path.clone(),
            None => {
                let dir = self.path.parent().unwrap_or(Path::new("."));
                graph::default_path(&dir.join("repl"), format)
            }
        };
        // As `nabla graph` labels them: by file name (`<repl>` for an entry typed at the prompt).
        let locate = |file: SourceFile, line: u32| {
            let (name, line) = self.locate(assembled, file, line);
            match Path::new(&name).file_name() {
                Some(base) => (base.to_string_lossy().into_owned(), line),
                None => (name, line),
            }
        };
        let view = graph::View::default();
        match graph::write_located(&self.db, recorded, &view, &path, format, &locate) {
            Ok(report) => println!("{report}"),
            Err(message) => eprintln!("error: {message}"),
        }
    }

    /// `:type EXPR`: checks the expression in the session's context and prints its type.
    fn type_of(&mut self, text: &str) {
        let origin = Origin { name: PROMPT_ORIGIN.to_owned(), line: 1 };
        let entry = self.analyse(text, origin, None);
        let is_expression = entry.shows_value && entry.keys.is_empty() && {
            let parse = syntax::parse(text);
            parse.tree().items().count() == 1
        };
        if !is_expression {
            eprintln!("error: `:type` takes one expression, such as `:type a @ b`");
            return;
        }
        let Some(checked) = self.check(&entry) else { return };
        let db = &self.db;
        let top = hir::top_level_def(db, checked.file);
        let body = hir::body(db, top);
        let last = body.root.last().map(|&stmt| &body.stmts[stmt]);
        let Some(&hir::Stmt::Expr(expr)) = last else {
            eprintln!("error: `:type` takes one expression, such as `:type a @ b`");
            return;
        };
        let infer = hir::infer(db, top);
        let qualifier = match infer.resolution(expr) {
            Some(hir::Resolution::Local(local)) => body.locals[local].qualifier,
            Some(hir::Resolution::Global { def, local }) => {
                hir::body(db, def).locals[local].qualifier
            }
            _ => None,
        };
        let prefix = match qualifier {
            Some(Qualifier::Var) => "var ",
            Some(Qualifier::Cns) => "cns ",
            None => "",
        };
        println!("{prefix}{}", infer.type_of_expr(expr));
    }

    /// `:load FILE`: its definitions join the session's and its top level runs.
    fn load(&mut self, path: &Path) -> Flow {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if !self.loaded.contains(&absolute) {
            self.loaded.push(absolute.clone());
        }
        let text = match files::read(path) {
            Ok(text) => text,
            Err(message) => {
                eprintln!("error: {message}");
                return Flow::Continue;
            }
        };
        let (text, first_line) = unwrap_outer_block(&text);
        let origin = Origin { name: path.display().to_string(), line: first_line };
        self.enter_from_file(&text, origin, absolute.parent());
        Flow::Continue
    }

    /// `:reload`: reads every file again (imported ones too) and loads the loaded ones again.
    fn reload(&mut self) {
        if self.loaded.is_empty() {
            eprintln!("error: no file is loaded; `:load FILE` loads one");
            return;
        }
        for file in self.db.files() {
            let path = file.path(&self.db).clone();
            if path == self.path {
                continue;
            }
            if let Ok(text) = files::read(&path)
                && **file.text(&self.db) != *text
            {
                self.db.set_file(&path, text);
                self.session.forget_file(file);
            }
        }
        for path in self.loaded.clone() {
            self.load(&path);
        }
    }

    /// `:reset`: a fresh session, without definitions, values, tape or loaded files.
    fn reset(&mut self) {
        self.definitions.clear();
        self.loaded.clear();
        self.session = Session::new();
        self.listen_for_interrupts();
        println!("the session is empty");
    }

    /// `:graph [--dot] [-o FILE] ENTRY`: runs the entry with its recording traced and writes the
    /// picture of the graph, as `nabla graph` does for a file.
    fn graph(&mut self, text: &str) {
        let mut request = GraphRequest { path: None, format: None };
        let mut rest = text.trim_start();
        loop {
            let (word, after) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            match word {
                "--dot" => request.format = Some(graph::Format::Dot),
                "-o" | "--out" => {
                    let after = after.trim_start();
                    let (file, after) =
                        after.split_once(char::is_whitespace).unwrap_or((after, ""));
                    if file.is_empty() {
                        eprintln!("error: `-o` needs a file: `:graph -o loss.svg backward(l)`");
                        return;
                    }
                    request.path = Some(PathBuf::from(file));
                    rest = after.trim_start();
                    continue;
                }
                _ => break,
            }
            rest = after.trim_start();
        }
        if rest.is_empty() {
            eprintln!(
                "error: `:graph` runs an entry and draws what it recorded: `:graph backward(sum(w * w))`"
            );
            return;
        }
        let origin = Origin { name: PROMPT_ORIGIN.to_owned(), line: 1 };
        self.enter_traced(rest, origin, None, Some(&request));
    }

    fn enter(&mut self, text: &str, origin: Origin) -> Timing {
        self.enter_from_file(text, origin, None)
    }

    /// Checks and runs an entry, and makes its definitions the session's.
    fn enter_from_file(&mut self, text: &str, origin: Origin, dir: Option<&Path>) -> Timing {
        self.enter_traced(text, origin, dir, None)
    }

    /// [`Repl::enter_from_file`], with the picture of what the entry recorded written as `graph`
    /// asks.
    fn enter_traced(
        &mut self,
        text: &str,
        origin: Origin,
        dir: Option<&Path>,
        graph: Option<&GraphRequest>,
    ) -> Timing {
        let mut timing = Timing::default();
        let start = Instant::now();
        let entry = self.analyse(text, origin, dir);
        let checked = self.check(&entry);
        timing.check = start.elapsed();
        let Some(checked) = checked else { return timing };
        let start = Instant::now();
        let from = TextSize::try_from(checked.assembled.entry_start).unwrap_or_default();
        let run_entry = exec::lower::Entry { from, returns_value: entry.shows_value };
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        let trace =
            TraceOptions { graph: graph.map(|_| GraphOptions::default()), check_nan: false };
        let traced = self.session.run_traced(
            &self.db,
            checked.file,
            run_entry,
            &mut out,
            self.limits,
            trace,
        );
        let result = traced.result;
        let _ = out.flush();
        drop(out);
        timing.run = start.elapsed();
        if let Some(request) = graph {
            self.write_graph(request, traced.graph.as_ref(), &checked.assembled);
        }
        let mut definitions = checked.kept.clone();
        for (key, group, range) in &entry.items {
            let item_text = &entry.text[usize::from(range.start())..usize::from(range.end())];
            let line = entry.text[..usize::from(range.start())].matches('\n').count() as u32;
            definitions.push(Definition::new(
                key.clone(),
                *group,
                item_text,
                entry.origin.down(line),
            ));
        }
        match result {
            Ok(value) => {
                definitions.extend(self.settled(&checked, &entry.origin));
                if let Some(value) = value {
                    let ty = self.entry_value_type(&checked);
                    println!("{} = {value}", shown_type(ty.as_ref(), &value));
                }
                if let Some(name) = &entry.shows_variable
                    && let Some(value) = self.session.value(checked.file, name)
                {
                    let ty = self.variable_type(&checked, name);
                    println!("{} = {value}", shown_type(ty.as_ref(), value));
                }
            }
            Err(error) => {
                // The entry's declarations did not all run: the ones it replaced stay.
                for old in &checked.replaced {
                    if old.group == Group::Declaration
                        && !definitions.iter().any(|d| d.key == old.key)
                    {
                        definitions.push(old.clone());
                    }
                }
                let assembled = &checked.assembled;
                let locate = |file: SourceFile, line: u32| self.locate(assembled, file, line);
                let text = run_cmd::render_error_located(&self.db, &error, self.colour, &locate);
                eprint!("{text}");
                if error.kind == RuntimeErrorKind::Interrupted {
                    eprintln!("the entry was interrupted; the session goes on");
                }
            }
        }
        for old in &checked.replaced {
            if definitions.iter().any(|d| d.key == old.key) {
                eprintln!("note: {} is redefined", old.key.describe());
            }
        }
        for (old, reason) in &checked.removed {
            eprintln!(
                "note: {} was removed: it no longer checks against this entry",
                old.key.describe()
            );
            eprint!("{reason}");
        }
        let gone: Vec<Key> = self
            .definitions
            .iter()
            .map(|d| d.key.clone())
            .filter(|key| !definitions.iter().any(|d| &d.key == key))
            .collect();
        for key in gone {
            if let Key::Name(name) = key {
                self.session.forget(checked.file, &name);
            }
        }
        self.definitions = definitions;
        timing
    }

    /// Splits an entry into what it defines, and adds the `;` a final expression lacks. `dir` is
    /// the directory of the file the entry comes from, if it does.
    fn analyse(&self, text: &str, origin: Origin, dir: Option<&Path>) -> Entry {
        let session_dir = self.path.parent().unwrap_or(Path::new("."));
        let mut text = match dir {
            Some(dir) if dir != session_dir => absolute_imports(text.trim_end(), dir),
            _ => text.trim_end().to_owned(),
        };
        let parse = syntax::parse(&text);
        let items: Vec<ast::Item> = parse.tree().items().collect();
        // Only an entry whose one syntax error is the final `;` gets it: the errors of one that
        // is cut short (`1 +`) point at the end of what was typed, not at an added `;`.
        let end = code_end(&text);
        let lacks_only_semicolon = parse
            .errors()
            .iter()
            .all(|error| usize::from(error.range.start()) == end && error.missing == Some(";"));
        let shows_value = lacks_only_semicolon
            && matches!(
                items.last(),
                Some(ast::Item::Stmt(ast::Stmt::ExprStmt(stmt)))
                    if stmt.expr().is_some() && stmt.semicolon_token().is_none()
            );
        let shows_variable = match items.last() {
            Some(ast::Item::Stmt(ast::Stmt::VarDecl(decl)))
                if lacks_only_semicolon && decl.semicolon_token().is_none() =>
            {
                decl.declarators().last().and_then(|d| d.name()).map(|n| n.text().to_string())
            }
            _ => None,
        };
        let mut keys = Vec::new();
        let mut defined = Vec::new();
        for item in &items {
            let range = item.syntax().text_range();
            let (key, group) = match item {
                ast::Item::FnDef(def) => match def.name() {
                    Some(name) => (Key::Name(name.text().to_string()), Group::Item),
                    None => continue,
                },
                ast::Item::TestDef(def) => match def.string_token() {
                    Some(token) => {
                        (Key::Test(token.text().trim_matches('"').to_owned()), Group::Item)
                    }
                    None => continue,
                },
                ast::Item::Import(import) => match import.string_token() {
                    Some(token) => {
                        let written = token.text().trim_matches('"');
                        (Key::Import(hir::import_target(&self.path, written)), Group::Import)
                    }
                    None => continue,
                },
                ast::Item::StructDef(def) => match def.name() {
                    Some(name) => (Key::Name(name.text().to_string()), Group::Item),
                    None => continue,
                },
                ast::Item::Stmt(ast::Stmt::VarDecl(decl)) => {
                    let names = decl.declarators().filter_map(|d| d.name());
                    keys.extend(names.map(|name| Key::Name(name.text().to_string())));
                    continue;
                }
                ast::Item::Stmt(ast::Stmt::TupleDecl(decl)) => {
                    let names = decl.tuple_bindings().filter_map(|b| b.name());
                    keys.extend(names.map(|name| Key::Name(name.text().to_string())));
                    continue;
                }
                ast::Item::Stmt(_) => continue,
            };
            keys.push(key.clone());
            defined.push((key, group, range));
        }
        // The `;` that ends the entry may be left out. It goes on a line of its own, so that
        // messages quote the entry's lines as they were typed.
        if shows_value || shows_variable.is_some() {
            text.push_str("\n;");
        }
        Entry { text, origin, keys, items: defined, shows_value, shows_variable }
    }

    /// Checks an entry beside the session's definitions (less those it replaces), removing the
    /// definitions it breaks. Prints its diagnostics; `None` when it has errors.
    fn check(&mut self, entry: &Entry) -> Option<Checked> {
        let (replaced, mut kept): (Vec<Definition>, Vec<Definition>) =
            self.definitions.iter().cloned().partition(|d| entry.keys.contains(&d.key));
        let mut removed = Vec::new();
        loop {
            let assembled = Assembled::new(&kept, &entry.text, &entry.origin);
            let file = self.db.set_file(&self.path, assembled.text.as_str());
            let _ = self.db.load_with_imports(&self.path, &mut |path: &Path| files::read(path));
            let end = code_end(&assembled.text);
            let mut in_entry: Vec<Diagnostic> = Vec::new();
            let mut broken: Vec<(usize, Diagnostic)> = Vec::new();
            for checked_file in reachable_files(&self.db, file) {
                for diagnostic in hir::file_diagnostics(&self.db, checked_file) {
                    if checked_file == file
                        && (self.read_later(file, diagnostic) || final_semicolon(end, diagnostic))
                    {
                        continue;
                    }
                    let start = usize::from(diagnostic.range.start());
                    let definition = match checked_file == file {
                        true => assembled.definition_at(start),
                        false => None,
                    };
                    match definition {
                        None => in_entry.push(diagnostic.clone()),
                        Some(index) if diagnostic.severity == Severity::Error => {
                            if !broken.iter().any(|(i, _)| *i == index) {
                                broken.push((index, diagnostic.clone()));
                            }
                        }
                        Some(_) => {}
                    }
                }
            }
            let errors = in_entry.iter().filter(|d| d.severity == Severity::Error).count();
            let locate = |f: SourceFile, line: u32| self.locate(&assembled, f, line);
            for diagnostic in &in_entry {
                eprint!("{}", render::human_located(&self.db, diagnostic, self.colour, &locate));
            }
            if errors > 0 {
                return None;
            }
            if broken.is_empty() {
                return Some(Checked { assembled, file, kept, replaced, removed });
            }
            broken.sort_by_key(|(index, _)| std::cmp::Reverse(*index));
            for (index, diagnostic) in broken {
                let reason = render::human_located(&self.db, &diagnostic, self.colour, &locate);
                removed.push((kept.remove(index), reason));
            }
        }
    }

    /// Whether a warning is about something a later entry may still read: a top-level variable
    /// that is never read (W0006) or a `backward` whose gradients are never read (W0008) in a
    /// file is the normal state of an entry at the prompt.
    fn read_later(&self, file: SourceFile, diagnostic: &Diagnostic) -> bool {
        let later = matches!(diagnostic.code, Code::UnusedVariable | Code::UnreadBackward);
        later
            && hir::def_at(&self.db, file, diagnostic.range.start())
                .is_some_and(|(def, _, _)| def.kind(&self.db) == hir::DefKind::TopLevel)
    }

    /// The settled declarations of the variables and constants the entry declared at its top
    /// level and gave a value (see [`source`]).
    fn settled(&self, checked: &Checked, origin: &Origin) -> Vec<Definition> {
        let db = &self.db;
        let file = checked.file;
        let top = hir::top_level_def(db, file);
        let body = hir::body(db, top);
        let infer = hir::infer(db, top);
        let entry_start = checked.assembled.entry_start;
        let mut settled = Vec::new();
        for (local, data) in body.locals.iter() {
            if data.scope_depth != 0 || data.kind == LocalKind::Param {
                continue;
            }
            let span = HirSpan { def: top, span: body.source_map.local(local) };
            let (_, range) = hir::file_range(db, span);
            if usize::from(range.start()) < entry_start {
                continue;
            }
            let Some(value) = self.session.value(file, &data.name) else { continue };
            let (qualifier, ty) = match data.kind {
                LocalKind::ShapeVar => (Some("cns"), Ty::Int),
                _ => {
                    let qualifier = match data.qualifier {
                        Some(Qualifier::Var) => Some("var"),
                        Some(Qualifier::Cns) => Some("cns"),
                        None => None,
                    };
                    (qualifier, infer.type_of_local(local).clone())
                }
            };
            let Some(text) = source::settled_declaration(&data.name, qualifier, &ty, value) else {
                continue;
            };
            let text_before = &checked.assembled.text[entry_start..usize::from(range.start())];
            let line = text_before.matches('\n').count() as u32;
            let key = Key::Name(data.name.to_string());
            settled.push(Definition::new(key, Group::Declaration, &text, origin.down(line)));
        }
        settled
    }

    /// The static type of the expression an entry ends with.
    fn entry_value_type(&self, checked: &Checked) -> Option<Ty> {
        let top = hir::top_level_def(&self.db, checked.file);
        let body = hir::body(&self.db, top);
        match body.root.last().map(|&stmt| &body.stmts[stmt]) {
            Some(&hir::Stmt::Expr(expr)) => {
                Some(hir::infer(&self.db, top).type_of_expr(expr).clone())
            }
            _ => None,
        }
    }

    /// The static type of the top-level variable `name` the entry declared.
    fn variable_type(&self, checked: &Checked, name: &str) -> Option<Ty> {
        let top = hir::top_level_def(&self.db, checked.file);
        let body = hir::body(&self.db, top);
        let (local, _) =
            body.locals.iter().rfind(|(_, data)| data.scope_depth == 0 && data.name == name)?;
        Some(hir::infer(&self.db, top).type_of_local(local).clone())
    }

    /// Where line `line` of `file` is shown to be: in the session file, the entry or file it came
    /// from.
    fn locate(&self, assembled: &Assembled, file: SourceFile, line: u32) -> (String, u32) {
        if file.path(&self.db) == &self.path {
            assembled.locate(line)
        } else {
            (file.path(&self.db).display().to_string(), line)
        }
    }
}

/// Whether `diagnostic` asks for the `;` at `end`, the end of the session file's code, which an
/// entry may leave out (an entry cut short, `1 +`, has its own error there).
fn final_semicolon(end: usize, diagnostic: &Diagnostic) -> bool {
    diagnostic.code == Code::MissingToken
        && diagnostic.range.is_empty()
        && usize::from(diagnostic.range.start()) == end
        && diagnostic.message.contains("`;`")
}

/// Where the code of `text` ends: the end of its last token that is not whitespace or a comment.
fn code_end(text: &str) -> usize {
    let mut at = 0;
    let mut end = 0;
    for token in syntax::lex(text).tokens {
        at += token.len as usize;
        if !token.kind.is_trivia() {
            end = at;
        }
    }
    end
}

/// The type an entry's value is shown with: a tensor's with the extents of the value itself.
fn shown_type(ty: Option<&Ty>, value: &exec::value::Value) -> String {
    match ty {
        Some(Ty::Tensor(_)) | None if value.is_tensor() => {
            let dims: String = value.shape().iter().map(|d| format!("[{d}]")).collect();
            format!("Tensor{}", if dims.is_empty() { "[]".to_owned() } else { dims })
        }
        Some(ty) => ty.to_string(),
        None => String::new(),
    }
}

/// A file that is one `{ ... }` block is its top level (as `nabla run` reads it): its inside, and
/// the line the inside starts on.
fn unwrap_outer_block(text: &str) -> (String, u32) {
    let parse = syntax::parse(text);
    let items: Vec<ast::Item> = parse.tree().items().collect();
    if let [ast::Item::Stmt(ast::Stmt::Block(block))] = items.as_slice()
        && let (Some(open), Some(close)) = (block.l_curly_token(), block.r_curly_token())
    {
        let start = usize::from(open.text_range().end());
        let end = usize::from(close.text_range().start());
        let line = text[..start].matches('\n').count() as u32 + 1;
        // The first line of the inside is the line of the brace; pad it so columns stay.
        let pad = " ".repeat(start - text[..start].rfind('\n').map_or(0, |i| i + 1));
        return (format!("{pad}{}", &text[start..end]), line);
    }
    (text.to_owned(), 1)
}

/// The files `main` imports, transitively, and itself.
fn reachable_files(db: &Database, main: SourceFile) -> Vec<SourceFile> {
    let mut files = vec![main];
    let mut next = 0;
    while let Some(&file) = files.get(next) {
        next += 1;
        let count = hir::item_tree(db, file).imports.len() as u32;
        for index in 0..count {
            if let Some(target) = hir::resolve_import(db, file, index)
                && !files.contains(&target)
            {
                files.push(target);
            }
        }
    }
    files
}

/// `text` with the relative paths of its imports made absolute from `dir`, so that they name the
/// same files from the session's directory.
fn absolute_imports(text: &str, dir: &Path) -> String {
    let parse = syntax::parse(text);
    let mut out = text.to_owned();
    let imports: Vec<ast::Import> = parse
        .tree()
        .items()
        .filter_map(|item| match item {
            ast::Item::Import(import) => Some(import),
            _ => None,
        })
        .collect();
    for import in imports.iter().rev() {
        let Some(token) = import.string_token() else { continue };
        let written = token.text().trim_matches('"');
        if Path::new(written).is_absolute() {
            continue;
        }
        let target = hir::normalize(&dir.join(written));
        let range = token.text_range();
        let quoted = format!("{:?}", target.display().to_string());
        out.replace_range(usize::from(range.start())..usize::from(range.end()), &quoted);
    }
    out
}

/// A duration for people: milliseconds below a second.
fn seconds(duration: Duration) -> String {
    let s = duration.as_secs_f64();
    if s < 1.0 { format!("{:.1} ms", s * 1e3) } else { format!("{s:.3} s") }
}
