//! The conformance scenarios: each runs through the [`Store`] trait only, generic over the
//! driver, and takes a constructor that builds a fresh, empty store on a given clock. The
//! suite (`main.rs`) instantiates every one on SQLite and on PostgreSQL, unchanged.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use serde_json::json;

use dshq::app;
use dshq::clock::Millis;
use dshq::core::audit::{Actor, Source};
use dshq::protocol::error::Code;
use dshq::protocol::{Answer, AnswerItem, Outcome, Request};
use dshq::store::driver::Driver;
use dshq::store::queue::Queue;
use dshq::store::{Answered, AskInput, Asked, LeaseRef, ListFilter, Status, Store};

/// A clock a scenario moves by hand.
#[derive(Clone)]
pub struct TestClock(Arc<AtomicI64>);

impl TestClock {
    /// A clock at a fixed start.
    pub fn new() -> TestClock {
        TestClock(Arc::new(AtomicI64::new(1_800_000_000_000)))
    }

    /// The time now.
    pub fn now(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }

    /// Move on by `ms`.
    pub fn advance(&self, ms: Millis) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// As a backend's clock.
    pub fn as_fn(&self) -> Arc<dyn Fn() -> Millis + Send + Sync> {
        let c = self.0.clone();
        Arc::new(move || c.load(Ordering::SeqCst))
    }
}

fn request(id: &str) -> Request {
    serde_json::from_value(json!({
        "id": id,
        "context": "ctx",
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]
    }))
    .unwrap()
}

/// Ask request `id` (one question, `db`) and expect it accepted, pending.
pub fn ask<D: Driver>(store: &mut Queue<D>, id: &str) {
    let input = AskInput {
        request: Ok(request(id)),
        fallback_id: None,
        salvaged: (None, None),
        raw: String::new(),
        source: Source::Cli,
        actor: Actor::Cli,
    };
    match store.ask(input).unwrap() {
        Asked::Accepted(a) => assert!(a.new && a.status == Status::Pending, "{a:?}"),
        other => panic!("not accepted: {other:?}"),
    }
}

/// The answer picking `label` for question `db`.
/// Mark every pending outcome as written (as the daemon does once it wrote the files).
pub fn mark_outcomes_written<D: Driver>(store: &mut Queue<D>) {
    let keys: Vec<i64> = store
        .outbox_pending(0, 100)
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    store.mark_outbox_written(&keys).unwrap();
}

pub fn pick(label: &str) -> Answer {
    Answer {
        answers: vec![AnswerItem {
            id: "db".into(),
            selected: vec![label.into()],
            custom: None,
            edited: None,
        }],
    }
}

fn code(e: dshq::Error) -> Code {
    e.to_user_error().code
}

/// ask → claim → answer → the outcome, and the outbox publishes it once.
pub fn ask_claim_answer_outcome(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "q1");
    let (reg, lease) = store.register("ctx", "alice", 60_000).unwrap();
    assert_eq!(lease.name, "alice");
    let token = LeaseRef::Token(reg.lease.clone());
    let row = store.claim_next(&token).unwrap();
    assert_eq!(row.id.as_deref(), Some("q1"));
    assert_eq!(row.status, Status::Claimed);
    assert_eq!(row.claimed_by.as_deref(), Some("alice"));
    clock.advance(1_000);
    let outcome = match store.answer(&token, "q1", &pick("SQLite")).unwrap() {
        Answered::Finished(o) => o,
        other => panic!("{other:?}"),
    };
    let Outcome::Answered(a) = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(a.answer, pick("SQLite"));
    assert_eq!(a.provider.as_deref(), Some("alice"));
    let row = store.get("q1").unwrap().unwrap();
    assert_eq!(row.status, Status::Answered);
    assert_eq!(row.outcome(), Some(outcome.clone()));
    // The outcome waits for its file, then is marked written.
    let pending = store.outbox_pending(0, 16).unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].1, outcome);
    store.mark_outbox_written(&[pending[0].0]).unwrap();
    assert!(store.outbox_pending(0, 16).unwrap().is_empty());
    // A final request never changes.
    let again = store.answer(&token, "q1", &pick("Postgres"));
    assert_eq!(code(again.unwrap_err()), Code::RequestFinal);
    // The audit saw it all, the lease by name.
    let kinds: Vec<_> = store
        .events("q1")
        .unwrap()
        .into_iter()
        .map(|e| (e.kind, e.actor))
        .collect();
    assert_eq!(
        kinds,
        [
            ("accepted".to_string(), "asker".to_string()),
            ("claimed".into(), "provider:alice".into()),
            ("answered".into(), "provider:alice".into()),
        ]
    );
}

/// A lease that stops heartbeating expires, and its claim goes back to `pending` for the
/// next provider.
pub fn lease_expiry_returns_the_claim(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "q2");
    let (reg, _) = store.register("ctx", "alice", 10_000).unwrap();
    store
        .claim(&LeaseRef::Token(reg.lease.clone()), "q2")
        .unwrap();
    assert_eq!(store.get("q2").unwrap().unwrap().status, Status::Claimed);
    assert_eq!(store.next_due().unwrap(), Some(clock.now() + 10_000));
    clock.advance(10_001);
    let swept = store.sweep().unwrap().expect("the lease fell due");
    assert_eq!(swept.released, ["q2"]);
    let row = store.get("q2").unwrap().unwrap();
    assert_eq!(row.status, Status::Pending);
    assert_eq!(row.claimed_lease, None);
    // The next provider takes it.
    let (bob, _) = store.register("ctx", "bob", 10_000).unwrap();
    let row = store.claim_next(&LeaseRef::Token(bob.lease)).unwrap();
    assert_eq!(row.claimed_by.as_deref(), Some("bob"));
}

/// A stale lease (expired, even before any sweep) cannot claim, answer, cancel or
/// heartbeat: `LEASE_EXPIRED`, and nothing changes.
pub fn a_stale_lease_cannot_act(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "q3");
    let (reg, _) = store.register("ctx", "alice", 5_000).unwrap();
    let stale = LeaseRef::Token(reg.lease.clone());
    clock.advance(5_001);
    for (act, e) in [
        ("claim", store.claim(&stale, "q3").map(drop)),
        ("claim next", store.claim_next(&stale).map(drop)),
        (
            "answer",
            store.answer(&stale, "q3", &pick("SQLite")).map(drop),
        ),
        ("cancel", store.cancel(&stale, "q3", None).map(drop)),
    ] {
        assert_eq!(code(e.unwrap_err()), Code::LeaseExpired, "{act}");
    }
    assert_eq!(
        code(store.heartbeat(&reg.lease).unwrap_err()),
        Code::LeaseExpired
    );
    assert_eq!(store.get("q3").unwrap().unwrap().status, Status::Pending);
    // A new lease in the context acts; the old one still cannot.
    let (fresh, _) = store.register("ctx", "bob", 5_000).unwrap();
    store
        .answer(&LeaseRef::Token(fresh.lease), "q3", &pick("Postgres"))
        .unwrap();
    let e = store.answer(&stale, "q3", &pick("SQLite")).unwrap_err();
    assert_eq!(code(e), Code::LeaseExpired);
    assert_eq!(
        store.get("q3").unwrap().unwrap().provider.as_deref(),
        Some("bob")
    );
}

/// A rejection is recorded with the actor of the face that refused it.
pub fn a_rejection_records_its_actor(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let bad: Request = serde_json::from_value(json!({"id": "bad", "questions": []})).unwrap();
    let asked = store
        .ask(AskInput {
            request: Ok(bad),
            fallback_id: None,
            salvaged: (Some("bad".into()), None),
            raw: "{}".into(),
            source: Source::Cli,
            actor: Actor::Cli,
        })
        .unwrap();
    let Asked::Rejected { error, outcome } = asked else {
        panic!("{asked:?}")
    };
    assert_eq!(error.code, Code::EmptyQuestions);
    assert!(outcome);
    let ev = store.events("bad").unwrap();
    assert_eq!(ev.len(), 1);
    assert_eq!(
        (ev[0].kind.as_str(), ev[0].actor.as_str()),
        ("rejected", "cli")
    );
    assert_eq!(
        ev[0].event_kind(),
        Some(dshq::core::audit::EventKind::Rejected)
    );
    assert_eq!(ev[0].who(), Some(Actor::Cli));
}

/// The same through the application layer: ask, answer with a transient lease, and the
/// outcome is published by the use-case.
pub fn the_use_cases_compose(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "q4");
    let outcome = app::provide::answer(
        &mut store,
        None,
        "q4",
        &app::provide::Acting::Transient {
            name: "carol".into(),
        },
        &pick("Postgres"),
    )
    .unwrap();
    let outcome = outcome.finished().unwrap();
    assert_eq!(outcome.outcome.id(), "q4");
    assert_eq!(outcome.file_pending, None);
    // The transient lease is gone: no live lease in the context.
    assert!(store
        .lease_status(Some("ctx"))
        .unwrap()
        .iter()
        .all(|l| !l.live));
    let e = app::provide::cancel(
        &mut store,
        None,
        "q4",
        &app::provide::Acting::Transient {
            name: "carol".into(),
        },
        None,
    )
    .unwrap_err();
    assert_eq!(code(e), Code::RequestFinal);
}

/// The event feed reads every lifecycle event in order, a page at a time, with the
/// kinds and request filters applied, and a lease running out shows as `released`.
pub fn the_event_feed_pages_in_order(new: impl Fn(&TestClock) -> Store) {
    use dshq::core::audit::EventKind as K;
    let all = [
        K::Accepted,
        K::Claimed,
        K::Released,
        K::Answered,
        K::Cancelled,
        K::Aborted,
    ];
    let clock = TestClock::new();
    let mut store = new(&clock);
    let start = store.events_head().unwrap();
    ask(&mut store, "e1");
    ask(&mut store, "e2");
    let (reg, _) = store.register("ctx", "alice", 10_000).unwrap();
    store
        .claim(&LeaseRef::Token(reg.lease.clone()), "e1")
        .unwrap();
    clock.advance(10_001);
    store.sweep().unwrap();
    // One position a page: lease events in between are read past, not returned.
    let read = |store: &mut Store, kinds: &[K], filter: &ListFilter| {
        let (mut after, mut out) = (start, Vec::new());
        loop {
            let page = store.request_events(after, kinds, filter, 1).unwrap();
            out.extend(
                page.events
                    .into_iter()
                    .map(|(e, r)| (e.kind, r.id.unwrap_or_default())),
            );
            if page.upto == after {
                return out;
            }
            after = page.upto;
        }
    };
    let s = |k: &str, id: &str| (k.to_string(), id.to_string());
    assert_eq!(
        read(&mut store, &all, &ListFilter::default()),
        [
            s("accepted", "e1"),
            s("accepted", "e2"),
            s("claimed", "e1"),
            s("released", "e1"),
        ]
    );
    assert_eq!(
        read(
            &mut store,
            &[K::Claimed, K::Released],
            &ListFilter::default()
        ),
        [s("claimed", "e1"), s("released", "e1")]
    );
    let other = ListFilter {
        contexts: vec!["elsewhere".into()],
        ..Default::default()
    };
    assert!(read(&mut store, &all, &other).is_empty());
}

/// Records in memory, as a backend's prune hands them over.
#[derive(Default)]
pub struct MemoryExport {
    /// (type, fields) in order.
    pub records: Vec<(String, serde_json::Map<String, serde_json::Value>)>,
    /// Whether `sync` was called (before the commit).
    pub synced: bool,
    /// The ids `committed` was called with.
    pub freed: Vec<String>,
}

impl dshq::store::PruneExport for MemoryExport {
    fn record(
        &mut self,
        kind: &str,
        fields: serde_json::Map<String, serde_json::Value>,
    ) -> dshq::error::Result<()> {
        assert!(!self.synced, "no record after sync");
        self.records.push((kind.to_string(), fields));
        Ok(())
    }

    fn sync(&mut self) -> dshq::error::Result<()> {
        self.synced = true;
        Ok(())
    }

    fn committed(&mut self, ids: &[String]) -> dshq::error::Result<usize> {
        assert!(self.synced, "committed only after sync");
        self.freed.extend(ids.iter().cloned());
        Ok(ids.len())
    }
}

/// Prune removes the final requests finished before the cut (and the events about them)
/// after handing them over, keeps open ones and everything after the cut, and the record
/// still verifies; an export that fails to sync rolls the prune back; a pruned id asked
/// again is a new request.
pub fn prune_keeps_open_requests_and_verifies(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let (reg, _) = store.register("ctx", "alice", 3_600_000).unwrap();
    let token = LeaseRef::Token(reg.lease.clone());
    ask(&mut store, "a");
    ask(&mut store, "b");
    clock.advance(10);
    store.answer(&token, "a", &pick("SQLite")).unwrap();
    store.abort("b", None, &Actor::Asker).unwrap();
    clock.advance(10);
    let cut = clock.now();
    clock.advance(10);
    ask(&mut store, "p");
    ask(&mut store, "late");
    store.answer(&token, "late", &pick("SQLite")).unwrap();
    ask(&mut store, "z");
    // A final request whose outcome file is not written yet stays; once written, it goes.
    let pruned = store
        .prune(cut, None, &Actor::Cli, &mut MemoryExport::default())
        .unwrap();
    assert_eq!(pruned.requests, 0);
    assert!(pruned.stopped_at.unwrap().contains("outcome file"));
    mark_outcomes_written(&mut store);
    let all_before = {
        let mut v = Vec::new();
        store
            .export(&mut |k, f| {
                v.push((k.to_string(), f));
                Ok(())
            })
            .unwrap();
        v
    };

    // A sync that fails: nothing is removed.
    struct Failing;
    impl dshq::store::PruneExport for Failing {
        fn record(
            &mut self,
            _: &str,
            _: serde_json::Map<String, serde_json::Value>,
        ) -> dshq::error::Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> dshq::error::Result<()> {
            Err(dshq::Error::Invalid("disk full".into()))
        }
        fn committed(&mut self, _: &[String]) -> dshq::error::Result<usize> {
            panic!("never committed")
        }
    }
    assert!(store.prune(cut, None, &Actor::Cli, &mut Failing).is_err());
    assert!(store.get("a").unwrap().is_some());

    // A limit stops before the request that would exceed it.
    let mut first = MemoryExport::default();
    let pruned = store.prune(cut, Some(1), &Actor::Cli, &mut first).unwrap();
    assert_eq!(pruned.requests, 1);
    assert!(pruned.stopped_at.unwrap().contains("limit"));
    assert!(store.get("a").unwrap().is_none() && store.get("b").unwrap().is_some());
    assert_eq!(store.verify(&[]).unwrap().broken, None);
    let mut out = MemoryExport::default();
    let pruned = store.prune(cut, None, &Actor::Cli, &mut out).unwrap();
    assert_eq!(pruned.requests, 1);
    out.records.splice(0..0, first.records);
    out.freed.splice(0..0, first.freed);
    assert!(out.synced);
    let mut freed = out.freed.clone();
    freed.sort();
    assert_eq!(freed, ["a", "b"]);
    let exported: Vec<(&str, Option<&str>)> = out
        .records
        .iter()
        .filter(|(k, _)| k == "request")
        .map(|(k, f)| (k.as_str(), f["id"].as_str()))
        .collect();
    assert_eq!(exported, [("request", Some("a")), ("request", Some("b"))]);
    // Every exported record is one the store had, and the store no longer has it.
    for r in &out.records {
        assert!(all_before.contains(r), "{r:?}");
    }
    assert!(store.get("a").unwrap().is_none() && store.get("b").unwrap().is_none());
    for id in ["p", "late", "z"] {
        assert!(store.get(id).unwrap().is_some(), "{id} stays");
    }
    let v = store.verify(&[]).unwrap();
    assert_eq!(v.broken, None);
    assert_eq!(v.requests, 3);
    // Nothing more goes at the same cut.
    let again = store
        .prune(cut, None, &Actor::Cli, &mut MemoryExport::default())
        .unwrap();
    assert_eq!(again.requests, 0);
    // The pruned id is free again.
    ask(&mut store, "a");
    assert_eq!(store.get("a").unwrap().unwrap().status, Status::Pending);
    assert_eq!(store.events("a").unwrap().len(), 1);
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}

/// The newest request row stays even when it is final and old enough: its seq keeps the
/// feed positions growing (an emptied table would hand out positions a feed has passed).
pub fn prune_keeps_the_newest_request(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let (reg, _) = store.register("ctx", "alice", 3_600_000).unwrap();
    let token = LeaseRef::Token(reg.lease.clone());
    for id in ["a", "b"] {
        ask(&mut store, id);
        store.answer(&token, id, &pick("SQLite")).unwrap();
    }
    mark_outcomes_written(&mut store);
    clock.advance(10);
    let pruned = store
        .prune(clock.now(), None, &Actor::Cli, &mut MemoryExport::default())
        .unwrap();
    assert_eq!(pruned.requests, 1);
    assert!(pruned.stopped_at.unwrap().contains("newest request"));
    assert!(store.get("a").unwrap().is_none());
    assert!(store.get("b").unwrap().is_some(), "the newest stays");
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}

/// A host taking over at start ends the unended leases recorded with its own id (their
/// claims back to pending) and nothing else: not another host's, not a terminal
/// reviewer's. A refused registration names the host's page.
pub fn a_host_takes_over_only_its_own_leases(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "mine");
    let host = |id: &str| dshq::store::HostMark {
        id: id.into(),
        label: format!("box:/srv/{id}"),
        idle_ms: 300_000,
    };
    let (ours, _) = store
        .register_as("ctx", "web", 60_000, Some(&host("a")))
        .unwrap();
    store
        .claim(&LeaseRef::Token(ours.lease.clone()), "mine")
        .unwrap();
    let (theirs, _) = store
        .register_as("other", "web", 60_000, Some(&host("b")))
        .unwrap();
    let (terminal, _) = store.register("third", "tom", 60_000).unwrap();
    match store.register("ctx", "tom", 60_000) {
        Err(dshq::Error::DuplicateProvider { web: Some(w), .. }) => {
            assert_eq!((w.host.as_str(), w.idle.as_str()), ("box:/srv/a", "5m"));
        }
        other => panic!("{other:?}"),
    }
    let taken = store.take_over_host("a").unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(
        (taken[0].context.as_str(), taken[0].released.as_slice()),
        ("ctx", &["mine".to_string()][..])
    );
    assert_eq!(store.get("mine").unwrap().unwrap().status, Status::Pending);
    assert_eq!(
        code(store.heartbeat(&ours.lease).unwrap_err()),
        Code::LeaseExpired
    );
    store.heartbeat(&theirs.lease).unwrap();
    store.heartbeat(&terminal.lease).unwrap();
    assert!(
        store.take_over_host("a").unwrap().is_empty(),
        "nothing left to take"
    );
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}

/// The feed of new requests: from the log's head on, each accepted request once, oldest
/// first, never a rejection, whatever else happened in between (a lease, a claim, an
/// answer), read one position a page; the open queue and the open ids among given ones.
pub fn the_request_feed_sees_each_accepted_request_once(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "before");
    let start = store.events_head().unwrap();
    ask(&mut store, "f1");
    let bad: Request = serde_json::from_value(json!({"id": "bad", "questions": []})).unwrap();
    let rejected = store
        .ask(AskInput {
            request: Ok(bad),
            fallback_id: None,
            salvaged: (Some("bad".into()), None),
            raw: "{}".into(),
            source: Source::Cli,
            actor: Actor::Cli,
        })
        .unwrap();
    assert!(matches!(rejected, Asked::Rejected { .. }), "{rejected:?}");
    let (reg, _) = store.register("ctx", "alice", 10_000).unwrap();
    let lease = LeaseRef::Token(reg.lease.clone());
    store.answer(&lease, "f1", &pick("SQLite")).unwrap();
    ask(&mut store, "f2");
    let (mut after, mut seen) = (start, Vec::new());
    loop {
        let page = store.feed(after, 1).unwrap();
        seen.extend(page.requests.into_iter().map(|r| r.id.unwrap_or_default()));
        if page.upto == after {
            break;
        }
        assert!(
            page.upto > after,
            "the feed went back: {after} -> {}",
            page.upto
        );
        after = page.upto;
    }
    assert_eq!(seen, ["f1", "f2"], "each accepted request once, in order");
    assert_eq!(after, store.events_head().unwrap(), "read up to the head");
    assert!(store.feed(after, 100).unwrap().requests.is_empty());

    let open: Vec<String> = store
        .open_requests(Some("ctx"))
        .unwrap()
        .into_iter()
        .map(|r| r.id.unwrap_or_default())
        .collect();
    assert_eq!(open, ["before", "f2"], "the answered one is not open");
    assert!(store.open_requests(Some("elsewhere")).unwrap().is_empty());
    let mut given = Vec::new();
    let n = store
        .while_open(Some(&["f2", "f1", "nope", "before"]), &mut |ids| {
            given = ids.to_vec();
            Ok(ids.len())
        })
        .unwrap();
    assert_eq!(
        (n, given),
        (2, vec!["f2".to_string(), "before".to_string()])
    );
}

/// One inbox file as the daemon hands it to the store (its stored forms prepared ahead, as
/// the daemon's file thread prepares them).
fn inbox_file(name: &str, body: serde_json::Value, mtime: Millis) -> dshq::store::InboxInput {
    let stem = name.trim_end_matches(".json").to_string();
    let raw = body.to_string();
    let mut request: dshq::protocol::Request = serde_json::from_value(body).unwrap();
    let prepared = dshq::protocol::prepared::Prepared::of(&mut request, Some(&stem)).map(Box::new);
    dshq::store::InboxInput::Request {
        name: name.into(),
        stem,
        raw,
        request,
        mtime,
        prepared,
    }
}

fn one_question(id: &str, question: &str) -> serde_json::Value {
    json!({"id": id, "questions": [{"id": "db", "question": question,
        "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]})
}

/// A batch of inbox files is judged file by file, each against the files before it in the
/// same batch: a second file with an accepted id is a re-delivery (the same request) or a
/// duplicate id (another one); a file after an abort of its id sees the request aborted;
/// a file rejected in an earlier batch keeps its verdict when it is judged again.
pub fn one_inbox_batch_judges_each_file_against_the_files_before_it(
    new: impl Fn(&TestClock) -> Store,
) {
    use dshq::store::{InboxInput, InboxVerdict};
    let clock = TestClock::new();
    let mut store = new(&clock);
    // An earlier batch: a file whose id is bad is rejected.
    let bad = json!({"id": "bad id!", "questions": []});
    let first = store
        .ingest(vec![inbox_file("bad.json", bad.clone(), clock.now() - 5)])
        .unwrap();
    assert!(matches!(first[0], InboxVerdict::Rejected(_)), "{first:?}");
    clock.advance(10);
    let verdicts = store
        .ingest(vec![
            inbox_file("r1.json", one_question("r1", "Which?"), clock.now() - 1),
            inbox_file(
                "r1-again.json",
                one_question("r1", "Which?"),
                clock.now() - 1,
            ),
            inbox_file(
                "r1-other.json",
                one_question("r1", "Another?"),
                clock.now() - 1,
            ),
            inbox_file("r2.json", one_question("r2", "Which?"), clock.now() - 1),
            InboxInput::Abort {
                name: "r2.abort".into(),
                id: "r2".into(),
                reason: None,
            },
            inbox_file(
                "r2-again.json",
                one_question("r2", "Which?"),
                clock.now() - 1,
            ),
            // The same rejected file again (older than its rejection): the same verdict.
            inbox_file("bad.json", bad, clock.now() - 20),
        ])
        .unwrap();
    assert!(
        matches!(&verdicts[0], InboxVerdict::Accepted { id, .. } if id == "r1"),
        "{verdicts:?}"
    );
    assert!(
        matches!(&verdicts[1], InboxVerdict::Redelivered(id) if id == "r1"),
        "{verdicts:?}"
    );
    match &verdicts[2] {
        InboxVerdict::Rejected(e) => assert_eq!(e.code, Code::DuplicateId, "{e:?}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(&verdicts[4], InboxVerdict::Aborted(id) if id == "r2"));
    assert!(
        matches!(&verdicts[5], InboxVerdict::Redelivered(id) if id == "r2"),
        "{verdicts:?}"
    );
    assert_eq!(store.get("r2").unwrap().unwrap().status, Status::Aborted);
    assert!(
        matches!(verdicts[6], InboxVerdict::Rejected(_)),
        "{verdicts:?}"
    );
    // The rejected file was not recorded twice, and r1 is the first file's request.
    let rejected = store
        .list(&ListFilter {
            status: Some(Status::Rejected),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(
        rejected.len(),
        2,
        "the bad file once and r1's other content once: {rejected:?}"
    );
    let r1 = store.get("r1").unwrap().unwrap();
    assert!(r1.body.contains("Which?"), "{}", r1.body);
}

/// Ask `request` and expect it accepted, pending.
fn ask_request(store: &mut Store, request: serde_json::Value) {
    let input = AskInput {
        request: Ok(serde_json::from_value(request).unwrap()),
        fallback_id: None,
        salvaged: (None, None),
        raw: String::new(),
        source: Source::Cli,
        actor: Actor::Cli,
    };
    match store.ask(input).unwrap() {
        Asked::Accepted(a) => assert!(a.new && a.status == Status::Pending, "{a:?}"),
        other => panic!("not accepted: {other:?}"),
    }
}

/// Edit-then-approve, the queue's rule on every driver: an approval of a plan review (or
/// an answer to a free-text question the asker made `editable`) may carry the edited
/// text; the row keeps the proposal, the approved text and their unified diff, the
/// `answered` event records the same, the outcome gives them to the asker, and the
/// audit verifies. An edit with a decline, on a question that allows none, blank or
/// unchanged is refused with its code, and nothing changes.
pub fn edits_are_kept_recorded_and_verified(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let plan = "1. Drain node a\n2. Upgrade node a\n3. Run the smoke tests\n";
    let approved =
        "1. Drain node a\n2. Back up node a\n3. Upgrade node a\n4. Run the smoke tests\n";
    let review = |id: &str, editable: Option<bool>| {
        let mut q = json!({"id": "plan", "question": "Approve the deploy plan?", "detail": plan,
            "options": [{"label": "Approve"}, {"label": "Revise"}],
            "intent": {"kind": "plan-review", "approve": "Approve"}});
        if let Some(e) = editable {
            q["editable"] = json!(e);
        }
        json!({"id": id, "context": "ctx", "questions": [q]})
    };
    ask_request(&mut store, review("e1", None));
    ask_request(&mut store, review("e2", Some(false)));
    ask_request(
        &mut store,
        json!({"id": "e3", "context": "ctx", "questions": [
            {"id": "msg", "question": "Commit message?", "detail": "Fix the bug", "editable": true},
            {"id": "note", "question": "Anything else?", "detail": "a note"}]}),
    );
    let (reg, _) = store.register("ctx", "alice", 60_000).unwrap();
    let token = LeaseRef::Token(reg.lease.clone());
    let item =
        |id: &str, selected: &[&str], custom: Option<&str>, edited: Option<&str>| AnswerItem {
            id: id.into(),
            selected: selected.iter().map(|s| s.to_string()).collect(),
            custom: custom.map(str::to_string),
            edited: edited.map(str::to_string),
        };
    let answer = |items: Vec<AnswerItem>| Answer { answers: items };
    let refused = |store: &mut Store, id: &str, a: Answer| {
        let before = store.events(id).unwrap().len();
        let e = store.answer(&token, id, &a).unwrap_err();
        let row = store.get(id).unwrap().unwrap();
        assert_eq!(row.status, Status::Pending, "{id}: nothing changed");
        assert_eq!(row.edits, None);
        assert_eq!(store.events(id).unwrap().len(), before, "{id}: no event");
        code(e)
    };
    // A decline with an edit; a plan the asker made `editable: false`; a free-text
    // question without `editable`; a blank edit; the proposal unchanged.
    let decline = answer(vec![item("plan", &["Revise"], None, Some(approved))]);
    assert_eq!(refused(&mut store, "e1", decline), Code::EditNotAllowed);
    let feedback = answer(vec![item("plan", &[], Some("no"), Some(approved))]);
    assert_eq!(refused(&mut store, "e1", feedback), Code::EditNotAllowed);
    let locked = answer(vec![item("plan", &["Approve"], None, Some(approved))]);
    assert_eq!(refused(&mut store, "e2", locked), Code::EditNotAllowed);
    let not_editable = answer(vec![
        item("msg", &[], None, Some("Fix the parser bug")),
        item("note", &[], None, Some("another note")),
    ]);
    assert_eq!(
        refused(&mut store, "e3", not_editable),
        Code::EditNotAllowed
    );
    for text in ["  \n", plan] {
        let a = answer(vec![item("plan", &["Approve"], None, Some(text))]);
        assert_eq!(refused(&mut store, "e1", a), Code::BadAnswer, "{text:?}");
    }

    // The approval with the edited plan.
    clock.advance(1_000);
    let a = answer(vec![item("plan", &["Approve"], None, Some(approved))]);
    let outcome = match store.answer(&token, "e1", &a).unwrap() {
        Answered::Finished(o) => o,
        other => panic!("{other:?}"),
    };
    let Outcome::Answered(o) = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(o.answer, a);
    assert_eq!(o.decision, Some(dshq::protocol::Decision::Approved));
    let diff = "--- proposed\n+++ approved\n@@ -1,3 +1,4 @@\n 1. Drain node a\n-2. Upgrade node a\n-3. Run the smoke tests\n+2. Back up node a\n+3. Upgrade node a\n+4. Run the smoke tests\n";
    let want = json!({"plan": {"proposed": plan, "approved": approved, "diff": diff}});
    assert_eq!(serde_json::to_value(&o.edited).unwrap(), want);
    // The row keeps them, the event records the same, the outcome is the row's.
    let row = store.get("e1").unwrap().unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(row.edits.as_deref().unwrap()).unwrap(),
        want
    );
    assert_eq!(row.outcome(), Some(outcome.clone()));
    let answered = store
        .events("e1")
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "answered")
        .unwrap();
    assert_eq!(answered.data["edits"], want);
    assert_eq!(answered.data["answer"]["answers"][0]["edited"], approved);

    // A free-text question the asker made editable: the edit, with no other answer;
    // the other question of the batch is answered as usual and edits nothing.
    let msg = answer(vec![
        item("msg", &[], None, Some("Fix the parser bug")),
        item("note", &[], Some("none"), None),
    ]);
    let Answered::Finished(Outcome::Answered(o)) = store.answer(&token, "e3", &msg).unwrap() else {
        panic!("not answered")
    };
    let edited = o.edited.expect("the edit is in the outcome");
    assert_eq!(edited.keys().collect::<Vec<_>>(), ["msg"]);
    assert_eq!(edited["msg"].proposed, "Fix the bug");
    assert_eq!(edited["msg"].approved, "Fix the parser bug");
    assert_eq!(o.decision, None);

    // An answer that edits nothing keeps the event's and the outcome's old shape.
    let plain = answer(vec![item("plan", &["Approve"], None, None)]);
    let Answered::Finished(Outcome::Answered(o)) = store.answer(&token, "e2", &plain).unwrap()
    else {
        panic!("not answered")
    };
    assert_eq!(o.edited, None);
    assert_eq!(store.get("e2").unwrap().unwrap().edits, None);
    let e2 = store.events("e2").unwrap();
    assert!(e2.iter().all(|e| e.data.get("edits").is_none()));

    // The record check agrees with all of it.
    let verified = store.verify(&[]).unwrap();
    assert_eq!(verified.broken, None, "{verified:?}");
}

/// A batch's new rows are seen by every later statement of its write, whenever the driver
/// sends them: a file that replaces a rejection of its id earlier in the same batch clears
/// that rejection's error outcome; the rows of batches and asks are numbered one after the
/// other without gaps, in the order of their `accepted`/`rejected` events; and the chain
/// and the records verify.
pub fn a_batch_sees_its_own_new_rows_and_numbers_them_without_gaps(
    new: impl Fn(&TestClock) -> Store,
) {
    use dshq::store::{InboxInput, InboxVerdict};
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "before");
    clock.advance(10);
    let verdicts = store
        .ingest(vec![
            // No questions: rejected under its id, with an error outcome due...
            inbox_file(
                "x1.json",
                json!({"id": "x", "questions": []}),
                clock.now() - 1,
            ),
            // ...until a good file takes the id, in the same batch.
            inbox_file("x2.json", one_question("x", "Which?"), clock.now() - 1),
            // A rejection whose id stays free keeps its error outcome.
            inbox_file(
                "y.json",
                json!({"id": "y", "questions": []}),
                clock.now() - 1,
            ),
            inbox_file("z.json", one_question("z", "Which?"), clock.now() - 1),
            InboxInput::Abort {
                name: "z.abort".into(),
                id: "z".into(),
                reason: None,
            },
        ])
        .unwrap();
    assert!(
        matches!(verdicts[0], InboxVerdict::Rejected(_)),
        "{verdicts:?}"
    );
    assert!(
        matches!(&verdicts[1], InboxVerdict::Accepted { id, replaced_rejection: true, .. } if id == "x"),
        "{verdicts:?}"
    );
    assert!(
        matches!(verdicts[2], InboxVerdict::Rejected(_)),
        "{verdicts:?}"
    );
    assert!(
        matches!(&verdicts[4], InboxVerdict::Aborted(id) if id == "z"),
        "{verdicts:?}"
    );
    let due: Vec<String> = store
        .outbox_pending(0, 1_000)
        .unwrap()
        .iter()
        .map(|(_, o)| o.id().to_string())
        .collect();
    assert!(
        !due.contains(&"x".to_string()),
        "x's stale rejection: {due:?}"
    );
    assert!(due.contains(&"y".to_string()), "{due:?}");
    assert!(due.contains(&"z".to_string()), "{due:?}");
    clock.advance(10);
    ask(&mut store, "after");
    // Every row, accepted or rejected, numbered 1.. in order.
    let mut seqs: Vec<(i64, Option<String>)> = Vec::new();
    for status in [None, Some(Status::Rejected)] {
        let rows = store
            .list(&ListFilter {
                status,
                ..Default::default()
            })
            .unwrap();
        seqs.extend(rows.into_iter().map(|r| (r.seq, r.id)));
    }
    seqs.sort();
    seqs.dedup();
    let expected: Vec<(i64, Option<String>)> = ["before", "x", "x", "y", "z", "after"]
        .iter()
        .zip(1..)
        .map(|(id, seq)| (seq, Some(id.to_string())))
        .collect();
    assert_eq!(seqs, expected);
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}
