//! The execution API end to end without the command line: programs written to a scratch
//! directory, checked, lowered and run, with their output, errors and code inspected directly.
//! (The golden programs of `test_data/run` run through the `nabla` binary in `crates/cli`.)

use std::path::Path;
use std::process::Command;

use exec::error::{RuntimeError, RuntimeErrorKind};
use exec::interp::{Limits, Machine};
use hir::{Database, Severity, SourceFile};
use tempfile::TempDir;

mod common;
use common::{load, scratch};

/// Checks and runs `text`, returning what it printed, its error, if any, and its directory.
fn run_with(name: &str, text: &str, limits: Limits) -> (String, Option<RuntimeError>, TempDir) {
    let dir = scratch(name);
    let (db, main) = load(dir.path(), text);
    let mut out = Vec::new();
    let result = exec::run::run_program(&db, main, &mut out, limits);
    (String::from_utf8_lossy(&out).into_owned(), result.err(), dir)
}

fn run(name: &str, text: &str) -> (String, Option<RuntimeError>) {
    let (out, error, _) = run_with(name, text, Limits::default());
    (out, error)
}

/// The text a span covers.
fn span_text(db: &Database, span: hir::HirSpan) -> String {
    let (file, range) = hir::file_range(db, span);
    file.text(db)[usize::from(range.start())..usize::from(range.end())].to_owned()
}

#[test]
fn the_specification_examples_print_what_it_says() {
    let (out, error) = run("spec", "print([1, 2] @ [[1, 2], [3, 4]]);\n");
    assert!(error.is_none(), "{error:?}");
    assert_eq!(out, "[7.0, 10.0]\n");
}

/// `save` writes a C-order float64 `.npy` file: checked byte by byte here, and read back by
/// NumPy when it is installed.
#[test]
fn saved_files_are_numpy_arrays() {
    let text = "Tensor x[2][3] = [[1.5, 2, 3], [4, 5, -6.25]];\nsave(transpose(x), \"x.npy\");\n";
    let (out, error, dir) = run_with("npy", text, Limits::default());
    assert!(error.is_none(), "{error:?}");
    assert_eq!(out, "");
    let bytes = std::fs::read(dir.path().join("x.npy")).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(&bytes[..6], b"\x93NUMPY");
    let header_len = usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    let header = String::from_utf8_lossy(&bytes[10..10 + header_len]).into_owned();
    assert!(header.contains("'descr': '<f8'"), "{header}");
    assert!(header.contains("'fortran_order': False"), "{header}");
    assert!(header.contains("'shape': (3, 2)"), "{header}");
    let values: Vec<f64> = bytes[10 + header_len..]
        .chunks_exact(8)
        .map(|chunk| f64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])))
        .collect();
    assert_eq!(values, [1.5, 4.0, 2.0, 5.0, 3.0, -6.25]);
    let numpy = Command::new("python3").args(["-c", "import numpy"]).output();
    if numpy.is_ok_and(|output| output.status.success()) {
        let script =
            "import numpy, sys\na = numpy.load(sys.argv[1])\nprint(a.dtype, a.shape, a.tolist())";
        let output = Command::new("python3")
            .args(["-c", script, &dir.path().join("x.npy").to_string_lossy()])
            .output()
            .unwrap_or_else(|err| panic!("{err}"));
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "float64 (3, 2) [[1.5, 4.0], [2.0, 5.0], [3.0, -6.25]]\n"
        );
    }
}

/// A run-time error names the failing operation and the calls that led to it.
#[test]
fn errors_carry_the_span_and_the_stack() {
    let text = "function int div(int a, int b) {\n    return a / b;\n}\nfunction int twice(int x) {\n    return div(x, 0) * 2;\n}\nprint(div(6, 3));\nprint(twice(1));\n";
    let dir = scratch("stack");
    let (db, main) = load(dir.path(), text);
    let mut out = Vec::new();
    let error = exec::run::run_program(&db, main, &mut out, Limits::default())
        .err()
        .unwrap_or_else(|| panic!("no error"));
    assert_eq!(String::from_utf8_lossy(&out), "2\n");
    assert_eq!(error.kind, RuntimeErrorKind::Error);
    assert_eq!(error.message, "integer division by zero: 1 / 0");
    let span = error.span.unwrap_or_else(|| panic!("no span"));
    assert_eq!(span_text(&db, span), "a / b");
    let stack: Vec<(String, String)> = error
        .stack
        .iter()
        .map(|frame| (frame.function.clone(), span_text(&db, frame.span)))
        .collect();
    let expected = [("div", "a / b"), ("twice", "div(x, 0)"), ("<top level>", "twice(1)")];
    let expected: Vec<(String, String)> =
        expected.iter().map(|(f, s)| (f.to_string(), s.to_string())).collect();
    assert_eq!(stack, expected);
}

/// Numbers that loops read, loaded once in front of the outermost loop, give the values they give
/// loaded at every use: beside a jump that lands in front of the loop, a `break`, a nested loop
/// and temporaries that the loop's other statements take.
#[test]
fn numbers_loaded_before_loops_run_as_written() {
    let text = "function float g(int n) {\n    float s = 0.0;\n    if (n > 100) {\n        s = 1.0;\n    }\n    loop (int i = 0; i < n; i++) {\n        float x = 0.5;\n        int j = 0;\n        loop (; j < 20; j++) {\n            if (x > 1000.0) {\n                break;\n            }\n            x = 2.0 * x + 0.5;\n        }\n        s += x * 2 + (float)(j % 2147483648);\n    }\n    return s;\n}\nprint(g(3));\nprint(g(101));\n";
    let (out, error) = run("hoisted-numbers", text);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(out, "6171.0\n207758.0\n");
}

/// `int` arithmetic computed once in front of a loop gives the values computed at every
/// iteration (a loop counter's arithmetic in a nested loop, a shape variable's, an `if` jumping
/// to the code in front of a loop); arithmetic that can overflow stays in its loop, so a loop
/// that runs no iteration reports nothing and one that runs reports the overflow where it is
/// written.
#[test]
fn invariant_integer_arithmetic_runs_as_written() {
    let text = "function int f(Tensor u[n], int k) {\n    int s = 0;\n    if (k > 5) {\n        s = 1;\n    }\n    loop (int i = 1; i < n + 1; i++) {\n        loop (int j = 0; j < 3; j++) {\n            s += (i - 1) * (i + 1) + (n - 1) * j;\n        }\n        int w = i * 2;\n        loop (int j = 0; j < 2; j++) {\n            Tensor t[m] = zeros([j + w]);\n            s += w - 1 + (m - 1) * 100;\n        }\n    }\n    loop (int i = 10; i > 0; i -= 3) {\n        loop (int j = 0; j < 2; j++) {\n            s += (i - 1) * 1000;\n        }\n    }\n    loop (int i = 0; i < k - 5; i++) {\n        s += k * 4611686018427387904;\n    }\n    return s;\n}\nTensor u[4];\nprint(f(u, 3));\nprint(f(u, 5));\nprint(f(u, 7));\n";
    let dir = scratch("invariant-int");
    let (db, main) = load(dir.path(), text);
    let mut out = Vec::new();
    let error = exec::run::run_program(&db, main, &mut out, Limits::default())
        .err()
        .unwrap_or_else(|| panic!("no error"));
    assert_eq!(String::from_utf8_lossy(&out), "39746\n39746\n");
    assert_eq!(error.message, "integer overflow: 7 * 4611686018427387904 does not fit in an int");
    let span = error.span.unwrap_or_else(|| panic!("no span"));
    assert_eq!(span_text(&db, span), "k * 4611686018427387904");
    // Computed once per iteration, at the start of the body (a `continue` included).
    let (out, error) = run(
        "iteration-int",
        "function int f(Tensor u[n]) {\n    int s = 0;\n    loop (int j = 1; j < n; j++) {\n        if (u[j - 1] > 0.5) {\n            s += j - 1;\n            continue;\n        }\n        s += (j + 1) * 2;\n        loop (int k = 0; k < 2; k++) {\n            s += j + 1;\n        }\n    }\n    loop (int i = 0; i < n; i++) {\n        s += i * 3 + i * 3;\n        if (s > 100) {\n            i++;\n        }\n    }\n    return s;\n}\nTensor u[6] = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0];\nprint(f(u));\n",
    );
    assert!(error.is_none(), "{error:?}");
    assert_eq!(out, "122\n");
}

/// A loop bound evaluated once before the loop (arithmetic on shape variables and `cns` locals)
/// runs the iterations the bound evaluated at every test runs, beside a bound on a variable the
/// body changes; an overflow in such a bound is reported at the bound, as the first test did.
#[test]
fn invariant_loop_bounds_run_as_written() {
    let text = "function int f(Tensor u[n], int k) {\n    cns int m = k + 1;\n    int s = 0;\n    loop (int i = 1; i < n - 1; i++) {\n        loop (int j = 0; j <= m * 2; j++) {\n            s += j;\n        }\n    }\n    loop (int i = 0; i < k - 1; i++) {\n        k -= 1;\n    }\n    return s + k;\n}\nTensor u[5];\nprint(f(u, 3));\n";
    let (out, error) = run("invariant-bound", text);
    assert!(error.is_none(), "{error:?}");
    assert_eq!(out, "110\n");
    let text = "function int f(Tensor u[n]) {\n    int s = 0;\n    loop (int i = 0; i < n * 4611686018427387904; i++) {\n        s += i;\n    }\n    return s;\n}\nTensor u[5];\nprint(f(u));\n";
    let dir = scratch("invariant-bound-overflow");
    let (db, main) = load(dir.path(), text);
    let mut out = Vec::new();
    let error = exec::run::run_program(&db, main, &mut out, Limits::default())
        .err()
        .unwrap_or_else(|| panic!("no error"));
    assert_eq!(error.message, "integer overflow: 5 * 4611686018427387904 does not fit in an int");
    let span = error.span.unwrap_or_else(|| panic!("no span"));
    assert_eq!(span_text(&db, span), "n * 4611686018427387904");
}

/// An integer overflow names the operands in the order the source writes them, a constant on
/// either side of a commutative operation included.
#[test]
fn an_overflow_names_the_operands_in_source_order() {
    let big = "4611686018427387904";
    for (expr, message) in [
        ("3 * n + 1", format!("3 * {big}")),
        ("n * 3", format!("{big} * 3")),
        ("n + n + n", format!("{big} + {big}")),
        ("1 + (n + (n - 1)) + 1", "1 + 9223372036854775807".to_owned()),
        ("-2 * n * 2", "-9223372036854775808 * 2".to_owned()),
    ] {
        let text = format!("int n = {big};\nprint({expr});\n");
        let (out, error) = run("overflow-order", &text);
        let error = error.unwrap_or_else(|| panic!("no error for {expr}"));
        assert_eq!(out, "");
        assert_eq!(error.message, format!("integer overflow: {message} does not fit in an int"));
    }
}

/// A run-time check of a parameter's declared shape binds its size variables, checks the other
/// arguments against them, and names the first extent that differs at the call.
#[test]
fn argument_shapes_bind_and_check_at_run_time() {
    let functions = "function int rows(Tensor a[n][3]) {\n    return n;\n}\nfunction float last(Tensor a[n], Tensor b[n]) {\n    return a[0] * b[n - 1];\n}\nint k = 3;\nTensor v = ones([k]);\n";
    let cases = [
        ("print(rows(ones([k + 1, k])));\nprint(last(v, v * 2.0));\n", "4\n2.0\n", None),
        (
            "print(rows(ones([k + 2, k + 1])));\n",
            "",
            Some("argument 1 of `rows` must be Tensor[n][3], found Tensor[5][4] (with n = 5)"),
        ),
        (
            "print(last(v, ones([k - 1])));\n",
            "",
            Some("argument 2 of `last` must be Tensor[n], found Tensor[2] (with n = 3)"),
        ),
    ];
    for (calls, printed, message) in cases {
        let (out, error) = run("argument-shapes", &format!("{functions}{calls}"));
        assert_eq!((out.as_str(), error.map(|e| e.message)), (printed, message.map(str::to_owned)));
    }
}

/// The recursion limit is a configurable, clean error.
#[test]
fn the_call_depth_is_limited() {
    let text = "function int down(int n) {\n    if (n == 0) {\n        return 0;\n    }\n    return down(n - 1);\n}\nprint(down(40));\nprint(down(60));\n";
    let limits = Limits { max_call_depth: 50, ..Limits::default() };
    let (out, error, _) = run_with("depth", text, limits);
    assert_eq!(out, "0\n");
    let error = error.unwrap_or_else(|| panic!("no error"));
    assert!(error.message.starts_with("recursion is too deep: more than 50 nested calls"));
    assert_eq!(error.stack.len(), 51);
}

/// Every call counts once for the recursion limit and once for the step budget: `down(n)` nests
/// `n + 1` calls, `fib(10)` makes 177 and `print` none, and the run (one step to enter the top
/// level) stops exactly where those counts pass the limits.
#[test]
fn every_call_counts_for_the_limits() {
    let program = |depth: u64| {
        format!(
            "function int down(int n) {{\n    if (n <= 0) {{\n        return n;\n    }}\n    return down(n - 1);\n}}\nfunction int fib(int n) {{\n    if (n < 2) {{\n        return n;\n    }}\n    return fib(n - 1) + fib(n - 2);\n}}\nprint(down({depth}));\nprint(fib(10));\n"
        )
    };
    for depth in [47, 48, 49, 50] {
        for (max_call_depth, max_steps) in [(50, u64::MAX), (10_000, 226), (10_000, 227)] {
            let limits = Limits { max_call_depth, max_steps, ..Limits::default() };
            let (out, error, _) = run_with("calls-count", &program(depth), limits);
            let error = error.map(|e| (e.message, e.stack.len()));
            let expected = if depth + 1 > max_call_depth as u64 {
                let message = format!(
                    "recursion is too deep: more than {max_call_depth} nested calls (raise the limit with --max-recursion)"
                );
                (String::new(), Some((message, max_call_depth + 1)))
            } else if 1 + (depth + 1) + 177 > max_steps {
                let message = format!(
                    "the program ran past its budget of {max_steps} steps (loop iterations and calls)"
                );
                ("0\n".to_owned(), error.as_ref().map(|e| (message, e.1)))
            } else {
                ("0\n55\n".to_owned(), None)
            };
            assert_eq!((out, error), expected, "depth {depth}, {limits:?}");
        }
    }
}

/// A step budget stops endless loops, long loops of every kind and exponential recursion, with
/// the error located at the loop or call that ran past it.
#[test]
fn the_step_budget_stops_loops_and_calls() {
    let limits = Limits { max_steps: 1000, ..Limits::default() };
    let cases = [
        ("int s = 0;\nloop (;;) {\n    s += 1;\n}\n", "loop (;;) {\n    s += 1;\n}"),
        ("int s = 0;\nloop (int i = 0; i < 5000; i++) {\n    s += i;\n}\n", "i++"),
        (
            "float x = 0.0;\nloop (; x < 1e9;) {\n    x = x + 1.0;\n}\n",
            "loop (; x < 1e9;) {\n    x = x + 1.0;\n}",
        ),
        (
            "function int f(int n) {\n    if (n < 2) {\n        return n;\n    }\n    return f(n - 1) + f(n - 2);\n}\nprint(f(30));\n",
            "f(n - 1)",
        ),
    ];
    for (text, _) in cases {
        let (out, error, _) = run_with("steps", text, limits);
        assert_eq!(out, "");
        let error = error.unwrap_or_else(|| panic!("no error for {text}"));
        assert_eq!(
            error.message,
            "the program ran past its budget of 1000 steps (loop iterations and calls)",
            "{text}"
        );
        assert!(error.span.is_some(), "{text}");
    }
    // Within the budget, nothing changes.
    let (out, error, _) = run_with(
        "steps",
        "int s = 0;\nloop (int i = 0; i < 900; i++) {\n    s += i;\n}\nprint(s);\n",
        limits,
    );
    assert_eq!((out.as_str(), error.map(|e| e.message)), ("404550\n", None));
}

/// `w -= rate * g` on a tensor lowers to one fused update (see `tests/lowering.rs`), which prints
/// exactly what the product and the difference computed separately print.
#[test]
fn gradient_descent_updates_fuse_without_changing_a_bit() {
    let body = "var Tensor w[3] = [0.3, -1.7, 2.9];
Tensor g[3] = [0.11, 0.7, -1.3];
Tensor m[3] = w;
loop (int i = 0; i < 3; i++) {
    float loss = sum(tanh(w) * g);
    backward(loss);
    UPDATE
}
print(w, m, grad(w));
";
    let fused = "w -= 0.37 * grad(w);
    m += g * 0.1;
    m -= 2 * g;";
    let separate = "Tensor step[3] = 0.37 * grad(w);
    w -= step;
    Tensor more[3] = g * 0.1;
    m += more;
    m -= 2 * g;";
    let (fused_out, fused_error) = run("scaled-update-fused", &body.replace("UPDATE", fused));
    let (separate_out, separate_error) =
        run("scaled-update-separate", &body.replace("UPDATE", separate));
    assert!(
        fused_error.is_none() && separate_error.is_none(),
        "{fused_error:?} {separate_error:?}"
    );
    assert_eq!(fused_out, separate_out);
}

/// Tests run in isolation after the constants they may read, and a failed assertion is told
/// apart from other errors.
#[test]
fn tests_run_on_fresh_machines() {
    let text = "cns int N = 3;\nprint(\"top level does not run for tests\");\ntest \"passes\" {\n    Tensor t[N];\n    assert(sum(t + 1) == N);\n    print(rand([1]));\n}\ntest \"fails\" {\n    assert_eq(N, 4);\n}\n";
    let dir = scratch("tests");
    let (db, main) = load(dir.path(), text);
    let program = exec::lower::lower_program(&db, main).unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(program.tests.len(), 2);
    let mut outputs = Vec::new();
    for (name, unit) in &program.tests {
        let mut out = Vec::new();
        let mut machine = Machine::new(&program, &mut out, Limits::default())
            .unwrap_or_else(|err| panic!("{err}"));
        let result = machine.run_constants().and_then(|()| machine.run_test(*unit));
        drop(machine);
        outputs.push((name.clone(), String::from_utf8_lossy(&out).into_owned(), result.err()));
    }
    assert_eq!(outputs[0].0, "passes");
    assert!(outputs[0].2.is_none(), "{:?}", outputs[0].2);
    // Every test starts from seed 0: the same first random number as a program.
    let (program_out, _) = run("seed", "print(rand([1]));\n");
    assert_eq!(outputs[0].1, program_out);
    let failure = outputs[1].2.as_ref().unwrap_or_else(|| panic!("the test passed"));
    assert_eq!(failure.kind, RuntimeErrorKind::Assertion);
    assert_eq!(failure.message, "assert_eq(N, 4) failed: the left side is 3, the right side is 4");
}

/// An output stream that remembers how much had been written at each flush.
#[derive(Default)]
struct FlushRecorder {
    bytes: Vec<u8>,
    flushed_at: Vec<String>,
}

impl std::io::Write for FlushRecorder {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.flushed_at.push(String::from_utf8_lossy(&self.bytes).into_owned());
        Ok(())
    }
}

/// `write` prints like `print` without the newline and flushes, so a progress line shows at once;
/// `print` leaves flushing to the stream.
#[test]
fn write_flushes_and_print_does_not() {
    let text = "write(\"epoch\", 1);\nprint(\" done\");\nwrite(\"\\repoch\", 2, [1, 2]);\n";
    let dir = scratch("write");
    let (db, main) = load(dir.path(), text);
    let mut out = FlushRecorder::default();
    let result = exec::run::run_program(&db, main, &mut out, Limits::default());
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(String::from_utf8_lossy(&out.bytes), "epoch 1 done\n\repoch 2 [1.0, 2.0]");
    assert_eq!(out.flushed_at, ["epoch 1", "epoch 1 done\n\repoch 2 [1.0, 2.0]"]);
}

/// Writes `files` (name and text) to a scratch directory and loads the first with its imports
/// (the directory is removed on return: the database keeps the texts).
fn load_files(name: &str, files: &[(&str, &str)]) -> (Database, SourceFile) {
    let dir = scratch(name);
    for (file, text) in files {
        std::fs::write(dir.path().join(file), text).unwrap_or_else(|err| panic!("{err}"));
    }
    let mut db = Database::default();
    let read = &mut |p: &Path| std::fs::read_to_string(p).map_err(|e| e.to_string());
    let main =
        db.load_with_imports(&dir.path().join(files[0].0), read).unwrap_or_else(|e| panic!("{e}"));
    (db, main)
}

/// Every error of every loaded file as `FILE LINE:COL CODE message`.
fn errors_of(db: &Database) -> Vec<String> {
    let mut errors = Vec::new();
    for file in db.files() {
        let name =
            file.path(db).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let index = syntax::LineIndex::new(file.text(db));
        for d in hir::file_diagnostics(db, file).iter().filter(|d| d.severity == Severity::Error) {
            let (line, col) = index.line_col_1based(d.range.start());
            errors.push(format!("{name} {line}:{col} {} {}", d.code, d.message));
        }
    }
    errors.sort();
    errors
}

/// A test sees the top-level constants of its file and of the files it imports with the values
/// the program gives them: constants computed from constants, calls, and shape variables bound by
/// `cns` declarations; the file's other top-level statements do not run.
#[test]
fn tests_see_the_constants_of_the_file_and_its_imports() {
    let lib = "cns float base = 2.0;\ncns float scale = base * 3.0;\ncns Tensor table[rows][2] = ones([3, 2]);\nfunction float scaled(float x) {\n    return x * scale;\n}\n";
    let main = "import \"lib.nb\";\ncns int K = 4;\ncns int twice = 2 * K + rows;\ncns Tensor w[2] = [1.5, 2.5];\ncns float total = sum(w) * K + scaled(1.0);\nprint(\"the top level does not run\");\ntest \"constants\" {\n    print(K, twice, total, scale, rows, sum(table));\n}\n";
    let (db, main_file) = load_files("constants", &[("main.nb", main), ("lib.nb", lib)]);
    assert_eq!(errors_of(&db), Vec::<String>::new());
    let program = exec::lower::lower_program(&db, main_file).unwrap_or_else(|err| panic!("{err}"));
    let mut out = Vec::new();
    let mut machine =
        Machine::new(&program, &mut out, Limits::default()).unwrap_or_else(|err| panic!("{err}"));
    let result = machine.run_constants().and_then(|()| machine.run_test(program.tests[0].1));
    drop(machine);
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(String::from_utf8_lossy(&out), "4 11 22.0 6.0 3 6.0\n");
}

/// What tests and importing files cannot evaluate is rejected by the checker instead of reading
/// 0: a constant computed from a top-level variable (in the main file or an imported one), and a
/// test or function reading a shape variable that a declaration without `cns` binds.
#[test]
fn constants_computed_from_variables_do_not_check() {
    let lib = "float base = 2.0;\ncns float scale = base * 3.0;\n";
    let main = "import \"lib.nb\";\nint n = 3;\ncns int M = n + 1;\nTensor data[rows][2] = zeros([4, 2]);\nfunction int count() {\n    return rows;\n}\ntest \"reads a shape variable\" {\n    assert_eq(rows, 4);\n}\n";
    let (db, _) = load_files("constants-from-variables", &[("main.nb", main), ("lib.nb", lib)]);
    let reading = "tests and importing files evaluate constants without running the other top-level statements";
    let only = "only `cns` constants are visible here";
    assert_eq!(
        errors_of(&db),
        [
            format!(
                "lib.nb 2:19 E0109 the constant `scale` cannot be computed from the top-level variable `base`: {reading}"
            ),
            format!(
                "main.nb 3:13 E0109 the constant `M` cannot be computed from the top-level variable `n`: {reading}"
            ),
            format!(
                "main.nb 6:12 E0102 a function cannot use the top-level variable `rows`: {only}"
            ),
            format!("main.nb 9:15 E0102 a test cannot use the top-level variable `rows`: {only}"),
        ]
    );
}

/// A function may read top-level constants, so a constant's initializer that calls one reading a
/// constant declared further down would see a value not computed yet: that is a run-time error,
/// for the program and for its tests alike, never a silent 0.
#[test]
fn a_constant_read_before_its_declaration_is_an_error() {
    let text = "function int later() {\n    return B;\n}\ncns int A = later();\ncns int B = 5;\ntest \"reads A\" {\n    assert_eq(A, 5);\n}\n";
    let message = "the constant `B` is read before its declaration has run: a function reads it while the top level is still above that declaration";
    let (out, error) = run("constant-order", text);
    assert_eq!(out, "");
    let error = error.unwrap_or_else(|| panic!("the program ran"));
    assert_eq!(error.message, message);
    let frames: Vec<&str> = error.stack.iter().map(|f| f.function.as_str()).collect();
    assert_eq!(frames, ["later", "<top level>"]);
    let (db, main) = load_files("constant-order-test", &[("main.nb", text)]);
    let program = exec::lower::lower_program(&db, main).unwrap_or_else(|err| panic!("{err}"));
    let mut out = Vec::new();
    let mut machine =
        Machine::new(&program, &mut out, Limits::default()).unwrap_or_else(|err| panic!("{err}"));
    let result = machine.run_constants().and_then(|()| machine.run_test(program.tests[0].1));
    drop(machine);
    assert_eq!(result.map_err(|error| error.message), Err(message.to_owned()));
}

/// Runs `text` and returns what it printed and how many writes copied a shared tensor.
fn run_counting_copies(name: &str, text: &str) -> (String, u64) {
    let dir = scratch(name);
    let (db, main) = load(dir.path(), text);
    let mut out = Vec::new();
    let report = exec::run::run_program(&db, main, &mut out, Limits::default())
        .unwrap_or_else(|err| panic!("{err}"));
    (String::from_utf8_lossy(&out).into_owned(), report.tensor_copies)
}

/// The quicksort of `bench/interpreter/quicksort.nb`, sorting `n` numbers of a generator in a
/// tensor made by `make`.
fn quicksort_program(n: usize, make: &str) -> String {
    format!(
        "function Tensor[n] quicksort(Tensor a[n], int lo, int hi) {{
    if (lo >= hi) {{
        return a;
    }}
    float pivot = a[hi];
    int i = lo;
    loop (int j = lo; j < hi; j++) {{
        if (a[j] < pivot) {{
            float swap = a[i];
            a[i] = a[j];
            a[j] = swap;
            i++;
        }}
    }}
    float swap = a[i];
    a[i] = a[hi];
    a[hi] = swap;
    a = quicksort(a, lo, i - 1);
    a = quicksort(a, i + 1, hi);
    return a;
}}

function int sorted(Tensor a[n]) {{
    loop (int i = 1; i < n; i++) {{
        if (a[i - 1] > a[i]) {{
            return 0;
        }}
    }}
    return 1;
}}

{make}
int x = 13;
loop (int i = 0; i < {n}; i++) {{
    x = (1103515245 * x + 12345) % 2147483648;
    a[i] = x % 1000;
}}
a = quicksort(a, 0, {n} - 1);
print(sorted(a), a[0], a[{n} - 1]);
"
    )
}

/// `a = quicksort(a, lo, hi)` overwrites `a` with the call's result, so the argument `a` is its
/// last read and moves into the call: every write of the recursive in-place sort goes into the
/// one buffer, and no write copies the tensor (each of the about 2n calls copied all of it
/// before, which made the sort quadratic). The count does not depend on `n`; a debug build
/// sorts 20,000 numbers here, and `bench/interpreter/scaling` sorts 10^6.
#[test]
fn a_rebound_argument_moves_so_an_in_place_sort_copies_nothing() {
    let (out, copies) =
        run_counting_copies("quicksort-moves", &quicksort_program(20_000, "Tensor a[20000];"));
    assert_eq!(out, "1 0.0 999.0\n");
    assert_eq!(copies, 0);
}

/// Copy on write still copies a value that stays observable: `b = a` shares `a`'s buffer, so
/// sorting `b` copies it once, and `a` keeps its numbers.
#[test]
fn a_write_copies_a_tensor_that_another_value_still_shares() {
    let make = "Tensor a[100];\nTensor kept[100] = a;";
    let text = quicksort_program(100, make) + "print(sorted(kept), kept[0], sum(kept));\n";
    // `kept` shares the zeros `a` starts with: the first write into `a` copies them.
    let (out, copies) = run_counting_copies("quicksort-shared", &text);
    assert_eq!(out, "1 5.0 997.0\n1 0.0 0.0\n");
    assert_eq!(copies, 1);
}

/// A record variable rebound to a call's result moves every leaf into the call, as a tensor
/// variable does: `p = touch(p, i)` writes into the record's tensors in place. Each call copied
/// both tensors before (202 copies here); a leaf read twice among the arguments (`q.a` below,
/// passed in `q` and on its own) is shared, so its first write copies it, once, and the other
/// leaf still moves.
#[test]
fn a_rebound_record_argument_moves_every_leaf() {
    let text = "struct P {
    Tensor a[n];
    Tensor b[n];
}

function P[n] touch(P[n] p, int i) {
    p.a[i] = i;
    p.b[i] = -i;
    return p;
}

function P[n] touch_with(P[n] p, Tensor first[n]) {
    p.a[0] = first[0] + 1;
    p.b[0] = 7;
    return p;
}

P p = P { a: zeros([100]), b: zeros([100]) };
loop (int i = 0; i < 100; i++) {
    p = touch(p, i);
}
print(sum(p.a), sum(p.b));
P q = P { a: zeros([3]), b: zeros([3]) };
q = touch_with(q, q.a);
print(q.a[0], q.b[0]);
";
    let (out, copies) = run_counting_copies("record-moves", text);
    assert_eq!(out, "4950.0 -4950.0\n1.0 7.0\n");
    assert_eq!(copies, 1);
}
