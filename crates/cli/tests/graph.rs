//! `nabla graph` and `nabla run --graph` end to end: the graph of the specification's Figure 1
//! (corrected) node by node and edge by edge on the DOT text, with the values and gradients the
//! program prints; a long loop that collapses into a small file; the selections and groupings;
//! and well-formed SVG.

use std::path::{Path, PathBuf};
use std::process::Command;

use expect_test::{expect, expect_file};
use tempfile::TempDir;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory for one test's files, removed when the guard is dropped.
fn scratch(name: &str) -> TempDir {
    TempDir::with_prefix(format!("nabla-graph-{name}-")).unwrap_or_else(|err| panic!("{err}"))
}

/// Runs `nabla` with `args` and returns standard output, standard error and the exit status.
fn nabla(args: &[&str]) -> (String, String, i32) {
    let output = Command::new(env!("CARGO_BIN_EXE_nabla"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|err| panic!("cannot run nabla: {err}"));
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        output.status.code().unwrap_or(-1),
    )
}

/// Writes `source` to `dir/name` and returns its path as a string.
fn program(dir: &Path, name: &str, source: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, source).unwrap_or_else(|err| panic!("{err}"));
    path.display().to_string()
}

/// The numbers in a text, in order (what `print` shows and what a label shows, compared as
/// numbers so that the layout of either can change).
fn numbers(text: &str) -> Vec<f64> {
    text.split(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | 'e' | '+')))
        .filter_map(|word| word.parse().ok())
        .collect()
}

/// The label of the DOT node whose title is `title`.
fn label<'a>(dot: &'a str, title: &str) -> &'a str {
    let needle = format!("label=<<b>{title}</b>");
    dot.lines()
        .find(|line| line.contains(&needle))
        .unwrap_or_else(|| panic!("no node {title} in\n{dot}"))
}

/// The part of a label in the colour of values or of gradients.
fn coloured<'a>(label: &'a str, colour: &str) -> &'a str {
    let start = label.find(&format!("<font color=\"{colour}\">")).expect("a coloured line");
    let rest = &label[start..];
    let rest = &rest[rest.find('>').map_or(0, |i| i + 1)..];
    &rest[..rest.find("</font>").unwrap_or(rest.len())]
}

const VALUE: &str = "#1a7f37";
const GRADIENT: &str = "#cf222e";

#[test]
fn figure_one_has_the_expected_nodes_and_edges() {
    let dir = scratch("figure1");
    let out = dir.path().join("figure1.dot");
    let file = repo().join("examples/figure1_corrected.nb");
    let (stdout, stderr, status) =
        nabla(&["graph", &file.display().to_string(), "-o", &out.display().to_string()]);
    assert_eq!(status, 0, "{stderr}");
    let dot = std::fs::read_to_string(&out).unwrap_or_else(|err| panic!("{err}"));
    // Every recorded operation: z = a @ b + c, the branch's c2 = a + b and b = b * 25, the ten
    // iterations of c2 = c2 + a as one node, p = m * kk * y and Final = cos(p + z), which
    // backward starts from (the thick border). The leaves nothing read (x, and the values z,
    // c2, p and Final held before their assignments) are left out.
    expect![[r##"
        digraph nabla {
          label="the recording differentiated by backward number 1";
          rankdir=TB;
          node [shape=box, style="rounded,filled", fontname="DejaVu Sans Mono", fontsize=11];
          edge [color="#57606a", fontname="DejaVu Sans Mono", fontsize=10];
          n0 [class="leaf", fillcolor="#dafbe1", color="#1a7f37", penwidth=1, label=<<b>var a</b><br/>figure1_corrected.nb:21: a[2][2] = [[2.0, 3.0], [4.0, 5.0]]<br/>Tensor[2][2]<br/><font color="#1a7f37">= [[2.0, 3.0], [4.0, 5.0]]</font><br/><font color="#cf222e">∇ [[2.3047639839710006, 0.7682546613236668], [-2.4804860384703105, -0.8268286794901034]]</font>>];
          n1 [class="leaf", fillcolor="#dafbe1", color="#1a7f37", penwidth=1, label=<<b>var b</b><br/>figure1_corrected.nb:22: b[2][1] = [3, 1]<br/>Tensor[2][1]<br/><font color="#1a7f37">= [[3.0], [1.0]]</font><br/><font color="#cf222e">∇ [[-1.77080539531308], [-1.8293794134795165]]</font>>];
          n2 [class="leaf", fillcolor="#dafbe1", color="#1a7f37", penwidth=1, label=<<b>var c</b><br/>figure1_corrected.nb:23: c[2][1] = [4, 6]<br/>Tensor[2][1]<br/><font color="#1a7f37">= [[4.0], [6.0]]</font><br/><font color="#cf222e">∇ [[0.7682546613236668], [-0.8268286794901034]]</font>>];
          n3 [class="leaf", fillcolor="#dafbe1", color="#1a7f37", penwidth=1, label=<<b>var m</b><br/>figure1_corrected.nb:26: m = 7.0<br/>float<br/><font color="#1a7f37">= 7.0</font><br/><font color="#cf222e">∇ -1.119698770322287</font>>];
          n4 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>@</b><br/>figure1_corrected.nb:27: a @ b<br/>Tensor[2][1]<br/><font color="#1a7f37">= [[9.0], [17.0]]</font><br/><font color="#cf222e">∇ [[0.7682546613236668], [-0.8268286794901034]]</font>>];
          n5 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>+</b><br/>figure1_corrected.nb:27: a @ b + c<br/>Tensor[2][1]<br/><font color="#1a7f37">= [[13.0], [23.0]]</font><br/><font color="#cf222e">∇ [[0.7682546613236668], [-0.8268286794901034]]</font>>];
          n6 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>+</b><br/>figure1_corrected.nb:33: a + b<br/>Tensor[2][2]<br/><font color="#1a7f37">= [[5.0, 6.0], [5.0, 6.0]]</font>>];
          n7 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>*</b><br/>figure1_corrected.nb:35: b * 25<br/>Tensor[2][1]<br/><font color="#1a7f37">= [[75.0], [25.0]]</font>>];
          n8 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>+  ×10</b><br/>figure1_corrected.nb:43: c2 + a<br/>Tensor[2][2]<br/><font color="#1a7f37">= [[25.0, 36.0], [45.0, 56.0]]</font>>];
          n9 [class="leaf", fillcolor="#dafbe1", color="#1a7f37", penwidth=1, label=<<b>var y</b><br/>figure1_corrected.nb:48: y[2][1] = [5.0, 6.0]<br/>Tensor[2][1]<br/><font color="#1a7f37">= [[5.0], [6.0]]</font><br/><font color="#cf222e">∇ [[5.377782629265668], [-5.787800756430724]]</font>>];
          n10 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>*</b><br/>figure1_corrected.nb:51: m * kk<br/>float<br/><font color="#1a7f37">= 7.0</font><br/><font color="#cf222e">∇ -1.119698770322287</font>>];
          n11 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>*</b><br/>figure1_corrected.nb:51: m * kk * y<br/>Tensor[2][1]<br/><font color="#1a7f37">= [[35.0], [42.0]]</font><br/><font color="#cf222e">∇ [[0.7682546613236668], [-0.8268286794901034]]</font>>];
          n12 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=1, label=<<b>+</b><br/>figure1_corrected.nb:52: p + z<br/>Tensor[2][1]<br/><font color="#1a7f37">= [[48.0], [65.0]]</font><br/><font color="#cf222e">∇ [[0.7682546613236668], [-0.8268286794901034]]</font>>];
          n13 [class="operation", fillcolor="#ffffff", color="#24292f", penwidth=3, label=<<b>cos</b><br/>figure1_corrected.nb:52: cos(p + z)<br/>Tensor[2][1]<br/><font color="#1a7f37">= [[-0.6401443394691997], [-0.562453851238172]]</font><br/><font color="#cf222e">∇ [[1.0], [1.0]]</font>>];
          n14 [class="constant", fillcolor="#eaeef2", color="#8c959f", penwidth=1, label=<<b>constant</b><br/>float<br/><font color="#1a7f37">= 25.0</font>>];
          n0 -> n4;
          n1 -> n4;
          n4 -> n5;
          n2 -> n5;
          n0 -> n6;
          n1 -> n6;
          n1 -> n7;
          n14 -> n7 [style=dashed];
          n6 -> n8;
          n0 -> n8 [label="×10"];
          n8 -> n8 [label="×9"];
          n3 -> n10;
          n10 -> n11;
          n9 -> n11;
          n11 -> n12;
          n5 -> n12;
          n12 -> n13;
        }
    "##]]
    .assert_eq(&dot);
    // The values and gradients are the ones the program prints: z, grad(a), grad(m). `print`
    // rounds tensors to 8 decimals by default; in the one-line mode it shows every number in the
    // shortest form that reads back, as the labels do, so the numbers must be equal.
    assert!(!stdout.is_empty());
    let source = std::fs::read_to_string(&file).unwrap_or_else(|err| panic!("{err}"));
    let line_mode =
        program(dir.path(), "figure1_line.nb", &format!("print_options(\"line\");\n{source}"));
    let (stdout, stderr, status) = nabla(&["run", &line_mode]);
    assert_eq!(status, 0, "{stderr}");
    let printed: Vec<&str> = stdout.lines().collect();
    assert_eq!(printed.len(), 3, "{stdout}");
    let z = label(&dot, "+").to_owned();
    assert!(z.contains("a @ b + c"), "{z}");
    assert_eq!(numbers(coloured(&z, VALUE)), numbers(printed[0]));
    assert_eq!(numbers(coloured(label(&dot, "var a"), GRADIENT)), numbers(printed[1]));
    assert_eq!(numbers(coloured(label(&dot, "var m"), GRADIENT)), numbers(printed[2]));
}

#[test]
fn a_long_loop_collapses_into_a_small_file() {
    let dir = scratch("loop");
    let file = program(
        dir.path(),
        "loop.nb",
        "var float x = 0.5;\nfloat y = x;\nloop (int i = 0; i < 100000; i++) {\n    y = y * 0.99999 + sin(x) * 0.001;\n}\nbackward(y);\nprint(grad(x));\n",
    );
    let svg = dir.path().join("loop.svg");
    let (stdout, stderr, status) = nabla(&["run", &file, "--graph", &svg.display().to_string()]);
    assert_eq!(status, 0, "{stderr}");
    assert!(stderr.contains("wrote the graph (5 nodes"), "{stderr}");
    let text = std::fs::read_to_string(&svg).unwrap_or_else(|err| panic!("{err}"));
    assert!(text.len() < 1 << 20, "{} bytes", text.len());
    assert_well_formed(&text);
    // The four operations of the body, each standing for its 100000 iterations, and the back
    // edge of the loop.
    assert_eq!(text.matches("×100000").count(), 4 + 4, "{text}");
    assert!(text.contains("×99999"));
    // The gradient of x is the one printed.
    assert!(text.contains(&format!("∇ {}", stdout.trim())), "{stdout}");
}

/// A rough check that `text` is one well-formed SVG element: every tag opened is closed in order.
fn assert_well_formed(text: &str) {
    assert!(text.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{}", &text[..80]);
    let mut open: Vec<&str> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').map(|e| start + e).expect("a closed tag");
        let tag = &rest[start + 1..end];
        let name = tag.trim_start_matches('/').split([' ', '/']).next().unwrap_or("");
        if tag.starts_with('/') {
            assert_eq!(open.pop(), Some(name), "closing {name}");
        } else if !tag.ends_with('/') {
            open.push(name);
        }
        rest = &rest[end + 1..];
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
}

const LAYERS: &str = "\
function Tensor[2] layer(Tensor w[2][2], Tensor x[2]) {
    return tanh(w @ x);
}
var Tensor w[2][2] = [[0.5, -0.25], [0.125, 1.0]];
Tensor x[2] = [1.0, 2.0];
Tensor h[2] = layer(w, layer(w, x));
float loss = sum(h * h);
backward(loss);
print(grad(w));
";

#[test]
fn calls_group_into_one_node_each() {
    let dir = scratch("group");
    let file = program(dir.path(), "layers.nb", LAYERS);
    let dot = dir.path().join("layers.dot").display().to_string();
    let (_, stderr, status) = nabla(&["graph", &file, "-o", &dot, "--group", "functions"]);
    assert_eq!(status, 0, "{stderr}");
    let text = std::fs::read_to_string(&dot).unwrap_or_else(|err| panic!("{err}"));
    let titles: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split("label=<<b>").nth(1)?.split("</b>").next())
        .collect();
    assert_eq!(titles, ["var w", "call layer", "call layer", "*", "sum", "constant"], "{text}");
    assert!(text.contains("layers.nb:6: layer(w, x)<br/>"), "{text}");
    assert!(text.contains("layers.nb:6: layer(w, layer(w, x))<br/>"), "{text}");
    assert_eq!(text.matches("class=\"call\"").count(), 2, "{text}");
    // Ungrouped, each call shows its product and its tanh.
    let (_, stderr, status) = nabla(&["graph", &file, "-o", &dot]);
    assert_eq!(status, 0, "{stderr}");
    let text = std::fs::read_to_string(&dot).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(text.matches("<b>tanh</b>").count(), 2, "{text}");
    assert_eq!(text.matches("<b>@</b>").count(), 2, "{text}");
}

#[test]
fn from_and_depth_select_what_a_line_depends_on() {
    let dir = scratch("select");
    let file = program(dir.path(), "layers.nb", LAYERS);
    let dot = dir.path().join("layers.dot").display().to_string();
    let (_, stderr, status) = nabla(&["graph", &file, "-o", &dot, "--from", "7", "--depth", "1"]);
    assert_eq!(status, 0, "{stderr}");
    let text = std::fs::read_to_string(&dot).unwrap_or_else(|err| panic!("{err}"));
    let titles: Vec<&str> = text
        .lines()
        .filter_map(|line| line.split("label=<<b>").nth(1)?.split("</b>").next())
        .collect();
    // `sum(h * h)` and `h * h` are at line 7; one edge back is the second call's tanh.
    assert_eq!(titles, ["tanh", "*", "sum"], "{text}");
    let (_, stderr, status) = nabla(&["graph", &file, "-o", &dot, "--from", "99"]);
    assert_eq!(status, 1);
    assert!(stderr.contains("no recorded operation is at line 99"), "{stderr}");
}

#[test]
fn expand_draws_every_iteration() {
    let dir = scratch("expand");
    let file = program(
        dir.path(),
        "three.nb",
        "var float x = 2.0;\nfloat y = x;\nloop (int i = 0; i < 3; i++) {\n    y = y * x;\n}\nbackward(y);\n",
    );
    let dot = dir.path().join("three.dot").display().to_string();
    let (_, stderr, status) = nabla(&["graph", &file, "-o", &dot, "--expand"]);
    assert_eq!(status, 0, "{stderr}");
    let text = std::fs::read_to_string(&dot).unwrap_or_else(|err| panic!("{err}"));
    // x, then x^2, x^3, x^4, with the gradients of y = x^4: 4x^3 for x, and 1, x, x^2 back
    // through the products.
    let values: Vec<Vec<f64>> = text
        .lines()
        .filter(|line| line.contains("[class="))
        .map(|line| numbers(coloured(line, VALUE)))
        .collect();
    assert_eq!(values, [[2.0], [4.0], [8.0], [16.0]]);
    let gradients: Vec<Vec<f64>> = text
        .lines()
        .filter(|line| line.contains("[class="))
        .map(|line| numbers(coloured(line, GRADIENT)))
        .collect();
    assert_eq!(gradients, [[32.0], [4.0], [2.0], [1.0]]);
}

#[test]
fn a_run_without_backward_draws_its_recording() {
    let dir = scratch("forward");
    let file =
        program(dir.path(), "forward.nb", "var Tensor a[2] = [1.0, 2.0];\nprint(sum(exp(a)));\n");
    let svg = dir.path().join("forward.svg");
    let (_, stderr, status) = nabla(&["graph", &file, "-o", &svg.display().to_string()]);
    assert_eq!(status, 0, "{stderr}");
    assert!(stderr.contains("not differentiated"), "{stderr}");
    let text = std::fs::read_to_string(&svg).unwrap_or_else(|err| panic!("{err}"));
    assert_well_formed(&text);
    assert!(!text.contains("∇"), "{text}");
    // Three boxes on a background: the leaf, exp and sum.
    assert_eq!(text.matches("<rect").count(), 4, "{text}");
    assert!(text.contains(">exp</text>") && text.contains(">sum</text>"), "{text}");
}

/// The pictures of graphs the docs show (`docs/debugging.md`, the README) are what `nabla graph`
/// draws for their examples today. `UPDATE_EXPECT=1 cargo test -p cli --test graph` redraws them.
#[test]
fn the_committed_pictures_are_what_nabla_draws() {
    let dir = scratch("committed");
    for (example, picture) in [
        ("figure1_corrected.nb", expect_file!["../../../docs/images/figure1_graph.svg"]),
        ("small_network.nb", expect_file!["../../../docs/images/small_network_graph.svg"]),
    ] {
        let svg = dir.path().join(example.replace(".nb", ".svg"));
        let file = repo().join("examples").join(example);
        let (_, stderr, status) =
            nabla(&["graph", &file.display().to_string(), "-o", &svg.display().to_string()]);
        assert_eq!(status, 0, "{example}: {stderr}");
        let text = std::fs::read_to_string(&svg).unwrap_or_else(|err| panic!("{err}"));
        assert_well_formed(&text);
        assert!(text.len() < 200 << 10, "{example}: {} bytes", text.len());
        picture.assert_eq(&text);
    }
}
