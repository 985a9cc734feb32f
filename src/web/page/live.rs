//! The page's live side: `GET /live` (server-sent events, cookie-authenticated) and
//! `POST /live/active` (the script's "a reviewer is here" ping).
//!
//! The stream sends a `change` event for every lifecycle change the host broadcasts
//! after a commit ([`crate::host::changes::Changes`], as [`crate::web::stream`] does), so
//! the queue's script fetches a fresh fragment and a request answered elsewhere leaves
//! without a reload. It carries ids, contexts and statuses only: the page fetches the
//! text itself, rendered and escaped by the server.
//!
//! A stream opened from a request view names its context (`?context=C`): while at least
//! one reviewer has such a page open the host keeps the context's provider lease; when
//! the last one leaves, the lease is released after [`LEAVE_GRACE`] (long enough to
//! survive moving from the form to its summary page). A page open but unused still ends
//! in the idle release of [`crate::host::provider::Providers`]: only the script's
//! activity pings ([`active`]) and the reviewer's acts count as use.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::Stream;
use tokio::sync::broadcast::error::RecvError;

use super::session::Viewer;
use crate::host::provider::Providers;
use crate::host::AppState;
use crate::web::api::query::Query;

/// How long a context's lease is kept after its last page closed.
pub const LEAVE_GRACE: Duration = Duration::from_secs(10);

/// How many pages are open on each context.
#[derive(Default)]
pub struct Viewers {
    open: Mutex<HashMap<String, usize>>,
}

impl Viewers {
    fn enter(&self, context: &str) {
        *self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(context.to_string())
            .or_insert(0) += 1;
    }

    /// Leave; `true` when that was the last page on the context.
    fn leave(&self, context: &str) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        match open.get_mut(context) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            Some(_) => {
                open.remove(context);
                true
            }
            None => false,
        }
    }

    /// How many pages are open on `context`.
    pub fn count(&self, context: &str) -> usize {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(context)
            .copied()
            .unwrap_or(0)
    }
}

/// A page open on a context; dropping it (the stream ended: the page closed) leaves.
struct Presence {
    shared: Arc<super::Shared>,
    providers: Arc<Providers>,
    context: String,
}

impl Drop for Presence {
    fn drop(&mut self) {
        if !self.shared.viewers.leave(&self.context) {
            return;
        }
        let (shared, providers, context) = (
            self.shared.clone(),
            self.providers.clone(),
            std::mem::take(&mut self.context),
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                tokio::time::sleep(LEAVE_GRACE).await;
                if shared.viewers.count(&context) == 0 {
                    providers.release_for_pages(&context).await;
                }
            });
        }
    }
}

/// What ends a page stream before its page closes.
struct Lifetime {
    held: crate::host::ends::Held,
    shared: Arc<super::Shared>,
    session: String,
    idle: Duration,
    every: tokio::time::Interval,
}

impl Lifetime {
    /// Resolves when the stream must end: its session logged out, expired, or its token
    /// was revoked.
    async fn ended(&mut self) {
        loop {
            tokio::select! {
                _ = self.held.ended() => return,
                _ = self.every.tick() => if !self.shared.sessions.alive(&self.session, self.idle) {
                    return;
                },
            }
        }
    }
}

/// The context a live request names, if the viewer may hold its lease.
// The error is the page to show (built once, returned at once).
#[allow(clippy::result_large_err)]
fn context_of(viewer: &Viewer, raw: Option<&str>) -> Result<Option<String>, Response> {
    let q = Query::parse(raw, &["context"]).map_err(|e| viewer.error(e))?;
    let Some(c) = q.one("context") else {
        return Ok(None);
    };
    if c.is_empty() || c.len() > 128 || !viewer.caller.in_context(c) {
        return Err(viewer.error(crate::error::Error::Forbidden));
    }
    Ok(viewer.answers().then(|| c.to_string()))
}

/// `GET /live[?context=C]`: the page's event stream.
pub async fn stream(
    State(st): State<AppState>,
    viewer: Viewer,
    RawQuery(raw): RawQuery,
) -> Response {
    let context = match context_of(&viewer, raw.as_deref()) {
        Ok(c) => c,
        Err(r) => return r,
    };
    let presence = context.map(|c| {
        viewer.shared.viewers.enter(&c);
        Presence {
            shared: viewer.shared.clone(),
            providers: st.providers.clone(),
            context: c,
        }
    });
    let rx = st.db.changes().subscribe();
    let shutdown = st.shutdown.clone();
    let caller = viewer.caller.clone();
    // Ended by a logout or the token's revocation (`host::ends`), or by the session's
    // expiry, checked every second.
    let lifetime = Lifetime {
        held: st.ends.hold(&caller.token.name, Some(&viewer.session)),
        shared: viewer.shared.clone(),
        session: viewer.session.clone(),
        idle: st.limits.session_idle,
        every: tokio::time::interval(Duration::from_secs(1)),
    };
    tracing::debug!(token = %caller.token.name, "page stream opened");
    let hello =
        futures_util::stream::once(async { Ok(Event::default().event("ready").data("{}")) });
    let changes = futures_util::stream::unfold(
        (rx, shutdown, caller, presence, lifetime),
        |(mut rx, mut shutdown, caller, presence, mut lifetime)| async move {
            loop {
                let ev = tokio::select! {
                    r = rx.recv() => r,
                    _ = shutdown.changed() => return None,
                    _ = lifetime.ended() => {
                        tracing::info!(token = %caller.token.name, "page stream ended");
                        return None;
                    }
                };
                let event = match ev {
                    Ok(c) if !caller.in_context(&c.context) || !caller.sees_id(&c.id) => continue,
                    Ok(c) => Event::default().event("change").data(
                        serde_json::json!({
                            "kind": c.kind.as_str(),
                            "id": c.id,
                            "context": c.context,
                            "status": c.status,
                        })
                        .to_string(),
                    ),
                    Err(RecvError::Lagged(_)) => Event::default().event("change").data("{}"),
                    Err(RecvError::Closed) => return None,
                };
                return Some((
                    Ok::<_, Infallible>(event),
                    (rx, shutdown, caller, presence, lifetime),
                ));
            }
        },
    );
    let s: std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>> =
        Box::pin(futures_util::StreamExt::map(
            futures_util::StreamExt::chain(
                futures_util::StreamExt::chain(hello, changes),
                futures_util::stream::once(async { Ok(crate::web::stream::retry_hint()) }),
            ),
            {
                let held = crate::metrics::Held::stream("page");
                move |e| {
                    let _counted = &held;
                    e
                }
            },
        ));
    Sse::new(s)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

/// `POST /live/active?context=C` (header `X-CSRF-Token`): the reviewer is active on a
/// request of `C`, so the host's lease there is in use (204).
pub async fn active(
    State(st): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> Response {
    let presented = headers.get("x-csrf-token").and_then(|v| v.to_str().ok());
    if let Err(r) = viewer.check_csrf(presented) {
        return r;
    }
    match context_of(&viewer, raw.as_deref()) {
        Ok(Some(c)) => st.providers.touch(&c).await,
        Ok(None) => {}
        Err(r) => return r,
    }
    StatusCode::NO_CONTENT.into_response()
}
