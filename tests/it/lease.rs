//! Sharing the provider lease: DUPLICATE_PROVIDER says who holds the context, since and
//! until when and what to do; `provider revoke` ends another holder's lease on purpose,
//! recorded in the event log, and fencing fails the old holder's next action.

use serde_json::Value;

use crate::helpers::{simple_request, Env};

fn error_message(run: &crate::helpers::Run, code: &str) -> String {
    let doc = run.json();
    assert_eq!(doc["error"]["code"], code, "{doc}");
    doc["error"]["message"].as_str().unwrap().to_string()
}

fn status_of(env: &Env, id: &str) -> String {
    env.json(&["show", id]).ok().json()["status"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Every event of the export, its data parsed.
fn events(env: &Env) -> Vec<Value> {
    let out = env.run(&["export"]).ok();
    out.stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "event")
        .map(|mut v| {
            // The export keeps each event's data as the exact text the chain hashed.
            if let Some(d) = v["data"].as_str() {
                v["data"] = serde_json::from_str(d).unwrap();
            }
            v
        })
        .collect()
}

#[test]
fn duplicate_provider_names_the_holder_since_until_and_what_to_do() {
    let env = Env::new();
    let reg = env
        .json(&[
            "provider",
            "register",
            "--name",
            "alice",
            "--context",
            "team",
            "--ttl",
            "5m",
        ])
        .ok()
        .json();
    let st = env.json(&["provider", "status"]).ok().json();
    let since = st[0]["createdAt"].as_str().unwrap().to_string();
    let until = reg["expiresAt"].as_str().unwrap().to_string();
    let r = env.json(&[
        "provider",
        "register",
        "--name",
        "bob",
        "--context",
        "team",
        "--ttl",
        "5m",
    ]);
    assert_eq!(r.code, 5);
    let msg = error_message(&r, "DUPLICATE_PROVIDER");
    assert!(msg.contains("\"alice\""), "names the holder: {msg}");
    assert!(msg.contains(&since), "says since when: {msg}");
    assert!(msg.contains(&until), "says until when: {msg}");
    assert!(
        msg.contains("dshq provider revoke --context team"),
        "says what to do: {msg}"
    );
    assert!(!msg.contains("it is kept"), "{msg}");
}

#[test]
fn revoke_ends_the_holders_lease_records_who_and_why_and_fences_the_holder() {
    let env = Env::new();
    let lease = env.register("alice", "team", "5m");
    let mut req = simple_request("r1");
    req["context"] = "team".into();
    env.ask(&req).ok();
    env.json(&["claim", "r1", "--lease", &lease]).ok();
    assert_eq!(status_of(&env, "r1"), "claimed");

    let out = env
        .json(&[
            "provider",
            "revoke",
            "--context",
            "team",
            "--name",
            "carol",
            "--reason",
            "alice went home",
        ])
        .ok()
        .json();
    assert_eq!(out["context"], "team");
    assert_eq!(out["name"], "alice");
    assert_eq!(out["released"], serde_json::json!(["r1"]));
    // Its claim went back to pending; the context has no live lease.
    assert_eq!(status_of(&env, "r1"), "pending");
    let st = env.json(&["provider", "status"]).ok().json();
    assert_eq!(st, serde_json::json!([]), "no unended lease after a revoke");

    // The event log records the revoke as its own kind, with who and why.
    let evs = events(&env);
    let revoked: Vec<_> = evs
        .iter()
        .filter(|e| e["kind"] == "lease-revoked")
        .collect();
    assert_eq!(revoked.len(), 1, "{evs:?}");
    let e = revoked[0];
    assert_eq!(e["actor"], "cli", "{e}");
    assert_eq!(e["data"]["by"], "carol", "{e}");
    assert_eq!(e["data"]["reason"], "alice went home", "{e}");
    assert_eq!(e["data"]["holder"], "alice", "{e}");
    assert!(
        evs.iter().any(|e| e["kind"] == "released"
            && e["requestId"] == "r1"
            && e["data"]["reason"] == "lease revoked"),
        "{evs:?}"
    );

    // Fencing: the old holder's next heartbeat, claim and answer fail; r1 is untouched.
    for args in [
        vec!["provider", "heartbeat", "--lease", &lease],
        vec!["claim", "r1", "--lease", &lease],
        vec!["answer", "r1", "--select", "SQLite", "--lease", &lease],
    ] {
        let mut all = args.clone();
        all.insert(0, "--json");
        let r = env.run(&all);
        let msg = error_message(&r, "LEASE_EXPIRED");
        assert!(msg.contains("revoked"), "says why: {msg}");
    }
    assert_eq!(status_of(&env, "r1"), "pending");
    assert!(env.outcome("r1").is_none());

    // The audit replays the revoke's effects and passes.
    env.json(&["audit", "verify"]).ok();

    // Nothing left to revoke: a clear error; someone else can register now.
    let r = env.json(&["provider", "revoke", "--context", "team"]);
    let msg = error_message(&r, "NO_PROVIDER");
    assert!(msg.contains("team"), "{msg}");
    env.register("bob", "team", "5m");
}

#[test]
fn revoke_records_user_when_no_name_is_given() {
    let env = Env::new();
    env.register("alice", "default", "5m");
    env.run_env(&[("USER", "dana")], &["--json", "provider", "revoke"])
        .ok();
    let evs = events(&env);
    let e = evs.iter().find(|e| e["kind"] == "lease-revoked").unwrap();
    assert_eq!(e["data"]["by"], "dana", "{e}");
    assert_eq!(e["data"]["reason"], Value::Null, "{e}");
}

/// A revoke under an open screen: the session's next answer fails with LEASE_EXPIRED and
/// the request is untouched (pending again, no outcome file).
#[test]
fn revoke_makes_the_open_screens_next_answer_fail_and_leaves_the_request_untouched() {
    use crate::interactive::{expect, spawn};
    let env = Env::new();
    env.ask(&simple_request("r1")).ok();
    let mut p = spawn(&env, &["answer", "r1"], &[]);
    expect(&mut p, "Which database?");
    expect(&mut p, "Your answer");
    assert_eq!(status_of(&env, "r1"), "claimed");
    let out = env
        .json(&["provider", "revoke", "--name", "carol", "--reason", "lunch"])
        .ok()
        .json();
    assert_eq!(out["name"], "tester");
    assert_eq!(status_of(&env, "r1"), "pending");
    p.send("\x1b[B").unwrap();
    p.flush().unwrap();
    expect(&mut p, "> SQLite");
    p.send("\r").unwrap();
    p.flush().unwrap();
    expect(&mut p, "(y/N)");
    p.send("y\r").unwrap();
    p.flush().unwrap();
    expect(&mut p, "LEASE_EXPIRED");
    expect(&mut p, "revoked by carol");
    let _ = p.exp_eof();
    assert_eq!(status_of(&env, "r1"), "pending");
    assert!(env.outcome("r1").is_none(), "no outcome file");
    env.json(&["audit", "verify"]).ok();
}
