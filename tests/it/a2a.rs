//! The A2A face through the official SDK clients: the Python `a2a-sdk` and the JavaScript
//! `@a2a-js/sdk` (pinned in contrib/test), driving `/a2a` on `dshq daemon --listen` as an
//! application would (the card read from its well-known path, the token applied as the
//! card's security scheme says). Each client asks, and gets the decision by polling
//! (`GetTask`), by streaming (`SendStreamingMessage`) and by a push notification to a
//! webhook (`tests/a2a/receiver.py`, which checks the credentials in constant time and
//! parses the body with the SDK's own type); the person is the real CLI. One daemon is
//! SIGKILLed between the ask and the answer: the restarted one serves the same task to
//! the end (the client's stream subscribes again; the webhook is told once), and nothing
//! is lost or asked twice.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

use crate::api::{call, host, listening, token};
use crate::helpers::{unique, wait_until, Env, DEADLINE};
use crate::mcp::steps;

/// Which official SDK drives the client.
#[derive(Clone, Copy)]
enum Sdk {
    Python,
    Js,
}

/// Where the pinned Node packages are (`DSHQ_TEST_NODE_MODULES`, set by contrib/test/run);
/// fails saying how to install them.
fn node_modules() -> PathBuf {
    let dir = std::env::var_os("DSHQ_TEST_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_default();
    for p in ["@a2a-js/sdk/package.json", ".bin/node"] {
        assert!(
            dir.join(p).exists(),
            "{p} is missing from DSHQ_TEST_NODE_MODULES ({}): run the suite with contrib/test/run",
            dir.display()
        );
    }
    dir
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/a2a")
}

impl Sdk {
    fn command(self, base: &str, token: &str, args: &[&str]) -> Command {
        let mut c = match self {
            Sdk::Python => {
                let mut c = Command::new("python3");
                c.arg(dir().join("client.py"));
                c
            }
            Sdk::Js => {
                let nm = node_modules();
                let mut c = Command::new(nm.join(".bin/node"));
                c.arg(dir().join("client.cjs")).env("NODE_PATH", &nm);
                c
            }
        };
        c.args(args)
            .env("A2A_URL", base)
            .env("A2A_TOKEN", token)
            .env("A2A_DEADLINE", DEADLINE.as_secs().to_string());
        c
    }

    fn missing(self) -> &'static str {
        match self {
            Sdk::Python => "the A2A tests need the official Python SDK: pip install a2a-sdk (contrib/test/requirements.txt)",
            Sdk::Js => "the A2A tests need the official JavaScript SDK: npm ci in contrib/test (@a2a-js/sdk)",
        }
    }

    /// Run one step to its end: its steps by name.
    fn run(self, base: &str, token: &str, args: &[&str]) -> Value {
        let out = self
            .command(base, token, args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run the A2A client: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert_ne!(out.status.code(), Some(3), "{}\n{stdout}", self.missing());
        assert!(
            out.status.success(),
            "the A2A client {args:?} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        steps(&stdout)
    }

    /// Start one step in the background.
    fn spawn(self, env: &Env, base: &str, token: &str, args: &[&str]) -> Bg {
        Bg::start(self.command(base, token, args), env)
    }
}

/// A process in the background whose stdout goes to a file; killed on drop.
struct Bg {
    child: Child,
    out: PathBuf,
}

impl Bg {
    fn start(mut c: Command, env: &Env) -> Bg {
        let out = env.dir.path().join(format!("bg-{}.out", unique()));
        let err = env.dir.path().join(format!("bg-{}.err", unique()));
        let child = c
            .stdout(fs::File::create(&out).unwrap())
            .stderr(fs::File::create(err).unwrap())
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn a client");
        Bg { child, out }
    }

    /// Every JSON line printed so far.
    fn lines(&self) -> Vec<Value> {
        fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.starts_with('{'))
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The lines of `step`.
    fn of(&self, step: &str) -> Vec<Value> {
        self.lines()
            .into_iter()
            .filter(|l| l["step"] == step)
            .collect()
    }

    /// Wait for a line of `step`; the first one.
    fn wait_for(&self, step: &str) -> Value {
        assert!(
            wait_until(DEADLINE * 2, || !self.of(step).is_empty()),
            "no {step:?} line: {:?}",
            self.lines()
        );
        self.of(step).remove(0)
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The webhook (tests/a2a/receiver.py) with its credentials.
struct Receiver {
    bg: Bg,
    url: String,
    token: String,
    secret: String,
}

impl Receiver {
    fn start(env: &Env) -> Receiver {
        let (token, secret) = (format!("tok-{}", unique()), format!("sec-{}", unique()));
        let mut c = Command::new("python3");
        c.arg(dir().join("receiver.py"))
            .env("RECEIVER_TOKEN", &token)
            .env("RECEIVER_SECRET", &secret);
        let bg = Bg::start(c, env);
        let url = bg.wait_for("listening")["url"]
            .as_str()
            .unwrap()
            .to_string();
        Receiver {
            bg,
            url,
            token,
            secret,
        }
    }

    fn pushes_of(&self, task: &str) -> Vec<Value> {
        self.bg
            .of("push")
            .into_iter()
            .filter(|p| p["body"]["task"]["id"] == task)
            .collect()
    }

    /// The verified notifications of `task` once there is one.
    fn wait_push(&self, task: &str) -> Vec<Value> {
        assert!(
            wait_until(DEADLINE * 2, || !self.pushes_of(task).is_empty()),
            "no push notification for {task}: {:?}",
            self.bg.lines()
        );
        self.pushes_of(task)
    }
}

/// The push arguments of the `ask` step.
fn push_args(r: &Receiver) -> Vec<String> {
    vec![r.url.clone(), r.token.clone(), r.secret.clone()]
}

fn ask(sdk: Sdk, base: &str, tok: &str, id: &str, push: Option<&Receiver>) -> Value {
    let mut args = vec!["ask".to_string(), id.to_string()];
    args.extend(push.map(push_args).unwrap_or_default());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sdk.run(base, tok, &args)["asked"]["event"]["task"].clone()
}

/// The decision artifact of a task (the wire's JSON).
fn decision(task: &Value) -> Value {
    assert_eq!(task["artifacts"][0]["artifactId"], "decision", "{task}");
    task["artifacts"][0]["parts"][0]["data"].clone()
}

/// `v` with every number as a float: a protobuf `Struct` (the Python SDK's data part)
/// keeps numbers as doubles, so `4` comes back as `4.0`; the document is otherwise the
/// same, member for member.
fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => json!(n.as_f64()),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        other => other.clone(),
    }
}

/// dshq's code in an SDK's error: the Python SDK hands over the ErrorInfo's metadata,
/// the JavaScript one the `data` array.
fn code_of(error: &Value) -> String {
    let d = &error["data"];
    d["code"]
        .as_str()
        .or_else(|| d[0]["metadata"]["code"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn pending(env: &Env, id: &str) -> bool {
    env.json(&["show", id])
        .json()
        .get("status")
        .is_some_and(|s| s == "pending")
}

/// The agent card, read as any client reads it.
fn card_says_what_it_does(base: &str, push: bool) {
    let card = call(
        "GET",
        &format!("{base}/.well-known/agent-card.json"),
        None,
        None,
    )
    .body;
    assert_eq!(card["skills"][0]["id"], "ask-a-human", "{card}");
    assert_eq!(card["capabilities"]["streaming"], true);
    assert_eq!(card["capabilities"]["pushNotifications"], push);
    assert_eq!(card["supportedInterfaces"][0]["url"], format!("{base}/a2a"));
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    let scheme = &card["securitySchemes"]["dshqToken"]["httpAuthSecurityScheme"];
    assert_eq!(scheme["scheme"], "Bearer", "{card}");
}

/// Ask, and get the decision by polling, by streaming and by a push notification; bad
/// input, a cancel, a text question.
fn every_way(sdk: Sdk) {
    let env = Env::new();
    let recv = Receiver::start(&env);
    let h = host(&env, &["--a2a-push-allow", "http://127.0.0.1:*"]);
    let base = h.base.clone();
    card_says_what_it_does(&base, true);
    let tok = token(&env, "asker", "agent-a", None);

    // Polling, with a webhook too.
    let task = ask(sdk, &base, &tok, "p1", Some(&recv));
    assert_eq!(task["id"], "p1");
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{task}");
    assert!(task.get("artifacts").is_none(), "{task}");
    let poll = sdk.spawn(&env, &base, &tok, &["poll", "p1"]);
    // Streaming.
    let stream = sdk.spawn(&env, &base, &tok, &["stream", "s1"]);
    let first = stream.wait_for("event");
    assert_eq!(first["event"]["task"]["id"], "s1", "{first}");
    assert_eq!(
        first["event"]["task"]["status"]["state"],
        "TASK_STATE_WORKING"
    );
    assert!(pending(&env, "p1") && pending(&env, "s1"));

    // The person decides.
    env.run(&["answer", "p1", "--select", "Postgres"]).ok();
    env.run(&["answer", "s1", "--select", "SQLite"]).ok();
    let outbox_p1 = env.wait_outcome_file("p1");
    let outbox_s1 = env.wait_outcome_file("s1");
    assert!(outbox_p1["receipt"].is_object(), "{outbox_p1}");

    // Polled: the same document the outbox file holds, its receipt included.
    let polled = poll.wait_for("polled");
    assert_eq!(
        polled["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{polled}"
    );
    assert_eq!(norm(&decision(&polled["task"])), norm(&outbox_p1));

    // Streamed: the artifact, then the final status, then the stream closes.
    stream.wait_for("closed");
    let events: Vec<Value> = stream
        .of("event")
        .into_iter()
        .map(|e| e["event"].clone())
        .collect();
    let n = events.len();
    assert!(n >= 3, "{events:?}");
    let art = &events[n - 2]["artifactUpdate"];
    assert_eq!(art["taskId"], "s1", "{events:?}");
    assert_eq!(norm(&art["artifact"]["parts"][0]["data"]), norm(&outbox_s1));
    assert_eq!(
        events[n - 1]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{events:?}"
    );

    // Pushed: once, verified, the whole task with the decision.
    let pushes = recv.wait_push("p1");
    assert_eq!(pushes.len(), 1, "{pushes:?}");
    assert_eq!(pushes[0]["verified"], true, "{pushes:?}");
    assert_eq!(pushes[0]["contentType"], "application/a2a+json");
    let pushed = &pushes[0]["body"]["task"];
    assert_eq!(pushed["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(norm(&decision(pushed)), norm(&outbox_p1));
    // A stream was not asked to push.
    assert!(recv.pushes_of("s1").is_empty());

    // Bad input: the A2A error, dshq's code in its data; an unknown task likewise.
    let bad = sdk.run(&base, &tok, &["bad"]);
    assert_eq!(code_of(&bad["error"]), "EMPTY_QUESTIONS", "{bad}");
    assert_eq!(code_of(&bad["not-found"]), "NOT_FOUND", "{bad}");
    assert!(
        bad["not-found"]["kind"]
            .as_str()
            .unwrap()
            .contains("TaskNotFound"),
        "{bad}"
    );

    // Cancel: the asker's abort; a second cancel is refused (the task is final).
    let c = sdk.run(&base, &tok, &["cancel", "c1"]);
    assert_eq!(
        c["cancelled"]["task"]["status"]["state"], "TASK_STATE_CANCELED",
        "{c}"
    );
    assert_eq!(
        decision(&c["cancelled"]["task"])["error"]["code"],
        "ASK_ABORTED"
    );
    assert_eq!(env.wait_outcome("c1")["error"]["code"], "ASK_ABORTED");
    assert_eq!(code_of(&c["not-cancelable"]), "REQUEST_FINAL", "{c}");

    // Text alone: one free-text question; the same message again is the same task.
    let t = sdk.run(&base, &tok, &["text", "t-1"]);
    let again = sdk.run(&base, &tok, &["text", "t-1"]);
    assert_eq!(t["asked"]["event"]["task"]["id"], "t-1", "{t}");
    assert_eq!(again["asked"]["event"]["task"]["id"], "t-1", "{again}");
    let shown = env.json(&["show", "t-1"]).ok().json();
    assert_eq!(
        shown["questions"][0]["question"], "Ship it tonight?",
        "{shown}"
    );

    // The same tasks over the HTTP API: one request each, asked by the same token.
    let listed = env.json(&["list", "--all"]).ok().json();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["id"].as_str())
        .collect();
    for id in ["p1", "s1", "c1", "t-1"] {
        assert_eq!(ids.iter().filter(|i| **i == id).count(), 1, "{ids:?}");
    }
    drop(h);
}

/// SIGKILL between the ask and the answer: the restarted daemon serves the same task to
/// the end.
fn killed_between(sdk: Sdk) {
    let env = Env::new();
    let recv = Receiver::start(&env);
    let port = crate::browser::free_port();
    let listen = format!("127.0.0.1:{port}");
    let args = [
        "--listen",
        listen.as_str(),
        "--a2a-push-allow",
        "http://127.0.0.1:*",
    ];
    let first = listening(env.daemon_with(&args, &[]));
    let base = first.base.clone();
    let tok = token(&env, "asker", "agent-k", None);

    let task = ask(sdk, &base, &tok, "k1", Some(&recv));
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING");
    let sub = sdk.spawn(&env, &base, &tok, &["subscribe", "k1"]);
    sub.wait_for("event");

    first.daemon.kill9();
    sub.wait_for("dropped");
    let second = listening(env.daemon_with(&args, &[]));
    assert_eq!(second.base, base);
    // The client's stream subscribes again, to the restarted daemon.
    assert!(
        wait_until(DEADLINE, || sub
            .of("event")
            .iter()
            .any(|e| e["drops"].as_u64().is_some_and(|d| d >= 1))),
        "the client did not subscribe again: {:?}",
        sub.lines()
    );

    env.run(&["answer", "k1", "--select", "Postgres"]).ok();
    let outbox = env.wait_outcome_file("k1");
    let fin = sub.wait_for("final");
    assert!(fin["drops"].as_u64().unwrap() >= 1, "{fin}");
    let events = sub.of("event");
    let art = events
        .iter()
        .find(|e| e["event"].get("artifactUpdate").is_some())
        .expect("the artifact was streamed");
    assert_eq!(
        norm(&art["event"]["artifactUpdate"]["artifact"]["parts"][0]["data"]),
        norm(&outbox)
    );

    // The webhook registered with the first daemon is told by the second, once.
    let pushes = recv.wait_push("k1");
    assert_eq!(pushes.len(), 1, "{pushes:?}");
    assert_eq!(pushes[0]["verified"], true);
    assert_eq!(norm(&decision(&pushes[0]["body"]["task"])), norm(&outbox));

    // Sending the same message again is the same task, decided: nothing asked twice.
    let again = ask(sdk, &base, &tok, "k1", None);
    assert_eq!(again["id"], "k1");
    assert_eq!(again["status"]["state"], "TASK_STATE_COMPLETED");
    let kinds: Vec<String> = crate::mcp::events(&env, "k1")
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "accepted").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "answered").count(),
        1,
        "{kinds:?}"
    );
    drop(second);
}

#[test]
fn python_sdk_gets_the_decision_by_polling_streaming_and_push() {
    every_way(Sdk::Python);
}

#[test]
fn js_sdk_gets_the_decision_by_polling_streaming_and_push() {
    every_way(Sdk::Js);
}

#[test]
fn python_sdk_task_survives_a_sigkilled_daemon() {
    killed_between(Sdk::Python);
}

#[test]
fn js_sdk_task_survives_a_sigkilled_daemon() {
    killed_between(Sdk::Js);
}

/// Without a token: 401 before anything is read; a version other than 1.0: -32009.
#[test]
fn the_endpoint_refuses_no_token_and_other_versions() {
    let env = Env::new();
    let h = host(&env, &[]);
    card_says_what_it_does(&h.base, false);
    let url = format!("{}/a2a", h.base);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}});
    let r = call("POST", &url, None, Some(body.to_string().as_bytes()));
    assert_eq!(r.status, 401, "{:?}", r.body);
    let tok = token(&env, "asker", "a", None);
    // No A2A-Version header: 0.3, not served.
    let r = call("POST", &url, Some(&tok), Some(body.to_string().as_bytes()));
    assert_eq!(r.body["error"]["code"], -32009, "{:?}", r.body);
    assert_eq!(r.body["error"]["data"][0]["reason"], "BAD_REQUEST");
}
