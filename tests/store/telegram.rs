//! The Telegram channel's messages as a conformance scenario, through the [`Store`] trait
//! only: a Telegram delivery is written for a context a daemon sends to Telegram for, the
//! message it sent to each chat is recorded once per delivery and chat (a resend after a
//! crash finds it and sends no second one), with the request's digest then and at the
//! store's clock, and a request's messages are listed in the order they were sent (each is
//! edited when the request ends). Recording a message is the sender's bookkeeping, not a
//! change of the request: the chain still verifies.

use dshq::core::channel::Channel;
use dshq::store::driver::telegram::TelegramMessage;
use dshq::store::{Route, Store};

use crate::scenarios::TestClock;
use crate::slack::ask;

fn message(delivery: &str, chat: i64, message_id: i64, request: &str) -> TelegramMessage {
    TelegramMessage {
        delivery_id: delivery.into(),
        chat_id: chat,
        message_id,
        request_id: request.into(),
        digest: "sha256:00".into(),
        posted_ms: 0,
    }
}

/// One message per delivery and chat, the first record kept; a request's messages in
/// sending order, at the store's clock; a message without its digest refused.
pub fn telegram_messages_are_recorded_once_per_delivery_and_chat(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    store
        .add_delivery_routes(&[Route {
            context: "default".into(),
            channel: Channel::Telegram,
        }])
        .unwrap();
    ask(&mut store, "s");
    ask(&mut store, "t");
    let d = store.deliveries("s").unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].channel, d[0].kind.as_str()),
        (Channel::Telegram, "accepted")
    );
    let first = d[0].id.clone();

    assert_eq!(
        store.telegram_message_of_delivery(&first, -100).unwrap(),
        None
    );
    let t0 = clock.now();
    assert!(store
        .record_telegram_message(&message(&first, -100, 7, "s"))
        .unwrap());
    // The same delivery and chat again (a resend after a crash): the first record stays.
    clock.advance(1_000);
    assert!(!store
        .record_telegram_message(&message(&first, -100, 8, "s"))
        .unwrap());
    let m = store
        .telegram_message_of_delivery(&first, -100)
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            m.message_id,
            m.request_id.as_str(),
            m.digest.as_str(),
            m.posted_ms
        ),
        (7, "s", "sha256:00", t0)
    );
    // The same delivery to a second chat of its context.
    assert!(store
        .record_telegram_message(&message(&first, 42, 1, "s"))
        .unwrap());
    assert_eq!(
        store.telegram_message_of_delivery(&first, 43).unwrap(),
        None
    );
    // A reminder's message, later.
    clock.advance(60_000);
    assert!(store
        .record_telegram_message(&message("msg_reminder", -100, 9, "s"))
        .unwrap());
    let got: Vec<(i64, i64)> = store
        .telegram_messages("s")
        .unwrap()
        .iter()
        .map(|m| (m.chat_id, m.message_id))
        .collect();
    assert_eq!(got, [(-100, 7), (42, 1), (-100, 9)]);
    assert!(store.telegram_messages("t").unwrap().is_empty());

    let mut no_digest = message("msg_x", 1, 1, "t");
    no_digest.digest.clear();
    assert!(store.record_telegram_message(&no_digest).is_err());
    assert!(store.telegram_messages("t").unwrap().is_empty());

    let v = store.verify(&[]).unwrap();
    assert_eq!(v.broken, None, "{v:?}");
}
