//! The away page (`GET /away`, `POST /away`): a reviewer sets "away until T, delegate D"
//! for themselves, or cancels it, with the page's CSRF token like every other form; the
//! rule is the use-cases' ([`crate::app::delegation`]). The notices that hold are listed.
//! Reviewers only set their own (an auditor sees the list).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;

use super::layout;
use super::session::{field, form_fields, Viewer};
use crate::app;
use crate::clock::{now_ms, rfc3339};
use crate::core::delegation::{parse_until, Away};
use crate::error::Error;
use crate::host::body::Body;
use crate::host::AppState;
use crate::html::{html, Line, Markup};

fn body(viewer: &Viewer, holding: &[Away], person: Option<&str>) -> Markup {
    let mine = person.and_then(|p| holding.iter().find(|a| a.person == p));
    html! {
        h1 { "Away" }
        @if viewer.answers() {
            @if let Some(a) = mine {
                p #away-now { "You are away until " (rfc3339(a.until_ms)) "; "
                    (Line(&a.delegate)) " answers for you." }
                form #away-cancel method="post" action="/away" {
                    input type="hidden" name="csrf" value=(viewer.csrf);
                    input type="hidden" name="action" value="cancel";
                    button type="submit" { "I am back" }
                }
            }
            form #away-set method="post" action="/away" {
                input type="hidden" name="csrf" value=(viewer.csrf);
                input type="hidden" name="action" value="set";
                label { "Away until " input name="until" placeholder="8h or 2026-12-24T09:00:00Z" required; }
                " "
                label { "Delegate " input name="delegate" placeholder="a reviewer" required; }
                " "
                button type="submit" { "Hand over" }
            }
        }
        h2 { "Who is away" }
        @if holding.is_empty() {
            p { "Nobody." }
        } @else {
            table #away-list {
                tr { th { "Person" } th { "Delegate" } th { "Until" } }
                @for a in holding {
                    tr { td { (Line(&a.person)) } td { (Line(&a.delegate)) } td { (rfc3339(a.until_ms)) } }
                }
            }
        }
    }
}

/// `GET /away`.
pub async fn page(State(st): State<AppState>, viewer: Viewer) -> Response {
    let actor = viewer.caller.actor();
    let read = st
        .db
        .read(move |store| {
            let person = store.people().of_actor(&actor).map(|(_, p)| p);
            Ok((app::delegation::holding(store)?, person))
        })
        .await;
    match read {
        Ok((holding, person)) => layout::html(
            StatusCode::OK,
            layout::page(
                "Away",
                Some(&viewer.nav()),
                None,
                body(&viewer, &holding, person.as_deref()),
            ),
        ),
        Err(e) => viewer.error(e),
    }
}

/// `POST /away`: set (`action=set`, `until`, `delegate`) or cancel (`action=cancel`) the
/// viewer's own notice; back to the page.
pub async fn post(State(st): State<AppState>, viewer: Viewer, Body(bytes): Body) -> Response {
    let fields = match form_fields(&bytes) {
        Ok(f) => f,
        Err(e) => return viewer.error(Error::Question(e)),
    };
    if let Err(r) = viewer.check_csrf(field(&fields, "csrf")) {
        return r;
    }
    if !viewer.answers() {
        return viewer.error(Error::Forbidden);
    }
    let actor = viewer.caller.actor();
    let set = match field(&fields, "action") {
        Some("cancel") => None,
        _ => {
            let until = match parse_until(field(&fields, "until").unwrap_or(""), now_ms()) {
                Ok(t) => t,
                Err(why) => return viewer.error(Error::Usage(format!("away until {why}"))),
            };
            Some((
                until,
                field(&fields, "delegate").unwrap_or("").trim().to_string(),
            ))
        }
    };
    let done = st
        .db
        .write(move |store| {
            let person = store
                .people()
                .of_actor(&actor)
                .map(|(_, p)| p)
                .ok_or(Error::Forbidden)?;
            match set {
                Some((until, delegate)) => {
                    app::delegation::set(store, &person, &delegate, until, &actor)
                }
                None => app::delegation::cancel(store, &person, &actor),
            }
        })
        .await;
    match done {
        Ok(_) => layout::see_other("/away"),
        Err(e) => viewer.error(e),
    }
}
