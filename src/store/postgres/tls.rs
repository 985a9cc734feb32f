//! TLS for the PostgreSQL connections: rustls (on the `ring` provider), so a store on
//! another machine is reached encrypted and the server is authenticated.
//!
//! Every connection of this backend (the store's, and the LISTEN connection of
//! [`super::wakeups`]) is opened by [`connect`]. The connector is built once per process
//! ([`connector`]) and reused on every (re)connect.
//!
//! **`sslmode`** is read from the URL by tokio-postgres' own parser, which knows three
//! values; they are honoured as libpq honours them, except that a certificate is always
//! verified:
//!
//! - `disable`: plaintext, no TLS at all.
//! - `prefer` (the default, as in libpq): TLS when the server offers it, plaintext when it
//!   says it has none. When the server does offer TLS, its certificate is verified and a
//!   certificate that does not verify fails the connection (libpq's `prefer` would take
//!   it unverified). A server that answers "no TLS" gets plaintext: on an untrusted
//!   network use `require`, which cannot be downgraded.
//! - `require`: TLS or no connection. rustls **always** verifies the server's certificate
//!   chain up to a trusted CA and that it names the host of the URL (a DNS name, or an IP
//!   address in the certificate's subjectAltName): that is libpq's `verify-full`, stricter
//!   than libpq's `require` (which, without a root certificate file, encrypts without
//!   checking who answers).
//!
//! `sslmode=verify-ca` and `sslmode=verify-full` are not known to tokio-postgres' parser;
//! [`super::conn::parse_url`] reads them as `require`, which verifies as `verify-full`
//! does. `sslrootcert=` in the URL is refused: name the CA in `PGSSLROOTCERT`. A URL with
//! no `sslmode` that names a TCP host other than loopback gets `require`, not `prefer`
//! (see `parse_url`): TLS by default where the network is not this machine. `sslnegotiation=direct` (PostgreSQL 17) works with `require`: the
//! connector offers the `postgresql` ALPN protocol as libpq does.
//!
//! **Trust roots.** Without `PGSSLROOTCERT` the server's certificate must chain to a CA of
//! the system store (`rustls-native-certs`: on Linux `/etc/ssl/certs` and friends, or
//! `SSL_CERT_FILE`/`SSL_CERT_DIR`), which is what a managed PostgreSQL's public
//! certificate needs. With `PGSSLROOTCERT=/path/ca.pem` (the standard libpq variable: a
//! PEM file of one or more CA certificates) the certificates of that file are trusted
//! **instead of** the system store, as libpq's `sslrootcert` does: a private CA is then
//! the only one that can vouch for the server. `PGSSLROOTCERT=system` names the system
//! store explicitly (as in libpq 16). A `PGSSLROOTCERT` that cannot be read, or holds no
//! certificate, fails every connection that might use TLS (not `sslmode=disable`, not a
//! Unix socket) with that reason: a trust setting given on purpose is never ignored.
//!
//! **Unix sockets** (`host=/path`) never use TLS (the server refuses it on a socket, and
//! libpq never asks): a URL whose every host is a socket directory connects in plaintext
//! whatever its `sslmode`. (One list mixing sockets and TCP hosts keeps its `sslmode` for
//! all of them: under `require` a socket entry then fails and the next host is tried.)
//! A URL that names only `hostaddr=` and no `host` has no name to verify, so TLS to it
//! fails: name the host.
//!
//! The crypto provider is passed to the rustls config explicitly
//! (`ring::default_provider()`); nothing installs a process-wide default.
//!
//! **Errors.** A TLS failure is [`Error::Pg`](crate::error::Error::Pg) (code `STORE`); its message says the TLS
//! handshake failed and why (an untrusted certificate also says how to trust it). It is
//! built from the TLS error, never from the URL, so it never holds the password.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use futures_util::future::{MapErr, TryFutureExt};
use postgres::config::{Host, SslMode};
use postgres::tls::{MakeTlsConnect, TlsConnect};
use postgres::{Client, Config, NoTls};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::Result;

/// The standard libpq environment variable naming a PEM file of CA certificates.
pub const ROOT_CERT_ENV: &str = "PGSSLROOTCERT";

/// Where the trusted CA certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Roots {
    /// The system's certificate store.
    System,
    /// Only the certificates of this PEM file.
    File(PathBuf),
}

impl Roots {
    /// The roots named by `PGSSLROOTCERT` (unset or empty: the system store).
    pub fn from_env() -> Roots {
        match std::env::var_os(ROOT_CERT_ENV) {
            Some(v) if v == "system" => Roots::System,
            Some(v) if !v.is_empty() => Roots::File(PathBuf::from(v)),
            _ => Roots::System,
        }
    }
}

/// The TLS side of a connection: a rustls client config built once, or why it could not
/// be built (then every TLS attempt fails with that reason).
#[derive(Clone)]
pub struct Connector {
    inner: std::result::Result<MakeRustlsConnect, String>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("ready", &self.inner.is_ok())
            .finish_non_exhaustive()
    }
}

impl Connector {
    /// A connector trusting `roots`.
    pub fn new(roots: &Roots) -> Connector {
        Connector {
            inner: client_config(roots).map(MakeRustlsConnect::new),
        }
    }
}

/// The process's connector, trusting what `PGSSLROOTCERT` names (read once).
pub fn connector() -> &'static Connector {
    static CONNECTOR: OnceLock<Connector> = OnceLock::new();
    CONNECTOR.get_or_init(|| Connector::new(&Roots::from_env()))
}

/// The rustls client config: the ring provider, TLS 1.2 and 1.3, `roots`, no client
/// certificate, the `postgresql` ALPN protocol.
fn client_config(roots: &Roots) -> std::result::Result<ClientConfig, String> {
    let store = match roots {
        Roots::System => system_roots(),
        Roots::File(path) => file_roots(path)?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(store)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(config)
}

/// The system store. An empty or partly unreadable store is not an error here: a server
/// that offers no TLS is still reached under `prefer`, and a certificate then fails to
/// verify with a message that says how to trust its CA.
fn system_roots() -> RootCertStore {
    let found = rustls_native_certs::load_native_certs();
    for e in &found.errors {
        tracing::debug!(error = %e, "a certificate of the system store could not be loaded");
    }
    let mut store = RootCertStore::empty();
    let (added, ignored) = store.add_parsable_certificates(found.certs);
    if ignored > 0 {
        tracing::debug!(ignored, "certificates of the system store were not usable");
    }
    if added == 0 {
        tracing::warn!(
            "no CA certificates in the system store: a PostgreSQL server offering TLS will \
             not verify (install the CA certificates, or name a CA in PGSSLROOTCERT)"
        );
    }
    store
}

/// The certificates of the PEM file at `path`, each of which must parse.
fn file_roots(path: &Path) -> std::result::Result<RootCertStore, String> {
    let what = |e: &dyn std::fmt::Display| format!("{ROOT_CERT_ENV} {}: {e}", path.display());
    let mut store = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| what(&e))? {
        let cert = cert.map_err(|e| what(&e))?;
        store.add(cert).map_err(|e| what(&e))?;
    }
    if store.is_empty() {
        return Err(what(&"no PEM certificate in the file"));
    }
    Ok(store)
}

/// Whether every host of `config` is a Unix socket directory (then TLS is never used).
fn only_sockets(config: &Config) -> bool {
    let hosts = config.get_hosts();
    !hosts.is_empty()
        && config.get_hostaddrs().is_empty()
        && hosts.iter().all(|h| !matches!(h, Host::Tcp(_)))
}

/// Open a client for `config` with the process's [`connector`], which is built (the
/// system's CA store read) only when a connection may use TLS: a Unix socket never does,
/// and reading the store cost every command and daemon start on a socket about 150 files.
pub fn connect(config: &Config) -> Result<Client> {
    match without_tls(config) {
        Some(plain) => Ok(plain.connect(NoTls)?),
        None => Ok(config.connect(connector().clone())?),
    }
}

/// Open a client for `config` with `tls`: plaintext for `sslmode=disable` and for Unix
/// sockets, else TLS as `sslmode` says (see the module docs).
pub fn connect_with(config: &Config, tls: &Connector) -> Result<Client> {
    match without_tls(config) {
        Some(plain) => Ok(plain.connect(NoTls)?),
        None => Ok(config.connect(tls.clone())?),
    }
}

/// The config to connect with in plaintext when `config` never uses TLS (Unix sockets
/// only, whatever `sslmode` says, or `sslmode=disable`); `None` when it may.
fn without_tls(config: &Config) -> Option<Config> {
    let mut plain = config.clone();
    if only_sockets(config) {
        plain.ssl_mode(SslMode::Disable);
        return Some(plain);
    }
    (config.get_ssl_mode() == SslMode::Disable).then_some(plain)
}

impl<S> MakeTlsConnect<S> for Connector
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = <MakeRustlsConnect as MakeTlsConnect<S>>::Stream;
    type TlsConnect = Hinted<<MakeRustlsConnect as MakeTlsConnect<S>>::TlsConnect>;
    type Error = io::Error;

    fn make_tls_connect(&mut self, hostname: &str) -> io::Result<Self::TlsConnect> {
        match &mut self.inner {
            Ok(make) => match MakeTlsConnect::<S>::make_tls_connect(make, hostname) {
                Ok(connect) => Ok(Hinted(connect)),
                Err(never) => match never {},
            },
            Err(why) => Err(io::Error::other(why.clone())),
        }
    }
}

/// A TLS connect whose failure, when the certificate did not verify, says how to trust it.
pub struct Hinted<T>(T);

impl<S, T> TlsConnect<S> for Hinted<T>
where
    T: TlsConnect<S, Error = io::Error>,
{
    type Stream = T::Stream;
    type Error = io::Error;
    type Future = MapErr<T::Future, fn(io::Error) -> io::Error>;

    fn connect(self, stream: S) -> Self::Future {
        self.0
            .connect(stream)
            .map_err(hint as fn(io::Error) -> io::Error)
    }
}

/// Add what to do to a certificate that did not verify.
fn hint(e: io::Error) -> io::Error {
    use rustls::CertificateError as C;
    let Some(rustls::Error::InvalidCertificate(why)) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return e;
    };
    let what = match why {
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "the server's certificate does not name the host of the URL: connect by a name \
             (or IP address) the certificate holds"
                .to_string()
        }
        _ => format!(
            "the server's certificate did not verify against the trusted CAs: trust its CA \
             with {ROOT_CERT_ENV}=/path/to/ca.pem (a PEM file), or connect with \
             sslmode=disable on a network you trust"
        ),
    };
    io::Error::new(e.kind(), format!("{e}; {what}"))
}
