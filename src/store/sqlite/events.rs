//! The append-only event log: every state change is an event with a time and an actor.
//!
//! The database refuses UPDATE and DELETE on `events` (triggers), and each event carries a
//! hash over its content and the previous event's hash, so an edit made with the triggers
//! dropped is still found by [`verify`].
//!
//! What a hash covers, the key and the walk that verifies are backend-neutral
//! ([`crate::store::chain`]); this file stores the events in SQLite and reads them back.
//!
//! A chain cannot tell that its newest events were removed. So every committed write also
//! records the log's head (seq, hash) in `audit.head`, outside the database
//! ([`ChainHead::publish`]); `dshq audit verify` fails when the log no longer contains it.

use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension, Transaction};

use crate::clock::Millis;
use crate::error::Result;
use crate::store::anchor::Anchor;
use crate::store::types::{ChainBreak, Event};

pub use crate::store::chain::{
    hex, load_key, AuditKey, ChainWalk, HashInput, NewEvent, GENESIS, KEY_FILE,
};
use crate::store::chain::{key_for_append, ChainHead, Checkpoint};

/// The directory of the database `conn` works on (the root); `None` in memory.
pub fn root_dir(conn: &Connection) -> Option<PathBuf> {
    let path = conn.path().filter(|p| !p.is_empty())?;
    Path::new(path).parent().map(Path::to_path_buf)
}

/// Whether the newest event's hash is not its plain SHA-256, i.e. it was keyed.
fn newest_is_keyed(tx: &Transaction) -> Result<bool> {
    let newest = tx
        .query_row(
            &format!("SELECT {COLUMNS} FROM events ORDER BY seq DESC LIMIT 1"),
            [],
            |r| {
                Ok((HashInput {
                    prev_hash: &r.get::<_, String>(8)?,
                    seq: r.get(0)?,
                    at_ms: r.get(1)?,
                    kind: &r.get::<_, String>(2)?,
                    request_id: r.get::<_, Option<String>>(3)?.as_deref(),
                    lease_id: r.get(4)?,
                    agent_id: r.get::<_, Option<String>>(5)?.as_deref(),
                    actor: &r.get::<_, String>(6)?,
                    data: &r.get::<_, String>(7)?,
                }
                .plain())
                    != r.get::<_, String>(9)?)
            },
        )
        .optional()?;
    Ok(newest.unwrap_or(false))
}

/// The log's newest event (seq, hash), read from the table.
fn read_head(tx: &Transaction) -> Result<Option<(i64, String)>> {
    Ok(tx
        .prepare_cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// Append one event at `now`, chained from `head`: the head this transaction's earlier
/// appends left ([`ChainHead`], kept by the write's context), or, for its first append,
/// the log's newest event (and the root and its key). One query per write transaction,
/// not one per event. Debug builds (every test) still read the head and check the two
/// agree.
pub fn append(
    tx: &Transaction,
    head: &mut Option<ChainHead>,
    now: Millis,
    e: NewEvent<'_>,
) -> Result<i64> {
    #[cfg(debug_assertions)]
    if let Some(h) = head.as_ref() {
        assert_eq!(
            read_head(tx)?,
            Some((h.anchor.seq, h.anchor.hash.clone())),
            "the staged head is not the log's head"
        );
    }
    let (seq, prev, dir, key) = match head.take() {
        Some(h) => (h.anchor.seq + 1, h.anchor.hash, h.dir, h.key),
        None => {
            let (seq, prev) = match read_head(tx)? {
                Some((s, h)) => (s + 1, h),
                None => (1, GENESIS.to_string()),
            };
            let dir = root_dir(tx);
            let key = match &dir {
                Some(d) => Some(key_for_append(d, seq, || newest_is_keyed(tx))?),
                None => None,
            };
            (seq, prev, dir, key)
        }
    };
    let data = if e.data.is_null() {
        "{}".to_string()
    } else {
        e.data.to_string()
    };
    let (kind, actor) = (e.kind.as_str(), e.actor.as_str());
    let hash = HashInput {
        prev_hash: &prev,
        seq,
        at_ms: now,
        kind,
        request_id: e.request_id,
        lease_id: e.lease_id,
        agent_id: e.agent_id,
        actor: &actor,
        data: &data,
    }
    .chained(key.as_deref());
    tx.prepare_cached(
        "INSERT INTO events (seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        seq,
        now,
        kind,
        e.request_id,
        e.lease_id,
        e.agent_id,
        actor,
        data,
        prev,
        hash
    ])?;
    *head = Some(ChainHead {
        dir,
        key,
        anchor: Anchor { seq, hash },
    });
    Ok(seq)
}

/// After a rollback to a savepoint inside a write transaction: the events appended since
/// the savepoint are gone, so the staged head is read again from the log.
pub fn savepoint_rolled_back(tx: &Transaction, head: &mut Option<ChainHead>) -> Result<()> {
    if let Some(h) = head.as_mut() {
        match read_head(tx)? {
            Some((seq, hash)) => h.anchor = Anchor { seq, hash },
            None => *head = None,
        }
    }
    Ok(())
}

/// Where the walk of this log starts: the newest checkpoint when the log was pruned
/// ([`crate::store::chain::walk_start`]), or the break that keeps it from being walked.
pub fn walk_start(
    conn: &Connection,
) -> Result<std::result::Result<Option<Checkpoint>, ChainBreak>> {
    let first: Option<i64> = conn.query_row("SELECT MIN(seq) FROM events", [], |r| r.get(0))?;
    let newest = newest_checkpoint_data(conn)?;
    Ok(crate::store::chain::walk_start(first, newest.as_ref()))
}

/// The newest checkpoint (the one the log starts after), if the log was ever pruned.
pub fn newest_checkpoint_data(conn: &rusqlite::Connection) -> Result<Option<serde_json::Value>> {
    let data: Option<String> = conn
        .query_row(
            "SELECT data FROM events INDEXED BY events_pruned WHERE kind = 'pruned'
             ORDER BY seq DESC LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    Ok(data.map(|d| serde_json::from_str(&d).unwrap_or(serde_json::Value::String(d))))
}

/// Whether the log still contains `anchor`: `None` when it does, else what is wrong. An
/// anchor inside a pruned prefix is checked against the checkpoint, which keeps only the
/// prefix's head ([`crate::store::chain::anchor_in_pruned`]).
pub fn check_anchor(conn: &Connection, anchor: &Anchor) -> Result<Option<ChainBreak>> {
    if let Ok(checkpoint) = walk_start(conn)? {
        if let Some(r) =
            crate::store::chain::anchor_in_pruned(anchor.seq, &anchor.hash, checkpoint.as_ref())
        {
            return Ok(r.err());
        }
    }
    let found: Option<String> = conn
        .query_row(
            "SELECT hash FROM events WHERE seq = ?1",
            [anchor.seq],
            |r| r.get(0),
        )
        .optional()?;
    let last: i64 = conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?;
    Ok(crate::store::anchor::anchor_break(
        anchor,
        found.as_deref(),
        last,
    ))
}

/// An event row (the columns of `COLUMNS`, in order) as an [`Event`].
pub(super) fn row_to_event(r: &rusqlite::Row<'_>) -> rusqlite::Result<Event> {
    let data: String = r.get(7)?;
    Ok(Event {
        seq: r.get(0)?,
        at_ms: r.get(1)?,
        kind: r.get(2)?,
        request_id: r.get(3)?,
        lease_id: r.get(4)?,
        agent_id: r.get(5)?,
        actor: r.get(6)?,
        data: serde_json::from_str(&data).unwrap_or(serde_json::Value::String(data)),
        prev_hash: r.get(8)?,
        hash: r.get(9)?,
    })
}

const COLUMNS: &str =
    "seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash";

/// The events of one request, oldest first.
pub fn for_request(conn: &Connection, request_id: &str) -> Result<Vec<Event>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM events WHERE request_id = ?1 ORDER BY seq"
    ))?;
    let rows = stmt.query_map([request_id], row_to_event)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The events after position `after` up to `upto`, oldest first.
pub fn range(conn: &Connection, after: i64, upto: i64) -> Result<Vec<Event>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM events WHERE seq > ?1 AND seq <= ?2 ORDER BY seq"
    ))?;
    let rows = stmt.query_map([after, upto], row_to_event)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The newest event position (0 for an empty log).
pub fn head(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?)
}

/// The position `limit` events after `after` (or the newest, if fewer).
pub fn upto(conn: &Connection, after: i64, limit: usize) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT COALESCE(MAX(seq), ?1) FROM
           (SELECT seq FROM events WHERE seq > ?1 ORDER BY seq LIMIT ?2)",
        rusqlite::params![after, limit as i64],
        |r| r.get(0),
    )?)
}

/// Every event, oldest first.
pub fn all(conn: &Connection) -> Result<Vec<Event>> {
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM events ORDER BY seq"))?;
    let rows = stmt.query_map([], row_to_event)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Walk the chain with the root's key (when the database is a file); `Ok(None)` when
/// every event verifies, else the first break.
pub fn verify(conn: &Connection) -> Result<(i64, Option<ChainBreak>)> {
    let key = match root_dir(conn) {
        Some(dir) => load_key(&dir)?,
        None => None,
    };
    let missing_key = key.is_none() && root_dir(conn).is_some();
    let (count, brk) = verify_with(conn, key.as_ref())?;
    Ok((
        count,
        brk.map(|mut b| {
            if missing_key && b.problem.contains("does not match its hash") {
                b.problem.push_str(&format!(
                    "; the root has no {KEY_FILE}, so a keyed chain cannot verify (restore the key file)"
                ));
            }
            b
        }),
    ))
}

/// Walk the chain, keyed with `key` from its `since` on; `Ok(None)` when every event
/// verifies, else the first break.
pub fn verify_with(conn: &Connection, key: Option<&AuditKey>) -> Result<(i64, Option<ChainBreak>)> {
    let checkpoint = match walk_start(conn)? {
        Ok(c) => c,
        Err(brk) => return Ok((0, Some(brk))),
    };
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM events ORDER BY seq"))?;
    let mut rows = stmt.query([])?;
    let mut walk = ChainWalk::from(key, checkpoint.as_ref());
    while let Some(r) = rows.next()? {
        let data: String = r.get(7)?;
        let hash: String = r.get(9)?;
        let (request_id, agent_id): (Option<String>, Option<String>) = (r.get(3)?, r.get(5)?);
        let input = HashInput {
            prev_hash: &r.get::<_, String>(8)?,
            seq: r.get(0)?,
            at_ms: r.get(1)?,
            kind: &r.get::<_, String>(2)?,
            request_id: request_id.as_deref(),
            lease_id: r.get(4)?,
            agent_id: agent_id.as_deref(),
            actor: &r.get::<_, String>(6)?,
            data: &data,
        };
        if let Some(brk) = walk.step(&input, &hash) {
            return Ok((walk.count, Some(brk)));
        }
    }
    Ok((walk.count, None))
}

impl crate::store::driver::EventReads for super::tx::SqlRead<'_> {
    fn events_of_request(&mut self, request_id: &str) -> Result<Vec<Event>> {
        for_request(self.0, request_id)
    }
}
