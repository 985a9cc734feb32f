//! The agent card at `/.well-known/agent-card.json` (A2A's well-known path): what this
//! agent does (one skill, "ask a human"), where its JSON-RPC interface is, what it can
//! deliver (streaming; push notifications when the operator allows a webhook origin), and
//! how a client authenticates (an HTTP bearer scheme: a dshq asker token).
//!
//! The card is public, as A2A's discovery expects; it holds nothing secret. The interface
//! URL is the card's own origin (the request's `Host`), so the card is right behind any
//! name or port the client reached it by.

use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use serde_json::{json, Value};

use super::Face;
use crate::host::AppState;

/// The security scheme's name in the card.
pub const SCHEME: &str = "dshqToken";

/// The skill's id.
pub const SKILL: &str = "ask-a-human";

/// The card, for a client that reached this host at `base` (`http://HOST:PORT`).
pub fn card(base: &str, push: bool) -> Value {
    json!({
        "name": "dshq",
        "description": "A durable human-question queue: send a question (or a plan to \
                        review) and a person answers it, maybe hours later. The task \
                        stays working until the person decides; the decision is the \
                        task's artifact.",
        "supportedInterfaces": [{
            "url": format!("{base}{}", super::PATH),
            "protocolBinding": "JSONRPC",
            "protocolVersion": super::VERSION,
        }],
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {
            "streaming": true,
            "pushNotifications": push,
            "extendedAgentCard": false,
        },
        "securitySchemes": {
            SCHEME: {"httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "description": "a dshq token with the asker role (dshq token create --role asker)",
            }},
        },
        "securityRequirements": [{"schemes": {SCHEME: {"list": []}}}],
        "defaultInputModes": ["application/json", "text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": [{
            "id": SKILL,
            "name": "Ask a human",
            "description": "Ask a person one or more questions (options, multi-select, free \
                            text, a plan to approve or decline) and get their decision: \
                            send the request of dshq's protocol as a data part, or plain \
                            text for one free-text question.",
            "tags": ["human-in-the-loop", "approval", "questions"],
            "examples": ["Which database should the service use?"],
            "inputModes": ["application/json", "text/plain"],
            "outputModes": ["application/json"],
        }],
    })
}

/// `GET /.well-known/agent-card.json`.
pub async fn serve(
    State(_st): State<AppState>,
    Extension(face): Extension<std::sync::Arc<Face>>,
    headers: HeaderMap,
) -> Response {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| h.parse::<axum::http::uri::Authority>().is_ok())
        .unwrap_or("localhost");
    let base = format!("http://{host}");
    (
        [(header::CACHE_CONTROL, "max-age=300")],
        axum::Json(card(&base, face.pushes.enabled())),
    )
        .into_response()
}
