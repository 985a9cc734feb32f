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
//!   ([`super::layout::block`]), so control characters and terminal escapes are visible.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Tag, TagEnd};

use super::layout::{block, escape, text};
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
    let mut out = String::with_capacity(md.len() * 2);
    // Open links and images: what to write at their end.
    let mut ends: Vec<String> = Vec::new();
    let mut in_image = 0usize;
    let mut table_head = false;
    for ev in plan.events {
        match ev {
            Event::Start(tag) => match tag {
                Tag::Paragraph => out.push_str("<p>"),
                Tag::Heading { level: l, .. } => out.push_str(&format!("<h{}>", level(l))),
                Tag::BlockQuote(_) => out.push_str("<blockquote>"),
                Tag::CodeBlock(kind) => {
                    if let CodeBlockKind::Fenced(info) = &kind {
                        if !info.is_empty() {
                            out.push_str(&format!("<div class=\"lang\">{}</div>", text(info)));
                        }
                    }
                    out.push_str("<pre><code>");
                }
                Tag::List(Some(start)) => out.push_str(&format!("<ol start=\"{start}\">")),
                Tag::List(None) => out.push_str("<ul>"),
                Tag::Item => out.push_str("<li>"),
                Tag::Emphasis => out.push_str("<em>"),
                Tag::Strong => out.push_str("<strong>"),
                Tag::Strikethrough => out.push_str("<del>"),
                Tag::Table(_) => out.push_str("<table class=\"md\">"),
                Tag::TableHead => {
                    table_head = true;
                    out.push_str("<thead><tr>");
                }
                Tag::TableRow => out.push_str("<tr>"),
                Tag::TableCell => out.push_str(if table_head { "<th>" } else { "<td>" }),
                Tag::Link {
                    dest_url, title, ..
                } => {
                    let shown = format!(
                        " <span class=\"url\">&lt;{}&gt;</span>{}",
                        text(&dest_url),
                        if title.is_empty() {
                            String::new()
                        } else {
                            format!(" <span class=\"url\">“{}”</span>", text(&title))
                        }
                    );
                    if followable(&dest_url) && in_image == 0 {
                        out.push_str(&format!(
                            "<a href=\"{}\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">",
                            escape(dest_url.trim())
                        ));
                        ends.push(format!("</a>{shown}"));
                    } else {
                        out.push_str("<span class=\"link\">");
                        ends.push(format!("</span>{shown}"));
                    }
                }
                Tag::Image {
                    dest_url, title, ..
                } => {
                    in_image += 1;
                    out.push_str("<span class=\"image\">[image: ");
                    ends.push(format!(
                        "] <span class=\"url\">&lt;{}&gt;</span>{}</span>",
                        text(&dest_url),
                        if title.is_empty() {
                            String::new()
                        } else {
                            format!(" “{}”", text(&title))
                        }
                    ));
                }
                Tag::FootnoteDefinition(label) => {
                    out.push_str(&format!("<div class=\"footnote\">[{}]: ", text(&label)))
                }
                Tag::HtmlBlock => {
                    out.push_str("<pre class=\"raw-html\" title=\"raw HTML, shown as text\">")
                }
                Tag::MetadataBlock(_)
                | Tag::DefinitionList
                | Tag::DefinitionListTitle
                | Tag::DefinitionListDefinition
                | Tag::Superscript
                | Tag::Subscript => out.push_str("<span>"),
            },
            Event::End(end) => match end {
                TagEnd::Paragraph => out.push_str("</p>\n"),
                TagEnd::Heading(l) => out.push_str(&format!("</h{}>\n", level(l))),
                TagEnd::BlockQuote(_) => out.push_str("</blockquote>\n"),
                TagEnd::CodeBlock => out.push_str("</code></pre>\n"),
                TagEnd::List(true) => out.push_str("</ol>\n"),
                TagEnd::List(false) => out.push_str("</ul>\n"),
                TagEnd::Item => out.push_str("</li>\n"),
                TagEnd::Emphasis => out.push_str("</em>"),
                TagEnd::Strong => out.push_str("</strong>"),
                TagEnd::Strikethrough => out.push_str("</del>"),
                TagEnd::Table => out.push_str("</tbody></table>\n"),
                TagEnd::TableHead => {
                    table_head = false;
                    out.push_str("</tr></thead><tbody>");
                }
                TagEnd::TableRow => out.push_str("</tr>"),
                TagEnd::TableCell => out.push_str(if table_head { "</th>" } else { "</td>" }),
                TagEnd::Link => out.push_str(&ends.pop().unwrap_or_default()),
                TagEnd::Image => {
                    in_image = in_image.saturating_sub(1);
                    out.push_str(&ends.pop().unwrap_or_default());
                }
                TagEnd::FootnoteDefinition => out.push_str("</div>"),
                TagEnd::HtmlBlock => out.push_str("</pre>\n"),
                TagEnd::MetadataBlock(_)
                | TagEnd::DefinitionList
                | TagEnd::DefinitionListTitle
                | TagEnd::DefinitionListDefinition
                | TagEnd::Superscript
                | TagEnd::Subscript => out.push_str("</span>"),
            },
            Event::Text(t) => out.push_str(&block(&t)),
            Event::Code(c) => out.push_str(&format!("<code>{}</code>", text(&c))),
            Event::InlineMath(m) | Event::DisplayMath(m) => {
                out.push_str(&format!("<code>{}</code>", text(&m)))
            }
            // Raw HTML: visible as text, never markup, never dropped.
            Event::Html(h) => out.push_str(&block(&h)),
            Event::InlineHtml(h) => out.push_str(&format!(
                "<code class=\"raw-html\" title=\"raw HTML, shown as text\">{}</code>",
                block(&h)
            )),
            Event::FootnoteReference(r) => out.push_str(&format!("<sup>[{}]</sup>", text(&r))),
            Event::SoftBreak => out.push('\n'),
            Event::HardBreak => out.push_str("<br>\n"),
            Event::Rule => out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => out.push_str(if done { "[x] " } else { "[ ] " }),
        }
    }
    // Unclosed links or images (not possible from the parser, but never lose a tail).
    while let Some(e) = ends.pop() {
        out.push_str(&e);
    }
    let listed: Vec<String> = plan
        .definitions
        .iter()
        .map(|d| {
            format!(
                "<li>[{}]: <span class=\"url\">{}</span>{}</li>",
                text(&d.label),
                text(&d.dest),
                d.title
                    .as_ref()
                    .map(|t| format!(" “{}”", text(t)))
                    .unwrap_or_default()
            )
        })
        .collect();
    if !listed.is_empty() {
        out.push_str("<div class=\"refdefs\"><p>Link definitions in the plan:</p><ul>");
        out.push_str(&listed.concat());
        out.push_str("</ul></div>");
    }
    out
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
