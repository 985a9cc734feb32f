//! Closed sets on the command line are typed: clap lists the values and refuses others as
//! `USAGE` before any command runs (typed CLI values).

use crate::helpers::*;

#[test]
fn closed_set_flags_list_their_values_and_refuse_others() {
    let env = Env::new();
    // A read needs a root (NO_ROOT otherwise): a write makes one.
    env.ask(&simple_request("f1")).ok();
    for (cmd, flag, good, bad) in [
        ("list", "--status", "pending", "done"),
        ("history", "--status", "rejected", "done"),
        ("history", "--code", "ASK_CANCELLED", "ASK_CANCELED"),
        ("history", "--decision", "declined", "maybe"),
    ] {
        env.run(&[cmd, flag, good]).ok();
        let r = env.json(&[cmd, flag, bad]);
        assert_eq!(r.code, 2, "{cmd} {flag} {bad}: {r:?}");
        assert_eq!(r.error_code(), "USAGE", "{cmd} {flag} {bad}: {r:?}");
        let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(msg.contains(good), "the message lists {good}: {msg}");
    }
    // Every stable code is offered, including the last one declared.
    let help = env.run(&["history", "--help"]).ok().stdout;
    for code in ["BAD_REQUEST", "DAEMON_RUNNING", "IO"] {
        assert!(help.contains(code), "{code} not in --help:\n{help}");
    }
}

/// `--json` promises exactly one JSON document on stdout; `history --format csv` (or
/// ndjson, or table) beside it printed CSV (or many documents) instead, which a program
/// passing `--json` everywhere cannot read. The conflict is a usage error, as one document.
#[test]
fn json_with_another_history_format_is_a_usage_error() {
    let env = Env::new();
    env.ask(
        &serde_json::json!({"id": "h1", "questions": [{"id": "q", "question": "Q?",
        "options": [{"label": "A"}]}]}),
    )
    .ok();
    for format in ["csv", "ndjson", "table"] {
        let r = env.json(&["history", "--format", format]);
        assert_eq!(r.error_code(), "USAGE", "--format {format}: {r:?}");
        assert_ne!(r.code, 0);
        r.json();
    }
    let r = env.json(&["history", "--format", "json"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json().as_array().map(Vec::len), Some(1));
}
