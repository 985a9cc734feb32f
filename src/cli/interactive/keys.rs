//! Every key the screen reads: the lists it chooses from (one item, or several with
//! toggles), a line of text, the y/N confirm, all drawn and read with crossterm's
//! raw-mode key events; and `$EDITOR` for long text.
//!
//! inquire's prompts read their own keys inside the library: a number key could not
//! pick, no key could skip, leave a request for later, quit or open the asker's context,
//! and (what made the rest move here too) the session could not see whether the reviewer
//! was at the screen, so an idle screen could not give its lease up and take it back on
//! the next key. Each prompt here reads through [`next`] ([`super::input`]), which
//! asks the session's [`Idle`] watch how long to wait and hands it every key first. The
//! prompts are small (draw the visible lines, redraw them in place on each key), so they
//! are written on crossterm directly rather than bringing in a full-screen UI (ratatui)
//! for them.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{self, KeyCode, KeyModifiers};
use crossterm::{cursor, queue, terminal};

use super::input::is_ctrl_c;
pub use super::input::{next, Idle, Input, Seen};
use super::style::Style;
use super::wrap;

/// Wait up to `within` for a key with the terminal in raw mode (the follow loop's wait
/// after the lease was given up). `None` when none came.
pub fn key_within(within: Duration, idle: &dyn Idle) -> std::io::Result<Option<Got<()>>> {
    terminal::enable_raw_mode()?;
    let got = (|| {
        if !event::poll(within)? {
            return Ok(None);
        }
        Ok(match next(Some(idle))? {
            Input::Key(k) if is_ctrl_c(&k) => Some(Got::Interrupted),
            Input::Key(_) | Input::Redraw => Some(Got::Value(())),
            Input::Ended => Some(Got::Ended),
        })
    })();
    let _ = terminal::disable_raw_mode();
    got
}

/// What a prompt returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got<T> {
    /// The reviewer chose (an item, the ticked items, the text, yes or no).
    Value(T),
    /// Esc.
    Esc,
    /// One of the action keys the caller offered.
    Action(char),
    /// Ctrl-C.
    Interrupted,
    /// The session cannot go on (the idle watch could not take the lease back).
    Ended,
}

/// Cut `s` to `width` characters (items are already escaped, so no control character
/// can make a line wider than it counts; a double-width character still counts one, so
/// a list of wide text may redraw a line short).
fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A prompt's lines on stderr, redrawn in place: the first paint writes them, each
/// later one moves back to the first line, clears below and writes them again.
struct Canvas {
    err: std::io::Stderr,
    /// The line the cursor is on, counted from the prompt's first line.
    row: u16,
}

impl Canvas {
    fn new() -> Canvas {
        Canvas {
            err: std::io::stderr(),
            row: 0,
        }
    }

    /// Draw `lines` (each fitted to the width by the caller), leaving the cursor at
    /// `cursor` (line, column) or at the end of the last line.
    fn paint(&mut self, lines: &[String], cursor: Option<(u16, u16)>) -> std::io::Result<()> {
        let err = &mut self.err;
        if self.row > 0 {
            queue!(err, cursor::MoveUp(self.row))?;
        }
        queue!(
            err,
            cursor::MoveToColumn(0),
            terminal::Clear(terminal::ClearType::FromCursorDown)
        )?;
        write!(err, "{}", lines.join("\r\n"))?;
        let last = lines.len().saturating_sub(1) as u16;
        self.row = last;
        if let Some((line, col)) = cursor {
            if last > line {
                queue!(err, cursor::MoveUp(last - line))?;
            }
            queue!(err, cursor::MoveToColumn(col))?;
            self.row = line;
        }
        err.flush()
    }

    /// Clear the prompt and leave `summary` (what was chosen, after a `>`) in its place,
    /// wrapped at words to the width.
    fn close(&mut self, summary: Option<String>, style: &Style) {
        let err = &mut self.err;
        if self.row > 0 {
            let _ = queue!(err, cursor::MoveUp(self.row));
        }
        let _ = queue!(
            err,
            cursor::MoveToColumn(0),
            terminal::Clear(terminal::ClearType::FromCursorDown)
        );
        if let Some(s) = summary {
            let mut words = vec![super::wrap::Word::new(">", super::wrap::Paint::Accent)];
            words.extend(super::wrap::words(&s, super::wrap::Paint::Plain));
            for l in super::wrap::fill(&words, ("", 0), ("  ", 2), width(), style) {
                let _ = write!(err, "{l}\r\n");
            }
        }
        let _ = err.flush();
    }
}

/// The width a prompt may fill (one column spare, so no line wraps).
fn width() -> usize {
    let (cols, _) = super::markdown::terminal_size();
    cols.saturating_sub(1).max(10)
}

/// The help lines (wrapped at their hints) and, when the idle watch has one, its note,
/// fitted to `width`.
fn footer(help: &str, idle: Option<&dyn Idle>, style: &Style, width: usize) -> Vec<String> {
    // The hints wrap at their separators, so every key stays readable at any width.
    let mut hints: Vec<String> = help.split(" · ").map(str::to_string).collect();
    if let Some(h) = hints.first_mut() {
        h.insert(0, '[');
    }
    if let Some(h) = hints.last_mut() {
        h.push(']');
    }
    let units = hints
        .iter()
        .map(|h| super::wrap::Word::new(h, super::wrap::Paint::Dim))
        .collect();
    let mut lines = super::wrap::joined(units, " · ", 1, width, style);
    if let Some(note) = idle.and_then(|i| i.note()) {
        lines.push(style.warn(&fit(&note, width)));
    }
    lines
}

/// Run `body` in raw mode, whatever it returns.
fn raw<T>(body: impl FnOnce() -> std::io::Result<T>) -> std::io::Result<T> {
    terminal::enable_raw_mode()?;
    let r = body();
    let _ = terminal::disable_raw_mode();
    r
}

/// Where a list's cursor goes for a movement key; `None` when `code` does not move.
fn moved(code: KeyCode, at: usize, n: usize, page: usize) -> Option<usize> {
    Some(match code {
        KeyCode::Up => at.checked_sub(1).unwrap_or(n - 1),
        KeyCode::Down => {
            if at + 1 >= n {
                0
            } else {
                at + 1
            }
        }
        KeyCode::PageUp => at.saturating_sub(page),
        KeyCode::PageDown => (at + page).min(n - 1),
        KeyCode::Home => 0,
        KeyCode::End => n - 1,
        _ => return None,
    })
}

/// The item a number key names (`1`–`9`), when there is one.
fn numbered(code: KeyCode, n: usize) -> Option<usize> {
    match code {
        KeyCode::Char(c @ '1'..='9') if (c as usize - '1' as usize) < n => {
            Some(c as usize - '1' as usize)
        }
        _ => None,
    }
}

/// The window of a list: `page` items around `at`, each numbered (1–9) and marked. An
/// item wider than the terminal wraps at words with a hanging indent under its text (a
/// long label or description is never cut: the asker's words are all shown).
fn list_lines(
    items: &[String],
    at: usize,
    top: &mut usize,
    page: usize,
    width: usize,
    style: &Style,
    mark: impl Fn(usize) -> String,
) -> Vec<String> {
    if at < *top {
        *top = at;
    }
    if at >= *top + page {
        *top = at + 1 - page;
    }
    items
        .iter()
        .enumerate()
        .skip(*top)
        .take(page)
        .flat_map(|(k, item)| {
            let num = if k < 9 {
                format!("{}", k + 1)
            } else {
                " ".into()
            };
            let prefix = format!("{num} {} {}", if k == at { ">" } else { " " }, mark(k));
            let indent = prefix.chars().count();
            let pad = " ".repeat(indent);
            let lines = wrap::fill(
                &wrap::words(item, wrap::Paint::Plain),
                (&prefix, indent),
                (&pad, indent),
                width,
                style,
            );
            lines
                .into_iter()
                .map(|line| if k == at { style.accent(&line) } else { line })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Choose one of `items` on stderr: ↑↓ (and PageUp/PageDown, Home/End) move, Enter
/// chooses, `1`–`9` choose that item at once, Esc, Ctrl-C, and each char of `actions`
/// returns at once. `page` is how many items show at a time.
#[allow(clippy::too_many_arguments)]
pub fn select(
    message: &str,
    items: &[String],
    help: &str,
    start: usize,
    actions: &str,
    page: usize,
    style: &Style,
    idle: Option<&dyn Idle>,
) -> std::io::Result<Got<usize>> {
    let n = items.len();
    if n == 0 {
        return Ok(Got::Esc);
    }
    let page = page.clamp(1, n);
    let mut at = start.min(n - 1);
    let mut top = at.saturating_sub(page - 1);
    let mut canvas = Canvas::new();
    let result = raw(|| loop {
        let width = width();
        let mut lines = vec![format!(
            "{} {}",
            style.accent("?"),
            style.bold(&fit(message, width.saturating_sub(2)))
        )];
        lines.extend(list_lines(items, at, &mut top, page, width, style, |_| {
            String::new()
        }));
        lines.extend(footer(help, idle, style, width));
        canvas.paint(&lines, None)?;
        let key = match next(idle)? {
            Input::Key(k) => k,
            Input::Redraw => continue,
            Input::Ended => return Ok(Got::Ended),
        };
        if is_ctrl_c(&key) {
            return Ok(Got::Interrupted);
        }
        if let Some(to) = moved(key.code, at, n, page) {
            at = to;
            continue;
        }
        if let Some(k) = numbered(key.code, n) {
            return Ok(Got::Value(k));
        }
        match key.code {
            KeyCode::Enter => return Ok(Got::Value(at)),
            KeyCode::Esc => return Ok(Got::Esc),
            KeyCode::Char(c) if actions.contains(c) => return Ok(Got::Action(c)),
            _ => {}
        }
    });
    // Leave one line saying what was chosen.
    canvas.close(
        match &result {
            Ok(Got::Value(k)) => Some(format!("{message} {}", items[*k])),
            _ => None,
        },
        style,
    );
    result
}

/// Tick any of `items` on stderr: ↑↓ move, Space or an item's number (`1`–`9`) ticks or
/// unticks it, → ticks all, ← none, Enter returns the ticked indices in item order, Esc,
/// Ctrl-C and each char of `actions` return at once. `ticked` comes in as the items
/// ticked at the start and goes out as those ticked at the end, whatever ended it.
#[allow(clippy::too_many_arguments)]
pub fn multi(
    message: &str,
    items: &[String],
    help: &str,
    ticked: &mut Vec<usize>,
    actions: &str,
    page: usize,
    style: &Style,
    idle: Option<&dyn Idle>,
) -> std::io::Result<Got<Vec<usize>>> {
    let n = items.len();
    if n == 0 {
        return Ok(Got::Value(Vec::new()));
    }
    let page = page.clamp(1, n);
    let mut on: Vec<bool> = (0..n).map(|k| ticked.contains(&k)).collect();
    let mut at = 0usize;
    let mut top = 0usize;
    let mut canvas = Canvas::new();
    let result = raw(|| loop {
        let width = width();
        let mut lines = vec![format!(
            "{} {}",
            style.accent("?"),
            style.bold(&fit(message, width.saturating_sub(2)))
        )];
        lines.extend(list_lines(items, at, &mut top, page, width, style, |k| {
            if on[k] { "[x] " } else { "[ ] " }.to_string()
        }));
        lines.extend(footer(help, idle, style, width));
        canvas.paint(&lines, None)?;
        let key = match next(idle)? {
            Input::Key(k) => k,
            Input::Redraw => continue,
            Input::Ended => return Ok(Got::<Vec<usize>>::Ended),
        };
        if is_ctrl_c(&key) {
            return Ok(Got::Interrupted);
        }
        if let Some(to) = moved(key.code, at, n, page) {
            at = to;
            continue;
        }
        if let Some(k) = numbered(key.code, n) {
            at = k;
            on[k] = !on[k];
            continue;
        }
        match key.code {
            KeyCode::Char(' ') => on[at] = !on[at],
            KeyCode::Right => on.iter_mut().for_each(|t| *t = true),
            KeyCode::Left => on.iter_mut().for_each(|t| *t = false),
            KeyCode::Enter => {
                return Ok(Got::Value((0..n).filter(|&k| on[k]).collect()));
            }
            KeyCode::Esc => return Ok(Got::Esc),
            KeyCode::Char(c) if actions.contains(c) => return Ok(Got::Action(c)),
            _ => {}
        }
    });
    *ticked = (0..n).filter(|&k| on[k]).collect();
    canvas.close(
        match &result {
            Ok(Got::Value(chosen)) => Some(format!(
                "{message} {}",
                chosen
                    .iter()
                    .map(|&k| items[k].as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => None,
        },
        style,
    );
    result
}

/// A line of text on stderr, starting from `initial`: typing inserts at the cursor,
/// ←→ Home End (Ctrl-A, Ctrl-E) move, Backspace and Delete erase, Ctrl-U clears to the
/// start; Enter returns the text when `check` finds nothing wrong with it (else its
/// complaint shows under the line), Esc and Ctrl-C return at once. A line longer than
/// the screen scrolls sideways with the cursor.
pub fn line(
    message: &str,
    initial: &str,
    help: &str,
    style: &Style,
    idle: Option<&dyn Idle>,
    check: &dyn Fn(&str) -> Option<String>,
) -> std::io::Result<Got<String>> {
    line_as(message, initial, help, style, idle, check, &|s| {
        format!("{message} {}", super::style::one_line(s))
    })
}

/// [`line`], leaving `shown(text)` as the line that says what was answered (after ">").
fn line_as(
    message: &str,
    initial: &str,
    help: &str,
    style: &Style,
    idle: Option<&dyn Idle>,
    check: &dyn Fn(&str) -> Option<String>,
    shown: &dyn Fn(&str) -> String,
) -> std::io::Result<Got<String>> {
    let mut text: Vec<char> = initial.chars().collect();
    let mut at = text.len();
    let mut complaint: Option<String> = None;
    let mut canvas = Canvas::new();
    let result = raw(|| loop {
        let width = width();
        // The message keeps all but a dozen columns, which the text scrolls in.
        let message = fit(message, width.saturating_sub(12).max(10));
        let prompt = format!("? {message} ");
        let room = width.saturating_sub(prompt.chars().count()).max(2);
        let from = (at + 1).saturating_sub(room);
        let shown: String = text.iter().skip(from).take(room).collect();
        let mut lines = vec![format!(
            "{} {} {}",
            style.accent("?"),
            style.bold(&message),
            super::style::one_line(&shown)
        )];
        if let Some(c) = &complaint {
            lines.push(style.warn(&fit(c, width)));
        }
        lines.extend(footer(help, idle, style, width));
        let col = prompt.chars().count() + (at - from);
        canvas.paint(&lines, Some((0, col.min(width) as u16)))?;
        let key = match next(idle)? {
            Input::Key(k) => k,
            Input::Redraw => continue,
            Input::Ended => return Ok(Got::Ended),
        };
        if is_ctrl_c(&key) {
            return Ok(Got::Interrupted);
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Enter => {
                let s: String = text.iter().collect();
                match check(&s) {
                    None => return Ok(Got::Value(s)),
                    Some(c) => complaint = Some(c),
                }
            }
            KeyCode::Esc => return Ok(Got::Esc),
            KeyCode::Char('a') if ctrl => at = 0,
            KeyCode::Char('e') if ctrl => at = text.len(),
            KeyCode::Char('u') if ctrl => {
                text.drain(..at);
                at = 0;
            }
            KeyCode::Char(c) if !ctrl => {
                text.insert(at, c);
                at += 1;
            }
            KeyCode::Backspace if at > 0 => {
                at -= 1;
                text.remove(at);
            }
            KeyCode::Delete if at < text.len() => {
                text.remove(at);
            }
            KeyCode::Left => at = at.saturating_sub(1),
            KeyCode::Right => at = (at + 1).min(text.len()),
            KeyCode::Home => at = 0,
            KeyCode::End => at = text.len(),
            _ => {}
        }
    });
    canvas.close(
        match &result {
            Ok(Got::Value(s)) => Some(shown(s)),
            _ => None,
        },
        style,
    );
    result
}

/// What a y/N answer means: `Some(true)` for y/yes, `Some(false)` for n/no or nothing
/// (Enter alone is no), `None` for anything else.
fn yes_no(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(true),
        "" | "n" | "no" => Some(false),
        _ => None,
    }
}

/// A yes/no question whose Enter alone means **no**: type `y` (or `yes`) and Enter.
pub fn confirm(
    message: &str,
    help: &str,
    style: &Style,
    idle: Option<&dyn Idle>,
) -> std::io::Result<Got<bool>> {
    let check = |s: &str| {
        yes_no(s)
            .is_none()
            .then(|| "type y for yes or n for no".to_string())
    };
    Ok(
        match line_as(
            &format!("{message} (y/N)"),
            "",
            help,
            style,
            idle,
            &check,
            &|s| {
                let said = if yes_no(s) == Some(true) { "Yes" } else { "No" };
                format!("{message} {said}")
            },
        )? {
            Got::Value(s) => Got::Value(yes_no(&s) == Some(true)),
            Got::Esc => Got::Esc,
            Got::Action(c) => Got::Action(c),
            Got::Interrupted => Got::Interrupted,
            Got::Ended => Got::Ended,
        },
    )
}

/// The editor to run: `$EDITOR`, then `$VISUAL`, then `vi`.
fn editor() -> String {
    ["EDITOR", "VISUAL"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".into())
}

/// Open the editor on a new private temp file holding `initial`; returns the text saved
/// (line breaks kept), or `None` when it is blank. The editor string may carry arguments
/// (`code -w`): it is run by `sh` with the file as its last argument.
pub fn edit(initial: &str) -> std::io::Result<Option<String>> {
    use std::os::unix::fs::OpenOptionsExt;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let path: PathBuf =
        std::env::temp_dir().join(format!("dshq-{}-{nanos}.md", std::process::id()));
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        f.write_all(initial.as_bytes())?;
    }
    // The editor gets the terminal as the user had it, not the session's quiet mode.
    let status = super::tty::as_found(|| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("{} \"$1\"", editor()))
            .arg("sh")
            .arg(&path)
            .status()
    });
    let text = std::fs::read_to_string(&path);
    let _ = std::fs::remove_file(&path);
    let status = status?;
    if !status.success() {
        return Err(std::io::Error::other(format!(
            "the editor exited with {status}"
        )));
    }
    let text = text?;
    Ok(if text.trim().is_empty() {
        None
    } else {
        Some(text.trim_end_matches(['\r', '\n']).to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::{fit, yes_no};

    #[test]
    fn enter_alone_is_no_and_only_y_or_yes_is_yes() {
        assert_eq!(yes_no(""), Some(false));
        assert_eq!(yes_no("n"), Some(false));
        assert_eq!(yes_no(" Yes "), Some(true));
        assert_eq!(yes_no("y"), Some(true));
        assert_eq!(yes_no("ok"), None);
    }

    #[test]
    fn fit_cuts_to_the_width_with_an_ellipsis() {
        assert_eq!(fit("abc", 5), "abc");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("ééééé", 5), "ééééé");
    }
}
