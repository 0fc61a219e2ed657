//! The HIR of one definition's body: arenas of expressions, statements and locals, and a source
//! map from each back to the syntax, in ranges relative to the definition's chunks.
//!
//! Lowering resolves everything lexical: block scopes, shadowing, loop headers, parameters and
//! shape variables. Names that no local binds stay [`Expr::Name`] with `local: None`; inference
//! resolves them against the file scope (functions, top-level constants, imports, built-ins).
//! Index statements and differentiation transforms have their own nodes.

pub mod lower;

use la_arena::{Arena, Idx};
use smol_str::SmolStr;
use syntax::{TextRange, ast};

pub use syntax::ast::{ArithOp, CmpOp, LogicOp};

pub use self::lower::{body_query, signature_query};
use crate::{DefId, diagnostics::HirDiagnostic, ty::Dim};

pub type ExprId = Idx<Expr>;
pub type StmtId = Idx<Stmt>;
pub type LocalId = Idx<Local>;

/// A range inside one chunk of a definition (a function or test is one chunk, the top level one
/// per statement), relative to the chunk's start. [`crate::file_range`] turns it into a file
/// range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RelSpan {
    pub chunk: u32,
    pub range: TextRange,
}

/// A [`RelSpan`] in a given definition: enough to find the text anywhere in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HirSpan {
    pub def: DefId,
    pub span: RelSpan,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Body {
    pub exprs: Arena<Expr>,
    pub stmts: Arena<Stmt>,
    pub locals: Arena<Local>,
    /// The parameters of a function, in order (empty for tests and the top level).
    pub params: Vec<LocalId>,
    /// The statements of the body's outermost block (for the top level: every top-level
    /// statement, in order).
    pub root: Vec<StmtId>,
    pub source_map: BodySourceMap,
    /// Problems found while lowering: redeclarations, misplaced `break`, bad dimensions.
    pub diagnostics: Vec<HirDiagnostic>,
    /// The sizes declarations evaluate when they run, in order.
    pub runtime_sizes: Vec<RuntimeSize>,
}

/// A size that a declaration reads when it runs: an `int` that changes later (`Tensor d[k];`
/// with `k++` below) or any other `int` expression (`Tensor d[shape(x, 0)];`). Its value is
/// held in a local of kind [`LocalKind::ShapeVar`] without a name, which the declared type's
/// size names (by the expression's text), so the size stays what it was when the declaration
/// ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeSize {
    /// The declared variable.
    pub decl: LocalId,
    /// The local that holds the value.
    pub var: LocalId,
    /// The `int` expression.
    pub expr: ExprId,
}

/// Where each expression, statement and local came from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BodySourceMap {
    expr_spans: Vec<RelSpan>,
    stmt_spans: Vec<RelSpan>,
    /// The name of each local at its declaration.
    local_spans: Vec<RelSpan>,
    /// Where each local can be named.
    local_visibility: Vec<Visibility>,
    /// Every name in a dimension that refers to a local (a shape variable or constant, of this
    /// body or a top level), other than the one that declares it, with the local.
    size_uses: Vec<(RelSpan, DefId, LocalId)>,
    /// Every name of a record type (in a type or a record literal), with its `struct`.
    record_uses: Vec<(RelSpan, DefId)>,
}

/// A position in a definition: a chunk and an offset in it. Chunk `u32::MAX` is past the end of
/// every chunk (the top level's scope never closes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScopeEnd {
    pub chunk: u32,
    pub offset: syntax::TextSize,
}

/// The part of a definition where a local is in scope: from the end of its name to the end of
/// its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Visibility {
    pub start: ScopeEnd,
    pub end: ScopeEnd,
}

impl BodySourceMap {
    pub fn expr(&self, expr: ExprId) -> RelSpan {
        self.expr_spans.get(expr.into_raw().into_u32() as usize).copied().unwrap_or(EMPTY_SPAN)
    }

    pub fn stmt(&self, stmt: StmtId) -> RelSpan {
        self.stmt_spans.get(stmt.into_raw().into_u32() as usize).copied().unwrap_or(EMPTY_SPAN)
    }

    pub fn local(&self, local: LocalId) -> RelSpan {
        self.local_spans.get(local.into_raw().into_u32() as usize).copied().unwrap_or(EMPTY_SPAN)
    }

    /// The names in dimensions that refer to locals, with the local each one names.
    pub fn size_uses(&self) -> &[(RelSpan, DefId, LocalId)] {
        &self.size_uses
    }

    /// The names of record types in types and literals, with the `struct` each one names.
    pub fn record_uses(&self) -> &[(RelSpan, DefId)] {
        &self.record_uses
    }

    /// Whether `local` can be named at `at`.
    pub fn is_visible(&self, local: LocalId, at: ScopeEnd) -> bool {
        self.local_visibility
            .get(local.into_raw().into_u32() as usize)
            .is_some_and(|v| v.start <= at && at < v.end)
    }

    /// The innermost expression whose syntax covers `span` exactly or contains it, for the editor.
    pub fn expr_at(&self, span: RelSpan) -> Option<ExprId> {
        let mut best: Option<(usize, TextRange)> = None;
        for (i, candidate) in self.expr_spans.iter().enumerate() {
            if candidate.chunk == span.chunk
                && candidate.range.contains_range(span.range)
                && best.is_none_or(|(_, range)| range.contains_range(candidate.range))
            {
                best = Some((i, candidate.range));
            }
        }
        best.map(|(i, _)| Idx::from_raw(la_arena::RawIdx::from_u32(i as u32)))
    }
}

const EMPTY_SPAN: RelSpan = RelSpan { chunk: 0, range: TextRange::empty(syntax::TextSize::new(0)) };

/// A variable: declared, a parameter, a loop variable or a shape variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Local {
    pub name: SmolStr,
    pub qualifier: Option<Qualifier>,
    pub ty: TypeRef,
    pub kind: LocalKind,
    /// The value of a `cns int` whose initializer is a constant expression.
    pub const_value: Option<i64>,
    /// Depth of the scope it was declared in: 0 for a function's parameters and outermost block,
    /// and for the top level.
    pub scope_depth: u32,
    /// For a shape variable bound by a declaration's initializer (`Tensor x[N] = load(...)`),
    /// the declared variable; `None` for everything else, and for a function's shape
    /// variables, which its parameters bind.
    pub bound_by: Option<LocalId>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Qualifier {
    Var,
    Cns,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocalKind {
    Param,
    /// A declared variable, loop variables included.
    Variable,
    /// A shape variable: bound by a parameter's or a binding declaration's extent; a read-only
    /// `int`.
    ShapeVar,
}

/// A type as written in a declaration, with its dimensions resolved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TypeRef {
    Int,
    Float,
    Char,
    Bool,
    Void,
    /// `Tensor` with its written dimensions, as sizes over this body's locals (an erroneous
    /// dimension, reported while lowering, is [`Dim::Unknown`]); no dimensions means rank 0, or,
    /// with an initializer, a shape inferred from it.
    Tensor(Vec<Dim>),
    /// `(float, Tensor[k][2])`: the result type of a function of several results (never a
    /// variable's type; the elements are never tuples).
    Tuple(Vec<TypeRef>),
    /// `Linear[n][m]`: a record type with its sizes, one for each size parameter of its
    /// `struct`, over this body's locals.
    Record(RecordRef),
    /// Missing from the tree.
    #[default]
    Error,
}

/// A record type as written: its `struct`, and its sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordRef {
    pub def: DefId,
    pub name: SmolStr,
    /// One size for each size parameter of the `struct`, in order.
    pub sizes: Vec<Dim>,
    /// Whether the sizes were left out of a declaration with an initializer (`Mlp net = ...;`):
    /// the variable then takes the initializer's sizes, and `sizes` are unknown.
    pub inferred: bool,
}

/// One field of a record literal: `w: zeros([2, 3])`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldInit {
    pub name: SmolStr,
    /// The field's name.
    pub span: RelSpan,
    pub value: ExprId,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Literal {
    Int(i64),
    /// The bits of the `f64`, so that expressions compare exactly.
    Float(u64),
    Char(u8),
    Bool(bool),
    String(SmolStr),
}

impl Literal {
    pub fn float(value: f64) -> Literal {
        Literal::Float(value.to_bits())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Plus,
    Not,
    /// `~`, `&`, `*` and unary `@`: parsed so that they can be rejected.
    Rejected(RejectedOp),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectedOp {
    BitNot,
    AddressOf,
    Deref,
    At,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Arith(ArithOp),
    Cmp(CmpOp),
    Logic(LogicOp),
}

/// `grad`, `value_and_grad`, `jvp`, `vjp`, `hessian`, `jacobian` applied to a function;
/// `checkpoint`, which is the function itself with its recording recomputed during the backward
/// pass; and `vmap`, the function mapped over the leading axis of its batched arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransformOp {
    Grad,
    ValueAndGrad,
    Jvp,
    Vjp,
    Hessian,
    Jacobian,
    Checkpoint,
    Vmap,
}

impl TransformOp {
    pub fn from_name(name: &str) -> Option<TransformOp> {
        Some(match name {
            "grad" => TransformOp::Grad,
            "value_and_grad" => TransformOp::ValueAndGrad,
            "jvp" => TransformOp::Jvp,
            "vjp" => TransformOp::Vjp,
            "hessian" => TransformOp::Hessian,
            "jacobian" => TransformOp::Jacobian,
            "checkpoint" => TransformOp::Checkpoint,
            "vmap" => TransformOp::Vmap,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TransformOp::Grad => "grad",
            TransformOp::ValueAndGrad => "value_and_grad",
            TransformOp::Jvp => "jvp",
            TransformOp::Vjp => "vjp",
            TransformOp::Hessian => "hessian",
            TransformOp::Jacobian => "jacobian",
            TransformOp::Checkpoint => "checkpoint",
            TransformOp::Vmap => "vmap",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    /// Absent from the tree (the parser reported it).
    Missing,
    Literal(Literal),
    /// A name; `local` is set when a local binds it, else inference resolves it globally.
    Name {
        name: SmolStr,
        local: Option<LocalId>,
    },
    TensorLit(Vec<ExprId>),
    Call {
        callee: ExprId,
        args: Vec<ExprId>,
    },
    /// `grad(f)`, `grad(f, k)`, `jvp(f)`, ...: a derivative of the function `func` (a
    /// [`Expr::Name`] or another transform), with `wrt` the parameter index of `grad(f, k)` (an
    /// integer literal) or the list of `grad(f, [i, j])` (a [`Expr::TensorLit`] of them).
    /// Valid only as a callee or as the function of another transform.
    Transform {
        op: TransformOp,
        func: ExprId,
        wrt: Option<ExprId>,
    },
    /// `base[entries]`: `a[i]`, `a[i, j:k]`, `a[..., none]`. A chain `a[i][j]` is an index of
    /// an index.
    Index {
        base: ExprId,
        entries: Vec<IndexEntry>,
    },
    Unary {
        op: UnaryOp,
        operand: ExprId,
    },
    /// `x++`, `x--`, `++x`, `--x`.
    IncDec {
        target: ExprId,
        increment: bool,
        prefix: bool,
    },
    Cast {
        ty: TypeRef,
        operand: ExprId,
    },
    SizeofExpr(ExprId),
    SizeofType(TypeRef),
    Binary {
        op: BinaryOp,
        lhs: ExprId,
        rhs: ExprId,
    },
    /// `=` (with `op: None`) or a compound assignment.
    Assign {
        op: Option<ArithOp>,
        target: ExprId,
        value: ExprId,
    },
    Ternary {
        cond: ExprId,
        then_branch: ExprId,
        else_branch: ExprId,
    },
    /// `(a, b)`: the values a function of several results returns; valid only as the value of
    /// `return`.
    Tuple(Vec<ExprId>),
    /// `Linear { w: ..., b: ... }`: a record of the `struct` `def` (`None` when no record type
    /// has the name, which lowering reported), its fields as written.
    RecordLit {
        def: Option<DefId>,
        name: SmolStr,
        fields: Vec<FieldInit>,
    },
    /// `net.l1`: a field of a record; `span` is the field's name.
    Field {
        base: ExprId,
        name: SmolStr,
        span: RelSpan,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stmt {
    /// One declarator of a declaration: `int a = 1, b;` lowers to two.
    Decl {
        local: LocalId,
        init: Option<ExprId>,
    },
    Expr(ExprId),
    Block(Vec<StmtId>),
    If {
        branches: Vec<IfBranch>,
        else_branch: Option<Vec<StmtId>>,
    },
    Loop {
        init: Vec<StmtId>,
        cond: Option<ExprId>,
        step: Option<ExprId>,
        body: Vec<StmtId>,
    },
    Break,
    Continue,
    Return(Option<ExprId>),
    Index(IndexStmt),
    /// `(float loss, Tensor p[k][2]) = step(x);`: each local takes one element of the tuple
    /// `init` evaluates to, in order, as a declaration with that initializer would.
    TupleDecl {
        locals: Vec<LocalId>,
        init: ExprId,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfBranch {
    pub cond: ExprId,
    pub body: Vec<StmtId>,
}

/// `C(i,j) += 0.5 * A(i,k) * B(k,j);`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexStmt {
    pub target: IndexOperand,
    pub op: IndexAssignOp,
    /// The factors of the right-hand side's product, in order.
    pub factors: Vec<IndexFactor>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexAssignOp {
    Assign,
    AddAssign,
    MulAssign,
}

/// An index-labelled view `A(i,k)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexOperand {
    /// The tensor: an [`Expr::Name`].
    pub tensor: ExprId,
    pub labels: Vec<IndexLabel>,
    /// The whole `A(i,k)`.
    pub span: RelSpan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexLabel {
    pub name: SmolStr,
    pub span: RelSpan,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexFactor {
    Tensor(IndexOperand),
    /// A scalar factor such as `0.5` or `alpha`.
    Scalar(ExprId),
}

/// One entry of an index `a[...]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexEntry {
    /// `i`: one position, counted from the end when negative; drops the axis.
    At(ExprId),
    /// `start:end:step`, any part omitted; keeps the axis.
    Slice { start: Option<ExprId>, end: Option<ExprId>, step: Option<ExprId> },
    /// `...`: the axes no other entry names.
    Ellipsis,
    /// `none`: a new axis of extent 1.
    NewAxis,
}

impl IndexEntry {
    /// The expressions of the entry, in evaluation order.
    pub fn exprs(&self) -> impl Iterator<Item = ExprId> {
        let parts = match *self {
            IndexEntry::At(index) => [Some(index), None, None],
            IndexEntry::Slice { start, end, step } => [start, end, step],
            IndexEntry::Ellipsis | IndexEntry::NewAxis => [None, None, None],
        };
        parts.into_iter().flatten()
    }
}

impl Body {
    /// The children of an expression, in evaluation order.
    pub fn expr_children(&self, expr: ExprId) -> Vec<ExprId> {
        match &self.exprs[expr] {
            Expr::Missing | Expr::Literal(_) | Expr::Name { .. } | Expr::SizeofType(_) => vec![],
            Expr::TensorLit(elements) | Expr::Tuple(elements) => elements.clone(),
            Expr::RecordLit { fields, .. } => fields.iter().map(|field| field.value).collect(),
            Expr::Field { base, .. } => vec![*base],
            Expr::Call { callee, args } => {
                std::iter::once(*callee).chain(args.iter().copied()).collect()
            }
            Expr::Transform { func, wrt, .. } => std::iter::once(*func).chain(*wrt).collect(),
            Expr::Index { base, entries } => {
                std::iter::once(*base).chain(entries.iter().flat_map(IndexEntry::exprs)).collect()
            }
            Expr::Unary { operand, .. } | Expr::Cast { operand, .. } => vec![*operand],
            Expr::IncDec { target, .. } => vec![*target],
            Expr::SizeofExpr(inner) => vec![*inner],
            Expr::Binary { lhs, rhs, .. } => vec![*lhs, *rhs],
            Expr::Assign { target, value, .. } => vec![*target, *value],
            Expr::Ternary { cond, then_branch, else_branch } => {
                vec![*cond, *then_branch, *else_branch]
            }
        }
    }
}

pub(crate) fn qualifier_of(q: Option<ast::Qualifier>) -> Option<Qualifier> {
    match q?.kind()? {
        ast::QualifierKind::Var => Some(Qualifier::Var),
        ast::QualifierKind::Cns => Some(Qualifier::Cns),
    }
}
