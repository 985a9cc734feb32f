//! Web Push subscriptions on SQLite ([`crate::store::driver::PushStatements`],
//! [`crate::store::driver::PushReads`]): the rule is [`crate::store::queue::push`]; here
//! are the SQL and the row mapping.

use rusqlite::{params, OptionalExtension, Row};

use super::tx::{Sql, SqlRead};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::push::{PushReads, PushStatements, PushSubscription};

const COLUMNS: &str = "endpoint, web_name, person, p256dh, auth, created_ms, expires_ms";

fn subscription(r: &Row<'_>) -> rusqlite::Result<PushSubscription> {
    Ok(PushSubscription {
        endpoint: r.get(0)?,
        web_name: r.get(1)?,
        person: r.get(2)?,
        p256dh: r.get(3)?,
        auth: r.get(4)?,
        created_ms: r.get(5)?,
        expires_ms: r.get(6)?,
    })
}

impl PushStatements for Sql<'_, '_> {
    fn upsert_push_subscription(&mut self, s: &PushSubscription) -> Result<()> {
        self.0
            .prepare_cached(&format!(
                "INSERT INTO push_subscriptions ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                 ON CONFLICT (endpoint) DO UPDATE SET web_name = excluded.web_name,
                   person = excluded.person, p256dh = excluded.p256dh, auth = excluded.auth,
                   created_ms = excluded.created_ms, expires_ms = excluded.expires_ms"
            ))?
            .execute(params![
                s.endpoint,
                s.web_name,
                s.person,
                s.p256dh,
                s.auth,
                s.created_ms,
                s.expires_ms
            ])?;
        Ok(())
    }

    fn delete_push_subscription(&mut self, endpoint: &str, web_name: Option<&str>) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached(
                "DELETE FROM push_subscriptions WHERE endpoint = ?1 AND (?2 IS NULL OR web_name = ?2)",
            )?
            .execute(rusqlite::params![endpoint, web_name])?
            == 1)
    }

    fn insert_push_reached(
        &mut self,
        delivery_id: &str,
        request_id: &str,
        endpoint: &str,
        at: Millis,
    ) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached(
                "INSERT INTO push_reached (delivery_id, endpoint, request_id, reached_ms)
                 VALUES (?1, ?2, ?3, ?4) ON CONFLICT (delivery_id, endpoint) DO NOTHING",
            )?
            .execute(params![delivery_id, endpoint, request_id, at])?
            == 1)
    }
}

impl PushReads for SqlRead<'_> {
    fn push_subscriptions(&mut self) -> Result<Vec<PushSubscription>> {
        let mut stmt = self.0.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM push_subscriptions ORDER BY created_ms, endpoint"
        ))?;
        let rows = stmt.query_map([], subscription)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn push_subscription(&mut self, endpoint: &str) -> Result<Option<PushSubscription>> {
        Ok(self
            .0
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM push_subscriptions WHERE endpoint = ?1"
            ))?
            .query_row([endpoint], subscription)
            .optional()?)
    }

    fn push_reached(&mut self, delivery_id: &str) -> Result<Vec<String>> {
        let mut stmt = self
            .0
            .prepare_cached("SELECT endpoint FROM push_reached WHERE delivery_id = ?1")?;
        let rows = stmt.query_map([delivery_id], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
