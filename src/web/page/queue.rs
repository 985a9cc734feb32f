//! The queue (`GET /`): the open requests, filterable by context, agent, status and
//! text, with counts, each request's age and deadline, and who holds each context.
//! `GET /queue` (same filters) returns just the `#queue` fragment, which the script swaps
//! in when the page stream says something changed: a new request appears and one
//! answered elsewhere leaves without a reload.

use std::collections::BTreeMap;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::layout::{self, coarse};
use super::session::Viewer;
use crate::app;
use crate::clock::now_ms;
use crate::core::access::Action;
use crate::host::provider::HOLDER;
use crate::host::AppState;
use crate::html::{html, urlencode, Line, Markup};
use crate::store::{LeaseInfo, ListFilter, RequestRow, Status};
use crate::web::api::query::Query;

/// The queue's filters.
const PARAMS: &[&str] = &["context", "agent", "status", "q", "done"];
/// The most rows the queue shows per status.
const LIMIT: i64 = 500;

/// The filters as given.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    context: String,
    agent: String,
    /// `open` (pending and claimed, the default) or one status.
    status: String,
    q: String,
    done: Option<String>,
}

impl Filter {
    fn parse(raw: Option<&str>) -> Result<Filter, crate::host::error::ApiError> {
        let q = Query::parse(raw, PARAMS)?;
        let s = |k: &str| q.one(k).unwrap_or("").trim().to_string();
        let status = match s("status").as_str() {
            "" | "open" => "open".to_string(),
            other => {
                q.parsed(
                    "status",
                    "give open or a status such as pending",
                    Status::parse,
                )?;
                other.to_string()
            }
        };
        Ok(Filter {
            context: s("context"),
            agent: s("agent"),
            status,
            q: s("q"),
            done: q.one("done").map(str::to_string),
        })
    }

    fn statuses(&self) -> Vec<Status> {
        match Status::parse(&self.status) {
            Some(st) => vec![st],
            None => Status::OPEN.to_vec(),
        }
    }

    fn query_string(&self) -> String {
        let pairs: Vec<(&str, &str)> = [
            ("context", self.context.as_str()),
            ("agent", self.agent.as_str()),
            ("status", self.status.as_str()),
            ("q", self.q.as_str()),
        ]
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .collect();
        serde_urlencoded::to_string(pairs).unwrap_or_default()
    }
}

async fn load(
    st: &AppState,
    viewer: &Viewer,
    f: &Filter,
) -> Result<(Vec<RequestRow>, Vec<LeaseInfo>), Response> {
    viewer
        .caller
        .require(Action::List)
        .map_err(|e| viewer.error(e))?;
    let asked: Vec<String> = if f.context.is_empty() {
        Vec::new()
    } else {
        vec![f.context.clone()]
    };
    let Some(contexts) = viewer.caller.contexts_of(asked) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let filters: Vec<ListFilter> = f
        .statuses()
        .into_iter()
        .map(|status| ListFilter {
            status: Some(status),
            contexts: contexts.clone(),
            agent: (!f.agent.is_empty()).then(|| f.agent.clone()),
            grep: (!f.q.is_empty()).then(|| f.q.clone()),
            limit: Some(LIMIT),
            oldest_first: true,
            ..Default::default()
        })
        .collect();
    let caller = viewer.caller.clone();
    st.db
        .read(move |store| {
            let mut rows = Vec::new();
            for filter in &filters {
                rows.extend(store.list(filter)?);
            }
            rows.retain(|r| caller.in_context(&r.context));
            rows.sort_by_key(|r| (r.deadline_ms.is_none(), r.deadline_ms, r.seq));
            let leases = app::session::status(store, None, None)?;
            Ok((rows, leases))
        })
        .await
        .map_err(|e| viewer.error(e))
}

fn summary(row: &RequestRow) -> Markup {
    let Some(req) = row.request() else {
        return html! {};
    };
    let n = req.questions.len();
    let first = req.questions.first();
    let plan = req
        .questions
        .iter()
        .any(|q| q.plan_review_approve().is_some());
    html! {
        @if plan { span.chip.plan-chip { "plan review" } " " }
        @if let Some(h) = first.and_then(|q| q.header.as_deref()) { span.chip { (Line(h)) } " " }
        (Line(first.map(|q| q.question.as_str()).unwrap_or("")))
        @if n > 1 { " " span.more { "+" (n - 1) " more" } }
    }
}

fn deadline(row: &RequestRow, now: i64) -> Markup {
    html! {
        @match row.deadline_ms {
            None => span.dim { "none" },
            Some(d) if d <= now => span.bad { "overdue" },
            Some(d) if d - now < 10 * 60_000 => span.warn { "in " (coarse(d - now)) },
            Some(d) => { "in " (coarse(d - now)) }
        }
    }
}

/// The status cell: the status, who claimed it, a quorum's progress.
fn status_cell(r: &RequestRow) -> Markup {
    html! {
        span class={ "status " (r.status.as_str()) } { (r.status.as_str()) }
        @if let Some(b) = r.claimed_by.as_deref().filter(|_| r.status == Status::Claimed) {
            " " span.dim { "by " (Line(b)) }
        }
        // A quorum's progress: how many persons agree of how many needed.
        @if let Some(q) = r.quorum_view() {
            " " span.votes title=(Line(&q.summary())) { (Line(&q.progress())) " votes" }
        }
    }
}

/// The `#queue` fragment: counts, who holds each context, the table.
fn fragment_html(viewer: &Viewer, rows: &[RequestRow], leases: &[LeaseInfo]) -> Markup {
    let now = now_ms();
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_context: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rows {
        *by_status.entry(r.status.as_str()).or_default() += 1;
        *by_context.entry(r.context.as_str()).or_default() += 1;
    }
    let held = leases
        .iter()
        .filter(|l| l.live && l.name != HOLDER && viewer.caller.in_context(&l.context));
    html! {
        div #queue {
            p.counts {
                strong #count { (rows.len()) } " shown"
                @for (s, n) in &by_status { " · " (n) " " (s) }
                @for (c, n) in &by_context { " · " span.chip { (Line(c)) } " " (n) }
            }
            @for l in held {
                p.flash.warn {
                    "Context " code { (Line(&l.context)) } " is held by the terminal reviewer "
                    strong { (Line(&l.name)) } " since " (Line(&l.created_at))
                    ": read-only here until they leave."
                }
            }
            @if !viewer.answers() { p.flash { "Signed in as an auditor: read-only." } }
            @if rows.is_empty() {
                p.empty { "Nothing waiting." }
            } @else {
                table.queue {
                    thead { tr {
                        th { "Request" } th { "Question" } th { "Context" }
                        th { "Agent" } th { "Status" } th { "Age" } th { "Deadline" }
                    } }
                    tbody {
                        @for r in rows {
                            @let id = r.id.as_deref().unwrap_or("");
                            @let href = format!("/r/{}", urlencode(id));
                            tr.row data-href=(href) data-id=(id) {
                                td { a href=(href) { (Line(id)) } }
                                td.q { (summary(r)) }
                                td data-label="Context" { (Line(&r.context)) }
                                td data-label="Agent" { (Line(r.agent_id.as_deref().unwrap_or("—"))) }
                                td data-label="Status" { (status_cell(r)) }
                                td data-label="Age" { (coarse(now - r.created_ms)) }
                                td data-label="Deadline" { (deadline(r, now)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn filters_form(f: &Filter) -> Markup {
    let statuses = std::iter::once(("open", "open (pending + claimed)"))
        .chain(Status::ALL.iter().map(|s| (s.as_str(), s.as_str())));
    html! {
        form.filters method="get" action="/" {
            label { "Context " input name="context" value=(f.context) size="12"; }
            label { "Agent " input name="agent" value=(f.agent) size="12"; }
            label { "Status " select name="status" {
                @for (v, label) in statuses {
                    option value=(v) selected[f.status == v] { (label) }
                }
            } }
            label { "Text " input name="q" value=(f.q) size="16"; }
            button type="submit" { "Filter" } " " a href="/" { "clear" }
        }
    }
}

/// `GET /`: the queue page.
pub async fn page(State(st): State<AppState>, viewer: Viewer, RawQuery(raw): RawQuery) -> Response {
    let f = match Filter::parse(raw.as_deref()) {
        Ok(f) => f,
        Err(e) => return viewer.error(e),
    };
    let (rows, leases) = match load(&st, &viewer, &f).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    // The confirmation is outside `#queue`, which the script replaces on every live
    // change: it stays until the reviewer leaves the page.
    let body = html! {
        h1 { "Queue" }
        @if let Some(d) = f.done.as_deref() {
            p.flash.good #sent role="status" { "Sent the answer to " code { (Line(d)) } "." }
        }
        (filters_form(&f))
        p.keys { "Keys: " kbd { "j" } "/" kbd { "k" } " move, " kbd { "Enter" } " opens." }
        div #queue-src data-src={ "/queue?" (f.query_string()) } {}
        (fragment_html(&viewer, &rows, &leases))
    };
    layout::html(
        StatusCode::OK,
        layout::page("Queue", Some(&viewer.nav()), Some("queue"), body),
    )
}

/// `GET /queue`: the `#queue` fragment alone (for the script's live swap).
pub async fn fragment(
    State(st): State<AppState>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> Response {
    let f = match Filter::parse(raw.as_deref()) {
        Ok(f) => f,
        Err(e) => return viewer.error(e),
    };
    match load(&st, &viewer, &f).await {
        Ok((rows, leases)) => layout::html(
            StatusCode::OK,
            fragment_html(&viewer, &rows, &leases).into_string(),
        ),
        Err(r) => r,
    }
}
