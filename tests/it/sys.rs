//! `unsafe` lives in one module, `src/sys.rs`: every other system call goes through
//! rustix's safe wrappers. The crate denies `unsafe_code` and only `sys` allows it for
//! itself; this test reads the source, so an `unsafe` block, function or impl anywhere
//! else, or an `allow(unsafe_code)` that would lift the lint, fails CI with its place.

use super::source::rust_files;
use std::path::PathBuf;

/// The places in `text` (comments left out) that use `unsafe` as the language does, or
/// lift the lint against it: `(line number, line)`.
fn unsafe_uses(text: &str) -> Vec<(usize, String)> {
    let keyword = regex::Regex::new(r"\bunsafe\s*(\{|fn\b|impl\b|trait\b|extern\b)").unwrap();
    let lifted = regex::Regex::new(r"allow\s*\([^)]*\bunsafe_code\b").unwrap();
    text.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let code = line.split("//").next().unwrap_or("");
            (keyword.is_match(code) || lifted.is_match(code)).then(|| (i + 1, line.to_string()))
        })
        .collect()
}

#[test]
fn unsafe_code_is_only_in_the_sys_module() {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let sys = src.join("sys.rs");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "found {} files under src", files.len());
    let mut offenders = Vec::new();
    for f in files.iter().filter(|f| **f != sys) {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, line) in unsafe_uses(&text) {
            let rel = f.strip_prefix(&src).unwrap().display();
            offenders.push(format!("src/{rel}:{n}: {}", line.trim()));
        }
    }
    assert!(
        offenders.is_empty(),
        "unsafe outside src/sys.rs (put the call in sys, with its safety comment, or use rustix): {offenders:#?}"
    );
    // The module itself is found by the same reading: the check can see what it guards.
    let sys_text = std::fs::read_to_string(&sys).unwrap();
    assert!(unsafe_uses(&sys_text).len() >= 3, "src/sys.rs: {sys_text}");
    // And the crate denies it: only the lint's own allowance in sys lifts it.
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    assert!(
        lib.contains("#![deny(unsafe_code)]"),
        "src/lib.rs denies unsafe_code"
    );
}
