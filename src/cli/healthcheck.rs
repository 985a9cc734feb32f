//! `dshq healthcheck`: exit 0 when the daemon is ready, 1 when not (for a container's or a
//! service manager's health check).
//!
//! With an address (`--url`, else the daemon's `metrics` or `listen` setting from the
//! config file or its variable), it asks `GET /readyz` there and is ready on a 200. With
//! none (a daemon without `--listen`), it is ready when a daemon holds the root's lock.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use super::Ctx;
use crate::error::{Error, Result};

/// How long the probe may take in all.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Arguments of `dshq healthcheck`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The daemon's address: http://HOST:PORT, HOST:PORT or a bare PORT (loopback).
    /// Default: the daemon's metrics, else listen, setting.
    #[arg(long, env = "DSHQ_HEALTHCHECK_URL", value_name = "URL")]
    pub url: Option<String>,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args, explicit: Option<PathBuf>) -> Result<()> {
    let addr = match a.url {
        Some(u) => Some(u),
        None => configured_address(explicit)?,
    };
    let Some(addr) = addr else {
        // No listener: the daemon is alive when it holds the root.
        return match crate::daemon::lock_root(&ctx.root) {
            Err(e) if e.code() == crate::protocol::Code::DaemonRunning => {
                println!("running");
                Ok(())
            }
            Ok(_) => Err(not_ready("no daemon runs on this root")),
            Err(e) => Err(e),
        };
    };
    let target = target(&addr)?;
    match probe(target) {
        Ok(200) => {
            println!("ready");
            Ok(())
        }
        Ok(status) => Err(not_ready(&format!(
            "http://{target}/readyz answered {status}"
        ))),
        Err(e) => Err(not_ready(&format!("http://{target}/readyz: {e}"))),
    }
}

fn not_ready(why: &str) -> Error {
    Error::io(
        "healthcheck",
        std::io::Error::other(format!("not ready: {why}")),
    )
}

/// The daemon's metrics (else listen) address from its variable or the config file.
fn configured_address(explicit: Option<PathBuf>) -> Result<Option<String>> {
    for key in ["metrics", "listen"] {
        if let Some(v) = std::env::var_os(crate::config::env_name(key)).filter(|v| !v.is_empty()) {
            return Ok(Some(v.to_string_lossy().into_owned()));
        }
    }
    let Some(path) = crate::config::locate(explicit.as_deref()) else {
        return Ok(None);
    };
    let file = crate::config::load(&path)?;
    for key in ["metrics", "listen"] {
        if let Some(s) = file
            .settings
            .iter()
            .find(|s| s.table.as_deref() == Some(crate::config::DAEMON) && s.key == key)
        {
            return Ok(Some(s.value.clone()));
        }
    }
    Ok(None)
}

fn target(addr: &str) -> Result<SocketAddr> {
    let rest = addr.strip_prefix("http://").unwrap_or(addr);
    let hostport = rest.split('/').next().unwrap_or(rest);
    if let Ok(a) = crate::host::parse_listen(hostport) {
        return Ok(a);
    }
    hostport
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| {
            Error::Usage(format!(
                "{addr:?} is not an address: give http://HOST:PORT, HOST:PORT or PORT"
            ))
        })
}

/// `GET /readyz`: the response's status.
fn probe(addr: SocketAddr) -> std::io::Result<u16> {
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.set_write_timeout(Some(TIMEOUT))?;
    write!(
        s,
        "GET /readyz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut head = [0u8; 64];
    let n = s.read(&mut head)?;
    let line = String::from_utf8_lossy(&head[..n]);
    line.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("not an HTTP response"))
}
