//! The host's HTTPS client setup, one for every outbound call over HTTP (Slack's Web API,
//! the identity provider): rustls on the ring provider (no OpenSSL, no C toolchain), TLS
//! 1.2 and 1.3, trusting the system's CA store, as the PostgreSQL connections do.

use std::sync::Arc;

use crate::error::{Error, Result};

/// The rustls config: the ring provider, TLS 1.2 and 1.3, the system's CA store.
pub fn tls_config() -> Result<rustls::ClientConfig> {
    let found = rustls_native_certs::load_native_certs();
    for e in &found.errors {
        tracing::debug!(error = %e, "a certificate of the system store could not be loaded");
    }
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        tracing::warn!("no CA certificate in the system store: HTTPS (Slack, the identity provider) will fail to verify");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Invalid(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
