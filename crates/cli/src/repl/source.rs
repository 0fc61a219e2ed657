//! The session's source: the definitions that earlier entries left, kept as text, and the file the
//! REPL assembles from them and a new entry to check and run it.
//!
//! A definition is a function, a test, an import, or a top-level variable or constant. Functions,
//! tests and imports keep the text they were entered with. A variable keeps only its declaration,
//! *settled*: its qualifier, its name and the type of the value it holds (`var Tensor w[3][1];`),
//! because its initializer has run and later entries see the value, not the expression. Constants
//! keep an initializer that gives them their value (`cns int n = 3;`), so that they still serve as
//! sizes. Settled declarations name nothing else, so replacing any definition never breaks one.
//!
//! The assembled file lists imports, then declarations, then functions and tests, then the entry,
//! each definition on lines of its own; [`Assembled`] maps every line back to the entry or file
//! it came from, for messages.

use std::path::PathBuf;

use exec::value::{Primal, Value};
use hir::Ty;

/// What a new definition replaces: the definition of the same name (functions, variables and
/// constants share one namespace), the test of the same name, or the import of the same file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Name(String),
    Test(String),
    Import(PathBuf),
}

impl Key {
    /// How messages name the definition.
    pub fn describe(&self) -> String {
        match self {
            Key::Name(name) => format!("`{name}`"),
            Key::Test(name) => format!("test {name:?}"),
            Key::Import(path) => format!("the import of {}", path.display()),
        }
    }
}

/// Where a piece of text came from: the prompt (`<repl>`) or a file, and the 1-based line of the
/// piece's first line there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub name: String,
    pub line: u32,
}

impl Origin {
    /// The origin of the text `lines_before` lines further down.
    pub fn down(&self, lines_before: u32) -> Origin {
        Origin { name: self.name.clone(), line: self.line + lines_before }
    }
}

/// Where a definition goes in the assembled file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    Import,
    Declaration,
    Item,
}

/// One definition of the session.
#[derive(Debug, Clone)]
pub struct Definition {
    pub key: Key,
    pub group: Group,
    /// The text, ending with a newline.
    pub text: String,
    pub origin: Origin,
}

impl Definition {
    pub fn new(key: Key, group: Group, text: &str, origin: Origin) -> Definition {
        let mut text = text.trim_end().to_owned();
        text.push('\n');
        Definition { key, group, text, origin }
    }
}

/// The session file for one entry: its text, where the entry starts, and where each line came
/// from.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub text: String,
    /// The byte where the entry starts.
    pub entry_start: usize,
    /// Per piece, in order: its first line (0-based) in `text`, and which definition it is
    /// (`None` for the entry).
    pieces: Vec<(u32, Option<usize>, Origin)>,
}

impl Assembled {
    /// Puts `definitions` (in group order, each group in the given order) and the entry together.
    pub fn new(definitions: &[Definition], entry: &str, entry_origin: &Origin) -> Assembled {
        let mut order: Vec<usize> = (0..definitions.len()).collect();
        order.sort_by_key(|&i| definitions[i].group);
        let mut text = String::new();
        let mut pieces = Vec::new();
        let mut line = 0u32;
        for i in order {
            let definition = &definitions[i];
            pieces.push((line, Some(i), definition.origin.clone()));
            text.push_str(&definition.text);
            line += count_lines(&definition.text);
        }
        let entry_start = text.len();
        pieces.push((line, None, entry_origin.clone()));
        // Nothing follows the entry: an error at its end (`1 +`) is shown on its last line.
        text.push_str(entry);
        Assembled { text, entry_start, pieces }
    }

    /// The piece that holds 0-based line `line`.
    fn piece(&self, line: u32) -> Option<&(u32, Option<usize>, Origin)> {
        self.pieces.iter().rev().find(|(start, _, _)| *start <= line)
    }

    /// Which definition the byte `offset` belongs to; `None` in the entry.
    pub fn definition_at(&self, offset: usize) -> Option<usize> {
        if offset >= self.entry_start {
            return None;
        }
        let line = count_lines(&self.text[..offset.min(self.text.len())]);
        self.piece(line).and_then(|(_, definition, _)| *definition)
    }

    /// Where the 1-based line `line` came from: its origin's name and line.
    pub fn locate(&self, line: u32) -> (String, u32) {
        let zero_based = line.saturating_sub(1);
        match self.piece(zero_based) {
            Some((start, _, origin)) => (origin.name.clone(), origin.line + (zero_based - start)),
            None => ("<repl>".to_owned(), line),
        }
    }
}

fn count_lines(text: &str) -> u32 {
    text.bytes().filter(|&b| b == b'\n').count() as u32
}

/// The settled declaration of a top-level variable or constant that holds `value` (see the module
/// documentation), or `None` when `ty` is not a type a declaration can have.
pub fn settled_declaration(
    name: &str,
    qualifier: Option<&str>,
    ty: &Ty,
    value: &Value,
) -> Option<String> {
    let constant = qualifier == Some("cns");
    let prefix = match qualifier {
        Some(q) => format!("{q} "),
        None => String::new(),
    };
    let (base, dims) = match ty {
        Ty::Int => ("int", String::new()),
        Ty::Float => ("float", String::new()),
        Ty::Bool => ("bool", String::new()),
        Ty::Char => ("char", String::new()),
        Ty::Tensor(_) => {
            let dims: String = value.shape().iter().map(|d| format!("[{d}]")).collect();
            ("Tensor", dims)
        }
        _ => return None,
    };
    if !constant {
        return Some(format!("{prefix}{base} {name}{dims};"));
    }
    let init = match (ty, value.primal()) {
        (Ty::Tensor(_), _) => {
            let extents: Vec<String> = value.shape().iter().map(usize::to_string).collect();
            format!("zeros([{}])", extents.join(", "))
        }
        (_, Primal::Int(x)) => int_literal(x),
        (_, Primal::Float(x)) => float_literal(x),
        (_, Primal::Bool(x)) => x.to_string(),
        (_, Primal::Char(x)) => char_literal(x),
        (_, Primal::Tensor(_)) => return None,
    };
    Some(format!("{prefix}{base} {name}{dims} = {init};"))
}

/// An expression for an `int`: a literal, or for the one value a literal cannot write (a literal
/// is a positive number under unary minus), an expression.
fn int_literal(x: i64) -> String {
    if x == i64::MIN { format!("{} - 1", x + 1) } else { x.to_string() }
}

/// An expression for a `float` that reads back to the same value: the shortest decimal, or a
/// quotient for the infinities and NaN, which have no literal.
fn float_literal(x: f64) -> String {
    if x.is_nan() {
        "0.0 / 0.0".to_owned()
    } else if x.is_infinite() {
        if x > 0.0 { "1.0 / 0.0".to_owned() } else { "-1.0 / 0.0".to_owned() }
    } else {
        tensor::format_float(x)
    }
}

/// An expression for a `char`: a literal when the character is printable, else a cast.
fn char_literal(c: u8) -> String {
    match c {
        b'\'' | b'\\' => format!("'\\{}'", c as char),
        0x20..=0x7e => format!("'{}'", c as char),
        _ => format!("(char){c}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_point_back_to_their_pieces() {
        let definitions = vec![
            Definition::new(
                Key::Name("f".into()),
                Group::Item,
                "function int f() {\n    return 1;\n}",
                Origin { name: "lib.nb".into(), line: 7 },
            ),
            Definition::new(
                Key::Name("a".into()),
                Group::Declaration,
                "float a;",
                Origin { name: "<repl>".into(), line: 1 },
            ),
        ];
        let entry = Origin { name: "<repl>".into(), line: 1 };
        let assembled = Assembled::new(&definitions, "print(a);\nf()", &entry);
        assert_eq!(
            assembled.text,
            "float a;\nfunction int f() {\n    return 1;\n}\nprint(a);\nf()"
        );
        assert_eq!(assembled.locate(1), ("<repl>".into(), 1));
        assert_eq!(assembled.locate(3), ("lib.nb".into(), 8));
        assert_eq!(assembled.locate(6), ("<repl>".into(), 2));
        assert_eq!(assembled.definition_at(0), Some(1));
        assert_eq!(assembled.definition_at(12), Some(0));
        assert_eq!(assembled.definition_at(assembled.entry_start), None);
    }

    #[test]
    fn settled_declarations_name_the_value_they_hold() {
        let tensor =
            Value::tensor(tensor::Tensor::zeros(&[2, 3]).unwrap_or_else(|e| panic!("{e}")));
        let ty = Ty::tensor(vec![hir::Dim::Unknown, hir::Dim::Known(3)]);
        let settle = |name: &str, qualifier: Option<&str>, ty: &Ty, value: &Value| {
            settled_declaration(name, qualifier, ty, value).unwrap_or_default()
        };
        assert_eq!(settle("w", Some("var"), &ty, &tensor), "var Tensor w[2][3];");
        assert_eq!(settle("X", Some("cns"), &ty, &tensor), "cns Tensor X[2][3] = zeros([2, 3]);");
        assert_eq!(settle("n", Some("cns"), &Ty::Int, &Value::Int(-4)), "cns int n = -4;");
        assert_eq!(
            settle("m", Some("cns"), &Ty::Int, &Value::Int(i64::MIN)),
            "cns int m = -9223372036854775807 - 1;"
        );
        assert_eq!(settle("x", Some("cns"), &Ty::Float, &Value::Float(0.1)), "cns float x = 0.1;");
        assert_eq!(
            settle("y", Some("cns"), &Ty::Float, &Value::Float(f64::NEG_INFINITY)),
            "cns float y = -1.0 / 0.0;"
        );
        assert_eq!(settle("c", Some("cns"), &Ty::Char, &Value::Char(b'\'')), "cns char c = '\\'';");
        assert_eq!(settle("d", Some("cns"), &Ty::Char, &Value::Char(10)), "cns char d = (char)10;");
        assert_eq!(settle("b", None, &Ty::Bool, &Value::Bool(true)), "bool b;");
    }
}
