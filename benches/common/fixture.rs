//! The large-store fixture both `store` and `growth` benches read: built through the real
//! store functions once per size and cached under `target/bench-fixtures/`, so the two
//! benches measure the same store.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Instant;

use dshq::clock::Millis;
use dshq::protocol::{Answer, AnswerItem, Request};
use dshq::store::queue::leases;
use dshq::store::sqlite::tx::SqlRead;
use dshq::store::sqlite::{self as store};

pub const DAY: Millis = 86_400_000;
pub const T0: Millis = 1_780_000_000_000;

pub fn request(id: &str, agent: Option<(&str, &str)>, context: &str, plan: bool) -> Request {
    let mut v = serde_json::json!({
        "id": id,
        "context": context,
        "questions": [{"id": "q", "question": format!("Which database for {id}?"),
                        "options": [{"label": "Postgres"}, {"label": "SQLite"}]}]
    });
    if plan {
        v["questions"][0]["detail"] = "1. do it\n2. check it".into();
        v["questions"][0]["intent"] =
            serde_json::json!({"kind": "plan-review", "approve": "SQLite"});
    }
    if let Some((a, i)) = agent {
        v["agent"] = serde_json::json!({"id": a, "instance": i});
    }
    serde_json::from_value(v).unwrap()
}

pub fn answer(label: &str) -> Answer {
    Answer {
        answers: vec![AnswerItem {
            id: "q".into(),
            selected: vec![label.into()],
            custom: None,
            edited: None,
        }],
    }
}

/// The `history` query both benches time: one agent's requests in a 7-day window a month
/// before `now`, at most 100 rows.
pub fn history_filter(now: Millis) -> dshq::store::HistoryFilter {
    dshq::store::HistoryFilter {
        agent: Some("agent-42".into()),
        since: Some(now - 30 * DAY),
        until: Some(now - 23 * DAY),
        limit: Some(100),
        ..Default::default()
    }
}

pub fn fixture_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench-fixtures")
}

/// A store of `n` requests over 90 days: 1,000 agents, 5 contexts with a provider each,
/// 80% answered (a fifth of them plan reviews, two thirds approved), 10% pending, 5%
/// cancelled, 5% aborted. Built through the real store functions.
pub fn fixture(n: usize) -> PathBuf {
    let dir = fixture_dir();
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("store-v2-{n}.db"));
    if path.exists() {
        return path;
    }
    let tmp = dir.join(format!("store-v2-{n}.db.building"));
    let _ = std::fs::remove_file(&tmp);
    let started = Instant::now();
    let mut conn = store::open(&tmp).unwrap();
    let contexts = ["default", "ops", "data", "infra", "web"];
    let agents: Vec<(String, String)> = store::write(&mut conn, T0, |tx| {
        (0..1000)
            .map(|a| {
                let e = dshq::store::queue::agents::enter(
                    tx,
                    T0,
                    &format!("agent-{a}"),
                    None,
                    None,
                    None,
                )?;
                Ok((e.id, e.instance))
            })
            .collect()
    })
    .unwrap();
    let tokens: Vec<String> = store::write(&mut conn, T0, |tx| {
        contexts
            .iter()
            .enumerate()
            .map(|(i, c)| {
                Ok(leases::register(tx, T0, c, &format!("reviewer-{i}"), 1_000 * DAY, None)?.lease)
            })
            .collect()
    })
    .unwrap();
    let span = 90 * DAY;
    let chunk = 10_000;
    for start in (0..n).step_by(chunk) {
        let end = (start + chunk).min(n);
        let now = T0 + (end as i64) * span / n as i64;
        store::write(&mut conn, now, |tx| {
            for j in start..end {
                let created = T0 + (j as i64) * span / n as i64;
                let c = j % contexts.len();
                let (a, inst) = &agents[(j * 7) % agents.len()];
                let plan = j % 5 == 0;
                let id = format!("req-{j:07}");
                dshq::store::queue::requests::accept(
                    tx,
                    created,
                    request(&id, Some((a, inst)), contexts[c], plan),
                    None,
                    "bench",
                    &Default::default(),
                )?;
                let lease = leases::authenticate(&mut SqlRead(tx), &tokens[c], created)?;
                match j % 20 {
                    0..=15 => {
                        let label = if plan && j % 3 == 0 {
                            "Postgres"
                        } else {
                            "SQLite"
                        };
                        let at = created + ((j as i64 * 7919) % 3_600) * 1000;
                        dshq::store::queue::answers::answer(
                            tx,
                            at,
                            &lease,
                            &id,
                            &answer(label),
                            &Default::default(),
                        )?;
                    }
                    16 => {
                        dshq::store::queue::answers::cancel(
                            tx,
                            created + 60_000,
                            &lease,
                            &id,
                            Some("not mine"),
                        )?;
                    }
                    17 => {
                        dshq::store::queue::answers::abort(
                            tx,
                            created + 120_000,
                            &id,
                            None,
                            &dshq::core::audit::Actor::Asker,
                        )?;
                    }
                    _ => {}
                }
            }
            Ok(())
        })
        .unwrap();
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); ANALYZE;")
        .unwrap();
    drop(conn);
    std::fs::rename(&tmp, &path).unwrap();
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", tmp.display()));
    }
    eprintln!("built fixture of {n} requests in {:.1?}", started.elapsed());
    path
}
