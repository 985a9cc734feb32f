//! `audit verify`'s reads on SQLite ([`crate::store::driver::AuditReads`]): the checks and
//! their order are [`crate::store::queue::audit`]; here are the SQL, the row mapping, the
//! file's own integrity check (`PRAGMA integrity_check`). All of it runs in the driver's
//! snapshot (one read transaction, [`crate::store::driver::Driver::snapshot`]).

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension};

use super::events;
use super::requests::{self, ListFilter};
use super::tx::SqlRead;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::audit::{AuditReads, StoredEvent};
use crate::store::queue;
use crate::store::records::QuestionRow;
pub use crate::store::records::RecordBreak;

/// SQLite's own check of the file: `None` when it says ok, else its first complaints.
pub fn integrity(conn: &Connection) -> Result<Option<String>> {
    let mut stmt = conn.prepare("PRAGMA integrity_check")?;
    let first: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .take(5)
        .collect::<rusqlite::Result<_>>()?;
    if first.len() == 1 && first[0] == "ok" {
        Ok(None)
    } else {
        Ok(Some(first.join("; ")))
    }
}

/// Compare every request row and its questions with the log
/// ([`queue::audit::check_records`]). Returns the number of rows checked and the first
/// disagreement.
pub fn check_records(conn: &Connection) -> Result<(i64, Option<RecordBreak>)> {
    let all = events::all(conn)?;
    queue::audit::check_records(&mut SqlRead(conn), &all)
}

impl AuditReads for SqlRead<'_> {
    fn storage_check_failure(&mut self) -> Result<Option<String>> {
        Ok(integrity(self.0)?
            .map(|p| format!("the database file fails SQLite's integrity check: {p}")))
    }

    fn count_prune_guard_rows(&mut self) -> Result<i64> {
        Ok(self
            .0
            .query_row("SELECT COUNT(*) FROM prune_guard", [], |r| r.get(0))?)
    }

    fn oldest_event_seq(&mut self) -> Result<Option<i64>> {
        Ok(self
            .0
            .query_row("SELECT MIN(seq) FROM events", [], |r| r.get(0))?)
    }

    fn newest_checkpoint_data(&mut self) -> Result<Option<serde_json::Value>> {
        events::newest_checkpoint_data(self.0)
    }

    fn all_stored_events(&mut self) -> Result<Vec<StoredEvent>> {
        let mut stmt = self.0.prepare(
            "SELECT seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash
             FROM events ORDER BY seq",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push(StoredEvent {
                event: events::row_to_event(r)?,
                data: r.get(7)?,
            });
        }
        Ok(out)
    }

    fn event_hash_at(&mut self, seq: i64) -> Result<Option<String>> {
        Ok(self
            .0
            .query_row("SELECT hash FROM events WHERE seq = ?1", [seq], |r| {
                r.get(0)
            })
            .optional()?)
    }

    fn newest_event_seq(&mut self) -> Result<i64> {
        events::head(self.0)
    }

    fn all_requests_oldest_first(&mut self) -> Result<Vec<RequestRow>> {
        requests::list(
            self.0,
            &ListFilter {
                oldest_first: true,
                ..Default::default()
            },
        )
    }

    fn all_questions(&mut self) -> Result<Vec<(i64, QuestionRow)>> {
        let mut stmt = self.0.prepare(
            "SELECT request_seq, idx, qid, question, header, detail, multi_select, intent_kind,
                    intent_approve, options, selected, custom, decision
             FROM questions ORDER BY request_seq, idx",
        )?;
        let mut rows = stmt.query([])?;
        let mut out = Vec::new();
        while let Some(r) = rows.next()? {
            out.push((
                r.get(0)?,
                QuestionRow {
                    idx: r.get(1)?,
                    qid: r.get(2)?,
                    question: r.get(3)?,
                    header: r.get(4)?,
                    detail: r.get(5)?,
                    multi_select: r.get(6)?,
                    intent_kind: r.get(7)?,
                    intent_approve: r.get(8)?,
                    options: r.get(9)?,
                    selected: r.get(10)?,
                    custom: r.get(11)?,
                    decision: r.get(12)?,
                },
            ));
        }
        Ok(out)
    }

    fn require_provider_by_row(&mut self) -> Result<HashMap<i64, bool>> {
        Ok(self
            .0
            .prepare("SELECT seq, require_provider FROM requests")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?)
    }

    fn all_votes(&mut self) -> Result<Vec<(i64, crate::core::quorum::Vote)>> {
        Ok(self
            .0
            .prepare(
                "SELECT request_seq, voter, answer, decision, created_ms, person, for_person FROM votes
                 ORDER BY request_seq, created_ms, voter",
            )?
            .query_map([], |r| {
                let decision: Option<String> = r.get(3)?;
                Ok((
                    r.get(0)?,
                    crate::core::quorum::Vote {
                        voter: r.get(1)?,
                        person: r.get(5)?,
                        answer: r.get(2)?,
                        decision: decision
                            .as_deref()
                            .and_then(crate::protocol::Decision::parse),
                        at_ms: r.get(4)?,
                        for_person: r.get(6)?,
                    },
                ))
            })?
            .collect::<rusqlite::Result<_>>()?)
    }
}
