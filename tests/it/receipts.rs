//! Signed decision receipts: `dshq receipt ID|key|verify`, the outcome file's
//! `receipt`, `dshq export --receipts`, on a real SQLite root, verified by the real binary
//! run with no root, no database and no environment.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::helpers::*;

/// `dshq receipt verify FILE --key KEY ARGS...` in an empty directory, with an empty
/// environment: nothing of any root can be found.
fn verify_offline(file: &Path, key: &str, args: &[&str]) -> Run {
    let empty = tempfile::tempdir().unwrap();
    Command::new(bin())
        .env_clear()
        .current_dir(empty.path())
        .arg("--json")
        .args(["receipt", "verify"])
        .arg(file)
        .args(["--key", key])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run dshq")
        .into()
}

fn public_key(env: &Env) -> String {
    let k = env.run(&["receipt", "key"]).ok().stdout.trim().to_string();
    assert!(k.starts_with("ed25519:") && k.len() == 8 + 64, "{k}");
    k
}

fn answered(env: &Env, id: &str) {
    env.ask(&simple_request(id)).ok();
    env.json(&["answer", id, "--select", "SQLite"]).ok();
}

fn save(env: &Env, name: &str, bytes: &[u8]) -> PathBuf {
    let p = env.dir.path().join(name);
    fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn a_receipt_verifies_offline_and_fails_on_any_changed_byte() {
    let env = Env::new();
    answered(&env, "r-1");
    let key = public_key(&env);
    let receipt = env.run(&["receipt", "r-1"]).ok().stdout;
    // Deterministic: asked again, the same bytes.
    assert_eq!(env.run(&["receipt", "r-1"]).ok().stdout, receipt);
    let file = save(&env, "r-1.receipt.json", receipt.as_bytes());

    let ok = verify_offline(&file, &key, &["--id", "r-1"]).ok().json();
    assert_eq!(ok["verified"], true);
    assert_eq!(ok["holder"], "receipt");
    assert_eq!(ok["receipts"][0]["id"], "r-1");
    // The key may also be given as a file holding it.
    let key_file = save(&env, "host.pub", format!("{key}\n").as_bytes());
    verify_offline(&file, key_file.to_str().unwrap(), &[]).ok();

    let r: Value = serde_json::from_str(&receipt).unwrap();
    assert_eq!(r["status"], "answered");
    // `answer` without a lease answers as a transient provider named after $USER.
    assert_eq!(r["approvers"], json!(["provider:tester"]));
    assert_eq!(r["actor"], "provider:tester");
    assert_eq!(r["shown"]["questions"][0]["question"], "Which database?");
    assert_eq!(
        r["outcome"]["answer"]["answers"][0]["selected"],
        json!(["SQLite"])
    );
    // The chain position is the answered event's, as `dshq events` shows it.
    let events = env.json(&["events", "r-1"]).ok().json();
    let last = events.as_array().unwrap().last().unwrap().clone();
    assert_eq!(r["chain"]["seq"], last["seq"]);
    assert_eq!(r["chain"]["hash"], last["hash"]);
    assert_eq!(last["kind"], "answered");

    // A dense sample of changed bytes, each checked by the binary (every byte, three ways,
    // is checked in-process by the unit tests of src/receipt/verify.rs).
    let bytes = receipt.as_bytes();
    let mut tried = 0;
    for i in (0..bytes.len()).step_by(5) {
        let mut changed = bytes.to_vec();
        changed[i] ^= if i % 2 == 0 { 0x01 } else { 0x20 };
        let f = save(&env, "changed.json", &changed);
        let run = verify_offline(&f, &key, &[]);
        assert_eq!(
            run.code, 17,
            "byte {i} ({:?}) changed still verifies: {run:?}",
            bytes[i] as char
        );
        let code = run.error_code();
        assert!(
            code == "RECEIPT_INVALID" || code == "RECEIPT_UNTRUSTED_KEY",
            "byte {i}: {code}"
        );
        tried += 1;
    }
    assert!(tried > 200, "{tried}");
    // Changes that keep the JSON value the same (whitespace, an escape spelled another
    // way, a key repeated) are refused as well: the bytes are pinned, not only the value.
    for (what, changed) in [
        (
            "an added space",
            receipt.replacen("\n  \"id\"", "\n   \"id\"", 1),
        ),
        ("a newline as CRLF", receipt.replacen("\n", "\r\n", 1)),
        (
            "an escaped letter",
            receipt.replacen("Which", "\\u0057hich", 1),
        ),
        (
            "a repeated key",
            receipt.replacen("\n  \"id\"", "\n  \"id\": \"x\",\n  \"id\"", 1),
        ),
        (
            "compact and pretty mixed",
            receipt.replacen("{\n  \"receipt\"", "{\"receipt\"", 1),
        ),
    ] {
        assert_ne!(changed, receipt, "{what}");
        let f = save(&env, "same-value.json", changed.as_bytes());
        let run = verify_offline(&f, &key, &[]);
        assert_eq!(
            (run.code, run.error_code().as_str()),
            (17, "RECEIPT_INVALID"),
            "{what}: {run:?}"
        );
    }
}

#[test]
fn another_key_or_another_request_fails_with_its_code() {
    let env = Env::new();
    answered(&env, "r-1");
    answered(&env, "r-2");
    let key = public_key(&env);
    let other_host = Env::new();
    answered(&other_host, "r-1");
    let other_key = public_key(&other_host);
    assert_ne!(key, other_key);

    let r1 = save(
        &env,
        "r1.json",
        env.run(&["receipt", "r-1"]).ok().stdout.as_bytes(),
    );
    let r2 = save(
        &env,
        "r2.json",
        env.run(&["receipt", "r-2"]).ok().stdout.as_bytes(),
    );

    // Signed by another key than the one trusted.
    let run = verify_offline(&r1, &other_key, &[]);
    assert_eq!(
        (run.code, run.error_code().as_str()),
        (17, "RECEIPT_UNTRUSTED_KEY"),
        "{run:?}"
    );
    // The other host's receipt of its own r-1 under this host's key: the same.
    let theirs = save(
        &env,
        "theirs.json",
        other_host.run(&["receipt", "r-1"]).ok().stdout.as_bytes(),
    );
    let run = verify_offline(&theirs, &key, &["--id", "r-1"]);
    assert_eq!(run.error_code(), "RECEIPT_UNTRUSTED_KEY", "{run:?}");
    // Trusting both hosts' keys, both verify.
    verify_offline(&theirs, &key, &["--key", &other_key]).ok();

    // The receipt of r-2 offered for r-1: by id, and by digest.
    let run = verify_offline(&r2, &key, &["--id", "r-1"]);
    assert_eq!(
        (run.code, run.error_code().as_str()),
        (17, "RECEIPT_MISMATCH"),
        "{run:?}"
    );
    let digest_1 = serde_json::from_slice::<Value>(&fs::read(&r1).unwrap()).unwrap()
        ["requestDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let mut other = simple_request("r-2");
    other["questions"][0]["question"] = json!("Which queue?");
    let run = verify_offline(&r2, &key, &["--digest", &digest_1]);
    let r2_digest =
        serde_json::from_slice::<Value>(&fs::read(&r2).unwrap()).unwrap()["requestDigest"].clone();
    if r2_digest == json!(digest_1) {
        // Same content under two ids has the same digest (the id is not in it): only the
        // id tells them apart.
        run.ok();
    } else {
        assert_eq!(run.error_code(), "RECEIPT_MISMATCH", "{run:?}");
    }
    verify_offline(&r1, &key, &["--id", "r-1", "--digest", &digest_1]).ok();

    // A key that is no key, and a file that is no receipt: clear errors.
    let run = verify_offline(&r1, "ed25519:xyz", &[]);
    assert_eq!(
        (run.code, run.error_code().as_str()),
        (2, "USAGE"),
        "{run:?}"
    );
    let junk = save(&env, "junk.json", b"{\"hello\": 1}\n");
    let run = verify_offline(&junk, &key, &[]);
    assert_eq!(run.error_code(), "RECEIPT_INVALID", "{run:?}");
}

#[test]
fn outcome_files_carry_receipts_that_verify() {
    let env = Env::new();
    answered(&env, "o-answered");
    env.ask(&simple_request("o-cancelled")).ok();
    env.json(&["cancel", "o-cancelled", "--reason", "not needed"])
        .ok();
    env.ask(&simple_request("o-aborted")).ok();
    env.json(&["abort", "o-aborted"]).ok();
    // A rejected input with an id gets an error outcome, and a receipt.
    let r = env.ask(&json!({"id": "o-rejected", "questions": []}));
    assert_eq!(r.error_code(), "EMPTY_QUESTIONS");
    let key = public_key(&env);
    for (id, status) in [
        ("o-answered", "answered"),
        ("o-cancelled", "cancelled"),
        ("o-aborted", "aborted"),
        ("o-rejected", "rejected"),
    ] {
        env.wait_outcome(id);
        let path = env.root().join("outbox").join(format!("{id}.json"));
        let run = verify_offline(&path, &key, &["--id", id]).ok().json();
        assert_eq!(run["holder"], "outcome", "{id}");
        assert_eq!(run["receipts"][0]["status"], status, "{id}");
        // The receipt in the outcome is the one `dshq receipt ID` prints.
        let outcome = env.outcome_file(id).unwrap();
        let printed: Value = serde_json::from_str(&env.run(&["receipt", id]).ok().stdout).unwrap();
        assert_eq!(outcome["receipt"], printed, "{id}");
        let mut rest = outcome.clone();
        rest.as_object_mut().unwrap().remove("receipt");
        assert_eq!(
            printed["outcome"], rest,
            "{id}: the receipt signs the outcome"
        );
    }
    let rejected = env.outcome_file("o-rejected").unwrap();
    assert_eq!(rejected["receipt"]["shown"], Value::Null);
    assert_eq!(rejected["receipt"]["approvers"], json!([]));
    let aborted = env.outcome_file("o-aborted").unwrap();
    assert_eq!(aborted["receipt"]["approvers"], json!([]));

    // An outcome file whose answer was edited (and re-rendered canonically): a mismatch.
    let path = env.root().join("outbox").join("o-answered.json");
    let mut edited = env.outcome_file("o-answered").unwrap();
    edited["answer"]["answers"][0]["selected"] = json!(["Postgres"]);
    let mut text = serde_json::to_string_pretty(&edited).unwrap();
    text.push('\n');
    let f = save(&env, "edited.json", text.as_bytes());
    let run = verify_offline(&f, &key, &[]);
    assert_eq!(
        (run.code, run.error_code().as_str()),
        (17, "RECEIPT_MISMATCH"),
        "{run:?}"
    );
    // The untouched file still verifies.
    verify_offline(&path, &key, &[]).ok();
}

#[test]
fn an_open_request_has_no_receipt_yet() {
    let env = Env::new();
    env.ask(&simple_request("open-1")).ok();
    let run = env.json(&["receipt", "open-1"]);
    assert_eq!(
        (run.code, run.error_code().as_str()),
        (16, "REQUEST_OPEN"),
        "{run:?}"
    );
    let tok = env.register("alice", "default", "5m");
    env.run_env(&[("DSHQ_LEASE", &tok)], &["claim", "open-1"])
        .ok();
    let run = env.json(&["receipt", "open-1"]);
    assert_eq!(run.error_code(), "REQUEST_OPEN", "{run:?}");
    assert!(run.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("claimed"));
    let run = env.json(&["receipt", "nobody"]);
    assert_eq!(
        (run.code, run.error_code().as_str()),
        (4, "NOT_FOUND"),
        "{run:?}"
    );
    // No receipt for it in the export either.
    assert_eq!(env.run(&["export", "--receipts"]).ok().stdout, "");
}

#[test]
fn export_receipts_writes_one_per_final_request() {
    let env = Env::new();
    answered(&env, "e-1");
    answered(&env, "e-2");
    env.ask(&simple_request("e-3")).ok();
    env.json(&["cancel", "e-3"]).ok();
    env.ask(&simple_request("e-4")).ok();
    env.json(&["abort", "e-4"]).ok();
    let _ = env.ask(&json!({"id": "e-5", "questions": []}));
    env.ask(&simple_request("e-open")).ok();
    let key = public_key(&env);

    let out = env.run(&["export", "--receipts"]).ok().stdout;
    let ids: Vec<String> = out
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids, ["e-1", "e-2", "e-3", "e-4", "e-5"]);
    let f = save(&env, "receipts.ndjson", out.as_bytes());
    let run = verify_offline(&f, &key, &[]).ok().json();
    assert_eq!(run["holder"], "lines");
    assert_eq!(run["receipts"].as_array().unwrap().len(), 5);
    // Each line is the receipt `dshq receipt ID` prints, in its compact form.
    for line in out.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let printed: Value =
            serde_json::from_str(&env.run(&["receipt", v["id"].as_str().unwrap()]).ok().stdout)
                .unwrap();
        assert_eq!(v, printed);
    }
    // A changed line fails the whole file.
    let changed = out.replacen("\"e-2\"", "\"e-9\"", 1);
    let f = save(&env, "changed.ndjson", changed.as_bytes());
    assert_eq!(
        verify_offline(&f, &key, &[]).error_code(),
        "RECEIPT_INVALID"
    );
    // `--json`: one array of the same receipts.
    let arr = env.json(&["export", "--receipts"]).ok().json();
    assert_eq!(arr.as_array().unwrap().len(), 5);
}

#[test]
fn a_row_changed_in_the_database_is_not_signed() {
    let env = Env::new();
    answered(&env, "t-1");
    let key = public_key(&env);
    let before = save(
        &env,
        "before.json",
        env.run(&["receipt", "t-1"]).ok().stdout.as_bytes(),
    );
    {
        // Someone with write access to the database, the record's triggers dropped.
        let db = rusqlite::Connection::open(env.root().join("dshq.db")).unwrap();
        db.execute_batch(
            "DROP TRIGGER IF EXISTS requests_record_fixed; DROP TRIGGER IF EXISTS requests_final_fixed;",
        )
        .unwrap();
        let n = db
            .execute(
                "UPDATE requests SET answer = ?1 WHERE id = 't-1'",
                [r#"{"answers":[{"id":"db","selected":["Postgres"]}]}"#],
            )
            .unwrap();
        assert_eq!(n, 1);
    }
    let run = env.json(&["receipt", "t-1"]);
    assert_eq!(
        (run.code, run.error_code().as_str()),
        (10, "AUDIT_BROKEN"),
        "{run:?}"
    );
    assert!(
        run.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("answer"),
        "{run:?}"
    );
    // The receipt signed before the change still verifies: it is the host's word of then.
    verify_offline(&before, &key, &[]).ok();
    // The key file sits beside audit.key, mode 0600.
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(env.root().join("receipt.key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// Many hosts, one PostgreSQL store: each host signs with its own root's key, the same
/// receipt content; a verifier trusts the hosts whose keys it was given.
#[test]
fn hosts_of_one_postgres_store_sign_with_their_own_keys() {
    let url = crate::throwaway::shared()
        .fresh_database()
        .expect("a fresh PostgreSQL database");
    let a = Env::on_store(&url);
    let b = Env::on_store(&url);
    a.ask(&simple_request("pg-1")).ok();
    // B joins: its layout (a write), and the chain's key copied from A.
    b.json(&["token", "create", "--role", "auditor", "--name", "b"])
        .ok();
    fs::copy(a.root().join("audit.key"), b.root().join("audit.key")).unwrap();
    b.json(&["answer", "pg-1", "--select", "SQLite"]).ok();

    let (ka, kb) = (public_key(&a), public_key(&b));
    assert_ne!(ka, kb, "each root makes its own receipt key");
    let ra = save(
        &a,
        "a.json",
        a.run(&["receipt", "pg-1"]).ok().stdout.as_bytes(),
    );
    let rb = save(
        &b,
        "b.json",
        b.run(&["receipt", "pg-1"]).ok().stdout.as_bytes(),
    );
    verify_offline(&ra, &ka, &["--id", "pg-1"]).ok();
    verify_offline(&rb, &kb, &["--id", "pg-1"]).ok();
    assert_eq!(
        verify_offline(&ra, &kb, &[]).error_code(),
        "RECEIPT_UNTRUSTED_KEY"
    );
    verify_offline(&ra, &kb, &["--key", &ka]).ok();
    // The same receipt but for who signed it.
    let strip = |p: &Path| {
        let mut v: Value = serde_json::from_slice(&fs::read(p).unwrap()).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("signer");
        o.remove("signature");
        v
    };
    assert_eq!(strip(&ra), strip(&rb));
    let r = strip(&ra);
    assert_eq!(r["approvers"], json!(["provider:tester"]));
    assert_eq!(r["status"], "answered");
}

/// Past its deadline with no daemon to sweep it, a request is over for every reader:
/// `show` (a view at now) says aborted, and `receipt` agrees, sweeping the end into the
/// log for real before it signs it (it used to say REQUEST_OPEN). Ten minutes later is the
/// clock's skew, not a wait.
#[test]
fn show_and_receipt_agree_on_a_request_past_its_deadline_before_any_sweep() {
    let env = Env::new();
    let mut req = simple_request("late");
    req["timeout"] = json!("5m");
    env.ask(&req).ok();
    let later = [("DSHQ_CLOCK_SKEW", "+10m")];
    let shown = env.run_env(&later, &["--json", "show", "late"]).ok().json();
    assert_eq!(shown["status"], "aborted", "{shown}");
    // Nothing was written by the read: the store still holds it open.
    assert_eq!(env.json(&["show", "late"]).ok().json()["status"], "pending");
    let receipt = env
        .run_env(&later, &["--json", "receipt", "late"])
        .ok()
        .json();
    assert_eq!(receipt["status"], "aborted", "{receipt}");
    assert_eq!(receipt["outcome"]["error"]["code"], "ASK_ABORTED");
    assert_eq!(receipt["chain"]["kind"], "aborted");
    let file = save(
        &env,
        "late.json",
        &env.run_env(&later, &["receipt", "late"])
            .ok()
            .stdout
            .into_bytes(),
    );
    verify_offline(&file, &public_key(&env), &["--id", "late"]).ok();
    env.run(&["audit", "verify"]).ok();
}
