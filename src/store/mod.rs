//! The storage seam: [`Store`], the queue every face's use-cases call, one method per
//! transaction, and the backend-neutral types its methods take and return.
//!
//! A use-case in [`crate::app`] makes one call here and gets a typed result; how the
//! backend locks, orders and fences is its own business. So nothing SQLite-only crosses
//! this line: no connection or transaction type, no rowid, no `INDEXED BY`, no WAL. The
//! positions a feed hands out ([`RequestRow::seq`], [`FeedPos`]) are an arrival order the
//! backend keeps (a rowid in SQLite, a sequence in PostgreSQL), opaque to the callers.
//!
//! Each write method reads the time from the backend's clock *after* it holds the write
//! lock and sweeps what fell due at that time first (expired leases, deadlines, agent
//! ttls), so an expired lease is dead for every operation even before any daemon notices.
//! The protocol's checks stay pure ([`crate::protocol`]); a backend runs them against an
//! environment of its own that may fail ([`crate::protocol::check::AskEnv`]).
//!
//! The layers, each folder naming its files by concern (`answers.rs` is answering in
//! every one of them): [`queue`] holds the queue's rules, composed into transactions once
//! ([`queue::Queue`]), over the statements [`driver`] declares; [`sqlite`] (one host) and
//! [`postgres`] (many hosts) are the drivers, and [`drivers::AnyDriver`] the one chosen at
//! run time. Their tests live outside the library, in the `store` test target
//! (`tests/store/`): one conformance suite of the queue's behaviour, written once over
//! [`Store`] and run unchanged on both drivers (one test per scenario in each of the
//! target's `sqlite` and `postgres` modules), and beside it the tests of what only one
//! driver has (migrations, pragmas, races between connections, TLS).

pub mod anchor;
pub mod calls;
pub mod chain;
pub mod driver;
pub mod drivers;
pub mod export;
pub mod migrate;
pub mod postgres;
pub mod queue;
pub mod records;
pub mod sqlite;
pub mod types;
pub mod waits;

pub use crate::core::lifecycle::{RequestRow, Status};
pub use anchor::{read_anchor, write_anchor, Anchor, ANCHOR_FILE};
pub use calls::{
    Answered, AskInput, Asked, EventPage, ExportSink, FeedPage, FeedPos, InboxInput, InboxVerdict,
    LeaseRef, ProviderFile, PruneExport, Record, Verified, Wakeups,
};
pub use driver::push::PushSubscription;
pub use driver::slack::SlackMessage;
pub use drivers::{AnyDriver, Store};
pub use types::{
    Accepted, AgentInfo, ChainBreak, Delivery, DeliveryCounts, Entered, Event, HistoryFilter,
    HistoryQuestion, HistoryRow, HostMark, Lease, LeaseInfo, ListFilter, OldestOpen, OpenCounts,
    Pruned, Registered, Revoked, Route, Stats, Swept, TokenCredential, Voted, WaitStats, WebToken,
};
