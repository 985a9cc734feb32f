//! The JSON API under `/api/v1`: routes, and the OpenAPI document that describes them.
//! Every route takes `Authorization: Bearer TOKEN` (see [`crate::web::auth`]) except the
//! document itself.

pub mod audit;
pub mod away;
pub mod openapi;
pub mod query;
pub mod requests;

use axum::routing::{get, post};
use axum::Router;

use crate::host::AppState;

/// The API's routes (relative to `/api/v1`).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/openapi.json", get(openapi::serve))
        .route("/requests", post(requests::ask).get(requests::list))
        .route("/requests/{id}", get(requests::show))
        .route("/requests/{id}/outcome", get(requests::outcome))
        .route("/requests/{id}/receipt", get(requests::receipt))
        .route("/requests/{id}/claim", post(requests::claim))
        .route("/requests/{id}/answer", post(requests::answer))
        .route("/requests/{id}/cancel", post(requests::cancel))
        .route("/requests/{id}/abort", post(requests::abort))
        .route("/requests/{id}/events", get(audit::events))
        .route("/history", get(audit::history))
        .route("/stats", get(audit::stats))
        .route("/stream", get(super::stream::stream))
        .route("/away", get(away::list).put(away::set).delete(away::cancel))
}
