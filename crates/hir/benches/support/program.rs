//! The generated program the checker's and the language server's benchmarks measure on (the
//! language server's includes this file by path): blocks of functions and top-level statements
//! with fresh names.

/// One function and a few top-level statements per block, with fresh names, until `lines`.
pub fn generate(lines: usize) -> String {
    let mut text =
        String::from("cns int WIDTH = 4;\nvar Tensor w[3][WIDTH] = randn([3, WIDTH]);\n");
    let mut i = 0;
    let mut count = 2;
    while count < lines {
        let block = format!(
            "function Tensor[n][m] layer{i}(Tensor x[n][k], Tensor w[k][m], float scale) {{
    Tensor h[n][m] = tanh(x @ w) * scale + 0.5;
    loop (int j = 0; j < 10; j++) {{
        if (j % 2 == 0 && h[0][0] > 1e-3) {{
            h[0][0] += (float)j / 3.0;
        }} elif (j > 7) {{
            break;
        }} else {{
            h = h * 0.5;
        }}
    }}
    return softmax(h, 1);
}}
function float loss{i}(Tensor p[n][m], Tensor y[n][m]) {{
    Tensor d[n][m] = p - y;
    return mean(d * d);
}}
Tensor x{i}[2][3] = [[1, 2, 3], [4, 5, 6]];
Tensor out{i}[2][WIDTH] = layer{i}(x{i}, w, 0.5);
print(loss{i}(out{i}, out{i}), grad(loss{i})(out{i}, out{i}));

"
        );
        count += block.lines().count();
        text.push_str(&block);
        i += 1;
    }
    text
}
