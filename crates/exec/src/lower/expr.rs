//! Lowering expressions: names, literals, operators specialised by type, conditions as jumps,
//! assignments (plain, compound, indexed), `++`/`--`, casts, calls of functions and of
//! derivatives, and the implicit conversions of language.md section 2.

use hir::{
    ArithOp, BinaryOp as HirBinary, CmpOp, Expr, ExprId, Literal, LogicOp, RelSpan, Resolution,
    TransformOp, Ty, TypeRef, UnaryOp as HirUnary,
};

use super::{Dest, Number, Pending, Place, Result, UnitLowerer, shape_proven};
use crate::code::{
    ArgRange, BuiltinCall, Callable, CastKind, CheckContext, Cmp, DimSpec, IndexChain, IndexEntry,
    Instr, IntOp, NO_SLOT, Operand, ShapeCheck, Slot,
};
use crate::value::Value;
use tensor::{BinaryOp, Tensor, UnaryOp};

/// The conversion a value needs where a type is expected.
enum Conversion {
    None,
    IntToFloat,
    ToTensor,
}

fn conversion(from: &Ty, to: &Ty) -> Conversion {
    match (from, to) {
        (Ty::Int, Ty::Float) => Conversion::IntToFloat,
        (Ty::Int | Ty::Float, Ty::Tensor(_)) => Conversion::ToTensor,
        _ => Conversion::None,
    }
}

/// Whether values of this type are integers to the integer instructions.
fn int_like(ty: &Ty) -> bool {
    matches!(ty, Ty::Int | Ty::Char | Ty::Bool)
}

pub(super) fn cmp_of(op: CmpOp) -> Cmp {
    match op {
        CmpOp::Lt => Cmp::Lt,
        CmpOp::Le => Cmp::Le,
        CmpOp::Gt => Cmp::Gt,
        CmpOp::Ge => Cmp::Ge,
        CmpOp::Eq => Cmp::Eq,
        CmpOp::Ne => Cmp::Ne,
    }
}

pub(super) fn int_op(op: ArithOp) -> Option<IntOp> {
    Some(match op {
        ArithOp::Add => IntOp::Add,
        ArithOp::Sub => IntOp::Sub,
        ArithOp::Mul => IntOp::Mul,
        ArithOp::Div => IntOp::Div,
        ArithOp::Rem => IntOp::Rem,
        ArithOp::Shl => IntOp::Shl,
        ArithOp::Shr => IntOp::Shr,
        ArithOp::BitAnd => IntOp::And,
        ArithOp::BitXor => IntOp::Xor,
        ArithOp::BitOr => IntOp::Or,
        ArithOp::MatMul => return None,
    })
}

pub(super) fn float_op(op: ArithOp) -> Option<BinaryOp> {
    Some(match op {
        ArithOp::Add => BinaryOp::Add,
        ArithOp::Sub => BinaryOp::Sub,
        ArithOp::Mul => BinaryOp::Mul,
        ArithOp::Div => BinaryOp::Div,
        ArithOp::Rem => BinaryOp::Rem,
        _ => return None,
    })
}

impl UnitLowerer<'_, '_> {
    /// Evaluates `expr` for its effects only.
    pub(super) fn effect(&mut self, expr: ExprId) -> Result<()> {
        match &self.body.exprs[expr] {
            Expr::Assign { op, target, value } => {
                self.assign(expr, *op, *target, *value, false)?;
            }
            Expr::IncDec { target, increment, .. } => {
                self.inc_dec(expr, *target, *increment, true, Dest::Any)?;
            }
            Expr::Call { .. } => {
                self.call(expr, None)?;
            }
            _ => {
                self.expr(expr, Dest::Any)?;
            }
        }
        Ok(())
    }

    /// Evaluates `expr` and converts it to `to` (`int` to `float`, a scalar to a tensor whose
    /// shape variables are resolved at `at`).
    pub(super) fn value_as(
        &mut self,
        expr: ExprId,
        to: &Ty,
        dest: Dest,
        at: Option<RelSpan>,
    ) -> Result<Operand> {
        let from = self.ty(expr);
        let span = self.span_of(expr);
        match (conversion(&from, to), self.const_int(expr)) {
            (Conversion::None, _) => self.expr(expr, dest),
            (Conversion::IntToFloat, Some(value)) => {
                Ok(self.load_number(Number::Float((value as f64).to_bits()), dest, span))
            }
            (Conversion::IntToFloat | Conversion::ToTensor, _) => {
                let operand = self.expr(expr, Dest::Any)?;
                self.convert(operand, &from, to, dest, span, at.is_some())
            }
        }
    }

    /// Converts a value of type `from` in `operand` to `to`, into `dest`: for a value that is
    /// not an expression of its own, such as an element of a tuple. `declared` says whether
    /// `to` is a declared type whose sizes the value must fit.
    pub(super) fn convert(
        &mut self,
        operand: Operand,
        from: &Ty,
        to: &Ty,
        dest: Dest,
        span: RelSpan,
        declared: bool,
    ) -> Result<Operand> {
        match conversion(from, to) {
            Conversion::None => Ok(self.place_value_in(operand, from, dest, span)),
            Conversion::IntToFloat => {
                let dst = self.dst(dest);
                self.emit(Instr::Cast { kind: CastKind::Float, dst, a: operand }, span);
                Ok(Self::result(dest, dst))
            }
            Conversion::ToTensor => {
                let shape = self.target_shape(to, declared)?;
                let dst = self.dst(dest);
                let call = BuiltinCall::ToTensor { x: operand, shape };
                self.emit(Instr::Builtin { dst, call: Box::new(call) }, span);
                Ok(Self::result(dest, dst))
            }
        }
    }

    /// Evaluates `expr` into `dest`. Long chains such as `1 + 1 + ... + 1` nest deeply, so the
    /// walk grows its stack on demand.
    pub(super) fn expr(&mut self, expr: ExprId, dest: Dest) -> Result<Operand> {
        stacker::maybe_grow(super::STACK_RED_ZONE, super::STACK_SEGMENT, || {
            self.expr_inner(expr, dest)
        })
    }

    fn expr_inner(&mut self, expr: ExprId, dest: Dest) -> Result<Operand> {
        let span = self.span_of(expr);
        if matches!(self.infer.type_of_expr(expr), Ty::Record(_)) {
            return self.record_expr(expr, dest);
        }
        match &self.body.exprs[expr] {
            Expr::Missing | Expr::Transform { .. } | Expr::Tuple(_) | Expr::RecordLit { .. } => {
                Err(self.internal("this expression", span))
            }
            Expr::Field { .. } => self.field(expr, dest),
            Expr::Literal(Literal::Int(value)) => {
                Ok(self.load_number(Number::Int(*value), dest, span))
            }
            Expr::Literal(Literal::Float(bits)) => {
                Ok(self.load_number(Number::Float(*bits), dest, span))
            }
            Expr::Literal(literal) => {
                let dst = self.dst(dest);
                match literal {
                    Literal::Int(_) | Literal::Float(_) => {
                        return Err(self.internal("a number literal", span));
                    }
                    Literal::Char(c) => {
                        let index = self.constant(Value::Char(*c));
                        self.emit(Instr::LoadConst { dst, index }, span);
                    }
                    Literal::Bool(b) => {
                        let index = self.constant(Value::Bool(*b));
                        self.emit(Instr::LoadConst { dst, index }, span);
                    }
                    Literal::String(_) => return Err(self.internal("a string as a value", span)),
                }
                Ok(Self::result(dest, dst))
            }
            Expr::Name { .. } => {
                let operand = self.name(expr)?;
                Ok(self.place_in(operand, dest, span))
            }
            Expr::TensorLit(_) => self.tensor_literal(expr, dest),
            Expr::Call { .. } => {
                let operand = self.call(expr, Some(dest))?;
                Ok(operand)
            }
            Expr::Index { .. } => {
                let (root, entries) = self.index_chain(expr)?;
                let base = self.expr(root, Dest::Any)?;
                let entries = self.index_entries(&entries)?;
                let index = self.index_list(entries);
                let dst = self.dst(dest);
                let element = self.ty(expr) == Ty::Float;
                self.emit(self.read_index(dst, base, index, element), span);
                Ok(Self::result(dest, dst))
            }
            Expr::Unary { op, operand } => self.unary(expr, *op, *operand, dest),
            Expr::IncDec { target, increment, prefix } => {
                self.inc_dec(expr, *target, *increment, *prefix, dest)
            }
            Expr::Cast { ty, operand } => self.cast(expr, ty, *operand, dest),
            Expr::SizeofExpr(inner) => {
                let ty = self.ty(*inner);
                let known = match &ty {
                    Ty::Tensor(shape) => shape.known_size(),
                    _ => Some(1),
                };
                let dst = self.dst(dest);
                match known {
                    Some(size) => {
                        self.emit(Instr::LoadInt { dst, value: size }, span);
                    }
                    None => {
                        let operand = self.expr(*inner, Dest::Any)?;
                        let call = BuiltinCall::Sizeof(operand);
                        self.emit(Instr::Builtin { dst, call: Box::new(call) }, span);
                    }
                }
                Ok(Self::result(dest, dst))
            }
            Expr::SizeofType(ty) => {
                let dst = self.dst(dest);
                match ty {
                    TypeRef::Tensor(dims) => {
                        let specs = dims
                            .iter()
                            .map(|dim| self.dim_spec(dim))
                            .collect::<Result<Vec<_>>>()?;
                        let call = BuiltinCall::SizeofDims(specs.into_boxed_slice());
                        self.emit(Instr::Builtin { dst, call: Box::new(call) }, span);
                    }
                    _ => {
                        self.emit(Instr::LoadInt { dst, value: 1 }, span);
                    }
                }
                Ok(Self::result(dest, dst))
            }
            Expr::Binary { op, lhs, rhs } => self.binary(expr, *op, *lhs, *rhs, dest),
            Expr::Assign { op, target, value } => {
                let operand = self.assign(expr, *op, *target, *value, true)?;
                let operand = self.stable(operand, span);
                Ok(self.place_in(operand, dest, span))
            }
            Expr::Ternary { cond, then_branch, else_branch } => {
                let ty = self.ty(expr);
                let dst = match dest {
                    Dest::Slot(slot) => slot,
                    Dest::Any => self.temp(),
                };
                let to_else = self.branch(*cond, false)?;
                let then_value = self.value_as(*then_branch, &ty, Dest::Slot(dst), Some(span))?;
                if then_value.slot() != dst {
                    self.emit(Instr::Copy { dst, src: then_value }, span);
                }
                let to_end = self.emit(Instr::Jump { target: 0 }, span);
                self.bind(to_else);
                let else_value = self.value_as(*else_branch, &ty, Dest::Slot(dst), Some(span))?;
                if else_value.slot() != dst {
                    self.emit(Instr::Copy { dst, src: else_value }, span);
                }
                self.bind(Pending(vec![to_end]));
                Ok(Self::result(dest, dst))
            }
        }
    }

    /// The operand that reads the result of a float arithmetic or element-wise instruction
    /// written to `slot` for `dest`: a temporary the instruction chose is fresh (see
    /// [`Operand::fresh`]), so a scalar operation reading it may fuse the two tape records.
    pub(super) fn fresh_result(dest: Dest, slot: Slot) -> Operand {
        match dest {
            Dest::Any => Operand::fresh(slot),
            Dest::Slot(_) => Operand::copy(slot),
        }
    }

    /// A name read as a value: a local's slot (refreshed first when it is `var`) or a global.
    fn name(&mut self, expr: ExprId) -> Result<Operand> {
        let span = self.span_of(expr);
        match self.infer.resolution(expr) {
            Some(Resolution::Local(local)) => match self.place_of(local)? {
                Place::Slot(slot) => {
                    if self.is_var(local) {
                        self.emit(Instr::RefreshVar { slot }, span);
                    }
                    if self.snapshot {
                        let copy = self.temp();
                        self.emit(Instr::Copy { dst: copy, src: Operand::copy(slot) }, span);
                        return Ok(Operand::take(copy));
                    }
                    Ok(Operand::copy(slot))
                }
                Place::Global(global) => {
                    let dst = self.temp();
                    self.emit(Instr::LoadGlobal { dst, global }, span);
                    Ok(Operand::take(dst))
                }
            },
            Some(Resolution::Global { def, local }) => {
                let global = self.global_of(def, local)?;
                let dst = self.temp();
                self.emit(Instr::LoadGlobal { dst, global }, span);
                Ok(Operand::take(dst))
            }
            _ => Err(self.internal("a name that is not a variable", span)),
        }
    }

    /// In snapshot mode, a copy of a variable's current value that later operands cannot change.
    fn stable(&mut self, operand: Operand, span: RelSpan) -> Operand {
        if !self.snapshot || operand.is_take() {
            return operand;
        }
        let copy = self.temp();
        self.emit(Instr::Copy { dst: copy, src: operand }, span);
        Operand::take(copy)
    }

    /// The value of an integer constant expression, as the checker sees it.
    pub(super) fn const_int(&self, expr: ExprId) -> Option<i64> {
        hir::const_int(self.db(), self.body, self.infer, expr)
    }

    /// The constant integer value of `expr` when it fits an instruction's immediate.
    fn int_imm(&self, expr: ExprId) -> Option<i32> {
        self.const_int(expr).and_then(|v| i32::try_from(v).ok())
    }

    /// A numeric literal, possibly negated, as a float: tensor literals of these are constants.
    fn const_number(&self, expr: ExprId) -> Option<f64> {
        match &self.body.exprs[expr] {
            Expr::Literal(Literal::Int(value)) => Some(*value as f64),
            Expr::Literal(Literal::Float(bits)) => Some(f64::from_bits(*bits)),
            Expr::Unary { op: HirUnary::Neg, operand } => self.const_number(*operand).map(|x| -x),
            Expr::Unary { op: HirUnary::Plus, operand } => self.const_number(*operand),
            _ => None,
        }
    }

    // ----- operators -----

    fn binary(
        &mut self,
        expr: ExprId,
        op: HirBinary,
        lhs: ExprId,
        rhs: ExprId,
        dest: Dest,
    ) -> Result<Operand> {
        let span = self.span_of(expr);
        let (lhs_ty, rhs_ty, ty) = (self.ty(lhs), self.ty(rhs), self.ty(expr));
        match op {
            HirBinary::Logic(logic) if ty.is_tensor() => {
                // Masks combine element-wise, both operands evaluated: nonzero is true, and the
                // result holds 0 and 1.
                let truth = |this: &mut Self, side: ExprId| -> Result<Operand> {
                    let value = this.expr(side, Dest::Any)?;
                    let zero = this.float_temp(0.0, span);
                    let dst = this.temp();
                    this.emit(Instr::Binary { op: BinaryOp::Ne, dst, a: value, b: zero }, span);
                    Ok(Operand::take(dst))
                };
                let a = truth(self, lhs)?;
                let b = truth(self, rhs)?;
                let op = match logic {
                    LogicOp::And => BinaryOp::Min,
                    LogicOp::Or => BinaryOp::Max,
                };
                let dst = self.dst(dest);
                self.emit(Instr::Binary { op, dst, a, b }, span);
                Ok(Self::result(dest, dst))
            }
            HirBinary::Logic(_) => {
                let dst = match dest {
                    Dest::Slot(slot) => slot,
                    Dest::Any => self.temp(),
                };
                let to_false = self.branch(expr, false)?;
                let yes = self.constant(Value::Bool(true));
                self.emit(Instr::LoadConst { dst, index: yes }, span);
                let to_end = self.emit(Instr::Jump { target: 0 }, span);
                self.bind(to_false);
                let no = self.constant(Value::Bool(false));
                self.emit(Instr::LoadConst { dst, index: no }, span);
                self.bind(Pending(vec![to_end]));
                Ok(Self::result(dest, dst))
            }
            HirBinary::Cmp(cmp) => {
                let cmp = cmp_of(cmp);
                let a = self.expr(lhs, Dest::Any)?;
                let b = self.expr(rhs, Dest::Any)?;
                let dst = self.dst(dest);
                let instr = if int_like(&lhs_ty) && int_like(&rhs_ty) {
                    Instr::IntCmp { op: cmp, dst, a: a.slot(), b: b.slot() }
                } else if lhs_ty.is_numeric() && rhs_ty.is_numeric() {
                    Instr::FloatCmp { op: cmp, dst, a: a.slot(), b: b.slot() }
                } else {
                    Instr::Binary { op: cmp.binary_op(), dst, a, b }
                };
                self.emit(instr, span);
                Ok(Self::result(dest, dst))
            }
            HirBinary::Arith(arith) => {
                let integers = int_like(&lhs_ty) && int_like(&rhs_ty) && ty == Ty::Int;
                // Computed once, in front of a loop, when no iteration can change it.
                if integers
                    && dest == Dest::Any
                    && let Some(slot) = self.hoist_int(expr)?
                {
                    return Ok(Operand::copy(slot));
                }
                // `n + 1`, and `3 * n`: a constant on the left of a commutative operation is an
                // immediate too (the instruction keeps the order for its error message).
                let immediate = match (int_op(arith), self.int_imm(lhs), self.int_imm(rhs)) {
                    (Some(int), _, Some(imm)) => Some((int, lhs, imm, false)),
                    (Some(int), Some(imm), None) if int.commutes() => Some((int, rhs, imm, true)),
                    _ => None,
                };
                if integers && let Some((op, operand, imm, imm_first)) = immediate {
                    let a = self.expr(operand, Dest::Any)?.slot();
                    let dst = self.dst(dest);
                    self.emit(Instr::IntArithImm { op, dst, a, imm, imm_first }, span);
                    return Ok(Self::result(dest, dst));
                }
                let a = self.expr(lhs, Dest::Any)?;
                let b = self.expr(rhs, Dest::Any)?;
                let dst = self.dst(dest);
                let instr = self.arith_instr(arith, &ty, integers, dst, a, b, span)?;
                let float = instr.as_float_arith().is_some();
                self.emit(instr, span);
                Ok(if float { Self::fresh_result(dest, dst) } else { Self::result(dest, dst) })
            }
        }
    }

    /// The instruction computing `a op b` of result type `ty`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn arith_instr(
        &self,
        arith: ArithOp,
        ty: &Ty,
        integers: bool,
        dst: Slot,
        a: Operand,
        b: Operand,
        span: RelSpan,
    ) -> Result<Instr> {
        if arith == ArithOp::MatMul {
            return Ok(Instr::Matmul { dst, a, b });
        }
        if integers {
            let op = int_op(arith).ok_or_else(|| self.internal("this integer operator", span))?;
            return Ok(Instr::IntArith { op, dst, a: a.slot(), b: b.slot() });
        }
        let op = float_op(arith).ok_or_else(|| self.internal("this operator", span))?;
        Ok(match ty {
            Ty::Float => Instr::float_arith(op, dst, a, b),
            _ => Instr::Binary { op, dst, a, b },
        })
    }

    fn unary(
        &mut self,
        expr: ExprId,
        op: HirUnary,
        operand: ExprId,
        dest: Dest,
    ) -> Result<Operand> {
        let span = self.span_of(expr);
        let ty = self.ty(operand);
        match op {
            HirUnary::Neg => {
                if let Some(value) = self.const_number(expr).filter(|_| ty == Ty::Float) {
                    return Ok(self.load_number(Number::Float(value.to_bits()), dest, span));
                }
                if let Some(value) = self.const_int(expr).filter(|_| ty == Ty::Int) {
                    let dst = self.dst(dest);
                    self.emit(Instr::LoadInt { dst, value }, span);
                    return Ok(Self::result(dest, dst));
                }
                let a = self.expr(operand, Dest::Any)?;
                let dst = self.dst(dest);
                let instr = match ty {
                    Ty::Int | Ty::Char => Instr::NegInt { dst, a: a.slot() },
                    _ => Instr::Unary { op: UnaryOp::Neg, dst, a },
                };
                let unary = matches!(instr, Instr::Unary { .. });
                self.emit(instr, span);
                Ok(if unary { Self::fresh_result(dest, dst) } else { Self::result(dest, dst) })
            }
            HirUnary::Plus => {
                let a = self.expr(operand, Dest::Any)?;
                if ty == Ty::Char {
                    let dst = self.dst(dest);
                    self.emit(Instr::Cast { kind: CastKind::Int, dst, a }, span);
                    return Ok(Self::result(dest, dst));
                }
                Ok(self.place_in(a, dest, span))
            }
            HirUnary::Not if ty.is_tensor() => {
                // A mask's complement: 1 where the element is 0, element-wise.
                let a = self.expr(operand, Dest::Any)?;
                let zero = self.float_temp(0.0, span);
                let dst = self.dst(dest);
                self.emit(Instr::Binary { op: BinaryOp::Eq, dst, a, b: zero }, span);
                Ok(Self::result(dest, dst))
            }
            HirUnary::Not => {
                let a = self.expr(operand, Dest::Any)?;
                let dst = self.dst(dest);
                self.emit(Instr::Not { dst, a: a.slot() }, span);
                Ok(Self::result(dest, dst))
            }
            HirUnary::Rejected(_) => Err(self.internal("a rejected operator", span)),
        }
    }

    fn cast(&mut self, expr: ExprId, to: &TypeRef, operand: ExprId, dest: Dest) -> Result<Operand> {
        let span = self.span_of(expr);
        let from = self.ty(operand);
        let kind = match to {
            TypeRef::Int => CastKind::Int,
            TypeRef::Float => CastKind::Float,
            TypeRef::Char => CastKind::Char,
            TypeRef::Bool => CastKind::Bool,
            _ => return Err(self.internal("a cast to this type", span)),
        };
        let identity = matches!(
            (kind, &from),
            (CastKind::Int, Ty::Int)
                | (CastKind::Float, Ty::Float)
                | (CastKind::Char, Ty::Char)
                | (CastKind::Bool, Ty::Bool)
        );
        let a = self.expr(operand, Dest::Any)?;
        if identity {
            return Ok(self.place_in(a, dest, span));
        }
        let dst = self.dst(dest);
        self.emit(Instr::Cast { kind, dst, a }, span);
        Ok(Self::result(dest, dst))
    }

    // ----- conditions -----

    /// Emits code that jumps when the truth of `cond` equals `when` and falls through otherwise;
    /// returns the jumps to patch.
    pub(super) fn branch(&mut self, cond: ExprId, when: bool) -> Result<Pending> {
        stacker::maybe_grow(super::STACK_RED_ZONE, super::STACK_SEGMENT, || {
            self.branch_inner(cond, when)
        })
    }

    fn branch_inner(&mut self, cond: ExprId, when: bool) -> Result<Pending> {
        let span = self.span_of(cond);
        match &self.body.exprs[cond] {
            Expr::Literal(Literal::Bool(value)) => {
                if *value == when {
                    let jump = self.emit(Instr::Jump { target: 0 }, span);
                    return Ok(Pending(vec![jump]));
                }
                return Ok(Pending::default());
            }
            Expr::Unary { op: HirUnary::Not, operand } => return self.branch(*operand, !when),
            Expr::Binary { op: HirBinary::Logic(logic), lhs, rhs } => {
                let (lhs, rhs) = (*lhs, *rhs);
                // `a && b` is true when both are; `a || b` when either is.
                let both = *logic == LogicOp::And;
                return if both == when {
                    let skip = self.branch(lhs, !when)?;
                    let jumps = self.branch(rhs, when)?;
                    self.bind(skip);
                    Ok(jumps)
                } else {
                    let mut jumps = self.branch(lhs, when)?;
                    jumps.0.extend(self.branch(rhs, when)?.0);
                    Ok(jumps)
                };
            }
            Expr::Binary { op: HirBinary::Cmp(cmp), lhs, rhs } => {
                let (lhs, rhs) = (*lhs, *rhs);
                let (lhs_ty, rhs_ty) = (self.ty(lhs), self.ty(rhs));
                let cmp = cmp_of(*cmp);
                if int_like(&lhs_ty) && int_like(&rhs_ty) {
                    let op = if when { cmp } else { cmp.negate() };
                    let a = self.expr(lhs, Dest::Any)?;
                    if let Some(imm) = self.const_int(rhs).and_then(|v| i32::try_from(v).ok()) {
                        let jump = self
                            .emit(Instr::JumpIntCmpImm { op, a: a.slot(), imm, target: 0 }, span);
                        return Ok(Pending(vec![jump]));
                    }
                    let b = self.expr(rhs, Dest::Any)?;
                    let jump = self
                        .emit(Instr::JumpIntCmp { op, a: a.slot(), b: b.slot(), target: 0 }, span);
                    return Ok(Pending(vec![jump]));
                }
                if lhs_ty.is_numeric() && rhs_ty.is_numeric() {
                    let a = self.expr(lhs, Dest::Any)?;
                    let b = self.expr(rhs, Dest::Any)?;
                    let instr = Instr::JumpFloatCmp {
                        op: cmp,
                        negate: !when,
                        a: a.slot(),
                        b: b.slot(),
                        target: 0,
                    };
                    let jump = self.emit(instr, span);
                    return Ok(Pending(vec![jump]));
                }
            }
            _ => {}
        }
        let value = self.expr(cond, Dest::Any)?;
        let jump = self.emit(Instr::JumpIf { cond: value.slot(), when, target: 0 }, span);
        Ok(Pending(vec![jump]))
    }

    // ----- indexing -----

    /// The root of a chain of `[...]` and the brackets applied to it, outermost last. A bracket
    /// holding index tensors is alone in its chain: it is a gather, which does not compose with
    /// the brackets of basic indexing (the checker allows an assignment through it only alone).
    fn index_chain(&self, expr: ExprId) -> Result<(ExprId, Vec<Vec<hir::IndexEntry>>)> {
        let mut brackets = Vec::new();
        let mut current = expr;
        while let Expr::Index { base, entries } = &self.body.exprs[current] {
            if self.is_advanced(entries) {
                if brackets.is_empty() {
                    brackets.push(entries.clone());
                    current = *base;
                }
                break;
            }
            brackets.push(entries.clone());
            current = *base;
        }
        brackets.reverse();
        Ok((current, brackets))
    }

    fn index_entries(&mut self, brackets: &[Vec<hir::IndexEntry>]) -> Result<IndexChain> {
        let mut chain = Vec::with_capacity(brackets.len());
        for bracket in brackets {
            let mut out = Vec::with_capacity(bracket.len());
            for entry in bracket {
                out.push(match *entry {
                    hir::IndexEntry::At(index) if self.infer.is_mask_entry(index) => {
                        IndexEntry::Mask(self.int_operand(index)?)
                    }
                    hir::IndexEntry::At(index) if self.ty(index).is_tensor() => {
                        IndexEntry::Indices(self.int_operand(index)?)
                    }
                    hir::IndexEntry::At(index) => IndexEntry::At(self.int_operand(index)?),
                    hir::IndexEntry::Slice { start, end, step } => IndexEntry::Slice {
                        start: start.map(|e| self.int_operand(e)).transpose()?,
                        end: end.map(|e| self.int_operand(e)).transpose()?,
                        step: step.map(|e| self.int_operand(e)).transpose()?,
                    },
                    hir::IndexEntry::Ellipsis => IndexEntry::Ellipsis,
                    hir::IndexEntry::NewAxis => IndexEntry::NewAxis,
                });
            }
            chain.push(out.into_boxed_slice());
        }
        Ok(chain.into_boxed_slice())
    }

    /// `dst = base[chain]` for the chain at `index`: [`Instr::GetElem`] when `element` (the
    /// checker typed the result a `float`) and the chain holds integers only, else
    /// [`Instr::GetIndex`].
    fn read_index(&self, dst: Slot, base: Operand, index: u32, element: bool) -> Instr {
        match self.element_slots(index).filter(|_| element) {
            Some((i, j)) => Instr::GetElem { dst, base, i, j, index },
            None => Instr::GetIndex { dst, base, index },
        }
    }

    /// `target[chain] op= value` for the chain at `index`, chosen as
    /// [`UnitLowerer::read_index`] chooses: [`Instr::SetElem`] or [`Instr::SetIndex`].
    fn write_index(
        &self,
        target: Slot,
        index: u32,
        value: Operand,
        op: Option<BinaryOp>,
        element: bool,
    ) -> Instr {
        match self.element_slots(index).filter(|_| element) {
            Some((i, j)) => Instr::SetElem { target, value, op, i, j, index },
            None => Instr::SetIndex { target, index, value, op },
        }
    }

    /// The slots `i` and `j` of an element access ([`Instr::GetElem`]) by the chain at `index`,
    /// when all its entries are integers: `(i, NO_SLOT)` for one, `(NO_SLOT, NO_SLOT)` for
    /// three or more, which the interpreter reads from the chain.
    fn element_slots(&self, index: u32) -> Option<(Slot, Slot)> {
        let chain = self.indices.get(index as usize)?;
        let mut slots = Vec::new();
        for entry in chain.iter().flat_map(|bracket| bracket.iter()) {
            match entry {
                IndexEntry::At(operand) => slots.push(operand.slot()),
                _ => return None,
            }
        }
        match slots[..] {
            [] => None,
            [i] => Some((i, NO_SLOT)),
            [i, j] => Some((i, j)),
            _ => Some((NO_SLOT, NO_SLOT)),
        }
    }

    /// An operand holding the float `value`.
    fn float_temp(&mut self, value: f64, span: RelSpan) -> Operand {
        self.load_number(Number::Float(value.to_bits()), Dest::Any, span)
    }

    /// Whether a bracket holds an index tensor (NumPy's advanced indexing).
    fn is_advanced(&self, entries: &[hir::IndexEntry]) -> bool {
        entries.iter().any(|entry| match *entry {
            hir::IndexEntry::At(index) => self.ty(index).is_tensor(),
            _ => false,
        })
    }

    /// An index (an integer, or a tensor of indices) or a bound, read by copy.
    fn int_operand(&mut self, expr: ExprId) -> Result<Operand> {
        let operand = self.expr(expr, Dest::Any)?;
        Ok(Operand::copy(operand.slot()))
    }

    // ----- assignment -----

    /// `w -= c * g` or `w += c * g` (either factor order) on a tensor variable `w` with a `float`
    /// `c` and a tensor `g`, as one [`BuiltinCall::ScaledUpdate`] that never materialises the
    /// product (the update of gradient descent); `None`, with nothing emitted, for any other
    /// compound assignment. The operands are evaluated, and a `var` target refreshed, in the
    /// order of the two separate operations.
    fn scaled_update(
        &mut self,
        local: hir::LocalId,
        slot: Slot,
        target_ty: &Ty,
        arith: ArithOp,
        value: ExprId,
        span: RelSpan,
    ) -> Result<Option<Ty>> {
        let subtract = match arith {
            ArithOp::Sub => true,
            ArithOp::Add => false,
            _ => return Ok(None),
        };
        let Expr::Binary { op: HirBinary::Arith(ArithOp::Mul), lhs, rhs } = self.body.exprs[value]
        else {
            return Ok(None);
        };
        let scale_first = match (self.ty(lhs), self.ty(rhs)) {
            (Ty::Float, Ty::Tensor(_)) => true,
            (Ty::Tensor(_), Ty::Float) => false,
            _ => return Ok(None),
        };
        if !target_ty.is_tensor() {
            return Ok(None);
        }
        let first = self.expr(lhs, Dest::Any)?;
        let second = self.expr(rhs, Dest::Any)?;
        let (scale, x) = if scale_first { (first, second) } else { (second, first) };
        if self.is_var(local) {
            self.emit(Instr::RefreshVar { slot }, span);
        }
        // As for the separate operations, the old tensor is taken unless `x` reads the same slot.
        let target = if x.slot() != slot { Operand::take(slot) } else { Operand::copy(slot) };
        let call = BuiltinCall::ScaledUpdate { target, subtract, scale, x };
        self.emit(Instr::Builtin { dst: slot, call: Box::new(call) }, span);
        Ok(Some(compound_result(target_ty, &self.ty(value), arith)))
    }

    /// `target = value` or `target op= value`; returns the new value of the target.
    pub(super) fn assign(
        &mut self,
        expr: ExprId,
        op: Option<ArithOp>,
        target: ExprId,
        value: ExprId,
        want: bool,
    ) -> Result<Operand> {
        let span = self.span_of(expr);
        match &self.body.exprs[target] {
            Expr::Name { .. } | Expr::Field { .. } => {
                // A variable, or a field of one (`net.l1.w`), written in place.
                let is_field = matches!(self.body.exprs[target], Expr::Field { .. });
                let Some((local, slot)) = self.field_place(target)? else {
                    return Err(self.internal("an assignment to a non-local", span));
                };
                let target_ty = self.ty(target);
                if let Ty::Record(_) = target_ty {
                    return self.record_assign(expr, op, target, value, slot);
                }
                let result_ty = match op {
                    None => {
                        let start = self.code.len();
                        let operand =
                            self.value_as(value, &target_ty, Dest::Slot(slot), Some(span))?;
                        if !is_field {
                            self.move_rebound_argument(start, slot);
                        }
                        if operand.slot() != slot {
                            self.emit(Instr::Copy { dst: slot, src: operand }, span);
                        }
                        self.ty(value)
                    }
                    Some(arith) => 'compound: {
                        let fused =
                            self.scaled_update(local, slot, &target_ty, arith, value, span)?;
                        if let Some(result_ty) = fused {
                            break 'compound result_ty;
                        }
                        let value_ty = self.ty(value);
                        let b = self.expr(value, Dest::Any)?;
                        if self.is_var(local) {
                            self.emit(Instr::RefreshVar { slot }, span);
                        }
                        let integers =
                            int_like(&target_ty) && int_like(&value_ty) && target_ty == Ty::Int;
                        let result_ty = compound_result(&target_ty, &value_ty, arith);
                        // The old value is overwritten, so a tensor is taken to be updated in
                        // place, unless the right side reads the same slot.
                        let a = if target_ty.is_tensor() && b.slot() != slot {
                            Operand::take(slot)
                        } else {
                            Operand::copy(slot)
                        };
                        if integers && let Some(int) = int_op(arith) {
                            self.emit(
                                Instr::IntArith { op: int, dst: slot, a: a.slot(), b: b.slot() },
                                span,
                            );
                        } else {
                            let instr =
                                self.arith_instr(arith, &result_ty, false, slot, a, b, span)?;
                            self.emit(instr, span);
                        }
                        if result_ty.is_tensor() && !target_ty.is_tensor() {
                            return Err(self.internal("a tensor stored in a scalar", span));
                        }
                        // A scalar result stored in a tensor variable keeps the tensor's shape.
                        if target_ty.is_tensor() && !result_ty.is_tensor() {
                            let shape = self.target_shape(&target_ty, true)?;
                            let call = BuiltinCall::ToTensor { x: Operand::take(slot), shape };
                            self.emit(Instr::Builtin { dst: slot, call: Box::new(call) }, span);
                        }
                        result_ty
                    }
                };
                let variable = (!is_field).then_some(local);
                self.check_assigned(target, variable, slot, (&target_ty, &result_ty), span)?;
                Ok(Operand::copy(slot))
            }
            Expr::Index { .. } => {
                let element_ty = self.ty(target);
                let operand = match (&element_ty, op) {
                    (Ty::Float, None) => self.value_as(value, &Ty::Float, Dest::Any, None)?,
                    _ => self.expr(value, Dest::Any)?,
                };
                let (root, entries) = self.index_chain(target)?;
                let slot = self.root_slot(root, span)?;
                let entries = self.index_entries(&entries)?;
                let index = self.index_list(entries);
                if op == Some(ArithOp::MatMul) {
                    // `a[i] @= w` reads the region, multiplies and writes it back.
                    let region = self.temp();
                    let read = Instr::GetIndex { dst: region, base: Operand::copy(slot), index };
                    self.emit(read, span);
                    let product = self.temp();
                    let instr =
                        Instr::Matmul { dst: product, a: Operand::take(region), b: operand };
                    self.emit(instr, span);
                    let write = Instr::SetIndex {
                        target: slot,
                        index,
                        value: Operand::take(product),
                        op: None,
                    };
                    self.emit(write, span);
                    return Ok(Operand::copy(slot));
                }
                let op = match op {
                    None => None,
                    Some(arith) => Some(
                        float_op(arith)
                            .ok_or_else(|| self.internal("this indexed update", span))?,
                    ),
                };
                let value = if want { Operand::copy(operand.slot()) } else { operand };
                let element = element_ty == Ty::Float;
                self.emit(self.write_index(slot, index, value, op, element), span);
                if !want {
                    return Ok(Operand::copy(slot));
                }
                let dst = self.temp();
                self.emit(self.read_index(dst, Operand::copy(slot), index, element), span);
                Ok(Operand::take(dst))
            }
            _ => Err(self.internal("an assignment to this target", span)),
        }
    }

    /// `x = f(..., x, ...)`: the call's result overwrites the variable in `slot`, so its read as
    /// an argument is its last read, and the argument moves the value into the call instead of
    /// sharing it. The callee then holds the only reference, and its writes into the parameter go
    /// in place (copy on write copies only a value that something else can still observe). The
    /// value emitted from `start` on must end with the call writing `slot` (directly, or through
    /// a temporary moved into it), and the variable must be read once among the arguments. A
    /// record variable `r = f(..., r, ...)` moves each of its leaves alike (`record_assign`).
    fn move_rebound_argument(&mut self, start: usize, slot: Slot) {
        let args = match self.code.get(start..) {
            Some([.., Instr::Call { dst, args, .. }]) if *dst == slot => *args,
            Some([.., Instr::Call { dst, args, .. }, Instr::Copy { dst: to, src }])
                if *to == slot && src.is_take() && src.slot() == *dst =>
            {
                *args
            }
            _ => return,
        };
        self.move_argument(args, slot);
    }

    /// Makes the argument among `args` that reads `slot` take it, when it is the only one that
    /// reads it: the caller has seen to it that the call's result overwrites `slot`.
    fn move_argument(&mut self, args: ArgRange, slot: Slot) {
        let Some(operands) =
            self.args.get_mut(args.start as usize..(args.start + args.len) as usize)
        else {
            return;
        };
        let mut reads = operands.iter_mut().filter(|operand| operand.slot() == slot);
        if let (Some(read), None) = (reads.next(), reads.next()) {
            *read = Operand::take(slot);
        }
    }

    /// The slot of the variable (or field of one) an indexed write changes, refreshed when it
    /// is `var`.
    fn root_slot(&mut self, root: ExprId, span: RelSpan) -> Result<Slot> {
        let Some((local, slot)) = self.field_place(root)? else {
            return Err(self.internal("an indexed write to a non-local", span));
        };
        if self.is_var(local) {
            self.emit(Instr::RefreshVar { slot }, span);
        }
        Ok(slot)
    }

    /// Checks a value of type `value` just stored in `target` (the tensor variable `variable`,
    /// or a field of a record) against the shape it is declared with, unless the checker proved
    /// it: a variable's as written (or inferred from its initializer), a field's as the
    /// record's sizes give it.
    fn check_assigned(
        &mut self,
        target: ExprId,
        variable: Option<hir::LocalId>,
        slot: Slot,
        (declared, value): (&Ty, &Ty),
        span: RelSpan,
    ) -> Result<()> {
        if !declared.is_tensor() || shape_proven(declared, value) {
            return Ok(());
        }
        let (dims, text, name) = match variable {
            Some(local) => {
                let data = &self.body.locals[local];
                let (text, name) = (declared_text(&data.ty, declared), data.name.to_string());
                (self.declared_dims(local, declared)?, text, name)
            }
            None => {
                let name = self.source_text(self.span_of(target));
                (self.ty_dims(declared)?, declared.to_string(), name)
            }
        };
        let Some((dims, vars)) = dims else { return Ok(()) };
        let check = self.add_check(ShapeCheck {
            context: CheckContext::Assign { name },
            declared: text,
            vars,
            dims,
            ranked: true,
        });
        self.emit(Instr::CheckShape { slot, check }, span);
        Ok(())
    }

    /// `a = b` of records, into the slots of the variable or field: every leaf, the shapes
    /// checked as a declaration checks them.
    fn record_assign(
        &mut self,
        expr: ExprId,
        op: Option<ArithOp>,
        target: ExprId,
        value: ExprId,
        slot: Slot,
    ) -> Result<Operand> {
        let span = self.span_of(expr);
        let target_ty = self.ty(target);
        let value_ty = match op {
            None => {
                // Built in temporaries first: the value may read the record it replaces.
                let start = self.code.len();
                let operand = self.value_as(value, &target_ty, Dest::Any, Some(span))?;
                let is_field = matches!(self.body.exprs[target], Expr::Field { .. });
                if !is_field
                    && operand.is_take()
                    && let Some([.., Instr::Call { dst, args, .. }]) = self.code.get(start..)
                    && *dst == operand.slot()
                {
                    // `r = f(..., r, ...)`: the call's result replaces every leaf of `r`.
                    let args = *args;
                    for leaf in 0..self.width(&target_ty) {
                        self.move_argument(args, slot + leaf);
                    }
                }
                self.place_value_in(operand, &target_ty, Dest::Slot(slot), span);
                self.ty(value)
            }
            Some(arith) => {
                self.record_compound(expr, arith, target, value, slot)?;
                target_ty.clone()
            }
        };
        let name = self.source_text(self.span_of(target));
        let context = CheckContext::Assign { name };
        self.check_record(slot, &target_ty, Some(&value_ty), &|_| false, context, &|_| span)?;
        Ok(Operand::copy(slot))
    }

    /// The dimensions a tensor variable must keep: as declared, or as inferred from its
    /// initializer when it was declared without dimensions.
    fn declared_dims(
        &self,
        local: hir::LocalId,
        declared: &Ty,
    ) -> Result<Option<(Vec<DimSpec>, crate::code::SizeNames)>> {
        match &self.body.locals[local].ty {
            TypeRef::Tensor(dims) if !dims.is_empty() => {
                Ok(Some((self.decl_dims(local)?, self.size_vars(dims)?)))
            }
            _ => self.ty_dims(declared),
        }
    }

    // ----- ++ and -- -----

    fn inc_dec(
        &mut self,
        expr: ExprId,
        target: ExprId,
        increment: bool,
        prefix: bool,
        dest: Dest,
    ) -> Result<Operand> {
        let span = self.span_of(expr);
        let ty = self.ty(target);
        let step = if increment { 1 } else { -1 };
        let want_old = !prefix;
        match &self.body.exprs[target] {
            Expr::Name { .. } => {
                let Some(Resolution::Local(local)) = self.infer.resolution(target) else {
                    return Err(self.internal("`++` of a non-local", span));
                };
                let Place::Slot(slot) = self.place_of(local)? else {
                    return Err(self.internal("`++` of a constant", span));
                };
                if self.is_var(local) {
                    self.emit(Instr::RefreshVar { slot }, span);
                }
                let old = if want_old {
                    let old = self.temp();
                    self.emit(Instr::Copy { dst: old, src: Operand::copy(slot) }, span);
                    Some(old)
                } else {
                    None
                };
                match ty {
                    Ty::Int => {
                        self.emit(
                            Instr::IntArithImm {
                                op: IntOp::Add,
                                dst: slot,
                                a: slot,
                                imm: step,
                                imm_first: false,
                            },
                            span,
                        );
                    }
                    Ty::Char => {
                        let wide = self.temp();
                        self.emit(
                            Instr::IntArithImm {
                                op: IntOp::Add,
                                dst: wide,
                                a: slot,
                                imm: step,
                                imm_first: false,
                            },
                            span,
                        );
                        self.emit(
                            Instr::Cast { kind: CastKind::Char, dst: slot, a: Operand::take(wide) },
                            span,
                        );
                    }
                    Ty::Float => {
                        let one = self.temp();
                        self.emit(Instr::LoadFloat { dst: one, value: f64::from(step) }, span);
                        let instr = Instr::FloatAdd {
                            dst: slot,
                            a: Operand::copy(slot),
                            b: Operand::take(one),
                        };
                        self.emit(instr, span);
                    }
                    _ => return Err(self.internal("`++` of this type", span)),
                }
                Ok(match old {
                    Some(old) => self.place_in(Operand::take(old), dest, span),
                    None => {
                        let value = self.stable(Operand::copy(slot), span);
                        self.place_in(value, dest, span)
                    }
                })
            }
            Expr::Index { .. } => {
                let (root, entries) = self.index_chain(target)?;
                let slot = self.root_slot(root, span)?;
                let entries = self.index_entries(&entries)?;
                let index = self.index_list(entries);
                let element = self.ty(target) == Ty::Float;
                let old = if want_old {
                    let old = self.temp();
                    self.emit(self.read_index(old, Operand::copy(slot), index, element), span);
                    Some(old)
                } else {
                    None
                };
                let one = self.temp();
                self.emit(Instr::LoadFloat { dst: one, value: f64::from(step) }, span);
                let one = Operand::take(one);
                self.emit(self.write_index(slot, index, one, Some(BinaryOp::Add), element), span);
                match old {
                    Some(old) => Ok(self.place_in(Operand::take(old), dest, span)),
                    None => {
                        let dst = self.dst(dest);
                        self.emit(self.read_index(dst, Operand::copy(slot), index, element), span);
                        Ok(Self::result(dest, dst))
                    }
                }
            }
            _ => Err(self.internal("`++` of this expression", span)),
        }
    }

    // ----- calls -----

    /// A call; `dest` is `None` when the result is not used.
    pub(super) fn call(&mut self, expr: ExprId, dest: Option<Dest>) -> Result<Operand> {
        let span = self.span_of(expr);
        let Expr::Call { callee, args } = &self.body.exprs[expr] else {
            return Err(self.internal("a call", span));
        };
        let (callee, args) = (*callee, args.clone());
        match &self.body.exprs[callee] {
            Expr::Transform { .. } => {
                let callable = self.callable(callee)?;
                let (params, results) = match self.ty(callee) {
                    // A tuple's or a record's leaves, each in a slot.
                    Ty::Fn(fn_ty) => (fn_ty.params.clone(), self.width(&fn_ty.ret) as usize),
                    _ => return Err(self.internal("a derivative without a type", span)),
                };
                let mut operands = self.arguments(&args, &params)?.into_vec();
                if let Some((steps, at)) = self.segment_steps(callee) {
                    // The step count of `checkpoint(segment, n)` is passed where `segment`
                    // takes it, after the arguments of `checkpoint(segment, n)` itself (so
                    // before a tangent or cotangent that a transform around it adds).
                    let steps = self.value_as(steps, &Ty::Int, Dest::Any, None)?;
                    operands.insert(at.min(operands.len()), steps);
                }
                if results > 1 {
                    // A tuple, in consecutive temporaries as a function of several results
                    // leaves it (see `tuple_call`).
                    let dst = self.tuple_temps(results, dest);
                    let args = self.arg_range(&operands);
                    self.emit(Instr::CallTransform { callable, dst, args }, span);
                    return Ok(Operand::take(dst));
                }
                let dst = self.dst(dest.unwrap_or(Dest::Any));
                let args = self.arg_range(&operands);
                self.emit(Instr::CallTransform { callable, dst, args }, span);
                Ok(Self::result(dest.unwrap_or(Dest::Any), dst))
            }
            Expr::Name { .. } => match self.infer.resolution(callee) {
                Some(Resolution::Function(def))
                    if hir::infer(self.db(), def).derivative.is_some() =>
                {
                    let callable = self.function_callable(def)?;
                    let callable = self.builder.intern_callable(callable);
                    let signature = hir::signature(self.db(), def);
                    let params: Vec<Ty> =
                        signature.params.iter().map(|p| hir::ty_of_ref(&p.ty)).collect();
                    let operands = self.arguments(&args, &params)?;
                    let dst = self.dst(dest.unwrap_or(Dest::Any));
                    let args = self.arg_range(&operands);
                    self.emit(Instr::CallTransform { callable, dst, args }, span);
                    Ok(Self::result(dest.unwrap_or(Dest::Any), dst))
                }
                Some(Resolution::Function(def)) => {
                    let unit = self.unit_of(def)?;
                    let signature = hir::signature(self.db(), def);
                    let params: Vec<Ty> =
                        signature.params.iter().map(|p| hir::ty_of_ref(&p.ty)).collect();
                    let void = signature.ret == TypeRef::Void;
                    let results = self.width(&hir::ty_of_ref(&signature.ret)) as usize;
                    if results > 1 {
                        return self.tuple_call(unit, &args, &params, results, dest, span);
                    }
                    let operands = self.arguments(&args, &params)?;
                    let (dst, result) = match (dest, void) {
                        (None, _) | (_, true) => (NO_SLOT, Operand::copy(NO_SLOT)),
                        (Some(dest), false) => {
                            let dst = self.dst(dest);
                            (dst, Self::result(dest, dst))
                        }
                    };
                    let args = self.arg_range(&operands);
                    self.emit(Instr::Call { unit, dst, args }, span);
                    Ok(result)
                }
                Some(Resolution::Builtin(builtin)) => {
                    self.builtin(expr, builtin, &args, dest.unwrap_or(Dest::Any))
                }
                _ => Err(self.internal("a call of this name", span)),
            },
            _ => Err(self.internal("a call of this expression", span)),
        }
    }

    /// A call of a function of several results: its elements land in `results` consecutive
    /// temporaries (see [`crate::code::Unit::results`]), and the operand takes the first.
    fn tuple_call(
        &mut self,
        unit: u32,
        args: &[ExprId],
        params: &[Ty],
        results: usize,
        dest: Option<Dest>,
        span: RelSpan,
    ) -> Result<Operand> {
        let operands = self.arguments(args, params)?;
        let dst = self.tuple_temps(results, dest);
        let args = self.arg_range(&operands);
        self.emit(Instr::Call { unit, dst, args }, span);
        Ok(Operand::take(dst))
    }

    /// The first of `results` consecutive temporaries for a tuple, or `NO_SLOT` when the tuple
    /// is not used.
    fn tuple_temps(&mut self, results: usize, dest: Option<Dest>) -> Slot {
        match dest {
            None => NO_SLOT,
            Some(_) => self.temps(results as u32),
        }
    }

    /// Evaluates arguments left to right, converting each to its parameter's type.
    pub(super) fn arguments(&mut self, args: &[ExprId], params: &[Ty]) -> Result<Box<[Operand]>> {
        let mut operands = Vec::with_capacity(args.len());
        for (i, &arg) in args.iter().enumerate() {
            let operand = match params.get(i) {
                Some(param) => self.value_as(arg, param, Dest::Any, None)?,
                None => self.expr(arg, Dest::Any)?,
            };
            // A record argument passes its leaves, one per slot of the parameter.
            let ty = params.get(i).cloned().unwrap_or_else(|| self.ty(arg));
            operands.extend(self.leaf_operands(operand, &ty));
        }
        Ok(operands.into_boxed_slice())
    }

    /// In a chain of transforms around `checkpoint(segment, n)`, `n` and the position of the
    /// step count among the call's arguments: `segment`'s last parameter.
    fn segment_steps(&self, mut callee: ExprId) -> Option<(ExprId, usize)> {
        loop {
            match self.body.exprs[callee] {
                Expr::Transform { op: TransformOp::Checkpoint, func, wrt: Some(steps) } => {
                    let Ty::Fn(fn_ty) = self.ty(func) else { return None };
                    return Some((steps, fn_ty.params.len().saturating_sub(1)));
                }
                Expr::Transform { func, .. } => callee = func,
                _ => return None,
            }
        }
    }

    /// A function as a callable: its unit, with its derivative rule's when it has one.
    pub(super) fn function_callable(&self, def: hir::DefId) -> Result<Callable> {
        let function = self.unit_of(def)?;
        Ok(match hir::infer(self.db(), def).derivative {
            Some(rule) => Callable::Custom { function, rule: self.unit_of(rule)? },
            None => Callable::Unit(function),
        })
    }

    /// The callable a callee names: a function, or a transform of one.
    fn callable(&mut self, expr: ExprId) -> Result<u32> {
        let span = self.span_of(expr);
        let callable = match &self.body.exprs[expr] {
            Expr::Name { .. } => match self.infer.resolution(expr) {
                Some(Resolution::Function(def)) => self.function_callable(def)?,
                _ => return Err(self.internal("a derivative of a non-function", span)),
            },
            Expr::Transform { op: TransformOp::Checkpoint, func, wrt: Some(_) } => {
                Callable::Segments { inner: self.callable(*func)? }
            }
            Expr::Transform { op, func, .. } => {
                let (op, func) = (*op, *func);
                let inner = self.callable(func)?;
                let wrt: Box<[usize]> = self.infer.transform_params(expr).into();
                if wrt.is_empty() && op != TransformOp::Checkpoint {
                    return Err(self.internal("a derivative without its parameters", span));
                }
                // The arguments are the parameters' leaves: a record passes several, and the
                // transform differentiates in each of them.
                let params = match self.ty(func) {
                    Ty::Fn(fn_ty) => fn_ty.params.clone(),
                    _ => return Err(self.internal("a derivative of no function type", span)),
                };
                let widths: Vec<usize> = params.iter().map(|p| self.width(p) as usize).collect();
                let start = |k: usize| widths.iter().take(k).sum::<usize>();
                let wrt = wrt
                    .iter()
                    .flat_map(|&k| {
                        let first = start(k);
                        first..first + widths.get(k).copied().unwrap_or(1)
                    })
                    .collect();
                match op {
                    TransformOp::Vmap => {
                        let results = match self.ty(expr) {
                            Ty::Fn(fn_ty) => self.width(&fn_ty.ret),
                            _ => return Err(self.internal("a vmap of no function type", span)),
                        };
                        Callable::Map { batched: wrt, inner, results }
                    }
                    _ => Callable::Transform { op, wrt, inner },
                }
            }
            _ => return Err(self.internal("this callee", span)),
        };
        Ok(self.builder.intern_callable(callable))
    }

    // ----- tensor literals -----

    fn tensor_literal(&mut self, expr: ExprId, dest: Dest) -> Result<Operand> {
        let span = self.span_of(expr);
        match self.literal_shape(expr) {
            Some(shape) => {
                let mut leaves = Vec::new();
                self.literal_leaves(expr, &mut leaves);
                let constants: Option<Vec<f64>> =
                    leaves.iter().map(|&leaf| self.const_number(leaf)).collect();
                let dst = self.dst(dest);
                match constants {
                    Some(values) => {
                        let tensor = Tensor::from_vec(&shape, values).map_err(|error| {
                            self.internal(&format!("a literal ({error})"), span)
                        })?;
                        let index = self.constant(Value::tensor(tensor));
                        self.emit(Instr::LoadConst { dst, index }, span);
                    }
                    None => {
                        let mut items = Vec::with_capacity(leaves.len());
                        for leaf in leaves {
                            items.push(self.expr(leaf, Dest::Any)?);
                        }
                        let call = BuiltinCall::FromElements {
                            shape: shape.into_boxed_slice(),
                            items: items.into_boxed_slice(),
                        };
                        self.emit(Instr::Builtin { dst, call: Box::new(call) }, span);
                    }
                }
                Ok(Self::result(dest, dst))
            }
            None => {
                let Expr::TensorLit(elements) = &self.body.exprs[expr] else {
                    return Err(self.internal("a tensor literal", span));
                };
                let elements = elements.clone();
                let mut rows = Vec::with_capacity(elements.len());
                for element in elements {
                    rows.push(self.expr(element, Dest::Any)?);
                }
                let dst = self.dst(dest);
                let call = BuiltinCall::StackRows(rows.into_boxed_slice());
                self.emit(Instr::Builtin { dst, call: Box::new(call) }, span);
                Ok(Self::result(dest, dst))
            }
        }
    }

    /// The shape of a literal nested only of literals with scalar leaves.
    fn literal_shape(&self, expr: ExprId) -> Option<Vec<usize>> {
        let Expr::TensorLit(elements) = &self.body.exprs[expr] else { return None };
        if elements.iter().all(|&e| matches!(self.ty(e), Ty::Int | Ty::Float)) {
            return Some(vec![elements.len()]);
        }
        let mut inner: Option<Vec<usize>> = None;
        for &element in elements {
            let shape = self.literal_shape(element)?;
            match &inner {
                None => inner = Some(shape),
                Some(first) if *first == shape => {}
                Some(_) => return None,
            }
        }
        let mut shape = vec![elements.len()];
        shape.extend(inner?);
        Some(shape)
    }

    fn literal_leaves(&self, expr: ExprId, out: &mut Vec<ExprId>) {
        match &self.body.exprs[expr] {
            Expr::TensorLit(elements) => {
                for &element in elements {
                    self.literal_leaves(element, out);
                }
            }
            _ => out.push(expr),
        }
    }
}

/// The type of `target op= value`.
fn compound_result(target: &Ty, value: &Ty, op: ArithOp) -> Ty {
    match (target, value) {
        _ if op == ArithOp::MatMul => target.clone(),
        (Ty::Tensor(_), _) => target.clone(),
        (_, Ty::Tensor(shape)) => Ty::Tensor(shape.clone()),
        (Ty::Float, _) | (_, Ty::Float) => Ty::Float,
        _ => Ty::Int,
    }
}

/// How a declared type is written in messages.
fn declared_text(written: &TypeRef, declared: &Ty) -> String {
    match written {
        TypeRef::Tensor(dims) if !dims.is_empty() => hir::ty_of_ref(written).to_string(),
        _ => declared.to_string(),
    }
}
