//! Grammar rules for what Nabla does not have: misspelt keywords (`fucntion`, `lop`, `Tensr`) and
//! the habits of other languages (`for`, `while`, `def`, `let`, `double`, `print x`, `float(x)`,
//! `{1, 2}`, `**`, `and`, `t[a..b]`).
//!
//! Each is recognised only where the text cannot mean anything else in Nabla (an identifier
//! followed by another identifier, a call followed by a block, ...), reported once with what
//! Nabla writes instead and, where the rewrite is mechanical, a fix-it. Then it is parsed as what
//! it stands for: a misspelt keyword is read as the keyword ([`Parser::read_as`]), `while (c)` as
//! a `loop` with only a condition, `def f(x)` as a function whose types are unknown. So one
//! mistake gives one error, and the rest of the program is still checked.

use super::{
    CompletedMarker, Parser, TokenSet,
    expressions::{EXPR_FIRST, at_expr, delimited, expr, expr_bp, path_expr},
    items::{
        DECL_FIRST, TYPE_FIRST, block, body_block, declarator_rest, fn_def_rest, name, qualifier,
        ty, var_decl,
    },
};
use crate::{
    SyntaxErrorKind::{ForeignSyntax, MisspeltKeyword},
    SyntaxKind::{self, *},
    T,
    edit_distance::best_match,
    fixes::FixPlan,
};

/// Keywords that start a statement or an item, and the types (which start a declaration).
const STMT_KEYWORDS: &[SyntaxKind] = &[
    T![function],
    T![return],
    T![var],
    T![cns],
    T![Tensor],
    T![float],
    T![int],
    T![bool],
    T![char],
    T![void],
    T![test],
    T![import],
    T![if],
    T![loop],
];

const TYPE_KEYWORDS: &[SyntaxKind] =
    &[T![Tensor], T![float], T![int], T![bool], T![char], T![void]];

/// Tokens that begin an expression but cannot continue one that is a lone name: after a name,
/// one of these means the name was meant as a keyword (`retrun x`, `print 1`).
const AFTER_NAME_NOT_AN_EXPRESSION: TokenSet = TokenSet::new(&[
    IDENT,
    INT_NUMBER,
    FLOAT_NUMBER,
    CHAR_LITERAL,
    STRING,
    T![true],
    T![false],
    T![!],
    T![sizeof],
]);

/// The keyword among `keywords` that `text` misspells, if it is close enough to one.
fn misspelt(text: &str, keywords: &[SyntaxKind]) -> Option<SyntaxKind> {
    let names = keywords.iter().filter_map(|k| k.text());
    let found = best_match(text, names)?;
    SyntaxKind::from_keyword(found)
}

fn report_misspelt(p: &mut Parser<'_>, keyword: SyntaxKind) {
    let text = keyword.text().unwrap_or("keyword");
    let found = p.nth_text(0);
    p.mistake(
        MisspeltKeyword,
        format!("`{found}` is not a keyword; did you mean `{text}`?"),
        None,
        Some(FixPlan::Replace(text)),
    );
    p.read_as(keyword);
}

/// What a statement that starts with an identifier turned out to be.
pub(super) enum Recognised {
    /// An ordinary statement; the current token may now read as the keyword it misspells.
    No,
    /// A habit from another language, parsed here whole.
    Parsed,
}

/// Recognises a statement or item that starts with an identifier but is a misspelt keyword or
/// another language's construct. Either parses it whole, or re-reads the identifier as the
/// keyword it misspells for the caller to parse, or leaves it for an expression statement.
pub(super) fn ident_stmt(p: &mut Parser<'_>, top_level: bool) -> Recognised {
    let text = p.nth_text(0);
    let next = p.nth(1);
    match text {
        "for" if next == T!['('] => {
            p.mistake(
                ForeignSyntax,
                "Nabla writes a `for` loop as `loop (init; cond; step)`",
                None,
                Some(FixPlan::Replace("loop")),
            );
            p.read_as(T![loop]);
            return Recognised::No;
        }
        "for" if next == IDENT => {
            for_in(p);
            return Recognised::Parsed;
        }
        "while" if next == T!['('] || EXPR_FIRST.contains(next) => {
            while_loop(p);
            return Recognised::Parsed;
        }
        "do" if next == T!['{'] => {
            do_while(p);
            return Recognised::Parsed;
        }
        "def" | "fn" | "func" | "fun" | "sub" | "proc" if next == IDENT && p.nth_at(2, T!['(']) => {
            foreign_function(p, top_level);
            return Recognised::Parsed;
        }
        "let" | "auto" | "val" | "const" | "my" | "local"
            if next == IDENT
                && (matches!(p.nth(2), T![=] | T![;] | T![:] | T![,])
                    || p.nth_text(1) == "mut") =>
        {
            foreign_declaration(p);
            return Recognised::Parsed;
        }
        "const" | "constexpr" | "final" if DECL_FIRST.contains(next) || next == IDENT => {
            p.mistake(
                ForeignSyntax,
                format!("Nabla writes a constant with `cns`, not `{text}`"),
                None,
                Some(FixPlan::Replace("cns")),
            );
            p.read_as(T![cns]);
            return Recognised::No;
        }
        "print" | "write" | "printf" | "println" | "puts"
            if AFTER_NAME_NOT_AN_EXPRESSION.contains(next) && !p.nth_on_new_line(1) =>
        {
            call_without_parens(p);
            return Recognised::Parsed;
        }
        "switch" | "match" | "case" | "class" | "try" | "catch" | "goto" | "typedef"
        | "namespace" | "using" | "from"
            if next == IDENT || next == T!['('] || next == T!['{'] =>
        {
            unsupported_construct(p, text);
            return Recognised::Parsed;
        }
        _ => {}
    }
    let keyword = match next {
        // Nothing may follow a lone name without an operator: `retrun x`, `flaot x`, `vra float`.
        _ if AFTER_NAME_NOT_AN_EXPRESSION.contains(next) || TYPE_FIRST.contains(next) => {
            let candidates = match next {
                STRING => &[T![test], T![import]][..],
                _ if TYPE_FIRST.contains(next) => &[T![function], T![var], T![cns]][..],
                IDENT => STMT_KEYWORDS,
                _ => &[T![return]][..],
            };
            misspelt(text, candidates)
        }
        // `lop (...) {`: a call cannot be followed by a block.
        T!['('] => match misspelt(text, &[T![if], T![loop]]) {
            Some(keyword) if parens_then_block(p, 1) => Some(keyword),
            _ => None,
        },
        _ => None,
    };
    if let Some(keyword) = keyword {
        report_misspelt(p, keyword);
        return Recognised::No;
    }
    // `double x = 1.0;`, `Foo x;`: a declaration whose type Nabla does not have.
    if next == IDENT && matches!(p.nth(2), T![=] | T![;] | T![,] | T!['[']) {
        var_decl(p, true);
        return Recognised::Parsed;
    }
    Recognised::No
}

/// Whether the tokens from `n` ahead are a balanced `( ... )` followed by `{`.
fn parens_then_block(p: &Parser<'_>, n: usize) -> bool {
    let mut depth = 0usize;
    let mut i = n;
    loop {
        match p.peek_kind(i) {
            T!['('] => depth += 1,
            T![')'] => {
                depth -= 1;
                if depth == 0 {
                    return p.peek_kind(i + 1) == T!['{'];
                }
            }
            // A block inside: not a header (`;` may be, in a loop's header).
            EOF | T!['{'] | T!['}'] => return false,
            _ => {}
        }
        i += 1;
    }
}

/// Whether the identifier where a type belongs is a word from another language or a misspelt
/// type keyword (reported by [`type_word`]) rather than the name of a record type.
pub(super) fn is_type_word(p: &mut Parser<'_>) -> bool {
    let text = p.nth_text(0);
    matches!(
        text,
        "double"
            | "real"
            | "float32"
            | "float64"
            | "f32"
            | "f64"
            | "number"
            | "Float"
            | "long"
            | "short"
            | "int32_t"
            | "int64_t"
            | "i32"
            | "i64"
            | "usize"
            | "size_t"
            | "integer"
            | "unsigned"
            | "signed"
            | "uint"
            | "boolean"
            | "array"
            | "Array"
            | "ndarray"
            | "matrix"
            | "Matrix"
            | "vector"
            | "Vector"
            | "string"
            | "String"
            | "str"
    ) || misspelt(text, TYPE_KEYWORDS).is_some()
}

/// A type Nabla does not have, written where a type belongs (the current token, an identifier):
/// reported, and read as the Nabla type it stands for when there is one; `true` when there is
/// none (the word is then an unknown type, not the name of a record type). The caller then parses
/// the type as usual; without a Nabla equivalent it becomes an unknown type, which the checker
/// accepts silently.
pub(super) fn type_word(p: &mut Parser<'_>) -> bool {
    let text = p.nth_text(0);
    let (nabla, message): (Option<SyntaxKind>, String) = match text {
        "double" | "real" | "float32" | "float64" | "f32" | "f64" | "number" | "Float" => {
            (Some(T![float]), format!("Nabla has no `{text}`: its `float` is 64-bit"))
        }
        "long" | "short" | "int32_t" | "int64_t" | "i32" | "i64" | "usize" | "size_t"
        | "integer" | "unsigned" | "signed" | "uint" => {
            (Some(T![int]), format!("Nabla has no `{text}`: its `int` is 64-bit and signed"))
        }
        "boolean" => (Some(T![bool]), "Nabla writes `boolean` as `bool`".to_owned()),
        "array" | "Array" | "ndarray" | "matrix" | "Matrix" | "vector" | "Vector" => (
            Some(T![Tensor]),
            format!("Nabla has no `{text}`: its arrays are `Tensor`s, as in `Tensor a[3] = ...`"),
        ),
        "string" | "String" | "str" => (
            None,
            "Nabla has no string variables: strings appear only as arguments of built-ins, such as `print(\"loss\", l)`"
                .to_owned(),
        ),
        _ => match misspelt(text, TYPE_KEYWORDS) {
            Some(keyword) => {
                report_misspelt(p, keyword);
                return false;
            }
            None => (
                None,
                format!(
                    "`{text}` is not a type: Nabla's types are `int`, `float`, `char`, `bool` and `Tensor`"
                ),
            ),
        },
    };
    match nabla {
        Some(kind) => {
            let fix = kind.text().map(FixPlan::Replace);
            p.mistake(ForeignSyntax, message, None, fix);
            p.read_as(kind);
            false
        }
        None if matches!(text, "string" | "String" | "str") => {
            p.mistake(ForeignSyntax, message, None, None);
            true
        }
        None => {
            p.error(message);
            true
        }
    }
}

/// `while (c) { ... }`, or `while c { ... }`: a `loop` with only a condition.
fn while_loop(p: &mut Parser<'_>) {
    let m = p.start();
    p.mistake(
        ForeignSyntax,
        "Nabla writes a `while` loop as `loop (; cond; )`",
        None,
        Some(FixPlan::WhileHeader),
    );
    p.read_as(T![loop]);
    p.bump(T![loop]);
    let parens = p.eat(T!['(']);
    let cond = p.start();
    expr(p);
    cond.complete(p, LOOP_COND);
    if parens {
        p.expect(T![')']);
    }
    body_block(p, "a `loop`");
    m.complete(p, LOOP_STMT);
}

/// `do { ... } while (c);`: parsed as a loop on `c` so that its body is checked.
fn do_while(p: &mut Parser<'_>) {
    let m = p.start();
    p.mistake(
        ForeignSyntax,
        "Nabla has no `do ... while`: write `loop (;;) { ... if (!(cond)) { break; } }`",
        None,
        None,
    );
    p.read_as(T![loop]);
    p.bump(T![loop]);
    block(p);
    if p.at(IDENT) && p.nth_text(0) == "while" {
        let tail = p.start();
        p.bump_any();
        if p.eat(T!['(']) {
            let cond = p.start();
            if p.at_ts(EXPR_FIRST) {
                expr(p);
            }
            cond.complete(p, LOOP_COND);
            p.eat(T![')']);
        }
        p.eat(T![;]);
        tail.complete(p, ERROR);
    }
    m.complete(p, LOOP_STMT);
}

/// `for i in range(n) { ... }` (Python) or `for x in xs { ... }`: a loop whose variable is
/// declared without a type, so that its body is checked without an error for each use.
fn for_in(p: &mut Parser<'_>) {
    let m = p.start();
    let is_range = p.nth_text(2) == "in"
        && p.nth_text(3) == "range"
        && p.nth_at(4, T!['('])
        && parens_then_block(p, 4);
    p.mistake(
        ForeignSyntax,
        "Nabla writes a `for` loop as `loop (init; cond; step)`, as in `loop (int i = 0; i < n; i++)`",
        None,
        is_range.then_some(FixPlan::ForRange),
    );
    p.read_as(T![loop]);
    p.bump(T![loop]);
    let init = p.start();
    let decl = p.start();
    let declarator = p.start();
    name(p, "expected the loop variable");
    declarator.complete(p, DECLARATOR);
    decl.complete(p, VAR_DECL);
    init.complete(p, LOOP_INIT);
    let header = p.start();
    if is_range {
        p.bump_any();
        expr(p);
    } else {
        while !p.at(T!['{']) && !p.at(T![;]) && !p.at(T!['}']) && !p.at_end() {
            p.bump_any();
        }
    }
    header.complete(p, ERROR);
    body_block(p, "a `loop`");
    m.complete(p, LOOP_STMT);
}

/// `def f(x) { ... }`, `fn f(x: f64) -> f64 { ... }`: a function whose types are unknown, so that
/// its name is defined and its body is checked.
fn foreign_function(p: &mut Parser<'_>, top_level: bool) {
    let m = p.start();
    p.mistake(
        ForeignSyntax,
        "Nabla defines a function as `function float f(float x) { ... }`, with its return type and the type of each parameter",
        None,
        None,
    );
    if !top_level {
        p.error("`function` is only allowed at the top level of a file");
    }
    p.read_as(T![function]);
    p.bump(T![function]);
    name(p, "expected the function's name");
    let params = p.start();
    delimited(p, T!['('], T![')'], DECL_FIRST.union(TokenSet::new(&[IDENT])), "a parameter", |p| {
        let param = p.start();
        if p.at_ts(DECL_FIRST) {
            qualifier(p);
            if p.at_ts(TYPE_FIRST) {
                ty(p);
            }
        }
        name(p, "expected the parameter's name");
        skip_annotation(p, TokenSet::new(&[T![,], T![')']]));
        param.complete(p, PARAM);
    });
    params.complete(p, PARAM_LIST);
    // A return type annotation, `-> f64` or `: int`.
    if p.at(T![:]) || (p.at(T![-]) && p.nth_at(1, T![>])) {
        let annotation = p.start();
        while !p.at(T!['{']) && !p.at(T![;]) && !p.at_end() {
            p.bump_any();
        }
        annotation.complete(p, ERROR);
    }
    body_block(p, "a function");
    m.complete(p, FN_DEF);
}

/// A type annotation `: f64` or a default `= 1`, up to a token of `stop` at the same depth.
fn skip_annotation(p: &mut Parser<'_>, stop: TokenSet) {
    if !p.at(T![:]) && !p.at(T![=]) {
        return;
    }
    let m = p.start();
    let mut depth = 0usize;
    while !(p.at_end() || depth == 0 && p.at_ts(stop)) {
        match p.current() {
            T!['('] | T!['['] | T![<] => depth += 1,
            T![')'] | T![']'] | T![>] => depth = depth.saturating_sub(1),
            T![;] | T!['{'] | T!['}'] => break,
            _ => {}
        }
        p.bump_any();
    }
    m.complete(p, ERROR);
}

/// `let x = 1.0;`, `auto t = zeros([3]);`: a declaration without a type.
fn foreign_declaration(p: &mut Parser<'_>) {
    let m = p.start();
    let text = p.nth_text(0);
    let message = match text {
        "const" => {
            "Nabla declares a constant with `cns` and its type, as in `cns float rate = 0.1;`"
                .to_owned()
        }
        _ => format!(
            "Nabla has no `{text}`: a declaration starts with the type, as in `float x = 1.0;` or `Tensor t = zeros([3]);`"
        ),
    };
    p.mistake(ForeignSyntax, message, None, Some(FixPlan::DeclareType));
    let word = p.start();
    p.bump_any();
    if p.at(IDENT) && p.nth_text(0) == "mut" && p.nth_at(1, IDENT) {
        p.bump_any();
    }
    word.complete(p, ERROR);
    loop {
        let declarator = p.start();
        name(p, "expected a variable name");
        skip_annotation(p, TokenSet::new(&[T![=], T![;], T![,]]));
        declarator_rest(p);
        declarator.complete(p, DECLARATOR);
        if !p.eat(T![,]) {
            break;
        }
    }
    p.expect(T![;]);
    m.complete(p, VAR_DECL);
}

/// `print x;`, `print "done";`: a call written without parentheses.
fn call_without_parens(p: &mut Parser<'_>) {
    let stmt = p.start();
    let call = p.start();
    let callee = p.nth_text(0);
    path_expr(p);
    let args = p.start();
    p.mistake(
        ForeignSyntax,
        format!("Nabla calls `{callee}` with parentheses: `{callee}(...)`"),
        None,
        Some(FixPlan::CallParens),
    );
    expr(p);
    while p.eat(T![,]) {
        expr(p);
    }
    args.complete(p, ARG_LIST);
    call.complete(p, CALL_EXPR);
    p.expect(T![;]);
    stmt.complete(p, EXPR_STMT);
}

/// `switch (x) { ... }`, `class Net { ... }`, `from numpy import *`: reported, and skipped to the
/// end of its block, its `;` or its line.
fn unsupported_construct(p: &mut Parser<'_>, word: &str) {
    let help = match word {
        "switch" | "match" | "case" => {
            "Nabla has no `switch`: use `if (...) { } elif (...) { } else { }`"
        }
        "class" => "Nabla has no classes: a model is tensors passed to functions",
        "try" | "catch" => {
            "Nabla has no exceptions: a failing operation stops the program with its error"
        }
        "goto" => "Nabla has no `goto`: use `loop`, `break` and `continue`",
        "from" | "using" | "namespace" => {
            "Nabla has no modules: `import \"lib.nb\";` makes another Nabla file visible, and the built-ins need no import"
        }
        _ => "Nabla has no `typedef`: write the type where it is used",
    };
    let m = p.start();
    p.mistake(ForeignSyntax, help, None, None);
    p.bump_any();
    let mut depth = 0usize;
    while !p.at_end() {
        // A construct without braces ends with its line.
        if depth == 0 && p.nth_on_new_line(0) && !p.at(T!['{']) {
            break;
        }
        match p.current() {
            T!['{'] => depth += 1,
            T!['}'] if depth <= 1 => {
                p.bump_any();
                break;
            }
            T!['}'] => depth -= 1,
            T![;] if depth == 0 => {
                p.bump_any();
                break;
            }
            _ => {}
        }
        p.bump_any();
    }
    m.complete(p, ERROR);
}

/// A statement whose first token is a type keyword and that defines a function the C way:
/// `float f(float x) { ... }`, `Tensor[n] f(...)`.
pub(super) fn c_function_ahead(p: &Parser<'_>) -> bool {
    let mut i = 1;
    if p.peek_kind(0) == T![Tensor] {
        while p.peek_kind(i) == T!['['] {
            while !matches!(p.peek_kind(i), T![']'] | EOF | T![;]) {
                i += 1;
            }
            i += 1;
        }
    }
    p.peek_kind(i) == IDENT && p.peek_kind(i + 1) == T!['('] && parens_then_block(p, i + 1)
}

/// `float f(float x) { ... }` without `function`.
pub(super) fn c_function(p: &mut Parser<'_>) {
    let m = p.start();
    p.mistake(
        ForeignSyntax,
        "Nabla starts a function definition with `function`, as in `function float f(float x) { ... }`",
        None,
        Some(FixPlan::InsertBefore("function ")),
    );
    fn_def_rest(p);
    m.complete(p, FN_DEF);
}

/// `Tensor x[3] = {1.0, 2.0, 3.0};`: a C initializer list, parsed as the tensor literal it means.
/// Only the outermost brace is reported.
pub(super) fn brace_literal(p: &mut Parser<'_>, outermost: bool) {
    let m = p.start();
    if outermost {
        p.mistake(
            ForeignSyntax,
            "Nabla writes a tensor literal in brackets, as in `[1.0, 2.0]`",
            None,
            Some(FixPlan::Brackets),
        );
    }
    if p.enter() {
        let first = EXPR_FIRST.union(TokenSet::new(&[T!['{']]));
        delimited(p, T!['{'], T!['}'], first, "a tensor element", |p| {
            if p.at(T!['{']) {
                brace_literal(p, false);
            } else {
                expr(p);
            }
        });
        p.leave();
    }
    m.complete(p, TENSOR_LIT);
}

/// After an `if`'s block: `elseif (c) {`, `elsif`, a misspelt `elif` or `else`. Re-reads the
/// current token as the keyword it stands for; the caller parses the branch.
pub(super) fn else_branch_word(p: &mut Parser<'_>) {
    if !p.at(IDENT) {
        return;
    }
    let text = p.nth_text(0);
    match p.nth(1) {
        T!['('] if matches!(text, "elseif" | "elsif" | "elsf") && parens_then_block(p, 1) => {
            p.mistake(
                ForeignSyntax,
                format!("Nabla writes `{text}` as `elif`"),
                None,
                Some(FixPlan::Replace("elif")),
            );
            p.read_as(T![elif]);
        }
        T!['('] => {
            if let Some(keyword) = misspelt(text, &[T![elif]])
                && parens_then_block(p, 1)
            {
                report_misspelt(p, keyword);
            }
        }
        T!['{'] => {
            if let Some(keyword) = misspelt(text, &[T![else]]) {
                report_misspelt(p, keyword);
            }
        }
        _ => {}
    }
}

/// `a and b`, `a or b` in place of an infix operator: re-read as `&&` or `||`.
pub(super) fn infix_word(p: &mut Parser<'_>) {
    let (operator, text) = match p.nth_text(0) {
        "and" => (T![&&], "&&"),
        "or" => (T![||], "||"),
        _ => return,
    };
    if !EXPR_FIRST.contains(p.nth(1)) {
        return;
    }
    let word = p.nth_text(0);
    p.mistake(
        ForeignSyntax,
        format!("Nabla writes `{word}` as `{text}`"),
        None,
        Some(FixPlan::Replace(text)),
    );
    p.read_as(operator);
}

/// `not x` in place of `!x`: re-read as `!`.
pub(super) fn prefix_word(p: &mut Parser<'_>) {
    if p.nth_text(0) != "not" || !AFTER_NAME_NOT_AN_EXPRESSION.contains(p.nth(1)) {
        return;
    }
    p.mistake(ForeignSyntax, "Nabla writes `not` as `!`", None, Some(FixPlan::Replace("!")));
    p.read_as(T![!]);
}

/// `float(x)` in place of the cast `(float)x`: parsed as that cast.
pub(super) fn cast_call(p: &mut Parser<'_>) -> CompletedMarker {
    let m = p.start();
    let word = p.nth_text(0);
    p.mistake(
        ForeignSyntax,
        format!("Nabla casts with `({word})x`, not `{word}(x)`"),
        None,
        Some(FixPlan::CastCall),
    );
    ty(p);
    super::expressions::unary_operand(p);
    m.complete(p, CAST_EXPR)
}

/// `t[a..b]`, `t[..n]`: a range in an index, as Rust writes it, where Nabla (as NumPy) writes a
/// slice `a:b`, which stops before `b` as Rust's range does. The `..` is re-read as the `:` it
/// stands for, so the entry is the slice it means.
pub(super) fn range_in_index(p: &mut Parser<'_>) {
    let alone = matches!(p.nth(1), T![,] | T![']']);
    p.mistake(
        ForeignSyntax,
        "Nabla writes a slice with `:`, as in `t[a:b]`, not with `..`",
        alone.then(|| "`...` stands for all the axes the other entries do not name".to_owned()),
        Some(FixPlan::Replace(":")),
    );
    p.read_as(T![:]);
}

/// `a..b` where a value belongs (`int x = 0..5;`): Rust's range. Reported once, with the two
/// things it may mean in Nabla; the range is kept as an error node over both operands.
pub(super) fn range_expr(p: &mut Parser<'_>, start: CompletedMarker) -> CompletedMarker {
    let m = start.precede(p);
    p.mistake(
        ForeignSyntax,
        "Nabla has no range `a..b`: the vector of a, a + 1, ..., b - 1 is `arange(a, b)`",
        Some("a loop over them is `loop (int i = a; i < b; i++)`".to_owned()),
        None,
    );
    p.bump(T![..]);
    if at_expr(p) {
        expr_bp(p, 2);
    }
    m.complete(p, ERROR)
}

/// `if x > 0 {` without parentheses: the condition is parsed, and reported once.
pub(super) fn condition_without_parens(p: &mut Parser<'_>, owner: &str) {
    p.mistake(
        ForeignSyntax,
        format!("Nabla puts the condition of `{owner}` in parentheses: `{owner} (cond) {{`"),
        None,
        Some(FixPlan::ParenthesizeCondition),
    );
    expr(p);
}

/// `import numpy as np`: what Nabla imports is a file, by its path. Skips the rest of the line.
pub(super) fn import_module(p: &mut Parser<'_>) {
    p.mistake(
        ForeignSyntax,
        "Nabla imports a Nabla file by its path, as in `import \"lib.nb\";`",
        Some(
            "the built-ins (`zeros`, `exp`, `sum`, ...) need no import; `@` is the matrix product"
                .to_owned(),
        ),
        None,
    );
    let m = p.start();
    while !p.at_end() && !p.at(T![;]) {
        p.bump_any();
        if p.nth_on_new_line(0) {
            break;
        }
    }
    m.complete(p, ERROR);
    p.eat(T![;]);
}
