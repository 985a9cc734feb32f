//! The reviewer's page through a real socket, without a browser: the real daemon with
//! `--listen 0`, tokens from the real `dshq token create`, a plain HTTP client carrying
//! the cookies by hand. Login refused for askers and wrong tokens, the cookie's flags,
//! the CSP header, CSRF on every POST (refused, and nothing changed), a revoked token's
//! session, an auditor's read-only view, a terminal reviewer's context, bounded bodies.

use std::time::Duration;

use crate::api::{host, token, Host};
use crate::helpers::{simple_request, wait_until, Env, DEADLINE};

/// A response of the page.
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn set_cookies(&self) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
            .map(|(_, v)| v.as_str())
            .collect()
    }
    /// The value of the first hidden `csrf` field.
    pub fn csrf_field(&self) -> String {
        let at = self
            .body
            .find("name=\"csrf\" value=\"")
            .unwrap_or_else(|| panic!("no csrf field in {}", self.body));
        let rest = &self.body[at + 19..];
        rest[..rest.find('"').unwrap()].to_string()
    }
}

/// One call with `cookies` and extra `headers`, never following redirects.
pub fn call(
    method: &str,
    url: &str,
    cookies: &str,
    headers: &[(&str, &str)],
    form: Option<&[(&str, &str)]>,
) -> Resp {
    let agent = ureq::AgentBuilder::new()
        .redirects(0)
        .timeout(Duration::from_secs(60))
        .build();
    let mut req = agent.request(method, url);
    if !cookies.is_empty() {
        req = req.set("Cookie", cookies);
    }
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let r = match form {
        Some(f) => req.send_form(f),
        None => req.call(),
    };
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let mut headers = Vec::new();
    for name in resp.headers_names() {
        for v in resp.all(&name) {
            headers.push((name.clone(), v.to_string()));
        }
    }
    let body = resp.into_string().unwrap_or_default();
    Resp {
        status,
        headers,
        body,
    }
}

/// `name=value` of a Set-Cookie header.
fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().trim().to_string()
}

/// A logged-in page session: its cookie and CSRF token.
pub struct Session {
    pub base: String,
    pub cookie: String,
    pub csrf: String,
}

impl Session {
    pub fn get(&self, path: &str) -> Resp {
        call(
            "GET",
            &format!("{}{path}", self.base),
            &self.cookie,
            &[],
            None,
        )
    }
    pub fn post(&self, path: &str, form: &[(&str, &str)]) -> Resp {
        call(
            "POST",
            &format!("{}{path}", self.base),
            &self.cookie,
            &[],
            Some(form),
        )
    }
}

/// Try to log in with `token`: the login response.
pub fn try_login(h: &Host, token: &str, headers: &[(&str, &str)]) -> Resp {
    let form = call("GET", &format!("{}/login", h.base), "", headers, None);
    assert_eq!(form.status, 200);
    let login_cookie = form
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("dshq_login="))
        .map(cookie_pair)
        .expect("the login form sets its cookie");
    let csrf = form.csrf_field();
    call(
        "POST",
        &format!("{}/login", h.base),
        &login_cookie,
        headers,
        Some(&[("csrf", &csrf), ("token", token)]),
    )
}

/// Log in with `token`; panics unless it works.
pub fn login(h: &Host, token: &str) -> Session {
    let r = try_login(h, token, &[]);
    assert_eq!(r.status, 303, "login failed: {}", r.body);
    let cookie = r
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("dshq_session="))
        .map(cookie_pair)
        .expect("a session cookie");
    let s = Session {
        base: h.base.clone(),
        cookie,
        csrf: String::new(),
    };
    let q = s.get("/");
    assert_eq!(q.status, 200, "{}", q.body);
    Session {
        csrf: q.csrf_field(),
        ..s
    }
}

fn status_of(env: &Env, id: &str) -> String {
    env.json(&["show", id]).ok().json()["status"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn wait_pending(env: &Env, id: &str) {
    assert!(
        wait_until(DEADLINE, || env.json(&["show", id]).code == 0),
        "{id} was not accepted"
    );
}

#[test]
fn login_takes_reviewers_and_auditors_only_with_strict_cookies_and_csp() {
    let env = Env::new();
    let asker = token(&env, "asker", "ann", None);
    let reviewer = token(&env, "reviewer", "rita", None);
    let auditor = token(&env, "auditor", "audrey", None);
    let h = host(&env, &[]);

    // Not logged in: every page sends you to the login form, with the CSP header.
    let r = call("GET", &format!("{}/", h.base), "", &[], None);
    assert_eq!((r.status, r.header("location")), (303, Some("/login")));
    let form = call("GET", &format!("{}/login", h.base), "", &[], None);
    let csp = form
        .header("content-security-policy")
        .expect("a CSP header");
    for part in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(part), "{csp}");
    }
    assert!(!form.body.contains("<script>"), "no inline script");

    // A wrong token: 401, no session.
    let wrong = format!("dshq_{}", "0".repeat(64));
    let r = try_login(&h, &wrong, &[]);
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("UNAUTHORIZED"), "{}", r.body);
    assert!(!r
        .set_cookies()
        .iter()
        .any(|c| c.starts_with("dshq_session=")));
    // An asker token: refused with FORBIDDEN's message.
    let r = try_login(&h, &asker, &[]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(
        r.body.contains("FORBIDDEN") && r.body.contains("this token&#39;s role may not do that"),
        "{}",
        r.body
    );
    assert!(!r
        .set_cookies()
        .iter()
        .any(|c| c.starts_with("dshq_session=")));
    // The login form without its cookie: refused.
    let r = call(
        "POST",
        &format!("{}/login", h.base),
        "",
        &[],
        Some(&[("csrf", "x"), ("token", &reviewer)]),
    );
    assert_eq!(r.status, 403);

    // A reviewer: a session cookie, HttpOnly, SameSite=Strict, Path=/, not Secure on
    // plain HTTP; Secure behind a TLS proxy.
    let r = try_login(&h, &reviewer, &[]);
    assert_eq!(r.status, 303);
    let c = r
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("dshq_session="))
        .unwrap()
        .to_string();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(c.contains(flag), "{c}");
    }
    assert!(!c.contains("Secure"), "{c}");
    let r = try_login(&h, &reviewer, &[("X-Forwarded-Proto", "https")]);
    let c = r
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("dshq_session="))
        .unwrap()
        .to_string();
    assert!(c.contains("; Secure"), "{c}");
    // The token is in no log line.
    assert!(!h.daemon.log_text().contains(&reviewer));

    // An auditor logs in too; the queue says read-only.
    let a = login(&h, &auditor);
    let q = a.get("/");
    assert!(q.body.contains("auditor: read-only"), "{}", q.body);
    assert!(q.header("content-security-policy").is_some());
    let s = login(&h, &reviewer);
    let hist = s.get("/history");
    assert_eq!(hist.status, 200);
    assert!(hist.body.contains("<svg") || hist.body.contains("No answered requests"));
}

#[test]
fn a_post_without_its_csrf_token_is_refused_and_changes_nothing() {
    let env = Env::new();
    let reviewer = token(&env, "reviewer", "rita", None);
    let h = host(&env, &["--max-bytes", "8192"]);
    env.drop_file("r1.json", simple_request("r1").to_string().as_bytes());
    wait_pending(&env, "r1");
    let s = login(&h, &reviewer);
    let view = s.get("/r/r1");
    assert_eq!(view.status, 200);
    assert!(view.body.contains("Which database?"));
    let answer = r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#;

    for bad in [None, Some("0000"), Some(&"f".repeat(64)[..])] {
        let mut form = vec![("answer", answer)];
        if let Some(b) = bad {
            form.push(("csrf", b));
        }
        let r = s.post("/r/r1/answer", &form);
        assert_eq!(r.status, 403, "{bad:?}: {}", r.body);
        assert!(r.body.contains("CSRF"), "{}", r.body);
        let r = s.post("/r/r1/confirm", &[("q0", "o1")]);
        assert_eq!(r.status, 403);
        let r = s.post("/logout", &form);
        assert_eq!(r.status, 403);
    }
    assert_eq!(status_of(&env, "r1"), "pending");
    assert!(env.outcome("r1").is_none());

    // With it: the summary first, then the answer, recorded as web:rita.
    let sum = s.post("/r/r1/confirm", &[("csrf", &s.csrf), ("q0", "o1")]);
    assert_eq!(sum.status, 200, "{}", sum.body);
    assert!(sum.body.contains("Send this answer?") && sum.body.contains("SQLite"));
    assert_eq!(
        status_of(&env, "r1"),
        "pending",
        "the summary sends nothing"
    );
    let r = s.post("/r/r1/answer", &[("csrf", &s.csrf), ("answer", answer)]);
    assert_eq!(r.status, 303, "{}", r.body);
    let o = env.wait_outcome("r1");
    assert_eq!(o["answer"]["answers"][0]["selected"][0], "SQLite");
    assert_eq!(o["provider"], "web:rita");
    // The request's page now shows what was answered, and by whom, with no form.
    let v = s.get("/r/r1");
    assert!(
        v.body.contains("Answered by <strong>web:rita</strong>") && v.body.contains("SQLite"),
        "{}",
        v.body
    );
    assert!(!v.body.contains("Review the answer"));

    // Bodies are bounded like inbox files (`--max-bytes`).
    let big = "x".repeat(20_000);
    let r = s.post("/r/r1/confirm", &[("csrf", &s.csrf), ("q0.other", &big)]);
    assert_eq!(r.status, 413);
}

#[test]
fn revoked_tokens_end_their_sessions_and_auditors_and_terminal_holders_get_no_form() {
    let env = Env::new();
    let reviewer = token(&env, "reviewer", "rita", None);
    let auditor = token(&env, "auditor", "audrey", None);
    let h = host(&env, &[]);
    env.drop_file("r1.json", simple_request("r1").to_string().as_bytes());
    let mut other = simple_request("t1");
    other["context"] = "term".into();
    env.drop_file("t1.json", other.to_string().as_bytes());
    wait_pending(&env, "r1");
    wait_pending(&env, "t1");

    // An auditor sees the request, no form, and cannot confirm one.
    let a = login(&h, &auditor);
    let v = a.get("/r/r1");
    assert_eq!(v.status, 200);
    assert!(
        v.body.contains("read-only") && !v.body.contains("Review the answer"),
        "{}",
        v.body
    );
    let r = a.post("/r/r1/confirm", &[("csrf", &a.csrf), ("q0", "o0")]);
    assert_eq!(r.status, 403);

    // A terminal reviewer holds context "term": the page says who and is read-only there.
    let _lease = env.register("alice-term", "term", "5m");
    let s = login(&h, &reviewer);
    let v = s.get("/r/t1");
    assert!(
        v.body.contains("alice-term") && !v.body.contains("Review the answer"),
        "{}",
        v.body
    );
    let q = s.get("/?context=term");
    assert!(
        q.body
            .contains("held by the terminal reviewer <strong>alice-term</strong>"),
        "{}",
        q.body
    );
    // The default context is the host's: a form.
    assert!(s.get("/r/r1").body.contains("Review the answer"));

    // Revoked: the session stops working at once.
    env.json(&["token", "revoke", "rita"]).ok();
    let r = s.get("/");
    assert_eq!((r.status, r.header("location")), (303, Some("/login")));
    let r = s.post(
        "/r/r1/answer",
        &[
            ("csrf", &s.csrf),
            (
                "answer",
                r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#,
            ),
        ],
    );
    assert_eq!(r.status, 303);
    assert_eq!(status_of(&env, "r1"), "pending");
}

fn web_leases(env: &Env) -> usize {
    env.json(&["provider", "status"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["name"] == "web" && l["live"] == true)
        .count()
}

#[test]
fn the_host_holds_the_lease_while_a_page_is_open_and_keeps_an_api_callers_claim_when_the_last_leaves(
) {
    use std::io::{BufRead, BufReader};
    let env = Env::new();
    let reviewer = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    env.drop_file("r1.json", simple_request("r1").to_string().as_bytes());
    wait_pending(&env, "r1");
    let s = login(&h, &reviewer);
    assert_eq!(web_leases(&env), 0, "nobody has opened a request yet");

    // Opening a request makes the host the context's provider; its page stream keeps it.
    assert!(s.get("/r/r1").body.contains("Review the answer"));
    assert_eq!(web_leases(&env), 1);
    let open_stream = || {
        let r = ureq::get(&format!("{}/live?context=default", h.base))
            .set("Cookie", &s.cookie)
            .call()
            .expect("the page stream");
        assert_eq!(r.header("content-type"), Some("text/event-stream"));
        let mut lines = BufReader::new(r.into_reader());
        let mut first = String::new();
        lines.read_line(&mut first).unwrap();
        assert_eq!(first.trim(), "event: ready");
        lines
    };
    let mut a = open_stream();
    let b = open_stream();
    // A second tab closes; one page is still open on the context.
    drop(b);
    let released = "no reviewer left: released the context's provider lease";
    // An answer over the API in the same context while a page is open: the stream hears it.
    let r = crate::api::call(
        "POST",
        &h.url("/requests/r1/answer"),
        Some(&reviewer),
        Some(br#"{"answers":[{"id":"db","selected":["Postgres"]}]}"#),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    let mut seen = String::new();
    while !seen.contains("\"status\":\"answered\"") {
        let mut line = String::new();
        assert!(a.read_line(&mut line).unwrap() > 0, "the stream ended");
        seen.push_str(&line);
    }
    assert!(
        seen.contains("event: change") && seen.contains("\"id\":\"r1\""),
        "{seen}"
    );
    // A second reviewer on the page shares the same lease; the answer records who gave it.
    env.drop_file("r2.json", simple_request("r2").to_string().as_bytes());
    wait_pending(&env, "r2");
    let sam = login(&h, &token(&env, "reviewer", "sam", None));
    assert!(sam.get("/r/r2").body.contains("Review the answer"));
    let r = sam.post(
        "/r/r2/answer",
        &[
            ("csrf", &sam.csrf),
            (
                "answer",
                r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#,
            ),
        ],
    );
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(env.wait_outcome("r2")["provider"], "web:sam");
    assert_eq!(env.wait_outcome("r1")["provider"], "web:rita");
    assert!(!h.daemon.log_text().contains(released));
    assert_eq!(web_leases(&env), 1);
    // A claim made over the JSON API, by a caller with no page open.
    env.drop_file("r3.json", simple_request("r3").to_string().as_bytes());
    wait_pending(&env, "r3");
    let r = crate::api::call(
        "POST",
        &h.url("/requests/r3/claim"),
        Some(&reviewer),
        Some(b"{}"),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    // The last page leaves. The API acted through the lease, so it is kept (until the idle
    // release) and the API's claim with it, instead of being dropped under that caller.
    drop(a);
    let kept = "the last page left, but the API used the lease: kept until idle";
    assert!(
        wait_until(DEADLINE, || h.daemon.log_text().contains(kept)),
        "{}",
        h.daemon.log_text()
    );
    assert!(!h.daemon.log_text().contains(released));
    assert_eq!(web_leases(&env), 1);
    assert_eq!(status_of(&env, "r3"), "claimed");
}

#[test]
fn a_lease_only_pages_used_is_released_when_the_last_page_leaves() {
    use std::io::{BufRead, BufReader};
    let env = Env::new();
    let reviewer = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    env.drop_file("r1.json", simple_request("r1").to_string().as_bytes());
    wait_pending(&env, "r1");
    let s = login(&h, &reviewer);
    assert!(s.get("/r/r1").body.contains("Review the answer"));
    assert_eq!(web_leases(&env), 1);
    let r = ureq::get(&format!("{}/live?context=default", h.base))
        .set("Cookie", &s.cookie)
        .call()
        .expect("the page stream");
    let mut lines = BufReader::new(r.into_reader());
    let mut first = String::new();
    lines.read_line(&mut first).unwrap();
    assert_eq!(first.trim(), "event: ready");
    // The only page leaves: the lease is released (after the grace), and the log says so.
    drop(lines);
    let released = "no reviewer left: released the context's provider lease";
    assert!(
        wait_until(DEADLINE, || h.daemon.log_text().contains(released)),
        "{}",
        h.daemon.log_text()
    );
    assert_eq!(web_leases(&env), 0);
    assert_eq!(status_of(&env, "r1"), "pending");
}

/// Wrong tokens at the login form: the first few from an address are judged at once (401),
/// then the address waits (429 with `Retry-After`, its token not even looked at, a right
/// one included), each wrong token after a wait doubling it; a right token after the wait
/// logs in and resets the address.
#[test]
fn wrong_tokens_at_the_login_form_make_the_address_wait() {
    let env = Env::new();
    let reviewer = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    let wrong = format!("dshq_{}", "0".repeat(64));
    let started = std::time::Instant::now();
    let (mut judged, mut held) = (0, 0);
    for i in 0..300 {
        let r = try_login(&h, &wrong, &[]);
        match r.status {
            401 => judged += 1,
            429 => {
                held += 1;
                let after: u64 = r
                    .header("retry-after")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("try {i}: 429 without Retry-After"));
                assert!((1..=60).contains(&after), "{after}");
                assert!(r.body.contains("too many wrong tokens"), "{}", r.body);
            }
            s => panic!("try {i}: {s} {}", r.body),
        }
        if i < 5 {
            assert_eq!(r.status, 401, "the first five are judged: try {i}");
        }
    }
    let took = started.elapsed();
    // Five free, then one more each time a wait (1 s, 2 s, 4 s, ...) ran out meanwhile.
    let waits_over = (0..)
        .take_while(|k| (1u64 << (k + 1)) - 1 <= took.as_secs())
        .count();
    assert!(
        judged <= 5 + waits_over + 1,
        "{judged} wrong tokens judged in {took:?} ({held} held back)"
    );
    // Held back, a right token is not looked at either.
    assert_eq!(try_login(&h, &reviewer, &[]).status, 429);
    // Once the wait is over, it logs in, and the address starts afresh.
    assert!(
        wait_until(std::time::Duration::from_secs(130), || try_login(
            &h,
            &reviewer,
            &[]
        )
        .status
            == 303),
        "the right token never logged in"
    );
    assert_eq!(try_login(&h, &wrong, &[]).status, 401);
}
