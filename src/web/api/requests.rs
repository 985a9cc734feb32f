//! `/api/v1/requests`: ask, list, show, wait for the outcome, claim, answer, cancel,
//! abort. Each handler: check the role, parse, run one use-case on the database thread,
//! render. The same use-cases as `dshq ask`, `list`, `show`, `wait`, `claim`, `answer`,
//! `cancel` and `abort`, so the results are the same documents.

use std::time::Duration;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::{Deserialize, Serialize};

use super::query::Query;
use crate::app;
use crate::core::access::{Action, Reach};
use crate::error::Error;
use crate::host::auth::Caller;
use crate::host::body::Body;
use crate::host::error::{ApiError, ApiResult};
use crate::host::provider::Act;
use crate::host::AppState;
use crate::protocol::continued::Pending;
use crate::protocol::{Code, Outcome};
use crate::store::{ListFilter, RequestRow, Status};
use crate::views::{RequestSummary, RequestView};

/// The result of `POST /api/v1/requests`: what `dshq --json ask` prints.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AskedBody {
    /// The request id (generated, `ask-HEX`, when the document names none).
    pub id: String,
    /// Its context.
    pub context: String,
    /// False when this was an idempotent re-delivery of an accepted request.
    pub new: bool,
    /// Its state now.
    pub status: Status,
    /// `sha256:HEX` of the canonical request, as in its outcome document.
    pub request_digest: String,
}

/// The optional body of `cancel` and `abort`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReasonBody {
    /// Why (recorded, and shown in the outcome's message).
    pub reason: Option<String>,
}

fn not_found(id: &str) -> ApiError {
    ApiError::from(Error::NotFound(id.to_string()))
}

/// The request `id` if the caller may see it with `reach`; else 404 (existence is not
/// revealed).
async fn visible(st: &AppState, caller: &Caller, id: &str, reach: Reach) -> ApiResult<RequestRow> {
    let id2 = id.to_string();
    let row = st
        .db
        .read(move |store| store.get(&id2))
        .await?
        .filter(|r| caller.sees(r, reach));
    row.ok_or_else(|| not_found(id))
}

fn reason(body: &[u8]) -> ApiResult<Option<String>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let b: ReasonBody = serde_json::from_slice(body).map_err(|e| {
        ApiError::new(
            Code::BadRequest,
            format!("the body must be {{\"reason\": \"...\"}} or empty: {e}"),
        )
    })?;
    Ok(b.reason)
}

/// `POST /api/v1/requests`: ask.
pub async fn ask(
    State(st): State<AppState>,
    caller: Caller,
    Body(bytes): Body,
) -> ApiResult<Response> {
    caller.require(Action::Ask)?;
    let (source, actor, root) = (caller.source(), caller.actor(), st.root.clone());
    let (b, token) = (bytes.clone(), caller.token.clone());
    let asked = st
        .db
        .write(move |store| {
            let a = app::ask::TokenAsk {
                bytes: &b,
                token: Some(&token),
                source,
                actor,
            };
            app::ask::ask_with_token(store, &root, a)
        })
        .await?;
    let accepted = match asked {
        crate::store::Asked::Accepted(a) => a,
        crate::store::Asked::Rejected { error, .. } => return Err(error.into()),
    };
    let digest = crate::protocol::check::parse_request(&bytes)
        .map(|r| crate::protocol::digest::request_digest(&r))
        .map_err(ApiError::from)?;
    let status = if accepted.new {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let body = AskedBody {
        id: accepted.id,
        context: accepted.context,
        new: accepted.new,
        status: accepted.status,
        request_digest: digest,
    };
    Ok((status, Json(body)).into_response())
}

/// The filters of `GET /api/v1/requests`.
pub const LIST_PARAMS: &[&str] = &[
    "status",
    "context",
    "agent",
    "intent",
    "grep",
    "oldest_first",
    "limit",
];

/// The largest `limit` of `GET /api/v1/requests`.
pub const LIST_LIMIT_MAX: i64 = 10_000;

/// `GET /api/v1/requests`: the list, with `dshq list`'s filters.
pub async fn list(
    State(st): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Vec<RequestSummary>>> {
    let reach = caller.require(Action::List)?;
    let q = Query::parse(raw.as_deref(), LIST_PARAMS)?;
    // A caller bound to contexts lists those only (asking for another finds nothing).
    let Some(contexts) = caller.contexts_of(q.all("context")) else {
        return Ok(Json(Vec::new()));
    };
    let filter = ListFilter {
        status: q.parsed("status", "give a status such as pending", Status::parse)?,
        contexts,
        agent: q.one("agent").map(str::to_string),
        intent: q.parsed("intent", "give plan-review", |v| {
            (v == crate::protocol::types::PLAN_REVIEW).then(|| v.to_string())
        })?,
        grep: q.one("grep").map(str::to_string),
        limit: Some(q.limit("limit", LIST_LIMIT_MAX)?.unwrap_or(100)),
        oldest_first: q.flag("oldest_first")?,
        source: (reach == Reach::Own).then(|| caller.source().as_str().into_owned()),
    };
    let rows = st.db.read(move |store| store.list(&filter)).await?;
    Ok(Json(rows.iter().map(RequestSummary::from_row).collect()))
}

/// `GET /api/v1/requests/{id}`: the request with its state and outcome.
pub async fn show(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<RequestView>> {
    let reach = caller.require(Action::Read)?;
    let row = visible(&st, &caller, &id, reach).await?;
    Ok(Json(RequestView::from_row(&row)))
}

/// `GET /api/v1/requests/{id}/receipt`: the signed receipt of a final request
/// (`REQUEST_OPEN`, 409, while it is open), for askers that reach dshq over HTTP and keep
/// a receipt as the outbox file's asker does. The body is the receipt's compact rendering
/// and a newline, the bytes `dshq receipt verify` checks.
pub async fn receipt(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let reach = caller.require(Action::Read)?;
    visible(&st, &caller, &id, reach).await?;
    let (root, id2) = (st.root.clone(), id.clone());
    let receipt = st
        .db
        .read(move |store| app::receipts::of_request(store, &root, &id2))
        .await?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        crate::receipt::seal::to_line(&receipt),
    )
        .into_response())
}

/// `GET /api/v1/requests/{id}/outcome?wait=30s`: the outcome document, or 204 when the
/// wait ends first. Woken by the request's own final change, never by polling.
///
/// For a request on a tool call (dsh 0.2's continued questions, `wait.callId`) the end
/// of the wait without an outcome is 200 with the pending document (`{pending: true,
/// callId, ...}`), not 204: the asker learns the question stays answerable, and where its
/// answer will come. (An asker that waits the request's own window passes it as `?wait`.)
pub async fn outcome(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let reach = caller.require(Action::Read)?;
    let q = Query::parse(raw.as_deref(), &["wait"])?;
    let max = st.limits.max_wait;
    let wait = q
        .parsed(
            "wait",
            &format!(
                "give a duration up to {}, such as 30s",
                humantime::format_duration(max)
            ),
            |v| humantime::parse_duration(v).ok().filter(|d| *d <= max),
        )?
        .unwrap_or(Duration::ZERO);
    let row = visible(&st, &caller, &id, reach).await?;
    let call = row.request().and_then(|r| r.wait);
    // What the window's closing returns.
    let closed = || match &call {
        Some(w) => Json(Pending::new(&id, &w.call_id, row.request_digest())).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    };
    let mut shutdown = st.shutdown.clone();
    // A revoked token's wait ends at once, refused as its next request would be.
    let mut held = st.ends.hold(&caller.token.name, None);
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        // Register before the read: an outcome committed in between still wakes us. Only
        // this request's final change does (not every change of the host's broadcast).
        let mut finished = st.db.changes().wait_final(&id);
        let (root, id2) = (st.root.clone(), id.clone());
        let ready: Option<Outcome> = st
            .db
            .read(move |store| app::feed::outcome_ready(store, &root, &id2))
            .await?;
        if let Some(o) = ready {
            return Ok(Json(o).into_response());
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(closed());
        }
        tracing::debug!(id = %crate::text::for_log(&id), "long-poll waiting");
        // Until a final change of this request, the wait's end, or the host's.
        tokio::select! {
            woken = finished.finished() => if !woken {
                return Ok(closed());
            },
            _ = tokio::time::sleep_until(deadline) => {
                return Ok(closed());
            }
            // The host is stopping: no outcome yet, ask again in a moment.
            _ = shutdown.changed() => return Ok(retry_soon()),
            why = held.ended() => return match why {
                crate::host::ends::Ending::HostStopping => Ok(retry_soon()),
                _ => Err(Error::Unauthorized.into()),
            },
        }
    }
}

/// A long-poll the host ends because it is stopping: 204, and `Retry-After`.
fn retry_soon() -> Response {
    (
        StatusCode::NO_CONTENT,
        [(
            axum::http::header::RETRY_AFTER,
            crate::web::stream::RETRY_AFTER.as_secs().to_string(),
        )],
    )
        .into_response()
}

/// `POST /api/v1/requests/{id}/claim`: reserve it for the host's lease.
pub async fn claim(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<RequestView>> {
    let reach = caller.require(Action::Claim)?;
    let row = visible(&st, &caller, &id, reach).await?;
    let claimed = st
        .providers
        .act(&row, caller.actor(), Act::ApiOther, move |store, acting| {
            app::provide::claim_as(store, acting, &id)
        })
        .await?;
    Ok(Json(RequestView::from_row(&claimed)))
}

/// `POST /api/v1/requests/{id}/answer`: answer with an Answer document. On a request
/// with a quorum the answer is the caller's vote: `202 Accepted` with the vote and the
/// votes so far while the quorum is not met, the outcome once it is.
///
/// `?for=PERSON`: the caller answers for PERSON, who is away and named the caller's person
/// their delegate: recorded as "D for P" (`onBehalfOf`). The delegate reaches the contexts
/// PERSON may answer in as well as their own.
pub async fn answer(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
    Body(bytes): Body,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let reach = caller.require(Action::Answer)?;
    let q = Query::parse(raw.as_deref(), &["for"])?;
    let for_person = q.one("for").map(str::to_string);
    let doc = crate::protocol::answer::parse_answer(&bytes)?;
    let row = match (visible(&st, &caller, &id, reach).await, &for_person) {
        (Ok(row), _) => row,
        // A delegate reaches the away person's contexts: the rule that they are the
        // delegate now is the store's, in the answer's transaction.
        (Err(e), Some(p)) => {
            let (id2, p) = (id.clone(), p.clone());
            st.db
                .read(move |store| app::delegation::reachable(store, &id2, &p))
                .await?
                .filter(|r| caller.sees_id(r.id.as_deref().unwrap_or_default()))
                .ok_or(e)?
        }
        (Err(e), None) => return Err(e),
    };
    let root = st.root.clone();
    let done = st
        .providers
        .act(
            &row,
            caller.actor(),
            Act::ApiAnswer,
            move |store, acting| {
                app::provide::answer_for(
                    store,
                    Some(&root),
                    &id,
                    acting,
                    &doc,
                    for_person.as_deref(),
                )
            },
        )
        .await?;
    Ok(match done {
        app::provide::Answering::Finished(f) => Json(f.outcome).into_response(),
        app::provide::Answering::Voted(v) => {
            (axum::http::StatusCode::ACCEPTED, Json(v)).into_response()
        }
    })
}

/// `POST /api/v1/requests/{id}/cancel`: cancel as the human (`ASK_CANCELLED`).
pub async fn cancel(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(bytes): Body,
) -> ApiResult<Json<Outcome>> {
    let reach = caller.require(Action::Cancel)?;
    let why = reason(&bytes)?;
    let row = visible(&st, &caller, &id, reach).await?;
    let root = st.root.clone();
    let finished = st
        .providers
        .act(&row, caller.actor(), Act::ApiOther, move |store, acting| {
            app::provide::cancel(store, Some(&root), &id, acting, why.as_deref())
        })
        .await?;
    Ok(Json(finished.outcome))
}

/// `POST /api/v1/requests/{id}/abort`: abort as the asker (`ASK_ABORTED`).
pub async fn abort(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(bytes): Body,
) -> ApiResult<Json<Outcome>> {
    let reach = caller.require(Action::Abort)?;
    let why = reason(&bytes)?;
    visible(&st, &caller, &id, reach).await?;
    let (root, actor) = (st.root.clone(), caller.actor());
    let finished = st
        .db
        .write(move |store| app::ask::abort(store, &root, &id, why.as_deref(), &actor))
        .await?;
    Ok(Json(finished.outcome))
}
