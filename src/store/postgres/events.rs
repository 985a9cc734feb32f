//! The append-only event log on PostgreSQL: appending (staged by the transaction, then
//! chained at its commit under the chain lock, so `seq` is max + 1 without gaps and each
//! event chains from the one committed before it) and the event reads.
//!
//! What a hash covers, the key and the walk that verifies are backend-neutral
//! ([`crate::store::chain`]); this file stores the events and reads them back. The key
//! and the head anchor live in the root dir given at connect: every host of one store
//! must hold the same `audit.key`.

use postgres::types::Type;
use postgres::{GenericClient, Row};

use std::path::Path;

use super::tx::{Staged, Tx};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::anchor::Anchor;
use crate::store::chain::{key_for_append, ChainHead, HashInput, NewEvent, GENESIS};
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

/// Append one event at `now`: staged in the transaction, chained at its commit
/// ([`flush`]).
pub fn append(t: &mut Tx<'_>, now: Millis, e: NewEvent<'_>) {
    let data = if e.data.is_null() {
        "{}".to_string()
    } else {
        e.data.to_string()
    };
    t.staged.push(Staged {
        at_ms: now,
        kind: e.kind.as_str(),
        request_id: e.request_id.map(str::to_string),
        lease_id: e.lease_id,
        agent_id: e.agent_id.map(str::to_string),
        actor: e.actor.as_str().to_string(),
        data,
    });
    t.appended = true;
}

/// Chain and insert the events `t` staged: take [`super::tx::CHAIN_LOCK`] (held to the
/// commit), read the head, hash each event from the one before, and insert them all in
/// one statement. Returns the newest position (`None`: nothing was staged). The commit
/// calls it; so does a rule that must know an event's position before it commits
/// ([`crate::store::driver::EventStatements::append_event_now`]).
///
/// Taking the lock this late is what lets writers run side by side: two transactions
/// contend only for the few milliseconds from here to their commits, and since the lock
/// is held through the commit, positions are given in commit order with no gap, and a
/// reader never sees a position before the ones below it.
pub fn flush(t: &mut Tx<'_>) -> Result<Option<i64>> {
    if t.staged.is_empty() {
        return Ok(None);
    }
    t.lock_chain()?;
    let last = t.tx.query_typed_opt(
        "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1",
        &[],
    )?;
    let (mut seq, mut prev): (i64, String) = match last {
        Some(r) => (r.try_get::<_, i64>(0)?, r.try_get(1)?),
        None => (0, GENESIS.to_string()),
    };
    let key = match t.root {
        Some(d) => Some(key_for_append(d, seq + 1, || {
            newest_is_keyed(t.tx.client()?)
        })?),
        None => None,
    };
    let n = t.staged.len();
    let mut cols = Columns::with_capacity(n);
    for e in t.staged.drain(..) {
        seq += 1;
        let hash = HashInput {
            prev_hash: &prev,
            seq,
            at_ms: e.at_ms,
            kind: e.kind,
            request_id: e.request_id.as_deref(),
            lease_id: e.lease_id,
            agent_id: e.agent_id.as_deref(),
            actor: &e.actor,
            data: &e.data,
        }
        .chained(key.as_deref());
        cols.push(seq, e, prev, hash.clone());
        prev = hash;
    }
    // With its parameter types: one round trip, however many events.
    t.tx.execute_typed(
        "INSERT INTO events (seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash)
         SELECT * FROM UNNEST($1::int8[], $2::int8[], $3::text[], $4::text[], $5::int8[],
                              $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])",
        &[
            (&cols.seq, Type::INT8_ARRAY),
            (&cols.at_ms, Type::INT8_ARRAY),
            (&cols.kind, Type::TEXT_ARRAY),
            (&cols.request_id, Type::TEXT_ARRAY),
            (&cols.lease_id, Type::INT8_ARRAY),
            (&cols.agent_id, Type::TEXT_ARRAY),
            (&cols.actor, Type::TEXT_ARRAY),
            (&cols.data, Type::TEXT_ARRAY),
            (&cols.prev_hash, Type::TEXT_ARRAY),
            (&cols.hash, Type::TEXT_ARRAY),
        ],
    )?;
    t.head = Some(ChainHead {
        dir: t.root.map(Path::to_path_buf),
        key,
        anchor: Anchor { seq, hash: prev },
    });
    Ok(Some(seq))
}

/// The staged events as columns, for one multi-row insert.
struct Columns {
    seq: Vec<i64>,
    at_ms: Vec<i64>,
    kind: Vec<&'static str>,
    request_id: Vec<Option<String>>,
    lease_id: Vec<Option<i64>>,
    agent_id: Vec<Option<String>>,
    actor: Vec<String>,
    data: Vec<String>,
    prev_hash: Vec<String>,
    hash: Vec<String>,
}

impl Columns {
    fn with_capacity(n: usize) -> Columns {
        Columns {
            seq: Vec::with_capacity(n),
            at_ms: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            request_id: Vec::with_capacity(n),
            lease_id: Vec::with_capacity(n),
            agent_id: Vec::with_capacity(n),
            actor: Vec::with_capacity(n),
            data: Vec::with_capacity(n),
            prev_hash: Vec::with_capacity(n),
            hash: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, seq: i64, e: Staged, prev: String, hash: String) {
        self.seq.push(seq);
        self.at_ms.push(e.at_ms);
        self.kind.push(e.kind);
        self.request_id.push(e.request_id);
        self.lease_id.push(e.lease_id);
        self.agent_id.push(e.agent_id);
        self.actor.push(e.actor);
        self.data.push(e.data);
        self.prev_hash.push(prev);
        self.hash.push(hash);
    }
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
        append(self, now, event);
        Ok(())
    }

    fn append_event_now(&mut self, now: Millis, event: NewEvent<'_>) -> Result<i64> {
        append(self, now, event);
        flush(self)?.ok_or_else(|| crate::error::Error::Invalid("no event was staged".into()))
    }
}

impl<C: GenericClient> crate::store::driver::EventReads for super::tx::PgRead<'_, C> {
    fn events_of_request(&mut self, request_id: &str) -> Result<Vec<Event>> {
        for_request(self.0, request_id)
    }
}
