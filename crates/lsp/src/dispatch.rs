//! The service every message meets first, in the order the client sent them: tower-lsp calls a
//! service's `call` once per message, in arrival order, and only then runs the handlers' futures,
//! concurrently and in no promised order. So what must follow the order of the messages happens
//! here, in `call`:
//!
//! - Document notifications (`didOpen`, `didChange`, `didClose`, and `didChangeWatchedFiles`
//!   for the files they import) go to the host thread, which applies them in that order. One
//!   that cannot be read loses its document (`host.rs`).
//! - Each request is given its snapshot: the host takes it after every change sent before the
//!   request and before any sent after it, so the request is answered on the text the client had
//!   when it asked. [`arrival_snapshot`] hands it to the handler.
//! - The stand-ins [`frames`] sends for malformed messages are answered, and a document such a
//!   message was about is lost.
//! - `shutdown` and `exit` are watched; the `null`, `[]` or `[null]` params some JSON-RPC
//!   libraries send with them for "no parameters", which tower-lsp would refuse (and, for `exit`,
//!   keep running), are dropped.

use std::{
    cell::RefCell,
    future::Future,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    task::{Context, Poll},
};

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::oneshot;
use tower_lsp::{
    jsonrpc::{Request, Response},
    lsp_types as lsp,
};

use crate::{
    frames,
    host::{Snapshot, Task},
};

const DID_OPEN: &str = "textDocument/didOpen";
const DID_CHANGE: &str = "textDocument/didChange";
const DID_CLOSE: &str = "textDocument/didClose";
const DID_CHANGE_WATCHED_FILES: &str = "workspace/didChangeWatchedFiles";

tokio::task_local! {
    /// The snapshot of the request whose future is running.
    static ARRIVAL: RefCell<Option<oneshot::Receiver<Snapshot>>>;
}

/// The snapshot taken when the request being handled arrived. Only its first call, inside a
/// request's future, gets it.
pub(crate) async fn arrival_snapshot() -> Option<Snapshot> {
    let receiver = ARRIVAL.try_with(|slot| slot.borrow_mut().take()).ok().flatten()?;
    receiver.await.ok()
}

/// What the client said about the end of the session.
#[derive(Default)]
pub(crate) struct Lifecycle {
    pub(crate) shutdown: AtomicBool,
    pub(crate) exited: tokio::sync::Notify,
}

/// The service in front of tower-lsp's, `inner`.
pub(crate) struct Dispatch<S> {
    pub(crate) inner: S,
    pub(crate) lifecycle: Arc<Lifecycle>,
    pub(crate) tasks: mpsc::Sender<Task>,
}

type Answer<E> = Pin<Box<dyn Future<Output = Result<Option<Response>, E>> + Send>>;

impl<S> tower::Service<Request> for Dispatch<S>
where
    S: tower::Service<Request, Response = Option<Response>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Option<Response>;
    type Error = S::Error;
    type Future = Answer<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let answered = |answer| -> Self::Future { Box::pin(std::future::ready(Ok(answer))) };
        match request.method() {
            frames::MALFORMED => {
                self.malformed(&request);
                return answered(Some(frames::malformed_answer(&request)));
            }
            DID_OPEN | DID_CHANGE | DID_CLOSE | DID_CHANGE_WATCHED_FILES
                if request.id().is_none() =>
            {
                self.synchronise(request);
                return answered(None);
            }
            _ => {}
        }
        let empty = match request.params() {
            Some(Value::Null) => true,
            Some(Value::Array(items)) => items.iter().all(|v| v.is_null()),
            _ => false,
        };
        let method = request.method().to_owned();
        let request = if empty && matches!(method.as_str(), "shutdown" | "exit") {
            let (method, id, _) = request.into_parts();
            let builder = Request::build(method);
            match id {
                Some(id) => builder.id(id).finish(),
                None => builder.finish(),
            }
        } else {
            request
        };
        let is_request = request.id().is_some();
        let future = self.inner.call(request);
        match method.as_str() {
            "shutdown" => self.lifecycle.shutdown.store(true, Ordering::SeqCst),
            "exit" => self.lifecycle.exited.notify_one(),
            _ => {}
        }
        if !is_request {
            return Box::pin(future);
        }
        // Every request gets a snapshot; one whose handler does not read it drops it when it is
        // answered.
        let (reply, receiver) = oneshot::channel();
        let _ = self.tasks.send(Task::Snapshot(reply));
        Box::pin(ARRIVAL.scope(RefCell::new(Some(receiver)), future))
    }
}

impl<S> Dispatch<S> {
    /// Sends a document notification to the host, or, when it cannot be read, the loss of its
    /// document.
    fn synchronise(&self, request: Request) {
        let (method, _, params) = request.into_parts();
        let params = params.unwrap_or(Value::Null);
        let uri = document_uri(&params);
        let task = match method.as_ref() {
            DID_OPEN => read(params).map(|p: lsp::DidOpenTextDocumentParams| Task::Open {
                uri: p.text_document.uri,
                version: p.text_document.version,
                text: p.text_document.text,
            }),
            DID_CHANGE => read(params).map(|p: lsp::DidChangeTextDocumentParams| Task::Change {
                uri: p.text_document.uri,
                version: p.text_document.version,
                changes: p.content_changes,
            }),
            DID_CLOSE => read(params)
                .map(|p: lsp::DidCloseTextDocumentParams| Task::Close { uri: p.text_document.uri }),
            _ => read(params).map(|p: lsp::DidChangeWatchedFilesParams| {
                Task::FilesChanged(p.changes.into_iter().map(|c| c.uri).collect())
            }),
        };
        let task = task.unwrap_or_else(|err| Task::Lost {
            uri,
            reason: format!("cannot read a `{method}` notification: {err}"),
        });
        let _ = self.tasks.send(task);
    }

    /// Reports a message that could not be read; one that was about a document's text loses
    /// that document.
    fn malformed(&self, request: &Request) {
        let params = request.params().cloned().unwrap_or(Value::Null);
        let method =
            params["method"].as_str().filter(|m| [DID_OPEN, DID_CHANGE, DID_CLOSE].contains(m));
        let message = params["message"].as_str().unwrap_or("a malformed message");
        let (uri, reason) = match method {
            Some(method) => {
                (document_uri(&params), format!("cannot read a `{method}` notification: {message}"))
            }
            None => (None, format!("cannot read a message: {message}")),
        };
        let _ = self.tasks.send(Task::Lost { uri, reason });
    }
}

fn read<T: DeserializeOwned>(params: Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(params)
}

/// The `textDocument.uri` of a message's params, if it has a readable one.
fn document_uri(params: &Value) -> Option<lsp::Url> {
    params["textDocument"]["uri"].as_str().and_then(|uri| lsp::Url::parse(uri).ok())
}
