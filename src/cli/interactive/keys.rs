//! Single-key choices: the list the screen chooses from, drawn and read with crossterm's
//! raw-mode key events, and `$EDITOR` for long text.
//!
//! inquire's `Select` reads only its own keys (arrows, Enter, Esc, typing to filter), so
//! a number key could not pick and no key could skip, leave a request for later, quit or
//! open the asker's context. This list is the one step that needed those keys; it is
//! small (draw the visible window, redraw in place on each key), so it is written on
//! crossterm directly rather than bringing in a full-screen UI (ratatui) for one widget.
//! The other prompts (multi-select, text, the y/N confirm) stay inquire's.

use std::io::Write;
use std::path::PathBuf;

use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::{cursor, queue, terminal};

use super::style::Style;

/// What a key did in [`select`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// An item was chosen (Enter on it, or its number).
    Pick(usize),
    /// Esc.
    Esc,
    /// One of the action keys the caller offered.
    Action(char),
    /// Ctrl-C.
    Interrupted,
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

/// Choose one of `items` on stderr: ↑↓ (and PageUp/PageDown, Home/End) move, Enter
/// chooses, `1`–`9` choose that item at once, Esc, Ctrl-C, and each char of `actions`
/// returns at once. `page` is how many items show at a time.
pub fn select(
    message: &str,
    items: &[String],
    help: &str,
    start: usize,
    actions: &str,
    page: usize,
    style: &Style,
) -> std::io::Result<Key> {
    let n = items.len();
    if n == 0 {
        return Ok(Key::Esc);
    }
    let page = page.clamp(1, n.max(1));
    let mut at = start.min(n.saturating_sub(1));
    let mut top = at.saturating_sub(page - 1);
    let mut drawn = 0u16;
    let mut err = std::io::stderr();
    terminal::enable_raw_mode()?;
    let result = (|| -> std::io::Result<Key> {
        loop {
            let (cols, _) = super::markdown::terminal_size();
            let width = cols.saturating_sub(1).max(10);
            if at < top {
                top = at;
            }
            if at >= top + page {
                top = at + 1 - page;
            }
            let mut lines = vec![format!(
                "{} {}",
                style.accent("?"),
                style.bold(&fit(message, width.saturating_sub(2)))
            )];
            for (k, item) in items.iter().enumerate().skip(top).take(page) {
                let num = if k < 9 {
                    format!("{}", k + 1)
                } else {
                    " ".into()
                };
                let line = fit(
                    &format!("{num} {} {item}", if k == at { ">" } else { " " }),
                    width,
                );
                lines.push(if k == at { style.accent(&line) } else { line });
            }
            lines.push(style.dim(&fit(&format!("[{help}]"), width)));
            if drawn > 0 {
                queue!(err, cursor::MoveUp(drawn))?;
            }
            queue!(
                err,
                cursor::MoveToColumn(0),
                terminal::Clear(terminal::ClearType::FromCursorDown)
            )?;
            write!(err, "{}", lines.join("\r\n"))?;
            err.flush()?;
            drawn = (lines.len() - 1) as u16;
            let Event::Key(key) = event::read()? else {
                continue;
            };
            if key.kind != KeyEventKind::Press {
                continue;
            }
            match key.code {
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => {
                    return Ok(Key::Interrupted)
                }
                KeyCode::Up => at = at.checked_sub(1).unwrap_or(n - 1),
                KeyCode::Down => at = if at + 1 >= n { 0 } else { at + 1 },
                KeyCode::PageUp => at = at.saturating_sub(page),
                KeyCode::PageDown => at = (at + page).min(n - 1),
                KeyCode::Home => at = 0,
                KeyCode::End => at = n - 1,
                KeyCode::Enter => return Ok(Key::Pick(at)),
                KeyCode::Esc => return Ok(Key::Esc),
                KeyCode::Char(c @ '1'..='9') if (c as usize - '1' as usize) < n => {
                    return Ok(Key::Pick(c as usize - '1' as usize))
                }
                KeyCode::Char(c) if actions.contains(c) => return Ok(Key::Action(c)),
                _ => {}
            }
        }
    })();
    // Leave one line saying what was chosen, as inquire does.
    if drawn > 0 {
        let _ = queue!(err, cursor::MoveUp(drawn));
    }
    let _ = queue!(
        err,
        cursor::MoveToColumn(0),
        terminal::Clear(terminal::ClearType::FromCursorDown)
    );
    if let Ok(Key::Pick(k)) = result {
        let _ = write!(
            err,
            "{} {} {}\r\n",
            style.accent(">"),
            message,
            fit(&items[k], 200)
        );
    }
    let _ = err.flush();
    let _ = terminal::disable_raw_mode();
    result
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
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{} \"$1\"", editor()))
        .arg("sh")
        .arg(&path)
        .status();
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
    use super::fit;

    #[test]
    fn fit_cuts_to_the_width_with_an_ellipsis() {
        assert_eq!(fit("abc", 5), "abc");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("ééééé", 5), "ééééé");
    }
}
