//! The statements of one concern. The deadline ladder: the open requests whose
//! next rung fell due, and what a rung writes on the row (its count, the next due time, a
//! move to another context, an answer by policy on expiry).
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::ladder`].

use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;

/// The statements the ladder's rule needs from a write transaction.
pub trait LadderStatements {
    /// Replace the operator's ladder policies with `policies` (context, the policy's
    /// `ladder` JSON).
    fn replace_context_ladders(&mut self, policies: &[(String, String)]) -> Result<()>;

    /// The ladder policy of `context` (JSON), when the operator set one.
    fn context_ladder_policy(&mut self, context: &str) -> Result<Option<String>>;

    /// The open (`pending` or `claimed`) requests whose next rung is due before `now`,
    /// oldest first.
    fn open_requests_with_rung_due_before(&mut self, now: Millis) -> Result<Vec<RequestRow>>;

    /// Record that `done` rungs of request `seq` have run and when the next falls due
    /// (`None`: none is left), if the request is still open; whether it did.
    fn set_ladder_step_if_open(
        &mut self,
        seq: i64,
        done: i64,
        due_ms: Option<Millis>,
    ) -> Result<bool>;

    /// Move request `seq` to `context` as `pending` (a claim, by a lease of its old
    /// context, is dropped), if it is still open; whether it did.
    fn set_context_pending_if_open(&mut self, seq: i64, context: &str) -> Result<bool>;

    /// Answer request `seq` at `now` with `answer_json` (and its `decision`) decided by
    /// policy: no provider, `decided_by = 'policy'`, queued for the outbox; if it is still
    /// open; whether it did. The claim, if any, is kept as it was.
    fn set_answered_by_policy_if_open(
        &mut self,
        seq: i64,
        answer_json: &str,
        decision: Option<&str>,
        now: Millis,
    ) -> Result<bool>;
}
