//! Many hosts, one queue: daemons with roots of their own on one PostgreSQL store.
//!
//! - `three_hosts_share_one_queue_through_sigkills`: three roots ("hosts") on one store,
//!   one of them with its clock ten minutes ahead. Request files are dropped on all three
//!   while their daemons are SIGKILLed and restarted at random; each request is answered
//!   from another host, by the CLI or by an answer file dropped in a third root. Afterwards
//!   every dropped file is exactly one request, every request has exactly one outcome file,
//!   in its own root's outbox and no other, nothing is left in any inbox, and `audit
//!   verify` passes on every host. The skewed host can neither steal a live lease (its
//!   clock says it expired) nor keep a dead one (with its clock shifted back instead).
//! - `the_daemon_rides_out_a_postgres_restart`: the server stops mid-burst and comes back;
//!   the daemon waits and retries, a command meanwhile fails with `STORE`, and afterwards
//!   every file is exactly one request and the daemon is still the same process.
//! - `a_host_stopped_inside_a_write_holds_up_nobody_and_is_fenced_when_it_resumes`: host A's
//!   daemon is SIGSTOPped while its session is inside a write in context x (applying answer
//!   files under alice's lease; the server's activity shows it idle in a transaction).
//!   Meanwhile host B's claim and answer in context y commit while A's transaction is still
//!   open; B's ask and a revocation of alice's lease in x commit within seconds (the server
//!   ends A's idle session); B takes x over and answers a request. When A resumes, its
//!   write is gone and every answer file it still had is refused: nothing is answered
//!   under the revoked lease, and `audit verify` passes from both hosts.
//!
//! The store is a throwaway server (`tests/support/throwaway.rs`): the one `.ci/run`
//! names in `DSHQ_TEST_POSTGRES`, else one started for this test process.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::helpers::*;

use crate::throwaway;

/// One at a time: each test runs three daemons and a burst.
static HEAVY: Mutex<()> = Mutex::new(());

/// A fresh database on the shared throwaway server.
fn fresh_store() -> String {
    throwaway::shared()
        .fresh_database()
        .expect("a fresh PostgreSQL database")
}

/// xorshift64 for kill delays and choices; seeded from the clock, printed.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1;
        println!("multihost seed: {seed}");
        Rng(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Every request in the store, by id, with its status, as one host's CLI lists them.
fn all_requests(host: &Env) -> Vec<(String, String)> {
    let list = host
        .json(&["list", "--all", "--limit", "100000", "--oldest-first"])
        .ok()
        .json();
    list.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn request_for(id: &str) -> Vec<u8> {
    serde_json::to_vec(&simple_request(id)).unwrap()
}

fn answer_file(lease: &str) -> Vec<u8> {
    serde_json::to_vec(
        &json!({"lease": lease, "answers": [{"id": "db", "selected": ["Postgres"]}]}),
    )
    .unwrap()
}

/// The host (0, 1, 2) a request id was dropped on: `h1-007` → 1.
fn host_of(id: &str) -> usize {
    id[1..2].parse().unwrap()
}

#[test]
fn three_hosts_share_one_queue_through_sigkills() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let url = fresh_store();
    let hosts = [
        Env::on_store(&url),
        Env::on_store(&url),
        Env::on_store(&url).with_var("DSHQ_CLOCK_SKEW", "+10m"),
    ];
    // The first write keys the chain (audit.key in host 0's root); every host of one
    // store holds the same key.
    let lease = hosts[0].register("alice", "default", "10m");
    for h in &hosts[1..] {
        // A write creates the root's layout (a read does not: NO_ROOT); a token is no
        // request and no event.
        h.json(&[
            "token",
            "create",
            "--role",
            "auditor",
            "--name",
            &format!("a{}", unique()),
        ])
        .ok();
        fs::copy(
            hosts[0].root().join("audit.key"),
            h.root().join("audit.key"),
        )
        .unwrap();
    }

    // A clock ten minutes ahead says alice's lease (10m) has just expired: it must not be
    // able to take the context.
    let steal = hosts[2].json(&[
        "provider",
        "register",
        "--name",
        "mallory",
        "--context",
        "default",
        "--ttl",
        "1m",
    ]);
    assert_eq!(steal.error_code(), "DUPLICATE_PROVIDER", "{steal:?}");

    let mut daemons: Vec<Option<Daemon>> = hosts.iter().map(|h| Some(h.daemon())).collect();
    const PER_HOST: usize = 40;
    let stop = AtomicBool::new(false);
    let answered: Mutex<BTreeMap<String, &'static str>> = Mutex::new(BTreeMap::new());
    let mut rng = Rng::new();
    let mut kills = 0;
    std::thread::scope(|s| {
        // Droppers: one per host, each dropping its files at its own pace.
        let droppers: Vec<_> = (0..3)
            .map(|i| {
                let host = &hosts[i];
                s.spawn(move || {
                    for n in 0..PER_HOST {
                        let id = format!("h{i}-{n:03}");
                        host.drop_file(&format!("{id}.json"), &request_for(&id));
                        if n % 8 == 7 {
                            std::thread::sleep(Duration::from_millis(30));
                        }
                    }
                })
            })
            .collect();
        // The answerer: every pending request is answered from a host other than its
        // own, alternately by that host's CLI and by an answer file in a third root.
        let answerer = s.spawn(|| {
            let mut turn = 0usize;
            while !stop.load(Ordering::SeqCst) {
                let pending: Vec<String> = all_requests(&hosts[1])
                    .into_iter()
                    .filter(|(_, st)| st == "pending")
                    .map(|(id, _)| id)
                    .collect();
                for id in pending {
                    if answered.lock().unwrap().contains_key(&id) {
                        continue;
                    }
                    let own = host_of(&id);
                    turn += 1;
                    let how = if turn.is_multiple_of(2) {
                        let by = &hosts[(own + 1) % 3];
                        let r = by.run_env(
                            &[("DSHQ_LEASE", &lease)],
                            &["--json", "answer", &id, "--select", "Postgres"],
                        );
                        assert_eq!(r.code, 0, "answer {id} from host {}: {r:?}", (own + 1) % 3);
                        "cli"
                    } else {
                        hosts[(own + 2) % 3]
                            .drop_answer(&format!("{id}.json"), &answer_file(&lease));
                        "file"
                    };
                    answered.lock().unwrap().insert(id, how);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        // The killer: SIGKILL a random daemon and restart it, until the droppers are done.
        while droppers.iter().any(|d| !d.is_finished()) || kills < 6 {
            std::thread::sleep(Duration::from_millis(40 + rng.below(200)));
            let i = rng.below(3) as usize;
            if let Some(d) = daemons[i].take() {
                d.kill9();
            }
            kills += 1;
            daemons[i] = Some(hosts[i].daemon());
        }
        for d in droppers {
            d.join().unwrap();
        }
        // Every request answered (from elsewhere) or the deadline.
        let total = 3 * PER_HOST;
        let all_answered = wait_until(Duration::from_secs(120), || {
            answered.lock().unwrap().len() >= total
        });
        stop.store(true, Ordering::SeqCst);
        answerer.join().unwrap();
        assert!(
            all_answered,
            "only {} of {total} answered",
            answered.lock().unwrap().len()
        );
    });
    println!("{kills} kills");

    // Every request reaches its own root's outbox.
    let ids: BTreeSet<String> = (0..3)
        .flat_map(|i| (0..PER_HOST).map(move |n| format!("h{i}-{n:03}")))
        .collect();
    for id in &ids {
        let own = &hosts[host_of(id)];
        assert!(
            wait_until(Duration::from_secs(60), || own.outcome(id).is_some()),
            "no outcome for {id} in its own root (answered by {:?})",
            answered.lock().unwrap().get(id)
        );
    }
    // Exactly one request per dropped file, all answered.
    let listed = all_requests(&hosts[0]);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (id, status) in &listed {
        *counts.entry(id.as_str()).or_default() += 1;
        assert_eq!(status, "answered", "{id}");
    }
    assert_eq!(counts.len(), ids.len(), "requests: {counts:?}");
    assert!(counts.values().all(|&c| c == 1), "{counts:?}");
    for (i, host) in hosts.iter().enumerate() {
        // Its own outcomes, each once, and nobody else's.
        let outbox: BTreeSet<String> = host
            .names("outbox")
            .into_iter()
            .map(|n| n.trim_end_matches(".json").to_string())
            .collect();
        let own: BTreeSet<String> = ids.iter().filter(|id| host_of(id) == i).cloned().collect();
        assert_eq!(outbox, own, "host {i}'s outbox");
        for id in &own {
            let o = host.outcome(id).unwrap();
            assert_eq!(
                o["answer"]["answers"][0]["selected"],
                json!(["Postgres"]),
                "{id}: {o}"
            );
        }
        for dir in ["inbox/new", "answers/new", "answers/rejected", "rejected"] {
            assert!(
                host.names(dir).is_empty(),
                "host {i} {dir}: {:?}",
                host.names(dir)
            );
        }
        let v = host.json(&["audit", "verify"]);
        assert_eq!(v.code, 0, "audit verify on host {i}: {v:?}");
        assert_eq!(v.json()["ok"], true);
    }
    // Both ways of answering were exercised, on every kind of host.
    let ways: BTreeSet<&str> = answered.lock().unwrap().values().copied().collect();
    assert_eq!(ways, BTreeSet::from(["cli", "file"]));

    // The skewed host cannot keep a dead lease either: with its clock ten minutes behind,
    // a 1 s lease it holds still looks live to it, but the store's clock ended it.
    let behind = [("DSHQ_CLOCK_SKEW", "-10m")];
    let r = hosts[2].run_env(
        &behind,
        &[
            "--json",
            "provider",
            "register",
            "--name",
            "bob",
            "--context",
            "late",
            "--ttl",
            "1s",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let bobs = r.json()["lease"].as_str().unwrap().to_string();
    assert!(
        wait_until(DEADLINE, || {
            let st = hosts[0]
                .json(&["provider", "status", "--lease", &bobs])
                .json();
            let st = if st.is_array() { st[0].clone() } else { st };
            st["live"] == false
        }),
        "the 1 s lease did not end on the store's clock"
    );
    let hb = hosts[2].run_env(
        &behind,
        &["--json", "provider", "heartbeat", "--lease", &bobs],
    );
    assert_eq!(hb.error_code(), "LEASE_EXPIRED", "{hb:?}");
    for d in daemons.into_iter().flatten() {
        assert_eq!(d.stop(), 0);
    }
}

#[test]
fn the_daemon_rides_out_a_postgres_restart() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let mut server = throwaway::Server::start().expect("a private PostgreSQL server");
    let url = server.fresh_database().unwrap();
    let host = Env::on_store(&url);
    let mut d = host.daemon();
    let ids: Vec<String> = (0..300).map(|n| format!("r{n:03}")).collect();
    for id in &ids[..150] {
        host.drop_file(&format!("{id}.json"), &request_for(id));
    }
    // Mid-burst: part of it is in, part of it waits in the inbox.
    assert!(wait_until(DEADLINE, || all_requests(&host).len() >= 20));
    server.stop().unwrap();
    let started = Instant::now();
    // While it is down: a command fails with STORE, the daemon waits, files keep coming.
    let r = host.json(&["list"]);
    assert_eq!(r.error_code(), "STORE", "{r:?}");
    assert_eq!(r.code, 1);
    for id in &ids[150..] {
        host.drop_file(&format!("{id}.json"), &request_for(id));
    }
    assert!(
        wait_until(DEADLINE, || d.log_text().contains("retrying")),
        "the daemon did not say it retries: {}",
        d.log_text()
    );
    assert!(
        d.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the daemon died with the server: {}",
        d.log_text()
    );
    assert!(
        !host.names("inbox/new").is_empty(),
        "files wait in the inbox"
    );
    println!("down for {:?}", started.elapsed());
    server.resume().unwrap();
    // It carries on by itself: everything in, each once.
    assert!(
        wait_until(Duration::from_secs(60), || host
            .names("inbox/new")
            .is_empty()),
        "the inbox was not drained after the restart: {}",
        d.log_text()
    );
    let listed = all_requests(&host);
    let got: BTreeSet<String> = listed.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(listed.len(), ids.len(), "no request twice");
    assert_eq!(
        got,
        ids.iter().cloned().collect::<BTreeSet<_>>(),
        "no request lost"
    );
    assert!(d.child.as_mut().unwrap().try_wait().unwrap().is_none());
    // And it still answers: a CLI answer reaches the outbox through the daemon.
    let lease = host.register("alice", "default", "1m");
    let r = host.run_env(
        &[("DSHQ_LEASE", &lease)],
        &["--json", "answer", "r000", "--select", "SQLite"],
    );
    assert_eq!(r.code, 0, "{r:?}");
    let o: Value = host.wait_outcome("r000");
    assert_eq!(o["answer"]["answers"][0]["selected"], json!(["SQLite"]));
    let v = host.json(&["audit", "verify"]);
    assert_eq!(v.code, 0, "{v:?}");
    assert_eq!(d.stop(), 0);
}

#[test]
fn store_copy_moves_a_sqlite_store_with_thousands_of_requests() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    // A SQLite root with a history: thousands of requests, answers, a cancel, rejections.
    let local = Env::new();
    let d = local.daemon();
    const N: usize = 3000;
    for n in 0..N {
        let id = format!("c{n:05}");
        local.drop_file(&format!("{id}.json"), &request_for(&id));
    }
    local.drop_file("broken.json", b"{ not json");
    assert!(
        wait_until(Duration::from_secs(120), || local
            .names("inbox/new")
            .is_empty()),
        "the burst was not ingested"
    );
    let lease = local.register("alice", "default", "10m");
    for n in 0..50 {
        let id = format!("c{n:05}");
        local.drop_answer(&format!("{id}.json"), &answer_file(&lease));
    }
    for n in 0..50 {
        assert!(
            wait_until(DEADLINE, || local.outcome(&format!("c{n:05}")).is_some()),
            "c{n:05} not answered"
        );
    }
    local
        .run_env(
            &[("DSHQ_LEASE", &lease)],
            &["cancel", "c00060", "--reason", "not needed"],
        )
        .ok();
    assert_eq!(d.stop(), 0);
    // A live lease cannot move (its token would not work on the copy): refused, and the
    // target stays empty.
    let url = fresh_store();
    let r = local.run_env(&[("DSHQ_STORE_TO", &url)], &["--json", "store", "copy"]);
    assert_eq!(r.error_code(), "USAGE", "{r:?}");
    assert!(r.stdout.contains("alice"), "{r:?}");
    local.run(&["provider", "release", "--lease", &lease]).ok();
    let before = local.run(&["export"]).ok().stdout;
    let verified = local.json(&["audit", "verify"]).ok().json();

    // Copy it up, verified.
    let r = local.run_env(&[("DSHQ_STORE_TO", &url)], &["--json", "store", "copy"]);
    assert_eq!(r.code, 0, "{r:?}");
    let report = r.json();
    assert_eq!(report["events"], verified["events"], "{report}");
    assert_eq!(report["requests"], verified["requests"], "{report}");
    assert_eq!(report["headHash"], verified["headHash"], "{report}");
    // The copy is the same record: its export is the SQLite store's, line for line.
    let on_pg = |args: &[&str]| -> Run {
        let mut c = local.command();
        c.env("DSHQ_STORE", &url);
        c.args(args).output().unwrap().into()
    };
    let after = on_pg(&["export"]).ok().stdout;
    assert_eq!(after.lines().count(), before.lines().count());
    assert!(
        after == before,
        "the copy's export differs from the original's"
    );
    let v = on_pg(&["--json", "audit", "verify"]);
    assert_eq!(v.code, 0, "{v:?}");
    // A second copy into the now non-empty store is refused, and changes nothing.
    let again = local.run_env(&[("DSHQ_STORE_TO", &url)], &["--json", "store", "copy"]);
    assert_ne!(again.code, 0, "{again:?}");
    assert_eq!(on_pg(&["export"]).ok().stdout, before);
    // The root carries on on the shared store: a new request, an answer, still verified.
    let mut c = local.command();
    c.env("DSHQ_STORE", &url)
        .arg("daemon")
        .env("RUST_LOG", "info");
    let log = local.dir.path().join("pg-daemon.log");
    let child = c
        .stdout(std::process::Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let d = Daemon {
        child: Some(child),
        log,
    };
    assert!(wait_until(DEADLINE, || d
        .log_text()
        .contains("daemon started")));
    local.drop_file("fresh.json", &request_for("fresh"));
    assert!(wait_until(DEADLINE, || on_pg(&["--json", "show", "fresh"])
        .code
        == 0));
    let r = on_pg(&[
        "--json", "answer", "c00070", "--select", "SQLite", "--name", "bob",
    ]);
    assert_eq!(r.code, 0, "{r:?}");
    let o = local.wait_outcome("c00070");
    assert_eq!(o["answer"]["answers"][0]["selected"], json!(["SQLite"]));
    let v = on_pg(&["--json", "audit", "verify"]);
    assert_eq!(v.code, 0, "{v:?}");
    assert_eq!(d.stop(), 0);
}

/// The states of the server sessions named `app` that are not idle.
fn busy_states(admin: &mut postgres::Client, app: &str) -> Vec<String> {
    admin
        .query(
            "SELECT state FROM pg_stat_activity WHERE application_name = $1 AND state <> 'idle'",
            &[&app],
        )
        .unwrap()
        .iter()
        .map(|r| r.get::<_, Option<String>>(0).unwrap_or_default())
        .collect()
}

/// `url` with `application_name` set, so the server's activity names the host.
fn named(url: &str, app: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}application_name={app}")
}

#[test]
fn a_host_stopped_inside_a_write_holds_up_nobody_and_is_fenced_when_it_resumes() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let url = fresh_store();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let a = Env::on_store(&named(&url, "dshq-host-a"));
    let b = Env::on_store(&url);
    // B's first write keys the chain; A holds the same key (and a root: a token write).
    let lease_y = b.register("bob", "y", "10m");
    a.json(&["token", "create", "--role", "auditor", "--name", "aud"])
        .ok();
    fs::copy(b.root().join("audit.key"), a.root().join("audit.key")).unwrap();
    for id in ["y1", "y2"] {
        let mut r = simple_request(id);
        r["context"] = json!("y");
        b.ask(&r).ok();
    }
    // Host A: a daemon, 600 requests in context x dropped on it, then an answer file for
    // each under alice's lease: A's writes in x (batches of answers, fenced by the lease).
    const N: usize = 600;
    let ids: Vec<String> = (0..N).map(|n| format!("x{n:03}")).collect();
    for id in &ids {
        let mut r = simple_request(id);
        r["context"] = json!("x");
        a.drop_file(&format!("{id}.json"), &serde_json::to_vec(&r).unwrap());
    }
    let da = a.daemon();
    assert!(
        wait_until(DEADLINE, || a.names("inbox/new").is_empty()
            && all_requests(&b).len() == N + 2),
        "A ingests: {}",
        da.log_text()
    );
    let lease_x = a.register("alice", "x", "10m");
    // A is stopped while the answers are dropped, so that all of its answer writes happen
    // inside the loop below: dropped while it ran, they were taken as they came, and with
    // short writes it could be done before the loop had tried often enough.
    da.signal(libc::SIGSTOP);
    for id in &ids {
        a.drop_answer(&format!("{id}.json"), &answer_file(&lease_x));
    }
    // Stop A inside one of those writes: stopped, its session idles in a transaction.
    let mut caught = false;
    for _ in 0..2000 {
        da.signal(libc::SIGSTOP);
        // A statement under way finishes; then the session is idle, in a write or not.
        assert!(wait_until(Duration::from_secs(5), || !busy_states(
            &mut admin,
            "dshq-host-a"
        )
        .iter()
        .any(|s| s == "active")));
        if busy_states(&mut admin, "dshq-host-a")
            .iter()
            .any(|s| s == "idle in transaction")
        {
            caught = true;
            break;
        }
        da.signal(libc::SIGCONT);
        if a.names("answers/new").is_empty() {
            break;
        }
    }
    assert!(caught, "A was never caught inside a write");
    let stopped_at = Instant::now();
    let answered_before: BTreeSet<String> = all_requests(&b)
        .into_iter()
        .filter(|(id, s)| id.starts_with('x') && s == "answered")
        .map(|(id, _)| id)
        .collect();
    assert!(answered_before.len() < N, "A's answers were not all in yet");

    // While A is stopped in its write in x: B's claim and answer in y commit, without
    // waiting for A (A's session is still there, inside its transaction).
    let by = [("DSHQ_LEASE", lease_y.as_str())];
    b.run_env(&by, &["--json", "claim", "y1"]).ok();
    b.run_env(&by, &["--json", "answer", "y1", "--select", "SQLite"])
        .ok();
    assert!(
        busy_states(&mut admin, "dshq-host-a")
            .iter()
            .any(|s| s == "idle in transaction"),
        "B's writes in y committed while A still held its write open"
    );
    // B's writes in x commit within a few seconds too: an ask, and the revocation of
    // alice's lease (which must wait for A's lock on the lease row until the server
    // ends A's idle session).
    let mut r = simple_request("x-late");
    r["context"] = json!("x");
    b.ask(&r).ok();
    b.json(&[
        "provider",
        "revoke",
        "--context",
        "x",
        "--reason",
        "host A is gone",
    ])
    .ok();
    let held_up = stopped_at.elapsed();
    assert!(
        held_up < Duration::from_secs(15),
        "B was held up {held_up:?}"
    );
    println!("B's revocation in x committed {held_up:?} after A stopped");
    // B takes x over and answers one request A had not.
    let lease_x2 = b.register("bob", "x", "10m");
    let pending: Vec<String> = all_requests(&b)
        .into_iter()
        .filter(|(id, s)| id.starts_with('x') && s == "pending")
        .map(|(id, _)| id)
        .collect();
    let by_b = pending
        .first()
        .expect("a request A had not answered")
        .clone();
    b.run_env(
        &[("DSHQ_LEASE", lease_x2.as_str())],
        &["--json", "answer", &by_b, "--select", "SQLite"],
    )
    .ok();

    // A resumes: its write was rolled back with its session, and every answer it still
    // had is refused (alice's lease is revoked): A is fenced.
    da.signal(libc::SIGCONT);
    assert!(
        wait_until(DEADLINE, || a.names("answers/new").is_empty()),
        "A went on: {}",
        da.log_text()
    );
    let after = all_requests(&b);
    let answered_after: BTreeSet<String> = after
        .iter()
        .filter(|(id, s)| id.starts_with('x') && s == "answered")
        .map(|(id, _)| id.clone())
        .collect();
    let mut want = answered_before.clone();
    want.insert(by_b.clone());
    assert_eq!(
        answered_after, want,
        "nothing answered under the revoked lease after A stopped"
    );
    // Each refused file is kept beside the reason it was refused (`ID.json`,
    // `ID.error.json`).
    let refused: BTreeSet<String> = a
        .names("answers/rejected")
        .into_iter()
        .filter(|n| !n.ends_with(".error.json"))
        .collect();
    assert_eq!(
        refused.len(),
        N - answered_before.len(),
        "every answer A still had was refused: {:?}",
        a.names("answers/rejected")
            .iter()
            .take(4)
            .collect::<Vec<_>>()
    );
    let shown = b.json(&["show", &by_b]).ok().json();
    assert_eq!(shown["outcome"]["provider"], "bob", "{shown}");
    // Each request once, and the chain verifies from both hosts.
    assert_eq!(after.len(), N + 3);
    for host in [&a, &b] {
        let v = host.json(&["audit", "verify"]);
        assert_eq!(v.code, 0, "{v:?}");
        assert_eq!(v.json()["ok"], true);
    }
    assert_eq!(da.stop(), 0);
}
