//! The disassembler: a [`Program`] as text, one unit after another, one instruction a line, as
//! `nabla run --emit bytecode` prints it and the lowering's snapshot tests compare it.
//!
//! Slots are written `%3` (`take %3` when the instruction moves the value out, `fresh %3` when it
//! also may fuse the record that made it), jump targets by instruction number, built-ins by name
//! with the slots they read, and the instructions by what they do rather than by their Rust names:
//!
//! ```text
//! unit 1 `fib`: 1 parameter, 4 slots
//!      0  if int %0 < 2 return %0
//!      1  %1 = call fib(int %0 - 1)
//!      2  %2 = call fib(int %0 - 2)
//!      3  %3 = int %1 + %2
//!      4  return take %3
//! ```

use std::fmt::{self, Write};

use super::{
    BuiltinCall, Callable, CastKind, Cmp, IndexEntry, Instr, IntOp, NO_SLOT, Operand, Program,
    Slot, Unit, ZeroKind,
};
use tensor::{BinaryOp, UnaryOp};

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, unit) in self.units.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            let role = if index as u32 == self.main {
                " (main)"
            } else if index as u32 == self.main_constants {
                " (constants of the main file)"
            } else {
                ""
            };
            let plural = |n: u32| if n == 1 { "" } else { "s" };
            writeln!(
                f,
                "unit {index} `{}`{role}: {} parameter{}, {} slot{}",
                unit.name,
                unit.n_params,
                plural(unit.n_params),
                unit.n_slots,
                plural(unit.n_slots),
            )?;
            for pc in 0..unit.code.len() {
                writeln!(f, "{pc:>6}  {}", Disassembled { program: self, unit, pc })?;
            }
        }
        Ok(())
    }
}

/// One instruction of a unit, for display.
struct Disassembled<'a> {
    program: &'a Program,
    unit: &'a Unit,
    pc: usize,
}

fn slot(slot: Slot) -> String {
    format!("%{}", slot.index())
}

fn operand(operand: Operand) -> String {
    format!("{operand:?}")
}

fn int_op(op: IntOp) -> &'static str {
    match op {
        IntOp::Add => "+",
        IntOp::Sub => "-",
        IntOp::Mul => "*",
        IntOp::Div => "/",
        IntOp::Rem => "%",
        IntOp::Shl => "<<",
        IntOp::Shr => ">>",
        IntOp::And => "&",
        IntOp::Xor => "^",
        IntOp::Or => "|",
    }
}

fn cmp(op: Cmp) -> &'static str {
    match op {
        Cmp::Lt => "<",
        Cmp::Le => "<=",
        Cmp::Gt => ">",
        Cmp::Ge => ">=",
        Cmp::Eq => "==",
        Cmp::Ne => "!=",
    }
}

/// `a op b` for the operators written between their operands, `op(a, b)` for the others.
fn binary(op: BinaryOp, a: &str, b: &str) -> String {
    match op {
        BinaryOp::Max => format!("max({a}, {b})"),
        BinaryOp::Min => format!("min({a}, {b})"),
        BinaryOp::Pow => format!("pow({a}, {b})"),
        _ => format!("{a} {} {b}", op.symbol()),
    }
}

fn unary(op: UnaryOp, a: &str) -> String {
    match op {
        UnaryOp::Neg => format!("-{a}"),
        _ => format!("{}({a})", op.name()),
    }
}

/// A float written so that it reads back as a float: `1.0`, `0.9`, `1e-7`.
fn number(value: f64) -> String {
    format!("{value:?}")
}

impl Disassembled<'_> {
    fn callee(&self, callable: u32) -> String {
        match self.program.callables.get(callable as usize) {
            Some(Callable::Unit(unit)) => self.unit_name(*unit),
            Some(Callable::Custom { function, .. }) => self.unit_name(*function),
            Some(Callable::Transform { op, wrt, inner }) => {
                let inner = self.callee(*inner);
                match &wrt[..] {
                    [] | [0] => format!("{}({inner})", op.name()),
                    [k] => format!("{}({inner}, {k})", op.name()),
                    wrt => {
                        let wrt: Vec<String> = wrt.iter().map(usize::to_string).collect();
                        format!("{}({inner}, [{}])", op.name(), wrt.join(", "))
                    }
                }
            }
            Some(Callable::Segments { inner }) => format!("checkpoint({})", self.callee(*inner)),
            Some(Callable::Map { batched, inner, .. }) => {
                let inner = self.callee(*inner);
                match &batched[..] {
                    [0] => format!("vmap({inner})"),
                    [k] => format!("vmap({inner}, {k})"),
                    batched => {
                        let batched: Vec<String> = batched.iter().map(usize::to_string).collect();
                        format!("vmap({inner}, [{}])", batched.join(", "))
                    }
                }
            }
            None => format!("<callable {callable}>"),
        }
    }

    fn unit_name(&self, unit: u32) -> String {
        self.program.units.get(unit as usize).map_or(format!("<unit {unit}>"), |u| u.name.clone())
    }

    fn global(&self, global: u32) -> String {
        match self.program.global_names.get(global as usize) {
            Some(name) => format!("global {global} `{name}`"),
            None => format!("global {global}"),
        }
    }

    /// `base[i, j][k:]`: the brackets of the index chain `index`.
    fn region(&self, base: &str, index: u32) -> String {
        let chain = self.unit.indices.get(index as usize).map_or(&[][..], |chain| &chain[..]);
        let mut text = base.to_owned();
        for bracket in chain {
            let entries: Vec<String> = bracket
                .iter()
                .map(|entry| match *entry {
                    IndexEntry::At(at) => operand(at),
                    IndexEntry::Indices(at) => format!("indices {}", operand(at)),
                    IndexEntry::Mask(at) => format!("mask {}", operand(at)),
                    IndexEntry::Slice { start, end, step } => {
                        let bound = |b: Option<Operand>| b.map(operand).unwrap_or_default();
                        match step {
                            Some(step) => {
                                format!("{}:{}:{}", bound(start), bound(end), operand(step))
                            }
                            None => format!("{}:{}", bound(start), bound(end)),
                        }
                    }
                    IndexEntry::Ellipsis => "...".to_owned(),
                    IndexEntry::NewAxis => "none".to_owned(),
                })
                .collect();
            let _ = write!(text, "[{}]", entries.join(", "));
        }
        text
    }

    fn args(&self, args: super::ArgRange) -> String {
        let args: Vec<String> = args.of(&self.unit.args).iter().map(|&a| operand(a)).collect();
        args.join(", ")
    }

    fn assign(&self, dst: Slot, value: String) -> String {
        match dst {
            NO_SLOT => value,
            dst => format!("{} = {value}", slot(dst)),
        }
    }

    /// `dst = float a op b`, the text of the float arithmetic instructions.
    fn float_arith(&self, op: BinaryOp, dst: Slot, a: Operand, b: Operand) -> String {
        self.assign(dst, format!("float {}", binary(op, &operand(a), &operand(b))))
    }
}

impl fmt::Display for Disassembled<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Some(instr) = self.unit.code.get(self.pc) else { return Ok(()) };
        let text = match instr {
            Instr::Copy { dst, src } => self.assign(*dst, operand(*src)),
            Instr::LoadInt { dst, value } => self.assign(*dst, value.to_string()),
            Instr::LoadFloat { dst, value } => self.assign(*dst, number(*value)),
            Instr::LoadConst { dst, index } => {
                let value = match self.unit.constants.get(*index as usize) {
                    Some(value) => {
                        let text = value.to_string();
                        if text.len() > 40 { value.type_name() } else { text }
                    }
                    None => "?".to_owned(),
                };
                self.assign(*dst, format!("const {value}"))
            }
            Instr::LoadGlobal { dst, global } => self.assign(*dst, self.global(*global)),
            Instr::StoreGlobal { global, src } => {
                format!("{} = {}", self.global(*global), operand(*src))
            }
            Instr::RefreshVar { slot: s } => format!("refresh var {}", slot(*s)),
            Instr::Leaf { slot: s } => format!("{} = leaf {}", slot(*s), slot(*s)),
            Instr::IntArith { op, dst, a, b } => {
                self.assign(*dst, format!("int {} {} {}", slot(*a), int_op(*op), slot(*b)))
            }
            Instr::IntArithImm { op, dst, a, imm, imm_first: false } => {
                self.assign(*dst, format!("int {} {} {imm}", slot(*a), int_op(*op)))
            }
            Instr::IntArithImm { op, dst, a, imm, imm_first: true } => {
                self.assign(*dst, format!("int {imm} {} {}", int_op(*op), slot(*a)))
            }
            Instr::IntCmp { op, dst, a, b } => {
                self.assign(*dst, format!("int {} {} {}", slot(*a), cmp(*op), slot(*b)))
            }
            Instr::JumpIntCmp { op, a, b, target } => {
                format!("if int {} {} {} goto {target}", slot(*a), cmp(*op), slot(*b))
            }
            Instr::JumpIntCmpImm { op, a, imm, target } => {
                format!("if int {} {} {imm} goto {target}", slot(*a), cmp(*op))
            }
            Instr::LoopIntImm { slot: s, delta, op, imm, target } => format!(
                "{} += {delta}; if int {} {} {imm} goto {target}",
                slot(*s),
                slot(*s),
                cmp(*op)
            ),
            Instr::LoopInt { slot: s, delta, op, rhs, target } => format!(
                "{} += {delta}; if int {} {} {} goto {target}",
                slot(*s),
                slot(*s),
                cmp(*op),
                slot(*rhs)
            ),
            Instr::FloatArith { op, dst, a, b } => self.float_arith(*op, *dst, *a, *b),
            Instr::FloatAdd { dst, a, b } => self.float_arith(BinaryOp::Add, *dst, *a, *b),
            Instr::FloatMul { dst, a, b } => self.float_arith(BinaryOp::Mul, *dst, *a, *b),
            Instr::FloatCmp { op, dst, a, b } => {
                self.assign(*dst, format!("float {} {} {}", slot(*a), cmp(*op), slot(*b)))
            }
            Instr::JumpFloatCmp { op, negate, a, b, target } => {
                let test = format!("float {} {} {}", slot(*a), cmp(*op), slot(*b));
                match negate {
                    false => format!("if {test} goto {target}"),
                    true => format!("if !({test}) goto {target}"),
                }
            }
            Instr::Binary { op, dst, a, b } => {
                self.assign(*dst, binary(*op, &operand(*a), &operand(*b)))
            }
            Instr::Unary { op, dst, a } => self.assign(*dst, unary(*op, &operand(*a))),
            Instr::NegInt { dst, a } => self.assign(*dst, format!("int -{}", slot(*a))),
            Instr::Not { dst, a } => self.assign(*dst, format!("!{}", slot(*a))),
            Instr::Cast { kind, dst, a } => {
                let to = match kind {
                    CastKind::Int => "int",
                    CastKind::Float => "float",
                    CastKind::Char => "char",
                    CastKind::Bool => "bool",
                };
                self.assign(*dst, format!("({to}){}", operand(*a)))
            }
            Instr::Matmul { dst, a, b } => {
                self.assign(*dst, format!("{} @ {}", operand(*a), operand(*b)))
            }
            Instr::Jump { target } => format!("goto {target}"),
            Instr::JumpIf { cond, when, target } => match when {
                true => format!("if {} goto {target}", slot(*cond)),
                false => format!("if !{} goto {target}", slot(*cond)),
            },
            Instr::Call { unit, dst, args } => {
                self.assign(*dst, format!("call {}({})", self.unit_name(*unit), self.args(*args)))
            }
            Instr::CallTransform { callable, dst, args } => {
                self.assign(*dst, format!("call {}({})", self.callee(*callable), self.args(*args)))
            }
            Instr::Return { src: Some(src) } => format!("return {}", operand(*src)),
            Instr::Return { src: None } => "return".to_owned(),
            Instr::ReturnTuple { items } => format!("return ({})", self.args(*items)),
            Instr::GetElem { dst, base, index, .. } => {
                self.assign(*dst, format!("element {}", self.region(&operand(*base), *index)))
            }
            Instr::SetElem { target, value, op, index, .. } => {
                let symbol = op.map_or("", BinaryOp::symbol);
                let place = self.region(&slot(*target), *index);
                format!("element {place} {symbol}= {}", operand(*value))
            }
            Instr::GetIndex { dst, base, index } => {
                self.assign(*dst, self.region(&operand(*base), *index))
            }
            Instr::SetIndex { target, index, value, op } => {
                let symbol = op.map_or("", BinaryOp::symbol);
                format!("{} {symbol}= {}", self.region(&slot(*target), *index), operand(*value))
            }
            Instr::CheckShape { slot: s, check } => {
                let declared = self.unit.checks.get(*check as usize).map_or("?", |c| &c.declared);
                format!("check {}: {declared}", slot(*s))
            }
            Instr::Zero { dst, kind } => {
                let kind = match &**kind {
                    ZeroKind::Bool => "bool",
                    ZeroKind::Char => "char",
                    ZeroKind::Tensor(_) => "tensor",
                };
                self.assign(*dst, format!("zero {kind}"))
            }
            Instr::Builtin { dst, call } => self.assign(*dst, builtin(call)),
        };
        f.write_str(&text)
    }
}

/// A built-in call as its name and the operands it reads.
fn builtin(call: &BuiltinCall) -> String {
    let reads: Vec<String> = call.operands().into_iter().map(operand).collect();
    format!("{}({})", call.name(), reads.join(", "))
}
