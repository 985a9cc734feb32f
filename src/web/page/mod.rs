//! The reviewer's page at `/`: server-rendered HTML over the same use-cases as the API.
//!
//! One file per concern: [`session`] (login, the session cookie, CSRF), [`layout`] (the
//! shell, the one escaping rule, the CSP header, the embedded script and style sheet),
//! [`queue`] (the open requests, filterable, and the fragment the script swaps in live),
//! [`request`] (one request: the answer form, the summary to confirm, the send),
//! [`markdown`] (a plan rendered so nothing in it can run or hide), [`history`] (the
//! record with the CLI's filters) with [`charts`] (its two SVG pictures), [`live`] (the page's event stream,
//! which also tells the host a reviewer is still there), [`link`] (a mail's link and
//! the one-request session it opens), [`throttle`] (the login form's wrong tokens, per
//! peer), [`sign_in`] (signing in through the identity provider).
//!
//! The page works without its script: every answer is a form, confirmed on a
//! server-rendered summary page before anything is sent. The script adds keyboard
//! shortcuts and live updates only.
//!
//! The page is the provider: a reviewer who opens a request makes the host hold the
//! context's provider lease ([`crate::host::provider::Providers`]); every answer is
//! given through it as `web:NAME`. When a terminal reviewer holds the context the page
//! says who and is read-only there.

pub mod app;
pub mod away;
pub mod charts;
pub mod history;
pub mod layout;
pub mod link;
pub mod live;
pub mod markdown;
pub mod queue;
pub mod request;
pub mod session;
pub mod sign_in;
pub mod throttle;

use std::sync::Arc;

use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::host::AppState;

/// State the page's routes share (besides the host's [`AppState`]).
#[derive(Default)]
pub struct Shared {
    /// The logged-in sessions.
    pub sessions: session::Sessions,
    /// Who has a page open on which context.
    pub viewers: live::Viewers,
    /// The root's mail-link key, once read.
    pub mail_key: link::KeyCache,
    /// Wrong tokens at the login form, per peer.
    pub logins: throttle::Throttle,
    /// The sign-ins through the identity provider under way.
    pub flows: sign_in::Flows,
}

async fn secure(mut r: Response) -> Response {
    layout::secure_headers(&mut r);
    r
}

/// The page's routes (at the root, beside `/api/v1`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(queue::page))
        .route("/queue", get(queue::fragment))
        .route("/login", get(session::login_get).post(session::login_post))
        .route("/login/oidc", get(sign_in::start))
        .route("/login/oidc/callback", get(sign_in::callback))
        .route("/logout", post(session::logout))
        .route("/r/{id}", get(request::view))
        .route("/r/{id}/confirm", post(request::confirm))
        .route("/r/{id}/answer", post(request::send))
        .route("/mail/{token}", get(link::open))
        .route("/history", get(history::page))
        .route("/away", get(away::page).post(away::post))
        .route("/live", get(live::stream))
        .route("/live/active", post(live::active))
        .route("/assets/{name}", get(layout::asset))
        .route("/manifest.webmanifest", get(app::manifest))
        .route("/sw.js", get(app::service_worker))
        .route(
            "/push/subscriptions",
            post(app::subscribe).delete(app::unsubscribe),
        )
        .layer(axum::middleware::map_response(secure))
        .layer(Extension(Arc::new(Shared::default())))
}
