//! The matrix's axes: its locks, nemeses and fencing modes. The matrix file's lists (else the
//! defaults) come first, each name checked against its catalogue, and every `[[expect]]` group
//! with them; then the flags, each of which replaces its list (a CI job may narrow a
//! comparison to one cell).

use anyhow::Result;
use clap::ValueEnum;

use super::lock_entries;
use crate::cli::{CompareArgs, Fencing};
use crate::compare::plan::matrix::{LockEntry, Matrix};
use crate::config::bad;

const DEFAULT_NEMESES: &str = "none,pause-holder,kill-leader,pause-leader,partition-leader";
const DEFAULT_FENCING: &str = "on";

/// The three lists a comparison's cells are the product of.
pub struct Axes {
    pub locks: Vec<LockEntry>,
    pub nemeses: Vec<String>,
    pub fencings: Vec<String>,
}

fn fencing_names() -> Vec<&'static str> {
    Fencing::value_variants().iter().map(|f| f.name()).collect()
}

fn nemesis_names() -> Vec<&'static str> {
    let mut names = crate::nemesis::names();
    names.push(crate::nemesis::NONE);
    names
}

/// The matrix file's axes (`file` names it in an error), else the defaults, with its
/// `[[expect]]` groups checked against them.
pub fn of_file(file: &str, matrix: &Matrix) -> Result<Axes> {
    let (fencing_names, nemesis_names) = (fencing_names(), nemesis_names());
    let in_file = |key: &str| format!("{file}: {key}");
    let locks = lock_entries::from_file(
        &in_file("locks"),
        &matrix.locks,
        &lock_entries::default_locks(),
    )?;
    let labels: Vec<String> = locks.iter().map(|e| e.label().to_string()).collect();
    let fencings = from_file(&in_file("fencing"), &matrix.fencing, DEFAULT_FENCING)?;
    known(&in_file("fencing"), &fencings, &fencing_names)?;
    let nemeses = from_file(&in_file("nemeses"), &matrix.nemeses, DEFAULT_NEMESES)?;
    known_nemeses(&in_file("nemeses"), &nemeses, &nemesis_names)?;
    for (index, group) in matrix.expect.iter().enumerate() {
        let key = |key: &str| format!("{file}: [[expect]] group {}: {key}", index + 1);
        lock_entries::check_expected(&key("locks"), &group.locks, &locks)?;
        known_nemeses(&key("nemeses"), &group.nemeses, &nemesis_names)?;
        known(&key("fencing"), &group.fencing, &fencing_names)?;
        // Against the file's own matrix: flags may narrow a comparison (a CI job running one
        // cell), and then a group is rightly idle.
        if let Some(why) = group.matches_none(&labels, &nemeses, &fencings) {
            return Err(bad(format!("{file}: {}: {why}", group.label(index))));
        }
    }
    Ok(Axes {
        locks,
        nemeses,
        fencings,
    })
}

/// The axes the comparison runs: each of `--locks`, `--fencing` and `--nemeses` given replaces
/// the file's list.
pub fn narrowed(args: &CompareArgs, file: Axes) -> Result<Axes> {
    let or_flag = |given: &Option<String>, flag: &str, from_file: &[String]| match given {
        Some(text) => list(flag, text, ','),
        None => Ok(from_file.to_vec()),
    };
    let locks = match &args.locks {
        Some(text) => lock_entries::from_flag(text, &file.locks)?,
        None => file.locks,
    };
    let fencings = or_flag(&args.fencing, "--fencing", &file.fencings)?;
    known("--fencing", &fencings, &fencing_names())?;
    let nemeses = or_flag(&args.nemeses, "--nemeses", &file.nemeses)?;
    known_nemeses("--nemeses", &nemeses, &nemesis_names())?;
    Ok(Axes {
        locks,
        nemeses,
        fencings,
    })
}

/// The file's list (`key` names it in an error), else the default.
fn from_file(key: &str, file: &[String], default: &str) -> Result<Vec<String>> {
    if file.is_empty() {
        return list(key, default, ',');
    }
    if file.iter().any(|item| item.is_empty()) {
        return Err(bad(format!("{key} has an empty item")));
    }
    Ok(file.to_vec())
}

/// The items of a `separator`-separated list; none may be empty.
fn list(flag: &str, text: &str, separator: char) -> Result<Vec<String>> {
    let items: Vec<String> = text.split(separator).map(str::to_string).collect();
    if items.iter().any(|item| item.is_empty()) {
        return Err(bad(format!(
            "{flag} {text:?} has an empty item: separate names with {separator:?}"
        )));
    }
    Ok(items)
}

/// Each item must be one of `names` exactly.
fn known(flag: &str, items: &[String], names: &[&str]) -> Result<()> {
    for item in items {
        if !names.contains(&item.as_str()) {
            return Err(bad(format!(
                "{flag}: {item:?} is not one of {}",
                names.join(", ")
            )));
        }
    }
    Ok(())
}

/// Each item is nemeses joined by `+`, each one of `names`.
fn known_nemeses(flag: &str, items: &[String], names: &[&str]) -> Result<()> {
    for item in items {
        known(flag, &list(flag, item, '+')?, names)?;
    }
    Ok(())
}
