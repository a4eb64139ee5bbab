//! Every output of a stored run, read by parsing it, and the verdict each one gives: the
//! terminal, the exit code, `results.json`, `report.html`, `junit.xml`, `summary.md` and the
//! store's index must all say the same.

use std::path::Path;

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;

use super::Run;

/// The value of attribute `name` of an element, unescaped.
fn attribute(e: &BytesStart<'_>, name: &str) -> Option<String> {
    let a = e.try_get_attribute(name).ok()??;
    Some(
        a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .ok()?
            .to_string(),
    )
}

/// Walks the elements of an XML text (or, `html`, an HTML one), opening ones and empty ones
/// alike, each with the names of the elements it is inside.
fn elements(text: &str, html: bool, mut each: impl FnMut(&BytesStart<'_>, &[String])) {
    let mut reader = Reader::from_str(text);
    if html {
        // Elements left unclosed (`<meta>`) and a script's `&&` are no errors in HTML.
        let config = reader.config_mut();
        config.check_end_names = false;
        config.allow_unmatched_ends = true;
        config.allow_dangling_amp = true;
    }
    let mut open: Vec<String> = Vec::new();
    loop {
        match reader.read_event().expect("a well-formed document") {
            Event::Start(e) => {
                each(&e, &open);
                open.push(String::from_utf8_lossy(e.name().as_ref()).to_string());
            }
            Event::Empty(e) => each(&e, &open),
            Event::End(_) => {
                open.pop();
            }
            Event::Eof => return,
            _ => {}
        }
    }
}

fn name_of(e: &BytesStart<'_>) -> String {
    String::from_utf8_lossy(e.name().as_ref()).to_string()
}

/// The verdict `junit.xml` gives: its `verdict` case passed (valid), failed (invalid) or is an
/// error (unknown); checked against the suite's own counts too.
pub fn junit_verdict(xml: &str) -> String {
    let mut in_verdict_case = false;
    let mut verdict = None;
    let mut totals = (0, 0);
    elements(xml, false, |e, open| match name_of(e).as_str() {
        "testsuite" => {
            let n = |k| {
                attribute(e, k)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            totals = (n("failures"), n("errors"));
        }
        "testcase" => {
            in_verdict_case = attribute(e, "name").as_deref() == Some("verdict");
            if in_verdict_case {
                verdict.get_or_insert("valid");
            }
        }
        "failure" if in_verdict_case && open.last().is_some_and(|p| p == "testcase") => {
            verdict = Some("invalid");
        }
        "error" if in_verdict_case && open.last().is_some_and(|p| p == "testcase") => {
            verdict = Some("unknown");
        }
        _ => {}
    });
    let verdict = verdict.expect("junit.xml has a case for the verdict");
    match verdict {
        "valid" => assert_eq!(totals, (0, 0), "a valid run's suite has no failure: {xml}"),
        "invalid" => assert!(
            totals.0 > 0,
            "an invalid run's suite counts a failure: {xml}"
        ),
        _ => assert!(
            totals.1 > 0,
            "an unknown run's suite counts an error: {xml}"
        ),
    }
    verdict.to_string()
}

/// The verdict `report.html` shows next to its title.
fn report_verdict(html: &str) -> String {
    let mut verdict = None;
    elements(html, true, |e, open| {
        let class = attribute(e, "class").unwrap_or_default();
        if open.last().is_some_and(|p| p == "h1") && class.starts_with("verdict ") {
            verdict = Some(class["verdict ".len()..].to_string());
        }
    });
    verdict.expect("report.html shows a verdict")
}

/// The verdict the store's index lists for the run in `dir`.
fn index_verdict(html: &str, dir: &Path) -> String {
    let stamp = dir.file_name().unwrap().to_string_lossy().to_string();
    let (mut verdict, mut row) = (None, None);
    elements(html, true, |e, _| match name_of(e).as_str() {
        "tr" => row = attribute(e, "data-verdict"),
        "a" if attribute(e, "href").is_some_and(|h| h.contains(&stamp)) => {
            verdict = verdict.take().or(row.clone());
        }
        _ => {}
    });
    verdict.expect("the index lists the run")
}

/// The verdict word `summary.md`'s grid gives its one cell.
fn summary_verdict(markdown: &str) -> String {
    let grid = markdown
        .lines()
        .filter(|l| l.starts_with("| "))
        .nth(1)
        .expect("summary.md has a grid row");
    ["valid", "invalid", "unknown"]
        .into_iter()
        .find(|v| grid.contains(&format!(" {v}]")) || grid.contains(&format!(" {v} ")))
        .unwrap_or_else(|| panic!("no verdict in the grid row {grid:?}"))
        .to_string()
}

/// The verdict of each of the run's outputs, by name.
pub fn verdicts(r: &Run) -> Vec<(&'static str, String)> {
    let read = |file: &str| {
        std::fs::read_to_string(r.dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
    };
    let store = r.dir.parent().and_then(Path::parent).unwrap();
    let index = std::fs::read_to_string(store.join("index.html")).expect("the store's index");
    let terminal = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("verdict: "))
        .map(|v| v.split(':').next().unwrap_or(v).to_lowercase())
        .expect("the terminal says a verdict");
    let exit = match r.code {
        0 => "valid",
        1 => "invalid",
        2 => "unknown",
        other => panic!("exit code {other}"),
    };
    vec![
        ("terminal", terminal),
        ("exit code", exit.to_string()),
        ("results.json", r.valid().to_string()),
        ("report.html", report_verdict(&read("report.html"))),
        ("junit.xml", junit_verdict(&read("junit.xml"))),
        ("summary.md", summary_verdict(&read("summary.md"))),
        ("index.html", index_verdict(&index, &r.dir)),
    ]
}

/// Every output of the run says `verdict`.
pub fn assert_every_output_says(r: &Run, verdict: &str) {
    for (output, said) in verdicts(r) {
        assert_eq!(said, verdict, "{output} of {:?}:\n{}", r.dir, r.stdout);
    }
}
