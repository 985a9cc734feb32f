//! Issue "Who may ask": the agent registry check (spec §3 order 3, §7), each case through
//! the real binary, for `dshq ask` and for files dropped into a running daemon's inbox.

use serde_json::{json, Value};

use crate::helpers::*;

/// `dshq --json agent enter ARGS`; returns (id, instance).
fn enter(env: &Env, args: &[&str]) -> (String, String) {
    let mut all = vec!["agent", "enter"];
    all.extend_from_slice(args);
    let v = env.json(&all).ok().json();
    (
        v["id"].as_str().unwrap().to_string(),
        v["instance"].as_str().unwrap().to_string(),
    )
}

/// A minimal request asked by `agent`/`instance`.
fn request_as(id: &str, agent: &str, instance: &str) -> Value {
    let mut r = simple_request(id);
    r["agent"] = json!({"id": agent, "instance": instance});
    r
}

/// Assert a `--json` error with `code` and exit status 7 (the registry class); returns
/// the message.
#[track_caller]
fn assert_refused(run: &Run, code: &str) -> String {
    let doc = run.json();
    assert_eq!(doc["error"]["name"], "UserQuestionError", "{doc}");
    assert_eq!(doc["error"]["code"], code, "{doc}");
    assert_eq!(
        doc.as_object().unwrap().len(),
        1,
        "only the error document: {doc}"
    );
    assert_eq!(run.code, 7, "{run:?}");
    assert_eq!(
        run.code,
        dshq::protocol::Code::parse(code).unwrap().exit_status()
    );
    doc["error"]["message"].as_str().unwrap().to_string()
}

/// `dshq --json list ARGS` as an array.
fn list(env: &Env, args: &[&str]) -> Vec<Value> {
    // Every status unless the test picks one (the default is the open requests).
    let mut all = vec!["list"];
    if !args.contains(&"--status") {
        all.push("--all");
    }
    all.extend_from_slice(args);
    env.json(&all).ok().json().as_array().unwrap().clone()
}

/// `dshq --json agent list [--all]` as an array.
fn agents(env: &Env, all: bool) -> Vec<Value> {
    let args: &[&str] = if all {
        &["agent", "list", "--all"]
    } else {
        &["agent", "list"]
    };
    env.json(args).ok().json().as_array().unwrap().clone()
}

/// The registry entry of `id`/`instance` in `agent list --all`.
fn entry(env: &Env, id: &str, instance: &str) -> Value {
    agents(env, true)
        .into_iter()
        .find(|a| a["id"] == id && a["instance"] == instance)
        .unwrap_or_else(|| panic!("no registry entry {id}/{instance}"))
}

#[test]
fn enter_returns_id_and_instance() {
    let env = Env::new();
    let v = env.json(&["agent", "enter", "--id", "A"]).ok().json();
    assert_eq!(v["id"], "A");
    let instance = v["instance"].as_str().unwrap();
    assert!(
        instance.len() >= 16,
        "an unguessable instance: {instance:?}"
    );
    assert_eq!(v["expiresAt"], Value::Null, "no ttl, no expiry");
    // Without --json the instance alone is printed, for `$(dshq agent enter ...)`.
    let out = env.run(&["agent", "enter", "--id", "B"]).ok();
    let b = out.stdout.trim();
    assert!(!b.is_empty() && !b.contains(char::is_whitespace), "{out:?}");
    // Entering again makes a new instance.
    let (_, again) = enter(&env, &["--id", "A"]);
    assert_ne!(again, instance);
    // With a ttl the expiry is reported.
    let v = env
        .json(&["agent", "enter", "--id", "C", "--ttl", "10m"])
        .ok()
        .json();
    assert!(v["expiresAt"].is_string(), "{v}");
    // Live entries: A (the new instance), B, C.
    let live = agents(&env, false);
    let mut ids: Vec<&str> = live.iter().map(|a| a["id"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, ["A", "B", "C"]);
    assert!(live.iter().all(|a| a["live"] == true));
    // A bad id is refused.
    let r = env.json(&["agent", "enter", "--id", "../x"]);
    assert_eq!(r.error_code(), "BAD_REQUEST");
}

#[test]
fn a_live_root_may_ask() {
    let env = Env::new();
    let (id, inst) = enter(&env, &["--id", "root-agent"]);
    let acc = env.ask(&request_as("q1", &id, &inst)).ok().json();
    assert_eq!(acc["status"], "pending");
    let v = env.json(&["show", "q1"]).ok().json();
    assert_eq!(
        v["agent"],
        json!({"id": "root-agent", "instance": inst, "lineage": null})
    );
    let rows = list(&env, &[]);
    assert_eq!(rows[0]["agent"], "root-agent");
    // An offline asker may exit after asking and read its outcome later.
    env.json(&["agent", "exit", "--id", &id, "--instance", &inst])
        .ok();
    let out = env
        .json(&["answer", "q1", "--select", "Postgres"])
        .ok()
        .json();
    assert_eq!(out["status"], "answered");
    assert_eq!(env.outcome("q1").unwrap(), out);
}

#[test]
fn an_owned_child_is_delegated_even_without_lineage() {
    let env = Env::new();
    let (owner, oinst) = enter(&env, &["--id", "lead"]);
    let (child, cinst) = enter(&env, &["--id", "worker", "--owner", &owner]);
    let r = env.ask(&request_as("c1", &child, &cinst));
    let msg = assert_refused(&r, "DELEGATED_CALLER");
    assert!(
        msg.contains("final result"),
        "tells the child what to do instead: {msg}"
    );
    assert!(msg.contains("lead"), "names the owner: {msg}");

    // Lineage never grants authority: an owned child with lineage is still delegated.
    let (child2, cinst2) = enter(
        &env,
        &[
            "--id",
            "worker2",
            "--owner",
            &owner,
            "--lineage",
            "resumed from session S9",
        ],
    );
    let r = env.ask(&request_as("c2", &child2, &cinst2));
    assert_refused(&r, "DELEGATED_CALLER");

    // Transitively owned: still delegated.
    let (grand, ginst) = enter(&env, &["--id", "helper", "--owner", &child]);
    let r = env.ask(&request_as("c3", &grand, &ginst));
    assert_refused(&r, "DELEGATED_CALLER");

    assert!(list(&env, &["--status", "pending"]).is_empty());
    let rejected = list(&env, &["--status", "rejected"]);
    assert_eq!(rejected.len(), 3);
    assert!(rejected
        .iter()
        .all(|r| r["errorCode"] == "DELEGATED_CALLER"));
    // The owner itself may ask.
    assert_eq!(entry_instance(&env, &owner), oinst);
    env.ask(&request_as("c4", &owner, &oinst)).ok();
}

/// The live instance of `id`.
fn entry_instance(env: &Env, id: &str) -> String {
    agents(env, false)
        .into_iter()
        .find(|a| a["id"] == id)
        .and_then(|a| a["instance"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("{id} is not live"))
}

#[test]
fn a_resumed_root_with_lineage_may_ask() {
    let env = Env::new();
    let (id, inst) = enter(
        &env,
        &["--id", "resumed", "--lineage", "resumed from session S1"],
    );
    let acc = env.ask(&request_as("l1", &id, &inst)).ok().json();
    assert_eq!(acc["status"], "pending");
    let v = env.json(&["show", "l1"]).ok().json();
    assert_eq!(v["agent"]["id"], "resumed");
    assert_eq!(v["agent"]["instance"], inst.as_str());
    assert_eq!(v["agent"]["lineage"], "resumed from session S1");
    assert_eq!(
        entry(&env, &id, &inst)["lineage"],
        "resumed from session S1"
    );
}

#[test]
fn a_stale_instance_of_a_live_id_is_not_live() {
    let env = Env::new();
    let (id, first) = enter(&env, &["--id", "A"]);
    let (_, second) = enter(&env, &["--id", "A"]);
    assert_ne!(first, second);
    let r = env.ask(&request_as("s1", &id, &first));
    let msg = assert_refused(&r, "CALLER_NOT_LIVE");
    assert!(msg.contains("stale"), "{msg}");
    assert_eq!(entry(&env, &id, &first)["live"], false);
    // The current instance may ask.
    env.ask(&request_as("s2", &id, &second)).ok();
    let pending: Vec<String> = list(&env, &["--status", "pending"])
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(pending, ["s2"]);
}

#[test]
fn an_unknown_agent_is_not_live() {
    let env = Env::new();
    let r = env.ask(&request_as("u1", "ghost", "0123456789abcdef"));
    assert_refused(&r, "CALLER_NOT_LIVE");
    // A real id with a made-up instance, too.
    let (id, _) = enter(&env, &["--id", "real"]);
    let r = env.ask(&request_as("u2", &id, "0123456789abcdef"));
    assert_refused(&r, "CALLER_NOT_LIVE");
    assert!(list(&env, &["--status", "pending"]).is_empty());
}

#[test]
fn exiting_an_owner_ends_its_children_transitively() {
    let env = Env::new();
    let (o, oinst) = enter(&env, &["--id", "O"]);
    let (c, cinst) = enter(&env, &["--id", "C", "--owner", &o]);
    let (g, ginst) = enter(&env, &["--id", "G", "--owner", &c]);
    let (other, otherinst) = enter(&env, &["--id", "Other"]);
    assert_eq!(agents(&env, false).len(), 4);

    let ended = env
        .json(&["agent", "exit", "--id", &o, "--instance", &oinst])
        .ok()
        .json();
    let mut names: Vec<&str> = ended["ended"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["C", "G", "O"]);

    let live = agents(&env, false);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0]["id"], "Other");
    for (id, inst) in [(&o, &oinst), (&c, &cinst), (&g, &ginst)] {
        let e = entry(&env, id, inst);
        assert_eq!(e["live"], false, "{e}");
        assert!(e["endedAt"].is_string(), "{e}");
    }
    assert_eq!(entry(&env, &other, &otherinst)["live"], true);

    // The orphans are not live (no longer delegated either).
    assert_refused(&env.ask(&request_as("x1", &c, &cinst)), "CALLER_NOT_LIVE");
    assert_refused(&env.ask(&request_as("x2", &g, &ginst)), "CALLER_NOT_LIVE");
    assert_refused(&env.ask(&request_as("x3", &o, &oinst)), "CALLER_NOT_LIVE");
    // Exiting twice finds nothing; a new owner cannot be a dead agent.
    let r = env.json(&["agent", "exit", "--id", &o, "--instance", &oinst]);
    assert_eq!(r.error_code(), "NOT_FOUND");
    let r = env.json(&["agent", "enter", "--id", "late", "--owner", &o]);
    assert_eq!(r.error_code(), "CALLER_NOT_LIVE");
    assert_ne!(r.code, 0);
    // The unrelated root still asks.
    env.ask(&request_as("x4", &other, &otherinst)).ok();
}

#[test]
fn an_expired_ttl_is_not_live_and_a_heartbeat_renews_it() {
    let env = Env::new();
    let (id, inst) = enter(&env, &["--id", "T", "--ttl", "1m"]);
    // Live now.
    env.ask(&request_as("t1", &id, &inst)).ok();
    // Two minutes later, without a heartbeat: not live.
    let later = [("DSHQ_CLOCK_SKEW", "+2m")];
    let p = env.dir.path().join("t2.json");
    std::fs::write(
        &p,
        serde_json::to_vec(&request_as("t2", &id, &inst)).unwrap(),
    )
    .unwrap();
    let r = env.run_env(&later, &["--json", "ask", p.to_str().unwrap()]);
    let msg = assert_refused(&r, "CALLER_NOT_LIVE");
    assert!(msg.contains("ttl") || msg.contains("expired"), "{msg}");
    let r = env.run_env(
        &later,
        &[
            "--json",
            "agent",
            "heartbeat",
            "--id",
            &id,
            "--instance",
            &inst,
        ],
    );
    assert_eq!(
        r.error_code(),
        "NOT_FOUND",
        "an expired entry cannot be revived"
    );

    // A heartbeat within the ttl renews it.
    let (id2, inst2) = enter(&env, &["--id", "T2", "--ttl", "1m"]);
    let hb = env
        .run_env(
            &[("DSHQ_CLOCK_SKEW", "+50s")],
            &[
                "--json",
                "agent",
                "heartbeat",
                "--id",
                &id2,
                "--instance",
                &inst2,
            ],
        )
        .ok()
        .json();
    assert_eq!(hb["live"], true);
    let p = env.dir.path().join("t3.json");
    std::fs::write(
        &p,
        serde_json::to_vec(&request_as("t3", &id2, &inst2)).unwrap(),
    )
    .unwrap();
    env.run_env(
        &[("DSHQ_CLOCK_SKEW", "+100s")],
        &["--json", "ask", p.to_str().unwrap()],
    )
    .ok();
    let pending: Vec<String> = list(&env, &["--status", "pending"])
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(pending, ["t3", "t1"]);
}

#[test]
fn a_failed_agent_check_leaves_the_registry_unchanged_and_nothing_accepted() {
    let env = Env::new();
    let (o, _) = enter(&env, &["--id", "O"]);
    let (c, cinst) = enter(&env, &["--id", "C", "--owner", &o, "--lineage", "L"]);
    let (a, stale) = enter(&env, &["--id", "A"]);
    enter(&env, &["--id", "A"]);
    let before_all = agents(&env, true);
    let before_live = agents(&env, false);

    assert_refused(&env.ask(&request_as("f1", &c, &cinst)), "DELEGATED_CALLER");
    assert_refused(&env.ask(&request_as("f2", &a, &stale)), "CALLER_NOT_LIVE");
    assert_refused(
        &env.ask(&request_as("f3", "nobody", "feedface")),
        "CALLER_NOT_LIVE",
    );
    // Also through stdin.
    let r = env.run_stdin(
        &["--json", "ask", "-"],
        &request_as("f4", &c, &cinst).to_string(),
    );
    assert_refused(&r, "DELEGATED_CALLER");

    assert_eq!(agents(&env, true), before_all, "registry unchanged");
    assert_eq!(agents(&env, false), before_live);

    let rows = list(&env, &[]);
    assert_eq!(rows.len(), 4, "{rows:#?}");
    assert!(
        rows.iter().all(|r| r["status"] == "rejected"),
        "only rejected rows: {rows:#?}"
    );
    assert!(list(&env, &["--status", "pending"]).is_empty());
    // Each rejected id was free, so each has an error outcome naming the code.
    for (id, code) in [
        ("f1", "DELEGATED_CALLER"),
        ("f2", "CALLER_NOT_LIVE"),
        ("f3", "CALLER_NOT_LIVE"),
        ("f4", "DELEGATED_CALLER"),
    ] {
        let o = env
            .outcome(id)
            .unwrap_or_else(|| panic!("no outcome for {id}"));
        assert_eq!(o["status"], "error");
        assert_eq!(o["error"]["code"], code, "{o}");
        assert_eq!(env.json(&["show", id]).ok().json()["status"], "rejected");
    }
}

/// The error code of a `rejected/STEM.error.json` file.
fn rejected_code(env: &Env, stem: &str) -> Option<String> {
    let p = env
        .root()
        .join("rejected")
        .join(format!("{stem}.error.json"));
    let text = std::fs::read_to_string(p).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v["code"]
        .as_str()
        .or_else(|| v["error"]["code"].as_str())
        .map(str::to_string)
}

#[test]
fn inbox_files_get_the_same_agent_check() {
    let env = Env::new();
    let daemon = env.daemon();
    let (o, oinst) = enter(&env, &["--id", "lead"]);
    let (c, cinst) = enter(&env, &["--id", "worker", "--owner", &o]);
    let (a, stale) = enter(&env, &["--id", "A"]);
    let (_, fresh) = enter(&env, &["--id", "A"]);
    let before = agents(&env, true);

    let put = |name: &str, v: &Value| env.drop_file(name, &serde_json::to_vec(v).unwrap());
    put("child.json", &request_as("child", &c, &cinst));
    put("stale.json", &request_as("stale", &a, &stale));
    put("ghost.json", &request_as("ghost", "ghost", "0123abcd"));
    // The file name is the id when the JSON has none.
    let mut unnamed = request_as("x", &c, &cinst);
    unnamed.as_object_mut().unwrap().remove("id");
    put("unnamed.json", &unnamed);
    put("root.json", &request_as("root", &o, &oinst));
    put("fresh.json", &request_as("fresh", &a, &fresh));

    let expected = [
        ("child", "DELEGATED_CALLER"),
        ("stale", "CALLER_NOT_LIVE"),
        ("ghost", "CALLER_NOT_LIVE"),
        ("unnamed", "DELEGATED_CALLER"),
    ];
    assert!(
        wait_until(DEADLINE, || {
            // The reason is written first, then the input moves: wait for both.
            expected.iter().all(|(stem, code)| {
                rejected_code(&env, stem).as_deref() == Some(*code)
                    && env
                        .root()
                        .join("rejected")
                        .join(format!("{stem}.json"))
                        .is_file()
            })
        }),
        "rejected/: {:?}\ndaemon log:\n{}",
        env.names("rejected"),
        daemon.log_text()
    );
    for (stem, code) in expected {
        assert!(
            env.root()
                .join("rejected")
                .join(format!("{stem}.json"))
                .is_file(),
            "the input is kept beside its error: {:?}",
            env.names("rejected")
        );
        let o = env.wait_outcome(stem);
        assert_eq!(o["error"]["code"], code, "{o}");
    }
    assert!(
        wait_until(DEADLINE, || env.names("inbox/new").is_empty()),
        "inbox/new: {:?}",
        env.names("inbox/new")
    );
    // The live roots were accepted.
    let mut pending: Vec<String> = list(&env, &["--status", "pending"])
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    pending.sort();
    assert_eq!(pending, ["fresh", "root"]);
    let v = env.json(&["show", "root"]).ok().json();
    assert_eq!(v["agent"]["id"], "lead");
    assert!(v["source"].as_str().unwrap().starts_with("inbox"), "{v}");
    assert_eq!(agents(&env, true), before, "registry unchanged");
    let rejected = list(&env, &["--status", "rejected"]);
    assert_eq!(rejected.len(), 4, "{rejected:#?}");
    assert_eq!(daemon.stop(), 0);
}

#[test]
fn ownership_cannot_form_a_cycle() {
    let env = Env::new();
    env.json(&["agent", "enter", "--id", "a"]).ok();
    env.json(&["agent", "enter", "--id", "b", "--owner", "a"])
        .ok();
    // Re-entering a as owned by b would make a own itself through b.
    let r = env.json(&["agent", "enter", "--id", "a", "--owner", "b"]);
    assert_eq!(r.error_code(), "USAGE", "{r:?}");
    // Nothing changed: b is still live and owned by a.
    let list = env.json(&["agent", "list"]).ok().json();
    let b = list
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == "b")
        .unwrap();
    assert_eq!(b["live"], true);
    assert_eq!(b["owner"], "a");
}
