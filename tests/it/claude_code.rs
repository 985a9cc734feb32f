//! `dshq claude-code hook` against Claude Code's documented hook contract: the
//! `PreToolUse` event on stdin exactly as the hooks reference shows it, and the exact
//! `hookSpecificOutput` the hook prints: `allow` with `updatedInput` (the answers, the
//! approved plan as edited), `deny` with the feedback, and every failure the blocking
//! exit status 2. Claude Code itself is not run (it needs an account and the network):
//! a stand-in process runs the hook through `sh -c` as Claude Code does and exits when
//! told, and `resume` runs a recorder in its place that notes how and when it was called.
//! The reviewer is the real CLI.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{wait_until, Env, Run, DEADLINE};

const SESSION: &str = "8f2c7a4e-1d3b-4c5a-9e6f-0a1b2c3d4e5f";
/// sha256(SESSION, NUL, tool use id), first 16 bytes in hex, computed apart from dshq.
const ASK_ID: &str = "cc-aa94cb27b62fdc7af64d02c6e002939c";
const PLAN_ID: &str = "cc-23c7f05367f7c25009f58c491edca5e4";

fn questions() -> Value {
    json!([
        {"question": "Which database should the service use?", "header": "Database",
         "options": [{"label": "Postgres", "description": "Shared, durable"},
                     {"label": "SQLite", "description": "One file"}],
         "multiSelect": false},
        {"question": "Which checks should run before deploying?", "header": "Checks",
         "options": [{"label": "Unit tests", "description": "Fast"},
                     {"label": "Integration tests", "description": "Slow"},
                     {"label": "Lint", "description": "Style"}],
         "multiSelect": true}
    ])
}

/// A PreToolUse event as Claude Code writes it.
fn event(cwd: &Path, tool: &str, tool_use_id: &str, input: Value) -> String {
    json!({
        "session_id": SESSION,
        "transcript_path": format!("/home/u/.claude/projects/p/{SESSION}.jsonl"),
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": tool_use_id
    })
    .to_string()
}

fn ask_event(env: &Env) -> String {
    event(
        env.dir.path(),
        "AskUserQuestion",
        "toolu_01AskQuestions",
        json!({"questions": questions()}),
    )
}

fn plan_event(env: &Env) -> String {
    event(
        env.dir.path(),
        "ExitPlanMode",
        "toolu_02ExitPlan",
        json!({"plan": "# Plan\n\n1. Add the `orders` table\n2. Backfill\n"}),
    )
}

/// Start `c` with piped streams and `stdin` written to it.
fn spawn_with(c: &mut std::process::Command, stdin: &str) -> std::process::Child {
    let mut child = c
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::helpers::feed(&mut child, stdin);
    child
}

/// A stand-in for the Claude Code process: it runs the hook through `sh -c` (a shell
/// between it and the hook, as Claude Code's command hooks have), writes the hook's
/// output to `hook.out`, and then stays until the file `release` appears; just before it
/// exits it writes the time (ns since the epoch) to `exited`.
const STAND_IN: &str = r#"
import os, subprocess, sys, time
d = sys.argv[1]
p = subprocess.run(["sh", "-c", '"$@"; status=$?; exit $status', "sh"] + sys.argv[2:],
                   stdin=sys.stdin, capture_output=True)
with open(os.path.join(d, "hook.out.tmp"), "wb") as f:
    f.write(b"%d\n" % p.returncode + p.stdout)
os.rename(os.path.join(d, "hook.out.tmp"), os.path.join(d, "hook.out"))
end = time.monotonic() + 60
while not os.path.exists(os.path.join(d, "release")) and time.monotonic() < end:
    time.sleep(0.01)
with open(os.path.join(d, "exited.tmp"), "w") as f:
    f.write(str(time.time_ns()))
os.rename(os.path.join(d, "exited.tmp"), os.path.join(d, "exited"))
"#;

/// A Claude Code stand-in running the hook with `args` on `stdin` (`PATH` as given).
struct StandIn {
    child: std::process::Child,
    dir: std::path::PathBuf,
}

impl StandIn {
    fn start(env: &Env, args: &[&str], path: Option<&str>, stdin: &str) -> StandIn {
        let dir = env.dir.path().join(format!("claude-{}", args.len()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let mut c = std::process::Command::new("python3");
        c.arg("-c")
            .arg(STAND_IN)
            .arg(&dir)
            .arg(crate::helpers::bin())
            .args(["claude-code", "hook"])
            .args(args)
            .env("DSHQ_ROOT", env.root())
            .env("RUST_LOG", "warn");
        if let Some(p) = path {
            c.env("PATH", p);
        }
        StandIn {
            child: spawn_with(&mut c, stdin),
            dir,
        }
    }

    /// The hook's exit status and stdout, once it ran.
    fn hook(&self) -> Run {
        let out = self.dir.join("hook.out");
        assert!(
            wait_until(DEADLINE, || out.exists()),
            "the hook did not run"
        );
        let text = fs::read_to_string(out).unwrap();
        let (code, stdout) = text.split_once('\n').unwrap();
        Run {
            code: code.parse().unwrap(),
            stdout: stdout.to_string(),
            stderr: String::new(),
        }
    }

    /// Let it exit; when it did (ns since the epoch).
    fn release(mut self) -> u128 {
        fs::write(self.dir.join("release"), "").unwrap();
        self.child.wait().unwrap();
        fs::read_to_string(self.dir.join("exited"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

fn hook(env: &Env, args: &[&str], stdin: &str) -> Run {
    let mut all = vec!["claude-code", "hook"];
    all.extend_from_slice(args);
    env.run_stdin(&all, stdin)
}

/// The decision the hook printed (its stdout is exactly one JSON document).
fn decision(r: &Run) -> Value {
    assert_eq!(r.code, 0, "hook failed: {r:?}");
    r.json()
}

fn defer_for(id: &str) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer",
        "permissionDecisionReason": format!("Waiting for a human: dshq request {id} (answer it with `dshq answer {id}`).")}})
}

#[test]
fn ask_user_question_defers_then_allows_with_the_cli_answers() {
    let env = Env::new();
    // No answer yet: the request is asked and the call deferred.
    let first = hook(&env, &[], &ask_event(&env));
    assert_eq!(decision(&first), defer_for(ASK_ID));
    let shown = env.json(&["show", ASK_ID]).ok().json();
    assert_eq!(shown["status"], "pending");
    let qs = shown["questions"].as_array().unwrap();
    assert_eq!(qs.len(), 2);
    assert_eq!(qs[0]["id"], "q1");
    assert_eq!(qs[0]["question"], "Which database should the service use?");
    assert_eq!(qs[0]["header"], "Database");
    assert_eq!(
        qs[0]["options"],
        json!([{"label": "Postgres", "description": "Shared, durable"},
               {"label": "SQLite", "description": "One file"}])
    );
    assert_eq!(qs[1]["multiSelect"], true);

    // The resumed run sends the same event again: the same request, still no answer.
    assert_eq!(
        decision(&hook(&env, &[], &ask_event(&env))),
        defer_for(ASK_ID)
    );
    assert_eq!(env.json(&["list"]).ok().json().as_array().unwrap().len(), 1);

    env.run(&[
        "answer",
        ASK_ID,
        "--question",
        "q1",
        "--select",
        "Postgres",
        "--question",
        "q2",
        "--select",
        "Unit tests",
        "--select",
        "Lint",
        "--custom",
        "and a smoke test",
    ])
    .ok();
    let allowed = hook(&env, &[], &ask_event(&env));
    assert_eq!(
        decision(&allowed),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
        "updatedInput": {
            "questions": questions(),
            "answers": {
                "Which database should the service use?": "Postgres",
                "Which checks should run before deploying?": "Unit tests, Lint, and a smoke test"
            }
        }}})
    );
    assert_eq!(allowed.stderr, "");
}

#[test]
fn a_free_text_answer_and_a_skipped_question() {
    let env = Env::new();
    hook(&env, &[], &ask_event(&env));
    env.run(&[
        "answer",
        ASK_ID,
        "--question",
        "q1",
        "--custom",
        "MariaDB",
        "--question",
        "q2",
        "--skip",
    ])
    .ok();
    let v = decision(&hook(&env, &[], &ask_event(&env)));
    assert_eq!(
        v["hookSpecificOutput"]["updatedInput"]["answers"],
        json!({"Which database should the service use?": "MariaDB"})
    );
}

#[test]
fn with_wait_the_hook_waits_for_the_answer_or_defers_after_it() {
    let env = Env::new();
    // Nobody answers: the hook waits the time configured, then defers.
    let started = Instant::now();
    let r = hook(&env, &["--wait", "1s"], &ask_event(&env));
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(decision(&r), defer_for(ASK_ID));

    // The answer comes while the hook waits: it allows, within the same run.
    let plan = plan_event(&env);
    let waiting = spawn_with(
        env.command().args(["claude-code", "hook", "--wait", "60s"]),
        &plan,
    );
    assert!(wait_until(DEADLINE, || env.json(&["show", PLAN_ID]).code == 0));
    env.run(&["answer", PLAN_ID, "--select", "Approve"]).ok();
    let out: Run = waiting.wait_with_output().unwrap().into();
    assert_eq!(
        decision(&out),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
            "updatedInput": {"plan": "# Plan\n\n1. Add the `orders` table\n2. Backfill\n"}}})
    );
}

#[test]
fn unanswered_deny_or_ask_end_the_request_instead_of_leaving_it_pending() {
    let env = Env::new();
    let id = ASK_ID;
    assert_eq!(
        decision(&hook(&env, &["--unanswered", "deny"], &ask_event(&env))),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": format!("No human answered dshq request {id} in time; it is closed. Carry on without the answer, or ask again later.")}})
    );
    // The request is over (aborted, saying why): no reviewer answers a question nobody
    // waits for, and it is not left pending forever.
    let shown = env.json(&["show", id]).ok().json();
    assert_eq!(shown["status"], "aborted");
    assert!(
        shown["outcome"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the call was denied"),
        "{shown}"
    );
    assert_eq!(
        env.json(&[
            "answer",
            id,
            "--question",
            "q1",
            "--select",
            "Postgres",
            "--question",
            "q2",
            "--skip"
        ])
        .error_code(),
        "REQUEST_FINAL"
    );
    // The same call again finds the ended request: denied, saying how it ended.
    let again = decision(&hook(&env, &["--unanswered", "deny"], &ask_event(&env)));
    assert_eq!(again["hookSpecificOutput"]["permissionDecision"], "deny");
    let plan = plan_event(&env);
    assert_eq!(
        decision(&hook(&env, &["--unanswered", "ask"], &plan)),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
            "permissionDecisionReason": format!("No human answered dshq request {PLAN_ID} in time (it is closed): Claude Code asks you instead.")}})
    );
    assert_eq!(
        env.json(&["show", PLAN_ID]).ok().json()["status"],
        "aborted"
    );
}

#[test]
fn exit_plan_mode_approved_allows_and_declined_denies_with_the_feedback() {
    let env = Env::new();
    assert_eq!(
        decision(&hook(&env, &[], &plan_event(&env))),
        defer_for(PLAN_ID)
    );
    let shown = env.json(&["show", PLAN_ID]).ok().json();
    let q = &shown["questions"][0];
    assert_eq!(
        q["detail"],
        "# Plan\n\n1. Add the `orders` table\n2. Backfill\n"
    );
    assert_eq!(
        q["intent"],
        json!({"kind": "plan-review", "approve": "Approve"})
    );
    env.run(&[
        "answer",
        PLAN_ID,
        "--custom",
        "Backfill in batches of 10k, not all at once",
    ])
    .ok();
    assert_eq!(
        decision(&hook(&env, &[], &plan_event(&env))),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "The reviewer declined the plan. Their feedback: Backfill in batches of 10k, not all at once"}})
    );
    assert_eq!(
        env.json(&["show", PLAN_ID]).ok().json()["outcome"]["decision"],
        "declined"
    );

    // The model revises the plan: a new ExitPlanMode call (a new tool use id), approved.
    let revised = event(
        env.dir.path(),
        "ExitPlanMode",
        "toolu_03ExitPlanAgain",
        json!({"plan": "# Plan\n\n1. Add the table\n2. Backfill in batches\n"}),
    );
    let r = hook(&env, &[], &revised);
    let id = decision(&r)["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .nth(6)
        .unwrap()
        .to_string();
    assert_ne!(id, PLAN_ID);
    env.run(&["answer", &id, "--select", "Approve"]).ok();
    assert_eq!(
        decision(&hook(&env, &[], &revised)),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
            "updatedInput": {"plan": "# Plan\n\n1. Add the table\n2. Backfill in batches\n"}}})
    );
}

#[test]
fn an_approved_edited_plan_reaches_claude_as_edited() {
    let env = Env::new();
    let ev = event(
        env.dir.path(),
        "ExitPlanMode",
        "toolu_04Edited",
        json!({"plan": "# Plan\n\n1. Drop the table\n", "allowedPrompts": [{"tool": "Bash", "prompt": "run tests"}]}),
    );
    let first = decision(&hook(&env, &[], &ev));
    let id = first["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .nth(6)
        .unwrap()
        .to_string();
    let edited = env.dir.path().join("edited.md");
    fs::write(
        &edited,
        "# Plan\n\n1. Archive the table first\n2. Then drop it\n",
    )
    .unwrap();
    env.run(&["answer", &id, "--edit", edited.to_str().unwrap()])
        .ok();
    // allow, with the plan the reviewer approved in place of Claude's, the rest of the
    // tool's input kept.
    assert_eq!(
        decision(&hook(&env, &[], &ev)),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
            "updatedInput": {"plan": "# Plan\n\n1. Archive the table first\n2. Then drop it\n",
                             "allowedPrompts": [{"tool": "Bash", "prompt": "run tests"}]}}})
    );
}

#[test]
fn a_cancelled_question_is_denied_saying_so() {
    let env = Env::new();
    hook(&env, &[], &ask_event(&env));
    env.run(&["cancel", ASK_ID, "--reason", "ask the data team instead"])
        .ok();
    let v = decision(&hook(&env, &[], &ask_event(&env)));
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("ASK_CANCELLED") && reason.contains("ask the data team instead"),
        "{reason}"
    );
}

#[test]
fn every_failure_is_the_blocking_deny_never_a_non_blocking_error() {
    let env = Env::new();
    let cwd = env.dir.path();
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "no hook event on stdin"),
        ("not json".into(), "not a Claude Code hook event"),
        ("[1, 2]".into(), "not a Claude Code hook event"),
        (
            json!({"hook_event_name": "PreToolUse", "session_id": SESSION, "tool_name": "AskUserQuestion",
                   "tool_input": {"questions": []}}).to_string(),
            "missing field `tool_use_id`",
        ),
        (
            event(cwd, "AskUserQuestion", "toolu_x", json!({"questions": "Which?"})),
            "AskUserQuestion's tool_input",
        ),
        (event(cwd, "ExitPlanMode", "toolu_y", json!({})), "ExitPlanMode's tool_input has no plan"),
        (
            event(cwd, "AskUserQuestion", "toolu_z", json!({"questions": []})),
            "EMPTY_QUESTIONS",
        ),
        (
            event(cwd, "AskUserQuestion", "toolu_w", json!({"questions": [{"question": "?",
                "options": [{"label": "A"}, {"label": "A"}]}]})),
            "BAD_REQUEST",
        ),
        (
            event(cwd, "AskUserQuestion", "toolu_v", json!({"questions": []}))
                .replace("\"PreToolUse\"", "\"PostToolUse\""),
            "this hook answers PreToolUse events, not \"PostToolUse\"",
        ),
        ("x".repeat(1024 * 1024 + 10), "over"),
    ];
    for (stdin, says) in cases {
        let r = hook(&env, &[], &stdin);
        assert_eq!(r.code, 2, "{says}: {r:?}");
        assert_eq!(r.stdout, "", "{says}");
        assert!(
            r.stderr.starts_with("dshq claude-code hook: "),
            "{says}: {}",
            r.stderr
        );
        assert!(r.stderr.contains(says), "{says}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    }
    // A flag Claude Code's settings got wrong blocks too, on one line.
    let r = hook(&env, &["--wait", "soon"], &ask_event(&env));
    assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{r:?}");
    assert!(
        r.stderr.starts_with("dshq claude-code hook: USAGE: "),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    // A store that fails (its database is not a database): blocked, not let through.
    let broken = Env::new();
    fs::create_dir_all(broken.root()).unwrap();
    fs::write(broken.root().join("dshq.db"), "not a database").unwrap();
    let r = hook(&broken, &[], &plan_event(&broken));
    assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{r:?}");
    assert!(r.stderr.contains("the call is blocked"), "{}", r.stderr);
    // Another tool: no opinion, no output, success.
    let other = event(cwd, "Bash", "toolu_b", json!({"command": "ls"}));
    let r = hook(&env, &[], &other);
    assert_eq!((r.code, r.stdout.as_str(), r.stderr.as_str()), (0, "", ""));
}

/// Answer the AskUserQuestion request `id` from the CLI: SQLite, and skip the checks.
fn answer_ask(env: &Env, id: &str) {
    env.run(&[
        "answer",
        id,
        "--question",
        "q1",
        "--select",
        "SQLite",
        "--question",
        "q2",
        "--skip",
    ])
    .ok();
}

/// A stand-in for `claude` that records its arguments and directory.
fn recorder(env: &Env) -> (std::path::PathBuf, std::path::PathBuf) {
    let log = env.dir.path().join("claude-ran.txt");
    let prog = env.dir.path().join("claude");
    fs::write(
        &prog,
        format!(
            "#!/bin/sh\n{{ date +%s%N; pwd; for a in \"$@\"; do echo \"$a\"; done; }} > {}.tmp\nmv {0}.tmp {0}\necho \"the resumed run's own output\"\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&prog, fs::Permissions::from_mode(0o755)).unwrap();
    (prog, log)
}

/// What the recorder noted: when it started (ns since the epoch), then its directory
/// and arguments.
fn recorded(log: &Path) -> (u128, String) {
    let text = fs::read_to_string(log).unwrap();
    let (started, rest) = text.split_once('\n').unwrap();
    (started.parse().unwrap(), rest.to_string())
}

/// The deferral of `id` by a hook run with `--resume`, naming the resumer's log.
fn defer_resuming(env: &Env, id: &str) -> Value {
    let log = env.root().join("claude-code").join(format!("{id}.log"));
    json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "defer",
        "permissionDecisionReason": format!("Waiting for a human: dshq request {id} (answer it with `dshq answer {id}`). Once answered, the session is resumed; that run's output goes to {}.", log.display())}})
}

#[test]
fn resume_under_sh_c_waits_for_claude_code_itself_and_keeps_the_runs_output() {
    let env = Env::new();
    let session_dir = env.dir.path().join("project");
    fs::create_dir(&session_dir).unwrap();
    let (prog, log) = recorder(&env);
    let ev = event(
        &session_dir,
        "AskUserQuestion",
        "toolu_01AskQuestions",
        json!({"questions": questions()}),
    );
    assert_eq!(decision(&hook(&env, &[], &ev)), defer_for(ASK_ID));

    // By hand: waits for the outcome first (here: none within the timeout).
    let r = env.run(&[
        "--json",
        "claude-code",
        "resume",
        ASK_ID,
        "--claude",
        prog.to_str().unwrap(),
        "--timeout",
        "1s",
    ]);
    assert_eq!(r.error_code(), "WAIT_TIMEOUT");
    assert!(!log.exists());

    // From the hook: --resume starts the resumer in the background. Claude Code runs the
    // hook through `sh -c`, and the shell exits with the hook; the run that deferred is
    // Claude Code, which exits later: only then may the session be resumed.
    let claude = StandIn::start(
        &env,
        &["--resume", "--claude", prog.to_str().unwrap()],
        None,
        &ev,
    );
    assert_eq!(decision(&claude.hook()), defer_resuming(&env, ASK_ID));
    answer_ask(&env, ASK_ID);
    // The resumer has the answer and waits for the stand-in (not for the shell, gone).
    let resume_log = env.root().join("claude-code").join(format!("{ASK_ID}.log"));
    let waiting = format!(
        "answered; waiting for Claude Code (pid {}) to exit",
        claude.child.id()
    );
    assert!(
        wait_until(DEADLINE, || fs::read_to_string(&resume_log)
            .is_ok_and(|t| t.contains(&waiting))),
        "{:?}",
        fs::read_to_string(&resume_log)
    );
    assert!(!log.exists(), "resumed while Claude Code still ran");
    let exited = claude.release();
    assert!(
        wait_until(DEADLINE, || log.exists()),
        "claude was not resumed"
    );
    let (started, ran) = recorded(&log);
    assert!(
        started >= exited,
        "the resumed run started {}ms before the deferred one exited",
        (exited - started) / 1_000_000
    );
    let expected = format!(
        "{}\n-p\n--resume\n{SESSION}\n",
        session_dir.canonicalize().unwrap().display()
    );
    assert_eq!(ran, expected);
    // The resumed run's output is kept in the log the deferral named (0600).
    assert!(
        wait_until(DEADLINE, || fs::read_to_string(&resume_log)
            .is_ok_and(|t| t.contains("the resumed run ended"))),
        "{:?}",
        fs::read_to_string(&resume_log)
    );
    let kept = fs::read_to_string(&resume_log).unwrap();
    assert!(kept.contains("the resumed run's own output"), "{kept}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        fs::metadata(&resume_log).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // The resumed run's hook finds the answer.
    let v = decision(&hook(&env, &[], &ev));
    assert_eq!(
        v["hookSpecificOutput"]["updatedInput"]["answers"],
        json!({"Which database should the service use?": "SQLite"})
    );

    // A request the hook did not ask cannot be resumed.
    env.ask(&crate::helpers::simple_request("plain")).ok();
    env.run(&["answer", "plain", "--select", "Postgres"]).ok();
    let r = env.run(&[
        "--json",
        "claude-code",
        "resume",
        "plain",
        "--claude",
        prog.to_str().unwrap(),
    ]);
    assert_eq!(r.error_code(), "BAD_REQUEST", "{r:?}");
}

#[test]
fn the_ready_settings_snippet_defers_and_resumes_through_path() {
    let env = Env::new();
    let settings: Value = serde_json::from_str(
        &fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("contrib/claude-code/settings.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let entry = &settings["hooks"]["PreToolUse"][0];
    assert_eq!(entry["matcher"], "AskUserQuestion|ExitPlanMode");
    let h = &entry["hooks"][0];
    assert_eq!(h["type"], "command");
    let command = h["command"].as_str().unwrap();
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[0], "dshq");
    // The hook's --wait stays below the hook's own timeout.
    let wait_at = words.iter().position(|w| *w == "--wait").unwrap();
    let wait = humantime_secs(words[wait_at + 1]);
    assert!(wait < h["timeout"].as_u64().unwrap(), "{command}");

    // `claude` on PATH is the recorder here.
    let (prog, log) = recorder(&env);
    let session_dir = env.dir.path().join("project");
    fs::create_dir(&session_dir).unwrap();
    let plan = event(
        &session_dir,
        "ExitPlanMode",
        "toolu_02ExitPlan",
        json!({"plan": "# Plan"}),
    );
    let path = format!(
        "{}:{}",
        prog.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The snippet's own flags, but no 20s wait in a test.
    let flags: Vec<&str> = words[2..]
        .iter()
        .map(|w| if *w == words[wait_at + 1] { "0s" } else { *w })
        .collect();
    assert_eq!(&words[..2], ["dshq", "claude-code"]);
    assert_eq!(flags[0], "hook");
    let claude = StandIn::start(&env, &flags[1..], Some(&path), &plan);
    assert_eq!(decision(&claude.hook()), defer_resuming(&env, PLAN_ID));
    env.run(&["answer", PLAN_ID, "--select", "Approve"]).ok();
    claude.release();
    assert!(
        wait_until(DEADLINE, || log.exists()),
        "claude was not resumed"
    );
    assert!(recorded(&log)
        .1
        .ends_with(&format!("-p\n--resume\n{SESSION}\n")));
}

/// Seconds of a plain `20s` / `2m` duration.
fn humantime_secs(s: &str) -> u64 {
    let (n, unit) = s.split_at(s.len() - 1);
    n.parse::<u64>().unwrap() * if unit == "m" { 60 } else { 1 }
}

#[test]
fn a_plan_file_is_read_only_from_claude_codes_plans_directory() {
    let env = Env::new();
    let config = env.dir.path().join("claude-config");
    fs::create_dir_all(config.join("plans")).unwrap();
    let plan_path = config.join("plans").join("bright-otter.md");
    fs::write(&plan_path, "# Plan from the file\n").unwrap();
    let secret = env.dir.path().join("secret.txt");
    fs::write(&secret, "not a plan").unwrap();
    let run = |path: &Path| {
        let ev = event(
            env.dir.path(),
            "ExitPlanMode",
            "toolu_file",
            json!({"planFilePath": path}),
        );
        let mut c = env.command();
        c.args(["claude-code", "hook"])
            .env("CLAUDE_CONFIG_DIR", &config);
        let r: Run = spawn_with(&mut c, &ev).wait_with_output().unwrap().into();
        r
    };
    // Outside the plans directory (directly, or through a symlink inside it): refused.
    let r = run(&secret);
    assert_eq!((r.code, r.stdout.as_str()), (2, ""), "{r:?}");
    assert!(
        r.stderr.contains("only plans there are read"),
        "{}",
        r.stderr
    );
    let link = config.join("plans").join("link.md");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    assert_eq!(run(&link).code, 2);
    // Nothing was asked: not even a root was made (a read there is NO_ROOT).
    assert_eq!(env.json(&["list"]).error_code(), "NO_ROOT");

    // Claude Code's own plan file: the review shows it.
    let r = run(&plan_path);
    assert_eq!(
        decision(&r)["hookSpecificOutput"]["permissionDecision"],
        "defer"
    );
    let id = env.json(&["list"]).ok().json()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = env.json(&["show", &id]).ok().json();
    assert_eq!(shown["questions"][0]["detail"], "# Plan from the file\n");
}

/// The session id `resume` passes to `claude` comes from the request's meta, which the
/// asker writes: one that `claude` would read as an option (or that is not an id) is
/// refused with BAD_REQUEST, and `claude` never runs.
#[test]
fn resume_refuses_a_session_id_that_is_not_an_id() {
    let env = Env::new();
    let (prog, log) = recorder(&env);
    for (i, bad) in [
        "--dangerously-skip-permissions",
        "-p",
        "-",
        ".x",
        "a b",
        "a/../b",
        "",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("forged-{i}");
        env.ask(&json!({
            "id": id,
            "questions": [{"id": "q1", "question": "Go?", "options": [{"label": "Yes"}]}],
            "meta": {"claudeCode": {"sessionId": bad, "cwd": env.dir.path()}}
        }))
        .ok();
        env.run(&["answer", &id, "--select", "Yes"]).ok();
        let r = env.run(&[
            "--json",
            "claude-code",
            "resume",
            &id,
            "--claude",
            prog.to_str().unwrap(),
        ]);
        assert_eq!(r.error_code(), "BAD_REQUEST", "{bad:?}: {r:?}");
        assert!(!log.exists(), "{bad:?}: claude ran");
    }
    // The same, through the hook's own event: its session id is recorded as sent.
    let ev = json!({
        "session_id": "--dangerously-skip-permissions",
        "transcript_path": "/t.jsonl",
        "cwd": env.dir.path(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "AskUserQuestion",
        "tool_input": {"questions": questions()},
        "tool_use_id": "toolu_forged"
    })
    .to_string();
    let d = decision(&hook(&env, &[], &ev));
    let reason = d["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let id = reason
        .split("dshq request ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("the hook deferred: {d}"));
    answer_ask(&env, id);
    let r = env.run(&[
        "--json",
        "claude-code",
        "resume",
        id,
        "--claude",
        prog.to_str().unwrap(),
    ]);
    assert_eq!(r.error_code(), "BAD_REQUEST", "{r:?}");
    assert!(!log.exists(), "claude ran for the hook's forged session");
}
