//! `nabla lsp` end to end: each test starts the server as a subprocess and speaks JSON-RPC to it
//! over stdio as an editor does: open, edit incrementally, watch diagnostics appear and
//! disappear, hover, go to definition across an import, rename, complete, format, and ask for
//! inlay hints, semantic tokens and the rest; and it checks that bad requests and a panicking
//! request leave the server serving.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, Stdio},
    sync::mpsc::{Receiver, RecvTimeoutError, channel},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(20);

/// A running `nabla lsp` and what it has sent that no one has read yet.
struct Server {
    child: Child,
    stdin: ChildStdin,
    messages: Receiver<Value>,
    /// Notifications and requests from the server, in arrival order.
    notifications: Vec<Value>,
    next_id: i64,
}

impl Server {
    fn start(root: &Path) -> Server {
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
                "capabilities": {},
                "initializationOptions": {
                    "testCodeLens": { "enable": true, "command": "nabla.runTest" }
                }
            }),
        );
        assert!(result["result"]["capabilities"]["hoverProvider"].as_bool().unwrap_or(false));
        server.notify("initialized", json!({}));
        server
    }

    fn send(&mut self, message: Value) {
        let body = message.to_string();
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        self.stdin
            .write_all(frame.as_bytes())
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|err| panic!("cannot write to the server: {err}"));
    }

    /// Writes bytes as they are, framed or not.
    fn send_raw(&mut self, bytes: &str) {
        self.stdin
            .write_all(bytes.as_bytes())
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|err| panic!("cannot write to the server: {err}"));
    }

    /// The next response with id `null`: the answer to a message that could not be read.
    fn null_id_response(&mut self) -> Value {
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

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Sends a request without waiting; returns its id.
    fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        id
    }

    /// The whole response (with `result` or `error`) to request `id`.
    fn response(&mut self, id: i64) -> Value {
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

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    /// The `result` of a request that must succeed.
    fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    fn next_message(&mut self, deadline: Instant, what: &str) -> Value {
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
    fn diagnostics(&mut self, uri: &str, accept: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        let mut index = 0;
        loop {
            while index < self.notifications.len() {
                let message = &self.notifications[index];
                if message["method"] == "textDocument/publishDiagnostics"
                    && message["params"]["uri"] == uri
                {
                    let params = self.notifications.remove(index)["params"].clone();
                    if accept(&params) {
                        return params;
                    }
                    continue;
                }
                index += 1;
            }
            let message = self.next_message(deadline, &format!("diagnostics for {uri}"));
            if message.get("method").is_some() {
                self.notifications.push(message);
            }
        }
    }

    fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({ "textDocument": { "uri": uri, "languageId": "nabla", "version": 1, "text": text } }),
        );
    }

    fn change(&mut self, uri: &str, version: i32, changes: Value) {
        self.notify(
            "textDocument/didChange",
            json!({ "textDocument": { "uri": uri, "version": version }, "contentChanges": changes }),
        );
    }

    /// `shutdown` and `exit`, and the exit status.
    fn stop(mut self) -> Option<i32> {
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

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

fn workspace(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nabla-lsp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|err| panic!("{err}"));
    for (path, text) in files {
        std::fs::write(dir.join(path), text).unwrap_or_else(|err| panic!("{err}"));
    }
    dir
}

fn position(line: u32, character: u32) -> Value {
    json!({ "line": line, "character": character })
}

fn range(start: (u32, u32), end: (u32, u32)) -> Value {
    json!({ "start": position(start.0, start.1), "end": position(end.0, end.1) })
}

fn at(uri: &str, line: u32, character: u32) -> Value {
    json!({ "textDocument": { "uri": uri }, "position": position(line, character) })
}

const MAIN: &str = "import \"lib.nb\";
var Tensor w[2][3] = zeros([2, 3]);
float y = sum(w) + undefined_name;
print(square(y));

test \"adds up\" {
    assert(1 + 1 == 2);
}
";

const LIB: &str = "function float square(float x) {
    return x * x;
}
";

#[test]
fn diagnostics_appear_and_disappear_with_incremental_edits() {
    let dir = workspace("diagnostics", &[("lib.nb", LIB)]);
    let main = uri(&dir.join("main.nb"));
    let mut server = Server::start(&dir);
    server.open(&main, MAIN);
    let published =
        server.diagnostics(&main, |p| p["diagnostics"].as_array().is_some_and(|d| !d.is_empty()));
    let diagnostic = &published["diagnostics"][0];
    assert_eq!(published["version"], 1);
    assert_eq!(diagnostic["code"], "E0100");
    assert_eq!(diagnostic["source"], "nabla");
    assert_eq!(diagnostic["severity"], 1);
    assert_eq!(diagnostic["range"], range((2, 19), (2, 33)));

    // Replace `undefined_name` with `1.0`: the error goes.
    server.change(&main, 2, json!([{ "range": range((2, 19), (2, 33)), "text": "1.0" }]));
    let published = server.diagnostics(&main, |p| p["version"] == 2);
    assert_eq!(published["diagnostics"], json!([]));

    // Delete the `;` after `1.0`: a syntax error with a fix-it appears.
    server.change(&main, 3, json!([{ "range": range((2, 22), (2, 23)), "text": "" }]));
    let published = server.diagnostics(&main, |p| p["version"] == 3);
    assert_eq!(published["diagnostics"][0]["code"], "E0002");
    let actions = server.result(
        "textDocument/codeAction",
        json!({
            "textDocument": { "uri": main },
            "range": range((2, 22), (2, 22)),
            "context": { "diagnostics": [] }
        }),
    );
    assert_eq!(actions[0]["title"], "insert `;`");
    assert_eq!(actions[0]["edit"]["changes"][&main][0]["newText"], ";");

    // Put it back, in two changes of one notification.
    server.change(
        &main,
        4,
        json!([
            { "range": range((2, 22), (2, 22)), "text": "; // a" },
            { "range": range((2, 24), (2, 28)), "text": "" }
        ]),
    );
    let published = server.diagnostics(&main, |p| p["version"] == 4);
    assert_eq!(published["diagnostics"], json!([]));
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn hover_definition_rename_and_completion() {
    let dir = workspace("navigation", &[("lib.nb", LIB)]);
    let main = uri(&dir.join("main.nb"));
    let lib = uri(&dir.join("lib.nb"));
    let mut server = Server::start(&dir);
    server.open(&main, MAIN);

    let hover = server.result("textDocument/hover", at(&main, 2, 14));
    assert_eq!(hover["contents"]["kind"], "markdown");
    let text = hover["contents"]["value"].as_str().unwrap_or_default();
    assert!(text.contains("var Tensor[2][3] w"), "{text}");
    assert_eq!(hover["range"], range((2, 14), (2, 15)));

    // `square` is defined in lib.nb, which is not open: the server read it from disk.
    let definition = server.result("textDocument/definition", at(&main, 3, 7));
    assert_eq!(definition, json!([{ "uri": lib, "range": range((0, 15), (0, 21)) }]));

    let references = server.result(
        "textDocument/references",
        json!({
            "textDocument": { "uri": main },
            "position": position(1, 12),
            "context": { "includeDeclaration": true }
        }),
    );
    assert_eq!(references.as_array().map(Vec::len), Some(2));

    let prepared = server.result("textDocument/prepareRename", at(&main, 2, 6));
    assert_eq!(prepared, range((2, 6), (2, 7)));
    let mut rename = at(&main, 2, 6);
    rename["newName"] = json!("total");
    let edit = server.result("textDocument/rename", rename);
    let edits = edit["changes"][&main].as_array().cloned().unwrap_or_default();
    assert_eq!(edits.len(), 2, "{edit}");
    assert!(edits.iter().all(|e| e["newText"] == "total"));
    let mut rename = at(&main, 2, 6);
    rename["newName"] = json!("loop");
    let refused = server.request("textDocument/rename", rename);
    assert!(refused["error"]["message"].as_str().unwrap_or_default().contains("keyword"));

    let completion = server.result("textDocument/completion", at(&main, 3, 6));
    let labels: Vec<&str> = completion
        .as_array()
        .map(|items| items.iter().filter_map(|i| i["label"].as_str()).collect())
        .unwrap_or_default();
    for expected in ["softmax", "w", "y", "square"] {
        assert!(labels.contains(&expected), "{expected} missing from {labels:?}");
    }

    let help = server.result("textDocument/signatureHelp", at(&main, 3, 13));
    assert_eq!(help["signatures"][0]["label"], "float square(float x)");

    // Edit lib.nb in the editor: main.nb's diagnostics follow the open text.
    server.open(&lib, LIB);
    server.change(&lib, 2, json!([{ "range": range((0, 15), (0, 21)), "text": "squared" }]));
    let published = server.diagnostics(&main, |p| {
        p["diagnostics"]
            .as_array()
            .is_some_and(|d| d.iter().any(|d| d["range"] == range((3, 6), (3, 12))))
    });
    assert!(published["diagnostics"].to_string().contains("square"));
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn formatting_hints_tokens_symbols_folds_and_lenses() {
    let text = "Tensor a[2][3];\nTensor p = a * 2.0;\nfunction float f(float x){return x*2.0;}\ntest \"f\" {\n    assert(f(1.0) == 2.0);\n}\n";
    let dir = workspace("features", &[]);
    let main = uri(&dir.join("main.nb"));
    let mut server = Server::start(&dir);
    server.open(&main, text);
    let document = json!({ "textDocument": { "uri": main } });

    let edits = server.result(
        "textDocument/formatting",
        json!({ "textDocument": { "uri": main }, "options": { "tabSize": 4, "insertSpaces": true } }),
    );
    assert_eq!(edits.as_array().map(Vec::len), Some(1), "{edits}");
    assert_eq!(edits[0]["newText"], " {\n    return x * 2.0;\n");
    assert_eq!(edits[0]["range"], range((2, 25), (2, 39)));

    let hints = server.result(
        "textDocument/inlayHint",
        json!({ "textDocument": { "uri": main }, "range": range((0, 0), (6, 0)) }),
    );
    assert_eq!(hints[0]["label"], "[2][3]");
    assert_eq!(hints[0]["position"], position(1, 8));

    let tokens = server.result("textDocument/semanticTokens/full", document.clone());
    let data = tokens["data"].as_array().cloned().unwrap_or_default();
    assert_eq!(data.len() % 5, 0);
    // The first token is `Tensor`, a type (index 6 of the legend), at 0:0, 6 long.
    assert_eq!(data[..5], [json!(0), json!(0), json!(6), json!(6), json!(0)]);

    let symbols = server.result("textDocument/documentSymbol", document.clone());
    let names: Vec<&str> = symbols
        .as_array()
        .map(|s| s.iter().filter_map(|s| s["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["a", "p", "f", "f"]);
    let workspace_symbols = server.result("workspace/symbol", json!({ "query": "f" }));
    assert!(workspace_symbols.as_array().is_some_and(|s| !s.is_empty()));

    let folds = server.result("textDocument/foldingRange", document.clone());
    assert_eq!(folds, json!([{ "startLine": 3, "endLine": 4 }]));

    let lenses = server.result("textDocument/codeLens", document.clone());
    assert_eq!(lenses[0]["command"]["command"], "nabla.runTest");
    assert_eq!(lenses[0]["command"]["arguments"], json!([main, "f"]));
    assert_eq!(lenses[0]["range"], range((3, 0), (3, 8)));

    let highlights = server.result("textDocument/documentHighlight", at(&main, 1, 12));
    assert_eq!(highlights.as_array().map(Vec::len), Some(2));
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn positions_are_utf16() {
    // `𝕏` is one character, four bytes in UTF-8 and two code units in UTF-16.
    let text = "float y = 1.0; /* 𝕏é */ float z = y + nope;\nprint(z);\n";
    let dir = workspace("utf16", &[]);
    let main = uri(&dir.join("main.nb"));
    let mut server = Server::start(&dir);
    server.open(&main, text);
    // `nope` starts at character 39 in UTF-16 (41 bytes in).
    let published = server.diagnostics(&main, |p| p["version"] == 1);
    assert_eq!(published["diagnostics"][0]["range"], range((0, 39), (0, 43)));
    let hover = server.result("textDocument/hover", at(&main, 0, 35));
    assert!(hover["contents"]["value"].as_str().unwrap_or_default().contains("float y"));
    assert_eq!(hover["range"], range((0, 35), (0, 36)));
    // Replace `nope` by an incremental edit in UTF-16 columns.
    server.change(&main, 2, json!([{ "range": range((0, 39), (0, 43)), "text": "y" }]));
    let published = server.diagnostics(&main, |p| p["version"] == 2);
    assert_eq!(published["diagnostics"], json!([]));
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn edits_apply_in_order() {
    let dir = workspace("order", &[]);
    let main = uri(&dir.join("main.nb"));
    let mut server = Server::start(&dir);
    server.open(&main, "int v0 = 0;\n");
    // Each change appends a line at the end of the text the change before it left, so a change
    // applied out of order would land in the middle of a line.
    for i in 1..=60u32 {
        let line = format!("int v{i} = v{} + 1;\n", i - 1);
        server.change(
            &main,
            (i + 1) as i32,
            json!([{ "range": range((i, 0), (i, 0)), "text": line }]),
        );
    }
    // Versions 63 and 62 arrive swapped: the server waits for 62 before applying 63.
    server.change(
        &main,
        63,
        json!([{ "range": range((62, 0), (62, 0)), "text": "print(v61);\n" }]),
    );
    server.change(
        &main,
        62,
        json!([{ "range": range((61, 0), (61, 0)), "text": "int v61 = v60 + 1;\n" }]),
    );
    let published = server.diagnostics(&main, |p| p["version"] == 63);
    assert_eq!(published["diagnostics"], json!([]));
    let hover = server.result("textDocument/hover", at(&main, 62, 7));
    assert!(hover["contents"]["value"].as_str().unwrap_or_default().contains("int v61"), "{hover}");
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn bad_requests_and_a_panic_leave_the_server_serving() {
    let dir = workspace("robust", &[]);
    let main = uri(&dir.join("main.nb"));
    let mut server = Server::start(&dir);
    server.open(&main, "float y = 1.0;\nprint(y);\n");

    // An unknown document and a position past the end: empty answers.
    let unknown = uri(&dir.join("unknown.nb"));
    assert_eq!(server.result("textDocument/hover", at(&unknown, 0, 0)), Value::Null);
    assert_eq!(server.result("textDocument/hover", at(&main, 1000, 3)), Value::Null);
    assert!(server.result("textDocument/completion", at(&main, 0, 9999)).is_array());
    assert_eq!(
        server.result(
            "textDocument/semanticTokens/full",
            json!({ "textDocument": { "uri": unknown } })
        ),
        Value::Null
    );

    // Malformed parameters: an error response.
    let malformed = server.request("textDocument/hover", json!({ "textDocument": 42 }));
    assert_eq!(malformed["error"]["code"], -32602, "{malformed}");
    let malformed = server.request("textDocument/definition", json!("nonsense"));
    assert!(malformed.get("error").is_some());
    // Malformed notifications and edits to unknown documents are ignored.
    server.notify("textDocument/didChange", json!({ "textDocument": { "uri": main } }));
    server.change(&unknown, 2, json!([{ "text": "int a = 1;" }]));
    server.change(&main, 2, json!([{ "range": range((50, 0), (60, 0)), "text": "print(y);\n" }]));

    // A panic inside a request: an internal error for that request only.
    let panicked = server.request("nabla/testPanic", json!({}));
    assert_eq!(panicked["error"]["code"], -32603, "{panicked}");

    // Frames that cannot be read: a JSON-RPC error with id null each, and the server reads on.
    server.send_raw("Content-Length: 9\r\n\r\n{ return ");
    assert_eq!(server.null_id_response()["error"]["code"], -32700);
    server.send_raw("Content-Length: 8\r\n\r\n{\"id\":1}");
    assert_eq!(server.null_id_response()["error"]["code"], -32600);
    server.send_raw("garbage\r\n");
    assert_eq!(server.null_id_response()["error"]["code"], -32700);

    // A request overtaken by an edit is answered, with a result or `ContentModified`.
    let id = server.send_request("textDocument/hover", at(&main, 1, 6));
    server.change(&main, 3, json!([{ "range": range((0, 0), (0, 0)), "text": "// edited\n" }]));
    let raced = server.response(id);
    assert!(raced.get("result").is_some() || raced["error"]["code"] == -32801, "{raced}");

    // And a valid request still works, on the latest text.
    let hover = server.result("textDocument/hover", at(&main, 2, 6));
    assert!(hover["contents"]["value"].as_str().unwrap_or_default().contains("float y"), "{hover}");
    let published = server.diagnostics(&main, |p| p["version"] == 3);
    assert_eq!(published["diagnostics"], json!([]));
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn imports_are_read_from_disk_and_again_when_they_change() {
    let main_text = "import \"lib.nb\";\nprint(square(2.0));\n";
    let dir = workspace("watch", &[("lib.nb", LIB)]);
    let main = uri(&dir.join("main.nb"));
    let lib = uri(&dir.join("lib.nb"));
    let mut server = Server::start(&dir);
    server.open(&main, main_text);
    let published = server.diagnostics(&main, |p| p["version"] == 1);
    assert_eq!(published["diagnostics"], json!([]));
    // Rename the function on disk and say so: `square` is now unknown in main.nb.
    std::fs::write(dir.join("lib.nb"), LIB.replace("square", "cube"))
        .unwrap_or_else(|err| panic!("{err}"));
    server.notify(
        "workspace/didChangeWatchedFiles",
        json!({ "changes": [{ "uri": lib, "type": 2 }] }),
    );
    let published =
        server.diagnostics(&main, |p| p["diagnostics"].as_array().is_some_and(|d| !d.is_empty()));
    assert_eq!(published["diagnostics"][0]["code"], "E0100");
    assert_eq!(published["diagnostics"][0]["range"], range((1, 6), (1, 12)));
    assert_eq!(server.stop(), Some(0));
}
