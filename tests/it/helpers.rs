//! Shared test helpers: a temporary state root, running the binary, a daemon handle that
//! is killed on drop, atomic file drops, and waiting on a condition with a deadline.
#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The repository's top directory (README.md, docs/, contrib/).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The path of the built binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dshq"))
}

/// Wait until `cond` holds, checking every few milliseconds, for at most `limit`.
/// Returns whether it held.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    let mut pause = Duration::from_millis(2);
    loop {
        if cond() {
            return true;
        }
        if start.elapsed() >= limit {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// The default deadline for conditions in tests (generous: CI is a shared 2-core box).
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A temporary state root.
pub struct Env {
    pub dir: tempfile::TempDir,
    /// Extra environment for every command and daemon of this root (`DSHQ_STORE` of a
    /// shared store, a host's `DSHQ_CLOCK_SKEW`).
    pub vars: Vec<(String, String)>,
}

/// What a command printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}): {:?}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }

    /// The error code of a `--json` error document.
    pub fn error_code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Assert success and return self.
    pub fn ok(self) -> Self {
        assert_eq!(
            self.code, 0,
            "command failed: stdout {:?} stderr {:?}",
            self.stdout, self.stderr
        );
        self
    }
}

impl From<Output> for Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().expect("temp dir"),
            vars: Vec::new(),
        }
    }

    /// A root whose store is the shared store at `url` (a host of a multi-host queue).
    pub fn on_store(url: &str) -> Env {
        let mut env = Env::new();
        env.vars.push(("DSHQ_STORE".into(), url.into()));
        env
    }

    /// The same, with this host's clock shifted by `skew` (`+10m`).
    pub fn with_var(mut self, key: &str, value: &str) -> Env {
        self.vars.push((key.into(), value.into()));
        self
    }

    /// The state root.
    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// A command for the binary with this root and a clean environment.
    pub fn command(&self) -> Command {
        let mut c = Command::new(bin());
        c.env("DSHQ_ROOT", self.root())
            .env_remove("DSHQ_LEASE")
            .env_remove("DSHQ_CLOCK_SKEW")
            .env_remove("DSHQ_AGENT_INSTANCE")
            .env_remove("DSHQ_STORE")
            // No config file but a test's own (`--config`): none of the machine's.
            .env_remove("DSHQ_CONFIG")
            .env("XDG_CONFIG_HOME", self.dir.path().join("config"))
            .env("RUST_LOG", "warn")
            .env("USER", "tester")
            .stdin(Stdio::null());
        for (k, v) in &self.vars {
            c.env(k, v);
        }
        c
    }

    /// Run with `args`.
    pub fn run(&self, args: &[&str]) -> Run {
        self.command().args(args).output().expect("run dshq").into()
    }

    /// Run with `--json` and `args`.
    pub fn json(&self, args: &[&str]) -> Run {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        self.run(&all)
    }

    /// The events of request `id` (`dshq events ID --json`), oldest first.
    pub fn events_of(&self, id: &str) -> Vec<Value> {
        self.json(&["events", id])
            .ok()
            .json()
            .as_array()
            .unwrap()
            .clone()
    }

    /// Wait until the `channel` delivery of `id`'s `kind` event is delivered (for a chat
    /// channel: its message sent and recorded, so a press of it is judged against the
    /// record).
    pub fn wait_delivered(&self, id: &str, channel: &str, kind: &str) {
        let done = || {
            let d = self.json(&["events", id, "--deliveries"]).ok().json();
            d.as_array().unwrap().iter().any(|r| {
                r["channel"] == channel && r["kind"] == kind && !r["deliveredMs"].is_null()
            })
        };
        assert!(
            wait_until(DEADLINE, done),
            "the {channel} delivery of {id}'s {kind} was not delivered"
        );
    }

    /// Run with extra environment variables.
    pub fn run_env(&self, env: &[(&str, &str)], args: &[&str]) -> Run {
        let mut c = self.command();
        for (k, v) in env {
            c.env(k, v);
        }
        c.args(args).output().expect("run dshq").into()
    }

    /// Run with `stdin` fed to the command.
    pub fn run_stdin(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn dshq");
        feed(&mut child, stdin);
        child.wait_with_output().expect("wait dshq").into()
    }

    /// Write `json` to a file and `dshq ask` it; returns the run.
    pub fn ask(&self, json: &Value) -> Run {
        let path = self.dir.path().join(format!("ask-{}.json", unique()));
        fs::write(&path, serde_json::to_vec(json).unwrap()).unwrap();
        self.json(&["ask", path.to_str().unwrap()])
    }

    /// Register a provider; returns its token.
    pub fn register(&self, name: &str, context: &str, ttl: &str) -> String {
        let r = self
            .json(&[
                "provider",
                "register",
                "--name",
                name,
                "--context",
                context,
                "--ttl",
                ttl,
            ])
            .ok();
        r.json()["lease"].as_str().unwrap().to_string()
    }

    /// Drop a request file into the inbox the way an asker should: write `tmp/`, fsync,
    /// rename into `new/`.
    pub fn drop_file(&self, name: &str, bytes: &[u8]) {
        drop_into(&self.root().join("inbox"), name, bytes);
    }

    /// Drop an answer file into `answers/new/`.
    pub fn drop_answer(&self, name: &str, bytes: &[u8]) {
        drop_into(&self.root().join("answers"), name, bytes);
    }

    /// The outcome document in the outcome file of `id`, parsed, if present: the file
    /// without its `receipt` extension (the dsh outcome every face returns; the receipt
    /// is tested on its own, `receipts.rs`, through [`Env::outcome_file`]).
    pub fn outcome(&self, id: &str) -> Option<Value> {
        let mut v = self.outcome_file(id)?;
        if let Some(o) = v.as_object_mut() {
            o.remove("receipt");
        }
        Some(v)
    }

    /// The outcome file of `id`, parsed whole (its receipt included), if present.
    pub fn outcome_file(&self, id: &str) -> Option<Value> {
        let p = self.root().join("outbox").join(format!("{id}.json"));
        let s = fs::read_to_string(p).ok()?;
        Some(serde_json::from_str(&s).expect("outcome files are whole JSON"))
    }

    /// Wait for the outcome file of `id`.
    pub fn wait_outcome(&self, id: &str) -> Value {
        let mut v = self.wait_outcome_file(id);
        if let Some(o) = v.as_object_mut() {
            o.remove("receipt");
        }
        v
    }

    /// The outcome file of `id`, parsed whole (its receipt included), once written.
    pub fn wait_outcome_file(&self, id: &str) -> Value {
        let mut found = None;
        assert!(
            wait_until(DEADLINE, || {
                found = self.outcome_file(id);
                found.is_some()
            }),
            "no outcome for {id} within {DEADLINE:?}"
        );
        found.unwrap()
    }

    /// Names in a directory under the root (ignoring dot files).
    pub fn names(&self, sub: &str) -> Vec<String> {
        let mut v: Vec<String> = match fs::read_dir(self.root().join(sub)) {
            Ok(rd) => rd
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect(),
            Err(_) => Vec::new(),
        };
        v.sort();
        v
    }

    /// Start the daemon and wait until it has created its layout and database.
    pub fn daemon(&self) -> Daemon {
        self.daemon_with(&[], &[])
    }

    /// Start the daemon with extra args and env.
    pub fn daemon_with(&self, args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let log = self.dir.path().join(format!("daemon-{}.log", unique()));
        let mut c = self.command();
        c.arg("daemon").args(args).env("RUST_LOG", "info");
        for (k, v) in env {
            c.env(k, v);
        }
        let child = c
            .stdout(Stdio::null())
            .stderr(fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn daemon");
        Daemon::started(child, log)
    }
}

/// Write `dir/tmp/name`, fsync, rename to `dir/new/name`.
pub fn drop_into(dir: &Path, name: &str, bytes: &[u8]) {
    fs::create_dir_all(dir.join("tmp")).unwrap();
    fs::create_dir_all(dir.join("new")).unwrap();
    let tmp = dir.join("tmp").join(name);
    let mut f = fs::File::create(&tmp).unwrap();
    f.write_all(bytes).unwrap();
    f.sync_all().unwrap();
    fs::rename(&tmp, dir.join("new").join(name)).unwrap();
}

/// A process-unique counter for file names.
pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// A running daemon; SIGKILLed on drop if still running.
pub struct Daemon {
    pub child: Option<Child>,
    pub log: PathBuf,
}

impl Daemon {
    /// The daemon `child` (its stderr going to `log`), once it says it started.
    pub fn started(child: Child, log: PathBuf) -> Daemon {
        let d = Daemon {
            child: Some(child),
            log,
        };
        assert!(
            wait_until(DEADLINE, || d.log_text().contains("daemon started")),
            "daemon did not start: {}",
            d.log_text()
        );
        d
    }

    /// The daemon's log so far.
    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The pid.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Send a signal.
    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe {
            libc::kill(self.pid() as i32, sig);
        }
    }

    /// SIGKILL and reap.
    pub fn kill9(mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then wait for a clean exit (status 0) within the deadline.
    pub fn stop(mut self) -> i32 {
        self.signal(libc::SIGTERM);
        let mut c = self.child.take().unwrap();
        let start = Instant::now();
        loop {
            if let Some(st) = c.try_wait().unwrap() {
                return st.code().unwrap_or(-1);
            }
            if start.elapsed() > DEADLINE {
                let _ = c.kill();
                panic!("daemon did not stop on SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A minimal valid request.
pub fn simple_request(id: &str) -> Value {
    serde_json::json!({
        "id": id,
        "questions": [{"id": "db", "question": "Which database?",
                       "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]
    })
}

/// The major version in what `node --version` prints (`v22.23.3` -> 22; 0 when unreadable).
pub fn node_major(version: &str) -> u32 {
    version
        .trim()
        .trim_start_matches('v')
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

/// One HTTP/1.1 request read from `reader` by the tests' small receivers (webhooks, the
/// Slack stand-in): its request line, its headers (names lowercased) and its body (by
/// `content-length`); `None` when the connection ends first.
pub fn read_http_request(
    reader: &mut impl std::io::BufRead,
) -> Option<(String, std::collections::HashMap<String, String>, Vec<u8>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let request_line = line.trim_end().to_string();
    let mut headers = std::collections::HashMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some((request_line, headers, body))
}

/// Write `stdin` to the child's piped stdin and close it. A command may stop reading
/// before the end (a size bound, a usage error) and exit: the rest of the input then meets
/// a closed pipe, which is the command's answer, not the test's failure.
pub fn feed(child: &mut std::process::Child, stdin: &str) {
    match child.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    }
}
