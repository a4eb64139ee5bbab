//! The book's generated blocks: in a page under `docs/` (or `workloads/PROTOCOL.md`), the lines
//! between
//! `<!-- generated: NAME -->` and `<!-- end of generated: NAME -->` are what the reference
//! function NAME writes. The test below fails, naming the page and the block, when the book and
//! the binary disagree; `LOCKPICK_WRITE_BOOK=1 cargo test -p lockpick --lib reference` writes
//! them again.

use std::path::Path;

/// A generated block: its name, the page (under `docs/`) holding it, and what writes it.
pub type Block = (&'static str, &'static str, fn() -> String);

/// Every generated block of the book.
pub const BLOCKS: &[Block] = &[
    ("locks", "reference/locks.md", super::locks),
    ("services", "reference/services.md", super::services),
    ("nemeses", "reference/nemeses.md", super::nemeses),
    ("runtimes", "reference/runtimes.md", super::runtimes),
    ("commands", "reference/commands.md", super::commands),
    // Where client programs' authors read: the protocol itself and the guide.
    (
        "exec-services",
        "../workloads/PROTOCOL.md",
        super::exec_services,
    ),
    (
        "exec-services",
        "guide/your-own-lock.md",
        super::exec_services,
    ),
];

fn markers(name: &str) -> (String, String) {
    (
        format!("<!-- generated: {name} -->\n"),
        format!("<!-- end of generated: {name} -->"),
    )
}

/// The page with block `name` holding `content`; an error names what is missing.
pub fn with_block(page: &str, name: &str, content: &str) -> Result<String, String> {
    let (open, close) = markers(name);
    let start = page
        .find(&open)
        .ok_or_else(|| format!("no line {:?}", open.trim_end()))?
        + open.len();
    let end = start
        + page[start..]
            .find(&close)
            .ok_or_else(|| format!("no line {close:?} after the block's start"))?;
    Ok(format!("{}\n{content}\n{}", &page[..start], &page[end..]))
}

/// Where the page's block `name` differs from `content`, or `None` when it holds exactly that.
pub fn difference(page: &str, name: &str, content: &str) -> Option<String> {
    match with_block(page, name, content) {
        Err(e) => Some(e),
        Ok(written) if written == page => None,
        Ok(_) => Some(format!("its block {name:?} is not what the binary has")),
    }
}

/// Checks (or, with `write`, rewrites) every generated block of the book in `docs`: the
/// pages that disagree, each with why.
pub fn check(docs: &Path, write: bool) -> Vec<String> {
    let mut wrong = Vec::new();
    for (name, page, render) in BLOCKS {
        let path = docs.join(page);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                wrong.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let content = render();
        if let Some(why) = difference(&text, name, &content) {
            match with_block(&text, name, &content) {
                Ok(written) if write => {
                    if let Err(e) = std::fs::write(&path, written) {
                        wrong.push(format!("{}: {e}", path.display()));
                    }
                }
                _ => wrong.push(format!("{}: {why}", path.display())),
            }
        }
    }
    wrong
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs")
    }

    #[test]
    fn the_books_reference_tables_are_what_the_binary_has() {
        let write = std::env::var_os("LOCKPICK_WRITE_BOOK").is_some();
        let wrong = check(&docs(), write);
        assert!(
            wrong.is_empty(),
            "the book disagrees with the catalogues (LOCKPICK_WRITE_BOOK=1 cargo test -p \
             lockpick --lib reference writes it again):\n{}",
            wrong.join("\n")
        );
    }

    /// A planted difference (a lock the binary does not have, a nemesis's words changed, a
    /// block's end removed) is found, on a copy of each page.
    #[test]
    fn a_planted_difference_in_the_book_is_found() {
        for (name, page, render) in BLOCKS {
            let text = std::fs::read_to_string(docs().join(page)).unwrap();
            assert_eq!(difference(&text, name, &render()), None, "{page}");
            let planted = text.replacen("| `", "| `not-in-the-binary` | x |\n| `", 1);
            assert!(difference(&planted, name, &render()).is_some(), "{page}");
            let (_, close) = markers(name);
            let cut = text.replace(&close, "");
            assert!(difference(&cut, name, &render()).is_some(), "{page}");
        }
    }

    #[test]
    fn a_cell_is_one_line_and_cannot_end_itself() {
        assert_eq!(super::super::cell("a |b\n c"), "a \\|b c");
    }

    /// Every relative link of the README and the book names a file that is there, and the
    /// README stays a page (the book holds the rest).
    #[test]
    fn the_readme_is_short_and_every_link_of_it_and_the_book_resolves() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
        assert!(
            readme.lines().count() <= 250,
            "the README grew past 250 lines"
        );
        let mut pages = vec![root.join("README.md")];
        let mut folders = vec![docs()];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(folder).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    folders.push(path);
                } else if path.extension().is_some_and(|e| e == "md") {
                    pages.push(path);
                }
            }
        }
        let mut broken = Vec::new();
        for page in &pages {
            let text = std::fs::read_to_string(page).unwrap();
            let mut in_code = false;
            for line in text.lines() {
                if line.starts_with("```") {
                    in_code = !in_code;
                }
                if in_code {
                    continue;
                }
                for target in line.split("](").skip(1).filter_map(|t| t.split(')').next()) {
                    let file = target.split('#').next().unwrap_or("");
                    if file.is_empty() || file.contains("://") {
                        continue;
                    }
                    if !page.parent().unwrap().join(file).exists() {
                        broken.push(format!("{}: {target}", page.display()));
                    }
                }
            }
        }
        assert!(
            broken.is_empty(),
            "links to nothing:\n{}",
            broken.join("\n")
        );
    }
}
