//! `is_complete` for Rust cells: a delimiter scanner that understands strings, chars,
//! lifetimes and comments decides "incomplete"; syn decides "invalid".

use crate::interp::IsComplete;

pub fn is_complete(code: &str) -> IsComplete {
    let trimmed = code.trim_start();
    // Magics and evcxr commands are one line each and always complete.
    if trimmed.is_empty()
        || trimmed.starts_with([':', '!', '%', '?'])
        || trimmed.trim_end().ends_with('?') && is_help_query(trimmed)
    {
        return IsComplete::Complete;
    }
    match scan(code) {
        Scan::Open(depth) => IsComplete::Incomplete {
            indent: "    ".repeat(depth.max(1)),
        },
        Scan::Mismatch => IsComplete::Invalid,
        Scan::Balanced => {
            if syn::parse_str::<syn::Block>(&format!("{{\n{code}\n}}")).is_ok() {
                IsComplete::Complete
            } else if ends_with_continuation(code) {
                IsComplete::Incomplete {
                    indent: "    ".into(),
                }
            } else {
                IsComplete::Invalid
            }
        }
    }
}

/// `name?` asks for documentation, like IPython.
fn is_help_query(code: &str) -> bool {
    let name = code.trim().trim_end_matches('?');
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
}

/// A line ending in a binary operator, `=` or `,` is waiting for more, as in Python's `x = 1 +\`.
fn ends_with_continuation(code: &str) -> bool {
    let t = code.trim_end();
    ["=", "+", "-", "*", "/", "&&", "||", ",", ".", "->", "=>"]
        .iter()
        .any(|op| t.ends_with(op))
        && !t.ends_with("..")
}

#[derive(Debug, PartialEq)]
enum Scan {
    Balanced,
    Open(usize),
    Mismatch,
}

fn scan(code: &str) -> Scan {
    let b = code.as_bytes();
    let mut stack: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // Block comments nest in Rust.
                let mut depth = 1;
                i += 2;
                while i < b.len() && depth > 0 {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 1;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 1;
                    }
                    i += 1;
                }
                if depth > 0 {
                    return Scan::Open(stack.len() + 1);
                }
                continue;
            }
            b'"' => match skip_string(b, i + 1) {
                Some(end) => i = end,
                None => return Scan::Open(stack.len() + 1),
            },
            b'r' | b'b' if is_raw_string_start(b, i) => match skip_raw_string(b, i) {
                Some(end) => i = end,
                None => return Scan::Open(stack.len() + 1),
            },
            b'\'' => i = skip_char_or_lifetime(b, i),
            b'(' | b'[' | b'{' => stack.push(c),
            b')' | b']' | b'}' => {
                let want = match c {
                    b')' => b'(',
                    b']' => b'[',
                    _ => b'{',
                };
                if stack.pop() != Some(want) {
                    return Scan::Mismatch;
                }
            }
            _ => {}
        }
        i += 1;
    }
    if stack.is_empty() {
        Scan::Balanced
    } else {
        Scan::Open(stack.len())
    }
}

/// Returns the index of the closing quote of a string whose body starts at `i`.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn is_raw_string_start(b: &[u8], i: usize) -> bool {
    // Part of an identifier (e.g. `bar"`)? Then it is not a prefix.
    if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
        return false;
    }
    let mut j = i;
    if b[j] == b'b' {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return false;
    }
    j += 1;
    while b.get(j) == Some(&b'#') {
        j += 1;
    }
    b.get(j) == Some(&b'"')
}

fn skip_raw_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b[j] == b'b' {
        j += 1;
    }
    j += 1; // r
    let mut hashes = 0;
    while b[j] == b'#' {
        hashes += 1;
        j += 1;
    }
    j += 1; // opening quote
    while j < b.len() {
        if b[j] == b'"'
            && b[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == b'#')
                .count()
                == hashes
            && b.len() >= j + 1 + hashes
        {
            return Some(j + hashes);
        }
        j += 1;
    }
    None
}

/// `'a'`, `'\n'` and `'\u{1F600}'` are chars; `'a` in `&'a str` is a lifetime.
fn skip_char_or_lifetime(b: &[u8], i: usize) -> usize {
    if b.get(i + 1) == Some(&b'\\') {
        let mut j = i + 2;
        while j < b.len() && b[j] != b'\'' && b[j] != b'\n' {
            j += 1;
        }
        return j;
    }
    // One (possibly multi-byte) character then a quote: a char literal.
    if let Some(rest) = std::str::from_utf8(&b[i + 1..])
        .ok()
        .or_else(|| std::str::from_utf8(&b[i + 1..(i + 5).min(b.len())]).ok())
    {
        let mut chars = rest.char_indices();
        if let Some((_, ch)) = chars.next() {
            if let Some((k, '\'')) = chars.next() {
                let _ = ch;
                return i + 1 + k;
            }
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: &str) -> &'static str {
        match is_complete(code) {
            IsComplete::Complete => "complete",
            IsComplete::Incomplete { .. } => "incomplete",
            IsComplete::Invalid => "invalid",
            IsComplete::Unknown => "unknown",
        }
    }

    #[test]
    fn classifies_cells() {
        assert_eq!(status("let x = 1;"), "complete");
        assert_eq!(status("fn f() -> i32 { 1 }\nf()"), "complete");
        assert_eq!(status("fn f() {"), "incomplete");
        assert_eq!(status("let v = vec![1,\n2,"), "incomplete");
        assert_eq!(status("let s = \"abc"), "incomplete");
        assert_eq!(status("/* open comment"), "incomplete");
        assert_eq!(status("let x = 1 +"), "incomplete");
        assert_eq!(status("fn f() { ) }"), "invalid");
        assert_eq!(status("let = ;"), "invalid");
        assert_eq!(status("let c = '{'; let d = \"}\";"), "complete");
        assert_eq!(status("fn f<'a>(x: &'a str) -> &'a str { x }"), "complete");
        assert_eq!(status("let r = r#\"a \" { \"#;"), "complete");
        assert_eq!(status(":dep rand"), "complete");
        assert_eq!(status("!nvidia-smi"), "complete");
        assert_eq!(status("Tensor?"), "complete");
    }

    #[test]
    fn indent_follows_depth() {
        match is_complete("fn f() {\n    if true {") {
            IsComplete::Incomplete { indent } => assert_eq!(indent, "        "),
            _ => panic!("expected incomplete"),
        }
    }
}
