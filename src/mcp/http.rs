//! The MCP server over Streamable HTTP at `/mcp` on the async host (`dshq daemon
//! --listen`): the SDK's transport, behind the same bearer tokens as the JSON API.
//!
//! A request without a valid token is refused with 401 before the transport sees it; the
//! authenticated [`Caller`] rides in the request's extensions to the tool calls, where
//! its role decides (an asker token asks, gets and aborts its own requests; a reviewer
//! token may also run `review_questions`). The transport keeps sessions (the
//! handshake-era protocol), which the reviewer's side needs for `elicitation/create`.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::backend::Backend;
use super::server::DshqServer;
use super::Config;
use crate::web::auth::Caller;
use crate::web::AppState;

/// The path of the endpoint.
pub const PATH: &str = "/mcp";

/// The `/mcp` routes, which the host serves beside [`crate::web::app`] (mounted by the
/// host, not by the web face: this face rides on the web's tokens, so the web must not
/// depend on it).
pub fn routes(state: &AppState) -> Router {
    let st = state.clone();
    let service = StreamableHttpService::new(
        move || {
            Ok(DshqServer::new(
                Backend::Host(st.clone()),
                Config::default(),
            ))
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    Router::new()
        .route_service(PATH, service)
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            authenticate,
        ))
}

/// 401 without a valid bearer token; else the caller goes along in the extensions.
async fn authenticate(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    match Caller::from_headers(&st, req.headers()).await {
        Ok(caller) => {
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}
