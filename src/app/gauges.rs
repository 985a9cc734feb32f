//! The metrics' gauges read from the store at a scrape (`GET /metrics`): open requests
//! by status and context, the oldest pending one's age, the live leases and the soonest
//! expiry, the outcome files not yet written. Read at each scrape rather than counted, so
//! they are right whoever committed (another process, another host of a shared store).

use std::time::Duration;

use crate::error::Result;
use crate::store::{OpenCounts, Store};

/// The outcome files counted at most (the gauge says "at least" beyond it).
pub const OUTBOX_COUNT_MAX: usize = 10_000;

/// What a scrape reads.
#[derive(Debug, Clone, Default)]
pub struct Gauges {
    /// Open requests by status and context.
    pub open: OpenCounts,
    /// How long the oldest pending request has waited.
    pub oldest_pending: Option<Duration>,
    /// Live provider leases.
    pub leases_live: i64,
    /// Until the soonest live lease expires unless heartbeated.
    pub next_lease_expiry: Option<Duration>,
    /// Final requests whose outcome file is not written yet (at most [`OUTBOX_COUNT_MAX`]).
    pub outcome_files_pending: i64,
    /// The deliveries outbox's counts by channel.
    pub deliveries: Vec<crate::store::DeliveryCounts>,
}

/// Read the gauges.
pub fn read(store: &mut Store) -> Result<Gauges> {
    let now = store.clock_now()?;
    let open = store.open_counts()?;
    let since = |ms: i64| Duration::from_millis(ms.max(0) as u64);
    let oldest_pending = open.oldest_pending_ms.map(|c| since(now - c));
    let live: Vec<_> = store
        .lease_status(None)?
        .into_iter()
        .filter(|l| l.live)
        .collect();
    let next_lease_expiry = live
        .iter()
        .filter_map(|l| l.expires_at.parse::<jiff::Timestamp>().ok())
        .map(crate::clock::from_timestamp)
        .min()
        .map(|e| since(e - now));
    let outcome_files_pending = store.outbox_pending(0, OUTBOX_COUNT_MAX)?.len() as i64;
    Ok(Gauges {
        open,
        oldest_pending,
        leases_live: live.len() as i64,
        next_lease_expiry,
        outcome_files_pending,
        deliveries: store.delivery_counts()?,
    })
}
