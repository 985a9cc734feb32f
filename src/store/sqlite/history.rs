//! The audit queries: the request history with filters, and the figures of `stats`.
//!
//! Filters become one SQL statement with bound parameters over indexed columns
//! (`requests_agent`, `requests_created`, `requests_status`), newest first with a limit,
//! so a filtered page stays fast on a large store. Questions and answers of the page are
//! read per row by primary key.

use rusqlite::{params_from_iter, types::Value as SqlValue, Connection};

use crate::clock::{rfc3339, Millis};
use crate::core::lifecycle::Status;
use crate::error::Result;
use crate::protocol::Decision;
use crate::store::types::{
    HistoryFilter, HistoryQuestion, HistoryRow, OldestOpen, Stats, WaitStats,
};
use crate::store::waits::wait_stats;

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

/// The history, newest first.
pub fn history(conn: &Connection, f: &HistoryFilter, now: Millis) -> Result<Vec<HistoryRow>> {
    let mut sql = String::from(
        "SELECT r.seq, r.id, r.context, r.agent_id, r.agent_lineage, r.created_ms, r.finished_ms, r.status,
                r.error_code, r.decision, r.provider
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

    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(params_from_iter(args.iter()), |r| {
        let status: String = r.get(7)?;
        let decision: Option<String> = r.get(9)?;
        let created: Millis = r.get(5)?;
        let finished: Option<Millis> = r.get(6)?;
        Ok((
            r.get::<_, i64>(0)?,
            HistoryRow {
                id: r.get(1)?,
                context: r.get(2)?,
                agent: r.get(3)?,
                lineage: r.get(4)?,
                created_at: rfc3339(created),
                finished_at: finished.map(rfc3339),
                // A clock that stepped back must not make a negative wait.
                wait_ms: (finished.unwrap_or(now) - created).max(0),
                status: Status::parse(&status).unwrap_or(Status::Rejected),
                code: r.get(8)?,
                decision: decision.as_deref().and_then(Decision::parse),
                provider: r.get(10)?,
                questions: Vec::new(),
            },
        ))
    })?;
    let mut out = Vec::new();
    let mut q_stmt = conn.prepare_cached(
        "SELECT qid, question, intent_kind, selected, custom, decision FROM questions WHERE request_seq = ?1 ORDER BY idx",
    )?;
    for row in rows {
        let (seq, mut h) = row?;
        let qs = q_stmt.query_map([seq], |r| {
            let selected: Option<String> = r.get(3)?;
            let decision: Option<String> = r.get(5)?;
            Ok(HistoryQuestion {
                id: r.get(0)?,
                question: r.get(1)?,
                intent: r.get(2)?,
                selected: selected.and_then(|s| serde_json::from_str(&s).ok()),
                custom: r.get(4)?,
                decision: decision.as_deref().and_then(Decision::parse),
            })
        })?;
        h.questions = qs.collect::<rusqlite::Result<_>>()?;
        out.push(h);
    }
    Ok(out)
}

/// Answer waits grouped by context and by provider, in one pass over the answered
/// requests (through `requests_status`) and sorted in memory: a SQL `ORDER BY` over a
/// million rows, twice, was most of `stats`.
#[allow(clippy::type_complexity)]
fn wait_groups(conn: &Connection, since: Millis) -> Result<(Vec<WaitStats>, Vec<WaitStats>)> {
    let mut stmt = conn.prepare_cached(
        "SELECT context, provider, MAX(finished_ms - created_ms, 0) FROM requests INDEXED BY requests_answered_waits
         WHERE status = 'answered' AND created_ms >= ?1",
    )?;
    let mut rows = stmt.query([since])?;
    let mut by_context: std::collections::BTreeMap<String, Vec<Millis>> = Default::default();
    let mut by_provider: std::collections::BTreeMap<String, Vec<Millis>> = Default::default();
    while let Some(r) = rows.next()? {
        let wait: Millis = r.get(2)?;
        let context: String = r.get(0)?;
        match by_context.get_mut(&context) {
            Some(v) => v.push(wait),
            None => {
                by_context.insert(context, vec![wait]);
            }
        }
        if let Some(p) = r.get::<_, Option<String>>(1)? {
            match by_provider.get_mut(&p) {
                Some(v) => v.push(wait),
                None => {
                    by_provider.insert(p, vec![wait]);
                }
            }
        }
    }
    Ok((wait_stats(by_context), wait_stats(by_provider)))
}

/// Compute the stats for requests created at or after `since` (open-request figures are
/// about now, whatever the window).
pub fn stats(conn: &Connection, since: Option<Millis>, now: Millis) -> Result<Stats> {
    let since = since.unwrap_or(i64::MIN);
    let pairs = |sql: &str| -> Result<std::collections::BTreeMap<String, i64>> {
        let mut stmt = conn.prepare(sql)?;
        let rows = stmt.query_map([since], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    let by_status = pairs(
        "SELECT status, COUNT(*) FROM requests WHERE created_ms >= ?1 GROUP BY status ORDER BY status",
    )?;
    // Cancelled requests always carry ASK_CANCELLED and aborted ones ASK_ABORTED (the
    // store writes no other code for them), so only rejections need reading by code.
    let mut by_code = pairs(
        "SELECT error_code, COUNT(*) FROM requests INDEXED BY requests_status
         WHERE status = 'rejected' AND created_ms >= ?1 AND error_code IS NOT NULL
         GROUP BY error_code ORDER BY error_code",
    )?;
    for (status, code) in [("cancelled", "ASK_CANCELLED"), ("aborted", "ASK_ABORTED")] {
        if let Some(n) = by_status.get(status).copied().filter(|n| *n > 0) {
            *by_code.entry(code.to_string()).or_insert(0) += n;
        }
    }
    let total = by_status.values().sum();
    // Without a window the decisions index alone answers; with one, each decided
    // question's request is looked up for its creation time.
    let decisions_sql = if since == i64::MIN {
        "SELECT COALESCE(SUM(decision = 'approved'), 0), COALESCE(SUM(decision = 'declined'), 0)
         FROM questions INDEXED BY questions_decision WHERE decision IS NOT NULL AND ?1 = ?1"
    } else {
        "SELECT COALESCE(SUM(q.decision = 'approved'), 0), COALESCE(SUM(q.decision = 'declined'), 0)
         FROM questions q INDEXED BY questions_decision JOIN requests r ON r.seq = q.request_seq
         WHERE q.decision IS NOT NULL AND r.created_ms >= ?1"
    };
    let (approved, declined): (i64, i64) =
        conn.query_row(decisions_sql, [since], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let (wait_by_context, wait_by_provider) = wait_groups(conn, since)?;
    let open: i64 = conn.query_row(
        "SELECT COUNT(*) FROM requests WHERE status IN ('pending', 'claimed')",
        [],
        |r| r.get(0),
    )?;
    let oldest_open = conn
        .query_row(
            "SELECT id, created_ms FROM requests WHERE status IN ('pending', 'claimed') ORDER BY created_ms, seq LIMIT 1",
            [],
            |r| Ok((r.get::<_, String>(0)?, r.get::<_, Millis>(1)?)),
        )
        .map(|(id, c)| {
            Some(OldestOpen {
                id,
                created_at: rfc3339(c),
                waiting_ms: now - c,
            })
        })
        .or_else(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => Ok(None),
            e => Err(e),
        })?;
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
pub fn open_counts(conn: &Connection) -> Result<crate::store::OpenCounts> {
    let mut stmt = conn.prepare_cached(
        "SELECT status, context, COUNT(*) FROM requests INDEXED BY requests_status
         WHERE status IN ('pending', 'claimed') GROUP BY status, context ORDER BY status, context",
    )?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    let by_status_context = rows.collect::<rusqlite::Result<_>>()?;
    let oldest_pending_ms = conn.query_row(
        "SELECT MIN(created_ms) FROM requests INDEXED BY requests_status WHERE status = 'pending'",
        [],
        |r| r.get(0),
    )?;
    Ok(crate::store::OpenCounts {
        by_status_context,
        oldest_pending_ms,
    })
}

impl crate::store::driver::AuditStatements for crate::store::sqlite::sql::Sql<'_, '_> {}
