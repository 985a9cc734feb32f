//! Network names: whether a host, as a URL or a `Host` header writes it, is this machine's
//! loopback. One rule for every place that treats loopback apart (plain HTTP to a local
//! stand-in, PostgreSQL without TLS on loopback, a browser's same-origin call to a
//! loopback listener).

/// Whether `host` (`localhost`, `127.0.0.1`, `[::1]`, without a port) names the loopback.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>().is_ok_and(|a| a.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_and_others() {
        for yes in [
            "localhost",
            "LocalHost",
            "127.0.0.1",
            "127.8.9.1",
            "[::1]",
            "::1",
        ] {
            assert!(is_loopback_host(yes), "{yes}");
        }
        for no in [
            "example.com",
            "10.0.0.1",
            "[::2]",
            "localhost.evil.example",
            "",
            "0.0.0.0",
        ] {
            assert!(!is_loopback_host(no), "{no}");
        }
    }
}
