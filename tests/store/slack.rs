//! The Slack channel's messages as a conformance scenario, through the
//! [`Store`] trait only: a Slack delivery is written for a context a daemon posts to Slack
//! for, the message it posted is recorded once per delivery (a resend after a crash finds
//! it and posts no second one), at the store's clock, and a request's messages are listed
//! in the order they were posted (each is updated when the request ends). Recording a
//! message is the sender's bookkeeping, not a change of the request: the chain still
//! verifies.

use serde_json::json;

use dshq::core::audit::{Actor, Source};
use dshq::core::channel::Channel;
use dshq::protocol::Request;
use dshq::store::{AskInput, Asked, Route, Store};

use crate::scenarios::TestClock;

pub(crate) fn ask(store: &mut Store, id: &str) {
    let v = json!({"id": id, "questions": [{"id": "q", "question": "Ship it?",
                   "options": [{"label": "Yes"}, {"label": "No"}]}]});
    let input = AskInput {
        request: Ok(serde_json::from_value::<Request>(v.clone()).unwrap()),
        fallback_id: None,
        salvaged: (None, None),
        raw: v.to_string(),
        source: Source::Cli,
        actor: Actor::Cli,
    };
    assert!(matches!(store.ask(input), Ok(Asked::Accepted(_))));
}

/// One message per delivery, the first record kept; a request's messages in posting
/// order, at the store's clock; a message with no channel or ts refused.
pub fn slack_messages_are_recorded_once_per_delivery(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    store
        .add_delivery_routes(&[Route {
            context: "default".into(),
            channel: Channel::Slack,
        }])
        .unwrap();
    ask(&mut store, "s");
    ask(&mut store, "t");
    let d = store.deliveries("s").unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].channel, d[0].kind.as_str()),
        (Channel::Slack, "accepted")
    );
    let first = d[0].id.clone();

    assert_eq!(store.slack_message_of_delivery(&first).unwrap(), None);
    let t0 = clock.now();
    assert!(store
        .record_slack_message(&first, "s", "C0123", "1800000000.000100")
        .unwrap());
    // The same delivery again (a resend after a crash): the first record is kept.
    clock.advance(1_000);
    assert!(!store
        .record_slack_message(&first, "s", "C0123", "1800000001.000200")
        .unwrap());
    let m = store.slack_message_of_delivery(&first).unwrap().unwrap();
    assert_eq!(
        (
            m.request_id.as_str(),
            m.channel.as_str(),
            m.ts.as_str(),
            m.posted_ms
        ),
        ("s", "C0123", "1800000000.000100", t0)
    );

    // A reminder's message, later, in another channel.
    clock.advance(60_000);
    assert!(store
        .record_slack_message("msg_reminder", "s", "C0456", "1800000061.000300")
        .unwrap());
    let all = store.slack_messages("s").unwrap();
    let got: Vec<(&str, &str)> = all
        .iter()
        .map(|m| (m.channel.as_str(), m.ts.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("C0123", "1800000000.000100"),
            ("C0456", "1800000061.000300")
        ]
    );
    assert!(store.slack_messages("t").unwrap().is_empty());

    assert!(store
        .record_slack_message("msg_x", "t", "C0123", "")
        .is_err());
    assert!(store.record_slack_message("msg_x", "t", "", "1.2").is_err());
    assert!(store.slack_messages("t").unwrap().is_empty());

    let v = store.verify(&[]).unwrap();
    assert_eq!(v.broken, None, "{v:?}");
}
