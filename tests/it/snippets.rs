//! Every client snippet a user is told to run, run as written: the fenced blocks marked
//! `python runnable` and `js runnable` (`python runnable a2a`: an A2A client, given the
//! daemon's URL and an asker token) in README.md, docs/guide/*.md and the packages'
//! READMEs (found wherever they live, so they stay tested when a page is cut or moved). Each runs against a real
//! daemon on a temporary root (`DSHQ_ROOT`), Python in the project's venv with the package
//! installed, Node with `dshq` resolving to `contrib/typescript` (and the frameworks its
//! adapters glue to, to the pinned ones); a reviewer (the real CLI)
//! answers whatever the snippet asks (the first option, or the plan's approval as edited),
//! and the snippet must end well and say something.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

use crate::helpers::{bin, repo, Env, DEADLINE};

/// `(file, language, code)` of every runnable block: the README's and the guide's (as
/// `tests/it/docs.rs` reads them) and the packages' READMEs.
fn snippets() -> Vec<(String, String, String)> {
    let mut pages = crate::docs::pages();
    for readme in ["contrib/python/README.md", "contrib/typescript/README.md"] {
        pages.push((
            readme.to_string(),
            fs::read_to_string(repo().join(readme)).unwrap(),
        ));
    }
    pages
        .iter()
        .flat_map(|(name, text)| crate::docs::blocks(name, text))
        .filter(|b| b.marker == Some(crate::docs::Marker::Runnable))
        .map(|b| {
            let words: Vec<&str> = b.info.split_whitespace().collect();
            // CrewAI's snippets run in its own venv (its pins clash with the others'); an
            // A2A client's snippet needs the daemon listening and an asker token.
            let lang = if words.contains(&"crewai") {
                "crewai"
            } else if words.contains(&"a2a") {
                "a2a"
            } else {
                words.first().copied().unwrap_or("")
            };
            (b.page, lang.to_string(), b.body.join("\n") + "\n")
        })
        .collect()
}

/// A plan with the step "3. Check it came back" added. A framework adapter's plan is the
/// call's arguments in a fenced block: the steps are its last argument, a block of lines
/// indented by two spaces, so the step goes last in it, before the closing fence (None
/// when the last argument is no block: approved as asked).
fn step_added(plan: &str, meta: &Value) -> Option<String> {
    const STEP: &str = "3. Check it came back\n";
    if !meta["agentRun"].is_object() {
        return Some(format!("{plan}{STEP}"));
    }
    let (body, fence) = plan.trim_end_matches('\n').rsplit_once('\n')?;
    let last = body.rsplit('\n').next()?;
    last.starts_with("  ")
        .then(|| format!("{body}\n  {STEP}{fence}\n"))
}

/// Answer every open request the way a reviewer would: a plan review approved as edited
/// (a line added), otherwise the first option of each question.
fn answer_open(env: &Env) -> usize {
    let open = env.json(&["list"]).ok().json();
    let mut n = 0;
    for r in open.as_array().unwrap() {
        let id = r["id"].as_str().unwrap();
        let shown = env.json(&["show", id]).ok().json();
        let qs = shown["questions"].as_array().unwrap();
        if let [q] = &qs[..] {
            if q["intent"]["kind"] == "plan-review" && q["editable"] != false {
                if let Some(edited) = step_added(q["detail"].as_str().unwrap(), &shown["meta"]) {
                    env.run_stdin(&["answer", id, "--edit", "-"], &edited).ok();
                    n += 1;
                    continue;
                }
            }
        }
        let answers: Vec<Value> = qs
            .iter()
            .map(|q| match q["intent"]["approve"].as_str() {
                Some(a) => json!({"id": q["id"], "selected": [a]}),
                None => json!({"id": q["id"], "selected": [q["options"][0]["label"]]}),
            })
            .collect();
        env.run_stdin(
            &["answer", id, "--answers", "-"],
            &json!({ "answers": answers }).to_string(),
        )
        .ok();
        n += 1;
    }
    n
}

/// Run `program file` in `dir` against `env`'s root while a reviewer answers; its stdout.
fn run_answered(
    env: &Env,
    dir: &Path,
    program: &str,
    file: &str,
    what: &str,
    vars: &[(&str, &str)],
) -> String {
    let mut child = Command::new(program)
        .arg(file)
        .envs(vars.iter().copied())
        .current_dir(dir)
        .env("DSHQ_ROOT", env.root())
        .env("DSHQ_BIN", bin())
        .env("PATH", path_with_bin())
        // The frameworks' own telemetry and tracing: never the network.
        .env("CREWAI_DISABLE_TELEMETRY", "true")
        .env("CREWAI_TRACING_ENABLED", "false")
        .env("OTEL_SDK_DISABLED", "true")
        .env("OPENAI_AGENTS_DISABLE_TRACING", "1")
        .env_remove("DSHQ_URL")
        .env_remove("DSHQ_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: cannot run {program}: {e}"));
    let start = Instant::now();
    let mut answered = 0;
    loop {
        if let Some(_st) = child.try_wait().unwrap() {
            break;
        }
        answered += answer_open(env);
        assert!(start.elapsed() < DEADLINE * 2, "{what}: still running");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(answered > 0, "{what} asked nothing");
    assert!(!stdout.trim().is_empty(), "{what} printed nothing");
    stdout
}

/// PATH with the dshq under test first (a snippet may name `dshq`).
fn path_with_bin() -> String {
    format!(
        "{}:{}",
        bin().parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

#[test]
fn every_client_snippet_in_the_readme_and_the_guide_runs_as_written() {
    let all = snippets();
    let langs: Vec<&str> = all.iter().map(|(_, l, _)| l.as_str()).collect();
    assert!(
        langs.iter().filter(|l| **l == "python").count() >= 3
            && langs.iter().filter(|l| **l == "js").count() >= 2,
        "the guide's Python, LangGraph and Node snippets are marked runnable: {langs:?}"
    );
    let python = crate::clients::python_ready();
    let dir = tempfile::tempdir().unwrap();
    // `dshq` for Node resolves to the package as it is in the tree.
    let modules = dir.path().join("node_modules");
    fs::create_dir_all(&modules).unwrap();
    std::os::unix::fs::symlink(repo().join("contrib/typescript"), modules.join("dshq")).unwrap();
    // The frameworks the adapters' snippets import: the pinned ones the package resolves.
    if let Ok(entries) = fs::read_dir(repo().join("contrib/typescript/node_modules")) {
        for e in entries.flatten() {
            let name = e.file_name();
            if name != "dshq" && name != ".bin" {
                std::os::unix::fs::symlink(e.path(), modules.join(&name)).unwrap();
            }
        }
    }
    fs::write(
        dir.path().join("package.json"),
        r#"{"private": true, "type": "module"}"#,
    )
    .unwrap();
    for (i, (file, lang, code)) in all.iter().enumerate() {
        let what = format!("{file}, snippet {} ({lang})", i + 1);
        let (program, name) = match lang.as_str() {
            "python" => (python, format!("snippet{i}.py")),
            "crewai" => (crate::clients::crewai_ready(), format!("snippet{i}.py")),
            "a2a" => (python, format!("snippet{i}.py")),
            "js" => ("node", format!("snippet{i}.mjs")),
            other => panic!("{what}: no runner for {other}"),
        };
        fs::write(dir.path().join(&name), code).unwrap();
        // A root of its own: snippets ask under the same keys, and would re-attach.
        let env = Env::new();
        // An A2A client reaches the daemon listening (A2A_URL) with an asker token
        // (A2A_TOKEN), as the A2A guide says.
        let (daemon, vars) = if lang == "a2a" {
            let h = crate::api::host(&env, &[]);
            let token = crate::api::token(&env, "asker", "snippet", None);
            (h.daemon, vec![("A2A_URL", h.base), ("A2A_TOKEN", token)])
        } else {
            (env.daemon(), Vec::new())
        };
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let out = run_answered(&env, dir.path(), program, &name, &what, &vars);
        println!("{what}: {}", out.trim());
        // A plan gate runs the plan as the reviewer approved it (a Node adapter's tool, its
        // steps as approved): edited here.
        if code.contains("approval.plan") || code.contains("from \"dshq/") {
            assert!(out.contains("doing 3. Check it came back"), "{what}: {out}");
        }
        daemon.stop();
    }
}
