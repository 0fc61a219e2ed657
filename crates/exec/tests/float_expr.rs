//! Compiled float expressions (`Instr::FloatExpr`) against the instructions they stand for: the
//! same programs lowered with and without them print the same values and gradients, bit for bit,
//! and leave the same tape words per operation.

use exec::code::Instr;
use exec::interp::{Limits, Machine};
use exec::lower::{Options, lower_program_with};

mod common;
use common::{load, scratch};

/// What a run printed, its tape bytes per operation, and how many float expressions the program
/// holds.
fn run(dir: &std::path::Path, text: &str, float_exprs: bool) -> (String, Option<f64>, usize) {
    let (db, main) = load(dir, text);
    let program = lower_program_with(&db, main, Options { float_exprs })
        .unwrap_or_else(|err| panic!("{err}"));
    let exprs = program
        .units
        .iter()
        .flat_map(|unit| &unit.code)
        .filter(|instr| matches!(instr, Instr::FloatExpr { .. }))
        .count();
    let mut out = Vec::new();
    let mut machine =
        Machine::new(&program, &mut out, Limits::default()).unwrap_or_else(|err| panic!("{err}"));
    let result = machine.run();
    let bytes = machine.tape_ref().bytes_per_operation();
    drop(machine);
    let mut out = String::from_utf8_lossy(&out).into_owned();
    if let Err(error) = result {
        out.push_str(&format!("error: {error}\n"));
    }
    (out, bytes, exprs)
}

/// Runs `text` both ways and checks that they agree; returns the output and the number of
/// compiled expressions.
fn agree(dir: &std::path::Path, text: &str) -> (String, usize) {
    let (fused, fused_bytes, exprs) = run(dir, text, true);
    let (plain, plain_bytes, none) = run(dir, text, false);
    assert_eq!(none, 0);
    assert_eq!(fused, plain, "{text}");
    assert_eq!(fused_bytes.map(f64::to_bits), plain_bytes.map(f64::to_bits), "{text}");
    (fused, exprs)
}

/// A small deterministic generator (64-bit LCG, high bits).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A random float expression over the `var`s `p` and `q`, the float `r`, the int `n` and
/// literals.
fn expression(rng: &mut Lcg, depth: u32) -> String {
    if depth == 0 || rng.below(5) == 0 {
        return ["p", "q", "r", "n", "0.5", "2.0", "p", "q"][rng.below(8) as usize].to_owned();
    }
    match rng.below(10) {
        0..=4 => {
            let op = ["+", "-", "*", "/"][rng.below(4) as usize];
            let (a, b) = (expression(rng, depth - 1), expression(rng, depth - 1));
            format!("({a} {op} {b})")
        }
        5..=7 => {
            let f = ["sin", "cos", "exp", "tanh", "sqrt", "abs", "sigmoid", "ln"];
            let f = f[rng.below(f.len() as u64) as usize];
            format!("{f}({})", expression(rng, depth - 1))
        }
        8 => format!("-({})", expression(rng, depth - 1)),
        _ => {
            let f = ["pow", "max", "min"][rng.below(3) as usize];
            let (a, b) = (expression(rng, depth - 1), expression(rng, depth - 1));
            format!("{f}({a}, {b})")
        }
    }
}

#[test]
fn random_expressions_agree_with_their_instructions() {
    let dir = scratch("float-expr-random");
    let mut rng = Lcg(0x5eed);
    let mut compiled = 0;
    for _ in 0..150 {
        let y = expression(&mut rng, 4);
        // Tracked (two `var`s, one of them possibly unused), then plain.
        let tracked = format!(
            "var float p = 0.7;\nvar float q = -1.3;\nfloat r = 2.5;\nint n = 3;\nfloat y = {y};\nfloat z = {y};\nbackward(y + z * 0.5);\nprint(y, grad(p), grad(q), grad(y));\n"
        );
        let plain = format!(
            "float p = 0.7;\nfloat q = -1.3;\nfloat r = 2.5;\nint n = 3;\nfloat y = {y};\nprint(y);\n"
        );
        // Inside transforms: one level (compiled), and nested levels (the fallback).
        let transformed = format!(
            "function float g(float p, float q) {{\n    float r = 2.5;\n    int n = 3;\n    return {y};\n}}\nprint(grad(g)(0.7, -1.3), grad(g, 1)(0.7, -1.3), grad(grad(g))(0.7, -1.3));\n"
        );
        compiled += agree(&dir, &tracked).1 + agree(&dir, &plain).1;
        agree(&dir, &transformed);
    }
    // Most of the expressions have two operations or more.
    assert!(compiled > 200, "{compiled} compiled expressions");
}

#[test]
fn loops_and_transforms_agree_with_their_instructions() {
    let dir = scratch("float-expr-loops");
    // A chain of 1000 iterations, a function differentiated at two levels (its expression mixes
    // a `var` of the program level with the transform's argument, which falls back), a third
    // tracked operand (which falls back), and an `int` read with a tracked float.
    let text = "var float x0 = 0.5;\nvar float s = 0.25;\nvar float t = 1.5;\nfunction float f(float u, float c) {\n    return u * c + sin(u) * c;\n}\nfloat x = x0;\nloop (int i = 0; i < 1000; i++) {\n    x = x * 0.9 + sin(x) * 0.1;\n}\nfloat w = x * s + t * x0 - s / t;\nint k = 2;\nfloat v = x * k + cos(x) * k;\nbackward(x + w + v);\nprint(x, grad(x0), grad(s), grad(t));\nprint(grad(f)(0.3, s), grad(grad(f))(0.3, 0.25), grad(f, 1)(t, s));\n";
    let (out, exprs) = agree(&dir, text);
    assert!(exprs >= 3, "{exprs} compiled expressions");
    let mut x = 0.5f64;
    for _ in 0..1000 {
        x = x * 0.9 + x.sin() * 0.1;
    }
    assert!(out.starts_with(&format!("{x:?} ")), "{out}");
}

#[test]
fn a_jump_into_a_tree_splits_it() {
    // The `?:` makes a jump target between the operations, which must not share an expression.
    let dir = scratch("float-expr-jump");
    let text = "var float p = 0.5;\nfloat y = (p > 0.0 ? p * 2.0 : p * 3.0) * sin(p) + p;\nbackward(y);\nprint(y, grad(p));\n";
    let (out, _) = agree(&dir, text);
    let p = 0.5f64;
    let y = p * 2.0 * p.sin() + p;
    assert!(out.starts_with(&format!("{y:?} ")), "{out}");
}

/// Issue 23: `x * i` with `x` tracked and `i` an `int` costs what `x * (float)i` costs, step by
/// step and compiled: the same values and gradients, bit for bit, and the same tape words per
/// operation (the general operation it used to take recorded far more).
#[test]
fn an_int_beside_a_tracked_float_costs_what_its_cast_costs() {
    let dir = scratch("float-expr-int");
    let program = |term: &str| {
        format!(
            "var float x = 0.5;\nfloat s = 0.0;\nloop (int i = 0; i < 1000; i++) {{\n    s = s + {term};\n    s = s + sin(x) * i;\n    s += i;\n}}\nbackward(s);\nprint(s, grad(x));\n"
        )
    };
    let implicit = program("x * i");
    let cast = program("x * (float)i");
    for float_exprs in [true, false] {
        let (out, bytes, _) = run(&dir, &implicit, float_exprs);
        let (cast_out, cast_bytes, _) = run(&dir, &cast, float_exprs);
        assert_eq!(out, cast_out);
        assert_eq!(bytes.map(f64::to_bits), cast_bytes.map(f64::to_bits), "{float_exprs}");
    }
    // s = sum over i of (x + sin(x) + 1) * i, so ds/dx = (1 + cos(x)) * 499500.
    let (out, _) = agree(&dir, &implicit);
    let x = 0.5f64;
    let s: f64 = (0..1000).fold(0.0, |s, i| {
        let i = f64::from(i);
        let s = s + x * i;
        let s = s + x.sin() * i;
        s + i
    });
    let (value, gradient) = out.trim().split_once(' ').unwrap_or_else(|| panic!("{out}"));
    assert_eq!(value, format!("{s:?}"), "{out}");
    let gradient: f64 = gradient.parse().unwrap_or_else(|err| panic!("{out}: {err}"));
    let expected = (1.0 + x.cos()) * 499500.0;
    assert!((gradient - expected).abs() <= 1e-12 * expected, "{gradient} against {expected}");
}

/// One float expression on plain operands, on operands tracked at one level (the program tape,
/// and a transform) and on operands tracked at two levels (a transform of a transform, which the
/// general operations record): the value is the same bits every way; the first derivative is the
/// same bits on the program tape and in `grad(f)`, and agrees to rounding on doubly tracked
/// operands (the general operations' backward multiplies the partials in another order than the
/// fused scalar records); the second derivative is the same bits through `grad(grad(f))` and
/// `value_and_grad(grad(f))`.
#[test]
fn plain_tracked_and_doubly_tracked_operands_agree() {
    let dir = scratch("float-expr-levels");
    let mut rng = Lcg(0x1e7e15);
    let number = |text: &str| -> f64 { text.parse().unwrap_or_else(|err| panic!("{text}: {err}")) };
    let close = |a: f64, b: f64| {
        a.to_bits() == b.to_bits()
            || (a.is_nan() && b.is_nan())
            || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    };
    let mut checked = 0;
    for _ in 0..60 {
        let y = expression(&mut rng, 3);
        // `backward` needs a `var` to differentiate.
        if !y.split(|c: char| !c.is_alphanumeric()).any(|name| name == "p" || name == "q") {
            continue;
        }
        checked += 1;
        let text = format!(
            "function float g(float p, float q) {{\n    float r = 2.5;\n    int n = 3;\n    return {y};\n}}\nfunction float dg(float p, float q) {{\n    return grad(g)(p, q);\n}}\nfunction float value(float p, float q) {{\n    (float v, float d) = value_and_grad(g)(p, q);\n    return v;\n}}\nfloat p0 = 0.7;\nfloat q0 = -1.3;\nvar float p = 0.7;\nvar float q = -1.3;\nfloat y = g(p, q);\nbackward(y);\n(float v2, float d2) = value_and_grad(value)(p0, q0);\n(float d1, float dd) = value_and_grad(dg)(p0, q0);\nprint(g(p0, q0), y, v2);\nprint(grad(p), grad(g)(p0, q0), d2, d1);\nprint(dd, grad(grad(g))(p0, q0));\n"
        );
        let (out, _) = agree(&dir, &text);
        let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split(' ').collect()).collect();
        let [values, firsts, seconds] = &lines[..] else { panic!("{y}: {out}") };
        assert!(values.iter().all(|v| v == &values[0]), "values of {y}: {out}");
        assert_eq!(firsts[0], firsts[1], "first derivatives of {y}: {out}");
        for doubly in &firsts[2..] {
            assert!(close(number(firsts[0]), number(doubly)), "first derivatives of {y}: {out}");
        }
        assert_eq!(seconds[0], seconds[1], "second derivatives of {y}: {out}");
    }
    assert!(checked >= 40, "{checked} expressions");
}
