//! What a button press sends (Slack's `block_actions` interaction payload): a form body
//! (`application/x-www-form-urlencoded`) with one field, `payload`, holding JSON that names
//! the user who pressed (`user.id`), the button (`actions[0]`: our `action_id` and
//! `value`) and the message it is on (`container`).
//!
//! A button's value is written by the sender ([`super::blocks`]): the request id, the
//! question id and the label, as a small JSON object. It is trusted only as far as the
//! payload is, which is signed by Slack ([`super::signature`]), and only for the message
//! it is on: the press must come from a message dshq posted for that request
//! ([`from_its_message`]), in the channel of the context the request is in now
//! ([`where_it_is`]); what it names is checked again by the answer's use-case, like any
//! reviewer's answer.

use serde::{Deserialize, Serialize};

use crate::protocol::{Answer, AnswerItem};

/// The prefix of the `action_id` of every button dshq sends (`dshq-answer-0`, ...).
pub const ACTION_PREFIX: &str = "dshq-answer-";

/// What a button carries: the request, the question, the label it picks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ButtonValue {
    /// The request id.
    #[serde(rename = "r")]
    pub request: String,
    /// The question id.
    #[serde(rename = "q")]
    pub question: String,
    /// The option's label (what the answer selects).
    #[serde(rename = "l")]
    pub label: String,
}

impl ButtonValue {
    /// The value as the button's `value` field.
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).expect("a button value serializes")
    }

    /// The answer the press gives: the label selected on the question.
    pub fn answer(&self) -> Answer {
        Answer {
            answers: vec![AnswerItem {
                id: self.question.clone(),
                selected: vec![self.label.clone()],
                custom: None,
                edited: None,
            }],
        }
    }
}

/// One press of a dshq button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Press {
    /// The Slack user who pressed.
    pub user: String,
    /// What the button carries.
    pub value: ButtonValue,
    /// The Slack channel of the message, when the payload names it.
    pub channel: Option<String>,
    /// The message's `ts`, when the payload names it.
    pub message_ts: Option<String>,
}

/// Why a press may not act on the request its button names (each a stable code).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Misdirected {
    /// The press is not from a message dshq posted for that request (a forged button
    /// value, or one copied onto another message): `FORBIDDEN`.
    #[error("this button is not on a message dshq posted for request {0:?}: nothing was recorded")]
    NotItsMessage(String),
    /// The message was posted for the request in a channel that is not the Slack channel
    /// of the context the request is in now (it was escalated to another context, or that
    /// context posts to no Slack channel): `WRONG_CONTEXT`.
    #[error("request {id:?} moved to context {context:?} (escalated){}: this message no longer answers it, and nothing was recorded", .channel.as_deref().map(|c| format!("; answer it from its message in channel {c}")).unwrap_or_default())]
    Moved {
        /// The request.
        id: String,
        /// The context it is in now.
        context: String,
        /// That context's Slack channel, if it has one.
        channel: Option<String>,
    },
}

impl Misdirected {
    /// The stable code.
    pub fn code(&self) -> crate::protocol::Code {
        match self {
            Misdirected::NotItsMessage(_) => crate::protocol::Code::Forbidden,
            Misdirected::Moved { .. } => crate::protocol::Code::WrongContext,
        }
    }
}

/// Whether `press` came from a message dshq posted for its request: one of `posted` (the
/// request's messages, as `(channel, ts)`) is the press's message.
pub fn from_its_message<'a>(
    press: &Press,
    mut posted: impl Iterator<Item = (&'a str, &'a str)>,
) -> Result<(), Misdirected> {
    let (Some(channel), Some(ts)) = (&press.channel, &press.message_ts) else {
        return Err(Misdirected::NotItsMessage(press.value.request.clone()));
    };
    if posted.any(|(c, t)| c == channel && t == ts) {
        Ok(())
    } else {
        Err(Misdirected::NotItsMessage(press.value.request.clone()))
    }
}

/// Whether a press from its request's message (see [`from_its_message`]) acts where the
/// request is now: in `context`, whose Slack channel is `context_channel` (none: the
/// context posts to Slack nowhere). A message in another channel was posted for the
/// context the request was in before (an escalation moved it on): its buttons speak for
/// that context's reviewers, who may no longer answer it.
pub fn where_it_is(
    press: &Press,
    context: &str,
    context_channel: Option<&str>,
) -> Result<(), Misdirected> {
    if context_channel.is_some() && press.channel.as_deref() == context_channel {
        return Ok(());
    }
    Err(Misdirected::Moved {
        id: press.value.request.clone(),
        context: context.to_string(),
        channel: context_channel.map(str::to_string),
    })
}

/// Why a body is not a press of a dshq button.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAPress {
    /// No `payload` field in a form body.
    #[error("the body is not a form with a payload field")]
    NoPayload,
    /// The payload is not JSON.
    #[error("the payload is not JSON: {0}")]
    NotJson(String),
    /// An interaction of another type (a shortcut, a modal's submission).
    #[error("interactions of type {0:?} are not handled: only the message buttons dshq sends")]
    OtherType(String),
    /// A payload without a user id.
    #[error("the payload names no user")]
    NoUser,
    /// No action, or not one of dshq's buttons.
    #[error("the payload's action is not one of dshq's buttons")]
    NotOurs,
}

/// Parse a form `body` Slack posted to the interactions endpoint.
pub fn parse(body: &[u8]) -> Result<Press, NotAPress> {
    let fields: Vec<(String, String)> =
        serde_urlencoded::from_bytes(body).map_err(|_| NotAPress::NoPayload)?;
    let payload = fields
        .into_iter()
        .find(|(k, _)| k == "payload")
        .map(|(_, v)| v)
        .ok_or(NotAPress::NoPayload)?;
    let v: serde_json::Value =
        serde_json::from_str(&payload).map_err(|e| NotAPress::NotJson(e.to_string()))?;
    let kind = v["type"].as_str().unwrap_or("");
    if kind != "block_actions" {
        return Err(NotAPress::OtherType(kind.chars().take(64).collect()));
    }
    let user = v["user"]["id"]
        .as_str()
        .filter(|u| !u.is_empty())
        .ok_or(NotAPress::NoUser)?
        .to_string();
    let action = &v["actions"][0];
    if !action["action_id"]
        .as_str()
        .is_some_and(|a| a.starts_with(ACTION_PREFIX))
    {
        return Err(NotAPress::NotOurs);
    }
    let value: ButtonValue = action["value"]
        .as_str()
        .and_then(|s| serde_json::from_str(s).ok())
        .ok_or(NotAPress::NotOurs)?;
    let text = |a: &serde_json::Value| a.as_str().map(str::to_string);
    Ok(Press {
        user,
        value,
        channel: text(&v["container"]["channel_id"]).or_else(|| text(&v["channel"]["id"])),
        message_ts: text(&v["container"]["message_ts"]).or_else(|| text(&v["message"]["ts"])),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(payload: &serde_json::Value) -> Vec<u8> {
        serde_urlencoded::to_string([("payload", payload.to_string())])
            .unwrap()
            .into_bytes()
    }

    #[test]
    fn a_press_names_the_user_and_the_buttons_value() {
        let value = ButtonValue {
            request: "r-1".into(),
            question: "q".into(),
            label: "Ship & <go>".into(),
        };
        let p = parse(&form(&serde_json::json!({
            "type": "block_actions",
            "user": {"id": "U0123", "username": "alice"},
            "container": {"type": "message", "message_ts": "1.2", "channel_id": "C1"},
            "actions": [{"action_id": "dshq-answer-0", "value": value.to_text(), "type": "button"}]
        })))
        .unwrap();
        assert_eq!(p.user, "U0123");
        assert_eq!(p.value, value);
        assert_eq!(
            (p.channel.as_deref(), p.message_ts.as_deref()),
            (Some("C1"), Some("1.2"))
        );
        assert_eq!(p.value.answer().answers[0].selected, vec!["Ship & <go>"]);
    }

    #[test]
    fn other_bodies_are_not_presses() {
        assert_eq!(parse(b"x=1"), Err(NotAPress::NoPayload));
        assert!(matches!(parse(b"payload=%7B"), Err(NotAPress::NotJson(_))));
        assert_eq!(
            parse(&form(&serde_json::json!({"type": "view_submission"}))),
            Err(NotAPress::OtherType("view_submission".into()))
        );
        assert_eq!(
            parse(&form(
                &serde_json::json!({"type": "block_actions", "actions": []})
            )),
            Err(NotAPress::NoUser)
        );
        assert_eq!(
            parse(&form(
                &serde_json::json!({"type": "block_actions", "user": {"id": "U1"},
                "actions": [{"action_id": "other", "value": "{}"}]})
            )),
            Err(NotAPress::NotOurs)
        );
    }
}
