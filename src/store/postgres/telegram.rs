//! The Telegram channel's messages on PostgreSQL
//! ([`crate::store::driver::TelegramStatements`], [`crate::store::driver::TelegramReads`]),
//! as on SQLite: the rule is [`crate::store::queue::telegram`]; here are the SQL and the
//! row mapping.

use postgres::{GenericClient, Row};

use super::tx::{PgRead, Tx};
use crate::error::Result;
use crate::store::driver::telegram::{TelegramMessage, TelegramReads, TelegramStatements};

const COLUMNS: &str = "delivery_id, chat_id, message_id, request_id, digest, posted_ms";

fn message(r: &Row) -> Result<TelegramMessage> {
    Ok(TelegramMessage {
        delivery_id: r.try_get(0)?,
        chat_id: r.try_get(1)?,
        message_id: r.try_get(2)?,
        request_id: r.try_get(3)?,
        digest: r.try_get(4)?,
        posted_ms: r.try_get(5)?,
    })
}

impl TelegramStatements for Tx<'_> {
    fn insert_telegram_message_unless_recorded(&mut self, m: &TelegramMessage) -> Result<bool> {
        // The table is the sender's own: no request row it names needs to be sent first.
        Ok(self.tx.beside_held().execute(
            &format!(
                "INSERT INTO telegram_messages ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (delivery_id, chat_id) DO NOTHING"
            ),
            &[
                &m.delivery_id,
                &m.chat_id,
                &m.message_id,
                &m.request_id,
                &m.digest,
                &m.posted_ms,
            ],
        )? == 1)
    }
}

impl<C: GenericClient> TelegramReads for PgRead<'_, C> {
    fn telegram_messages_of_request(&mut self, request_id: &str) -> Result<Vec<TelegramMessage>> {
        self.0
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM telegram_messages WHERE request_id = $1
                      ORDER BY posted_ms, delivery_id, chat_id"
                ),
                &[&request_id],
            )?
            .iter()
            .map(message)
            .collect()
    }

    fn telegram_message_of_delivery(
        &mut self,
        delivery_id: &str,
        chat_id: i64,
    ) -> Result<Option<TelegramMessage>> {
        self.0
            .query_opt(
                &format!(
                    "SELECT {COLUMNS} FROM telegram_messages WHERE delivery_id = $1 AND chat_id = $2"
                ),
                &[&delivery_id, &chat_id],
            )?
            .as_ref()
            .map(message)
            .transpose()
    }
}
