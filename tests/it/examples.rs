//! The adoption kit: committed schemas match the types, committed examples validate, the
//! example askers in POSIX shell and Python work end to end against the real daemon, and
//! `dshq validate` reports the code ingestion would.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use crate::helpers::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn committed_schemas_match_the_types() {
    let env = Env::new();
    for which in ["request", "answer", "outcome"] {
        let generated = env.run(&["schema", which]).ok().stdout;
        let path = repo().join(format!("contrib/schema/{which}.schema.json"));
        let committed = fs::read_to_string(&path).unwrap();
        assert_eq!(
            committed,
            generated,
            "{} drifted from the types: regenerate with `dshq schema {which} > {}`",
            path.display(),
            path.display()
        );
    }
}

#[test]
fn every_committed_example_request_validates() {
    let env = Env::new();
    let mut files: Vec<String> = fs::read_dir(repo().join("contrib/examples"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    assert!(files.len() >= 3);
    let mut args = vec!["validate"];
    args.extend(files.iter().map(String::as_str));
    let r = env.json(&args).ok();
    for v in r.json().as_array().unwrap() {
        assert_eq!(v["ok"], true, "{v}");
    }
}

fn spawn_asker(
    env: &Env,
    program: &str,
    script: &Path,
    id: &str,
    request: &Path,
) -> std::process::Child {
    Command::new(program)
        .arg(script)
        .arg(id)
        .env("DSHQ_ROOT", env.root())
        .env("ASK_TIMEOUT", "120")
        .stdin(fs::File::open(request).unwrap())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
}

fn finish(child: std::process::Child) -> Run {
    let mut child = child;
    assert!(
        wait_until(DEADLINE, || child.try_wait().unwrap().is_some()),
        "asker did not finish"
    );
    child.wait_with_output().unwrap().into()
}

#[test]
fn shell_asker_end_to_end() {
    let env = Env::new();
    let _d = env.daemon();
    let child = spawn_asker(
        &env,
        "sh",
        &repo().join("contrib/examples/ask.sh"),
        "sh-1",
        &repo().join("contrib/examples/question.json"),
    );
    assert!(wait_until(DEADLINE, || env.json(&["show", "sh-1"]).code == 0));
    env.json(&["answer", "sh-1", "--select", "SQLite"]).ok();
    let out = finish(child);
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json();
    assert_eq!(v["id"], "sh-1");
    assert_eq!(v["answer"]["answers"][0]["selected"], json!(["SQLite"]));

    // An asker whose request is cancelled exits 1 with the error outcome.
    let child = spawn_asker(
        &env,
        "sh",
        &repo().join("contrib/examples/ask.sh"),
        "sh-2",
        &repo().join("contrib/examples/question.json"),
    );
    assert!(wait_until(DEADLINE, || env.json(&["show", "sh-2"]).code == 0));
    env.json(&["cancel", "sh-2", "--reason", "wrong team"]).ok();
    let out = finish(child);
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(out.json()["error"]["code"], "ASK_CANCELLED");
}

#[test]
fn python_asker_plan_review_end_to_end() {
    let env = Env::new();
    let _d = env.daemon();
    let script = repo().join("contrib/examples/ask.py");
    let plan = repo().join("contrib/examples/plan-review.json");
    let child = spawn_asker(&env, "python3", &script, "py-1", &plan);
    assert!(wait_until(DEADLINE, || env.json(&["show", "py-1"]).code == 0));
    env.json(&["answer", "py-1", "--select", "Approve"]).ok();
    let out = finish(child);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["decision"], "approved");
    assert!(out.stderr.contains("plan approved"), "{}", out.stderr);

    let child = spawn_asker(&env, "python3", &script, "py-2", &plan);
    assert!(wait_until(DEADLINE, || env.json(&["show", "py-2"]).code == 0));
    env.json(&[
        "answer",
        "py-2",
        "--custom",
        "split step 2 into two deploys",
    ])
    .ok();
    let out = finish(child);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.json()["decision"], "declined");
    assert!(out.stderr.contains("split step 2"), "{}", out.stderr);
}

fn staged(env: &Env, name: &str, v: &serde_json::Value) -> PathBuf {
    let dir = env.dir.path().join("staging-askers");
    fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
    p
}

fn drop_the_database() -> serde_json::Value {
    json!({"questions": [{
        "id": "plan", "question": "DROP the production database?",
        "detail": "1. DROP DATABASE prod;",
        "options": [{"label": "Revise"}, {"label": "Approve"}],
        "intent": {"kind": "plan-review", "approve": "Approve"}
    }]})
}

/// Asking something else under an id whose earlier request was approved must never read
/// that approval as the answer: both askers report DUPLICATE_ID and exit non-zero.
#[test]
fn askers_never_report_an_approval_given_to_another_request() {
    let env = Env::new();
    let _d = env.daemon();
    let plan = repo().join("contrib/examples/plan-review.json");
    let drop_db = staged(&env, "drop.json", &drop_the_database());
    for (program, script, id) in [
        ("python3", "contrib/examples/ask.py", "reuse-py"),
        ("sh", "contrib/examples/ask.sh", "reuse-sh"),
    ] {
        let script = repo().join(script);
        let child = spawn_asker(&env, program, &script, id, &plan);
        assert!(wait_until(DEADLINE, || env.json(&["show", id]).code == 0));
        env.json(&["answer", id, "--select", "Approve"]).ok();
        let out = finish(child);
        assert_eq!(out.code, 0, "{program}: {out:?}");
        assert_eq!(out.json()["decision"], "approved");

        let out = finish(spawn_asker(&env, program, &script, id, &drop_db));
        assert_ne!(
            out.code, 0,
            "{program} took another request's approval: {out:?}"
        );
        assert!(
            !out.stderr.contains("plan approved"),
            "{program}: {}",
            out.stderr
        );
        assert!(out.stderr.contains("DUPLICATE_ID"), "{program}: {out:?}");
        assert!(
            !out.stdout.contains("\"approved\""),
            "{program} printed the other request's outcome as its own: {}",
            out.stdout
        );
    }
}

/// An earlier attempt was rejected (BAD_REQUEST); the fixed request waits in the inbox
/// while no daemon runs. The asker must wait for its own outcome, not return the stale one.
#[test]
fn askers_ignore_the_stale_error_outcome_of_an_earlier_attempt() {
    let env = Env::new();
    let typo = staged(
        &env,
        "typo.json",
        &json!({"questions": [{"id": "db", "question": "Which?", "mutliSelect": true}]}),
    );
    let fixed = repo().join("contrib/examples/question.json");
    for (program, script, id) in [
        ("python3", "contrib/examples/ask.py", "stale-py"),
        ("sh", "contrib/examples/ask.sh", "stale-sh"),
    ] {
        let script = repo().join(script);
        let d = env.daemon();
        let out = finish(spawn_asker(&env, program, &script, id, &typo));
        assert_eq!(out.code, 1, "{program}: {out:?}");
        assert!(out.stderr.contains("BAD_REQUEST"), "{program}: {out:?}");
        env.wait_outcome(id); // the rejection left an error outcome
        d.stop();

        let mut child = spawn_asker(&env, program, &script, id, &fixed);
        assert!(wait_until(DEADLINE, || !env.names("inbox/new").is_empty()
            || child.try_wait().unwrap().is_some()));
        let d = env.daemon();
        // Pending, not only shown: `show` finds the earlier rejection under the same id
        // before the fixed request is ingested, and an answer then would fail.
        assert!(
            wait_until(DEADLINE, || {
                let shown = env.json(&["show", id]);
                (shown.code == 0 && shown.json()["status"] == "pending")
                    || child.try_wait().unwrap().is_some()
            }),
            "{}",
            d.log_text()
        );
        env.json(&["answer", id, "--select", "SQLite"]).ok();
        let out = finish(child);
        assert_eq!(out.code, 0, "{program} returned a stale outcome: {out:?}");
        assert_eq!(
            out.json()["answer"]["answers"][0]["selected"],
            json!(["SQLite"])
        );
        d.stop();
    }
}

/// A retry with the *same* content after a rejection whose cause was outside the request
/// (`NO_PROVIDER`: nobody was registered yet). The earlier attempt's error outcome carries
/// the same digest, so an asker that took any outcome with its digest reported
/// `NO_PROVIDER` for the retry at once, while the retry was accepted and waited for a
/// human. A rejection of the asker's own file is told by `rejected/NAME.error.json`; an
/// outcome that is a rejection is never the answer to a file it dropped.
#[test]
fn askers_retrying_the_same_request_ignore_its_earlier_rejection() {
    let env = Env::new();
    for (program, script, id) in [
        ("python3", "contrib/examples/ask.py", "retry-py"),
        ("sh", "contrib/examples/ask.sh", "retry-sh"),
    ] {
        let context = format!("ctx-{id}");
        let request = staged(
            &env,
            &format!("{id}.json"),
            &json!({"context": context, "requireProvider": true, "questions": [
                {"id": "go", "question": "Deploy?", "options": [{"label": "yes"}, {"label": "no"}]}
            ]}),
        );
        let script = repo().join(script);
        let d = env.daemon();
        let out = finish(spawn_asker(&env, program, &script, id, &request));
        assert_eq!(out.code, 1, "{program}: {out:?}");
        assert!(out.stderr.contains("NO_PROVIDER"), "{program}: {out:?}");
        env.wait_outcome(id); // the rejection left an error outcome with this digest
        d.stop();

        // A reviewer registers; the asker retries the very same request.
        let token = env
            .run(&["provider", "register", "--context", &context])
            .ok();
        let token = token.stdout.trim().to_string();
        let mut child = spawn_asker(&env, program, &script, id, &request);
        assert!(wait_until(DEADLINE, || !env.names("inbox/new").is_empty()
            || child.try_wait().unwrap().is_some()));
        let d = env.daemon();
        assert!(
            wait_until(DEADLINE, || env
                .json(&["show", id])
                .json()
                .get("status")
                .is_some_and(|s| s == "pending")
                || child.try_wait().unwrap().is_some()),
            "{}",
            d.log_text()
        );
        let _ = env.json(&["answer", id, "--lease", &token, "--select", "yes"]);
        let out = finish(child);
        assert_eq!(
            out.code, 0,
            "{program} reported the earlier rejection: {out:?}"
        );
        assert_eq!(
            out.json()["answer"]["answers"][0]["selected"],
            json!(["yes"])
        );
        d.stop();
    }
}

/// The askers compute the digest themselves (Python's json, jq): on a request with what
/// could make the canonical forms differ (non-ASCII and control characters, the
/// `multi_select` alias, nulls, nested meta with floats), they must agree with dshq, or
/// they would never see their answer.
#[test]
fn askers_compute_the_digest_dshq_computes() {
    let env = Env::new();
    let _d = env.daemon();
    let tricky = json!({
        "questions": [{"id": "q", "question": "é \u{1} \"x\" \t ✓ 𝄞 \\ /", "multi_select": true,
            "detail": null, "header": "H\u{2028}",
            "options": [{"label": "A", "description": null}, {"label": "B"}]}],
        "meta": {"z": [1, 2.5, {"k": null}], "ä": "b", "a": -3, "": {}},
        "timeout": "1h"
    });
    let file = staged(&env, "tricky.json", &tricky);
    for (program, script, id) in [
        ("python3", "contrib/examples/ask.py", "tricky-py"),
        ("sh", "contrib/examples/ask.sh", "tricky-sh"),
    ] {
        let child = spawn_asker(&env, program, &repo().join(script), id, &file);
        assert!(wait_until(DEADLINE, || env.json(&["show", id]).code == 0));
        env.json(&["answer", id, "--select", "A", "--select", "B"])
            .ok();
        let out = finish(child);
        assert_eq!(
            out.code, 0,
            "{program} did not recognise its own outcome: {out:?}"
        );
        assert_eq!(
            out.json()["answer"]["answers"][0]["selected"],
            json!(["A", "B"])
        );
    }
}

#[test]
fn validate_reports_the_code_ingestion_would() {
    let env = Env::new();
    let staging = env.dir.path().join("staging");
    fs::create_dir_all(&staging).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("ok.json", serde_json::to_vec(&simple_request("ok")).unwrap()),
        ("notjson.json", b"{nope".to_vec()),
        ("typo.json", br#"{"questions":[{"id":"q","question":"?","mutliSelect":true}]}"#.to_vec()),
        ("bad id!.json", br#"{"questions":[{"id":"q","question":"?"}]}"#.to_vec()),
        ("empty.json", br#"{"questions":[]}"#.to_vec()),
        ("late.json", br#"{"deadline":"2001-01-01T00:00:00Z","questions":[{"id":"q","question":"?"}]}"#.to_vec()),
        (
            "intent.json",
            br#"{"questions":[{"id":"p","question":"?","options":[{"label":"Yes"}],"intent":{"kind":"plan-review","approve":"Yes"}}]}"#
                .to_vec(),
        ),
        ("big.json", vec![b' '; 2 * 1024 * 1024]),
        ("notes.txt", b"hi".to_vec()),
    ];
    for (name, bytes) in &cases {
        fs::write(staging.join(name), bytes).unwrap();
    }
    std::os::unix::fs::symlink(staging.join("ok.json"), staging.join("link.json")).unwrap();
    let mut names: Vec<String> = cases.iter().map(|(n, _)| n.to_string()).collect();
    names.push("link.json".into());

    // Offline verdicts.
    let paths: Vec<String> = names
        .iter()
        .map(|n| staging.join(n).display().to_string())
        .collect();
    let mut args = vec!["validate"];
    args.extend(paths.iter().map(String::as_str));
    let r = env.json(&args);
    assert_ne!(r.code, 0, "some files are invalid");
    let verdicts = r.json();
    let offline: Vec<Option<String>> = verdicts
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["error"]["code"].as_str().map(str::to_string))
        .collect();

    // The same files through the daemon.
    let d = env.daemon();
    let inbox = env.root().join("inbox/new");
    for n in &names {
        fs::rename(staging.join(n), inbox.join(n)).unwrap();
    }
    assert!(wait_until(DEADLINE, || env.names("inbox/new").is_empty()));
    for (n, off) in names.iter().zip(&offline) {
        let stem = n.strip_suffix(".json").unwrap_or(n);
        let err = env
            .root()
            .join("rejected")
            .join(format!("{stem}.error.json"));
        let ingested: Option<String> = fs::read_to_string(&err).ok().map(|s| {
            serde_json::from_str::<serde_json::Value>(&s).unwrap()["code"]
                .as_str()
                .unwrap()
                .to_string()
        });
        assert_eq!(&ingested, off, "{n}: ingestion and validate disagree");
    }
    assert_eq!(offline[0], None, "ok.json is valid");
    drop(d);
}

#[test]
fn completions_man_and_version() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = env.run(&["completions", shell]).ok().stdout;
        assert!(out.contains("dshq"), "{shell}");
        assert!(out.contains("provider"), "{shell}: subcommands present");
    }
    let man = env.run(&["man"]).ok().stdout;
    assert!(man.starts_with(".ie") || man.contains(".TH"), "roff output");
    let v = env.run(&["--version"]).ok().stdout;
    assert!(v.starts_with("dshq "), "{v}");
}
