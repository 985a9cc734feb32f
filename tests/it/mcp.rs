//! The MCP server through a real third-party client: the official Python SDK (`mcp` from
//! PyPI), driving `dshq mcp` over stdio and `/mcp` on `dshq daemon --listen` over
//! Streamable HTTP. The client scripts are `tests/mcp/client.py SCENARIO`; the answering
//! human is the real CLI. This test checks what the client saw, then the outcome files,
//! `dshq events` and `dshq history`.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::api::{host, token};
use crate::helpers::{bin, Env};

/// The SDK version `.ci/run` installs.
const SDK: &str = "mcp==2.3.0";

/// How a scenario reaches the server.
enum Transport {
    /// `dshq mcp` with these extra arguments, spawned by the client.
    Stdio(Vec<String>),
    /// `/mcp` at this base URL with this bearer token.
    Http { base: String, token: String },
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

/// Run `client.py SCENARIO` and return its steps by name.
fn client(env: &Env, t: &Transport, scenario: &str, vars: &[(&str, &str)]) -> Value {
    require_sdk();
    let mut c = Command::new("python3");
    c.arg(script())
        .arg(scenario)
        .env("DSHQ_BIN", bin())
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
    }
    for (k, v) in vars {
        c.env(k, v);
    }
    let out = c.output().expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        panic!("the MCP SDK did not import: pip install {SDK}\n{stdout}");
    }
    assert!(
        out.status.success(),
        "client.py {scenario} failed:\nstdout: {stdout}\nstderr: {stderr}"
    );
    let mut steps = serde_json::Map::new();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        let name = v["step"].as_str().unwrap_or_default().to_string();
        steps.insert(name, v);
    }
    Value::Object(steps)
}

fn stdio() -> Transport {
    Transport::Stdio(vec![])
}

/// The event kinds and actors of request `id`, in order.
fn events(env: &Env, id: &str) -> Vec<(String, String)> {
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

fn text(step: &Value) -> &str {
    step["text"].as_str().unwrap_or_default()
}

// --- the flows, each run over both transports ----------------------------------------

fn tools_and_schemas(env: &Env, t: &Transport) {
    let s = client(env, t, "tools", &[]);
    let tools = &s["tools"]["tools"];
    for name in [
        "ask_user_question",
        "get_answer",
        "abort_question",
        "review_questions",
    ] {
        assert!(tools[name]["input"]["type"] == "object", "{name}: {tools}");
        assert!(tools[name]["output"]["type"] == "object", "{name}: {tools}");
    }
    // The ask's input schema is the request vocabulary (the protocol's own types).
    let ask = &tools["ask_user_question"]["input"];
    assert_eq!(ask["required"], json!(["questions"]));
    let question = &ask["$defs"]["Question"]["properties"];
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
    for field in [
        "context",
        "agent",
        "timeout",
        "deadline",
        "meta",
        "waitSeconds",
    ] {
        assert!(ask["properties"].get(field).is_some(), "{field}: {ask}");
    }
    assert_eq!(ask["additionalProperties"], json!(false));
    let out = &tools["ask_user_question"]["output"];
    assert!(out["required"]
        .as_array()
        .unwrap()
        .contains(&json!("status")));
}

fn ask_and_answer(env: &Env, t: &Transport, rid: &str) {
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

fn pending_then_get(env: &Env, t: &Transport, rid: &str) {
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

fn abort(env: &Env, t: &Transport, rid: &str, actor: &str) {
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
fn enter(env: &Env, id: &str, owner: Option<&str>) -> String {
    let mut args = vec!["agent", "enter", "--id", id];
    if let Some(o) = owner {
        args.extend(["--owner", o]);
    }
    env.json(&args).ok().json()["instance"]
        .as_str()
        .unwrap()
        .to_string()
}

fn assert_delegated(s: &Value) {
    let ask = &s["ask"];
    assert_eq!(ask["isError"], true, "{ask}");
    assert_eq!(
        ask["structured"]["error"]["code"], "DELEGATED_CALLER",
        "{ask}"
    );
    assert!(text(ask).contains("final result"), "{ask}");
}

/// Six requests in context `rev`, asked with the CLI; the client's elicitation handler
/// picks an option, ticks two and adds Other, types Other, declines (skips), declines a
/// plan with feedback, and cancels at the last.
fn review(env: &Env, t: &Transport, actor: &str) {
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

    let s = client(env, t, "review", &[]);
    let r = &s["review"];
    assert_eq!(r["isError"], false, "{r}");
    let forms: Vec<&str> = r["forms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap())
        .collect();
    assert_eq!(forms.len(), 6, "{forms:?}");
    assert!(
        forms[4].contains("1. build\n2. ship"),
        "the plan is shown: {}",
        forms[4]
    );
    assert_eq!(r["forms"][0]["properties"], json!(["choice", "other"]));
    assert_eq!(r["forms"][1]["properties"], json!(["choices", "other"]));
    assert_eq!(r["forms"][3]["properties"], json!(["answer"]));
    assert_eq!(r["forms"][4]["properties"], json!(["decision", "feedback"]));
    assert_eq!(r["structured"]["stopped"], true);
    assert_eq!(r["structured"]["stillOpen"], 1);

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
    // No lease was taken.
    let status = env
        .json(&["provider", "status", "--context", "rev"])
        .ok()
        .json();
    assert!(status.as_array().is_none_or(|a| a.is_empty()), "{status}");
}

// --- Streamable HTTP -----------------------------------------------------------------

fn http(base: &str, token: &str) -> Transport {
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
    abort(&env, &t, "http-q3", "mcp:dshq-test-client");
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
    review(&env, &http(&h.base, &reviewer), "mcp:dshq-test-client");
}
