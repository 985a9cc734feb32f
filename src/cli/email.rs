//! The email channel's flags of `dshq daemon`, flattened into its arguments
//! (so each is also a `[daemon]` key of the config file and a `DSHQ_*` variable), and
//! their check into [`crate::channels::email::Email`].

use std::path::PathBuf;
use std::time::Duration;

use crate::channels::email::{self, Email, Security, Smtp};
use crate::error::{Error, Result};

/// The email channel's flags.
#[derive(Debug, Clone, clap::Args)]
pub struct EmailArgs {
    /// Send a mail for each new, reminded and escalated request of CONTEXT to ADDR, with a
    /// signed, expiring link to the request on the page (needs --smtp, --email-from, and
    /// --listen or --email-page-url); one CONTEXT=ADDR each, repeat for more addresses and
    /// contexts.
    #[arg(long, value_name = "CONTEXT=ADDR", value_parser = email::parse_recipient)]
    pub email: Vec<(String, lettre::message::Mailbox)>,
    /// With --email: the SMTP server, smtps://HOST[:PORT] (TLS, port 465 by default) or
    /// smtp://HOST[:PORT] (STARTTLS required, 587 by default). No credentials in the URL.
    #[arg(long, value_name = "URL")]
    pub smtp: Option<String>,
    /// With --email: send without TLS (only for a relay on loopback that offers none).
    #[arg(long)]
    pub smtp_plain: bool,
    /// With --email: the user to log in to the SMTP server as (with --smtp-password-file).
    #[arg(long, value_name = "NAME", requires = "smtp_password_file")]
    pub smtp_user: Option<String>,
    /// With --smtp-user: a file holding the SMTP password (one line; refused when group or
    /// others may read it).
    #[arg(long, value_name = "FILE", requires = "smtp_user")]
    pub smtp_password_file: Option<PathBuf>,
    /// With --email: a CA certificate (PEM) to trust for the SMTP server's, beside the
    /// system's (a relay with a private CA).
    #[arg(long, value_name = "FILE")]
    pub smtp_ca_file: Option<PathBuf>,
    /// With --email: how long one attempt may take in all (connecting, the server's
    /// greeting, TLS, every read and write, every recipient's mail).
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = super::parse_duration)]
    pub smtp_timeout: Duration,
    /// With --email: the From address of the mails.
    #[arg(long, value_name = "ADDR")]
    pub email_from: Option<String>,
    /// With --email: the page's public base URL the links point to (http:// or https://,
    /// e.g. https://dshq.example.com, the TLS proxy in front of --listen); default
    /// http://ADDR of --listen, which must then name an address and port a browser can open
    /// (not 0.0.0.0, [::] or port 0). The links need a dshq daemon with --listen serving
    /// the page there.
    #[arg(long, value_name = "URL", value_parser = crate::channels::slack::parse_page_url)]
    pub email_page_url: Option<String>,
    /// With --email: how long a mail's link opens its request (1m to 30d).
    #[arg(long, value_name = "DUR", default_value = "72h", value_parser = parse_link_ttl)]
    pub email_link_ttl: Duration,
}

fn parse_link_ttl(s: &str) -> std::result::Result<Duration, String> {
    let d = super::parse_duration(s)?;
    if d < Duration::from_secs(60) || d > Duration::from_secs(30 * 86_400) {
        return Err(format!("{s:?}: give 1m to 30d, such as 72h"));
    }
    Ok(d)
}

fn usage(m: impl Into<String>) -> Error {
    Error::Usage(m.into())
}

/// The password in `path`: its first line, the file readable by its owner only
/// ([`crate::disk::secret`]).
fn read_password(path: &std::path::Path) -> Result<String> {
    let text = crate::disk::secret::read(path, "SMTP password")?.ok_or_else(|| {
        usage(format!(
            "--smtp-password-file {}: no such file",
            crate::text::path_for_log(path)
        ))
    })?;
    let line = text.lines().next().unwrap_or("").to_string();
    if line.is_empty() {
        return Err(usage(format!(
            "--smtp-password-file {}: the file is empty",
            crate::text::path_for_log(path)
        )));
    }
    Ok(line)
}

impl EmailArgs {
    /// The email channel these flags configure; `None` without `--email`.
    pub fn channel(self, listen: Option<std::net::SocketAddr>) -> Result<Option<Email>> {
        if self.email.is_empty() {
            return Ok(None);
        }
        let url = self
            .smtp
            .ok_or_else(|| usage("--email needs --smtp URL (the SMTP server)"))?;
        let (host, port, tls) =
            email::parse_smtp_url(&url).map_err(|e| usage(format!("--smtp {e}")))?;
        let security = match (tls, self.smtp_plain) {
            (true, true) => return Err(usage("--smtp-plain goes with smtp://, not smtps://")),
            (true, false) => Security::Tls,
            (false, false) => Security::StartTls,
            (false, true) => Security::Plain,
        };
        let port = port.unwrap_or(match security {
            Security::Tls => 465,
            Security::StartTls => 587,
            Security::Plain => 25,
        });
        let credentials = match (self.smtp_user, self.smtp_password_file) {
            (Some(u), Some(f)) => Some((u, read_password(&f)?)),
            _ => None,
        };
        if security == Security::Plain && credentials.is_some() {
            return Err(usage(
                "--smtp-plain with --smtp-user would send the password in clear: use TLS",
            ));
        }
        let from = self
            .email_from
            .ok_or_else(|| usage("--email needs --email-from ADDR"))?
            .parse()
            .map_err(|e| usage(format!("--email-from: {e}")))?;
        let page = super::page_url(
            self.email_page_url.as_deref(),
            listen,
            "--email",
            "--email-page-url",
        )?;
        let mut recipients = std::collections::BTreeMap::new();
        for (context, addr) in self.email {
            recipients
                .entry(context)
                .or_insert_with(Vec::new)
                .push(addr);
        }
        let ca_pem = match &self.smtp_ca_file {
            Some(_) if security == Security::Plain => {
                return Err(usage("--smtp-ca-file goes with TLS, not --smtp-plain"))
            }
            Some(f) => Some(std::fs::read(f).map_err(|e| Error::io(f, e))?),
            None => None,
        };
        Ok(Some(Email {
            smtp: Smtp {
                host,
                port,
                security,
                credentials,
                ca_pem,
                timeout: self.smtp_timeout.max(Duration::from_millis(100)),
            },
            from,
            recipients,
            page_url: page,
            link_ttl: self.email_link_ttl,
        }))
    }
}
