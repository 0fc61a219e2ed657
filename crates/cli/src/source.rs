//! Finding and reading source files: the `.nb` files under a directory, the size limit, UTF-8
//! validation, and messages that say where it failed.

use std::{
    io::Read,
    path::{Path, PathBuf},
};

/// The largest source file any command accepts. Offsets in syntax trees are 32-bit, and no
/// hand-written program comes near this.
pub const MAX_SOURCE_BYTES: u64 = 256 * 1024 * 1024;

/// The environment variable that lowers [`MAX_SOURCE_BYTES`], for tests and for hosts that want a
/// tighter bound. It cannot raise the limit.
pub const MAX_SOURCE_BYTES_VAR: &str = "NABLA_MAX_SOURCE_BYTES";

/// The size limit in force: [`MAX_SOURCE_BYTES`], or the smaller number in
/// [`MAX_SOURCE_BYTES_VAR`]. A value that is not a number is ignored.
pub fn max_source_bytes() -> u64 {
    std::env::var(MAX_SOURCE_BYTES_VAR)
        .ok()
        .and_then(|value| value.trim().parse::<u64>().ok())
        .map_or(MAX_SOURCE_BYTES, |limit| limit.min(MAX_SOURCE_BYTES))
}

/// Reads a source file as UTF-8 text, or says in one line why it cannot.
pub fn read(path: &Path) -> Result<String, String> {
    let metadata =
        std::fs::metadata(path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    if metadata.is_dir() {
        return Err(format!("{} is a directory, not a source file", path.display()));
    }
    let limit = max_source_bytes();
    let too_large = |size: u64| {
        format!("{} is {size} bytes; source files are limited to {limit} bytes", path.display())
    };
    if metadata.len() > limit {
        return Err(too_large(metadata.len()));
    }
    // The size is read again while reading: a file that grows meanwhile (or a device that
    // reports no size) is still refused past the limit.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(limit + 1).read_to_end(&mut bytes))
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|err| {
        let valid = &err.as_bytes()[..err.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let col = String::from_utf8_lossy(&valid[line_start..]).chars().count() + 1;
        format!(
            "{}:{line}:{col}: the file is not valid UTF-8 (byte 0x{:02x}); Nabla sources are UTF-8",
            path.display(),
            err.as_bytes()[valid.len()]
        )
    })
}

/// Adds `path` if it is a file, or every `.nb` file under it if it is a directory, sorted;
/// hidden directories and `target` are skipped.
pub fn collect(path: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let metadata =
        std::fs::metadata(path).map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    if !metadata.is_dir() {
        files.push(path.to_path_buf());
        return Ok(());
    }
    let mut stack = vec![path.to_path_buf()];
    let mut found = Vec::new();
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|err| format!("cannot read directory {}: {err}", dir.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let hidden = entry.file_name().to_string_lossy().starts_with('.');
                if !hidden && entry.file_name() != "target" {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|ext| ext == "nb") {
                found.push(path);
            }
        }
    }
    found.sort();
    files.extend(found);
    Ok(())
}
