//! Tables, filters and the feed: `list` filters, text `show`, tables that fit
//! the terminal, and `watch` over every lifecycle event. Each through the real binary.

use serde_json::{json, Value};

use crate::helpers::*;

/// `dshq agent enter --id ID`; returns the instance.
fn enter(env: &Env, id: &str) -> String {
    let v = env.json(&["agent", "enter", "--id", id]).ok().json();
    v["instance"].as_str().unwrap().to_string()
}

/// A request in `context`, asked by `agent` (entered), with one question `text`, a
/// plan-review intent when `plan`.
fn request(id: &str, context: &str, agent: Option<(&str, &str)>, text: &str, plan: bool) -> Value {
    let mut q = json!({"id": "q", "question": text,
                       "options": [{"label": "Revise"}, {"label": "Ship it"}]});
    if plan {
        q["detail"] = json!("1. migrate\n2. verify");
        q["intent"] = json!({"kind": "plan-review", "approve": "Ship it"});
    }
    let mut r = json!({"id": id, "context": context, "questions": [q]});
    if let Some((a, i)) = agent {
        r["agent"] = json!({"id": a, "instance": i});
    }
    r
}

/// The ids `dshq --json list ARGS` prints, in order.
fn ids(env: &Env, args: &[&str]) -> Vec<String> {
    // Every status unless the test picks one (the default is the open requests).
    let mut all = vec!["list"];
    if !args.contains(&"--status") {
        all.push("--all");
    }
    all.extend_from_slice(args);
    let v = env.json(&all).ok().json();
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

/// A queue of five over three contexts and two agents.
fn queue(env: &Env) {
    let a = enter(env, "alice");
    let b = enter(env, "bob");
    for r in [
        request("r1", "web", Some(("alice", &a)), "Which DATABASE?", false),
        request("r2", "web", Some(("bob", &b)), "Ship the plan?", true),
        request(
            "r3",
            "ops",
            Some(("alice", &a)),
            "Restart the cache?",
            false,
        ),
        request("r4", "data", None, "Which database for analytics?", false),
        request(
            "r5",
            "ops",
            Some(("bob", &b)),
            "Review the rollout plan",
            true,
        ),
    ] {
        env.ask(&r).ok();
    }
}

#[test]
fn list_filters_by_agent_contexts_intent_and_text() {
    let env = Env::new();
    queue(&env);
    assert_eq!(ids(&env, &[]), ["r5", "r4", "r3", "r2", "r1"]);
    assert_eq!(
        ids(&env, &["--oldest-first"]),
        ["r1", "r2", "r3", "r4", "r5"]
    );
    assert_eq!(ids(&env, &["--agent", "alice"]), ["r3", "r1"]);
    assert_eq!(ids(&env, &["--context", "ops"]), ["r5", "r3"]);
    assert_eq!(
        ids(
            &env,
            &["--context", "ops", "--context", "data", "--oldest-first"]
        ),
        ["r3", "r4", "r5"]
    );
    assert_eq!(ids(&env, &["--intent", "plan-review"]), ["r5", "r2"]);
    // Case-insensitive, a substring of the question text.
    assert_eq!(ids(&env, &["--grep", "database"]), ["r4", "r1"]);
    // Filters combine (AND).
    assert_eq!(
        ids(
            &env,
            &[
                "--agent",
                "bob",
                "--intent",
                "plan-review",
                "--context",
                "web"
            ]
        ),
        ["r2"]
    );
    assert_eq!(
        ids(&env, &["--grep", "nothing like this"]),
        Vec::<String>::new()
    );
    // A wildcard of SQL LIKE is plain text here.
    assert_eq!(ids(&env, &["--grep", "%"]), Vec::<String>::new());
    // The intent is a closed set: a typo is a usage error, not an empty list.
    let r = env.run(&["list", "--intent", "plan-reveiw"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("plan-review"), "{}", r.stderr);
}

#[test]
fn text_show_prints_meta_whole_and_who_answered() {
    let env = Env::new();
    let mut r = simple_request("m1");
    let long = "x".repeat(600);
    r["meta"] = json!({"ticket": "OPS-7", "long": long, "evil": "a\u{1b}[31mred"});
    env.ask(&r).ok();
    let lease = env.register("carol", "default", "5m");
    env.json(&["answer", "m1", "--select", "Postgres", "--lease", &lease])
        .ok();
    let out = env.run(&["show", "m1"]).ok().stdout;
    // Pretty-printed (one key a line) and whole.
    assert!(out.contains("\"ticket\": \"OPS-7\""), "{out}");
    assert!(out.contains(&long), "meta cut: {out}");
    assert!(
        !out.contains('\u{1b}'),
        "an escape reached the terminal: {out}"
    );
    let answered = out
        .lines()
        .find(|l| l.starts_with("answered"))
        .unwrap_or_else(|| panic!("no answered line: {out}"));
    assert!(answered.contains("by carol"), "{answered}");
    assert!(answered.contains("20"), "no time: {answered}");

    env.ask(&simple_request("m2")).ok();
    env.json(&["cancel", "m2", "--reason", "not needed", "--lease", &lease])
        .ok();
    let out = env.run(&["show", "m2"]).ok().stdout;
    assert!(
        out.lines()
            .any(|l| l.starts_with("cancelled") && l.contains(" by ")),
        "{out}"
    );
}

/// Run `dshq ARGS` on a pty `cols` wide and return what it printed (escapes kept, CRs
/// gone). `color`: leave `NO_COLOR` unset.
fn on_pty(env: &Env, cols: u16, args: &[&str], color: bool) -> String {
    use rexpect::session::{spawn_with_options, Options};
    let mut c = std::process::Command::new("sh");
    c.arg("-c")
        .arg(format!("stty rows 40 cols {cols} && exec \"$0\" \"$@\""))
        .arg(bin())
        .args(args)
        .env("DSHQ_ROOT", env.root())
        .env("TERM", "xterm-256color")
        .env("RUST_LOG", "warn")
        // Five minutes on: every age is some minutes, every 2h deadline in 1h.
        .env("DSHQ_CLOCK_SKEW", "+5m");
    if color {
        c.env_remove("NO_COLOR");
    } else {
        c.env("NO_COLOR", "1");
    }
    let mut p = spawn_with_options(
        c,
        Options {
            timeout_ms: Some(20_000),
            strip_ansi_escape_codes: false,
        },
    )
    .expect("spawn dshq on a pty");
    let out = p.exp_eof().expect("dshq ends");
    // The reader turns each byte into one char: back to UTF-8.
    let bytes: Vec<u8> = out.chars().map(|c| c as u32 as u8).collect();
    String::from_utf8_lossy(&bytes).replace('\r', "")
}

/// The columns `line` takes on a terminal (colour escapes take none).
fn width(line: &str) -> usize {
    dshq::output::display_width(line)
}

/// A queue with long questions, some with deadlines, from three agents.
fn long_queue(env: &Env) {
    let agents: Vec<(String, String)> = ["alice", "bob", "carol-the-reviewer"]
        .iter()
        .map(|a| (a.to_string(), enter(env, a)))
        .collect();
    for i in 0..12 {
        let (a, inst) = &agents[i % 3];
        let text = format!(
            "Question {i}: should we migrate the billing database to the new cluster before the freeze, given the open incidents?"
        );
        let mut r = request(
            &format!("req-{i:02}"),
            "web",
            Some((a, inst)),
            &text,
            i % 4 == 0,
        );
        if i % 2 == 0 {
            r["timeout"] = json!("2h");
        }
        env.ask(&r).ok();
    }
}

#[test]
fn list_fits_the_terminal_with_relative_ages_and_colour() {
    let env = Env::new();
    long_queue(&env);
    for cols in [60u16, 100, 160] {
        let out = on_pty(&env, cols, &["list"], false);
        assert!(out.contains("req-00") && out.contains("req-11"), "{out}");
        for l in out.lines() {
            assert!(width(l) <= cols as usize, "wider than {cols}: {l:?}\n{out}");
        }
        assert!(out.contains(" ago"), "no relative age at {cols}:\n{out}");
        assert!(
            out.contains("in 1h") || out.contains("in 2h"),
            "no deadline at {cols}:\n{out}"
        );
        assert!(!out.contains("Z "), "an absolute time at {cols}:\n{out}");
        assert!(!out.contains('\u{1b}'), "colour despite NO_COLOR:\n{out}");
    }
    // Narrow: the question gives way first, with an ellipsis; the ids stay whole.
    let out = on_pty(&env, 80, &["list"], false);
    assert!(out.contains('…'), "{out}");
    assert!(out.contains("req-05"), "{out}");
    // Colour on a terminal, unless NO_COLOR.
    let out = on_pty(&env, 100, &["list"], true);
    assert!(out.contains("\u{1b}["), "no colour on a terminal:\n{out}");
    for l in out.lines() {
        assert!(width(l) <= 100, "wider than 100: {l:?}");
    }
    // Piped: absolute times, no colour, no relative ages.
    let piped = env.run(&["list"]).ok().stdout;
    assert!(!piped.contains(" ago"), "{piped}");
    assert!(!piped.contains('\u{1b}'), "{piped}");
    let year = &dshq::clock::rfc3339(dshq::clock::now_ms())[..5];
    assert!(piped.contains(year) && piped.contains('Z'), "{piped}");
}

#[test]
fn history_fits_the_terminal_with_relative_ages() {
    let env = Env::new();
    long_queue(&env);
    for cols in [70u16, 120] {
        let out = on_pty(&env, cols, &["history"], false);
        assert!(out.contains("req-03"), "{out}");
        for l in out.lines() {
            assert!(width(l) <= cols as usize, "wider than {cols}: {l:?}\n{out}");
        }
        assert!(out.contains(" ago"), "no relative age at {cols}:\n{out}");
    }
    let piped = env.run(&["history", "--format", "table"]).ok().stdout;
    assert!(!piped.contains(" ago"), "{piped}");
    assert!(piped.contains('Z'), "{piped}");
}

/// A piped `dshq watch ARGS`: the child and a receiver of its stdout lines.
fn watch(env: &Env, args: &[&str]) -> (std::process::Child, std::sync::mpsc::Receiver<Value>) {
    use std::io::{BufRead, BufReader};
    let mut all = vec!["watch"];
    all.extend_from_slice(args);
    let mut child = env
        .command()
        .args(&all)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let v: Value = serde_json::from_str(&line).expect("each line is one JSON document");
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// The next `n` lines as (id, event kind or "open").
fn next(rx: &std::sync::mpsc::Receiver<Value>, n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|_| {
            let v = rx.recv_timeout(DEADLINE).expect("a line is printed");
            let kind = v["event"]["kind"].as_str().unwrap_or("open").to_string();
            (v["id"].as_str().unwrap().to_string(), kind)
        })
        .collect()
}

#[test]
fn watch_follows_every_lifecycle_event_with_filters() {
    let env = Env::new();
    let alice = enter(&env, "alice");
    let bob = enter(&env, "bob");
    env.ask(&request(
        "r0",
        "default",
        Some(("alice", &alice)),
        "Open?",
        false,
    ))
    .ok();
    // Two watchers; each prints the open request first, so once it is out it follows.
    let (mut a, arx) = watch(&env, &["--pending", "--agent", "alice", "--count", "6"]);
    let (mut k, krx) = watch(
        &env,
        &[
            "--pending",
            "--events",
            "answered,cancelled",
            "--count",
            "3",
        ],
    );
    assert_eq!(next(&arx, 1), [("r0".into(), "open".into())]);
    assert_eq!(next(&krx, 1), [("r0".into(), "open".into())]);

    let s = |x: &str| x.to_string();
    env.ask(&request(
        "r1",
        "default",
        Some(("alice", &alice)),
        "One?",
        false,
    ))
    .ok();
    env.ask(&request(
        "r2",
        "default",
        Some(("bob", &bob)),
        "Two?",
        false,
    ))
    .ok();
    env.ask(&request(
        "r3",
        "default",
        Some(("alice", &alice)),
        "Three?",
        false,
    ))
    .ok();
    let lease = env.register("carol", "default", "5m");
    env.json(&["claim", "r1", "--lease", &lease]).ok();
    env.json(&["answer", "r1", "--select", "Revise", "--lease", &lease])
        .ok();
    env.json(&["cancel", "r2", "--reason", "no", "--lease", &lease])
        .ok();
    env.json(&["abort", "r3", "--reason", "gone"]).ok();

    assert_eq!(
        next(&arx, 5),
        [
            (s("r1"), s("accepted")),
            (s("r3"), s("accepted")),
            (s("r1"), s("claimed")),
            (s("r1"), s("answered")),
            (s("r3"), s("aborted")),
        ]
    );
    assert_eq!(
        next(&krx, 2),
        [(s("r1"), s("answered")), (s("r2"), s("cancelled"))]
    );
    // --count reached: both exit by themselves.
    for c in [&mut a, &mut k] {
        let mut status = None;
        assert!(wait_until(DEADLINE, || {
            status = c.try_wait().unwrap();
            status.is_some()
        }));
        assert!(status.unwrap().success());
    }
    // The kinds are a closed set (a run with a real kind would follow for ever: a
    // name no event has is refused at once).
    let r = env.run(&["watch", "--events", "answered,exploded"]);
    assert_ne!(r.code, 0, "{r:?}");
    assert!(r.stderr.contains("cancelled"), "{}", r.stderr);
}

#[test]
fn history_takes_several_contexts() {
    let env = Env::new();
    queue(&env);
    let v = env
        .json(&["history", "--context", "ops", "--context", "data"])
        .ok()
        .json();
    let mut got: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    got.sort_unstable();
    assert_eq!(got, ["r3", "r4", "r5"]);
}

#[test]
fn watch_on_a_terminal_names_each_event() {
    use crate::interactive::{expect, spawn};
    let env = Env::new();
    // A read needs a root (NO_ROOT otherwise): a write makes one.
    env.run(&["token", "create", "--role", "auditor", "--name", "audit"])
        .ok();
    let mut p = spawn(&env, &["watch", "--count", "2"], &[]);
    expect(&mut p, "watching for new requests in every context");
    env.ask(&simple_request("t1")).ok();
    env.json(&["abort", "t1", "--reason", "gone"]).ok();
    expect(&mut p, "accepted   t1  [default]  Which database?");
    expect(&mut p, "aborted    t1  [default]  Which database?  (by ");
    let _ = p.exp_eof();
}
