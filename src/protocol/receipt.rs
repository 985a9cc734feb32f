//! The signed decision receipt (an extension of the outcome document, issue 30).
//!
//! A receipt says, for one final request, what was asked (its digest and the questions
//! shown), how it ended (the outcome document the asker got), who decided, under which
//! policy, when, and where its final event sits in the hash chain; signed with the host's
//! Ed25519 key ([`crate::receipt`]). These are the types only, as they go on the wire: the
//! outcome file carries one in its optional `receipt` field, `dshq receipt ID` prints one,
//! `dshq export --receipts` writes them all.
//!
//! The signature covers the receipt's exact bytes (see [`crate::receipt::seal`]); these
//! types fix the field order, so a receipt built twice from the same store is the same
//! document, byte for byte.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::types::{Outcome, Question};

/// The format tag every receipt starts with (its `receipt` member).
pub const RECEIPT_FORMAT: &str = "dshq.receipt.v1";

/// A signed decision receipt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Receipt {
    /// Always `"dshq.receipt.v1"`.
    pub receipt: String,
    /// The request id.
    pub id: String,
    /// The request's final status: `answered`, `cancelled`, `aborted` or `rejected`.
    pub status: String,
    /// `sha256:HEX` of the canonical request (as in the outcome); null for a rejected
    /// input that did not parse as a request.
    pub request_digest: Option<String>,
    /// The provider context the request was asked in.
    pub context: String,
    /// What was shown to the reviewer: the questions (text, detail, options, intents) as
    /// stored. Null for a rejection: a refused input is shown to nobody.
    pub shown: Option<Shown>,
    /// The outcome document the asker got (without a receipt of its own): the answer and
    /// the decision, or the error.
    pub outcome: Box<Outcome>,
    /// Who approved: the identities whose answer made the request final (today the one
    /// answering identity, `provider:NAME`, `web:NAME`, `mcp:CLIENT`; a list, so a quorum
    /// fits). Empty when it ended without an answer.
    pub approvers: Vec<String>,
    /// Who made the request final, as the final event records it (the answering or
    /// cancelling identity, `asker`/`agent:ID` for an abort, `daemon` for a deadline or
    /// an inbox rejection).
    pub actor: String,
    /// The policy the request carried.
    pub policy: Policy,
    /// When.
    pub times: Times,
    /// Where the final event sits in the hash chain.
    pub chain: ChainPosition,
    /// The public key that signed it: `ed25519:` and 64 lowercase hex digits.
    pub signer: String,
    /// The Ed25519 signature, 128 lowercase hex digits (see [`crate::receipt::seal`] for
    /// the bytes it covers).
    pub signature: String,
}

/// What was shown to the reviewer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Shown {
    /// The questions, as the request stored them.
    pub questions: Vec<Question>,
}

/// The policy a request carried beyond its questions: its deadline, and room for the
/// quorum and escalation ladder extensions. Each member is absent when not set.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// The absolute deadline enforced (RFC 3339): the request's own, or its timeout from
    /// acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// The relative timeout as the asker gave it (`"30m"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Whether a live provider was required at acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_provider: Option<bool>,
    /// The quorum extension, when the request carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<serde_json::Value>,
    /// The escalation ladder extension, when the request carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder: Option<serde_json::Value>,
}

/// When the request was accepted, claimed and finished (RFC 3339, milliseconds, UTC).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Times {
    /// Accepted (or rejected) at.
    pub created_at: String,
    /// Last claimed at, when it was claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_at: Option<String>,
    /// Final at.
    pub finished_at: String,
}

/// The final event's place in the hash chain: `dshq audit verify` on the host's store
/// (or on an export of it) shows the event at `seq` has `hash`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChainPosition {
    /// The final event's seq.
    pub seq: i64,
    /// Its kind (`answered`, `cancelled`, `aborted`, `rejected`).
    pub kind: String,
    /// Its hash (lowercase hex).
    pub hash: String,
}
