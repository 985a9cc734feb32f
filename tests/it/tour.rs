//! What a new user meets following the README: its tour runs as written and prints what the
//! README shows (issue 24), and the audit commands of the tour say what they seem to say
//! (issue 11, item 20).
//!
//! The tour test reads README.md between `<!-- tour:begin -->` and `<!-- tour:end -->`.
//! Every `$ ` line of a `console` block there is run in bash on a terminal 100 columns wide,
//! with `dshq` (this build) first on `PATH`, the variables it exports carried to the next
//! line, and the working directory a temporary one that stands for `/tmp/tour`; `dshq
//! daemon` is started in the background and its log is its output. What the terminal shows
//! must be the lines under the command, ignoring only times (timestamps, ages, durations,
//! `deadlineMs`), ids (the audit head's hash, the temporary directory) and the spaces that
//! align columns around them. A file the tour uses is the `json` block after
//! `<!-- tour:file NAME -->`. Between commands the test waits, as a person reading the log
//! would, until the daemon has taken whatever is in `inbox/new/`.
//!
//! `DSHQ_TOUR_TRANSCRIPT=FILE` writes what the terminal really showed, command by command,
//! to FILE: the text to paste into the README when the output changes on purpose.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::helpers::*;

/// One `$ ` line of the tour and the lines the README shows under it.
#[derive(Debug)]
struct Step {
    command: String,
    expected: Vec<String>,
}

/// What the tour needs: its files and its steps, in order.
#[derive(Debug, Default)]
struct Tour {
    files: Vec<(String, String)>,
    steps: Vec<Step>,
}

fn readme() -> String {
    fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).expect("README.md")
}

/// The tour of `readme`: its files and its console steps.
fn parse_tour(readme: &str) -> Tour {
    let begin = readme
        .find("<!-- tour:begin -->")
        .expect("README.md marks its tour with <!-- tour:begin -->");
    let end = readme[begin..]
        .find("<!-- tour:end -->")
        .map(|e| begin + e)
        .expect("and <!-- tour:end -->");
    let mut tour = Tour::default();
    let mut lines = readme[begin..end].lines();
    let mut next_file: Option<String> = None;
    while let Some(line) = lines.next() {
        if let Some(name) = line
            .trim()
            .strip_prefix("<!-- tour:file ")
            .and_then(|r| r.strip_suffix(" -->"))
        {
            next_file = Some(name.trim().to_string());
            continue;
        }
        let Some(lang) = line.strip_prefix("```") else {
            continue;
        };
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        match lang.trim() {
            "console" => {
                let mut i = 0;
                while i < body.len() {
                    let Some(first) = body[i].strip_prefix("$ ") else {
                        panic!(
                            "a console block of the tour starts with `$ `: {:?}",
                            body[i]
                        );
                    };
                    let mut command = first.to_string();
                    i += 1;
                    // A command continued on the next line.
                    while command.ends_with('\\') && i < body.len() {
                        command.push('\n');
                        command.push_str(body[i]);
                        i += 1;
                    }
                    let mut expected = Vec::new();
                    while i < body.len() && !body[i].starts_with("$ ") {
                        expected.push(body[i].to_string());
                        i += 1;
                    }
                    tour.steps.push(Step { command, expected });
                }
            }
            _ => {
                if let Some(name) = next_file.take() {
                    tour.files.push((name, body.join("\n") + "\n"));
                }
            }
        }
    }
    tour
}

/// A line with what may differ from run to run replaced, and its column padding squeezed.
fn normalize(line: &str, dir: &str) -> String {
    use std::sync::OnceLock;
    static RULES: OnceLock<Vec<(regex::Regex, &'static str)>> = OnceLock::new();
    let rules = RULES.get_or_init(|| {
        [
            (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "<time>"),
            (r"\b(\d+[smhd] ago|in \d+[smhd]|just now)\b", "<age>"),
            (
                r"\b\d+(\.\d+)?(ms|µs|s|m|h|d)( \d+(\.\d+)?(ms|µs|s|m|h|d))*\b",
                "<duration>",
            ),
            (r#""deadlineMs":\d+"#, r#""deadlineMs":<ms>"#),
            (r"\bhead (\d+) [0-9a-f]{64}\b", "head $1 <hash>"),
            (r" {2,}", " "),
        ]
        .into_iter()
        .map(|(re, to)| (regex::Regex::new(re).unwrap(), to))
        .collect()
    });
    let mut s = line.replace(dir, "/tmp/tour");
    for (re, to) in rules {
        s = re.replace_all(&s, *to).into_owned();
    }
    s.trim_end().to_string()
}

/// The environment of the person's shell: this build's `dshq` first on `PATH`, a home,
/// no colour (the README has none), and none of the test runner's dshq variables.
fn shell(dir: &Path) -> Command {
    let bin_dir = bin().parent().unwrap().to_path_buf();
    let mut c = Command::new("bash");
    c.env_clear()
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", bin_dir.display()),
        )
        .env("HOME", dir)
        .env("USER", "alice")
        .env("TERM", "xterm-256color")
        .env("NO_COLOR", "1")
        .env("LANG", "C.UTF-8")
        .current_dir(dir);
    c
}

/// Run `command` on a terminal as the person would, in the variables of the steps before;
/// returns what the terminal showed.
fn run_on_terminal(dir: &Path, env_file: &Path, command: &str) -> String {
    use rexpect::session::{spawn_with_options, Options};
    let script = format!(
        "stty rows 50 cols 100\nsource {env}\n{command}\nrc=$?\nexport -p > {env}\nexit $rc\n",
        env = env_file.display()
    );
    let mut c = shell(dir);
    c.arg("-c").arg(script);
    let mut p = spawn_with_options(
        c,
        Options {
            timeout_ms: Some(60_000),
            strip_ansi_escape_codes: false,
        },
    )
    .expect("spawn bash on a pty");
    let out = p.exp_eof().expect("the command ends");
    let bytes: Vec<u8> = out.chars().map(|c| c as u32 as u8).collect();
    String::from_utf8_lossy(&bytes).replace('\r', "")
}

#[test]
fn the_readme_tour_runs_as_written_and_prints_what_it_shows() {
    let tour = parse_tour(&readme());
    assert!(tour.steps.len() >= 10, "{tour:?}");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let dir_text = dir.display().to_string();
    for (name, text) in &tour.files {
        fs::write(dir.join(name), text).unwrap();
    }
    let env_file = dir.join(".tour-env");
    fs::write(&env_file, "").unwrap();
    let mut transcript = String::new();
    let mut daemon: Option<(std::process::Child, PathBuf)> = None;
    let mut daemon_step: Option<&Step> = None;
    let mut failures = Vec::new();
    let compare = |step: &Step, shown: &str, failures: &mut Vec<String>| {
        let want: Vec<String> = step
            .expected
            .iter()
            .map(|l| normalize(l, &dir_text))
            .collect();
        let got: Vec<String> = if shown.trim().is_empty() {
            Vec::new()
        } else {
            shown
                .trim_end_matches('\n')
                .split('\n')
                .map(|l| normalize(l, &dir_text))
                .collect()
        };
        let same = want.len() == got.len() && want.iter().zip(&got).all(|(w, g)| same_line(w, g));
        if !same {
            failures.push(format!(
                "$ {}\n--- the README shows:\n{}\n--- the terminal showed:\n{}",
                step.command,
                step.expected.join("\n"),
                shown.trim_end()
            ));
        }
    };
    for step in &tour.steps {
        // The README's paths name /tmp/tour: here, the temporary directory.
        let command = step.command.replace("/tmp/tour", &dir_text);
        let shown = if step.command == "dshq daemon" {
            let log = dir.join("daemon.log");
            let child = shell(&dir)
                .arg("-c")
                .arg(format!("source {}\nexec dshq daemon", env_file.display()))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(fs::File::create(&log).unwrap())
                .spawn()
                .expect("spawn the daemon");
            assert!(
                wait_until(DEADLINE, || fs::read_to_string(&log)
                    .unwrap_or_default()
                    .contains("daemon started")),
                "the tour's daemon did not start: {}",
                fs::read_to_string(&log).unwrap_or_default()
            );
            daemon = Some((child, log));
            // What the daemon's terminal shows is compared at the end of the tour.
            daemon_step = Some(step);
            continue;
        } else {
            run_on_terminal(&dir, &env_file, &command)
        };
        // A person reads the daemon's log line before the next command: wait until the
        // daemon has taken what was dropped.
        if let Some(root) = exported(&env_file, "DSHQ_ROOT") {
            let new = PathBuf::from(root).join("inbox/new");
            assert!(
                wait_until(DEADLINE, || fs::read_dir(&new)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(true)),
                "the daemon left files in {}",
                new.display()
            );
        }
        transcript.push_str(&format!(
            "$ {}\n{}",
            step.command,
            shown.replace(&dir_text, "/tmp/tour")
        ));
        compare(step, &shown, &mut failures);
    }
    if let (Some(step), Some((_, log))) = (daemon_step, &daemon) {
        let shown = fs::read_to_string(log).unwrap_or_default();
        transcript.push_str(&format!(
            "$ {} (by the end)\n{}",
            step.command,
            shown.replace(&dir_text, "/tmp/tour")
        ));
        compare(step, &shown, &mut failures);
    }
    if let Ok(path) = std::env::var("DSHQ_TOUR_TRANSCRIPT") {
        fs::write(path, &transcript).unwrap();
    }
    if let Some((mut child, _)) = daemon {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let _ = child.wait();
    }
    assert!(
        failures.is_empty(),
        "the README's tour no longer matches the binary ({} steps differ; \
         DSHQ_TOUR_TRANSCRIPT=FILE writes the real output):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Whether two normalized lines say the same. A table on a terminal cuts its last cell to
/// the width (`…`), and where it cuts depends on how wide the times before it are: two cut
/// lines match when, the cut word aside, one is the beginning of the other.
fn same_line(want: &str, got: &str) -> bool {
    if want == got {
        return true;
    }
    let cut = |l: &str| -> Option<String> {
        let body = l.strip_suffix('…')?;
        Some(match body.rfind(' ') {
            Some(i) => body[..i].to_string(),
            None => String::new(),
        })
    };
    match (cut(want), cut(got)) {
        (Some(w), Some(g)) => w.starts_with(&g) || g.starts_with(&w),
        _ => false,
    }
}

/// The value `name` has in the shell's exported variables (`export -p`'s output), if set.
fn exported(env_file: &Path, name: &str) -> Option<String> {
    let text = fs::read_to_string(env_file).ok()?;
    let prefix = format!("declare -x {name}=\"");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map(|v| v.trim_end_matches('"').to_string())
}

#[test]
fn the_tour_parser_finds_commands_their_output_and_files() {
    let text = "intro\n<!-- tour:begin -->\n<!-- tour:file q.json -->\n```json\n{\"a\": 1}\n```\n\
                ```console\n$ export X=1\n$ cat q.json \\\n  | wc -l\n1\n```\n<!-- tour:end -->\n\
                ```console\n$ not this\n```\n";
    let t = parse_tour(text);
    assert_eq!(
        t.files,
        vec![("q.json".to_string(), "{\"a\": 1}\n".to_string())]
    );
    assert_eq!(t.steps.len(), 2);
    assert_eq!(t.steps[0].command, "export X=1");
    assert!(t.steps[0].expected.is_empty());
    assert_eq!(t.steps[1].command, "cat q.json \\\n  | wc -l");
    assert_eq!(t.steps[1].expected, vec!["1"]);
    assert_eq!(
        normalize("deploy-42  default  pending  2m ago  in 7h   -", "/x"),
        "deploy-42 default pending <age> <age> -"
    );
    assert_eq!(
        normalize(
            "ok: 4 events; head 4 af9ae3e97ab9a1face590681bb464bd7e137587d16d5813cd8ab095bcf71beb9",
            "/x"
        ),
        "ok: 4 events; head 4 <hash>"
    );
    assert_eq!(
        normalize("WAIT 1s 30ms answered", "/x"),
        "WAIT <duration> answered"
    );
    assert!(same_line(
        "a b Approve the migratio…",
        "a b Approve the migration…"
    ));
    assert!(same_line("a b Approve…", "a b Approve the migration…"));
    assert!(!same_line("a b Approve the plan…", "a b Reject the plan…"));
    assert!(!same_line("a b Approve", "a b Approve the migration…"));
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
