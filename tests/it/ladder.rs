//! The deadline ladder through the real binary: a request asked with `dshq ask`,
//! the daemon started on a shifted clock (`DSHQ_CLOCK_SKEW`, the `test-clock` feature)
//! wakes for each rung by itself, `dshq events` shows each rung, `dshq wait` ends with
//! `ASK_EXPIRED` (exit 8), a declared default is published as decided by policy, and
//! `dshq audit verify` passes; a bad ladder is `BAD_REQUEST` (exit 3).

use serde_json::{json, Value};

use crate::helpers::*;

const DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

fn request(id: &str, ladder: Value) -> Value {
    json!({
        "id": id,
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}],
        "ladder": ladder,
    })
}

/// The kinds of request `id`'s events, in order.
pub(crate) fn kinds(env: &Env, id: &str) -> Vec<String> {
    env.json(&["events", id])
        .ok()
        .json()
        .as_array()
        .expect("events as a JSON array")
        .iter()
        .map(|e| e["kind"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_daemon_climbs_the_ladder_on_its_own() {
    let env = Env::new();
    env.ask(&request(
        "r",
        json!({"remindAfter": "1m", "escalateAfter": "2m", "escalateTo": "oncall",
               "expireAfter": "3m"}),
    ))
    .ok();
    // 90 s later: the reminder, and nothing else (the daemon sleeps until the next rung).
    let d = env.daemon_with(&[], &[("DSHQ_CLOCK_SKEW", "+90s")]);
    assert!(
        wait_until(DEADLINE, || kinds(&env, "r").contains(&"reminded".into())),
        "{:?}\n{}",
        kinds(&env, "r"),
        d.log_text()
    );
    assert_eq!(kinds(&env, "r"), ["accepted", "reminded"]);
    assert_eq!(d.stop(), 0);
    // 150 s: escalated, and moved to the on-call context.
    let d = env.daemon_with(&[], &[("DSHQ_CLOCK_SKEW", "+150s")]);
    assert!(wait_until(DEADLINE, || kinds(&env, "r").contains(&"escalated".into())));
    let shown = env.json(&["show", "r"]).ok().json();
    assert_eq!(shown["context"], "oncall", "{shown}");
    assert_eq!(shown["status"], "pending");
    assert_eq!(d.stop(), 0);
    // 4 minutes: nobody answered.
    let _d = env.daemon_with(&[], &[("DSHQ_CLOCK_SKEW", "+4m")]);
    let out = env.wait_outcome("r");
    assert_eq!(out["status"], "error");
    assert_eq!(out["error"]["code"], "ASK_EXPIRED", "{out}");
    assert!(out.get("answer").is_none());
    assert_eq!(
        kinds(&env, "r"),
        ["accepted", "reminded", "escalated", "expired"]
    );
    let w = env.run(&["wait", "r", "--timeout", "5s"]);
    assert_eq!(w.code, 8, "{}", w.stderr);
    env.json(&["audit", "verify"]).ok();
}

#[test]
fn a_declared_default_is_published_as_decided_by_policy() {
    let env = Env::new();
    env.ask(&request(
        "d",
        json!({"expireAfter": "1m", "onExpire": "default",
               "default": {"answers": [{"id": "db", "selected": ["SQLite"]}]}}),
    ))
    .ok();
    // A follower of the lifecycle (`dshq watch`, as the page's stream) hears the expiry:
    // its first line (the open request, `--pending`) says it follows; the second is the
    // expiry.
    let mut watch = env
        .command()
        .args([
            "--json",
            "watch",
            "--pending",
            "--events",
            "expired",
            "--count",
            "2",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(watch.stdout.take().unwrap()));
    let first: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["id"], "d", "{first}");
    let _d = env.daemon_with(&[], &[("DSHQ_CLOCK_SKEW", "+2m")]);
    let out = env.wait_outcome("d");
    let change: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let _ = watch.wait();
    assert_eq!(change["id"], "d", "{change}");
    assert_eq!(change["status"], "answered", "{change}");
    assert_eq!(out["status"], "answered", "{out}");
    assert_eq!(out["decidedBy"], "policy");
    assert_eq!(out["provider"], Value::Null);
    assert_eq!(out["answer"]["answers"][0]["selected"], json!(["SQLite"]));
    env.json(&["audit", "verify"]).ok();

    // A default that is not declared as the expiry's choice is refused, naming why.
    let r = env.ask(&request(
        "x",
        json!({"expireAfter": "1m",
               "default": {"answers": [{"id": "db", "selected": ["SQLite"]}]}}),
    ));
    assert_eq!(r.error_code(), "BAD_REQUEST");
    assert_eq!(r.code, 3);
}
