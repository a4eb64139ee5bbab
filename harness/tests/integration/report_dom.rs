//! The report as a reader gets it: real Redis and fenced etcd runs under `pause-holder`, their
//! `report.html` rendered by headless Chromium, and the rendered DOM read back. Every client
//! has a lane, holds are separate elements, every fault window names its targets in the
//! drawing, the charts span the timeline's time range, and the headline names the overlaps'
//! cause and what the fence did.
//!
//! The runs are kept in `target/tmp/report_dom/<lock>/` with a screenshot of each report
//! (`report.png`, in the run's folder) for a reviewer to look at.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;

use common::{chromium, Run};
use quick_xml::events::Event;
use serde_json::Value;

/// One element of the rendered page.
#[derive(Debug, Default)]
struct Element {
    attrs: HashMap<String, String>,
    /// Its own text and that of everything inside it.
    text: String,
    parent: Option<usize>,
}

impl Element {
    fn classes(&self) -> Vec<&str> {
        self.attrs
            .get("class")
            .map_or(Vec::new(), |c| c.split_whitespace().collect())
    }

    fn has_class(&self, class: &str) -> bool {
        self.classes().contains(&class)
    }

    fn number(&self, attr: &str) -> f64 {
        self.attrs[attr].parse().unwrap()
    }
}

/// The page's body, as a flat list of elements in document order.
struct Dom(Vec<Element>);

impl Dom {
    fn parse(dump: &str) -> Dom {
        let body = &dump[dump.find("<body").expect("a body")..];
        let body = &body[..body.rfind("</body>").expect("a closed body") + 7];
        // The one script holds no markup worth reading and is not XML.
        let body = match (body.find("<script"), body.find("</script>")) {
            (Some(a), Some(b)) => format!("{}{}", &body[..a], &body[b + 9..]),
            _ => body.to_string(),
        };
        let mut reader = quick_xml::Reader::from_str(&body);
        reader.config_mut().check_end_names = false;
        let mut elements: Vec<Element> = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        loop {
            let event = reader.read_event().expect("the rendered body reads as XML");
            match event {
                Event::Start(ref e) | Event::Empty(ref e) => {
                    let mut element = Element {
                        parent: open.last().copied(),
                        ..Element::default()
                    };
                    for a in e.attributes().flatten() {
                        element.attrs.insert(
                            String::from_utf8_lossy(a.key.as_ref()).to_string(),
                            String::from_utf8_lossy(&a.value).to_string(),
                        );
                    }
                    elements.push(element);
                    if matches!(event, Event::Start(_)) {
                        open.push(elements.len() - 1);
                    }
                }
                Event::Text(t) => {
                    let text = String::from_utf8_lossy(&t).to_string();
                    for i in &open {
                        elements[*i].text.push_str(&text);
                    }
                }
                Event::End(_) => {
                    open.pop();
                }
                Event::Eof => return Dom(elements),
                _ => {}
            }
        }
    }

    fn by_id(&self, id: &str) -> usize {
        let found = self
            .0
            .iter()
            .position(|e| e.attrs.get("id").is_some_and(|i| i == id));
        found.unwrap_or_else(|| panic!("no #{id}"))
    }

    /// Whether element `i` lies inside element `ancestor`.
    fn within(&self, mut i: usize, ancestor: usize) -> bool {
        while let Some(parent) = self.0[i].parent {
            if parent == ancestor {
                return true;
            }
            i = parent;
        }
        false
    }

    /// The elements with `class` inside element `ancestor`, by index.
    fn with_class(&self, ancestor: usize, class: &str) -> Vec<usize> {
        (0..self.0.len())
            .filter(|i| self.0[*i].has_class(class) && self.within(*i, ancestor))
            .collect()
    }
}

/// Runs `lockpick run` with `flags` in this test's own folder, kept after the test.
fn kept_run(name: &str, flags: &str) -> Run {
    let folder = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("report_dom")
        .join(name);
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    let args: Vec<&str> = flags.split_whitespace().collect();
    common::run(&folder, &args)
}

/// Renders the run's report, keeps a screenshot in the run's folder, and checks what every
/// report must show; returns the headline's text.
fn rendered_report(run: &Run, clients: u64) -> String {
    let report = run.dir.join("report.html");
    let screenshot = run.dir.join("report.png");
    let shot = chromium(
        &report,
        &[
            format!("--screenshot={}", screenshot.display()),
            "--window-size=1400,2000".to_string(),
        ],
    );
    assert!(
        screenshot.exists(),
        "no screenshot: {}",
        String::from_utf8_lossy(&shot.stderr)
    );
    eprintln!("screenshot: {}", screenshot.display());
    let dump = chromium(&report, &["--dump-dom".to_string()]);
    let dump = String::from_utf8_lossy(&dump.stdout).to_string();
    assert!(
        dump.contains("data-rendered=\"ok\""),
        "the page did not finish rendering"
    );
    assert!(!dump.contains("data-error"), "a script error happened");
    let dom = Dom::parse(&dump);
    let history = run.history();

    // Every client has a lane, holder or not.
    let timeline = dom.by_id("timeline");
    let lanes: BTreeSet<u64> = dom
        .with_class(timeline, "lane")
        .into_iter()
        .map(|i| dom.0[i].attrs["data-client"].parse().unwrap())
        .collect();
    assert_eq!(lanes, (0..clients).collect(), "a lane per client");

    // Each hold is its own bar, with a gap before the next one of its client.
    let mut holds = 0;
    for lane in dom.with_class(timeline, "lane") {
        let mut bars: Vec<(f64, f64)> = dom
            .with_class(lane, "hold")
            .into_iter()
            .map(|i| (dom.0[i].number("x"), dom.0[i].number("width")))
            .collect();
        bars.sort_by(|a, b| a.0.total_cmp(&b.0));
        for pair in bars.windows(2) {
            assert!(pair[0].0 + pair[0].1 < pair[1].0, "bars touch: {pair:?}");
        }
        holds += bars.len() as u64;
        assert!(
            dom.with_class(lane, "hold-run").is_empty(),
            "a short run merges nothing"
        );
    }
    assert_eq!(holds, run.holds(), "one bar per hold");

    // Every fault window is drawn, and names its targets in the drawing.
    let starts: Vec<&Value> = history
        .iter()
        .filter(|op| op["process"] == "nemesis" && op["f"] == "start")
        .collect();
    let windows = dom.with_class(timeline, "fault-window");
    assert_eq!(windows.len(), starts.len(), "a window per fault");
    assert!(!windows.is_empty(), "pause-holder froze someone");
    for (window, start) in windows.iter().zip(&starts) {
        let labels = dom.with_class(*window, "fault-label");
        assert_eq!(labels.len(), 1);
        let label = &dom.0[labels[0]].text;
        for target in start["value"]["targets"].as_array().unwrap() {
            let target = target.as_str().unwrap();
            assert!(label.contains(target), "{label:?} names {target}");
        }
    }

    // The charts run over the timeline's time range, on the same plot area, to the history's
    // last operation.
    let range = |id: &str| {
        let e = &dom.0[dom.by_id(id)];
        ["data-start", "data-end", "data-x0", "data-x1"].map(|a| e.attrs[a].clone())
    };
    let last = history
        .iter()
        .filter_map(|op| op["time"].as_u64())
        .max()
        .unwrap();
    assert_eq!(range("timeline")[1], last.to_string());
    assert_eq!(range("latency"), range("timeline"));
    assert_eq!(range("throughput"), range("timeline"));

    dom.0[dom.by_id("headline")].text.clone()
}

/// The phrase the headline uses for each overlap cause class that the verdict counted.
fn assert_names_causes(headline: &str, results: &Value) {
    let o = &results["overlapping_holders"];
    assert!(
        o["overlaps"].as_array().is_some_and(|a| !a.is_empty()),
        "no overlap: {o}"
    );
    for (class, phrase) in [
        ("outlived_lease", "outlived its lease"),
        (
            "granted_under_live_lease",
            "while the earlier lease was still live",
        ),
        ("lost_in_failover", "lost in a failover"),
        ("undecidable", "undecidable cause"),
    ] {
        if o[class].as_u64().unwrap_or(0) > 0 {
            assert!(headline.contains(phrase), "{class}: {headline}");
        }
    }
}

#[test]
fn a_redis_pause_holder_report_shows_every_client_fault_and_cause() {
    let flags = "--lock redis --nemesis pause-holder --time-limit 6s --clients 3 --seed 61";
    let run = kept_run("redis", flags);
    assert_eq!(run.valid(), "invalid", "{}", run.stdout);
    let headline = rendered_report(&run, 3);
    assert_names_causes(&headline, &run.results);
    let stale = run.stale_writes();
    if stale > 0 {
        assert!(
            headline.contains(&format!("accepted {stale} stale write")),
            "{headline}"
        );
    }
}

#[test]
fn a_fenced_etcd_report_says_the_fence_held_despite_the_overlaps() {
    let flags =
        "--lock etcd --fencing on --nemesis pause-holder --time-limit 6s --clients 3 --seed 61";
    let run = kept_run("etcd", flags);
    assert_eq!(run.valid(), "invalid", "{}", run.stdout);
    assert_eq!(run.stale_writes(), 0, "the fence let a stale write through");
    let headline = rendered_report(&run, 3);
    assert_names_causes(&headline, &run.results);
    let rejected = run.rejected();
    if rejected > 0 {
        let access = if rejected == 1 { "access" } else { "accesses" };
        let words = format!("the fence held: it rejected {rejected} stale {access}");
        assert!(headline.to_lowercase().contains(&words), "{headline}");
        assert!(headline.contains("accepted none"), "{headline}");
    } else {
        assert!(
            headline.contains("the fence was never tested"),
            "{headline}"
        );
    }
}
