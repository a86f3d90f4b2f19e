//! Object storage (media files, renders, thumbnails) behind the
//! [`ObjectStore`] trait.
//!
//! [`LocalStore`] keeps objects as files under a directory and hands out
//! HMAC-signed, expiring URLs that the service's HTTP layer checks with
//! [`LocalStore::verify`] before serving [`LocalStore::path_of`].
//! [`S3Store`] keeps them in an S3 bucket (AWS or any S3-compatible endpoint)
//! and hands out presigned GET URLs.
//!
//! Object keys are `/`-separated paths such as `projects/p1/clips/c3.mp4`;
//! [`validate_key`] lists the rules. Both stores enforce the same rules so
//! that code written against one works against the other.
//!
//! # TLS crypto provider
//!
//! The S3 client uses rustls with the aws-lc-rs provider. The service binary
//! also links other rustls users (reqwest, async-stripe) and with more than
//! one provider compiled in rustls cannot pick a process-wide default by
//! itself: a client that relies on the default then panics. The binary must
//! therefore call [`install_default_crypto_provider`] first thing in `main`,
//! before any HTTP or S3 client is built; tests that build such clients call
//! it at their start.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use aws_sdk_s3::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_s3::error::{DisplayErrorContext, SdkError};
use aws_sdk_s3::operation::get_object::GetObjectOutput;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketLocationConstraint, CreateBucketConfiguration, Delete, ObjectIdentifier,
};
use hmac::{Hmac, KeyInit, Mac};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use sha2::Sha256;
use tempfile::NamedTempFile;
use tokio::io::AsyncWriteExt;

use super::kv::{Result, StorageError};

/// Installs aws-lc-rs as rustls' process-wide default crypto provider.
///
/// Call it at the start of `main` (and of tests that build TLS clients),
/// before any client exists; see the module documentation for why. Calling it
/// again, or after another provider was installed, does nothing.
pub fn install_default_crypto_provider() {
    // An error only says that a default provider is already installed.
    let _already_installed = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// Longest key accepted, in bytes (the S3 limit).
pub const MAX_KEY_LEN: usize = 1024;

/// Checks an object key.
///
/// A key is a non-empty `/`-separated path of at most [`MAX_KEY_LEN`] bytes
/// without a leading `/`, empty segments (`a//b`, a trailing `/`), `.` or
/// `..` segments, backslashes or control characters.
pub fn validate_key(key: &str) -> Result<()> {
    let invalid = |reason| {
        Err(StorageError::InvalidKey {
            key: key.to_string(),
            reason,
        })
    };
    if key.is_empty() {
        return invalid("empty key");
    }
    if key.len() > MAX_KEY_LEN {
        return invalid("longer than 1024 bytes");
    }
    if let Some(reason) = forbidden_characters(key) {
        return invalid(reason);
    }
    if key.split('/').any(|segment| !is_plain_segment(segment)) {
        return invalid("empty, '.' or '..' path segment");
    }
    Ok(())
}

/// Checks a listing prefix: like a key, except that it may be empty and its
/// last segment (after the last `/`) may be any partial segment.
pub fn validate_prefix(prefix: &str) -> Result<()> {
    let invalid = |reason| {
        Err(StorageError::InvalidKey {
            key: prefix.to_string(),
            reason,
        })
    };
    if prefix.len() > MAX_KEY_LEN {
        return invalid("longer than 1024 bytes");
    }
    if let Some(reason) = forbidden_characters(prefix) {
        return invalid(reason);
    }
    if let Some((dirs, _partial)) = prefix.rsplit_once('/') {
        if dirs.split('/').any(|segment| !is_plain_segment(segment)) {
            return invalid("empty, '.' or '..' path segment");
        }
    }
    Ok(())
}

fn forbidden_characters(key: &str) -> Option<&'static str> {
    if key.starts_with('/') {
        Some("starts with '/'")
    } else if key.contains('\\') {
        Some("contains a backslash")
    } else if key.chars().any(char::is_control) {
        Some("contains a control character")
    } else {
        None
    }
}

fn is_plain_segment(segment: &str) -> bool {
    !matches!(segment, "" | "." | "..")
}

/// Storage for whole objects addressed by key.
///
/// Writes replace the whole object; readers see either the old or the new
/// content, never a partial one. Methods taking a key reject invalid keys
/// (see [`validate_key`]) with [`StorageError::InvalidKey`]; reading a
/// missing object fails with [`StorageError::NotFound`].
#[async_trait]
pub trait ObjectStore: Send + Sync + 'static {
    /// Uploads the file at `path`, streaming it, and returns its size.
    async fn put_file(&self, key: &str, path: &Path, content_type: &str) -> Result<u64>;

    /// Stores a small object held in memory.
    async fn put_bytes(&self, key: &str, bytes: Vec<u8>, content_type: &str) -> Result<()>;

    /// Downloads the object to `path`, streaming it, and returns its size.
    /// Missing parent directories are created; `path` appears only once the
    /// download is complete.
    async fn get_to_file(&self, key: &str, path: &Path) -> Result<u64>;

    /// Reads a small object into memory.
    async fn get_bytes(&self, key: &str) -> Result<Vec<u8>>;

    /// The object's size, or `None` if it does not exist.
    async fn size(&self, key: &str) -> Result<Option<u64>>;

    /// Deletes the object; deleting a missing object is not an error.
    async fn delete(&self, key: &str) -> Result<()>;

    /// Deletes every object whose key starts with `prefix` and returns how
    /// many were deleted.
    async fn delete_prefix(&self, prefix: &str) -> Result<u64>;

    /// Every object whose key starts with `prefix` (a plain string prefix,
    /// not only whole segments), with its size, sorted by key.
    async fn list_prefix(&self, prefix: &str) -> Result<Vec<(String, u64)>>;

    /// A URL from which a plain HTTP GET downloads the object until
    /// `expires` from now. The object need not exist yet.
    async fn url(&self, key: &str, expires: Duration) -> Result<String>;
}

/// Runs blocking file-system work off the async executor threads.
async fn blocking<T, F>(work: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    crate::tasks::blocking(work).await
}

/// The directory a file at `path` lives in ("." for a bare file name).
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Characters escaped in the key part of a local media URL: everything but
/// RFC 3986 unreserved characters and the `/` separator.
pub(crate) const KEY_IN_URL: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

#[path = "objects_local.rs"]
mod local;
pub use local::LocalStore;

#[path = "objects_s3.rs"]
mod s3;
pub use s3::{S3Config, S3Store};

/// Deterministic, incompressible test content.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        })
        .collect()
}

#[path = "objects_conformance.rs"]
mod conformance;
#[doc(hidden)]
pub use conformance::object_store_conformance;

#[cfg(test)]
#[path = "objects_tests.rs"]
mod tests;
