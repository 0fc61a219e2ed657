//! Lowering statements: declarations (with their run-time shape checks and bindings), control
//! flow as jumps, `return`, and index statements as contractions.

use std::rc::Rc;

use hir::{
    ArithOp, Dim, Expr, ExprId, IndexAssignOp, IndexFactor, IndexStmt, Literal, RelSpan, SizeVar,
    Stmt, StmtId, Ty,
};

use super::{Dest, LoopLabels, Pending, Place, Result, UnitLowerer, shape_proven};
use crate::code::{
    BuiltinCall, CheckContext, DimSpec, DimsArg, IndexAssign, Instr, NO_SLOT, Operand, ShapeCheck,
    ZeroKind,
};
use crate::error::RuntimeError;
use tensor::einsum::Contraction;

/// A loop with an `int` counter: `loop (...; i cmp bound; i += delta)`.
#[derive(Clone, Copy)]
struct Counted {
    local: hir::LocalId,
    slot: crate::code::Slot,
    delta: i32,
    op: crate::code::Cmp,
    bound: Bound,
}

#[derive(Clone, Copy)]
enum Bound {
    Imm(i32),
    Slot(crate::code::Slot),
    /// An expression no iteration can change (see [`UnitLowerer::invariant_int`]), evaluated
    /// once before the loop into a slot of its own: `j < n - 1` tests a slot, as `j < n` does.
    Invariant(ExprId),
}

impl UnitLowerer<'_, '_> {
    pub(super) fn stmt(&mut self, stmt: StmtId) -> Result<()> {
        stacker::maybe_grow(super::STACK_RED_ZONE, super::STACK_SEGMENT, || self.stmt_inner(stmt))
    }

    fn stmt_inner(&mut self, stmt: StmtId) -> Result<()> {
        let mark = self.next_temp;
        let span = self.body.source_map.stmt(stmt);
        let saved = self.snapshot;
        self.snapshot = self.stmt_effects(stmt);
        let result = match &self.body.stmts[stmt] {
            Stmt::Decl { local, init } => self.decl(*local, *init, span),
            Stmt::Expr(expr) => self.effect(*expr),
            Stmt::Block(stmts) => self.stmts(stmts),
            Stmt::If { branches, else_branch } => {
                let mut end = Pending::default();
                let count = branches.len();
                for (i, branch) in branches.iter().enumerate() {
                    let next = self.branch(branch.cond, false)?;
                    self.stmts(&branch.body)?;
                    if i + 1 < count || else_branch.is_some() {
                        let jump = self.emit(Instr::Jump { target: 0 }, span);
                        end.0.push(jump);
                    }
                    self.bind(next);
                }
                if let Some(stmts) = else_branch {
                    self.stmts(stmts)?;
                }
                self.bind(end);
                Ok(())
            }
            Stmt::Loop { init, cond, step, body } => {
                // What the loop computes on every iteration but could once goes in front of it.
                self.enter_loop(stmt);
                let result = self.loop_stmt(init, *cond, *step, body, span);
                self.leave_loop();
                result
            }
            Stmt::Break => {
                let jump = self.emit(Instr::Jump { target: 0 }, span);
                match self.loops.last_mut() {
                    Some(labels) => labels.breaks.0.push(jump),
                    None => return Err(self.internal("`break` outside a loop", span)),
                }
                Ok(())
            }
            Stmt::Continue => {
                let jump = self.emit(Instr::Jump { target: 0 }, span);
                match self.loops.last_mut() {
                    Some(labels) => labels.continues.0.push(jump),
                    None => return Err(self.internal("`continue` outside a loop", span)),
                }
                Ok(())
            }
            Stmt::Return(value) => self.return_stmt(*value, span),
            Stmt::Index(index) => self.index_stmt(index, span),
            Stmt::TupleDecl { locals, init } => self.tuple_decl(locals, *init, span),
        };
        self.next_temp = mark;
        self.snapshot = saved;
        result
    }

    /// Recognises `loop (...; i cmp bound; i++)` (or `i--`, `i += k`, `i -= k` with a constant
    /// `k`) on an `int` variable `i` and a bound that is a constant or an `int` variable.
    fn counted_loop(&self, cond: ExprId, step: ExprId) -> Option<Counted> {
        let (target, delta) = match self.body.exprs[step] {
            Expr::IncDec { target, increment, .. } => (target, if increment { 1 } else { -1 }),
            Expr::Assign { op: Some(op @ (ArithOp::Add | ArithOp::Sub)), target, value } => {
                let k = i32::try_from(self.const_int(value)?).ok()?;
                (target, if op == ArithOp::Add { k } else { k.checked_neg()? })
            }
            _ => return None,
        };
        let slot = self.int_slot(target)?;
        let Some(hir::Resolution::Local(local)) = self.infer.resolution(target) else {
            return None;
        };
        let Expr::Binary { op: hir::BinaryOp::Cmp(cmp), lhs, rhs } = self.body.exprs[cond] else {
            return None;
        };
        if self.int_slot(lhs)? != slot || self.snapshot {
            return None;
        }
        let bound = match self.const_int(rhs).and_then(|v| i32::try_from(v).ok()) {
            Some(imm) => Bound::Imm(imm),
            None => match self.int_slot(rhs) {
                Some(slot) => Bound::Slot(slot),
                None if self.invariant_int(rhs) => Bound::Invariant(rhs),
                None => return None,
            },
        };
        Some(Counted { local, slot, delta, op: super::expr::cmp_of(cmp), bound })
    }

    /// Whether `expr` is `int` arithmetic (`+`, `-`, `*`) on constants, shape variables and `cns`
    /// locals only, which nothing can change while a loop runs: a loop's bound that is one is
    /// evaluated once, before the loop (an error it makes, such as an overflow, is the one the
    /// first test would have made).
    fn invariant_int(&self, expr: ExprId) -> bool {
        if self.ty(expr) != Ty::Int {
            return false;
        }
        if self.const_int(expr).is_some() {
            return true;
        }
        match self.body.exprs[expr] {
            Expr::Binary {
                op: hir::BinaryOp::Arith(ArithOp::Add | ArithOp::Sub | ArithOp::Mul),
                lhs,
                rhs,
            } => self.invariant_int(lhs) && self.invariant_int(rhs),
            Expr::Name { .. } => match self.infer.resolution(expr) {
                Some(hir::Resolution::Local(local)) => {
                    let data = &self.body.locals[local];
                    data.kind == hir::LocalKind::ShapeVar
                        || data.qualifier == Some(hir::Qualifier::Cns)
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// The slot of a plain `int` local named by `expr`.
    fn int_slot(&self, expr: ExprId) -> Option<crate::code::Slot> {
        if !matches!(self.body.exprs[expr], Expr::Name { .. }) || self.ty(expr) != Ty::Int {
            return None;
        }
        let Some(hir::Resolution::Local(local)) = self.infer.resolution(expr) else { return None };
        match self.place_of(local).ok()? {
            Place::Slot(slot) => Some(slot),
            Place::Global(_) => None,
        }
    }

    /// A counted loop: the condition tested once on entry, then the body, then one
    /// [`Instr::LoopInt`] that steps the counter and jumps back while the condition holds.
    fn counted_loop_body(
        &mut self,
        counted: Counted,
        (init, cond, step): (&[StmtId], ExprId, ExprId),
        body: &[StmtId],
    ) -> Result<()> {
        // The instruction can only fail in the step (overflow), so it carries the step's span.
        let step_span = self.span_of(step);
        let (exit, bound) = match counted.bound {
            Bound::Invariant(rhs) => {
                let slot = match self.hoist_int(rhs)? {
                    Some(slot) => slot,
                    None => {
                        // The slot stays reserved through the body, whose temporaries come
                        // after it.
                        let slot = self.temp();
                        let value = self.expr(rhs, Dest::Slot(slot))?;
                        if value.slot() != slot {
                            self.emit(Instr::Copy { dst: slot, src: value }, self.span_of(rhs));
                        }
                        slot
                    }
                };
                let op = counted.op.negate();
                let test = Instr::JumpIntCmp { op, a: counted.slot, b: slot, target: 0 };
                let jump = self.emit(test, self.span_of(cond));
                (Pending(vec![jump]), Bound::Slot(slot))
            }
            bound => (self.branch(cond, false)?, bound),
        };
        let body_start = self.here();
        let imm = match bound {
            Bound::Imm(imm) => Some(imm),
            _ => None,
        };
        let range = self.counter_range(counted.local, init, body, (counted.delta, counted.op, imm));
        let pushed = range.is_some();
        self.counters.extend(range);
        if pushed {
            self.enter_iteration(body);
        }
        let breaks = self.loop_body(body);
        if pushed {
            self.counters.pop();
        }
        let Counted { slot, delta, op, .. } = counted;
        let result = breaks.and_then(|breaks| {
            let instr = match bound {
                Bound::Imm(imm) => Instr::LoopIntImm { slot, delta, op, imm, target: body_start },
                Bound::Slot(rhs) => Instr::LoopInt { slot, delta, op, rhs, target: body_start },
                Bound::Invariant(_) => {
                    return Err(RuntimeError::internal("an unevaluated loop bound"));
                }
            };
            self.emit(instr, step_span);
            self.bind(exit);
            self.bind(breaks);
            Ok(())
        });
        if pushed {
            // The body's own hoisted code goes at its start, where the step jumps back to.
            self.leave_loop();
        }
        result
    }

    /// A loop's body, with its own `break` and `continue` labels: the `continue`s go to the code
    /// that follows it; the `break`s are returned, for the caller to bind after the loop.
    fn loop_body(&mut self, body: &[StmtId]) -> Result<Pending> {
        self.loops.push(LoopLabels { breaks: Pending::default(), continues: Pending::default() });
        let body_result = self.stmts(body);
        let labels = self.loops.pop();
        body_result?;
        let labels = labels.ok_or_else(|| RuntimeError::internal("loop labels"))?;
        self.bind(labels.continues);
        Ok(labels.breaks)
    }

    /// Whether the expressions of a statement itself (not of the statements inside it) have
    /// nested side effects; see `snapshot`.
    fn stmt_effects(&self, stmt: StmtId) -> bool {
        let exprs: Vec<ExprId> = match &self.body.stmts[stmt] {
            Stmt::Decl { init, .. } => init.iter().copied().collect(),
            Stmt::Expr(expr) => vec![*expr],
            Stmt::If { branches, .. } => branches.iter().map(|b| b.cond).collect(),
            Stmt::Loop { cond, step, .. } => cond.iter().chain(step).copied().collect(),
            Stmt::Return(value) => value.iter().copied().collect(),
            Stmt::TupleDecl { init, .. } => vec![*init],
            Stmt::Index(index) => index
                .factors
                .iter()
                .filter_map(|f| match f {
                    IndexFactor::Scalar(e) => Some(*e),
                    IndexFactor::Tensor(_) => None,
                })
                .collect(),
            Stmt::Block(_) | Stmt::Break | Stmt::Continue => Vec::new(),
        };
        exprs.into_iter().any(|e| self.nested_effects(e, true))
    }

    /// A `loop` statement: a counted loop (see [`UnitLowerer::counted_loop`]) or the general
    /// form, its test after its body.
    fn loop_stmt(
        &mut self,
        init: &[StmtId],
        cond: Option<ExprId>,
        step: Option<ExprId>,
        body: &[StmtId],
        span: RelSpan,
    ) -> Result<()> {
        self.stmts(init)?;
        if let (Some(cond), Some(step)) = (cond, step)
            && let Some(counted) = self.counted_loop(cond, step)
        {
            return self.counted_loop_body(counted, (init, cond, step), body);
        }
        let to_cond = self.emit(Instr::Jump { target: 0 }, span);
        let body_start = self.here();
        let breaks = self.loop_body(body)?;
        if let Some(step) = step {
            let mark = self.next_temp;
            self.effect(step)?;
            self.next_temp = mark;
        }
        self.bind(Pending(vec![to_cond]));
        match cond {
            Some(cond) => {
                let mark = self.next_temp;
                let back = self.branch(cond, true)?;
                self.next_temp = mark;
                for at in back.0 {
                    super::set_target(&mut self.code[at], body_start);
                }
            }
            None => {
                self.emit(Instr::Jump { target: body_start }, span);
            }
        }
        self.bind(breaks);
        Ok(())
    }

    fn stmts(&mut self, stmts: &[StmtId]) -> Result<()> {
        for &stmt in stmts {
            self.stmt(stmt)?;
        }
        Ok(())
    }

    fn decl(&mut self, local: hir::LocalId, init: Option<ExprId>, span: RelSpan) -> Result<()> {
        // The sizes the declaration reads when it runs, before its initializer.
        self.runtime_sizes(local, span)?;
        let place = self.place_of(local)?;
        let declared = self.infer.type_of_local(local).clone();
        let local_span = self.body.source_map.local(local);
        let slot = match place {
            Place::Slot(slot) => slot,
            Place::Global(_) => self.temps(self.width(&declared)),
        };
        match init {
            Some(init) => {
                let value = match self.flat_initializer(init, &declared) {
                    // The literal's elements fill the declared shape row-major.
                    Some(shape) => {
                        let literal = self.expr(init, Dest::Any)?;
                        self.reshape_to(literal, &shape, Dest::Slot(slot), span)
                    }
                    None => self.value_as(init, &declared, Dest::Slot(slot), Some(local_span))?,
                };
                if value.slot() != slot {
                    self.emit(Instr::Copy { dst: slot, src: value }, span);
                }
            }
            None => {
                let instr = match &declared {
                    Ty::Tensor(_) => Instr::Zero {
                        dst: slot,
                        kind: Box::new(ZeroKind::Tensor(self.decl_dims(local)?.into_boxed_slice())),
                    },
                    Ty::Record(_) => return self.record_zeros(local, place, slot, span),
                    scalar => scalar_zero(scalar, slot)
                        .ok_or_else(|| self.internal("a declaration of this type", span))?,
                };
                self.emit(instr, span);
            }
        }
        let init_ty = init.map(|init| self.ty(init));
        self.finish_decl(local, place, slot, init_ty.as_ref(), span)
    }

    /// `(float loss, Tensor p[k][2]) = step(x);`: the call leaves its results in consecutive
    /// temporaries, and each binding takes its element as a declaration takes its initializer.
    fn tuple_decl(&mut self, locals: &[hir::LocalId], init: ExprId, span: RelSpan) -> Result<()> {
        let Ty::Tuple(elements) = self.ty(init) else {
            return Err(self.internal("a destructuring of something not a tuple", span));
        };
        if elements.len() != locals.len() {
            return Err(self.internal("a destructuring of a tuple of another length", span));
        }
        for &local in locals {
            self.runtime_sizes(local, span)?;
        }
        let first = self.expr(init, Dest::Any)?.slot();
        // Each element starts after the leaves of those before it.
        let mut offset = 0;
        for (&local, element) in locals.iter().zip(&elements) {
            let place = self.place_of(local)?;
            let declared = self.infer.type_of_local(local).clone();
            let slot = match place {
                Place::Slot(slot) => slot,
                Place::Global(_) => self.temps(self.width(&declared)),
            };
            let item = Operand::take(first + offset);
            offset += self.width(element);
            let value = self.convert(item, element, &declared, Dest::Slot(slot), span, true)?;
            if value.slot() != slot {
                self.emit(Instr::Copy { dst: slot, src: value }, span);
            }
            self.finish_decl(local, place, slot, Some(element), span)?;
        }
        Ok(())
    }

    /// Evaluates the sizes a declaration reads when it runs.
    fn runtime_sizes(&mut self, local: hir::LocalId, span: RelSpan) -> Result<()> {
        let body = self.body;
        for size in body.runtime_sizes.iter().filter(|size| size.decl == local) {
            match self.place_of(size.var)? {
                Place::Slot(slot) => {
                    let value = self.value_as(size.expr, &Ty::Int, Dest::Slot(slot), None)?;
                    if value.slot() != slot {
                        self.emit(Instr::Copy { dst: slot, src: value }, span);
                    }
                }
                Place::Global(global) => {
                    let value = self.value_as(size.expr, &Ty::Int, Dest::Any, None)?;
                    self.emit(Instr::StoreGlobal { global, src: value }, span);
                }
            }
        }
        Ok(())
    }

    /// A declared local whose value is in `slot`: a `var` becomes a leaf, the declared
    /// dimensions are checked against the value of type `init_ty` (and bind fresh shape
    /// variables), and a global is stored.
    fn finish_decl(
        &mut self,
        local: hir::LocalId,
        place: Place,
        slot: crate::code::Slot,
        init_ty: Option<&Ty>,
        span: RelSpan,
    ) -> Result<()> {
        let declared = self.infer.type_of_local(local).clone();
        let name = self.body.locals[local].name.to_string();
        if let Ty::Record(_) = declared {
            if self.is_var(local) {
                self.record_leaves(slot, &declared, span);
            }
            if let hir::TypeRef::Record(record) = &self.body.locals[local].ty
                && !record.inferred
            {
                let def = self.def;
                let body = self.body;
                let fresh = |var: &SizeVar| {
                    var.def == def && body.locals[var.local].bound_by == Some(local)
                };
                let context = CheckContext::Initializer { name };
                self.check_record(slot, &declared, init_ty, &fresh, context, &|_| span)?;
            }
            if let Place::Global(global) = place {
                for i in 0..self.width(&declared) {
                    let src = Operand::take(slot + i);
                    self.emit(Instr::StoreGlobal { global: global + i, src }, span);
                }
            }
            return Ok(());
        }
        if self.is_var(local) {
            self.emit(Instr::Leaf { slot }, span);
        }
        // Declared dimensions are checked (and fresh shape variables bound) unless the checker
        // proved the initializer's shape, and it was written as a size that needs no check of
        // its own (`n / 2` must divide, `n - 1` must not be negative).
        if let hir::TypeRef::Tensor(dims) = &self.body.locals[local].ty
            && !dims.is_empty()
            && let Some(value_ty) = init_ty
        {
            let fresh = self.body.locals.iter().any(|(_, data)| data.bound_by == Some(local));
            let valid = dims.iter().all(Dim::is_always_valid);
            if fresh || !valid || !shape_proven(&declared, value_ty) {
                let declared_text = hir::ty_of_ref(&self.body.locals[local].ty).to_string();
                let vars = self.size_vars(dims)?;
                for dims in self.decl_checks(local, true)? {
                    let check = self.add_check(ShapeCheck {
                        context: CheckContext::Initializer { name: name.clone() },
                        declared: declared_text.clone(),
                        vars: vars.clone(),
                        dims,
                        ranked: true,
                    });
                    self.emit(Instr::CheckShape { slot, check }, span);
                }
            }
        }
        if let Place::Global(global) = place {
            self.emit(Instr::StoreGlobal { global, src: Operand::take(slot) }, span);
        }
        Ok(())
    }

    /// `Linear[2][3] l;`: a record of zeros, each leaf as a declaration of its type without an
    /// initializer makes it.
    fn record_zeros(
        &mut self,
        local: hir::LocalId,
        place: Place,
        slot: crate::code::Slot,
        span: RelSpan,
    ) -> Result<()> {
        let declared = self.infer.type_of_local(local).clone();
        for (i, leaf) in hir::leaves(self.db(), &declared).into_iter().enumerate() {
            let dst = slot + i as u32;
            let instr = match &leaf.ty {
                Ty::Tensor(shape) => {
                    let dims = shape.dims().unwrap_or(&[]);
                    let specs =
                        dims.iter().map(|dim| self.dim_spec(dim)).collect::<Result<Vec<_>>>()?;
                    Instr::Zero { dst, kind: Box::new(ZeroKind::Tensor(specs.into_boxed_slice())) }
                }
                scalar => scalar_zero(scalar, dst)
                    .ok_or_else(|| self.internal("a record field of this type", span))?,
            };
            self.emit(instr, span);
        }
        self.finish_decl(local, place, slot, None, span)
    }

    /// The declared shape, when `init` is a flat literal of scalars that fills it row-major
    /// (`var Tensor b[2][1] = [3, 1];`).
    fn flat_initializer(&self, init: ExprId, declared: &Ty) -> Option<Vec<usize>> {
        let Expr::TensorLit(elements) = &self.body.exprs[init] else { return None };
        let flat = elements.iter().all(|&e| matches!(self.ty(e), Ty::Int | Ty::Float));
        let dims = declared.shape()?.dims()?;
        let shape: Option<Vec<usize>> = dims
            .iter()
            .map(|dim| match dim {
                Dim::Known(n) => usize::try_from(*n).ok(),
                _ => None,
            })
            .collect();
        let shape = shape?;
        let count: usize = shape.iter().product();
        (flat && dims.len() != 1 && count == elements.len()).then_some(shape)
    }

    /// `reshape(x, shape)` for a known shape, into `dest`.
    fn reshape_to(&mut self, x: Operand, shape: &[usize], dest: Dest, span: RelSpan) -> Operand {
        let ints: Vec<Operand> = shape
            .iter()
            .map(|&n| {
                let slot = self.temp();
                self.emit(Instr::LoadInt { dst: slot, value: n as i64 }, span);
                Operand::take(slot)
            })
            .collect();
        let dst = self.dst(dest);
        let call =
            BuiltinCall::Reshape { x, dims: DimsArg::Ints(ints.into_boxed_slice()), written: None };
        self.emit(Instr::Builtin { dst, call: Box::new(call) }, span);
        Self::result(dest, dst)
    }

    fn return_stmt(&mut self, value: Option<ExprId>, span: RelSpan) -> Result<()> {
        let Some(value) = value else {
            self.emit(Instr::Return { src: None }, span);
            return Ok(());
        };
        let signature = hir::signature(self.db(), self.def);
        let ret_ref = signature.ret.clone();
        if let hir::TypeRef::Tuple(expected) = &ret_ref {
            return self.return_tuple(value, expected, span);
        }
        let ret = hir::ty_of_ref(&ret_ref);
        let value_ty = self.ty(value);
        let operand = self.value_as(value, &ret, Dest::Any, Some(span))?;
        self.check_returned(operand, &ret_ref, &value_ty, span)?;
        // A record of several leaves returns them as a tuple does.
        if self.width(&ret) > 1 {
            let items = self.leaf_operands(operand, &ret);
            let items = self.arg_range(&items);
            self.emit(Instr::ReturnTuple { items }, span);
            return Ok(());
        }
        self.emit(Instr::Return { src: Some(operand) }, span);
        Ok(())
    }

    /// `return (a, b);`, or `return g(x);` of a function of several results: each element
    /// converted to its declared type and checked, then one [`Instr::ReturnTuple`].
    fn return_tuple(
        &mut self,
        value: ExprId,
        expected: &[hir::TypeRef],
        span: RelSpan,
    ) -> Result<()> {
        let mut items = Vec::with_capacity(expected.len());
        match &self.body.exprs[value] {
            Expr::Tuple(elements) => {
                if elements.len() != expected.len() {
                    return Err(self.internal("a tuple of another length", span));
                }
                for (&element, ret_ref) in elements.clone().iter().zip(expected) {
                    let ret = hir::ty_of_ref(ret_ref);
                    let value_ty = self.ty(element);
                    let operand = self.value_as(element, &ret, Dest::Any, Some(span))?;
                    self.check_returned(operand, ret_ref, &value_ty, span)?;
                    items.extend(self.leaf_operands(operand, &ret));
                }
            }
            _ => {
                let Ty::Tuple(actual) = self.ty(value) else {
                    return Err(self.internal("a return of something not a tuple", span));
                };
                if actual.len() != expected.len() {
                    return Err(self.internal("a tuple of another length", span));
                }
                let first = self.expr(value, Dest::Any)?.slot();
                let mut offset = 0;
                for (value_ty, ret_ref) in actual.iter().zip(expected) {
                    let ret = hir::ty_of_ref(ret_ref);
                    let item = Operand::take(first + offset);
                    offset += self.width(value_ty);
                    let operand = self.convert(item, value_ty, &ret, Dest::Any, span, true)?;
                    self.check_returned(operand, ret_ref, value_ty, span)?;
                    items.extend(self.leaf_operands(operand, &ret));
                }
            }
        }
        let items = self.arg_range(&items);
        self.emit(Instr::ReturnTuple { items }, span);
        Ok(())
    }

    /// Checks a returned value of type `value_ty` against the declared result type: as for a
    /// declaration, a size such as `n / 2` is checked even where the value's shape is proven
    /// equal to it, since it must also be a whole number.
    fn check_returned(
        &mut self,
        operand: Operand,
        ret_ref: &hir::TypeRef,
        value_ty: &Ty,
        span: RelSpan,
    ) -> Result<()> {
        if let hir::TypeRef::Record(_) = ret_ref {
            let ret = hir::ty_of_ref(ret_ref);
            let context = CheckContext::Return { function: self.function_name.clone() };
            let slot = operand.slot();
            // As for a tensor result: the sizes only the result type names are bound by it.
            let in_params = self.param_size_vars();
            let def = self.def;
            let fresh = |var: &SizeVar| var.def == def && !in_params.contains(var);
            return self.check_record(slot, &ret, Some(value_ty), &fresh, context, &|_| span);
        }
        let hir::TypeRef::Tensor(dims) = ret_ref else { return Ok(()) };
        let ret = hir::ty_of_ref(ret_ref);
        if dims.is_empty()
            || (dims.iter().all(Dim::is_always_valid) && shape_proven(&ret, value_ty))
        {
            return Ok(());
        }
        let slot = operand.slot();
        let vars = self.size_vars(dims)?;
        for dims in self.return_checks(dims)? {
            let check = self.add_check(ShapeCheck {
                context: CheckContext::Return { function: self.function_name.clone() },
                declared: ret.to_string(),
                vars: vars.clone(),
                dims,
                ranked: true,
            });
            self.emit(Instr::CheckShape { slot, check }, span);
        }
        Ok(())
    }

    /// The checks of a returned value: the return type's extents, which bind the shape
    /// variables that only the return type names (`k` in `function Tensor[k] f(...)`).
    fn return_checks(&self, dims: &[Dim]) -> Result<Vec<Vec<DimSpec>>> {
        let in_params = self.param_size_vars();
        let fresh = |var: &SizeVar| var.def == self.def && !in_params.contains(var);
        let checks = self.binding_checks(&[dims], &fresh)?;
        Ok(checks.into_iter().map(|(_, specs)| specs).collect())
    }

    /// The shape variables the parameters' extents and record sizes bind.
    fn param_size_vars(&self) -> Vec<SizeVar> {
        self.body
            .params
            .iter()
            .flat_map(|&p| match &self.body.locals[p].ty {
                hir::TypeRef::Tensor(dims) => dims.iter().flat_map(Dim::vars).collect(),
                hir::TypeRef::Record(record) => record.sizes.iter().flat_map(Dim::vars).collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    /// `C(i,j) op= factors...` as one contraction whose output labels are the target's.
    fn index_stmt(&mut self, stmt: &IndexStmt, span: RelSpan) -> Result<()> {
        let target_expr = stmt.target.tensor;
        let Some(hir::Resolution::Local(local)) = self.infer.resolution(target_expr) else {
            return Err(self.internal("an index statement whose target is not a local", span));
        };
        let Place::Slot(target) = self.place_of(local)? else {
            return Err(self.internal("an index statement writing a constant", span));
        };
        if self.is_var(local) {
            self.emit(Instr::RefreshVar { slot: target }, span);
        }
        let output: Vec<String> = stmt.target.labels.iter().map(|l| l.name.to_string()).collect();
        let mut labels: Vec<Vec<String>> = Vec::new();
        let mut operands: Vec<Operand> = Vec::new();
        let op = match stmt.op {
            IndexAssignOp::Assign => IndexAssign::Assign,
            IndexAssignOp::AddAssign => IndexAssign::Add,
            IndexAssignOp::MulAssign => IndexAssign::Mul,
        };
        if op == IndexAssign::Mul {
            labels.push(output.clone());
            operands.push(Operand::copy(target));
        }
        for factor in &stmt.factors {
            match factor {
                IndexFactor::Tensor(view) => {
                    labels.push(view.labels.iter().map(|l| l.name.to_string()).collect());
                    operands.push(self.expr(view.tensor, Dest::Any)?);
                }
                IndexFactor::Scalar(expr) => {
                    if let Expr::Literal(Literal::String(_)) = self.body.exprs[*expr] {
                        return Err(self.internal("a string factor", span));
                    }
                    labels.push(Vec::new());
                    operands.push(self.expr(*expr, Dest::Any)?);
                }
            }
        }
        let contraction = Contraction::from_labels(&labels, &output, 1.0)
            .map_err(|error| self.internal(&format!("an index statement ({error})"), span))?;
        let name = self.source_text(stmt.target.span);
        let call = BuiltinCall::IndexStatement {
            target,
            name: name.into_boxed_str(),
            op,
            contraction: Rc::new(contraction),
            operands: operands.into_boxed_slice(),
            labels: output.into_iter().map(String::into_boxed_str).collect(),
        };
        self.emit(Instr::Builtin { dst: NO_SLOT, call: Box::new(call) }, span);
        Ok(())
    }
}

/// The instruction that gives a scalar declared without a value its zero: `int` and `float` load
/// theirs as a literal does, on the interpreter's fast path (`int child;` in a loop took the
/// general path at every iteration); `None` for a type that is not a scalar.
fn scalar_zero(ty: &Ty, dst: crate::code::Slot) -> Option<Instr> {
    let zero = |kind| Instr::Zero { dst, kind: Box::new(kind) };
    Some(match ty {
        Ty::Int => Instr::LoadInt { dst, value: 0 },
        Ty::Float => Instr::LoadFloat { dst, value: 0.0 },
        Ty::Bool => zero(ZeroKind::Bool),
        Ty::Char => zero(ZeroKind::Char),
        _ => return None,
    })
}
