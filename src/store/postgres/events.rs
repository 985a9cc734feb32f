//! The append-only event log on PostgreSQL: appending (under the write lock, so `seq` is
//! max + 1 without gaps and each event chains from the one committed before it) and the
//! event reads.
//!
//! What a hash covers, the key and the walk that verifies are backend-neutral
//! ([`crate::store::chain`]); this file stores the events and reads them back. The key
//! and the head anchor live in the root dir given at connect: every host of one store
//! must hold the same `audit.key`.

use postgres::types::Type;
use postgres::{GenericClient, Row};

use super::tx::Tx;
use crate::clock::Millis;
use crate::error::Result;
use crate::store::anchor::Anchor;
use crate::store::chain::{key_for_append, stage_head, HashInput, NewEvent, TxHead, GENESIS};
use crate::store::types::Event;

/// The columns of an event, in the order [`row_to_event`] reads them.
pub const COLUMNS: &str =
    "seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash";

/// Whether the newest event's hash is not its plain SHA-256, i.e. it was keyed.
fn newest_is_keyed(c: &mut impl GenericClient) -> Result<bool> {
    let Some(r) = c.query_opt(
        &format!("SELECT {COLUMNS} FROM events ORDER BY seq DESC LIMIT 1"),
        &[],
    )?
    else {
        return Ok(false);
    };
    let e = row_to_event(&r)?;
    let data: String = r.try_get(7)?;
    let input = HashInput {
        prev_hash: &e.prev_hash,
        seq: e.seq,
        at_ms: e.at_ms,
        kind: &e.kind,
        request_id: e.request_id.as_deref(),
        lease_id: e.lease_id,
        agent_id: e.agent_id.as_deref(),
        actor: &e.actor,
        data: &data,
    };
    Ok(input.plain() != e.hash)
}

/// Append one event at `now` (the caller holds the write lock).
pub fn append(t: &mut Tx<'_>, now: Millis, e: NewEvent<'_>) -> Result<i64> {
    let last = t.tx.query_typed_opt(
        "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1",
        &[],
    )?;
    let (seq, prev): (i64, String) = match last {
        Some(r) => (r.try_get::<_, i64>(0)? + 1, r.try_get(1)?),
        None => (1, GENESIS.to_string()),
    };
    let data = if e.data.is_null() {
        "{}".to_string()
    } else {
        e.data.to_string()
    };
    let (kind, actor) = (e.kind.as_str(), e.actor.as_str());
    let actor: &str = &actor;
    let key = match t.root {
        Some(d) => Some(key_for_append(d, seq, || newest_is_keyed(&mut t.tx))?),
        None => None,
    };
    let hash = HashInput {
        prev_hash: &prev,
        seq,
        at_ms: now,
        kind,
        request_id: e.request_id,
        lease_id: e.lease_id,
        agent_id: e.agent_id,
        actor,
        data: &data,
    }
    .chained(key.as_deref());
    // With its parameter types: one round trip (every write appends, under the lock).
    t.tx.execute_typed(
        "INSERT INTO events (seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        &[
            (&seq, Type::INT8),
            (&now, Type::INT8),
            (&kind, Type::TEXT),
            (&e.request_id, Type::TEXT),
            (&e.lease_id, Type::INT8),
            (&e.agent_id, Type::TEXT),
            (&actor, Type::TEXT),
            (&data, Type::TEXT),
            (&prev, Type::TEXT),
            (&hash, Type::TEXT),
        ],
    )?;
    t.appended = true;
    if let Some(dir) = t.root {
        // This backend reads the head on every append (one indexed query under the lock),
        // so the staged head serves only the anchor written after the commit; the
        // connection number is one SQLite's per-transaction head never matches.
        stage_head(TxHead {
            conn: usize::MAX,
            dir: Some(dir.to_path_buf()),
            key: key.clone(),
            anchor: Anchor {
                seq,
                hash: hash.clone(),
            },
        });
    }
    Ok(seq)
}

/// An event row (selected with [`COLUMNS`]) as an [`Event`].
pub fn row_to_event(r: &Row) -> Result<Event> {
    let data: String = r.try_get(7)?;
    Ok(Event {
        seq: r.try_get(0)?,
        at_ms: r.try_get(1)?,
        kind: r.try_get(2)?,
        request_id: r.try_get(3)?,
        lease_id: r.try_get(4)?,
        agent_id: r.try_get(5)?,
        actor: r.try_get(6)?,
        data: serde_json::from_str(&data).unwrap_or(serde_json::Value::String(data)),
        prev_hash: r.try_get(8)?,
        hash: r.try_get(9)?,
    })
}

/// The events of one request, oldest first.
pub fn for_request(c: &mut impl GenericClient, request_id: &str) -> Result<Vec<Event>> {
    let rows = c.query(
        &format!("SELECT {COLUMNS} FROM events WHERE request_id = $1 ORDER BY seq"),
        &[&request_id],
    )?;
    rows.iter().map(row_to_event).collect()
}

/// The events after position `after` up to `upto`, oldest first.
pub fn range(c: &mut impl GenericClient, after: i64, upto: i64) -> Result<Vec<Event>> {
    let rows = c.query(
        &format!("SELECT {COLUMNS} FROM events WHERE seq > $1 AND seq <= $2 ORDER BY seq"),
        &[&after, &upto],
    )?;
    rows.iter().map(row_to_event).collect()
}

/// The newest event position (0 for an empty log).
pub fn head(c: &mut impl GenericClient) -> Result<i64> {
    Ok(
        c.query_one("SELECT COALESCE(MAX(seq), 0)::bigint FROM events", &[])?
            .try_get(0)?,
    )
}

/// The position `limit` events after `after` (or the newest, if fewer).
pub fn upto(c: &mut impl GenericClient, after: i64, limit: usize) -> Result<i64> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    Ok(c.query_one(
        "SELECT COALESCE(MAX(seq), $1)::bigint FROM
               (SELECT seq FROM events WHERE seq > $1 ORDER BY seq LIMIT $2) AS page",
        &[&after, &limit],
    )?
    .try_get(0)?)
}

/// The newest checkpoint's data (the one the log starts after), if the log was ever
/// pruned.
pub fn newest_checkpoint_data(c: &mut impl GenericClient) -> Result<Option<serde_json::Value>> {
    let data: Option<String> = c
        .query_opt(
            "SELECT data FROM events WHERE kind = 'pruned' ORDER BY seq DESC LIMIT 1",
            &[],
        )?
        .map(|r| r.try_get(0))
        .transpose()?;
    Ok(data.map(|d| serde_json::from_str(&d).unwrap_or(serde_json::Value::String(d))))
}

/// Where the walk of this log starts: the newest checkpoint when the log was pruned
/// ([`crate::store::chain::walk_start`]), or the break that keeps it from being walked.
pub fn walk_start(
    c: &mut impl GenericClient,
) -> Result<
    std::result::Result<Option<crate::store::chain::Checkpoint>, crate::store::types::ChainBreak>,
> {
    let first: Option<i64> = c
        .query_one("SELECT MIN(seq) FROM events", &[])?
        .try_get(0)?;
    let newest = newest_checkpoint_data(c)?;
    Ok(crate::store::chain::walk_start(first, newest.as_ref()))
}

impl crate::store::driver::EventStatements for Tx<'_> {
    fn append_event(&mut self, now: Millis, event: NewEvent<'_>) -> Result<()> {
        append(self, now, event).map(drop)
    }

    fn append_event_now(&mut self, now: Millis, event: NewEvent<'_>) -> Result<i64> {
        append(self, now, event)
    }
}
