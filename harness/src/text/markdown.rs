//! Text that is not lockpick's own (a cell's name, a matrix's `why`, an exec program's error, a
//! folder's name, a server's version) put into markdown that may become a pull-request comment
//! or a GitLab note (`summary.md`, `compare.md`, `$GITHUB_STEP_SUMMARY`): it must show as the
//! text it is, never act. GitHub and GitLab render inline HTML (`</details>` would close our
//! fold, `<img onerror>` would be markup), link bare addresses, notify on `@name`, cross-link
//! `#123` and `!123` (and GitLab's `~label`, `%milestone`, `&epic`, `$snippet`), and GitLab runs
//! a line that starts with `/approve` as a quick action. Every foreign string goes through one
//! of these three, by where it lands: [`escape`] for inline text (a table cell, a list item),
//! [`code`] for a command to paste, [`fenced`] for an error shown as a block.
//!
//! References and mentions are matched by both sites on the rendered text, where an entity is
//! already a character again: a zero-width space after the sigil is what breaks them.

/// Breaks a mention, a reference or an autolink without changing what a reader sees.
const ZERO_WIDTH: char = '\u{200B}';

/// What starts a mention or a reference on GitHub or GitLab when a word follows it.
fn is_sigil(c: char) -> bool {
    matches!(c, '@' | '#' | '!' | '~' | '%' | '$' | '&' | '^')
}

/// Characters that reorder the text around them on screen (Trojan Source): shown, not obeyed.
pub(crate) fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

/// `text` as literal markdown inline text on one line: no HTML, no link, no mention, no
/// reference, no emphasis, no table cell break, no line break, and nothing a line could start
/// with to become a block or a quick action.
pub fn escape(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|b| chars[b]);
        let after = chars.get(i + 1).copied();
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // An underscore between two letters or digits cannot emphasise (`redis_7` stays
            // readable in the raw file); anywhere else it could.
            '_' if before.is_some_and(char::is_alphanumeric)
                && after.is_some_and(char::is_alphanumeric) =>
            {
                out.push(c)
            }
            '\\' | '`' | '[' | ']' | '|' | '*' | '_' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() || is_bidi(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
        // A reference or mention needs a word (or GitLab's `~"quoted label"`) right after.
        if is_sigil(c) && after.is_some_and(|a| a.is_alphanumeric() || a == '"') {
            out.push(ZERO_WIDTH);
        }
    }
    // Bare addresses are made links by the autolinkers.
    let out = out
        .replace("://", &format!(":{ZERO_WIDTH}//"))
        .replace("www.", &format!("www{ZERO_WIDTH}."));
    line_start_safe(out)
}

/// `text` with a zero-width space before it when it starts with a slash: put at a line's start
/// by a caller, it would be a GitLab quick action (`/approve`).
fn line_start_safe(text: String) -> String {
    if text.starts_with('/') {
        format!("{ZERO_WIDTH}{text}")
    } else {
        text
    }
}

/// `text` as one inline code span (a command to paste): the fence is one backtick longer than
/// any run of backticks in it, so nothing in it can end the span; inside a span nothing is
/// markup, a mention or a reference, so only line breaks and control characters change. A
/// command should come from [`crate::text::shell::command`], which has neither.
pub fn code(text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            c if c.is_control() || is_bidi(c) => '\u{FFFD}',
            c => c,
        })
        .collect();
    let fence = "`".repeat(longest_backtick_run(&text) + 1);
    // A span that starts or ends with a backtick needs a space inside its fence.
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `text` (an error message, which quotes flags, paths and files) as a fenced code block of
/// exactly one line: its line breaks and control characters shown as `\n`, `\u{1b}`, so no
/// line of it can close the block or stand alone as a quick action; the fence is longer than
/// any run of backticks in it.
pub fn fenced(text: &str) -> String {
    let line = crate::text::terminal::field(text);
    let line = line_start_safe(line);
    let fence = "`".repeat(longest_backtick_run(&line).max(2) + 1);
    format!("{fence}\n{line}\n{fence}")
}

fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
