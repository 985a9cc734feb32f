//! The inbox forgives the common mistake and judges what it cannot read: a
//! file written straight into `inbox/new/` (a `cp`, a slow writer) is judged
//! only once it stood still for the grace, so a whole file is accepted; one that stays cut
//! short is rejected with a reason that says to write in `tmp/` and rename; a file the
//! daemon may not read is rejected once, with a reason that says what to change.

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::helpers::*;

/// A valid request of about `size` bytes (a long detail), as text.
fn large_request(id: &str, size: usize) -> String {
    let line = "Step: move the table, check the counts, switch the reads over.\n";
    let detail = line.repeat(size / line.len() + 1);
    serde_json::to_string_pretty(&json!({
        "id": id,
        "questions": [{"id": "plan", "question": "Approve the migration plan?",
                       "detail": detail,
                       "options": [{"label": "Revise"}, {"label": "Ship it"}],
                       "intent": {"kind": "plan-review", "approve": "Ship it"}}]
    }))
    .unwrap()
}

fn status(env: &Env, id: &str) -> Option<String> {
    let r = env.json(&["show", id]);
    (r.code == 0).then(|| r.json()["status"].as_str().unwrap_or_default().to_string())
}

fn reason(env: &Env, stem: &str) -> Option<Value> {
    let p = env
        .root()
        .join("rejected")
        .join(format!("{stem}.error.json"));
    serde_json::from_str(&fs::read_to_string(p).ok()?).ok()
}

#[test]
fn a_large_file_copied_straight_into_new_is_accepted_every_time() {
    let env = Env::new();
    let d = env.daemon();
    let src = env.dir.path().join("src");
    fs::create_dir_all(&src).unwrap();
    let new = env.root().join("inbox/new");
    let ids: Vec<String> = (0..12).map(|i| format!("copied-{i}")).collect();
    for id in &ids {
        let file = src.join(format!("{id}.json"));
        fs::write(&file, large_request(id, 900_000)).unwrap();
        // The real `cp`, straight into new/: the file is created empty, then filled.
        let st = Command::new("cp")
            .arg(&file)
            .arg(&new)
            .status()
            .expect("run cp");
        assert!(st.success());
    }
    // The same `cp` from a source that arrives slowly (a pipe: `ssh host cat x | cp
    // /dev/stdin inbox/new/x.json`): the daemon sees the file empty and half copied.
    let mut all = ids.clone();
    for i in 0..3 {
        let id = format!("piped-{i}");
        let text = large_request(&id, 200_000);
        let mut cp = Command::new("cp")
            .arg("/dev/stdin")
            .arg(new.join(format!("{id}.json")))
            .stdin(Stdio::piped())
            .spawn()
            .expect("run cp");
        let mut pipe = cp.stdin.take().unwrap();
        for piece in text.as_bytes().chunks(text.len() / 4 + 1) {
            pipe.write_all(piece).unwrap();
            pipe.flush().unwrap();
            // The source's pace (well within the grace).
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        drop(pipe);
        assert!(cp.wait().unwrap().success());
        all.push(id);
    }
    for id in &all {
        assert!(
            wait_until(DEADLINE, || status(&env, id).as_deref() == Some("pending")),
            "{id} was not accepted: {:?}\nrejected/: {:?}\n{}",
            status(&env, id),
            env.names("rejected"),
            d.log_text()
        );
    }
    assert!(
        env.names("rejected").is_empty(),
        "{:?}",
        env.names("rejected")
    );
    assert!(!d.log_text().contains("input rejected"), "{}", d.log_text());
}

#[test]
fn a_file_written_slowly_into_new_is_accepted() {
    let env = Env::new();
    let d = env.daemon();
    let text = large_request("slow-1", 20_000);
    let path = env.root().join("inbox/new/slow-1.json");
    let mut f = fs::File::create(&path).unwrap();
    // A writer that takes its time between writes (well within the grace each): the daemon
    // reads the file empty and half written in between, and must not judge it then.
    let pieces = text.as_bytes().chunks(text.len() / 4 + 1);
    for piece in pieces {
        f.write_all(piece).unwrap();
        f.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    drop(f);
    assert!(
        wait_until(DEADLINE, || status(&env, "slow-1").as_deref()
            == Some("pending")),
        "not accepted: {:?} {:?}\n{}",
        status(&env, "slow-1"),
        env.names("rejected"),
        d.log_text()
    );
    assert!(env.names("rejected").is_empty());
}

/// What a `cp` straight into `new/` leaves when the daemon reads it mid-copy: a file that
/// is a truncated JSON for a while, then complete. Without the grace the daemon judges the
/// first part and rejects the request (checked by setting the grace to zero: this test
/// then fails with the first part's "the file ends before its JSON does").
#[test]
fn a_file_cut_short_in_new_then_completed_is_accepted_and_never_rejected() {
    let env = Env::new();
    let d = env.daemon();
    let text = large_request("two-part-1", 20_000);
    let (head, tail) = text.as_bytes().split_at(text.len() / 2);
    let path = env.root().join("inbox/new/two-part-1.json");
    let mut f = fs::File::create(&path).unwrap();
    f.write_all(head).unwrap();
    f.flush().unwrap();
    // The pause of a copy read mid-way: the daemon sees the truncated first part (its
    // event, and the rescan that follows) and must leave it alone. Well within the grace.
    let paused = std::time::Instant::now();
    std::thread::sleep(std::time::Duration::from_millis(800));
    f.write_all(tail).unwrap();
    f.flush().unwrap();
    drop(f);
    let pause = paused.elapsed();
    assert!(
        wait_until(DEADLINE, || status(&env, "two-part-1").as_deref()
            == Some("pending")),
        "not accepted: {:?} {:?}\n{}",
        status(&env, "two-part-1"),
        env.names("rejected"),
        d.log_text()
    );
    // A machine that stalled the writer for the whole grace could have the daemon judge
    // the first part rightly; only then may the test not hold the daemon to it.
    if pause < dshq::files::grace::GRACE.max(std::time::Duration::from_secs(2)) {
        assert!(
            env.names("rejected").is_empty(),
            "{:?}",
            env.names("rejected")
        );
        assert!(!d.log_text().contains("input rejected"), "{}", d.log_text());
    }
}

#[test]
fn a_truncated_file_is_rejected_after_the_grace_saying_to_write_in_tmp_and_rename() {
    let env = Env::new();
    let d = env.daemon();
    let whole = large_request("cut-1", 4_000);
    // A writer that died halfway, straight into new/; and an empty file.
    fs::write(
        env.root().join("inbox/new/cut-1.json"),
        &whole.as_bytes()[..whole.len() / 2],
    )
    .unwrap();
    fs::write(env.root().join("inbox/new/empty-1.json"), b"").unwrap();
    // A finished file with a mistake is judged at once, without the grace: by the time it
    // is rejected, the two unfinished ones are still waiting (unless this machine stalled
    // for the whole grace, which the test allows).
    let started = std::time::Instant::now();
    env.drop_file("typo-1.json", br#"{"id": "typo-1", "questions": []}"#);
    assert!(wait_until(DEADLINE, || reason(&env, "typo-1").is_some()));
    if started.elapsed() < std::time::Duration::from_millis(1500) {
        assert!(reason(&env, "cut-1").is_none(), "judged before the grace");
        assert!(env.root().join("inbox/new/cut-1.json").exists());
    }
    for (stem, what) in [
        ("cut-1", "the file ends before its JSON does"),
        ("empty-1", "the file is empty"),
    ] {
        assert!(
            wait_until(DEADLINE, || reason(&env, stem).is_some()
                && env.root().join(format!("rejected/{stem}.json")).exists()),
            "{stem} never rejected: {:?}\n{}",
            env.names("inbox/new"),
            d.log_text()
        );
        let r = reason(&env, stem).unwrap();
        assert_eq!(r["code"], "BAD_REQUEST", "{r}");
        let msg = r["message"].as_str().unwrap();
        assert!(msg.contains(what), "{msg}");
        assert!(
            msg.contains("write the file in inbox/tmp/ and rename it into inbox/new/"),
            "{msg}"
        );
        // The asker waiting on the id learns it too.
        let out = env.wait_outcome(stem);
        assert_eq!(out["error"]["code"], "BAD_REQUEST", "{out}");
    }
    let typo = reason(&env, "typo-1").unwrap();
    assert!(
        !typo["message"].as_str().unwrap().contains("inbox/tmp/"),
        "a finished file gets no hint about writing: {typo}"
    );
}

/// Whether this process has the capability that reads any file (root's CAP_DAC_OVERRIDE).
fn is_root() -> bool {
    // SAFETY: geteuid(2) has no failure mode.
    unsafe { libc::geteuid() == 0 }
}

/// Start the daemon of `env` unable to read a file its mode denies it: as root, without
/// the capabilities that override file modes (`setpriv`, util-linux); as anyone else, as
/// it is.
fn daemon_bound_by_modes(env: &Env) -> Daemon {
    let base = env.command();
    let mut c = if is_root() {
        let mut c = Command::new("setpriv");
        c.arg("--bounding-set=-dac_override,-dac_read_search")
            .arg("--inh-caps=-dac_override,-dac_read_search")
            .arg("--")
            .arg(bin());
        c
    } else {
        Command::new(bin())
    };
    for (k, v) in base.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let log = env.dir.path().join("daemon-modes.log");
    let child = c
        .arg("daemon")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .expect("spawn the daemon (setpriv is util-linux's)");
    Daemon::started(child, log)
}

#[test]
fn an_unreadable_inbox_file_is_rejected_once_with_what_to_fix() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let d = daemon_bound_by_modes(&env);
    // A valid request, unreadable (mode 000, owned by the daemon's user): were the daemon
    // able to read it, it would be accepted.
    let tmp = env.root().join("inbox/tmp/locked-1.json");
    fs::write(
        &tmp,
        serde_json::to_vec(&simple_request("locked-1")).unwrap(),
    )
    .unwrap();
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o000)).unwrap();
    fs::rename(&tmp, env.root().join("inbox/new/locked-1.json")).unwrap();
    assert!(
        wait_until(DEADLINE, || reason(&env, "locked-1").is_some()
            && env.root().join("rejected/locked-1.json").exists()),
        "never judged: {:?}\n{}",
        env.names("inbox/new"),
        d.log_text()
    );
    let r = reason(&env, "locked-1").unwrap();
    assert_eq!(r["code"], "BAD_REQUEST", "{r}");
    let msg = r["message"].as_str().unwrap();
    assert!(msg.contains("cannot read the file (mode 0000)"), "{msg}");
    assert!(msg.contains("chmod 0600"), "{msg}");
    assert!(env.root().join("rejected/locked-1.json").exists());
    assert!(!env.root().join("inbox/new/locked-1.json").exists());
    let out = env.wait_outcome("locked-1");
    assert_eq!(out["error"]["code"], "BAD_REQUEST", "{out}");
    // A readable file behind it goes through, and the rejection was logged once.
    env.drop_file(
        "after-1.json",
        &serde_json::to_vec(&simple_request("after-1")).unwrap(),
    );
    assert!(wait_until(DEADLINE, || status(&env, "after-1").as_deref()
        == Some("pending")));
    let log = d.log_text();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("locked-1")).collect();
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("input rejected"))
            .count(),
        1,
        "{log}"
    );
    assert!(
        !log.contains("cannot read inbox file"),
        "no warning while it settled: {log}"
    );
}
