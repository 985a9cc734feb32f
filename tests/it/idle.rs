//! Idle release on a real pseudo-terminal: a screen nobody is at gives its lease up
//! (`--idle-release`), the next key takes it back, a provider who took the context
//! meanwhile ends the session with DUPLICATE_PROVIDER (exit 5), and a lease given with
//! `--lease` is never released.
//!
//! Each wait is on a condition with a deadline (`dshq --json provider status`, the
//! screen's text); no test sleeps. The shortest `--idle-release` is the flag's own lower
//! bound, 1s, so no test-only bound is needed.

use rexpect::process::WaitStatus;
use rexpect::session::PtySession;
use serde_json::{json, Value};

use crate::helpers::*;
use crate::interactive::{expect, spawn};

fn send(p: &mut PtySession, keys: &str) {
    p.send(keys).expect("type");
    p.flush().expect("flush");
}

fn finish(mut p: PtySession) -> i32 {
    let _ = p.exp_eof();
    match p.process.wait().expect("wait for dshq") {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, sig, _) => 128 + sig as i32,
        other => panic!("unexpected wait status {other:?}"),
    }
}

/// The unended leases (`dshq --json provider status`), live or not.
fn leases(env: &Env) -> Vec<Value> {
    env.json(&["provider", "status"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .clone()
}

fn live_leases(env: &Env) -> Vec<Value> {
    leases(env)
        .into_iter()
        .filter(|l| l["live"] == true)
        .collect()
}

fn status_of(env: &Env, id: &str) -> String {
    env.json(&["show", id]).ok().json()["status"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The kinds of the event log, in order (`dshq export`).
fn event_kinds(env: &Env) -> Vec<String> {
    env.run(&["export"])
        .ok()
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "event")
        .map(|v| v["kind"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Wait until no live lease is left in the context and `id` is pending again.
fn wait_released(env: &Env, id: &str) {
    let mut seen = Vec::new();
    assert!(
        wait_until(DEADLINE, || {
            seen = live_leases(env);
            seen.is_empty() && status_of(env, id) == "pending"
        }),
        "the idle session kept its lease: {seen:?}"
    );
}

#[test]
fn an_idle_screen_releases_its_lease_and_a_key_takes_it_back() {
    let env = Env::new();
    env.ask(&simple_request("r1")).ok();
    // 2s rather than the 1s minimum: after the lease is back, the test's own status
    // read and keys must come within the idle time, on a busy machine too.
    let mut p = spawn(&env, &["answer", "r1", "--idle-release", "2s"], &[]);
    expect(&mut p, "idle release after 2s");
    expect(&mut p, "Your answer");
    wait_released(&env, "r1");
    expect(&mut p, "lease released after 2s without a key");
    expect(&mut p, "press any key to take it back");
    // The release is an ordinary one, in the event log.
    let kinds = event_kinds(&env);
    assert!(
        kinds.iter().any(|k| k == "lease-released"),
        "no release recorded: {kinds:?}"
    );
    // Any key takes it back (and does nothing else): the request is claimed again.
    send(&mut p, "x");
    expect(&mut p, "lease taken back");
    let live = live_leases(&env);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0]["name"], "tester");
    assert_eq!(status_of(&env, "r1"), "claimed");
    // The answer goes through with the new lease.
    send(&mut p, "2");
    expect(&mut p, "(y/N)");
    send(&mut p, "y\r");
    expect(&mut p, "r1 answered by tester");
    assert_eq!(finish(p), 0);
    let out = env.outcome("r1").expect("the outcome file is written");
    assert_eq!(
        out["answer"]["answers"],
        json!([{"id": "db", "selected": ["SQLite"]}])
    );
    assert!(live_leases(&env).is_empty(), "released at the end");
    let kinds = event_kinds(&env);
    let registered = kinds.iter().filter(|k| *k == "lease-registered").count();
    assert_eq!(
        registered, 2,
        "registered, then again on the key: {kinds:?}"
    );
    env.json(&["audit", "verify"]).ok();
}

#[test]
fn a_key_after_another_provider_took_the_context_ends_with_duplicate_provider() {
    let env = Env::new();
    env.ask(&simple_request("r1")).ok();
    let mut p = spawn(&env, &["answer", "r1", "--idle-release", "1s"], &[]);
    expect(&mut p, "Your answer");
    wait_released(&env, "r1");
    env.register("bob", "default", "10m");
    send(&mut p, "1");
    expect(&mut p, "DUPLICATE_PROVIDER");
    // The message names the holder and what to do.
    expect(&mut p, "bob");
    expect(&mut p, "dshq provider revoke");
    assert_eq!(finish(p), 5);
    // Nothing was sent; bob's lease is untouched and the request waits for him.
    assert_eq!(status_of(&env, "r1"), "pending");
    assert!(env.outcome("r1").is_none());
    let live = live_leases(&env);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0]["name"], "bob");
}

#[test]
fn a_request_answered_while_the_lease_was_released_is_left_alone_on_return() {
    let env = Env::new();
    env.ask(&simple_request("r1")).ok();
    env.ask(&simple_request("r2")).ok();
    let mut p = spawn(&env, &["answer", "--idle-release", "2s"], &[]);
    expect(&mut p, "Request r1");
    expect(&mut p, "Your answer");
    wait_released(&env, "r1");
    // With no live lease, a one-shot answer may act in the context meanwhile.
    env.json(&["answer", "r1", "--select", "Postgres", "--name", "bob"])
        .ok();
    send(&mut p, "x");
    expect(&mut p, "r1 ended while it was released");
    expect(&mut p, "nothing was sent");
    // The walk goes on with the lease back.
    expect(&mut p, "Request r2");
    expect(&mut p, "Your answer");
    send(&mut p, "2");
    expect(&mut p, "(y/N)");
    send(&mut p, "y\r");
    expect(&mut p, "r2 answered by tester");
    assert_eq!(finish(p), 0);
    let out = env.outcome("r1").expect("r1's outcome");
    assert_eq!(out["provider"], "bob", "{out}");
}

#[test]
fn a_lease_given_with_lease_is_never_released_for_idleness() {
    let env = Env::new();
    env.ask(&simple_request("g1")).ok();
    // A 3s ttl: the session heartbeats it every second, which shows the time passing.
    let lease = env.register("alice", "default", "3s");
    let mut p = spawn(
        &env,
        &["answer", "g1", "--idle-release", "1s"],
        &[("DSHQ_LEASE", &lease)],
    );
    expect(&mut p, "answering as alice");
    expect(&mut p, "Your answer");
    // Wait until the session has been idle for several idle periods (its heartbeats say
    // so), checking at every look that alice's lease is live and holds the claim.
    let mut last = Value::Null;
    assert!(
        wait_until(DEADLINE, || {
            let all = leases(&env);
            assert_eq!(all.len(), 1, "{all:?}");
            let l = &all[0];
            assert_eq!(l["live"], true, "the given lease was released: {l}");
            assert_eq!(status_of(&env, "g1"), "claimed");
            last = l.clone();
            ms(&l["heartbeatAt"]) - ms(&l["createdAt"]) > 4_000
        }),
        "the session did not stay up: {last}"
    );
    send(&mut p, "1");
    expect(&mut p, "(y/N)");
    send(&mut p, "y\r");
    expect(&mut p, "g1 answered by alice");
    assert_eq!(finish(p), 0);
    let live = live_leases(&env);
    assert_eq!(live.len(), 1, "still alice's: {live:?}");
    let kinds = event_kinds(&env);
    assert!(
        !kinds.iter().any(|k| k == "lease-released"),
        "nothing released: {kinds:?}"
    );
}

#[test]
fn a_follow_loop_releases_while_waiting_and_a_key_brings_it_back_to_the_queue() {
    let env = Env::new();
    let mut p = spawn(&env, &["answer", "--follow", "--idle-release", "2s"], &[]);
    expect(&mut p, "waiting for new requests");
    expect(&mut p, "lease released after 2s without a key");
    assert!(
        wait_until(DEADLINE, || live_leases(&env).is_empty()),
        "the waiting session kept its lease"
    );
    // A request arriving while released: the bell and a line say so; nothing claims it.
    env.ask(&simple_request("f1")).ok();
    expect(&mut p, "1 new request waiting");
    assert_eq!(status_of(&env, "f1"), "pending");
    send(&mut p, "x");
    expect(&mut p, "lease taken back");
    expect(&mut p, "Which database?");
    send(&mut p, "1");
    expect(&mut p, "(y/N)");
    send(&mut p, "y\r");
    expect(&mut p, "f1 answered by tester");
    p.send_control('c').expect("Ctrl-C");
    assert_eq!(finish(p), 130);
}

#[test]
fn idle_release_is_bounded() {
    let env = Env::new();
    for bad in ["0s", "500ms", "25h"] {
        let r = env.json(&["answer", "--idle-release", bad]);
        assert_eq!(r.error_code(), "USAGE", "{bad}");
    }
}

fn ms(v: &Value) -> i64 {
    v.as_str()
        .unwrap()
        .parse::<jiff::Timestamp>()
        .unwrap()
        .as_millisecond()
}
