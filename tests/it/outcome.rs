//! Which request an outcome answers (`requestDigest`), the repair of a stale error outcome
//! at start, and asking the way dsh does (no id, answers in question order, `multi_select`).

use std::fs;
use std::process::Stdio;

use serde_json::{json, Value};

use crate::helpers::*;

fn staged(env: &Env, name: &str, v: &Value) -> String {
    let dir = env.dir.path().join("staging");
    fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    fs::write(&p, serde_json::to_vec(v).unwrap()).unwrap();
    p.display().to_string()
}

fn digest_of(env: &Env, name: &str, v: &Value) -> String {
    let p = staged(env, name, v);
    let r = env.json(&["validate", &p]);
    r.json()[0]["requestDigest"]
        .as_str()
        .unwrap_or_else(|| panic!("validate prints the digest: {}", r.stdout))
        .to_string()
}

#[test]
fn outcomes_carry_the_digest_of_the_request_they_answer() {
    let env = Env::new();
    let asked = env.ask(&simple_request("d-1")).ok().json();
    let digest = asked["requestDigest"]
        .as_str()
        .expect("ask prints the digest");
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{digest}"
    );
    // validate computes the same digest offline, with or without the id.
    let mut no_id = simple_request("x");
    no_id.as_object_mut().unwrap().remove("id");
    assert_eq!(digest_of(&env, "d-1.json", &no_id), digest);

    env.json(&["answer", "d-1", "--select", "SQLite"]).ok();
    let outcome = env.wait_outcome("d-1");
    assert_eq!(outcome["requestDigest"], digest);
    assert_eq!(
        env.json(&["wait", "d-1"]).ok().json()["requestDigest"],
        digest
    );

    // Other content under the same id: DUPLICATE_ID, and the outcome that stays says it
    // answers another request.
    let mut other = simple_request("d-1");
    other["questions"][0]["question"] = json!("DROP the production database?");
    let r = env.ask(&other);
    assert_eq!(r.error_code(), "DUPLICATE_ID");
    let mut other_no_id = other.clone();
    other_no_id.as_object_mut().unwrap().remove("id");
    let other_digest = digest_of(&env, "other.json", &other_no_id);
    assert_ne!(other_digest, digest);
    assert_eq!(env.outcome("d-1").unwrap()["requestDigest"], digest);
}

#[test]
fn error_outcomes_of_rejected_inputs_carry_the_digest_when_it_parsed() {
    let env = Env::new();
    let _d = env.daemon();
    // Parses, but has no questions: EMPTY_QUESTIONS, with the digest of what was sent.
    let empty = json!({"questions": []});
    let want = digest_of(&env, "e-1.json", &empty);
    env.drop_file("e-1.json", &serde_json::to_vec(&empty).unwrap());
    let o = env.wait_outcome("e-1");
    assert_eq!(o["error"]["code"], "EMPTY_QUESTIONS");
    assert_eq!(o["requestDigest"], want);
    // Does not parse: the digest is null.
    env.drop_file("e-2.json", b"{nope");
    let o = env.wait_outcome("e-2");
    assert_eq!(o["error"]["code"], "BAD_REQUEST");
    assert!(o.as_object().unwrap().contains_key("requestDigest"), "{o}");
    assert_eq!(o["requestDigest"], Value::Null);
}

#[test]
fn a_stale_error_outcome_of_a_pending_request_is_removed_at_start() {
    // The state a SIGKILL leaves between committing an accepted resubmission and removing
    // the error outcome of its earlier rejection.
    let env = Env::new();
    env.ask(&simple_request("s-1")).ok();
    let stale = json!({"id": "s-1", "status": "error",
        "error": {"name": "UserQuestionError", "code": "BAD_REQUEST", "message": "earlier attempt"},
        "requestDigest": null, "createdAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:00Z"});
    let path = env.root().join("outbox/s-1.json");
    fs::write(&path, serde_json::to_vec_pretty(&stale).unwrap()).unwrap();
    // A final request's outcome is left alone.
    env.ask(&simple_request("s-2")).ok();
    env.json(&["answer", "s-2", "--select", "Postgres"]).ok();
    let kept = fs::read_to_string(env.root().join("outbox/s-2.json")).unwrap();

    let d = env.daemon();
    assert!(
        wait_until(DEADLINE, || !path.exists()),
        "the stale error outcome of pending s-1 is still there: {}",
        d.log_text()
    );
    assert_eq!(
        fs::read_to_string(env.root().join("outbox/s-2.json")).unwrap(),
        kept
    );
    // Answered now, s-1 gets its own outcome.
    env.json(&["answer", "s-1", "--select", "SQLite"]).ok();
    let o = env.wait_outcome("s-1");
    assert_eq!(o["status"], "answered");
}

#[test]
fn ask_file_without_id_takes_the_file_stem() {
    let env = Env::new();
    let mut req = simple_request("x");
    req.as_object_mut().unwrap().remove("id");
    let p = staged(&env, "from-stem.json", &req);
    let r = env.json(&["ask", &p]).ok();
    assert_eq!(r.json()["id"], "from-stem");
    assert_eq!(
        env.json(&["show", "from-stem"]).ok().json()["id"],
        "from-stem"
    );
}

#[test]
fn ask_stdin_without_id_generates_one_and_prints_it() {
    let env = Env::new();
    let mut req = simple_request("x");
    req.as_object_mut().unwrap().remove("id");
    let body = serde_json::to_string(&req).unwrap();
    let a = env.run_stdin(&["--json", "ask", "-"], &body).ok().json();
    let b = env.run_stdin(&["ask", "-"], &body).ok();
    let a_id = a["id"].as_str().unwrap().to_string();
    let b_id = b.stdout.lines().next().unwrap().trim().to_string();
    for id in [&a_id, &b_id] {
        assert!(id.starts_with("ask-"), "{id}");
        assert!(
            id.len() >= 4 + 20
                && id
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-')),
            "{id}"
        );
        env.json(&["show", id]).ok();
    }
    assert_ne!(a_id, b_id, "each ask gets its own id");
}

fn batch(id: &str) -> Value {
    json!({"id": id, "questions": [
        {"id": "a", "question": "A?", "options": [{"label": "X"}, {"label": "Y"}]},
        {"id": "b", "question": "B?", "multi_select": true, "options": [{"label": "P"}, {"label": "Q"}]}
    ]})
}

/// A batch answered in another order than the questions is stored, and published, in
/// question order: by CLI flags, by an `--answers` document and by an answer file.
#[test]
fn a_reordered_answer_batch_is_stored_in_question_order() {
    let env = Env::new();
    let in_order =
        json!({"answers": [{"id": "a", "selected": ["X"]}, {"id": "b", "selected": ["P"]}]});
    let reordered =
        json!({"answers": [{"id": "b", "selected": ["P"]}, {"id": "a", "selected": ["X"]}]});
    // CLI flags.
    env.ask(&batch("o-1")).ok();
    let out = env
        .json(&[
            "answer",
            "o-1",
            "--question",
            "b",
            "--select",
            "P",
            "--question",
            "a",
            "--select",
            "X",
        ])
        .ok()
        .json();
    assert_eq!(out["answer"], in_order);
    assert_eq!(env.outcome("o-1").unwrap()["answer"], in_order);
    // --answers document.
    env.ask(&batch("o-2")).ok();
    let out = env
        .run_stdin(
            &["--json", "answer", "o-2", "--answers", "-"],
            &reordered.to_string(),
        )
        .ok()
        .json();
    assert_eq!(out["answer"], in_order);
    let show = env.json(&["show", "o-2"]).ok().json();
    assert_eq!(show["status"], "answered");
    // An answer file, and the same file again (a replay after a crash) is no error.
    env.ask(&batch("o-3")).ok();
    let d = env.daemon();
    let lease = env.register("bot", "default", "5m");
    let file = json!({"lease": lease, "answers": reordered["answers"]});
    env.drop_answer("o-3.json", file.to_string().as_bytes());
    let o = env.wait_outcome("o-3");
    assert_eq!(o["answer"], in_order, "{}", d.log_text());
    assert!(env.names("answers/rejected").is_empty());
}

#[test]
fn the_request_schema_allows_the_multi_select_alias() {
    let env = Env::new();
    let schema: Value = serde_json::from_str(&env.run(&["schema", "request"]).ok().stdout).unwrap();
    let props = &schema["$defs"]["Question"]["properties"];
    assert!(props.get("multiSelect").is_some(), "{props}");
    assert!(
        props.get("multi_select").is_some(),
        "the binary accepts multi_select, so the schema must: {props}"
    );
    // And the binary does accept it.
    env.ask(&batch("m-1")).ok();
}

#[test]
fn ask_wait_says_which_id_it_waits_for_before_the_answer() {
    let env = Env::new();
    let _d = env.daemon();
    let err_path = env.dir.path().join("ask-wait.err");
    let mut req = simple_request("x");
    req.as_object_mut().unwrap().remove("id");
    let mut child = env
        .command()
        .args(["--json", "ask", "--wait", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(req.to_string().as_bytes()).unwrap();
    }
    let mut id = String::new();
    assert!(
        wait_until(DEADLINE, || {
            let text = fs::read_to_string(&err_path).unwrap_or_default();
            match text.split_whitespace().find(|w| w.starts_with("ask-")) {
                Some(w) if text.contains("dshq answer") => {
                    id = w.trim_end_matches([':', ',', '.']).to_string();
                    true
                }
                _ => false,
            }
        }),
        "ask --wait said nothing before the answer: {:?}",
        fs::read_to_string(&err_path)
    );
    env.json(&["answer", &id, "--select", "Postgres"]).ok();
    assert!(wait_until(DEADLINE, || child.try_wait().unwrap().is_some()));
    let out: Run = child.wait_with_output().unwrap().into();
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json();
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["status"], "answered");
    assert!(v["requestDigest"].as_str().unwrap().starts_with("sha256:"));
}
