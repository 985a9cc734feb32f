//! The syntax every check shares: what an id may be, and JSON parsed with the path of
//! the offending value in its message. A leaf of the protocol's modules: the ask checks,
//! the answer rules and the ladder's all use it, and it uses none of them.

use super::error::{err, Code, UserQuestionError};

/// Whether `s` is a valid id: `[A-Za-z0-9][A-Za-z0-9._-]{0,127}`.
///
/// Ids become file names (`outbox/ID.json`), so nothing else is accepted: no `/`, no
/// leading dot, no spaces, nothing longer than 128 bytes.
pub fn is_valid_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && b[0].is_ascii_alphanumeric()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// Check an id and say which id it was when it is bad.
pub fn check_id(what: &str, s: &str) -> Result<(), UserQuestionError> {
    if is_valid_id(s) {
        Ok(())
    } else {
        Err(err(
            Code::BadRequest,
            format!(
                "{what} {s:?} is not a valid id: use 1 to 128 characters from A-Z a-z 0-9 . _ -, \
                 starting with a letter or digit"
            ),
        ))
    }
}

/// Deserialize JSON, prefixing serde's message with the path of the offending value
/// (`questions[0].multiSelect: invalid type: ...`) so wrong types name their field too.
pub fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(v) => match de.end() {
            Ok(()) => Ok(v),
            Err(e) => Err(e.to_string()),
        },
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path.is_empty() || path == "." {
                Err(inner.to_string())
            } else {
                Err(format!("{path}: {inner}"))
            }
        }
    }
}
