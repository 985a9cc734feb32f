//! The layers' observable promises: each rejection records who rejected it.

use serde_json::{json, Value};

use crate::helpers::*;

fn events_of(env: &Env, id: &str) -> Vec<Value> {
    let v = env.json(&["events", id]).ok().json();
    v.as_array()
        .unwrap_or_else(|| panic!("events is an array: {v}"))
        .clone()
}

#[test]
fn a_rejection_by_dshq_ask_records_the_cli_as_its_actor() {
    let env = Env::new();
    let bad = json!({"id": "rej-cli", "questions": []});
    let r = env.ask(&bad);
    assert_ne!(r.code, 0, "an empty request is refused: {r:?}");
    assert_eq!(r.error_code(), "EMPTY_QUESTIONS", "{r:?}");

    let ev = events_of(&env, "rej-cli");
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["kind"], "rejected");
    assert_eq!(ev[0]["actor"], "cli", "{ev:?}");
    assert_eq!(ev[0]["data"]["source"], "cli");

    // The human table says the same.
    let text = env.run(&["events", "rej-cli"]).ok().stdout;
    assert!(text.contains("cli"), "{text}");
    assert!(!text.contains("daemon"), "{text}");
    // And the record still verifies.
    env.json(&["audit", "verify"]).ok();
}

#[test]
fn a_rejection_by_the_daemon_records_the_daemon_as_its_actor() {
    let env = Env::new();
    let d = env.daemon();
    env.drop_file("rej-inbox.json", br#"{"id": "rej-inbox", "questions": []}"#);
    let outcome = env.wait_outcome("rej-inbox");
    assert_eq!(outcome["error"]["code"], "EMPTY_QUESTIONS", "{outcome}");
    let ev = events_of(&env, "rej-inbox");
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["actor"], "daemon", "{ev:?}");
    assert_eq!(ev[0]["data"]["source"], "inbox:rej-inbox.json");
    d.stop();
}
