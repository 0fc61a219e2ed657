//! Work moved out of loops: the numbers a loop reads, and the `int` arithmetic on values that no
//! iteration changes, are computed once in front of the loop, each into a slot of its own.

use hir::{ArithOp, Expr, ExprId, LocalId, LocalKind, Qualifier, RelSpan, Resolution, Stmt};
use hir::{StmtId, Ty};
use rustc_hash::{FxHashMap, FxHashSet};

use super::{Dest, Number, Place, Result, UnitLowerer};
use crate::code::{Instr, Operand, Slot};
use crate::error::RuntimeError;

/// One loop being lowered, and what is computed once in front of it instead of on every
/// iteration:
///
/// - The numbers that the code of an outermost loop reads as operands (literals, constants
///   folded to a number): `zi = 2.0 * zr * zi + ci` in a loop reads the slot that holds `2.0`.
///   They go in front of the outermost loop.
/// - The `int` arithmetic (`+`, `-`, `*`) read as an operand whose operands are constants and
///   `int` locals that the loop never writes, and which cannot overflow (see
///   [`UnitLowerer::hoistable`]): `d[i - 1][j]` in a loop over `j` reads a slot that holds
///   `i - 1`. Each goes in front of the outermost loop that writes none of its locals. As it
///   cannot fail, computing it before the loop, even one that runs no iteration, changes
///   nothing the program does; an expression that could fail (an overflow, a division by
///   zero) stays where it is written.
///
/// The slots are above every slot the unit used when they were taken and no temporary takes
/// them while the loop is lowered ([`UnitLowerer::temp`]), so nothing in the loop writes them;
/// the code computing them is put in front of the loop's code when it is complete
/// ([`UnitLowerer::leave_loop`]).
///
/// Measured (callgrind instructions, `bench/interpreter`, full size, 2026-11-27): the numbers,
/// against e866817, when trees of scalar float operations were still compiled into one
/// instruction: suite geometric mean 0.974; simpson 0.852 (the loads no longer split its loop's
/// float operations), mandelbrot 0.933 (its inner loop is 7 instructions instead of 9),
/// edit_distance 0.958, gauss_seidel 0.973; no program worse.
/// The `int` arithmetic, against 89f22cf: suite 0.984; edit_distance 0.901 (`i - 1` three times
/// per iteration of its inner loop), gauss_seidel 0.908 (`i - 1`, `i + 1`); no program worse by
/// more than 0.4% (the interpreter loop's code placement). With the per-iteration arithmetic
/// ([`UnitLowerer::enter_iteration`]), against aa0d31f: suite 0.975; edit_distance 0.805,
/// gauss_seidel 0.912; no program worse by more than 0.7% (code placement).
#[derive(Default)]
pub(super) struct Hoisted {
    /// Where the loop's code starts, and the hoisted code goes.
    at: usize,
    code: Vec<(Instr, RelSpan)>,
    numbers: FxHashMap<Number, Slot>,
    exprs: FxHashMap<IntKey, Slot>,
    reserved: FxHashSet<Slot>,
    /// The locals that the loop (its initializers, test, step and body) may write or declare.
    written: FxHashSet<LocalId>,
    /// For the start of a counted loop's body, run at every iteration (see
    /// [`UnitLowerer::enter_iteration`]): the expressions it takes, those the body computes
    /// more than once.
    only: Option<FxHashSet<IntKey>>,
}

/// An `int` expression by its structure, so that `i - 1` written three times is computed once.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum IntKey {
    Const(i64),
    Local(LocalId),
    Op(ArithOp, Box<IntKey>, Box<IntKey>),
}

impl IntKey {
    fn locals(&self, out: &mut Vec<LocalId>) {
        match self {
            IntKey::Const(_) => {}
            IntKey::Local(local) => out.push(*local),
            IntKey::Op(_, a, b) => {
                a.locals(out);
                b.locals(out);
            }
        }
    }
}

/// The values the counter of a counted loop takes in the loop's body, which does not write it:
/// from its initial value on in the direction of its step, up to its bound in the other.
#[derive(Clone, Copy, Debug)]
pub(super) struct CounterRange {
    pub(super) local: LocalId,
    pub(super) lo: i128,
    pub(super) hi: i128,
}

/// A statement or an expression, as [`UnitLowerer::walk_stmt`] visits them.
#[derive(Clone, Copy)]
enum Node {
    Stmt(StmtId),
    Expr(ExprId),
}

const FULL: (i128, i128) = (i64::MIN as i128, i64::MAX as i128);

impl UnitLowerer<'_, '_> {
    /// Whether `slot` holds a value computed before the loop (see [`Hoisted`]).
    pub(super) fn is_hoisted(&self, slot: Slot) -> bool {
        self.hoisted.iter().any(|frame| frame.reserved.contains(&slot))
    }

    /// Starts lowering the loop `stmt`: the code it hoists goes where the code is now.
    pub(super) fn enter_loop(&mut self, stmt: StmtId) {
        let mut written = FxHashSet::default();
        self.written_by_stmt(stmt, &mut written);
        self.hoisted.push(Hoisted { at: self.code.len(), written, ..Default::default() });
    }

    /// Starts lowering the body of a counted loop, which does not write its counter, here: the
    /// `int` arithmetic the body computes more than once on its counter and on locals it does
    /// not write (`j - 1` in `d[i][j - 1]` and `d[i - 1][j - 1]`) is computed once per
    /// iteration, at the start of the body, where the loop's step jumps back to.
    ///
    /// Measured (callgrind instructions, `bench/interpreter`, full size, 2026-11-27, against
    /// the hoisting before the loop alone, on 89f22cf): suite geometric mean 0.990;
    /// edit_distance 0.886 (`j - 1` three times per iteration of its inner loop); no other
    /// program changes by more than 0.02%.
    pub(super) fn enter_iteration(&mut self, body: &[StmtId]) {
        let mut written = FxHashSet::default();
        let mut counts: FxHashMap<IntKey, usize> = FxHashMap::default();
        for &stmt in body {
            self.written_by_stmt(stmt, &mut written);
            self.walk_stmt(stmt, &mut |node| {
                if let Node::Expr(expr) = node
                    && let Expr::Binary { .. } = self.body.exprs[expr]
                    && let Some((key @ IntKey::Op(..), _)) = self.hoistable(expr)
                {
                    *counts.entry(key).or_default() += 1;
                }
            });
        }
        let repeated = counts.into_iter().filter(|&(_, count)| count > 1).map(|(key, _)| key);
        let only = Some(repeated.collect());
        self.hoisted.push(Hoisted { at: self.code.len(), written, only, ..Default::default() });
    }

    /// Ends lowering the innermost loop (or loop body, see [`UnitLowerer::enter_iteration`]):
    /// the code hoisted out of it goes in front of it, and the jumps into the code after that
    /// point follow it (a jump to that point, such as an `if`'s or the loop's step's, lands on
    /// the hoisted code). Nothing else holds a position past that point: the jumps pending
    /// there were emitted before it, and those of the loop are bound.
    pub(super) fn leave_loop(&mut self) {
        let Some(frame) = self.hoisted.pop() else { return };
        let at = frame.at;
        let count = frame.code.len() as u32;
        if count == 0 {
            return;
        }
        for instr in &mut self.code {
            if let Some(target) = instr.target_mut()
                && *target as usize > at
            {
                *target += count;
            }
        }
        let (code, spans): (Vec<Instr>, Vec<RelSpan>) = frame.code.into_iter().unzip();
        self.code.splice(at..at, code);
        self.spans.splice(at..at, spans);
    }

    /// A slot nothing uses, reserved while the loop of `frame` is lowered.
    fn hoisted_slot(&mut self, frame: usize) -> Slot {
        let slot = Slot::new(self.max_slots);
        self.max_slots += 1;
        self.hoisted[frame].reserved.insert(slot);
        slot
    }

    /// Loads `number` into `dest`: inside a loop, an operand (`Dest::Any`) reads the slot the
    /// number is loaded into once, before the outermost loop (see [`Hoisted`]).
    pub(super) fn load_number(&mut self, number: Number, dest: Dest, span: RelSpan) -> Operand {
        if dest == Dest::Any && !self.hoisting && !self.hoisted.is_empty() {
            let slot = match self.hoisted[0].numbers.get(&number) {
                Some(&slot) => slot,
                None => {
                    let slot = self.hoisted_slot(0);
                    self.hoisted[0].code.push((number.load(slot), span));
                    self.hoisted[0].numbers.insert(number, slot);
                    slot
                }
            };
            return Operand::copy(slot);
        }
        let dst = self.dst(dest);
        self.emit(number.load(dst), span);
        Self::result(dest, dst)
    }

    /// The slot that holds the value of the `int` expression `expr`, computed in front of the
    /// outermost loop being lowered that writes none of its locals, when it can be (see
    /// [`Hoisted`]); `None`, with nothing emitted, when it stays where it is.
    pub(super) fn hoist_int(&mut self, expr: ExprId) -> Result<Option<Slot>> {
        if self.hoisting || self.hoisted.is_empty() {
            return Ok(None);
        }
        let Some((key @ IntKey::Op(..), _)) = self.hoistable(expr) else { return Ok(None) };
        let mut locals = Vec::new();
        key.locals(&mut locals);
        if locals.is_empty() {
            return Ok(None);
        }
        let takes = |frame: &Hoisted| {
            locals.iter().all(|local| !frame.written.contains(local))
                && frame.only.as_ref().is_none_or(|only| only.contains(&key))
        };
        let Some(frame) = self.hoisted.iter().position(takes) else { return Ok(None) };
        if let Some(&slot) = self.hoisted[frame].exprs.get(&key) {
            return Ok(Some(slot));
        }
        let slot = self.hoisted_slot(frame);
        // Lowered as written, into the slot, apart from the loop's code. Its temporaries are
        // above those live where the loop starts (the loop's statements only add to them).
        let code = std::mem::take(&mut self.code);
        let spans = std::mem::take(&mut self.spans);
        let (mark, snapshot) = (self.next_temp, self.snapshot);
        (self.hoisting, self.snapshot) = (true, false);
        let value = self.expr(expr, Dest::Slot(slot));
        (self.hoisting, self.snapshot, self.next_temp) = (false, snapshot, mark);
        let mut hoisted_code = std::mem::replace(&mut self.code, code);
        let hoisted_spans = std::mem::replace(&mut self.spans, spans);
        if value?.slot() != slot
            || hoisted_code.iter_mut().any(|instr| instr.target_mut().is_some())
        {
            return Err(RuntimeError::internal("a hoisted expression"));
        }
        let frame = &mut self.hoisted[frame];
        frame.code.extend(hoisted_code.into_iter().zip(hoisted_spans));
        frame.exprs.insert(key, slot);
        Ok(Some(slot))
    }

    /// The structure of `expr` and the range of its value, when it is `int` arithmetic (`+`,
    /// `-`, `*`) on constants and `int` locals of this unit (not `var`) that cannot overflow for
    /// any values of the locals in their known ranges: a shape variable is never negative, and
    /// the counter of a counted loop stays between its initial value and its bound (see
    /// [`CounterRange`]); any other local may hold any `int`.
    fn hoistable(&self, expr: ExprId) -> Option<(IntKey, (i128, i128))> {
        if self.ty(expr) != Ty::Int {
            return None;
        }
        if let Some(value) = self.const_int(expr) {
            return Some((IntKey::Const(value), (value.into(), value.into())));
        }
        match self.body.exprs[expr] {
            Expr::Name { .. } => {
                let Some(Resolution::Local(local)) = self.infer.resolution(expr) else {
                    return None;
                };
                let data = &self.body.locals[local];
                if data.qualifier == Some(Qualifier::Var)
                    || !matches!(self.place_of(local), Ok(Place::Slot(_)))
                {
                    return None;
                }
                let range = match self.counters.iter().rev().find(|c| c.local == local) {
                    Some(counter) => (counter.lo, counter.hi),
                    None if data.kind == LocalKind::ShapeVar && !data.name.is_empty() => {
                        (0, i64::MAX.into())
                    }
                    None => FULL,
                };
                Some((IntKey::Local(local), range))
            }
            Expr::Binary {
                op: hir::BinaryOp::Arith(op @ (ArithOp::Add | ArithOp::Sub | ArithOp::Mul)),
                lhs,
                rhs,
            } => {
                let (a, (a_lo, a_hi)) = self.hoistable(lhs)?;
                let (b, (b_lo, b_hi)) = self.hoistable(rhs)?;
                let range = match op {
                    ArithOp::Add => (a_lo + b_lo, a_hi + b_hi),
                    ArithOp::Sub => (a_lo - b_hi, a_hi - b_lo),
                    _ => {
                        let products = [a_lo * b_lo, a_lo * b_hi, a_hi * b_lo, a_hi * b_hi];
                        (products.into_iter().min()?, products.into_iter().max()?)
                    }
                };
                (range.0 >= FULL.0 && range.1 <= FULL.1)
                    .then(|| (IntKey::Op(op, Box::new(a), Box::new(b)), range))
            }
            _ => None,
        }
    }

    /// The range of the counter `local` of a counted loop in its body, which must not write
    /// it: from its initial value, the last one its initializers give it, in the direction of
    /// `delta`, to its bound (`op` and `imm`, when the bound is a constant) in the other.
    pub(super) fn counter_range(
        &self,
        local: LocalId,
        init: &[StmtId],
        body: &[StmtId],
        (delta, op, imm): (i32, crate::code::Cmp, Option<i32>),
    ) -> Option<CounterRange> {
        let mut written = FxHashSet::default();
        for &stmt in body {
            self.written_by_stmt(stmt, &mut written);
        }
        if written.contains(&local) {
            return None;
        }
        let mut start = FULL;
        for &stmt in init {
            let mut writes = FxHashSet::default();
            self.written_by_stmt(stmt, &mut writes);
            if !writes.contains(&local) {
                continue;
            }
            let value = match self.body.stmts[stmt] {
                Stmt::Decl { local: declared, init: Some(value) } if declared == local => {
                    Some(value)
                }
                Stmt::Expr(expr) => match self.body.exprs[expr] {
                    Expr::Assign { op: None, target, value }
                        if self.infer.resolution(target) == Some(Resolution::Local(local)) =>
                    {
                        Some(value)
                    }
                    _ => None,
                },
                _ => None,
            };
            // Nothing else in the initializer may write it.
            start = value
                .filter(|&value| {
                    let mut inner = FxHashSet::default();
                    self.written_by_expr(value, &mut inner);
                    !inner.contains(&local)
                })
                .and_then(|value| self.hoistable(value))
                .map_or(FULL, |(_, range)| range);
        }
        use crate::code::Cmp;
        let imm = imm.map(i128::from);
        let (lo, hi) = match (delta > 0, op) {
            (true, Cmp::Lt) => (start.0, imm.unwrap_or(FULL.1) - 1),
            (true, Cmp::Le) => (start.0, imm.unwrap_or(FULL.1)),
            (true, _) => (start.0, FULL.1),
            (false, Cmp::Gt) => (imm.unwrap_or(FULL.0) + 1, start.1),
            (false, Cmp::Ge) => (imm.unwrap_or(FULL.0), start.1),
            (false, _) => (FULL.0, start.1),
        };
        Some(CounterRange { local, lo, hi: hi.max(lo) })
    }

    /// Collects the locals that `stmt` (and everything in it) may write or declare: the
    /// targets of assignments, compound assignments and `++`/`--` (the variable at the root of
    /// an indexed or field target), declared locals and the shape variables their
    /// declarations bind. A call cannot write a local of its caller.
    fn written_by_stmt(&self, stmt: StmtId, out: &mut FxHashSet<LocalId>) {
        self.walk_stmt(stmt, &mut |node| match node {
            Node::Stmt(stmt) => match &self.body.stmts[stmt] {
                Stmt::Decl { local, .. } => self.declared(*local, out),
                Stmt::TupleDecl { locals, .. } => {
                    locals.iter().for_each(|&local| self.declared(local, out));
                }
                Stmt::Index(index) => out.extend(self.root_local(index.target.tensor)),
                _ => {}
            },
            Node::Expr(expr) => {
                if let Expr::Assign { target, .. } | Expr::IncDec { target, .. } =
                    self.body.exprs[expr]
                {
                    out.extend(self.root_local(target));
                }
            }
        });
    }

    fn written_by_expr(&self, expr: ExprId, out: &mut FxHashSet<LocalId>) {
        self.walk_expr(expr, &mut |node| {
            if let Node::Expr(expr) = node
                && let Expr::Assign { target, .. } | Expr::IncDec { target, .. } =
                    self.body.exprs[expr]
            {
                out.extend(self.root_local(target));
            }
        });
    }

    /// Visits `stmt`, the statements inside it and every expression of them.
    fn walk_stmt(&self, stmt: StmtId, visit: &mut dyn FnMut(Node)) {
        visit(Node::Stmt(stmt));
        let exprs: Vec<ExprId> = match &self.body.stmts[stmt] {
            Stmt::Decl { init, .. } => init.iter().copied().collect(),
            Stmt::TupleDecl { init, .. } => vec![*init],
            Stmt::Expr(expr) => vec![*expr],
            Stmt::Block(stmts) => {
                stmts.iter().for_each(|&stmt| self.walk_stmt(stmt, visit));
                Vec::new()
            }
            Stmt::If { branches, else_branch } => {
                for branch in branches {
                    self.walk_expr(branch.cond, visit);
                    branch.body.iter().for_each(|&stmt| self.walk_stmt(stmt, visit));
                }
                for &stmt in else_branch.iter().flatten() {
                    self.walk_stmt(stmt, visit);
                }
                Vec::new()
            }
            Stmt::Loop { init, cond, step, body } => {
                init.iter().chain(body).for_each(|&stmt| self.walk_stmt(stmt, visit));
                cond.iter().chain(step).copied().collect()
            }
            Stmt::Return(value) => value.iter().copied().collect(),
            Stmt::Index(index) => index
                .factors
                .iter()
                .filter_map(|factor| match factor {
                    hir::IndexFactor::Scalar(expr) => Some(*expr),
                    hir::IndexFactor::Tensor(_) => None,
                })
                .collect(),
            Stmt::Break | Stmt::Continue => Vec::new(),
        };
        for expr in exprs {
            self.walk_expr(expr, visit);
        }
    }

    fn walk_expr(&self, expr: ExprId, visit: &mut dyn FnMut(Node)) {
        stacker::maybe_grow(super::STACK_RED_ZONE, super::STACK_SEGMENT, || {
            visit(Node::Expr(expr));
            for child in self.body.expr_children(expr) {
                self.walk_expr(child, visit);
            }
        })
    }

    /// A declared local and the shape variables its declaration binds.
    fn declared(&self, local: LocalId, out: &mut FxHashSet<LocalId>) {
        out.insert(local);
        let bound = self.body.locals.iter().filter(|(_, data)| data.bound_by == Some(local));
        out.extend(bound.map(|(var, _)| var));
    }

    /// The local at the root of an assignment's target: `a` of `a`, `a[i]`, `a.w[i]`.
    fn root_local(&self, mut expr: ExprId) -> Option<LocalId> {
        loop {
            match self.body.exprs[expr] {
                Expr::Index { base, .. } | Expr::Field { base, .. } => expr = base,
                Expr::Name { .. } => {
                    return match self.infer.resolution(expr) {
                        Some(Resolution::Local(local)) => Some(local),
                        _ => None,
                    };
                }
                _ => return None,
            }
        }
    }
}
