//! What every HTTP handler gets, whichever face it belongs to (the API and the page in
//! [`crate::web`], `/mcp` in [`crate::mcp`], a channel's inbound route in
//! [`crate::channels`]): the host's services and the limits on callers. Built once by the
//! composition root ([`crate::serve`]); cheap to clone.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::db::Db;
use super::ends::Ends;
use super::provider::Providers;
use crate::root::Root;

/// How long an unused page login lasts by default (`--web-session-idle`).
pub const SESSION_IDLE: Duration = Duration::from_secs(12 * 3600);

/// How long a page login lasts at most by default (`--web-session-max`).
pub const SESSION_MAX: Duration = Duration::from_secs(24 * 3600);

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
    /// A page login ends this long after it began, however busy.
    pub session_max: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES,
            body_timeout: Duration::from_secs(30),
            max_wait: Duration::from_secs(300),
            session_idle: SESSION_IDLE,
            session_max: SESSION_MAX,
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
    pub ends: Arc<Ends>,
    /// The identity provider the page signs people in through, when the config file
    /// names one (`[oidc]`).
    pub oidc: Option<Arc<super::oidc::Oidc>>,
}
