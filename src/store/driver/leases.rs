//! The statements of provider leases: one live lease per context, fenced by a token.
//!
//! See [`super`] for what a statement is and is not. The rules that use these
//! (authentication, the duplicate check, ends and their events) are
//! [`crate::store::queue::leases`].

use crate::clock::Millis;
use crate::core::lifecycle::LeaseEnd;
use crate::error::Result;

/// A lease row as the token check needs it.
#[derive(Debug, Clone)]
pub struct LeaseRow {
    /// Its id (the token's first part).
    pub lease_id: i64,
    /// Its context.
    pub context: String,
    /// The provider's name.
    pub name: String,
    /// Its generation in the context (the fence).
    pub generation: i64,
    /// The SHA-256 of the token's secret.
    pub digest: Vec<u8>,
    /// Its ttl.
    pub ttl_ms: Millis,
    /// When it expires unless extended.
    pub expires_ms: Millis,
    /// Why it ended, when it did (`LeaseEnd`'s text).
    pub end_reason: Option<String>,
}

/// The unended lease of a context.
#[derive(Debug, Clone)]
pub struct UnendedLease {
    /// Its id.
    pub lease_id: i64,
    /// The provider's name.
    pub name: String,
    /// Its generation.
    pub generation: i64,
    /// When it was registered.
    pub created_ms: Millis,
    /// When it expires unless extended.
    pub expires_ms: Millis,
    /// The web holder's label, when the page holds it.
    pub host_label: Option<String>,
    /// The web holder's idle limit, when the page holds it.
    pub host_idle_ms: Option<Millis>,
}

/// A lease held by a host (its earlier life's).
#[derive(Debug, Clone)]
pub struct HeldLease {
    /// Its id.
    pub lease_id: i64,
    /// Its context.
    pub context: String,
    /// The provider's name.
    pub name: String,
    /// Its generation.
    pub generation: i64,
}

/// A lease to insert.
#[derive(Debug, Clone)]
pub struct NewLease<'a> {
    /// Its context.
    pub context: &'a str,
    /// The provider's name.
    pub name: &'a str,
    /// Its generation (the next in the context).
    pub generation: i64,
    /// The SHA-256 of the token's secret.
    pub digest: &'a [u8],
    /// Its ttl.
    pub ttl_ms: Millis,
    /// Now: registered and last heartbeat.
    pub now: Millis,
    /// When it expires unless extended.
    pub expires_ms: Millis,
    /// The host that holds it for the page: id, label, idle limit.
    pub host: Option<(&'a str, &'a str, Millis)>,
}

/// A lease as `provider status` shows it, before the time is applied.
#[derive(Debug, Clone)]
pub struct LeaseInfoRow {
    /// Its id.
    pub lease_id: i64,
    /// Its context.
    pub context: String,
    /// The provider's name.
    pub name: String,
    /// Its generation.
    pub generation: i64,
    /// When it was registered.
    pub created_ms: Millis,
    /// Its last heartbeat.
    pub heartbeat_ms: Millis,
    /// When it expires unless extended.
    pub expires_ms: Millis,
    /// When it ended.
    pub ended_ms: Option<Millis>,
    /// Why it ended.
    pub end_reason: Option<String>,
    /// How many requests it holds claimed.
    pub claimed: i64,
}

/// The reads of the lease rules that also run outside a write (authenticating a token).
pub trait LeaseReads {
    /// The lease `lease_id`, whatever its state.
    fn lease_by_id(&mut self, lease_id: i64) -> Result<Option<LeaseRow>>;
    /// The data of the `lease-revoked` event of `lease_id`, if it was revoked.
    fn lease_revoked_event_data(&mut self, lease_id: i64) -> Result<Option<String>>;
    /// Whether a lease of `context` is unended and not expired at `now`.
    fn live_lease_exists(&mut self, context: &str, now: Millis) -> Result<bool>;
    /// The lease `lease_id` for `provider status`.
    fn lease_info(&mut self, lease_id: i64) -> Result<Option<LeaseInfoRow>>;
    /// The unended leases, of every context or of one, by context.
    fn unended_lease_infos(&mut self, context: Option<&str>) -> Result<Vec<LeaseInfoRow>>;
}

/// The statements the lease rules need from a write transaction.
pub trait LeaseStatements: LeaseReads {
    /// The unended lease of `context`, if any (at most one: an index keeps it so).
    fn unended_lease_of_context(&mut self, context: &str) -> Result<Option<UnendedLease>>;
    /// The next generation of `context` (1 for its first lease).
    fn next_lease_generation(&mut self, context: &str) -> Result<i64>;
    /// Insert a lease; its id, or `None` when the index of live leases refused it (one
    /// was registered in the context meanwhile).
    fn insert_lease_if_none_unended(&mut self, lease: &NewLease<'_>) -> Result<Option<i64>>;
    /// Move the lease's expiry to `expires_ms`, if it is still the unended, unexpired
    /// lease of that generation at `now`: whether it was.
    fn extend_lease_if_live(
        &mut self,
        lease_id: i64,
        generation: i64,
        now: Millis,
        expires_ms: Millis,
    ) -> Result<bool>;
    /// End the lease at `now` for `reason`, if it has not ended: whether it ended it (a
    /// writer that lost a race to end it changes nothing).
    fn end_lease_if_unended(
        &mut self,
        lease_id: i64,
        now: Millis,
        reason: LeaseEnd,
    ) -> Result<bool>;
    /// Return every request claimed by `lease_id` to `pending`: their ids, in arrival order.
    fn unclaim_requests_of_lease(&mut self, lease_id: i64) -> Result<Vec<String>>;
    /// The unended leases expired before `now` (id, provider name), by id.
    fn unended_leases_expired_before(&mut self, now: Millis) -> Result<Vec<(i64, String)>>;
    /// The unended leases held by the host `host_id`, by id.
    fn unended_leases_of_host(&mut self, host_id: &str) -> Result<Vec<HeldLease>>;
}
