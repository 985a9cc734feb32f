//! The history's reads on SQLite ([`crate::store::driver::HistoryReads`]): what the rows
//! mean is [`crate::store::queue::history`]; here are the SQL and the row mapping.
//!
//! Filters become one SQL statement with bound parameters over indexed columns
//! (`requests_agent`, `requests_created`, `requests_status`), newest first with a limit,
//! so a filtered page stays fast on a large store. Questions and answers of the page are
//! read per row by primary key.

use std::collections::BTreeMap;

use rusqlite::{params_from_iter, types::Value as SqlValue, OptionalExtension};

use super::tx::SqlRead;
use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::history::{HistoryQuestionRecord, HistoryReads, HistoryRecord};
use crate::store::types::HistoryFilter;

fn like_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('%');
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// The history's statement for `f` and its parameters.
fn history_sql(f: &HistoryFilter) -> (String, Vec<SqlValue>) {
    let mut sql = String::from(
        "SELECT r.seq, r.id, r.context, r.agent_id, r.agent_lineage, r.created_ms, r.finished_ms, r.status,
                r.error_code, r.decision, r.provider,
                CASE WHEN r.quorum IS NULL THEN NULL ELSE (
                    SELECT json_group_array(json_object('voter', v.voter, 'person', v.person,
                                                        'decision', v.decision))
                    FROM (SELECT * FROM votes WHERE request_seq = r.seq ORDER BY created_ms, voter) v) END
         FROM requests r WHERE 1 = 1",
    );
    let mut args: Vec<SqlValue> = Vec::new();
    let mut push = |sql: &mut String, clause: &str, v: SqlValue| {
        sql.push_str(clause);
        args.push(v);
    };
    if let Some(a) = &f.agent {
        push(&mut sql, " AND r.agent_id = ?", a.clone().into());
    }
    if !f.contexts.is_empty() {
        push(
            &mut sql,
            " AND r.context IN (SELECT value FROM json_each(?))",
            serde_json::Value::from(f.contexts.clone())
                .to_string()
                .into(),
        );
    }
    if let Some(p) = &f.provider {
        push(&mut sql, " AND r.provider = ?", p.clone().into());
    }
    if let Some(s) = f.status {
        push(&mut sql, " AND r.status = ?", s.as_str().to_string().into());
    }
    if let Some(c) = &f.code {
        push(&mut sql, " AND r.error_code = ?", c.clone().into());
    }
    if let Some(i) = &f.intent {
        push(
            &mut sql,
            " AND EXISTS (SELECT 1 FROM questions q WHERE q.request_seq = r.seq AND q.intent_kind = ?)",
            i.clone().into(),
        );
    }
    if let Some(d) = f.decision {
        push(
            &mut sql,
            " AND EXISTS (SELECT 1 FROM questions q WHERE q.request_seq = r.seq AND q.decision = ?)",
            d.as_str().to_string().into(),
        );
    }
    if let Some(s) = f.since {
        push(&mut sql, " AND r.created_ms >= ?", s.into());
    }
    if let Some(u) = f.until {
        push(&mut sql, " AND r.created_ms < ?", u.into());
    }
    if let Some(g) = &f.grep {
        push(
            &mut sql,
            " AND EXISTS (SELECT 1 FROM questions q WHERE q.request_seq = r.seq AND q.question LIKE ? ESCAPE '\\')",
            like_escape(g).into(),
        );
    }
    sql.push_str(" ORDER BY r.created_ms DESC, r.seq DESC LIMIT ?");
    args.push(f.limit.unwrap_or(-1).into());
    (sql, args)
}

impl SqlRead<'_> {
    fn pairs_since(&self, sql: &str, since: Millis) -> Result<BTreeMap<String, i64>> {
        let mut stmt = self.0.prepare(sql)?;
        let rows = stmt.query_map([since], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

impl HistoryReads for SqlRead<'_> {
    fn history_rows(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRecord>> {
        let (sql, args) = history_sql(filter);
        let mut stmt = self.0.prepare(&sql)?;
        let rows = stmt.query_map(params_from_iter(args.iter()), |r| {
            Ok(HistoryRecord {
                seq: r.get(0)?,
                id: r.get(1)?,
                context: r.get(2)?,
                agent: r.get(3)?,
                lineage: r.get(4)?,
                created_ms: r.get(5)?,
                finished_ms: r.get(6)?,
                status: r.get(7)?,
                code: r.get(8)?,
                decision: r.get(9)?,
                provider: r.get(10)?,
                votes: r.get(11)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn questions_of_rows(&mut self, seqs: &[i64]) -> Result<Vec<Vec<HistoryQuestionRecord>>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT qid, question, intent_kind, selected, custom, decision FROM questions WHERE request_seq = ?1 ORDER BY idx",
        )?;
        let mut out = Vec::with_capacity(seqs.len());
        for seq in seqs {
            let qs = stmt.query_map([seq], |r| {
                Ok(HistoryQuestionRecord {
                    qid: r.get(0)?,
                    question: r.get(1)?,
                    intent: r.get(2)?,
                    selected: r.get(3)?,
                    custom: r.get(4)?,
                    decision: r.get(5)?,
                })
            })?;
            out.push(qs.collect::<rusqlite::Result<_>>()?);
        }
        Ok(out)
    }

    fn count_requests_by_status_since(&mut self, since: Millis) -> Result<BTreeMap<String, i64>> {
        self.pairs_since(
            "SELECT status, COUNT(*) FROM requests WHERE created_ms >= ?1 GROUP BY status ORDER BY status",
            since,
        )
    }

    fn count_rejections_by_code_since(&mut self, since: Millis) -> Result<BTreeMap<String, i64>> {
        self.pairs_since(
            "SELECT error_code, COUNT(*) FROM requests INDEXED BY requests_status
             WHERE status = 'rejected' AND created_ms >= ?1 AND error_code IS NOT NULL
             GROUP BY error_code ORDER BY error_code",
            since,
        )
    }

    fn count_decisions_since(&mut self, since: Millis) -> Result<(i64, i64)> {
        // Without a window the decisions index alone answers; with one, each decided
        // question's request is looked up for its creation time.
        let sql = if since == Millis::MIN {
            "SELECT COALESCE(SUM(decision = 'approved'), 0), COALESCE(SUM(decision = 'declined'), 0)
             FROM questions INDEXED BY questions_decision WHERE decision IS NOT NULL AND ?1 = ?1"
        } else {
            "SELECT COALESCE(SUM(q.decision = 'approved'), 0), COALESCE(SUM(q.decision = 'declined'), 0)
             FROM questions q INDEXED BY questions_decision JOIN requests r ON r.seq = q.request_seq
             WHERE q.decision IS NOT NULL AND r.created_ms >= ?1"
        };
        Ok(self
            .0
            .query_row(sql, [since], |r| Ok((r.get(0)?, r.get(1)?)))?)
    }

    fn each_answered_wait_since(
        &mut self,
        since: Millis,
        visit: &mut dyn FnMut(String, Option<String>, Millis),
    ) -> Result<()> {
        let mut stmt = self.0.prepare_cached(
            "SELECT context, provider, MAX(finished_ms - created_ms, 0) FROM requests INDEXED BY requests_answered_waits
             WHERE status = 'answered' AND created_ms >= ?1",
        )?;
        let mut rows = stmt.query([since])?;
        while let Some(r) = rows.next()? {
            visit(r.get(0)?, r.get(1)?, r.get(2)?);
        }
        Ok(())
    }

    fn count_open_requests(&mut self) -> Result<i64> {
        Ok(self.0.query_row(
            "SELECT COUNT(*) FROM requests WHERE status IN ('pending', 'claimed')",
            [],
            |r| r.get(0),
        )?)
    }

    fn oldest_open_request(&mut self) -> Result<Option<(String, Millis)>> {
        Ok(self
            .0
            .query_row(
                "SELECT id, created_ms FROM requests WHERE status IN ('pending', 'claimed') ORDER BY created_ms, seq LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?)
    }

    fn count_open_by_status_context(&mut self) -> Result<Vec<(String, String, i64)>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT status, context, COUNT(*) FROM requests INDEXED BY requests_status
             WHERE status IN ('pending', 'claimed') GROUP BY status, context ORDER BY status, context",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn oldest_pending_created_ms(&mut self) -> Result<Option<Millis>> {
        Ok(self.0.query_row(
            "SELECT MIN(created_ms) FROM requests INDEXED BY requests_status WHERE status = 'pending'",
            [],
            |r| r.get(0),
        )?)
    }
}
