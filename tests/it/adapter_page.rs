//! A framework adapter's tool call as a reviewer meets it on the page, in both languages:
//! the Python and the Node adapters ask about the same call (a Claude session's, whose key
//! both give the same) and meet on one request; the page shows the plan's arguments as a
//! code block, line by line; the reviewer edits values in the box (a number, a line added
//! to a block of text) in a real browser and approves; both packages then read the edit
//! back as the same arguments, each by the type it had. The rules themselves are the
//! shared vectors (contrib/adapters-vectors.json), which each package's own suite checks.

use std::process::Command;

use serde_json::{json, Value};

use crate::api::{host, token};
use crate::browser::{browser, click, has, js, log_in_on_this_page, start_driver, until};
use crate::clients::python_ready;
use crate::helpers::{repo, Env};

fn args() -> Value {
    json!({
        "service": "billing",
        "replicas": 3,
        "regions": ["eu-west-1", "us-east-1"],
        "script": "#!/bin/sh\nset -e\necho '```'\nmake deploy\n",
        "max error rate": 0.02,
        "reason": " padded ",
    })
}

const PY: &str = r#"
import json, sys
import dshq
from dshq.adapters._core import APPROVAL, Call, ask_call, decide
mode, args = sys.argv[1], json.loads(sys.argv[2])
client = dshq.Client()
if mode == "ask":
    print(ask_call(client, "claude-agent-sdk", "session-1", "toolu_1", "deploy", args).ticket.id)
else:
    d = decide(client, Call("toolu_1", "deploy", args, APPROVAL, dshq.Ticket(sys.argv[3])), timeout=30)
    print(json.dumps({"allowed": d.allowed, "edited": d.edited, "args": d.args}))
"#;

const JS: &str = r#"
import { Client } from "./index.js";
import { askFor, decide, requestIdOf } from "./adapters/core.js";
const [mode, args] = [process.argv[1], JSON.parse(process.argv[2])];
const call = { adapter: "claude-agent-sdk", run: "session-1", callId: "toolu_1", toolName: "deploy", args, kind: "tool" };
if (mode === "ask") {
  await askFor(new Client(), call, {});
  console.log(requestIdOf(call));
} else {
  const d = await decide(new Client(), call, {}, { timeout: 30 });
  console.log(JSON.stringify({ allowed: d.behavior === "allow", edited: d.edited, args: d.args }));
}
"#;

fn out(c: &mut Command, what: &str) -> String {
    let o = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert!(
        o.status.success(),
        "{what}: {}\n{stdout}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    stdout
}

fn python(env: &Env, extra: &[&str]) -> String {
    let mut c = Command::new(python_ready());
    c.args(["-c", PY])
        .args(extra)
        .env("DSHQ_ROOT", env.root())
        .env_remove("DSHQ_URL")
        .env_remove("DSHQ_TOKEN");
    out(&mut c, "the Python adapter")
}

fn node(env: &Env, extra: &[&str]) -> String {
    let mut c = Command::new("node");
    c.args(["--input-type=module", "-e", JS])
        .args(extra)
        .current_dir(repo().join("contrib/typescript"))
        .env("DSHQ_ROOT", env.root())
        .env_remove("DSHQ_URL")
        .env_remove("DSHQ_TOKEN");
    out(&mut c, "the Node adapter")
}

#[test]
fn a_tool_call_edited_on_the_page_runs_as_edited_in_python_and_node() {
    let (_driver, driver_url) = start_driver();
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    let asked = args().to_string();
    let id = python(&env, &["ask", &asked]);
    assert_eq!(
        node(&env, &["ask", &asked]),
        id,
        "one key for the same call"
    );
    let area = "textarea[name='q0.edit']";
    let profile = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser(&driver_url, profile.path(), false).await;
        c.goto(&format!("{}/login", h.base)).await.unwrap();
        log_in_on_this_page(&c, &rita).await;
        c.goto(&format!("{}/r/{id}", h.base)).await.unwrap();
        until("the form", || async { has(&c, "fieldset.q").await }).await;
        // The arguments are a code block: one line each, as typed, the value's own
        // backticks inside it.
        let shown = js(&c, "return [...document.querySelectorAll('fieldset.q pre code')].map(e => e.textContent);").await;
        assert_eq!(
            shown,
            json!(["service: billing\nreplicas: 3\nregions: [\"eu-west-1\",\"us-east-1\"]\nscript: |\n  #!/bin/sh\n  set -e\n  echo '```'\n  make deploy\n\"max error rate\": 0.02\nreason: \" padded \"\n"]),
        );
        click(&c, "details.edit summary").await;
        js(&c, &format!(
            "const t = document.querySelector(\"{area}\"); \
             t.value = t.value.replace('replicas: 3', 'replicas: 4').replace('  make deploy\\n', '  make deploy\\n  make verify\\n'); return null;"
        ))
        .await;
        click(&c, "input[name=q0][value=o0]").await;
        click(&c, "form#answer button[type=submit]").await;
        until("the summary page", || async { has(&c, "#send-button").await }).await;
        click(&c, "#send-button").await;
        let done = format!("/?done={id}");
        until("the queue after sending", || async {
            c.current_url().await.is_ok_and(|u| u.as_str().ends_with(&done))
        })
        .await;
        c.close().await.unwrap();
    });
    let mut want = args();
    want["replicas"] = json!(4);
    want["script"] = json!("#!/bin/sh\nset -e\necho '```'\nmake deploy\nmake verify\n");
    let want = json!({"allowed": true, "edited": true, "args": want});
    for (who, got) in [
        ("Python", python(&env, &["decide", &asked, &id])),
        ("Node", node(&env, &["decide", &asked])),
    ] {
        let got: Value = serde_json::from_str(&got).unwrap_or_else(|e| panic!("{who}: {e}: {got}"));
        assert_eq!(got, want, "{who} reads the edit back");
    }
    let listed = env.json(&["list", "--all"]).ok().json();
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
}
