//! The reviewer's screen driven through a real pseudo-terminal: `dshq answer` with no
//! answer flags, keys typed as a person would, output read with expect-style timeouts.
//!
//! Each test waits for the prompt it is about to answer before typing (keys sent early
//! could reach the terminal before raw mode is on), then checks what the store recorded
//! and that no live lease is left behind.

use std::process::Command;

use rexpect::process::{Signal, WaitStatus};
use rexpect::session::{spawn_with_options, Options, PtySession};
use serde_json::{json, Value};

use crate::helpers::*;

const DOWN: &str = "\x1b[B";
const ENTER: &str = "\r";
const ESC: &str = "\x1b";

/// Start `dshq ARGS` on a fresh pseudo-terminal of 100×40, without colour (the escape
/// sequences that remain are stripped by the reader).
pub(crate) fn spawn(env: &Env, args: &[&str], extra_env: &[(&str, &str)]) -> PtySession {
    let mut c = Command::new("sh");
    // stty sets the window size before dshq starts, so layout is deterministic.
    c.arg("-c")
        .arg("stty rows 40 cols 100 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args(args)
        .env("DSHQ_ROOT", env.root())
        .env_remove("DSHQ_LEASE")
        .env_remove("DSHQ_CLOCK_SKEW")
        .env("RUST_LOG", "warn")
        .env("USER", "tester")
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1");
    for (k, v) in extra_env {
        c.env(k, v);
    }
    spawn_with_options(
        c,
        Options {
            timeout_ms: Some(DEADLINE.as_millis() as u64),
            strip_ansi_escape_codes: true,
        },
    )
    .expect("spawn dshq on a pty")
}

/// Wait for `text` on the screen; on a timeout, fail showing what the screen had.
pub(crate) fn expect(p: &mut PtySession, text: &str) {
    // The reader turns each byte into one char: match UTF-8 text byte by byte.
    let bytes: String = text.bytes().map(char::from).collect();
    if let Err(e) = p.exp_string(&bytes) {
        panic!("did not see {text:?} on the screen: {e}");
    }
}

fn send(p: &mut PtySession, keys: &str) {
    p.send(keys).expect("type");
    p.flush().expect("flush");
}

/// Answer the send confirmation with "y" (Enter alone would be no).
pub(crate) fn confirm_send(p: &mut PtySession) {
    expect(p, "Send");
    expect(p, "(y/N)");
    send(p, "y");
    send(p, ENTER);
}

/// Wait for the end of output and the exit status.
pub(crate) fn finish(mut p: PtySession) -> i32 {
    let _ = p.exp_eof();
    match p.process.wait().expect("wait for dshq") {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, sig, _) => 128 + sig as i32,
        other => panic!("unexpected wait status {other:?}"),
    }
}

/// The live leases (`dshq --json provider status`).
fn live_leases(env: &Env) -> Vec<Value> {
    env.json(&["provider", "status"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["live"] == true)
        .cloned()
        .collect()
}

fn show(env: &Env, id: &str) -> Value {
    env.json(&["show", id]).ok().json()
}

fn answer_of(env: &Env, id: &str) -> Value {
    let out = env.outcome(id).expect("the outcome file is written");
    assert_eq!(out["status"], "answered", "{out}");
    out
}

fn plan_request(id: &str) -> Value {
    json!({
        "id": id,
        "questions": [{
            "id": "plan", "question": "Approve the migration plan?",
            "detail": "# Migration\n\n1. Add **column**\n2. Backfill in batches\n3. Switch reads",
            "options": [{"label": "Revise", "description": "send it back"}, {"label": "Ship it"}],
            "intent": {"kind": "plan-review", "approve": "Ship it"}
        }]
    })
}

#[test]
fn single_select_answers_with_the_chosen_label_and_releases_the_lease() {
    let env = Env::new();
    env.ask(&simple_request("r1")).ok();
    let mut p = spawn(&env, &["answer", "r1"], &[]);
    expect(&mut p, "Which database?");
    expect(&mut p, "Your answer");
    expect(&mut p, "Skip this question");
    // While the screen is up, the session holds the context's lease and the claim.
    let live = live_leases(&env);
    assert_eq!(live.len(), 1, "{live:?}");
    assert_eq!(live[0]["name"], "tester");
    assert_eq!(show(&env, "r1")["status"], "claimed");
    send(&mut p, DOWN);
    expect(&mut p, "> SQLite");
    send(&mut p, ENTER);
    confirm_send(&mut p);
    expect(&mut p, "r1 answered by tester");
    expect(&mut p, "lease released");
    assert_eq!(finish(p), 0);
    let out = answer_of(&env, "r1");
    assert_eq!(
        out["answer"]["answers"],
        json!([{"id": "db", "selected": ["SQLite"]}])
    );
    assert!(live_leases(&env).is_empty());
}

#[test]
fn multi_select_with_other_text_supplements_the_labels() {
    let env = Env::new();
    env.ask(&json!({
        "id": "m1",
        "questions": [{"id": "feat", "question": "Which features?", "multiSelect": true,
                       "options": [{"label": "auth", "description": "login and sessions"},
                                   {"label": "billing"}, {"label": "search"}]}]
    }))
    .ok();
    let mut p = spawn(&env, &["answer", "m1"], &[]);
    expect(&mut p, "auth — login and sessions");
    expect(&mut p, "Other: add your own text");
    // Toggle auth, move to search and toggle, move to Other and toggle, confirm.
    send(&mut p, " ");
    expect(&mut p, "[x] auth");
    send(&mut p, DOWN);
    send(&mut p, DOWN);
    expect(&mut p, "> [ ] search");
    send(&mut p, " ");
    expect(&mut p, "[x] search");
    send(&mut p, DOWN);
    expect(&mut p, "> [ ] Other");
    send(&mut p, " ");
    expect(&mut p, "[x] Other");
    send(&mut p, ENTER);
    expect(&mut p, "Your text");
    send(&mut p, "audit logs too");
    send(&mut p, ENTER);
    confirm_send(&mut p);
    expect(&mut p, "m1 answered");
    assert_eq!(finish(p), 0);
    assert_eq!(
        answer_of(&env, "m1")["answer"]["answers"],
        json!([{"id": "feat", "selected": ["auth", "search"], "custom": "audit logs too"}])
    );
    assert!(live_leases(&env).is_empty());
}

/// In a multi-select a number key ticks and unticks its option; Enter then the confirm
/// sends the ticked ones.
#[test]
fn number_keys_tick_and_untick_in_a_multi_select() {
    let env = Env::new();
    env.ask(&json!({
        "id": "m2",
        "questions": [{"id": "feat", "question": "Which features?", "multiSelect": true,
                       "options": [{"label": "auth"}, {"label": "billing"}, {"label": "search"}]}]
    }))
    .ok();
    let mut p = spawn(&env, &["answer", "m2"], &[]);
    expect(&mut p, "1-9/Space: tick");
    send(&mut p, "1");
    expect(&mut p, "[x] auth");
    send(&mut p, "3");
    expect(&mut p, "> [x] search");
    send(&mut p, "3");
    expect(&mut p, "> [ ] search");
    send(&mut p, "2");
    expect(&mut p, "> [x] billing");
    send(&mut p, ENTER);
    expect(&mut p, "Send: auth, billing?");
    expect(&mut p, "(y/N)");
    send(&mut p, "y");
    send(&mut p, ENTER);
    expect(&mut p, "m2 answered");
    assert_eq!(finish(p), 0);
    assert_eq!(
        answer_of(&env, "m2")["answer"]["answers"],
        json!([{"id": "feat", "selected": ["auth", "billing"]}])
    );
}

#[test]
fn walking_the_queue_skips_inside_a_batch_and_confirms_the_summary() {
    let env = Env::new();
    env.ask(&json!({
        "id": "b1",
        "questions": [
            {"id": "db", "header": "Storage", "question": "Which database?",
             "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
            {"id": "note", "question": "Anything else to tell the agent?"}
        ]
    }))
    .ok();
    // Another context's request is not part of this walk.
    let mut other = simple_request("elsewhere");
    other["context"] = json!("ops");
    env.ask(&other).ok();
    let mut p = spawn(&env, &["answer"], &[]);
    expect(&mut p, "[Storage] Which database?");
    expect(&mut p, "question 1 of 2");
    expect(&mut p, "Skip this question");
    // Postgres, SQLite, Other, Skip: three down.
    send(&mut p, DOWN);
    send(&mut p, DOWN);
    send(&mut p, DOWN);
    expect(&mut p, "> Skip this question");
    send(&mut p, ENTER);
    expect(&mut p, "Anything else to tell the agent?");
    expect(&mut p, "Enter on an empty line skips");
    send(&mut p, "ship it on Friday");
    send(&mut p, ENTER);
    expect(&mut p, "Summary");
    expect(&mut p, "(skipped)");
    expect(&mut p, "“ship it on Friday”");
    expect(&mut p, "> Submit these answers");
    send(&mut p, ENTER);
    confirm_send(&mut p);
    expect(&mut p, "b1 answered by tester");
    expect(&mut p, "no more pending requests in context default");
    assert_eq!(finish(p), 0);
    assert_eq!(
        answer_of(&env, "b1")["answer"]["answers"],
        json!([{"id": "db", "selected": []},
               {"id": "note", "selected": [], "custom": "ship it on Friday"}])
    );
    assert_eq!(show(&env, "elsewhere")["status"], "pending");
    assert!(live_leases(&env).is_empty());
}

#[test]
fn plan_review_approves_the_intent_label_though_it_is_not_the_first_option() {
    let env = Env::new();
    env.ask(&plan_request("p1")).ok();
    let mut p = spawn(&env, &["answer", "p1"], &[]);
    expect(&mut p, "plan review");
    // The plan is rendered: heading without its hashes, list items, bold markers gone.
    expect(&mut p, "Migration");
    expect(&mut p, "1. Add column");
    expect(&mut p, "Backfill in batches");
    // The asker's order, the cursor on Decline with feedback (never on Approve).
    expect(&mut p, "Revise (declines) — send it back");
    expect(&mut p, "Ship it (approves)");
    expect(&mut p, "> Decline with feedback");
    send(&mut p, "2");
    confirm_send(&mut p);
    expect(&mut p, "p1 answered by tester (approved)");
    assert_eq!(finish(p), 0);
    let out = answer_of(&env, "p1");
    assert_eq!(out["decision"], "approved");
    assert_eq!(
        out["answer"]["answers"],
        json!([{"id": "plan", "selected": ["Ship it"]}])
    );
    assert!(live_leases(&env).is_empty());
}

#[test]
fn plan_review_decline_with_feedback_records_custom_and_declined() {
    let env = Env::new();
    env.ask(&plan_request("p2")).ok();
    let mut p = spawn(&env, &["answer", "p2"], &[]);
    // Revise, Ship it, Decline with feedback: the cursor starts on the last.
    expect(&mut p, "> Decline with feedback");
    send(&mut p, ENTER);
    expect(&mut p, "Feedback for the author");
    send(&mut p, "split the backfill into two steps");
    send(&mut p, ENTER);
    confirm_send(&mut p);
    expect(&mut p, "p2 answered by tester (declined)");
    assert_eq!(finish(p), 0);
    let out = answer_of(&env, "p2");
    assert_eq!(out["decision"], "declined");
    assert_eq!(
        out["answer"]["answers"],
        json!([{"id": "plan", "selected": [], "custom": "split the backfill into two steps"}])
    );
}

#[test]
fn a_long_plan_is_paged() {
    let env = Env::new();
    let mut req = plan_request("p3");
    let plan: String = (1..=120)
        .map(|k| format!("- step {k}: do thing {k}\n"))
        .collect();
    req["questions"][0]["detail"] = json!(plan);
    env.ask(&req).ok();
    let mut p = spawn(&env, &["answer", "p3"], &[]);
    expect(&mut p, "Plan: Approve the migration plan?");
    expect(&mut p, "step 1: do thing 1");
    expect(&mut p, "-- lines 1-38 of 120");
    send(&mut p, " ");
    expect(&mut p, "-- lines 39-76 of 120");
    send(&mut p, "q");
    expect(&mut p, "read in the pager");
    expect(&mut p, "> Decline with feedback");
    send(&mut p, "2");
    confirm_send(&mut p);
    expect(&mut p, "p3 answered by tester (approved)");
    assert_eq!(finish(p), 0);
}

#[test]
fn the_reviewer_cancels_a_request_with_a_reason() {
    let env = Env::new();
    env.ask(&simple_request("c1")).ok();
    let mut p = spawn(&env, &["answer", "c1"], &[]);
    expect(&mut p, "Skip this question");
    send(&mut p, ESC);
    expect(&mut p, "What now?");
    expect(&mut p, "Quit");
    // Back, Skip, Cancel: two down.
    send(&mut p, DOWN);
    send(&mut p, DOWN);
    expect(&mut p, "> Cancel this request");
    send(&mut p, ENTER);
    expect(&mut p, "Reason for cancelling");
    send(&mut p, "asked the wrong team");
    send(&mut p, ENTER);
    expect(&mut p, "ASK_CANCELLED");
    assert_eq!(finish(p), 0);
    let out = env.outcome("c1").unwrap();
    assert_eq!(out["error"]["code"], "ASK_CANCELLED");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("asked the wrong team"));
    assert!(live_leases(&env).is_empty());
}

#[test]
fn ctrl_c_at_a_prompt_leaves_no_live_lease_and_returns_the_claim() {
    let env = Env::new();
    env.ask(&simple_request("i1")).ok();
    let mut p = spawn(&env, &["answer"], &[]);
    expect(&mut p, "Skip this question");
    assert_eq!(live_leases(&env).len(), 1);
    assert_eq!(show(&env, "i1")["status"], "claimed");
    p.send_control('c').expect("Ctrl-C");
    expect(&mut p, "interrupted; lease released");
    assert_eq!(finish(p), 130);
    assert!(live_leases(&env).is_empty(), "{:?}", live_leases(&env));
    // The claim went back to the queue for the next reviewer.
    assert_eq!(show(&env, "i1")["status"], "pending");
}

#[test]
fn sigterm_while_reviewing_releases_the_lease_too() {
    let env = Env::new();
    env.ask(&plan_request("t1")).ok();
    let mut p = spawn(&env, &["answer", "t1"], &[]);
    expect(&mut p, "Your decision");
    assert_eq!(live_leases(&env).len(), 1);
    p.process.signal(Signal::SIGTERM).expect("SIGTERM");
    expect(&mut p, "interrupted; lease released");
    assert_eq!(finish(p), 128 + 15);
    assert!(live_leases(&env).is_empty());
    assert_eq!(show(&env, "t1")["status"], "pending");
}

#[test]
fn a_given_lease_is_used_and_heartbeated_but_not_released() {
    let env = Env::new();
    env.ask(&simple_request("g1")).ok();
    let lease = env.register("alice", "default", "10m");
    // Claimed beforehand with the same lease: the walk still shows it.
    env.json(&["claim", "g1", "--lease", &lease]).ok();
    let mut p = spawn(&env, &["answer"], &[("DSHQ_LEASE", &lease)]);
    expect(&mut p, "answering as alice");
    expect(&mut p, "Skip this question");
    send(&mut p, ENTER);
    confirm_send(&mut p);
    expect(&mut p, "g1 answered by alice");
    assert_eq!(finish(p), 0);
    let live = live_leases(&env);
    assert_eq!(
        live.len(),
        1,
        "the reviewer's own lease stays theirs: {live:?}"
    );
    assert_eq!(live[0]["name"], "alice");
    assert_ne!(
        live[0]["heartbeatAt"], live[0]["createdAt"],
        "the session heartbeated it"
    );
}

fn ms(v: &Value) -> i64 {
    v.as_str()
        .unwrap()
        .parse::<jiff::Timestamp>()
        .unwrap()
        .as_millisecond()
}

#[test]
fn the_session_lease_is_heartbeated_in_the_background() {
    let env = Env::new();
    env.ask(&simple_request("hb")).ok();
    let mut p = spawn(&env, &["answer", "hb", "--ttl", "1s"], &[]);
    expect(&mut p, "Skip this question");
    // With a 1 s ttl the lease is still live once it has outlived three ttls.
    let mut last = Value::Null;
    assert!(
        wait_until(DEADLINE, || {
            let live = live_leases(&env);
            let Some(l) = live.first() else { return false };
            last = l.clone();
            ms(&l["expiresAt"]) - ms(&l["createdAt"]) > 3_000
        }),
        "the lease was not kept alive: {last}"
    );
    p.send_control('c').unwrap();
    assert_eq!(finish(p), 130);
    assert!(live_leases(&env).is_empty());
}

#[test]
fn without_a_terminal_the_usage_error_names_the_flags() {
    let env = Env::new();
    env.ask(&simple_request("n1")).ok();
    let r = env.json(&["answer", "n1"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert_eq!(r.error_code(), "USAGE");
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    for flag in ["--select", "--custom", "--skip", "--answers"] {
        assert!(msg.contains(flag), "{msg}");
    }
    let r = env.run(&["answer"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("no terminal"), "{}", r.stderr);
    // Flags without an id name the id.
    let r = env.json(&["answer", "--select", "Postgres"]);
    assert_eq!(r.error_code(), "USAGE");
    assert!(live_leases(&env).is_empty());
}

#[test]
fn colour_follows_the_flag_over_no_color() {
    let env = Env::new();
    env.ask(&simple_request("k1")).ok();
    // NO_COLOR is set; --color always overrides it.
    let mut p = spawn_raw(&env, &["--color", "always", "answer", "k1"]);
    let before = p.exp_string("Skip this question").unwrap();
    assert!(before.contains("\u{1b}[38;5;"), "no colour: {before:?}");
    p.send_control('c').unwrap();
    assert_eq!(finish(p), 130);
    // NO_COLOR alone (auto): no colour sequences, only cursor movement.
    let mut p = spawn_raw(&env, &["answer", "k1"]);
    let before = p.exp_string("Skip this question").unwrap();
    assert!(!before.contains("\u{1b}[38;5;"), "colour: {before:?}");
    p.send_control('c').unwrap();
    assert_eq!(finish(p), 130);
    assert!(live_leases(&env).is_empty());
}

/// Like [`spawn`] but keeping escape sequences, to look at colour.
fn spawn_raw(env: &Env, args: &[&str]) -> PtySession {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg("stty rows 40 cols 100 && exec \"$0\" \"$@\"")
        .arg(bin())
        .args(args)
        .env("DSHQ_ROOT", env.root())
        .env_remove("DSHQ_LEASE")
        .env("USER", "tester")
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1");
    spawn_with_options(
        c,
        Options {
            timeout_ms: Some(DEADLINE.as_millis() as u64),
            strip_ansi_escape_codes: false,
        },
    )
    .unwrap()
}

// ---------------------------------------------------------------------------------------
// holding Enter sends nothing.
// ---------------------------------------------------------------------------------------

/// Start `dshq answer ID`, wait for `prompt`, press Enter 30 times as a held key would,
/// then Ctrl-C: every key was read before the interruption, and nothing was sent.
fn hold_enter_sends_nothing(env: &Env, id: &str, prompt: &str) {
    let mut p = spawn(env, &["answer", id], &[]);
    expect(&mut p, prompt);
    for _ in 0..30 {
        send(&mut p, ENTER);
    }
    p.send_control('c').expect("Ctrl-C");
    // Not the note's first letter: after thirty redraws, the reader's ANSI stripping was
    // once seen to take the `i` of "interrupted" as the end of a sequence (the screen
    // read "...question]nterrupted; lease released"). The exit status below is the check.
    expect(&mut p, "nterrupted; lease released");
    assert_eq!(finish(p), 130);
    assert!(
        env.outcome(id).is_none(),
        "held Enter sent {:?}",
        env.outcome(id)
    );
    assert_eq!(show(env, id)["status"], "pending");
    assert!(live_leases(env).is_empty());
}

#[test]
fn holding_enter_never_leaves_the_pager_nor_approves_a_long_plan() {
    let env = Env::new();
    let mut req = plan_request("he1");
    let plan: String = (1..=60).map(|k| format!("- step {k}\n")).collect();
    req["questions"][0]["detail"] = json!(plan);
    env.ask(&req).ok();
    hold_enter_sends_nothing(&env, "he1", "-- lines 1-38 of 60");
}

#[test]
fn holding_enter_does_not_approve_a_short_plan() {
    let env = Env::new();
    env.ask(&plan_request("he2")).ok();
    hold_enter_sends_nothing(&env, "he2", "Your decision");
}

#[test]
fn holding_enter_on_an_empty_free_text_question_sends_no_skip() {
    let env = Env::new();
    env.ask(&json!({"id": "he3", "questions": [{"id": "note", "question": "Anything to add?"}]}))
        .ok();
    hold_enter_sends_nothing(&env, "he3", "Your answer");
}

#[test]
fn holding_enter_on_an_unticked_multi_select_sends_no_skip() {
    let env = Env::new();
    env.ask(
        &json!({"id": "he4", "questions": [{"id": "f", "question": "Which?", "multiSelect": true,
        "options": [{"label": "a"}, {"label": "b"}]}]}),
    )
    .ok();
    hold_enter_sends_nothing(&env, "he4", "Choose any");
}

#[test]
fn holding_enter_on_a_single_select_or_a_batch_sends_nothing() {
    let env = Env::new();
    env.ask(&simple_request("he5")).ok();
    hold_enter_sends_nothing(&env, "he5", "Skip this question");
    env.ask(&json!({"id": "he6", "questions": [
        {"id": "a", "question": "First?", "options": [{"label": "x"}, {"label": "y"}]},
        {"id": "b", "question": "Second?", "options": [{"label": "z"}]}]}))
        .ok();
    hold_enter_sends_nothing(&env, "he6", "First?");
}

// ---------------------------------------------------------------------------------------
// the screen ends with its terminal.
// ---------------------------------------------------------------------------------------

/// A pseudo-terminal made by hand, so the test can close its master side (rexpect keeps
/// copies of it), and a reader thread that collects what the program draws.
struct Pty {
    child: std::process::Child,
    screen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    close: std::sync::Arc<std::sync::atomic::AtomicBool>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Pty {
    /// Run `dshq ARGS` on a new pty; `ctty`: as the session leader with the pty as its
    /// controlling terminal (closing the master then sends it SIGHUP), else only with its
    /// stdio on the pty (closing the master sends nothing; reads and writes fail).
    fn spawn(env: &Env, args: &[&str], ctty: bool) -> Pty {
        use std::os::fd::FromRawFd;
        use std::os::unix::process::CommandExt;
        // SAFETY: plain libc calls on descriptors this function owns.
        let (master, slave) = unsafe {
            let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
            assert!(m >= 0, "posix_openpt");
            assert_eq!(libc::grantpt(m), 0);
            assert_eq!(libc::unlockpt(m), 0);
            let ws = libc::winsize {
                ws_row: 40,
                ws_col: 100,
                ws_xpixel: 0,
                ws_ypixel: 0,
            };
            assert_eq!(libc::ioctl(m, libc::TIOCSWINSZ, &ws), 0);
            let mut name = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(m, name.as_mut_ptr(), name.len()), 0);
            let s = libc::open(
                name.as_ptr(),
                libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
            );
            assert!(s >= 0, "open the pty slave");
            (std::fs::File::from_raw_fd(m), std::fs::File::from_raw_fd(s))
        };
        let mut c = Command::new(bin());
        c.args(args)
            .env("DSHQ_ROOT", env.root())
            .env_remove("DSHQ_LEASE")
            .env_remove("DSHQ_CLOCK_SKEW")
            .env("RUST_LOG", "warn")
            .env("USER", "tester")
            .env("TERM", "xterm-256color")
            .env("NO_COLOR", "1")
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave);
        if ctty {
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                c.pre_exec(|| {
                    if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        } else {
            // Its own process group, so no signal of this terminal reaches it.
            c.process_group(0);
        }
        let child = c.spawn().expect("spawn dshq on a pty");
        drop(c);
        let screen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let close = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (screen, close) = (screen.clone(), close.clone());
            std::thread::spawn(move || {
                use std::io::Read;
                use std::os::fd::AsRawFd;
                let mut master = master;
                let mut buf = [0u8; 4096];
                while !close.load(std::sync::atomic::Ordering::SeqCst) {
                    let mut pfd = libc::pollfd {
                        fd: master.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    };
                    // SAFETY: one valid pollfd.
                    if unsafe { libc::poll(&mut pfd, 1, 50) } <= 0 {
                        continue;
                    }
                    match master.read(&mut buf) {
                        Ok(0) | Err(_) => std::thread::sleep(Duration::from_millis(20)),
                        Ok(n) => screen.lock().unwrap().extend_from_slice(&buf[..n]),
                    }
                }
                // Dropping `master` here closes the last descriptor of the master side.
            })
        };
        Pty {
            child,
            screen,
            close,
            reader: Some(reader),
        }
    }

    fn wait_for(&self, text: &str) {
        assert!(
            wait_until(DEADLINE, || {
                String::from_utf8_lossy(&self.screen.lock().unwrap()).contains(text)
            }),
            "did not see {text:?}: {}",
            String::from_utf8_lossy(&self.screen.lock().unwrap())
        );
    }

    /// Close the master side: the terminal is gone.
    fn hang_up(&mut self) {
        self.close.store(true, std::sync::atomic::Ordering::SeqCst);
        self.reader.take().unwrap().join().unwrap();
    }

    /// Whether the program exited within the deadline.
    fn exited(&mut self) -> bool {
        wait_until(DEADLINE, || matches!(self.child.try_wait(), Ok(Some(_))))
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.close.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

use std::time::Duration;

fn terminal_closed_ends_the_session(ctty: bool) {
    let env = Env::new();
    env.ask(&simple_request("hup")).ok();
    let mut pty = Pty::spawn(&env, &["answer", "hup"], ctty);
    pty.wait_for("Skip this question");
    assert_eq!(live_leases(&env).len(), 1);
    assert_eq!(show(&env, "hup")["status"], "claimed");
    pty.hang_up();
    assert!(
        pty.exited(),
        "dshq answer still runs {DEADLINE:?} after its terminal closed"
    );
    assert!(live_leases(&env).is_empty(), "{:?}", live_leases(&env));
    assert_eq!(show(&env, "hup")["status"], "pending");
    assert!(env.outcome("hup").is_none());
}

#[test]
fn closing_the_terminal_ends_the_session_and_releases_the_lease() {
    // The session leader of the terminal: the kernel sends SIGHUP.
    terminal_closed_ends_the_session(true);
}

#[test]
fn a_dead_terminal_without_sighup_ends_the_session_too() {
    // Not the terminal's session: no SIGHUP, only a terminal that reads and writes no more.
    terminal_closed_ends_the_session(false);
}

#[test]
fn in_the_pager_a_closed_terminal_ends_the_session() {
    let env = Env::new();
    let mut req = plan_request("hup2");
    let plan: String = (1..=60).map(|k| format!("- step {k}\n")).collect();
    req["questions"][0]["detail"] = json!(plan);
    env.ask(&req).ok();
    let mut pty = Pty::spawn(&env, &["answer", "hup2"], false);
    pty.wait_for("-- lines 1-38 of 60");
    pty.hang_up();
    assert!(
        pty.exited(),
        "dshq answer still runs after its terminal closed"
    );
    assert!(live_leases(&env).is_empty());
    assert_eq!(show(&env, "hup2")["status"], "pending");
}

#[test]
fn sighup_ends_the_session_and_releases_the_lease() {
    let env = Env::new();
    env.ask(&simple_request("hup3")).ok();
    let mut p = spawn(&env, &["answer", "hup3"], &[]);
    expect(&mut p, "Skip this question");
    p.process.signal(Signal::SIGHUP).expect("SIGHUP");
    assert_eq!(finish(p), 128 + 1);
    assert!(live_leases(&env).is_empty());
    assert_eq!(show(&env, "hup3")["status"], "pending");
}

#[test]
fn holding_enter_while_walking_a_queue_answers_none_of_it() {
    let env = Env::new();
    env.ask(&json!({"id": "q1", "questions": [{"id": "note", "question": "Anything to add?"}]}))
        .ok();
    env.ask(
        &json!({"id": "q2", "questions": [{"id": "f", "question": "Which?", "multiSelect": true,
        "options": [{"label": "a"}, {"label": "b"}]}]}),
    )
    .ok();
    env.ask(&plan_request("q3")).ok();
    env.ask(&simple_request("q4")).ok();
    let mut p = spawn(&env, &["answer"], &[]);
    expect(&mut p, "Anything to add?");
    for _ in 0..30 {
        send(&mut p, ENTER);
    }
    p.send_control('c').expect("Ctrl-C");
    expect(&mut p, "interrupted");
    assert_eq!(finish(p), 130);
    for id in ["q1", "q2", "q3", "q4"] {
        assert!(env.outcome(id).is_none(), "held Enter answered {id}");
        assert_eq!(show(&env, id)["status"], "pending", "{id}");
    }
    assert!(live_leases(&env).is_empty());
}

#[test]
fn an_answer_whose_outcome_file_fails_is_recorded_and_the_walk_goes_on() {
    // on the screen: the commit is the answer, so a blocked outcome file
    // is a warning, and the session goes on to the next request instead of ending.
    let env = Env::new();
    env.ask(&simple_request("s1")).ok();
    env.ask(&simple_request("s2")).ok();
    // A non-empty directory where the outcome file goes makes its rename fail, even for root.
    let blocked = env.root().join("outbox").join("s1.json");
    std::fs::create_dir_all(blocked.join("x")).unwrap();
    let mut p = spawn(&env, &["answer"], &[]);
    expect(&mut p, "Which database?");
    expect(&mut p, "Skip this question");
    send(&mut p, ENTER);
    confirm_send(&mut p);
    expect(
        &mut p,
        "s1 is recorded, but its outcome file could not be written",
    );
    // The walk goes on to s2.
    expect(&mut p, "Which database?");
    expect(&mut p, "Skip this question");
    send(&mut p, ENTER);
    confirm_send(&mut p);
    expect(&mut p, "s2 answered by tester");
    assert_eq!(finish(p), 0);
    assert_eq!(show(&env, "s1")["status"], "answered");
    answer_of(&env, "s2");
    // Once the way is clear, the pending outcome is written (here by the next command that
    // flushes; the daemon's pass does the same).
    std::fs::remove_dir_all(&blocked).unwrap();
    let _d = env.daemon();
    assert_eq!(env.wait_outcome("s1")["status"], "answered");
}

/// `answer --follow` does not end on an empty queue: it waits, and a request asked after
/// it started waiting is shown (with the bell and its place in the walk), answered, and
/// the screen waits again.
#[test]
fn follow_picks_up_a_request_asked_after_it_started_waiting() {
    let env = Env::new();
    let mut p = spawn(&env, &["answer", "--follow"], &[]);
    expect(&mut p, "waiting for new requests in context default");
    env.ask(&simple_request("late")).ok();
    expect(&mut p, "\x07");
    expect(&mut p, "Request late");
    expect(&mut p, "1 of 1");
    expect(&mut p, "Your answer");
    send(&mut p, DOWN);
    expect(&mut p, "> SQLite");
    send(&mut p, ENTER);
    confirm_send(&mut p);
    expect(&mut p, "late answered by tester");
    expect(&mut p, "waiting for new requests in context default");
    // Still open: a second one is picked up too, counted as the second of the walk.
    env.ask(&simple_request("later")).ok();
    expect(&mut p, "Request later");
    expect(&mut p, "2 of 2");
    expect(&mut p, "Your answer");
    p.send_control('c').expect("Ctrl-C");
    assert_eq!(finish(p), 130);
    answer_of(&env, "late");
    assert_eq!(show(&env, "later")["status"], "pending");
    assert!(live_leases(&env).is_empty());
}

/// The walk takes requests with a deadline first (soonest first), then the rest oldest
/// first, and says where the reviewer stands.
#[test]
fn the_walk_takes_deadlines_first_and_counts_its_place() {
    let env = Env::new();
    env.ask(&simple_request("old")).ok();
    let mut soon = simple_request("soon");
    soon["timeout"] = json!("1h");
    let mut sooner = simple_request("sooner");
    sooner["timeout"] = json!("30m");
    env.ask(&soon).ok();
    env.ask(&sooner).ok();
    env.ask(&simple_request("new")).ok();
    let mut p = spawn(&env, &["answer"], &[]);
    for (k, id) in ["sooner", "soon", "old", "new"].iter().enumerate() {
        expect(&mut p, &format!("Request {id}"));
        expect(&mut p, &format!("{} of 4", k + 1));
        expect(&mut p, "Your answer");
        send(&mut p, ENTER);
        confirm_send(&mut p);
        expect(&mut p, &format!("{id} answered by tester"));
    }
    expect(&mut p, "no more pending requests in context default");
    assert_eq!(finish(p), 0);
}

/// A number key picks that option at once; the y/N confirm still stands between the key
/// and the send: `n` goes back with nothing sent, and another number then `y` sends.
#[test]
fn number_keys_pick_an_option_and_the_confirm_still_guards_the_send() {
    let env = Env::new();
    env.ask(&simple_request("r1")).ok();
    let mut p = spawn(&env, &["answer", "r1"], &[]);
    expect(&mut p, "1 > Postgres");
    expect(&mut p, "2   SQLite");
    send(&mut p, "2");
    expect(&mut p, "Send: SQLite?");
    expect(&mut p, "(y/N)");
    send(&mut p, "n");
    send(&mut p, ENTER);
    expect(&mut p, "Your answer");
    assert_eq!(show(&env, "r1")["status"], "claimed");
    send(&mut p, "1");
    expect(&mut p, "Send: Postgres?");
    yes(&mut p);
    expect(&mut p, "r1 answered by tester");
    assert_eq!(finish(p), 0);
    let out = answer_of(&env, "r1");
    assert_eq!(
        out["answer"]["answers"],
        json!([{"id": "db", "selected": ["Postgres"]}])
    );
}

/// Answer a send confirmation already on screen with "y".
fn yes(p: &mut PtySession) {
    expect(p, "(y/N)");
    send(p, "y");
    send(p, ENTER);
}

/// Write a fake editor: a shell script that writes `text` into the file it is given.
fn fake_editor(env: &Env, text: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = env.root().join(format!("editor-{}.sh", unique()));
    let script = format!("#!/bin/sh\nprintf '%s' '{text}' > \"$1\"\n");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.to_str().unwrap().to_string()
}

/// `e` on a plan review opens `$EDITOR` for the decline's feedback; its several lines
/// are sent whole (after the y/N confirm) as the custom text, nothing selected.
#[test]
fn the_editor_key_writes_multi_line_decline_feedback() {
    let env = Env::new();
    env.ask(&plan_request("p1")).ok();
    let editor = fake_editor(&env, "Split step 2.\nThe backfill is too big.\n");
    let mut p = spawn(&env, &["answer", "p1"], &[("EDITOR", &editor)]);
    expect(&mut p, "Your decision");
    send(&mut p, "e");
    confirm_send(&mut p);
    expect(&mut p, "p1 answered by tester");
    assert_eq!(finish(p), 0);
    let out = answer_of(&env, "p1");
    assert_eq!(
        out["answer"]["answers"],
        json!([{"id": "plan", "selected": [], "custom": "Split step 2.\nThe backfill is too big."}])
    );
}

/// `e` on an ordinary question opens the editor for Other (`$VISUAL` when `$EDITOR` is
/// unset); `s` skips, `l` leaves a request for later, `q` quits the walk.
#[test]
fn single_keys_write_other_skip_leave_for_later_and_quit() {
    let env = Env::new();
    for id in ["a", "b", "c", "d"] {
        env.ask(&simple_request(id)).ok();
    }
    let editor = fake_editor(&env, "DuckDB, embedded");
    let mut p = spawn(&env, &["answer"], &[("VISUAL", &editor), ("EDITOR", "")]);
    expect(&mut p, "Request a");
    expect(&mut p, "Your answer");
    send(&mut p, "e");
    confirm_send(&mut p);
    expect(&mut p, "a answered by tester");
    expect(&mut p, "Request b");
    expect(&mut p, "Your answer");
    send(&mut p, "s");
    expect(&mut p, "Send: (skipped)?");
    yes(&mut p);
    expect(&mut p, "b answered by tester");
    expect(&mut p, "Request c");
    expect(&mut p, "Your answer");
    send(&mut p, "l");
    expect(&mut p, "left c for later");
    expect(&mut p, "Request d");
    expect(&mut p, "Your answer");
    send(&mut p, "q");
    expect(&mut p, "left 1 for later");
    assert_eq!(finish(p), 0);
    assert_eq!(
        answer_of(&env, "a")["answer"]["answers"],
        json!([{"id": "db", "selected": [], "custom": "DuckDB, embedded"}])
    );
    for id in ["c", "d"] {
        assert_eq!(show(&env, id)["status"], "pending", "{id}");
    }
    assert!(live_leases(&env).is_empty());
}

/// `i` opens the asking agent's context: the request's whole meta (a value over 500
/// characters, not cut), its links whole, the agent and the agent's earlier question
/// with its answer; `q` goes back to the question.
#[test]
fn the_context_key_shows_the_whole_meta_the_links_and_the_agents_last_questions() {
    let env = Env::new();
    let entered = env.json(&["agent", "enter", "--id", "agent-7"]).ok().json();
    let instance = entered["instance"].as_str().unwrap().to_string();
    let mut old = simple_request("old");
    old["agent"] = json!({"id": "agent-7", "instance": instance});
    env.ask(&old).ok();
    env.json(&["answer", "old", "--select", "SQLite"]).ok();
    let long: Vec<String> = (0..130).map(|i| format!("w{i:03}")).collect();
    let long = long.join(" ");
    assert!(long.len() > 500);
    let link = format!(
        "https://ci.example.com/builds/{}/log",
        "0123456789".repeat(12)
    );
    let mut req = simple_request("now");
    req["agent"] = json!({"id": "agent-7", "instance": instance});
    req["meta"] = json!({"note": long, "ci": {"log": link}});
    env.ask(&req).ok();
    let mut p = spawn(&env, &["answer", "now"], &[]);
    expect(&mut p, "Your answer");
    send(&mut p, "i");
    expect(&mut p, "The asking agent's context");
    expect(&mut p, &format!("agent-7 (instance {instance})"));
    // The pager wraps long lines at words (a word wider than the screen at its edge):
    // join them back, whitespace removed, to find the value whole.
    let bytes: String = "this agent's last questions"
        .bytes()
        .map(char::from)
        .collect();
    let screen = p.exp_string(&bytes).expect("the context pane");
    let joined: String = screen.split_whitespace().collect();
    assert!(
        joined.contains(&long.replace(' ', "")),
        "meta not whole: {screen}"
    );
    assert!(joined.contains(&link), "link not whole: {screen}");
    expect(&mut p, "old");
    expect(&mut p, "Q Which database?");
    expect(&mut p, "A SQLite");
    send(&mut p, "q");
    expect(&mut p, "Your answer");
    p.send_control('c').expect("Ctrl-C");
    assert_eq!(finish(p), 130);
    assert_eq!(show(&env, "now")["status"], "pending");
}

/// A follow loop waiting on an empty queue still ends with its terminal: no SIGHUP (not
/// the terminal's session), only a closed terminal; the lease is released.
#[test]
fn a_follow_loop_waiting_on_a_dead_terminal_ends_the_session() {
    let env = Env::new();
    let mut pty = Pty::spawn(&env, &["answer", "--follow"], false);
    pty.wait_for("waiting for new requests");
    assert_eq!(live_leases(&env).len(), 1);
    pty.hang_up();
    assert!(
        pty.exited(),
        "dshq answer --follow still runs after its terminal closed"
    );
    assert!(live_leases(&env).is_empty(), "{:?}", live_leases(&env));
}

/// SIGHUP while the follow loop waits ends it like anywhere else: exit 129, lease released.
#[test]
fn sighup_while_following_releases_the_lease() {
    let env = Env::new();
    let mut p = spawn(&env, &["answer", "--follow"], &[]);
    expect(&mut p, "waiting for new requests");
    p.process.signal(Signal::SIGHUP).expect("SIGHUP");
    assert_eq!(finish(p), 128 + 1);
    assert!(live_leases(&env).is_empty());
}

/// A multi-select takes the question keys too: `i` shows the context and comes back with
/// the ticks kept, `e` adds the editor's text to the ticked options, `l` leaves a request
/// for later.
#[test]
fn a_multi_select_keeps_its_ticks_through_the_context_key_and_adds_editor_text() {
    let env = Env::new();
    let multi = |id: &str| {
        json!({
            "id": id,
            "questions": [{"id": "feat", "question": "Which features?", "multiSelect": true,
                           "options": [{"label": "auth"}, {"label": "billing"}, {"label": "search"}]}],
            "meta": {"task": "features"}
        })
    };
    env.ask(&multi("ma")).ok();
    env.ask(&multi("mb")).ok();
    let editor = fake_editor(&env, "audit logs\ntoo");
    let mut p = spawn(&env, &["answer"], &[("EDITOR", &editor)]);
    expect(&mut p, "Request ma");
    expect(&mut p, "1-9/Space: tick");
    send(&mut p, "l");
    expect(&mut p, "left ma for later");
    expect(&mut p, "Request mb");
    expect(&mut p, "1-9/Space: tick");
    send(&mut p, "1");
    expect(&mut p, "[x] auth");
    send(&mut p, "i");
    expect(&mut p, "The asking agent's context");
    expect(&mut p, "\"task\": \"features\"");
    send(&mut p, "q");
    expect(&mut p, "> [x] auth");
    send(&mut p, "3");
    expect(&mut p, "> [x] search");
    send(&mut p, "e");
    confirm_send(&mut p);
    expect(&mut p, "mb answered by tester");
    expect(&mut p, "left 1 for later");
    assert_eq!(finish(p), 0);
    assert_eq!(
        answer_of(&env, "mb")["answer"]["answers"],
        json!([{"id": "feat", "selected": ["auth", "search"], "custom": "audit logs\ntoo"}])
    );
    assert_eq!(show(&env, "ma")["status"], "pending");
}

/// Keys typed while the screen is busy between two prompts (here: the send waits on a
/// write lock another process holds) reach the next prompt as typed: nothing is echoed
/// onto the screen and Enter is still Enter. (The terminal used to be back in its cooked
/// mode between prompts: the keys were echoed, and Enter, turned into a newline, was read
/// as Ctrl-J and lost.)
#[test]
fn keys_typed_while_an_answer_is_sent_reach_the_next_prompt_unechoed() {
    let env = Env::new();
    env.ask(&simple_request("ta1")).ok();
    env.ask(&simple_request("ta2")).ok();
    let mut p = spawn(&env, &["answer"], &[]);
    expect(&mut p, "Skip this question");
    send(&mut p, "1");
    expect(&mut p, "(y/N)");
    let db = rusqlite::Connection::open(env.root().join("dshq.db")).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    send(&mut p, "y");
    send(&mut p, ENTER);
    // The confirm's summary line is drawn after raw mode is left: from here until the
    // lock goes, dshq is between prompts.
    expect(&mut p, "? Yes");
    send(&mut p, "zzz");
    send(&mut p, ENTER);
    db.execute_batch("ROLLBACK").unwrap();
    let mut seen = String::new();
    for text in ["ta1 answered by tester", "Skip this question", "(y/N)"] {
        let before = p.exp_string(text).unwrap_or_else(|e| {
            panic!("did not see {text:?} after typing ahead: {e}; saw {seen:?}")
        });
        seen.push_str(&before);
        seen.push_str(text);
    }
    assert!(
        !seen.contains("zzz"),
        "typed-ahead keys were echoed: {seen:?}"
    );
    // The typed-ahead Enter chose Postgres for ta2: its confirm is up.
    p.send_control('c').expect("Ctrl-C");
    assert_eq!(finish(p), 130);
    assert_eq!(
        answer_of(&env, "ta1")["answer"]["answers"][0]["selected"],
        json!(["Postgres"])
    );
    assert_eq!(show(&env, "ta2")["status"], "pending");
    assert!(live_leases(&env).is_empty());
}

/// Edit-then-approve on the screen: "Edit the plan in $EDITOR, then approve it as
/// edited" opens the editor on the plan; the confirmation prints the unified diff (the
/// reviewer's terminal escape made visible, not obeyed) before "Send …? (y/N)"; the
/// outcome carries the edited plan.
#[test]
fn a_plan_edited_in_the_editor_shows_its_diff_before_sending() {
    let env = Env::new();
    env.ask(&crate::edit::plan_review("pe1")).ok();
    let written = format!("{}5. \u{1b}[31mred\n", crate::edit::EDITED);
    let editor = fake_editor(&env, &written);
    let mut p = spawn(&env, &["answer", "pe1"], &[("EDITOR", &editor)]);
    expect(&mut p, "Your decision");
    // Approve, Revise, Decline with feedback, Read the plan again, then the edit.
    expect(
        &mut p,
        "Edit the plan in $EDITOR, then approve it as edited",
    );
    send(&mut p, "5");
    expect(&mut p, "This will be sent:");
    expect(&mut p, "approved (Approve); the changes to the proposal:");
    expect(&mut p, "--- proposed");
    expect(&mut p, "-2. Upgrade node a");
    expect(&mut p, "+2. Back up node a");
    expect(&mut p, "+5. \\x1b[31mred");
    expect(&mut p, "Send the answer above?");
    assert!(env.outcome("pe1").is_none(), "nothing is sent before y");
    yes(&mut p);
    expect(&mut p, "pe1 answered by tester (approved)");
    assert_eq!(finish(p), 0);
    let out = answer_of(&env, "pe1");
    assert_eq!(out["decision"], "approved");
    assert_eq!(out["edited"]["plan"]["approved"], written);
    assert_eq!(out["edited"]["plan"]["proposed"], crate::edit::PLAN);
    assert!(out["edited"]["plan"]["diff"]
        .as_str()
        .unwrap()
        .starts_with("--- proposed\n+++ approved\n@@ -1,3 +1,5 @@\n"));
    assert_eq!(
        out["answer"]["answers"],
        json!([{"id": "plan", "selected": ["Approve"], "edited": written}])
    );
}

/// A free-text question the asker made `editable`: "Answer in words" or "Edit the
/// proposal"; the edit alone answers it, its diff shown before the send.
#[test]
fn an_editable_proposal_is_edited_and_its_diff_shown_before_sending() {
    let env = Env::new();
    env.ask(
        &json!({"id": "m1", "questions": [{"id": "msg", "question": "Commit message?",
        "detail": "Fix the bug", "editable": true}]}),
    )
    .ok();
    let editor = fake_editor(&env, "Fix the parser bug\n");
    let mut p = spawn(&env, &["answer", "m1"], &[("EDITOR", &editor)]);
    expect(&mut p, "Answer in words");
    expect(
        &mut p,
        "Edit the proposal in $EDITOR, then approve it as edited",
    );
    send(&mut p, "2");
    expect(
        &mut p,
        "the proposal, approved as edited; the changes to the proposal:",
    );
    expect(&mut p, "-Fix the bug");
    expect(&mut p, "+Fix the parser bug");
    yes(&mut p);
    expect(&mut p, "m1 answered by tester");
    assert_eq!(finish(p), 0);
    let out = answer_of(&env, "m1");
    assert_eq!(
        out["answer"]["answers"],
        json!([{"id": "msg", "selected": [], "edited": "Fix the parser bug"}])
    );
    assert_eq!(out["edited"]["msg"]["proposed"], "Fix the bug");
}
