//! A user's own client and lockpick's client of the same algorithm, side by side in one
//! `lockpick compare`: the same verdict under each nemesis.

use crate::common;

use common::lockpick;
use serde_json::Value;

#[test]
fn compare_shows_a_users_client_beside_ours_with_the_same_verdicts() {
    let program = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/python-redis/lock_client.py")
        .canonicalize()
        .unwrap();
    let exec = format!("exec:redis:{}", program.display());
    let store = tempfile::tempdir().unwrap();
    let output = lockpick()
        .args(["compare", "--locks", &format!("redis,{exec}")])
        .args(["--nemeses", "none,pause-holder", "--fencing", "off"])
        .args(["--seed", "36", "--time-limit", "6s", "--clients", "3"])
        .args([
            "--ttl",
            "1s",
            "--fault-duration",
            "2500ms",
            "--fault-interval",
            "500ms",
        ])
        .args(["--parallel", "2", "--store"])
        .arg(store.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Without a matrix, an invalid cell makes the comparison exit 1.
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    let dir = std::fs::read_dir(store.path().join("compare"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("compare.json")).unwrap()).unwrap();
    let cells = json["cells"].as_array().expect("cells");
    assert_eq!(cells.len(), 4, "{json}");
    for (nemesis, expected) in [("none", "valid"), ("pause-holder", "invalid")] {
        let verdicts: Vec<&str> = cells
            .iter()
            .filter(|c| c["nemesis"] == nemesis)
            .map(|c| c["verdict"].as_str().unwrap_or("?"))
            .collect();
        assert_eq!(verdicts, [expected, expected], "{nemesis}: {json}");
    }
}
