//! `--server-bin` in the namespace runtime: the servers run the named build, and the results
//! name that build and the version it reports.

use crate::common;

use std::os::unix::fs::PermissionsExt;

use common::{refused, run_line, Run};

/// The redis-server the default run finds on the PATH.
fn installed_redis_server() -> String {
    let output = std::process::Command::new("sh")
        .args(["-c", "command -v redis-server"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

fn setup_line(run: &Run) -> serde_json::Value {
    run.history()[0]["value"].clone()
}

#[test]
fn each_run_names_the_redis_server_it_ran_and_its_version() {
    let installed = installed_redis_server();
    assert!(!installed.is_empty(), "redis-server is not installed");
    // Another build of redis-server: a wrapper that notes each way it is called, then runs
    // the installed server, so the test sees that the servers (not only the version probe) ran
    // it.
    let folder = tempfile::tempdir().unwrap();
    let calls = folder.path().join("calls");
    let wrapper = folder.path().join("redis-server-wrapped");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$@\" >> {}\nexec {installed} \"$@\"\n",
            calls.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();

    let default = run_line("--lock redis --time-limit 3s --clients 2");
    let wrapped = run_line(&format!(
        "--lock redis --time-limit 3s --clients 2 --server-bin redis={}",
        wrapper.display()
    ));
    for run in [&default, &wrapped] {
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    }

    let bins = |run: &Run| run.results["run"]["server_bins"]["redis"].clone();
    assert_eq!(bins(&default), installed.as_str());
    assert_eq!(bins(&wrapped), wrapper.to_str().unwrap());
    for run in [&default, &wrapped] {
        assert_eq!(setup_line(run)["server_bins"]["redis"], bins(run));
    }

    let version = |run: &Run| {
        run.results["run"]["server_versions"]["redis"]
            .as_str()
            .unwrap_or_else(|| panic!("no redis version in {}", run.results["run"]))
            .to_string()
    };
    assert!(version(&default).starts_with(|c: char| c.is_ascii_digit()));
    // The wrapper runs the same build, so it reports the same version.
    assert_eq!(version(&wrapped), version(&default));

    let calls = std::fs::read_to_string(&calls).unwrap();
    assert!(
        calls.lines().any(|l| l.contains("--bind")),
        "no server ran through the wrapper:\n{calls}"
    );
    assert!(
        calls.lines().any(|l| l.trim() == "--version"),
        "the version was not asked of the wrapper:\n{calls}"
    );

    // The report names both.
    let page = std::fs::read_to_string(wrapped.dir.join("report.html")).unwrap();
    assert!(
        page.contains(wrapper.to_str().unwrap()),
        "report lacks the binary"
    );
    assert!(
        page.contains(&version(&wrapped)),
        "report lacks the version"
    );
}

#[test]
fn a_bad_server_bin_is_refused() {
    let missing = refused("--lock redis --server-bin redis=/no/such/redis-server");
    assert!(missing.contains("--server-bin"), "{missing}");
    assert_eq!(missing.trim().lines().count(), 1, "{missing}");
    let unknown = refused("--lock redis --server-bin mysql=/bin/sh");
    assert!(unknown.contains("--server-bin mysql"), "{unknown}");
    let not_executable = refused("--lock etcd --server-bin etcd=/etc/debian_version");
    assert!(
        not_executable.contains("not an executable"),
        "{not_executable}"
    );
    let docker = refused("--lock redis --runtime docker --server-bin redis=/bin/sh");
    assert!(docker.contains("--server-bin"), "{docker}");
}

#[test]
fn compare_passes_server_bin_to_every_cell_and_names_it_in_the_table() {
    let installed = installed_redis_server();
    let folder = tempfile::tempdir().unwrap();
    let copy = folder.path().join("redis-server-copy");
    std::fs::copy(&installed, &copy).unwrap();
    let store = folder.path().join("store");
    let output = common::lockpick()
        .args([
            "compare",
            "--locks",
            "redis",
            "--nemeses",
            "none",
            "--fencing",
            "off",
        ])
        .args(["--time-limit", "2s", "--clients", "2"])
        .arg("--server-bin")
        .arg(format!("redis={}", copy.display()))
        .arg("--store")
        .arg(&store)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let compare = std::fs::read_dir(store.join("compare"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let table = std::fs::read_to_string(compare.join("compare.md")).unwrap();
    assert!(table.contains("| servers |"), "{table}");
    let row = table
        .lines()
        .find(|l| l.starts_with("| redis | none |"))
        .unwrap_or_else(|| panic!("no redis row in {table}"));
    let cell = store.join("redis-none/latest/results.json");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cell).unwrap()).unwrap();
    assert_eq!(
        results["run"]["server_bins"]["redis"],
        copy.to_str().unwrap()
    );
    let version = results["run"]["server_versions"]["redis"].as_str().unwrap();
    let named = format!("| redis {version} {}, netns |", copy.display());
    assert!(row.ends_with(&named), "{row} does not end with {named}");
}
