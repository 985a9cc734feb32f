//! The record over HTTP: `GET /api/v1/history` (with `dshq history`'s filters),
//! `GET /api/v1/requests/{id}/events` and `GET /api/v1/stats`. Auditors and reviewers.

use axum::extract::{Path, RawQuery, State};
use axum::Json;

use super::query::Query;
use crate::app;
use crate::clock::now_ms;
use crate::core::access::Action;
use crate::error::Error;
use crate::host::auth::Caller;
use crate::host::error::ApiResult;
use crate::host::AppState;
use crate::protocol::{Code, Decision};
use crate::store::{Event, HistoryFilter, HistoryRow, Stats, Status};

/// The filters of `GET /api/v1/history`.
pub const HISTORY_PARAMS: &[&str] = &[
    "agent", "context", "provider", "status", "code", "intent", "decision", "since", "until",
    "grep", "limit",
];

/// The largest `limit` of `GET /api/v1/history`.
pub const HISTORY_LIMIT_MAX: i64 = 100_000;

/// `GET /api/v1/history`.
pub async fn history(
    State(st): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Vec<HistoryRow>>> {
    caller.require(Action::Audit)?;
    let q = Query::parse(raw.as_deref(), HISTORY_PARAMS)?;
    let Some(filter) = history_filter(&q, &caller, now_ms())? else {
        return Ok(Json(Vec::new()));
    };
    let rows = st.db.read(move |store| store.history(&filter)).await?;
    Ok(Json(rows))
}

/// `GET /api/v1/requests/{id}/events`: the full trail of one request.
pub async fn events(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<Event>>> {
    caller.require(Action::Audit)?;
    let id2 = id.clone();
    let (row, events) = st
        .db
        .read(move |store| {
            let row = store.get_any(&id2)?;
            Ok((row, app::audit::events(store, &id2)?))
        })
        .await?;
    let visible = row.is_some_and(|r| caller.in_context(&r.context));
    if !visible {
        return Err(Error::NotFound(id).into());
    }
    Ok(Json(events))
}

/// `GET /api/v1/stats?since=7d`.
pub async fn stats(
    State(st): State<AppState>,
    caller: Caller,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Stats>> {
    caller.require(Action::Audit)?;
    if !caller.reaches_every_context() {
        // The counts span every context: not for a caller bound to some.
        return Err(Error::Forbidden.into());
    }
    let q = Query::parse(raw.as_deref(), &["since"])?;
    let since = q.time("since", now_ms())?;
    let stats = st.db.read(move |store| store.stats(since)).await?;
    Ok(Json(stats))
}

/// The history filter a query asks for (`HISTORY_PARAMS`, the CLI's `history` flags), for
/// a caller who may be bound to contexts (a token's, a sign-in's): `None` when it asks
/// only for other contexts, which it may not see (an empty answer, not an error that would
/// reveal them).
/// The API's `GET /history` and the page's history both read their query through here.
pub fn history_filter(
    q: &Query,
    caller: &Caller,
    now: crate::clock::Millis,
) -> Result<Option<HistoryFilter>, crate::host::error::ApiError> {
    let Some(contexts) = caller.contexts_of(q.all("context")) else {
        return Ok(None);
    };
    Ok(Some(HistoryFilter {
        agent: q.one("agent").map(str::to_string),
        contexts,
        provider: q.one("provider").map(str::to_string),
        status: q.parsed("status", "give a status such as answered", Status::parse)?,
        code: q
            .parsed(
                "code",
                "give an error code such as ASK_CANCELLED",
                Code::parse,
            )?
            .map(|c| c.as_str().to_string()),
        intent: q.parsed("intent", "give plan-review", |v| {
            (v == crate::protocol::types::PLAN_REVIEW).then(|| v.to_string())
        })?,
        decision: q.parsed("decision", "give approved or declined", Decision::parse)?,
        since: q.time("since", now)?,
        until: q.time("until", now)?,
        grep: q.one("grep").map(str::to_string),
        limit: Some(q.limit("limit", HISTORY_LIMIT_MAX)?.unwrap_or(1000)),
    }))
}
