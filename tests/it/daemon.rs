//! The daemon as a user meets it: files dropped into the inbox become requests, outcomes
//! appear in the outbox, bad inputs land in `rejected/` with their code, and the daemon
//! keeps running through all of it.

use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt};

use serde_json::json;

use crate::helpers::*;

fn error_code_in(env: &Env, dir: &str, stem: &str) -> String {
    let p = env.root().join(dir).join(format!("{stem}.error.json"));
    let v: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(&p).unwrap_or_else(|e| panic!("{} missing: {e}", p.display())),
    )
    .unwrap();
    assert_eq!(v["name"], "UserQuestionError");
    v["code"].as_str().unwrap().to_string()
}

#[test]
fn dropped_file_is_accepted_and_answer_file_writes_the_outcome() {
    let env = Env::new();
    let d = env.daemon();
    env.drop_file(
        "r1.json",
        &serde_json::to_vec(&simple_request("r1")).unwrap(),
    );
    // A request without an id takes the file name.
    let mut anon = simple_request("x");
    anon.as_object_mut().unwrap().remove("id");
    env.drop_file("from-name.json", &serde_json::to_vec(&anon).unwrap());
    assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
    let listed = env.json(&["list"]).ok().json();
    let mut ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    // Both may land in one batch, in either order.
    ids.sort();
    assert_eq!(ids, vec!["from-name", "r1"]);

    let lease = env.register("alice", "default", "10m");
    env.drop_answer(
        "r1.json",
        &serde_json::to_vec(
            &json!({"lease": lease, "answers": [{"id": "db", "selected": ["SQLite"]}]}),
        )
        .unwrap(),
    );
    let out = env.wait_outcome("r1");
    assert_eq!(out["status"], "answered");
    assert_eq!(out["provider"], "alice");
    assert_eq!(out["answer"]["answers"][0]["selected"], json!(["SQLite"]));
    assert!(env.names("answers/new").is_empty());

    // A cancel file ends the other request with ASK_CANCELLED.
    env.drop_answer(
        "from-name.json",
        &serde_json::to_vec(&json!({"lease": lease, "cancel": "not needed"})).unwrap(),
    );
    let out = env.wait_outcome("from-name");
    assert_eq!(out["status"], "error");
    assert_eq!(out["error"]["code"], "ASK_CANCELLED");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not needed"));
    assert_eq!(d.stop(), 0);
}

#[test]
fn cli_answer_reaches_the_outbox_while_the_daemon_runs() {
    let env = Env::new();
    let _d = env.daemon();
    env.drop_file("q.json", &serde_json::to_vec(&simple_request("q")).unwrap());
    assert!(wait_until(DEADLINE, || env.json(&["show", "q"]).code == 0));
    env.json(&["answer", "q", "--select", "Postgres"]).ok();
    let out = env.wait_outcome("q");
    assert_eq!(out["answer"]["answers"][0]["selected"], json!(["Postgres"]));
    // The transient lease of the CLI answer is gone.
    let st = env.json(&["provider", "status"]).ok().json();
    assert_eq!(st, json!([]));
}

#[test]
fn every_rejection_class_lands_in_rejected_and_the_daemon_keeps_running() {
    let env = Env::new();
    let d = env.daemon();
    let inbox = env.root().join("inbox/new");
    // Accepted first, so a different request under the same id is a duplicate.
    env.drop_file(
        "taken.json",
        &serde_json::to_vec(&simple_request("taken")).unwrap(),
    );
    assert!(wait_until(DEADLINE, || env.json(&["show", "taken"]).code == 0));

    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("notjson.json", b"{not json".to_vec(), "BAD_REQUEST"),
        (
            "typo.json",
            br#"{"id":"typo","questions":[{"id":"q","question":"?","mutliSelect":true}]}"#.to_vec(),
            "BAD_REQUEST",
        ),
        ("bad id!.json", serde_json::to_vec(&json!({"questions": [{"id": "q", "question": "?"}]})).unwrap(), "BAD_REQUEST"),
        ("empty.json", br#"{"id":"empty","questions":[]}"#.to_vec(), "EMPTY_QUESTIONS"),
        (
            "intent.json",
            serde_json::to_vec(&json!({"id": "intent", "questions": [{"id": "plan", "question": "Approve?",
                "detail": "the plan", "options": [{"label": "Yes"}], "intent": {"kind": "plan-review", "approve": "Ok"}}]}))
            .unwrap(),
            "BAD_INTENT",
        ),
        (
            "needprov.json",
            serde_json::to_vec(&json!({"id": "needprov", "requireProvider": true,
                "questions": [{"id": "q", "question": "?"}]}))
            .unwrap(),
            "NO_PROVIDER",
        ),
        (
            "dup.json",
            serde_json::to_vec(&json!({"id": "taken", "questions": [{"id": "other", "question": "?"}]})).unwrap(),
            "DUPLICATE_ID",
        ),
        (
            "late.json",
            serde_json::to_vec(&json!({"id": "late", "deadline": "2001-01-01T00:00:00Z",
                "questions": [{"id": "q", "question": "?"}]}))
            .unwrap(),
            "ASK_ABORTED",
        ),
        ("big.json", vec![b' '; 2 * 1024 * 1024], "BAD_REQUEST"),
        ("notes.txt", b"hello".to_vec(), "BAD_REQUEST"),
        ("ghost.abort", b"".to_vec(), "NOT_FOUND"),
    ];
    for (name, bytes, _) in &cases {
        env.drop_file(name, bytes);
    }
    // Special files, made directly in new/.
    let target = env.dir.path().join("secret.json");
    fs::write(
        &target,
        serde_json::to_vec(&simple_request("secret")).unwrap(),
    )
    .unwrap();
    symlink(&target, inbox.join("link.json")).unwrap();
    let fifo = inbox.join("pipe.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo on a path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    fs::create_dir(inbox.join("adir.json")).unwrap();
    // A half-written file in tmp/ is never read.
    fs::write(
        env.root().join("inbox/tmp/half.json"),
        b"{\"id\": \"half\", \"quest",
    )
    .unwrap();

    assert!(
        wait_until(DEADLINE, || env.names("inbox/new").is_empty()),
        "inbox not drained: {:?}",
        env.names("inbox/new")
    );
    for (name, _, code) in &cases {
        let stem = name.strip_suffix(".json").unwrap_or(name);
        assert!(
            env.root().join("rejected").join(name).exists(),
            "{name} not moved to rejected/"
        );
        assert_eq!(&error_code_in(&env, "rejected", stem), code, "{name}");
    }
    for (name, stem) in [
        ("link.json", "link"),
        ("pipe.json", "pipe"),
        ("adir.json", "adir"),
    ] {
        assert!(
            fs::symlink_metadata(env.root().join("rejected").join(name)).is_ok(),
            "{name}"
        );
        assert_eq!(
            error_code_in(&env, "rejected", stem),
            "BAD_REQUEST",
            "{name}"
        );
    }
    // The symlink was moved, never followed: its target is untouched and no request "secret".
    assert!(target.exists());
    assert_eq!(env.json(&["show", "secret"]).error_code(), "NOT_FOUND");
    assert!(env.root().join("inbox/tmp/half.json").exists());
    assert_eq!(env.json(&["show", "half"]).error_code(), "NOT_FOUND");

    // Askers with a known id learn through the outbox; a taken id gets no outcome.
    assert_eq!(
        env.wait_outcome("empty")["error"]["code"],
        "EMPTY_QUESTIONS"
    );
    assert_eq!(env.wait_outcome("typo")["error"]["code"], "BAD_REQUEST");
    assert_eq!(env.wait_outcome("late")["error"]["code"], "ASK_ABORTED");
    assert!(env.outcome("taken").is_none());
    // Rejections are recorded for the audit.
    let rejected = env.json(&["list", "--status", "rejected"]).ok().json();
    assert_eq!(rejected.as_array().unwrap().len(), cases.len() + 3);

    // Still alive and ingesting.
    env.drop_file(
        "after.json",
        &serde_json::to_vec(&simple_request("after")).unwrap(),
    );
    assert!(wait_until(DEADLINE, || env.json(&["show", "after"]).code == 0));
    assert_eq!(d.stop(), 0);
}

#[test]
fn bad_answer_files_are_rejected_and_the_request_is_untouched() {
    let env = Env::new();
    let _d = env.daemon();
    env.drop_file("r.json", &serde_json::to_vec(&simple_request("r")).unwrap());
    assert!(wait_until(DEADLINE, || env.json(&["show", "r"]).code == 0));
    let lease = env.register("alice", "default", "10m");
    let cases = [
        (
            "r.json",
            json!({"lease": lease, "answers": [{"id": "db", "selected": ["Oracle"]}]}),
            "BAD_ANSWER",
        ),
        (
            "nope.json",
            json!({"lease": lease, "answers": []}),
            "NOT_FOUND",
        ),
        (
            "x.json",
            json!({"lease": "1.00000000000000000000000000000000000000000000000000000000000000ff", "cancel": "x"}),
            "LEASE_EXPIRED",
        ),
    ];
    for (name, body, code) in &cases {
        env.drop_answer(name, &serde_json::to_vec(body).unwrap());
        assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
        let stem = name.strip_suffix(".json").unwrap();
        assert_eq!(&error_code_in(&env, "answers/rejected", stem), code);
    }
    env.drop_answer("r.json", b"{\"lease\": 1}");
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    let shown = env.json(&["show", "r"]).ok().json();
    assert_eq!(shown["status"], "pending");
    assert!(env.outcome("r").is_none());
}

#[test]
fn abort_files_and_deadlines_abort() {
    let env = Env::new();
    let d = env.daemon();
    env.drop_file("a.json", &serde_json::to_vec(&simple_request("a")).unwrap());
    let mut timed = simple_request("t");
    timed["timeout"] = json!("10m");
    env.drop_file("t.json", &serde_json::to_vec(&timed).unwrap());
    assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
    env.drop_file("a.abort", b"changed my mind\n");
    let out = env.wait_outcome("a");
    assert_eq!(out["error"]["code"], "ASK_ABORTED");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("changed my mind"));
    assert!(env.outcome("t").is_none());
    assert_eq!(d.stop(), 0);
    // Eleven minutes later (an injected clock), the deadline has passed.
    let d = env.daemon_with(&[], &[("DSHQ_CLOCK_SKEW", "+11m")]);
    let out = env.wait_outcome("t");
    assert_eq!(out["error"]["code"], "ASK_ABORTED");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("deadline"));
    drop(d);
}

#[test]
fn daemon_expires_leases_and_returns_claims_to_pending() {
    let env = Env::new();
    env.json(&["ask", "-"]); // no stdin: a BAD_REQUEST, just to create the root
    let path = env.dir.path().join("r.json");
    fs::write(&path, serde_json::to_vec(&simple_request("r")).unwrap()).unwrap();
    env.json(&["ask", path.to_str().unwrap()]).ok();
    let lease = env.register("alice", "default", "1m");
    env.json(&["claim", "r", "--lease", &lease]).ok();
    let d = env.daemon_with(&[], &[("DSHQ_CLOCK_SKEW", "+2m")]);
    assert!(wait_until(DEADLINE, || d
        .log_text()
        .contains("provider lease expired")));
    let shown = env.json(&["show", "r"]).ok().json();
    assert_eq!(shown["status"], "pending");
    let db = rusqlite::Connection::open(env.root().join("dshq.db")).unwrap();
    let kinds: Vec<String> = db
        .prepare(
            "SELECT kind FROM events WHERE request_id = 'r' OR lease_id IS NOT NULL ORDER BY seq",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(kinds.contains(&"lease-expired".to_string()), "{kinds:?}");
    assert!(kinds.contains(&"released".to_string()), "{kinds:?}");
    // The stale holder can no longer answer.
    let r = env.json(&["answer", "r", "--select", "SQLite", "--lease", &lease]);
    assert_eq!(r.error_code(), "LEASE_EXPIRED");
}

#[test]
fn wait_returns_when_a_dropped_file_is_answered() {
    let env = Env::new();
    let _d = env.daemon();
    let mut waiter = env
        .command()
        .args(["--json", "wait", "w", "--timeout", "60s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    env.drop_file("w.json", &serde_json::to_vec(&simple_request("w")).unwrap());
    assert!(wait_until(DEADLINE, || env.json(&["show", "w"]).code == 0));
    env.json(&["answer", "w", "--select", "SQLite"]).ok();
    assert!(wait_until(DEADLINE, || waiter
        .try_wait()
        .unwrap()
        .is_some()));
    let out: Run = waiter.wait_with_output().unwrap().into();
    assert_eq!(out.code, 0);
    assert_eq!(out.json()["status"], "answered");
}

#[test]
fn layout_is_owner_only() {
    let env = Env::new();
    let d = env.daemon();
    for sub in [
        "",
        "inbox",
        "inbox/new",
        "inbox/tmp",
        "outbox",
        "answers/new",
        "rejected",
    ] {
        let mode = fs::metadata(env.root().join(sub))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o700, "{sub}");
    }
    let mode = fs::metadata(env.root().join("dshq.db"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    env.drop_file("p.json", &serde_json::to_vec(&simple_request("p")).unwrap());
    assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
    env.json(&["abort", "p"]).ok();
    env.wait_outcome("p");
    let mode = fs::metadata(env.root().join("outbox/p.json"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(d.stop(), 0);
}

/// CPU time (user + system, in clock ticks) of a process, from /proc.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn idle_daemon_does_not_spin() {
    // Regression: the watcher once reported the daemon's own directory listings (inotify
    // IN_OPEN) as hints, so every scan caused the next one: 100% CPU at idle.
    let env = Env::new();
    let d = env.daemon_with(&["--tick", "1h"], &[]);
    env.drop_file("i.json", &serde_json::to_vec(&simple_request("i")).unwrap());
    assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
    let before = cpu_ticks(d.pid());
    let start = std::time::Instant::now();
    // An observation window, not a synchronisation: a spinning daemon burns it all.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let used = cpu_ticks(d.pid()) - before;
    let ticks_per_s = 100; // USER_HZ on Linux
    let window = start.elapsed().as_millis() as u64 * ticks_per_s / 1000;
    assert!(
        used * 5 < window,
        "idle daemon used {used} ticks of {window}"
    );
}

#[test]
fn reusing_a_rejected_id_removes_the_stale_error_outcome() {
    let env = Env::new();
    let _d = env.daemon();
    let mut needs = simple_request("x");
    needs["requireProvider"] = json!(true);
    env.drop_file("x.json", &serde_json::to_vec(&needs).unwrap());
    assert_eq!(env.wait_outcome("x")["error"]["code"], "NO_PROVIDER");
    let lease = env.register("alice", "default", "10m");
    env.drop_file("x.json", &serde_json::to_vec(&needs).unwrap());
    assert!(wait_until(DEADLINE, || env
        .json(&["show", "x"])
        .ok()
        .json()["status"]
        == "pending"));
    // The stale outcome is removed right after the accepting commit: wait for it.
    assert!(
        wait_until(DEADLINE, || env.outcome("x").is_none()),
        "the earlier rejection's outcome must not stand for the new request"
    );
    env.json(&["answer", "x", "--select", "SQLite", "--lease", &lease])
        .ok();
    assert_eq!(env.wait_outcome("x")["status"], "answered");
}

#[test]
fn a_cancel_file_processed_again_after_a_crash_is_applied_once() {
    let env = Env::new();
    let path = env.dir.path().join("c.json");
    fs::write(&path, serde_json::to_vec(&simple_request("c")).unwrap()).unwrap();
    env.json(&["ask", path.to_str().unwrap()]).ok();
    let lease = env.register("alice", "default", "10m");
    let body = serde_json::to_vec(&json!({"lease": lease, "cancel": "dup"})).unwrap();
    let d = env.daemon();
    env.drop_answer("c.json", &body);
    assert_eq!(env.wait_outcome("c")["error"]["code"], "ASK_CANCELLED");
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    // As if the daemon had died after the commit, before removing the file.
    env.drop_answer("c.json", &body);
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    assert!(
        env.names("answers/rejected").is_empty(),
        "{:?}",
        env.names("answers/rejected")
    );
    let db = rusqlite::Connection::open(env.root().join("dshq.db")).unwrap();
    let n: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM events WHERE request_id = 'c' AND kind = 'cancelled'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 1);
    drop(d);
}

// Regressions from the review of the daemon and the store.

fn start_with_files(env: &Env, files: &[(&str, Vec<u8>)]) -> Daemon {
    // Files in place before the daemon starts land in one scan (and one batch).
    fs::create_dir_all(env.root().join("inbox/new")).unwrap();
    for (name, bytes) in files {
        fs::write(env.root().join("inbox/new").join(name), bytes).unwrap();
    }
    env.daemon()
}

#[test]
fn a_rejection_and_an_acceptance_of_one_id_in_one_batch_publish_no_stale_error() {
    let env = Env::new();
    let _d = start_with_files(
        &env,
        &[
            ("a.json", br#"{"id":"X","questions":[]}"#.to_vec()),
            ("b.json", serde_json::to_vec(&simple_request("X")).unwrap()),
        ],
    );
    assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
    assert_eq!(env.json(&["show", "X"]).ok().json()["status"], "pending");
    // Once no outcome is left to write, none may stand for the pending request.
    let db = rusqlite::Connection::open(env.root().join("dshq.db")).unwrap();
    assert!(wait_until(DEADLINE, || {
        db.query_row(
            "SELECT COUNT(*) FROM requests WHERE outbox_pending = 1",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
            == 0
    }));
    assert!(env.outcome("X").is_none(), "{:?}", env.outcome("X"));
}

#[test]
fn an_abort_dropped_with_its_request_aborts_it() {
    let env = Env::new();
    let _d = start_with_files(
        &env,
        &[
            ("Y.json", serde_json::to_vec(&simple_request("Y")).unwrap()),
            ("Y.abort", b"never mind".to_vec()),
        ],
    );
    assert_eq!(env.wait_outcome("Y")["error"]["code"], "ASK_ABORTED");
    assert!(
        env.names("rejected").is_empty(),
        "{:?}",
        env.names("rejected")
    );
}

#[test]
fn an_answer_file_replayed_after_its_lease_was_released_is_applied_once() {
    let env = Env::new();
    let path = env.dir.path().join("r.json");
    fs::write(&path, serde_json::to_vec(&simple_request("r")).unwrap()).unwrap();
    env.json(&["ask", path.to_str().unwrap()]).ok();
    let lease = env.register("alice", "default", "10m");
    env.json(&["answer", "r", "--select", "SQLite", "--lease", &lease])
        .ok();
    env.json(&["provider", "release", "--lease", &lease]).ok();
    let _d = env.daemon();
    env.drop_answer(
        "r.json",
        &serde_json::to_vec(
            &json!({"lease": lease, "answers": [{"id": "db", "selected": ["SQLite"]}]}),
        )
        .unwrap(),
    );
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    assert!(
        env.names("answers/rejected").is_empty(),
        "{:?}",
        env.names("answers/rejected")
    );
}

#[test]
fn two_non_utf8_names_are_both_kept() {
    use std::os::unix::ffi::OsStrExt;
    let env = Env::new();
    let new = env.root().join("inbox/new");
    fs::create_dir_all(&new).unwrap();
    fs::write(new.join(std::ffi::OsStr::from_bytes(b"a\xff.json")), b"one").unwrap();
    fs::write(new.join(std::ffi::OsStr::from_bytes(b"a\xfe.json")), b"two").unwrap();
    let _d = env.daemon();
    assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
    let rejected: Vec<String> = env
        .names("rejected")
        .into_iter()
        .filter(|n| !n.ends_with(".error.json"))
        .collect();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    let mut contents: Vec<String> = rejected
        .iter()
        .map(|n| fs::read_to_string(env.root().join("rejected").join(n)).unwrap())
        .collect();
    contents.sort();
    assert_eq!(contents, ["one", "two"]);
}

#[test]
fn wait_ignores_a_rejection_while_a_new_file_for_the_id_waits() {
    let env = Env::new();
    env.run_stdin(&["--json", "ask", "-"], r#"{"id":"Z","questions":[]}"#);
    env.drop_file("Z.json", &serde_json::to_vec(&simple_request("Z")).unwrap());
    // No daemon yet: the fixed file waits in the inbox, so wait must not return the
    // earlier rejection.
    let r = env.json(&["wait", "Z", "--timeout", "300ms"]);
    assert_eq!(r.error_code(), "WAIT_TIMEOUT", "{r:?}");
}

#[test]
fn a_command_that_waited_for_the_lock_judges_the_lease_when_it_writes() {
    let env = Env::new();
    let path = env.dir.path().join("l.json");
    fs::write(&path, serde_json::to_vec(&simple_request("l")).unwrap()).unwrap();
    env.json(&["ask", path.to_str().unwrap()]).ok();
    let reg = env
        .json(&["provider", "register", "--name", "alice", "--ttl", "1s"])
        .ok()
        .json();
    let lease = reg["lease"].as_str().unwrap().to_string();
    let expires: jiff::Timestamp = reg["expiresAt"].as_str().unwrap().parse().unwrap();
    // Hold the write lock while the answer starts, until the lease has expired.
    let mut db = rusqlite::Connection::open(env.root().join("dshq.db")).unwrap();
    let tx = db
        .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
        .unwrap();
    let child = env
        .command()
        .args([
            "--json", "answer", "l", "--select", "SQLite", "--lease", &lease,
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(wait_until(DEADLINE, || jiff::Timestamp::now()
        > expires + jiff::SignedDuration::from_millis(50)));
    tx.rollback().unwrap();
    let out: Run = child.wait_with_output().unwrap().into();
    assert_eq!(out.error_code(), "LEASE_EXPIRED", "{out:?}");
}

#[test]
fn a_second_daemon_on_the_same_root_is_refused() {
    let env = Env::new();
    let d = env.daemon();
    let r = env.json(&["daemon"]);
    assert_eq!(r.error_code(), "DAEMON_RUNNING", "{r:?}");
    assert_eq!(r.code, 11);
    // The lock dies with the process, even on SIGKILL.
    d.kill9();
    let d2 = env.daemon();
    assert_eq!(d2.stop(), 0);
}
