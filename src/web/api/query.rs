//! Query strings of the API: the CLI's filters as `?name=value` pairs (a name such as
//! `context` may repeat). A value that does not parse is 400 `USAGE` naming the
//! parameter; an unknown parameter is refused the same way, so a typo never widens a
//! filter silently.

use crate::clock::{duration_ms, Millis};
use crate::host::error::ApiError;
use crate::protocol::Code;

/// The pairs of a query string, in order.
#[derive(Debug, Default)]
pub struct Query(pub Vec<(String, String)>);

impl Query {
    /// Parse a raw query (`None`: no query), allowing only the `known` names.
    pub fn parse(raw: Option<&str>, known: &[&str]) -> Result<Query, ApiError> {
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(raw.unwrap_or(""))
            .map_err(|e| ApiError::new(Code::Usage, format!("bad query string: {e}")))?;
        if let Some((k, _)) = pairs.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            return Err(ApiError::new(
                Code::Usage,
                format!(
                    "unknown query parameter {:?}; known: {}",
                    crate::text::one_line(k),
                    known.join(", ")
                ),
            ));
        }
        Ok(Query(pairs))
    }

    /// The last value of `name`.
    pub fn one(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name`.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// `name` parsed by `parse`, or 400 naming it.
    pub fn parsed<T>(
        &self,
        name: &str,
        what: &str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<Option<T>, ApiError> {
        match self.one(name) {
            None => Ok(None),
            Some(v) => parse(v).map(Some).ok_or_else(|| {
                ApiError::new(
                    Code::Usage,
                    format!("{name}={:?}: {what}", crate::text::one_line(v)),
                )
            }),
        }
    }

    /// A boolean flag: `true`/`1` or `false`/`0`.
    pub fn flag(&self, name: &str) -> Result<bool, ApiError> {
        Ok(self
            .parsed(name, "give true or false", |v| match v {
                "true" | "1" => Some(true),
                "false" | "0" => Some(false),
                _ => None,
            })?
            .unwrap_or(false))
    }

    /// A time: a duration back from `now` (`7d`) or an RFC 3339 time.
    pub fn time(&self, name: &str, now: Millis) -> Result<Option<Millis>, ApiError> {
        self.parsed(
            name,
            "give a duration such as 7d or an RFC 3339 time",
            |v| {
                if let Ok(d) = humantime::parse_duration(v) {
                    return Some(now.saturating_sub(duration_ms(d)));
                }
                v.parse::<jiff::Timestamp>()
                    .ok()
                    .map(|t| t.as_millisecond())
            },
        )
    }

    /// A positive count up to `max`.
    pub fn limit(&self, name: &str, max: i64) -> Result<Option<i64>, ApiError> {
        self.parsed(name, &format!("give a whole number from 1 to {max}"), |v| {
            v.parse::<i64>().ok().filter(|n| (1..=max).contains(n))
        })
    }
}
