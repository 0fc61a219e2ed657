//! The computational graph a traced run recorded, in the program's terms: what `nabla graph`
//! draws and the REPL's `:graph` shows.
//!
//! A run traced with [`GraphOptions`](crate::autodiff::GraphOptions) (see
//! [`Machine::trace`](crate::interp::Machine::trace)) keeps the program tape's graph as the tape
//! records it (`autodiff::trace`): a node per operation, or per instruction and call stack when
//! the iterations of loops are collapsed, with the last value and, after a `backward`, the last
//! gradient. [`Machine::take_graph`](crate::interp::Machine::take_graph) resolves each node's
//! site into its source span and the stack of calls it was made under, which is all a host needs
//! to label and group the nodes; this module knows no source text.

use crate::autodiff::{GraphInput, Summary};
use crate::error::StackFrame;

pub use crate::autodiff::{GraphOptions, InputSource, TraceOptions};

/// Whether a node is a `var` leaf or an operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    Leaf,
    Operation,
}

/// A node of the graph: an operation (or the iterations of one), or a `var` leaf.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// What it computes: an operator (`@`, `+`), a built-in (`sin`, `sum`), `var` for a leaf.
    pub op: &'static str,
    pub kind: NodeKind,
    /// Where it was made, innermost first: the operation's span in its function, then the calls
    /// that led there. Empty only for a node whose site is unknown.
    pub stack: Vec<StackFrame>,
    /// How many records the node stands for (the iterations of a loop).
    pub count: u64,
    /// The last record's value.
    pub value: Option<Summary>,
    /// The last record's gradient, when a `backward` differentiated the graph.
    pub gradient: Option<Summary>,
    /// Its inputs: other nodes (indices into [`Graph::nodes`]) and constants, with how many
    /// records each edge stands for.
    pub inputs: Vec<GraphInput>,
}

/// The program tape's graph of one recording (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    /// Which `backward` differentiated it (1 for the first); `None` when it is the recording
    /// at the end of a run that ran no `backward` (or fewer than asked).
    pub backward: Option<u64>,
    /// The node that `backward` started from.
    pub output: Option<usize>,
    /// How many records the recording had.
    pub records: u64,
    /// Whether a node per record was asked for but the recording was too long, so its tail is
    /// collapsed.
    pub truncated: bool,
}
