//! Where `summary.md` links to: it is read in a pull-request comment or a job summary, where a
//! path relative to the store leads nowhere. Links go to `--link-base` (the URL at which the
//! store is published), else to the GitLab job's artifacts when the store is among them;
//! otherwise there are no links, only the paths (as code) and, on GitHub Actions, the run page
//! whose artifacts hold them.

use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct Links {
    /// The URL of the store, without a trailing `/`.
    base: Option<String>,
    store: PathBuf,
    /// Where the reports are when there is no URL for each (the CI run's page).
    pub elsewhere: Option<String>,
}

impl Links {
    /// From `--link-base`, else from the CI's environment (`env` reads a variable).
    pub fn new(
        link_base: Option<&str>,
        store: &Path,
        env: impl Fn(&str) -> Option<String>,
    ) -> Links {
        let set = |key: &str| env(key).filter(|v| !v.is_empty());
        let base = link_base.map(str::to_string).or_else(|| {
            // GitLab serves each artifact file at <job URL>/artifacts/file/<path in the project>.
            let job = set("CI_JOB_URL")?;
            let project = PathBuf::from(set("CI_PROJECT_DIR")?);
            let within = store.strip_prefix(&project).ok()?;
            Some(format!("{job}/artifacts/file/{}", url_path(within)))
        });
        let elsewhere = match (
            set("GITHUB_SERVER_URL"),
            set("GITHUB_REPOSITORY"),
            set("GITHUB_RUN_ID"),
        ) {
            (Some(server), Some(repo), Some(run)) if base.is_none() => {
                Some(format!("{server}/{repo}/actions/runs/{run}"))
            }
            _ => None,
        };
        Links {
            base: base.map(|b| b.trim_end_matches('/').to_string()),
            store: store.to_path_buf(),
            elsewhere,
        }
    }

    /// The URL of `target`, a file under the store, when there is a base to link from.
    pub fn to(&self, target: &Path) -> Option<String> {
        let base = self.base.as_ref()?;
        let within = target.strip_prefix(&self.store).ok()?;
        Some(format!("{base}/{}", url_path(within)))
    }

    /// `target`'s path within the store, for a reader to find it in the artifacts.
    pub fn path_in_store(&self, target: &Path) -> String {
        target
            .strip_prefix(&self.store)
            .unwrap_or(target)
            .display()
            .to_string()
    }

    pub fn has_base(&self) -> bool {
        self.base.is_some()
    }
}

/// A relative path as a URL path: each component percent-encoded, joined by `/`.
fn url_path(path: &Path) -> String {
    let parts: Vec<String> = path
        .components()
        .map(|c| {
            let mut out = String::new();
            for b in c.as_os_str().as_encoded_bytes() {
                match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                        out.push(*b as char)
                    }
                    _ => out.push_str(&format!("%{b:02X}")),
                }
            }
            out
        })
        .collect();
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |key| {
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_link_base_links_each_file_by_its_place_in_the_store() {
        let store = Path::new("/builds/p/store");
        let links = Links::new(Some("https://ci.example/store/"), store, env(&[]));
        let report = store.join("exec:redis:a b-none/20261201T000000.000Z/report.html");
        assert_eq!(
            links.to(&report).unwrap(),
            "https://ci.example/store/exec%3Aredis%3Aa%20b-none/20261201T000000.000Z/report.html"
        );
        assert_eq!(links.to(Path::new("/elsewhere/report.html")), None);
    }

    #[test]
    fn gitlab_links_to_the_jobs_artifacts_and_github_to_its_run_page() {
        let store = Path::new("/builds/p/store");
        let gitlab = [
            ("CI_JOB_URL", "https://gitlab.example/g/p/-/jobs/7"),
            ("CI_PROJECT_DIR", "/builds/p"),
        ];
        let links = Links::new(None, store, env(&gitlab));
        assert_eq!(
            links.to(&store.join("compare/x/compare.html")).unwrap(),
            "https://gitlab.example/g/p/-/jobs/7/artifacts/file/store/compare/x/compare.html"
        );
        let github = [
            ("GITHUB_SERVER_URL", "https://github.com"),
            ("GITHUB_REPOSITORY", "o/r"),
            ("GITHUB_RUN_ID", "42"),
        ];
        let links = Links::new(None, store, env(&github));
        assert_eq!(links.to(&store.join("compare/x/compare.html")), None);
        assert_eq!(
            links.elsewhere.as_deref(),
            Some("https://github.com/o/r/actions/runs/42")
        );
        let none = Links::new(None, store, env(&[]));
        assert!(!none.has_base() && none.elsewhere.is_none());
    }
}
