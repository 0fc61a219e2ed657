//! Files: NumPy `.npy` (read from float64, float32, integer and bool arrays in C or Fortran
//! order; written as C-order float64), NumPy `.npz` archives of named arrays (a zip of `.npy`
//! files, as `numpy.savez` writes them) and numeric CSV.
//!
//! A `.npy` header is read with ndarray-npy, but the data is decoded here: that way the declared
//! shape is checked against the allocation limit and the file's actual size before anything is
//! allocated, and every element type converts to `f64` through one path. The zip container of an
//! `.npz` is read and written by the `zip` crate; each member goes through the same `.npy` path.

use std::fs;
use std::io::{Cursor, Read, Write};
use std::path::Path;

use ndarray::{ArrayD, IxDyn, ShapeBuilder};
use ndarray_npy::npy::header::Header;

use super::Tensor;
use super::allocation::check_allocation;
use super::error::TensorError;

/// Reads a `.npy` file as a tensor of `f64`.
pub fn load_npy(path: &Path) -> Result<Tensor, TensorError> {
    let bytes = fs::read(path).map_err(|error| io_error(path, "read", &error))?;
    decode_npy(&bytes, |reason| TensorError::Npy { path: path.to_path_buf(), reason })
}

/// Decodes the bytes of a `.npy` file; `npy_error` makes the error for what is wrong with them.
fn decode_npy(
    bytes: &[u8],
    npy_error: impl Fn(String) -> TensorError,
) -> Result<Tensor, TensorError> {
    let mut reader = Cursor::new(bytes);
    let header = Header::from_reader(&mut reader)
        .map_err(|error| npy_error(format!("not a valid .npy file ({error})")))?;
    let data =
        bytes.get(usize::try_from(reader.position()).unwrap_or(usize::MAX)..).unwrap_or_default();
    let dtype = header
        .type_descriptor
        .as_string()
        .and_then(|descriptor| Dtype::parse(descriptor))
        .ok_or_else(|| {
            npy_error(format!(
                "unsupported dtype {} (supported: float64, float32, signed and unsigned integers, bool)",
                header.type_descriptor
            ))
        })?;
    let len = check_allocation(&header.shape)?;
    if len.checked_mul(dtype.size) != Some(data.len()) {
        return Err(npy_error(format!(
            "the header declares {} elements of {} bytes but the file holds {} bytes of data",
            len,
            dtype.size,
            data.len()
        )));
    }
    let values: Vec<f64> = data.chunks_exact(dtype.size).map(|chunk| dtype.decode(chunk)).collect();
    let shape = IxDyn(&header.shape).set_f(header.layout.is_fortran());
    let array = ArrayD::from_shape_vec(shape, values)
        .map_err(|error| npy_error(format!("the data does not fit the shape ({error})")))?;
    // Row-major storage keeps later reshapes and products free of layout copies.
    let array =
        if array.is_standard_layout() { array } else { array.as_standard_layout().into_owned() };
    Ok(Tensor::from(array))
}

/// Writes `tensor` as a C-order float64 `.npy` file that NumPy reads with `numpy.load`.
pub fn save_npy(path: &Path, tensor: &Tensor) -> Result<(), TensorError> {
    let standard = tensor.array().as_standard_layout();
    ndarray_npy::write_npy(path, &standard).map_err(|error| io_error(path, "write", &error))
}

/// Writes named tensors as an `.npz` archive, as `numpy.savez(path, **arrays)` does: a zip of
/// one C-order float64 `.npy` member per name (`name.npy`), stored uncompressed, in order.
/// `numpy.load(path)[name]` reads each back. The members' times are the zip format's earliest
/// (1980-01-01), so an archive's bytes depend only on what it holds.
pub fn save_npz(path: &Path, arrays: &[(&str, &Tensor)]) -> Result<(), TensorError> {
    let write_error = |error: &dyn std::fmt::Display| io_error(path, "write", error);
    let file = fs::File::create(path).map_err(|error| write_error(&error))?;
    let mut archive = zip::ZipWriter::new(std::io::BufWriter::new(file));
    let mut member = Vec::new();
    for &(name, tensor) in arrays {
        member.clear();
        let standard = tensor.array().as_standard_layout();
        ndarray_npy::WriteNpyExt::write_npy(&standard, &mut member)
            .map_err(|error| write_error(&error))?;
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .last_modified_time(zip::DateTime::default())
            .large_file(member.len() as u64 >= u64::from(u32::MAX));
        archive.start_file(format!("{name}.npy"), options).map_err(|error| write_error(&error))?;
        archive.write_all(&member).map_err(|error| write_error(&error))?;
    }
    let mut out = archive.finish().map_err(|error| write_error(&error))?;
    out.flush().map_err(|error| write_error(&error))
}

/// Reads an `.npz` archive (NumPy's `savez` or `savez_compressed`) as its arrays, each named
/// as `numpy.load` names it (the member's name without `.npy`), in the archive's order. Each
/// member is read as [`load_npy`] reads a file; a member larger than the allocation limit
/// allows is refused before it is read.
pub fn load_npz(path: &Path) -> Result<Vec<(String, Tensor)>, TensorError> {
    let file = fs::File::open(path).map_err(|error| io_error(path, "read", &error))?;
    let npz_error = |reason: String| TensorError::Npy { path: path.to_path_buf(), reason };
    let mut archive = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|error| npz_error(format!("not a valid .npz (zip) archive ({error})")))?;
    // Room for the largest tensor the limit allows, and a header.
    let limit = (super::allocation::allocation_limit() as u64).saturating_add(1 << 16);
    let mut arrays = Vec::with_capacity(archive.len());
    for index in 0..archive.len() {
        let mut member = archive
            .by_index(index)
            .map_err(|error| npz_error(format!("member {index} cannot be read ({error})")))?;
        let name = member
            .name()
            .map_err(|error| npz_error(format!("member {index} has no valid name ({error})")))?
            .into_owned();
        let member_error = |reason: String| TensorError::Npy {
            path: path.to_path_buf(),
            reason: format!("member `{name}`: {reason}"),
        };
        if member.size() > limit {
            return Err(member_error(format!(
                "{} bytes, more than the allocation limit allows",
                member.size()
            )));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(member.size()).unwrap_or(0));
        member
            .by_ref()
            .take(limit)
            .read_to_end(&mut bytes)
            .map_err(|error| member_error(format!("cannot be read ({error})")))?;
        let tensor = decode_npy(&bytes, member_error)?;
        let name = name.strip_suffix(".npy").unwrap_or(&name).to_owned();
        arrays.push((name, tensor));
    }
    Ok(arrays)
}

/// Reads a numeric CSV file as a rank-2 tensor `[rows][columns]` (see [`parse_csv`]).
pub fn load_csv(path: &Path) -> Result<Tensor, TensorError> {
    let text = fs::read_to_string(path).map_err(|error| io_error(path, "read", &error))?;
    parse_csv(&text, path)
}

/// Parses CSV text as a rank-2 tensor `[rows][columns]`; a single column still gives rank 2.
///
/// Fields are separated by commas; whitespace and one pair of double quotes around a field are
/// ignored; blank lines are skipped. If the first field of the first line is not a number, that
/// line is a header and is skipped. Every field must parse as a float (`1`, `-2.5e3`, `inf`, `nan`)
/// and every row must have as many fields as the first; otherwise the error names the line
/// (counted from 1). `path` only names the file in errors. No rows give `[0][0]`, or
/// `[0][columns]` after a header.
pub fn parse_csv(text: &str, path: &Path) -> Result<Tensor, TensorError> {
    let csv_error =
        |line: usize, reason: String| TensorError::Csv { path: path.to_path_buf(), line, reason };
    let mut values = Vec::new();
    let mut columns: Option<usize> = None;
    let mut rows = 0;
    let mut first_line = true;
    for (line_index, line) in text.lines().enumerate() {
        let line_number = line_index + 1;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(unquote).collect();
        if std::mem::take(&mut first_line)
            && fields.first().is_some_and(|field| field.parse::<f64>().is_err())
        {
            columns = Some(fields.len());
            continue;
        }
        match columns {
            Some(expected) if expected != fields.len() && rows > 0 => {
                return Err(csv_error(
                    line_number,
                    format!("{} fields, but the rows before have {expected}", fields.len()),
                ));
            }
            Some(expected) if expected != fields.len() => {
                return Err(csv_error(
                    line_number,
                    format!("{} fields, but the header has {expected}", fields.len()),
                ));
            }
            _ => columns = Some(fields.len()),
        }
        for (field_index, field) in fields.iter().enumerate() {
            let value = field.parse::<f64>().map_err(|_| {
                csv_error(
                    line_number,
                    format!("field {} `{field}` is not a number", field_index + 1),
                )
            })?;
            values.push(value);
        }
        rows += 1;
    }
    let shape = [rows, columns.unwrap_or(0)];
    check_allocation(&shape)?;
    Tensor::from_vec(&shape, values)
}

/// A field without surrounding whitespace and without one pair of surrounding double quotes.
fn unquote(field: &str) -> &str {
    let field = field.trim();
    field.strip_prefix('"').and_then(|inner| inner.strip_suffix('"')).map_or(field, str::trim)
}

fn io_error(path: &Path, action: &'static str, error: &dyn std::fmt::Display) -> TensorError {
    TensorError::Io { path: path.to_path_buf(), action, reason: error.to_string() }
}

/// An `.npy` element type this module converts to `f64`.
#[derive(Clone, Copy, Debug)]
struct Dtype {
    kind: DtypeKind,
    size: usize,
    little_endian: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DtypeKind {
    Float,
    Signed,
    Unsigned,
    Bool,
}

impl Dtype {
    /// Parses a NumPy type descriptor such as `<f8`, `>i4` or `|b1`.
    fn parse(descriptor: &str) -> Option<Dtype> {
        let mut chars = descriptor.chars();
        let little_endian = match chars.next()? {
            '<' | '|' => true,
            '>' => false,
            '=' => cfg!(target_endian = "little"),
            _ => return None,
        };
        let kind = match chars.next()? {
            'f' => DtypeKind::Float,
            'i' => DtypeKind::Signed,
            'u' => DtypeKind::Unsigned,
            'b' => DtypeKind::Bool,
            _ => return None,
        };
        let size = chars.as_str().parse::<usize>().ok()?;
        let supported = match kind {
            DtypeKind::Float => matches!(size, 4 | 8),
            DtypeKind::Signed | DtypeKind::Unsigned => matches!(size, 1 | 2 | 4 | 8),
            DtypeKind::Bool => size == 1,
        };
        supported.then_some(Dtype { kind, size, little_endian })
    }

    /// Converts one element's bytes (exactly `size` of them) to `f64`; 64-bit integers beyond
    /// 2^53 round to the nearest float.
    fn decode(self, bytes: &[u8]) -> f64 {
        let mut buffer = [0u8; 8];
        let Some(target) = buffer.get_mut(..bytes.len()) else {
            return f64::NAN;
        };
        target.copy_from_slice(bytes);
        if !self.little_endian {
            target.reverse();
        }
        let raw = u64::from_le_bytes(buffer);
        let bits = 8 * self.size as u32;
        match self.kind {
            DtypeKind::Float if self.size == 4 => f64::from(f32::from_bits(raw as u32)),
            DtypeKind::Float => f64::from_bits(raw),
            DtypeKind::Unsigned => raw as f64,
            // Shifting left then arithmetically right sign-extends from the element's width.
            DtypeKind::Signed => ((raw << (64 - bits)) as i64 >> (64 - bits)) as f64,
            DtypeKind::Bool => mask(raw != 0),
        }
    }
}

fn mask(condition: bool) -> f64 {
    if condition { 1.0 } else { 0.0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempfile::TempDir;

    /// A fresh scratch directory for one test, `nabla-tensor-io-NAME-XXXXXX` in the system
    /// temporary directory; it is removed when the guard is dropped, a failing test's included.
    fn scratch(name: &str) -> TempDir {
        TempDir::with_prefix(format!("nabla-tensor-io-{name}-")).unwrap()
    }

    /// A `.npy` file written byte by byte, as NumPy 1.x writes version 1.0 files.
    fn npy_bytes(descriptor: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header = format!(
            "{{'descr': '{descriptor}', 'fortran_order': {}, 'shape': {shape}, }}",
            if fortran { "True" } else { "False" }
        );
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&u16::try_from(header.len()).unwrap().to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    fn load_bytes(dir: &Path, name: &str, bytes: &[u8]) -> Result<Tensor, TensorError> {
        let path = dir.join(name);
        fs::write(&path, bytes).unwrap();
        load_npy(&path)
    }

    #[test]
    fn npy_round_trips_values_and_shapes() {
        let dir = scratch("round-trip");
        let cases = [
            Tensor::from_vec(&[2, 3], vec![1.0, -2.5, 1e-300, f64::INFINITY, f64::MAX, 0.1])
                .unwrap(),
            Tensor::scalar(7.0),
            Tensor::zeros(&[0, 3]).unwrap(),
            super::super::shape::transpose(
                &Tensor::from_vec(&[2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap(),
            ),
        ];
        for (i, tensor) in cases.iter().enumerate() {
            let path = dir.path().join(format!("{i}.npy"));
            save_npy(&path, tensor).unwrap();
            assert_eq!(&load_npy(&path).unwrap(), tensor);
        }
        let nan_path = dir.path().join("nan.npy");
        save_npy(&nan_path, &Tensor::vector(vec![f64::NAN])).unwrap();
        assert!(load_npy(&nan_path).unwrap().to_vec()[0].is_nan());
    }

    #[test]
    fn saved_files_have_numpys_float64_header() {
        let dir = scratch("header");
        let path = dir.path().join("x.npy");
        save_npy(&path, &Tensor::vector(vec![1.0, 2.0])).unwrap();
        let bytes = fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(bytes.starts_with(b"\x93NUMPY"));
        assert!(
            text.contains("'descr': '<f8'") && text.contains("'fortran_order': False"),
            "{text}"
        );
        assert!(text.contains("'shape': (2,)"), "{text}");
        assert_eq!(bytes.len() % 16, 0);
    }

    #[test]
    fn npy_element_types_convert_to_f64() {
        let dir = scratch("dtypes");
        let f32_data: Vec<u8> = [1.5f32, -2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let i64_data: Vec<u8> = [-3i64, 1 << 40].iter().flat_map(|x| x.to_le_bytes()).collect();
        let i32_data: Vec<u8> = [-1i32, 7].iter().flat_map(|x| x.to_le_bytes()).collect();
        let f64_big: Vec<u8> = [0.25f64, 8.0].iter().flat_map(|x| x.to_be_bytes()).collect();
        let i16_big: Vec<u8> = [-2i16, 300].iter().flat_map(|x| x.to_be_bytes()).collect();
        let cases: [(&str, Vec<u8>, [f64; 2]); 7] = [
            ("<f4", f32_data, [1.5, -2.0]),
            ("<i8", i64_data, [-3.0, (1u64 << 40) as f64]),
            ("<i4", i32_data, [-1.0, 7.0]),
            (">f8", f64_big, [0.25, 8.0]),
            (">i2", i16_big, [-2.0, 300.0]),
            ("|u1", vec![0, 255], [0.0, 255.0]),
            ("|b1", vec![1, 0], [1.0, 0.0]),
        ];
        for (descriptor, data, expected) in cases {
            let bytes = npy_bytes(descriptor, false, "(2,)", &data);
            assert_eq!(
                load_bytes(dir.path(), "x.npy", &bytes).unwrap().to_vec(),
                expected,
                "{descriptor}"
            );
        }
    }

    #[test]
    fn fortran_order_files_are_read_in_logical_order() {
        let dir = scratch("fortran");
        // The matrix [[1, 2, 3], [4, 5, 6]] stored column by column.
        let data: Vec<u8> =
            [1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        let tensor =
            load_bytes(dir.path(), "f.npy", &npy_bytes("<f8", true, "(2, 3)", &data)).unwrap();
        assert_eq!(tensor.to_string(), "[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]");
        assert!(tensor.array().is_standard_layout());
    }

    #[test]
    fn bad_npy_files_are_clear_errors() {
        let dir = scratch("bad");
        let complex = npy_bytes("<c16", false, "(1,)", &[0; 16]);
        let error = load_bytes(dir.path(), "c.npy", &complex).unwrap_err().to_string();
        assert!(error.ends_with(
            "c.npy: unsupported dtype '<c16' (supported: float64, float32, signed and unsigned integers, bool)"
        ), "{error}");
        let short = npy_bytes("<f8", false, "(3,)", &[0; 16]);
        let error = load_bytes(dir.path(), "s.npy", &short).unwrap_err().to_string();
        assert!(
            error.ends_with(
                "the header declares 3 elements of 8 bytes but the file holds 16 bytes of data"
            ),
            "{error}"
        );
        let huge = npy_bytes("<f8", false, "(1000000000000, 1000000)", &[]);
        assert!(matches!(
            load_bytes(dir.path(), "h.npy", &huge),
            Err(TensorError::Allocation { .. })
        ));
        let error = load_bytes(dir.path(), "t.npy", b"hello").unwrap_err().to_string();
        assert!(error.contains("t.npy: not a valid .npy file"), "{error}");
        let missing = dir.path().join("missing.npy");
        let error = load_npy(&missing).unwrap_err().to_string();
        assert!(error.starts_with(&format!("cannot read {}: ", missing.display())), "{error}");
    }

    #[test]
    fn csv_is_always_rank_two() {
        let path = Path::new("data.csv");
        let table = parse_csv("x,y\n1,2\n3.5, -4e1\n\n", path).unwrap();
        assert_eq!(table.to_string(), "[[1.0, 2.0], [3.5, -40.0]]");
        let column = parse_csv("1\n2\n3\n", path).unwrap();
        assert_eq!(column.shape(), [3, 1]);
        let quoted = parse_csv("\"a\",\"b\"\r\n\"1\",2\r\n", path).unwrap();
        assert_eq!(quoted.to_string(), "[[1.0, 2.0]]");
        assert_eq!(parse_csv("", path).unwrap().shape(), [0, 0]);
        assert_eq!(parse_csv("a,b,c\n", path).unwrap().shape(), [0, 3]);
        let special = parse_csv("inf,nan\n", path).unwrap().to_vec();
        assert!(special[0].is_infinite() && special[1].is_nan());
    }

    #[test]
    fn bad_csv_names_the_line() {
        let path = Path::new("data.csv");
        let error = |text| parse_csv(text, path).unwrap_err().to_string();
        assert_eq!(
            error("1,2\n3,x\n"),
            "cannot load data.csv (line 2): field 2 `x` is not a number"
        );
        assert_eq!(
            error("1,2\n\n3\n"),
            "cannot load data.csv (line 3): 1 fields, but the rows before have 2"
        );
        assert_eq!(
            error("a,b\n1,2,3\n"),
            "cannot load data.csv (line 2): 3 fields, but the header has 2"
        );
        assert_eq!(error("1,,2\n"), "cannot load data.csv (line 1): field 2 `` is not a number");
    }

    #[test]
    fn csv_files_are_read_from_disk() {
        let dir = scratch("csv");
        let path = dir.path().join("x.csv");
        fs::write(&path, "a,b\n1,2\n").unwrap();
        assert_eq!(load_csv(&path).unwrap().to_string(), "[[1.0, 2.0]]");
        let error = load_csv(&dir.path().join("none.csv")).unwrap_err().to_string();
        assert!(error.starts_with("cannot read "), "{error}");
    }

    /// The members of a zip archive, by name, as stored.
    fn members(path: &Path) -> Vec<(String, Vec<u8>)> {
        let mut archive = zip::ZipArchive::new(fs::File::open(path).unwrap()).unwrap();
        (0..archive.len())
            .map(|i| {
                let mut member = archive.by_index(i).unwrap();
                let mut bytes = Vec::new();
                member.read_to_end(&mut bytes).unwrap();
                (member.name().unwrap().into_owned(), bytes)
            })
            .collect()
    }

    #[test]
    fn npz_round_trips_named_tensors_in_order() {
        let dir = scratch("npz");
        let path = dir.path().join("net.npz");
        let w = Tensor::from_vec(&[2, 3], vec![1.0, -2.5, 1e-300, f64::INFINITY, f64::MAX, 0.1])
            .unwrap();
        let transposed = super::super::shape::transpose(&w);
        let b = Tensor::vector(vec![0.5, -0.25]);
        let scale = Tensor::scalar(7.0);
        let arrays = [("l1.w", &w), ("l1.b", &b), ("l2.w", &transposed), ("scale", &scale)];
        save_npz(&path, &arrays).unwrap();
        let loaded = load_npz(&path).unwrap();
        let names: Vec<&str> = loaded.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["l1.w", "l1.b", "l2.w", "scale"]);
        for ((_, expected), (_, found)) in arrays.iter().zip(&loaded) {
            assert_eq!(found, *expected);
        }
        // Every member is stored, named `NAME.npy`, and is byte for byte the file `save_npy`
        // writes, which is what `numpy.save` writes (`saved_npy_files_are_numpys`).
        let stored = members(&path);
        for ((name, bytes), (expected_name, tensor)) in stored.iter().zip(&arrays) {
            assert_eq!(name, &format!("{expected_name}.npy"));
            let single = dir.path().join("single.npy");
            save_npy(&single, tensor).unwrap();
            assert_eq!(bytes, &fs::read(&single).unwrap(), "{name}");
        }
        // The same tensors give the same bytes: no time or other state is written.
        let again = dir.path().join("again.npz");
        save_npz(&again, &arrays).unwrap();
        assert_eq!(fs::read(&path).unwrap(), fs::read(&again).unwrap());
    }

    #[test]
    fn saved_npy_files_are_numpys() {
        // The bytes of numpy.save(f, numpy.array([[1.5, -2.0], [0.25, 3.0]])), NumPy 2.4.6: the
        // header padded with spaces to 128 bytes, then the float64 elements, little-endian.
        let mut numpy =
            b"\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }"
                .to_vec();
        numpy.resize(127, b' ');
        numpy.push(b'\n');
        numpy.extend_from_slice(&[
            0, 0, 0, 0, 0, 0, 248, 63, 0, 0, 0, 0, 0, 0, 0, 192, 0, 0, 0, 0, 0, 0, 208, 63, 0, 0,
            0, 0, 0, 0, 8, 64,
        ]);
        let dir = scratch("numpy-bytes");
        let path = dir.path().join("x.npy");
        save_npy(&path, &Tensor::from_vec(&[2, 2], vec![1.5, -2.0, 0.25, 3.0]).unwrap()).unwrap();
        let ours = fs::read(&path).unwrap();
        // Byte for byte but for the dictionary's last comma, which NumPy writes and ndarray-npy
        // does not (`(2, 2), }` against `(2, 2)}` and one more space of padding): the same
        // header, of the same length, and the same data.
        let normalized = String::from_utf8_lossy(&numpy[..128]).replace("), }", ")}  ");
        assert_eq!(ours.len(), numpy.len());
        assert_eq!(String::from_utf8_lossy(&ours[..128]), normalized);
        assert_eq!(ours[128..], numpy[128..]);
    }

    #[test]
    fn npz_archives_of_numpy_load() {
        // numpy.savez and numpy.savez_compressed (NumPy 2.4.6) of w = [[1.5, -2],
        // [0.25, 3], [4, -0.5]] and b = [0.125, -8] as float64, and of n = [1, 2] as int64.
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("test_data");
        for file in ["numpy_savez.npz", "numpy_savez_compressed.npz"] {
            let loaded = load_npz(&data.join(file)).unwrap();
            let shown: Vec<String> =
                loaded.iter().map(|(name, tensor)| format!("{name} {tensor}")).collect();
            assert_eq!(
                shown,
                ["w [[1.5, -2.0], [0.25, 3.0], [4.0, -0.5]]", "b [0.125, -8.0]", "n [1.0, 2.0]"],
                "{file}"
            );
        }
    }

    #[test]
    fn bad_npz_archives_are_refused_with_the_member() {
        let dir = scratch("bad-npz");
        let path = dir.path().join("x.npz");
        fs::write(&path, b"not a zip").unwrap();
        let error = load_npz(&path).unwrap_err().to_string();
        assert!(error.contains("not a valid .npz (zip) archive"), "{error}");
        let mut archive = zip::ZipWriter::new(fs::File::create(&path).unwrap());
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        archive.start_file("w.npy", options).unwrap();
        archive.write_all(b"hello").unwrap();
        archive.finish().unwrap();
        let error = load_npz(&path).unwrap_err().to_string();
        assert!(error.contains("member `w.npy`: not a valid .npy file"), "{error}");
    }
}
