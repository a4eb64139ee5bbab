//! Facts read from a page as Chromium's DOM holds it (the attributes a browser kept, the layout
//! it drew), for tests of the pages lockpick writes.

use std::path::Path;

use serde_json::Value;

use super::chromium;

/// Runs `script` (a JavaScript function body that returns a JSON-able value) at the end of a
/// copy of `page`, in headless Chromium with a window `width` pixels wide, and returns its value.
pub fn facts(page: &Path, script: &str, width: u32) -> Value {
    let html = std::fs::read_to_string(page).unwrap();
    let probe = format!(
        "<script>(() => {{ const pre = document.createElement('pre'); pre.id = 'lockpick-facts'; \
         pre.textContent = JSON.stringify((() => {{ {script} }})()); \
         document.body.appendChild(pre); }})();</script>"
    );
    let at = html.rfind("</body>").expect("a closed body");
    let probed = format!("{}{probe}{}", &html[..at], &html[at..]);
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("probed.html");
    std::fs::write(&copy, probed).unwrap();
    let out = chromium(
        &copy,
        &[
            format!("--window-size={width},900"),
            "--dump-dom".to_string(),
        ],
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"lockpick-facts\">").unwrap_or_else(|| {
        panic!(
            "the probe did not run: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let text = &dom[start + "<pre id=\"lockpick-facts\">".len()..];
    let text = &text[..text.find("</pre>").unwrap()];
    let text = text
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}
