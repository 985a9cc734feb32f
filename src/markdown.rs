//! The one Markdown front end: how a plan (a question's `detail`) is parsed, for every
//! face that shows it. Pure: no I/O.
//!
//! A plan under review is Markdown written by a model: headings, lists, code, tables,
//! links. The web page (`web::page::markdown`) and the terminal screen
//! (`cli::interactive::markdown`) must read it the same way, or a reviewer on one face
//! sees a different plan than on the other; so both take their events from [`parse`],
//! which runs `pulldown-cmark` with one set of extensions, and each face only renders.
//!
//! The front end also applies the rules both faces share:
//! - every piece of asker text in an event (text, code, raw HTML, a link's target and
//!   title, an image's URL, a footnote label) has already been through the project's
//!   sanitiser ([`crate::text`]): a control character or terminal escape arrives as a
//!   visible `\x1b`, so no renderer can forget it;
//! - link reference definitions, which Markdown itself never shows (so text could hide in
//!   them), are returned beside the events, for the faces to list under the plan;
//! - [`followable`] says which link targets may become a real link (on the page) at all.

use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};

use crate::text::{multi_line, one_line};

/// A link reference definition (`[label]: target "title"`), sanitised.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Definition {
    /// The label.
    pub label: String,
    /// The target, as written.
    pub dest: String,
    /// The title, if any.
    pub title: Option<String>,
}

/// A parsed plan: its events (every text sanitised) and its link definitions (sorted).
#[derive(Debug)]
pub struct Plan<'a> {
    /// The events, in document order.
    pub events: Vec<Event<'a>>,
    /// The link reference definitions, sorted by label.
    pub definitions: Vec<Definition>,
}

/// The Markdown extensions a plan may use, the same on every face.
fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

fn safe_line(s: CowStr<'_>) -> CowStr<'_> {
    match one_line(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(o) => CowStr::from(o),
    }
}

fn safe_block(s: CowStr<'_>) -> CowStr<'_> {
    match multi_line(&s) {
        std::borrow::Cow::Borrowed(_) => s,
        std::borrow::Cow::Owned(o) => CowStr::from(o),
    }
}

fn safe_tag(tag: Tag<'_>) -> Tag<'_> {
    match tag {
        Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        } => Tag::Link {
            link_type,
            dest_url: safe_line(dest_url),
            title: safe_line(title),
            id: safe_line(id),
        },
        Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        } => Tag::Image {
            link_type,
            dest_url: safe_line(dest_url),
            title: safe_line(title),
            id: safe_line(id),
        },
        Tag::CodeBlock(pulldown_cmark::CodeBlockKind::Fenced(info)) => {
            Tag::CodeBlock(pulldown_cmark::CodeBlockKind::Fenced(safe_line(info)))
        }
        Tag::FootnoteDefinition(label) => Tag::FootnoteDefinition(safe_line(label)),
        other => other,
    }
}

/// Parse `md` into sanitised events and its link definitions.
pub fn parse(md: &str) -> Plan<'_> {
    let mut parser = Parser::new_ext(md, options());
    let events: Vec<Event<'_>> = parser
        .by_ref()
        .map(|ev| match ev {
            Event::Start(tag) => Event::Start(safe_tag(tag)),
            Event::Text(t) => Event::Text(safe_block(t)),
            Event::Code(c) => Event::Code(safe_line(c)),
            Event::InlineMath(m) => Event::InlineMath(safe_line(m)),
            Event::DisplayMath(m) => Event::DisplayMath(safe_block(m)),
            Event::Html(h) => Event::Html(safe_block(h)),
            Event::InlineHtml(h) => Event::InlineHtml(safe_block(h)),
            Event::FootnoteReference(r) => Event::FootnoteReference(safe_line(r)),
            other => other,
        })
        .collect();
    let mut definitions: Vec<Definition> = parser
        .reference_definitions()
        .iter()
        .map(|(label, d)| Definition {
            label: one_line(label).into_owned(),
            dest: one_line(&d.dest).into_owned(),
            title: d.title.as_ref().map(|t| one_line(t).into_owned()),
        })
        .collect();
    definitions.sort();
    Plan {
        events,
        definitions,
    }
}

/// Whether a link to `url` may be followed: only `http:`, `https:` and `mailto:`
/// (`javascript:`, `data:` and anything else stay text).
pub fn followable(url: &str) -> bool {
    let lower = url.trim().to_ascii_lowercase();
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|p| lower.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_text_arrives_sanitised() {
        let plan = parse(
            "a \u{1b}[31m b `c\u{7}` [l](https://x.org/\u{1b}]8;;) <i\u{9b}>\n\n[d]: https://e \"t\u{7}\"\n",
        );
        let mut all = String::new();
        for ev in &plan.events {
            match ev {
                Event::Text(t) | Event::Code(t) | Event::InlineHtml(t) | Event::Html(t) => {
                    all.push_str(t)
                }
                Event::Start(Tag::Link { dest_url, .. }) => all.push_str(dest_url),
                _ => {}
            }
        }
        assert!(!all.chars().any(crate::text::is_unsafe), "{all:?}");
        assert!(all.contains("\\x1b[31m") && all.contains("\\x07") && all.contains("\\x9b"));
        assert!(all.contains("https://x.org/\\x1b]8;;"), "{all:?}");
        assert_eq!(plan.definitions.len(), 1);
        assert_eq!(plan.definitions[0].title.as_deref(), Some("t\\x07"));
    }

    #[test]
    fn only_web_and_mail_links_are_followable() {
        assert!(followable("https://example.org") && followable(" MAILTO:a@b"));
        assert!(!followable("javascript:alert(1)") && !followable("data:text/html,x"));
    }
}
