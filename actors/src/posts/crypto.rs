//! Platform tokens are encrypted at rest with AES-256-GCM: a random 96-bit
//! nonce per value, stored in front of the ciphertext, and the record's key
//! (`user/provider`) as associated data so a value cannot be moved to
//! another record.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use rand::RngCore;

const NONCE_LEN: usize = 12;

/// Why a token key or a stored token could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
    /// The key (configuration or `tokens.key`) is not hex, or not 32 bytes.
    #[error("the token key must be 64 hex digits")]
    KeyNotHex(#[source] hex::FromHexError),
    #[error("the token key must be 64 hex digits (32 bytes)")]
    KeyLength,
    /// A stored token that does not open: too short to hold a nonce and a
    /// tag, sealed with another key or for another record, or not text.
    #[error("encrypted token is truncated")]
    Truncated,
    #[error("cannot decrypt a stored token (wrong key or tampered data)")]
    Decrypt,
    #[error("decrypted token is not UTF-8")]
    NotUtf8(#[source] std::string::FromUtf8Error),
}

/// Encrypts and decrypts tokens with one 32-byte key.
#[derive(Clone)]
pub struct TokenCipher {
    cipher: Aes256Gcm,
}

impl std::fmt::Debug for TokenCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCipher(***)")
    }
}

impl TokenCipher {
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(key)),
        }
    }

    /// Parses a key given as 64 hex digits.
    pub fn from_hex(hex_key: &str) -> Result<Self, CryptoError> {
        let bytes = hex::decode(hex_key.trim()).map_err(CryptoError::KeyNotHex)?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| CryptoError::KeyLength)?;
        Ok(Self::new(&key))
    }

    pub fn seal(&self, aad: &[u8], plain: &str) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let sealed = self
            .cipher
            .encrypt(
                Nonce::from_slice(&nonce),
                Payload {
                    msg: plain.as_bytes(),
                    aad,
                },
            )
            .expect("AES-GCM encryption of a short token cannot fail");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        out
    }

    pub fn open(&self, aad: &[u8], sealed: &[u8]) -> Result<String, CryptoError> {
        if sealed.len() < NONCE_LEN + 16 {
            return Err(CryptoError::Truncated);
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let plain = self
            .cipher
            .decrypt(Nonce::from_slice(nonce), Payload { msg: body, aad })
            .map_err(|_| CryptoError::Decrypt)?;
        String::from_utf8(plain).map_err(CryptoError::NotUtf8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_binding() {
        let c = TokenCipher::new(&[7; 32]);
        let sealed = c.seal(b"u/youtube", "ya29.secret");
        assert!(!sealed.windows(6).any(|w| w == b"secret"));
        assert_eq!(c.open(b"u/youtube", &sealed).unwrap(), "ya29.secret");
        assert!(
            c.open(b"v/youtube", &sealed).is_err(),
            "bound to its record"
        );
        assert!(TokenCipher::new(&[8; 32])
            .open(b"u/youtube", &sealed)
            .is_err());
        assert!(TokenCipher::from_hex("abcd").is_err());
        assert!(TokenCipher::from_hex(&"ab".repeat(32)).is_ok());
    }
}
