//! The queue (`GET /`): the open requests, filterable by context, agent, status and
//! text, with counts, each request's age and deadline, and who holds each context.
//! `GET /queue` (same filters) returns just the `#queue` fragment, which the script swaps
//! in when the page stream says something changed: a new request appears and one
//! answered elsewhere leaves without a reload.

use std::collections::BTreeMap;

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::layout::{self, coarse, escape, text, urlencode};
use super::session::Viewer;
use crate::app;
use crate::clock::now_ms;
use crate::core::access::Action;
use crate::host::provider::HOLDER;
use crate::host::AppState;
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
    let mut contexts: Vec<String> = if f.context.is_empty() {
        Vec::new()
    } else {
        vec![f.context.clone()]
    };
    if let Some(bound) = &viewer.caller.token.context {
        if contexts.is_empty() || contexts.contains(bound) {
            contexts = vec![bound.clone()];
        } else {
            return Ok((Vec::new(), Vec::new()));
        }
    }
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
                rows.extend(app::feed::list(store, filter)?);
            }
            rows.retain(|r| caller.in_context(&r.context));
            rows.sort_by_key(|r| (r.deadline_ms.is_none(), r.deadline_ms, r.seq));
            let leases = app::session::status(store, None, None)?;
            Ok((rows, leases))
        })
        .await
        .map_err(|e| viewer.error(e))
}

fn summary(row: &RequestRow) -> String {
    let Some(req) = row.request() else {
        return String::new();
    };
    let n = req.questions.len();
    let first = req.questions.first();
    let header = first
        .and_then(|q| q.header.as_deref())
        .map(|h| format!("<span class=\"chip\">{}</span> ", text(h)))
        .unwrap_or_default();
    let plan = if req
        .questions
        .iter()
        .any(|q| q.plan_review_approve().is_some())
    {
        "<span class=\"chip plan-chip\">plan review</span> "
    } else {
        ""
    };
    let more = if n > 1 {
        format!(" <span class=\"more\">+{} more</span>", n - 1)
    } else {
        String::new()
    };
    format!(
        "{plan}{header}{}{more}",
        text(first.map(|q| q.question.as_str()).unwrap_or(""))
    )
}

fn deadline(row: &RequestRow, now: i64) -> String {
    match row.deadline_ms {
        None => "<span class=\"dim\">none</span>".to_string(),
        Some(d) if d <= now => "<span class=\"bad\">overdue</span>".to_string(),
        Some(d) if d - now < 10 * 60_000 => {
            format!("<span class=\"warn\">in {}</span>", coarse(d - now))
        }
        Some(d) => format!("in {}", coarse(d - now)),
    }
}

/// The `#queue` fragment: counts, who holds each context, the table.
fn fragment_html(viewer: &Viewer, rows: &[RequestRow], leases: &[LeaseInfo]) -> String {
    let now = now_ms();
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    let mut by_context: BTreeMap<&str, usize> = BTreeMap::new();
    for r in rows {
        *by_status.entry(r.status.as_str()).or_default() += 1;
        *by_context.entry(r.context.as_str()).or_default() += 1;
    }
    let mut h = String::from("<div id=\"queue\">");
    h.push_str(&format!(
        "<p class=\"counts\"><strong id=\"count\">{}</strong> shown",
        rows.len()
    ));
    for (s, n) in &by_status {
        h.push_str(&format!(" · {n} {}", escape(s)));
    }
    for (c, n) in &by_context {
        h.push_str(&format!(" · <span class=\"chip\">{}</span> {n}", text(c)));
    }
    h.push_str("</p>");
    for l in leases
        .iter()
        .filter(|l| l.live && l.name != HOLDER && viewer.caller.in_context(&l.context))
    {
        h.push_str(&format!(
            "<p class=\"flash warn\">Context <code>{}</code> is held by the terminal reviewer <strong>{}</strong> \
since {}: read-only here until they leave.</p>",
            text(&l.context),
            text(&l.name),
            text(&l.created_at)
        ));
    }
    if !viewer.answers() {
        h.push_str("<p class=\"flash\">Signed in as an auditor: read-only.</p>");
    }
    if rows.is_empty() {
        h.push_str("<p class=\"empty\">Nothing waiting.</p></div>");
        return h;
    }
    h.push_str(
        "<table class=\"queue\"><thead><tr><th>Request</th><th>Question</th><th>Context</th>\
<th>Agent</th><th>Status</th><th>Age</th><th>Deadline</th></tr></thead><tbody>",
    );
    for r in rows {
        let id = r.id.as_deref().unwrap_or("");
        let href = format!("/r/{}", urlencode(id));
        h.push_str(&format!(
            "<tr class=\"row\" data-href=\"{href}\" data-id=\"{}\"><td><a href=\"{href}\">{}</a></td>\
<td class=\"q\">{}</td><td data-label=\"Context\">{}</td><td data-label=\"Agent\">{}</td>\
<td data-label=\"Status\"><span class=\"status {}\">{}</span>{}</td>\
<td data-label=\"Age\">{}</td><td data-label=\"Deadline\">{}</td></tr>",
            escape(id),
            text(id),
            summary(r),
            text(&r.context),
            text(r.agent_id.as_deref().unwrap_or("—")),
            r.status.as_str(),
            r.status.as_str(),
            r.claimed_by
                .as_deref()
                .filter(|_| r.status == Status::Claimed)
                .map(|b| format!(" <span class=\"dim\">by {}</span>", text(b)))
                .unwrap_or_default()
                // A quorum's progress: how many persons agree of how many needed.
                + &r.quorum_view()
                    .map(|q| {
                        format!(
                            " <span class=\"votes\" title=\"{}\">{} votes</span>",
                            escape(&q.summary()),
                            text(&q.progress())
                        )
                    })
                    .unwrap_or_default(),
            coarse(now - r.created_ms),
            deadline(r, now),
        ));
    }
    h.push_str("</tbody></table></div>");
    h
}

fn filters_form(f: &Filter) -> String {
    let opt = |v: &str, label: &str| {
        format!(
            "<option value=\"{v}\"{}>{label}</option>",
            if f.status == v { " selected" } else { "" }
        )
    };
    let mut statuses = opt("open", "open (pending + claimed)");
    for s in Status::ALL {
        statuses.push_str(&opt(s.as_str(), s.as_str()));
    }
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/\">\
<label>Context <input name=\"context\" value=\"{}\" size=\"12\"></label>\
<label>Agent <input name=\"agent\" value=\"{}\" size=\"12\"></label>\
<label>Status <select name=\"status\">{statuses}</select></label>\
<label>Text <input name=\"q\" value=\"{}\" size=\"16\"></label>\
<button type=\"submit\">Filter</button> <a href=\"/\">clear</a></form>",
        escape(&f.context),
        escape(&f.agent),
        escape(&f.q)
    )
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
    let done = f
        .done
        .as_deref()
        .map(|d| {
            format!(
                "<p class=\"flash good\" id=\"sent\" role=\"status\">Sent the answer to <code>{}</code>.</p>",
                text(d)
            )
        })
        .unwrap_or_default();
    let body = format!(
        "<h1>Queue</h1>{done}{}<p class=\"keys\">Keys: <kbd>j</kbd>/<kbd>k</kbd> move, <kbd>Enter</kbd> opens.</p>\
<div id=\"queue-src\" data-src=\"/queue?{}\"></div>{}",
        filters_form(&f),
        escape(&f.query_string()),
        fragment_html(&viewer, &rows, &leases)
    );
    layout::html(
        StatusCode::OK,
        layout::page("Queue", Some(&viewer.nav()), Some("queue"), &body),
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
        Ok((rows, leases)) => layout::html(StatusCode::OK, fragment_html(&viewer, &rows, &leases)),
        Err(r) => r,
    }
}
