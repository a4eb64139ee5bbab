//! Text that is not lockpick's own (an exec program's error, a server's version, a reason a
//! lock gave) put into markdown that may become a pull-request comment (`summary.md`,
//! `compare.md`, `$GITHUB_STEP_SUMMARY`): it must show as the text it is, never as markup.
//! No raw HTML (`</details>` would close our fold), no `@mention` that notifies someone, no
//! link, no table cell break, no line break.

/// `text` as literal markdown inline text.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // An entity, not `@`: GitHub links and notifies a mention only when written as `@`.
            '@' => out.push_str("&#64;"),
            // A link needs brackets, a cell break a pipe; a backslash could undo our escapes.
            // Emphasis and parentheses are left as they are: they cannot hide or link anything,
            // and the raw file stays readable.
            '\\' | '`' | '[' | ']' | '|' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    // Bare addresses are made links by GitHub's autolinker: a zero-width space breaks them.
    out.replace("://", ":\u{200B}//")
        .replace("www.", "www\u{200B}.")
}

/// `text` as one inline code span (a command to paste): the fence is one backtick longer than
/// any run of backticks in it, as `--report-to`'s code block does, so nothing in it can end the
/// span; inside a span nothing is markup, so only line breaks and control characters change.
pub fn code(text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            c if c.is_control() => '\u{FFFD}',
            c => c,
        })
        .collect();
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // A span that starts or ends with a backtick needs a space inside its fence.
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_span_holds_any_text_on_one_line() {
        assert_eq!(
            code("lockpick run --lock redis"),
            "`lockpick run --lock redis`"
        );
        assert_eq!(code("a `b` c"), "``a `b` c``");
        assert_eq!(code("``x"), "``` ``x ```");
        assert_eq!(code("a\nb\u{1b}"), "`a b\u{FFFD}`");
    }

    #[test]
    fn markup_in_foreign_text_stays_text() {
        let hostile =
            "</details><img src=x onerror=alert(1)> @octocat [click](https://evil.example) \
                       www.evil.example | next\ncell `code` **bold** \u{1b}[31m";
        let shown = escape(hostile);
        for markup in [
            "<", ">", "@octocat", "[click]", "https://", "www.evil", "\n", "\u{1b}",
        ] {
            assert!(!shown.contains(markup), "{markup:?} survives in {shown}");
        }
        assert!(!shown.replace("\\|", "").contains('|'), "{shown}");
        assert!(shown.contains("&lt;/details&gt;"), "{shown}");
        assert!(shown.contains("&#64;octocat"), "{shown}");
        assert_eq!(
            escape("valid (as expected), redis 7.0.15 in /usr/lib/redis_7"),
            "valid (as expected), redis 7.0.15 in /usr/lib/redis_7"
        );
    }
}
