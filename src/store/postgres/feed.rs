//! The feeds' statements ([`crate::store::driver::FeedReads`]) on PostgreSQL: the event
//! log's reads ([`super::events`]) and the requests' ([`super::requests::reads`]), on any
//! client (a write's reads are these on its transaction:
//! [`crate::store::driver::ReadsInside`]).

use postgres::GenericClient;

use super::events;
use super::requests::reads;
use super::tx::PgRead;

crate::store::driver::feed::feed_reads_by!([C: GenericClient] PgRead<'_, C>, events, reads);
