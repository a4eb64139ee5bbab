//! XML 1.0 forbids some characters outright, escaped or not: most control characters, U+FFFE,
//! U+FFFF and lone surrogates. A string that reaches an XML output from outside (a server's
//! version, an exec program's error, a history's text) may hold them, and one of them makes the
//! whole file unreadable to a CI dashboard. Every XML output passes through [`well_formed`].

/// Whether XML 1.0 allows `c` in a document (its `Char` production).
fn allowed(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `xml` with every forbidden character, and every character reference to one (`&#1;`,
/// `&#xFFFE;`), replaced by U+FFFD, so that what was there stays visible.
pub fn well_formed(xml: String) -> String {
    if xml.chars().all(allowed) && !xml.contains("&#") {
        return xml;
    }
    let mut out = String::with_capacity(xml.len());
    let mut rest = xml.as_str();
    while let Some(c) = rest.chars().next() {
        if c == '&' && rest.starts_with("&#") {
            if let Some(end) = rest[..rest.len().min(16)].find(';') {
                let number = &rest[2..end];
                let code = match number.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => number.parse().ok(),
                };
                if !code.and_then(char::from_u32).is_some_and(allowed) {
                    out.push('\u{FFFD}');
                    rest = &rest[end + 1..];
                    continue;
                }
            }
        }
        out.push(if allowed(c) { c } else { '\u{FFFD}' });
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use quick_junit::{Property, Report, TestSuite};

    #[test]
    fn a_junit_report_with_forbidden_characters_becomes_well_formed() {
        let hostile = "redis \u{FFFE}\u{FFFF}\u{1}\u{1b}[31m\u{0}\u{7f} 7.0";
        let mut suite = TestSuite::new(format!("lockpick {hostile}"));
        suite.add_property(Property::new("server version redis", hostile));
        let mut report = Report::new("lockpick");
        report.add_test_suite(suite);
        let raw = report.to_string().unwrap();
        // As quick-junit writes it, the file is not XML: a CI dashboard cannot read it.
        assert!(raw.contains('\u{FFFE}'), "{raw}");
        let xml = well_formed(raw);
        for c in ['\u{FFFE}', '\u{FFFF}', '\u{1}', '\u{1b}', '\u{0}'] {
            assert!(!xml.contains(c), "{c:?} in {xml}");
        }
        assert!(!xml.contains("&#1;") && !xml.contains("&#x1;"), "{xml}");
        let read = Report::deserialize_from_str(&xml).expect("well-formed");
        let property = &read.test_suites[0].properties[0];
        assert!(property.value.to_string().contains("7.0"));
    }

    #[test]
    fn references_to_allowed_characters_stay() {
        let xml = "<a b=\"&#10;&#x41;&amp;\">&#xFFFE;&#0;&#55296;</a>".to_string();
        assert_eq!(
            well_formed(xml),
            "<a b=\"&#10;&#x41;&amp;\">\u{FFFD}\u{FFFD}\u{FFFD}</a>"
        );
    }
}
