//! Retention (`dshq prune`, `dshq daemon --prune-after`): the export holds exactly what
//! was removed, open requests survive, the record still verifies (and tampering with the
//! pruned range is still found), a pruned id asked again is a new request, and a prune
//! killed before its commit loses nothing, with the daemon running.

use std::fs;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::helpers::{simple_request, wait_until, Env, DEADLINE};

fn answer(env: &Env, id: &str) {
    env.json(&["answer", id, "--select", "Postgres", "--name", "alice"])
        .ok();
}

fn ask(env: &Env, id: &str) {
    env.ask(&simple_request(id)).ok();
}

fn lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON record"))
        .collect()
}

fn export_all(env: &Env) -> Vec<Value> {
    let out = env.run(&["export"]).ok();
    out.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ids(env: &Env) -> Vec<String> {
    let mut v: Vec<String> = env
        .json(&["list", "--all"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

fn verify(env: &Env) -> Run2 {
    let r = env.json(&["audit", "verify"]);
    Run2 {
        ok: r.code == 0,
        text: format!("{} {}", r.stdout, r.stderr),
    }
}

struct Run2 {
    ok: bool,
    text: String,
}

/// a and b finished before the cut, then c pending, e answered after the cut, z newest.
fn store_with_a_cut(env: &Env) -> String {
    ask(env, "a");
    ask(env, "b");
    answer(env, "a");
    env.json(&["abort", "b"]).ok();
    // A cut strictly after b's end and strictly before c's acceptance, in milliseconds.
    let ms = || jiff::Timestamp::now().as_millisecond();
    let t0 = ms();
    assert!(wait_until(DEADLINE, || ms() >= t0 + 2));
    let t = jiff::Timestamp::from_millisecond(ms()).unwrap();
    assert!(wait_until(DEADLINE, || ms() >= t.as_millisecond() + 2));
    ask(env, "c");
    ask(env, "e");
    answer(env, "e");
    ask(env, "z");
    t.to_string()
}

#[test]
fn the_export_holds_exactly_what_was_removed_and_open_requests_survive() {
    let env = Env::new();
    let cut = store_with_a_cut(&env);
    assert!(env.outcome("a").is_some() && env.outcome("e").is_some());
    let before = export_all(&env);
    let file = env.dir.path().join("pruned.ndjson");
    let r = env
        .json(&[
            "prune",
            "--before",
            &cut,
            "--export",
            file.to_str().unwrap(),
        ])
        .ok()
        .json();
    assert_eq!(r["requests"], 2, "{r}");
    // It reached the cut (c, pending, came after it).
    assert_eq!(r["stoppedAt"], Value::Null, "{r}");
    // Exactly the rows, questions and events removed, in the export's own format.
    let upto = r["uptoSeq"].as_i64().unwrap();
    let seqs: Vec<i64> = before
        .iter()
        .filter(|x| x["type"] == "request" && (x["id"] == "a" || x["id"] == "b"))
        .map(|x| x["seq"].as_i64().unwrap())
        .collect();
    let want: Vec<&Value> = before
        .iter()
        .filter(|x| match x["type"].as_str().unwrap() {
            "request" => seqs.contains(&x["seq"].as_i64().unwrap()),
            "question" => seqs.contains(&x["requestSeq"].as_i64().unwrap()),
            "event" => x["seq"].as_i64().unwrap() <= upto,
            _ => false,
        })
        .collect();
    let got = lines(&file);
    assert_eq!(got.iter().collect::<Vec<_>>(), want);
    assert_eq!(r["records"], got.len());
    // What stays is all there, as it was.
    assert_eq!(ids(&env), ["c", "e", "z"]);
    let after = export_all(&env);
    for x in before.iter().filter(|x| !want.contains(x)) {
        assert!(after.contains(x), "{x} is still in the store");
    }
    // The pruned requests' outcome files went with them; the others' stay.
    assert!(env.outcome("a").is_none() && env.outcome("b").is_none());
    assert!(env.outcome("e").is_some());
    let v = verify(&env);
    assert!(v.ok, "{}", v.text);
    // An existing file is never replaced.
    let again = env.json(&[
        "prune",
        "--before",
        &cut,
        "--export",
        file.to_str().unwrap(),
    ]);
    assert_ne!(again.code, 0);
    assert_eq!(lines(&file), got);
}

#[test]
fn pending_and_claimed_requests_are_never_pruned_and_the_database_refuses_it() {
    let env = Env::new();
    ask(&env, "p");
    ask(&env, "k");
    let lease = env.register("bob", "default", "10m");
    env.json(&["claim", "k", "--lease", &lease]).ok();
    ask(&env, "a");
    env.json(&["answer", "a", "--select", "Postgres", "--lease", &lease])
        .ok();
    ask(&env, "z");
    let file = env.dir.path().join("x.ndjson");
    let r = env
        .json(&[
            "prune",
            "--before",
            "0s",
            "--export",
            file.to_str().unwrap(),
        ])
        .ok()
        .json();
    assert_eq!(r["requests"], 0, "{r}");
    assert!(
        r["stoppedAt"]
            .as_str()
            .unwrap()
            .contains("request p is pending"),
        "{r}"
    );
    assert_eq!(ids(&env), ["a", "k", "p", "z"]);
    // Even with the guard set by hand, the triggers refuse open requests.
    let conn = rusqlite::Connection::open(env.root().join("dshq.db")).unwrap();
    conn.execute("INSERT INTO prune_guard VALUES (0, 99999999999999)", [])
        .unwrap();
    for id in ["p", "k"] {
        let e = conn
            .execute("DELETE FROM requests WHERE id = ?1", [id])
            .unwrap_err();
        assert!(e.to_string().contains("cannot be deleted"), "{e}");
    }
    conn.execute("DELETE FROM prune_guard", []).unwrap();
    // And without it, nothing at all.
    assert!(conn
        .execute("DELETE FROM requests WHERE id = 'a'", [])
        .is_err());
    assert!(conn
        .execute("DELETE FROM events WHERE seq = 1", [])
        .is_err());
    assert!(verify(&env).ok);
}

fn pruned_env() -> (Env, String) {
    let env = Env::new();
    let cut = store_with_a_cut(&env);
    let file = env.dir.path().join("p.ndjson");
    env.json(&[
        "prune",
        "--before",
        &cut,
        "--export",
        file.to_str().unwrap(),
    ])
    .ok();
    (env, cut)
}

fn db(env: &Env) -> rusqlite::Connection {
    rusqlite::Connection::open(env.root().join("dshq.db")).unwrap()
}

#[test]
fn verify_passes_after_pruning_and_still_finds_tampering() {
    // Each case on a store of its own.
    type Tamper<'a> = &'a dyn Fn(&rusqlite::Connection, &Env);
    let cases: &[(&str, Tamper)] = &[
        ("an event of the pruned range inserted back", &|c, env| {
            let rec = lines(&env.dir.path().join("p.ndjson"))
                .into_iter()
                .find(|x| x["type"] == "event")
                .unwrap();
            c.execute(
                "INSERT INTO events VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                rusqlite::params![
                    rec["seq"].as_i64(),
                    rec["atMs"].as_i64(),
                    rec["kind"].as_str(),
                    rec["requestId"].as_str(),
                    rec["leaseId"].as_i64(),
                    rec["agentId"].as_str(),
                    rec["actor"].as_str(),
                    rec["data"].as_str(),
                    rec["prevHash"].as_str(),
                    rec["hash"].as_str()
                ],
            )
            .unwrap();
        }),
        ("the checkpoint's claim changed", &|c, _| {
            c.execute_batch("DROP TRIGGER events_no_update").unwrap();
            c.execute(
                "UPDATE events SET data = json_set(data, '$.prunedSeq', 1) WHERE kind = 'pruned'",
                [],
            )
            .unwrap();
        }),
        ("the checkpoint's open ids changed", &|c, _| {
            c.execute_batch("DROP TRIGGER events_no_update").unwrap();
            c.execute(
                "UPDATE events SET data = json_set(data, '$.openIds', json('[\"e\"]')) WHERE kind = 'pruned'",
                [],
            )
            .unwrap();
        }),
        (
            "more of the log removed than the checkpoint covers",
            &|c, _| {
                c.execute_batch("DROP TRIGGER events_no_delete").unwrap();
                c.execute(
                    "DELETE FROM events WHERE seq = (SELECT MIN(seq) FROM events)",
                    [],
                )
                .unwrap();
            },
        ),
        ("a request deleted through a guard set by hand", &|c, _| {
            c.execute("INSERT INTO prune_guard VALUES (0, 99999999999999)", [])
                .unwrap();
            c.execute(
                "DELETE FROM questions WHERE request_seq = (SELECT seq FROM requests WHERE id = 'e')",
                [],
            )
            .unwrap();
            c.execute("DELETE FROM requests WHERE id = 'e'", [])
                .unwrap();
            c.execute("DELETE FROM prune_guard", []).unwrap();
        }),
        ("the guard left set", &|c, _| {
            c.execute("INSERT INTO prune_guard VALUES (0, 0)", [])
                .unwrap();
        }),
    ];
    for (what, tamper) in cases {
        let (env, _) = pruned_env();
        let v = verify(&env);
        assert!(v.ok, "verify after prune: {}", v.text);
        tamper(&db(&env), &env);
        let v = verify(&env);
        assert!(!v.ok, "{what}: verify still passes");
        assert!(v.text.contains("AUDIT_BROKEN"), "{what}: {}", v.text);
    }
}

#[test]
fn an_anchor_inside_the_pruned_range_is_reported_not_passed() {
    let env = Env::new();
    ask(&env, "a");
    answer(&env, "a");
    let old_head = env.dir.path().join("old.head");
    fs::copy(env.root().join("audit.head"), &old_head).unwrap();
    ask(&env, "b");
    env.json(&["abort", "b"]).ok();
    ask(&env, "z");
    let file = env.dir.path().join("p.ndjson");
    let r = env
        .json(&[
            "prune",
            "--before",
            "0s",
            "--export",
            file.to_str().unwrap(),
        ])
        .ok()
        .json();
    assert_eq!(r["requests"], 2, "{r}");
    assert!(verify(&env).ok);
    let v = env.json(&["audit", "verify", "--anchor", old_head.to_str().unwrap()]);
    assert_ne!(v.code, 0);
    assert!(v.stdout.contains("pruned"), "{}", v.stdout);
}

#[test]
fn a_pruned_id_asked_again_is_a_new_request() {
    let (env, _) = pruned_env();
    assert!(env.json(&["show", "a"]).code != 0);
    // The same content under the same id: accepted anew, pending, not the old answer.
    let r = env.ask(&simple_request("a")).ok().json();
    assert_eq!(r["status"], "pending", "{r}");
    assert!(env.outcome("a").is_none());
    assert!(verify(&env).ok);
    answer(&env, "a");
    let v = verify(&env);
    assert!(v.ok, "{}", v.text);
    // Its events are its own: the new acceptance and the new answer.
    let evs = env.json(&["events", "a"]).ok().json();
    let kinds: Vec<&str> = evs
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["accepted", "answered"]);
}

#[test]
fn requests_answered_after_the_prefix_are_pruned_whole_and_verify() {
    // A queue that never drains: every prefix ends with requests still to be answered.
    let env = Env::new();
    ask(&env, "r1");
    ask(&env, "r2");
    answer(&env, "r1");
    ask(&env, "r3");
    answer(&env, "r2");
    ask(&env, "r4");
    answer(&env, "r3");
    ask(&env, "r5");
    let f1 = env.dir.path().join("1.ndjson");
    let r = env
        .json(&["prune", "--before", "0s", "--export", f1.to_str().unwrap()])
        .ok()
        .json();
    assert_eq!(r["requests"], 3, "{r}");
    assert_eq!(ids(&env), ["r4", "r5"]);
    let v = verify(&env);
    assert!(v.ok, "{}", v.text);
    answer(&env, "r4");
    answer(&env, "r5");
    ask(&env, "r6");
    let f2 = env.dir.path().join("2.ndjson");
    let r = env
        .json(&["prune", "--before", "0s", "--export", f2.to_str().unwrap()])
        .ok()
        .json();
    assert_eq!(r["requests"], 2, "{r}");
    assert_eq!(ids(&env), ["r6"]);
    let v = verify(&env);
    assert!(v.ok, "{}", v.text);
    // Every event ever written is in exactly one export, or still in the log.
    let mut seqs: Vec<i64> = lines(&f1)
        .into_iter()
        .chain(lines(&f2))
        .chain(export_all(&env))
        .filter(|x| x["type"] == "event")
        .map(|x| x["seq"].as_i64().unwrap())
        .collect();
    seqs.sort();
    let n = seqs.len() as i64;
    assert_eq!(seqs, (1..=n).collect::<Vec<_>>());
}

#[test]
fn a_prune_killed_before_its_commit_loses_nothing_while_the_daemon_runs() {
    let env = Env::new();
    let _d = env.daemon();
    let cut = store_with_a_cut(&env);
    let before = export_all(&env);
    let pause = env.dir.path().join("paused");
    let f1 = env.dir.path().join("1.ndjson");
    let mut child = env
        .command()
        .env("DSHQ_TEST_PRUNE_PAUSE", &pause)
        .args(["prune", "--before", &cut, "--export", f1.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(DEADLINE, || pause.exists()),
        "the prune did not reach its pause"
    );
    // The export is complete and durable before anything is removed...
    let exported = lines(&f1);
    assert!(exported
        .iter()
        .any(|x| x["type"] == "request" && x["id"] == "a"));
    // ... and meanwhile the daemon waits for the write lock: a file dropped now is
    // ingested once the prune is gone.
    env.drop_file(
        "late.json",
        &serde_json::to_vec(&simple_request("late")).unwrap(),
    );
    child.kill().unwrap();
    child.wait().unwrap();
    // Nothing was removed.
    let now = export_all(&env);
    for x in before.iter().filter(|x| x["type"] != "lease") {
        assert!(now.contains(x), "{x} survived the kill");
    }
    assert!(verify(&env).ok);
    assert!(wait_until(DEADLINE, || env.json(&["show", "late"]).code == 0));
    // The prune made again writes the same records and removes them.
    fs::remove_file(&pause).ok();
    let f2 = env.dir.path().join("2.ndjson");
    env.json(&["prune", "--before", &cut, "--export", f2.to_str().unwrap()])
        .ok();
    assert_eq!(lines(&f2), exported);
    assert_eq!(ids(&env), ["c", "e", "late", "z"]);
    let v = verify(&env);
    assert!(v.ok, "{}", v.text);
}

#[test]
fn the_daemon_prunes_on_a_schedule() {
    let env = Env::new();
    ask(&env, "a");
    answer(&env, "a");
    ask(&env, "z");
    let dir = env.dir.path().join("exports");
    let _d = env.daemon_with(
        &[
            "--prune-after",
            "1ms",
            "--prune-export-dir",
            dir.to_str().unwrap(),
            "--prune-every",
            "1s",
        ],
        &[],
    );
    assert!(wait_until(DEADLINE, || env.json(&["show", "a"]).code != 0));
    let files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(lines(&files[0]).iter().any(|x| x["id"] == "a"));
    assert!(verify(&env).ok);
}

#[test]
fn a_rejection_under_a_pruned_requests_id_does_not_break_verify() {
    // r1 is accepted, then refused once under its id (other content), then answered;
    // the prefix ends before the refusal (r2 stays pending), so r1's answer lies after it.
    let env = Env::new();
    ask(&env, "r1");
    ask(&env, "r2");
    let mut other = simple_request("r1");
    other["questions"][0]["question"] = "Something else?".into();
    assert_eq!(env.ask(&other).error_code(), "DUPLICATE_ID");
    answer(&env, "r1");
    ask(&env, "z");
    let f = env.dir.path().join("p.ndjson");
    let r = env
        .json(&["prune", "--before", "0s", "--export", f.to_str().unwrap()])
        .ok()
        .json();
    assert_eq!(r["requests"], 1, "{r}");
    let v = verify(&env);
    assert!(v.ok, "{}", v.text);
}

#[test]
fn prune_on_a_postgresql_store_exports_exactly_what_it_removed_and_verifies() {
    let url = crate::throwaway::shared()
        .fresh_database()
        .expect("a fresh database");
    let env = Env::on_store(&url);
    let cut = store_with_a_cut(&env);
    let before = export_all(&env);
    let file = env.dir.path().join("pruned.ndjson");
    let r = env
        .json(&[
            "prune",
            "--before",
            &cut,
            "--export",
            file.to_str().unwrap(),
        ])
        .ok()
        .json();
    assert_eq!(r["requests"], 2, "{r}");
    assert_eq!(r["stoppedAt"], Value::Null, "{r}");
    let upto = r["uptoSeq"].as_i64().unwrap();
    let seqs: Vec<i64> = before
        .iter()
        .filter(|x| x["type"] == "request" && (x["id"] == "a" || x["id"] == "b"))
        .map(|x| x["seq"].as_i64().unwrap())
        .collect();
    let want: Vec<&Value> = before
        .iter()
        .filter(|x| match x["type"].as_str().unwrap() {
            "request" => seqs.contains(&x["seq"].as_i64().unwrap()),
            "question" => seqs.contains(&x["requestSeq"].as_i64().unwrap()),
            "event" => x["seq"].as_i64().unwrap() <= upto,
            _ => false,
        })
        .collect();
    let got = lines(&file);
    assert_eq!(got.iter().collect::<Vec<_>>(), want);
    assert_eq!(r["records"], got.len());
    assert_eq!(ids(&env), ["c", "e", "z"]);
    let after = export_all(&env);
    for x in before.iter().filter(|x| !want.contains(x)) {
        assert!(after.contains(x), "{x} is still in the store");
    }
    let v = verify(&env);
    assert!(v.ok, "{}", v.text);
    // A second host of the same store (holding the same audit.key) verifies it too.
    let other = Env::on_store(&url);
    fs::create_dir_all(other.root()).unwrap();
    fs::copy(env.root().join("audit.key"), other.root().join("audit.key")).unwrap();
    let v = verify(&other);
    assert!(v.ok, "{}", v.text);
}
