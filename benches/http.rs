//! Benchmarks of the HTTP host (issue 14): the real release daemon with `--listen`, real
//! tokens, real loopback sockets.
//!
//! `cargo bench --bench http` (add `-- --help` for the knobs). Compare ratios measured in
//! one run: the machine is shared and noisy.
//!
//! Workloads:
//! 1. HTTP ask -> committed at idle: `POST /api/v1/requests` until its 201 (the host
//!    answers after the commit), over one keep-alive connection; then every asked id is
//!    looked up in the store and a sample with `dshq show`.
//! 2. A dropped inbox file -> its `accepted` event read by a client of `/api/v1/stream`
//!    (from the rename to the `data:` line read off the socket).
//! 3. Long-poll waiters: W pending requests, each waited on by its own TCP connection
//!    (`GET .../outcome?wait=300s`), all held open at once; the daemon's RSS and sockets
//!    before and while they are held; then each is answered over the API and its waiter
//!    must be woken with that outcome (answer -> woken latency).
//! 4. The inbox burst (N files renamed into `inbox/new/` at once, until all are committed)
//!    without waiters and with the W waiters held open, alternating in one run; the ratio
//!    is the figure (bar: waiters slow the burst by at most 10%).
//!
//! 5. `--metrics-cost` (alone): the cost of `--metrics` (issue 27). Two hosts, one with
//!    `--metrics` and scraped every second (more often than Prometheus' default 15 s),
//!    one without; alternating rounds of the inbox burst (N files) and an HTTP burst (4
//!    clients asking `--samples` requests each over keep-alive connections), each timed
//!    until all are committed. The ratio of medians is the figure (within noise: 1.0).
//!
//! Next to the wall times, the daemon's CPU ticks per burst (`/proc/PID/stat`): on a shared
//! machine they are the steadier measure of what the waiters cost. `DSHQ_BENCH_BIN=PATH`
//! runs another build of `dshq` (to compare two builds in one sitting).
//!
//! The daemon is started with a soft open-file limit of 1024 (`--daemon-nofile`), the
//! common default: W connections plus its own files go past it, so the host must raise
//! its own limit. The bench raises its own soft limit to the hard one.

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BUILT: &str = env!("CARGO_BIN_EXE_dshq");

/// The binary under test: the one cargo built, or `DSHQ_BENCH_BIN` (to compare builds in
/// one sitting).
fn bin() -> String {
    std::env::var("DSHQ_BENCH_BIN").unwrap_or_else(|_| BUILT.to_string())
}
/// How long any one wait of the bench may take before it fails.
const DEADLINE: Duration = Duration::from_secs(60);

struct Opts {
    samples: usize,
    files: usize,
    rounds: usize,
    waiters: usize,
    daemon_nofile: u64,
    metrics_cost: bool,
}

fn opts() -> Opts {
    let mut o = Opts {
        samples: 200,
        files: 10_000,
        rounds: 4,
        waiters: 1_000,
        daemon_nofile: 1024,
        metrics_cost: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = || args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--samples" => o.samples = val().parse().expect("--samples N"),
            "--files" => o.files = val().parse().expect("--files N"),
            "--rounds" => o.rounds = val().parse().expect("--rounds N"),
            "--waiters" => o.waiters = val().parse().expect("--waiters N"),
            "--daemon-nofile" => o.daemon_nofile = val().parse().expect("--daemon-nofile N"),
            "--metrics-cost" => {
                o.metrics_cost = true;
                i += 1;
                continue;
            }
            "--help" => {
                println!("http bench: --samples N (200) --files N (10000, burst size) --rounds N (4, bursts of each kind) --waiters N (1000) --daemon-nofile N (1024, the daemon's soft open-file limit at spawn; 0 = inherit) --metrics-cost (only workload 5: --files and --samples per burst, --rounds). DSHQ_BENCH_BIN=PATH runs another build of dshq");
                std::process::exit(0);
            }
            // cargo bench passes --bench; ignore anything unknown.
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

fn request_json(id: &str) -> String {
    format!(
        r#"{{"id":"{id}","context":"default","questions":[{{"id":"db","header":"Storage","question":"Which database should service {id} use?","options":[{{"label":"Postgres","description":"managed"}},{{"label":"SQLite","description":"one file"}}]}}],"timeout":"8h","meta":{{"ticket":"OPS-{id}"}}}}"#
    )
}

/// Wait for `done` with a deadline, looking every `every`.
fn wait_until(what: &str, every: Duration, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < DEADLINE, "timed out waiting: {what}");
        std::thread::sleep(every);
    }
}

/// Raise this process's soft open-file limit to the hard one: (soft, hard) after.
fn raise_own_nofile() -> (libc::rlim_t, libc::rlim_t) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on a struct we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        if lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
        }
    }
    (lim.rlim_cur, lim.rlim_max)
}

/// The daemon, its log, its address; killed on drop.
struct Host {
    child: Child,
    log: PathBuf,
    addr: String,
    root: PathBuf,
    asker: String,
    reviewer: String,
    _dir: tempfile::TempDir,
}

impl Drop for Host {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let log = self.log_text();
            let tail: Vec<&str> = log.lines().rev().take(30).collect();
            let status = self.child.try_wait().ok().flatten();
            eprintln!(
                "daemon exit status: {status:?}; the last lines of its log:\n{}",
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            );
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn dshq(root: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(bin())
        .arg("--json")
        .args(args)
        .env("DSHQ_ROOT", root)
        .env("RUST_LOG", "error")
        .output()
        .expect("run dshq");
    assert!(
        out.status.success(),
        "dshq {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("dshq --json prints JSON")
}

fn start_host(nofile: u64, extra: &[&str]) -> Host {
    let dir = tempfile::Builder::new()
        .prefix("dshq-bench-http-")
        .tempdir()
        .unwrap();
    let root = dir.path().join("root");
    for d in [
        "inbox/tmp",
        "inbox/new",
        "outbox",
        "answers/tmp",
        "answers/new",
    ] {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    let token = |role: &str, name: &str| {
        dshq(&root, &["token", "create", "--role", role, "--name", name])["token"]
            .as_str()
            .expect("a token")
            .to_string()
    };
    let asker = token("asker", "bench-asker");
    let reviewer = token("reviewer", "bench-rita");
    let log = dir.path().join("daemon.log");
    let mut cmd = Command::new(bin());
    cmd.args(["daemon", "--listen", "127.0.0.1:0"])
        .args(extra)
        .env("DSHQ_ROOT", &root)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap());
    if nofile > 0 {
        // SAFETY: only setrlimit (async-signal-safe) between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                let mut lim = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                lim.rlim_cur = nofile.min(lim.rlim_max);
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let child = cmd.spawn().expect("spawn the daemon");
    let mut addr = String::new();
    wait_until(
        "the daemon's address in its log",
        Duration::from_millis(5),
        || {
            let text = fs::read_to_string(&log).unwrap_or_default();
            match text.split("listening on http://").nth(1) {
                Some(rest) => {
                    addr = rest.split_whitespace().next().unwrap_or("").to_string();
                    !addr.is_empty()
                }
                None => false,
            }
        },
    );
    Host {
        child,
        log,
        addr,
        root,
        asker,
        reviewer,
        _dir: dir,
    }
}

impl Host {
    fn pid(&self) -> u32 {
        self.child.id()
    }
    fn url(&self, path: &str) -> String {
        format!("http://{}/api/v1{path}", self.addr)
    }
    fn db(&self) -> rusqlite::Connection {
        rusqlite::Connection::open_with_flags(
            self.root.join("dshq.db"),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open the store read-only")
    }
    fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }
}

fn count(conn: &rusqlite::Connection) -> usize {
    conn.query_row(
        "SELECT COUNT(*) FROM requests WHERE status <> 'rejected'",
        [],
        |r| r.get::<_, i64>(0),
    )
    .unwrap_or(0) as usize
}

fn proc_status(pid: u32, key: &str) -> u64 {
    let s = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The soft open-file limit of a process, from `/proc/PID/limits`.
fn proc_nofile(pid: u32) -> String {
    let s = fs::read_to_string(format!("/proc/{pid}/limits")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .unwrap_or("?")
        .to_string()
}

fn cpu_ticks(pid: u32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

/// How many sockets the process has open.
fn sockets(pid: u32) -> usize {
    fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    fs::read_link(e.path())
                        .map(|l| l.to_string_lossy().starts_with("socket:"))
                        .unwrap_or(false)
                })
                .count()
        })
        .unwrap_or(0)
}

/// Wait until the daemon has used no CPU for 300 ms (its handlers are all parked).
fn wait_quiet(pid: u32) {
    let mut last = cpu_ticks(pid);
    let mut still = 0;
    wait_until("the daemon to go quiet", Duration::from_millis(100), || {
        let now = cpu_ticks(pid);
        still = if now == last { still + 1 } else { 0 };
        last = now;
        still >= 3
    });
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

fn summary(name: &str, mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let (p50, p99) = (pct(&v, 50.0), pct(&v, 99.0));
    println!(
        "{name:<40} n={:<4} p50={p50:7.2} ms  p90={:7.2} ms  p99={p99:7.2} ms  min={:6.2}  max={:7.2}",
        v.len(),
        pct(&v, 90.0),
        v[0],
        v[v.len() - 1]
    );
    (p50, p99)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    if v.is_empty() {
        return f64::NAN;
    }
    let m = v.len() / 2;
    if v.len().is_multiple_of(2) {
        (v[m - 1] + v[m]) / 2.0
    } else {
        v[m]
    }
}

fn ok(b: bool) -> &'static str {
    if b {
        "met"
    } else {
        "MISSED"
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(60))
        .build()
}

/// `POST /api/v1/requests` as the asker: the status.
fn ask(agent: &ureq::Agent, h: &Host, id: &str) -> u16 {
    let r = agent
        .post(&h.url("/requests"))
        .set("Authorization", &format!("Bearer {}", h.asker))
        .set("Content-Type", "application/json")
        .send_string(&request_json(id));
    match r {
        Ok(r) => r.status(),
        Err(ureq::Error::Status(s, r)) => {
            panic!("ask {id}: {s} {}", r.into_string().unwrap_or_default())
        }
        Err(e) => panic!("ask {id}: {e}"),
    }
}

/// Workload 1: HTTP ask -> committed.
fn ask_latency(h: &Host, samples: usize) {
    let agent = agent();
    for i in 0..5 {
        assert_eq!(ask(&agent, h, &format!("warm{i}")), 201);
    }
    let mut ms = Vec::with_capacity(samples);
    let ids: Vec<String> = (0..samples).map(|i| format!("h{i:05}")).collect();
    for id in &ids {
        let t = Instant::now();
        let status = ask(&agent, h, id);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(status, 201, "{id} is new: 201 Created");
    }
    // Really in the store: every id, pending, from the asker's token.
    let conn = h.db();
    let mut st = conn
        .prepare("SELECT status, source FROM requests WHERE id = ?1")
        .unwrap();
    for id in &ids {
        let (status, source): (String, String) = st
            .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap_or_else(|e| panic!("{id} is not in the store: {e}"));
        assert_eq!(status, "pending", "{id}");
        assert_eq!(source, "web:bench-asker", "{id}");
    }
    for id in [&ids[0], &ids[ids.len() - 1]] {
        let shown = dshq(&h.root, &["show", id]);
        assert_eq!(shown["status"], "pending", "dshq show {id}: {shown}");
    }
    let (p50, p99) = summary("HTTP ask -> committed (201)", ms);
    println!("  all {samples} asked ids found pending in the store (and `dshq show` agrees)");
    println!("  p50 {p50:.2} ms, p99 {p99:.2} ms");
}

/// What the stream reader hands back: the event name, the request id in its data (or
/// the number missed, for `lagged`), and when the data line was read.
struct Seen {
    event: String,
    id: String,
    missed: usize,
    at: Instant,
}

/// Open `/api/v1/stream` as the reviewer and read it on a thread.
fn open_stream(h: &Host) -> mpsc::Receiver<Seen> {
    let (tx, rx) = mpsc::channel();
    let url = h.url("/stream");
    let token = h.reviewer.clone();
    std::thread::spawn(move || {
        let resp = ureq::get(&url)
            .set("Authorization", &format!("Bearer {token}"))
            .call()
            .expect("the stream opens");
        assert_eq!(resp.content_type(), "text/event-stream");
        let mut event = String::new();
        for line in BufReader::new(resp.into_reader()).lines() {
            let Ok(line) = line else { return };
            if let Some(e) = line.strip_prefix("event: ") {
                event = e.to_string();
            } else if let Some(d) = line.strip_prefix("data: ") {
                let at = Instant::now();
                let v: serde_json::Value = serde_json::from_str(d).unwrap_or_default();
                let seen = Seen {
                    event: std::mem::take(&mut event),
                    id: v["id"].as_str().unwrap_or("").to_string(),
                    missed: v["missed"].as_u64().unwrap_or(0) as usize,
                    at,
                };
                if tx.send(seen).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// Write `inbox/tmp/NAME` and rename it into `inbox/new/`: the rename's instant.
fn drop_file(root: &Path, id: &str) -> Instant {
    let name = format!("{id}.json");
    let tmp = root.join("inbox/tmp").join(&name);
    fs::File::create(&tmp)
        .unwrap()
        .write_all(request_json(id).as_bytes())
        .unwrap();
    let t = Instant::now();
    fs::rename(&tmp, root.join("inbox/new").join(&name)).unwrap();
    t
}

/// The `accepted` event of `id` on the stream.
fn accepted_event(rx: &mpsc::Receiver<Seen>, id: &str) -> Instant {
    let start = Instant::now();
    loop {
        let left = DEADLINE.saturating_sub(start.elapsed());
        let s = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no accepted event for {id} on the stream"));
        if s.event == "accepted" && s.id == id {
            return s.at;
        }
    }
}

/// Workload 2: a dropped file -> the stream's `accepted` event.
fn stream_latency(h: &Host, rx: &mpsc::Receiver<Seen>, samples: usize) {
    // The stream is open once a warm-up drop shows on it.
    drop_file(&h.root, "swarm");
    accepted_event(rx, "swarm");
    let mut ms = Vec::with_capacity(samples);
    for i in 0..samples {
        let id = format!("s{i:05}");
        while rx.try_recv().is_ok() {}
        let t = drop_file(&h.root, &id);
        let at = accepted_event(rx, &id);
        ms.push(at.duration_since(t).as_secs_f64() * 1e3);
    }
    summary("dropped file -> stream `accepted`", ms);
}

/// A long-poll waiter: its own TCP connection with the request sent.
struct Waiter {
    id: String,
    sock: TcpStream,
}

fn open_waiter(h: &Host, id: &str) -> Waiter {
    let mut sock = TcpStream::connect(&h.addr).expect("connect a waiter");
    write!(
        sock,
        "GET /api/v1/requests/{id}/outcome?wait=300s HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        h.addr, h.reviewer
    )
    .expect("send a waiter's request");
    Waiter {
        id: id.to_string(),
        sock,
    }
}

impl Waiter {
    /// Whether nothing has come back yet.
    fn silent(&self) -> bool {
        self.sock.set_nonblocking(true).unwrap();
        let r = self.sock.peek(&mut [0u8; 1]);
        self.sock.set_nonblocking(false).unwrap();
        matches!(r, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }

    /// The response: status and JSON body (the server closes after it).
    fn response(mut self) -> (u16, serde_json::Value) {
        self.sock.set_read_timeout(Some(DEADLINE)).unwrap();
        let mut raw = Vec::new();
        self.sock
            .read_to_end(&mut raw)
            .unwrap_or_else(|e| panic!("waiter {}: {e}", self.id));
        let text = String::from_utf8_lossy(&raw);
        let status = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .and_then(|(_, b)| serde_json::from_str(b).ok())
            .unwrap_or_default();
        (status, body)
    }
}

/// RSS and sockets of the daemon before and with the waiters held.
struct Held {
    rss_before_kb: u64,
    rss_held_kb: u64,
    sockets_before: usize,
    sockets_held: usize,
    open_s: f64,
}

/// Workload 3: open a waiter on each of `ids` (pending requests), wait until all are held
/// (accepted by the daemon, no response, the daemon quiet).
fn hold_waiters(h: &Host, ids: &[String]) -> (Vec<Waiter>, Held) {
    let pid = h.pid();
    let n = ids.len();
    wait_quiet(pid);
    let rss_before_kb = proc_status(pid, "VmRSS:");
    let sockets_before = sockets(pid);
    let t = Instant::now();
    let waiters: Vec<Waiter> = ids.iter().map(|id| open_waiter(h, id)).collect();
    wait_until(
        "the daemon to accept every waiter",
        Duration::from_millis(10),
        || sockets(pid) >= sockets_before + n,
    );
    wait_quiet(pid);
    let open_s = t.elapsed().as_secs_f64();
    let silent = waiters.iter().filter(|w| w.silent()).count();
    assert_eq!(
        silent, n,
        "every waiter is still waiting (no early response)"
    );
    let held = Held {
        rss_before_kb,
        rss_held_kb: proc_status(pid, "VmRSS:"),
        sockets_before,
        sockets_held: sockets(pid),
        open_s,
    };
    (waiters, held)
}

/// Hang up every waiter (none may have had a response) and wait until the daemon has
/// closed their connections and gone quiet: their handlers are gone.
fn drop_waiters(h: &Host, waiters: Vec<Waiter>, held: &Held) {
    let silent = waiters.iter().filter(|w| w.silent()).count();
    assert_eq!(
        silent,
        waiters.len(),
        "no waiter had a response before its request was answered"
    );
    drop(waiters);
    wait_until(
        "the daemon to close the waiters' connections",
        Duration::from_millis(10),
        || sockets(h.pid()) <= held.sockets_before,
    );
    wait_quiet(h.pid());
}

/// Answer each waiter's request over the API; each waiter must get that outcome. The
/// answer -> woken latencies (from sending the answer to the waiter's response read).
fn answer_waiters(h: &Host, agent: &ureq::Agent, waiters: Vec<Waiter>) -> Vec<f64> {
    let n = waiters.len();
    assert!(
        waiters.iter().all(|w| w.silent()),
        "no waiter answered before its request was"
    );
    let mut ms = Vec::with_capacity(n);
    for w in waiters {
        let id = w.id.clone();
        let t = Instant::now();
        let r = agent
            .post(&h.url(&format!("/requests/{id}/answer")))
            .set("Authorization", &format!("Bearer {}", h.reviewer))
            .set("Content-Type", "application/json")
            .send_string(r#"{"answers":[{"id":"db","selected":["SQLite"]}]}"#)
            .unwrap_or_else(|e| panic!("answer {id}: {e}"));
        assert_eq!(r.status(), 200, "answer {id}");
        let (status, body) = w.response();
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(status, 200, "waiter {id}: {body}");
        assert_eq!(body["id"], id.as_str(), "waiter {id} got its own outcome");
        assert_eq!(body["status"], "answered", "waiter {id}: {body}");
        assert_eq!(
            body["answer"]["answers"][0]["selected"][0], "SQLite",
            "waiter {id}: {body}"
        );
    }
    ms
}

/// Workload 4: N files renamed into the inbox at once: seconds until all are committed,
/// and until the stream has carried all of them (accepted events, or counted as missed).
fn burst(h: &Host, rx: &mpsc::Receiver<Seen>, prefix: &str, n: usize) -> Burst {
    let conn = h.db();
    let before = count(&conn);
    let tmp = h.root.join("inbox/tmp");
    let new = h.root.join("inbox/new");
    let names: Vec<String> = (0..n).map(|i| format!("{prefix}{i:06}.json")).collect();
    for (i, name) in names.iter().enumerate() {
        fs::write(tmp.join(name), request_json(&format!("{prefix}{i:06}"))).unwrap();
    }
    while rx.try_recv().is_ok() {}
    let cpu0 = cpu_ticks(h.pid());
    let start = Instant::now();
    for name in &names {
        fs::rename(tmp.join(name), new.join(name)).unwrap();
    }
    let mut streamed = 0;
    let mut streamed_at = None;
    let take = |streamed: &mut usize, streamed_at: &mut Option<Instant>| {
        while let Ok(s) = rx.try_recv() {
            match s.event.as_str() {
                "accepted" if s.id.starts_with(prefix) => *streamed += 1,
                "lagged" => *streamed += s.missed,
                _ => {}
            }
            if *streamed >= n && streamed_at.is_none() {
                *streamed_at = Some(s.at);
            }
        }
    };
    while count(&conn) < before + n {
        take(&mut streamed, &mut streamed_at);
        assert!(start.elapsed() < DEADLINE, "the burst was not committed");
        std::thread::sleep(Duration::from_millis(2));
    }
    let committed = start.elapsed().as_secs_f64();
    let cpu_committed = cpu_ticks(h.pid()) - cpu0;
    wait_until(
        "the stream to carry the burst",
        Duration::from_millis(2),
        || {
            take(&mut streamed, &mut streamed_at);
            streamed_at.is_some()
        },
    );
    let on_stream = streamed_at.unwrap().duration_since(start).as_secs_f64();
    wait_quiet(h.pid());
    Burst {
        committed,
        on_stream,
        cpu_committed,
        cpu_total: cpu_ticks(h.pid()) - cpu0,
    }
}

/// One burst: seconds until committed and until on the stream; the daemon's CPU ticks
/// (1/100 s) until committed and until quiet again (the fan-out to waiters included).
struct Burst {
    committed: f64,
    on_stream: f64,
    cpu_committed: u64,
    cpu_total: u64,
}

fn main() {
    let o = opts();
    let (soft, hard) = raise_own_nofile();
    println!(
        "dshq http bench: {} cores, release build, samples {}, burst {} files x {} rounds, {} waiters; bench open-file limit {soft} (hard {hard})",
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(0),
        o.samples,
        o.files,
        o.rounds,
        o.waiters
    );
    if o.metrics_cost {
        metrics_cost(&o);
        return;
    }
    let h = start_host(o.daemon_nofile, &[]);
    println!(
        "daemon pid {} on {}: spawned with soft open-file limit {}, runs with {}",
        h.pid(),
        h.addr,
        if o.daemon_nofile > 0 {
            o.daemon_nofile.to_string()
        } else {
            "inherited".into()
        },
        proc_nofile(h.pid())
    );
    let rx = open_stream(&h);

    if o.samples > 0 {
        ask_latency(&h, o.samples);
        stream_latency(&h, &rx, o.samples);
    }

    if o.waiters == 0 {
        return;
    }
    let agent = agent();
    // The waiters' requests, asked once: every round holds a waiter on each.
    let ids: Vec<String> = (0..o.waiters).map(|i| format!("w{i:05}")).collect();
    for id in &ids {
        assert_eq!(ask(&agent, &h, id), 201);
    }
    // A warm-up burst, not counted.
    if o.rounds > 0 {
        burst(&h, &rx, "bwarm", o.files);
    }
    let (mut without, mut with) = (Vec::new(), Vec::new());
    let (mut without_s, mut with_s) = (Vec::new(), Vec::new());
    let (mut without_cpu, mut with_cpu) = (Vec::new(), Vec::new());
    let mut helds = Vec::new();
    for round in 0..o.rounds {
        // Alternate which kind goes first, so a drift of the machine hits both alike.
        let order: [bool; 2] = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for waiting in order {
            if waiting {
                let (waiters, held) = hold_waiters(&h, &ids);
                let b = burst(&h, &rx, &format!("bw{round}x"), o.files);
                let (c, s) = (b.committed, b.on_stream);
                with.push(c);
                with_s.push(s);
                with_cpu.push((b.cpu_committed as f64, b.cpu_total as f64));
                let rss_after_kb = proc_status(h.pid(), "VmRSS:");
                drop_waiters(&h, waiters, &held);
                println!(
                    "round {round}: with {} waiters (held in {:.2} s; daemon RSS {:.1} -> {:.1} MB, {:.1} after the burst; sockets {} -> {}): burst {c:.3} s, on the stream {s:.3} s; daemon CPU {} / {} ticks",
                    o.waiters,
                    held.open_s,
                    held.rss_before_kb as f64 / 1024.0,
                    held.rss_held_kb as f64 / 1024.0,
                    rss_after_kb as f64 / 1024.0,
                    held.sockets_before,
                    held.sockets_held,
                    b.cpu_committed,
                    b.cpu_total,
                );
                helds.push(held);
            } else {
                let b = burst(&h, &rx, &format!("bn{round}x"), o.files);
                let (c, s) = (b.committed, b.on_stream);
                without.push(c);
                without_s.push(s);
                without_cpu.push((b.cpu_committed as f64, b.cpu_total as f64));
                println!(
                    "round {round}: no waiters: burst {c:.3} s, on the stream {s:.3} s; daemon CPU {} / {} ticks",
                    b.cpu_committed, b.cpu_total
                );
            }
        }
    }
    // Last: hold them once more and answer each; its waiter must wake with the outcome.
    let (waiters, held) = hold_waiters(&h, &ids);
    println!(
        "{} waiters held at once (in {:.2} s): daemon RSS {:.1} MB before, {:.1} MB while held (+{:.1} KB per waiter); daemon sockets {} -> {}; open-file limit {}",
        o.waiters,
        held.open_s,
        held.rss_before_kb as f64 / 1024.0,
        held.rss_held_kb as f64 / 1024.0,
        (held.rss_held_kb as f64 - held.rss_before_kb as f64) / o.waiters as f64,
        held.sockets_before,
        held.sockets_held,
        proc_nofile(h.pid())
    );
    helds.push(held);
    let wake_ms = answer_waiters(&h, &agent, waiters);
    println!(
        "  all {} waiters woken, each with its own answered outcome",
        o.waiters
    );
    summary("answer over HTTP -> its waiter woken", wake_ms);
    if o.rounds == 0 {
        return;
    }
    let deltas: Vec<f64> = helds
        .iter()
        .map(|x| (x.rss_held_kb as f64 - x.rss_before_kb as f64) / o.waiters as f64)
        .collect();
    println!(
        "daemon RSS added by holding {} waiters, median over {} holds: {:.1} KB per waiter (first hold {:.1}); peak (VmHWM, the bursts included) {:.1} MB",
        o.waiters,
        helds.len(),
        median(&deltas),
        deltas[0],
        proc_status(h.pid(), "VmHWM:") as f64 / 1024.0
    );
    let (a, b) = (median(&without), median(&with));
    let ratio = b / a;
    let pair_ratios: Vec<f64> = without.iter().zip(&with).map(|(x, y)| y / x).collect();
    let pairs: Vec<String> = pair_ratios.iter().map(|r| format!("{r:.3}")).collect();
    println!(
        "burst of {} files until committed: median {:.3} s without waiters ({:.0} files/s), {:.3} s with {} ({:.0} files/s); ratio of medians {ratio:.3}, median of the rounds' ratios {:.3} (per round {}); bar <= 1.10: {}",
        o.files,
        a,
        o.files as f64 / a,
        b,
        o.waiters,
        o.files as f64 / b,
        median(&pair_ratios),
        pairs.join(", "),
        ok(ratio <= 1.10 && median(&pair_ratios) <= 1.10)
    );
    let (sa, sb) = (median(&without_s), median(&with_s));
    println!(
        "burst until all on the stream: median {sa:.3} s without waiters, {sb:.3} s with; ratio {:.3}",
        sb / sa
    );
    let cpu = |v: &[(f64, f64)], total: bool| {
        median(
            &v.iter()
                .map(|c| if total { c.1 } else { c.0 })
                .collect::<Vec<_>>(),
        )
    };
    println!(
        "daemon CPU per burst (ticks of 10 ms, medians): until committed {:.0} without waiters, {:.0} with (ratio {:.3}); until quiet again {:.0} / {:.0} (ratio {:.3})",
        cpu(&without_cpu, false),
        cpu(&with_cpu, false),
        cpu(&with_cpu, false) / cpu(&without_cpu, false),
        cpu(&without_cpu, true),
        cpu(&with_cpu, true),
        cpu(&with_cpu, true) / cpu(&without_cpu, true)
    );
    let errors = h
        .log_text()
        .lines()
        .filter(|l| l.contains("ERROR") || l.contains("WARN"))
        .take(5)
        .collect::<Vec<_>>()
        .join("\n");
    if !errors.is_empty() {
        println!("daemon log warnings/errors:\n{errors}");
    }
}

/// An HTTP burst: 4 clients ask `per_client` requests each at once; seconds until every
/// 201 came back (each 201 is sent after its commit).
fn http_burst(h: &Host, prefix: &str, per_client: usize) -> f64 {
    let start = Instant::now();
    std::thread::scope(|scope| {
        for c in 0..4 {
            scope.spawn(move || {
                let agent = agent();
                for i in 0..per_client {
                    assert_eq!(ask(&agent, h, &format!("{prefix}c{c}-{i:05}")), 201);
                }
            });
        }
    });
    start.elapsed().as_secs_f64()
}

/// Workload 5: the inbox burst and the HTTP burst with and without `--metrics`.
fn metrics_cost(o: &Opts) {
    let plain = start_host(o.daemon_nofile, &[]);
    let metered = start_host(o.daemon_nofile, &["--metrics", "127.0.0.1:0"]);
    let metrics_addr = {
        let mut addr = String::new();
        wait_until("the metrics address", Duration::from_millis(5), || {
            let text = metered.log_text();
            match text.split("metrics on http://").nth(1) {
                Some(rest) => {
                    addr = rest.split('/').next().unwrap_or("").to_string();
                    !addr.is_empty()
                }
                None => false,
            }
        });
        addr
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let scrapes = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let scraper = {
        let (stop, scrapes) = (stop.clone(), scrapes.clone());
        let url = format!("http://{metrics_addr}/metrics");
        std::thread::spawn(move || {
            let agent = agent();
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let body = agent.get(&url).call().unwrap().into_string().unwrap();
                // A gauge always there (a counter appears only once counted).
                assert!(body.contains("dshq_http_connections_open"), "{body}");
                scrapes.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                std::thread::sleep(Duration::from_secs(1));
            }
        })
    };
    let (rx_plain, rx_metered) = (open_stream(&plain), open_stream(&metered));
    // Warm-up, not counted.
    burst(&plain, &rx_plain, "warm", o.files);
    burst(&metered, &rx_metered, "warm", o.files);
    let (mut inbox_plain, mut inbox_metered) = (Vec::new(), Vec::new());
    let (mut http_plain, mut http_metered) = (Vec::new(), Vec::new());
    for round in 0..o.rounds.max(1) {
        // Alternate which goes first, so a drift of the machine falls on both.
        let order: [(&Host, &mpsc::Receiver<Seen>, bool); 2] = if round % 2 == 0 {
            [(&plain, &rx_plain, false), (&metered, &rx_metered, true)]
        } else {
            [(&metered, &rx_metered, true), (&plain, &rx_plain, false)]
        };
        for (h, rx, with) in order {
            let b = burst(h, rx, &format!("r{round}x"), o.files).committed;
            let t = http_burst(h, &format!("r{round}h"), o.samples);
            println!(
                "round {round}: {}: inbox burst {b:.3} s, HTTP burst {t:.3} s",
                if with { "--metrics" } else { "without" }
            );
            if with {
                inbox_metered.push(b);
                http_metered.push(t);
            } else {
                inbox_plain.push(b);
                http_plain.push(t);
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    scraper.join().unwrap();
    let (ip, im) = (median(&inbox_plain), median(&inbox_metered));
    let (hp, hm) = (median(&http_plain), median(&http_metered));
    println!(
        "inbox burst of {} files: median {ip:.3} s without --metrics, {im:.3} s with (scraped every 1 s, {} scrapes); ratio {:.3}",
        o.files,
        scrapes.load(std::sync::atomic::Ordering::SeqCst),
        im / ip
    );
    println!(
        "HTTP burst of {} asks (4 clients): median {hp:.3} s without --metrics, {hm:.3} s with; ratio {:.3}",
        4 * o.samples,
        hm / hp
    );
}
