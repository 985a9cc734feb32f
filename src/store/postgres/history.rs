//! The audit queries: the request history with filters, and the figures of `stats` —
//! the same results as the SQLite backend's (`store::sqlite::history`), written for
//! PostgreSQL.
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

use crate::clock::{rfc3339, Millis};
use crate::core::lifecycle::Status;
use crate::error::Result;
use crate::protocol::Decision;
use crate::store::types::{
    HistoryFilter, HistoryQuestion, HistoryRow, OldestOpen, Stats, WaitStats,
};
use crate::store::waits::wait_stats;

/// ASCII lower-casing, nothing else (SQLite's `LIKE` folds exactly these).
const ASCII_LOWER: &str =
    "translate({}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')";

fn ascii_lower(expr: &str) -> String {
    ASCII_LOWER.replace("{}", expr)
}

/// The history, newest first.
pub fn history(
    c: &mut impl GenericClient,
    f: &HistoryFilter,
    now: Millis,
) -> Result<Vec<HistoryRow>> {
    let mut sql = String::from(
        "SELECT r.seq, r.id, r.context, r.agent_id, r.agent_lineage, r.created_ms, r.finished_ms, r.status,
                r.error_code, r.decision, r.provider
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

    let rows = c.query(&sql, &args)?;
    let q_stmt = c.prepare(
        "SELECT qid, question, intent_kind, selected, custom, decision FROM questions
         WHERE request_seq = $1 ORDER BY idx",
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let seq: i64 = r.try_get(0)?;
        let status: String = r.try_get(7)?;
        let decision: Option<String> = r.try_get(9)?;
        let created: Millis = r.try_get(5)?;
        let finished: Option<Millis> = r.try_get(6)?;
        let mut questions = Vec::new();
        for q in c.query(&q_stmt, &[&seq])? {
            let selected: Option<String> = q.try_get(3)?;
            let decision: Option<String> = q.try_get(5)?;
            questions.push(HistoryQuestion {
                id: q.try_get(0)?,
                question: q.try_get(1)?,
                intent: q.try_get(2)?,
                selected: selected.and_then(|s| serde_json::from_str(&s).ok()),
                custom: q.try_get(4)?,
                decision: decision.as_deref().and_then(Decision::parse),
            });
        }
        out.push(HistoryRow {
            id: r.try_get(1)?,
            context: r.try_get(2)?,
            agent: r.try_get(3)?,
            lineage: r.try_get(4)?,
            created_at: rfc3339(created),
            finished_at: finished.map(rfc3339),
            // A clock that stepped back must not make a negative wait.
            wait_ms: (finished.unwrap_or(now) - created).max(0),
            status: Status::parse(&status).unwrap_or(Status::Rejected),
            code: r.try_get(8)?,
            decision: decision.as_deref().and_then(Decision::parse),
            provider: r.try_get(10)?,
            questions,
        });
    }
    Ok(out)
}

/// Answer waits grouped by context and by provider, in one pass over the answered
/// requests, sorted in memory (as SQLite's).
fn wait_groups(
    c: &mut impl GenericClient,
    since: Millis,
) -> Result<(Vec<WaitStats>, Vec<WaitStats>)> {
    let rows = c.query(
        "SELECT context, provider, GREATEST(finished_ms - created_ms, 0) FROM requests
         WHERE status = 'answered' AND created_ms >= $1",
        &[&since],
    )?;
    let mut by_context: BTreeMap<String, Vec<Millis>> = BTreeMap::new();
    let mut by_provider: BTreeMap<String, Vec<Millis>> = BTreeMap::new();
    for r in rows {
        let wait: Millis = r.try_get(2)?;
        by_context.entry(r.try_get(0)?).or_default().push(wait);
        if let Some(p) = r.try_get::<_, Option<String>>(1)? {
            by_provider.entry(p).or_default().push(wait);
        }
    }
    Ok((wait_stats(by_context), wait_stats(by_provider)))
}

/// (key, count) rows of `sql` over `$1 = since`.
fn pairs(c: &mut impl GenericClient, since: Millis, sql: &str) -> Result<BTreeMap<String, i64>> {
    let mut m = BTreeMap::new();
    for r in c.query(sql, &[&since])? {
        m.insert(r.try_get(0)?, r.try_get(1)?);
    }
    Ok(m)
}

/// Compute the stats for requests created at or after `since` (open-request figures are
/// about now, whatever the window).
pub fn stats(c: &mut impl GenericClient, since: Option<Millis>, now: Millis) -> Result<Stats> {
    let since = since.unwrap_or(i64::MIN);
    let by_status = pairs(
        c,
        since,
        "SELECT status, COUNT(*) FROM requests WHERE created_ms >= $1 GROUP BY status",
    )?;
    // Cancelled requests always carry ASK_CANCELLED and aborted ones ASK_ABORTED (the
    // store writes no other code for them), so only rejections need reading by code.
    let mut by_code = pairs(
        c,
        since,
        "SELECT error_code, COUNT(*) FROM requests
         WHERE status = 'rejected' AND created_ms >= $1 AND error_code IS NOT NULL
         GROUP BY error_code",
    )?;
    for (status, code) in [("cancelled", "ASK_CANCELLED"), ("aborted", "ASK_ABORTED")] {
        if let Some(n) = by_status.get(status).copied().filter(|n| *n > 0) {
            *by_code.entry(code.to_string()).or_insert(0) += n;
        }
    }
    let total = by_status.values().sum();
    let d = c.query_one(
        "SELECT COUNT(*) FILTER (WHERE q.decision = 'approved'),
                COUNT(*) FILTER (WHERE q.decision = 'declined')
         FROM questions q JOIN requests r ON r.seq = q.request_seq
         WHERE q.decision IS NOT NULL AND r.created_ms >= $1",
        &[&since],
    )?;
    let (approved, declined): (i64, i64) = (d.try_get(0)?, d.try_get(1)?);
    let (wait_by_context, wait_by_provider) = wait_groups(c, since)?;
    let open: i64 = c
        .query_one(
            "SELECT COUNT(*) FROM requests WHERE status IN ('pending', 'claimed')",
            &[],
        )?
        .try_get(0)?;
    let oldest_open = match c.query_opt(
        "SELECT id, created_ms FROM requests WHERE status IN ('pending', 'claimed')
         ORDER BY created_ms, seq LIMIT 1",
        &[],
    )? {
        Some(r) => {
            let created: Millis = r.try_get(1)?;
            Some(OldestOpen {
                id: r.try_get(0)?,
                created_at: rfc3339(created),
                waiting_ms: now - created,
            })
        }
        None => None,
    };
    Ok(Stats {
        total,
        by_status,
        by_code,
        wait_by_context,
        wait_by_provider,
        approved,
        declined,
        approval_rate: (approved + declined > 0)
            .then(|| approved as f64 / (approved + declined) as f64),
        open,
        oldest_open,
    })
}

/// The open requests by status and context, and the oldest pending one's creation.
pub fn open_counts(c: &mut impl GenericClient) -> Result<crate::store::OpenCounts> {
    let mut by_status_context = Vec::new();
    for r in c.query(
        "SELECT status, context, COUNT(*) FROM requests
         WHERE status IN ('pending', 'claimed') GROUP BY status, context ORDER BY status, context",
        &[],
    )? {
        by_status_context.push((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?));
    }
    let oldest_pending_ms = c
        .query_one(
            "SELECT MIN(created_ms) FROM requests WHERE status = 'pending'",
            &[],
        )?
        .try_get(0)?;
    Ok(crate::store::OpenCounts {
        by_status_context,
        oldest_pending_ms,
    })
}

impl crate::store::driver::AuditStatements for crate::store::postgres::tx::Tx<'_> {}
