//! The thread that owns the [`ide::AnalysisHost`] and the open documents. Every edit goes
//! through its channel and is applied there, in the order the notifications arrived and, for each
//! document, in version order; every request gets its [`Snapshot`] through the same channel, so
//! it sees every edit sent before it.
//!
//! Applying an edit cancels the snapshots that are computing (salsa makes them unwind with
//! `Cancelled`) and waits for them to be dropped, which is why this is a thread of its own and
//! not a task on the async runtime.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{Arc, mpsc},
    time::Duration,
};

use ide::{AnalysisHost, FileId, LineIndex};
use rustc_hash::FxHashMap;
use tokio::sync::{mpsc::UnboundedSender, oneshot};
use tower_lsp::lsp_types::{TextDocumentContentChangeEvent, Url};

use crate::{Config, convert};

/// How long a change that arrived ahead of its predecessor waits for it before it is applied
/// anyway (a client may skip versions).
const REORDER_WAIT: Duration = Duration::from_millis(50);

/// An open document as the host knows it.
#[derive(Clone)]
pub(crate) struct Document {
    pub(crate) file: FileId,
    pub(crate) version: i32,
    pub(crate) text: Arc<str>,
    pub(crate) line_index: Arc<LineIndex>,
}

/// What requests read: a database snapshot and the documents it has.
pub(crate) struct Snapshot {
    pub(crate) analysis: ide::Analysis,
    pub(crate) documents: Arc<FxHashMap<Url, Document>>,
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
    /// Files changed on disk: reload those that are not open.
    FilesChanged(Vec<Url>),
    SetConfig(Config),
    Snapshot(oneshot::Sender<Snapshot>),
}

/// Tells the diagnostics task that documents changed.
pub(crate) enum DiagnosticsEvent {
    /// A document changed; every open document may have new diagnostics.
    Changed,
    /// A document was closed: clear its diagnostics.
    Closed(Url),
}

/// Starts the host thread.
pub(crate) fn spawn(
    diagnostics: UnboundedSender<DiagnosticsEvent>,
) -> std::io::Result<mpsc::Sender<Task>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::Builder::new().name("nabla-host".to_owned()).spawn(move || {
        let mut state = HostState {
            host: AnalysisHost::new(),
            documents: Arc::default(),
            pending: FxHashMap::default(),
            config: Arc::default(),
            diagnostics,
        };
        state.run(receiver);
    })?;
    Ok(sender)
}

struct HostState {
    host: AnalysisHost,
    documents: Arc<FxHashMap<Url, Document>>,
    /// Changes that arrived before the change of the version before them.
    pending: FxHashMap<Url, BTreeMap<i32, Vec<TextDocumentContentChangeEvent>>>,
    config: Arc<Config>,
    diagnostics: UnboundedSender<DiagnosticsEvent>,
}

impl HostState {
    fn run(&mut self, receiver: mpsc::Receiver<Task>) {
        loop {
            let task = if self.pending.is_empty() {
                match receiver.recv() {
                    Ok(task) => task,
                    Err(_) => return,
                }
            } else {
                match receiver.recv_timeout(REORDER_WAIT) {
                    Ok(task) => task,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        self.flush_pending();
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            };
            self.handle(task);
        }
    }

    fn handle(&mut self, task: Task) {
        match task {
            Task::Open { uri, version, text } => {
                self.pending.remove(&uri);
                self.set_document(uri, version, Arc::from(text));
            }
            Task::Change { uri, version, changes } => {
                self.pending.entry(uri.clone()).or_default().insert(version, changes);
                self.apply_ready(&uri);
            }
            Task::Close { uri } => {
                self.pending.remove(&uri);
                if let Some(document) = Arc::make_mut(&mut self.documents).remove(&uri) {
                    // Other files may import it: they now see it as it is on disk.
                    if let Some(path) = file_path(&uri)
                        && let Ok(text) = std::fs::read_to_string(&path)
                        && *text != *document.text
                    {
                        self.host.set_file_text(&path, Arc::from(text));
                        let _ = self.diagnostics.send(DiagnosticsEvent::Changed);
                    }
                }
                let _ = self.diagnostics.send(DiagnosticsEvent::Closed(uri));
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
                    let _ = self.diagnostics.send(DiagnosticsEvent::Changed);
                }
            }
            Task::SetConfig(config) => self.config = Arc::new(config),
            Task::Snapshot(reply) => {
                let snapshot = Snapshot {
                    analysis: self.host.analysis(),
                    documents: self.documents.clone(),
                    config: self.config.clone(),
                };
                // A requester that has gone away drops the snapshot here, at once.
                let _ = reply.send(snapshot);
            }
        }
    }

    /// Applies the pending changes of `uri` that follow its current version without a gap.
    fn apply_ready(&mut self, uri: &Url) {
        let Some(current) = self.documents.get(uri).map(|d| d.version) else {
            // A change to a document that is not open has nothing to apply to.
            self.pending.remove(uri);
            return;
        };
        let mut version = current;
        let mut ready = Vec::new();
        if let Some(queue) = self.pending.get_mut(uri) {
            // Versions at or below the current one are stale duplicates.
            while queue.first_key_value().is_some_and(|(v, _)| *v <= current) {
                queue.pop_first();
            }
            while let Some(entry) = queue.first_entry() {
                if *entry.key() != version + 1 {
                    break;
                }
                let (v, changes) = entry.remove_entry();
                version = v;
                ready.push((v, changes));
            }
            if queue.is_empty() {
                self.pending.remove(uri);
            }
        }
        if !ready.is_empty() {
            self.apply(uri, ready);
        }
    }

    /// Applies every pending change in version order, gaps and all.
    fn flush_pending(&mut self) {
        for (uri, queue) in std::mem::take(&mut self.pending) {
            let current = self.documents.get(&uri).map(|d| d.version);
            let ready: Vec<_> =
                queue.into_iter().filter(|(v, _)| current.is_some_and(|c| *v > c)).collect();
            if !ready.is_empty() {
                self.apply(&uri, ready);
            }
        }
    }

    fn apply(&mut self, uri: &Url, versions: Vec<(i32, Vec<TextDocumentContentChangeEvent>)>) {
        let Some(document) = self.documents.get(uri) else { return };
        let mut text: String = document.text.to_string();
        let mut index = document.line_index.clone();
        let mut index_stale = false;
        let mut last = document.version;
        for (version, changes) in versions {
            for change in changes {
                // Each change's positions refer to the text the changes before it left.
                if index_stale {
                    index = Arc::new(LineIndex::new(&text));
                }
                index_stale = true;
                match change.range {
                    None => text = change.text,
                    Some(range) => {
                        let len = ide::TextSize::from(text.len() as u32);
                        let start = convert::offset(&index, range.start).unwrap_or(len);
                        let end = convert::offset(&index, range.end).unwrap_or(len).max(start);
                        text.replace_range(usize::from(start)..usize::from(end), &change.text);
                    }
                }
            }
            last = version;
        }
        self.set_document(uri.clone(), last, Arc::from(text));
    }

    fn set_document(&mut self, uri: Url, version: i32, text: Arc<str>) {
        let path = file_path(&uri).unwrap_or_else(|| synthetic_path(&uri));
        let file = self.host.set_file_text(&path, text.clone());
        self.host.load_imports(file, &mut |path: &Path| {
            std::fs::read_to_string(path).map_err(|err| err.to_string())
        });
        let line_index = Arc::new(LineIndex::new(&text));
        Arc::make_mut(&mut self.documents)
            .insert(uri, Document { file, version, text, line_index });
        let _ = self.diagnostics.send(DiagnosticsEvent::Changed);
    }
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
