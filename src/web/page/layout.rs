//! The page's shell (a maud template) and its headers. Every value that reaches HTML
//! follows the one rule of [`crate::html`]: asker-supplied text goes in as
//! [`crate::html::Line`] or [`crate::html::Block`], made visible and escaped; nothing
//! asker-supplied is ever written raw, and nothing is dropped.
//!
//! Every page response carries a strict Content-Security-Policy ([`CSP`]): no inline
//! script or style can run even if an escaping bug let markup through, and the one script
//! and one style sheet are served by the host itself ([`asset`]).

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

pub use crate::html::{escape, urlencode};
use crate::html::{html, Block, Line, Markup, PreEscaped};
use crate::protocol::UserQuestionError;

/// The Content-Security-Policy of every page response.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
connect-src 'self'; manifest-src 'self'; worker-src 'self'; form-action 'self'; \
frame-ancestors 'none'; base-uri 'none'";

const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");
const ICON_SVG: &str = include_str!("assets/icon.svg");

/// Untrusted text for one line, escaped (for markup still built as a string).
pub fn text(s: &str) -> String {
    html! { (Line(s)) }.into_string()
}

/// Untrusted text over several lines, escaped (for markup still built as a string).
pub fn block(s: &str) -> String {
    html! { (Block(s)) }.into_string()
}

/// What the navigation shows about who is logged in.
pub struct Nav<'a> {
    /// The token's name.
    pub name: &'a str,
    /// Its role.
    pub role: &'a str,
    /// The session's CSRF token (for the logout form and the script's POSTs).
    pub csrf: &'a str,
}

/// A whole page: `title` (untrusted, escaped here), `body` (markup), and the navigation
/// when someone is logged in. `live` names what the page stream follows (`queue`, or a
/// context to keep the provider lease of); `None`: no live updates.
pub fn page(title: &str, nav: Option<&Nav<'_>>, live: Option<&str>, body: Markup) -> String {
    page_of(title, nav, live, None, body)
}

/// A page that goes on to `then` (a path on this site) at once: the step after a
/// provider's sign-in, so the next request is one this site's page makes.
pub fn page_then(title: &str, then: &str, body: Markup) -> String {
    page_of(title, None, None, Some(then), body)
}

fn page_of(
    title: &str,
    nav: Option<&Nav<'_>>,
    live: Option<&str>,
    then: Option<&str>,
    body: Markup,
) -> String {
    html! {
        (PreEscaped("<!DOCTYPE html>\n"))
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (Line(title)) " · dshq" }
                link rel="stylesheet" href="/assets/app.css";
                link rel="manifest" href="/manifest.webmanifest";
                link rel="icon" href="/assets/icon.svg" type="image/svg+xml";
                meta name="theme-color" content="#1f2937";
                @if let Some(n) = nav { meta name="dshq-csrf" content=(n.csrf); }
                @if let Some(l) = live { meta name="dshq-live" content=(l); }
                @if let Some(t) = then { meta http-equiv="refresh" content={ "0;url=" (t) }; }
                script src="/assets/app.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "dshq" }
                    @if let Some(n) = nav {
                        nav { a href="/" { "Queue" } a href="/history" { "History" } a href="/away" { "Away" } }
                        // Shown by the script when this browser can take push messages and
                        // the daemon sends them.
                        button #push-subscribe type="button" hidden { "Notify this device" }
                        button #push-unsubscribe type="button" hidden { "Stop notifying this device" }
                        form.logout method="post" action="/logout" {
                            span.who { (Line(n.name)) " (" (Line(n.role)) ")" }
                            input type="hidden" name="csrf" value=(n.csrf);
                            button type="submit" { "Log out" }
                        }
                    }
                }
                main { (body) }
            }
        }
        "\n"
    }
    .into_string()
}

/// The security headers every page response carries.
pub fn secure_headers(r: &mut Response) {
    let hs = r.headers_mut();
    let pairs: [(HeaderName, &'static str); 6] = [
        (header::CONTENT_SECURITY_POLICY, CSP),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            "same-origin",
        ),
    ];
    for (k, v) in pairs {
        hs.insert(k, HeaderValue::from_static(v));
    }
}

/// An HTML response with `status`.
pub fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

/// An error page: the stable code and its message, with the status the API gives it.
pub fn error_page(e: &UserQuestionError, nav: Option<&Nav<'_>>) -> Response {
    let status = crate::host::error::ApiError::status(e.code);
    let body = html! {
        section.error {
            h1 { (status.canonical_reason().unwrap_or("Error")) }
            p.code { (e.code.as_str()) }
            p { (Line(&e.message)) }
            p { a href="/" { "Back to the queue" } }
        }
    };
    html(status, page("Error", nav, None, body))
}

/// A redirect after a POST (303: the browser follows with a GET).
pub fn see_other(to: &str) -> Response {
    (
        StatusCode::SEE_OTHER,
        [(
            header::LOCATION,
            HeaderValue::from_str(to).unwrap_or(HeaderValue::from_static("/")),
        )],
    )
        .into_response()
}

/// `GET /assets/{name}`: the embedded script, style sheet and icon.
pub async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    let (ty, body) = match name.as_str() {
        "app.js" => ("text/javascript; charset=utf-8", APP_JS),
        "app.css" => ("text/css; charset=utf-8", APP_CSS),
        "icon.svg" => ("image/svg+xml", ICON_SVG),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    ([(header::CONTENT_TYPE, ty)], body).into_response()
}

/// A duration for a person, coarse (`3m`, `2h`, `4d`).
pub fn coarse(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}
