//! The Web Push channel through the real binary, with the test playing the browser and its
//! push service (neither Chromium's push service nor any vendor's can be reached from
//! here): a local HTTP server stands in for the push service (RFC 8030: it takes a POST
//! to a subscription's endpoint and answers 201, or 410 for a device that is gone), and
//! the test's "browser" has its own P-256 key pair and auth secret, subscribes through
//! the page's route with a real login session, checks the VAPID signature (RFC 8292)
//! against the key the page subscribes with, decrypts what the daemon sent (RFC 8291's
//! key derivation written here from the RFC, RFC 8188's aes128gcm record by its own
//! crate), and taps an action: the request is answered as that person. An altered,
//! replayed, expired or other person's action is refused and changes nothing; a device
//! whose push service answers 410 is removed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use serde_json::{json, Value};

use crate::api::{host, listening, token, Host};
use crate::browser::actors;
use crate::email::status;
use crate::helpers::{wait_until, Env, DEADLINE};
use crate::page::{login, Session};

/// One POST the stand-in took.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When its body had arrived whole.
    pub at: std::time::Instant,
}

impl Pushed {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The push service's stand-in: takes every POST, records it, answers 201 (410 under
/// `/gone/`). While [`PushService::hang`] is set, a POST under `/hang/` is read whole and
/// never answered (counted in `held`, not recorded): a push service that accepts and hangs.
pub struct PushService {
    pub base: String,
    pub got: Arc<Mutex<Vec<Pushed>>>,
    pub hang: Arc<AtomicBool>,
    pub held: Arc<AtomicUsize>,
}

impl PushService {
    pub fn start() -> PushService {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let got = Arc::new(Mutex::new(Vec::new()));
        let into = got.clone();
        let (hang, held) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (hanging, holding) = (hang.clone(), held.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                let into = into.clone();
                let (hanging, holding) = (hanging.clone(), holding.clone());
                std::thread::spawn(move || {
                    let mut r = BufReader::new(conn.try_clone().unwrap());
                    loop {
                        let mut line = String::new();
                        if r.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
                        let mut headers = Vec::new();
                        loop {
                            let mut h = String::new();
                            r.read_line(&mut h).unwrap();
                            let h = h.trim_end();
                            if h.is_empty() {
                                break;
                            }
                            let (k, v) = h.split_once(':').unwrap();
                            headers.push((k.trim().to_string(), v.trim().to_string()));
                        }
                        let n: usize = headers
                            .iter()
                            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                            .map(|(_, v)| v.parse().unwrap())
                            .unwrap_or(0);
                        let mut body = vec![0; n];
                        r.read_exact(&mut body).unwrap();
                        if path.starts_with("/hang/") && hanging.load(Ordering::SeqCst) {
                            // Never answer: hold the connection until the sender drops it.
                            holding.fetch_add(1, Ordering::SeqCst);
                            let _ = std::io::copy(&mut r, &mut std::io::sink());
                            return;
                        }
                        let status = if path.starts_with("/gone/") {
                            "410 Gone"
                        } else {
                            "201 Created"
                        };
                        into.lock().unwrap().push(Pushed {
                            path,
                            headers,
                            body,
                            at: std::time::Instant::now(),
                        });
                        let _ = write!(conn, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n");
                    }
                });
            }
        });
        PushService {
            base,
            got,
            hang,
            held,
        }
    }

    /// The POSTs to `path` so far.
    pub fn to(&self, path: &str) -> Vec<Pushed> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter(|p| p.path == path)
            .cloned()
            .collect()
    }

    /// Wait until `path` got `n` POSTs; they.
    pub fn wait_for(&self, path: &str, n: usize) -> Vec<Pushed> {
        assert!(
            wait_until(DEADLINE, || self.to(path).len() >= n),
            "{n} push message(s) to {path} did not arrive: {:?}",
            self.got
                .lock()
                .unwrap()
                .iter()
                .map(|p| &p.path)
                .collect::<Vec<_>>()
        );
        self.to(path)
    }
}

/// The test's browser: a subscription's keys (RFC 8291's `p256dh` and `auth`).
pub struct Device {
    pub endpoint: String,
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl Device {
    pub fn new(endpoint: String) -> Device {
        let secret = loop {
            let mut b = [0u8; 32];
            getrandom::getrandom(&mut b).unwrap();
            if let Ok(k) = p256::SecretKey::from_slice(&b) {
                break k;
            }
        };
        let mut auth = [0u8; 16];
        getrandom::getrandom(&mut auth).unwrap();
        Device {
            endpoint,
            secret,
            auth,
        }
    }

    fn public(&self) -> Vec<u8> {
        use p256::elliptic_curve::sec1::ToEncodedPoint;
        self.secret
            .public_key()
            .to_encoded_point(false)
            .as_bytes()
            .to_vec()
    }

    /// `PushSubscription.toJSON()`, as the page's script posts it.
    pub fn subscription(&self) -> Value {
        json!({"endpoint": self.endpoint, "expirationTime": null,
               "keys": {"p256dh": B64.encode(self.public()), "auth": B64.encode(self.auth)}})
    }

    /// Decrypt a message sent to this device: RFC 8291's input keying material from the
    /// ECDH secret with the sender's key (the record's key id) and the auth secret, then
    /// RFC 8188's record.
    pub fn decrypt(&self, body: &[u8]) -> Value {
        assert!(body.len() > 21 + 65, "too short for an aes128gcm record");
        let idlen = body[20] as usize;
        assert_eq!(idlen, 65, "the key id is the sender's P-256 public key");
        let as_public = p256::PublicKey::from_sec1_bytes(&body[21..21 + idlen]).unwrap();
        let shared =
            p256::ecdh::diffie_hellman(self.secret.to_nonzero_scalar(), as_public.as_affine());
        let mut info = b"WebPush: info\0".to_vec();
        info.extend_from_slice(&self.public());
        info.extend_from_slice(&body[21..21 + idlen]);
        let hk = hkdf::Hkdf::<sha2::Sha256>::new(Some(&self.auth), shared.raw_secret_bytes());
        let mut ikm = [0u8; 32];
        hk.expand(&info, &mut ikm).unwrap();
        let plain = ece_native::decrypt(ikm, body.to_vec()).expect("the message decrypts");
        serde_json::from_slice(&plain).expect("the message is JSON")
    }
}

/// Check the VAPID header (RFC 8292): `vapid t=JWT, k=KEY`, the key the page gives, the
/// JWT signed by it (ES256), its audience the push service's origin, not expired, with
/// the contact as its subject.
fn check_vapid(p: &Pushed, key: &str, service: &str) {
    use p256::ecdsa::signature::Verifier;
    let auth = p.header("authorization").expect("an Authorization header");
    let rest = auth.strip_prefix("vapid ").expect("the vapid scheme");
    let mut t = "";
    let mut k = "";
    for part in rest.split(',') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("t=") {
            t = v;
        } else if let Some(v) = part.strip_prefix("k=") {
            k = v;
        }
    }
    assert_eq!(k, key, "k is the key the page subscribes with");
    let (signed, sig) = t.rsplit_once('.').unwrap();
    let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&B64.decode(k).unwrap()).unwrap();
    let sig = p256::ecdsa::Signature::from_slice(&B64.decode(sig).unwrap()).unwrap();
    vk.verify(signed.as_bytes(), &sig)
        .expect("the JWT verifies with the VAPID key");
    let claims: Value =
        serde_json::from_slice(&B64.decode(signed.split('.').nth(1).unwrap()).unwrap()).unwrap();
    // The origin without its port: the crate writes scheme://host (a push service's port
    // is the default one).
    let host = service
        .trim_start_matches("http://")
        .split(':')
        .next()
        .unwrap();
    assert_eq!(claims["aud"], format!("http://{host}"), "{claims}");
    assert_eq!(claims["sub"], "mailto:ops@example.com");
    assert!(claims["exp"].as_i64().unwrap() > 1_700_000_000);
    assert_eq!(p.header("content-encoding"), Some("aes128gcm"));
    assert!(p.header("ttl").is_some());
}

/// POST JSON with the session's cookie and CSRF header: status and body.
pub fn post_json(base: &str, path: &str, s: Option<&Session>, body: &Value) -> (u16, Value) {
    send_json("POST", base, path, s, body)
}

/// The same, with `method`.
pub fn send_json(
    method: &str,
    base: &str,
    path: &str,
    s: Option<&Session>,
    body: &Value,
) -> (u16, Value) {
    let mut req =
        ureq::request(method, &format!("{base}{path}")).set("Content-Type", "application/json");
    if let Some(s) = s {
        req = req.set("Cookie", &s.cookie).set("X-CSRF-Token", &s.csrf);
    }
    let r = match req.send_string(&body.to_string()) {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let status = r.status();
    let text = r.into_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn vapid_key(h: &Host) -> String {
    let v: Value = ureq::get(&format!("{}/push/key", h.base))
        .call()
        .unwrap()
        .into_json()
        .unwrap();
    v["key"].as_str().unwrap().to_string()
}

fn plan_review(id: &str) -> Value {
    json!({"id": id, "questions": [{"id": "plan", "question": "Ship <b>it</b>?\u{1b}[31m",
        "detail": "1. build\n2. deploy", "options": [{"label": "Approve"}, {"label": "Reject"}],
        "intent": {"kind": "plan-review", "approve": "Approve"}}]})
}

fn action<'a>(m: &'a Value, name: &str) -> &'a str {
    m["actions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"] == name)
        .unwrap_or_else(|| panic!("no {name} action in {m}"))["token"]
        .as_str()
        .unwrap()
}

/// Change one character in the middle of a token's claims.
fn altered(token: &str) -> String {
    let mut b = token.as_bytes().to_vec();
    let i = 3 + token[3..].find('.').unwrap() / 2;
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

fn pushing(env: &Env, extra: &[&str], vars: &[(&str, &str)], listen: &str) -> Host {
    let mut args = vec![
        "--listen",
        listen,
        "--push",
        "default",
        "--push-contact",
        "mailto:ops@example.com",
        "--delivery-retry-min",
        "50ms",
    ];
    args.extend_from_slice(extra);
    listening(env.daemon_with(&args, vars))
}

#[test]
fn a_push_message_decrypts_and_its_action_answers_once_as_that_person() {
    let env = Env::new();
    let service = PushService::start();
    let h = pushing(&env, &[], &[], "127.0.0.1:0");
    let key_file = env.root().join("push-vapid.key");
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&key_file).unwrap().permissions().mode()
    };
    assert_eq!(mode & 0o777, 0o600, "the VAPID key is made 0600");
    let key = vapid_key(&h);
    let (alice_t, bob_t) = (
        token(&env, "reviewer", "alice", None),
        token(&env, "reviewer", "bob", None),
    );
    let (alice, bob) = (login(&h, &alice_t), login(&h, &bob_t));
    let phone = Device::new(format!("{}/push/alice-phone", service.base));
    let bobs = Device::new(format!("{}/push/bob-phone", service.base));
    let gone = Device::new(format!("{}/gone/old-laptop", service.base));
    for (s, d) in [(&alice, &phone), (&bob, &bobs), (&alice, &gone)] {
        let (st, body) = post_json(&h.base, "/push/subscriptions", Some(s), &d.subscription());
        assert_eq!(st, 201, "{body}");
    }
    // Without the session's CSRF token, or a subscription the daemon must not post to:
    // refused, nothing stored.
    let no_csrf = Session {
        csrf: "wrong".into(),
        base: alice.base.clone(),
        cookie: alice.cookie.clone(),
    };
    let (st, _) = post_json(
        &h.base,
        "/push/subscriptions",
        Some(&no_csrf),
        &phone.subscription(),
    );
    assert_eq!(st, 403);
    let mut evil = Device::new("http://10.1.2.3/steal".into()).subscription();
    let (st, body) = post_json(&h.base, "/push/subscriptions", Some(&alice), &evil);
    assert_eq!(
        (st, body["error"]["code"].as_str()),
        (400, Some("BAD_REQUEST")),
        "{body}"
    );
    evil["endpoint"] = json!(format!("{}/push/x", service.base));
    evil["keys"]["auth"] = json!("short");
    let (st, _) = post_json(&h.base, "/push/subscriptions", Some(&alice), &evil);
    assert_eq!(st, 400);

    env.ask(&plan_review("p1")).ok();
    let sent = service.wait_for("/push/alice-phone", 1);
    check_vapid(&sent[0], &key, &service.base);
    let m = phone.decrypt(&sent[0].body);
    assert_eq!(m["request"], "p1");
    assert_eq!(m["url"], "/r/p1");
    assert_eq!(m["tag"], "dshq-p1");
    // The asker's text as one visible line, never markup or a live escape.
    assert_eq!(m["body"], "Ship <b>it</b>?\\x1b[31m");
    let (approve, deny) = (
        action(&m, "approve").to_string(),
        action(&m, "deny").to_string(),
    );
    // Bob's phone got his own message; the gone device was removed at its 410.
    let bob_m = bobs.decrypt(&service.wait_for("/push/bob-phone", 1)[0].body);
    service.wait_for("/gone/old-laptop", 1);

    let before = actors(&env, "p1");
    let tap = |token: &str, endpoint: &str| {
        post_json(
            &h.base,
            "/push/act",
            None,
            &json!({"token": token, "endpoint": endpoint}),
        )
    };
    // Altered: LINK_INVALID.
    let (st, body) = tap(&altered(&approve), &phone.endpoint);
    assert_eq!(body["error"]["code"], "LINK_INVALID", "{st} {body}");
    // Alice's action presented from bob's device, and bob's own action from alice's
    // device: FORBIDDEN.
    let (st, body) = tap(&approve, &bobs.endpoint);
    assert_eq!(
        (st, body["error"]["code"].as_str()),
        (403, Some("FORBIDDEN")),
        "{body}"
    );
    let (st, body) = tap(action(&bob_m, "approve"), &phone.endpoint);
    assert_eq!(
        (st, body["error"]["code"].as_str()),
        (403, Some("FORBIDDEN")),
        "{body}"
    );
    assert_eq!(
        actors(&env, "p1"),
        before,
        "a refused action changes nothing"
    );
    assert_eq!(status(&env, "p1"), "pending");

    // Alice's tap from her phone: answered, as web:alice, approved.
    let (st, body) = tap(&approve, &phone.endpoint);
    assert_eq!(st, 200, "{body}");
    let show = env.json(&["show", "p1"]).ok().json();
    assert_eq!(show["status"], "answered", "{show}");
    assert_eq!(show["outcome"]["decision"], "approved", "{show}");
    assert_eq!(show["outcome"]["provider"], "web:alice", "{show}");
    assert!(
        actors(&env, "p1").contains(&"answered:web:alice".to_string()),
        "{:?}",
        actors(&env, "p1")
    );
    // Replayed, or the other action of the same notification: spent.
    let after = actors(&env, "p1");
    let (_, body) = tap(&approve, &phone.endpoint);
    assert_eq!(body["error"]["code"], "LINK_USED", "{body}");
    let (_, body) = tap(&deny, &phone.endpoint);
    assert_eq!(body["error"]["code"], "LINK_USED", "{body}");
    assert_eq!(actors(&env, "p1"), after);

    // The next request goes to the live devices only: the gone one was removed.
    env.ask(&plan_review("p2")).ok();
    service.wait_for("/push/alice-phone", 2);
    service.wait_for("/push/bob-phone", 2);
    assert_eq!(service.to("/gone/old-laptop").len(), 1);

    // A reminder goes out too, and says so.
    let mut r = crate::helpers::simple_request("p3");
    r["ladder"] = json!({"remindAfter": "1s", "expireAfter": "1h"});
    env.ask(&r).ok();
    let mut reminded = Value::Null;
    assert!(
        wait_until(DEADLINE, || {
            reminded = service
                .to("/push/alice-phone")
                .iter()
                .map(|p| phone.decrypt(&p.body))
                .find(|m| m["request"] == "p3" && m["kind"] == "reminded")
                .unwrap_or(Value::Null);
            !reminded.is_null()
        }),
        "no reminder of p3 was pushed"
    );
    assert_eq!(reminded["title"], "Reminder: default · dshq");
    drop(h);
}

#[test]
fn an_expired_or_revoked_action_is_refused_and_changes_nothing() {
    let env = Env::new();
    let service = PushService::start();
    let port = crate::browser::free_port();
    let listen = format!("127.0.0.1:{port}");
    let h = pushing(&env, &[], &[], &listen);
    let alice = login(&h, &token(&env, "reviewer", "alice", None));
    let phone = Device::new(format!("{}/push/alice-phone", service.base));
    let (st, _) = post_json(
        &h.base,
        "/push/subscriptions",
        Some(&alice),
        &phone.subscription(),
    );
    assert_eq!(st, 201);
    env.ask(&crate::helpers::simple_request("e1")).ok();
    let m = phone.decrypt(&service.wait_for("/push/alice-phone", 1)[0].body);
    // A select of two options: one action per option.
    let titles: Vec<&str> = m["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Postgres", "SQLite"]);
    let pick = action(&m, "option2").to_string();
    assert_eq!(h.daemon.stop(), 0);

    // The same root 25 hours later (actions act 24h by default).
    let later = pushing(&env, &[], &[("DSHQ_CLOCK_SKEW", "+25h")], &listen);
    let before = actors(&env, "e1");
    let (st, body) = post_json(
        &later.base,
        "/push/act",
        None,
        &json!({"token": pick, "endpoint": phone.endpoint}),
    );
    assert_eq!(body["error"]["code"], "LINK_EXPIRED", "{st} {body}");
    assert_eq!(actors(&env, "e1"), before);
    assert_eq!(status(&env, "e1"), "pending");
    drop(later);

    // Back at its time, with alice's token revoked: FORBIDDEN, nothing changes.
    let h = pushing(&env, &[], &[], &listen);
    env.json(&["token", "revoke", "alice"]).ok();
    let (st, body) = post_json(
        &h.base,
        "/push/act",
        None,
        &json!({"token": pick, "endpoint": phone.endpoint}),
    );
    assert_eq!(
        (st, body["error"]["code"].as_str()),
        (403, Some("FORBIDDEN")),
        "{body}"
    );
    assert_eq!(actors(&env, "e1"), before);
    assert_eq!(status(&env, "e1"), "pending");
}

/// A reviewer stops notifying a device from the page: only the identity that subscribed
/// it can (anyone else's attempt, or one without the session's CSRF token, changes
/// nothing), and once removed the device gets no further message.
#[test]
fn a_device_is_removed_only_by_who_subscribed_it_and_then_gets_nothing() {
    let env = Env::new();
    let service = PushService::start();
    let h = pushing(&env, &[], &[], "127.0.0.1:0");
    let (alice_t, bob_t) = (
        token(&env, "reviewer", "alice", None),
        token(&env, "reviewer", "bob", None),
    );
    let (alice, bob) = (login(&h, &alice_t), login(&h, &bob_t));
    let phone = Device::new(format!("{}/push/alice-phone", service.base));
    let (st, body) = post_json(
        &h.base,
        "/push/subscriptions",
        Some(&alice),
        &phone.subscription(),
    );
    assert_eq!(st, 201, "{body}");
    let remove = |s: Option<&Session>| {
        send_json(
            "DELETE",
            &h.base,
            "/push/subscriptions",
            s,
            &json!({"endpoint": phone.endpoint}),
        )
    };
    // Bob's session, a session without its CSRF token, no session: refused, kept.
    let (st, body) = remove(Some(&bob));
    assert_eq!(
        (st, body["error"]["code"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );
    let no_csrf = Session {
        csrf: "wrong".into(),
        base: alice.base.clone(),
        cookie: alice.cookie.clone(),
    };
    assert_eq!(remove(Some(&no_csrf)).0, 403);
    // No session: sent to log in (the device still gets the next message).
    let _ = remove(None);
    env.ask(&crate::helpers::simple_request("u1")).ok();
    assert_eq!(
        phone.decrypt(&service.wait_for("/push/alice-phone", 1)[0].body)["request"],
        "u1"
    );
    // Alice's own: removed once; then nothing more reaches the device.
    let (st, body) = remove(Some(&alice));
    assert_eq!((st, &body), (200, &json!({"unsubscribed": true})));
    assert_eq!(remove(Some(&alice)).0, 404);
    env.ask(&crate::helpers::simple_request("u2")).ok();
    assert!(wait_until(DEADLINE, || crate::webhooks::deliveries(
        &env, "u2"
    )
    .iter()
    .all(|d| d["deliveredMs"].is_i64())));
    assert_eq!(service.to("/push/alice-phone").len(), 1);
}

#[test]
fn a_daemon_without_push_has_no_key_route() {
    let env = Env::new();
    let h = host(&env, &[]);
    let r = ureq::get(&format!("{}/push/key", h.base)).call();
    assert!(matches!(r, Err(ureq::Error::Status(404, _))), "{r:?}");
}

#[test]
fn in_a_real_browser_the_page_is_an_app_whose_worker_registers_and_which_posts_a_subscription() {
    use crate::browser::{browser, has, js, log_in_on_this_page, start_driver, until};
    let (_driver, driver_url) = start_driver();
    let env = Env::new();
    let service = PushService::start();
    let rita = token(&env, "reviewer", "rita", None);
    let h = pushing(&env, &[], &[], "127.0.0.1:0");
    let profile = tempfile::tempdir().unwrap();
    let device = Device::new(format!("{}/push/rita-browser", service.base));
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser(&driver_url, profile.path(), true).await;
        c.goto(&format!("{}/login", h.base)).await.unwrap();
        log_in_on_this_page(&c, &rita).await;

        // The manifest the page links to loads, under the page's CSP.
        assert!(has(&c, "link[rel=manifest][href='/manifest.webmanifest']").await);
        js(
            &c,
            "fetch(document.querySelector('link[rel=manifest]').href).then(r => r.json())\
                .then(m => { window.__manifest = m; }); return null;",
        )
        .await;
        until("the manifest", || async {
            js(&c, "return window.__manifest || null;").await != Value::Null
        })
        .await;
        let m = js(&c, "return window.__manifest;").await;
        assert_eq!(
            (m["name"].as_str(), m["display"].as_str()),
            (Some("dshq"), Some("standalone"))
        );
        assert_eq!(m["start_url"], "/");

        // The service worker registers and activates, scoped to the whole page.
        js(
            &c,
            "navigator.serviceWorker.ready.then(r => { window.__sw = \
                [r.active && r.active.scriptURL, r.scope]; }); return null;",
        )
        .await;
        until("the service worker", || async {
            js(&c, "return window.__sw || null;").await != Value::Null
        })
        .await;
        let sw = js(&c, "return window.__sw;").await;
        assert_eq!(sw[0], format!("{}/sw.js", h.base), "{sw}");
        assert_eq!(sw[1], format!("{}/", h.base), "{sw}");

        // The daemon pushes: the page offers to notify this device.
        until("the Notify this device button", || async {
            js(
                &c,
                "var b = document.getElementById('push-subscribe'); return !!b && !b.hidden;",
            )
            .await
                == Value::Bool(true)
        })
        .await;

        // Chromium's own subscribe needs its vendor's push service, which cannot be reached
        // here: the page posts the subscription it would have got, through its own code.
        let sub = device.subscription().to_string();
        js(
            &c,
            &format!(
                "window.dshqPostSubscription({sub}).then(r => {{ window.__subscribed = r; }}, \
                e => {{ window.__subscribed = String(e); }}); return null;"
            ),
        )
        .await;
        until("the posted subscription", || async {
            js(&c, "return window.__subscribed || null;").await != Value::Null
        })
        .await;
        let r = js(&c, "return window.__subscribed;").await;
        assert_eq!(r["person"], "rita", "{r}");

        // The subscription the page posted gets the next request's message.
        env.ask(&crate::helpers::simple_request("b1")).ok();
        let m = device.decrypt(&service.wait_for("/push/rita-browser", 1)[0].body);
        assert_eq!(m["request"], "b1");

        // The page removes it, through its own code: once.
        for want in [true, false] {
            js(
                &c,
                &format!(
                    "window.__removed = null; window.dshqRemoveSubscription({:?}).then(r => \
                    {{ window.__removed = r; }}, e => {{ window.__removed = String(e); }}); \
                    return null;",
                    device.endpoint
                ),
            )
            .await;
            until("the removal", || async {
                js(&c, "return window.__removed;").await != Value::Null
            })
            .await;
            assert_eq!(js(&c, "return window.__removed;").await, Value::Bool(want));
        }
        c.close().await.unwrap();
    });
    env.ask(&crate::helpers::simple_request("b2")).ok();
    assert!(wait_until(DEADLINE, || crate::webhooks::deliveries(
        &env, "b2"
    )
    .iter()
    .all(|d| d["deliveredMs"].is_i64())));
    assert_eq!(service.to("/push/rita-browser").len(), 1);
}

/// Each device is sent to on its own: with one device's push service hung, the other
/// device gets the message at once (well inside `--push-timeout`), and the retries that
/// follow the hung one's timeouts go to it alone, so once it recovers each device has the
/// message exactly once and the delivery is done.
#[test]
fn a_hung_device_delays_no_other_and_a_retry_reaches_only_the_devices_not_yet_reached() {
    let env = Env::new();
    let service = PushService::start();
    service.hang.store(true, Ordering::SeqCst);
    let timeout = Duration::from_secs(3);
    let h = pushing(&env, &["--push-timeout", "3s"], &[], "127.0.0.1:0");
    let alice = login(&h, &token(&env, "reviewer", "alice", None));
    let laptop = Device::new(format!("{}/push/alice-laptop", service.base));
    let phone = Device::new(format!("{}/hang/alice-phone", service.base));
    for d in [&laptop, &phone] {
        let (st, body) = post_json(
            &h.base,
            "/push/subscriptions",
            Some(&alice),
            &d.subscription(),
        );
        assert_eq!(st, 201, "{body}");
    }
    let asked = Instant::now();
    env.ask(&crate::helpers::simple_request("h1")).ok();
    let first = service.wait_for("/push/alice-laptop", 1);
    assert!(
        first[0].at.duration_since(asked) < timeout,
        "the healthy device waited {:?}, the hung one's timeout",
        first[0].at.duration_since(asked)
    );
    assert_eq!(laptop.decrypt(&first[0].body)["request"], "h1");
    // The hung device's first attempt timed out and it was tried again: the healthy
    // device, reached already, was not.
    assert!(
        wait_until(DEADLINE, || service.held.load(Ordering::SeqCst) >= 2),
        "the hung device was not tried again: {}",
        service.held.load(Ordering::SeqCst)
    );
    assert_eq!(service.to("/push/alice-laptop").len(), 1, "sent again");
    let pending = crate::webhooks::deliveries(&env, "h1");
    assert!(
        pending.iter().all(|d| !d["deliveredMs"].is_i64()),
        "delivered while a device was not reached: {pending:?}"
    );

    // The push service recovers: the next retry reaches the phone, and the delivery is done.
    service.hang.store(false, Ordering::SeqCst);
    let recovered = service.wait_for("/hang/alice-phone", 1);
    assert_eq!(phone.decrypt(&recovered[0].body)["request"], "h1");
    assert!(wait_until(DEADLINE, || crate::webhooks::deliveries(
        &env, "h1"
    )
    .iter()
    .all(|d| d["deliveredMs"].is_i64())));
    assert_eq!(
        service.to("/push/alice-laptop").len(),
        1,
        "the healthy device twice"
    );
    assert_eq!(
        service.to("/hang/alice-phone").len(),
        1,
        "the recovered device twice"
    );
}
