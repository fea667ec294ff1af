//! Quoting what a caller sent inside an error message: at most a bounded prefix, so a 200 KB ref or path
//! is never echoed back whole (the HTTP edge also caps every message at [`MAX_MESSAGE`] characters).

/// The most characters of a caller's value an error quotes.
pub const MAX_QUOTED: usize = 80;

/// The most characters of one error message the API sends.
pub const MAX_MESSAGE: usize = 4096;

/// `text` cut to at most `max` characters, with "…" when cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A caller's value for an error message: Debug-quoted, at most [`MAX_QUOTED`] characters of it.
pub fn quoted(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        Some((at, _)) => format!("{:?}… ({} characters)", &text[..at], text.chars().count()),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_quoted_by_a_prefix() {
        assert_eq!(quoted("main"), "\"main\"");
        let long = "x".repeat(200_000);
        let q = quoted(&long);
        assert!(q.len() < 120 && q.ends_with("(200000 characters)"), "{q}");
        assert_eq!(clip("héllo", 2), "hé…");
        assert_eq!(clip("hé", 2), "hé");
    }
}
