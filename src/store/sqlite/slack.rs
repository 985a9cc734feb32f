//! The Slack channel's messages on SQLite ([`crate::store::driver::SlackStatements`],
//! [`crate::store::driver::SlackReads`]): the rule is [`crate::store::queue::slack`]; here
//! are the SQL and the row mapping.

use rusqlite::{params, OptionalExtension, Row};

use super::tx::{Sql, SqlRead};
use crate::error::Result;
use crate::store::driver::slack::{SlackMessage, SlackReads, SlackStatements};

const COLUMNS: &str = "delivery_id, request_id, channel, ts, posted_ms";

fn message(r: &Row<'_>) -> rusqlite::Result<SlackMessage> {
    Ok(SlackMessage {
        delivery_id: r.get(0)?,
        request_id: r.get(1)?,
        channel: r.get(2)?,
        ts: r.get(3)?,
        posted_ms: r.get(4)?,
    })
}

impl SlackStatements for Sql<'_, '_> {
    fn insert_slack_message_unless_delivery_recorded(&mut self, m: &SlackMessage) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached(
                "INSERT INTO slack_messages (delivery_id, request_id, channel, ts, posted_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (delivery_id) DO NOTHING",
            )?
            .execute(params![
                m.delivery_id,
                m.request_id,
                m.channel,
                m.ts,
                m.posted_ms
            ])?
            == 1)
    }
}

impl SlackReads for SqlRead<'_> {
    fn slack_messages_of_request(&mut self, request_id: &str) -> Result<Vec<SlackMessage>> {
        let mut stmt = self.0.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM slack_messages WHERE request_id = ?1
              ORDER BY posted_ms, delivery_id"
        ))?;
        let rows = stmt.query_map([request_id], message)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn slack_message_of_delivery(&mut self, delivery_id: &str) -> Result<Option<SlackMessage>> {
        Ok(self
            .0
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM slack_messages WHERE delivery_id = ?1"
            ))?
            .query_row([delivery_id], message)
            .optional()?)
    }
}
