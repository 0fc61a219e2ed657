//! The checker's teaching at the protocol level: `nabla lsp` publishes the "did you mean"
//! suggestions, the habits of other languages and the lints with their codes, severities and
//! help, and offers each fix-it (and, for a warning, the `// allow(CODE)` that silences it) as a
//! quick-fix code action whose workspace edit, applied as an editor applies it, gives exactly the
//! expected text, after which the server publishes the diagnostics of the fixed text.

mod lsp_support;

use serde_json::{Value, json};

use lsp_support::{Server, range, uri, workspace};

const MISTAKES: &str = "function float scale(float x, float factor) {
    return 2 * x;
}
Tensor v[3] = [-1.0, 2.0, -3.0];
float total = sum(sigmod(v));
print(max(v, 0), totl, scale(1.0, 3.0));
";

/// The byte offset of an LSP position (UTF-16 columns; the texts here are ASCII).
fn offset(text: &str, position: &Value) -> usize {
    let line = position["line"].as_u64().unwrap_or_default() as usize;
    let character = position["character"].as_u64().unwrap_or_default() as usize;
    let start: usize = text.split_inclusive('\n').take(line).map(str::len).sum();
    start + character
}

/// `text` with the edits of a workspace edit for `uri` applied, in either of its two forms
/// (`changes`, or `documentChanges` for a client that says it supports them).
fn apply(text: &str, uri: &str, edit: &Value) -> String {
    let edits: Vec<Value> = match edit["documentChanges"].as_array() {
        Some(documents) => documents
            .iter()
            .filter(|d| d["textDocument"]["uri"] == uri)
            .flat_map(|d| d["edits"].as_array().cloned().unwrap_or_default())
            .collect(),
        None => edit["changes"][uri].as_array().cloned().unwrap_or_default(),
    };
    assert!(!edits.is_empty(), "no edit of {uri} in {edit}");
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            let start = offset(text, &e["range"]["start"]);
            let end = offset(text, &e["range"]["end"]);
            (start, end, e["newText"].as_str().unwrap_or_default())
        })
        .collect();
    // Non-overlapping edits against the original text: apply from the end.
    spans.sort_by_key(|&(start, _, _)| std::cmp::Reverse(start));
    let mut out = text.to_owned();
    for (start, end, new_text) in spans {
        out.replace_range(start..end, new_text);
    }
    out
}

/// The quick fixes offered for one published diagnostic, as the editor asks for them: the
/// diagnostic's range, with the diagnostic in the context.
fn actions_for(server: &mut Server, uri: &str, diagnostic: &Value) -> Vec<Value> {
    let actions = server.result(
        "textDocument/codeAction",
        json!({
            "textDocument": { "uri": uri },
            "range": diagnostic["range"],
            "context": { "diagnostics": [diagnostic] }
        }),
    );
    let actions = actions.as_array().cloned().unwrap_or_default();
    for action in &actions {
        assert_eq!(action["kind"], "quickfix", "{action}");
        assert_eq!(action["diagnostics"], json!([diagnostic]), "{action}");
    }
    actions
}

fn titles(actions: &[Value]) -> Vec<&str> {
    actions.iter().map(|a| a["title"].as_str().unwrap_or_default()).collect()
}

/// One line per published diagnostic: `LINE:COL CODE SEVERITY message` (0-based, as sent).
fn summary(published: &Value) -> String {
    let mut out = String::new();
    for d in published["diagnostics"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "{}:{} {} {} {}\n",
            d["range"]["start"]["line"],
            d["range"]["start"]["character"],
            d["code"].as_str().unwrap_or_default(),
            d["severity"],
            d["message"].as_str().unwrap_or_default()
        ));
    }
    out
}

#[test]
fn suggestions_and_lint_fixes_are_code_actions_whose_edits_give_the_fixed_text() {
    let dir = workspace("code-actions", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let mut server = Server::start(dir.path());
    server.open(&main, MISTAKES);
    let published = server.diagnostics(&main, |p| p["version"] == 1);
    assert_eq!(
        summary(&published),
        "0:36 W0007 2 the parameter `factor` is never read
help: remove it, or name it `_factor` if it is meant to be unused
4:18 E0100 1 cannot find `sigmod` in this scope
help: a built-in with a similar name exists: `sigmoid`
5:13 W0002 2 `max(v, 0)` reduces along axis 0; it is not the element-wise maximum with 0
help: an `int` second argument of `max` is an axis; write `0.0` to compare element-wise, or `/*axis=*/ 0` to say the axis is meant
5:17 E0100 1 cannot find `totl` in this scope
help: a variable with a similar name exists: `total`
"
    );
    let diagnostics = published["diagnostics"].as_array().cloned().unwrap_or_default();

    // Each diagnostic's actions, and the text each one gives.
    let unused = actions_for(&mut server, &main, &diagnostics[0]);
    assert_eq!(titles(&unused), ["allow W0007 here"]);
    assert_eq!(unused[0]["isPreferred"], true);
    assert_eq!(
        apply(MISTAKES, &main, &unused[0]["edit"]),
        MISTAKES.replace("function float scale", "// allow(W0007)\nfunction float scale")
    );

    let builtin = actions_for(&mut server, &main, &diagnostics[1]);
    assert_eq!(titles(&builtin), ["write `sigmoid`"]);
    assert_eq!(builtin[0]["isPreferred"], true);
    assert_eq!(
        apply(MISTAKES, &main, &builtin[0]["edit"]),
        MISTAKES.replace("sigmod(v)", "sigmoid(v)")
    );

    let axis = actions_for(&mut server, &main, &diagnostics[2]);
    assert_eq!(
        titles(&axis),
        [
            "compare element-wise with `0.0`",
            "reduce along axis 0: `/*axis=*/ 0`",
            "allow W0002 here"
        ]
    );
    assert!(axis.iter().all(|a| a["isPreferred"] == false));
    assert_eq!(apply(MISTAKES, &main, &axis[0]["edit"]), MISTAKES.replace("v, 0)", "v, 0.0)"));
    assert_eq!(
        apply(MISTAKES, &main, &axis[1]["edit"]),
        MISTAKES.replace("v, 0)", "v, /*axis=*/ 0)")
    );
    assert_eq!(
        apply(MISTAKES, &main, &axis[2]["edit"]),
        MISTAKES.replace("print(max", "// allow(W0002)\nprint(max")
    );

    let variable = actions_for(&mut server, &main, &diagnostics[3]);
    assert_eq!(titles(&variable), ["write `total`"]);
    assert_eq!(apply(MISTAKES, &main, &variable[0]["edit"]), MISTAKES.replace("totl", "total"));

    // A range that touches no diagnostic gets no action.
    let none = server.result(
        "textDocument/codeAction",
        json!({
            "textDocument": { "uri": main },
            "range": range((3, 0), (3, 6)),
            "context": { "diagnostics": [] }
        }),
    );
    assert_eq!(none, json!([]));

    // Apply the fixes one after another, as a user accepting each quick fix would: the editor
    // sends each edit back as a change, and the server publishes what is left.
    let mut text = MISTAKES.to_owned();
    let steps = [
        ("write `sigmoid`", "E0100 E0100 W0002 W0007"),
        ("write `total`", "E0100 W0002 W0007"),
        ("compare element-wise with `0.0`", "W0002 W0007"),
        ("allow W0007 here", "W0007"),
    ];
    let mut published = published;
    for (version, (title, before)) in (1..).zip(steps) {
        if version > 1 {
            published = server.diagnostics(&main, |p| p["version"] == version);
        }
        let mut codes: Vec<&str> = published["diagnostics"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| d["code"].as_str().unwrap_or_default())
            .collect();
        codes.sort_unstable();
        assert_eq!(codes.join(" "), before, "before `{title}`");
        let mut chosen = None;
        for diagnostic in published["diagnostics"].as_array().into_iter().flatten() {
            let actions = actions_for(&mut server, &main, diagnostic);
            chosen = chosen.or_else(|| actions.into_iter().find(|a| a["title"] == title));
        }
        let action =
            chosen.unwrap_or_else(|| panic!("no action `{title}`:\n{}", summary(&published)));
        text = apply(&text, &main, &action["edit"]);
        server.change(&main, version + 1, json!([{ "text": text }]));
    }
    let published = server.diagnostics(&main, |p| p["version"] == 5);
    assert_eq!(published["diagnostics"], json!([]));
    assert_eq!(
        text,
        "// allow(W0007)
function float scale(float x, float factor) {
    return 2 * x;
}
Tensor v[3] = [-1.0, 2.0, -3.0];
float total = sum(sigmoid(v));
print(max(v, 0.0), total, scale(1.0, 3.0));
"
    );
    assert_eq!(server.stop(), Some(0));
}

const HABITS: &str = "int i = 0;
while (i < 3) {
    i++;
}
float y = 2.0 ** 3;
print(y);
";

/// The rewrites of other languages' habits, for a client that takes versioned document changes.
#[test]
fn habits_of_other_languages_are_rewritten_by_their_code_actions() {
    let dir = workspace("habit-actions", &[]);
    let main = uri(&dir.path().join("main.nb"));
    let capabilities = json!({ "workspace": { "workspaceEdit": { "documentChanges": true } } });
    let mut server = Server::start_with(dir.path(), capabilities);
    server.open_version(&main, 7, HABITS);
    let published = server.diagnostics(&main, |p| p["version"] == 7);
    assert_eq!(
        summary(&published),
        "1:0 E0004 1 Nabla writes a `while` loop as `loop (; cond; )`
4:14 E0004 1 Nabla has no `**` operator: a power is `pow(a, b)`
"
    );
    let diagnostics = published["diagnostics"].as_array().cloned().unwrap_or_default();
    let rewrite_loop = actions_for(&mut server, &main, &diagnostics[0]);
    assert_eq!(titles(&rewrite_loop), ["write `loop (; condition; )`"]);
    let edit = &rewrite_loop[0]["edit"];
    assert_eq!(edit["documentChanges"][0]["textDocument"]["version"], 7);
    let text = apply(HABITS, &main, edit);
    assert_eq!(text, HABITS.replace("while (i < 3)", "loop (; i < 3; )"));
    let power = actions_for(&mut server, &main, &diagnostics[1]);
    assert_eq!(titles(&power), ["write `pow(2.0, 3)`"]);
    let text = apply(&text, &main, &power[0]["edit"]);
    assert_eq!(
        text,
        "int i = 0;\nloop (; i < 3; ) {\n    i++;\n}\nfloat y = pow(2.0, 3);\nprint(y);\n"
    );
    server.change(&main, 8, json!([{ "text": text }]));
    let published = server.diagnostics(&main, |p| p["version"] == 8);
    assert_eq!(published["diagnostics"], json!([]));
    assert_eq!(server.stop(), Some(0));
}
