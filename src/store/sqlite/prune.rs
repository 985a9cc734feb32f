//! Retention's statements on SQLite ([`crate::store::driver::PruneStatements`]): the rule
//! is [`crate::store::queue::prune`].
//!
//! The database's triggers refuse every deletion unless a `prune_guard` row allows it
//! (migration 0006), and even then only events up to the guard's seq and final requests
//! finished before its cut.

use rusqlite::{params, OptionalExtension};

use super::events;
use super::tx::Sql;
use crate::clock::Millis;
use crate::error::Result;
use crate::store::calls::ExportSink;
use crate::store::driver::prune::{WalkEvent, WalkRow, WalkVisit};
use crate::store::driver::PruneStatements;

impl Sql<'_, '_> {
    fn count_upto(&self, sql: &str, upto: i64) -> Result<u64> {
        let n: i64 = self.0.query_row(sql, [upto], |r| r.get(0))?;
        Ok(n as u64)
    }

    fn delete_upto(&self, sql: &str, upto: i64) -> Result<u64> {
        Ok(self.0.execute(sql, [upto])? as u64)
    }
}

impl PruneStatements for Sql<'_, '_> {
    fn newest_request_seq(&mut self) -> Result<i64> {
        Ok(self
            .0
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM requests", [], |r| {
                r.get(0)
            })?)
    }

    fn newest_checkpoint_data(&mut self) -> Result<Option<serde_json::Value>> {
        events::newest_checkpoint_data(self.0)
    }

    fn oldest_event_seq(&mut self) -> Result<Option<i64>> {
        Ok(self
            .0
            .query_row("SELECT MIN(seq) FROM events", [], |r| r.get(0))
            .optional()?
            .flatten())
    }

    fn walk_events_with_request_rows(&mut self, visit: WalkVisit<'_>) -> Result<()> {
        let mut ev_stmt = self
            .0
            .prepare("SELECT seq, at_ms, kind, request_id, data, hash FROM events ORDER BY seq")?;
        let mut row_stmt = self.0.prepare(
            "SELECT seq, id, status, finished_ms, outbox_pending FROM requests ORDER BY seq",
        )?;
        let mut evs = ev_stmt.query([])?;
        let mut rows = row_stmt.query([])?;
        let mut next_row = || -> Result<Option<WalkRow>> {
            let Some(r) = rows.next()? else {
                return Ok(None);
            };
            Ok(Some(WalkRow {
                seq: r.get(0)?,
                id: r.get(1)?,
                status: r.get(2)?,
                finished_ms: r.get(3)?,
                outbox_pending: r.get(4)?,
            }))
        };
        while let Some(e) = evs.next()? {
            let e = WalkEvent {
                seq: e.get(0)?,
                at_ms: e.get(1)?,
                kind: e.get(2)?,
                request_id: e.get(3)?,
                data: e.get(4)?,
                hash: e.get(5)?,
            };
            if !visit(e, &mut next_row)? {
                break;
            }
        }
        Ok(())
    }

    fn export_requests_upto(&mut self, upto: i64, sink: ExportSink<'_>) -> Result<()> {
        super::export::dump_where(
            self.0,
            "request",
            "SELECT * FROM requests WHERE seq <= ?1 ORDER BY seq",
            upto,
            sink,
        )
    }

    fn export_questions_upto(&mut self, upto: i64, sink: ExportSink<'_>) -> Result<()> {
        super::export::dump_where(
            self.0,
            "question",
            "SELECT * FROM questions WHERE request_seq <= ?1 ORDER BY request_seq, idx",
            upto,
            sink,
        )
    }

    fn export_events_upto(&mut self, upto: i64, sink: ExportSink<'_>) -> Result<()> {
        super::export::dump_where(
            self.0,
            "event",
            "SELECT * FROM events WHERE seq <= ?1 ORDER BY seq",
            upto,
            sink,
        )
    }

    fn count_requests_upto(&mut self, upto: i64) -> Result<u64> {
        self.count_upto("SELECT COUNT(*) FROM requests WHERE seq <= ?1", upto)
    }

    fn count_questions_upto(&mut self, upto: i64) -> Result<u64> {
        self.count_upto(
            "SELECT COUNT(*) FROM questions WHERE request_seq <= ?1",
            upto,
        )
    }

    fn count_events_upto(&mut self, upto: i64) -> Result<u64> {
        self.count_upto("SELECT COUNT(*) FROM events WHERE seq <= ?1", upto)
    }

    fn insert_prune_guard(&mut self, events_upto: i64, before_ms: Millis) -> Result<()> {
        self.0.execute(
            "INSERT INTO prune_guard (events_upto, before_ms) VALUES (?1, ?2)",
            params![events_upto, before_ms],
        )?;
        Ok(())
    }

    fn delete_questions_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto("DELETE FROM questions WHERE request_seq <= ?1", upto)
    }

    fn delete_votes_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto("DELETE FROM votes WHERE request_seq <= ?1", upto)
    }

    fn delete_delivered_deliveries_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM deliveries WHERE delivered_ms IS NOT NULL
                AND request_id IN (SELECT id FROM requests WHERE seq <= ?1)",
            upto,
        )
    }

    fn delete_slack_messages_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM slack_messages AS m
              WHERE m.request_id IN (SELECT id FROM requests WHERE seq <= ?1)
                AND NOT EXISTS (SELECT 1 FROM deliveries d
                                 WHERE d.request_id = m.request_id AND d.delivered_ms IS NULL)",
            upto,
        )
    }

    fn delete_telegram_messages_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM telegram_messages AS m
              WHERE m.request_id IN (SELECT id FROM requests WHERE seq <= ?1)
                AND NOT EXISTS (SELECT 1 FROM deliveries d
                                 WHERE d.request_id = m.request_id AND d.delivered_ms IS NULL)",
            upto,
        )
    }

    fn delete_push_reached_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM push_reached AS r
              WHERE r.request_id IN (SELECT id FROM requests WHERE seq <= ?1)
                AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = r.delivery_id)",
            upto,
        )
    }

    fn delete_link_uses_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto(
            "DELETE FROM mail_links_used
              WHERE request_id IN (SELECT id FROM requests WHERE seq <= ?1)",
            upto,
        )
    }

    fn delete_requests_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto("DELETE FROM requests WHERE seq <= ?1", upto)
    }

    fn delete_events_upto(&mut self, upto: i64) -> Result<u64> {
        self.delete_upto("DELETE FROM events WHERE seq <= ?1", upto)
    }

    fn delete_prune_guard(&mut self) -> Result<()> {
        self.0.execute("DELETE FROM prune_guard", [])?;
        Ok(())
    }

    fn request_id_exists(&mut self, id: &str) -> Result<bool> {
        let mut stmt = self
            .0
            .prepare_cached("SELECT 1 FROM requests WHERE id = ?1 LIMIT 1")?;
        Ok(stmt.query_row([id], |_| Ok(())).optional()?.is_some())
    }
}
