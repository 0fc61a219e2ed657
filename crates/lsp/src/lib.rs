//! The Nabla language server: the protocol on one side, [`ide`] on the other, over tower-lsp and
//! tokio. `nabla lsp` calls [`run_stdio`].
//!
//! - Edits: documents are synchronised incrementally. A dedicated thread owns the
//!   [`ide::AnalysisHost`] and applies edits in the order the client sent them, whatever their
//!   version numbers (`host.rs`); the order is kept by sending them from the service every
//!   message meets first, in arrival order (`dispatch.rs`), since tower-lsp runs handlers
//!   concurrently. Files that open documents import are read from disk into the database.
//! - Requests are given a snapshot from that thread when they arrive, so each is answered on the
//!   text the client had when it asked, and run on tokio's blocking pool. A newer edit cancels
//!   the snapshots in flight (salsa cancellation); those requests answer `ContentModified`. A
//!   panic inside one request becomes an error response for that request; unknown documents and
//!   positions past the end get empty answers.
//! - Diagnostics are published after changes, debounced (the changes themselves never wait),
//!   at most [`diagnostics::MAX_PUBLISHED`] at a time, with the version of the document they
//!   were computed for (`diagnostics.rs`).
//! - A message that cannot be read is answered with a JSON-RPC error (`frames.rs`); a document
//!   whose change it was is resynchronised by its next whole text, and the client's log says why.
//! - Positions are UTF-16 columns, converted by hand with [`ide::LineIndex`] (`convert.rs`);
//!   nothing below this crate knows the protocol.

mod convert;
mod diagnostics;
mod dispatch;
mod frames;
mod handlers;
mod host;
mod server;

use std::{
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use tower_lsp::{LspService, Server};

use crate::dispatch::{Dispatch, Lifecycle};

/// What the client asked for at initialisation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Config {
    /// The command of the "Run test" code lens, when the client wants the lens.
    pub(crate) test_code_lens: Option<String>,
    /// Whether the client takes workspace edits as `documentChanges`, each with the version of
    /// the document it was computed for.
    pub(crate) document_changes: bool,
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
    let (events_sender, events) = tokio::sync::mpsc::unbounded_channel();
    let tasks = host::spawn(events_sender)?;
    let test_hooks = std::env::var_os("NABLA_LSP_TEST_HOOKS").is_some_and(|v| v == "1");
    let server_tasks = tasks.clone();
    let (service, socket) = LspService::build(move |client| {
        tokio::spawn(diagnostics::run(client.clone(), server_tasks.clone(), events));
        server::Server {
            client,
            tasks: server_tasks,
            test_hooks,
            watch_files: AtomicBool::new(false),
        }
    })
    .custom_method("nabla/testPanic", server::Server::test_panic)
    .finish();
    let lifecycle = Arc::new(Lifecycle::default());
    let service = Dispatch { inner: service, lifecycle: lifecycle.clone(), tasks };
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
