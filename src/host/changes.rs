//! What changed, broadcast after each commit.
//!
//! Every commit in this process (a pass of the file loop, a web write) is followed by
//! [`Changes::publish`], which reads the event log from where the last call stopped and
//! sends each new request event on a `tokio::sync::broadcast` channel. The SSE stream and
//! the long-poll waits subscribe to it, so they wake on a commit instead of polling the
//! database. The log is the source because it already orders every commit, whoever made
//! it: a `dshq answer` run from a shell is seen at the file loop's next pass (its tick),
//! and nothing is broadcast twice or out of order (one cursor, under a lock).
//!
//! The long-poll waits do not subscribe: a final change also wakes the waiters of its
//! request alone ([`super::waits`]), so the cost of a commit does not grow with them.
//!
//! A subscriber that falls behind by more than the channel's capacity gets `Lagged` and
//! must re-read what it needs from the store; the sender never waits for a slow reader,
//! so a stalled client cannot slow a commit.

use std::sync::{Arc, Mutex};

use serde::Serialize;
use tokio::sync::broadcast;

use super::waits::{FinalWait, Waits};
use crate::app::feed::RequestEvents;
use crate::core::audit::{Actor, EventKind};
use crate::store::{ListFilter, Status, Store};

/// How many changes a subscriber may fall behind before it lags.
pub const CAPACITY: usize = 4096;

/// The kind of a change as the stream names it (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// A request was accepted.
    Accepted,
    /// A provider claimed it.
    Claimed,
    /// A claim went back to pending (its lease ended).
    Released,
    /// It was answered.
    Answered,
    /// The human cancelled it.
    Cancelled,
    /// The asker aborted it.
    Aborted,
    /// Its deadline passed, or its ladder expired it (nobody answered; answered by the
    /// asker's declared default when its status is `answered`).
    Expired,
    /// Its ladder escalated it (possibly to another context, as `pending`).
    Escalated,
}

impl ChangeKind {
    /// The kind as the stream names it (the SSE `event:` field).
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Accepted => "accepted",
            ChangeKind::Claimed => "claimed",
            ChangeKind::Released => "released",
            ChangeKind::Answered => "answered",
            ChangeKind::Cancelled => "cancelled",
            ChangeKind::Aborted => "aborted",
            ChangeKind::Expired => "expired",
            ChangeKind::Escalated => "escalated",
        }
    }

    fn of(kind: EventKind, actor: Option<&Actor>) -> Option<ChangeKind> {
        Some(match kind {
            EventKind::Accepted => ChangeKind::Accepted,
            EventKind::Claimed => ChangeKind::Claimed,
            EventKind::Released => ChangeKind::Released,
            EventKind::Answered => ChangeKind::Answered,
            EventKind::Cancelled => ChangeKind::Cancelled,
            // A deadline is enforced by the sweep, which acts as the daemon.
            EventKind::Aborted if actor == Some(&Actor::Daemon) => ChangeKind::Expired,
            EventKind::Aborted => ChangeKind::Aborted,
            EventKind::Expired => ChangeKind::Expired,
            EventKind::Escalated => ChangeKind::Escalated,
            _ => return None,
        })
    }

    /// Whether the request is final after this change.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            ChangeKind::Answered
                | ChangeKind::Cancelled
                | ChangeKind::Aborted
                | ChangeKind::Expired
        )
    }
}

/// One change: an event of a request's life, with the request's state after it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// The event's position in the log (the SSE `id:`).
    pub seq: i64,
    /// What happened.
    pub kind: ChangeKind,
    /// The request.
    pub id: String,
    /// Its context.
    pub context: String,
    /// Its status now (`pending`, `claimed`, `answered`, ...).
    pub status: String,
    /// Who did it (`daemon`, `provider:NAME`, `web:NAME`, ...).
    pub actor: String,
    /// Where the request came from (`inbox:FILE`, `cli`, `web:NAME`, ...): an asker
    /// token's stream shows only its own.
    pub source: String,
    /// When (RFC 3339).
    pub at: String,
}

impl Change {
    /// The change an event of the log stands for, with its request as it is now; `None`
    /// for an event the stream does not carry (a lease's own events, a rejection).
    pub fn of(event: &crate::store::Event, row: &crate::store::RequestRow) -> Option<Change> {
        let kind = event
            .event_kind()
            .and_then(|k| ChangeKind::of(k, event.who().as_ref()))?;
        Some(Change {
            seq: event.seq,
            kind,
            id: row.id.clone().unwrap_or_default(),
            context: row.context.clone(),
            status: row.status.as_str().to_string(),
            actor: event.actor.clone(),
            source: row.source.clone(),
            at: crate::clock::rfc3339(event.at_ms),
        })
    }
}

/// The broadcast of changes, with the event-log cursor it has published up to.
pub struct Changes {
    tx: broadcast::Sender<Arc<Change>>,
    cursor: Mutex<Option<RequestEvents>>,
    waits: Arc<Waits>,
}

impl Changes {
    /// A broadcast that publishes only what is committed from now on.
    pub fn new(store: &mut Store) -> crate::Result<Changes> {
        let (tx, _) = broadcast::channel(CAPACITY);
        let feed = RequestEvents::from_now(store, &[], ListFilter::default())?;
        Ok(Changes {
            tx,
            cursor: Mutex::new(Some(feed)),
            waits: Arc::default(),
        })
    }

    /// Subscribe: every change published after this call.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.tx.subscribe()
    }

    /// Wait for the next final change of request `id` (register before reading the
    /// store, so a change committed in between still wakes the wait).
    pub fn wait_final(&self, id: &str) -> FinalWait {
        self.waits.register(id)
    }

    /// Publish what was committed since the last call (call after each commit, on the
    /// thread that owns `store`). Errors are logged; the next call catches up.
    pub fn publish(&self, store: &mut Store) {
        let mut guard = self.cursor.lock().unwrap_or_else(|p| p.into_inner());
        let Some(feed) = guard.as_mut() else { return };
        let events = match feed.all(store) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the event log for the change broadcast");
                return;
            }
        };
        for (event, row) in events {
            let Some(change) = Change::of(&event, &row) else {
                continue;
            };
            if let Some(m) = crate::metrics::get() {
                let waited = (change.kind == ChangeKind::Answered).then(|| {
                    std::time::Duration::from_millis((event.at_ms - row.created_ms).max(0) as u64)
                });
                m.changed(change.kind.as_str(), waited);
            }
            let finished = change.kind.is_final().then(|| change.id.clone());
            // No receiver is fine: nobody is listening.
            let _ = self.tx.send(Arc::new(change));
            if let Some(id) = finished {
                self.waits.finished(&id);
            }
        }
    }
}

/// Whether `status` (as written) is final.
pub fn status_is_final(status: &str) -> bool {
    Status::parse(status).is_some_and(|s| s.is_final())
}
