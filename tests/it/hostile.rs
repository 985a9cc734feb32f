//! Hostile inputs in the file loop: names too long for derived names, hard links, lease
//! secrets in rejected answer files, names that try to forge log lines, floods of bad
//! files and batches of large ones. No single file may stop or starve the others.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use serde_json::json;

use crate::helpers::*;

fn db(env: &Env) -> rusqlite::Connection {
    rusqlite::Connection::open(env.root().join("dshq.db")).unwrap()
}

fn count(env: &Env, status: &str) -> i64 {
    db(env)
        .query_row(
            "SELECT COUNT(*) FROM requests WHERE status = ?1",
            [status],
            |r| r.get(0),
        )
        .unwrap()
}

/// The error code of the one reason file in `dir` whose input is not one of `except`.
fn reason_files(env: &Env, dir: &str) -> Vec<(String, serde_json::Value)> {
    env.names(dir)
        .into_iter()
        .filter(|n| n.ends_with(".error.json"))
        .map(|n| {
            let v =
                serde_json::from_str(&fs::read_to_string(env.root().join(dir).join(&n)).unwrap())
                    .unwrap();
            (n, v)
        })
        .collect()
}

#[test]
fn one_long_file_name_does_not_stop_ingestion() {
    let env = Env::new();
    let new = env.root().join("inbox/new");
    fs::create_dir_all(&new).unwrap();
    let long = format!("{}.json", "L".repeat(245));
    assert_eq!(long.len(), 250);
    fs::write(new.join(&long), b"{not json").unwrap();
    // A non-UTF-8 name whose readable form would overflow NAME_MAX when spelled out.
    let mut bad = vec![b'n'; 100];
    bad.push(0xff);
    bad.extend_from_slice(b".json");
    fs::write(new.join(std::ffi::OsStr::from_bytes(&bad)), b"raw").unwrap();
    for i in 0..600 {
        fs::write(
            new.join(format!("v{i}.json")),
            serde_json::to_vec(&simple_request(&format!("v{i}"))).unwrap(),
        )
        .unwrap();
    }
    let d = env.daemon();
    assert!(
        wait_until(DEADLINE, || env.names("inbox/new").is_empty()),
        "inbox not drained: {} left",
        env.names("inbox/new").len()
    );
    assert_eq!(count(&env, "pending"), 600);
    let reasons = reason_files(&env, "rejected");
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    for (name, v) in &reasons {
        assert!(name.len() <= 255);
        assert_eq!(v["code"], "BAD_REQUEST", "{name}");
    }
    // The long name's reason is found by the name's start and says the whole name.
    let (_, v) = reasons.iter().find(|(n, _)| n.starts_with("LLLL")).unwrap();
    assert!(v["message"].as_str().unwrap().contains(&long), "{v}");
    // Both inputs are kept beside their reasons.
    assert_eq!(
        env.names("rejected").len(),
        4,
        "{:?}",
        env.names("rejected")
    );

    // The same in answers/new: a long name is rejected, a valid answer beside it applies.
    let lease = env.register("alice", "default", "10m");
    let long_answer = format!("{}.json", "A".repeat(245));
    env.drop_answer(&long_answer, br#"{"lease":"x","cancel":"no"}"#);
    env.drop_answer(
        "v1.json",
        &serde_json::to_vec(
            &json!({"lease": lease, "answers": [{"id": "db", "selected": ["SQLite"]}]}),
        )
        .unwrap(),
    );
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    assert_eq!(env.wait_outcome("v1")["status"], "answered");
    let reasons = reason_files(&env, "answers/rejected");
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert_eq!(reasons[0].1["code"], "BAD_REQUEST");
    assert_eq!(env.names("answers/rejected").len(), 2);
    assert_eq!(d.stop(), 0);
}

#[test]
fn hard_links_are_refused_in_the_inbox_and_answers() {
    let env = Env::new();
    let d = env.daemon();
    let outside = env.dir.path().join("outside.json");
    fs::write(&outside, serde_json::to_vec(&simple_request("h")).unwrap()).unwrap();
    fs::hard_link(&outside, env.root().join("inbox/new/h.json")).unwrap();
    assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
    assert_eq!(env.json(&["show", "h"]).ok().json()["status"], "rejected");
    let v: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(env.root().join("rejected/h.error.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(v["code"], "BAD_REQUEST");
    assert!(v["message"].as_str().unwrap().contains("link"), "{v}");

    env.drop_file("r.json", &serde_json::to_vec(&simple_request("r")).unwrap());
    assert!(wait_until(DEADLINE, || env.json(&["show", "r"]).code == 0));
    let lease = env.register("alice", "default", "10m");
    let outside = env.dir.path().join("answer.json");
    fs::write(
        &outside,
        serde_json::to_vec(
            &json!({"lease": lease, "answers": [{"id": "db", "selected": ["SQLite"]}]}),
        )
        .unwrap(),
    )
    .unwrap();
    fs::hard_link(&outside, env.root().join("answers/new/r.json")).unwrap();
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    assert_eq!(env.json(&["show", "r"]).ok().json()["status"], "pending");
    let v: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(env.root().join("answers/rejected/r.error.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(v["code"], "BAD_REQUEST");
    assert_eq!(d.stop(), 0);
}

fn files_containing(dir: &Path, needle: &[u8], found: &mut Vec<String>) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let ft = e.file_type().unwrap();
        if ft.is_dir() {
            files_containing(&e.path(), needle, found);
        } else if ft.is_file() {
            let bytes = fs::read(e.path()).unwrap_or_default();
            if bytes.windows(needle.len()).any(|w| w == needle) {
                found.push(e.path().display().to_string());
            }
        }
    }
}

#[test]
fn rejected_answer_files_keep_no_lease_secret() {
    let env = Env::new();
    let d = env.daemon();
    env.drop_file("r.json", &serde_json::to_vec(&simple_request("r")).unwrap());
    assert!(wait_until(DEADLINE, || env.json(&["show", "r"]).code == 0));
    let lease = env.register("alice", "default", "10m");
    let (lease_id, secret) = lease.split_once('.').unwrap();
    // A well-formed answer that breaks the rules, and a malformed file: both carry the
    // live token.
    env.drop_answer(
        "r.json",
        &serde_json::to_vec(
            &json!({"lease": lease, "answers": [{"id": "db", "selected": ["Oracle"]}]}),
        )
        .unwrap(),
    );
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    env.drop_answer(
        "r.json",
        format!("{{\"lease\": \"{lease}\", \"answers\": [oops").as_bytes(),
    );
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    // A parse error quotes the value it choked on.
    env.drop_answer(
        "r.json",
        &serde_json::to_vec(&json!({"lease": lease, "answers": lease})).unwrap(),
    );
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    let kept: Vec<String> = env
        .names("answers/rejected")
        .into_iter()
        .filter(|n| !n.ends_with(".error.json"))
        .collect();
    assert_eq!(kept.len(), 3, "{kept:?}");
    for n in &kept {
        let s = fs::read_to_string(env.root().join("answers/rejected").join(n)).unwrap();
        // Everything but the secret is kept: the lease id for the audit, the answer.
        assert!(s.contains(&format!("{lease_id}.")), "{s}");
        assert!(s.contains("answers"), "{s}");
    }
    let mut found = Vec::new();
    files_containing(&env.root(), secret.as_bytes(), &mut found);
    assert!(found.is_empty(), "the lease secret is kept in {found:?}");
    assert!(!d.log_text().contains(secret));
    // The lease itself still works.
    env.json(&["provider", "heartbeat", "--lease", &lease]).ok();
    assert_eq!(d.stop(), 0);
}

#[test]
fn a_file_name_cannot_forge_a_log_line() {
    let env = Env::new();
    let d = env.daemon();
    let name = "evil\nERROR forged: all good\u{1b}[2J.txt";
    env.drop_file(name, b"x");
    assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
    assert!(wait_until(DEADLINE, || d
        .log_text()
        .contains("input rejected")));
    let log = d.log_text();
    assert!(
        !log.lines().any(|l| l.starts_with("ERROR forged")),
        "a forged line: {log}"
    );
    assert!(!log.contains('\u{1b}'), "a raw ESC: {log:?}");
    assert!(log.contains("evil\\nERROR forged"), "{log}");
    assert_eq!(d.stop(), 0);
}

#[test]
fn a_flood_of_bad_files_does_not_starve_a_valid_one() {
    let env = Env::new();
    let new = env.root().join("inbox/new");
    fs::create_dir_all(&new).unwrap();
    let flood = 3000;
    for i in 0..flood {
        fs::write(new.join(format!("bad{i:05}.json")), b"").unwrap();
    }
    let _d = env.daemon_with(&["--batch", "16"], &[]);
    let bad_left = || {
        env.names("inbox/new")
            .iter()
            .filter(|n| n.starts_with("bad"))
            .count()
    };
    // The daemon is working on the flood.
    assert!(wait_until(DEADLINE, || bad_left() < flood));
    // Sorted last by name, dropped after the flood's listing.
    env.drop_file(
        "zzz.json",
        &serde_json::to_vec(&simple_request("zzz")).unwrap(),
    );
    assert!(wait_until(DEADLINE, || env.json(&["show", "zzz"]).code == 0));
    let left = bad_left();
    assert!(
        left > 0,
        "the valid file waited for the whole flood of bad files"
    );
    // And the flood itself is rejected in batches (every file gets its reason).
    assert!(
        wait_until(std::time::Duration::from_secs(60), || bad_left() == 0),
        "{} bad files left",
        bad_left()
    );
    assert_eq!(count(&env, "rejected"), flood as i64);
    assert_eq!(reason_files(&env, "rejected").len(), flood);
}

/// The daemon's peak resident set, in KiB.
fn peak_rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmHWM:")
}

/// A `kB` field of /proc/PID/status.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_batch_of_large_files_keeps_memory_bounded() {
    let env = Env::new();
    let new = env.root().join("inbox/new");
    fs::create_dir_all(&new).unwrap();
    let files = 200;
    for i in 0..files {
        let mut r = simple_request(&format!("big{i}"));
        r["questions"][0]["detail"] = json!("x".repeat(1_000_000));
        fs::write(
            new.join(format!("big{i}.json")),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
    }
    let d = env.daemon();
    // A deadline, not a sleep: 200 MB through a debug build on a loaded 2-core machine
    // has taken over two minutes.
    assert!(
        wait_until(std::time::Duration::from_secs(300), || env
            .names("inbox/new")
            .is_empty()),
        "not drained"
    );
    assert!(wait_until(DEADLINE, || count(&env, "pending") == files));
    let peak = peak_rss_kib(d.pid());
    eprintln!("peak RSS {peak} KiB");
    assert!(peak < 200 * 1024, "peak RSS {peak} KiB");
    // And it gives the memory back.
    let now = status_kib(d.pid(), "VmRSS:");
    eprintln!("RSS after {now} KiB");
    assert!(now < 64 * 1024, "RSS after the batches {now} KiB");
}

#[test]
fn one_unwritable_outcome_does_not_hold_back_the_others() {
    // An outcome file that cannot be written (here a non-empty directory in its place,
    // which stops even root's rename) stays pending; the outcomes after it are written.
    let env = Env::new();
    let _d = env.daemon();
    let lease = env.register("alice", "default", "10m");
    let ids = ["o1", "o2", "o3", "o4", "o5", "o6"];
    for id in ids {
        env.ask(&simple_request(id)).ok();
    }
    let blocked = env.root().join("outbox").join("o1.json");
    std::fs::create_dir_all(blocked.join("x")).unwrap();
    // Answer files: the daemon's pass writes the outcomes, the blocked one first in order.
    for id in ids {
        env.drop_answer(
            &format!("{id}.json"),
            &serde_json::to_vec(
                &serde_json::json!({"lease": lease, "answers": [{"id": "db", "selected": ["SQLite"]}]}),
            )
            .unwrap(),
        );
    }
    for id in &ids[1..] {
        assert_eq!(env.wait_outcome(id)["status"], "answered", "{id}");
    }
    assert_eq!(env.json(&["show", "o1"]).ok().json()["status"], "answered");
    // Cleared, the pending one is written on a later pass.
    std::fs::remove_dir_all(&blocked).unwrap();
    assert_eq!(env.wait_outcome("o1")["status"], "answered");
}

/// U+0000 in any text an asker or a reviewer sends is refused with its code, and stops
/// nothing, on SQLite and on PostgreSQL (whose `text` cannot hold it: before, one such
/// question failed the write of every file batched with it, at every retry, and the inbox
/// stood still). Each input gets its verdict beside a valid file: a question that writes
/// `\u0000` is rejected `BAD_REQUEST`; a file with raw NUL bytes is rejected and kept
/// (its text recorded with U+FFFD); an abort whose reason holds NUL bytes aborts; an
/// answer whose free text writes `\u0000` is refused `BAD_ANSWER`.
#[test]
fn a_nul_in_any_text_is_refused_and_stops_nothing_on_either_store() {
    let url = crate::throwaway::shared()
        .fresh_database()
        .expect("a fresh PostgreSQL database");
    for env in [Env::new(), Env::on_store(&url)] {
        let _d = env.daemon();
        env.drop_file(
            "nulq.json",
            br#"{"id":"nulq","questions":[{"id":"q","question":"Which\u0000one?","options":[{"label":"a"},{"label":"b"}]}]}"#,
        );
        env.drop_file("nulraw.json", b"{\"id\":\"nulraw\",\0\0}");
        env.drop_file(
            "ok.json",
            &serde_json::to_vec(&simple_request("ok")).unwrap(),
        );
        env.drop_file(
            "gone.json",
            &serde_json::to_vec(&simple_request("gone")).unwrap(),
        );
        assert!(
            wait_until(DEADLINE, || env.json(&["show", "gone"]).code == 0),
            "a valid request beside them is accepted"
        );
        env.drop_file("gone.abort", b"because\0\0of this");
        assert!(wait_until(DEADLINE, || {
            env.json(&["show", "gone"]).json()["status"] == "aborted"
        }));
        assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
        assert_eq!(env.json(&["show", "ok"]).json()["status"], "pending");
        for id in ["nulq", "nulraw"] {
            let outcome = env.outcome(id).expect("an error outcome");
            assert_eq!(outcome["error"]["code"], "BAD_REQUEST", "{id}: {outcome}");
        }
        let reasons = reason_files(&env, "rejected");
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons
                .iter()
                .any(|(_, r)| r["message"].as_str().unwrap().contains("U+0000")),
            "{reasons:?}"
        );
        // A reviewer's free text holding U+0000 is refused, and the request stays open.
        let r = env.run_stdin(
            &["--json", "answer", "ok", "--answers", "-"],
            r#"{"answers":[{"id":"db","custom":"x\u0000y"}]}"#,
        );
        assert_ne!(r.code, 0, "{}", r.stderr);
        assert_eq!(r.error_code(), "BAD_ANSWER", "{}", r.stderr);
        assert_eq!(env.json(&["show", "ok"]).json()["status"], "pending");
        assert_eq!(env.run(&["audit", "verify"]).code, 0);
    }
}
