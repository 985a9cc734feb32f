//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned in
//! `contrib/test/package.json`) against `/mcp` on `dshq daemon --listen`, at both
//! revisions dshq serves: `--requirements 2025-11-25` (the initialize handshake) and
//! `--requirements 2026-07-28` (stateless), each the set of scenarios that revision
//! requires of a server.
//!
//! The suite's server runner takes only a URL, so a small proxy
//! (`tests/mcp/bearer_proxy.py`) adds the bearer token. Every scenario of a feature dshq
//! declares (tools, the transport, the lifecycle) must pass with no failing check; the
//! others need the suite's own fixture tools, prompts or resources (`test_simple_text`,
//! `slow_compute`, ...), which a question queue does not have. They are listed, with the
//! reason, in docs/DESIGN.md ("MCP 2026-07-28 beside 2025-11-25"); this test asserts that
//! they ran, so a suite that stops running them is noticed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::api::{host, token};
use crate::helpers::Env;
use crate::mcp_ts::node_modules;

/// The scenarios of features dshq declares, at 2025-11-25: all must pass.
const APPLICABLE_2025: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    // Run but not scored for 2025-11-25 by the suite (added after the release, pending).
    "server-session-lifecycle",
    "server-sse-polling",
];

/// The same at 2026-07-28.
const APPLICABLE_2026: &[&str] = &[
    "tools-list",
    "server-sse-multiple-streams",
    "sep-2164-resource-not-found",
    "input-required-result-unsupported-methods",
    "dns-rebinding-protection",
    // Run but not scored for 2026-07-28 by the suite (pending).
    "http-header-validation",
];

/// The proxy that adds the token, killed when dropped.
struct Proxy(Child, u16);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn proxy(base: &str, token: &str) -> Proxy {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/bearer_proxy.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(base)
        .arg(token)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 for the bearer proxy");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("the proxy's port");
    let port = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the proxy said {line:?}"));
    Proxy(child, port)
}

/// Run the suite at `revision` into `out`; the checks of each scenario by name.
fn run(url: &str, revision: &str, out: &Path) -> Vec<(String, Vec<Value>)> {
    let nm = node_modules();
    let bin = nm.join(".bin");
    assert!(
        bin.join("conformance").exists(),
        "@modelcontextprotocol/conformance is missing from {}: reinstall with contrib/test/run",
        nm.display()
    );
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The suite exits non-zero while any scenario fails (the not-applicable ones do): its
    // results are read from the files instead.
    let status = Command::new(bin.join("conformance"))
        .args(["server", "--url", url, "--requirements", revision, "-o"])
        .arg(out)
        .env("PATH", path)
        .stdout(Stdio::null())
        .status()
        .expect("run the conformance suite");
    assert!(status.code().is_some(), "the suite was killed: {status:?}");
    let mut scenarios = Vec::new();
    for entry in std::fs::read_dir(out).expect("the suite's results") {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        // server-SCENARIO-YYYY-MM-DDTHH-MM-SS-mmmZ
        let Some(rest) = name.strip_prefix("server-") else {
            continue;
        };
        let scenario = rest[..rest.len().saturating_sub(25)].to_string();
        let text = std::fs::read_to_string(dir.join("checks.json")).unwrap_or_default();
        let checks: Vec<Value> = serde_json::from_str(&text).unwrap_or_default();
        scenarios.push((scenario, checks));
    }
    scenarios
}

fn assert_passes(scenarios: &[(String, Vec<Value>)], applicable: &[&str], revision: &str) {
    let names: Vec<&str> = scenarios.iter().map(|(n, _)| n.as_str()).collect();
    for want in applicable {
        let (_, checks) = scenarios
            .iter()
            .find(|(n, _)| n == want)
            .unwrap_or_else(|| panic!("{revision}: scenario {want} did not run: {names:?}"));
        assert!(!checks.is_empty(), "{revision}: {want} made no checks");
        let failed: Vec<&Value> = checks
            .iter()
            .filter(|c| matches!(c["status"].as_str(), Some("FAILURE") | Some("ERROR")))
            .collect();
        assert!(failed.is_empty(), "{revision}: {want} failed: {failed:?}");
    }
    // The required set still has the fixture scenarios dshq lists as not applicable.
    assert!(
        names.iter().any(|n| n.starts_with("tools-call-")),
        "{revision}: {names:?}"
    );
}

#[test]
fn the_conformance_suite_passes_what_dshq_declares_at_both_revisions() {
    let env = Env::new();
    // The host's defaults: the DNS-rebinding scenario's valid request carries the loopback
    // `Host` and the `Origin` of the URL it was given, a loopback listener's own origin.
    let h = host(&env, &[]);
    let reviewer = token(&env, "reviewer", "conformance", None);
    let p = proxy(&h.base, &reviewer);
    let url = format!("http://127.0.0.1:{}/mcp", p.1);
    for (revision, applicable) in [
        ("2025-11-25", APPLICABLE_2025),
        ("2026-07-28", APPLICABLE_2026),
    ] {
        let out = env.root().join(format!("conformance-{revision}"));
        let scenarios = run(&url, revision, &out);
        assert_passes(&scenarios, applicable, revision);
    }
}
