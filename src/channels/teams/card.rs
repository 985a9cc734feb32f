//! The Adaptive Card of a request: what the Teams sender sends to a context's conversation
//! when a person is needed (a new request, a reminder, an escalation), and what replaces it
//! when the request ends (and what an action's invoke answers with).
//!
//! Actions are offered where one press is a whole answer, as for Slack: a request of one
//! single-select question (an `Action.Execute` per option) or one plan review (approve
//! and deny; declining with feedback needs text, so that is the page's); anything else
//! gets an `Action.OpenUrl` to the request on the page. Every text the asker wrote goes
//! into a `TextBlock` escaped with [`escape`], so it shows as written: no link, no
//! emphasis, no list, no heading, no date function of its own.

use serde_json::{json, Value};

use crate::channels::slack::blocks::{Call, Ended, How, Shown};
use crate::core::audit::Actor;
use crate::core::teams::{ActionData, VERB};
use crate::protocol::{Question, Request};

/// The Adaptive Card schema version sent (`Action.Execute` needs 1.4).
const VERSION: &str = "1.4";
/// The most buttons a card carries (Teams shows six actions, the page's link is one).
const BUTTONS_MAX: usize = 5;
/// A button's title, in characters.
const TITLE_MAX: usize = 80;
/// One text, in characters (a card has a size limit of about 28 KB).
const TEXT_MAX: usize = 2000;
/// Questions shown; more are left to the page.
const QUESTIONS_SHOWN: usize = 10;

/// `s` as literal text in a `TextBlock`: Teams renders a TextBlock's text as Markdown
/// (CommonMark, with its autolinks) after replacing `{{DATE(…)}}` and `{{TIME(…)}}`;
/// a backslash before every ASCII punctuation character is CommonMark's escape, so no
/// character the asker wrote starts emphasis, a link, a list, a heading or an autolink,
/// and no `{{` is left for a date function. Control characters but the newline are
/// dropped; at most `max` characters of `s` are kept (an ellipsis says so).
pub fn escape_within(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for (n, c) in s.chars().enumerate() {
        if n >= max {
            out.push('…');
            break;
        }
        if c.is_ascii_punctuation() {
            out.push('\\');
            out.push(c);
        } else if c == '\n' || !c.is_control() {
            out.push(c);
        }
    }
    out
}

/// [`escape_within`] with the card's bound on one text.
pub fn escape(s: &str) -> String {
    escape_within(s, TEXT_MAX)
}

/// A plain title (an action's): no Markdown is rendered there; control characters dropped,
/// bounded.
fn title(s: &str) -> String {
    let mut t: String = s
        .chars()
        .filter(|c| !c.is_control())
        .take(TITLE_MAX)
        .collect();
    if s.chars().count() > TITLE_MAX {
        t.push('…');
    }
    t
}

fn text(t: String) -> Value {
    json!({"type": "TextBlock", "text": t, "wrap": true})
}

fn bold(t: String) -> Value {
    json!({"type": "TextBlock", "text": t, "wrap": true, "weight": "Bolder"})
}

/// A question's blocks: its header, text, detail and (when not answered by buttons) its
/// options as a list.
fn question(q: &Question, list_options: bool, out: &mut Vec<Value>) {
    if let Some(h) = q.header.as_deref().filter(|h| !h.is_empty()) {
        out.push(bold(escape(h)));
    }
    out.push(text(escape(&q.question)));
    if let Some(d) = q.detail.as_deref().filter(|d| !d.is_empty()) {
        let mut b = text(escape(d));
        b["isSubtle"] = json!(true);
        out.push(b);
    }
    if list_options {
        let lines: Vec<String> = q
            .options()
            .iter()
            .map(|o| match o.description.as_deref() {
                Some(d) if !d.is_empty() => format!("• {} — {}", escape(&o.label), escape(d)),
                _ => format!("• {}", escape(&o.label)),
            })
            .collect();
        if !lines.is_empty() {
            out.push(text(lines.join("\n\n")));
        }
    }
}

/// The actions of `r` when one press answers it: one per option of its one single-select
/// question (a plan review's approve label `positive`, the others `destructive`).
fn buttons(id: &str, r: &Request, digest: &str) -> Option<Vec<Value>> {
    let [q] = r.questions.as_slice() else {
        return None;
    };
    if q.options().is_empty() || q.is_multi() || q.options().len() > BUTTONS_MAX {
        return None;
    }
    let approve = q.plan_review_approve();
    Some(
        q.options()
            .iter()
            .map(|o| {
                let data = ActionData {
                    request: id.to_string(),
                    question: q.id.clone(),
                    label: o.label.clone(),
                    digest: digest.to_string(),
                };
                let mut b = json!({
                    "type": "Action.Execute",
                    "title": title(&o.label),
                    "verb": VERB,
                    "data": data,
                });
                match approve {
                    Some(a) if a == o.label => b["style"] = json!("positive"),
                    Some(_) => b["style"] = json!("destructive"),
                    None => {}
                }
                b
            })
            .collect(),
    )
}

fn open_url(s: &Shown<'_>, what: &str) -> Value {
    json!({"type": "Action.OpenUrl", "title": what, "url": s.link})
}

fn card(body: Vec<Value>, actions: Vec<Value>) -> Value {
    json!({
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": VERSION,
        "body": body,
        "actions": actions,
    })
}

fn questions(s: &Shown<'_>, list_options: bool, body: &mut Vec<Value>) {
    for q in s.request.questions.iter().take(QUESTIONS_SHOWN) {
        question(q, list_options, body);
    }
    if s.request.questions.len() > QUESTIONS_SHOWN {
        body.push(text(format!(
            "…and {} more questions on the page",
            s.request.questions.len() - QUESTIONS_SHOWN
        )));
    }
}

fn intro(s: &Shown<'_>, call: &Call) -> String {
    let who = match &s.request.agent {
        Some(a) => format!("agent {}", escape_within(&a.id, 200)),
        None => "an asker".to_string(),
    };
    let context = escape_within(s.context, 200);
    match call {
        Call::New => format!("A question from {who} in context {context}"),
        Call::Reminder => format!("Reminder: still waiting for an answer (context {context})"),
        Call::Escalated(Some(from)) => format!(
            "Escalated from context {} to {context}: nobody answered yet",
            escape_within(from, 200)
        ),
        Call::Escalated(None) => format!("Escalated: nobody answered yet (context {context})"),
    }
}

/// The card that asks, its actions carrying the request's `digest`.
pub fn message(s: &Shown<'_>, call: &Call, digest: &str) -> Value {
    let buttons = buttons(s.id, s.request, digest);
    let mut body = vec![bold(intro(s, call))];
    questions(s, buttons.is_none(), &mut body);
    let actions = match buttons {
        Some(mut b) => {
            let what = if s.request.questions[0].plan_review_approve().is_some() {
                "Decline with feedback on the page"
            } else {
                "Open on the page"
            };
            b.push(open_url(s, what));
            b
        }
        None => vec![open_url(s, "Answer on the page")],
    };
    card(body, actions)
}

/// Who did it: a Teams user as their person, anyone else as the actor, escaped.
fn who(actor: &str) -> String {
    match Actor::parse(actor) {
        Some(Actor::Teams { person, .. }) => format!("{} (on Teams)", escape_within(&person, 200)),
        _ => escape_within(actor, 200),
    }
}

/// The card once the request ended: what happened, by whom and when, the questions, and
/// only the page's link.
pub fn ended(s: &Shown<'_>, e: &Ended) -> Value {
    let by = e.by.as_deref().map(who);
    let at = escape(&crate::clock::rfc3339(e.at_ms));
    let what = match &e.how {
        How::Answered(_) => "Answered",
        How::Expired {
            decided_by_policy: true,
        } => "Expired: the asker's default answered it",
        How::Expired { .. } | How::Deadline => "Expired: nobody answered in time",
        How::Cancelled => "Cancelled",
        How::Aborted => "Withdrawn by its asker",
    };
    let line = match by {
        Some(by) => format!("{what} by {by} at {at}"),
        None => format!("{what} at {at}"),
    };
    let mut body = vec![bold(line)];
    if let How::Answered(Some(a)) = &e.how {
        let lines: Vec<String> = a
            .answers
            .iter()
            .map(|i| {
                let mut parts = i.selected.clone();
                if let Some(c) = i.custom.as_deref().filter(|c| !c.is_empty()) {
                    parts.push(format!("\"{c}\""));
                }
                escape(&format!("{}: {}", i.id, parts.join(", ")))
            })
            .collect();
        body.push(text(lines.join("\n\n")));
    }
    questions(s, false, &mut body);
    card(body, vec![open_url(s, "Open on the page")])
}

/// A message activity carrying `card`, with `summary` for notifications.
pub fn activity(card: Value, summary: &str) -> Value {
    json!({
        "type": "message",
        "summary": summary.chars().filter(|c| !c.is_control()).take(200).collect::<String>(),
        "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "content": card}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: Value) -> Request {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn asker_text_shows_as_written() {
        let e =
            escape("**bold** [x](https://evil) {{DATE(2017-02-14T06:08:39Z)}} <at>a</at>\n- item");
        assert_eq!(
            e,
            "\\*\\*bold\\*\\* \\[x\\]\\(https\\:\\/\\/evil\\) \\{\\{DATE\\(2017\\-02\\-14T06\\:08\\:39Z\\)\\}\\} \\<at\\>a\\<\\/at\\>\n\\- item"
        );
        assert_eq!(escape_within("abcdef", 3), "abc…");
        assert_eq!(escape("a\u{7}b"), "ab");
    }

    #[test]
    fn one_press_answers_get_buttons_and_everything_else_the_page() {
        let r = req(
            json!({"questions": [{"id": "q", "question": "Deploy?", "options": [{"label": "Yes"}, {"label": "No"}]}]}),
        );
        let s = Shown {
            id: "r1",
            context: "ops",
            request: &r,
            link: "https://p/r/r1",
        };
        let c = message(&s, &Call::New, "sha256:aa");
        let acts = c["actions"].as_array().unwrap();
        assert_eq!(acts.len(), 3);
        assert_eq!(acts[0]["type"], "Action.Execute");
        assert_eq!(
            acts[0]["data"],
            json!({"r": "r1", "q": "q", "l": "Yes", "d": "sha256:aa"})
        );
        assert_eq!(acts[2]["type"], "Action.OpenUrl");
        let multi = req(
            json!({"questions": [{"id": "q", "question": "?", "multiSelect": true, "options": [{"label": "a"}, {"label": "b"}]}]}),
        );
        let s = Shown {
            id: "r1",
            context: "ops",
            request: &multi,
            link: "https://p/r/r1",
        };
        let acts = message(&s, &Call::New, "d")["actions"].clone();
        assert_eq!(acts.as_array().unwrap().len(), 1);
        assert_eq!(acts[0]["type"], "Action.OpenUrl");
    }
}
