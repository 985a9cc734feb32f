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

/// Start `dshq --json provider register --name NAME` on `env`'s root, its stderr (debug
/// logs of the store's opening) in `log`.
fn spawn_register(env: &Env, name: &str, log: &std::path::Path) -> std::process::Child {
    env.command()
        .args([
            "--json", "provider", "register", "--name", name, "--ttl", "5m",
        ])
        .env("RUST_LOG", "warn,dshq::store::sqlite=debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// Of racers that registered in one context: exactly one lease, every other one refused
/// with the documented DUPLICATE_PROVIDER (exit 5), never STORE.
fn one_winner(runs: &[crate::helpers::Run], what: &str) {
    let won = runs.iter().filter(|r| r.code == 0).count();
    assert_eq!(won, 1, "{what}: one racer registers: {runs:#?}");
    for r in runs.iter().filter(|r| r.code != 0) {
        assert_eq!(r.error_code(), "DUPLICATE_PROVIDER", "{what}: {r:?}");
        assert_eq!(r.code, 5, "{what}: {r:?}");
    }
}

fn finish(child: std::process::Child) -> crate::helpers::Run {
    let mut child = child;
    assert!(
        crate::helpers::wait_until(crate::helpers::DEADLINE, || child
            .try_wait()
            .unwrap()
            .is_some()),
        "a racer did not exit"
    );
    child.wait_with_output().unwrap().into()
}

/// Providers racing to register on a new root: the loser gets DUPLICATE_PROVIDER, whatever
/// the timing. The window was the store's creation: both processes switch the new database
/// to WAL, and SQLite fails the one that read it while the other was switching with
/// `SQLITE_BUSY` at once, without its busy handler (STORE, "database is locked").
///
/// First the window held open, so that every run of the test meets it: this test holds
/// the new database's write lock as the other racer holds it mid-switch, both racers read
/// the database meanwhile, and it lets go once each has met the lock. Then many rounds of
/// racers with nothing held, as they start on a real machine.
#[test]
fn racing_registers_on_a_new_root_lose_with_duplicate_provider_never_store() {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let env = Env::new();
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(env.root())
        .unwrap();
    let db = env.root().join("dshq.db");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&db)
        .unwrap();
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let logs: Vec<_> = (0..2)
        .map(|i| env.dir.path().join(format!("racer{i}.log")))
        .collect();
    let mut racers: Vec<_> = logs
        .iter()
        .enumerate()
        .map(|(i, log)| spawn_register(&env, &format!("p{i}"), log))
        .collect();
    // Each racer has met the held lock: it failed (and exited), or it is waiting to try
    // again (its debug log says so).
    let met = crate::helpers::wait_until(crate::helpers::DEADLINE, || {
        racers.iter_mut().zip(&logs).all(|(c, log)| {
            c.try_wait().unwrap().is_some()
                || std::fs::read_to_string(log)
                    .unwrap_or_default()
                    .contains("trying again")
        })
    });
    assert!(met, "the racers never met the held lock");
    holder.execute_batch("ROLLBACK").unwrap();
    drop(holder);
    let runs: Vec<_> = racers.into_iter().map(finish).collect();
    one_winner(&runs, "the window held open");

    // Unsynchronised rounds, each on a new root.
    const ROUNDS: usize = 25;
    const RACERS: usize = 3;
    for round in 0..ROUNDS {
        let env = Env::new();
        let log = env.dir.path().join("racer.log");
        let racers: Vec<_> = (0..RACERS)
            .map(|i| spawn_register(&env, &format!("p{i}"), &log))
            .collect();
        let runs: Vec<_> = racers.into_iter().map(finish).collect();
        one_winner(&runs, &format!("round {round}"));
    }
}
