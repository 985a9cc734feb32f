//! The MCP server over Streamable HTTP at `/mcp` on the async host (`dshq daemon
//! --listen`): the SDK's transport, behind the same bearer tokens as the JSON API.
//!
//! A request without a valid token is refused with 401 before the transport sees it; the
//! authenticated [`Caller`] rides in the request's extensions to the tool calls, where
//! its role decides (an asker token asks, gets and aborts its own requests; a reviewer
//! token may also run `review_questions`). The transport keeps sessions for the
//! handshake-era revisions, which the reviewer's side needs for `elicitation/create`; a
//! request at 2026-07-28 is served statelessly (no session, the token checked on each
//! request as always).
//!
//! - Each session belongs to the token that opened it ([`Bindings`]): a request naming a
//!   session (`Mcp-Session-Id`) with any other token gets 404, as an unknown session does,
//!   so another token can neither end the session nor answer its elicitation forms, nor
//!   learn that it exists. A revoked token's sessions are closed by the host's revocation
//!   watch ([`crate::host::ends`]).
//! - A browser's `Origin` is refused with 403 unless `--mcp-allow-origin` names it (the
//!   transport's check: the SDK's RFC 6454 matching), or, on a loopback listener, it is
//!   the request's own loopback origin (`Origin: http://localhost:PORT` with `Host:
//!   localhost:PORT`: a page of this very listener, which DNS rebinding cannot forge, since
//!   a rebound name arrives in `Host` and the transport refuses any `Host` but the loopback
//!   names); a request without `Origin` (an MCP client that is not a browser) is not
//!   affected.
//! - A session the client ends (`DELETE` with its `Mcp-Session-Id`) is answered 204 No
//!   Content: the transport has closed it by then, and answers 202 Accepted, which the
//!   specification does not ask for (it names no success status, only 405 for a server
//!   that refuses) and which the Python SDK reports as "Session termination failed: 202".

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::backend::Backend;
use super::server::DshqServer;
use super::Config;
use crate::host::auth::Caller;
use crate::host::AppState;

/// The path of the endpoint.
pub const PATH: &str = "/mcp";

/// The header that names a session.
const SESSION_HEADER: &str = "mcp-session-id";

/// How often a binding checks that its session still exists (a session the client ended
/// with DELETE, or the transport's idle timeout, leaves the table by then).
const SESSION_CHECK: Duration = Duration::from_secs(30);

/// The endpoint's settings.
#[derive(Debug, Clone, Default)]
pub struct HttpConfig {
    /// The browser origins accepted (`--mcp-allow-origin`); any other `Origin` gets 403,
    /// but a loopback listener's own ([`same_loopback_origin`]).
    pub allowed_origins: Vec<String>,
    /// Whether the host listens on a loopback address only.
    pub loopback: bool,
}

/// Whether a request's `Origin` is its own `Host` (scheme `http` or `https`) and that host
/// is the loopback: a page served by this listener calling it, as the MCP specification's
/// DNS-rebinding guidance and its conformance suite expect a local server to accept.
fn same_loopback_origin(headers: &axum::http::HeaderMap) -> bool {
    use axum::http::header::{HOST, ORIGIN};
    let text = |h| headers.get(h).and_then(|v: &HeaderValue| v.to_str().ok());
    let (Some(origin), Some(host)) = (text(ORIGIN), text(HOST)) else {
        return false;
    };
    let Ok(authority) = host.parse::<axum::http::uri::Authority>() else {
        return false;
    };
    crate::net::is_loopback_host(authority.host())
        && origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .is_some_and(|o| o.eq_ignore_ascii_case(host))
}

/// Parse `--mcp-allow-origin`: `null`, or `http(s)://HOST[:PORT|:*]` with nothing after.
pub fn parse_origin(s: &str) -> Result<String, String> {
    let s = s.trim();
    if s == "null" {
        return Ok(s.to_string());
    }
    let hint = || {
        format!(
            "{s:?} is not an origin: give SCHEME://HOST:PORT (e.g. http://localhost:5173), \
             SCHEME://HOST:* for any port, or null"
        )
    };
    let (scheme, rest) = s.split_once("://").ok_or_else(hint)?;
    let host = rest.rsplit_once(':').map_or(rest, |(h, _)| h);
    let ok = matches!(scheme, "http" | "https")
        && !host.is_empty()
        && !rest.contains(['/', '?', '#', '@', ' ']);
    ok.then(|| s.to_string()).ok_or_else(hint)
}

/// Which token opened which session.
pub struct Bindings {
    app: AppState,
    /// [`HttpConfig::loopback`].
    loopback: bool,
    sessions: Arc<LocalSessionManager>,
    owner: Mutex<HashMap<String, String>>,
}

impl Bindings {
    fn owner_of(&self, session: &str) -> Option<String> {
        self.owner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session)
            .cloned()
    }

    fn forget(&self, session: &str) {
        self.owner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(session);
    }

    /// Bind `session` to token `name`, and keep it bound until the session ends; close
    /// the session when the token is revoked.
    fn bind(self: &Arc<Self>, session: &str, name: &str) {
        self.owner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session.to_string(), name.to_string());
        let mut held = self.app.ends.hold(name, None);
        let (me, id) = (self.clone(), session.to_string());
        tokio::spawn(async move {
            let sid: rmcp::transport::common::server_side_http::SessionId = id.as_str().into();
            loop {
                tokio::select! {
                    why = held.ended() => {
                        tracing::info!(?why, "closing an MCP session: its token can no longer use it");
                        me.forget(&id);
                        if let Err(e) = me.sessions.close_session(&sid).await {
                            tracing::debug!(error = %e, "the MCP session was gone already");
                        }
                        return;
                    }
                    _ = tokio::time::sleep(SESSION_CHECK) => {
                        if !me.sessions.has_session(&sid).await.unwrap_or(false) {
                            me.forget(&id);
                            return;
                        }
                    }
                }
            }
        });
    }
}

/// What the host ends at its stop: the `review_next` reviews in flight, whose leases are
/// released then ([`Drain::release_all`]), as the web page's are.
pub struct Drain {
    reviews: Arc<super::state::Reviews>,
    backend: Backend,
}

impl Drain {
    /// End every review in flight and release its lease.
    pub async fn release_all(&self) {
        self.reviews.end_all(&self.backend).await;
    }
}

/// The `/mcp` routes, which the host serves beside [`crate::web::app`] (mounted by the
/// host, not by the web face: this face rides on the web's tokens, so the web must not
/// depend on it), and what the host's stop ends of them.
pub fn routes(state: &AppState, config: &HttpConfig) -> (Router, Drain) {
    let st = state.clone();
    let sessions = Arc::new(LocalSessionManager::default());
    // The host's stop ends every session and its streams (the drain).
    let cancel = tokio_util::sync::CancellationToken::new();
    {
        let (cancel, mut shutdown) = (cancel.clone(), state.shutdown.clone());
        tokio::spawn(async move {
            let _ = shutdown.wait_for(|s| *s).await;
            cancel.cancel();
        });
    }
    let mut server_config = StreamableHttpServerConfig::default()
        .with_allowed_origins(config.allowed_origins.clone())
        .enforce_origin_validation();
    server_config.cancellation_token = cancel;
    // One table of reviews in flight for every server of this endpoint: a stateless
    // request gets a server of its own, and a review's retry may reach any of them.
    let reviews = Arc::new(super::state::Reviews::default());
    let drain = Drain {
        reviews: reviews.clone(),
        backend: Backend::Host(st.clone()),
    };
    let service = StreamableHttpService::new(
        move || {
            Ok(
                DshqServer::new(Backend::Host(st.clone()), Config::default())
                    .with_reviews(reviews.clone()),
            )
        },
        sessions.clone(),
        server_config,
    );
    let bindings = Arc::new(Bindings {
        app: state.clone(),
        loopback: config.loopback,
        sessions,
        owner: Mutex::default(),
    });
    let router = Router::new()
        .route_service(PATH, service)
        .route_layer(axum::middleware::from_fn_with_state(bindings, guard));
    (router, drain)
}

/// The answer to a session this token did not open: what an unknown session gets.
fn no_such_session() -> Response {
    (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response()
}

/// 401 without a valid bearer token; 404 for a session of another token; else the caller
/// goes along in the extensions, and a session the request opens is bound to its token.
async fn guard(State(b): State<Arc<Bindings>>, mut req: Request, next: Next) -> Response {
    // The transport knows only the allowed list; a loopback listener's own origin is
    // judged here, and the header taken off so that the transport's `Host` check alone
    // applies to it.
    if b.loopback && same_loopback_origin(req.headers()) {
        req.headers_mut().remove(axum::http::header::ORIGIN);
    }
    let caller = match Caller::from_headers(&b.app, req.headers()).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let named = req
        .headers()
        .get(SESSION_HEADER)
        .map(|v| v.to_str().unwrap_or("").to_string());
    if let Some(session) = &named {
        // Unknown sessions too: the transport would say 404, and a binding is made for
        // every session this endpoint opened.
        if b.owner_of(session).as_deref() != Some(caller.token.name.as_str()) {
            tracing::info!(token = %caller.token.name, "MCP request for a session this token did not open: 404");
            return no_such_session();
        }
    }
    let name = caller.token.name.clone();
    let ends_session = req.method() == axum::http::Method::DELETE && named.is_some();
    req.extensions_mut().insert(caller);
    let resp = next.run(req).await;
    if ends_session && resp.status() == StatusCode::ACCEPTED {
        if let Some(session) = &named {
            b.forget(session);
        }
        return StatusCode::NO_CONTENT.into_response();
    }
    if named.is_none() {
        if let Some(opened) = resp.headers().get(SESSION_HEADER).and_then(session_id) {
            b.bind(&opened, &name);
        }
    }
    resp
}

fn session_id(v: &HeaderValue) -> Option<String> {
    v.to_str().ok().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::{parse_origin, same_loopback_origin};

    #[test]
    fn only_a_loopback_hosts_own_origin_is_its_own() {
        let judge = |host: &str, origin: &str| {
            let mut h = axum::http::HeaderMap::new();
            h.insert("host", host.parse().unwrap());
            h.insert("origin", origin.parse().unwrap());
            same_loopback_origin(&h)
        };
        assert!(judge("localhost:8700", "http://localhost:8700"));
        assert!(judge("127.0.0.1:8700", "http://127.0.0.1:8700"));
        assert!(judge("[::1]:8700", "http://[::1]:8700"));
        assert!(judge("localhost", "https://localhost"));
        // Another port, another loopback name, a rebound name, a path.
        assert!(!judge("localhost:8700", "http://localhost:3000"));
        assert!(!judge("localhost:8700", "http://127.0.0.1:8700"));
        assert!(!judge("evil.example:8700", "http://evil.example:8700"));
        assert!(!judge("localhost:8700", "http://localhost:8700/x"));
        assert!(!judge("localhost:8700", "null"));
    }

    #[test]
    fn an_allowed_origin_is_a_scheme_host_and_port_or_null() {
        for ok in [
            "null",
            "http://localhost:5173",
            "https://app.example:*",
            "https://app.example",
        ] {
            assert_eq!(parse_origin(ok).as_deref(), Ok(ok));
        }
        for bad in ["evil.example", "ftp://x", "http://x/path", "http://", "*"] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }
}
