//! Text in Slack's mrkdwn: the asker's text is untrusted, so the three characters Slack
//! gives a meaning to in message text (`&`, `<`, `>`: `<@U123>` is a mention, `<!here>`
//! notifies a channel, `<https://x|y>` is a link whose label hides its target) are
//! escaped as Slack documents (`&amp;`, `&lt;`, `&gt;`), and the text objects that carry
//! it are sent `verbatim` (no automatic linking of names and URLs). Formatting marks
//! (`*bold*`, `_italic_`) stay: they change how text looks, not what it does.

/// `s` with `&`, `<` and `>` escaped.
pub fn escape(s: &str) -> String {
    escape_within(s, usize::MAX)
}

/// `s` escaped, cut (with `…`) so the escaped text is at most `max` bytes: never in the
/// middle of an escape or a character.
pub fn escape_within(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    for (i, c) in s.char_indices() {
        let piece: &str = match c {
            '&' => "&amp;",
            '<' => "&lt;",
            '>' => "&gt;",
            _ => &s[i..i + c.len_utf8()],
        };
        // Room for the piece and, when text follows, the ellipsis (3 bytes).
        let rest_after = i + c.len_utf8() < s.len();
        let need = piece.len() + if rest_after { 3 } else { 0 };
        if out.len() + need > max {
            out.push('…');
            return out;
        }
        out.push_str(piece);
    }
    out
}

/// Plain text (a button's label, a header) cut to at most `max` characters, with `…`.
/// Slack shows `plain_text` as it is: nothing in it is a mention or a link.
pub fn plain_within(s: &str, max: usize) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            escape("<!channel> & <@U1> <https://evil|ok>"),
            "&lt;!channel&gt; &amp; &lt;@U1&gt; &lt;https://evil|ok&gt;"
        );
        assert_eq!(escape("*plain* text"), "*plain* text");
    }

    #[test]
    fn a_cut_never_splits_an_escape_and_stays_within_its_bound() {
        let s = "a<<<<<<<<<";
        for max in 0..40 {
            let e = escape_within(s, max);
            assert!(e.len() <= max.max(3), "{max}: {e}");
            let body = e.trim_end_matches('…');
            assert!(!body.contains('<'), "{e}");
            assert!(
                body.is_empty() || body.ends_with("&lt;") || body == "a",
                "{max}: {e}"
            );
        }
        assert_eq!(escape_within("héllo", 100), "héllo");
        assert_eq!(plain_within("abcdef", 4), "abc…");
        assert_eq!(plain_within("a\nb", 10), "a b");
    }
}
