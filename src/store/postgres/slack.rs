//! The Slack channel's messages on PostgreSQL ([`crate::store::driver::SlackStatements`],
//! [`crate::store::driver::SlackReads`]), as on SQLite: the rule is
//! [`crate::store::queue::slack`]; here are the SQL and the row mapping.

use postgres::{GenericClient, Row};

use super::tx::{PgRead, Tx};
use crate::error::Result;
use crate::store::driver::slack::{SlackMessage, SlackReads, SlackStatements};

const COLUMNS: &str = "delivery_id, request_id, channel, ts, posted_ms";

fn message(r: &Row) -> Result<SlackMessage> {
    Ok(SlackMessage {
        delivery_id: r.try_get(0)?,
        request_id: r.try_get(1)?,
        channel: r.try_get(2)?,
        ts: r.try_get(3)?,
        posted_ms: r.try_get(4)?,
    })
}

impl SlackStatements for Tx<'_> {
    fn insert_slack_message_unless_delivery_recorded(&mut self, m: &SlackMessage) -> Result<bool> {
        // The table is the sender's own: no request row it names needs to be sent first.
        Ok(self.tx.beside_held().execute(
            "INSERT INTO slack_messages (delivery_id, request_id, channel, ts, posted_ms)
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (delivery_id) DO NOTHING",
            &[
                &m.delivery_id,
                &m.request_id,
                &m.channel,
                &m.ts,
                &m.posted_ms,
            ],
        )? == 1)
    }
}

impl<C: GenericClient> SlackReads for PgRead<'_, C> {
    fn slack_messages_of_request(&mut self, request_id: &str) -> Result<Vec<SlackMessage>> {
        self.0
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM slack_messages WHERE request_id = $1
                      ORDER BY posted_ms, delivery_id"
                ),
                &[&request_id],
            )?
            .iter()
            .map(message)
            .collect()
    }

    fn slack_message_of_delivery(&mut self, delivery_id: &str) -> Result<Option<SlackMessage>> {
        self.0
            .query_opt(
                &format!("SELECT {COLUMNS} FROM slack_messages WHERE delivery_id = $1"),
                &[&delivery_id],
            )?
            .as_ref()
            .map(message)
            .transpose()
    }
}
