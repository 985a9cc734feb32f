//! The layers hold (issues 12 and 16): each database stays behind the storage seam, in its
//! own backend (SQL only in `store/sqlite/` and `store/postgres/`, each client crate only in
//! its backend), and no module imports a module that imports it back. Checked on the source tree, so a change that breaks the
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
fn each_database_and_its_sql_live_only_in_its_backend() {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() > 50, "found {} files under src", files.len());
    let sqlite = root.join("store").join("sqlite");
    let postgres = root.join("store").join("postgres");
    let sql = [
        "SELECT ",
        "INSERT INTO",
        "DELETE FROM",
        "CREATE TABLE",
        "PRAGMA ",
    ];
    let mut offenders = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        // error.rs maps each client's errors to the stable STORE code.
        if text.contains("rusqlite") && !f.starts_with(&sqlite) && rel != "error.rs" {
            offenders.push(format!("{rel}: names rusqlite"));
        }
        // The crate, not this project's `store::postgres` module.
        let own = text.replace("store::postgres::", "");
        let names_postgres_crate = own.contains("postgres::") || own.contains("tokio_postgres");
        if names_postgres_crate && !f.starts_with(&postgres) && rel != "error.rs" {
            offenders.push(format!("{rel}: names the postgres client"));
        }
        if f.starts_with(&sqlite) || f.starts_with(&postgres) {
            continue;
        }
        for s in sql {
            // Statements are upper case in this code base; prose is not.
            if text.contains(&format!("\"{s}")) || text.contains(&format!("\n         {s}")) {
                offenders.push(format!("{rel}: SQL text {s:?}"));
            }
        }
    }
    assert!(offenders.is_empty(), "outside the backends: {offenders:#?}");
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

#[test]
fn the_network_faces_use_the_views_not_the_terminal_rendering() {
    // The API, the page, MCP, the hooks and the host serve JSON or HTML to other
    // programs: they share `views`, and terminal rendering (`output`) stays the CLI's.
    let root = src();
    let mut offenders = Vec::new();
    for dir in ["web", "mcp", "host", "app", "store", "files"] {
        let mut files = Vec::new();
        rust_files(&root.join(dir), &mut files);
        assert!(!files.is_empty(), "no files under src/{dir}");
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            if text.contains("crate::output::") {
                offenders.push(f.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    for f in ["hooks.rs", "daemon.rs", "views.rs"] {
        if std::fs::read_to_string(root.join(f))
            .unwrap()
            .contains("crate::output::")
        {
            offenders.push(f.to_string());
        }
    }
    assert!(
        offenders.is_empty(),
        "terminal rendering used by: {offenders:?}"
    );
}
