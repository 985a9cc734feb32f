//! A small Markdown renderer for a terminal, and a pager for long plans.
//!
//! A plan under review is usually Markdown written by a model: headings, lists, code
//! blocks, `inline code` and **bold**. Printed raw it is readable but noisy; this renders
//! the common block and inline forms into wrapped, optionally coloured lines. Anything it
//! does not recognise is shown as written: the reviewer must always see the whole plan,
//! so nothing is ever dropped, only decorated. A full CommonMark parser would be more
//! exact but would add a dependency for little gain on a review screen.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::{KeyCode, KeyModifiers};
use crossterm::{cursor, execute, queue, terminal};

use super::style::Style;

/// How a run of inline text is painted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Span {
    Plain,
    Bold,
    Code,
}

/// Split inline Markdown into painted runs: `**bold**`, `__bold__` and `` `code` ``.
/// Unclosed markers are kept as written.
fn inline_spans(s: &str) -> Vec<(String, Span)> {
    let mut out: Vec<(String, Span)> = Vec::new();
    let mut rest = s;
    let mut plain = String::new();
    while !rest.is_empty() {
        let found = ["**", "__", "`"].iter().find_map(|m| {
            rest.strip_prefix(m).and_then(|after| {
                after.find(m).filter(|&end| end > 0).map(|end| {
                    let span = if *m == "`" { Span::Code } else { Span::Bold };
                    (after[..end].to_string(), span, m.len() * 2 + end)
                })
            })
        });
        match found {
            Some((text, span, used)) => {
                if !plain.is_empty() {
                    out.push((std::mem::take(&mut plain), Span::Plain));
                }
                out.push((text, span));
                rest = &rest[used..];
            }
            None => {
                let c = rest.chars().next().expect("rest is not empty");
                plain.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !plain.is_empty() {
        out.push((plain, Span::Plain));
    }
    out
}

fn paint(style: &Style, text: &str, span: Span) -> String {
    match span {
        Span::Plain => text.to_string(),
        Span::Bold => style.bold(text),
        Span::Code if style.color => style.code(text),
        Span::Code => format!("`{text}`"),
    }
}

/// Word-wrap inline Markdown to `width` columns, painting each word; continuation lines
/// start with `indent`.
fn wrap(style: &Style, text: &str, first: &str, indent: &str, width: usize) -> Vec<String> {
    // Words are maximal runs without whitespace; one word may mix painted pieces
    // ("`x`," is one word), and a code span is never broken.
    let mut words: Vec<(String, usize)> = Vec::new();
    let mut word = String::new();
    let mut visible = 0usize;
    let mut piece = String::new();
    for (run, span) in inline_spans(text) {
        if span == Span::Code {
            word.push_str(&paint(style, &run, span));
            visible += run.chars().count() + if style.color { 0 } else { 2 };
            continue;
        }
        for c in run.chars() {
            if c.is_whitespace() {
                if !piece.is_empty() {
                    word.push_str(&paint(style, &std::mem::take(&mut piece), span));
                }
                if !word.is_empty() {
                    words.push((std::mem::take(&mut word), visible));
                    visible = 0;
                }
            } else {
                piece.push(c);
                visible += 1;
            }
        }
        if !piece.is_empty() {
            word.push_str(&paint(style, &std::mem::take(&mut piece), span));
        }
    }
    if !word.is_empty() {
        words.push((word, visible));
    }
    let mut lines = Vec::new();
    let mut line = first.to_string();
    let mut used = first.chars().count();
    let mut empty = true;
    for (word, n) in words {
        if !empty && used + 1 + n > width {
            lines.push(std::mem::take(&mut line));
            line = indent.to_string();
            used = indent.chars().count();
            empty = true;
        }
        if !empty {
            line.push(' ');
            used += 1;
        }
        line.push_str(&word);
        used += n;
        empty = false;
    }
    lines.push(line);
    lines
}

/// The marker and text of a list item (`- x`, `* x`, `+ x`, `1. x`, `1) x`), if it is one.
fn list_item(line: &str) -> Option<(String, &str)> {
    for m in ["- ", "* ", "+ "] {
        if let Some(rest) = line.strip_prefix(m) {
            if let Some(r) = rest.strip_prefix("[ ] ") {
                return Some(("☐".into(), r));
            }
            if let Some(r) = rest
                .strip_prefix("[x] ")
                .or_else(|| rest.strip_prefix("[X] "))
            {
                return Some(("☑".into(), r));
            }
            return Some(("•".into(), rest));
        }
    }
    let digits = line.chars().take_while(|c| c.is_ascii_digit()).count();
    if digits > 0 && digits < 10 {
        let rest = &line[digits..];
        for sep in [". ", ") "] {
            if let Some(r) = rest.strip_prefix(sep) {
                return Some((format!("{}{}", &line[..digits], sep.trim_end()), r));
            }
        }
    }
    None
}

/// Render Markdown `text` into terminal lines at most `width` columns wide (as far as
/// words allow).
pub fn render(text: &str, width: usize, style: &Style) -> Vec<String> {
    let width = width.max(20);
    let mut out: Vec<String> = Vec::new();
    let mut in_code = false;
    let text = super::style::multi_line(text);
    for raw in text.lines() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
            let lang = trimmed.trim_start_matches(['`', '~']).trim();
            if in_code && !lang.is_empty() {
                out.push(style.dim(&format!("  ┌ {lang}")));
            }
            continue;
        }
        if in_code {
            out.push(format!("  {} {}", style.dim("│"), style.code(line)));
            continue;
        }
        if trimmed.is_empty() {
            out.push(String::new());
            continue;
        }
        let indent = line.len() - trimmed.len();
        let hashes = trimmed.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(' ') {
            let title = trimmed[hashes..].trim().trim_end_matches('#').trim();
            if out.last().is_some_and(|l| !l.is_empty()) {
                out.push(String::new());
            }
            let plain: String = inline_spans(title).into_iter().map(|(t, _)| t).collect();
            out.push(style.heading(&plain));
            if !style.color && hashes <= 2 {
                let c = if hashes == 1 { "=" } else { "-" };
                out.push(c.repeat(plain.chars().count().min(width)));
            }
            continue;
        }
        if trimmed.chars().all(|c| c == '-' || c == ' ')
            && trimmed.chars().filter(|&c| c == '-').count() >= 3
            || trimmed.chars().all(|c| c == '*' || c == ' ')
                && trimmed.chars().filter(|&c| c == '*').count() >= 3
        {
            out.push(style.dim(&"─".repeat(width.min(60))));
            continue;
        }
        if let Some(q) = trimmed.strip_prefix('>') {
            let bar = style.dim("┃");
            let first = format!("  {bar} ");
            out.extend(wrap(style, q.trim_start(), &first, &first, width));
            continue;
        }
        let pad = " ".repeat(indent);
        if let Some((marker, item)) = list_item(trimmed) {
            let first = format!("{pad}  {marker} ");
            let cont = " ".repeat(first.chars().count());
            out.extend(wrap(style, item, &first, &cont, width));
            continue;
        }
        out.extend(wrap(style, trimmed, &pad, &pad, width));
    }
    // No trailing blank lines.
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
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
            write!(err, "{}\r\n", style.heading(title))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_lists_and_code_render_plainly_without_colour() {
        let md = "# Plan\n\n1. Add **column**\n- use `ALTER TABLE`\n- [ ] backfill\n\n```sql\nSELECT 1;\n```\n> careful\n---\n";
        let out = render(md, 80, &Style::PLAIN);
        assert_eq!(
            out,
            vec![
                "Plan",
                "====",
                "",
                "  1. Add column",
                "  • use `ALTER TABLE`",
                "  ☐ backfill",
                "",
                "  ┌ sql",
                "  │ SELECT 1;",
                "  ┃ careful",
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
}
