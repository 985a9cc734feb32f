//! A throwaway PostgreSQL server for the tests and the benchmarks: `initdb` into a
//! temporary directory, the server listening on a Unix socket in that directory only (no
//! TCP port), trust authentication for the one local user, and gone with the process that
//! started it.
//!
//! Why not a server the tests assume is running: `cargo test` must run the PostgreSQL
//! tests on any machine that has the PostgreSQL binaries, without setup, and a test that
//! restarts the server (the "bad days" test) must own the server it restarts. `.ci/run`
//! may still start one for the whole run and name it in [`ENV`]; then [`shared`] creates
//! its databases there instead of starting its own.
//!
//! PostgreSQL refuses to run as root. Run as root (a CI container), the directory is
//! handed to the `postgres` system user (else `nobody`) and the server programs run as
//! that user through `setpriv`; the tests, as root, still reach its socket.
//!
//! The server is started under a small `sh` wrapper that holds the read end of a pipe
//! whose write end only the starting process has: when that process ends, however it
//! ends (a panic, SIGKILL), the read returns and the wrapper stops the server and removes
//! the directory. No server outlives its test run.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use dshq::error::{Error, Result};

/// The environment variable naming a running server (a `postgres://` URL of a role that
/// may create databases) for [`shared`] to use instead of starting one.
pub const ENV: &str = "DSHQ_TEST_POSTGRES";

/// A PostgreSQL server this process started (or, from [`ENV`], one it was given).
#[derive(Debug)]
pub struct Server {
    /// The temporary directory (data in `data/`, the socket in the directory itself).
    pub(crate) dir: Option<PathBuf>,
    /// The wrapper holding the server; its stdin closing stops the server.
    wrapper: Option<(Child, ChildStdin)>,
    /// The URL of the maintenance database (`postgres`).
    admin: String,
    bin: PathBuf,
    /// The user the server runs as when this process is root.
    runas: Option<(u32, u32)>,
    /// More `postgres` arguments (each one word) after the defaults, which they override.
    args: Vec<String>,
    /// The TCP port on 127.0.0.1 ([`Server::start_tcp`]), else no TCP at all.
    port: Option<u16>,
}

/// The (uid, gid) to run the server as: `None` unless this process is root.
fn run_as() -> Result<Option<(u32, u32)>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    for name in [c"postgres", c"nobody"] {
        // SAFETY: getpwnam with a valid C string; the result is read at once (tests only
        // call this from one thread at a time through `shared`'s OnceLock or a test body).
        let pw = unsafe { libc::getpwnam(name.as_ptr()) };
        if !pw.is_null() {
            // SAFETY: non-null, points at libc's static passwd entry.
            let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
            return Ok(Some((uid, gid)));
        }
    }
    Err(io(
        "postgresql",
        "running as root and there is no `postgres` or `nobody` user to run the server as",
    ))
}

/// A command that runs `program` as `runas` (through `setpriv`) when given.
fn as_user(runas: Option<(u32, u32)>, program: &Path) -> Command {
    match runas {
        None => Command::new(program),
        Some((uid, gid)) => {
            let mut c = Command::new("setpriv");
            c.arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups")
                .arg("--")
                .arg(program);
            c
        }
    }
}

fn io(what: &str, e: impl std::fmt::Display) -> Error {
    Error::io(what, std::io::Error::other(e.to_string()))
}

/// Where the PostgreSQL server binaries are: `pg_config --bindir`, else the newest
/// `/usr/lib/postgresql/N/bin`, else the directory of `initdb` on `PATH`.
pub fn bindir() -> Result<PathBuf> {
    let has = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has(&d) {
            return Ok(d);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has(d))
        .collect();
    versions.sort();
    if let Some((_, d)) = versions.pop() {
        return Ok(d);
    }
    for d in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        if has(&d) {
            return Ok(d);
        }
    }
    Err(io(
        "postgresql",
        "no PostgreSQL server binaries (initdb, postgres) found: install the `postgresql` \
         package, or name a running server in DSHQ_TEST_POSTGRES",
    ))
}

impl Server {
    /// Start a new server in a new temporary directory and wait until it accepts
    /// connections.
    pub fn start() -> Result<Server> {
        Server::start_with(Vec::new(), None)
    }

    /// Like [`Server::start`], also listening on 127.0.0.1 at a free TCP port (the TLS
    /// tests), which the URLs then name (`port=`; the socket's name carries it too). See
    /// [`Server::tcp_port`].
    pub fn start_tcp() -> Result<Server> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| io("a free TCP port", e))?
            .port();
        let args = [
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            &format!("port={port}"),
        ];
        Server::start_with(args.iter().map(|a| a.to_string()).collect(), Some(port))
    }

    /// The TCP port on 127.0.0.1 of a server from [`Server::start_tcp`].
    pub fn tcp_port(&self) -> Option<u16> {
        self.port
    }

    fn start_with(args: Vec<String>, port: Option<u16>) -> Result<Server> {
        let bin = bindir()?;
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "dshq-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let runas = run_as()?;
        if let Some((uid, gid)) = runas {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| Error::io(&dir, e))?;
        }
        let out = as_user(runas, &bin.join("initdb"))
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .arg("--no-instructions")
            .arg("-D")
            .arg(dir.join("data"))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| io("initdb", e))?;
        if !out.status.success() {
            let _ = std::fs::remove_dir_all(&dir);
            return Err(io(
                "initdb",
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        // The socket only (no host name before it): a URL that named `localhost` and
        // `?host=DIR` would try TCP on localhost first, and could reach another server.
        let mut admin = format!("postgresql://postgres@/postgres?host={}", dir.display());
        if let Some(port) = port {
            admin.push_str(&format!("&port={port}"));
        }
        let mut server = Server {
            dir: Some(dir),
            wrapper: None,
            admin,
            bin,
            runas,
            args,
            port,
        };
        server.run()?;
        Ok(server)
    }

    /// A server someone else runs, by the URL of a role that may create databases.
    pub fn external(url: &str) -> Server {
        Server {
            dir: None,
            wrapper: None,
            admin: url.to_string(),
            bin: PathBuf::new(),
            runas: None,
            args: Vec::new(),
            port: None,
        }
    }

    /// Start (again) the server process on this server's directory.
    fn run(&mut self) -> Result<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        // The wrapper: start the server, wait for our pipe to close (we stopped it, or
        // this process ended), then a fast shutdown; `rm` only when told to on stdin.
        let prefix = match self.runas {
            Some((uid, gid)) => format!("setpriv --reuid={uid} --regid={gid} --clear-groups -- "),
            None => String::new(),
        };
        let script = r#"
            $PREFIX "$1/postgres" -D "$2/data" -k "$2" -c listen_addresses='' -c max_connections=200 $EXTRA \
                >>"$2/server.log" 2>&1 &
            pid=$!
            read -r what
            kill -INT "$pid" 2>/dev/null
            wait "$pid"
            if [ "$what" != keep ]; then rm -rf "$2"; fi
        "#;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("sh")
            .arg(&self.bin)
            .arg(dir)
            .env("PREFIX", prefix)
            .env("EXTRA", self.args.join(" "))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| io("postgres", e))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| io("postgres", "no stdin"))?;
        self.wrapper = Some((child, stdin));
        self.wait_ready(Duration::from_secs(60))
    }

    fn wait_ready(&self, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        loop {
            match postgres::Client::connect(&self.admin, postgres::NoTls) {
                Ok(_) => return Ok(()),
                Err(e) if Instant::now() > deadline => {
                    return Err(io("postgres did not start", e));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Stop the server (a fast shutdown), keeping its data for [`Server::restart`].
    pub fn stop(&mut self) -> Result<()> {
        if let Some((mut child, mut stdin)) = self.wrapper.take() {
            let _ = stdin.write_all(b"keep\n");
            drop(stdin);
            child.wait().map_err(|e| io("postgres", e))?;
        }
        Ok(())
    }

    /// Start the server again after [`Server::stop`], on the same data.
    pub fn resume(&mut self) -> Result<()> {
        if self.wrapper.is_some() {
            return Ok(());
        }
        self.run()
    }

    /// Stop the server and start it again on the same data.
    pub fn restart(&mut self) -> Result<()> {
        self.stop()?;
        self.run()
    }

    /// The URL of the maintenance database.
    pub fn admin_url(&self) -> &str {
        &self.admin
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        match self.admin.split_once('?') {
            Some((base, query)) => format!("{}/{name}?{query}", base_without_db(base)),
            None => format!("{}/{name}", base_without_db(&self.admin)),
        }
    }

    /// Create a new empty database and return its URL.
    pub fn fresh_database(&self) -> Result<String> {
        static N: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "dshq_test_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        let mut c = postgres::Client::connect(&self.admin, postgres::NoTls)
            .map_err(|e| io("postgres", e))?;
        c.batch_execute(&format!("CREATE DATABASE {name}"))
            .map_err(|e| io("create database", e))?;
        Ok(self.url(&name))
    }
}

fn base_without_db(base: &str) -> &str {
    // `postgresql://user@host/db` → `postgresql://user@host`.
    let after_scheme = base.find("://").map(|i| i + 3).unwrap_or(0);
    match base[after_scheme..].find('/') {
        Some(i) => &base[..after_scheme + i],
        None => base,
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.wrapper.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// The server shared by this test process: the one [`ENV`] names, else one started on
/// first use (stopped when the process ends).
pub fn shared() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| match std::env::var(ENV) {
        Ok(url) if !url.is_empty() => Server::external(&url),
        _ => Server::start().expect("start a throwaway PostgreSQL server"),
    })
}
