//! The Slack channel through the real binary: `dshq daemon --listen 0 --slack`
//! against a stand-in for Slack's Web API that this test runs on loopback (a small
//! HTTP/1.1 server on a std `TcpListener`, recording each `chat.postMessage`,
//! `chat.update` and `chat.postEphemeral` call and answering as Slack does: `{"ok": true,
//! "channel", "ts"}`, or HTTP 429 with `Retry-After`). Slack itself cannot be reached from
//! these machines.
//!
//! Presses are sent to `POST /slack/interactions` as Slack sends them: a form body with a
//! `payload` field (a `block_actions` payload built from the button dshq posted), signed
//! here as Slack's "Verifying requests from Slack" describes, computed independently of
//! dshq's code (HMAC-SHA256 keyed by the signing secret over `v0:{timestamp}:{body}`, the
//! header `v0=` and its hex). A valid press answers as the mapped reviewer; a bad
//! signature, an old timestamp, an unknown user and a second press are refused and change
//! nothing (the HTTP status, the outcome file, the event log).

use std::io::{BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

use crate::api::listening;
use crate::helpers::*;

pub(crate) const TOKEN: &str = "xoxb-1234-5678-test-token";
pub(crate) const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const CHANNEL: &str = "C0DSHQOPS";

/// One Web API call the stand-in got.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    method: String,
    auth: String,
    pub(crate) body: Value,
    /// What the stand-in answered.
    reply: Value,
}

/// The stand-in for Slack's Web API.
#[derive(Clone)]
pub(crate) struct FakeSlack {
    port: u16,
    calls: Arc<Mutex<Vec<Call>>>,
    /// Answer this many `chat.postMessage` calls with HTTP 429 first.
    rate_limit_posts: Arc<Mutex<usize>>,
    ts: Arc<AtomicU64>,
}

impl FakeSlack {
    /// A stand-in with nothing recorded yet, on a new loopback listener.
    fn bound() -> (FakeSlack, TcpListener) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let s = FakeSlack {
            port: listener.local_addr().unwrap().port(),
            calls: Default::default(),
            rate_limit_posts: Default::default(),
            ts: Arc::new(AtomicU64::new(100)),
        };
        (s, listener)
    }

    pub(crate) fn start() -> FakeSlack {
        let (s, listener) = FakeSlack::bound();
        let me = s.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let me = me.clone();
                std::thread::spawn(move || me.serve(conn));
            }
        });
        s
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/api", self.port)
    }

    /// The same stand-in behind TLS, with a certificate for `localhost` signed by a CA
    /// made here: the CA's PEM is returned, for the daemon's trust store.
    fn start_tls() -> (FakeSlack, String) {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, "slack stand-in CA");
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(cert.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .unwrap();
        let config = Arc::new(config);
        let (s, listener) = FakeSlack::bound();
        let me = s.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let (me, config) = (me.clone(), config.clone());
                std::thread::spawn(move || {
                    let tls = rustls::ServerConnection::new(config).unwrap();
                    me.serve(rustls::StreamOwned::new(tls, conn));
                });
            }
        });
        (s, ca.pem())
    }

    fn serve(&self, conn: impl Read + Write) {
        let mut reader = BufReader::new(conn);
        loop {
            let Some((line, headers, body)) = read_http_request(&mut reader) else {
                return;
            };
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let method = path.trim_start_matches("/api/").to_string();
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let (status, extra, answer) = match method.as_str() {
                "chat.postMessage" => {
                    let mut limited = self.rate_limit_posts.lock().unwrap();
                    if *limited > 0 {
                        *limited -= 1;
                        (
                            "429 Too Many Requests",
                            "retry-after: 1\r\n",
                            json!({"ok": false, "error": "ratelimited"}),
                        )
                    } else {
                        let n = self.ts.fetch_add(1, Ordering::SeqCst);
                        (
                            "200 OK",
                            "",
                            json!({"ok": true, "channel": body["channel"],
                                   "ts": format!("1800000000.{n:06}"),
                                   "message": {"text": body["text"]}}),
                        )
                    }
                }
                "chat.update" => (
                    "200 OK",
                    "",
                    json!({"ok": true, "channel": body["channel"], "ts": body["ts"],
                           "text": body["text"]}),
                ),
                "chat.postEphemeral" => ("200 OK", "", json!({"ok": true, "message_ts": "1.1"})),
                _ => (
                    "200 OK",
                    "",
                    json!({"ok": false, "error": "unknown_method"}),
                ),
            };
            self.calls.lock().unwrap().push(Call {
                method: method.clone(),
                auth: headers.get("authorization").cloned().unwrap_or_default(),
                body: body.clone(),
                reply: answer.clone(),
            });
            let text = answer.to_string();
            if write!(
                reader.get_mut(),
                "HTTP/1.1 {status}\r\ncontent-type: application/json; charset=utf-8\r\n{extra}content-length: {}\r\n\r\n{text}",
                text.len()
            )
            .is_err()
            {
                return;
            }
        }
    }

    pub(crate) fn calls(&self, method: &str) -> Vec<Call> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// The successful posts about request `id` (its button values or its link name it).
    pub(crate) fn posts_of(&self, id: &str) -> Vec<Call> {
        self.calls("chat.postMessage")
            .into_iter()
            .filter(|c| c.body.to_string().contains(&format!("/r/{id}|")))
            .collect()
    }
}

/// Slack's signature of `body` at `timestamp`, written here from Slack's documentation.
fn slack_signature(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("v0:{timestamp}:").as_bytes());
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("v0={hex}")
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// A `block_actions` payload as Slack sends it when `user` presses `button` of `post`.
fn press_body(user: &str, post: &Call, ts: &str, button: &Value) -> Vec<u8> {
    press_body_in(CHANNEL, user, post, ts, button)
}

/// The same, for a message in `channel`.
fn press_body_in(channel: &str, user: &str, post: &Call, ts: &str, button: &Value) -> Vec<u8> {
    let block = post.body["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "actions")
        .cloned()
        .unwrap_or(json!({"block_id": "gone"}));
    let payload = json!({
        "type": "block_actions",
        "user": {"id": user, "username": user.to_lowercase(), "team_id": "T0TEAM"},
        "api_app_id": "A0APP",
        "team": {"id": "T0TEAM", "domain": "example"},
        "container": {"type": "message", "message_ts": ts, "channel_id": channel,
                      "is_ephemeral": false},
        "channel": {"id": channel, "name": "ops"},
        "message": {"type": "message", "ts": ts, "text": post.body["text"]},
        "response_url": "https://hooks.slack.com/actions/T0TEAM/1/abc",
        "trigger_id": "1.2.3",
        "actions": [{
            "action_id": button["action_id"], "block_id": block["block_id"],
            "text": button["text"], "value": button["value"], "type": "button",
            "action_ts": "1800000000.5"
        }]
    });
    serde_urlencoded::to_string([("payload", payload.to_string())])
        .unwrap()
        .into_bytes()
}

/// POST a press to the endpoint, signed with `secret` at `timestamp`: status and body.
fn send_press(base: &str, body: &[u8], timestamp: i64, secret: &str) -> (u16, Value) {
    let ts = timestamp.to_string();
    let r = ureq::post(&format!("{base}/slack/interactions"))
        .set("Content-Type", "application/x-www-form-urlencoded")
        .set("X-Slack-Request-Timestamp", &ts)
        .set("X-Slack-Signature", &slack_signature(secret, &ts, body))
        .send_bytes(body);
    let (status, resp) = match r {
        Ok(resp) => (resp.status(), resp),
        Err(ureq::Error::Status(code, resp)) => (code, resp),
        Err(e) => panic!("the endpoint is not reached: {e}"),
    };
    let text = resp.into_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

struct Setup {
    env: Env,
    fake: FakeSlack,
    files: tempfile::TempDir,
}

/// A root whose config maps two Slack users to reviewers, the token and the signing
/// secret in files of their own (mode 0600), and the stand-in for Slack.
fn setup() -> Setup {
    setup_with("[slack.users]\nU0ALICE = \"alice\"\nU0BOB = \"bob\"\n")
}

/// [`setup`] with the config file `text`.
fn setup_with(text: &str) -> Setup {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let config = env.dir.path().join("config/dshq");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), text).unwrap();
    let files = tempfile::tempdir().unwrap();
    for (name, text) in [("token", TOKEN), ("signing", SIGNING_SECRET)] {
        let p = files.path().join(name);
        std::fs::write(&p, format!("{text}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    Setup {
        env,
        fake: FakeSlack::start(),
        files,
    }
}

impl Setup {
    fn daemon(&self, vars: &[(&str, &str)]) -> crate::api::Host {
        self.daemon_args(&[], vars)
    }

    /// The daemon with `extra` flags beside the usual ones.
    fn daemon_args(&self, extra: &[&str], vars: &[(&str, &str)]) -> crate::api::Host {
        let token = self.files.path().join("token");
        let signing = self.files.path().join("signing");
        let (slack, api) = (format!("default={CHANNEL}"), self.fake.url());
        let mut args = vec![
            "--listen",
            "0",
            "--slack",
            &slack,
            "--slack-api-url",
            &api,
            "--slack-token-file",
            token.to_str().unwrap(),
            "--slack-signing-secret-file",
            signing.to_str().unwrap(),
            "--slack-page-url",
            "https://dshq.example/",
            "--delivery-retry-min",
            "50ms",
        ];
        args.extend_from_slice(extra);
        let d = self.env.daemon_with(&args, vars);
        listening(d)
    }

    /// Wait until the Slack delivery of `id`'s `kind` event is delivered (its message
    /// posted and recorded: a press of it is judged against the record).
    fn delivered(&self, id: &str, kind: &str) {
        self.env.wait_delivered(id, "slack", kind)
    }

    fn events(&self, id: &str) -> Vec<Value> {
        self.env.events_of(id)
    }

    fn kinds(&self, id: &str) -> Vec<String> {
        self.events(id)
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_string())
            .collect()
    }

    fn status(&self, id: &str) -> String {
        self.env.json(&["show", id]).ok().json()["status"]
            .as_str()
            .unwrap()
            .to_string()
    }
}

#[test]
fn slack_posts_buttons_answers_a_valid_press_and_refuses_the_rest() {
    let s = setup();
    // The first post is rate limited: the attempt fails and the loop tries again.
    *s.fake.rate_limit_posts.lock().unwrap() = 1;
    let host = s.daemon(&[]);
    let hostile = "Deploy <!channel> & ping <@U0BOSS> via <https://evil.example|docs>?";
    s.env
        .ask(&json!({
            "id": "dep",
            "questions": [{"id": "go", "question": hostile,
                           "options": [{"label": "Ship <b>it</b>"}, {"label": "Hold"}]}]
        }))
        .ok();

    // The message: posted once the 429 was retried, with the bot token, in the channel.
    assert!(
        wait_until(DEADLINE, || s.fake.posts_of("dep").len() >= 2),
        "no message posted: {:?}\n{}",
        s.fake.calls("chat.postMessage"),
        host.daemon.log_text()
    );
    let tries = s.fake.calls("chat.postMessage");
    assert_eq!(tries.len(), 2, "one 429, then the post: {tries:?}");
    let post = s.fake.posts_of("dep").remove(1);
    assert_eq!(post.auth, format!("Bearer {TOKEN}"));
    assert_eq!(post.body["channel"], CHANNEL);
    let blocks = post.body["blocks"].as_array().unwrap();
    let actions = blocks
        .iter()
        .find(|b| b["type"] == "actions")
        .expect("buttons");
    let buttons = actions["elements"].as_array().unwrap();
    assert_eq!(buttons.len(), 2, "{post:?}");
    let values: Vec<Value> = buttons
        .iter()
        .map(|b| serde_json::from_str(b["value"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(
        values[0],
        json!({"r": "dep", "q": "go", "l": "Ship <b>it</b>"})
    );
    assert_eq!(values[1], json!({"r": "dep", "q": "go", "l": "Hold"}));
    assert_eq!(buttons[0]["type"], "button");
    assert_eq!(buttons[0]["text"]["type"], "plain_text");
    // The asker's text is escaped in every mrkdwn text: no live mention, broadcast or link.
    let mrkdwn: Vec<&Value> = blocks
        .iter()
        .filter(|b| b["type"] == "section")
        .map(|b| &b["text"])
        .collect();
    let texts: String = mrkdwn
        .iter()
        .map(|t| t["text"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        texts.contains(
            "Deploy &lt;!channel&gt; &amp; ping &lt;@U0BOSS&gt; via &lt;https://evil.example|docs&gt;?"
        ),
        "{texts}"
    );
    for bad in ["<!channel>", "<@U0BOSS>", "<https://evil"] {
        assert!(
            !post.body.to_string().contains(bad),
            "{bad} in {}",
            post.body
        );
    }
    assert!(mrkdwn.iter().all(|t| t["verbatim"] == true), "{mrkdwn:?}");
    assert!(texts.contains("<https://dshq.example/r/dep|"), "{texts}");
    // The recorded message is the one the stand-in answered with; the delivery took two
    // attempts (the 429, then the post).
    let posted_ts = "1800000000.000100";
    let mut row = Value::Null;
    assert!(
        wait_until(DEADLINE, || {
            let d = s.env.json(&["events", "dep", "--deliveries"]).ok().json();
            row = d
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["channel"] == "slack" && r["kind"] == "accepted")
                .cloned()
                .unwrap_or(Value::Null);
            !row["deliveredMs"].is_null()
        }),
        "{row}"
    );
    assert_eq!(row["attempts"], 2, "{row}");

    let base = host.base.clone();
    let alice_yes = press_body("U0ALICE", &post, posted_ts, &buttons[0]);
    let unchanged = |why: &str| {
        assert_eq!(s.status("dep"), "pending", "{why}");
        assert!(s.env.outcome("dep").is_none(), "{why}");
        assert_eq!(s.kinds("dep"), ["accepted"], "{why}");
    };

    // A bad signature: 401, nothing recorded.
    let (status, body) = send_press(&base, &alice_yes, unix_now(), "not-the-secret");
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "SLACK_BAD_SIGNATURE", "{body}");
    unchanged("bad signature");
    // A body changed after signing: 401.
    let ts_now = unix_now().to_string();
    let sig = slack_signature(SIGNING_SECRET, &ts_now, &alice_yes);
    let bob_body = press_body("U0BOB", &post, posted_ts, &buttons[1]);
    let r = ureq::post(&format!("{base}/slack/interactions"))
        .set("Content-Type", "application/x-www-form-urlencoded")
        .set("X-Slack-Request-Timestamp", &ts_now)
        .set("X-Slack-Signature", &sig)
        .send_bytes(&bob_body);
    assert!(matches!(r, Err(ureq::Error::Status(401, _))), "{r:?}");
    unchanged("a changed body");

    // An old timestamp (a replay of a captured press, signed right): 401.
    let (status, body) = send_press(&base, &alice_yes, unix_now() - 6 * 60, SIGNING_SECRET);
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "SLACK_STALE_REQUEST", "{body}");
    unchanged("old timestamp");

    // An unknown Slack user: 200 with an ephemeral refusal, told to them alone.
    let mallory = press_body("U0MALLORY", &post, posted_ts, &buttons[0]);
    let (status, body) = send_press(&base, &mallory, unix_now(), SIGNING_SECRET);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["response_type"], "ephemeral", "{body}");
    assert_eq!(body["replace_original"], false, "{body}");
    assert_eq!(body["error"]["code"], "SLACK_UNKNOWN_USER", "{body}");
    unchanged("unknown user");
    assert!(
        wait_until(DEADLINE, || s.fake.calls("chat.postEphemeral").iter().any(
            |c| c.body["user"] == "U0MALLORY" && c.body["channel"] == CHANNEL
        )),
        "{:?}",
        s.fake.calls("chat.postEphemeral")
    );

    // A valid press: answered as alice, from her Slack account.
    let (status, body) = send_press(&base, &alice_yes, unix_now(), SIGNING_SECRET);
    assert_eq!(status, 200, "{body}");
    let out = s.env.wait_outcome("dep");
    assert_eq!(out["status"], "answered", "{out}");
    assert_eq!(
        out["answer"]["answers"][0]["selected"],
        json!(["Ship <b>it</b>"]),
        "{out}"
    );
    assert_eq!(out["provider"], "slack:alice@U0ALICE", "{out}");
    let answered: Vec<Value> = s
        .events("dep")
        .into_iter()
        .filter(|e| e["kind"] == "answered")
        .collect();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["actor"], "slack:alice@U0ALICE", "{answered:?}");
    // The message is updated: who answered and when, no buttons left.
    assert!(
        wait_until(DEADLINE, || !s.fake.calls("chat.update").is_empty()),
        "no update: {}",
        host.daemon.log_text()
    );
    let update = s.fake.calls("chat.update").remove(0);
    assert_eq!(update.body["channel"], CHANNEL);
    assert_eq!(update.body["ts"], posted_ts);
    let u = update.body.to_string();
    assert!(!u.contains("\"actions\""), "{u}");
    assert!(
        u.contains("*Answered* by alice (<@U0ALICE> on Slack)"),
        "{u}"
    );
    assert!(u.contains("<!date^"), "{u}");
    assert!(u.contains("Ship &lt;b&gt;it&lt;/b&gt;"), "{u}");
    assert!(!u.contains("<!channel>"), "{u}");

    // A second press (bob, on the other button): refused, saying who answered; nothing
    // changes.
    let (status, body) = send_press(&base, &bob_body, unix_now(), SIGNING_SECRET);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error"]["code"], "REQUEST_FINAL", "{body}");
    let said = body["text"].as_str().unwrap();
    assert!(said.contains("already answered by alice"), "{said}");
    assert_eq!(s.env.outcome("dep").unwrap(), out);
    assert_eq!(
        s.events("dep")
            .iter()
            .filter(|e| e["kind"] == "answered")
            .count(),
        1
    );
    assert!(wait_until(DEADLINE, || s
        .fake
        .calls("chat.postEphemeral")
        .iter()
        .any(|c| c.body["user"] == "U0BOB")));

    // No secret in the log; the record verifies.
    let log = host.daemon.log_text();
    assert!(
        !log.contains(TOKEN) && !log.contains(SIGNING_SECRET),
        "{log}"
    );
    assert!(
        log.contains("SLACK_BAD_SIGNATURE") && log.contains("SLACK_UNKNOWN_USER"),
        "{log}"
    );
    s.env.json(&["audit", "verify"]).ok();
}

#[test]
fn a_request_without_buttons_links_the_page_and_its_expiry_updates_the_message() {
    let s = setup();
    let host = s.daemon(&[]);
    s.env
        .ask(&json!({
            "id": "why",
            "questions": [{"id": "q", "question": "Why did the build fail?"}],
            "ladder": {"expireAfter": "3m"}
        }))
        .ok();
    assert!(
        wait_until(DEADLINE, || !s.fake.posts_of("why").is_empty()),
        "{}",
        host.daemon.log_text()
    );
    let post = s.fake.posts_of("why").remove(0);
    let text = post.body.to_string();
    assert!(
        !text.contains("\"actions\""),
        "free text has no buttons: {text}"
    );
    assert!(
        text.contains("<https://dshq.example/r/why|Answer on the page>"),
        "{text}"
    );
    // Posted and recorded (a press is judged against the record) before the stop.
    s.env.wait_delivered("why", "slack", "accepted");
    assert_eq!(host.daemon.stop(), 0);

    // Four minutes on: the ladder expires it, and the message says so.
    let later = s.daemon(&[("DSHQ_CLOCK_SKEW", "+4m")]);
    let out = s.env.wait_outcome("why");
    assert_eq!(out["error"]["code"], "ASK_EXPIRED", "{out}");
    assert!(
        wait_until(DEADLINE, || !s.fake.calls("chat.update").is_empty()),
        "{}",
        later.daemon.log_text()
    );
    let u = s.fake.calls("chat.update").remove(0).body.to_string();
    assert!(
        u.contains("*Expired*") && u.contains("nobody answered"),
        "{u}"
    );
    assert!(!u.contains("\"actions\""), "{u}");
    // A press forged on it (signed, by a reviewer, 4 minutes ahead like the store's
    // clock): refused as over.
    let button = json!({"action_id": "dshq-answer-0", "text": {"type": "plain_text", "text": "x"},
                        "value": json!({"r": "why", "q": "q", "l": "x"}).to_string()});
    let body = press_body("U0ALICE", &post, "1800000000.000100", &button);
    let (status, resp) = send_press(&later.base, &body, unix_now() + 240, SIGNING_SECRET);
    assert_eq!(status, 200, "{resp}");
    assert_eq!(resp["error"]["code"], "REQUEST_FINAL", "{resp}");
    assert!(
        resp["text"].as_str().unwrap().contains("already expired"),
        "{resp}"
    );
    assert_eq!(s.env.outcome("why").unwrap(), out);
    // The store's clock judges the window: a press stamped at the wall clock's time
    // minus two minutes is six minutes old to a store four minutes ahead.
    let (status, resp) = send_press(&later.base, &body, unix_now() - 120, SIGNING_SECRET);
    assert_eq!(status, 401, "{resp}");
    assert_eq!(resp["error"]["code"], "SLACK_STALE_REQUEST", "{resp}");
}

#[test]
fn a_plan_review_is_approved_from_its_primary_button() {
    let s = setup();
    let host = s.daemon(&[]);
    s.env
        .ask(&json!({
            "id": "plan",
            "questions": [{"id": "p", "question": "Approve the migration plan?",
                           "detail": "1. copy\n2. switch <!here>",
                           "options": [{"label": "Revise"}, {"label": "Ship it"}],
                           "intent": {"kind": "plan-review", "approve": "Ship it"}}]
        }))
        .ok();
    assert!(
        wait_until(DEADLINE, || !s.fake.posts_of("plan").is_empty()),
        "{}",
        host.daemon.log_text()
    );
    let post = s.fake.posts_of("plan").remove(0);
    let actions = post.body["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "actions")
        .cloned()
        .expect("buttons");
    let buttons = actions["elements"].as_array().unwrap();
    let labels: Vec<&str> = buttons
        .iter()
        .map(|b| b["text"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Revise", "Ship it"]);
    assert_eq!(buttons[1]["style"], "primary");
    assert!(buttons[0].get("style").is_none());
    let text = post.body.to_string();
    assert!(text.contains("|Decline with feedback"), "{text}");
    assert!(
        text.contains("&lt;!here&gt;") && !text.contains("<!here>"),
        "{text}"
    );

    s.delivered("plan", "accepted");
    let body = press_body("U0BOB", &post, "1800000000.000100", &buttons[1]);
    let (status, resp) = send_press(&host.base, &body, unix_now(), SIGNING_SECRET);
    assert_eq!(status, 200, "{resp}");
    let out = s.env.wait_outcome("plan");
    assert_eq!(out["decision"], "approved", "{out}");
    assert_eq!(out["provider"], "slack:bob@U0BOB", "{out}");
    assert!(wait_until(DEADLINE, || s
        .fake
        .calls("chat.update")
        .iter()
        .any(|c| c
            .body
            .to_string()
            .contains("*Answered* by bob (<@U0BOB> on Slack)"))));
}

/// A delivery sent again after its message was recorded (the daemon died before marking
/// it delivered: simulated here by clearing the mark while it is stopped) posts no second
/// message.
#[test]
fn a_delivery_sent_again_after_a_crash_posts_no_second_message() {
    let s = setup();
    let host = s.daemon(&[]);
    s.env
        .ask(
            &json!({"id": "once", "questions": [{"id": "q", "question": "Go?",
                     "options": [{"label": "Yes"}, {"label": "No"}]}]}),
        )
        .ok();
    let row = |s: &Setup| -> Value {
        s.env
            .json(&["events", "once", "--deliveries"])
            .ok()
            .json()
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["channel"] == "slack" && r["kind"] == "accepted")
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert!(wait_until(DEADLINE, || !row(&s)["deliveredMs"].is_null()));
    assert_eq!(host.daemon.stop(), 0);
    let db = rusqlite::Connection::open(s.env.root().join("dshq.db")).unwrap();
    let n = db
        .execute(
            "UPDATE deliveries SET delivered_ms = NULL, next_ms = 0
              WHERE request_id = 'once' AND channel = 'slack'",
            [],
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(db);
    let again = s.daemon(&[]);
    assert!(
        wait_until(DEADLINE, || row(&s)["attempts"] == 2
            && !row(&s)["deliveredMs"].is_null()),
        "{}\n{}",
        row(&s),
        again.daemon.log_text()
    );
    assert_eq!(s.fake.posts_of("once").len(), 1, "posted once");
}

/// The Web API over HTTPS, as Slack's is: the stand-in behind TLS with a certificate of a
/// CA the daemon trusts through the system store's `SSL_CERT_FILE` gets the message; a
/// daemon that does not trust it sends nothing (the attempt fails on the certificate and
/// is retried).
#[test]
fn the_web_api_is_reached_over_https_and_an_untrusted_certificate_is_refused() {
    let s = setup();
    let (tls, ca_pem) = FakeSlack::start_tls();
    let ca_file = s.files.path().join("ca.pem");
    std::fs::write(&ca_file, &ca_pem).unwrap();
    let token = s.files.path().join("token");
    let signing = s.files.path().join("signing");
    let url = format!("https://localhost:{}/api", tls.port);
    let args = |url: &str| -> Vec<String> {
        [
            "--listen",
            "0",
            "--slack",
            &format!("default={CHANNEL}"),
            "--slack-page-url",
            "https://dshq.example",
            "--slack-api-url",
            url,
            "--slack-token-file",
            token.to_str().unwrap(),
            "--slack-signing-secret-file",
            signing.to_str().unwrap(),
            "--delivery-retry-min",
            "50ms",
        ]
        .iter()
        .map(|a| a.to_string())
        .collect()
    };
    let a = args(&url);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    // Not trusted: an empty store of roots (a file with no certificate).
    let empty = s.files.path().join("none.pem");
    std::fs::write(&empty, "").unwrap();
    let d = s
        .env
        .daemon_with(&a, &[("SSL_CERT_FILE", empty.to_str().unwrap())]);
    s.env
        .ask(
            &json!({"id": "tls1", "questions": [{"id": "q", "question": "Go?",
                     "options": [{"label": "Yes"}]}]}),
        )
        .ok();
    let failed = || -> Value {
        s.env
            .json(&["events", "tls1", "--deliveries"])
            .ok()
            .json()
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["channel"] == "slack")
            .cloned()
            .unwrap_or(Value::Null)
    };
    assert!(
        wait_until(DEADLINE, || failed()["attempts"].as_i64().unwrap_or(0) >= 2),
        "{}\n{}",
        failed(),
        d.log_text()
    );
    assert!(failed()["deliveredMs"].is_null(), "{}", failed());
    let why = failed()["lastError"].as_str().unwrap_or("").to_lowercase();
    assert!(why.contains("certificate"), "{why}");
    assert!(
        tls.calls("chat.postMessage").is_empty(),
        "nothing reached the server"
    );
    assert_eq!(d.stop(), 0);

    // Trusted: the same delivery goes out over TLS, with the token.
    let d = s
        .env
        .daemon_with(&a, &[("SSL_CERT_FILE", ca_file.to_str().unwrap())]);
    assert!(
        wait_until(DEADLINE, || !tls.posts_of("tls1").is_empty()),
        "{}\n{}",
        failed(),
        d.log_text()
    );
    assert_eq!(tls.posts_of("tls1")[0].auth, format!("Bearer {TOKEN}"));
    assert!(wait_until(DEADLINE, || !failed()["deliveredMs"].is_null()));
}

/// A press acts only on what its message was posted for, where the request is now: after
/// an escalation, the old context's message answers nothing (WRONG_CONTEXT) and the new
/// context's message does; a signed press whose button names a request its message was not
/// posted for (another request's, or one in a context that posts to no Slack channel) is
/// refused (FORBIDDEN). Each refusal changes nothing.
#[test]
fn a_press_answers_only_from_its_own_message_in_the_context_the_request_is_in() {
    const ESC: &str = "C0DSHQESC";
    let s = setup();
    let host = s.daemon_args(&["--slack", &format!("esc={ESC}")], &[]);
    let question = |id: &str, context: &str| {
        json!({"id": id, "context": context,
               "questions": [{"id": "go", "question": "Ship?",
                              "options": [{"label": "Yes"}, {"label": "No"}]}]})
    };
    let mut r1 = question("r1", "default");
    r1["ladder"] = json!({"escalateAfter": "1s", "escalateTo": "esc"});
    s.env.ask(&r1).ok();
    s.env.ask(&question("other1", "default")).ok();
    s.env.ask(&question("quiet1", "quiet")).ok();
    let in_channel = |id: &str, channel: &str| {
        s.fake
            .posts_of(id)
            .into_iter()
            .find(|c| c.body["channel"] == channel && c.reply["ok"] == true)
    };
    assert!(
        wait_until(DEADLINE, || in_channel("r1", ESC).is_some()
            && in_channel("other1", CHANNEL).is_some()),
        "no escalated message: {:?}\n{}",
        s.fake.calls("chat.postMessage"),
        host.daemon.log_text()
    );
    assert_eq!(s.env.json(&["show", "r1"]).ok().json()["context"], "esc");
    s.delivered("r1", "escalated");
    s.delivered("other1", "accepted");
    let (old, new, other) = (
        in_channel("r1", CHANNEL).expect("r1's first message"),
        in_channel("r1", ESC).unwrap(),
        in_channel("other1", CHANNEL).unwrap(),
    );
    let button = |post: &Call, i: usize| {
        post.body["blocks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["type"] == "actions")
            .expect("buttons")["elements"][i]
            .clone()
    };
    let ts = |post: &Call| post.reply["ts"].as_str().unwrap().to_string();
    let before = s.kinds("r1");
    let refused = |body: Vec<u8>, code: &str, what: &str| {
        let (status, reply) = send_press(&host.base, &body, unix_now(), SIGNING_SECRET);
        assert_eq!(status, 200, "{what}: {reply}");
        assert_eq!(reply["error"]["code"], code, "{what}: {reply}");
        assert_eq!(reply["response_type"], "ephemeral", "{what}");
        for id in ["r1", "other1", "quiet1"] {
            assert_eq!(s.status(id), "pending", "{what}: {id} changed");
        }
        assert_eq!(s.kinds("r1"), before, "{what}");
    };

    // The old context's message, after the escalation: its reviewers answer it no more.
    refused(
        press_body_in(CHANNEL, "U0ALICE", &old, &ts(&old), &button(&old, 0)),
        "WRONG_CONTEXT",
        "the old message",
    );
    // r1's button value on another request's message: not what that message was for.
    refused(
        press_body_in(CHANNEL, "U0ALICE", &other, &ts(&other), &button(&new, 0)),
        "FORBIDDEN",
        "a button copied onto another message",
    );
    // A request in a context with no Slack channel, named by a press signed with the
    // secret: it has no message anywhere.
    let forged = json!({"action_id": "dshq-answer-0", "type": "button",
        "text": {"type": "plain_text", "text": "Yes"},
        "value": json!({"r": "quiet1", "q": "go", "l": "Yes"}).to_string()});
    refused(
        press_body_in(CHANNEL, "U0ALICE", &other, &ts(&other), &forged),
        "FORBIDDEN",
        "a request without a Slack message",
    );
    // The message in the channel of the context it is in now answers it.
    let (status, reply) = send_press(
        &host.base,
        &press_body_in(ESC, "U0BOB", &new, &ts(&new), &button(&new, 1)),
        unix_now(),
        SIGNING_SECRET,
    );
    assert_eq!(status, 200, "{reply}");
    assert!(
        wait_until(DEADLINE, || s.status("r1") == "answered"),
        "{reply}"
    );
    let o = s.env.outcome("r1").unwrap();
    assert_eq!(o["provider"], "slack:bob@U0BOB");
    assert_eq!(o["answer"]["answers"][0]["selected"], json!(["No"]));
    assert_eq!(s.status("quiet1"), "pending");
    assert_eq!(s.status("other1"), "pending");
}

/// One person is one voter from the web and from Slack: carol votes with her web token,
/// then presses from her Slack account (`[slack.users]`) and from a second one the people
/// directory links to her (which alone admits it): both refused `ALREADY_VOTED`, told to
/// her alone, nothing recorded. Then three persons on three faces (carol on the web, bob
/// at the terminal, dave in Slack) meet a three-of-three rule.
#[test]
fn one_person_web_then_slack_is_refused_and_three_persons_on_three_faces_meet_three_of_three() {
    let s = setup_with(
        "[slack.users]\nU0CAROL = \"carol\"\nU0DAVE = \"dave\"\n\n[people]\ncarol = [\"slack:U0CAROL2\"]\n",
    );
    let carol = crate::api::token(&s.env, "reviewer", "carol", None);
    let host = s.daemon(&[]);
    s.env
        .ask(&json!({
            "id": "q3",
            "questions": [{"id": "go", "question": "Ship the release?",
                           "options": [{"label": "Ship"}, {"label": "Hold"}]}],
            "quorum": {"approvals": 3}
        }))
        .ok();
    assert!(
        wait_until(DEADLINE, || !s.fake.posts_of("q3").is_empty()),
        "no message: {}",
        host.daemon.log_text()
    );
    let post = s.fake.posts_of("q3").remove(0);
    // A press names the message it came from: the one the stand-in answered for q3.
    let posted_ts = post.reply["ts"].as_str().unwrap().to_string();
    let ship = post.body["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "actions")
        .expect("buttons")["elements"][0]
        .clone();
    let r = host.post(
        "/requests/q3/answer",
        Some(&carol),
        &json!({"answers": [{"id": "go", "selected": ["Ship"]}]}),
    );
    assert_eq!(r.status, 202, "{r:?}");
    for user in ["U0CAROL", "U0CAROL2"] {
        let press = press_body(user, &post, &posted_ts, &ship);
        let (status, body) = send_press(&host.base, &press, unix_now(), SIGNING_SECRET);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["error"]["code"], "ALREADY_VOTED", "{user}: {body}");
    }
    let shown = s.env.json(&["show", "q3"]).ok().json();
    assert_eq!(
        shown["quorum"]["votes"].as_array().unwrap().len(),
        1,
        "{shown}"
    );
    assert_eq!(s.kinds("q3"), ["accepted", "voted"]);

    // bob at the terminal, then dave in Slack: three persons, three faces.
    s.env
        .json(&["answer", "q3", "--name", "bob", "--select", "Ship"])
        .ok();
    let press = press_body("U0DAVE", &post, &posted_ts, &ship);
    let (status, body) = send_press(&host.base, &press, unix_now(), SIGNING_SECRET);
    assert_eq!(status, 200, "{body}");
    let out = s.env.wait_outcome("q3");
    assert_eq!(
        out["approvers"],
        json!(["web:carol", "provider:bob", "slack:dave"]),
        "{out}"
    );
    let persons: Vec<&str> = out["votes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["person"].as_str().unwrap())
        .collect();
    assert_eq!(persons, ["carol", "bob", "dave"]);
    s.env.run(&["audit", "verify"]).ok();
    host.daemon.stop();
}
