//! Reads: one request by id, and lists (`show`, `list`, `wait`).

use rusqlite::{params, Connection, OptionalExtension};

use super::row::{row, COLUMNS, FROM};
use crate::core::lifecycle::{RequestRow, Status};
use crate::error::Result;
use crate::store::types::ListFilter;

/// The accepted request with `id` (not a rejection), if any.
pub fn get(conn: &Connection, id: &str) -> Result<Option<RequestRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE r.id = ?1 AND r.status <> 'rejected'"
        ))?
        .query_row([id], row)
        .optional()?)
}

/// The request with `id`, or else its newest rejection.
pub fn get_any(conn: &Connection, id: &str) -> Result<Option<RequestRow>> {
    if let Some(r) = get(conn, id)? {
        return Ok(Some(r));
    }
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE r.id = ?1 ORDER BY r.seq DESC LIMIT 1"
        ))?
        .query_row([id], row)
        .optional()?)
}

/// The request filters of a [`ListFilter`] but its status: `?2` the contexts (a JSON
/// array), `?4` the agent, `?5` the intent kind, `?6` the text.
const MATCHES: &str = "(?2 IS NULL OR r.context IN (SELECT value FROM json_each(?2)))
       AND (?4 IS NULL OR r.agent_id = ?4)
       AND (?5 IS NULL OR EXISTS (SELECT 1 FROM questions q
                                  WHERE q.request_seq = r.seq AND q.intent_kind = ?5))
       AND (?6 IS NULL OR EXISTS (SELECT 1 FROM questions q
                                  WHERE q.request_seq = r.seq
                                    AND instr(lower(q.question), lower(?6)) > 0))
       AND (?8 IS NULL OR r.source = ?8)";

/// The contexts of `f` as one JSON array (`None`: every context).
fn contexts_json(f: &ListFilter) -> Option<String> {
    (!f.contexts.is_empty()).then(|| serde_json::Value::from(f.contexts.clone()).to_string())
}

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
        |r| Ok((r.get(super::row::WIDTH)?, row(r)?)),
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Requests, newest first (or oldest first), filtered in the query: several contexts
/// arrive as one JSON array (`json_each`), so one cached statement serves any number;
/// the text match is `instr` on `lower()` (ASCII case folding, and no LIKE wildcards to
/// escape).
pub fn list(conn: &Connection, f: &ListFilter) -> Result<Vec<RequestRow>> {
    let order = if f.oldest_first { "ASC" } else { "DESC" };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM}
         WHERE (?1 IS NULL OR r.status = ?1) AND {MATCHES}
         ORDER BY r.seq {order} LIMIT ?3"
    ))?;
    let contexts = contexts_json(f);
    let rows = stmt.query_map(
        params![
            f.status.map(Status::as_str),
            contexts,
            f.limit.unwrap_or(-1),
            f.agent,
            f.intent,
            f.grep,
            None::<String>,
            f.source,
        ],
        row,
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
