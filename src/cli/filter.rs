//! The request filters that `list` and `watch` share (`--context`, `--agent`, `--intent`,
//! `--grep`): one set of flags, flattened into each subcommand, that builds the store's
//! [`ListFilter`]. Declared once so the two cannot drift apart in name, help or meaning.

use crate::error::Result;
use crate::store::ListFilter;

/// Which requests a listing or a feed shows.
#[derive(Debug, Clone, clap::Args)]
pub struct Filters {
    /// Only requests of this context (repeat for several).
    #[arg(long, value_name = "C")]
    pub context: Vec<String>,
    /// Only requests asked by this agent id.
    #[arg(long, value_name = "A")]
    pub agent: Option<String>,
    /// Only requests with a question of this intent.
    #[arg(long, value_parser = super::closed_set(super::INTENTS, |s| s))]
    pub intent: Option<&'static str>,
    /// Only requests with a question containing TEXT (ignoring ASCII case).
    #[arg(long, value_name = "TEXT")]
    pub grep: Option<String>,
}

impl Filters {
    /// The store's filter for these flags (other fields at their defaults); a context that
    /// is not a valid id is refused here, before any query.
    pub fn to_filter(&self) -> Result<ListFilter> {
        for c in &self.context {
            crate::protocol::check::check_id("context", c)?;
        }
        Ok(ListFilter {
            contexts: self.context.clone(),
            agent: self.agent.clone(),
            intent: self.intent.map(str::to_string),
            grep: self.grep.clone(),
            ..Default::default()
        })
    }
}
