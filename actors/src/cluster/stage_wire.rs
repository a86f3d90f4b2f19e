//! Stage jobs and their results between nodes stay small cluster frames: a
//! payload whose JSON is larger than `cluster.max_inline_bytes` is written
//! to object storage, under the project's work folder, and the message
//! carries only its key. ractor_cluster closes a session (every request on
//! the link between two nodes) on a frame over 16 MiB, and one large frame
//! holds the link while it is sent.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::projects::stages::StageError;
use crate::storage::objects::ObjectStore;

/// The default of `cluster.max_inline_bytes`.
pub const DEFAULT_MAX_INLINE: usize = 1024 * 1024;

/// A payload in the message itself, or in object storage under a key.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Carried<T> {
    Inline(T),
    Stored { key: String, bytes: u64 },
}

/// `value` inline when its JSON is at most `limit` bytes, else stored at `key`.
pub async fn carry<T: Serialize>(
    objects: &dyn ObjectStore,
    key: &str,
    value: T,
    limit: usize,
) -> Result<Carried<T>, StageError> {
    let json = serde_json::to_vec(&value).map_err(|e| StageError::io("encoding", e))?;
    if json.len() <= limit {
        return Ok(Carried::Inline(value));
    }
    let bytes = json.len() as u64;
    objects
        .put_bytes(key, json, "application/json")
        .await
        .map_err(|e| StageError::Io(format!("storing {key}: {e}")))?;
    tracing::debug!(%key, bytes, "cluster: payload sent through object storage");
    Ok(Carried::Stored {
        key: key.to_string(),
        bytes,
    })
}

/// The payload, read back from object storage when it was stored; a stored
/// one is deleted once read when `consume` is set.
pub async fn open<T: DeserializeOwned>(
    objects: &dyn ObjectStore,
    carried: Carried<T>,
    consume: bool,
) -> Result<T, StageError> {
    match carried {
        Carried::Inline(v) => Ok(v),
        Carried::Stored { key, .. } => {
            let json = objects
                .get_bytes(&key)
                .await
                .map_err(|e| StageError::Io(format!("reading {key}: {e}")))?;
            let value = serde_json::from_slice(&json)
                .map_err(|e| StageError::io(&format!("parsing {key}"), e))?;
            if consume {
                let _ = objects.delete(&key).await;
            }
            Ok(value)
        }
    }
}

/// Where a job's payloads are stored: beside the project's work files (so
/// deleting the project's work folder deletes them too).
pub fn payload_key(work_prefix: &str, job: &str, what: &str) -> String {
    format!("{work_prefix}wire/{}-{what}.json", safe_name(job))
}

/// A job id (`<run>#<n>`) as a file or key name: ASCII letters, digits and
/// `-` kept, anything else `_`.
pub fn safe_name(job: &str) -> String {
    job.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::objects::LocalStore;

    #[tokio::test]
    async fn large_payloads_go_through_storage_and_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path(), "http://127.0.0.1", "secret").unwrap();
        let key = payload_key("work/p1/", "p1-caption-abc#1", "result");
        assert_eq!(key, "work/p1/wire/p1-caption-abc_1-result.json");
        let small = vec![1u32, 2, 3];
        let c = carry(&store, &key, small.clone(), 64).await.unwrap();
        assert!(matches!(c, Carried::Inline(_)));
        assert_eq!(open(&store, c, true).await.unwrap(), small);

        let big: Vec<u32> = (0..1000).collect();
        let c = carry(&store, &key, big.clone(), 64).await.unwrap();
        let Carried::Stored { key: stored, bytes } = &c else {
            panic!("a payload over the limit is stored")
        };
        assert_eq!(stored, &key);
        assert!(*bytes > 64);
        // It survives the wire as JSON.
        let c: Carried<Vec<u32>> =
            serde_json::from_slice(&serde_json::to_vec(&c).unwrap()).unwrap();
        assert_eq!(open(&store, c.clone(), false).await.unwrap(), big);
        assert_eq!(open(&store, c.clone(), true).await.unwrap(), big);
        assert!(open(&store, c, true).await.is_err(), "consumed");
    }
}
