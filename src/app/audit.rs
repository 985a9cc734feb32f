//! The audit: history, stats, the events of a request, verifying the record, exporting it.

use std::path::PathBuf;

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::protocol::error::Code;
use crate::store::{Anchor, Event, HistoryFilter, HistoryRow, Store, Verified};

/// The events of request `id`; `NOT_FOUND` when there is no such request at all.
pub fn events(store: &mut Store, id: &str) -> Result<Vec<Event>> {
    let list = store.events(id)?;
    if list.is_empty() && store.get_any(id)?.is_none() {
        return Err(Error::NotFound(id.to_string()));
    }
    Ok(list)
}

/// Verify the record against `anchors`; a break is `AUDIT_BROKEN`.
pub fn verify(store: &mut Store, anchors: &[(PathBuf, Anchor)]) -> Result<Verified> {
    let v = store.verify(anchors)?;
    match &v.broken {
        Some(problem) => Err(Error::question(Code::AuditBroken, problem.clone())),
        None => Ok(v),
    }
}

/// Wait-time percentiles of the requests answered among those created on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayWait {
    /// The day, `YYYY-MM-DD` (UTC).
    pub day: String,
    /// Answered requests counted.
    pub count: usize,
    /// Median wait in ms (nearest rank).
    pub p50_ms: Millis,
    /// 90th percentile.
    pub p90_ms: Millis,
    /// 99th percentile.
    pub p99_ms: Millis,
}

/// The backlog (requests open) just after a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BacklogPoint {
    /// When (ms since the epoch).
    pub at_ms: Millis,
    /// Requests accepted and not yet final then.
    pub open: i64,
}

/// What the history page draws: wait time per day and the backlog over time, over the
/// rows the filter selects (so the pictures and the table agree).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Charts {
    /// One entry per day with answered requests, oldest first.
    pub waits: Vec<DayWait>,
    /// The backlog at each acceptance and each end, oldest first, up to `now`.
    pub backlog: Vec<BacklogPoint>,
}

fn nearest_rank(sorted: &[Millis], p: usize) -> Millis {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank.min(sorted.len()) - 1]
}

fn ms_of(rfc3339: &str) -> Option<Millis> {
    rfc3339
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

/// The charts of `rows` (see [`Charts`]); rejected inputs are no requests and are left out.
pub fn charts_of(rows: &[HistoryRow], now: Millis) -> Charts {
    use crate::store::Status;
    let mut by_day: std::collections::BTreeMap<String, Vec<Millis>> = Default::default();
    let mut steps: Vec<(Millis, i64)> = Vec::new();
    for r in rows.iter().filter(|r| r.status != Status::Rejected) {
        let Some(created) = ms_of(&r.created_at) else {
            continue;
        };
        steps.push((created, 1));
        if let Some(end) = r.finished_at.as_deref().and_then(ms_of) {
            steps.push((end, -1));
        }
        if r.status == Status::Answered {
            let day = crate::clock::rfc3339(created)[..10].to_string();
            by_day.entry(day).or_default().push(r.wait_ms);
        }
    }
    let waits = by_day
        .into_iter()
        .map(|(day, mut w)| {
            w.sort_unstable();
            DayWait {
                count: w.len(),
                p50_ms: nearest_rank(&w, 50),
                p90_ms: nearest_rank(&w, 90),
                p99_ms: nearest_rank(&w, 99),
                day,
            }
        })
        .collect();
    // Ends before starts at the same moment.
    steps.sort_unstable();
    let mut open = 0;
    let mut backlog: Vec<BacklogPoint> = Vec::with_capacity(steps.len() + 1);
    for (at_ms, d) in steps {
        open += d;
        match backlog.last_mut() {
            Some(last) if last.at_ms == at_ms => last.open = open,
            _ => backlog.push(BacklogPoint { at_ms, open }),
        }
    }
    if let Some(last) = backlog.last().copied() {
        if last.at_ms < now {
            backlog.push(BacklogPoint { at_ms: now, open });
        }
    }
    Charts { waits, backlog }
}

/// The history by filter and its charts, in one read.
pub fn history_with_charts(
    store: &mut Store,
    filter: &HistoryFilter,
    now: Millis,
) -> Result<(Vec<HistoryRow>, Charts)> {
    let rows = store.history(filter)?;
    let charts = charts_of(&rows, now);
    Ok((rows, charts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Status;

    fn row(created: &str, finished: Option<&str>, status: Status, wait_ms: Millis) -> HistoryRow {
        HistoryRow {
            id: Some("r".into()),
            context: "default".into(),
            agent: None,
            lineage: None,
            created_at: created.into(),
            finished_at: finished.map(str::to_string),
            wait_ms,
            status,
            code: None,
            decision: None,
            provider: None,
            votes: Vec::new(),
            questions: Vec::new(),
        }
    }

    #[test]
    fn waits_per_day_and_the_backlog() {
        let rows = vec![
            row(
                "2026-11-30T10:00:00Z",
                Some("2026-11-30T10:01:00Z"),
                Status::Answered,
                60_000,
            ),
            row(
                "2026-11-30T10:00:30Z",
                Some("2026-11-30T10:10:30Z"),
                Status::Answered,
                600_000,
            ),
            row("2026-12-01T09:00:00Z", None, Status::Pending, 5_000),
            row("2026-12-01T09:00:00Z", None, Status::Rejected, 0),
        ];
        let now = ms_of("2026-12-01T10:00:00Z").unwrap();
        let c = charts_of(&rows, now);
        assert_eq!(c.waits.len(), 1);
        assert_eq!(c.waits[0].day, "2026-11-30");
        assert_eq!((c.waits[0].p50_ms, c.waits[0].p99_ms), (60_000, 600_000));
        let opens: Vec<i64> = c.backlog.iter().map(|p| p.open).collect();
        assert_eq!(opens, vec![1, 2, 1, 0, 1, 1]);
        assert_eq!(c.backlog.last().unwrap().at_ms, now);
    }
}
