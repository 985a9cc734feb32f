//! The Telegram message of a request: what `sendMessage` sends when a person is needed (a
//! new request, a reminder, an escalation) and what `editMessageText` puts in its place
//! when the request ends.
//!
//! The text is Telegram's HTML (`parse_mode: "HTML"`): the few tags Telegram knows (`b`,
//! `i`, `code`), and every text the asker wrote first made safe to show by the project's
//! one rule for untrusted text ([`crate::text`]'s sanitiser, then [`crate::html::escape`]:
//! `&`, `<`, `>` and quotes become entities, which Telegram's HTML mode reads back as the
//! characters), so a question can neither format itself, nor hide a link, nor break the
//! message: a `<b>` or an `<a href=…>` shows as written. Each part is cut to a share of
//! Telegram's 4,096 characters before it is escaped (an entity counts as one character
//! there), with "…" where it was cut.
//!
//! The inline keyboard: one button per [`crate::core::telegram::choices`] where one press
//! answers the request, each carrying only its delivery and position
//! ([`crate::core::telegram::ButtonRef`]), and a URL button to the request on the page.
//! Button texts are plain text (Telegram does not parse them), cut to 64 characters. The
//! ended message has no buttons.

use serde_json::{json, Value};

use crate::channels::slack::blocks::{Call, Ended, How};
use crate::core::audit::Actor;
use crate::core::telegram::{choices, ButtonRef};
use crate::protocol::Answer;

/// The most characters of the asker's text a message shows (Telegram allows 4,096 after
/// its entities are read; the rest is dshq's own words).
const TEXT_BUDGET: usize = 3500;
/// The most characters of one question's text, detail or option.
const PART_MAX: usize = 1500;
/// The most characters of a button's text.
const BUTTON_MAX: usize = 64;
/// Questions shown; more are left to the page.
const QUESTIONS_SHOWN: usize = 10;

/// The request a message shows: the chat channels' one description of it (Teams' cards
/// read it too).
pub use crate::channels::slack::blocks::Shown;

/// `s` on one line (or several, `lines`), cut to `max` characters, then escaped.
fn cut(s: &str, max: usize, lines: bool) -> String {
    let clean = if lines {
        crate::text::multi_line(s)
    } else {
        crate::text::one_line(s)
    };
    let mut out: String = clean.chars().take(max).collect();
    if clean.chars().nth(max).is_some() {
        out.push('…');
    }
    crate::html::escape(&out)
}

/// What is left of the budget, spending `s`'s characters.
struct Budget(usize);

impl Budget {
    /// `s` cut to what is left (and to `max`), escaped; its characters spent.
    fn take(&mut self, s: &str, max: usize, lines: bool) -> String {
        let n = max.min(self.0);
        self.0 = self.0.saturating_sub(s.chars().count().min(n));
        cut(s, n, lines)
    }
}

fn intro(s: &Shown<'_>, call: &Call) -> String {
    let who = match &s.request.agent {
        Some(a) => format!("agent <code>{}</code>", cut(&a.id, 100, false)),
        None => "an asker".to_string(),
    };
    let context = cut(s.context, 100, false);
    match call {
        Call::New => format!("❓ <b>A question</b> from {who} in context <code>{context}</code>"),
        Call::Reminder => {
            format!("⏰ <b>Reminder</b>: still waiting for an answer (context <code>{context}</code>)")
        }
        Call::Escalated(Some(from)) => format!(
            "🚨 <b>Escalated</b> from context <code>{}</code> to <code>{context}</code>: nobody answered yet",
            cut(from, 100, false)
        ),
        Call::Escalated(None) => {
            format!("🚨 <b>Escalated</b>: nobody answered yet (context <code>{context}</code>)")
        }
    }
}

/// The questions, each its header (bold), its text, its detail (italic) and, when no
/// button answers it, its options.
fn questions(s: &Shown<'_>, list_options: bool, budget: &mut Budget) -> String {
    let mut out = String::new();
    for q in s.request.questions.iter().take(QUESTIONS_SHOWN) {
        out.push('\n');
        if let Some(h) = q.header.as_deref().filter(|h| !h.is_empty()) {
            out.push_str(&format!("\n<b>{}</b>", budget.take(h, 200, false)));
        }
        out.push_str(&format!("\n{}", budget.take(&q.question, PART_MAX, true)));
        if let Some(d) = q.detail.as_deref().filter(|d| !d.is_empty()) {
            out.push_str(&format!("\n<i>{}</i>", budget.take(d, PART_MAX, true)));
        }
        if list_options {
            for o in q.options() {
                out.push_str(&format!("\n• {}", budget.take(&o.label, 200, false)));
                if let Some(d) = o.description.as_deref().filter(|d| !d.is_empty()) {
                    out.push_str(&format!(" — {}", budget.take(d, 200, false)));
                }
            }
        }
    }
    let more = s.request.questions.len().saturating_sub(QUESTIONS_SHOWN);
    if more > 0 {
        out.push_str(&format!("\n\n…and {more} more questions on the page"));
    }
    out
}

fn footer(s: &Shown<'_>) -> String {
    format!("\n\nRequest <code>{}</code>", cut(s.id, 200, false))
}

/// A button's text: one line, cut to [`BUTTON_MAX`]; plain text, not escaped.
fn button_text(s: &str) -> String {
    let clean = crate::text::one_line(s);
    let mut out: String = clean.chars().take(BUTTON_MAX).collect();
    if clean.chars().nth(BUTTON_MAX).is_some() {
        out.pop();
        out.push('…');
    }
    out
}

/// The `sendMessage` body (without `chat_id`) of a request that needs a person, sent by
/// delivery `delivery`.
pub fn asking(s: &Shown<'_>, call: &Call, delivery: &str) -> Value {
    let choices = choices(s.request);
    let mut budget = Budget(TEXT_BUDGET);
    let text = format!(
        "{}{}{}",
        intro(s, call),
        questions(s, choices.is_empty(), &mut budget),
        footer(s)
    );
    let mut rows: Vec<Value> = choices
        .iter()
        .enumerate()
        .map(|(index, c)| {
            let data = ButtonRef {
                delivery: delivery.to_string(),
                index,
            }
            .to_data();
            json!([{"text": button_text(&c.title), "callback_data": data}])
        })
        .collect();
    let page = if choices.is_empty() {
        "Answer on the page"
    } else if s.request.questions[0].plan_review_approve().is_some() {
        "Decline with feedback on the page"
    } else {
        "Open on the page"
    };
    rows.push(json!([{"text": page, "url": s.link}]));
    json!({
        "text": text,
        "parse_mode": "HTML",
        "link_preview_options": {"is_disabled": true},
        "reply_markup": {"inline_keyboard": rows},
    })
}

fn who(actor: &str) -> String {
    match Actor::parse(actor) {
        Some(Actor::Telegram { person, .. }) => {
            format!("{} (on Telegram)", cut(&person, 128, false))
        }
        Some(Actor::Slack { reviewer, .. }) => format!("{} (on Slack)", cut(&reviewer, 128, false)),
        _ => format!("<code>{}</code>", cut(actor, 200, false)),
    }
}

fn answer_text(a: &Answer, budget: &mut Budget) -> String {
    let mut lines = Vec::new();
    for item in &a.answers {
        let mut parts = Vec::new();
        if !item.selected.is_empty() {
            parts.push(format!(
                "<b>{}</b>",
                budget.take(&item.selected.join(", "), 500, false)
            ));
        }
        if let Some(c) = item.custom.as_deref().filter(|c| !c.is_empty()) {
            parts.push(format!("“{}”", budget.take(c, 1000, true)));
        }
        if item.edited.is_some() {
            parts.push("(edited)".into());
        }
        if parts.is_empty() {
            parts.push("(skipped)".into());
        }
        lines.push(format!(
            "{}: {}",
            cut(&item.id, 100, false),
            parts.join(" ")
        ));
    }
    lines.join("\n")
}

/// The `editMessageText` body (without `chat_id` and `message_id`) of a request that
/// ended: how, by whom, when, the questions and the answer; no buttons.
pub fn ended(s: &Shown<'_>, e: &Ended) -> Value {
    let at = crate::clock::rfc3339(e.at_ms);
    let by = e.by.as_deref().map(who);
    let line = match (&e.how, by) {
        (How::Answered(_), Some(by)) => format!("✅ <b>Answered</b> by {by} at {at}"),
        (How::Answered(_), None) => format!("✅ <b>Answered</b> at {at}"),
        (How::Expired { decided_by_policy: true }, _) => format!(
            "⌛ <b>Expired</b> at {at}: nobody answered; the asker's declared default was used (decided by policy, not by a person)"
        ),
        (How::Expired { .. }, _) => format!("⌛ <b>Expired</b> at {at}: nobody answered"),
        (How::Cancelled, Some(by)) => format!("🚫 <b>Cancelled</b> by {by} at {at}"),
        (How::Cancelled, None) => format!("🚫 <b>Cancelled</b> at {at}"),
        (How::Aborted, _) => format!("↩️ <b>Withdrawn</b> by the asker at {at}"),
        (How::Deadline, _) => {
            format!("⌛ <b>Ended</b> at {at}: its deadline passed before anyone answered")
        }
    };
    let mut budget = Budget(TEXT_BUDGET);
    let mut text = format!("{line}{}", questions(s, false, &mut budget));
    if let How::Answered(Some(a)) = &e.how {
        text.push_str(&format!(
            "\n\n<b>Answer</b>\n{}",
            answer_text(a, &mut budget)
        ));
    }
    text.push_str(&footer(s));
    json!({
        "text": text,
        "parse_mode": "HTML",
        "link_preview_options": {"is_disabled": true},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Request;

    fn req(v: Value) -> Request {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_askers_text_is_escaped_and_each_option_is_a_button() {
        let r = req(json!({"questions": [{"id": "q",
            "question": "Ship <b>now</b> & <a href=\"https://evil.example\">see</a> &amp; \"x\"?",
            "options": [{"label": "Yes <i>"}, {"label": "No"}]}]}));
        let link = "https://dshq.example/r/r-1";
        let s = Shown {
            id: "r-1",
            context: "ops",
            request: &r,
            link,
        };
        let delivery = format!("msg_{}", "0".repeat(32));
        let m = asking(&s, &Call::New, &delivery);
        let text = m["text"].as_str().unwrap();
        assert!(
            text.contains("Ship &lt;b&gt;now&lt;/b&gt; &amp; &lt;a href=&quot;https://evil.example&quot;&gt;see&lt;/a&gt; &amp;amp; &quot;x&quot;?"),
            "{text}"
        );
        assert!(!text.contains("<a"), "{text}");
        let rows = m["reply_markup"]["inline_keyboard"].as_array().unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0][0]["text"], "Yes <i>");
        assert_eq!(rows[1][0]["callback_data"], format!("dshq1:{delivery}:1"));
        assert_eq!(rows[2][0]["url"], link);
        // No buttons where one press is no whole answer: the options are listed.
        let free = req(json!({"questions": [{"id": "q", "question": "Why?",
            "multiSelect": true, "options": [{"label": "<x>"}, {"label": "y"}]}]}));
        let m = asking(
            &Shown {
                request: &free,
                ..s.clone()
            },
            &Call::Reminder,
            &delivery,
        );
        assert_eq!(
            m["reply_markup"]["inline_keyboard"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert!(m["text"].as_str().unwrap().contains("• &lt;x&gt;"), "{m}");
    }

    #[test]
    fn a_long_question_is_cut_within_telegrams_bound() {
        let long = "&".repeat(10_000);
        let r = req(json!({"questions": [{"id": "q", "question": long, "detail": long}]}));
        let s = Shown {
            id: "r",
            context: "c",
            request: &r,
            link: "http://h/r/r",
        };
        let text = asking(&s, &Call::New, "msg_x")["text"]
            .as_str()
            .unwrap()
            .to_string();
        // Telegram counts an entity as one character.
        let shown = text.replace("&amp;", "&");
        assert!(shown.chars().count() < 4096, "{}", shown.chars().count());
        assert!(text.contains('…'));
    }

    #[test]
    fn the_ended_message_has_no_buttons_and_names_the_person() {
        let r = req(json!({"questions": [{"id": "q", "question": "Go?",
            "options": [{"label": "Yes"}, {"label": "No"}]}]}));
        let s = Shown {
            id: "r",
            context: "c",
            request: &r,
            link: "http://h/r/r",
        };
        let a: Answer =
            serde_json::from_value(json!({"answers": [{"id": "q", "selected": ["Yes"]}]})).unwrap();
        let m = ended(
            &s,
            &Ended {
                how: How::Answered(Some(a)),
                by: Some("telegram:alice@123456".into()),
                at_ms: 0,
            },
        );
        assert!(m.get("reply_markup").is_none());
        let text = m["text"].as_str().unwrap();
        assert!(
            text.contains("by alice (on Telegram)") && text.contains("<b>Yes</b>"),
            "{text}"
        );
    }
}
