//! This driver's side of the deliveries outbox (issue 29), as SQLite's: the statement a
//! write makes ([`crate::store::driver::DeliveryStatements`]) and the host's reads and
//! bookkeeping (single autocommit statements on the deliveries tables alone: sending is
//! not a change of the record, so it takes no write lock).

use postgres::types::Type;
use postgres::GenericClient;

use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::deliveries::NewDelivery;
use crate::store::driver::DeliveryStatements;
use crate::store::postgres::tx::Tx;
use crate::store::types::{Delivery, DeliveryCounts};

impl DeliveryStatements for Tx<'_> {
    fn context_sends_deliveries(&mut self, context: &str) -> Result<bool> {
        // The contexts that send are read once a write, beside the held rows: an event of
        // a context no daemon sends for (every event, on a store without webhooks) costs
        // no statement.
        if self.sending_contexts.is_none() {
            let sending = self
                .tx
                .beside_held()
                .query("SELECT context FROM delivery_contexts", &[])?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<std::result::Result<_, _>>()?;
            self.sending_contexts = Some(sending);
        }
        Ok(self
            .sending_contexts
            .as_ref()
            .is_some_and(|s| s.contains(context)))
    }

    fn insert_delivery_if_context_sends(&mut self, d: &NewDelivery<'_>) -> Result<()> {
        // The insert keeps its own guard.
        if !self.context_sends_deliveries(d.context)? {
            return Ok(());
        }
        self.tx.execute_typed(
            "INSERT INTO deliveries (id, request_id, context, kind, body, created_ms, next_ms)
             SELECT $1, $2, $3, $4, $5, $6, $6
              WHERE EXISTS (SELECT 1 FROM delivery_contexts WHERE context = $3)",
            &[
                (&d.id, Type::TEXT),
                (&d.request_id, Type::TEXT),
                (&d.context, Type::TEXT),
                (&d.kind, Type::TEXT),
                (&d.body, Type::TEXT),
                (&d.now, Type::INT8),
            ],
        )?;
        Ok(())
    }
}

const COLUMNS: &str =
    "id, request_id, context, kind, body, created_ms, attempts, next_ms, delivered_ms, last_error";

fn delivery(r: &postgres::Row) -> Result<Delivery> {
    Ok(Delivery {
        id: r.try_get(0)?,
        request_id: r.try_get(1)?,
        context: r.try_get(2)?,
        kind: r.try_get(3)?,
        body: r.try_get(4)?,
        created_ms: r.try_get(5)?,
        attempts: r.try_get(6)?,
        next_ms: r.try_get(7)?,
        delivered_ms: r.try_get(8)?,
        last_error: r.try_get(9)?,
    })
}

/// Record that these contexts have channels (a daemon with channels, at start).
pub fn add_contexts(c: &mut impl GenericClient, contexts: &[String]) -> Result<()> {
    c.execute(
        "INSERT INTO delivery_contexts (context) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
        &[&contexts],
    )?;
    Ok(())
}

/// The undelivered rows of `contexts` due at `now`, oldest first.
pub fn due(
    c: &mut impl GenericClient,
    contexts: &[String],
    now: Millis,
    limit: usize,
) -> Result<Vec<Delivery>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    c.query(
        &format!(
            "SELECT {COLUMNS} FROM deliveries
              WHERE delivered_ms IS NULL AND next_ms <= $1 AND context = ANY($2)
              ORDER BY next_ms, seq LIMIT $3"
        ),
        &[&now, &contexts, &limit],
    )?
    .iter()
    .map(delivery)
    .collect()
}

/// When the next undelivered row of `contexts` falls due.
pub fn next_due(c: &mut impl GenericClient, contexts: &[String]) -> Result<Option<Millis>> {
    Ok(c.query_one(
        "SELECT MIN(next_ms) FROM deliveries WHERE delivered_ms IS NULL AND context = ANY($1)",
        &[&contexts],
    )?
    .try_get(0)?)
}

/// Mark a row delivered (a 2xx).
pub fn mark_delivered(c: &mut impl GenericClient, id: &str, now: Millis) -> Result<()> {
    c.execute(
        "UPDATE deliveries SET delivered_ms = $2, attempts = attempts + 1, last_error = NULL
          WHERE id = $1 AND delivered_ms IS NULL",
        &[&id, &now],
    )?;
    Ok(())
}

/// Record a failed attempt and when to try again.
pub fn mark_failed(
    c: &mut impl GenericClient,
    id: &str,
    next_ms: Millis,
    error: &str,
) -> Result<()> {
    c.execute(
        "UPDATE deliveries SET attempts = attempts + 1, next_ms = $2, last_error = $3
          WHERE id = $1 AND delivered_ms IS NULL",
        &[&id, &next_ms, &error],
    )?;
    Ok(())
}

/// The deliveries of request `id`, oldest first.
pub fn of_request(c: &mut impl GenericClient, id: &str) -> Result<Vec<Delivery>> {
    c.query(
        &format!("SELECT {COLUMNS} FROM deliveries WHERE request_id = $1 ORDER BY seq"),
        &[&id],
    )?
    .iter()
    .map(delivery)
    .collect()
}

/// The outbox's counts, for the metrics.
pub fn counts(c: &mut impl GenericClient) -> Result<DeliveryCounts> {
    let r = c.query_one(
        "SELECT COUNT(*) FILTER (WHERE delivered_ms IS NULL),
                COUNT(*) FILTER (WHERE delivered_ms IS NOT NULL),
                COALESCE(SUM(attempts - CASE WHEN delivered_ms IS NULL THEN 0 ELSE 1 END), 0)::BIGINT
           FROM deliveries",
        &[],
    )?;
    Ok(DeliveryCounts {
        pending: r.try_get(0)?,
        delivered: r.try_get(1)?,
        failed_attempts: r.try_get(2)?,
    })
}
