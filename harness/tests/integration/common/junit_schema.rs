//! JUnit files checked against the schema CI readers follow: `harness/tests/junit-10.xsd`
//! (Surefire's JUnit 10, MIT), with xmllint (Debian's libxml2-utils).

use std::path::Path;
use std::process::Command;

/// xmllint's judgement of `path` against junit-10.xsd: `Ok`, or its errors.
pub fn validate(path: &Path) -> Result<(), String> {
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/junit-10.xsd");
    let out = Command::new("xmllint")
        .args(["--noout", "--schema"])
        .arg(schema)
        .arg(path)
        .output()
        .expect("xmllint runs (Debian package libxml2-utils, see .ci/install-packages)");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).to_string())
    }
}
