//! Every query at every offset of the checker's test programs (valid ones and ones full of
//! errors) answers without panicking, and every range it returns lies inside the file.

use std::{fs, path::PathBuf, sync::Arc};

use ide::{AnalysisHost, FilePosition, FileRange, TextRange, TextSize};

fn programs() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../hir/test_data/check");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "nb") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn inside(range: TextRange, len: usize) -> bool {
    usize::from(range.end()) <= len
}

#[test]
fn every_query_at_every_offset() {
    let programs = programs();
    assert!(programs.len() > 10, "the checker's test programs are missing");
    for path in programs {
        let text = fs::read_to_string(&path).unwrap_or_default();
        let mut host = AnalysisHost::new();
        let file = host.set_file_text(&path, Arc::from(text.as_str()));
        let analysis = host.analysis();
        let len = text.len();
        let whole = TextRange::new(TextSize::from(0), TextSize::from(len as u32));
        let at = path.display();

        let diagnostics = analysis.diagnostics(file).unwrap_or_default();
        assert!(diagnostics.iter().all(|d| inside(d.range, len)), "{at}");
        let tokens = analysis.semantic_tokens(file).unwrap_or_default();
        assert!(tokens.iter().all(|t| inside(t.range, len)), "{at}");
        let hints = analysis.inlay_hints(file, None).unwrap_or_default();
        assert!(hints.iter().all(|h| usize::from(h.offset) <= len), "{at}");
        let symbols = analysis.document_symbols(file).unwrap_or_default();
        assert!(symbols.iter().all(|s| inside(s.full_range, len)), "{at}");
        let folds = analysis.folding_ranges(file).unwrap_or_default();
        assert!(folds.iter().all(|f| inside(f.range, len)), "{at}");
        let _ = analysis.format(file);
        let _ = analysis.code_actions(FileRange { file, range: whole });
        let _ = analysis.runnables(file);
        let _ = analysis.workspace_symbols("a");

        // Past the end as well as every character boundary.
        let offsets = (0..=len + 2).filter(|&i| i > len || text.is_char_boundary(i));
        for offset in offsets {
            let position = FilePosition { file, offset: TextSize::from(offset as u32) };
            if let Ok(Some(hover)) = analysis.hover(position) {
                assert!(inside(hover.range, len), "{at}:{offset}");
            }
            for target in analysis.goto_definition(position).unwrap_or_default() {
                assert!(inside(target.focus_range, len), "{at}:{offset}");
            }
            let _ = analysis.find_references(position);
            let _ = analysis.highlight_related(position);
            let _ = analysis.completions(position);
            let _ = analysis.signature_help(position);
            let _ = analysis.prepare_rename(position);
            let _ = analysis.rename(position, "renamed");
        }
    }
}
