//! What a new user meets following the README: the audit commands of the tour say what
//! they seem to say (issue 11, item 20).

use serde_json::{json, Value};

use crate::helpers::*;

fn plan_batch(id: &str) -> Value {
    json!({
        "id": id,
        "questions": [
            {"id": "db", "header": "Storage", "question": "Which database should the service use?",
             "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
            {"id": "plan", "question": "Approve the migration plan?",
             "detail": "1. Add column\n2. Backfill",
             "options": [{"label": "Revise"}, {"label": "Ship it"}],
             "intent": {"kind": "plan-review", "approve": "Ship it"}}
        ]
    })
}

#[test]
fn history_filtered_by_intent_shows_the_plan_question() {
    let env = Env::new();
    env.ask(&plan_batch("deploy-42")).ok();
    let t = env
        .run(&["history", "--intent", "plan-review", "--format", "table"])
        .ok()
        .stdout;
    let row = t
        .lines()
        .find(|l| l.starts_with("deploy-42"))
        .unwrap_or_else(|| panic!("no row:\n{t}"));
    assert!(row.contains("Approve the migration plan? (+1)"), "{row}");
    assert!(!row.contains("Which database"), "{row}");

    // Unfiltered, the batch's first question stands for it, with the count of the others.
    let t = env.run(&["history", "--format", "table"]).ok().stdout;
    assert!(
        t.contains("Which database should the service use? (+1)"),
        "{t}"
    );
    // --grep picks the question it matched.
    let t = env
        .run(&["history", "--grep", "migration", "--format", "table"])
        .ok()
        .stdout;
    assert!(t.contains("Approve the migration plan?"), "{t}");
}

#[test]
fn export_keys_are_camel_case_and_json_export_is_one_document() {
    let env = Env::new();
    env.ask(&plan_batch("deploy-42")).ok();
    env.register("alice", "default", "5m");

    let ndjson = env.run(&["export"]).ok().stdout;
    let lines: Vec<Value> = ndjson
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() > 3, "{ndjson}");
    for v in &lines {
        for k in v.as_object().unwrap().keys() {
            assert!(!k.contains('_'), "snake_case key {k:?} in {v}");
        }
    }
    let req = lines.iter().find(|v| v["type"] == "request").unwrap();
    assert!(req.get("createdMs").is_some(), "{req}");
    let q = lines.iter().find(|v| v["type"] == "question").unwrap();
    assert!(q.get("requestSeq").is_some(), "{q}");

    // --json: exactly one document, holding the same records.
    let doc = env.json(&["export"]).ok().json();
    let arr = doc.as_array().expect("one JSON array");
    assert_eq!(arr, &lines);

    // An empty store exports an empty array, still one document.
    let empty = Env::new();
    // A write creates the root (a read does not: NO_ROOT); a token is no export record.
    token_create(&empty);
    let doc = empty.json(&["export"]).ok().json();
    assert_eq!(doc, json!([]));
}

/// `dshq token create`: a write that creates the root and adds no export record.
fn token_create(env: &Env) {
    env.run(&["token", "create", "--role", "auditor", "--name", "audit"])
        .ok();
}
