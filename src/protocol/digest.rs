//! Which request an outcome answers: a digest of the canonical request.
//!
//! An id can be reused with different content (rejected with `DUPLICATE_ID`), and the
//! earlier request's outcome then stays in `outbox/ID.json`. An asker that only reads the
//! outcome by id would take that earlier answer for its own. So the outcome carries
//! `requestDigest`, and an asker compares it with the digest of what it asked.
//!
//! The canonical form is meant to be reproducible in any language with a JSON library:
//! the request as JSON **without its `id`** (the id may come from the file name), with
//! `multi_select` spelled `multiSelect`, a field of the vocabulary given as `null` left out
//! (null means absent; inside `meta`, kept untouched, a null stays), object keys sorted by
//! code point at every level,
//! no insignificant whitespace, strings in UTF-8 with JSON's minimal escapes (`\"`, `\\`,
//! `\b`, `\f`, `\n`, `\r`, `\t`, other controls as lowercase `\u00xx`), numbers exactly as
//! written. The digest is `sha256:` followed by the lowercase hex SHA-256 of those bytes.
//! Python: `json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`.
//!
//! Pure: no I/O.

use sha2::{Digest, Sha256};

use super::types::Request;

/// The canonical bytes of a request (see the module docs).
pub fn canonical_json(req: &Request) -> String {
    let mut value = serde_json::to_value(req).expect("a Request always serializes");
    if let Some(obj) = value.as_object_mut() {
        obj.shift_remove("id");
    }
    let mut out = Vec::with_capacity(512);
    write_canonical(&value, &mut out);
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// `sha256:HEX` of [`canonical_json`].
pub fn request_digest(req: &Request) -> String {
    let hash = Sha256::digest(canonical_json(req).as_bytes());
    let mut s = String::with_capacity(7 + 64);
    s.push_str("sha256:");
    s.push_str(&hex(&hash));
    s
}

/// Written straight into `out` (keys and scalars by serde_json's own writer, so the bytes
/// are those of `to_string`, without a string allocated per key and value: the digest
/// is computed for every accepted request).
fn write_canonical(v: &serde_json::Value, out: &mut Vec<u8>) {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, k).expect("a string serializes");
                out.push(b':');
                write_canonical(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        other => serde_json::to_writer(&mut *out, other).expect("a scalar serializes"),
    }
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 0xf) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(json: &str) -> Request {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn id_spelling_and_key_order_do_not_change_the_digest() {
        let a = req(
            r#"{"id":"r1","questions":[{"id":"q","question":"Q?","multi_select":true,
            "options":[{"label":"A"},{"label":"B"}]}],"meta":{"z":1,"a":{"y":2,"b":"x"}}}"#,
        );
        let b = req(
            r#"{"meta":{"a":{"b":"x","y":2},"z":1},"questions":[{"options":[{"label":"A"},
            {"label":"B"}],"multiSelect":true,"question":"Q?","id":"q"}]}"#,
        );
        assert_eq!(request_digest(&a), request_digest(&b));
        let c = req(
            r#"{"questions":[{"id":"q","question":"Q?","multi_select":true,"detail":null,
            "options":[{"label":"A","description":null},{"label":"B"}]}],"context":null,
            "meta":{"z":1,"a":{"y":2,"b":"x"}}}"#,
        );
        assert_eq!(request_digest(&a), request_digest(&c), "null is absent");
        assert_eq!(
            canonical_json(&a),
            r#"{"meta":{"a":{"b":"x","y":2},"z":1},"questions":[{"id":"q","multiSelect":true,"options":[{"label":"A"},{"label":"B"}],"question":"Q?"}]}"#
        );
    }

    #[test]
    fn different_content_has_a_different_digest() {
        let a = req(r#"{"questions":[{"id":"q","question":"Approve the plan?"}]}"#);
        let b = req(r#"{"questions":[{"id":"q","question":"DROP the production database?"}]}"#);
        assert_ne!(request_digest(&a), request_digest(&b));
        assert!(request_digest(&a).starts_with("sha256:"));
        assert_eq!(request_digest(&a).len(), 7 + 64);
    }

    #[test]
    fn strings_use_minimal_escapes_and_numbers_stay_as_written() {
        let a = req(
            r#"{"questions":[{"id":"q","question":"é\u0001\n\"x\""}],"meta":{"n":1.10,"big":123456789012345678901234567890}}"#,
        );
        assert_eq!(
            canonical_json(&a),
            "{\"meta\":{\"big\":123456789012345678901234567890,\"n\":1.10},\"questions\":[{\"id\":\"q\",\"question\":\"é\\u0001\\n\\\"x\\\"\"}]}"
        );
    }
}
