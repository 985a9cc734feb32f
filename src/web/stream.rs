//! `GET /api/v1/stream`: server-sent events of the request lifecycle (`accepted`,
//! `claimed`, `released`, `answered`, `cancelled`, `aborted`, `expired`), one per change
//! the host broadcasts after a commit. The `id:` is the event's position in the log.
//!
//! A client that reconnects sends the last `id:` it saw as `Last-Event-ID` (a browser's
//! `EventSource` does so by itself) and first gets what it missed, read from the event
//! log, then the live changes, with nothing twice and nothing out of order: the stream
//! subscribes to the broadcast *before* reading the log, and drops a broadcast change
//! the replay already sent (by its position). An asker that was offline for a while
//! therefore loses no event, which is the point of a durable queue. The replay reads at
//! most [`REPLAY_MAX`] log positions; beyond that it sends `lagged` (`{"missed": N}`, N
//! log positions not replayed) and the client should re-read the list.
//!
//! A subscriber that falls behind the live broadcast gets a `lagged` event too; the
//! broadcast never waits for it. The stream ends when the host stops (with a last
//! `shutdown` event whose `retry:` tells the client when to reconnect, [`retry_hint`]),
//! and when its token is revoked ([`crate::host::ends`]). An asker sees only
//! the changes of its own requests; a token bound to a context, that context's. Each
//! change carries the request's status as it is when the change is sent.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt};
use tokio::sync::broadcast::error::RecvError;

use crate::app;
use crate::core::access::{Action, Reach};
use crate::error::Error;
use crate::host::auth::Caller;
use crate::host::changes::Change;
use crate::host::error::{ApiError, ApiResult};
use crate::host::AppState;

/// The most log positions a resumed stream replays before it says `lagged`.
pub const REPLAY_MAX: usize = crate::host::changes::CAPACITY;

/// The header a reconnecting client names its last event with.
const LAST_EVENT_ID: &str = "last-event-id";

/// Whom a stream is for: what it may see.
#[derive(Clone)]
struct Viewer {
    caller: Caller,
    own: Option<String>,
}

impl Viewer {
    fn sees(&self, c: &Change) -> bool {
        self.caller.in_context(&c.context) && self.own.as_ref().is_none_or(|s| *s == c.source)
    }
}

fn sse(c: &Change) -> Event {
    Event::default()
        .event(c.kind.as_str())
        .id(c.seq.to_string())
        .json_data(c)
        .expect("a change serializes")
}

fn lagged(missed: i64) -> Event {
    Event::default()
        .event("lagged")
        .data(format!("{{\"missed\":{missed}}}"))
}

/// How long a client should wait before it reconnects after the host stopped its stream.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The last event of a stream the host ends (it is stopping): `event: shutdown`, with the
/// SSE `retry:` field set to [`RETRY_AFTER`], so an `EventSource` reconnects after that long
/// (to this host once it is back, or to another behind the same address) and resumes from
/// its last `id:`.
pub fn retry_hint() -> Event {
    Event::default()
        .event("shutdown")
        .retry(RETRY_AFTER)
        .data(format!("{{\"retryAfterMs\":{}}}", RETRY_AFTER.as_millis()))
}

/// The position a reconnecting client saw last: `Last-Event-ID`, a log position.
fn resume_from(headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let Some(v) = headers.get(LAST_EVENT_ID) else {
        return Ok(None);
    };
    v.to_str()
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .filter(|n| *n >= 0)
        .map(Some)
        .ok_or_else(|| {
            ApiError::from(Error::Usage(
                "Last-Event-ID must be the id: of an event this stream sent (a log position)"
                    .into(),
            ))
        })
}

/// `GET /api/v1/stream`.
pub async fn stream(
    State(st): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    let reach = caller.require(Action::List)?;
    let after = resume_from(&headers)?;
    // Subscribe first: a change committed while the log is read is then either in the
    // replay or in the broadcast (or both, and dropped once by its position).
    let rx = st.db.changes().subscribe();
    let own = (reach == Reach::Own).then(|| caller.source().as_str().into_owned());
    let viewer = Viewer { caller, own };
    let mut replay = Vec::new();
    let mut seen = after.unwrap_or(0);
    if let Some(after) = after {
        let missed = st
            .db
            .read(move |store| app::feed::events_after(store, after, REPLAY_MAX))
            .await?;
        for (event, row) in &missed.events {
            if let Some(c) = Change::of(event, row).filter(|c| viewer.sees(c)) {
                replay.push(sse(&c));
            }
        }
        seen = missed.upto;
        if missed.unread > 0 {
            replay.push(lagged(missed.unread));
        }
        tracing::debug!(token = %viewer.caller.token.name, after, replayed = replay.len(), "event stream resumed");
    } else {
        tracing::debug!(token = %viewer.caller.token.name, "event stream opened");
    }
    let shutdown = st.shutdown.clone();
    // Ended when the token is revoked (or the host drains): see `host::ends`.
    let held = st.ends.hold(&viewer.caller.token.name, None);
    let live = stream::unfold(
        (rx, shutdown, viewer, seen, held),
        |(mut rx, mut shutdown, viewer, seen, mut held)| async move {
            loop {
                let ev = tokio::select! {
                    r = rx.recv() => r,
                    _ = shutdown.changed() => return None,
                    why = held.ended() => {
                        tracing::info!(token = %viewer.caller.token.name, ?why, "event stream ended");
                        return None;
                    }
                };
                let event = match ev {
                    Ok(c) => {
                        if c.seq <= seen || !viewer.sees(&c) {
                            continue;
                        }
                        sse(&c)
                    }
                    Err(RecvError::Lagged(n)) => lagged(n as i64),
                    Err(RecvError::Closed) => return None,
                };
                return Some((Ok(event), (rx, shutdown, viewer, seen, held)));
            }
        },
    );
    let held = crate::metrics::Held::stream("api");
    let all = stream::iter(replay.into_iter().map(Ok))
        .chain(live)
        .chain(stream::once(async { Ok(retry_hint()) }))
        .map(move |e| {
            let _counted = &held;
            e
        });
    Ok(Sse::new(all).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
