//! What a matrix file must say before it is a comparison: its locks, and no list left empty.
//! A key left out takes its default (`nemeses` and `fencing` the comparison's, a group's `locks`
//! every lock); `[]` would silently mean the same, so it is refused as the mistake it is, and a
//! file with no `locks` (an empty file, or one of comments) would run lockpick's default cells
//! where the user meant their own. Lists are found in the file's own tree, every one of them
//! (`[knobs] image`, a group's `fencing`, …), so that a list key added later is held to it too.

use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The first list in `text` (a TOML document that parses) that is `[]`, as `line N: key = []
/// lists nothing`, the key named as the file nests it (`[[expect]] group 2: locks`).
pub fn first_empty_list(text: &str) -> Option<String> {
    let document = DeTable::parse(text).ok()?;
    let mut empty = Vec::new();
    empty_lists("", document.get_ref(), &mut empty);
    let (start, key) = empty.into_iter().min_by_key(|(start, _)| *start)?;
    let line = text[..start.min(text.len())].lines().count().max(1);
    Some(format!(
        "line {line}: {key} = [] lists nothing: name at least one item"
    ))
}

/// Whether `text` (a TOML document that parses) holds any key at all.
pub fn has_keys(text: &str) -> bool {
    DeTable::parse(text).is_ok_and(|document| !document.get_ref().is_empty())
}

/// Each empty array under `table` (named `within`) with where it starts.
fn empty_lists(within: &str, table: &DeTable<'_>, found: &mut Vec<(usize, String)>) {
    for (key, value) in table.iter() {
        let key = key.get_ref().as_ref();
        let named = match within {
            "" => key.to_string(),
            _ => format!("{within} {key}"),
        };
        match value.get_ref() {
            DeValue::Array(items) if items.is_empty() => found.push((start(value), named)),
            DeValue::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    if let DeValue::Table(group) = item.get_ref() {
                        let section = format!("[[{named}]] group {}:", index + 1);
                        empty_lists(&section, group, found);
                    }
                }
            }
            DeValue::Table(inner) => empty_lists(&format!("[{named}]"), inner, found),
            _ => {}
        }
    }
}

fn start<T>(value: &Spanned<T>) -> usize {
    value.span().start
}
