//! The MCP server through the official TypeScript clients: the TypeScript SDK client
//! (`@modelcontextprotocol/sdk`, driving `tests/mcp/client_ts.cjs`) and the MCP
//! Inspector's CLI (`@modelcontextprotocol/inspector --cli`), over stdio (`dshq mcp`) and
//! Streamable HTTP (`/mcp` on `dshq daemon --listen`). Both validate what they get: the
//! SDK checks every `structuredContent`, error results included, against the tool's
//! output schema; the Inspector's `--strict` listing reports schema portability problems.
//!
//! The packages are pinned in `contrib/test/package.json` and its lock file, installed by
//! `contrib/test/run` into `.test-env/node` (`DSHQ_TEST_NODE_MODULES`), with a Node from npm
//! new enough for the Inspector first on PATH. A missing one fails the test, saying so.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{json, Value};

use crate::api::{host, token};
use crate::helpers::{bin, Env};
use crate::mcp::{run_script, script_env, steps, Transport};

/// Where the pinned Node packages are; fails saying how to install them.
pub fn node_modules() -> PathBuf {
    let dir = std::env::var_os("DSHQ_TEST_NODE_MODULES").map(PathBuf::from);
    let dir = dir.unwrap_or_else(|| {
        panic!(
            "the TypeScript MCP tests need the pinned Node packages: run the suite with \
             contrib/test/run (or `npm ci` in contrib/test and set DSHQ_TEST_NODE_MODULES to \
             its node_modules)"
        )
    });
    for p in [
        "@modelcontextprotocol/sdk/package.json",
        "@modelcontextprotocol/inspector/package.json",
        ".bin/node",
    ] {
        assert!(
            dir.join(p).exists(),
            "{} is missing from {}: reinstall with contrib/test/run",
            p,
            dir.display()
        );
    }
    dir
}

/// The pinned Node (the Inspector wants 22.19 or later; Debian's is 20).
fn node(nm: &std::path::Path) -> Command {
    let node = nm.join(".bin/node");
    let v = Command::new(&node)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", node.display()));
    let version = String::from_utf8_lossy(&v.stdout).trim().to_string();
    let major = crate::helpers::node_major(&version);
    assert!(
        major >= 22,
        "node {version} is too old: the pinned node@22 is needed"
    );
    let mut c = Command::new(node);
    // Node's own bin directory first, so the Inspector's `node` is the pinned one too.
    let path = std::env::var("PATH").unwrap_or_default();
    c.env("PATH", format!("{}:{path}", nm.join(".bin").display()));
    c
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client_ts.cjs")
}

/// Run `client_ts.cjs SCENARIO`: its steps by name.
fn client(env: &Env, t: &Transport, scenario: &str, vars: &[(&str, &str)]) -> Value {
    let nm = node_modules();
    let mut c = node(&nm);
    c.arg(script()).arg(scenario).env("NODE_PATH", &nm);
    script_env(&mut c, env, t, vars);
    let (stdout, stderr) = run_script(
        c,
        &format!("client_ts.cjs {scenario}"),
        "the TypeScript MCP SDK did not load: reinstall with contrib/test/run",
    );
    // The SDK compiles every output schema: nothing in them it does not know.
    assert!(
        !stderr.contains("unknown format"),
        "the SDK warned about the schemas:\n{stderr}"
    );
    steps(&stdout)
}

fn text(step: &Value) -> &str {
    step["text"].as_str().unwrap_or_default()
}

fn asker_flows(env: &Env, t: &Transport, rid: &str) {
    let s = client(env, t, "asker", &[("MCP_RID", rid)]);
    let tools = &s["tools"]["tools"];
    for name in [
        "ask_user_question",
        "get_answer",
        "abort_question",
        "review_questions",
    ] {
        assert_eq!(tools[name]["output"]["type"], "object", "{name}: {tools}");
    }
    let pending = &s["pending"];
    assert_eq!(pending["isError"], false, "{pending}");
    assert_eq!(pending["structured"]["status"], "pending", "{pending}");
    assert_eq!(pending["structured"]["id"], rid);
    // Error results reach the SDK as results (it validated them against the schema), with
    // their stable code and guidance.
    let missing = &s["not-found"];
    assert_eq!(missing["isError"], true, "{missing}");
    assert_eq!(missing["structured"]["status"], "error", "{missing}");
    assert_eq!(
        missing["structured"]["error"]["code"], "NOT_FOUND",
        "{missing}"
    );
    assert!(text(missing).starts_with("Error NOT_FOUND:"), "{missing}");
    let bad = &s["bad"];
    assert_eq!(bad["structured"]["error"]["code"], "BAD_REQUEST", "{bad}");
    // The message names what the model sent (and not the file vocabulary's alias).
    let msg = bad["structured"]["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("questions[0]") && msg.contains("multi_select"),
        "{msg}"
    );
    let get = &s["get"];
    assert_eq!(get["structured"]["status"], "answered", "{get}");
    assert_eq!(
        get["structured"]["answers"],
        json!([{"id": "color", "selected": ["Blue"]}])
    );
    assert_eq!(get["structured"]["answeredBy"], "cli-human");
    // A task only when the request asks for one.
    let plain = &s["plain"]["result"];
    assert!(plain.get("taskId").is_none(), "{plain}");
    assert_eq!(plain["structuredContent"]["status"], "pending", "{plain}");
    let task = &s["task"]["result"];
    assert_eq!(task["resultType"], "task", "{task}");
    assert_eq!(task["taskId"], format!("{rid}-task"), "{task}");
    assert_eq!(task["status"], "working", "{task}");
}

fn delegated(env: &Env, t: &Transport, rid: &str, vars: &[(&str, &str)]) {
    let mut all = vec![("MCP_RID", rid)];
    all.extend_from_slice(vars);
    let s = client(env, t, "delegated", &all);
    let ask = &s["ask"];
    assert_eq!(ask["isError"], true, "{ask}");
    assert_eq!(
        ask["structured"]["error"]["code"], "DELEGATED_CALLER",
        "{ask}"
    );
    let guidance = ask["structured"]["error"]["guidance"].as_str().unwrap();
    assert!(guidance.contains("final result"), "{guidance}");
    assert!(text(ask).contains("final result"), "{ask}");
}

fn review(env: &Env, t: &Transport, actor: &str) {
    let ask = |v: Value| env.ask(&v).ok();
    ask(
        json!({"id": "ts-single", "context": "rev", "questions": [{"id": "c", "question": "Colour?",
        "options": [{"label": "Blue"}, {"label": "Red"}]}]}),
    );
    ask(
        json!({"id": "ts-multi", "context": "rev", "questions": [{"id": "m", "question": "Which?",
        "multiSelect": true, "options": [{"label": "A"}, {"label": "B"}, {"label": "C"}]}]}),
    );
    ask(
        json!({"id": "ts-plan", "context": "rev", "questions": [{"id": "p", "question": "Approve?",
        "detail": "the plan", "options": [{"label": "Approve"}, {"label": "Revise"}],
        "intent": {"kind": "plan-review", "approve": "Approve"}}]}),
    );
    let s = client(env, t, "review", &[]);
    let r = &s["review"];
    assert_eq!(r["isError"], false, "{r}");
    assert_eq!(r["forms"].as_array().unwrap().len(), 3, "{r}");
    assert_eq!(r["structured"]["stillOpen"], 0, "{r}");
    let o = |id: &str| {
        env.outcome(id)
            .unwrap_or_else(|| panic!("no outcome for {id}"))
    };
    assert_eq!(
        o("ts-single")["answer"]["answers"][0]["selected"],
        json!(["Red"])
    );
    assert_eq!(
        o("ts-multi")["answer"]["answers"][0]["selected"],
        json!(["A", "C"])
    );
    assert_eq!(o("ts-plan")["decision"], "approved");
    assert_eq!(o("ts-plan")["provider"], actor);
}

/// `inspector --cli ARGS TARGET...`: (status, stdout, stderr).
fn inspector(env: &Env, args: &[&str]) -> (i32, String, String) {
    let nm = node_modules();
    let launcher = nm.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let mut c = node(&nm);
    c.arg(launcher)
        .arg("--cli")
        .args(args)
        // Its catalog lives under HOME: keep it in the test's own directory.
        .env("HOME", env.dir.path())
        .env("RUST_LOG", "warn");
    let out = c.output().expect("run the Inspector");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The Inspector over a target: `--strict` listing free of warnings, a pending ask, an
/// error result with its code.
fn inspector_flows(env: &Env, target: &[&str], rid: &str) {
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = extra.to_vec();
        a.extend_from_slice(target);
        inspector(env, &a)
    };
    let (code, out, err) = with(&["--strict", "--method", "tools/list"]);
    assert_eq!(code, 0, "the strict listing failed:\n{out}\n{err}");
    assert!(
        !err.contains("Warning") && !err.contains("Error"),
        "the strict listing is not clean:\n{err}"
    );
    let listed: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(listed["tools"].as_array().unwrap().len(), 5, "{listed}");

    let questions = json!([{"id": "q", "question": "Ship it?", "options": [{"label": "Yes"}, {"label": "No"}]}])
        .to_string();
    let id_arg = format!("id={rid}");
    let q_arg = format!("questions={questions}");
    // `--tool-arg` takes several pairs: they go first, so the target is not taken for one.
    let (code, out, err) = with(&[
        "--tool-arg",
        &id_arg,
        &q_arg,
        "waitSeconds=0",
        "--method",
        "tools/call",
        "--tool-name",
        "ask_user_question",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(r["structuredContent"]["status"], "pending", "{r}");
    assert!(r.get("taskId").is_none(), "the Inspector got a task: {r}");
    assert_eq!(env.json(&["show", rid]).ok().json()["status"], "pending");

    let (_, out, err) = with(&[
        "--tool-arg",
        "id=no-such-request",
        "--method",
        "tools/call",
        "--tool-name",
        "get_answer",
    ]);
    let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["error"]["code"], "NOT_FOUND", "{r}");
}

#[test]
fn the_typescript_sdk_and_the_inspector_over_stdio() {
    let env = Env::new();
    let t = Transport::Stdio(vec![]);
    asker_flows(&env, &t, "ts-1");
    review(&env, &t, "mcp:dshq-ts-client");
    crate::mcp::enter(&env, "boss", None);
    let instance = crate::mcp::enter(&env, "worker", Some("boss"));
    let t = Transport::Stdio(vec![
        "--agent".into(),
        "worker".into(),
        "--instance".into(),
        instance,
    ]);
    delegated(&env, &t, "ts-d1", &[]);
    let root = env.root().display().to_string();
    let dshq = bin().display().to_string();
    inspector_flows(&env, &[&dshq, "--root", &root, "mcp"], "insp-1");
}

#[test]
fn the_typescript_sdk_and_the_inspector_over_streamable_http() {
    let env = Env::new();
    let h = host(&env, &[]);
    let rita = token(&env, "reviewer", "rita", None);
    let url = format!("{}/mcp", h.base);
    let t = Transport::Http {
        base: h.base.clone(),
        token: rita.clone(),
    };
    asker_flows(&env, &t, "ts-h1");
    review(&env, &t, "mcp:rita");
    crate::mcp::enter(&env, "boss", None);
    let instance = crate::mcp::enter(&env, "worker", Some("boss"));
    let agent = json!({"id": "worker", "instance": instance}).to_string();
    delegated(&env, &t, "ts-hd1", &[("MCP_AGENT", &agent)]);
    let auth = format!("Authorization: Bearer {rita}");
    inspector_flows(
        &env,
        &[
            "--transport",
            "http",
            "--header",
            &auth,
            "--server-url",
            &url,
        ],
        "insp-h1",
    );
}
