//! The history page (`GET /history`): the record with `dshq history`'s filters (agent,
//! context, provider, status, code, intent, decision, since, until, text, limit), and its
//! two pictures ([`super::charts`]) over the same rows, from one use-case
//! ([`crate::app::audit::history_with_charts`]). Reviewers and auditors.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::layout::urlencode;
use super::layout::{self, coarse, escape, text};
use super::session::Viewer;
use crate::app;
use crate::clock::now_ms;
use crate::core::access::Action;
use crate::host::error::ApiError;
use crate::host::AppState;
use crate::protocol::Code;
use crate::store::{HistoryFilter, Status};
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
    let filter = history_filter(&q, viewer.caller.token.context.as_ref(), now_ms())?;
    Ok((q, filter))
}

fn form(q: &Query) -> String {
    let v = |k: &str| escape(q.one(k).unwrap_or(""));
    let select = |name: &str, opts: &[&str]| {
        let cur = q.one(name).unwrap_or("");
        let mut s = format!("<select name=\"{name}\"><option value=\"\">any</option>");
        for o in opts {
            s.push_str(&format!(
                "<option{}>{}</option>",
                if *o == cur { " selected" } else { "" },
                escape(o)
            ));
        }
        s.push_str("</select>");
        s
    };
    let statuses: Vec<&str> = Status::ALL.iter().map(|s| s.as_str()).collect();
    format!(
        "<form class=\"filters\" method=\"get\" action=\"/history\">\
<label>Agent <input name=\"agent\" value=\"{}\" size=\"10\"></label>\
<label>Context <input name=\"context\" value=\"{}\" size=\"10\"></label>\
<label>Provider <input name=\"provider\" value=\"{}\" size=\"10\"></label>\
<label>Status {}</label>\
<label>Code <input name=\"code\" value=\"{}\" size=\"12\"></label>\
<label>Intent {}</label>\
<label>Decision {}</label>\
<label>Since <input name=\"since\" value=\"{}\" size=\"8\" placeholder=\"7d\"></label>\
<label>Until <input name=\"until\" value=\"{}\" size=\"8\"></label>\
<label>Text <input name=\"grep\" value=\"{}\" size=\"12\"></label>\
<label>Limit <input name=\"limit\" value=\"{}\" size=\"5\" placeholder=\"1000\"></label>\
<button type=\"submit\">Filter</button> <a href=\"/history\">clear</a></form>",
        v("agent"),
        v("context"),
        v("provider"),
        select("status", &statuses),
        v("code"),
        select("intent", &["plan-review"]),
        select("decision", &["approved", "declined"]),
        v("since"),
        v("until"),
        v("grep"),
        v("limit"),
    )
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
    let mut body = format!(
        "<h1>History</h1>{}<div class=\"charts\"><figure>{}<figcaption>Wait from asking to answer, per day asked (UTC)\
</figcaption></figure><figure>{}<figcaption>Requests open over time, among these rows (a window starts at zero)</figcaption></figure></div>\
<p class=\"counts\"><strong>{}</strong> rows</p>",
        form(&q),
        super::charts::waits(&charts.waits),
        super::charts::backlog(&charts.backlog),
        rows.len()
    );
    body.push_str(
        "<table class=\"history\"><thead><tr><th>Request</th><th>Context</th><th>Agent</th><th>Asked</th>\
<th>Wait</th><th>Status</th><th>Decision</th><th>By</th><th>Questions and answers</th></tr></thead><tbody>",
    );
    for r in &rows {
        let id = r.id.as_deref().unwrap_or("");
        let qs: Vec<String> = r
            .questions
            .iter()
            .map(|hq| {
                let ans = match (&hq.selected, &hq.custom) {
                    (Some(s), c) if !s.is_empty() || c.is_some() => {
                        let mut parts: Vec<String> =
                            s.iter().map(|x| format!("<q>{}</q>", text(x))).collect();
                        if let Some(c) = c {
                            parts.push(format!("<q class=\"pre\">{}</q>", text(c)));
                        }
                        parts.join(" + ")
                    }
                    (Some(_), _) => "<span class=\"dim\">skipped</span>".into(),
                    _ => String::new(),
                };
                format!(
                    "<div>{} {}</div>",
                    text(&hq.question),
                    if ans.is_empty() {
                        ans
                    } else {
                        format!("→ {ans}")
                    }
                )
            })
            .collect();
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><span class=\"status {}\">{}</span>{}</td>\
<td>{}</td><td>{}</td><td class=\"q\">{}</td></tr>",
            if r.status == Status::Rejected || id.is_empty() {
                text(id)
            } else {
                format!("<a href=\"/r/{}\">{}</a>", urlencode(id), text(id))
            },
            text(&r.context),
            text(r.agent.as_deref().unwrap_or("—")),
            text(&r.created_at[..r.created_at.len().min(19)].replace('T', " ")),
            coarse(r.wait_ms),
            r.status.as_str(),
            r.status.as_str(),
            r.code.as_deref().map(|c| format!(" <span class=\"dim\">{}</span>", text(c))).unwrap_or_default(),
            r.decision.map(|d| d.as_str()).unwrap_or(""),
            text(r.provider.as_deref().unwrap_or("")),
            qs.concat()
        ));
    }
    body.push_str("</tbody></table>");
    layout::html(
        StatusCode::OK,
        layout::page(
            "History",
            Some(&viewer.nav()),
            None,
            crate::html::markup(body),
        ),
    )
}
