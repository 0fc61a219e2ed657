//! The built-in functions of `language.md` sections 3, 5.2 and 7: one table that the checker
//! (typing rule, arity), the interpreter (which maps each [`Builtin`] to its implementation) and
//! the editor (signature, documentation) all read.

/// A built-in function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Builtin {
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Exp,
    Ln,
    Log,
    Log2,
    Log10,
    Sqrt,
    Abs,
    Sigmoid,
    Relu,
    Softplus,
    Pow,
    Max,
    Min,
    Sum,
    Mean,
    Prod,
    Norm,
    Logsumexp,
    Softmax,
    LogSoftmax,
    Zeros,
    Ones,
    Full,
    Eye,
    Arange,
    Reshape,
    Transpose,
    Concat,
    Stack,
    Shape,
    Rank,
    All,
    Any,
    Seed,
    Rand,
    Randn,
    Inv,
    Det,
    Solve,
    Cholesky,
    Trace,
    Diag,
    Print,
    Write,
    PrintOptions,
    Load,
    Save,
    LoadCsv,
    Backward,
    Grad,
    Jvp,
    Vjp,
    Hessian,
    Jacobian,
    Assert,
    AssertEq,
    AssertClose,
    Gradcheck,
    Einsum,
}

/// The modes `print_options` takes as a string: the defaults, the one-line shortest round-trip
/// form, and the grid with every digit of that form.
pub const PRINT_MODES: [&str; 3] = ["default", "line", "exact"];

/// How a built-in's result type follows from its arguments; [`crate::infer`] implements each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// `sin(x)`: `float` (or `int`) to `float`, a tensor to the same shape.
    Elementwise,
    /// `pow(x, p)`: both broadcast; the result has the broadcast shape.
    ElementwiseBinary,
    /// `max(a, b)` element-wise, or `max(t)` / `max(t, axis)` as a reduction.
    MaxMin,
    /// `sum(t)` is a `float`; `sum(t, axis)` drops that axis.
    Reduction,
    /// `softmax(t, axis)`: same shape as `t`.
    SameShapeAxis,
    /// `zeros([d0, d1])`: the shape is the list.
    FromShapeList,
    /// `full([d0, d1], v)`.
    Full,
    Eye,
    Arange,
    Reshape,
    Transpose,
    Concat,
    Stack,
    /// `shape(t, axis)`, `rank(t)`: an `int`.
    ShapeQuery,
    /// `all(t)`, `any(t)`: a `bool`.
    Truth,
    /// `seed(n)`: `void`.
    Seed,
    /// `inv(A)`, `cholesky(A)`: a square matrix to one of the same shape.
    SquareToSquare,
    /// `det(A)`, `trace(A)`: a square matrix to a `float`.
    SquareToScalar,
    Solve,
    Diag,
    /// `print(a, b, ...)` and `write(a, b, ...)`: `void`; strings are allowed as arguments.
    Print,
    /// `print_options(precision, threshold, line_width, suppress_small)` or
    /// `print_options("line")`: `void`.
    PrintOptions,
    /// `load("x.npy")`, `load_csv(...)`: a tensor of unknown shape.
    Load,
    Save,
    Backward,
    /// `grad(x)` on a variable; `grad(f)` on a function is a transform, not this rule.
    GradOfVariable,
    /// `jvp`, `vjp`, `hessian`, `jacobian`: only as transforms of functions.
    TransformOnly,
    Assert,
    AssertEq,
    AssertClose,
    Gradcheck,
    Einsum,
}

/// One row of the table.
#[derive(Debug, Clone, Copy)]
pub struct BuiltinInfo {
    pub builtin: Builtin,
    pub name: &'static str,
    /// Fewest and most arguments; `None` for no upper bound.
    pub min_args: usize,
    pub max_args: Option<usize>,
    pub rule: Rule,
    /// Whether gradients flow through it.
    pub differentiable: bool,
    /// The signature as the editor shows it.
    pub signature: &'static str,
    pub doc: &'static str,
}

macro_rules! table {
    ($($variant:ident $name:literal $min:literal..$max:tt $rule:ident $diff:literal $sig:literal $doc:literal;)*) => {
        /// Every built-in, in the order of `language.md`.
        pub const BUILTINS: &[BuiltinInfo] = &[$(BuiltinInfo {
            builtin: Builtin::$variant,
            name: $name,
            min_args: $min,
            max_args: table!(@max $max),
            rule: Rule::$rule,
            differentiable: $diff,
            signature: $sig,
            doc: $doc,
        },)*];
    };
    (@max inf) => { None };
    (@max $n:literal) => { Some($n) };
}

table! {
    Sin "sin" 1..1 Elementwise true "sin(x)" "Sine, element-wise.";
    Cos "cos" 1..1 Elementwise true "cos(x)" "Cosine, element-wise.";
    Tan "tan" 1..1 Elementwise true "tan(x)" "Tangent, element-wise.";
    Asin "asin" 1..1 Elementwise true "asin(x)" "Arcsine, element-wise.";
    Acos "acos" 1..1 Elementwise true "acos(x)" "Arccosine, element-wise.";
    Atan "atan" 1..1 Elementwise true "atan(x)" "Arctangent, element-wise.";
    Sinh "sinh" 1..1 Elementwise true "sinh(x)" "Hyperbolic sine, element-wise.";
    Cosh "cosh" 1..1 Elementwise true "cosh(x)" "Hyperbolic cosine, element-wise.";
    Tanh "tanh" 1..1 Elementwise true "tanh(x)" "Hyperbolic tangent, element-wise.";
    Exp "exp" 1..1 Elementwise true "exp(x)" "e raised to x, element-wise.";
    Ln "ln" 1..1 Elementwise true "ln(x)" "Natural logarithm, element-wise.";
    Log "log" 1..1 Elementwise true "log(x)" "Natural logarithm, element-wise (the same as `ln`).";
    Log2 "log2" 1..1 Elementwise true "log2(x)" "Base-2 logarithm, element-wise.";
    Log10 "log10" 1..1 Elementwise true "log10(x)" "Base-10 logarithm, element-wise.";
    Sqrt "sqrt" 1..1 Elementwise true "sqrt(x)" "Square root, element-wise.";
    Abs "abs" 1..1 Elementwise true "abs(x)" "Absolute value, element-wise.";
    Sigmoid "sigmoid" 1..1 Elementwise true "sigmoid(x)" "Logistic function 1 / (1 + e^-x), element-wise.";
    Relu "relu" 1..1 Elementwise true "relu(x)" "max(x, 0), element-wise.";
    Softplus "softplus" 1..1 Elementwise true "softplus(x)" "ln(1 + e^x), element-wise.";
    Pow "pow" 2..2 ElementwiseBinary true "pow(x, p)" "x raised to p, element-wise with broadcasting.";
    Max "max" 1..2 MaxMin true "max(a, b) | max(t) | max(t, axis)" "The larger of a and b element-wise (the gradient goes to the larger input); with one tensor, or a tensor and an int axis, its maximum.";
    Min "min" 1..2 MaxMin true "min(a, b) | min(t) | min(t, axis)" "The smaller of a and b element-wise; with one tensor, or a tensor and an int axis, its minimum.";
    Sum "sum" 1..2 Reduction true "sum(t) | sum(t, axis)" "Sum of the elements, or along one axis.";
    Mean "mean" 1..2 Reduction true "mean(t) | mean(t, axis)" "Mean of the elements, or along one axis.";
    Prod "prod" 1..2 Reduction true "prod(t) | prod(t, axis)" "Product of the elements, or along one axis.";
    Norm "norm" 1..2 Reduction true "norm(t) | norm(t, axis)" "Euclidean norm of the elements, or along one axis.";
    Logsumexp "logsumexp" 1..2 Reduction true "logsumexp(t) | logsumexp(t, axis)" "ln(sum(exp(t))), computed stably, or along one axis.";
    Softmax "softmax" 1..2 SameShapeAxis true "softmax(t, axis)" "Softmax along an axis (the last by default).";
    LogSoftmax "log_softmax" 1..2 SameShapeAxis true "log_softmax(t, axis)" "Logarithm of the softmax along an axis (the last by default).";
    Zeros "zeros" 1..1 FromShapeList false "zeros([d0, d1, ...])" "A tensor of zeros of the given shape.";
    Ones "ones" 1..1 FromShapeList false "ones([d0, d1, ...])" "A tensor of ones of the given shape.";
    Full "full" 2..2 Full false "full([d0, d1, ...], v)" "A tensor of the given shape filled with v.";
    Eye "eye" 1..1 Eye false "eye(n)" "The n-by-n identity matrix.";
    Arange "arange" 1..1 Arange false "arange(n)" "The vector [0, 1, ..., n - 1].";
    Reshape "reshape" 2..2 Reshape true "reshape(t, [d0, d1, ...])" "The elements of t, row-major, in a new shape with the same number of elements.";
    Transpose "transpose" 1..2 Transpose true "transpose(t) | transpose(t, [axes])" "Reverses the axes, or permutes them as listed.";
    Concat "concat" 3..3 Concat true "concat(a, b, axis)" "Joins two tensors along an existing axis.";
    Stack "stack" 2..2 Stack true "stack(a, b)" "Joins two tensors of one shape along a new first axis.";
    Shape "shape" 2..2 ShapeQuery false "shape(t, axis)" "The extent of an axis, as an int.";
    Rank "rank" 1..1 ShapeQuery false "rank(t)" "The number of axes, as an int.";
    All "all" 1..1 Truth false "all(t)" "Whether every element is non-zero.";
    Any "any" 1..1 Truth false "any(t)" "Whether some element is non-zero.";
    Seed "seed" 1..1 Seed false "seed(n)" "Seeds the random generator; runs are reproducible across machines.";
    Rand "rand" 1..1 FromShapeList false "rand([d0, d1, ...])" "Uniform random numbers in [0, 1) of the given shape.";
    Randn "randn" 1..1 FromShapeList false "randn([d0, d1, ...])" "Standard normal random numbers of the given shape.";
    Inv "inv" 1..1 SquareToSquare true "inv(A)" "The inverse of a square matrix.";
    Det "det" 1..1 SquareToScalar true "det(A)" "The determinant of a square matrix.";
    Solve "solve" 2..2 Solve true "solve(A, b)" "The x with A @ x == b, for a square A.";
    Cholesky "cholesky" 1..1 SquareToSquare true "cholesky(A)" "The lower-triangular L with L @ transpose(L) == A.";
    Trace "trace" 1..1 SquareToScalar true "trace(A)" "The sum of the diagonal of a square matrix.";
    Diag "diag" 1..1 Diag true "diag(v)" "The square matrix with v on its diagonal; of a matrix, its diagonal.";
    Print "print" 0..inf Print false "print(a, b, ...)" "Prints the values separated by one space, then a newline.";
    Write "write" 0..inf Print false "write(a, b, ...)" "Prints the values like `print`, separated by one space, without a newline at the end, then flushes standard output: `write(\"\\repoch\", n)` rewrites the current line.";
    PrintOptions "print_options" 1..4 PrintOptions false "print_options(precision, threshold, line_width, suppress_small) | print_options(\"line\")" "How `print` and `write` lay out tensors from here on: at most `precision` decimals (8), summarised past `threshold` elements (1000), rows wrapped at `line_width` characters (75), and with `suppress_small` numbers too small for the precision shown as zero instead of in scientific notation (false). `print_options(\"line\")` prints tensors on one line in the shortest round-trip form, `\"exact\"` lays them out with every digit of that form, `\"default\"` restores the defaults.";
    Load "load" 1..1 Load false "load(\"x.npy\")" "Reads a NumPy .npy file (float64) relative to the source file.";
    Save "save" 2..2 Save false "save(t, \"x.npy\")" "Writes a tensor as a NumPy .npy file relative to the source file; a float or int as a rank-0 array.";
    LoadCsv "load_csv" 1..1 Load false "load_csv(\"x.csv\")" "Reads a CSV file of numbers as a matrix, relative to the source file.";
    Backward "backward" 1..1 Backward false "backward(y)" "Computes the gradients of the sum of y with respect to everything recorded, then releases the graph.";
    Grad "grad" 1..2 GradOfVariable false "grad(x) | grad(f)(args) | grad(f, k)(args)" "The gradient the last backward computed for variable x; of a function, its gradient with respect to parameter k (default 0).";
    Jvp "jvp" 1..1 TransformOnly false "jvp(f)(args..., tangent)" "Forward-mode directional derivative of f along a tangent of its first parameter.";
    Vjp "vjp" 1..1 TransformOnly false "vjp(f)(args..., cotangent)" "Reverse mode: a cotangent of f's result pulled back to its first parameter.";
    Hessian "hessian" 1..1 TransformOnly false "hessian(f)(args)" "Hessian of a scalar f in its first parameter.";
    Jacobian "jacobian" 1..1 TransformOnly false "jacobian(f)(args)" "Jacobian of f in its first parameter: Tensor[m][n] for f: Tensor[n] -> Tensor[m].";
    Assert "assert" 1..2 Assert false "assert(cond) | assert(cond, \"message\")" "Fails the test when cond is false.";
    AssertEq "assert_eq" 2..2 AssertEq false "assert_eq(a, b)" "Fails the test unless a and b are exactly equal.";
    AssertClose "assert_close" 2..4 AssertClose false "assert_close(a, b, rtol, atol)" "Fails the test unless a and b agree within rtol (1e-6) and atol (1e-9).";
    Gradcheck "gradcheck" 2..inf Gradcheck false "gradcheck(f, args...)" "Compares grad(f) with central finite differences at args.";
    Einsum "einsum" 2..inf Einsum true "einsum(\"ik,kj->ij\", A, B)" "Einstein summation over the operands, as NumPy's einsum.";
}

impl Builtin {
    pub fn from_name(name: &str) -> Option<Builtin> {
        BUILTINS.iter().find(|info| info.name == name).map(|info| info.builtin)
    }

    pub fn info(self) -> &'static BuiltinInfo {
        // The table lists every variant in declaration order.
        &BUILTINS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_in_variant_order() {
        for (i, info) in BUILTINS.iter().enumerate() {
            assert_eq!(info.builtin as usize, i, "{} is out of order", info.name);
            assert_eq!(Builtin::from_name(info.name), Some(info.builtin));
        }
    }
}
