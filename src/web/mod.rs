//! The web face: axum routes over the host's services ([`crate::host`]). The JSON API
//! lives in [`api`] (under `/api/v1`), the event stream in [`stream`]; the reviewer's page
//! ([`page`]) mounts its routes beside them, at `/`.
//!
//! A face like the CLI: each handler parses its input, checks the caller's role
//! ([`crate::host::auth::Caller::require`]), runs one use-case of [`crate::app`] on the
//! database thread ([`crate::host::db::Db`]) and renders the typed result as JSON or HTML.
//! Nothing here touches the store directly or blocks a runtime worker.

pub mod api;
pub mod page;
pub mod stream;

use axum::Router;

use crate::host::AppState;

/// The web face's routes: the API under `/api/v1` and the page at `/`, with the state
/// applied (the composition root merges the other faces' routes beside them).
pub fn app(state: AppState) -> Router {
    Router::new()
        .nest("/api/v1", api::routes())
        .merge(page::routes())
        .with_state(state)
}
