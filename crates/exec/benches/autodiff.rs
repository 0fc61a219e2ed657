//! The autodiff engine's costs through its Rust API (the `ops` functions, the tape and the
//! transforms, called from Rust loops with no interpreter on top), printed as a Markdown section
//! for `cargo xtask bench`: the NiLang loops `x = x + one` and `x = x * a + sin(x) * b` for a
//! million iterations, forward only and forward plus backward, the tape's bytes per record, and
//! one training step of a 784-256-10 tanh network on a batch of 128. A plain `main` (no harness):
//! medians of repeated runs after a warm-up. The single-threaded loops are timed in thread CPU
//! time, which other processes on a busy machine do not inflate; the network, whose products run
//! on several OpenBLAS threads, in wall-clock time.

use std::hint::black_box;
use std::time::Instant;

use exec::autodiff::{AdError, Tape, grad};
use exec::ops;
use exec::value::Value;
use tensor::{ReduceOp, Rng, Tensor, UnaryOp, ensure_tuned_kernel};

/// The allocator of the `nabla` binary, so the figures are what users get.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ITERATIONS: usize = 1_000_000;
const A: f64 = 0.9;
const B: f64 = 0.1;
const X0: f64 = 0.5;

/// How a run is timed.
#[derive(Clone, Copy)]
enum Clock {
    /// CPU time of the calling thread.
    Thread,
    /// Elapsed real time.
    Wall,
}

impl Clock {
    /// The clock's reading in seconds.
    fn now(self) -> f64 {
        match self {
            Clock::Thread => {
                let mut time = libc::timespec { tv_sec: 0, tv_nsec: 0 };
                // SAFETY: `clock_gettime` writes one `timespec` through the valid pointer.
                let status =
                    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut time) };
                match status {
                    0 => time.tv_sec as f64 + time.tv_nsec as f64 * 1e-9,
                    _ => Clock::Wall.now(),
                }
            }
            Clock::Wall => {
                let origin = *ORIGIN.get_or_init(Instant::now);
                origin.elapsed().as_secs_f64()
            }
        }
    }
}

static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// The median time in seconds of `runs` runs of `work`, after one warm-up run.
fn median(
    clock: Clock,
    runs: usize,
    mut work: impl FnMut() -> Result<(), AdError>,
) -> Result<f64, AdError> {
    work()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = clock.now();
        work()?;
        times.push(clock.now() - start);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// `x = x + one`, `ITERATIONS` times.
fn accumulate(t: &mut Tape, x: Value, one: Value) -> Result<Value, AdError> {
    let mut x = x;
    for _ in 0..ITERATIONS {
        x = ops::add(t, x, one.clone())?;
    }
    Ok(x)
}

/// `x = x * a + sin(x) * b`, `ITERATIONS` times.
fn recurrence(t: &mut Tape, x: Value) -> Result<Value, AdError> {
    let mut x = x;
    for _ in 0..ITERATIONS {
        let scaled = ops::mul(t, x.clone(), Value::Float(A))?;
        let sine = ops::unary(t, UnaryOp::Sin, x)?;
        let wave = ops::mul(t, sine, Value::Float(B))?;
        x = ops::add(t, scaled, wave)?;
    }
    Ok(x)
}

struct LoopFigures {
    name: &'static str,
    /// Tape words one iteration recorded, measured.
    words_per_iteration: usize,
    native: f64,
    forward: f64,
    program: f64,
    program_forward: f64,
    transform: f64,
}

/// The median of some timings.
fn middle(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times.get(times.len() / 2).copied().unwrap_or(f64::NAN)
}

fn nanoseconds_per_iteration(seconds: f64) -> f64 {
    seconds * 1e9 / ITERATIONS as f64
}

fn loops() -> Result<Vec<LoopFigures>, AdError> {
    let mut tape = Tape::new();
    let mut figures = Vec::new();

    let native = median(Clock::Thread, 7, || {
        let mut x = black_box(X0);
        let one = black_box(1.0);
        for _ in 0..ITERATIONS {
            x = black_box(x + one);
        }
        black_box(x);
        Ok(())
    })?;
    let forward = median(Clock::Thread, 7, || {
        black_box(accumulate(&mut tape, Value::Float(X0), Value::Float(1.0))?);
        Ok(())
    })?;
    let mut forward_times = Vec::new();
    let mut words = 0;
    let program = median(Clock::Thread, 7, || {
        let start = Clock::Thread.now();
        let x0 = tape.leaf(Value::Float(X0))?;
        let one = tape.leaf(Value::Float(1.0))?;
        let x = accumulate(&mut tape, x0.clone(), one.clone())?;
        forward_times.push(Clock::Thread.now() - start);
        words = tape.program_len();
        tape.backward(&x)?;
        black_box((tape.grad_of(&x0)?, tape.grad_of(&one)?));
        Ok(())
    })?;
    let transform = median(Clock::Thread, 7, || {
        let mut f =
            |t: &mut Tape, args: Vec<Value>| accumulate(t, args[0].clone(), Value::Float(1.0));
        black_box(grad(&mut tape, &mut f, vec![Value::Float(X0)], 0)?);
        Ok(())
    })?;
    figures.push(LoopFigures {
        name: "`x = x + one`",
        words_per_iteration: words / ITERATIONS,
        native,
        forward,
        program,
        program_forward: middle(forward_times),
        transform,
    });

    let native = median(Clock::Thread, 7, || {
        let mut x = black_box(X0);
        for _ in 0..ITERATIONS {
            x = black_box(x * A + x.sin() * B);
        }
        black_box(x);
        Ok(())
    })?;
    let forward = median(Clock::Thread, 7, || {
        black_box(recurrence(&mut tape, Value::Float(X0))?);
        Ok(())
    })?;
    let mut forward_times = Vec::new();
    let program = median(Clock::Thread, 7, || {
        let start = Clock::Thread.now();
        let x0 = tape.leaf(Value::Float(X0))?;
        let x = recurrence(&mut tape, x0.clone())?;
        forward_times.push(Clock::Thread.now() - start);
        words = tape.program_len();
        tape.backward(&x)?;
        black_box(tape.grad_of(&x0)?);
        Ok(())
    })?;
    let transform = median(Clock::Thread, 7, || {
        let mut f = |t: &mut Tape, args: Vec<Value>| recurrence(t, args[0].clone());
        black_box(grad(&mut tape, &mut f, vec![Value::Float(X0)], 0)?);
        Ok(())
    })?;
    figures.push(LoopFigures {
        name: "`x = x * a + sin(x) * b`",
        words_per_iteration: words / ITERATIONS,
        native,
        forward,
        program,
        program_forward: middle(forward_times),
        transform,
    });
    Ok(figures)
}

struct Network {
    parameters: Vec<Value>,
    x: Value,
    labels: Value,
}

fn network() -> Result<Network, AdError> {
    let mut rng = Rng::from_seed(0);
    let scaled = |tensor: Tensor, scale: f64| Value::tensor(tensor.map(|v| v * scale));
    let parameters = vec![
        scaled(rng.randn(&[784, 256])?, 0.05),
        Value::tensor(Tensor::zeros(&[256])?),
        scaled(rng.randn(&[256, 10])?, 0.05),
        Value::tensor(Tensor::zeros(&[10])?),
    ];
    let x = Value::tensor(rng.rand(&[128, 784])?);
    let labels: Vec<f64> =
        (0..128 * 10).map(|k| f64::from(u8::from(k % 10 == (k / 10) % 10))).collect();
    let labels = Value::tensor(Tensor::from_vec(&[128, 10], labels)?);
    Ok(Network { parameters, x, labels })
}

/// Mean softmax cross-entropy of the network on the batch.
fn loss(t: &mut Tape, parameters: &[Value], x: &Value, labels: &Value) -> Result<Value, AdError> {
    let hidden = ops::matmul(t, x.clone(), parameters[0].clone())?;
    let hidden = ops::add(t, hidden, parameters[1].clone())?;
    let hidden = ops::unary(t, UnaryOp::Tanh, hidden)?;
    let logits = ops::matmul(t, hidden, parameters[2].clone())?;
    let logits = ops::add(t, logits, parameters[3].clone())?;
    let log_probabilities = ops::log_softmax(t, logits, 1)?;
    let picked = ops::mul(t, log_probabilities, labels.clone())?;
    let total = ops::reduce(t, ReduceOp::Sum, picked, Some(1))?;
    let mean = ops::reduce(t, ReduceOp::Mean, total, None)?;
    ops::neg(t, mean)
}

fn mlp() -> Result<(f64, f64), AdError> {
    let network = network()?;
    let mut tape = Tape::new();
    let forward = median(Clock::Wall, 15, || {
        black_box(loss(&mut tape, &network.parameters, &network.x, &network.labels)?);
        Ok(())
    })?;
    let mut slots: Vec<Value> =
        network.parameters.iter().map(|p| tape.leaf(p.clone())).collect::<Result<_, _>>()?;
    let step = median(Clock::Wall, 15, || {
        for slot in slots.iter_mut() {
            tape.refresh_var(slot)?;
        }
        let value = loss(&mut tape, &slots, &network.x, &network.labels)?;
        tape.backward(&value)?;
        for slot in &slots {
            black_box(tape.grad_of(slot)?);
        }
        Ok(())
    })?;
    Ok((forward, step))
}

fn main() -> Result<(), AdError> {
    ensure_tuned_kernel();
    let figures = loops()?;
    let (mlp_forward, mlp_step) = mlp()?;

    println!("## Autodiff tape through the Rust API\n");
    println!(
        "The NiLang loops ({ITERATIONS} iterations from x0 = {X0}, a = {A}, b = {B}, gradient with \
         respect to x0), run through the Rust API of `exec::ops` and the tape, without an \
         interpreter. Times are nanoseconds per iteration of thread CPU time.\n"
    );
    println!(
        "| loop | native f64 | forward, untracked | recording | forward + backward | ratio | \
         `grad(f)(x0)` |"
    );
    println!("|---|---|---|---|---|---|---|");
    for loop_figures in &figures {
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}x | {:.1} |",
            loop_figures.name,
            nanoseconds_per_iteration(loop_figures.native),
            nanoseconds_per_iteration(loop_figures.forward),
            nanoseconds_per_iteration(loop_figures.program_forward),
            nanoseconds_per_iteration(loop_figures.program),
            loop_figures.program / loop_figures.forward,
            nanoseconds_per_iteration(loop_figures.transform),
        );
    }
    let record = Tape::record_bytes();
    let adjoint = Tape::adjoint_bytes();
    println!(
        "\n\"forward, untracked\" is the same loop on plain values; \"recording\" is the forward \
         pass on the program tape (`var` leaves), and \"forward + backward\" adds `backward` and \
         `grad(x0)`; the ratio compares it with the untracked forward. `grad(f)(x0)` runs the loop \
         under the transform.\n"
    );
    println!(
        "Tape memory: {record}-byte words, one for a scalar operation of one recorded input \
         that is the node just before (a chain), two for one of another input and four for two \
         inputs ({} and {} bytes per iteration of the two loops here, where every operation is \
         recorded on its own; `nabla run` fuses the second loop's four operations into one \
         {record}-byte chain), plus {adjoint} bytes per word for the float adjoints while \
         `backward` runs.\n",
        record * figures[0].words_per_iteration,
        record * figures[1].words_per_iteration,
    );
    println!("| 784-256-10 tanh network, batch 128, float64 | time |");
    println!("|---|---|");
    println!("| forward (loss only, untracked) | {:.2} ms |", mlp_forward * 1e3);
    println!(
        "| training step: forward on the tape, `backward`, `grad` of the 4 parameters | {:.2} ms |",
        mlp_step * 1e3
    );
    println!(
        "\nSoftmax cross-entropy, mean over the batch; matrix products on OpenBLAS with the tuned \
         kernel."
    );
    Ok(())
}
