//! The deliveries outbox on SQLite: the statements a write makes
//! ([`crate::store::driver::DeliveryStatements`]) and the sender's reads and marks
//! ([`crate::store::driver::DeliveryReads`]: each mark one autocommit statement, outside
//! any rule, since sending is not a change of the record).

use rusqlite::{params, Connection, OptionalExtension};

use crate::clock::Millis;
use crate::core::channel::Channel;
use crate::error::Result;
use crate::store::driver::deliveries::{stored_channel as channel, NewDelivery};
use crate::store::driver::{DeliveryReads, DeliveryStatements};
use crate::store::sqlite::tx::{Sql, SqlRead};
use crate::store::types::{Delivery, DeliveryCounts, Route};

impl DeliveryStatements for Sql<'_, '_> {
    fn sending_channels_of_context(&mut self, context: &str) -> Result<Vec<Channel>> {
        let mut stmt = self
            .0
            .prepare_cached("SELECT channel FROM delivery_channels WHERE context = ?1")?;
        let names = stmt.query_map([context], |r| r.get::<_, String>(0))?;
        names
            .map(|n| channel(&n?))
            .collect::<Result<Vec<Channel>>>()
    }

    fn insert_delivery_routes(&mut self, routes: &[Route]) -> Result<()> {
        self.0
            .prepare_cached(&format!(
                // `WHERE true`: an upsert after a SELECT needs it (SQLite's parser).
                "INSERT INTO delivery_channels (context, channel) {} WHERE true
                 ON CONFLICT DO NOTHING",
                routes_rows("?1")
            ))?
            .execute([routes_json(routes)])?;
        Ok(())
    }

    fn told_routes_of_request(&mut self, request_id: &str) -> Result<Vec<Route>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT context, channel FROM deliveries WHERE request_id = ?1
              GROUP BY context, channel ORDER BY MIN(rowid)",
        )?;
        let rows = stmt.query_map([request_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        rows.map(|r| {
            let (context, name) = r?;
            Ok(Route {
                context,
                channel: channel(&name)?,
            })
        })
        .collect()
    }

    fn insert_delivery(&mut self, d: &NewDelivery<'_>) -> Result<()> {
        self.0
            .prepare_cached(
                "INSERT INTO deliveries
                        (id, request_id, context, channel, kind, body, created_ms, next_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)",
            )?
            .execute(params![
                d.id,
                d.request_id,
                d.context,
                d.channel.as_str(),
                d.kind,
                d.body,
                d.now
            ])?;
        Ok(())
    }
}

const COLUMNS: &str = "id, request_id, context, channel, kind, body, created_ms, attempts, \
                       next_ms, delivered_ms, last_error";

fn delivery(r: &rusqlite::Row<'_>) -> Result<Delivery> {
    Ok(Delivery {
        id: r.get(0)?,
        request_id: r.get(1)?,
        context: r.get(2)?,
        channel: channel(&r.get::<_, String>(3)?)?,
        kind: r.get(4)?,
        body: r.get(5)?,
        created_ms: r.get(6)?,
        attempts: r.get(7)?,
        next_ms: r.get(8)?,
        delivered_ms: r.get(9)?,
        last_error: r.get(10)?,
    })
}

/// `routes` as the JSON array of `[context, channel]` pairs the statements read.
fn routes_json(routes: &[Route]) -> String {
    serde_json::Value::Array(
        routes
            .iter()
            .map(|r| serde_json::json!([r.context, r.channel.as_str()]))
            .collect(),
    )
    .to_string()
}

/// The rows (context, channel) of the routes in the statement's JSON parameter `param`.
fn routes_rows(param: &str) -> String {
    format!("SELECT value ->> 0, value ->> 1 FROM json_each({param})")
}

/// The undelivered rows of `routes` due at `now`, oldest first.
fn due(conn: &Connection, routes: &[Route], now: Millis, limit: usize) -> Result<Vec<Delivery>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM deliveries
          WHERE delivered_ms IS NULL AND next_ms <= ?1
            AND (context, channel) IN ({})
          ORDER BY next_ms, rowid LIMIT ?3",
        routes_rows("?2")
    ))?;
    let mut rows = stmt.query(params![now, routes_json(routes), limit as i64])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(delivery(r)?);
    }
    Ok(out)
}

/// When the next undelivered row of `routes` falls due.
fn next_due(conn: &Connection, routes: &[Route]) -> Result<Option<Millis>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT MIN(next_ms) FROM deliveries
              WHERE delivered_ms IS NULL AND (context, channel) IN ({})",
            routes_rows("?1")
        ))?
        .query_row([routes_json(routes)], |r| r.get(0))
        .optional()?
        .flatten())
}

/// Mark a row delivered (a 2xx) after `attempts` attempts.
fn mark_delivered(conn: &Connection, id: &str, now: Millis) -> Result<()> {
    conn.prepare_cached(
        "UPDATE deliveries SET delivered_ms = ?2, attempts = attempts + 1, last_error = NULL
          WHERE id = ?1 AND delivered_ms IS NULL",
    )?
    .execute(params![id, now])?;
    Ok(())
}

/// Record a failed attempt and when to try again.
fn mark_failed(conn: &Connection, id: &str, next_ms: Millis, error: &str) -> Result<()> {
    conn.prepare_cached(
        "UPDATE deliveries SET attempts = attempts + 1, next_ms = ?2, last_error = ?3
          WHERE id = ?1 AND delivered_ms IS NULL",
    )?
    .execute(params![id, next_ms, error])?;
    Ok(())
}

/// The deliveries of request `id`, oldest first.
fn of_request(conn: &Connection, id: &str) -> Result<Vec<Delivery>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM deliveries WHERE request_id = ?1 ORDER BY rowid"
    ))?;
    let mut rows = stmt.query([id])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(delivery(r)?);
    }
    Ok(out)
}

/// The outbox's counts by channel, for the metrics.
fn counts(conn: &Connection) -> Result<Vec<DeliveryCounts>> {
    let mut stmt = conn.prepare_cached(
        "SELECT channel,
                COUNT(*) FILTER (WHERE delivered_ms IS NULL),
                COUNT(*) FILTER (WHERE delivered_ms IS NOT NULL),
                COALESCE(SUM(attempts - (delivered_ms IS NOT NULL)), 0)
           FROM deliveries GROUP BY channel ORDER BY channel",
    )?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(DeliveryCounts {
            channel: channel(&r.get::<_, String>(0)?)?,
            pending: r.get(1)?,
            delivered: r.get(2)?,
            failed_attempts: r.get(3)?,
        });
    }
    Ok(out)
}

impl DeliveryReads for SqlRead<'_> {
    fn deliveries_due(
        &mut self,
        routes: &[Route],
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Delivery>> {
        due(self.0, routes, now, limit)
    }

    fn next_delivery_due(&mut self, routes: &[Route]) -> Result<Option<Millis>> {
        next_due(self.0, routes)
    }

    fn deliveries_of_request(&mut self, request_id: &str) -> Result<Vec<Delivery>> {
        of_request(self.0, request_id)
    }

    fn delivery_counts(&mut self) -> Result<Vec<DeliveryCounts>> {
        counts(self.0)
    }

    fn mark_delivered(&mut self, id: &str, now: Millis) -> Result<()> {
        mark_delivered(self.0, id, now)
    }

    fn mark_delivery_failed(&mut self, id: &str, next_ms: Millis, error: &str) -> Result<()> {
        mark_failed(self.0, id, next_ms, error)
    }
}
