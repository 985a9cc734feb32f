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

/// Whether a JSON text writes U+0000 in a string (the escape `\u0000`: JSON allows no raw
/// control character in a string, so this is the only way one gets in).
///
/// No text in dshq may hold it: PostgreSQL's `text` cannot store it, so a question, an
/// option or an answer holding it would fail the write of every input batched with it,
/// again at every retry, on that backend only. It is refused where JSON is read instead,
/// the same on every backend and every surface. An escape is one only after an even run
/// of backslashes (`\\u0000` is a backslash, then the text `u0000`).
pub fn writes_nul(bytes: &[u8]) -> bool {
    let mut from = 0;
    while let Some(at) = bytes[from..].windows(6).position(|w| w == b"\\u0000") {
        let at = from + at;
        let run = bytes[..at]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if run % 2 == 0 {
            return true;
        }
        from = at + 1;
    }
    false
}

/// `s` with each U+0000 made U+FFFD, as undecodable bytes are: for text kept as it came
/// (the raw bytes of a rejected input, an abort's reason), which no text in dshq may hold
/// either ([`writes_nul`]).
pub fn without_nul(s: String) -> String {
    if s.contains('\0') {
        s.replace('\0', "\u{fffd}")
    } else {
        s
    }
}

/// The text of an input's bytes as it is recorded: lossy UTF-8, [`without_nul`].
pub fn recorded_text(bytes: Vec<u8>) -> String {
    without_nul(
        String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

/// Deserialize JSON, prefixing serde's message with the path of the offending value
/// (`questions[0].multiSelect: invalid type: ...`) so wrong types name their field too.
/// A text that writes U+0000 in a string is refused ([`writes_nul`]).
pub fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    if writes_nul(bytes) {
        return Err(
            "a string holds U+0000 (written \\u0000), which no text in dshq may hold".to_string(),
        );
    }
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

#[cfg(test)]
mod nul_tests {
    use super::writes_nul;

    #[test]
    fn only_an_escape_that_is_one_writes_nul() {
        assert!(writes_nul(br#"{"q":"a\u0000b"}"#));
        assert!(writes_nul(br#"{"a\u0000":1}"#));
        assert!(
            writes_nul(br#"["\\\u0000"]"#),
            "a backslash, then the escape"
        );
        assert!(
            !writes_nul(br#"["\\u0000"]"#),
            "a backslash, then the text u0000"
        );
        assert!(!writes_nul(br#"{"q":"\u0001 u0000"}"#));
        assert!(!writes_nul(b""));
    }

    #[test]
    fn recorded_text_holds_no_nul() {
        assert_eq!(
            super::recorded_text(b"a\0b\xffc".to_vec()),
            "a\u{fffd}b\u{fffd}c"
        );
        assert_eq!(super::without_nul("plain".into()), "plain");
    }
}
