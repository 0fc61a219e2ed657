//! Lowering records. A record is never a [`crate::value::Value`]: its leaves (its fields,
//! flattened depth-first down to those that are not records, [`hir::leaves`]) sit in consecutive
//! slots, as a tuple's elements do. A record variable owns as many slots, a record parameter
//! expands into its leaves (a unit's `n_params` counts leaves), a record result fills the
//! caller's slots from the call's `dst` ([`crate::code::Unit::results`]), and a field is an
//! offset into the slots: structure costs nothing at run time.
//!
//! An operand of a record reads its first leaf; [`leaf`] reads the others.

use hir::{ArithOp, BinaryOp as HirBinary, Expr, ExprId, FieldInit, RelSpan, Resolution, Ty};
use tensor::UnaryOp;

use super::{Dest, Place, Result, UnitLowerer};
use crate::code::{BuiltinCall, CheckContext, FormatPiece, Instr, Operand, ShapeCheck, Slot};

/// The operand of leaf `i` of a value whose first leaf `first` reads: taken when the value is.
pub(super) fn leaf(first: Operand, i: u32) -> Operand {
    match first.is_take() {
        true => Operand::take(first.slot() + i),
        false => Operand::copy(first.slot() + i),
    }
}

impl UnitLowerer<'_, '_> {
    /// How many slots a value of type `ty` takes: 1, or its leaves for a record or a tuple.
    pub(super) fn width(&self, ty: &Ty) -> u32 {
        hir::width(self.db(), ty) as u32
    }

    /// `width` consecutive new temporaries; the first.
    pub(super) fn temps(&mut self, width: u32) -> Slot {
        // Consecutive, so none of them may be a slot reserved for a hoisted number.
        while (self.next_temp..self.next_temp + width).any(|i| self.is_hoisted(Slot::new(i))) {
            self.next_temp += 1;
        }
        let first = Slot::new(self.next_temp);
        for _ in 0..width {
            self.temp();
        }
        first
    }

    /// Puts a value of type `ty` where `dest` wants it: every leaf, for a record.
    pub(super) fn place_value_in(
        &mut self,
        operand: Operand,
        ty: &Ty,
        dest: Dest,
        span: RelSpan,
    ) -> Operand {
        let width = self.width(ty);
        if width == 1 {
            return self.place_in(operand, dest, span);
        }
        match dest {
            Dest::Slot(slot) if slot != operand.slot() => {
                for i in 0..width {
                    self.emit(Instr::Copy { dst: slot + i, src: leaf(operand, i) }, span);
                }
                Operand::copy(slot)
            }
            _ => operand,
        }
    }

    /// The leaves of a value of type `ty` whose first leaf `first` reads, as operands.
    pub(super) fn leaf_operands(&self, first: Operand, ty: &Ty) -> Vec<Operand> {
        (0..self.width(ty)).map(|i| leaf(first, i)).collect()
    }

    /// Whether leaf `i` of a value of type `ty` is differentiable (a float or a tensor): what
    /// `var` makes a leaf of the graph and `grad` has a gradient for.
    fn differentiable_leaves(&self, ty: &Ty) -> Vec<bool> {
        hir::leaves(self.db(), ty).iter().map(|leaf| leaf.ty.is_differentiable()).collect()
    }

    /// An expression of record type, into `dest`.
    pub(super) fn record_expr(&mut self, expr: ExprId, dest: Dest) -> Result<Operand> {
        let span = self.span_of(expr);
        let ty = self.ty(expr);
        let operand = match &self.body.exprs[expr] {
            Expr::Name { .. } => self.record_name(expr)?,
            Expr::Field { .. } => self.field(expr, Dest::Any)?,
            Expr::RecordLit { fields, .. } => {
                let fields = fields.clone();
                self.record_literal(expr, &fields)?
            }
            Expr::Call { .. } => self.call(expr, Some(Dest::Any))?,
            Expr::Assign { op, target, value } => {
                let (op, target, value) = (*op, *target, *value);
                self.assign(expr, op, target, value, true)?
            }
            Expr::Binary { .. } | Expr::Unary { .. } => self.record_arithmetic(expr)?,
            Expr::Ternary { cond, then_branch, else_branch } => {
                let (cond, then_branch, else_branch) = (*cond, *then_branch, *else_branch);
                let first = self.temps(self.width(&ty));
                let to_else = self.branch(cond, false)?;
                self.value_as(then_branch, &ty, Dest::Slot(first), Some(span))?;
                let to_end = self.emit(Instr::Jump { target: 0 }, span);
                self.bind(to_else);
                self.value_as(else_branch, &ty, Dest::Slot(first), Some(span))?;
                self.bind(super::Pending(vec![to_end]));
                Operand::take(first)
            }
            _ => return Err(self.internal("this expression of a record type", span)),
        };
        Ok(self.place_value_in(operand, &ty, dest, span))
    }

    /// `a + b`, `lr * g`, `-g` with a record operand: the operator on each leaf, a number
    /// standing for every leaf.
    fn record_arithmetic(&mut self, expr: ExprId) -> Result<Operand> {
        let span = self.span_of(expr);
        let ty = self.ty(expr);
        match self.body.exprs[expr] {
            Expr::Binary { op: HirBinary::Arith(arith), lhs, rhs } => {
                let a = self.record_operand(lhs)?;
                let b = self.record_operand(rhs)?;
                let first = self.temps(self.width(&ty));
                self.leafwise(arith, &ty, a, b, first, span)?;
                Ok(Operand::take(first))
            }
            Expr::Unary { op: hir::UnaryOp::Plus, operand } => self.expr(operand, Dest::Any),
            Expr::Unary { op: hir::UnaryOp::Neg, operand } => {
                let a = self.expr(operand, Dest::Any)?;
                let width = self.width(&ty);
                let first = self.temps(width);
                for i in 0..width {
                    let instr = Instr::Unary { op: UnaryOp::Neg, dst: first + i, a: leaf(a, i) };
                    self.emit(instr, span);
                }
                Ok(Operand::take(first))
            }
            _ => Err(self.internal("this operation on records", span)),
        }
    }

    /// An operand of lifted arithmetic: a record, or a number as a float (it stands for every
    /// leaf, so it is read, never taken).
    fn record_operand(&mut self, expr: ExprId) -> Result<(Operand, bool)> {
        match self.ty(expr) {
            Ty::Record(_) => Ok((self.expr(expr, Dest::Any)?, true)),
            _ => {
                let value = self.value_as(expr, &Ty::Float, Dest::Any, None)?;
                Ok((Operand::copy(value.slot()), false))
            }
        }
    }

    /// `a op b` for each leaf of the record type `ty`, into `first..`.
    fn leafwise(
        &mut self,
        arith: ArithOp,
        ty: &Ty,
        (a, a_record): (Operand, bool),
        (b, b_record): (Operand, bool),
        first: Slot,
        span: RelSpan,
    ) -> Result<()> {
        for (i, leaf_ty) in hir::leaves(self.db(), ty).into_iter().enumerate() {
            let i = i as u32;
            let x = if a_record { leaf(a, i) } else { a };
            let y = if b_record { leaf(b, i) } else { b };
            let instr = self.arith_instr(arith, &leaf_ty.ty, false, first + i, x, y, span)?;
            self.emit(instr, span);
        }
        Ok(())
    }

    /// `net -= lr * g`, `m *= 0.9`: the operator on each leaf of the record in `slot..`, in
    /// place. `w -= c * g` on each tensor leaf is one scaled update, as for a tensor variable.
    pub(super) fn record_compound(
        &mut self,
        expr: ExprId,
        arith: ArithOp,
        target: ExprId,
        value: ExprId,
        slot: Slot,
    ) -> Result<()> {
        let span = self.span_of(expr);
        let ty = self.ty(target);
        let scaled = match self.body.exprs[value] {
            Expr::Binary { op: HirBinary::Arith(ArithOp::Mul), lhs, rhs }
                if matches!(arith, ArithOp::Add | ArithOp::Sub) =>
            {
                match (self.ty(lhs), self.ty(rhs)) {
                    (Ty::Float | Ty::Int, Ty::Record(_)) => Some((lhs, rhs)),
                    (Ty::Record(_), Ty::Float | Ty::Int) => Some((rhs, lhs)),
                    _ => None,
                }
            }
            _ => None,
        };
        let local = self.field_place(target)?.map(|(local, _)| local);
        if let Some((scale, x)) = scaled {
            let (scale, _) = self.record_operand(scale)?;
            let x = self.expr(x, Dest::Any)?;
            if let Some(local) = local {
                self.refresh_leaves(local, slot, &ty, span);
            }
            for (i, leaf_ty) in hir::leaves(self.db(), &ty).into_iter().enumerate() {
                let i = i as u32;
                let target = self.updated(slot + i, x, i);
                if leaf_ty.ty.is_tensor() {
                    let call = BuiltinCall::ScaledUpdate {
                        target,
                        subtract: arith == ArithOp::Sub,
                        scale,
                        x: leaf(x, i),
                    };
                    self.emit(Instr::Builtin { dst: slot + i, call: Box::new(call) }, span);
                } else {
                    let product = self.temp();
                    let instr = self.arith_instr(
                        ArithOp::Mul,
                        &leaf_ty.ty,
                        false,
                        product,
                        scale,
                        leaf(x, i),
                        span,
                    )?;
                    self.emit(instr, span);
                    let instr = self.arith_instr(
                        arith,
                        &leaf_ty.ty,
                        false,
                        slot + i,
                        target,
                        Operand::take(product),
                        span,
                    )?;
                    self.emit(instr, span);
                }
            }
            return Ok(());
        }
        let b = self.record_operand(value)?;
        if let Some(local) = local {
            self.refresh_leaves(local, slot, &ty, span);
        }
        for (i, leaf_ty) in hir::leaves(self.db(), &ty).into_iter().enumerate() {
            let i = i as u32;
            let x = self.updated(slot + i, b.0, i);
            let y = if b.1 { leaf(b.0, i) } else { b.0 };
            let instr = self.arith_instr(arith, &leaf_ty.ty, false, slot + i, x, y, span)?;
            self.emit(instr, span);
        }
        Ok(())
    }

    /// The operand of a leaf updated in place: taken (so a tensor is updated where it is),
    /// unless the right side reads the variable's slots.
    fn updated(&self, slot: Slot, value: Operand, i: u32) -> Operand {
        match value.is_take() || value.slot() + i != slot {
            true => Operand::take(slot),
            false => Operand::copy(slot),
        }
    }

    /// A record variable read as a value: its slots, refreshed when it is `var`; a record
    /// constant's globals, one per leaf, loaded into temporaries.
    fn record_name(&mut self, expr: ExprId) -> Result<Operand> {
        let span = self.span_of(expr);
        let ty = self.ty(expr);
        let global = match self.infer.resolution(expr) {
            Some(Resolution::Local(local)) => match self.place_of(local)? {
                Place::Slot(slot) => return Ok(self.record_local(local, slot, span)),
                Place::Global(global) => global,
            },
            Some(Resolution::Global { def, local }) => self.global_of(def, local)?,
            _ => return Err(self.internal("a record that is not a variable", span)),
        };
        let width = self.width(&ty);
        let first = self.temps(width);
        for i in 0..width {
            self.emit(Instr::LoadGlobal { dst: first + i, global: global + i }, span);
        }
        Ok(Operand::take(first))
    }

    /// A record variable in `slot..`, read as a value.
    fn record_local(&mut self, local: hir::LocalId, slot: Slot, span: RelSpan) -> Operand {
        let ty = self.infer.type_of_local(local).clone();
        self.refresh_leaves(local, slot, &ty, span);
        if self.snapshot {
            let width = self.width(&ty);
            let copy = self.temps(width);
            for i in 0..width {
                self.emit(Instr::Copy { dst: copy + i, src: Operand::copy(slot + i) }, span);
            }
            return Operand::take(copy);
        }
        Operand::copy(slot)
    }

    /// A `var` record's differentiable leaves in `slot..`, refreshed before they are read.
    fn refresh_leaves(&mut self, local: hir::LocalId, slot: Slot, ty: &Ty, span: RelSpan) {
        if !self.is_var(local) {
            return;
        }
        for (i, differentiable) in self.differentiable_leaves(ty).into_iter().enumerate() {
            if differentiable {
                self.emit(Instr::RefreshVar { slot: slot + i as u32 }, span);
            }
        }
    }

    /// The variable and the first slot of a chain of fields rooted at a local (`net.l1.w`), so
    /// that it is read and written in place.
    pub(super) fn field_place(&self, expr: ExprId) -> Result<Option<(hir::LocalId, Slot)>> {
        match &self.body.exprs[expr] {
            Expr::Name { .. } => {
                let Some(Resolution::Local(local)) = self.infer.resolution(expr) else {
                    return Ok(None);
                };
                match self.place_of(local)? {
                    Place::Slot(slot) => Ok(Some((local, slot))),
                    Place::Global(_) => Ok(None),
                }
            }
            Expr::Field { base, name, .. } => {
                let Some((local, slot)) = self.field_place(*base)? else { return Ok(None) };
                let offset = self.field_offset(*base, name, self.span_of(expr))?;
                Ok(Some((local, slot + offset)))
            }
            _ => Ok(None),
        }
    }

    /// Where field `name` of the record `base` evaluates to starts among its leaves.
    fn field_offset(&self, base: ExprId, name: &str, span: RelSpan) -> Result<u32> {
        let Ty::Record(record) = self.ty(base) else {
            return Err(self.internal("a field of something not a record", span));
        };
        let (offset, _) = hir::field_offset(self.db(), &record, name)
            .ok_or_else(|| self.internal("a field the record does not have", span))?;
        Ok(offset as u32)
    }

    /// `net.l1.w`: a field read in place when the chain starts at a variable, else a slot
    /// offset into the record the base evaluates to.
    pub(super) fn field(&mut self, expr: ExprId, dest: Dest) -> Result<Operand> {
        let span = self.span_of(expr);
        let Expr::Field { base, name, .. } = &self.body.exprs[expr] else {
            return Err(self.internal("a field", span));
        };
        let (base, name) = (*base, name.clone());
        let ty = self.ty(expr);
        let width = self.width(&ty);
        if let Some((local, slot)) = self.field_place(expr)? {
            self.refresh_leaves(local, slot, &ty, span);
            if self.snapshot {
                let copy = self.temps(width);
                for i in 0..width {
                    self.emit(Instr::Copy { dst: copy + i, src: Operand::copy(slot + i) }, span);
                }
                return Ok(self.place_value_in(Operand::take(copy), &ty, dest, span));
            }
            return Ok(self.place_value_in(Operand::copy(slot), &ty, dest, span));
        }
        let offset = self.field_offset(base, &name, span)?;
        let record = self.expr(base, Dest::Any)?;
        Ok(self.place_value_in(leaf(record, offset), &ty, dest, span))
    }

    /// `Linear { w: ..., b: ... }`: the values in source order, each into its field's slots of
    /// new temporaries.
    fn record_literal(&mut self, expr: ExprId, fields: &[FieldInit]) -> Result<Operand> {
        let span = self.span_of(expr);
        let Ty::Record(record) = self.ty(expr) else {
            return Err(self.internal("a record literal of no record type", span));
        };
        let ty = Ty::Record(record.clone());
        let first = self.temps(self.width(&ty));
        let mut unproven = false;
        for init in fields {
            let (offset, field) = hir::field_offset(self.db(), &record, &init.name)
                .ok_or_else(|| self.internal("a field the record does not have", span))?;
            let slot = first + offset as u32;
            let value = self.value_as(init.value, &field.ty, Dest::Slot(slot), Some(span))?;
            self.place_value_in(value, &field.ty, Dest::Slot(slot), span);
            unproven |= !self.leaves_proven(&field.ty, &self.ty(init.value));
        }
        if unproven {
            self.check_literal(first, &record, fields, span)?;
        }
        Ok(Operand::take(first))
    }

    /// Checks the fields of a literal whose values' shapes the checker did not know against the
    /// `struct`'s fields, binding its size parameters (in temporaries) from the first extent that
    /// gives each, as a call binds a function's shape variables: `Linear { w: a, b: c }` with `w`
    /// of 2x3 values and `c` of 4 fails at `c` (R0102).
    fn check_literal(
        &mut self,
        first: Slot,
        record: &hir::RecordTy,
        fields: &[FieldInit],
        span: RelSpan,
    ) -> Result<()> {
        let db = self.db();
        let generic = hir::generic_record(db, record.def);
        let params = hir::size_params(db, record.def);
        for var in &params {
            let slot = self.temp();
            self.struct_sizes.insert(var.clone(), slot);
        }
        // The span of the value given for the field that holds each leaf.
        let spans: Vec<RelSpan> = hir::record_fields(db, &generic)
            .iter()
            .flat_map(|field| {
                let value = fields.iter().find(|init| init.name == field.name);
                let at = value.map_or(span, |init| self.span_of(init.value));
                std::iter::repeat_n(at, hir::width(db, &field.ty))
            })
            .collect();
        let context = CheckContext::Literal { record: record.name.to_string() };
        let def = record.def;
        let generic = Ty::Record(std::sync::Arc::new(generic));
        let result =
            self.check_record(first, &generic, None, &|var| var.def == def, context, &|leaf| {
                spans.get(leaf).copied().unwrap_or(span)
            });
        for var in &params {
            self.struct_sizes.remove(var);
        }
        result
    }

    /// An element-wise built-in (`sqrt(v)`) of a record: on each leaf.
    pub(super) fn record_unary(
        &mut self,
        op: UnaryOp,
        arg: ExprId,
        dest: Dest,
        span: RelSpan,
    ) -> Result<Operand> {
        let ty = self.ty(arg);
        let a = self.expr(arg, Dest::Any)?;
        let width = self.width(&ty);
        let first = self.temps(width);
        for i in 0..width {
            self.emit(Instr::Unary { op, dst: first + i, a: leaf(a, i) }, span);
        }
        Ok(self.place_value_in(Operand::take(first), &ty, dest, span))
    }

    /// `print(net)`: the record as `Linear { w: [1.0, 2.0], b: 0.5 }`, nested records alike,
    /// each leaf printed as `print` prints a value. A record with a tensor of rank 2 or more,
    /// which prints on several lines, puts each field on a line of its own, indented.
    pub(super) fn record_pieces(&mut self, arg: ExprId) -> Result<Box<[FormatPiece]>> {
        let ty = self.ty(arg);
        let value = self.expr(arg, Dest::Any)?;
        let mut pieces = Vec::new();
        let mut next = 0;
        self.push_record_pieces(&ty, value, &mut next, 0, &mut pieces);
        Ok(pieces.into_boxed_slice())
    }

    fn push_record_pieces(
        &self,
        ty: &Ty,
        value: Operand,
        next: &mut u32,
        depth: usize,
        pieces: &mut Vec<FormatPiece>,
    ) {
        let Ty::Record(record) = ty else {
            pieces.push(FormatPiece::Value(leaf(value, *next), hir::FormatSpec::default()));
            *next += 1;
            return;
        };
        let multiline = hir::leaves(self.db(), ty)
            .iter()
            .any(|leaf| leaf.ty.rank().is_none_or(|rank| rank >= 2));
        let fields = hir::record_fields(self.db(), record);
        if !multiline {
            pieces.push(FormatPiece::Text(format!("{} {{ ", record.name).into()));
            for (i, field) in fields.into_iter().enumerate() {
                let separator = if i == 0 { "" } else { ", " };
                pieces.push(FormatPiece::Text(format!("{separator}{}: ", field.name).into()));
                self.push_record_pieces(&field.ty, value, next, depth + 1, pieces);
            }
            pieces.push(FormatPiece::Text(" }".into()));
            return;
        }
        let indent = "    ".repeat(depth + 1);
        pieces.push(FormatPiece::Text(format!("{} {{", record.name).into()));
        for field in fields {
            pieces.push(FormatPiece::Text(format!("\n{indent}{}: ", field.name).into()));
            self.push_record_pieces(&field.ty, value, next, depth + 1, pieces);
            pieces.push(FormatPiece::Text(",".into()));
        }
        pieces.push(FormatPiece::Text(format!("\n{}}}", "    ".repeat(depth)).into()));
    }

    /// `grad(net)` of a record variable: the gradient of each leaf, a record of the same type.
    pub(super) fn record_grad(&mut self, arg: ExprId, dest: Dest) -> Result<Operand> {
        let span = self.span_of(arg);
        let ty = self.ty(arg);
        let x = self.expr(arg, Dest::Any)?;
        let width = self.width(&ty);
        let first = self.temps(width);
        for i in 0..width {
            let call = BuiltinCall::GradOf(leaf(x, i));
            self.emit(Instr::Builtin { dst: first + i, call: Box::new(call) }, span);
        }
        Ok(self.place_value_in(Operand::take(first), &ty, dest, span))
    }

    /// A `var` record: every differentiable leaf becomes a leaf of the graph.
    pub(super) fn record_leaves(&mut self, slot: Slot, ty: &Ty, span: RelSpan) {
        for (i, differentiable) in self.differentiable_leaves(ty).into_iter().enumerate() {
            if differentiable {
                self.emit(Instr::Leaf { slot: slot + i as u32 }, span);
            }
        }
    }

    /// Whether the checker proved that a value of type `value` has the shapes of type
    /// `declared`, leaf by leaf, in sizes that need no check of their own.
    fn leaves_proven(&self, declared: &Ty, value: &Ty) -> bool {
        let (declared, value) = (hir::leaves(self.db(), declared), hir::leaves(self.db(), value));
        declared.len() == value.len()
            && declared.iter().zip(&value).all(|(d, v)| {
                let valid =
                    d.ty.shape()
                        .and_then(hir::Shape::dims)
                        .is_none_or(|dims| dims.iter().all(hir::Dim::is_always_valid));
                valid && super::shape_proven(&d.ty, &v.ty)
            })
    }

    /// Checks the tensor leaves of a record in `slot..` against the shapes of type `declared`
    /// (binding the variables `fresh` says are theirs), the check of leaf `i` at `span_of(i)`,
    /// unless the checker proved the value's type `value` has them.
    pub(super) fn check_record(
        &mut self,
        slot: Slot,
        declared: &Ty,
        value: Option<&Ty>,
        fresh: &dyn Fn(&hir::SizeVar) -> bool,
        context: CheckContext,
        span_of: &dyn Fn(usize) -> RelSpan,
    ) -> Result<()> {
        let db = self.db();
        let declared_leaves = hir::leaves(db, declared);
        if value.is_some_and(|value| self.leaves_proven(declared, value)) {
            return Ok(());
        }
        let shapes: Vec<&[hir::Dim]> = declared_leaves
            .iter()
            .map(|leaf| leaf.ty.shape().and_then(hir::Shape::dims).unwrap_or(&[]))
            .collect();
        for (index, specs) in self.binding_checks(&shapes, fresh)? {
            let leaf = &declared_leaves[index];
            let check = self.add_check(ShapeCheck {
                context: context.clone(),
                declared: format!("{} (field `{}`)", leaf.ty, leaf.dotted()),
                vars: self.size_vars(shapes[index])?,
                dims: specs,
                ranked: true,
            });
            self.emit(Instr::CheckShape { slot: slot + index as u32, check }, span_of(index));
        }
        Ok(())
    }
}
