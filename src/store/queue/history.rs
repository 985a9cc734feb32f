//! The audit's reads, written once over [`HistoryReads`]: the history page (what a row
//! shows: times as RFC 3339, the wait, the status and decisions parsed) and the figures of
//! `stats` and of the open queue, so that both drivers answer alike (the conformance suite
//! compares them on the same store).
//!
//! A driver turns the filter into its SQL (indexed columns, bound parameters, newest first
//! with a limit) and hands the rows over as stored; the rules of what they mean are here.

use std::collections::BTreeMap;

use crate::clock::{rfc3339, Millis};
use crate::core::lifecycle::Status;
use crate::error::Result;
use crate::protocol::Decision;
use crate::store::driver::history::{HistoryQuestionRecord, HistoryReads, HistoryRecord};
use crate::store::types::{
    HistoryFilter, HistoryQuestion, HistoryRow, OldestOpen, OpenCounts, Stats,
};
use crate::store::waits::wait_stats;

fn question(q: HistoryQuestionRecord) -> HistoryQuestion {
    HistoryQuestion {
        id: q.qid,
        question: q.question,
        intent: q.intent,
        selected: q.selected.and_then(|s| serde_json::from_str(&s).ok()),
        custom: q.custom,
        decision: q.decision.as_deref().and_then(Decision::parse),
    }
}

fn row(r: HistoryRecord, questions: Vec<HistoryQuestionRecord>, now: Millis) -> HistoryRow {
    HistoryRow {
        id: r.id,
        context: r.context,
        agent: r.agent,
        lineage: r.lineage,
        created_at: rfc3339(r.created_ms),
        finished_at: r.finished_ms.map(rfc3339),
        // A clock that stepped back must not make a negative wait.
        wait_ms: (r.finished_ms.unwrap_or(now) - r.created_ms).max(0),
        status: Status::parse(&r.status).unwrap_or(Status::Rejected),
        code: r.code,
        decision: r.decision.as_deref().and_then(Decision::parse),
        provider: r.provider,
        votes: r
            .votes
            .as_deref()
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default(),
        questions: questions.into_iter().map(question).collect(),
    }
}

/// The history matching `filter`, newest first; open requests wait until `now`.
pub fn history(
    db: &mut dyn HistoryReads,
    filter: &HistoryFilter,
    now: Millis,
) -> Result<Vec<HistoryRow>> {
    let rows = db.history_rows(filter)?;
    let seqs: Vec<i64> = rows.iter().map(|r| r.seq).collect();
    let questions = db.questions_of_rows(&seqs)?;
    Ok(rows
        .into_iter()
        .zip(questions)
        .map(|(r, qs)| row(r, qs, now))
        .collect())
}

/// The stats of the requests created at or after `since` (all for `None`); the open-request
/// figures are about `now`, whatever the window.
pub fn stats(db: &mut dyn HistoryReads, since: Option<Millis>, now: Millis) -> Result<Stats> {
    let since = since.unwrap_or(Millis::MIN);
    let by_status = db.count_requests_by_status_since(since)?;
    // Cancelled requests always carry ASK_CANCELLED, aborted ones ASK_ABORTED and expired
    // ones ASK_EXPIRED (the store writes no other code for them), so only rejections need
    // reading by code.
    let mut by_code = db.count_rejections_by_code_since(since)?;
    for (status, code) in [
        ("cancelled", "ASK_CANCELLED"),
        ("aborted", "ASK_ABORTED"),
        ("expired", "ASK_EXPIRED"),
    ] {
        if let Some(n) = by_status.get(status).copied().filter(|n| *n > 0) {
            *by_code.entry(code.to_string()).or_insert(0) += n;
        }
    }
    let total = by_status.values().sum();
    let (approved, declined) = db.count_decisions_since(since)?;
    // Grouped and sorted in memory, in one pass: a SQL `ORDER BY` over a million rows,
    // twice, was most of `stats`.
    let mut by_context: BTreeMap<String, Vec<Millis>> = BTreeMap::new();
    let mut by_provider: BTreeMap<String, Vec<Millis>> = BTreeMap::new();
    db.each_answered_wait_since(since, &mut |context, provider, wait| {
        by_context.entry(context).or_default().push(wait);
        if let Some(p) = provider {
            by_provider.entry(p).or_default().push(wait);
        }
    })?;
    let open = db.count_open_requests()?;
    let oldest_open = db.oldest_open_request()?.map(|(id, created)| OldestOpen {
        id,
        created_at: rfc3339(created),
        waiting_ms: now - created,
    });
    Ok(Stats {
        total,
        by_status,
        by_code,
        wait_by_context: wait_stats(by_context),
        wait_by_provider: wait_stats(by_provider),
        approved,
        declined,
        approval_rate: (approved + declined > 0)
            .then(|| approved as f64 / (approved + declined) as f64),
        open,
        oldest_open,
    })
}

/// The open requests by status and context, and the oldest pending one's creation.
pub fn open_counts(db: &mut dyn HistoryReads) -> Result<OpenCounts> {
    Ok(OpenCounts {
        by_status_context: db.count_open_by_status_context()?,
        oldest_pending_ms: db.oldest_pending_created_ms()?,
    })
}
