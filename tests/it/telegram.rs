//! The Telegram channel through the real binary: `dshq daemon --listen 0` with the config
//! file's `[telegram]` table, against a stand-in for Telegram's Bot API that this test
//! runs on loopback (api.telegram.org cannot be reached from these machines). The stand-in
//! speaks the Bot API's documented wire format: `POST /bot<TOKEN>/<METHOD>` with a JSON
//! body, answered `{"ok": true, "result": …}` (a Message for `sendMessage` and
//! `editMessageText`, `true` for `answerCallbackQuery`) or `{"ok": false, "error_code",
//! "description"}`; it records every call.
//!
//! Presses are posted to `POST /telegram/webhook` as Telegram posts them: an Update object
//! holding a `callback_query` (its id, the user `from`, the `message` the button is on and
//! the button's `data`), with the `X-Telegram-Bot-Api-Secret-Token` header `setWebhook`
//! was given. A valid press answers as the person `[people]` lists the user under; a bad
//! secret token, an unknown user, a forged or moved button and a second press are refused
//! and change nothing (the HTTP answer, the request's status, the event log).

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::api::listening;
use crate::helpers::*;
use crate::webhooks::Receiver;

const TOKEN: &str = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
const SECRET: &str = "webhook_secret-Token_0123456789";
const CHAT: i64 = -1001000000001;
const ONCALL_CHAT: i64 = -1001000000002;
const ALICE: u64 = 111111111;
const BOB: u64 = 222222222;
const STRANGER: u64 = 333333333;

/// One Bot API call the stand-in got.
#[derive(Debug, Clone)]
struct Call {
    method: String,
    /// The token in the call's path.
    token: String,
    body: Value,
    /// What the stand-in answered (`result`).
    result: Value,
    /// When it arrived.
    at: Instant,
}

/// The stand-in for the Bot API.
#[derive(Clone)]
struct FakeTelegram {
    port: u16,
    calls: Arc<Mutex<Vec<Call>>>,
    next_message: Arc<AtomicI64>,
    /// Answer this many `sendMessage` calls with HTTP 429 first.
    rate_limit: Arc<Mutex<usize>>,
}

impl FakeTelegram {
    fn start() -> FakeTelegram {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let t = FakeTelegram {
            port: listener.local_addr().unwrap().port(),
            calls: Default::default(),
            next_message: Arc::new(AtomicI64::new(500)),
            rate_limit: Default::default(),
        };
        let me = t.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let me = me.clone();
                std::thread::spawn(move || me.serve(conn));
            }
        });
        t
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn serve(&self, conn: std::net::TcpStream) {
        let mut reader = BufReader::new(conn);
        while let Some((line, _headers, body)) = read_http_request(&mut reader) {
            let at = Instant::now();
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let (token, method) = path
                .trim_start_matches("/bot")
                .split_once('/')
                .map(|(t, m)| (t.to_string(), m.to_string()))
                .unwrap_or_default();
            let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let (status, answer) = if token != TOKEN {
                (
                    "401 Unauthorized",
                    json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
                )
            } else {
                let mut limited = self.rate_limit.lock().unwrap();
                match method.as_str() {
                    "sendMessage" if *limited > 0 => {
                        *limited -= 1;
                        (
                            "429 Too Many Requests",
                            json!({"ok": false, "error_code": 429,
                                "description": "Too Many Requests: retry after 1",
                                "parameters": {"retry_after": 1}}),
                        )
                    }
                    "sendMessage" => {
                        let id = self.next_message.fetch_add(1, Ordering::SeqCst);
                        (
                            "200 OK",
                            json!({"ok": true, "result": {"message_id": id, "date": 1800000000,
                                "chat": {"id": body["chat_id"], "type": "supergroup", "title": "ops"},
                                "text": body["text"]}}),
                        )
                    }
                    "editMessageText" => (
                        "200 OK",
                        json!({"ok": true, "result": {"message_id": body["message_id"],
                            "date": 1800000000, "edit_date": 1800000001,
                            "chat": {"id": body["chat_id"], "type": "supergroup"},
                            "text": body["text"]}}),
                    ),
                    "answerCallbackQuery" => ("200 OK", json!({"ok": true, "result": true})),
                    _ => (
                        "404 Not Found",
                        json!({"ok": false, "error_code": 404, "description": "Not Found"}),
                    ),
                }
            };
            self.calls.lock().unwrap().push(Call {
                method,
                token,
                body,
                result: answer["result"].clone(),
                at,
            });
            let text = answer.to_string();
            if write!(
                reader.get_mut(),
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                text.len()
            )
            .is_err()
            {
                return;
            }
        }
    }

    fn calls(&self, method: &str) -> Vec<Call> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// The messages sent about request `id` (its footer names it).
    fn sent_of(&self, id: &str) -> Vec<Call> {
        self.calls("sendMessage")
            .into_iter()
            .filter(|c| !c.result.is_null())
            .filter(|c| {
                c.body["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(&format!("Request <code>{id}</code>")))
            })
            .collect()
    }

    /// The edits of message `message_id` in `chat`.
    fn edits_of(&self, chat: i64, message_id: i64) -> Vec<Call> {
        self.calls("editMessageText")
            .into_iter()
            .filter(|c| c.body["chat_id"] == chat && c.body["message_id"] == message_id)
            .collect()
    }

    /// The answers to callback query `query`.
    fn told(&self, query: &str) -> Vec<Call> {
        self.calls("answerCallbackQuery")
            .into_iter()
            .filter(|c| c.body["callback_query_id"] == query)
            .collect()
    }
}

struct Setup {
    env: Env,
    fake: FakeTelegram,
    files: tempfile::TempDir,
}

/// A root whose config file lists alice and bob as Telegram users and sends contexts
/// `default` and `oncall` to a chat each (`chats`: the `[telegram.chats]` lines), the
/// bot token and the secret token in files of their own (mode 0600), and the stand-in.
fn setup(chats: &str) -> Setup {
    let env = Env::new();
    let fake = FakeTelegram::start();
    let files = tempfile::tempdir().unwrap();
    for (name, text) in [("token", TOKEN), ("secret", SECRET)] {
        let p = files.path().join(name);
        std::fs::write(&p, format!("{text}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let config = env.dir.path().join("config/dshq");
    std::fs::create_dir_all(&config).unwrap();
    let text = format!(
        "[people]\nalice = [\"telegram:{ALICE}\"]\nbob = [\"telegram:{BOB}\", \"web:bob\"]\n\n\
         [telegram]\nbot-token-file = {:?}\nsecret-token-file = {:?}\napi-url = \"{}\"\n\
         page-url = \"https://dshq.example\"\n\n[telegram.chats]\n{chats}",
        files.path().join("token"),
        files.path().join("secret"),
        fake.url()
    );
    std::fs::write(config.join("config.toml"), text).unwrap();
    Setup { env, fake, files }
}

impl Setup {
    fn daemon(&self, extra: &[&str]) -> crate::api::Host {
        let mut args = vec!["--listen", "0", "--delivery-retry-min", "50ms"];
        args.extend_from_slice(extra);
        listening(self.env.daemon_with(&args, &[]))
    }

    /// Wait until the Telegram delivery of `id`'s `kind` event is delivered (its message
    /// sent and recorded: a press of it is judged against the record).
    fn delivered(&self, id: &str, kind: &str) {
        self.env.wait_delivered(id, "telegram", kind)
    }

    fn events(&self, id: &str) -> Vec<Value> {
        self.env.events_of(id)
    }

    fn status(&self, id: &str) -> String {
        self.env.json(&["show", id]).ok().json()["status"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// The message sent about `id` to `chat` (waited for).
    fn message_in(&self, id: &str, chat: i64) -> Call {
        assert!(
            wait_until(DEADLINE, || self
                .fake
                .sent_of(id)
                .iter()
                .any(|c| c.body["chat_id"] == chat)),
            "no message of {id} in {chat}: {:?}",
            self.fake.calls("sendMessage")
        );
        self.fake
            .sent_of(id)
            .into_iter()
            .find(|c| c.body["chat_id"] == chat)
            .unwrap()
    }
}

/// An Update as Telegram posts it when `user` presses button `button` of message `sent`
/// (its `callback_data` as given).
fn update(query: &str, user: u64, sent: &Call, data: &Value) -> Value {
    json!({
        "update_id": 10000 + user % 1000,
        "callback_query": {
            "id": query,
            "from": {"id": user, "is_bot": false, "first_name": "Someone", "language_code": "en"},
            "message": {
                "message_id": sent.result["message_id"],
                "date": 1800000000,
                "chat": {"id": sent.result["chat"]["id"], "type": "supergroup", "title": "ops"},
                "text": "…",
                "reply_markup": sent.body["reply_markup"],
            },
            "chat_instance": "-5301940785628543113",
            "data": data,
        }
    })
}

/// The `callback_data` of button `i` of message `sent`.
fn data_of(sent: &Call, i: usize) -> Value {
    sent.body["reply_markup"]["inline_keyboard"][i][0]["callback_data"].clone()
}

/// POST `update` to the webhook with `secret` (none: no header): status and body.
fn post(base: &str, update: &Value, secret: Option<&str>) -> (u16, Value) {
    let mut r =
        ureq::post(&format!("{base}/telegram/webhook")).set("Content-Type", "application/json");
    if let Some(s) = secret {
        r = r.set("X-Telegram-Bot-Api-Secret-Token", s);
    }
    let (status, resp) = match r.send_string(&update.to_string()) {
        Ok(resp) => (resp.status(), resp),
        Err(ureq::Error::Status(code, resp)) => (code, resp),
        Err(e) => panic!("the webhook is not reached: {e}"),
    };
    let text = resp.into_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[test]
fn telegram_sends_buttons_answers_a_valid_press_and_refuses_the_rest() {
    let s = setup(&format!("default = {CHAT}\noncall = [{ONCALL_CHAT}]\n"));
    // The first send is rate limited: the attempt fails and the loop tries again.
    *s.fake.rate_limit.lock().unwrap() = 1;
    let host = s.daemon(&[]);
    let hostile =
        "Deploy <b>now</b> & <a href=\"https://evil.example\">docs</a> &amp; &lt;ok&gt; 'q'?";
    s.env
        .ask(&json!({
            "id": "dep",
            "questions": [{"id": "go", "question": hostile,
                           "options": [{"label": "Ship <i>it</i>"}, {"label": "Hold"}]}]
        }))
        .ok();
    let sent = s.message_in("dep", CHAT);
    assert_eq!(
        s.fake.calls("sendMessage").len(),
        2,
        "one 429, then the message"
    );
    assert_eq!(sent.token, TOKEN);
    assert_eq!(sent.body["parse_mode"], "HTML");
    // The asker's text, escaped as Telegram's HTML mode requires: no tag, no entity of
    // theirs survives as markup.
    let text = sent.body["text"].as_str().unwrap();
    assert!(
        text.contains("Deploy &lt;b&gt;now&lt;/b&gt; &amp; &lt;a href=&quot;https://evil.example&quot;&gt;docs&lt;/a&gt; &amp;amp; &amp;lt;ok&amp;gt; &#39;q&#39;?"),
        "{text}"
    );
    assert!(!text.contains("<a") && !text.contains("<b>now"), "{text}");
    // One button per option (its text plain, as written), then the page.
    let rows = sent.body["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert_eq!(rows[0][0]["text"], "Ship <i>it</i>");
    assert_eq!(rows[2][0]["url"], "https://dshq.example/r/dep");
    for i in 0..2 {
        let data = data_of(&sent, i);
        assert!(data.as_str().unwrap().len() <= 64, "{data}");
    }
    s.delivered("dep", "accepted");
    let before = s.events("dep").len();
    let press0 = |q: &str, user: u64| update(q, user, &sent, &data_of(&sent, 0));

    // Not Telegram's: a wrong secret token, or none.
    for secret in [Some("webhook_secret-Token_0123456788"), Some(""), None] {
        let (code, body) = post(&host.base, &press0("q-bad", ALICE), secret);
        assert_eq!(code, 401, "{body}");
        assert_eq!(body["error"]["code"], "TELEGRAM_BAD_SECRET", "{body}");
    }
    // A user [people] lists for nobody.
    let (code, body) = post(&host.base, &press0("q-stranger", STRANGER), Some(SECRET));
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["error"]["code"], "TELEGRAM_UNKNOWN_USER", "{body}");
    assert!(
        wait_until(DEADLINE, || !s.fake.told("q-stranger").is_empty()),
        "the stranger was not told"
    );
    assert_eq!(s.fake.told("q-stranger")[0].body["show_alert"], true);
    // A button altered: another message's id, a delivery dshq never sent, a position
    // the request has no choice at, data dshq never writes.
    let mut moved = press0("q-moved", ALICE);
    moved["callback_query"]["message"]["message_id"] = json!(1);
    let forged_delivery = format!("dshq1:msg_{}:0", "ab".repeat(16));
    let data = data_of(&sent, 0).as_str().unwrap().to_string();
    let past_the_end = format!("{}:7", data.rsplit_once(':').unwrap().0);
    for (name, u) in [
        ("moved", moved),
        (
            "forged",
            update("q-forged", ALICE, &sent, &json!(forged_delivery)),
        ),
        ("past", update("q-past", ALICE, &sent, &json!(past_the_end))),
        ("foreign", update("q-foreign", ALICE, &sent, &json!("like"))),
    ] {
        let (code, body) = post(&host.base, &u, Some(SECRET));
        assert_eq!(code, 200, "{name}: {body}");
        assert_eq!(body["error"]["code"], "FORBIDDEN", "{name}: {body}");
    }
    // Nothing changed.
    assert_eq!(s.status("dep"), "pending");
    assert_eq!(s.events("dep").len(), before);

    // Alice's press answers, as alice.
    let (code, body) = post(&host.base, &press0("q-alice", ALICE), Some(SECRET));
    assert_eq!(
        (code, body["status"].as_str()),
        (200, Some("answered")),
        "{body}\n{}",
        host.daemon.log_text()
    );
    let shown = s.env.json(&["show", "dep"]).ok().json();
    assert_eq!(shown["status"], "answered", "{shown}");
    let outcome = s.env.wait_outcome("dep");
    assert_eq!(
        outcome["answer"]["answers"][0]["selected"],
        json!(["Ship <i>it</i>"]),
        "{outcome}"
    );
    let answered: Vec<Value> = s
        .events("dep")
        .into_iter()
        .filter(|e| e["kind"] == "answered")
        .collect();
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["actor"], format!("telegram:alice@{ALICE}"));
    assert!(wait_until(DEADLINE, || s.fake.told("q-alice").len() == 1));
    assert!(s.fake.told("q-alice")[0].body["text"]
        .as_str()
        .unwrap()
        .starts_with("Answered"));

    // A second press (bob's, on the other button) is refused: already answered.
    let after = s.events("dep").len();
    let (code, body) = post(
        &host.base,
        &update("q-bob", BOB, &sent, &data_of(&sent, 1)),
        Some(SECRET),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["error"]["code"], "REQUEST_FINAL", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("by alice (on Telegram)"),
        "{body}"
    );
    assert_eq!(s.events("dep").len(), after);
    assert_eq!(s.env.wait_outcome("dep"), outcome);

    // The message is edited at the end: who answered, what, no buttons left.
    let message_id = sent.result["message_id"].as_i64().unwrap();
    assert!(
        wait_until(DEADLINE, || !s.fake.edits_of(CHAT, message_id).is_empty()),
        "not edited: {:?}",
        s.fake.calls("editMessageText")
    );
    let edit = s.fake.edits_of(CHAT, message_id).remove(0);
    assert_eq!(edit.token, TOKEN);
    assert!(edit.body.get("reply_markup").is_none(), "{:?}", edit.body);
    let text = edit.body["text"].as_str().unwrap();
    assert!(
        text.contains("<b>Answered</b> by alice (on Telegram)")
            && text.contains("<b>Ship &lt;i&gt;it&lt;/i&gt;</b>")
            && text.contains("Deploy &lt;b&gt;now&lt;/b&gt;"),
        "{text}"
    );
    // The bot token appears in no log line.
    let log = host.daemon.log_text();
    assert!(
        !log.contains(TOKEN) && !log.contains("AAHdqTcvCH1v"),
        "{log}"
    );
    assert!(!log.contains(SECRET), "{log}");
}

/// Not a `callback_query` (a message in the chat): acknowledged, nothing done; no JSON:
/// 400. And a plan review gets Approve and Deny.
#[test]
fn telegram_ignores_other_updates_and_offers_approve_and_deny_for_a_plan() {
    let s = setup(&format!("default = {CHAT}\n"));
    let host = s.daemon(&[]);
    let (code, body) = post(
        &host.base,
        &json!({"update_id": 1, "message": {"message_id": 1, "date": 1,
            "chat": {"id": CHAT, "type": "supergroup"}, "text": "hi"}}),
        Some(SECRET),
    );
    assert_eq!((code, body["ignored"].is_string()), (200, true), "{body}");
    let r = ureq::post(&format!("{}/telegram/webhook", host.base))
        .set("X-Telegram-Bot-Api-Secret-Token", SECRET)
        .send_string("not json");
    assert!(matches!(r, Err(ureq::Error::Status(400, _))), "{r:?}");
    s.env
        .ask(
            &json!({"id": "plan", "questions": [{"id": "p", "question": "Plan?",
            "detail": "1. migrate\n2. <script>alert(1)</script>",
            "options": [{"label": "Go"}, {"label": "Stop"}],
            "intent": {"kind": "plan-review", "approve": "Go"}}]}),
        )
        .ok();
    let sent = s.message_in("plan", CHAT);
    let rows = sent.body["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap();
    let texts: Vec<&str> = rows
        .iter()
        .map(|r| r[0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        ["Approve", "Deny", "Decline with feedback on the page"]
    );
    assert!(sent.body["text"]
        .as_str()
        .unwrap()
        .contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    s.delivered("plan", "accepted");
    let (code, body) = post(
        &host.base,
        &update("q-deny", BOB, &sent, &data_of(&sent, 1)),
        Some(SECRET),
    );
    assert_eq!(
        (code, body["status"].as_str()),
        (200, Some("answered")),
        "{body}"
    );
    let outcome = s.env.wait_outcome("plan");
    assert_eq!(
        outcome["answer"]["answers"][0]["selected"],
        json!(["Stop"]),
        "{outcome}"
    );
}

/// Who was told hears the end: a request escalated from `default` (a webhook and a
/// Telegram chat) to `oncall` (Telegram only, another chat) keeps telling the webhook,
/// its old message's buttons no longer answer (`WRONG_CONTEXT`), its new message's do,
/// and both messages are edited at the end.
#[test]
fn a_request_escalated_to_a_telegram_only_context_still_tells_the_former_channels() {
    let s = setup(&format!("default = {CHAT}\noncall = {ONCALL_CHAT}\n"));
    let receiver = Receiver::start();
    let hook = receiver.url_for("default");
    let host = s.daemon(&["--webhook", &hook]);
    let mut r = simple_request("esc");
    r["questions"][0]["options"] = json!([{"label": "Yes"}, {"label": "No"}]);
    r["ladder"] = json!({"escalateAfter": "1s", "escalateTo": "oncall"});
    s.env.ask(&r).ok();
    let first = s.message_in("esc", CHAT);
    let second = s.message_in("esc", ONCALL_CHAT);
    assert!(second.body["text"]
        .as_str()
        .unwrap()
        .contains("<b>Escalated</b> from context <code>default</code> to <code>oncall</code>"));
    assert!(wait_until(DEADLINE, || !receiver
        .of("esc", "escalated")
        .is_empty()));
    s.delivered("esc", "escalated");
    // The old message speaks for `default`, which may no longer answer.
    let (code, body) = post(
        &host.base,
        &update("q-old", ALICE, &first, &data_of(&first, 0)),
        Some(SECRET),
    );
    assert_eq!(code, 200);
    assert_eq!(body["error"]["code"], "WRONG_CONTEXT", "{body}");
    assert_eq!(s.status("esc"), "pending");
    let (code, body) = post(
        &host.base,
        &update("q-new", ALICE, &second, &data_of(&second, 1)),
        Some(SECRET),
    );
    assert_eq!(
        (code, body["status"].as_str()),
        (200, Some("answered")),
        "{body}"
    );
    // The webhook heard every step, the end included.
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
        .collect();
    assert_eq!(heard, ["accepted", "escalated", "answered"]);
    // Both messages are edited: the former chat's too.
    for m in [&first, &second] {
        let (chat, id) = (
            m.body["chat_id"].as_i64().unwrap(),
            m.result["message_id"].as_i64().unwrap(),
        );
        assert!(
            wait_until(DEADLINE, || !s.fake.edits_of(chat, id).is_empty()),
            "{chat}/{id} not edited: {:?}",
            s.fake.calls("editMessageText")
        );
    }
}

/// The bot token and the secret token come from files others may not read, and the
/// daemon does not start without them.
#[test]
fn telegram_needs_its_secrets_in_private_files() {
    let s = setup(&format!("default = {CHAT}\n"));
    let secret = s.files.path().join("secret");
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let r = s.env.run(&["daemon", "--listen", "0"]);
    assert_eq!(r.code, 12, "{r:?}");
    assert!(
        r.stderr.contains("UNSAFE_ROOT") && r.stderr.contains("chmod 600"),
        "{r:?}"
    );
    assert!(!r.stderr.contains(SECRET), "{}", r.stderr);
    std::fs::remove_file(&secret).unwrap();
    let r = s.env.run(&["daemon", "--listen", "0"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("USAGE") && r.stderr.contains("no Telegram webhook secret token"),
        "{}",
        r.stderr
    );
    // `config show` covers the table.
    let shown = s.env.run(&["config", "show"]).ok().stdout;
    assert!(
        shown.contains("[telegram]") && shown.contains(&CHAT.to_string()),
        "{shown}"
    );
}

/// An endpoint that accepts connections and never answers (each held until the test
/// ends): its port, and how many connections it took.
fn hung() -> (u16, Arc<Mutex<usize>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let taken = Arc::new(Mutex::new(0));
    let count = taken.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
            *count.lock().unwrap() += 1;
        }
    });
    (port, taken)
}

/// The bench of time to a person by Telegram (`--ignored --nocapture`; the figures are in
/// docs/PERFORMANCE.md): `dshq ask` → the `sendMessage` call at the stand-in on loopback,
/// one request at a time, at idle and with one endpoint that never answers on each other
/// channel (a webhook receiver, an SMTP server, Slack's Web API; each with a request in
/// flight throughout).
#[test]
#[ignore]
fn time_to_a_person_by_telegram_idle_and_beside_hung_endpoints() {
    const N: usize = 60;
    for beside_hung in [false, true] {
        let s = setup(&format!("tg = {CHAT}\n"));
        let slack = crate::slack::SIGNING_SECRET;
        let token_file = s.files.path().join("slack-token");
        let signing_file = s.files.path().join("slack-signing");
        for (p, t) in [(&token_file, crate::slack::TOKEN), (&signing_file, slack)] {
            std::fs::write(p, t).unwrap();
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let hung = [hung(), hung(), hung()];
        let hook = format!("hook=http://127.0.0.1:{}/hook", hung[0].0);
        let smtp = format!("smtp://127.0.0.1:{}", hung[1].0);
        let api = format!("http://127.0.0.1:{}/api", hung[2].0);
        let mut args: Vec<&str> = Vec::new();
        if beside_hung {
            args.extend([
                "--webhook",
                &hook,
                "--webhook-timeout",
                "60s",
                "--email",
                "mail=alice@example.com",
                "--smtp",
                &smtp,
                "--smtp-plain",
                "--email-from",
                "dshq@example.com",
                "--smtp-timeout",
                "60s",
                "--slack",
                "slack=C0SLACK",
                "--slack-api-url",
                &api,
                "--slack-token-file",
                token_file.to_str().unwrap(),
                "--slack-signing-secret-file",
                signing_file.to_str().unwrap(),
                "--slack-timeout",
                "60s",
                "--slack-page-url",
                "https://dshq.example",
                "--email-page-url",
                "https://dshq.example",
            ]);
        }
        let _host = s.daemon(&args);
        if beside_hung {
            for other in ["hook", "mail", "slack"] {
                let mut r = simple_request(&format!("hung-{other}"));
                r["context"] = json!(other);
                s.env.ask(&r).ok();
            }
            // Each holds its request's first attempt throughout.
            for (_, taken) in &hung {
                assert!(wait_until(DEADLINE, || *taken.lock().unwrap() >= 1));
            }
        }
        let mut took = Vec::with_capacity(N);
        for i in 0..N {
            let id = format!("t{i}");
            let mut r = simple_request(&id);
            r["context"] = json!("tg");
            let began = Instant::now();
            s.env.ask(&r).ok();
            assert!(wait_until(DEADLINE, || !s.fake.sent_of(&id).is_empty()));
            took.push(s.fake.sent_of(&id)[0].at - began);
            std::thread::sleep(Duration::from_millis(20));
        }
        took.sort();
        let pct = |p: usize| took[(took.len() * p / 100).min(took.len() - 1)];
        eprintln!(
            "time to a person by telegram, {}, n={N}: p50 {:?}, p99 {:?}",
            if beside_hung {
                "one hung endpoint on each other channel"
            } else {
                "idle"
            },
            pct(50),
            pct(99)
        );
    }
}
