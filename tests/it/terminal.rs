//! Asker-supplied text never reaches the reviewer's terminal as control
//! bytes. Every human-readable command prints a hostile request (escape sequences, OSC,
//! BEL, CR, a C1 CSI, bidi overrides in every field an asker or provider controls) with
//! visible escapes such as `\x1b` instead, while `--json` stays exact.

use serde_json::{json, Value};

use crate::helpers::*;

/// ESC ] 0 ; title BEL (retitle), ESC [ 2 J (clear), CR (overwrite), C1 CSI, RLO, LRI.
const HOSTILE: &str = "Q\u{1b}]0;PWNED\u{7}\u{1b}[2J\rFORGED\u{9b}31m\u{202e}drawkcab\u{2066}x";

/// Characters that must not appear in human output.
const FORBIDDEN: [char; 7] = [
    '\u{1b}', '\u{7}', '\u{9b}', '\r', '\u{202e}', '\u{2066}', '\u{85}',
];

fn assert_clean(what: &str, out: &str) {
    for c in FORBIDDEN {
        assert!(
            !out.contains(c),
            "{what} printed {c:?} raw:\n{}",
            out.escape_debug()
        );
    }
    assert!(
        out.contains("\\x1b]0;PWNED\\x07\\x1b[2J"),
        "{what} does not show the visible escape:\n{}",
        out.escape_debug()
    );
}

fn hostile_request(id: &str, instance: &str) -> Value {
    json!({
        "id": id,
        "agent": {"id": "a1", "instance": instance},
        "questions": [
            {"id": "db", "header": format!("H{HOSTILE}"), "question": HOSTILE,
             "detail": format!("line one\n{HOSTILE}\nline three"),
             "options": [{"label": format!("L{HOSTILE}"), "description": format!("D{HOSTILE}")},
                         {"label": "plain"}]},
            {"id": "note", "question": format!("second {HOSTILE}")}
        ],
        "meta": {"ticket": HOSTILE}
    })
}

#[test]
fn hostile_text_is_escaped_in_every_human_output() {
    let env = Env::new();
    let entered = env
        .json(&["agent", "enter", "--id", "a1", "--lineage", HOSTILE])
        .ok()
        .json();
    let instance = entered["instance"].as_str().unwrap().to_string();
    env.ask(&hostile_request("h1", &instance)).ok();
    env.ask(&hostile_request("h2", &instance)).ok();
    let lease = env.register(HOSTILE, "default", "10m");
    // h1 answered by the hostile provider, with hostile custom text.
    let answered = env.run(&[
        "answer",
        "h1",
        "--lease",
        &lease,
        "--question",
        "db",
        "--select",
        &format!("L{HOSTILE}"),
        "--question",
        "note",
        "--custom",
        HOSTILE,
    ]);
    assert_eq!(answered.code, 0, "{answered:?}");
    assert_clean("answer", &answered.stdout);
    // h2 claimed by it.
    env.json(&["claim", "h2", "--lease", &lease]).ok();
    // A rejected inbox file whose raw bytes hold the control characters themselves (not
    // JSON escapes): the daemon records it under the id its name gives.
    let raw = format!(r#"{{"id": "rj1", "questions": [{{"id": "q", "question": "{HOSTILE}"}}]}}"#);
    let d = env.daemon();
    env.drop_file("rj1.json", raw.as_bytes());
    assert!(wait_until(DEADLINE, || env.json(&["show", "rj1"]).code == 0));
    assert_eq!(d.stop(), 0);

    for (what, args) in [
        ("list", vec!["list"]),
        ("show answered", vec!["show", "h1"]),
        ("show claimed", vec!["show", "h2"]),
        ("history table", vec!["history", "--format", "table"]),
        ("events", vec!["events", "h1"]),
        ("agent list", vec!["agent", "list"]),
        ("provider status", vec!["provider", "status"]),
        ("stats", vec!["stats"]),
    ] {
        let r = env.run(&args);
        assert_eq!(r.code, 0, "{what}: {r:?}");
        if what == "stats" {
            // The provider name is there, escaped; the question text is not shown.
            assert!(
                !FORBIDDEN.iter().any(|c| r.stdout.contains(*c)),
                "{}",
                r.stdout.escape_debug()
            );
            assert!(
                r.stdout.contains("\\x1b]0;PWNED"),
                "{}",
                r.stdout.escape_debug()
            );
            continue;
        }
        assert_clean(what, &r.stdout);
    }
    // A table row stays one row: the CR and the forged text are inside the cell.
    let list = env.run(&["list"]).stdout;
    assert!(!list.lines().any(|l| l.starts_with("FORGED")), "{list}");
    // show prints every field an asker controls.
    let show = env.run(&["show", "h1"]).stdout;
    for part in ["H", "L", "D", "second "] {
        assert!(
            show.contains(&format!("{part}Q\\x1b]0;PWNED")),
            "show lacks {part:?}:\n{}",
            show.escape_debug()
        );
    }
    assert!(show.contains("meta "), "{show}");
    assert!(show.contains("\\u{202e}drawkcab"), "{show}");
    // The rejected input shows its raw bytes escaped.
    let rj = env.run(&["show", "rj1"]);
    assert_eq!(rj.code, 0, "{rj:?}");
    assert_clean("show rejected", &rj.stdout);
    // The provider's own stderr line at registration.
    let r = env.run(&[
        "provider",
        "register",
        "--name",
        HOSTILE,
        "--context",
        "other",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_clean("provider register (stderr)", &r.stderr);
    // validate names a file whose name holds the hostile text.
    let path = env.dir.path().join(format!("{HOSTILE}.json"));
    std::fs::write(&path, b"{not json").unwrap();
    let r = env.run(&["validate", path.to_str().unwrap()]);
    assert_ne!(r.code, 0, "{r:?}");
    assert_clean("validate", &r.stdout);
    // JSON stays exact.
    let v = env.json(&["show", "h1"]).ok().json();
    assert_eq!(v["questions"][0]["question"], HOSTILE);
    assert_eq!(v["meta"]["ticket"], HOSTILE);
}
