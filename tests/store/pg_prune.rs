//! `dshq prune` on PostgreSQL: verify after a prune (keyed, from the checkpoint), tamper
//! inside the retained chain is still found, the database refuses deletes outside a
//! prune, and the guard row cannot be left committed (and verify reports it if it was).

use postgres::Client;

use crate::scenarios::{ask, mark_outcomes_written, pick, MemoryExport, TestClock};
use crate::throwaway;
use dshq::core::audit::Actor;
use dshq::store::postgres::{audit, conn, PgStore};
use dshq::store::{Anchor, LeaseRef};

fn client(url: &str) -> Client {
    let config = conn::parse_url(url).unwrap();
    conn::connect(&config).unwrap()
}

/// A keyed store with two final requests before the cut (a answered, b aborted) and
/// three after it (c answered, d and e pending), every outcome file written; pruned.
fn pruned() -> (String, tempfile::TempDir, PgStore, MemoryExport) {
    let url = throwaway::shared().fresh_database().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::new();
    let mut store = PgStore::connect(&url, Some(dir.path()), None)
        .unwrap()
        .with_clock(clock.as_fn());
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
    ask(&mut store, "c");
    ask(&mut store, "d");
    store.answer(&token, "c", &pick("SQLite")).unwrap();
    ask(&mut store, "e");
    mark_outcomes_written(&mut store);
    let mut out = MemoryExport::default();
    let p = store.prune(cut, None, &Actor::Cli, &mut out).unwrap();
    assert_eq!((p.requests, p.questions), (2, 2), "{p:?}");
    assert!(p.events > 0 && p.checkpoint.is_some());
    (url, dir, store, out)
}

#[test]
fn after_a_prune_verify_passes_from_the_checkpoint_and_tamper_is_still_found() {
    let (url, dir, mut store, out) = pruned();
    let v = store.verify(&[]).unwrap();
    assert_eq!(v.broken, None);
    assert_eq!(v.requests, 3);
    assert!(v.keyed_since.is_some());
    // The export holds the removed events, from 1 up to the checkpoint's seq.
    let first_kept: i64 = client(&url)
        .query_one("SELECT MIN(seq) FROM events", &[])
        .unwrap()
        .get(0);
    let exported: Vec<i64> = out
        .records
        .iter()
        .filter(|(k, _)| k == "event")
        .map(|(_, f)| f["seq"].as_i64().unwrap())
        .collect();
    assert_eq!(exported, (1..first_kept).collect::<Vec<_>>());
    // The head anchors; an anchor inside the pruned prefix is not silently passed.
    let (seq, hash) = v.head.clone().unwrap();
    let at = |a: Anchor| vec![(dir.path().join("audit.head"), a)];
    assert_eq!(
        store.verify(&at(Anchor { seq, hash })).unwrap().broken,
        None
    );
    let old = Anchor {
        seq: 1,
        hash: "0".repeat(64),
    };
    let broken = store.verify(&at(old)).unwrap().broken.unwrap();
    assert!(broken.contains("was pruned up to event"), "{broken}");
    drop(store);

    // Tamper with the triggers dropped, each in a transaction rolled back.
    let mut c = client(&url);
    let drop_triggers = "DROP TRIGGER events_no_update ON events; DROP TRIGGER events_no_delete ON events;
        DROP TRIGGER requests_record_fixed ON requests; DROP TRIGGER requests_no_delete ON requests;";
    let cases = [
        (
            format!("UPDATE events SET data = '{{\"forged\":true}}' WHERE seq = {}", first_kept + 1),
            format!("event {} does not verify", first_kept + 1),
        ),
        (
            format!("DELETE FROM events WHERE seq = {first_kept}"),
            "are missing: the newest checkpoint pruned only up to event".to_string(),
        ),
        (
            "UPDATE events SET data = replace(data, '\"prunedSeq\":', '\"prunedSeq\":1') WHERE kind = 'pruned'"
                .to_string(),
            "which the checkpoint says was pruned".to_string(),
        ),
        (
            "UPDATE requests SET provider = 'mallory' WHERE id = 'c'".to_string(),
            "provider".to_string(),
        ),
        (
            "DELETE FROM requests WHERE id = 'd'".to_string(),
            "the event records row".to_string(),
        ),
    ];
    for (sql, what) in &cases {
        let mut tx = c.transaction().unwrap();
        tx.batch_execute(drop_triggers).unwrap();
        tx.batch_execute(sql).unwrap();
        let v = audit::verify(&mut tx, Some(dir.path()), &[]).unwrap();
        let broken = v.broken.unwrap_or_else(|| panic!("{sql} not found"));
        assert!(
            broken.contains(what.as_str()),
            "{sql}: {what:?} in {broken}"
        );
        tx.rollback().unwrap();
    }
    let v = audit::verify_snapshot(&mut c, Some(dir.path()), &[]).unwrap();
    assert_eq!(v.broken, None);
}

#[test]
fn the_database_refuses_deletes_outside_a_prune_and_beyond_the_guard() {
    let (url, _dir, _store, _) = pruned();
    let mut c = client(&url);
    for sql in [
        "DELETE FROM events WHERE seq = (SELECT MIN(seq) FROM events)",
        "DELETE FROM requests WHERE id = 'd'",
        "DELETE FROM questions WHERE request_seq = (SELECT seq FROM requests WHERE id = 'd')",
        "UPDATE events SET data = '{}' WHERE seq = (SELECT MIN(seq) FROM events)",
        "TRUNCATE events",
    ] {
        let e = c.batch_execute(sql).unwrap_err();
        let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
        assert!(
            db.message().contains("append-only") || db.message().contains("are a record"),
            "{sql}: {}",
            db.message()
        );
    }
    // With a guard row set, only what it bounds: not a pending request, not a request
    // finished after its cut, not an event after its seq; updates stay refused.
    for sql in [
        "DELETE FROM requests WHERE id = 'e'",
        "DELETE FROM questions WHERE request_seq = (SELECT seq FROM requests WHERE id = 'e')",
        "DELETE FROM requests WHERE id = 'c'",
        "DELETE FROM events WHERE seq = (SELECT MAX(seq) FROM events)",
        "UPDATE requests SET provider = 'mallory' WHERE id = 'c'",
    ] {
        let mut tx = c.transaction().unwrap();
        tx.batch_execute("INSERT INTO prune_guard (events_upto, before_ms) VALUES (1, 1)")
            .unwrap();
        let e = tx.batch_execute(sql).unwrap_err();
        let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e}"));
        assert!(
            db.message().contains("append-only") || db.message().contains("are a record"),
            "{sql}: {}",
            db.message()
        );
        tx.rollback().unwrap();
    }
}

#[test]
fn the_guard_row_cannot_be_left_committed_and_verify_reports_one_that_was() {
    let (url, dir, mut store, _) = pruned();
    let mut c = client(&url);
    let e = c
        .batch_execute("INSERT INTO prune_guard (events_upto, before_ms) VALUES (1000, 0)")
        .unwrap_err();
    let db = e.as_db_error().unwrap_or_else(|| panic!("{e}"));
    assert!(db.message().contains("prune guard"), "{}", db.message());
    let mut tx = c.transaction().unwrap();
    tx.batch_execute("INSERT INTO prune_guard (events_upto, before_ms) VALUES (1000, 0)")
        .unwrap();
    assert!(
        tx.commit().is_err(),
        "the deferred trigger refuses the commit"
    );
    assert_eq!(store.verify(&[]).unwrap().broken, None);
    // With its trigger disabled (the table's owner can), a guard row commits: verify
    // fails on it, as SQLite's does.
    c.batch_execute(
        "ALTER TABLE prune_guard DISABLE TRIGGER prune_guard_cleared;
         INSERT INTO prune_guard (events_upto, before_ms) VALUES (1000, 0);
         ALTER TABLE prune_guard ENABLE TRIGGER prune_guard_cleared;",
    )
    .unwrap();
    let broken = store.verify(&[]).unwrap().broken.unwrap();
    assert!(
        broken.contains("the prune guard is set outside a prune"),
        "{broken}"
    );
    let v = audit::verify_snapshot(&mut c, Some(dir.path()), &[]).unwrap();
    assert!(v.broken.unwrap().contains("prune guard"));
}
