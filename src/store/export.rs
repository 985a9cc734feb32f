//! What export shares across backends: the documents' field names. Each backend dumps
//! its own tables (its SQL, its value types); the column names become the same
//! camelCase field names on both, so an export reads the same line for line.

/// `created_ms` → `createdMs`: every document dshq prints is camelCase.
pub fn camel(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut up = false;
    for c in s.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_become_camel_case() {
        assert_eq!(super::camel("created_ms"), "createdMs");
        assert_eq!(super::camel("request_seq"), "requestSeq");
        assert_eq!(super::camel("seq"), "seq");
    }
}
