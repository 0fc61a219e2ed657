//! Folding ranges: blocks, `struct` declarations, argument and parameter lists, tensor and
//! record literals that span lines, block comments and runs of line comments, runs of imports,
//! and `// #region` ... `// #endregion` markers.

use syntax::{SyntaxKind, SyntaxToken, TextRange};

use crate::FileId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fold {
    pub range: TextRange,
    pub kind: FoldKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FoldKind {
    /// `{ ... }`, whose last line (the `}`) stays visible.
    Block,
    /// An argument or parameter list or a tensor literal.
    List,
    Comment,
    Imports,
    Region,
}

pub(crate) fn folding_ranges(db: &hir::Database, file: FileId) -> Vec<Fold> {
    let text = file.0.text(db);
    let root = hir::parse(db, file.0).syntax_node();
    let multiline = |range: TextRange| text[range].contains('\n');
    let mut folds = Vec::new();
    for node in root.descendants() {
        let (kind, range) = match node.kind() {
            SyntaxKind::BLOCK => (FoldKind::Block, node.text_range()),
            SyntaxKind::ARG_LIST | SyntaxKind::PARAM_LIST | SyntaxKind::TENSOR_LIT => {
                (FoldKind::List, node.text_range())
            }
            // A `struct`'s fields and a record literal's: from the `{` to the `}`.
            SyntaxKind::STRUCT_DEF | SyntaxKind::RECORD_LIT => {
                let braces = node.children_with_tokens().filter_map(|child| child.into_token());
                let (mut open, mut close) = (None, None);
                for token in braces {
                    match token.kind() {
                        SyntaxKind::L_CURLY if open.is_none() => open = Some(token.text_range()),
                        SyntaxKind::R_CURLY => close = Some(token.text_range()),
                        _ => {}
                    }
                }
                let (Some(open), Some(close)) = (open, close) else { continue };
                let kind = match node.kind() {
                    SyntaxKind::STRUCT_DEF => FoldKind::Block,
                    _ => FoldKind::List,
                };
                (kind, open.cover(close))
            }
            _ => continue,
        };
        if multiline(range) {
            folds.push(Fold { range, kind });
        }
    }
    // Runs of imports.
    let mut imports: Option<TextRange> = None;
    for child in root.children() {
        if child.kind() == SyntaxKind::IMPORT {
            let range = child.text_range();
            imports = Some(imports.map_or(range, |r| r.cover(range)));
        } else if let Some(range) = imports.take()
            && multiline(range)
        {
            folds.push(Fold { range, kind: FoldKind::Imports });
        }
    }
    if let Some(range) = imports
        && multiline(range)
    {
        folds.push(Fold { range, kind: FoldKind::Imports });
    }
    // Comments and regions.
    let comments: Vec<SyntaxToken> = root
        .descendants_with_tokens()
        .filter_map(|e| e.into_token())
        .filter(|t| t.kind() == SyntaxKind::COMMENT)
        .collect();
    let mut regions: Vec<TextRange> = Vec::new();
    let mut run: Option<TextRange> = None;
    let mut previous: Option<&SyntaxToken> = None;
    for comment in &comments {
        let content = comment.text().trim_start_matches('/').trim();
        if comment.text().starts_with("//") && content.starts_with("#region") {
            regions.push(comment.text_range());
            continue;
        }
        if comment.text().starts_with("//") && content.starts_with("#endregion") {
            if let Some(start) = regions.pop() {
                folds.push(Fold {
                    range: start.cover(comment.text_range()),
                    kind: FoldKind::Region,
                });
            }
            continue;
        }
        if comment.text().starts_with("/*") {
            if multiline(comment.text_range()) {
                folds.push(Fold { range: comment.text_range(), kind: FoldKind::Comment });
            }
            continue;
        }
        // A line comment continues a run when only a line break separates it from the last.
        let adjacent = previous.is_some_and(|p| {
            p.text().starts_with("//")
                && text[TextRange::new(p.text_range().end(), comment.text_range().start())]
                    .chars()
                    .filter(|c| *c == '\n')
                    .count()
                    == 1
                && text[TextRange::new(p.text_range().end(), comment.text_range().start())]
                    .trim()
                    .is_empty()
        });
        match (&mut run, adjacent) {
            (Some(range), true) => *range = range.cover(comment.text_range()),
            _ => {
                if let Some(range) = run.take()
                    && multiline(range)
                {
                    folds.push(Fold { range, kind: FoldKind::Comment });
                }
                run = Some(comment.text_range());
            }
        }
        previous = Some(comment);
    }
    if let Some(range) = run
        && multiline(range)
    {
        folds.push(Fold { range, kind: FoldKind::Comment });
    }
    folds.sort_by_key(|fold| (fold.range.start(), std::cmp::Reverse(fold.range.end())));
    folds
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use crate::fixture;

    fn check(text: &str, expect: Expect) {
        let fixture = fixture::load(text);
        let folds = fixture.analysis.folding_ranges(fixture.file).unwrap_or_default();
        let source = fixture.analysis.file_text(fixture.file).unwrap_or_default();
        let line =
            |offset: syntax::TextSize| source[..usize::from(offset)].matches('\n').count() + 1;
        let mut out = String::new();
        for fold in folds {
            out.push_str(&format!(
                "{:?} lines {}-{}\n",
                fold.kind,
                line(fold.range.start()),
                line(fold.range.end())
            ));
        }
        expect.assert_eq(&out);
    }

    #[test]
    fn blocks_comments_imports_and_regions() {
        check(
            r#"import "a.nb";
import "b.nb";
// #region setup
// A comment
// over two lines.
cns Tensor X[2][2] = [
    [0, 1],
    [1, 0],
];
// #endregion
function float f(float x) {
    /* a block
       comment */
    if (x > 0) {
        return x;
    }
    return 0.0;
}
"#,
            expect![[r#"
                Imports lines 1-2
                Region lines 3-10
                Comment lines 4-5
                List lines 6-9
                Block lines 11-18
                Comment lines 12-13
                Block lines 14-16
            "#]],
        );
    }

    #[test]
    fn structs_and_record_literals() {
        check(
            r#"struct Linear {
    Tensor w[n][m];
    Tensor b[m];
}
Linear l = Linear {
    w: [[1, 2]],
    b: [0, 0],
};
Linear one = Linear { w: [[1]], b: [0] };
"#,
            expect![[r#"
                Block lines 1-4
                List lines 5-8
            "#]],
        );
    }
}
