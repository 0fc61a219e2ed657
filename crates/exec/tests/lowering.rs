//! Snapshots of the lowering: small programs and the register code they lower to, as the
//! disassembler prints it (`nabla run --emit bytecode`). Update them with `UPDATE_EXPECT=1`.
//!
//! They show which instruction each construct becomes (integer loops and branches, calls, scalar
//! float operations and their fresh temporaries, element access) and where a variable's value is
//! moved into a call instead of shared.

use expect_test::{Expect, expect};

mod common;
use common::{load, scratch};

/// Lowers `text` and compares the disassembly of the units named in `units` (the main file's
/// top level is `<top level>`) with `expect`.
fn check(name: &str, text: &str, units: &[&str], expect: Expect) {
    let dir = scratch(&format!("lowering-{name}"));
    let (db, main) = load(dir.path(), text);
    let program = exec::lower::lower_program(&db, main).unwrap_or_else(|err| panic!("{err}"));
    let text = program.to_string();
    let selected: Vec<&str> = text
        .split("\n\n")
        .filter(|unit| units.iter().any(|name| unit.contains(&format!("`{name}`"))))
        .collect();
    expect.assert_eq(&(selected.join("\n\n") + "\n"));
}

#[test]
fn recursion_and_integer_branches() {
    check(
        "fib",
        "function int fib(int n) {\n    if (n < 2) {\n        return n;\n    }\n    return fib(n - 1) + fib(n - 2);\n}\nprint(fib(20));\n",
        &["fib"],
        expect![[r#"
            unit 1 `fib`: 1 parameter, 6 slots
                 0  if int %0 >= 2 goto 2
                 1  return %0
                 2  %1 = int %0 - 1
                 3  %2 = call fib(take %1)
                 4  %3 = int %0 - 2
                 5  %4 = call fib(take %3)
                 6  %5 = int %2 + %4
                 7  return take %5
                 8  return
        "#]],
    );
}

/// The numbers a loop reads as operands are loaded once, in front of the outermost loop, each
/// into a slot of its own that no instruction of the loop writes; a jump into the loop lands
/// after the loads. A number assigned to a variable is still loaded where it is assigned.
#[test]
fn numbers_in_loops_are_loaded_once() {
    check(
        "hoisted-numbers",
        "function float f(int n) {\n    float s = 0.0;\n    int big = 0;\n    loop (int i = 0; i < n; i++) {\n        float x = 0.5;\n        loop (int j = 0; j < n; j++) {\n            x = 2.0 * x + 0.5;\n            big = (big + j) % 2147483648;\n        }\n        s += x * 2;\n    }\n    return s + (float)big;\n}\nprint(f(3));\n",
        &["f"],
        expect![[r#"
            unit 1 `f`: 1 parameter, 11 slots
                 0  %1 = 0.0
                 1  %2 = 0
                 2  %6 = 2.0
                 3  %8 = 0.5
                 4  %9 = 2147483648
                 5  %10 = 2
                 6  %3 = 0
                 7  if int %3 >= %0 goto 19
                 8  %4 = 0.5
                 9  %5 = 0
                10  if int %5 >= %0 goto 16
                11  %7 = float %6 * %4
                12  %4 = float fresh %7 + %8
                13  %7 = int %2 + %5
                14  %2 = int %7 % %9
                15  %5 += 1; if int %5 < %0 goto 11
                16  %7 = float %4 * %10
                17  %1 = float %1 + fresh %7
                18  %3 += 1; if int %3 < %0 goto 8
                19  %6 = (float)%2
                20  %7 = float %1 + take %6
                21  return fresh %7
                22  return
        "#]],
    );
}

/// `int` arithmetic on locals a loop never writes is computed once, in front of the outermost
/// loop that writes none of them (`n - 1` before both loops, `i - 1` and `(i - 1) * 1000` before
/// the loop over `j`), when it cannot overflow: not `w - 1` (any `int`), not `(i - 1) * (i + 1)`
/// (`i` may come close to the largest `int`), not `k * 4611686018427387904`; not `m - 1`, whose
/// shape variable the loop's declaration binds.
#[test]
fn invariant_integer_arithmetic_is_computed_before_its_loop() {
    check(
        "invariant-int",
        "function int f(Tensor u[n], int k, int w) {\n    int s = 0;\n    loop (int i = 1; i < n + 1; i++) {\n        loop (int j = 0; j < 3; j++) {\n            s += (i - 1) * (i + 1) + (n - 1) * j;\n            s += w - 1 + k * 4611686018427387904;\n        }\n        loop (int j = 0; j < 2; j++) {\n            Tensor t[m] = zeros([j + 1]);\n            s += m - 1;\n        }\n    }\n    loop (int i = 10; i > 0; i -= 3) {\n        loop (int j = 0; j < 2; j++) {\n            s += (i - 1) * 1000;\n        }\n    }\n    return s;\n}\nTensor u[4];\nprint(f(u, 0, 1));\n",
        &["f"],
        expect![[r#"
            unit 1 `f`: 3 parameters, 21 slots
                 0  check %0: Tensor[n]
                 1  %4 = 0
                 2  %16 = int %3 - 1
                 3  %19 = 4611686018427387904
                 4  %5 = 1
                 5  %12 = int %3 + 1
                 6  if int %5 >= %12 goto 29
                 7  %13 = int %5 - 1
                 8  %14 = int %5 + 1
                 9  %6 = 0
                10  if int %6 >= 3 goto 20
                11  %15 = int %13 * %14
                12  %17 = int %16 * %6
                13  %18 = int %15 + %17
                14  %4 = int %4 + %18
                15  %15 = int %2 - 1
                16  %17 = int %1 * %19
                17  %18 = int %15 + %17
                18  %4 = int %4 + %18
                19  %6 += 1; if int %6 < 3 goto 11
                20  %7 = 0
                21  if int %7 >= 2 goto 28
                22  %13 = int %7 + 1
                23  %9 = zeros(take %13)
                24  check %9: Tensor[m]
                25  %13 = int %8 - 1
                26  %4 = int %4 + %13
                27  %7 += 1; if int %7 < 2 goto 22
                28  %5 += 1; if int %5 < %12 goto 7
                29  %10 = 10
                30  if int %10 <= 0 goto 38
                31  %12 = int %10 - 1
                32  %20 = int %12 * 1000
                33  %11 = 0
                34  if int %11 >= 2 goto 37
                35  %4 = int %4 + %20
                36  %11 += 1; if int %11 < 2 goto 35
                37  %10 += -3; if int %10 > 0 goto 31
                38  return %4
                39  return
        "#]],
    );
}

/// `int` arithmetic that a counted loop's body computes more than once on the counter (and on
/// locals the body does not write) is computed once per iteration, at the start of the body,
/// where the step and a `continue` jump back to: `j - 1` and `j + 1` (which the nested loop
/// reads too); not `i * 3`, whose loop's body writes its counter.
#[test]
fn repeated_integer_arithmetic_is_computed_once_per_iteration() {
    check(
        "iteration-int",
        "function int f(Tensor u[n]) {\n    int s = 0;\n    loop (int j = 1; j < n; j++) {\n        if (u[j - 1] > 0.5) {\n            s += j - 1;\n            continue;\n        }\n        s += (j + 1) * 2;\n        loop (int k = 0; k < 2; k++) {\n            s += j + 1;\n        }\n    }\n    loop (int i = 0; i < n; i++) {\n        s += i * 3 + i * 3;\n        if (s > 100) {\n            i++;\n        }\n    }\n    return s;\n}\nTensor u[6] = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0];\nprint(f(u));\n",
        &["f"],
        expect![[r#"
            unit 1 `f`: 1 parameter, 10 slots
                 0  check %0: Tensor[n]
                 1  %2 = 0
                 2  %8 = 0.5
                 3  %3 = 1
                 4  if int %3 >= %1 goto 18
                 5  %6 = int %3 - 1
                 6  %9 = int %3 + 1
                 7  %7 = element %0[%6]
                 8  if !(float %7 > %8) goto 11
                 9  %2 = int %2 + %6
                10  goto 17
                11  %7 = int %9 * 2
                12  %2 = int %2 + %7
                13  %4 = 0
                14  if int %4 >= 2 goto 17
                15  %2 = int %2 + %9
                16  %4 += 1; if int %4 < 2 goto 15
                17  %3 += 1; if int %3 < %1 goto 5
                18  %5 = 0
                19  if int %5 >= %1 goto 27
                20  %6 = int %5 * 3
                21  %7 = int %5 * 3
                22  %8 = int %6 + %7
                23  %2 = int %2 + %8
                24  if int %2 <= 100 goto 26
                25  %5 = int %5 + 1
                26  %5 += 1; if int %5 < %1 goto 20
                27  return %2
                28  return
        "#]],
    );
}

/// A bound that no iteration can change (arithmetic on shape variables, `cns` locals and
/// constants) is evaluated once before its loop, into a slot the loop's step tests; a bound on a
/// variable the body may assign is evaluated at every test.
#[test]
fn invariant_loop_bounds_are_evaluated_once() {
    check(
        "invariant-bound",
        "function int f(Tensor u[n], int k) {\n    cns int m = k + 1;\n    int s = 0;\n    loop (int i = 1; i < n - 1; i++) {\n        loop (int j = 0; j <= m * 2; j++) {\n            s += j;\n        }\n    }\n    loop (int i = 0; i < k - 1; i++) {\n        k -= 1;\n    }\n    return s + k;\n}\nTensor u[5];\nprint(f(u, 3));\n",
        &["f"],
        expect![[r#"
            unit 1 `f`: 2 parameters, 11 slots
                 0  check %0: Tensor[n]
                 1  %3 = int %1 + 1
                 2  %4 = 0
                 3  %8 = int %2 - 1
                 4  %5 = 1
                 5  if int %5 >= %8 goto 12
                 6  %6 = 0
                 7  %9 = int %3 * 2
                 8  if int %6 > %9 goto 11
                 9  %4 = int %4 + %6
                10  %6 += 1; if int %6 <= %9 goto 9
                11  %5 += 1; if int %5 < %8 goto 6
                12  %10 = 1
                13  %7 = 0
                14  goto 17
                15  %1 = int %1 - %10
                16  %7 = int %7 + 1
                17  %8 = int %1 - 1
                18  if int %7 < %8 goto 15
                19  %8 = int %4 + %1
                20  return take %8
                21  return
        "#]],
    );
}

#[test]
fn counted_loops_and_integer_arithmetic() {
    check(
        "loop",
        "int s = 0;\nloop (int i = 0; i < 10; i++) {\n    s += i * i;\n}\nint n = 5;\nloop (int j = n; j > 0; j -= 2) {\n    s = s % 7;\n}\nprint(s);\n",
        &["<top level>"],
        expect![[r#"
            unit 0 `<top level>` (main): 0 parameters, 5 slots
                 0  %0 = 0
                 1  %1 = 0
                 2  if int %1 >= 10 goto 6
                 3  %4 = int %1 * %1
                 4  %0 = int %0 + %4
                 5  %1 += 1; if int %1 < 10 goto 3
                 6  %2 = 5
                 7  %3 = %2
                 8  if int %3 <= 0 goto 11
                 9  %0 = int %0 % 7
                10  %3 += -2; if int %3 > 0 goto 9
                11  %4 = print(%0)
                12  return

            unit 1 `<top level>` (constants of the main file): 0 parameters, 4 slots
                 0  return

        "#]],
    );
}

#[test]
fn scalar_float_operations_read_fresh_temporaries() {
    check(
        "float",
        "float a = 0.9;\nfloat b = 0.1;\nfloat x = 0.5;\nx = x * a + sin(x) * b;\nprint(x);\n",
        &["<top level>"],
        expect![[r#"
            unit 0 `<top level>` (main): 0 parameters, 6 slots
                 0  %0 = 0.9
                 1  %1 = 0.1
                 2  %2 = 0.5
                 3  %3 = float %2 * %0
                 4  %4 = sin(%2)
                 5  %5 = float fresh %4 * %1
                 6  %2 = float fresh %3 + fresh %5
                 7  %3 = print(%2)
                 8  return

            unit 1 `<top level>` (constants of the main file): 0 parameters, 3 slots
                 0  return

        "#]],
    );
}

/// Element reads and writes by integer indices are one instruction each, at every rank; a
/// slice or fewer indices than axes is the general indexing.
#[test]
fn element_access_by_integers_is_one_instruction() {
    check(
        "element",
        "function float f(Tensor t[n], Tensor u[n][n], Tensor v[2][2][2], int i, int j) {\n    t[i] += u[i][j];\n    u[i, j] = t[i] * 2.0;\n    v[1][i][j]++;\n    Tensor row[n] = u[i];\n    t[0:2] = 1.0;\n    return v[i, j, 0] + row[j];\n}\nprint(f([1, 2], [[1, 2], [3, 4]], zeros([2, 2, 2]), 1, 0));\n",
        &["f"],
        expect![[r#"
            unit 1 `f`: 5 parameters, 11 slots
                 0  check %0: Tensor[n]
                 1  check %1: Tensor[n][n]
                 2  check %2: Tensor[2][2][2]
                 3  %7 = element %1[%3][%4]
                 4  element %0[%3] += take %7
                 5  %7 = element %0[%3]
                 6  %8 = 2.0
                 7  %9 = float take %7 * take %8
                 8  element %1[%3, %4] = fresh %9
                 9  %7 = 1
                10  %8 = 1.0
                11  element %2[%7][%3][%4] += take %8
                12  %9 = element %2[%7][%3][%4]
                13  %6 = %1[%3]
                14  %7 = 1.0
                15  %8 = 0
                16  %9 = 2
                17  %0[%8:%9] = take %7
                18  %7 = 0
                19  %8 = element %2[%3, %4, %7]
                20  %9 = element %6[%4]
                21  %10 = float take %8 + take %9
                22  return fresh %10
                23  return
        "#]],
    );
}

/// `a = f(a, ...)` moves `a` into the call (`take`), since the result overwrites it; `b = f(a)`
/// shares `a`, which is read afterwards.
#[test]
fn a_rebound_argument_moves_into_the_call() {
    check(
        "moves",
        "function Tensor[n] bump(Tensor a[n], int i) {\n    a[i] += 1.0;\n    return a;\n}\nTensor a[3];\na = bump(a, 0);\nTensor b[3] = bump(a, 1);\nprint(a, b);\n",
        &["<top level>"],
        expect![[r#"
            unit 0 `<top level>` (main): 0 parameters, 3 slots
                 0  %0 = zero tensor
                 1  %2 = 0
                 2  %0 = call bump(take %0, take %2)
                 3  %2 = 1
                 4  %1 = call bump(%0, take %2)
                 5  %2 = print(%0, %1)
                 6  return

            unit 2 `<top level>` (constants of the main file): 0 parameters, 2 slots
                 0  return

        "#]],
    );
}

/// A temporary that the next instruction reads once is `fresh` (a tracked one's record may be
/// fused into the record of the operation reading it): `a * b` into `sin`, `sin(..)` into `* a`,
/// `.. * a` into `+ b`. A variable never is, even where it is read last (`d = a`).
#[test]
fn only_arithmetic_results_in_temporaries_are_fresh() {
    check(
        "fresh",
        "float a = 2.0;\nfloat b = 3.0;\nfloat c = sin(a * b) * a + b;\nfloat d = a;\nprint(c + d);\n",
        &["<top level>"],
        expect![[r#"
            unit 0 `<top level>` (main): 0 parameters, 7 slots
                 0  %0 = 2.0
                 1  %1 = 3.0
                 2  %4 = float %0 * %1
                 3  %5 = sin(fresh %4)
                 4  %6 = float fresh %5 * %0
                 5  %2 = float fresh %6 + %1
                 6  %3 = %0
                 7  %4 = float %2 + %3
                 8  %5 = print(fresh %4)
                 9  return

            unit 1 `<top level>` (constants of the main file): 0 parameters, 4 slots
                 0  return

        "#]],
    );
}

/// `w -= rate * g` on a tensor variable is one fused update (`-=(w, rate, g)` in the
/// disassembly), and so is `m += g * rate`; `m -= 2 * g`, whose factor is an `int`, keeps its two
/// steps (`tests/api.rs` checks that fused and separate updates print the same bits).
#[test]
fn gradient_descent_updates_fuse() {
    check(
        "scaled-update",
        "var Tensor w[3] = [0.3, -1.7, 2.9];\nTensor g[3] = [0.11, 0.7, -1.3];\nTensor m[3] = w;\nw -= 0.37 * grad(w);\nm += g * 0.1;\nm -= 2 * g;\nprint(w, m);\n",
        &["<top level>"],
        expect![[r#"
            unit 0 `<top level>` (main): 0 parameters, 5 slots
                 0  %0 = const [0.3, -1.7, 2.9]
                 1  %0 = leaf %0
                 2  %1 = const [0.11, 0.7, -1.3]
                 3  refresh var %0
                 4  %2 = %0
                 5  %3 = 0.37
                 6  refresh var %0
                 7  %4 = grad(%0)
                 8  refresh var %0
                 9  %0 = -=(take %0, take %3, take %4)
                10  %3 = 0.1
                11  %2 = +=(take %2, take %3, %1)
                12  %3 = 2
                13  %4 = take %3 * %1
                14  %2 = take %2 - take %4
                15  refresh var %0
                16  %3 = print(%0, %2)
                17  return

            unit 1 `<top level>` (constants of the main file): 0 parameters, 3 slots
                 0  return

        "#]],
    );
}
