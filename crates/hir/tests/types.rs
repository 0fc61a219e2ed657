//! Type annotations, as rust-analyzer writes them: a comment line `//^^^ Tensor[n][2*m]` marks
//! the columns of the line above it with carets, and the expression (or declared name) exactly
//! under them must have that type, sizes shown as written.
//!
//! Each fixture is checked as a whole: every annotation must hold, and the program must have no
//! errors.

use hir::{Database, SourceFile};
use syntax::{TextRange, TextSize};

/// The annotations of a fixture: the range the carets mark and the type after them.
fn annotations(text: &str) -> Vec<(TextRange, String)> {
    let mut out = Vec::new();
    let mut previous_line_start: Option<usize> = None;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        match (trimmed.strip_prefix("//"), previous_line_start) {
            (Some(rest), Some(start)) if rest.trim_start().starts_with('^') => {
                let column = line.find('^').unwrap_or_default();
                let marks = &line[column..];
                let carets = marks.chars().take_while(|&c| c == '^').count();
                let expected = marks[carets..].trim().to_owned();
                let range = TextRange::at(
                    TextSize::from((start + column) as u32),
                    TextSize::from(carets as u32),
                );
                out.push((range, expected));
            }
            _ => previous_line_start = Some(offset),
        }
        offset += line.len();
    }
    out
}

/// The type at a range: of the expression whose span is exactly the range, else of the local
/// whose name is there.
fn type_at(db: &Database, file: SourceFile, range: TextRange) -> Option<String> {
    let (def, _, _) = hir::def_at(db, file, range.start())?;
    let body = hir::body(db, def);
    let result = hir::infer(db, def);
    let at = |span| hir::file_range(db, hir::HirSpan { def, span }).1;
    let mut exprs = body.exprs.iter().map(|(e, _)| e);
    if let Some(expr) = exprs.rfind(|&e| at(body.source_map.expr(e)) == range) {
        return Some(result.type_of_expr(expr).to_string());
    }
    let mut locals = body.locals.iter().map(|(l, _)| l);
    let local = locals.rfind(|&l| at(body.source_map.local(l)) == range)?;
    Some(result.type_of_local(local).to_string())
}

fn check_types(fixture: &str) {
    let mut db = Database::default();
    let file = db.set_file("/fixture/main.nb", fixture);
    let errors: Vec<String> = hir::file_diagnostics(&db, file)
        .iter()
        .filter(|d| d.severity == hir::Severity::Error)
        .map(|d| format!("{} {}", d.code, d.message))
        .collect();
    assert!(errors.is_empty(), "the fixture has errors: {errors:#?}");
    let annotations = annotations(fixture);
    assert!(!annotations.is_empty(), "the fixture has no annotations");
    let mut failures = Vec::new();
    for (range, expected) in annotations {
        let found = type_at(&db, file, range);
        let text = &fixture[usize::from(range.start())..usize::from(range.end())];
        if found.as_deref() != Some(expected.as_str()) {
            failures.push(format!("`{text}`: expected {expected}, found {found:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn sizes_are_written_as_declared() {
    check_types(
        r#"
function Tensor[n][2*m] widen(Tensor x[n][m]) {
    Tensor z[n][2*m] = concat(x, x, 1);
    //     ^ Tensor[n][2*m]
    return z;
}
function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q]) {
    Tensor y[n - q + 1];
    //     ^ Tensor[n - q + 1]
    return y;
}
"#,
    );
}

#[test]
fn shape_rules_compute_sizes() {
    check_types(
        r#"
function float rules(Tensor a[n][m], Tensor b[m][k + 1]) {
    Tensor c = concat(a, a, 0);
    //         ^^^^^^^^^^^^^^^ Tensor[n + n][m]
    Tensor d = a @ b;
    //         ^^^^^ Tensor[n][k + 1]
    Tensor e = reshape(a, [n*m]);
    //         ^^^^^^^^^^^^^^^^^ Tensor[n*m]
    Tensor f = a[1:];
    //         ^^^^^ Tensor[n - 1][m]
    Tensor g = zeros([2*n, m / 2]);
    //         ^^^^^^^^^^^^^^^^^^^ Tensor[2*n][m / 2]
    Tensor h = stack(b, b);
    //         ^^^^^^^^^^^ Tensor[2][m][k + 1]
    return sum(c) + sum(d) + sum(e) + sum(f) + sum(g) + sum(h);
}
"#,
    );
}

#[test]
fn windows_count_positions_in_sizes() {
    check_types(
        r#"
function float layers(Tensor x[n][3][h][w], Tensor k[8][3][3][3], Tensor s[n][2][l]) {
    Tensor a = conv2d(x, k);
    //         ^^^^^^^^^^^^ Tensor[n][8][h - 2][w - 2]
    Tensor b = conv2d(x, k, 1, 1);
    //         ^^^^^^^^^^^^^^^^^^ Tensor[n][8][h][w]
    Tensor c = max_pool2d(x, 2);
    //         ^^^^^^^^^^^^^^^^ Tensor[n][3][(h - 2 - (h - 2) % 2) / 2 + 1][(w - 2 - (w - 2) % 2) / 2 + 1]
    Tensor d = conv1d(s, ones([4, 1, 5]), 1, 2, 1, 2);
    //         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ Tensor[n][4][l]
    Tensor e = avg_pool2d(zeros([2, 3, 9, 8]), 3, 2, 1);
    //         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ Tensor[2][3][5][4]
    Tensor f[n][8][h - 2][w - 2] = a;
    return sum(a) + sum(b) + sum(c) + sum(d) + sum(e) + sum(f);
}
"#,
    );
}

#[test]
fn rearrangements_keep_sizes() {
    check_types(
        r#"
function float arrays(Tensor x[n][2*m], Tensor v[k]) {
    Tensor s = sort(x);
    //         ^^^^^^^ Tensor[n][2*m]
    (Tensor top[n][3], Tensor at[n][3]) = topk(x, 3);
    //      ^^^ Tensor[n][3]
    (Tensor left[n][m], Tensor right[n][m]) = split(x, 2, 1);
    //                         ^^^^^ Tensor[n][m]
    Tensor c = cumsum(x);
    //         ^^^^^^^^^ Tensor[n*2*m]
    Tensor p = cumprod(x, 0);
    //         ^^^^^^^^^^^^^ Tensor[n][2*m]
    Tensor f = flip(roll(x, 1, 1));
    //         ^^^^^^^^^^^^^^^^^^^ Tensor[n][2*m]
    Tensor t = tile(v, [2, 3]);
    //         ^^^^^^^^^^^^^^^ Tensor[2][3*k]
    Tensor r = repeat(x, 3, 0);
    //         ^^^^^^^^^^^^^^^ Tensor[3*n][2*m]
    Tensor q = repeat(v, 2);
    //         ^^^^^^^^^^^^ Tensor[2*k]
    Tensor d = pad(x, [[1, 2], [0, m]], "edge");
    //         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ Tensor[n + 3][2*m + m]
    Tensor e = pad(v, 2);
    //         ^^^^^^^^^ Tensor[k + 4]
    Tensor u = shuffle(x);
    //         ^^^^^^^^^^ Tensor[n][2*m]
    return sum(s) + sum(top) + sum(at) + sum(left) + sum(right) + sum(c) + sum(p) + sum(f) + sum(t) + sum(r) + sum(q) + sum(d) + sum(e) + sum(u);
}
"#,
    );
}

#[test]
fn decompositions_give_tuples_of_factors() {
    check_types(
        r#"
function float factors(Tensor a[m][n], Tensor s[k][k], Tensor t[5][3]) {
    (Tensor q[5][3], Tensor r[3][3]) = qr(t);
    //      ^ Tensor[5][3]
    (Tensor u[2][2], Tensor sv[2], Tensor vh[2][5]) = svd(transpose(t)[0:2]);
    //                      ^^ Tensor[2]
    (Tensor w[k], Tensor v[k][k]) = eigh(s);
    //                   ^ Tensor[k][k]
    (float sign, float logdet) = slogdet(s);
    //                 ^^^^^^ float
    Tensor p = pinv(a);
    //         ^^^^^^^ Tensor[n][m]
    Tensor x = lstsq(a, ones([m, 2]));
    //         ^^^^^^^^^^^^^^^^^^^^^^ Tensor[n][2]
    float f = matrix_norm(a, "nuc") + matrix_norm(a, -2);
    Tensor stacked = matrix_norm(ones([4, 2, 2]));
    //               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^ Tensor[4]
    return sum(q) + sum(r) + sum(u) + sum(sv) + sum(vh) + sum(w) + sum(v) + sign + logdet + sum(p) + sum(x) + f + sum(stacked);
}
"#,
    );
}

#[test]
fn calls_bind_sizes_from_arguments() {
    check_types(
        r#"
function Tensor[n][2*m] widen(Tensor x[n][m]) {
    return concat(x, x, 1);
}
function Tensor[m] per_pair(Tensor x[n][2*m]) {
    return sum(reshape(x, [n, m, 2]), 2)[0];
}
function Tensor[n - q + 1] conv1d_valid(Tensor x[n], Tensor k[q]) {
    Tensor y[n - q + 1];
    return y;
}
function float sizes(Tensor a[r][c]) {
    Tensor w = widen(a);
    //         ^^^^^^^^ Tensor[r][2*c]
    Tensor p = per_pair(w);
    //         ^^^^^^^^^^^ Tensor[c]
    Tensor v = conv1d_valid(a[0], ones([3]));
    //         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ Tensor[c - 2]
    return sum(w) + sum(p) + sum(v);
}
Tensor x = widen(ones([3, 4]));
//         ^^^^^^^^^^^^^^^^^^^ Tensor[3][8]
Tensor y = per_pair(ones([3, 8]));
//         ^^^^^^^^^^^^^^^^^^^^^^ Tensor[4]
Tensor z = conv1d_valid(arange(8), ones([3]));
//         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ Tensor[6]
"#,
    );
}

#[test]
fn runtime_sizes_are_named_by_what_they_read() {
    check_types(
        r#"
function float halves(Tensor x[n]) {
    int h = shape(x, 0) / 2;
    Tensor d[h] = x[0:h];
    //     ^ Tensor[h]
    Tensor both = concat(d, d, 0);
    //            ^^^^^^^^^^^^^^^ Tensor[h + h]
    int k = 2;
    k++;
    Tensor g[k + 1];
    //     ^ Tensor[k + 1]
    Tensor rest[shape(x, 0) - h] = x[h:];
    //     ^^^^ Tensor[shape(x, 0) - h]
    return sum(both) + sum(g) + sum(rest);
}
"#,
    );
}

#[test]
fn indexing_gives_static_shapes_on_every_axis() {
    check_types(
        r#"
function float views(Tensor a[n][m], Tensor x[3][4][5]) {
    Tensor c = a[:, 0];
    //         ^^^^^^^ Tensor[n]
    Tensor r = a[::-1, 1:];
    //         ^^^^^^^^^^^ Tensor[n][m - 1]
    Tensor l = a[-2:];
    //         ^^^^^^ Tensor[2][m]
    Tensor k = a[1:-1];
    //         ^^^^^^^ Tensor[n - 2][m]
    Tensor s = a[::2];
    //         ^^^^^^ Tensor[?][m]
    Tensor e = x[..., 0];
    //         ^^^^^^^^^ Tensor[3][4]
    Tensor f = x[1, ..., none];
    //         ^^^^^^^^^^^^^^^ Tensor[4][5][1]
    Tensor g = x[none, :, 2:0:-1, ::2];
    //         ^^^^^^^^^^^^^^^^^^^^^^^ Tensor[1][3][2][3]
    float h = x[-1, 0, 4];
    //        ^^^^^^^^^^^ float
    Tensor i = x[1][2:][0];
    //         ^^^^^^^^^^^ Tensor[5]
    Tensor j = a[m:];
    //         ^^^^^ Tensor[n - m][m]
    // `n - 1` could be negative, and a negative bound counts from the end: checked at run time.
    Tensor o = a[n - 1:];
    //         ^^^^^^^^^ Tensor[?][m]
    return sum(c) + sum(r) + sum(l) + sum(k) + sum(s) + sum(e) + sum(f) + sum(g) + h + sum(i)
        + sum(j) + sum(o);
}
"#,
    );
}

#[test]
fn index_tensors_gather_with_numpy_shapes() {
    check_types(
        r#"
function float gathers(Tensor E[v][d], Tensor ids[n], Tensor p[k][c], Tensor y[k], Tensor x[2][3][4]) {
    Tensor r = E[ids];
    //         ^^^^^^ Tensor[n][d]
    Tensor q = p[arange(k), y];
    //         ^^^^^^^^^^^^^^^ Tensor[k]
    Tensor a = x[:, [2, 0]];
    //         ^^^^^^^^^^^^ Tensor[2][2][4]
    Tensor b = x[[1, 0], :, [0, 3]];
    //         ^^^^^^^^^^^^^^^^^^^^ Tensor[2][3]
    Tensor e = x[0, :, [1, 2]];
    //         ^^^^^^^^^^^^^^^ Tensor[2][3]
    Tensor f = x[none, [1], 0];
    //         ^^^^^^^^^^^^^^^ Tensor[1][1][4]
    Tensor g = x[[[0], [1]], [0, 2]];
    //         ^^^^^^^^^^^^^^^^^^^^^ Tensor[2][2][4]
    Tensor h = x[..., [0, 0]];
    //         ^^^^^^^^^^^^^^ Tensor[2][3][2]
    return sum(r) + sum(q) + sum(a) + sum(b) + sum(e) + sum(f) + sum(g) + sum(h);
}
"#,
    );
}

#[test]
fn masks_combine_element_wise() {
    check_types(
        r#"
function float masks(Tensor a[n], Tensor b[2][1]) {
    Tensor m = !(a > 0);
    //         ^^^^^^^^ Tensor[n]
    Tensor k = (a > 0) && b;
    //         ^^^^^^^^^^^^ Tensor[2][n]
    Tensor o = (a > 0) || (a < 1);
    //         ^^^^^^^^^^^^^^^^^^ Tensor[n]
    return sum(m) + sum(k) + sum(o);
}
"#,
    );
}

#[test]
fn masks_select_with_run_time_extents() {
    check_types(
        r#"
function float selections(Tensor a[n], Tensor x[2][3][4], Tensor ids[3]) {
    Tensor p = a[a > 0];
    //         ^^^^^^^^ Tensor[?]
    Tensor r = x[x[:, :, 0] > 4];
    //         ^^^^^^^^^^^^^^^^^ Tensor[?][4]
    Tensor c = x[:, (ids > 0) || (ids < -1)];
    //         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ Tensor[2][?][4]
    Tensor d = x[x[:, 0, 0] > 0, :, 1];
    //         ^^^^^^^^^^^^^^^^^^^^^^^ Tensor[?][3]
    Tensor keep = !(a < 0);
    keep = keep && (a < 5);
    Tensor k = a[keep];
    //         ^^^^^^^ Tensor[?]
    // A tensor of indices that a write made a non-mask: a gather.
    Tensor g = ids > 0;
    g[0] = 2;
    Tensor h = x[g];
    //         ^^^^ Tensor[3][3][4]
    Tensor z = nonzero(x > 3);
    //         ^^^^^^^^^^^^^^ Tensor[?]
    return sum(p) + sum(r) + sum(c) + sum(d) + sum(k) + sum(h) + sum(z);
}
"#,
    );
}
