//! What accepting a request computes from the request alone, made ahead of the store.
//!
//! Accepting a request stores its canonical JSON, each question's options as JSON, and
//! records the request's digest ([`super::digest`]) in its `accepted` event. None of these
//! depends on the store or the time, only on the request and the id it is asked under, and
//! together they were a fifth of the work an inbox batch's transaction did per file. So the
//! daemon's file thread prepares them for each request file of the next batch while the
//! batch before it commits, and the store's rule takes them instead of computing them
//! again ([`crate::store::queue::requests::accept`]); a request given without them (every
//! other face) is prepared in the rule, by the same function.
//!
//! Pure: no I/O.

use super::digest::request_digest;
use super::types::Request;

/// A request's stored forms, for the id it was prepared under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// The id the request is asked under: its own, else the fallback (its file's name).
    /// The rule uses what was prepared only for a request it accepts under this id.
    pub id: String,
    /// The body stored: [`Request::to_json`] of the request with its `id` set.
    pub body: String,
    /// [`request_digest`] of the request.
    pub digest: String,
    /// Each question's options as stored (JSON), in order.
    pub options: Vec<String>,
}

impl Prepared {
    /// Prepare `request` as it is asked: under its own id, else `fallback_id`. `None` when
    /// it has neither, or a part does not serialize (the rule then finds out why).
    pub fn of(request: &mut Request, fallback_id: Option<&str>) -> Option<Prepared> {
        // The body is the request with the id the checks give it (its own, else the
        // fallback): set it for the serialisation, then put the request back as it was.
        let named = request.id.is_some();
        if !named {
            request.id = Some(fallback_id?.to_string());
        }
        let prepared = Prepared::of_named(request);
        if !named {
            request.id = None;
        }
        prepared
    }

    /// Prepare a request whose `id` is set (as the checks leave it).
    pub fn of_named(request: &Request) -> Option<Prepared> {
        let options = request
            .questions
            .iter()
            .map(|q| serde_json::to_string(q.options()).ok())
            .collect::<Option<Vec<String>>>()?;
        Some(Prepared {
            id: request.id.clone()?,
            body: serde_json::to_string(request).ok()?,
            digest: request_digest(request),
            options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::check::check_structure;

    fn parse(json: &str) -> Request {
        serde_json::from_str(json).unwrap()
    }

    /// What a file thread prepares is what the rule computes from the checked request,
    /// for a request that names its id and for one named by its file; and the request is
    /// left as it was given.
    #[test]
    fn prepared_ahead_is_what_the_checked_request_gives() {
        let now = jiff::Timestamp::now();
        for (json, stem) in [
            (
                r#"{"id":"r1","context":"ops","questions":[{"id":"q","question":"Which?","options":[{"label":"a","description":"A"},{"label":"b"}]},{"id":"f","question":"Why?"}],"timeout":"1h","meta":{"z":1,"a":[null,"x"]}}"#,
                "file-name",
            ),
            (
                r#"{"questions":[{"id":"q","question":"Which \"one\"?\n","multi_select":true,"options":[{"label":"ü"},{"label":"b"}]}]}"#,
                "from-the-file",
            ),
        ] {
            let mut given = parse(json);
            let prepared = Prepared::of(&mut given, Some(stem)).unwrap();
            assert_eq!(given, parse(json), "the request is left as it was");
            let n = check_structure(given, Some(stem), now).unwrap();
            let options: Vec<String> = n
                .request
                .questions
                .iter()
                .map(|q| serde_json::to_string(q.options()).unwrap())
                .collect();
            assert_eq!(prepared.id, n.id);
            assert_eq!(prepared.body, n.request.to_json());
            assert_eq!(prepared.digest, request_digest(&n.request));
            assert_eq!(prepared.options, options);
            assert_eq!(Prepared::of_named(&n.request), Some(prepared));
        }
        assert_eq!(Prepared::of(&mut parse(r#"{"questions":[]}"#), None), None);
    }
}
