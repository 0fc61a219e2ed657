/**
 * Checks that the annotated samples beside this file (run by `vscode-tmgrammar-test`) assert every
 * scope the grammar can assign, and that the grammar's word lists match `language.md`.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

const root = path.resolve(__dirname, "../../..");
const grammarPath = path.join(root, "syntaxes/nabla.tmLanguage.json");
const samplesDir = path.join(root, "test/grammar");

/** Keywords, language.md section 1. */
const KEYWORDS = [
  "char", "int", "float", "bool", "Bool", "Tensor", "void", "var", "cns", "if", "elif", "else",
  "loop", "break", "continue", "return", "function", "sizeof", "true", "false", "test", "import",
  "derivative", "struct",
];

/** Built-in functions, language.md sections 3, 5.2, 6 (`einsum`) and 7, and the library. */
const BUILTINS = [
  // 7: element-wise
  "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "ln", "log", "log2",
  "log10", "sqrt", "abs", "pow", "sigmoid", "relu", "softplus", "max", "min",
  // 7: reductions
  "sum", "mean", "prod", "norm", "logsumexp", "softmax", "log_softmax",
  // 7: shape and construction
  "zeros", "ones", "full", "eye", "arange", "reshape", "transpose", "concat", "stack", "shape",
  "rank", "all", "any",
  // 7: random
  "seed", "rand", "randn",
  // 7: linear algebra
  "inv", "det", "solve", "cholesky", "trace", "diag",
  // 7: input and output
  "print", "write", "load", "save", "load_csv",
  // 3 and 7: differentiation
  "backward", "grad", "value_and_grad", "jvp", "vjp", "hessian", "jacobian", "stop_gradient",
  "checkpoint", "vmap",
  // 5.2: tests
  "assert", "assert_eq", "assert_close", "gradcheck",
  // 6: index notation as an expression
  "einsum",
  // the library (issue 24): docs/reference/builtins.md
  "floor", "ceil", "round", "trunc", "sign", "erf", "erfc", "gelu", "silu", "softsign",
  "leaky_relu", "elu", "log1p", "expm1", "exp2", "cbrt", "isnan", "isfinite", "atan2", "hypot",
  "mod", "clip", "where", "argmax", "argmin", "std", "variance", "count_nonzero", "argsort",
  "nonzero",
  "linspace", "squeeze", "unsqueeze", "expand_dims", "tril", "triu", "one_hot", "broadcast_to",
  "kron", "outer", "randint", "permutation", "uniform", "normal", "bernoulli", "cross",
  "conv1d", "conv2d", "max_pool2d", "avg_pool2d", "cross_entropy", "nll", "mse", "bce_with_logits",
];

interface Rule {
  name?: string;
  contentName?: string;
  begin?: string;
  match?: string;
  captures?: Record<string, Rule>;
  beginCaptures?: Record<string, Rule>;
  endCaptures?: Record<string, Rule>;
  patterns?: Rule[];
  repository?: Record<string, Rule>;
}

const grammar = JSON.parse(fs.readFileSync(grammarPath, "utf8")) as Rule & { scopeName: string };
/** The grammar's rules, without its display name (which is not a scope). */
const rules: Rule = { patterns: grammar.patterns, repository: grammar.repository };

function grammarScopes(rule: Rule, into = new Set<string>()): Set<string> {
  for (const name of [rule.name, rule.contentName]) {
    for (const scope of name?.split(/\s+/) ?? []) {
      if (scope !== "") {
        into.add(scope);
      }
    }
  }
  for (const captures of [rule.captures, rule.beginCaptures, rule.endCaptures]) {
    for (const capture of Object.values(captures ?? {})) {
      grammarScopes(capture, into);
    }
  }
  for (const child of rule.patterns ?? []) {
    grammarScopes(child, into);
  }
  for (const child of Object.values(rule.repository ?? {})) {
    grammarScopes(child, into);
  }
  return into;
}

function samples(): string[] {
  return fs
    .readdirSync(samplesDir)
    .filter((file) => file.endsWith(".nb"))
    .map((file) => path.join(samplesDir, file));
}

/** The scopes that the samples' `^` and `<-` assertion lines require (not those they exclude). */
function assertedScopes(): Set<string> {
  const scopes = new Set<string>();
  for (const file of samples()) {
    for (const line of fs.readFileSync(file, "utf8").split(/\r?\n/)) {
      const assertion = /^\/\/\s*(?:\^+\s*)+(.*)$|^\/\/\s*<~*-+(.*)$/.exec(line);
      if (assertion === null) {
        continue;
      }
      const required = (assertion[1] ?? assertion[2] ?? "").split(/(?:^|\s)-(?:\s|$)/)[0];
      for (const scope of required.split(/\s+/)) {
        if (scope !== "") {
          scopes.add(scope);
        }
      }
    }
  }
  return scopes;
}

/** The alternatives of the first `(a|b|c)` group in `pattern`. */
function alternatives(pattern: string, prefix: string): string[] {
  const start = pattern.indexOf(prefix);
  assert.notEqual(start, -1, `${prefix} not found in ${pattern}`);
  const from = start + prefix.length;
  const end = pattern.indexOf(")", from);
  return pattern.slice(from, end).split("|");
}

describe("grammar coverage", () => {
  it("has annotated samples", () => {
    assert.ok(samples().length >= 5, "expected the annotated samples in test/grammar");
  });

  it("asserts every scope the grammar assigns", () => {
    const asserted = assertedScopes();
    const missing = [...grammarScopes(rules)].filter((scope) => !asserted.has(scope)).sort();
    assert.deepEqual(missing, [], "scopes the grammar assigns but no sample asserts");
  });

  it("asserts no scope the grammar never assigns", () => {
    const known = grammarScopes(rules);
    known.add(grammar.scopeName);
    const unknown = [...assertedScopes()].filter((scope) => !known.has(scope)).sort();
    assert.deepEqual(unknown, [], "scopes asserted by a sample that the grammar does not have");
  });

  it("highlights exactly the built-ins of language.md", () => {
    const builtin = grammar.repository?.["builtin-call"]?.begin ?? "";
    assert.deepEqual(alternatives(builtin, "\\b(").sort(), [...BUILTINS].sort());
  });

  it("calls every built-in in builtins.nb", () => {
    const text = fs.readFileSync(path.join(samplesDir, "builtins.nb"), "utf8");
    const uncalled = BUILTINS.filter((name) => !new RegExp(`\\b${name}\\(`).test(text));
    assert.deepEqual(uncalled, []);
  });

  it("never reads a keyword as a function call", () => {
    const call = grammar.repository?.["function-call"]?.begin ?? "";
    assert.deepEqual(alternatives(call, "(?!(?:").sort(), [...KEYWORDS].sort());
  });

  it("uses every keyword in the samples", () => {
    const text = samples()
      .map((file) => fs.readFileSync(file, "utf8"))
      .join("\n")
      .split(/\r?\n/)
      .filter((line) => !line.startsWith("//"))
      .join("\n");
    const unused = KEYWORDS.filter((keyword) => !new RegExp(`\\b${keyword}\\b`).test(text));
    assert.deepEqual(unused, []);
  });
});
