//! The document IR and its printer: a Wadler/Prettier-style pretty printer.
//!
//! A [`Doc`] says what may go on one line and where a line may break; the printer decides, group
//! by group, whether the group fits in what is left of the line. A group that does not fit breaks
//! all of its own `Line`s (not those of the groups inside it, which decide for themselves). A
//! group that holds a `HardLine` or a `BreakParent` always breaks, and so do the groups around it.
//!
//! This module knows nothing of Nabla: it lays out text.

use std::borrow::Cow;

/// The indentation of one level, in spaces.
pub(crate) const INDENT: usize = 4;

#[derive(Debug, Clone)]
pub(crate) enum Doc {
    /// Text printed as it is. It may hold line breaks (a multi-line block comment); the column
    /// after it is then the width of its last line.
    Text(Cow<'static, str>),
    /// A comment at the end of a line: printed after one space (with `space`) or right after
    /// what precedes it. With `ends_line`, nothing else may follow on its line, so the next text
    /// starts a new line.
    TrailingComment {
        text: String,
        ends_line: bool,
        space: bool,
    },
    /// A space, or a line break when its group breaks.
    Line,
    /// Nothing, or a line break when its group breaks.
    SoftLine,
    /// Always a line break.
    HardLine,
    /// A line break unless the line is still empty.
    EnsureLineStart,
    /// Forces the groups around it to break.
    BreakParent,
    /// Text printed only when the enclosing group breaks: the trailing comma of a broken list.
    IfBreak(&'static str),
    /// Its contents, one level further in after each line break.
    Indent(Vec<Doc>),
    /// Its contents on one line if they fit, else with every `Line` of the group broken.
    Group {
        docs: Vec<Doc>,
        breaks: bool,
    },
    /// Alternating contents and separators (`Line`s): as many contents on each line as fit.
    Fill(Vec<Doc>),
    Concat(Vec<Doc>),
}

impl Doc {
    pub(crate) fn text(text: &'static str) -> Doc {
        Doc::Text(Cow::Borrowed(text))
    }

    pub(crate) fn group(docs: Vec<Doc>) -> Doc {
        Doc::Group { docs, breaks: false }
    }
}

/// What a doc forces on the groups around it.
#[derive(Debug, Clone, Copy, Default)]
struct Breaks {
    /// The enclosing group must break.
    forced: bool,
    /// The doc holds an `EnsureLineStart`, which breaks every enclosing group in which text
    /// comes before it.
    ensure: bool,
}

impl std::ops::BitOr for Breaks {
    type Output = Breaks;
    fn bitor(self, other: Breaks) -> Breaks {
        Breaks { forced: self.forced | other.forced, ensure: self.ensure | other.ensure }
    }
}

/// Marks every group that must break as broken. `seen` says whether text comes before `doc` in
/// the innermost enclosing group.
///
/// An own-line comment (an `EnsureLineStart`) at the very start of a group does not break that
/// group: the line break before it belongs to a group further out, the first one in which text
/// comes before the comment. So a comment that the first formatting left at the start of a line
/// breaks the same groups when the output is formatted again.
fn propagate_breaks(doc: &mut Doc, seen: &mut bool) -> Breaks {
    match doc {
        Doc::HardLine | Doc::BreakParent => Breaks { forced: true, ensure: false },
        Doc::EnsureLineStart => Breaks { forced: *seen, ensure: true },
        Doc::Text(text) => {
            *seen |= !text.trim_matches(' ').is_empty();
            Breaks::default()
        }
        Doc::TrailingComment { .. } => {
            *seen = true;
            Breaks::default()
        }
        Doc::Line | Doc::SoftLine | Doc::IfBreak(_) => Breaks::default(),
        Doc::Indent(docs) | Doc::Concat(docs) | Doc::Fill(docs) => {
            docs.iter_mut().fold(Breaks::default(), |acc, doc| propagate_breaks(doc, seen) | acc)
        }
        Doc::Group { docs, breaks } => {
            let outer = *seen;
            let mut inner = false;
            let inside = docs
                .iter_mut()
                .fold(Breaks::default(), |acc, doc| propagate_breaks(doc, &mut inner) | acc);
            *breaks |= inside.forced;
            *seen = outer || inner;
            Breaks { forced: *breaks || (outer && inside.ensure), ensure: inside.ensure }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Flat,
    Break,
}

#[derive(Debug, Clone, Copy)]
enum Cmd<'a> {
    Doc(&'a Doc),
    /// Docs printed one after the other.
    Seq(&'a [Doc]),
    /// The parts of a `Fill` not printed yet.
    Fill(&'a [Doc]),
}

#[derive(Debug, Clone, Copy)]
struct Item<'a> {
    indent: usize,
    mode: Mode,
    cmd: Cmd<'a>,
}

/// Lays `doc` out in lines of at most `width` columns where it can. The result has no trailing
/// whitespace on any line that the printer made.
pub(crate) fn print(mut doc: Doc, width: usize) -> String {
    propagate_breaks(&mut doc, &mut false);
    let mut printer = Printer {
        out: String::new(),
        width,
        column: 0,
        at_line_start: true,
        line_indent: 0,
        must_newline: false,
        scratch: Vec::new(),
    };
    printer.run(&doc);
    printer.out
}

struct Printer<'a> {
    out: String,
    width: usize,
    /// The column the next character goes to, indentation included.
    column: usize,
    /// Nothing but (not yet written) indentation on the current line.
    at_line_start: bool,
    /// The indentation of the current line, written before its first text.
    line_indent: usize,
    /// A comment that ends its line was printed: the next text starts a new line.
    must_newline: bool,
    /// The work stack of `fits`, kept to reuse its allocation.
    scratch: Vec<Item<'a>>,
}

impl<'a> Printer<'a> {
    fn run(&mut self, doc: &'a Doc) {
        let mut stack = vec![Item { indent: 0, mode: Mode::Break, cmd: Cmd::Doc(doc) }];
        while let Some(item) = stack.pop() {
            let Item { indent, mode, cmd } = item;
            let doc = match cmd {
                Cmd::Doc(doc) => doc,
                Cmd::Seq(docs) => {
                    stack.extend(docs.iter().rev().map(|doc| Item { cmd: Cmd::Doc(doc), ..item }));
                    continue;
                }
                Cmd::Fill(parts) => {
                    self.fill(item, parts, &mut stack);
                    continue;
                }
            };
            match doc {
                Doc::Text(text) => self.text(text, indent),
                Doc::TrailingComment { text, ends_line, space } => {
                    self.trailing_comment(text, *space, indent);
                    self.must_newline |= *ends_line;
                }
                Doc::Line | Doc::SoftLine if mode == Mode::Break || self.must_newline => {
                    self.newline(indent)
                }
                Doc::Line => self.text(" ", indent),
                Doc::SoftLine => {}
                Doc::HardLine => self.newline(indent),
                Doc::EnsureLineStart => {
                    if !self.at_line_start {
                        self.newline(indent);
                    }
                }
                Doc::BreakParent => {}
                Doc::IfBreak(text) => {
                    if mode == Mode::Break {
                        self.text(text, indent);
                    }
                }
                Doc::Indent(docs) => {
                    stack.push(Item { indent: indent + INDENT, mode, cmd: Cmd::Seq(docs) })
                }
                Doc::Concat(docs) => stack.push(Item { cmd: Cmd::Seq(docs), ..item }),
                Doc::Group { docs, breaks } => {
                    let mode = if *breaks {
                        Mode::Break
                    } else if mode == Mode::Flat {
                        Mode::Flat
                    } else {
                        let flat = [Item { indent, mode: Mode::Flat, cmd: Cmd::Seq(docs) }];
                        if self.fits(&flat, &stack) { Mode::Flat } else { Mode::Break }
                    };
                    stack.push(Item { indent, mode, cmd: Cmd::Seq(docs) });
                }
                Doc::Fill(parts) => stack.push(Item { cmd: Cmd::Fill(parts), ..item }),
            }
        }
    }

    /// One step of a fill: the first content, flat if it fits, and the separator after it, flat
    /// if the next content fits after it too; the rest goes back on the stack.
    fn fill(&mut self, item: Item<'a>, parts: &'a [Doc], stack: &mut Vec<Item<'a>>) {
        let at = |mode: Mode, doc: &'a Doc| Item { indent: item.indent, mode, cmd: Cmd::Doc(doc) };
        let [content, rest @ ..] = parts else { return };
        // The last content is measured with what follows the fill (a trailing comma, a closing
        // bracket); the others only with what follows them inside the fill.
        let after: &[Item<'a>] = if rest.is_empty() { &stack[..] } else { &[] };
        let content_fits = self.fits(&[at(Mode::Flat, content)], after);
        let content_mode = if content_fits { Mode::Flat } else { Mode::Break };
        let [separator, rest @ ..] = rest else {
            stack.push(at(content_mode, content));
            return;
        };
        let Some(next) = rest.first() else {
            stack.push(at(content_mode, separator));
            stack.push(at(content_mode, content));
            return;
        };
        let after: &[Item<'a>] = if rest.len() == 1 { &stack[..] } else { &[] };
        let pair_fits = content_fits
            && self.fits(
                &[at(Mode::Flat, content), at(Mode::Flat, separator), at(Mode::Flat, next)],
                after,
            );
        stack.push(Item { cmd: Cmd::Fill(rest), ..item });
        // A comment that ends its line also ends the line of the fill.
        let separator_mode =
            if pair_fits && !ends_line(content) { Mode::Flat } else { Mode::Break };
        stack.push(at(separator_mode, separator));
        stack.push(at(content_mode, content));
    }

    /// Whether `next`, then `rest` (the printer's stack, top last) up to the first line break,
    /// fits in what is left of the current line.
    fn fits(&mut self, next: &[Item<'a>], rest: &[Item<'a>]) -> bool {
        let mut remaining = self.width as isize - self.column as isize;
        let mut line_empty = self.at_line_start;
        let stack = &mut self.scratch;
        stack.clear();
        stack.extend(next.iter().rev());
        let mut rest_index = rest.len();
        loop {
            if remaining < 0 {
                return false;
            }
            let item = match stack.pop() {
                Some(item) => item,
                None if rest_index == 0 => return true,
                None => {
                    rest_index -= 1;
                    rest[rest_index]
                }
            };
            let doc = match item.cmd {
                Cmd::Doc(doc) => doc,
                Cmd::Seq(docs) | Cmd::Fill(docs) => {
                    stack.extend(docs.iter().rev().map(|doc| Item { cmd: Cmd::Doc(doc), ..item }));
                    continue;
                }
            };
            match doc {
                Doc::Text(text) => {
                    line_empty &= text.bytes().all(|b| b == b' ');
                    match text.split_once('\n') {
                        Some((first, _)) => return remaining >= width(first) as isize,
                        None => remaining -= width(text) as isize,
                    }
                }
                Doc::TrailingComment { text, ends_line, space } => {
                    // A block comment counts, as it does where it stays inline; a line comment
                    // may run past the width rather than break the code before it. Of a block
                    // comment over several lines, only the first line is on this one.
                    if text.starts_with("/*") || !ends_line {
                        let (first, more_lines) = match text.split_once('\n') {
                            Some((first, _)) => (first, true),
                            None => (text.as_str(), false),
                        };
                        remaining -= (width(first) + usize::from(*space)) as isize;
                        if more_lines {
                            return remaining >= 0;
                        }
                    }
                    if *ends_line {
                        return remaining >= 0;
                    }
                    line_empty = false;
                }
                Doc::Line | Doc::SoftLine if item.mode == Mode::Break => return true,
                Doc::Line => remaining -= 1,
                Doc::SoftLine | Doc::BreakParent => {}
                Doc::HardLine => return true,
                Doc::EnsureLineStart if !line_empty => return true,
                Doc::EnsureLineStart => {}
                Doc::IfBreak(text) => {
                    if item.mode == Mode::Break {
                        remaining -= width(text) as isize;
                    }
                }
                Doc::Indent(docs) | Doc::Concat(docs) | Doc::Fill(docs) => {
                    stack.push(Item { cmd: Cmd::Seq(docs), ..item })
                }
                Doc::Group { docs, breaks } => {
                    let mode = if *breaks { Mode::Break } else { item.mode };
                    stack.push(Item { mode, cmd: Cmd::Seq(docs), ..item });
                }
            }
        }
    }

    fn text(&mut self, text: &str, indent: usize) {
        let blank = text.bytes().all(|b| b == b' ');
        if text.is_empty() || (blank && (self.must_newline || self.at_line_start)) {
            return;
        }
        if self.must_newline {
            self.newline(indent);
        }
        self.start_line();
        self.out.push_str(text);
        match text.rfind('\n') {
            Some(at) => self.column = width(&text[at + 1..]),
            None => self.column += width(text),
        }
    }

    fn trailing_comment(&mut self, text: &str, space: bool, indent: usize) {
        if self.must_newline {
            self.newline(indent);
        }
        if self.at_line_start {
            self.start_line();
        } else {
            self.trim_line_end();
            if space {
                self.out.push(' ');
                self.column += 1;
            }
        }
        self.out.push_str(text);
        match text.rfind('\n') {
            Some(at) => self.column = width(&text[at + 1..]),
            None => self.column += width(text),
        }
    }

    /// Writes the current line's indentation if nothing is on the line yet.
    fn start_line(&mut self) {
        if self.at_line_start {
            self.out.extend(std::iter::repeat_n(' ', self.line_indent));
            self.column = self.line_indent;
            self.at_line_start = false;
        }
    }

    fn newline(&mut self, indent: usize) {
        self.trim_line_end();
        self.out.push('\n');
        self.at_line_start = true;
        self.line_indent = indent;
        self.column = indent;
        self.must_newline = false;
    }

    fn trim_line_end(&mut self) {
        let trimmed = self.out.trim_end_matches([' ', '\t']).len();
        let column = self.column.saturating_sub(self.out.len() - trimmed);
        self.out.truncate(trimmed);
        self.column = column;
    }
}

/// Whether `doc` ends with a comment that must end its line.
fn ends_line(doc: &Doc) -> bool {
    match doc {
        Doc::TrailingComment { ends_line, .. } => *ends_line,
        Doc::Concat(docs) | Doc::Indent(docs) | Doc::Group { docs, .. } | Doc::Fill(docs) => {
            docs.iter().rev().find(|doc| !matches!(doc, Doc::BreakParent)).is_some_and(ends_line)
        }
        _ => false,
    }
}

/// The width of a text in columns: one per character.
fn width(text: &str) -> usize {
    text.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&'static str]) -> Doc {
        let mut inner = vec![Doc::SoftLine];
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                inner.push(Doc::text(","));
                inner.push(Doc::Line);
            }
            inner.push(Doc::text(item));
        }
        inner.push(Doc::IfBreak(","));
        Doc::group(vec![Doc::text("f("), Doc::Indent(inner), Doc::SoftLine, Doc::text(")")])
    }

    #[test]
    fn a_group_that_fits_stays_on_one_line() {
        assert_eq!(print(list(&["a", "b"]), 20), "f(a, b)");
    }

    #[test]
    fn a_group_that_does_not_fit_breaks_every_line() {
        assert_eq!(
            print(list(&["aaaa", "bbbb", "cccc"]), 10),
            "f(\n    aaaa,\n    bbbb,\n    cccc,\n)"
        );
    }

    #[test]
    fn a_fill_packs_as_many_as_fit() {
        let mut parts = Vec::new();
        for (i, item) in ["1,", "2,", "3,", "4,", "5"].into_iter().enumerate() {
            if i > 0 {
                parts.push(Doc::Line);
            }
            parts.push(Doc::text(item));
        }
        let doc = Doc::group(vec![
            Doc::text("["),
            Doc::Indent(vec![Doc::SoftLine, Doc::Fill(parts), Doc::IfBreak(",")]),
            Doc::SoftLine,
            Doc::text("]"),
        ]);
        assert_eq!(print(doc, 12), "[\n    1, 2, 3,\n    4, 5,\n]");
    }

    #[test]
    fn a_comment_that_ends_its_line_breaks_the_group() {
        let doc = Doc::group(vec![
            Doc::text("a"),
            Doc::TrailingComment { text: "// c".to_owned(), ends_line: true, space: true },
            Doc::BreakParent,
            Doc::Line,
            Doc::text("b"),
        ]);
        assert_eq!(print(doc, 80), "a // c\nb");
    }
}
