//! The Telegram channel's messages on SQLite ([`crate::store::driver::TelegramStatements`],
//! [`crate::store::driver::TelegramReads`]): the rule is [`crate::store::queue::telegram`];
//! here are the SQL and the row mapping.

use rusqlite::{params, OptionalExtension, Row};

use super::tx::{Sql, SqlRead};
use crate::error::Result;
use crate::store::driver::telegram::{TelegramMessage, TelegramReads, TelegramStatements};

const COLUMNS: &str = "delivery_id, chat_id, message_id, request_id, digest, posted_ms";

fn message(r: &Row<'_>) -> rusqlite::Result<TelegramMessage> {
    Ok(TelegramMessage {
        delivery_id: r.get(0)?,
        chat_id: r.get(1)?,
        message_id: r.get(2)?,
        request_id: r.get(3)?,
        digest: r.get(4)?,
        posted_ms: r.get(5)?,
    })
}

impl TelegramStatements for Sql<'_, '_> {
    fn insert_telegram_message_unless_recorded(&mut self, m: &TelegramMessage) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached(&format!(
                "INSERT INTO telegram_messages ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (delivery_id, chat_id) DO NOTHING"
            ))?
            .execute(params![
                m.delivery_id,
                m.chat_id,
                m.message_id,
                m.request_id,
                m.digest,
                m.posted_ms
            ])?
            == 1)
    }
}

impl TelegramReads for SqlRead<'_> {
    fn telegram_messages_of_request(&mut self, request_id: &str) -> Result<Vec<TelegramMessage>> {
        let mut stmt = self.0.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM telegram_messages WHERE request_id = ?1
              ORDER BY posted_ms, delivery_id, chat_id"
        ))?;
        let rows = stmt.query_map([request_id], message)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn telegram_message_of_delivery(
        &mut self,
        delivery_id: &str,
        chat_id: i64,
    ) -> Result<Option<TelegramMessage>> {
        Ok(self
            .0
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM telegram_messages WHERE delivery_id = ?1 AND chat_id = ?2"
            ))?
            .query_row(params![delivery_id, chat_id], message)
            .optional()?)
    }
}
