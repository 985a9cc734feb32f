//! The backend-neutral types of the seam: what [`super::Store`]'s methods take and return.
//! Plain data: no connection, no row handle, nothing a second backend could not produce.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::core::channel::Channel;
use crate::core::lifecycle::Status;
use crate::protocol::Decision;

/// The result of accepting a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    /// The request id.
    pub id: String,
    /// The context.
    pub context: String,
    /// False when this was an idempotent re-delivery of an existing request.
    pub new: bool,
    /// The request's state now.
    pub status: Status,
    /// An earlier input with this id was rejected: its error outcome file, if any, is
    /// stale and must go.
    #[serde(skip)]
    pub replaced_rejection: bool,
}

/// Filters for [`Store::list`](super::Store::list).
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only this status.
    pub status: Option<Status>,
    /// Only these contexts (any of them); empty: every context.
    pub contexts: Vec<String>,
    /// Only requests asked by this agent id.
    pub agent: Option<String>,
    /// Only requests with a question of this intent kind (`plan-review`).
    pub intent: Option<String>,
    /// Only requests with a question whose text contains this, ignoring ASCII case.
    pub grep: Option<String>,
    /// At most this many rows.
    pub limit: Option<i64>,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
    /// Only requests from this source as stored (`web:NAME`: what one web token asked).
    pub source: Option<String>,
}

/// A live, authenticated lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Row id.
    pub lease_id: i64,
    /// The context it answers for.
    pub context: String,
    /// The provider's name (recorded as who answered).
    pub name: String,
    /// 1, 2, 3... per context.
    pub generation: i64,
    /// The ttl each heartbeat extends by.
    pub ttl_ms: Millis,
    /// When it dies unless it heartbeats.
    pub expires_ms: Millis,
    /// Who acts through it when that is not its holder: a reviewer on the web page or
    /// the HTTP API acting through the lease the host holds for the context
    /// ([`super::LeaseRef::OnBehalf`]). `None`: the holder itself.
    pub on_behalf: Option<crate::core::audit::Actor>,
}

impl Lease {
    /// Who the event log records for what this lease does: the person acting through it,
    /// else its holder as `provider:NAME`.
    pub fn actor(&self) -> crate::core::audit::Actor {
        self.on_behalf
            .clone()
            .unwrap_or_else(|| crate::core::audit::Actor::Provider(self.name.clone()))
    }

    /// The name recorded as who answered or cancelled: the person acting through the
    /// lease (`web:NAME`), else its holder's name.
    pub fn provider_name(&self) -> String {
        match &self.on_behalf {
            Some(a) => a.as_str().into_owned(),
            None => self.name.clone(),
        }
    }
}

/// A lease ended on purpose by someone other than its holder (`provider revoke`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    /// The context.
    pub context: String,
    /// The holder whose lease was ended.
    pub name: String,
    /// The ended lease's generation.
    pub generation: i64,
    /// The requests it had claimed, now `pending` again.
    pub released: Vec<String>,
}

/// The host a lease is held by, for its web page and HTTP API
/// ([`crate::host::provider::Providers`]): recorded with the lease so that the same host,
/// restarted, recognises the lease of its earlier life ([`super::Store::take_over_host`]),
/// and so that a refused registration can say who holds the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostMark {
    /// The host's stable identity: its root's origin ([`crate::root::Root::origin`]).
    pub id: String,
    /// For people: the host name and the root's path (`box1:/srv/dshq`).
    pub label: String,
    /// How long after the last reviewer's act the host releases the lease (`--web-idle`).
    pub idle_ms: Millis,
}

/// A vote recorded on a request with a quorum that it did not decide: the
/// request stays open.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Voted {
    /// The request id.
    pub id: String,
    /// Always `"voted"`.
    pub status: String,
    /// Who voted.
    pub voter: String,
    /// The request's quorum and every vote so far.
    pub quorum: crate::core::quorum::QuorumView,
}

/// What `register` returns: the token is shown once and never stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Registered {
    /// The unguessable token (`--lease` / `DSHQ_LEASE`).
    pub lease: String,
    /// The context.
    pub context: String,
    /// The provider's name.
    pub name: String,
    /// The lease generation in its context.
    pub generation: i64,
    /// RFC 3339 expiry.
    pub expires_at: String,
}

/// A lease as `provider status` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseInfo {
    /// Row id.
    pub lease_id: i64,
    /// The context.
    pub context: String,
    /// The provider's name.
    pub name: String,
    /// Generation.
    pub generation: i64,
    /// Whether it is live at the time asked.
    pub live: bool,
    /// RFC 3339 creation.
    pub created_at: String,
    /// RFC 3339 last heartbeat.
    pub heartbeat_at: String,
    /// RFC 3339 expiry.
    pub expires_at: String,
    /// RFC 3339 end, when ended.
    pub ended_at: Option<String>,
    /// `released` or `expired`, when ended.
    pub end_reason: Option<String>,
    /// Requests it holds claimed.
    pub claimed: i64,
}

/// What `agent enter` returns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entered {
    /// The agent id.
    pub id: String,
    /// The new instance (unguessable).
    pub instance: String,
    /// RFC 3339 expiry when a ttl was given.
    pub expires_at: Option<String>,
}

/// A registry row as `agent list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    /// The agent id.
    pub id: String,
    /// The instance.
    pub instance: String,
    /// The owning agent id, if owned.
    pub owner: Option<String>,
    /// Recorded lineage.
    pub lineage: Option<String>,
    /// Whether it is live at the time asked.
    pub live: bool,
    /// RFC 3339 entry time.
    pub entered_at: String,
    /// RFC 3339 expiry, when it has a ttl.
    pub expires_at: Option<String>,
    /// RFC 3339 end, when ended.
    pub ended_at: Option<String>,
    /// Why it ended.
    pub end_reason: Option<String>,
}

/// A stored event.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Position in the log.
    pub seq: i64,
    /// When (ms since the epoch).
    pub at_ms: Millis,
    /// What happened.
    pub kind: String,
    /// The request concerned.
    pub request_id: Option<String>,
    /// The lease concerned.
    pub lease_id: Option<i64>,
    /// The agent concerned.
    pub agent_id: Option<String>,
    /// Who did it.
    pub actor: String,
    /// Details.
    pub data: serde_json::Value,
    /// The previous event's hash.
    pub prev_hash: String,
    /// This event's hash.
    pub hash: String,
}

impl Event {
    /// What happened, as the audit's enum (`None` for a kind this dshq does not know).
    pub fn event_kind(&self) -> Option<crate::core::audit::EventKind> {
        crate::core::audit::EventKind::parse(&self.kind)
    }

    /// Who did it, as the audit's enum (`None` for an actor this dshq does not know).
    pub fn who(&self) -> Option<crate::core::audit::Actor> {
        crate::core::audit::Actor::parse(&self.actor)
    }
}

/// The first break in the hash chain, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChainBreak {
    /// The seq of the first event that does not verify (or that is missing).
    pub seq: i64,
    /// What is wrong with it.
    pub problem: String,
}

/// Filters of `dshq history` (all optional; combined with AND).
#[derive(Debug, Clone, Default)]
pub struct HistoryFilter {
    /// Asking agent id.
    pub agent: Option<String>,
    /// Only these contexts (any of them); empty: every context.
    pub contexts: Vec<String>,
    /// Provider that answered or cancelled.
    pub provider: Option<String>,
    /// Status.
    pub status: Option<Status>,
    /// Error code.
    pub code: Option<String>,
    /// Intent kind some question carries (`plan-review`).
    pub intent: Option<String>,
    /// Decision some plan-review question received.
    pub decision: Option<Decision>,
    /// Created at or after.
    pub since: Option<Millis>,
    /// Created before.
    pub until: Option<Millis>,
    /// Substring of some question's text (case-insensitive for ASCII).
    pub grep: Option<String>,
    /// At most this many rows (newest first).
    pub limit: Option<i64>,
}

/// One question of a history row, with its answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryQuestion {
    /// Question id.
    pub id: String,
    /// Question text.
    pub question: String,
    /// Intent kind, if any.
    pub intent: Option<String>,
    /// Selected labels, once answered.
    pub selected: Option<Vec<String>>,
    /// Custom text, once answered.
    pub custom: Option<String>,
    /// Plan-review decision, once answered.
    pub decision: Option<Decision>,
}

/// One row of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRow {
    /// Request id.
    pub id: Option<String>,
    /// Context.
    pub context: String,
    /// Asking agent id.
    pub agent: Option<String>,
    /// Its lineage at acceptance.
    pub lineage: Option<String>,
    /// RFC 3339 acceptance.
    pub created_at: String,
    /// RFC 3339 end.
    pub finished_at: Option<String>,
    /// Milliseconds from acceptance to end (or to now for open requests).
    pub wait_ms: Millis,
    /// State.
    pub status: Status,
    /// Error code.
    pub code: Option<String>,
    /// Request-level decision.
    pub decision: Option<Decision>,
    /// Provider that answered or cancelled.
    pub provider: Option<String>,
    /// For a request with a quorum: every vote, in order, with the identity (the face
    /// used) and the person it counted for. Empty for any other request.
    pub votes: Vec<HistoryVote>,
    /// The questions with their answers.
    pub questions: Vec<HistoryQuestion>,
}

/// One vote of a history row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryVote {
    /// The identity that voted (`web:alice`, `provider:bob`).
    pub voter: String,
    /// The person it counted for (none for a vote recorded before persons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The decision of its answer, if it makes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// Wait-time percentiles (nearest rank) of one group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitStats {
    /// The context or provider.
    pub key: String,
    /// Answered requests counted.
    pub count: usize,
    /// Median wait in ms.
    pub p50_ms: Millis,
    /// 90th percentile.
    pub p90_ms: Millis,
    /// 99th percentile.
    pub p99_ms: Millis,
}

/// The figures of `dshq stats`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    /// Requests counted (created in the window).
    pub total: i64,
    /// Count per status.
    pub by_status: std::collections::BTreeMap<String, i64>,
    /// Count per error code.
    pub by_code: std::collections::BTreeMap<String, i64>,
    /// Answer wait per context (answered requests).
    pub wait_by_context: Vec<WaitStats>,
    /// Answer wait per provider (answered requests).
    pub wait_by_provider: Vec<WaitStats>,
    /// Plan-review questions approved.
    pub approved: i64,
    /// Plan-review questions declined.
    pub declined: i64,
    /// approved / (approved + declined), when any.
    pub approval_rate: Option<f64>,
    /// Requests pending or claimed now.
    pub open: i64,
    /// The oldest open request.
    pub oldest_open: Option<OldestOpen>,
}

/// The open requests by status and context ([`crate::store::Store::open_counts`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenCounts {
    /// (status, context, count), for `pending` and `claimed`.
    pub by_status_context: Vec<(String, String, i64)>,
    /// When the oldest pending request was accepted (store clock, ms).
    pub oldest_pending_ms: Option<Millis>,
}

/// The oldest request still waiting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OldestOpen {
    /// Request id.
    pub id: String,
    /// RFC 3339 acceptance.
    pub created_at: String,
    /// How long it has waited, ms.
    pub waiting_ms: Millis,
}

/// What a sweep ended.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Swept {
    /// Leases that expired.
    pub leases: Vec<i64>,
    /// Requests returned to `pending` because their lease ended.
    pub released: Vec<String>,
    /// Requests aborted because their deadline passed.
    pub aborted: Vec<String>,
    /// Agent ids whose ttl ran out (with what they owned).
    pub agents: Vec<String>,
    /// Requests whose ladder reminded or escalated.
    pub laddered: Vec<String>,
    /// Requests whose ladder ended them (`ASK_EXPIRED`, or answered by their default).
    pub expired: Vec<String>,
}

impl Swept {
    /// Whether the sweep changed anything.
    pub fn is_empty(&self) -> bool {
        self.leases.is_empty()
            && self.released.is_empty()
            && self.aborted.is_empty()
            && self.agents.is_empty()
            && self.laddered.is_empty()
            && self.expired.is_empty()
    }
}

/// A web token as stored: never the token itself (see [`TokenCredential`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebToken {
    /// Its unique name (`web:NAME` in the event log).
    pub name: String,
    /// What it may do.
    #[serde(serialize_with = "role_str")]
    pub role: crate::core::access::Role,
    /// The one context it acts in, when bound to one.
    pub context: Option<String>,
    /// When it was created.
    pub created_ms: Millis,
    /// When it was revoked; a revoked token authenticates nothing.
    pub revoked_ms: Option<Millis>,
}

impl WebToken {
    /// Whether this token may answer a request in `context` now: not revoked, a role that
    /// answers, bound to no other context.
    pub fn answers_in(&self, context: &str) -> bool {
        self.revoked_ms.is_none()
            && self.role.may(crate::core::access::Action::Answer).is_some()
            && self.context.as_deref().is_none_or(|c| c == context)
    }
}

fn role_str<S: serde::Serializer>(r: &crate::core::access::Role, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(r.as_str())
}

/// A token row found by its lookup key, with the hash the presented token must match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenCredential {
    /// The token's record.
    pub token: WebToken,
    /// SHA-256 of the whole token.
    pub hash: Vec<u8>,
}

/// What [`Store::prune`](super::Store::prune) removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pruned {
    /// Request rows removed (rejected inputs included).
    pub requests: u64,
    /// Question rows removed.
    pub questions: u64,
    /// Events removed: the log's prefix up to `uptoSeq`.
    pub events: u64,
    /// The newest removed event (0 when none was).
    pub upto_seq: i64,
    /// The `pruned` checkpoint event appended (None when nothing was removed).
    pub checkpoint: Option<i64>,
    /// Why pruning stopped before the cut, when it did: the oldest event that must stay
    /// (an open request's, or one that a request still open shares the prefix with).
    pub stopped_at: Option<String>,
    /// The ids of the requests removed whose id no request row holds any more: their
    /// outcome files were removed after the commit.
    #[serde(skip)]
    pub freed_ids: Vec<String>,
}

/// One row of the deliveries outbox: a notification, its stable id and its
/// retry state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// The stable delivery id (`webhook-id`).
    pub id: String,
    /// The request it is about.
    pub request_id: String,
    /// The context whose channels receive it.
    pub context: String,
    /// The channel it goes out on.
    #[serde(serialize_with = "channel_name")]
    pub channel: Channel,
    /// The event kind that caused it.
    pub kind: String,
    /// The JSON body sent.
    #[serde(skip)]
    pub body: String,
    /// Written at.
    pub created_ms: Millis,
    /// Attempts made so far.
    pub attempts: i64,
    /// When the next attempt is due.
    pub next_ms: Millis,
    /// When a 2xx came back.
    pub delivered_ms: Option<Millis>,
    /// What the last failed attempt met.
    pub last_error: Option<String>,
}

fn channel_name<S: serde::Serializer>(c: &Channel, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(c.as_str())
}

/// A context and a channel its deliveries go out on: what a daemon with channels records
/// at start ([`crate::store::Store::add_delivery_routes`]) and reads the outbox by.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route {
    /// The context.
    pub context: String,
    /// The channel.
    pub channel: Channel,
}

/// The outbox's counts of one channel, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryCounts {
    /// The channel counted.
    pub channel: Channel,
    /// Rows not yet delivered.
    pub pending: i64,
    /// Rows delivered.
    pub delivered: i64,
    /// Attempts that failed (over every row).
    pub failed_attempts: i64,
}
