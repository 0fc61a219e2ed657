//! Test fixtures: one or more files in one string, `$0` marking the cursor (or two `$0` marking a
//! range). Lines `//- name.nb` start each file; without them the text is one file, `main.nb`.
//! Files live under `/fixture`, so `import "lib.nb";` in `main.nb` finds `lib.nb`.

use std::{path::PathBuf, sync::Arc};

use syntax::{TextRange, TextSize};

use crate::{Analysis, AnalysisHost, FileId, FilePosition};

pub(crate) const CURSOR: &str = "$0";

/// A loaded fixture: the analysis, the file with the cursor and where the cursor is.
pub(crate) struct Fixture {
    pub(crate) analysis: Analysis,
    pub(crate) file: FileId,
    /// The cursor, or the start of the marked range.
    pub(crate) offset: TextSize,
    /// The marked range, when there were two markers.
    pub(crate) range: Option<TextRange>,
}

impl Fixture {
    pub(crate) fn position(&self) -> FilePosition {
        FilePosition { file: self.file, offset: self.offset }
    }
}

fn split(text: &str) -> Vec<(String, String)> {
    if !text.trim_start().starts_with("//- ") {
        return vec![("main.nb".to_owned(), text.to_owned())];
    }
    let mut files: Vec<(String, String)> = Vec::new();
    for line in text.trim_start().split_inclusive('\n') {
        match line.strip_prefix("//- ") {
            Some(name) => files.push((name.trim().to_owned(), String::new())),
            None => {
                if let Some((_, body)) = files.last_mut() {
                    body.push_str(line);
                }
            }
        }
    }
    files
}

pub(crate) fn load(text: &str) -> Fixture {
    let mut host = AnalysisHost::new();
    let mut cursor: Option<(FileId, TextSize, Option<TextRange>)> = None;
    let mut first = None;
    for (name, body) in split(text) {
        let marks: Vec<usize> = body.match_indices(CURSOR).map(|(i, _)| i).collect();
        let clean = body.replace(CURSOR, "");
        let path = PathBuf::from("/fixture").join(&name);
        let file = host.set_file_text(&path, Arc::from(clean.as_str()));
        first.get_or_insert(file);
        match marks.as_slice() {
            [] => {}
            [at] => cursor = Some((file, TextSize::from(*at as u32), None)),
            [start, end, ..] => {
                let start = TextSize::from(*start as u32);
                let end = TextSize::from((*end - CURSOR.len()) as u32);
                cursor = Some((file, start, Some(TextRange::new(start, end))));
            }
        }
    }
    let default = first
        .unwrap_or_else(|| host.set_file_text(&PathBuf::from("/fixture/main.nb"), Arc::from("")));
    let (file, offset, range) = cursor.unwrap_or((default, TextSize::from(0), None));
    Fixture { analysis: host.analysis(), file, offset, range }
}

/// The text of `file` with each range marked `«like this»`, labelled after the line it ends on.
pub(crate) fn annotate(text: &str, ranges: &[(TextRange, String)]) -> String {
    let mut out = String::new();
    let mut line_start = 0usize;
    for line in text.split_inclusive('\n') {
        let line_end = line_start + line.len();
        out.push_str(line.trim_end_matches('\n'));
        out.push('\n');
        for (range, label) in ranges {
            let start = usize::from(range.start());
            let end = usize::from(range.end());
            if start >= line_start
                && (start < line_end || (start == line_end && line_end == text.len()))
            {
                let column = text[line_start..start].chars().count();
                let width = text[start..end.min(line_end).max(start)]
                    .trim_end_matches('\n')
                    .chars()
                    .count()
                    .max(1);
                let marker = format!("{}{} {}", " ".repeat(column), "^".repeat(width), label);
                out.push_str(marker.trim_end());
                out.push('\n');
            }
        }
        line_start = line_end;
    }
    out
}
