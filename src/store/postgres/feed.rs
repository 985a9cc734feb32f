//! The feeds' statements ([`crate::store::driver::FeedReads`]) on PostgreSQL.

use postgres::GenericClient;

use super::events;
use super::requests::reads;
use super::tx::{PgRead, Tx};
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::FeedReads;
use crate::store::types::{Event, ListFilter};

impl<C: GenericClient> FeedReads for PgRead<'_, C> {
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
        reads::event_requests(self.0, after, upto, kinds, filter)
    }

    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>> {
        reads::open_requests(self.0, context)
    }

    fn open_ids(&mut self, ids: Option<&[&str]>) -> Result<Vec<String>> {
        reads::open_ids(self.0, ids)
    }
}

impl FeedReads for Tx<'_> {
    fn events_head(&mut self) -> Result<i64> {
        PgRead(self.tx.client()?).events_head()
    }

    fn events_upto(&mut self, after: i64, limit: usize) -> Result<i64> {
        PgRead(self.tx.client()?).events_upto(after, limit)
    }

    fn events_between(&mut self, after: i64, upto: i64) -> Result<Vec<Event>> {
        PgRead(self.tx.client()?).events_between(after, upto)
    }

    fn event_requests(
        &mut self,
        after: i64,
        upto: i64,
        kinds: &[&str],
        filter: &ListFilter,
    ) -> Result<Vec<(i64, RequestRow)>> {
        PgRead(self.tx.client()?).event_requests(after, upto, kinds, filter)
    }

    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>> {
        PgRead(self.tx.client()?).open_requests(context)
    }

    fn open_ids(&mut self, ids: Option<&[&str]>) -> Result<Vec<String>> {
        PgRead(self.tx.client()?).open_ids(ids)
    }
}
