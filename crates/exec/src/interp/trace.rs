//! The interpreter's side of a traced run (`nabla graph`, `--graph`, `--check-nan`): the call
//! stacks that the tape's [`Site`]s name, and the check of every result for NaN and infinities.
//!
//! A traced run executes the same instructions through a second copy of the dispatch loop
//! (`Machine::run_code::<true>`), chosen once per call of `execute`, so an untraced run is the
//! same machine code as before. The traced copy tells the tape the site of every instruction
//! before it runs, records every scalar operation as its own record (no fused records, no float
//! expressions: one node per operation for the picture, one site per record for the check),
//! and with `check_nan` checks what each instruction computed.
//!
//! Call stacks are interned in a tree: a stack is its innermost function and the stack it was
//! called from, so telling the tape where the program is costs a comparison of depths per
//! instruction and a hash lookup per call.

use rustc_hash::FxHashMap;

use crate::autodiff::Site;

/// One interned call stack: the unit running, the stack that called it (`NO_PARENT` for the
/// entry) and the instruction of the caller that made the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct StackEntry {
    parent: u32,
    unit: u32,
    call_pc: u32,
}

const NO_PARENT: u32 = u32::MAX;

/// The state of a traced run.
#[derive(Debug)]
pub(crate) struct Tracer {
    pub(crate) check_nan: bool,
    stacks: Vec<StackEntry>,
    interned: FxHashMap<StackEntry, u32>,
    /// The interned stack of each active frame, outermost first; kept in step with the
    /// machine's frames by [`Tracer::sync`].
    active: Vec<u32>,
}

impl Tracer {
    pub(crate) fn new(check_nan: bool) -> Tracer {
        Tracer { check_nan, stacks: Vec::new(), interned: FxHashMap::default(), active: Vec::new() }
    }

    /// Forgets the active frames (a new run of a test or a session's entry starts with none);
    /// the interned stacks stay, because the tape's sites may name them.
    pub(crate) fn restart(&mut self) {
        self.active.clear();
    }

    /// The stack of the innermost of `frames`, given as `(unit, return address)` from the
    /// outermost: frames that returned since the last call are dropped, new ones interned.
    /// Between two calls at most one frame is pushed or popped (an instruction calls, returns, or
    /// runs nested frames that are gone when it ends), so this is a comparison in the common
    /// case.
    pub(crate) fn sync(
        &mut self,
        frames: impl ExactSizeIterator<Item = (u32, u32)> + Clone,
    ) -> u32 {
        let depth = frames.len();
        if self.active.len() > depth {
            self.active.truncate(depth);
        }
        if self.active.len() < depth {
            for (unit, ret) in frames.skip(self.active.len()) {
                let parent = self.active.last().copied().unwrap_or(NO_PARENT);
                let call_pc = if parent == NO_PARENT { 0 } else { ret.saturating_sub(1) };
                let entry = StackEntry { parent, unit, call_pc };
                let id = match self.interned.get(&entry) {
                    Some(&id) => id,
                    None => {
                        let id = self.stacks.len() as u32;
                        self.stacks.push(entry);
                        self.interned.insert(entry, id);
                        id
                    }
                };
                self.active.push(id);
            }
        }
        self.active.last().copied().unwrap_or(NO_PARENT)
    }

    /// The `(unit, instruction)` of each frame of a site's stack, innermost first.
    pub(crate) fn frames_of(&self, site: Site) -> Vec<(u32, u32)> {
        let mut frames = Vec::new();
        let mut stack = site.stack;
        let mut pc = site.pc;
        while let Some(entry) = self.stacks.get(stack as usize) {
            frames.push((entry.unit, pc));
            pc = entry.call_pc;
            stack = entry.parent;
        }
        frames
    }
}
