//! `lockpick compare --repeat N` on real servers: every cell runs N times, each repeat with its
//! own seed derived from the matrix seed (the first is the seed itself) and printed; "invalid"
//! holds only when every repeat found a violation, unless the group says `at-least = k`, and
//! "valid" must hold in every repeat; the grid, summary.md and junit.xml say "invalid 3/3".

use crate::common;

use std::path::PathBuf;

use common::lockpick;
use serde_json::Value;

/// Cells short enough to repeat: 4 s, 2 clients, a 500 ms lease paused for 1 s.
const MATRIX: &str = r#"
locks = ["redis"]
nemeses = ["none", "pause-holder"]
fencing = ["off"]
seed = 71
parallel = 2
repeat = 3

[knobs]
time-limit = "4s"
clients = 2
ttl = "500ms"
fault-duration = "1s"
fault-interval = "500ms"
quiet = "500ms"

[[expect]]
nemeses = ["pause-holder"]
expect = "invalid"
"#;

struct Compared {
    code: i32,
    stderr: String,
    dir: PathBuf,
    _store: tempfile::TempDir,
}

fn compare(matrix: &str, args: &[&str]) -> Compared {
    let store = tempfile::tempdir().unwrap();
    let file = store.path().join("lockpick.toml");
    std::fs::write(&file, matrix).unwrap();
    let output = lockpick()
        .arg("compare")
        .arg("--matrix")
        .arg(&file)
        .args(args)
        .arg("--store")
        .arg(store.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let dir = std::fs::read_dir(store.path().join("compare"))
        .unwrap_or_else(|e| panic!("no comparison ({e}): {stderr}"))
        .next()
        .unwrap()
        .unwrap()
        .path();
    Compared {
        code: output.status.code().unwrap_or(-1),
        stderr,
        dir,
        _store: store,
    }
}

#[test]
fn every_repeat_has_its_own_seed_and_invalid_must_show_in_each() {
    let c = compare(MATRIX, &[]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(c.dir.join("compare.json")).unwrap())
            .unwrap();
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    let mut seeds = Vec::new();
    for cell in cells {
        let repeats = cell["repeats"].as_array().expect("the repeats of the cell");
        assert_eq!(repeats.len(), 3, "{cell}");
        let these: Vec<u64> = repeats
            .iter()
            .map(|r| r["seed"].as_u64().unwrap())
            .collect();
        assert_eq!(these[0], 71, "the first repeat uses the matrix seed");
        assert!(these[1] != these[0] && these[2] != these[1], "{these:?}");
        seeds = these;
        // Each repeat is a run of its own, in the store.
        for r in repeats {
            assert!(PathBuf::from(r["dir"].as_str().unwrap())
                .join("results.json")
                .exists());
        }
    }
    let printed: Vec<String> = seeds.iter().map(|s| s.to_string()).collect();
    assert!(
        c.stderr.contains(&printed.join(", ")),
        "seeds not printed: {}",
        c.stderr
    );
    let paused = &cells[1];
    assert_eq!(paused["judgement"], "holds", "{paused}");
    let summary = std::fs::read_to_string(c.dir.join("summary.md")).unwrap();
    // A known-unsafe cell that showed its violation in every repeat held its expectation.
    assert!(summary.contains("✅ invalid 3/3"), "{summary}");
    assert!(summary.contains("✅ valid 3/3"), "{summary}");
    let table = std::fs::read_to_string(c.dir.join("compare.md")).unwrap();
    assert!(table.contains("| invalid 3/3 |"), "{table}");
    let junit = std::fs::read_to_string(c.dir.join("junit.xml")).unwrap();
    assert!(junit.contains(r#"value="invalid 3/3""#), "{junit}");

    // Expecting a violation where none can be found breaks in every repeat; "at-least" does
    // not save a cell whose repeats all came out valid.
    let never = MATRIX.replace(
        "nemeses = [\"pause-holder\"]\nexpect = \"invalid\"",
        "nemeses = [\"none\"]\nexpect = \"invalid\"\nat-least = 1",
    );
    let c = compare(&never, &["--nemeses", "none", "--repeat", "2"]);
    assert_eq!(c.code, 1, "{}", c.stderr);
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(c.dir.join("compare.json")).unwrap())
            .unwrap();
    let why = json["cells"][0]["why"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        why.contains("at least 1 of 2 repeats, found invalid in 0"),
        "{why}"
    );
}

#[test]
fn a_bad_repeat_or_at_least_is_refused_in_one_line() {
    for (matrix, args, says) in [
        (MATRIX.to_string(), vec!["--repeat", "0"], "--repeat 0"),
        (
            MATRIX.replace("expect = \"invalid\"", "expect = \"invalid\"\nat-least = 4"),
            vec![],
            "at-least = 4",
        ),
        (
            MATRIX.replace("expect = \"invalid\"", "expect = \"valid\"\nat-least = 1"),
            vec![],
            "needs expect = \"invalid\"",
        ),
    ] {
        let store = tempfile::tempdir().unwrap();
        let file = store.path().join("lockpick.toml");
        std::fs::write(&file, matrix).unwrap();
        let out = lockpick()
            .arg("compare")
            .arg("--matrix")
            .arg(&file)
            .args(&args)
            .arg("--store")
            .arg(store.path().join("store"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(254), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!store.path().join("store").exists(), "nothing is made");
    }
}
