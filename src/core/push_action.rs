//! A push notification's one-tap actions: which requests may be answered from the
//! notification itself, what each action answers, and what a tapped action's token binds.
//! Pure: the token is signed and checked by the one rule of [`crate::core::mail_link`]
//! (the root's link key, in a domain of its own), the answer goes through the mail
//! link's rule in the store ([`crate::store::queue::links`]), which spends it once.
//!
//! Why only some requests: a tap must be a whole, unambiguous answer. A request of one
//! plan review gets *Approve* (its `approve` option) and *Deny* (its other option when it
//! has one, else a skip: declined either way); a request of one single-select question
//! with one or two options gets one action per option (a notification shows at most two).
//! Anything else (several questions, free text, pick-any, more options, an edit) has no
//! action: the notification opens the request on the page.
//!
//! What a token binds: the request and the context it was sent for (as a mail link: it
//! acts only while the request is there, and only on the request asked before it was
//! made), the person's web identity and the device it was sent to (a tap presents the
//! device's endpoint, so another device, or a device unsubscribed since, acts on nothing),
//! the request's digest (a request that is not the one shown is never answered), the
//! answer, an expiry, and an action id shared by the notification's actions, so one tap
//! of one of them spends all.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::clock::Millis;
use crate::protocol::{Answer, AnswerItem, Request};

/// What a tapped action grants: one answer to one request, as one person, from one device,
/// until an instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionClaims {
    /// The request it answers.
    #[serde(rename = "r")]
    pub request_id: String,
    /// The context whose reviewers it was sent to.
    #[serde(rename = "c")]
    pub context: String,
    /// The web identity's name the device was subscribed under (acts as `web:NAME`).
    #[serde(rename = "w")]
    pub web_name: String,
    /// The device: [`device_of`] its push endpoint.
    #[serde(rename = "s")]
    pub device: String,
    /// The request's digest when the message was sent (`sha256:HEX`).
    #[serde(rename = "d")]
    pub digest: String,
    /// The answer a tap gives.
    #[serde(rename = "a")]
    pub answer: Answer,
    /// When it stops acting (ms since the epoch, the daemon's clock).
    #[serde(rename = "exp")]
    pub expires_ms: Millis,
    /// The notification's action id (32 hex digits), spent by the first tap.
    #[serde(rename = "l")]
    pub action_id: String,
    /// When it was made (its delivery's time; see [`crate::core::mail_link::opens`]).
    #[serde(rename = "iat")]
    pub issued_ms: Millis,
}

impl crate::core::mail_link::Signed for ActionClaims {
    const DOMAIN: &'static str = "dshq-push-action";

    fn expires_ms(&self) -> Millis {
        self.expires_ms
    }
}

/// A device's id in a token: the first 16 bytes of SHA-256 of its push endpoint, in hex
/// (the endpoint itself is a capability and stays out of the token).
pub fn device_of(endpoint: &str) -> String {
    crate::protocol::digest::hex(&Sha256::digest(endpoint.as_bytes())[..16])
}

/// One action a notification offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneTap {
    /// Its name in the notification (`approve`, `deny`, `option1`, `option2`).
    pub name: &'static str,
    /// Its button's title (the option's label for a select).
    pub title: String,
    /// What a tap answers.
    pub answer: Answer,
}

fn one(id: &str, selected: Option<&str>) -> Answer {
    Answer {
        answers: vec![AnswerItem {
            id: id.to_string(),
            selected: selected.map(|s| vec![s.to_string()]).unwrap_or_default(),
            custom: None,
            edited: None,
        }],
    }
}

/// The one-tap actions of `request` (none when it cannot be answered in one tap: see the
/// module's doc).
pub fn one_taps(request: &Request) -> Vec<OneTap> {
    let [q] = request.questions.as_slice() else {
        return Vec::new();
    };
    let options = q.options();
    if let Some(approve) = q.plan_review_approve() {
        let other = options.iter().find(|o| o.label != approve);
        return vec![
            OneTap {
                name: "approve",
                title: "Approve".into(),
                answer: one(&q.id, Some(approve)),
            },
            OneTap {
                name: "deny",
                title: "Deny".into(),
                answer: one(&q.id, other.map(|o| o.label.as_str())),
            },
        ];
    }
    if q.is_multi() || options.is_empty() || options.len() > 2 {
        return Vec::new();
    }
    const NAMES: [&str; 2] = ["option1", "option2"];
    options
        .iter()
        .zip(NAMES)
        .map(|(o, name)| OneTap {
            name,
            title: o.label.clone(),
            answer: one(&q.id, Some(&o.label)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::mail_link::{LinkKey, Refused};

    fn request(v: serde_json::Value) -> Request {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_plan_review_and_a_two_option_select_have_one_taps_and_nothing_else_does() {
        let plan = request(
            serde_json::json!({"questions": [{"id": "p", "question": "Plan?",
            "detail": "do it", "options": [{"label": "Go"}, {"label": "Stop"}],
            "intent": {"kind": "plan-review", "approve": "Go"}}]}),
        );
        let taps = one_taps(&plan);
        assert_eq!(taps.len(), 2);
        assert_eq!(taps[0].answer.answers[0].selected, ["Go"]);
        assert_eq!(taps[1].name, "deny");
        assert_eq!(taps[1].answer.answers[0].selected, ["Stop"]);
        let pick = request(
            serde_json::json!({"questions": [{"id": "q", "question": "Which?",
            "options": [{"label": "A"}, {"label": "B"}]}]}),
        );
        assert_eq!(
            one_taps(&pick)
                .iter()
                .map(|t| t.title.as_str())
                .collect::<Vec<_>>(),
            ["A", "B"]
        );
        let three = request(
            serde_json::json!({"questions": [{"id": "q", "question": "Which?",
            "options": [{"label": "A"}, {"label": "B"}, {"label": "C"}]}]}),
        );
        assert!(one_taps(&three).is_empty());
        let free = request(serde_json::json!({"questions": [{"id": "q", "question": "Why?"}]}));
        assert!(one_taps(&free).is_empty());
        let two = request(serde_json::json!({"questions": [
            {"id": "a", "question": "A?", "options": [{"label": "Y"}]},
            {"id": "b", "question": "B?", "options": [{"label": "Y"}]}]}));
        assert!(one_taps(&two).is_empty());
    }

    #[test]
    fn an_action_token_is_not_a_mail_link_and_expires() {
        let k = LinkKey::new([3; 32]);
        let c = ActionClaims {
            request_id: "r".into(),
            context: "default".into(),
            web_name: "alice".into(),
            device: device_of("https://push.example/x"),
            digest: "sha256:00".into(),
            answer: one("q", Some("A")),
            expires_ms: 10,
            action_id: "00".into(),
            issued_ms: 1,
        };
        let t = k.sign(&c);
        assert_eq!(k.verify_as::<ActionClaims>(&t, 9), Ok(c));
        assert!(matches!(
            k.verify_as::<ActionClaims>(&t, 10),
            Err(Refused::Expired { .. })
        ));
        assert_eq!(k.verify(&t, 0), Err(Refused::Invalid));
    }
}
