//! `dshq away`: a reviewer away until a time hands their requests to a delegate, who
//! answers for them meanwhile (`dshq answer ID --for PERSON`); `--cancel` ends it early;
//! with neither, the notices that hold now ([`crate::app::delegation`]).
//!
//! The CLI owns the root (it opens the store itself), so it acts as the operator: it may
//! set or cancel anyone's notice with `--as PERSON` (default `$USER`), recorded as `cli`.
//! Over HTTP a reviewer sets only their own.

use serde::Serialize;

use super::{default_provider_name, Ctx};
use crate::app::delegation;
use crate::clock::{now_ms, rfc3339};
use crate::core::audit::Actor;
use crate::core::delegation::Away;
use crate::error::{Error, Result};
use crate::output::{emit, print_json, table};

/// What `dshq away --help` adds after the flags.
const AFTER: &str = "\
Examples:
  dshq away --until 2026-12-24T09:00:00Z --delegate dave --as alice
  dshq away --until 8h --delegate dave          # as $USER, for eight hours
  dshq away --cancel --as alice
  dshq away                                     # the notices that hold now
While a notice holds, the ladder's reminders and escalations and the mail channel reach
the delegate too, and the delegate answers with `dshq answer ID --for PERSON` (or the
API's `?for=PERSON`): recorded as \"D for P\". It ends at its time or when cancelled.";

/// Arguments of `dshq away`.
#[derive(Debug, clap::Args)]
#[command(after_long_help = AFTER)]
pub struct Args {
    /// Away until T: an RFC 3339 time, or a duration from now (`8h`, `3d`).
    #[arg(
        long,
        value_name = "T",
        requires = "delegate",
        conflicts_with = "cancel"
    )]
    pub until: Option<String>,
    /// The person who answers for you meanwhile (a reviewer).
    #[arg(long, value_name = "PERSON", requires = "until")]
    pub delegate: Option<String>,
    /// Cancel the notice now.
    #[arg(long)]
    pub cancel: bool,
    /// Whose notice (default $USER): the CLI acts as the root's operator.
    #[arg(long = "as", value_name = "PERSON")]
    pub person: Option<String>,
}

/// One notice as `--json` prints it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct AwayView<'a> {
    person: &'a str,
    delegate: &'a str,
    until: String,
    set_at: String,
    set_by: &'a str,
}

fn view(a: &Away) -> AwayView<'_> {
    AwayView {
        person: &a.person,
        delegate: &a.delegate,
        until: rfc3339(a.until_ms),
        set_at: rfc3339(a.set_ms),
        set_by: &a.set_by,
    }
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let person = a.person.unwrap_or_else(default_provider_name);
    if a.cancel {
        let mut store = ctx.store()?;
        let done = delegation::cancel(&mut store, &person, &Actor::Cli)?;
        drop(store);
        emit(ctx.json, &view(&done), || {
            format!(
                "{} is back: {} no longer answers for them\n",
                done.person, done.delegate
            )
        });
        return Ok(());
    }
    if let (Some(until), Some(delegate)) = (a.until, a.delegate) {
        let until_ms = crate::core::delegation::parse_until(&until, now_ms())
            .map_err(|why| Error::Usage(format!("--until {why}")))?;
        let mut store = ctx.store()?;
        let set = delegation::set(&mut store, &person, &delegate, until_ms, &Actor::Cli)?;
        drop(store);
        emit(ctx.json, &view(&set), || {
            format!(
                "{} is away until {}; {} answers for them\n",
                set.person,
                rfc3339(set.until_ms),
                set.delegate
            )
        });
        return Ok(());
    }
    let mut store = ctx.read_store()?;
    let list = delegation::holding(&mut store)?;
    drop(store);
    if ctx.json {
        print_json(&list.iter().map(view).collect::<Vec<_>>());
    } else {
        let rows = list
            .iter()
            .map(|a| {
                vec![
                    a.person.clone(),
                    a.delegate.clone(),
                    rfc3339(a.until_ms),
                    a.set_by.clone(),
                ]
            })
            .collect();
        println!(
            "{}",
            table(&["PERSON", "DELEGATE", "UNTIL", "SET BY"], rows).trim_end_matches('\n')
        );
    }
    Ok(())
}
