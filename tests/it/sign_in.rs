//! Signing in to the page through an identity provider (OIDC), against providers the tests
//! start on loopback: the real `oidc-provider` package (tests/oidc/provider.mjs: PKCE, a
//! `groups` claim, its dev login form) and one the tests control (tests/oidc/rogue.mjs:
//! its own discovery and keys, tokens shaped to attack). The real daemon with `--listen`
//! and an `[oidc]` config; a reviewer signs in through the redirect in headless Chromium
//! and answers; the others through a plain HTTP client carrying the cookies by hand.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::api::{listening, Host};
use crate::browser::free_port;
use crate::helpers::{simple_request, Env, DEADLINE};
use crate::page::{call, Resp};

const CLIENT_ID: &str = "dshq";
const SECRET: &str = "the-client-secret-of-dshq-at-the-test-provider";

/// A Node script of tests/oidc, running: killed on drop.
pub struct Node {
    child: Child,
    /// The issuer it printed.
    pub issuer: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pinned Node packages, with the provider's.
fn node_modules() -> PathBuf {
    let nm = std::env::var_os("DSHQ_TEST_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            panic!(
                "the sign-in tests need the pinned Node packages (oidc-provider, jose): run the \
                 suite with contrib/test/run (or `npm ci` in contrib/test and set \
                 DSHQ_TEST_NODE_MODULES to its node_modules)"
            )
        });
    for p in [
        "oidc-provider/package.json",
        "jose/package.json",
        ".bin/node",
    ] {
        assert!(
            nm.join(p).exists(),
            "{p} is missing from {}: reinstall with contrib/test/run",
            nm.display()
        );
    }
    nm
}

fn start_node(script: &str, args: &[&str]) -> Node {
    let nm = node_modules();
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/oidc")
        .join(script);
    let mut child = Command::new(nm.join(".bin/node"))
        .arg(path)
        .args(args)
        .env("NODE_PATH", &nm)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn node");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut out = BufReader::new(out);
        let mut line = String::new();
        let _ = out.read_line(&mut line);
        let _ = tx.send(line);
        // Whatever it says later is read, so it never writes to a closed pipe.
        let _ = std::io::copy(&mut out, &mut std::io::sink());
    });
    let line = rx
        .recv_timeout(DEADLINE)
        .expect("the provider says it is ready");
    let issuer = line
        .trim()
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("{script}: {line:?}"))
        .to_string();
    Node { child, issuer }
}

/// The accounts of the real provider: subject (the dev form's login) → claims.
fn accounts() -> Value {
    json!({
        "u-1001": {"preferred_username": "alice", "email": "alice@example.com", "groups": ["dshq-reviewers"]},
        "u-1002": {"preferred_username": "audrey", "email": "audrey@example.com", "groups": ["dshq-auditors"]},
        "u-1003": {"preferred_username": "olga", "email": "olga@elsewhere.example", "groups": ["marketing"]},
        "u-1004": {"preferred_username": "carl", "email": "carl@example.com", "groups": ["deployers"]},
        "u-1005": {"preferred_username": "rhea", "email": "rhea@example.com", "groups": ["dshq-reviewers", "release-approvers"]},
        "u-1006": {"preferred_username": "sam", "email": "sam@example.com", "groups": ["release-approvers", "dshq-reviewers"]},
    })
}

/// The resource indicator under which the provider issues access tokens for dshq's API.
const API_RESOURCE: &str = "urn:dshq:api";

/// The service accounts (machines) of the real provider: client id → secret and the
/// claims of its access tokens.
fn services() -> Value {
    json!({
        "svc-deployer": {"secret": "svc-deployer-secret", "claims": {"preferred_username": "deploybot", "groups": ["deployers"]}},
        "svc-release": {"secret": "svc-release-secret", "claims": {"preferred_username": "releasebot", "groups": ["dshq-reviewers", "release-approvers"]}},
        "svc-stranger": {"secret": "svc-stranger-secret", "claims": {"preferred_username": "spambot", "groups": ["marketing"]}},
    })
}

/// An access token of service account `client` for `resource`, by the client credentials
/// grant at the real provider.
fn access_token(idp: &Node, client: &str, resource: &str) -> String {
    use base64::Engine;
    let secret = services()[client]["secret"].as_str().unwrap().to_string();
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{client}:{secret}"));
    let r = ureq::post(&format!("{}/token", idp.issuer))
        .set("Authorization", &format!("Basic {basic}"))
        .send_form(&[
            ("grant_type", "client_credentials"),
            ("resource", resource),
            ("scope", "api"),
        ])
        .unwrap_or_else(|e| panic!("the provider's token endpoint: {e}"));
    let v: Value = r.into_json().unwrap();
    let token = v["access_token"].as_str().unwrap().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT access token: {v}");
    token
}

/// The rules every test's config holds.
const RULES: &str = r#"
[[oidc.rule]]
group = "dshq-reviewers"
grant = "reviewer"

[[oidc.rule]]
group = "dshq-auditors"
grant = "auditor"

[[oidc.rule]]
group = "deployers"
grant = "reviewer"
contexts = ["deploy", "release"]
"#;

/// A root, a provider, and the daemon signing in through it.
pub struct World {
    pub env: Env,
    pub idp: Node,
    pub host: Host,
}

/// The config file's directory, with the client secret file (0600) in it.
fn config_dir(env: &Env) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = env.root().parent().unwrap().join("config/dshq");
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("oidc-secret");
    std::fs::write(&secret, SECRET).unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    (dir, secret)
}

/// Write the `[oidc]` config for `issuer` and a secret file (0600); the page's port,
/// `extra` keys of `[oidc]`, and `tail` (rules and tables after the common rules).
fn configure(env: &Env, issuer: &str, port: u16, extra: &str, tail: &str) {
    let (dir, secret) = config_dir(env);
    let config = format!(
        "[oidc]\nissuer = \"{issuer}\"\nclient-id = \"{CLIENT_ID}\"\nclient-secret-file = \"{}\"\n\
         redirect-url = \"http://127.0.0.1:{port}/login/oidc/callback\"\n\
         scopes = [\"openid\", \"profile\", \"email\", \"groups\"]\nperson-claim = \"preferred_username\"\n{extra}\n{RULES}\n{tail}",
        secret.display()
    );
    std::fs::write(dir.join("config.toml"), config).unwrap();
}

fn daemon_on(env: &Env, port: u16) -> Host {
    let listen = format!("127.0.0.1:{port}");
    let d = env.daemon_with(&["--listen", &listen], &[("RUST_LOG", "info")]);
    listening(d)
}

/// The real provider and the daemon.
pub fn world() -> World {
    world_with("")
}

/// The real provider and the daemon, with `tail` after the common rules.
pub fn world_with(tail: &str) -> World {
    world_of("", tail)
}

/// The real provider and the daemon, with `extra` keys of `[oidc]` and `tail` after the
/// common rules.
fn world_of(extra: &str, tail: &str) -> World {
    let env = Env::new();
    let port = free_port();
    let idp = provider(&env, port);
    configure(&env, &idp.issuer, port, extra, tail);
    let host = daemon_on(&env, port);
    World { env, idp, host }
}

/// The real provider, knowing dshq as a client whose page is on `port`.
fn provider(env: &Env, port: u16) -> Node {
    let dir = env.root().parent().unwrap().join("idp");
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("provider.json");
    std::fs::write(
        &cfg,
        json!({
            "clientId": CLIENT_ID,
            "clientSecret": SECRET,
            "redirectUri": format!("http://127.0.0.1:{port}/login/oidc/callback"),
            "postLogoutRedirectUri": format!("http://127.0.0.1:{port}/login"),
            "accounts": accounts(),
            "resources": {API_RESOURCE: "dshq", "urn:other:api": "other-api"},
            "services": services(),
        })
        .to_string(),
    )
    .unwrap();
    start_node("provider.mjs", &[cfg.to_str().unwrap()])
}

/// Cookies by name, as a browser keeps them for one site (paths ignored).
#[derive(Default)]
struct Jar(BTreeMap<String, String>);

impl Jar {
    fn take(&mut self, r: &Resp) {
        for c in r.set_cookies() {
            let pair = c.split(';').next().unwrap().trim();
            if let Some((k, v)) = pair.split_once('=') {
                if v.is_empty() {
                    self.0.remove(k);
                } else {
                    self.0.insert(k.to_string(), v.to_string());
                }
            }
        }
    }
    fn header(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn location(r: &Resp) -> String {
    r.header("location")
        .unwrap_or_else(|| panic!("no Location: {} {}", r.status, r.body))
        .to_string()
}

fn absolute(base: &str, loc: &str) -> String {
    if loc.starts_with("http") {
        loc.to_string()
    } else {
        format!("{base}{loc}")
    }
}

/// A sign-in in progress: the page's cookies (the flow's) and the callback URL the
/// provider sent the browser to.
pub struct Flow {
    page: Jar,
    pub callback: String,
}

/// Start a sign-in at the page (`next`) and log `login` in at the real provider's dev
/// form: the callback the provider redirects to, not yet followed.
fn at_provider(w: &World, login: &str, next: &str) -> Flow {
    let mut page = Jar::default();
    let r = call(
        "GET",
        &format!("{}/login/oidc?next={}", w.host.base, urlencode(next)),
        "",
        &[],
        None,
    );
    assert_eq!(r.status, 303, "{}", r.body);
    page.take(&r);
    let mut idp = Jar::default();
    let r = call("GET", &location(&r), "", &[], None);
    idp.take(&r);
    let form_url = absolute(&w.idp.issuer, &location(&r));
    let r = call("GET", &form_url, &idp.header(), &[], None);
    idp.take(&r);
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(
        "POST",
        &form_url,
        &idp.header(),
        &[],
        Some(&[("prompt", "login"), ("login", login), ("password", "any")]),
    );
    idp.take(&r);
    let r = call(
        "GET",
        &absolute(&w.idp.issuer, &location(&r)),
        &idp.header(),
        &[],
        None,
    );
    let callback = location(&r);
    assert!(callback.contains("/login/oidc/callback?"), "{callback}");
    Flow { page, callback }
}

/// Follow the callback: the page's answer, and the session cookie when it set one.
fn finish(flow: &Flow, url: &str) -> (Resp, Option<String>) {
    let r = call("GET", url, &flow.page.header(), &[], None);
    let session = r
        .set_cookies()
        .iter()
        .find(|c| c.starts_with("dshq_session=") && !c.starts_with("dshq_session=;"))
        .map(|c| c.split(';').next().unwrap().to_string());
    (r, session)
}

/// A page session signed in as `login` through the provider.
fn signed_in(w: &World, login: &str) -> crate::page::Session {
    let flow = at_provider(w, login, "/");
    let (r, cookie) = finish(&flow, &flow.callback.clone());
    let cookie =
        cookie.unwrap_or_else(|| panic!("no session for {login}: {} {}", r.status, r.body));
    let home = call("GET", &format!("{}/", w.host.base), &cookie, &[], None);
    assert_eq!(home.status, 200, "{}", home.body);
    crate::page::Session {
        base: w.host.base.clone(),
        cookie,
        csrf: home.csrf_field(),
    }
}

fn urlencode(s: &str) -> String {
    url_escape(s)
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The error code the login page shows.
fn page_code(r: &Resp) -> String {
    let at = r
        .body
        .find("class=\"code\">")
        .unwrap_or_else(|| panic!("no code on the page: {} {}", r.status, r.body));
    let rest = &r.body[at + 13..];
    rest[..rest.find('<').unwrap()].to_string()
}

/// The log's events of `kind` (oldest first): actor and data.
fn events_of_kind(env: &Env, kind: &str) -> Vec<(String, Value)> {
    let db = rusqlite::Connection::open_with_flags(
        env.root().join("dshq.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut st = db
        .prepare("SELECT actor, data FROM events WHERE kind = ?1 ORDER BY seq")
        .unwrap();
    st.query_map([kind], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })
    .unwrap()
    .map(|r| {
        let (a, d) = r.unwrap();
        (a, serde_json::from_str(&d).unwrap())
    })
    .collect()
}

/// Every actor the log holds.
fn actors(env: &Env) -> Vec<String> {
    let db = rusqlite::Connection::open_with_flags(
        env.root().join("dshq.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut st = db.prepare("SELECT DISTINCT actor FROM events").unwrap();
    st.query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn ask_in(env: &Env, id: &str, context: &str) {
    let mut q = simple_request(id);
    q["context"] = json!(context);
    env.ask(&q).ok();
}

/// Answer request `id` through the page's form (confirm, then send): the send's answer.
fn answer(s: &crate::page::Session, id: &str) -> Resp {
    let c = s.post(
        &format!("/r/{id}/confirm"),
        &[("csrf", &s.csrf), ("q0", "o0")],
    );
    if c.status != 200 {
        return c;
    }
    let fields: Vec<(String, String)> = hidden_fields(&c.body);
    let form: Vec<(&str, &str)> = fields
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    s.post(&format!("/r/{id}/answer"), &form)
}

fn hidden_fields(html: &str) -> Vec<(String, String)> {
    let re = regex::Regex::new(r#"<input type="hidden" name="([^"]+)" value="([^"]*)""#).unwrap();
    re.captures_iter(html)
        .map(|c| (c[1].to_string(), html_unescape(&c[2])))
        .collect()
}

fn html_unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[test]
fn groups_decide_who_reads_who_answers_and_where() {
    let w = world();
    ask_in(&w.env, "in-default", "default");
    ask_in(&w.env, "in-deploy", "deploy");

    // An auditor's groups: the page, read-only; an answer is refused and changes nothing.
    let audrey = signed_in(&w, "u-1002");
    let q = audrey.get("/");
    assert!(q.body.contains("read-only"), "{}", q.body);
    assert!(q.body.contains("in-default") && q.body.contains("in-deploy"));
    let r = answer(&audrey, "in-default");
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(w.env.outcome("in-default"), None);

    // A group bound to a context: answers there, and cannot answer (nor see) elsewhere.
    let carl = signed_in(&w, "u-1004");
    let r = carl.get("/r/in-default");
    assert_eq!(r.status, 404, "{}", r.body);
    let r = answer(&carl, "in-default");
    assert!(
        r.status == 404 || r.status == 403,
        "{} {}",
        r.status,
        r.body
    );
    assert_eq!(w.env.outcome("in-default"), None);
    let r = answer(&carl, "in-deploy");
    assert!(r.status < 400, "{} {}", r.status, r.body);
    let out = w.env.wait_outcome("in-deploy");
    assert_eq!(out["status"], "answered", "{out}");

    // Outside every mapped group: refused with its code, no session, nothing recorded.
    let flow = at_provider(&w, "u-1003", "/");
    let (r, session) = finish(&flow, &flow.callback.clone());
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(page_code(&r), "OIDC_NOT_MAPPED");
    assert_eq!(session, None);
    assert!(!actors(&w.env)
        .iter()
        .any(|a| a.contains("olga") || a.contains("u-1003")));

    // The sign-ins and what their claims decided are on the record; no token is.
    let signed = events_of_kind(&w.env, "signed-in");
    let who: Vec<&str> = signed.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(who, ["oidc:audrey@u-1002", "oidc:carl@u-1004"]);
    assert_eq!(signed[1].1["claims"]["groups"], json!(["deployers"]));
    assert_eq!(signed[1].1["decided"]["role"], "reviewer");
    assert_eq!(
        signed[1].1["decided"]["contexts"],
        json!(["deploy", "release"])
    );
    let answered = events_of_kind(&w.env, "answered");
    assert_eq!(answered[0].0, "oidc:carl@u-1004");
    let all = std::fs::read(w.env.root().join("dshq.db")).unwrap();
    assert!(
        !String::from_utf8_lossy(&all).contains("eyJ"),
        "no JWT in the store"
    );
    assert!(
        !w.host.daemon.log_text().contains("eyJ"),
        "no JWT in the log"
    );
}

#[test]
fn state_replay_and_open_redirect_are_refused() {
    let w = world();
    // An open redirect: refused before the provider is asked.
    for next in [
        "https://evil.example/",
        "//evil.example/x",
        "/\\evil.example",
    ] {
        let r = call(
            "GET",
            &format!("{}/login/oidc?next={}", w.host.base, url_escape(next)),
            "",
            &[],
            None,
        );
        assert_eq!(r.status, 400, "{next}: {}", r.body);
        assert_eq!(page_code(&r), "BAD_RETURN_URL", "{next}");
        assert_eq!(r.header("location"), None);
    }
    // A state that is not the flow's.
    let flow = at_provider(&w, "u-1001", "/");
    let forged = regex::Regex::new("state=[^&]+")
        .unwrap()
        .replace(&flow.callback, "state=forged")
        .into_owned();
    let (r, session) = finish(&flow, &forged);
    assert_eq!((page_code(&r).as_str(), session), ("OIDC_STATE", None));

    // A good sign-in returns to its path; its callback again (a replay) finds no flow.
    let flow = at_provider(&w, "u-1001", "/history");
    let (r, session) = finish(&flow, &flow.callback.clone());
    assert!(session.is_some(), "{} {}", r.status, r.body);
    assert!(r.body.contains("url=/history"), "{}", r.body);
    let (r, session) = finish(&flow, &flow.callback.clone());
    assert_eq!((page_code(&r).as_str(), session), ("OIDC_STATE", None));
    // The used code under a new flow's state: the provider refuses it.
    let fresh = call("GET", &format!("{}/login/oidc", w.host.base), "", &[], None);
    let mut jar = Jar::default();
    jar.take(&fresh);
    let state = regex::Regex::new("state=([^&]+)")
        .unwrap()
        .captures(&location(&fresh))
        .unwrap()[1]
        .to_string();
    let replay = regex::Regex::new("state=[^&]+")
        .unwrap()
        .replace(&flow.callback, format!("state={state}").as_str())
        .into_owned();
    let r = call("GET", &replay, &jar.header(), &[], None);
    assert_eq!(page_code(&r), "OIDC_CODE_REJECTED", "{}", r.body);
    assert_eq!(events_of_kind(&w.env, "signed-in").len(), 1);
}

#[test]
fn logout_ends_the_session_and_the_providers() {
    let w = world();
    let alice = signed_in(&w, "u-1001");
    let r = alice.post("/logout", &[("csrf", &alice.csrf)]);
    assert_eq!(r.status, 303, "{}", r.body);
    let to = location(&r);
    assert!(
        to.starts_with(&format!("{}/session/end?", w.idp.issuer)),
        "{to}"
    );
    assert!(
        to.contains("id_token_hint=") && to.contains("post_logout_redirect_uri="),
        "{to}"
    );
    let r = alice.get("/");
    assert_eq!((r.status, location(&r).as_str()), (303, "/login"));
}

/// The rogue provider's tokens, each through a whole flow: the page's refusal code, or
/// the session cookie.
fn rogue_sign_in(host: &Host, rogue: &Node, mode: &str) -> (Resp, Option<String>) {
    let r = ureq::post(&format!("{}/mode", rogue.issuer))
        .send_json(json!({"mode": mode}))
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut page = Jar::default();
    let r = call("GET", &format!("{}/login/oidc", host.base), "", &[], None);
    assert_eq!(r.status, 303, "{}", r.body);
    page.take(&r);
    let r = call("GET", &location(&r), "", &[], None);
    let flow = Flow {
        page,
        callback: location(&r),
    };
    finish(&flow, &flow.callback.clone())
}

fn jwks_fetches(rogue: &Node) -> u64 {
    ureq::get(&format!("{}/stats", rogue.issuer))
        .call()
        .unwrap()
        .into_json::<Value>()
        .unwrap()["jwksFetches"]
        .as_u64()
        .unwrap()
}

#[test]
fn hostile_tokens_are_refused_each_with_its_code() {
    let env = Env::new();
    let port = free_port();
    let rogue = start_node("rogue.mjs", &[CLIENT_ID]);
    configure(&env, &rogue.issuer, port, "jwks-refetch-after = \"1h\"", "");
    let host = daemon_on(&env, port);

    let (r, s) = rogue_sign_in(&host, &rogue, "ok");
    assert!(s.is_some(), "{} {}", r.status, r.body);
    for (mode, code) in [
        ("wrong-issuer", "OIDC_ISSUER"),
        ("wrong-audience", "OIDC_AUDIENCE"),
        ("expired", "OIDC_EXPIRED"),
        ("alg-none", "OIDC_UNSIGNED"),
        ("wrong-nonce", "OIDC_NONCE"),
        ("wrong-state", "OIDC_STATE"),
    ] {
        let (r, s) = rogue_sign_in(&host, &rogue, mode);
        assert_eq!(page_code(&r), code, "{mode}: {}", r.body);
        assert_eq!(s, None, "{mode}");
        assert_eq!(
            r.status,
            if code == "OIDC_STATE" { 400 } else { 401 },
            "{mode}"
        );
    }
    // The provider rotates its key: the new key id is fetched, once.
    let fetched = jwks_fetches(&rogue);
    ureq::post(&format!("{}/rotate", rogue.issuer))
        .call()
        .unwrap();
    let (r, s) = rogue_sign_in(&host, &rogue, "ok");
    assert!(s.is_some(), "after a rotation: {} {}", r.status, r.body);
    assert_eq!(jwks_fetches(&rogue), fetched + 1);
    // The key rotated out, and one never published: refused, and not fetched for again
    // so soon (a stream of made-up key ids does not hammer the provider).
    for mode in ["rotated-out", "unknown-key"] {
        let (r, s) = rogue_sign_in(&host, &rogue, mode);
        assert_eq!(page_code(&r), "OIDC_UNKNOWN_KEY", "{mode}: {}", r.body);
        assert_eq!(s, None);
    }
    assert_eq!(jwks_fetches(&rogue), fetched + 1);
    // Nothing was recorded as the person but the two good sign-ins.
    let signed = events_of_kind(&env, "signed-in");
    assert_eq!(signed.len(), 2, "{signed:?}");
    assert!(signed.iter().all(|(a, _)| a == "oidc:rita@rogue-subject"));
}

#[test]
fn a_reviewer_signs_in_through_the_redirect_in_a_browser_and_answers() {
    use crate::browser::{browser, click, start_driver, type_into, until};
    let w = world();
    ask_in(&w.env, "deploy-now", "default");
    let (_driver, url) = start_driver();
    let profile = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = browser(&url, profile.path(), false).await;
        c.goto(&format!("{}/r/deploy-now", w.host.base))
            .await
            .unwrap();
        // Not signed in: the login page offers the provider.
        until("the login page", || async {
            c.title().await.is_ok_and(|t| t.starts_with("Log in"))
        })
        .await;
        click(&c, "a#sign-in-oidc").await;
        // The provider's own login form.
        until("the provider's form", || async {
            crate::browser::has(&c, "input[name=login]").await
        })
        .await;
        type_into(&c, "input[name=login]", "u-1001").await;
        type_into(&c, "input[name=password]", "anything").await;
        click(&c, "button[type=submit]").await;
        // Back on the page, at the request it was opened for.
        until("the request", || async {
            crate::browser::has(&c, "form#answer").await
        })
        .await;
        let here = c.current_url().await.unwrap();
        assert!(here.as_str().ends_with("/r/deploy-now"), "{here}");
        click(&c, "input[name=q0][value=o0]").await;
        click(&c, "form#answer button[type=submit]").await;
        until("the summary page", || async {
            crate::browser::has(&c, "#send-button").await
        })
        .await;
        click(&c, "#send-button").await;
        until("the queue after sending", || async {
            c.current_url()
                .await
                .is_ok_and(|u| u.as_str().ends_with("/?done=deploy-now"))
        })
        .await;
        c.close().await.unwrap();
    });
    let out = w.env.wait_outcome("deploy-now");
    assert_eq!(out["status"], "answered", "{out}");
    let answered = events_of_kind(&w.env, "answered");
    assert_eq!(answered[0].0, "oidc:alice@u-1001");
}

#[test]
fn the_oidc_table_is_checked_shown_and_in_the_default_file() {
    let env = Env::new();
    let dir = env.root().parent().unwrap().join("cfg");
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("c.toml");
    let head = "[oidc]\nissuer = \"https://idp.example/realms/ops\"\nclient-id = \"dshq\"\n\
                client-secret-file = \"/etc/dshq/oidc-secret\"\n\
                redirect-url = \"https://dshq.example/login/oidc/callback\"\n";
    let good = format!("{head}{RULES}");
    std::fs::write(&cfg, &good).unwrap();
    let path = cfg.to_str().unwrap();
    let checked = env.json(&["config", "check", path]).ok().json();
    assert_eq!(checked["oidc"]["clientId"], "dshq");
    assert_eq!(
        checked["oidc"]["rules"][2],
        "group = \"deployers\" grants reviewer in deploy, release"
    );
    // A rule that only makes reviewers members of a quorum group.
    std::fs::write(&cfg, format!("{good}{RELEASE}")).unwrap();
    let checked = env.json(&["config", "check", path]).ok().json();
    assert_eq!(
        checked["oidc"]["rules"][3],
        "group = \"release-approvers\" joins quorum group release"
    );
    let shown = env.run(&["--config", path, "config", "show"]).ok().stdout;
    assert!(shown.contains("quorum-groups = [\"release\"]"), "{shown}");
    std::fs::write(&cfg, &good).unwrap();
    let shown = env.run(&["--config", path, "config", "show"]).ok().stdout;
    assert!(shown.contains("grant = \"auditor\""), "{shown}");
    assert!(
        checked["oidc"].get("apiAudience").is_none(),
        "off by default"
    );
    std::fs::write(&cfg, format!("{head}api-access-tokens = true\n{RULES}")).unwrap();
    let checked = env.json(&["config", "check", path]).ok().json();
    assert_eq!(checked["oidc"]["apiAudience"], "dshq");
    assert!(shown.contains("https://idp.example/realms/ops"), "{shown}");
    // Each mistake names its key and line.
    for (bad, line, why) in [
        (head.to_string(), "c.toml:1", "at least one [[oidc.rule]]"),
        (
            format!("{head}\n[[oidc.rule]]\ngroup = \"g\"\ngrant = \"admin\"\n"),
            "c.toml:7",
            "grant is \"reviewer\" or \"auditor\"",
        ),
        (
            format!("{head}\n[[oidc.rule]]\ngroup = \"g\"\nrole = \"r\"\ngrant = \"auditor\"\n"),
            "c.toml:7",
            "a rule looks at one claim",
        ),
        (
            good.replace("https://idp.example", "http://idp.example"),
            "c.toml:2",
            "must be https",
        ),
        (
            good.replace("client-id = \"dshq\"\n", ""),
            "c.toml:1",
            "needs client-id",
        ),
        (
            format!("{head}scopes = [\"profile\"]\n{RULES}"),
            "c.toml:6",
            "must include \"openid\"",
        ),
        (
            format!("{head}\n[[oidc.rule]]\ngroup = \"g\"\n"),
            "c.toml:7",
            "or quorum-groups",
        ),
        (
            format!("{head}\n[[oidc.rule]]\ngroup = \"g\"\ngrant = \"reviewer\"\ncontexts = []\n"),
            "c.toml:7",
            "contexts names at least one context",
        ),
        (
            format!("{head}api-audience = \"dshq\"\n{RULES}"),
            "c.toml:1",
            "api-audience goes with api-access-tokens = true",
        ),
        (
            format!("{head}api-access-tokens = \"yes\"\n{RULES}"),
            "c.toml:6",
            "is true or false",
        ),
        (
            format!("{head}\n[[oidc.rule]]\ngroup = \"g\"\ngrant = \"auditor\"\nquorum-groups = [\"release\"]\n\n[groups]\nrelease = []\n"),
            "c.toml:7",
            "an auditor votes in no quorum",
        ),
        (
            format!("{head}{RULES}{RELEASE}").replace("release = []", "relaese = []"),
            "c.toml:20",
            "quorum group \"release\" is not in [groups]",
        ),
    ] {
        std::fs::write(&cfg, &bad).unwrap();
        let r = env.run(&["config", "check", path]);
        assert_eq!(r.code, 2, "{bad}: {r:?}");
        assert!(
            r.stderr.contains(why) && r.stderr.contains(line),
            "{bad}: {}",
            r.stderr
        );
    }
    let default = env.run(&["config", "default"]).ok().stdout;
    assert!(
        default.contains("# [oidc]") && default.contains("# [[oidc.rule]]"),
        "{default}"
    );
}

/// A rule that makes a reviewer a member of the quorum group `release` (listing nobody
/// itself), and the quorum of the `release` context: two of that group.
const RELEASE: &str = r#"
[[oidc.rule]]
group = "release-approvers"
quorum-groups = ["release"]

[groups]
release = []

[quorum.release]
approvals = 2
group = "release"
"#;

#[test]
fn a_quorum_groups_claim_lets_its_holder_vote_and_counts_them() {
    let w = world_with(RELEASE);
    // Asked before anyone signed in: the group lists nobody yet, sign-ins fill it.
    ask_in(&w.env, "rel-1", "release");

    // rhea's groups map to `release`: her vote through the page counts.
    let rhea = signed_in(&w, "u-1005");
    let r = answer(&rhea, "rel-1");
    assert!(r.status < 400, "{} {}", r.status, r.body);
    let shown = w.env.json(&["show", "rel-1"]).ok().json();
    assert_eq!(shown["status"], "pending", "{shown}");
    assert_eq!(shown["quorum"]["votes"][0]["voter"], "oidc:rhea@u-1005");
    assert_eq!(shown["quorum"]["votes"][0]["person"], "rhea");

    // alice reviews everything, but her groups map to no quorum group: refused.
    let alice = signed_in(&w, "u-1001");
    let r = answer(&alice, "rel-1");
    assert_eq!((r.status, page_code(&r).as_str()), (403, "NOT_IN_GROUP"));
    let shown = w.env.json(&["show", "rel-1"]).ok().json();
    assert_eq!(shown["quorum"]["votes"].as_array().unwrap().len(), 1);

    // sam signs in; then the daemon stops (its sessions with it). His membership is the
    // store's, his person's: he votes from the command line, and the quorum is met.
    let _sam = signed_in(&w, "u-1006");
    let World {
        env,
        idp: _idp,
        host,
    } = w;
    host.daemon.stop();
    let v = env
        .json(&["answer", "rel-1", "--name", "sam", "--select", "Postgres"])
        .ok()
        .json();
    assert_eq!(v["status"], "answered", "{v}");
    assert_eq!(
        v["approvers"],
        json!(["oidc:rhea@u-1005", "provider:sam"]),
        "{v}"
    );

    // On the record: what each sign-in's claims decided, and by which sign-in each voter
    // was a member.
    let signed = events_of_kind(&env, "signed-in");
    let decided: Vec<(&str, &Value)> = signed
        .iter()
        .map(|(a, d)| (a.as_str(), &d["decided"]["quorumGroups"]))
        .collect();
    assert_eq!(
        decided,
        [
            ("oidc:rhea@u-1005", &json!(["release"])),
            ("oidc:alice@u-1001", &json!([])),
            ("oidc:sam@u-1006", &json!(["release"])),
        ]
    );
    let joined: Vec<Value> = events_of_kind(&env, "voted")
        .into_iter()
        .map(|(_, d)| d["joined"].clone())
        .collect();
    assert_eq!(joined.len(), 2);
    assert_eq!(
        (joined[0]["group"].as_str(), joined[0]["subject"].as_str()),
        (Some("release"), Some("u-1005"))
    );
    assert_eq!(joined[1]["subject"], "u-1006");
    env.run(&["audit", "verify"]).ok();
}

/// The README's configuration example, its provider's addresses and secret file made the
/// test provider's: the mapping it shows does what the README says (a reviewer, an
/// auditor, a member of the quorum group `release`, nobody else).
#[test]
fn the_readmes_configuration_signs_in_through_a_real_provider() {
    let readme = std::fs::read_to_string(crate::helpers::repo().join("README.md")).unwrap();
    let block = crate::docs::blocks("README.md", &readme)
        .into_iter()
        .find(|b| b.body.iter().any(|l| l == "[oidc]"))
        .expect("the README shows an [oidc] configuration");
    let env = Env::new();
    let port = free_port();
    let idp = provider(&env, port);
    let (dir, secret) = config_dir(&env);
    let config: Vec<String> = block
        .body
        .iter()
        .map(|l| match l.split_once(" = ").map(|(k, _)| k) {
            Some("issuer") => format!("issuer = \"{}\"", idp.issuer),
            Some("client-secret-file") => format!("client-secret-file = \"{}\"", secret.display()),
            Some("redirect-url") => {
                format!("redirect-url = \"http://127.0.0.1:{port}/login/oidc/callback\"")
            }
            _ => l.clone(),
        })
        .collect();
    std::fs::write(dir.join("config.toml"), config.join("\n")).unwrap();
    let w = World {
        host: daemon_on(&env, port),
        env,
        idp,
    };
    ask_in(&w.env, "q-1", "default");
    let rhea = signed_in(&w, "u-1005");
    let r = answer(&rhea, "q-1");
    assert!(r.status < 400, "{} {}", r.status, r.body);
    let audrey = signed_in(&w, "u-1002");
    assert!(audrey.get("/").body.contains("read-only"));
    let flow = at_provider(&w, "u-1003", "/");
    let (r, session) = finish(&flow, &flow.callback.clone());
    assert_eq!((page_code(&r).as_str(), session), ("OIDC_NOT_MAPPED", None));
    let decided: Vec<Value> = events_of_kind(&w.env, "signed-in")
        .into_iter()
        .map(|(_, d)| d["decided"].clone())
        .collect();
    assert_eq!(decided[0]["role"], "reviewer");
    assert_eq!(decided[0]["quorumGroups"], json!(["release"]));
    assert_eq!(decided[1]["role"], "auditor");
    assert_eq!(decided[1]["quorumGroups"], json!([]));
    assert_eq!(w.env.wait_outcome("q-1")["status"], "answered");
}

fn answer_db(label: &str) -> Value {
    json!({"answers": [{"id": "db", "selected": [label]}]})
}

/// The ids a `GET /requests` lists.
fn listed(r: &crate::api::Resp) -> Vec<String> {
    r.body
        .as_array()
        .unwrap_or_else(|| panic!("{r:?}"))
        .iter()
        .map(|q| q["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_api_takes_the_providers_access_tokens_mapped_by_the_rules() {
    let w = world_of("api-access-tokens = true", RELEASE);
    let h = &w.host;
    ask_in(&w.env, "dep-1", "deploy");
    ask_in(&w.env, "def-1", "default");
    ask_in(&w.env, "rel-2", "release");

    // A service account whose groups make it a reviewer of deploy and release.
    let deployer = access_token(&w.idp, "svc-deployer", API_RESOURCE);
    let r = h.get("/requests", Some(&deployer));
    assert_eq!(r.status, 200, "{r:?}");
    let ids = listed(&r);
    assert!(
        ids.contains(&"dep-1".to_string()) && !ids.contains(&"def-1".to_string()),
        "{ids:?}"
    );
    let r = h.post(
        "/requests/def-1/answer",
        Some(&deployer),
        &answer_db("Postgres"),
    );
    assert!(r.status == 404 || r.status == 403, "{r:?}");
    let r = h.post(
        "/requests/dep-1/answer",
        Some(&deployer),
        &answer_db("Postgres"),
    );
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (200, Some("answered")),
        "{r:?}"
    );
    assert_eq!(r.body["provider"], "oidc:deploybot@svc-deployer");
    // In the release context, but not of the quorum group release.
    let r = h.post(
        "/requests/rel-2/answer",
        Some(&deployer),
        &answer_db("Postgres"),
    );
    assert_eq!((r.status, r.code()), (403, "NOT_IN_GROUP"), "{r:?}");

    // One whose groups put it in release: its vote counts.
    let release = access_token(&w.idp, "svc-release", API_RESOURCE);
    let r = h.post(
        "/requests/rel-2/answer",
        Some(&release),
        &answer_db("Postgres"),
    );
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (202, Some("voted")),
        "{r:?}"
    );
    assert_eq!(r.body["voter"], "oidc:releasebot@svc-release");

    // dshq's own tokens keep working beside them.
    let rita = crate::api::token(&w.env, "reviewer", "rita", None);
    assert_eq!(h.get("/requests", Some(&rita)).status, 200);

    // A token of the same provider for another resource (audience), and a service
    // account no rule admits: refused, nothing recorded as them.
    let other = access_token(&w.idp, "svc-deployer", "urn:other:api");
    let r = h.get("/requests", Some(&other));
    assert_eq!((r.status, r.code()), (401, "JWT_AUDIENCE"), "{r:?}");
    let stranger = access_token(&w.idp, "svc-stranger", API_RESOURCE);
    let r = h.get("/requests", Some(&stranger));
    assert_eq!((r.status, r.code()), (403, "OIDC_NOT_MAPPED"), "{r:?}");
    assert!(!actors(&w.env)
        .iter()
        .any(|a| a.contains("spambot") || a.contains("svc-stranger")));

    // Each token's first use is its sign-in, recorded once with what its claims decided.
    let signed = events_of_kind(&w.env, "signed-in");
    let who: Vec<&str> = signed.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(
        who,
        ["oidc:deploybot@svc-deployer", "oidc:releasebot@svc-release"]
    );
    assert!(signed.iter().all(|(_, d)| d["via"] == "access-token"));
    assert_eq!(
        signed[0].1["decided"]["contexts"],
        json!(["deploy", "release"])
    );
    assert_eq!(signed[1].1["decided"]["quorumGroups"], json!(["release"]));
    assert!(
        !w.host.daemon.log_text().contains("eyJ"),
        "no token in the log"
    );
}

/// The rogue provider's access token shaped by `mode`.
fn rogue_access_token(rogue: &Node, mode: &str) -> String {
    let v: Value = ureq::post(&format!("{}/access-token", rogue.issuer))
        .send_json(json!({"mode": mode}))
        .unwrap()
        .into_json()
        .unwrap();
    v["access_token"].as_str().unwrap().to_string()
}

#[test]
fn hostile_access_tokens_are_refused_on_the_api_each_with_its_code() {
    let env = Env::new();
    let port = free_port();
    let rogue = start_node("rogue.mjs", &[CLIENT_ID]);
    ask_in(&env, "q-1", "default");

    // Off unless configured: a provider's token is no dshq token.
    configure(&env, &rogue.issuer, port, "", "");
    let host = daemon_on(&env, port);
    let good = rogue_access_token(&rogue, "ok");
    let r = host.get("/requests", Some(&good));
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"), "{r:?}");
    host.daemon.stop();

    configure(
        &env,
        &rogue.issuer,
        port,
        "api-access-tokens = true\njwks-refetch-after = \"1h\"",
        "",
    );
    let host = daemon_on(&env, port);
    let r = host.get("/requests", Some(&good));
    assert_eq!(r.status, 200, "{r:?}");
    for (mode, code) in [
        ("wrong-issuer", "JWT_ISSUER"),
        ("wrong-audience", "JWT_AUDIENCE"),
        ("expired", "JWT_EXPIRED"),
        ("alg-none", "JWT_UNSIGNED"),
        ("hs256", "JWT_UNSIGNED"),
        ("bad-signature", "JWT_BAD_SIGNATURE"),
    ] {
        let t = rogue_access_token(&rogue, mode);
        let r = host.get("/requests", Some(&t));
        assert_eq!((r.status, r.code()), (401, code), "{mode}: {r:?}");
        let r = host.post("/requests/q-1/answer", Some(&t), &answer_db("Postgres"));
        assert_eq!((r.status, r.code()), (401, code), "{mode}: {r:?}");
    }
    // The provider rotates its key: a token of the new key works at once (its key set
    // fetched again); one of the key rotated out, or of a key never published, is refused
    // (and the key set is not fetched for it again so soon).
    ureq::post(&format!("{}/rotate", rogue.issuer))
        .call()
        .unwrap();
    let rotated = rogue_access_token(&rogue, "ok");
    let r = host.post(
        "/requests/q-1/answer",
        Some(&rotated),
        &answer_db("Postgres"),
    );
    assert_eq!(
        (r.status, r.body["status"].as_str()),
        (200, Some("answered")),
        "{r:?}"
    );
    let fetched = jwks_fetches(&rogue);
    for mode in ["rotated-out", "unknown-key"] {
        let r = host.get("/requests", Some(&rogue_access_token(&rogue, mode)));
        assert_eq!(
            (r.status, r.code()),
            (401, "JWT_UNKNOWN_KEY"),
            "{mode}: {r:?}"
        );
    }
    assert_eq!(jwks_fetches(&rogue), fetched);

    // Nothing was recorded but the two good tokens' sign-ins and the one answer.
    let signed = events_of_kind(&env, "signed-in");
    assert_eq!(signed.len(), 2, "{signed:?}");
    assert!(signed.iter().all(|(a, _)| a == "oidc:robo@svc-rogue"));
    let answered = events_of_kind(&env, "answered");
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0].0, "oidc:robo@svc-rogue");
    assert!(
        !host.daemon.log_text().contains("eyJ"),
        "no token in the log"
    );
}
