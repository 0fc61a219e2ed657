//! The line editor's side of the REPL, on `rustyline`: completion and colouring from the same
//! engine as the language server (`ide`, on a database of its own that holds the session's
//! definitions and the input being typed), input that continues while a bracket is open, and the
//! history file.

use std::{
    borrow::Cow,
    cell::RefCell,
    path::{Path, PathBuf},
    sync::Arc,
};

use ide::{AnalysisHost, CompletionKind, FilePosition, HlMods, HlTag, TextSize};
use rustyline::{
    Context, Helper,
    completion::{Completer, FilenameCompleter, Pair},
    highlight::{CmdKind, Highlighter},
    hint::Hinter,
    validate::{ValidationContext, ValidationResult, Validator},
};
use syntax::SyntaxKind;

use crate::source;

/// The environment variable that moves the REPL's data directory (its history), for tests and
/// for users who keep it elsewhere.
pub const DATA_DIR_VAR: &str = "NABLA_DATA_DIR";

/// The history file: `repl_history` in `$NABLA_DATA_DIR`, or in the user's data directory
/// (`~/.local/share/nabla` on Linux, `~/Library/Application Support/nabla` on macOS,
/// `%APPDATA%\nabla` on Windows). `None` when there is no such directory.
pub fn history_path() -> Option<PathBuf> {
    let dir = match std::env::var_os(DATA_DIR_VAR) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => dirs::data_dir()?.join("nabla"),
    };
    Some(dir.join("repl_history"))
}

/// How deep the brackets are open at the end of `text`: what makes Enter continue the entry on a
/// new line. Brackets inside strings and comments do not count; an unterminated block comment
/// counts as one open bracket.
pub fn open_brackets(text: &str) -> usize {
    let lexed = syntax::lex(text);
    let mut depth: usize = 0;
    for (index, token) in lexed.tokens.iter().enumerate() {
        match token.kind {
            SyntaxKind::L_PAREN | SyntaxKind::L_BRACK | SyntaxKind::L_CURLY => depth += 1,
            SyntaxKind::R_PAREN | SyntaxKind::R_BRACK | SyntaxKind::R_CURLY => {
                depth = depth.saturating_sub(1)
            }
            SyntaxKind::COMMENT if lexed.errors.iter().any(|error| error.token == index) => {
                depth += 1
            }
            _ => {}
        }
    }
    depth
}

/// The REPL's commands, for completion (the same list `:help` describes).
pub const COMMANDS: &[&str] =
    &[":help", ":type", ":load", ":reload", ":reset", ":time", ":graph", ":quit"];

/// What `rustyline` asks of the REPL while a line is edited.
pub struct EditorHelper {
    /// The editing database: the session's definitions followed by the input.
    host: RefCell<AnalysisHost>,
    /// Where the input is put: beside the session file, so that imports resolve alike.
    path: PathBuf,
    /// The session's definitions, as the assembled file has them before the entry.
    prefix: Arc<str>,
    colour: bool,
    files: FilenameCompleter,
}

impl EditorHelper {
    pub fn new(dir: &Path, colour: bool) -> EditorHelper {
        EditorHelper {
            host: RefCell::new(AnalysisHost::new()),
            path: dir.join("<input>"),
            prefix: Arc::from(""),
            colour,
            files: FilenameCompleter::new(),
        }
    }

    /// Takes the session's definitions after an entry changed them.
    pub fn set_definitions(&mut self, prefix: &str) {
        self.prefix = Arc::from(prefix);
    }

    /// Puts `prefix + input` in the editing database and returns its file.
    fn file_with(&self, input: &str) -> ide::FileId {
        let mut host = self.host.borrow_mut();
        let text: Arc<str> = Arc::from(format!("{}{input}", self.prefix));
        let file = host.set_file_text(&self.path, text);
        host.load_imports(file, &mut |path: &Path| source::read(path));
        file
    }

    fn complete_code(&self, line: &str, pos: usize) -> (usize, Vec<Pair>) {
        let start = line[..pos]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        let typed = &line[start..pos];
        let file = self.file_with(line);
        let offset = TextSize::of(&*self.prefix) + TextSize::of(&line[..pos]);
        let analysis = self.host.borrow().analysis();
        let items = analysis.completions(FilePosition { file, offset }).unwrap_or_default();
        let mut pairs: Vec<Pair> = items
            .into_iter()
            .filter(|item| item.label.starts_with(typed))
            .map(|item| {
                let call = matches!(item.kind, CompletionKind::Function | CompletionKind::Builtin);
                let replacement =
                    if call { format!("{}(", item.label) } else { item.label.clone() };
                Pair { display: item.label, replacement }
            })
            .collect();
        pairs.sort_by(|a, b| a.display.cmp(&b.display));
        pairs.dedup_by(|a, b| a.display == b.display);
        (start, pairs)
    }

    fn complete_command(&self, line: &str, pos: usize, ctx: &Context<'_>) -> (usize, Vec<Pair>) {
        let before = &line[..pos];
        match before.split_once(char::is_whitespace) {
            None => {
                let pairs = COMMANDS
                    .iter()
                    .filter(|c| c.starts_with(before))
                    .map(|c| Pair { display: (*c).to_owned(), replacement: format!("{c} ") })
                    .collect();
                (0, pairs)
            }
            Some((":load" | ":l", _)) => self.files.complete(line, pos, ctx).unwrap_or_default(),
            Some((":type" | ":t" | ":time" | ":graph", rest)) => {
                let start = pos - rest.len();
                let (inner, pairs) = self.complete_code(rest, rest.len());
                (start + inner, pairs)
            }
            Some(_) => (pos, Vec::new()),
        }
    }
}

impl Completer for EditorHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        if line.trim_start().starts_with(':') {
            return Ok(self.complete_command(line, pos, ctx));
        }
        Ok(self.complete_code(line, pos))
    }
}

impl Hinter for EditorHelper {
    type Hint = String;
}

impl Validator for EditorHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        let input = ctx.input();
        if input.trim_start().starts_with(':') || open_brackets(input) == 0 {
            Ok(ValidationResult::Valid(None))
        } else {
            Ok(ValidationResult::Incomplete)
        }
    }
}

impl Highlighter for EditorHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        if !self.colour || line.trim_start().starts_with(':') {
            return Cow::Borrowed(line);
        }
        let file = self.file_with(line);
        let analysis = self.host.borrow().analysis();
        let Ok(tokens) = analysis.semantic_tokens(file) else { return Cow::Borrowed(line) };
        let start = TextSize::of(&*self.prefix);
        let mut out = String::with_capacity(line.len() * 2);
        let mut at = 0usize;
        for token in tokens.iter().filter(|t| t.range.start() >= start) {
            let from = usize::from(token.range.start() - start);
            let to = usize::from(token.range.end() - start);
            let (Some(plain), Some(text)) = (line.get(at..from), line.get(from..to)) else {
                continue;
            };
            out.push_str(plain);
            match style(token.tag, token.mods) {
                Some(code) => out.push_str(&format!("\x1b[{code}m{text}\x1b[0m")),
                None => out.push_str(text),
            }
            at = to;
        }
        out.push_str(line.get(at..).unwrap_or_default());
        Cow::Owned(out)
    }

    fn highlight_char(&self, _line: &str, _pos: usize, kind: CmdKind) -> bool {
        self.colour && kind != CmdKind::MoveCursor
    }
}

impl Helper for EditorHelper {}

/// The colour of a token, as an SGR code; `None` leaves it plain.
fn style(tag: HlTag, mods: HlMods) -> Option<&'static str> {
    Some(match tag {
        HlTag::Keyword => "35",
        HlTag::Type => "36",
        HlTag::Number => "33",
        HlTag::String => "32",
        HlTag::Comment => "90",
        HlTag::Function | HlTag::BuiltinFunction => "34",
        HlTag::ShapeVariable | HlTag::IndexLabel => "36",
        HlTag::Variable if mods.contains(HlMods::DIFFERENTIABLE) => "4",
        HlTag::Parameter | HlTag::Field | HlTag::Variable | HlTag::Operator => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_keep_an_entry_open() {
        assert_eq!(open_brackets("function float f(float x) {"), 1);
        assert_eq!(open_brackets("print([[1, 2],"), 2);
        assert_eq!(open_brackets("print(\"(\");"), 0);
        assert_eq!(open_brackets("x = 1; // {"), 0);
        assert_eq!(open_brackets("/* a comment"), 1);
        assert_eq!(open_brackets("}"), 0);
    }
}
