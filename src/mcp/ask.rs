//! `ask_user_question`, `get_answer` and `abort_question`: the asker's tools, over the
//! same use-cases as `dshq ask`, `dshq wait` and `dshq abort`.
//!
//! The arguments of `ask_user_question` are a request document (plus `waitSeconds`), so
//! they go through the request parser as bytes, exactly like an inbox file: the same
//! checks, the same codes, a rejection recorded in the audit. The request is committed
//! before the wait starts; the wait is bounded, and a pending result names the id to
//! collect the answer with later.

use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::Value;

use super::backend::Backend;
use super::errors::{from_error, tool_error};
use super::tools::{AbortResult, AskArgs, QuestionResult, QuestionState};
use super::Config;
use crate::app;
use crate::core::access::{Action, Reach};
use crate::core::audit::{Actor, Source};
use crate::error::Error;
use crate::host::auth::Caller;
use crate::protocol::check::{check_id, salvage_id_context};
use crate::protocol::continued;
use crate::protocol::types::AgentRef;
use crate::protocol::types::AnsweredOutcome;
use crate::protocol::{Code, Outcome, UserQuestionError};
use crate::root::Root;
use crate::store::{Asked, RequestRow, Store};

/// Who calls the tools: how the event log names them, where their requests come from,
/// and (over HTTP) the token whose role and reach apply.
#[derive(Debug, Clone)]
pub struct Who {
    /// `mcp:CLIENT`.
    pub actor: Actor,
    /// `mcp` over stdio; over HTTP the token's source (`web:NAME`), so the token sees
    /// the same requests over the API and over MCP.
    pub source: Source,
    /// The HTTP caller, if any (stdio: the local user, who may do anything, as in the CLI).
    pub caller: Option<Caller>,
    /// The asking agent of this session, if it has one: `dshq mcp --agent ID --instance
    /// I` over stdio, the `Dshq-Agent-Id` and `Dshq-Agent-Instance` headers over HTTP
    /// (the host's configuration, never a tool argument the model fills).
    pub agent: Option<AgentRef>,
}

impl Who {
    /// How far this caller may take `action` (stdio: everywhere).
    pub fn require(&self, action: Action) -> Result<Reach, UserQuestionError> {
        match &self.caller {
            None => Ok(Reach::All),
            Some(c) => c.require(action).map_err(|e| e.0),
        }
    }

    /// Whether this caller may see `row` with `reach`.
    pub fn sees(&self, row: &RequestRow, reach: Reach) -> bool {
        self.caller.as_ref().is_none_or(|c| c.sees(row, reach))
    }

    /// Whether this caller may act in `context`.
    pub fn in_context(&self, context: &str) -> bool {
        self.caller.as_ref().is_none_or(|c| c.in_context(context))
    }
}

/// A request committed by `ask_user_question`, before any wait.
#[derive(Debug, Clone)]
pub struct Submitted {
    /// The request id.
    pub id: String,
    /// Its digest.
    pub digest: String,
    /// How long the call may wait.
    pub wait: Duration,
    /// The tool call of a request asked with a `wait`.
    pub call_id: Option<String>,
}

fn bad_request(message: impl Into<String>) -> UserQuestionError {
    UserQuestionError::new(Code::BadRequest, message)
}

/// The `waitSeconds` argument, capped by the server's maximum.
fn wait_arg(
    args: &mut JsonObject,
    default: Duration,
    cfg: &Config,
) -> Result<Duration, UserQuestionError> {
    let wait = match args.remove("waitSeconds") {
        None | Some(Value::Null) => default,
        Some(v) => Duration::from_secs(v.as_u64().ok_or_else(|| {
            bad_request("waitSeconds must be a whole number of seconds (0 or more)")
        })?),
    };
    Ok(wait.min(cfg.max_wait))
}

/// Commit the request in `args` (the tool's arguments): the session's agent is added
/// when the request names none. A rejection is a tool error with its code.
///
/// `then` runs right after the commit in the same store job, with the request's id (what
/// the caller reads next: the outcome, the task's row), so an ask is one trip to the
/// database thread and, on the host, one broadcast and one wake of the file loop, as
/// the API's ask is (what a second job cost is measured in docs/PERFORMANCE.md, issue
/// 28). Its error is the caller's to report: the request is committed by then.
pub async fn submit<T, F>(
    backend: &Backend,
    cfg: &Config,
    who: &Who,
    mut args: JsonObject,
    then: F,
) -> Result<(Submitted, crate::error::Result<T>), CallToolResult>
where
    T: Send + 'static,
    F: FnOnce(&mut Store, &Root, &str) -> crate::error::Result<T> + Send + 'static,
{
    let wait_given = args.get("waitSeconds").is_some_and(|v| !v.is_null());
    let wait = wait_arg(&mut args, cfg.wait, cfg).map_err(|e| tool_error(&e, None))?;
    who.require(Action::Ask).map_err(|e| tool_error(&e, None))?;
    // The arguments as the model sent them (so an error names its own fields), then the
    // request document they ask, in the protocol's vocabulary, with the session's agent.
    let parsed: AskArgs = serde_path_to_error::deserialize(Value::Object(args)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let msg = if path.is_empty() || path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        };
        tool_error(&bad_request(msg), None)
    })?;
    parsed
        .check_bounds()
        .map_err(|m| tool_error(&bad_request(m), parsed.id.as_deref()))?;
    // A continued question waits its own window unless the call says otherwise.
    let window = parsed.wait.as_ref().and_then(continued::window);
    let wait = match window {
        Some(w) if !wait_given => w.min(cfg.max_wait),
        _ => wait,
    };
    let call_id = parsed.wait.as_ref().map(|w| w.call_id.clone());
    let doc = parsed.to_request(who.agent.as_ref());
    let bytes = serde_json::to_vec(&doc).expect("a JSON object serializes");
    // The inbox's limit, so a question is as large over MCP as in a file and no larger.
    let max = crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES;
    if bytes.len() as u64 > max {
        let e = bad_request(format!(
            "the question is {} bytes as JSON; the limit is {max} bytes",
            bytes.len()
        ));
        return Err(tool_error(&e, None));
    }
    let salvaged_id = salvage_id_context(&bytes).0;
    let (root, source, actor, b) = (
        backend.root().clone(),
        who.source.clone(),
        who.actor.clone(),
        bytes.clone(),
    );
    let token = who.caller.as_ref().map(|c| c.token.clone());
    let done = backend
        .write(move |store| {
            let a = app::ask::TokenAsk {
                bytes: &b,
                token: token.as_ref(),
                source,
                actor,
            };
            let asked = app::ask::ask_with_token(store, &root, a)?;
            Ok(match asked {
                Asked::Accepted(a) => {
                    let after = then(store, &root, &a.id);
                    Ok((a, after))
                }
                Asked::Rejected { error, .. } => Err(error),
            })
        })
        .await
        // A request outside the token's context is refused without naming its id.
        .map_err(|e| match e {
            Error::Forbidden => from_error(&e, None),
            e => from_error(&e, salvaged_id.as_deref()),
        })?;
    let (accepted, after) = done.map_err(|error| tool_error(&error, salvaged_id.as_deref()))?;
    let digest = crate::protocol::check::parse_request(&bytes)
        .map(|r| crate::protocol::digest::request_digest(&r))
        .map_err(|e| tool_error(&e, Some(&accepted.id)))?;
    tracing::info!(id = %accepted.id, new = accepted.new, "MCP ask accepted");
    let submitted = Submitted {
        id: accepted.id,
        digest,
        wait,
        call_id,
    };
    Ok((submitted, after))
}

/// `ask_user_question`: submit, then wait a bounded time.
pub async fn ask_user_question(
    backend: &Backend,
    cfg: &Config,
    who: &Who,
    args: JsonObject,
) -> CallToolResult {
    // The outcome is read in the commit's own job: a re-delivered request may have
    // one already. Without one, a call that may not wait is answered at once, and one
    // that may waits as `get_answer` does (which reads again once it is registered for
    // the wake, so an answer committed in between is not missed).
    let (s, first) = match submit(backend, cfg, who, args, app::feed::outcome_ready).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    match first {
        Ok(Some(o)) => outcome_result(&o),
        Ok(None) if s.wait.is_zero() => {
            pending_result_with(&s.id, Some(s.digest), None, s.call_id.as_deref())
        }
        Ok(None) => collect(backend, &s.id, Some(s.digest), s.wait).await,
        Err(e) => from_error(&e, Some(&s.id)),
    }
}

/// `get_answer`: the answer to an earlier request, waiting up to `waitSeconds`.
pub async fn get_answer(
    backend: &Backend,
    cfg: &Config,
    who: &Who,
    mut args: JsonObject,
) -> CallToolResult {
    let wait = match wait_arg(&mut args, Duration::ZERO, cfg) {
        Ok(w) => w,
        Err(e) => return tool_error(&e, None),
    };
    let id = match id_arg(&args, &["id"]) {
        Ok(id) => id,
        Err(e) => return tool_error(&e, None),
    };
    let reach = match who.require(Action::Read) {
        Ok(r) => r,
        Err(e) => return tool_error(&e, Some(&id)),
    };
    let row = match visible(backend, who, &id, reach).await {
        Ok(row) => row,
        Err(r) => return r,
    };
    let digest = row
        .request()
        .map(|r| crate::protocol::digest::request_digest(&r));
    collect(backend, &id, digest, wait).await
}

/// `abort_question`: abort as the asker (`ASK_ABORTED`).
pub async fn abort_question(backend: &Backend, who: &Who, args: JsonObject) -> CallToolResult {
    let id = match id_arg(&args, &["id", "reason"]) {
        Ok(id) => id,
        Err(e) => return tool_error(&e, None),
    };
    let reason = match args.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return tool_error(&bad_request("reason must be a string"), Some(&id)),
    };
    let reach = match who.require(Action::Abort) {
        Ok(r) => r,
        Err(e) => return tool_error(&e, Some(&id)),
    };
    if let Err(r) = visible(backend, who, &id, reach).await {
        return r;
    }
    let (root, actor, id2) = (backend.root().clone(), who.actor.clone(), id.clone());
    match backend
        .write(move |store| app::ask::abort(store, &root, &id2, reason.as_deref(), &actor))
        .await
    {
        Ok(_) => {
            let r = AbortResult {
                id: id.clone(),
                status: "aborted".into(),
            };
            structured(
                format!(
                    "Request {id} is aborted: it ends with ASK_ABORTED and is no longer shown to the human."
                ),
                &r,
            )
        }
        Err(e) => from_error(&e, Some(&id)),
    }
}

/// The `id` argument (and no arguments but `allowed`).
fn id_arg(args: &JsonObject, allowed: &[&str]) -> Result<String, UserQuestionError> {
    if let Some(k) = args.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(bad_request(format!("unknown argument {k:?}")));
    }
    let id = args
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| bad_request("id (the request id) is required"))?;
    check_id("request id", id)?;
    Ok(id.to_string())
}

/// The request `id` if the caller may see it; else NOT_FOUND (existence not revealed).
async fn visible(
    backend: &Backend,
    who: &Who,
    id: &str,
    reach: Reach,
) -> Result<RequestRow, CallToolResult> {
    let id2 = id.to_string();
    let row = backend
        .read(move |store| store.get_any(&id2))
        .await
        .map_err(|e| from_error(&e, Some(id)))?
        .filter(|r| who.sees(r, reach));
    row.ok_or_else(|| from_error(&Error::NotFound(id.to_string()), Some(id)))
}

/// Wait up to `wait` for the outcome of `id`, and render it: the answers, a pending
/// result, or the error outcome as a tool error.
pub async fn collect(
    backend: &Backend,
    id: &str,
    digest: Option<String>,
    wait: Duration,
) -> CallToolResult {
    match backend.wait_outcome(id, wait).await {
        Ok(Some(o)) => outcome_result(&o),
        Ok(None) => {
            // A request with a quorum shows its votes so far; one on a tool call, its call.
            let id2 = id.to_string();
            let row = backend
                .read(move |store| store.get(&id2))
                .await
                .ok()
                .flatten();
            let quorum = row.as_ref().and_then(|r| r.quorum_view());
            let call = row.as_ref().and_then(|r| r.call_id());
            pending_result_with(id, digest, quorum, call.as_deref())
        }
        Err(e) => from_error(&e, Some(id)),
    }
}

/// A pending result.
pub fn pending_result(id: &str, digest: Option<String>, call: Option<&str>) -> CallToolResult {
    pending_result_with(id, digest, None, call)
}

/// A pending result, with the votes so far of a request with a quorum, and the tool call
/// of a continued question (whose pending result says what dsh 0.2's does).
pub fn pending_result_with(
    id: &str,
    digest: Option<String>,
    quorum: Option<crate::core::quorum::QuorumView>,
    call: Option<&str>,
) -> CallToolResult {
    let next = format!(
        "Call get_answer with {{\"id\": \"{id}\"}} (optionally \"waitSeconds\") to collect the answer, \
         or abort_question to withdraw the question."
    );
    let mut text = match call {
        Some(c) => continued::Pending::new(id, c, None).message,
        None => format!(
            "The question is pending: nobody has answered request {id} yet. It stays queued durably \
             (it survives this session). {next} Meanwhile continue with work that does not depend on the \
             answer, or end your turn saying you are waiting for it."
        ),
    };
    if let Some(q) = &quorum {
        text.push_str(&format!(
            " It needs a quorum: {}.",
            crate::text::one_line(&q.summary())
        ));
    }
    let r = QuestionResult {
        id: id.to_string(),
        status: QuestionState::Pending,
        request_digest: digest,
        answers: None,
        decision: None,
        answered_by: None,
        next: Some(next),
        quorum,
        approvers: None,
        call_id: call.map(str::to_string),
        outcome: None,
    };
    structured(text, &r)
}

/// The result for a final outcome: the answers, or a tool error with the outcome's code.
pub fn outcome_result(o: &Outcome) -> CallToolResult {
    match o {
        Outcome::Error(e) => tool_error(&e.error, Some(&e.id)),
        Outcome::Answered(a) => {
            let mut text = format!("The human answered request {}.", a.id);
            if let Some(d) = a.decision {
                text.push_str(&format!(" Plan-review decision: {}.", d.as_str()));
            }
            if let Some(f) = &a.feedback {
                let f = serde_json::to_string(f).expect("a string serializes");
                text.push_str(&format!(" The reviewer's feedback: {f}."));
            }
            if let Some(approvers) = &a.approvers {
                let names: Vec<String> = approvers
                    .iter()
                    .map(|p| crate::text::one_line(p).into_owned())
                    .collect();
                text.push_str(&format!(" Approved by {}.", names.join(", ")));
            }
            for item in &a.answer.answers {
                let q = |s: &str| serde_json::to_string(s).expect("a string serializes");
                let mut parts: Vec<String> = Vec::new();
                if !item.selected.is_empty() {
                    let labels: Vec<String> = item.selected.iter().map(|l| q(l)).collect();
                    parts.push(format!("selected {}", labels.join(", ")));
                }
                if let Some(c) = &item.custom {
                    parts.push(format!("wrote {}", q(c)));
                }
                if parts.is_empty() {
                    parts.push("skipped (no answer)".into());
                }
                text.push_str(&format!("\n- {}: {}", q(&item.id), parts.join("; ")));
            }
            // A proposal approved as the reviewer edited it: the edited text is what was
            // approved, and what the agent must carry out.
            for (qid, e) in a.edited.iter().flatten() {
                let q = |s: &str| serde_json::to_string(s).expect("a string serializes");
                text.push_str(&format!(
                    "\nThe reviewer approved {} as they edited it; carry out this version, not the one proposed: {}",
                    q(qid),
                    q(&e.approved)
                ));
            }
            let r = QuestionResult {
                id: a.id.clone(),
                status: QuestionState::Answered,
                request_digest: a.request_digest.clone(),
                answers: Some(a.answer.answers.clone()),
                decision: a.decision,
                answered_by: a.provider.clone(),
                next: None,
                quorum: None,
                approvers: a.approvers.clone(),
                call_id: a.call_id.clone(),
                outcome: Some(without_nulls(
                    serde_json::to_value(AnsweredOutcome {
                        receipt: None,
                        ..a.clone()
                    })
                    .expect("an outcome serializes"),
                )),
            };
            structured(text, &r)
        }
    }
}

/// `v` with every `null` member of its objects left out (MCP results hold no `null`).
fn without_nulls(mut v: Value) -> Value {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(o) => {
                o.retain(|_, m| !m.is_null());
                o.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut v);
    v
}

/// A successful result: `text` for the model, `value` as `structuredContent`.
pub fn structured<T: serde::Serialize>(text: String, value: &T) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(serde_json::to_value(value).expect("a result serializes"));
    r
}
