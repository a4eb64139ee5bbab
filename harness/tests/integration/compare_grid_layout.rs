//! `compare.html`'s grid at the size of the full matrix (5 locks × 2 fencing modes × 19
//! nemeses), laid out by headless Chromium in a 1400 px window: it must fit, without the page
//! scrolling sideways. The cells are drawn, not run: the grid's width depends only on its text,
//! and 190 real cells would take most of an hour.

use crate::common;

use std::path::{Path, PathBuf};

use common::dom;
use lockpick::compare::judge::cell::Cell;
use lockpick::report::summary_md::Counts;
use lockpick_checkers::Validity;

/// A cell for the layout test: drawn, not run (the grid's width depends only on its text).
fn drawn_cell(lock: &str, nemesis: &str, fencing: &str, verdict: Validity) -> Cell {
    use lockpick::compare::judge::cell::{CellName, Figures, Outcome};
    use lockpick::compare::plan::matrix::{CellExpectation, Expectation};
    let figures = Figures {
        verdict,
        counts: Counts {
            overlaps: 12,
            stale_writes: 3,
            ..Counts::default()
        },
        acquisitions: 40,
        p50_ms: Some(1.0),
        p99_ms: Some(9.0),
        unavailability: 0.1,
        unknown_reasons: Vec::new(),
        undecidable: 0,
        first_story: None,
        first_stale_write: None,
        first_grant_under_live_lease: None,
        first_story_short: None,
        first_stale_write_short: None,
        told: None,
        servers: "redis 7.0.15, netns".to_string(),
        decided_at: None,
        dir: PathBuf::from(format!("/store/{lock}-{nemesis}/20261201T000000.000Z")),
        command: Vec::new(),
        seed: 1,
        took: std::time::Duration::from_secs(10),
    };
    let expected = CellExpectation {
        expectations: vec![Expectation::Invalid],
        why: Some("known unsafe: a paused holder outlives its lease and writes after it".into()),
        at_least: None,
    };
    let name = CellName {
        lock: lock.to_string(),
        nemesis: nemesis.to_string(),
        fencing: fencing.to_string(),
    };
    Cell::new(name, &expected, vec![Outcome::Ran(Box::new(figures))])
}

#[test]
fn the_grid_fits_a_1400_px_screen_at_19_nemeses() {
    let nemeses: Vec<String> = lockpick::nemesis::names()
        .into_iter()
        .map(str::to_string)
        .chain(["none".to_string()])
        .collect();
    assert!(nemeses.len() >= 19, "{nemeses:?}");
    let mut cells = Vec::new();
    for lock in ["redis", "redlock", "rslock", "etcd", "zookeeper"] {
        for nemesis in &nemeses[..19] {
            for fencing in ["off", "on"] {
                let verdict = if nemesis.len() % 2 == 0 {
                    Validity::Invalid
                } else {
                    Validity::Valid
                };
                cells.push(drawn_cell(lock, nemesis, fencing, verdict));
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("compare.html");
    let html = lockpick::compare::outputs::page::render(
        &cells,
        1,
        Path::new("/store/compare/x"),
        &[],
        false,
    );
    std::fs::write(&page, html).unwrap();
    let facts = dom::facts(
        &page,
        r#"
        const grid = document.querySelector('table.grid');
        return { grid: grid.getBoundingClientRect().right, page: document.documentElement.scrollWidth,
                 window: window.innerWidth, cells: grid.querySelectorAll('td[title]').length,
                 transposed: grid.dataset.transposed };
        "#,
        1400,
    );
    assert_eq!(facts["cells"], 190, "{facts}");
    assert_eq!(
        facts["transposed"], "true",
        "19 nemeses outnumber 10 locks: {facts}"
    );
    let window = facts["window"].as_f64().unwrap();
    assert!(facts["grid"].as_f64().unwrap() <= window, "{facts}");
    assert!(
        facts["page"].as_f64().unwrap() <= window,
        "the page scrolls sideways: {facts}"
    );
    // Kept for a reviewer to look at.
    let shot = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("compare-grid-19-nemeses.png");
    common::chromium(
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1400,2400".to_string(),
        ],
    );
    assert!(std::fs::metadata(&shot).is_ok_and(|m| m.len() > 5_000));
}
