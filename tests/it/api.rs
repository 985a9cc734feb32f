//! The HTTP API through a real socket: the real daemon with `--listen 0` (a free loopback
//! port, read back from its log), tokens made with the real `dshq token create`, and a
//! plain HTTP client. Role boundaries, the long-poll woken by an answer, the event
//! stream, bad and oversize bodies.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{simple_request, wait_until, Daemon, Env, DEADLINE};

/// A daemon with the API on a free port.
pub struct Host {
    pub daemon: Daemon,
    pub base: String,
}

/// Start the daemon with `--listen 0` (and `args`), with debug logs of the web face so a
/// test can wait for a long-poll or a stream to be in place.
pub fn host(env: &Env, args: &[&str]) -> Host {
    let mut all = vec!["--listen", "0"];
    all.extend_from_slice(args);
    let daemon = env.daemon_with(&all, &[("RUST_LOG", "info,dshq::web=debug")]);
    listening(daemon)
}

/// A started daemon as a host, once it logged the address it listens on.
pub fn listening(daemon: Daemon) -> Host {
    let mut base = String::new();
    assert!(
        wait_until(DEADLINE, || {
            let log = daemon.log_text();
            match log.split("listening on ").nth(1) {
                Some(rest) => {
                    base = rest.split_whitespace().next().unwrap_or("").to_string();
                    !base.is_empty()
                }
                None => false,
            }
        }),
        "the daemon did not log its address: {}",
        daemon.log_text()
    );
    Host { daemon, base }
}

/// `dshq token create --role ROLE --name NAME [--context C]`: the token.
pub fn token(env: &Env, role: &str, name: &str, context: Option<&str>) -> String {
    let mut args = vec!["token", "create", "--role", role, "--name", name];
    if let Some(c) = context {
        args.extend(["--context", c]);
    }
    let v = env.json(&args).ok().json();
    v["token"].as_str().expect("a token").to_string()
}

/// A response: status and body (JSON when it parses, else a string).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub body: Value,
}

impl Resp {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
}

/// One HTTP call.
pub fn call(method: &str, url: &str, token: Option<&str>, body: Option<&[u8]>) -> Resp {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build();
    let mut req = agent.request(method, url);
    if let Some(t) = token {
        req = req.set("Authorization", &format!("Bearer {t}"));
    }
    let r = match body {
        Some(b) => req.set("Content-Type", "application/json").send_bytes(b),
        None => req.call(),
    };
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let text = resp.into_string().unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Resp { status, body }
}

impl Host {
    pub fn url(&self, path: &str) -> String {
        format!("{}/api/v1{path}", self.base)
    }
    pub fn get(&self, path: &str, token: Option<&str>) -> Resp {
        call("GET", &self.url(path), token, None)
    }
    pub fn post(&self, path: &str, token: Option<&str>, body: &Value) -> Resp {
        call(
            "POST",
            &self.url(path),
            token,
            Some(body.to_string().as_bytes()),
        )
    }
}

fn answer_db(label: &str) -> Value {
    json!({"answers": [{"id": "db", "selected": [label]}]})
}

#[test]
fn every_role_boundary_is_401_or_403_and_changes_nothing() {
    let env = Env::new();
    let asker = token(&env, "asker", "ann", None);
    let reviewer = token(&env, "reviewer", "rita", None);
    let auditor = token(&env, "auditor", "audrey", None);
    let revoked = token(&env, "reviewer", "gone", None);
    env.json(&["token", "revoke", "gone"]).ok();
    let h = host(&env, &[]);
    assert_eq!(
        h.post("/requests", Some(&asker), &simple_request("r1"))
            .status,
        201
    );

    // No token, a wrong one, a malformed one, a revoked one: 401 everywhere, same body.
    let wrong = format!("dshq_{}", "0".repeat(64));
    let routes: &[(&str, &str)] = &[
        ("POST", "/requests"),
        ("GET", "/requests"),
        ("GET", "/requests/r1"),
        ("GET", "/requests/r1/outcome"),
        ("POST", "/requests/r1/claim"),
        ("POST", "/requests/r1/answer"),
        ("POST", "/requests/r1/cancel"),
        ("POST", "/requests/r1/abort"),
        ("GET", "/requests/r1/events"),
        ("GET", "/history"),
        ("GET", "/stats"),
        ("GET", "/stream"),
    ];
    for (m, p) in routes {
        for t in [
            None,
            Some(wrong.as_str()),
            Some("Basic abc"),
            Some(revoked.as_str()),
        ] {
            let body = (*m == "POST").then(|| answer_db("Postgres").to_string().into_bytes());
            let r = call(m, &h.url(p), t, body.as_deref());
            assert_eq!(r.status, 401, "{m} {p} with {t:?}: {r:?}");
            assert_eq!(
                r.body,
                json!({"error": {"code": "UNAUTHORIZED", "message": "a valid bearer token is required"}}),
                "{m} {p}"
            );
        }
    }

    // 403 by role.
    let forbidden: &[(&str, &str, &str)] = &[
        (&asker, "POST", "/requests/r1/claim"),
        (&asker, "POST", "/requests/r1/answer"),
        (&asker, "POST", "/requests/r1/cancel"),
        (&asker, "GET", "/requests/r1/events"),
        (&asker, "GET", "/history"),
        (&asker, "GET", "/stats"),
        (&auditor, "POST", "/requests"),
        (&auditor, "POST", "/requests/r1/claim"),
        (&auditor, "POST", "/requests/r1/answer"),
        (&auditor, "POST", "/requests/r1/cancel"),
        (&auditor, "POST", "/requests/r1/abort"),
    ];
    for (t, m, p) in forbidden {
        let body = (*m == "POST").then(|| {
            if *p == "/requests" {
                simple_request("r2").to_string().into_bytes()
            } else {
                answer_db("Postgres").to_string().into_bytes()
            }
        });
        let r = call(m, &h.url(p), Some(t), body.as_deref());
        assert_eq!((r.status, r.code()), (403, "FORBIDDEN"), "{m} {p}: {r:?}");
        assert_eq!(
            r.body["error"]["message"], "this token's role may not do that",
            "nothing else is revealed"
        );
    }
    // Nothing changed: r1 still pending, r2 never asked, no lease taken, no outcome.
    let show = env.json(&["show", "r1"]).ok().json();
    assert_eq!(show["status"], "pending");
    assert_eq!(env.json(&["show", "r2"]).error_code(), "NOT_FOUND");
    assert!(env.outcome("r1").is_none());
    assert_eq!(env.json(&["provider", "status"]).ok().json(), json!([]));

    // Allowed: the auditor reads the record; the reviewer answers.
    for p in [
        "/history",
        "/stats",
        "/requests/r1/events",
        "/requests",
        "/requests/r1",
    ] {
        assert_eq!(h.get(p, Some(&auditor)).status, 200, "auditor {p}");
    }
    let r = h.post("/requests/r1/answer", Some(&reviewer), &answer_db("SQLite"));
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["status"], "answered");
    assert_eq!(r.body["provider"], "web:rita");
}

#[test]
fn an_asker_sees_and_aborts_only_its_own_requests() {
    let env = Env::new();
    let ann = token(&env, "asker", "ann", None);
    let bob = token(&env, "asker", "bob", None);
    let ci_only = token(&env, "asker", "ci-bot", Some("ci"));
    let h = host(&env, &[]);
    assert_eq!(
        h.post("/requests", Some(&ann), &simple_request("a1"))
            .status,
        201
    );
    // Bob cannot see, wait for or abort Ann's request: not found, as if it did not exist.
    for p in ["/requests/a1", "/requests/a1/outcome"] {
        let r = h.get(p, Some(&bob));
        assert_eq!((r.status, r.code()), (404, "NOT_FOUND"), "{p}");
    }
    let r = h.post("/requests/a1/abort", Some(&bob), &json!({}));
    assert_eq!((r.status, r.code()), (404, "NOT_FOUND"));
    assert_eq!(h.get("/requests", Some(&bob)).body, json!([]));
    let listed = h.get("/requests", Some(&ann)).body;
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    // A token bound to a context asks only there.
    let mut elsewhere = simple_request("c1");
    elsewhere["context"] = json!("prod");
    let r = h.post("/requests", Some(&ci_only), &elsewhere);
    assert_eq!((r.status, r.code()), (403, "FORBIDDEN"));
    elsewhere["context"] = json!("ci");
    assert_eq!(h.post("/requests", Some(&ci_only), &elsewhere).status, 201);
    // Ann aborts her own; the log names her.
    let r = h.post(
        "/requests/a1/abort",
        Some(&ann),
        &json!({"reason": "changed my mind"}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.body["error"]["code"], "ASK_ABORTED");
    let events = env.json(&["events", "a1"]).ok().json();
    let actors: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["actor"].as_str().unwrap())
        .collect();
    assert_eq!(actors, ["web:ann", "web:ann"], "{events}");
    assert_eq!(env.wait_outcome("a1")["error"]["code"], "ASK_ABORTED");
}

#[test]
fn ask_over_http_gives_what_the_cli_gives_and_answers_write_the_outcome_file() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    let req = simple_request("same");
    let http = h.post("/requests", Some(&rita), &req);
    assert_eq!(http.status, 201);
    let other = Env::new();
    let cli = other
        .run_stdin(&["--json", "ask", "-"], &req.to_string())
        .ok()
        .json();
    for k in ["id", "context", "new", "status", "requestDigest"] {
        assert_eq!(http.body[k], cli[k], "{k}");
    }
    // Again with the same content: 200, not new.
    let again = h.post("/requests", Some(&rita), &req);
    assert_eq!((again.status, &again.body["new"]), (200, &json!(false)));
    // No id in the document: a generated one.
    let mut anon = simple_request("x");
    anon.as_object_mut().unwrap().remove("id");
    let r = h.post("/requests", Some(&rita), &anon);
    assert!(r.body["id"].as_str().unwrap().starts_with("ask-"), "{r:?}");

    let r = h.post("/requests/same/answer", Some(&rita), &answer_db("Postgres"));
    assert_eq!(r.status, 200, "{r:?}");
    // The outcome file follows the commit (written by the use-case, the loop woken too).
    let file = env.wait_outcome("same");
    assert_eq!(file, r.body);
    assert_eq!(file["provider"], "web:rita");
    // A second answer: final states never change.
    let r = h.post("/requests/same/answer", Some(&rita), &answer_db("SQLite"));
    assert_eq!((r.status, r.code()), (409, "REQUEST_FINAL"));
    // The host holds the context's lease as "web" while reviewers act through it.
    let leases = env.json(&["provider", "status"]).ok().json();
    assert_eq!(leases[0]["name"], "web", "{leases}");
    let shown = h.get("/requests/same", Some(&rita)).body;
    assert_eq!(shown["status"], "answered");
    assert_eq!(shown["outcome"], file);
}

#[test]
fn a_terminal_reviewer_holding_the_context_keeps_it() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    assert_eq!(
        h.post("/requests", Some(&rita), &simple_request("t1"))
            .status,
        201
    );
    env.register("terminal-tom", "default", "5m");
    let r = h.post("/requests/t1/answer", Some(&rita), &answer_db("Postgres"));
    assert_eq!((r.status, r.code()), (409, "DUPLICATE_PROVIDER"), "{r:?}");
    assert_eq!(env.json(&["show", "t1"]).ok().json()["status"], "pending");
}

#[test]
fn a_long_poll_is_woken_by_an_answer() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    assert_eq!(
        h.post("/requests", Some(&rita), &simple_request("lp"))
            .status,
        201
    );
    // Nothing yet: 204 at once without a wait.
    assert_eq!(h.get("/requests/lp/outcome", Some(&rita)).status, 204);
    // A short wait ends with 204.
    assert_eq!(
        h.get("/requests/lp/outcome?wait=200ms", Some(&rita)).status,
        204
    );
    // A bad wait is a usage error.
    let r = h.get("/requests/lp/outcome?wait=forever", Some(&rita));
    assert_eq!((r.status, r.code()), (400, "USAGE"));

    // Waiters over HTTP, woken by an answer over HTTP and by an answer file.
    for (id, by_file) in [("lp", false), ("lp2", true)] {
        if by_file {
            assert_eq!(
                h.post("/requests", Some(&rita), &simple_request(id)).status,
                201
            );
        }
        let url = h.url(&format!("/requests/{id}/outcome?wait=60s"));
        let t = rita.clone();
        let started = Instant::now();
        let waiter = std::thread::spawn(move || call("GET", &url, Some(&t), None));
        let marker = format!("long-poll waiting id={id}");
        assert!(
            wait_until(DEADLINE, || h.daemon.log_text().contains(&marker)),
            "the long-poll did not start waiting: {}",
            h.daemon.log_text()
        );
        if by_file {
            let lease = env.register("filer", "default", "5m");
            let doc = json!({"lease": lease, "answers": [{"id": "db", "selected": ["SQLite"]}]});
            env.drop_answer(&format!("{id}.json"), doc.to_string().as_bytes());
        } else {
            let r = h.post(
                &format!("/requests/{id}/answer"),
                Some(&rita),
                &answer_db("Postgres"),
            );
            assert_eq!(r.status, 200, "{r:?}");
        }
        let r = waiter.join().unwrap();
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.body["id"], id);
        assert_eq!(r.body["status"], "answered");
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "woken by the answer, not by the end of the wait"
        );
        if !by_file {
            // Release the host's lease so the file provider can register for lp2.
            env.json(&["provider", "revoke", "--context", "default"])
                .ok();
        }
    }
}

/// Read an SSE stream on a thread: (event, data) pairs.
fn stream(h: &Host, token: &str) -> mpsc::Receiver<(String, Value)> {
    let (tx, rx) = mpsc::channel();
    let with_ids = stream_from(h, token, None);
    std::thread::spawn(move || {
        while let Ok((event, _, data)) = with_ids.recv() {
            if tx.send((event, data)).is_err() {
                return;
            }
        }
    });
    rx
}

/// Read an SSE stream on a thread, resuming after `last` (sent as `Last-Event-ID`) when
/// given: (event, id, data) triples.
fn stream_from(
    h: &Host,
    token: &str,
    last: Option<&str>,
) -> mpsc::Receiver<(String, String, Value)> {
    let (tx, rx) = mpsc::channel();
    let url = h.url("/stream");
    let token = token.to_string();
    let last = last.map(str::to_string);
    std::thread::spawn(move || {
        let mut req = ureq::get(&url).set("Authorization", &format!("Bearer {token}"));
        if let Some(l) = &last {
            req = req.set("Last-Event-ID", l);
        }
        let resp = req.call().expect("the stream opens");
        assert_eq!(resp.content_type(), "text/event-stream");
        let (mut event, mut id) = (String::new(), String::new());
        for line in BufReader::new(resp.into_reader()).lines() {
            let Ok(line) = line else { return };
            if let Some(e) = line.strip_prefix("event: ") {
                event = e.to_string();
            } else if let Some(i) = line.strip_prefix("id: ") {
                id = i.to_string();
            } else if let Some(d) = line.strip_prefix("data: ") {
                let v = serde_json::from_str(d).unwrap_or(Value::Null);
                let ev = (std::mem::take(&mut event), std::mem::take(&mut id), v);
                if tx.send(ev).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

fn next_event(rx: &mpsc::Receiver<(String, Value)>) -> (String, Value) {
    rx.recv_timeout(DEADLINE)
        .expect("an event within the deadline")
}

#[test]
fn the_event_stream_carries_the_lifecycle() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let ann = token(&env, "asker", "ann", None);
    let h = host(&env, &[]);
    let all = stream(&h, &rita);
    let own = stream(&h, &ann);
    assert!(
        wait_until(DEADLINE, || h
            .daemon
            .log_text()
            .matches("event stream opened")
            .count()
            == 2),
        "{}",
        h.daemon.log_text()
    );
    // A file dropped into the inbox: accepted.
    env.drop_file("s1.json", simple_request("s1").to_string().as_bytes());
    let (e, d) = next_event(&all);
    assert_eq!(
        (e.as_str(), &d["id"], &d["status"]),
        ("accepted", &json!("s1"), &json!("pending")),
        "{d}"
    );
    assert_eq!(d["source"], "inbox:s1.json");
    // Claimed and answered over HTTP.
    assert_eq!(
        h.post("/requests/s1/claim", Some(&rita), &json!({})).status,
        200
    );
    let (e, d) = next_event(&all);
    assert_eq!(
        (e.as_str(), d["actor"].as_str()),
        ("claimed", Some("web:rita")),
        "{d}"
    );
    assert_eq!(
        h.post("/requests/s1/answer", Some(&rita), &answer_db("SQLite"))
            .status,
        200
    );
    let (e, d) = next_event(&all);
    assert_eq!(
        (e.as_str(), d["status"].as_str()),
        ("answered", Some("answered"))
    );
    // Ann's own request: both streams; aborted by her.
    assert_eq!(
        h.post("/requests", Some(&ann), &simple_request("s2"))
            .status,
        201
    );
    assert_eq!(next_event(&all).0, "accepted");
    let (e, d) = next_event(&own);
    assert_eq!(
        (e.as_str(), &d["id"]),
        ("accepted", &json!("s2")),
        "ann sees only her own"
    );
    assert_eq!(
        h.post("/requests/s2/abort", Some(&ann), &json!({})).status,
        200
    );
    assert_eq!(next_event(&all).0, "aborted");
    assert_eq!(next_event(&own).0, "aborted");
    // Cancelled by the reviewer.
    env.drop_file("s3.json", simple_request("s3").to_string().as_bytes());
    assert_eq!(next_event(&all).0, "accepted");
    assert_eq!(
        h.post(
            "/requests/s3/cancel",
            Some(&rita),
            &json!({"reason": "not now"})
        )
        .status,
        200
    );
    assert_eq!(next_event(&all).0, "cancelled");
    // A deadline passing: expired.
    let mut short = simple_request("s4");
    short["timeout"] = json!("1s");
    env.drop_file("s4.json", short.to_string().as_bytes());
    assert_eq!(next_event(&all).0, "accepted");
    let (e, d) = next_event(&all);
    assert_eq!(
        (e.as_str(), &d["id"], d["actor"].as_str()),
        ("expired", &json!("s4"), Some("daemon")),
        "{d}"
    );
    // Ann's stream saw nothing of the others.
    assert!(own.try_recv().is_err());
}

#[test]
fn bad_and_oversize_bodies_get_their_codes_and_change_nothing() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &["--max-bytes", "4096"]);
    let post = |path: &str, body: &[u8]| call("POST", &h.url(path), Some(&rita), Some(body));
    let cases: &[(&str, Vec<u8>, u16, &str)] = &[
        ("/requests", b"not json".to_vec(), 400, "BAD_REQUEST"),
        (
            "/requests",
            b"{\"questions\": 3}".to_vec(),
            400,
            "BAD_REQUEST",
        ),
        (
            "/requests",
            br#"{"id": "e1", "questions": []}"#.to_vec(),
            400,
            "EMPTY_QUESTIONS",
        ),
        ("/requests", vec![b' '; 5000], 413, "TOO_LARGE"),
    ];
    for (path, body, status, code) in cases {
        let r = post(path, body);
        assert_eq!((r.status, r.code()), (*status, *code), "{path}: {r:?}");
    }
    // A large body is refused before it is read whole (a chunked one too).
    let big = format!("{{\"id\": \"big\", \"pad\": \"{}\"}}", "x".repeat(100_000));
    let r = post("/requests", big.as_bytes());
    assert_eq!((r.status, r.code()), (413, "TOO_LARGE"));
    // Megabytes over the limit still get their 413, not a reset connection (a broken
    // pipe for the client): the host reads and drops the rest before it answers.
    let huge = vec![b' '; 3 << 20];
    for _ in 0..5 {
        let r = post("/requests", &huge);
        assert_eq!((r.status, r.code()), (413, "TOO_LARGE"));
    }
    // Nothing accepted; the three refused documents are recorded as rejections (the audit
    // keeps every refusal, as for `dshq ask`), the oversize ones never reached the store.
    let listed = env.json(&["list", "--all"]).ok().json();
    let statuses: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["rejected"; 3], "{listed}");

    assert_eq!(
        h.post("/requests", Some(&rita), &simple_request("ok"))
            .status,
        201
    );
    let answers: &[(Vec<u8>, u16, &str)] = &[
        (b"{".to_vec(), 400, "BAD_ANSWER"),
        (
            br#"{"answers": [{"id": "db", "selected": ["Oracle"]}]}"#.to_vec(),
            400,
            "BAD_ANSWER",
        ),
        (br#"{"answers": []}"#.to_vec(), 400, "BAD_ANSWER"),
        (vec![b'{'; 5000], 413, "TOO_LARGE"),
    ];
    for (body, status, code) in answers {
        let r = post("/requests/ok/answer", body);
        assert_eq!((r.status, r.code()), (*status, *code), "{r:?}");
    }
    let r = post("/requests/ok/cancel", b"{\"why\": 1}");
    assert_eq!((r.status, r.code()), (400, "BAD_REQUEST"));
    let r = h.get("/requests?status=sleeping", Some(&rita));
    assert_eq!((r.status, r.code()), (400, "USAGE"));
    let r = h.get("/requests?colour=red", Some(&rita));
    assert_eq!((r.status, r.code()), (400, "USAGE"));
    let r = h.get("/requests/nope", Some(&rita));
    assert_eq!((r.status, r.code()), (404, "NOT_FOUND"));
    // Still pending, no outcome written.
    assert_eq!(env.json(&["show", "ok"]).ok().json()["status"], "pending");
    assert!(env.outcome("ok").is_none());
}

#[test]
fn tokens_are_listed_and_revoked_by_name_and_never_stored() {
    let env = Env::new();
    let t = token(&env, "auditor", "audrey", None);
    assert!(t.starts_with("dshq_") && t.len() == 5 + 64, "{t}");
    let list = env.json(&["token", "list"]).ok().json();
    assert_eq!(list[0]["name"], "audrey");
    assert_eq!(list[0]["role"], "auditor");
    assert!(
        !list.to_string().contains(&t[5..]),
        "the list never shows the token"
    );
    let db = std::fs::read(env.root().join("dshq.db")).unwrap();
    assert!(
        !db.windows(64).any(|w| w == &t.as_bytes()[5..]),
        "the token is not in the database"
    );
    let r = env.json(&["token", "create", "--role", "admin"]);
    assert_eq!(r.error_code(), "USAGE");
    let r = env.json(&["token", "revoke", "nobody"]);
    assert_eq!(r.error_code(), "NOT_FOUND");
    assert_eq!(
        env.json(&["token", "revoke", "audrey"]).ok().json()["revoked"],
        true
    );
    assert_eq!(
        env.json(&["token", "revoke", "audrey"]).ok().json()["revoked"],
        false
    );
}

/// The (event, request id) of the next event on a stream with ids, and its id.
fn next_of(rx: &mpsc::Receiver<(String, String, Value)>) -> ((String, String), i64) {
    let (e, id, d) = rx
        .recv_timeout(DEADLINE)
        .expect("an event within the deadline");
    let seq = id.parse().unwrap_or_else(|_| panic!("an id: on {e} {d}"));
    ((e, d["id"].as_str().unwrap_or("").to_string()), seq)
}

fn pair(e: &str, id: &str) -> (String, String) {
    (e.to_string(), id.to_string())
}

#[test]
fn a_resumed_stream_replays_what_it_missed_then_goes_live_with_nothing_twice() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let ann = token(&env, "asker", "ann", None);
    let h = host(&env, &[]);
    let first = stream_from(&h, &rita, None);
    assert!(
        wait_until(DEADLINE, || h
            .daemon
            .log_text()
            .contains("event stream opened")),
        "{}",
        h.daemon.log_text()
    );
    env.drop_file("m1.json", simple_request("m1").to_string().as_bytes());
    let (got, seen) = next_of(&first);
    assert_eq!(got, pair("accepted", "m1"));
    drop(first);

    // While the client is away: m2 arrives and is claimed and answered; ann asks m3.
    env.drop_file("m2.json", simple_request("m2").to_string().as_bytes());
    assert!(wait_until(DEADLINE, || h
        .get("/requests/m2", Some(&rita))
        .status
        == 200));
    assert_eq!(
        h.post("/requests/m2/claim", Some(&rita), &json!({})).status,
        200
    );
    assert_eq!(
        h.post("/requests/m2/answer", Some(&rita), &answer_db("SQLite"))
            .status,
        200
    );
    assert_eq!(
        h.post("/requests", Some(&ann), &simple_request("m3"))
            .status,
        201
    );

    // Back with the last id seen: what it missed, in order, then the live changes.
    let back = stream_from(&h, &rita, Some(&seen.to_string()));
    let mut last = seen;
    let mut replayed = Vec::new();
    for _ in 0..4 {
        let (got, seq) = next_of(&back);
        assert!(seq > last, "{got:?} at {seq} after {last}");
        last = seq;
        replayed.push(got);
    }
    assert_eq!(
        replayed,
        vec![
            pair("accepted", "m2"),
            pair("claimed", "m2"),
            pair("answered", "m2"),
            pair("accepted", "m3"),
        ]
    );
    env.drop_file("m4.json", simple_request("m4").to_string().as_bytes());
    let (got, seq) = next_of(&back);
    assert_eq!(got, pair("accepted", "m4"), "nothing replayed twice");
    assert!(seq > last);

    // An asker resuming from the start sees only its own requests.
    let own = stream_from(&h, &ann, Some("0"));
    assert_eq!(next_of(&own).0, pair("accepted", "m3"));
    assert!(own.recv_timeout(Duration::from_millis(300)).is_err());

    // A Last-Event-ID that is no position: 400 with its code, and no stream.
    for bad in ["soon", "-1", "1.5"] {
        let r = match ureq::get(&h.url("/stream"))
            .set("Authorization", &format!("Bearer {rita}"))
            .set("Last-Event-ID", bad)
            .call()
        {
            Err(ureq::Error::Status(s, r)) => (s, r.into_json::<Value>().unwrap()),
            other => panic!("{bad}: {other:?}"),
        };
        assert_eq!(
            (r.0, r.1["error"]["code"].as_str()),
            (400, Some("USAGE")),
            "{bad}"
        );
    }
}

#[test]
fn an_asker_cannot_take_another_askers_request_by_asking_it_again() {
    let env = Env::new();
    let ann = token(&env, "asker", "ann", None);
    let bob = token(&env, "asker", "bob", None);
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    assert_eq!(
        h.post("/requests", Some(&ann), &simple_request("z1"))
            .status,
        201
    );
    assert_eq!(
        h.post("/requests/z1/answer", Some(&rita), &answer_db("SQLite"))
            .status,
        200
    );
    // Bob cannot read it ...
    assert_eq!(h.get("/requests/z1/outcome", Some(&bob)).status, 404);
    // ... nor learn its state or take it as his own by sending the same document.
    let r = h.post("/requests", Some(&bob), &simple_request("z1"));
    assert_eq!((r.status, r.code()), (409, "DUPLICATE_ID"), "{r:?}");
    assert!(r.body.get("status").is_none(), "{r:?}");
    assert_eq!(h.get("/requests/z1/outcome", Some(&bob)).status, 404);
    // Ann's own re-delivery is still the idempotent one.
    let again = h.post("/requests", Some(&ann), &simple_request("z1"));
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(
        (&again.body["new"], &again.body["status"]),
        (&json!(false), &json!("answered"))
    );
    // A reviewer sees every request, so its re-delivery is not refused.
    assert_eq!(
        h.post("/requests", Some(&rita), &simple_request("z1"))
            .status,
        200
    );
}
