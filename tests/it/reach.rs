//! Reaching people when some endpoints do not answer, through the real binary: fifty
//! endpoints that accept a connection and never answer (webhook receivers, an SMTP server,
//! Slack's Web API) hold back no healthy webhook receiver's deliveries; `--smtp-timeout`
//! ends each attempt at a mail server that never speaks; stops with hung endpoints in
//! flight exit cleanly and lose nothing; and a request escalated from a context with only a
//! webhook to one with only Slack keeps telling the webhook until its end.
//!
//! No assertion here is on a latency figure (those are the bench's, `time_to_a_person_*`
//! in `webhooks.rs` and `email.rs`): isolation is shown by order. Every healthy delivery
//! arrives while every hung endpoint still holds its first attempt, which a sender waiting
//! on any of them (the timeouts here are a minute) could not do.

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::email::{free_port, Sink};
use crate::helpers::*;
use crate::slack::{FakeSlack, SIGNING_SECRET, TOKEN};
use crate::webhooks::{deliveries, Receiver};

const DEADLINE: Duration = Duration::from_secs(30);

/// How many stops `stops_with_hung_endpoints_in_flight_exit_cleanly_and_lose_nothing`
/// makes.
const STOPS: usize = 20;

/// An endpoint that accepts every connection and never answers: it reads what it is sent
/// and throws it away, and notes when each connection was taken and when the sender
/// closed it.
#[derive(Clone)]
struct Hung {
    port: u16,
    conns: Arc<Mutex<Vec<Held>>>,
}

/// When a connection was taken, and when the sender closed it.
type Held = (Instant, Option<Instant>);

impl Hung {
    fn start() -> Hung {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let h = Hung {
            port: listener.local_addr().unwrap().port(),
            conns: Default::default(),
        };
        let me = h.clone();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let i = {
                    let mut c = me.conns.lock().unwrap();
                    c.push((Instant::now(), None));
                    c.len() - 1
                };
                let me = me.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 4096];
                    while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
                    me.conns.lock().unwrap()[i].1 = Some(Instant::now());
                });
            }
        });
        h
    }

    fn url(&self, context: &str) -> String {
        format!("{context}=http://127.0.0.1:{}/hook", self.port)
    }

    /// How many connections it took.
    fn taken(&self) -> usize {
        self.conns.lock().unwrap().len()
    }

    /// How long each connection the sender closed was held.
    fn closed(&self) -> Vec<Duration> {
        self.conns
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(a, b)| b.map(|b| b - *a))
            .collect()
    }
}

/// The Slack bot token and signing secret, each in a file of its own (mode 0600).
fn slack_files() -> tempfile::TempDir {
    let files = tempfile::tempdir().unwrap();
    for (name, text) in [("token", TOKEN), ("signing", SIGNING_SECRET)] {
        let p = files.path().join(name);
        std::fs::write(&p, format!("{text}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    files
}

/// Where each channel sends: the webhooks (`CONTEXT=URL`, joined with commas), the SMTP
/// server's port (context `mail`), the Slack API's URL (context `slack`, channel
/// `C0SLACK`); each channel's timeout.
struct Ends<'a> {
    webhooks: &'a [String],
    smtp: Option<u16>,
    slack_api: Option<String>,
    timeout: &'a str,
}

fn daemon(env: &Env, files: &tempfile::TempDir, ends: &Ends<'_>) -> Daemon {
    let token = files.path().join("token");
    let signing = files.path().join("signing");
    let hooks = ends.webhooks.join(",");
    let smtp = ends.smtp.map(|p| format!("smtp://127.0.0.1:{p}"));
    let mut args: Vec<&str> = vec!["--listen", "0", "--delivery-retry-min", "50ms"];
    if !ends.webhooks.is_empty() {
        args.extend(["--webhook", &hooks, "--webhook-timeout", ends.timeout]);
    }
    if let Some(smtp) = &smtp {
        args.extend([
            "--email",
            "mail=Alice <alice@example.com>",
            "--smtp",
            smtp,
            "--smtp-plain",
            "--email-from",
            "dshq <dshq@example.com>",
            "--email-page-url",
            "http://127.0.0.1:9",
            "--smtp-timeout",
            ends.timeout,
        ]);
    }
    if let Some(api) = &ends.slack_api {
        args.extend([
            "--slack",
            "slack=C0SLACK",
            "--slack-api-url",
            api,
            "--slack-token-file",
            token.to_str().unwrap(),
            "--slack-signing-secret-file",
            signing.to_str().unwrap(),
            "--slack-timeout",
            ends.timeout,
        ]);
    }
    env.daemon_with(&args, &[])
}

fn ask_in(env: &Env, id: &str, context: &str) {
    let mut r = simple_request(id);
    r["context"] = json!(context);
    env.ask(&r).ok();
}

#[test]
fn fifty_hung_endpoints_hold_back_no_healthy_webhook() {
    let env = Env::new();
    let files = slack_files();
    let healthy = Receiver::start();
    let hung: Vec<Hung> = (0..50).map(|_| Hung::start()).collect();
    // 48 webhook receivers, a mail server and Slack's Web API, none of which answers.
    let mut webhooks = vec![healthy.url_for("healthy")];
    webhooks.extend(
        hung[..48]
            .iter()
            .enumerate()
            .map(|(i, h)| h.url(&format!("h{i}"))),
    );
    let d = daemon(
        &env,
        &files,
        &Ends {
            webhooks: &webhooks,
            smtp: Some(hung[48].port),
            slack_api: Some(format!("http://127.0.0.1:{}/api", hung[49].port)),
            timeout: "60s",
        },
    );
    for i in 0..48 {
        ask_in(&env, &format!("h{i}-r"), &format!("h{i}"));
    }
    ask_in(&env, "mail-r", "mail");
    ask_in(&env, "slack-r", "slack");
    assert!(
        wait_until(DEADLINE, || hung.iter().all(|h| h.taken() >= 1)),
        "every hung endpoint holds an attempt: {:?}\n{}",
        hung.iter().map(Hung::taken).collect::<Vec<_>>(),
        d.log_text()
    );

    let asked = Instant::now();
    for i in 0..20 {
        ask_in(&env, &format!("ok{i}"), "healthy");
    }
    assert!(
        wait_until(DEADLINE, || (0..20)
            .all(|i| !healthy.of(&format!("ok{i}"), "accepted").is_empty())),
        "the healthy receiver's deliveries: {:?}\n{}",
        healthy.got(),
        d.log_text()
    );
    // All of them while every hung endpoint still held its first attempt: none was
    // waited for (each would have cost its minute).
    for (i, h) in hung.iter().enumerate() {
        assert!(
            h.closed().is_empty(),
            "hung endpoint {i} was let go before the healthy deliveries were done"
        );
    }
    let last = healthy.got().iter().map(|g| g.at).max().unwrap();
    assert!(last - asked < Duration::from_secs(60));
    for i in 0..20 {
        assert!(deliveries(&env, &format!("ok{i}"))[0]["deliveredMs"].is_i64());
    }
}

#[test]
fn an_smtp_server_that_never_speaks_costs_each_attempt_its_smtp_timeout() {
    let env = Env::new();
    let files = slack_files();
    let smtp = Hung::start();
    let d = daemon(
        &env,
        &files,
        &Ends {
            webhooks: &[],
            smtp: Some(smtp.port),
            slack_api: None,
            timeout: "2s",
        },
    );
    ask_in(&env, "m", "mail");
    assert!(
        wait_until(DEADLINE, || smtp.closed().len() >= 3),
        "three attempts ended: {:?}\n{}",
        smtp.closed(),
        d.log_text()
    );
    for held in smtp.closed() {
        assert!(
            held >= Duration::from_millis(1900) && held < Duration::from_secs(4),
            "an attempt held the connection {held:?}, not about 2s"
        );
    }
    let rows = deliveries(&env, "m");
    assert!(rows[0]["attempts"].as_i64().unwrap() >= 3, "{rows:?}");
    assert!(
        rows[0]["lastError"].as_str().unwrap().contains("timed out"),
        "{rows:?}"
    );
    assert!(rows[0]["deliveredMs"].is_null());
}

#[test]
fn stops_with_hung_endpoints_in_flight_exit_cleanly_and_lose_nothing() {
    let env = Env::new();
    let files = slack_files();
    let (hook, smtp, slack) = (Hung::start(), Hung::start(), Hung::start());
    let hung = Ends {
        webhooks: &[hook.url("hook")],
        smtp: Some(smtp.port),
        slack_api: Some(format!("http://127.0.0.1:{}/api", slack.port)),
        timeout: "30s",
    };
    for round in 0..STOPS {
        let before = [hook.taken(), smtp.taken(), slack.taken()];
        let d = daemon(&env, &files, &hung);
        for context in ["hook", "mail", "slack"] {
            ask_in(&env, &format!("{context}-{round}"), context);
        }
        assert!(
            wait_until(DEADLINE, || {
                let now = [hook.taken(), smtp.taken(), slack.taken()];
                now.iter().zip(before).all(|(n, b)| *n > b)
            }),
            "round {round}: every endpoint holds an attempt\n{}",
            d.log_text()
        );
        let log = d.log.clone();
        assert_eq!(d.stop(), 0, "round {round}");
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            !text.contains("panicked") && !text.contains("panic"),
            "round {round}: {text}"
        );
    }

    // Then every endpoint answers: each delivery of the twenty rounds goes out.
    let receiver = Receiver::start();
    let fake = FakeSlack::start();
    let port = free_port();
    let mails = env.dir.path().join("mails");
    let sink = Sink::start(port, &mails, 0);
    let webhooks = [receiver.url_for("hook")];
    let d = daemon(
        &env,
        &files,
        &Ends {
            webhooks: &webhooks,
            smtp: Some(port),
            slack_api: Some(fake.url()),
            timeout: "30s",
        },
    );
    let all_out = || {
        (0..STOPS).all(|round| {
            !receiver.of(&format!("hook-{round}"), "accepted").is_empty()
                && !sink.of(&format!("mail-{round}")).is_empty()
                && !fake.posts_of(&format!("slack-{round}")).is_empty()
        })
    };
    assert!(
        wait_until(Duration::from_secs(60), all_out),
        "webhooks {}, mails {}, Slack posts {}\n{}",
        receiver.got().len(),
        sink.mails().len(),
        fake.calls("chat.postMessage").len(),
        d.log_text()
    );
    for round in 0..STOPS {
        for context in ["hook", "mail", "slack"] {
            let id = format!("{context}-{round}");
            assert!(
                wait_until(DEADLINE, || deliveries(&env, &id)
                    .iter()
                    .all(|r| r["deliveredMs"].is_i64())),
                "{id}: {:?}",
                deliveries(&env, &id)
            );
        }
    }
}

#[test]
fn a_request_escalated_from_a_webhook_context_to_a_slack_one_still_tells_the_webhook() {
    let env = Env::new();
    let files = slack_files();
    let receiver = Receiver::start();
    let fake = FakeSlack::start();
    let webhooks = [receiver.url_for("first")];
    let d = daemon(
        &env,
        &files,
        &Ends {
            webhooks: &webhooks,
            smtp: None,
            slack_api: Some(fake.url()),
            timeout: "10s",
        },
    );
    let mut r = simple_request("esc");
    r["context"] = json!("first");
    r["ladder"] = json!({"escalateAfter": "1s", "escalateTo": "slack", "expireAfter": "3s"});
    env.ask(&r).ok();
    assert!(
        wait_until(DEADLINE, || !receiver.of("esc", "expired").is_empty()),
        "{:?}\n{}",
        receiver.got(),
        d.log_text()
    );
    let heard: Vec<String> = receiver
        .got()
        .iter()
        .map(|g| serde_json::from_str::<Value>(&g.body).unwrap())
        .filter(|b| b["data"]["id"] == "esc")
        .map(|b| b["data"]["event"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(heard, ["accepted", "escalated", "expired"]);
    let escalated: Value = serde_json::from_str(&receiver.of("esc", "escalated")[0].body).unwrap();
    assert_eq!(escalated["data"]["context"], "slack");
    assert_eq!(escalated["data"]["from"], "first");
    // Slack, the new context's channel, was asked and told the end.
    assert!(wait_until(DEADLINE, || !fake.posts_of("esc").is_empty()
        && !fake.calls("chat.update").is_empty()));
}

/// Slack and mail link to the page, so both need its URL the same way: given, or
/// `--listen`'s (`http://ADDR`); with neither the daemon does not start, saying so.
#[test]
fn slack_and_mail_need_the_page_the_same_way() {
    let env = Env::new();
    let files = slack_files();
    let token = files.path().join("token");
    let signing = files.path().join("signing");
    let slack = [
        "--slack",
        "ops=C0SLACK",
        "--slack-token-file",
        token.to_str().unwrap(),
        "--slack-signing-secret-file",
        signing.to_str().unwrap(),
    ];
    let mail = [
        "--email",
        "ops=alice@example.com",
        "--smtp",
        "smtp://127.0.0.1:9",
        "--smtp-plain",
        "--email-from",
        "dshq@example.com",
    ];
    for (args, flag) in [
        (&slack[..], "--slack-page-url"),
        (&mail[..], "--email-page-url"),
    ] {
        let mut all = vec!["daemon"];
        all.extend_from_slice(args);
        let r = env.run(&all);
        assert_eq!(r.code, 2, "{r:?}");
        assert!(
            r.stderr.contains("USAGE")
                && r.stderr.contains("needs --listen")
                && r.stderr.contains(flag),
            "{}",
            r.stderr
        );
        // Given the page's URL, it starts without --listen.
        let mut with = args.to_vec();
        with.extend_from_slice(&[flag, "https://dshq.example"]);
        env.daemon_with(&with, &[]).stop();
    }
}

/// The bench of time to a person per channel (`--ignored --nocapture`; the figures are in
/// docs/PERFORMANCE.md): `dshq ask` → the webhook received / the mail accepted by the SMTP
/// server / the Slack message posted, one request at a time, at idle and with one endpoint
/// that never answers on each other channel (its own request in flight throughout).
#[test]
#[ignore]
fn time_to_a_person_by_channel_idle_and_beside_hung_endpoints() {
    const N: usize = 60;
    for channel in ["webhook", "mail", "slack"] {
        for beside_hung in [false, true] {
            let env = Env::new();
            let files = slack_files();
            let receiver = Receiver::start();
            let fake = FakeSlack::start();
            let port = free_port();
            let sink = Sink::start(port, &env.dir.path().join("mails"), 0);
            let (hook, smtp, slack) = (Hung::start(), Hung::start(), Hung::start());
            // The measured channel's healthy endpoint, in context `mail`, `slack` or `hook`;
            // the others hung, when asked for.
            let mut webhooks = Vec::new();
            let (mut smtp_port, mut api) = (None, None);
            match channel {
                "webhook" => webhooks.push(receiver.url_for("hook")),
                "mail" => smtp_port = Some(port),
                _ => api = Some(fake.url()),
            }
            if beside_hung {
                if channel != "webhook" {
                    webhooks.push(hook.url("hook"));
                }
                if channel != "mail" {
                    smtp_port = Some(smtp.port);
                }
                if channel != "slack" {
                    api = Some(format!("http://127.0.0.1:{}/api", slack.port));
                }
            }
            let _d = daemon(
                &env,
                &files,
                &Ends {
                    webhooks: &webhooks,
                    smtp: smtp_port,
                    slack_api: api,
                    timeout: "60s",
                },
            );
            let context = match channel {
                "webhook" => "hook",
                c => c,
            };
            if beside_hung {
                for other in ["hook", "mail", "slack"]
                    .into_iter()
                    .filter(|c| *c != context)
                {
                    ask_in(&env, &format!("hung-{other}"), other);
                }
                let held = [&hook, &smtp, &slack]
                    .into_iter()
                    .zip(["hook", "mail", "slack"])
                    .filter(|(_, c)| *c != context)
                    .all(|(h, _)| wait_until(DEADLINE, || h.taken() >= 1));
                assert!(held);
            }
            let mut took = Vec::with_capacity(N);
            for i in 0..N {
                let id = format!("t{i}");
                let began = Instant::now();
                ask_in(&env, &id, context);
                let arrived = || match channel {
                    "webhook" => !receiver.of(&id, "accepted").is_empty(),
                    "mail" => !sink.of(&id).is_empty(),
                    _ => !fake.posts_of(&id).is_empty(),
                };
                // Polled (2 ms at first): the webhook's own arrival time is exact.
                assert!(wait_until(DEADLINE, arrived));
                let at = match channel {
                    "webhook" => receiver.of(&id, "accepted")[0].at,
                    _ => Instant::now(),
                };
                took.push(at - began);
                std::thread::sleep(Duration::from_millis(20));
            }
            took.sort();
            let pct = |p: usize| took[(took.len() * p / 100).min(took.len() - 1)];
            eprintln!(
                "time to a person by {channel}, {}, n={N}: p50 {:?}, p99 {:?}",
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
}
