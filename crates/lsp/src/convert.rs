//! Conversions between the protocol's positions (lines and UTF-16 columns) and `ide`'s byte
//! offsets, and from `ide`'s answers to protocol types. Nothing here touches the database.

use ide::{LineCol, LineIndex, TextRange, TextSize};
use tower_lsp::lsp_types as lsp;

/// The byte offset of a protocol position; `None` past the end of the text: on a line after the
/// last, or past the end of the last line. A column past the end of another line means the end
/// of that line, as the protocol says.
pub(crate) fn offset(index: &LineIndex, position: lsp::Position) -> Option<TextSize> {
    let last = index.line_count().checked_sub(1)?;
    if position.line > last
        || (position.line == last && position.character > utf16_len(index.line(last)))
    {
        return None;
    }
    index.from_utf16(LineCol { line: position.line, col: position.character })
}

pub(crate) fn position(index: &LineIndex, offset: TextSize) -> lsp::Position {
    let LineCol { line, col } = index.to_utf16(offset);
    lsp::Position { line, character: col }
}

pub(crate) fn range(index: &LineIndex, range: TextRange) -> lsp::Range {
    lsp::Range { start: position(index, range.start()), end: position(index, range.end()) }
}

/// The byte range of a protocol range; `None` when it starts past the end of the text or is
/// reversed. An end past the end of the text means the end.
pub(crate) fn text_range(index: &LineIndex, range: lsp::Range) -> Option<TextRange> {
    let start = offset(index, range.start)?;
    let end = offset(index, range.end).unwrap_or_else(|| end_of_text(index));
    (start <= end).then(|| TextRange::new(start, end))
}

/// The offset of the end of the text.
fn end_of_text(index: &LineIndex) -> TextSize {
    let last = index.line_count().saturating_sub(1);
    index.from_utf16(LineCol { line: last, col: u32::MAX }).unwrap_or_default()
}

pub(crate) fn text_edit(index: &LineIndex, edit: &ide::TextEdit) -> lsp::TextEdit {
    lsp::TextEdit { range: range(index, edit.range), new_text: edit.insert.clone() }
}

pub(crate) fn severity(severity: ide::Severity) -> lsp::DiagnosticSeverity {
    match severity {
        ide::Severity::Error => lsp::DiagnosticSeverity::ERROR,
        ide::Severity::Warning => lsp::DiagnosticSeverity::WARNING,
    }
}

pub(crate) fn completion_kind(kind: ide::CompletionKind) -> lsp::CompletionItemKind {
    match kind {
        ide::CompletionKind::Local | ide::CompletionKind::Parameter => {
            lsp::CompletionItemKind::VARIABLE
        }
        ide::CompletionKind::ShapeVariable => lsp::CompletionItemKind::TYPE_PARAMETER,
        ide::CompletionKind::Field => lsp::CompletionItemKind::FIELD,
        ide::CompletionKind::Global => lsp::CompletionItemKind::CONSTANT,
        ide::CompletionKind::Function | ide::CompletionKind::Builtin => {
            lsp::CompletionItemKind::FUNCTION
        }
        ide::CompletionKind::Keyword => lsp::CompletionItemKind::KEYWORD,
        ide::CompletionKind::IndexLabel => lsp::CompletionItemKind::VARIABLE,
    }
}

pub(crate) fn symbol_kind(kind: ide::SymbolKind) -> lsp::SymbolKind {
    match kind {
        ide::SymbolKind::File => lsp::SymbolKind::FILE,
        ide::SymbolKind::Import => lsp::SymbolKind::MODULE,
        ide::SymbolKind::Function => lsp::SymbolKind::FUNCTION,
        ide::SymbolKind::Test => lsp::SymbolKind::METHOD,
        ide::SymbolKind::Variable | ide::SymbolKind::IndexLabel => lsp::SymbolKind::VARIABLE,
        ide::SymbolKind::Constant => lsp::SymbolKind::CONSTANT,
        ide::SymbolKind::Parameter => lsp::SymbolKind::VARIABLE,
        ide::SymbolKind::ShapeVariable => lsp::SymbolKind::TYPE_PARAMETER,
        ide::SymbolKind::Struct => lsp::SymbolKind::STRUCT,
        ide::SymbolKind::Field => lsp::SymbolKind::FIELD,
    }
}

/// The semantic token types, in the order of [`token_type`]'s indices.
pub(crate) const TOKEN_TYPES: &[lsp::SemanticTokenType] = &[
    lsp::SemanticTokenType::FUNCTION,
    lsp::SemanticTokenType::PARAMETER,
    lsp::SemanticTokenType::VARIABLE,
    lsp::SemanticTokenType::TYPE_PARAMETER,
    lsp::SemanticTokenType::new("label"),
    lsp::SemanticTokenType::KEYWORD,
    lsp::SemanticTokenType::TYPE,
    lsp::SemanticTokenType::NUMBER,
    lsp::SemanticTokenType::STRING,
    lsp::SemanticTokenType::COMMENT,
    lsp::SemanticTokenType::OPERATOR,
    lsp::SemanticTokenType::PROPERTY,
];

fn token_type(tag: ide::HlTag) -> u32 {
    match tag {
        ide::HlTag::Function | ide::HlTag::BuiltinFunction => 0,
        ide::HlTag::Parameter => 1,
        ide::HlTag::Variable => 2,
        ide::HlTag::ShapeVariable => 3,
        ide::HlTag::IndexLabel => 4,
        ide::HlTag::Keyword => 5,
        ide::HlTag::Type => 6,
        ide::HlTag::Number => 7,
        ide::HlTag::String => 8,
        ide::HlTag::Comment => 9,
        ide::HlTag::Operator => 10,
        ide::HlTag::Field => 11,
    }
}

pub(crate) fn token_modifiers() -> Vec<lsp::SemanticTokenModifier> {
    ide::HlMods::ALL.iter().map(|(_, name)| lsp::SemanticTokenModifier::new(name)).collect()
}

/// Semantic tokens in the protocol's relative encoding, one token per line of a multi-line
/// token (a block comment).
pub(crate) fn semantic_tokens(
    text: &str,
    index: &LineIndex,
    highlights: &[ide::HighlightedRange],
) -> Vec<lsp::SemanticToken> {
    let mut out = Vec::with_capacity(highlights.len());
    let (mut last_line, mut last_col) = (0u32, 0u32);
    for highlight in highlights {
        let token_type = token_type(highlight.tag);
        let modifiers = highlight.mods.0;
        let start = usize::from(highlight.range.start());
        let end = usize::from(highlight.range.end()).min(text.len());
        let Some(slice) = text.get(start..end) else { continue };
        let mut offset = start;
        for piece in slice.split_inclusive('\n') {
            let content = piece.trim_end_matches(['\n', '\r']);
            let pos = index.to_utf16(TextSize::from(offset as u32));
            let length = content.encode_utf16().count() as u32;
            offset += piece.len();
            if length == 0 {
                continue;
            }
            let delta_line = pos.line.saturating_sub(last_line);
            let delta_start =
                if delta_line == 0 { pos.col.saturating_sub(last_col) } else { pos.col };
            out.push(lsp::SemanticToken {
                delta_line,
                delta_start,
                length,
                token_type,
                token_modifiers_bitset: modifiers,
            });
            last_line = pos.line;
            last_col = pos.col;
        }
    }
    out
}

/// The number of UTF-16 code units in `text`, for offsets inside labels.
pub(crate) fn utf16_len(text: &str) -> u32 {
    text.encode_utf16().count() as u32
}

#[cfg(test)]
mod tests {
    use ide::{HighlightedRange, HlMods, HlTag, LineIndex, TextRange, TextSize};

    fn highlight(start: u32, end: u32, tag: HlTag) -> HighlightedRange {
        HighlightedRange {
            range: TextRange::new(TextSize::from(start), TextSize::from(end)),
            tag,
            mods: HlMods::NONE,
        }
    }

    #[test]
    fn semantic_tokens_are_relative_utf16_and_split_at_lines() {
        // `/* 𝕏\n */` spans two lines; `𝕏` is two UTF-16 code units.
        let text = "int a; /* 𝕏\n */ a";
        let index = LineIndex::new(text);
        let tokens = super::semantic_tokens(
            text,
            &index,
            &[
                highlight(0, 3, HlTag::Type),
                highlight(4, 5, HlTag::Variable),
                highlight(7, 18, HlTag::Comment),
                highlight(19, 20, HlTag::Variable),
            ],
        );
        let encoded: Vec<[u32; 4]> =
            tokens.iter().map(|t| [t.delta_line, t.delta_start, t.length, t.token_type]).collect();
        assert_eq!(encoded, [[0, 0, 3, 6], [0, 4, 1, 2], [0, 3, 5, 9], [1, 0, 3, 9], [0, 4, 1, 2]]);
    }

    #[test]
    fn positions_round_trip_through_utf16() {
        let text = "é𝕏 = 1;\nx";
        let index = LineIndex::new(text);
        // `=` is byte 7, UTF-16 column 4.
        let position = super::position(&index, TextSize::from(7));
        assert_eq!((position.line, position.character), (0, 4));
        assert_eq!(super::offset(&index, position), Some(TextSize::from(7)));
        let past_end = tower_lsp::lsp_types::Position { line: 9, character: 0 };
        assert_eq!(super::offset(&index, past_end), None);
    }

    #[test]
    fn columns_past_the_end_of_a_line_clamp_but_not_past_the_last() {
        use tower_lsp::lsp_types::{Position, Range};
        let index = LineIndex::new(
            "ab
cd",
        );
        let at = |line, character| super::offset(&index, Position { line, character });
        assert_eq!(at(0, 9), Some(TextSize::from(2)));
        assert_eq!(at(1, 2), Some(TextSize::from(5)));
        assert_eq!(at(1, 3), None);
        let range = |a: (u32, u32), b: (u32, u32)| Range {
            start: Position { line: a.0, character: a.1 },
            end: Position { line: b.0, character: b.1 },
        };
        let whole = TextRange::new(TextSize::from(1), TextSize::from(5));
        assert_eq!(super::text_range(&index, range((0, 1), (7, 0))), Some(whole));
        assert_eq!(super::text_range(&index, range((1, 3), (7, 0))), None);
    }
}
