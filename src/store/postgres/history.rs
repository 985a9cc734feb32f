//! The history's reads on PostgreSQL ([`crate::store::driver::HistoryReads`]): what the
//! rows mean is [`crate::store::queue::history`], as on SQLite; here are the SQL and the
//! row mapping, written so that the rows are SQLite's.
//!
//! Filters become one SQL statement with bound parameters over the same indexed columns
//! (`requests_agent`, `requests_created`, `requests_status`), newest first with a limit.
//! Two things are spelled differently so that the results stay SQLite's:
//! - the text filter (`--grep`) is a substring match folding ASCII case only, as SQLite's
//!   `LIKE` does: `strpos` over `translate(…, 'A…Z', 'a…z')`, never `ILIKE` (whose case
//!   folding follows the database's locale and would fold `É` too) and so no wildcards to
//!   escape;
//! - `LIMIT NULL` is "no limit" (SQLite's is `LIMIT -1`, and SQLite reads any negative
//!   limit so; PostgreSQL refuses one, so a negative limit is sent as NULL).
//!
//! The planner picks its own indexes (no `INDEXED BY`). Questions and answers of the page
//! are read per row by primary key, as in SQLite.

use std::collections::BTreeMap;

use postgres::types::ToSql;
use postgres::GenericClient;

use super::tx::PgRead;
use crate::clock::Millis;
use crate::core::lifecycle::Status;
use crate::error::Result;
use crate::protocol::Decision;
use crate::store::driver::history::{HistoryQuestionRecord, HistoryReads, HistoryRecord};
use crate::store::types::HistoryFilter;

/// ASCII lower-casing, nothing else (SQLite's `LIKE` folds exactly these).
const ASCII_LOWER: &str =
    "translate({}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')";

fn ascii_lower(expr: &str) -> String {
    ASCII_LOWER.replace("{}", expr)
}

/// The history's rows matching `f` (see [`HistoryReads::history_rows`]).
fn history_rows(c: &mut impl GenericClient, f: &HistoryFilter) -> Result<Vec<HistoryRecord>> {
    let mut sql = String::from(
        "SELECT r.seq, r.id, r.context, r.agent_id, r.agent_lineage, r.created_ms, r.finished_ms, r.status,
                r.error_code, r.decision, r.provider,
                CASE WHEN r.quorum IS NULL THEN NULL ELSE (
                    SELECT COALESCE(json_agg(json_build_object('voter', v.voter, 'person', v.person,
                                                               'decision', v.decision)
                                             ORDER BY v.created_ms, v.voter), '[]')::text
                    FROM votes v WHERE v.request_seq = r.seq) END
         FROM requests r WHERE TRUE",
    );
    let status = f.status.map(Status::as_str);
    let decision = f.decision.map(Decision::as_str);
    let limit = f.limit.filter(|l| *l >= 0);
    let mut args: Vec<&(dyn ToSql + Sync)> = Vec::new();
    // Each clause names its one parameter `$?`, numbered below in order.
    let mut clauses: Vec<(String, &(dyn ToSql + Sync))> = Vec::new();
    if let Some(a) = &f.agent {
        clauses.push((" AND r.agent_id = $?".into(), a));
    }
    if !f.contexts.is_empty() {
        clauses.push((" AND r.context = ANY($?)".into(), &f.contexts));
    }
    if let Some(p) = &f.provider {
        clauses.push((" AND r.provider = $?".into(), p));
    }
    if let Some(s) = &status {
        clauses.push((" AND r.status = $?".into(), s));
    }
    if let Some(code) = &f.code {
        clauses.push((" AND r.error_code = $?".into(), code));
    }
    if let Some(i) = &f.intent {
        clauses.push((
            " AND EXISTS (SELECT 1 FROM questions q WHERE q.request_seq = r.seq AND q.intent_kind = $?)"
                .into(),
            i,
        ));
    }
    if let Some(d) = &decision {
        clauses.push((
            " AND EXISTS (SELECT 1 FROM questions q WHERE q.request_seq = r.seq AND q.decision = $?)"
                .into(),
            d,
        ));
    }
    if let Some(s) = &f.since {
        clauses.push((" AND r.created_ms >= $?".into(), s));
    }
    if let Some(u) = &f.until {
        clauses.push((" AND r.created_ms < $?".into(), u));
    }
    if let Some(g) = &f.grep {
        clauses.push((
            format!(
                " AND EXISTS (SELECT 1 FROM questions q WHERE q.request_seq = r.seq AND strpos({}, {}) > 0)",
                ascii_lower("q.question"),
                ascii_lower("$?::text")
            ),
            g,
        ));
    }
    clauses.push((
        " ORDER BY r.created_ms DESC, r.seq DESC LIMIT $?".into(),
        &limit,
    ));
    for (clause, v) in clauses {
        args.push(v);
        sql.push_str(&clause.replace("$?", &format!("${}", args.len())));
    }

    c.query(&sql, &args)?
        .iter()
        .map(|r| {
            Ok(HistoryRecord {
                seq: r.try_get(0)?,
                id: r.try_get(1)?,
                context: r.try_get(2)?,
                agent: r.try_get(3)?,
                lineage: r.try_get(4)?,
                created_ms: r.try_get(5)?,
                finished_ms: r.try_get(6)?,
                status: r.try_get(7)?,
                code: r.try_get(8)?,
                decision: r.try_get(9)?,
                provider: r.try_get(10)?,
                votes: r.try_get(11)?,
            })
        })
        .collect()
}

impl<C: GenericClient> PgRead<'_, C> {
    /// (key, count) rows of `sql` over `$1 = since`.
    fn pairs_since(&mut self, sql: &str, since: Millis) -> Result<BTreeMap<String, i64>> {
        let mut m = BTreeMap::new();
        for r in self.0.query(sql, &[&since])? {
            m.insert(r.try_get(0)?, r.try_get(1)?);
        }
        Ok(m)
    }
}

impl<C: GenericClient> HistoryReads for PgRead<'_, C> {
    fn history_rows(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRecord>> {
        history_rows(self.0, filter)
    }

    fn questions_of_rows(&mut self, seqs: &[i64]) -> Result<Vec<Vec<HistoryQuestionRecord>>> {
        let stmt = self.0.prepare(
            "SELECT qid, question, intent_kind, selected, custom, decision FROM questions
             WHERE request_seq = $1 ORDER BY idx",
        )?;
        let mut out = Vec::with_capacity(seqs.len());
        for seq in seqs {
            let mut questions = Vec::new();
            for q in self.0.query(&stmt, &[seq])? {
                questions.push(HistoryQuestionRecord {
                    qid: q.try_get(0)?,
                    question: q.try_get(1)?,
                    intent: q.try_get(2)?,
                    selected: q.try_get(3)?,
                    custom: q.try_get(4)?,
                    decision: q.try_get(5)?,
                });
            }
            out.push(questions);
        }
        Ok(out)
    }

    fn count_requests_by_status_since(&mut self, since: Millis) -> Result<BTreeMap<String, i64>> {
        self.pairs_since(
            "SELECT status, COUNT(*) FROM requests WHERE created_ms >= $1 GROUP BY status",
            since,
        )
    }

    fn count_rejections_by_code_since(&mut self, since: Millis) -> Result<BTreeMap<String, i64>> {
        self.pairs_since(
            "SELECT error_code, COUNT(*) FROM requests
             WHERE status = 'rejected' AND created_ms >= $1 AND error_code IS NOT NULL
             GROUP BY error_code",
            since,
        )
    }

    fn count_decisions_since(&mut self, since: Millis) -> Result<(i64, i64)> {
        let d = self.0.query_one(
            "SELECT COUNT(*) FILTER (WHERE q.decision = 'approved'),
                    COUNT(*) FILTER (WHERE q.decision = 'declined')
             FROM questions q JOIN requests r ON r.seq = q.request_seq
             WHERE q.decision IS NOT NULL AND r.created_ms >= $1",
            &[&since],
        )?;
        Ok((d.try_get(0)?, d.try_get(1)?))
    }

    fn each_answered_wait_since(
        &mut self,
        since: Millis,
        visit: &mut dyn FnMut(String, Option<String>, Millis),
    ) -> Result<()> {
        for r in self.0.query(
            "SELECT context, provider, GREATEST(finished_ms - created_ms, 0) FROM requests
             WHERE status = 'answered' AND created_ms >= $1",
            &[&since],
        )? {
            visit(r.try_get(0)?, r.try_get(1)?, r.try_get(2)?);
        }
        Ok(())
    }

    fn count_open_requests(&mut self) -> Result<i64> {
        Ok(self
            .0
            .query_one(
                "SELECT COUNT(*) FROM requests WHERE status IN ('pending', 'claimed')",
                &[],
            )?
            .try_get(0)?)
    }

    fn oldest_open_request(&mut self) -> Result<Option<(String, Millis)>> {
        self.0
            .query_opt(
                "SELECT id, created_ms FROM requests WHERE status IN ('pending', 'claimed')
                 ORDER BY created_ms, seq LIMIT 1",
                &[],
            )?
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .transpose()
    }

    fn count_open_by_status_context(&mut self) -> Result<Vec<(String, String, i64)>> {
        self.0
            .query(
                "SELECT status, context, COUNT(*) FROM requests
                 WHERE status IN ('pending', 'claimed') GROUP BY status, context ORDER BY status, context",
                &[],
            )?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect()
    }

    fn oldest_pending_created_ms(&mut self) -> Result<Option<Millis>> {
        Ok(self
            .0
            .query_one(
                "SELECT MIN(created_ms) FROM requests WHERE status = 'pending'",
                &[],
            )?
            .try_get(0)?)
    }
}
