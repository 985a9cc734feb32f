//! `dshq mcp`: the MCP server over stdio, what an MCP host launches from its config.
//!
//! It opens the store itself (no daemon needed, like `dshq ask`): a question asked here is
//! committed before the tool waits, its outcome file is published by whoever answers it,
//! and a running daemon (if any) does the rest as for any request. stdout carries the
//! protocol only; logs go to stderr.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ServiceExt;

use super::{parse_wait_timeout, Ctx};
use crate::error::{Error, Result};
use crate::mcp::backend::{Backend, Local};
use crate::mcp::server::DshqServer;
use crate::mcp::Config;
use crate::protocol::check::check_id;
use crate::protocol::types::AgentRef;

/// Arguments of `dshq mcp`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Ask as this registered agent (`dshq agent enter --id ID`) when a question names no
    /// agent; the registry's rules (CALLER_NOT_LIVE, DELEGATED_CALLER) then apply.
    #[arg(long, value_name = "ID", requires = "instance")]
    pub agent: Option<String>,
    /// The agent's instance, as `dshq agent enter` printed it.
    #[arg(
        long,
        env = "DSHQ_AGENT_INSTANCE",
        value_name = "INSTANCE",
        requires = "agent"
    )]
    pub instance: Option<String>,
    /// How long `ask_user_question` waits for the answer before it returns "pending"
    /// (keep it under the host's tool-call timeout).
    #[arg(long, value_name = "DUR", value_parser = parse_wait_timeout, default_value = "20s")]
    pub wait: Duration,
    /// The longest wait a tool call may ask for with `waitSeconds`.
    #[arg(long, value_name = "DUR", value_parser = parse_wait_timeout, default_value = "50s")]
    pub max_wait: Duration,
    /// How long one `review_questions` form may stay unanswered before the review stops
    /// (and its lease is released); for `review_next`, how long a review may wait for the
    /// client's retry (its requestState's expiry) before it ends and releases the lease.
    #[arg(long, value_name = "DUR", value_parser = parse_wait_timeout, default_value = "10m")]
    pub form_timeout: Duration,
}

/// Run it until the client closes stdin.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let agent = match (a.agent, a.instance) {
        (Some(id), Some(instance)) => {
            check_id("agent id", &id)?;
            check_id("agent instance", &instance)?;
            Some(AgentRef { id, instance })
        }
        _ => None,
    };
    if a.wait > a.max_wait {
        return Err(Error::Usage(format!(
            "--wait {} is longer than --max-wait {}",
            humantime::format_duration(a.wait),
            humantime::format_duration(a.max_wait)
        )));
    }
    let config = Config {
        agent,
        wait: a.wait,
        max_wait: a.max_wait,
        review_form_timeout: a.form_timeout,
        ..Config::default()
    };
    let local = Arc::new(Local::open(&ctx.root)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("dshq-mcp")
        .enable_all()
        .build()
        .map_err(|e| Error::io("tokio runtime", e))?;
    rt.block_on(async move {
        let server = DshqServer::new(Backend::Local(local), config);
        let inflight = server.inflight();
        // When stdin and stdout are pipes (as hosts launch a server), they are read and
        // written on the runtime's reactor; the plain `stdio()` handles hand every read
        // and write to a blocking-pool thread, a thread hand-off per message each way
        // (docs/PERFORMANCE.md). Anything else (a terminal, a file) falls back
        // to those handles.
        let running = server
            .serve(rmcp::transport::stdio_pipes())
            .await
            .map_err(|e| Error::io("stdio", std::io::Error::other(e.to_string())))?;
        tracing::info!("MCP server on stdio");
        let _ = running.waiting().await;
        // The session is over and the SDK has cancelled the calls still running: let
        // them finish what follows a cancel (a review releases its lease) before exiting.
        if tokio::time::timeout(Duration::from_secs(10), inflight.write())
            .await
            .is_err()
        {
            tracing::warn!("a tool call did not end within 10 s of the session's end");
        }
        Ok::<(), Error>(())
    })?;
    // The fallback's blocking read of stdin may still be pending in the runtime; do not
    // wait for it.
    rt.shutdown_timeout(Duration::from_millis(100));
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::mcp::{DEFAULT_MAX_WAIT, DEFAULT_WAIT};

    #[test]
    fn the_flag_defaults_are_the_constants() {
        assert_eq!(super::parse_wait_timeout("20s"), Ok(DEFAULT_WAIT));
        assert_eq!(super::parse_wait_timeout("50s"), Ok(DEFAULT_MAX_WAIT));
        assert_eq!(
            super::parse_wait_timeout("10m"),
            Ok(crate::mcp::DEFAULT_FORM_TIMEOUT)
        );
    }
}
