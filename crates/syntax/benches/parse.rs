//! Parser throughput on a generated file of about 6 MB, printed as a Markdown section for
//! `cargo xtask bench`. A plain `main` (no harness): the median of repeated runs after a warm-up.

use std::time::Instant;

/// The allocator of the `nabla` binary, so the figure is what users get.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A program that uses every construct, repeated with fresh names until it reaches `bytes`.
fn generate(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 4096);
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "// Layer {i}.\nfunction Tensor[n][m] layer{i}(Tensor x[n][k], var Tensor w[k][m], float scale) {{\n    \
             Tensor h[n][m] = tanh(x @ w) * scale + 0.5;\n    loop (int j = 0; j < 10; j++) {{\n        \
             if (j % 2 == 0 && h[0][j] > 1e-3) {{\n            h[0][j] += (float)j / 3.0;\n        }} elif (j > 7) {{\n            \
             break;\n        }} else {{\n            h = h[1:] @ transpose(w[:2]);\n        }}\n    }}\n    \
             C(i, j) = A(i, k) * B(k, j);\n    return softmax(h, 1) ? h : -h;\n}}\n\n\
             test \"layer {i}\" {{\n    var Tensor a[2][2] = [[1, 2], [3, 4]];\n    backward(sum(a @ a));\n    \
             assert_close(grad(a), [[7, 11], [9, 13]]);\n}}\n\n"
        ));
        i += 1;
    }
    text
}

fn main() {
    let text = generate(6 * 1024 * 1024);
    let megabytes = text.len() as f64 / 1e6;
    // Warm up, and check the input is clean so the figure is for the happy path.
    let parse = syntax::parse(&text);
    assert!(parse.errors().is_empty(), "generated program has errors: {:?}", &parse.errors()[..1]);
    let mut times = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        let parse = syntax::parse(&text);
        let elapsed = start.elapsed().as_secs_f64();
        std::hint::black_box(parse);
        times.push(elapsed);
    }
    times.sort_by(f64::total_cmp);
    let median = times[times.len() / 2];
    let lines = text.lines().count();
    println!("## Parser\n");
    println!("| input | size | median time | throughput |");
    println!("|---|---|---|---|");
    println!(
        "| generated program, {lines} lines | {megabytes:.1} MB | {:.1} ms | {:.1} MB/s |",
        median * 1e3,
        megabytes / median
    );
    println!("\nLexing, parsing and building the lossless rowan tree, on one core.");
}
