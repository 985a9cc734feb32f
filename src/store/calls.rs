//! What the queue's calls take and return beyond the plain rows of [`super::types`]: the
//! inputs of asking and answering, their verdicts, the feed's pages, the audit's report,
//! and the callbacks a caller hands in (an export's sink, a prune's export, the wake-ups
//! of other writers). Apart from `store`'s root so that the drivers and the rules name
//! them without importing the seam they sit under.

use super::types::{Accepted, Event, Voted};
use crate::clock::Millis;
use crate::core::audit::{Actor, Source};
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::protocol::error::UserQuestionError;
use crate::protocol::{Answer, Outcome, Request};

/// A request given to [`super::queue::Queue::ask`]: parsed, or already refused by the pure checks
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

/// The verdict of [`super::queue::Queue::ask`].
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

/// One input of an inbox batch ([`super::queue::Queue::ingest`]).
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
/// both backends' [`super::queue::Queue::ingest`] report for it.
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

/// One answer or cancel file of a batch ([`super::queue::Queue::apply_answer_files`]).
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

/// What an answer did ([`super::queue::Queue::answer`]).
// One value per answer, moved once to its caller: boxing the outcome would cost an
// allocation per answer to save a copy of a few hundred bytes.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    /// The request is answered (or, by a veto, declined): its outcome.
    Finished(Outcome),
    /// A vote on a request with a quorum that left it open.
    Voted(Box<Voted>),
}

/// Where [`super::queue::Queue::export`] sends each record: its type (`request`, `question`, `lease`,
/// `agent`, `event`) and its fields, camelCase.
pub type ExportSink<'a> =
    &'a mut dyn FnMut(&str, serde_json::Map<String, serde_json::Value>) -> Result<()>;

/// A position in the arrival order of requests, for feeds ([`super::queue::Queue::feed`]).
pub type FeedPos = i64;

/// A page of the feed of new requests ([`super::queue::Queue::feed`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeedPage {
    /// New accepted requests (never rejections), oldest first.
    pub requests: Vec<RequestRow>,
    /// Every event up to here has been read (those of other kinds included).
    pub upto: FeedPos,
}

/// A page of the feed of request lifecycle events ([`super::queue::Queue::request_events`]).
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

/// Where [`super::queue::Queue::prune`] writes what it removes before it commits.
pub trait PruneExport {
    /// One record, as [`super::queue::Queue::export`] gives it (its type, its fields camelCase).
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

/// One record of [`super::queue::Queue::export`]: its type and its fields.
pub type Record = (String, serde_json::Map<String, serde_json::Value>);
