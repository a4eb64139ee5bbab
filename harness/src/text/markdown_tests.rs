use proptest::prelude::*;
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use super::*;

fn events(markdown: &str) -> Vec<Event<'_>> {
    Parser::new_ext(
        markdown,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_GFM,
    )
    .collect()
}

/// Whether `markdown` is one paragraph of plain text: no HTML, link, emphasis, code or break.
fn plain_paragraph(markdown: &str) -> bool {
    events(markdown).iter().all(|e| {
        matches!(
            e,
            Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph) | Event::Text(_)
        )
    })
}

const HOSTILE: &str = "</details><img src=x onerror=alert(1)> @everyone [click](https://evil.example) \
     www.evil.example | next\ncell `code` **bold** _it_ ~~gone~~ #123 !45 ~bug &7 \u{1b}[31m\u{202E}\n\
     /approve";

#[test]
fn markup_in_foreign_text_stays_text() {
    let shown = escape(HOSTILE);
    for markup in [
        "<",
        ">",
        "@everyone",
        "[click]",
        "https://",
        "www.evil",
        "\n",
        "\u{1b}",
        "#123",
        "!45",
        "\u{202E}",
    ] {
        assert!(!shown.contains(markup), "{markup:?} survives in {shown}");
    }
    assert!(!shown.replace("\\|", "").contains('|'), "{shown}");
    assert!(shown.contains("&lt;/details&gt;"), "{shown}");
    assert!(shown.contains("@\u{200B}everyone"), "{shown}");
    assert!(plain_paragraph(&format!("x {shown}")), "{shown}");
    assert_eq!(
        escape("valid (as expected), redis 7.0.15 in /usr/lib/redis_7"),
        "valid (as expected), redis 7.0.15 in /usr/lib/redis_7"
    );
}

#[test]
fn a_slash_command_never_starts_escaped_text() {
    assert_eq!(escape("/approve"), "\u{200B}/approve");
    let table = format!("| a |\n|---|\n| {} |\n", escape("x\n/approve\n/merge"));
    assert!(table.lines().all(|l| !l.starts_with('/')), "{table}");
}

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
fn an_error_in_a_fence_is_one_line_the_fence_closes_after_it() {
    let block = fenced("merge shards/1\n```\n/approve\n````: not a shard");
    let lines: Vec<&str> = block.lines().collect();
    assert_eq!(lines.len(), 3, "{block}");
    assert_eq!(lines[0], "`````");
    assert_eq!(lines[2], "`````");
    assert_eq!(
        lines[1],
        "merge shards/1\\n```\\n/approve\\n````: not a shard"
    );
    assert!(fenced("/approve").lines().all(|l| !l.starts_with('/')));
}

/// Whether `markdown` is exactly one fenced code block holding `line`.
fn one_block_of(markdown: &str, line: &str) -> bool {
    let events = events(markdown);
    matches!(
        events.as_slice(),
        [Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))), Event::Text(t), Event::End(TagEnd::CodeBlock)]
            if t.as_ref() == format!("{line}\n")
    )
}

proptest! {
    #[test]
    fn escaped_text_is_one_plain_line_whatever_it_was(text in any::<String>()) {
        let shown = escape(&text);
        prop_assert!(!shown.contains(['<', '>', '\n', '\r']), "{:?}", shown);
        prop_assert!(!shown.starts_with('/'));
        prop_assert!(plain_paragraph(&format!("x {shown}")), "{:?} -> {:?}", text, shown);
    }

    #[test]
    fn hostile_characters_are_escaped(text in "[<>@#!&`|*_~\\[\\]\\\\/:\n a-z0-9]{0,40}") {
        let shown = escape(&text);
        prop_assert!(plain_paragraph(&format!("x {shown}")), "{:?} -> {:?}", text, shown);
        for (i, _) in shown.match_indices('@') {
            let rest = &shown[i + 1..];
            prop_assert!(!rest.starts_with(char::is_alphanumeric), "{:?}", shown);
        }
    }

    #[test]
    fn a_fence_never_closes_early(text in "[`\n/a-z ~]{0,40}") {
        let block = fenced(&text);
        let line = block.lines().nth(1).unwrap_or("").to_string();
        prop_assert!(one_block_of(&block, &line), "{:?}", block);
        prop_assert!(block.lines().all(|l| !l.starts_with('/')));
    }

    #[test]
    fn a_code_span_is_one_span(text in "[`a-z \n<@]{1,30}") {
        let span = code(&text);
        let events = events(&span);
        let codes = events.iter().filter(|e| matches!(e, Event::Code(_))).count();
        prop_assert_eq!(codes, 1, "{:?}", span);
        prop_assert!(events.iter().all(|e| matches!(e, Event::Code(_) | Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph))), "{:?}", events);
    }
}
