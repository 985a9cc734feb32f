//! The OpenAPI document: the committed copy matches what the types generate and what the
//! daemon serves, and the live API, fuzzed by schemathesis (from PyPI, not part of this
//! project) against that document, never answers 5xx nor breaks its own schema.

use std::fs;
use std::path::PathBuf;
use std::process::Command;

use crate::api::{host, token};
use crate::helpers::Env;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_committed_openapi_document_matches_the_types_and_the_server() {
    let env = Env::new();
    let generated = env.run(&["schema", "openapi"]).ok().stdout;
    let path = repo().join("contrib/openapi.json");
    let committed = fs::read_to_string(&path).unwrap();
    assert_eq!(
        committed,
        generated,
        "{} drifted from the types: regenerate with `dshq schema openapi > contrib/openapi.json`",
        path.display()
    );
    let h = host(&env, &[]);
    let served = h.get("/openapi.json", None);
    assert_eq!(served.status, 200);
    let committed: serde_json::Value = serde_json::from_str(&committed).unwrap();
    assert_eq!(served.body, committed);
    // Every route the router has is documented (and the other way round).
    let paths: Vec<&String> = committed["paths"].as_object().unwrap().keys().collect();
    assert_eq!(paths.len(), 13, "{paths:?}");
}

#[test]
fn schemathesis_finds_no_server_error_and_no_schema_breaking_response() {
    let st = Command::new("st").arg("--version").output();
    assert!(
        st.as_ref().is_ok_and(|o| o.status.success()),
        "schemathesis is missing: install it with `pip install schemathesis` (it provides `st`)"
    );
    let env = Env::new();
    let rita = token(&env, "reviewer", "rita", None);
    let h = host(&env, &[]);
    let out = Command::new("st")
        .current_dir(env.dir.path())
        .env("SCHEMATHESIS_HOOKS", "")
        .args([
            "run",
            &h.url("/openapi.json"),
            "--header",
            &format!("Authorization: Bearer {rita}"),
            // The stream never ends by design (an SSE stream): its 200 and 401 are
            // tested in `api::`.
            "--exclude-path",
            "/api/v1/stream",
            // Every check but "a schema-valid body is accepted": the schema cannot say
            // every rule of the protocol (an empty questions list is well typed and still
            // EMPTY_QUESTIONS), and those refusals are documented 4xx responses.
            "--checks",
            "all",
            "--exclude-checks",
            "positive_data_acceptance",
            "--max-examples",
            "40",
            "--request-timeout",
            "20",
            "--seed",
            "14",
            "--no-color",
        ])
        .output()
        .expect("run schemathesis");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "schemathesis failed:\n{text}");
    assert!(text.contains("Tested: 15"), "{text}");
    assert!(!text.contains("Server error"), "{text}");
}
