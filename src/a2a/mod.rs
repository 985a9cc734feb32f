//! The A2A face: dshq as an A2A agent (A2A 1.0, its JSON-RPC binding, on `dshq daemon
//! --listen`) whose one skill is "ask a human".
//!
//! Why a face: an A2A client (another agent, an orchestrator) sends a message carrying a
//! dsh request and gets a task; the task *is* the durable request every other face sees
//! (its id is the request id; its state is derived from the request's, never stored
//! twice), so it outlives the client's connection and the daemon's life, and the decision
//! is the same document the outbox file holds. The client reads it by polling
//! (`GetTask`), streaming (`SendStreamingMessage`, `SubscribeToTask` after a drop) or a
//! push notification to its webhook.
//!
//! One concern a file: [`wire`] (A2A's JSON shapes), [`message`] (a message → the
//! request), [`task`] (a request → the task), [`errors`] (JSON-RPC errors carrying dshq's
//! codes), [`rpc`] (the endpoint and its methods), [`stream`] (SSE), [`push`] (webhooks),
//! [`card`] (the agent card).

pub mod card;
pub mod errors;
pub mod message;
pub mod push;
pub mod rpc;
pub mod stream;
pub mod task;
pub mod wire;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::{Extension, Router};

use crate::host::AppState;

/// The JSON-RPC endpoint.
pub const PATH: &str = "/a2a";

/// Where the agent card is (A2A's well-known path).
pub const CARD_PATH: &str = "/.well-known/agent-card.json";

/// The protocol version served.
pub const VERSION: &str = "1.0";

/// The face's settings.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The origins push notifications may go to (`--a2a-push-allow`); none: no pushes.
    pub push_allow: Vec<push::Origin>,
}

/// What every call of the face shares.
pub struct Face {
    /// The webhooks.
    pub pushes: Arc<push::Pushes>,
}

/// The face's routes (the card and the endpoint); starts the push notifications a
/// killed daemon still owed.
pub fn routes(state: &AppState, config: &Config) -> Router {
    let pushes = push::Pushes::new(state, config.push_allow.clone());
    pushes.resume();
    let face = Arc::new(Face { pushes });
    Router::new()
        .route(CARD_PATH, get(card::serve))
        .route(PATH, post(rpc::serve))
        .layer(Extension(face))
        .with_state(state.clone())
}
