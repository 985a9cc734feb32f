//! `review_questions`: a human at an MCP client as the context's provider.
//!
//! For the duration of the call the server holds the context's provider lease (so a
//! second reviewer gets DUPLICATE_PROVIDER, as everywhere), heartbeated while the human
//! fills in forms, and released when the call ends — also when the client goes away (the
//! call's future is dropped, and a guard releases the lease; a process that dies lets it
//! run out after its ttl). Each question is one `elicitation/create` form, in the shapes
//! the negotiated revision allows ([`Shapes`]):
//!
//! - options: a single choice (titled from 2025-11-25, a plain enum before, with the
//!   descriptions in the message), plus a free-text "Other" (overrides);
//! - multiSelect: a multi-choice array of titled items from 2025-11-25, one checkbox per
//!   option before, plus "Other" (supplements);
//! - no options: free text;
//! - plan review: Approve / the other options / Decline as a choice, plus feedback.
//!
//! accept becomes the answer item; decline is a skip (for a plan review: declined);
//! cancel stops the review and leaves this request and the rest pending. A request's
//! answer goes through the same answer rules as `dshq answer` ([`app::provide::answer`]),
//! and every act is recorded as `mcp:CLIENT`.

use std::time::Duration;

use rmcp::model::{
    CallToolResult, ElicitRequestParams, ElicitationAction, ElicitationSchema, JsonObject,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::RoleServer;
use serde_json::{json, Value};

use super::ask::{structured, Who};
use super::backend::Backend;
use super::errors::{from_error, tool_error};
use super::tools::{ReviewArgs, ReviewResult, Reviewed, ReviewedRequest};
use super::Config;
use crate::app;
use crate::app::provide::Acting;
use crate::core::access::Action;
use crate::protocol::types::{Answer, AnswerItem, Question, Request, DEFAULT_CONTEXT};
use crate::protocol::{Code, UserQuestionError};
use crate::store::RequestRow;
use crate::text::{multi_line, one_line};

/// The name the review's lease is registered with: `mcp-CLIENT`, so `provider status` and
/// DUPLICATE_PROVIDER say which client holds the context (each act through the lease is
/// recorded as `mcp:CLIENT`).
pub fn holder(who: &Who) -> String {
    match &who.actor {
        crate::core::audit::Actor::Mcp(name) => format!("mcp-{name}"),
        other => other.as_str().replace(':', "-"),
    }
}

/// Which form shapes the client's protocol revision allows (a closed set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shapes {
    /// 2025-06-18: flat forms of strings, numbers, booleans and plain (untitled) enums.
    Plain,
    /// 2025-11-25 and later: also titled single choices (`oneOf` of `const`/`title`) and
    /// multi-select arrays.
    Titled,
}

impl Shapes {
    /// The shapes of the negotiated revision (`None`: the oldest with elicitation).
    pub fn of(version: Option<&rmcp::model::ProtocolVersion>) -> Shapes {
        match version {
            Some(v) if v.as_str() >= rmcp::model::ProtocolVersion::V_2025_11_25.as_str() => {
                Shapes::Titled
            }
            _ => Shapes::Plain,
        }
    }
}

/// How a form reads its answer back (a closed set).
#[derive(Debug, Clone, PartialEq)]
pub enum Form {
    /// One of the options, or Other.
    Single,
    /// Several options, and Other.
    Multi,
    /// Several options as one checkbox each (`option1`, `option2`, ... in the order of
    /// these labels), and Other: multi-select where the revision has no arrays.
    Flags(Vec<String>),
    /// Free text.
    Text,
    /// Approve / another option / decline (the value meaning decline), with feedback.
    Plan {
        /// The approving label.
        approve: String,
        /// The value of the decline choice (a value no option has).
        decline: String,
    },
}

/// A choice of a form: titled where the revision allows it, else a plain enum (the
/// descriptions are then in the form's message, see [`choices_text`]).
fn choice_field(title: &str, choices: &[(String, Option<String>)], shapes: Shapes) -> Value {
    match shapes {
        Shapes::Titled => {
            let titled: Vec<Value> = choices
                .iter()
                .map(|(label, description)| {
                    let title = match description {
                        Some(d) => format!("{} — {}", one_line(label), one_line(d)),
                        None => one_line(label).into_owned(),
                    };
                    json!({ "const": label, "title": title })
                })
                .collect();
            json!({"type": "string", "title": title, "oneOf": titled})
        }
        Shapes::Plain => {
            let labels: Vec<&str> = choices.iter().map(|(l, _)| l.as_str()).collect();
            json!({"type": "string", "title": title, "enum": labels})
        }
    }
}

/// The options with a description, as lines for the message of a plain form.
pub fn choices_text(q: &Question) -> Option<String> {
    let lines: Vec<String> = q
        .options()
        .iter()
        .filter_map(|o| {
            o.description
                .as_deref()
                .map(|d| format!("- {}: {}", one_line(&o.label), one_line(d)))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The form of question `q` in the shapes the client allows: its kind and the
/// elicitation schema.
pub fn form(q: &Question, shapes: Shapes) -> (Form, Value) {
    let options: Vec<(String, Option<String>)> = q
        .options()
        .iter()
        .map(|o| (o.label.clone(), o.description.clone()))
        .collect();
    if let Some(approve) = q.plan_review_approve() {
        let mut decline = "Decline".to_string();
        while q.has_label(&decline) {
            decline.push('!');
        }
        let mut choices = vec![(approve.to_string(), Some("approve the plan".to_string()))];
        choices.extend(options.iter().filter(|(l, _)| l != approve).cloned());
        choices.push((
            decline.clone(),
            Some("decline the plan (say why below)".to_string()),
        ));
        let schema = json!({
            "type": "object",
            "properties": {
                "decision": choice_field("Decision", &choices, shapes),
                "feedback": {"type": "string", "title": "Feedback",
                             "description": "Why, or what to change (sent to the agent)"},
            },
            "required": ["decision"],
        });
        return (
            Form::Plan {
                approve: approve.to_string(),
                decline,
            },
            schema,
        );
    }
    if options.is_empty() {
        let schema = json!({
            "type": "object",
            "properties": {"answer": {"type": "string", "title": "Answer"}},
        });
        return (Form::Text, schema);
    }
    if q.is_multi() {
        let other = json!({"type": "string", "title": "Other",
                           "description": "Free text added to the ticked choices"});
        if shapes == Shapes::Plain {
            let mut props = serde_json::Map::new();
            for (i, (label, description)) in options.iter().enumerate() {
                let mut flag =
                    json!({"type": "boolean", "title": one_line(label), "default": false});
                if let Some(d) = description {
                    flag["description"] = json!(one_line(d));
                }
                props.insert(format!("option{}", i + 1), flag);
            }
            props.insert("other".into(), other);
            let labels = options.into_iter().map(|(l, _)| l).collect();
            return (
                Form::Flags(labels),
                json!({"type": "object", "properties": props}),
            );
        }
        let items: Vec<Value> = match choice_field("", &options, shapes)["oneOf"].clone() {
            Value::Array(a) => a,
            _ => vec![],
        };
        let schema = json!({
            "type": "object",
            "properties": {
                "choices": {"type": "array", "title": "Choices", "items": {"anyOf": items}},
                "other": other,
            },
        });
        return (Form::Multi, schema);
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "choice": choice_field("Choice", &options, shapes),
            "other": {"type": "string", "title": "Other",
                      "description": "Free text instead of a choice (overrides it)"},
        },
    });
    (Form::Single, schema)
}

/// The answer item for question `id` from an accepted form's `content`, or why the form
/// cannot stand as an answer (said to the human, who gets the form again): an accepted
/// form with nothing chosen or written is no answer (Decline is the button that skips),
/// and a plan's feedback goes with its Decline choice only (a single choice carries no
/// text: the answer rules would refuse it, and dropping the text would lose it).
pub fn accepted_item(id: &str, form: &Form, content: &JsonObject) -> Result<AnswerItem, String> {
    let text = |k: &str| {
        content
            .get(k)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let (selected, custom) = match form {
        Form::Single => match text("other") {
            Some(other) => (vec![], Some(other)),
            None => (text("choice").into_iter().collect(), None),
        },
        Form::Multi => {
            let selected = content
                .get("choices")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            (selected, text("other"))
        }
        Form::Flags(labels) => {
            let selected = labels
                .iter()
                .enumerate()
                .filter(|(i, _)| {
                    content.get(&format!("option{}", i + 1)) == Some(&Value::Bool(true))
                })
                .map(|(_, l)| l.clone())
                .collect();
            (selected, text("other"))
        }
        Form::Text => (vec![], text("answer")),
        Form::Plan { decline, .. } => {
            let feedback = text("feedback");
            match text("decision") {
                Some(c) if c == *decline => (vec![], feedback),
                Some(c) if feedback.is_some() => {
                    return Err(format!(
                        "feedback is sent with {decline:?} only: choose {decline:?} to send it, \
                         or clear the feedback to send {c:?}"
                    ))
                }
                Some(c) => (vec![c], None),
                None => (vec![], feedback),
            }
        }
    };
    if selected.is_empty() && custom.is_none() {
        return Err(
            "nothing was chosen or written: choose an answer, or press Decline to skip".into(),
        );
    }
    Ok(AnswerItem {
        id: id.to_string(),
        selected,
        custom,
        edited: None,
    })
}

/// The item of a declined form: a skip (for a plan review that is a declined plan).
pub fn declined_item(id: &str) -> AnswerItem {
    AnswerItem {
        id: id.to_string(),
        selected: vec![],
        custom: None,
        edited: None,
    }
}

/// The form's message: which request, who asks, the question and its detail. Asker text
/// is shown as text, with control characters made visible.
pub fn message(row: &RequestRow, q: &Question, n: usize, of: usize, shapes: Shapes) -> String {
    let id = row.id.as_deref().unwrap_or("");
    let mut m = format!("dshq request {} — question {n} of {of}", one_line(id));
    if let Some(agent) = &row.agent_id {
        m.push_str(&format!(" (asked by agent {})", one_line(agent)));
    }
    m.push('\n');
    if let Some(h) = &q.header {
        m.push_str(&format!("[{}] ", one_line(h)));
    }
    m.push_str(&one_line(&q.question));
    if let Some(d) = &q.detail {
        m.push_str(&format!("\n\n{}", multi_line(d)));
    }
    if shapes == Shapes::Plain {
        if let Some(c) = choices_text(q) {
            m.push_str(&format!("\n\n{c}"));
        }
    }
    if q.plan_review_approve().is_some() {
        m.push_str("\n\nDecline (the button) declines the plan; to decline with feedback choose Decline and write why.");
    } else {
        m.push_str(
            "\n\nDecline skips this question; Cancel stops the review (the rest stays pending).",
        );
    }
    m
}

/// Releases the lease when dropped (the call ended, or the client went away).
struct LeaseGuard {
    backend: Backend,
    token: Option<String>,
}

impl LeaseGuard {
    async fn release(mut self) {
        if let Some(token) = self.token.take() {
            let r = self.backend.write(move |store| store.release(&token)).await;
            if let Err(e) = r {
                tracing::warn!(error = %e, "cannot release the review's lease");
            }
        }
    }
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        let Some(token) = self.token.take() else {
            return;
        };
        tracing::info!("the MCP client went away during a review: releasing its lease");
        match &self.backend {
            // stdio: the process is ending with the client; release now, on the database
            // thread, rather than in a task the closing runtime would never run.
            Backend::Local(local) => {
                let r =
                    local.run_blocking(move |store| store.release(&token), Duration::from_secs(5));
                if let Err(e) = r {
                    tracing::warn!(error = %e, "cannot release the review's lease");
                }
            }
            // The host keeps running: release in a task.
            Backend::Host(_) => {
                let backend = self.backend.clone();
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        let _ = backend.write(move |store| store.release(&token)).await;
                    });
                }
            }
        }
    }
}

/// What one request's forms came to.
enum Walked {
    Answer(Answer),
    Stopped,
}

/// `review_questions`.
pub async fn review_questions(
    backend: &Backend,
    cfg: &Config,
    who: &Who,
    args: JsonObject,
    ctx: &RequestContext<RoleServer>,
) -> CallToolResult {
    let args: ReviewArgs = match serde_json::from_value(Value::Object(args)) {
        Ok(a) => a,
        Err(e) => {
            return tool_error(
                &UserQuestionError::new(Code::BadRequest, format!("bad arguments: {e}")),
                None,
            )
        }
    };
    if let Err(e) = can_elicit(ctx) {
        return tool_error(&e, None);
    }
    let reach = match who.require(Action::Answer) {
        Ok(r) => r,
        Err(e) => return tool_error(&e, None),
    };
    let context = args.context.unwrap_or_else(|| DEFAULT_CONTEXT.to_string());
    if let Err(e) = crate::protocol::check::check_id("context", &context) {
        return tool_error(&e, None);
    }
    if !who.in_context(&context) {
        return from_error(&crate::error::Error::Forbidden, None);
    }
    let (ctx2, ttl, name) = (context.clone(), cfg.review_lease_ttl, holder(who));
    let session = match backend
        .write(move |store| app::session::Session::start(store, &ctx2, None, &name, ttl))
        .await
    {
        Ok(s) => s,
        Err(e) => return from_error(&e, None),
    };
    let guard = LeaseGuard {
        backend: backend.clone(),
        token: Some(session.token.clone()),
    };
    let heartbeat = keep_alive(backend, session.token.clone(), ttl);
    let acting = Acting::OnBehalf {
        token: session.token.clone(),
        actor: who.actor.clone(),
    };
    let r = walk(
        backend,
        who,
        reach,
        &context,
        &args.agent,
        args.limit,
        session.lease.lease_id,
        &acting,
        ctx,
        cfg.review_form_timeout,
    )
    .await;
    heartbeat.abort();
    guard.release().await;
    let reviewed = match r {
        Ok((reviewed, stopped)) => (reviewed, stopped),
        Err(e) => return e,
    };
    let (reviewed, stopped) = reviewed;
    let still_open = still_open(backend, &context).await;
    summary(context, reviewed, stopped, still_open)
}

/// Whether this client can be shown a form: a server cannot elicit on MCP 2026-07-28,
/// nor from a client without form elicitation; the `USAGE` error says where to answer
/// instead.
fn can_elicit(ctx: &RequestContext<RoleServer>) -> Result<(), UserQuestionError> {
    if super::revision::Revision::of(ctx) == super::revision::Revision::Stateless {
        return Err(UserQuestionError::new(
            Code::Usage,
            "on MCP 2026-07-28 a server cannot send elicitation/create, so review_questions \
             cannot show questions here; connect with 2025-11-25 (initialize) and a client \
             with elicitation, or answer with `dshq answer` or the web page",
        ));
    }
    if !ctx
        .peer
        .supported_elicitation_modes()
        .contains(&ElicitationMode::Form)
    {
        return Err(UserQuestionError::new(
            Code::Usage,
            "this MCP client does not support elicitation (form mode), so review_questions \
             cannot show questions to a human here; answer with `dshq answer` or the web page",
        ));
    }
    Ok(())
}

/// Heartbeat the review's lease every third of its ttl until aborted (or a heartbeat
/// fails: the lease ended, and the review's next act says so).
fn keep_alive(backend: &Backend, token: String, ttl: Duration) -> tokio::task::JoinHandle<()> {
    let backend = backend.clone();
    tokio::spawn(async move {
        let every = (ttl / 3).max(Duration::from_millis(200));
        loop {
            tokio::time::sleep(every).await;
            let token = token.clone();
            if let Err(e) = backend.write(move |store| store.heartbeat(&token)).await {
                tracing::warn!(error = %e, "the review's lease heartbeat failed");
                return;
            }
        }
    })
}

/// How many requests of `context` are still open (0 when the store cannot say).
pub async fn still_open(backend: &Backend, context: &str) -> usize {
    let context = context.to_string();
    backend
        .read(move |store| store.open_requests(Some(&context)))
        .await
        .map(|rows| rows.len())
        .unwrap_or(0)
}

/// The result of a review (`review_questions`, `review_next`): what became of each
/// request presented, and what is left.
pub fn summary(
    context: String,
    reviewed: Vec<ReviewedRequest>,
    stopped: bool,
    still_open: usize,
) -> CallToolResult {
    let answered = reviewed
        .iter()
        .filter(|r| r.outcome == Reviewed::Answered)
        .count();
    let text = format!(
        "Reviewed context {}: {answered} request(s) answered{}; {still_open} still open.",
        one_line(&context),
        if stopped {
            ", then the human stopped the review"
        } else {
            ""
        },
    );
    structured(
        text,
        &ReviewResult {
            context,
            reviewed,
            stopped,
            still_open,
        },
    )
}

#[allow(clippy::too_many_arguments)]
async fn walk(
    backend: &Backend,
    who: &Who,
    reach: crate::core::access::Reach,
    context: &str,
    agent: &Option<String>,
    limit: Option<u32>,
    lease_id: i64,
    acting: &Acting,
    ctx: &RequestContext<RoleServer>,
    form_timeout: Duration,
) -> Result<(Vec<ReviewedRequest>, bool), CallToolResult> {
    let ctx2 = context.to_string();
    let queue = backend
        .read(move |store| app::feed::review_queue(store, &ctx2, lease_id, &Default::default()))
        .await
        .map_err(|e| from_error(&e, None))?;
    let mut reviewed = Vec::new();
    let limit = limit.map(|l| l as usize).unwrap_or(usize::MAX);
    for row in queue
        .into_iter()
        .filter(|r| agent.is_none() || r.agent_id == *agent)
        .filter(|r| who.sees(r, reach))
        .take(limit)
    {
        let Some(id) = row.id.clone() else { continue };
        let Some(request) = row.request() else {
            continue;
        };
        // Claim it, so no one else answers it while the human fills in its forms.
        let (a2, id2) = (acting.clone(), id.clone());
        match backend
            .write(move |store| app::provide::claim_as(store, &a2, &id2))
            .await
        {
            Ok(_) => {}
            // Answered, aborted or taken meanwhile: not ours to show.
            Err(e) if matches!(e.code(), Code::RequestFinal | Code::ClaimedElsewhere) => continue,
            Err(e) => return Err(from_error(&e, Some(&id))),
        }
        match ask_request(&row, &request, ctx, form_timeout).await? {
            Walked::Stopped => {
                reviewed.push(ReviewedRequest {
                    id,
                    outcome: Reviewed::Left,
                    decision: None,
                });
                return Ok((reviewed, true));
            }
            Walked::Answer(answer) => {
                let (root, a2, id2) = (backend.root().clone(), acting.clone(), id.clone());
                let finished = backend
                    .write(move |store| {
                        app::provide::answer(store, Some(&root), &id2, &a2, &answer)
                    })
                    .await
                    .map_err(|e| from_error(&e, Some(&id)))?;
                let (outcome, decision) = match &finished {
                    app::provide::Answering::Finished(f) => match &f.outcome {
                        crate::protocol::Outcome::Answered(a) => (Reviewed::Answered, a.decision),
                        crate::protocol::Outcome::Error(_) => (Reviewed::Answered, None),
                    },
                    app::provide::Answering::Voted(_) => (Reviewed::Voted, None),
                };
                reviewed.push(ReviewedRequest {
                    id,
                    outcome,
                    decision,
                });
            }
        }
    }
    Ok((reviewed, false))
}

/// How many times one question's form is shown again after an answer it cannot take.
const FORM_TRIES: usize = 3;

/// Present each question of `request` as a form.
async fn ask_request(
    row: &RequestRow,
    request: &Request,
    ctx: &RequestContext<RoleServer>,
    form_timeout: Duration,
) -> Result<Walked, CallToolResult> {
    let mut items = Vec::new();
    let of = request.questions.len();
    let shapes = Shapes::of(ctx.protocol_version().as_ref());
    for (i, q) in request.questions.iter().enumerate() {
        let (kind, schema) = form(q, shapes);
        let requested_schema: ElicitationSchema = serde_json::from_value(schema).map_err(|e| {
            tool_error(
                &UserQuestionError::new(Code::Usage, format!("cannot build the form: {e}")),
                row.id.as_deref(),
            )
        })?;
        // A form that cannot stand as an answer is shown again with the reason, a few
        // times; then the review stops and leaves this request and the rest pending.
        let mut refused: Option<String> = None;
        let mut tries = 0;
        let item = loop {
            let mut text = message(row, q, i + 1, of, shapes);
            if let Some(why) = &refused {
                text = format!("Not taken: {why}.\n\n{text}");
            }
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: text,
                requested_schema: requested_schema.clone(),
            };
            let result = tokio::select! {
                r = ctx.peer.create_elicitation_with_timeout(params, Some(form_timeout)) => r,
                _ = ctx.ct.cancelled() => return Ok(Walked::Stopped),
            };
            // A form nobody answers (the human left, or the client vanished without
            // closing the session) stops the review like a cancel: the lease must not be
            // held forever.
            if let Err(rmcp::service::ServiceError::Timeout { .. }) = &result {
                tracing::info!("no answer to a review form in time: stopping the review");
                return Ok(Walked::Stopped);
            }
            let result = result.map_err(|e| {
                tool_error(
                    &UserQuestionError::new(Code::Usage, format!("the client's form failed: {e}")),
                    row.id.as_deref(),
                )
            })?;
            match result.action {
                ElicitationAction::Accept => {
                    let content = result
                        .content
                        .as_ref()
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    match accepted_item(&q.id, &kind, &content) {
                        Ok(item) => break item,
                        Err(why) => {
                            tries += 1;
                            if tries >= FORM_TRIES {
                                tracing::info!(why = %why, "a review form was refused {FORM_TRIES} times: stopping the review");
                                return Ok(Walked::Stopped);
                            }
                            refused = Some(why);
                        }
                    }
                }
                ElicitationAction::Decline => break declined_item(&q.id),
                // Cancel, and whatever a later revision adds: stop, leave the rest pending.
                _ => return Ok(Walked::Stopped),
            }
        };
        items.push(item);
    }
    Ok(Walked::Answer(Answer { answers: items }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::types::{Intent, QuestionOption};

    fn q(options: &[&str], multi: bool, approve: Option<&str>) -> Question {
        Question {
            id: "q".into(),
            question: "Which?".into(),
            detail: approve.map(|_| "the plan".into()),
            header: None,
            options: (!options.is_empty()).then(|| {
                options
                    .iter()
                    .map(|l| QuestionOption {
                        label: l.to_string(),
                        description: None,
                    })
                    .collect()
            }),
            multi_select: multi.then_some(true),
            intent: approve.map(|a| Intent {
                kind: "plan-review".into(),
                approve: a.into(),
            }),
            editable: None,
        }
    }

    #[test]
    fn every_form_is_an_elicitation_schema_the_sdk_accepts() {
        for shapes in [Shapes::Plain, Shapes::Titled] {
            for question in [
                q(&["A", "B"], false, None),
                q(&["A", "B"], true, None),
                q(&[], false, None),
                q(&["Approve", "Decline", "Revise"], false, Some("Approve")),
            ] {
                let (_, schema) = form(&question, shapes);
                let parsed: Result<ElicitationSchema, _> = serde_json::from_value(schema.clone());
                assert!(parsed.is_ok(), "{schema}: {parsed:?}");
                // 2025-06-18 has no titled choices and no arrays.
                let text = schema.to_string();
                if shapes == Shapes::Plain {
                    assert!(
                        !text.contains("oneOf") && !text.contains("\"array\""),
                        "{text}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_plan_form_declines_with_a_value_no_option_has() {
        let (kind, _) = form(
            &q(&["Approve", "Decline"], false, Some("Approve")),
            Shapes::Titled,
        );
        let Form::Plan { decline, .. } = &kind else {
            panic!("{kind:?}")
        };
        assert_eq!(decline, "Decline!");
        let content = json!({"decision": "Decline!", "feedback": "split it"});
        let item = accepted_item("q", &kind, content.as_object().unwrap()).unwrap();
        assert!(item.selected.is_empty());
        assert_eq!(item.custom.as_deref(), Some("split it"));
        // Feedback with another choice is refused (the rules would refuse it at the
        // answer), naming what to do; an empty form is no answer either.
        for other in ["Approve", "Revise"] {
            let content = json!({"decision": other, "feedback": "ok but rename X"});
            let why = accepted_item("q", &kind, content.as_object().unwrap()).unwrap_err();
            assert!(why.contains("Decline!"), "{why}");
        }
        let approve = json!({"decision": "Approve"});
        let item = accepted_item("q", &kind, approve.as_object().unwrap()).unwrap();
        assert_eq!(item.selected, vec!["Approve"]);
        for form_kind in [
            Form::Single,
            Form::Multi,
            Form::Flags(vec!["A".into()]),
            Form::Text,
            kind.clone(),
        ] {
            let why = accepted_item("q", &form_kind, &JsonObject::new()).unwrap_err();
            assert!(why.contains("Decline to skip"), "{why}");
        }
    }

    #[test]
    fn a_plain_multi_select_reads_its_checkboxes() {
        let (kind, schema) = form(&q(&["A", "B", "C"], true, None), Shapes::Plain);
        assert_eq!(kind, Form::Flags(vec!["A".into(), "B".into(), "C".into()]));
        assert_eq!(schema["properties"]["option2"]["title"], "B");
        let c = json!({"option1": true, "option2": false, "option3": true, "other": "and D"});
        let item = accepted_item("q", &kind, c.as_object().unwrap()).unwrap();
        assert_eq!(item.selected, vec!["A", "C"]);
        assert_eq!(item.custom.as_deref(), Some("and D"));
    }

    #[test]
    fn other_overrides_a_single_choice_and_supplements_a_multi_choice() {
        let c = json!({"choice": "A", "other": "neither"});
        let one = accepted_item("q", &Form::Single, c.as_object().unwrap()).unwrap();
        assert!(one.selected.is_empty());
        assert_eq!(one.custom.as_deref(), Some("neither"));
        let c = json!({"choices": ["A", "B"], "other": "and C"});
        let many = accepted_item("q", &Form::Multi, c.as_object().unwrap()).unwrap();
        assert_eq!(many.selected, vec!["A", "B"]);
        assert_eq!(many.custom.as_deref(), Some("and C"));
    }
}
