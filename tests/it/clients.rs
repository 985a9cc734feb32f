//! The client packages' own suites, driven from here so that `cargo test` runs them: the
//! Python package's pytest suite (`contrib/python/tests`, LangGraph included) and the Node
//! package's `node --test` suite (`contrib/typescript/test`) plus its declarations checked
//! with `tsc --noEmit`. Each suite starts real daemons of the binary built for this test
//! (`DSHQ_BIN`) on temporary roots. The tools come from the project's own environments
//! (`bash contrib/test/run` puts `.test-env/venv/bin` and `.test-env/node/node_modules/.bin`
//! first on PATH); a missing tool fails the test, saying what to run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::helpers::bin;

fn top() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const HOW: &str = "run the suite through `bash contrib/test/run`, which prepares .test-env";

/// The output of a command, failing the test (with both streams) when it fails.
fn run(c: &mut Command, what: &str) -> String {
    let out = c
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run it ({e}); {HOW}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

/// Install `./contrib/python` into the project's venv (the `python3` on PATH), once per
/// test run, after checking that it is that venv and has the pinned test packages.
pub fn python_ready() -> &'static str {
    static READY: OnceLock<()> = OnceLock::new();
    READY.get_or_init(|| {
        let check = "import sys\n\
            assert sys.prefix != sys.base_prefix, 'python3 is not a virtual environment (the system Python is never used)'\n\
            import pytest, flit_core, langgraph, langgraph.checkpoint.sqlite, pydantic_ai, agents, claude_agent_sdk\n";
        let out = Command::new("python3").args(["-c", check]).output();
        match out {
            Ok(o) if o.status.success() => {}
            Ok(o) => panic!(
                "the Python package's tests need the project's venv with pytest, langgraph, \
                 langgraph-checkpoint-sqlite, flit_core and the adapters' frameworks \
                 (contrib/test/requirements.txt): {}; {HOW}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => panic!("no python3 on PATH ({e}); {HOW}"),
        }
        run(
            Command::new("python3")
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
                .args(["--no-deps", "--no-build-isolation", "--force-reinstall"])
                .arg(top().join("contrib/python")),
            "pip install ./contrib/python",
        );
    });
    "python3"
}

/// CrewAI's own venv (`DSHQ_TEST_CREWAI_PYTHON`, contrib/test/requirements-crewai.txt)
/// with `./contrib/python` installed, once per test run.
pub fn crewai_ready() -> &'static str {
    static READY: OnceLock<String> = OnceLock::new();
    READY.get_or_init(|| {
        let python = std::env::var("DSHQ_TEST_CREWAI_PYTHON").unwrap_or_else(|_| {
            panic!("the CrewAI adapter's tests run in CrewAI's own venv (DSHQ_TEST_CREWAI_PYTHON); {HOW}")
        });
        run(
            Command::new(&python).args(["-c", "import crewai.flow, pytest, flit_core"]),
            "CrewAI's venv (contrib/test/requirements-crewai.txt)",
        );
        run(
            Command::new(&python)
                .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check"])
                .args(["--no-deps", "--no-build-isolation", "--force-reinstall"])
                .arg(top().join("contrib/python")),
            "pip install ./contrib/python (CrewAI's venv)",
        );
        python
    })
}

/// Run one pytest file of the Python package against the binary under test.
fn pytest(file: &str) {
    pytest_with(python_ready(), file);
}

fn pytest_with(python: &str, file: &str) {
    let tests = top().join("contrib/python/tests");
    let out = run(
        Command::new(python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"])
            .arg(tests.join(file))
            .current_dir(&tests)
            .env("DSHQ_BIN", bin())
            .env_remove("DSHQ_ROOT")
            .env_remove("DSHQ_URL")
            .env_remove("DSHQ_TOKEN"),
        &format!("pytest {file}"),
    );
    let summary = out.lines().last().unwrap_or_default();
    assert!(
        summary.contains(" passed") && !summary.contains("skipped"),
        "pytest {file}: {summary}\n{out}"
    );
}

#[test]
fn python_client_ask_answer_abort_wait_any_and_typed_errors() {
    pytest("test_client.py");
}

#[test]
fn python_continued_question_is_pending_then_answered_to_its_call() {
    pytest("test_continued.py");
}

#[test]
fn python_reattach_after_the_asking_process_is_killed() {
    pytest("test_reattach.py");
}

#[test]
fn python_http_transport_with_a_token_and_the_async_client() {
    pytest("test_http.py");
}

#[test]
fn python_langgraph_interrupt_kill_answer_resume() {
    pytest("test_langgraph.py");
}

#[test]
fn python_pydantic_ai_and_openai_agents_pause_kill_edit_resume() {
    pytest("test_tool_adapters.py");
}

#[test]
fn python_claude_agent_sdk_hook_defers_then_allows_the_edited_call() {
    pytest("test_claude_agent_sdk.py");
}

#[test]
fn python_adapters_pass_the_vectors_the_node_adapters_pass() {
    pytest("test_adapter_vectors.py");
}

#[test]
fn python_crewai_flow_pause_kill_edit_resume() {
    pytest_with(crewai_ready(), "test_crewai.py");
}

fn node_ready() {
    let v = run(Command::new("node").arg("--version"), "node --version");
    let major = crate::helpers::node_major(&v);
    assert!(
        major >= 20,
        "the Node package needs Node 20 or newer, found {v}"
    );
}

#[test]
fn typescript_declarations_check_with_tsc() {
    node_ready();
    let pkg = top().join("contrib/typescript");
    let out = Command::new("tsc").arg("--version").output();
    assert!(
        out.is_ok_and(|o| o.status.success()),
        "no tsc on PATH: typescript is pinned in contrib/test/package.json; {HOW}"
    );
    run(
        Command::new("tsc").args(["--noEmit", "-p"]).arg(&pkg),
        "tsc --noEmit -p contrib/typescript",
    );
}

/// The adapters' declarations against the frameworks' own (the pinned `ai`,
/// `@openai/agents-core` and `@anthropic-ai/claude-agent-sdk`, with Node's types): a
/// separate project, so that the core package's check keeps needing nothing but itself.
#[test]
fn typescript_adapter_declarations_check_with_tsc_against_the_frameworks() {
    node_ready();
    let pkg = top().join("contrib/typescript");
    adapters_ready();
    run(
        Command::new("tsc")
            .args(["--noEmit", "-p"])
            .arg(pkg.join("tsconfig.adapters.json")),
        "tsc --noEmit -p contrib/typescript/tsconfig.adapters.json",
    );
}

/// The frameworks the adapters import resolve from `contrib/typescript/node_modules`,
/// which `contrib/test/run` links to the pinned packages.
pub fn adapters_ready() {
    let pkg = top().join("contrib/typescript");
    for p in [
        "ai",
        "@openai/agents-core",
        "@anthropic-ai/claude-agent-sdk",
        "@types/node",
    ] {
        assert!(
            pkg.join("node_modules").join(p).join("package.json").exists(),
            "{p} does not resolve from contrib/typescript (contrib/test/package.json pins it); {HOW}"
        );
    }
}

#[test]
fn typescript_package_installs_from_its_tarball() {
    node_ready();
    let dir = tempfile::tempdir().unwrap();
    let packed = run(
        Command::new("npm")
            .args(["pack", "--silent", "--pack-destination"])
            .arg(dir.path())
            .arg(top().join("contrib/typescript")),
        "npm pack contrib/typescript",
    );
    let tarball = dir.path().join(packed.trim());
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(
        project.join("package.json"),
        r#"{"private": true, "type": "module"}"#,
    )
    .unwrap();
    run(
        Command::new("npm")
            .args([
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .arg(&tarball)
            .current_dir(&project),
        "npm install dshq-0.1.0.tgz",
    );
    // The package knows every code the binary has (a code added to one and not the other
    // fails here).
    let smoke = format!(
        "import * as d from 'dshq';\n\
        if (d.CODES.length !== {} || d.idForKey('x') !== 'key-2d711642b726b04401627ca9fbac32f5') process.exit(1);\n\
        if (!(new d.Expired('m') instanceof d.AskAborted)) process.exit(2);\n\
        console.log(Object.keys(d).length);",
        dshq::protocol::error::ALL_CODES.len()
    );
    let out = run(
        Command::new("node")
            .args(["--input-type=module", "-e", &smoke])
            .current_dir(&project),
        "import dshq from its installed tarball",
    );
    assert!(out.trim().parse::<u32>().unwrap() > 30, "{out}");
    for f in [
        "index.d.ts",
        "ai-sdk.js",
        "openai-agents.d.ts",
        "claude-agent-sdk.js",
        "adapters/core.js",
    ] {
        assert!(
            Path::new(&project.join("node_modules/dshq").join(f)).exists(),
            "{f} is not in the package"
        );
    }
}

/// Run one `node --test` file of the Node package against the binary under test.
fn node_test(file: &str) {
    node_ready();
    let pkg = top().join("contrib/typescript");
    let out = run(
        Command::new("node")
            .args(["--test", file])
            .current_dir(&pkg)
            .env("DSHQ_BIN", bin())
            .env_remove("DSHQ_ROOT")
            .env_remove("DSHQ_URL")
            .env_remove("DSHQ_TOKEN"),
        &format!("node --test contrib/typescript/{file}"),
    );
    assert!(
        out.contains("# fail 0") && out.contains("# skipped 0"),
        "{out}"
    );
    assert!(!out.contains("# pass 0"), "{out}");
}

#[test]
fn typescript_suite_against_the_real_daemon() {
    node_test("test/client.test.js");
}

#[test]
fn typescript_adapters_pass_the_vectors_the_python_adapters_pass() {
    node_test("test/adapters/core.test.js");
}

#[test]
fn typescript_adapters_pause_kill_answer_edited_resume_decline_expire() {
    adapters_ready();
    node_test("test/adapters/adapters.test.js");
}

#[test]
fn python_ids_never_name_a_file_outside_the_root() {
    pytest("test_ids.py");
}

#[test]
fn typescript_ids_never_name_a_file_outside_the_root() {
    node_test("test/ids.test.js");
}
