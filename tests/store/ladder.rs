//! The deadline ladder as conformance scenarios, through the [`Store`] trait
//! only, on the scenario's clock: each rung runs in the sweep once its time has passed,
//! each is an event of the chain (`reminded`, `escalated`, `expired`), the next rung is
//! what the daemon wakes for (`next_due`), an expiry is `ASK_EXPIRED` with no answer
//! unless the asker declared a default, and a declared default is attributed to policy.

use serde_json::{json, Value};

use dshq::core::audit::{Actor, Source};
use dshq::core::channel::Channel;
use dshq::protocol::error::Code;
use dshq::protocol::{Outcome, Request};
use dshq::store::{Answered, AskInput, Asked, Route, Status, Store};

use crate::lifecycle::{code, kinds, lease, row};
use crate::scenarios::{pick, TestClock};

const MIN: i64 = 60_000;

pub(crate) fn request(id: &str, ladder: Value) -> Value {
    json!({
        "id": id,
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}],
        "ladder": ladder,
    })
}

pub(crate) fn ask(store: &mut Store, v: Value) -> Result<dshq::store::Accepted, (Code, String)> {
    let raw = v.to_string();
    let input = AskInput {
        request: Ok(serde_json::from_value::<Request>(v).unwrap()),
        fallback_id: None,
        salvaged: (None, None),
        raw,
        source: Source::Cli,
        actor: Actor::Cli,
    };
    match store.ask(input) {
        Ok(Asked::Accepted(a)) => Ok(a),
        Ok(Asked::Rejected { error, .. }) => Err((error.code, error.message)),
        Err(e) => Err((e.to_user_error().code, e.to_string())),
    }
}

fn outcome(store: &mut Store, id: &str) -> Option<Outcome> {
    store
        .outbox_pending(0, 1_000)
        .unwrap()
        .into_iter()
        .find(|(_, o)| o.id() == id)
        .map(|(_, o)| o)
}

fn verifies(store: &mut Store) {
    let v = store.verify(&[]).unwrap();
    assert_eq!(v.broken, None, "{v:?}");
}

/// Remind at 1m, escalate to another context at 2m (dropping the old context's claim),
/// expire at 3m: each rung once, in order, strictly after its time, each an event; the
/// daemon's next wake-up is the next rung; the expiry is `ASK_EXPIRED` with no answer.
pub fn the_ladder_reminds_escalates_and_expires_each_as_an_event(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    let ladder = json!({"remindAfter": "1m", "escalateAfter": "2m", "escalateTo": "oncall",
                        "expireAfter": "3m"});
    ask(&mut store, request("r1", ladder)).unwrap();
    assert_eq!(store.next_due().unwrap(), Some(t0 + MIN));
    let (reg, _) = store.register("default", "alice", 10 * MIN).unwrap();
    store.claim(&lease(&reg.lease), "r1").unwrap();

    // Not before its time (rungs run strictly after it, as deadlines do).
    clock.advance(MIN);
    store.sweep().unwrap();
    assert_eq!(kinds(&mut store, "r1"), ["accepted", "claimed"]);

    clock.advance(1);
    let swept = store.sweep().unwrap().expect("the reminder fell due");
    assert_eq!(swept.laddered, ["r1"]);
    assert_eq!(kinds(&mut store, "r1"), ["accepted", "claimed", "reminded"]);
    let r = row(&mut store, "r1");
    assert_eq!((r.status, r.ladder_done), (Status::Claimed, 1));
    assert_eq!(store.next_due().unwrap(), Some(t0 + 2 * MIN));
    // A second sweep at the same time runs nothing again.
    store.sweep().unwrap();
    assert_eq!(kinds(&mut store, "r1").len(), 3);

    clock.advance(MIN);
    store.sweep().unwrap();
    let r = row(&mut store, "r1");
    assert_eq!(r.context, "oncall");
    assert_eq!(
        r.status,
        Status::Pending,
        "the old context's claim is dropped"
    );
    assert_eq!((r.claimed_lease, r.ladder_done), (None, 2));
    let ev = store.events("r1").unwrap();
    let esc = ev.last().unwrap();
    assert_eq!(
        (esc.kind.as_str(), esc.actor.as_str()),
        ("escalated", "daemon")
    );
    assert_eq!(esc.data["from"], "default");
    assert_eq!(esc.data["to"], "oncall");
    // The lease of the old context no longer reaches it.
    assert_eq!(
        code(store.answer(&lease(&reg.lease), "r1", &pick("SQLite"))),
        Code::WrongContext
    );
    assert!(outcome(&mut store, "r1").is_none());
    assert_eq!(store.next_due().unwrap(), Some(t0 + 3 * MIN));

    clock.advance(MIN);
    let swept = store.sweep().unwrap().expect("the expiry fell due");
    assert_eq!(swept.expired, ["r1"]);
    let r = row(&mut store, "r1");
    assert_eq!(r.status, Status::Expired);
    assert_eq!(r.error_code.as_deref(), Some("ASK_EXPIRED"));
    assert_eq!((r.answer, r.decided_by, r.ladder_done), (None, None, 3));
    assert_eq!(
        kinds(&mut store, "r1"),
        ["accepted", "claimed", "reminded", "escalated", "expired"]
    );
    match outcome(&mut store, "r1").expect("the expiry is published") {
        Outcome::Error(e) => {
            assert_eq!(e.error.code, Code::AskExpired);
            assert!(e.error.message.contains("nobody answered"), "{e:?}");
        }
        other => panic!("an expiry answers nothing: {other:?}"),
    }
    // Final: nothing is due any more, and nobody can answer it now.
    assert_eq!(
        store.next_due().unwrap().filter(|d| *d < t0 + 9 * MIN),
        None
    );
    verifies(&mut store);
}

/// `onExpire: "default"`: on expiry the request is answered with the declared default,
/// with no provider and `decidedBy: "policy"`, recorded as the `expired` event; the chain
/// and the records verify.
pub fn a_declared_default_is_used_on_expiry_and_attributed_to_policy(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let ladder = json!({"expireAfter": "5m", "onExpire": "default",
                        "default": {"answers": [{"id": "db", "selected": ["SQLite"]}]}});
    ask(&mut store, request("d1", ladder)).unwrap();
    // A person's request beside it, answered by a person: no `decidedBy`.
    ask(&mut store, request("p1", json!({"expireAfter": "5m"}))).unwrap();
    let (reg, _) = store.register("default", "alice", 10 * MIN).unwrap();
    match store
        .answer(&lease(&reg.lease), "p1", &pick("Postgres"))
        .unwrap()
    {
        Answered::Finished(Outcome::Answered(a)) => assert_eq!(a.decided_by, None),
        other => panic!("{other:?}"),
    }
    clock.advance(5 * MIN + 1);
    store.sweep().unwrap();
    let r = row(&mut store, "d1");
    assert_eq!(r.status, Status::Answered);
    assert_eq!(r.decided_by.as_deref(), Some("policy"));
    assert_eq!(r.provider, None);
    match outcome(&mut store, "d1").expect("published") {
        Outcome::Answered(a) => {
            assert_eq!(a.decided_by.as_deref(), Some("policy"));
            assert_eq!(a.provider, None);
            assert_eq!(a.answer.answers[0].selected, ["SQLite"]);
        }
        other => panic!("{other:?}"),
    }
    let ev = store.events("d1").unwrap();
    let last = ev.last().unwrap();
    assert_eq!(last.kind, "expired");
    assert_eq!(last.data["decidedBy"], "policy");
    // The person's answer stands; its ladder never ran.
    assert_eq!(kinds(&mut store, "p1"), ["accepted", "answered"]);
    assert_eq!(row(&mut store, "p1").ladder_done, 0);
    verifies(&mut store);
}

/// Nothing is chosen for a person unless declared: a default without `onExpire:
/// "default"` is refused at acceptance, as is a default the answer rules refuse and a
/// rung the deadline would pre-empt; a request without `ladder` stores none and its
/// `accepted` event carries none.
pub fn a_ladder_never_decides_unless_declared(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let default = json!({"answers": [{"id": "db", "selected": ["SQLite"]}]});
    for (ladder, extra, says) in [
        (
            json!({"expireAfter": "1m", "default": default}),
            json!({}),
            "unless declared",
        ),
        (
            json!({"expireAfter": "1m", "onExpire": "default",
                   "default": {"answers": [{"id": "db", "selected": ["MySQL"]}]}}),
            json!({}),
            "not a valid answer",
        ),
        (
            json!({"expireAfter": "2m"}),
            json!({"timeout": "1m"}),
            "deadline",
        ),
    ] {
        let mut v = request("bad", ladder);
        for (k, val) in extra.as_object().unwrap() {
            v[k] = val.clone();
        }
        let (c, m) = ask(&mut store, v).unwrap_err();
        assert_eq!(c, Code::BadRequest);
        assert!(m.contains(says), "{m}");
    }
    let mut plain = request("plain", json!(null));
    plain.as_object_mut().unwrap().remove("ladder");
    ask(&mut store, plain).unwrap();
    assert_eq!(row(&mut store, "plain").ladder, None);
    let ev = store.events("plain").unwrap();
    assert!(ev[0].data.get("ladder").is_none(), "{:?}", ev[0].data);
    assert_eq!(store.next_due().unwrap(), None);

    // Without a default, expiry answers nothing; an answer before it stops the ladder.
    ask(
        &mut store,
        request("x", json!({"remindAfter": "1m", "expireAfter": "2m"})),
    )
    .unwrap();
    let (reg, _) = store.register("default", "alice", 10 * MIN).unwrap();
    clock.advance(MIN + 1);
    store.sweep().unwrap();
    store
        .answer(&lease(&reg.lease), "x", &pick("Postgres"))
        .unwrap();
    clock.advance(5 * MIN);
    store.sweep().unwrap();
    assert_eq!(kinds(&mut store, "x"), ["accepted", "reminded", "answered"]);
    assert_eq!(row(&mut store, "x").status, Status::Answered);
    verifies(&mut store);
}

/// What the ladder writes is a record: on a SQLite file, a rung count or a context edited
/// in place (the triggers allow both while the request is open) fails `audit verify`, and
/// the resolved ladder itself cannot be edited at all.
#[test]
fn sqlite_verify_catches_an_edited_ladder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dshq.db");
    let clock = TestClock::new();
    let mut store: Store = dshq::store::sqlite::SqliteStore::with_clock(
        dshq::store::sqlite::open(&path).unwrap(),
        clock.as_fn(),
    )
    .into();
    let ladder = json!({"remindAfter": "1m", "escalateAfter": "2m", "expireAfter": "3m"});
    ask(&mut store, request("t", ladder)).unwrap();
    clock.advance(MIN + 1);
    store.sweep().unwrap();
    verifies(&mut store);
    let raw = rusqlite::Connection::open(&path).unwrap();
    for (edit, undo, says) in [
        (
            "UPDATE requests SET ladder_done = 0 WHERE id = 't'",
            "UPDATE requests SET ladder_done = 1 WHERE id = 't'",
            "rungs",
        ),
        (
            "UPDATE requests SET context = 'elsewhere' WHERE id = 't'",
            "UPDATE requests SET context = 'default' WHERE id = 't'",
            "context",
        ),
    ] {
        raw.execute_batch(edit).unwrap();
        let v = store.verify(&[]).unwrap();
        let broken = v.broken.unwrap_or_else(|| panic!("{edit} was not caught"));
        assert!(broken.contains(says), "{edit}: {broken}");
        raw.execute_batch(undo).unwrap();
        verifies(&mut store);
    }
    let e = raw
        .execute_batch("UPDATE requests SET ladder = NULL WHERE id = 't'")
        .unwrap_err();
    assert!(e.to_string().contains("record"), "{e}");
}

/// The deliveries outbox: a row per notified event, written with the event, only for a
/// context a daemon sends for; each with its own stable id; none for a refused act; the
/// retry bookkeeping (a failed attempt waits for its next time, a delivered row is done),
/// and the counts the metrics show.
pub fn deliveries_are_written_with_their_events(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let ctx = routes(&[("default", Channel::Webhook)]);
    store.add_delivery_routes(&ctx).unwrap();
    store.add_delivery_routes(&ctx).unwrap(); // twice is once
    ask(&mut store, request("w", json!({"remindAfter": "1m"}))).unwrap();
    let mut quiet = request("q", json!(null));
    quiet["context"] = json!("elsewhere");
    quiet.as_object_mut().unwrap().remove("ladder");
    ask(&mut store, quiet).unwrap();
    let (reg, _) = store.register("default", "alice", 10 * MIN).unwrap();
    store.claim(&lease(&reg.lease), "w").unwrap();
    // A refused act writes nothing.
    assert!(store
        .answer(&lease(&reg.lease), "w", &pick("MySQL"))
        .is_err());
    clock.advance(MIN + 1);
    store.sweep().unwrap();
    store
        .answer(&lease(&reg.lease), "w", &pick("SQLite"))
        .unwrap();
    let d = store.deliveries("w").unwrap();
    let kinds: Vec<&str> = d.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, ["accepted", "claimed", "reminded", "answered"]);
    let mut ids: Vec<&str> = d.iter().map(|d| d.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "every delivery has its own id");
    assert!(d
        .iter()
        .all(|d| d.id.starts_with("msg_") && d.context == "default"));
    let body: Value = serde_json::from_str(&d[0].body).unwrap();
    assert_eq!(body["type"], "dshq.request.accepted");
    assert_eq!(body["data"]["id"], "w");
    assert_eq!(body["data"]["questions"], json!(["Which database?"]));
    assert!(
        store.deliveries("q").unwrap().is_empty(),
        "no channel, no row"
    );

    let now = clock.now();
    let due = store.deliveries_due(&ctx, now, 100).unwrap();
    assert_eq!(due.len(), 4);
    assert!(store
        .deliveries_due(&routes(&[("elsewhere", Channel::Webhook)]), now, 100)
        .unwrap()
        .is_empty());
    store
        .mark_delivery_failed(&due[0].id, now + 5_000, "HTTP 500")
        .unwrap();
    store.mark_delivered(&due[1].id, now).unwrap();
    let left = store.deliveries_due(&ctx, now, 100).unwrap();
    assert_eq!(left.len(), 2);
    assert_eq!(store.next_delivery_due(&ctx).unwrap(), Some(now));
    let c = store.delivery_counts().unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!(
        (
            c[0].channel,
            c[0].pending,
            c[0].delivered,
            c[0].failed_attempts
        ),
        (Channel::Webhook, 3, 1, 1)
    );
    for d in &left {
        store.mark_delivered(&d.id, now).unwrap();
    }
    assert_eq!(store.next_delivery_due(&ctx).unwrap(), Some(now + 5_000));
    assert_eq!(
        store.deliveries_due(&ctx, now + 5_000, 100).unwrap().len(),
        1
    );
    let failed = &store.deliveries("w").unwrap()[0];
    assert_eq!(
        (failed.attempts, failed.last_error.as_deref()),
        (1, Some("HTTP 500"))
    );
    verifies(&mut store);
}

/// Who was told hears the end: a request escalated from a context with only a webhook
/// and mail to one with only Slack keeps telling the webhook every later step (the
/// escalation, its end), tells the old context's mail once where it went, and tells
/// Slack what Slack takes; each row goes to its own route, the body naming the request's
/// context now. A request never escalated goes where it always did.
pub fn who_was_told_hears_the_end(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    store
        .add_delivery_routes(&routes(&[
            ("default", Channel::Webhook),
            ("default", Channel::Email),
            ("oncall", Channel::Slack),
        ]))
        .unwrap();
    let ladder = json!({"remindAfter": "1m", "escalateAfter": "2m", "escalateTo": "oncall",
                        "expireAfter": "3m"});
    ask(&mut store, request("t", ladder)).unwrap();
    for _ in 0..3 {
        clock.advance(MIN + 1);
        store.sweep().unwrap();
    }
    assert_eq!(
        kinds(&mut store, "t"),
        ["accepted", "reminded", "escalated", "expired"]
    );
    let d = store.deliveries("t").unwrap();
    // In the order of the events; within one event, in no particular order.
    let order = ["accepted", "reminded", "escalated", "expired"];
    let mut went: Vec<(usize, &str, Channel)> = d
        .iter()
        .map(|d| {
            let at = order.iter().position(|k| *k == d.kind).unwrap();
            (at, d.context.as_str(), d.channel)
        })
        .collect();
    assert!(went.windows(2).all(|w| w[0].0 <= w[1].0), "{went:?}");
    went.sort();
    let mut want: Vec<(usize, &str, Channel)> = [
        ("default", Channel::Webhook, "accepted"),
        ("default", Channel::Email, "accepted"),
        ("default", Channel::Webhook, "reminded"),
        ("default", Channel::Email, "reminded"),
        ("oncall", Channel::Slack, "escalated"),
        ("default", Channel::Webhook, "escalated"),
        ("default", Channel::Email, "escalated"),
        ("oncall", Channel::Slack, "expired"),
        ("default", Channel::Webhook, "expired"),
    ]
    .iter()
    .map(|(c, ch, k)| (order.iter().position(|o| o == k).unwrap(), *c, *ch))
    .collect();
    want.sort();
    assert_eq!(went, want);
    for d in &d[4..] {
        let body: Value = serde_json::from_str(&d.body).unwrap();
        assert_eq!(body["data"]["context"], "oncall", "{d:?}");
    }
    // Each route reads its own rows.
    let due = store
        .deliveries_due(&routes(&[("default", Channel::Webhook)]), clock.now(), 100)
        .unwrap();
    assert_eq!(due.len(), 4);

    // Escalated, then answered in its new context: the webhook hears the answer.
    ask(
        &mut store,
        request("v", json!({"escalateAfter": "1m", "escalateTo": "oncall"})),
    )
    .unwrap();
    clock.advance(MIN + 1);
    store.sweep().unwrap();
    let (reg, _) = store.register("oncall", "bob", 10 * MIN).unwrap();
    store.claim(&lease(&reg.lease), "v").unwrap();
    store
        .answer(&lease(&reg.lease), "v", &pick("SQLite"))
        .unwrap();
    let heard: Vec<(String, Channel, String)> = store
        .deliveries("v")
        .unwrap()
        .into_iter()
        .filter(|d| d.context == "default")
        .map(|d| (d.context, d.channel, d.kind))
        .collect();
    assert!(
        heard.contains(&("default".into(), Channel::Webhook, "answered".into())),
        "{heard:?}"
    );

    // Never escalated: only its own context's routes, as before.
    ask(&mut store, request("u", json!(null))).unwrap();
    let (reg, _) = store.register("default", "alice", 10 * MIN).unwrap();
    store.claim(&lease(&reg.lease), "u").unwrap();
    store
        .answer(&lease(&reg.lease), "u", &pick("SQLite"))
        .unwrap();
    let mut kinds_of_u: Vec<(String, Channel, String)> = store
        .deliveries("u")
        .unwrap()
        .into_iter()
        .map(|d| (d.kind, d.channel, d.context))
        .collect();
    kinds_of_u.sort();
    let at = |k: &str, c| (k.to_string(), c, "default".to_string());
    assert_eq!(
        kinds_of_u,
        [
            at("accepted", Channel::Webhook),
            at("accepted", Channel::Email),
            at("answered", Channel::Webhook),
            at("claimed", Channel::Webhook),
        ]
    );
    verifies(&mut store);
}

fn routes(r: &[(&str, Channel)]) -> Vec<Route> {
    r.iter()
        .map(|(context, channel)| Route {
            context: context.to_string(),
            channel: *channel,
        })
        .collect()
}

/// Channels: an event goes out once per channel of its context that takes its kind (a
/// mail only when a person is needed), each row with its own id and retry state, read
/// back by route; a channel that fails holds back no other.
pub fn each_channel_has_its_own_rows(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let both = routes(&[("default", Channel::Webhook), ("default", Channel::Email)]);
    store.add_delivery_routes(&both).unwrap();
    ask(&mut store, request("c", json!({"remindAfter": "1m"}))).unwrap();
    let (reg, _) = store.register("default", "alice", 10 * MIN).unwrap();
    store.claim(&lease(&reg.lease), "c").unwrap();
    clock.advance(MIN + 1);
    store.sweep().unwrap();
    store
        .answer(&lease(&reg.lease), "c", &pick("SQLite"))
        .unwrap();
    let d = store.deliveries("c").unwrap();
    let of = |channel: Channel| -> Vec<&str> {
        d.iter()
            .filter(|d| d.channel == channel)
            .map(|d| d.kind.as_str())
            .collect()
    };
    assert_eq!(
        of(Channel::Webhook),
        ["accepted", "claimed", "reminded", "answered"]
    );
    assert_eq!(of(Channel::Email), ["accepted", "reminded"]);
    assert_eq!(of(Channel::Slack), Vec::<&str>::new());
    let mut ids: Vec<&str> = d.iter().map(|d| d.id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 6, "every row has its own id");
    let (mail, hook) = (&d[0], &d[1]);
    assert_eq!(
        mail.body, hook.body,
        "one event, one body, whatever the channel"
    );

    let now = clock.now();
    let mails = routes(&[("default", Channel::Email)]);
    let due = store.deliveries_due(&mails, now, 100).unwrap();
    assert_eq!(due.len(), 2);
    assert!(due.iter().all(|d| d.channel == Channel::Email));
    // The mail server is down: the mails wait, the webhooks do not.
    for m in &due {
        store
            .mark_delivery_failed(&m.id, now + 60_000, "421")
            .unwrap();
    }
    assert!(store.deliveries_due(&mails, now, 100).unwrap().is_empty());
    let hooks = routes(&[("default", Channel::Webhook)]);
    assert_eq!(store.deliveries_due(&hooks, now, 100).unwrap().len(), 4);
    assert_eq!(store.next_delivery_due(&mails).unwrap(), Some(now + 60_000));
    let counts: Vec<_> = store
        .delivery_counts()
        .unwrap()
        .into_iter()
        .map(|c| (c.channel, c.pending, c.delivered, c.failed_attempts))
        .collect();
    // By channel name; each channel's own.
    assert_eq!(
        counts,
        [(Channel::Email, 2, 0, 2), (Channel::Webhook, 4, 0, 0)]
    );
    let first_hook = d
        .iter()
        .filter(|d| d.channel == Channel::Webhook)
        .map(|d| d.next_ms)
        .min();
    assert_eq!(store.next_delivery_due(&both).unwrap(), first_hook);
    verifies(&mut store);
}

/// Prune takes a final request's delivered rows with it and leaves its undelivered ones,
/// which are still to be sent; it takes the request's used mail links, and its Slack
/// messages once no delivery is left to update them.
pub fn prune_takes_delivered_rows_with_their_request(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    store
        .add_delivery_routes(&routes(&[("default", Channel::Webhook)]))
        .unwrap();
    let (reg, _) = store.register("default", "alice", 10 * MIN).unwrap();
    for id in ["done", "old", "newest"] {
        ask(&mut store, request(id, json!(null))).unwrap();
    }
    // "done" is answered through a mail's link, and all its deliveries went out.
    let by_mail = dshq::store::LeaseRef::OnBehalf {
        token: reg.lease.clone(),
        actor: Actor::Mail("alice@example.com".into()),
    };
    let link = dshq::store::driver::links::LinkUse {
        link_id: "k-done".into(),
        request_id: "done".into(),
        context: "default".into(),
        recipient: "alice@example.com".into(),
        issued_ms: clock.now(),
        digest: None,
    };
    store
        .answer_by_link(&link, &by_mail, &pick("SQLite"))
        .unwrap();
    for id in ["old", "newest"] {
        store
            .answer(&lease(&reg.lease), id, &pick("SQLite"))
            .unwrap();
    }
    for d in store.deliveries("done").unwrap() {
        store.mark_delivered(&d.id, clock.now()).unwrap();
    }
    let old = store.deliveries("old").unwrap();
    assert_eq!(old.len(), 2, "accepted and answered");
    store.mark_delivered(&old[0].id, clock.now()).unwrap();
    for id in ["done", "old"] {
        let first = &store.deliveries(id).unwrap()[0];
        assert!(store
            .record_slack_message(&first.id, id, "C0123", "1700000000.000100")
            .unwrap());
        assert!(store
            .record_telegram_message(&dshq::store::driver::telegram::TelegramMessage {
                delivery_id: first.id.clone(),
                chat_id: -100,
                message_id: 1,
                request_id: id.into(),
                digest: "sha256:00".into(),
                posted_ms: 0,
            })
            .unwrap());
    }
    assert!(store.link_used("k-done").unwrap());
    crate::scenarios::mark_outcomes_written(&mut store);
    clock.advance(10);
    let pruned = store
        .prune(
            clock.now(),
            None,
            &Actor::Cli,
            &mut crate::scenarios::MemoryExport::default(),
        )
        .unwrap();
    assert_eq!(pruned.requests, 2);
    assert!(store.deliveries("done").unwrap().is_empty());
    let left = store.deliveries("old").unwrap();
    assert_eq!(
        left.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
        [old[1].id.as_str()],
        "the delivered row went with its request, the undelivered one stays"
    );
    assert_eq!(store.deliveries("newest").unwrap().len(), 2);
    assert!(store.slack_messages("done").unwrap().is_empty());
    assert_eq!(
        store.slack_messages("old").unwrap().len(),
        1,
        "its answered delivery is still to update it"
    );
    assert!(store.telegram_messages("done").unwrap().is_empty());
    assert_eq!(store.telegram_messages("old").unwrap().len(), 1);
    assert!(!store.link_used("k-done").unwrap());
    verifies(&mut store);
}

/// The operator's ladder policy of a context: applied to a request without its own
/// ladder, under the asker's own (field by field, the asker's wins), left out where the
/// deadline ends the request first (never a refusal), and not applied to other contexts;
/// the resolved ladder is what the record keeps, so the chain verifies.
pub fn a_context_policy_applies_under_the_askers_own_ladder(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    let policy = json!({"remindAfter": "1m", "escalateAfter": "2m", "escalateTo": "oncall",
                        "expireAfter": "3m"});
    store
        .set_context_ladders(&[("ops".into(), policy.to_string())])
        .unwrap();
    let in_ops = |id: &str, ladder: Value| {
        let mut v = request(id, ladder.clone());
        v["context"] = json!("ops");
        if ladder.is_null() {
            v.as_object_mut().unwrap().remove("ladder");
        }
        v
    };
    ask(&mut store, in_ops("plain", json!(null))).unwrap();
    let rungs = |store: &mut Store, id: &str| -> Value {
        serde_json::from_str(row(store, id).ladder.as_deref().expect("a ladder")).unwrap()
    };
    let r = rungs(&mut store, "plain");
    assert_eq!(r["remindMs"], t0 + MIN);
    assert_eq!(r["escalateTo"], "oncall");
    assert_eq!(r["expireMs"], t0 + 3 * MIN);
    assert_eq!(r["onExpire"], "fail");
    // The asker's expiry and default win; the policy's earlier rungs are added.
    ask(
        &mut store,
        in_ops(
            "own",
            json!({"expireAfter": "10m", "onExpire": "default",
                   "default": {"answers": [{"id": "db", "selected": ["SQLite"]}]}}),
        ),
    )
    .unwrap();
    let r = rungs(&mut store, "own");
    assert_eq!(r["expireMs"], t0 + 10 * MIN);
    assert_eq!(r["remindMs"], t0 + MIN);
    assert_eq!(r["onExpire"], "default");
    // A 90 s timeout: only the reminder fits before it; the request is not refused.
    let mut short = in_ops("short", json!(null));
    short["timeout"] = json!("90s");
    ask(&mut store, short).unwrap();
    let r = rungs(&mut store, "short");
    assert_eq!(r["remindMs"], t0 + MIN);
    assert!(
        r.get("expireMs").is_none() && r.get("escalateMs").is_none(),
        "{r}"
    );
    // Another context has no policy.
    ask(&mut store, request("other", json!({"remindAfter": "5m"}))).unwrap();
    assert_eq!(rungs(&mut store, "other")["remindMs"], t0 + 5 * MIN);
    let mut bare = request("bare", json!(null));
    bare.as_object_mut().unwrap().remove("ladder");
    ask(&mut store, bare).unwrap();
    assert_eq!(row(&mut store, "bare").ladder, None);
    // The policy's rungs run like the asker's: 3m later "plain" expired, "own" is waiting.
    clock.advance(3 * MIN + 1);
    store.sweep().unwrap();
    assert_eq!(row(&mut store, "plain").status, Status::Expired);
    assert_eq!(row(&mut store, "plain").context, "oncall");
    assert_eq!(row(&mut store, "own").status, Status::Pending);
    // Replacing the policies (an empty set clears them).
    store.set_context_ladders(&[]).unwrap();
    ask(&mut store, in_ops("after", json!(null))).unwrap();
    assert_eq!(row(&mut store, "after").ladder, None);
    verifies(&mut store);
}
