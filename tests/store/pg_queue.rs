//! Tests of the queue side on a throwaway PostgreSQL, where SQLite cannot go: several
//! connections (hosts) racing on one store, the database's clock as the only clock, a
//! connection lost under a store, the origin filter of the outbox and the views.

use std::collections::HashSet;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::json;

use crate::scenarios::TestClock;
use crate::throwaway;
use dshq::core::audit::{Actor, Source};
use dshq::error::Error;
use dshq::protocol::error::Code;
use dshq::protocol::{Answer, AnswerItem, Request};
use dshq::store::driver::Driver;
use dshq::store::postgres::PgStore;
use dshq::store::queue::Queue;
use dshq::store::{Answered, AskInput, Asked, LeaseRef, ListFilter, Status};

fn fresh() -> String {
    throwaway::shared().fresh_database().unwrap()
}

fn open(url: &str) -> PgStore {
    PgStore::connect(url, None, None).unwrap()
}

fn request(id: &str, context: &str) -> Request {
    serde_json::from_value(json!({
        "id": id,
        "context": context,
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]
    }))
    .unwrap()
}

/// A pending request row as a driver statement takes it: `id` in `context`, an empty body.
fn pending_row<'a>(id: &'a str, context: &'a str) -> dshq::store::driver::requests::NewRequest<'a> {
    dshq::store::driver::requests::NewRequest {
        id,
        context,
        agent_id: None,
        agent_instance: None,
        agent_lineage: None,
        body: "{}",
        source: "cli",
        require_provider: false,
        deadline_ms: None,
        created_ms: 1,
        ladder: None,
        ladder_due_ms: None,
        quorum: None,
    }
}

fn ask(store: &mut PgStore, id: &str, context: &str) {
    let input = AskInput {
        request: Ok(request(id, context)),
        fallback_id: None,
        salvaged: (None, None),
        raw: String::new(),
        source: Source::Cli,
        actor: Actor::Cli,
    };
    match store.ask(input).unwrap() {
        Asked::Accepted(a) => assert!(a.new, "{a:?}"),
        other => panic!("not accepted: {other:?}"),
    }
}

fn pick(label: &str) -> Answer {
    Answer {
        answers: vec![AnswerItem {
            id: "db".into(),
            selected: vec![label.into()],
            custom: None,
            edited: None,
        }],
    }
}

fn code(e: &Error) -> Code {
    e.to_user_error().code
}

#[test]
fn racing_claim_next_on_two_connections_never_claims_one_request_twice() {
    let url = fresh();
    let mut setup = open(&url);
    const N: usize = 40;
    for i in 0..N {
        ask(&mut setup, &format!("r{i}"), "ctx");
    }
    // One lease (the web host's), used by two reviewers on two connections.
    let (reg, _) = setup.register("ctx", "host", 600_000).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2)
        .map(|w| {
            let (url, token, barrier) = (url.clone(), reg.lease.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut store = open(&url);
                let lease = LeaseRef::OnBehalf {
                    token,
                    actor: Actor::Web(format!("reviewer{w}")),
                };
                barrier.wait();
                let mut got = Vec::new();
                loop {
                    match store.claim_next(&lease) {
                        Ok(row) => got.push(row.id.unwrap()),
                        Err(e) if code(&e) == Code::NotFound => return got,
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    let claimed: Vec<Vec<String>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let all: Vec<&String> = claimed.iter().flatten().collect();
    let distinct: HashSet<&String> = all.iter().copied().collect();
    assert_eq!(all.len(), N, "every request claimed once: {claimed:?}");
    assert_eq!(distinct.len(), N, "no request claimed twice: {claimed:?}");
    let open_rows = setup.list(&ListFilter::default()).unwrap();
    assert!(open_rows.iter().all(|r| r.status == Status::Claimed));
}

#[test]
fn claim_next_skips_a_row_another_session_has_locked() {
    let url = fresh();
    let mut store = open(&url);
    ask(&mut store, "first", "ctx");
    ask(&mut store, "second", "ctx");
    let (reg, _) = store.register("ctx", "alice", 600_000).unwrap();
    // Another session holds the oldest pending row (outside dshq's write lock).
    let mut other = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut held = other.transaction().unwrap();
    held.execute("SELECT 1 FROM requests WHERE id = 'first' FOR UPDATE", &[])
        .unwrap();
    let row = store
        .claim_next(&LeaseRef::Token(reg.lease.clone()))
        .unwrap();
    assert_eq!(row.id.as_deref(), Some("second"));
    held.rollback().unwrap();
    let row = store.claim_next(&LeaseRef::Token(reg.lease)).unwrap();
    assert_eq!(row.id.as_deref(), Some("first"));
}

#[test]
fn racing_answers_from_two_stores_have_exactly_one_winner() {
    let url = fresh();
    let mut setup = open(&url);
    const N: usize = 12;
    for i in 0..N {
        ask(&mut setup, &format!("q{i}"), "ctx");
    }
    let (reg, _) = setup.register("ctx", "host", 600_000).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let workers: Vec<_> = ["Postgres", "SQLite"]
        .into_iter()
        .map(|label| {
            let (url, token, barrier) = (url.clone(), reg.lease.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut store = open(&url);
                let lease = LeaseRef::Token(token);
                (0..N)
                    .map(|i| {
                        barrier.wait();
                        store
                            .answer(&lease, &format!("q{i}"), &pick(label))
                            .map(|_| label)
                            .map_err(|e| code(&e))
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<Vec<_>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    for (i, pair) in results[0].iter().zip(&results[1]).enumerate() {
        let winner = match pair {
            (Ok(w), Err(Code::RequestFinal)) | (Err(Code::RequestFinal), Ok(w)) => *w,
            other => panic!("q{i}: not exactly one winner: {other:?}"),
        };
        let row = setup.get(&format!("q{i}")).unwrap().unwrap();
        assert_eq!(row.status, Status::Answered);
        assert_eq!(row.answer, Some(pick(winner).to_json()), "q{i}");
        let answered = setup
            .events(&format!("q{i}"))
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == "answered")
            .count();
        assert_eq!(answered, 1, "q{i}: one answered event");
    }
}

#[test]
fn a_live_lease_on_one_connection_makes_a_second_register_a_duplicate_provider() {
    let url = fresh();
    let (mut a, mut b) = (open(&url), open(&url));
    a.register("ctx", "alice", 600_000).unwrap();
    let e = b.register("ctx", "bob", 600_000).unwrap_err();
    assert_eq!(code(&e), Code::DuplicateProvider, "{e}");
    assert!(e.to_string().contains("alice"), "{e}");
    // Another context is free.
    b.register("elsewhere", "bob", 600_000).unwrap();
}

/// A connection's session whose database clock runs `minutes` ahead: `clock_timestamp()`
/// is shadowed by a function in a schema searched before `pg_catalog`.
fn skewed(url: &str, minutes: i64) -> PgStore {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS skew;
         CREATE OR REPLACE FUNCTION skew.clock_timestamp() RETURNS timestamptz
             LANGUAGE sql AS $$ SELECT pg_catalog.clock_timestamp() + interval '{minutes} minutes' $$;"
    ))
    .unwrap();
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}options=-c%20search_path%3Dpublic%2Cskew%2Cpg_catalog");
    open(&url)
}

#[test]
fn time_is_the_database_clock_never_the_hosts() {
    let url = fresh();
    let mut honest = open(&url);
    // The session of `ahead` sees a database clock 10 minutes ahead: every decision it
    // makes follows that clock, whatever this host's clock says.
    let mut ahead = skewed(&url, 10);
    let host = dshq::clock::now_ms();
    let (_, lease) = ahead.register("a", "alice", 60_000).unwrap();
    assert!(
        lease.expires_ms >= host + 10 * 60_000 + 60_000 - 1_000,
        "the expiry is judged by the database's clock: {} vs host {host}",
        lease.expires_ms
    );
    // A lease registered by the honest session with a ttl of a minute is live by this
    // host's clock, and dead by the database clock `ahead` reads: it expires there.
    let (reg, _) = honest.register("ctx", "alice", 60_000).unwrap();
    assert!(honest.authenticate(&reg.lease).is_ok());
    let e = ahead.authenticate(&reg.lease).unwrap_err();
    assert_eq!(code(&e), Code::LeaseExpired, "{e}");
    ahead.register("ctx", "bob", 60_000).unwrap();
    let e = honest.authenticate(&reg.lease).unwrap_err();
    assert_eq!(code(&e), Code::LeaseExpired, "{e}");
}

/// Every file of the backend, read at run time (so a file moved or added is checked too).
fn backend_files(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            backend_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
}

#[test]
fn the_backend_never_reads_the_hosts_clock() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/postgres");
    let mut files = Vec::new();
    backend_files(&dir, &mut files);
    assert!(
        files.len() > 10,
        "found {} files in {}",
        files.len(),
        dir.display()
    );
    for (name, text) in files {
        assert!(
            !text.contains(concat!("now_ms", "(")),
            "{name} reads the host's clock"
        );
    }
}

#[test]
fn a_connection_ended_by_the_server_is_replaced_on_the_next_call() {
    let url = fresh();
    let mut store = open(&url);
    ask(&mut store, "before", "ctx");
    let pid: i32 = store
        .client()
        .unwrap()
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid])
        .unwrap();
    // A read on the dead connection runs again on a new one.
    let row = store.get("before").unwrap().unwrap();
    assert_eq!(row.status, Status::Pending);
    let pid2: i32 = store
        .client()
        .unwrap()
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    assert_ne!(pid, pid2);
    // A write whose `BEGIN` finds the connection dead starts on a new one.
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid2])
        .unwrap();
    ask(&mut store, "after", "ctx");
    assert!(store.get("after").unwrap().is_some());
    // So does a write after the server ended an idle session (the probe finds it).
    let pid3: i32 = store
        .client()
        .unwrap()
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    assert_ne!(pid2, pid3);
    admin
        .execute("SELECT pg_terminate_backend($1)", &[&pid3])
        .unwrap();
    std::thread::sleep(
        dshq::store::postgres::conn::IDLE_PROBE + std::time::Duration::from_millis(200),
    );
    ask(&mut store, "idle", "ctx");
    assert_eq!(store.list(&ListFilter::default()).unwrap().len(), 3);
}

#[test]
fn the_outbox_of_a_store_holds_only_its_origins_outcomes() {
    let url = fresh();
    let mut here = PgStore::connect(&url, None, Some("here")).unwrap();
    let mut there = PgStore::connect(&url, None, Some("there")).unwrap();
    let mut tool = open(&url);
    ask(&mut here, "mine", "ctx");
    ask(&mut there, "theirs", "ctx");
    // Answered from a third host: each outcome goes to the root that asked.
    let (reg, _) = tool.register("ctx", "alice", 600_000).unwrap();
    for id in ["mine", "theirs"] {
        tool.answer(&LeaseRef::Token(reg.lease.clone()), id, &pick("SQLite"))
            .unwrap();
    }
    let ids = |s: &mut PgStore| -> Vec<String> {
        s.outbox_pending(0, 16)
            .unwrap()
            .into_iter()
            .map(|(_, o)| o.id().to_string())
            .collect()
    };
    assert_eq!(ids(&mut here), ["mine"]);
    assert_eq!(ids(&mut there), ["theirs"]);
    assert_eq!(ids(&mut tool), ["mine", "theirs"]);
}

#[test]
fn a_view_sweeps_without_committing_and_the_next_write_ends_it() {
    let url = fresh();
    let clock = TestClock::new();
    let mut store = open(&url).with_clock(clock.as_fn());
    ask(&mut store, "v", "ctx");
    let (reg, _) = store.register("ctx", "alice", 10_000).unwrap();
    store.claim(&LeaseRef::Token(reg.lease), "v").unwrap();
    clock.advance(10_001);
    store.view_now().unwrap();
    assert_eq!(store.get("v").unwrap().unwrap().status, Status::Pending);
    // Another connection still sees the claim: the view committed nothing.
    let mut other = open(&url).with_clock(clock.as_fn());
    assert_eq!(other.get("v").unwrap().unwrap().status, Status::Claimed);
    // A write on the viewing store ends the view first, then sweeps for real.
    store.agent_enter("a1", None, None, None).unwrap();
    assert_eq!(other.get("v").unwrap().unwrap().status, Status::Pending);
}

#[test]
fn a_failed_write_keeps_the_sweep_it_observed() {
    let url = fresh();
    let clock = TestClock::new();
    let mut store = open(&url).with_clock(clock.as_fn());
    ask(&mut store, "s", "ctx");
    let (reg, _) = store.register("ctx", "alice", 10_000).unwrap();
    store
        .claim(&LeaseRef::Token(reg.lease.clone()), "s")
        .unwrap();
    clock.advance(10_001);
    let e = store
        .answer(&LeaseRef::Token(reg.lease), "s", &pick("SQLite"))
        .unwrap_err();
    assert_eq!(code(&e), Code::LeaseExpired, "{e}");
    // The expiry the failed answer observed is committed.
    let mut other = open(&url);
    assert_eq!(other.get("s").unwrap().unwrap().status, Status::Pending);
    assert_eq!(other.lease_status(Some("ctx")).unwrap().len(), 0);
}

#[test]
fn the_error_of_a_bad_url_or_an_unreachable_server_never_shows_the_password() {
    let e = PgStore::connect("postgres://u:s3cret@%zz/db", None, None).unwrap_err();
    assert!(!e.to_string().contains("s3cret"), "{e}");
    let e = PgStore::connect(
        "postgres://u:s3cret@localhost/db?host=/nonexistent-dshq-socket-dir",
        None,
        None,
    )
    .unwrap_err();
    assert_eq!(code(&e), Code::Store, "{e}");
    assert!(!e.to_string().contains("s3cret"), "{e}");
}

#[test]
fn two_hosts_migrating_one_new_database_at_once_apply_each_migration_once() {
    let url = fresh();
    let barrier = Arc::new(Barrier::new(3));
    let hosts: Vec<_> = (0..3)
        .map(|_| {
            let (url, barrier) = (url.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                PgStore::connect(&url, None, None).map(|_| ())
            })
        })
        .collect();
    for h in hosts {
        h.join().unwrap().unwrap();
    }
    let mut store = open(&url);
    let versions: Vec<i64> = store
        .client()
        .unwrap()
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let known: Vec<i64> = dshq::store::postgres::MIGRATIONS
        .iter()
        .map(|m| m.0)
        .collect();
    assert_eq!(versions, known);
}

#[test]
fn a_store_from_a_newer_dshq_is_refused() {
    let url = fresh();
    let mut store = open(&url);
    store
        .client()
        .unwrap()
        .execute(
            "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (99, 'future', 0)",
            &[],
        )
        .unwrap();
    drop(store);
    match PgStore::connect(&url, None, None) {
        Err(Error::SchemaTooNew { found: 99, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_database_refuses_to_change_what_was_asked_or_a_final_request() {
    let url = fresh();
    let mut store = open(&url);
    ask(&mut store, "fixed", "ctx");
    let (reg, _) = store.register("ctx", "alice", 600_000).unwrap();
    let c = store.client().unwrap();
    for edit in [
        "UPDATE requests SET body = '{}' WHERE id = 'fixed'",
        "UPDATE requests SET origin = 'elsewhere' WHERE id = 'fixed'",
        "UPDATE questions SET question = 'Which?'",
        "DELETE FROM questions",
        "DELETE FROM requests",
    ] {
        let e = Error::from(c.execute(edit, &[]).unwrap_err());
        assert!(e.to_string().contains("record"), "{edit}: {e}");
    }
    store
        .answer(&LeaseRef::Token(reg.lease), "fixed", &pick("SQLite"))
        .unwrap();
    let c = store.client().unwrap();
    for edit in [
        "UPDATE requests SET answer = NULL WHERE id = 'fixed'",
        "UPDATE requests SET provider = 'mallory' WHERE id = 'fixed'",
        "UPDATE questions SET selected = '[\"Postgres\"]'",
    ] {
        let e = Error::from(c.execute(edit, &[]).unwrap_err());
        assert!(e.to_string().contains("record"), "{edit}: {e}");
    }
    // Only the outbox bookkeeping of a final request changes.
    c.execute(
        "UPDATE requests SET outbox_pending = FALSE WHERE id = 'fixed'",
        &[],
    )
    .unwrap();
}

/// One scripted history through the trait, every result written down as text, with the
/// random parts (agent instances, lease tokens, event hashes) replaced by names.
fn script<D: Driver>(s: &mut Queue<D>, clock: &TestClock) -> Vec<String> {
    use dshq::core::audit::EventKind;
    use dshq::store::{HistoryFilter, InboxInput, ProviderFile};
    let mut out: Vec<String> = Vec::new();
    let mut secrets: Vec<String> = Vec::new();
    fn show<T: std::fmt::Debug>(r: &dshq::Result<T>) -> String {
        match r {
            Ok(v) => format!("{v:?}"),
            Err(e) => format!("Err({:?}: {e})", code(e)),
        }
    }
    macro_rules! step {
        ($label:expr, $e:expr) => {{
            let r = $e;
            out.push(format!("{}: {}", $label, show(&r)));
            r
        }};
    }
    let asking = |id: &str, extra: serde_json::Value| -> AskInput {
        let mut v = json!({
            "id": id,
            "context": "ctx",
            "questions": [
                {"id": "db", "question": "Which DATABASE?",
                 "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
                {"id": "plan", "question": "Approve the plan?", "detail": "the plan",
                 "options": [{"label": "Revise"}, {"label": "Approve"}],
                 "intent": {"kind": "plan-review", "approve": "Approve"}}
            ]
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        AskInput {
            request: Ok(serde_json::from_value(v).unwrap()),
            fallback_id: None,
            salvaged: (Some(id.into()), Some("ctx".into())),
            raw: format!("raw {id}"),
            source: Source::Cli,
            actor: Actor::Cli,
        }
    };
    let both = |db: &str, plan: &str| Answer {
        answers: vec![
            AnswerItem {
                id: "plan".into(),
                selected: vec![plan.into()],
                custom: None,
                edited: None,
            },
            AnswerItem {
                id: "db".into(),
                selected: vec![db.into()],
                custom: None,
                edited: None,
            },
        ],
    };

    let boss = step!(
        "enter boss",
        s.agent_enter("boss", None, Some("l0"), Some(60_000))
    );
    let boss = boss.unwrap();
    secrets.push(boss.instance.clone());
    let worker = step!(
        "enter worker",
        s.agent_enter("worker", Some("boss"), None, None)
    )
    .unwrap();
    secrets.push(worker.instance.clone());
    step!(
        "enter self-owned",
        s.agent_enter("x", Some("x"), None, None)
    )
    .ok();
    let solo = step!(
        "enter solo",
        s.agent_enter("solo", None, None, Some(30_000))
    )
    .unwrap();
    secrets.push(solo.instance.clone());
    step!("ask q1", s.ask(asking("q1", json!({})))).ok();
    step!("ask q1 again", s.ask(asking("q1", json!({})))).ok();
    step!(
        "ask q1 other",
        s.ask(asking("q1", json!({"meta": {"x": 1}})))
    )
    .ok();
    step!(
        "ask q2 by solo",
        s.ask(asking(
            "q2",
            json!({"agent": {"id": "solo", "instance": solo.instance}})
        ))
    )
    .ok();
    step!(
        "ask q6 by worker",
        s.ask(asking(
            "q6",
            json!({"agent": {"id": "worker", "instance": worker.instance}})
        ))
    )
    .ok();
    step!(
        "ask q3 stale",
        s.ask(asking(
            "q3",
            json!({"agent": {"id": "worker", "instance": "0000"}})
        ))
    )
    .ok();
    step!(
        "ask q4 deadline",
        s.ask(asking("q4", json!({"timeout": "5s"})))
    )
    .ok();
    step!(
        "ask q5 needs provider",
        s.ask(asking("q5", json!({"requireProvider": true})))
    )
    .ok();
    step!(
        "ingest",
        s.ingest(vec![
            InboxInput::Request {
                name: "i1.json".into(),
                stem: "i1".into(),
                request: serde_json::from_value(json!({"context": "ctx", "questions": [
                    {"id": "db", "question": "In?", "options": [{"label": "A"}, {"label": "B"}]}]}))
                .unwrap(),
                raw: "raw i1".into(),
                mtime: clock.now() - 1,
                prepared: None,
            },
            InboxInput::Abort {
                name: "q1.abort".into(),
                id: "nope".into(),
                reason: None,
            },
            InboxInput::Reject {
                name: "junk.txt".into(),
                id: None,
                context: None,
                raw: "junk".into(),
                error: dshq::protocol::error::UserQuestionError::new(Code::BadRequest, "not json"),
            },
        ])
    )
    .ok();
    clock.advance(1_000);
    let reg = step!("register alice", s.register("ctx", "alice", 10_000))
        .unwrap()
        .0;
    secrets.push(reg.lease.clone());
    step!("register bob", s.register("ctx", "bob", 10_000)).ok();
    let alice = LeaseRef::Token(reg.lease.clone());
    step!("claim next", s.claim_next(&alice)).ok();
    step!("claim q2", s.claim(&alice, "q2")).ok();
    step!("bad answer", s.answer(&alice, "q1", &pick("SQLite"))).ok();
    clock.advance(500);
    step!(
        "answer q1",
        s.answer(&alice, "q1", &both("SQLite", "Approve"))
    )
    .ok();
    step!(
        "answer q1 again",
        s.answer(&alice, "q1", &both("Postgres", "Revise"))
    )
    .ok();
    step!(
        "answer files",
        s.apply_answer_files(&[
            ProviderFile::Answer {
                id: "q1".into(),
                token: reg.lease.clone(),
                answer: both("SQLite", "Approve"),
            },
            ProviderFile::Cancel {
                id: "i1".into(),
                token: reg.lease.clone(),
                reason: Some("dup".into()),
            },
            ProviderFile::Cancel {
                id: "i1".into(),
                token: reg.lease.clone(),
                reason: Some("dup".into()),
            },
            ProviderFile::Answer {
                id: "missing".into(),
                token: reg.lease.clone(),
                answer: pick("A"),
            },
        ])
    )
    .ok();
    step!("heartbeat", s.heartbeat(&reg.lease)).ok();
    step!("next for lease", s.next_for_lease("ctx", 1, 0)).ok();
    step!("outbox", s.outbox_pending(0, 100)).ok();
    clock.advance(6_000);
    step!("sweep deadline", s.sweep()).ok();
    step!("next due", s.next_due()).ok();
    clock.advance(11_000);
    step!("authenticate expired", s.authenticate(&reg.lease)).ok();
    step!("lease info", s.lease_info(&reg.lease)).ok();
    step!("sweep lease", s.sweep()).ok();
    step!("agents", s.agents(false)).ok();
    // Refused: the transient lease registered for it is rolled back with it (its id is
    // taken again by the next lease, as SQLite numbers rows).
    step!(
        "transient bad answer q2",
        s.answer(
            &LeaseRef::Transient {
                name: "carol".into(),
                ttl_ms: 5_000
            },
            "q2",
            &pick("SQLite")
        )
    )
    .ok();
    let bob = step!(
        "transient answer q2",
        s.answer(
            &LeaseRef::Transient {
                name: "carol".into(),
                ttl_ms: 5_000
            },
            "q2",
            &both("Postgres", "Revise")
        )
    );
    drop(bob);
    let reg2 = step!("register dave", s.register("ctx", "dave", 60_000))
        .unwrap()
        .0;
    secrets.push(reg2.lease.clone());
    step!("revoke", s.revoke("ctx", "admin", Some("leaving"))).ok();
    step!("revoke none", s.revoke("ctx", "admin", None)).ok();
    step!("abort q5", s.abort("q5", Some("gone"), &Actor::Asker)).ok();
    step!("abort q1", s.abort("q1", None, &Actor::Asker)).ok();
    step!("while open", s.while_open(None, &mut |ids| Ok(ids.len()))).ok();
    step!("exit boss", s.agent_exit("boss", &boss.instance)).ok();
    step!("feed", s.feed(0, 100)).ok();
    step!("events head", s.events_head()).ok();
    step!("open requests", s.open_requests(Some("ctx"))).ok();
    step!(
        "list grep",
        s.list(&ListFilter {
            grep: Some("database".into()),
            oldest_first: true,
            ..Default::default()
        })
    )
    .ok();
    step!(
        "list intent",
        s.list(&ListFilter {
            intent: Some("plan-review".into()),
            contexts: vec!["ctx".into(), "other".into()],
            limit: Some(2),
            ..Default::default()
        })
    )
    .ok();
    step!("get_any junk", s.get_any("i1")).ok();
    step!(
        "request events",
        s.request_events(0, EventKind::ALL, &ListFilter::default(), 1_000)
            .map(|p| (
                p.upto,
                p.events
                    .into_iter()
                    .map(|(e, r)| (e.seq, e.kind, r.id))
                    .collect::<Vec<_>>()
            ))
    )
    .ok();
    // A rejected id asked again (the rejection's outcome is replaced), and an inbox
    // file rejected once and delivered again (its earlier verdict stands).
    step!(
        "ask bad",
        s.ask(AskInput {
            request: Ok(serde_json::from_value(json!({"id": "bad", "questions": []})).unwrap()),
            fallback_id: None,
            salvaged: (Some("bad".into()), None),
            raw: "{}".into(),
            source: Source::Cli,
            actor: Actor::Cli,
        })
    )
    .ok();
    step!("ask bad fixed", s.ask(asking("bad", json!({})))).ok();
    let empty = |clock: &TestClock| InboxInput::Request {
        name: "e.json".into(),
        stem: "e".into(),
        request: serde_json::from_value(json!({"questions": []})).unwrap(),
        raw: "{\"questions\": []}".into(),
        mtime: clock.now() - 10,
        prepared: None,
    };
    step!("ingest empty", s.ingest(vec![empty(clock)])).ok();
    clock.advance(5);
    step!("ingest empty again", s.ingest(vec![empty(clock)])).ok();
    step!("agent heartbeat", s.agent_heartbeat("solo", &solo.instance)).ok();
    step!("agent heartbeat stale", s.agent_heartbeat("solo", "0000")).ok();
    let reg3 = step!("register erin", s.register("ctx", "erin", 1_000))
        .unwrap()
        .0;
    secrets.push(reg3.lease.clone());
    step!(
        "erin claims",
        s.claim_next(&LeaseRef::Token(reg3.lease.clone()))
    )
    .ok();
    step!("lease status", s.lease_status(None)).ok();
    clock.advance(31_000);
    step!("release erin", s.release(&reg3.lease)).ok();
    step!("release erin again", s.release(&reg3.lease)).ok();
    step!(
        "while open some",
        s.while_open(Some(&["q2", "bad", "nope", "bad"]), &mut |ids| {
            Ok(ids.len() * 10)
        })
    )
    .ok();
    let keys: Vec<i64> = s
        .outbox_pending(0, 100)
        .map(|o| o.into_iter().map(|(k, _)| k).collect())
        .unwrap_or_default();
    step!(
        "mark written",
        s.mark_outbox_written(&keys[..keys.len() / 2])
    )
    .ok();
    step!(
        "outbox after",
        s.outbox_pending(keys.first().copied().unwrap_or(0), 3)
    )
    .ok();
    step!("history", s.history(&HistoryFilter::default())).ok();
    step!("stats", s.stats(None)).ok();
    step!("outbox at end", s.outbox_pending(0, 100)).ok();
    for id in ["q1", "q2", "q4", "q5", "i1", "bad", "e"] {
        let events = s.events(id).map(|es| {
            es.into_iter()
                .map(|e| {
                    (
                        e.seq, e.at_ms, e.kind, e.lease_id, e.agent_id, e.actor, e.data,
                    )
                })
                .collect::<Vec<_>>()
        });
        step!(format!("events {id}"), events).ok();
    }
    // Last: a view (SQLite's is for reads only; nothing is written after it).
    clock.advance(60_000);
    step!("view", s.view_now()).ok();
    step!("open after view", s.open_requests(None)).ok();
    step!("agents after view", s.agents(false)).ok();
    step!("leases after view", s.lease_status(None)).ok();
    step!("events after view", s.events_head()).ok();
    for (i, secret) in secrets.iter().enumerate() {
        for line in &mut out {
            *line = line.replace(secret.as_str(), &format!("<secret{i}>"));
        }
    }
    // A request's digest covers its agent's (random) instance: digests are named in the
    // order they first appear, so equal digests still read equal.
    let mut digests: Vec<String> = Vec::new();
    for line in &mut out {
        while let Some(at) = line.find("sha256:") {
            let end = (at + 7 + 64).min(line.len());
            let digest = line[at..end].to_string();
            let n = match digests.iter().position(|d| *d == digest) {
                Some(n) => n,
                None => {
                    digests.push(digest.clone());
                    digests.len() - 1
                }
            };
            *line = line.replacen(&digest, &format!("<digest{n}>"), 1);
        }
    }
    out
}

#[test]
fn one_scripted_history_reads_the_same_on_sqlite_and_postgres() {
    let clock = TestClock::new();
    let mut lite = dshq::store::sqlite::SqliteStore::with_clock(
        dshq::store::sqlite::open_in_memory().unwrap(),
        clock.as_fn(),
    );
    let on_sqlite = script(&mut lite, &clock);
    let clock = TestClock::new();
    let mut pg = open(&fresh()).with_clock(clock.as_fn());
    let on_postgres = script(&mut pg, &clock);
    if std::env::var_os("DSHQ_SHOW_SCRIPT").is_some() {
        for l in &on_postgres {
            eprintln!("{l}");
        }
    }
    for (a, b) in on_sqlite.iter().zip(&on_postgres) {
        assert_eq!(a, b, "\nsqlite:   {a}\npostgres: {b}");
    }
    assert_eq!(on_sqlite.len(), on_postgres.len());
}

#[test]
fn a_commit_that_appended_an_event_notifies_and_bookkeeping_does_not() {
    let url = fresh();
    let mut listening = open(&url);
    let mut wakeups = listening
        .wakeups(true)
        .unwrap()
        .expect("PostgreSQL has wakeups");
    let mut writer = open(&url);
    ask(&mut writer, "n1", "ctx");
    assert!(
        wakeups.wait(Duration::from_secs(5)).unwrap(),
        "an ask notifies"
    );
    // Drain anything left, then a write without an event stays silent.
    while wakeups.wait(Duration::from_millis(200)).unwrap() {}
    writer.mark_outbox_written(&[1]).unwrap();
    writer.while_open(None, &mut |ids| Ok(ids.len())).unwrap();
    assert!(
        !wakeups.wait(Duration::from_millis(500)).unwrap(),
        "bookkeeping does not notify"
    );
    // A failed write does not either (its events rolled back with it).
    let e = writer.abort("missing", None, &Actor::Asker).unwrap_err();
    assert_eq!(code(&e), Code::NotFound);
    assert!(!wakeups.wait(Duration::from_millis(500)).unwrap());
    let (reg, _) = writer.register("ctx", "alice", 60_000).unwrap();
    assert!(
        wakeups.wait(Duration::from_secs(5)).unwrap(),
        "a register notifies"
    );
    drop(reg);
}

/// Whether some session of the server is waiting for a lock (`pg_stat_activity`).
fn someone_waits_for_a_lock(client: &mut postgres::Client) -> bool {
    client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity
                             WHERE wait_event_type = 'Lock' AND datname = current_database())",
            &[],
        )
        .unwrap()
        .get(0)
}

/// Poll `cond` until it holds, for at most `secs` seconds.
fn within(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + Duration::from_secs(secs);
    while std::time::Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

#[test]
fn writes_in_other_contexts_do_not_wait_for_an_open_write_and_every_wait_is_bounded() {
    let url = fresh();
    let mut store = open(&url);
    let settings: Vec<String> = [
        "lock_timeout",
        "idle_in_transaction_session_timeout",
        "statement_timeout",
    ]
    .iter()
    .map(|name| {
        store
            .client()
            .unwrap()
            .query_one(&format!("SHOW {name}"), &[])
            .unwrap()
            .get(0)
    })
    .collect();
    assert_eq!(settings, ["15s", "5s", "30s"]);
    ask(&mut store, "x1", "x");
    ask(&mut store, "y1", "y");
    ask(&mut store, "y2", "y");
    let (rx, _) = store.register("x", "alice", 600_000).unwrap();
    let (ry, _) = store.register("y", "bob", 600_000).unwrap();
    let (x_lease, y_lease) = (LeaseRef::Token(rx.lease), LeaseRef::Token(ry.lease));

    // Another host inside a write in context x: its claim of x1 made, not committed, and
    // the row numbering of an ask taken as well (the two locks a host can hold longest).
    let mut host_a = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    host_a
        .batch_execute(dshq::store::postgres::conn::SESSION_SETUP)
        .unwrap();
    let mut open_write = host_a.transaction().unwrap();
    open_write
        .batch_execute(&format!(
            "SELECT pg_advisory_xact_lock_shared({});
             SELECT pg_advisory_xact_lock({});
             UPDATE requests SET status = 'claimed', claimed_lease = {}, claimed_ms = 1 WHERE id = 'x1'",
            dshq::store::postgres::conn::WRITE_LOCK,
            dshq::store::postgres::tx::ROWS_LOCK,
            1,
        ))
        .unwrap();
    // Meanwhile, in context y: a claim and an answer commit, without waiting.
    let row = store.claim_next(&y_lease).unwrap();
    assert_eq!(row.id.as_deref(), Some("y1"));
    store.answer(&y_lease, "y1", &pick("SQLite")).unwrap();
    assert_eq!(store.get("y1").unwrap().unwrap().status, Status::Answered);
    // A claim in x skips the row the open write holds: nothing else is pending there.
    let e = store.claim_next(&x_lease).unwrap_err();
    assert_eq!(code(&e), Code::NotFound, "{e}");

    // An ask must number its row after the open write's: it waits (and says so in the
    // server's activity), and commits once the open write ends.
    let url2 = url.clone();
    let asking = std::thread::spawn(move || {
        let mut s = open(&url2);
        ask(&mut s, "waited", "y");
    });
    let mut probe = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    assert!(
        within(10, || someone_waits_for_a_lock(&mut probe)),
        "the ask waits for the row numbers"
    );
    assert!(store.get("waited").unwrap().is_none());
    // The open write now idles: the server ends its session after the idle timeout,
    // which releases its locks, and the ask commits (within seconds, not minutes).
    let started = std::time::Instant::now();
    asking.join().unwrap();
    assert!(store.get("waited").unwrap().is_some());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the wait was bounded: {:?}",
        started.elapsed()
    );
    assert!(open_write.commit().is_err(), "its session was ended");
    // Its claim was rolled back with it: x1 is pending, and claimable.
    assert_eq!(store.get("x1").unwrap().unwrap().status, Status::Pending);
    let row = store.claim_next(&x_lease).unwrap();
    assert_eq!(row.id.as_deref(), Some("x1"));
    let v = store.verify(&[]).unwrap();
    assert!(v.broken.is_none(), "{v:?}");
}

/// The rows a write holds are sent before any other statement of it: a file that replaces
/// a rejection of its id in the same batch clears that rejection's outbox flag in the
/// table (the outbox read hides a stale flag, so this is checked in SQL).
#[test]
fn a_batch_clears_the_outbox_flag_of_its_own_held_rejection() {
    use dshq::store::InboxInput;
    let url = fresh();
    let mut store = open(&url);
    let file = |name: &str, body: serde_json::Value| InboxInput::Request {
        name: name.into(),
        stem: name.trim_end_matches(".json").into(),
        raw: body.to_string(),
        request: serde_json::from_value(body).unwrap(),
        mtime: 0,
        prepared: None,
    };
    store
        .ingest(vec![
            file("x1.json", json!({"id": "x", "questions": []})),
            file(
                "x2.json",
                json!({"id": "x", "questions": [{"id": "db", "question": "Which?",
                        "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]}),
            ),
        ])
        .unwrap();
    let c = store.client().unwrap();
    let flagged: i64 = c
        .query_one(
            "SELECT count(*) FROM requests WHERE id = 'x' AND status = 'rejected' AND outbox_pending",
            &[],
        )
        .unwrap()
        .get(0);
    let rows: i64 = c
        .query_one("SELECT count(*) FROM requests WHERE id = 'x'", &[])
        .unwrap()
        .get(0);
    assert_eq!((rows, flagged), (2, 0));
}

/// A held request row whose id an accepted row already holds fails the whole write when
/// it is sent (the unique index has the last word), and leaves nothing: not the row, not
/// its questions, not the rows held beside it.
#[test]
fn a_held_row_with_a_taken_id_fails_its_whole_write() {
    use dshq::store::driver::RequestStatements;
    use dshq::store::postgres::tx::Tx;
    let url = fresh();
    let mut store = open(&url);
    ask(&mut store, "taken", "default");
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let row = |id: &'static str| pending_row(id, "default");
    let e = {
        let mut t = Tx::begin(c.transaction().unwrap(), None, None);
        t.lock_row_numbers().unwrap();
        // No lookup first, as no rule of the queue would: both are held, numbered 2 and 3.
        assert_eq!(t.insert_pending_request(&row("fresh")).unwrap(), Some(2));
        assert_eq!(t.insert_pending_request(&row("taken")).unwrap(), Some(3));
        t.tx.commit().unwrap_err()
    };
    assert!(e.to_string().contains("requests_id"), "{e}");
    let n: i64 = c
        .query_one("SELECT count(*) FROM requests", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 1, "only the first ask's row");
}

/// Quorum on PostgreSQL, where writers run side by side: three reviewers on
/// three connections vote on each of N requests needing two approvals at once. Every
/// request ends answered exactly once (one `answered` event, two approvers, two `voted`
/// rows counted before it); the third vote meets a final request, or (when it was
/// counted first) is one of the approvers. Without the request's row lock two votes
/// counted side by side would each see one vote and leave a met quorum open.
#[test]
fn racing_votes_on_three_connections_answer_each_request_exactly_once() {
    let url = fresh();
    let mut setup = open(&url);
    const N: usize = 12;
    for i in 0..N {
        let mut v = serde_json::to_value(request(&format!("v{i}"), "ctx")).unwrap();
        v["quorum"] = json!({"approvals": 2});
        let input = AskInput {
            request: Ok(serde_json::from_value(v).unwrap()),
            fallback_id: None,
            salvaged: (None, None),
            raw: String::new(),
            source: Source::WebToken("asker".into()),
            actor: Actor::Web("asker".into()),
        };
        assert!(matches!(setup.ask(input).unwrap(), Asked::Accepted(_)));
    }
    let (reg, _) = setup.register("ctx", "host", 600_000).unwrap();
    let barrier = Arc::new(Barrier::new(3));
    let workers: Vec<_> = ["r0", "r1", "r2"]
        .into_iter()
        .map(|who| {
            let (url, token, barrier) = (url.clone(), reg.lease.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut store = open(&url);
                let lease = LeaseRef::OnBehalf {
                    token,
                    actor: Actor::Web(who.into()),
                };
                (0..N)
                    .map(|i| {
                        barrier.wait();
                        match store.answer(&lease, &format!("v{i}"), &pick("Postgres")) {
                            Ok(Answered::Finished(_)) => "finished",
                            Ok(Answered::Voted(_)) => "voted",
                            Err(e) if code(&e) == Code::RequestFinal => "final",
                            Err(e) => panic!("{e}"),
                        }
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let results: Vec<Vec<&str>> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    for i in 0..N {
        let mut got: Vec<&str> = results.iter().map(|r| r[i]).collect();
        got.sort();
        assert_eq!(got, ["final", "finished", "voted"], "v{i}: {results:?}");
        let row = setup.get(&format!("v{i}")).unwrap().unwrap();
        assert_eq!(row.status, Status::Answered);
        assert_eq!(row.parsed_approvers().unwrap().len(), 2, "v{i}");
        assert_eq!(row.parsed_votes().len(), 2, "v{i}");
        let evs = setup.events(&format!("v{i}")).unwrap();
        let count = |k: &str| evs.iter().filter(|e| e.kind == k).count();
        assert_eq!((count("voted"), count("answered")), (2, 1), "v{i}");
    }
    assert_eq!(setup.verify(&[]).unwrap().broken, None);
}

/// A rollback to a savepoint never sends what was held since it: a write's new rows are
/// held (encoded for their `COPY`) and sent before its next statement, so the rows held
/// after a savepoint are forgotten before the rollback's statement. Here one of them is
/// a row the unique index would refuse: sent, it would fail the rollback and the write.
/// What was held before the savepoint, and after the rollback, is committed, numbered
/// without a gap.
#[test]
fn rows_held_after_a_savepoint_rolled_back_are_never_sent() {
    use dshq::store::postgres::session::{HeldRequest, Session};
    let url = fresh();
    ask(&mut open(&url), "taken", "ctx");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut s = Session::new(client.transaction().unwrap());
    let hold = |s: &mut Session<'_>, id: &str| {
        let seq = s.next_request_seq().unwrap();
        let row = pending_row(id, "ctx");
        s.hold_request(HeldRequest::Pending(seq, &row), None)
            .unwrap();
    };
    hold(&mut s, "before");
    s.batch_execute("SAVEPOINT p").unwrap();
    let mark = s.held();
    hold(&mut s, "gone");
    hold(&mut s, "taken");
    s.forget_since(mark);
    s.batch_execute("ROLLBACK TO SAVEPOINT p").unwrap();
    hold(&mut s, "after");
    s.commit().unwrap();
    let rows: Vec<(i64, String)> = client
        .query("SELECT seq, id FROM requests ORDER BY seq", &[])
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(
        rows,
        vec![
            (1, "taken".to_string()),
            (2, "before".to_string()),
            (3, "after".to_string())
        ]
    );
}
