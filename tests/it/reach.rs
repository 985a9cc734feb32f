//! Reaching people when some endpoints do not answer, through the real binary: fifty
//! endpoints that accept a connection and never answer (webhook receivers, an SMTP server,
//! Slack's Web API, a push service a reviewer's device subscribed at) hold back no healthy
//! webhook receiver's deliveries; `--smtp-timeout`
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

use crate::api::{listening, token};
use crate::email::{free_port, Sink};
use crate::helpers::*;
use crate::page::login;
use crate::push::{post_json, Device, PushService};
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

/// Where each channel sends: the webhooks (`CONTEXT=URL`, a `--webhook` each), the SMTP
/// server's port (context `mail`), the Slack API's URL (context `slack`, channel
/// `C0SLACK`), whether Web Push is on (context `push`: to the devices subscribed with
/// [`subscribe`]); each channel's timeout.
struct Ends<'a> {
    webhooks: &'a [String],
    smtp: Option<u16>,
    slack_api: Option<String>,
    push: bool,
    timeout: &'a str,
}

/// The reviewer whose devices the push tests subscribe (any context).
const PUSHED: &str = "pat";

/// Subscribe `device` for [`PUSHED`] through the page of the running daemon `d` (the
/// reviewer's token made at the first call), as the page's script posts it; `d` back.
fn subscribe(env: &Env, d: Daemon, device: &Device) -> Daemon {
    let h = listening(d);
    let t = match std::fs::read_to_string(env.dir.path().join("pat.token")) {
        Ok(t) => t,
        Err(_) => {
            let t = token(env, "reviewer", PUSHED, None);
            std::fs::write(env.dir.path().join("pat.token"), &t).unwrap();
            t
        }
    };
    let s = login(&h, &t);
    let (st, body) = post_json(
        &h.base,
        "/push/subscriptions",
        Some(&s),
        &device.subscription(),
    );
    assert_eq!(st, 201, "{body}");
    h.daemon
}

fn daemon(env: &Env, files: &tempfile::TempDir, ends: &Ends<'_>) -> Daemon {
    let token = files.path().join("token");
    let signing = files.path().join("signing");
    let smtp = ends.smtp.map(|p| format!("smtp://127.0.0.1:{p}"));
    let mut args: Vec<&str> = vec!["--listen", "0", "--delivery-retry-min", "50ms"];
    for hook in ends.webhooks {
        args.extend(["--webhook", hook]);
    }
    if !ends.webhooks.is_empty() {
        args.extend(["--webhook-timeout", ends.timeout]);
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
    if ends.push {
        args.extend([
            "--push",
            "push",
            "--push-contact",
            "mailto:ops@example.com",
            "--push-timeout",
            ends.timeout,
        ]);
    }
    if let Some(api) = &ends.slack_api {
        args.extend([
            "--slack",
            "slack=C0SLACK",
            "--slack-page-url",
            "http://127.0.0.1:9",
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
    // 47 webhook receivers, a mail server, Slack's Web API and the push service of a
    // reviewer's device, none of which answers.
    let mut webhooks = vec![healthy.url_for("healthy")];
    webhooks.extend(
        hung[..47]
            .iter()
            .enumerate()
            .map(|(i, h)| h.url(&format!("h{i}"))),
    );
    let d = daemon(
        &env,
        &files,
        &Ends {
            webhooks: &webhooks,
            smtp: Some(hung[47].port),
            slack_api: Some(format!("http://127.0.0.1:{}/api", hung[48].port)),
            push: true,
            timeout: "60s",
        },
    );
    let phone = Device::new(format!("http://127.0.0.1:{}/push/pat-phone", hung[49].port));
    let d = subscribe(&env, d, &phone);
    for i in 0..47 {
        ask_in(&env, &format!("h{i}-r"), &format!("h{i}"));
    }
    ask_in(&env, "mail-r", "mail");
    ask_in(&env, "slack-r", "slack");
    ask_in(&env, "push-r", "push");
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
            push: false,
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
    let (hook, smtp, slack, push) = (Hung::start(), Hung::start(), Hung::start(), Hung::start());
    let hung = Ends {
        webhooks: &[hook.url("hook")],
        smtp: Some(smtp.port),
        slack_api: Some(format!("http://127.0.0.1:{}/api", slack.port)),
        push: true,
        timeout: "30s",
    };
    let ends = [&hook, &smtp, &slack, &push];
    let hung_phone = Device::new(format!("http://127.0.0.1:{}/push/hung-phone", push.port));
    for round in 0..STOPS {
        let before = ends.map(Hung::taken);
        let mut d = daemon(&env, &files, &hung);
        if round == 0 {
            d = subscribe(&env, d, &hung_phone);
        }
        for context in ["hook", "mail", "slack", "push"] {
            ask_in(&env, &format!("{context}-{round}"), context);
        }
        assert!(
            wait_until(DEADLINE, || {
                ends.iter().zip(before).all(|(h, b)| h.taken() > b)
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

    // Then every endpoint answers (the reviewer's device now one whose push service
    // does): each delivery of the twenty rounds goes out.
    let receiver = Receiver::start();
    let fake = FakeSlack::start();
    let service = PushService::start();
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
            push: true,
            timeout: "30s",
        },
    );
    let phone = Device::new(format!("{}/push/pat-phone", service.base));
    let d = subscribe(&env, d, &phone);
    let h = listening(d);
    let s = login(
        &h,
        &std::fs::read_to_string(env.dir.path().join("pat.token")).unwrap(),
    );
    let (st, body) = crate::push::send_json(
        "DELETE",
        &h.base,
        "/push/subscriptions",
        Some(&s),
        &json!({"endpoint": hung_phone.endpoint}),
    );
    assert_eq!(st, 200, "{body}");
    let d = h.daemon;
    let pushed = || -> Vec<String> {
        service
            .to("/push/pat-phone")
            .iter()
            .map(|p| {
                phone.decrypt(&p.body)["request"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let all_out = || {
        let pushed = pushed();
        (0..STOPS).all(|round| {
            !receiver.of(&format!("hook-{round}"), "accepted").is_empty()
                && !sink.of(&format!("mail-{round}")).is_empty()
                && !fake.posts_of(&format!("slack-{round}")).is_empty()
                && pushed.contains(&format!("push-{round}"))
        })
    };
    assert!(
        wait_until(Duration::from_secs(60), all_out),
        "webhooks {}, mails {}, Slack posts {}, push messages {}\n{}",
        receiver.got().len(),
        sink.mails().len(),
        fake.calls("chat.postMessage").len(),
        pushed().len(),
        d.log_text()
    );
    for round in 0..STOPS {
        for context in ["hook", "mail", "slack", "push"] {
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
            push: false,
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
/// `--listen`'s (`http://ADDR`) when that is an address a browser can open; with neither
/// (or `--listen` on 0.0.0.0, [::] or port 0) the daemon does not start, saying so.
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
        // --listen on an unspecified address or port 0 names no page anyone can open:
        // the page's URL must be given then, the same way.
        for listen in ["0.0.0.0:7465", "[::]:7465", "0"] {
            let mut all = vec!["--listen", listen];
            all.extend_from_slice(args);
            let r = crate::trust::daemon_start(&env, &all)
                .unwrap_or_else(|| panic!("--listen {listen}: the daemon started"));
            assert_eq!(r.code, 2, "{listen}: {r:?}");
            let e = &r.json()["error"];
            assert_eq!(e["code"], "USAGE", "{listen}: {r:?}");
            let m = e["message"].as_str().unwrap();
            assert!(
                m.contains("names no address a browser can open") && m.contains(flag),
                "{listen}: {m}"
            );
        }
        // Given the page's URL, it starts without --listen.
        let mut with = args.to_vec();
        with.extend_from_slice(&[flag, "https://dshq.example"]);
        env.daemon_with(&with, &[]).stop();
    }
}

/// The channels the bench measures, each in a context of its own named after it: a
/// channel added here needs its arms in [`bench_ends`] (its healthy and its hung endpoint)
/// and [`arrived_at`] (when its stand-in had the request).
const MEASURED: [&str; 4] = ["webhook", "mail", "slack", "push"];

/// The healthy stand-ins of the bench, one per channel.
struct Healthy {
    receiver: Receiver,
    sink: Sink,
    smtp: u16,
    fake: FakeSlack,
    push: PushService,
    phone: Device,
}

/// The bench's daemon flags: `channel`'s healthy endpoint, and with `hung` the hung one of
/// every other channel; the device to subscribe for push, if any.
fn bench_ends<'a>(
    channel: &str,
    healthy: &'a Healthy,
    hung: Option<&'a [Hung; 4]>,
    webhooks: &'a mut Vec<String>,
) -> (Ends<'a>, Option<Device>) {
    let mut e = Ends {
        webhooks: &[],
        smtp: None,
        slack_api: None,
        push: false,
        timeout: "60s",
    };
    let mut device = None;
    for (i, c) in MEASURED.into_iter().enumerate() {
        let port = match (c == channel, hung) {
            (true, _) => None,
            (false, Some(h)) => Some(h[i].port),
            (false, None) => continue,
        };
        match c {
            "webhook" => webhooks.push(match port {
                None => healthy.receiver.url_for("webhook"),
                Some(p) => format!("webhook=http://127.0.0.1:{p}/hook"),
            }),
            "mail" => e.smtp = Some(port.unwrap_or(healthy.smtp)),
            "slack" => {
                e.slack_api = Some(match port {
                    None => healthy.fake.url(),
                    Some(p) => format!("http://127.0.0.1:{p}/api"),
                })
            }
            "push" => {
                e.push = true;
                device = Some(match port {
                    None => Device::new(healthy.phone.endpoint.clone()),
                    Some(p) => Device::new(format!("http://127.0.0.1:{p}/push/hung")),
                });
            }
            other => unreachable!("{other}"),
        }
    }
    e.webhooks = webhooks;
    (e, device)
}

/// When request `id` had reached `channel`'s healthy stand-in, if it has: the webhook
/// receiver's and the push service's own arrival times; for mail and Slack, now (the bench
/// polls them every millisecond).
fn arrived_at(channel: &str, healthy: &Healthy, id: &str) -> Option<Instant> {
    match channel {
        "webhook" => healthy.receiver.of(id, "accepted").first().map(|g| g.at),
        "mail" => (!healthy.sink.of(id).is_empty()).then(Instant::now),
        "slack" => (!healthy.fake.posts_of(id).is_empty()).then(Instant::now),
        "push" => healthy
            .push
            .to("/push/phone")
            .iter()
            .find(|p| healthy.phone.decrypt(&p.body)["request"] == id)
            .map(|p| p.at),
        other => unreachable!("{other}"),
    }
}

/// The bench of time to a person per channel (`--ignored --nocapture`; the figures are in
/// docs/PERFORMANCE.md): `dshq ask` → the webhook received / the mail accepted by the SMTP
/// server / the Slack message posted / the push message taken by the device's push
/// service, one request at a time, at idle and with one endpoint that never answers on
/// each other channel (its own request in flight throughout). `DSHQ_BENCH_N` requests
/// each (60).
#[test]
#[ignore]
fn time_to_a_person_by_channel_idle_and_beside_hung_endpoints() {
    let n: usize = std::env::var("DSHQ_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    for channel in MEASURED {
        for beside_hung in [false, true] {
            let env = Env::new();
            let files = slack_files();
            let smtp = free_port();
            let push = PushService::start();
            let phone = Device::new(format!("{}/push/phone", push.base));
            let healthy = Healthy {
                receiver: Receiver::start(),
                sink: Sink::start(smtp, &env.dir.path().join("mails"), 0),
                smtp,
                fake: FakeSlack::start(),
                push,
                phone,
            };
            let hung = [Hung::start(), Hung::start(), Hung::start(), Hung::start()];
            let mut webhooks = Vec::new();
            let (ends, device) = bench_ends(
                channel,
                &healthy,
                beside_hung.then_some(&hung),
                &mut webhooks,
            );
            let mut d = daemon(&env, &files, &ends);
            if let Some(device) = &device {
                // The measured channel's device is the healthy phone (same keys).
                let device = if channel == "push" {
                    &healthy.phone
                } else {
                    device
                };
                d = subscribe(&env, d, device);
            }
            if beside_hung {
                for (i, other) in MEASURED.into_iter().enumerate() {
                    if other != channel {
                        ask_in(&env, &format!("hung-{other}"), other);
                        assert!(wait_until(DEADLINE, || hung[i].taken() >= 1), "{other}");
                    }
                }
            }
            let mut took = Vec::with_capacity(n);
            for i in 0..n {
                let id = format!("t{i}");
                let began = Instant::now();
                ask_in(&env, &id, channel);
                let mut at = None;
                while at.is_none() && began.elapsed() < DEADLINE {
                    at = arrived_at(channel, &healthy, &id);
                    std::thread::sleep(Duration::from_millis(1));
                }
                let at = at.unwrap_or_else(|| panic!("{id} by {channel}\n{}", d.log_text()));
                took.push(at - began);
                // Apart, so each is measured alone.
                std::thread::sleep(Duration::from_millis(20));
            }
            took.sort();
            let pct = |p: usize| took[(took.len() * p / 100).min(took.len() - 1)];
            eprintln!(
                "time to a person by {channel}, {}, n={n}: p50 {:?}, p99 {:?}",
                if beside_hung {
                    "one hung endpoint on each other channel"
                } else {
                    "idle"
                },
                pct(50),
                pct(99)
            );
            d.stop();
        }
    }
}
