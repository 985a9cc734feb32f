//! The Web Push channel's inbound routes, served beside the web face when `--push` is on:
//!
//! - `GET /push/key`: the VAPID public key the page subscribes with (`{"key": B64URL}`);
//!   a daemon without `--push` has no such route (404), and the page offers no
//!   subscription.
//! - `POST /push/act` (`{"token", "endpoint"}`): a tapped notification action, sent by the
//!   service worker. No session is needed (one tap from a lock screen); the token is the
//!   credential, and it answers only when every check passes, in this order:
//!   1. it is one the root's link key signed as a push action and has not expired
//!      (`LINK_INVALID`, `LINK_EXPIRED`: [`crate::core::mail_link`]);
//!   2. it was sent to the device presenting it: the endpoint is the one its message went
//!      to, still subscribed by the same web identity (`FORBIDDEN`: another device, or
//!      one unsubscribed since);
//!   3. that web token may still answer in the request's context (`FORBIDDEN`: revoked,
//!      or its role or context changed);
//!   4. then the answer goes through the mail link's rule and the page's use-case, through
//!      the host's lease, as `web:NAME` ([`crate::app::mail::answer_by_link`]): the request
//!      must be the one it was made for (its digest, `LINK_INVALID`; asked before the
//!      action was made, `NOT_FOUND`), still in the context it was sent for
//!      (`WRONG_CONTEXT`), still open (`REQUEST_FINAL`), and the action unspent
//!      (`LINK_USED`); the action is spent in the answer's own transaction.
//!
//!   Any refusal changes nothing; the worker then opens the request on the page.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::{answers_in, Push};
use crate::app;
use crate::core::audit::Actor;
use crate::core::mail_link::LinkKey;
use crate::core::push_action::{device_of, ActionClaims};
use crate::error::{Error, Result};
use crate::host::error::ApiError;
use crate::host::provider::Act;
use crate::host::AppState;
use crate::store::driver::links::LinkUse;

/// What the routes hold: the link key and the VAPID public key.
struct Keys {
    links: LinkKey,
    public: String,
}

/// The routes of the push channel (see the module's doc); the keys are read (made at
/// their first use) now, so a daemon that cannot does not start.
pub fn routes(state: &AppState, _push: &Push) -> Result<Router> {
    let dir = state.root.dir();
    let keys = Arc::new(Keys {
        links: crate::app::mail_key::load_or_create(dir)?,
        public: crate::app::push_key::public(&crate::app::push_key::load_or_create(dir)?),
    });
    Ok(Router::new()
        .route("/push/key", get(key))
        .route("/push/act", post(act))
        .layer(Extension(keys))
        .with_state(state.clone()))
}

async fn key(Extension(keys): Extension<Arc<Keys>>) -> Response {
    Json(json!({"key": keys.public})).into_response()
}

/// What the service worker posts.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Tapped {
    token: String,
    endpoint: String,
}

fn refused(e: impl Into<Error>) -> Response {
    let e: Error = e.into();
    tracing::warn!(code = %e.code(), "push: an action was refused");
    ApiError::from(e).into_response()
}

/// `POST /push/act`: a tapped action answers once it passes every check (the module's
/// list), in that order.
async fn act(
    State(st): State<AppState>,
    Extension(keys): Extension<Arc<Keys>>,
    crate::host::body::Body(body): crate::host::body::Body,
) -> Response {
    let tapped: Tapped = match serde_json::from_slice(&body) {
        Ok(t) => t,
        Err(e) => {
            return refused(Error::question(
                crate::protocol::Code::BadRequest,
                format!("not a tapped action ({{\"token\", \"endpoint\"}}): {e}"),
            ))
        }
    };
    let now = match st.db.read(|store| store.clock_now()).await {
        Ok(n) => n,
        Err(e) => return refused(e),
    };
    let claims: ActionClaims = match keys.links.verify_as(&tapped.token, now) {
        Ok(c) => c,
        Err(e) => return refused(e),
    };
    let (endpoint, c) = (tapped.endpoint.clone(), claims.clone());
    let checked = st
        .db
        .read(move |store| {
            let device = store.push_subscription(&endpoint)?;
            let sent_here = device_of(&endpoint) == c.device
                && device.is_some_and(|d| d.web_name == c.web_name);
            if !sent_here {
                return Err(Error::question(
                    crate::protocol::Code::Forbidden,
                    "this action was sent to another device, or this device is no longer subscribed: open the request on the page",
                ));
            }
            let may = store
                .tokens()?
                .iter()
                .any(|t| t.name == c.web_name && answers_in(t, &c.context));
            if !may {
                return Err(Error::question(
                    crate::protocol::Code::Forbidden,
                    format!("web:{} may no longer answer in context {:?}", c.web_name, c.context),
                ));
            }
            store
                .get(&c.request_id)?
                .ok_or_else(|| Error::NotFound(c.request_id.clone()))
        })
        .await;
    let row = match checked {
        Ok(r) => r,
        Err(e) => return refused(e),
    };
    let link = LinkUse {
        link_id: claims.action_id.clone(),
        request_id: claims.request_id.clone(),
        context: claims.context.clone(),
        recipient: format!("web:{}", claims.web_name),
        issued_ms: claims.issued_ms,
        digest: Some(claims.digest.clone()),
    };
    let (root, answer) = (st.root.clone(), claims.answer.clone());
    let r = st
        .providers
        .act(
            &row,
            Actor::Web(claims.web_name.clone()),
            Act::Answer,
            move |store, acting| {
                app::mail::answer_by_link(store, Some(&root), &link, acting, &answer)
            },
        )
        .await;
    let id = &claims.request_id;
    match r {
        Ok(app::provide::Answering::Finished(_)) => {
            tracing::info!(id = %crate::text::for_log(id), by = %crate::text::for_log(&claims.web_name), "answered from a push notification");
            Json(json!({"id": id, "status": "answered", "message": format!("Request {id} answered.")})).into_response()
        }
        Ok(app::provide::Answering::Voted(_)) => {
            tracing::info!(id = %crate::text::for_log(id), by = %crate::text::for_log(&claims.web_name), "voted from a push notification");
            Json(json!({"id": id, "status": "voted", "message": format!("Your vote on {id} is recorded; it waits for more approvals.")})).into_response()
        }
        Err(e) => refused(e),
    }
}
