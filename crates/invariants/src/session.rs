//! The language server's promises on any session: no panic (not even one the server catches and
//! turns into an error response), every frame it writes is well-formed JSON-RPC, every request
//! gets one answer within [`REQUEST_TIME_LIMIT`], and `shutdown` then `exit` end it.
//!
//! A session comes from the fuzzer's bytes, split at NUL bytes: the first piece is the text of
//! the document opened after `initialize`; each later piece is one message. A piece that starts
//! with `{` is sent as the body of a frame, whatever it holds (except an early `exit` or
//! `shutdown`); one that starts with `Content-` is sent as raw bytes, with no frame around it
//! (after which the stream cannot be trusted, so the session just ends); any other piece picks a
//! request or notification from its first byte, a position from the next two, and takes the rest
//! as text (new text for an edit, a new name, a query).

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};

/// How long a request may take, from the moment the last message is sent.
pub const REQUEST_TIME_LIMIT: Duration = Duration::from_secs(5);

/// The document every session opens.
const URI: &str = "file:///fuzz/main.nb";

/// Ids of the session's own requests start here, above what a raw frame is likely to use.
const FIRST_ID: i64 = 1_000_000;

/// Runs one session from the fuzzer's bytes and checks the promises.
pub fn session_bytes(data: &[u8]) {
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(runtime) => runtime,
            Err(err) => panic!("cannot start a runtime: {err}"),
        };
    runtime.block_on(session(data));
    // Dropping the runtime waits for the handlers still running, so that nothing of this
    // session runs into the next.
    drop(runtime);
}

async fn session(data: &[u8]) {
    let mut pieces = data.split(|&b| b == 0);
    let text = String::from_utf8_lossy(pieces.next().unwrap_or_default()).into_owned();
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    let serve = tokio::spawn(::lsp::serve(server_read, server_write));
    let (client_read, mut writer) = tokio::io::split(client);
    let (frames, mut received) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(read_frames(client_read, frames));
    let mut client = Client { next_id: FIRST_ID, pending: Vec::new(), version: 1 };

    let initialize = client.request("initialize", json!({ "processId": null, "capabilities": {} }));
    send(&mut writer, &initialize).await;
    client.answers(&mut received, &mut writer).await;
    send(&mut writer, &notification("initialized", json!({}))).await;
    let open = json!({ "textDocument": { "uri": URI, "languageId": "nabla", "version": 1, "text": text } });
    send(&mut writer, &notification("textDocument/didOpen", open)).await;

    let mut trusted = true;
    for piece in pieces {
        if piece.starts_with(b"Content-") {
            let _ = writer.write_all(piece).await;
            trusted = false;
            break;
        }
        if piece.starts_with(b"{") {
            if !ends_session(piece) {
                let _ = write_frame(&mut writer, piece).await;
            }
            continue;
        }
        let message = client.message(piece);
        send(&mut writer, &message).await;
    }
    if trusted {
        client.answers(&mut received, &mut writer).await;
        let shutdown = client.request("shutdown", Value::Null);
        send(&mut writer, &shutdown).await;
        client.answers(&mut received, &mut writer).await;
        send(&mut writer, &notification("exit", Value::Null)).await;
    }
    drop(writer);
    match tokio::time::timeout(REQUEST_TIME_LIMIT, serve).await {
        Ok(Ok(Ok(shut_down))) => {
            assert!(!trusted || shut_down, "exit after shutdown was not clean")
        }
        Ok(Ok(Err(err))) => panic!("the server failed: {err}"),
        Ok(Err(err)) => panic!("the server task failed: {err}"),
        Err(_) => panic!("the server did not stop within {REQUEST_TIME_LIMIT:?} of exit"),
    }
}

/// Whether a raw frame body would end the session early: a `shutdown` or `exit`.
fn ends_session(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    text.contains("exit") || text.contains("shutdown")
}

struct Client {
    next_id: i64,
    /// The session's requests not answered yet.
    pending: Vec<i64>,
    version: i32,
}

impl Client {
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.pending.push(id);
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    }

    /// Waits for the answers to every pending request, answering the server's own requests
    /// meanwhile.
    async fn answers(
        &mut self,
        received: &mut tokio::sync::mpsc::UnboundedReceiver<Value>,
        writer: &mut (impl AsyncWrite + Unpin),
    ) {
        let deadline = tokio::time::Instant::now() + REQUEST_TIME_LIMIT;
        while !self.pending.is_empty() {
            let frame = match tokio::time::timeout_at(deadline, received.recv()).await {
                Ok(Some(frame)) => frame,
                Ok(None) => panic!("the server closed its output; unanswered: {:?}", self.pending),
                Err(_) => panic!(
                    "requests {:?} were not answered within {REQUEST_TIME_LIMIT:?}",
                    self.pending
                ),
            };
            match (frame.get("id").and_then(Value::as_i64), frame.get("method")) {
                (Some(id), None) => self.pending.retain(|&p| p != id),
                (Some(_), Some(_)) => {
                    let reply = json!({ "jsonrpc": "2.0", "id": frame["id"], "result": null });
                    send(writer, &reply).await;
                }
                _ => {}
            }
        }
    }

    /// The message a piece of fuzzer input picks.
    fn message(&mut self, piece: &[u8]) -> Value {
        let byte = |i: usize| piece.get(i).copied().unwrap_or(0);
        let position = |i: usize| {
            let coordinate =
                |b: u8| if b >= 250 { u32::MAX - u32::from(b) } else { u32::from(b % 50) };
            json!({ "line": coordinate(byte(i)), "character": coordinate(byte(i + 1)) })
        };
        let rest = String::from_utf8_lossy(piece.get(5..).unwrap_or_default()).into_owned();
        let document =
            json!({ "uri": if byte(4) % 16 == 15 { "file:///fuzz/other.nb" } else { URI } });
        let at = json!({ "textDocument": document, "position": position(1) });
        let range = json!({ "start": position(1), "end": position(3) });
        let in_range = json!({ "textDocument": document, "range": range });
        match byte(0) % 24 {
            0 => self.request("textDocument/hover", at),
            1 => self.request("textDocument/completion", at),
            2 => self.request("textDocument/signatureHelp", at),
            3 => self.request("textDocument/definition", at),
            4 => {
                let mut params = at;
                params["context"] = json!({ "includeDeclaration": byte(4) % 2 == 0 });
                self.request("textDocument/references", params)
            }
            5 => self.request("textDocument/documentHighlight", at),
            6 => self.request("textDocument/prepareRename", at),
            7 => {
                let mut params = at;
                params["newName"] = json!(rest);
                self.request("textDocument/rename", params)
            }
            8 => self.request("textDocument/inlayHint", in_range),
            9 => self
                .request("textDocument/semanticTokens/full", json!({ "textDocument": document })),
            10 => self.request("textDocument/documentSymbol", json!({ "textDocument": document })),
            11 => self.request("workspace/symbol", json!({ "query": rest })),
            12 => self.request("textDocument/foldingRange", json!({ "textDocument": document })),
            13 => {
                let options = json!({ "tabSize": byte(1), "insertSpaces": byte(2) % 2 == 0 });
                self.request(
                    "textDocument/formatting",
                    json!({ "textDocument": document, "options": options }),
                )
            }
            14 => {
                let mut params = in_range;
                params["context"] = json!({ "diagnostics": [] });
                self.request("textDocument/codeAction", params)
            }
            15 => self.request("textDocument/codeLens", json!({ "textDocument": document })),
            16 => {
                // A cancellation of an earlier request of the session.
                let id = FIRST_ID + i64::from(byte(1)) % (self.next_id - FIRST_ID).max(1);
                notification("$/cancelRequest", json!({ "id": id }))
            }
            17 => self.request(&format!("nabla/{rest}"), json!({})),
            18 => {
                let mut document = document;
                document["version"] = json!(self.next_version(byte(1)));
                let change =
                    json!({ "textDocument": document, "contentChanges": [{ "text": rest }] });
                notification("textDocument/didChange", change)
            }
            19 => {
                let uri = document["uri"].clone();
                let open = json!({ "uri": uri, "languageId": "nabla", "version": 1, "text": rest });
                notification("textDocument/didOpen", json!({ "textDocument": open }))
            }
            20 => notification("textDocument/didClose", json!({ "textDocument": document })),
            _ => {
                let mut document = document;
                document["version"] = json!(self.next_version(byte(4)));
                let change = json!({ "range": range, "text": rest });
                let params = json!({ "textDocument": document, "contentChanges": [change] });
                notification("textDocument/didChange", params)
            }
        }
    }

    /// The next version of the document, or now and then one out of order.
    fn next_version(&mut self, byte: u8) -> i32 {
        self.version += 1;
        match byte % 8 {
            0 => self.version - 2,
            1 => self.version + 1,
            _ => self.version,
        }
    }
}

fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

async fn send(writer: &mut (impl AsyncWrite + Unpin), message: &Value) {
    // A server that stopped reading is noticed when its answers do not come.
    let _ = write_frame(writer, message.to_string().as_bytes()).await;
}

async fn write_frame(writer: &mut (impl AsyncWrite + Unpin), body: &[u8]) -> std::io::Result<()> {
    writer.write_all(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

/// Reads the server's frames until its output closes; each must be a well-formed frame holding a
/// JSON-RPC message.
async fn read_frames(
    reader: impl AsyncRead + Unpin,
    frames: tokio::sync::mpsc::UnboundedSender<Value>,
) {
    let mut reader = BufReader::new(reader);
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            match reader.read_line(&mut line).await {
                Ok(0) => return,
                Ok(_) => {}
                Err(err) => panic!("cannot read the server's output: {err}"),
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some(value) = line.strip_prefix("Content-Length: ") {
                length = value.parse::<usize>().ok();
            }
        }
        let Some(length) = length else { panic!("a frame from the server has no Content-Length") };
        let mut body = vec![0; length];
        if let Err(err) = reader.read_exact(&mut body).await {
            panic!("a frame from the server is cut short: {err}");
        }
        let message: Value = match serde_json::from_slice(&body) {
            Ok(message) => message,
            Err(err) => panic!("the server wrote a frame that is not JSON ({err})"),
        };
        assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC 2.0: {message}");
        if frames.send(message).is_err() {
            return;
        }
    }
}
