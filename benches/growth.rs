//! Growth and retention (issue 17): bytes per request in the database, `history`,
//! `stats` and `list` on a large store, and `prune`'s own speed and the size after prune +
//! VACUUM.
//!
//! `cargo bench --bench growth` (sizes: `DSHQ_BENCH_SIZES=100000,1000000`, default 1M;
//! `DSHQ_BENCH_NO_PRUNE=1` measures the reads only, without the prune of a copy).
//! It shares `benches/store.rs`'s fixtures (built through the real store functions, cached
//! under `target/bench-fixtures/`), and prunes a copy of each: the requests still pending
//! from before the cut are aborted first (as their deadlines would) and the outcomes marked
//! written (the fixture writes no outcome files), then the first 30 of the 90 days are
//! pruned into an export file beside the copy.

use std::time::{Duration, Instant};

use dshq::root::Root;
use dshq::store::queue::history;
use dshq::store::sqlite::tx::SqlRead;
use dshq::store::sqlite::{self as store, requests, SqliteStore};
use dshq::store::{ListFilter, Status, Store};

#[path = "common/fixture.rs"]
mod fixture;
use fixture::{fixture, fixture_dir, DAY, T0};

fn sizes() -> Vec<usize> {
    std::env::var("DSHQ_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1_000_000])
}

fn file_size(p: &std::path::Path) -> u64 {
    let wal = std::fs::metadata(format!("{}-wal", p.display())).map_or(0, |m| m.len());
    std::fs::metadata(p).map_or(0, |m| m.len()) + wal
}

/// The median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut t: Vec<Duration> = (0..runs)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[t.len() / 2]
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    for n in sizes() {
        let path = fixture(n);
        let size = file_size(&path);
        let conn = store::open(&path).unwrap();
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        let rows = count("SELECT COUNT(*) FROM requests");
        let events = count("SELECT COUNT(*) FROM events");
        println!("== {n} requests ({events} events)");
        println!(
            "database {:.1} MiB: {:.0} bytes per request",
            size as f64 / 1048576.0,
            size as f64 / rows as f64
        );
        // Where the bytes are (dbstat needs SQLITE_ENABLE_DBSTAT_VTAB, which bundled
        // rusqlite may lack: then only the total is printed).
        if let Ok(mut stmt) = conn
            .prepare("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 12")
        {
            let parts: Vec<(String, i64)> = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            for (name, bytes) in parts {
                println!(
                    "  {name}: {:.0} bytes per request",
                    bytes as f64 / rows as f64
                );
            }
        }
        let now = T0 + 90 * DAY;
        let filter = fixture::history_filter(now);
        let t = median(21, || {
            history::history(&mut SqlRead(&conn), &filter, now).unwrap();
        });
        println!(
            "history (agent, 7 days, <= 100 rows): {:.2} ms",
            t.as_secs_f64() * 1e3
        );
        let t = median(5, || {
            history::stats(&mut SqlRead(&conn), None, now).unwrap();
        });
        println!("stats (everything): {:.0} ms", t.as_secs_f64() * 1e3);
        for (what, f) in [
            (
                "list (newest 100)",
                ListFilter {
                    limit: Some(100),
                    ..Default::default()
                },
            ),
            (
                "list --status pending (newest 100)",
                ListFilter {
                    status: Some(Status::Pending),
                    limit: Some(100),
                    ..Default::default()
                },
            ),
            (
                "list --context ops (newest 100)",
                ListFilter {
                    contexts: vec!["ops".into()],
                    limit: Some(100),
                    ..Default::default()
                },
            ),
        ] {
            let t = median(21, || {
                requests::list(&conn, &f).unwrap();
            });
            println!("{what}: {:.2} ms", t.as_secs_f64() * 1e3);
        }
        drop(conn);
        if std::env::var_os("DSHQ_BENCH_NO_PRUNE").is_some() {
            // A copy of a 10M store is another 15 GB: the reads alone.
            continue;
        }

        // Prune a copy: the first 30 days.
        let work = fixture_dir().join(format!("prune-{n}"));
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        let root = Root::new(&work);
        std::fs::copy(&path, root.db()).unwrap();
        std::fs::copy(fixture_dir().join("audit.key"), work.join("audit.key")).unwrap();
        std::fs::create_dir_all(root.outbox()).unwrap();
        let cut = T0 + 30 * DAY;
        let mut st = SqliteStore::with_clock(
            store::open(&root.db()).unwrap(),
            std::sync::Arc::new(move || now),
        );
        let stale: Vec<String> = st
            .connection()
            .prepare("SELECT id FROM requests WHERE status = 'pending' AND created_ms < ?1")
            .unwrap()
            .query_map([cut], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        store::write(st.connection(), cut - 1, |tx| {
            for id in &stale {
                dshq::store::queue::answers::abort(
                    tx,
                    cut - 1,
                    id,
                    None,
                    &dshq::core::audit::Actor::Daemon,
                )?;
            }
            Ok(())
        })
        .unwrap();
        // The fixture never wrote outcome files: as if the daemon had.
        st.connection()
            .execute(
                "UPDATE requests SET outbox_pending = 0 WHERE outbox_pending = 1",
                [],
            )
            .unwrap();
        let export = work.join("export.ndjson");
        let mut st: Store = st.into();
        let started = Instant::now();
        let report = dshq::app::prune::prune(
            &mut st,
            &root,
            cut,
            None,
            &dshq::core::audit::Actor::Cli,
            &export,
            true,
        )
        .unwrap();
        let took = started.elapsed();
        // The SQLite file's own reads and maintenance, beside the store.
        let conn = store::open(&root.db()).unwrap();
        let p = &report.pruned;
        println!(
            "prune 30 of 90 days: {} requests, {} events in {:.1} s = {:.0} requests/s; export {:.1} MiB ({} records); stopped at {:?}",
            p.requests,
            p.events,
            took.as_secs_f64(),
            p.requests as f64 / took.as_secs_f64(),
            file_size(&export) as f64 / 1048576.0,
            report.records,
            p.stopped_at
        );
        let cp: String = conn
            .query_row(
                "SELECT data FROM events WHERE kind = 'pruned' ORDER BY seq DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        println!("checkpoint event data: {} bytes", cp.len());
        let started = Instant::now();
        let v = st.verify(&[]).unwrap();
        println!(
            "verify after prune: {:?} ({} events, {:.1} s)",
            v.broken,
            v.events,
            started.elapsed().as_secs_f64()
        );
        let left: i64 = conn
            .query_row("SELECT COUNT(*) FROM requests", [], |r| r.get(0))
            .unwrap();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        let before_vacuum = file_size(&root.db());
        let started = Instant::now();
        conn.execute_batch("VACUUM;").unwrap();
        let vac = started.elapsed();
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        let after = file_size(&root.db());
        println!(
            "after prune: {:.1} MiB before VACUUM, {:.1} MiB after ({:.1} s), {left} requests: {:.0} bytes per request",
            before_vacuum as f64 / 1048576.0,
            after as f64 / 1048576.0,
            vac.as_secs_f64(),
            after as f64 / left as f64
        );
        drop(st);
        let _ = std::fs::remove_dir_all(&work);
    }
}
