//! The salsa database: source files as inputs, the map from paths to files kept outside salsa,
//! and the first queries (`parse`, `item_tree`, `def_source`).
//!
//! Everything a later query reads about a function's text goes through [`def_source`], whose
//! value holds the function's green tree and nothing about where it sits in the file. An edit
//! re-runs `parse`, `item_tree` and every `def_source`, but those return equal values for
//! untouched definitions, so salsa backdates them and nothing downstream of them re-runs.

use std::{
    path::{Component, Path, PathBuf},
    sync::{Arc, Mutex},
};

use rustc_hash::FxHashMap;
use salsa::Setter;
use syntax::{GreenNode, Indel, Parse, TextSize};

use crate::item_tree::ItemTree;

/// One source file: its path (as given when it was added), its text and the parse of the text.
/// The parse is an input rather than a query so that an edit can reparse only what it touched
/// ([`Database::edit_file`]): the parse before the edit and the edit make the parse after it,
/// which is always what a full parse of the new text gives.
#[salsa::input(debug)]
pub struct SourceFile {
    #[returns(ref)]
    pub path: PathBuf,
    #[returns(ref)]
    pub text: Arc<str>,
    #[returns(ref)]
    pub parse: Parse,
}

/// Every file the database knows, by normalized path: how an `import` finds its file.
#[salsa::input]
pub struct FileSet {
    #[returns(ref)]
    pub files: Arc<FxHashMap<PathBuf, SourceFile>>,
}

/// What kind of body a definition has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DefKind {
    /// A `function`.
    Function,
    /// A `test "name" { ... }` block.
    Test,
    /// The file's top-level statements, taken together as one body (what `nabla run` executes).
    TopLevel,
    /// A `struct` declaration: a record type. Its body's parameters are the fields, and its
    /// shape variables the record's size parameters; it has no statements.
    Struct,
}

/// A definition with a body: the `index`-th function or test of `file`, or its top level.
#[salsa::interned(unsafe(no_lifetime), revisions = usize::MAX, debug)]
pub struct DefId {
    #[returns(copy)]
    pub file: SourceFile,
    #[returns(copy)]
    pub kind: DefKind,
    #[returns(copy)]
    pub index: u32,
}

/// The database trait every query takes.
#[salsa::db]
pub trait Db: salsa::Database {
    /// The set of all files, for resolving imports (`None` only while the database is built).
    fn file_set(&self) -> Option<FileSet>;
}

/// The concrete database: salsa's storage, the file map and an optional event log.
#[salsa::db]
#[derive(Clone)]
pub struct Database {
    storage: salsa::Storage<Self>,
    file_set: Option<FileSet>,
    files: FxHashMap<PathBuf, SourceFile>,
    executed: Option<Arc<Mutex<Vec<salsa::DatabaseKeyIndex>>>>,
}

#[salsa::db]
impl salsa::Database for Database {}

#[salsa::db]
impl Db for Database {
    fn file_set(&self) -> Option<FileSet> {
        self.file_set
    }
}

impl Default for Database {
    fn default() -> Self {
        Database::with_storage(salsa::Storage::default(), None)
    }
}

impl Database {
    fn with_storage(
        storage: salsa::Storage<Database>,
        executed: Option<Arc<Mutex<Vec<salsa::DatabaseKeyIndex>>>>,
    ) -> Database {
        let mut db = Database { storage, file_set: None, files: Default::default(), executed };
        db.file_set = Some(FileSet::new(&db, Arc::new(FxHashMap::default())));
        db
    }

    /// A database that records every query execution, for incrementality tests: read the record
    /// with [`Database::take_executed`].
    pub fn with_event_log() -> Database {
        let executed: Arc<Mutex<Vec<salsa::DatabaseKeyIndex>>> = Arc::default();
        let sink = executed.clone();
        let storage = salsa::Storage::new(Some(Box::new(move |event: salsa::Event| {
            if let salsa::EventKind::WillExecute { database_key } = event.kind
                && let Ok(mut log) = sink.lock()
            {
                log.push(database_key);
            }
        })));
        Database::with_storage(storage, Some(executed))
    }

    /// The queries executed since the last call, as `query(argument)` strings with definitions
    /// named by their source name, in execution order.
    pub fn take_executed(&self) -> Vec<String> {
        let Some(executed) = &self.executed else { return Vec::new() };
        let keys = match executed.lock() {
            Ok(mut log) => std::mem::take(&mut *log),
            Err(_) => return Vec::new(),
        };
        let names = self.id_names();
        keys.into_iter()
            .map(|key| {
                let query = salsa::Database::ingredient_debug_name(self, key.ingredient_index());
                let arg = names
                    .get(&key.key_index())
                    .cloned()
                    .unwrap_or_else(|| format!("{:?}", key.key_index()));
                format!("{query}({arg})")
            })
            .collect()
    }

    /// Readable names for the salsa ids of files and definitions.
    fn id_names(&self) -> FxHashMap<salsa::Id, String> {
        use salsa::plumbing::AsId;
        let mut names = FxHashMap::default();
        for file in self.files.values() {
            let file_name = file.path(self).file_name().map(|n| n.to_string_lossy().into_owned());
            let file_name = file_name.unwrap_or_default();
            names.insert(file.as_id(), file_name.clone());
            for def in crate::all_defs(self, *file) {
                names.insert(def.as_id(), crate::def_name(self, def));
            }
        }
        names
    }

    /// Adds a file, or replaces the text of the file with that path, and returns it. A new text
    /// for a file is reparsed as the edit between the old text and it.
    pub fn set_file(&mut self, path: impl Into<PathBuf>, text: impl Into<Arc<str>>) -> SourceFile {
        let path = normalize(&path.into());
        let text = text.into();
        if let Some(&file) = self.files.get(&path) {
            if **file.text(self) != *text {
                let edit = Indel::between(file.text(self), &text);
                let parse = file.parse(self).reparse(&edit);
                file.set_text(self).to(text);
                file.set_parse(self).to(parse);
            }
            return file;
        }
        let parse = syntax::parse(&text);
        let file = SourceFile::new(self, path.clone(), text, parse);
        self.files.insert(path, file);
        if let Some(file_set) = self.file_set {
            let files = Arc::new(self.files.clone());
            file_set.set_files(self).to(files);
        }
        file
    }

    /// Applies `edit` to the text of `file`, reparsing only what it touched; `false` (and
    /// nothing changed) when its range is not within the text on character boundaries.
    pub fn edit_file(&mut self, file: SourceFile, edit: &Indel) -> bool {
        let Some(text) = edit.apply(file.text(self)) else { return false };
        let parse = file.parse(self).reparse(edit);
        file.set_text(self).to(Arc::from(text));
        file.set_parse(self).to(parse);
        true
    }

    /// The file added under `path`, if any.
    pub fn file(&self, path: &Path) -> Option<SourceFile> {
        self.files.get(&normalize(path)).copied()
    }

    /// Every file, sorted by path.
    pub fn files(&self) -> Vec<SourceFile> {
        let mut files: Vec<_> =
            self.files.iter().map(|(path, file)| (path.clone(), *file)).collect();
        files.sort_by(|a, b| a.0.cmp(&b.0));
        files.into_iter().map(|(_, file)| file).collect()
    }

    /// Adds the file at `path` from disk and, transitively, the files it imports. Files already
    /// added are not read again. Unreadable imports are left out; the `import` reports them.
    pub fn load_with_imports(
        &mut self,
        path: &Path,
        read: &mut dyn FnMut(&Path) -> Result<String, String>,
    ) -> Result<SourceFile, String> {
        let root = match self.file(path) {
            Some(file) => file,
            None => {
                let text = read(path)?;
                self.set_file(path, text)
            }
        };
        let mut stack = vec![root];
        let mut seen = rustc_hash::FxHashSet::default();
        while let Some(file) = stack.pop() {
            if !seen.insert(file) {
                continue;
            }
            let imports: Vec<PathBuf> = item_tree(self, file)
                .imports
                .iter()
                .filter_map(|import| import.path.as_deref())
                .map(|target| import_target(file.path(self), target))
                .collect();
            for target in imports {
                match self.file(&target) {
                    Some(next) => stack.push(next),
                    None => {
                        if let Ok(text) = read(&target) {
                            let next = self.set_file(&target, text);
                            stack.push(next);
                        }
                    }
                }
            }
        }
        Ok(root)
    }
}

/// `path` with `.` and `..` components resolved lexically, so that `a/./b.nb` and `a/c/../b.nb`
/// name the same file.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let last = out.components().next_back();
                match last {
                    Some(Component::Normal(_)) => {
                        out.pop();
                    }
                    _ => out.push(".."),
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The path an `import "target";` in `importer` names: relative to the importer's directory.
pub fn import_target(importer: &Path, target: &str) -> PathBuf {
    let dir = importer.parent().unwrap_or_else(|| Path::new(""));
    normalize(&dir.join(target))
}

/// The syntax tree of a file.
pub fn parse(db: &dyn Db, file: SourceFile) -> &Parse {
    file.parse(db)
}

/// The file's items: functions, tests, imports and top-level statements, with positions.
#[salsa::tracked(returns(ref))]
pub fn item_tree(db: &dyn Db, file: SourceFile) -> Arc<ItemTree> {
    Arc::new(ItemTree::lower(&parse(db, file).tree()))
}

/// The syntax of one definition, without its position: one green node per chunk. A function or
/// a test has one chunk (its whole item); the top level has one per statement. Ranges inside a
/// body are relative to the start of their chunk, see [`crate::RelSpan`].
#[derive(Debug, Clone, Eq)]
pub struct DefSource {
    pub chunks: Vec<GreenNode>,
}

impl PartialEq for DefSource {
    fn eq(&self, other: &DefSource) -> bool {
        self.chunks.len() == other.chunks.len()
            && self.chunks.iter().zip(&other.chunks).all(|(a, b)| green_eq(a, b))
    }
}

/// Equality of green trees that answers at once for shared nodes: after an incremental reparse,
/// everything the edit did not touch keeps the very node it had, so comparing two versions of a
/// file costs the length of the path to the edit, not the size of the file.
pub fn green_eq(a: &rowan::GreenNodeData, b: &rowan::GreenNodeData) -> bool {
    if std::ptr::eq(a, b) {
        return true;
    }
    stacker::maybe_grow(
        crate::body::lower::STACK_RED_ZONE,
        crate::body::lower::STACK_SEGMENT,
        || {
            a.kind() == b.kind()
                && a.text_len() == b.text_len()
                && a.children().len() == b.children().len()
                && a.children().zip(b.children()).all(|pair| match pair {
                    (rowan::NodeOrToken::Node(x), rowan::NodeOrToken::Node(y)) => green_eq(x, y),
                    (rowan::NodeOrToken::Token(x), rowan::NodeOrToken::Token(y)) => x == y,
                    _ => false,
                })
        },
    )
}

/// The position-free syntax of a definition; the firewall that keeps edits elsewhere in the file
/// from reaching this definition's queries.
#[salsa::tracked(returns(ref))]
pub fn def_source(db: &dyn Db, def: DefId) -> DefSource {
    let tree = item_tree(db, def.file(db));
    let index = def.index(db) as usize;
    let chunks = match def.kind(db) {
        DefKind::Function => tree.functions.get(index).map(|f| vec![f.node.clone()]),
        DefKind::Test => tree.tests.get(index).map(|t| vec![t.node.clone()]),
        DefKind::TopLevel => Some(tree.top_level.iter().map(|s| s.node.clone()).collect()),
        DefKind::Struct => tree.structs.get(index).map(|s| vec![s.node.clone()]),
    };
    DefSource { chunks: chunks.unwrap_or_default() }
}

/// Where chunk `chunk` of `def` starts in its file.
pub fn chunk_offset(db: &dyn Db, def: DefId, chunk: u32) -> TextSize {
    let tree = item_tree(db, def.file(db));
    let index = def.index(db) as usize;
    let offset = match def.kind(db) {
        DefKind::Function => tree.functions.get(index).map(|f| f.offset),
        DefKind::Test => tree.tests.get(index).map(|t| t.offset),
        DefKind::TopLevel => tree.top_level.get(chunk as usize).map(|s| s.offset),
        DefKind::Struct => tree.structs.get(index).map(|s| s.offset),
    };
    offset.unwrap_or_default()
}

/// The file an import names, if the database has it.
#[salsa::tracked(returns(copy))]
pub fn resolve_import(db: &dyn Db, file: SourceFile, index: u32) -> Option<SourceFile> {
    let tree = item_tree(db, file);
    let target = tree.imports.get(index as usize)?.path.clone()?;
    let path = import_target(file.path(db), &target);
    db.file_set()?.files(db).get(&path).copied()
}
