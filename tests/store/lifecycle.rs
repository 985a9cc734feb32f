//! The request lifecycle as conformance scenarios, through the [`Store`] trait only: claim,
//! answer, cancel, abort, the finality of an outcome, and the leases that fence them
//! (one provider per context, heartbeats, expiry, release, forged tokens, contexts).
//! Ported from the SQLite backend's former inline tests, which reached these rules through
//! its internal functions; what those read from a table no public read exposes stays in
//! `sqlite_driver.rs`.

use serde_json::json;

use dshq::clock::rfc3339;
use dshq::core::audit::{Actor, Source};
use dshq::protocol::error::Code;
use dshq::protocol::{Answer, AnswerItem, Decision, Outcome, Request};
use dshq::store::{Answered, AskInput, Asked, LeaseRef, RequestRow, Status, Store};

use crate::scenarios::{ask, pick, TestClock};

/// The stable code of a refused call.
pub(crate) fn code<T: std::fmt::Debug>(r: dshq::Result<T>) -> Code {
    r.expect_err("the store refused it").to_user_error().code
}

/// Ask `id` with two questions in context `ctx`: `db` (options) and `plan` (a plan review
/// whose approve label is `Approve`).
fn ask_batch(store: &mut Store, id: &str) {
    let request: Request = serde_json::from_value(json!({
        "id": id,
        "context": "ctx",
        "questions": [
            {"id": "db", "question": "Which database?",
             "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
            {"id": "plan", "question": "Approve?", "detail": "the plan",
             "options": [{"label": "Revise"}, {"label": "Approve"}],
             "intent": {"kind": "plan-review", "approve": "Approve"}}
        ]
    }))
    .unwrap();
    let input = AskInput {
        request: Ok(request),
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

pub(crate) fn lease(token: &str) -> LeaseRef {
    LeaseRef::Token(token.to_string())
}

fn claim(store: &mut Store, token: &str, id: &str) -> dshq::Result<RequestRow> {
    store.claim(&lease(token), id)
}

fn answer(store: &mut Store, token: &str, id: &str, a: &Answer) -> dshq::Result<Outcome> {
    match store.answer(&lease(token), id, a)? {
        Answered::Finished(o) => Ok(o),
        other => panic!("{other:?}"),
    }
}

fn cancel(store: &mut Store, token: &str, id: &str) -> dshq::Result<Outcome> {
    store.cancel(&lease(token), id, Some("out of scope"))
}

fn abort(store: &mut Store, id: &str) -> dshq::Result<Outcome> {
    store.abort(id, Some("changed my mind"), &Actor::Asker)
}

pub(crate) fn row(store: &mut Store, id: &str) -> RequestRow {
    store.get(id).unwrap().expect("the request exists")
}

pub(crate) fn kinds(store: &mut Store, id: &str) -> Vec<String> {
    store
        .events(id)
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

/// Whether `id`'s outcome waits in the outbox for its file.
fn in_outbox(store: &mut Store, id: &str) -> bool {
    store
        .outbox_pending(0, 1_000)
        .unwrap()
        .iter()
        .any(|(_, o)| o.id() == id)
}

/// Accept, claim (idempotent for the same lease), answer: the outcome, the row, the
/// decision of a plan review, the outbox and the events.
pub fn accept_claim_answer(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    ask_batch(&mut store, "r1");
    let r = row(&mut store, "r1");
    assert_eq!(r.status, Status::Pending);
    assert_eq!(r.created_ms, t0);
    assert_eq!(r.source, "cli");
    assert_eq!(r.request().unwrap().questions.len(), 2);
    assert!(
        !in_outbox(&mut store, "r1"),
        "nothing to publish while open"
    );

    clock.advance(1);
    let (reg, _) = store.register("ctx", "alice", 60_000).unwrap();
    clock.advance(1);
    let claimed = claim(&mut store, &reg.lease, "r1").unwrap();
    assert_eq!(claimed.status, Status::Claimed);
    assert!(claimed.claimed_lease.is_some());
    assert_eq!(claimed.claimed_by.as_deref(), Some("alice"));
    assert_eq!(claimed.claimed_ms, Some(t0 + 2));
    // Claiming again with the same lease is idempotent.
    clock.advance(1);
    assert_eq!(claim(&mut store, &reg.lease, "r1").unwrap(), claimed);

    let a = Answer {
        answers: vec![
            AnswerItem {
                id: "db".into(),
                selected: vec![],
                custom: Some("DuckDB".into()),
                edited: None,
            },
            AnswerItem {
                id: "plan".into(),
                selected: vec!["Approve".into()],
                custom: None,
                edited: None,
            },
        ],
    };
    clock.advance(1);
    let out = answer(&mut store, &reg.lease, "r1", &a).unwrap();
    let Outcome::Answered(o) = &out else {
        panic!("{out:?}")
    };
    assert_eq!(o.id, "r1");
    assert_eq!(o.status, "answered");
    assert_eq!(o.answer, a);
    assert_eq!(o.decision, Some(Decision::Approved));
    assert_eq!(o.provider.as_deref(), Some("alice"));
    assert_eq!(o.created_at, rfc3339(t0));
    assert_eq!(o.finished_at, rfc3339(t0 + 4));

    let r = row(&mut store, "r1");
    assert_eq!(r.status, Status::Answered);
    assert_eq!(r.finished_ms, Some(t0 + 4));
    assert_eq!(r.claimed_ms, Some(t0 + 2), "the claim time is kept");
    assert_eq!(r.parsed_answer(), Some(a));
    assert_eq!(r.outcome(), Some(out));
    assert!(
        in_outbox(&mut store, "r1"),
        "the outcome waits for its file"
    );
    assert_eq!(kinds(&mut store, "r1"), ["accepted", "claimed", "answered"]);
}

/// Answering a pending request claims it for the answering lease, and the answer event
/// says so.
pub fn answering_a_pending_request_claims_it_implicitly(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "r1");
    let (reg, _) = store.register("ctx", "bob", 60_000).unwrap();
    clock.advance(5);
    answer(&mut store, &reg.lease, "r1", &pick("SQLite")).unwrap();
    let r = row(&mut store, "r1");
    assert_eq!(r.status, Status::Answered);
    assert!(r.claimed_lease.is_some());
    assert_eq!(r.claimed_by.as_deref(), Some("bob"));
    assert_eq!(r.claimed_ms, Some(clock.now()));
    assert_eq!(r.decision, None);
    let ev = store.events("r1").unwrap();
    assert_eq!(ev.last().unwrap().kind, "answered");
    assert_eq!(ev.last().unwrap().data["implicitClaim"], json!(true));
}

/// An answer that does not fit the questions is refused, naming what is wrong, and changes
/// neither the request nor the record.
pub fn a_bad_answer_changes_nothing(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "r1");
    let (reg, _) = store.register("ctx", "bob", 60_000).unwrap();
    let before = row(&mut store, "r1");
    let head = store.events_head().unwrap();
    clock.advance(1);
    let e = answer(&mut store, &reg.lease, "r1", &pick("MySQL")).unwrap_err();
    assert_eq!(e.to_user_error().code, Code::BadAnswer);
    assert!(e.to_string().contains("MySQL"), "{e}");
    assert_eq!(row(&mut store, "r1"), before);
    assert_eq!(store.events_head().unwrap(), head, "no event appended");
}

/// An answered request never changes: a second answer (even an identical one: of two
/// racing answers exactly one wins), a cancel, an abort, a claim, and a new provider
/// after the answering lease is released are all REQUEST_FINAL, and append no event.
pub fn a_final_request_never_changes(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "r1");
    let (reg, _) = store.register("ctx", "alice", 60_000).unwrap();
    clock.advance(1);
    answer(&mut store, &reg.lease, "r1", &pick("Postgres")).unwrap();
    let before = row(&mut store, "r1");
    clock.advance(1);
    let t = &reg.lease;
    assert_eq!(
        code(answer(&mut store, t, "r1", &pick("SQLite"))),
        Code::RequestFinal
    );
    assert_eq!(
        code(answer(&mut store, t, "r1", &pick("Postgres"))),
        Code::RequestFinal
    );
    assert_eq!(code(cancel(&mut store, t, "r1")), Code::RequestFinal);
    assert_eq!(code(abort(&mut store, "r1")), Code::RequestFinal);
    assert_eq!(code(claim(&mut store, t, "r1")), Code::RequestFinal);
    // A new provider cannot change it either.
    assert!(store.release(&reg.lease).unwrap());
    let (reg2, _) = store.register("ctx", "carol", 60_000).unwrap();
    assert_eq!(
        code(answer(&mut store, &reg2.lease, "r1", &pick("SQLite"))),
        Code::RequestFinal
    );
    assert_eq!(
        code(cancel(&mut store, &reg2.lease, "r1")),
        Code::RequestFinal
    );
    // Releasing the lease that answered did not reopen it.
    assert_eq!(row(&mut store, "r1"), before);
    assert_eq!(
        kinds(&mut store, "r1"),
        ["accepted", "answered"],
        "no event for refusals"
    );
}

/// Cancelled and aborted requests are as final as answered ones.
pub fn cancelled_and_aborted_are_final_too(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "c1");
    ask(&mut store, "a1");
    let (reg, _) = store.register("ctx", "alice", 60_000).unwrap();
    clock.advance(1);
    cancel(&mut store, &reg.lease, "c1").unwrap();
    abort(&mut store, "a1").unwrap();
    clock.advance(1);
    for id in ["c1", "a1"] {
        let before = row(&mut store, id);
        assert_eq!(
            code(answer(&mut store, &reg.lease, id, &pick("SQLite"))),
            Code::RequestFinal
        );
        assert_eq!(code(cancel(&mut store, &reg.lease, id)), Code::RequestFinal);
        assert_eq!(code(abort(&mut store, id)), Code::RequestFinal);
        assert_eq!(row(&mut store, id), before);
    }
}

/// The asker aborts without any lease, pending or claimed; the outcome is ASK_ABORTED with
/// the reason, published, and recorded as the asker's; an unknown id is NOT_FOUND.
pub fn abort_needs_no_lease(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "r1");
    clock.advance(10);
    // No provider registered at all.
    let out = abort(&mut store, "r1").unwrap();
    let Outcome::Error(o) = &out else {
        panic!("{out:?}")
    };
    assert_eq!(o.error.code, Code::AskAborted);
    assert!(
        o.error.message.contains("changed my mind"),
        "{}",
        o.error.message
    );
    let r = row(&mut store, "r1");
    assert_eq!(r.status, Status::Aborted);
    assert_eq!(r.error_code.as_deref(), Some("ASK_ABORTED"));
    assert_eq!(r.finished_ms, Some(clock.now()));
    assert_eq!(r.provider, None);
    assert!(in_outbox(&mut store, "r1"));
    let ev = store.events("r1").unwrap();
    assert_eq!(ev.last().unwrap().kind, "aborted");
    assert_eq!(ev.last().unwrap().actor, "asker");

    // A claimed request can be aborted by the asker too.
    ask(&mut store, "r2");
    let (reg, _) = store.register("ctx", "alice", 60_000).unwrap();
    clock.advance(1);
    claim(&mut store, &reg.lease, "r2").unwrap();
    clock.advance(1);
    abort(&mut store, "r2").unwrap();
    assert_eq!(row(&mut store, "r2").status, Status::Aborted);
    assert_eq!(code(abort(&mut store, "nope")), Code::NotFound);
}

/// A provider's cancel is ASK_CANCELLED, naming the provider, pending or claimed.
pub fn a_cancel_by_the_lease_is_ask_cancelled(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "r1");
    let (reg, _) = store.register("ctx", "alice", 60_000).unwrap();
    clock.advance(3);
    let out = cancel(&mut store, &reg.lease, "r1").unwrap();
    let Outcome::Error(o) = &out else {
        panic!("{out:?}")
    };
    assert_eq!(o.status, "error");
    assert_eq!(o.error.code, Code::AskCancelled);
    assert_eq!(o.error.name, "UserQuestionError");
    assert!(o.error.message.contains("alice"), "{}", o.error.message);
    assert!(
        o.error.message.contains("out of scope"),
        "{}",
        o.error.message
    );
    assert_eq!(o.provider.as_deref(), Some("alice"));
    assert_eq!(o.finished_at, rfc3339(clock.now()));
    let r = row(&mut store, "r1");
    assert_eq!(r.status, Status::Cancelled);
    assert_eq!(r.outcome(), Some(out));
    // A claimed request can be cancelled by its lease.
    ask(&mut store, "r2");
    clock.advance(1);
    claim(&mut store, &reg.lease, "r2").unwrap();
    clock.advance(1);
    cancel(&mut store, &reg.lease, "r2").unwrap();
    assert_eq!(row(&mut store, "r2").status, Status::Cancelled);
}

/// Claim, answer and cancel of an id nobody asked are NOT_FOUND.
pub fn an_unknown_request_is_not_found(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let (reg, _) = store.register("ctx", "alice", 60_000).unwrap();
    assert_eq!(code(claim(&mut store, &reg.lease, "ghost")), Code::NotFound);
    assert_eq!(
        code(answer(&mut store, &reg.lease, "ghost", &pick("x"))),
        Code::NotFound
    );
    assert_eq!(
        code(cancel(&mut store, &reg.lease, "ghost")),
        Code::NotFound
    );
    assert!(store.get("ghost").unwrap().is_none());
}

/// The lease ttl the lease scenarios register with.
const TTL: i64 = 60_000;

/// Ask `id` (one question, `db`) in `context`.
fn ask_in(store: &mut Store, id: &str, context: &str) {
    let request: Request = serde_json::from_value(json!({
        "id": id,
        "context": context,
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]
    }))
    .unwrap();
    let input = AskInput {
        request: Ok(request),
        fallback_id: None,
        salvaged: (None, None),
        raw: String::new(),
        source: Source::Cli,
        actor: Actor::Cli,
    };
    assert!(matches!(store.ask(input).unwrap(), Asked::Accepted(_)));
}

/// A second register in a live context is DUPLICATE_PROVIDER naming the holder and how to
/// revoke it; the first lease stays live and alone; another context has its own
/// generations.
pub fn a_second_register_is_duplicate_provider_and_the_first_stays(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    let (first, _) = store.register("ctx", "alice", TTL).unwrap();
    clock.advance(1);
    let e = store.register("ctx", "bob", TTL).unwrap_err();
    assert_eq!(e.to_user_error().code, Code::DuplicateProvider);
    assert!(e.to_string().contains("alice"), "{e}");
    assert!(
        e.to_string().contains("provider revoke --context ctx"),
        "{e}"
    );
    clock.advance(1);
    let l = store.authenticate(&first.lease).unwrap();
    assert_eq!(l.expires_ms, t0 + TTL);
    let status = store.lease_status(Some("ctx")).unwrap();
    assert_eq!(status.len(), 1, "{status:?}");
    assert_eq!(status[0].name, "alice");
    assert!(status[0].live);
    let (other, _) = store.register("ops", "bob", TTL).unwrap();
    assert_eq!(other.generation, 1);
    assert!(store.lease_status(Some("ops")).unwrap()[0].live);
}

/// A heartbeat extends the lease by its ttl from now; the lease is live exactly at its
/// expiry and dead one millisecond later; an expired lease cannot be revived.
pub fn a_heartbeat_extends_by_the_ttl_and_cannot_revive(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    let (reg, _) = store.register("ctx", "alice", TTL).unwrap();
    clock.advance(TTL - 1);
    let l = store.heartbeat(&reg.lease).unwrap();
    assert_eq!(l.expires_ms, t0 + 2 * TTL - 1);
    // Past the original expiry, still live, and a write does not sweep it.
    clock.advance(11);
    store.sweep().unwrap();
    assert!(store.authenticate(&reg.lease).is_ok());
    // Exactly at expiresAt it is still live; one millisecond later it is not.
    clock.advance(l.expires_ms - clock.now());
    assert!(store.authenticate(&reg.lease).is_ok());
    clock.advance(1);
    assert_eq!(code(store.authenticate(&reg.lease)), Code::LeaseExpired);
    // And a heartbeat cannot bring it back.
    assert_eq!(code(store.heartbeat(&reg.lease)), Code::LeaseExpired);
    assert_eq!(code(store.authenticate(&reg.lease)), Code::LeaseExpired);
}

/// After a lease expired and a new one registered, the old holder can neither claim,
/// answer, cancel nor heartbeat; its claim went back to the queue; releasing it is not an
/// error and ends nothing else; the new holder can act.
pub fn a_stale_lease_cannot_claim_or_answer_after_a_new_one(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "r1");
    ask(&mut store, "r2");
    let (old, _) = store.register("ctx", "alice", TTL).unwrap();
    clock.advance(1);
    claim(&mut store, &old.lease, "r1").unwrap();
    clock.advance(TTL);
    let (new_lease, _) = store.register("ctx", "bob", TTL).unwrap();
    assert_eq!(new_lease.generation, 2);
    assert_eq!(row(&mut store, "r1").status, Status::Pending);
    for id in ["r1", "r2"] {
        assert_eq!(code(claim(&mut store, &old.lease, id)), Code::LeaseExpired);
        assert_eq!(
            code(answer(&mut store, &old.lease, id, &pick("SQLite"))),
            Code::LeaseExpired
        );
        assert_eq!(code(cancel(&mut store, &old.lease, id)), Code::LeaseExpired);
    }
    assert_eq!(code(store.heartbeat(&old.lease)), Code::LeaseExpired);
    assert!(!store.release(&old.lease).unwrap());
    assert!(store.authenticate(&new_lease.lease).is_ok());
    let r = claim(&mut store, &new_lease.lease, "r1").unwrap();
    assert_eq!(r.claimed_by.as_deref(), Some("bob"));
    clock.advance(1);
    answer(&mut store, &new_lease.lease, "r1", &pick("SQLite")).unwrap();
    assert_eq!(row(&mut store, "r1").provider.as_deref(), Some("bob"));
}

/// Releasing twice is fine (the second says nothing was released) and returns the claims;
/// a released lease is never live again, saying so; the context is free for the next.
pub fn a_release_twice_is_ok_and_returns_claims(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "r1");
    let (reg, _) = store.register("ctx", "alice", TTL).unwrap();
    clock.advance(1);
    claim(&mut store, &reg.lease, "r1").unwrap();
    clock.advance(1);
    assert!(store.release(&reg.lease).unwrap());
    clock.advance(1);
    assert!(!store.release(&reg.lease).unwrap());
    assert_eq!(row(&mut store, "r1").status, Status::Pending);
    assert_eq!(kinds(&mut store, "r1"), ["accepted", "claimed", "released"]);
    let e = store.authenticate(&reg.lease).unwrap_err();
    assert_eq!(e.to_user_error().code, Code::LeaseExpired);
    assert!(e.to_string().contains("released"), "{e}");
    clock.advance(1);
    assert_eq!(store.register("ctx", "bob", TTL).unwrap().0.generation, 2);
}

/// Any token that is not the lease's (another secret, zeros, empty, garbage, the id alone,
/// a short secret, another id) is LEASE_EXPIRED for every act and releases nothing;
/// whitespace around the real token is tolerated.
pub fn a_forged_token_is_lease_expired(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, "r1");
    let (reg, _) = store.register("ctx", "alice", TTL).unwrap();
    let (id, secret) = reg.lease.split_once('.').unwrap();
    let last = secret.chars().last().unwrap();
    let flipped = if last == '0' { '1' } else { '0' };
    let next_id = id.parse::<i64>().unwrap() + 1;
    let forged = [
        format!("{id}.{}{flipped}", &secret[..secret.len() - 1]),
        format!("{id}.{}", "0".repeat(secret.len())),
        String::new(),
        "garbage".to_string(),
        id.to_string(),
        format!("{id}.{}", &secret[..secret.len() - 1]),
        format!("{next_id}.{secret}"),
    ];
    for token in &forged {
        assert_eq!(
            code(store.authenticate(token)),
            Code::LeaseExpired,
            "{token:?}"
        );
        assert_eq!(code(claim(&mut store, token, "r1")), Code::LeaseExpired);
        assert_eq!(code(store.release(token)), Code::LeaseExpired);
        assert_eq!(code(store.heartbeat(token)), Code::LeaseExpired);
    }
    assert!(store.authenticate(&reg.lease).is_ok());
    assert_eq!(row(&mut store, "r1").status, Status::Pending);
    assert!(store.authenticate(&format!(" {}\n", reg.lease)).is_ok());
}

/// A lease acts only in its own context: WRONG_CONTEXT naming both, nothing changed, and
/// claim-next finds nothing of another context.
pub fn a_lease_of_another_context_is_wrong_context(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask_in(&mut store, "rb", "ctx-b");
    let (a, _) = store.register("ctx-a", "alice", TTL).unwrap();
    let before = row(&mut store, "rb");
    clock.advance(1);
    let e = answer(&mut store, &a.lease, "rb", &pick("SQLite")).unwrap_err();
    assert_eq!(e.to_user_error().code, Code::WrongContext);
    assert!(
        e.to_string().contains("ctx-a") && e.to_string().contains("ctx-b"),
        "{e}"
    );
    assert_eq!(code(claim(&mut store, &a.lease, "rb")), Code::WrongContext);
    assert_eq!(code(cancel(&mut store, &a.lease, "rb")), Code::WrongContext);
    assert_eq!(row(&mut store, "rb"), before);
    let next = store.claim_next(&lease(&a.lease));
    assert_eq!(code(next), Code::NotFound);
}

/// While a lease holds a claim no second lease can register in its context; claim-next
/// takes the oldest pending request, and finds none once the rest are final.
pub fn claim_next_takes_the_oldest_pending(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    for id in ["r1", "r2", "r3"] {
        ask(&mut store, id);
        clock.advance(1);
    }
    let (reg, _) = store.register("ctx", "alice", TTL).unwrap();
    let next = |store: &mut Store| store.claim_next(&lease(&reg.lease)).map(|r| r.id.unwrap());
    assert_eq!(next(&mut store).unwrap(), "r1");
    assert_eq!(
        code(store.register("ctx", "mallory", TTL)),
        Code::DuplicateProvider
    );
    assert_eq!(next(&mut store).unwrap(), "r2");
    abort(&mut store, "r3").unwrap();
    assert_eq!(code(next(&mut store)), Code::NotFound);
}
