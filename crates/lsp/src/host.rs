//! The thread that owns the [`ide::AnalysisHost`] and the open documents. [`crate::dispatch`]
//! sends it every document notification and every request's [`Snapshot`] order in the order the
//! messages arrived, so a request sees exactly the changes the client sent before it.
//!
//! Changes are applied in the order they arrive, whatever their version numbers: the protocol
//! lets versions jump and repeat, so a version is only a label, given back with the diagnostics
//! and edits computed for the text it names. A change whose text equals the current one (a
//! repeated version with no changes) touches nothing.
//!
//! A document whose notification could not be read is lost: the server can no longer know its
//! text, so it forgets it and ignores its changes until the client sends its whole text again
//! (a change without a range, or `didOpen`).
//!
//! Applying an edit cancels the snapshots that are computing (salsa makes them unwind with
//! `Cancelled`) and waits for them to be dropped, which is why this is a thread of its own and
//! not a task on the async runtime.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, mpsc},
};

use ide::{AnalysisHost, FileId, Indel, LineIndex, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};
use tokio::sync::{mpsc::UnboundedSender, oneshot};
use tower_lsp::lsp_types::{MessageType, TextDocumentContentChangeEvent, Url};

use crate::{Config, convert};

/// An open document as the host knows it.
#[derive(Clone)]
pub(crate) struct Document {
    pub(crate) file: FileId,
    /// The client's version of the text.
    pub(crate) version: i32,
    /// When the host last changed this document, on the host's own clock: unlike versions, it
    /// only grows, across closing and reopening too.
    pub(crate) revision: u64,
    pub(crate) text: Arc<str>,
    pub(crate) line_index: Arc<LineIndex>,
}

/// What requests read: a database snapshot and the documents it has.
pub(crate) struct Snapshot {
    pub(crate) analysis: ide::Analysis,
    pub(crate) documents: Arc<FxHashMap<Url, Document>>,
    /// Documents whose text is lost: whatever the database has for them is not what the client
    /// shows.
    pub(crate) lost: Arc<FxHashSet<Url>>,
    pub(crate) config: Arc<Config>,
}

pub(crate) enum Task {
    Open {
        uri: Url,
        version: i32,
        text: String,
    },
    Change {
        uri: Url,
        version: i32,
        changes: Vec<TextDocumentContentChangeEvent>,
    },
    Close {
        uri: Url,
    },
    /// A message could not be read; `uri` is the document it was about, when that is known.
    Lost {
        uri: Option<Url>,
        reason: String,
    },
    /// Files changed on disk: reload those that are not open.
    FilesChanged(Vec<Url>),
    SetConfig(Config),
    Snapshot(oneshot::Sender<Snapshot>),
}

/// What the host tells the task that speaks to the client (`diagnostics.rs`).
pub(crate) enum HostEvent {
    /// A document changed; every open document may have new diagnostics.
    Changed,
    /// A document was closed or lost at `revision`: clear its diagnostics.
    Closed { uri: Url, revision: u64 },
    /// Something the user should be able to read in the client's log.
    Log(MessageType, String),
}

/// Starts the host thread.
pub(crate) fn spawn(events: UnboundedSender<HostEvent>) -> std::io::Result<mpsc::Sender<Task>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new().name("nabla-host".to_owned()).spawn(move || {
        let mut state = HostState {
            host: AnalysisHost::new(),
            documents: Arc::default(),
            lost: Arc::default(),
            revision: 0,
            config: Arc::default(),
            events,
        };
        while let Ok(task) = receiver.recv() {
            state.handle(task);
        }
    })?;
    Ok(sender)
}

/// Takes a snapshot through the host's channel, after every task sent before.
pub(crate) async fn snapshot(tasks: &mpsc::Sender<Task>) -> Option<Snapshot> {
    let (reply, receive) = oneshot::channel();
    tasks.send(Task::Snapshot(reply)).ok()?;
    receive.await.ok()
}

struct HostState {
    host: AnalysisHost,
    documents: Arc<FxHashMap<Url, Document>>,
    /// Documents whose text was lost with a message that could not be read.
    lost: Arc<FxHashSet<Url>>,
    /// The host's clock, one tick per change to a document.
    revision: u64,
    config: Arc<Config>,
    events: UnboundedSender<HostEvent>,
}

impl HostState {
    fn handle(&mut self, task: Task) {
        match task {
            Task::Open { uri, version, text } => {
                self.found(&uri);
                self.set_document(uri, version, Arc::from(text), None);
            }
            Task::Change { uri, version, changes } => self.change(uri, version, changes),
            Task::Close { uri } => {
                if self.lost.contains(&uri) {
                    Arc::make_mut(&mut self.lost).remove(&uri);
                }
                self.forget(uri);
            }
            Task::Lost { uri, reason } => {
                let Some(uri) = uri else {
                    self.log(MessageType::WARNING, format!("{reason}; it was ignored"));
                    return;
                };
                self.log(
                    MessageType::WARNING,
                    format!(
                        "{reason}; the server no longer knows the text of {uri} and ignores its \
                         changes until the editor sends its whole text again (a change without \
                         a range, or reopening it)"
                    ),
                );
                Arc::make_mut(&mut self.lost).insert(uri.clone());
                self.forget(uri);
            }
            Task::FilesChanged(uris) => {
                let mut changed = false;
                for uri in uris {
                    if self.documents.contains_key(&uri) {
                        continue;
                    }
                    let Some(path) = file_path(&uri) else { continue };
                    if self.host.file(&path).is_none() {
                        continue;
                    }
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    self.host.set_file_text(&path, Arc::from(text));
                    changed = true;
                }
                if changed {
                    let _ = self.events.send(HostEvent::Changed);
                }
            }
            Task::SetConfig(config) => self.config = Arc::new(config),
            Task::Snapshot(reply) => {
                let snapshot = Snapshot {
                    analysis: self.host.analysis(),
                    documents: self.documents.clone(),
                    lost: self.lost.clone(),
                    config: self.config.clone(),
                };
                // A requester that has gone away drops the snapshot here, at once.
                let _ = reply.send(snapshot);
            }
        }
    }

    /// Applies one `didChange`: its changes in order, each to the text the one before left.
    fn change(&mut self, uri: Url, version: i32, changes: Vec<TextDocumentContentChangeEvent>) {
        // Only the changes from the last whole text on matter.
        let whole = changes.iter().rposition(|change| change.range.is_none());
        let (text, index, changes) = match (self.documents.get(&uri), whole) {
            (_, Some(at)) => (changes[at].text.clone(), None, &changes[at + 1..]),
            (Some(document), None) => {
                (document.text.to_string(), Some(document.line_index.clone()), &changes[..])
            }
            // A document that is not open, or whose text was lost: there is nothing to apply the
            // change to. A lost document was reported when it was lost.
            (None, None) => return,
        };
        self.found(&uri);
        let (text, edits) = apply_changes(text, index, changes);
        // Edits of the open document's text reparse only what they touch; a whole text is
        // compared with the old one instead.
        let edits = whole.is_none().then_some(edits);
        self.set_document(uri, version, Arc::from(text), edits);
    }

    /// Sets a document's text and version, applying `edits` (which make `text` from the
    /// document's current text) when there are some. A text equal to the current one changes
    /// only the version: the database, and the requests computing on it, are left alone.
    fn set_document(&mut self, uri: Url, version: i32, text: Arc<str>, edits: Option<Vec<Indel>>) {
        self.revision += 1;
        let revision = self.revision;
        let documents = Arc::make_mut(&mut self.documents);
        if let Some(document) = documents.get_mut(&uri)
            && document.text == text
        {
            if document.version != version {
                document.version = version;
                document.revision = revision;
                let _ = self.events.send(HostEvent::Changed);
            }
            return;
        }
        let path = file_path(&uri).unwrap_or_else(|| synthetic_path(&uri));
        let open = self.documents.get(&uri).map(|document| document.file);
        let file = match (open, edits) {
            (Some(file), Some(edits)) if self.host.apply_edits(file, &edits) => file,
            _ => self.host.set_file_text(&path, text.clone()),
        };
        self.host.load_imports(file, &mut |path: &Path| {
            std::fs::read_to_string(path).map_err(|err| err.to_string())
        });
        let line_index = Arc::new(LineIndex::new(&text));
        Arc::make_mut(&mut self.documents)
            .insert(uri, Document { file, version, revision, text, line_index });
        let _ = self.events.send(HostEvent::Changed);
    }

    /// Drops an open document (closed or lost) and clears its diagnostics. Other files may
    /// import it: they now see it as it is on disk.
    fn forget(&mut self, uri: Url) {
        self.revision += 1;
        if let Some(document) = Arc::make_mut(&mut self.documents).remove(&uri)
            && let Some(path) = file_path(&uri)
            && let Ok(text) = std::fs::read_to_string(&path)
            && *text != *document.text
        {
            self.host.set_file_text(&path, Arc::from(text));
            let _ = self.events.send(HostEvent::Changed);
        }
        let _ = self.events.send(HostEvent::Closed { uri, revision: self.revision });
    }

    /// The client sent the whole text of `uri`: if it was lost, it is known again.
    fn found(&mut self, uri: &Url) {
        if self.lost.contains(uri) {
            Arc::make_mut(&mut self.lost).remove(uri);
            self.log(MessageType::INFO, format!("{uri} is synchronised again"));
        }
    }

    fn log(&self, kind: MessageType, message: String) {
        let _ = self.events.send(HostEvent::Log(kind, message));
    }
}

/// Applies incremental changes to `text` (whose line index is `index`, when known), each to the
/// text the ones before it left: the new text, and the edits that made it from `text` (those
/// after the last change of the whole text). A position past the end of the text means its end.
fn apply_changes(
    mut text: String,
    mut index: Option<Arc<LineIndex>>,
    changes: &[TextDocumentContentChangeEvent],
) -> (String, Vec<Indel>) {
    let mut edits = Vec::new();
    for change in changes {
        let Some(range) = change.range else {
            text.clone_from(&change.text);
            index = None;
            edits.clear();
            continue;
        };
        let index = index.take().unwrap_or_else(|| Arc::new(LineIndex::new(&text)));
        let len = ide::TextSize::from(text.len() as u32);
        let start = convert::offset(&index, range.start).unwrap_or(len);
        let end = convert::offset(&index, range.end).unwrap_or(len).max(start);
        text.replace_range(usize::from(start)..usize::from(end), &change.text);
        edits.push(Indel::replace(TextRange::new(start, end), change.text.clone()));
    }
    (text, edits)
}

/// The file a `file:` URI names.
pub(crate) fn file_path(uri: &Url) -> Option<PathBuf> {
    if uri.scheme() != "file" {
        return None;
    }
    uri.to_file_path().ok()
}

/// A path for a document that is not a file, such as an unsaved `untitled:` buffer.
pub(crate) fn synthetic_path(uri: &Url) -> PathBuf {
    PathBuf::from(format!("/{}:/{}", uri.scheme(), uri.path().trim_start_matches('/')))
}
