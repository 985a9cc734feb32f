//! A plan (Markdown) rendered for a terminal, and a pager for long plans.
//!
//! A plan under review is usually Markdown written by a model: headings, lists, code
//! blocks, tables, links, `inline code` and **bold**. It is parsed by the project's one
//! Markdown front end ([`crate::markdown::parse`], the same `pulldown-cmark` parse the
//! web page renders), so both faces read the same plan; this module only renders its
//! events into wrapped, optionally coloured lines ([`super::wrap`]: at word boundaries,
//! never wider than asked). Nothing is dropped, only decorated:
//! - a link shows its label and then its target as text (`label <https://…>`); the
//!   screen never writes an OSC 8 hyperlink, so asker text cannot hide a target;
//! - an image is `[image: alt] <url>`; raw HTML is shown as written; link reference
//!   definitions, which Markdown never displays, are listed at the end;
//! - a table is drawn with box lines, its columns narrowed (cells wrapped) to fit, or,
//!   when even that does not fit, each row is shown as `header: value` lines.
//!
//! Every text arrives sanitised from the front end ([`crate::text`]), so a control
//! character or escape sequence shows as `\x1b` and cannot act on the terminal.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{KeyCode, KeyModifiers};
use crossterm::{cursor, execute, queue, terminal};
use pulldown_cmark::{CodeBlockKind, Event, Tag, TagEnd};
use unicode_width::UnicodeWidthStr;

use super::style::Style;
use super::wrap::{fill, fill_measured, Paint, Word};

/// A block that holds others, as it prefixes their lines.
#[derive(Debug)]
enum Container {
    Quote,
    List(Option<u64>),
    /// A list item: its marker, until its first line is written.
    Item(Option<String>, usize),
}

/// The table being read: its rows of cells, each cell its words.
#[derive(Debug, Default)]
struct Table {
    head: Vec<Vec<Word>>,
    rows: Vec<Vec<Vec<Word>>>,
    in_head: bool,
}

struct Renderer<'s> {
    style: &'s Style,
    width: usize,
    out: Vec<String>,
    containers: Vec<Container>,
    /// The words of the block being read, and the word being built.
    words: Vec<Word>,
    word: Word,
    /// Inline paints open (strong, emphasis, heading, code, link target).
    paints: Vec<Paint>,
    /// What to add when an open link or image ends.
    ends: Vec<String>,
    heading: Option<u8>,
    code: Option<String>,
    table: Option<Table>,
}

impl Renderer<'_> {
    fn paint(&self) -> Paint {
        self.paints.last().copied().unwrap_or(Paint::Plain)
    }

    fn in_item(&self) -> bool {
        self.containers
            .iter()
            .any(|c| matches!(c, Container::Item(..)))
    }

    /// The first-line and continuation prefixes of the next line, with their widths;
    /// takes the marker of an item whose first line this is.
    fn prefixes(&mut self) -> ((String, usize), (String, usize)) {
        let bar = self.style.dim("┃");
        let (mut first, mut rest) = ((String::new(), 0), (String::new(), 0));
        for c in &mut self.containers {
            match c {
                Container::Quote => {
                    for p in [&mut first, &mut rest] {
                        p.0.push_str(&format!("  {bar} "));
                        p.1 += 4;
                    }
                }
                Container::List(_) => {}
                Container::Item(marker, w) => {
                    let pad = " ".repeat(*w);
                    match marker.take() {
                        Some(m) => {
                            first.0.push_str(&format!("  {m} "));
                            first.1 += *w;
                        }
                        None => {
                            first.0.push_str(&pad);
                            first.1 += *w;
                        }
                    }
                    rest.0.push_str(&pad);
                    rest.1 += *w;
                }
            }
        }
        (first, rest)
    }

    /// A blank line before a new block, unless inside a list item (tight) or at the top.
    fn gap(&mut self) {
        if !self.in_item() && self.out.last().is_some_and(|l| !l.trim().is_empty()) {
            self.out.push(String::new());
        }
    }

    fn end_word(&mut self) {
        if !self.word.is_empty() {
            let w = std::mem::take(&mut self.word);
            self.words.push(w);
        }
    }

    fn push_text(&mut self, t: &str) {
        let paint = self.paint();
        for c in t.chars() {
            if c.is_whitespace() {
                self.end_word();
            } else {
                let mut b = [0u8; 4];
                self.word.push(c.encode_utf8(&mut b), paint);
            }
        }
    }

    /// Write the words read so far as wrapped lines under the current prefixes.
    fn flush(&mut self) {
        self.end_word();
        if self.words.is_empty() {
            return;
        }
        if self.table.is_some() {
            // Inside a table the words are a cell's, taken at the cell's end.
            return;
        }
        let words = std::mem::take(&mut self.words);
        let (first, rest) = self.prefixes();
        let lines = fill(
            &words,
            (&first.0, first.1),
            (&rest.0, rest.1),
            self.width,
            self.style,
        );
        self.out.extend(lines);
    }

    fn line(&mut self, s: String) {
        let (first, _) = self.prefixes();
        self.out.push(format!("{}{s}", first.0));
    }

    /// A code block: its language (a fenced block's info) on a line of its own, then its
    /// text, taken whole until it ends.
    fn open_code_block(&mut self, kind: &CodeBlockKind<'_>) {
        self.flush();
        self.gap();
        if let CodeBlockKind::Fenced(info) = kind {
            let lang = info.trim();
            if !lang.is_empty() {
                let l = self.style.dim(&format!("  ┌ {lang}"));
                self.line(l);
            }
        }
        self.code = Some(String::new());
    }

    /// A list item, marked with its number in an ordered list (counting on), else a bullet.
    fn open_item(&mut self) {
        self.flush();
        let marker = match self.containers.last_mut() {
            Some(Container::List(Some(n))) => {
                let m = format!("{n}.");
                *n += 1;
                m
            }
            _ => "•".to_string(),
        };
        let w = marker.width() + 3;
        self.containers.push(Container::Item(Some(marker), w));
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => {
                if self.table.is_none() {
                    self.gap()
                }
            }
            Tag::Heading { level, .. } => {
                self.flush();
                self.gap();
                self.heading = Some(level as u8);
                self.paints.push(Paint::Heading);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.gap();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => self.open_code_block(&kind),
            Tag::List(start) => {
                self.flush();
                if !self.in_item() {
                    self.gap();
                }
                self.containers.push(Container::List(start));
            }
            Tag::Item => self.open_item(),
            Tag::Emphasis | Tag::Strong => self.paints.push(Paint::Bold),
            Tag::Strikethrough => {
                self.push_text("~~");
                self.ends.push("~~".into());
            }
            Tag::Table(_) => {
                self.flush();
                self.gap();
                self.table = Some(Table::default());
            }
            Tag::TableHead => {
                if let Some(t) = self.table.as_mut() {
                    t.in_head = true;
                }
            }
            Tag::TableRow => {
                if let Some(t) = self.table.as_mut() {
                    t.rows.push(Vec::new());
                }
            }
            Tag::TableCell => self.end_word(),
            Tag::Link {
                dest_url, title, ..
            } => {
                let mut end = String::new();
                if !dest_url.is_empty() {
                    end.push_str(&format!("<{dest_url}>"));
                }
                self.ends.push(end + &titled(&title));
            }
            Tag::Image {
                dest_url, title, ..
            } => {
                self.push_text("[image: ");
                self.ends.push(format!("] <{dest_url}>") + &titled(&title));
            }
            Tag::FootnoteDefinition(label) => {
                self.flush();
                self.gap();
                self.push_text(&format!("[{label}]:"));
                self.end_word();
            }
            Tag::HtmlBlock => {
                self.flush();
                self.gap();
            }
            Tag::MetadataBlock(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript => {}
        }
    }

    fn end(&mut self, end: TagEnd) {
        match end {
            TagEnd::Paragraph => {
                if self.table.is_none() {
                    self.flush()
                }
            }
            TagEnd::Heading(_) => {
                self.end_word();
                let plain: String = self
                    .words
                    .iter()
                    .map(|w| w.plain())
                    .collect::<Vec<_>>()
                    .join(" ");
                self.flush();
                self.paints.pop();
                if let Some(level) = self.heading.take() {
                    if !self.style.color && level <= 2 {
                        let c = if level == 1 { "=" } else { "-" };
                        let u = c.repeat(plain.width().min(self.width));
                        self.line(u);
                    }
                }
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::CodeBlock => {
                let code = self.code.take().unwrap_or_default();
                let bar = self.style.dim("│");
                for l in code.trim_end_matches('\n').split('\n') {
                    let l = self.style.code(l);
                    self.line(format!("  {bar} {l}"));
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Item => {
                self.flush();
                if let Some(Container::Item(Some(_), _)) = self.containers.last() {
                    // An empty item still shows its marker.
                    self.line(String::new());
                }
                self.containers.pop();
            }
            TagEnd::Emphasis | TagEnd::Strong => {
                self.paints.pop();
            }
            TagEnd::Strikethrough => {
                let e = self.ends.pop().unwrap_or_default();
                self.push_text(&e);
            }
            TagEnd::TableCell => {
                self.end_word();
                let words = std::mem::take(&mut self.words);
                if let Some(t) = self.table.as_mut() {
                    if t.in_head {
                        t.head.push(words);
                    } else if let Some(row) = t.rows.last_mut() {
                        row.push(words);
                    }
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = self.table.as_mut() {
                    t.in_head = false;
                }
            }
            TagEnd::TableRow => {}
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table_lines(t);
                }
            }
            TagEnd::Link => {
                let e = self.ends.pop().unwrap_or_default();
                if !e.is_empty() {
                    self.end_word();
                    self.paints.push(Paint::Dim);
                    self.push_text(&e);
                    self.paints.pop();
                }
            }
            TagEnd::Image => {
                let e = self.ends.pop().unwrap_or_default();
                self.push_text(&e);
            }
            TagEnd::FootnoteDefinition | TagEnd::HtmlBlock => self.flush(),
            TagEnd::MetadataBlock(_)
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::Superscript
            | TagEnd::Subscript => {}
        }
    }

    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(end) => self.end(end),
            Event::Text(t) => match self.code.as_mut() {
                Some(code) => code.push_str(&t),
                None => self.push_text(&t),
            },
            Event::Code(c) => {
                let shown = if self.style.color {
                    c.to_string()
                } else {
                    format!("`{c}`")
                };
                // A code span is one word: never broken (unless wider than a line).
                self.word.push(&shown, Paint::Code);
            }
            Event::InlineMath(m) | Event::DisplayMath(m) => self.word.push(&m, Paint::Code),
            Event::Html(h) => {
                self.flush();
                let (first, _) = self.prefixes();
                for l in h.trim_end_matches('\n').split('\n') {
                    self.out.push(format!("{}{}", first.0, self.style.code(l)));
                }
            }
            Event::InlineHtml(h) => self.push_text(&h),
            Event::FootnoteReference(r) => self.push_text(&format!("[^{r}]")),
            Event::SoftBreak => self.end_word(),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.gap();
                let r = self.style.dim(&"─".repeat(self.width.min(60)));
                self.line(r);
            }
            Event::TaskListMarker(done) => {
                if let Some(Container::Item(marker, _)) = self.containers.last_mut() {
                    *marker = Some(if done { "☑" } else { "☐" }.to_string());
                    if let Some(Container::Item(_, w)) = self.containers.last_mut() {
                        *w = 4;
                    }
                }
            }
        }
    }

    /// A table too wide for the screen, each row as `header: value` lines under `prefix`
    /// (its text and width).
    fn table_as_fields(&mut self, t: &Table, prefix: (&str, usize)) {
        let (pre, w) = prefix;
        let heads: Vec<String> = t
            .head
            .iter()
            .map(|c| c.iter().map(Word::plain).collect::<Vec<_>>().join(" "))
            .collect();
        for (r, row) in t.rows.iter().enumerate() {
            if r > 0 {
                self.out.push(String::new());
            }
            for (k, cell) in row.iter().enumerate() {
                let h = heads.get(k).cloned().unwrap_or_default();
                let mut words = vec![Word::new(&format!("{h}:"), Paint::Bold)];
                words.extend(cell.iter().cloned());
                let lines = fill(
                    &words,
                    (pre, w),
                    (&format!("{pre}    "), w + 4),
                    self.width,
                    self.style,
                );
                self.out.extend(lines);
            }
        }
    }

    /// Draw a table: box lines with columns narrowed to fit (cells wrapped at words),
    /// or `header: value` lines per row when even narrowed columns cannot fit.
    fn table_lines(&mut self, t: Table) {
        let (first, _) = self.prefixes();
        let room = self.width.saturating_sub(first.1);
        let cols = t
            .rows
            .iter()
            .map(Vec::len)
            .chain([t.head.len()])
            .max()
            .unwrap_or(0);
        if cols == 0 {
            return;
        }
        let widths = column_widths(&t, cols, room);
        let pre = first.0;
        if table_width(&widths) > room {
            // Too many columns for the screen: each row as "header: value" lines.
            self.table_as_fields(&t, (&pre, first.1));
            return;
        }
        let dim = |s: &str| self.style.dim(s);
        let rule = |l: &str, m: &str, r: &str| -> String {
            let segs: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            format!("{pre}{}", dim(&format!("{l}{}{r}", segs.join(m))))
        };
        let mut lines = vec![rule("┌", "┬", "┐")];
        let bar = dim("│");
        let row_lines = |row: &Vec<Vec<Word>>, head: bool| -> Vec<String> {
            let cells: Vec<Vec<(String, usize)>> = (0..cols)
                .map(|k| {
                    let words: Vec<Word> = row
                        .get(k)
                        .cloned()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|w| if head { w.repainted(Paint::Bold) } else { w })
                        .collect();
                    fill_measured(&words, ("", 0), ("", 0), widths[k], self.style)
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            (0..height)
                .map(|i| {
                    let mut l = format!("{pre}{bar}");
                    for (k, cell) in cells.iter().enumerate() {
                        let (text, w) = cell.get(i).cloned().unwrap_or_default();
                        l.push_str(&format!(
                            " {text}{} {bar}",
                            " ".repeat(widths[k].saturating_sub(w))
                        ));
                    }
                    l
                })
                .collect()
        };
        lines.extend(row_lines(&t.head, true));
        lines.push(rule("├", "┼", "┤"));
        for row in &t.rows {
            lines.extend(row_lines(row, false));
        }
        lines.push(rule("└", "┴", "┘"));
        self.out.extend(lines);
    }
}

/// Render Markdown `text` into terminal lines at most `width` columns wide.
pub fn render(text: &str, width: usize, style: &Style) -> Vec<String> {
    let plan = crate::markdown::parse(text);
    let mut r = Renderer {
        style,
        width: width.max(20),
        out: Vec::new(),
        containers: Vec::new(),
        words: Vec::new(),
        word: Word::default(),
        paints: Vec::new(),
        ends: Vec::new(),
        heading: None,
        code: None,
        table: None,
    };
    for ev in plan.events {
        r.event(ev);
    }
    r.flush();
    if !plan.definitions.is_empty() {
        r.gap();
        r.out.push(style.dim("Link definitions in the plan:"));
        for d in &plan.definitions {
            let mut words = super::wrap::words(&format!("[{}]:", d.label), Paint::Plain);
            words.push(Word::new(&format!("<{}>", d.dest), Paint::Dim));
            if let Some(t) = &d.title {
                words.extend(super::wrap::words(&format!("“{t}”"), Paint::Plain));
            }
            r.out
                .extend(fill(&words, ("  ", 2), ("    ", 4), r.width, style));
        }
    }
    let mut out = r.out;
    // No blank lines at either end.
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    while out.first().is_some_and(|l| l.trim().is_empty()) {
        out.remove(0);
    }
    out
}

/// The terminal's size, or 80×24 when it reports none (a pseudo-terminal without a
/// window size).
pub fn terminal_size() -> (usize, usize) {
    match terminal::size() {
        Ok((w, h)) if w > 0 && h > 0 => (w as usize, h as usize),
        _ => (80, 24),
    }
}

/// What the pager ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PagerEnd {
    /// The reader finished (read to the end, or pressed `q`).
    Done,
    /// Ctrl-C.
    Interrupted,
    /// The session cannot go on (its lease could not be taken back).
    Ended,
}

/// Show `lines` one screen at a time on the alternate screen: Space/PgDn a page, Enter/j/↓
/// a line, b/PgUp back, g/G start/end, q/Esc done. Only q and Esc leave: at the end of the
/// text Space and Enter do nothing, so a held key can never leave the pager and fall
/// through to the decision below it. Returns when the reader is done; Ctrl-C is reported,
/// not raised, so the caller can release its lease.
pub fn page(
    title: &str,
    lines: &[String],
    style: &Style,
    idle: Option<&dyn super::input::Idle>,
) -> std::io::Result<PagerEnd> {
    let mut err = std::io::stderr();
    terminal::enable_raw_mode()?;
    IN_PAGER.store(true, Ordering::SeqCst);
    let result = (|| {
        execute!(err, terminal::EnterAlternateScreen, cursor::Hide)?;
        let mut top = 0usize;
        loop {
            let (_, rows) = terminal_size();
            let height = rows.saturating_sub(2).max(3);
            let last_top = lines.len().saturating_sub(height);
            top = top.min(last_top);
            queue!(
                err,
                terminal::Clear(terminal::ClearType::All),
                cursor::MoveTo(0, 0)
            )?;
            let (cols, _) = terminal_size();
            let title = crate::output::ellipsize(title, cols.saturating_sub(1).max(10));
            write!(err, "{}\r\n", style.heading(&title))?;
            for l in lines.iter().skip(top).take(height) {
                write!(err, "{l}\r\n")?;
            }
            let end = (top + height).min(lines.len());
            let at_end = end >= lines.len();
            let status = if at_end {
                format!(
                    "-- lines {}-{} of {} (end) · b: back · q: done --",
                    top + 1,
                    end,
                    lines.len()
                )
            } else {
                format!(
                    "-- lines {}-{} of {} · Space: more · b: back · q: done --",
                    top + 1,
                    end,
                    lines.len()
                )
            };
            write!(err, "{}", style.dim(&status))?;
            if let Some(note) = idle.and_then(|i| i.note()) {
                write!(err, "  {}", style.warn(&note))?;
            }
            err.flush()?;
            let key = match super::input::next(idle)? {
                super::input::Input::Key(k) => k,
                super::input::Input::Redraw => continue,
                super::input::Input::Ended => return Ok(PagerEnd::Ended),
            };
            match key.code {
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Ok(PagerEnd::Interrupted)
                }
                KeyCode::Char('q') | KeyCode::Esc => return Ok(PagerEnd::Done),
                // At the end these stay put (`top` is clamped above).
                KeyCode::Char(' ') | KeyCode::PageDown | KeyCode::Char('f') => top += height,
                KeyCode::Enter | KeyCode::Down | KeyCode::Char('j') => top += 1,
                KeyCode::Char('b') | KeyCode::PageUp => top = top.saturating_sub(height),
                KeyCode::Up | KeyCode::Char('k') => top = top.saturating_sub(1),
                KeyCode::Char('g') | KeyCode::Home => top = 0,
                KeyCode::Char('G') | KeyCode::End => top = last_top,
                _ => {}
            }
        }
    })();
    let _ = execute!(err, cursor::Show, terminal::LeaveAlternateScreen);
    IN_PAGER.store(false, Ordering::SeqCst);
    let _ = terminal::disable_raw_mode();
    result
}

/// Whether the pager holds the alternate screen (a signal handler must leave it; leaving
/// it when not in it would move the cursor to where it was saved).
pub fn in_pager() -> bool {
    IN_PAGER.load(Ordering::SeqCst)
}

static IN_PAGER: AtomicBool = AtomicBool::new(false);

/// The widths of a table's `cols` columns: each cell's natural width, the widest column
/// narrowed one at a time (down to a floor) while the table is wider than `room`.
fn column_widths(t: &Table, cols: usize, room: usize) -> Vec<usize> {
    const NARROWEST: usize = 8;
    let natural = |cell: &Vec<Word>| -> usize {
        cell.iter().map(Word::width).sum::<usize>() + cell.len().saturating_sub(1)
    };
    let mut widths = vec![1usize; cols];
    for row in std::iter::once(&t.head).chain(&t.rows) {
        for (k, cell) in row.iter().enumerate() {
            widths[k] = widths[k].max(natural(cell));
        }
    }
    while table_width(&widths) > room {
        let (k, &w) = widths
            .iter()
            .enumerate()
            .max_by_key(|(_, w)| **w)
            .expect("a column");
        if w <= NARROWEST {
            break;
        }
        widths[k] = w - 1;
    }
    widths
}

/// A table's width with columns `widths` wide: each cell padded by a space either side,
/// and a bar between and around them.
fn table_width(widths: &[usize]) -> usize {
    widths.iter().sum::<usize>() + 3 * widths.len() + 1
}

/// A link's or image's title as it follows it (` “title”`), or nothing.
fn titled(title: &str) -> String {
    if title.is_empty() {
        String::new()
    } else {
        format!(" “{title}”")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_lists_and_code_render_plainly_without_colour() {
        let md = "# Plan\n\n1. Add **column**\n2. use `ALTER TABLE`\n\n- [ ] backfill\n\n```sql\nSELECT 1;\n```\n> careful\n\n---\n";
        let out = render(md, 80, &Style::PLAIN);
        assert_eq!(
            out,
            vec![
                "Plan",
                "====",
                "",
                "  1. Add column",
                "  2. use `ALTER TABLE`",
                "",
                "  ☐ backfill",
                "",
                "  ┌ sql",
                "  │ SELECT 1;",
                "",
                "  ┃ careful",
                "",
                &"─".repeat(60),
            ]
        );
    }

    #[test]
    fn long_lines_wrap_under_their_bullet() {
        let md = "- one two three four five six seven eight nine ten";
        let out = render(md, 20, &Style::PLAIN);
        assert!(out.len() > 1, "{out:?}");
        assert!(out[0].starts_with("  • one"));
        for l in &out[1..] {
            assert!(l.starts_with("    "), "{l:?}");
        }
        let words: Vec<&str> = out.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(words.len(), 11, "nothing is dropped: {out:?}");
    }

    #[test]
    fn unclosed_markers_are_kept() {
        assert_eq!(
            render("a **b and `c", 80, &Style::PLAIN),
            vec!["a **b and `c"]
        );
    }

    #[test]
    fn punctuation_stays_attached_to_painted_words() {
        assert_eq!(
            render("use `x`, then **y**.", 80, &Style::PLAIN),
            vec!["use `x`, then y."]
        );
        let coloured = render("**y**.", 80, &Style { color: true });
        assert!(coloured[0].ends_with('.') && coloured[0].contains('\u{1b}'));
    }

    #[test]
    fn tables_are_drawn_and_links_show_their_target() {
        let md = "| step | risk |\n|---|---|\n| backfill | load |\n| switch | none |\n\nSee [the runbook](https://example.org/runbook).\n";
        let out = render(md, 80, &Style::PLAIN);
        assert_eq!(
            out,
            vec![
                "┌──────────┬──────┐",
                "│ step     │ risk │",
                "├──────────┼──────┤",
                "│ backfill │ load │",
                "│ switch   │ none │",
                "└──────────┴──────┘",
                "",
                "See the runbook <https://example.org/runbook>.",
            ]
        );
    }

    #[test]
    fn a_wide_table_wraps_its_cells_and_a_too_wide_one_becomes_records() {
        let md = "| what | why |\n|---|---|\n| add the new column beside the old one | so reads keep working while it fills |\n";
        let out = render(md, 40, &Style::PLAIN);
        assert!(out.iter().all(|l| l.width() <= 40), "{out:#?}");
        assert!(out.len() > 5, "cells wrapped: {out:#?}");
        let text: String = out.join(" ");
        for w in ["add", "column", "beside", "fills"] {
            assert!(text.contains(w), "{w}: {out:#?}");
        }
        let many = format!(
            "|{}\n|{}\n|{}\n",
            "h|".repeat(8),
            "-|".repeat(8),
            "value|".repeat(8)
        );
        let out = render(&many, 30, &Style::PLAIN);
        assert!(out.iter().all(|l| l.width() <= 30), "{out:#?}");
        assert!(out.iter().any(|l| l == "h: value"), "{out:#?}");
    }

    #[test]
    fn hostile_targets_and_definitions_stay_visible_text() {
        let out = render(
            "[x](javascript:alert(1)) \u{1b}]8;;https://evil\u{7}\n\n[hidden]: https://example.org \"sneaky\"\n",
            80,
            &Style { color: true },
        );
        let all = out.join("\n");
        assert!(all.contains("<javascript:alert(1)>"), "{all}");
        assert!(all.contains("\\x1b]8;;https://evil\\x07"), "{all}");
        assert!(all.contains("sneaky") && all.contains("[hidden]"), "{all}");
        // No OSC sequence and no BEL reach the terminal; only colour (CSI ... m) does.
        assert!(
            !all.contains("\u{1b}]") && !all.contains('\u{7}'),
            "{all:?}"
        );
    }
}
