//! The composition root: what `dshq daemon` runs, built in one place. The command line
//! ([`crate::cli::daemon`]) parses the flags into settings; here they become the running
//! parts, and nothing below knows how it is assembled:
//!
//! - the file loop ([`crate::daemon`]), synchronous on its own thread;
//! - the channels' sender ([`crate::channels::deliveries`]), started once the loop holds
//!   the root (so a second daemon refused by the root's lock sends nothing), with or
//!   without `--listen`;
//! - with `--listen`, the HTTP host ([`host`]): the host's services ([`crate::host`]: the
//!   database thread, the change broadcast, the shared provider lease, what tokens hold
//!   open, health), and the faces mounted on one router: the web face ([`crate::web`]:
//!   the API and the page), MCP at `/mcp` ([`crate::mcp::http`]) and the channels'
//!   inbound routes ([`crate::channels::routes`]); then the drain at the stop.
//!
//! Only this module (and the command line above it) imports the faces and the host
//! together; no face imports it.

pub mod host;
mod sender;

use std::sync::Arc;

pub use host::WebConfig;

use crate::channels::Channels;
use crate::daemon::{self, Link};
use crate::error::Result;
use crate::root::Root;
use crate::shutdown::Stop;

/// Run `dshq daemon` until the stop: the file loop with the channels' sender beside it,
/// and with `web` (`--listen`) the HTTP host around both.
pub fn daemon(
    root: &Root,
    config: &daemon::Config,
    channels: Option<Channels>,
    web: Option<WebConfig>,
    stop: Arc<Stop>,
) -> Result<()> {
    match web {
        // Without --listen the daemon is the synchronous file loop on this thread.
        None => {
            let (started, sending) = sender::start_with_the_loop(root, channels, &stop, |_| {});
            let link = Link {
                started: Some(started),
                after_pass: None,
            };
            let r = daemon::run(root, config, link, &stop);
            sending.end();
            r
        }
        Some(web) => host::run(root, config, channels, web, stop),
    }
}
