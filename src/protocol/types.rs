//! The dsh user-questions vocabulary as serde types (spec §2).
//!
//! The JSON is exactly the spec's: camelCase field names, `multi_select` accepted as an alias
//! of `multiSelect`, and every struct denies unknown fields so a typo (`mutliSelect`) is a
//! `BAD_REQUEST` naming the field instead of silently changing meaning. `meta` is kept as a
//! JSON object in its original key order (serde_json's `preserve_order`), and is never read.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::error::UserQuestionError;

/// Free-form JSON object carried untouched (`meta`).
pub type Meta = serde_json::Map<String, serde_json::Value>;

/// One choice of a question. The label is both what the human sees and the returned value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuestionOption {
    /// Shown to the human AND returned in `selected`; non-empty, unique within its question.
    pub label: String,
    /// Optional supporting text shown next to the label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The only intent kind defined today.
pub const PLAN_REVIEW: &str = "plan-review";

/// A presentation intent: it changes how a question is shown and the recorded decision,
/// never the answer format.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Intent {
    /// The intent kind; only `"plan-review"` is accepted today.
    pub kind: String,
    /// The label of the option that approves (by name, never by position).
    pub approve: String,
}

/// One question of a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(transform = allow_multi_select_alias)]
pub struct Question {
    /// Stable id chosen by the asker and echoed back in the answer.
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub id: String,
    /// The question text.
    pub question: String,
    /// Supporting text shown with the question (for plan-review: the plan); never an option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A short group title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    /// The choices; absent means free text only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<QuestionOption>>,
    /// Several labels may be selected (default false). `multi_select` is dsh's model-facing
    /// spelling and is accepted as an alias.
    #[serde(
        default,
        alias = "multi_select",
        skip_serializing_if = "Option::is_none"
    )]
    pub multi_select: Option<bool>,
    /// A presentation intent such as plan-review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Intent>,
    /// dshq extension (edit-then-approve): whether the reviewer may return an edited
    /// version of the proposal (`detail`) with the answer (`edited` on the answer item).
    /// A plan review allows it unless this is `false`; a free-text question (no options)
    /// allows it only when this is `true`, and then needs a `detail`; a question with
    /// options and no plan-review intent cannot be editable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub editable: Option<bool>,
}

/// schemars does not see serde aliases: add `multi_select` (dsh's spelling, which the
/// parser accepts) beside `multiSelect`, and forbid giving both, as the parser does.
fn allow_multi_select_alias(schema: &mut schemars::Schema) {
    let Some(props) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) else {
        return;
    };
    let Some(mut alias) = props.get("multiSelect").cloned() else {
        return;
    };
    if let Some(obj) = alias.as_object_mut() {
        obj.insert(
            "description".into(),
            "dsh's model-facing spelling of `multiSelect`, accepted as an alias (give one of the two)."
                .into(),
        );
    }
    props.insert("multi_select".into(), alias);
    schema.insert(
        "not".into(),
        serde_json::json!({"required": ["multiSelect", "multi_select"]}),
    );
}

impl Question {
    /// Whether several labels may be selected.
    pub fn is_multi(&self) -> bool {
        self.multi_select.unwrap_or(false)
    }

    /// The options, or an empty slice for a free-text question.
    pub fn options(&self) -> &[QuestionOption] {
        self.options.as_deref().unwrap_or(&[])
    }

    /// Whether `label` names one of this question's options.
    pub fn has_label(&self, label: &str) -> bool {
        self.options().iter().any(|o| o.label == label)
    }

    /// The approve label when this is a plan-review question.
    pub fn plan_review_approve(&self) -> Option<&str> {
        self.intent
            .as_ref()
            .filter(|i| i.kind == PLAN_REVIEW)
            .map(|i| i.approve.as_str())
    }

    /// Whether an answer may carry an edited version of the proposal (see
    /// [`Question::editable`] and [`crate::protocol::edit`]).
    pub fn allows_edit(&self) -> bool {
        if self.plan_review_approve().is_some() {
            self.editable != Some(false)
        } else {
            self.editable == Some(true) && self.options.is_none() && self.detail.is_some()
        }
    }
}

/// The asking agent: an exact live instance of the registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentRef {
    /// The agent id.
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub id: String,
    /// The instance returned by `agent enter`.
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub instance: String,
}

/// A request: one or more questions asked together.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Request {
    /// The request id; from a file without `id`, the file name is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub id: Option<String>,
    /// The provider context (default `"default"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub context: Option<String>,
    /// The asking agent, or none for the agentless path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<AgentRef>,
    /// The questions, asked and answered as one batch.
    pub questions: Vec<Question>,
    /// An absolute deadline (RFC 3339); past it the request is aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    /// A relative deadline from acceptance (`"30m"`, humantime syntax).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Fail with `NO_PROVIDER` instead of queueing when no provider is live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_provider: Option<bool>,
    /// Free-form object stored and returned untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Extension: the deadline ladder, what happens while nobody answers
    /// ([`super::ladder`] resolves it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder: Option<Box<Ladder>>,
    /// dshq extension: the request is answered only when this many distinct reviewers
    /// agree ([`Quorum`]); a context's policy in the config file wins over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quorum: Option<Box<Quorum>>,
    /// dsh 0.2's continued questions: the tool call the request belongs to, and how long
    /// an asker face waits before it returns "pending" ([`super::continued`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<Box<Wait>>,
}

/// The tool call a request belongs to and its wait window (dsh 0.2's `wait` and
/// `askTimed`'s `timeoutMs`). The request's id is the call's ([`super::continued`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Wait {
    /// The tool call (as the model's host names it: 1 to 256 characters, no control
    /// characters). A second request on one call is `DUPLICATE_WAIT`.
    pub call_id: String,
    /// How long an asker face waits for the answer, in milliseconds (a safe integer,
    /// 1 to 2147483647, else `BAD_TIMEOUT`), before it returns pending; the question stays
    /// answerable. Absent: the face waits until the answer (or its own limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 2147483647))]
    pub timeout_ms: Option<serde_json::Number>,
}

/// dshq extension: M-of-N approval of a request. Each reviewer's answer is a vote; the
/// request is answered when `approvals` distinct reviewers (never the asker, and only
/// members of `group` when one is named) gave the same answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Quorum {
    /// How many distinct reviewers must give the same answer (1 to 64).
    #[schemars(range(min = 1, max = 64))]
    pub approvals: u32,
    /// A group of reviewers named in the config file (`[groups]`); only its members vote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub group: Option<String>,
    /// What a vote that declines a plan-review does (default `veto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decline: Option<DeclineRule>,
}

/// What a reviewer's decline (a plan-review answer whose decision is `declined`) does under
/// a quorum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DeclineRule {
    /// One decline ends the request at once, answered with that decline.
    #[default]
    Veto,
    /// A decline is a vote like any other: it needs `approvals` reviewers giving it.
    Vote,
}

impl DeclineRule {
    /// `veto` / `vote`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeclineRule::Veto => "veto",
            DeclineRule::Vote => "vote",
        }
    }
}

/// The default provider context.
pub const DEFAULT_CONTEXT: &str = "default";

impl Request {
    /// The context, defaulted.
    pub fn context(&self) -> &str {
        self.context.as_deref().unwrap_or(DEFAULT_CONTEXT)
    }

    /// Whether a live provider is required at acceptance.
    pub fn requires_provider(&self) -> bool {
        self.require_provider.unwrap_or(false)
    }

    /// Canonical JSON of the request as stored.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a Request always serializes")
    }
}

/// The answer to one question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerItem {
    /// The question id.
    pub id: String,
    /// Selected labels; empty for a skip or a custom-only answer.
    pub selected: Vec<String>,
    /// Free text ("Other"): overrides in single-select, supplements in multi-select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<String>,
    /// dshq extension (edit-then-approve): the reviewer's edited version of the
    /// question's proposal (its `detail`), approved as edited. Only on a question that
    /// allows an edit (a plan review, or a free-text question with `editable: true`),
    /// and on a plan review only with an approval; otherwise `EDIT_NOT_ALLOWED`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<String>,
}

impl AnswerItem {
    /// A skip: nothing selected and no custom text.
    pub fn is_skip(&self) -> bool {
        self.selected.is_empty() && self.custom.is_none()
    }
}

/// A provider's answer to a whole request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Answer {
    /// One item per question of the request.
    pub answers: Vec<AnswerItem>,
}

impl Answer {
    /// Canonical JSON of the answer as stored.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an Answer always serializes")
    }
}

/// The recorded outcome of a plan-review question.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, strum::VariantArray,
)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// `selected == [intent.approve]`.
    Approved,
    /// Anything else; `custom` is the reviewer's feedback.
    Declined,
}

impl Decision {
    /// `approved` / `declined`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approved => "approved",
            Decision::Declined => "declined",
        }
    }

    /// Parse `approved` / `declined`.
    pub fn parse(s: &str) -> Option<Decision> {
        match s {
            "approved" => Some(Decision::Approved),
            "declined" => Some(Decision::Declined),
            _ => None,
        }
    }
}

/// The outcome document written to `outbox/ID.json` once a request is final.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Outcome {
    /// The request was answered.
    Answered(AnsweredOutcome),
    /// The request ended without an answer (cancelled, aborted, rejected).
    Error(ErrorOutcome),
}

/// `{"id", "status": "answered", "requestDigest", "answer", "decision", "provider", "createdAt", "finishedAt"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnsweredOutcome {
    /// The request id.
    pub id: String,
    /// Always `"answered"`.
    pub status: String,
    /// Which request this answers: `sha256:HEX` of the canonical request
    /// ([`crate::protocol::digest`]). An asker compares it with the digest of what it
    /// asked: an id can be reused with other content (`DUPLICATE_ID`), and the earlier
    /// request's outcome then stays under that id.
    #[serde(default)]
    pub request_digest: Option<String>,
    /// The provider's answer.
    pub answer: Answer,
    /// The plan-review decision when the request has exactly one plan-review question.
    pub decision: Option<Decision>,
    /// The name of the provider that answered.
    pub provider: Option<String>,
    /// dshq extension, only for a request with a quorum: the identities whose votes made
    /// this answer (`web:NAME`, `provider:NAME`, `mcp:CLIENT`, ...), in the order they
    /// voted, one per person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Vec<String>>,
    /// dshq extension, only for a request with a quorum: every vote cast on it, in the
    /// order cast: the identity, the person it belongs to, the answer, the decision, when.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub votes: Option<Vec<VoteView>>,
    /// dshq extension: on a declined plan review, the reviewer's words (the `custom` text
    /// of that question's answer); absent otherwise. Derived from `answer`, so every face
    /// reads the same words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// When the request was accepted (RFC 3339).
    pub created_at: String,
    /// When it was answered (RFC 3339).
    pub finished_at: String,
    /// dshq extension (edit-then-approve): the questions whose proposal the reviewer
    /// edited before approving, by question id: what was proposed, what was approved,
    /// and the unified diff between them. Absent when nothing was edited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<Edits>,
    /// Extension: `"policy"` when nobody answered and the asker's declared
    /// default was used on expiry (`ladder.onExpire: "default"`); omitted when a person
    /// answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    /// Extension: the away person this answer was made for by their delegate (the
    /// `provider`): "D for P". Omitted otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
    /// Extension (dsh 0.2's continued questions): the tool call of a request that came
    /// with a `wait`, so a late answer is delivered to its call. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Extension: the signed decision receipt of this outcome (in `outbox/ID.json`; see
    /// `dshq receipt verify`). Absent where none was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Box<Receipt>>,
}

/// One vote on a request with a quorum, as the faces and the outcome show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VoteView {
    /// The identity that voted (`web:NAME`, `provider:NAME`, `mcp:CLIENT`,
    /// `slack:REVIEWER`, `mail:ADDRESS`).
    pub voter: String,
    /// The person that identity belongs to (absent for a vote recorded before persons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The answer voted for (an answer as the dsh vocabulary writes it).
    #[schemars(with = "Answer")]
    pub answer: serde_json::Value,
    /// The request-level decision of that answer, if it makes one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// When (RFC 3339).
    pub at: String,
    /// dshq extension: the away person this vote was cast for by their delegate (the
    /// voter): "D for P". Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
}

impl VoteView {
    /// Who, for people: `alice via web:alice` (the identity alone when it has no person),
    /// with `for bob` when cast for an away person.
    pub fn who(&self) -> String {
        let who = match &self.person {
            Some(p) => format!("{p} via {}", self.voter),
            None => self.voter.clone(),
        };
        match &self.on_behalf_of {
            Some(p) => format!("{who} for {p}"),
            None => who,
        }
    }
}

/// The edits of an answer, by question id (in id order).
pub type Edits = std::collections::BTreeMap<String, Edited>;

/// One question's proposal as the reviewer edited and approved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Edited {
    /// The asker's proposal: the question's `detail` as asked.
    pub proposed: String,
    /// The text the reviewer approved (the answer item's `edited`).
    pub approved: String,
    /// The unified diff from `proposed` to `approved` (headers `proposed` and
    /// `approved`, three lines of context), as recorded when the answer was given.
    pub diff: String,
}

/// `{"id", "status": "error", "requestDigest", "error", "createdAt", "finishedAt"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorOutcome {
    /// The request id.
    pub id: String,
    /// Always `"error"`.
    pub status: String,
    /// Which request this ends: `sha256:HEX` of the canonical request, or null for a
    /// rejected input that did not parse as a request (see [`AnsweredOutcome`]).
    #[serde(default)]
    pub request_digest: Option<String>,
    /// Why it ended (`ASK_CANCELLED`, `ASK_ABORTED`, or the rejection code).
    pub error: UserQuestionError,
    /// The provider that cancelled, when it was cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// When the request was accepted or rejected (RFC 3339).
    pub created_at: String,
    /// When it ended (RFC 3339).
    pub finished_at: String,
    /// Extension (dsh 0.2's continued questions): the tool call of a request that came
    /// with a `wait`, so a late answer is delivered to its call. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Extension: the signed decision receipt of this outcome (in `outbox/ID.json`; see
    /// `dshq receipt verify`). Absent where none was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<Box<Receipt>>,
}

impl Outcome {
    /// The request id.
    pub fn id(&self) -> &str {
        match self {
            Outcome::Answered(o) => &o.id,
            Outcome::Error(o) => &o.id,
        }
    }

    /// The receipt it carries, if any.
    pub fn receipt(&self) -> Option<&Receipt> {
        match self {
            Outcome::Answered(o) => o.receipt.as_deref(),
            Outcome::Error(o) => o.receipt.as_deref(),
        }
    }

    /// The same outcome carrying `receipt` (or none).
    pub fn with_receipt(mut self, receipt: Option<Receipt>) -> Outcome {
        let slot = match &mut self {
            Outcome::Answered(o) => &mut o.receipt,
            Outcome::Error(o) => &mut o.receipt,
        };
        *slot = receipt.map(Box::new);
        self
    }

    /// Pretty JSON with a trailing newline, as written to the outbox.
    pub fn to_file_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("an Outcome always serializes");
        s.push('\n');
        s
    }
}

// ---- the outcome's receipt extension --------------------------------------
//
// Beside the outcome because each contains the other (an outcome file carries its
// receipt; a receipt signs the outcome without one). `crate::protocol::receipt` is where
// the rest of the receipt's vocabulary lives; `crate::receipt` signs and verifies.

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
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub quorum: Option<serde_json::Value>,
    /// The escalation ladder extension, when the request carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
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

/// What expiry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnExpire {
    /// End the request with `ASK_EXPIRED` and no answer (the default).
    #[default]
    Fail,
    /// Answer it with the declared `default`, attributed to policy (`decidedBy: "policy"`).
    Default,
}

/// The asker's `ladder` extension object, as written in the request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ladder {
    /// After this long unanswered (humantime, from acceptance), a `reminded` event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_after: Option<String>,
    /// After this long unanswered, an `escalated` event (and the move to `escalateTo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_after: Option<String>,
    /// The context the request moves to when it escalates (its claim, of a lease of the
    /// old context, is released).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub escalate_to: Option<String>,
    /// After this long unanswered, the request expires (`ASK_EXPIRED`, or the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_after: Option<String>,
    /// `"fail"` (the default) or `"default"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_expire: Option<OnExpire>,
    /// The answer used on expiry when `onExpire` is `"default"`; checked against the
    /// questions by the answer rules at acceptance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Answer>,
}
