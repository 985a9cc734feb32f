//! The page as an installable web app: its manifest (`GET /manifest.webmanifest`), its
//! service worker (`GET /sw.js`, at the root so its scope is the whole page), and the
//! subscription of a device to Web Push (`POST /push/subscriptions`) and its removal
//! (`DELETE /push/subscriptions`: "Stop notifying this device", only by the identity that
//! subscribed it).
//!
//! A logged-in reviewer's page offers "Notify this device" when the browser has push and
//! the daemon sends it (`GET /push/key` answers: [`crate::channels::push::routes`]); the
//! script subscribes with the daemon's VAPID public key and posts the subscription here,
//! with the session's CSRF token. It is stored for the session's identity (`web:NAME`)
//! and its person ([`crate::store::queue::push`]); the push channel sends to it while
//! that token may answer in a request's context.
//!
//! What a subscription may name: an `https://` endpoint (or `http://` to a loopback
//! address, a stand-in's), a P-256 key and a 16-byte auth secret (RFC 8291): anything
//! else is `BAD_REQUEST` and nothing is stored, so a reviewer cannot make the daemon post
//! to an arbitrary plain-HTTP address.

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::session::Viewer;
use crate::core::people::{Face, Identity};
use crate::error::Error;
use crate::host::error::ApiError;
use crate::host::AppState;
use crate::store::PushSubscription;

const MANIFEST: &str = include_str!("assets/manifest.webmanifest");
const SERVICE_WORKER: &str = include_str!("assets/sw.js");

/// `GET /manifest.webmanifest`.
pub async fn manifest() -> Response {
    (
        [(header::CONTENT_TYPE, "application/manifest+json")],
        MANIFEST,
    )
        .into_response()
}

/// `GET /sw.js`: the service worker, never cached by the browser's HTTP cache (a new
/// daemon's worker replaces the old at the next visit).
pub async fn service_worker() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        SERVICE_WORKER,
    )
        .into_response()
}

/// A browser's `PushSubscription.toJSON()`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Posted {
    endpoint: String,
    expiration_time: Option<f64>,
    keys: Keys,
}

#[derive(Debug, Deserialize)]
struct Keys {
    p256dh: String,
    auth: String,
}

/// Whether `endpoint` is one the daemon may post to: https, or http to loopback.
pub fn endpoint_allowed(endpoint: &str) -> bool {
    let Ok(uri) = endpoint.parse::<hyper::Uri>() else {
        return false;
    };
    let Some(host) = uri.host() else {
        return false;
    };
    endpoint.len() <= crate::store::queue::push::ENDPOINT_MAX
        && match uri.scheme_str() {
            Some("https") => true,
            Some("http") => crate::net::is_loopback_host(host),
            _ => false,
        }
}

/// Check a posted subscription; the row to store, or why not.
fn parse(
    body: &[u8],
    web_name: &str,
    person: String,
    now: i64,
) -> Result<PushSubscription, String> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let p: Posted = serde_json::from_slice(body)
        .map_err(|e| format!("not a push subscription (endpoint, keys.p256dh, keys.auth): {e}"))?;
    if !endpoint_allowed(&p.endpoint) {
        return Err(
            "the endpoint must be an https:// URL (http:// only to a loopback address)".into(),
        );
    }
    let key_ok = b64
        .decode(p.keys.p256dh.trim_end_matches('='))
        .ok()
        .is_some_and(|k| web_push_native::p256::PublicKey::from_sec1_bytes(&k).is_ok());
    let auth_ok = b64
        .decode(p.keys.auth.trim_end_matches('='))
        .is_ok_and(|a| a.len() == 16);
    if !key_ok || !auth_ok {
        return Err(
            "keys.p256dh must be a P-256 public key and keys.auth 16 bytes, base64url".into(),
        );
    }
    Ok(PushSubscription {
        endpoint: p.endpoint,
        web_name: web_name.to_string(),
        person,
        p256dh: p.keys.p256dh.trim_end_matches('=').to_string(),
        auth: p.keys.auth.trim_end_matches('=').to_string(),
        created_ms: now,
        expires_ms: p.expiration_time.map(|t| t as i64),
    })
}

/// Who may subscribe or remove a device: a reviewer's own login (not a mail link's
/// session, not an auditor) presenting its session's CSRF token; its web token's name.
fn device_owner(
    viewer: &Viewer,
    headers: &HeaderMap,
) -> std::result::Result<String, Box<Response>> {
    let presented = headers.get("x-csrf-token").and_then(|v| v.to_str().ok());
    viewer.check_csrf(presented).map_err(Box::new)?;
    if viewer.caller.mail.is_some() || !viewer.answers() {
        return Err(Box::new(ApiError::from(Error::Forbidden).into_response()));
    }
    Ok(viewer.caller.token.name.clone())
}

/// `POST /push/subscriptions` (JSON, header `X-CSRF-Token`): subscribe this device for
/// the logged-in reviewer. 201 with the person it was stored for.
pub async fn subscribe(
    State(st): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    crate::host::body::Body(body): crate::host::body::Body,
) -> Response {
    let name = match device_owner(&viewer, &headers) {
        Ok(name) => name,
        Err(r) => return *r,
    };
    let r = st
        .db
        .write(move |store| {
            let person = store.person_of(&Identity::new(Face::Web, &name));
            let now = store.clock_now()?;
            let s = parse(&body, &name, person.clone(), now)
                .map_err(|why| Error::question(crate::protocol::Code::BadRequest, why))?;
            store.push_subscribe(&s)?;
            Ok(person)
        })
        .await;
    match r {
        Ok(person) => {
            tracing::info!(token = %viewer.caller.token.name, person = %person, "push: a device subscribed");
            (
                StatusCode::CREATED,
                Json(json!({"subscribed": true, "person": person})),
            )
                .into_response()
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// What the page posts to remove a device: its endpoint.
#[derive(Debug, Deserialize)]
struct Unsubscribe {
    endpoint: String,
}

/// `DELETE /push/subscriptions` (JSON `{"endpoint"}`, header `X-CSRF-Token`): stop
/// notifying this device. Only the identity that subscribed it removes it: anyone else's
/// device, or one not subscribed, is `NOT_FOUND` and left as it is. 200
/// `{"unsubscribed": true}`.
pub async fn unsubscribe(
    State(st): State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    crate::host::body::Body(body): crate::host::body::Body,
) -> Response {
    let name = match device_owner(&viewer, &headers) {
        Ok(name) => name,
        Err(r) => return *r,
    };
    let u: Unsubscribe = match serde_json::from_slice(&body) {
        Ok(u) => u,
        Err(e) => {
            return ApiError::from(Error::question(
                crate::protocol::Code::BadRequest,
                format!("give {{\"endpoint\": URL}}: {e}"),
            ))
            .into_response()
        }
    };
    let by = name.clone();
    let r = st
        .db
        .write(move |store| store.push_unsubscribe(&u.endpoint, Some(&by)))
        .await;
    match r {
        Ok(true) => {
            tracing::info!(token = %name, "push: a device unsubscribed");
            Json(json!({"unsubscribed": true})).into_response()
        }
        Ok(false) => ApiError::from(Error::question(
            crate::protocol::Code::NotFound,
            "no subscription of yours at that endpoint",
        ))
        .into_response(),
        Err(e) => ApiError::from(e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_endpoints_are_taken() {
        assert!(endpoint_allowed("https://fcm.googleapis.com/fcm/send/abc"));
        assert!(endpoint_allowed("http://127.0.0.1:9/push/1"));
        assert!(!endpoint_allowed("http://10.0.0.1/push"));
        assert!(!endpoint_allowed("file:///etc/passwd"));
        assert!(!endpoint_allowed("not a url"));
    }
}
