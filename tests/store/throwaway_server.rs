//! The throwaway server itself (tests/support/throwaway.rs): its URLs, and that it starts,
//! serves a fresh database and restarts.

use crate::throwaway::*;

#[test]
fn urls_name_the_database_and_keep_the_socket() {
    let s = Server::external("postgresql://postgres@/postgres?host=/tmp/x");
    assert_eq!(s.url("db1"), "postgresql://postgres@/db1?host=/tmp/x");
    let s = Server::external("postgres://u:p@127.0.0.1:5433/postgres");
    assert_eq!(s.url("db2"), "postgres://u:p@127.0.0.1:5433/db2");
}

#[test]
fn a_throwaway_server_starts_serves_a_fresh_database_and_restarts() {
    let mut s = Server::start().unwrap();
    let url = s.fresh_database().unwrap();
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute("CREATE TABLE t (x BIGINT); INSERT INTO t VALUES (7)")
        .unwrap();
    s.restart().unwrap();
    assert!(
        c.query_one("SELECT 1", &[]).is_err(),
        "the old session died"
    );
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let x: i64 = c.query_one("SELECT x FROM t", &[]).unwrap().get(0);
    assert_eq!(x, 7, "the data survived the restart");
    let dir = s.dir.clone().unwrap();
    drop(s);
    assert!(!dir.exists(), "the directory goes with the server");
}
