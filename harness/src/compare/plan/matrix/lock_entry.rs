//! One item of a matrix file's `locks`: a lock's name, or a table giving a user's own client
//! the short name the comparison shows it by.

use serde::Deserialize;

/// One item of the matrix's `locks`: a lock as `--lock` takes it, with the short name it is
/// shown by when the file gives one.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(try_from = "toml::Value")]
pub struct LockEntry {
    pub lock: String,
    pub name: Option<String>,
}

impl LockEntry {
    pub fn plain(lock: &str) -> LockEntry {
        LockEntry {
            lock: lock.to_string(),
            name: None,
        }
    }

    /// What the comparison calls it: its short name, else the lock itself.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.lock)
    }
}

impl TryFrom<toml::Value> for LockEntry {
    type Error = String;

    fn try_from(value: toml::Value) -> Result<Self, Self::Error> {
        let table = match value {
            toml::Value::String(lock) => return Ok(LockEntry { lock, name: None }),
            toml::Value::Table(table) => table,
            other => {
                return Err(format!(
                    "a lock is a name or {{ lock = \"exec:…\", name = \"…\" }}, not {}",
                    a_kind(&other)
                ))
            }
        };
        let text = |key: &str| match table.get(key) {
            Some(toml::Value::String(text)) => Ok(text.clone()),
            Some(other) => Err(format!(
                "a lock's {key} must be a string, not {}",
                a_kind(other)
            )),
            None => Err(format!("a lock's table needs {key} = \"…\"")),
        };
        if let Some(key) = table
            .keys()
            .find(|k| !matches!(k.as_str(), "lock" | "name"))
        {
            return Err(format!(
                "a lock's table takes lock and name only, not {key:?}"
            ));
        }
        Ok(LockEntry {
            lock: text("lock")?,
            name: Some(text("name")?),
        })
    }
}

/// A TOML value's kind with its article: "an integer", "a table".
fn a_kind(value: &toml::Value) -> String {
    let kind = value.type_str();
    let article = if kind.starts_with(['a', 'i', 'o']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {kind}")
}
