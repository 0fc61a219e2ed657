//! Scalar float arithmetic, plain and tracked, against fixed results: random expressions print
//! the values and derivatives, bit for bit, and leave the tape words per operation that they did
//! when trees of float operations were still compiled into one instruction (issue 23; the
//! expected files were written by that build, c16f6d8), and the derivatives agree across the
//! program's tape, `grad`, `grad(grad)` and `value_and_grad`.

use std::fmt::Write;

use exec::interp::{Limits, Machine};
use exec::lower::lower_program;
use expect_test::{expect, expect_file};

mod common;
use common::{load, scratch};

/// What a run printed, and its tape bytes per operation.
fn run(dir: &std::path::Path, text: &str) -> (String, Option<f64>) {
    let (db, main) = load(dir, text);
    let program = lower_program(&db, main).unwrap_or_else(|err| panic!("{err}"));
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
    (out, bytes)
}

/// Runs `text`, adds its output and tape bytes per operation to `transcript` under `title`, and
/// returns the output.
fn record(transcript: &mut String, title: &str, dir: &std::path::Path, text: &str) -> String {
    let (out, bytes) = run(dir, text);
    let bytes = bytes.map_or("-".to_owned(), |bytes| format!("{bytes:?}"));
    let _ = write!(transcript, "--- {title}\n{out}tape bytes per operation: {bytes}\n");
    out
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
fn random_expressions_print_what_they_printed() {
    let dir = scratch("scalar-float-random");
    let mut rng = Lcg(0x5eed);
    let mut transcript = String::new();
    for _ in 0..150 {
        let y = expression(&mut rng, 4);
        // Tracked (two `var`s, one of them possibly unused), plain, and inside transforms of one
        // and two levels.
        let tracked = format!(
            "var float p = 0.7;\nvar float q = -1.3;\nfloat r = 2.5;\nint n = 3;\nfloat y = {y};\nfloat z = {y};\nbackward(y + z * 0.5);\nprint(y, grad(p), grad(q), grad(y));\n"
        );
        let plain = format!(
            "float p = 0.7;\nfloat q = -1.3;\nfloat r = 2.5;\nint n = 3;\nfloat y = {y};\nprint(y);\n"
        );
        let transformed = format!(
            "function float g(float p, float q) {{\n    float r = 2.5;\n    int n = 3;\n    return {y};\n}}\nprint(grad(g)(0.7, -1.3), grad(g, 1)(0.7, -1.3), grad(grad(g))(0.7, -1.3));\n"
        );
        let _ = writeln!(transcript, "=== {y}");
        for (name, text) in
            [("tracked", &tracked), ("plain", &plain), ("transformed", &transformed)]
        {
            record(&mut transcript, name, dir.path(), text);
        }
    }
    expect_file!["scalar_float/random.txt"].assert_eq(&transcript);
}

#[test]
fn a_loop_and_transforms_print_what_they_printed() {
    let dir = scratch("scalar-float-loops");
    // A chain of 1000 iterations, a function differentiated at two levels (its expression mixes
    // a `var` of the program level with the transform's argument), a third tracked operand, and
    // an `int` read with a tracked float.
    let text = "var float x0 = 0.5;\nvar float s = 0.25;\nvar float t = 1.5;\nfunction float f(float u, float c) {\n    return u * c + sin(u) * c;\n}\nfloat x = x0;\nloop (int i = 0; i < 1000; i++) {\n    x = x * 0.9 + sin(x) * 0.1;\n}\nfloat w = x * s + t * x0 - s / t;\nint k = 2;\nfloat v = x * k + cos(x) * k;\nbackward(x + w + v);\nprint(x, grad(x0), grad(s), grad(t));\nprint(grad(f)(0.3, s), grad(grad(f))(0.3, 0.25), grad(f, 1)(t, s));\n";
    let mut transcript = String::new();
    let out = record(&mut transcript, "loop", dir.path(), text);
    expect![[r#"
        --- loop
        0.16378675326068323 1.6033594558390396 -0.5028799134059834 0.6111111111111112
        0.4888341222814015 -0.07388005166533489 2.4974949866040546
        tape bytes per operation: 2.1791265729089564
    "#]]
    .assert_eq(&transcript);
    let mut x = 0.5f64;
    for _ in 0..1000 {
        x = x * 0.9 + x.sin() * 0.1;
    }
    assert!(out.starts_with(&format!("{x:?} ")), "{out}");
}

/// Issue 23: `x * i` with `x` tracked and `i` an `int` costs what `x * (float)i` costs: the same
/// values and gradients, bit for bit, and the same tape words per operation (the general
/// operation it used to take recorded far more).
#[test]
fn an_int_beside_a_tracked_float_costs_what_its_cast_costs() {
    let dir = scratch("scalar-float-int");
    let program = |term: &str| {
        format!(
            "var float x = 0.5;\nfloat s = 0.0;\nloop (int i = 0; i < 1000; i++) {{\n    s = s + {term};\n    s = s + sin(x) * i;\n    s += i;\n}}\nbackward(s);\nprint(s, grad(x));\n"
        )
    };
    let (out, bytes) = run(dir.path(), &program("x * i"));
    let (cast_out, cast_bytes) = run(dir.path(), &program("x * (float)i"));
    assert_eq!(out, cast_out);
    assert_eq!(bytes.map(f64::to_bits), cast_bytes.map(f64::to_bits));
    // s = sum over i of (x + sin(x) + 1) * i, so ds/dx = (1 + cos(x)) * 499500.
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
/// `value_and_grad(grad(f))`. All of them are the bits they were before issue 23.
#[test]
fn plain_tracked_and_doubly_tracked_operands_agree() {
    let dir = scratch("scalar-float-levels");
    let mut rng = Lcg(0x1e7e15);
    let number = |text: &str| -> f64 { text.parse().unwrap_or_else(|err| panic!("{text}: {err}")) };
    let close = |a: f64, b: f64| {
        a.to_bits() == b.to_bits()
            || (a.is_nan() && b.is_nan())
            || (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
    };
    let mut checked = 0;
    let mut transcript = String::new();
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
        let out = record(&mut transcript, &y, dir.path(), &text);
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
    expect_file!["scalar_float/levels.txt"].assert_eq(&transcript);
}
