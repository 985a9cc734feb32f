//! A request's lifecycle (spec §5): its states, which of them are final, and how a lease
//! ends. Pure; a backend stores these as their [`Status::as_str`] words.

use serde::Serialize;

use crate::clock::{rfc3339, Millis};
use crate::protocol::error::{Code, UserQuestionError};
use crate::protocol::types::{
    Answer, AnsweredOutcome, Decision, Edits, ErrorOutcome, Outcome, Request,
};

/// A request's state.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema, strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for a provider.
    Pending,
    /// Reserved by a live lease.
    Claimed,
    /// Final: answered.
    Answered,
    /// Final: cancelled by the provider side (`ASK_CANCELLED`).
    Cancelled,
    /// Final: aborted by the asker or its deadline (`ASK_ABORTED`).
    Aborted,
    /// Final: rejected at ingestion, with its code.
    Rejected,
    /// Final: nobody answered before the request's ladder expired it (`ASK_EXPIRED`).
    /// A request answered by its declared default on expiry is `answered`.
    Expired,
}

impl Status {
    /// Every status, in lifecycle order (derived: no variant can be missing).
    pub const ALL: &'static [Status] = <Status as strum::VariantArray>::VARIANTS;

    /// The open statuses ([`Status::is_open`]): what a reviewer's queue shows.
    pub const OPEN: &'static [Status] = &[Status::Pending, Status::Claimed];

    /// The status as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Claimed => "claimed",
            Status::Answered => "answered",
            Status::Cancelled => "cancelled",
            Status::Aborted => "aborted",
            Status::Rejected => "rejected",
            Status::Expired => "expired",
        }
    }

    /// Parse a stored status.
    pub fn parse(s: &str) -> Option<Status> {
        Self::ALL.iter().copied().find(|st| st.as_str() == s)
    }

    /// Whether the state is final (never changes again): a final request has an outcome.
    pub fn is_final(self) -> bool {
        !matches!(self, Status::Pending | Status::Claimed)
    }

    /// Whether a provider may still act on it (claim, answer, cancel) or the asker abort it.
    pub fn is_open(self) -> bool {
        !self.is_final()
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request row (with the claiming provider's name).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// Row handle.
    pub seq: i64,
    /// Request id (None only for a rejected input without a usable id).
    pub id: Option<String>,
    /// Context.
    pub context: String,
    /// State.
    pub status: Status,
    /// Asking agent.
    pub agent_id: Option<String>,
    /// Asking agent's instance.
    pub agent_instance: Option<String>,
    /// Lineage recorded at acceptance.
    pub agent_lineage: Option<String>,
    /// The request JSON as accepted (raw input for a rejection).
    pub body: String,
    /// `cli` or `inbox:FILE`.
    pub source: String,
    /// Absolute deadline.
    pub deadline_ms: Option<Millis>,
    /// Accepted (or rejected) at.
    pub created_ms: Millis,
    /// The lease that claimed (or answered) it.
    pub claimed_lease: Option<i64>,
    /// The name of that lease's provider.
    pub claimed_by: Option<String>,
    /// Claimed at.
    pub claimed_ms: Option<Millis>,
    /// Final at.
    pub finished_ms: Option<Millis>,
    /// The Answer JSON.
    pub answer: Option<String>,
    /// The plan-review decision of the request.
    pub decision: Option<Decision>,
    /// Provider that answered or cancelled.
    pub provider: Option<String>,
    /// Error code of a cancelled, aborted or rejected request.
    pub error_code: Option<String>,
    /// Its message.
    pub error_message: Option<String>,
    /// The quorum it is held to ([`crate::core::quorum::Required`] as JSON), fixed at
    /// acceptance; `None` for a request without one.
    pub quorum: Option<String>,
    /// The approvers of its answer (a JSON array), once a request with a quorum is answered.
    pub approvers: Option<String>,
    /// Its votes so far (a JSON array of [`crate::core::quorum::Vote`]), for a request with
    /// a quorum; `None` for any other.
    pub votes: Option<String>,
    /// The edits the answer made (edit-then-approve), as the JSON of
    /// [`crate::protocol::types::Edits`]; `None` when it edited nothing.
    pub edits: Option<String>,
    /// The request's deadline ladder resolved at acceptance
    /// ([`crate::protocol::ladder::Rungs`] as JSON), when it has one.
    pub ladder: Option<String>,
    /// How many rungs of the ladder have run.
    pub ladder_done: i64,
    /// `policy` when the request was answered by its declared default on expiry.
    pub decided_by: Option<String>,
    /// The away person the answer was made for by their delegate (who is `provider`).
    pub on_behalf_of: Option<String>,
}

impl RequestRow {
    /// The request as accepted (None for a rejection, whose body may not parse).
    pub fn request(&self) -> Option<Request> {
        if self.status == Status::Rejected {
            return None;
        }
        serde_json::from_str(&self.body).ok()
    }

    /// The stored edits (none when the answer edited nothing, or the column does not
    /// parse: the record check reports that).
    pub fn parsed_edits(&self) -> Option<Edits> {
        self.edits
            .as_deref()
            .and_then(|e| serde_json::from_str(e).ok())
    }

    /// The stored answer.
    pub fn parsed_answer(&self) -> Option<Answer> {
        self.answer
            .as_deref()
            .and_then(|a| serde_json::from_str(a).ok())
    }

    /// The digest of the request this row holds ([`crate::protocol::digest`]): of the
    /// accepted request, or of a rejected input when it parses as a request.
    pub fn request_digest(&self) -> Option<String> {
        let request = match self.status {
            Status::Rejected => crate::protocol::check::parse_request(self.body.as_bytes()).ok(),
            _ => self.request(),
        };
        request
            .as_ref()
            .map(crate::protocol::digest::request_digest)
    }

    /// The tool call of a request that came with a `wait` (dsh 0.2's continued
    /// questions), if any.
    pub fn call_id(&self) -> Option<String> {
        self.request()?.wait.map(|w| w.call_id)
    }

    /// The quorum it is held to, if any.
    pub fn required_quorum(&self) -> Option<crate::core::quorum::Required> {
        self.quorum
            .as_deref()
            .and_then(crate::core::quorum::Required::parse)
    }

    /// Its votes so far, in the order they were cast (empty without a quorum).
    pub fn parsed_votes(&self) -> Vec<crate::core::quorum::Vote> {
        self.votes
            .as_deref()
            .and_then(|v| serde_json::from_str(v).ok())
            .unwrap_or_default()
    }

    /// Its quorum and votes as faces show them (`None` without a quorum).
    pub fn quorum_view(&self) -> Option<crate::core::quorum::QuorumView> {
        let q = self.required_quorum()?;
        Some(crate::core::quorum::QuorumView::of(
            &q,
            &self.parsed_votes(),
        ))
    }

    /// The approvers of its answer, once a request with a quorum is answered.
    pub fn parsed_approvers(&self) -> Option<Vec<String>> {
        self.approvers
            .as_deref()
            .and_then(|a| serde_json::from_str(a).ok())
    }

    /// The outcome document, once final.
    pub fn outcome(&self) -> Option<Outcome> {
        let id = self.id.clone()?;
        let finished = self.finished_ms?;
        match self.status {
            Status::Pending | Status::Claimed => None,
            Status::Answered => {
                let answer = self.parsed_answer()?;
                let feedback = self.request().and_then(|r| {
                    crate::protocol::answer::feedback(&r.questions, &answer, self.decision)
                });
                Some(Outcome::Answered(AnsweredOutcome {
                    id,
                    status: "answered".into(),
                    request_digest: self.request_digest(),
                    answer,
                    decision: self.decision,
                    provider: self.provider.clone(),
                    approvers: self.parsed_approvers(),
                    votes: self.quorum_view().map(|q| q.votes),
                    feedback,
                    created_at: rfc3339(self.created_ms),
                    finished_at: rfc3339(finished),
                    edited: self.parsed_edits(),
                    decided_by: self.decided_by.clone(),
                    on_behalf_of: self.on_behalf_of.clone(),
                    call_id: self.call_id(),
                    receipt: None,
                }))
            }
            Status::Cancelled | Status::Aborted | Status::Rejected | Status::Expired => {
                let code =
                    self.error_code
                        .as_deref()
                        .and_then(Code::parse)
                        .unwrap_or(match self.status {
                            Status::Cancelled => Code::AskCancelled,
                            Status::Expired => Code::AskExpired,
                            _ => Code::AskAborted,
                        });
                Some(Outcome::Error(ErrorOutcome {
                    id,
                    status: "error".into(),
                    request_digest: self.request_digest(),
                    error: UserQuestionError::new(
                        code,
                        self.error_message.clone().unwrap_or_default(),
                    ),
                    provider: self.provider.clone(),
                    created_at: rfc3339(self.created_ms),
                    finished_at: rfc3339(finished),
                    call_id: self.call_id(),
                    receipt: None,
                }))
            }
        }
    }
}

/// Why a provider lease ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::VariantArray)]
pub enum LeaseEnd {
    /// Its holder released it.
    Released,
    /// Its ttl ran out without a heartbeat (ended by whoever swept).
    Expired,
}

impl LeaseEnd {
    /// Every reason (derived).
    pub const ALL: &'static [LeaseEnd] = <LeaseEnd as strum::VariantArray>::VARIANTS;

    /// The reason as stored (`leases.end_reason`) and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseEnd::Released => "released",
            LeaseEnd::Expired => "expired",
        }
    }

    /// Parse a stored reason.
    pub fn parse(s: &str) -> Option<LeaseEnd> {
        Self::ALL.iter().copied().find(|r| r.as_str() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_round_trips_and_only_open_states_are_not_final() {
        for &st in Status::ALL {
            assert_eq!(Status::parse(st.as_str()), Some(st));
            assert_eq!(st.is_open(), !st.is_final());
            assert_eq!(
                serde_json::to_value(st).unwrap(),
                serde_json::Value::from(st.as_str())
            );
        }
        assert_eq!(Status::parse("nonsense"), None);
        let open: Vec<_> = Status::ALL
            .iter()
            .copied()
            .filter(|s| s.is_open())
            .collect();
        assert_eq!(open, [Status::Pending, Status::Claimed]);
    }

    #[test]
    fn every_lease_end_round_trips() {
        for &r in LeaseEnd::ALL {
            assert_eq!(LeaseEnd::parse(r.as_str()), Some(r));
        }
        assert_eq!(LeaseEnd::parse(""), None);
    }
}
