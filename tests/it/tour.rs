//! What a new user meets following the README: its tour runs as written and prints what the
//! README shows, and the audit commands of the tour say what they seem to say.
//!
//! The tour is README.md between `<!-- tour:begin -->` and `<!-- tour:end -->`: a session of
//! the kind `tests/it/docs.rs` runs for the guide, with the same runner. Every `$ ` line of
//! its `console` blocks is run in bash on a terminal 100 columns wide, with `dshq` (this
//! build) first on `PATH`, the variables it exports carried to the next line, and the working
//! directory a temporary one that stands for `/tmp/tour`; `dshq daemon` is started in the
//! background and its log is its output. What the terminal shows must be the lines under the
//! command, ignoring only times (timestamps, ages, durations, `deadlineMs`), ids (the audit
//! head's hash, the temporary directory) and the spaces that align columns around them. A
//! file the tour uses is the `json` block after `<!-- tour:file NAME -->`. Between commands
//! the test waits, as a person reading the log would, until the daemon has taken whatever is
//! in `inbox/new/`.
//!
//! `DSHQ_TOUR_TRANSCRIPT=FILE` writes what the terminal really showed, command by command,
//! to FILE: the text to paste into the README when the output changes on purpose.

use serde_json::{json, Value};

use crate::docs;
use crate::helpers::*;

#[test]
fn the_readme_tour_runs_as_written_and_prints_what_it_shows() {
    let tour = docs::sessions()
        .into_iter()
        .find(|s| s.page == "README.md" && s.name == "tour")
        .expect("README.md marks its tour with <!-- tour:begin --> and <!-- tour:end -->");
    let steps: usize = docs::blocks(
        "README.md",
        &std::fs::read_to_string(repo().join("README.md")).unwrap(),
    )
    .iter()
    .filter(|b| {
        b.marker
            == Some(docs::Marker::Run {
                session: "tour".into(),
                postgres: false,
            })
    })
    .map(|b| docs::steps(&b.body).len())
    .sum();
    assert!(steps >= 10, "{steps} steps");
    let (failures, transcript) = docs::run_session(&tour);
    if let Ok(path) = std::env::var("DSHQ_TOUR_TRANSCRIPT") {
        std::fs::write(path, &transcript).unwrap();
    }
    assert!(
        failures.is_empty(),
        "the README's tour no longer matches the binary ({} steps differ; \
         DSHQ_TOUR_TRANSCRIPT=FILE writes the real output):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_tour_parser_finds_commands_their_output_and_files() {
    let text = "intro\n<!-- tour:begin -->\n<!-- tour:file q.json -->\n```json\n{\"a\": 1}\n```\n\
                ```console\n$ export X=1\n$ cat q.json \\\n  | wc -l\n1\n```\n<!-- tour:end -->\n\
                ```console\n$ not this\n```\n";
    let blocks = docs::blocks("README.md", text);
    assert_eq!(
        blocks[0].marker,
        Some(docs::Marker::File {
            session: "tour".into(),
            path: "q.json".into(),
            append: false
        })
    );
    assert_eq!(blocks[0].body, vec!["{\"a\": 1}"]);
    assert_eq!(
        blocks[1].marker,
        Some(docs::Marker::Run {
            session: "tour".into(),
            postgres: false
        })
    );
    assert_eq!(blocks[2].marker, None);
    let steps = docs::steps(&blocks[1].body);
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].command, "export X=1");
    assert!(steps[0].expected.is_empty());
    assert_eq!(steps[1].command, "cat q.json \\\n  | wc -l");
    assert_eq!(steps[1].expected, vec!["1"]);
    assert_eq!(
        docs::normalize("deploy-42  default  pending  2m ago  in 7h   -", "/x"),
        "deploy-42 default pending <age> <age> -"
    );
    assert_eq!(
        docs::normalize(
            "ok: 4 events; head 4 af9ae3e97ab9a1face590681bb464bd7e137587d16d5813cd8ab095bcf71beb9",
            "/x"
        ),
        "ok: 4 events; head 4 <hash>"
    );
    assert_eq!(
        docs::normalize("WAIT 1s 30ms answered", "/x"),
        "WAIT <duration> answered"
    );
    assert!(docs::same_line(
        "a b Approve the migratio…",
        "a b Approve the migration…"
    ));
    assert!(docs::same_line(
        "a b Approve…",
        "a b Approve the migration…"
    ));
    assert!(!docs::same_line(
        "a b Approve the plan…",
        "a b Reject the plan…"
    ));
    assert!(!docs::same_line(
        "a b Approve",
        "a b Approve the migration…"
    ));
}

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
