//! Issue "Core": the command line end to end, on the real binary and a temporary root.
//!
//! Every test drives `dshq` as a user or a program would (`--json` where a program reads
//! the output), and checks the result against the contract: the JSON shapes, the outbox
//! documents, the stable error codes and their exit statuses, the lease rules and the
//! lifecycle. Expiry is reached by shifting the clock (`DSHQ_CLOCK_SKEW`), never by sleeping.

use std::collections::BTreeSet;
use std::fs;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::*;

// ---------------------------------------------------------------------------------------
// Local helpers
// ---------------------------------------------------------------------------------------

/// The keys of a JSON object, sorted.
fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not a JSON object: {v}"))
        .keys()
        .cloned()
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Write `v` to a fresh file beside the root and return its path.
fn write_json(env: &Env, v: &Value) -> PathBuf {
    let p = env.dir.path().join(format!("doc-{}.json", unique()));
    fs::write(&p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    p
}

/// The exit status the contract assigns to `code` (`Code::exit_status`).
fn exit_status_of(code: &str) -> i32 {
    dshq::protocol::Code::parse(code)
        .unwrap_or_else(|| panic!("{code} is not a dshq error code"))
        .exit_status()
}

/// Assert `run` failed with `code`: stdout is exactly one JSON document
/// `{"error": {"name": "UserQuestionError", "code", "message"}}` and the exit status is
/// the code's. Returns the message.
#[track_caller]
fn assert_error(run: &Run, code: &str) -> String {
    let doc = run.json();
    assert_eq!(
        keys(&doc),
        set(&["error"]),
        "an error document has only `error`: {doc}"
    );
    let e = &doc["error"];
    assert_eq!(
        keys(e),
        set(&["name", "code", "message"]),
        "error fields: {doc}"
    );
    assert_eq!(e["name"], "UserQuestionError", "{doc}");
    assert_eq!(
        e["code"], code,
        "expected {code}: {doc}\nstderr: {}",
        run.stderr
    );
    let message = e["message"].as_str().unwrap_or_default().to_string();
    assert!(!message.trim().is_empty(), "the message is empty: {doc}");
    assert_ne!(run.code, 0, "an error exits non-zero: {run:?}");
    assert_eq!(
        run.code,
        exit_status_of(code),
        "exit status of {code}: {run:?}"
    );
    message
}

/// `dshq --json show ID`, parsed.
fn show(env: &Env, id: &str) -> Value {
    env.json(&["show", id]).ok().json()
}

/// The status of request `id` as `show` reports it.
fn status_of(env: &Env, id: &str) -> String {
    show(env, id)["status"].as_str().unwrap().to_string()
}

/// `dshq --json list ARGS`, parsed as an array.
fn list(env: &Env, args: &[&str]) -> Vec<Value> {
    // Every status unless the test picks one (the default is the open requests).
    let mut all = vec!["list"];
    if !args.contains(&"--status") {
        all.push("--all");
    }
    all.extend_from_slice(args);
    env.json(&all).ok().json().as_array().unwrap().clone()
}

/// The ids of `list` rows.
fn ids(rows: &[Value]) -> Vec<String> {
    rows.iter()
        .map(|r| r["id"].as_str().unwrap_or("-").to_string())
        .collect()
}

/// The live provider leases (`provider status --json`).
fn provider_status(env: &Env) -> Vec<Value> {
    env.json(&["provider", "status"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .clone()
}

/// The event kinds recorded for request `id`, in order (read straight from the database).
fn events_for(env: &Env, id: &str) -> Vec<String> {
    let conn = rusqlite::Connection::open(env.root().join("dshq.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT kind FROM events WHERE request_id = ?1 ORDER BY seq")
        .unwrap();
    let rows = stmt.query_map([id], |r| r.get::<_, String>(0)).unwrap();
    rows.collect::<Result<Vec<_>, _>>().unwrap()
}

fn count(events: &[String], kind: &str) -> usize {
    events.iter().filter(|k| k.as_str() == kind).count()
}

/// Assert `s` is an RFC 3339 time and return it.
#[track_caller]
fn timestamp(v: &Value) -> jiff::Timestamp {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .parse()
        .unwrap_or_else(|e| panic!("{v} is not RFC 3339: {e}"))
}

/// Assert an answered outcome document has exactly the spec §8 shape.
#[track_caller]
fn assert_answered_shape(o: &Value) {
    let mut want = set(&[
        "id",
        "status",
        "requestDigest",
        "answer",
        "decision",
        "provider",
        "createdAt",
        "finishedAt",
    ]);
    // The decision document's feedback: only on a declined plan review.
    if o["decision"] == "declined" && o["answer"]["answers"][0]["custom"].is_string() {
        want.insert("feedback".into());
        assert_eq!(o["feedback"], o["answer"]["answers"][0]["custom"], "{o}");
    }
    assert_eq!(keys(o), want, "answered outcome shape: {o}");
    assert_eq!(o["status"], "answered");
    assert_eq!(keys(&o["answer"]), set(&["answers"]), "{o}");
    assert!(timestamp(&o["finishedAt"]) >= timestamp(&o["createdAt"]));
}

/// Assert an error outcome document has the spec §8 shape (a cancel also names the
/// provider that cancelled) and `code`.
#[track_caller]
fn assert_error_outcome(o: &Value, id: &str, code: &str) {
    let k = keys(o);
    let base = set(&[
        "id",
        "status",
        "requestDigest",
        "error",
        "createdAt",
        "finishedAt",
    ]);
    assert!(
        k == base
            || (code == "ASK_CANCELLED"
                && k == set(&[
                    "id",
                    "status",
                    "requestDigest",
                    "error",
                    "provider",
                    "createdAt",
                    "finishedAt"
                ])),
        "error outcome shape: {o}"
    );
    assert_eq!(o["id"], id, "{o}");
    assert_eq!(o["status"], "error", "{o}");
    assert_eq!(keys(&o["error"]), set(&["name", "code", "message"]), "{o}");
    assert_eq!(o["error"]["name"], "UserQuestionError", "{o}");
    assert_eq!(o["error"]["code"], code, "{o}");
    assert!(timestamp(&o["finishedAt"]) >= timestamp(&o["createdAt"]));
}

/// Wait for a child to exit within `limit` (killing it and failing otherwise), and
/// return what it printed.
fn finish(mut child: Child, limit: Duration) -> Run {
    let exited = wait_until(limit, || child.try_wait().unwrap().is_some());
    if !exited {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "child did not exit within {limit:?}: stdout {:?} stderr {:?}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    child.wait_with_output().unwrap().into()
}

/// Spawn `dshq ARGS` with piped output.
fn spawn(env: &Env, args: &[&str]) -> Child {
    env.command()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn dshq")
}

/// A request with two single-select questions `q1` (A, B) and `q2` (X, Y).
fn two_questions(id: &str) -> Value {
    json!({
        "id": id,
        "questions": [
            {"id": "q1", "question": "First?", "options": [{"label": "A"}, {"label": "B"}]},
            {"id": "q2", "question": "Second?", "options": [{"label": "X"}, {"label": "Y"}]}
        ]
    })
}

/// A plan-review request whose approve option is not the first.
fn plan_review(id: &str) -> Value {
    json!({
        "id": id,
        "questions": [{
            "id": "plan",
            "question": "Approve this plan?",
            "header": "Plan",
            "detail": "1. migrate the schema\n2. backfill\n3. switch reads",
            "options": [
                {"label": "Revise", "description": "send it back"},
                {"label": "Approve", "description": "go ahead"}
            ],
            "intent": {"kind": "plan-review", "approve": "Approve"}
        }]
    })
}

// ---------------------------------------------------------------------------------------
// The tour
// ---------------------------------------------------------------------------------------

#[test]
fn full_tour_ask_list_register_claim_answer_show_and_outcome_file() {
    let env = Env::new();

    // ask from a file (--json) ...
    let mut r1 = env.ask(&simple_request("r1")).ok().json();
    let digest = r1.as_object_mut().unwrap().remove("requestDigest");
    assert!(digest.unwrap().as_str().unwrap().starts_with("sha256:"));
    assert_eq!(
        r1,
        json!({"id": "r1", "context": "default", "new": true, "status": "pending"})
    );
    // ... and from stdin, printing the id.
    let mut r2 = simple_request("r2");
    r2["meta"] = json!({"ticket": "OPS-7", "nested": {"z": 1, "a": [true]}});
    let out = env
        .run_stdin(&["ask", "-"], &serde_json::to_string(&r2).unwrap())
        .ok();
    assert_eq!(out.stdout, "r2\n", "ask prints the id");
    // And from stdin with --json.
    let r3 = env
        .run_stdin(
            &["--json", "ask", "-"],
            &serde_json::to_string(&simple_request("r3")).unwrap(),
        )
        .ok()
        .json();
    assert_eq!(r3["id"], "r3");
    assert_eq!(r3["new"], true);

    // list: newest first, with the documented fields.
    let rows = list(&env, &[]);
    assert_eq!(ids(&rows), ["r3", "r2", "r1"], "newest first");
    for row in &rows {
        assert_eq!(
            keys(row),
            set(&[
                "id",
                "context",
                "status",
                "agent",
                "questions",
                "question",
                "planReview",
                "createdAt",
                "finishedAt",
                "provider",
                "errorCode",
                "decision"
            ]),
            "list row fields: {row}"
        );
        assert_eq!(row["status"], "pending");
        assert_eq!(row["context"], "default");
        assert_eq!(row["questions"], 1);
        assert_eq!(row["question"], "Which database?");
        assert_eq!(row["planReview"], false);
        assert_eq!(row["agent"], Value::Null);
        assert_eq!(row["finishedAt"], Value::Null);
        timestamp(&row["createdAt"]);
    }
    assert!(timestamp(&rows[0]["createdAt"]) >= timestamp(&rows[2]["createdAt"]));
    assert_eq!(
        ids(&list(&env, &["--status", "answered"])),
        Vec::<String>::new()
    );

    // register a provider and claim r1.
    let lease = env.register("alice", "default", "5m");
    let claimed = env.json(&["claim", "r1", "--lease", &lease]).ok().json();
    assert_eq!(claimed["id"], "r1");
    assert_eq!(claimed["status"], "claimed");
    assert_eq!(claimed["claimedBy"], "alice");
    let row = list(&env, &[])
        .into_iter()
        .find(|r| r["id"] == "r1")
        .unwrap();
    assert_eq!(row["status"], "claimed");
    assert_eq!(row["provider"], "alice");
    let st = provider_status(&env);
    assert_eq!(st.len(), 1);
    assert_eq!(st[0]["name"], "alice");
    assert_eq!(st[0]["live"], true);
    assert_eq!(st[0]["claimed"], 1);

    // answer with --select.
    let printed = env
        .json(&["answer", "r1", "--select", "Postgres", "--lease", &lease])
        .ok()
        .json();
    assert_answered_shape(&printed);

    // show: answered, the question carries what was selected.
    let v = show(&env, "r1");
    assert_eq!(v["status"], "answered");
    assert_eq!(v["id"], "r1");
    assert_eq!(v["source"], "cli");
    assert_eq!(v["claimedBy"], Value::Null, "no claim once final");
    assert_eq!(v["questions"].as_array().unwrap().len(), 1);
    let q = &v["questions"][0];
    assert_eq!(q["id"], "db");
    assert_eq!(q["question"], "Which database?");
    assert_eq!(q["selected"], json!(["Postgres"]));
    assert_eq!(q["custom"], Value::Null);
    assert_eq!(q["decision"], Value::Null);
    assert_eq!(v["outcome"]["status"], "answered");

    // the outcome file: exactly the spec §8 shape.
    let o = env.outcome("r1").expect("outbox/r1.json is written");
    assert_answered_shape(&o);
    assert_eq!(o["id"], "r1");
    assert_eq!(
        o["answer"],
        json!({"answers": [{"id": "db", "selected": ["Postgres"]}]})
    );
    assert_eq!(o["decision"], Value::Null);
    assert_eq!(o["provider"], "alice");
    assert_eq!(o, printed, "answer prints the outcome document");
    assert_eq!(v["outcome"], o, "show carries the outcome document");
    assert_eq!(
        env.names("outbox"),
        ["r1.json"],
        "only final requests have outcomes"
    );

    // the others are untouched; meta comes back untouched.
    assert_eq!(status_of(&env, "r3"), "pending");
    let v2 = show(&env, "r2");
    assert_eq!(v2["status"], "pending");
    assert_eq!(v2["meta"], r2["meta"]);
    assert_eq!(
        serde_json::to_string(&v2["meta"]).unwrap(),
        serde_json::to_string(&r2["meta"]).unwrap(),
        "meta keeps its key order"
    );
    let answered = list(&env, &["--status", "answered"]);
    assert_eq!(ids(&answered), ["r1"]);
    assert_eq!(answered[0]["provider"], "alice");
    timestamp(&answered[0]["finishedAt"]);

    let released = env
        .json(&["provider", "release", "--lease", &lease])
        .ok()
        .json();
    assert_eq!(released, json!({"released": true}));
    assert!(provider_status(&env).is_empty());
}

// ---------------------------------------------------------------------------------------
// Answer shapes
// ---------------------------------------------------------------------------------------

#[test]
fn batch_answer_with_question_flags_select_and_skip() {
    let env = Env::new();
    env.ask(&two_questions("b1")).ok();
    let out = env
        .json(&[
            "answer",
            "b1",
            "--question",
            "q1",
            "--select",
            "A",
            "--question",
            "q2",
            "--skip",
        ])
        .ok()
        .json();
    assert_answered_shape(&out);
    assert_eq!(
        out["answer"],
        json!({"answers": [{"id": "q1", "selected": ["A"]}, {"id": "q2", "selected": []}]})
    );
    assert_eq!(env.outcome("b1").unwrap(), out);
    let v = show(&env, "b1");
    assert_eq!(v["status"], "answered");
    assert_eq!(v["questions"][0]["selected"], json!(["A"]));
    assert_eq!(v["questions"][1]["selected"], json!([]));
    assert_eq!(v["questions"][1]["custom"], Value::Null);

    // The order of --question groups does not matter; custom overrides in single-select.
    env.ask(&two_questions("b2")).ok();
    let out = env
        .json(&[
            "answer",
            "b2",
            "--question",
            "q2",
            "--custom",
            "neither, use Z",
            "--question",
            "q1",
            "--select",
            "B",
        ])
        .ok()
        .json();
    let items = out["answer"]["answers"].as_array().unwrap();
    let q1 = items.iter().find(|i| i["id"] == "q1").unwrap();
    let q2 = items.iter().find(|i| i["id"] == "q2").unwrap();
    assert_eq!(q1, &json!({"id": "q1", "selected": ["B"]}));
    assert_eq!(
        q2,
        &json!({"id": "q2", "selected": [], "custom": "neither, use Z"})
    );
}

/// `--skip` may be given for several questions of one batch (spec §9: `--skip`,
/// `--question QID` for batches).
#[test]
fn batch_answer_skipping_several_questions() {
    let env = Env::new();
    env.ask(&two_questions("b3")).ok();
    let r = env.json(&[
        "answer",
        "b3",
        "--question",
        "q1",
        "--skip",
        "--question",
        "q2",
        "--skip",
    ]);
    assert_eq!(r.code, 0, "two --skip flags: {r:?}");
    assert_eq!(
        r.json()["answer"],
        json!({"answers": [{"id": "q1", "selected": []}, {"id": "q2", "selected": []}]})
    );
    // A skip before a selection in the same batch.
    env.ask(&two_questions("b4")).ok();
    let out = env
        .json(&[
            "answer",
            "b4",
            "--question",
            "q1",
            "--skip",
            "--question",
            "q2",
            "--select",
            "Y",
        ])
        .ok()
        .json();
    assert_eq!(
        out["answer"],
        json!({"answers": [{"id": "q1", "selected": []}, {"id": "q2", "selected": ["Y"]}]})
    );
}

#[test]
fn multi_select_with_two_selects_and_custom() {
    let env = Env::new();
    env.ask(&json!({
        "id": "m1",
        "questions": [{
            "id": "tags", "question": "Which areas?", "multi_select": true,
            "options": [{"label": "api"}, {"label": "db"}, {"label": "ui"}]
        }]
    }))
    .ok();
    let out = env
        .json(&[
            "answer",
            "m1",
            "--select",
            "api",
            "--select",
            "ui",
            "--custom",
            "also docs",
        ])
        .ok()
        .json();
    assert_answered_shape(&out);
    assert_eq!(
        out["answer"],
        json!({"answers": [{"id": "tags", "selected": ["api", "ui"], "custom": "also docs"}]})
    );
    let v = show(&env, "m1");
    assert_eq!(v["questions"][0]["multiSelect"], true, "the alias is read");
    assert_eq!(v["questions"][0]["selected"], json!(["api", "ui"]));
    assert_eq!(v["questions"][0]["custom"], "also docs");
    assert_eq!(env.outcome("m1").unwrap(), out);
}

#[test]
fn answers_from_a_file_and_from_stdin() {
    let env = Env::new();
    let lease = env.register("alice", "default", "5m");

    env.ask(&two_questions("f1")).ok();
    let answer = json!({"answers": [
        {"id": "q1", "selected": [], "custom": "something else"},
        {"id": "q2", "selected": ["Y"]}
    ]});
    let path = write_json(&env, &answer);
    let out = env
        .json(&[
            "answer",
            "f1",
            "--answers",
            path.to_str().unwrap(),
            "--lease",
            &lease,
        ])
        .ok()
        .json();
    assert_answered_shape(&out);
    assert_eq!(out["answer"], answer, "the answer is kept as given");
    assert_eq!(out["provider"], "alice");
    assert_eq!(env.outcome("f1").unwrap(), out);

    env.ask(&two_questions("f2")).ok();
    let answer = json!({"answers": [
        {"id": "q1", "selected": ["A"]},
        {"id": "q2", "selected": []}
    ]});
    let out = env
        .run_stdin(
            &[
                "--json",
                "answer",
                "f2",
                "--answers",
                "-",
                "--lease",
                &lease,
            ],
            &serde_json::to_string(&answer).unwrap(),
        )
        .ok()
        .json();
    assert_eq!(out["answer"], answer);
    let v = show(&env, "f2");
    assert_eq!(v["status"], "answered");
    assert_eq!(v["questions"][0]["selected"], json!(["A"]));
    assert_eq!(v["questions"][1]["selected"], json!([]));
}

#[test]
fn bad_answers_are_rejected_and_change_nothing() {
    let env = Env::new();
    env.ask(&two_questions("ba")).ok();
    let q2_skip = ["--question", "q2", "--skip"];
    let flag_cases: Vec<(&str, Vec<&str>)> = vec![
        ("unknown label", vec!["--question", "q1", "--select", "C"]),
        (
            "two labels in single-select",
            vec!["--question", "q1", "--select", "A", "--select", "B"],
        ),
        (
            "duplicate label",
            vec!["--question", "q1", "--select", "A", "--select", "A"],
        ),
        (
            "custom with a selection in single-select",
            vec!["--question", "q1", "--select", "A", "--custom", "and more"],
        ),
        ("blank custom", vec!["--question", "q1", "--custom", "   "]),
        (
            "unknown question",
            vec![
                "--question",
                "q1",
                "--select",
                "A",
                "--question",
                "q9",
                "--select",
                "A",
            ],
        ),
    ];
    let lease = env.register("alice", "default", "5m");
    for (i, (what, flags)) in flag_cases.iter().enumerate() {
        let mut args = vec!["answer", "ba"];
        args.extend(flags);
        args.extend(q2_skip);
        // Half the cases with the live lease, half with a transient one... which would be
        // DUPLICATE_PROVIDER while alice is live, so release first for the second half.
        if i == flag_cases.len() / 2 {
            env.json(&["provider", "release", "--lease", &lease]).ok();
        }
        if i < flag_cases.len() / 2 {
            args.extend(["--lease", lease.as_str()]);
        }
        let r = env.json(&args);
        let msg = assert_error(&r, "BAD_ANSWER");
        assert_eq!(r.code, 3, "{what}");
        assert!(
            msg.contains("q"),
            "{what}: the message names the question: {msg}"
        );
        assert_eq!(status_of(&env, "ba"), "pending", "{what}: nothing changed");
    }

    // A missing question (no q2 at all).
    let r = env.json(&["answer", "ba", "--question", "q1", "--select", "A"]);
    assert_error(&r, "BAD_ANSWER");
    assert_eq!(r.code, 3);

    // Whole documents: a question answered twice, from a file; not JSON, and an unknown
    // field, from stdin.
    let twice = write_json(
        &env,
        &json!({"answers": [
            {"id": "q1", "selected": ["A"]},
            {"id": "q1", "selected": ["B"]},
            {"id": "q2", "selected": []}
        ]}),
    );
    let r = env.json(&["answer", "ba", "--answers", twice.to_str().unwrap()]);
    assert_error(&r, "BAD_ANSWER");
    for body in [
        "this is not json".to_string(),
        json!({"answers": [
            {"id": "q1", "selected": ["A"], "comment": "typo field"},
            {"id": "q2", "selected": []}
        ]})
        .to_string(),
        json!({"answers": [{"id": "q1", "selected": ["A"]}, {"id": "q2"}]}).to_string(),
    ] {
        let r = env.run_stdin(&["--json", "answer", "ba", "--answers", "-"], &body);
        assert_error(&r, "BAD_ANSWER");
        assert_eq!(r.code, 3, "{body}");
    }

    // Nothing changed: still pending, no outcome, no answer event, no lease left behind.
    let v = show(&env, "ba");
    assert_eq!(v["status"], "pending");
    assert_eq!(v["outcome"], Value::Null);
    assert!(v["questions"]
        .as_array()
        .unwrap()
        .iter()
        .all(|q| q["selected"].is_null()));
    assert!(env.outcome("ba").is_none());
    assert_eq!(count(&events_for(&env, "ba"), "answered"), 0);
    assert_eq!(count(&events_for(&env, "ba"), "claimed"), 0);
    assert!(provider_status(&env).is_empty());

    // And a valid answer still goes through.
    env.json(&[
        "answer",
        "ba",
        "--question",
        "q1",
        "--select",
        "B",
        "--question",
        "q2",
        "--select",
        "X",
    ])
    .ok();
    assert_eq!(status_of(&env, "ba"), "answered");
}

#[test]
fn plan_review_approve_and_decline() {
    let env = Env::new();
    env.ask(&plan_review("p1")).ok();
    env.ask(&plan_review("p2")).ok();
    env.ask(&plan_review("p3")).ok();

    let rows = list(&env, &[]);
    assert!(rows.iter().all(|r| r["planReview"] == true), "{rows:?}");

    // Approve (the second option): approved.
    let out = env
        .json(&["answer", "p1", "--select", "Approve"])
        .ok()
        .json();
    assert_answered_shape(&out);
    assert_eq!(out["decision"], "approved");
    assert_eq!(
        out["answer"],
        json!({"answers": [{"id": "plan", "selected": ["Approve"]}]}),
        "an intent never changes the answer format"
    );
    assert_eq!(env.outcome("p1").unwrap()["decision"], "approved");
    assert_eq!(show(&env, "p1")["questions"][0]["decision"], "approved");

    // Feedback only: declined, the feedback kept as custom.
    let out = env
        .json(&["answer", "p2", "--custom", "add a rollback step"])
        .ok()
        .json();
    assert_eq!(out["decision"], "declined");
    assert_eq!(
        out["answer"],
        json!({"answers": [{"id": "plan", "selected": [], "custom": "add a rollback step"}]})
    );
    let o = env.outcome("p2").unwrap();
    assert_answered_shape(&o);
    assert_eq!(o["decision"], "declined");
    let v = show(&env, "p2");
    assert_eq!(v["questions"][0]["decision"], "declined");
    assert_eq!(v["questions"][0]["custom"], "add a rollback step");

    // The first option (not the approve label) declines too.
    let out = env
        .json(&["answer", "p3", "--select", "Revise"])
        .ok()
        .json();
    assert_eq!(out["decision"], "declined");

    let answered = list(&env, &["--status", "answered"]);
    let decision = |id: &str| {
        answered
            .iter()
            .find(|r| r["id"] == id)
            .map(|r| r["decision"].clone())
            .unwrap()
    };
    assert_eq!(decision("p1"), "approved");
    assert_eq!(decision("p2"), "declined");
    assert_eq!(decision("p3"), "declined");
}

// ---------------------------------------------------------------------------------------
// Ending without an answer
// ---------------------------------------------------------------------------------------

#[test]
fn cancel_and_abort_end_with_error_outcomes() {
    let env = Env::new();
    env.ask(&simple_request("c1")).ok();
    env.ask(&simple_request("a1")).ok();

    // cancel: the command succeeds (exit 0) and prints the ASK_CANCELLED outcome.
    let r = env.json(&["cancel", "c1", "--reason", "not needed any more"]);
    assert_eq!(r.code, 0, "{r:?}");
    let printed = r.json();
    assert_error_outcome(&printed, "c1", "ASK_CANCELLED");
    assert!(printed["error"]["message"]
        .as_str()
        .unwrap()
        .contains("not needed any more"));
    let o = env.outcome("c1").expect("outbox/c1.json");
    assert_eq!(o, printed);
    assert_eq!(status_of(&env, "c1"), "cancelled");

    // wait then exits 8 and prints the error outcome (one document).
    let w = env.json(&["wait", "c1"]);
    assert_eq!(w.code, 8, "{w:?}");
    assert_eq!(w.code, exit_status_of("ASK_CANCELLED"));
    assert_eq!(w.json(), o);

    // abort: ASK_ABORTED, no provider involved.
    let r = env.json(&["abort", "a1", "--reason", "the job was cancelled"]);
    assert_eq!(r.code, 0, "{r:?}");
    let printed = r.json();
    assert_error_outcome(&printed, "a1", "ASK_ABORTED");
    assert_eq!(
        keys(&printed),
        set(&[
            "id",
            "status",
            "requestDigest",
            "error",
            "createdAt",
            "finishedAt"
        ])
    );
    let o = env.outcome("a1").expect("outbox/a1.json");
    assert_eq!(o, printed);
    assert_eq!(status_of(&env, "a1"), "aborted");
    let w = env.json(&["wait", "a1"]);
    assert_eq!(w.code, 8, "{w:?}");
    assert_eq!(w.json(), o);

    // Without --json the outcome is still printed and the status is the same.
    let w = env.run(&["wait", "a1"]);
    assert_eq!(w.code, 8);
    assert!(w.stderr.contains("ASK_ABORTED"), "{w:?}");

    // Final states never change.
    for args in [
        vec!["cancel", "c1"],
        vec!["abort", "c1"],
        vec!["cancel", "a1"],
        vec!["abort", "a1"],
        vec!["answer", "a1", "--select", "Postgres"],
    ] {
        let r = env.json(&args);
        assert_error(&r, "REQUEST_FINAL");
    }
    assert_eq!(env.outcome("c1").unwrap(), o_or(&env, "c1"));
    assert_eq!(status_of(&env, "c1"), "cancelled");
    assert_eq!(status_of(&env, "a1"), "aborted");

    let rows = list(&env, &[]);
    let code_of = |id: &str| {
        rows.iter()
            .find(|r| r["id"] == id)
            .map(|r| r["errorCode"].clone())
            .unwrap()
    };
    assert_eq!(code_of("c1"), "ASK_CANCELLED");
    assert_eq!(code_of("a1"), "ASK_ABORTED");
}

/// The outcome of `id` as `show` reports it.
fn o_or(env: &Env, id: &str) -> Value {
    show(env, id)["outcome"].clone()
}

// ---------------------------------------------------------------------------------------
// Leases
// ---------------------------------------------------------------------------------------

#[test]
fn answer_without_lease_takes_a_transient_lease() {
    let env = Env::new();
    env.ask(&simple_request("t1")).ok();
    let out = env
        .json(&["answer", "t1", "--select", "SQLite"])
        .ok()
        .json();
    assert_eq!(
        out["provider"], "tester",
        "the transient lease is named after $USER"
    );
    assert!(
        provider_status(&env).is_empty(),
        "no live lease is left behind"
    );
    // A named transient lease.
    env.ask(&simple_request("t2")).ok();
    let out = env
        .json(&[
            "answer",
            "t2",
            "--select",
            "SQLite",
            "--name",
            "night-shift",
        ])
        .ok()
        .json();
    assert_eq!(out["provider"], "night-shift");
    assert!(provider_status(&env).is_empty());
    // So a real provider can register right after.
    let lease = env.register("alice", "default", "5m");

    // While alice is live, a transient lease is refused and the request is untouched.
    env.ask(&simple_request("t3")).ok();
    let r = env.json(&["answer", "t3", "--select", "SQLite"]);
    let msg = assert_error(&r, "DUPLICATE_PROVIDER");
    assert_eq!(r.code, 5);
    assert!(msg.contains("alice"), "{msg}");
    let r = env.json(&["cancel", "t3"]);
    assert_error(&r, "DUPLICATE_PROVIDER");
    assert_eq!(status_of(&env, "t3"), "pending");
    let st = provider_status(&env);
    assert_eq!(st.len(), 1);
    assert_eq!(st[0]["name"], "alice");

    // alice answers.
    let out = env
        .json(&["answer", "t3", "--select", "Postgres", "--lease", &lease])
        .ok()
        .json();
    assert_eq!(out["provider"], "alice");
    // DSHQ_LEASE works as well as --lease.
    env.ask(&simple_request("t4")).ok();
    let out = env
        .run_env(
            &[("DSHQ_LEASE", lease.as_str())],
            &["--json", "answer", "t4", "--select", "Postgres"],
        )
        .ok()
        .json();
    assert_eq!(out["provider"], "alice");
}

#[test]
fn second_register_is_refused_and_the_first_lease_keeps_working() {
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
    assert_eq!(
        keys(&reg),
        set(&["lease", "context", "name", "generation", "expiresAt"])
    );
    assert_eq!(reg["context"], "team");
    assert_eq!(reg["generation"], 1);
    timestamp(&reg["expiresAt"]);
    let lease = reg["lease"].as_str().unwrap().to_string();

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
    let msg = assert_error(&r, "DUPLICATE_PROVIDER");
    assert_eq!(r.code, 5);
    assert!(msg.contains("alice"), "names who holds the context: {msg}");

    // The first lease is kept: heartbeat works and it can answer.
    let hb = env
        .json(&["provider", "heartbeat", "--lease", &lease])
        .ok()
        .json();
    assert_eq!(hb["context"], "team");
    assert_eq!(hb["name"], "alice");
    assert_eq!(hb["generation"], 1);
    assert!(timestamp(&hb["expiresAt"]) >= timestamp(&reg["expiresAt"]));
    let st = provider_status(&env);
    assert_eq!(st.len(), 1);
    assert_eq!(st[0]["name"], "alice");
    let mut req = simple_request("k1");
    req["context"] = json!("team");
    env.ask(&req).ok();
    env.json(&["answer", "k1", "--select", "Postgres", "--lease", &lease])
        .ok();

    // Another context is independent.
    env.register("carol", "other", "5m");
    assert_eq!(provider_status(&env).len(), 2);

    // Release twice is fine; the lease is dead after the first.
    let r1 = env
        .json(&["provider", "release", "--lease", &lease])
        .ok()
        .json();
    assert_eq!(r1["released"], true);
    let r2 = env
        .json(&["provider", "release", "--lease", &lease])
        .ok()
        .json();
    assert_eq!(r2["released"], false);
    let r = env.json(&["provider", "heartbeat", "--lease", &lease]);
    assert_error(&r, "LEASE_EXPIRED");
    // A new registration gets the next generation.
    let reg2 = env
        .json(&["provider", "register", "--name", "bob", "--context", "team"])
        .ok()
        .json();
    assert_eq!(reg2["generation"], 2);
    // A forged token is not a lease.
    let r = env.json(&["provider", "heartbeat", "--lease", "1.not-a-token"]);
    assert_error(&r, "LEASE_EXPIRED");
}

#[test]
fn an_expired_lease_cannot_answer_claim_or_heartbeat() {
    let env = Env::new();
    env.ask(&simple_request("e1")).ok();
    let lease = env.register("alice", "default", "1m");
    env.json(&["claim", "e1", "--lease", &lease]).ok();
    assert_eq!(status_of(&env, "e1"), "claimed");

    let later = [("DSHQ_CLOCK_SKEW", "+2m")];
    let r = env.run_env(
        &later,
        &[
            "--json", "answer", "e1", "--select", "Postgres", "--lease", &lease,
        ],
    );
    assert_error(&r, "LEASE_EXPIRED");
    assert_eq!(r.code, 5);
    let r = env.run_env(
        &later,
        &["--json", "provider", "heartbeat", "--lease", &lease],
    );
    assert_error(&r, "LEASE_EXPIRED");
    let r = env.run_env(&later, &["--json", "claim", "e1", "--lease", &lease]);
    assert_error(&r, "LEASE_EXPIRED");
    let r = env.run_env(&later, &["--json", "cancel", "e1", "--lease", &lease]);
    assert_error(&r, "LEASE_EXPIRED");
    let st: Value = env
        .run_env(&later, &["--json", "provider", "status"])
        .ok()
        .json();
    assert!(
        st.as_array().unwrap().iter().all(|l| l["live"] == false),
        "a lease past expiresAt is not live: {st}"
    );
    assert!(env.outcome("e1").is_none());

    // The dead lease does not block the next provider, who finds e1 back in pending.
    let reg = env
        .run_env(
            &later,
            &[
                "--json", "provider", "register", "--name", "bob", "--ttl", "5m",
            ],
        )
        .ok()
        .json();
    assert_eq!(reg["generation"], 2);
    let bob = reg["lease"].as_str().unwrap().to_string();
    let claimed = env
        .run_env(&later, &["--json", "claim", "e1", "--lease", &bob])
        .ok()
        .json();
    assert_eq!(claimed["status"], "claimed");
    assert_eq!(claimed["claimedBy"], "bob");
    let ev = events_for(&env, "e1");
    assert_eq!(count(&ev, "released"), 1, "the claim was returned: {ev:?}");

    // The stale holder stays fenced off, even at the real time.
    let r = env.json(&["answer", "e1", "--select", "SQLite", "--lease", &lease]);
    assert_error(&r, "LEASE_EXPIRED");
    let out = env
        .run_env(
            &later,
            &[
                "--json", "answer", "e1", "--select", "Postgres", "--lease", &bob,
            ],
        )
        .ok()
        .json();
    assert_eq!(out["provider"], "bob");
}

/// Spec §6: "When now > expiresAt the lease is dead even if nobody has noticed yet: every
/// operation treats it as dead ... and returns its claims to pending". Reading the queue
/// after the lease's expiry (no daemon, no other write) must show its claim as pending.
#[test]
fn an_expired_leases_claim_reads_as_pending() {
    let env = Env::new();
    env.ask(&simple_request("e2")).ok();
    let lease = env.register("alice", "default", "1m");
    env.json(&["claim", "e2", "--lease", &lease]).ok();
    let later = [("DSHQ_CLOCK_SKEW", "+2m")];
    // The failed answer must not keep the claim alive either.
    let r = env.run_env(
        &later,
        &[
            "--json", "answer", "e2", "--select", "Postgres", "--lease", &lease,
        ],
    );
    assert_error(&r, "LEASE_EXPIRED");

    let v: Value = env.run_env(&later, &["--json", "show", "e2"]).ok().json();
    assert_eq!(v["status"], "pending", "show after expiry: {v}");
    assert_eq!(v["claimedBy"], Value::Null);
    let rows: Value = env.run_env(&later, &["--json", "list"]).ok().json();
    assert_eq!(rows[0]["id"], "e2");
    assert_eq!(rows[0]["status"], "pending", "list after expiry: {rows}");
    let pending: Value = env
        .run_env(&later, &["--json", "list", "--status", "pending"])
        .ok()
        .json();
    assert_eq!(pending.as_array().unwrap().len(), 1);
}

// ---------------------------------------------------------------------------------------
// Races
// ---------------------------------------------------------------------------------------

const RACERS: usize = 8;

/// Spawn one `dshq --json answer` per argument list at once and collect every result.
fn race(env: &Env, runs: Vec<Vec<String>>) -> Vec<Run> {
    let children: Vec<Child> = runs
        .iter()
        .map(|args| {
            let mut all = vec!["--json"];
            all.extend(args.iter().map(String::as_str));
            spawn(env, &all)
        })
        .collect();
    children.into_iter().map(|c| finish(c, DEADLINE)).collect()
}

#[test]
fn racing_identical_answers_never_answer_twice() {
    let env = Env::new();
    env.ask(&simple_request("race1")).ok();
    let lease = env.register("alice", "default", "5m");
    let args: Vec<String> = ["answer", "race1", "--select", "Postgres", "--lease", &lease]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let runs = race(&env, vec![args; RACERS]);
    let winners = runs.iter().filter(|r| r.code == 0).count();
    assert!(winners >= 1, "someone answers: {runs:#?}");
    for r in runs.iter().filter(|r| r.code != 0) {
        assert_error(r, "REQUEST_FINAL");
    }
    let v = show(&env, "race1");
    assert_eq!(v["status"], "answered");
    assert_eq!(v["questions"][0]["selected"], json!(["Postgres"]));
    let ev = events_for(&env, "race1");
    assert_eq!(
        count(&ev, "answered"),
        1,
        "exactly one answer recorded: {ev:?}"
    );
    let o = env.outcome("race1").unwrap();
    for r in runs.iter().filter(|r| r.code == 0) {
        assert_eq!(r.json(), o);
    }
}

/// The brief's contract: of N processes answering the same request with the same answer
/// and lease, exactly one exits 0 and the rest fail with REQUEST_FINAL.
#[test]
fn racing_identical_answers_exactly_one_wins() {
    let env = Env::new();
    env.ask(&simple_request("race2")).ok();
    let lease = env.register("alice", "default", "5m");
    let args: Vec<String> = ["answer", "race2", "--select", "Postgres", "--lease", &lease]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let runs = race(&env, vec![args; RACERS]);
    let winners = runs.iter().filter(|r| r.code == 0).count();
    assert_eq!(winners, 1, "exactly one process answers: {runs:#?}");
    for r in runs.iter().filter(|r| r.code != 0) {
        assert_error(r, "REQUEST_FINAL");
    }
    assert_eq!(count(&events_for(&env, "race2"), "answered"), 1);
}

#[test]
fn racing_different_answers_exactly_one_wins() {
    let env = Env::new();
    let options: Vec<Value> = (0..RACERS)
        .map(|i| json!({"label": format!("L{i}")}))
        .collect();
    env.ask(&json!({
        "id": "race3",
        "questions": [{"id": "pick", "question": "Which one?", "options": options}]
    }))
    .ok();
    let lease = env.register("alice", "default", "5m");
    let runs = race(
        &env,
        (0..RACERS)
            .map(|i| {
                vec![
                    "answer".to_string(),
                    "race3".to_string(),
                    "--select".to_string(),
                    format!("L{i}"),
                    "--lease".to_string(),
                    lease.clone(),
                ]
            })
            .collect(),
    );
    let winners: Vec<usize> = (0..RACERS).filter(|&i| runs[i].code == 0).collect();
    assert_eq!(winners.len(), 1, "exactly one process answers: {runs:#?}");
    for r in runs.iter().filter(|r| r.code != 0) {
        assert_error(r, "REQUEST_FINAL");
        assert_eq!(r.code, 6);
    }
    let won = format!("L{}", winners[0]);
    let v = show(&env, "race3");
    assert_eq!(v["status"], "answered");
    assert_eq!(
        v["questions"][0]["selected"],
        json!([won]),
        "the stored answer is the winner's"
    );
    let o = env.outcome("race3").unwrap();
    assert_eq!(o["answer"]["answers"][0]["selected"], json!([won]));
    assert_eq!(runs[winners[0]].json(), o);
    let ev = events_for(&env, "race3");
    assert_eq!(count(&ev, "answered"), 1, "{ev:?}");
}

#[test]
fn racing_transient_answers_exactly_one_wins() {
    // Without --lease each racer takes its own transient lease: the losers either find
    // the request final or another racer's lease live; never a second answer.
    let env = Env::new();
    env.ask(&simple_request("race4")).ok();
    let runs = race(
        &env,
        (0..RACERS)
            .map(|i| {
                vec![
                    "answer".to_string(),
                    "race4".to_string(),
                    "--select".to_string(),
                    if i % 2 == 0 { "Postgres" } else { "SQLite" }.to_string(),
                    "--name".to_string(),
                    format!("racer{i}"),
                ]
            })
            .collect(),
    );
    let winners: Vec<&Run> = runs.iter().filter(|r| r.code == 0).collect();
    assert_eq!(winners.len(), 1, "{runs:#?}");
    for r in runs.iter().filter(|r| r.code != 0) {
        assert_eq!(r.error_code(), "REQUEST_FINAL", "{r:?}");
        assert_error(r, "REQUEST_FINAL");
    }
    assert_eq!(count(&events_for(&env, "race4"), "answered"), 1);
    assert!(provider_status(&env).is_empty());
    assert_eq!(winners[0].json(), env.outcome("race4").unwrap());
}

// ---------------------------------------------------------------------------------------
// The --json contract and the error codes
// ---------------------------------------------------------------------------------------

#[test]
fn json_errors_are_one_document_with_the_codes_exit_status() {
    let env = Env::new();

    // BAD_REQUEST: an unknown field is named, in a question and at the top level.
    let r = env.ask(&json!({
        "id": "x1",
        "questions": [{"id": "q", "question": "?", "mutliSelect": true}]
    }));
    let msg = assert_error(&r, "BAD_REQUEST");
    assert_eq!(r.code, 3);
    assert!(msg.contains("mutliSelect"), "{msg}");
    let r = env.ask(&json!({
        "id": "x1",
        "requireProvidr": true,
        "questions": [{"id": "q", "question": "?"}]
    }));
    let msg = assert_error(&r, "BAD_REQUEST");
    assert!(msg.contains("requireProvidr"), "{msg}");
    // ... a bad id, duplicate labels, not JSON.
    let r = env.ask(&json!({"id": "../x", "questions": [{"id": "q", "question": "?"}]}));
    assert_error(&r, "BAD_REQUEST");
    let r = env.ask(
        &json!({"id": "x2", "questions": [{"id": "q", "question": "?",
        "options": [{"label": "A"}, {"label": "A"}]}]}),
    );
    assert_error(&r, "BAD_REQUEST");
    let r = env.run_stdin(&["--json", "ask", "-"], "{not json");
    assert_error(&r, "BAD_REQUEST");

    // EMPTY_QUESTIONS.
    let r = env.ask(&json!({"id": "x3", "questions": []}));
    assert_error(&r, "EMPTY_QUESTIONS");
    assert_eq!(r.code, 3);

    // BAD_INTENT: approve names no option; no detail.
    let mut bad = plan_review("x4");
    bad["questions"][0]["intent"]["approve"] = json!("Ship it");
    let r = env.ask(&bad);
    let msg = assert_error(&r, "BAD_INTENT");
    assert_eq!(r.code, 3);
    assert!(msg.contains("Ship it"), "{msg}");
    let mut bad = plan_review("x5");
    bad["questions"][0]
        .as_object_mut()
        .unwrap()
        .remove("detail");
    assert_error(&env.ask(&bad), "BAD_INTENT");
    // An empty-string detail passes.
    let mut ok = plan_review("x6");
    ok["questions"][0]["detail"] = json!("");
    env.ask(&ok).ok();

    // NO_PROVIDER with requireProvider; accepted once a provider is live.
    let mut rp = simple_request("x7");
    rp["requireProvider"] = json!(true);
    let r = env.ask(&rp);
    assert_error(&r, "NO_PROVIDER");
    assert_eq!(r.code, 5);
    env.register("alice", "default", "5m");
    let mut rp2 = simple_request("x8");
    rp2["requireProvider"] = json!(true);
    let acc = env.ask(&rp2).ok().json();
    assert_eq!(acc["status"], "pending");
    assert_eq!(show(&env, "x8")["requireProvider"], true);

    // DUPLICATE_ID: same content accepted once more ("new": false), different content not.
    let first = env.ask(&simple_request("d1")).ok().json();
    assert_eq!(first["new"], true);
    let again = env.ask(&simple_request("d1")).ok().json();
    assert_eq!(again["new"], false);
    assert_eq!(again["id"], "d1");
    assert_eq!(again["status"], "pending");
    let mut other = simple_request("d1");
    other["questions"][0]["question"] = json!("Which cache?");
    let r = env.ask(&other);
    assert_error(&r, "DUPLICATE_ID");
    assert_eq!(r.code, 3);
    let v = show(&env, "d1");
    assert_eq!(v["status"], "pending");
    assert_eq!(v["questions"][0]["question"], "Which database?");
    let d1_rows = list(&env, &[])
        .into_iter()
        .filter(|r| r["id"] == "d1" && r["status"] != "rejected")
        .count();
    assert_eq!(d1_rows, 1, "a re-delivery never becomes two requests");

    // NOT_FOUND.
    let r = env.json(&["show", "nope"]);
    assert_error(&r, "NOT_FOUND");
    assert_eq!(r.code, 4);
    assert_error(&env.json(&["abort", "nope"]), "NOT_FOUND");

    // WAIT_TIMEOUT, promptly.
    env.ask(&simple_request("w1")).ok();
    let started = Instant::now();
    let r = env.json(&["wait", "w1", "--timeout", "200ms"]);
    assert_error(&r, "WAIT_TIMEOUT");
    assert_eq!(r.code, 9);
    assert!(started.elapsed() < Duration::from_secs(20));
    // ask --wait --timeout: the same, one document.
    let p = write_json(&env, &simple_request("w2"));
    let r = env.json(&["ask", p.to_str().unwrap(), "--wait", "--timeout", "200ms"]);
    assert_error(&r, "WAIT_TIMEOUT");
    assert_eq!(status_of(&env, "w2"), "pending");

    // USAGE errors the command itself finds are documents too.
    let r = env.json(&["answer", "w1"]);
    assert_error(&r, "USAGE");
    assert_eq!(r.code, 2);
    let r = env.json(&["list", "--status", "done"]);
    assert_error(&r, "USAGE");
    let r = env.json(&["claim", "w1"]);
    assert_error(&r, "USAGE");

    // Successes are exactly one document as well.
    for args in [
        vec!["list"],
        vec!["list", "--status", "rejected"],
        vec!["show", "w1"],
        vec!["provider", "status"],
        vec!["agent", "list"],
    ] {
        let r = env.json(&args).ok();
        r.json();
    }
}

/// Spec §9: with `--json`, stdout carries exactly one JSON document, including for a bad
/// command line (which the argument parser rejects before any command runs).
#[test]
fn json_usage_errors_from_the_parser_are_documents_too() {
    let env = Env::new();
    let r = env.json(&["answer", "w1", "--no-such-flag"]);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {:?} stderr {:?}",
            r.stdout, r.stderr
        )
    });
    assert_eq!(doc["error"]["code"], "USAGE", "{doc}");
    assert_eq!(r.code, 2);
}

#[test]
fn cli_rejections_are_recorded_with_an_outcome_when_the_id_is_free() {
    let env = Env::new();
    // An id that is known and free: recorded, and an error outcome in the outbox.
    let r = env.ask(&json!({"id": "rj1", "questions": []}));
    assert_error(&r, "EMPTY_QUESTIONS");
    let rejected = list(&env, &["--status", "rejected"]);
    assert_eq!(ids(&rejected), ["rj1"]);
    assert_eq!(rejected[0]["status"], "rejected");
    assert_eq!(rejected[0]["errorCode"], "EMPTY_QUESTIONS");
    let o = env.outcome("rj1").expect("an error outcome for a free id");
    assert_error_outcome(&o, "rj1", "EMPTY_QUESTIONS");
    assert_eq!(
        keys(&o),
        set(&[
            "id",
            "status",
            "requestDigest",
            "error",
            "createdAt",
            "finishedAt"
        ])
    );
    let v = show(&env, "rj1");
    assert_eq!(v["status"], "rejected");
    assert!(
        v["raw"].as_str().unwrap().contains("rj1"),
        "the raw input is kept: {v}"
    );
    // wait on it ends with the rejection's code.
    let w = env.json(&["wait", "rj1", "--timeout", "10s"]);
    assert_eq!(w.code, exit_status_of("EMPTY_QUESTIONS"));
    assert_eq!(w.json()["error"]["code"], "EMPTY_QUESTIONS");

    // An id owned by an accepted request: recorded, but its outbox is left alone.
    env.ask(&simple_request("own")).ok();
    let mut other = simple_request("own");
    other["questions"][0]["question"] = json!("Something else?");
    assert_error(&env.ask(&other), "DUPLICATE_ID");
    assert!(
        env.outcome("own").is_none(),
        "no outcome for a pending request"
    );
    assert_eq!(status_of(&env, "own"), "pending");

    // No usable id: recorded without an outcome (from stdin the id is generated, so the
    // rejection is the request's own, but no outcome is written under a name nobody knows).
    let r = env.run_stdin(&["--json", "ask", "-"], r#"{"questions": []}"#);
    assert_error(&r, "EMPTY_QUESTIONS");
    let r = env.ask(&json!({"id": "../escape", "questions": [{"id": "q", "question": "?"}]}));
    assert_error(&r, "BAD_REQUEST");

    let rejected = list(&env, &["--status", "rejected"]);
    assert_eq!(rejected.len(), 4, "{rejected:#?}");
    let codes: Vec<&str> = rejected
        .iter()
        .map(|r| r["errorCode"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        [
            "BAD_REQUEST",
            "EMPTY_QUESTIONS",
            "DUPLICATE_ID",
            "EMPTY_QUESTIONS"
        ],
        "newest first"
    );
    assert_eq!(rejected[0]["id"], Value::Null);
    assert_eq!(rejected[1]["id"], Value::Null);
    assert_eq!(rejected[2]["id"], "own");
    assert_eq!(env.names("outbox"), ["rj1.json"]);
    assert!(!env.dir.path().join("escape.json").exists());
    assert!(!env.root().join("escape.json").exists());
    assert_eq!(ids(&list(&env, &["--status", "pending"])), ["own"]);
}

// ---------------------------------------------------------------------------------------
// Waiting on another process
// ---------------------------------------------------------------------------------------

#[test]
fn wait_returns_promptly_when_another_process_answers() {
    let env = Env::new();
    env.ask(&simple_request("wt")).ok();
    let waiter = spawn(&env, &["--json", "wait", "wt"]);
    // An `ask --wait` for a request submitted by the same command.
    let path = write_json(&env, &simple_request("wt2"));
    let mut asker = spawn(&env, &["--json", "ask", path.to_str().unwrap(), "--wait"]);
    assert!(
        wait_until(DEADLINE, || env.json(&["show", "wt2"]).code == 0),
        "ask --wait did not submit"
    );
    assert!(
        asker.try_wait().unwrap().is_none(),
        "ask --wait returned before an answer"
    );

    let answered_at = Instant::now();
    let out = env
        .json(&["answer", "wt", "--select", "SQLite"])
        .ok()
        .json();
    let w = finish(waiter, Duration::from_secs(10)).ok();
    assert!(answered_at.elapsed() < Duration::from_secs(10));
    assert_eq!(w.json(), out, "wait prints the outcome document");

    env.json(&["cancel", "wt2", "--reason", "later"]).ok();
    let a = finish(asker, Duration::from_secs(10));
    assert_eq!(a.code, 8, "{a:?}");
    let doc = a.json();
    assert_error_outcome(&doc, "wt2", "ASK_CANCELLED");
    assert_eq!(doc, env.outcome("wt2").unwrap());
}

/// A stdout whose reader is already gone: the write end of a pipe with its read end closed.
fn closed_pipe() -> Stdio {
    use std::os::fd::{FromRawFd, OwnedFd};
    let mut fds = [0; 2];
    // SAFETY: pipe fills the two descriptors it creates; each is owned exactly once below.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    // SAFETY: both descriptors were just created by pipe and are not used elsewhere.
    let (reader, writer) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(reader);
    Stdio::from(writer)
}

#[test]
fn a_reading_command_whose_reader_went_away_ends_quietly_by_sigpipe() {
    use std::os::unix::process::ExitStatusExt;
    let env = Env::new();
    for i in 0..3 {
        env.ask(&simple_request(&format!("pipe{i}"))).ok();
    }
    // `dshq list | head -0`: the first write fails. It used to panic ("failed printing to
    // stdout: Broken pipe") with a backtrace on stderr and exit 101.
    for args in [&["list"][..], &["--json", "list"], &["export"]] {
        let out = env
            .command()
            .args(args)
            .stdout(closed_pipe())
            .output()
            .expect("run dshq");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "{args:?}: {:?} {stderr}",
            out.status
        );
    }
    // A command that writes the store keeps SIGPIPE ignored: the answer is committed and
    // the closed pipe is only an error on the way out, never a death halfway through.
    let out = env
        .command()
        .args(["answer", "pipe0", "--select", "Postgres"])
        .stdout(closed_pipe())
        .output()
        .expect("run dshq");
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(status_of(&env, "pipe0"), "answered");
    assert!(
        env.outcome("pipe0").is_some(),
        "the outcome file is written"
    );
}

/// `dshq list` shows by default what a reviewer needs: the open requests, as the page's
/// queue does; an answered request, or an attempt rejected under the id of a live one, only
/// with `--all` or `--status`.
#[test]
fn list_shows_the_open_requests_by_default() {
    let env = Env::new();
    env.ask(&simple_request("live")).ok();
    env.ask(&simple_request("done")).ok();
    env.json(&["answer", "done", "--select", "SQLite", "--name", "alice"])
        .ok();
    // The same id asked again with other content: a rejected attempt (DUPLICATE_ID).
    let mut other = simple_request("live");
    other["questions"][0]["question"] = json!("Which database, again?");
    assert_eq!(env.ask(&other).error_code(), "DUPLICATE_ID");

    let default = env.json(&["list"]).ok().json();
    let rows: Vec<(&str, &str)> = default
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["status"].as_str().unwrap()))
        .collect();
    assert_eq!(rows, [("live", "pending")], "{default}");
    let all = ids(&list(&env, &[]));
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(
        ids(&list(&env, &["--status", "rejected"])),
        ["live"],
        "the rejected attempt, asked for"
    );
    let r = env.run(&["list", "--all", "--status", "pending"]);
    assert_eq!(r.code, 2, "--all and --status do not combine: {r:?}");

    // Nothing open: the table says so, and how to see the rest.
    let quiet = Env::new();
    quiet.ask(&simple_request("a1")).ok();
    quiet
        .json(&["answer", "a1", "--select", "SQLite", "--name", "alice"])
        .ok();
    let out = quiet.run(&["list"]).ok().stdout;
    assert_eq!(out, "no open requests (--all shows every request)\n");
}
