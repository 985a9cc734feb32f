//! Feeds and reads: new requests since a position (`watch`, the daemon's hooks), the open
//! queue (`watch` at start, the reviewer's screen), an outcome becoming ready (`wait`),
//! and one request or a list (`show`, `list`).

use crate::clock::now_ms;
use crate::core::audit::EventKind;
use crate::error::Result;
use crate::protocol::Outcome;
use crate::root::Root;
use crate::store::{Event, FeedPos, ListFilter, RequestRow, Status, Store};

/// How many positions one read of [`NewRequests::next_batch`] covers at most.
const BATCH: usize = 512;

/// The high-water mark of requests seen. Positions are the event log's, which both
/// drivers number in commit order, so "every `accepted` event above the last one seen" is
/// exactly the set accepted since, however it arrived (an inbox file, `dshq ask`, another
/// daemon on another host), and none is skipped by a write that committed late.
#[derive(Debug, Clone)]
pub struct NewRequests {
    after: FeedPos,
}

impl NewRequests {
    /// Start after the newest request: only requests accepted from now on are new.
    pub fn from_now(store: &mut Store) -> Result<NewRequests> {
        Ok(NewRequests {
            after: store.events_head()?,
        })
    }

    /// Start after position `after`.
    pub fn after_pos(after: FeedPos) -> NewRequests {
        NewRequests { after }
    }

    /// The position everything up to which has been seen.
    pub fn after(&self) -> FeedPos {
        self.after
    }

    /// The next accepted requests (never rejections) above the mark, oldest first, at
    /// most a batch; advances the mark past everything read, rejections included.
    pub fn next_batch(&mut self, store: &mut Store) -> Result<Vec<RequestRow>> {
        let page = store.feed(self.after, BATCH)?;
        self.after = self.after.max(page.upto);
        Ok(page.requests)
    }

    /// Everything new above the mark (all batches).
    pub fn all(&mut self, store: &mut Store) -> Result<Vec<RequestRow>> {
        let mut out = Vec::new();
        loop {
            let before = self.after;
            out.extend(self.next_batch(store)?);
            if self.after == before {
                return Ok(out);
            }
        }
    }
}

/// The event kinds of a request's life after it was accepted: what `watch` follows.
/// (A rejection is no request; a lease running out shows as `released`, a deadline as
/// `aborted`; a ladder's escalation and expiry as `escalated` and `expired`, its reminder
/// not at all: it changes nothing of the request.)
pub const LIFECYCLE: &[EventKind] = &[
    EventKind::Accepted,
    EventKind::Claimed,
    EventKind::Released,
    EventKind::Answered,
    EventKind::Cancelled,
    EventKind::Aborted,
    EventKind::Escalated,
    EventKind::Expired,
];

/// The feed of request lifecycle events: the event log read from a position on, each
/// event with its request as it is now, filtered in the store's query like `list`.
#[derive(Debug, Clone)]
pub struct RequestEvents {
    after: FeedPos,
    kinds: Vec<EventKind>,
    filter: ListFilter,
}

impl RequestEvents {
    /// Start after the newest event: only what happens from now on. No `kinds`: every
    /// [`LIFECYCLE`] kind.
    pub fn from_now(
        store: &mut Store,
        kinds: &[EventKind],
        filter: ListFilter,
    ) -> Result<RequestEvents> {
        Ok(RequestEvents {
            after: store.events_head()?,
            kinds: if kinds.is_empty() {
                LIFECYCLE.to_vec()
            } else {
                kinds.to_vec()
            },
            filter,
        })
    }

    /// Every matching event above the mark (all batches), oldest first; advances the
    /// mark past everything read.
    pub fn all(&mut self, store: &mut Store) -> Result<Vec<(Event, RequestRow)>> {
        let mut out = Vec::new();
        loop {
            let page = store.request_events(self.after, &self.kinds, &self.filter, BATCH)?;
            out.extend(page.events);
            if page.upto <= self.after {
                return Ok(out);
            }
            self.after = page.upto;
        }
    }
}

/// What [`events_after`] read: the lifecycle events after a position, and how far the log
/// goes on beyond them.
#[derive(Debug, Clone, Default)]
pub struct Missed {
    /// Lifecycle events of every request, oldest first, each with its request as it is now.
    pub events: Vec<(Event, RequestRow)>,
    /// Every log position up to here was read.
    pub upto: FeedPos,
    /// Log positions after `upto` that were not read because `max` was reached.
    pub unread: i64,
}

/// Every request lifecycle event after log position `after`, reading at most about `max`
/// positions (whole pages): what a subscriber that reconnects has missed. The rest, when
/// the log holds more, is counted in [`Missed::unread`] for the caller to report.
pub fn events_after(store: &mut Store, after: FeedPos, max: usize) -> Result<Missed> {
    let head = store.events_head()?;
    let mut out = Missed {
        upto: after,
        ..Missed::default()
    };
    let mut read = 0usize;
    while out.upto < head && read < max {
        let page = store.request_events(out.upto, LIFECYCLE, &ListFilter::default(), BATCH)?;
        if page.upto <= out.upto {
            break;
        }
        read += (page.upto - out.upto) as usize;
        out.events.extend(page.events);
        out.upto = page.upto;
    }
    out.unread = (head - out.upto).max(0);
    Ok(out)
}

/// The outcome of request `id` if it is ready. A rejection is the answer only while no
/// new file for this id waits in the inbox (a fixed re-submission supersedes it). A
/// deadline nobody has noticed yet (no daemon running) is ended here and published.
pub fn outcome_ready(store: &mut Store, root: &Root, id: &str) -> Result<Option<Outcome>> {
    let Some(r) = store.get_any(id)? else {
        return Ok(None);
    };
    if r.status == Status::Rejected && root.inbox_new().join(format!("{id}.json")).exists() {
        return Ok(None);
    }
    if let Some(o) = r.outcome() {
        return Ok(Some(o));
    }
    if r.deadline_ms.is_some_and(|d| d < now_ms()) {
        store.sweep()?;
        super::publish_pending(store, root)?;
        return Ok(store.get_any(id)?.and_then(|r| r.outcome()));
    }
    Ok(None)
}

/// [`Store::list`](crate::store::Store::list) of the requests in any of `statuses` (empty: every status; `filter.status` is
/// ignored): one query a status, each on its index, merged in the filter's order and cut
/// to its limit.
pub fn list_in(
    store: &mut Store,
    statuses: &[Status],
    filter: &ListFilter,
) -> Result<Vec<RequestRow>> {
    if statuses.is_empty() {
        return store.list(&ListFilter {
            status: None,
            ..filter.clone()
        });
    }
    let mut rows = Vec::new();
    for &status in statuses {
        rows.extend(store.list(&ListFilter {
            status: Some(status),
            ..filter.clone()
        })?);
    }
    if filter.oldest_first {
        rows.sort_by_key(|r| r.seq);
    } else {
        rows.sort_by_key(|r| std::cmp::Reverse(r.seq));
    }
    if let Some(limit) = filter.limit.filter(|l| *l >= 0) {
        rows.truncate(limit as usize);
    }
    Ok(rows)
}

/// The reviewer's queue in `context` for the session whose lease is `lease_id`: every
/// request pending, or claimed by that lease, in the order a reviewer takes them —
/// those with a deadline first (soonest first), then the rest oldest first. One read.
///
/// `only` narrows it by `list`'s filters (`--agent`, `--intent`, `--grep`; its contexts
/// and status are ignored: the queue is the session's context, pending or its own
/// claims). The filters are matched by the store's own `list` query, the one place they
/// are defined, so the queue keeps exactly the requests `dshq list` would show.
pub fn review_queue(
    store: &mut Store,
    context: &str,
    lease_id: i64,
    only: &ListFilter,
) -> Result<Vec<RequestRow>> {
    let narrowed = only.agent.is_some() || only.intent.is_some() || only.grep.is_some();
    let keep: Option<std::collections::HashSet<String>> = if narrowed {
        let mut ids = std::collections::HashSet::new();
        for status in [Status::Pending, Status::Claimed] {
            let filter = ListFilter {
                status: Some(status),
                contexts: vec![context.to_string()],
                agent: only.agent.clone(),
                intent: only.intent.clone(),
                grep: only.grep.clone(),
                ..Default::default()
            };
            ids.extend(store.list(&filter)?.into_iter().filter_map(|r| r.id));
        }
        Some(ids)
    } else {
        None
    };
    let mut rows: Vec<RequestRow> = store
        .open_requests(Some(context))?
        .into_iter()
        .filter(|r| {
            r.status == Status::Pending
                || (r.status == Status::Claimed && r.claimed_lease == Some(lease_id))
        })
        .filter(|r| match (&keep, &r.id) {
            (None, _) => true,
            (Some(ids), Some(id)) => ids.contains(id),
            (Some(_), None) => false,
        })
        .collect();
    rows.sort_by_key(|r| (r.deadline_ms.is_none(), r.deadline_ms, r.seq));
    Ok(rows)
}

/// The last `n` requests of `agent` (any status, newest first) with their answers: what
/// the reviewer's context pane shows of the asking agent's earlier questions. One read.
pub fn agent_recent(
    store: &mut Store,
    agent: &str,
    n: i64,
) -> Result<Vec<crate::store::HistoryRow>> {
    store.history(&crate::store::HistoryFilter {
        agent: Some(agent.to_string()),
        limit: Some(n),
        ..Default::default()
    })
}
