//! The shared store beside the embedded one: PostgreSQL and SQLite measured in one run.
//!
//! `cargo bench --bench multihost` (`-- --help` for the knobs). A throwaway PostgreSQL
//! server is started for the run (`tests/support/throwaway.rs`; or the one named in
//! `DSHQ_TEST_POSTGRES`), with its default durability (fsync on, synchronous commit).
//!
//! Workloads:
//! 1. Burst ingest: N request files already in `inbox/new/` when the daemon starts, until
//!    every one is committed; SQLite (one root), PostgreSQL with one daemon, and PostgreSQL
//!    with three daemons on three roots (N/3 files each, started together).
//! 2. Claim + answer per second, through the `Store` seam in this process (no process
//!    start per operation): one reviewer on SQLite, one on PostgreSQL, and three reviewers
//!    in three contexts at once on PostgreSQL.
//! 3. Answer → outcome file: `dshq answer` run on one root, until the outcome file appears
//!    in the outbox of the root that asked: on SQLite the same root (the command writes
//!    it), on PostgreSQL another root (its daemon, woken by NOTIFY, writes it).

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use dshq::core::audit::{Actor, Source};
use dshq::root::{Backend, Root};
#[path = "../tests/support/throwaway.rs"]
#[allow(dead_code)]
mod throwaway;
use dshq::store::{AskInput, LeaseRef, ProviderAct, Store};

const BIN: &str = env!("CARGO_BIN_EXE_dshq");

struct Opts {
    files: usize,
    ops: usize,
    samples: usize,
}

fn opts() -> Opts {
    let mut o = Opts {
        files: 15_000,
        ops: 2_000,
        samples: 100,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = || args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--files" => o.files = val().parse().expect("--files N"),
            "--ops" => o.ops = val().parse().expect("--ops N"),
            "--samples" => o.samples = val().parse().expect("--samples N"),
            "--help" => {
                println!("multihost bench: --files N (15000) --ops N (2000) --samples N (100)");
                std::process::exit(0);
            }
            _ => {
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    o
}

fn request_json(id: &str, context: &str) -> String {
    format!(
        r#"{{"id":"{id}","context":"{context}","questions":[{{"id":"db","header":"Storage","question":"Which database should service {id} use?","options":[{{"label":"Postgres","description":"managed"}},{{"label":"SQLite","description":"one file"}}]}}],"timeout":"8h","meta":{{"ticket":"OPS-{id}"}}}}"#
    )
}

/// A root (a "host") on `store` (`None`: SQLite in the root).
struct Host {
    _dir: tempfile::TempDir,
    root: PathBuf,
    store: Option<String>,
}

impl Host {
    fn new(store: Option<&str>) -> Host {
        let dir = tempfile::Builder::new()
            .prefix("dshq-bench-mh-")
            .tempdir()
            .unwrap();
        let root = dir.path().join("root");
        let h = Host {
            _dir: dir,
            root,
            store: store.map(str::to_string),
        };
        h.cmd(&["list"]); // the layout, the schema, the origin
        h
    }

    fn command(&self) -> Command {
        let mut c = Command::new(BIN);
        c.env("DSHQ_ROOT", &self.root)
            .env("RUST_LOG", "warn")
            .env_remove("DSHQ_STORE")
            .stdin(Stdio::null());
        if let Some(s) = &self.store {
            c.env("DSHQ_STORE", s);
        }
        c
    }

    fn cmd(&self, args: &[&str]) -> serde_json::Value {
        let out = self.command().arg("--json").args(args).output().unwrap();
        assert!(
            out.status.success(),
            "dshq {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null)
    }

    fn daemon(&self) -> Daemon {
        Daemon(
            self.command()
                .arg("daemon")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        )
    }

    fn store(&self) -> Box<dyn Store> {
        let backend = Backend::parse(self.store.as_deref()).unwrap();
        Root::new(&self.root)
            .with_backend(backend)
            .open_store()
            .unwrap()
    }

    fn write_files(&self, n: usize, prefix: &str) {
        let dir = self.root.join("inbox/new");
        for i in 0..n {
            let id = format!("{prefix}{i:07}");
            fs::write(dir.join(format!("{id}.json")), request_json(&id, "default")).unwrap();
        }
    }

    fn inbox_empty(&self) -> bool {
        fs::read_dir(self.root.join("inbox/new"))
            .map(|mut d| d.next().is_none())
            .unwrap_or(false)
    }
}

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Hosts of one store share the chain's key: the first write creates it in the first
/// root; the others get a copy (as an operator does), else they refuse to write.
fn share_key(hosts: &[Host]) {
    let first = &hosts[0];
    let lease = first.cmd(&[
        "provider",
        "register",
        "--name",
        "init",
        "--context",
        "key-init",
        "--ttl",
        "1m",
    ])["lease"]
        .as_str()
        .unwrap()
        .to_string();
    first.cmd(&["provider", "release", "--lease", &lease]);
    for h in &hosts[1..] {
        fs::copy(first.root.join("audit.key"), h.root.join("audit.key")).unwrap();
    }
}

/// Files per second for `hosts` daemons started together on `n` files in all.
fn burst(hosts: &[Host], n: usize) -> f64 {
    for (i, h) in hosts.iter().enumerate() {
        h.write_files(n / hosts.len(), &format!("b{i}-"));
    }
    let start = Instant::now();
    let daemons: Vec<Daemon> = hosts.iter().map(Host::daemon).collect();
    wait("the burst", || hosts.iter().all(Host::inbox_empty));
    let rate = (n / hosts.len() * hosts.len()) as f64 / start.elapsed().as_secs_f64();
    drop(daemons);
    rate
}

fn ask(store: &mut dyn Store, id: &str, context: &str) {
    let body = request_json(id, context);
    let input = AskInput {
        request: dshq::protocol::check::parse_request(body.as_bytes()),
        fallback_id: None,
        salvaged: (None, None),
        raw: body,
        source: Source::Cli,
        actor: Actor::Cli,
    };
    store.ask(input).unwrap();
}

fn pick() -> dshq::protocol::Answer {
    serde_json::from_value(serde_json::json!({"answers": [{"id": "db", "selected": ["Postgres"]}]}))
        .unwrap()
}

/// Claim-next + answer pairs per second by one reviewer in `context` (the requests are
/// asked first; the clock starts when every reviewer at `ready` is ready).
fn reviewer(host: &Host, context: &str, ops: usize, ready: &Barrier) -> f64 {
    let mut store = host.store();
    for i in 0..ops {
        ask(&mut *store, &format!("{context}-{i:06}"), context);
    }
    let (reg, _) = store.register(context, "bench", 600_000).unwrap();
    let lease = LeaseRef::Token(reg.lease);
    ready.wait();
    let start = Instant::now();
    for _ in 0..ops {
        let claimed = match store.provide(&lease, ProviderAct::ClaimNext).unwrap() {
            dshq::store::Provided::Claimed(row) => row.id.clone().unwrap(),
            other => panic!("{other:?}"),
        };
        store
            .provide(&lease, ProviderAct::Answer(claimed, pick()))
            .unwrap();
    }
    ops as f64 / start.elapsed().as_secs_f64()
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

/// `dshq answer` on `by` → the outcome file in `asker`'s outbox, in ms.
fn answer_latency(asker: &Host, by: &Host, samples: usize, tag: &str) -> Vec<f64> {
    let _d = asker.daemon();
    let lease = by.cmd(&[
        "provider",
        "register",
        "--name",
        "bench",
        "--context",
        tag,
        "--ttl",
        "1h",
    ])["lease"]
        .as_str()
        .unwrap()
        .to_string();
    let mut store = asker.store();
    let mut v = Vec::with_capacity(samples);
    for i in 0..samples {
        let id = format!("{tag}-lat-{i:04}");
        ask(&mut *store, &id, tag);
        let outcome = asker.root.join("outbox").join(format!("{id}.json"));
        let start = Instant::now();
        let out = by
            .command()
            .env("DSHQ_LEASE", &lease)
            .args(["answer", &id, "--select", "Postgres"])
            .stdout(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        wait("the outcome file", || outcome.exists());
        v.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v
}

fn main() {
    let o = opts();
    let server = throwaway::shared();
    let pg = || Some(server.fresh_database().unwrap());
    println!(
        "# multihost bench: files={} ops={} samples={}",
        o.files, o.ops, o.samples
    );

    // 1. Burst ingest.
    let sqlite = burst(&[Host::new(None)], o.files);
    let url = pg();
    let pg1 = burst(&[Host::new(url.as_deref())], o.files);
    let url = pg();
    let three: Vec<Host> = (0..3).map(|_| Host::new(url.as_deref())).collect();
    share_key(&three);
    let pg3 = burst(&three, o.files);
    println!("burst ingest, files/s: sqlite {sqlite:.0} | postgres, 1 daemon {pg1:.0} | postgres, 3 daemons {pg3:.0} in all ({:.0} per host)", pg3 / 3.0);
    println!(
        "  ratios: postgres 1 daemon / sqlite {:.2}; 3 daemons / 1 daemon {:.2}",
        pg1 / sqlite,
        pg3 / pg1
    );

    // 2. Claim + answer.
    let one = Barrier::new(1);
    let s = reviewer(&Host::new(None), "rev", o.ops, &one);
    let url = pg();
    let p = reviewer(&Host::new(url.as_deref()), "rev", o.ops, &one);
    let url = pg();
    let hosts: Vec<Host> = (0..3).map(|_| Host::new(url.as_deref())).collect();
    share_key(&hosts);
    let ready = Barrier::new(3);
    let rates: Vec<f64> = std::thread::scope(|sc| {
        let hs: Vec<_> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let (ops, ready) = (o.ops, &ready);
                sc.spawn(move || reviewer(h, &format!("rev{i}"), ops, ready))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let p3: f64 = rates.iter().sum();
    println!("claim+answer pairs/s: sqlite {s:.0} | postgres {p:.0} (ratio {:.2}) | postgres, 3 reviewers in 3 contexts at once {p3:.0} in all", p / s);

    // 3. Answer → outcome file.
    let local = Host::new(None);
    let v = answer_latency(&local, &local, o.samples, "lat");
    println!(
        "answer -> outcome, sqlite, same root:        p50 {:.2} ms  p99 {:.2} ms",
        pct(&v, 50.0),
        pct(&v, 99.0)
    );
    let url = pg();
    let pair = [Host::new(url.as_deref()), Host::new(url.as_deref())];
    share_key(&pair);
    let v = answer_latency(&pair[0], &pair[1], o.samples, "lat");
    println!(
        "answer -> outcome, postgres, another root:  p50 {:.2} ms  p99 {:.2} ms",
        pct(&v, 50.0),
        pct(&v, 99.0)
    );
}
