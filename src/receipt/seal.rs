//! What a receipt's signature covers, and the receipt's bytes.
//!
//! **The signed bytes** are the receipt's members in their order, without `signature`,
//! as compact JSON (serde_json's writer: no whitespace, the minimal escapes, non-ASCII as
//! UTF-8), prefixed with the domain tag `dshq.receipt.v1\n` so the signature can never be
//! taken for one over any other document. The `signer` member is inside what is signed.
//!
//! **The receipt's bytes** are one canonical rendering of the same value: pretty JSON
//! (two-space indent) and a newline, alone in its file or inside an outcome file (where it
//! is indented with the outcome), or compact on one line of `dshq export --receipts`. A
//! verifier parses the file and refuses it unless rendering the parsed value again gives
//! the file's bytes exactly ([`crate::receipt::verify`]); then the signed bytes are
//! computed from that value. So every byte of the file is pinned: a byte that changes the
//! value changes the signed bytes (or the outcome the receipt is compared with), and a
//! byte that would not change the value (whitespace, an escape spelled otherwise, a hex
//! digit's case, a duplicated key) makes the file not canonical.
//!
//! Why not sign a payload kept as an opaque string (as JWS does)? The receipt would then
//! carry its content twice or unreadably, and the JSON around the string would still need
//! pinning for "any changed byte fails". Signing the value and pinning its rendering keeps
//! the receipt a plain JSON document an auditor can read, that any JSON library can
//! re-render (Python: `json.dumps(v, indent=2, ensure_ascii=False)` + `"\n"`, keys kept
//! in order), and whose signed bytes do not depend on where it is embedded.

use serde_json::Value;

use super::key::{hex, ReceiptKey};
use crate::protocol::receipt::{Receipt, RECEIPT_FORMAT};

/// The domain tag before the signed bytes.
pub const DOMAIN: &[u8] = b"dshq.receipt.v1\n";

/// The bytes the signature of the receipt `value` (a JSON object) covers: [`DOMAIN`] and
/// the compact JSON of its members but `signature`, in their order.
pub fn signed_bytes(value: &serde_json::Map<String, Value>) -> Vec<u8> {
    let mut out = Vec::with_capacity(2048);
    out.extend_from_slice(DOMAIN);
    out.push(b'{');
    let mut first = true;
    for (k, v) in value {
        if k == "signature" {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        serde_json::to_writer(&mut out, k).expect("a string serializes");
        out.push(b':');
        serde_json::to_writer(&mut out, v).expect("a JSON value serializes");
    }
    out.push(b'}');
    out
}

/// Sign `receipt` (its `signer` and `signature` are set here) with `key`.
pub fn seal(mut receipt: Receipt, key: &ReceiptKey) -> Receipt {
    receipt.receipt = RECEIPT_FORMAT.to_string();
    receipt.signer = key.public().to_string();
    receipt.signature = String::new();
    let value = serde_json::to_value(&receipt).expect("a receipt serializes");
    let Value::Object(map) = value else {
        unreachable!("a receipt is a JSON object")
    };
    receipt.signature = hex(&key.sign(&signed_bytes(&map)));
    receipt
}

/// The receipt as a file: pretty JSON and a newline (what `dshq receipt ID` prints).
pub fn to_file(receipt: &Receipt) -> String {
    let mut s = serde_json::to_string_pretty(receipt).expect("a receipt serializes");
    s.push('\n');
    s
}

/// The receipt as one line of `dshq export --receipts`: compact JSON and a newline.
pub fn to_line(receipt: &Receipt) -> String {
    let mut s = serde_json::to_string(receipt).expect("a receipt serializes");
    s.push('\n');
    s
}
