//! The service seam holds for the newest service: PostgreSQL is named in no source file but its
//! own (its service, its locks, their clients) and its registration lines in the catalogues
//! (`mod` lines, `LOCKS`, `SERVICES`). A change that makes some other file match on it breaks
//! the seam, and this test.

use std::path::{Path, PathBuf};

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// A line that only registers an entry: `mod x;`, `pub mod x;`, `&x::Entry,`, `&super::x::SERVICE,`.
fn registers(line: &str) -> bool {
    let line = line.trim();
    let module = line
        .strip_prefix("pub mod ")
        .or_else(|| line.strip_prefix("mod "))
        .and_then(|rest| rest.strip_suffix(';'));
    let entry = line
        .strip_prefix('&')
        .map(|rest| rest.strip_prefix("super::").unwrap_or(rest))
        .and_then(|rest| rest.strip_suffix(','));
    let is_path = |s: &str| {
        s.chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
    };
    module.is_some_and(is_path) || entry.is_some_and(is_path)
}

#[test]
fn postgres_is_named_only_in_its_own_files_and_its_registration_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for crate_dir in ["harness/src", "workloads/src", "checkers/src"] {
        sources(&root.join(crate_dir), &mut files);
    }
    let mut outside = Vec::new();
    for file in files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("postgres") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            if line.to_lowercase().contains("postgres") && !registers(line) {
                outside.push(format!("{}:{}: {line}", file.display(), number + 1));
            }
        }
    }
    assert!(
        outside.is_empty(),
        "named outside its own files:\n{}",
        outside.join("\n")
    );
}

#[test]
fn registration_lines_are_told_apart_from_code() {
    assert!(registers("mod postgres_lease;"));
    assert!(registers("    &postgres_lease::PostgresLease,"));
    assert!(registers("    &super::postgres::SERVICE,"));
    assert!(!registers("    if lock == \"postgres-lease\" {"));
    assert!(!registers("// postgres is special"));
}
