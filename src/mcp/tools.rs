//! The tools and their schemas. The input schema of `ask_user_question` is generated
//! from the protocol's own types ([`Question`], [`AgentRef`], [`Meta`]: the same types
//! the request schema `dshq schema request` comes from), so the model is offered exactly
//! the vocabulary ingestion accepts; the arguments are then checked by the same parser
//! as an inbox file. Every result has an output schema, and `structuredContent` matches it.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::types::{AgentRef, AnswerItem, Decision, Meta, Question};

/// The tool names (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolName {
    /// Ask the human one or more questions.
    Ask,
    /// Collect the answer to an earlier question.
    GetAnswer,
    /// Withdraw an earlier question.
    Abort,
    /// Answer the pending questions as the human at this client (elicitation).
    Review,
}

impl ToolName {
    /// Every tool.
    pub const ALL: &'static [ToolName] = &[
        ToolName::Ask,
        ToolName::GetAnswer,
        ToolName::Abort,
        ToolName::Review,
    ];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Ask => "ask_user_question",
            ToolName::GetAnswer => "get_answer",
            ToolName::Abort => "abort_question",
            ToolName::Review => "review_questions",
        }
    }

    /// Parse a tool name.
    pub fn parse(s: &str) -> Option<ToolName> {
        Self::ALL.iter().copied().find(|t| t.as_str() == s)
    }
}

// Only the schema is generated from this type: the arguments themselves go through the
// request parser as bytes, so their errors are those of a request file. (A plain comment:
// doc comments become the schema's descriptions, which the model reads.)
/// A question (or several, answered together) for the human user, plus how long this
/// call may wait for the answer.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AskArgs {
    /// The questions, asked and answered as one batch. Give each a stable `id`; options
    /// are choices (the label is returned), `multiSelect` allows several, free text
    /// ("Other") is always possible. For a plan review put the plan in `detail` and set
    /// `intent: {"kind": "plan-review", "approve": "<label of the approving option>"}`.
    pub questions: Vec<Question>,
    /// The request id (letters, digits, `.`, `_`, `-`); default: a generated one.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub id: Option<String>,
    /// The provider context (default `"default"`).
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub context: Option<String>,
    /// The asking agent; default: this session's agent, if the server was given one.
    #[serde(default)]
    pub agent: Option<AgentRef>,
    /// An absolute deadline (RFC 3339); past it the question is aborted.
    #[serde(default)]
    pub deadline: Option<String>,
    /// A relative deadline from acceptance (`"30m"`, `"2h"`).
    #[serde(default)]
    pub timeout: Option<String>,
    /// Fail with NO_PROVIDER instead of queueing when no human reviewer is connected.
    #[serde(default)]
    pub require_provider: Option<bool>,
    /// Free-form object stored and returned untouched.
    #[serde(default)]
    pub meta: Option<Meta>,
    /// How long this call waits for the answer, in seconds, before it returns
    /// "pending" (default: the server's; capped by the server's maximum). 0 returns at
    /// once.
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// The arguments of `get_answer`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetAnswerArgs {
    /// The request id `ask_user_question` returned.
    pub id: String,
    /// How long to wait for the answer, in seconds (default 0: look once; capped by the
    /// server's maximum).
    #[serde(default)]
    pub wait_seconds: Option<u64>,
}

/// The arguments of `abort_question`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AbortArgs {
    /// The request id.
    pub id: String,
    /// Why (recorded, and shown in the outcome's message).
    #[serde(default)]
    pub reason: Option<String>,
}

/// The arguments of `review_questions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewArgs {
    /// The provider context to review (default `"default"`).
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub context: Option<String>,
    /// Only the questions of this agent id.
    #[serde(default)]
    pub agent: Option<String>,
    /// At most this many requests in this call.
    #[serde(default)]
    pub limit: Option<u32>,
}

/// Where a question stands in a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum QuestionState {
    /// The human answered; `answers` holds the answer.
    Answered,
    /// Nobody has answered yet; the question stays queued. Collect it with `get_answer`.
    Pending,
}

/// The result of `ask_user_question` and `get_answer`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionResult {
    /// The request id: give it to `get_answer` or `abort_question`.
    pub id: String,
    /// `answered` or `pending`.
    pub status: QuestionState,
    /// `sha256:HEX` of the request as stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_digest: Option<String>,
    /// One item per question when answered: the selected labels and any free text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answers: Option<Vec<AnswerItem>>,
    /// The plan-review decision, when the request is one plan review.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// Who answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// When pending: how to collect the answer later.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// The result of `abort_question`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AbortResult {
    /// The request id.
    pub id: String,
    /// Always `aborted`.
    pub status: String,
}

/// What `review_questions` did with one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Reviewed {
    /// Answered (a skip of every question is an answer too).
    Answered,
    /// Left pending (the human cancelled the review at it).
    Left,
}

/// One request `review_questions` presented.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewedRequest {
    /// The request id.
    pub id: String,
    /// What became of it.
    pub outcome: Reviewed,
    /// The plan-review decision, when it was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
}

/// The result of `review_questions`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewResult {
    /// The context reviewed.
    pub context: String,
    /// The requests presented, in order.
    pub reviewed: Vec<ReviewedRequest>,
    /// Whether the human stopped the review (cancel); the rest stays pending.
    pub stopped: bool,
    /// How many requests of the context are still open.
    pub still_open: usize,
}

/// A JSON Schema as an object (MCP wants `type: object` at the top).
fn schema_of<T: JsonSchema>() -> Arc<JsonObject> {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(serde_json::Value::Object(o)) => Arc::new(o),
        _ => unreachable!("a derived schema is an object"),
    }
}

/// The tool list.
pub fn list() -> Vec<Tool> {
    ToolName::ALL.iter().map(|t| tool(*t)).collect()
}

/// One tool's definition.
pub fn tool(name: ToolName) -> Tool {
    let (description, input, output, annotations) = match name {
        ToolName::Ask => (
            "Ask the human user one or more questions through dshq's durable queue and wait a \
             bounded time for the answer. The question is stored durably first: if nobody answers \
             within the wait, the result says \"pending\" with the request id, and the answer can be \
             collected later with get_answer (it survives this session). Use options for choices, \
             multiSelect for several, and the plan-review intent to ask for approval of a plan.",
            schema_of::<AskArgs>(),
            schema_of::<QuestionResult>(),
            // Idempotent only with the same `id`; without one, each call is a new question.
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .idempotent(false)
                .open_world(true),
        ),
        ToolName::GetAnswer => (
            "Collect the answer to a question asked earlier with ask_user_question, by its request \
             id, optionally waiting a bounded time. Returns the answers, or \"pending\" when nobody \
             has answered yet.",
            schema_of::<GetAnswerArgs>(),
            schema_of::<QuestionResult>(),
            ToolAnnotations::new().read_only(true).open_world(true),
        ),
        ToolName::Abort => (
            "Withdraw a question asked earlier (it ends with ASK_ABORTED and is no longer shown to \
             the human).",
            schema_of::<AbortArgs>(),
            schema_of::<AbortResult>(),
            ToolAnnotations::new()
                .read_only(false)
                .destructive(true)
                .idempotent(false)
                .open_world(false),
        ),
        ToolName::Review => (
            "For a human at this MCP client: answer the pending dshq questions of a context, one \
             form per question (needs a client that supports elicitation). Holds the context's \
             provider lease for the duration of the call.",
            schema_of::<ReviewArgs>(),
            schema_of::<ReviewResult>(),
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .open_world(false),
        ),
    };
    Tool::new(name.as_str(), description, input)
        .with_raw_output_schema(output)
        .annotate(annotations)
}
