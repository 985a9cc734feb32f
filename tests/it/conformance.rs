//! The client conformance suite: one table of scenarios ([`SCENARIOS`]), written once and
//! run against every asker face ([`FACES`]), each asserting the same decision. It is the
//! one place the clients' rules (the decision document, docs/protocol.md) are tested, as
//! `tests/store` is for the drivers.
//!
//! For each face, the driver starts a root (a config file with a quorum context, the
//! people directory; a daemon with the HTTP API and a context ladder), and for each
//! scenario it hands the face a job, waits until the request is in the store, plays the
//! reviewer (the real CLI: answer, decline with feedback, edit, two votes, cancel, abort;
//! the clock for expiries; SIGKILL and restart of the daemon), and compares the face's
//! decision, normalized, with the scenario's expected one:
//!
//! `{"end": "answered" | CODE, "answers": {QID: value}, "decision", "feedback", "plan" (the
//! plan the guarded code ran), "voters" (persons), "decidedBy", "receipt" (verified
//! offline with `dshq receipt verify --digest`)}`
//!
//! A face compares only the members it carries ([`Face::carries`]: the Claude Code hook
//! has no votes or receipts to give), and runs only the scenarios it can ask
//! ([`Face::can`]: the hook cannot declare a ladder's default), and names an ending in its
//! own vocabulary where it has another word ([`Face::ends_as`]: dsh calls an expiry
//! `NO_PROVIDER`). Without a daemon a face that needs one says so (`NO_DAEMON` for the file
//! transports, `IO` over HTTP); the others work on the store directly, and are answered as
//! usual.
//!
//! **Adding a face** (an adapter for another framework): write a runner that speaks the
//! line protocol of `tests/conformance/runner.py` (or the TypeScript adapters' runner,
//! `contrib/typescript/test/adapters/conformance.js`: one job a line on stdin; `{"asked": ID}`
//! once the request is handed over; `{"decision": D}` normalized as above, from the
//! adapter's own types), and add a [`Face`] to [`FACES`] naming its runner
//! ([`Driver::Runner`], or [`Driver::Installed`] for a Node runner that imports packages
//! by name), the members it carries and the scenarios it can ask. Faces that are commands
//! of dshq itself run in this module ([`Driver::Hook`], [`Driver::Wait`]).
//!
//! Cost: one runner process per face (Python and Node start once), a scenario a few
//! hundred milliseconds but the expiries (one second each) and the daemon's restart; the
//! faces run as tests of their own, in parallel. Measured in docs/PERFORMANCE.md.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::{bin, wait_until, Daemon, Env, DEADLINE};

/// The members of a normalized decision a face may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    End,
    Answers,
    Decision,
    Feedback,
    Plan,
    Voters,
    DecidedBy,
    Receipt,
}

use Member::*;

const ALL: &[Member] = &[
    End, Answers, Decision, Feedback, Plan, Voters, DecidedBy, Receipt,
];

/// What a scenario needs of a face beyond asking questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    /// The request declares its own ladder (a default on expiry).
    OwnLadder,
    /// The face asks questions (`Kind::Ask`), not only plan reviews.
    Questions,
}

/// How a face is driven.
#[derive(Debug, Clone, Copy)]
enum Driver {
    /// A runner process speaking the line protocol: the program (`$VAR`: the one an
    /// environment variable names) and its arguments.
    Runner(&'static str, &'static [&'static str]),
    /// A Node runner (a script in `tests/conformance`, and its arguments) run from a
    /// folder laid out as an installed project ([`crate::dsh::Project`]), where `dshq`,
    /// `dshq-dsh` and dsh's packages resolve by name.
    Installed(&'static str, &'static [&'static str]),
    /// `dshq claude-code hook --wait`, as Claude Code runs it.
    Hook,
    /// `dshq ask FILE`, then `dshq --json wait ID` (and the outbox file's receipt).
    Wait,
}

/// An asker face.
struct Face {
    name: &'static str,
    driver: Driver,
    /// The members of the decision it carries.
    carries: &'static [Member],
    /// What it can ask.
    can: &'static [Need],
    /// Asks over HTTP (the daemon's API, a token).
    http: bool,
    /// Without a daemon serving the root: the error code it ends with, or `None` when it
    /// works on the store directly.
    without_daemon: Option<&'static str>,
    /// Endings its vocabulary names otherwise: (dshq's code, the face's).
    ends_as: &'static [(&'static str, &'static str)],
}

/// Every asker face.
const FACES: &[Face] = &[
    Face {
        name: "python-file",
        driver: Driver::Runner("python3", &["tests/conformance/runner.py", "python-file"]),
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    Face {
        name: "python-http",
        driver: Driver::Runner("python3", &["tests/conformance/runner.py", "python-http"]),
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: true,
        without_daemon: Some("IO"),
        ends_as: &[],
    },
    Face {
        name: "ts-file",
        driver: Driver::Runner("node", &["tests/conformance/runner.mjs", "ts-file"]),
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    Face {
        name: "ts-http",
        driver: Driver::Runner("node", &["tests/conformance/runner.mjs", "ts-http"]),
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: true,
        without_daemon: Some("IO"),
        ends_as: &[],
    },
    Face {
        name: "langgraph",
        driver: Driver::Runner("python3", &["tests/conformance/runner.py", "langgraph"]),
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    Face {
        name: "mcp",
        driver: Driver::Runner("python3", &["tests/conformance/runner.py", "mcp"]),
        // MCP's results leave the receipt out (`dshq receipt ID` has it), and its
        // model-facing ask takes no ladder.
        carries: &[End, Answers, Decision, Feedback, Plan, Voters, DecidedBy],
        can: &[Need::Questions],
        http: false,
        without_daemon: None,
        ends_as: &[],
    },
    Face {
        name: "hook",
        driver: Driver::Hook,
        // Claude Code's contract carries the answers, the approved plan and the reason.
        carries: &[End, Answers, Decision, Feedback, Plan],
        can: &[Need::Questions],
        http: false,
        without_daemon: None,
        ends_as: &[],
    },
    Face {
        name: "pydantic-ai",
        driver: Driver::Runner("python3", &["tests/conformance/runner.py", "pydantic-ai"]),
        // A plan is a call of a tool that needs approval (the plan its argument, edited in
        // the block of arguments); questions go through the adapter's question tool.
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    Face {
        name: "openai-agents",
        driver: Driver::Runner("python3", &["tests/conformance/runner.py", "openai-agents"]),
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    Face {
        name: "crewai",
        driver: Driver::Runner(
            "$DSHQ_TEST_CREWAI_PYTHON",
            &["tests/conformance/runner.py", "crewai"],
        ),
        // A `@human_feedback` step is a review of one output: the plan scenarios. CrewAI
        // has no pausing question (`Flow.ask` blocks the flow), so the question scenarios
        // (and with them expiry, cancel, abort, quorum and receipt, which the table asks
        // as questions) are not asked of it; its own tests cover expiry and decline.
        carries: ALL,
        can: &[],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    Face {
        name: "claude-agent-sdk",
        driver: Driver::Runner(
            "python3",
            &["tests/conformance/runner.py", "claude-agent-sdk"],
        ),
        // The PreToolUse hook at the SDK's boundary: what Claude Code is told carries the
        // answers (AskUserQuestion's updatedInput), the approved plan and the reason.
        carries: &[End, Answers, Decision, Feedback, Plan],
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    // The TypeScript package's framework adapters (dshq/ai-sdk, dshq/openai-agents,
    // dshq/claude-agent-sdk), each running its framework's offline test model: a plan is a
    // tool call whose argument `plan` is the plan (edited in the block of arguments; Claude's
    // is ExitPlanMode), questions the framework's question tool (Claude's AskUserQuestion).
    // Every scenario applies: the adapters take a request's ladder, hand over the whole
    // decision document (votes, decidedBy, the receipt), and ask through a Client, here the
    // file transport (the HTTP transport is the ts-http face's).
    Face {
        name: "ts-ai-sdk",
        driver: Driver::Runner(
            "node",
            &["contrib/typescript/test/adapters/conformance.js", "ai-sdk"],
        ),
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    Face {
        name: "ts-openai-agents",
        driver: Driver::Runner(
            "node",
            &[
                "contrib/typescript/test/adapters/conformance.js",
                "openai-agents",
            ],
        ),
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    // At the SDK's `canUseTool` boundary (a session needs Claude Code's binary and a
    // model), which waits for the decision as a live session does.
    Face {
        name: "ts-claude-agent-sdk",
        driver: Driver::Runner(
            "node",
            &[
                "contrib/typescript/test/adapters/conformance.js",
                "claude-agent-sdk",
            ],
        ),
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: Some("NO_DAEMON"),
        ends_as: &[],
    },
    Face {
        name: "wait",
        driver: Driver::Wait,
        carries: ALL,
        can: &[Need::OwnLadder, Need::Questions],
        http: false,
        without_daemon: None,
        ends_as: &[],
    },
    Face {
        name: "dsh-file",
        driver: Driver::Installed("runner-dsh.mjs", &["dsh-file"]),
        carries: ALL,
        // dsh's request is its questions (and the agent, the signal): it cannot declare a
        // ladder, so no default on expiry.
        can: &[Need::Questions],
        http: false,
        // dsh's UserQuestionError has few codes, and a model acts on them: "nobody will
        // answer" (no daemon, an expiry) is NO_PROVIDER (the dshq code is its cause).
        without_daemon: Some("NO_PROVIDER"),
        ends_as: &[("ASK_EXPIRED", "NO_PROVIDER")],
    },
    Face {
        name: "dsh-http",
        driver: Driver::Installed("runner-dsh.mjs", &["dsh-http"]),
        // The API's outcome leaves the receipt out (`GET .../receipt` has it), and the
        // provider hands dsh the outcome it got.
        carries: &[End, Answers, Decision, Feedback, Plan, Voters, DecidedBy],
        can: &[Need::Questions],
        http: true,
        without_daemon: Some("NO_PROVIDER"),
        ends_as: &[("ASK_EXPIRED", "NO_PROVIDER")],
    },
];

/// What the reviewer does once the request is in the store.
#[derive(Debug, Clone, Copy)]
enum Review {
    /// `dshq answer ID FLAGS`.
    Answer(&'static [&'static str]),
    /// `dshq answer ID --edit FILE`: the proposal as shown, with the first text replaced
    /// by the second (a face may show the plan inside more, as the adapters' block of a
    /// tool call's arguments).
    Edit(&'static str, &'static str),
    /// Two votes (`--name bob`, then `--name carol`), checking in between that the face
    /// is still waiting and the request shows 1/2.
    Quorum,
    /// `dshq cancel ID --reason ...`.
    Cancel,
    /// `dshq abort ID --reason ...` (the asker's end).
    Abort,
    /// Nothing: the ladder expires the request.
    Expire,
    /// SIGKILL the daemon, start it again, then answer with these flags.
    KillDaemonThen(&'static [&'static str]),
    /// No daemon serves the root; answer with these flags when the face asked anyway.
    NoDaemonThen(&'static [&'static str]),
}

/// Ask questions, or guard a plan (the face's gate: `requires_approval`, `approve_plan`,
/// `ExitPlanMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Ask,
    Plan,
}

/// One scenario of the table.
struct Scenario {
    name: &'static str,
    kind: Kind,
    /// The questions (`Kind::Ask`), ids `q1`, `q2` (as the hook numbers them).
    questions: fn() -> Value,
    /// The context asked in.
    context: &'static str,
    /// Extra request members (a ladder).
    extra: fn() -> Value,
    needs: &'static [Need],
    review: Review,
    /// The decision every face must see.
    expect: fn() -> Value,
}

const PLAN: &str = "# Plan\n\n1. Add the `orders` table\n2. Backfill it\n";
const EDITED: &str = "# Plan\n\n1. Add the `orders` table\n2. Backfill it in batches of 10k\n";
const FEEDBACK: &str = "Backfill in batches, not all at once";

fn db() -> Value {
    json!([{"id": "q1", "question": "Which database?", "header": "Database",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}]}])
}
fn checks() -> Value {
    json!([{"id": "q1", "question": "Which checks?", "header": "Checks", "multiSelect": true,
            "options": [{"label": "Unit"}, {"label": "Integration"}, {"label": "Lint"}]}])
}
fn two() -> Value {
    json!([{"id": "q1", "question": "Which database?", "header": "Database",
            "options": [{"label": "Postgres"}, {"label": "SQLite"}]},
           {"id": "q2", "question": "Which region?", "header": "Region",
            "options": [{"label": "eu"}, {"label": "us"}]}])
}
fn none() -> Value {
    json!({})
}
fn own_ladder() -> Value {
    json!({"ladder": {"expireAfter": "1s", "onExpire": "default",
                      "default": {"answers": [{"id": "q1", "selected": ["Postgres"]}]}}})
}
fn answered(answers: Value) -> Value {
    json!({"end": "answered", "answers": answers, "decision": null, "feedback": null,
           "voters": [], "decidedBy": "person"})
}
fn ended(code: &str) -> Value {
    json!({"end": code})
}

/// The table.
const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "single",
        kind: Kind::Ask,
        questions: db,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Answer(&["--select", "SQLite"]),
        expect: || answered(json!({"q1": "SQLite"})),
    },
    Scenario {
        name: "multi",
        kind: Kind::Ask,
        questions: checks,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Answer(&["--select", "Unit", "--select", "Lint"]),
        expect: || answered(json!({"q1": "Unit, Lint"})),
    },
    Scenario {
        name: "custom",
        kind: Kind::Ask,
        questions: db,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Answer(&["--custom", "MariaDB"]),
        expect: || answered(json!({"q1": "MariaDB"})),
    },
    Scenario {
        name: "skip",
        kind: Kind::Ask,
        questions: two,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Answer(&[
            "--question",
            "q1",
            "--select",
            "Postgres",
            "--question",
            "q2",
            "--skip",
        ]),
        expect: || answered(json!({"q1": "Postgres", "q2": null})),
    },
    Scenario {
        name: "decline-with-feedback",
        kind: Kind::Plan,
        questions: none,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Answer(&["--custom", FEEDBACK]),
        expect: || {
            json!({"end": "answered", "decision": "declined", "feedback": FEEDBACK, "plan": null,
                   "decidedBy": "person"})
        },
    },
    Scenario {
        name: "approved",
        kind: Kind::Plan,
        questions: none,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Answer(&["--select", "Approve"]),
        expect: || {
            json!({"end": "answered", "decision": "approved", "feedback": null, "plan": PLAN,
                   "decidedBy": "person"})
        },
    },
    Scenario {
        name: "approved-as-edited",
        kind: Kind::Plan,
        questions: none,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Edit("2. Backfill it\n", "2. Backfill it in batches of 10k\n"),
        expect: || {
            json!({"end": "answered", "decision": "approved", "feedback": null, "plan": EDITED,
                   "decidedBy": "person"})
        },
    },
    Scenario {
        name: "quorum-pending-then-met",
        kind: Kind::Ask,
        questions: db,
        context: "two",
        extra: none,
        needs: &[],
        review: Review::Quorum,
        expect: || {
            json!({"end": "answered", "answers": {"q1": "Postgres"}, "voters": ["bob", "carol"],
                   "decidedBy": "person"})
        },
    },
    Scenario {
        name: "expired-without-default",
        kind: Kind::Ask,
        questions: db,
        context: "expiring",
        extra: none,
        needs: &[],
        review: Review::Expire,
        expect: || ended("ASK_EXPIRED"),
    },
    Scenario {
        name: "expired-with-default",
        kind: Kind::Ask,
        questions: db,
        context: "default",
        extra: own_ladder,
        needs: &[Need::OwnLadder],
        review: Review::Expire,
        expect: || {
            json!({"end": "answered", "answers": {"q1": "Postgres"}, "decidedBy": "policy",
                   "voters": []})
        },
    },
    Scenario {
        name: "cancelled",
        kind: Kind::Ask,
        questions: db,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Cancel,
        expect: || ended("ASK_CANCELLED"),
    },
    Scenario {
        name: "aborted",
        kind: Kind::Ask,
        questions: db,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Abort,
        expect: || ended("ASK_ABORTED"),
    },
    Scenario {
        name: "receipt-verified",
        kind: Kind::Ask,
        questions: db,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::Answer(&["--select", "Postgres"]),
        expect: || json!({"end": "answered", "answers": {"q1": "Postgres"}, "receipt": "verified"}),
    },
    Scenario {
        name: "daemon-killed-mid-wait",
        kind: Kind::Ask,
        questions: db,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::KillDaemonThen(&["--select", "Postgres"]),
        expect: || answered(json!({"q1": "Postgres"})),
    },
    Scenario {
        name: "no-daemon",
        kind: Kind::Ask,
        questions: db,
        context: "default",
        extra: none,
        needs: &[],
        review: Review::NoDaemonThen(&["--select", "SQLite"]),
        expect: || answered(json!({"q1": "SQLite"})),
    },
];

/// The config every root of the suite runs with: a context needing two persons, and a
/// directory in which bob's names differ (still one person).
const CONFIG: &str = "[people]\nbob = [\"web:bob-laptop\", \"mail:bob@example.com\"]\n\n\
                      [quorum.two]\napprovals = 2\n";

/// The daemon's flags: the API on a fixed port (so a restart serves the same URL), and a
/// context whose requests expire after a second.
fn daemon_args(port: u16) -> Vec<String> {
    vec![
        "--listen".into(),
        format!("127.0.0.1:{port}"),
        "--context-ladder".into(),
        "expiring:expireAfter=1s".into(),
    ]
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One root with its daemon, for one face.
struct Site {
    env: Env,
    port: u16,
    daemon: Option<Daemon>,
    token: String,
}

impl Site {
    fn new() -> Site {
        let env = Env::new();
        let config = env.dir.path().join("config.toml");
        std::fs::write(&config, CONFIG).unwrap();
        let env = env.with_var("DSHQ_CONFIG", config.to_str().unwrap());
        let token = crate::api::token(&env, "asker", "agent", None);
        let mut site = Site {
            env,
            port: free_port(),
            daemon: None,
            token,
        };
        site.start();
        site
    }

    fn start(&mut self) {
        let args = daemon_args(self.port);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let d = self.env.daemon_with(&args, &[]);
        assert!(
            wait_until(DEADLINE, || d.log_text().contains("listening on")),
            "{}",
            d.log_text()
        );
        self.daemon = Some(d);
    }

    fn stop(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.stop();
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn exists(&self, id: &str) -> bool {
        self.env.json(&["show", id]).code == 0
    }

    fn status(&self, id: &str) -> Value {
        self.env.json(&["show", id]).ok().json()
    }
}

/// A face at work on one site.
enum Running {
    Runner {
        child: Child,
        stdin: ChildStdin,
        lines: Receiver<Value>,
        /// The folder an installed runner runs from, kept while it runs.
        _project: Option<crate::dsh::Project>,
    },
    Command {
        face: &'static str,
        pending: Option<Receiver<Value>>,
    },
}

/// What handing a job over gave: the request's id, or (a face refusing before it asked
/// anything, as over HTTP with no daemon) its decision already.
enum Asked {
    Id(String),
    Decided(Value),
}

impl Running {
    fn start(face: &Face, site: &Site) -> Running {
        let (mut c, project) = match face.driver {
            Driver::Runner(program, args) => {
                let program = match program.strip_prefix('$') {
                    Some(var) => std::env::var(var).unwrap_or_else(|_| {
                        panic!("{var} names no program; run through contrib/test/run")
                    }),
                    None => program.to_string(),
                };
                let mut c = Command::new(&program);
                c.args(args).current_dir(repo());
                (c, None)
            }
            Driver::Installed(script, args) => {
                let project = crate::dsh::Project::new();
                project.add(&repo().join("tests/conformance").join(script));
                let mut argv = vec![script];
                argv.extend_from_slice(args);
                (project.command(&argv), Some(project))
            }
            Driver::Hook | Driver::Wait => {
                return Running::Command {
                    face: face.name,
                    pending: None,
                }
            }
        };
        c.env("DSHQ_BIN", bin())
            // The frameworks' telemetry and tracing: never the network.
            .env("CREWAI_DISABLE_TELEMETRY", "true")
            .env("CREWAI_TRACING_ENABLED", "false")
            .env("OTEL_SDK_DISABLED", "true")
            .env(
                "DSHQ_CONFIG",
                site.env.dir.path().join("config.toml").to_str().unwrap(),
            )
            .env_remove("DSHQ_ROOT")
            .env_remove("DSHQ_URL")
            .env_remove("DSHQ_TOKEN")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = c
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {:?} for {}: {e}", c.get_program(), face.name));
        let stdin = child.stdin.take().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        Running::Runner {
            child,
            stdin,
            lines,
            _project: project,
        }
    }

    /// Hand `job` to the face; the request id once it says it asked.
    fn ask(&mut self, site: &Site, job: &Value) -> Asked {
        match self {
            Running::Runner { stdin, lines, .. } => {
                writeln!(stdin, "{job}").unwrap();
                stdin.flush().unwrap();
                loop {
                    let v = lines
                        .recv_timeout(DEADLINE)
                        .expect("the runner answers the job");
                    if let Some(id) = v["asked"].as_str() {
                        return Asked::Id(id.to_string());
                    }
                    if !v["decision"].is_null() {
                        return Asked::Decided(v["decision"].clone());
                    }
                }
            }
            Running::Command { face, pending } => {
                let (tx, rx) = std::sync::mpsc::channel();
                *pending = Some(rx);
                let id = if *face == "hook" {
                    hook_id(job)
                } else {
                    job["id"].as_str().unwrap().to_string()
                };
                let (face, env, job) = (*face, site.env.command(), job.clone());
                std::thread::spawn(move || {
                    let d = if face == "hook" {
                        hook_decision(env, &job)
                    } else {
                        wait_decision(env, &job)
                    };
                    let _ = tx.send(json!({ "decision": d }));
                });
                Asked::Id(id)
            }
        }
    }

    /// The face's decision, once it has one (`None` when it has none within `limit`).
    fn decision(&mut self, limit: Duration) -> Option<Value> {
        let rx = match self {
            Running::Runner { lines, .. } => lines,
            Running::Command { pending, .. } => pending.as_ref().unwrap(),
        };
        match rx.recv_timeout(limit) {
            Ok(v) if !v["decision"].is_null() => Some(v["decision"].clone()),
            Ok(v) if v.get("asked").is_some() => panic!("asked twice: {v}"),
            Ok(v) => Some(v),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("the face went away"),
        }
    }

    fn end(self) {
        if let Running::Runner {
            mut child, stdin, ..
        } = self
        {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// The request id the hook asks under for a job (`cc-` and 32 hex digits of SHA-256 of
/// the session id, NUL, the tool use id).
fn hook_id(job: &Value) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"conformance");
    h.update([0]);
    h.update(job["id"].as_str().unwrap().as_bytes());
    let d = h.finalize();
    let hex: String = d[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("cc-{hex}")
}

/// Run the hook as Claude Code would, on the tool call a job is, and normalize what it
/// printed: `allow` with `updatedInput` (the answers, the plan), `deny` with the reason.
fn hook_decision(mut env: Command, job: &Value) -> Value {
    let (tool, input) = if job["kind"] == "plan" {
        ("ExitPlanMode", json!({"plan": job["plan"]}))
    } else {
        let qs: Vec<Value> = job["request"]["questions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| {
                json!({"question": q["question"], "header": q["header"], "options": q["options"],
                       "multiSelect": q["multiSelect"].as_bool().unwrap_or(false)})
            })
            .collect();
        ("AskUserQuestion", json!({"questions": qs}))
    };
    let event = json!({
        "session_id": "conformance", "transcript_path": "/t.jsonl", "cwd": "/",
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": input, "tool_use_id": job["id"],
    });
    let mut child = env
        .args(["claude-code", "hook", "--wait", "60s", "--context"])
        .arg(job["context"].as_str().unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.code() != Some(0) {
        return json!({"end": format!("exit {:?}", out.status.code()),
                      "message": String::from_utf8_lossy(&out.stderr)});
    }
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let o = &v["hookSpecificOutput"];
    let reason = o["permissionDecisionReason"].as_str().unwrap_or_default();
    match o["permissionDecision"].as_str() {
        Some("allow") if job["kind"] == "plan" => json!({
            "end": "answered", "decision": "approved", "feedback": null,
            "plan": o["updatedInput"]["plan"],
        }),
        Some("allow") => {
            let mut answers = serde_json::Map::new();
            for q in job["request"]["questions"].as_array().unwrap() {
                let given = &o["updatedInput"]["answers"][q["question"].as_str().unwrap()];
                answers.insert(q["id"].as_str().unwrap().into(), given.clone());
            }
            json!({"end": "answered", "answers": answers, "decision": null, "feedback": null})
        }
        Some("deny") if reason.starts_with("The reviewer declined the plan") => json!({
            "end": "answered", "decision": "declined", "plan": null,
            "feedback": reason.split_once("Their feedback: ").map(|(_, f)| f),
        }),
        // "The user did not answer (CODE: message) ..."
        Some("deny") => json!({"end": reason
            .split_once('(')
            .and_then(|(_, r)| r.split_once(':'))
            .map(|(c, _)| c)
            .unwrap_or(reason)}),
        other => json!({"end": format!("{other:?}"), "message": reason}),
    }
}

/// `dshq ask FILE` then `dshq --json wait ID`, and the outbox file: the decision document
/// as the command line and the directory give it.
fn wait_decision(mut env: Command, job: &Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("request.json");
    std::fs::write(&file, job["request"].to_string()).unwrap();
    let root = job["root"].as_str().unwrap().to_string();
    let mut wait = Command::new(env.get_program());
    for (k, v) in env.get_envs() {
        match v {
            Some(v) => wait.env(k, v),
            None => wait.env_remove(k),
        };
    }
    let asked = env.args(["--json", "ask"]).arg(&file).output().unwrap();
    assert!(asked.status.success(), "{asked:?}");
    let id = job["id"].as_str().unwrap();
    let out = wait
        .args(["--json", "wait", id, "--timeout", "90s"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    if let Some(code) = v["error"]["code"].as_str() {
        return json!({"end": code});
    }
    let file = PathBuf::from(root)
        .join("outbox")
        .join(format!("{id}.json"));
    // `dshq wait` reads the store; the daemon writes the outbox file on its next turn.
    wait_until(DEADLINE, || file.exists());
    let receipt = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .map(|o| o["receipt"].clone());
    normalize_document(&v, job, receipt.unwrap_or(Value::Null))
}

/// The decision of an answered outcome document read directly (the `wait` face).
fn normalize_document(o: &Value, job: &Value, receipt: Value) -> Value {
    let mut answers = serde_json::Map::new();
    for item in o["answer"]["answers"].as_array().unwrap() {
        let selected: Vec<&str> = item["selected"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let custom = item["custom"].as_str();
        let value = match (selected.is_empty(), custom) {
            (true, Some(c)) => json!(c),
            (true, None) => Value::Null,
            (false, c) => json!(selected
                .iter()
                .copied()
                .chain(c)
                .collect::<Vec<_>>()
                .join(", ")),
        };
        answers.insert(item["id"].as_str().unwrap().into(), value);
    }
    let approvers: Vec<&Value> = o["approvers"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let voters: Vec<Value> = o["votes"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter(|v| approvers.contains(&&v["voter"]))
                .map(|v| v["person"].clone())
                .collect()
        })
        .unwrap_or_default();
    let plan = (job["kind"] == "plan" && o["decision"] == "approved").then(|| {
        o["edited"]["plan"]["approved"]
            .as_str()
            .unwrap_or(job["plan"].as_str().unwrap())
            .to_string()
    });
    json!({
        "end": "answered", "answers": answers, "decision": o["decision"],
        "feedback": o["feedback"], "plan": plan, "voters": voters,
        "decidedBy": o["decidedBy"].as_str().unwrap_or("person"), "receipt": receipt,
    })
}

/// The job of `scenario` for `face` on `site`.
fn job(face: &Face, scenario: &Scenario, site: &Site) -> Value {
    let id = format!("{}-{}", face.name, scenario.name);
    let request = match scenario.kind {
        Kind::Ask => {
            let mut r = json!({"id": id, "context": scenario.context,
                               "questions": (scenario.questions)()});
            if let (Some(r), Some(extra)) = (r.as_object_mut(), (scenario.extra)().as_object()) {
                r.extend(extra.clone());
            }
            r
        }
        // The plan review as a face without a gate of its own (MCP, the command line)
        // asks it: the plan as `detail`, Approve/Decline, the plan-review intent.
        Kind::Plan => json!({"id": id, "context": scenario.context, "questions": [{
            "id": "plan", "question": "Approve this plan?", "detail": PLAN,
            "options": [{"label": "Approve"}, {"label": "Decline"}],
            "intent": {"kind": "plan-review", "approve": "Approve"}}]}),
    };
    json!({
        "scenario": scenario.name, "kind": if scenario.kind == Kind::Plan { "plan" } else { "ask" },
        "id": id, "request": request, "plan": PLAN, "context": scenario.context,
        "root": site.env.root(), "url": if site.daemon.is_some() || !face.http { site.url() } else {
            // No daemon: a port nothing listens on.
            format!("http://127.0.0.1:{}", free_port())
        },
        "token": site.token,
    })
}

/// Play the reviewer's part of `scenario` on request `id`.
fn review(site: &mut Site, scenario: &Scenario, id: &str, running: &mut Running) {
    let answer = |site: &Site, flags: &[&str]| {
        let mut args = vec!["answer", id];
        args.extend_from_slice(flags);
        site.env.run(&args).ok();
    };
    match scenario.review {
        Review::Answer(flags) | Review::NoDaemonThen(flags) => answer(site, flags),
        Review::Edit(from, to) => {
            let shown = site.status(id);
            let detail = shown["questions"][0]["detail"].as_str().unwrap();
            assert!(detail.contains(from), "{detail}");
            let file = site.env.dir.path().join(format!("{id}.edited.md"));
            std::fs::write(&file, detail.replacen(from, to, 1)).unwrap();
            answer(site, &["--edit", file.to_str().unwrap()]);
        }
        Review::Quorum => {
            answer(site, &["--name", "bob", "--select", "Postgres"]);
            let shown = site.status(id);
            assert_eq!(shown["status"], "pending", "{shown}");
            assert_eq!(shown["quorum"]["agreeing"], 1, "{shown}");
            // One vote of two: the face is still waiting.
            assert_eq!(running.decision(Duration::ZERO), None, "decided at 1/2");
            answer(site, &["--name", "carol", "--select", "Postgres"]);
        }
        Review::Cancel => {
            site.env.run(&["cancel", id, "--reason", "not needed"]).ok();
        }
        Review::Abort => {
            site.env
                .run(&["abort", id, "--reason", "changed my mind"])
                .ok();
        }
        Review::Expire => {}
        Review::KillDaemonThen(flags) => {
            site.daemon.take().unwrap().kill9();
            site.start();
            answer(site, flags);
        }
    }
}

/// Run every scenario `face` can ask, and compare each decision.
fn run_face(name: &str) {
    crate::clients::python_ready();
    if name == "crewai" {
        crate::clients::crewai_ready();
    }
    let face = FACES.iter().find(|f| f.name == name).unwrap();
    let mut site = Site::new();
    let mut running = Running::start(face, &site);
    let mut failures = Vec::new();
    let mut timings = Vec::new();
    let started = Instant::now();
    for scenario in SCENARIOS {
        let asks = (scenario.kind == Kind::Ask).then_some(&Need::Questions);
        if scenario
            .needs
            .iter()
            .chain(asks)
            .any(|n| !face.can.contains(n))
        {
            continue;
        }
        let no_daemon = matches!(scenario.review, Review::NoDaemonThen(_));
        if no_daemon {
            site.stop();
        }
        let job = job(face, scenario, &site);
        let asked_at = Instant::now();
        let asked = running.ask(&site, &job);
        let expect = match (no_daemon, face.without_daemon) {
            (true, Some(code)) => ended(code),
            _ => in_vocabulary(face, (scenario.expect)()),
        };
        let refused_at_once = no_daemon && face.without_daemon.is_some();
        let id = match &asked {
            Asked::Id(id) => id.clone(),
            Asked::Decided(d) if !refused_at_once => {
                failures.push(format!("{name}/{}: refused at the ask: {d}", scenario.name));
                continue;
            }
            Asked::Decided(_) => job["id"].as_str().unwrap().to_string(),
        };
        if !refused_at_once {
            assert!(
                wait_until(DEADLINE, || site.exists(&id)),
                "{name}/{}: request {id} never reached the store",
                scenario.name
            );
            review(&mut site, scenario, &id, &mut running);
        }
        let got = match asked {
            Asked::Decided(d) => d,
            Asked::Id(_) => running
                .decision(Duration::from_secs(90))
                .unwrap_or_else(|| panic!("{name}/{}: no decision", scenario.name)),
        };
        if refused_at_once {
            let took = asked_at.elapsed();
            assert!(
                took < Duration::from_secs(5),
                "{name}: without a daemon the error took {took:?}"
            );
        }
        timings.push(format!("{} {:?}", scenario.name, asked_at.elapsed()));
        if let Some(why) = compare(face, scenario, &expect, &got, &site, &id, &job) {
            failures.push(format!("{name}/{}: {why}", scenario.name));
        }
        if no_daemon {
            site.start();
        }
    }
    running.end();
    site.stop();
    println!(
        "{name}: {} scenarios in {:?}: {}",
        timings.len(),
        started.elapsed(),
        timings.join(", ")
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

/// `expect` with its ending named as `face`'s vocabulary names it.
fn in_vocabulary(face: &Face, mut expect: Value) -> Value {
    let named = face
        .ends_as
        .iter()
        .find(|(code, _)| expect["end"] == *code)
        .map(|(_, theirs)| *theirs);
    if let Some(theirs) = named {
        expect["end"] = json!(theirs);
    }
    expect
}

/// Why `got` is not `expect` (the members `face` carries), if it is not.
fn compare(
    face: &Face,
    _scenario: &Scenario,
    expect: &Value,
    got: &Value,
    site: &Site,
    id: &str,
    job: &Value,
) -> Option<String> {
    let member = |k: &str| -> Member {
        match k {
            "end" => End,
            "answers" => Answers,
            "decision" => Decision,
            "feedback" => Feedback,
            "plan" => Plan,
            "voters" => Voters,
            "decidedBy" => DecidedBy,
            "receipt" => Receipt,
            other => panic!("no member {other}"),
        }
    };
    for (k, want) in expect.as_object().unwrap() {
        if !face.carries.contains(&member(k)) {
            continue;
        }
        let have = &got[k];
        if k == "receipt" {
            if let Some(why) = verify_receipt(site, id, have, job) {
                return Some(why);
            }
            continue;
        }
        if have != want {
            let mut whole = got.clone();
            if let Some(o) = whole.as_object_mut() {
                o.remove("receipt");
            }
            return Some(format!("{k}: expected {want}, got {have} (whole: {whole})"));
        }
    }
    None
}

/// The receipt a face handed over verifies offline under the root's key, for the
/// request's id and the digest of what was asked.
fn verify_receipt(site: &Site, id: &str, receipt: &Value, _job: &Value) -> Option<String> {
    if !receipt.is_object() {
        return Some(format!("no receipt: {receipt}"));
    }
    let file = site.env.dir.path().join(format!("{id}.receipt.json"));
    let mut text = serde_json::to_string_pretty(receipt).unwrap();
    text.push('\n');
    std::fs::write(&file, text).unwrap();
    let key = site.env.run(&["receipt", "key"]).ok().stdout;
    let digest = receipt["requestDigest"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let shown = site.status(id);
    if shown["outcome"]["requestDigest"] != digest.as_str() {
        return Some(format!(
            "the receipt's digest {digest} is not the request's"
        ));
    }
    let r = site.env.run(&[
        "receipt",
        "verify",
        file.to_str().unwrap(),
        "--key",
        key.trim(),
        "--id",
        id,
        "--digest",
        &digest,
    ]);
    (r.code != 0).then(|| format!("the receipt does not verify: {}", r.stderr))
}

#[test]
fn python_file_transport() {
    run_face("python-file");
}

#[test]
fn python_http_transport() {
    run_face("python-http");
}

#[test]
fn typescript_file_transport() {
    run_face("ts-file");
}

#[test]
fn typescript_http_transport() {
    run_face("ts-http");
}

#[test]
fn langgraph_adapter() {
    run_face("langgraph");
}

#[test]
fn mcp_asker() {
    run_face("mcp");
}

#[test]
fn claude_code_hook() {
    run_face("hook");
}

#[test]
fn dshq_ask_and_wait_with_the_outbox() {
    run_face("wait");
}

#[test]
fn pydantic_ai_adapter() {
    run_face("pydantic-ai");
}

#[test]
fn openai_agents_adapter() {
    run_face("openai-agents");
}

#[test]
fn crewai_adapter() {
    run_face("crewai");
}

#[test]
fn claude_agent_sdk_adapter() {
    run_face("claude-agent-sdk");
}

#[test]
fn dsh_provider_file_transport() {
    run_face("dsh-file");
}

#[test]
fn dsh_provider_http_transport() {
    run_face("dsh-http");
}

#[test]
fn typescript_ai_sdk_adapter() {
    crate::clients::adapters_ready();
    run_face("ts-ai-sdk");
}

#[test]
fn typescript_openai_agents_adapter() {
    crate::clients::adapters_ready();
    run_face("ts-openai-agents");
}

#[test]
fn typescript_claude_agent_sdk_adapter() {
    crate::clients::adapters_ready();
    run_face("ts-claude-agent-sdk");
}
