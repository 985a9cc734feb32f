//! TLS on a throwaway server listening on 127.0.0.1 with `ssl=on` and a certificate of a
//! CA made here (rcgen): what `sslmode` and the trusted roots let through.
//!
//! The trusted roots are given to [`Connector::new`] directly, never through
//! `PGSSLROOTCERT`: the environment is process-wide and the tests run in parallel.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use postgres::config::SslMode;
use postgres::{Client, Config, NoTls};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

use crate::throwaway::Server;
use dshq::error::Error;
use dshq::protocol::Code;
use dshq::store::postgres::tls::{connect_with, Connector, Roots};
use dshq::store::postgres::{conn, wakeups::Listener};

/// In every URL: the server trusts the local user, so it never asks for it, and no
/// error may repeat it.
const PASSWORD: &str = "pw-never-shown";

/// A CA, and a server certificate it signed for `localhost` and 127.0.0.1.
struct Pki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn pki() -> Pki {
    let ca = ca("dshq test CA");
    let key = KeyPair::generate().unwrap();
    let mut params =
        CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &ca).unwrap();
    Pki {
        ca_pem: ca.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// The server's data directory, and a client of its admin database (over the socket).
fn admin(server: &Server) -> (Client, PathBuf) {
    let mut c = Client::connect(server.admin_url(), NoTls).unwrap();
    let data: String = c.query_one("SHOW data_directory", &[]).unwrap().get(0);
    (c, PathBuf::from(data))
}

/// Write `contents` into the data directory as the server's user, with `mode`.
fn write_owned(data: &Path, name: &str, contents: &str, mode: u32) {
    let meta = std::fs::metadata(data).unwrap();
    let path = data.join(name);
    std::fs::write(&path, contents).unwrap();
    std::os::unix::fs::chown(&path, Some(meta.uid()), Some(meta.gid())).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// One server for these tests with `ssl=on` (the certificate and key in its data
/// directory, where the server, perhaps another user, may read them; `ssl` is reloadable),
/// and a file with the CA certificate.
fn tls_server() -> &'static (Server, Pki, tempfile::TempDir) {
    static TLS: OnceLock<(Server, Pki, tempfile::TempDir)> = OnceLock::new();
    TLS.get_or_init(|| {
        let server = Server::start_tcp().expect("start a throwaway PostgreSQL server on TCP");
        let pki = pki();
        let (mut c, data) = admin(&server);
        write_owned(&data, "server.crt", &pki.cert_pem, 0o644);
        write_owned(&data, "server.key", &pki.key_pem, 0o600);
        c.batch_execute("ALTER SYSTEM SET ssl = on").unwrap();
        c.batch_execute("SELECT pg_reload_conf()").unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let mut fresh = Client::connect(server.admin_url(), NoTls).unwrap();
            let ssl: String = fresh.query_one("SHOW ssl", &[]).unwrap().get(0);
            if ssl == "on" {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not turn ssl on (see its server.log)"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("ca.pem"), &pki.ca_pem).unwrap();
        (server, pki, dir)
    })
}

fn ca_file() -> PathBuf {
    tls_server().2.path().join("ca.pem")
}

/// A URL of the TLS server over TCP, with `query` (e.g. `sslmode=require`).
fn tcp_url(server: &Server, host: &str, query: &str) -> Config {
    let port = server.tcp_port().unwrap();
    let url = format!("postgresql://postgres:{PASSWORD}@{host}:{port}/postgres?{query}");
    conn::parse_url(&url).unwrap()
}

/// Whether the session of `c` is encrypted, as the server sees it.
fn encrypted(c: &mut Client) -> bool {
    c.query_one(
        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
        &[],
    )
    .unwrap()
    .get(0)
}

fn trusting_the_ca() -> Connector {
    Connector::new(&Roots::File(ca_file()))
}

/// The error of a connection that must fail.
fn refused(r: dshq::error::Result<Client>) -> Error {
    match r {
        Ok(_) => panic!("connected where it must be refused"),
        Err(e) => e,
    }
}

/// A refusal: `STORE`, saying TLS failed, and never the password.
fn assert_tls_refused(e: &Error, says: &str) {
    let msg = e.to_string();
    assert_eq!(e.code(), Code::Store, "{msg}");
    assert!(matches!(e, Error::Pg(_)), "{msg}");
    assert!(msg.contains("TLS"), "{msg}");
    assert!(msg.contains(says), "expected {says:?} in {msg}");
    assert!(!msg.contains(PASSWORD), "{msg}");
    assert!(!format!("{e:?}").contains(PASSWORD), "{e:?}");
}

#[test]
fn require_trusting_the_ca_is_encrypted() {
    let (server, _, _) = tls_server();
    let tls = trusting_the_ca();
    for host in ["127.0.0.1", "localhost"] {
        let config = tcp_url(server, host, "sslmode=require");
        let mut c = connect_with(&config, &tls).unwrap();
        assert!(encrypted(&mut c), "{host}");
    }
}

#[test]
fn prefer_is_the_default_and_encrypts_when_offered() {
    let (server, _, _) = tls_server();
    let tls = trusting_the_ca();
    for query in ["", "sslmode=prefer"] {
        let mut c = connect_with(&tcp_url(server, "127.0.0.1", query), &tls).unwrap();
        assert!(encrypted(&mut c), "{query:?}");
    }
}

#[test]
fn a_ca_not_trusted_is_refused() {
    let (server, _, _) = tls_server();
    // The system store (this CA is not in it), and another CA of our own.
    let other = tempfile::tempdir().unwrap();
    let other_ca = other.path().join("other.pem");
    std::fs::write(&other_ca, ca("another CA").pem()).unwrap();
    for roots in [Roots::System, Roots::File(other_ca)] {
        let tls = Connector::new(&roots);
        // `prefer` verifies too when the server offers TLS: no silent fallback.
        for query in ["sslmode=require", "sslmode=prefer"] {
            let e = refused(connect_with(&tcp_url(server, "127.0.0.1", query), &tls));
            assert_tls_refused(&e, "PGSSLROOTCERT");
        }
    }
}

#[test]
fn the_host_name_is_verified() {
    let (server, _, _) = tls_server();
    let tls = trusting_the_ca();
    // Connect to 127.0.0.1 while naming another host: the certificate does not name it.
    let config = tcp_url(server, "db.invalid", "sslmode=require&hostaddr=127.0.0.1");
    let e = refused(connect_with(&config, &tls));
    assert_tls_refused(&e, "does not name the host");
    let config = tcp_url(server, "localhost", "sslmode=require&hostaddr=127.0.0.1");
    let mut c = connect_with(&config, &tls).unwrap();
    assert!(encrypted(&mut c));
}

#[test]
fn disable_is_plaintext_whatever_the_roots() {
    let (server, _, _) = tls_server();
    let broken = Connector::new(&Roots::File("/nonexistent/ca.pem".into()));
    for tls in [trusting_the_ca(), broken] {
        let mut c = connect_with(&tcp_url(server, "127.0.0.1", "sslmode=disable"), &tls).unwrap();
        assert!(!encrypted(&mut c));
    }
}

#[test]
fn a_unix_socket_never_uses_tls() {
    let (server, _, _) = tls_server();
    let tls = Connector::new(&Roots::System);
    // The socket alone (the throwaway URLs name `localhost` too: tokio-postgres appends
    // the query's `host=` to the URL's host).
    let admin = conn::parse_url(server.admin_url()).unwrap();
    let mut config = Config::new();
    config.user("postgres").dbname("postgres");
    config.port(server.tcp_port().unwrap());
    for host in admin.get_hosts() {
        if let postgres::config::Host::Unix(dir) = host {
            config.host_path(dir);
        }
    }
    assert_eq!(config.get_hosts().len(), 1);
    for mode in [SslMode::Require, SslMode::Prefer, SslMode::Disable] {
        config.ssl_mode(mode);
        let mut c = connect_with(&config, &tls).unwrap();
        assert!(!encrypted(&mut c), "{mode:?}");
    }
}

#[test]
fn an_unreadable_root_file_fails_with_its_reason() {
    let (server, _, _) = tls_server();
    let empty = tempfile::NamedTempFile::new().unwrap();
    for (path, says) in [
        (PathBuf::from("/nonexistent/ca.pem"), "/nonexistent/ca.pem"),
        (empty.path().to_path_buf(), "no PEM certificate"),
    ] {
        let tls = Connector::new(&Roots::File(path));
        let e = refused(connect_with(
            &tcp_url(server, "127.0.0.1", "sslmode=require"),
            &tls,
        ));
        assert_tls_refused(&e, says);
        assert_tls_refused(&e, "PGSSLROOTCERT");
    }
}

#[test]
fn a_server_without_tls() {
    // A second server, on TCP, with ssl off.
    let server = Server::start_tcp().unwrap();
    let tls = trusting_the_ca();
    let e = refused(connect_with(
        &tcp_url(&server, "127.0.0.1", "sslmode=require"),
        &tls,
    ));
    assert_tls_refused(&e, "server does not support TLS");
    let mut c = connect_with(&tcp_url(&server, "127.0.0.1", "sslmode=prefer"), &tls).unwrap();
    assert!(!encrypted(&mut c));
}

/// The store's connection and the LISTEN connection both go through TLS (with the
/// process's connector: the system store, unless `PGSSLROOTCERT` names one, neither of
/// which trusts the CA made here).
#[test]
fn the_store_and_the_listener_connect_through_tls() {
    let (server, _, _) = tls_server();
    let config = tcp_url(server, "127.0.0.1", "sslmode=require");
    let e = refused(conn::connect(&config));
    assert_tls_refused(&e, "TLS");
    let e = Listener::connect(&config, Vec::new()).unwrap_err();
    assert_tls_refused(&e, "TLS");
    // And plaintext when asked.
    let plain = tcp_url(server, "127.0.0.1", "sslmode=disable");
    assert!(!encrypted(&mut conn::connect(&plain).unwrap()));
    Listener::connect(&plain, Vec::new()).unwrap();
}

/// `parse_url`: which `sslmode` a URL gets (moved from `src/store/postgres/conn.rs`).
mod parse_url {
    use dshq::store::postgres::conn::parse_url;
    use postgres::config::SslMode;

    #[test]
    fn a_remote_host_without_sslmode_requires_tls_and_verify_modes_are_require() {
        let mode = |u: &str| parse_url(u).unwrap().get_ssl_mode();
        assert_eq!(mode("postgres://u@db.example.com/q"), SslMode::Require);
        assert_eq!(mode("postgres://u@10.1.2.3:5432/q"), SslMode::Require);
        assert_eq!(mode("postgres://u@localhost/q"), SslMode::Prefer);
        assert_eq!(mode("postgres://u@127.0.0.1/q"), SslMode::Prefer);
        assert_eq!(mode("postgres://u@[::1]/q"), SslMode::Prefer);
        assert_eq!(
            mode("postgresql://u@/q?host=/run/postgresql"),
            SslMode::Prefer
        );
        assert_eq!(
            mode("postgres://u@db.example.com/q?sslmode=disable"),
            SslMode::Disable
        );
        assert_eq!(
            mode("postgres://u@db.example.com/q?sslmode=verify-full"),
            SslMode::Require
        );
        assert_eq!(
            mode("postgres://u@localhost/q?sslmode=verify-ca"),
            SslMode::Require
        );
        let e = parse_url("postgres://u:s3cret@h/q?nonsense=1").unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
