//! What the tape remembers about its records when a host asks for it: where each record was made
//! (for `--check-nan`, which names the operation whose backward rule made a NaN), and the program
//! tape's graph with values and gradients (for the picture of `nabla graph`).
//!
//! This is the documented way to read the tape from outside the engine; nothing records twice.
//! The records stay the tape's own (`op.rs`, `store.rs`); a [`RecordLog`] only notes, as each
//! record is appended, the host's [`Site`] (an opaque pair the interpreter sets before every
//! instruction) and, for the graph, a summary of the record's value and of its untracked
//! operands. Without a log the tape pays nothing: the hooks sit on the general recording path
//! ([`Tape::push`](super::Tape)) and on the out-of-line scalar path, which a tape with a log
//! takes for every scalar record (see [`Records::slow`](super::store::Records)), so the
//! interpreter's fast paths are the same instructions with or without this module.
//!
//! The graph is kept *collapsed* as it is recorded: records made by the same instruction under
//! the same call stack with the same operation (the iterations of a loop) share one
//! [`GraphNode`] that counts them and shows the last one's value and gradient, and repeated edges
//! between two nodes are one edge with a count. A loop of a million iterations is then a handful
//! of nodes and a back edge, in memory as on the page. [`GraphOptions::collapse`] off keeps one
//! node per record, up to [`GraphBuilder::EXPANDED_LIMIT`] records, after which the rest
//! collapse.

use rustc_hash::FxHashMap;

use super::adjoints::Adjoint;
use super::op::Op;
use crate::value::{Primal, Value};
use tensor::{Tensor, format_float};

/// Where a record was made, in the host's terms: the interpreter's number for the call stack
/// and the instruction. The tape only stores and compares it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Site {
    pub stack: u32,
    pub pc: u32,
}

impl Site {
    /// The `stack` of the site of a record made before the log started, which no host's stack
    /// numbers: its `pc` is the record's tape index, so that each such record is its own node.
    pub const EARLIER: u32 = u32::MAX;
}

/// What a run's tape keeps besides its records.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceOptions {
    /// Keep the program tape's graph for a picture.
    pub graph: Option<GraphOptions>,
    /// Check every backward rule's results for NaN and infinities.
    pub check_nan: bool,
}

/// Which of the run's graphs to keep, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphOptions {
    /// The records of one instruction under one call stack share a node (see the module
    /// documentation).
    pub collapse: bool,
    /// Keep the graph differentiated by this `backward` (1 for the first); `None` keeps the last
    /// one. A run with no `backward` (or fewer) keeps the recording at its end.
    pub backward: Option<u64>,
}

impl Default for GraphOptions {
    fn default() -> GraphOptions {
        GraphOptions { collapse: true, backward: None }
    }
}

/// A value as the picture shows it: a number, a small tensor whole, a large one by its extremes,
/// its mean and how many of its elements are not finite.
#[derive(Clone, Debug, PartialEq)]
pub enum Summary {
    Float(f64),
    Tensor { shape: Box<[usize]>, elements: Box<[f64]> },
    Large { shape: Box<[usize]>, min: f64, max: f64, mean: f64, non_finite: usize },
}

impl Summary {
    /// Tensors of at most this many elements are kept whole.
    pub const SMALL: usize = 16;

    /// The summary of a `float` or a tensor; `None` for the other types.
    pub fn of(value: &Value) -> Option<Summary> {
        match value.primal() {
            Primal::Float(x) => Some(Summary::Float(x)),
            Primal::Tensor(tensor) => Some(Summary::of_tensor(tensor)),
            Primal::Int(_) | Primal::Bool(_) | Primal::Char(_) => None,
        }
    }

    pub fn of_tensor(tensor: &Tensor) -> Summary {
        let shape: Box<[usize]> = tensor.shape().into();
        if tensor.len() <= Summary::SMALL {
            return Summary::Tensor { shape, elements: tensor.to_vec().into() };
        }
        let (mut min, mut max, mut sum, mut non_finite) =
            (f64::INFINITY, f64::NEG_INFINITY, 0.0, 0);
        let mut finite = 0usize;
        tensor.view().iter().for_each(|&x| {
            if x.is_finite() {
                min = min.min(x);
                max = max.max(x);
                sum += x;
                finite += 1;
            } else {
                non_finite += 1;
            }
        });
        let mean = if finite > 0 { sum / finite as f64 } else { f64::NAN };
        if finite == 0 {
            (min, max) = (f64::NAN, f64::NAN);
        }
        Summary::Large { shape, min, max, mean, non_finite }
    }

    /// The summary of an adjoint of the backward pass.
    pub(crate) fn of_adjoint(adjoint: &Adjoint) -> Option<Summary> {
        match adjoint {
            Adjoint::Value(value) => Summary::of(value),
            Adjoint::Uniform(uniform) => {
                let shape: Box<[usize]> = uniform.shape.clone();
                let len: usize = shape.iter().product();
                let value = uniform.value;
                Some(if len <= Summary::SMALL {
                    Summary::Tensor { shape, elements: vec![value; len].into() }
                } else {
                    let non_finite = if value.is_finite() { 0 } else { len };
                    Summary::Large { shape, min: value, max: value, mean: value, non_finite }
                })
            }
        }
    }

    /// The extents: none for a float.
    pub fn shape(&self) -> &[usize] {
        match self {
            Summary::Float(_) => &[],
            Summary::Tensor { shape, .. } | Summary::Large { shape, .. } => shape,
        }
    }

    /// Whether every element is finite.
    pub fn is_finite(&self) -> bool {
        match self {
            Summary::Float(x) => x.is_finite(),
            Summary::Tensor { elements, .. } => elements.iter().all(|x| x.is_finite()),
            Summary::Large { non_finite, .. } => *non_finite == 0,
        }
    }

    /// Whether an element is NaN (not only infinite); a large tensor's summary counts its
    /// non-finite elements without telling them apart, and says so.
    pub fn has_nan(&self) -> bool {
        match self {
            Summary::Float(x) => x.is_nan(),
            Summary::Tensor { elements, .. } => elements.iter().any(|x| x.is_nan()),
            Summary::Large { non_finite, min, .. } => *non_finite > 0 && min.is_nan(),
        }
    }

    /// "a NaN" or "an infinity", for messages about a value that is not finite.
    pub fn non_finite_kind(&self) -> &'static str {
        if self.has_nan() { "a NaN" } else { "an infinity" }
    }

    /// The type as messages write it: `float`, `Tensor[2][3]`, `Tensor[]`.
    pub fn type_text(&self) -> String {
        match self {
            Summary::Float(_) => "float".to_owned(),
            _ => {
                let dims: String = self.shape().iter().map(|d| format!("[{d}]")).collect();
                if dims.is_empty() { "Tensor[]".to_owned() } else { format!("Tensor{dims}") }
            }
        }
    }
}

/// One line of text: a float as `print` writes it, a small tensor as nested brackets, a large one
/// as `min .. max, mean m` (and how many elements are NaN or infinite).
impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Summary::Float(x) => f.write_str(&format_float(*x)),
            Summary::Tensor { shape, elements } => write_nested(f, shape, elements),
            Summary::Large { min, max, mean, non_finite, .. } => {
                let (min, max, mean) =
                    (format_float(*min), format_float(*max), format_float(*mean));
                write!(f, "{min} .. {max}, mean {mean}")?;
                match non_finite {
                    0 => Ok(()),
                    n => write!(f, ", {n} not finite"),
                }
            }
        }
    }
}

/// `elements` laid out row-major in `shape`, as nested brackets on one line.
fn write_nested(
    f: &mut std::fmt::Formatter<'_>,
    shape: &[usize],
    elements: &[f64],
) -> std::fmt::Result {
    match shape.split_first() {
        None => f.write_str(&elements.first().map_or_else(String::new, |x| format_float(*x))),
        Some((&extent, rest)) => {
            let stride: usize = rest.iter().product();
            f.write_str("[")?;
            for i in 0..extent {
                if i > 0 {
                    f.write_str(", ")?;
                }
                let part = elements.get(i * stride..(i + 1) * stride).unwrap_or_default();
                write_nested(f, rest, part)?;
            }
            f.write_str("]")
        }
    }
}

/// Where an input of a [`GraphNode`] comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum InputSource {
    /// Another node (an index into [`TapeGraph::nodes`]).
    Node(usize),
    /// An operand no `var` reaches (a constant for differentiation), at this position among the
    /// operation's operands, with its last value.
    Constant { operand: u32, value: Summary },
}

/// An edge into a node: where it comes from and how many records it stands for.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphInput {
    pub source: InputSource,
    pub count: u64,
}

/// A node of the program tape's graph: one record, or the records of one instruction under one
/// call stack (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct GraphNode {
    /// The operation (`@`, `sin`, `sum`, `var` for a leaf; `float op` for a scalar record, whose
    /// instruction the host knows from `site`).
    pub op: &'static str,
    pub site: Site,
    /// How many records the node stands for.
    pub count: u64,
    /// The last record's value.
    pub value: Option<Summary>,
    /// The last record's gradient, once a `backward` differentiated the graph (`None` where no
    /// gradient reached it, or before any `backward`).
    pub gradient: Option<Summary>,
    pub inputs: Vec<GraphInput>,
    /// The tape index of the last record, for its gradient.
    last: u32,
}

impl GraphNode {
    /// Whether the node is a `var` (a leaf of the graph).
    pub fn is_leaf(&self) -> bool {
        self.op == "var"
    }
}

/// The graph of one recording of the program tape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TapeGraph {
    pub nodes: Vec<GraphNode>,
    /// Which `backward` differentiated it (1 for the first), `None` for a recording no
    /// `backward` reached.
    pub backward: Option<u64>,
    /// The node `backward` started from.
    pub output: Option<usize>,
    /// How many records the recording had.
    pub records: u64,
    /// Whether [`GraphOptions::collapse`] was off but the recording was too long to show a node
    /// per record, so its tail collapsed.
    pub truncated: bool,
}

/// The graph of the recording in progress, collapsed as it grows.
#[derive(Debug)]
struct GraphBuilder {
    collapse: bool,
    /// The node of each record, by tape index (`u32::MAX` for positions that are not a node).
    node_of: Vec<u32>,
    graph: TapeGraph,
    keys: FxHashMap<(Site, &'static str), u32>,
}

impl GraphBuilder {
    /// The most records shown one node each when collapsing is off.
    const EXPANDED_LIMIT: usize = 5_000;

    fn new(collapse: bool) -> GraphBuilder {
        GraphBuilder {
            collapse,
            node_of: Vec::new(),
            graph: TapeGraph::default(),
            keys: FxHashMap::default(),
        }
    }

    fn add(
        &mut self,
        index: usize,
        op: &Op,
        site: Site,
        value: Option<Summary>,
        constants: Vec<(u32, Summary)>,
    ) {
        let name = op.name();
        let expanded = !self.collapse && self.graph.nodes.len() < Self::EXPANDED_LIMIT;
        if !self.collapse && !expanded {
            self.graph.truncated = true;
        }
        let existing = if expanded { None } else { self.keys.get(&(site, name)).copied() };
        let node = match existing {
            Some(node) => node,
            None => {
                let node = self.graph.nodes.len() as u32;
                self.graph.nodes.push(GraphNode {
                    op: name,
                    site,
                    count: 0,
                    value: None,
                    gradient: None,
                    inputs: Vec::new(),
                    last: 0,
                });
                if !expanded {
                    self.keys.insert((site, name), node);
                }
                node
            }
        };
        let sources: Vec<InputSource> = op
            .inputs()
            .into_iter()
            .filter_map(|input| {
                let from = *self.node_of.get(input as usize)?;
                (from != u32::MAX).then_some(InputSource::Node(from as usize))
            })
            .chain(
                constants
                    .into_iter()
                    .map(|(operand, value)| InputSource::Constant { operand, value }),
            )
            .collect();
        let Some(entry) = self.graph.nodes.get_mut(node as usize) else { return };
        entry.count += 1;
        entry.value = value;
        entry.last = index as u32;
        for source in sources {
            let same = |input: &GraphInput| match (&input.source, &source) {
                (InputSource::Node(a), InputSource::Node(b)) => a == b,
                (
                    InputSource::Constant { operand: a, .. },
                    InputSource::Constant { operand: b, .. },
                ) => a == b,
                _ => false,
            };
            match entry.inputs.iter_mut().find(|input| same(input)) {
                Some(input) => {
                    input.count += 1;
                    input.source = source;
                }
                None => entry.inputs.push(GraphInput { source, count: 1 }),
            }
        }
        if self.node_of.len() <= index {
            self.node_of.resize(index + 1, u32::MAX);
        }
        self.node_of[index] = node;
        self.graph.records += 1;
    }
}

/// What a tape with trace options notes about its records (see the module documentation).
#[derive(Debug)]
pub(crate) struct RecordLog {
    pub(crate) options: TraceOptions,
    /// The site of the instruction running now.
    pub(crate) site: Site,
    /// Per level, the site of each record by serial, in the order they were appended.
    sites: Vec<Vec<(u64, Site)>>,
    /// The untracked operands of the operation being recorded at the program level, noted when
    /// its operands were lifted.
    pending_constants: Vec<(u32, Summary)>,
    building: Option<GraphBuilder>,
    kept: Option<TapeGraph>,
    backwards: u64,
    /// The program tape's records below this index were made before the log started (by an
    /// earlier entry of a session, see [`Tape::trace`](super::Tape::trace)).
    earlier_end: usize,
}

impl RecordLog {
    pub(crate) fn new(options: TraceOptions) -> RecordLog {
        RecordLog {
            options,
            site: Site::default(),
            sites: Vec::new(),
            pending_constants: Vec::new(),
            building: options.graph.map(|graph| GraphBuilder::new(graph.collapse)),
            kept: None,
            backwards: 0,
            earlier_end: 0,
        }
    }

    /// A log started on a tape whose program recording already holds `records` index positions.
    pub(crate) fn started_after(options: TraceOptions, records: usize) -> RecordLog {
        RecordLog { earlier_end: records, ..RecordLog::new(options) }
    }

    /// Whether the program tape's record at `index` was made before the log started and has no
    /// node in the graph yet.
    pub(crate) fn wants_earlier(&self, index: usize) -> bool {
        index < self.earlier_end
            && self.building.as_ref().is_some_and(|builder| {
                builder.node_of.get(index).is_none_or(|&node| node == u32::MAX)
            })
    }

    /// Gives the program tape's record at `index`, made before the log started, a node of its
    /// own: its operation and the value it had when an operation now read it (`None` when that is
    /// not known), with no site and no inputs.
    pub(crate) fn note_earlier(&mut self, index: usize, op: &Op, value: Option<Summary>) {
        if let Some(builder) = &mut self.building {
            let site = Site { stack: Site::EARLIER, pc: index as u32 };
            builder.add(index, op, site, value, Vec::new());
        }
    }

    /// Whether the graph of the program tape is being built.
    pub(crate) fn builds_graph(&self) -> bool {
        self.building.is_some()
    }

    /// Notes the untracked operands of an operation about to be recorded at the program level.
    pub(crate) fn note_constants<'a>(&mut self, operands: impl Iterator<Item = (u32, &'a Value)>) {
        self.pending_constants.clear();
        self.pending_constants
            .extend(operands.filter_map(|(position, value)| Some((position, Summary::of(value)?))));
    }

    /// Notes the record appended at tape index `index` (serial `serial`) of `level`.
    pub(crate) fn note(&mut self, level: usize, index: usize, serial: u64, op: &Op, value: &Value) {
        if self.sites.len() <= level {
            self.sites.resize_with(level + 1, Vec::new);
        }
        self.sites[level].push((serial, self.site));
        if level != 0 {
            return;
        }
        let constants = std::mem::take(&mut self.pending_constants);
        if let Some(builder) = &mut self.building {
            builder.add(index, op, self.site, Summary::of(value), constants);
        }
    }

    /// The site of the record with `serial` on `level`, if it was noted.
    pub(crate) fn site_of(&self, level: usize, serial: u64) -> Option<Site> {
        let sites = self.sites.get(level)?;
        let at = sites.binary_search_by_key(&serial, |&(s, _)| s).ok()?;
        sites.get(at).map(|&(_, site)| site)
    }

    /// Forgets the sites of a level's finished recording (when the level opens again, or after
    /// the program tape's `backward`).
    pub(crate) fn forget_level(&mut self, level: usize) {
        if let Some(sites) = self.sites.get_mut(level) {
            sites.clear();
        }
    }

    /// A `backward` from the record at tape index `output` differentiated the program tape;
    /// `gradient(index)` gives a record's gradient. Keeps the graph if it is the one asked for,
    /// and starts the next.
    pub(crate) fn finish_backward(
        &mut self,
        output: usize,
        gradient: impl Fn(usize) -> Option<Summary>,
    ) {
        self.backwards += 1;
        self.earlier_end = 0;
        self.forget_level(0);
        let Some(options) = self.options.graph else { return };
        let Some(builder) = self.building.take() else { return };
        let wanted = options.backward.is_none_or(|n| n == self.backwards);
        if wanted {
            let mut graph = builder.graph;
            for node in &mut graph.nodes {
                node.gradient = gradient(node.last as usize);
            }
            graph.output = builder.node_of.get(output).map(|&n| n as usize);
            graph.backward = Some(self.backwards);
            self.kept = Some(graph);
        }
        let done = options.backward.is_some_and(|n| n <= self.backwards);
        if !done {
            self.building = Some(GraphBuilder::new(options.collapse));
        }
    }

    /// The graph asked for: the one kept at a `backward`, or else the recording so far.
    pub(crate) fn take_graph(&mut self) -> Option<TapeGraph> {
        self.kept.take().or_else(|| self.building.take().map(|builder| builder.graph))
    }
}
