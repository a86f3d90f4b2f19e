//! How settings given as one string (an environment variable) read as the
//! typed fields `cluster.toml` gives directly: a list is comma separated,
//! and an empty string clears an optional setting.

use serde::{Deserialize, Deserializer};

#[derive(Deserialize)]
#[serde(untagged)]
enum ListOrString {
    List(Vec<String>),
    String(String),
}

/// A TOML array, or a comma-separated string (blank items dropped).
pub fn list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match ListOrString::deserialize(d)? {
        ListOrString::List(v) => v,
        ListOrString::String(s) => s
            .split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect(),
    })
}

/// An optional setting; the empty string is `None`.
pub fn opt<'de, D: Deserializer<'de>, T: From<String>>(d: D) -> Result<Option<T>, D::Error> {
    Ok(Option::<String>::deserialize(d)?
        .filter(|s| !s.is_empty())
        .map(T::from))
}
