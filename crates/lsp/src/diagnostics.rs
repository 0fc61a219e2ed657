//! Publishing diagnostics: after documents change, compute every open document's diagnostics
//! on a snapshot and publish those that changed, with the document version they belong to.
//!
//! Debouncing: after a quiet period the first change is checked at once, so a single edit gets
//! its diagnostics as fast as the checker allows; changes that follow within [`DEBOUNCE`] of the
//! one before are checked when the typing pauses for that long. A check that a newer change
//! cancels publishes nothing; the newer change's check follows.

use std::{sync::mpsc, time::Duration};

use rustc_hash::FxHashMap;
use tokio::{
    sync::mpsc::UnboundedReceiver,
    time::{Instant, sleep_until},
};
use tower_lsp::{Client, lsp_types as lsp};

use crate::{
    handlers::{self, RequestError},
    host::{DiagnosticsEvent, Task},
    server::request_snapshot,
};

pub(crate) const DEBOUNCE: Duration = Duration::from_millis(50);

/// What was last published for each document.
type Published = FxHashMap<lsp::Url, (i32, Vec<lsp::Diagnostic>)>;

pub(crate) async fn run(
    client: Client,
    tasks: mpsc::Sender<Task>,
    mut events: UnboundedReceiver<DiagnosticsEvent>,
) {
    let published: std::sync::Arc<tokio::sync::Mutex<Published>> = Default::default();
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
            DiagnosticsEvent::Changed => {
                let now = Instant::now();
                let quiet = last_change.is_none_or(|at| now.duration_since(at) >= DEBOUNCE);
                due = Some(if quiet && due.is_none() { now } else { now + DEBOUNCE });
                last_change = Some(now);
            }
            DiagnosticsEvent::Closed(uri) => {
                published.lock().await.remove(&uri);
                client.publish_diagnostics(uri, Vec::new(), None).await;
            }
        }
    }
}

/// Checks every open document on one snapshot and publishes what changed.
async fn publish(
    client: Client,
    tasks: mpsc::Sender<Task>,
    published: std::sync::Arc<tokio::sync::Mutex<Published>>,
) {
    let Some(snapshot) = request_snapshot(&tasks).await else { return };
    let computed = tokio::task::spawn_blocking(move || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut out = Vec::new();
            for uri in snapshot.documents.keys() {
                match handlers::diagnostics(&snapshot, uri) {
                    Ok(Some((version, diagnostics))) => {
                        out.push((uri.clone(), version, diagnostics))
                    }
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
    for (uri, version, diagnostics) in results {
        // A check of an older version that finished late must not replace a newer one.
        let stale_or_unchanged = published
            .get(&uri)
            .is_some_and(|(v, d)| *v > version || (*v == version && *d == diagnostics));
        if stale_or_unchanged {
            continue;
        }
        published.insert(uri.clone(), (version, diagnostics.clone()));
        client.publish_diagnostics(uri, diagnostics, Some(version)).await;
    }
}
