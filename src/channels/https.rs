//! The HTTPS client the channels that call a service share (Slack's Web API, a Web Push
//! service): hyper with rustls on the ring provider, TLS 1.2 and 1.3, the system's CA store;
//! `http://` is allowed for what the channel's own checks admit (a loopback stand-in).
//! One client setup, so every channel verifies servers the same way.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::error::{Error, Result};

/// The connector: HTTPS, or HTTP where a channel allows it.
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

/// An error with its causes (a TLS failure is the cause of a connect error), on one line.
pub fn causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(c) = next {
        out.push_str(": ");
        out.push_str(&c.to_string());
        next = c.source();
    }
    crate::text::for_log(&out).into_owned()
}
