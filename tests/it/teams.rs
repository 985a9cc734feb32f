//! The Microsoft Teams channel through the real binary: `dshq daemon --listen 0` with a
//! `[teams]` table, against a stand-in for the Bot Framework that this test runs on
//! loopback: its OpenID metadata and key set (JWKS), its token endpoint (client
//! credentials) and the Bot Connector (`POST …/v3/conversations/{id}/activities`, `PUT
//! …/activities/{activityId}`). Microsoft's services cannot be reached from these
//! machines.
//!
//! The stand-in signs the calls to the bot's messaging endpoint as the Bot Framework does:
//! an RS256 JWT (made with an RSA key openssl generates here) whose key id is published in
//! the key set, issuer `https://api.botframework.com`, audience the bot's app id, and a
//! `serviceUrl` claim. A valid action answers as the person `[people]` lists the Teams user
//! under; a token with a bad signature, expired, for another audience or issuer, unsigned,
//! or signed by a key the key set does not publish, a token for another service URL, an
//! unknown user, a forged card and a second action are refused with their codes and change
//! nothing.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use serde_json::{json, Value};

use crate::api::listening;
use crate::helpers::*;

const APP_ID: &str = "7e4b2c1a-3d5f-4e6a-8b9c-0d1e2f3a4b5c";
const PASSWORD: &str = "teams-app-password-for-tests";
const ALICE: &str = "11111111-2222-3333-4444-555555555555";
const MALLORY: &str = "99999999-8888-7777-6666-555555555555";
const CONVERSATION: &str = "19:ops0123@thread.tacv2";
const ISSUER: &str = "https://api.botframework.com";
const BOT_TOKEN: &str = "bot-token-1";

/// An RSA signing key of the stand-in (made by openssl), its kid and its public JWK.
#[derive(Clone)]
struct Key {
    kid: String,
    der: Vec<u8>,
    jwk: Value,
}

fn openssl(args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(out.status.success(), "openssl {args:?}: {out:?}");
    out.stdout
}

impl Key {
    fn new(kid: &str) -> Key {
        let dir = tempfile::tempdir().unwrap();
        let pem = dir.path().join("k.pem");
        let p = pem.to_str().unwrap();
        openssl(&["genrsa", "-traditional", "-out", p, "2048"]);
        let der = openssl(&["rsa", "-in", p, "-traditional", "-outform", "DER"]);
        let modulus = String::from_utf8(openssl(&["rsa", "-in", p, "-noout", "-modulus"])).unwrap();
        let hex = modulus.trim().trim_start_matches("Modulus=");
        let n: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        Key {
            kid: kid.into(),
            der,
            jwk: json!({"kty": "RSA", "use": "sig", "kid": kid, "n": B64.encode(n), "e": "AQAB",
                        "endorsements": ["msteams"]}),
        }
    }

    /// A JWT over `claims` signed with this key, its header naming `kid`.
    fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        h.kid = Some(kid.to_string());
        jsonwebtoken::encode(
            &h,
            claims,
            &jsonwebtoken::EncodingKey::from_rsa_der(&self.der),
        )
        .unwrap()
    }

    fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid.clone(), claims)
    }
}

/// One call the stand-in got.
#[derive(Debug, Clone)]
struct Got {
    method: String,
    path: String,
    auth: String,
    body: Vec<u8>,
}

impl Got {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// The stand-in for the Bot Framework.
#[derive(Clone)]
struct FakeBot {
    base: String,
    keys: Arc<Mutex<Vec<Value>>>,
    calls: Arc<Mutex<Vec<Got>>>,
    next: Arc<AtomicU64>,
}

impl FakeBot {
    fn start(keys: &[&Key]) -> FakeBot {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let bot = FakeBot {
            base: format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port()),
            keys: Arc::new(Mutex::new(keys.iter().map(|k| k.jwk.clone()).collect())),
            calls: Default::default(),
            next: Arc::new(AtomicU64::new(1)),
        };
        let me = bot.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let me = me.clone();
                std::thread::spawn(move || me.serve(conn));
            }
        });
        bot
    }

    fn service_url(&self) -> String {
        format!("{}/svc/", self.base)
    }

    fn serve(&self, conn: std::net::TcpStream) {
        let mut reader = BufReader::new(conn);
        while let Some((line, headers, body)) = read_http_request(&mut reader) {
            let mut parts = line.split_whitespace();
            let method = parts.next().unwrap_or("").to_string();
            let path = parts.next().unwrap_or("").to_string();
            let got = Got {
                method: method.clone(),
                path: path.clone(),
                auth: headers.get("authorization").cloned().unwrap_or_default(),
                body,
            };
            self.calls.lock().unwrap().push(got.clone());
            let answer = match (method.as_str(), path.as_str()) {
                ("GET", "/openid") => json!({"issuer": ISSUER,
                    "authorization_endpoint": "https://invalid.botframework.com",
                    "jwks_uri": format!("{}/keys", self.base),
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "token_endpoint_auth_methods_supported": ["private_key_jwt"]}),
                ("GET", "/keys") => json!({"keys": self.keys.lock().unwrap().clone()}),
                ("POST", "/token") => json!({"token_type": "Bearer", "expires_in": 3600,
                    "ext_expires_in": 3600, "access_token": BOT_TOKEN}),
                ("POST", p) if p.starts_with("/svc/v3/conversations/") => {
                    json!({"id": format!("1:act-{}", self.next.fetch_add(1, Ordering::SeqCst))})
                }
                ("PUT", p) if p.starts_with("/svc/v3/conversations/") => {
                    json!({"id": p.rsplit('/').next().unwrap_or("")})
                }
                _ => json!({"error": {"code": "NotFound"}}),
            };
            let text = answer.to_string();
            if write!(
                reader.get_mut(),
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                text.len()
            )
            .is_err()
            {
                return;
            }
        }
    }

    fn calls(&self, method: &str, prefix: &str) -> Vec<Got> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.method == method && c.path.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// The cards sent (POSTed activities) whose page link names request `id`.
    fn cards_of(&self, id: &str) -> Vec<Got> {
        self.calls("POST", "/svc/v3/conversations/")
            .into_iter()
            .filter(|c| c.json().to_string().contains(&format!("/r/{id}\"")))
            .collect()
    }

    /// The card updates (PUTs) whose page link names request `id`.
    fn updates_of(&self, id: &str) -> Vec<Got> {
        self.calls("PUT", "/svc/v3/conversations/")
            .into_iter()
            .filter(|c| c.json().to_string().contains(&format!("/r/{id}\"")))
            .collect()
    }
}

struct Setup {
    env: Env,
    bot: FakeBot,
    key: Key,
    files: tempfile::TempDir,
}

/// A root whose config lists alice's Teams identity and sends context `default` (or
/// `contexts`) to the stand-in, the app password in a file of its own (0600).
fn setup(contexts: &[&str]) -> Setup {
    use std::os::unix::fs::PermissionsExt;
    let key = Key::new("bf-key-1");
    let bot = FakeBot::start(&[&key]);
    let env = Env::new();
    let files = tempfile::tempdir().unwrap();
    let password = files.path().join("teams-app-password");
    std::fs::write(&password, format!("{PASSWORD}\n")).unwrap();
    std::fs::set_permissions(&password, std::fs::Permissions::from_mode(0o600)).unwrap();
    let conversations: String = contexts
        .iter()
        .map(|c| format!("{c} = \"{CONVERSATION}\"\n"))
        .collect();
    let text = format!(
        "[people]\nalice = [\"teams:{ALICE}\"]\n\n[teams]\napp-id = \"{APP_ID}\"\n\
         app-password-file = \"{}\"\nservice-url = \"{}\"\nopenid-metadata = \"{}/openid\"\n\
         token-url = \"{}/token\"\npage-url = \"https://dshq.example\"\n\n\
         [teams.conversations]\n{conversations}",
        password.display(),
        bot.service_url(),
        bot.base,
        bot.base
    );
    let config = env.dir.path().join("config/dshq");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), text).unwrap();
    Setup {
        env,
        bot,
        key,
        files,
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

impl Setup {
    fn daemon(&self, extra: &[&str]) -> crate::api::Host {
        let mut args = vec!["--listen", "0", "--delivery-retry-min", "50ms"];
        args.extend_from_slice(extra);
        listening(self.env.daemon_with(&args, &[]))
    }

    /// The claims the Bot Framework's token carries on a call to the bot.
    fn claims(&self) -> Value {
        json!({"iss": ISSUER, "aud": APP_ID, "exp": now() + 600, "nbf": now() - 10,
               "serviceUrl": self.bot.service_url()})
    }

    /// The invoke an `Action.Execute` of `action` on card `activity_id` sends, as `user`.
    fn invoke(&self, user: &str, activity_id: &str, action: &Value) -> Value {
        json!({
            "type": "invoke", "name": "adaptiveCard/action",
            "id": "f:invoke-1", "timestamp": "2026-12-06T08:00:00.000Z",
            "serviceUrl": self.bot.service_url(), "channelId": "msteams",
            "from": {"id": "29:1abc", "name": "Alice", "aadObjectId": user},
            "conversation": {"id": CONVERSATION, "conversationType": "channel", "tenantId": "t1"},
            "recipient": {"id": format!("28:{APP_ID}"), "name": "dshq"},
            "replyToId": activity_id,
            "value": {"action": action, "trigger": "manual"},
        })
    }

    fn deliveries_done(&self, id: &str, kind: &str) {
        self.env.wait_delivered(id, "teams", kind)
    }

    fn kinds(&self, id: &str) -> Vec<String> {
        self.env
            .json(&["events", id])
            .ok()
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap().to_string())
            .collect()
    }
}

/// POST `activity` to the messaging endpoint with `token`: the status and the body.
fn send(base: &str, token: Option<&str>, activity: &Value) -> (u16, Value) {
    let mut r =
        ureq::post(&format!("{base}/teams/messages")).set("Content-Type", "application/json");
    if let Some(t) = token {
        r = r.set("Authorization", &format!("Bearer {t}"));
    }
    let (status, resp) = match r.send_string(&activity.to_string()) {
        Ok(resp) => (resp.status(), resp),
        Err(ureq::Error::Status(code, resp)) => (code, resp),
        Err(e) => panic!("the endpoint is not reached: {e}"),
    };
    let text = resp.into_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// The code of an HTTP refusal's error document, or of an invoke's error answer.
fn code_of(body: &Value) -> String {
    body["error"]["code"]
        .as_str()
        .or(body["value"]["code"].as_str())
        .unwrap_or("")
        .to_string()
}

#[test]
fn teams_sends_a_card_answers_a_valid_action_and_refuses_the_rest() {
    let s = setup(&["default"]);
    let host = s.daemon(&[]);
    let hostile = "Deploy **now**? [docs](https://evil.example) {{DATE(2017-02-14T06:08:39Z, SHORT)}} <at>boss</at>";
    s.env
        .ask(&json!({
            "id": "dep",
            "questions": [{"id": "go", "question": hostile,
                           "options": [{"label": "Ship [it](https://x)"}, {"label": "Hold"}]}]
        }))
        .ok();
    assert!(
        wait_until(DEADLINE, || !s.bot.cards_of("dep").is_empty()),
        "no card sent: {:?}\n{}",
        s.bot.calls("POST", "/"),
        host.daemon.log_text()
    );
    s.deliveries_done("dep", "accepted");

    // The bot's own token, from the token endpoint with the app's credentials.
    let token_calls = s.bot.calls("POST", "/token");
    assert_eq!(token_calls.len(), 1, "one token, cached");
    let form: HashMap<String, String> = serde_urlencoded::from_bytes(&token_calls[0].body).unwrap();
    assert_eq!(form["grant_type"], "client_credentials");
    assert_eq!(form["client_id"], APP_ID);
    assert_eq!(form["client_secret"], PASSWORD);
    assert_eq!(form["scope"], "https://api.botframework.com/.default");

    // The card: to the context's conversation (its id escaped in the path), with the
    // bot's token, its asker text escaped for a TextBlock's Markdown.
    let sent = s.bot.cards_of("dep").remove(0);
    assert_eq!(
        sent.path,
        "/svc/v3/conversations/19:ops0123@thread.tacv2/activities"
    );
    assert_eq!(sent.auth, format!("Bearer {BOT_TOKEN}"));
    let activity = sent.json();
    let card = &activity["attachments"][0]["content"];
    assert_eq!(
        activity["attachments"][0]["contentType"],
        "application/vnd.microsoft.card.adaptive"
    );
    let texts: Vec<&str> = card["body"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect();
    let question = texts
        .iter()
        .find(|t| t.contains("Deploy"))
        .expect("the question is shown");
    assert_eq!(
        *question,
        "Deploy \\*\\*now\\*\\*\\? \\[docs\\]\\(https\\:\\/\\/evil\\.example\\) \\{\\{DATE\\(2017\\-02\\-14T06\\:08\\:39Z\\, SHORT\\)\\}\\} \\<at\\>boss\\<\\/at\\>"
    );
    let actions = card["actions"].as_array().unwrap();
    assert_eq!(actions.len(), 3, "{card}");
    assert_eq!(actions[0]["type"], "Action.Execute");
    assert_eq!(
        actions[0]["title"], "Ship [it](https://x)",
        "a title is plain text"
    );
    assert_eq!(actions[2]["type"], "Action.OpenUrl");
    assert_eq!(actions[2]["url"], "https://dshq.example/r/dep");
    let card_id = "1:act-1";
    let ship = actions[0]["data"].clone();
    let action = json!({"type": "Action.Execute", "verb": "dshq-answer", "data": ship});
    let alice = s.invoke(ALICE, card_id, &action);
    let kinds_before = s.kinds("dep");

    // Refused before anything is read: each token that is not the Bot Framework's for us.
    let with = |k: &str, v: Value| {
        let mut c = s.claims();
        c[k] = v;
        c
    };
    let impostor = Key::new("bf-key-1");
    let none = format!(
        "{}.{}.",
        B64.encode(r#"{"alg":"none","typ":"JWT","kid":"bf-key-1"}"#),
        B64.encode(s.claims().to_string())
    );
    let cases: Vec<(&str, Option<String>, u16, &str)> = vec![
        ("no token", None, 401, "UNAUTHORIZED"),
        (
            "another key under our kid",
            Some(impostor.sign(&s.claims())),
            401,
            "JWT_BAD_SIGNATURE",
        ),
        (
            "expired",
            Some(s.key.sign(&with("exp", json!(now() - 3600)))),
            401,
            "JWT_EXPIRED",
        ),
        (
            "another bot's",
            Some(s.key.sign(&with("aud", json!("another-app")))),
            401,
            "JWT_AUDIENCE",
        ),
        (
            "another issuer",
            Some(
                s.key
                    .sign(&with("iss", json!("https://sts.windows.net/evil/"))),
            ),
            401,
            "JWT_ISSUER",
        ),
        ("unsigned", Some(none), 401, "JWT_UNSIGNED"),
        (
            "an unpublished key",
            Some(impostor.sign_as("made-up", &s.claims())),
            401,
            "JWT_UNKNOWN_KEY",
        ),
        (
            "another service URL",
            Some(
                s.key
                    .sign(&with("serviceUrl", json!("https://smba.evil.example/"))),
            ),
            401,
            "TEAMS_SERVICE_URL",
        ),
    ];
    for (what, token, status, code) in &cases {
        let (st, body) = send(&host.base, token.as_deref(), &alice);
        assert_eq!(
            (st, code_of(&body).as_str()),
            (*status, *code),
            "{what}: {body}"
        );
    }
    // Valid tokens, refused actions: shown to the presser, nothing recorded.
    let token = s.key.sign(&s.claims());
    let (st, body) = send(
        &host.base,
        Some(&token),
        &s.invoke(MALLORY, card_id, &action),
    );
    assert_eq!(
        (st, body["statusCode"].as_u64(), code_of(&body).as_str()),
        (200, Some(403), "TEAMS_UNKNOWN_USER"),
        "{body}"
    );
    assert_eq!(body["type"], "application/vnd.microsoft.error");
    let (_, body) = send(
        &host.base,
        Some(&token),
        &s.invoke(ALICE, "1:act-999", &action),
    );
    assert_eq!(
        code_of(&body),
        "FORBIDDEN",
        "a card dshq did not send: {body}"
    );
    let mut forged = action.clone();
    forged["data"]["d"] = json!("sha256:00");
    let (_, body) = send(&host.base, Some(&token), &s.invoke(ALICE, card_id, &forged));
    assert_eq!(
        code_of(&body),
        "FORBIDDEN",
        "another version of the request: {body}"
    );
    assert!(s.env.outcome("dep").is_none(), "nothing answered it");
    assert_eq!(s.kinds("dep"), kinds_before, "nothing was recorded");
    assert_eq!(
        s.bot.calls("GET", "/keys").len(),
        2,
        "one refetch for the unknown kid, at most"
    );

    // The valid action answers as alice, and the invoke gets the ended card.
    let (st, body) = send(&host.base, Some(&token), &alice);
    assert_eq!(st, 200, "{body}");
    assert_eq!(body["statusCode"], 200, "{body}");
    assert_eq!(body["type"], "application/vnd.microsoft.card.adaptive");
    assert!(
        !body["value"].to_string().contains("Action.Execute"),
        "no action left: {body}"
    );
    assert!(
        body["value"].to_string().contains("alice (on Teams)"),
        "{body}"
    );
    let out = s.env.wait_outcome("dep");
    assert_eq!(
        out["answer"]["answers"][0]["selected"],
        json!(["Ship [it](https://x)"])
    );
    let events = s.env.json(&["events", "dep"]).ok().json();
    let answered = events
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "answered")
        .unwrap()
        .clone();
    assert_eq!(answered["actor"], format!("teams:alice@{ALICE}"));

    // A second action changes nothing.
    let kinds_after = s.kinds("dep");
    let (st, body) = send(&host.base, Some(&token), &alice);
    assert_eq!(
        (st, code_of(&body).as_str()),
        (200, "REQUEST_FINAL"),
        "{body}"
    );
    assert_eq!(s.kinds("dep"), kinds_after);

    // The card is updated at the end: the same activity, no action but the page's.
    assert!(
        wait_until(DEADLINE, || !s.bot.updates_of("dep").is_empty()),
        "the card was not updated: {}",
        host.daemon.log_text()
    );
    let update = s.bot.updates_of("dep").remove(0);
    assert_eq!(
        update.path,
        "/svc/v3/conversations/19:ops0123@thread.tacv2/activities/1:act-1"
    );
    let ended = update.json();
    let acts = ended["attachments"][0]["content"]["actions"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(acts.len(), 1);
    assert_eq!(acts[0]["type"], "Action.OpenUrl");
    assert!(
        !host.daemon.log_text().contains(PASSWORD),
        "the password is never logged"
    );
    assert!(
        !host.daemon.log_text().contains(&token),
        "the token is never logged"
    );
    drop(s.files);
}

#[test]
fn the_key_set_rotates_without_a_restart() {
    let s = setup(&["default"]);
    let host = s.daemon(&[]);
    s.env.ask(&simple_request("rot")).ok();
    assert!(wait_until(DEADLINE, || !s.bot.cards_of("rot").is_empty()));
    s.deliveries_done("rot", "accepted");
    let other = json!({"type": "Action.Execute", "verb": "dshq-answer",
                       "data": {"r": "nope", "q": "q", "l": "x", "d": "sha256:00"}});
    let probe = s.invoke(ALICE, "1:act-1", &other);
    let (_, body) = send(&host.base, Some(&s.key.sign(&s.claims())), &probe);
    assert_eq!(code_of(&body), "NOT_FOUND", "the first key works: {body}");
    // The Bot Framework rotates: a new key is taken at once, the old one is refused.
    let new = Key::new("bf-key-2");
    *s.bot.keys.lock().unwrap() = vec![new.jwk.clone()];
    let (_, body) = send(&host.base, Some(&new.sign(&s.claims())), &probe);
    assert_eq!(
        code_of(&body),
        "NOT_FOUND",
        "the rotated-in key works: {body}"
    );
    let (st, body) = send(&host.base, Some(&s.key.sign(&s.claims())), &probe);
    assert_eq!(
        (st, code_of(&body).as_str()),
        (401, "JWT_UNKNOWN_KEY"),
        "{body}"
    );
}

#[test]
fn escalation_to_a_teams_only_context_tells_the_former_webhook() {
    let receiver = crate::webhooks::Receiver::start();
    let s = setup(&["oncall"]);
    let hook = receiver.url_for("first");
    let host = s.daemon(&["--webhook", &hook]);
    let mut r = simple_request("esc");
    r["context"] = json!("first");
    r["ladder"] = json!({"escalateAfter": "1s", "escalateTo": "oncall"});
    s.env.ask(&r).ok();
    assert!(
        wait_until(DEADLINE, || !s.bot.cards_of("esc").is_empty()),
        "no card in the new context: {}",
        host.daemon.log_text()
    );
    s.deliveries_done("esc", "escalated");
    let sent = s.bot.cards_of("esc").remove(0).json();
    let card = &sent["attachments"][0]["content"];
    assert!(
        card.to_string()
            .contains("Escalated from context first to oncall"),
        "{card}"
    );
    let data = card["actions"][0]["data"].clone();
    let action = json!({"type": "Action.Execute", "verb": "dshq-answer", "data": data});
    let (st, body) = send(
        &host.base,
        Some(&s.key.sign(&s.claims())),
        &s.invoke(ALICE, "1:act-1", &action),
    );
    assert_eq!(
        (st, body["statusCode"].as_u64()),
        (200, Some(200)),
        "{body}"
    );
    assert!(
        wait_until(DEADLINE, || !receiver.of("esc", "answered").is_empty()),
        "{:?}",
        receiver.got()
    );
    let heard: Vec<String> = receiver
        .got()
        .iter()
        .map(|g| serde_json::from_str::<Value>(&g.body).unwrap())
        .filter(|b| b["data"]["id"] == "esc")
        .map(|b| b["data"]["event"].as_str().unwrap().to_string())
        .filter(|e| e != "claimed")
        .collect();
    assert_eq!(heard, ["accepted", "escalated", "answered"]);
}

/// Time to a person by Teams (the ignored measurement behind docs/PERFORMANCE.md):
/// `dshq ask` → the card posted to the stand-in Bot Connector, one request at a time, at
/// idle and with a webhook receiver and a mail server that accept and never answer (each
/// with its own request in flight throughout).
#[test]
#[ignore]
fn time_to_a_person_by_teams_idle_and_beside_hung_endpoints() {
    use std::time::{Duration, Instant};
    const N: usize = 60;
    for beside_hung in [false, true] {
        let s = setup(&["teams"]);
        // Endpoints that take the connection and never say a word.
        let hung = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = hung.local_addr().unwrap().port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let h = held.clone();
        std::thread::spawn(move || {
            for conn in hung.incoming().flatten() {
                h.lock().unwrap().push(conn);
            }
        });
        let (hook, smtp) = (
            format!("hook=http://127.0.0.1:{port}/hook"),
            format!("smtp://127.0.0.1:{port}"),
        );
        let mut args = vec![];
        if beside_hung {
            args.extend([
                "--webhook",
                &hook,
                "--webhook-timeout",
                "60s",
                "--email",
                "mail=alice@example.com",
                "--email-page-url",
                "http://dshq.example",
                "--smtp",
                &smtp,
                "--smtp-plain",
                "--email-from",
                "dshq <dshq@example.com>",
                "--smtp-timeout",
                "60s",
            ]);
        }
        let _host = s.daemon(&args);
        if beside_hung {
            for c in ["hook", "mail"] {
                let mut r = simple_request(&format!("hung-{c}"));
                r["context"] = json!(c);
                s.env.ask(&r).ok();
            }
            assert!(wait_until(DEADLINE, || held.lock().unwrap().len() >= 2));
        }
        let mut took = Vec::with_capacity(N);
        for i in 0..N {
            let id = format!("t{i}");
            let mut r = simple_request(&id);
            r["context"] = json!("teams");
            let began = Instant::now();
            s.env.ask(&r).ok();
            assert!(wait_until(DEADLINE, || !s.bot.cards_of(&id).is_empty()));
            took.push(began.elapsed());
            std::thread::sleep(Duration::from_millis(20));
        }
        took.sort();
        let pct = |p: usize| took[(took.len() * p / 100).min(took.len() - 1)];
        eprintln!(
            "time to a person by teams, {}, n={N}: p50 {:?}, p99 {:?}",
            if beside_hung {
                "a hung webhook and mail server beside"
            } else {
                "idle"
            },
            pct(50),
            pct(99)
        );
    }
}
