//! The Nabla language server: the protocol on one side, [`ide`] on the other, over tower-lsp and
//! tokio. `nabla lsp` calls [`run_stdio`].
//!
//! - Edits: documents are synchronised incrementally. A dedicated thread owns the
//!   [`ide::AnalysisHost`] and applies edits in the order they arrived and, per document, in
//!   version order (`host.rs`), since tower-lsp may run notification handlers concurrently.
//!   Files that open documents import are read from disk into the database.
//! - Requests take a snapshot from that thread and run on tokio's blocking pool. A newer edit
//!   cancels the snapshots in flight (salsa cancellation); those requests answer
//!   `ContentModified`. A panic inside one request becomes an error response for that request;
//!   unknown documents and positions out of range get empty answers.
//! - Diagnostics are published after changes, debounced, with the version of the document they
//!   were computed for (`diagnostics.rs`).
//! - Positions are UTF-16 columns, converted by hand with [`ide::LineIndex`] (`convert.rs`);
//!   nothing below this crate knows the protocol.

mod convert;
mod diagnostics;
mod frames;
mod handlers;
mod host;
mod server;

use std::{
    future::Future,
    pin::Pin,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
};

use tower_lsp::{
    LspService, Server,
    jsonrpc::{Request, Response},
};

/// What the client asked for at initialisation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Config {
    /// The command of the "Run test" code lens, when the client wants the lens.
    pub(crate) test_code_lens: Option<String>,
}

/// Serves the protocol on standard input and output until the client says `exit` or closes the
/// input.
pub fn run_stdio() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(serve(tokio::io::stdin(), tokio::io::stdout()));
    // Blocking handlers still running belong to a client that has gone; do not wait for them.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    match result {
        Ok(true) => ExitCode::SUCCESS,
        // The protocol asks for exit code 1 when `exit` comes without `shutdown` before it.
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

/// Serves the protocol on a pair of streams until the client says `exit` (or closes the input).
/// Returns whether `shutdown` came before, which decides the exit code.
pub async fn serve<I, O>(input: I, output: O) -> std::io::Result<bool>
where
    I: tokio::io::AsyncRead + Unpin,
    O: tokio::io::AsyncWrite,
{
    let (diagnostics_sender, diagnostics_receiver) = tokio::sync::mpsc::unbounded_channel();
    let tasks = host::spawn(diagnostics_sender)?;
    let test_hooks = std::env::var_os("NABLA_LSP_TEST_HOOKS").is_some_and(|v| v == "1");
    let diagnostics_tasks = tasks.clone();
    let (service, socket) = LspService::build(move |client| {
        tokio::spawn(diagnostics::run(client.clone(), diagnostics_tasks, diagnostics_receiver));
        server::Server { client, tasks, test_hooks, watch_files: AtomicBool::new(false) }
    })
    .custom_method("nabla/testPanic", server::Server::test_panic)
    .finish();
    let lifecycle = Arc::new(Lifecycle::default());
    let service = LifecycleService { inner: service, lifecycle: lifecycle.clone() };
    // tower-lsp stops serving at `exit` but keeps reading its input until it closes; the
    // protocol says the process ends at `exit`.
    // tower-lsp reads the client's messages through `frames::forward`, which keeps a malformed
    // message from ending its input, and writes through `frames::relay`, which passes only whole
    // frames on, so that stopping the server at `exit` cannot cut the frame it is writing.
    let (to_server, from_client) = tokio::io::duplex(1 << 16);
    let (to_relay, from_server) = tokio::io::duplex(1 << 16);
    let session = async {
        let serving = async {
            tokio::join!(
                frames::forward(input, to_server),
                Server::new(from_client, to_relay, socket).serve(service)
            )
        };
        tokio::select! {
            _ = serving => {}
            () = lifecycle.exited.notified() => {}
        }
        // The server, and with it the relay's input, is dropped here.
    };
    let output = std::pin::pin!(output);
    tokio::join!(session, frames::relay(from_server, output));
    Ok(lifecycle.shutdown.load(Ordering::SeqCst))
}

/// What the client said about the end of the session.
#[derive(Default)]
struct Lifecycle {
    shutdown: AtomicBool,
    exited: tokio::sync::Notify,
}

/// Watches for `shutdown` and `exit`, drops the `null`, `[]` or `[null]` params some JSON-RPC
/// libraries send with them for "no parameters", which tower-lsp would refuse (and, for `exit`,
/// keep running), and answers the stand-ins [`frames`] sends for malformed messages.
struct LifecycleService<S> {
    inner: S,
    lifecycle: Arc<Lifecycle>,
}

type Answer<E> = Pin<Box<dyn Future<Output = Result<Option<Response>, E>> + Send>>;

impl<S> tower::Service<Request> for LifecycleService<S>
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
        if request.method() == frames::MALFORMED {
            let answer = frames::malformed_answer(&request);
            return Box::pin(std::future::ready(Ok(Some(answer))));
        }
        let empty = match request.params() {
            Some(serde_json::Value::Null) => true,
            Some(serde_json::Value::Array(items)) => items.iter().all(|v| v.is_null()),
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
        let future = self.inner.call(request);
        match method.as_str() {
            "shutdown" => self.lifecycle.shutdown.store(true, Ordering::SeqCst),
            "exit" => self.lifecycle.exited.notify_one(),
            _ => {}
        }
        Box::pin(future)
    }
}
