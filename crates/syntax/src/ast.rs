//! The typed AST: a view over the untyped rowan tree. Node types and simple accessors are
//! generated from `nabla.ungram` (see `generated/nodes.rs`); accessors the generator cannot name,
//! such as the two operands of a binary expression, are written here.

use std::marker::PhantomData;

use crate::{SyntaxKind, SyntaxNode, SyntaxNodeChildren, SyntaxToken, T};

pub use crate::generated::nodes::*;

/// A typed view of a syntax node of one or several kinds.
pub trait AstNode {
    fn can_cast(kind: SyntaxKind) -> bool
    where
        Self: Sized;

    fn cast(syntax: SyntaxNode) -> Option<Self>
    where
        Self: Sized;

    fn syntax(&self) -> &SyntaxNode;
}

/// The children of a node that cast to `N`, in order.
#[derive(Debug, Clone)]
pub struct AstChildren<N> {
    inner: SyntaxNodeChildren,
    ph: PhantomData<N>,
}

impl<N> AstChildren<N> {
    fn new(parent: &SyntaxNode) -> Self {
        AstChildren { inner: parent.children(), ph: PhantomData }
    }
}

impl<N: AstNode> Iterator for AstChildren<N> {
    type Item = N;
    fn next(&mut self) -> Option<N> {
        self.inner.find_map(N::cast)
    }
}

pub(crate) mod support {
    use super::{AstChildren, AstNode, SyntaxKind, SyntaxNode, SyntaxToken};

    pub(crate) fn child<N: AstNode>(parent: &SyntaxNode) -> Option<N> {
        parent.children().find_map(N::cast)
    }

    pub(crate) fn children<N: AstNode>(parent: &SyntaxNode) -> AstChildren<N> {
        AstChildren::new(parent)
    }

    pub(crate) fn token(parent: &SyntaxNode, kind: SyntaxKind) -> Option<SyntaxToken> {
        parent.children_with_tokens().filter_map(|it| it.into_token()).find(|it| it.kind() == kind)
    }
}

/// The first and second child expressions of a node, for nodes that hold two.
fn nth_expr(node: &SyntaxNode, n: usize) -> Option<Expr> {
    node.children().filter_map(Expr::cast).nth(n)
}

/// The first non-trivia token among a node's direct children that satisfies `pred`.
fn direct_token(node: &SyntaxNode, pred: impl Fn(SyntaxKind) -> bool) -> Option<SyntaxToken> {
    node.children_with_tokens().filter_map(|it| it.into_token()).find(|t| pred(t.kind()))
}

/// A binary operator, assignments included.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Arith(ArithOp),
    /// `a < b` and the other comparisons.
    Cmp(CmpOp),
    /// `&&` and `||`.
    Logic(LogicOp),
    /// `=` (with `None`) or a compound assignment such as `+=` (with its arithmetic operator).
    Assign(Option<ArithOp>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithOp {
    MatMul,
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    BitAnd,
    BitXor,
    BitOr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogicOp {
    And,
    Or,
}

impl BinaryOp {
    pub fn from_kind(kind: SyntaxKind) -> Option<BinaryOp> {
        use ArithOp::*;
        let op = match kind {
            T![@] => BinaryOp::Arith(MatMul),
            T![*] => BinaryOp::Arith(Mul),
            T![/] => BinaryOp::Arith(Div),
            T![%] => BinaryOp::Arith(Rem),
            T![+] => BinaryOp::Arith(Add),
            T![-] => BinaryOp::Arith(Sub),
            T![<<] => BinaryOp::Arith(Shl),
            T![>>] => BinaryOp::Arith(Shr),
            T![&] => BinaryOp::Arith(BitAnd),
            T![^] => BinaryOp::Arith(BitXor),
            T![|] => BinaryOp::Arith(BitOr),
            T![<] => BinaryOp::Cmp(CmpOp::Lt),
            T![<=] => BinaryOp::Cmp(CmpOp::Le),
            T![>] => BinaryOp::Cmp(CmpOp::Gt),
            T![>=] => BinaryOp::Cmp(CmpOp::Ge),
            T![==] => BinaryOp::Cmp(CmpOp::Eq),
            T![!=] => BinaryOp::Cmp(CmpOp::Ne),
            T![&&] => BinaryOp::Logic(LogicOp::And),
            T![||] => BinaryOp::Logic(LogicOp::Or),
            T![=] => BinaryOp::Assign(None),
            T![@=] => BinaryOp::Assign(Some(MatMul)),
            T![*=] => BinaryOp::Assign(Some(Mul)),
            T![/=] => BinaryOp::Assign(Some(Div)),
            T![%=] => BinaryOp::Assign(Some(Rem)),
            T![+=] => BinaryOp::Assign(Some(Add)),
            T![-=] => BinaryOp::Assign(Some(Sub)),
            T![<<=] => BinaryOp::Assign(Some(Shl)),
            T![>>=] => BinaryOp::Assign(Some(Shr)),
            T![&=] => BinaryOp::Assign(Some(BitAnd)),
            T![^=] => BinaryOp::Assign(Some(BitXor)),
            T![|=] => BinaryOp::Assign(Some(BitOr)),
            _ => return None,
        };
        Some(op)
    }
}

impl BinExpr {
    pub fn lhs(&self) -> Option<Expr> {
        nth_expr(self.syntax(), 0)
    }

    /// The right operand. With a missing left operand there is no `BinExpr`, so the second child
    /// expression is always the right one.
    pub fn rhs(&self) -> Option<Expr> {
        nth_expr(self.syntax(), 1)
    }

    pub fn op_token(&self) -> Option<SyntaxToken> {
        direct_token(self.syntax(), |kind| BinaryOp::from_kind(kind).is_some())
    }

    pub fn op_kind(&self) -> Option<BinaryOp> {
        self.op_token().and_then(|token| BinaryOp::from_kind(token.kind()))
    }
}

/// A prefix operator. `~`, `&`, `*` and `@` parse so that they can be rejected with a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrefixOp {
    Neg,
    Plus,
    Not,
    PreInc,
    PreDec,
    BitNot,
    AddressOf,
    Deref,
    At,
}

impl PrefixExpr {
    pub fn op_token(&self) -> Option<SyntaxToken> {
        self.syntax().first_token()
    }

    pub fn op_kind(&self) -> Option<PrefixOp> {
        let op = match self.op_token()?.kind() {
            T![-] => PrefixOp::Neg,
            T![+] => PrefixOp::Plus,
            T![!] => PrefixOp::Not,
            T![++] => PrefixOp::PreInc,
            T![--] => PrefixOp::PreDec,
            T![~] => PrefixOp::BitNot,
            T![&] => PrefixOp::AddressOf,
            T![*] => PrefixOp::Deref,
            T![@] => PrefixOp::At,
            _ => return None,
        };
        Some(op)
    }
}

impl PostfixExpr {
    pub fn op_token(&self) -> Option<SyntaxToken> {
        direct_token(self.syntax(), |kind| matches!(kind, T![++] | T![--]))
    }

    /// `true` for `x++`, `false` for `x--`.
    pub fn is_increment(&self) -> bool {
        self.op_token().is_some_and(|token| token.kind() == T![++])
    }
}

impl TernaryExpr {
    pub fn cond(&self) -> Option<Expr> {
        nth_expr(self.syntax(), 0)
    }

    pub fn then_branch(&self) -> Option<Expr> {
        nth_expr(self.syntax(), 1)
    }

    pub fn else_branch(&self) -> Option<Expr> {
        nth_expr(self.syntax(), 2)
    }
}

impl CallExpr {
    pub fn callee(&self) -> Option<Expr> {
        self.expr()
    }

    /// The arguments, for the common case of looking at them directly.
    pub fn args(&self) -> impl Iterator<Item = Expr> {
        self.arg_list().into_iter().flat_map(|list| list.exprs())
    }
}

/// One entry of `a[...]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IndexEntry {
    At(Expr),
    Slice(Slice),
    Ellipsis(Ellipsis),
    NewAxis(NewAxis),
}

impl IndexEntry {
    pub fn syntax(&self) -> &SyntaxNode {
        match self {
            IndexEntry::At(expr) => expr.syntax(),
            IndexEntry::Slice(slice) => slice.syntax(),
            IndexEntry::Ellipsis(ellipsis) => ellipsis.syntax(),
            IndexEntry::NewAxis(new_axis) => new_axis.syntax(),
        }
    }
}

impl IndexExpr {
    pub fn base(&self) -> Option<Expr> {
        nth_expr(self.syntax(), 0)
    }

    /// The entries inside the brackets, in order.
    pub fn entries(&self) -> impl Iterator<Item = IndexEntry> {
        self.syntax().children().skip(1).filter_map(|node| match node.kind() {
            SyntaxKind::SLICE => Slice::cast(node).map(IndexEntry::Slice),
            SyntaxKind::ELLIPSIS => Ellipsis::cast(node).map(IndexEntry::Ellipsis),
            SyntaxKind::NEW_AXIS => NewAxis::cast(node).map(IndexEntry::NewAxis),
            _ => Expr::cast(node).map(IndexEntry::At),
        })
    }
}

impl Slice {
    /// The parts around the colons: before the first, between them, after the second.
    fn part(&self, n: usize) -> Option<Expr> {
        let mut colons = 0;
        for element in self.syntax().children_with_tokens() {
            match element {
                rowan::NodeOrToken::Token(token) if token.kind() == SyntaxKind::COLON => {
                    colons += 1;
                }
                rowan::NodeOrToken::Node(node) if colons == n => return Expr::cast(node),
                _ => {}
            }
        }
        None
    }

    /// The bound before the colon: `i` in `a[i:j]`.
    pub fn start(&self) -> Option<Expr> {
        self.part(0)
    }

    /// The bound after the colon: `j` in `a[i:j]`.
    pub fn end(&self) -> Option<Expr> {
        self.part(1)
    }

    /// The step after the second colon: `s` in `a[i:j:s]`.
    pub fn step(&self) -> Option<Expr> {
        self.part(2)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LiteralKind {
    Int,
    Float,
    Char,
    String,
    Bool(bool),
}

impl Literal {
    pub fn token(&self) -> Option<SyntaxToken> {
        self.syntax().first_token()
    }

    pub fn kind(&self) -> Option<LiteralKind> {
        let kind = match self.token()?.kind() {
            SyntaxKind::INT_NUMBER => LiteralKind::Int,
            SyntaxKind::FLOAT_NUMBER => LiteralKind::Float,
            SyntaxKind::CHAR_LITERAL => LiteralKind::Char,
            SyntaxKind::STRING => LiteralKind::String,
            T![true] => LiteralKind::Bool(true),
            T![false] => LiteralKind::Bool(false),
            _ => return None,
        };
        Some(kind)
    }
}

/// A scalar type keyword; `Bool` and `bool` are the same type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PrimTypeKind {
    Int,
    Float,
    Char,
    Bool,
    Void,
}

impl PrimType {
    pub fn token(&self) -> Option<SyntaxToken> {
        self.syntax().first_token()
    }

    pub fn kind(&self) -> Option<PrimTypeKind> {
        let kind = match self.token()?.kind() {
            T![int] => PrimTypeKind::Int,
            T![float] => PrimTypeKind::Float,
            T![char] => PrimTypeKind::Char,
            T![bool] | T![Bool] => PrimTypeKind::Bool,
            T![void] => PrimTypeKind::Void,
            _ => return None,
        };
        Some(kind)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QualifierKind {
    Var,
    Cns,
}

impl Qualifier {
    pub fn token(&self) -> Option<SyntaxToken> {
        self.syntax().first_token()
    }

    pub fn kind(&self) -> Option<QualifierKind> {
        match self.token()?.kind() {
            T![var] => Some(QualifierKind::Var),
            T![cns] => Some(QualifierKind::Cns),
            _ => None,
        }
    }
}

impl Name {
    pub fn text(&self) -> String {
        self.ident_token().map(|t| t.text().to_owned()).unwrap_or_default()
    }
}

impl NameRef {
    pub fn text(&self) -> String {
        self.ident_token().map(|t| t.text().to_owned()).unwrap_or_default()
    }
}
