//! dsh itself answered through dshq: the `dshq-dsh` package (`contrib/dsh`) inside a real
//! DeepSeek Harness runtime built from dsh's npm packages (the 0.1.0-rc.8 line, pinned in
//! `contrib/test/package.json` and installed by `contrib/test/run` into `.test-env/node`),
//! driven from here so that `cargo test` runs it. The suite (`contrib/dsh/test`) starts
//! real daemons of the binary built for this test and answers with `dshq answer` in other
//! processes.
//!
//! The packages are laid out as a user's project would install them: a throwaway folder
//! with `node_modules/dshq` (contrib/typescript), `node_modules/dshq-dsh` (contrib/dsh) and
//! dsh's packages, so each resolves its imports as it would once installed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::helpers::{bin, wait_until, Env, DEADLINE};
use crate::mcp_ts::node_modules;

fn top() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        // A package's node_modules (a folder, or the link contrib/test/run makes) is not copied.
        if e.file_name() == "node_modules" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A project folder with both packages and dsh's, and the pinned Node to run it with.
pub struct Project {
    pub dir: tempfile::TempDir,
    node: PathBuf,
}

impl Project {
    pub fn new() -> Project {
        let nm = node_modules();
        for p in [
            "@deepseek-ai/dsh-user-questions/package.json",
            "@deepseek-ai/dsh-user-approval/package.json",
            "@deepseek-ai/dsh-agent-loop/package.json",
            "@deepseek-ai/dsh-tool-ask-user/package.json",
        ] {
            assert!(
                nm.join(p).exists(),
                "{p} is missing from {}: reinstall with contrib/test/run",
                nm.display()
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let contrib = dir.path().join("contrib");
        copy_dir(
            &top().join("contrib/typescript"),
            &contrib.join("typescript"),
        );
        copy_dir(&top().join("contrib/dsh"), &contrib.join("dsh"));
        let modules = dir.path().join("node_modules");
        std::fs::create_dir(&modules).unwrap();
        std::os::unix::fs::symlink(nm.join("@deepseek-ai"), modules.join("@deepseek-ai")).unwrap();
        std::os::unix::fs::symlink(contrib.join("typescript"), modules.join("dshq")).unwrap();
        std::os::unix::fs::symlink(contrib.join("dsh"), modules.join("dshq-dsh")).unwrap();
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"private": true, "type": "module"}"#,
        )
        .unwrap();
        Project {
            dir,
            node: nm.join(".bin/node"),
        }
    }

    /// Copy `file` into the project's folder (a script that imports the packages by name).
    pub fn add(&self, file: &Path) {
        std::fs::copy(file, self.dir.path().join(file.file_name().unwrap())).unwrap();
    }

    /// `node ARGS` in the project, with the binary under test.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.node);
        c.args(args)
            .current_dir(self.dir.path())
            .env("DSHQ_BIN", bin())
            .env_remove("DSHQ_ROOT")
            .env_remove("DSHQ_URL")
            .env_remove("DSHQ_TOKEN");
        c
    }

    /// `node ARGS` in the project; its stdout, or the test fails.
    pub fn node(&self, args: &[&str]) -> String {
        let out = self
            .command(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.node.display()));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "node {args:?} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}

#[test]
fn dsh_provider_and_approval_in_a_real_dsh_runtime() {
    let p = Project::new();
    let out = p.node(&["--test", "contrib/dsh/test/dsh.test.js"]);
    assert!(
        out.contains("# fail 0") && out.contains("# skipped 0"),
        "{out}"
    );
    assert!(!out.contains("# pass 0"), "{out}");
}

#[test]
fn dsh_package_declarations_check_with_tsc_against_dsh_types() {
    let p = Project::new();
    let tsc = node_modules().join("typescript/bin/tsc");
    p.node(&[
        tsc.to_str().unwrap(),
        "--noEmit",
        "-p",
        "contrib/dsh/tsconfig.json",
    ]);
}

/// The guide's example, as a user would save it: the fenced block after its marker.
fn guide_example(marker: &str) -> String {
    let guide = std::fs::read_to_string(top().join("docs/guide/dsh.md")).unwrap();
    let after = guide
        .split(&format!("<!-- example: {marker} -->"))
        .nth(1)
        .unwrap_or_else(|| panic!("docs/guide/dsh.md marks no example {marker}"));
    let body = after
        .split("```js\n")
        .nth(1)
        .expect("a js block after the marker");
    body.split("\n```").next().unwrap().to_string() + "\n"
}

#[test]
fn the_guide_example_asks_through_dshq_and_prints_dsh_answer() {
    let p = Project::new();
    std::fs::write(
        p.dir.path().join("ask-dsh.mjs"),
        guide_example("ask-dsh.mjs"),
    )
    .unwrap();
    let env = Env::new();
    let _daemon = env.daemon();
    let child = p
        .command(&["ask-dsh.mjs"])
        .env("DSHQ_ROOT", env.root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reviewer, in another process: the pending question, answered from the CLI.
    let mut id = String::new();
    assert!(
        wait_until(DEADLINE, || {
            let open = env.json(&["list"]).ok().json();
            match open.as_array().and_then(|a| a.first()) {
                Some(r) => {
                    id = r["id"].as_str().unwrap().to_string();
                    true
                }
                None => false,
            }
        }),
        "the example's question never reached dshq"
    );
    env.run(&["answer", &id, "--select", "Postgres"]).ok();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.trim(),
        r#"{"answers":[{"id":"db","selected":["Postgres"]}]}"#
    );
}
