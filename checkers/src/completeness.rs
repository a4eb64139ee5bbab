//! Whether a history proves enough to be called valid. A history that shows no violation is
//! valid only when it was exercised and is complete: it holds operations, its final read, every
//! access record up to the highest number seen, at least two different holders, and evidence
//! that every nemesis asked for took effect. Otherwise the verdict is unknown, with one line per
//! reason. A violation the history does prove stays invalid: a partial history proves what it
//! shows.

use serde::{Deserialize, Serialize};

use crate::model::Model;
use crate::verdict::Validity;

/// The final read compared with the history: the resource had applied `applied` accesses and
/// the history records `recorded` of them; the last of them left `last_value`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FinalReadCheck {
    pub valid: Validity,
    pub applied: u64,
    pub recorded: u64,
    pub value: i64,
    pub last_value: Option<i64>,
}

impl FinalReadCheck {
    pub fn of(model: &Model) -> Option<FinalReadCheck> {
        let state = model.final_state.as_ref()?;
        // Accesses the resource had applied by the final read are numbered 1 to `applied`;
        // a write held in a delay proxy may still land after it, with a higher number.
        // Accesses are sorted by their unique `seq` (as `last_value` below relies on too): the
        // count is a search, not a walk over every access.
        let recorded = model.accesses.partition_point(|a| a.seq <= state.applied) as u64;
        let last_value = model
            .accesses
            .binary_search_by_key(&state.applied, |a| a.seq)
            .ok()
            .map(|i| model.accesses[i].value);
        // Missing records mean the history cannot vouch for what it lacks: unknown, never
        // invalid (the accesses it does hold were still judged).
        let consistent = state.applied == recorded && last_value.is_none_or(|v| v == state.value);
        Some(FinalReadCheck {
            valid: if consistent {
                Validity::Valid
            } else {
                Validity::Unknown
            },
            applied: state.applied,
            recorded,
            value: state.value,
            last_value,
        })
    }
}

/// Why the history cannot be called valid, one line each; empty when it can.
pub fn unknown_reasons(model: &Model, final_read: Option<&FinalReadCheck>) -> Vec<String> {
    let setup_lines = usize::from(model.setup.is_some());
    if model.operations <= setup_lines {
        return vec!["the history holds no operations".to_string()];
    }
    let mut reasons = Vec::new();
    match (&model.final_read_error, final_read) {
        (Some(error), _) => {
            reasons.push(format!("the resource died: its final read failed: {error}"))
        }
        (None, None) => reasons.push("the run ended before its final read".to_string()),
        (None, Some(check)) => {
            if let Some(last) = check.last_value.filter(|v| *v != check.value) {
                reasons.push(format!(
                    "the final read saw value {} but the last recorded access left {last}",
                    check.value
                ));
            }
        }
    }
    if let Some(end) = &model.run_end {
        if !end.crashed_clients.is_empty() {
            reasons.push(format!(
                "{} client(s) crashed or hung: the lock was not exercised as configured",
                end.crashed_clients.len()
            ));
        }
        if end.interrupted {
            reasons.push("the run was interrupted: the history is partial".to_string());
        }
        if !end.test_hooks.is_empty() {
            reasons.push(format!(
                "a test hook was in effect ({}): the run is not the one its setup describes",
                end.test_hooks.join(", ")
            ));
        }
    }
    if model.foreign_accesses > 0 {
        reasons.push(format!(
            "the resource refused {} request(s) from outside lockpick's workers (the first from \
             {}): something else reached it during the run",
            model.foreign_accesses,
            model.first_foreign.as_deref().unwrap_or("?")
        ));
    }
    reasons.extend(missing_records(model));
    reasons.extend(holders(model));
    reasons.extend(nemeses(model));
    reasons
}

/// Access records missing between 1 and the highest number the history or the final read knows.
fn missing_records(model: &Model) -> Option<String> {
    let applied = model.final_state.as_ref().map_or(0, |s| s.applied);
    let highest = model.accesses.last().map_or(0, |a| a.seq).max(applied);
    let mut missing = Vec::new();
    let mut count = 0u64;
    let mut expected = 1;
    // Accesses are sorted by their unique seq, so the gaps are found in one walk.
    for seq in model.accesses.iter().map(|a| a.seq).chain([highest + 1]) {
        if seq < expected {
            continue;
        }
        count += seq - expected;
        missing.extend((expected..seq).take(5usize.saturating_sub(missing.len())));
        expected = seq + 1;
    }
    let listed: Vec<String> = missing.iter().map(u64::to_string).collect();
    match count {
        0 => None,
        1 => Some(format!("access record {} is missing", listed[0])),
        n if n as usize == listed.len() => {
            Some(format!("access records {} are missing", listed.join(", ")))
        }
        n => Some(format!(
            "access records {} and {} more are missing ({n} of {highest})",
            listed.join(", "),
            n - listed.len() as u64
        )),
    }
}

/// Mutual exclusion is only exercised when at least two different clients held the lock. When
/// they did not, what the clients said when their acquires did not succeed says why.
fn holders(model: &Model) -> Option<String> {
    // Two different clients end the question at the first hold of a second one: a walk that
    // stops there, not a set of every holder (a search per hold).
    let first = model.holds.first().map(|h| h.process);
    let reason = match first {
        None => "no client ever held the lock".to_string(),
        Some(only) if model.holds.iter().all(|h| h.process == only) => {
            format!("only client {only} ever held the lock")
        }
        Some(_) => return None,
    };
    Some(match model.acquire_errors.words() {
        Some(said) => format!("{reason}; {said}"),
        None => reason,
    })
}

/// Every nemesis the setup asked for must have started a fault that was not seen to fail. An
/// older history names no nemesis on its start lines: then any start line will do.
fn nemeses(model: &Model) -> Vec<String> {
    let Some(setup) = &model.setup else {
        return Vec::new();
    };
    let names = setup.nemeses();
    if names.is_empty() {
        return Vec::new();
    }
    let tagged = model.faults.iter().any(|w| w.nemesis.is_some());
    if !tagged {
        return if model.faults.is_empty() {
            vec![format!(
                "the nemesis {} never took effect{}",
                names.join("+"),
                why_not_aimed(setup, &names)
            )]
        } else {
            Vec::new()
        };
    }
    names
        .into_iter()
        .filter(|name| {
            !model
                .faults
                .iter()
                .any(|w| w.nemesis.as_deref() == Some(*name) && w.effective == Some(true))
        })
        .map(|name| {
            let why = why_not_aimed(setup, &[name]);
            format!("the nemesis {name} never took effect{why}")
        })
        .collect()
}

/// What a client program must say for `clock-holder` to aim at anything: it jumps the servers
/// a grant names, and a program names them only in its acquire's `granted_by`.
fn why_not_aimed(setup: &crate::model::Setup, names: &[&str]) -> &'static str {
    if setup.lock.starts_with("exec:") && names.contains(&"clock-holder") {
        " (it aims at the servers a grant names, and a client program names them only in its \
         acquire's `granted_by`)"
    } else {
        ""
    }
}
