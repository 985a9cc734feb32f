//! The history page (`GET /history`): the record with `dshq history`'s filters (agent,
//! context, provider, status, code, intent, decision, since, until, text, limit), and its
//! two pictures ([`super::charts`]) over the same rows, from one use-case
//! ([`crate::app::audit::history_with_charts`]). Reviewers and auditors.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::layout::{self, coarse};
use super::session::Viewer;
use crate::app;
use crate::clock::now_ms;
use crate::core::access::Action;
use crate::host::error::ApiError;
use crate::host::AppState;
use crate::html::{html, markup, urlencode, Line, Markup};
use crate::protocol::Code;
use crate::store::{HistoryFilter, HistoryRow, Status};
use crate::web::api::audit::{history_filter, HISTORY_PARAMS};
use crate::web::api::query::Query;

fn filter_of(
    viewer: &Viewer,
    raw: Option<&str>,
) -> Result<(Query, Option<HistoryFilter>), ApiError> {
    // A form sends its empty fields too: an empty field is no filter.
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
        .map_err(|e| ApiError::new(Code::Usage, format!("bad query string: {e}")))?;
    let kept: Vec<(String, String)> = pairs
        .into_iter()
        .filter(|(_, v)| !v.trim().is_empty())
        .collect();
    let raw = serde_urlencoded::to_string(&kept).unwrap_or_default();
    let q = Query::parse(Some(&raw), HISTORY_PARAMS)?;
    let filter = history_filter(&q, &viewer.caller, now_ms())?;
    Ok((q, filter))
}

fn form(q: &Query) -> Markup {
    let v = |k: &str| q.one(k).unwrap_or("").to_string();
    let select = |name: &str, opts: &[&str]| {
        let cur = q.one(name).unwrap_or("");
        html! {
            select name=(name) {
                option value="" { "any" }
                @for o in opts { option selected[*o == cur] { (o) } }
            }
        }
    };
    let statuses: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
    let input = |label: &str, name: &str, size: &str, placeholder: Option<&str>| {
        html! { label { (label) " " input name=(name) value=(v(name)) size=(size) placeholder=[placeholder]; } }
    };
    html! {
        form.filters method="get" action="/history" {
            (input("Agent", "agent", "10", None))
            (input("Context", "context", "10", None))
            (input("Provider", "provider", "10", None))
            label { "Status " (select("status", &statuses)) }
            (input("Code", "code", "12", None))
            label { "Intent " (select("intent", &["plan-review"])) }
            label { "Decision " (select("decision", &["approved", "declined"])) }
            (input("Since", "since", "8", Some("7d")))
            (input("Until", "until", "8", None))
            (input("Text", "grep", "12", None))
            (input("Limit", "limit", "5", Some("1000")))
            button type="submit" { "Filter" } " " a href="/history" { "clear" }
        }
    }
}

/// One row's questions and what was answered to each.
fn questions(r: &HistoryRow) -> Markup {
    html! {
        @for hq in &r.questions {
            div {
                (Line(&hq.question))
                @match (&hq.selected, &hq.custom) {
                    (Some(s), c) if !s.is_empty() || c.is_some() => {
                        " → "
                        @for (k, x) in s.iter().enumerate() { @if k > 0 { " + " } q { (Line(x)) } }
                        @if let Some(c) = c { @if !s.is_empty() { " + " } q.pre { (Line(c)) } }
                    }
                    (Some(_), _) => { " → " span.dim { "skipped" } }
                    _ => { " " }
                }
            }
        }
    }
}

/// The table of rows.
fn table(rows: &[HistoryRow]) -> Markup {
    html! {
        table.history {
            thead { tr {
                th { "Request" } th { "Context" } th { "Agent" } th { "Asked" } th { "Wait" }
                th { "Status" } th { "Decision" } th { "By" } th { "Questions and answers" }
            } }
            tbody {
                @for r in rows {
                    @let id = r.id.as_deref().unwrap_or("");
                    tr {
                        td {
                            @if r.status == Status::Rejected || id.is_empty() { (Line(id)) }
                            @else { a href={ "/r/" (urlencode(id)) } { (Line(id)) } }
                        }
                        td { (Line(&r.context)) }
                        td { (Line(r.agent.as_deref().unwrap_or("—"))) }
                        td { (Line(&r.created_at[..r.created_at.len().min(19)].replace('T', " "))) }
                        td { (coarse(r.wait_ms)) }
                        td {
                            span class={ "status " (r.status.as_str()) } { (r.status.as_str()) }
                            @if let Some(c) = r.code.as_deref() { " " span.dim { (Line(c)) } }
                        }
                        td { (r.decision.map(|d| d.as_str()).unwrap_or("")) }
                        td { (Line(r.provider.as_deref().unwrap_or(""))) }
                        td.q { (questions(r)) }
                    }
                }
            }
        }
    }
}

/// `GET /history`.
pub async fn page(State(st): State<AppState>, viewer: Viewer, RawQuery(raw): RawQuery) -> Response {
    if let Err(e) = viewer.caller.require(Action::Audit) {
        return viewer.error(e);
    }
    let (q, filter) = match filter_of(&viewer, raw.as_deref()) {
        Ok(x) => x,
        Err(e) => return viewer.error(e),
    };
    let (rows, charts) = match filter {
        None => (Vec::new(), Default::default()),
        Some(f) => {
            let now = now_ms();
            match st
                .db
                .read(move |store| app::audit::history_with_charts(store, &f, now))
                .await
            {
                Ok(x) => x,
                Err(e) => return viewer.error(e),
            }
        }
    };
    let body = html! {
        h1 { "History" }
        (form(&q))
        div.charts {
            figure {
                (markup(super::charts::waits(&charts.waits)))
                figcaption { "Wait from asking to answer, per day asked (UTC)" }
            }
            figure {
                (markup(super::charts::backlog(&charts.backlog)))
                figcaption { "Requests open over time, among these rows (a window starts at zero)" }
            }
        }
        p.counts { strong { (rows.len()) } " rows" }
        (table(&rows))
    };
    layout::html(
        StatusCode::OK,
        layout::page("History", Some(&viewer.nav()), None, body),
    )
}
