//! A plan-review's plan (the question's `detail`) rendered from Markdown so that a
//! reviewer sees everything the asker wrote and nothing of it can run, load or hide.
//!
//! The project's one Markdown front end ([`crate::markdown::parse`], `pulldown-cmark`,
//! shared with the terminal screen) parses; this module writes the HTML itself, event by
//! event, so nothing passes through unescaped:
//! - raw HTML, block or inline (comments included), is shown as escaped text in a
//!   marked box: visible, never dropped, never markup;
//! - images are never loaded: their alt text and URL are shown as text;
//! - a link shows its URL as text beside its label, and only `http:`, `https:` and
//!   `mailto:` links can be followed (`javascript:`, `data:` and anything else are text);
//! - link reference definitions, which Markdown itself never shows, are listed at the
//!   end, so text cannot hide in them;
//! - every piece of text arrives sanitised from the front end and is HTML-escaped here
//!   ([`crate::html`]'s rule), so control characters and terminal escapes are visible.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Tag, TagEnd};

use crate::html::{escape, html, Block, Line, Markup};
use crate::markdown::{followable, parse};

fn level(l: HeadingLevel) -> u8 {
    match l {
        HeadingLevel::H1 => 2,
        HeadingLevel::H2 => 3,
        HeadingLevel::H3 => 4,
        HeadingLevel::H4 => 5,
        HeadingLevel::H5 | HeadingLevel::H6 => 6,
    }
}

/// Render `md` as safe HTML (a fragment to put inside a `div`).
pub fn render(md: &str) -> String {
    let plan = parse(md);
    let mut w = Writer {
        out: String::with_capacity(md.len() * 2),
        ends: Vec::new(),
        in_image: 0,
        table_head: false,
    };
    for ev in plan.events {
        w.event(ev);
    }
    // Unclosed links or images (not possible from the parser, but never lose a tail).
    while let Some(e) = w.ends.pop() {
        w.out.push_str(&e);
    }
    if !plan.definitions.is_empty() {
        let listed = html! {
            div.refdefs {
                p { "Link definitions in the plan:" }
                ul {
                    @for d in &plan.definitions {
                        li {
                            "[" (Line(&d.label)) "]: " span.url { (Line(&d.dest)) }
                            @if let Some(t) = &d.title { " “" (Line(t)) "”" }
                        }
                    }
                }
            }
        };
        w.out.push_str(&listed.into_string());
    }
    w.out
}

/// The HTML written so far, and what is open: a Markdown element starts in one event and
/// ends in another, so this is a writer of events rather than one template.
struct Writer {
    out: String,
    /// Open links and images: what to write at their end.
    ends: Vec<String>,
    in_image: usize,
    table_head: bool,
}

impl Writer {
    fn push(&mut self, m: Markup) {
        self.out.push_str(&m.into_string());
    }

    fn event(&mut self, ev: Event<'_>) {
        match ev {
            Event::Start(tag) => self.start(tag),
            Event::End(end) => self.end(end),
            Event::Text(t) => self.push(html! { (Block(&t)) }),
            Event::Code(c) | Event::InlineMath(c) | Event::DisplayMath(c) => {
                self.push(html! { code { (Line(&c)) } })
            }
            // Raw HTML: visible as text, never markup, never dropped.
            Event::Html(h) => self.push(html! { (Block(&h)) }),
            Event::InlineHtml(h) => self.push(html! {
                code.raw-html title="raw HTML, shown as text" { (Block(&h)) }
            }),
            Event::FootnoteReference(r) => self.push(html! { sup { "[" (Line(&r)) "]" } }),
            Event::SoftBreak => self.out.push('\n'),
            Event::HardBreak => self.out.push_str("<br>\n"),
            Event::Rule => self.out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => self.out.push_str(if done { "[x] " } else { "[ ] " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        let open = match tag {
            Tag::Paragraph => "<p>".to_string(),
            Tag::Heading { level: l, .. } => format!("<h{}>", level(l)),
            Tag::BlockQuote(_) => "<blockquote>".into(),
            Tag::CodeBlock(kind) => {
                let lang = match &kind {
                    CodeBlockKind::Fenced(info) if !info.is_empty() => {
                        html! { div.lang { (Line(info)) } }.into_string()
                    }
                    _ => String::new(),
                };
                format!("{lang}<pre><code>")
            }
            Tag::List(Some(start)) => format!("<ol start=\"{start}\">"),
            Tag::List(None) => "<ul>".into(),
            Tag::Item => "<li>".into(),
            Tag::Emphasis => "<em>".into(),
            Tag::Strong => "<strong>".into(),
            Tag::Strikethrough => "<del>".into(),
            Tag::Table(_) => "<table class=\"md\">".into(),
            Tag::TableHead => {
                self.table_head = true;
                "<thead><tr>".into()
            }
            Tag::TableRow => "<tr>".into(),
            Tag::TableCell => (if self.table_head { "<th>" } else { "<td>" }).into(),
            Tag::Link {
                dest_url, title, ..
            } => self.link(&dest_url, &title),
            Tag::Image {
                dest_url, title, ..
            } => {
                self.in_image += 1;
                self.ends.push(
                    html! {
                        "] " span.url { "<" (Line(&dest_url)) ">" }
                        @if !title.is_empty() { " “" (Line(&title)) "”" }
                    }
                    .into_string()
                        + "</span>",
                );
                "<span class=\"image\">[image: ".into()
            }
            Tag::FootnoteDefinition(label) => {
                format!(
                    "<div class=\"footnote\">[{}]: ",
                    html! { (Line(&label)) }.into_string()
                )
            }
            Tag::HtmlBlock => "<pre class=\"raw-html\" title=\"raw HTML, shown as text\">".into(),
            Tag::MetadataBlock(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript => "<span>".into(),
        };
        self.out.push_str(&open);
    }

    /// A link's opening: followed only when it is `http:`, `https:` or `mailto:` (and not
    /// inside an image), its URL shown as text beside its label either way.
    fn link(&mut self, dest_url: &str, title: &str) -> String {
        let shown = html! {
            " " span.url { "<" (Line(dest_url)) ">" }
            @if !title.is_empty() { " " span.url { "“" (Line(title)) "”" } }
        }
        .into_string();
        if followable(dest_url) && self.in_image == 0 {
            self.ends.push(format!("</a>{shown}"));
            format!(
                "<a href=\"{}\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">",
                escape(dest_url.trim())
            )
        } else {
            self.ends.push(format!("</span>{shown}"));
            "<span class=\"link\">".into()
        }
    }

    fn end(&mut self, end: TagEnd) {
        let close = match end {
            TagEnd::Paragraph => "</p>\n".to_string(),
            TagEnd::Heading(l) => format!("</h{}>\n", level(l)),
            TagEnd::BlockQuote(_) => "</blockquote>\n".into(),
            TagEnd::CodeBlock => "</code></pre>\n".into(),
            TagEnd::List(true) => "</ol>\n".into(),
            TagEnd::List(false) => "</ul>\n".into(),
            TagEnd::Item => "</li>\n".into(),
            TagEnd::Emphasis => "</em>".into(),
            TagEnd::Strong => "</strong>".into(),
            TagEnd::Strikethrough => "</del>".into(),
            TagEnd::Table => "</tbody></table>\n".into(),
            TagEnd::TableHead => {
                self.table_head = false;
                "</tr></thead><tbody>".into()
            }
            TagEnd::TableRow => "</tr>".into(),
            TagEnd::TableCell => (if self.table_head { "</th>" } else { "</td>" }).into(),
            TagEnd::Link => self.ends.pop().unwrap_or_default(),
            TagEnd::Image => {
                self.in_image = self.in_image.saturating_sub(1);
                self.ends.pop().unwrap_or_default()
            }
            TagEnd::FootnoteDefinition => "</div>".into(),
            TagEnd::HtmlBlock => "</pre>\n".into(),
            TagEnd::MetadataBlock(_)
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::Superscript
            | TagEnd::Subscript => "</span>".into(),
        };
        self.out.push_str(&close);
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn raw_html_is_text_and_links_show_their_url() {
        let h = render(
            "# Plan\n\n<script>alert(1)</script>\n\nHi <b onclick=x>there</b> <!-- hidden -->\n",
        );
        assert!(!h.contains("<script"), "{h}");
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{h}");
        assert!(h.contains("&lt;b onclick=x&gt;"), "{h}");
        assert!(h.contains("&lt;!-- hidden --&gt;"), "{h}");
        let h = render("[click](javascript:alert(1)) [ok](https://example.org/a?b=\"c\")");
        assert!(!h.contains("href=\"javascript"), "{h}");
        assert!(h.contains("&lt;javascript:alert(1)&gt;"), "{h}");
        assert!(
            h.contains("href=\"https://example.org/a?b=&quot;c&quot;\""),
            "{h}"
        );
    }

    #[test]
    fn images_are_not_loaded_and_definitions_are_shown() {
        let h = render(
            "![a cat](https://example.org/cat.png)\n\n[hidden]: https://example.org \"sneaky\"\n",
        );
        assert!(!h.contains("<img"), "{h}");
        assert!(h.contains("[image: a cat]"), "{h}");
        assert!(h.contains("sneaky"), "{h}");
        let h = render("red \u{1b}[31m text");
        assert!(h.contains("\\x1b[31m"), "{h}");
    }
}
