//! `nabla lsp` end to end: each test starts the server as a subprocess and speaks JSON-RPC to it
//! over stdio as an editor does: open, edit incrementally, watch diagnostics appear and
//! disappear, hover, go to definition across an import, rename, complete, format, and ask for
//! signature help, inlay hints, semantic tokens and the rest; and it checks that bad requests and a panicking
//! request leave the server serving.

mod lsp_support;

use serde_json::{Value, json};

use lsp_support::{Server, at, position, range, uri, workspace};

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
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
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
    let main = uri(&dir.path().join("main.nb"));
    let lib = uri(&dir.path().join("lib.nb"));
    let mut server = Server::start(dir.path());
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
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
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
fn signature_help_shows_the_sizes_the_arguments_bind() {
    let text = "function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q]) {
    Tensor y[n - q + 1];
    return y;
}
Tensor s[8];
Tensor w[3];
Tensor out = conv1d_valid(s, w);
print(conv1d_valid(s, ));
";
    let dir = workspace("signature", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
    server.open(&main, text);

    let help = server.result("textDocument/signatureHelp", at(&main, 6, 30));
    let signature = &help["signatures"][0];
    assert_eq!(signature["label"], "Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q])");
    assert_eq!(signature["documentation"]["value"], "`n = 8, q = 3` → `Tensor[6]`");
    assert_eq!(help["activeParameter"], 1);

    // Halfway through the arguments: what the first binds, and no result yet.
    let help = server.result("textDocument/signatureHelp", at(&main, 7, 22));
    assert_eq!(help["signatures"][0]["documentation"]["value"], "`n = 8`");
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn positions_are_utf16() {
    // `𝕏` is one character, four bytes in UTF-8 and two code units in UTF-16.
    let text = "float y = 1.0; /* 𝕏é */ float z = y + nope;\nprint(z);\n";
    let dir = workspace("utf16", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
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
fn edits_apply_in_the_order_received_whatever_their_versions() {
    let dir = workspace("order", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
    server.open(&main, "int v0 = 0;\n");
    // Each change appends a line at the end of the text the change before it left, so a change
    // applied out of order would land in the middle of a line. The versions jump, repeat and go
    // back: the protocol only promises that they increase, and a server that waited for the
    // "missing" ones, or sorted by them, would apply these changes late or in another order.
    let mut version = 1;
    for i in 1..=60u32 {
        version += [1, 3, 0, 7, -2][i as usize % 5];
        let line = format!("int v{i} = v{} + 1;\n", i - 1);
        server.change(&main, version, json!([{ "range": range((i, 0), (i, 0)), "text": line }]));
    }
    server.change(
        &main,
        version + 1,
        json!([{ "range": range((61, 0), (61, 0)), "text": "print(v60);\n" }]),
    );
    let published = server.diagnostics(&main, |p| p["version"] == version + 1);
    assert_eq!(published["diagnostics"], json!([]));
    let hover = server.result("textDocument/hover", at(&main, 61, 7));
    assert!(hover["contents"]["value"].as_str().unwrap_or_default().contains("int v60"), "{hover}");
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn bad_requests_and_a_panic_leave_the_server_serving() {
    let dir = workspace("robust", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
    server.open(&main, "float y = 1.0;\nprint(y);\n");

    // An unknown document and a position past the end: empty answers.
    let unknown = uri(&dir.path().join("unknown.nb"));
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
    // Edits to unknown documents are ignored; a range past the end means the end. (Notifications
    // that cannot be read are `lsp_sync.rs`'s.)
    server.change(&unknown, 2, json!([{ "range": range((0, 0), (0, 0)), "text": "int a = 1;" }]));
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
    let main = uri(&dir.path().join("main.nb"));
    let lib = uri(&dir.path().join("lib.nb"));
    let mut server = Server::start(dir.path());
    server.open(&main, main_text);
    let published = server.diagnostics(&main, |p| p["version"] == 1);
    assert_eq!(published["diagnostics"], json!([]));
    // Rename the function on disk and say so: `square` is now unknown in main.nb.
    std::fs::write(dir.path().join("lib.nb"), LIB.replace("square", "cube"))
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
