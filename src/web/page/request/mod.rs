//! One request (`GET /r/{id}`): its header, question, detail, meta, every option with its
//! description; radios or checkboxes as the question says, "Other" free text, skip. A
//! plan review shows the plan rendered safely ([`super::markdown`]) and offers the choices
//! of [`crate::protocol::review`] in its order, with its default (Decline with feedback)
//! checked: Approve is never pre-selected, never focused, never what Enter does.
//!
//! A form that cannot become an answer comes back as this page (a `400`) with every entry
//! kept and the problem flagged at its question, not as a separate error page.
//!
//! Nothing is sent from the form itself: it posts to `/r/{id}/confirm`, which shows the
//! summary of what will be sent (every question of a batch) with the answer as a hidden
//! field; only that page's button posts `/r/{id}/answer`, which answers through the
//! host's provider lease as `web:NAME` ([`crate::app::provide::answer`]). Without the
//! script this is the whole flow; the script adds keys only.
//!
//! A question that allows an edit (a plan review, or a free-text question the asker made
//! `editable`: [`crate::protocol::edit`]) offers its proposal in a box to edit; the
//! summary page shows the unified diff of the edit, escaped, before anything is sent.
//!
//! Opening a request as a reviewer makes the host hold the context's provider lease
//! ([`crate::host::provider::Providers::acting`]). When a terminal reviewer holds the
//! context (DUPLICATE_PROVIDER) the page says who and shows no form.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::layout::urlencode;
use super::layout::{self, block, escape, text};
use super::session::{field, form_fields, Viewer};
use crate::app;
use crate::core::access::Action;
use crate::error::Error;
use crate::host::body::Body;
use crate::host::AppState;
use crate::protocol::{
    edit, review, Answer, AnswerItem, Code, Question, Request, UserQuestionError,
};
use crate::store::driver::links::LinkUse;
use crate::store::{RequestRow, Status};

/// Whether the page may answer this request, and if not, why.
enum Answerable {
    Yes,
    No(String),
}

async fn visible(st: &AppState, viewer: &Viewer, id: &str) -> Result<RequestRow, Response> {
    let reach = viewer
        .caller
        .require(Action::Read)
        .map_err(|e| viewer.error(e))?;
    let id2 = id.to_string();
    let row = st
        .db
        .read(move |store| app::feed::get(store, &id2))
        .await
        .map_err(|e| viewer.error(e))?;
    row.filter(|r| viewer.caller.sees(r, reach))
        .ok_or_else(|| viewer.error(Error::NotFound(id.to_string())))
}

async fn answerable(st: &AppState, viewer: &Viewer, row: &RequestRow) -> Answerable {
    if !viewer.answers() {
        return Answerable::No("Signed in as an auditor: read-only.".into());
    }
    if row.status.is_final() {
        return Answerable::No(format!("This request is {}.", row.status.as_str()));
    }
    match st.providers.answering(row, viewer.caller.actor()).await {
        Ok(_) => {}
        Err(Error::DuplicateProvider { web: Some(w), .. }) => {
            return Answerable::No(format!(
                "The web page of the dshq daemon on {} holds context {}: read-only here until \
it is released (when its last reviewer leaves, or {} after its last answer).",
                w.host,
                crate::text::one_line(&row.context),
                w.idle
            ))
        }
        Err(Error::DuplicateProvider {
            name,
            since,
            expires,
            ..
        }) => {
            return Answerable::No(format!(
                "The terminal reviewer {} holds context {} (since {}, until {} unless it \
heartbeats): read-only here until they leave.",
                crate::text::one_line(&name),
                crate::text::one_line(&row.context),
                since,
                expires
            ))
        }
        Err(e) => return Answerable::No(e.to_user_error().message),
    }
    if row.status == Status::Claimed {
        let ours = row.claimed_by.as_deref() == Some(crate::host::provider::HOLDER);
        if !ours {
            return Answerable::No(format!(
                "Claimed by {}.",
                crate::text::one_line(row.claimed_by.as_deref().unwrap_or("another provider"))
            ));
        }
    }
    Answerable::Yes
}

fn meta_html(row: &RequestRow, req: &Request) -> String {
    let mut h = String::from("<dl class=\"meta\">");
    let mut item = |k: &str, v: String| h.push_str(&format!("<dt>{k}</dt><dd>{v}</dd>"));
    item("Context", text(&row.context));
    item(
        "Agent",
        match (&row.agent_id, &row.agent_lineage) {
            (Some(a), Some(l)) => format!("{} <span class=\"dim\">({})</span>", text(a), text(l)),
            (Some(a), None) => text(a),
            _ => "<span class=\"dim\">none</span>".into(),
        },
    );
    item("From", text(&row.source));
    item(
        "Status",
        format!("<span class=\"status {0}\">{0}</span>", row.status.as_str()),
    );
    let now = crate::clock::now_ms();
    item(
        "Asked",
        format!(
            "{} <span class=\"dim\">({} ago)</span>",
            text(&crate::clock::rfc3339(row.created_ms)),
            layout::coarse(now - row.created_ms)
        ),
    );
    if let Some(d) = row.deadline_ms {
        item(
            "Deadline",
            format!(
                "{} <span class=\"dim\">({})</span>",
                text(&crate::clock::rfc3339(d)),
                if d > now {
                    format!("in {}", layout::coarse(d - now))
                } else {
                    "overdue".into()
                }
            ),
        );
    }
    if let Some(p) = &row.provider {
        item("Answered by", text(p));
    }
    if let Some(m) = &req.meta {
        let pretty = serde_json::to_string_pretty(m).unwrap_or_default();
        item(
            "Meta",
            format!("<pre class=\"plain\">{}</pre>", block(&pretty)),
        );
    }
    h.push_str("</dl>");
    h
}

/// A request with a quorum (issue 30): the rule, every vote so far (each voter's answer,
/// escaped like any asker or reviewer text) and, once answered, its approvers.
fn quorum_html(row: &RequestRow, req: &Request) -> String {
    let Some(q) = row.quorum_view() else {
        return String::new();
    };
    let mut h = format!(
        "<section id=\"quorum\" class=\"quorum\"><p><strong class=\"progress\">{}</strong> agree. Needs <strong>{}</strong> matching vote(s) from distinct persons{}; a decline {} (set by the {}). The asker's own vote never counts, and one person votes once, from any face.</p>",
        text(&q.progress()),
        q.approvals,
        q.group
            .as_deref()
            .map(|g| format!(" of group <code>{}</code>", text(g)))
            .unwrap_or_default(),
        if q.decline == "veto" { "vetoes" } else { "is a vote" },
        text(&q.by)
    );
    if q.votes.is_empty() {
        h.push_str("<p class=\"dim\">No votes yet.</p>");
    } else {
        h.push_str("<ol class=\"votes\">");
        for v in &q.votes {
            let answer = serde_json::from_value::<Answer>(v.answer.clone()).ok();
            let summary = answer
                .map(|a| {
                    req.questions
                        .iter()
                        .zip(&a.answers)
                        .map(|(q, item)| summary_item(q, item))
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .unwrap_or_default();
            h.push_str(&format!(
                "<li class=\"vote\"><strong>{}</strong>{}: {}{} <span class=\"dim\">{}</span></li>",
                text(&v.voter),
                v.person
                    .as_deref()
                    .map(|p| format!(" ({})", text(p)))
                    .unwrap_or_default(),
                summary,
                v.decision
                    .map(|d| format!(" ({})", d.as_str()))
                    .unwrap_or_default(),
                text(&v.at)
            ));
        }
        h.push_str("</ol>");
    }
    if let Some(approvers) = row.parsed_approvers() {
        let names: Vec<String> = approvers.iter().map(|a| text(a)).collect();
        h.push_str(&format!(
            "<p class=\"approvers\">Approved by {}</p>",
            names.join(", ")
        ));
    }
    h.push_str("</section>");
    h
}

/// What a final request ended with: the answer given, or the error.
fn outcome_html(row: &RequestRow, req: &Request) -> String {
    if let Some(a) = row.parsed_answer() {
        let mut h = String::from("<section class=\"flash good\"><p>Answered");
        if let Some(p) = &row.provider {
            h.push_str(&format!(" by <strong>{}</strong>", text(p)));
        }
        h.push_str(":</p><ol class=\"summary\">");
        for (q, item) in req.questions.iter().zip(&a.answers) {
            h.push_str(&format!(
                "<li><p class=\"question\">{}</p><p class=\"sending\">{}</p></li>",
                block(&q.question),
                summary_item(q, item)
            ));
        }
        h.push_str("</ol></section>");
        return h;
    }
    match (&row.error_code, &row.error_message) {
        (Some(code), msg) => format!(
            "<p class=\"flash bad\"><span class=\"code\">{}</span> {}</p>",
            text(code),
            text(msg.as_deref().unwrap_or(""))
        ),
        _ => String::new(),
    }
}

fn question_head(i: usize, q: &Question) -> String {
    let mut h = String::new();
    if let Some(hd) = &q.header {
        h.push_str(&format!(
            "<p class=\"header\"><span class=\"chip\">{}</span></p>",
            text(hd)
        ));
    }
    h.push_str(&format!(
        "<h2 class=\"question\" id=\"q{i}-text\">{}</h2>",
        block(&q.question)
    ));
    if let Some(d) = &q.detail {
        if q.plan_review_approve().is_some() {
            h.push_str(&format!(
                "<div class=\"plan\" aria-label=\"the plan\">{}</div>",
                super::markdown::render(d)
            ));
        } else {
            h.push_str(&format!("<div class=\"detail\">{}</div>", block(d)));
        }
    }
    h
}

fn option_label(label: &str, desc: Option<&str>) -> String {
    format!(
        "<span class=\"label\">{}</span>{}",
        text(label),
        desc.map(|d| format!(" <span class=\"desc\">{}</span>", block(d)))
            .unwrap_or_default()
    )
}

/// What the reviewer entered in a form that could not be sent: shown again as it was,
/// with the problem flagged at its question.
#[derive(Clone, Copy)]
struct Entered<'a> {
    fields: &'a [(String, String)],
    problem: &'a FormError,
}

impl Entered<'_> {
    fn has(&self, name: &str, value: &str) -> bool {
        self.fields.iter().any(|(k, v)| k == name && v == value)
    }

    fn value(&self, name: &str) -> String {
        field(self.fields, name).unwrap_or("").to_string()
    }
}

/// ` checked` when the input is on.
fn checked(on: bool) -> &'static str {
    if on {
        " checked"
    } else {
        ""
    }
}

fn question_form(i: usize, q: &Question, enabled: bool, entered: Option<Entered<'_>>) -> String {
    let dis = if enabled { "" } else { " disabled" };
    let problem = entered.and_then(|e| (e.problem.question == Some(i)).then_some(e.problem));
    let mut h = format!(
        "<fieldset class=\"q{}\" data-q=\"{i}\"{dis}{}>",
        if problem.is_some() { " invalid" } else { "" },
        if problem.is_some() {
            format!(" aria-describedby=\"q{i}-problem\"")
        } else {
            String::new()
        }
    );
    h.push_str(&question_head(i, q));
    if let Some(p) = problem {
        h.push_str(&format!(
            "<p class=\"flash bad problem\" id=\"q{i}-problem\" role=\"alert\"><span class=\"code\">{}</span> {}</p>",
            escape(p.error.code.as_str()),
            text(&p.error.message)
        ));
    }
    let name = format!("q{i}");
    let other_text = entered
        .map(|e| e.value(&format!("{name}.other")))
        .unwrap_or_default();
    if let Some(plan) = review::choices(q) {
        h.push_str("<div class=\"options\">");
        for (k, choice) in plan.choices.iter().enumerate() {
            let key = k + 1;
            let value = match choice {
                review::Choice::Option { index, .. } => format!("o{index}"),
                review::Choice::DeclineWithFeedback => "decline".to_string(),
            };
            let on = match entered {
                Some(e) => e.has(&name, &value),
                None => k == plan.default,
            };
            let input = format!(
                "<input type=\"radio\" name=\"{name}\" value=\"{value}\" data-key=\"{key}\"{}>",
                checked(on)
            );
            match choice {
                review::Choice::Option {
                    option, approves, ..
                } => h.push_str(&format!(
                    "<label class=\"opt {}\"><kbd>{key}</kbd> {input}{}{}</label>",
                    if *approves { "approve" } else { "declines" },
                    option_label(&option.label, option.description.as_deref()),
                    if *approves {
                        " <span class=\"chip good\">approves</span>"
                    } else {
                        " <span class=\"dim\">(declines)</span>"
                    }
                )),
                review::Choice::DeclineWithFeedback => h.push_str(&format!(
                    "<label class=\"opt decline\"><kbd>{key}</kbd> {input}{}</label>",
                    review::DECLINE_WITH_FEEDBACK
                )),
            }
        }
        h.push_str(&format!(
            "</div><label class=\"other\">Feedback (sent with a decline) <textarea name=\"{name}.other\" rows=\"3\">{}</textarea></label>",
            escape(&other_text)
        ));
    } else if q.options().is_empty() {
        h.push_str(&format!(
            "<label class=\"other\">Your answer <textarea name=\"{name}.other\" rows=\"3\">{}</textarea></label>",
            escape(&other_text)
        ));
    } else {
        let ty = if q.is_multi() { "checkbox" } else { "radio" };
        h.push_str(&format!(
            "<p class=\"dim\">{}</p><div class=\"options\">",
            if q.is_multi() {
                "Pick any number."
            } else {
                "Pick one."
            }
        ));
        for (k, o) in q.options().iter().enumerate() {
            let key = k + 1;
            let value = format!("o{k}");
            h.push_str(&format!(
                "<label class=\"opt\"><kbd>{key}</kbd> <input type=\"{ty}\" name=\"{name}\" value=\"{value}\" data-key=\"{key}\"{}> {}</label>",
                checked(entered.is_some_and(|e| e.has(&name, &value))),
                option_label(&o.label, o.description.as_deref())
            ));
        }
        let other = if q.is_multi() {
            "<label class=\"other\">Other (added to what you tick) ".to_string()
        } else {
            format!(
                "<label class=\"other\"><input type=\"radio\" name=\"{name}\" value=\"other\"{}> Other: ",
                checked(entered.is_some_and(|e| e.has(&name, "other")))
            )
        };
        h.push_str(&format!(
            "</div>{other}<input type=\"text\" name=\"{name}.other\" size=\"40\" value=\"{}\"></label>",
            escape(&other_text)
        ));
    }
    if q.allows_edit() {
        h.push_str(&edit_box(i, q, entered));
    }
    h.push_str(&format!(
        "<label class=\"skip\"><input type=\"checkbox\" name=\"{name}.skip\" value=\"1\"{}> Skip this question{}</label>",
        checked(entered.is_some_and(|e| e.has(&format!("{name}.skip"), "1"))),
        if q.plan_review_approve().is_some() {
            " (records a decline without feedback)"
        } else {
            ""
        }
    ));
    h.push_str("</fieldset>");
    h
}

/// Edit-then-approve: the proposal in a box the reviewer may edit (closed until opened;
/// open when the form comes back with an edit in it). Nothing here is an edit until the
/// text differs from the proposal ([`edit::as_edit`]); the summary page shows the diff.
/// (The line break after `<textarea>` is the one HTML drops, so a proposal that starts
/// with one keeps it.)
fn edit_box(i: usize, q: &Question, entered: Option<Entered<'_>>) -> String {
    let name = format!("q{i}.edit");
    let proposed = q.detail.as_deref().unwrap_or_default();
    let kept = entered.and_then(|e| field(e.fields, &name).map(str::to_string));
    let changed = kept
        .as_deref()
        .is_some_and(|t| edit::as_edit(proposed, t).is_some());
    let (what, how) = if q.plan_review_approve().is_some() {
        (
            "Edit the plan before approving",
            "Sent with Approve only: the plan is approved as you edit it, and the next page shows the changes before anything is sent.",
        )
    } else {
        (
            "Edit the proposal",
            "The proposal is approved as you edit it (your answer above is optional then); the next page shows the changes before anything is sent.",
        )
    };
    format!(
        "<details class=\"edit\"{}><summary>{what}</summary><p class=\"dim\">{how}</p>\
<textarea name=\"{name}\" rows=\"12\" aria-label=\"{what}\">\n{}</textarea></details>",
        if changed { " open" } else { "" },
        escape(kept.as_deref().unwrap_or(proposed)),
    )
}

/// A unified diff (asker and reviewer text: escaped, control characters made visible),
/// each line marked as added, removed, a hunk's head or context.
fn diff_html(diff: &str) -> String {
    let mut h = String::from("<pre class=\"diff\" aria-label=\"the changes\">");
    for line in diff.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            "head"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else if line.starts_with("@@") {
            "hunk"
        } else {
            "ctx"
        };
        h.push_str(&format!("<span class=\"{class}\">{}</span>\n", text(line)));
    }
    h.push_str("</pre>");
    h
}

fn title_of(row: &RequestRow, req: &Request) -> String {
    req.questions
        .first()
        .map(|q| q.question.clone())
        .unwrap_or_else(|| row.id.clone().unwrap_or_default())
}

fn live_of(row: &RequestRow) -> String {
    format!(
        "request?{}",
        serde_urlencoded::to_string([
            ("context", row.context.as_str()),
            ("id", row.id.as_deref().unwrap_or(""))
        ])
        .unwrap_or_default()
    )
}

/// `GET /r/{id}`: the request and its answer form.
pub async fn view(State(st): State<AppState>, viewer: Viewer, Path(id): Path<String>) -> Response {
    let row = match visible(&st, &viewer, &id).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let Some(req) = row.request() else {
        return viewer.error(Error::NotFound(id));
    };
    request_page(&st, &viewer, &id, &row, &req, None).await
}

/// The request's page with its form: empty (the defaults), or as the reviewer left it
/// with the problem flagged (a `400`, the form's entries kept).
async fn request_page(
    st: &AppState,
    viewer: &Viewer,
    id: &str,
    row: &RequestRow,
    req: &Request,
    entered: Option<Entered<'_>>,
) -> Response {
    let can = answerable(st, viewer, row).await;
    let mut body = format!(
        "<p class=\"crumbs\"><a href=\"/\">Queue</a> / <code>{}</code></p>\
<div id=\"gone\" class=\"flash warn\" hidden>This request was finished elsewhere; nothing here can be sent.</div>",
        text(id)
    );
    body.push_str(&meta_html(row, req));
    body.push_str(&quorum_html(row, req));
    body.push_str(&outcome_html(row, req));
    if let Answerable::No(why) = &can {
        body.push_str(&format!(
            "<p class=\"flash warn\" id=\"readonly\">{}</p>",
            text(why)
        ));
    }
    if let Some(e) = entered {
        // The summary of what is wrong, at the top; each question's own problem is
        // flagged on it below.
        body.push_str(&format!(
            "<p class=\"flash bad\" id=\"not-sent\" role=\"alert\">Not sent: {}. Your entries are kept below.</p>",
            text(&e.problem.error.message)
        ));
    }
    let enabled = matches!(can, Answerable::Yes);
    body.push_str(&format!(
        "<form id=\"answer\" method=\"post\" action=\"/r/{}/confirm\" autocomplete=\"off\">\
<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        urlencode(id),
        escape(&viewer.csrf)
    ));
    for (i, q) in req.questions.iter().enumerate() {
        body.push_str(&question_form(i, q, enabled, entered));
    }
    if enabled {
        body.push_str(
            "<p class=\"actions\"><button type=\"submit\" class=\"primary\">Review the answer…</button> \
<span class=\"dim\">Nothing is sent until you confirm on the next page. Keys: <kbd>j</kbd>/<kbd>k</kbd> question, \
<kbd>1</kbd>–<kbd>9</kbd> pick.</span></p>",
        );
    }
    body.push_str("</form>");
    let status = if entered.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    layout::html(
        status,
        layout::page(
            &title_of(row, req),
            Some(&viewer.nav()),
            Some(&live_of(row)),
            &body,
        ),
    )
}

/// Why a form cannot become an answer: the rule it breaks, and the question it is about
/// (when it is about one).
#[derive(Debug)]
struct FormError {
    question: Option<usize>,
    error: UserQuestionError,
}

/// The answer the form describes.
fn answer_of(req: &Request, fields: &[(String, String)]) -> Result<Answer, FormError> {
    let mut answers = Vec::with_capacity(req.questions.len());
    for (i, q) in req.questions.iter().enumerate() {
        let name = format!("q{i}");
        let picks: Vec<&str> = fields
            .iter()
            .filter(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
            .collect();
        let other = field(fields, &format!("{name}.other"))
            // A textarea sends CRLF line breaks (HTML's form encoding); store LF.
            .map(|s| s.replace("\r\n", "\n").trim_end().to_string())
            .filter(|s| !s.trim().is_empty());
        let skip = field(fields, &format!("{name}.skip")).is_some();
        let edited = field(fields, &format!("{name}.edit"))
            .filter(|_| q.allows_edit())
            .and_then(|t| edit::as_edit(q.detail.as_deref().unwrap_or_default(), t));
        let n = i + 1;
        let bad_answer = |msg: String| FormError {
            question: Some(i),
            error: UserQuestionError::new(Code::BadAnswer, msg),
        };
        let label = |v: &str| -> Result<String, FormError> {
            v.strip_prefix('o')
                .and_then(|k| k.parse::<usize>().ok())
                .and_then(|k| q.options().get(k))
                .map(|o| o.label.clone())
                .ok_or_else(|| bad_answer(format!("question {n}: no such option {v:?}")))
        };
        let item = |selected: Vec<String>, custom: Option<String>| AnswerItem {
            id: q.id.clone(),
            selected,
            custom,
            edited: edited.clone(),
        };
        if skip {
            if edited.is_some() {
                return Err(bad_answer(format!(
                    "question {n}: Skip is ticked, and the proposal is edited; undo the edit to skip"
                )));
            }
            if !picks.is_empty() || other.is_some() {
                return Err(bad_answer(format!(
                    "question {n}: Skip is ticked, and something is picked or written too; choose one"
                )));
            }
            answers.push(item(Vec::new(), None));
            continue;
        }
        let it = if let Some(approve) = q.plan_review_approve() {
            let declines = match picks.as_slice() {
                [v] => label(v).ok().as_deref() != Some(approve),
                _ => true,
            };
            if declines && edited.is_some() {
                return Err(FormError {
                    question: Some(i),
                    error: UserQuestionError::new(
                        Code::EditNotAllowed,
                        format!("question {n}: an edited plan is sent with {approve:?} only; pick it, or undo the edit to decline"),
                    ),
                });
            }
            match picks.as_slice() {
                [] | ["decline"] => match other {
                    Some(_) => item(Vec::new(), other),
                    None => {
                        return Err(bad_answer(format!(
                        "question {n}: pick Approve, or write feedback to decline (or tick Skip)"
                    )))
                    }
                },
                [v] => {
                    let l = label(v)?;
                    // A single choice carries no text (the answer rules: text replaces
                    // the choice), so feedback goes with "Decline with feedback" alone;
                    // refuse here rather than drop the text or send what Send refuses.
                    if other.is_some() {
                        return Err(bad_answer(format!(
                            "question {n}: feedback is sent with \"Decline with feedback\"; pick that, or clear the feedback to send {l:?}"
                        )));
                    }
                    item(vec![l], None)
                }
                _ => return Err(bad_answer(format!("question {n}: pick one"))),
            }
        } else if q.options().is_empty() {
            match other {
                Some(_) => item(Vec::new(), other),
                None if edited.is_some() => item(Vec::new(), None),
                None => {
                    return Err(bad_answer(format!(
                        "question {n}: write an answer (or tick Skip)"
                    )))
                }
            }
        } else if q.is_multi() {
            let selected = picks
                .iter()
                .map(|v| label(v))
                .collect::<Result<Vec<_>, _>>()?;
            if selected.is_empty() && other.is_none() {
                return Err(bad_answer(format!(
                    "question {n}: tick something, write Other (or tick Skip)"
                )));
            }
            item(selected, other)
        } else {
            match picks.as_slice() {
                ["other"] | [] if other.is_some() => item(Vec::new(), other),
                ["other"] => {
                    return Err(bad_answer(format!(
                        "question {n}: Other is picked but empty"
                    )))
                }
                [] => {
                    return Err(bad_answer(format!(
                        "question {n}: pick one, write Other (or tick Skip)"
                    )))
                }
                [v] => item(vec![label(v)?], None),
                _ => return Err(bad_answer(format!("question {n}: pick one"))),
            }
        };
        answers.push(it);
    }
    Ok(Answer { answers })
}

fn summary_item(q: &Question, a: &AnswerItem) -> String {
    let summary = summary_choice(q, a);
    match &a.edited {
        Some(approved) => {
            let e = edit::edited(q, approved);
            format!(
                "{summary}</p><p class=\"edited\"><strong>as edited</strong>: the changes to the proposal</p>{}<p>",
                diff_html(&e.diff)
            )
        }
        None => summary,
    }
}

fn summary_choice(q: &Question, a: &AnswerItem) -> String {
    if a.is_skip() && a.edited.is_none() {
        return "<span class=\"dim\">skipped</span>".into();
    }
    if a.edited.is_some() && a.selected.is_empty() && a.custom.is_none() {
        return "<strong class=\"approve\">APPROVE</strong> (the proposal, edited)".into();
    }
    let mut parts = Vec::new();
    if let Some(approve) = q.plan_review_approve() {
        if a.selected.len() == 1 && a.selected[0] == approve {
            parts.push(format!(
                "<strong class=\"approve\">APPROVE</strong> ({})",
                text(approve)
            ));
        } else {
            parts.push("<strong class=\"decline\">DECLINE</strong>".to_string());
            parts.extend(
                a.selected
                    .iter()
                    .map(|s| format!("picked <q>{}</q>", text(s))),
            );
        }
        if let Some(c) = &a.custom {
            parts.push(format!("feedback: <q class=\"pre\">{}</q>", block(c)));
        }
        return parts.join(", ");
    }
    if !a.selected.is_empty() {
        parts.push(
            a.selected
                .iter()
                .map(|s| format!("<q>{}</q>", text(s)))
                .collect::<Vec<_>>()
                .join(" + "),
        );
    }
    if let Some(c) = &a.custom {
        parts.push(format!("Other: <q class=\"pre\">{}</q>", block(c)));
    }
    parts.join(" and ")
}

/// The fields of a form that answers: parsed, its CSRF token checked, and the viewer's
/// role allowed to answer (what the summary and the send both require first).
// The error is the page to show (built once, returned at once).
#[allow(clippy::result_large_err)]
fn answering_form(viewer: &Viewer, bytes: &[u8]) -> Result<Vec<(String, String)>, Response> {
    let fields = form_fields(bytes).map_err(|e| viewer.error(e))?;
    viewer.check_csrf(field(&fields, "csrf"))?;
    viewer
        .caller
        .require(Action::Answer)
        .map_err(|e| viewer.error(e))?;
    Ok(fields)
}

/// `POST /r/{id}/confirm`: the summary of what will be sent, to confirm.
pub async fn confirm(
    State(st): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Body(bytes): Body,
) -> Response {
    let fields = match answering_form(&viewer, &bytes) {
        Ok(f) => f,
        Err(r) => return r,
    };
    let row = match visible(&st, &viewer, &id).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    let Some(req) = row.request() else {
        return viewer.error(Error::NotFound(id));
    };
    // The summary shows only what Send would accept: the same answer rules, here.
    let answer = match answer_of(&req, &fields).and_then(|a| {
        crate::protocol::answer::check_answer(&req.questions, &a)
            .map(|_| a)
            .map_err(|error| FormError {
                question: None,
                error,
            })
    }) {
        Ok(a) => a,
        Err(problem) => {
            // Flagged on the form itself, with everything entered kept.
            let entered = Entered {
                fields: &fields,
                problem: &problem,
            };
            return request_page(&st, &viewer, &id, &row, &req, Some(entered)).await;
        }
    };
    let mut body = format!(
        "<p class=\"crumbs\"><a href=\"/\">Queue</a> / <a href=\"/r/{0}\">{1}</a> / confirm</p>\
<h1>Send this answer?</h1><ol class=\"summary\">",
        urlencode(&id),
        text(&id)
    );
    for (q, a) in req.questions.iter().zip(&answer.answers) {
        body.push_str(&format!(
            "<li><p class=\"question\">{}</p><p class=\"sending\">{}</p></li>",
            block(&q.question),
            summary_item(q, a)
        ));
    }
    body.push_str(&format!(
        "</ol><form id=\"send\" method=\"post\" action=\"/r/{}/answer\">\
<input type=\"hidden\" name=\"csrf\" value=\"{}\"><input type=\"hidden\" name=\"answer\" value=\"{}\">\
<button type=\"submit\" id=\"send-button\" class=\"primary\">Send the answer</button> \
<a href=\"/r/{}\">Change it</a></form>",
        urlencode(&id),
        escape(&viewer.csrf),
        escape(&answer.to_json()),
        urlencode(&id)
    ));
    layout::html(
        StatusCode::OK,
        layout::page("Confirm", Some(&viewer.nav()), Some(&live_of(&row)), &body),
    )
}

/// `POST /r/{id}/answer`: send the confirmed answer through the host's lease.
pub async fn send(
    State(st): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
    Body(bytes): Body,
) -> Response {
    let fields = match answering_form(&viewer, &bytes) {
        Ok(f) => f,
        Err(r) => return r,
    };
    let doc = match crate::protocol::answer::parse_answer(
        field(&fields, "answer").unwrap_or("").as_bytes(),
    ) {
        Ok(d) => d,
        Err(e) => return viewer.error(e),
    };
    let row = match visible(&st, &viewer, &id).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    for attempt in 0..2 {
        let acting = match st.providers.answering(&row, viewer.caller.actor()).await {
            Ok(a) => a,
            Err(e) => return viewer.error(e),
        };
        let (root, id2, doc2) = (st.root.clone(), id.clone(), doc.clone());
        // Through a mail's link: the link is spent in the answer's transaction.
        let link = viewer.caller.mail.as_ref().map(|m| LinkUse {
            link_id: m.link_id.clone(),
            request_id: m.request_id.clone(),
            context: m.context.clone(),
            recipient: m.recipient.clone(),
            issued_ms: m.issued_ms,
        });
        let r = st
            .db
            .write(move |store| match &link {
                Some(l) => app::mail::answer_by_link(store, Some(&root), l, &acting, &doc2),
                None => app::provide::answer(store, Some(&root), &id2, &acting, &doc2),
            })
            .await;
        match r {
            Err(Error::LeaseExpired(_)) if attempt == 0 => st.providers.forget(&row.context).await,
            Err(e) => return viewer.error(e),
            Ok(app::provide::Answering::Voted(_)) => {
                // A vote on a request with a quorum that left it open: back to the
                // request, which lists the votes so far.
                tracing::info!(id = %crate::text::for_log(&id), token = %viewer.caller.token.name, "voted on the page");
                return layout::see_other(&format!("/r/{}", urlencode(&id)));
            }
            Ok(app::provide::Answering::Finished(_)) => {
                tracing::info!(id = %crate::text::for_log(&id), token = %viewer.caller.token.name, "answered on the page");
                if viewer.caller.mail.is_some() {
                    // A link's session reaches this request only: back to it, answered.
                    return layout::see_other(&format!("/r/{}", urlencode(&id)));
                }
                return layout::see_other(&format!("/?done={}", urlencode(&id)));
            }
        }
    }
    viewer.error(Error::LeaseExpired("the host's lease ended twice".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json: serde_json::Value) -> Request {
        serde_json::from_value(json).unwrap()
    }

    /// The votes section escapes what the asker wrote (labels, custom text) and what a
    /// reviewer's name is, and lists every vote and the approvers.
    #[test]
    fn the_votes_are_shown_escaped() {
        let r = req(serde_json::json!({"questions": [
            {"id": "q", "question": "pick", "options": [{"label": "<script>x</script>"}]}
        ], "quorum": {"approvals": 2}}));
        let q = crate::core::quorum::Policy::default()
            .required("default", r.quorum.as_deref())
            .unwrap()
            .unwrap();
        let answer = serde_json::json!({"answers": [{"id": "q", "selected": ["<script>x</script>"],
                                                     "custom": "<img src=x onerror=1>"}]});
        let votes = serde_json::json!([
            {"voter": "web:<b>bob</b>", "answer": answer.to_string(), "decision": null, "atMs": 0},
            {"voter": "provider:carol", "answer": answer.to_string(), "decision": null, "atMs": 1}
        ]);
        let row = RequestRow {
            seq: 1,
            id: Some("x".into()),
            context: "default".into(),
            status: Status::Answered,
            agent_id: None,
            agent_instance: None,
            agent_lineage: None,
            body: r.to_json(),
            source: "cli".into(),
            deadline_ms: None,
            created_ms: 0,
            claimed_lease: None,
            claimed_by: None,
            claimed_ms: None,
            finished_ms: Some(2),
            answer: Some(answer.to_string()),
            decision: None,
            provider: None,
            error_code: None,
            error_message: None,
            ladder: None,
            ladder_done: 0,
            decided_by: None,
            edits: None,
            quorum: Some(q.to_json()),
            approvers: Some(r#"["web:<b>bob</b>","provider:carol"]"#.into()),
            votes: Some(votes.to_string()),
        };
        let h = quorum_html(&row, &r);
        assert!(
            !h.contains("<script>") && !h.contains("<img") && !h.contains("<b>"),
            "{h}"
        );
        assert!(h.contains("&lt;script&gt;"), "{h}");
        assert_eq!(h.matches("<li class=\"vote\">").count(), 2, "{h}");
        assert!(
            h.contains("Approved by web:&lt;b&gt;bob&lt;/b&gt;, provider:carol"),
            "{h}"
        );
        assert!(h.contains("Needs <strong>2</strong>"), "{h}");
        let mut plain = row.clone();
        plain.quorum = None;
        assert_eq!(quorum_html(&plain, &r), "");
    }

    fn f(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn forms_become_answers() {
        let r = req(serde_json::json!({"questions": [
            {"id": "a", "question": "one?", "options": [{"label": "x"}, {"label": "y"}]},
            {"id": "b", "question": "many?", "multiSelect": true, "options": [{"label": "x"}, {"label": "y"}]},
            {"id": "p", "question": "plan?", "detail": "# p", "options": [{"label": "Go"}],
             "intent": {"kind": "plan-review", "approve": "Go"}},
            {"id": "t", "question": "free?"}
        ]}));
        let a = answer_of(
            &r,
            &f(&[
                ("q0", "o1"),
                ("q1", "o0"),
                ("q1", "o1"),
                ("q1.other", "z"),
                ("q2", "o0"),
                ("q3.skip", "1"),
            ]),
        )
        .unwrap();
        assert_eq!(a.answers[0].selected, vec!["y"]);
        assert_eq!(a.answers[1].selected, vec!["x", "y"]);
        assert_eq!(a.answers[1].custom.as_deref(), Some("z"));
        assert_eq!(a.answers[2].selected, vec!["Go"]);
        assert!(a.answers[3].is_skip());
        // Feedback without a pick declines; nothing at all is refused.
        let a = answer_of(
            &r,
            &f(&[
                ("q0.other", "mine"),
                ("q1", "o0"),
                ("q2.other", "no"),
                ("q3.other", "t"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (a.answers[0].selected.len(), a.answers[0].custom.as_deref()),
            (0, Some("mine"))
        );
        assert_eq!(
            (a.answers[2].selected.len(), a.answers[2].custom.as_deref()),
            (0, Some("no"))
        );
        assert!(answer_of(&r, &f(&[("q1", "o0"), ("q2", "o0"), ("q3.skip", "1")])).is_err());
        assert!(answer_of(
            &r,
            &f(&[("q0", "o9"), ("q1", "o0"), ("q2", "o0"), ("q3.skip", "1")])
        )
        .is_err());
    }

    #[test]
    fn a_plan_choice_with_feedback_is_refused_before_the_summary_not_at_send() {
        let r = req(serde_json::json!({"questions": [
            {"id": "p", "question": "plan?", "detail": "# p",
             "options": [{"label": "Go"}, {"label": "Revise"}],
             "intent": {"kind": "plan-review", "approve": "Go"}}
        ]}));
        // Every answer the page builds satisfies the rules Send applies.
        for pick in ["o0", "o1"] {
            let e = answer_of(&r, &f(&[("q0", pick), ("q0.other", "rename X first")])).unwrap_err();
            assert_eq!(e.question, Some(0));
            assert_eq!(e.error.code, Code::BadAnswer);
            assert!(
                e.error.message.contains("Decline with feedback"),
                "{}",
                e.error.message
            );
            let a = answer_of(&r, &f(&[("q0", pick)])).unwrap();
            assert!(crate::protocol::answer::check_answer(&r.questions, &a).is_ok());
        }
        let a = answer_of(&r, &f(&[("q0", "decline"), ("q0.other", "rename X first")])).unwrap();
        assert!(crate::protocol::answer::check_answer(&r.questions, &a).is_ok());
    }
}
