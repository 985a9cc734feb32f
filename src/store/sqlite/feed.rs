//! The feeds' statements ([`crate::store::driver::FeedReads`]) on SQLite, on a connection: the
//! event log's reads ([`super::events`]) and, here, the requests the events are about and
//! the open queue (a write's reads are these on its transaction:
//! [`crate::store::driver::ReadsInside`]).

use rusqlite::{params, Connection};

use super::events;
use super::requests::{contexts_json, row, COLUMNS, FROM, MATCHES, WIDTH};
use super::tx::SqlRead;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::types::ListFilter;

crate::store::driver::feed::feed_reads_by!([] SqlRead<'_>, events, super::feed);

/// The accepted requests that the events in `(after, upto]` of `kinds` (stored names)
/// are about, as `(event position, request)`, matching `f`'s request filters.
pub fn event_requests(
    conn: &Connection,
    after: i64,
    upto: i64,
    kinds: &[&str],
    f: &ListFilter,
) -> Result<Vec<(i64, RequestRow)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, e.seq FROM events e
           JOIN requests r ON r.id = e.request_id AND r.status <> 'rejected'
           LEFT JOIN leases l ON l.lease_id = r.claimed_lease
         WHERE e.seq > ?1 AND e.seq <= ?3
           AND e.kind IN (SELECT value FROM json_each(?7)) AND {MATCHES}
         ORDER BY e.seq"
    ))?;
    let kinds = serde_json::Value::from(kinds.to_vec()).to_string();
    let rows = stmt.query_map(
        params![
            after,
            contexts_json(f),
            upto,
            f.agent,
            f.intent,
            f.grep,
            kinds,
            f.source
        ],
        |r| Ok((r.get(WIDTH)?, row(r)?)),
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The open requests of `context` (every context for `None`), oldest first.
pub fn open_requests(conn: &Connection, context: Option<&str>) -> Result<Vec<RequestRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM}
         WHERE r.status IN ('pending', 'claimed') AND (?1 IS NULL OR r.context = ?1)
         ORDER BY r.seq"
    ))?;
    let rows = stmt.query_map([context], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The open requests among `ids`, in the order given (every open one for `None`), by id.
pub fn open_ids(conn: &Connection, ids: Option<&[&str]>) -> Result<Vec<String>> {
    Ok(match ids {
        None => {
            let mut stmt = conn.prepare_cached(
                "SELECT id FROM requests WHERE status IN ('pending', 'claimed') AND id IS NOT NULL
                 ORDER BY seq",
            )?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        }
        Some(ids) => {
            let mut stmt = conn.prepare_cached(
                "SELECT 1 FROM requests WHERE id = ?1 AND status IN ('pending', 'claimed')",
            )?;
            let mut open = Vec::new();
            for id in ids {
                if rusqlite::OptionalExtension::optional(stmt.query_row([id], |_| Ok(())))?
                    .is_some()
                {
                    open.push(id.to_string());
                }
            }
            open
        }
    })
}
