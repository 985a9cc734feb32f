//! Trusting a root, a clock and a lock: hostile roots are refused (`UNSAFE_ROOT`), the
//! clock skew is a test-build aid that read commands cannot turn into writes, read
//! commands work on a read-only copy, duration flags are bounded, waits survive without a
//! file watch, a recorded answer whose outcome file fails is reported as recorded, and the
//! daemon's lock cannot be deleted from under it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::helpers::*;

/// Another user's uid (nobody).
const OTHER: u32 = 65534;

fn chmod(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// Every file name and size under `dir`, sorted: "nothing was written" is that it is equal.
fn snapshot(dir: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    fn walk(d: &Path, out: &mut Vec<(String, u64)>) {
        let Ok(rd) = fs::read_dir(d) else { return };
        for e in rd.flatten() {
            let m = fs::symlink_metadata(e.path()).unwrap();
            out.push((e.path().display().to_string(), m.len()));
            if m.is_dir() {
                walk(&e.path(), out);
            }
        }
    }
    walk(dir, &mut out);
    out.sort();
    out
}

/// The database's bytes (with its WAL), to compare before and after.
fn db_bytes(env: &Env) -> Vec<u8> {
    let mut v = fs::read(env.root().join("dshq.db")).unwrap();
    v.extend(fs::read(env.root().join("dshq.db-wal")).unwrap_or_default());
    v
}

fn assert_unsafe(r: &Run) {
    assert_eq!(r.error_code(), "UNSAFE_ROOT", "{r:?}");
    assert_eq!(r.code, 12, "{r:?}");
}

/// A root with one pending request.
fn root_with_request(id: &str) -> Env {
    let env = Env::new();
    env.ask(&simple_request(id)).ok();
    env
}

// ---------------------------------------------------------------------------------------
// Item 12: roots are trusted only as ssh trusts its files
// ---------------------------------------------------------------------------------------

#[test]
fn a_world_writable_root_is_refused_and_nothing_is_written() {
    let env = Env::new();
    fs::create_dir(env.root()).unwrap();
    chmod(&env.root(), 0o777);
    for args in [
        &["list"][..],
        &["provider", "register", "--name", "a"],
        &["wait", "x", "--timeout", "1s"],
    ] {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        assert_unsafe(&env.run(&all));
    }
    assert_unsafe(&env.json(&["daemon"]));
    let p = env.dir.path().join("q.json");
    fs::write(&p, serde_json::to_vec(&simple_request("w1")).unwrap()).unwrap();
    assert_unsafe(&env.json(&["ask", p.to_str().unwrap()]));
    assert!(
        snapshot(&env.root()).is_empty(),
        "nothing may be created in an unsafe root: {:?}",
        snapshot(&env.root())
    );
}

#[test]
fn a_group_writable_root_is_refused() {
    let env = Env::new();
    fs::create_dir(env.root()).unwrap();
    chmod(&env.root(), 0o770);
    assert_unsafe(&env.json(&["list"]));
    assert!(snapshot(&env.root()).is_empty());
}

#[test]
fn a_world_writable_outbox_or_inbox_is_refused_and_the_store_is_untouched() {
    for sub in ["outbox", "inbox/new", "answers"] {
        let env = root_with_request("o1");
        let before = db_bytes(&env);
        chmod(&env.root().join(sub), 0o777);
        assert_unsafe(&env.json(&["answer", "o1", "--select", "Postgres"]));
        assert_unsafe(&env.json(&["list"]));
        assert_unsafe(&env.json(&["daemon"]));
        assert_eq!(before, db_bytes(&env), "{sub}: the store changed");
        assert!(env.outcome("o1").is_none());
    }
}

#[test]
fn a_root_or_database_owned_by_another_user_is_refused() {
    let env = root_with_request("u1");
    std::os::unix::fs::chown(env.root(), Some(OTHER), Some(OTHER)).unwrap();
    let r = env.json(&["answer", "u1", "--select", "Postgres"]);
    assert_unsafe(&r);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("owned by uid 65534"));
    assert_unsafe(&env.json(&["show", "u1"]));
    std::os::unix::fs::chown(env.root(), Some(0), Some(0)).unwrap();
    env.json(&["show", "u1"]).ok();

    std::os::unix::fs::chown(env.root().join("dshq.db"), Some(OTHER), Some(OTHER)).unwrap();
    assert_unsafe(&env.json(&["show", "u1"]));
    assert_unsafe(&env.json(&["answer", "u1", "--select", "Postgres"]));
}

#[test]
fn another_users_outbox_planted_in_place_of_ours_is_refused() {
    // The attack of the issue: a second user replaces outbox/ with their own directory and
    // plants "answered" for a pending request.
    let env = root_with_request("p1");
    let planted = env.dir.path().join("planted");
    fs::create_dir(&planted).unwrap();
    std::os::unix::fs::chown(&planted, Some(OTHER), Some(OTHER)).unwrap();
    fs::remove_dir(env.root().join("outbox")).unwrap();
    std::os::unix::fs::symlink(&planted, env.root().join("outbox")).unwrap();
    std::os::unix::fs::lchown(env.root().join("outbox"), Some(OTHER), Some(OTHER)).unwrap();
    let r = env.json(&["wait", "p1", "--timeout", "1s"]);
    assert_unsafe(&r);
    assert_unsafe(&env.json(&["daemon"]));
    // Even a symlink of ours to a directory of theirs.
    std::os::unix::fs::lchown(env.root().join("outbox"), Some(0), Some(0)).unwrap();
    assert_unsafe(&env.json(&["answer", "p1", "--select", "Postgres"]));
    assert_eq!(fs::read_dir(&planted).unwrap().count(), 0);
}

#[test]
fn another_users_symlink_as_the_root_is_refused() {
    let env = Env::new();
    let real = env.dir.path().join("real");
    fs::create_dir(&real).unwrap();
    chmod(&real, 0o700);
    std::os::unix::fs::symlink(&real, env.root()).unwrap();
    std::os::unix::fs::lchown(env.root(), Some(OTHER), Some(OTHER)).unwrap();
    assert_unsafe(&env.json(&["list"]));
    assert_eq!(fs::read_dir(&real).unwrap().count(), 0);
    // Our own symlink to our own directory is fine: an empty root (NO_ROOT to a read),
    // and a write makes it a root the read then lists.
    std::os::unix::fs::lchown(env.root(), Some(0), Some(0)).unwrap();
    assert_eq!(env.json(&["list"]).error_code(), "NO_ROOT");
    env.ask(&simple_request("s1")).ok();
    env.json(&["list"]).ok();
}

#[test]
fn what_dshq_creates_is_owner_only() {
    use std::os::unix::fs::MetadataExt;
    let env = root_with_request("m1");
    for sub in [
        "",
        "inbox",
        "inbox/new",
        "inbox/tmp",
        "outbox",
        "answers",
        "answers/new",
        "answers/tmp",
        "answers/rejected",
        "rejected",
    ] {
        let m = fs::metadata(env.root().join(sub)).unwrap();
        assert_eq!(m.mode() & 0o777, 0o700, "{sub}");
    }
    let m = fs::metadata(env.root().join("dshq.db")).unwrap();
    assert_eq!(m.mode() & 0o777, 0o600);
}

// ---------------------------------------------------------------------------------------
// Item 17: the daemon's lock cannot be deleted from under it
// ---------------------------------------------------------------------------------------

#[test]
fn deleting_files_in_the_root_does_not_let_a_second_daemon_start() {
    let env = Env::new();
    let d = env.daemon();
    let _ = fs::remove_file(env.root().join("daemon.lock"));
    // Spawned, not run: a second daemon that did start would never return.
    let mut second = env
        .command()
        .args(["--json", "daemon"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = None;
    wait_until(DEADLINE, || {
        status = second.try_wait().unwrap();
        status.is_some()
    });
    if status.is_none() {
        let _ = second.kill();
        let _ = second.wait();
        panic!("a second daemon started on the root");
    }
    let r: Run = second.wait_with_output().unwrap().into();
    assert_eq!(r.error_code(), "DAEMON_RUNNING", "{r:?}");
    assert_eq!(r.code, 11);
    assert_eq!(d.stop(), 0);
}

// ---------------------------------------------------------------------------------------
// Item 7: the clock skew in read commands
// ---------------------------------------------------------------------------------------

#[test]
fn a_read_command_with_a_skewed_clock_changes_nothing() {
    let env = Env::new();
    let mut req = simple_request("s1");
    req["timeout"] = Value::from("1h");
    env.ask(&req).ok();
    let lease = env.register("alice", "default", "1m");
    env.json(&["claim", "s1", "--lease", &lease]).ok();
    let events = |env: &Env| env.json(&["events", "s1"]).ok().json();
    let before_events = events(&env);
    let before = db_bytes(&env);

    let later = [("DSHQ_CLOCK_SKEW", "+30d")];
    // Shown as it is at the (shifted) now: the deadline passed.
    let rows: Value = env
        .run_env(&later, &["--json", "list", "--all"])
        .ok()
        .json();
    assert_eq!(rows[0]["status"], "aborted", "{rows}");
    env.run_env(&later, &["--json", "show", "s1"]).ok();
    env.run_env(&later, &["--json", "provider", "status"]).ok();
    env.run_env(&later, &["--json", "history"]).ok();

    // But nothing was written: at the real time the request is still claimed.
    assert_eq!(before, db_bytes(&env), "a read command changed the store");
    let v = env.json(&["show", "s1"]).ok().json();
    assert_eq!(v["status"], "claimed", "{v}");
    assert_eq!(events(&env), before_events);
    env.json(&["answer", "s1", "--select", "SQLite", "--lease", &lease])
        .ok();
}

/// A build made without the `test-clock` feature (`cargo build`, `cargo install`) ignores
/// `DSHQ_CLOCK_SKEW`. Building one takes a separate target directory (a full build), so
/// this runs only on request: `cargo test --test it -- --ignored plain_build`.
#[test]
#[ignore]
fn a_plain_build_ignores_the_clock_skew() {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/plain-build");
    let st = std::process::Command::new(env!("CARGO"))
        .args(["build", "--bin", "dshq", "--target-dir"])
        .arg(&target)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(st.success());
    let plain = target.join("debug/dshq");
    let env = Env::new();
    let run = |skew: &str, args: &[&str]| -> Run {
        env.command()
            .env("DSHQ_CLOCK_SKEW", skew)
            .args(args)
            .output()
            .map(Into::into)
            .unwrap()
    };
    let mut c = env.command();
    c.args([
        "--json", "provider", "register", "--name", "a", "--ttl", "1m",
    ]);
    let reg: Run = c.output().unwrap().into();
    let lease = reg.ok().json()["lease"].as_str().unwrap().to_string();
    // The test build sees the lease expire a day later...
    let r = run(
        "+1d",
        &["--json", "provider", "heartbeat", "--lease", &lease],
    );
    assert_eq!(r.error_code(), "LEASE_EXPIRED");
    // ...the plain build does not (a new lease: the first one is gone).
    let mut c = std::process::Command::new(&plain);
    c.env("DSHQ_ROOT", env.root()).args([
        "--json", "provider", "register", "--name", "b", "--ttl", "1m",
    ]);
    let reg: Run = c.output().unwrap().into();
    let lease = reg.ok().json()["lease"].as_str().unwrap().to_string();
    let mut c = std::process::Command::new(&plain);
    c.env("DSHQ_ROOT", env.root())
        .env("DSHQ_CLOCK_SKEW", "+1d")
        .args(["--json", "provider", "heartbeat", "--lease", &lease]);
    let r: Run = c.output().unwrap().into();
    r.ok();
}

// ---------------------------------------------------------------------------------------
// Item 16: read commands on a read-only copy
// ---------------------------------------------------------------------------------------

/// Run as another user (nobody), so the copy's modes apply (root ignores them).
/// The binary, copied once into a directory every user can enter: the checkout it was
/// built in may sit below a directory that another user cannot traverse (say, root's home).
/// One copy per build (named by size and modification time), replacing older ones.
fn bin_for_others() -> &'static Path {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let dir = std::env::temp_dir().join("dshq-it-bin");
        fs::create_dir_all(&dir).unwrap();
        chmod(&dir, 0o755);
        let meta = fs::metadata(bin()).unwrap();
        let mtime = meta
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let path = dir.join(format!("dshq-{}-{mtime}", meta.len()));
        if !path.exists() {
            for old in fs::read_dir(&dir).unwrap().flatten() {
                let _ = fs::remove_file(old.path());
            }
            let tmp = dir.join(format!(".dshq.{}.{}", std::process::id(), unique()));
            fs::copy(bin(), &tmp).unwrap();
            chmod(&tmp, 0o755);
            fs::rename(&tmp, &path).unwrap();
        }
        path
    })
}

/// Run the binary as another user (`nobody`) on this root, with the usual clean environment.
fn run_as_other(env: &Env, args: &[&str]) -> Run {
    let usual = env.command();
    let mut c = std::process::Command::new(bin_for_others());
    for (k, v) in usual.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.stdin(Stdio::null()).uid(OTHER).gid(OTHER).args(args);
    c.output().expect("run dshq as nobody").into()
}

#[test]
fn read_commands_work_on_a_read_only_copy() {
    let env = root_with_request("r1");
    env.register("alice", "default", "5m");
    // An auditor's copy: readable by all, writable by none but its owner (root); its keys
    // are the auditor's alone (a key others may read is refused, as any key is).
    chmod(env.dir.path(), 0o755);
    chmod(&env.root(), 0o755);
    for f in fs::read_dir(env.root()).unwrap().flatten() {
        if f.file_type().unwrap().is_file() {
            if f.path().extension().is_some_and(|x| x == "key") {
                std::os::unix::fs::chown(f.path(), Some(OTHER), Some(OTHER)).unwrap();
                chmod(&f.path(), 0o600);
            } else {
                chmod(&f.path(), 0o644);
            }
        }
    }
    let before = snapshot(&env.root());
    for args in [
        &["list"][..],
        &["show", "r1"],
        &["history"],
        &["events", "r1"],
        &["stats"],
        &["provider", "status"],
        &["agent", "list"],
        &["audit", "verify"],
    ] {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let r = run_as_other(&env, &all).ok();
        r.json();
    }
    let r = run_as_other(&env, &["export"]).ok();
    assert!(r.stdout.contains("\"r1\""));
    let r = run_as_other(&env, &["watch", "--pending", "--count", "1"]).ok();
    assert!(r.stdout.contains("\"r1\""), "{r:?}");
    let v = run_as_other(&env, &["--json", "show", "r1"]).ok().json();
    assert_eq!(v["status"], "pending");
    assert_eq!(before, snapshot(&env.root()), "a read wrote to the copy");
}

#[test]
fn a_read_only_store_that_needs_a_migration_gets_a_clear_error() {
    let env = root_with_request("r2");
    {
        let c = rusqlite::Connection::open(env.root().join("dshq.db")).unwrap();
        let newest: i64 = c
            .query_row("SELECT MAX(version) FROM schema_migrations", [], |r| {
                r.get(0)
            })
            .unwrap();
        c.execute("DELETE FROM schema_migrations WHERE version = ?1", [newest])
            .unwrap();
    }
    chmod(env.dir.path(), 0o755);
    chmod(&env.root(), 0o755);
    chmod(&env.root().join("dshq.db"), 0o644);
    let r = run_as_other(&env, &["--json", "list"]);
    assert_eq!(r.error_code(), "STORE", "{r:?}");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains("needs migrating"), "{msg}");
}

// ---------------------------------------------------------------------------------------
// Item 15: bounded durations
// ---------------------------------------------------------------------------------------

#[test]
fn duration_flags_out_of_bounds_are_usage_errors() {
    let env = Env::new();
    for args in [
        &["provider", "register", "--ttl", "1000000d"][..],
        &["provider", "register", "--ttl", "0s"],
        &["agent", "enter", "--id", "a", "--ttl", "1000000000d"],
        &["agent", "enter", "--id", "a", "--ttl", "0s"],
        &["daemon", "--tick", "0s"],
        &["daemon", "--tick", "2h"],
        &["daemon", "--hook-timeout", "0s"],
        &["wait", "x", "--timeout", "1000000d"],
        &["ask", "-", "--wait", "--timeout", "1000000d"],
        &["answer", "--ttl", "1000000d"],
    ] {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let r = env.run(&all);
        assert_eq!(r.error_code(), "USAGE", "{args:?}: {r:?}");
        assert_eq!(r.code, 2, "{args:?}");
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains("out of range"), "{args:?}: {msg}");
    }
    // The bounds themselves are accepted.
    env.json(&["provider", "register", "--ttl", "24h"]).ok();
    let e = env
        .json(&["agent", "enter", "--id", "a", "--ttl", "30d"])
        .ok()
        .json();
    assert!(e["expiresAt"].as_str().unwrap() > "2026", "{e}");
}

// ---------------------------------------------------------------------------------------
// Item 9: waiting without a file watch
// ---------------------------------------------------------------------------------------

#[test]
fn a_wait_that_cannot_watch_files_polls_and_gets_the_outcome() {
    let env = root_with_request("f1");
    // Eight descriptors: enough for SQLite, too few for the inotify watcher.
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 8 && exec \"$0\" --json wait f1 --timeout 60s")
        .arg(bin())
        .env("DSHQ_ROOT", env.root())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    env.json(&["answer", "f1", "--select", "SQLite"]).ok();
    let out: Run = child.wait_with_output().unwrap().into();
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["status"], "answered", "{out:?}");
}

// ---------------------------------------------------------------------------------------
// Item 13: an answer recorded while its outcome file cannot be written
// ---------------------------------------------------------------------------------------

/// Block `outbox/ID.json`: a non-empty directory in its place makes the rename fail, even
/// for root.
fn block_outcome(env: &Env, id: &str) -> std::path::PathBuf {
    let p = env.root().join("outbox").join(format!("{id}.json"));
    fs::create_dir_all(p.join("x")).unwrap();
    p
}

#[test]
fn an_answer_whose_outcome_file_fails_is_reported_as_recorded() {
    let env = Env::new();
    for id in ["b1", "b2", "b3"] {
        env.ask(&simple_request(id)).ok();
    }
    let blocked: Vec<_> = ["b1", "b2", "b3"]
        .iter()
        .map(|id| block_outcome(&env, id))
        .collect();
    let runs = [
        env.json(&["answer", "b1", "--select", "SQLite"]),
        env.json(&["cancel", "b2", "--reason", "no"]),
        env.json(&["abort", "b3"]),
    ];
    for r in &runs {
        assert_eq!(r.code, 0, "{r:?}");
        assert!(r.stderr.contains("recorded"), "{r:?}");
        assert_eq!(r.json()["outboxPending"], true, "{r:?}");
    }
    assert_eq!(runs[0].json()["status"], "answered");
    // A retry meets the final state: the answer was recorded once.
    let r = env.json(&["answer", "b1", "--select", "Postgres"]);
    assert_eq!(r.error_code(), "REQUEST_FINAL");

    for p in blocked {
        fs::remove_dir_all(p).unwrap();
    }
    let d = env.daemon();
    assert_eq!(env.wait_outcome("b1")["status"], "answered");
    assert_eq!(env.wait_outcome("b2")["error"]["code"], "ASK_CANCELLED");
    assert_eq!(env.wait_outcome("b3")["error"]["code"], "ASK_ABORTED");
    assert_eq!(d.stop(), 0);
}

// ---------------------------------------------------------------------------------------
// Key and secret files: one rule, owner-only
// ---------------------------------------------------------------------------------------

/// Start `dshq --json daemon ARGS` and wait until it exits (its result) or says it started
/// (then it is stopped: `None`).
pub(crate) fn daemon_start(env: &Env, args: &[&str]) -> Option<Run> {
    let log = env.dir.path().join("start.log");
    let mut child = env
        .command()
        .args(["--json", "daemon"])
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut exited = false;
    assert!(
        wait_until(DEADLINE, || {
            exited = child.try_wait().unwrap().is_some();
            exited
                || fs::read_to_string(&log)
                    .unwrap_or_default()
                    .contains("daemon started")
        }),
        "the daemon neither started nor exited"
    );
    if exited {
        return Some(child.wait_with_output().unwrap().into());
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// A refusal of `file` that says what to do.
fn assert_unsafe_key(r: &Run, file: &str) {
    assert_unsafe(r);
    let m = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(m.contains(file) && m.contains("chmod 600"), "{file}: {m}");
}

/// Each key and secret file of a root, as an operator writes their own (the umask's
/// 0644), stops the daemon at its start with UNSAFE_ROOT naming it and the fix, whether
/// or not this run would use it; owner-only, the daemon starts. A command that reads a key
/// refuses it the same way, and so do the secret files the flags name.
#[test]
fn a_key_file_others_may_read_stops_the_daemon_and_says_chmod_600() {
    let env = root_with_request("k1");
    assert!(
        env.root().join("audit.key").exists(),
        "the first event keys the chain"
    );
    let hex64 = "ab".repeat(32);
    let files: Vec<(&str, Option<String>)> = vec![
        ("audit.key", None),
        (
            "receipt.key",
            Some(format!("dshq receipt key v1\nseed {}\n", "07".repeat(32))),
        ),
        ("mail.key", Some(format!("{hex64}\n"))),
        (
            "webhook.key",
            Some("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n".into()),
        ),
        ("mcp-state.key", Some(format!("{hex64}\n"))),
        ("slack.token", Some("xoxb-1-2-3\n".into())),
        (
            "slack-signing-secret",
            Some("8f742231b10e8888abcd99yyyzzz85a5\n".into()),
        ),
    ];
    for (name, content) in &files {
        let p = env.root().join(name);
        if let Some(c) = content {
            fs::write(&p, c).unwrap();
        }
        for mode in [0o644, 0o640, 0o604] {
            chmod(&p, mode);
            let r = daemon_start(&env, &[])
                .unwrap_or_else(|| panic!("the daemon started with {name} mode {mode:o}"));
            assert_unsafe_key(&r, name);
        }
        chmod(&p, 0o600);
    }
    assert!(
        daemon_start(&env, &[]).is_none(),
        "every key owner-only: the daemon starts"
    );

    // Commands that read a key refuse it too.
    chmod(&env.root().join("receipt.key"), 0o644);
    assert_unsafe_key(&env.json(&["receipt", "key"]), "receipt.key");
    chmod(&env.root().join("receipt.key"), 0o600);
    env.json(&["receipt", "key"]).ok();
    chmod(&env.root().join("audit.key"), 0o644);
    assert_unsafe_key(&env.json(&["audit", "verify"]), "audit.key");
    chmod(&env.root().join("audit.key"), 0o600);
    env.json(&["audit", "verify"]).ok();

    // The secret files the flags name: the same rule, the same code.
    let pw = env.dir.path().join("smtp-password");
    fs::write(&pw, "hunter2\n").unwrap();
    chmod(&pw, 0o644);
    let r = daemon_start(
        &env,
        &[
            "--email",
            "default=ops@example.com",
            "--smtp",
            "smtp://127.0.0.1:9",
            "--smtp-plain",
            "--smtp-user",
            "dshq",
            "--smtp-password-file",
            pw.to_str().unwrap(),
            "--email-page-url",
            "http://127.0.0.1:9",
        ],
    )
    .expect("the daemon started with a 0644 SMTP password file");
    assert_unsafe_key(&r, "smtp-password");
    assert!(!r.stdout.contains("hunter2"), "{r:?}");
}
