//! `plot`, `scatter`, `histogram` and `save_image` end to end: a program writes charts as SVG and
//! PNG and images as PNG; the SVG files are well formed with the elements the data call for (a
//! line per series, a circle per point, a bar per bin, the title and labels), and the PNG files
//! decode to the expected size, colour type and pixels.

use std::path::Path;
use std::process::Command;

use tempfile::TempDir;

/// A fresh directory for one test's files, removed when the guard is dropped.
fn scratch(name: &str) -> TempDir {
    TempDir::with_prefix(format!("nabla-plot-{name}-")).unwrap_or_else(|err| panic!("{err}"))
}

/// Writes `source` to `dir/main.nb`, runs it and returns standard error and the exit status.
fn run(dir: &Path, source: &str) -> (String, i32) {
    let path = dir.join("main.nb");
    std::fs::write(&path, source).unwrap_or_else(|err| panic!("{err}"));
    let output = Command::new(env!("CARGO_BIN_EXE_nabla"))
        .args(["run", &path.display().to_string()])
        .env("NO_COLOR", "1")
        .output()
        .unwrap_or_else(|err| panic!("cannot run nabla: {err}"));
    (String::from_utf8_lossy(&output.stderr).into_owned(), output.status.code().unwrap_or(-1))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// Checks that every tag of an SVG document is closed in order, and returns how many elements
/// of each name it has.
fn svg_elements(text: &str) -> std::collections::BTreeMap<String, usize> {
    let body = text.trim_start();
    let body = match body.strip_prefix("<?xml") {
        Some(rest) => &rest[rest.find("?>").expect("the end of the XML declaration") + 2..],
        None => body,
    };
    assert!(body.trim_start().starts_with("<svg"), "{}", &text[..text.len().min(80)]);
    let mut counts = std::collections::BTreeMap::new();
    let mut open: Vec<&str> = Vec::new();
    let mut rest = body;
    while let Some(start) = rest.find('<') {
        let end = rest[start..].find('>').map(|e| start + e).expect("a closed tag");
        let tag = &rest[start + 1..end];
        let name = tag.trim_start_matches('/').split([' ', '/', '\n']).next().unwrap_or("");
        if tag.starts_with('/') {
            assert_eq!(open.pop(), Some(name), "closing {name}");
        } else {
            *counts.entry(name.to_owned()).or_insert(0) += 1;
            if !tag.ends_with('/') {
                open.push(name);
            }
        }
        rest = &rest[end + 1..];
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
    counts
}

/// The width, height, colour type and pixels of a PNG file.
fn png(path: &Path) -> (u32, u32, png::ColorType, Vec<u8>) {
    let file = std::fs::File::open(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let mut pixels = vec![0; reader.output_buffer_size().expect("a buffer size")];
    let info = reader.next_frame(&mut pixels).unwrap_or_else(|err| panic!("{err}"));
    pixels.truncate(info.buffer_size());
    (info.width, info.height, info.color_type, pixels)
}

#[test]
fn charts_are_svg_with_the_elements_of_their_data() {
    let dir = scratch("svg");
    let (stderr, status) = run(
        dir.path(),
        r#"Tensor losses[5] = [4.0, 2.5, 1.5, 1.0, 0.8];
plot("loss.svg", losses, "Training loss", "epoch", "loss");
Tensor two[2][4] = [[1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]];
plot("two.svg", two);
Tensor x[6] = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
scatter("points.svg", x, x * x, "Squares", "x", "x * x");
Tensor samples[8] = [0.1, 0.2, 0.2, 0.5, 0.6, 0.9, 0.95, 1.0];
histogram("hist.svg", samples, 4, "Samples");
"#,
    );
    assert_eq!(status, 0, "{stderr}");

    let loss = read(&dir.path().join("loss.svg"));
    let elements = svg_elements(&loss);
    assert!(loss.contains(r#"width="640" height="480""#), "{}", &loss[..200]);
    // The grid and the axes are polylines too; the series is the one in the first colour.
    assert!(elements.get("polyline").is_some_and(|&n| n > 1), "{elements:?}");
    assert_eq!(loss.matches(r##"<polyline fill="none" opacity="1" stroke="#1F77B4""##).count(), 1);
    for text in ["Training loss", "\nepoch\n", "\nloss\n"] {
        assert!(loss.contains(text), "{text} in {loss}");
    }
    assert!(loss.contains(r#"font-family="sans-serif""#));

    // Two series in two colours, each with its mark in the legend.
    let two = read(&dir.path().join("two.svg"));
    svg_elements(&two);
    assert_eq!(two.matches(r##"stroke="#1F77B4""##).count(), 2, "{two}");
    assert_eq!(two.matches(r##"stroke="#FF7F0E""##).count(), 2, "{two}");
    assert!(two.contains("row 1"));

    let points = read(&dir.path().join("points.svg"));
    assert_eq!(svg_elements(&points).get("circle"), Some(&6));
    assert!(points.contains("Squares"));

    let hist = read(&dir.path().join("hist.svg"));
    let hist_elements = svg_elements(&hist);
    assert!(hist.contains("Samples"));
    // The background and the plotting area are rectangles too; the bars are the filled ones in
    // the series colour.
    assert_eq!(hist.matches(r##"fill="#1F77B4""##).count(), 4, "{hist_elements:?}");
}

#[test]
fn charts_and_images_are_png_of_the_expected_size() {
    let dir = scratch("png");
    let (stderr, status) = run(
        dir.path(),
        r#"Tensor y[3] = [1.0, 3.0, 2.0];
plot("line.png", y, "A line");
Tensor one[2][3] = [[0.0, 0.5, 1.0], [1.0, 0.5, 0.0]];
save_image("one.png", one);
Tensor digits[5][8][8] = zeros([5, 8, 8]);
digits[0][0][0] = 1.0;
save_image("grid.png", digits);
"#,
    );
    assert_eq!(status, 0, "{stderr}");

    let (width, height, colour, pixels) = png(&dir.path().join("line.png"));
    assert_eq!((width, height, colour), (640, 480, png::ColorType::Rgb));
    // A white background with something drawn on it.
    assert_eq!(&pixels[..3], &[255, 255, 255]);
    assert!(pixels.chunks(3).any(|p| p != [255, 255, 255]));

    // A 2 by 3 image: each element a 22-pixel square (the least scale that makes the longer side
    // at least 64 pixels), least black and greatest white.
    let (width, height, colour, pixels) = png(&dir.path().join("one.png"));
    assert_eq!((width, height, colour), (66, 44, png::ColorType::Grayscale));
    assert_eq!((pixels[0], pixels[22], pixels[44]), (0, 128, 255));
    assert_eq!((pixels[22 * 66], pixels[22 * 66 + 44]), (255, 0));

    // Five 8 by 8 images in a 3 by 2 grid of 64-pixel squares with one grey pixel between them.
    let (width, height, colour, pixels) = png(&dir.path().join("grid.png"));
    assert_eq!((width, height, colour), (3 * 64 + 2, 2 * 64 + 1, png::ColorType::Grayscale));
    assert_eq!((pixels[0], pixels[7], pixels[8], pixels[64]), (255, 255, 0, 128));
}

#[test]
fn bad_pictures_are_errors_with_a_location() {
    let dir = scratch("errors");
    let (stderr, status) =
        run(dir.path(), "Tensor y[3] = [1.0, 2.0, 3.0];\nplot(\"loss.pdf\", y);\n");
    assert_eq!(status, 1);
    assert!(stderr.contains("error[R0400]: cannot tell the format of"), "{stderr}");
    assert!(stderr.contains("the file name must end in `.svg` or `.png`"), "{stderr}");
    assert!(stderr.contains("main.nb:2:1"), "{stderr}");

    let (stderr, status) =
        run(dir.path(), "Tensor y[3] = [0.0, 0.0, 0.0];\nsave_image(\"y.png\", y / 0.0);\n");
    assert_eq!(status, 2, "{stderr}");
    assert!(stderr.contains("a Tensor[h][w] or a Tensor[n][h][w]"), "{stderr}");

    let (stderr, status) = run(
        dir.path(),
        "Tensor y[2][2] = [[0.0, 1.0], [2.0, 3.0]];\nsave_image(\"y.png\", y / 0.0);\n",
    );
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains("error[R0801]: `save_image` cannot draw the non-finite element nan"),
        "{stderr}"
    );

    let (stderr, status) = run(
        dir.path(),
        "Tensor y[3] = [1.0, 2.0, 3.0];\nint bins = 1000;\nbins += 1;\nhistogram(\"h.svg\", y, bins);\n",
    );
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains("error[R0801]: `histogram` needs 1 to 1000 bins, found 1001"),
        "{stderr}"
    );
    assert!(stderr.contains("main.nb:4:1"), "{stderr}");

    let (stderr, status) = run(
        dir.path(),
        "save(ones([2]), \"a.npy\");\nTensor a = load(\"a.npy\");\nscatter(\"s.svg\", a, ones([3]));\n",
    );
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains(
            "error[R0103]: `scatter` needs two tensors with as many elements, found 2 and 3"
        ),
        "{stderr}"
    );

    let (stderr, status) = run(
        dir.path(),
        "save(ones([2, 2, 2, 2]), \"a.npy\");\nTensor a = load(\"a.npy\");\nplot(\"p.svg\", a);\n",
    );
    assert_eq!(status, 1, "{stderr}");
    assert!(
        stderr.contains("error[R0104]: `plot` needs a Tensor[n] or a Tensor[k][n]"),
        "{stderr}"
    );

    let (stderr, status) =
        run(dir.path(), "Tensor y[3] = [1.0, 2.0, 3.0];\nplot(\"p.svg\", y / 0.0 - y / 0.0);\n");
    assert_eq!(status, 1, "{stderr}");
    assert!(stderr.contains("error[R0801]: `plot` has no finite number to draw"), "{stderr}");
}
