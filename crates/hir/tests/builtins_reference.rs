//! `docs/reference/builtins.md` is generated from `hir::BUILTINS`, the table the checker,
//! the interpreter and the editor read; this test fails when the page is stale and rewrites it
//! with `UPDATE_EXPECT=1`.

use std::path::PathBuf;

use hir::BUILTINS;

/// Groups of the reference page, in `language.md` order: a heading and the names it holds.
const GROUPS: &[(&str, &[&str])] = &[
    (
        "Element-wise functions",
        &[
            "sin",
            "cos",
            "tan",
            "asin",
            "acos",
            "atan",
            "sinh",
            "cosh",
            "tanh",
            "exp",
            "ln",
            "log",
            "log2",
            "log10",
            "sqrt",
            "abs",
            "sigmoid",
            "relu",
            "softplus",
            "floor",
            "ceil",
            "round",
            "trunc",
            "sign",
            "erf",
            "erfc",
            "gelu",
            "silu",
            "softsign",
            "leaky_relu",
            "elu",
            "log1p",
            "expm1",
            "exp2",
            "cbrt",
            "isnan",
            "isfinite",
            "pow",
            "max",
            "min",
            "atan2",
            "hypot",
            "mod",
            "clip",
            "where",
        ],
    ),
    (
        "Reductions, scans and sorting",
        &[
            "sum",
            "mean",
            "prod",
            "norm",
            "logsumexp",
            "softmax",
            "log_softmax",
            "argmax",
            "argmin",
            "std",
            "variance",
            "count_nonzero",
            "argsort",
            "sort",
            "topk",
            "cumsum",
            "cumprod",
            "nonzero",
        ],
    ),
    (
        "Shape and construction",
        &[
            "zeros",
            "ones",
            "full",
            "eye",
            "arange",
            "linspace",
            "reshape",
            "transpose",
            "concat",
            "stack",
            "squeeze",
            "unsqueeze",
            "expand_dims",
            "tril",
            "triu",
            "one_hot",
            "broadcast_to",
            "kron",
            "outer",
            "flip",
            "roll",
            "tile",
            "repeat",
            "pad",
            "split",
            "shape",
            "rank",
            "all",
            "any",
        ],
    ),
    (
        "Random numbers",
        &[
            "seed",
            "rand",
            "randn",
            "randint",
            "permutation",
            "shuffle",
            "uniform",
            "normal",
            "bernoulli",
        ],
    ),
    (
        "Linear algebra",
        &[
            "inv",
            "det",
            "solve",
            "cholesky",
            "qr",
            "svd",
            "eigh",
            "slogdet",
            "pinv",
            "lstsq",
            "matrix_norm",
            "trace",
            "diag",
            "cross",
            "einsum",
        ],
    ),
    (
        "Neural networks",
        &[
            "conv1d",
            "conv2d",
            "max_pool2d",
            "avg_pool2d",
            "cross_entropy",
            "nll",
            "mse",
            "bce_with_logits",
        ],
    ),
    (
        "Input and output",
        &["print", "write", "format", "print_options", "load", "save", "load_csv"],
    ),
    ("Plots and images", &["plot", "scatter", "histogram", "save_image"]),
    (
        "Differentiation",
        &[
            "backward",
            "grad",
            "value_and_grad",
            "jvp",
            "vjp",
            "hessian",
            "jacobian",
            "stop_gradient",
            "checkpoint",
            "vmap",
        ],
    ),
    ("Tests", &["assert", "assert_eq", "assert_close", "gradcheck"]),
];

/// What the page says after the tables: the conventions every entry shares, and the functions
/// that wait for tuples.
const NOTES: &str = "\n## Conventions\n\n\
- Arguments are positional, options last, in NumPy's order (`language.md` section 9). Axes run \
from 0 to `rank - 1`. `keepdims`, where a reduction takes it, is the literal \
`true` or `false`, because it decides the result's rank.\n\
- Index results (`argmax` along an axis, `argsort`, `nonzero`, `permutation`, `randint`) and \
labels (`one_hot`, `cross_entropy`, `nll`) are float tensors holding exact integers, as every \
tensor is float.\n\
- Derivatives at kinks and ties are documented on each entry and in `autodiff.md`; \
differentiable entries are differentiable to any order, also at those points.\n\
\n## Functions that return several results\n\n\
Where NumPy or PyTorch return several arrays, Nabla returns a tuple (`records.md`): `topk` gives \
its values and their indices, `split` its parts, `qr`, `svd`, `eigh` and `slogdet` their factors. A tuple is taken apart by a destructuring \
declaration, `(Tensor v[2], Tensor i[2]) = topk(x, 2);`, or returned whole by a function of \
several results.\n";

fn render() -> String {
    let mut out = String::from(
        "# Built-in functions\n\n\
         Generated from `crates/hir/src/builtins.rs` by `crates/hir/tests/builtins_reference.rs`; \
         do not edit by hand. The checker, the interpreter and the editor's hover and completion \
         all read that one table.\n",
    );
    for (heading, names) in GROUPS {
        out.push_str(&format!(
            "\n## {heading}\n\n| signature | differentiable | what it does |\n|---|---|---|\n"
        ));
        for name in *names {
            for info in BUILTINS.iter().filter(|info| info.name == *name) {
                let diff = if info.differentiable { "yes" } else { "no" };
                let doc = info.doc.replace('|', "\\|").replace('\n', " ");
                out.push_str(&format!("| `{}` | {diff} | {doc} |\n", info.signature));
            }
        }
    }
    out.push_str(NOTES);
    out
}

#[test]
fn every_builtin_is_in_one_group() {
    for info in BUILTINS {
        let groups = GROUPS.iter().filter(|(_, names)| names.contains(&info.name)).count();
        assert_eq!(groups, 1, "`{}` must be listed in exactly one group", info.name);
    }
}

#[test]
fn builtins_reference_is_fresh() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/builtins.md");
    let expected = render();
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    if actual != expected {
        if std::env::var_os("UPDATE_EXPECT").is_some() {
            std::fs::write(&path, expected).unwrap_or_else(|err| panic!("{err}"));
        } else {
            panic!(
                "{} is stale; run UPDATE_EXPECT=1 cargo test -p hir --test builtins_reference",
                path.display()
            );
        }
    }
}
