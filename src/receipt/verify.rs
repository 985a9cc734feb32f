//! Verifying a receipt offline: bytes and trusted public keys in, a verdict out. No store,
//! no root, no clock: `dshq receipt verify` runs anywhere the binary does.
//!
//! In order, the first failure is the answer:
//! 1. the file is a receipt (its `receipt` member is the format tag), an outcome file
//!    that carries one (its `receipt` member is an object), or lines of receipts (`dshq
//!    export --receipts`), and is byte for byte the canonical rendering of what it parses
//!    to ([`crate::receipt::seal`]) — else `RECEIPT_INVALID`;
//! 2. its `signer` is one of the trusted keys and the signature verifies under it over
//!    the signed bytes (strict Ed25519: no malleable signature, no weak key) — a receipt
//!    that verifies under its own `signer` but that key is not trusted is
//!    `RECEIPT_UNTRUSTED_KEY`; any other failure is `RECEIPT_INVALID`;
//! 3. it is the receipt of the request named (`--id`, `--digest`), and an outcome file's
//!    own members are exactly the outcome its receipt signed — else `RECEIPT_MISMATCH`.

use ed25519_dalek::Signature;
use serde_json::Value;

use super::key::{unhex, PublicKey};
use super::seal::signed_bytes;
use crate::protocol::receipt::{Receipt, ReceiptError, RECEIPT_FORMAT};

/// What a verifier expects.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// The keys trusted to sign receipts (at least one).
    pub keys: Vec<PublicKey>,
    /// The request id the receipt must be of.
    pub id: Option<String>,
    /// The request digest (`sha256:HEX`) the receipt must be of.
    pub digest: Option<String>,
}

/// What kind of file held the receipts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Holder {
    /// A receipt alone (`dshq receipt ID`).
    Receipt,
    /// An outcome file carrying one (`outbox/ID.json`).
    Outcome,
    /// Lines of receipts (`dshq export --receipts`).
    Lines,
}

/// A verified file.
#[derive(Debug, Clone)]
pub struct Verified {
    /// What the file was.
    pub holder: Holder,
    /// The receipts it held, verified, in file order.
    pub receipts: Vec<Receipt>,
}

fn invalid(why: impl Into<String>) -> ReceiptError {
    ReceiptError::Invalid(why.into())
}

/// Pretty JSON and a newline: the canonical rendering of a receipt or outcome file.
fn pretty(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("a JSON value serializes");
    s.push('\n');
    s
}

/// Verify the file `bytes` against `expect`.
pub fn verify(bytes: &[u8], expect: &Expect) -> Result<Verified, ReceiptError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| invalid("the file is not UTF-8 text, so not a receipt dshq wrote"))?;
    match serde_json::from_str::<Value>(text) {
        // One document: pretty, as `receipt ID` and the outbox write it, or one line.
        Ok(value) => {
            let mut compact = serde_json::to_string(&value).expect("a JSON value serializes");
            compact.push('\n');
            if pretty(&value) != text && compact != text {
                return Err(not_canonical());
            }
            one_document(value, expect)
        }
        Err(_) if text.trim_end_matches('\n').contains('\n') => lines(text, expect),
        Err(e) => Err(invalid(format!(
            "the file is not JSON ({e}): not a receipt"
        ))),
    }
}

fn not_canonical() -> ReceiptError {
    invalid(
        "the file is not byte for byte the receipt dshq wrote (its JSON parses, but \
         whitespace, an escape, a key's order or a duplicated key differs from the \
         canonical rendering): it was changed",
    )
}

fn one_document(value: Value, expect: &Expect) -> Result<Verified, ReceiptError> {
    let Value::Object(mut doc) = value else {
        return Err(invalid("the file is JSON but not an object: not a receipt"));
    };
    match doc.get("receipt") {
        Some(Value::String(_)) => {
            let r = check_receipt(doc, expect)?;
            Ok(Verified {
                holder: Holder::Receipt,
                receipts: vec![r],
            })
        }
        Some(Value::Object(_)) => {
            let Some(Value::Object(inner)) = doc.shift_remove("receipt") else {
                unreachable!("matched above")
            };
            let signed = inner.get("outcome").cloned().unwrap_or(Value::Null);
            let r = check_receipt(inner, expect)?;
            // The outcome's own members must be exactly the outcome the receipt signed.
            let empty = serde_json::Map::new();
            let signed_members = signed.as_object().unwrap_or(&empty);
            if &doc != signed_members {
                let mut differs: Vec<&str> = Vec::new();
                for k in doc.keys().chain(signed_members.keys()) {
                    if doc.get(k) != signed_members.get(k) && !differs.contains(&k.as_str()) {
                        differs.push(k);
                    }
                }
                return Err(ReceiptError::Mismatch(format!(
                    "the outcome file's {} differ from what its receipt signed: the outcome \
                     was changed after it was written",
                    differs.join(", ")
                )));
            }
            Ok(Verified {
                holder: Holder::Outcome,
                receipts: vec![r],
            })
        }
        _ => Err(invalid(
            "the file has no `receipt` member: it is neither a receipt nor an outcome file \
             carrying one",
        )),
    }
}

fn lines(text: &str, expect: &Expect) -> Result<Verified, ReceiptError> {
    if text.is_empty() || !text.ends_with('\n') {
        return Err(invalid(
            "the file is neither one JSON document nor lines of them ending in a newline",
        ));
    }
    let mut receipts = Vec::new();
    for (n, line) in text[..text.len() - 1].split('\n').enumerate() {
        let at = |e: ReceiptError| match e {
            ReceiptError::Invalid(m) => invalid(format!("line {}: {m}", n + 1)),
            ReceiptError::Mismatch(m) => ReceiptError::Mismatch(format!("line {}: {m}", n + 1)),
            other => other,
        };
        let value: Value =
            serde_json::from_str(line).map_err(|e| at(invalid(format!("not JSON ({e})"))))?;
        if serde_json::to_string(&value).ok().as_deref() != Some(line) {
            return Err(at(not_canonical()));
        }
        let Value::Object(doc) = value else {
            return Err(at(invalid("not a JSON object: not a receipt")));
        };
        if !matches!(doc.get("receipt"), Some(Value::String(_))) {
            return Err(at(invalid("not a receipt (no `receipt` format member)")));
        }
        receipts.push(check_receipt(doc, expect).map_err(at)?);
    }
    Ok(Verified {
        holder: Holder::Lines,
        receipts,
    })
}

fn check_receipt(
    doc: serde_json::Map<String, Value>,
    expect: &Expect,
) -> Result<Receipt, ReceiptError> {
    if doc.get("receipt").and_then(Value::as_str) != Some(RECEIPT_FORMAT) {
        return Err(invalid(format!(
            "not a {RECEIPT_FORMAT} receipt (its `receipt` member says otherwise)"
        )));
    }
    let message = signed_bytes(&doc);
    let receipt: Receipt = serde_json::from_value(Value::Object(doc))
        .map_err(|e| invalid(format!("the receipt's members are not a receipt's: {e}")))?;
    let signer = PublicKey::parse(&receipt.signer).ok_or_else(|| {
        invalid("the receipt's `signer` is not `ed25519:` and 64 lowercase hex digits of a key")
    })?;
    let signature = unhex::<64>(&receipt.signature)
        .map(|b| Signature::from_bytes(&b))
        .ok_or_else(|| invalid("the receipt's `signature` is not 128 lowercase hex digits"))?;
    let good_under = |k: &PublicKey| k.0.verify_strict(&message, &signature).is_ok();
    if expect.keys.contains(&signer) {
        if !good_under(&signer) {
            return Err(invalid(
                "the signature does not verify over the receipt's bytes: the receipt was \
                 changed after it was signed",
            ));
        }
    } else if good_under(&signer) {
        return Err(ReceiptError::UntrustedKey {
            signer: receipt.signer.clone(),
        });
    } else {
        return Err(invalid(
            "the signature does not verify, under its `signer` or any key given: the \
             receipt was changed after it was signed",
        ));
    }
    if let Some(id) = &expect.id {
        if &receipt.id != id {
            return Err(ReceiptError::Mismatch(format!(
                "this is the receipt of request {:?}, not of {id:?}",
                receipt.id
            )));
        }
    }
    if let Some(digest) = &expect.digest {
        if receipt.request_digest.as_ref() != Some(digest) {
            return Err(ReceiptError::Mismatch(format!(
                "this receipt is of the request with digest {}, not {digest}",
                receipt.request_digest.as_deref().unwrap_or("(none)")
            )));
        }
    }
    Ok(receipt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::receipt::{ChainPosition, Policy, Shown, Times};
    use crate::protocol::types::{Answer, AnswerItem, AnsweredOutcome, Outcome, Question};
    use crate::receipt::seal::{seal, to_file, to_line};
    use crate::receipt::ReceiptKey;

    fn receipt(id: &str, key: &ReceiptKey) -> Receipt {
        let outcome = Outcome::Answered(AnsweredOutcome {
            id: id.into(),
            status: "answered".into(),
            request_digest: Some(format!("sha256:{}", "ab".repeat(32))),
            answer: Answer {
                answers: vec![AnswerItem {
                    id: "q".into(),
                    selected: vec!["Yes ✓".into()],
                    custom: Some("ship it \"now\"\n".into()),
                    edited: None,
                }],
            },
            decision: None,
            provider: Some("alice".into()),
            approvers: None,
            votes: None,
            feedback: None,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            finished_at: "2026-01-01T00:01:00.000Z".into(),
            edited: None,
            decided_by: None,
            on_behalf_of: None,
            call_id: None,
            receipt: None,
        });
        seal(
            Receipt {
                receipt: String::new(),
                id: id.into(),
                status: "answered".into(),
                request_digest: Some(format!("sha256:{}", "ab".repeat(32))),
                context: "default".into(),
                shown: Some(Shown {
                    questions: vec![serde_json::from_value::<Question>(serde_json::json!({
                        "id": "q", "question": "Ship?", "options": [{"label": "Yes ✓"}, {"label": "No"}]
                    }))
                    .unwrap()],
                }),
                outcome: Box::new(outcome),
                approvers: vec!["provider:alice".into()],
                actor: "provider:alice".into(),
                policy: Policy {
                    timeout: Some("1h".into()),
                    ..Default::default()
                },
                times: Times {
                    created_at: "2026-01-01T00:00:00.000Z".into(),
                    claimed_at: None,
                    finished_at: "2026-01-01T00:01:00.000Z".into(),
                },
                chain: ChainPosition {
                    seq: 12,
                    kind: "answered".into(),
                    hash: "cd".repeat(32),
                },
                signer: String::new(),
                signature: String::new(),
            },
            key,
        )
    }

    fn expect(key: &ReceiptKey) -> Expect {
        Expect {
            keys: vec![key.public()],
            ..Default::default()
        }
    }

    /// Every byte of `bytes`, changed three ways (low bit, case bit, to a space), must
    /// fail; returns how many variants were tried.
    fn every_changed_byte_fails(bytes: &[u8], e: &Expect) -> usize {
        let mut tried = 0;
        for i in 0..bytes.len() {
            for mask in [0x01u8, 0x20, 0x80] {
                let mut b = bytes.to_vec();
                b[i] ^= mask;
                tried += 1;
                assert!(
                    verify(&b, e).is_err(),
                    "byte {i} ({:?}) ^ {mask:#x} still verifies",
                    bytes[i] as char
                );
            }
            let mut b = bytes.to_vec();
            if b[i] != b' ' {
                b[i] = b' ';
                tried += 1;
                assert!(verify(&b, e).is_err(), "byte {i} to a space still verifies");
            }
        }
        tried
    }

    #[test]
    fn an_untouched_receipt_verifies_and_every_changed_byte_fails() {
        let key = ReceiptKey::from_seed([1; 32]);
        let r = receipt("q1", &key);
        let file = to_file(&r);
        let v = verify(file.as_bytes(), &expect(&key)).unwrap();
        assert_eq!(v.holder, Holder::Receipt);
        assert_eq!(v.receipts, vec![r.clone()]);
        assert!(every_changed_byte_fails(file.as_bytes(), &expect(&key)) > 3 * file.len());
        // A byte added or removed fails too.
        for i in (0..file.len()).step_by(3) {
            let mut b = file.as_bytes().to_vec();
            b.remove(i);
            assert!(verify(&b, &expect(&key)).is_err(), "byte {i} removed");
            let mut b = file.as_bytes().to_vec();
            b.insert(i, b' ');
            assert!(verify(&b, &expect(&key)).is_err(), "a space at {i}");
        }
    }

    #[test]
    fn an_outcome_carrying_its_receipt_verifies_and_every_changed_byte_fails() {
        let key = ReceiptKey::from_seed([2; 32]);
        let r = receipt("q2", &key);
        let outcome = (*r.outcome).clone().with_receipt(Some(r.clone()));
        let file = outcome.to_file_json();
        let v = verify(file.as_bytes(), &expect(&key)).unwrap();
        assert_eq!(v.holder, Holder::Outcome);
        every_changed_byte_fails(file.as_bytes(), &expect(&key));
    }

    #[test]
    fn export_lines_verify_and_every_changed_byte_fails() {
        let key = ReceiptKey::from_seed([3; 32]);
        let text = format!(
            "{}{}",
            to_line(&receipt("a", &key)),
            to_line(&receipt("b", &key))
        );
        let v = verify(text.as_bytes(), &expect(&key)).unwrap();
        assert_eq!(v.holder, Holder::Lines);
        assert_eq!(v.receipts.len(), 2);
        every_changed_byte_fails(text.as_bytes(), &expect(&key));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Whatever text an asker or reviewer wrote (controls, quotes, non-ASCII, line
        /// separators), the receipt's renderings are canonical: each verifies as written.
        #[test]
        fn any_text_renders_canonically(id in "[A-Za-z0-9][A-Za-z0-9._-]{0,20}", text in "\\PC{0,40}|[\\x00-\\x7f\\u{80}-\\u{9f}\\u{2028}\\u{202e}\"\\\\]{0,40}") {
            let key = ReceiptKey::from_seed([6; 32]);
            let mut r = receipt(&id, &key);
            r.shown.as_mut().unwrap().questions[0].question = text.clone();
            r.actor = text.clone();
            let r = seal(r, &key);
            proptest::prop_assert!(verify(to_file(&r).as_bytes(), &expect(&key)).is_ok());
            proptest::prop_assert!(verify(to_line(&r).as_bytes(), &expect(&key)).is_ok());
            let outcome = (*r.outcome).clone().with_receipt(Some(r.clone()));
            proptest::prop_assert!(verify(outcome.to_file_json().as_bytes(), &expect(&key)).is_ok());
        }
    }

    #[test]
    fn another_key_another_request_and_a_disagreeing_outcome_fail_with_their_codes() {
        let key = ReceiptKey::from_seed([4; 32]);
        let other = ReceiptKey::from_seed([5; 32]);
        let file = to_file(&receipt("q1", &key));
        let err = verify(file.as_bytes(), &expect(&other)).unwrap_err();
        assert!(matches!(err, ReceiptError::UntrustedKey { .. }), "{err}");
        // Trusting several keys, one of them the signer's, verifies.
        let both = Expect {
            keys: vec![other.public(), key.public()],
            ..Default::default()
        };
        verify(file.as_bytes(), &both).unwrap();
        let e = Expect {
            id: Some("q2".into()),
            ..expect(&key)
        };
        assert!(matches!(
            verify(file.as_bytes(), &e),
            Err(ReceiptError::Mismatch(_))
        ));
        let e = Expect {
            digest: Some(format!("sha256:{}", "00".repeat(32))),
            ..expect(&key)
        };
        assert!(matches!(
            verify(file.as_bytes(), &e),
            Err(ReceiptError::Mismatch(_))
        ));
        // A receipt re-signed by another key but naming the trusted signer fails.
        let mut forged = receipt("q1", &other);
        forged.signer = key.public().to_string();
        assert!(matches!(
            verify(to_file(&forged).as_bytes(), &expect(&key)),
            Err(ReceiptError::Invalid(_))
        ));
        // An outcome whose members were changed, re-rendered canonically: a mismatch.
        let r = receipt("q3", &key);
        let Outcome::Answered(mut a) = (*r.outcome).clone() else {
            unreachable!()
        };
        a.provider = Some("mallory".into());
        let changed = Outcome::Answered(a).with_receipt(Some(r));
        let err = verify(changed.to_file_json().as_bytes(), &expect(&key)).unwrap_err();
        assert!(
            matches!(err, ReceiptError::Mismatch(ref m) if m.contains("provider")),
            "{err}"
        );
    }
}
