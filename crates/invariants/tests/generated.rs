//! The fuzz targets' promises on generated programs: a small generator writes random well-formed
//! Nabla (declarations of every type and qualifier, expressions over the whole precedence table,
//! `if`/`elif`/`else`, loops, blocks, functions with shape variables, tests, imports, index
//! statements, comments) and each program must parse without errors and losslessly, check without
//! a panic with every range inside the file, re-check after an edit as a fresh check does, and
//! format idempotently, changing only whitespace.

use proptest::prelude::*;

const NAMES: &[&str] = &["a", "b", "x", "y", "n", "k", "w", "loss"];
const FUNCTIONS: &[&str] = &["f", "g", "mse"];
const BUILTINS: &[&str] = &["sum", "mean", "relu", "exp", "sqrt", "transpose", "print", "zeros"];
const BINARY: &[&str] = &[
    "@", "*", "/", "%", "+", "-", "<<", ">>", "<", "<=", ">", ">=", "==", "!=", "&", "^", "|",
    "&&", "||",
];
const ASSIGN: &[&str] = &["=", "+=", "-=", "*=", "/=", "%=", "@=", "<<=", ">>=", "&=", "^=", "|="];
const SCALARS: &[&str] = &["int", "float", "bool", "Bool", "char"];

fn name() -> impl Strategy<Value = String> {
    prop::sample::select(NAMES).prop_map(str::to_owned)
}

fn literal() -> impl Strategy<Value = String> {
    prop_oneof![
        (0u32..1000).prop_map(|n| n.to_string()),
        prop::sample::select(&["1.0", ".5", "2.", "3e-4", "6.02E23", "0.25"][..])
            .prop_map(str::to_owned),
        prop::sample::select(&["'a'", "'\\n'", "'\\''", "'\\0'", "true", "false"][..])
            .prop_map(str::to_owned),
    ]
}

/// A dimension: a number or a name (a constant or a shape variable).
fn dim() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u32..5).prop_map(|n| n.to_string()),
        prop::sample::select(&["n", "m", "k"][..]).prop_map(str::to_owned)
    ]
}

fn dims() -> impl Strategy<Value = String> {
    prop::collection::vec(dim(), 0..3)
        .prop_map(|dims| dims.iter().map(|d| format!("[{d}]")).collect())
}

fn ty() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(SCALARS).prop_map(str::to_owned),
        dims().prop_map(|dims| format!("Tensor{dims}")),
    ]
}

fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![literal(), name()];
    leaf.prop_recursive(5, 48, 4, |inner| {
        prop_oneof![
            (inner.clone(), prop::sample::select(BINARY), inner.clone())
                .prop_map(|(a, op, b)| format!("{a} {op} {b}")),
            (prop::sample::select(&["-", "+", "!"][..]), inner.clone())
                .prop_map(|(op, e)| format!("{op}{e}")),
            inner.clone().prop_map(|e| format!("({e})")),
            (prop::sample::select(SCALARS), inner.clone()).prop_map(|(t, e)| format!("({t}){e}")),
            (
                prop::sample::select(FUNCTIONS).prop_union(prop::sample::select(BUILTINS)),
                prop::collection::vec(inner.clone(), 0..3)
            )
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            (name(), inner.clone()).prop_map(|(a, i)| format!("{a}[{i}]")),
            (name(), prop::option::of(inner.clone()), prop::option::of(inner.clone())).prop_map(
                |(a, i, j)| format!("{a}[{}:{}]", i.unwrap_or_default(), j.unwrap_or_default())
            ),
            prop::collection::vec(inner.clone(), 1..4)
                .prop_map(|items| format!("[{}]", items.join(", "))),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("{c} ? {a} : {b}")),
            inner.clone().prop_map(|e| format!("sizeof({e})")),
            (
                prop::sample::select(&["grad", "jvp", "vjp", "hessian"][..]),
                prop::sample::select(FUNCTIONS),
                inner.clone()
            )
                .prop_map(|(t, f, x)| format!("{t}({f})({x})")),
            name().prop_map(|x| format!("{x}++")),
        ]
    })
}

fn declaration() -> impl Strategy<Value = String> {
    (
        prop::sample::select(&["", "var ", "cns "][..]),
        ty(),
        name(),
        dims(),
        prop::option::of(expr()),
    )
        .prop_map(|(qualifier, ty, name, dims, init)| {
            let dims = if ty.starts_with("Tensor") { dims } else { String::new() };
            let ty =
                if ty.starts_with("Tensor") && !dims.is_empty() { "Tensor".to_owned() } else { ty };
            match init {
                Some(init) => format!("{qualifier}{ty} {name}{dims} = {init};"),
                None => format!("{qualifier}{ty} {name}{dims};"),
            }
        })
}

fn simple_statement() -> impl Strategy<Value = String> {
    prop_oneof![
        declaration(),
        (name(), prop::sample::select(ASSIGN), expr())
            .prop_map(|(x, op, e)| format!("{x} {op} {e};")),
        expr().prop_map(|e| format!("{e};")),
        prop::sample::select(&["break;", "continue;", "return;"][..]).prop_map(str::to_owned),
        expr().prop_map(|e| format!("return {e};")),
        Just("C(i, j) = A(i, k) * B(k, j);".to_owned()),
        Just("T(j, i) += 0.5 * S(i, j);".to_owned()),
        prop::sample::select(
            &["// A comment.\n", "/* A block comment. */", "/* Two\n   lines. */"][..]
        )
        .prop_map(str::to_owned),
    ]
}

fn block(statements: Vec<String>) -> String {
    if statements.is_empty() {
        return "{}".to_owned();
    }
    format!("{{\n{}\n}}", statements.join("\n"))
}

fn statement() -> impl Strategy<Value = String> {
    simple_statement().prop_recursive(4, 32, 4, |inner| {
        let body = prop::collection::vec(inner, 0..4).prop_map(block);
        prop_oneof![
            (
                expr(),
                body.clone(),
                prop::collection::vec((expr(), body.clone()), 0..2),
                prop::option::of(body.clone())
            )
                .prop_map(|(c, then, elifs, otherwise)| {
                    let mut text = format!("if ({c}) {then}");
                    for (c, b) in elifs {
                        text.push_str(&format!(" elif ({c}) {b}"));
                    }
                    if let Some(b) = otherwise {
                        text.push_str(&format!(" else {b}"));
                    }
                    text
                }),
            (
                prop::option::of(declaration()),
                prop::option::of(expr()),
                prop::option::of(expr()),
                body.clone()
            )
                .prop_map(|(init, cond, step, body)| {
                    let init = init.unwrap_or_else(|| ";".to_owned());
                    let cond = cond.unwrap_or_default();
                    let step = step.unwrap_or_default();
                    format!("loop ({init} {cond}; {step}) {body}")
                }),
            body,
        ]
    })
}

fn item() -> impl Strategy<Value = String> {
    let params = prop::collection::vec((ty(), name(), dims()), 0..3).prop_map(|params| {
        params
            .into_iter()
            .map(|(ty, name, dims)| {
                if ty.starts_with("Tensor") {
                    format!("Tensor {name}{dims}")
                } else {
                    format!("{ty} {name}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    });
    let body = prop::collection::vec(statement(), 0..5).prop_map(block).boxed();
    prop_oneof![
        3 => statement(),
        2 => (prop_oneof![ty(), Just("void".to_owned())], prop::sample::select(FUNCTIONS), params, body.clone())
            .prop_map(|(ty, f, params, body)| format!("function {ty} {f}({params}) {body}")),
        1 => ("[a-z ]{1,12}", body).prop_map(|(name, body)| format!("test \"{name}\" {body}")),
        1 => Just("import \"lib.nb\";".to_owned()),
    ]
}

/// Declarations of most names the generator uses, so that a program that starts with them
/// resolves its names and gets as far as shapes and types.
const PRELUDE: &str = "cns int n = 3;
int k = 2, m = 4;
float x = 1.0, y = 2.0, loss;
var Tensor w[3][1] = [[1], [2], [3]];
Tensor a[2][3];
Tensor b[3][2];
function float f(float x) { return x * x; }
function float g(float x, float y) { return x + y; }
function float mse(Tensor p[n][1], Tensor q[n][1]) { return mean((p - q) * (p - q)); }
";

fn program() -> impl Strategy<Value = String> {
    let items = prop::collection::vec(
        (item(), prop::sample::select(&["\n", "\n\n", " ", "\n  \t"][..])),
        0..8,
    );
    (any::<bool>(), items).prop_map(|(prelude, items)| {
        let prelude = if prelude { PRELUDE } else { "" };
        let items: String = items.into_iter().map(|(item, sep)| format!("{item}{sep}")).collect();
        format!("{prelude}{items}")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn generated_programs_parse_without_errors_and_losslessly(text in program()) {
        let errors = syntax::parse(&text).errors().to_vec();
        prop_assert!(errors.is_empty(), "{text}\n{errors:?}");
        invariants::parse(&text);
    }

    #[test]
    fn generated_programs_check_with_ranges_inside(text in program()) {
        invariants::check(&text);
    }

    #[test]
    fn generated_programs_format_idempotently(text in program()) {
        prop_assert!(fmt::format(&text).is_ok(), "{text}");
        invariants::format(&text);
    }

    #[test]
    fn an_edit_checks_as_a_fresh_check(
        text in program(),
        at in any::<prop::sample::Index>(),
        len in 0usize..12,
        insert in prop::sample::select(&["", "x", ";", "}", "{", "(", "1 +", "\n", "int z = 2;"][..]),
    ) {
        let start = at.index(text.len() + 1);
        let start = (0..=start).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
        let end = (start + len).min(text.len());
        let end = (end..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
        let mut edited = text.clone();
        edited.replace_range(start..end, insert);
        invariants::check_edit(&text, &edited);
    }
}
