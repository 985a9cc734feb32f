//! Tests of the audit side on a throwaway PostgreSQL: a copy of a SQLite store loads,
//! verifies under the same key and exports the same JSON; edits made with the triggers
//! dropped are found; the database refuses edits of the log; history, stats and web
//! tokens read as SQLite's; a commit elsewhere wakes a listener.

use std::path::Path;
use std::time::Duration;

use postgres::{Client, Config, IsolationLevel};
use serde_json::json;

use crate::scenarios::TestClock;
use dshq::core::access::Role;
use dshq::core::audit::{Actor, Source};
use dshq::protocol::{Answer, AnswerItem, Request};
use dshq::store::driver::Driver;
use dshq::store::postgres::tx::{PgRead, Tx};
use dshq::store::postgres::wakeups::{Listener, FEED_CHANNEL};
use dshq::store::postgres::{audit, conn, export};
use dshq::store::queue::Queue;
use dshq::store::queue::{history, tokens};
use dshq::store::sqlite::SqliteStore;
use dshq::store::{AskInput, Asked, HistoryFilter, InboxInput, LeaseRef, Record, Status, Wakeups};

/// A new empty database on the test server.
fn fresh_url() -> String {
    crate::throwaway::shared()
        .fresh_database()
        .expect("a fresh database")
}

fn client(url: &str) -> (Config, Client) {
    let config = conn::parse_url(url).unwrap();
    let mut c = conn::connect(&config).unwrap();
    conn::migrate(&mut c).unwrap();
    (config, c)
}

fn request(v: serde_json::Value) -> Request {
    serde_json::from_value(v).unwrap()
}

fn two_questions(id: &str) -> serde_json::Value {
    json!({
        "id": id,
        "questions": [
            {"id": "db", "question": "Which database?",
             "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
            {"id": "plan", "question": "Approve the PLAN?", "detail": "the plan",
             "options": [{"label": "Revise"}, {"label": "Approve"}],
             "intent": {"kind": "plan-review", "approve": "Approve"}}
        ]
    })
}

fn ask<D: Driver>(s: &mut Queue<D>, r: serde_json::Value) -> Asked {
    s.ask(AskInput {
        request: Ok(request(r)),
        fallback_id: None,
        salvaged: (None, None),
        raw: String::new(),
        source: Source::Cli,
        actor: Actor::Cli,
    })
    .unwrap()
}

fn answer(db: &str, plan: &str) -> Answer {
    Answer {
        answers: vec![
            AnswerItem {
                id: "db".into(),
                selected: vec![db.into()],
                custom: None,
                edited: None,
            },
            AnswerItem {
                id: "plan".into(),
                selected: vec![plan.into()],
                custom: None,
                edited: None,
            },
        ],
    }
}

/// A history through the trait that touches every table and lifecycle: accepted,
/// rejected (by the checks and before the store), claimed by a lease that expired,
/// answered, declined, cancelled, aborted, past its deadline, still claimed, pending; a
/// provider required; with `agents`, an agent asks and exits (agent instances are
/// random, so a history run twice differs there).
fn script<D: Driver>(s: &mut Queue<D>, clock: &TestClock, agents: bool) {
    // Refused: no provider is live.
    let mut r = two_questions("needs");
    r["requireProvider"] = json!(true);
    assert!(matches!(ask(s, r.clone()), Asked::Rejected { .. }));
    clock.advance(10);
    for id in ["a", "c", "x", "k", "p", "d"] {
        let mut r = two_questions(id);
        if id == "x" {
            r["timeout"] = json!("1m");
        }
        assert!(matches!(ask(s, r), Asked::Accepted(_)), "{id}");
        clock.advance(7);
    }
    // An inbox file refused before the store.
    s.ingest(vec![InboxInput::Reject {
        name: "bad.json".into(),
        id: Some("bad".into()),
        context: None,
        raw: "{not json".into(),
        error: dshq::protocol::UserQuestionError::new(dshq::protocol::Code::BadRequest, "not JSON"),
    }])
    .unwrap();
    clock.advance(10);
    let (alice, _) = s.register("default", "alice", 1_000).unwrap();
    let alice = LeaseRef::Token(alice.lease);
    clock.advance(10);
    s.claim(&alice, "a").unwrap();
    // alice's lease expires: "a" goes back to pending; bob takes over.
    clock.advance(5_000);
    let (bob, _) = s.register("default", "bob", 600_000).unwrap();
    let bob = LeaseRef::Token(bob.lease);
    // Now a provider is live: the same request is accepted.
    assert!(matches!(ask(s, r), Asked::Accepted(_)));
    clock.advance(1_000);
    s.answer(&bob, "a", &answer("SQLite", "Approve")).unwrap();
    clock.advance(3);
    s.answer(&bob, "d", &answer("Postgres", "Revise")).unwrap();
    clock.advance(3);
    s.cancel(&bob, "c", Some("not needed")).unwrap();
    clock.advance(3);
    s.claim(&bob, "k").unwrap();
    clock.advance(3);
    s.abort("needs", Some("changed my mind"), &Actor::Asker)
        .unwrap();
    // A request with a quorum: two votes, the second meets it.
    let mut q = two_questions("quorum");
    q["quorum"] = json!({"approvals": 2});
    assert!(matches!(ask(s, q), Asked::Accepted(_)));
    clock.advance(3);
    let bob_token = match &bob {
        LeaseRef::Token(t) => t.clone(),
        _ => unreachable!(),
    };
    let carol = LeaseRef::OnBehalf {
        token: bob_token,
        actor: Actor::Web("carol".into()),
    };
    for who in [&bob, &carol] {
        s.answer(who, "quorum", &answer("SQLite", "Approve"))
            .unwrap();
        clock.advance(3);
    }
    if agents {
        let e = s
            .agent_enter("agent-1", None, Some("ci/run-7"), None)
            .unwrap();
        clock.advance(5);
        let mut r = two_questions("by-agent");
        r["agent"] = json!({"id": "agent-1", "instance": e.instance});
        assert!(matches!(ask(s, r), Asked::Accepted(_)));
        clock.advance(5);
        s.agent_exit("agent-1", &e.instance).unwrap();
    }
    // The deadline of "x" passes (the next write sweeps it).
    clock.advance(120_000);
    s.heartbeat(match &bob {
        LeaseRef::Token(t) => t,
        _ => unreachable!(),
    })
    .unwrap();
}

/// A SQLite store in `dir` (keyed: the first write creates `dir/audit.key`) with the
/// scripted history.
fn sqlite_store(dir: &Path, clock: &TestClock, agents: bool) -> SqliteStore {
    let conn = dshq::store::sqlite::open(&dir.join("dshq.db")).unwrap();
    let mut s = SqliteStore::with_clock(conn, clock.as_fn());
    script(&mut s, clock, agents);
    s
}

fn export_of<D: Driver>(s: &mut Queue<D>) -> Vec<Record> {
    let mut out = Vec::new();
    s.export(&mut |kind, fields| {
        out.push((kind.to_string(), fields));
        Ok(())
    })
    .unwrap();
    out
}

fn pg_export(c: &mut Client) -> Vec<Record> {
    let mut tx = c
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .unwrap();
    let mut out = Vec::new();
    export::export(&mut tx, &mut |kind, fields| {
        out.push((kind.to_string(), fields));
        Ok(())
    })
    .unwrap();
    tx.commit().unwrap();
    out
}

fn load(c: &mut Client, origin: Option<&str>, records: &[Record]) -> dshq::Result<u64> {
    let mut tx = c.transaction()?;
    let mut it = records.iter().cloned().map(Ok);
    let n = export::import(&mut tx, origin, &mut it)?;
    tx.commit()?;
    Ok(n)
}

/// A PostgreSQL copy of the scripted SQLite history: (sqlite store, root dir, its
/// export, the copy's client).
fn copied(
    agents: bool,
) -> (
    SqliteStore,
    tempfile::TempDir,
    Vec<Record>,
    Client,
    TestClock,
) {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let mut s = sqlite_store(dir.path(), &clock, agents);
    let records = export_of(&mut s);
    let (_, mut c) = client(&fresh_url());
    let n = load(&mut c, Some("host-a"), &records).unwrap();
    assert_eq!(n as usize, records.len());
    (s, dir, records, c, clock)
}

#[test]
fn a_sqlite_copy_loads_verifies_under_the_same_key_and_exports_the_same_json() {
    let (mut s, dir, records, mut c, _) = copied(true);
    assert!(dir.path().join("audit.key").exists(), "the chain is keyed");
    for kind in ["request", "question", "lease", "agent", "event"] {
        assert!(records.iter().any(|(k, _)| k == kind), "a {kind} record");
    }
    let want = s.verify(&[]).unwrap();
    assert_eq!(want.broken, None);
    let got = audit::verify_snapshot(&mut c, Some(dir.path()), &[]).unwrap();
    assert_eq!(got, want, "the same counts, head and key");
    assert!(got.keyed_since.is_some());
    // The copy's export is the original's, field for field and in order.
    let again = pg_export(&mut c);
    assert_eq!(again.len(), records.len());
    for (a, b) in records.iter().zip(&again) {
        assert_eq!(a, b);
        assert_eq!(
            serde_json::to_string(&a.1).unwrap(),
            serde_json::to_string(&b.1).unwrap(),
            "the same text"
        );
    }
    // The flags print as SQLite's numbers.
    let flags: Vec<_> = again
        .iter()
        .filter_map(|(_, f)| f.get("requireProvider").or(f.get("multiSelect")))
        .collect();
    assert!(flags.iter().all(|v| v.is_i64()) && flags.contains(&&json!(1)));
    // The rows belong to the store that loaded them.
    let origins: Vec<Option<String>> = c
        .query("SELECT DISTINCT origin FROM requests", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(origins, [Some("host-a".to_string())]);
    // Without the key the keyed events do not verify, and the message says why.
    let other = tempfile::tempdir().unwrap();
    let v = audit::verify_snapshot(&mut c, Some(other.path()), &[]).unwrap();
    let broken = v.broken.unwrap();
    assert!(broken.contains("audit.key"), "{broken}");
}

#[test]
fn the_same_history_on_postgresql_exports_as_on_sqlite_and_verifies() {
    // One root for both: the same key file (the keyed chains must hash alike).
    let dir = tempfile::tempdir().unwrap();
    let sqlite_root = dir.path().join("sqlite");
    let pg_root = dir.path().join("pg");
    std::fs::create_dir(&sqlite_root).unwrap();
    std::fs::create_dir(&pg_root).unwrap();
    let clock = TestClock::new();
    let mut s = sqlite_store(&sqlite_root, &clock, false);
    std::fs::copy(sqlite_root.join("audit.key"), pg_root.join("audit.key")).unwrap();
    let clock = TestClock::new();
    let mut pg =
        dshq::store::postgres::PgStore::connect(&fresh_url(), Some(&pg_root), Some("host-a"))
            .unwrap()
            .with_clock(clock.as_fn());
    script(&mut pg, &clock, false);
    let want = export_of(&mut s);
    let got = export_of(&mut pg);
    assert_eq!(got.len(), want.len());
    for (a, b) in want.iter().zip(&got) {
        assert_eq!(
            serde_json::to_string(&a.1).unwrap(),
            serde_json::to_string(&b.1).unwrap()
        );
    }
    let v = pg.verify(&[]).unwrap();
    assert_eq!(v, s.verify(&[]).unwrap());
    assert_eq!(v.broken, None);
    // The head anchor each commit publishes verifies too.
    let anchor = dshq::store::read_anchor(&pg_root.join("audit.head")).unwrap();
    assert_eq!(Some((anchor.seq, anchor.hash.clone())), v.head);
    let v = pg.verify(&[(pg_root.join("audit.head"), anchor)]).unwrap();
    assert_eq!(v.broken, None);
    // History and stats through the trait, as SQLite's.
    assert_eq!(
        pg.history(&HistoryFilter::default()).unwrap(),
        s.history(&HistoryFilter::default()).unwrap()
    );
    assert_eq!(pg.stats(None).unwrap(), s.stats(None).unwrap());
}

#[test]
fn a_copy_loaded_through_the_store_verifies_and_its_chain_goes_on_under_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let mut s = sqlite_store(dir.path(), &clock, true);
    let records = export_of(&mut s);
    let want = s.verify(&[]).unwrap();
    drop(s);
    let mut pg =
        dshq::store::postgres::PgStore::connect(&fresh_url(), Some(dir.path()), Some("host-a"))
            .unwrap()
            .with_clock(clock.as_fn());
    let mut it = records.clone().into_iter().map(Ok);
    assert_eq!(pg.import(&mut it).unwrap() as usize, records.len());
    assert_eq!(pg.verify(&[]).unwrap(), want);
    // A second load is refused: the store is no longer empty.
    let mut it = records.clone().into_iter().map(Ok);
    assert!(matches!(pg.import(&mut it), Err(dshq::Error::Invalid(_))));
    // The copy is written on: the chain goes on from the copied head, keyed.
    clock.advance(1_000);
    assert!(matches!(
        ask(&mut pg, two_questions("after")),
        Asked::Accepted(_)
    ));
    let v = pg.verify(&[]).unwrap();
    assert_eq!(v.broken, None);
    assert_eq!(v.events, want.events + 1);
    assert_eq!(v.requests, want.requests + 1);
    let row = pg.get("after").unwrap().unwrap();
    assert!(row.seq > records.iter().filter(|(k, _)| k == "request").count() as i64);
}

#[test]
fn the_copy_takes_positions_after_the_loaded_ones_and_old_tokens_do_not_work() {
    let (_, _dir, records, mut c, _) = copied(false);
    let max = |kind: &str, field: &str| {
        records
            .iter()
            .filter(|(k, _)| k == kind)
            .filter_map(|(_, f)| f[field].as_i64())
            .max()
            .unwrap()
    };
    let next: i64 = c
        .query_one(
            "INSERT INTO leases (context, name, generation, secret_sha256, ttl_ms, created_ms, heartbeat_ms, expires_ms)
             VALUES ('other', 'carol', 1, '\\x00', 1, 1, 1, 1) RETURNING lease_id",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(next, max("lease", "leaseId") + 1);
    let seq: i64 = c
        .query_one(
            "SELECT nextval(pg_get_serial_sequence('requests', 'seq'))",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(seq, max("request", "seq") + 1);
    // Every lease has a secret hash of its own, none the original's.
    let secrets: Vec<Vec<u8>> = c
        .query(
            "SELECT secret_sha256 FROM leases WHERE context = 'default'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(secrets.len(), 2);
    assert!(secrets.iter().all(|s| s.len() == 32) && secrets[0] != secrets[1]);
}

#[test]
fn import_refuses_a_store_that_is_not_empty_and_records_it_does_not_know() {
    let (_, _dir, records, mut c, _) = copied(false);
    let e = load(&mut c, None, &records).unwrap_err();
    assert!(
        matches!(&e, dshq::Error::Invalid(m) if m.contains("not empty")),
        "{e}"
    );
    let (_, mut c) = client(&fresh_url());
    let mut bad = records[0].clone();
    bad.1.insert("extra".into(), json!(1));
    let e = load(&mut c, None, &[bad]).unwrap_err();
    assert!(
        matches!(&e, dshq::Error::Invalid(m) if m.contains("extra")),
        "{e}"
    );
    let mut bad = records[0].clone();
    bad.1.insert("requireProvider".into(), json!(2));
    let e = load(&mut c, None, &[bad]).unwrap_err();
    assert!(
        matches!(&e, dshq::Error::Invalid(m) if m.contains("requireProvider")),
        "{e}"
    );
    let mut bad = records[0].clone();
    bad.1.shift_remove("body");
    let e = load(&mut c, None, &[bad]).unwrap_err();
    assert!(
        matches!(&e, dshq::Error::Invalid(m) if m.contains("body")),
        "{e}"
    );
    let mut bad = records[0].clone();
    bad.0 = "event".into();
    let e = load(&mut c, None, &[bad]).unwrap_err();
    assert!(
        matches!(&e, dshq::Error::Invalid(m) if m.contains("says it is")),
        "{e}"
    );
    let e = load(&mut c, None, &[("widget".into(), Default::default())]).unwrap_err();
    assert!(
        matches!(&e, dshq::Error::Invalid(m) if m.contains("widget")),
        "{e}"
    );
    // Nothing of the refused loads stayed.
    assert_eq!(pg_export(&mut c), Vec::<Record>::new());
}

#[test]
fn history_and_stats_read_as_sqlites() {
    let (mut s, _dir, _, mut c, clock) = copied(true);
    let now = clock.now();
    let filters = [
        HistoryFilter::default(),
        HistoryFilter {
            status: Some(Status::Answered),
            ..Default::default()
        },
        HistoryFilter {
            contexts: vec!["default".into(), "nowhere".into()],
            limit: Some(3),
            ..Default::default()
        },
        HistoryFilter {
            provider: Some("bob".into()),
            ..Default::default()
        },
        HistoryFilter {
            code: Some("BAD_REQUEST".into()),
            ..Default::default()
        },
        HistoryFilter {
            intent: Some("plan-review".into()),
            decision: Some(dshq::protocol::Decision::Declined),
            ..Default::default()
        },
        HistoryFilter {
            agent: Some("agent-1".into()),
            ..Default::default()
        },
        HistoryFilter {
            since: Some(clock.now() - 130_000),
            until: Some(clock.now() - 120_000),
            ..Default::default()
        },
        // ASCII case folds, as SQLite's LIKE; `%` and `_` are no wildcards.
        HistoryFilter {
            grep: Some("the plan".into()),
            ..Default::default()
        },
        HistoryFilter {
            grep: Some("which_data".into()),
            ..Default::default()
        },
        HistoryFilter {
            grep: Some("%".into()),
            ..Default::default()
        },
        // SQLite reads a negative limit as none.
        HistoryFilter {
            limit: Some(-1),
            ..Default::default()
        },
    ];
    for f in &filters {
        let want = s.history(f).unwrap();
        let got = history::history(&mut PgRead(&mut c), f, now).unwrap();
        assert_eq!(got, want, "{f:?}");
    }
    assert_eq!(
        history::history(&mut PgRead(&mut c), &filters[8], now)
            .unwrap()
            .len(),
        s.list(&Default::default()).unwrap().len() - 2,
        "every accepted request (not the two rejections) has the plan question"
    );
    for since in [None, Some(clock.now() - 126_000), Some(clock.now() + 1)] {
        let want = s.stats(since).unwrap();
        let got = history::stats(&mut PgRead(&mut c), since, now).unwrap();
        assert_eq!(got, want, "{since:?}");
    }
    let st = history::stats(&mut PgRead(&mut c), None, now).unwrap();
    // "a" and "quorum" approved, "d" declined.
    assert_eq!((st.approved, st.declined), (2, 1));
    assert!(st.open > 0 && st.oldest_open.is_some());
}

#[test]
fn the_log_refuses_updates_and_deletes() {
    let (_, _dir, _, mut c, _) = copied(false);
    for sql in [
        "UPDATE events SET data = '{}' WHERE seq = 2",
        "DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)",
        "TRUNCATE events",
        "DELETE FROM requests WHERE id = 'p'",
        "UPDATE requests SET body = '{}' WHERE id = 'p'",
        "UPDATE requests SET provider = 'mallory' WHERE id = 'a'",
        "UPDATE questions SET question = 'forged' WHERE idx = 0",
        "DELETE FROM questions WHERE idx = 1",
    ] {
        let e = c.batch_execute(sql).unwrap_err();
        let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
        assert!(
            db.message().contains("append-only") || db.message().contains("are a record"),
            "{sql}: {}",
            db.message()
        );
    }
}

#[test]
fn verify_finds_each_edit_made_with_the_triggers_dropped() {
    let (_, dir, _, mut c, _) = copied(false);
    let root = Some(dir.path());
    let drop_triggers = "DROP TRIGGER events_no_update ON events; DROP TRIGGER events_no_delete ON events;
        DROP TRIGGER requests_record_fixed ON requests; DROP TRIGGER requests_no_delete ON requests;
        DROP TRIGGER questions_record_fixed ON questions; DROP TRIGGER questions_no_delete ON questions;";
    let seq_of =
        |id: &str| format!("(SELECT seq FROM requests WHERE id = '{id}' AND status <> 'rejected')");
    let cases: Vec<(String, &str)> = vec![
        // The log itself.
        ("UPDATE events SET data = '{\"forged\":true}' WHERE seq = 3".into(), "event 3 does not verify: its content"),
        ("DELETE FROM events WHERE seq = 4".into(), "event 4 is missing"),
        ("UPDATE events SET prev_hash = hash WHERE seq = 5".into(), "event 5 does not verify: its prev_hash"),
        // The rows, against the log (SQLite's cases).
        ("UPDATE requests SET claimed_ms = claimed_ms + 1 WHERE id = 'a'".into(), "request a (row"),
        ("UPDATE requests SET claimed_lease = 1 WHERE id = 'k'".into(), "claiming lease"),
        ("UPDATE requests SET status = 'pending', claimed_lease = NULL, claimed_ms = NULL WHERE id = 'k'".into(), "status"),
        ("UPDATE requests SET error_message = 'forged' WHERE id = 'c'".into(), "error message"),
        ("UPDATE requests SET deadline_ms = NULL WHERE id = 'x'".into(), "deadline"),
        ("UPDATE requests SET context = 'ops' WHERE id = 'p'".into(), "context"),
        ("UPDATE requests SET error_code = 'NO_PROVIDER' WHERE id = 'bad'".into(), "error code"),
        ("UPDATE requests SET body = '{}' WHERE id = 'bad'".into(), "digest"),
        ("UPDATE requests SET require_provider = TRUE WHERE id = 'p'".into(), "requireProvider"),
        ("UPDATE requests SET provider = 'mallory' WHERE id = 'a'".into(), "provider"),
        ("UPDATE questions SET custom = 'forged' WHERE qid = 'plan' AND selected IS NOT NULL AND request_seq = ".to_string() + &seq_of("a"), "custom text"),
        (format!("UPDATE questions SET selected = '[]' WHERE request_seq = {} AND idx = 0", seq_of("p")), "carries an answer"),
        (format!("UPDATE questions SET options = '[{{\"label\":\"Approve\"}}]' WHERE qid = 'plan' AND request_seq = {}", seq_of("x")), "options"),
        (format!("DELETE FROM questions WHERE idx = 1 AND request_seq = {}", seq_of("k")), "question rows"),
        (format!("DELETE FROM requests WHERE seq = {}", seq_of("p")), "the event records row"),
    ];
    for (sql, what) in &cases {
        let mut tx = c.transaction().unwrap();
        tx.batch_execute(drop_triggers).unwrap();
        tx.batch_execute(sql).unwrap();
        let v = audit::verify(&mut tx, root, &[]).unwrap();
        let broken = v.broken.unwrap_or_else(|| panic!("{sql} not found"));
        assert!(broken.contains(what), "{sql}: {what:?} in {broken}");
        tx.rollback().unwrap();
    }
    // Rolled back: the copy verifies again, and against its head.
    let v = audit::verify_snapshot(&mut c, root, &[]).unwrap();
    assert_eq!(v.broken, None);
    let (seq, hash) = v.head.unwrap();
    let anchor = dshq::store::Anchor { seq, hash };
    let here = |a: &dshq::store::Anchor| vec![(dir.path().join("audit.head"), a.clone())];
    assert_eq!(
        audit::verify_snapshot(&mut c, root, &here(&anchor))
            .unwrap()
            .broken,
        None
    );
    // An anchor ahead of the log: its newest events were removed.
    let ahead = dshq::store::Anchor {
        seq: seq + 1,
        ..anchor.clone()
    };
    let broken = audit::verify_snapshot(&mut c, root, &here(&ahead))
        .unwrap()
        .broken
        .unwrap();
    assert!(broken.contains("newest events were removed"), "{broken}");
    let other = dshq::store::Anchor {
        seq,
        hash: "0".repeat(64),
    };
    let broken = audit::verify_snapshot(&mut c, root, &here(&other))
        .unwrap()
        .broken
        .unwrap();
    assert!(broken.contains("rewritten"), "{broken}");
}

#[test]
fn web_tokens_are_created_listed_revoked_and_found_by_lookup() {
    let (_, mut c) = client(&fresh_url());
    // A write as the store makes one (the lock and the clock aside).
    fn write(c: &mut Client) -> Tx<'_> {
        Tx::begin(c.transaction().unwrap(), None, None)
    }
    fn commit(t: Tx<'_>) {
        t.tx.commit().unwrap();
    }
    let mut tx = write(&mut c);
    let t = tokens::create(&mut tx, 5, "zed", Role::Auditor, None, "lookup-z", b"hz").unwrap();
    assert_eq!(t.revoked_ms, None);
    tokens::create(
        &mut tx,
        6,
        "Amy",
        Role::Reviewer,
        Some("ops"),
        "lookup-a",
        b"ha",
    )
    .unwrap();
    tokens::create(&mut tx, 7, "bob", Role::Asker, None, "lookup-b", b"hb").unwrap();
    let e = tokens::create(&mut tx, 8, "bob", Role::Asker, None, "lookup-c", b"hc").unwrap_err();
    assert!(matches!(e, dshq::Error::Invalid(_)), "{e}");
    let e = tokens::create(&mut tx, 8, " ", Role::Asker, None, "lookup-d", b"hd").unwrap_err();
    assert!(matches!(e, dshq::Error::Invalid(_)), "{e}");
    commit(tx);
    // Byte order, as SQLite's: upper case first.
    let names: Vec<String> = tokens::list(&mut PgRead(&mut c))
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["Amy", "bob", "zed"]);
    let mut tx = write(&mut c);
    assert!(tokens::revoke(&mut tx, 9, "bob").unwrap());
    assert!(!tokens::revoke(&mut tx, 10, "bob").unwrap());
    let e = tokens::revoke(&mut tx, 10, "nobody").unwrap_err();
    assert!(matches!(e, dshq::Error::TokenNotFound(_)), "{e}");
    commit(tx);
    let cred = tokens::by_lookup(&mut PgRead(&mut c), "lookup-b")
        .unwrap()
        .unwrap();
    assert_eq!(cred.hash, b"hb");
    assert_eq!(cred.token.revoked_ms, Some(9));
    assert_eq!(cred.token.role, Role::Asker);
    let amy = tokens::by_lookup(&mut PgRead(&mut c), "lookup-a")
        .unwrap()
        .unwrap();
    assert_eq!(amy.token.context.as_deref(), Some("ops"));
    assert_eq!(
        tokens::by_lookup(&mut PgRead(&mut c), "nope").unwrap(),
        None
    );
}

#[test]
fn a_commit_elsewhere_wakes_the_listener_and_a_quiet_wait_times_out() {
    let url = fresh_url();
    let (config, mut other) = client(&url);
    let mut l = Listener::connect(&config, vec![FEED_CHANNEL.to_string()]).unwrap();
    assert!(!l.wait(Duration::from_millis(100)).unwrap(), "nothing yet");
    // A rolled-back transaction notifies nobody.
    let mut tx = other.transaction().unwrap();
    tx.execute("SELECT pg_notify('dshq_feed', '')", &[])
        .unwrap();
    tx.rollback().unwrap();
    assert!(!l.wait(Duration::from_millis(200)).unwrap());
    // A commit does, even when the listener is already waiting.
    let waiter = std::thread::spawn(move || {
        let woke = l.wait(Duration::from_secs(10)).unwrap();
        (l, woke)
    });
    std::thread::sleep(Duration::from_millis(200));
    for _ in 0..3 {
        let mut tx = other.transaction().unwrap();
        tx.execute("SELECT pg_notify('dshq_feed', '')", &[])
            .unwrap();
        tx.commit().unwrap();
    }
    let (mut l, woke) = waiter.join().unwrap();
    assert!(woke);
    // Three commits wake at most three times (fewer when they arrive together), then
    // the waits are quiet again.
    let mut more = 0;
    while l.wait(Duration::from_millis(200)).unwrap() {
        more += 1;
        assert!(more < 3, "three commits woke more than three times");
    }
    // The connection is killed: the wait fails, the next one reconnects and wakes.
    other
        .execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
            &[],
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut failed = false;
    for _ in 0..3 {
        match l.wait(Duration::from_millis(200)) {
            Err(e) => {
                assert!(!e.to_string().contains("password"), "{e}");
                failed = true;
                break;
            }
            Ok(false) => {}
            Ok(true) => panic!("no commit was made"),
        }
    }
    assert!(failed, "a lost connection is an error");
    assert!(
        l.wait(Duration::from_millis(100)).unwrap(),
        "reconnected: look again"
    );
    let mut tx = other.transaction().unwrap();
    tx.execute("SELECT pg_notify('dshq_feed', '')", &[])
        .unwrap();
    tx.commit().unwrap();
    assert!(l.wait(Duration::from_secs(10)).unwrap(), "listening again");
}

#[test]
fn a_commit_wakes_the_hosts_it_concerns_and_no_other() {
    let url = fresh_url();
    let mut here = dshq::store::postgres::PgStore::connect(&url, None, Some("host-a")).unwrap();
    let mut there = dshq::store::postgres::PgStore::connect(&url, None, Some("host-b")).unwrap();
    // A file-only daemon hears only what makes its own outcomes due; a host that serves
    // reviewers hears every commit that appended an event.
    let mut files_only = here
        .wakeups(false)
        .unwrap()
        .expect("PostgreSQL hears other hosts");
    let mut serving = here
        .wakeups(true)
        .unwrap()
        .expect("PostgreSQL hears other hosts");
    assert!(!files_only.wait(Duration::from_millis(100)).unwrap());
    // A read appends nothing and notifies nobody.
    there.list(&Default::default()).unwrap();
    assert!(!serving.wait(Duration::from_millis(100)).unwrap());
    // Another root asks: the serving host hears it, the file-only daemon does not.
    assert!(matches!(
        ask(&mut there, two_questions("theirs")),
        Asked::Accepted(_)
    ));
    assert!(serving.wait(Duration::from_secs(10)).unwrap());
    // This root asks, another host answers: this root's daemon is woken (its outcome).
    assert!(matches!(
        ask(&mut here, two_questions("ours")),
        Asked::Accepted(_)
    ));
    while serving.wait(Duration::from_millis(100)).unwrap() {}
    assert!(
        !files_only.wait(Duration::from_millis(300)).unwrap(),
        "its own ask's commit is not news to it, nor the other root's"
    );
    there.abort("theirs", None, &Actor::Asker).unwrap();
    assert!(
        !files_only.wait(Duration::from_millis(300)).unwrap(),
        "another root's outcome does not wake it"
    );
    there.abort("ours", None, &Actor::Asker).unwrap();
    assert!(
        files_only.wait(Duration::from_secs(10)).unwrap(),
        "its own outcome, made due on another host, wakes it"
    );
}
