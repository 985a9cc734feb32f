//! Wait-time figures of `stats`, backend-neutral: a backend reads the answered requests'
//! waits (its SQL) and groups them; the percentiles of each group are computed here, so
//! that SQLite and PostgreSQL report the same figures for the same rows.

use std::collections::BTreeMap;

use crate::clock::Millis;
use crate::store::types::WaitStats;

/// Nearest-rank percentile of sorted values: the value at rank ceil(p/100 * n).
pub fn percentile(sorted: &[Millis], p: u32) -> Millis {
    if sorted.is_empty() {
        return 0;
    }
    let n = sorted.len();
    let rank = (p as usize * n).div_ceil(100).max(1);
    sorted[rank.min(n) - 1]
}

/// Each group's count and p50/p90/p99 (its waits sorted here), in key order.
pub fn wait_stats(groups: BTreeMap<String, Vec<Millis>>) -> Vec<WaitStats> {
    groups
        .into_iter()
        .map(|(key, mut waits)| {
            waits.sort_unstable();
            WaitStats {
                key,
                count: waits.len(),
                p50_ms: percentile(&waits, 50),
                p90_ms: percentile(&waits, 90),
                p99_ms: percentile(&waits, 99),
            }
        })
        .collect()
}
