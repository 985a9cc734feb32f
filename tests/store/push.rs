//! Web Push subscriptions and the push channel's outbox rows as a conformance scenario:
//! a push delivery is written for a context a daemon pushes for (on the new channel name,
//! which the outbox now admits), a device is subscribed once per endpoint (subscribing it
//! again replaces its keys and person), a subscription past its browser's expiry is not
//! live, a bad one is refused and stores nothing, and one is removed when its push service
//! says it is gone. Bookkeeping, not a change of any request: the chain still verifies.

use dshq::core::channel::Channel;
use dshq::store::{PushSubscription, Route, Store};

use crate::scenarios::TestClock;
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
    let mut store = new(&clock);
    store
        .add_delivery_routes(&[Route {
            context: "default".into(),
            channel: Channel::Push,
        }])
        .unwrap();
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
