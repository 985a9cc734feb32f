//! The map names the code as it is: every code path `docs/ARCHITECTURE.md` writes in
//! backticks (`app::feed::get`, `host::provider::Providers::act`, `daemon::drain_inbox`,
//! `Caller::require`) still names a module under `src/`, an item defined in one, or a
//! member of a type (a method, an associated const, a variant, a field). The walks of an
//! answer and of an inbox file are read by a newcomer beside the code, so a rename that
//! leaves the page behind fails here instead of misleading the next reader. The other
//! pages (DESIGN, the guide, the README) are held to the paths they write from one of the
//! crate's top modules (`store::queue::leases::resolve`): their short names (`Queue::answer`,
//! a test's `audit::...`, another crate's `axum::serve`) are read in context, not checked.

use super::source::{closing, code_only, rust_files, src};
use std::path::{Path, PathBuf};

/// The crate's source: each file under `src/` with its blanked code.
struct Crate {
    files: Vec<(PathBuf, String)>,
}

impl Crate {
    fn read() -> Crate {
        let mut paths = Vec::new();
        rust_files(&src(), &mut paths);
        let files = paths
            .into_iter()
            .map(|p| {
                let code = code_only(&std::fs::read_to_string(&p).unwrap());
                (p, code)
            })
            .collect();
        Crate { files }
    }

    fn code(&self, file: &Path) -> &str {
        &self.files.iter().find(|(p, _)| p == file).unwrap().1
    }

    /// Why `path` names nothing, or `None` when it names a module, an item or a member.
    fn unresolved(&self, path: &str) -> Option<String> {
        let segs: Vec<&str> = path.split("::").collect();
        let mut dir = src();
        let mut module: Option<PathBuf> = None;
        let mut rest = &segs[..];
        while let Some((seg, tail)) = rest.split_first() {
            let Some(file) = module_file(&dir, seg) else {
                break;
            };
            dir = dir.join(seg);
            module = Some(file);
            rest = tail;
        }
        let Some((item, members)) = rest.split_first() else {
            return None; // a module
        };
        let defined = match &module {
            Some(file) => defines(self.code(file), item),
            // `Caller::require`: a type the page has already placed, named on its own.
            None if item.starts_with(char::is_uppercase) => {
                self.files.iter().any(|(_, code)| defines(code, item))
            }
            None => return Some(format!("`{item}` is not a module under src/")),
        };
        if !defined {
            let place = module.map_or("src/".into(), |m| display(&m));
            return Some(format!("no item `{item}` in {place}"));
        }
        match members {
            [] => None,
            [member] if self.has_member(item, member) => None,
            [member] => Some(format!("`{item}` has no member `{member}`")),
            _ => Some("a path goes at most one member below an item".into()),
        }
    }

    /// Whether type or trait `ty` has `member` anywhere in the crate: a method, const or
    /// type in one of its `impl` blocks or its trait, a variant of it as an enum, a field
    /// of it as a struct.
    fn has_member(&self, ty: &str, member: &str) -> bool {
        let head = regex::Regex::new(&format!(
            r"\b(impl\b[^{{;]*\b{ty}\b[^{{;]*|trait\s+{ty}\b[^{{;]*|enum\s+{ty}\b[^{{;]*|struct\s+{ty}\b[^{{;]*)\{{"
        ))
        .unwrap();
        let in_impl = regex::Regex::new(&format!(r"\b(fn|const|type)\s+{member}\b")).unwrap();
        let in_body = regex::Regex::new(&format!(r"(^|[{{,(\s]){member}\s*[:({{,}}=]")).unwrap();
        self.files.iter().any(|(_, code)| {
            head.find_iter(code).any(|m| {
                let body = &code[m.end() - 1..=closing(code, m.end() - 1)];
                let kind = m.as_str().trim_start();
                in_impl.is_match(body)
                    || ((kind.starts_with("enum") || kind.starts_with("struct"))
                        && in_body.is_match(&body[1..]))
            })
        })
    }
}

/// The file of module `seg` in `dir` (`seg.rs` or `seg/mod.rs`), if there is one.
fn module_file(dir: &Path, seg: &str) -> Option<PathBuf> {
    [dir.join(format!("{seg}.rs")), dir.join(seg).join("mod.rs")]
        .into_iter()
        .find(|f| f.is_file())
}

/// Whether blanked `code` defines `item` (a fn, type, const, static, trait, macro or inline
/// module) or re-exports it (`pub use x::item`, `pub use x::{a, item}`).
fn defines(code: &str, item: &str) -> bool {
    let def = regex::Regex::new(&format!(
        r"\b(fn|struct|enum|trait|type|const|static|mod|union|macro_rules!)\s+{item}\b"
    ))
    .unwrap();
    let reexport =
        regex::Regex::new(&format!(r"\bpub(\([^)]*\))?\s+use\s[^;]*\b{item}\b[^;]*;")).unwrap();
    def.is_match(code) || reexport.is_match(code)
}

fn display(file: &Path) -> String {
    format!("src/{}", file.strip_prefix(src()).unwrap().display())
}

/// The code paths written in backticks in `doc`: the text of each span that holds `::`.
fn code_paths(doc: &str) -> Vec<String> {
    let span = regex::Regex::new(r"`([A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)+)`").unwrap();
    let mut paths: Vec<String> = span.captures_iter(doc).map(|c| c[1].to_string()).collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The pages a reader is sent to: the README, `docs/*.md` and the guide.
fn pages() -> Vec<PathBuf> {
    let top = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![top.join("README.md")];
    for dir in [top.join("docs"), top.join("docs/guide")] {
        let mut md: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md"))
            .collect();
        md.sort();
        pages.extend(md);
    }
    pages
}

/// The code paths of `page` that `keep` selects and that name nothing, each with why.
fn stale_paths(krate: &Crate, page: &Path, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let doc = std::fs::read_to_string(page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
    let name = page
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
        .display()
        .to_string();
    code_paths(&doc)
        .into_iter()
        .filter(|p| keep(p))
        .filter_map(|p| {
            krate
                .unresolved(&p)
                .map(|why| format!("{name}: `{p}`: {why}"))
        })
        .collect()
}

#[test]
fn every_code_path_on_the_architecture_page_names_the_code() {
    let krate = Crate::read();
    let page = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/ARCHITECTURE.md");
    let read = code_paths(&std::fs::read_to_string(&page).unwrap());
    assert!(
        read.len() > 30,
        "only {} code paths read: {read:?}",
        read.len()
    );
    let stale = stale_paths(&krate, &page, |_| true);
    assert!(
        stale.is_empty(),
        "the map names code that is not there (rename it on the page too):\n{}",
        stale.join("\n")
    );
}

#[test]
fn every_crate_path_in_the_docs_names_the_code() {
    // DESIGN, the guide and the README name the crate's own modules from the top
    // (`store::queue::leases::resolve`) as well as other crates' items and tests by
    // their short names; the paths from a module of `src/` are this crate's, and checked.
    let krate = Crate::read();
    let ours = |p: &str| module_file(&src(), p.split("::").next().unwrap_or_default()).is_some();
    let pages = pages();
    assert!(pages.len() > 10, "{pages:?}");
    let stale: Vec<String> = pages
        .iter()
        .flat_map(|page| stale_paths(&krate, page, ours))
        .collect();
    assert!(
        stale.is_empty(),
        "the docs name code that is not there:\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_map_check_refuses_a_name_that_is_not_there() {
    // The resolver itself, on names that exist and names that do not: a probe that the
    // page's check can fail.
    let krate = Crate::read();
    for there in [
        "store::queue",
        "daemon::drain_inbox",
        "host::provider::Providers::act",
        "host::db::Db",
        "core::audit::Actor::Agent",
    ] {
        assert_eq!(krate.unresolved(there), None, "{there}");
    }
    for gone in [
        "daemon::drain_the_inbox",
        "host::provider::Providers::acts",
        "store::ProviderAct",
        "nowhere::thing",
        "Provided::Voted",
    ] {
        assert!(krate.unresolved(gone).is_some(), "{gone} resolved");
    }
}
