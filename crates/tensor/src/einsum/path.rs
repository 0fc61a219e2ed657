//! Contraction order: which pairs of tensors to contract, in which order, as opt_einsum chooses.
//!
//! The cost of one pairwise contraction is opt_einsum's `flop_count`: the product of the extents
//! of every label the two tensors carry, doubled when some label is summed away (one multiply and
//! one add per term). A path's cost is the sum over its steps.
//!
//! Small networks get the optimal order by dynamic programming over subsets of operands: the
//! labels of the tensor a subset contracts to do not depend on the order inside the subset, so the
//! best order of each subset is found once. That covers every binary contraction tree, the same
//! space opt_einsum's `optimal` searches, in `3^n` steps. Larger networks use opt_einsum's
//! `greedy`. This module knows label sets and extents, never tensors.

use super::label::{Label, LabelSet};

/// Networks with at most this many operands are ordered optimally; `3^8` subset splits take well
/// under a millisecond, and beyond about 12 operands the table itself grows too large.
pub const OPTIMAL_OPERAND_LIMIT: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PathStrategy {
    /// Optimal up to [`OPTIMAL_OPERAND_LIMIT`] operands, greedy beyond.
    #[default]
    Auto,
    /// Optimal whatever the size, up to [`OPTIMAL_HARD_LIMIT`] operands, where the `3^n` search
    /// would take seconds; greedy beyond.
    Optimal,
    Greedy,
}

/// The most operands [`PathStrategy::Optimal`] searches exhaustively.
pub const OPTIMAL_HARD_LIMIT: usize = 14;

/// A contraction order in static single assignment form: ids `0..n` are the operands (after
/// labels only they carry have been summed out), and step `s` produces id `n + s` from two live
/// ids, which it consumes.
#[derive(Clone, Debug, PartialEq)]
pub struct Path {
    steps: Vec<[usize; 2]>,
    cost: f64,
}

impl Path {
    pub fn steps(&self) -> &[[usize; 2]] {
        &self.steps
    }

    /// The summed flop count of the pairwise steps.
    pub fn cost(&self) -> f64 {
        self.cost
    }
}

/// What the path search needs to know: the operands' label sets, the output's, and every extent.
pub(crate) struct PathProblem<'a> {
    pub(crate) inputs: Vec<LabelSet>,
    pub(crate) output: LabelSet,
    pub(crate) extents: &'a [usize],
}

pub(crate) fn find_path(problem: &PathProblem<'_>, strategy: PathStrategy) -> Path {
    let optimal = match strategy {
        PathStrategy::Auto => problem.inputs.len() <= OPTIMAL_OPERAND_LIMIT,
        PathStrategy::Optimal => true,
        PathStrategy::Greedy => false,
    };
    match optimal && problem.inputs.len() <= OPTIMAL_HARD_LIMIT {
        true => optimal_path(problem),
        false => greedy_path(problem),
    }
}

/// opt_einsum's `flop_count` for contracting two tensors into `result`.
pub(crate) fn pair_cost(a: &LabelSet, b: &LabelSet, result: &LabelSet, extents: &[usize]) -> f64 {
    let involved = a.union(b);
    let summed = involved.len() > result.len();
    involved.size(extents) * if summed { 2.0 } else { 1.0 }
}

/// The labels of the tensor that contracting `a` with `b` leaves: those still needed by another
/// live tensor or by the output. `needed` counts, per label, the live tensors carrying it (`a` and
/// `b` included) plus one when the output carries it.
fn pair_result(a: &LabelSet, b: &LabelSet, needed: &[usize]) -> LabelSet {
    let mut result = LabelSet::empty(needed.len());
    for label in a.union(b).iter() {
        let own = usize::from(a.contains(label)) + usize::from(b.contains(label));
        if needed.get(label.index()).is_some_and(|&count| count > own) {
            result.insert(label);
        }
    }
    result
}

fn optimal_path(problem: &PathProblem<'_>) -> Path {
    let n = problem.inputs.len();
    if n < 2 {
        return Path { steps: Vec::new(), cost: 0.0 };
    }
    let capacity = problem.extents.len();
    let full: u32 = (1 << n) - 1;
    let mut occurs = vec![0u32; capacity];
    for (operand, labels) in problem.inputs.iter().enumerate() {
        for label in labels.iter() {
            occurs[label.index()] |= 1 << operand;
        }
    }
    // The labels each subset's intermediate keeps: those also carried outside it or by the output.
    let kept: Vec<LabelSet> = (0..=full)
        .map(|subset| {
            let mut labels = LabelSet::empty(capacity);
            for (index, &mask) in occurs.iter().enumerate() {
                let label = Label::new(index);
                let outside = mask & !subset & full != 0 || problem.output.contains(label);
                if mask & subset != 0 && outside {
                    labels.insert(label);
                }
            }
            labels
        })
        .collect();
    let mut best = vec![f64::INFINITY; kept.len()];
    let mut split = vec![0u32; kept.len()];
    for operand in 0..n {
        best[1 << operand] = 0.0;
    }
    // Every proper subset of a mask is numerically smaller, so increasing order is topological.
    for subset in 1..=full {
        if subset.count_ones() < 2 {
            continue;
        }
        // Fixing the lowest member on the left visits each unordered split once.
        let lowest = subset & subset.wrapping_neg();
        let rest = subset ^ lowest;
        let mut part = rest;
        loop {
            let left = part | lowest;
            let right = subset ^ left;
            if right != 0 {
                let (l, r, s) = (left as usize, right as usize, subset as usize);
                let cost =
                    best[l] + best[r] + pair_cost(&kept[l], &kept[r], &kept[s], problem.extents);
                if cost < best[s] {
                    best[s] = cost;
                    split[s] = left;
                }
            }
            if part == 0 {
                break;
            }
            part = (part - 1) & rest;
        }
    }
    let mut steps = Vec::with_capacity(n - 1);
    emit(full, n, &split, &mut steps);
    Path { steps, cost: best[full as usize] }
}

/// Appends the steps that contract `subset` and returns the id of its result.
fn emit(subset: u32, n: usize, split: &[u32], steps: &mut Vec<[usize; 2]>) -> usize {
    if subset.count_ones() == 1 {
        return subset.trailing_zeros() as usize;
    }
    let left = split[subset as usize];
    let a = emit(left, n, split, steps);
    let b = emit(subset ^ left, n, split, steps);
    steps.push([a, b]);
    n + steps.len() - 1
}

/// opt_einsum's greedy search: first fold together operands with identical label sets, then
/// repeatedly contract the pair sharing a label whose result removes the most memory
/// (`size(result) - size(a) - size(b)`, smallest first, ties to the lowest ids), and finally join
/// what remains by outer products, smallest tensors first.
fn greedy_path(problem: &PathProblem<'_>) -> Path {
    let extents = problem.extents;
    let mut state = GreedyState {
        operands: problem.inputs.len(),
        live: Vec::with_capacity(problem.inputs.len()),
        needed: vec![0; extents.len()],
        path: Path { steps: Vec::new(), cost: 0.0 },
    };
    for labels in problem.inputs.iter().chain([&problem.output]) {
        for label in labels.iter() {
            state.needed[label.index()] += 1;
        }
    }
    for (id, labels) in problem.inputs.iter().enumerate() {
        state.live.push((id, labels.clone()));
        let last = state.live.len() - 1;
        if let Some(twin) = state.live[..last].iter().position(|(_, known)| known == labels) {
            state.contract(twin, last, extents);
        }
    }
    loop {
        let mut best: Option<(f64, usize, usize)> = None;
        for i in 0..state.live.len() {
            for j in i + 1..state.live.len() {
                let (a, b) = (&state.live[i].1, &state.live[j].1);
                if !a.intersects(b) {
                    continue;
                }
                let result = pair_result(a, b, &state.needed);
                let removed = result.size(extents) - a.size(extents) - b.size(extents);
                if best.is_none_or(|(cost, _, _)| removed < cost) {
                    best = Some((removed, i, j));
                }
            }
        }
        match best {
            Some((_, i, j)) => state.contract(i, j, extents),
            None => break,
        }
    }
    while state.live.len() > 1 {
        let live = &state.live;
        let mut order: Vec<usize> = (0..live.len()).collect();
        order.sort_by(|&x, &y| {
            let size = |k: usize| live[k].1.size(extents);
            size(x).total_cmp(&size(y)).then(live[x].0.cmp(&live[y].0))
        });
        state.contract(order[0], order[1], extents);
    }
    state.path
}

struct GreedyState {
    operands: usize,
    /// The tensors not yet consumed, with their ids.
    live: Vec<(usize, LabelSet)>,
    /// Per label, how many live tensors carry it, plus one if the output does.
    needed: Vec<usize>,
    path: Path,
}

impl GreedyState {
    /// Contracts the live tensors at positions `i` and `j` and records the step.
    fn contract(&mut self, i: usize, j: usize, extents: &[usize]) {
        let (i, j) = (i.min(j), i.max(j));
        let (id_b, b) = self.live.remove(j);
        let (id_a, a) = self.live.remove(i);
        let result = pair_result(&a, &b, &self.needed);
        self.path.cost += pair_cost(&a, &b, &result, extents);
        for label in a.iter().chain(b.iter()) {
            self.needed[label.index()] -= 1;
        }
        for label in result.iter() {
            self.needed[label.index()] += 1;
        }
        self.path.steps.push([id_a, id_b]);
        self.live.push((self.operands + self.path.steps.len() - 1, result));
    }
}
