//! The Web Push channel's flags of `dshq daemon`, flattened into its arguments (so each
//! is also a `[daemon]` key of the config file and a `DSHQ_*` variable), and their check
//! into [`crate::channels::push::Push`].

use std::time::Duration;

use crate::channels::push::Push;

/// The Web Push channel's flags.
#[derive(Debug, Clone, clap::Args)]
pub struct PushArgs {
    /// Send a Web Push message for each new, reminded and escalated request of CONTEXT to
    /// every device its reviewers subscribed from the page ("Notify this device"), with
    /// one-tap approve/deny where the request allows; one CONTEXT each, repeat for
    /// several. Needs --listen (the page subscribes devices; a tap answers through it). The
    /// VAPID key is the root's push-vapid.key (made 0600 at the first start).
    #[arg(long, value_name = "CONTEXT", requires = "listen", value_parser = parse_context)]
    pub push: Vec<String>,
    /// With --push: the contact push services may reach the operator at (RFC 8292's
    /// `sub`: a mailto: address or an https: URL).
    #[arg(long, value_name = "URI", default_value = "mailto:dshq@localhost", value_parser = crate::channels::push::parse_contact)]
    pub push_contact: String,
    /// With --push: how long one request to a push service may take.
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = super::parse_duration)]
    pub push_timeout: Duration,
    /// With --push: how long a notification's one-tap actions act (1m to 7d).
    #[arg(long, value_name = "DUR", default_value = "24h", value_parser = parse_action_ttl)]
    pub push_action_ttl: Duration,
}

impl PushArgs {
    /// The channel these flags configure; `None` without `--push`.
    pub fn channel(&self) -> Option<Push> {
        (!self.push.is_empty()).then(|| Push {
            contexts: self.push.clone(),
            contact: self.push_contact.clone(),
            timeout: self.push_timeout.max(Duration::from_millis(100)),
            action_ttl: self.push_action_ttl,
        })
    }
}

fn parse_context(s: &str) -> std::result::Result<String, String> {
    let t = s.trim();
    if t.contains([',', ';']) {
        return Err(format!(
            "{s:?}: one context per --push; repeat --push for another"
        ));
    }
    if !crate::protocol::check::is_valid_id(t) {
        return Err(format!("{s:?} is not a context name"));
    }
    Ok(t.to_string())
}

fn parse_action_ttl(s: &str) -> std::result::Result<Duration, String> {
    let d = super::parse_duration(s)?;
    if d < Duration::from_secs(60) || d > Duration::from_secs(7 * 86_400) {
        return Err(format!("{s:?}: give 1m to 7d, such as 24h"));
    }
    Ok(d)
}
