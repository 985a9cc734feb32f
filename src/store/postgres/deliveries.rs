//! The deliveries outbox on PostgreSQL, as SQLite's: the statements a write makes
//! ([`crate::store::driver::DeliveryStatements`]) and the sender's reads and marks
//! ([`crate::store::driver::DeliveryReads`]: each mark a single autocommit statement on
//! the deliveries table alone, since sending is not a change of the record, so it takes
//! no write lock).

use postgres::types::Type;
use postgres::GenericClient;

use crate::clock::Millis;
use crate::core::channel::Channel;
use crate::error::Result;
use crate::store::driver::deliveries::{stored_channel as channel, NewDelivery};
use crate::store::driver::{DeliveryReads, DeliveryStatements};
use crate::store::postgres::tx::{PgRead, Tx};
use crate::store::types::{Delivery, DeliveryCounts, Route};

impl DeliveryStatements for Tx<'_> {
    fn sending_channels_of_context(&mut self, context: &str) -> Result<Vec<Channel>> {
        // The channels of every context are read once a write, beside the held rows: an
        // event of a context no daemon sends for (every event, on a store without
        // channels) costs no statement.
        if self.sending_channels.is_none() {
            let mut by_context: std::collections::HashMap<String, Vec<Channel>> =
                std::collections::HashMap::new();
            for r in self
                .tx
                .beside_held()
                .query("SELECT context, channel FROM delivery_channels", &[])?
            {
                let name: String = r.try_get(1)?;
                by_context
                    .entry(r.try_get(0)?)
                    .or_default()
                    .push(channel(&name)?);
            }
            self.sending_channels = Some(by_context);
        }
        Ok(self
            .sending_channels
            .as_ref()
            .and_then(|m| m.get(context))
            .cloned()
            .unwrap_or_default())
    }

    fn insert_delivery_routes(&mut self, routes: &[Route]) -> Result<()> {
        let (contexts, channels) = routes_arrays(routes);
        self.tx.execute(
            "INSERT INTO delivery_channels (context, channel)
             SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT DO NOTHING",
            &[&contexts, &channels],
        )?;
        self.sending_channels = None;
        Ok(())
    }

    fn told_routes_of_request(&mut self, request_id: &str) -> Result<Vec<Route>> {
        // A store no daemon ever sent for has told nobody: no statement (the routes are
        // read once a write, above).
        self.sending_channels_of_context("")?;
        if self.sending_channels.as_ref().is_some_and(|m| m.is_empty()) {
            return Ok(Vec::new());
        }
        self.tx
            .query(
                "SELECT context, channel FROM deliveries WHERE request_id = $1
                  GROUP BY context, channel ORDER BY MIN(seq)",
                &[&request_id],
            )?
            .iter()
            .map(|r| {
                let name: String = r.try_get(1)?;
                Ok(Route {
                    context: r.try_get(0)?,
                    channel: channel(&name)?,
                })
            })
            .collect()
    }

    fn insert_delivery(&mut self, d: &NewDelivery<'_>) -> Result<()> {
        self.tx.execute_typed(
            "INSERT INTO deliveries
                    (id, request_id, context, channel, kind, body, created_ms, next_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
            &[
                (&d.id, Type::TEXT),
                (&d.request_id, Type::TEXT),
                (&d.context, Type::TEXT),
                (&d.channel.as_str(), Type::TEXT),
                (&d.kind, Type::TEXT),
                (&d.body, Type::TEXT),
                (&d.now, Type::INT8),
            ],
        )?;
        Ok(())
    }
}

const COLUMNS: &str = "id, request_id, context, channel, kind, body, created_ms, attempts, \
                       next_ms, delivered_ms, last_error";

fn delivery(r: &postgres::Row) -> Result<Delivery> {
    Ok(Delivery {
        id: r.try_get(0)?,
        request_id: r.try_get(1)?,
        context: r.try_get(2)?,
        channel: channel(r.try_get(3)?)?,
        kind: r.try_get(4)?,
        body: r.try_get(5)?,
        created_ms: r.try_get(6)?,
        attempts: r.try_get(7)?,
        next_ms: r.try_get(8)?,
        delivered_ms: r.try_get(9)?,
        last_error: r.try_get(10)?,
    })
}

/// `routes` as two arrays of the same length: the contexts and their channels.
fn routes_arrays(routes: &[Route]) -> (Vec<&str>, Vec<&str>) {
    routes
        .iter()
        .map(|r| (r.context.as_str(), r.channel.as_str()))
        .unzip()
}

/// The undelivered rows of `routes` due at `now`, oldest first.
fn due(
    c: &mut impl GenericClient,
    routes: &[Route],
    now: Millis,
    limit: usize,
) -> Result<Vec<Delivery>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let (contexts, channels) = routes_arrays(routes);
    c.query(
        &format!(
            "SELECT {COLUMNS} FROM deliveries
              WHERE delivered_ms IS NULL AND next_ms <= $1
                AND (context, channel) IN (SELECT * FROM unnest($2::text[], $3::text[]))
              ORDER BY next_ms, seq LIMIT $4"
        ),
        &[&now, &contexts, &channels, &limit],
    )?
    .iter()
    .map(delivery)
    .collect()
}

/// When the next undelivered row of `routes` falls due.
fn next_due(c: &mut impl GenericClient, routes: &[Route]) -> Result<Option<Millis>> {
    let (contexts, channels) = routes_arrays(routes);
    Ok(c.query_one(
        "SELECT MIN(next_ms) FROM deliveries
          WHERE delivered_ms IS NULL
            AND (context, channel) IN (SELECT * FROM unnest($1::text[], $2::text[]))",
        &[&contexts, &channels],
    )?
    .try_get(0)?)
}

/// Mark a row delivered (a 2xx).
fn mark_delivered(c: &mut impl GenericClient, id: &str, now: Millis) -> Result<()> {
    c.execute(
        "UPDATE deliveries SET delivered_ms = $2, attempts = attempts + 1, last_error = NULL
          WHERE id = $1 AND delivered_ms IS NULL",
        &[&id, &now],
    )?;
    Ok(())
}

/// Record a failed attempt and when to try again.
fn mark_failed(c: &mut impl GenericClient, id: &str, next_ms: Millis, error: &str) -> Result<()> {
    c.execute(
        "UPDATE deliveries SET attempts = attempts + 1, next_ms = $2, last_error = $3
          WHERE id = $1 AND delivered_ms IS NULL",
        &[&id, &next_ms, &error],
    )?;
    Ok(())
}

/// The deliveries of request `id`, oldest first.
fn of_request(c: &mut impl GenericClient, id: &str) -> Result<Vec<Delivery>> {
    c.query(
        &format!("SELECT {COLUMNS} FROM deliveries WHERE request_id = $1 ORDER BY seq"),
        &[&id],
    )?
    .iter()
    .map(delivery)
    .collect()
}

/// The outbox's counts by channel, for the metrics.
fn counts(c: &mut impl GenericClient) -> Result<Vec<DeliveryCounts>> {
    c.query(
        "SELECT channel,
                COUNT(*) FILTER (WHERE delivered_ms IS NULL),
                COUNT(*) FILTER (WHERE delivered_ms IS NOT NULL),
                COALESCE(SUM(attempts - CASE WHEN delivered_ms IS NULL THEN 0 ELSE 1 END), 0)::BIGINT
           FROM deliveries GROUP BY channel ORDER BY channel",
        &[],
    )?
    .iter()
    .map(|r| {
        Ok(DeliveryCounts {
            channel: channel(r.try_get(0)?)?,
            pending: r.try_get(1)?,
            delivered: r.try_get(2)?,
            failed_attempts: r.try_get(3)?,
        })
    })
    .collect()
}

impl<C: GenericClient> DeliveryReads for PgRead<'_, C> {
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
