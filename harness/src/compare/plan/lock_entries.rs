//! The locks of a comparison: the matrix file's entries (a lock's name, or an exec lock with the
//! short name it is shown by), `--locks` narrowing them, and `[[expect]]` groups naming them by
//! what the comparison calls them. Every name is hostile input: each is checked against the
//! catalogue, a short name against its charset, and two locks called the same are refused (one
//! label must mean one row of the grid, one store folder, one JUnit suite).

use anyhow::Result;

use crate::compare::plan::matrix::LockEntry;
use crate::config::bad;
use crate::locks::{self, exec};

/// The file's locks (`key` names them in an error), else the default list; each checked, no
/// two called the same.
pub fn from_file(key: &str, file: &[LockEntry], default: &str) -> Result<Vec<LockEntry>> {
    let entries: Vec<LockEntry> = if file.is_empty() {
        default.split(',').map(LockEntry::plain).collect()
    } else {
        file.to_vec()
    };
    for entry in &entries {
        check(key, entry)?;
    }
    distinct(key, &entries)?;
    Ok(entries)
}

/// The locks a comparison runs when nothing names them: those whose entry asks for it.
pub fn default_locks() -> String {
    locks::default_comparison()
}

/// `--locks`: each item the label of one of the file's locks (so a CI job can run the cell of
/// a named exec lock), else a lock's name as `--lock` takes it.
pub fn from_flag(text: &str, file: &[LockEntry]) -> Result<Vec<LockEntry>> {
    let mut entries = Vec::new();
    for item in text.split(',') {
        if item.is_empty() {
            return Err(bad(format!(
                "--locks {text:?} has an empty item: separate names with ','"
            )));
        }
        let entry = match file.iter().find(|e| e.label() == item) {
            Some(entry) => entry.clone(),
            None => LockEntry::plain(item),
        };
        check("--locks", &entry)?;
        entries.push(entry);
    }
    distinct("--locks", &entries)?;
    Ok(entries)
}

/// An `[[expect]]` group's `locks`: each the label of one of the file's locks, or a lock
/// lockpick knows. A named lock's whole exec string is refused: the group would match nothing.
pub fn check_expected(key: &str, items: &[String], file: &[LockEntry]) -> Result<()> {
    for item in items {
        if file.iter().any(|e| e.label() == item) {
            continue;
        }
        if let Some(named) = file.iter().find(|e| e.lock == *item && e.name.is_some()) {
            return Err(bad(format!(
                "{key}: {item:?} is called {:?} in the matrix's locks: name it so",
                named.label()
            )));
        }
        check(key, &LockEntry::plain(item))?;
    }
    Ok(())
}

/// The entry names a lock lockpick can run, under a short name it may take.
fn check(key: &str, entry: &LockEntry) -> Result<()> {
    if entry.lock.is_empty() {
        return Err(bad(format!("{key} has an empty item")));
    }
    if let Some(name) = &entry.name {
        return match locks::find_named(&entry.lock, Some(name)) {
            Ok(_) => Ok(()),
            Err(why) => Err(bad(format!("{key}: the lock named {name:?}: {why}"))),
        };
    }
    if entry.lock.starts_with(exec::PREFIX) {
        // A whole word that reaches the cell as its `--lock`, so nothing in it becomes a flag.
        return match exec::find(&entry.lock) {
            Ok(_) => Ok(()),
            Err(why) => Err(bad(format!(
                "{key}: {:?} is not a client lockpick can run: {why}",
                entry.lock
            ))),
        };
    }
    if locks::find(&entry.lock).is_none() {
        return Err(bad(format!(
            "{key}: {:?} is not one of {}",
            entry.lock,
            locks::names().join(", ")
        )));
    }
    Ok(())
}

/// No two entries called the same.
fn distinct(key: &str, entries: &[LockEntry]) -> Result<()> {
    for (i, entry) in entries.iter().enumerate() {
        if entries[..i].iter().any(|e| e.label() == entry.label()) {
            return Err(bad(format!(
                "{key}: two locks are called {:?}: give each its own name",
                entry.label()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(lock: &str, name: &str) -> LockEntry {
        LockEntry {
            lock: lock.to_string(),
            name: Some(name.to_string()),
        }
    }

    #[test]
    fn two_locks_called_the_same_are_refused_and_a_label_finds_its_entry() {
        let spec = "exec:redis:/usr/bin/python3 client.py";
        let file = [named(spec, "mutex"), named(spec, "mutex")];
        let refused = from_file("f: locks", &file, "redis")
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("two locks are called \"mutex\""),
            "{refused}"
        );
        let file = [
            named(spec, "mutex"),
            named(&format!("{spec} --redlock"), "redlock-mutex"),
        ];
        assert_eq!(from_file("f: locks", &file, "redis").unwrap(), file);
        assert_eq!(from_flag("redlock-mutex,redis", &file).unwrap()[0], file[1]);
        assert!(from_flag("mutex,mutex", &file).is_err());
        assert!(check_expected("g", &["mutex".to_string()], &file).is_ok());
        let by_spec = check_expected("g", &[spec.to_string()], &file).unwrap_err();
        assert!(by_spec.to_string().contains("name it so"), "{by_spec}");
        assert!(check_expected("g", &["etcd".to_string()], &file).is_ok());
        assert!(check_expected("g", &["nope".to_string()], &file).is_err());
    }

    #[test]
    fn a_bad_short_name_or_a_named_built_in_lock_is_refused() {
        for entry in [
            named("exec:redis:./c", "../up"),
            named("exec:redis:./c", "redis"),
            named("redis", "mine"),
            named("exec:nope:./c", "mine"),
        ] {
            assert!(
                from_file("f: locks", std::slice::from_ref(&entry), "redis").is_err(),
                "{entry:?}"
            );
        }
    }

    #[test]
    fn the_default_comparison_is_the_locks_whose_entries_ask_for_it() {
        // What `compare --help` promises (`values::compare_locks_help`).
        assert_eq!(
            default_locks(),
            "redis,redis-sentinel,redlock,etcd,zookeeper,mariadb,nats-kv"
        );
    }
}
