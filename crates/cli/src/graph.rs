//! The picture of the computational graph a run recorded: `nabla graph FILE`,
//! `nabla run --graph OUT`, and the REPL's `:graph`.
//!
//! A traced run (see `exec::graph`) gives the program tape's graph with every node's call stack,
//! last value and gradient. This module turns it into a [`Picture`] (labelled boxes and edges,
//! after the optional grouping of function calls and the selection of `--from`/`--depth`), then
//! writes that as DOT, for Graphviz and for tests, or as a self-contained SVG laid out by
//! `layout-rs` in this process. Forward values are written in green and gradients in red, as in
//! Figure 2 of the specification; `var` leaves are green boxes, constants grey ones, and the
//! node `backward` started from has a thick border.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use exec::autodiff::InputSource;
use exec::error::StackFrame;
use exec::graph::{Graph, Node, NodeKind};
use hir::{Database, SourceFile};
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::format::{ClipHandle, RenderBackend};
use layout::core::geometry::Point;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;
use syntax::LineIndex;

use crate::render::Locate;

/// How a picture is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A self-contained SVG file.
    Svg,
    /// Graphviz's DOT language.
    Dot,
}

impl Format {
    /// The format a file name asks for: DOT for `.dot` and `.gv`, SVG otherwise.
    pub fn of_path(path: &Path) -> Format {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some("dot" | "gv") => Format::Dot,
            _ => Format::Svg,
        }
    }
}

/// How nodes are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Grouping {
    /// Each call of a function from the top level (or a test) is one node.
    Functions,
}

/// Which part of the graph to draw, and how.
#[derive(Clone, Debug, Default)]
pub struct View {
    /// Start from the operations at this line (of any file) instead of the whole graph.
    pub from: Option<u32>,
    /// Follow inputs this many edges back from the starting nodes (all of them by default).
    pub depth: Option<usize>,
    /// Draw each call of a function from the top level as one node.
    pub group_functions: bool,
}

/// The most nodes an SVG is laid out with; beyond it the layout would take long and the
/// picture could not be read, so `--from`, `--depth`, grouping or DOT are suggested instead.
const MAX_LAID_OUT: usize = 1500;

/// The longest line of a label in a picture; longer values continue on further lines.
const LINE_CHARS: usize = 56;
/// The most lines a value or gradient takes in a picture.
const VALUE_LINES: usize = 3;

/// What a line of a label says, which decides how it is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineKind {
    Title,
    Plain,
    Value,
    Gradient,
}

/// A node as drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    Leaf,
    Operation,
    Constant,
    Call,
}

#[derive(Clone, Debug)]
struct Shape {
    lines: Vec<(LineKind, String)>,
    style: Style,
    output: bool,
}

#[derive(Clone, Debug)]
struct Edge {
    from: usize,
    to: usize,
    count: u64,
    constant: bool,
}

/// A graph ready to be written: labelled nodes and edges.
#[derive(Clone, Debug)]
pub struct Picture {
    shapes: Vec<Shape>,
    edges: Vec<Edge>,
    title: String,
}

/// Writes the picture of `graph` in `format` (or the one `path` asks for) to `path`, and returns
/// a sentence saying what was written, for the command's report.
pub fn write(
    db: &Database,
    graph: &Graph,
    view: &View,
    path: &Path,
    format: Option<Format>,
) -> Result<String, String> {
    write_located(db, graph, view, path, format, &file_name_and_line(db))
}

/// [`write`], with the places of the operations given by `locate` (the REPL points back into its
/// entries).
pub fn write_located(
    db: &Database,
    graph: &Graph,
    view: &View,
    path: &Path,
    format: Option<Format>,
    locate: Locate<'_>,
) -> Result<String, String> {
    let picture = Picture::new(db, graph, view, locate)?;
    let format = format.unwrap_or_else(|| Format::of_path(path));
    let text = match format {
        Format::Dot => picture.to_dot(),
        Format::Svg => picture.to_svg()?,
    };
    std::fs::write(path, text).map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    let nodes = picture.shapes.len();
    Ok(format!("wrote the graph ({nodes} nodes, {}) to {}", picture.title, path.display()))
}

/// Where `nabla graph FILE` writes by default: `FILE` with the extension `.graph.svg` (or
/// `.graph.dot`).
pub fn default_path(file: &Path, format: Option<Format>) -> PathBuf {
    let extension = match format {
        Some(Format::Dot) => "graph.dot",
        _ => "graph.svg",
    };
    file.with_extension(extension)
}

impl Picture {
    /// The picture of `graph` as `view` asks, with the places of the operations given by
    /// `locate`; an error when the view selects nothing.
    pub fn new(
        db: &Database,
        graph: &Graph,
        view: &View,
        locate: Locate<'_>,
    ) -> Result<Picture, String> {
        let grouped;
        let graph = if view.group_functions {
            grouped = group_calls(graph);
            &grouped
        } else {
            graph
        };
        let mut keep = select(db, graph, view)?;
        // A `var` that no recorded operation read (it was assigned a new value before any
        // use) is not part of the computation.
        let mut used = vec![false; graph.nodes.len()];
        for node in &graph.nodes {
            for input in &node.inputs {
                if let InputSource::Node(from) = input.source
                    && let Some(slot) = used.get_mut(from)
                {
                    *slot = true;
                }
            }
        }
        for (i, node) in graph.nodes.iter().enumerate() {
            if node.kind == NodeKind::Leaf && !used[i] && graph.output != Some(i) {
                keep[i] = false;
            }
        }
        let mut index_of = vec![usize::MAX; graph.nodes.len()];
        let mut shapes = Vec::new();
        let mut edges = Vec::new();
        for (i, node) in graph.nodes.iter().enumerate() {
            if keep[i] {
                index_of[i] = shapes.len();
                shapes.push(node_shape(db, node, graph.output == Some(i), locate));
            }
        }
        for (i, node) in graph.nodes.iter().enumerate() {
            if !keep[i] {
                continue;
            }
            let to = index_of[i];
            for input in &node.inputs {
                match &input.source {
                    InputSource::Node(from) if keep.get(*from) == Some(&true) => {
                        let from = index_of[*from];
                        edges.push(Edge { from, to, count: input.count, constant: false });
                    }
                    InputSource::Node(_) => {}
                    InputSource::Constant { value, .. } => {
                        let from = shapes.len();
                        shapes.push(Shape {
                            lines: vec![
                                (LineKind::Title, "constant".to_owned()),
                                (LineKind::Plain, value.type_text()),
                                (LineKind::Value, format!("= {value}")),
                            ],
                            style: Style::Constant,
                            output: false,
                        });
                        edges.push(Edge { from, to, count: input.count, constant: true });
                    }
                }
            }
        }
        let title = match graph.backward {
            Some(n) => format!("the recording differentiated by backward number {n}"),
            None => "the recording at the end of the run, not differentiated".to_owned(),
        };
        Ok(Picture { shapes, edges, title })
    }

    /// The picture in Graphviz's DOT language, with HTML-like labels: each line of a node's label
    /// on its own line, values in green and gradients in red.
    pub fn to_dot(&self) -> String {
        let mut dot = String::from("digraph nabla {\n");
        let _ = writeln!(dot, "  label=\"{}\";", escape_html(&self.title));
        dot.push_str("  rankdir=TB;\n");
        dot.push_str("  node [shape=box, style=\"rounded,filled\", fontname=\"DejaVu Sans Mono\", fontsize=11];\n");
        dot.push_str("  edge [color=\"#57606a\", fontname=\"DejaVu Sans Mono\", fontsize=10];\n");
        for (i, shape) in self.shapes.iter().enumerate() {
            let (fill, border) = colours(shape.style);
            let width = if shape.output { 3 } else { 1 };
            let label: Vec<String> = shape
                .lines
                .iter()
                .map(|(kind, text)| {
                    let text = escape_html(text);
                    match kind {
                        LineKind::Title => format!("<b>{text}</b>"),
                        LineKind::Plain => text,
                        LineKind::Value => format!("<font color=\"{VALUE_COLOUR}\">{text}</font>"),
                        LineKind::Gradient => {
                            format!("<font color=\"{GRADIENT_COLOUR}\">{text}</font>")
                        }
                    }
                })
                .collect();
            let kind = match shape.style {
                Style::Leaf => "leaf",
                Style::Operation => "operation",
                Style::Constant => "constant",
                Style::Call => "call",
            };
            let _ = writeln!(
                dot,
                "  n{i} [class=\"{kind}\", fillcolor=\"{fill}\", color=\"{border}\", penwidth={width}, label=<{}>];",
                label.join("<br/>")
            );
        }
        for edge in &self.edges {
            let mut attributes = Vec::new();
            if edge.count > 1 {
                attributes.push(format!("label=\"×{}\"", edge.count));
            }
            if edge.constant {
                attributes.push("style=dashed".to_owned());
            }
            let attributes = if attributes.is_empty() {
                String::new()
            } else {
                format!(" [{}]", attributes.join(", "))
            };
            let _ = writeln!(dot, "  n{} -> n{}{attributes};", edge.from, edge.to);
        }
        dot.push_str("}\n");
        dot
    }

    /// The picture as a self-contained SVG, laid out by `layout-rs`.
    pub fn to_svg(&self) -> Result<String, String> {
        if self.shapes.len() > MAX_LAID_OUT {
            return Err(format!(
                "the graph has {} nodes, too many to lay out (at most {MAX_LAID_OUT}): draw part of it with --from LINE and --depth N, group function calls with --group functions, or write DOT",
                self.shapes.len()
            ));
        }
        let mut graph = VisualGraph::new(Orientation::TopToBottom);
        let handles: Vec<_> = self
            .shapes
            .iter()
            .map(|shape| {
                let (fill, border) = colours(shape.style);
                let width = if shape.output { 3 } else { 1 };
                let look = StyleAttr::new(
                    colour(border),
                    width,
                    Some(colour(fill)),
                    6,
                    FONT_SIZE as usize,
                );
                let lines = wrapped(&shape.lines);
                let text: Vec<String> =
                    lines.iter().map(|(kind, text)| format!("{}{text}", marker(*kind))).collect();
                let longest = lines.iter().map(|(_, text)| text.chars().count()).max().unwrap_or(1);
                let size = Point::new(
                    longest as f64 * CHAR_WIDTH + 2.0 * PADDING,
                    lines.len() as f64 * LINE_HEIGHT + 2.0 * PADDING,
                );
                let element = Element::create(
                    ShapeKind::new_box(&text.join("\n")),
                    look,
                    Orientation::TopToBottom,
                    size,
                );
                graph.add_node(element)
            })
            .collect();
        for edge in &self.edges {
            let (Some(&from), Some(&to)) = (handles.get(edge.from), handles.get(edge.to)) else {
                continue;
            };
            let label = if edge.count > 1 { format!("×{}", edge.count) } else { String::new() };
            let style = if edge.constant { LineStyleKind::Dashed } else { LineStyleKind::Normal };
            let look = StyleAttr::new(colour(EDGE_COLOUR), 1, None, 0, FONT_SIZE as usize - 1);
            let arrow = Arrow::new(
                LineEndKind::None,
                LineEndKind::Arrow,
                style,
                &label,
                &look,
                &None,
                &None,
            );
            graph.add_edge(arrow, from, to);
        }
        let mut canvas = Canvas::default();
        // The layout must not take a malformed picture down with it: a panic in the layout
        // crate becomes an error of this command.
        let laid_out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            graph.do_it(false, false, false, &mut canvas);
        }));
        if laid_out.is_err() {
            return Err("the graph could not be laid out as SVG; write it as DOT instead".into());
        }
        Ok(canvas.finish(&self.title))
    }
}

const VALUE_COLOUR: &str = "#1a7f37";
const GRADIENT_COLOUR: &str = "#cf222e";
const EDGE_COLOUR: &str = "#57606a";
const FONT_SIZE: f64 = 12.0;
/// The advance of one character of a monospace font at [`FONT_SIZE`].
const CHAR_WIDTH: f64 = FONT_SIZE * 0.61;
const LINE_HEIGHT: f64 = FONT_SIZE * 1.3;
const PADDING: f64 = 8.0;

/// Fill and border colours of a style.
fn colours(style: Style) -> (&'static str, &'static str) {
    match style {
        Style::Leaf => ("#dafbe1", "#1a7f37"),
        Style::Operation => ("#ffffff", "#24292f"),
        Style::Constant => ("#eaeef2", "#8c959f"),
        Style::Call => ("#ddf4ff", "#0969da"),
    }
}

fn colour(hex: &str) -> Color {
    Color::new(u32::from_str_radix(hex.trim_start_matches('#'), 16).unwrap_or(0) << 8 | 0xff)
}

/// The character a line of a node's text starts with in the layout, telling the canvas how to
/// draw it (layout-rs hands a node's text over whole).
fn marker(kind: LineKind) -> char {
    match kind {
        LineKind::Title => '\u{1}',
        LineKind::Plain => '\u{2}',
        LineKind::Value => '\u{3}',
        LineKind::Gradient => '\u{4}',
    }
}

/// Lines no longer than [`LINE_CHARS`], values and gradients continued on at most
/// [`VALUE_LINES`] lines.
fn wrapped(lines: &[(LineKind, String)]) -> Vec<(LineKind, String)> {
    let mut out = Vec::new();
    for (kind, text) in lines {
        let chars: Vec<char> = text.chars().collect();
        let most = match kind {
            LineKind::Value | LineKind::Gradient => VALUE_LINES,
            _ => 1,
        };
        let pieces: Vec<String> = chars.chunks(LINE_CHARS).map(|c| c.iter().collect()).collect();
        for (i, piece) in pieces.iter().enumerate().take(most) {
            let mut piece = if i == 0 { piece.clone() } else { format!("  {piece}") };
            if i + 1 == most && pieces.len() > most {
                piece.push('…');
            }
            out.push((*kind, piece));
        }
    }
    out
}

/// `&`, `<`, `>` and `"` as XML entities.
fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// A source span's file, 1-based line and text.
fn span_text(db: &Database, frame: &StackFrame) -> (SourceFile, u32, String) {
    let (file, range) = hir::file_range(db, frame.span);
    let text = file.text(db);
    let index = LineIndex::new(text);
    let (line, _) = index.line_col_1based(range.start());
    let source = text.get(usize::from(range.start())..usize::from(range.end())).unwrap_or("");
    (file, line, source.to_owned())
}

/// How a picture names the place of an operation by default: its file's name and the line.
fn file_name_and_line(db: &Database) -> impl Fn(SourceFile, u32) -> (String, u32) + '_ {
    move |file, line| {
        let name = file.path(db).file_name().map(|n| n.to_string_lossy().into_owned());
        (name.unwrap_or_default(), line)
    }
}

/// Source text on one line with its runs of white space made one space, cut to `most`
/// characters.
fn one_line(text: &str, most: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= most {
        return joined;
    }
    let cut: String = joined.chars().take(most.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// The name a leaf's source declares or reads: `w` of `var Tensor w[2][1] = ...` or of `w`.
fn leaf_name(source: &str) -> String {
    let words: Vec<&str> = source
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .collect();
    let name = match words.as_slice() {
        ["var", "Tensor" | "float" | "int", name, ..] => name,
        [name, ..] => name,
        [] => "?",
    };
    (*name).to_owned()
}

/// The label and style of a node.
fn node_shape(db: &Database, node: &Node, output: bool, locate: Locate<'_>) -> Shape {
    let place = node.stack.first().map(|frame| {
        let (file, line, source) = span_text(db, frame);
        let (name, line) = locate(file, line);
        (frame, (name, line, source))
    });
    let count = if node.count > 1 { format!("  ×{}", node.count) } else { String::new() };
    let call = node.op == "call";
    let title = match (node.kind, &place) {
        (NodeKind::Leaf, Some((_, (_, _, source)))) => format!("var {}", leaf_name(source)),
        (_, Some((frame, _))) if call => format!("call {}", frame.function),
        _ => node.op.to_owned(),
    };
    let mut lines = vec![(LineKind::Title, format!("{title}{count}"))];
    if let Some((frame, (file, line, source))) = &place {
        let within = match node.stack.len() {
            1 => String::new(),
            _ => format!(" in {}", frame.function),
        };
        let within = if call { String::new() } else { within };
        lines.push((LineKind::Plain, format!("{file}:{line}{within}: {}", one_line(source, 40))));
    } else {
        // Recorded before the trace started: by an earlier entry of the REPL.
        lines.push((LineKind::Plain, "from an earlier entry".to_owned()));
    }
    let value = node.value.as_ref();
    if let Some(value) = value {
        lines.push((LineKind::Plain, value.type_text()));
        lines.push((LineKind::Value, format!("= {value}")));
    }
    if let Some(gradient) = &node.gradient {
        lines.push((LineKind::Gradient, format!("∇ {gradient}")));
    }
    let style = match node.kind {
        NodeKind::Leaf => Style::Leaf,
        NodeKind::Operation if call => Style::Call,
        NodeKind::Operation => Style::Operation,
    };
    Shape { lines, style, output }
}

/// Which nodes `view` keeps: those within `depth` edges upstream of the nodes at line `from`
/// (the whole graph without `from`, or upstream of the output with only `depth`).
fn select(db: &Database, graph: &Graph, view: &View) -> Result<Vec<bool>, String> {
    let n = graph.nodes.len();
    let roots: Vec<usize> = match view.from {
        Some(line) => {
            let at_line: Vec<usize> = (0..n)
                .filter(|&i| {
                    graph.nodes[i].stack.first().is_some_and(|frame| span_text(db, frame).1 == line)
                })
                .collect();
            if at_line.is_empty() {
                return Err(format!(
                    "no recorded operation is at line {line}: --from takes the line of an operation that depends on a `var`"
                ));
            }
            at_line
        }
        None if view.depth.is_some() => match graph.output {
            Some(output) => vec![output],
            None => (0..n).collect(),
        },
        None => return Ok(vec![true; n]),
    };
    let mut keep = vec![false; n];
    let mut frontier = roots;
    let mut depth = 0;
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for i in frontier {
            if keep[i] {
                continue;
            }
            keep[i] = true;
            if view.depth.is_some_and(|most| depth >= most) {
                continue;
            }
            for input in &graph.nodes[i].inputs {
                if let InputSource::Node(from) = input.source
                    && from < n
                    && !keep[from]
                {
                    next.push(from);
                }
            }
        }
        frontier = next;
        depth += 1;
    }
    Ok(keep)
}

/// `graph` with the nodes made inside each call from the top level (or from a test) merged into
/// one node per call site, named after the function: its value and gradient are those of the
/// call's last node, its inputs the edges that come from outside the call.
pub fn group_calls(graph: &Graph) -> Graph {
    // The call site (the outermost frame) and the function called from it, for nodes made
    // inside a call.
    let key = |node: &Node| -> Option<(hir::HirSpan, String)> {
        let len = node.stack.len();
        (len >= 2).then(|| (node.stack[len - 1].span, node.stack[len - 2].function.clone()))
    };
    let mut group_of: Vec<usize> = Vec::with_capacity(graph.nodes.len());
    let mut nodes: Vec<Node> = Vec::new();
    let mut groups: Vec<((hir::HirSpan, String), usize)> = Vec::new();
    for node in &graph.nodes {
        let target = match key(node) {
            Some(key) => match groups.iter().find(|(k, _)| *k == key) {
                Some(&(_, index)) => {
                    let merged = &mut nodes[index];
                    merged.count = merged.count.max(node.count);
                    if node.value.is_some() {
                        merged.value = node.value.clone();
                        merged.gradient = node.gradient.clone();
                    }
                    index
                }
                None => {
                    let index = nodes.len();
                    let call_site = node.stack[node.stack.len() - 1].clone();
                    nodes.push(Node {
                        op: "call",
                        kind: NodeKind::Operation,
                        stack: vec![StackFrame { function: key.1.clone(), span: call_site.span }],
                        count: node.count,
                        value: node.value.clone(),
                        gradient: node.gradient.clone(),
                        inputs: Vec::new(),
                    });
                    groups.push((key, index));
                    index
                }
            },
            None => {
                nodes.push(Node { inputs: Vec::new(), ..node.clone() });
                nodes.len() - 1
            }
        };
        group_of.push(target);
    }
    for (i, node) in graph.nodes.iter().enumerate() {
        let to = group_of[i];
        for input in &node.inputs {
            let source = match &input.source {
                InputSource::Node(from) => match group_of.get(*from) {
                    Some(&from) if from == to => continue,
                    Some(&from) => InputSource::Node(from),
                    None => continue,
                },
                constant => constant.clone(),
            };
            let inputs = &mut nodes[to].inputs;
            match inputs.iter_mut().find(|existing| existing.source == source) {
                Some(existing) => existing.count = existing.count.max(input.count),
                None => inputs.push(exec::autodiff::GraphInput { source, count: input.count }),
            }
        }
    }
    for (index, (_, function)) in groups.iter().map(|(key, index)| (*index, key)) {
        nodes[index].op = "call";
        nodes[index].stack[0].function = function.clone();
    }
    Graph {
        nodes,
        backward: graph.backward,
        output: graph.output.and_then(|output| group_of.get(output).copied()),
        records: graph.records,
        truncated: graph.truncated,
    }
}

/// A [`RenderBackend`] that writes SVG with the picture's colours and a monospace font, drawing
/// each line of a node's text as its marker says (see [`marker`]).
#[derive(Default)]
struct Canvas {
    body: String,
    clips: Vec<String>,
    width: f64,
    height: f64,
    paths: usize,
}

impl Canvas {
    fn grow(&mut self, corner: Point) {
        self.width = self.width.max(corner.x + 10.0);
        self.height = self.height.max(corner.y + 10.0);
    }

    fn finish(&self, title: &str) -> String {
        let (width, height) = (self.width.ceil(), self.height.ceil());
        let mut svg = String::new();
        let _ = writeln!(
            svg,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">"
        );
        let _ = writeln!(svg, "<title>{}</title>", escape_html(title));
        svg.push_str(
            "<style>text { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: 12px; fill: #24292f; }\n\
             .title { font-weight: bold; }\n\
             .value { fill: #1a7f37; }\n\
             .gradient { fill: #cf222e; }\n\
             .count { font-size: 11px; fill: #57606a; }</style>\n",
        );
        svg.push_str(
            "<defs><marker id=\"head\" markerWidth=\"10\" markerHeight=\"7\" refX=\"10\" refY=\"3.5\" orient=\"auto\"><polygon points=\"0 0, 10 3.5, 0 7\" fill=\"#57606a\"/></marker></defs>\n",
        );
        for clip in &self.clips {
            svg.push_str(clip);
        }
        let _ = writeln!(svg, "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>");
        svg.push_str(&self.body);
        svg.push_str("</svg>\n");
        svg
    }
}

impl RenderBackend for Canvas {
    fn draw_rect(
        &mut self,
        xy: Point,
        size: Point,
        look: &StyleAttr,
        _properties: Option<String>,
        clip: Option<ClipHandle>,
    ) {
        self.grow(Point::new(xy.x + size.x, xy.y + size.y));
        let fill = look.fill_color.map_or("none".to_owned(), |c| c.to_web_color());
        let clip = clip.map_or(String::new(), |c| format!(" clip-path=\"url(#clip{c})\""));
        let _ = writeln!(
            self.body,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"{}\" fill=\"{fill}\" stroke=\"{}\" stroke-width=\"{}\"{clip}/>",
            xy.x,
            xy.y,
            size.x,
            size.y,
            look.rounded,
            look.line_color.to_web_color(),
            look.line_width
        );
    }

    fn draw_line(
        &mut self,
        start: Point,
        stop: Point,
        look: &StyleAttr,
        _properties: Option<String>,
    ) {
        let _ = writeln!(
            self.body,
            "<line x1=\"{:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"{}\" stroke-width=\"{}\"/>",
            start.x,
            start.y,
            stop.x,
            stop.y,
            look.line_color.to_web_color(),
            look.line_width
        );
    }

    fn draw_circle(
        &mut self,
        xy: Point,
        size: Point,
        look: &StyleAttr,
        _properties: Option<String>,
    ) {
        self.grow(Point::new(xy.x + size.x / 2.0, xy.y + size.y / 2.0));
        let fill = look.fill_color.map_or("none".to_owned(), |c| c.to_web_color());
        let _ = writeln!(
            self.body,
            "<ellipse cx=\"{:.1}\" cy=\"{:.1}\" rx=\"{:.1}\" ry=\"{:.1}\" fill=\"{fill}\" stroke=\"{}\"/>",
            xy.x,
            xy.y,
            size.x / 2.0,
            size.y / 2.0,
            look.line_color.to_web_color()
        );
    }

    fn draw_text(&mut self, xy: Point, text: &str, _look: &StyleAttr) {
        let lines: Vec<&str> = text.lines().collect();
        let longest = lines.iter().map(|line| line.chars().count().saturating_sub(1)).max();
        let left = xy.x - longest.unwrap_or(0) as f64 * CHAR_WIDTH / 2.0;
        let top = xy.y - lines.len() as f64 * LINE_HEIGHT / 2.0;
        for (i, line) in lines.iter().enumerate() {
            // Node text starts each line with a marker; an edge's count has none.
            let (class, text) = match line.chars().next() {
                Some('\u{1}') => ("title", &line[1..]),
                Some('\u{2}') => ("", &line[1..]),
                Some('\u{3}') => ("value", &line[1..]),
                Some('\u{4}') => ("gradient", &line[1..]),
                _ => ("count", *line),
            };
            let y = top + (i as f64 + 0.75) * LINE_HEIGHT;
            let _ = writeln!(
                self.body,
                "<text x=\"{left:.1}\" y=\"{y:.1}\" class=\"{class}\" xml:space=\"preserve\">{}</text>",
                escape_html(text)
            );
        }
    }

    fn draw_arrow(
        &mut self,
        path: &[(Point, Point)],
        dashed: bool,
        head: (bool, bool),
        look: &StyleAttr,
        _properties: Option<String>,
        text: &str,
    ) {
        let [first, second, rest @ ..] = path else { return };
        for point in path {
            self.grow(point.0);
            self.grow(point.1);
        }
        let mut d = format!(
            "M {:.1} {:.1} C {:.1} {:.1}, {:.1} {:.1}, {:.1} {:.1}",
            first.0.x,
            first.0.y,
            first.1.x,
            first.1.y,
            second.0.x,
            second.0.y,
            second.1.x,
            second.1.y
        );
        for point in rest {
            let _ = write!(
                d,
                " S {:.1} {:.1}, {:.1} {:.1}",
                point.0.x, point.0.y, point.1.x, point.1.y
            );
        }
        let dash = if dashed { " stroke-dasharray=\"5,4\"" } else { "" };
        let end = if head.1 { " marker-end=\"url(#head)\"" } else { "" };
        let id = self.paths;
        self.paths += 1;
        let _ = writeln!(
            self.body,
            "<path id=\"edge{id}\" d=\"{d}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"{dash}{end}/>",
            look.line_color.to_web_color(),
            look.line_width
        );
        if !text.is_empty() {
            let _ = writeln!(
                self.body,
                "<text class=\"count\"><textPath href=\"#edge{id}\" startOffset=\"50%\" text-anchor=\"middle\">{}</textPath></text>",
                escape_html(text)
            );
        }
    }

    fn create_clip(&mut self, xy: Point, size: Point, rounded_px: usize) -> ClipHandle {
        let handle = self.clips.len();
        self.clips.push(format!(
            "<clipPath id=\"clip{handle}\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"{rounded_px}\"/></clipPath>\n",
            xy.x, xy.y, size.x, size.y
        ));
        handle
    }
}
