//! The write transaction every function of this backend works in, apart from the
//! connection that opens it ([`super::conn`]): the queue's modules (leases, agents,
//! requests, events) take a [`Tx`], and the connection's write helper sweeps through
//! them, so the type lives below both and neither imports the other back.

use std::path::Path;

use postgres::Transaction;

/// One write transaction, with what the functions of this backend need beside it: the
/// root (where `audit.key` and `audit.head` live) and the origin a new request records.
pub struct Tx<'c> {
    /// The transaction itself (holding [`super::conn::WRITE_LOCK`]).
    pub tx: Transaction<'c>,
    /// The root dir of this host, when it has one.
    pub root: Option<&'c Path>,
    /// The root that asks, recorded on new requests (`requests.origin`).
    pub origin: Option<&'c str>,
    /// Whether an event was appended (then the commit notifies [`super::conn::CHANNEL`]).
    pub appended: bool,
}

/// The read statements of this backend on any client (a read on the connection, or the
/// transaction of a write), for the queue rules that also run outside a write: each
/// concern's file implements its read trait ([`crate::store::driver`]) on it, and on
/// [`Tx`] through it.
pub struct PgRead<'a, C: postgres::GenericClient>(pub &'a mut C);
