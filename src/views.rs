//! The views: what a request, an agent, a question and an error look like as JSON. They
//! are a contract (tested as such), shared by every face that speaks JSON: the CLI's
//! `--json`, the HTTP API (and its OpenAPI schema), the hooks' stdin and MCP. Terminal
//! rendering of the same values is [`crate::output`]'s; nothing here prints or touches
//! the database.

use serde::Serialize;

use crate::clock::{rfc3339, Millis};
use crate::protocol::{Decision, Outcome, Question, UserQuestionError};
use crate::store::{RequestRow, Status};

/// The asking agent as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentView {
    /// Agent id.
    pub id: String,
    /// Instance.
    pub instance: String,
    /// Lineage recorded at acceptance.
    pub lineage: Option<String>,
}

/// One line of `dshq list`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestSummary {
    /// Request id.
    pub id: Option<String>,
    /// Context.
    pub context: String,
    /// State.
    pub status: Status,
    /// Asking agent id.
    pub agent: Option<String>,
    /// How many questions.
    pub questions: usize,
    /// The first question's text.
    pub question: Option<String>,
    /// Whether any question is a plan review.
    pub plan_review: bool,
    /// RFC 3339 acceptance.
    pub created_at: String,
    /// RFC 3339 end.
    pub finished_at: Option<String>,
    /// Provider holding the claim, or that answered/cancelled.
    pub provider: Option<String>,
    /// Error code of a request that ended without an answer.
    pub error_code: Option<String>,
    /// The decision of a plan review.
    pub decision: Option<Decision>,
    /// dshq extension, for a request with a quorum: its progress (how many persons agree
    /// of how many needed) and who voted; absent for any other.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<QuorumProgress>,
    /// When it was accepted (for relative times on a terminal).
    #[serde(skip)]
    pub created_ms: Millis,
    /// Its deadline, if any (the table shows it; JSON readers have `dshq show`).
    #[serde(skip)]
    pub deadline_ms: Option<Millis>,
}

impl RequestSummary {
    /// Build from a row.
    pub fn from_row(r: &RequestRow) -> RequestSummary {
        let req = r.request();
        let questions = req.as_ref().map(|q| q.questions.as_slice()).unwrap_or(&[]);
        RequestSummary {
            id: r.id.clone(),
            context: r.context.clone(),
            status: r.status,
            agent: r.agent_id.clone(),
            questions: questions.len(),
            question: questions.first().map(|q| q.question.clone()),
            plan_review: questions.iter().any(|q| q.plan_review_approve().is_some()),
            created_at: rfc3339(r.created_ms),
            finished_at: r.finished_ms.map(rfc3339),
            provider: r.provider.clone().or_else(|| r.claimed_by.clone()),
            error_code: r.error_code.clone(),
            decision: r.decision,
            quorum: r.quorum_view().map(|q| QuorumProgress {
                approvals: q.approvals,
                agreeing: q.agreeing,
                voters: q.votes.iter().map(|v| v.who()).collect(),
            }),
            created_ms: r.created_ms,
            deadline_ms: r.deadline_ms,
        }
    }
}

/// A quorum's progress in a list: `agreeing` of `approvals` persons, and who voted.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuorumProgress {
    /// Persons that must agree.
    pub approvals: u32,
    /// Persons who agree on the answer most of them gave so far.
    pub agreeing: u32,
    /// Each vote's voter (`bob via provider:bob`), in the order cast.
    pub voters: Vec<String>,
}

/// One question with its answer, for `dshq show`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionView {
    /// The question as asked.
    #[serde(flatten)]
    pub question: Question,
    /// Selected labels, once answered.
    pub selected: Option<Vec<String>>,
    /// Custom text, once answered.
    pub custom: Option<String>,
    /// Plan-review decision, once answered.
    pub decision: Option<Decision>,
}

/// `dshq show ID`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestView {
    /// Request id.
    pub id: Option<String>,
    /// Context.
    pub context: String,
    /// State.
    pub status: Status,
    /// The asking agent.
    pub agent: Option<AgentView>,
    /// Where it came from (`cli`, `inbox:FILE`).
    pub source: String,
    /// RFC 3339 acceptance.
    pub created_at: String,
    /// RFC 3339 deadline.
    pub deadline: Option<String>,
    /// Provider holding the claim.
    pub claimed_by: Option<String>,
    /// RFC 3339 claim time.
    pub claimed_at: Option<String>,
    /// RFC 3339 end.
    pub finished_at: Option<String>,
    /// Whether a provider was required at acceptance.
    pub require_provider: bool,
    /// The questions with their answers.
    pub questions: Vec<QuestionView>,
    /// `meta`, untouched.
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    /// The outcome document, once final.
    pub outcome: Option<Outcome>,
    /// For a rejection: the raw input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// dshq extension: the quorum the request is held to and its votes so far;
    /// absent for a request without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<crate::core::quorum::QuorumView>,
    /// Who answered or cancelled it (human text only; the outcome carries it for JSON).
    #[serde(skip)]
    pub provider: Option<String>,
}

impl RequestView {
    /// Build from a row.
    pub fn from_row(r: &RequestRow) -> RequestView {
        let req = r.request();
        let answer = r.parsed_answer();
        let questions = req
            .as_ref()
            .map(|req| {
                req.questions
                    .iter()
                    .map(|q| {
                        let item = answer
                            .as_ref()
                            .and_then(|a| a.answers.iter().find(|i| i.id == q.id));
                        QuestionView {
                            question: q.clone(),
                            selected: item.map(|i| i.selected.clone()),
                            custom: item.and_then(|i| i.custom.clone()),
                            decision: item.and_then(|i| crate::protocol::answer::decision(q, i)),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        RequestView {
            id: r.id.clone(),
            context: r.context.clone(),
            status: r.status,
            agent: r.agent_id.clone().map(|id| AgentView {
                id,
                instance: r.agent_instance.clone().unwrap_or_default(),
                lineage: r.agent_lineage.clone(),
            }),
            source: r.source.clone(),
            created_at: rfc3339(r.created_ms),
            deadline: r.deadline_ms.map(rfc3339),
            claimed_by: r.claimed_by.clone().filter(|_| r.status == Status::Claimed),
            claimed_at: r.claimed_ms.map(rfc3339),
            finished_at: r.finished_ms.map(rfc3339),
            require_provider: req.as_ref().is_some_and(|q| q.requires_provider()),
            questions,
            meta: req.and_then(|q| q.meta),
            outcome: r.outcome(),
            raw: (r.status == Status::Rejected).then(|| r.body.clone()),
            quorum: r.quorum_view(),
            provider: r.provider.clone(),
        }
    }
}

/// The `--json` error document: `{"error": {name, code, message}}`.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorDoc<'a> {
    /// The error.
    pub error: &'a UserQuestionError,
}
