//! Hardening, round three: the network faces cannot stop the file loop, a
//! restarted host is not locked out by its own lease (and never takes another host's),
//! `dshq answer` says who holds a context, `answer --follow` filters, and a read on a
//! missing root fails with `NO_ROOT` and creates nothing.
//!
//! Real binary, real sockets, real signals; every wait is a condition with a deadline.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::api::{host, listening, token, Host};
use crate::helpers::*;
use crate::interactive::{confirm_send, expect, finish, spawn};

/// `host:port` of a host's base URL.
fn addr(h: &Host) -> String {
    h.base.trim_start_matches("http://").to_string()
}

/// Start `dshq daemon --listen 0` under `ulimit -n LIMIT` (soft and hard: the daemon
/// cannot raise it), returning the running host.
fn host_with_nofile(env: &Env, limit: u32) -> Host {
    let log = env.dir.path().join(format!("daemon-{}.log", unique()));
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
        .arg(bin())
        .args(["daemon", "--listen", "0"])
        .env("DSHQ_ROOT", env.root())
        .env_remove("DSHQ_STORE")
        .env_remove("DSHQ_CLOCK_SKEW")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap());
    listening(Daemon {
        child: Some(c.spawn().expect("spawn the daemon under ulimit")),
        log,
    })
}

/// Whether the server closed `s` (EOF or reset), reading whatever it sent first.
fn closed_by_server(s: &mut TcpStream, within: Duration) -> (bool, String) {
    s.set_read_timeout(Some(within)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (true, String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return (false, String::from_utf8_lossy(&got).into_owned())
            }
            Err(_) => return (true, String::from_utf8_lossy(&got).into_owned()),
        }
    }
}

/// Item 1: under a low descriptor limit, more idle connections than the cap are held
/// open (sending nothing); a request file dropped meanwhile is still committed promptly,
/// a connection over the cap is refused at once with a 503, and the API answers again
/// once the idle connections go.
#[test]
fn idle_connections_past_the_cap_do_not_stop_the_file_loop() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host_with_nofile(&env, 128);
    let mut idle = Vec::new();
    for _ in 0..200 {
        match TcpStream::connect(addr(&h)) {
            Ok(s) => idle.push(s),
            Err(e) => panic!("connect: {e}"),
        }
    }
    env.drop_file(
        "in1.json",
        &serde_json::to_vec(&simple_request("in1")).unwrap(),
    );
    let start = Instant::now();
    assert!(
        wait_until(Duration::from_secs(5), || env.run(&["show", "in1"]).code
            == 0),
        "the dropped file was not committed within 5s while {} connections were held: {}",
        idle.len(),
        h.daemon.log_text()
    );
    println!("committed {:?} after the drop", start.elapsed());
    assert!(
        !h.daemon.log_text().contains("Too many open files"),
        "{}",
        h.daemon.log_text()
    );
    // Over the cap: refused at once, with a reason, not held.
    let mut extra = TcpStream::connect(addr(&h)).unwrap();
    let (closed, said) = closed_by_server(&mut extra, Duration::from_secs(5));
    assert!(closed, "a connection over the cap was held open");
    assert!(said.starts_with("HTTP/1.1 503"), "{said:?}");
    drop(idle);
    assert!(
        wait_until(DEADLINE, || {
            let agent = ureq::AgentBuilder::new()
                .timeout(Duration::from_secs(5))
                .build();
            agent
                .get(&h.url("/requests/in1"))
                .set("Authorization", &format!("Bearer {rita}"))
                .call()
                .is_ok_and(|r| r.status() == 200)
        }),
        "the API did not answer once the idle connections closed"
    );
}

/// Item 1: a connection that stops halfway through its headers (slowloris), one that
/// sends nothing, and one kept alive after its response are all closed by the server
/// after the header-read timeout (10s by default); a request sent whole is served.
#[test]
fn partial_headers_and_idle_connections_are_closed_after_the_header_timeout() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    assert_eq!(
        h.post("/requests", Some(&rita), &simple_request("lp"))
            .status,
        201
    );
    let start = Instant::now();
    // A long-poll outlasting the timeout is being served, not waiting for a head: not cut.
    let long_poll = {
        let url = h.url("/requests/lp/outcome?wait=12s");
        std::thread::spawn(move || crate::api::call("GET", &url, Some(&rita), None).status)
    };
    let mut partial = TcpStream::connect(addr(&h)).unwrap();
    partial
        .write_all(b"GET /api/v1/requests HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .unwrap();
    let mut silent = TcpStream::connect(addr(&h)).unwrap();
    let mut kept = TcpStream::connect(addr(&h)).unwrap();
    kept.write_all(b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut head = [0u8; 12];
    kept.read_exact(&mut head).unwrap();
    assert_eq!(&head, b"HTTP/1.1 200", "a whole request is served");
    for (name, s) in [
        ("partial headers", &mut partial),
        ("nothing sent", &mut silent),
        ("kept alive", &mut kept),
    ] {
        let left = DEADLINE.saturating_sub(start.elapsed());
        let (closed, _) = closed_by_server(s, left);
        assert!(
            closed,
            "the {name} connection was still open after {DEADLINE:?}"
        );
        println!("{name}: closed after {:?}", start.elapsed());
    }
    assert!(
        start.elapsed() >= Duration::from_secs(9),
        "closed before the timeout: {:?}",
        start.elapsed()
    );
    assert_eq!(
        long_poll.join().unwrap(),
        204,
        "the long-poll ran its whole wait"
    );
    assert!(start.elapsed() >= Duration::from_secs(12));
}

/// Item 1: one peer gets at most `--http-max-conns-per-peer` connections; the next is
/// answered 503 and closed at once, and a slot freed is usable again.
#[test]
fn a_peer_over_its_connection_cap_is_refused_at_once() {
    let env = Env::new();
    let h = host(&env, &["--http-max-conns-per-peer", "3"]);
    let held: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect(addr(&h)).unwrap())
        .collect();
    // The three are admitted (each still open), the fourth is not.
    let mut fourth = TcpStream::connect(addr(&h)).unwrap();
    let (closed, said) = closed_by_server(&mut fourth, Duration::from_secs(5));
    assert!(
        closed && said.starts_with("HTTP/1.1 503"),
        "{closed} {said:?}"
    );
    assert!(said.contains("Retry-After: 1"), "{said:?}");
    drop(held);
    assert!(
        wait_until(DEADLINE, || {
            let mut s = TcpStream::connect(addr(&h)).unwrap();
            s.write_all(
                b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
            let (_, said) = closed_by_server(&mut s, Duration::from_secs(5));
            said.starts_with("HTTP/1.1 200")
        }),
        "the freed slots were not given back"
    );
}

fn answer_db(label: &str) -> Value {
    json!({"answers": [{"id": "db", "selected": [label]}]})
}

/// Item 7: a host killed while it holds a context's lease (with a request claimed), and
/// started again, answers through the API at once: it takes over the lease of its
/// earlier life, and the claim goes back to pending.
#[test]
fn a_host_restarted_after_sigkill_answers_through_the_api_at_once() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    for id in ["r1", "r2", "r3"] {
        assert_eq!(
            h.post("/requests", Some(&rita), &simple_request(id)).status,
            201
        );
    }
    assert_eq!(
        h.post("/requests/r1/answer", Some(&rita), &answer_db("Postgres"))
            .status,
        200
    );
    let claim = h.post("/requests/r2/claim", Some(&rita), &json!({}));
    assert_eq!(claim.status, 200, "{claim:?}");
    assert_eq!(env.json(&["show", "r2"]).ok().json()["status"], "claimed");
    h.daemon.kill9();
    let h = host(&env, &[]);
    let r = h.post("/requests/r3/answer", Some(&rita), &answer_db("SQLite"));
    assert_eq!(r.status, 200, "the restarted host was locked out: {r:?}");
    assert_eq!(
        env.json(&["show", "r2"]).ok().json()["status"],
        "pending",
        "the earlier life's claim went back to pending"
    );
    assert!(
        h.daemon
            .log_text()
            .contains("took over the provider lease of this host's earlier life"),
        "{}",
        h.daemon.log_text()
    );
}

/// Item 8: while the host's page and API hold a context, `dshq answer` says who holds it
/// (the web page of the daemon on this host and root), when it lets go by itself (the
/// last reviewer leaving, or --web-idle), and how to end it now.
#[test]
fn dshq_answer_says_the_web_page_holds_the_context_and_when_it_lets_go() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &["--web-idle", "7m"]);
    for id in ["w1", "w2"] {
        assert_eq!(
            h.post("/requests", Some(&rita), &simple_request(id)).status,
            201
        );
    }
    assert_eq!(
        h.post("/requests/w1/answer", Some(&rita), &answer_db("Postgres"))
            .status,
        200
    );
    let r = env.run(&["answer", "w2", "--select", "SQLite"]);
    assert_eq!(r.code, 5, "{r:?}");
    let root = env.root().display().to_string();
    for part in [
        "the web page and HTTP API of the dshq daemon on ",
        root.as_str(),
        "hold context \"default\"",
        "released when the last reviewer closes the page, or 7m after the last answer",
        "--web-idle",
        "dshq provider revoke --context default",
    ] {
        assert!(
            r.stderr.contains(part),
            "missing {part:?} in {:?}",
            r.stderr
        );
    }
    assert!(!r.stderr.contains("ask \"web\""), "{:?}", r.stderr);
    let j = env.json(&["answer", "w2", "--select", "SQLite"]);
    assert_eq!(j.error_code(), "DUPLICATE_PROVIDER");
}

/// A fresh database on the shared throwaway PostgreSQL server.
fn fresh_store() -> String {
    crate::throwaway::shared()
        .fresh_database()
        .expect("a fresh PostgreSQL database")
}

/// Item 7 on a shared store: a second host never takes over the first host's lease (its
/// answer through the API is refused with DUPLICATE_PROVIDER, and `dshq answer` there
/// names the first host's page), while the first host, restarted, takes its own back.
#[test]
fn a_second_host_on_one_postgres_store_never_takes_the_first_hosts_lease() {
    let url = fresh_store();
    let a = Env::on_store(&url);
    let b = Env::on_store(&url);
    let rita_a = token(&a, "reviewer", "rita", None);
    let rita_b = token(&b, "reviewer", "rita-b", None);
    let ha = host(&a, &[]);
    for id in ["p1", "p2", "p3"] {
        assert_eq!(
            ha.post("/requests", Some(&rita_a), &simple_request(id))
                .status,
            201
        );
    }
    assert_eq!(
        ha.post("/requests/p1/answer", Some(&rita_a), &answer_db("Postgres"))
            .status,
        200
    );
    ha.daemon.kill9();
    let hb = host(&b, &[]);
    let r = hb.post("/requests/p2/answer", Some(&rita_b), &answer_db("SQLite"));
    assert_eq!(
        (r.status, r.code()),
        (409, "DUPLICATE_PROVIDER"),
        "the second host took the first host's lease: {r:?}"
    );
    let cli = b.run(&["answer", "p2", "--select", "SQLite"]);
    assert_eq!(cli.code, 5, "{cli:?}");
    assert!(
        cli.stderr.contains(&a.root().display().to_string()),
        "the message names the first host's root: {:?}",
        cli.stderr
    );
    drop(hb);
    let ha = host(&a, &[]);
    let r = ha.post("/requests/p2/answer", Some(&rita_a), &answer_db("SQLite"));
    assert_eq!(
        r.status, 200,
        "the first host, restarted, is locked out: {r:?}"
    );
}

/// Item 13: `answer --follow` takes `list`'s filters: it walks and picks up only what
/// they match, and says so while it waits.
#[test]
fn answer_follow_takes_only_what_its_filters_match() {
    let env = Env::new();
    let colour = |id: &str| {
        json!({"id": id, "questions": [{"id": "c", "question": "Which colour?",
               "options": [{"label": "Red"}, {"label": "Blue"}]}]})
    };
    env.ask(&simple_request("db-before")).ok();
    env.ask(&colour("colour-before")).ok();
    let mut p = spawn(&env, &["answer", "--follow", "--grep", "colour"], &[]);
    expect(&mut p, "Request colour-before");
    expect(&mut p, "1 of 1");
    expect(&mut p, "Your answer");
    p.send("\r").unwrap();
    p.flush().unwrap();
    confirm_send(&mut p);
    expect(&mut p, "colour-before answered by tester");
    expect(
        &mut p,
        "waiting for new requests in context default matching text \"colour\"",
    );
    env.ask(&simple_request("db-later")).ok();
    env.ask(&colour("colour-later")).ok();
    expect(&mut p, "Request colour-later");
    expect(&mut p, "2 of 2");
    p.send_control('c').unwrap();
    assert_eq!(finish(p), 130);
    for id in ["db-before", "db-later"] {
        assert_eq!(
            env.json(&["show", id]).ok().json()["status"],
            "pending",
            "{id} does not match the filter and was not taken"
        );
    }
}

/// Item 14: every read command on a root that does not exist fails with NO_ROOT (exit
/// 15), naming the path and what to do, and creates nothing.
#[test]
fn a_read_on_a_missing_root_fails_with_no_root_and_creates_nothing() {
    let env = Env::new();
    let root = env.root();
    let reads: &[&[&str]] = &[
        &["list"],
        &["show", "x"],
        &["history"],
        &["events", "x"],
        &["stats"],
        &["export"],
        &["audit", "verify"],
        &["agent", "list"],
        &["provider", "status"],
        &["watch", "--count", "1"],
    ];
    for args in reads {
        let r = env.run(args);
        assert_eq!(r.code, 15, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains(&root.display().to_string())
                && r.stderr.contains("--root")
                && r.stderr.contains("DSHQ_ROOT")
                && r.stderr.contains("dshq daemon"),
            "{args:?}: {:?}",
            r.stderr
        );
        let j = env.json(args);
        assert_eq!(j.error_code(), "NO_ROOT", "{args:?}: {j:?}");
        assert!(!root.exists(), "{args:?} created the root");
    }
    // A writing command creates it; then the reads work.
    env.ask(&simple_request("w1")).ok();
    assert_eq!(env.json(&["list"]).ok().json().as_array().unwrap().len(), 1);
}
