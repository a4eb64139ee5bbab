//! HTML is maud's: every value spliced into a page is escaped, in text and in attributes, and
//! `PreEscaped` takes only lockpick's own style sheets and scripts. What maud cannot know is
//! that a relative link whose first part holds a colon (a folder named `javascript:alert(1)`)
//! is read by a browser as an address with a scheme: [`relative_href`] keeps it a path.

/// `path` (relative, made of folder names from outside) as a link that stays a path.
pub fn relative_href(path: String) -> String {
    let first = path.split('/').next().unwrap_or("");
    if first.contains(':') {
        format!("./{path}")
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_named_like_a_scheme_is_linked_as_a_path() {
        assert_eq!(
            relative_href("javascript:alert(1)/report.html".to_string()),
            "./javascript:alert(1)/report.html"
        );
        assert_eq!(
            relative_href("../redis-none/t/report.html".to_string()),
            "../redis-none/t/report.html"
        );
        assert_eq!(
            relative_href("run/exec:redis:a/report.html".to_string()),
            "run/exec:redis:a/report.html"
        );
    }
}
