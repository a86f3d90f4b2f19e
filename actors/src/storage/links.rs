//! Stable media links: `{base}/media/{key}?sig=<hex>` names an object for
//! as long as it exists. Clients keep them (in a project's JSON, in a
//! `<video src>`); the server answers each with a redirect to a fresh,
//! expiring URL of the object store (a local signed URL or an S3 presigned
//! one), so a link handed out hours ago still plays.
//!
//! `sig` is the HMAC-SHA256 of the key under a key derived from the media
//! secret (so a stable signature never passes as an expiring one). Every
//! node that serves links must share that secret.

use hmac::{Hmac, KeyInit, Mac};
use percent_encoding::utf8_percent_encode;
use sha2::Sha256;

use super::objects::{validate_key, KEY_IN_URL};

/// Signs and checks stable media links.
pub struct StableLinks {
    base: String,
    key: Vec<u8>,
}

impl std::fmt::Debug for StableLinks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StableLinks")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl StableLinks {
    /// Links under `base` (the service's public URL) signed with a key
    /// derived from `secret`.
    pub fn new(base: &str, secret: &[u8]) -> Self {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret)
            .expect("HMAC accepts keys of any length");
        mac.update(b"clipforge stable media links v1");
        Self {
            base: base.trim_end_matches('/').to_string(),
            key: mac.finalize().into_bytes().to_vec(),
        }
    }

    fn mac(&self, key: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .expect("HMAC accepts keys of any length");
        mac.update(key.as_bytes());
        mac
    }

    /// The stable link of the object `key`.
    pub fn link(&self, key: &str) -> String {
        format!(
            "{}/media/{}?sig={}",
            self.base,
            utf8_percent_encode(key, KEY_IN_URL),
            hex::encode(self.mac(key).finalize().into_bytes())
        )
    }

    /// Whether `sig` is the signature of `key` (constant time).
    pub fn verify(&self, key: &str, sig: &str) -> bool {
        if validate_key(key).is_err() {
            return false;
        }
        let Ok(sig) = hex::decode(sig) else {
            return false;
        };
        self.mac(key).verify_slice(&sig).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_verify_only_their_own_key_and_secret() {
        let links = StableLinks::new("http://127.0.0.1:8080/", b"secret");
        let link = links.link("projects/p 1/clip-0.mp4");
        let (path, sig) = link.split_once("?sig=").unwrap();
        assert_eq!(
            path,
            "http://127.0.0.1:8080/media/projects/p%201/clip-0.mp4"
        );
        assert!(links.verify("projects/p 1/clip-0.mp4", sig));
        assert!(!links.verify("projects/p 1/clip-1.mp4", sig));
        assert!(!links.verify("../etc/passwd", sig));
        assert!(!links.verify("projects/p 1/clip-0.mp4", "zz"));
        let other = StableLinks::new("http://127.0.0.1:8080", b"other");
        assert!(!other.verify("projects/p 1/clip-0.mp4", sig));
    }
}
