//! The pictures a program writes: `plot`, `scatter` and `histogram` draw charts with `plotters`,
//! and `save_image` writes a 2-D tensor, or a grid of them, as a greyscale PNG.
//!
//! A chart's file name decides its format: `.svg` writes SVG, `.png` a PNG rendered in the
//! process; anything else is an error. Text is set in DejaVu Sans, embedded in the binary (an
//! ASCII and Latin-1 subset of the font, under its permissive Bitstream Vera licence; see
//! `fonts/README.md`), so pictures look the same on every machine and nothing reads the system's
//! fonts. Non-finite numbers are left out of a chart (a chart with none finite is an error);
//! an image with a non-finite pixel is an error.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use tensor::Tensor;

use hir::Code;

use crate::error::RuntimeError;

/// The size of a chart, in pixels.
pub const CHART_SIZE: (u32, u32) = (640, 480);

/// The side, in pixels, that each image of `save_image` is scaled up to at least (by whole
/// factors, so that every element stays a sharp square).
pub const IMAGE_MIN_SIDE: usize = 64;

/// The most bins a histogram has: more than its chart is pixels wide would not show.
pub const MAX_BINS: usize = 1000;

/// The embedded font (see the module documentation).
static FONT: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");

/// The font family charts ask for.
const FAMILY: &str = "sans-serif";

/// The colours of a chart's series, in order (the first six of the Tableau 10 palette).
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// What a chart draws.
#[derive(Clone, Copy, Debug)]
pub enum Chart<'a> {
    /// Each row of a matrix (or the one vector) as a line over its indices.
    Lines(&'a Tensor),
    /// A point per pair of elements of two tensors of one length.
    Scatter(&'a Tensor, &'a Tensor),
    /// The counts of the elements in `bins` equal intervals from the least to the greatest.
    Histogram(&'a Tensor, usize),
}

/// A chart's title and axis labels.
#[derive(Clone, Debug, Default)]
pub struct Labels {
    pub title: Option<String>,
    pub x: Option<String>,
    pub y: Option<String>,
}

/// The format of a picture file, by its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Svg,
    Png,
}

fn format_of(path: &Path, allowed: &[Format]) -> Result<Format, RuntimeError> {
    let format = match path.extension().and_then(|ext| ext.to_str()) {
        Some(ext) if ext.eq_ignore_ascii_case("svg") => Some(Format::Svg),
        Some(ext) if ext.eq_ignore_ascii_case("png") => Some(Format::Png),
        _ => None,
    };
    match format {
        Some(format) if allowed.contains(&format) => Ok(format),
        _ => {
            let names = if allowed.len() == 2 { "`.svg` or `.png`" } else { "`.png`" };
            Err(RuntimeError::new(
                Code::FileFailure,
                format!(
                    "cannot tell the format of `{}`: the file name must end in {names}",
                    path.display()
                ),
            ))
        }
    }
}

fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The font is part of the binary and known to parse (the tests draw with it).
        let _ = plotters::style::register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// Draws `chart` with `labels` into the file at `path`, as SVG or PNG by its extension.
pub fn write_chart(path: &Path, chart: Chart<'_>, labels: &Labels) -> Result<(), RuntimeError> {
    let format = format_of(path, &[Format::Svg, Format::Png])?;
    let data = ChartData::new(chart)?;
    register_font();
    let (width, height) = CHART_SIZE;
    match format {
        Format::Svg => {
            let mut text = String::new();
            {
                let root = SVGBackend::with_string(&mut text, CHART_SIZE).into_drawing_area();
                draw(&root, &data, labels).map_err(drawing_error)?;
            }
            std::fs::write(path, text).map_err(|err| write_error(path, &err))
        }
        Format::Png => {
            let mut pixels = vec![0u8; width as usize * height as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut pixels, CHART_SIZE).into_drawing_area();
                draw(&root, &data, labels).map_err(drawing_error)?;
            }
            write_png(path, width, height, png::ColorType::Rgb, &pixels)
        }
    }
}

/// Writes a `Tensor[h][w]` as a greyscale PNG, or a `Tensor[n][h][w]` as a grid of `n` images
/// (as square as it can be, rows filled first, one grey pixel between images). The least
/// element is black and the greatest white, over the whole tensor; each element is an `s`-by-`s`
/// square, `s` the least whole number that makes an image's longer side at least
/// [`IMAGE_MIN_SIDE`] pixels.
pub fn save_image(path: &Path, x: &Tensor) -> Result<(), RuntimeError> {
    format_of(path, &[Format::Png])?;
    let (count, h, w) = match *x.shape() {
        [h, w] => (1, h, w),
        [n, h, w] => (n, h, w),
        _ => {
            return Err(RuntimeError::new(
                Code::RankFailure,
                format!(
                    "`save_image` needs a Tensor[h][w] or a Tensor[n][h][w], found a tensor of rank {}",
                    x.rank()
                ),
            ));
        }
    };
    if count == 0 || h == 0 || w == 0 {
        return Err(RuntimeError::new(
            Code::OptionFailure,
            format!(
                "`save_image` needs at least one element, found a tensor of shape {:?}",
                x.shape()
            ),
        ));
    }
    let values = x.to_vec();
    if let Some(index) = values.iter().position(|v| !v.is_finite()) {
        return Err(RuntimeError::new(
            Code::OptionFailure,
            format!(
                "`save_image` cannot draw the non-finite element {} (at flat index {index})",
                tensor::format_float(values[index])
            ),
        ));
    }
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)));
    let grey = |v: f64| if hi > lo { ((v - lo) / (hi - lo) * 255.0).round() as u8 } else { 0 };
    let scale = IMAGE_MIN_SIDE.div_ceil(h.max(w)).max(1);
    let columns = (count as f64).sqrt().ceil() as usize;
    let rows = count.div_ceil(columns);
    let gap = usize::from(count > 1);
    let width = columns * w * scale + (columns - 1) * gap;
    let height = rows * h * scale + (rows - 1) * gap;
    let (Ok(width_px), Ok(height_px)) = (u32::try_from(width), u32::try_from(height)) else {
        return Err(too_large(width, height));
    };
    if width.saturating_mul(height) > tensor::allocation_limit() {
        return Err(too_large(width, height));
    }
    let mut pixels = vec![128u8; width * height];
    for image in 0..count {
        let (top, left) =
            ((image / columns) * (h * scale + gap), (image % columns) * (w * scale + gap));
        for i in 0..h * scale {
            for j in 0..w * scale {
                let v = values[image * h * w + (i / scale) * w + j / scale];
                pixels[(top + i) * width + left + j] = grey(v);
            }
        }
    }
    write_png(path, width_px, height_px, png::ColorType::Grayscale, &pixels)
}

/// The numbers of a chart, checked, with the ranges of its axes.
struct ChartData {
    kind: ChartKind,
    x_range: (f64, f64),
    y_range: (f64, f64),
}

enum ChartKind {
    Lines(Vec<Vec<(f64, f64)>>),
    Points(Vec<(f64, f64)>),
    /// The bins' lower edges, width and counts.
    Bars {
        lo: f64,
        width: f64,
        counts: Vec<usize>,
    },
}

impl ChartData {
    fn new(chart: Chart<'_>) -> Result<ChartData, RuntimeError> {
        let data = match chart {
            Chart::Lines(y) => {
                let (rows, n) = match *y.shape() {
                    [n] => (1, n),
                    [rows, n] => (rows, n),
                    _ => {
                        return Err(RuntimeError::new(
                            Code::RankFailure,
                            format!(
                                "`plot` needs a Tensor[n] or a Tensor[k][n] (k series), found a tensor of rank {}",
                                y.rank()
                            ),
                        ));
                    }
                };
                let values = y.to_vec();
                let series: Vec<Vec<(f64, f64)>> = (0..rows)
                    .map(|row| {
                        (0..n)
                            .map(|i| (i as f64, values[row * n + i]))
                            .filter(|(_, v)| v.is_finite())
                            .collect()
                    })
                    .collect();
                let points = series.iter().flatten().copied();
                let (x_range, y_range) = ranges(points, "plot")?;
                ChartData { kind: ChartKind::Lines(series), x_range, y_range }
            }
            Chart::Scatter(x, y) => {
                if x.len() != y.len() {
                    return Err(RuntimeError::new(
                        Code::ElementCountFailure,
                        format!(
                            "`scatter` needs two tensors with as many elements, found {} and {}",
                            x.len(),
                            y.len()
                        ),
                    ));
                }
                let points: Vec<(f64, f64)> = x
                    .to_vec()
                    .into_iter()
                    .zip(y.to_vec())
                    .filter(|(a, b)| a.is_finite() && b.is_finite())
                    .collect();
                let (x_range, y_range) = ranges(points.iter().copied(), "scatter")?;
                ChartData { kind: ChartKind::Points(points), x_range, y_range }
            }
            Chart::Histogram(t, bins) => {
                if !(1..=MAX_BINS).contains(&bins) {
                    return Err(bins_error(bins));
                }
                let values: Vec<f64> = t.to_vec().into_iter().filter(|v| v.is_finite()).collect();
                let ((lo, hi), _) = ranges(values.iter().map(|&v| (v, 0.0)), "histogram")?;
                let width = (hi - lo) / bins as f64;
                let mut counts = vec![0usize; bins];
                for v in values {
                    let bin = (((v - lo) / width) as usize).min(bins - 1);
                    counts[bin] += 1;
                }
                let top = counts.iter().copied().max().unwrap_or(0) as f64;
                let kind = ChartKind::Bars { lo, width, counts };
                ChartData { kind, x_range: (lo, hi), y_range: (0.0, top.max(1.0) * 1.05) }
            }
        };
        Ok(data)
    }
}

/// The least and the greatest value along an axis.
type Range = (f64, f64);

/// The least and greatest x and y of `points`, widened when they are equal; an error when there
/// is no point.
fn ranges(
    points: impl Iterator<Item = (f64, f64)>,
    name: &str,
) -> Result<(Range, Range), RuntimeError> {
    let mut range = None;
    for (x, y) in points {
        let ((x0, x1), (y0, y1)) = range.unwrap_or(((x, x), (y, y)));
        range = Some(((x0.min(x), x1.max(x)), (y0.min(y), y1.max(y))));
    }
    let Some((x, y)) = range else {
        return Err(RuntimeError::new(
            Code::OptionFailure,
            format!("`{name}` has no finite number to draw"),
        ));
    };
    let widen = |(lo, hi): (f64, f64)| {
        if hi > lo {
            (lo, hi)
        } else {
            let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
            (lo - pad, hi + pad)
        }
    };
    Ok((widen(x), widen(y)))
}

/// Draws a chart on a drawing area of any backend.
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &ChartData,
    labels: &Labels,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let mut builder = ChartBuilder::on(root);
    builder.margin(16).x_label_area_size(44).y_label_area_size(64);
    if let Some(title) = &labels.title {
        builder.caption(title, (FAMILY, 22));
    }
    let (x0, x1) = data.x_range;
    let (y0, y1) = data.y_range;
    let mut chart = builder.build_cartesian_2d(x0..x1, y0..y1)?;
    let mut mesh = chart.configure_mesh();
    mesh.label_style((FAMILY, 13)).axis_desc_style((FAMILY, 15));
    if let Some(x) = &labels.x {
        mesh.x_desc(x);
    }
    if let Some(y) = &labels.y {
        mesh.y_desc(y);
    }
    mesh.draw()?;
    match &data.kind {
        ChartKind::Lines(series) => {
            for (i, points) in series.iter().enumerate() {
                let colour = PALETTE[i % PALETTE.len()];
                let drawn = chart
                    .draw_series(LineSeries::new(points.iter().copied(), colour.stroke_width(2)))?;
                if series.len() > 1 {
                    drawn.label(format!("row {i}")).legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(2))
                    });
                }
            }
            if series.len() > 1 {
                chart
                    .configure_series_labels()
                    .label_font((FAMILY, 13))
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .draw()?;
            }
        }
        ChartKind::Points(points) => {
            let colour = PALETTE[0];
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
        }
        ChartKind::Bars { lo, width, counts } => {
            let colour = PALETTE[0];
            chart.draw_series(counts.iter().enumerate().map(|(i, &count)| {
                let left = lo + width * i as f64;
                Rectangle::new([(left, 0.0), (left + width, count as f64)], colour.filled())
            }))?;
        }
    }
    root.present()
}

/// The error of a histogram with no bin or more than [`MAX_BINS`].
pub(crate) fn bins_error(bins: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::new(
        Code::OptionFailure,
        format!("`histogram` needs 1 to {MAX_BINS} bins, found {bins}"),
    )
}

fn drawing_error<E: std::error::Error + Send + Sync>(
    error: DrawingAreaErrorKind<E>,
) -> RuntimeError {
    RuntimeError::new(Code::FileFailure, format!("cannot draw the chart: {error}"))
}

fn too_large(width: usize, height: usize) -> RuntimeError {
    RuntimeError::new(
        Code::LimitReached,
        format!(
            "`save_image` would draw {width} by {height} pixels, over the allocation limit of {} bytes",
            tensor::allocation_limit()
        ),
    )
}

fn write_error(path: &Path, error: &dyn std::fmt::Display) -> RuntimeError {
    RuntimeError::new(Code::FileFailure, format!("cannot write `{}`: {error}", path.display()))
}

fn write_png(
    path: &Path,
    width: u32,
    height: u32,
    colour: png::ColorType,
    pixels: &[u8],
) -> Result<(), RuntimeError> {
    let file = std::fs::File::create(path).map_err(|err| write_error(path, &err))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), width, height);
    encoder.set_color(colour);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|err| write_error(path, &err))?;
    writer.write_image_data(pixels).map_err(|err| write_error(path, &err))?;
    writer.finish().map_err(|err| write_error(path, &err))
}
