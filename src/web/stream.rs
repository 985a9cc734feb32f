//! `GET /api/v1/stream`: server-sent events of the request lifecycle (`accepted`,
//! `claimed`, `released`, `answered`, `cancelled`, `aborted`, `expired`), one per change
//! the host broadcasts after a commit. The `id:` is the event's position in the log.
//!
//! A subscriber that falls behind gets a `lagged` event and should re-read the list; the
//! broadcast never waits for it. The stream ends when the host stops. An asker sees only
//! the changes of its own requests; a token bound to a context, that context's.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::Stream;
use tokio::sync::broadcast::error::RecvError;

use crate::core::access::{Action, Reach};
use crate::web::auth::Caller;
use crate::web::error::ApiResult;
use crate::web::AppState;

/// `GET /api/v1/stream`.
pub async fn stream(
    State(st): State<AppState>,
    caller: Caller,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let reach = caller.require(Action::List)?;
    let rx = st.db.changes().subscribe();
    tracing::debug!(token = %caller.token.name, "event stream opened");
    let shutdown = st.shutdown.clone();
    let own = (reach == Reach::Own).then(|| caller.source().as_str().into_owned());
    let stream = futures_util::stream::unfold(
        (rx, shutdown, caller, own),
        |(mut rx, mut shutdown, caller, own)| async move {
            loop {
                let ev = tokio::select! {
                    r = rx.recv() => r,
                    _ = shutdown.changed() => return None,
                };
                let event = match ev {
                    Ok(c) => {
                        if !caller.in_context(&c.context)
                            || own.as_ref().is_some_and(|s| *s != c.source)
                        {
                            continue;
                        }
                        Event::default()
                            .event(c.kind.as_str())
                            .id(c.seq.to_string())
                            .json_data(&*c)
                            .expect("a change serializes")
                    }
                    Err(RecvError::Lagged(n)) => Event::default()
                        .event("lagged")
                        .data(format!("{{\"missed\":{n}}}")),
                    Err(RecvError::Closed) => return None,
                };
                return Some((Ok(event), (rx, shutdown, caller, own)));
            }
        },
    );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
