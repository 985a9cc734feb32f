//! Reading this crate's own source as text, for the tests that hold its shape (the floors,
//! `unsafe` in one module, the map's names, the functions' lengths): the files under `src/`,
//! the code with its comments and literals blanked out, and where a brace block closes.
//! A lexer of the little Rust those checks need, not a parser: blanking keeps every byte's
//! offset and every line break, so a place in the blanked code is the same place in the file.

use std::path::{Path, PathBuf};

/// The crate's `src/`.
pub fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file below `dir`, in no particular order.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `text` with its comments and the insides of its string, byte-string, raw-string and char
/// literals turned to spaces (line breaks kept), so that braces, `fn` and names found in
/// the result are code. Lifetimes (`'a`) stay as they are.
pub fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |i: usize| i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (0, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if let Some(open) = raw_string_open(rest).filter(|_| !ident(i)) {
            // r"...", r#"..."#, br"...": closed by the quote and as many hashes.
            let hashes = open - rest[..open].iter().position(|&c| c == b'"').unwrap() - 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let end = b[i + open..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |n| i + open + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('x', '\n', '\u{..}', '{'); otherwise a lifetime.
            let len = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&c| c == b'\'').map(|n| n + 3)
            } else {
                let ch = text[i + 1..].chars().next().map_or(0, char::len_utf8);
                (rest.get(1 + ch) == Some(&b'\'')).then_some(ch + 2)
            };
            match len {
                Some(n) => {
                    blank(&mut out, i, i + n);
                    i += n;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced, by spaces")
}

/// The length of a raw string's opening (`r"`, `r##"`, `br#"`) at the start of `rest`.
fn raw_string_open(rest: &[u8]) -> Option<usize> {
    let after_b = usize::from(rest.first() == Some(&b'b'));
    if rest.get(after_b) != Some(&b'r') {
        return None;
    }
    let hashes = rest[after_b + 1..]
        .iter()
        .take_while(|&&c| c == b'#')
        .count();
    (rest.get(after_b + 1 + hashes) == Some(&b'"')).then_some(after_b + 2 + hashes)
}

/// The offset of the brace that closes the one at `open` in blanked `code`.
pub fn closing(code: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (j, c) in code.bytes().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
    }
    code.len()
}

/// The 1-based line of byte offset `at`.
pub fn line_of(code: &str, at: usize) -> usize {
    code[..at].bytes().filter(|&c| c == b'\n').count() + 1
}

#[test]
fn blanking_keeps_code_and_drops_comments_and_literals() {
    let text = "fn a() { let s = \"}{\"; let r = r#\"fn x() {\"#; // fn y() {\n let c = '{'; let l: &'a str = x; /* } */ }";
    let code = code_only(text);
    assert_eq!(code.len(), text.len());
    assert_eq!(code.matches('{').count(), 1, "{code}");
    assert_eq!(code.matches('}').count(), 1, "{code}");
    assert_eq!(code.matches("fn ").count(), 1, "{code}");
    assert!(code.contains("&'a str"), "a lifetime is code: {code}");
    assert_eq!(closing(&code, code.find('{').unwrap()), code.len() - 1);
    assert_eq!(line_of(&code, code.len() - 1), 2);
}
