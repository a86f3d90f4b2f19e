//! Typed records in the KV store: their encoding (bincode 2, serde mode)
//! and schema versions. Every value [`encode`] writes starts with a header: the byte `0xFF` and the record type's
//! version (u16, big-endian), then the bincode 2 payload. [`decode`] reads
//! the header and handles each case explicitly:
//!
//! - the version this build writes: the payload is decoded;
//! - an older version: [`Record::upgrade`] reads it (the default refuses
//!   it with [`StorageError::Version`]; a type that changes its layout
//!   bumps `VERSION` and reads the old one there);
//! - a newer version (written by a later build): [`StorageError::Version`],
//!   never a misread;
//! - no header: a value written before records were versioned. Such a value
//!   never starts with `0xFF` (bincode 2's standard encoding never begins a
//!   value with that byte: it is not a valid varint tag, and no stored type
//!   starts with a raw `u8`), and it is read as version 1.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::error::{Result, StorageError};

const MARK: u8 = 0xFF;

/// A type stored in the KV store.
pub trait Record: Serialize + DeserializeOwned {
    /// What the record is, for errors.
    const KIND: &'static str;
    /// The schema version this build writes (1 = the layout stored before
    /// versions existed).
    const VERSION: u16;

    /// Reads a value stored with an older schema `version`. The default
    /// refuses it: a type whose layout changed overrides this.
    fn upgrade(version: u16, payload: &[u8]) -> Result<Self> {
        let _ = payload;
        Err(StorageError::Version {
            kind: Self::KIND,
            found: version,
            supported: Self::VERSION,
        })
    }
}

fn bincode_config() -> bincode::config::Configuration {
    bincode::config::standard()
}

/// Encodes `value` with bincode 2 (standard configuration, serde mode)
/// behind its schema-version header ([`Record`]).
///
/// Stored types must be plain structs and enums: bincode is not
/// self-describing, so `#[serde(skip_serializing_if)]`, `#[serde(flatten)]`,
/// untagged or internally tagged enums and `serde_json::Value` do not round
/// trip. Changing a stored type's fields changes its encoding: bump its
/// [`Record::VERSION`] and read the old layout in [`Record::upgrade`].
pub fn encode<T: Record>(value: &T) -> Result<Vec<u8>> {
    let mut out = header(T::VERSION);
    bincode::serde::encode_into_std_write(value, &mut out, bincode_config()).map_err(|e| {
        StorageError::Encode(format!("bincode, as {}: {e}", std::any::type_name::<T>()))
    })?;
    Ok(out)
}

/// Decodes a value written by [`encode`] (or before records carried a
/// version), handling its schema version as the module docs describe.
pub fn decode<T: Record>(bytes: &[u8]) -> Result<T> {
    let (version, payload) = split(bytes);
    match version.cmp(&T::VERSION) {
        std::cmp::Ordering::Equal => decode_payload(payload),
        std::cmp::Ordering::Less => T::upgrade(version, payload),
        std::cmp::Ordering::Greater => Err(StorageError::Version {
            kind: T::KIND,
            found: version,
            supported: T::VERSION,
        }),
    }
}

/// Decodes a bincode payload (no header) as `T`. Bytes left over after the
/// value count as corruption.
pub fn decode_payload<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    let (value, used) =
        bincode::serde::decode_from_slice(bytes, bincode_config()).map_err(|e| {
            StorageError::Corrupt(format!(
                "decoding {} bytes as {}: {e}",
                bytes.len(),
                std::any::type_name::<T>()
            ))
        })?;
    if used != bytes.len() {
        return Err(StorageError::Corrupt(format!(
            "decoding {} bytes as {}: {} trailing bytes",
            bytes.len(),
            std::any::type_name::<T>(),
            bytes.len() - used
        )));
    }
    Ok(value)
}

/// The header written in front of a record of schema `version`.
pub(crate) fn header(version: u16) -> Vec<u8> {
    let v = version.to_be_bytes();
    vec![MARK, v[0], v[1]]
}

/// The schema version of stored bytes and their payload (no header: a
/// value stored before versions, read as version 1).
pub(crate) fn split(bytes: &[u8]) -> (u16, &[u8]) {
    match bytes {
        [MARK, hi, lo, payload @ ..] => (u16::from_be_bytes([*hi, *lo]), payload),
        _ => (1, bytes),
    }
}

/// `impl Record` for stored types: `record!(Type, "kind", version)`.
#[macro_export]
macro_rules! record {
    ($($t:ty, $kind:literal, $version:literal);+ $(;)?) => {
        $(impl $crate::storage::record::Record for $t {
            const KIND: &'static str = $kind;
            const VERSION: u16 = $version;
        })+
    };
}

// Index values: a user id by email, a notification's key by id, bytes
// used per account, and the empty marker of a membership.
record!(String, "index", 1; Vec<u8>, "index", 1; u64, "counter", 1; (), "marker", 1);

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct NoteV1 {
        id: String,
        text: String,
    }
    record!(NoteV1, "note", 1);

    /// The same record after a change of layout: version 2 added `pinned`
    /// and reads version 1 explicitly.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct NoteV2 {
        id: String,
        text: String,
        pinned: bool,
    }
    impl Record for NoteV2 {
        const KIND: &'static str = "note";
        const VERSION: u16 = 2;
        fn upgrade(version: u16, payload: &[u8]) -> Result<Self> {
            match version {
                1 => {
                    let old: NoteV1 = decode_payload(payload)?;
                    Ok(NoteV2 {
                        id: old.id,
                        text: old.text,
                        pinned: false,
                    })
                }
                _ => Err(StorageError::Version {
                    kind: Self::KIND,
                    found: version,
                    supported: Self::VERSION,
                }),
            }
        }
    }

    fn v1() -> NoteV1 {
        NoteV1 {
            id: "n1".into(),
            text: "hello".into(),
        }
    }

    #[test]
    fn every_value_carries_its_version_and_reads_back() {
        let bytes = encode(&v1()).unwrap();
        assert_eq!(&bytes[..3], &[0xFF, 0, 1]);
        assert_eq!(decode::<NoteV1>(&bytes).unwrap(), v1());
        assert_eq!(decode::<u64>(&encode(&7u64).unwrap()).unwrap(), 7);
        decode::<()>(&encode(&()).unwrap()).unwrap();
    }

    #[test]
    fn a_value_stored_before_versions_reads_as_version_one() {
        let legacy = bincode::serde::encode_to_vec(v1(), bincode::config::standard()).unwrap();
        assert_ne!(legacy[0], 0xFF);
        assert_eq!(decode::<NoteV1>(&legacy).unwrap(), v1());
        // …and through an upgrade when the type has moved on.
        let up = decode::<NoteV2>(&legacy).unwrap();
        assert_eq!((up.text.as_str(), up.pinned), ("hello", false));
    }

    #[test]
    fn an_older_version_is_upgraded_and_a_newer_one_refused() {
        let old = encode(&v1()).unwrap();
        assert_eq!(decode::<NoteV2>(&old).unwrap().id, "n1");
        let new = encode(&NoteV2 {
            id: "n2".into(),
            text: "x".into(),
            pinned: true,
        })
        .unwrap();
        let err = decode::<NoteV1>(&new).unwrap_err();
        assert!(
            matches!(
                err,
                StorageError::Version {
                    kind: "note",
                    found: 2,
                    supported: 1
                }
            ),
            "{err}"
        );
        // A type with no upgrade refuses an older version explicitly.
        let mut v0 = header(0);
        v0.extend_from_slice(&old[3..]);
        assert!(matches!(
            decode::<NoteV1>(&v0),
            Err(StorageError::Version { found: 0, .. })
        ));
    }
}
