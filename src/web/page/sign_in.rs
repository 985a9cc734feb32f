//! Signing in to the page through the identity provider (OpenID Connect), beside the token
//! login of [`super::session`].
//!
//! - `GET /login/oidc?next=PATH` starts a sign-in: the return path must be a path on this
//!   site ([`return_path`]: no open redirect), the host keeps the flow (state, nonce,
//!   PKCE verifier, return path) under a random id sent as the `dshq_oidc` cookie
//!   (`SameSite=Lax`, as the provider's redirect back is a cross-site navigation; scoped
//!   to `/login/oidc`, ten minutes), and the browser goes to the provider.
//! - `GET /login/oidc/callback?code&state` finishes it: the flow is taken (one use: a
//!   second callback with it, a replay, finds none), its state compared in constant time,
//!   the code exchanged and the ID token verified ([`crate::host::oidc`]), the claims
//!   judged by the operator's rules ([`crate::core::sign_in`]); the sign-in and what it
//!   decided are recorded in the event log ([`crate::app::sign_in`]); then a page session
//!   as a token's login makes (CSRF token, cookie flags, idle and absolute expiry) acting
//!   as `oidc:PERSON@SUBJECT`. The browser continues to the return path from a page of
//!   this site, so the strict session cookie goes with it.
//! - Any refusal is the login page with its stable code, and nothing is recorded as the
//!   person: neither a session nor an event.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::Extension;

use super::layout;
use super::session::{cookie, random_hex, same_secret};
use super::Shared;
use crate::core::sign_in::{return_path, Refused, Via};
use crate::error::Error;
use crate::host::auth::Caller;
use crate::host::oidc::Pending;
use crate::host::AppState;
use crate::html::html;

/// The cookie naming a sign-in under way.
pub const FLOW_COOKIE: &str = "dshq_oidc";
/// How long a sign-in may take at the provider.
const FLOW_TTL: Duration = Duration::from_secs(600);
/// At most this many sign-ins under way (the oldest goes first).
const MAX_FLOWS: usize = 10_000;

/// The sign-ins under way, by the id their cookie holds.
#[derive(Default)]
pub struct Flows {
    map: Mutex<HashMap<String, Pending>>,
}

impl Flows {
    fn put(&self, id: String, p: Pending) {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, f| f.started.elapsed() < FLOW_TTL);
        if map.len() >= MAX_FLOWS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, f)| f.started)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(id, p);
    }

    /// Take flow `id` (it is used once), if it is still young enough.
    fn take(&self, id: &str) -> Option<Pending> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(id).filter(|f| f.started.elapsed() < FLOW_TTL)
    }
}

fn flow_cookie(headers: &HeaderMap, value: &str, max_age: u64) -> HeaderValue {
    let mut c = format!(
        "{FLOW_COOKIE}={value}; HttpOnly; SameSite=Lax; Path=/login/oidc; Max-Age={max_age}"
    );
    if super::session::behind_tls(headers) {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).expect("cookie values are hex")
}

/// The login page with a refusal: its code and message, its status; logged without
/// anything secret.
fn refused(headers: &HeaderMap, r: Refused) -> Response {
    let e = Error::from(r).to_user_error();
    tracing::info!(code = e.code.as_str(), reason = %e.message, "page sign-in refused");
    let status = crate::host::error::ApiError::status(e.code);
    super::session::login_page(headers, status, Some(&e), Some("/login/oidc".into()))
}

/// The query of `GET /login/oidc`.
#[derive(serde::Deserialize)]
pub struct StartQuery {
    next: Option<String>,
}

/// `GET /login/oidc`: to the provider.
pub async fn start(
    State(st): State<AppState>,
    Extension(shared): Extension<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<StartQuery>,
) -> Response {
    let Some(oidc) = st.oidc.clone() else {
        return layout::error_page(&Error::NotFound("/login/oidc".into()).to_user_error(), None);
    };
    let return_to = match return_path(q.next.as_deref().unwrap_or("/")) {
        Ok(p) => p,
        Err(r) => return refused(&headers, r),
    };
    let (url, pending) = match oidc.start(return_to).await {
        Ok(x) => x,
        Err(r) => return refused(&headers, r),
    };
    let id = match random_hex() {
        Ok(id) => id,
        Err(e) => return layout::error_page(&e.to_user_error(), None),
    };
    shared.flows.put(id.clone(), pending);
    let mut r = layout::see_other(&url);
    r.headers_mut().append(
        header::SET_COOKIE,
        flow_cookie(&headers, &id, FLOW_TTL.as_secs()),
    );
    r
}

/// The query of the provider's redirect back.
#[derive(serde::Deserialize)]
pub struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    /// The issuer, when the provider says it (RFC 9207): a mix-up is caught here.
    iss: Option<String>,
}

/// `GET /login/oidc/callback`: the provider's answer becomes a session.
pub async fn callback(
    State(st): State<AppState>,
    Extension(shared): Extension<Arc<Shared>>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let mut r = match finish(&st, &shared, &headers, q).await {
        Ok(r) => r,
        Err(r) => refused(&headers, r),
    };
    // The flow is over either way.
    r.headers_mut()
        .append(header::SET_COOKIE, flow_cookie(&headers, "", 0));
    r
}

async fn finish(
    st: &AppState,
    shared: &Shared,
    headers: &HeaderMap,
    q: CallbackQuery,
) -> Result<Response, Refused> {
    let oidc = st
        .oidc
        .clone()
        .ok_or_else(|| Refused::Provider("no identity provider is configured".into()))?;
    let pending = cookie(headers, FLOW_COOKIE)
        .and_then(|id| shared.flows.take(id))
        .ok_or(Refused::State)?;
    if !q
        .state
        .as_deref()
        .is_some_and(|s| same_secret(s, &pending.state))
    {
        return Err(Refused::State);
    }
    if let Some(iss) = q.iss.as_deref() {
        let want = oidc.settings().issuer.trim_end_matches('/');
        if iss.trim_end_matches('/') != want {
            return Err(Refused::Issuer(format!(
                "the callback names {} as its issuer",
                crate::text::for_log(iss)
            )));
        }
    }
    if let Some(e) = q.error {
        return Err(Refused::Provider(format!(
            "the provider said {}",
            crate::text::for_log(&e)
        )));
    }
    let code = q
        .code
        .ok_or_else(|| Refused::Provider("the provider sent no code".into()))?;
    let return_to = pending.return_to.clone();
    let verified = oidc.finish(pending, &code).await?;
    let decision = oidc
        .settings()
        .mapping
        .decide(&verified.claims, st.root.people())?;
    let claims = verified.claims.clone();
    let recorded = {
        let (decision, claims) = (decision.clone(), claims.clone());
        st.db
            .write(move |store| crate::app::sign_in::record(store, &decision, &claims, Via::Page))
            .await
    };
    if let Err(e) = recorded {
        return Err(Refused::Provider(format!(
            "the sign-in could not be recorded: {e}"
        )));
    }
    let caller = Caller::signed_in(&decision);
    let (id, _) = shared
        .sessions
        .create_signed_in(
            caller,
            verified.id_token,
            super::session::Lifespan::of(&st.limits),
        )
        .map_err(|e| Refused::Provider(e.to_string()))?;
    tracing::info!(
        person = %decision.person,
        role = decision.role.as_str(),
        "page sign-in through the identity provider"
    );
    let body = html! {
        section.login {
            h1 { "Signed in" }
            p { "Signed in as " b { (decision.person) } " (" (decision.role.as_str()) "). " a #continue href=(return_to) { "Continue" } }
        }
    };
    let page = layout::page_then("Signed in", &return_to, body);
    let mut r = layout::html(StatusCode::OK, page);
    r.headers_mut().append(
        header::SET_COOKIE,
        super::session::set_cookie(headers, super::session::COOKIE, &id, None),
    );
    Ok(r)
}
