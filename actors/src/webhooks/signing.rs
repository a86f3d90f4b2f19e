//! Signatures in Stripe's scheme, used both ways: Stripe's webhooks to us
//! are checked with it and ours to integrators are signed with it, so the
//! verifiers people already have for Stripe work for Clipforge's.
//!
//! The header is `t=<unix secs>,v1=<hex>[,v1=<hex>...]`; each `v1` is
//! HMAC-SHA256, keyed with the endpoint's signing secret, of
//! `"<t>.<raw body>"`. A request is accepted when one `v1` matches and `t` is
//! within the tolerance of now.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// Most `v1` signatures read from one header (Stripe sends one per active
/// secret, two while a secret is rolled); more is refused as malformed.
pub const MAX_SIGNATURES: usize = 8;
/// Longest signature header read.
const MAX_HEADER_LEN: usize = 4096;

/// Why a webhook's signature was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature header is missing")]
    Missing,
    #[error("the signature header is malformed")]
    Malformed,
    #[error("the signature's timestamp is outside the tolerance")]
    Stale,
    #[error("no signature matches the payload")]
    Mismatch,
}

/// Checks `header` against `payload` signed with `secret`, at `now` (unix
/// seconds), accepting timestamps at most `tolerance_secs` away.
pub fn verify_signature(
    payload: &[u8],
    header: Option<&str>,
    secret: &str,
    now: i64,
    tolerance_secs: u64,
) -> Result<(), SignatureError> {
    let header = header
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .ok_or(SignatureError::Missing)?;
    if header.len() > MAX_HEADER_LEN {
        return Err(SignatureError::Malformed);
    }
    let mut timestamp = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let (key, value) = part
            .trim()
            .split_once('=')
            .ok_or(SignatureError::Malformed)?;
        match key {
            "t" => {
                timestamp = Some(
                    value
                        .parse::<i64>()
                        .map_err(|_| SignatureError::Malformed)?,
                )
            }
            "v1" if signatures.len() >= MAX_SIGNATURES => return Err(SignatureError::Malformed),
            "v1" => signatures.push(hex::decode(value).map_err(|_| SignatureError::Malformed)?),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if now.abs_diff(timestamp) > tolerance_secs {
        return Err(SignatureError::Stale);
    }
    let mac = signed_payload_mac(secret, timestamp, payload);
    // `verify_slice` compares in constant time.
    let matches = signatures
        .iter()
        .any(|signature| mac.clone().verify_slice(signature).is_ok());
    if matches {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// The signature header of `payload` signed with `secret` at `timestamp`
/// (unix seconds).
pub fn sign(payload: &[u8], secret: &str, timestamp: i64) -> String {
    let mac = signed_payload_mac(secret, timestamp, payload);
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

fn signed_payload_mac(secret: &str, timestamp: i64, payload: &[u8]) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes keys of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(payload);
    mac
}
