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

/// Requests, newest first (or oldest first), filtered in the query: several contexts
/// arrive as one JSON array (`json_each`), so one cached statement serves any number;
/// the text match is `instr` on `lower()` (ASCII case folding, and no LIKE wildcards to
/// escape).
pub fn list(conn: &Connection, f: &ListFilter) -> Result<Vec<RequestRow>> {
    let order = if f.oldest_first { "ASC" } else { "DESC" };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM}
         WHERE (?1 IS NULL OR r.status = ?1)
           AND (?2 IS NULL OR r.context IN (SELECT value FROM json_each(?2)))
           AND (?4 IS NULL OR r.agent_id = ?4)
           AND (?5 IS NULL OR EXISTS (SELECT 1 FROM questions q
                                      WHERE q.request_seq = r.seq AND q.intent_kind = ?5))
           AND (?6 IS NULL OR EXISTS (SELECT 1 FROM questions q
                                      WHERE q.request_seq = r.seq
                                        AND instr(lower(q.question), lower(?6)) > 0))
         ORDER BY r.seq {order} LIMIT ?3"
    ))?;
    let contexts =
        (!f.contexts.is_empty()).then(|| serde_json::Value::from(f.contexts.clone()).to_string());
    let rows = stmt.query_map(
        params![
            f.status.map(Status::as_str),
            contexts,
            f.limit.unwrap_or(-1),
            f.agent,
            f.intent,
            f.grep,
        ],
        row,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
