//! The Slack message of a request, in Block Kit: what `chat.postMessage` posts when a
//! person is needed (a new request, a reminder, an escalation) and what `chat.update` puts
//! in its place when the request ends.
//!
//! Buttons are offered where one press is a whole answer: a request of one single-select
//! question (one button per option) or one plan review (its options, the approve label
//! styled primary; declining with feedback needs text, so that is the page's). Anything
//! else (several questions, a multi-select, free text) gets the link to the request on
//! the page. Every text the asker wrote is escaped ([`super::mrkdwn`]) and sent `verbatim`,
//! so a question cannot mention a user, notify a channel or hide a link; buttons' labels
//! are `plain_text`, shown as written. The ended message has no buttons.

use serde_json::{json, Value};

use super::interaction::{ButtonValue, ACTION_PREFIX};
use super::mrkdwn::{escape, escape_within, plain_within};
use crate::clock::Millis;
use crate::core::audit::Actor;
use crate::protocol::{Answer, Question, Request};

/// Slack's bound on a section's text.
const SECTION_MAX: usize = 3000;
/// Slack's bound on a button's text, in characters.
const BUTTON_TEXT_MAX: usize = 75;
/// Slack's bound on a button's value.
const BUTTON_VALUE_MAX: usize = 2000;
/// Slack's bound on the elements of an actions block.
const ACTIONS_MAX: usize = 25;
/// Questions shown one section each; more are left to the page (Slack allows 50 blocks).
const QUESTIONS_SHOWN: usize = 20;

/// The request a message shows.
#[derive(Debug, Clone)]
pub struct Shown<'a> {
    /// The request id.
    pub id: &'a str,
    /// Its context.
    pub context: &'a str,
    /// The request.
    pub request: &'a Request,
    /// The request on the page (`https://host/r/ID`).
    pub link: &'a str,
}

/// Why the message is posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    /// A new request.
    New,
    /// Nobody answered yet: the ladder's reminder.
    Reminder,
    /// The ladder escalated it (from the context named, when it moved).
    Escalated(Option<String>),
}

/// How a request ended, for the updated message.
#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    /// What happened.
    pub how: How,
    /// Who did it (the event's actor as stored), when a person or a process did.
    pub by: Option<String>,
    /// When.
    pub at_ms: Millis,
}

/// The ends a message shows.
#[derive(Debug, Clone, PartialEq)]
pub enum How {
    /// Answered, with the answer.
    Answered(Option<Answer>),
    /// Nobody answered before the deadline (`decided_by_policy`: the asker's default was
    /// used).
    Expired {
        /// Whether the asker's declared default answered it.
        decided_by_policy: bool,
    },
    /// A reviewer cancelled it.
    Cancelled,
    /// The asker withdrew it.
    Aborted,
    /// Its deadline passed before anyone answered (an abort by the daemon).
    Deadline,
}

fn mrkdwn(text: String) -> Value {
    json!({"type": "mrkdwn", "text": text, "verbatim": true})
}

fn section(text: String) -> Value {
    json!({"type": "section", "text": mrkdwn(text)})
}

/// The section of one question: its header, its text, its detail, and (when it is not
/// answered by buttons) its options as a list.
fn question_section(q: &Question, list_options: bool) -> Value {
    let mut raw = Vec::new();
    if let Some(h) = q.header.as_deref().filter(|h| !h.is_empty()) {
        raw.push((true, h.to_string()));
    }
    raw.push((false, q.question.clone()));
    if let Some(d) = q.detail.as_deref().filter(|d| !d.is_empty()) {
        raw.push((false, d.to_string()));
    }
    if list_options {
        for o in q.options() {
            let line = match o.description.as_deref() {
                Some(d) if !d.is_empty() => format!("• {} — {d}", o.label),
                _ => format!("• {}", o.label),
            };
            raw.push((false, line));
        }
    }
    let mut text = String::new();
    for (bold, part) in raw {
        if !text.is_empty() {
            text.push('\n');
        }
        let room = SECTION_MAX.saturating_sub(text.len() + 2);
        if room < 8 {
            break;
        }
        let escaped = escape_within(&part, room);
        if bold {
            text.push('*');
            text.push_str(&escaped);
            text.push('*');
        } else {
            text.push_str(&escaped);
        }
    }
    section(text)
}

/// The buttons of `r`, when one press answers it: one per option of its one single-select
/// question (a plan review's approve label styled primary).
fn buttons(id: &str, r: &Request) -> Option<Vec<Value>> {
    let [q] = r.questions.as_slice() else {
        return None;
    };
    if q.options().is_empty() || q.is_multi() || q.options().len() > ACTIONS_MAX {
        return None;
    }
    let approve = q.plan_review_approve();
    let mut out = Vec::new();
    for (i, o) in q.options().iter().enumerate() {
        let value = ButtonValue {
            request: id.to_string(),
            question: q.id.clone(),
            label: o.label.clone(),
        }
        .to_text();
        if value.len() > BUTTON_VALUE_MAX {
            return None;
        }
        let mut b = json!({
            "type": "button",
            "action_id": format!("{ACTION_PREFIX}{i}"),
            "text": {"type": "plain_text", "text": plain_within(&o.label, BUTTON_TEXT_MAX)},
            "value": value,
        });
        if approve == Some(o.label.as_str()) {
            b["style"] = json!("primary");
        }
        out.push(b);
    }
    Some(out)
}

/// The link line: the request on the page, with what the page is for here.
fn link_section(s: &Shown<'_>, what: &str) -> Value {
    // The link is the operator's base URL and a checked id: no `|` or `>` in it
    // ([`crate::channels::slack`] refuses a base URL with them).
    section(format!("<{}|{what}>", s.link))
}

fn intro(s: &Shown<'_>, call: &Call) -> String {
    let who = match &s.request.agent {
        Some(a) => format!("agent `{}`", escape_within(&a.id, 200)),
        None => "an asker".to_string(),
    };
    let context = escape_within(s.context, 200);
    match call {
        Call::New => format!(":question: *A question* from {who} in context `{context}`"),
        Call::Reminder => {
            format!(":alarm_clock: *Reminder*: still waiting for an answer (context `{context}`)")
        }
        Call::Escalated(Some(from)) => format!(
            ":rotating_light: *Escalated* from context `{}` to `{context}`: nobody answered yet",
            escape_within(from, 200)
        ),
        Call::Escalated(None) => {
            format!(":rotating_light: *Escalated*: nobody answered yet (context `{context}`)")
        }
    }
}

/// The fallback text (notifications, screen readers): the first question.
fn fallback(s: &Shown<'_>, lead: &str) -> String {
    let first = s
        .request
        .questions
        .first()
        .map(|q| q.question.as_str())
        .unwrap_or("");
    format!("{lead}: {}", escape_within(first, 300))
}

fn question_blocks(s: &Shown<'_>, list_options: bool, blocks: &mut Vec<Value>) {
    for q in s.request.questions.iter().take(QUESTIONS_SHOWN) {
        blocks.push(question_section(q, list_options));
    }
    if s.request.questions.len() > QUESTIONS_SHOWN {
        blocks.push(section(format!(
            "…and {} more questions on the page",
            s.request.questions.len() - QUESTIONS_SHOWN
        )));
    }
}

/// The message that asks: `{"text", "blocks"}` for `chat.postMessage`.
pub fn message(s: &Shown<'_>, call: &Call) -> Value {
    let buttons = buttons(s.id, s.request);
    let mut blocks = vec![section(intro(s, call))];
    question_blocks(s, buttons.is_none(), &mut blocks);
    match buttons {
        Some(b) => {
            blocks.push(json!({
                "type": "actions",
                "block_id": format!("dshq-{}", s.id),
                "elements": b,
            }));
            let what = if s.request.questions[0].plan_review_approve().is_some() {
                "Decline with feedback, or read the request, on the page"
            } else {
                "Open the request on the page"
            };
            blocks.push(link_section(s, what));
        }
        None => blocks.push(link_section(s, "Answer on the page")),
    }
    let lead = match call {
        Call::New => "dshq question",
        Call::Reminder => "dshq reminder",
        Call::Escalated(_) => "dshq escalation",
    };
    json!({"text": fallback(s, lead), "blocks": blocks})
}

/// Who did it, for a person: a Slack reviewer as the reviewer and their Slack mention
/// (the user id is checked: capitals and digits), anyone else as the actor, escaped.
fn who(actor: &str) -> String {
    match Actor::parse(actor) {
        Some(Actor::Slack { reviewer, user }) if crate::core::slack_users::is_user_id(&user) => {
            format!("{} (<@{user}> on Slack)", escape(&reviewer))
        }
        _ => format!("`{}`", escape_within(actor, 200)),
    }
}

/// A time Slack shows in each reader's own time zone, with the UTC time as its fallback.
fn when(ms: Millis) -> String {
    format!(
        "<!date^{}^{{date_short_pretty}} at {{time_secs}}|{}>",
        ms.div_euclid(1000),
        crate::clock::rfc3339(ms)
    )
}

fn answer_text(a: &Answer) -> String {
    let mut lines = Vec::new();
    for item in &a.answers {
        let mut parts = Vec::new();
        if !item.selected.is_empty() {
            parts.push(item.selected.join(", "));
        }
        if let Some(c) = item.custom.as_deref().filter(|c| !c.is_empty()) {
            parts.push(format!("\"{c}\""));
        }
        if item.edited.is_some() {
            parts.push("(edited)".into());
        }
        if parts.is_empty() {
            parts.push("(skipped)".into());
        }
        lines.push(format!("{}: {}", item.id, parts.join(" ")));
    }
    escape_within(&lines.join("\n"), SECTION_MAX - 16)
}

/// The message once the request ended: what happened, by whom and when, the questions,
/// and no buttons. `{"text", "blocks"}` for `chat.update`.
pub fn ended(s: &Shown<'_>, e: &Ended) -> Value {
    let by = e.by.as_deref().map(who);
    let at = when(e.at_ms);
    let (lead, line) = match (&e.how, by) {
        (How::Answered(_), Some(by)) => ("Answered", format!(":white_check_mark: *Answered* by {by} {at}")),
        (How::Answered(_), None) => ("Answered", format!(":white_check_mark: *Answered* {at}")),
        (How::Expired { decided_by_policy: true }, _) => (
            "Expired",
            format!(":hourglass: *Expired* {at}: nobody answered; the asker's declared default was used (decided by policy, not by a person)"),
        ),
        (How::Expired { .. }, _) => ("Expired", format!(":hourglass: *Expired* {at}: nobody answered")),
        (How::Cancelled, Some(by)) => ("Cancelled", format!(":no_entry_sign: *Cancelled* by {by} {at}")),
        (How::Cancelled, None) => ("Cancelled", format!(":no_entry_sign: *Cancelled* {at}")),
        (How::Aborted, _) => ("Withdrawn", format!(":leftwards_arrow_with_hook: *Withdrawn* by the asker {at}")),
        (How::Deadline, _) => ("Ended", format!(":hourglass: *Ended* {at}: its deadline passed before anyone answered")),
    };
    let mut blocks = vec![section(line)];
    question_blocks(s, false, &mut blocks);
    if let How::Answered(Some(a)) = &e.how {
        blocks.push(section(format!("*Answer*\n{}", answer_text(a))));
    }
    blocks.push(link_section(s, "The request on the page"));
    json!({"text": fallback(s, &format!("dshq: {lead}")), "blocks": blocks})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: Value) -> Request {
        serde_json::from_value(v).unwrap()
    }

    fn all_text(v: &Value) -> String {
        v.to_string()
    }

    #[test]
    fn a_single_select_gets_one_button_per_option_with_its_value() {
        let r = req(json!({"questions": [{"id": "q", "question": "Deploy?",
            "options": [{"label": "Yes"}, {"label": "No <!channel>"}]}]}));
        let s = Shown {
            id: "r-1",
            context: "ops",
            request: &r,
            link: "http://h/r/r-1",
        };
        let m = message(&s, &Call::New);
        let actions = m["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["type"] == "actions")
            .unwrap();
        let els = actions["elements"].as_array().unwrap();
        assert_eq!(els.len(), 2);
        let v: ButtonValue = serde_json::from_str(els[1]["value"].as_str().unwrap()).unwrap();
        assert_eq!(
            v,
            ButtonValue {
                request: "r-1".into(),
                question: "q".into(),
                label: "No <!channel>".into()
            }
        );
        assert_eq!(els[1]["text"]["type"], "plain_text");
        // The question's own text never carries a live mention.
        let sections: String = m["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "section")
            .map(|b| b["text"]["text"].as_str().unwrap().to_string())
            .collect();
        assert!(!sections.contains("<!channel>"), "{sections}");
    }

    #[test]
    fn several_questions_multi_select_or_free_text_get_the_link() {
        for r in [
            json!({"questions": [{"id": "a", "question": "x", "options": [{"label": "1"}]},
                                 {"id": "b", "question": "y", "options": [{"label": "2"}]}]}),
            json!({"questions": [{"id": "a", "question": "x", "multiSelect": true, "options": [{"label": "1"}, {"label": "2"}]}]}),
            json!({"questions": [{"id": "a", "question": "why?"}]}),
        ] {
            let r = req(r);
            let s = Shown {
                id: "r",
                context: "c",
                request: &r,
                link: "http://h/r/r",
            };
            let m = message(&s, &Call::Reminder);
            assert!(!all_text(&m).contains("\"actions\""), "{m}");
            assert!(
                all_text(&m).contains("<http://h/r/r|Answer on the page>"),
                "{m}"
            );
        }
    }

    #[test]
    fn a_plan_review_offers_its_options_approve_first_class() {
        let r = req(
            json!({"questions": [{"id": "p", "question": "Plan?", "detail": "1. <@U1> do it",
            "options": [{"label": "Ship it"}, {"label": "Revise"}],
            "intent": {"kind": "plan-review", "approve": "Ship it"}}]}),
        );
        let s = Shown {
            id: "r",
            context: "c",
            request: &r,
            link: "http://h/r/r",
        };
        let m = message(&s, &Call::Escalated(Some("ops".into())));
        let t = all_text(&m);
        assert!(t.contains("\"style\":\"primary\""), "{t}");
        assert!(t.contains("&lt;@U1&gt;") && !t.contains("<@U1>"), "{t}");
        assert!(t.contains("Decline with feedback"), "{t}");
    }

    #[test]
    fn the_ended_message_says_who_and_when_and_has_no_buttons() {
        let r = req(
            json!({"questions": [{"id": "q", "question": "Deploy?", "options": [{"label": "Yes"}]}]}),
        );
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
                by: Some("slack:alice@U0123".into()),
                at_ms: 1_700_000_000_000,
            },
        );
        let t = all_text(&m);
        assert!(!t.contains("\"actions\""), "{t}");
        assert!(t.contains("alice (<@U0123> on Slack)"), "{t}");
        assert!(t.contains("<!date^1700000000^"), "{t}");
        let m = ended(
            &s,
            &Ended {
                how: How::Cancelled,
                by: Some("web:<b>".into()),
                at_ms: 0,
            },
        );
        assert!(all_text(&m).contains("`web:&lt;b&gt;`"), "{m}");
        let m = ended(
            &s,
            &Ended {
                how: How::Expired {
                    decided_by_policy: false,
                },
                by: None,
                at_ms: 0,
            },
        );
        assert!(all_text(&m).contains("nobody answered"), "{m}");
    }
}
