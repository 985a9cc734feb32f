//! The terminal screen as a person sees it: `dshq answer` inside a real tmux of a given
//! size, the screen read back with `capture-pane`. tmux draws what a terminal would (it
//! wraps a line that is too long, it obeys escape sequences), so these tests see what a
//! pty's byte stream cannot: whether a line was broken by the terminal mid-word, how a
//! table is laid out, what the pane's title became.
//!
//! Each test runs its own tmux server on a private socket and kills it at the end.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use crate::api::{host, token};
use crate::helpers::{bin, Env, DEADLINE};
use crate::page::login;

const TMUX: &str = "/usr/bin/tmux";

/// `dshq ARGS` in a detached tmux session of `cols`×`rows`, without colour.
struct Tmux {
    _dir: tempfile::TempDir,
    sock: PathBuf,
}

impl Tmux {
    fn start(env: &Env, cols: u16, rows: u16, args: &[&str]) -> Tmux {
        assert!(
            std::path::Path::new(TMUX).exists(),
            "{TMUX} is missing: apt-get install tmux"
        );
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("tmux.sock");
        // The shell keeps the pane (and what it shows) after dshq exits.
        let mut cmd = vec![
            "exec sh -c '\"$0\" \"$@\"; echo \"[exit $?]\"; sleep 600'".to_string(),
            bin().display().to_string(),
        ];
        cmd.extend(args.iter().map(|a| a.to_string()));
        let quoted: Vec<String> = cmd
            .iter()
            .enumerate()
            .map(|(k, a)| {
                if k == 0 {
                    a.clone()
                } else {
                    format!("'{}'", a.replace('\'', "'\\''"))
                }
            })
            .collect();
        let st = Command::new(TMUX)
            .arg("-S")
            .arg(&sock)
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "t"])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .arg(quoted.join(" "))
            .env("DSHQ_ROOT", env.root())
            .env_remove("DSHQ_LEASE")
            .env_remove("DSHQ_CLOCK_SKEW")
            .env_remove("TMUX")
            .env("RUST_LOG", "warn")
            .env("USER", "tester")
            .env("TERM", "xterm-256color")
            .env("NO_COLOR", "1")
            .status()
            .expect("run tmux");
        assert!(st.success(), "tmux new-session failed");
        Tmux { _dir: dir, sock }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new(TMUX)
            .arg("-S")
            .arg(&self.sock)
            .args(args)
            .output()
            .expect("run tmux");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen, one string per row (`joined`: rows the terminal wrapped are joined).
    fn screen(&self, joined: bool) -> Vec<String> {
        let mut args = vec!["capture-pane", "-p", "-t", "t"];
        if joined {
            args.push("-J");
        }
        self.tmux(&args)
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    /// Wait until the screen shows `text`; the screen then.
    fn wait_for(&self, text: &str) -> Vec<String> {
        let start = Instant::now();
        loop {
            let s = self.screen(false);
            if s.iter().any(|l| l.contains(text)) {
                return s;
            }
            if start.elapsed() > DEADLINE {
                panic!(
                    "timed out waiting for {text:?}; the screen:\n{}",
                    s.join("\n")
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Type `text` literally.
    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "t", "-l", text]);
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

/// The screen's words, in order, as one string (line breaks count as spaces, and the
/// bars that mark quoted text are left out).
fn words(screen: &[String]) -> String {
    screen
        .iter()
        .flat_map(|l| l.split_whitespace())
        .filter(|w| *w != "│")
        .collect::<Vec<_>>()
        .join(" ")
}

fn normal(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

const PLAN: &str = "# Migrate the orders table\n\n1. Add `orders_v2` beside `orders`.\n2. Backfill in batches of **10k** rows.\n\n| step | risk | owner |\n|---|---|---|\n| backfill | load on the primary | db team |\n| switch | none | \u{1b}]0;PWNED\u{7} |\n\nSee [the runbook](https://example.org/runbook) first.\n";

fn plan_request(id: &str) -> Value {
    json!({
        "id": id, "timeout": "2h",
        "meta": {"task": "orders migration, step 2 of 5", "pr": "https://git.example.com/shop/pull/112"},
        "questions": [{
            "id": "plan", "header": "Plan review", "question": "Approve the migration plan for the orders table?",
            "detail": PLAN,
            "options": [{"label": "Revise", "description": "send it back"}, {"label": "Ship it"}, {"label": "Later", "description": "not this week"}],
            "intent": {"kind": "plan-review", "approve": "Ship it"}
        }]
    })
}

#[test]
fn the_header_and_the_key_hints_wrap_at_words_at_80_and_100_columns() {
    for cols in [80u16, 100] {
        let env = Env::new();
        let inst = env
            .run(&["agent", "enter", "--id", "agent-search-refactoring"])
            .ok()
            .stdout
            .trim()
            .to_string();
        env.ask(&json!({
            "id": "search-2", "timeout": "2h", "agent": {"id": "agent-search-refactoring", "instance": inst},
            "meta": {"task": "search refactor, step 2", "notes": "The agent ran the search test suite (412 passed) and needs a direction."},
            "questions": [{"id": "q", "header": "search", "question": "Step 2 of the search work: which way should the index be rebuilt, online or offline?",
                "options": [{"label": "Keep it simple", "description": "the smallest change that works"}, {"label": "Not now"}]}]
        }))
        .ok();
        let t = Tmux::start(
            &env,
            cols,
            40,
            &["answer", "search-2", "--idle-release", "5m"],
        );
        t.wait_for("Your answer");
        // The hints are drawn last: read the screen once they are all there.
        let plain = t.wait_for("Esc: more]");
        // A row the terminal had to wrap shows up joined with -J: none may.
        assert_eq!(
            plain,
            t.screen(true),
            "{cols} columns: a line was wider than the screen and the terminal broke it:\n{}",
            plain.join("\n")
        );
        assert!(
            plain.iter().all(|l| l.chars().count() < cols as usize),
            "{cols}: {plain:#?}"
        );
        let all = words(&plain);
        for whole in [
            "answering as tester in context default · idle release after 5m · keys: 1-9 pick, e editor, s skip, l later, i context, q quit, Esc more · Ctrl-C: stop",
            "━━ Request search-2 · context default · 1 question · asked",
            "by agent agent-search-refactoring · deadline in",
            "[search] Step 2 of the search work: which way should the index be rebuilt, online or offline? (id q)",
            "[1-9/Enter: choose · e: Other in $EDITOR · s: skip · l: later · i: context · q: quit · Esc: more]",
        ] {
            assert!(all.contains(&normal(whole)), "{cols} columns: {whole:?} is not whole on\n{}", plain.join("\n"));
        }
        t.keys(&["q"]);
        t.wait_for("[exit");
    }
}

#[test]
fn a_plan_with_a_table_and_a_link_renders_on_the_screen_and_its_escapes_stay_text() {
    let env = Env::new();
    env.ask(&plan_request("p1")).ok();
    let t = Tmux::start(&env, 100, 50, &["answer", "p1"]);
    t.wait_for("Your decision");
    let screen = t.wait_for("Esc: more]");
    let text = screen.join("\n");
    for row in [
        "┌──────────┬─────────────────────┬──────────────────┐",
        "│ step     │ risk                │ owner            │",
        "├──────────┼─────────────────────┼──────────────────┤",
        "│ backfill │ load on the primary │ db team          │",
        "│ switch   │ none                │ \\x1b]0;PWNED\\x07 │",
        "└──────────┴─────────────────────┴──────────────────┘",
    ] {
        assert!(
            screen
                .iter()
                .any(|l| l.trim_start().trim_start_matches('│').trim_start() == row),
            "{row:?} missing:\n{text}"
        );
    }
    assert!(
        text.contains("See the runbook <https://example.org/runbook> first."),
        "{text}"
    );
    assert!(
        text.contains("1. Add `orders_v2` beside `orders`."),
        "{text}"
    );
    assert!(
        !text.contains("| step |") && !text.contains("](https://"),
        "raw Markdown shown:\n{text}"
    );
    // The escape in the cell was shown, not obeyed: the pane's title is not PWNED.
    let title = t.tmux(&["display-message", "-p", "-t", "t", "#{pane_title}"]);
    assert!(!title.contains("PWNED"), "the pane title became {title:?}");
    t.keys(&["q"]);
    t.wait_for("[exit");
}

#[test]
fn the_confirm_step_shows_all_the_feedback_it_will_send() {
    let env = Env::new();
    env.ask(&plan_request("p2")).ok();
    let t = Tmux::start(&env, 80, 50, &["answer", "p2"]);
    t.wait_for("Decline with feedback");
    t.wait_for("Esc: more]");
    // The cursor starts on Decline with feedback: Enter opens the feedback box.
    t.keys(&["Enter"]);
    t.wait_for("Feedback for the author");
    let feedback = "Split the backfill into two migrations, one per table, so that each can be rolled back alone; keep the old column until every read has moved, then drop it in a release of its own. END-OF-FEEDBACK";
    t.type_text(feedback);
    t.keys(&["Enter"]);
    let screen = t.wait_for("(y/N)");
    assert!(
        words(&screen).contains(&normal(feedback)),
        "the confirm step does not show the whole feedback:\n{}",
        screen.join("\n")
    );
    assert_eq!(screen, t.screen(true), "no line wrapped by the terminal");
    t.type_text("y");
    t.keys(&["Enter"]);
    t.wait_for("p2 answered by tester (declined)");
    let out = env.outcome("p2").expect("the outcome");
    assert_eq!(
        out["answer"]["answers"],
        json!([{"id": "plan", "selected": [], "custom": feedback}])
    );
}

/// The terminal's decision list: each choice's label and which one the cursor is on.
fn terminal_choices(screen: &[String]) -> (Vec<String>, usize) {
    let at = screen
        .iter()
        .position(|l| l.contains("Your decision"))
        .expect("the decision list");
    let mut labels = Vec::new();
    let mut cursor = None;
    for l in &screen[at + 1..] {
        let Some((num, rest)) = l.split_once(' ') else {
            break;
        };
        if num.parse::<usize>().is_err() {
            break;
        }
        let (on, label) = match rest.strip_prefix("> ") {
            Some(r) => (true, r),
            None => (false, rest.trim_start()),
        };
        if label == "Read the plan again" {
            break;
        }
        if on {
            cursor = Some(labels.len());
        }
        let label = label.split(" — ").next().unwrap();
        let label = label
            .trim_end_matches(" (approves)")
            .trim_end_matches(" (declines)");
        labels.push(label.to_string());
    }
    (labels, cursor.expect("the cursor is on a choice"))
}

/// The page's plan-review radios: each choice's label and which one is checked.
fn page_choices(html: &str) -> (Vec<String>, Option<usize>) {
    let mut labels = Vec::new();
    let mut checked = None;
    for part in html.split("<label class=\"opt ").skip(1) {
        let part = &part[..part.find("</label>").unwrap()];
        if part.contains(" checked>") {
            checked = Some(labels.len());
        }
        let label = match part.find("<span class=\"label\">") {
            Some(k) => {
                let rest = &part[k + 20..];
                rest[..rest.find("</span>").unwrap()].to_string()
            }
            None => part[part.rfind('>').unwrap() + 1..].trim().to_string(),
        };
        labels.push(label);
    }
    (labels, checked)
}

#[test]
fn the_page_and_the_terminal_offer_a_plan_review_in_the_same_order_with_the_same_default() {
    let env = Env::new();
    let h = host(&env, &[]);
    let rita = token(&env, "reviewer", "rita", None);
    env.ask(&plan_request("p3")).ok();

    let t = Tmux::start(&env, 100, 50, &["answer", "p3"]);
    t.wait_for("Your decision");
    let (term, term_default) = terminal_choices(&t.wait_for("Esc: more]"));
    t.keys(&["q"]);
    t.wait_for("[exit");

    let s = login(&h, &rita);
    let r = s.get("/r/p3");
    assert_eq!(r.status, 200, "{}", r.body);
    let (page, page_default) = page_choices(&r.body);

    let expected: Vec<String> = ["Revise", "Ship it", "Later", "Decline with feedback"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(term, expected, "the terminal's order");
    assert_eq!(page, expected, "the page's order");
    assert_eq!(Some(term_default), page_default, "the same default");
    assert_ne!(
        expected[term_default], "Ship it",
        "Approve is never the default"
    );
}

#[test]
fn a_long_option_wraps_with_a_hanging_indent_and_is_never_cut() {
    let env = Env::new();
    let label = "Rebuild the search index offline during the Sunday maintenance window";
    let desc = "takes about forty minutes, readers see the old index until the switch, and the final step needs a short write freeze";
    env.ask(&json!({
        "id": "long-opt", "timeout": "2h",
        "questions": [{"id": "q", "question": "How should the index be rebuilt?",
            "options": [{"label": label, "description": desc}, {"label": "Not now"}]}]
    }))
    .ok();
    let cols = 50u16;
    let t = Tmux::start(
        &env,
        cols,
        40,
        &["answer", "long-opt", "--idle-release", "5m"],
    );
    let plain = t.wait_for("Not now");
    // No row was wider than the terminal (the terminal broke none), none was cut.
    assert_eq!(plain, t.screen(true), "{}", plain.join("\n"));
    assert!(
        plain.iter().all(|l| l.chars().count() <= cols as usize),
        "{plain:#?}"
    );
    assert!(
        !plain
            .iter()
            .any(|l| l.contains('…') && l.contains("Rebuild")),
        "{}",
        plain.join("\n")
    );
    let all = words(&plain);
    let whole = format!("1 > {label} — {desc}");
    assert!(
        all.contains(&normal(&whole)),
        "{whole:?} is not whole on\n{}",
        plain.join("\n")
    );
    // The continuation lines hang under the option's text, not under its number.
    let first = plain
        .iter()
        .position(|l| l.starts_with("1 > Rebuild"))
        .expect("the option's first line");
    let next = &plain[first + 1];
    assert!(
        next.starts_with("    ") && !next.starts_with("     "),
        "{next:?}\n{}",
        plain.join("\n")
    );
    assert!(
        plain.iter().any(|l| l.starts_with("2   Not now")),
        "{}",
        plain.join("\n")
    );
    t.keys(&["q"]);
    t.wait_for("[exit");
}
