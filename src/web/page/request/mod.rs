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
//! One file per concern: the handlers here, the HTML in [`render`] (maud templates), the
//! form's fields and the answer they describe in [`form`].
//!
//! Opening a request as a reviewer makes the host hold the context's provider lease
//! ([`crate::host::provider::Providers::acting`]). When a terminal reviewer holds the
//! context (DUPLICATE_PROVIDER) the page says who and shows no form.

mod form;
mod render;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::layout;
use super::session::{field, Viewer};
use crate::app;
use crate::core::access::Action;
use crate::error::Error;
use crate::host::body::Body;
use crate::host::provider::Act;
use crate::host::AppState;
use crate::html::{html, urlencode, Line};
use crate::protocol::Request;
use crate::store::driver::links::LinkUse;
use crate::store::{RequestRow, Status};
use form::{answer_of, answering_form, Entered, FormError};

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
        .read(move |store| store.get(&id2))
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
    let enabled = matches!(can, Answerable::Yes);
    let body = html! {
        (render::crumbs(id, None))
        div #gone .flash.warn hidden { "This request was finished elsewhere; nothing here can be sent." }
        (render::meta(row, req))
        (render::quorum(row, req))
        (render::outcome(row, req))
        @if let Answerable::No(why) = &can { p.flash.warn #readonly { (Line(why)) } }
        @if let Some(e) = entered {
            // The summary of what is wrong, at the top; each question's own problem is
            // flagged on it below.
            p.flash.bad #not-sent role="alert" { "Not sent: " (Line(&e.problem.error.message)) ". Your entries are kept below." }
        }
        form #answer method="post" action={ "/r/" (urlencode(id)) "/confirm" } autocomplete="off" {
            input type="hidden" name="csrf" value=(viewer.csrf);
            @for (i, q) in req.questions.iter().enumerate() { (render::question_form(i, q, enabled, entered)) }
            @if enabled {
                p.actions {
                    button type="submit" .primary { "Review the answer…" } " "
                    span.dim {
                        "Nothing is sent until you confirm on the next page. Keys: " kbd { "j" } "/" kbd { "k" }
                        " question, " kbd { "1" } "–" kbd { "9" } " pick."
                    }
                }
            }
        }
    };
    let status = if entered.is_some() {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    layout::html(
        status,
        layout::page(
            &render::title_of(row, req),
            Some(&viewer.nav()),
            Some(&live_of(row)),
            body,
        ),
    )
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
    let body = html! {
        (render::crumbs(&id, Some("confirm")))
        h1 { "Send this answer?" }
        (render::summary(&req, &answer.answers))
        form #send method="post" action={ "/r/" (urlencode(&id)) "/answer" } {
            input type="hidden" name="csrf" value=(viewer.csrf);
            input type="hidden" name="answer" value=(answer.to_json());
            button type="submit" #send-button .primary { "Send the answer" } " "
            a href={ "/r/" (urlencode(&id)) } { "Change it" }
        }
    };
    layout::html(
        StatusCode::OK,
        layout::page("Confirm", Some(&viewer.nav()), Some(&live_of(&row)), body),
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
    // Through a mail's link: the link is spent in the answer's transaction.
    let link = viewer.caller.mail.as_ref().map(|m| LinkUse {
        link_id: m.link_id.clone(),
        request_id: m.request_id.clone(),
        context: m.context.clone(),
        recipient: m.recipient.clone(),
        issued_ms: m.issued_ms,
        digest: None,
    });
    let (root, id2) = (st.root.clone(), id.clone());
    let answered = st
        .providers
        .act(
            &row,
            viewer.caller.actor(),
            Act::Answer,
            move |store, acting| match &link {
                Some(l) => app::mail::answer_by_link(store, Some(&root), l, acting, &doc),
                None => app::provide::answer(store, Some(&root), &id2, acting, &doc),
            },
        )
        .await;
    match answered {
        Err(e) => viewer.error(e),
        Ok(app::provide::Answering::Voted(_)) => {
            // A vote on a request with a quorum that left it open: back to the request,
            // which lists the votes so far.
            tracing::info!(id = %crate::text::for_log(&id), token = %viewer.caller.token.name, "voted on the page");
            layout::see_other(&format!("/r/{}", urlencode(&id)))
        }
        Ok(app::provide::Answering::Finished(_)) => {
            tracing::info!(id = %crate::text::for_log(&id), token = %viewer.caller.token.name, "answered on the page");
            if viewer.caller.mail.is_some() {
                // A link's session reaches this request only: back to it, answered.
                return layout::see_other(&format!("/r/{}", urlencode(&id)));
            }
            layout::see_other(&format!("/?done={}", urlencode(&id)))
        }
    }
}
