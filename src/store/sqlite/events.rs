//! The append-only event log: every state change is an event with a time and an actor.
//!
//! The database refuses UPDATE and DELETE on `events` (triggers), and each event carries a
//! SHA-256 over its content and the previous event's hash, so an edit made with the
//! triggers dropped is still found by [`verify`].

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::clock::Millis;
use crate::error::Result;

/// The hash the first event chains from.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// An event to append.
#[derive(Debug, Clone, Default)]
pub struct NewEvent<'a> {
    /// What happened: `accepted`, `rejected`, `claimed`, `released`, `answered`, ...
    pub kind: &'a str,
    /// The request concerned.
    pub request_id: Option<&'a str>,
    /// The lease concerned.
    pub lease_id: Option<i64>,
    /// The agent concerned.
    pub agent_id: Option<&'a str>,
    /// Who did it: `provider:NAME`, `asker`, `daemon`, `cli`, `agent:ID`.
    pub actor: &'a str,
    /// Details, a JSON object.
    pub data: serde_json::Value,
}

/// A stored event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Position in the log.
    pub seq: i64,
    /// When (ms since the epoch).
    pub at_ms: Millis,
    /// What happened.
    pub kind: String,
    /// The request concerned.
    pub request_id: Option<String>,
    /// The lease concerned.
    pub lease_id: Option<i64>,
    /// The agent concerned.
    pub agent_id: Option<String>,
    /// Who did it.
    pub actor: String,
    /// Details.
    pub data: serde_json::Value,
    /// The previous event's hash.
    pub prev_hash: String,
    /// This event's hash.
    pub hash: String,
}

/// The hash of an event's content chained to `prev_hash`.
#[allow(clippy::too_many_arguments)]
pub fn event_hash(
    prev_hash: &str,
    seq: i64,
    at_ms: Millis,
    kind: &str,
    request_id: Option<&str>,
    lease_id: Option<i64>,
    agent_id: Option<&str>,
    actor: &str,
    data: &str,
) -> String {
    let canonical = serde_json::json!([
        prev_hash, seq, at_ms, kind, request_id, lease_id, agent_id, actor, data
    ]);
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    hex(&digest)
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0xf) as usize] as char);
    }
    s
}

/// Append one event at `now`.
pub fn append(tx: &Transaction, now: Millis, e: NewEvent<'_>) -> Result<i64> {
    let last: Option<(i64, String)> = tx
        .prepare_cached("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let (seq, prev) = match last {
        Some((s, h)) => (s + 1, h),
        None => (1, GENESIS.to_string()),
    };
    let data = if e.data.is_null() {
        "{}".to_string()
    } else {
        e.data.to_string()
    };
    let hash = event_hash(
        &prev,
        seq,
        now,
        e.kind,
        e.request_id,
        e.lease_id,
        e.agent_id,
        e.actor,
        &data,
    );
    tx.prepare_cached(
        "INSERT INTO events (seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        seq,
        now,
        e.kind,
        e.request_id,
        e.lease_id,
        e.agent_id,
        e.actor,
        data,
        prev,
        hash
    ])?;
    Ok(seq)
}

fn row_to_event(r: &rusqlite::Row<'_>) -> rusqlite::Result<Event> {
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

/// Every event, oldest first.
pub fn all(conn: &Connection) -> Result<Vec<Event>> {
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM events ORDER BY seq"))?;
    let rows = stmt.query_map([], row_to_event)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The first break in the hash chain, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainBreak {
    /// The seq of the first event that does not verify (or that is missing).
    pub seq: i64,
    /// What is wrong with it.
    pub problem: String,
}

/// Walk the chain; `Ok(None)` when every event verifies, else the first break.
pub fn verify(conn: &Connection) -> Result<(i64, Option<ChainBreak>)> {
    let mut stmt = conn.prepare(&format!("SELECT {COLUMNS} FROM events ORDER BY seq"))?;
    let mut rows = stmt.query([])?;
    let mut prev = GENESIS.to_string();
    let mut expected_seq = 1;
    let mut count = 0;
    while let Some(r) = rows.next()? {
        let seq: i64 = r.get(0)?;
        let data: String = r.get(7)?;
        let prev_hash: String = r.get(8)?;
        let hash: String = r.get(9)?;
        count += 1;
        if seq != expected_seq {
            return Ok((
                count,
                Some(ChainBreak {
                    seq: expected_seq,
                    problem: format!("event {expected_seq} is missing (next is {seq})"),
                }),
            ));
        }
        if prev_hash != prev {
            return Ok((
                count,
                Some(ChainBreak {
                    seq,
                    problem:
                        "its prev_hash does not match the previous event (removed or reordered)"
                            .into(),
                }),
            ));
        }
        let recomputed = event_hash(
            &prev_hash,
            seq,
            r.get(1)?,
            &r.get::<_, String>(2)?,
            r.get::<_, Option<String>>(3)?.as_deref(),
            r.get(4)?,
            r.get::<_, Option<String>>(5)?.as_deref(),
            &r.get::<_, String>(6)?,
            &data,
        );
        if recomputed != hash {
            return Ok((
                count,
                Some(ChainBreak {
                    seq,
                    problem: "its content does not match its hash (changed)".into(),
                }),
            ));
        }
        prev = hash;
        expected_seq += 1;
    }
    Ok((count, None))
}
