//! This driver's side of the deliveries outbox (issue 29): the statement a write makes
//! ([`crate::store::driver::DeliveryStatements`]) and the host's reads and bookkeeping
//! (each its own small transaction, outside any rule: sending is not a change of the
//! record).

use rusqlite::{params, Connection, OptionalExtension};

use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::deliveries::NewDelivery;
use crate::store::driver::DeliveryStatements;
use crate::store::sqlite::sql::Sql;
use crate::store::types::{Delivery, DeliveryCounts};

impl DeliveryStatements for Sql<'_, '_> {
    fn context_sends_deliveries(&mut self, context: &str) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached("SELECT 1 FROM delivery_contexts WHERE context = ?1")?
            .exists([context])?)
    }

    fn insert_delivery_if_context_sends(&mut self, d: &NewDelivery<'_>) -> Result<()> {
        self.0
            .prepare_cached(
                "INSERT INTO deliveries (id, request_id, context, kind, body, created_ms, next_ms)
                 SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?6
                  WHERE EXISTS (SELECT 1 FROM delivery_contexts WHERE context = ?3)",
            )?
            .execute(params![
                d.id,
                d.request_id,
                d.context,
                d.kind,
                d.body,
                d.now
            ])?;
        Ok(())
    }
}

const COLUMNS: &str =
    "id, request_id, context, kind, body, created_ms, attempts, next_ms, delivered_ms, last_error";

fn delivery(r: &rusqlite::Row<'_>) -> rusqlite::Result<Delivery> {
    Ok(Delivery {
        id: r.get(0)?,
        request_id: r.get(1)?,
        context: r.get(2)?,
        kind: r.get(3)?,
        body: r.get(4)?,
        created_ms: r.get(5)?,
        attempts: r.get(6)?,
        next_ms: r.get(7)?,
        delivered_ms: r.get(8)?,
        last_error: r.get(9)?,
    })
}

/// Record that these contexts have channels (a daemon with channels, at start).
pub fn add_contexts(conn: &mut Connection, contexts: &[String]) -> Result<()> {
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    for c in contexts {
        tx.execute(
            "INSERT INTO delivery_contexts (context) VALUES (?1) ON CONFLICT DO NOTHING",
            [c],
        )?;
    }
    tx.commit()?;
    Ok(())
}

/// The undelivered rows of `contexts` due at `now`, oldest first.
pub fn due(
    conn: &Connection,
    contexts: &[String],
    now: Millis,
    limit: usize,
) -> Result<Vec<Delivery>> {
    let ctx = serde_json::to_string(contexts).unwrap_or_else(|_| "[]".into());
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM deliveries
          WHERE delivered_ms IS NULL AND next_ms <= ?1
            AND context IN (SELECT value FROM json_each(?2))
          ORDER BY next_ms, rowid LIMIT ?3"
    ))?;
    let rows = stmt.query_map(params![now, ctx, limit as i64], delivery)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// When the next undelivered row of `contexts` falls due.
pub fn next_due(conn: &Connection, contexts: &[String]) -> Result<Option<Millis>> {
    let ctx = serde_json::to_string(contexts).unwrap_or_else(|_| "[]".into());
    Ok(conn
        .prepare_cached(
            "SELECT MIN(next_ms) FROM deliveries
              WHERE delivered_ms IS NULL AND context IN (SELECT value FROM json_each(?1))",
        )?
        .query_row([ctx], |r| r.get(0))
        .optional()?
        .flatten())
}

/// Mark a row delivered (a 2xx) after `attempts` attempts.
pub fn mark_delivered(conn: &Connection, id: &str, now: Millis) -> Result<()> {
    conn.prepare_cached(
        "UPDATE deliveries SET delivered_ms = ?2, attempts = attempts + 1, last_error = NULL
          WHERE id = ?1 AND delivered_ms IS NULL",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// Record a failed attempt and when to try again.
pub fn mark_failed(conn: &Connection, id: &str, next_ms: Millis, error: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE deliveries SET attempts = attempts + 1, next_ms = ?2, last_error = ?3
          WHERE id = ?1 AND delivered_ms IS NULL",
    )?
    .execute(params![id, next_ms, error])?;
    Ok(())
}

/// The deliveries of request `id`, oldest first.
pub fn of_request(conn: &Connection, id: &str) -> Result<Vec<Delivery>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM deliveries WHERE request_id = ?1 ORDER BY rowid"
    ))?;
    let rows = stmt.query_map([id], delivery)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The outbox's counts, for the metrics.
pub fn counts(conn: &Connection) -> Result<DeliveryCounts> {
    Ok(conn.query_row(
        "SELECT COUNT(*) FILTER (WHERE delivered_ms IS NULL),
                COUNT(*) FILTER (WHERE delivered_ms IS NOT NULL),
                COALESCE(SUM(attempts - (delivered_ms IS NOT NULL)), 0)
           FROM deliveries",
        [],
        |r| {
            Ok(DeliveryCounts {
                pending: r.get(0)?,
                delivered: r.get(1)?,
                failed_attempts: r.get(2)?,
            })
        },
    )?)
}
