//! The layers hold (issue 12): SQLite stays behind the storage seam, and no module imports
//! a module that imports it back. Checked on the source tree, so a change that breaks the
//! shape fails CI instead of waiting for a reader to notice.

use std::path::{Path, PathBuf};
use std::process::Command;

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn rusqlite_and_sql_live_only_in_the_sqlite_backend() {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 50, "found {} files under src", files.len());
    let backend = root.join("store").join("sqlite");
    let sql = [
        "SELECT ",
        "INSERT INTO",
        "DELETE FROM",
        "CREATE TABLE",
        "PRAGMA ",
    ];
    let mut offenders = Vec::new();
    for f in &files {
        if f.starts_with(&backend) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        if text.contains("rusqlite") && rel != "error.rs" {
            offenders.push(format!("{rel}: names rusqlite"));
        }
        for s in sql {
            // Statements are upper case in this code base; prose is not.
            if text.contains(&format!("\"{s}")) || text.contains(&format!("\n         {s}")) {
                offenders.push(format!("{rel}: SQL text {s:?}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "outside src/store/sqlite/: {offenders:#?}"
    );
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contrib/dev/import-cycles.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(src())
        .output()
        .expect("python3 runs the cycle check");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "import cycles:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("cycles 0"), "{text}");
}
