//! The web face: axum routes over the host's state. The JSON API lives in [`api`] (under
//! `/api/v1`), the event stream in [`stream`], authentication and roles in [`auth`], the
//! error document in [`error`]; the reviewer's page ([`page`]) mounts its routes beside them, at `/`.
//!
//! A face like the CLI: each handler parses its input, checks the caller's role
//! ([`auth::Caller::require`]), runs one use-case of [`crate::app`] on the database thread
//! ([`crate::host::db::Db`]) and renders the typed result as JSON. Nothing here touches
//! the store directly or blocks a runtime worker.

pub mod api;
pub mod auth;
pub mod body;
pub mod error;
pub mod page;
pub mod slack;
pub mod stream;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::sync::watch;

use crate::host::db::Db;
use crate::host::provider::Providers;
use crate::root::Root;

/// Limits a caller cannot exceed.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The largest request or answer body, in bytes (the inbox's `--max-bytes`).
    pub max_body: u64,
    /// How long a body may take to arrive.
    pub body_timeout: Duration,
    /// The longest long-poll wait (`?wait=`).
    pub max_wait: Duration,
    /// A page login unused this long ends (and its live streams with it).
    pub session_idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES,
            body_timeout: Duration::from_secs(30),
            max_wait: Duration::from_secs(300),
            session_idle: page::session::SESSION_IDLE,
        }
    }
}

/// What every handler gets (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    /// The database thread (and through it the change broadcast).
    pub db: Db,
    /// The provider leases the host holds for reviewers acting over the web.
    pub providers: Arc<Providers>,
    /// The state root (outcome files are published there).
    pub root: Root,
    /// Limits.
    pub limits: Limits,
    /// Flips to `true` when the host stops: open streams and waits end.
    pub shutdown: watch::Receiver<bool>,
    /// What each token holds open (streams, long-polls, MCP sessions), to end it when the
    /// token is revoked or its page session ends.
    pub ends: Arc<crate::host::ends::Ends>,
}

/// The whole web application: the API under `/api/v1` (and whatever other face mounts
/// beside it), with the state applied.
pub fn app(state: AppState) -> Router {
    Router::new()
        .nest("/api/v1", api::routes())
        .merge(page::routes())
        .with_state(state)
}
