//! `dshq schema request|answer|outcome|openapi`: the JSON Schemas of the file protocol, generated
//! from the Rust types (the committed copies in `contrib/schema/` are tested against these).

use super::Ctx;
use crate::error::Result;

/// Which document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Which {
    /// A request file (`inbox/new/NAME.json`, `dshq ask`).
    Request,
    /// An answer file (`answers/new/ID.json`).
    Answer,
    /// An outcome document (`outbox/ID.json`).
    Outcome,
    /// The OpenAPI 3 document of the HTTP API (`daemon --listen`; also served at
    /// `/api/v1/openapi.json`).
    Openapi,
}

/// Arguments of `dshq schema`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The document.
    #[arg(value_enum)]
    pub which: Which,
}

/// The schema of `which`, as pretty JSON with a trailing newline.
pub fn schema_json(which: Which) -> String {
    if which == Which::Openapi {
        let mut s = serde_json::to_string_pretty(&crate::web::api::openapi::document())
            .expect("the document serializes");
        s.push('\n');
        return s;
    }
    let schema = match which {
        Which::Request => schemars::schema_for!(crate::protocol::Request),
        Which::Answer => schemars::schema_for!(crate::files::answers::AnswerFile),
        Which::Outcome => schemars::schema_for!(crate::protocol::Outcome),
        Which::Openapi => unreachable!("returned above"),
    };
    let mut s = serde_json::to_string_pretty(&schema).expect("schemas serialize");
    s.push('\n');
    s
}

/// Run it.
pub fn run(_ctx: &Ctx, a: Args) -> Result<()> {
    print!("{}", schema_json(a.which));
    Ok(())
}
