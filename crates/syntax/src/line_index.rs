//! Converts byte offsets to lines and columns and back: 1-based for people, and UTF-16 code
//! units for the language server protocol.

use rowan::TextSize;

/// Line starts of one text, for offset conversions.
///
/// Conversions take logarithmic time, however long the line: columns in characters and in
/// UTF-16 units come from the byte column and the multi-byte characters before it, which are
/// kept in order with running totals. So a file of one long line with many errors on it
/// is reported in linear time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    text: std::sync::Arc<str>,
    line_starts: Vec<u32>,
    /// Every character of more than one byte: its offset, and for it and all before it, the
    /// bytes beyond one per character and the bytes beyond their UTF-16 units.
    wide: Vec<WideChar>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct WideChar {
    offset: u32,
    extra_bytes: u32,
    extra_utf16: u32,
}

/// A 0-based line and a 0-based column counted in a given unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

impl LineIndex {
    pub fn new(text: &str) -> LineIndex {
        let mut line_starts = vec![0];
        for (i, byte) in text.bytes().enumerate() {
            if byte == b'\n' {
                line_starts.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
            }
        }
        let mut wide = Vec::new();
        let (mut extra_bytes, mut extra_utf16) = (0u32, 0u32);
        if !text.is_ascii() {
            for (offset, ch) in text.char_indices().filter(|(_, ch)| !ch.is_ascii()) {
                extra_bytes += ch.len_utf8() as u32 - 1;
                extra_utf16 += (ch.len_utf8() - ch.len_utf16()) as u32;
                let offset = u32::try_from(offset).unwrap_or(u32::MAX);
                wide.push(WideChar { offset, extra_bytes, extra_utf16 });
            }
        }
        LineIndex { text: text.into(), line_starts, wide }
    }

    /// The multi-byte characters' totals before `offset`: bytes beyond one per character and
    /// bytes beyond their UTF-16 units.
    fn extra_before(&self, offset: u32) -> (u32, u32) {
        match self.wide.partition_point(|w| w.offset < offset) {
            0 => (0, 0),
            n => (self.wide[n - 1].extra_bytes, self.wide[n - 1].extra_utf16),
        }
    }

    fn line_of(&self, offset: TextSize) -> usize {
        let offset = u32::from(offset).min(self.len());
        match self.line_starts.binary_search(&offset) {
            Ok(line) => line,
            Err(next) => next - 1,
        }
    }

    fn len(&self) -> u32 {
        u32::try_from(self.text.len()).unwrap_or(u32::MAX)
    }

    fn line_text(&self, line: usize) -> &str {
        let start = self.line_starts.get(line).copied().unwrap_or(0) as usize;
        let end = self.line_starts.get(line + 1).map_or(self.text.len(), |&s| s as usize);
        &self.text[start.min(self.text.len())..end.min(self.text.len())]
    }

    /// 0-based line and byte column. Offsets past the end clamp to the end.
    pub fn line_col(&self, offset: TextSize) -> LineCol {
        let offset = u32::from(offset).min(self.len());
        let line = self.line_of(offset.into());
        LineCol { line: line as u32, col: offset - self.line_starts[line] }
    }

    /// 0-based line and a column in characters, plus one: what a person reads as `LINE:COL`.
    pub fn line_col_1based(&self, offset: TextSize) -> (u32, u32) {
        let (line, start, end) = self.line_and_bounds(offset);
        let (end_extra, _) = self.extra_before(end);
        let (start_extra, _) = self.extra_before(start);
        (line + 1, (end - start) - (end_extra - start_extra) + 1)
    }

    /// The 0-based line of `offset`, the offset where it starts, and `offset` moved back to a
    /// character boundary.
    fn line_and_bounds(&self, offset: TextSize) -> (u32, u32, u32) {
        let LineCol { line, col } = self.line_col(offset);
        let text = self.line_text(line as usize);
        let start = self.line_starts[line as usize];
        (line, start, start + floor_char_boundary(text, col as usize) as u32)
    }

    /// 0-based line and a column in UTF-16 code units, as LSP positions are.
    pub fn to_utf16(&self, offset: TextSize) -> LineCol {
        let (line, start, end) = self.line_and_bounds(offset);
        let (_, end_extra) = self.extra_before(end);
        let (_, start_extra) = self.extra_before(start);
        LineCol { line, col: (end - start) - (end_extra - start_extra) }
    }

    /// The offset of a UTF-16 position; `None` for a line past the end. A column past the end of
    /// its line clamps to the line's end, as LSP asks.
    pub fn from_utf16(&self, position: LineCol) -> Option<TextSize> {
        let line = position.line as usize;
        let start = *self.line_starts.get(line)?;
        let text = self.line_text(line);
        let content = text.strip_suffix('\n').unwrap_or(text);
        let content = content.strip_suffix('\r').unwrap_or(content);
        let mut units = 0u32;
        for (i, ch) in content.char_indices() {
            if units >= position.col {
                return Some(TextSize::from(start + i as u32));
            }
            units += ch.len_utf16() as u32;
        }
        Some(TextSize::from(start + content.len() as u32))
    }

    /// The text of the 0-based line, without its line break.
    pub fn line(&self, line: u32) -> &str {
        let text = self.line_text(line as usize);
        let text = text.strip_suffix('\n').unwrap_or(text);
        text.strip_suffix('\r').unwrap_or(text)
    }

    pub fn line_count(&self) -> u32 {
        self.line_starts.len() as u32
    }
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    index = index.min(text.len());
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns() {
        let index = LineIndex::new("ab\ncé d\n");
        assert_eq!(index.line_col_1based(0.into()), (1, 1));
        assert_eq!(index.line_col_1based(3.into()), (2, 1));
        // `d` is at byte 7 but character column 4.
        assert_eq!(index.line_col_1based(7.into()), (2, 4));
        assert_eq!(index.line_col_1based(100.into()), (3, 1));
        assert_eq!(index.line(1), "cé d");
    }

    #[test]
    fn utf16_round_trip() {
        let index = LineIndex::new("x = \"𝕏\"; y\n");
        // `𝕏` is 4 bytes and 2 UTF-16 units, so `y` is at byte 12 and column 10.
        let y = TextSize::from(12);
        assert_eq!(index.line_col_1based(y), (1, 10));
        let pos = index.to_utf16(y);
        assert_eq!(pos, LineCol { line: 0, col: 10 });
        assert_eq!(index.from_utf16(pos), Some(y));
        assert_eq!(index.from_utf16(LineCol { line: 0, col: 99 }), Some(TextSize::from(13)));
        assert_eq!(index.from_utf16(LineCol { line: 5, col: 0 }), None);
    }

    #[test]
    fn columns_agree_with_counting() {
        let text = "aé𝕏b\r\n€ x\n\n𝕏𝕏 é";
        let index = LineIndex::new(text);
        for offset in 0..=text.len() + 2 {
            let clamped = offset.min(text.len());
            let boundary = (0..=clamped).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            let line_start = text[..boundary].rfind('\n').map_or(0, |i| i + 1);
            let before = &text[line_start..boundary];
            let line = text[..boundary].matches('\n').count() as u32;
            let at = TextSize::from(offset as u32);
            assert_eq!(index.line_col_1based(at), (line + 1, before.chars().count() as u32 + 1));
            let col = before.encode_utf16().count() as u32;
            assert_eq!(index.to_utf16(at), LineCol { line, col });
        }
    }
}
