//! docs/ARCHITECTURE.md stays true of the tree: every file or folder it names in backticks exists, written
//! from the repository's root or from the folder named just before it ("in `engine/src/`: `conclude.rs`").

use std::path::Path;

const EXTENSIONS: &[&str] = &[".rs", ".py", ".sh", ".toml", ".sql", ".ts", ".md", ".css"];

/// A code span that names a path: no spaces, a folder separator, only path characters; `file.rs::item`
/// names the file.
fn as_path(span: &str) -> Option<&str> {
    let path = span.split("::").next().unwrap_or(span);
    let chars_ok = path.chars().all(|c| c.is_ascii_alphanumeric() || "_./-".contains(c));
    let looks = path.contains('/') && !path.starts_with('/') && !path.contains("//") && !path.starts_with("..");
    (chars_ok && looks && (path.ends_with('/') || EXTENSIONS.iter().any(|e| path.ends_with(e)))).then_some(path)
}

#[test]
fn every_path_the_architecture_names_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let text = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let mut base: Option<String> = None;
    let (mut checked, mut missing) = (0, Vec::new());
    for (i, span) in text.split('`').enumerate() {
        // Odd pieces are code spans (the document has no fenced blocks with backticks inside).
        if i % 2 == 0 {
            // A new paragraph forgets the folder named before it.
            if span.contains("\n\n") {
                base = None;
            }
            continue;
        }
        let Some(path) = as_path(span) else { continue };
        checked += 1;
        let found = root.join(path).exists() || base.as_ref().is_some_and(|b| root.join(b).join(path).exists());
        if !found {
            missing.push(path.to_string());
        }
        if path.ends_with('/') && root.join(path).is_dir() {
            base = Some(path.to_string());
        }
    }
    assert!(checked > 50, "only {checked} paths read: is the document still there?");
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md names {} path(s) that do not exist: {missing:?}", missing.len());
}
