//! Web Push subscriptions on PostgreSQL ([`crate::store::driver::PushStatements`],
//! [`crate::store::driver::PushReads`]), as on SQLite: the rule is
//! [`crate::store::queue::push`]; here are the SQL and the row mapping.

use postgres::{GenericClient, Row};

use super::tx::{PgRead, Tx};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::push::{PushReads, PushStatements, PushSubscription};

const COLUMNS: &str = "endpoint, web_name, person, p256dh, auth, created_ms, expires_ms";

fn subscription(r: &Row) -> Result<PushSubscription> {
    Ok(PushSubscription {
        endpoint: r.try_get(0)?,
        web_name: r.try_get(1)?,
        person: r.try_get(2)?,
        p256dh: r.try_get(3)?,
        auth: r.try_get(4)?,
        created_ms: r.try_get(5)?,
        expires_ms: r.try_get(6)?,
    })
}

impl PushStatements for Tx<'_> {
    fn upsert_push_subscription(&mut self, s: &PushSubscription) -> Result<()> {
        // The table is the channel's own: no request row it names needs to be sent first.
        self.tx.beside_held().execute(
            &format!(
                "INSERT INTO push_subscriptions ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)
                 ON CONFLICT (endpoint) DO UPDATE SET web_name = excluded.web_name,
                   person = excluded.person, p256dh = excluded.p256dh, auth = excluded.auth,
                   created_ms = excluded.created_ms, expires_ms = excluded.expires_ms"
            ),
            &[
                &s.endpoint,
                &s.web_name,
                &s.person,
                &s.p256dh,
                &s.auth,
                &s.created_ms,
                &s.expires_ms,
            ],
        )?;
        Ok(())
    }

    fn delete_push_subscription(&mut self, endpoint: &str, web_name: Option<&str>) -> Result<bool> {
        Ok(self.tx.beside_held().execute(
            "DELETE FROM push_subscriptions WHERE endpoint = $1 AND ($2::text IS NULL OR web_name = $2)",
            &[&endpoint, &web_name],
        )? == 1)
    }

    fn insert_push_reached(
        &mut self,
        delivery_id: &str,
        request_id: &str,
        endpoint: &str,
        at: Millis,
    ) -> Result<bool> {
        Ok(self.tx.beside_held().execute(
            "INSERT INTO push_reached (delivery_id, endpoint, request_id, reached_ms)
             VALUES ($1, $2, $3, $4) ON CONFLICT (delivery_id, endpoint) DO NOTHING",
            &[&delivery_id, &endpoint, &request_id, &at],
        )? == 1)
    }
}

impl<C: GenericClient> PushReads for PgRead<'_, C> {
    fn push_subscriptions(&mut self) -> Result<Vec<PushSubscription>> {
        self.0
            .query(
                &format!("SELECT {COLUMNS} FROM push_subscriptions ORDER BY created_ms, endpoint"),
                &[],
            )?
            .iter()
            .map(subscription)
            .collect()
    }

    fn push_subscription(&mut self, endpoint: &str) -> Result<Option<PushSubscription>> {
        self.0
            .query_opt(
                &format!("SELECT {COLUMNS} FROM push_subscriptions WHERE endpoint = $1"),
                &[&endpoint],
            )?
            .as_ref()
            .map(subscription)
            .transpose()
    }

    fn push_reached(&mut self, delivery_id: &str) -> Result<Vec<String>> {
        self.0
            .query(
                "SELECT endpoint FROM push_reached WHERE delivery_id = $1",
                &[&delivery_id],
            )?
            .iter()
            .map(|r| Ok(r.try_get(0)?))
            .collect()
    }
}
