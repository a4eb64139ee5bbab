//! What lockpick prints holds text from outside (a history's acquisition names, a resource's
//! error, a matrix file's content in an error): on a terminal, a control character in it could
//! move the cursor, recolour or retitle the terminal; in a CI log, a line starting with `::`
//! is a workflow command (`::error::`, `::add-mask::`, `::stop-commands::`). Everything printed
//! passes through [`neutral`].

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
        for c in line.chars() {
            let bidi = matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
            if c.is_control() || bidi {
                out.push_str(&format!("\\u{{{:x}}}", c as u32));
            } else {
                out.push(c);
            }
        }
    }
    out
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
}
