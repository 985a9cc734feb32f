//! Crash, overflow and restart tests: the guarantees of spec §8 under SIGKILL, an inotify
//! event-queue overflow, and a daemon that is simply not running.
//!
//! - `sigkill_loses_nothing_and_duplicates_nothing`: a dropper thread drops request files,
//!   an answerer thread drops answer and abort files for the requests it sees accepted, and
//!   the main thread SIGKILLs and restarts the daemon at random moments. Afterwards every
//!   file is exactly one request, every outcome is in the outbox exactly once and matches
//!   the database, every answer file was applied once or rejected with its reason, and the
//!   event chain verifies. The seed is printed; `DSHQ_CRASH_SEED=N` replays the kill delays
//!   (the threads' interleaving is still up to the scheduler).
//! - `event_queue_overflow_loses_nothing`: more files than the kernel's inotify queue holds
//!   arrive at once (the daemon is SIGSTOPped meanwhile so the queue really overflows); all
//!   are ingested exactly once.
//! - `stopped_daemon_catches_up_on_restart`: files dropped while no daemon runs are ingested
//!   by the startup scan; an outcome committed by the CLI with no daemon reaches the outbox,
//!   and one committed but never written is written by the next daemon.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

use crate::helpers::*;

/// The tests here are heavy (thousands of files, fsyncs, a CPU-bound daemon); run them one
/// at a time so each keeps its time budget on a small machine.
static HEAVY: Mutex<()> = Mutex::new(());

fn heavy() -> MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

/// xorshift64: small, seedable, good enough for kill delays.
struct XorShift(u64);

impl XorShift {
    /// Seeded from `DSHQ_CRASH_SEED` when set, else from the clock.
    fn from_env_or_time() -> XorShift {
        let seed = std::env::var("DSHQ_CRASH_SEED")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            });
        let seed = if seed == 0 {
            0x9E37_79B9_7F4A_7C15
        } else {
            seed
        };
        println!("crash test seed: {seed} (replay with DSHQ_CRASH_SEED={seed})");
        XorShift(seed)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Open the database for reading only (the daemon is the writer).
fn open_read(db: &Path) -> rusqlite::Result<Connection> {
    let c = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    c.busy_timeout(Duration::from_secs(10))?;
    Ok(c)
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// One `SELECT COUNT(*)`, or None when the database cannot be read right now.
fn try_count(db: &Path, sql: &str) -> Option<i64> {
    open_read(db).ok()?.query_row(sql, [], |r| r.get(0)).ok()
}

/// Names in `dir`, including dot-files.
fn all_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = match fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

/// Every ERROR line of every daemon log in the test's temp dir.
fn daemon_errors(env: &Env) -> Vec<String> {
    let mut out = Vec::new();
    for name in all_names(env.dir.path()) {
        if name.starts_with("daemon-") && name.ends_with(".log") {
            let text = fs::read_to_string(env.dir.path().join(&name)).unwrap_or_default();
            out.extend(
                text.lines()
                    .filter(|l| l.contains("ERROR"))
                    .map(|l| format!("{name}: {l}")),
            );
        }
    }
    out
}

/// How often the daemons logged `message` for each `id=...`, over every daemon log: shows
/// which crash windows the kills actually hit (work done again after a restart).
fn log_counts(env: &Env, message: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for name in all_names(env.dir.path()) {
        if name.starts_with("daemon-") && name.ends_with(".log") {
            let text = fs::read_to_string(env.dir.path().join(&name)).unwrap_or_default();
            for line in text.lines().filter(|l| l.contains(message)) {
                if let Some(id) = line.split_whitespace().find_map(|w| w.strip_prefix("id=")) {
                    *out.entry(id.trim_matches('"').to_string()).or_insert(0) += 1;
                }
            }
        }
    }
    out
}

/// Every line of every daemon log that mentions `needle`.
fn log_lines(env: &Env, needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for name in all_names(env.dir.path()) {
        if name.starts_with("daemon-") && name.ends_with(".log") {
            let text = fs::read_to_string(env.dir.path().join(&name)).unwrap_or_default();
            out.extend(
                text.lines()
                    .filter(|l| l.contains(needle))
                    .map(|l| format!("{name}: {l}")),
            );
        }
    }
    out
}

/// The outcome document the database says `id` should have, as JSON.
fn db_outcome(conn: &Connection, id: &str) -> Option<Value> {
    let row = dshq::store::sqlite::requests::get(conn, id).unwrap()?;
    let doc = row.outcome()?.to_file_json();
    Some(serde_json::from_str(&doc).unwrap())
}

// ---------------------------------------------------------------------------------------
// 1. SIGKILL at random moments
// ---------------------------------------------------------------------------------------

/// What the answerer does for request `i` once it sees it accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    Answer,
    Abort,
    /// Both an answer file and an abort file: whichever the daemon sees first wins.
    Both,
    Leave,
}

/// Answer files cost the daemon a transaction each and abort files share a batch, so
/// answers are the smaller share (keeps the test inside its time budget).
fn plan(i: usize) -> Plan {
    match i % 5 {
        0 => Plan::Answer,
        1 | 3 => Plan::Abort,
        2 => Plan::Both,
        _ => Plan::Leave,
    }
}

fn crash_id(i: usize) -> String {
    format!("r{i:04}")
}

fn crash_index(id: &str) -> usize {
    id.strip_prefix('r').unwrap().parse().unwrap()
}

/// Request `i`: some name their id in the JSON, some take it from the file name, some have
/// a timeout (an hour: it never passes here) or meta, so re-delivery after a crash is
/// checked against more than one shape.
fn crash_request(i: usize) -> Vec<u8> {
    let mut v = json!({
        "questions": [{"id": "q", "question": format!("Proceed with step {i}?"),
                       "options": [{"label": "yes"}, {"label": "no"}]}]
    });
    if i.is_multiple_of(2) {
        v["id"] = json!(crash_id(i));
    }
    if i.is_multiple_of(7) {
        v["timeout"] = json!("1h");
    }
    if i.is_multiple_of(11) {
        v["meta"] = json!({"n": i, "nested": {"k": [1, 2, 3]}});
    }
    serde_json::to_vec(&v).unwrap()
}

fn answer_doc(lease: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"lease": lease, "answers": [{"id": "q", "selected": ["yes"]}]}))
        .unwrap()
}

/// What the answerer dropped.
#[derive(Debug, Default)]
struct Dropped {
    answers: BTreeSet<String>,
    aborts: BTreeSet<String>,
    db_errors: usize,
}

/// Poll the database for pending requests and drop answer and abort files for them,
/// once per request, until `stop`.
fn answerer(
    env: &Env,
    lease: &str,
    stop: &AtomicBool,
    acted: &AtomicUsize,
    waiting: &AtomicUsize,
) -> Dropped {
    let db = env.root().join("dshq.db");
    let mut out = Dropped::default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut conn: Option<Connection> = None;
    let answer = answer_doc(lease);
    // Abort files that wait until their answer file has been processed, so that in half
    // of the races the answer wins (an answer and an abort dropped together: the abort
    // wins, as the daemon drains the inbox before the answer files).
    let mut deferred_aborts: Vec<String> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        deferred_aborts.retain(|id| {
            if env
                .root()
                .join("answers/new")
                .join(format!("{id}.json"))
                .exists()
            {
                return true;
            }
            env.drop_file(&format!("{id}.abort"), b"crash test abort\n");
            out.aborts.insert(id.clone());
            false
        });
        waiting.store(deferred_aborts.len(), Ordering::SeqCst);
        if conn.is_none() {
            conn = open_read(&db).ok();
        }
        let pending: Option<Vec<String>> = conn.as_ref().and_then(|c| {
            let mut stmt = c
                .prepare_cached("SELECT id FROM requests WHERE status = 'pending' ORDER BY seq")
                .ok()?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0)).ok()?;
            rows.collect::<rusqlite::Result<Vec<_>>>().ok()
        });
        let Some(pending) = pending else {
            out.db_errors += 1;
            conn = None;
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        for id in pending {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            if !seen.insert(id.clone()) {
                continue;
            }
            let i = crash_index(&id);
            let drop_answer = |out: &mut Dropped| {
                env.drop_answer(&format!("{id}.json"), &answer);
                out.answers.insert(id.clone());
            };
            let drop_abort = |out: &mut Dropped| {
                env.drop_file(&format!("{id}.abort"), b"crash test abort\n");
                out.aborts.insert(id.clone());
            };
            match plan(i) {
                Plan::Answer => drop_answer(&mut out),
                Plan::Abort => drop_abort(&mut out),
                Plan::Both if (i / 5).is_multiple_of(2) => {
                    drop_answer(&mut out);
                    deferred_aborts.push(id.clone());
                }
                Plan::Both => {
                    drop_abort(&mut out);
                    drop_answer(&mut out);
                }
                Plan::Leave => {}
            }
            acted.fetch_add(1, Ordering::SeqCst);
        }
        // Pacing of the poll loop, not synchronization.
        std::thread::sleep(Duration::from_millis(10));
    }
    out
}

#[test]
fn sigkill_loses_nothing_and_duplicates_nothing() {
    let _heavy = heavy();
    let started = Instant::now();
    let n: usize = if cfg!(debug_assertions) { 3000 } else { 6000 };
    const MIN_KILLS: usize = 15;
    const TAIL_KILLS: usize = 5;
    // Past this, the tail starts even if some raced aborts still wait for their answer
    // file (those requests then simply end up with only an answer file).
    const SOFT_LIMIT: Duration = Duration::from_secs(25);
    const KILL_PHASE_LIMIT: Duration = Duration::from_secs(45);
    let mut rng = XorShift::from_env_or_time();
    let env = Env::new();
    let root = env.root();
    let db = root.join("dshq.db");

    let d = env.daemon();
    let lease = env.register("bot", "default", "1h");

    let drops_done = AtomicBool::new(false);
    let stop_answerer = AtomicBool::new(false);
    let acted = AtomicUsize::new(0);
    let waiting = AtomicUsize::new(usize::MAX);
    let mut kills = 0usize;
    let mut kills_in_tail = 0usize;
    let mut drop_time = Duration::ZERO;

    let dropped = std::thread::scope(|s| {
        let dropper = s.spawn(|| {
            let t = Instant::now();
            for i in 0..n {
                env.drop_file(&format!("{}.json", crash_id(i)), &crash_request(i));
            }
            drops_done.store(true, Ordering::SeqCst);
            t.elapsed()
        });
        let answerer = s.spawn(|| answerer(&env, &lease, &stop_answerer, &acted, &waiting));

        // Kill the first daemon (already running) and then restart-and-kill repeatedly.
        let mut daemon = Some(d);
        loop {
            let d = daemon.take().unwrap_or_else(|| env.daemon());
            // A quarter of the kills come almost at once (mid-startup scan), half within a
            // few batches, a quarter late enough for whole batches to commit (a daemon killed
            // every few ms would only ever redo its first uncommitted batch).
            let delay = match rng.below(4) {
                0 => 1 + rng.below(20),
                1 | 2 => 20 + rng.below(280),
                _ => 300 + rng.below(500),
            };
            std::thread::sleep(Duration::from_millis(delay));
            d.kill9();
            kills += 1;
            // The tail: kills after every file is dropped, every request was seen by the
            // answerer and every answer file it raced an abort against was processed, so
            // the last answer and abort files are processed under fire too.
            if drops_done.load(Ordering::SeqCst)
                && acted.load(Ordering::SeqCst) >= n
                && (waiting.load(Ordering::SeqCst) == 0 || started.elapsed() > SOFT_LIMIT)
            {
                kills_in_tail += 1;
            }
            if kills >= MIN_KILLS && kills_in_tail >= TAIL_KILLS {
                break;
            }
            if started.elapsed() > KILL_PHASE_LIMIT {
                // Something is stuck (or lost: the answerer never saw it). Stop killing and
                // let the final checks say what.
                println!(
                    "crash: kill phase cut off after {KILL_PHASE_LIMIT:?}: drops done {}, answerer saw {} of {n}, \
                     {} aborts waiting for their answer file",
                    drops_done.load(Ordering::SeqCst),
                    acted.load(Ordering::SeqCst),
                    waiting.load(Ordering::SeqCst)
                );
                break;
            }
        }
        stop_answerer.store(true, Ordering::SeqCst);
        drop_time = dropper.join().unwrap();
        answerer.join().unwrap()
    });
    let kill_phase = started.elapsed();
    println!(
        "crash: {n} files dropped in {drop_time:?}; {kills} SIGKILLs ({kills_in_tail} after every request was seen) in {kill_phase:?}; \
         answerer dropped {} answer files and {} abort files ({} db read retries)",
        dropped.answers.len(),
        dropped.aborts.len(),
        dropped.db_errors
    );

    // A final daemon drains everything.
    println!(
        "crash: backlog for the final daemon: {} inbox files, {} answer files",
        env.names("inbox/new").len(),
        env.names("answers/new").len()
    );
    let t = Instant::now();
    let d = env.daemon();
    let settled = wait_until(Duration::from_secs(60), || {
        env.names("inbox/new").is_empty()
            && env.names("answers/new").is_empty()
            && try_count(&db, "SELECT COUNT(*) FROM requests WHERE outbox_pending = 1") == Some(0)
            && try_count(
                &db,
                "SELECT COUNT(*) FROM requests WHERE status IN ('answered', 'aborted', 'cancelled')",
            )
            .is_some_and(|f| f as usize == env.names("outbox").len())
    });
    assert!(
        settled,
        "the final daemon did not settle within 60 s: inbox/new {} files, answers/new {} files, outbox {} files\n{}",
        env.names("inbox/new").len(),
        env.names("answers/new").len(),
        env.names("outbox").len(),
        d.log_text()
    );
    println!("crash: final daemon settled in {:?}", t.elapsed());
    assert_eq!(d.stop(), 0, "the final daemon exits cleanly on SIGTERM");

    let conn = Connection::open(&db).unwrap();

    // Every dropped file became exactly one request; nothing was rejected.
    let mut status: BTreeMap<String, String> = BTreeMap::new();
    {
        let mut stmt = conn
            .prepare("SELECT id, status, source FROM requests WHERE status <> 'rejected'")
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .unwrap();
        for row in rows {
            let (id, st, source) = row.unwrap();
            assert_eq!(source, format!("inbox:{id}.json"), "source of {id}");
            assert!(
                status.insert(id.clone(), st).is_none(),
                "request {id} exists twice"
            );
        }
    }
    let expected: BTreeSet<String> = (0..n).map(crash_id).collect();
    let got: BTreeSet<String> = status.keys().cloned().collect();
    let missing: Vec<_> = expected.difference(&got).collect();
    let extra: Vec<_> = got.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "lost requests: {missing:?}; unexpected requests: {extra:?}"
    );
    let rejected = count(
        &conn,
        "SELECT COUNT(*) FROM requests WHERE status = 'rejected'",
    );
    assert_eq!(rejected, 0, "no input was rejected");
    assert!(env.names("rejected").is_empty(), "rejected/ is empty");

    // Final states follow from what the answerer dropped.
    let mut finals: BTreeSet<String> = BTreeSet::new();
    let (mut n_answered, mut n_aborted, mut n_pending, mut both_answered, mut both_aborted) =
        (0, 0, 0, 0, 0);
    for (id, st) in &status {
        let answered_file = dropped.answers.contains(id);
        let abort_file = dropped.aborts.contains(id);
        match (answered_file, abort_file) {
            (true, false) => assert_eq!(st, "answered", "{id} had only an answer file"),
            (false, true) => assert_eq!(st, "aborted", "{id} had only an abort file"),
            (true, true) => {
                assert!(
                    st == "answered" || st == "aborted",
                    "{id} had an answer and an abort file but is {st}"
                );
                if st == "answered" {
                    both_answered += 1;
                } else {
                    both_aborted += 1;
                }
            }
            (false, false) => assert_eq!(st, "pending", "{id} had no answer or abort file"),
        }
        match st.as_str() {
            "answered" => n_answered += 1,
            "aborted" => n_aborted += 1,
            _ => n_pending += 1,
        }
        if st != "pending" {
            finals.insert(id.clone());
        }
    }
    println!(
        "crash: {n_answered} answered, {n_aborted} aborted, {n_pending} pending; \
         answer-vs-abort races: {both_answered} answered, {both_aborted} aborted"
    );
    assert!(n_answered > 0 && n_aborted > 0, "the answerer did act");

    // The outbox holds exactly one file per final request, matching the database.
    let outbox: BTreeSet<String> = env.names("outbox").into_iter().collect();
    let want: BTreeSet<String> = finals.iter().map(|id| format!("{id}.json")).collect();
    let missing: Vec<_> = want.difference(&outbox).collect();
    let extra: Vec<_> = outbox.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "outbox files missing: {missing:?}; outbox files for non-final requests: {extra:?}"
    );
    for id in &finals {
        let file = env.outcome(id).unwrap();
        let want = db_outcome(&conn, id).unwrap();
        assert_eq!(file, want, "outbox/{id}.json matches the database");
        match status[id].as_str() {
            "answered" => {
                assert_eq!(file["status"], "answered");
                assert_eq!(file["answer"]["answers"][0]["selected"], json!(["yes"]));
                assert_eq!(file["provider"], "bot");
            }
            _ => {
                assert_eq!(file["status"], "error");
                assert_eq!(file["error"]["code"], "ASK_ABORTED");
            }
        }
    }
    let outbox_dots: Vec<String> = all_names(&root.join("outbox"))
        .into_iter()
        .filter(|n| n.starts_with('.'))
        .collect();
    println!(
        "crash: {} leftover dot temp files in outbox/ (from kills mid-write)",
        outbox_dots.len()
    );
    for sub in ["inbox/tmp", "inbox/new", "answers/tmp", "answers/new"] {
        assert_eq!(all_names(&root.join(sub)), Vec::<String>::new(), "{sub}");
    }

    // Every answer file was applied, or rejected beside its reason (REQUEST_FINAL: the
    // abort came first), exactly once. None was applied and also rejected. A rejected file
    // is `ID.json`, or `ID.SUFFIX.json` when that name was taken, beside `STEM.error.json`.
    let rejected_dir = root.join("answers/rejected");
    let listing = env.names("answers/rejected");
    let request_of = |stem: &str| stem.split('.').next().unwrap().to_string();
    let mut rejected_inputs: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut orphan_errors = Vec::new();
    for name in &listing {
        if let Some(stem) = name.strip_suffix(".error.json") {
            if !listing.contains(&format!("{stem}.json")) {
                orphan_errors.push(name.clone());
            }
            continue;
        }
        let stem = name.strip_suffix(".json").expect("only .json files");
        rejected_inputs
            .entry(request_of(stem))
            .or_default()
            .push(name.clone());
        let reason = fs::read_to_string(rejected_dir.join(format!("{stem}.error.json")))
            .unwrap_or_else(|e| {
                panic!(
                    "answers/rejected/{name} has no reason file {stem}.error.json ({e}); \
                     answers/rejected holds {:?}; daemon logs: {:?}",
                    listing
                        .iter()
                        .filter(|n| n.starts_with(&request_of(stem)))
                        .collect::<Vec<_>>(),
                    log_lines(&env, name)
                )
            });
        let err: Value = serde_json::from_str(&reason).unwrap();
        assert_eq!(err["code"], "REQUEST_FINAL", "{name}: {err}");
    }
    for id in &dropped.answers {
        let rejected = rejected_inputs.get(id).map(Vec::len).unwrap_or(0);
        match status[id].as_str() {
            "answered" => assert_eq!(rejected, 0, "{id}: answered and also rejected"),
            st => {
                assert_eq!(st, "aborted");
                assert!(
                    dropped.aborts.contains(id),
                    "{id}: an answer-only request not answered"
                );
                assert_eq!(
                    rejected,
                    1,
                    "{id}: its answer file lost to the abort and is rejected exactly once: {:?}",
                    rejected_inputs.get(id)
                );
            }
        }
    }
    for orphan in &orphan_errors {
        // Only after a kill between writing a reason and moving its input; the input was
        // then rejected again under another name.
        let stem = orphan.strip_suffix(".error.json").unwrap();
        assert!(
            rejected_inputs.contains_key(&request_of(stem)),
            "{orphan}: a reason file for an input that is nowhere"
        );
    }
    assert!(
        rejected_inputs
            .keys()
            .all(|id| dropped.answers.contains(id)),
        "answers/rejected holds only dropped answer files: {rejected_inputs:?}"
    );
    println!(
        "crash: {} answer files rejected (lost to an abort), {} orphan reason files",
        rejected_inputs.len(),
        orphan_errors.len()
    );

    // Events: one accepted per request, one answered / aborted per final request, nothing
    // else finished anything; the hash chain verifies.
    let per_kind = |kind: &str| -> BTreeMap<String, i64> {
        let mut stmt = conn
            .prepare(
                "SELECT request_id, COUNT(*) FROM events WHERE kind = ?1 AND request_id IS NOT NULL
                 GROUP BY request_id",
            )
            .unwrap();
        let rows = stmt
            .query_map([kind], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        rows.map(|r| r.unwrap()).collect()
    };
    let accepted = per_kind("accepted");
    assert_eq!(accepted.len(), n, "every request has an accepted event");
    assert!(
        accepted.values().all(|&c| c == 1),
        "accepted twice: {:?}",
        accepted.iter().filter(|(_, &c)| c != 1).collect::<Vec<_>>()
    );
    for kind in ["answered", "aborted"] {
        let ev = per_kind(kind);
        let twice: Vec<_> = ev.iter().filter(|(_, &c)| c != 1).collect();
        assert!(twice.is_empty(), "{kind} more than once: {twice:?}");
        let with_event: BTreeSet<&String> = ev.keys().collect();
        let in_state: BTreeSet<&String> = status
            .iter()
            .filter(|(_, st)| st.as_str() == kind)
            .map(|(id, _)| id)
            .collect();
        assert_eq!(with_event, in_state, "{kind} events match {kind} requests");
    }
    for kind in ["rejected", "cancelled", "claimed", "released"] {
        assert_eq!(
            count(
                &conn,
                &format!("SELECT COUNT(*) FROM events WHERE kind = '{kind}'")
            ),
            0,
            "no {kind} events"
        );
    }
    let (events, broken) = dshq::store::sqlite::events::verify(&conn).unwrap();
    assert_eq!(broken, None, "the event chain verifies ({events} events)");

    let again = |m: &BTreeMap<String, usize>| m.values().filter(|&&c| c > 1).count();
    println!(
        "crash: crash windows hit: {} inbox files re-delivered after a kill, {} answer files \
         applied again (idempotently) after a kill, {} outcome files written again",
        log_counts(&env, "re-delivery of an accepted request").len(),
        again(&log_counts(&env, "answered by answer file")),
        again(&log_counts(&env, "outcome written")),
    );

    let errors = daemon_errors(&env);
    assert!(
        errors.is_empty(),
        "daemon logged errors:\n{}",
        errors.join("\n")
    );
    println!(
        "crash: verified {events} events; whole test took {:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------
// 2. inotify event-queue overflow
// ---------------------------------------------------------------------------------------

#[test]
fn event_queue_overflow_loses_nothing() {
    let _heavy = heavy();
    let started = Instant::now();
    let limit: usize = fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16384);
    let n = limit + 2000;
    let env = Env::new();
    let root = env.root();
    let db = root.join("dshq.db");
    let d = env.daemon();

    // Stage the files on the same filesystem, then rename them in as one burst.
    let stage: PathBuf = env.dir.path().join("stage");
    fs::create_dir(&stage).unwrap();
    let names: Vec<String> = (0..n).map(|i| format!("o{i:05}.json")).collect();
    for name in &names {
        let body = json!({"questions": [{"id": "q", "question": "Burst?",
                                         "options": [{"label": "yes"}, {"label": "no"}]}]});
        fs::write(stage.join(name), serde_json::to_vec(&body).unwrap()).unwrap();
    }
    let staged = started.elapsed();

    // The daemon is stopped while the burst arrives, so the kernel queue (`limit` events)
    // really overflows instead of being drained as fast as it fills.
    d.signal(libc::SIGSTOP);
    let inbox = root.join("inbox/new");
    let t = Instant::now();
    for name in &names {
        fs::rename(stage.join(name), inbox.join(name)).unwrap();
    }
    let burst = t.elapsed();
    d.signal(libc::SIGCONT);

    let t = Instant::now();
    let pending = "SELECT COUNT(*) FROM requests WHERE status = 'pending'";
    let done = wait_until(Duration::from_secs(90), || {
        try_count(&db, pending) == Some(n as i64) && env.names("inbox/new").is_empty()
    });
    let ingest = t.elapsed();
    assert!(
        done,
        "not all {n} files ingested within 90 s: {:?} pending, {} still in inbox/new\n{}",
        try_count(&db, pending),
        env.names("inbox/new").len(),
        d.log_text()
    );
    assert_eq!(d.stop(), 0);

    let conn = Connection::open(&db).unwrap();
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM requests WHERE status = 'rejected'"
        ),
        0
    );
    assert_eq!(
        count(&conn, "SELECT COUNT(DISTINCT id) FROM requests") as usize,
        n,
        "every id once"
    );
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM requests") as usize, n);
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM (SELECT request_id FROM events WHERE kind = 'accepted'
             GROUP BY request_id HAVING COUNT(*) = 1)"
        ) as usize,
        n,
        "one accepted event per request"
    );
    let ids: BTreeSet<String> = {
        let mut stmt = conn.prepare("SELECT id FROM requests").unwrap();
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap();
        rows.map(|r| r.unwrap()).collect()
    };
    let want: BTreeSet<String> = names
        .iter()
        .map(|n| n.strip_suffix(".json").unwrap().to_string())
        .collect();
    assert_eq!(ids, want);
    assert!(env.names("rejected").is_empty());
    let (_, broken) = dshq::store::sqlite::events::verify(&conn).unwrap();
    assert_eq!(broken, None);
    println!(
        "overflow: queue limit {limit}, {n} files; staged in {staged:?}, burst of renames in {burst:?}, \
         all ingested {ingest:?} after SIGCONT; whole test {:?}",
        started.elapsed()
    );
}

// ---------------------------------------------------------------------------------------
// 3. Restart: startup scan and outbox catch-up
// ---------------------------------------------------------------------------------------

#[test]
fn stopped_daemon_catches_up_on_restart() {
    let _heavy = heavy();
    let started = Instant::now();
    let env = Env::new();
    let root = env.root();
    let db = root.join("dshq.db");

    // A daemon creates the layout and the database, then stops.
    assert_eq!(env.daemon().stop(), 0);

    // Files dropped while no daemon runs are ingested by the startup scan.
    let n = 200;
    let ids: Vec<String> = (0..n).map(|i| format!("s{i:03}")).collect();
    let bodies: Vec<Vec<u8>> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut req = simple_request(id);
            if i % 2 == 1 {
                // Id from the file name.
                req.as_object_mut().unwrap().remove("id");
            }
            serde_json::to_vec(&req).unwrap()
        })
        .collect();
    for (id, body) in ids.iter().zip(&bodies) {
        env.drop_file(&format!("{id}.json"), body);
    }
    assert_eq!(env.names("inbox/new").len(), n);
    let d = env.daemon();
    let pending = "SELECT COUNT(*) FROM requests WHERE status = 'pending'";
    assert!(
        wait_until(DEADLINE, || {
            env.names("inbox/new").is_empty() && try_count(&db, pending) == Some(n as i64)
        }),
        "the startup scan did not ingest all {n} files: {:?} pending, {} left\n{}",
        try_count(&db, pending),
        env.names("inbox/new").len(),
        d.log_text()
    );
    assert_eq!(d.stop(), 0);
    assert!(env.names("outbox").is_empty(), "nothing is final yet");

    // With no daemon, the CLI writes the outcome itself.
    let r = env
        .json(&["answer", "s000", "--select", "Postgres", "--name", "alice"])
        .ok();
    assert_eq!(r.json()["status"], "answered", "{}", r.stdout);
    let file = env.outcome("s000").expect("the CLI wrote outbox/s000.json");
    let conn = Connection::open(&db).unwrap();
    assert_eq!(Some(file.clone()), db_outcome(&conn, "s000"));
    assert_eq!(
        file["answer"]["answers"][0]["selected"],
        json!(["Postgres"])
    );
    let r = env
        .json(&["abort", "s001", "--reason", "no longer needed"])
        .ok();
    assert_eq!(r.json()["error"]["code"], "ASK_ABORTED", "{}", r.stdout);
    assert_eq!(env.outcome("s001"), db_outcome(&conn, "s001"));

    // "Committed but not written": the outcome is in the database, the file is not.
    env.json(&["answer", "s002", "--select", "SQLite", "--name", "alice"])
        .ok();
    env.json(&["abort", "s003"]).ok();
    for id in ["s002", "s003"] {
        fs::remove_file(root.join("outbox").join(format!("{id}.json"))).unwrap();
        let changed = conn
            .execute(
                "UPDATE requests SET outbox_pending = 1 WHERE id = ?1 AND status <> 'rejected'",
                [id],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }
    drop(conn);
    assert_eq!(env.outcome("s002"), None);

    let d = env.daemon();
    for id in ["s002", "s003"] {
        env.wait_outcome(id);
    }
    assert!(
        wait_until(DEADLINE, || try_count(
            &db,
            "SELECT COUNT(*) FROM requests WHERE outbox_pending = 1"
        ) == Some(0)),
        "the outbox flags were not cleared"
    );
    assert_eq!(d.stop(), 0);

    let conn = Connection::open(&db).unwrap();
    for id in ["s000", "s001", "s002", "s003"] {
        assert_eq!(env.outcome(id), db_outcome(&conn, id), "outbox/{id}.json");
    }
    assert_eq!(
        env.outcome("s002").unwrap()["answer"]["answers"][0]["selected"],
        json!(["SQLite"])
    );
    assert_eq!(env.outcome("s003").unwrap()["error"]["code"], "ASK_ABORTED");
    assert_eq!(
        env.names("outbox"),
        vec!["s000.json", "s001.json", "s002.json", "s003.json"]
    );
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM requests WHERE status = 'pending'"
        ),
        n as i64 - 4
    );
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM events WHERE kind = 'accepted'"),
        n as i64
    );
    drop(conn);

    // "Committed but the input not yet removed", for both directories: the daemon is
    // killed after its commit and before the unlink. Simulated by dropping the identical
    // files again with the daemon stopped: each is recognised and applied once.
    let d = env.daemon();
    let lease = env.register("bot", "default", "1h");
    let answer = serde_json::to_vec(
        &json!({"lease": lease, "answers": [{"id": "db", "selected": ["Postgres"]}]}),
    )
    .unwrap();
    env.drop_answer("s004.json", &answer);
    assert_eq!(env.wait_outcome("s004")["status"], "answered");
    assert!(wait_until(DEADLINE, || env.names("answers/new").is_empty()));
    assert_eq!(d.stop(), 0);
    env.drop_answer("s004.json", &answer);
    env.drop_file("s004.json", &bodies[4]);
    env.drop_file("s005.json", &bodies[5]);
    let d = env.daemon();
    assert!(
        wait_until(DEADLINE, || env.names("answers/new").is_empty()
            && env.names("inbox/new").is_empty()),
        "re-delivered files not processed\n{}",
        d.log_text()
    );
    assert_eq!(d.stop(), 0);
    assert!(
        env.names("answers/rejected").is_empty(),
        "the re-applied answer file is accepted once"
    );
    assert!(
        env.names("rejected").is_empty(),
        "re-delivered request files are accepted once"
    );
    let conn = Connection::open(&db).unwrap();
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM events WHERE kind = 'answered' AND request_id = 's004'"
        ),
        1
    );
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM events WHERE kind = 'accepted'"),
        n as i64
    );
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM requests"), n as i64);
    assert_eq!(
        dshq::store::sqlite::requests::get(&conn, "s005")
            .unwrap()
            .unwrap()
            .status
            .as_str(),
        "pending"
    );
    assert_eq!(env.outcome("s004"), db_outcome(&conn, "s004"));

    let (_, broken) = dshq::store::sqlite::events::verify(&conn).unwrap();
    assert_eq!(broken, None);
    println!("restart: whole test {:?}", started.elapsed());
}
