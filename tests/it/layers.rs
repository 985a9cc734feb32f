//! The layers hold: each database stays behind the storage seam, in its own backend (SQL
//! only in `store/sqlite/` and `store/postgres/`, each client crate only in its backend),
//! no module imports a module that imports it back, and every folder and file stays on
//! its floor (the floors are written once, in `docs/ARCHITECTURE.md`, and read from there
//! by [`every_folder_and_file_stays_on_its_floor`]). Checked on the source tree, so a
//! change that breaks the shape fails CI instead of waiting for a reader to notice.

use super::source::{rust_files, src};
use std::path::PathBuf;
use std::process::Command;

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
    for dir in [
        "web", "mcp", "channels", "host", "serve", "app", "store", "files",
    ] {
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

/// The floors of `docs/ARCHITECTURE.md` ("Floors"), top first: each a list of entries, a
/// folder (`web/`) or a file (`daemon.rs`, `files/atomic.rs`).
fn floors() -> Vec<Vec<String>> {
    let doc = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md"),
    )
    .expect("docs/ARCHITECTURE.md");
    let after = doc
        .split_once("\n## Floors\n")
        .expect("ARCHITECTURE.md has a \"## Floors\" section")
        .1;
    let block = after
        .split_once("```text\n")
        .and_then(|(_, b)| b.split_once("\n```"))
        .expect("the Floors section holds a ```text block")
        .0;
    block
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default())
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// A module path (`disk::atomic`, `crate` for the crate root) as a path under `src/`
/// without its `.rs` (`files/atomic`); the crate root's only import is its re-export of
/// `error`, so an import of it is one of `error`.
fn module_path(m: &str) -> String {
    if m == "crate" {
        return "error".into();
    }
    m.replace("::", "/")
}

/// The floor (its index, top first) and the entry that hold module path `p`: the longest
/// entry that names it (`files/atomic.rs` before `files/`).
fn floor_of<'a>(floors: &'a [Vec<String>], p: &str) -> Option<(usize, &'a str)> {
    let mut best: Option<(usize, &str)> = None;
    for (i, floor) in floors.iter().enumerate() {
        for e in floor {
            let names = match e.strip_suffix('/') {
                Some(dir) => p == dir || p.starts_with(&format!("{dir}/")),
                None => e.strip_suffix(".rs") == Some(p),
            };
            if names && best.is_none_or(|(_, b)| e.len() > b.len()) {
                best = Some((i, e));
            }
        }
    }
    best
}

/// Whether `from` may import `to`: within one entry (a folder's own files), or down to a
/// lower floor. Entries on one floor are siblings and import nothing of each other.
fn allowed(from: (usize, &str), to: (usize, &str)) -> bool {
    from.1 == to.1 || from.0 < to.0
}

#[test]
fn every_folder_and_file_stays_on_its_floor() {
    let floors = floors();
    assert!(floors.len() > 10, "{floors:?}");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("contrib/dev/import-cycles.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(src())
        .arg("--edges")
        .output()
        .expect("python3 lists the imports");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut unplaced = std::collections::BTreeSet::new();
    let mut up = Vec::new();
    let mut edges = 0;
    for line in text.lines() {
        let mut w = line.split_whitespace();
        let (Some("EDGE"), Some(a), Some(b)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        edges += 1;
        if a == "crate" {
            continue; // lib.rs: the module declarations and the re-export of `error`
        }
        let (pa, pb) = (module_path(a), module_path(b));
        let (Some(fa), Some(fb)) = (floor_of(&floors, &pa), floor_of(&floors, &pb)) else {
            for p in [&pa, &pb] {
                if floor_of(&floors, p).is_none() {
                    unplaced.insert(p.clone());
                }
            }
            continue;
        };
        if !allowed(fa, fb) {
            up.push(format!("{a} ({}) -> {b} ({})", fa.1, fb.1));
        }
    }
    assert!(edges > 500, "only {edges} imports read");
    assert!(
        unplaced.is_empty(),
        "modules on no floor of docs/ARCHITECTURE.md: {unplaced:?}"
    );
    assert!(
        up.is_empty(),
        "imports that run up a floor or sideways between siblings:\n{}",
        up.join("\n")
    );
}

#[test]
fn the_floor_rule_refuses_an_import_up_or_sideways() {
    // The rule itself, on a small table: a probe that the check can fail.
    let floors: Vec<Vec<String>> = vec![
        vec!["web/".into(), "mcp/".into()],
        vec!["host/".into()],
        vec!["files/".into()],
        vec!["files/atomic.rs".into()],
    ];
    let at = |p: &str| floor_of(&floors, p).unwrap();
    assert!(allowed(at("web/api/requests"), at("host/db")));
    assert!(allowed(at("web/api"), at("web/page/layout")));
    assert!(!allowed(at("host/db"), at("web/page")), "up");
    assert!(!allowed(at("mcp/http"), at("web/page")), "sideways");
    assert_eq!(at("files/atomic").1, "files/atomic.rs");
    assert!(allowed(at("files/inbox"), at("files/atomic")));
    assert!(
        !allowed(at("files/atomic"), at("files/inbox")),
        "up within a folder's floors"
    );
    assert_eq!(floor_of(&floors, "filesystem"), None);
}
