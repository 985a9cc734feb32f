//! The ask checks, in the spec's order (§3), each failing with its stable code.
//!
//! The checks are pure: what they need from the outside world (the time, whether an agent is
//! a live root, whether a provider is live) is passed in through [`AskEnv`], so the order
//! and the messages can be tested without a database. The store calls them inside the
//! accepting transaction so the answer they give is the one that is committed.

use std::collections::HashSet;

use jiff::Timestamp;

use super::error::{err, Code, UserQuestionError};
pub use super::syntax::{check_id, is_valid_id, parse_json};
use super::types::{AgentRef, Request, PLAN_REVIEW};

/// The default maximum size of a request file or request body (1 MiB).
pub const DEFAULT_MAX_REQUEST_BYTES: u64 = 1024 * 1024;

/// Parse request JSON, mapping every serde failure (not JSON, wrong type, missing or
/// unknown field) to `BAD_REQUEST` with serde's message, which names the field.
pub fn parse_request(bytes: &[u8]) -> Result<Request, UserQuestionError> {
    parse_json::<Request>(bytes).map_err(|e| err(Code::BadRequest, format!("invalid request: {e}")))
}

/// The `id` and `context` of an input that failed to parse as a request, when it is JSON
/// carrying them as strings: what is known of a rejection, for the audit and the outbox.
pub fn salvage_id_context(bytes: &[u8]) -> (Option<String>, Option<String>) {
    let v: Option<serde_json::Value> = serde_json::from_slice(bytes).ok();
    let field = |k: &str| {
        v.as_ref()
            .and_then(|v| v.get(k))
            .and_then(|x| x.as_str())
            // Never a text holding U+0000 (see `syntax::writes_nul`).
            .filter(|s| !s.contains('\0'))
            .map(str::to_string)
    };
    (field("id"), field("context"))
}

/// A request that passed the structural check (order 0), with its id, context and
/// absolute deadline resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// The request, with `id` filled in.
    pub request: Request,
    /// The request id.
    pub id: String,
    /// The context.
    pub context: String,
    /// The absolute deadline, from `deadline` or acceptance time + `timeout`.
    pub deadline: Option<Timestamp>,
    /// The request's `ladder`, resolved at acceptance time ([`super::ladder::resolve`]).
    pub ladder: Option<super::ladder::Rungs>,
}

/// The most approvals a quorum may ask for.
pub const MAX_APPROVALS: u32 = 64;

/// Order 0: everything `BAD_REQUEST` covers that serde cannot see: ids, duplicates, empty
/// labels, the deadline and timeout syntax, a quorum's bounds. `fallback_id` is the file
/// name when the JSON has no `id`; `now` resolves a relative `timeout`.
pub fn check_structure(
    mut request: Request,
    fallback_id: Option<&str>,
    now: Timestamp,
) -> Result<Normalized, UserQuestionError> {
    if let Some(w) = &request.wait {
        super::continued::check_wait(w)?;
    }
    let id = request_id(&request, fallback_id)?;
    check_id("request id", &id)?;
    request.id = Some(id.clone());
    let context = request.context().to_string();
    check_id("context", &context)?;
    if let Some(agent) = &request.agent {
        check_id("agent id", &agent.id)?;
        check_id("agent instance", &agent.instance)?;
    }
    if let Some(q) = &request.quorum {
        check_quorum(q)?;
    }
    let mut seen = HashSet::new();
    for q in &request.questions {
        check_id("question id", &q.id)?;
        if !seen.insert(q.id.as_str()) {
            return Err(err(
                Code::BadRequest,
                format!(
                    "duplicate question id {:?}: question ids must be unique within a request",
                    q.id
                ),
            ));
        }
        check_question(q)?;
    }
    let deadline = deadline(&request, now)?;
    let ladder = match &request.ladder {
        Some(l) => Some(super::ladder::resolve(
            l,
            &request.questions,
            &context,
            deadline,
            now,
        )?),
        None => None,
    };
    Ok(Normalized {
        request,
        id,
        context,
        deadline,
        ladder,
    })
}

/// The id a request is asked under: a tool call's (dsh 0.2's continued questions), else its
/// own, else `fallback_id` (its file's name).
fn request_id(request: &Request, fallback_id: Option<&str>) -> Result<String, UserQuestionError> {
    match (&request.id, &request.wait, fallback_id) {
        (own, Some(w), _) => super::continued::request_id(w, own.as_deref()),
        (Some(id), None, _) => Ok(id.clone()),
        (None, None, Some(f)) => Ok(f.to_string()),
        (None, None, None) => Err(err(
            Code::BadRequest,
            "the request has no `id`; give one in the JSON (or name the file after it)",
        )),
    }
}

/// A quorum asks for 1 to [`MAX_APPROVALS`] reviewers, from a group whose name is an id.
fn check_quorum(q: &super::types::Quorum) -> Result<(), UserQuestionError> {
    if !(1..=MAX_APPROVALS).contains(&q.approvals) {
        return Err(err(
            Code::BadRequest,
            format!(
                "quorum.approvals is {}: give 1 to {MAX_APPROVALS} distinct reviewers",
                q.approvals
            ),
        ));
    }
    if let Some(g) = &q.group {
        check_id("quorum group", g)?;
    }
    Ok(())
}

/// One question's shape: an editable free-text question carries its proposal and no
/// options; its option labels are non-empty and unique.
fn check_question(q: &super::types::Question) -> Result<(), UserQuestionError> {
    if q.editable == Some(true) && q.intent.is_none() {
        // dshq's edit-then-approve extension ([`super::edit`]).
        if q.options.is_some() {
            return Err(err(
                Code::BadRequest,
                format!(
                    "question {:?} is `editable` but has options: `editable: true` is for a free-text question, whose `detail` is the proposal the reviewer may edit (a plan review is editable without it)",
                    q.id
                ),
            ));
        }
        if q.detail.is_none() {
            return Err(err(
                Code::BadRequest,
                format!(
                    "question {:?} is `editable` but has no `detail`: put the proposal the reviewer may edit in `detail`",
                    q.id
                ),
            ));
        }
    }
    let mut labels = HashSet::new();
    for o in q.options() {
        if o.label.is_empty() {
            return Err(err(
                Code::BadRequest,
                format!("question {:?} has an option with an empty label", q.id),
            ));
        }
        if !labels.insert(o.label.as_str()) {
            return Err(err(
                Code::BadRequest,
                format!("question {:?} has the option label {:?} twice: labels are the returned values and must be unique", q.id, o.label),
            ));
        }
    }
    Ok(())
}

/// The absolute deadline: `deadline` as given, or `timeout` from `now`; not both.
fn deadline(request: &Request, now: Timestamp) -> Result<Option<Timestamp>, UserQuestionError> {
    Ok(match (&request.deadline, &request.timeout) {
        (Some(_), Some(_)) => {
            return Err(err(
                Code::BadRequest,
                "give either `deadline` or `timeout`, not both",
            ))
        }
        (Some(d), None) => Some(d.parse::<Timestamp>().map_err(|e| {
            err(
                Code::BadRequest,
                format!("`deadline` {d:?} is not an RFC 3339 time: {e}"),
            )
        })?),
        (None, Some(t)) => {
            let dur = humantime::parse_duration(t).map_err(|e| {
                err(
                    Code::BadRequest,
                    format!("`timeout` {t:?} is not a duration such as \"30m\": {e}"),
                )
            })?;
            let span = jiff::SignedDuration::try_from(dur)
                .map_err(|_| err(Code::BadRequest, format!("`timeout` {t:?} is too long")))?;
            Some(
                now.checked_add(span)
                    .map_err(|_| err(Code::BadRequest, format!("`timeout` {t:?} is too long")))?,
            )
        }
        (None, None) => None,
    })
}

/// What the registry says of an asking agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallerStatus {
    /// The exact live instance of a root agent: it may ask.
    LiveRoot,
    /// The exact live instance, but owned by the live agent `owner`.
    Delegated {
        /// The owning agent's id.
        owner: String,
    },
    /// Not a live instance; `why` says what the registry found.
    NotLive {
        /// Unknown id, exited, expired, or a stale instance.
        why: String,
    },
}

/// What the checks need to know about the world at acceptance time.
pub trait AskEnv {
    /// The registry's view of `agent`.
    fn caller(&self, agent: &AgentRef) -> CallerStatus;
    /// Whether a provider lease is live in `context`.
    fn provider_live(&self, context: &str) -> bool;
}

/// Orders 1 to 5 on a structurally valid request.
pub fn check_ask(
    n: &Normalized,
    now: Timestamp,
    env: &dyn AskEnv,
) -> Result<(), UserQuestionError> {
    // 1: already aborted.
    if let Some(deadline) = n.deadline {
        if now > deadline {
            return Err(err(
                Code::AskAborted,
                format!("request {:?} was aborted before it was accepted: its deadline {deadline} has passed", n.id),
            ));
        }
    }
    // 2: nothing to ask.
    if n.request.questions.is_empty() {
        return Err(err(
            Code::EmptyQuestions,
            format!(
                "request {:?} has no questions: `questions` must hold at least one",
                n.id
            ),
        ));
    }
    // 3: the caller must be a live runtime root.
    if let Some(agent) = &n.request.agent {
        match env.caller(agent) {
            CallerStatus::LiveRoot => {}
            CallerStatus::NotLive { why } => {
                return Err(err(
                    Code::CallerNotLive,
                    format!(
                        "agent {:?} instance {:?} is not a live registry entry ({why}); \
                         enter the registry with `dshq agent enter --id {}` and ask with the instance it returns",
                        agent.id, agent.instance, agent.id
                    ),
                ))
            }
            CallerStatus::Delegated { owner } => {
                return Err(err(
                    Code::DelegatedCaller,
                    format!(
                        "agent {:?} is owned by agent {owner:?} and has no human answerer; \
                         put the unresolved question in its final result for {owner:?} to ask",
                        agent.id
                    ),
                ))
            }
        }
    }
    // 4: intents must name their own option and carry the plan.
    for q in &n.request.questions {
        if let Some(intent) = &q.intent {
            if intent.kind != PLAN_REVIEW {
                return Err(err(
                    Code::BadIntent,
                    format!(
                        "question {:?} has intent kind {:?}; the only kind is \"{PLAN_REVIEW}\"",
                        q.id, intent.kind
                    ),
                ));
            }
            if !q.has_label(&intent.approve) {
                return Err(err(
                    Code::BadIntent,
                    format!(
                        "question {:?}: the plan-review intent approves {:?}, which is none of this question's option labels",
                        q.id, intent.approve
                    ),
                ));
            }
            if q.detail.is_none() {
                return Err(err(
                    Code::BadIntent,
                    format!(
                        "question {:?} has a plan-review intent but no `detail`: put the plan in `detail`",
                        q.id
                    ),
                ));
            }
        }
    }
    // 5: a provider must be live when the asker requires one.
    if n.request.requires_provider() && !env.provider_live(&n.context) {
        return Err(err(
            Code::NoProvider,
            format!(
                "no provider is live in context {:?} and the request sets `requireProvider`; \
                 drop `requireProvider` to queue it until a reviewer registers",
                n.context
            ),
        ));
    }
    Ok(())
}
