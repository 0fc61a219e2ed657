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
    Floor,
    Ceil,
    Round,
    Trunc,
    Sign,
    Erf,
    Erfc,
    Gelu,
    Silu,
    Softsign,
    LeakyRelu,
    Elu,
    Log1p,
    Expm1,
    Exp2,
    Cbrt,
    IsNan,
    IsFinite,
    Pow,
    Max,
    Min,
    Atan2,
    Hypot,
    Mod,
    Clip,
    Where,
    Sum,
    Mean,
    Prod,
    Norm,
    Logsumexp,
    Softmax,
    LogSoftmax,
    Argmax,
    Argmin,
    Std,
    Variance,
    CountNonzero,
    Argsort,
    Sort,
    Topk,
    Cumsum,
    Cumprod,
    Nonzero,
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
    Linspace,
    Squeeze,
    Unsqueeze,
    ExpandDims,
    Tril,
    Triu,
    OneHot,
    BroadcastTo,
    Kron,
    Outer,
    Flip,
    Roll,
    Tile,
    Repeat,
    Pad,
    Split,
    Seed,
    Rand,
    Randn,
    Randint,
    Permutation,
    Shuffle,
    Uniform,
    Normal,
    Bernoulli,
    Inv,
    Det,
    Solve,
    Cholesky,
    Qr,
    Svd,
    Eigh,
    Slogdet,
    Pinv,
    Lstsq,
    MatrixNorm,
    Trace,
    Diag,
    Cross,
    Conv1d,
    Conv2d,
    MaxPool2d,
    AvgPool2d,
    CrossEntropy,
    Nll,
    Mse,
    BceWithLogits,
    Print,
    Write,
    Format,
    PrintOptions,
    Load,
    Save,
    LoadCsv,
    Plot,
    Scatter,
    Histogram,
    SaveImage,
    Backward,
    Grad,
    ValueAndGrad,
    Jvp,
    Vjp,
    Hessian,
    Jacobian,
    Checkpoint,
    Vmap,
    StopGradient,
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
    /// `gelu(x, "tanh")`, `leaky_relu(x, slope)`, `elu(x, alpha)`: element-wise with an optional
    /// option (a string for `gelu`, a number otherwise).
    Activation,
    /// `isnan(x)`: a `bool` of a number, a 0/1 mask of a tensor.
    Predicate,
    /// `pow(x, p)`: both broadcast; the result has the broadcast shape.
    ElementwiseBinary,
    /// `clip(x, lo, hi)`, `where(mask, a, b)`: three operands that broadcast together.
    Ternary,
    /// `max(a, b)` element-wise, or `max(t)` / `max(t, axis)` as a reduction.
    MaxMin,
    /// `sum(t)` is a `float`; `sum(t, axis)` drops that axis.
    Reduction,
    /// `softmax(t, axis)`: same shape as `t`.
    SameShapeAxis,
    /// `argmax(t)` is an `int` (a row-major position); `argmax(t, axis, keepdims)` a tensor.
    ArgReduction,
    /// `std(t, axis, ddof, keepdims)`, `variance(...)`.
    Moment,
    /// `argsort(t, axis)`, `sort`, `flip`, `shuffle`: the same shape, with an optional axis.
    Sort,
    /// `topk(t, k, axis)`: a tuple of values and indices, with extent `k` along the axis.
    TopK,
    /// `cumsum(t, axis)`: the same shape; without an axis, the row-major elements.
    Scan,
    /// `nonzero(m)`: a `Tensor[?]`, its extent known when it runs.
    Nonzero,
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
    /// `all(t)`, `any(t)`: a `bool`; along an axis, a mask.
    Truth,
    /// `linspace(start, stop, num)`.
    Linspace,
    /// `squeeze(t)`, `squeeze(t, axis)`.
    Squeeze,
    /// `unsqueeze(t, axis)`, `expand_dims(t, axis)`.
    Unsqueeze,
    /// `tril(t, k)`, `triu(t, k)`: the same shape, rank 2 or more.
    Triangle,
    /// `one_hot(labels, n)`: one more axis of extent `n`.
    OneHot,
    /// `broadcast_to(t, [d0, d1, ...])`.
    BroadcastTo,
    Kron,
    Outer,
    /// `roll(t, shift, axis)`: the same shape.
    Roll,
    /// `tile(t, [r0, r1, ...])`: each extent times its repetitions.
    Tile,
    /// `repeat(t, r, axis)`: the extent along the axis times `r`, or `r * sizeof t`.
    Repeat,
    /// `pad(t, widths, mode)`: each extent plus its widths.
    Pad,
    /// `split(t, n, axis)`: a tuple of `n` parts.
    Split,
    /// `seed(n)`: `void`.
    Seed,
    /// `randint(low, high, [d0, ...])`.
    Randint,
    /// `permutation(n)`: `Tensor[n]`.
    Permutation,
    /// `uniform(lo, hi, [d0, ...])`, `normal(mean, std, shape)`, `bernoulli(p, shape)`: the
    /// parameters broadcast to the shape.
    Distribution,
    /// `inv(A)`, `cholesky(A)`: a square matrix to one of the same shape.
    SquareToSquare,
    /// `det(A)`, `trace(A)`: a square matrix to a `float`.
    SquareToScalar,
    Solve,
    /// `qr(A)`, `svd(A)`, `eigh(A)`, `slogdet(A)`: a tuple of the factors.
    Decomposition,
    /// `pinv(A)`: `[..., m, n]` to `[..., n, m]`.
    Pinv,
    /// `lstsq(A, b)`: `[m][n]` and `[m]` or `[m][k]` to `[n]` or `[n][k]`.
    Lstsq,
    /// `matrix_norm(A, ord)`: a float of a matrix, a tensor of a stack.
    MatrixNorm,
    Diag,
    /// `cross(a, b)`: vectors of 3 along the last axis, broadcasting.
    Cross,
    /// `conv1d(x, w, stride, padding, dilation, groups)` on `[N][C][L]` with weights `[O][C / groups][K]`,
    /// `conv2d` on `[N][C][H][W]` with `[O][C / groups][KH][KW]`: `[N][O][positions...]`.
    Conv,
    /// `max_pool2d(x, k, stride, padding)`, `avg_pool2d(...)`: `[N][C][H][W]` to
    /// `[N][C][positions][positions]`.
    Pool,
    /// `cross_entropy(logits, labels)`, `nll(log_probs, labels)`: `[N][C]` and `[N]` to a float.
    ClassLoss,
    /// `mse(prediction, target)`, `bce_with_logits(logits, target)`: one shape to a float.
    PairLoss,
    /// `print(a, b, ...)` and `write(a, b, ...)`: `void`; strings are allowed as arguments.
    Print,
    /// `format("epoch {} loss {:.4}", e, l)`: text for `print` and `write`.
    Format,
    /// `print_options(precision, threshold, line_width, suppress_small)` or
    /// `print_options("line")`: `void`.
    PrintOptions,
    /// `load("x.npy")`, `load_csv(...)`: a tensor of unknown shape.
    Load,
    Save,
    /// `plot("loss.svg", y, ...)`: a Tensor[n] or Tensor[k][n], then optional strings; `void`.
    Plot,
    /// `scatter("points.svg", x, y, ...)`: two tensors, then optional strings; `void`.
    Scatter,
    /// `histogram("h.svg", t, bins, ...)`: a tensor and an `int`, then an optional string.
    Histogram,
    /// `save_image("digits.png", x)`: a Tensor[h][w] or Tensor[n][h][w]; `void`.
    SaveImage,
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
    Floor "floor" 1..1 Elementwise true "floor(x)" "The largest integer not above x, element-wise; its derivative is 0.";
    Ceil "ceil" 1..1 Elementwise true "ceil(x)" "The smallest integer not below x, element-wise; its derivative is 0.";
    Round "round" 1..1 Elementwise true "round(x)" "The nearest integer, element-wise, halves to even as in NumPy (round(2.5) is 2.0); its derivative is 0.";
    Trunc "trunc" 1..1 Elementwise true "trunc(x)" "x without its fraction (rounded toward zero), element-wise; its derivative is 0.";
    Sign "sign" 1..1 Elementwise true "sign(x)" "-1, 0 or 1 by the sign of x, element-wise (NaN stays NaN); its derivative is 0.";
    Erf "erf" 1..1 Elementwise true "erf(x)" "The error function, element-wise.";
    Erfc "erfc" 1..1 Elementwise true "erfc(x)" "1 - erf(x), accurate where erf(x) is close to 1, element-wise.";
    Gelu "gelu" 1..2 Activation true "gelu(x) | gelu(x, \"tanh\")" "x Φ(x) with Φ the standard normal distribution function, element-wise; with \"tanh\", its tanh approximation x (1 + tanh(√(2/π) (x + 0.044715 x^3))) / 2, as PyTorch's approximate=\"tanh\".";
    Silu "silu" 1..1 Elementwise true "silu(x)" "x sigmoid(x) (also called swish), element-wise.";
    Softsign "softsign" 1..1 Elementwise true "softsign(x)" "x / (1 + |x|), element-wise.";
    LeakyRelu "leaky_relu" 1..2 Activation true "leaky_relu(x) | leaky_relu(x, slope)" "x where x > 0, else slope x (slope 0.01 by default), element-wise; the derivative at 0 is slope, as in PyTorch.";
    Elu "elu" 1..2 Activation true "elu(x) | elu(x, alpha)" "x where x > 0, else alpha (e^x - 1) (alpha 1 by default), element-wise.";
    Log1p "log1p" 1..1 Elementwise true "log1p(x)" "ln(1 + x), accurate for small x, element-wise.";
    Expm1 "expm1" 1..1 Elementwise true "expm1(x)" "e^x - 1, accurate for small x, element-wise.";
    Exp2 "exp2" 1..1 Elementwise true "exp2(x)" "2 raised to x, element-wise (exact at integers).";
    Cbrt "cbrt" 1..1 Elementwise true "cbrt(x)" "The real cube root, element-wise.";
    IsNan "isnan" 1..1 Predicate false "isnan(x)" "Whether x is NaN: a bool of a number, a mask of 0.0 and 1.0 of a tensor.";
    IsFinite "isfinite" 1..1 Predicate false "isfinite(x)" "Whether x is neither infinite nor NaN: a bool of a number, a mask of a tensor.";
    Pow "pow" 2..2 ElementwiseBinary true "pow(x, p)" "x raised to p, element-wise with broadcasting.";
    Max "max" 1..3 MaxMin true "max(a, b) | max(t) | max(t, axis, keepdims)" "The larger of a and b element-wise (the gradient goes to the larger input); with one tensor, or a tensor and an int axis, its maximum.";
    Min "min" 1..3 MaxMin true "min(a, b) | min(t) | min(t, axis, keepdims)" "The smaller of a and b element-wise; with one tensor, or a tensor and an int axis, its minimum.";
    Atan2 "atan2" 2..2 ElementwiseBinary true "atan2(y, x)" "The angle of the point (x, y) in [-π, π], element-wise with broadcasting; the gradient at the origin is 0.";
    Hypot "hypot" 2..2 ElementwiseBinary true "hypot(a, b)" "sqrt(a^2 + b^2) without overflow, element-wise with broadcasting; the gradient at the origin is 0.";
    Mod "mod" 2..2 ElementwiseBinary true "mod(a, b)" "Floored modulo: a - floor(a / b) b, with the sign of b (Python's and NumPy's %; C's % keeps the sign of a). Two ints give an int.";
    Clip "clip" 3..3 Ternary true "clip(x, lo, hi)" "min(max(x, lo), hi) element-wise, all three broadcasting; the gradient goes to x where lo <= x <= hi (bounds included, as in PyTorch), else to the bound.";
    Where "where" 3..3 Ternary true "where(mask, a, b)" "a where mask is non-zero, else b, element-wise with broadcasting; the gradient of each branch is 0 where it is not chosen. Both branches are computed: guard the input of one whose derivative is infinite where it is not chosen, as in where(x > 0, ln(where(x > 0, x, 1.0)), 0.0).";
    Sum "sum" 1..3 Reduction true "sum(t) | sum(t, axis, keepdims)" "Sum of the elements, or along one axis.";
    Mean "mean" 1..3 Reduction true "mean(t) | mean(t, axis, keepdims)" "Mean of the elements, or along one axis.";
    Prod "prod" 1..3 Reduction true "prod(t) | prod(t, axis, keepdims)" "Product of the elements, or along one axis.";
    Norm "norm" 1..4 Reduction true "norm(t) | norm(t, axis, ord, keepdims)" "Euclidean norm of the elements, or along one axis; with ord, the vector norm of that order: p for (sum |x|^p)^(1/p), \"inf\" and \"-inf\" for the largest and smallest |x|, 0 for the count of non-zeros. The gradient at 0 is 0.";
    Logsumexp "logsumexp" 1..3 Reduction true "logsumexp(t) | logsumexp(t, axis, keepdims)" "ln(sum(exp(t))), computed stably, or along one axis.";
    Softmax "softmax" 1..2 SameShapeAxis true "softmax(t, axis)" "Softmax along an axis (the last by default).";
    LogSoftmax "log_softmax" 1..2 SameShapeAxis true "log_softmax(t, axis)" "Logarithm of the softmax along an axis (the last by default).";
    Argmax "argmax" 1..3 ArgReduction false "argmax(t) | argmax(t, axis, keepdims)" "The position of the first largest element (a NaN counts as largest): an int indexing the row-major elements, or along an axis a tensor of positions.";
    Argmin "argmin" 1..3 ArgReduction false "argmin(t) | argmin(t, axis, keepdims)" "The position of the first smallest element (a NaN counts as smallest), as argmax.";
    Std "std" 1..4 Moment true "std(t) | std(t, axis, ddof, keepdims)" "Standard deviation of the elements, or along an axis, dividing by the count less ddof (0 by default); the gradient where it is 0 is 0.";
    Variance "variance" 1..4 Moment true "variance(t) | variance(t, axis, ddof, keepdims)" "Variance of the elements, or along an axis, dividing by the count less ddof (0 by default); NumPy's var (`var` is a keyword).";
    CountNonzero "count_nonzero" 1..3 ArgReduction false "count_nonzero(t) | count_nonzero(t, axis, keepdims)" "The number of non-zero elements (NaN counts): an int, or along an axis a tensor of counts.";
    Argsort "argsort" 1..3 Sort false "argsort(t) | argsort(t, axis) | argsort(t, axis, descending)" "The positions that sort t along an axis (the last by default): stable, NaN last, as NumPy's kind=\"stable\"; with descending true, the positions of the descending order, stable, NaN first, as PyTorch's argsort(descending=True, stable=True).";
    Sort "sort" 1..3 Sort true "sort(t) | sort(t, axis) | sort(t, axis, descending)" "t sorted ascending along an axis (the last by default): stable, NaN last, as NumPy's sort; with descending true, largest first, NaN first, as PyTorch's sort(descending=True) and topk. Each element of the gradient goes to the element sorted to its place (tied elements keep their order).";
    Topk "topk" 2..3 TopK true "topk(t, k) | topk(t, k, axis)" "The k largest elements along an axis (the last by default), largest first, and their positions: the tuple (values, indices), with extent k along the axis, as PyTorch's topk (NaN counts as largest; of tied elements the first comes first). Take it apart: (Tensor v[2], Tensor i[2]) = topk(x, 2);. The gradient goes to the elements taken.";
    Cumsum "cumsum" 1..2 Scan true "cumsum(t) | cumsum(t, axis)" "The running sums along an axis; without one, of the row-major elements (a Tensor[sizeof t]), as NumPy's cumsum.";
    Cumprod "cumprod" 1..2 Scan true "cumprod(t) | cumprod(t, axis)" "The running products along an axis; without one, of the row-major elements, as NumPy's cumprod. Its derivatives are exact where elements are 0, and cost n^2 per lane of n elements.";
    Nonzero "nonzero" 1..1 Nonzero false "nonzero(m)" "The row-major positions of the non-zero elements of m, in order, as a Tensor[?] (NumPy's flatnonzero; of a Tensor[n], np.nonzero(m)[0]). x[nonzero(m)] is x[m] for a mask m of rank 1.";
    Zeros "zeros" 1..1 FromShapeList false "zeros([d0, d1, ...])" "A tensor of zeros of the given shape.";
    Ones "ones" 1..1 FromShapeList false "ones([d0, d1, ...])" "A tensor of ones of the given shape.";
    Full "full" 2..2 Full false "full([d0, d1, ...], v)" "A tensor of the given shape filled with v.";
    Eye "eye" 1..1 Eye false "eye(n)" "The n-by-n identity matrix.";
    Arange "arange" 1..3 Arange false "arange(n) | arange(start, stop, step)" "The vector [0, 1, ..., n - 1]; with start and stop, from start by step (1 by default) while below stop (above it for a negative step), as NumPy's arange.";
    Reshape "reshape" 2..2 Reshape true "reshape(t, [d0, d1, ...])" "The elements of t, row-major, in a new shape with the same number of elements; one extent may be -1, the number that makes the counts agree.";
    Transpose "transpose" 1..2 Transpose true "transpose(t) | transpose(t, [axes])" "Reverses the axes, or permutes them as listed.";
    Concat "concat" 2..inf Concat true "concat(a, b, ..., axis)" "Joins tensors along an existing axis (the first when the last argument is not an int axis).";
    Stack "stack" 1..inf Stack true "stack(a, b, ...)" "Joins tensors of one shape along a new first axis.";
    Shape "shape" 2..2 ShapeQuery false "shape(t, axis)" "The extent of an axis, as an int.";
    Rank "rank" 1..1 ShapeQuery false "rank(t)" "The number of axes, as an int.";
    All "all" 1..3 Truth false "all(t) | all(t, axis, keepdims)" "Whether every element is non-zero (true of none); along an axis, a mask.";
    Any "any" 1..3 Truth false "any(t) | any(t, axis, keepdims)" "Whether some element is non-zero (false of none); along an axis, a mask.";
    Linspace "linspace" 3..3 Linspace false "linspace(start, stop, num)" "num evenly spaced numbers from start to stop, both included.";
    Squeeze "squeeze" 1..2 Squeeze true "squeeze(t) | squeeze(t, axis)" "t without its axes of extent 1, or without that one axis (which must have extent 1).";
    Unsqueeze "unsqueeze" 2..2 Unsqueeze true "unsqueeze(t, axis)" "t with a new axis of extent 1 at position axis (rank(t) appends it), as PyTorch's unsqueeze.";
    ExpandDims "expand_dims" 2..2 Unsqueeze true "expand_dims(t, axis)" "The same as unsqueeze, under NumPy's name.";
    Tril "tril" 1..2 Triangle true "tril(t) | tril(t, k)" "The lower triangle of each matrix of t (the last two axes): elements on and below the k-th diagonal kept, the others 0.";
    Triu "triu" 1..2 Triangle true "triu(t) | triu(t, k)" "The upper triangle of each matrix of t: elements on and above the k-th diagonal kept, the others 0.";
    OneHot "one_hot" 2..2 OneHot false "one_hot(labels, n)" "A new last axis of n: 1.0 at each label's position, 0.0 elsewhere; labels must be integers in 0..n.";
    BroadcastTo "broadcast_to" 2..2 BroadcastTo true "broadcast_to(t, [d0, d1, ...])" "t broadcast to a shape, as NumPy's broadcast_to.";
    Kron "kron" 2..2 Kron true "kron(a, b)" "The Kronecker product: each element of a times the whole of b, as NumPy's kron.";
    Outer "outer" 2..2 Outer true "outer(a, b)" "The outer product of the elements of a and b, a Tensor[sizeof a][sizeof b].";
    Flip "flip" 1..2 Sort true "flip(t) | flip(t, axis)" "t with the order of its elements reversed along an axis, or along every axis without one, as NumPy's flip.";
    Roll "roll" 2..3 Roll true "roll(t, shift) | roll(t, shift, axis)" "t with its elements moved shift places along an axis, those past the end coming round to the start (a negative shift moves them back); without an axis, along the row-major order of all elements, as NumPy's roll.";
    Tile "tile" 2..2 Tile true "tile(t, [r0, r1, ...])" "t repeated r_i times along axis i; the shorter of the shape and the list is extended with leading 1s, as NumPy's tile.";
    Repeat "repeat" 2..3 Repeat true "repeat(t, r) | repeat(t, r, axis)" "Each element repeated r times in a row along an axis; without an axis, of the row-major elements (a Tensor[r * sizeof t]), as NumPy's repeat.";
    Pad "pad" 2..4 Pad true "pad(t, w) | pad(t, [[b0, a0], [b1, a1], ...]) | pad(t, widths, mode) | pad(t, widths, \"constant\", value)" "t with w new elements on both sides of every axis, or b_i before and a_i after axis i, as NumPy's pad; mode \"constant\" fills zeros (the default) or value (NumPy's constant_values, differentiable), \"reflect\" the mirror image without the edge element (widths below the extent), \"edge\" the edge element.";
    Split "split" 2..3 Split true "split(t, n) | split(t, n, axis) | split(t, [i, j, ...]) | split(t, [i, j, ...], axis)" "t cut into n equal parts along an axis (the first by default), as NumPy's split into sections: a tuple of n tensors, with n a constant of 2 or more that divides the extent; or cut at the indices i, j, ..., as NumPy's split at indices: the parts before i, from i to j, ..., and from the last index on, each as a slice: an index past the extent stops at it, and a part from an index to a lower one is empty. Take it apart: (Tensor a[2][4], Tensor b[2][4]) = split(x, 2);.";
    Seed "seed" 1..1 Seed false "seed(n)" "Seeds the random generator; runs are reproducible across machines.";
    Rand "rand" 1..1 FromShapeList false "rand([d0, d1, ...])" "Uniform random numbers in [0, 1) of the given shape.";
    Randn "randn" 1..1 FromShapeList false "randn([d0, d1, ...])" "Standard normal random numbers of the given shape.";
    Randint "randint" 3..3 Randint false "randint(low, high, [d0, d1, ...])" "Random integers from low to high (high excluded), all equally likely.";
    Permutation "permutation" 1..1 Permutation false "permutation(n)" "A random ordering of 0, 1, ..., n - 1.";
    Shuffle "shuffle" 1..1 Sort true "shuffle(t)" "t with its leading axis in a random order, reproducible from seed (NumPy's permutation of an array); the gradient flows back through the same order.";
    Uniform "uniform" 3..3 Distribution true "uniform(lo, hi, [d0, d1, ...])" "Uniform random numbers in [lo, hi); lo + (hi - lo) u, differentiable in lo and hi.";
    Normal "normal" 3..3 Distribution true "normal(mean, std, [d0, d1, ...])" "Normal random numbers; mean + std z, differentiable in mean and std.";
    Bernoulli "bernoulli" 2..2 Distribution false "bernoulli(p, [d0, d1, ...])" "Random 1.0 with probability p, else 0.0 (dropout masks).";
    Inv "inv" 1..1 SquareToSquare true "inv(A)" "The inverse of a square matrix.";
    Det "det" 1..1 SquareToScalar true "det(A)" "The determinant of a square matrix.";
    Solve "solve" 2..2 Solve true "solve(A, b)" "The x with A @ x == b, for a square A.";
    Cholesky "cholesky" 1..1 SquareToSquare true "cholesky(A)" "The lower-triangular L with L @ transpose(L) == A.";
    Qr "qr" 1..1 Decomposition true "qr(A)" "The reduced QR factorisation of a matrix [m][n], or of each of a stack [..., m, n], as NumPy's qr: the tuple (Q, R) with A = Q @ R, Q [..., m, k] with orthonormal columns and R [..., k, n] upper triangular, k = min(m, n). Differentiable for m >= n (as JAX) and a single matrix.";
    Svd "svd" 1..1 Decomposition true "svd(A)" "The reduced singular value decomposition, as NumPy's svd(A, full_matrices=False): the tuple (U, S, Vh) with A = U @ diag(S) @ Vh, U [..., m, k], the singular values S [..., k] in descending order and Vh [..., k, n]. Derivatives as JAX's; the terms between equal singular values are left out, so a function of S alone differentiates everywhere.";
    Eigh "eigh" 1..1 Decomposition true "eigh(A)" "The eigenvalues in ascending order and the eigenvectors (in columns) of the symmetric part (A + transpose(A)) / 2 of a square matrix, or of each of a stack, as NumPy's eigh: the tuple (w, V) with w [..., n] and V [..., n, n]. Derivatives as JAX's; the terms between equal eigenvalues are left out.";
    Slogdet "slogdet" 1..1 Decomposition true "slogdet(A)" "The sign of the determinant of a square matrix and the natural logarithm of its absolute value, as NumPy's slogdet: the tuple (sign, logabsdet), floats for a matrix and tensors for a stack; (0, -inf) for a singular matrix. The gradient of logabsdet is transpose(inv(A)); sign is a constant.";
    Pinv "pinv" 1..1 Pinv true "pinv(A)" "The Moore-Penrose pseudo-inverse [..., n, m] of a matrix [..., m, n], from its SVD: singular values at most max(m, n) ε times the largest count as 0 (NumPy 2's default rtol). Its derivative is JAX's, for a rank that does not change near A.";
    Lstsq "lstsq" 2..2 Lstsq true "lstsq(A, b)" "The x minimising the norm of A @ x - b for a matrix A [m][n] and b [m] or [m][k], the one of least norm when A is rank-deficient: pinv(A) @ b, NumPy's lstsq(A, b)[0].";
    MatrixNorm "matrix_norm" 1..2 MatrixNorm true "matrix_norm(A) | matrix_norm(A, ord)" "The norm of a matrix over its last two axes (a float, or a tensor for a stack), as NumPy's matrix_norm: \"fro\" (the default), \"nuc\" (the sum of the singular values), 2 and -2 (the largest and smallest singular value), 1 and -1 (the largest and smallest column sum of magnitudes), \"inf\" and \"-inf\" (the same of rows).";
    Trace "trace" 1..1 SquareToScalar true "trace(A)" "The sum of the diagonal of a square matrix.";
    Diag "diag" 1..1 Diag true "diag(v)" "The square matrix with v on its diagonal; of a matrix, its diagonal.";
    Cross "cross" 2..2 Cross true "cross(a, b)" "The cross product of vectors of 3 along the last axis, broadcasting.";
    Conv1d "conv1d" 2..6 Conv true "conv1d(x, w) | conv1d(x, w, stride, padding, dilation, groups)" "The cross-correlation of signals x [N][C][L] with filters w [O][C / groups][K], as PyTorch's conv1d: a Tensor[N][O][(L + 2 padding - dilation (K - 1) - 1) / stride + 1] (the division rounds down). stride and dilation are 1 by default, padding (zeros on both sides) 0, groups 1; the channels are split into groups convolved separately. A bias b [O] is added as b[none, :, none].";
    Conv2d "conv2d" 2..6 Conv true "conv2d(x, w) | conv2d(x, w, stride, padding, dilation, groups)" "The cross-correlation of images x [N][C][H][W] with filters w [O][C / groups][KH][KW], as PyTorch's conv2d: a Tensor[N][O][OH][OW] with OH = (H + 2 padding - dilation (KH - 1) - 1) / stride + 1 (rounded down), OW alike. stride, padding and dilation apply to both axes; defaults 1, 0, 1 and groups 1. A bias b [O] is added as b[none, :, none, none].";
    MaxPool2d "max_pool2d" 2..4 Pool true "max_pool2d(x, k) | max_pool2d(x, k, stride, padding)" "The largest element of each k-by-k window of x [N][C][H][W], as PyTorch's max_pool2d: stride k by default, padding (at most k / 2, never chosen) 0. Where several elements of a window tie for the largest, they share its gradient equally (PyTorch gives it all to the first).";
    AvgPool2d "avg_pool2d" 2..4 Pool true "avg_pool2d(x, k) | avg_pool2d(x, k, stride, padding)" "The mean of each k-by-k window of x [N][C][H][W], as PyTorch's avg_pool2d: stride k by default, padding (zeros, at most k / 2, counted in the mean) 0.";
    CrossEntropy "cross_entropy" 2..2 ClassLoss true "cross_entropy(logits, labels)" "The mean over the batch of -log_softmax(logits)[i, labels[i]], for logits [N][C] and integer labels [N], as PyTorch's cross_entropy.";
    Nll "nll" 2..2 ClassLoss true "nll(log_probs, labels)" "The mean over the batch of -log_probs[i, labels[i]], as PyTorch's nll_loss.";
    Mse "mse" 2..2 PairLoss true "mse(prediction, target)" "The mean of the squared differences.";
    BceWithLogits "bce_with_logits" 2..2 PairLoss true "bce_with_logits(logits, target)" "The mean binary cross-entropy of sigmoid(logits) against targets in [0, 1], computed stably as softplus(x) - x t.";
    Print "print" 0..inf Print false "print(a, b, ...)" "Prints the values separated by one space, then a newline.";
    Write "write" 0..inf Print false "write(a, b, ...)" "Prints the values like `print`, separated by one space, without a newline at the end, then flushes standard output: `write(\"\\repoch\", n)` rewrites the current line.";
    Format "format" 1..inf Format false "format(\"epoch {} loss {:.4}\", e, l)" "Text for `print` and `write`: the string with each placeholder `{}` or `{:spec}` filled by the next value, ints and floats as `print` writes them or by the spec (`{:.4}` four digits after the point, `{:e}` scientific, `{:>8}` right-aligned in 8 columns, `{:05d}` zero-padded), tensors in `print`'s layout (`{:.2}` with that precision); `{{` and `}}` write braces.";
    PrintOptions "print_options" 1..4 PrintOptions false "print_options(precision, threshold, line_width, suppress_small) | print_options(\"line\")" "How `print` and `write` lay out tensors from here on: at most `precision` decimals (8), summarised past `threshold` elements (1000), rows wrapped at `line_width` characters (75), and with `suppress_small` numbers too small for the precision shown as zero instead of in scientific notation (false). `print_options(\"line\")` prints tensors on one line in the shortest round-trip form, `\"exact\"` lays them out with every digit of that form, `\"default\"` restores the defaults.";
    Load "load" 1..1 Load false "load(\"x.npy\")" "Reads a NumPy .npy file (float64) relative to the source file; where a record is declared, assigned or returned, an .npz archive of its fields.";
    Save "save" 2..2 Save false "save(t, \"x.npy\")" "Writes a tensor as a NumPy .npy file relative to the source file; a float or int as a rank-0 array; a record as an .npz archive of its fields (l1.w, l1.b, ...).";
    LoadCsv "load_csv" 1..1 Load false "load_csv(\"x.csv\")" "Reads a CSV file of numbers as a matrix, relative to the source file.";
    Plot "plot" 2..5 Plot false "plot(\"loss.svg\", y) | plot(\"loss.svg\", y, \"title\", \"x label\", \"y label\")" "Draws a line chart of a Tensor[n], or of each row of a Tensor[k][n], over the indices, with an optional title and axis labels; SVG or PNG by the file's extension, relative to the source file.";
    Scatter "scatter" 3..6 Scatter false "scatter(\"points.svg\", x, y) | scatter(\"points.svg\", x, y, \"title\", \"x label\", \"y label\")" "Draws a point for each pair of elements of x and y (tensors with as many elements), with an optional title and axis labels; SVG or PNG by the file's extension.";
    Histogram "histogram" 3..4 Histogram false "histogram(\"hist.svg\", t, bins) | histogram(\"hist.svg\", t, bins, \"title\")" "Draws a histogram of the elements of t in `bins` equal intervals from the least to the greatest, with an optional title; SVG or PNG by the file's extension.";
    SaveImage "save_image" 2..2 SaveImage false "save_image(\"digits.png\", x)" "Writes a Tensor[h][w] as a greyscale PNG (least element black, greatest white), or a Tensor[n][h][w] as a grid of n images; relative to the source file.";
    Backward "backward" 1..1 Backward false "backward(y)" "Computes the gradients of the sum of y with respect to everything recorded, then releases the graph.";
    Grad "grad" 1..2 GradOfVariable false "grad(x) | grad(f)(args) | grad(f, k)(args) | grad(f, [i, j])(args)" "The gradient the last backward computed for variable x; of a function, its gradient with respect to parameter k (default 0), or the tuple of its gradients with respect to parameters i, j, ... (JAX's argnums).";
    ValueAndGrad "value_and_grad" 1..2 TransformOnly false "value_and_grad(f)(args) | value_and_grad(f, k)(args) | value_and_grad(f, [i, j])(args)" "The tuple of f(args) and grad(f)(args) (grad(f, k), or the gradients of grad(f, [i, j]) in order), from one forward and one backward pass.";
    Jvp "jvp" 1..1 TransformOnly false "jvp(f)(args..., tangent)" "Forward-mode directional derivative of f along a tangent of its first parameter.";
    Vjp "vjp" 1..1 TransformOnly false "vjp(f)(args..., cotangent)" "Reverse mode: a cotangent of f's result pulled back to its first parameter.";
    Hessian "hessian" 1..1 TransformOnly false "hessian(f)(args)" "Hessian of a scalar f in its first parameter.";
    Jacobian "jacobian" 1..1 TransformOnly false "jacobian(f)(args)" "Jacobian of f in its first parameter: Tensor[m][n] for f: Tensor[n] -> Tensor[m].";
    Checkpoint "checkpoint" 1..2 TransformOnly false "checkpoint(f)(args) | checkpoint(segment, n)(x, args)" "f(args), whose recording is not kept but recomputed by the backward pass: memory traded for time, with the same gradients (JAX's checkpoint). With a step count n, x = segment(x, args, steps) run for n steps in all, in about sqrt(n) segments of about sqrt(n) steps, each checkpointed.";
    Vmap "vmap" 1..2 TransformOnly false "vmap(f)(xs, ...) | vmap(f, k)(args) | vmap(f, [i, j])(args)" "f mapped over the leading axis: f called on slice b of each batched argument (every parameter, or those listed: parameter k, or i, j, ...; the others are passed whole to every call), its results stacked along a new leading axis (each element of a tuple of results stacked). A loop of calls, differentiable by every transform.";
    StopGradient "stop_gradient" 1..1 Elementwise false "stop_gradient(x)" "The value of x as a constant: no gradient flows through it, at any level of differentiation (`backward`, `grad(f)` and every other transform, nested or not).";
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
