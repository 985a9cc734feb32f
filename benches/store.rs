//! In-process benchmarks of the store (criterion): claim + answer committed with
//! `synchronous=FULL`, with and without the durable outcome file, and the audit queries
//! on stores of 10k, 100k and 1M requests.
//!
//! `cargo bench --bench store` (filters work: `cargo bench --bench store -- history`).
//! The large fixtures are built once through the real store functions and cached under
//! `target/bench-fixtures/`; set `DSHQ_BENCH_SIZES=10000,100000` to skip the 1M one.

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rusqlite::Connection;

use dshq::files::outbox;
use dshq::root::Root;
use dshq::store::queue::history;
use dshq::store::queue::leases;
use dshq::store::sqlite::tx::SqlRead;
use dshq::store::sqlite::{self as store, SqliteStore};
use dshq::store::{AnyDriver, Store};

#[path = "common/fixture.rs"]
mod fixture;
use fixture::{answer, fixture, request, DAY, T0};

/// A fresh store in a temp dir with `n` pending requests and a live lease.
fn pending_store(n: usize) -> (tempfile::TempDir, Root, Store, dshq::store::Lease) {
    let dir = tempfile::tempdir().unwrap();
    let root = Root::new(dir.path().join("root"));
    root.ensure_layout().unwrap();
    let mut st = SqliteStore::open(&root.db()).unwrap();
    let now = dshq::clock::now_ms();
    let token = store::write(st.connection(), now, |tx| {
        for i in 0..n {
            dshq::store::queue::requests::accept(
                tx,
                now,
                request(&format!("r{i}"), None, "default", false),
                None,
                "bench",
                &Default::default(),
            )?;
        }
        Ok(leases::register(tx, now, "default", "bench", 3_600_000, None)?.lease)
    })
    .unwrap();
    let lease = leases::authenticate(&mut SqlRead(st.connection()), &token, now).unwrap();
    (dir, root, st.into(), lease)
}

/// The SQLite connection under `st`.
fn connection(st: &mut Store) -> &mut Connection {
    match st.driver() {
        AnyDriver::Sqlite(d) => d.connection(),
        AnyDriver::Postgres(_) => panic!("the bench opened a SQLite store"),
    }
}

fn claim_answer(c: &mut Criterion) {
    let mut g = c.benchmark_group("claim_answer");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    for group_size in [1usize, 16, 64] {
        for with_outbox in [false, true] {
            let name = if with_outbox {
                "answer+outcome_file"
            } else {
                "answer"
            };
            g.bench_function(
                BenchmarkId::new(name, format!("{group_size}_per_commit")),
                |b| {
                    b.iter_custom(|iters| {
                        let (_dir, root, mut st, lease) = pending_store(iters as usize);
                        let now = dshq::clock::now_ms();
                        let start = Instant::now();
                        let mut i = 0u64;
                        while i < iters {
                            let end = (i + group_size as u64).min(iters);
                            store::write(connection(&mut st), now, |tx| {
                                for k in i..end {
                                    let id = format!("r{k}");
                                    dshq::store::queue::answers::claim(tx, now, &lease, &id)?;
                                    dshq::store::queue::answers::answer(
                                        tx,
                                        now,
                                        &lease,
                                        &id,
                                        &answer("Postgres"),
                                        &Default::default(),
                                    )?;
                                }
                                Ok(())
                            })
                            .unwrap();
                            if with_outbox {
                                outbox::flush(&root, &mut st, dshq::app::receipts::attach).unwrap();
                            }
                            i = end;
                        }
                        start.elapsed()
                    })
                },
            );
        }
    }
    g.finish();
}

/// The floor of the outcome-file path on this file system: create, write and rename 64
/// small files made durable with one syncfs and one directory fsync, no database.
fn outcome_files_raw(c: &mut Criterion) {
    let mut g = c.benchmark_group("outcome_files_raw");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("64_per_sync", |b| {
        b.iter_custom(|iters| {
            let dir = tempfile::tempdir().unwrap();
            let body = br#"{"id":"r","status":"answered","answer":{"answers":[{"id":"q","selected":["A"]}]}}"#;
            let start = Instant::now();
            let mut i = 0u64;
            while i < iters {
                let end = (i + 64).min(iters);
                let mut temps = Vec::new();
                for k in i..end {
                    let name = format!("r{k}.json");
                    temps.push((
                        dshq::disk::atomic::write_temp(dir.path(), &name, body, false).unwrap(),
                        dir.path().join(name),
                    ));
                }
                dshq::disk::atomic::sync_filesystem(dir.path()).unwrap();
                for (t, target) in temps {
                    std::fs::rename(t, target).unwrap();
                }
                dshq::disk::atomic::sync_dir(dir.path()).unwrap();
                i = end;
            }
            start.elapsed()
        })
    });
    g.finish();
}

fn sizes() -> Vec<usize> {
    std::env::var("DSHQ_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000])
}

fn open_ro(path: &Path) -> Connection {
    store::open(path).unwrap()
}

fn audit_queries(c: &mut Criterion) {
    let mut g = c.benchmark_group("audit");
    g.sample_size(20);
    for n in sizes() {
        let path = fixture(n);
        let conn = open_ro(&path);
        let now = T0 + 90 * DAY;
        let filter = fixture::history_filter(now);
        let rows = history::history(&mut SqlRead(&conn), &filter, now).unwrap();
        eprintln!(
            "history(agent, 7-day window, limit 100) on {n}: {} rows",
            rows.len()
        );
        g.bench_function(BenchmarkId::new("history_agent_7d_100", n), |b| {
            b.iter(|| history::history(&mut SqlRead(&conn), &filter, now).unwrap())
        });
        g.bench_function(BenchmarkId::new("stats_all", n), |b| {
            b.iter(|| history::stats(&mut SqlRead(&conn), None, now).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, claim_answer, outcome_files_raw, audit_queries);
criterion_main!(benches);
