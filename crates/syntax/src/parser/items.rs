//! Grammar rules for the file, items (functions, tests, imports), statements and types.

use super::{
    Parser, TokenSet,
    expressions::{EXPR_FIRST, at_expr, delimited, expr},
    habits,
};
use crate::{
    SyntaxKind::{self, *},
    T,
};

pub(super) const TYPE_FIRST: TokenSet =
    TokenSet::new(&[T![int], T![float], T![char], T![bool], T![Bool], T![void], T![Tensor]]);

pub(super) const DECL_FIRST: TokenSet = TYPE_FIRST.union(TokenSet::new(&[T![var], T![cns]]));

/// Tokens that begin a statement or item: an expression that meets one stops before it.
pub(super) const STMT_RECOVERY: TokenSet = DECL_FIRST.union(TokenSet::new(&[
    T![;],
    T!['{'],
    T!['}'],
    T![if],
    T![elif],
    T![else],
    T![loop],
    T![break],
    T![continue],
    T![return],
    T![function],
    T![test],
    T![import],
]));

pub(super) fn source_file(p: &mut Parser<'_>) {
    let m = p.start();
    while !p.at_end() {
        if p.at(T!['}']) {
            p.err_and_bump("unmatched `}`");
            continue;
        }
        item(p, true);
    }
    m.complete(p, SOURCE_FILE);
}

fn item(p: &mut Parser<'_>, top_level: bool) {
    if p.at(IDENT) && p.nth_at(1, T!['[']) && typed_name_ahead(p) {
        // `Linear[784][256] l = ...;`: a declaration of a record with its sizes.
        var_decl(p, true);
        return;
    }
    if p.at(IDENT) && matches!(habits::ident_stmt(p, top_level), habits::Recognised::Parsed) {
        return;
    }
    if p.at_ts(TYPE_FIRST) && habits::c_function_ahead(p) {
        if !top_level {
            p.error("`function` is only allowed at the top level of a file");
        }
        habits::c_function(p);
        return;
    }
    let kind = p.current();
    if !top_level && matches!(kind, T![function] | T![test] | T![import] | T![struct]) {
        let what = kind.text().unwrap_or("item");
        p.error(format!("`{what}` is only allowed at the top level of a file"));
    }
    match kind {
        T![function] => fn_def(p),
        T![test] => test_def(p),
        T![import] => import(p),
        T![struct] => struct_def(p),
        _ => stmt(p),
    }
}

fn fn_def(p: &mut Parser<'_>) {
    let m = p.start();
    p.bump(T![function]);
    fn_def_rest(p);
    m.complete(p, FN_DEF);
}

/// A function definition after its keyword: return type, name, parameters and body.
pub(super) fn fn_def_rest(p: &mut Parser<'_>) {
    if p.at(T!['(']) {
        let ret = p.start();
        tuple_type(p);
        ret.complete(p, RET_TYPE);
    } else if p.at_ts(TYPE_FIRST) || p.at(IDENT) && typed_name_ahead(p) {
        let ret = p.start();
        type_or_word(p);
        ret.complete(p, RET_TYPE);
    } else if p.at(IDENT) && p.nth_at(1, T!['(']) {
        p.mistake(
            crate::SyntaxErrorKind::ForeignSyntax,
            "a Nabla function declares its return type before its name, as in `function float f(float x)`",
            Some("a function that returns nothing is `function void f(...)`".to_owned()),
            None,
        );
    } else {
        p.error("expected the return type, such as `float` or `void`");
    }
    name(p, "expected the function's name");
    if p.at(T!['(']) {
        param_list(p);
    } else {
        p.expect(T!['(']);
    }
    if p.at(T![derivative]) {
        derivative_clause(p);
    }
    body_block(p, "a function");
}

/// `(float, Tensor[k][2])`: the results of a function of several results.
fn tuple_type(p: &mut Parser<'_>) {
    let m = p.start();
    delimited(p, T!['('], T![')'], TYPE_FIRST.union(TokenSet::new(&[IDENT])), "a type", |p| {
        if p.at_ts(TYPE_FIRST) || p.at(IDENT) {
            type_or_word(p);
        } else {
            p.error("expected a type, such as `float` or `Tensor[n]`");
        }
    });
    m.complete(p, TUPLE_TYPE);
}

/// `derivative rule` between a function's parameters and its body: the function that gives
/// this one's derivative.
fn derivative_clause(p: &mut Parser<'_>) {
    let m = p.start();
    p.bump(T![derivative]);
    if p.at(IDENT) {
        let name = p.start();
        p.bump(IDENT);
        name.complete(p, NAME_REF);
    } else {
        p.error("expected the name of the function that gives the derivative, as in `derivative f_rule`");
    }
    m.complete(p, DERIVATIVE_CLAUSE);
}

fn param_list(p: &mut Parser<'_>) {
    let m = p.start();
    delimited(p, T!['('], T![')'], DECL_FIRST.union(TokenSet::new(&[IDENT])), "a parameter", param);
    m.complete(p, PARAM_LIST);
}

fn param(p: &mut Parser<'_>) {
    typed_name(p, PARAM, "expected the parameter's type", "expected the parameter's name");
}

/// Whether a name here is a type followed by a declared name: `Linear l`, `Linear[n][m] l`.
fn typed_name_ahead(p: &Parser<'_>) -> bool {
    typed_name_after(p, 0)
}

/// Whether the name at `at` is a type followed by a declared name.
fn typed_name_after(p: &Parser<'_>, at: usize) -> bool {
    let mut i = at + 1;
    let mut depth = 0usize;
    loop {
        match p.peek_kind(i) {
            T!['['] => depth += 1,
            T![']'] if depth > 0 => depth -= 1,
            IDENT if depth == 0 => return true,
            EOF | T![;] | T!['{'] | T!['}'] => return false,
            _ if depth == 0 => return false,
            _ => {}
        }
        i += 1;
    }
}

/// A parameter or a binding of a destructuring declaration: `var Tensor w[n][m]`.
fn typed_name(p: &mut Parser<'_>, kind: SyntaxKind, missing_type: &str, missing_name: &str) {
    let m = p.start();
    qualifier(p);
    if p.at_ts(TYPE_FIRST) || p.at(IDENT) && typed_name_ahead(p) {
        type_or_word(p);
    } else {
        p.error(missing_type);
    }
    name(p, missing_name);
    dims(p);
    m.complete(p, kind);
}

/// `struct Linear { Tensor w[n][m]; Tensor b[m]; }`
fn struct_def(p: &mut Parser<'_>) {
    let m = p.start();
    p.bump(T![struct]);
    name(p, "expected the record's name, as in `struct Linear { ... }`");
    if p.at(T!['{']) {
        p.bump(T!['{']);
        while !p.at(T!['}']) && !p.at_end() {
            if p.at_ts(TYPE_FIRST) || p.at(IDENT) {
                field_def(p);
            } else if p.at_ts(STMT_RECOVERY) && !p.at(T![;]) {
                break;
            } else {
                p.err_and_bump("expected a field, as in `Tensor w[n][m];`");
            }
        }
        p.expect(T!['}']);
    } else {
        p.error("expected `{`: a record's fields are declared in braces");
    }
    m.complete(p, STRUCT_DEF);
}

/// `Tensor w[n][m];`
fn field_def(p: &mut Parser<'_>) {
    let m = p.start();
    type_or_word(p);
    name(p, "expected the field's name");
    dims(p);
    p.expect(T![;]);
    m.complete(p, FIELD_DEF);
}

fn test_def(p: &mut Parser<'_>) {
    let m = p.start();
    p.bump(T![test]);
    if !p.eat(STRING) {
        p.error("expected the test's name as a string, as in `test \"adds\" { ... }`");
    }
    body_block(p, "a test");
    m.complete(p, TEST_DEF);
}

fn import(p: &mut Parser<'_>) {
    let m = p.start();
    p.bump(T![import]);
    if p.at(IDENT) {
        habits::import_module(p);
        m.complete(p, IMPORT);
        return;
    }
    if !p.eat(STRING) {
        let message = "expected the imported file's path as a string, as in `import \"lib.nb\";`";
        if p.at(T![;]) { p.error(message) } else { p.err_and_bump(message) }
    }
    p.expect(T![;]);
    m.complete(p, IMPORT);
}

/// A block that a construct requires: braces are mandatory in Nabla.
pub(super) fn body_block(p: &mut Parser<'_>, owner: &str) {
    if p.at(T!['{']) {
        block(p);
    } else {
        p.error(format!("expected `{{`: the body of {owner} is a block in braces"));
    }
}

pub(super) fn block(p: &mut Parser<'_>) {
    let m = p.start();
    p.bump(T!['{']);
    if p.enter() {
        while !p.at(T!['}']) && !p.at_end() {
            item(p, false);
        }
        p.leave();
    }
    p.expect(T!['}']);
    m.complete(p, BLOCK);
}

fn stmt(p: &mut Parser<'_>) {
    match p.current() {
        T!['{'] => block(p),
        T![if] => if_stmt(p),
        T![loop] => loop_stmt(p),
        T![break] => keyword_stmt(p, T![break], BREAK_STMT),
        T![continue] => keyword_stmt(p, T![continue], CONTINUE_STMT),
        T![return] => return_stmt(p),
        T![elif] | T![else] => {
            let what = p.current().text().unwrap_or("else");
            p.err_and_bump(format!("`{what}` without a matching `if`"));
        }
        kind if DECL_FIRST.contains(kind) => var_decl(p, true),
        T!['('] if at_tuple_decl(p) => tuple_decl(p),
        T![;] => {
            let m = p.start();
            p.bump(T![;]);
            m.complete(p, EXPR_STMT);
        }
        kind if EXPR_FIRST.contains(kind) => {
            let m = p.start();
            expr(p);
            p.expect(T![;]);
            m.complete(p, EXPR_STMT);
        }
        _ => p.err_and_bump("expected a statement"),
    }
}

/// Whether `(` starts a destructuring declaration rather than an expression: a qualifier, or a
/// type followed by a name (`(float)x` is a cast), a record type included (`(Mlp g, ...)`).
fn at_tuple_decl(p: &mut Parser<'_>) -> bool {
    matches!(p.nth(1), T![var] | T![cns])
        || TYPE_FIRST.contains(p.nth(1)) && p.nth_at(2, IDENT)
        || p.nth_at(1, IDENT) && typed_name_after(p, 1)
}

/// `(float loss, Tensor p[k][2]) = step(x);`
fn tuple_decl(p: &mut Parser<'_>) {
    let m = p.start();
    delimited(p, T!['('], T![')'], DECL_FIRST.union(TokenSet::new(&[IDENT])), "a variable", |p| {
        typed_name(
            p,
            TUPLE_BINDING,
            "expected the variable's type, as in `(float loss, Tensor p[n]) = f(x);`",
            "expected a variable name",
        );
    });
    if p.expect(T![=]) {
        let init = p.start();
        if at_expr(p) {
            expr(p);
        } else {
            p.err_recover("expected the call whose results are destructured", STMT_RECOVERY);
        }
        init.complete(p, INITIALIZER);
    }
    p.expect(T![;]);
    m.complete(p, TUPLE_DECL);
}

fn keyword_stmt(p: &mut Parser<'_>, keyword: SyntaxKind, kind: SyntaxKind) {
    let m = p.start();
    p.bump(keyword);
    p.expect(T![;]);
    m.complete(p, kind);
}

fn return_stmt(p: &mut Parser<'_>) {
    let m = p.start();
    p.bump(T![return]);
    if at_expr(p) {
        expr(p);
    } else if p.at(T!['{']) {
        habits::brace_literal(p, true);
    }
    p.expect(T![;]);
    m.complete(p, RETURN_STMT);
}

fn if_stmt(p: &mut Parser<'_>) {
    let m = p.start();
    p.bump(T![if]);
    condition(p, "if");
    body_block(p, "an `if`");
    loop {
        habits::else_branch_word(p);
        if p.at(T![elif]) {
            let branch = p.start();
            p.bump(T![elif]);
            condition(p, "elif");
            body_block(p, "an `elif`");
            branch.complete(p, ELIF_BRANCH);
        } else if p.at(T![else]) && p.nth_at(1, T![if]) {
            // A C habit; parsed as the `elif` it means so the rest of the chain still parses.
            let branch = p.start();
            p.mistake(
                crate::SyntaxErrorKind::ForeignSyntax,
                "Nabla writes `elif`, not `else if`",
                None,
                Some(crate::fixes::FixPlan::ElseIf),
            );
            p.bump(T![else]);
            p.bump(T![if]);
            condition(p, "elif");
            body_block(p, "an `elif`");
            branch.complete(p, ELIF_BRANCH);
        } else {
            break;
        }
    }
    if p.at(T![else]) {
        let branch = p.start();
        p.bump(T![else]);
        body_block(p, "an `else`");
        branch.complete(p, ELSE_BRANCH);
    }
    m.complete(p, IF_STMT);
}

fn condition(p: &mut Parser<'_>, owner: &str) {
    let m = p.start();
    if !p.at(T!['(']) && p.at_ts(EXPR_FIRST) {
        habits::condition_without_parens(p, owner);
        m.complete(p, CONDITION);
        return;
    }
    p.expect(T!['(']);
    if p.at_ts(EXPR_FIRST) {
        expr(p);
    } else {
        p.err_recover("expected a condition", STMT_RECOVERY.union(TokenSet::new(&[T![')']])));
    }
    p.expect(T![')']);
    m.complete(p, CONDITION);
}

fn loop_stmt(p: &mut Parser<'_>) {
    let m = p.start();
    p.bump(T![loop]);
    if p.at(T!['{']) {
        // Rust's endless `loop { ... }`.
        p.mistake(
            crate::SyntaxErrorKind::ForeignSyntax,
            "Nabla writes an endless loop as `loop (;;) { ... }`",
            None,
            Some(crate::fixes::FixPlan::InsertBefore("(;;) ")),
        );
        block(p);
        m.complete(p, LOOP_STMT);
        return;
    }
    p.expect(T!['(']);
    if p.at_ts(DECL_FIRST) {
        let init = p.start();
        var_decl(p, false);
        init.complete(p, LOOP_INIT);
    } else if p.at_ts(EXPR_FIRST) {
        let init = p.start();
        expr(p);
        init.complete(p, LOOP_INIT);
    }
    p.expect(T![;]);
    if p.at_ts(EXPR_FIRST) {
        let cond = p.start();
        expr(p);
        cond.complete(p, LOOP_COND);
    }
    p.expect(T![;]);
    if p.at_ts(EXPR_FIRST) {
        let step = p.start();
        expr(p);
        step.complete(p, LOOP_STEP);
    }
    p.expect(T![')']);
    body_block(p, "a `loop`");
    m.complete(p, LOOP_STMT);
}

/// `var Tensor w[3][1] = randn([3, 1]), v;` In a loop header the `;` belongs to the loop.
pub(super) fn var_decl(p: &mut Parser<'_>, with_semicolon: bool) {
    let m = p.start();
    qualifier(p);
    if p.at_ts(TYPE_FIRST) || p.at(IDENT) && typed_name_ahead(p) {
        type_or_word(p);
    } else if p.at(IDENT) && matches!(p.nth(1), T![=] | T![;] | T![,]) {
        // JavaScript's `var x = 1;`.
        p.mistake(
            crate::SyntaxErrorKind::ForeignSyntax,
            "a Nabla declaration needs its type after the qualifier, as in `var float x = 1.0;`",
            Some("`var` marks a value that gradients are computed for".to_owned()),
            None,
        );
    } else {
        p.error("expected a type after the qualifier, such as `float` or `Tensor`");
    }
    declarator(p);
    while p.eat(T![,]) {
        declarator(p);
    }
    if with_semicolon {
        p.expect(T![;]);
    }
    m.complete(p, VAR_DECL);
}

fn declarator(p: &mut Parser<'_>) {
    let m = p.start();
    name(p, "expected a variable name");
    declarator_rest(p);
    m.complete(p, DECLARATOR);
}

/// A declarator after its name: dimensions and initializer.
pub(super) fn declarator_rest(p: &mut Parser<'_>) {
    dims(p);
    if p.eat(T![=]) {
        let init = p.start();
        if at_expr(p) {
            expr(p);
        } else if p.at(T!['{']) {
            habits::brace_literal(p, true);
        } else {
            p.err_recover("expected an initializer", STMT_RECOVERY);
        }
        init.complete(p, INITIALIZER);
    }
}

/// A type, or an identifier where a type belongs (`flaot`, `double`, `Foo`): reported, and read
/// as the type it stands for.
fn type_or_word(p: &mut Parser<'_>) {
    if p.at(IDENT) && habits::is_type_word(p) && habits::type_word(p) {
        // Reported, with no Nabla type to read it as: an unknown type.
        let m = p.start();
        p.bump_any();
        m.complete(p, PRIM_TYPE);
        return;
    }
    ty(p);
}

pub(super) fn qualifier(p: &mut Parser<'_>) {
    if p.at(T![var]) || p.at(T![cns]) {
        let m = p.start();
        p.bump_any();
        m.complete(p, QUALIFIER);
    }
}

/// A type: `float`, `Tensor`, `Tensor[n][3]`, `Linear`. The caller checks that one starts here.
pub(super) fn ty(p: &mut Parser<'_>) {
    let m = p.start();
    if p.eat(T![Tensor]) {
        dims(p);
        m.complete(p, TENSOR_TYPE);
    } else if p.at(IDENT) {
        let name = p.start();
        p.bump(IDENT);
        name.complete(p, NAME_REF);
        dims(p);
        m.complete(p, RECORD_TYPE);
    } else {
        p.bump_any();
        m.complete(p, PRIM_TYPE);
    }
}

fn dims(p: &mut Parser<'_>) {
    while p.at(T!['[']) {
        let m = p.start();
        p.bump(T!['[']);
        if !p.at(T![']']) {
            if p.at_ts(EXPR_FIRST) {
                expr(p);
            } else {
                p.err_recover(
                    "expected a dimension",
                    STMT_RECOVERY.union(TokenSet::new(&[T![']']])),
                );
            }
        }
        p.expect(T![']']);
        m.complete(p, DIM);
    }
}

pub(super) fn name(p: &mut Parser<'_>, message: &str) {
    if p.at(IDENT) {
        let m = p.start();
        p.bump(IDENT);
        m.complete(p, NAME);
    } else if p.current().is_keyword()
        && matches!(p.nth(1), T![=] | T![;] | T![,] | T!['['] | T!['('] | T![')'])
    {
        let keyword = p.current().text().unwrap_or("keyword");
        p.err_and_bump(format!("`{keyword}` is a keyword and cannot be used as a name"));
    } else {
        p.err_recover(
            message,
            STMT_RECOVERY.union(TokenSet::new(&[T!['('], T![')'], T![=], T![,], T!['[']])),
        );
    }
}
