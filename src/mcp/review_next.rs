//! `review_next`: a human at a 2026-07-28 MCP client reviews the next question of a
//! context through `input_required` results (the revision has no server-to-client
//! requests, so `review_questions`' `elicitation/create` cannot run there).
//!
//! One request per tool call, over as many round trips as it takes:
//!
//! 1. The first call (no `requestState`) registers the context's provider lease
//!    (`mcp-CLIENT`, as `review_questions` does), claims the next request it may see,
//!    and answers `input_required` with one elicitation form built from the question by
//!    the same code as `review_questions` ([`review::form`]: options → a titled enum and
//!    an "Other" text, multiSelect → an array of titled enums plus Other, free text, a
//!    plan review's Approve / Decline with feedback), and a signed `requestState`
//!    ([`state`]). The lease is heartbeated between the round trips.
//! 2. The retry carries the form's response and the state: accept answers (through
//!    [`app::provide::answer`], the same answer rules as `dshq answer`), decline skips
//!    (declines a plan), cancel stops and leaves the request pending; a form that cannot
//!    stand is shown again with the reason, a few times. The review then ends: the lease
//!    is released and the result says what became of the request and what is left.
//!
//! A request that cannot be one flat form (several questions, or a plan whose body is
//! too long to read in a form) is handed to dshq's web page instead: over HTTP a URL-mode
//! input request points at the request's page (the review releases its lease first,
//! because the page answers through the host's own lease and two providers cannot hold a
//! context); the retry reports what became of it there (accepted while it is still open:
//! the page is asked for again, a few times, since a client may accept as soon as it
//! opens the page; declined or cancelled: the review stops and leaves it pending). Where
//! no page can be named (stdio, where no page address is known, or a client without URL
//! mode) such a request is not claimed at all: the next one that fits a form is reviewed,
//! and a call that finds none names each one's page (`/r/ID`) and `dshq answer ID`, so a
//! request this client cannot show never blocks the ones behind it.

use std::sync::Arc;

use rmcp::model::{
    CallToolResponse, ContentBlock, ElicitRequest, ElicitRequestParams, ElicitationSchema,
    InputRequest, InputRequests, InputRequiredResult, InputResponses, JsonObject,
};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::ask::Who;
use super::backend::Backend;
use super::errors::{from_error, tool_error};
use super::review::{self, accepted_item, declined_item, form, Shapes};
use super::revision::Revision;
use super::state::{self, bound_to, random_id, Live, Reviews, Sealed};
use super::tools::{ReviewNextArgs, Reviewed, ReviewedRequest};
use super::Config;
use crate::app;
use crate::app::provide::Acting;
use crate::core::access::Action;
use crate::protocol::check::check_id;
use crate::protocol::types::{Answer, Question, DEFAULT_CONTEXT};
use crate::protocol::{Code, Outcome, UserQuestionError};
use crate::store::{RequestRow, Status};
use crate::text::one_line;

/// The key of the one input request of a round.
pub const INPUT_KEY: &str = "answer";

/// A plan whose body (`detail`) is longer than this many characters goes to the page
/// (URL mode) rather than into a form's message.
pub const FORM_DETAIL_MAX: usize = 4000;

/// How many forms of one request may be refused (nothing chosen, feedback without
/// Decline) before the review stops and leaves it pending.
const FORM_TRIES: u32 = 3;

/// One call of `review_next`: its arguments and, on a retry, what the client sent back.
pub struct Call<'a> {
    /// Who calls.
    pub who: &'a Who,
    /// The tool's arguments.
    pub args: JsonObject,
    /// The echoed `requestState`, on a retry.
    pub state: Option<String>,
    /// The responses to the input requests, on a retry.
    pub responses: Option<InputResponses>,
    /// The request's context (revision, capabilities, the HTTP parts).
    pub ctx: &'a RequestContext<RoleServer>,
}

/// `review_next`.
pub async fn review_next(
    backend: &Backend,
    cfg: &Config,
    reviews: &Arc<Reviews>,
    call: Call<'_>,
) -> CallToolResponse {
    if Revision::of(call.ctx) == Revision::Handshake {
        return usage(
            "review_next answers through input_required results, which exist from MCP \
             2026-07-28; on 2025-11-25 use review_questions (elicitation/create)",
        );
    }
    let args: ReviewNextArgs = match serde_json::from_value(Value::Object(call.args.clone())) {
        Ok(a) => a,
        Err(e) => return bad(format!("bad arguments: {e}")),
    };
    let who = call.who;
    let reach = match who.require(Action::Answer) {
        Ok(r) => r,
        Err(e) => return tool_error(&e, None).into(),
    };
    let context = args
        .context
        .clone()
        .unwrap_or_else(|| DEFAULT_CONTEXT.to_string());
    if let Err(e) = check_id("context", &context) {
        return tool_error(&e, None).into();
    }
    if !who.in_context(&context) {
        return from_error(&crate::error::Error::Forbidden, None).into();
    }
    let codec = match reviews.codec(backend.root()) {
        Ok(c) => c,
        Err(e) => return from_error(&e, None).into(),
    };
    let bound = bound_to(&who.actor.as_str(), &who.source.as_str(), &context);
    let step = Step {
        backend,
        cfg,
        reviews,
        codec: &codec,
        bound: &bound,
        who,
        context: &context,
        ctx: call.ctx,
    };
    match call.state {
        None if call.responses.is_some() => {
            bad("inputResponses came without a requestState: retry with the requestState of the input_required result, or call without either to start a review")
        }
        None => step.start(&args, reach).await,
        Some(s) => step.resume(&s, call.responses.unwrap_or_default()).await,
    }
}

fn usage(message: &str) -> CallToolResponse {
    tool_error(&UserQuestionError::new(Code::Usage, message), None).into()
}

fn bad(message: impl Into<String>) -> CallToolResponse {
    tool_error(&UserQuestionError::new(Code::BadRequest, message), None).into()
}

/// `sha256` hex of a request's stored body.
pub fn digest(row: &RequestRow) -> String {
    format!("{:x}", Sha256::digest(row.body.as_bytes()))
}

/// How many requests a client cannot be shown are named one by one in a result.
const ELSEWHERE_NAMED: usize = 5;

/// Why a request is not one form for this client, as the messages say it.
fn why_no_form(questions: &[Question], form_ok: bool) -> &'static str {
    match questions {
        [] => "no question",
        [_] if !flat(questions) => "a plan too long for a form",
        [_] if !form_ok => "one question; this client takes no forms",
        [_] => "one question",
        _ => "several questions",
    }
}

/// Whether `q`, alone in its request, fits one flat form.
fn flat(questions: &[Question]) -> bool {
    match questions {
        [q] => {
            q.plan_review_approve().is_none()
                || q.detail.as_ref().map_or(0, |d| d.chars().count()) <= FORM_DETAIL_MAX
        }
        _ => false,
    }
}

/// The form modes this request's client declares (form, url).
fn modes(ctx: &RequestContext<RoleServer>) -> (bool, bool) {
    match ctx.meta.client_capabilities().and_then(|c| c.elicitation) {
        None => (false, false),
        // No mode named: form, as the revision's default.
        Some(e) if e.form.is_none() && e.url.is_none() => (true, false),
        Some(e) => (e.form.is_some(), e.url.is_some()),
    }
}

/// The page of request `id` on the host this request came to (HTTP only: the Host the
/// client used, which the transport has checked).
fn page_url(ctx: &RequestContext<RoleServer>, id: &str) -> Option<String> {
    let parts = ctx.extensions.get::<axum::http::request::Parts>()?;
    let host = parts.headers.get(axum::http::header::HOST)?.to_str().ok()?;
    Some(format!("http://{host}/r/{id}"))
}

struct Step<'a> {
    backend: &'a Backend,
    cfg: &'a Config,
    reviews: &'a Arc<Reviews>,
    codec: &'a rmcp::model::RequestStateCodec,
    bound: &'a [u8],
    who: &'a Who,
    context: &'a str,
    ctx: &'a RequestContext<RoleServer>,
}

impl Step<'_> {
    fn acting(&self, token: &str) -> Acting {
        Acting::OnBehalf {
            token: token.to_string(),
            actor: self.who.actor.clone(),
        }
    }

    async fn done(&self, reviewed: Vec<ReviewedRequest>, stopped: bool) -> CallToolResponse {
        let open = review::still_open(self.backend, self.context).await;
        review::summary(self.context.to_string(), reviewed, stopped, open).into()
    }

    /// The first call: take the lease, claim the next request, show its form.
    async fn start(
        &self,
        args: &ReviewNextArgs,
        reach: crate::core::access::Reach,
    ) -> CallToolResponse {
        let (form_ok, url_ok) = modes(self.ctx);
        if !form_ok && !url_ok {
            return usage(
                "this request declares no elicitation capability, so review_next cannot show a \
                 question here; answer with `dshq answer` or the web page",
            );
        }
        let (c, ttl, name) = (
            self.context.to_string(),
            self.cfg.review_lease_ttl,
            review::holder(self.who),
        );
        let session = match self
            .backend
            .write(move |store| app::session::Session::start(store, &c, None, &name, ttl))
            .await
        {
            Ok(s) => s,
            Err(e) => return from_error(&e, None).into(),
        };
        let token = session.token.clone();
        let release = |token: String| async move {
            let _ = self.backend.write(move |store| store.release(&token)).await;
        };
        let lease_id = session.lease.lease_id;
        let (chosen, elsewhere) = match self
            .claim_next(args, reach, &token, lease_id, (form_ok, url_ok))
            .await
        {
            Ok(x) => x,
            Err(r) => {
                release(token).await;
                return r;
            }
        };
        let Some(row) = chosen else {
            release(token).await;
            let mut r = self.done(vec![], false).await;
            if let CallToolResponse::Complete(c) = &mut r {
                c.content
                    .extend(self.elsewhere_text(&elsewhere).map(ContentBlock::text));
            }
            return r;
        };
        let id = row.id.clone().unwrap_or_default();
        let Some(request) = row.request() else {
            release(token).await;
            let e = UserQuestionError::new(Code::Store, "the stored request does not parse");
            return tool_error(&e, Some(&id)).into();
        };
        let sealed = Sealed {
            review: match random_id() {
                Ok(r) => r,
                Err(e) => {
                    release(token).await;
                    return from_error(&e, None).into();
                }
            },
            round: 0,
            request: id.clone(),
            digest: digest(&row),
            lease: session.lease.lease_id,
        };
        if flat(&request.questions) && form_ok {
            let live = Live::new(sealed, Some(token));
            return self.show_form(live, &row, &request.questions[0], None);
        }
        // Not one flat form: the page answers it, through the host's lease (the loop
        // above chose it only if the page can be named here).
        release(token).await;
        let Some(url) = self.page(&id, url_ok) else {
            let e = UserQuestionError::new(Code::Usage, "no form and no page for this request");
            return tool_error(&e, Some(&id)).into();
        };
        let live = Live::new(Sealed { lease: 0, ..sealed }, None);
        self.page_round(live, url, &request.questions, None)
    }

    /// The first request of the context's queue that this client can be shown, claimed
    /// with the review's lease (`None` when there is none), and what it cannot be shown
    /// (no form fits, no page to hand it to: not claimed, named in the result, and the
    /// requests behind it are reviewed). `Err` is the tool's error; the caller releases
    /// the lease.
    async fn claim_next(
        &self,
        args: &ReviewNextArgs,
        reach: crate::core::access::Reach,
        token: &str,
        lease_id: i64,
        (form_ok, url_ok): (bool, bool),
    ) -> Result<(Option<RequestRow>, Vec<(String, &'static str)>), CallToolResponse> {
        let c = self.context.to_string();
        let queue = self
            .backend
            .read(move |store| app::feed::review_queue(store, &c, lease_id, &Default::default()))
            .await
            .map_err(|e| CallToolResponse::from(from_error(&e, None)))?;
        let mut elsewhere: Vec<(String, &'static str)> = Vec::new();
        for row in queue
            .into_iter()
            .filter(|r| args.agent.is_none() || r.agent_id == args.agent)
            .filter(|r| self.who.sees(r, reach))
        {
            let Some(id) = row.id.clone() else { continue };
            if let Some(request) = row.request() {
                let fits = form_ok && flat(&request.questions);
                if !fits && self.page(&id, url_ok).is_none() {
                    elsewhere.push((id, why_no_form(&request.questions, form_ok)));
                    continue;
                }
            }
            let (a, id2) = (self.acting(token), id.clone());
            match self
                .backend
                .write(move |store| app::provide::claim_as(store, &a, &id2))
                .await
            {
                Ok(claimed) => return Ok((Some(claimed), elsewhere)),
                Err(e) if matches!(e.code(), Code::RequestFinal | Code::ClaimedElsewhere) => {}
                Err(e) => return Err(from_error(&e, Some(&id)).into()),
            }
        }
        Ok((None, elsewhere))
    }

    /// The page of request `id`, when this request can hand it there: the client takes
    /// URL mode and the page's address is known (over HTTP).
    fn page(&self, id: &str, url_ok: bool) -> Option<String> {
        page_url(self.ctx, id).filter(|_| url_ok)
    }

    /// A round of a review handed to the page: a URL-mode input request for the page
    /// of `live`'s request, the review holding no lease.
    fn page_round(
        &self,
        live: Live,
        url: String,
        questions: &[Question],
        again: Option<&str>,
    ) -> CallToolResponse {
        let mut message = format!(
            "dshq request {} ({}): answer it on dshq's page, then confirm here.",
            one_line(&live.sealed.request),
            why_no_form(questions, modes(self.ctx).0)
        );
        if let Some(why) = again {
            message = format!("Not taken: {why}.\n\n{message}");
        }
        let params = ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message,
            url,
            elicitation_id: live.sealed.review.clone(),
        };
        self.input_required(live, params)
    }

    /// One line per request this client cannot be shown: where it can be answered.
    fn elsewhere_text(&self, elsewhere: &[(String, &'static str)]) -> Option<String> {
        if elsewhere.is_empty() {
            return None;
        }
        let mut lines: Vec<String> = elsewhere
            .iter()
            .take(ELSEWHERE_NAMED)
            .map(|(id, why)| {
                let page = page_url(self.ctx, id).unwrap_or_else(|| format!("/r/{id}"));
                format!(
                    "Request {0} ({why}) cannot be shown here: answer it on dshq's web page \
                     ({1}) or with `dshq answer {0}`.",
                    one_line(id),
                    one_line(&page)
                )
            })
            .collect();
        if elsewhere.len() > ELSEWHERE_NAMED {
            lines.push(format!(
                "{} more like it: `dshq list --context {}` lists them.",
                elsewhere.len() - ELSEWHERE_NAMED,
                one_line(self.context)
            ));
        }
        Some(lines.join("\n"))
    }

    /// An `input_required` result for `live`'s current round, with `params` as its one
    /// input request; the review goes (back) into the table.
    fn input_required(&self, live: Live, params: ElicitRequestParams) -> CallToolResponse {
        let life = self.cfg.review_form_timeout;
        let state = Reviews::seal(self.codec, &live.sealed, self.bound, life);
        let mut requests = InputRequests::new();
        requests.insert(
            INPUT_KEY.to_string(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        if live.sealed.round == 0 {
            self.reviews
                .begin(self.backend, live, self.cfg.review_lease_ttl, life);
        } else {
            self.reviews.put_back(live);
        }
        InputRequiredResult::new(Some(requests), Some(state)).into()
    }

    fn show_form(
        &self,
        live: Live,
        row: &RequestRow,
        q: &Question,
        refused: Option<&str>,
    ) -> CallToolResponse {
        let (_, schema) = form(q, Shapes::Titled);
        let requested_schema: ElicitationSchema = match serde_json::from_value(schema) {
            Ok(s) => s,
            Err(e) => {
                return tool_error(
                    &UserQuestionError::new(Code::Usage, format!("cannot build the form: {e}")),
                    row.id.as_deref(),
                )
                .into()
            }
        };
        let mut message = review::message(row, q, 1, 1, Shapes::Titled);
        if let Some(why) = refused {
            message = format!("Not taken: {why}.\n\n{message}");
        }
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        };
        self.input_required(live, params)
    }

    /// A retry: verify the state, take its round, apply the response.
    async fn resume(&self, state: &str, responses: InputResponses) -> CallToolResponse {
        let sealed = match Reviews::open(self.codec, state, self.bound) {
            Ok(s) => s,
            Err(e) => return tool_error(&e.to_user_error(), None).into(),
        };
        let mut live = match self.reviews.take(&sealed) {
            Ok(l) => l,
            Err(e) => return tool_error(&e.to_user_error(), Some(&sealed.request)).into(),
        };
        let id = sealed.request.clone();
        let response: Option<Response> = responses
            .get(INPUT_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let Some(token) = live.token.clone() else {
            // Handed to the page: report what became of it there.
            return self.after_page(live, response).await;
        };
        let id2 = id.clone();
        let row = match self.backend.read(move |store| store.get(&id2)).await {
            Ok(Some(r)) if digest(&r) == sealed.digest => r,
            Ok(_) => {
                state::end(self.backend, live).await;
                return tool_error(&state::StateError::Invalid.to_user_error(), Some(&id)).into();
            }
            Err(e) => {
                state::end(self.backend, live).await;
                return from_error(&e, Some(&id)).into();
            }
        };
        let Some(q) = row.request().and_then(|r| r.questions.into_iter().next()) else {
            state::end(self.backend, live).await;
            return bad("the request has no question");
        };
        let (kind, _) = form(&q, Shapes::Titled);
        let item = match response {
            None => Err("the client sent no response to the form".to_string()),
            Some(r) => match r.action.as_str() {
                "accept" => accepted_item(&q.id, &kind, &r.content.unwrap_or_default()),
                "decline" => Ok(declined_item(&q.id)),
                // Cancel (or anything else): stop, leave it pending.
                _ => {
                    state::end(self.backend, live).await;
                    return self.left(&id).await;
                }
            },
        };
        let item = match item {
            Ok(item) => item,
            Err(why) => {
                live.refused += 1;
                if live.refused >= FORM_TRIES {
                    tracing::info!(why = %why, "a review form was refused {FORM_TRIES} times: stopping the review");
                    state::end(self.backend, live).await;
                    return self.left(&id).await;
                }
                live.sealed.round += 1;
                return self.show_form(live, &row, &q, Some(&why));
            }
        };
        let (root, acting, id2) = (self.backend.root().clone(), self.acting(&token), id.clone());
        let answer = Answer {
            answers: vec![item],
        };
        let finished = self
            .backend
            .write(move |store| app::provide::answer(store, Some(&root), &id2, &acting, &answer))
            .await;
        state::end(self.backend, live).await;
        match finished {
            Ok(done) => {
                let (outcome, decision) = match &done {
                    app::provide::Answering::Finished(f) => match &f.outcome {
                        Outcome::Answered(a) => (Reviewed::Answered, a.decision),
                        Outcome::Error(_) => (Reviewed::Answered, None),
                    },
                    app::provide::Answering::Voted(_) => (Reviewed::Voted, None),
                };
                let reviewed = vec![ReviewedRequest {
                    id,
                    outcome,
                    decision,
                }];
                self.done(reviewed, false).await
            }
            Err(e) => from_error(&e, Some(&id)).into(),
        }
    }

    async fn left(&self, id: &str) -> CallToolResponse {
        let reviewed = vec![ReviewedRequest {
            id: id.to_string(),
            outcome: Reviewed::Left,
            decision: None,
        }];
        self.done(reviewed, true).await
    }

    /// After the page: what became of the request there. Final: reported (answered,
    /// with its decision; anything else is left). Still open: accepted means the human
    /// says it is done, so the page is shown again with the reason (a client may accept
    /// as soon as it opens the page), a few times; declined or cancelled stops the
    /// review and leaves it pending, as a form's cancel does.
    async fn after_page(&self, mut live: Live, response: Option<Response>) -> CallToolResponse {
        let id = live.sealed.request.clone();
        let id2 = id.clone();
        let row = match self.backend.read(move |store| store.get(&id2)).await {
            Ok(Some(r)) => r,
            Ok(None) => {
                state::end(self.backend, live).await;
                return from_error(&crate::error::Error::NotFound(id.clone()), Some(&id)).into();
            }
            Err(e) => {
                state::end(self.backend, live).await;
                return from_error(&e, Some(&id)).into();
            }
        };
        if row.status.is_final() {
            state::end(self.backend, live).await;
            let (outcome, decision) = match row.status {
                Status::Answered => (Reviewed::Answered, row.decision),
                _ => (Reviewed::Left, None),
            };
            let reviewed = vec![ReviewedRequest {
                id,
                outcome,
                decision,
            }];
            return self.done(reviewed, false).await;
        }
        let accepted = response.is_some_and(|r| r.action == "accept");
        let url = self.page(&id, true);
        let questions = row.request().map(|r| r.questions).unwrap_or_default();
        match url {
            Some(url) if accepted && live.refused + 1 < FORM_TRIES => {
                live.refused += 1;
                live.sealed.round += 1;
                self.page_round(
                    live,
                    url,
                    &questions,
                    Some("the request is not answered yet; answer it on the page first"),
                )
            }
            _ => {
                state::end(self.backend, live).await;
                self.left(&id).await
            }
        }
    }
}

/// A form's response as the client sends it (`ElicitResult`).
#[derive(Debug, Deserialize)]
struct Response {
    action: String,
    #[serde(default)]
    content: Option<JsonObject>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::types::{Intent, QuestionOption};

    fn plan(detail: usize) -> Question {
        Question {
            id: "p".into(),
            question: "Approve?".into(),
            detail: Some("x".repeat(detail)),
            header: None,
            options: Some(vec![QuestionOption {
                label: "Approve".into(),
                description: None,
            }]),
            multi_select: None,
            intent: Some(Intent {
                kind: "plan-review".into(),
                approve: "Approve".into(),
            }),
            editable: None,
        }
    }

    #[test]
    fn a_batch_or_a_long_plan_is_not_a_flat_form() {
        assert!(flat(&[plan(10)]));
        assert!(flat(&[plan(FORM_DETAIL_MAX)]));
        assert!(!flat(&[plan(FORM_DETAIL_MAX + 1)]));
        assert!(!flat(&[plan(10), plan(10)]));
        assert!(!flat(&[]));
    }
}
