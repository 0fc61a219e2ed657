//! The tower-lsp [`LanguageServer`]: each request runs its handler on the snapshot it was given
//! when it arrived (`dispatch.rs`), on a blocking thread, where a panic becomes an error
//! response and a cancellation by a newer edit becomes `ContentModified`. Document
//! notifications never reach it: `dispatch.rs` sends them to the host in arrival order.

use std::{
    panic::AssertUnwindSafe,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
};

use serde_json::Value;
use tower_lsp::{
    Client, LanguageServer,
    jsonrpc::{self, Error, ErrorCode},
    lsp_types as lsp,
};

use crate::{
    Config, convert, dispatch, handlers,
    handlers::{HandlerResult, RequestError},
    host::{Snapshot, Task},
};

pub(crate) struct Server {
    pub(crate) client: Client,
    /// The host thread's channel. `mpsc::Sender` is `Sync`, so handlers send without waiting.
    pub(crate) tasks: mpsc::Sender<Task>,
    /// Whether the test-only requests are answered (`NABLA_LSP_TEST_HOOKS=1`).
    pub(crate) test_hooks: bool,
    /// Whether the client lets the server register a watcher for `.nb` files, so that imports
    /// changed on disk are read again.
    pub(crate) watch_files: AtomicBool,
}

impl Server {
    fn send(&self, task: Task) {
        // The host thread lives as long as the server; if it is gone there is nothing to do.
        let _ = self.tasks.send(task);
    }

    /// Runs `handler` on a snapshot, off the async runtime.
    async fn run<P, R>(
        &self,
        method: &'static str,
        params: P,
        handler: fn(Snapshot, P) -> HandlerResult<R>,
    ) -> jsonrpc::Result<R>
    where
        P: Send + 'static,
        R: Send + 'static,
    {
        let snapshot = dispatch::arrival_snapshot().await.ok_or_else(Error::internal_error)?;
        let task = tokio::task::spawn_blocking(move || {
            std::panic::catch_unwind(AssertUnwindSafe(|| handler(snapshot, params)))
        });
        match task.await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(RequestError::Cancelled))) => Err(content_modified()),
            Ok(Ok(Err(RequestError::Failed(message)))) => {
                Err(Error { code: ErrorCode::InvalidRequest, message: message.into(), data: None })
            }
            Ok(Err(payload)) => {
                if payload.downcast_ref::<ide::Cancelled>().is_some() {
                    return Err(content_modified());
                }
                let message = panic_message(&payload);
                self.client
                    .log_message(lsp::MessageType::ERROR, format!("{method} panicked: {message}"))
                    .await;
                Err(Error {
                    code: ErrorCode::InternalError,
                    message: format!("{method} failed: {message}").into(),
                    data: None,
                })
            }
            Err(join_error) => Err(Error {
                code: ErrorCode::InternalError,
                message: format!("{method} failed: {join_error}").into(),
                data: None,
            }),
        }
    }

    /// A test-only request whose handler panics, to show that a panic in one request leaves the
    /// server serving.
    pub(crate) async fn test_panic(&self, _params: Value) -> jsonrpc::Result<Value> {
        if !self.test_hooks {
            return Err(Error::method_not_found());
        }
        self.run("nabla/testPanic", (), |_, ()| -> HandlerResult<Value> {
            panic!("a panic requested by nabla/testPanic")
        })
        .await
    }
}

fn content_modified() -> Error {
    Error {
        code: ErrorCode::ContentModified,
        message: "the document changed; ask again".into(),
        data: None,
    }
}

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        return (*text).to_owned();
    }
    if let Some(text) = payload.downcast_ref::<String>() {
        return text.clone();
    }
    "a panic without a message".to_owned()
}

/// Reads the `initializationOptions` and the client's capabilities; anything malformed means the
/// defaults.
fn config_from(params: &lsp::InitializeParams) -> Config {
    let options = params.initialization_options.as_ref();
    let lens = options.and_then(|o| o.get("testCodeLens"));
    let enabled = lens.and_then(|l| l.get("enable")).and_then(Value::as_bool).unwrap_or(false);
    let command = lens.and_then(|l| l.get("command")).and_then(Value::as_str).map(str::to_owned);
    let workspace = params.capabilities.workspace.as_ref();
    let document_changes = workspace
        .and_then(|w| w.workspace_edit.as_ref())
        .and_then(|e| e.document_changes)
        .unwrap_or(false);
    Config { test_code_lens: if enabled { command } else { None }, document_changes }
}

fn capabilities() -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        position_encoding: Some(lsp::PositionEncodingKind::UTF16),
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
            lsp::TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                ..Default::default()
            },
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        // `.` asks for the fields of a record.
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec![".".to_owned()]),
            ..Default::default()
        }),
        signature_help_provider: Some(lsp::SignatureHelpOptions {
            trigger_characters: Some(vec!["(".to_owned(), ",".to_owned()]),
            ..Default::default()
        }),
        definition_provider: Some(lsp::OneOf::Left(true)),
        references_provider: Some(lsp::OneOf::Left(true)),
        document_highlight_provider: Some(lsp::OneOf::Left(true)),
        rename_provider: Some(lsp::OneOf::Right(lsp::RenameOptions {
            prepare_provider: Some(true),
            work_done_progress_options: Default::default(),
        })),
        inlay_hint_provider: Some(lsp::OneOf::Left(true)),
        semantic_tokens_provider: Some(
            lsp::SemanticTokensServerCapabilities::SemanticTokensOptions(
                lsp::SemanticTokensOptions {
                    legend: lsp::SemanticTokensLegend {
                        token_types: convert::TOKEN_TYPES.to_vec(),
                        token_modifiers: convert::token_modifiers(),
                    },
                    full: Some(lsp::SemanticTokensFullOptions::Bool(true)),
                    range: None,
                    work_done_progress_options: Default::default(),
                },
            ),
        ),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        workspace_symbol_provider: Some(lsp::OneOf::Left(true)),
        folding_range_provider: Some(lsp::FoldingRangeProviderCapability::Simple(true)),
        document_formatting_provider: Some(lsp::OneOf::Left(true)),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Options(
            lsp::CodeActionOptions {
                code_action_kinds: Some(vec![lsp::CodeActionKind::QUICKFIX]),
                ..Default::default()
            },
        )),
        // The run-test command belongs to the client: it is not in `execute_command_provider`.
        code_lens_provider: Some(lsp::CodeLensOptions { resolve_provider: Some(false) }),
        ..Default::default()
    }
}

#[tower_lsp::async_trait]
impl LanguageServer for Server {
    async fn initialize(
        &self,
        params: lsp::InitializeParams,
    ) -> jsonrpc::Result<lsp::InitializeResult> {
        self.send(Task::SetConfig(config_from(&params)));
        let watch = params
            .capabilities
            .workspace
            .and_then(|w| w.did_change_watched_files)
            .and_then(|w| w.dynamic_registration)
            .unwrap_or(false);
        self.watch_files.store(watch, Ordering::SeqCst);
        Ok(lsp::InitializeResult {
            capabilities: capabilities(),
            server_info: Some(lsp::ServerInfo {
                name: "nabla".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
        })
    }

    async fn initialized(&self, _: lsp::InitializedParams) {
        if !self.watch_files.load(Ordering::SeqCst) {
            return;
        }
        let options = lsp::DidChangeWatchedFilesRegistrationOptions {
            watchers: vec![lsp::FileSystemWatcher {
                glob_pattern: lsp::GlobPattern::String("**/*.nb".to_owned()),
                kind: None,
            }],
        };
        let registration = lsp::Registration {
            id: "nabla-watch-files".to_owned(),
            method: "workspace/didChangeWatchedFiles".to_owned(),
            register_options: serde_json::to_value(options).ok(),
        };
        // The answer comes later; nothing waits for it.
        let client = self.client.clone();
        tokio::spawn(async move {
            if let Err(err) = client.register_capability(vec![registration]).await {
                client
                    .log_message(lsp::MessageType::WARNING, format!("cannot watch files: {err}"))
                    .await;
            }
        });
    }

    async fn shutdown(&self) -> jsonrpc::Result<()> {
        Ok(())
    }

    async fn hover(&self, params: lsp::HoverParams) -> jsonrpc::Result<Option<lsp::Hover>> {
        self.run("textDocument/hover", params, handlers::hover).await
    }

    async fn completion(
        &self,
        params: lsp::CompletionParams,
    ) -> jsonrpc::Result<Option<lsp::CompletionResponse>> {
        self.run("textDocument/completion", params, handlers::completion).await
    }

    async fn signature_help(
        &self,
        params: lsp::SignatureHelpParams,
    ) -> jsonrpc::Result<Option<lsp::SignatureHelp>> {
        self.run("textDocument/signatureHelp", params, handlers::signature_help).await
    }

    async fn goto_definition(
        &self,
        params: lsp::GotoDefinitionParams,
    ) -> jsonrpc::Result<Option<lsp::GotoDefinitionResponse>> {
        self.run("textDocument/definition", params, handlers::goto_definition).await
    }

    async fn references(
        &self,
        params: lsp::ReferenceParams,
    ) -> jsonrpc::Result<Option<Vec<lsp::Location>>> {
        self.run("textDocument/references", params, handlers::references).await
    }

    async fn document_highlight(
        &self,
        params: lsp::DocumentHighlightParams,
    ) -> jsonrpc::Result<Option<Vec<lsp::DocumentHighlight>>> {
        self.run("textDocument/documentHighlight", params, handlers::document_highlight).await
    }

    async fn prepare_rename(
        &self,
        params: lsp::TextDocumentPositionParams,
    ) -> jsonrpc::Result<Option<lsp::PrepareRenameResponse>> {
        self.run("textDocument/prepareRename", params, handlers::prepare_rename).await
    }

    async fn rename(
        &self,
        params: lsp::RenameParams,
    ) -> jsonrpc::Result<Option<lsp::WorkspaceEdit>> {
        self.run("textDocument/rename", params, handlers::rename).await
    }

    async fn inlay_hint(
        &self,
        params: lsp::InlayHintParams,
    ) -> jsonrpc::Result<Option<Vec<lsp::InlayHint>>> {
        self.run("textDocument/inlayHint", params, handlers::inlay_hints).await
    }

    async fn semantic_tokens_full(
        &self,
        params: lsp::SemanticTokensParams,
    ) -> jsonrpc::Result<Option<lsp::SemanticTokensResult>> {
        self.run("textDocument/semanticTokens/full", params, handlers::semantic_tokens).await
    }

    async fn document_symbol(
        &self,
        params: lsp::DocumentSymbolParams,
    ) -> jsonrpc::Result<Option<lsp::DocumentSymbolResponse>> {
        self.run("textDocument/documentSymbol", params, handlers::document_symbols).await
    }

    async fn symbol(
        &self,
        params: lsp::WorkspaceSymbolParams,
    ) -> jsonrpc::Result<Option<Vec<lsp::SymbolInformation>>> {
        self.run("workspace/symbol", params, handlers::workspace_symbols).await
    }

    async fn folding_range(
        &self,
        params: lsp::FoldingRangeParams,
    ) -> jsonrpc::Result<Option<Vec<lsp::FoldingRange>>> {
        self.run("textDocument/foldingRange", params, handlers::folding_ranges).await
    }

    async fn formatting(
        &self,
        params: lsp::DocumentFormattingParams,
    ) -> jsonrpc::Result<Option<Vec<lsp::TextEdit>>> {
        self.run("textDocument/formatting", params, handlers::formatting).await
    }

    async fn code_action(
        &self,
        params: lsp::CodeActionParams,
    ) -> jsonrpc::Result<Option<lsp::CodeActionResponse>> {
        self.run("textDocument/codeAction", params, handlers::code_actions).await
    }

    async fn code_lens(
        &self,
        params: lsp::CodeLensParams,
    ) -> jsonrpc::Result<Option<Vec<lsp::CodeLens>>> {
        self.run("textDocument/codeLens", params, handlers::code_lenses).await
    }
}
