//! Web Push subscriptions and the push channel's outbox rows as a conformance scenario:
//! a push delivery is written for a context a daemon pushes for (on the new channel name,
//! which the outbox now admits), a device is subscribed once per endpoint (subscribing it
//! again replaces its keys and person), a subscription past its browser's expiry is not
//! live, a bad one is refused and stores nothing, and one is removed when its push service
//! says it is gone. The devices a delivery reached are recorded once per delivery and
//! device, so a retry goes only to the others, and are pruned with their request once the
//! delivery is gone. Bookkeeping, not a change of any request: the chain still verifies.

use serde_json::json;

use dshq::core::audit::Actor;
use dshq::core::channel::Channel;
use dshq::store::{LeaseRef, PushSubscription, Route, Store};

use crate::scenarios::{pick, MemoryExport, TestClock};
use crate::slack::ask;

fn device(endpoint: &str, person: &str, now: i64) -> PushSubscription {
    PushSubscription {
        endpoint: endpoint.into(),
        web_name: person.into(),
        person: person.into(),
        p256dh: "BPk".into(),
        auth: "au".into(),
        created_ms: now,
        expires_ms: None,
    }
}

/// `store` with the push channel on for context `default`.
fn pushing(mut store: Store) -> Store {
    store
        .add_delivery_routes(&[Route {
            context: "default".into(),
            channel: Channel::Push,
        }])
        .unwrap();
    store
}

fn endpoints(store: &mut Store) -> Vec<(String, String)> {
    store
        .push_subscriptions()
        .unwrap()
        .into_iter()
        .map(|s| (s.endpoint, s.person))
        .collect()
}

pub fn push_subscriptions_are_one_per_device_and_push_rows_are_written(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let mut store = pushing(new(&clock));
    ask(&mut store, "p");
    let d = store.deliveries("p").unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0].channel, d[0].kind.as_str()),
        (Channel::Push, "accepted")
    );

    let t0 = clock.now();
    store
        .push_subscribe(&device("https://push.example/a", "alice", t0))
        .unwrap();
    clock.advance(1_000);
    store
        .push_subscribe(&device("https://push.example/b", "bob", clock.now()))
        .unwrap();
    assert_eq!(
        endpoints(&mut store),
        [
            ("https://push.example/a".to_string(), "alice".to_string()),
            ("https://push.example/b".to_string(), "bob".to_string())
        ]
    );
    // The same device subscribed again, by bob now, with new keys: one row, bob's.
    clock.advance(1_000);
    let again = PushSubscription {
        p256dh: "BNew".into(),
        ..device("https://push.example/a", "bob", clock.now())
    };
    store.push_subscribe(&again).unwrap();
    let a = store
        .push_subscription("https://push.example/a")
        .unwrap()
        .unwrap();
    assert_eq!(a, again);
    assert_eq!(store.push_subscriptions().unwrap().len(), 2);

    // Past its browser's expiry: not live (not sent to, no action through it).
    let expiring = PushSubscription {
        expires_ms: Some(clock.now() + 5_000),
        ..device("https://push.example/c", "carol", clock.now())
    };
    store.push_subscribe(&expiring).unwrap();
    assert!(store
        .push_subscription("https://push.example/c")
        .unwrap()
        .is_some());
    clock.advance(5_000);
    assert!(store
        .push_subscription("https://push.example/c")
        .unwrap()
        .is_none());
    assert_eq!(store.push_subscriptions().unwrap().len(), 2);

    // Refused whole: nothing stored.
    for bad in [
        device("", "alice", 0),
        PushSubscription {
            auth: String::new(),
            ..device("https://push.example/d", "alice", 0)
        },
        PushSubscription {
            person: String::new(),
            ..device("https://push.example/d", "alice", 0)
        },
    ] {
        assert!(store.push_subscribe(&bad).is_err());
    }
    assert!(store
        .push_subscription("https://push.example/d")
        .unwrap()
        .is_none());

    // Removed from the page: only by the identity that subscribed it (a is bob's now).
    assert!(!store
        .push_unsubscribe("https://push.example/a", Some("alice"))
        .unwrap());
    assert!(store
        .push_subscription("https://push.example/a")
        .unwrap()
        .is_some());
    assert!(store
        .push_unsubscribe("https://push.example/a", Some("bob"))
        .unwrap());
    assert!(store
        .push_subscription("https://push.example/a")
        .unwrap()
        .is_none());
    store.push_subscribe(&again).unwrap();

    // Gone (its push service answered 410): removed once.
    assert!(store
        .push_unsubscribe("https://push.example/b", None)
        .unwrap());
    assert!(!store
        .push_unsubscribe("https://push.example/b", None)
        .unwrap());
    assert_eq!(
        endpoints(&mut store),
        [("https://push.example/a".to_string(), "bob".to_string())]
    );

    let v = store.verify(&[]).unwrap();
    assert_eq!(v.broken, None, "{v:?}");
}

fn reached(store: &mut Store, delivery: &str) -> Vec<String> {
    let mut r = store.push_reached(delivery).unwrap();
    r.sort();
    r
}

/// The devices a push delivery reached: recorded once per delivery and device (a second
/// record of the same changes nothing), each delivery apart, one without an endpoint
/// refused; pruned with the request once its delivery went out, kept while the delivery
/// is still to be sent (its retry must still skip them).
pub fn push_reached_devices_are_recorded_per_delivery_and_pruned_with_it(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let mut store = pushing(new(&clock));
    let (reg, _) = store.register("default", "alice", 600_000).unwrap();
    for id in ["r1", "r2", "r3"] {
        crate::ladder::ask(&mut store, crate::ladder::request(id, json!(null))).unwrap();
    }
    let first = |store: &mut Store, id: &str| store.deliveries(id).unwrap()[0].id.clone();
    let (d1, d2) = (first(&mut store, "r1"), first(&mut store, "r2"));
    let (a, b) = ("https://push.example/a", "https://push.example/b");
    assert!(reached(&mut store, &d1).is_empty());
    assert!(store.record_push_reached(&d1, "r1", a).unwrap());
    assert!(
        !store.record_push_reached(&d1, "r1", a).unwrap(),
        "recorded twice"
    );
    assert!(store.record_push_reached(&d1, "r1", b).unwrap());
    assert!(store.record_push_reached(&d2, "r2", a).unwrap());
    assert!(store.record_push_reached(&d2, "r2", "").is_err());
    assert_eq!(reached(&mut store, &d1), [a, b]);
    assert_eq!(reached(&mut store, &d2), [a]);

    // r1's deliveries all went out, r2's first is still to be sent; r3 is the newest.
    for id in ["r1", "r2", "r3"] {
        store
            .answer(&LeaseRef::Token(reg.lease.clone()), id, &pick("SQLite"))
            .unwrap();
    }
    for d in store.deliveries("r1").unwrap() {
        store.mark_delivered(&d.id, clock.now()).unwrap();
    }
    crate::scenarios::mark_outcomes_written(&mut store);
    clock.advance(10);
    let cut = clock.now();
    let pruned = store.prune(cut, None, &Actor::Cli, &mut MemoryExport::default());
    assert_eq!(pruned.unwrap().requests, 2);
    assert!(
        reached(&mut store, &d1).is_empty(),
        "kept past its delivery"
    );
    assert_eq!(
        reached(&mut store, &d2),
        [a],
        "its delivery is still to be sent"
    );
    let v = store.verify(&[]).unwrap();
    assert_eq!(v.broken, None, "{v:?}");
}
