//! Links planted where lockpick writes, and stores another user could change.

use std::path::Path;

use super::{planted_then, Victim};
use crate::common::lockpick;

#[test]
fn links_planted_in_the_store_are_never_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new(dir.path());
    let v = victim.0.display().to_string();
    let store = dir.path().join("store");
    let s = store.display().to_string();
    std::fs::create_dir(&store).unwrap();
    let run = "run --lock redis --time-limit 3s --seed 5 --store";

    // A run folder of the group is planted as a link: refused, nothing made in its target.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, store.join("redis-none")).unwrap();
    let out = planted_then("true", &format!("{run} {s}"));
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a link"));
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    std::fs::remove_file(store.join("redis-none")).unwrap();

    // The index's old temporary name, the index itself, the latest links' old temporary
    // names, the group's latest link: all planted as links to root's file.
    let plants = [
        format!("ln -s {v} {s}/index.html.new-$$-ThreadId\\(1\\)"),
        format!("ln -s {v} {s}/index.html"),
        format!("ln -s {v} {s}/latest.new-$$-1"),
        format!("mkdir {s}/redis-none && ln -s {v} {s}/redis-none/latest"),
    ]
    .join(" && ");
    let out = planted_then(&plants, &format!("{run} {s}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    victim.untouched("a run's index and links");
    for file in ["index.html", "latest", "redis-none/latest"] {
        let meta = std::fs::symlink_metadata(store.join(file)).unwrap();
        assert!(file.contains("latest") || meta.is_file(), "{file}");
    }
    let run_dir = store.join("latest").canonicalize().unwrap();
    assert!(run_dir.starts_with(&store), "{run_dir:?}");

    // `lockpick report` over a run whose report and junit are links to root's file.
    for file in ["report.html", "junit.xml"] {
        std::fs::remove_file(run_dir.join(file)).unwrap();
        std::os::unix::fs::symlink(&victim.0, run_dir.join(file)).unwrap();
    }
    let out = lockpick().arg("report").arg(&run_dir).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    victim.untouched("lockpick report");
    for file in ["report.html", "junit.xml"] {
        assert!(std::fs::symlink_metadata(run_dir.join(file))
            .unwrap()
            .is_file());
    }
}

#[test]
fn a_store_another_user_could_change_is_refused() {
    use std::os::unix::fs::{chown, PermissionsExt};
    type Plant = fn(&Path);
    let cases: [(&str, Plant); 4] = [
        ("a store of another user's", |store| {
            chown(store, Some(65534), Some(65534)).unwrap()
        }),
        ("a store anyone can write in", |store| {
            std::fs::set_permissions(store, std::fs::Permissions::from_mode(0o777)).unwrap()
        }),
        ("a group folder of another user's", |store| {
            std::fs::create_dir(store.join("redis-none")).unwrap();
            chown(store.join("redis-none"), Some(65534), Some(65534)).unwrap();
        }),
        ("a group folder anyone can write in", |store| {
            std::fs::create_dir(store.join("redis-none")).unwrap();
            std::fs::set_permissions(
                store.join("redis-none"),
                std::fs::Permissions::from_mode(0o777),
            )
            .unwrap();
        }),
    ];
    for (name, plant) in cases {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("store");
        std::fs::create_dir(&store).unwrap();
        plant(&store);
        let before = std::fs::read_dir(&store).unwrap().count();
        let out = lockpick()
            .args(["run", "--lock", "redis", "--time-limit", "3s", "--store"])
            .arg(&store)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(254), "{name}: {stderr}");
        assert!(stderr.contains("--store"), "{name}: {stderr}");
        assert_eq!(std::fs::read_dir(&store).unwrap().count(), before, "{name}");
    }
}

#[test]
fn bench_works_in_a_folder_of_its_own_not_one_planted_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new(dir.path());
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let t = tmp.display().to_string();
    // The folder the bench once used, made beforehand with its empty history linked to root's
    // file.
    let plant = format!(
        "mkdir {t}/lockpick-bench-$$ && ln -s {} {t}/lockpick-bench-$$/empty.jsonl && export TMPDIR={t}",
        victim.0.display()
    );
    let out = planted_then(&plant, "bench checker --quick");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    victim.untouched("lockpick bench");
    // Its own folder is gone again; the planted one is left as it was.
    let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
    assert_eq!(left.len(), 1, "{left:?}");
}
