//! Differentiation as a construct (language.md 3.2): `grad(f)`, `grad(f, k)`, `grad(f, [i, j])`,
//! `value_and_grad(f)`, `vjp(f)`, `jvp(f)`, `hessian(f)`, `jacobian(f)`, and `gradcheck`.
//!
//! Each transform opens a new level, makes the argument it differentiates a leaf of that level,
//! calls the function through the caller's callback, closes the level and runs a backward pass
//! over what it recorded. Operations inside record at the highest level their operands are
//! tracked at, computing their primal one level down (so outer levels record it too), and the
//! backward pass is made of recorded operations, so transforms nest to any order; a value of the
//! inner level is never mistaken for one of an outer level because each level has its own boxes
//! (the perturbation confusion of Abadi & Plotkin cannot arise).
//!
//! `jvp` is the transpose of a `vjp` (reverse over reverse, as Abadi & Plotkin suggest): the
//! backward pass of `f` seeded with a cotangent `u` that is itself a leaf of an enclosing level
//! gives `J^T u` as a recorded linear function of `u`, and one more backward pass of that, seeded
//! with the tangent, gives `J t`. This costs one forward and two backward passes and needs no
//! second set of (tangent) rules, and it nests like everything else. `hessian` and `jacobian`
//! record once and run one backward pass per output element.
//!
//! The callback receives the caller's context (the interpreter) so that it can run a Nabla
//! function; [`AdContext`] is how the drivers reach the tape inside that context, and how they
//! run custom derivative rules: every backward pass, of a transform or of the program
//! (`backward`), goes through [`run_pass`], which runs the rules the walk stops at.

use super::adjoints::{Adjoint, Adjoints};
use super::backward::{Keep, Words, finish_rule, resume_pass, start_pass};
use super::error::{AdError, AdErrorKind};
use super::op::Rule;
use super::store::Records;
use super::tape::{ProgramPass, Tape, ones_like, zeros_like};
use crate::ops;
use crate::value::{Primal, Value};
use tensor::Tensor;

/// Whatever owns the tape (the interpreter; the tape itself in tests).
pub trait AdContext {
    /// The errors of the functions and rules the context runs.
    type Error: From<AdError>;

    fn tape(&mut self) -> &mut Tape;

    /// Runs the custom derivative rule `rule` (an interpreter's unit) on the arguments of the
    /// call it differentiates, the call's result and the result's gradient, and returns the
    /// gradients of the differentiable (`float` and tensor) arguments, in order: one value, or
    /// the elements of the tuple the rule of a function of several of them returns.
    fn run_rule(&mut self, rule: u32, arguments: Vec<Value>) -> Result<Vec<Value>, Self::Error>;

    /// Calls the interpreter's callable `callable` (the function of a `checkpoint`).
    fn call(&mut self, callable: u32, arguments: Vec<Value>) -> Result<Value, Self::Error>;
}

impl AdContext for Tape {
    type Error = AdError;

    fn tape(&mut self) -> &mut Tape {
        self
    }

    /// A bare tape runs no Nabla code, so it records no call with a custom rule.
    fn run_rule(&mut self, _rule: u32, _arguments: Vec<Value>) -> Result<Vec<Value>, AdError> {
        Err(AdError::internal("a derivative rule on a tape without an interpreter"))
    }

    fn call(&mut self, _callable: u32, _arguments: Vec<Value>) -> Result<Value, AdError> {
        Err(AdError::internal("a checkpoint on a tape without an interpreter"))
    }
}

/// Runs the backward pass of `records` (the recording of `level`) from node `output` with the
/// adjoint `seed`, filling `adjoints` (reset first) with one adjoint per node up to `output`,
/// and running the custom rules it meets in `cx`. The adjoints' chunks stay in `adjoints`,
/// also after an error; the caller gives them back.
pub(crate) fn run_pass<C>(
    cx: &mut C,
    level: usize,
    records: &mut Records,
    output: usize,
    seed: Adjoint,
    pass: (Keep, Words),
    adjoints: &mut Adjoints,
) -> Result<(), C::Error>
where
    C: AdContext + ?Sized,
{
    let mut walk = start_pass(cx.tape(), records, output, seed, adjoints)?;
    while let Some(call) = resume_pass(cx.tape(), level, records, pass, adjoints, &mut walk)? {
        match call.rule {
            Rule::Derivative(rule) => {
                // Where each argument's gradient is among the rule's results.
                let ranks: Vec<usize> = call
                    .arguments
                    .iter()
                    .scan(0, |rank, argument| {
                        let at = *rank;
                        *rank += usize::from(argument.is_differentiable());
                        Some(at)
                    })
                    .collect();
                let mut arguments = call.arguments;
                arguments.push(call.output);
                arguments.push(call.gradient);
                let mut gradients = cx.run_rule(rule, arguments)?;
                for input in &call.inputs {
                    let gradient =
                        ranks.get(input.position).and_then(|&rank| gradients.get_mut(rank));
                    let Some(gradient) = gradient else {
                        return Err(
                            AdError::internal("a rule without a gradient for an argument").into()
                        );
                    };
                    let gradient = std::mem::replace(gradient, Value::Int(0));
                    finish_rule(cx.tape(), adjoints, input, gradient)?;
                }
            }
            Rule::Recompute(callable) => {
                let mut f = |cx: &mut C, arguments: Vec<Value>| cx.call(callable, arguments);
                for input in &call.inputs {
                    let (arguments, gradient) = (call.arguments.clone(), call.gradient.clone());
                    let wrt = input.position;
                    let pulled = pullback(cx, &mut f, arguments, wrt, gradient, "checkpoint")?;
                    finish_rule(cx.tape(), adjoints, input, pulled)?;
                }
            }
        }
    }
    Ok(())
}

/// A differentiable function as the drivers call it: the caller's context and the arguments in,
/// the result out.
pub type Function<'f, C, E> = dyn FnMut(&mut C, Vec<Value>) -> Result<Value, E> + 'f;

/// What running a function at a fresh level produced: its result, the recording, the result's
/// node on it (if the result depends on the arguments) and the differentiated arguments' leaves,
/// one per parameter in the order the transform lists them (a parameter listed twice has one
/// leaf).
struct Traced {
    level: usize,
    records: Records,
    y: Value,
    output: Option<usize>,
    leaves: Vec<usize>,
}

/// `backward(y)` of the program tape, prepared by [`Tape::begin_backward`]: runs the pass in
/// `cx` and keeps the gradients for `grad(x)`. On an error the records are released all the
/// same and no gradients are kept.
pub fn program_backward<C>(cx: &mut C, pass: ProgramPass) -> Result<(), C::Error>
where
    C: AdContext + ?Sized,
{
    let ProgramPass { mut records, base, output, seed, mut adjoints } = pass;
    let mode = ProgramPass::MODE;
    let result = run_pass(cx, 0, &mut records, output, seed, mode, &mut adjoints);
    let tape = cx.tape();
    match result {
        Ok(()) => {
            tape.end_backward(records, base, output, adjoints);
            Ok(())
        }
        Err(error) => {
            tape.recycle(0, records);
            tape.give_store(adjoints);
            Err(error)
        }
    }
}

/// Opens a level, makes each `args[k]` for `k` in `wrt` a leaf of it, calls `f` and closes the
/// level, whatever `f` returns.
fn trace<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    mut args: Vec<Value>,
    wrt: &[usize],
    transform: &'static str,
) -> Result<Traced, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    let count = args.len();
    for &k in wrt {
        let Some(argument) = args.get(k) else {
            let reason =
                format!("parameter {k} does not exist; the function got {count} arguments");
            return Err(AdError::from(AdErrorKind::Argument { transform, reason }).into());
        };
        if !argument.is_differentiable() {
            return Err(AdError::from(AdErrorKind::NotDifferentiable {
                transform,
                found: argument.type_name(),
            })
            .into());
        }
    }
    let tape = cx.tape();
    let level = tape.open_level()?;
    let mut leaves: Vec<usize> = Vec::with_capacity(wrt.len());
    for (position, &k) in wrt.iter().enumerate() {
        if let Some(earlier) = wrt[..position].iter().position(|&j| j == k) {
            leaves.push(leaves[earlier]);
            continue;
        }
        let value = tape.settled(std::mem::replace(&mut args[k], Value::Int(0)));
        let leaf = tape.transform_leaf(level, value).and_then(|x| {
            let index = tape.top_index(&x, level);
            index
                .map(|index| (x, index))
                .ok_or_else(|| AdError::internal("a leaf not on its level"))
        });
        match leaf {
            Ok((x, leaf)) => {
                args[k] = x;
                leaves.push(leaf);
            }
            Err(error) => {
                let _ = tape.close_level(level);
                return Err(error.into());
            }
        }
    }
    let result = f(cx, args);
    let tape = cx.tape();
    let output = result.as_ref().ok().and_then(|y| tape.top_index(y, level));
    let records = tape.close_level(level)?;
    let y = result?;
    Ok(Traced { level, records, y, output, leaves })
}

/// Runs a backward pass over a finished recording and returns the adjoint of each of its
/// leaves (`None` for a leaf the output does not depend on); `words` says whether the recording
/// is kept for further passes.
fn leaf_adjoints<C: AdContext + ?Sized>(
    cx: &mut C,
    traced: &mut Traced,
    output: usize,
    seed: Value,
    words: Words,
) -> Result<Vec<Option<Value>>, C::Error> {
    let mut adjoints = Adjoints::default();
    let pass = (Keep::Leaves, words);
    let records = &mut traced.records;
    let result = run_pass(cx, traced.level, records, output, seed.into(), pass, &mut adjoints);
    let mut taken: Vec<Option<Value>> = Vec::with_capacity(traced.leaves.len());
    let mut failure = None;
    for (position, &leaf) in traced.leaves.iter().enumerate() {
        let adjoint = match traced.leaves[..position].iter().position(|&l| l == leaf) {
            Some(earlier) => taken[earlier].clone(),
            None => match adjoints.take(leaf).map(Adjoint::into_value).transpose() {
                Ok(adjoint) => adjoint,
                Err(error) => {
                    failure.get_or_insert(error);
                    None
                }
            },
        };
        taken.push(adjoint);
    }
    cx.tape().give_store(adjoints);
    result?;
    match failure {
        Some(error) => Err(error.into()),
        None => Ok(taken),
    }
}

/// [`leaf_adjoints`] of a recording with one leaf.
fn leaf_adjoint<C: AdContext + ?Sized>(
    cx: &mut C,
    traced: &mut Traced,
    output: usize,
    seed: Value,
    words: Words,
) -> Result<Option<Value>, C::Error> {
    let mut adjoints = leaf_adjoints(cx, traced, output, seed, words)?;
    Ok(adjoints.pop().flatten())
}

/// Checks that a function's result is a single number and returns the seed `1` of its type.
fn scalar_seed(y: &Value, transform: &'static str) -> Result<Value, AdError> {
    match y.primal() {
        Primal::Float(_) => Ok(Value::Float(1.0)),
        Primal::Tensor(tensor) if tensor.len() == 1 => ones_like(y),
        _ => Err(AdErrorKind::NotScalarOutput { transform, found: y.type_name() }.into()),
    }
}

/// Checks that a tangent or cotangent has the type of the value it goes with.
fn check_tangent(expected: &Value, found: &Value, transform: &'static str) -> Result<(), AdError> {
    let same = expected.is_float() == found.is_float() && expected.shape() == found.shape();
    match same && found.is_differentiable() {
        true => Ok(()),
        false => Err(AdError::from(AdErrorKind::TangentShape {
            transform,
            expected: expected.type_name(),
            found: found.type_name(),
        })),
    }
}

/// `grad(f, wrt)(args)`: the gradient of the scalar `f` with respect to parameter `wrt`, of that
/// parameter's type; zeros when `f` does not depend on it.
pub fn grad<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    wrt: usize,
) -> Result<Value, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    let (_, mut gradients) = value_and_grad(cx, f, args, &[wrt])?;
    gradients.pop().ok_or_else(|| AdError::internal("a gradient missing").into())
}

/// `value_and_grad(f, wrt)(args)`, and `grad(f, [i, j])` without the value: the value of the
/// scalar `f` at `args` (as the levels around the transform see it) and its gradients with
/// respect to the parameters `wrt`, in order, each of its parameter's type (zeros when `f` does
/// not depend on it), from one recording and one backward pass (JAX's `argnums`).
pub fn value_and_grad<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    wrt: &[usize],
) -> Result<(Value, Vec<Value>), E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    pull_back(cx, f, args, wrt, "grad", |y| scalar_seed(y, "grad"))
}

/// Records `f` at `args` with the arguments `wrt` as leaves of a fresh level, and pulls the seed
/// that `seed` makes of the result back to each of them in one backward pass (zeros where `f`
/// does not depend on one): the result, as the levels around the transform see it, and the
/// pullbacks in the order of `wrt`.
fn pull_back<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    wrt: &[usize],
    transform: &'static str,
    seed: impl FnOnce(&Value) -> Result<Value, AdError>,
) -> Result<(Value, Vec<Value>), E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    let zeros = wrt
        .iter()
        .map(|&k| match args.get(k) {
            Some(argument) => zeros_like(argument),
            None => Ok(Value::Float(0.0)),
        })
        .collect::<Result<Vec<Value>, AdError>>()?;
    let mut traced = trace(cx, f, args, wrt, transform)?;
    let result = (|| {
        let seed = seed(&traced.y)?;
        let Some(output) = traced.output else { return Ok(vec![None; wrt.len()]) };
        leaf_adjoints(cx, &mut traced, output, seed, Words::GivenBack)
    })();
    let tape = cx.tape();
    tape.recycle(traced.level, traced.records);
    let value = tape.settled(traced.y);
    let pulled = result?.into_iter().zip(zeros).map(|(g, zeros)| g.unwrap_or(zeros)).collect();
    Ok((value, pulled))
}

/// `vjp(f)(args, cotangent)`: the cotangent (of `f`'s result type) pulled back to the first
/// parameter.
pub fn vjp<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    cotangent: Value,
) -> Result<Value, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    pullback(cx, f, args, 0, cotangent, "vjp")
}

/// `vjp(f)` with respect to the arguments `wrt` (the leaves of a record parameter): the
/// cotangent pulled back to each of them, in order, from one recording and one backward pass.
pub fn vjp_in<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    wrt: &[usize],
    cotangent: Value,
) -> Result<Vec<Value>, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    pullbacks(cx, f, args, wrt, cotangent, "vjp")
}

/// `vjp` with respect to parameter `wrt`, named `transform` in errors.
fn pullback<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    wrt: usize,
    cotangent: Value,
    transform: &'static str,
) -> Result<Value, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    let mut pulled = pullbacks(cx, f, args, &[wrt], cotangent, transform)?;
    pulled.pop().ok_or_else(|| AdError::internal("a pullback missing").into())
}

/// `vjp` with respect to the parameters `wrt`, named `transform` in errors: one pullback each
/// (zeros where `f` does not depend on the parameter).
fn pullbacks<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    wrt: &[usize],
    cotangent: Value,
    transform: &'static str,
) -> Result<Vec<Value>, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    let check = move |y: &Value| {
        check_tangent(y, &cotangent, transform)?;
        Ok(cotangent)
    };
    let (_, pulled) = pull_back(cx, f, args, wrt, transform, check)?;
    Ok(pulled)
}

/// `jvp(f)(args, tangent)`: the derivative of `f` at `args` along `tangent` (of the first
/// parameter's type), of `f`'s result type; computed as the transpose of a `vjp` (see the module
/// documentation).
pub fn jvp<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    tangent: Value,
) -> Result<Value, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    jvp_in(cx, f, args, &[0], vec![tangent])
}

/// `jvp(f)` along the tangents `tangents` of the arguments `wrt` (the leaves of a record
/// parameter), one each: the sum of the derivatives along each. The transposed `vjp` gives each
/// argument's `J_i^T u` from one recording; the pass back to `u` is seeded with each tangent in
/// turn, and the results add up.
pub fn jvp_in<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    wrt: &[usize],
    tangents: Vec<Value>,
) -> Result<Value, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    if tangents.len() != wrt.len() {
        return Err(AdError::internal("a jvp without a tangent for each argument").into());
    }
    for (&k, tangent) in wrt.iter().zip(&tangents) {
        if let Some(argument) = args.get(k) {
            check_tangent(argument, tangent, "jvp")?;
        }
    }
    let outer = cx.tape().open_level()?;
    let inner = jvp_transposed(cx, f, args, wrt, outer);
    let mut records = cx.tape().close_level(outer)?;
    let (transposed, zeros) = inner?;
    let result = (|| {
        let mut sum: Option<Value> = None;
        let last = transposed.iter().rposition(Option::is_some);
        for (i, (output, tangent)) in transposed.iter().zip(tangents).enumerate() {
            let Some(output) = *output else { continue };
            let words = if Some(i) == last { Words::GivenBack } else { Words::Kept };
            let mut adjoints = Adjoints::default();
            let result = run_pass(
                cx,
                outer,
                &mut records,
                output,
                tangent.into(),
                (Keep::Leaves, words),
                &mut adjoints,
            );
            // The cotangent leaf is the first record of the outer level.
            let adjoint = adjoints.take(0);
            cx.tape().give_store(adjoints);
            result?;
            if let Some(adjoint) = adjoint.map(Adjoint::into_value).transpose()? {
                sum = Some(match sum {
                    None => adjoint,
                    Some(sum) => ops::add(cx.tape(), sum, adjoint)?,
                });
            }
        }
        Ok::<_, E>(sum)
    })();
    cx.tape().recycle(outer, records);
    Ok(result?.unwrap_or(zeros))
}

/// The first half of [`jvp_in`], with level `outer` open: records `f`, then its backward pass
/// seeded with a leaf `u` of `outer`, and returns the node of each argument's `J_i^T u` on
/// `outer` (if `f` depends on the argument at all) and zeros of `f`'s result type.
fn jvp_transposed<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    wrt: &[usize],
    outer: usize,
) -> Result<(Vec<Option<usize>>, Value), E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    let mut traced = trace(cx, f, args, wrt, "jvp")?;
    let result = (|| -> Result<(Vec<Option<usize>>, Value), E> {
        let zeros = zeros_like(&traced.y)?;
        if !traced.y.is_differentiable() {
            let found = traced.y.type_name();
            return Err(
                AdError::from(AdErrorKind::NotScalarOutput { transform: "jvp", found }).into()
            );
        }
        let Some(output) = traced.output else { return Ok((vec![None; wrt.len()], zeros)) };
        let tape = cx.tape();
        let cotangent = tape.transform_leaf(outer, zeros.clone())?;
        if tape.top_index(&cotangent, outer) != Some(0) {
            return Err(AdError::internal("the jvp cotangent is not its level's first").into());
        }
        let transposed = leaf_adjoints(cx, &mut traced, output, cotangent, Words::GivenBack)?;
        let tape = cx.tape();
        let nodes = transposed
            .into_iter()
            .map(|value| value.and_then(|value| tape.top_index(&value, outer)))
            .collect();
        Ok((nodes, zeros))
    })();
    cx.tape().recycle(traced.level, traced.records);
    result
}

/// `hessian(f)(args)`: the matrix of second derivatives of the scalar `f` in its first parameter,
/// a float for a float parameter and `Tensor[n][n]` for `Tensor[n]` (in general the parameter's
/// shape twice).
pub fn hessian<C, E>(cx: &mut C, f: &mut Function<'_, C, E>, args: Vec<Value>) -> Result<Value, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    let mut gradient_of_f = |cx: &mut C, args: Vec<Value>| grad(cx, f, args, 0);
    jacobian_named(cx, &mut gradient_of_f, args, "hessian")
}

/// `jacobian(f)(args)`: the derivatives of every element of `f`'s result with respect to every
/// element of its first parameter, shaped as the result's shape followed by the parameter's
/// (`Tensor[m][n]` for `Tensor[n] -> Tensor[m]`).
pub fn jacobian<C, E>(cx: &mut C, f: &mut Function<'_, C, E>, args: Vec<Value>) -> Result<Value, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    jacobian_named(cx, f, args, "jacobian")
}

fn jacobian_named<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    transform: &'static str,
) -> Result<Value, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    let Some(argument) = args.first() else {
        let reason = "the function takes no parameter to differentiate".to_owned();
        return Err(AdError::from(AdErrorKind::Argument { transform, reason }).into());
    };
    let argument = argument.clone();
    let mut traced = trace(cx, f, args, &[0], transform)?;
    let result = jacobian_rows(cx, &mut traced, &argument, transform);
    cx.tape().recycle(traced.level, traced.records);
    result
}

/// One backward pass per element of the traced result, stacked into the Jacobian.
fn jacobian_rows<C: AdContext + ?Sized>(
    cx: &mut C,
    traced: &mut Traced,
    argument: &Value,
    transform: &'static str,
) -> Result<Value, C::Error> {
    let y = &traced.y;
    if !y.is_differentiable() {
        let found = y.type_name();
        return Err(AdError::from(AdErrorKind::NotScalarOutput { transform, found }).into());
    }
    let mut shape = y.shape().to_vec();
    shape.extend_from_slice(argument.shape());
    let Some(output) = traced.output else {
        return match y.is_float() && argument.is_float() {
            true => Ok(Value::Float(0.0)),
            false => Ok(Value::tensor(Tensor::zeros(&shape).map_err(AdError::from)?)),
        };
    };
    if y.is_float() {
        let row = leaf_adjoint(cx, traced, output, Value::Float(1.0), Words::GivenBack)?;
        return Ok(row.map_or_else(|| zeros_like(argument), Ok)?);
    }
    let (count, y_shape) = (y.len(), y.shape().to_vec());
    let mut rows = ops::RowStack::new(count);
    for position in 0..count {
        let mut seed = vec![0.0; count];
        seed[position] = 1.0;
        let seed = Value::tensor(Tensor::from_vec(&y_shape, seed).map_err(AdError::from)?);
        let row = leaf_adjoint(cx, traced, output, seed, Words::Kept)?;
        rows.push(match row {
            Some(row) => row,
            None => zeros_like(argument)?,
        })?;
    }
    if count == 0 {
        return Ok(Value::tensor(Tensor::zeros(&shape).map_err(AdError::from)?));
    }
    let tape = cx.tape();
    let stacked = rows.finish(tape)?;
    Ok(ops::reshape(tape, stacked, &shape)?)
}

/// How `gradcheck` compares: an element passes when
/// `|analytic - numeric| <= atol + rtol * |numeric|`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradcheckConfig {
    pub rtol: f64,
    pub atol: f64,
}

impl Default for GradcheckConfig {
    /// Tolerances that central differences in `f64` meet for smooth functions of moderate size.
    fn default() -> GradcheckConfig {
        GradcheckConfig { rtol: 1e-5, atol: 1e-7 }
    }
}

/// One element's comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckElement {
    /// Which of the checked arguments the element is in (its position among them: 0 but for
    /// the leaves of a record).
    pub argument: usize,
    /// The element's position in that argument (empty for a float).
    pub index: Vec<usize>,
    pub analytic: f64,
    pub numeric: f64,
    /// `atol + rtol * |numeric|`.
    pub tolerance: f64,
}

impl GradcheckElement {
    /// How far past its tolerance the element is: at most 1 when it passes.
    pub fn ratio(&self) -> f64 {
        let error = (self.analytic - self.numeric).abs();
        match self.tolerance > 0.0 {
            true => error / self.tolerance,
            false if error == 0.0 => 0.0,
            false => f64::INFINITY,
        }
    }

    pub fn passed(&self) -> bool {
        (self.analytic - self.numeric).abs() <= self.tolerance
    }
}

/// The result of `gradcheck`: whether every element passed, how many were checked, and the worst
/// element (the largest [`GradcheckElement::ratio`], reported whether or not it passed).
#[derive(Clone, Debug, PartialEq)]
pub struct GradcheckReport {
    pub passed: bool,
    pub checked: usize,
    pub worst: Option<GradcheckElement>,
}

/// Compares `grad(f)` with respect to the first argument against central finite differences,
/// element by element. The arguments are detached first, so the check runs on constants whatever
/// the caller tracks.
pub fn gradcheck<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    config: GradcheckConfig,
) -> Result<GradcheckReport, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    gradcheck_in(cx, f, args, &[0], config)
}

/// [`gradcheck`] with respect to the arguments `wrt` (the leaves of a record parameter): every
/// element of each, the gradients from one recording.
pub fn gradcheck_in<C, E>(
    cx: &mut C,
    f: &mut Function<'_, C, E>,
    args: Vec<Value>,
    wrt: &[usize],
    config: GradcheckConfig,
) -> Result<GradcheckReport, E>
where
    C: AdContext<Error = E> + ?Sized,
    E: From<AdError>,
{
    let args: Vec<Value> = args.iter().map(Value::detach).collect();
    if wrt.is_empty() || wrt.iter().any(|&k| k >= args.len()) {
        let reason = "the function takes no parameter to check".to_owned();
        return Err(AdError::from(AdErrorKind::Argument { transform: "gradcheck", reason }).into());
    }
    let (_, analytic) = value_and_grad(cx, f, args.clone(), wrt)?;
    let mut report = GradcheckReport { passed: true, checked: 0, worst: None };
    for (argument, (&k, analytic)) in wrt.iter().zip(&analytic).enumerate() {
        let checked = args[k].clone();
        let analytic = flatten(analytic);
        let point = flatten(&checked);
        let shape = checked.shape().to_vec();
        for (position, (&x, &analytic)) in point.iter().zip(&analytic).enumerate() {
            let step = f64::EPSILON.cbrt() * x.abs().max(1.0);
            let mut evaluate = |offset: f64| -> Result<f64, E> {
                let mut moved = point.clone();
                moved[position] = x + offset;
                let mut shifted = args.clone();
                shifted[k] = match checked.is_tensor() {
                    true => Value::tensor(Tensor::from_vec(&shape, moved).map_err(AdError::from)?),
                    false => Value::Float(moved[0]),
                };
                let y = f(cx, shifted)?;
                scalar_seed(&y, "gradcheck")?;
                Ok(flatten(&y).first().copied().unwrap_or(f64::NAN))
            };
            let forward = evaluate(step)?;
            let backward = evaluate(-step)?;
            let numeric = (forward - backward) / (2.0 * step);
            let element = GradcheckElement {
                argument,
                index: unravel(position, &shape),
                analytic,
                numeric,
                tolerance: config.atol + config.rtol * numeric.abs(),
            };
            report.checked += 1;
            report.passed &= element.passed();
            let worse = report.worst.as_ref().is_none_or(|worst| element.ratio() > worst.ratio());
            if worse {
                report.worst = Some(element);
            }
        }
    }
    Ok(report)
}

/// A value's elements in row-major order.
fn flatten(value: &Value) -> Vec<f64> {
    match value.primal() {
        Primal::Tensor(tensor) => tensor.to_vec(),
        _ => value.as_f64().into_iter().collect(),
    }
}

/// The multi-index of row-major position `position` in `shape`.
fn unravel(mut position: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (slot, &extent) in index.iter_mut().zip(shape).rev() {
        if extent > 0 {
            *slot = position % extent;
            position /= extent;
        }
    }
    index
}
