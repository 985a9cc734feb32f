//! Operating the daemon (and SIGTERM at start): the real binary,
//! real signals and sockets. Metrics parsed by the Prometheus client's own parser
//! (Python `prometheus_client`), the probes and `dshq healthcheck` before, during and after
//! a drain, a drain under an HTTP burst, the config file under variables and flags, JSON
//! logs, and a backup taken during a burst that restores and verifies.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::api::{call, host, token, Host};
use crate::browser::free_port;
use crate::helpers::{simple_request, wait_until, Daemon, Env, DEADLINE};

/// The address after `prefix` in the daemon's log (`metrics on http://ADDR/metrics`).
fn logged_addr(d: &Daemon, prefix: &str) -> String {
    let mut addr = String::new();
    assert!(
        wait_until(DEADLINE, || {
            let log = d.log_text();
            match log.split(prefix).nth(1) {
                Some(rest) => {
                    addr = rest
                        .split(|c: char| c.is_whitespace() || c == '/' || c == '"')
                        .next()
                        .unwrap_or("")
                        .to_string();
                    !addr.is_empty()
                }
                None => false,
            }
        }),
        "no {prefix:?} in the log: {}",
        d.log_text()
    );
    addr
}

/// A host with `--listen 0 --metrics 0` and `args`: (host, metrics base URL).
fn metered(env: &Env, args: &[&str]) -> (Host, String) {
    let mut all = vec!["--metrics", "0"];
    all.extend_from_slice(args);
    let h = host(env, &all);
    let m = format!("http://{}", logged_addr(&h.daemon, "metrics on http://"));
    (h, m)
}

/// A GET through a plain socket: (status, body), or None when nothing answers.
fn get_raw(base: &str, path: &str) -> Option<(u16, String)> {
    let addr = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    Some((status, body))
}

/// Wait for the daemon's exit: its status code (None: killed by a signal) and how long.
fn wait_exit(child: &mut Child, limit: Duration) -> (Option<i32>, Duration) {
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return (st.code(), start.elapsed());
        }
        assert!(
            start.elapsed() < limit,
            "the daemon did not exit within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn sigterm(pid: u32) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe {
        libc::kill(pid as i32, libc::SIGTERM);
    }
}

/// Every sample of a scrape, parsed by the Prometheus client's OpenMetrics parser:
/// (name, labels, value).
fn scrape(metrics: &str) -> Vec<(String, Value, f64)> {
    let (status, body) = get_raw(metrics, "/metrics").expect("the metrics listener answers");
    assert_eq!(status, 200, "{body}");
    let script = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = []
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        out.append([s.name, s.labels, s.value])
print(json.dumps(out))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 on PATH (run the tests through contrib/test/run)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the Prometheus parser refused the exposition (is prometheus_client installed? \
         contrib/test/run installs it): {}\n{body}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Vec<(String, Value, f64)> = serde_json::from_slice(&out.stdout).unwrap();
    v
}

/// The sum of the samples named `name` whose labels include `labels`.
fn sample(samples: &[(String, Value, f64)], name: &str, labels: &Value) -> f64 {
    samples
        .iter()
        .filter(|(n, l, _)| {
            n == name
                && labels
                    .as_object()
                    .unwrap()
                    .iter()
                    .all(|(k, v)| l.get(k) == Some(v))
        })
        .map(|(_, _, v)| v)
        .sum()
}

#[test]
fn metrics_parse_as_openmetrics_and_move_after_asks_and_answers() {
    let env = Env::new();
    let asker = token(&env, "asker", "ann", None);
    let rita = token(&env, "reviewer", "rita", None);
    // A webhook receiver that is not there: its deliveries stay pending.
    let nowhere = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let hook = format!("default=http://{nowhere}/hook");
    let (h, m) = metered(&env, &["--webhook", &hook]);
    let before = scrape(&m);
    assert_eq!(sample(&before, "dshq_requests_open", &json!({})), 0.0);

    for id in ["m1", "m2", "m3"] {
        assert_eq!(
            h.post("/requests", Some(&asker), &simple_request(id))
                .status,
            201
        );
    }
    env.drop_file("bad.json", b"{not json");
    assert!(wait_until(DEADLINE, || env
        .names("rejected")
        .contains(&"bad.json".to_string())));
    let r = h.post(
        "/requests/m1/answer",
        Some(&rita),
        &json!({"answers": [{"id": "db", "selected": ["SQLite"]}]}),
    );
    assert_eq!(r.status, 200, "{r:?}");

    let after = scrape(&m);
    let accepted = json!({"kind": "accepted"});
    assert_eq!(
        sample(&after, "dshq_request_changes_total", &accepted)
            - sample(&before, "dshq_request_changes_total", &accepted),
        3.0
    );
    assert_eq!(
        sample(
            &after,
            "dshq_request_changes_total",
            &json!({"kind": "answered"})
        ),
        1.0
    );
    assert_eq!(
        sample(&after, "dshq_time_to_answer_seconds_count", &json!({})),
        1.0
    );
    assert_eq!(
        sample(
            &after,
            "dshq_requests_open",
            &json!({"status": "pending", "context": "default"})
        ),
        2.0
    );
    assert!(sample(&after, "dshq_oldest_pending_age_seconds", &json!({})) >= 0.0);
    assert_eq!(
        sample(
            &after,
            "dshq_ingest_total",
            &json!({"verdict": "rejected", "code": "BAD_REQUEST"})
        ),
        1.0
    );
    // HTTP requests by route template (never a request id) and status.
    assert_eq!(
        sample(
            &after,
            "dshq_http_requests_total",
            &json!({"route": "/api/v1/requests", "method": "POST", "status": "201"})
        ),
        3.0
    );
    assert_eq!(
        sample(
            &after,
            "dshq_http_requests_total",
            &json!({"route": "/api/v1/requests/{id}/answer", "status": "200"})
        ),
        1.0
    );
    assert!(after
        .iter()
        .all(|(_, l, _)| !l.to_string().contains("m1") && !l.to_string().contains("m2")));
    assert!(
        sample(
            &after,
            "dshq_store_write_seconds_count",
            &json!({"kind": "web"})
        ) >= 4.0
    );
    // The outbox by channel: the webhook's rows wait, and every channel has its series.
    let hooks = |state: &str| {
        sample(
            &after,
            "dshq_deliveries",
            &json!({"channel": "webhook", "state": state}),
        )
    };
    assert!(hooks("pending") >= 4.0, "3 accepted, 1 answered");
    assert_eq!(hooks("delivered"), 0.0);
    for channel in ["email", "slack"] {
        assert!(after
            .iter()
            .any(|(n, l, v)| n == "dshq_deliveries" && l["channel"] == channel && *v == 0.0));
    }
    // The host holds the context's lease for the answer it gave.
    assert_eq!(sample(&after, "dshq_leases_held", &json!({})), 1.0);
    assert!(sample(&after, "dshq_lease_next_expiry_seconds", &json!({})) > 0.0);
    assert_eq!(h.daemon.stop(), 0);
}

/// Whether the host has accepted the one connection of a test (its gauge says so).
fn in_flight(metrics: &str) -> bool {
    get_raw(metrics, "/metrics")
        .is_some_and(|(_, body)| body.contains("dshq_http_connections_open 1\n"))
}

/// A request whose body is still arriving: the drain waits for it.
fn slow_upload(base: &str, token: &str) -> TcpStream {
    let addr = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST /api/v1/requests HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{{"
    )
    .unwrap();
    s.flush().unwrap();
    s
}

#[test]
fn probes_and_healthcheck_before_during_and_after_a_drain() {
    let env = Env::new();
    let asker = token(&env, "asker", "ann", None);
    let (h, m) = metered(&env, &["--shutdown-grace", "60s"]);
    for base in [&h.base, &m] {
        assert_eq!(get_raw(base, "/healthz"), Some((200, "ok\n".into())));
        assert_eq!(get_raw(base, "/readyz"), Some((200, "ready\n".into())));
    }
    // Unauthenticated, and nothing else there: no metrics on the API listener.
    assert_eq!(get_raw(&h.base, "/metrics").map(|r| r.0), Some(404));
    assert_eq!(
        env.run(&["healthcheck", "--url", &m]).ok().stdout,
        "ready\n"
    );
    assert_eq!(env.run(&["healthcheck", "--url", &h.base]).code, 0);

    // A request in flight holds the drain open.
    let upload = slow_upload(&h.base, &asker);
    assert!(wait_until(DEADLINE, || in_flight(&m)));
    let started = Instant::now();
    h.daemon.signal(libc::SIGTERM);
    assert!(
        wait_until(DEADLINE, || get_raw(&m, "/readyz")
            == Some((503, "draining\n".into()))),
        "readyz did not turn 503: {:?}",
        get_raw(&m, "/readyz")
    );
    assert_eq!(get_raw(&m, "/healthz"), Some((200, "ok\n".into())));
    let not_ready = env.run(&["healthcheck", "--url", &m]);
    assert_eq!(not_ready.code, 1, "{not_ready:?}");
    assert!(not_ready.stderr.contains("answered 503"), "{not_ready:?}");
    // No new connections on the API listener.
    assert!(
        wait_until(DEADLINE, || TcpStream::connect(
            h.base.trim_start_matches("http://")
        )
        .is_err()),
        "the API listener still accepts during the drain"
    );
    // The upload gives up: the drain ends, and the daemon exits 0, well within its grace.
    drop(upload);
    let mut d = h.daemon;
    let mut child = d.child.take().unwrap();
    let (code, _) = wait_exit(&mut child, DEADLINE);
    assert_eq!(code, Some(0), "{}", d.log_text());
    assert!(started.elapsed() < Duration::from_secs(60));
    assert_eq!(get_raw(&m, "/readyz"), None);
    assert_eq!(env.run(&["healthcheck", "--url", &m]).code, 1);

    // After: a new start is ready again.
    let (h2, m2) = metered(&env, &[]);
    assert_eq!(get_raw(&m2, "/readyz"), Some((200, "ready\n".into())));
    assert_eq!(env.run(&["healthcheck", "--url", &m2]).code, 0);
    assert_eq!(h2.daemon.stop(), 0);
}

#[test]
fn healthcheck_without_a_listener_asks_the_roots_lock() {
    let env = Env::new();
    let d = env.daemon();
    assert_eq!(env.run(&["healthcheck"]).ok().stdout, "running\n");
    assert_eq!(d.stop(), 0);
    let r = env.run(&["healthcheck"]);
    assert_eq!(r.code, 1, "{r:?}");
}

#[test]
fn a_sigterm_during_an_http_burst_exits_0_within_the_grace_and_loses_no_acknowledged_ask() {
    let env = Env::new();
    let asker = token(&env, "asker", "ann", None);
    let rita = token(&env, "reviewer", "rita", None);
    let grace = Duration::from_secs(8);
    let h = host(&env, &["--shutdown-grace", "8s"]);
    // The page's side of the host: a claim through the host's lease.
    assert_eq!(
        h.post("/requests", Some(&asker), &simple_request("held"))
            .status,
        201
    );
    let r = call("POST", &h.url("/requests/held/claim"), Some(&rita), None);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(env.json(&["show", "held"]).ok().json()["status"], "claimed");

    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let stopping = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (acked, stopping, url, asker) = (
                acked.clone(),
                stopping.clone(),
                h.url("/requests"),
                asker.clone(),
            );
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout(Duration::from_secs(20))
                    .build();
                for i in 0.. {
                    let id = format!("b{w}-{i}");
                    let body = simple_request(&id).to_string();
                    match agent
                        .post(&url)
                        .set("Authorization", &format!("Bearer {asker}"))
                        .set("Content-Type", "application/json")
                        .send_string(&body)
                    {
                        Ok(r) if r.status() == 201 => acked.lock().unwrap().push(id),
                        // Refused or cut by the stop: not acknowledged, may or may not be there.
                        _ if stopping.load(Ordering::SeqCst) => return,
                        Ok(r) => panic!("ask {id}: {}", r.status()),
                        Err(e) => panic!("ask {id}: {e}"),
                    }
                }
            })
        })
        .collect();
    assert!(wait_until(DEADLINE, || acked.lock().unwrap().len() >= 40));
    stopping.store(true, Ordering::SeqCst);
    let mut d = h.daemon;
    let mut child = d.child.take().unwrap();
    sigterm(child.id());
    let (code, took) = wait_exit(&mut child, DEADLINE);
    assert_eq!(code, Some(0), "{}", d.log_text());
    assert!(took < grace, "the drain took {took:?}, past its grace");
    for w in workers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 40);

    // After the restart: every acknowledged ask is there, and the claim was returned when
    // the host stopped (its lease released), not at the lease's expiry.
    let d2 = env.daemon();
    let listed = env
        .json(&["list", "--all", "--json", "--limit", "100000"])
        .ok()
        .json();
    let ids: std::collections::HashSet<String> = listed
        .as_array()
        .or_else(|| listed["requests"].as_array())
        .expect("a list")
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    let missing: Vec<_> = acked.iter().filter(|id| !ids.contains(*id)).collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    assert_eq!(env.json(&["show", "held"]).ok().json()["status"], "pending");
    assert!(d.log_text().contains("draining"), "{}", d.log_text());
    assert_eq!(d2.stop(), 0);
}

/// The steps of a start a test can see from outside, in order.
fn start_step_seen(env: &Env, log: &Path, step: usize) -> bool {
    let root = env.root();
    let text = || std::fs::read_to_string(log).unwrap_or_default();
    match step {
        0 => root.exists(),
        1 => root.join("dshq.db").exists(),
        2 => root.join("inbox/new").exists(),
        3 => text().contains("daemon started"),
        _ => text().contains("listening on"),
    }
}

#[test]
fn a_sigterm_at_any_step_of_the_start_ends_the_daemon_with_status_0() {
    for listen in [false, true] {
        for step in 0..if listen { 5 } else { 4 } {
            let env = Env::new();
            let log = env.dir.path().join("daemon.log");
            let mut c = env.command();
            c.arg("daemon").env("RUST_LOG", "info");
            if listen {
                c.args(["--listen", "0"]);
            }
            let mut child = c
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap();
            // Poll without pausing: the signal should land as close to the step as it can.
            let start = Instant::now();
            while !start_step_seen(&env, &log, step) {
                assert!(start.elapsed() < DEADLINE, "step {step} never came");
                std::hint::spin_loop();
            }
            sigterm(child.id());
            let (code, _) = wait_exit(&mut child, DEADLINE);
            assert_eq!(
                code,
                Some(0),
                "SIGTERM at step {step} (listen: {listen}): {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
    }
}

#[test]
fn a_config_files_setting_takes_effect_and_a_variable_then_a_flag_override_it() {
    let env = Env::new();
    let (p_file, p_env, p_flag) = (free_port(), free_port(), free_port());
    let cfg = env.dir.path().join("config.toml");
    std::fs::write(
        &cfg,
        format!(
            "log-format = \"json\"\n\n[daemon]\nlisten = \"127.0.0.1:{p_file}\"\ntick = \"2s\"\n"
        ),
    )
    .unwrap();
    let cfg_s = cfg.to_str().unwrap();
    let listening = |args: &[&str], vars: &[(&str, &str)]| -> (String, String) {
        let mut all = vec!["--config", cfg_s];
        all.extend_from_slice(args);
        let d = env.daemon_with(&all, vars);
        let addr = logged_addr(&d, "listening on http://");
        let log = d.log_text();
        assert_eq!(d.stop(), 0);
        (addr, log)
    };
    let (addr, log) = listening(&[], &[]);
    assert_eq!(addr, format!("127.0.0.1:{p_file}"));
    // The file's log format too: every line a JSON object.
    assert!(log
        .lines()
        .all(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v.is_object())));
    let env_addr = format!("127.0.0.1:{p_env}");
    let (addr, _) = listening(&[], &[("DSHQ_LISTEN", &env_addr)]);
    assert_eq!(addr, env_addr);
    let flag_addr = format!("127.0.0.1:{p_flag}");
    let (addr, log) = listening(
        &["--listen", &flag_addr, "--log-format", "text"],
        &[("DSHQ_LISTEN", &env_addr)],
    );
    assert_eq!(addr, flag_addr);
    assert!(log.contains(" INFO "), "{log}");

    // `config show` says where each value came from.
    let shown = env
        .command()
        .args(["--config", cfg_s, "--json", "config", "show"])
        .env("DSHQ_BATCH", "64")
        .output()
        .unwrap();
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    let of = |k: &str| {
        shown
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["key"] == k)
            .cloned()
            .unwrap_or_else(|| panic!("no {k} in {shown}"))
    };
    assert_eq!(of("daemon.tick")["value"], "2s");
    assert_eq!(of("daemon.tick")["source"], format!("file {cfg_s}:5"));
    assert_eq!(of("daemon.batch")["value"], "64");
    assert_eq!(of("daemon.batch")["source"], "env DSHQ_BATCH");
    assert_eq!(of("daemon.max-bytes")["source"], "default");
}

#[test]
fn config_check_names_the_key_and_line_of_what_is_wrong_and_show_redacts_secrets() {
    let env = Env::new();
    let cfg = env.dir.path().join("bad.toml");
    let check = |text: &str| {
        std::fs::write(&cfg, text).unwrap();
        env.run(&["config", "check", cfg.to_str().unwrap()])
    };
    let r = check("root = \"/r\"\n\n[daemon]\ntick = \"1s\"\nlisten-on = \"7465\"\n");
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("bad.toml:5:"), "{}", r.stderr);
    assert!(r.stderr.contains("\"daemon.listen-on\""), "{}", r.stderr);
    let r = check("[daemon]\nbatch = 10\ntick = \"0s\"\n");
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("bad.toml:3: daemon.tick"), "{}", r.stderr);
    assert!(r.stderr.contains("out of range"), "{}", r.stderr);
    let r = check("colour = \"always\"\n");
    assert!(
        r.stderr.contains("bad.toml:1:") && r.stderr.contains("\"colour\""),
        "{}",
        r.stderr
    );
    let r = check("[daemon\n");
    assert!(r.stderr.contains("bad.toml:1: not TOML"), "{}", r.stderr);
    // Any other command refuses to run on the bad file, naming it.
    let r = env.run(&["--config", cfg.to_str().unwrap(), "list"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("bad.toml:1"), "{}", r.stderr);
    // A good file checks; the default file is itself a good (all-commented) file.
    let default = env.run(&["config", "default"]).ok().stdout;
    assert!(default.contains("# shutdown-grace = \"10s\""), "{default}");
    let r = check(&default);
    assert_eq!(r.code, 0, "{r:?}");
    // A file holding a password (the store's URL, a webhook's) is a secret file: refused
    // while group or others may read it, by check and by every command; owner-only, it
    // checks, and show prints neither password.
    let secret = "store = \"postgres://dshq:hunter2@db.example/dshq\"\n[daemon]\nbatch = 64\n\
                  webhook = \"default=http://hook:s3cr3t@127.0.0.1:9/in\"\n";
    std::fs::write(&cfg, secret).unwrap();
    for mode in [0o644, 0o640] {
        std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(mode)).unwrap();
        for args in [
            &["config", "check", cfg.to_str().unwrap()][..],
            &["--config", cfg.to_str().unwrap(), "config", "show"],
            &["--config", cfg.to_str().unwrap(), "list"],
        ] {
            let r = env.run(args);
            assert_eq!(r.code, 12, "{mode:o} {args:?}: {r:?}");
            assert!(
                r.stderr.contains("UNSAFE_ROOT") && r.stderr.contains("chmod 600"),
                "{}",
                r.stderr
            );
            assert!(!r.stderr.contains("hunter2"), "{}", r.stderr);
        }
    }
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o600)).unwrap();
    env.run(&["config", "check", cfg.to_str().unwrap()]).ok();
    let shown = env.run(&["--config", cfg.to_str().unwrap(), "config", "show"]);
    for password in ["hunter2", "s3cr3t"] {
        assert!(!shown.stdout.contains(password), "{}", shown.stdout);
    }
    assert!(
        shown.stdout.contains("postgres://dshq:***@")
            && shown.stdout.contains("http://hook:***@127.0.0.1:9/in"),
        "{}",
        shown.stdout
    );
    // Without a password, a file others may read is fine.
    std::fs::write(&cfg, "[daemon]\nbatch = 64\n").unwrap();
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o644)).unwrap();
    env.run(&["config", "check", cfg.to_str().unwrap()]).ok();
}

#[test]
fn json_logs_parse_line_by_line_and_hold_no_token() {
    let env = Env::new();
    let asker = token(&env, "asker", "ann", None);
    let rita = token(&env, "reviewer", "rita", None);
    let daemon = env.daemon_with(
        &["--listen", "0", "--log-format", "json"],
        &[("RUST_LOG", "info,dshq::web=debug")],
    );
    let base = format!("http://{}", logged_addr(&daemon, "listening on http://"));
    let h = Host { daemon, base };
    let free = json!({"id": "j1", "questions": [{"id": "why", "question": "Why?"}]});
    assert_eq!(h.post("/requests", Some(&asker), &free).status, 201);
    let r = h.post(
        "/requests/j1/answer",
        Some(&rita),
        &json!({"answers": [{"id": "why", "selected": [], "custom": "a-secret-note-4711"}]}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    env.drop_file("bad.json", b"[]");
    assert!(wait_until(DEADLINE, || h
        .daemon
        .log_text()
        .contains("bad.json")));
    let log = h.daemon.log_text();
    let mut saw_id = false;
    for line in log.lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not one JSON object ({e}): {line:?}"));
        assert!(v["level"].is_string() && v["fields"].is_object(), "{line}");
        saw_id |= v["fields"]["id"] == "j1";
    }
    assert!(
        saw_id,
        "no log line carries the request id as a field: {log}"
    );
    for secret in [asker.as_str(), rita.as_str(), "a-secret-note-4711"] {
        assert!(!log.contains(secret), "a secret in the log: {log}");
    }
    assert_eq!(h.daemon.stop(), 0);
}

#[test]
fn a_backup_taken_during_a_burst_restores_and_verifies() {
    let env = Env::new();
    let d = env.daemon();
    let inbox = env.root().join("inbox");
    let burst = std::thread::spawn(move || {
        for i in 0..600 {
            crate::helpers::drop_into(
                &inbox,
                &format!("k{i}.json"),
                simple_request(&format!("k{i}")).to_string().as_bytes(),
            );
        }
    });
    assert!(wait_until(DEADLINE, || env.names("outbox").is_empty()
        && env.json(&["list", "--json", "--limit", "5"]).code == 0
        && env.run(&["show", "k50"]).code == 0));
    let backup = env.dir.path().join("backup");
    let r = env
        .json(&["store", "backup", backup.to_str().unwrap()])
        .ok()
        .json();
    burst.join().unwrap();
    assert!(r["events"].as_i64().unwrap() >= 51, "{r}");
    for f in ["dshq.db", "audit.key", "audit.head"] {
        assert!(backup.join(f).exists(), "no {f} in the backup");
    }
    // Restored: the backup directory as a root verifies against its own head, and holds
    // what was committed when it was taken.
    let restored = env
        .command()
        .env("DSHQ_ROOT", &backup)
        .args(["audit", "verify"])
        .output()
        .unwrap();
    assert!(
        restored.status.success(),
        "{}",
        String::from_utf8_lossy(&restored.stderr)
    );
    let shown = env
        .command()
        .env("DSHQ_ROOT", &backup)
        .args(["--json", "show", "k50"])
        .output()
        .unwrap();
    assert!(shown.status.success());
    // A second backup into the same directory is refused (it is not empty).
    let again = env.json(&["store", "backup", backup.to_str().unwrap()]);
    assert_eq!(again.error_code(), "USAGE");
    assert_eq!(d.stop(), 0);
}

#[test]
fn a_second_sigterm_or_the_graces_end_stops_a_held_drain_at_once_with_status_0() {
    for second_signal in [true, false] {
        let env = Env::new();
        let asker = token(&env, "asker", "ann", None);
        let grace = if second_signal { "60s" } else { "1s" };
        let (h, m) = metered(&env, &["--shutdown-grace", grace]);
        assert_eq!(
            h.post("/requests", Some(&asker), &simple_request("kept"))
                .status,
            201
        );
        // An upload that never finishes holds the drain open, once the host has its
        // connection (a connection still in the accept queue is simply dropped).
        let _upload = slow_upload(&h.base, &asker);
        assert!(wait_until(DEADLINE, || in_flight(&m)));
        let mut d = h.daemon;
        let mut child = d.child.take().unwrap();
        let started = Instant::now();
        sigterm(child.id());
        assert!(wait_until(DEADLINE, || d.log_text().contains("draining:")));
        if second_signal {
            sigterm(child.id());
        }
        let (code, _) = wait_exit(&mut child, DEADLINE);
        assert_eq!(code, Some(0), "{}", d.log_text());
        let why = if second_signal {
            "a second signal: stopping at once"
        } else {
            "the drain ran past --shutdown-grace"
        };
        assert!(d.log_text().contains(why), "{}", d.log_text());
        assert!(started.elapsed() < Duration::from_secs(30));
        // Nothing committed was lost.
        assert_eq!(env.json(&["show", "kept"]).ok().json()["status"], "pending");
    }
}

/// A file holding only tables (groups, quorums, people, Slack users) is no empty file:
/// `config check` reports each (the directory resolved to persons) and `config show`
/// lists each entry with its line; a directory listing one identity twice is refused at
/// that line.
#[test]
fn config_check_and_show_cover_every_table() {
    let env = Env::new();
    let cfg = env.dir.path().join("tables.toml");
    std::fs::write(
        &cfg,
        "[people]\nalice = [\"mail:alice@example.com\", \"slack:U0ALICE2\"]\n\n\
         [groups]\nops = [\"alice\", \"mail:alice@example.com\", \"web:bob\"]\n\n\
         [quorum.deploys]\napprovals = 2\ngroup = \"ops\"\n\n\
         [slack.users]\nU0BOB = \"bob\"\n",
    )
    .unwrap();
    let path = cfg.to_str().unwrap();
    let text = env.run(&["config", "check", path]).ok().stdout;
    assert!(
        text.contains("ok (0 settings, 1 person, 1 group, 1 context quorum, 2 Slack users)"),
        "{text}"
    );
    assert!(
        text.contains("alice: mail:alice@example.com, slack:U0ALICE2"),
        "{text}"
    );
    assert!(text.contains("ops: alice, bob"), "{text}");
    let checked = env.json(&["config", "check", path]).ok().json();
    assert_eq!(checked["groups"]["ops"], json!(["alice", "bob"]));
    assert_eq!(checked["quorum"]["deploys"]["approvals"], 2);
    assert_eq!(
        checked["slackUsers"],
        json!({"U0ALICE2": "alice", "U0BOB": "bob"})
    );
    let shown = env.run(&["--config", path, "config", "show"]).ok().stdout;
    for want in [
        "[people]\nalice = [\"mail:alice@example.com\", \"slack:U0ALICE2\"]",
        "[groups]\nops = [\"alice\", \"mail:alice@example.com\", \"web:bob\"]",
        "[quorum]\ndeploys = { approvals = 2, group = \"ops\" }",
        "[slack.users]\nU0BOB = \"bob\"",
    ] {
        assert!(shown.contains(want), "{want:?} in {shown}");
    }
    let shown = env.json(&["--config", path, "config", "show"]).ok().json();
    let people = shown
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == "people.alice")
        .cloned()
        .unwrap();
    assert_eq!(people["source"], format!("file {path}:2"));
    // One identity, two persons: refused, naming both.
    std::fs::write(
        &cfg,
        "[people]\nalice = [\"web:shared\"]\nbob = [\"web:shared\"]\n",
    )
    .unwrap();
    let r = env.run(&["config", "check", path]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("web:shared is listed for both \"alice\" and \"bob\""),
        "{}",
        r.stderr
    );
}

/// `config default` prints a file that works once uncommented: every line of it
/// uncommented (each setting with its default, `false` for a switch or an example a flag
/// takes, and every table: `[people]`, `[groups]`, `[quorum.CONTEXT]`, `[slack.users]`)
/// checks, and `config show` shows every table of it.
#[test]
fn the_default_file_uncommented_checks_and_shows_every_table() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let default = env.run(&["config", "default"]).ok().stdout;
    let setting = regex::Regex::new(r"^# ([A-Za-z0-9.-]+ = .*|\[\[?[a-z.]+\]\]?)$").unwrap();
    let mut uncommented = 0;
    let text: String = default
        .lines()
        .map(|l| match setting.captures(l) {
            Some(c) => {
                uncommented += 1;
                format!("{}\n", &c[1])
            }
            None => format!("{l}\n"),
        })
        .collect();
    assert!(uncommented > 40, "{default}");
    let cfg = env.dir.path().join("all.toml");
    std::fs::write(&cfg, &text).unwrap();
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o600)).unwrap();
    let r = env.run(&["config", "check", cfg.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}\n{text}");
    let shown = env
        .run(&["--config", cfg.to_str().unwrap(), "config", "show"])
        .ok()
        .stdout;
    for table in [
        "[people]",
        "[groups]",
        "[quorum]",
        "[slack.users]",
        "[oidc]",
        "[teams]",
        "[teams.conversations]",
        "[telegram]",
    ] {
        assert!(shown.contains(table), "{table} not shown:\n{shown}");
    }
    assert!(shown.contains("smtp-plain = \"false\""), "{shown}");
}
