//! The page's shell and its one escaping rule: every value that reaches HTML goes through
//! [`text`] (one line) or [`block`] (line breaks kept), which first make control characters
//! and terminal escapes visible with the project's sanitiser ([`crate::text`]) and then
//! HTML-escape the result. Nothing asker-supplied is ever written raw, and nothing is
//! dropped: a `<script>` shows as the characters `<script>`.
//!
//! Every page response carries a strict Content-Security-Policy ([`CSP`]): no inline
//! script or style can run even if an escaping bug let markup through, and the one script
//! and one style sheet are served by the host itself ([`asset`]).

use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::protocol::UserQuestionError;

/// The Content-Security-Policy of every page response.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const APP_JS: &str = include_str!("assets/app.js");
const APP_CSS: &str = include_str!("assets/app.css");

/// HTML-escape `s` (the five characters that matter in text and quoted attributes).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Untrusted text for one line: control characters made visible, then HTML-escaped.
pub fn text(s: &str) -> String {
    escape(&crate::text::one_line(s))
}

/// Untrusted text over several lines (shown in a `pre`-like block): line breaks kept,
/// every other control character made visible, then HTML-escaped.
pub fn block(s: &str) -> String {
    escape(&crate::text::multi_line(s))
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

/// A whole page: `title` (untrusted, escaped here), `body` (already-escaped HTML), and
/// the navigation when someone is logged in. `live` names what the page stream follows
/// (`queue`, or a context to keep the provider lease of); `None`: no live updates.
pub fn page(title: &str, nav: Option<&Nav<'_>>, live: Option<&str>, body: &str) -> String {
    let mut h = String::with_capacity(body.len() + 2048);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    h.push_str(&format!("<title>{} · dshq</title>", text(title)));
    h.push_str("<link rel=\"stylesheet\" href=\"/assets/app.css\">");
    if let Some(n) = nav {
        h.push_str(&format!(
            "<meta name=\"dshq-csrf\" content=\"{}\">",
            escape(n.csrf)
        ));
    }
    if let Some(l) = live {
        h.push_str(&format!(
            "<meta name=\"dshq-live\" content=\"{}\">",
            escape(l)
        ));
    }
    h.push_str("<script src=\"/assets/app.js\" defer></script></head><body>");
    h.push_str("<header class=\"top\"><a class=\"brand\" href=\"/\">dshq</a>");
    if let Some(n) = nav {
        h.push_str("<nav><a href=\"/\">Queue</a><a href=\"/history\">History</a></nav>");
        h.push_str(&format!(
            "<form class=\"logout\" method=\"post\" action=\"/logout\"><span class=\"who\">{} ({})</span>\
<input type=\"hidden\" name=\"csrf\" value=\"{}\"><button type=\"submit\">Log out</button></form>",
            text(n.name),
            text(n.role),
            escape(n.csrf)
        ));
    }
    h.push_str("</header><main>");
    h.push_str(body);
    h.push_str("</main></body></html>\n");
    h
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
    let body = format!(
        "<section class=\"error\"><h1>{}</h1><p class=\"code\">{}</p><p>{}</p>\
<p><a href=\"/\">Back to the queue</a></p></section>",
        escape(status.canonical_reason().unwrap_or("Error")),
        escape(e.code.as_str()),
        text(&e.message)
    );
    html(status, page("Error", nav, None, &body))
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

/// `GET /assets/{name}`: the embedded script and style sheet.
pub async fn asset(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    let (ty, body) = match name.as_str() {
        "app.js" => ("text/javascript; charset=utf-8", APP_JS),
        "app.css" => ("text/css; charset=utf-8", APP_CSS),
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

/// A path segment, percent-encoded.
pub fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_escapes_are_shown_as_text() {
        assert_eq!(
            text("<script>alert('x')</script>\u{1b}[31m&"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\\x1b[31m&amp;"
        );
        assert_eq!(block("a\n<b>\u{7}"), "a\n&lt;b&gt;\\x07");
        assert_eq!(escape("\"q\""), "&quot;q&quot;");
    }
}
