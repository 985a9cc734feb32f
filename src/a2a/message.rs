//! What an A2A message asks: the dsh request it carries, as bytes for the ask use-case
//! (which checks it as every face's request is checked).
//!
//! - One data part: the request as `docs/protocol.md` defines it (an object). When it
//!   names no `id`, the message's `messageId` is its id (when it is a valid id), so a
//!   client that sends the same message again gets the same task, as a re-delivered
//!   request is accepted once everywhere; a request on a tool call (`wait`) keeps its
//!   own rule for ids.
//! - Text parts only: their text (joined by blank lines) is one free-text question, under
//!   the `messageId` as above.
//! - A message's `contextId` is the request's dshq context when the request names none;
//!   naming two different ones is refused.
//! - A file part (`raw`, `url`) is refused (`-32005`), as is a data part beside any other
//!   part, a message not from the user, or one with no parts: nothing is dropped silently.

use serde_json::{json, Map, Value};

use super::errors::{Kind, RpcError};
use super::wire::{Message, Role};
use crate::protocol::check::check_id;
use crate::protocol::Code;

/// The question id of a free-text question made from text parts.
pub const TEXT_QUESTION: &str = "answer";

/// The request that `m` carries, as JSON bytes.
pub fn request_of(m: &Message) -> Result<Vec<u8>, RpcError> {
    if m.role != Role::User {
        return Err(RpcError::params(
            "a message to this agent has role ROLE_USER",
        ));
    }
    if m.task_id.as_deref().is_some_and(|t| !t.is_empty()) {
        return Err(RpcError::new(
            Kind::Unsupported,
            Code::BadRequest,
            "a task takes no further messages: a person answers it; send a new message \
             (without taskId) to ask again",
        ));
    }
    if m.parts.is_empty() {
        return Err(RpcError::params(
            "the message has no parts: send a data part with the request, or text",
        ));
    }
    if m.parts.iter().any(|p| p.raw.is_some() || p.url.is_some()) {
        return Err(RpcError::new(
            Kind::ContentType,
            Code::BadRequest,
            "this agent reads a data part (the request) or text parts, not files",
        ));
    }
    let data: Vec<&Value> = m.parts.iter().filter_map(|p| p.data.as_ref()).collect();
    let mut request =
        match data.as_slice() {
            [] => {
                let texts: Vec<&str> = m.parts.iter().filter_map(|p| p.text.as_deref()).collect();
                if texts.len() != m.parts.len() {
                    return Err(RpcError::params("a part holds none of text and data"));
                }
                let text = texts.join("\n\n");
                if text.trim().is_empty() {
                    return Err(RpcError::new(
                        Kind::InvalidParams,
                        Code::EmptyQuestions,
                        "the message's text is empty: there is no question to ask",
                    ));
                }
                let mut r = Map::new();
                r.insert(
                    "questions".into(),
                    json!([{"id": TEXT_QUESTION, "question": text}]),
                );
                r
            }
            [one] if m.parts.len() == 1 => match one {
                Value::Object(o) => o.clone(),
                _ => {
                    return Err(RpcError::params(
                        "the data part must be the request: a JSON object with questions",
                    ))
                }
            },
            _ => return Err(RpcError::params(
                "send the request as the message's only part (one data part), or text parts only",
            )),
        };
    if !request.contains_key("id")
        && !request.contains_key("wait")
        && check_id("messageId", &m.message_id).is_ok()
    {
        request.insert("id".into(), Value::String(m.message_id.clone()));
    }
    if let Some(c) = m.context_id.as_deref().filter(|c| !c.is_empty()) {
        match request.get("context") {
            None => {
                request.insert("context".into(), Value::String(c.to_string()));
            }
            Some(Value::String(named)) if named == c => {}
            Some(_) => {
                return Err(RpcError::params(
                    "the message's contextId and the request's context differ: name one",
                ))
            }
        }
    }
    Ok(serde_json::to_vec(&Value::Object(request)).expect("a JSON object serializes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::wire::Part;

    fn msg(parts: Vec<Part>) -> Message {
        Message {
            message_id: "m-1".into(),
            context_id: None,
            task_id: None,
            role: Role::User,
            parts,
            metadata: None,
        }
    }

    fn parsed(m: &Message) -> Value {
        serde_json::from_slice(&request_of(m).unwrap()).unwrap()
    }

    #[test]
    fn text_alone_is_one_free_text_question_under_the_message_id() {
        let v = parsed(&msg(vec![Part::text("Ship it?"), Part::text("Tonight.")]));
        assert_eq!(v["id"], "m-1");
        assert_eq!(v["questions"][0]["question"], "Ship it?\n\nTonight.");
        assert!(v["questions"][0].get("options").is_none());
    }

    #[test]
    fn a_data_part_is_the_request_and_keeps_its_own_id() {
        let v = parsed(&msg(vec![Part::data(json!({"id": "r1", "questions": []}))]));
        assert_eq!(v["id"], "r1");
        let v = parsed(&msg(vec![Part::data(json!({"questions": []}))]));
        assert_eq!(v["id"], "m-1");
    }

    #[test]
    fn what_cannot_be_read_is_refused_not_dropped() {
        let file = Part {
            url: Some("https://x/y".into()),
            ..Part::default()
        };
        assert_eq!(
            request_of(&msg(vec![file])).unwrap_err().kind,
            Kind::ContentType
        );
        let both = vec![Part::data(json!({})), Part::text("and this")];
        assert_eq!(
            request_of(&msg(both)).unwrap_err().kind,
            Kind::InvalidParams
        );
        assert_eq!(
            request_of(&msg(vec![])).unwrap_err().kind,
            Kind::InvalidParams
        );
        let mut agent = msg(vec![Part::text("x")]);
        agent.role = Role::Agent;
        assert!(request_of(&agent).is_err());
    }

    #[test]
    fn the_context_id_is_the_context_unless_they_differ() {
        let mut m = msg(vec![Part::data(json!({"questions": []}))]);
        m.context_id = Some("ops".into());
        assert_eq!(parsed(&m)["context"], "ops");
        m.parts = vec![Part::data(json!({"context": "dev", "questions": []}))];
        assert!(request_of(&m).is_err());
    }
}
