//! `nabla lsp` under the traffic real editors send (issue 21): versions that jump (Neovim's are
//! its change ticks) and repeat with no changes, requests sent right after an edit, formatting
//! right after typing and twice in a row, with incremental and with full-text sync; and the
//! protocol's edge cases: a publication with too many diagnostics, a notification that cannot be
//! read, positions past the end of the text.
//!
//! The client here keeps its own copy of each document, applies the edits the server answers
//! with to it, and sends them back as changes, as an editor does; so a server that answered on
//! an older text shows up as a copy that differs from `nabla fmt`'s output.

mod lsp_support;

use serde_json::{Value, json};

use lsp_support::{Server, at, nabla_fmt, position, range, uri, workspace};

/// A program with something for every kind of request: a call for signature help, a shape to
/// hint, a `@` with a fix-it, a test for the code lens, a block to fold, and unformatted code.
const PROGRAM: &str = "function float scale(float x, float k) {
    return x*k;
}
Tensor a[2][3];
Tensor p = a * 2.0;
Tensor q = p @ 2.0;
float y = scale(1.0, 2.0);
print(y);
test \"scale\" {
    assert(scale(1.0, 2.0) == 2.0);
}
";

/// The byte offset of a protocol position in `text`, with the protocol's clamping of columns.
fn offset(text: &str, line: u64, character: u64) -> usize {
    let mut start = 0;
    for _ in 0..line {
        match text[start..].find('\n') {
            Some(at) => start += at + 1,
            None => return text.len(),
        }
    }
    let line_text = &text[start..start + text[start..].find('\n').unwrap_or(text.len() - start)];
    let mut units = 0;
    for (i, ch) in line_text.char_indices() {
        if units >= character {
            return start + i;
        }
        units += ch.len_utf16() as u64;
    }
    start + line_text.len()
}

/// The position of a byte offset in `text`.
fn position_of(text: &str, offset: usize) -> Value {
    let before = &text[..offset];
    let line = before.matches('\n').count() as u32;
    let line_start = before.rfind('\n').map_or(0, |at| at + 1);
    position(line, before[line_start..].encode_utf16().count() as u32)
}

/// `text` with the protocol's text edits applied (all to the text before any of them).
fn apply_edits(text: &str, edits: &[Value]) -> String {
    let mut resolved: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|edit| {
            let at = |p: &Value| {
                offset(text, p["line"].as_u64().unwrap_or(0), p["character"].as_u64().unwrap_or(0))
            };
            let range = &edit["range"];
            (at(&range["start"]), at(&range["end"]), edit["newText"].as_str().unwrap_or(""))
        })
        .collect();
    resolved.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = text.to_owned();
    for (start, end, new_text) in resolved.into_iter().rev() {
        out.replace_range(start..end, new_text);
    }
    out
}

/// The one incremental change that turns `old` into `new`: the span between their common prefix
/// and suffix.
fn change_between(old: &str, new: &str) -> Value {
    let prefix = old.bytes().zip(new.bytes()).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .bytes()
        .rev()
        .zip(new[prefix..].bytes().rev())
        .take_while(|(a, b)| a == b)
        .count();
    json!({
        "range": { "start": position_of(old, prefix), "end": position_of(old, old.len() - suffix) },
        "text": &new[prefix..new.len() - suffix]
    })
}

/// One document as an editor has it, and how it tells the server about changes.
struct Editor {
    uri: String,
    text: String,
    version: i32,
    /// How much each change moves the version: Neovim's change ticks move by more than one.
    step: i32,
    /// Whether changes are sent as the whole text instead of ranges.
    full_sync: bool,
}

impl Editor {
    fn open(server: &mut Server, uri: &str, text: &str, full_sync: bool) -> Editor {
        server.open(uri, text);
        Editor { uri: uri.to_owned(), text: text.to_owned(), version: 1, step: 3, full_sync }
    }

    /// Changes the text to `new` and tells the server, without waiting for anything.
    fn set_text(&mut self, server: &mut Server, new: &str) {
        let change =
            if self.full_sync { json!({ "text": new }) } else { change_between(&self.text, new) };
        self.version += self.step;
        server.change(&self.uri, self.version, json!([change]));
        self.text = new.to_owned();
    }

    /// Types `typed` at byte `at`, one character per change.
    fn type_at(&mut self, server: &mut Server, mut at: usize, typed: &str) {
        for ch in typed.chars() {
            let mut new = self.text.clone();
            new.insert(at, ch);
            at += ch.len_utf8();
            self.set_text(server, &new);
        }
    }

    /// Asks for formatting at once and applies the answer, sending it back as a change as
    /// editors do (one change per edit, in a single notification).
    fn format(&mut self, server: &mut Server) {
        let edits = server.result(
            "textDocument/formatting",
            json!({
                "textDocument": { "uri": self.uri },
                "options": { "tabSize": 4, "insertSpaces": true }
            }),
        );
        let edits = edits.as_array().cloned().unwrap_or_default();
        if edits.is_empty() {
            return;
        }
        let new = apply_edits(&self.text, &edits);
        self.version += self.step;
        let changes = if self.full_sync {
            json!([{ "text": new }])
        } else {
            // Later edits first, so each range is still right for the text it applies to.
            let mut edits = edits;
            edits.sort_by_key(|e| {
                let start = &e["range"]["start"];
                (start["line"].as_u64(), start["character"].as_u64())
            });
            Value::Array(
                edits
                    .iter()
                    .rev()
                    .map(|e| json!({ "range": e["range"], "text": e["newText"] }))
                    .collect(),
            )
        };
        server.change(&self.uri, self.version, changes);
        self.text = new;
    }
}

#[test]
fn a_version_repeated_with_no_changes_keeps_the_change_before_it() {
    // Neovim 0.7's trace: open at version 0, version 5 inserts `1.0;`, version 5 again with no
    // changes. The server held the change for the missing versions 1-4 and then dropped it.
    let dir = workspace("repeat", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
    server.open_version(&main, 0, "float a = \nprint(a);\n");
    server.change(&main, 5, json!([{ "range": range((0, 10), (0, 10)), "text": "1.0;" }]));
    server.change(&main, 5, json!([]));
    let published = server.diagnostics(&main, |p| p["version"] == 5);
    assert_eq!(published["diagnostics"], json!([]));
    let hover = server.result("textDocument/hover", at(&main, 0, 6));
    assert!(hover["contents"]["value"].as_str().unwrap_or_default().contains("float a"), "{hover}");
    // A new version with no changes is the same text under another name.
    server.change(&main, 9, json!([]));
    let published = server.diagnostics(&main, |p| p["version"] == 9);
    assert_eq!(published["diagnostics"], json!([]));
    assert_eq!(server.stop(), Some(0));
}

/// Every kind of request about a document, at positions that mean different things in
/// [`PROGRAM`] and in it with a line inserted at the top.
fn requests(uri: &str) -> Vec<(&'static str, Value)> {
    let document = json!({ "textDocument": { "uri": uri } });
    let mut references = at(uri, 6, 11);
    references["context"] = json!({ "includeDeclaration": true });
    let mut rename = at(uri, 6, 11);
    rename["newName"] = json!("renamed");
    vec![
        ("textDocument/hover", at(uri, 6, 11)),
        ("textDocument/completion", at(uri, 2, 11)),
        ("textDocument/signatureHelp", at(uri, 7, 6)),
        ("textDocument/definition", at(uri, 6, 11)),
        ("textDocument/references", references),
        ("textDocument/documentHighlight", at(uri, 6, 11)),
        ("textDocument/prepareRename", at(uri, 6, 11)),
        ("textDocument/rename", rename),
        (
            "textDocument/inlayHint",
            json!({ "textDocument": { "uri": uri }, "range": range((0, 0), (20, 0)) }),
        ),
        ("textDocument/semanticTokens/full", document.clone()),
        ("textDocument/documentSymbol", document.clone()),
        ("workspace/symbol", json!({ "query": "" })),
        ("textDocument/foldingRange", document.clone()),
        (
            "textDocument/formatting",
            json!({ "textDocument": { "uri": uri }, "options": { "tabSize": 4, "insertSpaces": true } }),
        ),
        (
            "textDocument/codeAction",
            json!({
                "textDocument": { "uri": uri },
                "range": range((5, 0), (6, 30)),
                "context": { "diagnostics": [] }
            }),
        ),
        ("textDocument/codeLens", document),
    ]
}

/// The whole answer without its id: a result or an error.
fn answer(server: &mut Server, method: &str, params: Value) -> Value {
    let mut response = server.request(method, params);
    if let Some(object) = response.as_object_mut() {
        object.remove("id");
    }
    response
}

#[test]
fn every_request_right_after_a_gapped_edit_answers_on_the_new_text() {
    let noted = format!("// note\n{PROGRAM}");
    let dir = workspace("interleaved", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let kinds = requests(&main);

    // The answers on each text, asked when the server has long had it.
    let mut reference = Server::start(dir.path());
    reference.open(&main, PROGRAM);
    reference.diagnostics(&main, |p| p["version"] == 1);
    let plain: Vec<Value> =
        kinds.iter().map(|(m, p)| answer(&mut reference, m, p.clone())).collect();
    reference.change(&main, 2, json!([{ "range": range((0, 0), (0, 0)), "text": "// note\n" }]));
    reference.diagnostics(&main, |p| p["version"] == 2);
    let with_note: Vec<Value> =
        kinds.iter().map(|(m, p)| answer(&mut reference, m, p.clone())).collect();
    for (((method, _), before), after) in kinds.iter().zip(&plain).zip(&with_note) {
        assert_ne!(before, after, "{method} must answer differently on the two texts");
        assert!(before.get("error").is_none(), "{method}: {before}");
    }
    drop(reference);

    // Each request sent right after a change whose version jumps, both ways, with incremental
    // and with full-text changes.
    for full_sync in [false, true] {
        let mut server = Server::start(dir.path());
        let mut editor = Editor::open(&mut server, &main, PROGRAM, full_sync);
        for (i, (method, params)) in kinds.iter().enumerate() {
            editor.set_text(&mut server, &noted);
            assert_eq!(answer(&mut server, method, params.clone()), with_note[i], "{method}");
            editor.set_text(&mut server, PROGRAM);
            assert_eq!(answer(&mut server, method, params.clone()), plain[i], "{method}");
        }
        assert_eq!(server.stop(), Some(0));
    }
}

#[test]
fn formatting_right_after_typing_formats_the_typed_text() {
    let dir = workspace("format-after-type", &[]);
    let main = uri(&dir.path().join("main.nb"));
    for full_sync in [false, true] {
        let mut server = Server::start(dir.path());
        let mut editor = Editor::open(&mut server, &main, PROGRAM, full_sync);
        // A comment typed on a new first line, then formatting at once: the server answered on
        // the text without the comment, and the editor applied those edits to the text with it.
        editor.type_at(&mut server, 0, "// note\n");
        editor.format(&mut server);
        assert_eq!(
            editor.text,
            nabla_fmt(&format!("// note\n{PROGRAM}")),
            "full sync: {full_sync}"
        );

        // A statement typed inside the function, formatted twice in a row: the second request
        // follows the change that applied the first one's edits.
        let inside = editor.text.find("return").unwrap_or(0);
        editor.type_at(&mut server, inside, "float t=x+k;\n    ");
        let typed = editor.text.clone();
        editor.format(&mut server);
        editor.format(&mut server);
        assert_eq!(editor.text, nabla_fmt(&typed), "full sync: {full_sync}");
        assert!(
            editor.text.contains("    float t = x + k;\n    return x * k;\n"),
            "{}",
            editor.text
        );

        // The server's text is the editor's: the diagnostics of the last version are those of
        // the text opened afresh, and formatting once more changes nothing.
        let version = editor.version;
        let published = server.diagnostics(&main, |p| p["version"] == version);
        let fresh = uri(&dir.path().join("fresh.nb"));
        server.open(&fresh, &editor.text);
        let expected = server.diagnostics(&fresh, |p| p["version"] == 1);
        let expected = expected["diagnostics"].to_string().replace(&fresh, &main);
        assert_eq!(published["diagnostics"].to_string(), expected);
        let before = editor.text.clone();
        editor.format(&mut server);
        assert_eq!(editor.text, before);
        assert_eq!(server.stop(), Some(0));
    }
}

#[test]
fn a_publication_holds_the_first_hundred_diagnostics_and_a_count_of_the_rest() {
    let text: String = (0..250).map(|i| format!("print(u{i});\n")).collect();
    let dir = workspace("cap", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
    server.open(&main, &text);
    let published = server.diagnostics(&main, |p| p["version"] == 1);
    let diagnostics = published["diagnostics"].as_array().cloned().unwrap_or_default();
    assert_eq!(diagnostics.len(), 101);
    for (i, diagnostic) in diagnostics[..100].iter().enumerate() {
        assert_eq!(diagnostic["code"], "E0100");
        assert_eq!(diagnostic["range"]["start"], position(i as u32, 6));
    }
    assert_eq!(
        diagnostics[100],
        json!({
            "range": range((100, 6), (100, 10)),
            "severity": 1,
            "source": "nabla",
            "message": "and 150 more problems from here on (150 errors); only the first 100 are shown"
        })
    );
    // Fixing most of them brings the count under the cap: all are published.
    let fixed: String = (0..250)
        .map(|i| if i < 200 { format!("print({i});\n") } else { format!("print(u{i});\n") })
        .collect();
    server.change(&main, 2, json!([{ "text": fixed }]));
    let published = server.diagnostics(&main, |p| p["version"] == 2);
    assert_eq!(published["diagnostics"].as_array().map(Vec::len), Some(50));
    assert_eq!(server.stop(), Some(0));
}

/// A `didChange` body with a byte that is not UTF-8 in its text.
fn not_utf8_change(uri: &str, version: i32) -> Vec<u8> {
    let body = json!({
        "jsonrpc": "2.0",
        "method": "textDocument/didChange",
        "params": {
            "textDocument": { "uri": uri, "version": version },
            "contentChanges": [{ "range": range((0, 0), (0, 0)), "text": "MARK" }]
        }
    })
    .to_string();
    // The byte 0xff is never part of UTF-8.
    let (before, after) = body.split_once("MARK").unwrap_or((&body, ""));
    let body = [before.as_bytes(), b"\xff", after.as_bytes()].concat();
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend(body);
    frame
}

#[test]
fn a_document_whose_change_cannot_be_read_is_resynchronised_by_its_whole_text() {
    let dir = workspace("lost", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
    server.open(&main, "float y = nope;\nprint(y);\n");
    let published = server.diagnostics(&main, |p| p["version"] == 1);
    assert_eq!(published["diagnostics"][0]["code"], "E0100");

    // A change that is not UTF-8: the message gets its error, the log says which document is
    // lost and why, and its diagnostics are cleared since its text is no longer known.
    server.send_raw(not_utf8_change(&main, 2));
    assert_eq!(server.null_id_response()["error"]["code"], -32700);
    let logged = server.notification(
        "window/logMessage",
        |_| true,
        |p| p["message"].as_str().is_some_and(|m| m.contains(&main)),
    );
    let message = logged["message"].as_str().unwrap_or_default();
    assert!(message.contains("cannot read a `textDocument/didChange` notification"), "{message}");
    assert!(message.contains("not UTF-8"), "{message}");
    assert_eq!(logged["type"], 2);
    let cleared = server.diagnostics(&main, |_| true);
    assert_eq!(cleared["diagnostics"], json!([]));
    assert_eq!(cleared.get("version"), None);

    // Its incremental changes cannot be applied to a text the server does not have: requests get
    // empty answers rather than answers on a text the editor does not show.
    server.change(&main, 3, json!([{ "range": range((0, 10), (0, 14)), "text": "1.0" }]));
    assert_eq!(server.result("textDocument/hover", at(&main, 0, 6)), Value::Null);

    // The whole text resynchronises it.
    server.change(&main, 4, json!([{ "text": "float y = 1.0;\nprint(y + z);\n" }]));
    let published = server.diagnostics(&main, |p| p["version"] == 4);
    assert_eq!(published["diagnostics"][0]["range"], range((1, 10), (1, 11)));
    let hover = server.result("textDocument/hover", at(&main, 0, 6));
    assert!(hover["contents"]["value"].as_str().unwrap_or_default().contains("float y"), "{hover}");
    server.notification(
        "window/logMessage",
        |_| true,
        |p| p["message"].as_str().is_some_and(|m| m.contains("synchronised again")),
    );

    // A change that is JSON but not a change loses the document too; reopening it resynchronises.
    server.notify("textDocument/didChange", json!({ "textDocument": { "uri": main } }));
    let logged = server.notification(
        "window/logMessage",
        |_| true,
        |p| p["message"].as_str().is_some_and(|m| m.contains(&main)),
    );
    assert!(logged["message"].as_str().unwrap_or_default().contains("missing field"), "{logged}");
    assert_eq!(server.result("textDocument/hover", at(&main, 0, 6)), Value::Null);
    server.open_version(&main, 7, "float y = 2.0;\nprint(y);\n");
    let published = server.diagnostics(&main, |p| p["version"] == 7);
    assert_eq!(published["diagnostics"], json!([]));
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn positions_past_the_end_get_empty_answers() {
    let dir = workspace("past-the-end", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
    // Without a final line break, the last line is `print(y);`.
    server.open(&main, "float y = 1.0;\nprint(y);");
    server.diagnostics(&main, |p| p["version"] == 1);
    for (line, character) in [(1, 10), (1, 400), (2, 0), (40, 0)] {
        let mut references = at(&main, line, character);
        references["context"] = json!({ "includeDeclaration": true });
        let mut rename = at(&main, line, character);
        rename["newName"] = json!("z");
        let past = range((line, character), (line + 1, 0));
        let asked = [
            ("textDocument/hover", at(&main, line, character)),
            ("textDocument/completion", at(&main, line, character)),
            ("textDocument/signatureHelp", at(&main, line, character)),
            ("textDocument/definition", at(&main, line, character)),
            ("textDocument/references", references),
            ("textDocument/documentHighlight", at(&main, line, character)),
            ("textDocument/prepareRename", at(&main, line, character)),
            ("textDocument/rename", rename),
            ("textDocument/inlayHint", json!({ "textDocument": { "uri": main }, "range": past })),
            (
                "textDocument/codeAction",
                json!({
                    "textDocument": { "uri": main },
                    "range": past,
                    "context": { "diagnostics": [] }
                }),
            ),
        ];
        for (method, params) in asked {
            let result = server.result(method, params);
            let empty = result.is_null() || result.as_array().is_some_and(Vec::is_empty);
            assert!(empty, "{method} at {line}:{character}: {result}");
        }
    }
    // The end of the last line is in the text: completion there is not empty.
    let completion = server.result("textDocument/completion", at(&main, 1, 9));
    assert!(completion.as_array().is_some_and(|items| !items.is_empty()), "{completion}");
    assert_eq!(server.stop(), Some(0));
}

#[test]
fn rename_and_code_actions_carry_the_version_they_were_computed_for() {
    let dir = workspace("versioned-edits", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let capabilities = json!({ "workspace": { "workspaceEdit": { "documentChanges": true } } });
    let mut server = Server::start_with(dir.path(), capabilities);
    let mut editor = Editor::open(&mut server, &main, PROGRAM, false);
    let noted = format!("// note\n{PROGRAM}");
    editor.set_text(&mut server, &noted);
    // `scale` in `float y = scale(...)`, on the text with the note.
    let mut rename = at(&main, 7, 11);
    rename["newName"] = json!("times");
    let edit = server.result("textDocument/rename", rename);
    assert_eq!(edit.get("changes"), None, "{edit}");
    let changes = &edit["documentChanges"];
    assert_eq!(changes[0]["textDocument"], json!({ "uri": main, "version": 4 }));
    assert_eq!(changes[0]["edits"].as_array().map(Vec::len), Some(3), "{edit}");
    assert_eq!(changes[0]["edits"][0]["range"], range((1, 15), (1, 20)));

    editor.set_text(&mut server, PROGRAM);
    let actions = server.result(
        "textDocument/codeAction",
        json!({
            "textDocument": { "uri": main },
            "range": range((5, 13), (5, 13)),
            "context": { "diagnostics": [] }
        }),
    );
    let edit = &actions[0]["edit"]["documentChanges"][0];
    assert_eq!(actions[0]["title"], "use `*`");
    assert_eq!(edit["textDocument"], json!({ "uri": main, "version": 7 }));
    assert_eq!(edit["edits"], json!([{ "range": range((5, 13), (5, 14)), "newText": "*" }]));
    assert_eq!(server.stop(), Some(0));
}
