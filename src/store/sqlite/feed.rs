//! The feeds' statements ([`crate::store::driver::FeedReads`]) on SQLite: the event log's
//! reads ([`super::events`]) and the requests' ([`super::requests::reads`]), on a
//! connection (a write's reads are these on its transaction:
//! [`crate::store::driver::ReadsInside`]).

use super::sql::SqlRead;
use super::{events, requests};

crate::store::driver::feed::feed_reads_by!([] SqlRead<'_>, events, requests::reads);
