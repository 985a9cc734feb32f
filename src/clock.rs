//! Time: milliseconds since the Unix epoch in the database, RFC 3339 on the wire.
//!
//! Store functions take `now` as a parameter instead of reading the clock, so expiry is
//! tested by passing a later `now`. The binary reads the system clock. A *test build* (the
//! `test-clock` feature, which only `cargo test` turns on) shifts it by `DSHQ_CLOCK_SKEW` (a
//! signed duration such as `+10m`): the injectable clock the end-to-end tests use to expire
//! leases without sleeping. Any other build ignores the variable: a shifted clock could
//! revive an expired lease or finish a request before it was created.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jiff::Timestamp;

/// Milliseconds since the Unix epoch.
pub type Millis = i64;

/// The environment variable that shifts this process's clock (testing aid, test builds only).
pub const SKEW_ENV: &str = "DSHQ_CLOCK_SKEW";

/// Whether this build honours [`SKEW_ENV`] (the `test-clock` feature).
pub const SKEW_HONOURED: bool = cfg!(feature = "test-clock");

/// The current time in milliseconds, with `DSHQ_CLOCK_SKEW` applied in a test build.
pub fn now_ms() -> Millis {
    let sys = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64;
    sys + skew_ms()
}

fn skew_ms() -> i64 {
    if !SKEW_HONOURED {
        return 0;
    }
    static SKEW: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *SKEW.get_or_init(|| {
        std::env::var(SKEW_ENV)
            .ok()
            .and_then(|v| parse_signed_duration_ms(&v))
            .unwrap_or(0)
    })
}

/// Parse `+10m`, `-90s`, `5m` into signed milliseconds.
pub fn parse_signed_duration_ms(s: &str) -> Option<i64> {
    let s = s.trim();
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => (-1, r),
        None => (1, s.strip_prefix('+').unwrap_or(s)),
    };
    humantime::parse_duration(rest.trim())
        .ok()
        .map(|d| sign * d.as_millis() as i64)
}

/// Milliseconds to a timestamp (saturating at the representable range).
pub fn to_timestamp(ms: Millis) -> Timestamp {
    Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// Milliseconds to RFC 3339 with millisecond precision in UTC, e.g. `2026-11-30T07:00:00.123Z`.
pub fn rfc3339(ms: Millis) -> String {
    format!("{:.3}", to_timestamp(ms))
}

/// A timestamp to milliseconds.
pub fn from_timestamp(t: Timestamp) -> Millis {
    t.as_millisecond()
}

/// A std duration to milliseconds (saturating).
pub fn duration_ms(d: Duration) -> Millis {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A human duration (`1m 30s`) from milliseconds.
pub fn human_ms(ms: Millis) -> String {
    let d = Duration::from_millis(ms.max(0) as u64);
    // Round to seconds above a minute, to keep it readable.
    let d = if d >= Duration::from_secs(60) {
        Duration::from_secs(d.as_secs())
    } else {
        d
    };
    humantime::format_duration(d).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signed_durations_parse() {
        assert_eq!(parse_signed_duration_ms("+10m"), Some(600_000));
        assert_eq!(parse_signed_duration_ms("-90s"), Some(-90_000));
        assert_eq!(parse_signed_duration_ms("2s"), Some(2_000));
        assert_eq!(parse_signed_duration_ms("soon"), None);
    }

    #[test]
    fn rfc3339_has_millis_and_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_500), "1970-01-01T00:00:01.500Z");
    }
}
