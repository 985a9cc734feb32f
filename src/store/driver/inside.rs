//! The reads a write makes: a write transaction offers the read statements of its driver's
//! read type, run on the write's own transaction. Written once here for both drivers (each
//! used to delegate every read method to its read type by hand, the same lines twice);
//! a driver says only how its write reaches its reads ([`ReadsInside`]).
//!
//! See [`super`] for what a statement is and is not.

use super::{AgentReads, FeedReads, LeaseReads};
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::agents::{AgentRow, LiveAgentRow};
use crate::store::driver::leases::{LeaseInfoRow, LeaseRow};
use crate::store::types::{Event, ListFilter};

/// A write transaction whose reads are its driver's read statements on the same
/// transaction: every such write has [`FeedReads`], [`AgentReads`] and [`LeaseReads`].
pub trait ReadsInside {
    /// The driver's read statements, on this write's transaction.
    type Reads<'a>: FeedReads + AgentReads + LeaseReads
    where
        Self: 'a;

    /// The reads, seeing everything this write did (a driver that holds new rows unsent
    /// sends them first).
    fn reads(&mut self) -> Result<Self::Reads<'_>>;

    /// The reads of the registry and the leases, which a write's held request rows never
    /// touch, without sending them: the ask checks make these per request, and on
    /// PostgreSQL they must not cost a batch its one statement for all its rows.
    fn reads_beside_held(&mut self) -> Self::Reads<'_>;
}

impl<T: ReadsInside> FeedReads for T {
    fn events_head(&mut self) -> Result<i64> {
        self.reads()?.events_head()
    }

    fn events_upto(&mut self, after: i64, limit: usize) -> Result<i64> {
        self.reads()?.events_upto(after, limit)
    }

    fn events_between(&mut self, after: i64, upto: i64) -> Result<Vec<Event>> {
        self.reads()?.events_between(after, upto)
    }

    fn event_requests(
        &mut self,
        after: i64,
        upto: i64,
        kinds: &[&str],
        filter: &ListFilter,
    ) -> Result<Vec<(i64, RequestRow)>> {
        self.reads()?.event_requests(after, upto, kinds, filter)
    }

    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>> {
        self.reads()?.open_requests(context)
    }

    fn open_ids(&mut self, ids: Option<&[&str]>) -> Result<Vec<String>> {
        self.reads()?.open_ids(ids)
    }
}

impl<T: ReadsInside> AgentReads for T {
    fn live_agent_row(&mut self, id: &str, now: Millis) -> Result<Option<LiveAgentRow>> {
        self.reads_beside_held().live_agent_row(id, now)
    }

    fn agent_instance_row(&mut self, id: &str, instance: &str) -> Result<Option<AgentRow>> {
        self.reads_beside_held().agent_instance_row(id, instance)
    }

    fn agent_rows(&mut self, not_ended_only: bool) -> Result<Vec<AgentRow>> {
        self.reads()?.agent_rows(not_ended_only)
    }
}

impl<T: ReadsInside> LeaseReads for T {
    fn lease_by_id(&mut self, lease_id: i64) -> Result<Option<LeaseRow>> {
        self.reads()?.lease_by_id(lease_id)
    }

    fn lease_revoked_event_data(&mut self, lease_id: i64) -> Result<Option<String>> {
        self.reads()?.lease_revoked_event_data(lease_id)
    }

    fn live_lease_exists(&mut self, context: &str, now: Millis) -> Result<bool> {
        self.reads_beside_held().live_lease_exists(context, now)
    }

    fn lease_info(&mut self, lease_id: i64) -> Result<Option<LeaseInfoRow>> {
        self.reads()?.lease_info(lease_id)
    }

    fn unended_lease_infos(&mut self, context: Option<&str>) -> Result<Vec<LeaseInfoRow>> {
        self.reads()?.unended_lease_infos(context)
    }
}
