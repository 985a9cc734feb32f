//! The feeds' statements ([`crate::store::driver::FeedReads`]) on SQLite.

use super::sql::{Sql, SqlRead};
use super::{events, requests};
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::FeedReads;
use crate::store::types::{Event, ListFilter};

impl FeedReads for SqlRead<'_> {
    fn events_head(&mut self) -> Result<i64> {
        events::head(self.0)
    }

    fn events_upto(&mut self, after: i64, limit: usize) -> Result<i64> {
        events::upto(self.0, after, limit)
    }

    fn events_between(&mut self, after: i64, upto: i64) -> Result<Vec<Event>> {
        events::range(self.0, after, upto)
    }

    fn event_requests(
        &mut self,
        after: i64,
        upto: i64,
        kinds: &[&str],
        filter: &ListFilter,
    ) -> Result<Vec<(i64, RequestRow)>> {
        requests::reads::event_requests(self.0, after, upto, kinds, filter)
    }

    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>> {
        requests::reads::open_requests(self.0, context)
    }

    fn open_ids(&mut self, ids: Option<&[&str]>) -> Result<Vec<String>> {
        requests::reads::open_ids(self.0, ids)
    }
}

impl FeedReads for Sql<'_, '_> {
    fn events_head(&mut self) -> Result<i64> {
        self.read().events_head()
    }

    fn events_upto(&mut self, after: i64, limit: usize) -> Result<i64> {
        self.read().events_upto(after, limit)
    }

    fn events_between(&mut self, after: i64, upto: i64) -> Result<Vec<Event>> {
        self.read().events_between(after, upto)
    }

    fn event_requests(
        &mut self,
        after: i64,
        upto: i64,
        kinds: &[&str],
        filter: &ListFilter,
    ) -> Result<Vec<(i64, RequestRow)>> {
        self.read().event_requests(after, upto, kinds, filter)
    }

    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>> {
        self.read().open_requests(context)
    }

    fn open_ids(&mut self, ids: Option<&[&str]>) -> Result<Vec<String>> {
        self.read().open_ids(ids)
    }
}
