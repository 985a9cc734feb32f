//! A mail's link on the page: `GET /mail/{token}`.
//!
//! Following a link never acts by itself (mail scanners open links): it checks the token
//! ([`crate::core::mail_link`]: signed by the root's `mail.key`, not expired, not used
//! already, and the request still in the context the link was sent for: `LINK_INVALID`,
//! `LINK_EXPIRED`, `LINK_USED`, `WRONG_CONTEXT`, each a page that changes nothing), then opens a session of the link's kind and shows a page with one button
//! that opens the request. Answering is the page's own flow from there: the form, the
//! summary to confirm, the send (POSTs with the session's CSRF token).
//!
//! The link's session is a page session ([`super::session`]) kept under its own cookie
//! (`dshq_mail`), so it never replaces a reviewer's login: a browser that has one opens
//! the request as that reviewer. It is scoped: its viewer sees the link's one request
//! ([`crate::host::auth::Caller::sees_id`]), reaches only that request's routes and the
//! page stream ([`super::session`]'s `link_viewer`), ends at the link's expiry, and acts as `mail:ADDRESS`; the
//! answer records the link as used in its own transaction ([`crate::app::mail`]).
//!
//! Why a page with a button rather than a redirect: the session cookies are
//! `SameSite=Strict`, so a browser does not send them on a navigation that started in a
//! mail client, redirects included; the click on the page is same-site and carries them.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::Extension;

use super::layout;
use super::session::{set_cookie, MAIL_COOKIE};
use super::Shared;
use crate::core::mail_link::{LinkKey, Refused};
use crate::error::Error;
use crate::host::AppState;
use crate::html::{html, urlencode, Block, Line};

/// The root's `mail.key`, read at the first link (a host that sends no mail has none, and
/// refuses every link).
#[derive(Default)]
pub struct KeyCache(Mutex<Option<LinkKey>>);

impl KeyCache {
    fn get(&self, root: &crate::root::Root) -> Result<Option<LinkKey>, Error> {
        let mut k = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if k.is_none() {
            *k = crate::app::mail_key::load(root.dir())?;
        }
        Ok(k.clone())
    }
}

fn refused(e: impl Into<Error>) -> Response {
    let e: Error = e.into();
    tracing::info!(code = %e.code(), "mail link refused");
    layout::error_page(&e.to_user_error(), None)
}

/// `GET /mail/{token}`: check the link, open its session, offer to open the request.
pub async fn open(
    State(st): State<AppState>,
    Extension(shared): Extension<Arc<Shared>>,
    headers: HeaderMap,
    Path(token): Path<String>,
) -> Response {
    let key = match shared.mail_key.get(&st.root) {
        Ok(Some(k)) => k,
        Ok(None) => return refused(Refused::Invalid),
        Err(e) => return refused(e),
    };
    let claims = match key.verify(&token, crate::clock::now_ms()) {
        Ok(c) => c,
        Err(e) => return refused(e),
    };
    let link_id = claims.link_id.clone();
    match st.db.read(move |store| store.link_used(&link_id)).await {
        Ok(false) => {}
        Ok(true) => {
            return refused(Refused::Used {
                request_id: claims.request_id,
            })
        }
        Err(e) => return refused(e),
    }
    let rid = claims.request_id.clone();
    let row = match st.db.read(move |store| store.get(&rid)).await {
        // A request of that id asked after the link was made is another's.
        Ok(Some(r)) if crate::core::mail_link::opens(claims.issued_ms, r.created_ms) => r,
        Ok(_) => return refused(Error::NotFound(claims.request_id)),
        Err(e) => return refused(e),
    };
    if let Err(e) = crate::core::mail_link::sent_for(&claims.context, &row.context) {
        return refused(e);
    }
    let first = row
        .request()
        .and_then(|r| r.questions.first().map(|q| q.question.clone()))
        .unwrap_or_default();
    let (id, recipient, expires_ms) = (
        claims.request_id.clone(),
        claims.recipient.clone(),
        claims.expires_ms,
    );
    let max_age = ((expires_ms - crate::clock::now_ms()) / 1000).max(1) as u64;
    let (session, _) = match shared
        .sessions
        .create_for_link(claims, super::session::Lifespan::of(&st.limits))
    {
        Ok(x) => x,
        Err(e) => return refused(e),
    };
    tracing::info!(request = %crate::text::for_log(&id), recipient = %crate::text::for_log(&recipient), "mail link opened");
    let body = html! {
        section.mail-link {
            h1 { "A request for you" }
            dl.meta {
                dt { "Request" } dd { code { (Line(&id)) } }
                dt { "Context" } dd { (Line(&row.context)) }
                dt { "From" } dd { (Line(&row.source)) }
                dt { "Status" } dd { span class={ "status " (row.status.as_str()) } { (row.status.as_str()) } }
            }
            p.question { (Block(&first)) }
            p {
                "This link was sent to " strong { (Line(&recipient)) } ". It opens this request only, until "
                (Line(&crate::clock::rfc3339(expires_ms)))
                "; nothing is sent until you confirm an answer on the page. If you are logged in as a reviewer, you open it as yourself."
            }
            p { a #open-request .button.primary href={ "/r/" (urlencode(&id)) } { "Open the request" } }
        }
    };
    let mut r = layout::html(
        StatusCode::OK,
        layout::page("A request for you", None, None, body),
    );
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&headers, MAIL_COOKIE, &session, Some(max_age)),
    );
    r
}
