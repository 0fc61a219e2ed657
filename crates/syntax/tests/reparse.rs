//! Incremental reparsing: for every edit, `Parse::reparse` gives the tree and errors a full parse
//! of the new text gives (compared as debug dumps), and an edit inside a token or a block leaves
//! the rest of the tree shared with the old one. A property test makes random edits to the
//! parser's and the checker's test programs and the examples.

use std::{fs, path::PathBuf};

use proptest::prelude::*;
use syntax::{Indel, Parse, SyntaxKind, TextRange, TextSize, parse};

/// The tree and the errors, with their ranges and fixes.
fn dump(parse: &Parse) -> String {
    let mut out = parse.debug_dump();
    for error in parse.errors() {
        out.push_str(&format!("{error:?}\n"));
    }
    out
}

/// `old` with the first `find` replaced by `insert`, reparsed, checked against a full parse; the
/// parse of `old` and the reparse.
fn check(old: &str, find: &str, insert: &str) -> (Parse, Parse) {
    let start = old.find(find).unwrap_or_else(|| panic!("{find:?} is not in the program"));
    let delete = TextRange::at(TextSize::from(start as u32), TextSize::from(find.len() as u32));
    check_edit(old, &Indel::replace(delete, insert))
}

fn check_edit(old: &str, edit: &Indel) -> (Parse, Parse) {
    let new_text = edit.apply(old).expect("an edit within the text");
    let old = parse(old);
    let incremental = old.reparse(edit);
    assert_eq!(incremental.syntax_node().to_string(), new_text, "the reparse is lossless");
    let full = parse(&new_text);
    assert_eq!(dump(&incremental), dump(&full), "{edit:?} on\n{}", old.syntax_node());
    (old, incremental)
}

const PROGRAM: &str = "\
function float f(float x) {
    // the slope
    if (x > 0) {
        return x * 2.0;
    }
    return -x;
}

function float g(float y) {
    return y + 1.0;
}
int y = 1
print(f(1.0));
";

/// The green node of the item that holds `offset`, to check what a reparse shares.
fn item_green(parse: &Parse, offset: usize) -> syntax::GreenNode {
    let root = parse.syntax_node();
    let item = root
        .children()
        .find(|item| item.text_range().contains(TextSize::from(offset as u32)))
        .expect("an item at the offset");
    item.green().into_owned()
}

#[test]
fn edits_inside_blocks_and_tokens_equal_a_full_parse() {
    let edits: &[(&str, &str)] = &[
        // Inside a block: statements added, changed, removed.
        ("x * 2.0", "x * 3.0 + (1"),
        ("return -x;", "return -x; int z = 2;"),
        ("return -x;", ""),
        ("y + 1.0", "y +"),
        ("x > 0", "x >"),
        // Breaking and restoring balance inside a block.
        ("return x * 2.0;", "return x * 2.0; {"),
        ("return x * 2.0;", "return (x * 2.0;"),
        ("return x * 2.0;", "}"),
        ("    }\n    return -x;", "    return -x;"),
        // Inside a whitespace or comment token.
        ("the slope", "the new slope"),
        ("the slope", "the slope */"),
        ("the slope", "the\nslope"),
        ("\n\nfunction float g", "\n\n\n\nfunction float g"),
        ("\n\nfunction float g", "\n /* c */ \nfunction float g"),
        // At the top level, across items, and at the ends.
        ("int y = 1", "int y = 1;"),
        ("function float g", "functoin float g"),
        ("}\n\nfunction", "\n\nfunction"),
        ("function float f", "{ function float f"),
        ("print(f(1.0));\n", ""),
        ("function float f(float x) {", "function float f(float x) {{"),
        ("\"", "\""),
    ];
    for &(find, insert) in edits {
        if PROGRAM.contains(find) {
            check(PROGRAM, find, insert);
        }
    }
}

#[test]
fn an_edit_inside_a_block_shares_the_other_items() {
    let start = PROGRAM.find("x * 2.0").unwrap_or(0);
    let (old, reparsed) = check(PROGRAM, "x * 2.0", "x * 3.0");
    let g = PROGRAM.find("function float g").unwrap_or(0);
    let (before, after) = (item_green(&old, g), item_green(&reparsed, g));
    assert!(std::ptr::eq(&*before, &*after), "the item after the block is shared");
    let (before, after) = (item_green(&old, start), item_green(&reparsed, start));
    assert!(!std::ptr::eq(&*before, &*after), "the edited item is new");
}

#[test]
fn an_edit_inside_a_comment_relexes_the_comment() {
    let (old, reparsed) = check(PROGRAM, "the slope", "the steepest slope");
    let comment = reparsed
        .syntax_node()
        .descendants_with_tokens()
        .find(|element| element.kind() == SyntaxKind::COMMENT)
        .map(|element| element.to_string());
    assert_eq!(comment.as_deref(), Some("// the steepest slope"));
    let g = PROGRAM.find("function float g").unwrap_or(0);
    let moved = g + "steepest ".len();
    assert!(std::ptr::eq(&*item_green(&old, g), &*item_green(&reparsed, moved)));
}

#[test]
fn an_edit_of_whitespace_between_items_relexes_the_whitespace() {
    // No block holds the edit: only relexing the token keeps the items shared.
    let at = PROGRAM.find("}\n\nfunction float g").unwrap_or(0) + 2;
    let insert = Indel::replace(TextRange::empty(TextSize::from(at as u32)), " \n");
    let (old, reparsed) = check_edit(PROGRAM, &insert);
    assert!(std::ptr::eq(&*item_green(&old, 0), &*item_green(&reparsed, 0)));
}

#[test]
fn an_edit_between_two_texts_is_their_difference() {
    let edit = Indel::between("int a = 1;", "int ab = 1;");
    assert_eq!(edit, Indel::replace(TextRange::new(5.into(), 5.into()), "b"));
    let edit = Indel::between("é = 1", "è = 1");
    assert_eq!(edit.apply("é = 1").as_deref(), Some("è = 1"));
    assert_eq!(Indel::between("same", "same").insert, "");
}

/// The programs of the parser's and the checker's tests and the examples, the corpus the
/// property test edits.
fn corpus() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dirs = [
        root.join("test_data/parser/ok"),
        root.join("test_data/parser/err"),
        root.join("../../examples"),
        root.join("../hir/test_data/check/ok"),
        root.join("../hir/test_data/check/err"),
    ];
    let mut programs = vec![PROGRAM.to_owned()];
    for dir in dirs {
        let Ok(entries) = fs::read_dir(&dir) else { continue };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
        paths.sort();
        for path in paths {
            if path.extension().is_some_and(|ext| ext == "nb")
                && let Ok(text) = fs::read_to_string(&path)
            {
                programs.push(text);
            }
        }
    }
    programs
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// Whatever the edit, to whatever program, the reparse equals a full parse.
    #[test]
    fn reparse_equals_full_parse(
        program in any::<prop::sample::Index>(),
        at in any::<prop::sample::Index>(),
        len in 0usize..16,
        insert in "[ a-z0-9(){};,+*@=\\[\\]\"/\n]{0,6}",
    ) {
        thread_local! {
            static CORPUS: Vec<String> = corpus();
        }
        let text = CORPUS.with(|corpus| program.get(corpus).clone());
        let mut start = at.index(text.len() + 1);
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (start + len).min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let edit = Indel::replace(
            TextRange::new(TextSize::from(start as u32), TextSize::from(end as u32)),
            insert,
        );
        let new_text = edit.apply(&text).expect("an edit on character boundaries");
        let incremental = parse(&text).reparse(&edit);
        prop_assert_eq!(dump(&incremental), dump(&parse(&new_text)));
    }
}
