//! The storage seam: [`Store`], a trait shaped by the use-cases, one method per
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
//! One type implements it: [`queue::Queue`], the queue's rules ([`queue`]) composed into
//! transactions once, over a [`driver::Driver`]. Two drivers exist: [`sqlite`] (one host,
//! [`crate::store::sqlite::SqliteStore`]) and [`postgres`] (many hosts,
//! [`crate::store::postgres::PgStore`]). Their
//! tests live outside the library, in the `store` test target (`tests/store/`): one
//! conformance suite of the queue's behaviour, written once over this trait and run
//! unchanged on both drivers (one test per scenario in each of the target's `sqlite` and
//! `postgres` modules), and beside it the tests of what only one driver has (migrations, pragmas, races between connections, TLS).

pub mod anchor;
pub mod chain;
pub mod driver;
pub mod export;
pub mod migrate;
pub mod postgres;
pub mod queue;
pub mod records;
pub mod sqlite;
pub mod types;
pub mod waits;

use std::path::PathBuf;

use crate::clock::Millis;
use crate::core::audit::{Actor, Source};
use crate::error::Result;
use crate::protocol::error::UserQuestionError;
use crate::protocol::{Answer, Outcome, Request};

pub use crate::core::lifecycle::{RequestRow, Status};
pub use anchor::{read_anchor, write_anchor, Anchor, ANCHOR_FILE};
pub use driver::slack::SlackMessage;
pub use types::{
    Accepted, AgentInfo, ChainBreak, Delivery, DeliveryCounts, Entered, Event, HistoryFilter,
    HistoryQuestion, HistoryRow, HostMark, Lease, LeaseInfo, ListFilter, OldestOpen, OpenCounts,
    Pruned, Registered, Revoked, Route, Stats, Swept, TokenCredential, Voted, WaitStats, WebToken,
};

/// A request given to [`Store::ask`]: parsed, or already refused by the pure checks
/// before any store was involved (it is still recorded for the audit).
#[derive(Debug, Clone)]
pub struct AskInput {
    /// The parsed request, or why it could not be parsed.
    pub request: std::result::Result<Request, UserQuestionError>,
    /// The id to use when the request names none (an inbox file's or `ask FILE`'s name).
    pub fallback_id: Option<String>,
    /// The id and context salvaged from a refused input, for its rejection record.
    pub salvaged: (Option<String>, Option<String>),
    /// The input as given (lossy UTF-8), kept with a rejection.
    pub raw: String,
    /// Where it came from.
    pub source: Source,
    /// Who asks; a rejection is recorded with this actor.
    pub actor: Actor,
}

/// The verdict of [`Store::ask`].
#[derive(Debug, Clone, PartialEq)]
pub enum Asked {
    /// Accepted (or an idempotent re-delivery of an accepted request).
    Accepted(Accepted),
    /// Refused with a stable code; recorded for the audit, and published as an error
    /// outcome when `outcome` (the id is known and free).
    Rejected {
        /// Why.
        error: UserQuestionError,
        /// Whether an error outcome will be written for it.
        outcome: bool,
    },
}

/// One input of an inbox batch ([`Store::ingest`]).
// The request variant is the large one, and the common one: a batch is one Vec of these,
// built once and consumed once, so boxing the request would only add an allocation a file.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum InboxInput {
    /// A request file.
    Request {
        /// The file name.
        name: String,
        /// The file name without `.json` (the id when the request names none).
        stem: String,
        /// The parsed request.
        request: Request,
        /// The bytes as read (lossy UTF-8).
        raw: String,
        /// The file's modification time: an earlier rejection of this very file, no
        /// older than it, is its verdict.
        mtime: Millis,
        /// The request's stored forms, made by the file thread ahead of the batch's
        /// transaction (`None`: made in it).
        prepared: Option<Box<crate::protocol::prepared::Prepared>>,
    },
    /// An abort file.
    Abort {
        /// The file name.
        name: String,
        /// The request to abort.
        id: String,
        /// Why.
        reason: Option<String>,
    },
    /// A file refused before the store (unreadable, not a request).
    Reject {
        /// The file name.
        name: String,
        /// Its id, when one could be read.
        id: Option<String>,
        /// Its context, when one could be read.
        context: Option<String>,
        /// The bytes as read.
        raw: String,
        /// Why.
        error: UserQuestionError,
    },
}

/// What became of one [`InboxInput`].
#[derive(Debug, Clone, PartialEq)]
pub enum InboxVerdict {
    /// Accepted anew; `replaced_rejection` says an earlier error outcome must go.
    Accepted {
        /// The request id.
        id: String,
        /// Its context.
        context: String,
        /// An earlier rejection of this id left an outcome file that is now stale.
        replaced_rejection: bool,
    },
    /// A re-delivery of an accepted request: nothing changed.
    Redelivered(String),
    /// Aborted by the file.
    Aborted(String),
    /// An abort file for a request already final: nothing to do.
    AbortIgnored(String),
    /// Rejected (now, or earlier for this very file): recorded, to be filed beside it.
    Rejected(UserQuestionError),
}

/// An inbox request file's verdict from its accept-or-reject (the same as `ask`'s): what
/// both backends' [`Store::ingest`] report for it.
impl From<Asked> for InboxVerdict {
    fn from(asked: Asked) -> Self {
        match asked {
            Asked::Accepted(a) if a.new => InboxVerdict::Accepted {
                id: a.id,
                context: a.context,
                replaced_rejection: a.replaced_rejection,
            },
            Asked::Accepted(a) => InboxVerdict::Redelivered(a.id),
            Asked::Rejected { error, .. } => InboxVerdict::Rejected(error),
        }
    }
}

/// One answer or cancel file of a batch ([`Store::apply_answer_files`]).
#[derive(Debug, Clone)]
pub enum ProviderFile {
    /// Answer `id` with the lease token.
    Answer {
        /// Request id.
        id: String,
        /// Lease token.
        token: String,
        /// The answer.
        answer: Answer,
    },
    /// Cancel `id` with the lease token.
    Cancel {
        /// Request id.
        id: String,
        /// Lease token.
        token: String,
        /// Why, if said.
        reason: Option<String>,
    },
}

/// Which lease a one-shot provider command acts with.
#[derive(Debug, Clone)]
pub enum LeaseRef {
    /// A registered lease, by token.
    Token(String),
    /// A registered lease held by the host (for the web page and the HTTP API), used by
    /// someone other than its holder: the event log records `actor` for what it does.
    OnBehalf {
        /// The lease token.
        token: String,
        /// Who acts (`web:NAME`).
        actor: Actor,
    },
    /// A reviewer voting as themselves, without a lease: only a vote on a request with a
    /// quorum is made so (a vote takes no lease, so voters on different faces never meet
    /// DUPLICATE_PROVIDER); anything else is refused.
    Voter(Actor),
    /// A transient lease registered in the request's context for this one command and
    /// released before the transaction commits. A vote (on a request with a quorum) by
    /// this name registers none: it is cast as `provider:NAME` without a lease.
    Transient {
        /// The provider's name.
        name: String,
        /// Its ttl.
        ttl_ms: Millis,
    },
}

/// What a provider does in one transaction ([`Store::provide`]).
#[derive(Debug, Clone)]
pub enum ProviderAct {
    /// Claim `id`.
    Claim(String),
    /// Claim the oldest pending request of the lease's context.
    ClaimNext,
    /// Answer `id` (claiming it implicitly when pending).
    Answer(String, Answer),
    /// Cancel `id`.
    Cancel(String, Option<String>),
}

/// What [`Store::provide`] did.
// One value per provide call, moved once to its caller: boxing the outcome would cost an
// allocation per answer to save a copy of a few hundred bytes.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Provided {
    /// The claimed request.
    Claimed(Box<RequestRow>),
    /// The outcome of an answer or a cancel.
    Finished(Outcome),
    /// A vote on a request with a quorum that left it open (issue 30).
    Voted(Box<Voted>),
}

/// Where [`Store::export`] sends each record: its type (`request`, `question`, `lease`,
/// `agent`, `event`) and its fields, camelCase.
pub type ExportSink<'a> =
    &'a mut dyn FnMut(&str, serde_json::Map<String, serde_json::Value>) -> Result<()>;

/// A position in the arrival order of requests, for feeds ([`Store::feed`]).
pub type FeedPos = i64;

/// A page of the feed of new requests ([`Store::feed`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeedPage {
    /// New accepted requests (never rejections), oldest first.
    pub requests: Vec<RequestRow>,
    /// Every event up to here has been read (those of other kinds included).
    pub upto: FeedPos,
}

/// A page of the feed of request lifecycle events ([`Store::request_events`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventPage {
    /// The matching events, oldest first, each with its request as it is now.
    pub events: Vec<(Event, RequestRow)>,
    /// Every event up to here has been read (those filtered out included).
    pub upto: FeedPos,
}

/// What `audit verify` found.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// Events read.
    pub events: i64,
    /// Request rows checked against their events.
    pub requests: i64,
    /// The newest event (seq, hash).
    pub head: Option<(i64, String)>,
    /// The first keyed event, when the chain is keyed.
    pub keyed_since: Option<i64>,
    /// The first problem found, if any (then the counts are as far as it got).
    pub broken: Option<String>,
}

/// Commits made by other processes or hosts, for a backend that can tell (PostgreSQL's
/// LISTEN/NOTIFY). The daemon waits on it on a thread of its own and runs a pass (expiry,
/// the outbox) when it fires, so an answer given on another host reaches this root's
/// outbox promptly instead of at the next tick.
pub trait Wakeups: Send {
    /// Wait up to `timeout` for a commit elsewhere: `Ok(true)` when one (or more) came,
    /// `Ok(false)` when none did. A lost connection is an error; the next call reconnects.
    fn wait(&mut self, timeout: std::time::Duration) -> Result<bool>;
}

/// Where [`Store::prune`] writes what it removes before it commits.
pub trait PruneExport {
    /// One record, as [`Store::export`] gives it (its type, its fields camelCase).
    fn record(
        &mut self,
        kind: &str,
        fields: serde_json::Map<String, serde_json::Value>,
    ) -> Result<()>;

    /// Make every record durable (written and fsynced). Called after the last record and
    /// before the deleting transaction commits; an error rolls the prune back.
    fn sync(&mut self) -> Result<()>;

    /// After the commit, under the write lock: remove the outcome files of `ids` (pruned,
    /// and no request row holds the id any more). Returns how many were removed.
    fn committed(&mut self, ids: &[String]) -> Result<usize>;
}

/// One record of [`Store::export`]: its type and its fields.
pub type Record = (String, serde_json::Map<String, serde_json::Value>);

/// The storage seam: one method per transaction, shaped by the use-cases in
/// [`crate::app`]. Synchronous and `Send`: a host may give it to one blocking thread.
pub trait Store: Send {
    // ---- asking ----------------------------------------------------------------------

    /// Accept a request, or record its rejection (with `input.actor`), in one transaction.
    fn ask(&mut self, input: AskInput) -> Result<Asked>;

    /// Hold the requests asked from now on to the quorum policy of the config file
    /// (issue 30: a context's policy wins over the asker's `quorum`); none until set.
    fn set_quorum_policy(&mut self, policy: std::sync::Arc<crate::core::quorum::Policy>);

    /// Ingest an inbox batch in one transaction: each input accepted, aborted or rejected
    /// on its own (one input's refusal never rolls back another's verdict). The verdicts
    /// come in input order; the files may be removed only after this returns.
    fn ingest(&mut self, inputs: Vec<InboxInput>) -> Result<Vec<InboxVerdict>>;

    /// The asker aborts an open request (`ASK_ABORTED`); needs no lease.
    fn abort(&mut self, id: &str, reason: Option<&str>, actor: &Actor) -> Result<Outcome>;

    // ---- providing -------------------------------------------------------------------

    /// Claim, answer or cancel with a lease (live at the time of the write), or with a
    /// transient lease registered and released inside the same transaction.
    fn provide(&mut self, lease: &LeaseRef, act: ProviderAct) -> Result<Provided>;

    /// Answer through a mail's link (issue 29): `act` (an answer of the link's request)
    /// as [`Store::provide`] makes it, recording `link` as used in the same transaction;
    /// `LINK_USED` when an answer was already sent through it (nothing changes).
    fn provide_by_link(
        &mut self,
        link: &crate::store::driver::links::LinkUse,
        lease: &LeaseRef,
        act: ProviderAct,
    ) -> Result<Provided>;

    /// Whether an answer was sent through mail link `link_id`.
    fn link_used(&mut self, link_id: &str) -> Result<bool>;

    /// Apply a batch of answer and cancel files in one transaction, each on its own: an
    /// identical answer (or cancel) the same lease already made is a replay and applies
    /// once. Per file: the outcome and whether it was an answer, or its error.
    /// A file's vote on a request with a quorum that left it open is `Ok(None)`.
    fn apply_answer_files(
        &mut self,
        files: &[ProviderFile],
    ) -> Result<Vec<std::result::Result<Option<Outcome>, crate::Error>>>;

    /// The next request of `context` after `after` that is pending, or already claimed by
    /// `lease_id` (the reviewer's screen walks the queue with it).
    fn next_for_lease(
        &mut self,
        context: &str,
        lease_id: i64,
        after: FeedPos,
    ) -> Result<Option<String>>;

    // ---- leases ----------------------------------------------------------------------

    /// Register a provider lease; `DUPLICATE_PROVIDER` when one is live in the context.
    fn register(
        &mut self,
        context: &str,
        name: &str,
        ttl_ms: Millis,
    ) -> Result<(Registered, Lease)> {
        self.register_as(context, name, ttl_ms, None)
    }

    /// [`Store::register`], recording the host that holds the lease for its web page
    /// (`host`), or none.
    fn register_as(
        &mut self,
        context: &str,
        name: &str,
        ttl_ms: Millis,
        host: Option<&HostMark>,
    ) -> Result<(Registered, Lease)>;

    /// End every unended lease recorded as held by the host `host_id` (a restarted host
    /// taking over the leases of its earlier life); their claims go back to `pending`.
    /// Leases of other hosts, and leases held by no host, are never touched.
    fn take_over_host(&mut self, host_id: &str) -> Result<Vec<Revoked>>;

    /// Extend the live lease by its ttl.
    fn heartbeat(&mut self, token: &str) -> Result<Lease>;

    /// End the lease (its claims go back to `pending`); `false` when already ended.
    fn release(&mut self, token: &str) -> Result<bool>;

    /// End the live lease of `context` on purpose (someone other than its holder, `by`,
    /// for `reason`); its claims go back to `pending`. `NO_PROVIDER` when none is live.
    fn revoke(&mut self, context: &str, by: &str, reason: Option<&str>) -> Result<Revoked>;

    /// The live lease of `token` (read).
    fn authenticate(&mut self, token: &str) -> Result<Lease>;

    /// One lease by token, live or not.
    fn lease_info(&mut self, token: &str) -> Result<LeaseInfo>;

    /// The unended lease of each context, or of one.
    fn lease_status(&mut self, context: Option<&str>) -> Result<Vec<LeaseInfo>>;

    // ---- agents ----------------------------------------------------------------------

    /// Enter the registry (or re-enter as a new instance).
    fn agent_enter(
        &mut self,
        id: &str,
        owner: Option<&str>,
        lineage: Option<&str>,
        ttl_ms: Option<Millis>,
    ) -> Result<Entered>;

    /// Extend a live agent's ttl.
    fn agent_heartbeat(&mut self, id: &str, instance: &str) -> Result<AgentInfo>;

    /// Exit (with everything it owns); returns the ended ids.
    fn agent_exit(&mut self, id: &str, instance: &str) -> Result<Vec<String>>;

    /// The registry.
    fn agents(&mut self, live_only: bool) -> Result<Vec<AgentInfo>>;

    // ---- time ------------------------------------------------------------------------

    /// End what fell due (expired leases, deadlines, agent ttls); `None` when nothing
    /// had (a cheap read).
    fn sweep(&mut self) -> Result<Option<Swept>>;

    /// The earliest future time something falls due.
    fn next_due(&mut self) -> Result<Option<Millis>>;

    /// Replace the operator's ladder policies (context, the policy's `ladder` JSON): what
    /// a daemon started with `--context-ladder` does at start (issue 29).
    fn set_context_ladders(&mut self, policies: &[(String, String)]) -> Result<()>;

    // ---- the deliveries outbox (issue 29) ----------------------------------------------

    /// Record that a daemon sends the deliveries of these contexts on these channels: from
    /// now on their events write delivery rows ([`queue::deliveries`]).
    fn add_delivery_routes(&mut self, routes: &[Route]) -> Result<()>;

    /// The undelivered rows of `routes` due at `now`, oldest first, at most `limit`.
    fn deliveries_due(
        &mut self,
        routes: &[Route],
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Delivery>>;

    /// When the next undelivered row of `routes` falls due.
    fn next_delivery_due(&mut self, routes: &[Route]) -> Result<Option<Millis>>;

    /// Mark delivery `id` delivered at `now` (a 2xx came back).
    fn mark_delivered(&mut self, id: &str, now: Millis) -> Result<()>;

    /// Record a failed attempt of delivery `id`, next tried at `next_ms`.
    fn mark_delivery_failed(&mut self, id: &str, next_ms: Millis, error: &str) -> Result<()>;

    /// The deliveries of request `id`, oldest first.
    fn deliveries(&mut self, request_id: &str) -> Result<Vec<Delivery>>;

    /// The outbox's counts (pending, delivered, failed attempts), one entry per channel
    /// that has rows.
    fn delivery_counts(&mut self) -> Result<Vec<DeliveryCounts>>;

    /// Record the Slack message delivery `delivery_id` posted for request `request_id`
    /// (its Slack `channel` and `ts`), unless the delivery recorded one already: whether
    /// this call recorded it ([`queue::slack`]).
    fn record_slack_message(
        &mut self,
        delivery_id: &str,
        request_id: &str,
        channel: &str,
        ts: &str,
    ) -> Result<bool>;

    /// The Slack messages posted for request `request_id`, oldest first.
    fn slack_messages(&mut self, request_id: &str) -> Result<Vec<SlackMessage>>;

    /// The Slack message delivery `delivery_id` posted, if one is recorded.
    fn slack_message_of_delivery(&mut self, delivery_id: &str) -> Result<Option<SlackMessage>>;

    /// The time now on the clock the store judges by (the database's, for a shared store):
    /// what [`Store::next_due`] is compared with, so a host whose own clock is wrong
    /// neither spins nor oversleeps.
    fn clock_now(&mut self) -> Result<Millis> {
        Ok(crate::clock::now_ms())
    }

    // ---- the outbox ------------------------------------------------------------------

    /// Final requests whose outcome file is not written yet, oldest first, after the key
    /// `after` (a cursor: an outcome whose file failed does not hide the ones after it),
    /// at most `limit`, each with its key to mark it written.
    fn outbox_pending(&mut self, after: i64, limit: usize) -> Result<Vec<(i64, Outcome)>>;

    /// Mark outcome files written.
    fn mark_outbox_written(&mut self, keys: &[i64]) -> Result<()>;

    /// Under the write lock, call `remove` with each open request among `ids` (all open
    /// requests for `None`): its outcome file, if any, is a stale error outcome. Returns
    /// what `remove` counted.
    fn while_open(
        &mut self,
        ids: Option<&[&str]>,
        remove: &mut dyn FnMut(&[String]) -> Result<usize>,
    ) -> Result<usize>;

    // ---- reads -----------------------------------------------------------------------

    /// Present the store as it is now to the reads that follow, without making anything
    /// durable: what fell due (an expired lease, a passed deadline) reads as ended, but a
    /// read never commits. Held until the store is dropped (it may hold the write lock:
    /// drop the store before a slow output). A store that cannot be written (a read-only
    /// copy) reads as stored.
    fn view_now(&mut self) -> Result<()>;

    /// The accepted request `id` (not a rejection).
    fn get(&mut self, id: &str) -> Result<Option<RequestRow>>;

    /// The request `id`, or else its newest rejection.
    fn get_any(&mut self, id: &str) -> Result<Option<RequestRow>>;

    /// Requests by filter.
    fn list(&mut self, filter: &ListFilter) -> Result<Vec<RequestRow>>;

    // ---- feeds -----------------------------------------------------------------------

    /// New accepted requests after event position `after` (at most `limit` positions
    /// read): each one's `accepted` event. A feed started at [`Store::events_head`] sees
    /// only what arrives from then on.
    fn feed(&mut self, after: FeedPos, limit: usize) -> Result<FeedPage>;

    /// The newest position in the event log (0 for an empty log): a feed started here
    /// sees only what happens from now on. Positions are in commit order on both drivers
    /// ([`driver::feed`]).
    fn events_head(&mut self) -> Result<FeedPos>;

    /// Events of `kinds` about accepted requests that match `filter` (its contexts,
    /// agent, intent and text; status, limit and order are ignored), after event position
    /// `after`, at most `limit` positions read.
    fn request_events(
        &mut self,
        after: FeedPos,
        kinds: &[crate::core::audit::EventKind],
        filter: &ListFilter,
        limit: usize,
    ) -> Result<EventPage>;

    /// The open requests (of one context), oldest first.
    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>>;

    // ---- the audit -------------------------------------------------------------------

    /// Final and open requests with their questions, by filter.
    fn history(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>>;

    /// Counts, waits and approval rates since a time.
    fn stats(&mut self, since: Option<Millis>) -> Result<Stats>;

    /// The open requests (pending and claimed) counted by status and context, and the
    /// creation time of the oldest pending one: what the metrics show, read through the
    /// status index, so its cost follows the open requests, not the history.
    fn open_counts(&mut self) -> Result<OpenCounts>;

    /// The events of one request.
    fn events(&mut self, request_id: &str) -> Result<Vec<Event>>;

    /// Verify the record in one snapshot: the store's own integrity, the event chain, the
    /// `anchors` given, and every request row against its events.
    fn verify(&mut self, anchors: &[(PathBuf, Anchor)]) -> Result<Verified>;

    /// Every record in one snapshot, as (type, fields) in a stable order.
    fn export(&mut self, sink: ExportSink<'_>) -> Result<()>;

    /// Load another store's [`Store::export`] into this one, which must be empty, in one
    /// transaction: every row as it was (positions, times, the chain's hashes), so that
    /// `audit verify` passes on the copy. Returns how many records were loaded.
    fn import(&mut self, records: &mut dyn Iterator<Item = Result<Record>>) -> Result<u64> {
        let _ = records;
        Err(crate::Error::Invalid(
            "this store cannot load a copy; copy into a PostgreSQL store".into(),
        ))
    }

    /// Remove the final requests (answered, cancelled, aborted, rejected) finished before
    /// `before`, with their questions and the prefix of the event log that concerns them,
    /// in one write transaction: every removed record goes to `export` first, and
    /// [`PruneExport::sync`] makes it durable before the commit. The removed prefix is
    /// summarised by a `pruned` event carrying its head (a [`chain::Checkpoint`]), so the
    /// chain still verifies from there ([`chain::walk_start`]). Pending and claimed
    /// requests are never removed; neither is any event of a request that stays, so the
    /// prefix stops at the first such event ([`Pruned::stopped_at`]), or before the
    /// request that would exceed `limit` (one transaction holds the write lock while it
    /// runs: a limit keeps it short).
    fn prune(
        &mut self,
        before: Millis,
        limit: Option<u64>,
        actor: &Actor,
        export: &mut dyn PruneExport,
    ) -> Result<Pruned> {
        let _ = (before, limit, actor, export);
        Err(crate::Error::Invalid("this store cannot prune yet".into()))
    }

    // ---- other writers -----------------------------------------------------------------

    /// A way to learn of commits other processes or hosts make, when the backend has one
    /// (`None`: SQLite, whose writers on the one host publish their own outcomes): the
    /// commits that make an outcome of this store's origin due, and with `feed` every
    /// commit that appended an event (for a host that serves reviewers or runs hooks).
    fn wakeups(&mut self, feed: bool) -> Result<Option<Box<dyn Wakeups>>> {
        let _ = feed;
        Ok(None)
    }

    // ---- web tokens ------------------------------------------------------------------

    /// Record a new web token by its lookup key and hash (the token itself is never
    /// stored); `Error::Invalid` when the name is taken.
    fn token_create(
        &mut self,
        name: &str,
        role: crate::core::access::Role,
        context: Option<&str>,
        lookup: &str,
        hash: &[u8],
    ) -> Result<WebToken>;

    /// Every web token, revoked ones included, by name.
    fn tokens(&mut self) -> Result<Vec<WebToken>>;

    /// Revoke the token `name`; `false` when it was revoked already,
    /// `Error::TokenNotFound` when there is none.
    fn token_revoke(&mut self, name: &str) -> Result<bool>;

    /// The token with this lookup key, revoked or not (a read).
    fn token_credential(&mut self, lookup: &str) -> Result<Option<TokenCredential>>;
}
