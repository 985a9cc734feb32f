//! Functions stay short enough to read: at most [`ALLOWED`] functions in `src/` run over
//! [`LINES`] lines (from the `fn` line to its closing brace; test modules aside). A long
//! function is one doing several jobs, each of which reads better as a function named for
//! it; the few left long are listed when the bound is passed, so the next one to grow is
//! split where it is written rather than found later.

use super::source::{closing, code_only, line_of, rust_files, src};

/// The length past which a function counts as long.
const LINES: usize = 100;
/// How many long functions `src/` may hold.
const ALLOWED: usize = 10;

/// Each function with a body in blanked `code` outside its `#[cfg(test)]` modules: its
/// name, first line and length in lines.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let test_mod = regex::Regex::new(r"#\[cfg\(test\)\]\s*(pub\s+)?mod\s+\w+\s*\{").unwrap();
    let tests: Vec<(usize, usize)> = test_mod
        .find_iter(code)
        .map(|m| (m.start(), closing(code, m.end() - 1)))
        .collect();
    let fn_name = regex::Regex::new(r"\bfn\s+(\w+)").unwrap();
    let mut out = Vec::new();
    for c in fn_name.captures_iter(code) {
        let at = c.get(0).unwrap().start();
        if tests.iter().any(|&(a, b)| (a..=b).contains(&at)) {
            continue;
        }
        // The body opens at the first `{` outside the signature's parentheses and
        // brackets; a `;` there first is a declaration without one.
        let mut depth = 0i32;
        let open = code[at..].char_indices().find_map(|(i, ch)| match ch {
            '(' | '[' => {
                depth += 1;
                None
            }
            ')' | ']' => {
                depth -= 1;
                None
            }
            '{' | ';' if depth == 0 => Some((at + i, ch)),
            _ => None,
        });
        if let Some((open, '{')) = open {
            let (first, last) = (line_of(code, at), line_of(code, closing(code, open)));
            out.push((c[1].to_string(), first, last - first + 1));
        }
    }
    out
}

#[test]
fn few_functions_run_over_a_hundred_lines() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    assert!(files.len() > 50, "found {} files under src", files.len());
    let mut long = Vec::new();
    for f in &files {
        let code = code_only(&std::fs::read_to_string(f).unwrap());
        for (name, line, len) in functions(&code) {
            if len > LINES {
                let rel = f.strip_prefix(src()).unwrap().display();
                long.push((len, format!("{len} lines: src/{rel}:{line} {name}")));
            }
        }
    }
    long.sort_by(|a, b| b.cmp(a));
    let list: Vec<&str> = long.iter().map(|(_, s)| s.as_str()).collect();
    assert!(
        long.len() <= ALLOWED,
        "{} functions run over {LINES} lines (at most {ALLOWED}): split the one you grew along \
         the jobs it does\n{}",
        long.len(),
        list.join("\n")
    );
}

#[test]
fn the_length_count_reads_bodies_not_signatures_or_tests() {
    // The scan itself, on a small text: a probe that the bound can be passed.
    let text = "fn short(a: [u8; 2]) -> u8 {\n    a[0]\n}\n\
                trait T {\n    fn declared(&self);\n}\n\
                fn long() {\n    let s = \"}\";\n    // }\n    {\n    }\n}\n\
                #[cfg(test)]\nmod tests {\n    fn in_a_test() {\n    }\n}\n";
    let found = functions(&code_only(text));
    assert_eq!(
        found,
        vec![("short".to_string(), 1, 3), ("long".to_string(), 7, 6)],
        "{found:?}"
    );
}
