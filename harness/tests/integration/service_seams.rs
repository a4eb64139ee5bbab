//! The service seam: every service of the catalogue (`SERVICES`) is named only by its own files
//! and by its registration lines, so adding one touches its own files plus one line per
//! catalogue. A change that makes some other file name a service breaks the seam, and this test.
//!
//! The rule, for each service `s` of the catalogue, over the sources of the three crates
//! (`harness/src`, `workloads/src`, `checkers/src`):
//! - `s`'s *names* are its own and those of the locks that run on it (`-` read as `_`): `redis`,
//!   `redlock`, `rslock` for Redis; a lock's name outside its service's files names the service
//!   as surely (a `match` on `"redlock"` is a match on Redis);
//! - a file *names* `s` when one of its code lines holds one of `s`'s names, in any case
//!   (`redis`, `Redis`, `REDIS`, inside an identifier, a path or a string literal alike);
//! - code lines are what is left after comments (`//`, `///`, `//!`, `/* */`); comments may
//!   speak of any service, since they say why;
//! - test code does not count: `#[cfg(test)]` items (the `mod tests { … }` blocks) and files
//!   named `tests.rs` or `*_tests.rs`, where a service is example data;
//! - `s`'s own files do not count: a file whose name, or the name of a folder it is in below
//!   the crate's `src`, starts with one of `s`'s names (`redis*`, `redlock*`, `rslock*` for
//!   Redis; `postgres*` for PostgreSQL, whose locks' names start with it);
//! - registration lines do not count ([`registers`]: `mod x;`, `&x::Entry,`);
//! - the bench (`harness/src/bench/`) does not count: it benchmarks the harness against one
//!   particular server, and says which.

use std::path::{Path, PathBuf};

use lockpick::locks::LOCKS;
use lockpick::service::SERVICES;

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

/// Where a scan of Rust source stands.
#[derive(Clone, Copy, PartialEq)]
enum Scan {
    Code,
    Text,
    RawText(usize),
    LineComment,
    BlockComment(usize),
}

/// Each line of `source` without its comments (string literals kept), and the change in brace
/// depth its code makes.
fn code_lines(source: &str) -> Vec<(String, i32)> {
    let chars: Vec<char> = source.chars().collect();
    let mut lines = vec![(String::new(), 0)];
    let mut state = Scan::Code;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let line = lines.last_mut().unwrap();
        if c == '\n' {
            if state == Scan::LineComment {
                state = Scan::Code;
            }
            lines.push((String::new(), 0));
            i += 1;
            continue;
        }
        match state {
            Scan::Code => match c {
                '/' if next == Some('/') => state = Scan::LineComment,
                '/' if next == Some('*') => {
                    state = Scan::BlockComment(1);
                    i += 1;
                }
                '"' => {
                    state = Scan::Text;
                    line.0.push(c);
                }
                'r' if matches!(next, Some('"') | Some('#'))
                    && !chars[..i]
                        .last()
                        .is_some_and(|p| p.is_alphanumeric() || *p == '_') =>
                {
                    let hashes = chars[i + 1..].iter().take_while(|h| **h == '#').count();
                    if chars.get(i + 1 + hashes) == Some(&'"') {
                        state = Scan::RawText(hashes);
                        line.0.extend(&chars[i..i + 2 + hashes]);
                        i += 2 + hashes;
                        continue;
                    }
                    line.0.push(c);
                }
                '\'' => {
                    // A char literal ('x', '\n', '"'), or a lifetime ('a).
                    let end = if next == Some('\\') {
                        chars[i + 2..]
                            .iter()
                            .position(|e| *e == '\'')
                            .map(|p| i + 3 + p)
                    } else if chars.get(i + 2) == Some(&'\'') {
                        Some(i + 3)
                    } else {
                        None
                    };
                    let end = end.unwrap_or(i + 1);
                    line.0.extend(&chars[i..end]);
                    i = end;
                    continue;
                }
                '{' => {
                    line.1 += 1;
                    line.0.push(c);
                }
                '}' => {
                    line.1 -= 1;
                    line.0.push(c);
                }
                _ => line.0.push(c),
            },
            Scan::Text => {
                line.0.push(c);
                if c == '\\' {
                    if let Some(escaped) = next.filter(|n| *n != '\n') {
                        line.0.push(escaped);
                        i += 1;
                    }
                } else if c == '"' {
                    state = Scan::Code;
                }
            }
            Scan::RawText(hashes) => {
                line.0.push(c);
                if c == '"' && chars[i + 1..].iter().take(hashes).all(|h| *h == '#') {
                    line.0.extend(&chars[i + 1..i + 1 + hashes]);
                    i += 1 + hashes;
                    state = Scan::Code;
                    continue;
                }
            }
            Scan::LineComment => {}
            Scan::BlockComment(depth) => {
                if c == '*' && next == Some('/') {
                    state = if depth == 1 {
                        Scan::Code
                    } else {
                        Scan::BlockComment(depth - 1)
                    };
                    i += 1;
                } else if c == '/' && next == Some('*') {
                    state = Scan::BlockComment(depth + 1);
                    i += 1;
                }
            }
        }
        i += 1;
    }
    lines
}

/// The numbered code lines of `source` outside its `#[cfg(test)]` items.
fn non_test_code(source: &str) -> Vec<(usize, String)> {
    let mut kept = Vec::new();
    let mut test_item = false;
    // The brace depth a test item's block started at, while inside one.
    let mut inside: Option<i32> = None;
    let mut depth = 0;
    for (number, (code, braces)) in code_lines(source).into_iter().enumerate() {
        let before = depth;
        depth += braces;
        if let Some(start) = inside {
            if depth <= start {
                inside = None;
            }
            continue;
        }
        let trimmed = code.trim();
        if trimmed == "#[cfg(test)]" {
            test_item = true;
            continue;
        }
        if test_item {
            if trimmed.starts_with("#[") || trimmed.is_empty() {
                continue;
            }
            test_item = false;
            if depth > before {
                inside = Some(before);
            }
            continue;
        }
        kept.push((number + 1, code));
    }
    kept
}

/// A file whose code lines do not count: tests, and the bench.
fn exempt(relative: &Path) -> bool {
    let name = relative.file_name().unwrap().to_string_lossy();
    name == "tests.rs" || name.ends_with("_tests.rs") || relative.starts_with("bench")
}

/// The names of `service`: its own, and its locks', in lower case with `_` for `-`.
fn owners(service: &str) -> Vec<String> {
    let mut names = vec![service.to_string()];
    for lock in LOCKS {
        if lock.service_entry().name == service {
            let name = lock.name().replace('-', "_");
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

fn names_one(line: &str, names: &[String]) -> bool {
    let line = line.to_lowercase().replace('-', "_");
    names.iter().any(|name| line.contains(name.as_str()))
}

fn own_file(relative: &Path, owners: &[String]) -> bool {
    relative.components().any(|part| {
        let part = part.as_os_str().to_string_lossy().to_lowercase();
        owners.iter().any(|owner| part.starts_with(owner.as_str()))
    })
}

/// Every code line of the crates' sources outside `service`'s own files that names it.
fn naming_lines(service: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let owners = owners(service);
    let mut outside = Vec::new();
    for crate_dir in ["harness/src", "workloads/src", "checkers/src"] {
        let src = root.join(crate_dir);
        let mut files = Vec::new();
        sources(&src, &mut files);
        files.sort();
        for file in files {
            let relative = file.strip_prefix(&src).unwrap();
            if exempt(relative) || own_file(relative, &owners) {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in non_test_code(&text) {
                if names_one(&line, &owners) && !registers(&line) {
                    outside.push(format!(
                        "{crate_dir}/{}:{number}: {}",
                        relative.display(),
                        line.trim()
                    ));
                }
            }
        }
    }
    outside
}

#[test]
fn every_service_is_named_only_in_its_own_files_and_its_registration_lines() {
    let mut outside = Vec::new();
    for service in SERVICES {
        outside.extend(naming_lines(service.name));
    }
    assert!(
        outside.is_empty(),
        "{} lines name a service outside its own files:\n{}",
        outside.len(),
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

#[test]
fn comments_and_test_items_are_not_code_and_strings_are() {
    let source = r#"use a::b; // redis here is a comment
/// redis in a doc comment
let url = "http://redis"; /* redis */ let after = 1;
let quote = '"'; let lifetime: &'static str = "x"; // "redis"
#[cfg(test)]
mod tests {
    fn redis() { let nested = { 1 }; }
}
fn kept() { "RedLock" }
"#;
    let lines: Vec<(usize, String)> = non_test_code(source);
    let naming: Vec<usize> = lines
        .iter()
        .filter(|(_, code)| names_one(code, &owners("redis")))
        .map(|(number, _)| *number)
        .collect();
    assert_eq!(naming, [3, 9], "{lines:?}");
    assert!(lines
        .iter()
        .any(|(_, code)| code.contains("let after = 1;")));
    assert!(!lines.iter().any(|(_, code)| code.contains("nested")));
}

#[test]
fn a_services_names_are_its_own_and_its_locks_and_its_files_are_those_they_start() {
    assert_eq!(owners("redis"), ["redis", "redlock", "rslock"]);
    assert!(names_one(
        "    \"postgres-lease\" => 1,",
        &owners("postgres")
    ));
    let owners = owners("redis");
    assert!(own_file(Path::new("redlock/tests.rs"), &owners));
    assert!(own_file(Path::new("locks/rslock.rs"), &owners));
    assert!(!own_file(Path::new("locks/exec.rs"), &owners));
    assert!(exempt(Path::new("compare/cell_tests.rs")) && exempt(Path::new("bench/mod.rs")));
}
