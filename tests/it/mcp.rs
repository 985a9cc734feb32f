//! The MCP server through a real third-party client: the official Python SDK (`mcp` from
//! PyPI), driving `dshq mcp` over stdio and `/mcp` on `dshq daemon --listen` over
//! Streamable HTTP. The client scripts are `tests/mcp/client.py SCENARIO`; the answering
//! human is the real CLI. This test checks what the client saw, then the outcome files,
//! `dshq events` and `dshq history`.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::api::{host, token};
use crate::helpers::{bin, wait_until, Env, DEADLINE};

/// The SDK version `.ci/run` installs.
const SDK: &str = "mcp==2.3.0";

/// How a scenario reaches the server.
#[derive(Clone)]
pub enum Transport {
    /// `dshq mcp` with these extra arguments, spawned by the client.
    Stdio(Vec<String>),
    /// `/mcp` at this base URL with this bearer token.
    Http { base: String, token: String },
    /// The same transport, with the SDK's client pinned at revision 2026-07-28
    /// (stateless: no `initialize`, each request carrying its revision in `_meta`).
    Stateless(Box<Transport>),
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py")
}

/// Fail (never skip) when the SDK is missing, saying what to install.
fn require_sdk() {
    let ok = Command::new("python3")
        .args([
            "-c",
            "import mcp.client.session, mcp.client.stdio, mcp.client.streamable_http",
        ])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "the MCP tests need Python 3 with the official MCP SDK: pip install {SDK}"
    );
}

/// Point a client script (`client.py`, `client_ts.cjs`) at the root, the binary and the
/// transport, with `vars` on top.
pub fn script_env(c: &mut Command, env: &Env, t: &Transport, vars: &[(&str, &str)]) {
    c.env("DSHQ_BIN", bin())
        .env("DSHQ_ROOT", env.root())
        .env("RUST_LOG", "warn")
        .env_remove("DSHQ_AGENT_INSTANCE");
    match t {
        Transport::Stdio(args) => {
            c.env("MCP_TRANSPORT", "stdio")
                .env("MCP_ARGS", serde_json::to_string(args).unwrap());
        }
        Transport::Http { base, token } => {
            c.env("MCP_TRANSPORT", "http")
                .env("MCP_URL", format!("{base}/mcp"))
                .env("MCP_TOKEN", token);
        }
        Transport::Stateless(inner) => {
            script_env(c, env, inner, vars);
            c.env("MCP_MODE", "2026-07-28");
            return;
        }
    }
    for (k, v) in vars {
        c.env(k, v);
    }
}

/// Run a client script: its stdout and stderr. Exit 3 is the script saying its client
/// did not load (fails with `missing`, what to install); any other failure shows both.
pub fn run_script(mut c: Command, what: &str, missing: &str) -> (String, String) {
    let out = c
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if out.status.code() == Some(3) {
        panic!("{missing}\n{stdout}");
    }
    assert!(
        out.status.success(),
        "{what} failed:\nstdout: {stdout}\nstderr: {stderr}"
    );
    (stdout, stderr)
}

/// A client script's steps (one JSON line each, `{"step": NAME, ...}`) by name.
pub fn steps(stdout: &str) -> Value {
    let mut steps = serde_json::Map::new();
    for line in stdout.lines().filter(|l| l.starts_with('{')) {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let name = v["step"].as_str().unwrap_or_default().to_string();
        steps.insert(name, v);
    }
    Value::Object(steps)
}

/// Run `client.py SCENARIO` and return its steps by name.
pub fn client(env: &Env, t: &Transport, scenario: &str, vars: &[(&str, &str)]) -> Value {
    require_sdk();
    let mut c = Command::new("python3");
    c.arg(script()).arg(scenario);
    script_env(&mut c, env, t, vars);
    let missing = format!("the MCP SDK did not import: pip install {SDK}");
    let (stdout, _) = run_script(c, &format!("client.py {scenario}"), &missing);
    steps(&stdout)
}

pub fn stdio() -> Transport {
    Transport::Stdio(vec![])
}

/// The event kinds and actors of request `id`, in order.
pub fn events(env: &Env, id: &str) -> Vec<(String, String)> {
    let v = env.json(&["events", id]).ok().json();
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or_default().to_string(),
                e["actor"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

pub fn text(step: &Value) -> &str {
    step["text"].as_str().unwrap_or_default()
}

// --- the flows, each run over both transports ----------------------------------------

pub fn tools_and_schemas(env: &Env, t: &Transport) {
    let s = client(env, t, "tools", &[]);
    let tools = &s["tools"]["tools"];
    for name in [
        "ask_user_question",
        "get_answer",
        "abort_question",
        "review_questions",
        "review_next",
    ] {
        assert!(tools[name]["input"]["type"] == "object", "{name}: {tools}");
        assert!(tools[name]["output"]["type"] == "object", "{name}: {tools}");
    }
    // The ask's input schema is shaped for a model: the question fields in one spelling,
    // bounds stated, nothing a model should not fill.
    let ask = &tools["ask_user_question"]["input"];
    assert_eq!(ask["required"], json!(["questions"]));
    assert_eq!(ask["properties"]["questions"]["minItems"], 1, "{ask}");
    let question = &ask["$defs"]["QuestionArg"]["properties"];
    for field in [
        "id",
        "question",
        "detail",
        "header",
        "options",
        "multiSelect",
        "intent",
    ] {
        assert!(
            question.get(field).is_some(),
            "Question.{field}: {question}"
        );
    }
    assert!(question.get("multi_select").is_none(), "{question}");
    assert_eq!(question["header"]["maxLength"], 40, "{question}");
    assert_eq!(
        ask["$defs"]["OptionArg"]["properties"]["label"]["minLength"],
        1
    );
    for field in ["context", "timeout", "meta", "waitSeconds"] {
        assert!(ask["properties"].get(field).is_some(), "{field}: {ask}");
    }
    for field in ["agent", "deadline", "requireProvider"] {
        assert!(ask["properties"].get(field).is_none(), "{field}: {ask}");
    }
    let all = tools.to_string();
    assert!(!all.contains("\"null\""), "no nullable types: {all}");
    assert!(!all.contains("uint"), "no non-standard formats: {all}");
    assert_eq!(ask["additionalProperties"], json!(false));
    // Every output schema admits the tool's result and the error result.
    let out = &tools["ask_user_question"]["output"];
    assert!(out["anyOf"][0]["required"]
        .as_array()
        .unwrap()
        .contains(&json!("status")));
    assert_eq!(out["anyOf"][1]["title"], "ToolError", "{out}");
}

pub fn ask_and_answer(env: &Env, t: &Transport, rid: &str) {
    let s = client(env, t, "ask-answer", &[("MCP_RID", rid)]);
    let ask = &s["ask"];
    assert_eq!(ask["isError"], false, "{ask}");
    assert_eq!(ask["structured"]["status"], "answered", "{ask}");
    assert_eq!(
        ask["structured"]["answers"],
        json!([{"id": "color", "selected": ["Blue"]}])
    );
    assert_eq!(ask["structured"]["answeredBy"], "cli-human");
    assert!(text(ask).contains("selected \"Blue\""), "{ask}");
    assert_eq!(s["get"]["structured"], ask["structured"]);
    let outcome = env.outcome(rid).expect("the outcome file");
    assert_eq!(outcome["status"], "answered");
    assert_eq!(outcome["answer"]["answers"][0]["selected"], json!(["Blue"]));
    assert_eq!(
        outcome["requestDigest"], ask["structured"]["requestDigest"],
        "the digest the tool returned is the outcome's"
    );
}

pub fn pending_then_get(env: &Env, t: &Transport, rid: &str) {
    let s = client(env, t, "pending", &[("MCP_RID", rid)]);
    let ask = &s["ask"];
    assert_eq!(ask["isError"], false, "{ask}");
    assert_eq!(ask["structured"]["status"], "pending", "{ask}");
    assert_eq!(ask["structured"]["id"], rid);
    assert!(text(ask).contains("pending"), "{ask}");
    assert!(text(ask).contains("get_answer"), "{ask}");
    let get = &s["get"];
    assert_eq!(get["structured"]["status"], "answered", "{get}");
    assert_eq!(
        get["structured"]["answers"][0]["custom"], "green, actually",
        "{get}"
    );
    assert_eq!(env.outcome(rid).unwrap()["status"], "answered");
}

pub fn abort(env: &Env, t: &Transport, rid: &str, actor: &str) {
    let s = client(env, t, "abort", &[("MCP_RID", rid)]);
    assert_eq!(
        s["abort"]["structured"],
        json!({"id": rid, "status": "aborted"})
    );
    let get = &s["get"];
    assert_eq!(get["isError"], true, "{get}");
    assert_eq!(get["structured"]["error"]["code"], "ASK_ABORTED", "{get}");
    let outcome = env.outcome(rid).unwrap();
    assert_eq!(outcome["error"]["code"], "ASK_ABORTED");
    assert!(
        events(env, rid).contains(&("aborted".into(), actor.into())),
        "{:?}",
        events(env, rid)
    );
}

/// `agent enter` (with an owner): the instance.
pub fn enter(env: &Env, id: &str, owner: Option<&str>) -> String {
    let mut args = vec!["agent", "enter", "--id", id];
    if let Some(o) = owner {
        args.extend(["--owner", o]);
    }
    env.json(&args).ok().json()["instance"]
        .as_str()
        .unwrap()
        .to_string()
}

/// A request that does not declare the tasks extension gets the usual result, even from
/// a client that declared it at `initialize`.
pub fn assert_no_task(s: &Value) {
    let plain = &s["plain"]["result"];
    assert!(plain.get("taskId").is_none(), "a task without asking: {s}");
    assert_eq!(plain["structuredContent"]["status"], "pending", "{s}");
}

fn assert_delegated(s: &Value) {
    let ask = &s["ask"];
    assert_eq!(ask["isError"], true, "{ask}");
    assert_eq!(
        ask["structured"]["error"]["code"], "DELEGATED_CALLER",
        "{ask}"
    );
    assert_eq!(ask["structured"]["status"], "error", "{ask}");
    assert!(text(ask).contains("final result"), "{ask}");
    assert!(
        ask["structured"]["error"]["guidance"]
            .as_str()
            .unwrap()
            .contains("final result"),
        "{ask}"
    );
}

/// Six requests in context `rev`, asked with the CLI, for a client whose elicitation
/// handler picks an option, ticks two and adds Other, types Other, declines (skips),
/// declines a plan with feedback, and cancels at the last.
pub fn review_requests(env: &Env) {
    let ask = |v: Value| env.ask(&v).ok();
    ask(
        json!({"id": "rev-single", "context": "rev", "questions": [{"id": "c", "question": "Colour?",
        "options": [{"label": "Blue", "description": "calm"}, {"label": "Red"}]}]}),
    );
    ask(
        json!({"id": "rev-multi", "context": "rev", "questions": [{"id": "m", "question": "Which?",
        "multiSelect": true, "options": [{"label": "A"}, {"label": "B"}, {"label": "C"}]}]}),
    );
    ask(
        json!({"id": "rev-other", "context": "rev", "questions": [{"id": "o", "question": "Colour?",
        "options": [{"label": "Blue"}, {"label": "Red"}]}]}),
    );
    ask(
        json!({"id": "rev-skip", "context": "rev", "questions": [{"id": "s", "question": "Anything else?"}]}),
    );
    ask(
        json!({"id": "rev-plan", "context": "rev", "questions": [{"id": "p", "question": "Approve?",
        "detail": "1. build\n2. ship", "options": [{"label": "Approve"}, {"label": "Decline"}],
        "intent": {"kind": "plan-review", "approve": "Approve"}}]}),
    );
    ask(
        json!({"id": "rev-last", "context": "rev", "questions": [{"id": "l", "question": "Later?"}]}),
    );
}

fn review(env: &Env, t: &Transport, actor: &str) {
    review_requests(env);
    let s = client(env, t, "review", &[]);
    let r = &s["review"];
    assert_eq!(r["isError"], false, "{r}");
    let forms: Vec<&str> = r["forms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    // Two forms were shown again: an empty one, and a plan approved with feedback.
    assert_eq!(forms.len(), 8, "{forms:?}");
    assert!(
        forms[1].starts_with("Not taken: nothing was chosen") && forms[1].contains("rev-single"),
        "{}",
        forms[1]
    );
    assert!(
        forms[5].contains("1. build\n2. ship"),
        "the plan is shown: {}",
        forms[5]
    );
    assert!(
        forms[6].starts_with("Not taken: feedback is sent with") && forms[6].contains("rev-plan"),
        "{}",
        forms[6]
    );
    assert_eq!(r["forms"][0]["properties"], json!(["choice", "other"]));
    assert_eq!(r["forms"][2]["properties"], json!(["choices", "other"]));
    assert_eq!(r["forms"][4]["properties"], json!(["answer"]));
    assert_eq!(r["forms"][5]["properties"], json!(["decision", "feedback"]));
    assert_eq!(r["structured"]["stopped"], true);
    assert_eq!(r["structured"]["stillOpen"], 1);
    check_review(env, actor);
}

/// Every outcome file of [`review_requests`] after the review, the event log, history and
/// the audit.
pub fn check_review(env: &Env, actor: &str) {
    let answers = |id: &str| {
        let o = env
            .outcome(id)
            .unwrap_or_else(|| panic!("no outcome for {id}"));
        assert_eq!(o["status"], "answered", "{o}");
        assert_eq!(o["provider"], actor, "{o}");
        o
    };
    assert_eq!(
        answers("rev-single")["answer"]["answers"],
        json!([{"id": "c", "selected": ["Blue"]}])
    );
    assert_eq!(
        answers("rev-multi")["answer"]["answers"],
        json!([{"id": "m", "selected": ["A", "C"], "custom": "and D"}])
    );
    assert_eq!(
        answers("rev-other")["answer"]["answers"],
        json!([{"id": "o", "selected": [], "custom": "Purple"}])
    );
    assert_eq!(
        answers("rev-skip")["answer"]["answers"],
        json!([{"id": "s", "selected": []}])
    );
    let plan = answers("rev-plan");
    assert_eq!(plan["decision"], "declined");
    assert_eq!(
        plan["answer"]["answers"],
        json!([{"id": "p", "selected": [], "custom": "split step 2"}])
    );
    assert!(
        env.outcome("rev-last").is_none(),
        "the cancelled one stays open"
    );
    let last = env.json(&["show", "rev-last"]).ok().json();
    assert_eq!(last["status"], "pending", "{last}");

    // The event log names the MCP client for each act; the lease went at the end.
    for id in [
        "rev-single",
        "rev-multi",
        "rev-other",
        "rev-skip",
        "rev-plan",
    ] {
        let ev = events(env, id);
        assert!(
            ev.contains(&("claimed".into(), actor.into())),
            "{id}: {ev:?}"
        );
        assert!(
            ev.contains(&("answered".into(), actor.into())),
            "{id}: {ev:?}"
        );
    }
    let ev = events(env, "rev-last");
    assert!(ev.contains(&("claimed".into(), actor.into())), "{ev:?}");
    assert_eq!(ev.last().unwrap().0, "released", "{ev:?}");
    let status = env
        .json(&["provider", "status", "--context", "rev"])
        .ok()
        .json();
    assert!(
        status.as_array().is_none_or(|a| a.is_empty()),
        "no lease is left: {status}"
    );
    let history = env.json(&["history", "--context", "rev"]).ok();
    assert!(
        history.stdout.contains("split step 2"),
        "{}",
        history.stdout
    );
    env.run(&["audit", "verify"]).ok();
}

// --- stdio ---------------------------------------------------------------------------

#[test]
fn stdio_lists_the_tools_with_their_schemas() {
    tools_and_schemas(&Env::new(), &stdio());
}

#[test]
fn stdio_ask_is_answered_from_the_cli_while_the_tool_waits() {
    let env = Env::new();
    ask_and_answer(&env, &stdio(), "mcp-q1");
    // The ask is recorded as the MCP client, from the source `mcp:CLIENT`.
    let ev = events(&env, "mcp-q1");
    assert_eq!(ev[0], ("accepted".into(), "mcp:dshq-test-client".into()));
    let shown = env.json(&["show", "mcp-q1"]).ok().json();
    assert_eq!(shown["source"], "mcp:dshq-test-client", "{shown}");
}

#[test]
fn stdio_short_wait_is_pending_then_get_answer_collects() {
    pending_then_get(&Env::new(), &stdio(), "mcp-q2");
}

#[test]
fn stdio_abort() {
    abort(&Env::new(), &stdio(), "mcp-q3", "mcp:dshq-test-client");
}

#[test]
fn stdio_a_delegated_agent_gets_delegated_caller() {
    let env = Env::new();
    enter(&env, "boss", None);
    let instance = enter(&env, "worker", Some("boss"));
    let t = Transport::Stdio(vec![
        "--agent".into(),
        "worker".into(),
        "--instance".into(),
        instance,
    ]);
    assert_delegated(&client(&env, &t, "delegated", &[("MCP_RID", "mcp-d1")]));
    let shown = env.json(&["show", "mcp-d1"]).ok().json();
    assert_eq!(shown["status"], "rejected", "{shown}");
}

#[test]
fn stdio_a_task_survives_a_restart_of_the_server_and_completes() {
    let env = Env::new();
    // Each run spawns its own `dshq mcp` and ends it when the session closes: the poll
    // below talks to a new server process that knows nothing but the store.
    let s = client(&env, &stdio(), "task-start", &[("MCP_RID", "mcp-t1")]);
    assert_no_task(&s);
    assert_eq!(s["created"]["task"]["taskId"], "mcp-t1", "{s}");
    assert_eq!(s["created"]["task"]["status"], "working");
    assert_eq!(s["status"]["task"]["status"], "working");
    assert_eq!(s["cancelled"]["task"]["status"], "cancelled", "{s}");
    assert_eq!(
        env.outcome("mcp-t1-cancelled").unwrap()["error"]["code"],
        "ASK_ABORTED"
    );
    let s = client(&env, &stdio(), "task-poll", &[("MCP_RID", "mcp-t1")]);
    assert_eq!(s["after-restart"]["task"]["status"], "working", "{s}");
    let done = &s["done"]["task"];
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["answers"],
        json!([{"id": "color", "selected": ["Red"]}])
    );
    assert_eq!(env.outcome("mcp-t1").unwrap()["status"], "answered");
}

#[test]
fn stdio_review_questions_through_elicitation() {
    review(&Env::new(), &stdio(), "mcp:dshq-test-client");
}

#[test]
fn stdio_review_without_elicitation_is_a_clear_tool_error() {
    let env = Env::new();
    let s = client(&env, &stdio(), "review-no-elicitation", &[]);
    let r = &s["review"];
    assert_eq!(r["isError"], true, "{r}");
    assert!(text(r).contains("does not support elicitation"), "{r}");
    // review_next is the 2026-07-28 reviewer: at 2025-11-25 it says so.
    let next = &s["review-next"];
    assert_eq!(next["structured"]["error"]["code"], "USAGE", "{next}");
    assert!(text(next).contains("2026-07-28"), "{next}");
    // No lease was taken.
    let status = env
        .json(&["provider", "status", "--context", "rev"])
        .ok()
        .json();
    assert!(status.as_array().is_none_or(|a| a.is_empty()), "{status}");
}

/// The release of the review's lease, as the claimed request's log shows it.
fn released_by_release(env: &Env, id: &str) -> bool {
    let v = env.json(&["events", id]).ok().json();
    v.as_array()
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "released" && e["data"]["reason"] == "lease released")
}

pub fn one_request(env: &Env) {
    env.ask(
        &json!({"id": "rev-single", "context": "rev", "questions": [{"id": "c",
        "question": "Colour?", "options": [{"label": "Blue"}, {"label": "Red"}]}]}),
    )
    .ok();
}

#[test]
fn stdio_a_client_that_dies_mid_review_leaves_no_lease() {
    let env = Env::new();
    one_request(&env);
    let s = client(&env, &stdio(), "review-vanish", &[]);
    assert!(
        s["form"]["message"]
            .as_str()
            .unwrap()
            .contains("rev-single"),
        "{s}"
    );
    // Released (not left to run out), and the request is back in the queue.
    assert!(
        wait_until(DEADLINE, || released_by_release(&env, "rev-single")),
        "{:?}",
        events(&env, "rev-single")
    );
    let status = env
        .json(&["provider", "status", "--context", "rev"])
        .ok()
        .json();
    assert!(status.as_array().is_none_or(|a| a.is_empty()), "{status}");
    assert_eq!(
        env.json(&["show", "rev-single"]).ok().json()["status"],
        "pending"
    );
}

#[test]
fn stdio_a_form_nobody_answers_stops_the_review() {
    let env = Env::new();
    one_request(&env);
    let t = Transport::Stdio(vec!["--form-timeout".into(), "1s".into()]);
    let s = client(&env, &t, "review-walk-away", &[]);
    let r = &s["review"];
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["structured"]["stopped"], true, "{r}");
    assert_eq!(r["structured"]["reviewed"][0]["outcome"], "left", "{r}");
    assert!(released_by_release(&env, "rev-single"));
    assert_eq!(
        env.json(&["show", "rev-single"]).ok().json()["status"],
        "pending"
    );
}

// --- Streamable HTTP -----------------------------------------------------------------

pub fn http(base: &str, token: &str) -> Transport {
    Transport::Http {
        base: base.to_string(),
        token: token.to_string(),
    }
}

#[test]
fn http_needs_a_token() {
    let env = Env::new();
    let h = host(&env, &[]);
    let r = crate::api::call("POST", &format!("{}/mcp", h.base), None, Some(b"{}"));
    assert_eq!(r.status, 401, "{:?}", r.body);
    assert_eq!(r.code(), "UNAUTHORIZED");
}

/// A session the client ends with DELETE is ended, and answered 204 No Content (the
/// transport's own answer is 202, which the Python SDK reports at exit as "Session
/// termination failed: 202"); the ended session is then unknown (404).
#[test]
fn http_a_session_the_client_deletes_is_ended_with_204() {
    let env = Env::new();
    let h = host(&env, &[]);
    let asker = token(&env, "asker", "agent-box", None);
    let url = format!("{}/mcp", h.base);
    let bearer = format!("Bearer {asker}");
    let post = |session: Option<&str>, body: &str| {
        let mut r = ureq::post(&url)
            .set("Authorization", &bearer)
            .set("Content-Type", "application/json")
            .set("Accept", "application/json, text/event-stream");
        if let Some(s) = session {
            r = r
                .set("Mcp-Session-Id", s)
                .set("MCP-Protocol-Version", "2025-11-25");
        }
        match r.send_string(body) {
            Ok(r) | Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("POST /mcp: {e}"),
        }
    };
    let init = post(
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    assert_eq!(init.status(), 200);
    let session = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    drop(init);
    let ended = match ureq::delete(&url)
        .set("Authorization", &bearer)
        .set("Mcp-Session-Id", &session)
        .set("MCP-Protocol-Version", "2025-11-25")
        .call()
    {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("DELETE /mcp: {e}"),
    };
    assert_eq!(ended.status(), 204, "{:?}", ended.into_string());
    let after = post(
        Some(&session),
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
    );
    assert_eq!(after.status(), 404, "the ended session is unknown");
    // The official SDK ends its session at exit and says nothing about it.
    let mut c = Command::new("python3");
    c.arg(script()).arg("tools");
    script_env(&mut c, &env, &http(&h.base, &asker), &[]);
    let (_, stderr) = run_script(c, "client.py tools", "the MCP SDK did not import");
    assert!(!stderr.contains("Session termination failed"), "{stderr}");
}

#[test]
fn http_ask_answer_pending_abort_and_delegated() {
    let env = Env::new();
    let h = host(&env, &[]);
    let asker = token(&env, "asker", "agent-box", None);
    let t = http(&h.base, &asker);
    tools_and_schemas(&env, &t);
    ask_and_answer(&env, &t, "http-q1");
    // Over HTTP the request is the token's: the same token sees it on the API too.
    let shown = crate::api::call(
        "GET",
        &format!("{}/api/v1/requests/http-q1", h.base),
        Some(&asker),
        None,
    );
    assert_eq!(shown.status, 200, "{:?}", shown.body);
    assert_eq!(shown.body["source"], "web:agent-box");
    pending_then_get(&env, &t, "http-q2");
    // Over HTTP the actor is the token too, never the name the client gave.
    abort(&env, &t, "http-q3", "mcp:agent-box");
    enter(&env, "boss", None);
    let instance = enter(&env, "worker", Some("boss"));
    let agent = json!({"id": "worker", "instance": instance}).to_string();
    assert_delegated(&client(
        &env,
        &t,
        "delegated",
        &[("MCP_RID", "http-d1"), ("MCP_AGENT", &agent)],
    ));
    // An asker token may not review.
    let s = client(&env, &t, "review", &[]);
    assert_eq!(
        s["review"]["structured"]["error"]["code"], "FORBIDDEN",
        "{s}"
    );
}

#[test]
fn http_a_task_survives_a_restart_of_the_host() {
    let env = Env::new();
    let h = host(&env, &[]);
    let asker = token(&env, "asker", "agent-box", None);
    let s = client(
        &env,
        &http(&h.base, &asker),
        "task-start",
        &[("MCP_RID", "http-t1")],
    );
    assert_no_task(&s);
    assert_eq!(s["created"]["task"]["taskId"], "http-t1", "{s}");
    assert_eq!(s["cancelled"]["task"]["status"], "cancelled", "{s}");
    h.daemon.kill9();
    let h = host(&env, &[]);
    let s = client(
        &env,
        &http(&h.base, &asker),
        "task-poll",
        &[("MCP_RID", "http-t1")],
    );
    assert_eq!(s["after-restart"]["task"]["status"], "working", "{s}");
    assert_eq!(s["done"]["task"]["status"], "completed", "{s}");
    assert_eq!(env.wait_outcome("http-t1")["status"], "answered");
}

#[test]
fn http_review_questions_with_a_reviewer_token() {
    let env = Env::new();
    let h = host(&env, &[]);
    let reviewer = token(&env, "reviewer", "alice", None);
    // Recorded as the token's name (the client calls itself dshq-test-client).
    review(&env, &http(&h.base, &reviewer), "mcp:alice");
}

// --- the same flows from rmcp's own client (stdio) ---------------------------------

mod rust_client {
    use std::sync::{Arc, Mutex};
    use std::time::Instant;

    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams,
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        GetTaskParams, GetTaskResult, Implementation, JsonObject, TaskStatus,
    };
    use rmcp::service::{RequestContext, RoleClient, RunningService};
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    use rmcp::{ClientHandler, ErrorData as McpError, ServiceExt};
    use serde_json::{json, Value};

    use super::{check_review, enter, events, review_requests};
    use crate::helpers::{bin, wait_until, Env, DEADLINE};

    const ACTOR: &str = "mcp:rmcp-test-client";

    /// A client whose human picks, ticks, types Other, skips, declines a plan with
    /// feedback, and cancels at anything else; the forms it was shown are kept.
    #[derive(Clone, Default)]
    struct Human {
        forms: Arc<Mutex<Vec<String>>>,
        tasks: bool,
    }

    impl ClientHandler for Human {
        fn get_info(&self) -> ClientConfig {
            let mut caps = json!({"elicitation": {"form": {}}});
            if self.tasks {
                caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
            }
            let caps: ClientCapabilities = serde_json::from_value(caps).unwrap();
            ClientConfig::new(caps, Implementation::new("rmcp-test-client", "1.0"))
        }

        async fn create_elicitation(
            &self,
            request: ElicitRequestParams,
            _context: RequestContext<RoleClient>,
        ) -> Result<ElicitResult, McpError> {
            let ElicitRequestParams::FormElicitationParams {
                message,
                requested_schema,
                ..
            } = request
            else {
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            };
            self.forms.lock().unwrap().push(message.clone());
            let accept =
                |v: Value| Ok(ElicitResult::new(ElicitationAction::Accept).with_content(v));
            if message.contains("rev-single") {
                return accept(json!({"choice": "Blue"}));
            }
            if message.contains("rev-multi") {
                return accept(json!({"choices": ["A", "C"], "other": "and D"}));
            }
            if message.contains("rev-other") {
                return accept(json!({"other": "Purple"}));
            }
            if message.contains("rev-skip") {
                return Ok(ElicitResult::new(ElicitationAction::Decline));
            }
            if message.contains("rev-plan") {
                let schema = serde_json::to_value(&requested_schema).unwrap();
                let decline = schema["properties"]["decision"]["oneOf"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|o| o["const"].as_str())
                    .rfind(|c| c.starts_with("Decline"))
                    .unwrap()
                    .to_string();
                return accept(json!({"decision": decline, "feedback": "split step 2"}));
            }
            Ok(ElicitResult::new(ElicitationAction::Cancel))
        }
    }

    type Client = RunningService<RoleClient, Human>;

    async fn connect(env: &Env, human: Human, extra: &[&str]) -> Client {
        let root = env.root();
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let cmd = tokio::process::Command::new(bin()).configure(|c| {
            c.arg("--root").arg(&root).arg("mcp").args(&extra);
            c.env("RUST_LOG", "warn").env_remove("DSHQ_AGENT_INSTANCE");
        });
        human
            .serve(TokioChildProcess::new(cmd).expect("spawn dshq mcp"))
            .await
            .expect("initialize")
    }

    fn params(tool: &'static str, a: Value) -> CallToolRequestParams {
        let a: JsonObject = a.as_object().unwrap().clone();
        CallToolRequestParams::new(tool).with_arguments(a)
    }

    /// The request declares the tasks extension in its own capabilities.
    fn as_task(mut p: CallToolRequestParams) -> CallToolRequestParams {
        let caps: ClientCapabilities =
            serde_json::from_value(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))
                .unwrap();
        let mut meta = rmcp::model::RequestMetaObject::new();
        meta.set_client_capabilities(caps);
        p.meta = Some(meta);
        p
    }

    async fn call(c: &Client, tool: &'static str, a: Value) -> CallToolResult {
        c.call_tool(params(tool, a)).await.expect("tools/call")
    }

    fn question(rid: &str, wait: u64) -> Value {
        json!({"id": rid, "waitSeconds": wait, "questions": [{"id": "color",
            "question": "Which colour?", "options": [{"label": "Blue"}, {"label": "Red"}]}]})
    }

    fn structured(r: &CallToolResult) -> &Value {
        r.structured_content.as_ref().expect("structuredContent")
    }

    /// The real CLI answers, on a blocking thread.
    async fn answer(env: &Arc<Env>, rid: &str, label: &str) {
        let (env, rid, label) = (env.clone(), rid.to_string(), label.to_string());
        tokio::task::spawn_blocking(move || {
            assert!(
                wait_until(DEADLINE, || env.json(&["show", &rid]).code == 0),
                "{rid} was never stored"
            );
            let flags = [
                "--question",
                "color",
                "--select",
                &label,
                "--name",
                "cli-human",
            ];
            let mut args = vec!["answer", rid.as_str()];
            args.extend(flags);
            env.run(&args).ok();
        })
        .await
        .unwrap();
    }

    /// Poll a task at the interval it suggests until it leaves `working`, with a deadline.
    async fn settle(c: &Client, id: &str) -> GetTaskResult {
        let start = Instant::now();
        loop {
            let t = c.get_task(GetTaskParams::new(id)).await.expect("tasks/get");
            if t.task.status() != TaskStatus::Working {
                return t;
            }
            assert!(start.elapsed() < DEADLINE, "task {id} stayed working");
            let every = t.task.task.poll_interval_ms.unwrap_or(1000);
            tokio::time::sleep(std::time::Duration::from_millis(every / 4)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_flows_from_rmcps_client_over_stdio() {
        let env = Arc::new(Env::new());
        let c = connect(&env, Human::default(), &[]).await;
        let tools = c.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "ask_user_question",
                "get_answer",
                "abort_question",
                "review_questions",
                "review_next"
            ]
        );
        assert!(tools.iter().all(|t| t.output_schema.is_some()));

        // Ask; a human answers from the CLI while the tool waits.
        let waiting = {
            let peer = c.peer().clone();
            tokio::spawn(async move {
                peer.call_tool(params("ask_user_question", question("rs-1", 45)))
                    .await
            })
        };
        answer(&env, "rs-1", "Blue").await;
        let r = waiting.await.unwrap().unwrap();
        assert_eq!(structured(&r)["status"], "answered", "{r:?}");
        assert_eq!(
            structured(&r)["answers"],
            json!([{"id": "color", "selected": ["Blue"]}])
        );

        // A short wait: pending; answered; get_answer collects it.
        let r = call(&c, "ask_user_question", question("rs-2", 0)).await;
        assert_eq!(structured(&r)["status"], "pending", "{r:?}");
        answer(&env, "rs-2", "Red").await;
        let r = call(&c, "get_answer", json!({"id": "rs-2", "waitSeconds": 30})).await;
        assert_eq!(
            structured(&r)["answers"][0]["selected"],
            json!(["Red"]),
            "{r:?}"
        );

        // Abort.
        call(&c, "ask_user_question", question("rs-3", 0)).await;
        let r = call(&c, "abort_question", json!({"id": "rs-3"})).await;
        assert_eq!(structured(&r)["status"], "aborted", "{r:?}");
        let r = call(&c, "get_answer", json!({"id": "rs-3"})).await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(structured(&r)["error"]["code"], "ASK_ABORTED");
        assert!(events(&env, "rs-3").contains(&("aborted".into(), ACTOR.into())));

        // Bad input: the request parser's error, with its code and the field it names;
        // an oversize question: the inbox's limit.
        let typo = json!({"questions": [{"id": "q", "question": "x", "mutliSelect": true}]});
        let r = call(&c, "ask_user_question", typo).await;
        assert_eq!(r.is_error, Some(true), "{r:?}");
        assert_eq!(structured(&r)["error"]["code"], "BAD_REQUEST");
        assert!(format!("{:?}", r.content).contains("mutliSelect"), "{r:?}");
        let big = json!({"questions": [{"id": "q", "question": "x".repeat(1_100_000)}]});
        let r = call(&c, "ask_user_question", big).await;
        assert_eq!(structured(&r)["error"]["code"], "BAD_REQUEST", "{r:?}");
        assert!(format!("{:?}", r.content).contains("limit"), "{r:?}");
        c.cancel().await.unwrap();

        // A delegated agent.
        enter(&env, "boss", None);
        let instance = enter(&env, "worker", Some("boss"));
        let c = connect(
            &env,
            Human::default(),
            &["--agent", "worker", "--instance", &instance],
        )
        .await;
        let r = call(&c, "ask_user_question", question("rs-4", 0)).await;
        assert_eq!(r.is_error, Some(true), "{r:?}");
        assert_eq!(structured(&r)["error"]["code"], "DELEGATED_CALLER");
        c.cancel().await.unwrap();

        // A task, polled to completion by a new server process after the first one ended.
        let tasks = Human {
            tasks: true,
            ..Human::default()
        };
        let c = connect(&env, tasks.clone(), &[]).await;
        // Declared at initialize only: no task.
        let plain = c
            .call_tool_once(params("ask_user_question", question("rs-5-plain", 0)))
            .await
            .unwrap();
        assert!(
            !matches!(plain, CallToolResponse::Task(_)),
            "a task without asking: {plain:?}"
        );
        let created = c
            .call_tool_once(as_task(params("ask_user_question", question("rs-5", 0))))
            .await
            .unwrap();
        let CallToolResponse::Task(created) = created else {
            panic!("not a task: {created:?}")
        };
        assert_eq!(created.task.task_id, "rs-5");
        c.cancel().await.unwrap();
        let c = connect(&env, tasks, &[]).await;
        let t = c.get_task(GetTaskParams::new("rs-5")).await.unwrap();
        assert_eq!(t.task.status(), TaskStatus::Working);
        answer(&env, "rs-5", "Blue").await;
        let done = settle(&c, "rs-5").await;
        assert_eq!(done.task.status(), TaskStatus::Completed, "{done:?}");
        // tasks/cancel aborts the request.
        let created = c
            .call_tool_once(as_task(params("ask_user_question", question("rs-6", 0))))
            .await
            .unwrap();
        assert!(matches!(created, CallToolResponse::Task(_)), "{created:?}");
        c.cancel_task(CancelTaskParams::new("rs-6")).await.unwrap();
        let t = c.get_task(GetTaskParams::new("rs-6")).await.unwrap();
        assert_eq!(t.task.status(), TaskStatus::Cancelled);
        assert_eq!(env.outcome("rs-6").unwrap()["error"]["code"], "ASK_ABORTED");
        c.cancel().await.unwrap();

        // The reviewer's side.
        review_requests(&env);
        let human = Human::default();
        let c = connect(&env, human.clone(), &[]).await;
        let r = call(&c, "review_questions", json!({"context": "rev"})).await;
        assert_eq!(structured(&r)["stopped"], true, "{r:?}");
        assert_eq!(human.forms.lock().unwrap().len(), 6);
        c.cancel().await.unwrap();
        check_review(&env, ACTOR);
    }
}
