//! More of the queue's rules as conformance scenarios, through the [`Store`] trait only:
//! idempotent asks and duplicate ids, rejections, the registry and `requireProvider` at
//! acceptance, deadlines and lease expiry judged at the write's time (before any sweep),
//! what a sweep reports, replayed answer files, and the event chain. Ported from
//! `sqlite_driver.rs`, where they reached these rules through SQLite's internal functions.

use serde_json::{json, Value};

use dshq::clock::rfc3339;
use dshq::core::audit::{Actor, Source};
use dshq::protocol::error::Code;
use dshq::protocol::{Outcome, Request};
use dshq::store::{Answered, AskInput, Asked, ProviderFile, Status, Store};

use crate::lifecycle::{code, kinds, lease, row};
use crate::scenarios::{pick, TestClock};

/// The lease ttl the scenarios register with.
const TTL: i64 = 60_000;

/// A one-question request with id `id` in `context`.
fn simple(id: &str, context: &str) -> Value {
    json!({
        "id": id,
        "context": context,
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]
    })
}

/// `v` as `ask` gives it to the store: parsed, with its id and context salvaged for a
/// rejection record.
fn input(v: Value, fallback: Option<&str>) -> AskInput {
    let raw = v.to_string();
    let salvage = |k: &str| v[k].as_str().map(String::from);
    let salvaged = (salvage("id"), salvage("context"));
    AskInput {
        request: Ok(serde_json::from_value::<Request>(v).unwrap()),
        fallback_id: fallback.map(Into::into),
        salvaged,
        raw,
        source: Source::Cli,
        actor: Actor::Cli,
    }
}

/// Ask `v`: the acceptance, or the code it was refused with.
fn ask(store: &mut Store, v: Value) -> Result<dshq::store::Accepted, Code> {
    match store.ask(input(v, None)) {
        Ok(Asked::Accepted(a)) => Ok(a),
        Ok(Asked::Rejected { error, .. }) => Err(error.code),
        Err(e) => Err(e.to_user_error().code),
    }
}

fn claim(store: &mut Store, token: &str, id: &str) -> dshq::Result<dshq::store::RequestRow> {
    store.claim(&lease(token), id)
}

fn answer(store: &mut Store, token: &str, id: &str, label: &str) -> dshq::Result<Outcome> {
    match store.answer(&lease(token), id, &pick(label))? {
        Answered::Finished(o) => Ok(o),
        other => panic!("{other:?}"),
    }
}

/// Every event of the log, oldest first, as [`Store::export`] gives them.
fn all_events(store: &mut Store) -> Vec<serde_json::Map<String, Value>> {
    let mut out = Vec::new();
    store
        .export(&mut |kind, fields| {
            if kind == "event" {
                out.push(fields);
            }
            Ok(())
        })
        .unwrap();
    out
}

fn field<'a>(e: &'a serde_json::Map<String, Value>, name: &str) -> &'a Value {
    e.get(name).unwrap_or_else(|| panic!("no {name} in {e:?}"))
}

fn lease_id(token: &str) -> i64 {
    token.split_once('.').unwrap().0.parse().unwrap()
}

fn outbox_ids(store: &mut Store) -> Vec<String> {
    store
        .outbox_pending(0, 1_000)
        .unwrap()
        .iter()
        .map(|(_, o)| o.id().to_string())
        .collect()
}

fn error_code(o: &Outcome) -> Code {
    match o {
        Outcome::Error(e) => e.error.code,
        other => panic!("not an error outcome: {other:?}"),
    }
}

/// The same request asked again is accepted once: not new, its deadline the first
/// acceptance's; a file without an id is known by its name; after the request is final a
/// re-delivery reports the final state and changes nothing.
pub fn idempotent_redelivery_is_accepted_once(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    let mut v = simple("r1", "default");
    v["timeout"] = json!("30m");
    v["meta"] = json!({"z": 1, "a": 2});
    assert!(ask(&mut store, v.clone()).unwrap().new);
    clock.advance(1_000);
    let again = ask(&mut store, v.clone()).unwrap();
    assert!(!again.new, "{again:?}");
    assert_eq!(again.id, "r1");
    assert_eq!(again.context, "default");
    assert_eq!(again.status, Status::Pending);
    assert!(!again.replaced_rejection);
    assert_eq!(kinds(&mut store, "r1"), ["accepted"]);
    assert_eq!(row(&mut store, "r1").deadline_ms, Some(t0 + 30 * 60_000));

    // A file with no id in it, delivered twice under the same name.
    let mut f = simple("unused", "default");
    f.as_object_mut().unwrap().remove("id");
    for first in [true, false] {
        match store.ask(input(f.clone(), Some("file1"))).unwrap() {
            Asked::Accepted(a) => assert_eq!((a.id.as_str(), a.new), ("file1", first)),
            other => panic!("{other:?}"),
        }
    }

    let (reg, _) = store.register("default", "alice", TTL).unwrap();
    clock.advance(1);
    answer(&mut store, &reg.lease, "r1", "SQLite").unwrap();
    let before = row(&mut store, "r1");
    clock.advance(1);
    let again = ask(&mut store, v).unwrap();
    assert!(!again.new);
    assert_eq!(again.status, Status::Answered);
    assert_eq!(row(&mut store, "r1"), before);
    assert_eq!(kinds(&mut store, "r1"), ["accepted", "answered"]);
}

/// Other content under an accepted id (other questions, another context) is DUPLICATE_ID,
/// naming the id; the accepted request does not change.
pub fn different_content_under_same_id_is_duplicate_id(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, simple("r1", "default")).unwrap();
    let before = row(&mut store, "r1");
    let mut other = simple("r1", "default");
    other["questions"][0]["question"] = json!("Which cache?");
    clock.advance(1);
    match store.ask(input(other, None)).unwrap() {
        Asked::Rejected { error, outcome } => {
            assert_eq!(error.code, Code::DuplicateId);
            assert!(error.message.contains("\"r1\""), "{}", error.message);
            assert!(!outcome, "the id's owner keeps its outcome");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ask(&mut store, simple("r1", "ops")), Err(Code::DuplicateId));
    assert_eq!(row(&mut store, "r1"), before);
    assert!(outbox_ids(&mut store).is_empty());
}

/// A request on a tool call (dsh 0.2's continued questions) is the call's: its id comes
/// from the call (not the fallback), asking again on the call is the same request, other
/// content on the call is DUPLICATE_WAIT, and its outcome carries the call id.
pub fn a_request_on_a_tool_call_is_the_calls(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let on_call = |question: &str| {
        json!({"questions": [{"id": "db", "question": question,
                              "options": [{"label": "Postgres"}, {"label": "SQLite"}]}],
               "wait": {"callId": "call_7", "timeoutMs": 1000}})
    };
    let id = dshq::protocol::continued::call_request_id("call_7");
    let first = match store
        .ask(input(on_call("Which database?"), Some("file-stem")))
        .unwrap()
    {
        Asked::Accepted(a) => a,
        other => panic!("{other:?}"),
    };
    assert_eq!(first.id, id);
    clock.advance(1);
    let again = ask(&mut store, on_call("Which database?")).unwrap();
    assert!(!again.new);
    assert_eq!(again.id, id);
    assert_eq!(
        ask(&mut store, on_call("Which cache?")),
        Err(Code::DuplicateWait)
    );
    let mut bad = on_call("Which database?");
    bad["wait"]["timeoutMs"] = json!(0);
    bad["wait"]["callId"] = json!("call_8");
    assert_eq!(ask(&mut store, bad), Err(Code::BadTimeout));
    let (reg, _) = store.register("default", "alice", TTL).unwrap();
    match answer(&mut store, &reg.lease, &id, "SQLite").unwrap() {
        Outcome::Answered(o) => assert_eq!(o.call_id.as_deref(), Some("call_7")),
        other => panic!("{other:?}"),
    }
}

/// A request refused by its checks is recorded as a rejection (with an error outcome, as
/// nobody owns the id), is not an accepted request, and does not reserve its id.
pub fn rejected_input_does_not_reserve_its_id(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let mut bad = simple("r9", "default");
    bad["questions"] = json!([]);
    match store.ask(input(bad.clone(), None)).unwrap() {
        Asked::Rejected { error, outcome } => {
            assert_eq!(error.code, Code::EmptyQuestions);
            assert!(outcome, "the id is free: an error outcome is published");
        }
        other => panic!("{other:?}"),
    }
    // The same input refused again is recorded once.
    clock.advance(1);
    match store.ask(input(bad, None)).unwrap() {
        Asked::Rejected { error, outcome } => {
            assert_eq!(error.code, Code::EmptyQuestions);
            assert!(!outcome, "recorded already");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(kinds(&mut store, "r9"), ["rejected"]);
    assert!(store.get("r9").unwrap().is_none());
    let any = store.get_any("r9").unwrap().expect("the rejection is kept");
    assert_eq!(any.status, Status::Rejected);
    assert_eq!(any.error_code.as_deref(), Some("EMPTY_QUESTIONS"));
    assert_eq!(any.request(), None);
    assert_eq!(error_code(&any.outcome().unwrap()), Code::EmptyQuestions);
    assert_eq!(outbox_ids(&mut store), ["r9"]);

    // The id is still free.
    clock.advance(1);
    let a = ask(&mut store, simple("r9", "default")).unwrap();
    assert!(a.new);
    assert_eq!(row(&mut store, "r9").status, Status::Pending);
    assert_eq!(
        store.get_any("r9").unwrap().unwrap().status,
        Status::Pending
    );
}

/// At acceptance the registry decides who may ask: a live root (its lineage recorded), not
/// an owned child (DELEGATED_CALLER naming its root), not a wrong or stale instance, not an
/// unknown agent (CALLER_NOT_LIVE); refused asks accept nothing.
pub fn registry_decides_who_may_ask(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let root = store
        .agent_enter("root", None, Some("resumed from s1"), None)
        .unwrap();
    let child = store
        .agent_enter("child", Some("root"), None, None)
        .unwrap();
    let with_agent = |id: &str, agent: &str, instance: &str| {
        let mut v = simple(id, "default");
        v["agent"] = json!({"id": agent, "instance": instance});
        v
    };
    ask(&mut store, with_agent("r1", "root", &root.instance)).unwrap();
    let r = row(&mut store, "r1");
    assert_eq!(r.agent_id.as_deref(), Some("root"));
    assert_eq!(r.agent_lineage.as_deref(), Some("resumed from s1"));
    match store
        .ask(input(with_agent("r2", "child", &child.instance), None))
        .unwrap()
    {
        Asked::Rejected { error, .. } => {
            assert_eq!(error.code, Code::DelegatedCaller);
            assert!(error.message.contains("\"root\""), "{}", error.message);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ask(&mut store, with_agent("r3", "root", "deadbeef")),
        Err(Code::CallerNotLive)
    );
    clock.advance(1);
    let root2 = store.agent_enter("root", None, None, None).unwrap();
    clock.advance(1);
    match store
        .ask(input(with_agent("r4", "root", &root.instance), None))
        .unwrap()
    {
        Asked::Rejected { error, .. } => {
            assert_eq!(error.code, Code::CallerNotLive);
            assert!(error.message.contains("stale"), "{}", error.message);
        }
        other => panic!("{other:?}"),
    }
    ask(&mut store, with_agent("r5", "root", &root2.instance)).unwrap();
    assert_eq!(
        ask(&mut store, with_agent("r6", "nobody", "x")),
        Err(Code::CallerNotLive)
    );
    for id in ["r2", "r3", "r4", "r6"] {
        assert!(store.get(id).unwrap().is_none(), "{id} was accepted");
    }
}

/// `requireProvider` needs a live lease in the request's own context at the time of the
/// ask: not one of another context, not one past its expiry (swept or not).
pub fn require_provider_consults_the_live_lease_of_the_context(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let mut v = simple("r1", "team-a");
    v["requireProvider"] = json!(true);
    match store.ask(input(v.clone(), None)).unwrap() {
        Asked::Rejected { error, .. } => {
            assert_eq!(error.code, Code::NoProvider);
            assert!(error.message.contains("team-a"), "{}", error.message);
        }
        other => panic!("{other:?}"),
    }
    store.register("default", "alice", TTL).unwrap();
    assert_eq!(ask(&mut store, v.clone()), Err(Code::NoProvider));
    store.register("team-a", "bob", TTL).unwrap();
    clock.advance(TTL);
    assert!(
        ask(&mut store, v).unwrap().new,
        "live exactly at its expiry"
    );
    clock.advance(1);
    let mut v2 = simple("r2", "team-a");
    v2["requireProvider"] = json!(true);
    assert_eq!(ask(&mut store, v2), Err(Code::NoProvider));
    assert!(ask(&mut store, simple("r3", "team-a")).unwrap().new);
}

/// A deadline passing aborts the request at the next write (an answer arriving late finds
/// it aborted, and that abort is committed although the answer failed); at the deadline
/// itself it is open; the outbox gives the outcomes oldest request first, once; a request
/// whose deadline passed before it was asked is ASK_ABORTED and not stored.
pub fn deadline_passing_aborts_on_the_next_write(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    let mut v = simple("r1", "default");
    v["timeout"] = json!("1m");
    ask(&mut store, v).unwrap();
    let mut c = simple("r2", "default");
    c["deadline"] = json!(rfc3339(t0 + 30_000));
    ask(&mut store, c).unwrap();
    let (reg, _) = store.register("default", "alice", 10 * TTL).unwrap();
    clock.advance(1);
    claim(&mut store, &reg.lease, "r2").unwrap();
    assert_eq!(row(&mut store, "r1").deadline_ms, Some(t0 + 60_000));
    assert_eq!(row(&mut store, "r2").deadline_ms, Some(t0 + 30_000));

    clock.advance(30_000 - 1);
    store.sweep().unwrap();
    assert_eq!(row(&mut store, "r2").status, Status::Claimed);
    assert!(outbox_ids(&mut store).is_empty());

    clock.advance(1);
    let e = answer(&mut store, &reg.lease, "r2", "SQLite").unwrap_err();
    assert_eq!(e.to_user_error().code, Code::RequestFinal);
    assert!(e.to_string().contains("aborted"), "{e}");
    let r = row(&mut store, "r2");
    assert_eq!(r.status, Status::Aborted);
    assert_eq!(r.error_code.as_deref(), Some("ASK_ABORTED"));
    assert_eq!(r.finished_ms, Some(clock.now()));
    assert!(r.error_message.as_deref().unwrap().contains("deadline"));
    assert_eq!(outbox_ids(&mut store), ["r2"]);
    assert_eq!(row(&mut store, "r1").status, Status::Pending);
    let ev = store.events("r2").unwrap();
    assert_eq!(ev.last().unwrap().kind, "aborted");
    assert_eq!(ev.last().unwrap().actor, "daemon");

    clock.advance(30_000);
    store.sweep().unwrap();
    assert_eq!(row(&mut store, "r1").status, Status::Aborted);
    let pending = store.outbox_pending(0, 10).unwrap();
    assert_eq!(
        pending.iter().map(|(_, o)| o.id()).collect::<Vec<_>>(),
        ["r1", "r2"],
        "oldest request first"
    );
    for (_, o) in &pending {
        assert_eq!(error_code(o), Code::AskAborted);
    }
    let keys: Vec<i64> = pending.iter().map(|(k, _)| *k).collect();
    store.mark_outbox_written(&keys).unwrap();
    assert!(outbox_ids(&mut store).is_empty());

    let mut late = simple("r3", "default");
    late["deadline"] = json!(rfc3339(clock.now() - 1));
    assert_eq!(ask(&mut store, late), Err(Code::AskAborted));
    assert!(store.get("r3").unwrap().is_none());
}

/// A lease past its expiry is dead for every read before anything swept it; the next
/// write ends it as expired and returns its claims, the expiry recorded before the
/// releases it causes; a second sweep finds nothing.
pub fn lease_past_expiry_is_dead_before_any_sweep_and_the_sweep_returns_its_claims(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, simple("r1", "default")).unwrap();
    ask(&mut store, simple("r2", "default")).unwrap();
    let (reg, _) = store.register("default", "alice", TTL).unwrap();
    clock.advance(1);
    claim(&mut store, &reg.lease, "r1").unwrap();
    claim(&mut store, &reg.lease, "r2").unwrap();
    clock.advance(TTL);
    let late = clock.now();

    assert_eq!(
        row(&mut store, "r1").status,
        Status::Claimed,
        "not swept yet"
    );
    let e = store.authenticate(&reg.lease).unwrap_err();
    assert_eq!(e.to_user_error().code, Code::LeaseExpired);
    assert!(e.to_string().contains("expired"), "{e}");
    let info = store.lease_info(&reg.lease).unwrap();
    assert!(!info.live);
    assert_eq!(info.claimed, 2);

    let swept = store.sweep().unwrap().expect("the sweep ended something");
    assert_eq!(swept.leases, vec![lease_id(&reg.lease)]);
    let info = store.lease_info(&reg.lease).unwrap();
    assert_eq!(info.ended_at.as_deref(), Some(rfc3339(late).as_str()));
    assert_eq!(info.end_reason.as_deref(), Some("expired"));
    for id in ["r1", "r2"] {
        let r = row(&mut store, id);
        assert_eq!(r.status, Status::Pending);
        assert_eq!(r.claimed_lease, None);
        assert_eq!(r.claimed_ms, None);
        assert_eq!(kinds(&mut store, id), ["accepted", "claimed", "released"]);
    }
    let evs = all_events(&mut store);
    let of = |k: &str| {
        evs.iter()
            .enumerate()
            .filter(|(_, e)| field(e, "kind") == k)
            .collect::<Vec<_>>()
    };
    let expired = of("lease-expired");
    assert_eq!(expired.len(), 1);
    assert_eq!(field(expired[0].1, "leaseId"), &json!(lease_id(&reg.lease)));
    assert_eq!(field(expired[0].1, "actor"), "daemon");
    assert_eq!(field(expired[0].1, "atMs"), &json!(late));
    let released = of("released");
    assert_eq!(released.len(), 2);
    assert!(released
        .iter()
        .all(|(_, e)| field(e, "leaseId") == &json!(lease_id(&reg.lease))));
    assert!(expired[0].0 < released[0].0, "the expiry comes first");
    for e in store.events("r1").unwrap() {
        if e.kind == "released" {
            assert_eq!(e.data["reason"], "lease expired");
        }
    }
    clock.advance(1);
    assert_eq!(store.sweep().unwrap(), None);
}

/// A sweep reports what it ended: expired leases, the claims they returned, passed
/// deadlines, and agents whose ttl ran out with what they owned; then nothing is due.
pub fn sweep_reports_what_it_ended(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    let mut d = simple("due", "default");
    d["timeout"] = json!("10s");
    ask(&mut store, d).unwrap();
    ask(&mut store, simple("held", "default")).unwrap();
    let (reg, _) = store.register("default", "alice", TTL).unwrap();
    claim(&mut store, &reg.lease, "held").unwrap();
    store.agent_enter("temp", None, None, Some(5_000)).unwrap();
    store.agent_enter("kid", Some("temp"), None, None).unwrap();
    assert_eq!(store.next_due().unwrap(), Some(t0 + 5_000));
    clock.advance(TTL + 1);
    let swept = store.sweep().unwrap().expect("something was due");
    assert_eq!(swept.leases, vec![lease_id(&reg.lease)]);
    assert_eq!(swept.released, vec!["held".to_string()]);
    assert_eq!(swept.aborted, vec!["due".to_string()]);
    assert_eq!(swept.agents, vec!["temp".to_string(), "kid".to_string()]);
    assert_eq!(store.next_due().unwrap(), None);
}

/// A write that fails because of what its sweep found (an answer after the deadline, a
/// heartbeat after the expiry) still commits what the sweep ended.
pub fn a_failed_write_still_records_what_its_sweep_ended(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    let mut v = simple("r1", "default");
    v["timeout"] = json!("1s");
    ask(&mut store, v).unwrap();
    let (reg, _) = store.register("default", "alice", TTL).unwrap();
    claim(&mut store, &reg.lease, "r1").unwrap();
    clock.advance(1_001);
    assert_eq!(
        code(answer(&mut store, &reg.lease, "r1", "SQLite")),
        Code::RequestFinal
    );
    assert_eq!(row(&mut store, "r1").status, Status::Aborted);
    assert_eq!(outbox_ids(&mut store), ["r1"]);
    clock.advance(TTL);
    assert_eq!(code(store.heartbeat(&reg.lease)), Code::LeaseExpired);
    let info = store.lease_info(&reg.lease).unwrap();
    assert_eq!(info.end_reason.as_deref(), Some("expired"));
    assert_eq!(
        info.expires_at,
        rfc3339(t0 + TTL),
        "the heartbeat extended nothing"
    );
    assert_eq!(store.sweep().unwrap(), None, "nothing was left to sweep");
}

/// An answer file applied again (a crash before its file was removed) is a replay only by
/// the same lease with the same answer; any other identical or different answer to a final
/// request is REQUEST_FINAL and changes nothing; on an open request it is a first answer.
pub fn identical_answer_is_request_final_except_as_a_replay_by_the_same_lease(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    ask(&mut store, simple("r1", "default")).unwrap();
    let (reg, _) = store.register("default", "alice", TTL).unwrap();
    clock.advance(1);
    let first = answer(&mut store, &reg.lease, "r1", "Postgres").unwrap();
    let before = row(&mut store, "r1");
    clock.advance(1);
    assert_eq!(
        code(answer(&mut store, &reg.lease, "r1", "Postgres")),
        Code::RequestFinal,
        "of two identical racing answers one wins"
    );
    let file = |token: &str, id: &str, label: &str| ProviderFile::Answer {
        id: id.into(),
        token: token.into(),
        answer: pick(label),
    };
    let apply = |store: &mut Store, f: ProviderFile| {
        let mut out = store.apply_answer_files(&[f]).unwrap();
        assert_eq!(out.len(), 1);
        out.pop().unwrap()
    };
    clock.advance(7);
    assert_eq!(
        apply(&mut store, file(&reg.lease, "r1", "Postgres")).unwrap(),
        Some(first)
    );
    assert_eq!(
        apply(&mut store, file(&reg.lease, "r1", "SQLite"))
            .unwrap_err()
            .to_user_error()
            .code,
        Code::RequestFinal
    );
    assert!(store.release(&reg.lease).unwrap());
    let (other, _) = store.register("default", "bob", TTL).unwrap();
    assert_eq!(
        apply(&mut store, file(&other.lease, "r1", "Postgres"))
            .unwrap_err()
            .to_user_error()
            .code,
        Code::RequestFinal
    );
    assert_eq!(row(&mut store, "r1"), before);
    assert_eq!(kinds(&mut store, "r1"), ["accepted", "answered"]);
    clock.advance(1);
    ask(&mut store, simple("r2", "default")).unwrap();
    let o = apply(&mut store, file(&other.lease, "r2", "SQLite"))
        .unwrap()
        .unwrap();
    let Outcome::Answered(a) = &o else {
        panic!("{o:?}")
    };
    assert_eq!(a.answer, pick("SQLite"));
    assert_eq!(row(&mut store, "r2").status, Status::Answered);
}

/// Every state change appends one event, with its time and actor, and the chain of hashes
/// links each to the one before and verifies.
pub fn every_state_change_appends_an_event_and_the_chain_verifies(
    new: impl Fn(&TestClock) -> Store,
) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    assert_eq!(store.verify(&[]).unwrap().broken, None);
    let root = store.agent_enter("root", None, None, None).unwrap();
    let (reg, _) = store.register("default", "alice", TTL).unwrap();
    let mut v = simple("r1", "default");
    v["agent"] = json!({"id": "root", "instance": root.instance});
    clock.advance(1);
    ask(&mut store, v).unwrap();
    clock.advance(1);
    claim(&mut store, &reg.lease, "r1").unwrap();
    clock.advance(1);
    answer(&mut store, &reg.lease, "r1", "SQLite").unwrap();
    clock.advance(1);
    ask(&mut store, simple("r2", "default")).unwrap();
    clock.advance(1);
    store.cancel(&lease(&reg.lease), "r2", None).unwrap();
    clock.advance(1);
    ask(&mut store, simple("r3", "default")).unwrap();
    clock.advance(1);
    store.abort("r3", None, &Actor::Asker).unwrap();
    clock.advance(1);
    let mut bad = simple("bad", "default");
    bad["questions"] = json!([]);
    assert_eq!(ask(&mut store, bad), Err(Code::EmptyQuestions));
    clock.advance(1);
    ask(&mut store, simple("r4", "default")).unwrap();
    claim(&mut store, &reg.lease, "r4").unwrap();
    clock.advance(1);
    store.release(&reg.lease).unwrap();
    clock.advance(1);
    store.agent_exit("root", &root.instance).unwrap();

    let evs = all_events(&mut store);
    let kinds: Vec<&str> = evs
        .iter()
        .map(|e| field(e, "kind").as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "agent-entered",
            "lease-registered",
            "accepted",
            "claimed",
            "answered",
            "accepted",
            "cancelled",
            "accepted",
            "aborted",
            "rejected",
            "accepted",
            "claimed",
            "lease-released",
            "released",
            "agent-exited",
        ]
    );
    assert_eq!(field(&evs[2], "actor"), "agent:root");
    assert_eq!(field(&evs[2], "agentId"), "root");
    assert_eq!(field(&evs[3], "actor"), "provider:alice");
    assert_eq!(field(&evs[4], "atMs"), &json!(t0 + 3));
    assert_eq!(field(&evs[5], "actor"), "asker");
    let mut prev = dshq::store::chain::GENESIS.to_string();
    for (i, e) in evs.iter().enumerate() {
        assert_eq!(field(e, "seq"), &json!(i as i64 + 1));
        assert_eq!(field(e, "prevHash"), &json!(prev));
        prev = field(e, "hash").as_str().unwrap().to_string();
    }
    let verified = store.verify(&[]).unwrap();
    assert_eq!(verified.broken, None);
    assert_eq!(verified.events, evs.len() as i64);
}

/// Refused operations append no event: a second register in a live context, a claim of an
/// unknown id, a claim with a forged token.
pub fn refused_operations_append_no_event(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let mut store = new(&clock);
    let (reg, _) = store.register("default", "alice", TTL).unwrap();
    let head = store.events_head().unwrap();
    let n = all_events(&mut store).len();
    assert_eq!(
        code(store.register("default", "bob", TTL)),
        Code::DuplicateProvider
    );
    assert_eq!(code(claim(&mut store, &reg.lease, "nope")), Code::NotFound);
    assert_eq!(
        code(claim(&mut store, "1.garbage", "nope")),
        Code::LeaseExpired
    );
    assert_eq!(store.events_head().unwrap(), head);
    assert_eq!(all_events(&mut store).len(), n);
}

/// A registration returns an unguessable token (the lease id and 64 hex digits) that
/// authenticates as the lease, at generation 1, expiring a ttl from now; the secret
/// appears in no exported record; a bad context is BAD_REQUEST, a blank name or a zero
/// ttl USAGE.
pub fn register_returns_an_unguessable_token(new: impl Fn(&TestClock) -> Store) {
    let clock = TestClock::new();
    let t0 = clock.now();
    let mut store = new(&clock);
    let (reg, _) = store.register("default", "alice", TTL).unwrap();
    let (id, secret) = reg.lease.split_once('.').unwrap();
    assert!(id.parse::<i64>().is_ok());
    assert_eq!(secret.len(), 64);
    assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(reg.generation, 1);
    assert_eq!(reg.context, "default");
    assert_eq!(reg.name, "alice");
    assert_eq!(reg.expires_at, rfc3339(t0 + TTL));
    let l = store.authenticate(&reg.lease).unwrap();
    assert_eq!(l.name, "alice");
    assert_eq!(l.expires_ms, t0 + TTL);
    let mut records = Vec::new();
    store
        .export(&mut |kind, fields| {
            records.push(format!("{kind} {}", Value::Object(fields)));
            Ok(())
        })
        .unwrap();
    assert!(
        records.iter().any(|r| r.starts_with("lease ")),
        "{records:?}"
    );
    assert!(
        records.iter().all(|r| !r.contains(secret)),
        "the secret was exported: {records:?}"
    );
    assert_eq!(code(store.register("x y", "n", TTL)), Code::BadRequest);
    assert_eq!(code(store.register("c", " ", TTL)), Code::Usage);
    assert_eq!(code(store.register("c", "n", 0)), Code::Usage);
}
