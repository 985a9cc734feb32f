//! Word wrapping for the screen: every line the screen writes is broken at word
//! boundaries to fit the terminal, so the terminal never wraps it mid-word itself.
//!
//! Text is filled greedily from [`Word`]s: a word is one or more painted pieces with no
//! break inside ("`x`," is code then punctuation) whose width is measured on the plain
//! text (display columns, so a wide character counts two) before it is painted. A word
//! wider than a whole line (a long URL) is the only thing ever cut, at the line's edge, so
//! nothing is lost and no line is wider than asked. Key hints and a request's facts are
//! filled by [`parts`]: a hint ("e: Other in $EDITOR") moves to the next line whole.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::style::Style;

/// How a piece of a word is painted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    /// As is.
    Plain,
    /// Bold.
    Bold,
    /// Inline code.
    Code,
    /// Dimmed.
    Dim,
    /// A heading.
    Heading,
    /// An accent.
    Accent,
}

impl Paint {
    fn apply(self, style: &Style, s: &str) -> String {
        match self {
            Paint::Plain => s.to_string(),
            Paint::Bold => style.bold(s),
            Paint::Code => style.code(s),
            Paint::Dim => style.dim(s),
            Paint::Heading => style.heading(s),
            Paint::Accent => style.accent(s),
        }
    }
}

/// A run of text that is never broken (unless wider than a line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Word {
    pieces: Vec<(String, Paint)>,
}

impl Word {
    /// A word of one piece.
    pub fn new(text: &str, paint: Paint) -> Word {
        Word {
            pieces: vec![(text.to_string(), paint)],
        }
    }

    /// Add a piece to the word (no break between them).
    pub fn push(&mut self, text: &str, paint: Paint) {
        if text.is_empty() {
            return;
        }
        match self.pieces.last_mut() {
            Some((t, p)) if *p == paint => t.push_str(text),
            _ => self.pieces.push((text.to_string(), paint)),
        }
    }

    /// Whether it has no text.
    pub fn is_empty(&self) -> bool {
        self.pieces.iter().all(|(t, _)| t.is_empty())
    }

    /// Its width in columns.
    pub fn width(&self) -> usize {
        self.pieces.iter().map(|(t, _)| t.width()).sum()
    }

    /// Split at whitespace into words (each keeps its paints).
    pub fn words(&self) -> Vec<Word> {
        let mut out = Vec::new();
        let mut cur = Word::default();
        for (t, p) in &self.pieces {
            for c in t.chars() {
                if c.is_whitespace() {
                    if !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                } else {
                    let mut b = [0u8; 4];
                    cur.push(c.encode_utf8(&mut b), *p);
                }
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    /// Its text without paint.
    pub fn plain(&self) -> String {
        self.pieces.iter().map(|(t, _)| t.as_str()).collect()
    }

    /// The same text, all painted `paint`.
    pub fn repainted(self, paint: Paint) -> Word {
        Word::new(&self.plain(), paint)
    }

    fn paint(&self, style: &Style) -> String {
        self.pieces.iter().map(|(t, p)| p.apply(style, t)).collect()
    }

    /// Cut into a head at most `cols` wide and the rest.
    fn split(&self, cols: usize) -> (Word, Word) {
        let (mut head, mut tail) = (Word::default(), Word::default());
        let mut used = 0;
        for (t, p) in &self.pieces {
            for c in t.chars() {
                let w = c.width().unwrap_or(0);
                if tail.is_empty() && (used + w <= cols || used == 0) {
                    head.push(&c.to_string(), *p);
                    used += w;
                } else {
                    tail.push(&c.to_string(), *p);
                }
            }
        }
        (head, tail)
    }
}

/// The words of `text` (split at whitespace), all painted `paint`.
pub fn words(text: &str, paint: Paint) -> Vec<Word> {
    text.split_whitespace()
        .map(|w| Word::new(w, paint))
        .collect()
}

/// Fill `words` into lines at most `width` columns wide: the first line starts with
/// `first`, the others with `indent` (prefixes are counted as their plain width, given).
pub fn fill(
    words: &[Word],
    first: (&str, usize),
    indent: (&str, usize),
    width: usize,
    style: &Style,
) -> Vec<String> {
    fill_measured(words, first, indent, width, style)
        .into_iter()
        .map(|(l, _)| l)
        .collect()
}

/// As [`fill`], with each line's width in columns.
pub fn fill_measured(
    words: &[Word],
    first: (&str, usize),
    indent: (&str, usize),
    width: usize,
    style: &Style,
) -> Vec<(String, usize)> {
    let mut lines = Vec::new();
    let mut line = first.0.to_string();
    let mut used = first.1;
    let mut empty = true;
    let mut queue: std::collections::VecDeque<Word> = words.iter().cloned().collect();
    while let Some(word) = queue.pop_front() {
        let n = word.width();
        let gap = usize::from(!empty);
        if used + gap + n > width {
            if !empty {
                lines.push((std::mem::replace(&mut line, indent.0.to_string()), used));
                used = indent.1;
                empty = true;
                queue.push_front(word);
                continue;
            }
            // Alone on its line and still too wide: cut it at the edge.
            let room = width.saturating_sub(used).max(1);
            let (head, tail) = word.split(room);
            line.push_str(&head.paint(style));
            lines.push((
                std::mem::replace(&mut line, indent.0.to_string()),
                used + head.width(),
            ));
            used = indent.1;
            if !tail.is_empty() {
                queue.push_front(tail);
            }
            continue;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(&word.paint(style));
        used += gap + n;
        empty = false;
    }
    if !empty || lines.is_empty() {
        lines.push((line, used));
    }
    lines
}

/// Plain text wrapped at words, painted `paint`, continuation lines indented by
/// `indent` spaces.
pub fn text(s: &str, width: usize, indent: usize, paint: Paint, style: &Style) -> Vec<String> {
    let pad = " ".repeat(indent);
    fill(&words(s, paint), ("", 0), (&pad, indent), width, style)
}

/// `parts` joined by `sep` (" · ") and wrapped, all painted `paint` (see [`joined`]).
pub fn parts(
    parts: &[String],
    sep: &str,
    width: usize,
    paint: Paint,
    style: &Style,
) -> Vec<String> {
    let units = parts.iter().map(|p| Word::new(p.trim(), paint)).collect();
    joined(units, sep, 0, width, style)
}

/// `units` joined by `sep` and wrapped: a unit moves to the next line whole when it fits
/// on one, and is broken at its words only when it does not; the separator stays at the
/// end of the line it follows; continuation lines start with `indent` spaces.
pub fn joined(
    units: Vec<Word>,
    sep: &str,
    indent: usize,
    width: usize,
    style: &Style,
) -> Vec<String> {
    let sep = sep.trim();
    let n = units.len();
    let mut fill_units: Vec<Word> = Vec::new();
    for (k, mut u) in units.into_iter().enumerate() {
        if k + 1 < n && !sep.is_empty() {
            let paint = u.pieces.last().map_or(Paint::Plain, |(_, p)| *p);
            u.push(" ", paint);
            u.push(sep, paint);
        }
        if u.width() + indent <= width {
            fill_units.push(u);
        } else {
            fill_units.extend(u.words());
        }
    }
    let pad = " ".repeat(indent);
    fill(&fill_units, ("", 0), (&pad, indent), width, style)
}

/// `line` as it is when it fits, else wrapped at words keeping its leading indentation
/// (continuation lines indented two more columns).
pub fn keep_indent(line: &str, width: usize, style: &Style) -> Vec<String> {
    if line.width() <= width {
        // Fits: as it is, its inner spacing (aligned columns) kept.
        return vec![line.to_string()];
    }
    let body = line.trim_start();
    let lead = line.len() - body.len();
    let first = " ".repeat(lead);
    let rest = " ".repeat((lead + 2).min(width / 2));
    fill(
        &words(body, Paint::Plain),
        (&first, lead),
        (&rest, rest.len()),
        width,
        style,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Style = Style::PLAIN;

    #[test]
    fn text_breaks_at_spaces_and_never_exceeds_the_width() {
        let lines = text("one two three four five six seven", 10, 2, Paint::Plain, &S);
        assert_eq!(
            lines,
            vec!["one two", "  three", "  four", "  five six", "  seven"]
        );
        let long = text(
            "see https://example.org/a/very/long/path now",
            12,
            0,
            Paint::Plain,
            &S,
        );
        assert!(long.iter().all(|l| l.width() <= 12), "{long:?}");
        assert_eq!(
            long.concat().replace(' ', ""),
            "seehttps://example.org/a/very/long/pathnow"
        );
    }

    #[test]
    fn parts_move_whole_and_keep_their_separator() {
        let p: Vec<String> = [
            "1-9/Enter: choose",
            "e: Other in $EDITOR",
            "s: skip",
            "q: quit",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            parts(&p, " · ", 30, Paint::Plain, &S),
            vec![
                "1-9/Enter: choose ·",
                "e: Other in $EDITOR ·",
                "s: skip · q: quit"
            ]
        );
    }

    #[test]
    fn wide_characters_count_two_columns() {
        let lines = text("日本語 日本語", 8, 0, Paint::Plain, &S);
        assert_eq!(lines, vec!["日本語", "日本語"]);
    }
}
