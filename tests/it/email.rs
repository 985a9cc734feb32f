//! The email channel through the real binary, against a real SMTP server the
//! test starts (aiosmtpd, `tests/it/smtp_sink.py`, from the test venv): the mail arrives
//! with the request's text (hostile asker text escaped in the HTML part, no header
//! injection through the subject), its signed link opens the request in a real headless
//! Chromium, the answer goes through the page's confirm step and the outcome names the
//! recipient; a link that was used, altered or expired (the test clock) is refused with
//! its code and changes nothing; a mail server that is down, then refuses, gets the mail
//! once it takes it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::api::{listening, Host};
use crate::browser::{actors, body_text, browser, click, has, start_driver, until};
use crate::helpers::*;

const SINK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/smtp_sink.py");

/// The asker's hostile text: markup, a CR LF and a header line, a terminal escape,
/// non-ASCII.
const EVIL_QUESTION: &str =
    "Ship <script>alert(1)</script>?\r\nBcc: evil@example.net\nX-Evil: 1 \u{1b}[31m ünïcödé ✓";

/// The SMTP server: aiosmtpd writing each mail it accepts to `dir`.
pub(crate) struct Sink {
    child: Child,
    dir: PathBuf,
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Sink {
    pub(crate) fn start(port: u16, dir: &Path, refuse: usize) -> Sink {
        Sink::start_with(port, dir, refuse, &[])
    }

    fn start_with(port: u16, dir: &Path, refuse: usize, extra: &[&str]) -> Sink {
        std::fs::create_dir_all(dir).unwrap();
        let mut child = Command::new("python3")
            .arg(SINK)
            .args(["--port", &port.to_string(), "--dir"])
            .arg(dir)
            .args(["--refuse", &refuse.to_string()])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs (contrib/test/run puts the test venv on PATH)");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if line.trim() != "ready" {
            let mut err = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err);
            panic!(
                "the SMTP sink did not start (aiosmtpd is installed by contrib/test/run from \
                 contrib/test/requirements.txt): {err}"
            );
        }
        Sink {
            child,
            dir: dir.to_path_buf(),
        }
    }

    /// The mails accepted so far, in order.
    pub(crate) fn mails(&self) -> Vec<Value> {
        let mut names: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "json")
                    && !p.file_name().unwrap().to_string_lossy().starts_with('.')
            })
            .collect();
        names.sort();
        names
            .iter()
            .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
            .collect()
    }

    /// Wait for the mails about request `id` until there are `n`.
    pub(crate) fn wait_for(&self, id: &str, n: usize) -> Vec<Value> {
        let mut got = Vec::new();
        assert!(
            wait_until(DEADLINE, || {
                got = self.of(id);
                got.len() >= n
            }),
            "{n} mail(s) about {id} did not arrive: {:?}",
            self.mails()
        );
        got
    }

    pub(crate) fn of(&self, id: &str) -> Vec<Value> {
        self.mails()
            .into_iter()
            .filter(|m| {
                m["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(&format!("Request   {id}\n")))
            })
            .collect()
    }
}

pub(crate) fn free_port() -> u16 {
    crate::browser::free_port()
}

/// A root whose daemon mails through a sink started for the test, and serves the page the
/// mail links to (its port last): `(dir the sink writes into, root, sink, daemon, port)`.
/// Bound in this order they drop in reverse: the daemon first, then the sink, the root, the
/// directory.
fn mailing() -> (tempfile::TempDir, Env, Sink, Host, u16) {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let (smtp, web) = (free_port(), free_port());
    let sink = Sink::start(smtp, &tmp.path().join("mail"), 0);
    let host = mail_host(&env, smtp, web, &[]);
    (tmp, env, sink, host, web)
}

/// On a mail link's page: open its request and wait for the answer form.
async fn open_the_request(c: &fantoccini::Client) {
    click(c, "#open-request").await;
    until("the request's form", || async {
        has(c, "form#answer").await
    })
    .await;
}

/// A daemon with the page on `web` and the email channel to the SMTP server on `smtp`.
fn mail_host(env: &Env, smtp: u16, web: u16, vars: &[(&str, &str)]) -> Host {
    mail_host_with(env, smtp, web, &[], vars)
}

/// The same, with `extra` flags (more `--email CONTEXT=ADDR`, say).
pub(crate) fn mail_host_with(
    env: &Env,
    smtp: u16,
    web: u16,
    extra: &[&str],
    vars: &[(&str, &str)],
) -> Host {
    let listen = format!("127.0.0.1:{web}");
    let smtp_url = format!("smtp://127.0.0.1:{smtp}");
    let page = format!("http://127.0.0.1:{web}");
    let mut args = vec![
        "--listen",
        &listen,
        "--email",
        "default=Alice <alice@example.com>",
        "--smtp",
        &smtp_url,
        "--smtp-plain",
        "--email-from",
        "dshq <dshq@example.com>",
        "--email-page-url",
        &page,
        "--delivery-retry-min",
        "50ms",
    ];
    args.extend_from_slice(extra);
    listening(env.daemon_with(&args, vars))
}

fn hostile(id: &str) -> Value {
    json!({
        "id": id,
        "questions": [{
            "id": "q", "header": "Deploy", "question": EVIL_QUESTION,
            "options": [
                {"label": "Ship <b>now</b>", "description": "<img src=x onerror=alert(1)>"},
                {"label": "Wait"}
            ]
        }]
    })
}

/// The link in a mail's text part.
pub(crate) fn link_of(mail: &Value) -> String {
    let text = mail["text"].as_str().unwrap();
    let at = text.find("http://127.0.0.1:").expect("a link in the mail");
    text[at..].split_whitespace().next().unwrap().to_string()
}

/// GET `url` without a browser: the status, the body, and whether a cookie was set.
fn get(url: &str) -> (u16, String, bool) {
    let r = match ureq::get(url).call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("GET {url}: {e}"),
    };
    let status = r.status();
    let cookie = r.header("set-cookie").is_some();
    (status, r.into_string().unwrap(), cookie)
}

fn email_deliveries(env: &Env, id: &str) -> Vec<Value> {
    env.json(&["events", id, "--deliveries"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["channel"] == "email")
        .cloned()
        .collect()
}

pub(crate) fn status(env: &Env, id: &str) -> String {
    env.json(&["show", id]).ok().json()["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Change one character in the middle of the token's claims.
fn altered(link: &str) -> String {
    let (base, token) = link.rsplit_once("/mail/").unwrap();
    let mut b = token.as_bytes().to_vec();
    let i = 3 + (token[3..].find('.').unwrap() / 2);
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    format!("{base}/mail/{}", String::from_utf8(b).unwrap())
}

#[test]
fn a_mail_arrives_and_its_link_answers_through_the_page_once() {
    let (_tmp, env, sink, h, web) = mailing();
    let key = env.root().join("mail.key");
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&key).unwrap().permissions().mode()
    };
    assert_eq!(mode & 0o777, 0o600, "mail.key is the owner's only");

    env.ask(&hostile("m1")).ok();
    env.ask(&simple_request("m2")).ok();
    let mail = sink.wait_for("m1", 1).remove(0);

    // The envelope and the headers: to the context's recipient, from the configured
    // address, no header the asker wrote.
    assert_eq!(mail["rcpt_tos"], json!(["alice@example.com"]));
    assert_eq!(mail["mail_from"], "dshq@example.com");
    let raw = mail["raw"].as_str().unwrap();
    let head = raw.split("\r\n\r\n").next().unwrap();
    for l in head.lines() {
        let l = l.to_ascii_lowercase();
        assert!(
            !l.starts_with("bcc:") && !l.starts_with("x-evil:"),
            "a header was injected: {head}"
        );
    }
    assert!(head.is_ascii(), "headers are encoded: {head}");
    let names: Vec<String> = mail["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h[0].as_str().unwrap().to_ascii_lowercase())
        .collect();
    assert!(
        !names.iter().any(|n| n == "bcc" || n == "x-evil"),
        "{names:?}"
    );
    let subject = mail["subject"].as_str().unwrap();
    assert_eq!(
        subject,
        "[dshq] default: Ship <script>alert(1)</script>? Bcc: evil@example.net X-Evil: 1 \\x1b[31m ünïcödé ✓"
    );
    // The Message-ID is the delivery's: a resend is recognisable.
    let d = email_deliveries(&env, "m1");
    assert_eq!(d.len(), 1, "{d:?}");
    let delivery = d[0]["id"].as_str().unwrap();
    let mid = mail["message_id"].as_str().unwrap();
    assert!(
        mid.starts_with(&format!("<{delivery}.")) && mid.ends_with("@example.com>"),
        "{mid}"
    );
    // The text part says it all, control characters made visible.
    let text = mail["text"].as_str().unwrap();
    for want in [
        "A request waits for your answer.",
        "Context   default",
        "From      cli",
        "Question 1 of 1: Deploy (pick one)",
        "Ship <script>alert(1)</script>?",
        "  - Ship <b>now</b>: <img src=x onerror=alert(1)>",
        "  - Wait",
        "\\x1b[31m",
        "mail:alice@example.com",
    ] {
        assert!(text.contains(want), "the text lacks {want:?}: {text}");
    }
    assert!(!text.contains('\u{1b}'), "{text}");
    // The HTML part escapes every asker value.
    let html = mail["html"].as_str().unwrap();
    assert!(html.contains("Ship &lt;b&gt;now&lt;/b&gt;"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{html}"
    );
    assert!(
        html.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{html}"
    );
    for raw_markup in ["<script>", "<img", "<b>now"] {
        assert!(!html.contains(raw_markup), "raw {raw_markup} in {html}");
    }
    let link = link_of(&mail);
    assert!(
        link.starts_with(&format!("http://127.0.0.1:{web}/mail/v1.")),
        "{link}"
    );
    assert!(html.contains(&format!("href=\"{link}\"")), "{html}");

    // m2's mail: an altered link is refused, sets no session and changes nothing; the
    // genuine one, followed by a "scanner" (a plain GET), changes nothing either.
    let m2 = link_of(&sink.wait_for("m2", 1)[0]);
    let before = actors(&env, "m2");
    let (st, body, cookie) = get(&altered(&m2));
    assert_eq!(st, 400, "{body}");
    assert!(body.contains("LINK_INVALID"), "{body}");
    assert!(!cookie, "an altered link opens no session");
    let (st, body, _) = get(&format!("{m2}x"));
    assert_eq!((st, body.contains("LINK_INVALID")), (400, true), "{body}");
    let (st, body, cookie) = get(&m2);
    assert_eq!(st, 200, "{body}");
    assert!(cookie && body.contains("Open the request"), "{body}");
    assert_eq!(
        actors(&env, "m2"),
        before,
        "following a link acts on nothing"
    );
    assert_eq!(status(&env, "m2"), "pending");

    // The real browser: the link, the button, the form, the confirm step, the send.
    let (_driver, driver_url) = start_driver();
    let profile = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser(&driver_url, profile.path(), false).await;
        c.goto(&link).await.unwrap();
        until("the link's page", || async {
            has(&c, "#open-request").await
        })
        .await;
        let t = body_text(&c).await;
        assert!(t.contains("alice@example.com") && t.contains("m1"), "{t}");
        open_the_request(&c).await;
        let t = body_text(&c).await;
        assert!(
            t.contains("mail:alice@example.com"),
            "the nav names the recipient: {t}"
        );
        assert!(t.contains("Ship <script>alert(1)</script>?"), "{t}");
        assert!(!has(&c, "#pwned").await);

        // The session reaches this request only.
        for path in ["/", "/r/m2", "/history"] {
            c.goto(&format!("{}{path}", h.base)).await.unwrap();
            until("a page", || async { has(&c, "main").await }).await;
            let t = body_text(&c).await;
            assert!(
                t.contains("FORBIDDEN") && t.contains("reaches request m1 only"),
                "{path}: {t}"
            );
            assert!(!t.contains("Which database?"), "{path}: {t}");
        }

        c.goto(&format!("{}/r/m1", h.base)).await.unwrap();
        until("the request's form", || async {
            has(&c, "form#answer").await
        })
        .await;
        pick_first_option_to_the_summary(&c).await;
        let t = body_text(&c).await;
        assert!(t.contains("Send this answer?") && t.contains("Wait"), "{t}");
        assert_eq!(
            status(&env, "m1"),
            "pending",
            "nothing is sent before the confirm"
        );
        click(&c, "#send-button").await;
        until("the request, answered", || async {
            c.current_url()
                .await
                .is_ok_and(|u| u.as_str().ends_with("/r/m1"))
                && body_text(&c).await.contains("answered")
        })
        .await;

        // The used link, in the browser too.
        c.goto(&link).await.unwrap();
        until("the refusal", || async {
            body_text(&c).await.contains("LINK_USED")
        })
        .await;
        c.close().await.unwrap();
    });

    let outcome = env.wait_outcome("m1");
    assert_eq!(outcome["status"], "answered", "{outcome}");
    assert_eq!(
        outcome["answer"]["answers"][0]["selected"],
        json!(["Wait"]),
        "{outcome}"
    );
    assert_eq!(outcome["provider"], "mail:alice@example.com", "{outcome}");
    assert!(
        actors(&env, "m1").contains(&"answered:mail:alice@example.com".to_string()),
        "{:?}",
        actors(&env, "m1")
    );

    // Used: refused, and nothing changes.
    let after = actors(&env, "m1");
    let (st, body, cookie) = get(&link);
    assert_eq!(st, 410, "{body}");
    assert!(body.contains("LINK_USED") && !cookie, "{body}");
    assert_eq!(actors(&env, "m1"), after);
    env.json(&["audit", "verify"]).ok();
    assert_eq!(sink.of("m1").len(), 1, "one mail per recipient and event");
    drop(h);
}

#[test]
fn a_reminder_and_an_escalation_say_so_with_the_ladder() {
    let (_tmp, env, sink, _h, _) = mailing();
    let mut r = simple_request("l1");
    r["ladder"] = json!({"remindAfter": "1s", "escalateAfter": "2s", "expireAfter": "1h"});
    env.ask(&r).ok();
    let mails = sink.wait_for("l1", 3);
    let subjects: Vec<&str> = mails
        .iter()
        .map(|m| m["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        [
            "[dshq] default: Which database?",
            "[dshq] Reminder: default: Which database?",
            "[dshq] Escalated: default: Which database?"
        ]
    );
    let text = |i: usize| mails[i]["text"].as_str().unwrap().to_string();
    assert!(
        text(0).contains("A request waits for your answer."),
        "{}",
        text(0)
    );
    assert!(
        text(1).contains("this request is still waiting"),
        "{}",
        text(1)
    );
    assert!(
        text(2).contains("nobody answered this request in time"),
        "{}",
        text(2)
    );
    for (i, line) in [
        (0, "Reminder  "),
        (0, "Escalates "),
        (0, "(unanswered: ASK_EXPIRED, nothing is chosen)"),
        (1, "Z (done)\nEscalates "),
        (2, "Z (done)\nExpires   "),
    ] {
        assert!(
            text(i).contains(line),
            "mail {i} lacks {line:?}: {}",
            text(i)
        );
    }
    // Each mail its own link.
    assert_ne!(link_of(&mails[0]), link_of(&mails[1]));
}

#[test]
fn a_reviewer_logged_in_opens_the_link_as_themselves() {
    let env = Env::new();
    let rita = crate::api::token(&env, "reviewer", "rita", None);
    let tmp = tempfile::tempdir().unwrap();
    let (smtp, web) = (free_port(), free_port());
    let sink = Sink::start(smtp, &tmp.path().join("mail"), 0);
    let h = mail_host(&env, smtp, web, &[]);
    env.ask(&simple_request("r1")).ok();
    let link = link_of(&sink.wait_for("r1", 1)[0]);
    let (_driver, driver_url) = start_driver();
    let profile = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser(&driver_url, profile.path(), false).await;
        c.goto(&format!("{}/login", h.base)).await.unwrap();
        crate::browser::log_in_on_this_page(&c, &rita).await;
        c.goto(&link).await.unwrap();
        until("the link's page", || async {
            has(&c, "#open-request").await
        })
        .await;
        open_the_request(&c).await;
        let t = body_text(&c).await;
        assert!(
            t.contains("rita") && !t.contains("mail:alice"),
            "the login wins: {t}"
        );
        // The whole page stays theirs.
        c.goto(&h.base).await.unwrap();
        until("the queue", || async {
            c.title().await.is_ok_and(|t| t.starts_with("Queue"))
        })
        .await;
        c.goto(&format!("{}/r/r1", h.base)).await.unwrap();
        until("the request's form", || async {
            has(&c, "form#answer").await
        })
        .await;
        pick_first_option_to_the_summary(&c).await;
        click(&c, "#send-button").await;
        until("the queue after sending", || async {
            c.current_url()
                .await
                .is_ok_and(|u| u.as_str().ends_with("/?done=r1"))
        })
        .await;
        c.close().await.unwrap();
    });
    assert_eq!(env.wait_outcome("r1")["provider"], "web:rita");
    // The link was not what answered: it is not used, but its request is over.
    let (st, body, _) = get(&link);
    assert_eq!(st, 200, "{body}");
    assert!(body.contains("answered"), "{body}");
}

#[test]
fn an_expired_link_is_refused_and_changes_nothing() {
    let (_tmp, env, sink, h, web) = mailing();
    env.ask(&simple_request("e1")).ok();
    let link = link_of(&sink.wait_for("e1", 1)[0]);
    // Still valid now.
    let (st, body, _) = get(&link);
    assert_eq!(st, 200, "{body}");
    assert_eq!(h.daemon.stop(), 0);

    // The same root, 73 hours later (the links live 72h by default).
    let later = listening(env.daemon_with(
        &["--listen", &format!("127.0.0.1:{web}")],
        &[("DSHQ_CLOCK_SKEW", "+73h")],
    ));
    let before = actors(&env, "e1");
    let (st, body, cookie) = get(&link);
    assert_eq!(st, 410, "{body}");
    assert!(body.contains("LINK_EXPIRED") && !cookie, "{body}");
    assert_eq!(actors(&env, "e1"), before);
    assert_eq!(status(&env, "e1"), "pending");
    drop(later);
}

#[test]
fn a_mail_in_flight_when_the_daemon_is_killed_is_sent_again_as_the_same_mail() {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mail");
    let (smtp, web) = (free_port(), free_port());
    let sink = Sink::start_with(smtp, &dir, 0, &["--hold-first"]);
    let h = mail_host(&env, smtp, web, &[]);
    env.ask(&simple_request("k1")).ok();
    // The server has the whole mail and has not answered: SIGKILL the daemon now.
    let mut held = Value::Null;
    assert!(
        wait_until(DEADLINE, || {
            held = std::fs::read(dir.join("held.txt"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or(Value::Null);
            !held.is_null()
        }),
        "no mail reached the server: {}",
        h.daemon.log_text()
    );
    h.daemon.kill9();
    assert!(email_deliveries(&env, "k1")[0]["deliveredMs"].is_null());
    // The next start sends it again: the same Message-ID, the same link.
    let h2 = mail_host(&env, smtp, web, &[]);
    let again = sink.wait_for("k1", 1).remove(0);
    assert_eq!(again["message_id"], held["message_id"], "{again}");
    let held_raw = held["raw"].as_str().unwrap();
    let link = link_of(&again);
    let token = link.rsplit_once("/mail/").unwrap().1;
    // The held copy is quoted-printable: compare the link with its soft breaks removed.
    assert!(
        held_raw.replace("=\r\n", "").contains(token),
        "the resent mail's link is the first one's"
    );
    assert!(
        wait_until(DEADLINE, || email_deliveries(&env, "k1")[0]["deliveredMs"]
            .is_i64()),
        "{}",
        h2.daemon.log_text()
    );
    assert_eq!(sink.of("k1").len(), 1);
}

#[test]
fn a_mail_server_that_is_down_then_refuses_gets_the_mail_once_it_takes_it() {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let (smtp, web) = (free_port(), free_port());
    let h = mail_host(&env, smtp, web, &[]);
    env.ask(&simple_request("d1")).ok();
    // Nothing listens: the attempts fail and are recorded.
    assert!(
        wait_until(DEADLINE, || email_deliveries(&env, "d1")
            .first()
            .is_some_and(|d| d["attempts"].as_i64() >= Some(2))),
        "{:?}\n{}",
        email_deliveries(&env, "d1"),
        h.daemon.log_text()
    );
    let d = email_deliveries(&env, "d1");
    assert!(d[0]["deliveredMs"].is_null(), "{d:?}");
    assert!(
        d[0]["lastError"].as_str().is_some_and(|e| !e.is_empty()),
        "{d:?}"
    );
    // The server comes up, refuses once (451), then takes it.
    let sink = Sink::start(smtp, &tmp.path().join("mail"), 1);
    let mails = sink.wait_for("d1", 1);
    assert!(
        wait_until(DEADLINE, || email_deliveries(&env, "d1")[0]["deliveredMs"]
            .is_i64()),
        "{:?}",
        email_deliveries(&env, "d1")
    );
    assert!(
        h.daemon.log_text().contains("451"),
        "the refusal was met and logged"
    );
    let d = email_deliveries(&env, "d1");
    assert!(d[0]["attempts"].as_i64() >= Some(4), "{d:?}");
    assert!(mails[0]["message_id"]
        .as_str()
        .unwrap()
        .starts_with(&format!("<{}.", d[0]["id"].as_str().unwrap())));
    // Delivered once: a later look finds the one mail.
    env.ask(&simple_request("d2")).ok();
    sink.wait_for("d2", 1);
    assert_eq!(sink.of("d1").len(), 1, "{:?}", sink.mails());
}

/// "Time to a person by mail" (PERFORMANCE.md): from the start of `dshq ask` to the SMTP
/// server accepting the mail (the sink's clock at its DATA), at idle, one request at a
/// time. A measurement, not a check:
/// `bash contrib/test/run --test it time_to_a_person_by_mail -- --ignored --nocapture`.
#[test]
#[ignore]
fn time_to_a_person_by_mail() {
    const N: usize = 200;
    let (_tmp, env, sink, _h, _) = mailing();
    let mut took = Vec::with_capacity(N);
    for i in 0..N {
        let id = format!("t{i}");
        let began = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        env.ask(&simple_request(&id)).ok();
        let at = sink.wait_for(&id, 1)[0]["at"].as_f64().unwrap();
        took.push(std::time::Duration::from_secs_f64((at - began).max(0.0)));
        // Idle between asks.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    took.sort();
    let pct = |p: usize| took[(took.len() * p / 100).min(took.len() - 1)];
    eprintln!(
        "time to a person (ask -> mail accepted by the SMTP server), n={N}: p50 {:?}, p99 {:?}, max {:?}",
        pct(50),
        pct(99),
        took[took.len() - 1]
    );
}

/// A CA and a certificate for `localhost` signed by it (PEM files in `dir`): the CA's,
/// the server's certificate and its key.
fn pki(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "dshq mail test CA");
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &ca).unwrap();
    let (c, s, k) = (
        dir.join("ca.pem"),
        dir.join("cert.pem"),
        dir.join("key.pem"),
    );
    std::fs::write(&c, ca.pem()).unwrap();
    std::fs::write(&s, cert.pem()).unwrap();
    std::fs::write(&k, key.serialize_pem()).unwrap();
    (c, s, k)
}

/// A daemon mailing over TLS (`url`), trusting `ca` when given.
fn tls_daemon(env: &Env, url: &str, ca: Option<&Path>) -> Daemon {
    let web = free_port();
    let page = format!("http://127.0.0.1:{web}");
    let mut args = vec![
        "--email".to_string(),
        "default=alice@example.com".into(),
        "--smtp".into(),
        url.into(),
        "--email-from".into(),
        "dshq@example.com".into(),
        "--email-page-url".into(),
        page,
        "--delivery-retry-min".into(),
        "50ms".into(),
    ];
    if let Some(ca) = ca {
        args.push("--smtp-ca-file".into());
        args.push(ca.to_str().unwrap().into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.daemon_with(&args, &[])
}

#[test]
fn mail_goes_over_starttls_or_tls_to_a_server_it_trusts_and_not_to_one_it_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (ca, cert, key) = pki(tmp.path());
    let tls_args = |mode: &'static str| {
        vec![
            "--tls".to_string(),
            mode.to_string(),
            "--cert".to_string(),
            cert.to_str().unwrap().to_string(),
            "--key".to_string(),
            key.to_str().unwrap().to_string(),
        ]
    };
    let (p1, p2) = (free_port(), free_port());
    let a1 = tls_args("starttls");
    let a2 = tls_args("implicit");
    let starttls = Sink::start_with(
        p1,
        &tmp.path().join("starttls"),
        0,
        &a1.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let implicit = Sink::start_with(
        p2,
        &tmp.path().join("implicit"),
        0,
        &a2.iter().map(String::as_str).collect::<Vec<_>>(),
    );

    // smtp:// is STARTTLS, required; the operator's CA is trusted.
    let env = Env::new();
    let _d = tls_daemon(&env, &format!("smtp://localhost:{p1}"), Some(&ca));
    env.ask(&simple_request("s1")).ok();
    let m = starttls.wait_for("s1", 1);
    assert_eq!(m[0]["tls"], true, "{:?}", m[0]);

    // smtps:// is TLS from the first byte.
    let env2 = Env::new();
    let _d2 = tls_daemon(&env2, &format!("smtps://localhost:{p2}"), Some(&ca));
    env2.ask(&simple_request("t1")).ok();
    let m = implicit.wait_for("t1", 1);
    assert_eq!(m[0]["tls"], true, "{:?}", m[0]);

    // Without the CA the server's certificate is not trusted: no mail, the attempts
    // fail and are kept for later.
    let env3 = Env::new();
    let _d3 = tls_daemon(&env3, &format!("smtp://localhost:{p1}"), None);
    env3.ask(&simple_request("u1")).ok();
    assert!(
        wait_until(DEADLINE, || email_deliveries(&env3, "u1")
            .first()
            .is_some_and(|d| d["attempts"].as_i64() >= Some(2))),
        "{:?}",
        email_deliveries(&env3, "u1")
    );
    let d = email_deliveries(&env3, "u1");
    assert!(d[0]["deliveredMs"].is_null(), "{d:?}");
    assert!(
        d[0]["lastError"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("certificate"),
        "{d:?}"
    );
    assert!(starttls.of("u1").is_empty());
}

/// On a request's form: pick the first option of the first question and submit, up to
/// the summary page that asks to confirm.
async fn pick_first_option_to_the_summary(c: &fantoccini::Client) {
    click(c, "input[name=q0][value=o1]").await;
    click(c, "form#answer button[type=submit]").await;
    until("the summary page", || async {
        has(c, "#send-button").await
    })
    .await;
}

/// A link acts only in the context it was mailed for: once an escalation moved the request
/// to another context, the first context's link opens nothing (WRONG_CONTEXT, no session),
/// and the link mailed to the new context's recipient opens it. (An answer sent through a
/// session opened before the move is refused the same way, in the answer's transaction:
/// `tests/store/links.rs`.)
#[test]
fn an_escalated_requests_old_link_opens_nothing_and_the_new_one_does() {
    let env = Env::new();
    let tmp = tempfile::tempdir().unwrap();
    let (smtp, web) = (free_port(), free_port());
    let sink = Sink::start(smtp, &tmp.path().join("mail"), 0);
    let _h = mail_host_with(
        &env,
        smtp,
        web,
        &["--email", "esc=Bob <bob@example.com>"],
        &[],
    );
    let mut r = simple_request("moved");
    r["ladder"] = json!({"escalateAfter": "1s", "escalateTo": "esc"});
    env.ask(&r).ok();
    // Alice's request, Bob's escalation, and Alice's word of where it went.
    let mails = sink.wait_for("moved", 3);
    let to = |m: &Value| m["rcpt_tos"][0].as_str().unwrap_or_default().to_string();
    let text = |m: &Value| m["text"].as_str().unwrap_or_default().to_string();
    let to_alice: Vec<&Value> = mails
        .iter()
        .filter(|m| to(m) == "alice@example.com")
        .collect();
    assert_eq!(to_alice.len(), 2, "{mails:?}");
    let alice = to_alice
        .iter()
        .find(|m| text(m).contains("http://127.0.0.1:"))
        .unwrap();
    let told = to_alice
        .iter()
        .find(|m| !text(m).contains("http://127.0.0.1:"))
        .expect("Alice is told where the request went, with no link");
    assert!(
        text(told).contains("Escalated to context esc")
            && text(told).contains("asks nothing of you"),
        "{}",
        text(told)
    );
    let bob = mails.iter().find(|m| to(m) == "bob@example.com").unwrap();
    assert_eq!(env.json(&["show", "moved"]).ok().json()["context"], "esc");

    let (code, body, cookie) = get(&link_of(alice));
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("WRONG_CONTEXT"), "{body}");
    assert!(!cookie, "a refused link opens no session");
    assert_eq!(status(&env, "moved"), "pending");

    let (code, body, cookie) = get(&link_of(bob));
    assert_eq!(code, 200, "{body}");
    assert!(cookie && body.contains("open-request"), "{body}");
}

/// Follow a mail link without a browser and send `answer` through the page (the link's
/// session, its CSRF token): the page's response.
fn answer_by_link(link: &str, id: &str, answer: &Value) -> crate::page::Resp {
    let opened = crate::page::call("GET", link, "", &[], None);
    assert_eq!(opened.status, 200, "{}", opened.body);
    let cookie = opened
        .set_cookies()
        .into_iter()
        .find(|c| c.starts_with("dshq_mail="))
        .map(|c| c.split(';').next().unwrap().to_string())
        .expect("the link opens a session");
    let base = link.split("/mail/").next().unwrap();
    let page = crate::page::call("GET", &format!("{base}/r/{id}"), &cookie, &[], None);
    assert_eq!(page.status, 200, "{}", page.body);
    let csrf = page.csrf_field();
    crate::page::call(
        "POST",
        &format!("{base}/r/{id}/answer"),
        &cookie,
        &[],
        Some(&[("csrf", &csrf), ("answer", &answer.to_string())]),
    )
}

/// One person at the terminal and through a mail link is one voter: the people directory
/// says bob@example.com is bob, so after `dshq answer --name bob` his link's answer is
/// `ALREADY_VOTED` (nothing recorded, the link not spent); the asker alice, who gets the
/// mails too, cannot approve her own request through hers (`OWN_REQUEST`); carol's vote
/// from the web meets the two-person rule.
#[test]
fn one_person_cli_then_mail_link_is_refused_and_the_asker_cannot_vote_by_mail() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[people]\nbob = [\"mail:bob@example.com\"]\nalice = [\"mail:alice@example.com\"]\n",
    )
    .unwrap();
    let env = Env::new().with_var("DSHQ_CONFIG", config.to_str().unwrap());
    let alice = crate::api::token(&env, "asker", "alice", None);
    let carol = crate::api::token(&env, "reviewer", "carol", None);
    let (smtp, web) = (free_port(), free_port());
    let sink = Sink::start(smtp, &dir.path().join("mail"), 0);
    let h = mail_host_with(
        &env,
        smtp,
        web,
        &[
            "--email",
            "votes=bob@example.com",
            "--email",
            "votes=alice@example.com",
        ],
        &[],
    );
    let r = h.post(
        "/requests",
        Some(&alice),
        &json!({"id": "m1", "context": "votes", "quorum": {"approvals": 2},
                "questions": [{"id": "q", "question": "Ship?",
                               "options": [{"label": "Ship"}, {"label": "Hold"}]}]}),
    );
    assert_eq!(r.status, 201, "{r:?}");
    let mails = sink.wait_for("m1", 2);
    let link_to = |who: &str| {
        link_of(
            mails
                .iter()
                .find(|m| m["rcpt_tos"] == json!([who]))
                .unwrap_or_else(|| panic!("no mail to {who}: {mails:?}")),
        )
    };
    let ship = json!({"answers": [{"id": "q", "selected": ["Ship"]}]});
    env.json(&["answer", "m1", "--name", "bob", "--select", "Ship"])
        .ok();
    let r = answer_by_link(&link_to("bob@example.com"), "m1", &ship);
    assert!(r.body.contains("ALREADY_VOTED"), "{} {}", r.status, r.body);
    let r = answer_by_link(&link_to("alice@example.com"), "m1", &ship);
    assert!(r.body.contains("OWN_REQUEST"), "{} {}", r.status, r.body);
    let shown = env.json(&["show", "m1"]).ok().json();
    assert_eq!(shown["status"], "pending");
    assert_eq!(
        shown["quorum"]["votes"].as_array().unwrap().len(),
        1,
        "{shown}"
    );
    // A refused answer spends no link: bob's may still be used (here: refused again).
    let r = answer_by_link(&link_to("bob@example.com"), "m1", &ship);
    assert!(r.body.contains("ALREADY_VOTED"), "{}", r.body);
    let r = h.post("/requests/m1/answer", Some(&carol), &ship);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["approvers"], json!(["provider:bob", "web:carol"]));
    env.run(&["audit", "verify"]).ok();
    h.daemon.stop();
}
