//! The one rule for untrusted text in HTML, shared by everything that writes HTML (the
//! reviewer's page and the mail channel). HTML is built with maud's templates, which
//! escape every value they are given unless it is marked as markup; asker-supplied text
//! goes in as [`Line`] (one line) or [`Block`] (line breaks kept), which first make
//! control characters and terminal escapes visible with the project's sanitiser
//! ([`crate::text`]) and then escape the result ([`escape`]). Nothing asker-supplied is
//! written raw, and nothing is dropped: a `<script>` shows as the characters `<script>`.
//!
//! Why maud: its templates are checked when the crate compiles (a missing closing tag
//! does not build), escaping is the default rather than a call each site must remember,
//! and it renders to a `String` with no run-time template files or engine.

use maud::Render;

pub use maud::{html, Markup, PreEscaped};

/// HTML-escape `s`: the five characters that matter in text and in quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    escape_to(s, &mut out);
    out
}

fn escape_to(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// Untrusted text for one line: control characters made visible, then escaped.
#[derive(Debug, Clone, Copy)]
pub struct Line<'a>(pub &'a str);

impl Render for Line<'_> {
    fn render_to(&self, buffer: &mut String) {
        escape_to(&crate::text::one_line(self.0), buffer);
    }
}

/// Untrusted text over several lines (shown in a `pre`-like block): line breaks kept,
/// every other control character made visible, then escaped.
#[derive(Debug, Clone, Copy)]
pub struct Block<'a>(pub &'a str);

impl Render for Block<'_> {
    fn render_to(&self, buffer: &mut String) {
        escape_to(&crate::text::multi_line(self.0), buffer);
    }
}

/// A path segment, percent-encoded (a request id in a link).
pub fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Markup this code built (a fragment rendered by another template, the Markdown
/// renderer's output), passed into a template as it is.
pub fn markup(s: impl Into<String>) -> Markup {
    PreEscaped(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_escapes_in_asker_text_are_shown_as_text() {
        let hostile = "<script>alert('x')</script>\u{1b}[31m&\"";
        let h =
            html! { p title=(Line(hostile)) { (Line(hostile)) } pre { (Block("a\n<b>\u{7}")) } };
        assert_eq!(
            h.into_string(),
            "<p title=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\\x1b[31m&amp;&quot;\">\
&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\\x1b[31m&amp;&quot;</p><pre>a\n&lt;b&gt;\\x07</pre>"
        );
        // A plain string is escaped by the template itself.
        assert_eq!(html! { b { ("<i>") } }.into_string(), "<b>&lt;i&gt;</b>");
        assert_eq!(urlencode("a b/é"), "a%20b%2F%C3%A9");
    }
}
