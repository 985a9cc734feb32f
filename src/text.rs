//! The one sanitiser for asker-supplied text shown to a person.
//!
//! Everything an asker writes (question text, headers, labels, meta, a file name, the raw
//! bytes of a rejected input) is untrusted wherever a person sees it. On a terminal an
//! escape sequence can retitle the window, clear the screen or forge earlier output; a
//! bidi override can make a label read backwards; a carriage return or newline can forge a
//! log line. The rule is the same on every surface: **escape it visibly, never pass it
//! through, never drop it silently**. A control character becomes a visible escape such as
//! `\x1b` or `\u{202e}`, so a reviewer sees that something odd was sent instead of having it
//! act on their screen or vanish.
//!
//! Pure: no I/O. Faces call [`one_line`] for table cells and single-line fields,
//! [`multi_line`] for blocks whose line breaks matter (a plan, a detail), and [`for_log`]
//! for values placed in log lines.

use std::borrow::Cow;

/// Is `c` a character that must never reach a person's terminal as itself?
///
/// C0 and C1 controls and DEL (`char::is_control`), the bidirectional embedding, override
/// and isolate controls, the implicit direction marks, and the line/paragraph separators,
/// which some terminals and viewers treat as line breaks.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'              // ARABIC LETTER MARK
            | '\u{200E}' | '\u{200F}' // LRM, RLM
            | '\u{202A}'..='\u{202E}' // LRE, RLE, PDF, LRO, RLO
            | '\u{2066}'..='\u{2069}' // LRI, RLI, FSI, PDI
            | '\u{2028}' | '\u{2029}' // LINE / PARAGRAPH SEPARATOR
        )
}

fn push_escaped(out: &mut String, c: char) {
    use std::fmt::Write;
    let n = c as u32;
    if n <= 0xFF {
        let _ = write!(out, "\\x{n:02x}");
    } else {
        let _ = write!(out, "\\u{{{n:x}}}");
    }
}

/// Text made safe for one line: a tab or line break becomes a space, every other unsafe
/// character a visible escape (`\x1b`, `\u{202e}`). Borrows when nothing needed escaping.
pub fn one_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' | '\t' => out.push(' '),
            '\r' => out.push(' '),
            c if is_unsafe(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Text made safe over several lines: `\n` (and `\r\n`) stay line breaks, a tab becomes a
/// space, every other unsafe character (a lone `\r` included) a visible escape.
pub fn multi_line(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_unsafe(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => out.push('\n'),
            '\t' => out.push(' '),
            c if is_unsafe(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A value for a log line: every unsafe character escaped, line breaks included, so a file
/// name with a newline cannot forge a second log line.
pub fn for_log(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe(c) => push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// An error with its causes (a TLS failure is the cause of a connect error), on one line,
/// escaped for a log.
pub fn causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(c) = next {
        out.push_str(": ");
        out.push_str(&c.to_string());
        next = c.source();
    }
    for_log(&out).into_owned()
}

/// A file name (possibly not UTF-8) for a log line or a message: lossily decoded, then
/// escaped as [`for_log`] does.
pub fn path_for_log(p: &std::path::Path) -> String {
    for_log(&p.to_string_lossy()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_shown_not_executed() {
        assert_eq!(
            one_line("Q\u{1b}]0;PWNED\u{7}\u{1b}[2J"),
            "Q\\x1b]0;PWNED\\x07\\x1b[2J"
        );
        assert_eq!(one_line("a\u{9b}b"), "a\\x9bb");
        assert_eq!(one_line("x\u{202e}y\u{2066}z"), "x\\u{202e}y\\u{2066}z");
        assert_eq!(one_line("a\r\nb\tc\rd"), "a b c d");
    }

    #[test]
    fn multi_line_keeps_line_breaks_only() {
        assert_eq!(multi_line("a\r\nb\n\u{7}c\rd"), "a\nb\n\\x07c\\x0dd");
        assert!(matches!(multi_line("plain\ntext"), Cow::Borrowed(_)));
    }

    #[test]
    fn log_values_stay_on_one_line() {
        assert_eq!(for_log("a\nINFO forged"), "a\\nINFO forged");
        assert!(matches!(for_log("plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for s in ["Postgres", "日本語 ✓", "émoji 🎉", "a - b"] {
            assert_eq!(one_line(s), s);
            assert_eq!(multi_line(s), s);
            assert_eq!(for_log(s), s);
        }
    }
}
