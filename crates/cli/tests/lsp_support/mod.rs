//! The client side of `nabla lsp` for the protocol tests: a server started as a subprocess,
//! spoken to over stdio as an editor does, small builders for positions and ranges, and
//! `nabla fmt` for what formatting must give.

#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader, Write},
    path::Path,
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc::{Receiver, RecvTimeoutError, channel},
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tempfile::TempDir;

pub const TIMEOUT: Duration = Duration::from_secs(20);

/// A running `nabla lsp` and what it has sent that no one has read yet.
pub struct Server {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    /// Notifications and requests from the server, in arrival order.
    notifications: Vec<Value>,
    next_id: i64,
}

impl Server {
    pub fn start(root: &Path) -> Server {
        Server::start_with(root, json!({}))
    }

    /// Starts a server for a client with the given capabilities.
    pub fn start_with(root: &Path, capabilities: Value) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_nabla"))
            .arg("lsp")
            .env("NABLA_LSP_TEST_HOOKS", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start nabla lsp: {err}"));
        let stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let (sender, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if sender.send(message).is_err() {
                    return;
                }
            }
        });
        let mut server = Server { child, stdin, messages, notifications: Vec::new(), next_id: 1 };
        let result = server.request(
            "initialize",
            json!({
                "processId": null,
                "rootUri": uri(root),
                "capabilities": capabilities,
                "initializationOptions": {
                    "testCodeLens": { "enable": true, "command": "nabla.runTest" }
                }
            }),
        );
        assert!(result["result"]["capabilities"]["hoverProvider"].as_bool().unwrap_or(false));
        server.notify("initialized", json!({}));
        server
    }

    pub fn send(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.stdin
            .write_all(frame.as_bytes())
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|err| panic!("cannot write to the server: {err}"));
    }

    /// Writes bytes as they are, framed or not.
    pub fn send_raw(&mut self, bytes: impl AsRef<[u8]>) {
        self.stdin
            .write_all(bytes.as_ref())
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|err| panic!("cannot write to the server: {err}"));
    }

    /// The next response with id `null`: the answer to a message that could not be read.
    pub fn null_id_response(&mut self) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let message = self.next_message(deadline, "an error response with id null");
            if message.get("method").is_none() && message["id"] == Value::Null {
                return message;
            }
            if message.get("method").is_some() {
                self.notifications.push(message);
            }
        }
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// The whole response (with `result` or `error`) to request `id`.
    pub fn response(&mut self, id: i64) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let message = self.next_message(deadline, &format!("the response to request {id}"));
            if message.get("method").is_none() && message["id"] == json!(id) {
                return message;
            }
            if message.get("method").is_some() {
                self.notifications.push(message);
            }
        }
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// The `result` of a request that must succeed.
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    pub fn next_message(&mut self, deadline: Instant, what: &str) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.messages.recv_timeout(left) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for {what}"),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the server exited while waiting for {what}")
            }
        }
    }

    /// The first `publishDiagnostics` for `uri`, not yet consumed, that satisfies `accept`;
    /// earlier ones for that document are consumed.
    pub fn diagnostics(&mut self, uri: &str, accept: impl Fn(&Value) -> bool) -> Value {
        self.notification("textDocument/publishDiagnostics", |p| p["uri"] == uri, accept)
    }

    /// The params of the first notification of `method`, not yet consumed, that satisfies
    /// `accept`; earlier ones of that method for which `consume` holds are consumed.
    pub fn notification(
        &mut self,
        method: &str,
        consume: impl Fn(&Value) -> bool,
        accept: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        let mut index = 0;
        loop {
            while index < self.notifications.len() {
                let message = &self.notifications[index];
                if message["method"] == method && consume(&message["params"]) {
                    let params = self.notifications.remove(index)["params"].clone();
                    if accept(&params) {
                        return params;
                    }
                    continue;
                }
                index += 1;
            }
            let message = self.next_message(deadline, &format!("a {method} notification"));
            if message.get("method").is_some() {
                self.notifications.push(message);
            }
        }
    }

    pub fn open(&mut self, uri: &str, text: &str) {
        self.open_version(uri, 1, text);
    }

    pub fn open_version(&mut self, uri: &str, version: i32, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "nabla", "version": version, "text": text } }),
        );
    }

    pub fn change(&mut self, uri: &str, version: i32, changes: Value) {
        self.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": changes }),
        );
    }

    /// `shutdown` and `exit`, and the exit status.
    pub fn stop(mut self) -> Option<i32> {
        let _ = self.result("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        let deadline = Instant::now() + TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the server did not exit after `exit`");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length:") {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

pub fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// A fresh workspace directory holding `files` (name and text), removed when the guard is
/// dropped: bind it before the [`Server`] that works in it, so that it outlives the server.
pub fn workspace(name: &str, files: &[(&str, &str)]) -> TempDir {
    let dir =
        TempDir::with_prefix(format!("nabla-lsp-{name}-")).unwrap_or_else(|err| panic!("{err}"));
    for (path, text) in files {
        std::fs::write(dir.path().join(path), text).unwrap_or_else(|err| panic!("{err}"));
    }
    dir
}

pub fn position(line: u32, character: u32) -> Value {
    json!({ "line": line, "character": character })
}

pub fn range(start: (u32, u32), end: (u32, u32)) -> Value {
    json!({ "start": position(start.0, start.1), "end": position(end.0, end.1) })
}

pub fn at(uri: &str, line: u32, character: u32) -> Value {
    json!({ "textDocument": { "uri": uri }, "position": position(line, character) })
}

/// What `nabla fmt` makes of `text`.
pub fn nabla_fmt(text: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nabla"))
        .args(["fmt", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start nabla fmt: {err}"));
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(text.as_bytes()).unwrap_or_else(|err| panic!("{err}"));
    }
    let output = child.wait_with_output().unwrap_or_else(|err| panic!("{err}"));
    assert!(output.status.success(), "nabla fmt failed on:\n{text}");
    String::from_utf8(output.stdout).unwrap_or_else(|err| panic!("{err}"))
}
