use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::compare::judge::cell::{CellName, Figures, Outcome};
use crate::compare::plan::matrix::{CellExpectation, Expectation};
use crate::compare::shrink_cells::CellShrink;

/// A cell as a finished run would give it; `broken` when it is expected valid but is invalid.
fn cell(lock: &str, nemesis: &str, broken: bool) -> Cell {
    let long_story = (0..30)
        .map(|i| {
            format!("client {i} acquired the lock (token {i}, acquisition {i}.1) at 1.{i:03} s")
        })
        .collect::<Vec<_>>()
        .join(" → ");
    let figures = Figures {
        verdict: Validity::Invalid,
        counts: Counts {
            overlaps: 4,
            stale_writes: 1,
            ..Counts::default()
        },
        acquisitions: 40,
        p50_ms: None,
        p99_ms: None,
        unavailability: 0.0,
        unknown_reasons: Vec::new(),
        undecidable: 0,
        first_story: Some(long_story),
        first_stale_write: None,
        first_grant_under_live_lease: None,
        first_story_short: Some(
            "client 0 acquired the lock → (5 more) → !! client 0 wrote: accepted".to_string(),
        ),
        first_stale_write_short: None,
        told: None,
        servers: "redis 7.0.15, netns".to_string(),
        decided_at: None,
        dir: PathBuf::from(format!("/store/{lock}-{nemesis}/20261201T000000.000Z")),
        command: Vec::new(),
        seed: 1,
        took: Duration::from_secs(10),
    };
    let expected = CellExpectation {
        expectations: vec![if broken {
            Expectation::Valid
        } else {
            Expectation::Invalid
        }],
        why: Some("known answers of the field, said at some length for the test".to_string()),
        at_least: None,
    };
    let name = CellName {
        lock: lock.to_string(),
        nemesis: nemesis.to_string(),
        fencing: "on".to_string(),
    };
    Cell::new(name, &expected, vec![Outcome::Ran(Box::new(figures))])
}

fn summary(cells: &[Cell], links: &Links) -> String {
    Summary {
        cells,
        seed: 1,
        notes: &[],
        interrupted: false,
        dir: Path::new("/store/compare/x"),
        links,
        shrinks: &[],
    }
    .render()
}

#[test]
fn a_summary_stays_under_the_limit_at_any_size_broken_cells_first() {
    let links = Links::new(
        Some("https://ci.example/a/very/long/artifact/path/of/the/store"),
        Path::new("/store"),
        |_| None,
    );
    // (cells, one in how many broken): the example matrix, the full one, far beyond.
    for (count, every) in [(10, 3), (190, 40), (2_000, 3)] {
        let cells: Vec<Cell> = (0..count)
            .map(|i| {
                cell(
                    &format!("lock{}", i / 19),
                    &format!("nemesis{}", i % 19),
                    i % every == 0,
                )
            })
            .collect();
        let md = summary(&cells, &links);
        assert!(
            md.chars().count() < LIMIT,
            "{count} cells: {} chars",
            md.len()
        );
        let broken = cells.iter().filter(|c| c.state() == State::Broken).count();
        assert!(
            md.contains(&format!("### ❌ Broken: off their expectation ({broken})")),
            "{count}"
        );
        let first_item = md.find("- **").unwrap();
        assert!(first_item < md.find("### The grid").unwrap_or(usize::MAX));
        if count == 2_000 {
            assert!(
                md.contains("Not shown, to fit a comment:"),
                "{}",
                &md[md.len() - 600..]
            );
            assert!(md.contains("more broken cells"), "the rest are counted");
        } else {
            assert!(
                !md.contains("Not shown"),
                "{count} cells fit whole: {} chars, {}",
                md.len(),
                &md[md.find("Not shown").unwrap_or(0)..]
            );
        }
        // The short story, not the full one, stands beside a broken cell.
        assert!(md.contains("(5 more) → !! client 0 wrote"), "{count}");
        assert!(!md.contains("client 29 acquired"), "{count}");
    }
}

#[test]
fn links_go_to_the_base_or_nowhere() {
    let cells = [
        cell("redis", "pause-holder", true),
        cell("etcd", "none", false),
    ];
    let none = Links::new(None, Path::new("/store"), |_| None);
    let md = summary(&cells, &none);
    assert!(!md.contains("]("), "no links without a base: {md}");
    assert!(md.contains("`compare/x/compare.html` in the store"), "{md}");
    let based = Links::new(Some("https://ci.example/s"), Path::new("/store"), |_| None);
    let md = summary(&cells, &based);
    assert!(md.contains(
        "[❌ **invalid**](https://ci.example/s/redis-pause-holder/20261201T000000.000Z/report.html)"
    ));
    assert!(md.contains("[compare.html](https://ci.example/s/compare/x/compare.html)"));
    assert!(
        md.contains("✅ invalid"),
        "an expected failure is held: {md}"
    );
    assert!(md.starts_with("## lockpick compare: gate FAILED: 1 cell off its expectation"));
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn a_broken_cell_offers_its_reproduction_and_its_shrink_by_paths_within_the_store() {
    let mut broken = cell("redis", "pause-holder", true);
    if let Outcome::Ran(f) = &mut broken.outcome {
        f.command =
            words("lockpick run --lock redis --nemesis pause-holder --seed 1 --store /store");
    }
    let cells = [broken.clone(), cell("etcd", "pause-holder", false)];
    let none = Links::new(None, Path::new("/store"), |_| None);
    let text = summary(&cells, &none);
    let run = "redis-pause-holder/20261201T000000.000Z";
    assert!(
        text.contains(&format!(
            "  - reproduce with `lockpick run --lock redis --nemesis pause-holder --seed 1 \
             --schedule {run}/schedule.json`\n"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("  - shrink with `lockpick shrink {run}`\n")),
        "{text}"
    );
    // A held cell offers neither.
    assert_eq!(text.matches("reproduce with").count(), 1, "{text}");

    let shrunk = crate::shrink::Shrunk {
        dir: PathBuf::from("/store/shrink/T"),
        schedule: PathBuf::from("/store/shrink/T/schedule.json"),
        command: words(
            "lockpick run --lock redis --clients 2 --schedule /store/shrink/T/schedule.json",
        ),
        from: "8 windows from 0.50 s, 5 clients, 30s".to_string(),
        to: "1 window from 1.47 s, 2 clients, 4500ms".to_string(),
        confirmed: Some((2, 3)),
        runs: 7,
        seconds: 41.2,
        stopped: None,
    };
    let shrinks = [CellShrink {
        name: broken.name.clone(),
        outcome: Ok(shrunk),
    }];
    let linked = Links::new(
        Some("https://ci.example/store"),
        Path::new("/store"),
        |_| None,
    );
    let text = Summary {
        cells: &cells,
        seed: 1,
        notes: &[],
        interrupted: false,
        dir: Path::new("/store/compare/x"),
        links: &linked,
        shrinks: &shrinks,
    }
    .render();
    assert!(
        text.contains(
            "  - shrunk from 8 windows from 0.50 s, 5 clients, 30s to 1 window from 1.47 s, 2 \
             clients, 4500ms: failed 2 of 3 replays, in 7 runs, 41 s; replay with `lockpick run \
             --lock redis --clients 2 --schedule shrink/T/schedule.json` \
             ([schedule.json](https://ci.example/store/shrink/T/schedule.json))\n"
        ),
        "{text}"
    );
    assert!(!text.contains("shrink with"), "{text}");
}
