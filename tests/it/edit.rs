//! Edit-then-approve through the real binary: `dshq answer --edit FILE` approves a plan
//! as edited; the outcome file gives the asker the proposal, the approved text and the
//! diff; the `answered` event records the same diff; the HTTP API takes `edited` in its
//! answer body; an edit where none is allowed (a decline, a question the asker did not
//! make editable) is refused with `EDIT_NOT_ALLOWED` and changes nothing. (The audit's
//! side, a tampered diff, is in [`crate::audit`]; the page's in [`crate::browser`]; the
//! terminal's in [`crate::interactive`].)

use serde_json::{json, Value};

use crate::api::{host, token};
use crate::helpers::*;

pub const PLAN: &str = "1. Drain node a\n2. Upgrade node a\n3. Run the smoke tests\n";
pub const EDITED: &str =
    "1. Drain node a\n2. Back up node a\n3. Upgrade node a\n4. Run the smoke tests\n";
pub const DIFF: &str = "--- proposed\n+++ approved\n@@ -1,3 +1,4 @@\n 1. Drain node a\n-2. Upgrade node a\n-3. Run the smoke tests\n+2. Back up node a\n+3. Upgrade node a\n+4. Run the smoke tests\n";

/// A plan review of [`PLAN`] (approve label `Approve`).
pub fn plan_review(id: &str) -> Value {
    json!({"id": id, "questions": [{"id": "plan", "question": "Approve the deploy plan?",
        "detail": PLAN, "options": [{"label": "Approve"}, {"label": "Revise"}],
        "intent": {"kind": "plan-review", "approve": "Approve"}}]})
}

/// [`EDITED`] in a file of the root, as a reviewer's editor would leave it.
fn edited_file(env: &Env) -> String {
    let path = env.root().join(format!("edited-{}.md", unique()));
    std::fs::write(&path, EDITED).unwrap();
    path.to_str().unwrap().to_string()
}

fn answered_event(env: &Env, id: &str) -> Value {
    env.json(&["events", id])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["kind"] == "answered")
        .cloned()
        .expect("an answered event")
}

#[test]
fn an_edited_plan_is_in_the_chain_and_in_the_askers_outcome() {
    let env = Env::new();
    env.ask(&plan_review("p1")).ok();
    let file = edited_file(&env);
    // --edit alone on a plan review approves it as edited.
    let r = env
        .run(&["answer", "p1", "--name", "alice", "--edit", &file])
        .ok();
    assert!(
        r.stdout.contains("p1 answered by alice (approved)"),
        "{r:?}"
    );
    assert!(r.stdout.contains("plan: Approve, edited"), "{r:?}");
    assert!(
        r.stdout.contains("+2. Back up node a"),
        "the diff is printed: {r:?}"
    );

    // The asker's outcome file: the approved text, and that it was edited.
    let o = env.wait_outcome("p1");
    assert_eq!(o["status"], "answered");
    assert_eq!(o["decision"], "approved");
    assert_eq!(
        o["answer"]["answers"],
        json!([{"id": "plan", "selected": ["Approve"], "edited": EDITED}])
    );
    assert_eq!(
        o["edited"],
        json!({"plan": {"proposed": PLAN, "approved": EDITED, "diff": DIFF}})
    );

    // The chain: the answered event carries the same edit, and the audit verifies.
    let ev = answered_event(&env, "p1");
    assert_eq!(ev["data"]["edits"]["plan"]["diff"], DIFF);
    assert_eq!(ev["data"]["edits"]["plan"]["approved"], EDITED);
    assert_eq!(ev["data"]["edits"]["plan"]["proposed"], PLAN);
    assert_eq!(ev["actor"], "provider:alice");
    let v = env.json(&["audit", "verify"]).ok().json();
    assert_eq!(v["ok"], true, "{v}");
    // `show` gives the same outcome, and its text the diff.
    let shown = env.json(&["show", "p1"]).ok().json();
    assert_eq!(shown["outcome"], o, "{shown}");
    let text = env.run(&["show", "p1"]).ok().stdout;
    assert!(
        text.contains("approved as edited; the changes to the proposal:\n     --- proposed\n"),
        "{text}"
    );
    assert!(text.contains("     +2. Back up node a\n"), "{text}");
}

#[test]
fn an_edit_where_none_is_allowed_is_refused_and_changes_nothing() {
    let env = Env::new();
    env.ask(&plan_review("p1")).ok();
    let mut locked = plan_review("p2");
    locked["questions"][0]["editable"] = json!(false);
    env.ask(&locked).ok();
    env.ask(&json!({"id": "f1", "questions": [
        {"id": "msg", "question": "Commit message?", "detail": "Fix the bug"}]}))
        .ok();
    let file = edited_file(&env);

    let refused = |args: &[&str], id: &str| {
        let r = env.json(args);
        assert_eq!(r.code, 3, "{r:?}");
        assert_eq!(r.error_code(), "EDIT_NOT_ALLOWED", "{r:?}");
        assert_eq!(env.json(&["show", id]).ok().json()["status"], "pending");
        assert!(env.outcome(id).is_none());
        r
    };
    // With a decline (a pick that declines, or feedback).
    let r = refused(
        &[
            "answer", "p1", "--name", "a", "--select", "Revise", "--edit", &file,
        ],
        "p1",
    );
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("approval only"),
        "{r:?}"
    );
    refused(
        &[
            "answer", "p1", "--name", "a", "--custom", "no", "--edit", &file,
        ],
        "p1",
    );
    // A plan the asker made `editable: false`.
    refused(&["answer", "p2", "--name", "a", "--edit", &file], "p2");
    // A free-text question the asker did not make editable, through a whole answer.
    let doc = env.root().join("answer.json");
    std::fs::write(
        &doc,
        json!({"answers": [{"id": "msg", "selected": [], "edited": "Fix the parser bug"}]})
            .to_string(),
    )
    .unwrap();
    refused(
        &[
            "answer",
            "f1",
            "--name",
            "a",
            "--answers",
            doc.to_str().unwrap(),
        ],
        "f1",
    );
    // Only the acceptances are in the log.
    for id in ["p1", "p2", "f1"] {
        let kinds: Vec<Value> = env
            .json(&["events", id])
            .ok()
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].clone())
            .collect();
        assert_eq!(kinds, [json!("accepted")], "{id}");
    }
    // `editable: true` on a question with options is a bad request at acceptance.
    let bad = json!({"id": "b1", "questions": [{"id": "q", "question": "Pick", "detail": "x",
        "editable": true, "options": [{"label": "A"}]}]});
    let r = env.ask(&bad);
    assert_eq!(r.error_code(), "BAD_REQUEST", "{r:?}");
    assert!(r.stdout.contains("`editable` but has options"), "{r:?}");
}

#[test]
fn the_http_api_takes_an_edit_in_its_answer_body() {
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    env.ask(&plan_review("p1")).ok();
    env.ask(
        &json!({"id": "f1", "questions": [{"id": "msg", "question": "Commit message?",
        "detail": "Fix the bug", "editable": true}]}),
    )
    .ok();
    // A decline with an edit: 400, EDIT_NOT_ALLOWED, nothing changes.
    let r = h.post(
        "/requests/p1/answer",
        Some(&rita),
        &json!({"answers": [{"id": "plan", "selected": ["Revise"], "edited": EDITED}]}),
    );
    assert_eq!(
        (r.status, r.code()),
        (400, "EDIT_NOT_ALLOWED"),
        "{:?}",
        r.body
    );
    // The approval with the edit.
    let r = h.post(
        "/requests/p1/answer",
        Some(&rita),
        &json!({"answers": [{"id": "plan", "selected": ["Approve"], "edited": EDITED}]}),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["edited"]["plan"]["diff"], DIFF, "{:?}", r.body);
    assert_eq!(r.body["provider"], "web:rita");
    // An editable free-text question: the edit alone answers it.
    let r = h.post(
        "/requests/f1/answer",
        Some(&rita),
        &json!({"answers": [{"id": "msg", "selected": [], "edited": "Fix the parser bug"}]}),
    );
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(
        r.body["edited"]["msg"],
        json!({"proposed": "Fix the bug", "approved": "Fix the parser bug",
               "diff": "--- proposed\n+++ approved\n@@ -1 +1 @@\n-Fix the bug\n\\ No newline at end of file\n+Fix the parser bug\n\\ No newline at end of file\n"})
    );
    let o = env.wait_outcome("f1");
    assert_eq!(o["edited"]["msg"]["approved"], "Fix the parser bug");
    assert_eq!(env.json(&["audit", "verify"]).ok().json()["ok"], true);
}
