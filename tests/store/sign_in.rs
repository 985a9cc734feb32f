//! A sign-in through the identity provider on the record, as a conformance scenario: one
//! `signed-in` event per sign-in, naming no request, chained like the rest: the chain and
//! the record check still verify, and no request row comes of it.

use serde_json::json;

use dshq::core::audit::Actor;
use dshq::store::Store;

use crate::scenarios::TestClock;

/// Two sign-ins: two events, the head moves, the chain verifies, nothing else changes.
pub fn a_sign_in_is_one_chained_event(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let before = store.verify(&[]).unwrap();
    let head = store.events_head().unwrap();
    let alice = Actor::Oidc {
        person: "alice".into(),
        subject: "alice@corp.example".into(),
    };
    let data = json!({"person": "alice", "claims": {"groups": ["dshq-reviewers"]},
                      "decided": {"role": "reviewer", "contexts": null}});
    store.record_sign_in(&alice, data.clone()).unwrap();
    clock.advance(1_000);
    store.record_sign_in(&alice, data).unwrap();
    assert_ne!(store.events_head().unwrap(), head);
    let after = store.verify(&[]).unwrap();
    assert_eq!(after.broken, None, "{after:?}");
    assert_eq!(after.events, before.events + 2);
    assert_eq!(
        after.requests, before.requests,
        "no request row comes of it"
    );
}
