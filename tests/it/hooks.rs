//! Knowing a question arrived: the daemon's `--on-question` hook and `dshq watch`.
//!
//! The hook tests use small shell hooks that write what they received into the test's
//! temporary directory (atomically, via a rename) so the test can wait for the file.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;

use serde_json::{json, Value};

use crate::helpers::*;
use crate::interactive::{expect, spawn};

/// Whether `pid` is a running process (a zombie counts as gone).
fn alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Wait for a file holding a pid and return it.
fn wait_pid(path: &Path) -> i32 {
    let mut pid = None;
    assert!(
        wait_until(DEADLINE, || {
            pid = fs::read_to_string(path)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            pid.is_some()
        }),
        "no pid file {}",
        path.display()
    );
    pid.unwrap()
}

fn out_dir(env: &Env) -> PathBuf {
    let out = env.dir.path().join("hook-out");
    fs::create_dir_all(&out).unwrap();
    out
}

#[test]
fn the_hook_gets_the_request_on_stdin_and_its_id_in_the_environment() {
    let env = Env::new();
    let out = out_dir(&env);
    let marker = env.dir.path().join("interpolated");
    // Writes stdin and the environment to files named after the request, atomically.
    let hook = r#"cat > "$OUT/.$DSHQ_REQUEST_ID.tmp" && printf '%s %s' "$DSHQ_REQUEST_ID" "$DSHQ_CONTEXT" > "$OUT/$DSHQ_REQUEST_ID.env" && mv "$OUT/.$DSHQ_REQUEST_ID.tmp" "$OUT/$DSHQ_REQUEST_ID.json""#;
    let d = env.daemon_with(&["--on-question", hook], &[("OUT", out.to_str().unwrap())]);
    // Request text full of shell syntax: it must reach the hook as data only.
    let nasty = format!(
        "Which db? $(touch {m}) `touch {m}`; \"quoted\" 'single' && touch {m}",
        m = marker.display()
    );
    let mut req = simple_request("via-inbox");
    req["questions"][0]["question"] = json!(nasty);
    req["context"] = json!("ops");
    env.drop_file("via-inbox.json", &serde_json::to_vec(&req).unwrap());
    // A request accepted by `dshq ask` (not by the daemon's inbox) runs the hook too.
    env.ask(&simple_request("via-ask")).ok();

    for (id, context) in [("via-inbox", "ops"), ("via-ask", "default")] {
        let file = out.join(format!("{id}.json"));
        assert!(
            wait_until(DEADLINE, || file.exists()),
            "the hook did not run for {id}: {}",
            d.log_text()
        );
        let got: Value = serde_json::from_str(&fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(got["id"], id);
        assert_eq!(got["context"], context);
        assert_eq!(got["status"], "pending");
        assert_eq!(got["questions"][0]["options"][1]["label"], "SQLite");
        assert_eq!(
            fs::read_to_string(out.join(format!("{id}.env"))).unwrap(),
            format!("{id} {context}")
        );
    }
    let got: Value =
        serde_json::from_str(&fs::read_to_string(out.join("via-inbox.json")).unwrap()).unwrap();
    assert_eq!(got["questions"][0]["question"], nasty.as_str());
    assert!(!marker.exists(), "request text was run by a shell");
    assert!(
        wait_until(DEADLINE, || d.log_text().matches("hook ran").count() >= 2),
        "{}",
        d.log_text()
    );
    assert_eq!(d.stop(), 0);
}

#[test]
fn a_hanging_hook_never_delays_ingestion_and_is_killed_at_shutdown() {
    let env = Env::new();
    let out = out_dir(&env);
    let hook = r#"echo $$ > "$OUT/.pid-$DSHQ_REQUEST_ID" && mv "$OUT/.pid-$DSHQ_REQUEST_ID" "$OUT/pid-$DSHQ_REQUEST_ID" && exec sleep 1000"#;
    let d = env.daemon_with(
        &["--on-question", hook, "--hook-timeout", "10m"],
        &[("OUT", out.to_str().unwrap())],
    );
    env.drop_file(
        "h0.json",
        &serde_json::to_vec(&simple_request("h0")).unwrap(),
    );
    let first = wait_pid(&out.join("pid-h0"));
    assert!(alive(first));
    // More requests than hook workers (4): every one is still ingested at once, while
    // the first hook hangs.
    for k in 1..=8 {
        let id = format!("h{k}");
        env.drop_file(
            &format!("{id}.json"),
            &serde_json::to_vec(&simple_request(&id)).unwrap(),
        );
    }
    assert!(
        wait_until(DEADLINE, || env.names("inbox/new").is_empty()
            && (1..=8).all(|k| env.json(&["show", &format!("h{k}")]).code == 0)),
        "ingestion was delayed by the hook: {}",
        d.log_text()
    );
    assert!(
        alive(first),
        "the first hook still runs: ingestion did not wait for it"
    );
    // The pool runs four at a time; the rest wait in its queue, not in the daemon loop.
    let second = wait_pid(&out.join("pid-h1"));
    assert_eq!(d.stop(), 0);
    assert!(
        wait_until(DEADLINE, || !alive(first) && !alive(second)),
        "hooks survived the daemon"
    );
}

#[test]
fn a_slow_hook_is_killed_after_the_timeout_and_a_failing_one_is_logged() {
    let env = Env::new();
    let out = out_dir(&env);
    let hook = r#"case "$DSHQ_REQUEST_ID" in fail*) exit 3;; esac; echo $$ > "$OUT/.pid-$DSHQ_REQUEST_ID" && mv "$OUT/.pid-$DSHQ_REQUEST_ID" "$OUT/pid-$DSHQ_REQUEST_ID" && exec sleep 1000"#;
    let d = env.daemon_with(
        &["--on-question", hook, "--hook-timeout", "1s"],
        &[("OUT", out.to_str().unwrap())],
    );
    env.drop_file(
        "slow.json",
        &serde_json::to_vec(&simple_request("slow")).unwrap(),
    );
    env.drop_file(
        "fail1.json",
        &serde_json::to_vec(&simple_request("fail1")).unwrap(),
    );
    let pid = wait_pid(&out.join("pid-slow"));
    assert!(
        wait_until(DEADLINE, || d
            .log_text()
            .contains("hook timed out and was killed")),
        "{}",
        d.log_text()
    );
    assert!(
        wait_until(DEADLINE, || !alive(pid)),
        "the slow hook still runs"
    );
    assert!(
        wait_until(DEADLINE, || d.log_text().contains("hook failed")),
        "{}",
        d.log_text()
    );
    // The daemon carries on.
    env.drop_file(
        "after.json",
        &serde_json::to_vec(&simple_request("after")).unwrap(),
    );
    assert!(wait_until(DEADLINE, || env.json(&["show", "after"]).code == 0));
    // Stopped while that hook starts or runs: it does not outlive the daemon.
    assert_eq!(d.stop(), 0);
    let after = out.join("pid-after");
    if let Some(pid) = fs::read_to_string(&after)
        .ok()
        .and_then(|s| s.trim().parse().ok())
    {
        assert!(
            wait_until(DEADLINE, || !alive(pid)),
            "a hook outlived the daemon"
        );
    }
}

#[test]
fn watch_prints_ndjson_when_piped_following_new_requests() {
    let env = Env::new();
    env.ask(&simple_request("w1")).ok();
    let mut child = env
        .command()
        .args(["watch", "--pending", "--context", "default", "--count", "3"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The open request comes first; once it is out, the watch is following.
    let first = rx
        .recv_timeout(DEADLINE)
        .expect("the pending request is printed");
    let v: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(v["id"], "w1");
    // New requests: one in another context (filtered out), two in ours, one via the inbox.
    let mut other = simple_request("w-ops");
    other["context"] = json!("ops");
    env.ask(&other).ok();
    env.ask(&simple_request("w2")).ok();
    let _d = env.daemon();
    env.drop_file(
        "w3.json",
        &serde_json::to_vec(&simple_request("w3")).unwrap(),
    );
    let mut ids = vec![];
    for _ in 0..2 {
        let line = rx.recv_timeout(DEADLINE).expect("a new request is printed");
        let v: Value = serde_json::from_str(&line).expect("each line is one JSON document");
        assert_eq!(v["context"], "default");
        assert_eq!(v["questions"][0]["id"], "db");
        ids.push(v["id"].as_str().unwrap().to_string());
    }
    assert_eq!(ids, vec!["w2", "w3"]);
    // --count 3 reached: it exits by itself.
    let mut status = None;
    assert!(wait_until(DEADLINE, || {
        status = child.try_wait().unwrap();
        status.is_some()
    }));
    assert!(status.unwrap().success());
    assert!(
        rx.recv_timeout(DEADLINE).is_err(),
        "nothing after the count"
    );
}

#[test]
fn watch_on_a_terminal_prints_a_readable_line() {
    let env = Env::new();
    env.ask(&simple_request("first")).ok();
    let mut p = spawn(&env, &["watch", "--count", "1"], &[]);
    expect(&mut p, "watching for new requests in every context");
    let mut req = simple_request("plan-9");
    req["questions"] = json!([{
        "id": "p", "question": "Approve the plan?", "detail": "x",
        "options": [{"label": "ok"}], "intent": {"kind": "plan-review", "approve": "ok"}
    }]);
    env.ask(&req).ok();
    expect(
        &mut p,
        "plan-9  [default]  Approve the plan?  (plan-review)",
    );
    let _ = p.exp_eof();
}

/// A contrib hook, quoted for `sh -c`.
fn contrib(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("contrib/hooks")
        .join(name);
    format!("sh '{}'", p.display())
}

/// A one-shot HTTP server on 127.0.0.1: returns its URL and a receiver of the request's
/// head and body.
fn one_post_server() -> (String, mpsc::Receiver<(String, String)>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let (head, body) = loop {
            let n = s.read(&mut chunk).unwrap_or(0);
            if n == 0 {
                return;
            }
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                if body.len() >= len {
                    break (head.to_string(), body.to_string());
                }
            }
        };
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        let _ = tx.send((head, body));
    });
    (url, rx)
}

#[test]
fn the_contrib_webhook_posts_the_request_with_curl() {
    if Command::new("curl").arg("--version").output().is_err() {
        panic!("curl is needed by contrib/hooks/webhook.sh and this test");
    }
    let env = Env::new();
    let (url, rx) = one_post_server();
    let d = env.daemon_with(
        &["--on-question", &contrib("webhook.sh")],
        &[
            ("DSHQ_WEBHOOK_URL", &url),
            ("DSHQ_WEBHOOK_TOKEN", "s3cret"),
            ("http_proxy", ""),
            ("HTTP_PROXY", ""),
            ("no_proxy", "*"),
            ("NO_PROXY", "*"),
        ],
    );
    env.ask(&simple_request("wh1")).ok();
    let (head, body) = rx.recv_timeout(DEADLINE).unwrap_or_else(|_| {
        panic!("no post arrived: {}", d.log_text());
    });
    assert!(head.starts_with("POST /hook "), "{head}");
    assert!(head.contains("Authorization: Bearer s3cret"), "{head}");
    assert!(head.contains("X-Dshq-Request-Id: wh1"), "{head}");
    let v: Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(v["id"], "wh1");
    assert_eq!(v["questions"][0]["question"], "Which database?");
    assert!(wait_until(DEADLINE, || d.log_text().contains("hook ran")));
    assert_eq!(d.stop(), 0);
}

#[test]
fn the_contrib_desktop_notification_names_the_request() {
    let env = Env::new();
    let fake = env.dir.path().join("bin");
    fs::create_dir_all(&fake).unwrap();
    let out = out_dir(&env);
    // A stand-in notify-send that records its arguments, one per line.
    let script = fake.join("notify-send");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{o}/.n' && mv '{o}/.n' '{o}/notified'\n",
            o = out.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        fake.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let d = env.daemon_with(
        &["--on-question", &contrib("notify-desktop.sh")],
        &[("PATH", &path)],
    );
    let mut req = simple_request("nd1");
    req["questions"][0]["header"] = json!("Storage");
    env.ask(&req).ok();
    let file = out.join("notified");
    assert!(
        wait_until(DEADLINE, || file.exists()),
        "not notified: {}",
        d.log_text()
    );
    let args = fs::read_to_string(&file).unwrap();
    assert!(args.contains("(default · nd1)"), "{args}");
    assert!(
        args.contains("Which database?") || args.contains("dshq answer nd1"),
        "{args}"
    );
    assert_eq!(d.stop(), 0);
}
