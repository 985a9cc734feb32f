//! `dshq stats`: counts, wait percentiles, approval rate, and what is still waiting.

use super::{history::parse_time, Ctx};
use crate::clock::{human_ms, now_ms};
use crate::error::Result;
use crate::output::emit;
use crate::store::WaitStats;

/// Arguments of `dshq stats`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only requests created at or after: a duration back from now (7d) or RFC 3339.
    #[arg(long)]
    pub since: Option<String>,
}

fn waits(title: &str, w: &[WaitStats]) -> String {
    let mut s = format!("{title}\n");
    if w.is_empty() {
        s.push_str("  (no answered requests)\n");
    }
    for g in w {
        s.push_str(&format!(
            "  {:<20} n={:<6} p50={:<10} p90={:<10} p99={}\n",
            crate::text::one_line(&g.key),
            g.count,
            human_ms(g.p50_ms),
            human_ms(g.p90_ms),
            human_ms(g.p99_ms)
        ));
    }
    s
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let now = now_ms();
    let since = a
        .since
        .as_deref()
        .map(|s| parse_time("since", s, now))
        .transpose()?;
    let mut store = ctx.stored_store()?;
    let st = crate::app::audit::stats(&mut store, since)?;
    emit(ctx.json, &st, || {
        let mut s = format!("requests {}\n", st.total);
        for (k, n) in &st.by_status {
            s.push_str(&format!("  {k:<10} {n}\n"));
        }
        if !st.by_code.is_empty() {
            s.push_str("codes\n");
            for (k, n) in &st.by_code {
                s.push_str(&format!("  {k:<18} {n}\n"));
            }
        }
        s.push_str(&waits("wait by context (answered)", &st.wait_by_context));
        s.push_str(&waits("wait by provider (answered)", &st.wait_by_provider));
        match st.approval_rate {
            Some(r) => s.push_str(&format!(
                "plan reviews: {} approved, {} declined ({:.1}% approved)\n",
                st.approved,
                st.declined,
                r * 100.0
            )),
            None => s.push_str("plan reviews: none decided\n"),
        }
        match &st.oldest_open {
            Some(o) => s.push_str(&format!(
                "open now: {} (oldest {} since {}, waiting {})\n",
                st.open,
                o.id,
                o.created_at,
                human_ms(o.waiting_ms)
            )),
            None => s.push_str("open now: 0\n"),
        }
        s
    });
    Ok(())
}
