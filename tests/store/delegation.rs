//! Delegation while a reviewer is away, as conformance scenarios: an away notice is
//! checked (each bad one refused with its own code, nothing recorded), set, cancelled and
//! ended at its time, each change a chained event; while it holds the delegate answers
//! for the away person, recorded as "D for P" on the row, the event and the outcome, and
//! never as the asker; in a quorum a vote by D for P occupies both, so the two of them
//! never meet it alone; after its end or its cancel the delegate answers for nobody.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use dshq::core::audit::{Actor, Source};
use dshq::core::people::People;
use dshq::core::quorum::Policy;
use dshq::protocol::error::Code;
use dshq::protocol::{Outcome, Request};
use dshq::store::{Answered, AskInput, Asked, LeaseRef, Store};

use crate::lifecycle::kinds;
use crate::scenarios::{pick, TestClock};

const HOUR: i64 = 3_600_000;

/// A store whose people directory lists alice, bob, dave and erin.
fn store_with_people(new: &impl Fn(&TestClock) -> Store, clock: &TestClock) -> Store {
    let mut store = new(clock);
    let people = People::new(
        ["alice", "bob", "dave", "erin"]
            .iter()
            .map(|p| (p.to_string(), vec![format!("mail:{p}@example.com")]))
            .collect(),
        &BTreeMap::new(),
    )
    .unwrap();
    store.set_quorum_policy(Arc::new(Policy {
        people,
        ..Policy::default()
    }));
    store
}

/// Ask `id` in `ctx` as the web token `asker`, with `quorum` when not null.
fn ask(store: &mut Store, id: &str, quorum: Value, asker: &str) {
    let mut v = json!({
        "id": id,
        "context": "ctx",
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}],
    });
    if !quorum.is_null() {
        v["quorum"] = quorum;
    }
    let request: Request = serde_json::from_value(v).unwrap();
    let asked = store
        .ask(AskInput {
            request: Ok(request),
            fallback_id: None,
            salvaged: (None, None),
            raw: String::new(),
            source: Source::WebToken(asker.into()),
            actor: Actor::Web(asker.into()),
        })
        .unwrap();
    assert!(matches!(asked, Asked::Accepted(_)), "{asked:?}");
}

fn code<T: std::fmt::Debug>(r: dshq::Result<T>) -> Code {
    r.expect_err("refused").to_user_error().code
}

/// `who` voting or answering as themselves through the page (no lease).
fn page(who: &str) -> LeaseRef {
    LeaseRef::Voter(Actor::Web(who.into()))
}

/// `who` answering from the CLI (a one-shot provider).
fn cli(who: &str) -> LeaseRef {
    LeaseRef::Transient {
        name: who.into(),
        ttl_ms: 60_000,
    }
}

/// The `away-*` events, in order: their kind and data (read through the export, as they
/// name no request).
fn away_kinds(store: &mut Store) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    store
        .export(&mut |kind, rec| {
            let k = rec.get("kind").and_then(Value::as_str).unwrap_or_default();
            if kind == "event" && k.starts_with("away-") {
                let data = match rec.get("data") {
                    Some(Value::String(s)) => serde_json::from_str(s).unwrap(),
                    Some(v) => v.clone(),
                    None => Value::Null,
                };
                out.push((k.to_string(), data));
            }
            Ok(())
        })
        .unwrap();
    out
}

/// Each bad notice has its code and records nothing; a good one is set, replaced,
/// cancelled, and one past its end stops holding at once and is recorded as ended by the
/// sweep. Every change is an event; the chain verifies.
pub fn away_notices_are_checked_recorded_and_end(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = store_with_people(&new, &clock);
    let t0 = clock.now();
    let by = Actor::Cli;
    assert_eq!(
        code(store.set_away("alice", "dave", t0, &by)),
        Code::AwayInPast
    );
    assert_eq!(
        code(store.set_away("alice", "alice", t0 + HOUR, &by)),
        Code::AwaySelf
    );
    assert_eq!(
        code(store.set_away("alice", "zed", t0 + HOUR, &by)),
        Code::UnknownDelegate
    );
    assert_eq!(code(store.cancel_away("alice", &by)), Code::NotAway);
    assert!(
        away_kinds(&mut store).is_empty(),
        "a refusal records nothing"
    );

    let a = store.set_away("alice", "dave", t0 + HOUR, &by).unwrap();
    assert_eq!((a.person.as_str(), a.delegate.as_str()), ("alice", "dave"));
    // Chains: dave (alice's delegate) cannot go away to erin; erin cannot hand to alice.
    assert_eq!(
        code(store.set_away("dave", "erin", t0 + HOUR, &by)),
        Code::AwayChain
    );
    assert_eq!(
        code(store.set_away("erin", "alice", t0 + HOUR, &by)),
        Code::AwayChain
    );
    // Replaced: one notice per person.
    let b = store
        .set_away("alice", "bob", t0 + 2 * HOUR, &Actor::Web("alice".into()))
        .unwrap();
    assert_eq!(store.aways().unwrap(), [b]);
    store.cancel_away("alice", &by).unwrap();
    assert!(store.aways().unwrap().is_empty());

    // One that ends: it holds before its time, not at it, before any sweep.
    store.set_away("erin", "bob", t0 + HOUR, &by).unwrap();
    clock.advance(HOUR - 1);
    assert_eq!(store.aways().unwrap().len(), 1);
    clock.advance(1);
    assert!(store.aways().unwrap().is_empty());
    clock.advance(1);
    store.sweep().unwrap();
    let got: Vec<(String, String, String)> = away_kinds(&mut store)
        .into_iter()
        .map(|(k, d)| {
            (
                k,
                d["person"].as_str().unwrap().to_string(),
                d["delegate"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String, String)> = [
        ("away-set", "alice", "dave"),
        ("away-set", "alice", "bob"),
        ("away-cancelled", "alice", "bob"),
        ("away-set", "erin", "bob"),
        ("away-ended", "erin", "bob"),
    ]
    .iter()
    .map(|(k, p, d)| (k.to_string(), p.to_string(), d.to_string()))
    .collect();
    assert_eq!(got, want);
    // A notice that ended can be cancelled no more.
    assert_eq!(code(store.cancel_away("erin", &by)), Code::NotAway);
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}

/// While alice is away, dave answers for her: recorded as "dave for alice" on the
/// outcome, the row and the `answered` event. Nobody else may; dave never answers a
/// request he or alice asked; after the notice ends or is cancelled he answers for
/// nobody.
pub fn a_delegate_answers_for_the_away_person(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = store_with_people(&new, &clock);
    let t0 = clock.now();
    store
        .set_away("alice", "dave", t0 + HOUR, &Actor::Cli)
        .unwrap();
    for id in ["r1", "r2", "r3", "r4"] {
        ask(&mut store, id, Value::Null, "asker");
    }
    ask(&mut store, "by-dave", Value::Null, "dave");
    ask(&mut store, "by-alice", Value::Null, "alice");
    clock.advance(1);

    assert_eq!(
        code(store.answer_for(&cli("erin"), "r1", &pick("Postgres"), Some("alice"))),
        Code::NotDelegate
    );
    for id in ["by-dave", "by-alice"] {
        assert_eq!(
            code(store.answer_for(&cli("dave"), id, &pick("Postgres"), Some("alice"))),
            Code::OwnRequest,
            "{id}"
        );
    }
    let done = store
        .answer_for(&cli("dave"), "r1", &pick("Postgres"), Some("alice"))
        .unwrap();
    let Answered::Finished(Outcome::Answered(o)) = done else {
        panic!("{done:?}")
    };
    assert_eq!(o.provider.as_deref(), Some("dave"));
    assert_eq!(o.on_behalf_of.as_deref(), Some("alice"));
    let answered = store
        .events("r1")
        .unwrap()
        .into_iter()
        .find(|e| e.kind == "answered")
        .unwrap();
    assert_eq!(
        (answered.actor.as_str(), &answered.data["for"]),
        ("provider:dave", &json!("alice"))
    );
    assert_eq!(
        crate::lifecycle::row(&mut store, "r1")
            .on_behalf_of
            .as_deref(),
        Some("alice")
    );

    // Cancelled: no more.
    store.cancel_away("alice", &Actor::Cli).unwrap();
    assert_eq!(
        code(store.answer_for(&cli("dave"), "r2", &pick("Postgres"), Some("alice"))),
        Code::NotDelegate
    );
    // Set again, then past its end: no more either (before any sweep).
    store
        .set_away("alice", "dave", clock.now() + 10, &Actor::Cli)
        .unwrap();
    store
        .answer_for(&cli("dave"), "r3", &pick("SQLite"), Some("alice"))
        .unwrap();
    clock.advance(10);
    assert_eq!(
        code(store.answer_for(&cli("dave"), "r4", &pick("Postgres"), Some("alice"))),
        Code::NotDelegate
    );
    assert_eq!(kinds(&mut store, "r4"), ["accepted"]);
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}

/// A two-person quorum is never met by alice and her delegate dave alone: dave's vote for
/// alice occupies both (alice, and dave as himself, are then `ALREADY_VOTED`, on any
/// face); bob's vote meets it. The outcome's votes say who voted for whom.
pub fn a_person_and_their_delegate_never_meet_a_quorum_alone(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = store_with_people(&new, &clock);
    store
        .set_away("alice", "dave", clock.now() + HOUR, &Actor::Cli)
        .unwrap();
    ask(&mut store, "q", json!({"approvals": 2}), "asker");
    ask(&mut store, "q2", json!({"approvals": 2}), "asker");
    clock.advance(1);
    let Answered::Voted(v) = store
        .answer_for(&page("dave"), "q", &pick("Postgres"), Some("alice"))
        .unwrap()
    else {
        panic!("the first vote leaves it open")
    };
    assert_eq!(v.quorum.votes[0].on_behalf_of.as_deref(), Some("alice"));
    assert_eq!(v.quorum.progress(), "1/2");
    clock.advance(1);
    for (who, face) in [
        (page("alice"), "alice on the page"),
        (cli("alice"), "alice from the CLI"),
        (page("dave"), "dave as himself"),
        (cli("dave"), "dave from the CLI"),
    ] {
        assert_eq!(
            code(store.answer_for(&who, "q", &pick("Postgres"), None)),
            Code::AlreadyVoted,
            "{face}"
        );
    }
    // The other order: alice voted first, then dave for her, or dave himself first.
    store
        .answer(&page("alice"), "q2", &pick("Postgres"))
        .unwrap();
    assert_eq!(
        code(store.answer_for(&page("dave"), "q2", &pick("Postgres"), Some("alice"))),
        Code::AlreadyVoted
    );
    let Answered::Finished(Outcome::Answered(o)) =
        store.answer(&page("bob"), "q", &pick("Postgres")).unwrap()
    else {
        panic!("bob meets the quorum")
    };
    let votes = o.votes.unwrap();
    let who: Vec<(String, Option<String>)> = votes
        .iter()
        .map(|v| (v.voter.clone(), v.on_behalf_of.clone()))
        .collect();
    assert_eq!(
        who,
        [
            ("web:dave".to_string(), Some("alice".to_string())),
            ("web:bob".to_string(), None)
        ]
    );
    let voted: Vec<Value> = store
        .events("q")
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == "voted")
        .map(|e| e.data)
        .collect();
    assert_eq!(voted[0]["for"], "alice");
    assert!(voted[1].get("for").is_none());
    assert_eq!(store.verify(&[]).unwrap().broken, None);
}
