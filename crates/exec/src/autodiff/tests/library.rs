//! Derivatives of the library functions composed of primitives (`ops::library`), first order
//! against finite differences and second order through `hessian`, away from their kinks, and the
//! documented choices at the kinks.

use super::{assert_close, assert_gradients, assert_hessian, numbers, sample, tensor, vector};
use crate::autodiff::{AdError, Tape, grad};
use crate::ops::{self, library};
use crate::value::Value;
use tensor::{ReduceOp, Rng};

type Library = fn(&mut Tape, Vec<Value>) -> Result<Value, AdError>;

/// Values in `[low, high)` of `shape`, moved away from 0 by at least `gap`.
fn away_from_zero(shape: &[usize], low: f64, high: f64, seed: u64, gap: f64) -> Value {
    let value = sample(shape, low, high, seed);
    let tensor = value.as_tensor().unwrap().clone();
    Value::tensor(tensor.map(|x| if x.abs() < gap { x + 2.0 * gap.copysign(x) } else { x }))
}

#[test]
fn activations_clip_and_where() {
    let x = away_from_zero(&[2, 3], -2.0, 2.0, 1, 0.1);
    let cases: [(&str, Library); 4] = [
        ("leaky_relu", |t, a| library::leaky_relu(t, a[0].clone(), 0.2)),
        ("elu", |t, a| library::elu(t, a[0].clone(), 0.7)),
        ("clip", |t, a| library::clip(t, a[0].clone(), Value::Float(-1.0), Value::Float(1.2))),
        ("where", |t, a| {
            let positive = Value::tensor(
                a[0].as_tensor().unwrap().clone().map(|v| f64::from(u8::from(v > 0.0))),
            );
            let square = ops::mul(t, a[0].clone(), a[0].clone())?;
            ops::select(t, &positive, square, a[0].clone())
        }),
    ];
    for (name, f) in cases {
        assert_gradients(name, &f, vec![x.clone()]);
        let flat = away_from_zero(&[5], -2.0, 2.0, 2, 0.1);
        assert_hessian(name, &f, vec![flat]);
    }
    // Bounds that are tensors get the gradient where they are chosen.
    let bounds =
        |t: &mut Tape, a: Vec<Value>| library::clip(t, a[0].clone(), a[1].clone(), a[2].clone());
    let x = vector(&[-3.0, 0.5, 4.0, 1.0]);
    let (lo, hi) = (vector(&[-1.0, -1.0, -1.0, 0.0]), vector(&[2.0, 2.0, 2.0, 3.0]));
    assert_gradients("clip with tensor bounds", &bounds, vec![x.clone(), lo.clone(), hi.clone()]);
    let mut tape = Tape::new();
    let mut f = |t: &mut Tape, a: Vec<Value>| {
        let y = bounds(t, a)?;
        ops::reduce(t, ReduceOp::Sum, y, None)
    };
    // At the bounds (x == lo, x == hi) the gradient goes to x, as in PyTorch.
    let at_bounds = vector(&[-1.0, 2.0, 0.5, 3.0]);
    let dx = grad(&mut tape, &mut f, vec![at_bounds.clone(), lo.clone(), hi.clone()], 0).unwrap();
    assert_eq!(numbers(&dx), [1.0, 1.0, 1.0, 1.0]);
    let dlo = grad(&mut tape, &mut f, vec![x.clone(), lo.clone(), hi.clone()], 1).unwrap();
    assert_eq!(numbers(&dlo), [1.0, 0.0, 0.0, 0.0]);
    let dhi = grad(&mut tape, &mut f, vec![x, lo, hi], 2).unwrap();
    assert_eq!(numbers(&dhi), [0.0, 0.0, 1.0, 0.0]);
    // leaky_relu's derivative at 0 is its slope, as in PyTorch.
    let mut leaky = |t: &mut Tape, a: Vec<Value>| library::leaky_relu(t, a[0].clone(), 0.2);
    assert_eq!(numbers(&grad(&mut tape, &mut leaky, vec![Value::Float(0.0)], 0).unwrap()), [0.2]);
    // Both branches of `where` are computed, as in NumPy: a branch whose derivative is infinite
    // where it is not chosen needs its input guarded too (JAX's "double where"), and then its
    // gradient there is 0.
    let mut guarded = |t: &mut Tape, a: Vec<Value>| {
        let positive =
            Value::tensor(a[0].as_tensor().unwrap().clone().map(|v| f64::from(u8::from(v > 0.0))));
        let safe = ops::select(t, &positive, a[0].clone(), Value::Float(1.0))?;
        let log = ops::unary(t, tensor::UnaryOp::Ln, safe)?;
        let y = ops::select(t, &positive, log, Value::Float(0.0))?;
        ops::reduce(t, ReduceOp::Sum, y, None)
    };
    let g = grad(&mut tape, &mut guarded, vec![vector(&[0.0, 2.0])], 0).unwrap();
    assert_eq!(numbers(&g), [0.0, 0.5]);
}

#[test]
fn moments_and_norms() {
    let x = sample(&[3, 4], -1.0, 1.0, 3);
    let cases: [(&str, Library); 8] = [
        ("std", |t, a| library::moment(t, a[0].clone(), None, 0.0, false, true)),
        ("std axis 1 ddof 1", |t, a| library::moment(t, a[0].clone(), Some(1), 1.0, false, true)),
        ("variance axis 0 keepdims", |t, a| {
            library::moment(t, a[0].clone(), Some(0), 0.0, true, false)
        }),
        ("variance", |t, a| library::moment(t, a[0].clone(), None, 1.0, false, false)),
        ("norm 1", |t, a| {
            library::vector_norm(t, a[0].clone(), 1, library::VectorOrd::P(1.0), false)
        }),
        ("norm 3", |t, a| {
            library::vector_norm(t, a[0].clone(), 0, library::VectorOrd::P(3.0), true)
        }),
        ("norm inf", |t, a| {
            library::vector_norm(
                t,
                a[0].clone(),
                -1,
                library::VectorOrd::Extreme { largest: true },
                false,
            )
        }),
        ("sum keepdims", |t, a| library::reduce_keeping(t, ReduceOp::Sum, a[0].clone(), 1, true)),
    ];
    for (name, f) in cases {
        assert_gradients(name, &f, vec![x.clone()]);
    }
    let v = sample(&[5], -1.0, 1.0, 4);
    for (name, f) in cases {
        let on_vector = move |t: &mut Tape, a: Vec<Value>| {
            let m = ops::reshape(t, a[0].clone(), &[1, 5])?;
            f(t, vec![m])
        };
        if name != "variance axis 0 keepdims" && name != "norm 3" {
            assert_hessian(name, &on_vector, vec![v.clone()]);
        }
    }
    // The standard deviation of a constant has gradient 0 (the norm's convention), not NaN, and
    // the p-norm of zeros too.
    let mut tape = Tape::new();
    let mut std =
        |t: &mut Tape, a: Vec<Value>| library::moment(t, a[0].clone(), None, 0.0, false, true);
    assert_eq!(
        numbers(&grad(&mut tape, &mut std, vec![vector(&[2.0, 2.0])], 0).unwrap()),
        [0.0, 0.0]
    );
    let mut p_norm = |t: &mut Tape, a: Vec<Value>| {
        let y = library::vector_norm(t, a[0].clone(), 0, library::VectorOrd::P(3.0), false)?;
        ops::reduce(t, ReduceOp::Sum, y, None)
    };
    assert_eq!(
        numbers(&grad(&mut tape, &mut p_norm, vec![vector(&[0.0, 0.0])], 0).unwrap()),
        [0.0, 0.0]
    );
}

#[test]
fn shapes_products_and_joins() {
    let cases: [(&str, Library, Vec<Value>); 7] = [
        (
            "tril",
            |t, a| library::triangle(t, a[0].clone(), 0, true),
            vec![sample(&[3, 3], -1.0, 1.0, 5)],
        ),
        (
            "triu of a stack",
            |t, a| library::triangle(t, a[0].clone(), 1, false),
            vec![sample(&[2, 2, 3], -1.0, 1.0, 6)],
        ),
        (
            "kron",
            |t, a| library::kron(t, a[0].clone(), a[1].clone()),
            vec![sample(&[2, 2], -1.0, 1.0, 7), sample(&[3], -1.0, 1.0, 8)],
        ),
        (
            "outer",
            |t, a| library::outer(t, a[0].clone(), a[1].clone()),
            vec![sample(&[2, 2], -1.0, 1.0, 9), sample(&[3], -1.0, 1.0, 10)],
        ),
        (
            "cross",
            |t, a| library::cross(t, a[0].clone(), a[1].clone()),
            vec![sample(&[2, 3], -1.0, 1.0, 11), sample(&[3], -1.0, 1.0, 12)],
        ),
        (
            "concat of three",
            |t, a| library::concat_many(t, a, 0),
            vec![
                sample(&[2, 2], -1.0, 1.0, 13),
                sample(&[1, 2], -1.0, 1.0, 14),
                sample(&[3, 2], -1.0, 1.0, 15),
            ],
        ),
        (
            "squeeze",
            |t, a| library::squeeze(t, a[0].clone(), None),
            vec![sample(&[1, 3, 1], -1.0, 1.0, 16)],
        ),
    ];
    for (name, f, args) in cases {
        assert_gradients(name, &f, args);
    }
    let cross = |t: &mut Tape, a: Vec<Value>| {
        let u = ops::get(t, a[0].clone(), &[tensor::Index::range(0, 3)])?;
        let v = ops::get(t, a[0].clone(), &[tensor::Index::range(3, 6)])?;
        library::cross(t, u, v)
    };
    assert_hessian("cross", &cross, vec![sample(&[6], -1.0, 1.0, 17)]);
    let kron = |t: &mut Tape, a: Vec<Value>| {
        let u = ops::get(t, a[0].clone(), &[tensor::Index::range(0, 2)])?;
        let v = ops::get(t, a[0].clone(), &[tensor::Index::range(2, 4)])?;
        library::kron(t, u, v)
    };
    assert_hessian("kron", &kron, vec![sample(&[4], -1.0, 1.0, 18)]);
    // Values, computed once with NumPy 2.4: np.kron, np.outer, np.cross, np.tril.
    let mut tape = Tape::new();
    let k = library::kron(
        &mut tape,
        tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0]),
        tensor(&[2], &[1.0, -1.0]),
    )
    .unwrap();
    assert_eq!(
        (k.shape(), numbers(&k)),
        (&[2, 4][..], vec![1.0, -1.0, 2.0, -2.0, 3.0, -3.0, 4.0, -4.0])
    );
    let c = library::cross(
        &mut tape,
        tensor(&[2, 3], &[1.0, 2.0, 3.0, 0.0, 1.0, 0.0]),
        vector(&[4.0, 5.0, 6.0]),
    )
    .unwrap();
    assert_eq!(numbers(&c), [-3.0, 6.0, -3.0, 6.0, 0.0, -4.0]);
    let l =
        library::triangle(&mut tape, tensor(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), -1, false)
            .unwrap();
    assert_eq!(numbers(&l), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let l = library::triangle(
        &mut tape,
        tensor(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, f64::INFINITY]),
        0,
        true,
    )
    .unwrap();
    assert_eq!(numbers(&l), [1.0, 0.0, 0.0, 4.0, 5.0, 0.0]);
}

#[test]
fn losses_match_pytorch_and_differentiate() {
    // Computed once with PyTorch 2.15 in float64: F.cross_entropy, F.nll_loss, F.mse_loss,
    // F.binary_cross_entropy_with_logits.
    let logits = tensor(&[2, 3], &[1.0, 2.0, 0.5, 0.1, 0.2, 3.0]);
    let labels = vector(&[1.0, 2.0]);
    let mut tape = Tape::new();
    let loss = library::class_loss(&mut tape, logits.clone(), &labels, true).unwrap();
    assert_close(&loss, &[0.2869851243147052], 1e-15, "cross_entropy");
    let log_p = ops::log_softmax(&mut tape, logits.clone(), 1).unwrap();
    let nll = library::class_loss(&mut tape, log_p, &labels, false).unwrap();
    assert_close(&nll, &[0.2869851243147052], 1e-15, "nll");
    let target = tensor(&[2, 3], &[0.0, 1.0, 0.5, 1.0, 0.0, 0.25]);
    let mse = library::mse(&mut tape, logits.clone(), target.clone()).unwrap();
    assert_close(&mse, &[1.7354166666666666], 1e-15, "mse");
    let bce = library::bce_with_logits(&mut tape, logits.clone(), target.clone()).unwrap();
    assert_close(&bce, &[0.9842315939617011], 1e-15, "bce_with_logits");
    assert_eq!(
        library::class_loss(&mut tape, logits.clone(), &vector(&[1.0, 3.0]), true)
            .unwrap_err()
            .to_string(),
        "cross_entropy: label 3.0 is not an integer from 0 to 2 (there are 3 classes)"
    );
    let x = sample(&[2, 3], -2.0, 2.0, 19);
    let cases: [(&str, Library); 3] = [
        ("cross_entropy", |t, a| library::class_loss(t, a[0].clone(), &vector(&[1.0, 2.0]), true)),
        ("mse", |t, a| {
            library::mse(t, a[0].clone(), tensor(&[2, 3], &[0.0, 1.0, 0.5, 1.0, 0.0, 0.25]))
        }),
        ("bce_with_logits", |t, a| {
            library::bce_with_logits(
                t,
                a[0].clone(),
                tensor(&[2, 3], &[0.0, 1.0, 0.5, 1.0, 0.0, 0.25]),
            )
        }),
    ];
    for (name, f) in cases {
        assert_gradients(name, &f, vec![x.clone()]);
        let flat = move |t: &mut Tape, a: Vec<Value>| {
            let m = ops::reshape(t, a[0].clone(), &[2, 3])?;
            f(t, vec![m])
        };
        assert_hessian(name, &flat, vec![sample(&[6], -2.0, 2.0, 20)]);
    }
}

#[test]
fn distributions_differentiate_in_their_parameters() {
    let u = Rng::from_seed(1).rand(&[4]).unwrap();
    let z = Rng::from_seed(2).randn(&[4]).unwrap();
    let uniform = move |t: &mut Tape, a: Vec<Value>| {
        library::uniform(t, a[0].clone(), a[1].clone(), u.clone())
    };
    assert_gradients("uniform", &uniform, vec![Value::Float(-1.0), vector(&[1.0, 2.0, 3.0, 4.0])]);
    let normal = move |t: &mut Tape, a: Vec<Value>| {
        library::normal(t, a[0].clone(), a[1].clone(), z.clone())
    };
    assert_gradients("normal", &normal, vec![vector(&[0.0, 1.0, 2.0, 3.0]), Value::Float(0.5)]);
}

#[test]
fn convolutions_and_pooling_differentiate() {
    // Strides, padding, dilation and groups, in both the input and the filters.
    let x = sample(&[2, 2, 5, 5], -1.0, 1.0, 30);
    let cases: [(&str, Library, Vec<Value>); 5] = [
        (
            "conv2d",
            |t, a| library::conv(t, "conv2d", a[0].clone(), a[1].clone(), [1, 0, 1, 1]),
            vec![x.clone(), sample(&[3, 2, 3, 3], -1.0, 1.0, 31)],
        ),
        (
            "conv2d stride 2 padding 1 dilation 2 groups 2",
            |t, a| library::conv(t, "conv2d", a[0].clone(), a[1].clone(), [2, 1, 2, 2]),
            vec![x.clone(), sample(&[4, 1, 2, 2], -1.0, 1.0, 32)],
        ),
        (
            "conv1d stride 2 padding 2",
            |t, a| library::conv(t, "conv1d", a[0].clone(), a[1].clone(), [2, 2, 1, 1]),
            vec![sample(&[2, 3, 6], -1.0, 1.0, 33), sample(&[2, 3, 3], -1.0, 1.0, 34)],
        ),
        // Distinct elements: no ties, where max is not differentiable.
        (
            "max_pool2d 3 2 1",
            |t, a| library::pool(t, a[0].clone(), [3, 2, 1], true),
            vec![x.clone()],
        ),
        (
            "avg_pool2d 2 1 1",
            |t, a| library::pool(t, a[0].clone(), [2, 1, 1], false),
            vec![x.clone()],
        ),
    ];
    for (name, f, args) in cases {
        assert_gradients(name, &f, args);
    }
    // Second order: squared outputs, in the input and in the filters.
    let filters = sample(&[2, 1, 2, 2], -1.0, 1.0, 35);
    let in_input = move |t: &mut Tape, a: Vec<Value>| {
        let x = ops::reshape(t, a[0].clone(), &[1, 1, 3, 4])?;
        let y = library::conv(t, "conv2d", x, filters.clone(), [1, 1, 1, 1])?;
        ops::mul(t, y.clone(), y)
    };
    assert_hessian("conv2d in the input", &in_input, vec![sample(&[12], -1.0, 1.0, 36)]);
    let image = sample(&[1, 2, 3, 3], -1.0, 1.0, 37);
    let in_filters = move |t: &mut Tape, a: Vec<Value>| {
        let w = ops::reshape(t, a[0].clone(), &[1, 2, 2, 2])?;
        let y = library::conv(t, "conv2d", image.clone(), w, [1, 0, 1, 1])?;
        ops::mul(t, y.clone(), y)
    };
    assert_hessian("conv2d in the filters", &in_filters, vec![sample(&[8], -1.0, 1.0, 38)]);
    let pooled = |largest: bool| {
        move |t: &mut Tape, a: Vec<Value>| {
            let x = ops::reshape(t, a[0].clone(), &[1, 1, 4, 4])?;
            let y = library::pool(t, x, [2, 2, 0], largest)?;
            ops::mul(t, y.clone(), y)
        }
    };
    let v = sample(&[16], -1.0, 1.0, 39);
    assert_hessian("max_pool2d", &pooled(true), vec![v.clone()]);
    assert_hessian("avg_pool2d", &pooled(false), vec![v.clone()]);
    // Padding fills -inf into a max pool's windows; the second derivative must not see it.
    let padded = |t: &mut Tape, a: Vec<Value>| {
        let x = ops::reshape(t, a[0].clone(), &[1, 1, 4, 4])?;
        let y = library::pool(t, x, [3, 1, 1], true)?;
        ops::mul(t, y.clone(), y)
    };
    assert_hessian("max_pool2d padded", &padded, vec![v]);
    // Mixed second order, in the images and the filters at once (one vector holds both).
    let both = |t: &mut Tape, a: Vec<Value>| {
        let x = ops::get(t, a[0].clone(), &[tensor::Index::range(0, 18)])?;
        let w = ops::get(t, a[0].clone(), &[tensor::Index::range(18, 26)])?;
        let x = ops::reshape(t, x, &[1, 2, 3, 3])?;
        let w = ops::reshape(t, w, &[2, 1, 2, 2])?;
        let y = library::conv(t, "conv2d", x, w, [1, 1, 1, 2])?;
        ops::mul(t, y.clone(), y)
    };
    assert_hessian(
        "conv2d in the images and the filters",
        &both,
        vec![sample(&[26], -1.0, 1.0, 43)],
    );
}

#[test]
fn rearrangements_differentiate() {
    use crate::ops::rearrange;
    use tensor::{PadMode, ScanOp};
    // Distinct values, so that the order of a sort is locally constant.
    let x = sample(&[3, 4], -1.0, 1.0, 40);
    let cases: [(&str, Library); 16] = [
        ("sort", |t, a| rearrange::sort(t, a[0].clone(), None, false)),
        ("sort along 0", |t, a| rearrange::sort(t, a[0].clone(), Some(0), false)),
        ("sort descending", |t, a| rearrange::sort(t, a[0].clone(), Some(1), true)),
        ("topk", |t, a| Ok(rearrange::topk(t, a[0].clone(), 2, None)?.0)),
        ("topk along 0", |t, a| Ok(rearrange::topk(t, a[0].clone(), 2, Some(0))?.0)),
        ("cumsum", |t, a| rearrange::cumulative(t, ScanOp::Sum, a[0].clone(), Some(1))),
        ("cumsum flat", |t, a| rearrange::cumulative(t, ScanOp::Sum, a[0].clone(), None)),
        ("cumprod", |t, a| rearrange::cumulative(t, ScanOp::Prod, a[0].clone(), Some(0))),
        ("flip", |t, a| rearrange::flip(t, a[0].clone(), None)),
        ("roll", |t, a| rearrange::roll(t, a[0].clone(), -3, None)),
        ("tile", |t, a| rearrange::tile(t, a[0].clone(), &[2, 1, 2])),
        ("repeat", |t, a| rearrange::repeat(t, a[0].clone(), 2, Some(1))),
        ("pad reflect", |t, a| {
            rearrange::pad(t, a[0].clone(), &[(1, 2), (3, 0)], PadMode::Reflect, Value::Float(0.0))
        }),
        ("pad edge", |t, a| {
            rearrange::pad(t, a[0].clone(), &[(2, 0), (1, 1)], PadMode::Edge, Value::Float(0.0))
        }),
        ("split", |t, a| {
            let parts = rearrange::split(t, a[0].clone(), 2, 1)?;
            ops::mul(t, parts[0].clone(), parts[1].clone())
        }),
        ("split at indices", |t, a| {
            let parts = rearrange::split_at(t, a[0].clone(), &[1, 3], 1)?;
            let ends = ops::mul(t, parts[0].clone(), parts[2].clone())?;
            ops::add(t, ends, parts[1].clone())
        }),
    ];
    for (name, f) in cases {
        assert_gradients(name, &f, vec![x.clone()]);
        // Second order through a nonlinear function of the rearranged elements: the gather's
        // rule (a scatter-add) is differentiated in turn.
        let cubed = |t: &mut Tape, a: Vec<Value>| {
            let square = ops::mul(t, a[0].clone(), a[0].clone())?;
            let matrix = ops::reshape(t, square, &[3, 4])?;
            let y = f(t, vec![matrix])?;
            ops::mul(t, y.clone(), y)
        };
        assert_hessian(name, &cubed, vec![sample(&[12], -1.0, 1.0, 41)]);
    }
    // pad with a constant: the map fills 1.5, and its derivative (the scatter's transpose) must
    // fill zeros, which the Hessian shows once padded elements meet inner ones (the roll).
    let padded_products = |t: &mut Tape, a: Vec<Value>| {
        let y = rearrange::pad(t, a[0].clone(), &[(1, 1)], PadMode::Constant, Value::Float(1.5))?;
        let rolled = rearrange::roll(t, y.clone(), 1, None)?;
        ops::mul(t, y, rolled)
    };
    let v = sample(&[4], -1.0, 1.0, 42);
    assert_gradients("pad constant", &padded_products, vec![v.clone()]);
    assert_hessian("pad constant", &padded_products, vec![v.clone()]);
    // A tracked fill value gets the gradient of every element it fills.
    let tracked_fill = |t: &mut Tape, a: Vec<Value>| {
        let y = rearrange::pad(t, a[0].clone(), &[(2, 1)], PadMode::Constant, a[1].clone())?;
        ops::mul(t, y.clone(), y)
    };
    assert_gradients("pad tracked value", &tracked_fill, vec![v.clone(), Value::Float(0.7)]);
    assert_hessian("pad tracked value", &tracked_fill, vec![v, Value::Float(0.7)]);
    // cumprod through a 0: exact derivatives (the product of each prefix), first and second
    // order, where dividing by the element would give NaN.
    let with_zero = vector(&[0.5, 0.0, -1.5, 2.0]);
    let cumprod =
        |t: &mut Tape, a: Vec<Value>| rearrange::cumulative(t, ScanOp::Prod, a[0].clone(), None);
    assert_gradients("cumprod through 0", &cumprod, vec![with_zero.clone()]);
    assert_hessian("cumprod through 0", &cumprod, vec![with_zero.clone()]);
    let mut tape = Tape::new();
    let mut last = |t: &mut Tape, a: Vec<Value>| {
        let y = rearrange::cumulative(t, ScanOp::Prod, a[0].clone(), None)?;
        ops::get(t, y, &[tensor::Index::At(3)])
    };
    // d(x0 x1 x2 x3)/dx at x1 = 0: only the partial in x1 survives, -1.5 = 0.5 * -1.5 * 2.
    let g = grad(&mut tape, &mut last, vec![with_zero], 0).unwrap();
    assert_eq!(numbers(&g), [0.0, -1.5, 0.0, 0.0]);
    // Ties in a sort: the gradient goes to the element sorted to each place, in the original
    // order of tied elements (stable), as JAX's sort.
    let mut first_two = |t: &mut Tape, a: Vec<Value>| {
        let sorted = rearrange::sort(t, a[0].clone(), None, false)?;
        let weights = vector(&[1.0, 10.0, 100.0, 1000.0]);
        let weighted = ops::mul(t, sorted, weights)?;
        ops::reduce(t, ReduceOp::Sum, weighted, None)
    };
    let g = grad(&mut tape, &mut first_two, vec![vector(&[2.0, 1.0, 2.0, 0.0])], 0).unwrap();
    assert_eq!(numbers(&g), [100.0, 10.0, 1000.0, 1.0]);
    // topk's indices are constants beside its values.
    let (values, indices) =
        rearrange::topk(&mut tape, vector(&[1.0, 4.0, 4.0, 2.0]), 3, None).unwrap();
    assert_eq!((numbers(&values), numbers(&indices)), (vec![4.0, 4.0, 2.0], vec![1.0, 2.0, 3.0]));
    // shuffle is reproducible from the seed and moves whole rows.
    let rows = tensor(&[4, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let shuffled = |seed: u64, tape: &mut Tape| {
        let mut rng = Rng::from_seed(seed);
        numbers(&rearrange::shuffle(tape, rows.clone(), &mut rng).unwrap())
    };
    let once = shuffled(5, &mut tape);
    assert_eq!(once, shuffled(5, &mut tape));
    for row in once.chunks(2) {
        assert_eq!(row[1], row[0] + 1.0, "{once:?}");
    }
    let shuffle = |t: &mut Tape, a: Vec<Value>| {
        let mut rng = Rng::from_seed(9);
        rearrange::shuffle(t, a[0].clone(), &mut rng)
    };
    assert_gradients("shuffle", &shuffle, vec![x]);
}

/// The elements of `parts`, flattened and joined: one value for the checks to weigh.
fn joined(t: &mut Tape, parts: Vec<Value>) -> Result<Value, AdError> {
    let mut flat = Vec::with_capacity(parts.len());
    for part in parts {
        let part = ops::to_tensor(t, part)?;
        let len = part.shape().iter().product::<usize>();
        flat.push(ops::reshape(t, part, &[len])?);
    }
    library::concat_many(t, flat, 0)
}

/// The singular values and the squares of the singular vectors (which do not depend on their
/// signs), joined.
fn svd_squares(t: &mut Tape, a: Vec<Value>) -> Result<Value, AdError> {
    let [u, s, vh] = ops::svd(t, a[0].clone())?;
    let (u, vh) = (ops::mul(t, u.clone(), u)?, ops::mul(t, vh.clone(), vh)?);
    joined(t, vec![u, s, vh])
}

#[test]
fn stacks_of_matrices_differentiate() {
    // inv, det, solve and cholesky of [2][3][3] stacks: each matrix's gradient is its own, at
    // first and second order (a stack of two 3x3 matrices would transpose into a stack of three
    // 2-vectors if a rule reversed every axis).
    let cases: [(&str, Library, Vec<Value>); 6] = [
        (
            "inv of a stack",
            |t, a| ops::inv(t, a[0].clone()),
            vec![sample(&[2, 3, 3], -1.0, 1.0, 70)],
        ),
        (
            "det of a stack",
            |t, a| ops::det(t, a[0].clone()),
            vec![sample(&[2, 3, 3], -1.0, 1.0, 71)],
        ),
        (
            "solve of a stack with a vector",
            |t, a| ops::solve(t, a[0].clone(), a[1].clone()),
            vec![sample(&[2, 3, 3], -1.0, 1.0, 72), sample(&[3], -1.0, 1.0, 73)],
        ),
        (
            "solve of a stack with one matrix",
            |t, a| ops::solve(t, a[0].clone(), a[1].clone()),
            vec![sample(&[2, 3, 3], -1.0, 1.0, 74), sample(&[3, 2], -1.0, 1.0, 75)],
        ),
        (
            "solve of one matrix with a stack",
            |t, a| ops::solve(t, a[0].clone(), a[1].clone()),
            vec![sample(&[3, 3], -1.0, 1.0, 76), sample(&[2, 3, 2], -1.0, 1.0, 77)],
        ),
        (
            "cholesky of a stack",
            |t, a| {
                let a_t = ops::swap_last_two(t, a[0].clone())?;
                let product = ops::matmul(t, a[0].clone(), a_t)?;
                let spd = ops::add(t, product, Value::tensor(tensor::Tensor::eye(3)?))?;
                ops::cholesky(t, spd)
            },
            vec![sample(&[2, 3, 3], -1.0, 1.0, 78)],
        ),
    ];
    for (name, f, args) in cases {
        assert_gradients(name, &f, args.clone());
        let shape = args[0].shape().to_vec();
        let rest = args[1..].to_vec();
        let flat = move |t: &mut Tape, x: Vec<Value>| {
            let first = ops::reshape(t, x[0].clone(), &shape)?;
            f(t, [vec![first], rest.clone()].concat())
        };
        let len = args[0].shape().iter().product();
        let vector = ops::reshape(&mut Tape::new(), args[0].clone(), &[len]).unwrap();
        assert_hessian(name, &flat, [vec![vector], args[1..].to_vec()].concat());
    }
    // A singular matrix beside a regular one: det's gradient there is the cofactor matrix.
    let singular = tensor(&[2, 2, 2], &[1.0, 2.0, 2.0, 4.0, 3.0, 1.0, 0.5, 2.0]);
    let mut det = |t: &mut Tape, a: Vec<Value>| {
        let determinants = ops::det(t, a[0].clone())?;
        ops::reduce(t, ReduceOp::Sum, determinants, None)
    };
    let g = grad(&mut Tape::new(), &mut det, vec![singular], 0).unwrap();
    // cof([[1, 2], [2, 4]]) = [[4, -2], [-2, 1]]; det([[3, 1], [0.5, 2]]) inv^T = [[2, -0.5], [-1, 3]].
    assert_close(&g, &[4.0, -2.0, -2.0, 1.0, 2.0, -0.5, -1.0, 3.0], 1e-14, "det of a stack");
}

#[test]
fn decompositions_differentiate() {
    // Functions of the factors that do not depend on the signs LAPACK chooses for the singular
    // vectors and eigenvectors (their squares), with distinct singular values and eigenvalues.
    let qr: Library = |t, a| {
        let (q, r) = ops::qr(t, a[0].clone())?;
        joined(t, vec![q, r])
    };
    let eigh: Library = |t, a| {
        let (w, v) = ops::eigh(t, a[0].clone())?;
        let v = ops::mul(t, v.clone(), v)?;
        joined(t, vec![w, v])
    };
    let slogdet: Library = |t, a| Ok(ops::slogdet(t, a[0].clone())?.1);
    let cases: [(&str, Library, Vec<usize>); 13] = [
        ("qr", qr, vec![4, 3]),
        ("qr of a stack", qr, vec![2, 4, 3]),
        ("svd of a stack", svd_squares, vec![2, 3, 2]),
        ("eigh of a stack", eigh, vec![2, 3, 3]),
        ("slogdet of a stack", slogdet, vec![2, 3, 3]),
        ("svd of a tall matrix", svd_squares, vec![4, 3]),
        ("svd of a wide matrix", svd_squares, vec![2, 4]),
        ("eigh", eigh, vec![3, 3]),
        ("slogdet", slogdet, vec![3, 3]),
        ("pinv", |t, a| ops::pinv(t, a[0].clone()), vec![4, 3]),
        (
            "matrix_norm nuc",
            |t, a| library::matrix_norm(t, a[0].clone(), tensor::MatrixOrd::Nuclear),
            vec![3, 4],
        ),
        (
            "matrix_norm 2",
            |t, a| {
                library::matrix_norm(t, a[0].clone(), tensor::MatrixOrd::Spectral { largest: true })
            },
            vec![3, 4],
        ),
        (
            "matrix_norm fro",
            |t, a| library::matrix_norm(t, a[0].clone(), tensor::MatrixOrd::Frobenius),
            vec![3, 4],
        ),
    ];
    for (seed, (name, f, shape)) in cases.into_iter().enumerate() {
        let a = sample(&shape, -1.0, 1.0, 50 + seed as u64);
        assert_gradients(name, &f, vec![a.clone()]);
        // Second order, with the matrix as a vector.
        let flat = |t: &mut Tape, x: Vec<Value>| {
            let matrix = ops::reshape(t, x[0].clone(), &shape)?;
            f(t, vec![matrix])
        };
        let len = shape.iter().product();
        let vector = ops::reshape(&mut Tape::new(), a, &[len]).unwrap();
        assert_hessian(name, &flat, vec![vector]);
    }
    // lstsq is pinv(A) @ b: differentiable in both.
    let lstsq = |t: &mut Tape, a: Vec<Value>| {
        let inverse = ops::pinv(t, a[0].clone())?;
        ops::matmul(t, inverse, a[1].clone())
    };
    assert_gradients(
        "lstsq",
        &lstsq,
        vec![sample(&[4, 2], -1.0, 1.0, 60), sample(&[4], -1.0, 1.0, 61)],
    );
    // The gradient of the nuclear norm of a matrix with a repeated singular value (the identity)
    // is U Vh, here the identity: the terms between equal values are left out, not NaN.
    let mut tape = Tape::new();
    let mut nuclear = |t: &mut Tape, a: Vec<Value>| {
        library::matrix_norm(t, a[0].clone(), tensor::MatrixOrd::Nuclear)
    };
    let g = grad(&mut tape, &mut nuclear, vec![tensor(&[2, 2], &[1.0, 0.0, 0.0, 1.0])], 0).unwrap();
    assert_eq!(numbers(&g), [1.0, 0.0, 0.0, 1.0]);
}
