//! The tools and their schemas. The input schema of `ask_user_question` is generated
//! from the protocol's own types ([`Question`](crate::protocol::types::Question), [`AgentRef`], [`Meta`]: the same types
//! the request schema `dshq schema request` comes from), so the model is offered exactly
//! the vocabulary ingestion accepts; the arguments are then checked by the same parser
//! as an inbox file. Every result has an output schema, and `structuredContent` matches it.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::protocol::types::{AgentRef, AnswerItem, Decision, Meta};

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
    /// Answer the next pending question through `input_required` results (2026-07-28).
    ReviewNext,
}

impl ToolName {
    /// Every tool.
    pub const ALL: &'static [ToolName] = &[
        ToolName::Ask,
        ToolName::GetAnswer,
        ToolName::Abort,
        ToolName::Review,
        ToolName::ReviewNext,
    ];

    /// The name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Ask => "ask_user_question",
            ToolName::GetAnswer => "get_answer",
            ToolName::Abort => "abort_question",
            ToolName::Review => "review_questions",
            ToolName::ReviewNext => "review_next",
        }
    }

    /// Parse a tool name.
    pub fn parse(s: &str) -> Option<ToolName> {
        Self::ALL.iter().copied().find(|t| t.as_str() == s)
    }
}

/// The longest `header` a question may have on this face (a chip or tag beside the
/// question, as the model-facing ask tools use it).
pub const HEADER_MAX: usize = 40;

/// One choice of a question.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OptionArg {
    /// Shown to the human and returned as the answer when chosen; unique within its
    /// question.
    #[schemars(length(min = 1))]
    pub label: String,
    /// Supporting text shown next to the label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// The presentation intent kinds (a closed set).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
pub enum IntentKind {
    /// Ask the human to approve a plan (put the plan in `detail`).
    #[serde(rename = "plan-review")]
    PlanReview,
}

// The schema names the one kind; any string is taken and judged by the vocabulary's own
// check (`BAD_INTENT` for another kind), so a model meets the code a file would.
/// How the question is presented.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntentArg {
    /// `plan-review`.
    #[schemars(with = "IntentKind")]
    pub kind: String,
    /// The label of the option that approves the plan.
    #[schemars(length(min = 1))]
    pub approve: String,
}

/// One question.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuestionArg {
    /// A stable id for the question, echoed back with its answer.
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub id: String,
    /// The question text.
    #[schemars(length(min = 1))]
    pub question: String,
    /// Supporting text shown with the question (for a plan review: the plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A short title shown beside the question.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = HEADER_MAX))]
    pub header: Option<String>,
    /// The choices; leave out for a free-text question. The human may always write
    /// another answer instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub options: Option<Vec<OptionArg>>,
    /// Whether several options may be chosen (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multi_select: Option<bool>,
    /// A presentation intent, such as a plan review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<IntentArg>,
}

// The tool's arguments, parsed as they are (errors name only what the model sent), then
// turned into a request document in the protocol's vocabulary and checked by the same
// parser as an inbox file. (A plain comment: doc comments become the schema's
// descriptions, which the model reads.)
/// A question (or several, answered together) for the human user, plus how long this
/// call may wait for the answer.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AskArgs {
    /// The questions, asked and answered as one batch. Give each a stable `id`; options
    /// are choices (the label is returned), `multiSelect` allows several, free text is
    /// always possible. For a plan review put the plan in `detail` and set
    /// `intent: {"kind": "plan-review", "approve": "<label of the approving option>"}`.
    #[schemars(length(min = 1))]
    pub questions: Vec<QuestionArg>,
    /// The request id (letters, digits, `.`, `_`, `-`); default: a generated one. Asking
    /// again with the same id and the same questions returns the same request.
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub id: Option<String>,
    /// The provider context (default `"default"`).
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub context: Option<String>,
    /// How long the question stays open before it is withdrawn (`"30m"`, `"2h"`);
    /// default: until answered.
    #[serde(default)]
    pub timeout: Option<String>,
    /// Free-form object stored and returned untouched.
    #[serde(default)]
    pub meta: Option<Meta>,
    /// How long this call waits for the answer, in seconds, before it returns
    /// "pending" (default: the server's; capped by the server's maximum). 0 returns at
    /// once.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub wait_seconds: Option<u64>,
    /// dsh 0.2's continued question: the tool call this question belongs to (`callId`;
    /// the request's id is the call's, so asking again on the call re-attaches) and how
    /// long to wait for the answer (`timeoutMs`, 1 to 2147483647, used when `waitSeconds`
    /// is not given). When the window closes the result is pending with the `callId`,
    /// and the answer stays deliverable to that call (`get_answer`).
    #[serde(default)]
    pub wait: Option<crate::protocol::Wait>,
}

impl AskArgs {
    /// The request document these arguments ask (the protocol's vocabulary), as the
    /// request parser reads it; `agent` is the session's, never the model's.
    pub fn to_request(&self, agent: Option<&AgentRef>) -> serde_json::Value {
        let mut doc = serde_json::json!({ "questions": self.questions });
        let o = doc.as_object_mut().expect("an object");
        if let Some(id) = &self.id {
            o.insert("id".into(), id.clone().into());
        }
        if let Some(c) = &self.context {
            o.insert("context".into(), c.clone().into());
        }
        if let Some(agent) = agent {
            o.insert(
                "agent".into(),
                serde_json::to_value(agent).expect("an agent ref serializes"),
            );
        }
        if let Some(t) = &self.timeout {
            o.insert("timeout".into(), t.clone().into());
        }
        if let Some(m) = &self.meta {
            o.insert("meta".into(), serde_json::Value::Object(m.clone()));
        }
        if let Some(w) = &self.wait {
            o.insert(
                "wait".into(),
                serde_json::to_value(w).expect("a wait serializes"),
            );
        }
        doc
    }

    /// The bounds of this face that the schema states, serde does not check and the
    /// vocabulary does not have (a header's length), named as the model sent them. What
    /// the vocabulary judges (no questions, an empty option list, an intent) is left to
    /// its checks, so each input gets the code it gets on every other face
    /// (`EMPTY_QUESTIONS`, `BAD_INTENT`).
    pub fn check_bounds(&self) -> Result<(), String> {
        for (i, q) in self.questions.iter().enumerate() {
            if let Some(h) = &q.header {
                let n = h.chars().count();
                if n == 0 || n > HEADER_MAX {
                    return Err(format!(
                        "questions[{i}].header: {n} characters; give 1 to {HEADER_MAX}"
                    ));
                }
            }
        }
        Ok(())
    }
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

/// The arguments of `review_next`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewNextArgs {
    /// The provider context to review (default `"default"`).
    #[serde(default)]
    #[schemars(regex(pattern = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"))]
    pub context: Option<String>,
    /// Only the questions of this agent id.
    #[serde(default)]
    pub agent: Option<String>,
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
    /// dshq extension, for a request with a quorum while it is pending: the
    /// rule and the votes so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<crate::core::quorum::QuorumView>,
    /// dshq extension, once a request with a quorum is answered: every
    /// reviewer whose vote made the answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approvers: Option<Vec<String>>,
    /// dsh 0.2's continued questions: the tool call of a request asked with a `wait`
    /// (pending: the call whose question stays answerable; answered: the call the late
    /// answer is delivered to).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// When answered: the decision document (docs/protocol.md, "The decision document"),
    /// the outcome every asker face gets: the answers, the decision and its feedback, the
    /// proposals approved as edited, a quorum's votes, who decided. As MCP results never
    /// hold `null`, a member that is null in the outcome file is left out here.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::protocol::types::AnsweredOutcome>")]
    pub outcome: Option<serde_json::Value>,
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
    /// The answer was recorded as the reviewer's vote; the request's quorum is not met
    /// yet, and it stays open.
    Voted,
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

/// Always `error` (the discriminator of an error result).
#[derive(Debug, Clone, Copy, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ErrorStatus {
    /// The call failed: `error` says why and what to do.
    Error,
}

/// What went wrong, for the model.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDetail {
    /// The stable code (`BAD_REQUEST`, `DELEGATED_CALLER`, `NOT_FOUND`, ...).
    pub code: String,
    /// What happened.
    pub message: String,
    /// What to do next.
    pub guidance: String,
}

/// The result of a failed call (`isError: true`), whatever the tool.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolError {
    /// `error`.
    pub status: ErrorStatus,
    /// The code, what happened and what to do.
    pub error: ErrorDetail,
    /// The request id, when the failure concerns one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// The `format` values JSON Schema defines; any other (schemars' `uint64`, `int32`, ...)
/// is dropped, since clients do not know it (the bounds say the same as `minimum`).
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Drop non-standard `format` values, everywhere in a schema.
fn standard_formats(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            if o.get("format")
                .and_then(|f| f.as_str())
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
            {
                o.remove("format");
            }
            o.values_mut().for_each(standard_formats);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(standard_formats),
        _ => {}
    }
}

/// Drop the `null` schemars adds to an `Option`: every optional field here is optional by
/// being left out, so `["string", "null"]` (a nullable type array, which clients warn
/// about) becomes `"string"`, and `anyOf: [X, {"type": "null"}]` becomes `X`.
fn no_nulls(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            if o.get("default").is_some_and(serde_json::Value::is_null) {
                o.remove("default");
            }
            if let Some(serde_json::Value::Array(types)) = o.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    o.insert("type".into(), only);
                }
            }
            let single = match o.get_mut("anyOf") {
                Some(serde_json::Value::Array(branches)) => {
                    branches.retain(|b| b.get("type").is_none_or(|t| t != "null"));
                    (branches.len() == 1).then(|| branches.remove(0))
                }
                _ => None,
            };
            if let Some(serde_json::Value::Object(inner)) = single {
                o.remove("anyOf");
                for (k, val) in inner {
                    o.entry(k).or_insert(val);
                }
            }
            o.values_mut().for_each(no_nulls);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(no_nulls),
        _ => {}
    }
}

/// The schema of `T` as a value: draft 2020-12, an optional field is left out (never
/// `null`), standard formats only.
fn schema_value<T: JsonSchema>() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut v = serde_json::to_value(schema).expect("a derived schema serializes");
    no_nulls(&mut v);
    standard_formats(&mut v);
    v
}

/// A JSON Schema as an object (MCP wants `type: object` at the top).
fn schema_of<T: JsonSchema>() -> Arc<JsonObject> {
    match schema_value::<T>() {
        serde_json::Value::Object(o) => Arc::new(o),
        _ => unreachable!("a derived schema is an object"),
    }
}

/// A tool's output schema: its result `T`, or a [`ToolError`] (an error result carries
/// structured content too, and it must match the declared schema).
fn output_of<T: JsonSchema>() -> Arc<JsonObject> {
    let split = |v: serde_json::Value| {
        let mut o = match v {
            serde_json::Value::Object(o) => o,
            _ => unreachable!("a derived schema is an object"),
        };
        o.remove("$schema");
        let defs = o.remove("$defs");
        (o, defs)
    };
    let (ok, ok_defs) = split(schema_value::<T>());
    let (err, err_defs) = split(schema_value::<ToolError>());
    let mut defs = JsonObject::new();
    for d in [ok_defs, err_defs].into_iter().flatten() {
        if let serde_json::Value::Object(d) = d {
            defs.extend(d);
        }
    }
    let title = ok.get("title").cloned();
    let mut out = JsonObject::new();
    out.insert(
        "$schema".into(),
        "https://json-schema.org/draft/2020-12/schema".into(),
    );
    if let Some(t) = title {
        out.insert("title".into(), t);
    }
    out.insert("type".into(), "object".into());
    out.insert(
        "anyOf".into(),
        serde_json::Value::Array(vec![ok.into(), err.into()]),
    );
    if !defs.is_empty() {
        out.insert("$defs".into(), defs.into());
    }
    Arc::new(out)
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
            output_of::<QuestionResult>(),
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
            output_of::<QuestionResult>(),
            ToolAnnotations::new().read_only(true).open_world(true),
        ),
        ToolName::Abort => (
            "Withdraw a question asked earlier (it ends with ASK_ABORTED and is no longer shown to \
             the human).",
            schema_of::<AbortArgs>(),
            output_of::<AbortResult>(),
            ToolAnnotations::new()
                .read_only(false)
                .destructive(true)
                .idempotent(false)
                .open_world(false),
        ),
        ToolName::Review => (
            "For a human at this MCP client: answer the pending dshq questions of a context, one \
             form per question (needs protocol 2025-11-25 or older and a client that supports \
             elicitation; on 2026-07-28 it answers USAGE: use review_next there). Holds the \
             context's provider lease for the duration of the call.",
            schema_of::<ReviewArgs>(),
            output_of::<ReviewResult>(),
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .open_world(false),
        ),
        ToolName::ReviewNext => (
            "For a human at this MCP client on protocol 2026-07-28 (on 2025-11-25 it answers \
             USAGE: use review_questions there): answer the next pending dshq question of a \
             context. The call answers input_required with one elicitation form built from the \
             question (choices, several choices, Other, skip; a plan: approve, or decline with \
             feedback) and a signed requestState; retry with the form's response and the \
             requestState. A request that is not one flat form (several questions, a long plan) \
             goes to dshq's web page (URL mode, over HTTP); where no page can be handed over \
             (stdio), the result names its page and `dshq answer ID`. Holds the context's provider lease \
             across the round trips; call again for the next question.",
            schema_of::<ReviewNextArgs>(),
            output_of::<ReviewResult>(),
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
