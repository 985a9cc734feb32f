//! Tests of what only the SQLite driver has: its migrations and pragmas, the file's
//! locking, its schema's indexes and triggers, what its internal functions reach that the
//! [`dshq::store::Store`] trait does not (the stored secret's hash, a forged lease handle
//! at the row guard), and a property test that a valid answer round-trips exactly. The
//! queue's rules themselves are the conformance suite's (`lifecycle.rs`, `rules.rs`).

use rusqlite::Connection;
use serde_json::{json, Value};

use dshq::clock::Millis;
use dshq::error::{Error, Result};
use dshq::protocol::answer::{check_answer, request_decision};
use dshq::protocol::{Answer, AnswerItem, Code, Decision, Outcome, Request};
use dshq::store::sqlite::events;

/// The lease rules ([`dshq::store::queue::leases`]) on this driver's statements, called as
/// this file's tests call them (a transaction, or a connection for a read).
mod leases {
    use dshq::clock::Millis;
    use dshq::error::Result;
    use dshq::store::queue::leases as q;
    use dshq::store::sqlite::tx::{Sql, SqlRead};
    use dshq::store::types::{HostMark, Lease, Registered};
    use rusqlite::Connection;

    pub fn register(
        tx: &mut Sql<'_, '_>,
        context: &str,
        name: &str,
        ttl_ms: Millis,
        host: Option<&HostMark>,
        now: Millis,
    ) -> Result<Registered> {
        q::register(tx, now, context, name, ttl_ms, host)
    }
    pub fn authenticate(conn: &Connection, token: &str, now: Millis) -> Result<Lease> {
        q::authenticate(&mut SqlRead(conn), token, now)
    }
}
use dshq::store::sqlite::requests::{self, Accepted, RequestRow, Status};
use dshq::store::sqlite::{migrate, schema_version, write, MIGRATIONS};
use dshq::store::types::{Lease, Registered};

// ---------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------

/// 2026-05-28T... : an arbitrary fixed start time in milliseconds.
const T0: Millis = 1_780_000_000_000;
/// The lease ttl used throughout.
const TTL: Millis = 60_000;

fn db() -> Connection {
    dshq::store::sqlite::open_in_memory().unwrap()
}

fn code<T: std::fmt::Debug>(r: Result<T>) -> Code {
    match r {
        Ok(v) => panic!("expected an error, got Ok({v:?})"),
        Err(e) => e.code(),
    }
}

fn request(v: Value) -> Request {
    serde_json::from_value(v).unwrap()
}

/// A one-question request with id `id` in `context`.
fn simple(id: &str, context: &str) -> Value {
    json!({
        "id": id,
        "context": context,
        "questions": [{
            "id": "db",
            "question": "Which database?",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}]
        }]
    })
}

fn accept(conn: &mut Connection, v: Value, now: Millis) -> Result<Accepted> {
    write(conn, now, |tx| {
        dshq::store::queue::requests::accept(tx, now, request(v), None, "cli", &Default::default())
    })
}

fn register(conn: &mut Connection, context: &str, name: &str, now: Millis) -> Result<Registered> {
    write(conn, now, |tx| {
        leases::register(tx, context, name, TTL, None, now)
    })
}

/// Run `f` with the lease `token` authenticated inside the same write transaction, as every
/// command and the daemon do.
fn with_lease<T>(
    conn: &mut Connection,
    token: &str,
    now: Millis,
    f: impl FnOnce(&mut dshq::store::sqlite::tx::Sql<'_, '_>, &Lease) -> Result<T>,
) -> Result<T> {
    write(conn, now, |tx| {
        let lease = leases::authenticate(tx, token, now)?;
        f(tx, &lease)
    })
}

/// The outcome of an answer to a request without a quorum.
fn finished(a: dshq::store::Answered) -> Outcome {
    match a {
        dshq::store::Answered::Finished(o) => o,
        dshq::store::Answered::Voted(v) => panic!("a vote without a quorum: {v:?}"),
    }
}

fn claim(conn: &mut Connection, token: &str, id: &str, now: Millis) -> Result<RequestRow> {
    with_lease(conn, token, now, |tx, l| {
        dshq::store::queue::answers::claim(tx, now, l, id)
    })
}

fn answer_with(
    conn: &mut Connection,
    token: &str,
    id: &str,
    a: &Answer,
    now: Millis,
) -> Result<Outcome> {
    with_lease(conn, token, now, |tx, l| {
        dshq::store::queue::answers::answer(tx, now, l, id, a, &Default::default()).map(finished)
    })
}

fn item(id: &str, selected: &[&str], custom: Option<&str>) -> AnswerItem {
    AnswerItem {
        id: id.into(),
        selected: selected.iter().map(|s| (*s).into()).collect(),
        custom: custom.map(Into::into),
        edited: None,
    }
}

fn ans(items: Vec<AnswerItem>) -> Answer {
    Answer { answers: items }
}

fn pick(label: &str) -> Answer {
    ans(vec![item("db", &[label], None)])
}

fn get(conn: &Connection, id: &str) -> RequestRow {
    requests::get(conn, id).unwrap().expect("request exists")
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn lease_id(token: &str) -> i64 {
    token.split_once('.').unwrap().0.parse().unwrap()
}

fn answered_outcome(o: &Outcome) -> &dshq::protocol::AnsweredOutcome {
    match o {
        Outcome::Answered(a) => a,
        Outcome::Error(e) => panic!("expected an answered outcome, got {e:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// migrations and pragmas
// ---------------------------------------------------------------------------------------

#[test]
fn migration_version_is_recorded() {
    let conn = db();
    assert_eq!(schema_version(&conn).unwrap(), MIGRATIONS.last().unwrap().0);
    let rows: Vec<(i64, String)> = conn
        .prepare("SELECT version, name FROM schema_migrations ORDER BY version")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(
        rows,
        vec![
            (1, "0001_init".to_string()),
            (2, "0002_audit_indexes".to_string()),
            (3, "0003_record_immutable".to_string()),
            (4, "0004_rejections_by_source".to_string()),
            (5, "0005_web_tokens".to_string()),
            (6, "0006_prune".to_string()),
            (7, "0007_fewer_index_writes".to_string()),
            (8, "0008_record_triggers_by_column".to_string()),
            (9, "0009_host_leases".to_string()),
            (10, "0010_quorum".to_string()),
            (11, "0011_ladder".to_string()),
            (12, "0012_edits".to_string()),
            (13, "0013_channels".to_string()),
            (14, "0014_mail_links".to_string()),
            (15, "0015_slack".to_string()),
            (16, "0016_persons".to_string()),
            (17, "0017_push".to_string()),
            (18, "0018_delegation".to_string()),
            (19, "0019_telegram".to_string()),
            (20, "0020_sign_in_groups".to_string()),
            (21, "0021_push_reached".to_string())
        ]
    );
    assert_eq!(MIGRATIONS.last().unwrap().0, 21);
}

#[test]
fn one_id_index_keeps_one_accepted_request_per_id_and_any_number_of_rejections() {
    let conn = db();
    let insert = |status: &str| {
        conn.execute(
            "INSERT INTO requests (id, context, status, body, source, created_ms, finished_ms)
             VALUES ('dup', 'default', ?1, '{}', 'cli', 1, CASE WHEN ?1 = 'pending' THEN NULL ELSE 1 END)",
            [status],
        )
    };
    insert("rejected").unwrap();
    insert("rejected").unwrap();
    insert("pending").unwrap();
    let e = insert("pending").unwrap_err();
    assert!(e.to_string().contains("UNIQUE"), "{e}");
    insert("rejected").unwrap();
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM requests WHERE id = 'dup'"),
        4
    );
}

#[test]
fn a_version_1_database_upgrades_in_place() {
    // Build the database as dshq 0001 left it, with data in it.
    let mut conn = rusqlite::Connection::open_in_memory().unwrap();
    conn.execute_batch(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_ms INTEGER NOT NULL)",
    )
    .unwrap();
    conn.execute_batch(MIGRATIONS[0].2).unwrap();
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (1, '0001_init', 0)",
        [],
    )
    .unwrap();
    assert_eq!(schema_version(&conn).unwrap(), 1);
    // A request as dshq 0001 wrote it (today's code asks for today's indexes, so the row
    // is written by hand), and a rejection of the same id.
    conn.execute_batch(
        "INSERT INTO requests (id, context, status, body, source, created_ms)
             VALUES ('old', 'default', 'pending', '{}', 'cli', 1);
         INSERT INTO requests (id, context, status, body, source, created_ms, finished_ms)
             VALUES ('old', 'default', 'rejected', '{}', 'cli', 1, 1);",
    )
    .unwrap();
    // Upgrading applies every later migration, records them, and keeps the data.
    assert_eq!(migrate(&conn).unwrap(), MIGRATIONS.last().unwrap().0);
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM schema_migrations"),
        MIGRATIONS.len() as i64
    );
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'questions_decision'"
        ),
        1
    );
    assert_eq!(get(&conn, "old").status, Status::Pending);
    // Still one accepted request per id after 0006 merged the id indexes.
    accept(&mut conn, simple("new", "default"), T0).unwrap();
    assert_eq!(get(&conn, "new").status, Status::Pending);
}

#[test]
fn migrating_twice_is_a_no_op() {
    let mut conn = db();
    accept(&mut conn, simple("r1", "default"), T0).unwrap();
    assert_eq!(migrate(&conn).unwrap(), MIGRATIONS.last().unwrap().0);
    assert_eq!(migrate(&conn).unwrap(), MIGRATIONS.last().unwrap().0);
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM schema_migrations"),
        MIGRATIONS.len() as i64
    );
    // The data is still there: nothing was re-created.
    assert_eq!(get(&conn, "r1").status, Status::Pending);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM events"), 1);
}

#[test]
fn newer_schema_is_refused() {
    let conn = db();
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (50, '0050_future', 0)",
        [],
    )
    .unwrap();
    let e = migrate(&conn).unwrap_err();
    assert!(
        matches!(
            e,
            Error::SchemaTooNew {
                found: 50,
                known,
            } if known == MIGRATIONS.last().unwrap().0
        ),
        "{e:?}"
    );
    assert_eq!(e.code(), Code::Store);
    assert!(e.to_string().contains("upgrade dshq"), "{e}");
}

#[test]
fn a_write_waits_for_another_connections_lock_and_then_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dshq.db");
    let mut conn = dshq::store::sqlite::open(&path).unwrap();
    // Another process's transaction holds the write lock until told to commit.
    let holder = dshq::store::sqlite::open(&path).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let releaser = std::thread::spawn(move || {
        rx.recv().unwrap();
        holder.execute_batch("COMMIT").unwrap();
    });
    // The write starts while the lock is held (its busy handler is retrying) and commits
    // once the other transaction ends; a handler that gave up would make this a STORE error.
    let writer = std::thread::spawn(move || {
        accept(&mut conn, simple("waited", "default"), T0).map(|_| conn)
    });
    let busy = std::time::Instant::now();
    while busy.elapsed() < std::time::Duration::from_millis(30) && !writer.is_finished() {
        std::thread::yield_now();
    }
    assert!(!writer.is_finished(), "the write did not wait for the lock");
    tx.send(()).unwrap();
    releaser.join().unwrap();
    let conn = writer
        .join()
        .unwrap()
        .expect("the write commits after the wait");
    assert_eq!(get(&conn, "waited").status, Status::Pending);
    // The pauses start well under SQLite's own first 1 ms and never shrink.
    assert!(dshq::store::sqlite::lock_retry_pause(0) < std::time::Duration::from_millis(1));
    for t in 1..5000 {
        assert!(
            dshq::store::sqlite::lock_retry_pause(t)
                >= dshq::store::sqlite::lock_retry_pause(t - 1)
        );
    }
}

#[test]
fn file_database_pragmas_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dshq.db");
    {
        let mut conn = dshq::store::sqlite::open(&path).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode.to_ascii_lowercase(), "wal");
        let sync: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 2, "synchronous=FULL");
        let fk: i64 = conn
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
        accept(&mut conn, simple("persisted", "default"), T0).unwrap();
    }
    // Reopening migrates nothing and keeps the data.
    let conn = dshq::store::sqlite::open(&path).unwrap();
    assert_eq!(schema_version(&conn).unwrap(), MIGRATIONS.last().unwrap().0);
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM schema_migrations"),
        MIGRATIONS.len() as i64
    );
    assert_eq!(get(&conn, "persisted").status, Status::Pending);
    // A file from a newer dshq is refused at open.
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (70, 'future', 0)",
        [],
    )
    .unwrap();
    drop(conn);
    let e = dshq::store::sqlite::open(&path).unwrap_err();
    assert!(
        matches!(
            e,
            Error::SchemaTooNew {
                found: 70,
                known,
            } if known == MIGRATIONS.last().unwrap().0
        ),
        "{e:?}"
    );
}

#[test]
fn foreign_keys_are_enforced() {
    let conn = db();
    let e = conn
        .execute(
            "INSERT INTO questions (request_seq, idx, qid, question, multi_select, options)
             VALUES (999, 0, 'q', '?', 0, '[]')",
            [],
        )
        .unwrap_err();
    assert!(e.to_string().contains("FOREIGN KEY"), "{e}");
}

// ---------------------------------------------------------------------------------------
// leases, as only SQLite's internals reach them
// ---------------------------------------------------------------------------------------

/// The lease secret is stored only as its SHA-256 (the token's format and use are the
/// conformance suite's `register_returns_an_unguessable_token`).
#[test]
fn the_lease_secret_is_stored_only_as_its_hash() {
    let mut conn = db();
    let reg = register(&mut conn, "default", "alice", T0).unwrap();
    let (_, secret) = reg.lease.split_once('.').unwrap();
    let stored: Vec<u8> = conn
        .query_row("SELECT secret_sha256 FROM leases", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored.len(), 32);
    assert!(!String::from_utf8_lossy(&stored).contains(secret));
    let hex: String = stored.iter().map(|b| format!("{b:02x}")).collect();
    assert_ne!(hex, secret);
    assert!(leases::authenticate(&conn, &reg.lease, T0).is_ok());
}

#[test]
fn a_request_claimed_by_one_lease_cannot_be_taken_by_another() {
    let mut conn = db();
    accept(&mut conn, simple("r1", "default"), T0).unwrap();
    let a = register(&mut conn, "default", "alice", T0).unwrap();
    claim(&mut conn, &a.lease, "r1", T0 + 1).unwrap();
    // No second live lease can exist in the context while the claimer lives...
    assert_eq!(
        code(register(&mut conn, "default", "mallory", T0 + 2)),
        Code::DuplicateProvider
    );
    // ...and a lease handle that is not the claimer is refused at the row level.
    let other = Lease {
        lease_id: lease_id(&a.lease) + 100,
        context: "default".into(),
        name: "mallory".into(),
        generation: 9,
        ttl_ms: TTL,
        expires_ms: T0 + TTL,
        on_behalf: None,
    };
    let before = get(&conn, "r1");
    let t = T0 + 3;
    for r in [
        write(&mut conn, t, |tx| {
            dshq::store::queue::answers::claim(tx, t, &other, "r1")
        })
        .map(|_| ()),
        write(&mut conn, t, |tx| {
            dshq::store::queue::answers::answer(
                tx,
                t,
                &other,
                "r1",
                &pick("SQLite"),
                &Default::default(),
            )
            .map(finished)
        })
        .map(|_| ()),
        write(&mut conn, t, |tx| {
            dshq::store::queue::answers::cancel(tx, t, &other, "r1", None)
        })
        .map(|_| ()),
    ] {
        assert_eq!(code(r), Code::ClaimedElsewhere);
    }
    assert_eq!(get(&conn, "r1"), before);
}

// ---------------------------------------------------------------------------------------
// events
// ---------------------------------------------------------------------------------------

#[test]
fn events_are_append_only() {
    let mut conn = db();
    accept(&mut conn, simple("r1", "default"), T0).unwrap();
    register(&mut conn, "default", "alice", T0).unwrap();
    let before = events::all(&conn).unwrap();
    let e = conn
        .execute("UPDATE events SET kind = 'forged' WHERE seq = 1", [])
        .unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    let e = conn
        .execute("DELETE FROM events WHERE seq = 2", [])
        .unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    let e = conn.execute("DELETE FROM events", []).unwrap_err();
    assert!(e.to_string().contains("append-only"), "{e}");
    assert_eq!(events::all(&conn).unwrap(), before);
    assert_eq!(events::verify(&conn).unwrap(), (2, None));
}

#[test]
fn verify_finds_an_edit_made_with_the_triggers_dropped() {
    let mut conn = db();
    accept(&mut conn, simple("r1", "default"), T0).unwrap();
    accept(&mut conn, simple("r2", "default"), T0).unwrap();
    accept(&mut conn, simple("r3", "default"), T0).unwrap();
    conn.execute_batch(
        "DROP TRIGGER events_no_update; DROP TRIGGER events_no_delete;
         UPDATE events SET actor = 'someone-else' WHERE seq = 2;",
    )
    .unwrap();
    let (_, brk) = events::verify(&conn).unwrap();
    let brk = brk.expect("the edit is found");
    assert_eq!(brk.seq, 2);
    assert!(brk.problem.contains("hash"), "{}", brk.problem);

    let conn2 = db();
    drop(conn);
    let mut conn = conn2;
    accept(&mut conn, simple("r1", "default"), T0).unwrap();
    accept(&mut conn, simple("r2", "default"), T0).unwrap();
    accept(&mut conn, simple("r3", "default"), T0).unwrap();
    conn.execute_batch("DROP TRIGGER events_no_delete; DELETE FROM events WHERE seq = 2;")
        .unwrap();
    let (_, brk) = events::verify(&conn).unwrap();
    assert_eq!(brk.expect("the removal is found").seq, 2);
}

// ---------------------------------------------------------------------------------------
// property: a valid answer round-trips exactly through the store
// ---------------------------------------------------------------------------------------

mod roundtrip {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    /// Labels from an alphabet with unicode, quotes, backslashes and whitespace.
    fn label() -> impl Strategy<Value = String> {
        let alphabet = vec![
            'a', 'B', 'z', '0', ' ', '"', '\'', '\\', '/', 'é', 'ß', '漢', '🦀', '\n', '\t',
        ];
        prop::collection::vec(prop::sample::select(alphabet), 1..5)
            .prop_map(|cs| cs.into_iter().collect())
    }

    /// Free text for `custom` and `detail`: may be empty or blank on purpose.
    fn text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec!['x', ' ', 'é', '"', '\n', '💬']),
            0..6,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    #[derive(Debug, Clone)]
    struct QSpec {
        multi: bool,
        labels: Vec<String>,
        /// Index of the approve option (modulo the count), and the detail.
        intent: Option<(usize, String)>,
    }

    fn qspec() -> impl Strategy<Value = QSpec> {
        (
            any::<bool>(),
            prop::collection::btree_set(label(), 0..=5),
            prop::option::of((0usize..5, text())),
        )
            .prop_map(|(multi, labels, intent): (bool, BTreeSet<String>, _)| {
                let labels: Vec<String> = labels.into_iter().collect();
                let intent = if labels.is_empty() { None } else { intent };
                QSpec {
                    multi,
                    labels,
                    intent,
                }
            })
    }

    /// How to answer one question: which options (by index, possibly repeated), the
    /// custom text, and whether to select a label that is not an option.
    #[derive(Debug, Clone)]
    struct ASpec {
        picks: Vec<usize>,
        custom: Option<String>,
        bogus: bool,
    }

    fn aspec() -> impl Strategy<Value = ASpec> {
        (
            prop::collection::vec(0usize..5, 0..3),
            prop::option::weighted(0.4, text()),
            prop::bool::weighted(0.05),
        )
            .prop_map(|(picks, custom, bogus)| ASpec {
                picks,
                custom,
                bogus,
            })
    }

    fn build_request(specs: &[QSpec]) -> Request {
        let questions: Vec<Value> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut q = json!({"id": format!("q{i}"), "question": format!("Question {i}?")});
                if s.multi {
                    q["multiSelect"] = json!(true);
                }
                if !s.labels.is_empty() || i % 2 == 0 {
                    q["options"] = json!(s
                        .labels
                        .iter()
                        .map(|l| json!({"label": l}))
                        .collect::<Vec<_>>());
                }
                if let Some((idx, detail)) = &s.intent {
                    q["detail"] = json!(detail);
                    q["intent"] =
                        json!({"kind": "plan-review", "approve": s.labels[idx % s.labels.len()]});
                }
                q
            })
            .collect();
        request(json!({"id": "r", "questions": questions}))
    }

    fn build_answer(specs: &[QSpec], answers: &[ASpec], drop_last: bool, reverse: bool) -> Answer {
        let mut items: Vec<AnswerItem> = specs
            .iter()
            .zip(answers)
            .enumerate()
            .map(|(i, (q, a))| {
                let mut selected: Vec<String> = if q.labels.is_empty() {
                    vec![]
                } else {
                    a.picks
                        .iter()
                        .map(|p| q.labels[p % q.labels.len()].clone())
                        .collect()
                };
                if !q.multi {
                    selected.truncate(1);
                }
                if a.bogus {
                    selected.push("not an option".into());
                }
                AnswerItem {
                    id: format!("q{i}"),
                    selected,
                    custom: a.custom.clone(),
                    edited: None,
                }
            })
            .collect();
        if drop_last && items.len() > 1 {
            items.pop();
        }
        if reverse {
            items.reverse();
        }
        Answer { answers: items }
    }

    fn case() -> impl Strategy<Value = (Vec<QSpec>, Vec<ASpec>, bool, bool)> {
        prop::collection::vec(qspec(), 1..=4).prop_flat_map(|qs| {
            let n = qs.len();
            (
                Just(qs),
                prop::collection::vec(aspec(), n),
                prop::bool::weighted(0.05),
                any::<bool>(),
            )
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn accepted_answers_round_trip_exactly((qs, as_, drop_last, reverse) in case()) {
            let req = build_request(&qs);
            let answer = build_answer(&qs, &as_, drop_last, reverse);
            let checked = check_answer(&req.questions, &answer);

            let mut conn = db();
            let reg = register(&mut conn, "default", "prop", T0).unwrap();
            let accepted = write(&mut conn, T0, |tx| dshq::store::queue::requests::accept(tx, T0, req.clone(), None, "cli", &Default::default()));
            prop_assert!(accepted.is_ok(), "generated request rejected: {accepted:?}");
            let stored = answer_with(&mut conn, &reg.lease, "r", &answer, T0 + 1);

            match checked {
                Ok(decisions) => {
                    let out = stored.expect("check_answer accepted it, so the store must");
                    // Stored in question order, whatever order it was given in.
                    let answer = dshq::protocol::answer::in_question_order(&req.questions, &answer);
                    let row = get(&conn, "r");
                    prop_assert_eq!(row.status, Status::Answered);
                    prop_assert_eq!(row.parsed_answer(), Some(answer.clone()));
                    prop_assert_eq!(answered_outcome(&out).answer.clone(), answer.clone());
                    prop_assert_eq!(row.decision, request_decision(&decisions));
                    prop_assert_eq!(answered_outcome(&out).decision, request_decision(&decisions));
                    // The outcome document, as written to the outbox and read back.
                    let doc = row.outcome().unwrap().to_file_json();
                    let back: Outcome = serde_json::from_str(&doc).unwrap();
                    prop_assert_eq!(&answered_outcome(&back).answer, &answer);
                    prop_assert_eq!(back, out);
                    // Per question, in question order.
                    let stored_q: Vec<(String, Option<String>, Option<String>)> = conn
                        .prepare("SELECT selected, custom, decision FROM questions ORDER BY idx")
                        .unwrap()
                        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                        .unwrap()
                        .collect::<rusqlite::Result<_>>()
                        .unwrap();
                    for (i, (sel, custom, dec)) in stored_q.iter().enumerate() {
                        let it = answer.answers.iter().find(|a| a.id == format!("q{i}")).unwrap();
                        let sel: Vec<String> = serde_json::from_str(sel).unwrap();
                        prop_assert_eq!(&sel, &it.selected);
                        prop_assert_eq!(custom, &it.custom);
                        prop_assert_eq!(dec.as_deref(), decisions[i].map(Decision::as_str));
                    }
                }
                Err(e) => {
                    prop_assert_eq!(e.code, Code::BadAnswer);
                    let err = stored.expect_err("check_answer refused it, so the store must");
                    prop_assert_eq!(err.code(), Code::BadAnswer);
                    let row = get(&conn, "r");
                    prop_assert_eq!(row.status, Status::Pending);
                    prop_assert_eq!(row.answer, None);
                }
            }
        }
    }

    /// The generator is not vacuous: most generated answers are accepted.
    #[test]
    fn generator_produces_mostly_valid_answers() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strat = case();
        let (mut ok, mut bad) = (0, 0);
        for _ in 0..200 {
            let (qs, as_, d, r) = strat.new_tree(&mut runner).unwrap().current();
            let req = build_request(&qs);
            match check_answer(&req.questions, &build_answer(&qs, &as_, d, r)) {
                Ok(_) => ok += 1,
                Err(_) => bad += 1,
            }
        }
        assert!(ok >= 40, "only {ok} of 200 generated answers are valid");
        assert!(bad >= 10, "only {bad} of 200 generated answers are invalid");
    }
}

/// The chain of a file store: keyed from its first write, its head anchored beside it
/// (moved from `src/store/sqlite/events.rs`).
mod chain_of_a_file_store {
    use dshq::core::audit::{Actor, EventKind};
    use dshq::store::anchor::{Anchor, ANCHOR_FILE};
    use dshq::store::sqlite::events::{check_anchor, load_key, verify, verify_with, NewEvent};

    #[test]
    fn a_file_store_keys_its_chain_and_anchors_its_head() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = dshq::store::sqlite::open(&dir.path().join("dshq.db")).unwrap();
        for i in 0..3 {
            dshq::store::sqlite::write(&mut conn, 1_000 + i, |tx| {
                dshq::store::driver::EventStatements::append_event_now(
                    tx,
                    1_000 + i,
                    NewEvent {
                        kind: EventKind::Accepted,
                        actor: Actor::Cli,
                        request_id: None,
                        lease_id: None,
                        agent_id: None,
                        data: serde_json::Value::Null,
                    },
                )
            })
            .unwrap();
        }
        let key = load_key(dir.path())
            .unwrap()
            .expect("the first write creates the key");
        assert_eq!(key.since, 1);
        assert_eq!(verify(&conn).unwrap(), (3, None));
        // Without the key the chain does not verify.
        assert_eq!(verify_with(&conn, None).unwrap().1.unwrap().seq, 1);
        let head = dshq::store::anchor::read_anchor(&dir.path().join(ANCHOR_FILE)).unwrap();
        assert_eq!(head.seq, 3);
        assert_eq!(check_anchor(&conn, &head).unwrap(), None);
        let ahead = Anchor {
            seq: 4,
            hash: head.hash.clone(),
        };
        assert!(check_anchor(&conn, &ahead).unwrap().is_some());
    }
}

/// `audit verify`'s record check: every lifecycle verifies, each forged field is named
/// (moved from `src/store/sqlite/audit.rs`).
mod audit_records {
    use rusqlite::Connection;
    use serde_json::json;

    use super::leases;
    use dshq::clock::Millis;
    use dshq::protocol::types::{Answer, AnswerItem, Request};
    use dshq::protocol::UserQuestionError;
    use dshq::store::sqlite::audit::{check_records, integrity};
    use dshq::store::sqlite::{events, open_in_memory, write};

    const T0: Millis = 1_780_000_000_000;

    fn req(id: &str) -> Request {
        serde_json::from_value(json!({
            "id": id,
            "questions": [
                {"id": "db", "question": "Which database?",
                 "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
                {"id": "plan", "question": "Approve?", "detail": "the plan",
                 "options": [{"label": "Revise"}, {"label": "Approve"}],
                 "intent": {"kind": "plan-review", "approve": "Approve"}}
            ]
        }))
        .unwrap()
    }

    fn answer() -> Answer {
        Answer {
            answers: vec![
                AnswerItem {
                    id: "db".into(),
                    selected: vec!["SQLite".into()],
                    custom: None,
                    edited: None,
                },
                AnswerItem {
                    id: "plan".into(),
                    selected: vec![],
                    custom: Some("add a rollback step".into()),
                    edited: None,
                },
            ],
        }
    }

    /// Every lifecycle: answered after a claim that expired, cancelled, aborted past its
    /// deadline, still claimed, pending, rejected.
    fn store() -> Connection {
        let mut conn = open_in_memory().unwrap();
        for (i, id) in ["a", "c", "x", "k", "p"].iter().enumerate() {
            let t = T0 + i as i64;
            write(&mut conn, t, |tx| {
                let mut r = req(id);
                if *id == "x" {
                    r.timeout = Some("1m".into());
                }
                dshq::store::queue::requests::accept(tx, t, r, None, "cli", &Default::default())
            })
            .unwrap();
        }
        write(&mut conn, T0 + 10, |tx| {
            dshq::store::queue::requests::record_rejection(
                tx,
                T0 + 10,
                &dshq::store::queue::requests::Rejection {
                    id: Some("bad"),
                    context: None,
                    body: "{not json",
                    source: "inbox:bad.json",
                    actor: None,
                },
                &UserQuestionError::new(dshq::protocol::Code::BadRequest, "not JSON"),
            )
        })
        .unwrap();
        let alice = write(&mut conn, T0 + 20, |tx| {
            leases::register(tx, "default", "alice", 1_000, None, T0 + 20)
        })
        .unwrap();
        write(&mut conn, T0 + 30, |tx| {
            let l = leases::authenticate(tx, &alice.lease, T0 + 30)?;
            dshq::store::queue::answers::claim(tx, T0 + 30, &l, "a")
        })
        .unwrap();
        // alice's lease expires: "a" goes back to pending; bob answers it.
        let bob = write(&mut conn, T0 + 5_000, |tx| {
            leases::register(tx, "default", "bob", 600_000, None, T0 + 5_000)
        })
        .unwrap();
        write(&mut conn, T0 + 6_000, |tx| {
            let l = leases::authenticate(tx, &bob.lease, T0 + 6_000)?;
            dshq::store::queue::answers::answer(
                tx,
                T0 + 6_000,
                &l,
                "a",
                &answer(),
                &Default::default(),
            )?;
            dshq::store::queue::answers::cancel(tx, T0 + 6_000, &l, "c", Some("not needed"))?;
            dshq::store::queue::answers::claim(tx, T0 + 6_000, &l, "k")
        })
        .unwrap();
        // The deadline of "x" passes.
        write(&mut conn, T0 + 120_000, |_| Ok(())).unwrap();
        conn
    }

    #[test]
    fn every_lifecycle_verifies() {
        let conn = store();
        assert_eq!(integrity(&conn).unwrap(), None);
        let statuses: Vec<String> = conn
            .prepare("SELECT status FROM requests ORDER BY seq")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            statuses,
            [
                "answered",
                "cancelled",
                "aborted",
                "claimed",
                "pending",
                "rejected"
            ]
        );
        assert_eq!(check_records(&conn).unwrap(), (6, None));
        assert_eq!(events::verify(&conn).unwrap().1, None);
    }

    #[test]
    fn each_forged_field_is_named() {
        let cases: &[(&str, &str, &str)] = &[
            ("UPDATE requests SET claimed_ms = claimed_ms + 1 WHERE id = 'a'", "a", "claimedAt"),
            ("UPDATE requests SET claimed_lease = 1 WHERE id = 'k'", "k", "claiming lease"),
            ("UPDATE requests SET status = 'pending', claimed_lease = NULL, claimed_ms = NULL WHERE id = 'k'", "k", "status"),
            ("UPDATE requests SET error_message = 'forged' WHERE id = 'c'", "c", "error message"),
            ("UPDATE requests SET deadline_ms = NULL WHERE id = 'x'", "x", "deadline"),
            ("UPDATE requests SET context = 'ops' WHERE id = 'p'", "p", "context"),
            ("UPDATE requests SET error_code = 'NO_PROVIDER' WHERE id = 'bad'", "bad", "error code"),
            ("UPDATE requests SET body = '{}' WHERE id = 'bad'", "bad", "digest"),
            ("UPDATE questions SET custom = 'forged' WHERE qid = 'plan' AND custom IS NOT NULL", "a", "custom text"),
            ("UPDATE questions SET selected = '[]' WHERE request_seq = (SELECT seq FROM requests WHERE id = 'p') AND idx = 0", "p", "carries an answer"),
            ("UPDATE questions SET options = '[{\"label\":\"Approve\"}]' WHERE qid = 'plan' AND request_seq = (SELECT seq FROM requests WHERE id = 'x')", "x", "options"),
            ("DELETE FROM questions WHERE idx = 1 AND request_seq = (SELECT seq FROM requests WHERE id = 'k')", "k", "question rows"),
        ];
        for (sql, id, what) in cases {
            let conn = store();
            conn.execute_batch(
                "DROP TRIGGER requests_record_fixed; DROP TRIGGER requests_final_fixed;
                 DROP TRIGGER requests_no_delete; DROP TRIGGER questions_record_fixed;
                 DROP TRIGGER questions_answer_fixed; DROP TRIGGER questions_no_delete;",
            )
            .unwrap();
            conn.execute(sql, []).unwrap();
            let b = check_records(&conn)
                .unwrap()
                .1
                .unwrap_or_else(|| panic!("{sql} not found"));
            assert_eq!(b.request.as_deref(), Some(*id), "{sql}: {b}");
            assert!(b.to_string().contains(what), "{sql}: {what:?} in {b}");
        }
    }
}
