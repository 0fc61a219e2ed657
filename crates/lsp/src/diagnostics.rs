//! The task that speaks to the client for the host: after documents change, it computes every
//! open document's diagnostics on a snapshot and publishes those that changed, with the document
//! version they belong to; and it passes the host's messages on to the client's log.
//!
//! One publication holds at most [`MAX_PUBLISHED`] diagnostics per document, the first ones in
//! the order of the text, and then one that says how many more there are. A file of stray bytes
//! has one error per character, and a client given tens of thousands of them at every
//! keystroke stops responding while it lays them out.
//!
//! Debouncing: after a quiet period the first change is checked at once, so a single edit gets
//! its diagnostics as fast as the checker allows; changes that follow within [`DEBOUNCE`] of the
//! one before are checked when the typing pauses for that long. A check that a newer change
//! cancels publishes nothing; the newer change's check follows.

use std::{
    sync::{Arc, mpsc},
    time::Duration,
};

use rustc_hash::FxHashMap;
use tokio::{
    sync::mpsc::UnboundedReceiver,
    time::{Instant, sleep_until},
};
use tower_lsp::{Client, lsp_types as lsp};

use crate::{
    handlers::{self, RequestError},
    host::{self, HostEvent, Task},
};

pub(crate) const DEBOUNCE: Duration = Duration::from_millis(50);

/// The most diagnostics a publication sends for one document, besides the one that counts those
/// left out: a hundred is more than anyone reads at once, and few enough for any editor.
pub(crate) const MAX_PUBLISHED: usize = 100;

/// What was last published for a document.
struct Published {
    /// The host's revision of the document the diagnostics were computed on (or closed at).
    revision: u64,
    version: Option<i32>,
    diagnostics: Vec<lsp::Diagnostic>,
}

type PublishedMap = Arc<tokio::sync::Mutex<FxHashMap<lsp::Url, Published>>>;

pub(crate) async fn run(
    client: Client,
    tasks: mpsc::Sender<Task>,
    mut events: UnboundedReceiver<HostEvent>,
) {
    let published = PublishedMap::default();
    let mut last_change: Option<Instant> = None;
    let mut due: Option<Instant> = None;
    loop {
        let event = match due {
            Some(at) => tokio::select! {
                event = events.recv() => event,
                () = sleep_until(at) => {
                    due = None;
                    let (client, tasks, published) = (client.clone(), tasks.clone(), published.clone());
                    tokio::spawn(async move { publish(client, tasks, published).await });
                    continue;
                }
            },
            None => events.recv().await,
        };
        let Some(event) = event else { return };
        match event {
            HostEvent::Changed => {
                let now = Instant::now();
                let quiet = last_change.is_none_or(|at| now.duration_since(at) >= DEBOUNCE);
                due = Some(if quiet && due.is_none() { now } else { now + DEBOUNCE });
                last_change = Some(now);
            }
            HostEvent::Closed { uri, revision } => {
                // Diagnostics of the document computed before it closed must not follow.
                let cleared = Published { revision, version: None, diagnostics: Vec::new() };
                published.lock().await.insert(uri.clone(), cleared);
                client.publish_diagnostics(uri, Vec::new(), None).await;
            }
            HostEvent::Log(kind, message) => client.log_message(kind, message).await,
        }
    }
}

/// Checks every open document on one snapshot and publishes what changed.
async fn publish(client: Client, tasks: mpsc::Sender<Task>, published: PublishedMap) {
    let Some(snapshot) = host::snapshot(&tasks).await else { return };
    let computed = tokio::task::spawn_blocking(move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut out = Vec::new();
            for uri in snapshot.documents.keys() {
                match handlers::diagnostics(&snapshot, uri, MAX_PUBLISHED) {
                    Ok(Some(computed)) => out.push((uri.clone(), computed)),
                    Ok(None) => {}
                    Err(RequestError::Cancelled) => return None,
                    Err(RequestError::Failed(_)) => {}
                }
            }
            Some(out)
        }))
    })
    .await;
    let results = match computed {
        Ok(Ok(Some(results))) => results,
        // Cancelled by a newer change, whose own check follows; or a panic, already reported
        // on stderr by the panic hook.
        _ => return,
    };
    let mut published = published.lock().await;
    for (uri, (revision, version, diagnostics)) in results {
        // A check of an older text that finished late must not replace a newer one.
        let stale_or_unchanged = published.get(&uri).is_some_and(|p| {
            p.revision > revision || (p.version == Some(version) && p.diagnostics == diagnostics)
        });
        if stale_or_unchanged {
            continue;
        }
        let entry =
            Published { revision, version: Some(version), diagnostics: diagnostics.clone() };
        published.insert(uri.clone(), entry);
        client.publish_diagnostics(uri, diagnostics, Some(version)).await;
    }
}
