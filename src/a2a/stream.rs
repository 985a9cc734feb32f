//! The SSE streams of `SendStreamingMessage` and `SubscribeToTask`: the task as it is
//! now, then, once the person decides (or the request otherwise ends), the `decision`
//! artifact and the final status; then the stream closes, as A2A asks.
//!
//! A stream holds nothing the request does not: when it drops (the client's connection,
//! the host's stop, a daemon killed), the client calls `SubscribeToTask` (on the
//! restarted daemon too) and gets the task as it is then, and its end. Each event is a
//! JSON-RPC response carrying the call's id; a comment every 15 seconds keeps proxies
//! from closing an idle stream.

use std::convert::Infallible;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, StreamExt};
use serde_json::Value;

use super::task::{self, Seen};
use super::wire::StreamResponse;
use crate::host::auth::Caller;
use crate::host::AppState;

/// How often an idle stream sends a comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

enum Phase {
    Start(Box<Seen>),
    Waiting(String),
    Done,
}

/// The stream of task `seen` for the call `rpc_id`.
pub fn sse(st: AppState, rpc_id: Value, seen: Seen, caller: Caller) -> Response {
    let events = stream::unfold(Phase::Start(Box::new(seen)), move |phase| {
        let (st, caller) = (st.clone(), caller.clone());
        async move {
            match phase {
                Phase::Start(seen) => {
                    let id = seen.id().to_string();
                    let first = vec![StreamResponse::Task(seen.task())];
                    let next = if seen.state().is_terminal() {
                        // Ended already (a re-sent message of a decided task): its end too.
                        return Some(([first, seen.final_events()].concat(), Phase::Done));
                    } else {
                        Phase::Waiting(id)
                    };
                    Some((first, next))
                }
                Phase::Waiting(id) => until_final(&st, &caller, &id)
                    .await
                    .map(|s| (s.final_events(), Phase::Done)),
                Phase::Done => None,
            }
        }
    })
    .flat_map(stream::iter)
    .map(move |ev| {
        let body = super::wire::result(&rpc_id, serde_json::to_value(&ev).unwrap_or_default());
        Ok::<_, Infallible>(Event::default().data(body.to_string()))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}

/// Wait for task `id` to be final (woken by its final change): the task then; `None`
/// when the host stops or the token can no longer read it (the stream then just ends,
/// and the client subscribes again).
async fn until_final(st: &AppState, caller: &Caller, id: &str) -> Option<Seen> {
    let mut shutdown = st.shutdown.clone();
    let mut held = st.ends.hold(&caller.token.name, None);
    loop {
        let mut finished = st.db.changes().wait_final(id);
        match task::read(st, id).await {
            Ok(Some(s)) if s.state().is_terminal() => return Some(s),
            Ok(Some(_)) => {}
            Ok(None) => return None,
            Err(e) => {
                tracing::warn!(error = %crate::text::for_log(&e.to_string()), "an A2A stream cannot read its task");
                return None;
            }
        }
        tokio::select! {
            _ = finished.finished() => {}
            _ = shutdown.wait_for(|s| *s) => return None,
            _ = held.ended() => return None,
        }
    }
}
