//! Logging in to the page: a reviewer or auditor token, typed once into the login form,
//! becomes a session cookie; the token never appears in a URL, a log or the event log.
//!
//! - The session id is 32 bytes of OS randomness (as tokens are made), sent as the
//!   `dshq_session` cookie with `HttpOnly; SameSite=Strict; Path=/`, and `Secure` when
//!   the request came through a TLS proxy (`X-Forwarded-Proto: https`).
//! - Sessions live in the host's memory: a restart logs everyone out. Each request
//!   authenticates the session's token again ([`crate::app::tokens::authenticate`]), so a
//!   revoked token's sessions stop working at once. A session unused for
//!   [`SESSION_IDLE`] ends. A logout, an expiry or the token's revocation also ends the
//!   page's open live streams ([`crate::host::ends`]).
//! - Every session has its own CSRF token; every POST carries it (a hidden form field,
//!   or the `X-CSRF-Token` header from the script) and it is compared in constant time.
//!   The login form itself is protected by a double-submit cookie (`dshq_login`).
//! - Only reviewer and auditor tokens may log in; an asker token is refused with the
//!   FORBIDDEN code's message.
//! - A mail's link opens a session of its own kind ([`super::link`]): the
//!   `dshq_mail` cookie, the same store of sessions and the same CSRF rule, scoped to the
//!   link's one request and acting as `mail:ADDRESS`. A reviewer's login, when the
//!   browser has one, wins over it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use super::layout::{self, urlencode, Nav};
use super::Shared;
use crate::core::access::Role;
use crate::core::mail_link::{LinkClaims, Refused};
use crate::error::Error;
use crate::host::auth::Caller;
use crate::host::body::Body;
use crate::host::AppState;
use crate::html::{html, Line};
use crate::protocol::{Code, UserQuestionError};
use crate::store::WebToken;

/// The session cookie's name.
pub const COOKIE: &str = "dshq_session";
/// The login form's double-submit cookie.
pub const LOGIN_COOKIE: &str = "dshq_login";
/// The cookie of a mail link's session ([`super::link`]).
pub const MAIL_COOKIE: &str = "dshq_mail";
/// A session unused this long ends, by default (`dshq daemon --web-session-idle`).
pub use crate::host::state::SESSION_IDLE;
/// At most this many sessions are kept (the least recently used goes first).
pub const MAX_SESSIONS: usize = 10_000;

/// One logged-in browser.
#[derive(Clone)]
struct Session {
    /// The token as typed (kept in memory only, to authenticate each request again);
    /// empty for a mail link's session.
    token: String,
    /// A mail link's claims, for a session its link opened.
    mail: Option<crate::core::mail_link::LinkClaims>,
    /// A sign-in through the identity provider: the caller it decided on, and the ID
    /// token (the provider's logout hint; in memory only).
    signed_in: Option<(Caller, String)>,
    csrf: String,
    used: Instant,
    /// When it ends however busy (`--web-session-max` after it began).
    ends: Instant,
}

impl Session {
    fn live(&self, idle: Duration) -> bool {
        self.used.elapsed() < idle && Instant::now() < self.ends
    }
}

/// How long a page session may last: unused, and at all.
#[derive(Debug, Clone, Copy)]
pub struct Lifespan {
    /// Unused this long, it ends (`--web-session-idle`).
    pub idle: Duration,
    /// This long after it began, it ends (`--web-session-max`).
    pub max: Duration,
}

impl Lifespan {
    /// The host's.
    pub fn of(limits: &crate::host::Limits) -> Lifespan {
        Lifespan {
            idle: limits.session_idle,
            max: limits.session_max,
        }
    }
}

/// The sessions the host keeps in memory.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

/// 32 random bytes from the OS, as hex.
pub fn random_hex() -> Result<String, Error> {
    let mut b = [0u8; 32];
    getrandom::getrandom(&mut b)
        .map_err(|e| Error::io("the OS random source", std::io::Error::other(e.to_string())))?;
    Ok(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// Constant-time equality of two secrets.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

impl Sessions {
    /// A session for a mail link's `claims` (its id and CSRF token).
    pub fn create_for_link(
        &self,
        claims: crate::core::mail_link::LinkClaims,
        life: Lifespan,
    ) -> Result<(String, String), Error> {
        self.create_session(String::new(), Some(claims), None, life)
    }

    /// A session for a sign-in through the identity provider: `caller` as it decided,
    /// and its ID token (kept for the provider's logout).
    pub fn create_signed_in(
        &self,
        caller: Caller,
        id_token: String,
        life: Lifespan,
    ) -> Result<(String, String), Error> {
        self.create_session(String::new(), None, Some((caller, id_token)), life)
    }

    fn create(&self, token: String, life: Lifespan) -> Result<(String, String), Error> {
        self.create_session(token, None, None, life)
    }

    fn create_session(
        &self,
        token: String,
        mail: Option<crate::core::mail_link::LinkClaims>,
        signed_in: Option<(Caller, String)>,
        life: Lifespan,
    ) -> Result<(String, String), Error> {
        let (id, csrf) = (random_hex()?, random_hex()?);
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, s| s.live(life.idle));
        if map.len() >= MAX_SESSIONS {
            if let Some(oldest) = map
                .iter()
                .min_by_key(|(_, s)| s.used)
                .map(|(k, _)| k.clone())
            {
                map.remove(&oldest);
            }
        }
        map.insert(
            id.clone(),
            Session {
                token,
                mail,
                signed_in,
                csrf: csrf.clone(),
                used: Instant::now(),
                ends: Instant::now() + life.max,
            },
        );
        Ok((id, csrf))
    }

    fn get(&self, id: &str, idle: Duration) -> Option<Session> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        let s = map.get_mut(id)?;
        if !s.live(idle) {
            map.remove(id);
            return None;
        }
        s.used = Instant::now();
        Some(s.clone())
    }

    /// Whether session `id` is still logged in (without counting this as a use).
    pub fn alive(&self, id: &str, idle: Duration) -> bool {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .is_some_and(|s| s.live(idle))
    }

    /// End session `id`; the ID token of a sign-in through the provider, for its logout.
    pub fn remove(&self, id: &str) -> Option<String> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id)
            .and_then(|s| s.signed_in.map(|(_, id_token)| id_token))
    }
}

/// A cookie's value from the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Whether the request came through a TLS-terminating proxy.
pub fn behind_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// A `Set-Cookie` value: `HttpOnly; SameSite=Strict; Path=/`, `Secure` behind TLS.
pub fn set_cookie(
    headers: &HeaderMap,
    name: &str,
    value: &str,
    max_age: Option<u64>,
) -> HeaderValue {
    let mut c = format!("{name}={value}; HttpOnly; SameSite=Strict; Path=/");
    if let Some(a) = max_age {
        c.push_str(&format!("; Max-Age={a}"));
    }
    if behind_tls(headers) {
        c.push_str("; Secure");
    }
    HeaderValue::from_str(&c).expect("cookie values are hex")
}

/// The logged-in viewer of a page: the session's token authenticated again now. A
/// request without a live session is sent to the login form.
#[derive(Clone)]
pub struct Viewer {
    /// The token's record (role, name, context).
    pub caller: Caller,
    /// The session's CSRF token.
    pub csrf: String,
    /// The shared state of the page.
    pub shared: Arc<Shared>,
    /// The login session's id (what a logout or an expiry ends, see `host::ends`).
    pub session: String,
}

impl Viewer {
    /// The navigation for this viewer.
    pub fn nav(&self) -> Nav<'_> {
        Nav {
            name: &self.caller.token.name,
            role: self.caller.token.role.as_str(),
            csrf: &self.csrf,
        }
    }

    /// Whether the viewer may answer (a reviewer; an auditor only reads).
    pub fn answers(&self) -> bool {
        self.caller.token.role == Role::Reviewer
    }

    /// Check a POST's CSRF token (constant time): 403 FORBIDDEN when missing or wrong.
    // The error is the page to show (built once, returned at once).
    #[allow(clippy::result_large_err)]
    pub fn check_csrf(&self, presented: Option<&str>) -> Result<(), Response> {
        match presented {
            Some(p) if same_secret(p, &self.csrf) => Ok(()),
            _ => {
                tracing::warn!(token = %self.caller.token.name, "page POST refused: bad CSRF token");
                Err(layout::error_page(
                    &UserQuestionError::new(
                        Code::Forbidden,
                        "the form's CSRF token is missing or wrong; reload the page and try again",
                    ),
                    Some(&self.nav()),
                ))
            }
        }
    }

    /// An error page for this viewer.
    pub fn error(&self, e: impl Into<crate::host::error::ApiError>) -> Response {
        layout::error_page(&e.into().0, Some(&self.nav()))
    }
}

impl FromRequestParts<AppState> for Viewer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let shared = parts
            .extensions
            .get::<Arc<Shared>>()
            .cloned()
            .expect("the page's routes carry their shared state");
        // A page asked for without a session: the login, returning there after a
        // provider's sign-in.
        let wanted = parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_string())
            .filter(|p| {
                parts.method == axum::http::Method::GET && p != "/" && !p.starts_with("/live")
            });
        let to_login = || match (&wanted, &state.oidc) {
            (Some(p), Some(_)) => layout::see_other(&format!("/login?next={}", urlencode(p))),
            _ => layout::see_other("/login"),
        };
        let idle = state.limits.session_idle;
        let login = cookie(&parts.headers, COOKIE)
            .map(str::to_string)
            .and_then(|id| Some((shared.sessions.get(&id, idle)?, id)))
            .filter(|(s, _)| s.mail.is_none());
        if let Some((
            Session {
                signed_in: Some((caller, _)),
                csrf,
                ..
            },
            id,
        )) = &login
        {
            // Signed in through the identity provider: as its claims decided, for the
            // session's life.
            return Ok(Viewer {
                caller: caller.clone(),
                csrf: csrf.clone(),
                shared,
                session: id.clone(),
            });
        }
        let Some((s, id)) = login else {
            // No reviewer logged in: a mail link's session, if the browser has one.
            let link = cookie(&parts.headers, MAIL_COOKIE)
                .map(str::to_string)
                .and_then(|id| Some((shared.sessions.get(&id, idle)?, id)));
            return match link {
                Some((
                    Session {
                        mail: Some(claims),
                        csrf,
                        ..
                    },
                    id,
                )) => link_viewer(parts, shared, id, csrf, claims),
                _ => Err(to_login()),
            };
        };
        match Caller::from_token(state, s.token.clone()).await {
            Ok(caller) => Ok(Viewer {
                caller,
                csrf: s.csrf,
                shared,
                session: id,
            }),
            Err(e) if e.0.code == Code::Unauthorized => {
                // Revoked since the login: the session ends with it.
                shared.sessions.remove(&id);
                Err(to_login())
            }
            Err(e) => Err(layout::error_page(&e.0, None)),
        }
    }
}

fn login_form(csrf: &str, message: Option<&UserQuestionError>, oidc: Option<&str>) -> String {
    let body = html! {
        section.login {
            h1 { "Log in" }
            @if let Some(e) = message {
                p.flash.bad role="alert" { span.code { (e.code.as_str()) } " " (Line(&e.message)) }
            }
            @if let Some(href) = oidc {
                p { a #sign-in-oidc .button.primary href=(href) { "Sign in with your identity provider" } }
                p { "Or use a token:" }
            }
            p { "Paste a reviewer or auditor token (" code { "dshq token create --role reviewer --name NAME" } ")." }
            form method="post" action="/login" autocomplete="off" {
                input type="hidden" name="csrf" value=(csrf);
                label for="token" { "Token" } " "
                input #token name="token" type="password" required spellcheck="false" autocomplete="off";
                " " button type="submit" { "Log in" }
            }
        }
    };
    layout::page("Log in", None, None, body)
}

/// Where the login page's provider button leads (`None` without a provider), returning
/// to `next` when it is a path on this site.
pub fn oidc_link(st: &AppState, next: Option<&str>) -> Option<String> {
    st.oidc.as_ref()?;
    Some(
        match next.and_then(|n| crate::core::sign_in::return_path(n).ok()) {
            Some(n) if n != "/" => format!("/login/oidc?next={}", urlencode(&n)),
            _ => "/login/oidc".to_string(),
        },
    )
}

/// The login page (the token form, and the provider's button when `oidc` leads there),
/// with `message` and `status`.
pub fn login_page(
    headers: &HeaderMap,
    status: StatusCode,
    message: Option<&UserQuestionError>,
    oidc: Option<String>,
) -> Response {
    let csrf = match random_hex() {
        Ok(c) => c,
        Err(e) => return layout::error_page(&e.to_user_error(), None),
    };
    let mut r = layout::html(status, login_form(&csrf, message, oidc.as_deref()));
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(headers, LOGIN_COOKIE, &csrf, Some(3600)),
    );
    r
}

/// The query of `GET /login`: where to go once signed in through the provider.
#[derive(serde::Deserialize)]
pub struct LoginQuery {
    next: Option<String>,
}

/// `GET /login`.
pub async fn login_get(
    axum::extract::State(st): axum::extract::State<AppState>,
    headers: HeaderMap,
    axum::extract::Query(q): axum::extract::Query<LoginQuery>,
) -> Response {
    let oidc = oidc_link(&st, q.next.as_deref());
    login_page(&headers, StatusCode::OK, None, oidc)
}

/// The fields of a posted form, in order.
pub fn form_fields(bytes: &[u8]) -> Result<Vec<(String, String)>, UserQuestionError> {
    serde_urlencoded::from_bytes(bytes)
        .map_err(|e| UserQuestionError::new(Code::BadRequest, format!("bad form body: {e}")))
}

/// The last value of `name` in a form.
pub fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// `POST /login`: a reviewer or auditor token becomes a session.
pub async fn login_post(
    axum::extract::State(st): axum::extract::State<AppState>,
    axum::Extension(shared): axum::Extension<Arc<Shared>>,
    peer: Option<axum::Extension<axum::extract::ConnectInfo<std::net::SocketAddr>>>,
    headers: HeaderMap,
    Body(bytes): Body,
) -> Response {
    // An address that gave too many wrong tokens waits first: its token is not looked at.
    let peer = peer.map(|p| p.0 .0.ip());
    if let Some(wait) = peer.and_then(|p| shared.logins.wait(p, std::time::Instant::now())) {
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        let e = UserQuestionError::new(
            Code::Unauthorized,
            format!("too many wrong tokens from this address: try again in {secs} s"),
        );
        tracing::info!(peer = ?peer, secs, "page login held back: too many wrong tokens");
        let mut r = login_page(
            &headers,
            StatusCode::TOO_MANY_REQUESTS,
            Some(&e),
            oidc_link(&st, None),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        return r;
    }
    let fields = match form_fields(&bytes) {
        Ok(f) => f,
        Err(e) => {
            return login_page(
                &headers,
                StatusCode::BAD_REQUEST,
                Some(&e),
                oidc_link(&st, None),
            )
        }
    };
    let expected = cookie(&headers, LOGIN_COOKIE).unwrap_or("");
    let presented = field(&fields, "csrf").unwrap_or("");
    if expected.is_empty() || !same_secret(expected, presented) {
        let e = UserQuestionError::new(
            Code::Forbidden,
            "the login form's CSRF token is missing or wrong; try again",
        );
        return login_page(
            &headers,
            StatusCode::FORBIDDEN,
            Some(&e),
            oidc_link(&st, None),
        );
    }
    let token = field(&fields, "token").unwrap_or("").trim().to_string();
    let caller = match Caller::from_token(&st, token.clone()).await {
        Ok(c) => c,
        Err(e) => {
            if let (Code::Unauthorized, Some(p)) = (e.0.code, peer) {
                shared.logins.wrong(p, std::time::Instant::now());
            }
            let status = crate::host::error::ApiError::status(e.0.code);
            return login_page(&headers, status, Some(&e.0), oidc_link(&st, None));
        }
    };
    if let Some(p) = peer {
        shared.logins.right(p);
    }
    if caller.token.role == Role::Asker {
        let e = Error::Forbidden.to_user_error();
        tracing::info!(token = %caller.token.name, "page login refused: an asker token");
        return login_page(
            &headers,
            StatusCode::FORBIDDEN,
            Some(&e),
            oidc_link(&st, None),
        );
    }
    let (id, _) = match shared.sessions.create(token, Lifespan::of(&st.limits)) {
        Ok(x) => x,
        Err(e) => return layout::error_page(&e.to_user_error(), None),
    };
    tracing::info!(token = %caller.token.name, role = caller.token.role.as_str(), "page login");
    let mut r = layout::see_other("/");
    r.headers_mut()
        .append(header::SET_COOKIE, set_cookie(&headers, COOKIE, &id, None));
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&headers, LOGIN_COOKIE, "", Some(0)),
    );
    r
}

/// `POST /logout`: end the session (and the page streams it holds open).
pub async fn logout(
    axum::extract::State(st): axum::extract::State<AppState>,
    viewer: Viewer,
    headers: HeaderMap,
    Body(bytes): Body,
) -> Response {
    let fields = match form_fields(&bytes) {
        Ok(f) => f,
        Err(e) => return viewer.error(e),
    };
    if let Err(r) = viewer.check_csrf(field(&fields, "csrf")) {
        return r;
    }
    let id_token = viewer.shared.sessions.remove(&viewer.session);
    st.ends.end_session(&viewer.session);
    tracing::info!(token = %viewer.caller.token.name, "page logout");
    // A sign-in through the provider ends there too, when it offers an end-session
    // endpoint.
    let provider_logout = match (id_token, &st.oidc) {
        (Some(t), Some(oidc)) => oidc.end_session_url(&t).await,
        _ => None,
    };
    let mut r = layout::see_other(provider_logout.as_deref().unwrap_or("/login"));
    let cookie_name = if viewer.caller.mail.is_some() {
        MAIL_COOKIE
    } else {
        COOKIE
    };
    r.headers_mut().append(
        header::SET_COOKIE,
        set_cookie(&headers, cookie_name, "", Some(0)),
    );
    r.into_response()
}

/// The paths a link's session may reach: its request's view, confirm and send, the page
/// stream, the logout.
fn in_scope(path: &str, request_id: &str) -> bool {
    let r = format!("/r/{}", urlencode(request_id));
    path == r
        || path.strip_prefix(&r) == Some("/confirm")
        || path.strip_prefix(&r) == Some("/answer")
        || matches!(path, "/live" | "/live/active" | "/logout")
}

/// The viewer of a link's session `id`: refused past the link's expiry (the session
/// ends) and outside its scope.
// The error is the page to show (built once, returned at once).
#[allow(clippy::result_large_err)]
fn link_viewer(
    parts: &Parts,
    shared: Arc<Shared>,
    id: String,
    csrf: String,
    claims: LinkClaims,
) -> Result<Viewer, Response> {
    if crate::clock::now_ms() >= claims.expires_ms {
        shared.sessions.remove(&id);
        let e = Error::from(Refused::Expired {
            at: crate::clock::rfc3339(claims.expires_ms),
        });
        return Err(layout::error_page(&e.to_user_error(), None));
    }
    if !in_scope(parts.uri.path(), &claims.request_id) {
        return Err(layout::error_page(
            &crate::protocol::UserQuestionError::new(
                crate::protocol::Code::Forbidden,
                format!(
                    "this session was opened by a mail's link: it reaches request {} only \
                     (at /r/{}); log in with a reviewer token for the rest of the page",
                    crate::text::one_line(&claims.request_id),
                    urlencode(&claims.request_id)
                ),
            ),
            None,
        ));
    }
    let caller = Caller {
        token: WebToken {
            name: format!("mail:{}", claims.recipient),
            role: Role::Reviewer,
            context: None,
            created_ms: 0,
            revoked_ms: None,
        },
        mail: Some(claims),
        signed_in: None,
    };
    Ok(Viewer {
        caller,
        csrf,
        shared,
        session: id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(path: &str) -> Parts {
        axum::http::Request::builder()
            .uri(path)
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    #[test]
    fn a_link_session_ends_at_the_links_expiry_and_acts_as_the_recipient() {
        let shared = Arc::new(Shared::default());
        let mut claims = LinkClaims {
            request_id: "r1".into(),
            context: "default".into(),
            recipient: "alice@example.com".into(),
            expires_ms: crate::clock::now_ms() + 60_000,
            link_id: "00".into(),
            issued_ms: crate::clock::now_ms(),
        };
        let idle = std::time::Duration::from_secs(60);
        let (id, csrf) = shared
            .sessions
            .create_for_link(claims.clone(), Lifespan { idle, max: idle })
            .unwrap();
        let v = link_viewer(
            &parts("/r/r1"),
            shared.clone(),
            id.clone(),
            csrf.clone(),
            claims.clone(),
        )
        .unwrap_or_else(|_| panic!("a live link's session"));
        assert_eq!(v.caller.actor().as_str(), "mail:alice@example.com");
        assert!(v.caller.sees_id("r1") && !v.caller.sees_id("r2"));
        assert!(link_viewer(
            &parts("/"),
            shared.clone(),
            id.clone(),
            csrf.clone(),
            claims.clone()
        )
        .is_err());
        // Past its expiry: refused, and the session ends.
        claims.expires_ms = crate::clock::now_ms() - 1;
        let r = link_viewer(&parts("/r/r1"), shared.clone(), id.clone(), csrf, claims);
        assert_eq!(r.err().unwrap().status(), StatusCode::GONE);
        assert!(!shared.sessions.alive(&id, idle));
    }

    #[test]
    fn a_session_ends_when_unused_and_at_its_age_however_busy() {
        let sessions = Sessions::default();
        let long = Duration::from_secs(3600);
        let (busy, _) = sessions
            .create(
                "t".into(),
                Lifespan {
                    idle: long,
                    max: Duration::from_millis(200),
                },
            )
            .unwrap();
        let (kept, _) = sessions
            .create(
                "t".into(),
                Lifespan {
                    idle: long,
                    max: long,
                },
            )
            .unwrap();
        // Used all along, the first still ends at its age; the other lives on.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) && sessions.get(&busy, long).is_some() {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(sessions.get(&busy, long).is_none() && !sessions.alive(&busy, long));
        assert!(sessions.get(&kept, long).is_some());
        // Unused past its idle time, a session ends too.
        assert!(!sessions.alive(&kept, Duration::ZERO));
    }

    #[test]
    fn a_link_session_reaches_its_request_only() {
        assert!(in_scope("/r/abc", "abc"));
        assert!(in_scope("/r/abc/confirm", "abc"));
        assert!(in_scope("/r/abc/answer", "abc"));
        assert!(in_scope("/live", "abc"));
        assert!(!in_scope("/r/abcd", "abc"));
        assert!(!in_scope("/r/abc/x", "abc"));
        assert!(!in_scope("/", "abc"));
        assert!(!in_scope("/history", "abc"));
        assert!(!in_scope("/r/other", "abc"));
    }
}
