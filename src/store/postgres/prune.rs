//! Retention's statements on PostgreSQL ([`crate::store::driver::PruneStatements`]): the
//! rule is [`crate::store::queue::prune`], run in one write transaction under the write
//! lock, at the database's clock.
//!
//! The delete triggers refuse every deletion unless a `prune_guard` row allows it
//! (migration 0002), and even then only events up to the guard's seq and final requests
//! finished before its cut; a deferred trigger refuses a commit that leaves the row.

use std::collections::VecDeque;

use postgres::types::Type;
use postgres::{Portal, Row, Transaction};

use super::events;
use super::tx::Tx;
use crate::clock::Millis;
use crate::error::Result;
use crate::store::calls::ExportSink;
use crate::store::driver::prune::{WalkEvent, WalkRow, WalkVisit};
use crate::store::driver::PruneStatements;

/// Rows read through a portal in batches (two walk side by side in one transaction).
struct Cursor {
    portal: Portal,
    buf: VecDeque<Row>,
    done: bool,
}

impl Cursor {
    fn open(tx: &mut Transaction<'_>, sql: &str) -> Result<Cursor> {
        let stmt = tx.prepare(sql)?;
        let portal = tx.bind(&stmt, &[])?;
        Ok(Cursor {
            portal,
            buf: VecDeque::new(),
            done: false,
        })
    }

    fn next(&mut self, tx: &mut Transaction<'_>) -> Result<Option<Row>> {
        if self.buf.is_empty() && !self.done {
            let rows = tx.query_portal(&self.portal, 500)?;
            self.done = rows.is_empty();
            self.buf.extend(rows);
        }
        Ok(self.buf.pop_front())
    }
}

impl Tx<'_> {
    fn count_upto(&mut self, sql: &str, upto: i64) -> Result<u64> {
        Ok(self.tx.query_one(sql, &[&upto])?.try_get::<_, i64>(0)? as u64)
    }

    fn delete_upto(&mut self, sql: &str, upto: i64) -> Result<u64> {
        self.tx.execute(sql, &[&upto])
    }
}

impl PruneStatements for Tx<'_> {
    fn newest_request_seq(&mut self) -> Result<i64> {
        Ok(self
            .tx
            .query_one("SELECT COALESCE(MAX(seq), 0)::bigint FROM requests", &[])?
            .try_get(0)?)
    }

    fn newest_checkpoint_data(&mut self) -> Result<Option<serde_json::Value>> {
        events::newest_checkpoint_data(self.tx.client()?)
    }

    fn oldest_event_seq(&mut self) -> Result<Option<i64>> {
        Ok(self
            .tx
            .query_one("SELECT MIN(seq) FROM events", &[])?
            .try_get(0)?)
    }

    fn walk_events_with_request_rows(&mut self, visit: WalkVisit<'_>) -> Result<()> {
        let mut evs = Cursor::open(
            self.tx.client()?,
            "SELECT seq, at_ms, kind, request_id, data, hash FROM events ORDER BY seq",
        )?;
        let mut rows = Cursor::open(
            self.tx.client()?,
            "SELECT seq, id, status, finished_ms, outbox_pending FROM requests ORDER BY seq",
        )?;
        while let Some(e) = evs.next(self.tx.client()?)? {
            let e = WalkEvent {
                seq: e.try_get(0)?,
                at_ms: e.try_get(1)?,
                kind: e.try_get(2)?,
                request_id: e.try_get(3)?,
                data: e.try_get(4)?,
                hash: e.try_get(5)?,
            };
            let tx = self.tx.client()?;
            let rows = &mut rows;
            let mut next_row = || -> Result<Option<WalkRow>> {
                let Some(r) = rows.next(tx)? else {
                    return Ok(None);
                };
                Ok(Some(WalkRow {
                    seq: r.try_get(0)?,
                    id: r.try_get(1)?,
                    status: r.try_get(2)?,
                    finished_ms: r.try_get(3)?,
                    outbox_pending: r.try_get(4)?,
                }))
            };
            if !visit(e, &mut next_row)? {
                break;
            }
        }
        Ok(())
    }

    fn export_requests_upto(&mut self, upto: i64, sink: ExportSink<'_>) -> Result<()> {
        super::export::export_upto(self.tx.client()?, "request", "seq", upto, sink)
    }

    fn export_questions_upto(&mut self, upto: i64, sink: ExportSink<'_>) -> Result<()> {
        super::export::export_upto(self.tx.client()?, "question", "request_seq", upto, sink)
    }

    fn export_events_upto(&mut self, upto: i64, sink: ExportSink<'_>) -> Result<()> {
        super::export::export_upto(self.tx.client()?, "event", "seq", upto, sink)
    }

    fn count_requests_upto(&mut self, upto: i64) -> Result<u64> {
        self.count_upto("SELECT COUNT(*) FROM requests WHERE seq <= $1", upto)
    }

    fn count_questions_upto(&mut self, upto: i64) -> Result<u64> {
        self.count_upto(
            "SELECT COUNT(*) FROM questions WHERE request_seq <= $1",
            upto,
        )
    }

    fn count_events_upto(&mut self, upto: i64) -> Result<u64> {
        self.count_upto("SELECT COUNT(*) FROM events WHERE seq <= $1", upto)
    }

    fn insert_prune_guard(&mut self, events_upto: i64, before_ms: Millis) -> Result<()> {
        self.tx.execute_typed(
            "INSERT INTO prune_guard (events_upto, before_ms) VALUES ($1, $2)",
            &[(&events_upto, Type::INT8), (&before_ms, Type::INT8)],
        )?;
        Ok(())
    }

    fn delete_questions_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto("DELETE FROM questions WHERE request_seq <= $1", upto)
    }

    fn delete_votes_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto("DELETE FROM votes WHERE request_seq <= $1", upto)
    }

    fn delete_delivered_deliveries_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM deliveries WHERE delivered_ms IS NOT NULL
                AND request_id IN (SELECT id FROM requests WHERE seq <= $1)",
            upto,
        )
    }

    fn delete_slack_messages_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM slack_messages AS m
              WHERE m.request_id IN (SELECT id FROM requests WHERE seq <= $1)
                AND NOT EXISTS (SELECT 1 FROM deliveries d
                                 WHERE d.request_id = m.request_id AND d.delivered_ms IS NULL)",
            upto,
        )
    }

    fn delete_telegram_messages_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM telegram_messages AS m
              WHERE m.request_id IN (SELECT id FROM requests WHERE seq <= $1)
                AND NOT EXISTS (SELECT 1 FROM deliveries d
                                 WHERE d.request_id = m.request_id AND d.delivered_ms IS NULL)",
            upto,
        )
    }

    fn delete_push_reached_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM push_reached AS r
              WHERE r.request_id IN (SELECT id FROM requests WHERE seq <= $1)
                AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = r.delivery_id)",
            upto,
        )
    }

    fn delete_link_uses_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM mail_links_used
              WHERE request_id IN (SELECT id FROM requests WHERE seq <= $1)",
            upto,
        )
    }

    fn delete_requests_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto("DELETE FROM requests WHERE seq <= $1", upto)
    }

    fn delete_events_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto("DELETE FROM events WHERE seq <= $1", upto)
    }

    fn delete_prune_guard(&mut self) -> Result<()> {
        self.tx.execute("DELETE FROM prune_guard", &[])?;
        Ok(())
    }

    fn request_id_exists(&mut self, id: &str) -> Result<bool> {
        Ok(self
            .tx
            .query_opt("SELECT 1 FROM requests WHERE id = $1 LIMIT 1", &[&id])?
            .is_some())
    }
}
