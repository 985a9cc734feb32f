//! What a push message says: the JSON the service worker (`/sw.js`) turns into a
//! notification. A notification shows plain text, so the asker's text is made safe for
//! one line ([`crate::text::one_line`]: control and bidi characters become visible
//! escapes) and cut to what a lock screen shows; it is never markup. The one-tap actions
//! carry their signed tokens ([`crate::core::push_action`]); a message that would be too
//! large for a push service (RFC 8291 allows 4096 bytes a record, [`MAX_PLAIN`] of them
//! plaintext) goes without its actions: the notification then opens the page.

use serde_json::{json, Value};

use crate::core::push_action::OneTap;
use crate::protocol::Request;
use crate::text::one_line;

/// The largest plaintext a message may be: a 4096-byte record less RFC 8188's header
/// (86 bytes with a P-256 key id), its padding delimiter and the AEAD tag.
pub const MAX_PLAIN: usize = 4096 - 86 - 1 - 16;

/// The longest text a notification's body shows of the first question.
const BODY_CHARS: usize = 180;

/// The longest title of an action (the option's label, cut).
const ACTION_CHARS: usize = 40;

fn cut(s: &str, n: usize) -> String {
    let s = one_line(s);
    if s.chars().count() <= n {
        return s.into_owned();
    }
    let mut out: String = s.chars().take(n - 1).collect();
    out.push('…');
    out
}

/// What a message is about.
pub struct About<'a> {
    /// The request id.
    pub id: &'a str,
    /// The context it is in.
    pub context: &'a str,
    /// What happened: `accepted`, `reminded`, `escalated`.
    pub kind: &'a str,
    /// The request.
    pub request: &'a Request,
}

/// The message of `about`, with `actions` (each a one-tap action and its signed token):
/// the JSON the service worker reads.
pub fn message(about: &About<'_>, actions: &[(OneTap, String)]) -> Vec<u8> {
    let mut m = plain(about);
    m["actions"] = actions
        .iter()
        .map(|(tap, token)| {
            json!({"action": tap.name, "title": cut(&tap.title, ACTION_CHARS), "token": token})
        })
        .collect();
    let bytes = m.to_string().into_bytes();
    if bytes.len() <= MAX_PLAIN {
        return bytes;
    }
    // Too large with its tokens (long labels): the page is one tap away.
    plain(about).to_string().into_bytes()
}

fn plain(about: &About<'_>) -> Value {
    let what = match about.kind {
        "reminded" => "Reminder: ",
        "escalated" => "Escalated: ",
        _ => "",
    };
    let qs = &about.request.questions;
    let mut body = qs
        .first()
        .map(|q| cut(&q.question, BODY_CHARS))
        .unwrap_or_default();
    if qs.len() > 1 {
        body.push_str(&format!(" (+{} more)", qs.len() - 1));
    }
    json!({
        "title": format!("{what}{} · dshq", cut(about.context, 60)),
        "body": body,
        "tag": format!("dshq-{}", about.id),
        "url": format!("/r/{}", crate::html::urlencode(about.id)),
        "request": about.id,
        "kind": about.kind,
        "actions": [],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_one_visible_line_and_a_huge_label_drops_the_actions() {
        let r: Request = serde_json::from_value(json!({"questions": [{"id": "q",
            "question": "Ship?\n\u{1b}[31m\u{202e}evil", "options": [{"label": "A"}]}]}))
        .unwrap();
        let about = About {
            id: "r/1",
            context: "ops",
            kind: "reminded",
            request: &r,
        };
        let taps = crate::core::push_action::one_taps(&r);
        let m: Value =
            serde_json::from_slice(&message(&about, &[(taps[0].clone(), "t".into())])).unwrap();
        assert_eq!(m["body"], "Ship? \\x1b[31m\\u{202e}evil");
        assert_eq!(m["title"], "Reminder: ops · dshq");
        assert_eq!(m["url"], "/r/r%2F1");
        assert_eq!(m["actions"][0]["token"], "t");
        let big = "x".repeat(MAX_PLAIN);
        let m: Value = serde_json::from_slice(&message(&about, &[(taps[0].clone(), big)])).unwrap();
        assert_eq!(m["actions"], json!([]));
    }
}
