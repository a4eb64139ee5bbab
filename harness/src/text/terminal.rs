//! What lockpick prints holds text from outside (a history's acquisition names, a resource's
//! error, a matrix file's content in an error): on a terminal, a control character in it could
//! move the cursor, recolour or retitle the terminal; in a CI log, a line starting with `::`
//! is a workflow command (`::error::`, `::add-mask::`, `::stop-commands::`). Everything printed
//! passes through [`neutral`]; a single field of outside text (a folder's name, a cell's name,
//! an error that quotes them) printed within a line passes through [`field`], so it stays on
//! that one line: a name with a line break cannot print a line of its own (which a CI job may
//! paste into a fenced block of a comment, where it would close the block).

/// `text` with control characters (but the newline) and the bidirectional overrides shown as
/// `\u{..}` escapes, and a backslash before any line's leading `::`.
pub fn neutral(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let indent = line.len() - line.trim_start().len();
        let line = if line.trim_start().starts_with("::") {
            out.push_str(&line[..indent]);
            out.push('\\');
            &line[indent..]
        } else {
            line
        };
        push_shown(&mut out, line);
    }
    out
}

/// `text` on one line: as [`neutral`], with its line breaks shown as `\n` too.
pub fn field(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push_str("\\n");
        }
        push_shown(&mut out, line);
    }
    if out.trim_start().starts_with("::") {
        out.insert(out.len() - out.trim_start().len(), '\\');
    }
    out
}

/// Pushes `text` with its control characters and bidirectional overrides as `\u{..}`.
fn push_shown(out: &mut String, text: &str) {
    for c in text.chars() {
        if c.is_control() || super::markdown::is_bidi(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_workflow_commands_are_shown_not_obeyed() {
        let hostile =
            "acquisition \u{1b}]0;owned\u{7}\u{1b}[2J x\n::error::fake\n  ::add-mask::y\r\u{202E}";
        let shown = neutral(hostile);
        assert!(
            !shown.chars().any(|c| c.is_control() && c != '\n'),
            "{shown:?}"
        );
        assert!(!shown.contains('\u{202E}'));
        for line in shown.lines() {
            assert!(!line.trim_start().starts_with("::"), "{line}");
        }
        assert!(shown.contains("\\u{1b}]0;owned"), "{shown}");
        assert_eq!(
            neutral("verdict: VALID\n  operations: 3\n"),
            "verdict: VALID\n  operations: 3\n"
        );
    }

    #[test]
    fn a_field_stays_on_its_line_whatever_it_holds() {
        let shown = field("shards/1\n```\n/approve\r\u{1b}[2J");
        assert_eq!(shown, "shards/1\\n```\\n/approve\\u{d}\\u{1b}[2J");
        assert_eq!(field("::error::x"), "\\::error::x");
        assert_eq!(field("/store/redis-none"), "/store/redis-none");
    }
}
