//! Grammar rules for expressions: a Pratt loop over one binding-power table that mirrors the
//! precedence table of `language.md` section 4, with prefix, postfix and atomic forms below it.

use super::{
    CompletedMarker, Parser, TokenSet, habits,
    items::{STMT_RECOVERY, TYPE_FIRST, ty},
};
use crate::{
    SyntaxKind::{self, *},
    T,
};

const LITERAL_FIRST: TokenSet =
    TokenSet::new(&[INT_NUMBER, FLOAT_NUMBER, CHAR_LITERAL, STRING, T![true], T![false]]);

const PREFIX_OPS: TokenSet =
    TokenSet::new(&[T![-], T![+], T![!], T![~], T![&], T![*], T![@], T![++], T![--]]);

pub(super) const EXPR_FIRST: TokenSet =
    LITERAL_FIRST.union(PREFIX_OPS).union(TokenSet::new(&[IDENT, T!['('], T!['['], T![sizeof]]));

/// Tokens at which a missing operand is reported without consuming anything.
const EXPR_RECOVERY: TokenSet =
    STMT_RECOVERY.union(TokenSet::new(&[T![')'], T![']'], T![,], T![:], T![?]]));

/// Binding power of an infix operator and whether it is right-associative. Higher binds tighter.
fn infix_binding_power(kind: SyntaxKind) -> Option<(u8, bool)> {
    let bp = match kind {
        T![=]
        | T![+=]
        | T![-=]
        | T![*=]
        | T![/=]
        | T![%=]
        | T![@=]
        | T![<<=]
        | T![>>=]
        | T![&=]
        | T![^=]
        | T![|=] => return Some((1, true)),
        T![?] => return Some((2, true)),
        T![||] => 3,
        T![&&] => 4,
        T![|] => 5,
        T![^] => 6,
        T![&] => 7,
        T![==] | T![!=] => 8,
        T![<] | T![<=] | T![>] | T![>=] => 9,
        T![<<] | T![>>] => 10,
        T![+] | T![-] => 11,
        T![*] | T![/] | T![%] => 12,
        T![@] => 13,
        _ => return None,
    };
    Some((bp, false))
}

pub(super) fn expr(p: &mut Parser<'_>) -> Option<CompletedMarker> {
    let lhs = expr_bp(p, 1)?;
    if p.at(T![..]) {
        // Inside an index `a..b` is the slice it means (see [`index_entry`]); elsewhere, a range.
        return Some(habits::range_expr(p, lhs));
    }
    Some(lhs)
}

pub(super) fn expr_bp(p: &mut Parser<'_>, min_bp: u8) -> Option<CompletedMarker> {
    if !p.enter() {
        return None;
    }
    let result = expr_bp_inner(p, min_bp);
    p.leave();
    result
}

/// Binding power of `**`, which Nabla does not have: above every operator, as in Python, so
/// that the fix-it `pow(a, b)` takes the operands Python would.
const POWER_BP: u8 = 14;

fn expr_bp_inner(p: &mut Parser<'_>, min_bp: u8) -> Option<CompletedMarker> {
    let mut lhs = unary(p)?;
    loop {
        if p.at(IDENT) {
            habits::infix_word(p);
        }
        let op = p.current();
        if op == T![*] && p.nth_at(1, T![*]) && p.nth_joint(1) {
            let m = lhs.precede(p);
            p.mistake(
                crate::SyntaxErrorKind::ForeignSyntax,
                "Nabla has no `**` operator: a power is `pow(a, b)`",
                None,
                Some(crate::fixes::FixPlan::Power),
            );
            p.bump(T![*]);
            p.bump(T![*]);
            operand(p, POWER_BP);
            lhs = m.complete(p, BIN_EXPR);
            continue;
        }
        let Some((bp, right_assoc)) = infix_binding_power(op) else { break };
        if bp < min_bp {
            break;
        }
        let m = lhs.precede(p);
        p.bump_any();
        if op == T![?] {
            // The middle operand is a full expression, as in C; the last binds like `?:` itself.
            operand(p, 1);
            // Without the `:` a missing else-operand is the same mistake: report it once.
            if p.expect(T![:]) || p.at_ts(EXPR_FIRST) {
                operand(p, bp);
            }
            lhs = m.complete(p, TERNARY_EXPR);
            continue;
        }
        operand(p, if right_assoc { bp } else { bp + 1 });
        lhs = m.complete(p, BIN_EXPR);
    }
    Some(lhs)
}

/// Types that another language calls as a conversion: `float(n)`.
const CAST_CALL_FIRST: TokenSet = TokenSet::new(&[T![int], T![float], T![char], T![bool]]);

/// Whether an expression starts here, counting a conversion written as a call, `float(n)`, which
/// is parsed as the cast it means, and `none` where a value belongs (`float b = none;`), which
/// [`atom`] reports as what it is: an entry of an index.
pub(super) fn at_expr(p: &mut Parser<'_>) -> bool {
    p.at_ts(EXPR_FIRST) || p.at(T![none]) || p.at_ts(CAST_CALL_FIRST) && p.nth_at(1, T!['('])
}

/// An operand that must be there: its absence is reported, and the enclosing node still closes.
fn operand(p: &mut Parser<'_>, min_bp: u8) {
    if at_expr(p) {
        expr_bp(p, min_bp);
    } else if p.at(T!['{']) {
        habits::brace_literal(p, true);
    } else {
        p.err_recover("expected an expression", EXPR_RECOVERY);
    }
}

/// The operand of a prefix operator or cast.
pub(super) fn unary_operand(p: &mut Parser<'_>) {
    if p.enter() {
        unary(p);
        p.leave();
    }
}

fn unary(p: &mut Parser<'_>) -> Option<CompletedMarker> {
    if p.at(IDENT) && p.nth_at(1, IDENT) {
        habits::prefix_word(p);
    }
    let kind = p.current();
    if CAST_CALL_FIRST.contains(kind) && p.nth_at(1, T!['(']) {
        return Some(habits::cast_call(p));
    }
    if PREFIX_OPS.contains(kind) {
        let m = p.start();
        p.bump_any();
        if p.enter() {
            match unary(p) {
                Some(_) => {}
                None => p.error("expected an operand"),
            }
            p.leave();
        }
        return Some(m.complete(p, PREFIX_EXPR));
    }
    if kind == T![sizeof] {
        let m = p.start();
        p.bump(T![sizeof]);
        if p.at(T!['(']) && TYPE_FIRST.contains(p.nth(1)) {
            let inner = p.start();
            p.bump(T!['(']);
            ty(p);
            p.expect(T![')']);
            inner.complete(p, SIZEOF_TYPE);
        } else if p.at_ts(EXPR_FIRST) {
            if p.enter() {
                unary(p);
                p.leave();
            }
        } else {
            p.err_recover("expected an operand of `sizeof`", EXPR_RECOVERY);
        }
        return Some(m.complete(p, SIZEOF_EXPR));
    }
    if kind == T!['('] && TYPE_FIRST.contains(p.nth(1)) {
        let m = p.start();
        p.bump(T!['(']);
        ty(p);
        p.expect(T![')']);
        if p.at_ts(EXPR_FIRST) {
            if p.enter() {
                unary(p);
                p.leave();
            }
        } else {
            p.err_recover("expected the expression to cast", EXPR_RECOVERY);
        }
        return Some(m.complete(p, CAST_EXPR));
    }
    let atom = atom(p)?;
    Some(postfix(p, atom))
}

fn postfix(p: &mut Parser<'_>, mut lhs: CompletedMarker) -> CompletedMarker {
    loop {
        lhs = match p.current() {
            T!['('] => {
                let m = lhs.precede(p);
                arg_list(p);
                m.complete(p, CALL_EXPR)
            }
            T!['['] => {
                let m = lhs.precede(p);
                index_brackets(p);
                m.complete(p, INDEX_EXPR)
            }
            T![++] | T![--] => {
                let m = lhs.precede(p);
                p.bump_any();
                m.complete(p, POSTFIX_EXPR)
            }
            T![.] => {
                let m = lhs.precede(p);
                p.bump(T![.]);
                if p.at(IDENT) {
                    let name = p.start();
                    p.bump(IDENT);
                    name.complete(p, NAME_REF);
                } else {
                    p.error("expected a field name after `.`");
                }
                m.complete(p, FIELD_EXPR)
            }
            _ => return lhs,
        };
    }
}

/// The tokens that start an entry of `a[...]`, and `..`, which starts another language's range.
const INDEX_FIRST: TokenSet = EXPR_FIRST.union(TokenSet::new(&[T![:], T![...], T![none], T![..]]));

/// `[i, j:k, ..., none]`: the entries of an index, separated by commas.
fn index_brackets(p: &mut Parser<'_>) {
    let empty = p.nth(1) == T![']'];
    delimited(p, T!['['], T![']'], INDEX_FIRST, "an index", index_entry);
    if empty {
        p.error("expected an index inside `[]`");
    }
}

/// One entry of `a[...]`: an index `i`, a slice `i:j:s` (any part may be omitted), `...` or
/// `none`. A range `i..j` is reported and read as the slice `i:j`.
fn index_entry(p: &mut Parser<'_>) {
    if p.at(T![..]) {
        habits::range_in_index(p);
    }
    match p.current() {
        T![...] => {
            let m = p.start();
            p.bump(T![...]);
            m.complete(p, ELLIPSIS);
        }
        T![none] => {
            let m = p.start();
            p.bump(T![none]);
            m.complete(p, NEW_AXIS);
        }
        T![:] => {
            let m = p.start();
            slice_rest(p);
            m.complete(p, SLICE);
        }
        _ => {
            let Some(start) = expr_bp(p, 1) else { return };
            if p.at(T![..]) {
                habits::range_in_index(p);
            }
            if p.at(T![:]) {
                let m = start.precede(p);
                slice_rest(p);
                m.complete(p, SLICE);
            }
        }
    }
}

/// The part of a slice from its first colon: `:j`, `:`, `:j:s`, `::s`.
fn slice_rest(p: &mut Parser<'_>) {
    p.bump(T![:]);
    if p.at_ts(EXPR_FIRST) {
        expr(p);
    }
    if p.eat(T![:]) && p.at_ts(EXPR_FIRST) {
        expr(p);
    }
}

fn arg_list(p: &mut Parser<'_>) {
    let m = p.start();
    let first = EXPR_FIRST.union(CAST_CALL_FIRST).union(TokenSet::new(&[T!['{'], T![none]]));
    delimited(p, T!['('], T![')'], first, "an argument", |p| {
        if p.at(T!['{']) {
            habits::brace_literal(p, true);
        } else {
            expr(p);
        }
    });
    m.complete(p, ARG_LIST);
}

/// Whether a name starts a record literal: `Linear { w: ... }` or `Empty {}`.
fn at_record_lit(p: &mut Parser<'_>) -> bool {
    p.nth_at(1, T!['{']) && (p.nth_at(2, IDENT) && p.nth_at(3, T![:]) || p.nth_at(2, T!['}']))
}

/// `Linear { w: zeros([2, 3]), b: zeros([3]) }`
fn record_lit(p: &mut Parser<'_>) -> CompletedMarker {
    let m = p.start();
    let name = p.start();
    p.bump(IDENT);
    name.complete(p, NAME_REF);
    delimited(p, T!['{'], T!['}'], TokenSet::new(&[IDENT]), "a field", |p| {
        let field = p.start();
        let name = p.start();
        p.bump(IDENT);
        name.complete(p, NAME_REF);
        p.expect(T![:]);
        if p.at_ts(EXPR_FIRST) {
            expr(p);
        } else {
            p.err_recover("expected the field's value", EXPR_RECOVERY);
        }
        field.complete(p, RECORD_FIELD);
    });
    m.complete(p, RECORD_LIT)
}

fn atom(p: &mut Parser<'_>) -> Option<CompletedMarker> {
    let kind = p.current();
    if LITERAL_FIRST.contains(kind) {
        let m = p.start();
        p.bump_any();
        return Some(m.complete(p, LITERAL));
    }
    let done = match kind {
        IDENT if at_record_lit(p) => record_lit(p),
        IDENT => path_expr(p),
        T!['('] => {
            let m = p.start();
            p.bump(T!['(']);
            if p.at_ts(EXPR_FIRST) {
                expr(p);
            } else {
                p.err_recover("expected an expression", EXPR_RECOVERY);
            }
            if p.at(T![,]) {
                // `(a, b)`: a tuple.
                while p.eat(T![,]) && !p.at(T![')']) {
                    if p.at_ts(EXPR_FIRST) {
                        expr(p);
                    } else {
                        p.err_recover("expected an expression", EXPR_RECOVERY);
                        break;
                    }
                }
                p.expect(T![')']);
                return Some(m.complete(p, TUPLE_EXPR));
            }
            p.expect(T![')']);
            m.complete(p, PAREN_EXPR)
        }
        T!['['] => {
            let m = p.start();
            if p.enter() {
                delimited(p, T!['['], T![']'], EXPR_FIRST, "a tensor element", |p| {
                    expr(p);
                });
                p.leave();
            }
            m.complete(p, TENSOR_LIT)
        }
        T![none] => {
            p.err_recover(
                "`none` is not a value: it only appears as an entry of an index, where it adds a \
                 new axis of extent 1 (`t[:, none]`)",
                EXPR_RECOVERY,
            );
            return None;
        }
        _ => {
            p.err_recover("expected an expression", EXPR_RECOVERY);
            return None;
        }
    };
    Some(done)
}

/// A name used as an expression.
pub(super) fn path_expr(p: &mut Parser<'_>) -> CompletedMarker {
    let m = p.start();
    let name = p.start();
    p.bump(IDENT);
    name.complete(p, NAME_REF);
    m.complete(p, PATH_EXPR)
}

/// A bracketed, comma-separated list: `(a, b)`, `[1, 2]`, a parameter list. A missing comma
/// between two elements is reported (with the comma as its fix) and the list goes on, so
/// `[1 2]` still parses as two elements.
pub(super) fn delimited(
    p: &mut Parser<'_>,
    open: SyntaxKind,
    close: SyntaxKind,
    first: TokenSet,
    what: &str,
    mut element: impl FnMut(&mut Parser<'_>),
) {
    p.bump(open);
    while !p.at(close) && !p.at_end() {
        if p.at(T![,]) {
            p.error(format!("expected {what} before `,`"));
            p.bump(T![,]);
            continue;
        }
        if !p.at_ts(first) {
            let recovery = EXPR_RECOVERY.union(TokenSet::new(&[close]));
            if p.at_ts(recovery) {
                p.error(format!("expected {what}"));
                break;
            }
            p.err_and_bump(format!("expected {what}"));
            continue;
        }
        element(p);
        if p.at(close) {
            break;
        }
        if !p.eat(T![,]) {
            if p.at_ts(first) {
                p.expect(T![,]);
                continue;
            }
            break;
        }
    }
    p.expect(close);
}
