//! No verdict or judgement may depend on how many cells run at once: the example gate
//! (`examples/lockpick.toml` as it is: 10 cells of 10 s, seed 52) run one cell at a time and at
//! the automatic parallelism gives the same verdict and the same judgement in every cell, and
//! the same exit code. The automatic choice says why it was made, on the comparison's first
//! line and in `compare.json`. Counts may differ where a fault landed differently (the
//! `pause-holder` freeze reaches the holder a load-dependent moment after its acquire): the
//! test prints each drift with when the freeze landed, and asserts nothing about timings.

use crate::common;

use std::path::{Path, PathBuf};

use common::lockpick;
use serde_json::Value;

struct Gate {
    code: i32,
    stderr: String,
    json: Value,
    _store: tempfile::TempDir,
}

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/lockpick.toml")
}

fn gate(parallel: Option<&str>) -> Gate {
    let store = tempfile::tempdir().unwrap();
    let mut command = lockpick();
    command
        .arg("compare")
        .arg("--matrix")
        .arg(example())
        .arg("--store")
        .arg(store.path());
    if let Some(n) = parallel {
        command.args(["--parallel", n]);
    }
    let output = command.output().expect("lockpick runs");
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert!(
        store.path().join("compare").is_dir(),
        "no comparison written:\n{stderr}"
    );
    let json = common::compared::json(&common::compared::only_folder(store.path()));
    Gate {
        code: output.status.code().unwrap_or(-1),
        stderr,
        json,
        _store: store,
    }
}

impl Gate {
    fn cells(&self) -> &Vec<Value> {
        self.json["cells"].as_array().unwrap()
    }

    fn first_line(&self) -> &str {
        self.stderr.lines().next().unwrap_or("")
    }
}

fn name(cell: &Value) -> String {
    format!("{} × {}", cell["lock"], cell["nemesis"])
}

/// When each pause-holder freeze landed after the acquire that set it off, and whether the
/// holder had already written by then: what makes a stale-write count drift.
fn freezes(cell: &Value) -> Vec<String> {
    let Some(dir) = cell["dir"].as_str() else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(Path::new(dir).join("history.jsonl")) else {
        return Vec::new();
    };
    let ops: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut told = Vec::new();
    for start in ops
        .iter()
        .filter(|o| o["process"] == "nemesis" && o["f"] == "start")
    {
        let Some(acquisition) = start["value"]["trigger"]
            .as_str()
            .and_then(|t| t.strip_prefix("holder of acquisition "))
        else {
            continue;
        };
        let of = |f: &str, kind: &str| {
            ops.iter().find(|o| {
                o["f"] == f && o["type"] == kind && o["value"]["acquisition"] == acquisition
            })
        };
        let time = |o: Option<&Value>| o.and_then(|o| o["time"].as_u64());
        let (Some(acquired), Some(frozen)) = (time(of("acquire", "ok")), start["time"].as_u64())
        else {
            continue;
        };
        let wrote_first = time(of("write", "invoke")).is_some_and(|w| w < frozen);
        told.push(format!(
            "acquisition {acquisition} frozen {:.1} ms after its acquire, {}",
            frozen.saturating_sub(acquired) as f64 / 1e6,
            if wrote_first {
                "after its write (no stale write can follow)"
            } else {
                "before its write"
            }
        ));
    }
    told
}

#[test]
fn the_example_gate_judges_every_cell_alike_one_at_a_time_and_at_the_automatic_parallelism() {
    let automatic = gate(None);
    let one = gate(Some("1"));
    let shown = |g: &Gate| format!("exit {}\n{}", g.code, g.stderr);

    // The choice and its reason: on the first line, and kept in compare.json.
    let first = automatic.first_line();
    assert!(
        first.starts_with("lockpick compare: 10 cells (0 n/a), seed 52, ")
            && first.contains(" at a time (automatic: ")
            && first.contains("core(s) each cell keeps busy while it contends")
            && first.contains("take turns at the start-up gate"),
        "{first}"
    );
    let chosen = &automatic.json["parallelism"];
    assert_eq!(chosen["automatic"], true, "{chosen}");
    assert!(chosen["at_once"].as_u64().unwrap() >= 1, "{chosen}");
    assert!(
        first.contains(&format!("{} at a time", chosen["at_once"])),
        "{first} / {chosen}"
    );
    assert!(
        first.contains(chosen["reason"].as_str().unwrap()),
        "{first}"
    );
    let given = &one.json["parallelism"];
    assert_eq!(
        (&given["at_once"], &given["automatic"], &given["reason"]),
        (
            &Value::from(1),
            &Value::from(false),
            &Value::from("--parallel 1")
        ),
        "{given}"
    );
    assert!(
        one.first_line().ends_with("1 at a time (--parallel 1)"),
        "{}",
        one.first_line()
    );

    // The same gate either way, cell by cell.
    assert_eq!(
        automatic.code,
        one.code,
        "{}\n{}",
        shown(&automatic),
        shown(&one)
    );
    assert_eq!(automatic.code, 0, "{}", shown(&automatic));
    assert_eq!(automatic.cells().len(), 10);
    assert_eq!(one.cells().len(), 10);
    for (a, b) in automatic.cells().iter().zip(one.cells()) {
        assert_eq!(name(a), name(b));
        for key in ["verdict", "judgement", "expected"] {
            assert_eq!(
                a[key],
                b[key],
                "{} {key}: {} against {}",
                name(a),
                a[key],
                b[key]
            );
        }
        if a["counts"] != b["counts"] {
            eprintln!(
                "{}: counts drift: {} (automatic) against {} (one at a time); freezes: {:?} \
                 against {:?}",
                name(a),
                a["counts"],
                b["counts"],
                freezes(a),
                freezes(b)
            );
        }
    }
}
