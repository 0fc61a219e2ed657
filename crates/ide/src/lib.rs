//! What an editor asks about Nabla code, answered as plain data: diagnostics with fix-its, hover,
//! go to definition, references, rename, completion, signature help, inlay hints, semantic
//! tokens, symbols, folding ranges, formatting, code actions and test code lenses.
//!
//! [`AnalysisHost`] owns the [`hir::Database`] and applies changes to it; [`Analysis`] is a
//! snapshot of it that answers queries from any thread. Every answer of an [`Analysis`] is
//! [`Cancellable`]: when the host applies a change while a snapshot is computing, salsa cancels
//! the computation and the method returns [`Cancelled`] instead of a stale answer.
//!
//! Positions are byte offsets ([`TextSize`]) into a file's text and ranges are [`TextRange`]s.
//! This crate knows nothing of the language server protocol, JSON or UTF-16: the `lsp` crate
//! converts.

mod code_actions;
mod completion;
mod diagnostics;
mod folding_ranges;
mod formatting;
mod goto_definition;
mod hover;
mod inlay_hints;
mod references;
mod rename;
mod runnables;
mod semantic;
mod signature_help;
mod symbols;
mod syntax_highlighting;

#[cfg(test)]
mod fixture;

use std::{
    panic::AssertUnwindSafe,
    path::{Path, PathBuf},
    sync::Arc,
};

pub use salsa::Cancelled;
pub use syntax::{Indel, LineCol, LineIndex, TextRange, TextSize};

pub use crate::{
    code_actions::Assist,
    completion::{CompletionItem, CompletionKind},
    diagnostics::{Diagnostic, RelatedInfo, Severity},
    folding_ranges::{Fold, FoldKind},
    goto_definition::NavigationTarget,
    hover::HoverResult,
    inlay_hints::{InlayHint, InlayKind},
    references::{Reference, ReferenceSearchResult},
    rename::RenameError,
    runnables::Runnable,
    signature_help::SignatureHelp,
    symbols::{StructureNode, SymbolKind},
    syntax_highlighting::{HighlightedRange, HlMods, HlTag},
};

/// The result of a query on a snapshot that a newer change may cancel.
pub type Cancellable<T> = Result<T, Cancelled>;

/// A file of the database. Cheap to copy; valid for the host that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileId(hir::SourceFile);

impl Ord for FileId {
    fn cmp(&self, other: &FileId) -> std::cmp::Ordering {
        use salsa::plumbing::AsId;
        self.0.as_id().cmp(&other.0.as_id())
    }
}

impl PartialOrd for FileId {
    fn partial_cmp(&self, other: &FileId) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// An offset in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FilePosition {
    pub file: FileId,
    pub offset: TextSize,
}

/// A range in a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileRange {
    pub file: FileId,
    pub range: TextRange,
}

/// Replace `range` with `insert` (an empty range inserts).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TextEdit {
    pub range: TextRange,
    pub insert: String,
}

/// Edits to one or more files, each file's edits sorted and disjoint.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SourceChange {
    pub edits: Vec<(FileId, Vec<TextEdit>)>,
}

impl SourceChange {
    /// Groups edits by file (in file order) and sorts each file's edits by position.
    fn from_edits(edits: impl IntoIterator<Item = (FileId, TextEdit)>) -> SourceChange {
        let mut by_file: Vec<(FileId, Vec<TextEdit>)> = Vec::new();
        for (file, edit) in edits {
            match by_file.iter_mut().find(|(f, _)| *f == file) {
                Some((_, list)) => list.push(edit),
                None => by_file.push((file, vec![edit])),
            }
        }
        by_file.sort_by_key(|(file, _)| *file);
        for (_, list) in &mut by_file {
            list.sort_by_key(|edit| (edit.range.start(), edit.range.end()));
            list.dedup();
        }
        SourceChange { edits: by_file }
    }
}

/// Owns the database and applies changes to it. Applying a change cancels every running
/// [`Analysis`] and waits until they have all been dropped.
#[derive(Default)]
pub struct AnalysisHost {
    db: hir::Database,
}

impl AnalysisHost {
    pub fn new() -> AnalysisHost {
        AnalysisHost::default()
    }

    /// Adds a file or replaces its text.
    pub fn set_file_text(&mut self, path: &Path, text: Arc<str>) -> FileId {
        FileId(self.db.set_file(path, text))
    }

    /// Applies edits to a file's text, each to the text the ones before it left, reparsing only
    /// what each touched. `false` when an edit does not fit the text: the edits before it are
    /// applied, the rest are not.
    pub fn apply_edits(&mut self, file: FileId, edits: &[Indel]) -> bool {
        edits.iter().all(|edit| self.db.edit_file(file.0, edit))
    }

    /// Adds, transitively, the files that `file` imports and the database lacks, reading them
    /// with `read`. Imports that cannot be read are left out; the checker reports them.
    pub fn load_imports(
        &mut self,
        file: FileId,
        read: &mut dyn FnMut(&Path) -> Result<String, String>,
    ) {
        let path = file.0.path(&self.db).clone();
        // The file is in the database already, so this cannot fail on it.
        let _ = self.db.load_with_imports(&path, read);
    }

    /// The file added under `path`, if any.
    pub fn file(&self, path: &Path) -> Option<FileId> {
        self.db.file(path).map(FileId)
    }

    /// A snapshot for queries.
    pub fn analysis(&self) -> Analysis {
        Analysis { db: self.db.clone() }
    }
}

/// A snapshot of the database that answers queries. Keep it only while computing: the host
/// cannot apply a change until every snapshot is dropped.
pub struct Analysis {
    db: hir::Database,
}

impl Analysis {
    /// Runs `f` on the database, turning salsa's cancellation into [`Cancelled`].
    fn with_db<T>(&self, f: impl FnOnce(&hir::Database) -> T) -> Cancellable<T> {
        Cancelled::catch(AssertUnwindSafe(|| f(&self.db)))
    }

    /// The file added under `path`, if any.
    pub fn file(&self, path: &Path) -> Option<FileId> {
        self.db.file(path).map(FileId)
    }

    /// Every file, sorted by path.
    pub fn files(&self) -> Vec<FileId> {
        self.db.files().into_iter().map(FileId).collect()
    }

    pub fn file_path(&self, file: FileId) -> Cancellable<PathBuf> {
        self.with_db(|db| file.0.path(db).clone())
    }

    pub fn file_text(&self, file: FileId) -> Cancellable<Arc<str>> {
        self.with_db(|db| file.0.text(db).clone())
    }

    /// The file's diagnostics, with their fix-its.
    pub fn diagnostics(&self, file: FileId) -> Cancellable<Vec<Diagnostic>> {
        self.with_db(|db| diagnostics::diagnostics(db, file))
    }

    /// The type (and for names, what they are) at a position.
    pub fn hover(&self, position: FilePosition) -> Cancellable<Option<HoverResult>> {
        self.with_db(|db| hover::hover(db, position))
    }

    /// Where the name at a position is defined, or the file an `import` names.
    pub fn goto_definition(&self, position: FilePosition) -> Cancellable<Vec<NavigationTarget>> {
        self.with_db(|db| goto_definition::goto_definition(db, position))
    }

    /// Every use and the declaration of the name at a position, across files.
    pub fn find_references(
        &self,
        position: FilePosition,
    ) -> Cancellable<Option<ReferenceSearchResult>> {
        self.with_db(|db| references::find_references(db, position))
    }

    /// The occurrences of the name at a position in its own file, for highlighting.
    pub fn highlight_related(&self, position: FilePosition) -> Cancellable<Vec<Reference>> {
        self.with_db(|db| references::highlight_related(db, position))
    }

    /// The range of the name a rename at this position would change.
    pub fn prepare_rename(
        &self,
        position: FilePosition,
    ) -> Cancellable<Result<TextRange, RenameError>> {
        self.with_db(|db| rename::prepare_rename(db, position))
    }

    /// The edits that rename the name at a position to `new_name`, after checking that the new
    /// name is valid and changes no other name's meaning.
    pub fn rename(
        &self,
        position: FilePosition,
        new_name: &str,
    ) -> Cancellable<Result<SourceChange, RenameError>> {
        self.with_db(|db| rename::rename(db, position, new_name))
    }

    pub fn completions(&self, position: FilePosition) -> Cancellable<Vec<CompletionItem>> {
        self.with_db(|db| completion::completions(db, position))
    }

    pub fn signature_help(&self, position: FilePosition) -> Cancellable<Option<SignatureHelp>> {
        self.with_db(|db| signature_help::signature_help(db, position))
    }

    /// Inferred shapes of declarations without dimensions and shape-variable bindings at calls,
    /// within `range` (the whole file when `None`).
    pub fn inlay_hints(
        &self,
        file: FileId,
        range: Option<TextRange>,
    ) -> Cancellable<Vec<InlayHint>> {
        self.with_db(|db| inlay_hints::inlay_hints(db, file, range))
    }

    /// Every token worth colouring, in order, classified by what it means.
    pub fn semantic_tokens(&self, file: FileId) -> Cancellable<Vec<HighlightedRange>> {
        self.with_db(|db| syntax_highlighting::highlight(db, file))
    }

    pub fn document_symbols(&self, file: FileId) -> Cancellable<Vec<StructureNode>> {
        self.with_db(|db| symbols::document_symbols(db, file))
    }

    /// The functions, tests and top-level variables of every file whose names match `query`.
    pub fn workspace_symbols(&self, query: &str) -> Cancellable<Vec<NavigationTarget>> {
        self.with_db(|db| symbols::workspace_symbols(db, query))
    }

    pub fn folding_ranges(&self, file: FileId) -> Cancellable<Vec<Fold>> {
        self.with_db(|db| folding_ranges::folding_ranges(db, file))
    }

    /// The edits that format the file, or why it cannot be formatted.
    pub fn format(&self, file: FileId) -> Cancellable<Result<Vec<TextEdit>, String>> {
        self.with_db(|db| formatting::format(db, file))
    }

    /// The fix-its of the diagnostics that touch `range`.
    pub fn code_actions(&self, range: FileRange) -> Cancellable<Vec<Assist>> {
        self.with_db(|db| code_actions::code_actions(db, range))
    }

    /// The test blocks of a file, for "Run test" code lenses.
    pub fn runnables(&self, file: FileId) -> Cancellable<Vec<Runnable>> {
        self.with_db(|db| runnables::runnables(db, file))
    }
}

/// Whether `offset` lies in the file's text.
fn in_file(db: &hir::Database, file: FileId, offset: TextSize) -> bool {
    usize::from(offset) <= file.0.text(db).len()
}

#[cfg(test)]
mod tests {
    use std::{path::Path, sync::Arc};

    use crate::{AnalysisHost, Indel, TextRange, TextSize};

    /// A change applied while a snapshot computes cancels the snapshot, which then answers
    /// `Cancelled` instead of blocking the change.
    #[test]
    fn a_change_cancels_running_snapshots() {
        let mut host = AnalysisHost::new();
        let path = Path::new("/fixture/main.nb");
        let file = host.set_file_text(path, Arc::from("int a = 1;\nprint(a);\n"));
        let analysis = host.analysis();
        let reader = std::thread::spawn(move || {
            // Keep asking until the pending change cancels the snapshot.
            loop {
                if analysis.diagnostics(file).is_err() {
                    return true;
                }
                std::thread::yield_now();
            }
        });
        // This waits until the reader has seen the cancellation and dropped its snapshot.
        host.set_file_text(path, Arc::from("int a = 2;\nprint(a);\n"));
        assert!(reader.join().unwrap_or(false));
        let analysis = host.analysis();
        assert_eq!(analysis.file_text(file).ok().as_deref(), Some("int a = 2;\nprint(a);\n"));
    }

    /// Edits applied one after another give the text and the diagnostics that the whole new
    /// text gives.
    #[test]
    fn edits_give_what_the_new_text_gives() {
        let path = Path::new("/fixture/main.nb");
        let mut text =
            String::from("function float f(float x) {\n    return x;\n}\nprint(f(1.0));\n");
        let mut host = AnalysisHost::new();
        let file = host.set_file_text(path, Arc::from(text.as_str()));
        let mut edits = Vec::new();
        // Inside the block, then breaking a statement at the top level, then inside a token.
        for (find, insert) in [("x;", "2.0 * x;"), ("));", ")"), ("1.0", "1.5")] {
            let start = text.find(find).unwrap_or(0) as u32;
            let range = TextRange::at(TextSize::from(start), TextSize::from(find.len() as u32));
            let edit = Indel::replace(range, insert);
            text = edit.apply(&text).unwrap_or_default();
            edits.push(edit);
        }
        assert!(host.apply_edits(file, &edits));
        let mut fresh = AnalysisHost::new();
        let fresh_file = fresh.set_file_text(path, Arc::from(text.as_str()));
        let (edited, fresh) = (host.analysis(), fresh.analysis());
        assert_eq!(edited.file_text(file).ok().as_deref(), Some(text.as_str()));
        let diagnostics = edited.diagnostics(file).ok();
        assert_eq!(format!("{diagnostics:?}"), format!("{:?}", fresh.diagnostics(fresh_file).ok()));
        assert!(diagnostics.is_some_and(|d| !d.is_empty()), "the missing `;` is reported");
    }
}
