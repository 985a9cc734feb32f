//! The shared store beside the embedded one: PostgreSQL and SQLite measured in one run.
//!
//! `cargo bench --bench multihost` (`-- --help` for the knobs). A throwaway PostgreSQL
//! server is started for the run (`tests/support/throwaway.rs`; or the one named in
//! `DSHQ_TEST_POSTGRES`), with its default durability (fsync on, synchronous commit).
//!
//! Workloads:
//! 1. Burst ingest: N request files already in `inbox/new/` when the daemon starts, until
//!    every one is committed; SQLite (one root), PostgreSQL with one, two and four daemons
//!    on as many roots (N/k files each, started together); and the raw baseline: the same
//!    batch written by a bare client as multi-row statements, 512 files a transaction under
//!    one advisory lock: the very rows the one-daemon burst wrote, read back and replayed
//!    into a fresh database; and, to compare with runs before that replay existed, lighter
//!    constant rows (fewer columns set, events with empty data). Every configuration runs once a round, in turn, for `--rounds`
//!    rounds (3), and the medians are reported beside each round's figures.
//! 2. Claim + answer per second, through the `Store` seam in this process (no process
//!    start per operation): one reviewer on SQLite, one on PostgreSQL, and four reviewers
//!    in four contexts on four hosts (roots and connections) at once on PostgreSQL; and the
//!    raw baseline: bare `FOR UPDATE SKIP LOCKED` claims and answers, one and four clients.
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
use dshq::store::{AskInput, LeaseRef, Store};

const BIN: &str = env!("CARGO_BIN_EXE_dshq");

struct Opts {
    files: usize,
    ops: usize,
    samples: usize,
    /// Run only this workload (`burst`, `claims`, `latency`): to repeat one for its spread.
    only: Option<String>,
    /// Rounds of the burst workload, each measuring every configuration once, in turn: a
    /// shared machine's noise moves one sample by a fifth, so the medians are reported.
    rounds: usize,
}

fn opts() -> Opts {
    let mut o = Opts {
        files: 15_000,
        ops: 2_000,
        samples: 100,
        only: None,
        rounds: 3,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = || args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--files" => o.files = val().parse().expect("--files N"),
            "--ops" => o.ops = val().parse().expect("--ops N"),
            "--samples" => o.samples = val().parse().expect("--samples N"),
            "--only" => o.only = Some(val()),
            "--rounds" => o.rounds = val().parse::<usize>().expect("--rounds N").max(1),
            "--help" => {
                println!("multihost bench: --files N (15000) --ops N (2000) --samples N (100) --rounds N (3) [--only burst|claims|latency]");
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
        // A write makes the layout, the schema and the origin (a read does not): a token,
        // which is no request and no event, named after this host's directory.
        let name = h
            .root
            .parent()
            .and_then(|d| d.file_name())
            .map(|n| {
                n.to_string_lossy()
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "")
            })
            .unwrap_or_default();
        h.cmd(&["token", "create", "--role", "auditor", "--name", &name]);
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

    fn store(&self) -> Store {
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

fn ask(store: &mut Store, id: &str, context: &str) {
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
        ask(&mut store, &format!("{context}-{i:06}"), context);
    }
    let (reg, _) = store.register(context, "bench", 600_000).unwrap();
    let lease = LeaseRef::Token(reg.lease);
    ready.wait();
    let start = Instant::now();
    for _ in 0..ops {
        let claimed = store.claim_next(&lease).unwrap().id.unwrap();
        store.answer(&lease, &claimed, &pick()).unwrap();
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
        ask(&mut store, &id, tag);
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

/// A lighter raw baseline of a burst (the one measured before the replay above, kept to
/// compare with earlier runs): rows like those dshq writes for `n` files (a request with
/// fewer columns set, its question, an `accepted` event with empty data) sent by a bare client as three multi-row statements per
/// batch of 512, each batch one transaction under one advisory lock, into a fresh dshq
/// database (its indexes and triggers). Files per second.
fn bare_batches(url: &str, n: usize) -> f64 {
    // A dshq store first, so the schema is the real one.
    drop(Host::new(Some(url)).store());
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let body = request_json("x", "default");
    let start = Instant::now();
    let mut seq = 0i64;
    for chunk in (0..n).collect::<Vec<_>>().chunks(512) {
        let mut tx = c.transaction().unwrap();
        tx.execute("SELECT pg_advisory_xact_lock(42)", &[]).unwrap();
        let seqs: Vec<i64> = chunk
            .iter()
            .map(|_| {
                seq += 1;
                seq
            })
            .collect();
        let ids: Vec<String> = chunk.iter().map(|i| format!("bare{i:07}")).collect();
        let bodies: Vec<&str> = chunk.iter().map(|_| body.as_str()).collect();
        let hashes: Vec<String> = seqs.iter().map(|s| format!("{s:064x}")).collect();
        tx.execute(
            "INSERT INTO requests (seq, id, context, status, body, source, created_ms, origin)
             SELECT s, i, 'default', 'pending', b, 'inbox:' || i || '.json', 1, 'bench'
             FROM UNNEST($1::int8[], $2::text[], $3::text[]) AS t(s, i, b)",
            &[&seqs, &ids, &bodies],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO questions (request_seq, idx, qid, question, header, detail, multi_select, options)
             SELECT s, 0, 'db', 'Which database?', NULL, NULL, FALSE, '[{\"label\":\"Postgres\"},{\"label\":\"SQLite\"}]'
             FROM UNNEST($1::int8[]) AS t(s)",
            &[&seqs],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO events (seq, at_ms, kind, request_id, actor, data, prev_hash, hash)
             SELECT s, 1, 'accepted', i, 'inbox', '{}', h, h FROM UNNEST($1::int8[], $2::text[], $3::text[]) AS t(s, i, h)",
            &[&seqs, &ids, &hashes],
        )
        .unwrap();
        tx.commit().unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// The raw baseline of a burst, faithful: the very rows one daemon's burst wrote into
/// `written` (its requests, their questions, its events, every column dshq set), read
/// back, then replayed into a fresh dshq database (its indexes and triggers) by a bare
/// client, 512 requests a transaction under one advisory lock, each table as one
/// multi-row statement; each request's events with it (the others, e.g. the chain's
/// first, with the first batch). Only the replay is timed. Files per second.
fn replayed_batches(written: &str, url: &str) -> f64 {
    drop(Host::new(Some(url)).store());
    let mut src = postgres::Client::connect(written, postgres::NoTls).unwrap();
    let requests = src
        .query(
            "SELECT seq, id, context, status, agent_id, agent_instance, agent_lineage, body,
                    source, require_provider, deadline_ms, created_ms, finished_ms, error_code,
                    error_message, outbox_pending, origin, ladder, ladder_due_ms, quorum
             FROM requests ORDER BY seq",
            &[],
        )
        .unwrap();
    let questions = src
        .query(
            "SELECT request_seq, idx, qid, question, header, detail, multi_select, intent_kind,
                    intent_approve, options FROM questions ORDER BY request_seq, idx",
            &[],
        )
        .unwrap();
    let events = src
        .query(
            "SELECT seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash
             FROM events ORDER BY seq",
            &[],
        )
        .unwrap();
    let files = requests.len();
    // Column `i` of `rows` as a vector.
    fn col<'a, T: postgres::types::FromSql<'a>>(rows: &'a [postgres::Row], i: usize) -> Vec<T> {
        rows.iter().map(|r| r.get(i)).collect()
    }
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let start = Instant::now();
    let (mut q_at, mut e_at) = (0, 0);
    for (b, chunk) in requests.chunks(512).enumerate() {
        let last_seq: i64 = chunk[chunk.len() - 1].get(0);
        let q_end = q_at
            + questions[q_at..]
                .iter()
                .take_while(|r| r.get::<_, i64>(0) <= last_seq)
                .count();
        let ids: std::collections::HashSet<String> = chunk
            .iter()
            .filter_map(|r| r.get::<_, Option<String>>(1))
            .collect();
        let mut e_end = e_at;
        while e_end < events.len() {
            let rid: Option<String> = events[e_end].get(3);
            if rid.as_ref().is_some_and(|r| ids.contains(r)) || (b == 0 && rid.is_none()) {
                e_end += 1;
            } else {
                break;
            }
        }
        let (qs, es) = (&questions[q_at..q_end], &events[e_at..e_end]);
        (q_at, e_at) = (q_end, e_end);
        let mut tx = c.transaction().unwrap();
        tx.execute("SELECT pg_advisory_xact_lock(42)", &[]).unwrap();
        tx.execute(
            "INSERT INTO requests (seq, id, context, status, agent_id, agent_instance, agent_lineage,
                                   body, source, require_provider, deadline_ms, created_ms, finished_ms,
                                   error_code, error_message, outbox_pending, origin, ladder,
                                   ladder_due_ms, quorum)
             SELECT * FROM UNNEST($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[],
                                  $6::text[], $7::text[], $8::text[], $9::text[], $10::bool[],
                                  $11::int8[], $12::int8[], $13::int8[], $14::text[], $15::text[],
                                  $16::bool[], $17::text[], $18::text[], $19::int8[], $20::text[])",
            &[
                &col::<i64>(chunk, 0),
                &col::<Option<String>>(chunk, 1),
                &col::<String>(chunk, 2),
                &col::<String>(chunk, 3),
                &col::<Option<String>>(chunk, 4),
                &col::<Option<String>>(chunk, 5),
                &col::<Option<String>>(chunk, 6),
                &col::<String>(chunk, 7),
                &col::<String>(chunk, 8),
                &col::<bool>(chunk, 9),
                &col::<Option<i64>>(chunk, 10),
                &col::<i64>(chunk, 11),
                &col::<Option<i64>>(chunk, 12),
                &col::<Option<String>>(chunk, 13),
                &col::<Option<String>>(chunk, 14),
                &col::<bool>(chunk, 15),
                &col::<Option<String>>(chunk, 16),
                &col::<Option<String>>(chunk, 17),
                &col::<Option<i64>>(chunk, 18),
                &col::<Option<String>>(chunk, 19),
            ],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO questions (request_seq, idx, qid, question, header, detail, multi_select,
                                    intent_kind, intent_approve, options)
             SELECT * FROM UNNEST($1::int8[], $2::int8[], $3::text[], $4::text[], $5::text[],
                                  $6::text[], $7::bool[], $8::text[], $9::text[], $10::text[])",
            &[
                &col::<i64>(qs, 0),
                &col::<i64>(qs, 1),
                &col::<String>(qs, 2),
                &col::<String>(qs, 3),
                &col::<Option<String>>(qs, 4),
                &col::<Option<String>>(qs, 5),
                &col::<bool>(qs, 6),
                &col::<Option<String>>(qs, 7),
                &col::<Option<String>>(qs, 8),
                &col::<String>(qs, 9),
            ],
        )
        .unwrap();
        tx.execute(
            "INSERT INTO events (seq, at_ms, kind, request_id, lease_id, agent_id, actor, data,
                                 prev_hash, hash)
             SELECT * FROM UNNEST($1::int8[], $2::int8[], $3::text[], $4::text[], $5::int8[],
                                  $6::text[], $7::text[], $8::text[], $9::text[], $10::text[])",
            &[
                &col::<i64>(es, 0),
                &col::<i64>(es, 1),
                &col::<String>(es, 2),
                &col::<Option<String>>(es, 3),
                &col::<Option<i64>>(es, 4),
                &col::<Option<String>>(es, 5),
                &col::<String>(es, 6),
                &col::<String>(es, 7),
                &col::<String>(es, 8),
                &col::<String>(es, 9),
            ],
        )
        .unwrap();
        tx.commit().unwrap();
    }
    assert_eq!(
        (q_at, e_at),
        (questions.len(), events.len()),
        "every question and event of the burst replayed"
    );
    files as f64 / start.elapsed().as_secs_f64()
}

/// The raw baseline of claim + answer: `clients` bare clients, each in its own context on
/// its own connection, each pair two transactions (claim the oldest pending row with
/// `FOR UPDATE SKIP LOCKED`, then mark it answered), on a table of its own. Pairs per
/// second in all.
fn bare_claims(url: &str, clients: usize, ops: usize) -> f64 {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    c.batch_execute(
        "DROP TABLE IF EXISTS bench_jobs;
         CREATE TABLE bench_jobs (seq BIGSERIAL PRIMARY KEY, context TEXT NOT NULL, status TEXT NOT NULL);
         CREATE INDEX bench_jobs_open ON bench_jobs (context, seq) WHERE status IN ('pending', 'claimed');",
    )
    .unwrap();
    for k in 0..clients {
        c.execute(
            "INSERT INTO bench_jobs (context, status) SELECT $1, 'pending' FROM generate_series(1, $2)",
            &[&format!("c{k}"), &(ops as i32)],
        )
        .unwrap();
    }
    let ready = Barrier::new(clients);
    let start = std::sync::OnceLock::new();
    std::thread::scope(|sc| {
        for k in 0..clients {
            let (ready, start) = (&ready, &start);
            sc.spawn(move || {
                let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
                let ctx = format!("c{k}");
                ready.wait();
                start.get_or_init(Instant::now);
                for _ in 0..ops {
                    let seq: i64 = c
                        .query_one(
                            "UPDATE bench_jobs SET status = 'claimed' WHERE seq =
                               (SELECT seq FROM bench_jobs WHERE context = $1 AND status = 'pending'
                                ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING seq",
                            &[&ctx],
                        )
                        .unwrap()
                        .get(0);
                    c.execute(
                        "UPDATE bench_jobs SET status = 'answered' WHERE seq = $1",
                        &[&seq],
                    )
                    .unwrap();
                }
            });
        }
    });
    (clients * ops) as f64 / start.get().unwrap().elapsed().as_secs_f64()
}

/// Claim + answer pairs per second in all, `n` reviewers in `n` contexts at once, each on
/// a host (a root and a connection) of its own on one store.
fn reviewers(url: Option<&str>, n: usize, ops: usize) -> f64 {
    let hosts: Vec<Host> = (0..n).map(|_| Host::new(url)).collect();
    if url.is_some() && n > 1 {
        share_key(&hosts);
    }
    let ready = Barrier::new(n);
    let rates: Vec<f64> = std::thread::scope(|sc| {
        let hs: Vec<_> = hosts
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let ready = &ready;
                sc.spawn(move || reviewer(h, &format!("rev{i}"), ops, ready))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    rates.iter().sum()
}

/// Burst ingest of `n` files in all on `hosts` daemons of the fresh PostgreSQL store `url`.
fn pg_burst(url: &str, hosts: usize, n: usize) -> f64 {
    let hs: Vec<Host> = (0..hosts).map(|_| Host::new(Some(url))).collect();
    if hosts > 1 {
        share_key(&hs);
    }
    burst(&hs, n)
}

fn main() {
    let o = opts();
    let server = throwaway::shared();
    let pg = || server.fresh_database().unwrap();
    println!(
        "# multihost bench: files={} ops={} samples={}",
        o.files, o.ops, o.samples
    );

    let run = |w: &str| o.only.as_deref().is_none_or(|only| only == w);

    // 1. Burst ingest, and the raw baseline of the same rows: every configuration once a
    // round, in turn, so a slow minute of the machine falls on all of them alike.
    if run("burst") {
        let mut rounds: Vec<[f64; 6]> = Vec::new();
        for round in 1..=o.rounds {
            let sqlite = burst(&[Host::new(None)], o.files);
            let one = pg();
            let pg1 = pg_burst(&one, 1, o.files);
            let pg2 = pg_burst(&pg(), 2, o.files);
            let pg4 = pg_burst(&pg(), 4, o.files);
            let replay = replayed_batches(&one, &pg());
            let bare = bare_batches(&pg(), o.files);
            println!("burst round {round}, files/s: sqlite {sqlite:.0} | postgres, 1 / 2 / 4 daemons {pg1:.0} / {pg2:.0} / {pg4:.0} (in all) | bare client: the 1-daemon burst's rows replayed {replay:.0}, constant rows {bare:.0} | postgres 1 / sqlite {:.3}, / replayed {:.3}, / constant {:.3}", pg1 / sqlite, pg1 / replay, pg1 / bare);
            rounds.push([sqlite, pg1, pg2, pg4, bare, replay]);
        }
        let med = |f: &dyn Fn(&[f64; 6]) -> f64| {
            let mut v: Vec<f64> = rounds.iter().map(f).collect();
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[v.len() / 2]
        };
        let (sqlite, pg1, pg2, pg4, bare, replay) = (
            med(&|r| r[0]),
            med(&|r| r[1]),
            med(&|r| r[2]),
            med(&|r| r[3]),
            med(&|r| r[4]),
            med(&|r| r[5]),
        );
        println!("burst ingest, median of {} rounds, files/s: sqlite {sqlite:.0} | postgres, 1 / 2 / 4 daemons {pg1:.0} / {pg2:.0} / {pg4:.0} (in all) | bare client, multi-row batches under one lock: the burst's rows replayed {replay:.0}, constant rows {bare:.0}", rounds.len());
        println!(
            "  ratios (median of the rounds' ratios): postgres 1 daemon / sqlite {:.3}; / its rows replayed {:.3}; / constant rows {:.3}; 2 daemons / 1 {:.2}; 4 daemons / 1 {:.2}",
            med(&|r| r[1] / r[0]),
            med(&|r| r[1] / r[5]),
            med(&|r| r[1] / r[4]),
            med(&|r| r[2] / r[1]),
            med(&|r| r[3] / r[1]),
        );
    }

    // 2. Claim + answer, and the raw baseline.
    if run("claims") {
        let s = reviewers(None, 1, o.ops);
        let p1 = reviewers(Some(&pg()), 1, o.ops);
        let p4 = reviewers(Some(&pg()), 4, o.ops);
        let url = pg();
        let b1 = bare_claims(&url, 1, o.ops);
        let b4 = bare_claims(&url, 4, o.ops);
        println!("claim+answer pairs/s: sqlite {s:.0} | postgres, 1 host {p1:.0} | 4 hosts in 4 contexts {p4:.0} in all | bare SKIP LOCKED clients, 1 / 4 {b1:.0} / {b4:.0}");
        println!(
            "  ratios: postgres 1 host / sqlite {:.2}; 4 hosts / 1 host {:.2}; bare 4 / 1 {:.2}",
            p1 / s,
            p4 / p1,
            b4 / b1
        );
    }

    // 3. Answer → outcome file.
    if !run("latency") {
        return;
    }
    let local = Host::new(None);
    let v = answer_latency(&local, &local, o.samples, "lat");
    println!(
        "answer -> outcome, sqlite, same root:        p50 {:.2} ms  p99 {:.2} ms",
        pct(&v, 50.0),
        pct(&v, 99.0)
    );
    let url = pg();
    let pair = [Host::new(Some(&url)), Host::new(Some(&url))];
    share_key(&pair);
    let v = answer_latency(&pair[0], &pair[1], o.samples, "lat");
    println!(
        "answer -> outcome, postgres, another root:  p50 {:.2} ms  p99 {:.2} ms",
        pct(&v, 50.0),
        pct(&v, 99.0)
    );
}
