//! The one HTTPS client setup for every outbound call over HTTP (Slack's Web API, a Web
//! Push service, the identity provider): hyper with rustls on the ring provider (no
//! OpenSSL, no C toolchain), TLS 1.2 and 1.3, trusting the system's CA store, as the
//! PostgreSQL connections do. `http://` is allowed for what the caller's own checks admit
//! (a loopback stand-in). One setup, so every caller verifies servers the same way.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::error::{Error, Result};

/// The connector: HTTPS, or HTTP where the caller allows it.
pub type Https = hyper_rustls::HttpsConnector<HttpConnector>;

/// A client of `service` (named in the warning when the system has no CA certificate).
pub fn client(service: &str) -> Result<Client<Https, Full<Bytes>>> {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config(service)?)
        .https_or_http()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(https))
}

/// The rustls config: the ring provider, TLS 1.2 and 1.3, the system's CA store.
fn tls_config(service: &str) -> Result<rustls::ClientConfig> {
    let found = rustls_native_certs::load_native_certs();
    for e in &found.errors {
        tracing::debug!(error = %e, "a certificate of the system store could not be loaded");
    }
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::warn!(
            "no CA certificate in the system store: HTTPS to {service} will fail to verify"
        );
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Invalid(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Send `request` and read the whole answer, within `timeout` for both and at most `max`
/// bytes of body: a party that stalls or floods holds up only this call. The error is a
/// message (the causes on one line).
pub async fn exchange(
    client: &Client<Https, Full<Bytes>>,
    request: hyper::Request<Full<Bytes>>,
    timeout: std::time::Duration,
    max: usize,
) -> std::result::Result<hyper::Response<Bytes>, String> {
    use http_body_util::{BodyExt, Limited};
    let call = async {
        let resp = client
            .request(request)
            .await
            .map_err(|e| crate::text::causes(&e))?;
        let (parts, body) = resp.into_parts();
        let bytes = Limited::new(body, max)
            .collect()
            .await
            .map_err(|e| format!("the answer did not arrive whole: {e}"))?
            .to_bytes();
        Ok(hyper::Response::from_parts(parts, bytes))
    };
    tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| "timed out".to_string())?
}
