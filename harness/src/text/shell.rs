//! A command lockpick prints for a person to paste (`reproduce with ...`, `lockpick shrink
//! <dir>`, `replay with ...`): its words come from outside (a run's stored command, a store's
//! path, a shard's folder), so each is quoted, and pasting the line runs exactly that command
//! with exactly those words, whatever a word holds (`$(...)`, `;`, quotes, a line break).
//!
//! A word without control characters is quoted as `shell-words` quotes it (POSIX single
//! quotes). A word with one (a folder named with a line break) is written in `$'...'` quotes
//! (POSIX.1-2024, bash, zsh, ksh, busybox sh) with its control characters as escapes, so the
//! command stays on one line: a line break inside plain quotes would be pasted right, but on a
//! terminal or in a comment it would print a line of its own.

/// `words` as one line of shell, each word quoted as needed.
pub fn command<S: AsRef<str>>(words: &[S]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| word(w.as_ref())).collect();
    quoted.join(" ")
}

fn word(word: &str) -> String {
    let needs_escapes = |c: char| c.is_control() || super::markdown::is_bidi(c);
    if !word.chars().any(needs_escapes) {
        return shell_words::quote(word).into_owned();
    }
    let mut out = String::from("$'");
    for c in word.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if c.is_ascii_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if needs_escapes(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What bash makes of `line`: the words it would pass to `lockpick`.
    fn words_in_bash(line: &str) -> Vec<String> {
        let script = format!("words() {{ printf '%s\\0' \"$@\"; }}; words {line}");
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .output()
            .expect("bash runs");
        assert!(out.status.success(), "{line}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        text.split_terminator('\0').map(str::to_string).collect()
    }

    #[test]
    fn a_printed_command_is_one_line_that_bash_reads_back_word_for_word() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("pwned");
        let hostile = [
            "lockpick".to_string(),
            "shrink".to_string(),
            format!(
                "shards/1\n/approve $(touch {}) `x` 'q' \\ \u{1b}[2J",
                marker.display()
            ),
            "plain-word".to_string(),
            format!("a; touch {}", marker.display()),
            "\u{202E}evil".to_string(),
        ];
        let line = command(&hostile);
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert_eq!(words_in_bash(&line), hostile);
        assert!(!marker.exists(), "pasting {line} ran a command");
        assert_eq!(
            command(&["lockpick", "shrink", "store/redis-none/t"]),
            "lockpick shrink store/redis-none/t"
        );
    }

    #[test]
    fn a_command_without_control_characters_is_read_back_by_shell_words() {
        let words = [
            "lockpick",
            "run",
            "--lock",
            "exec:redis:a b",
            "$(touch x)",
            "it's",
        ];
        let line = command(&words);
        assert_eq!(shell_words::split(&line).unwrap(), words);
    }
}
