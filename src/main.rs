//! The `dshq` binary: parse the command line, set up logging, run, and map errors to
//! their stable codes and exit statuses.

#![deny(unsafe_code)]

use std::io::IsTerminal;

use dshq::output::print_json;
use dshq::views::ErrorDoc;
use dshq::Error;

fn main() {
    dshq::root::restrict_umask();
    let (cli, answer_matches) = dshq::cli::parse();
    if cli.sigpipe_may_end_it() {
        dshq::sys::default_sigpipe();
    }
    // The daemon logs a line per request by default; other commands only warnings.
    let default_level = match cli.command {
        dshq::cli::Command::Daemon(_) => "info",
        _ => "warn",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    match cli.log_format {
        // One JSON object per line: the event's fields (request ids among them) as
        // fields. Log lines never carry tokens, lease secrets or answer bodies, in
        // either format.
        dshq::cli::LogFormat::Json => tracing_subscriber::fmt()
            .json()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_current_span(false)
            .init(),
        dshq::cli::LogFormat::Text => tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none())
            .init(),
    }
    let json = cli.json;
    let result = dshq::cli::run(cli, answer_matches.as_ref());
    if let Err(e) = result {
        let ue = e.to_user_error();
        match (&e, json) {
            // The outcome document was printed already; stdout carries only that.
            (Error::Ended(_), true) => {}
            // A message may quote asker-supplied text (a label, a file name): escaped.
            (Error::Ended(_), false) | (_, false) => eprintln!(
                "error: {}: {}",
                ue.code,
                dshq::text::multi_line(&ue.message)
            ),
            (_, true) => print_json(&ErrorDoc { error: &ue }),
        }
        std::process::exit(ue.code.exit_status());
    }
}
