//! Rendezvous (highest random weight) hashing: which node owns a key (an
//! account, `ownership.rs`). Every node computes the same owner from the
//! same member list, and a node joining or leaving moves only the keys it
//! wins or held.

use sha2::{Digest, Sha256};

/// The weight of `node` for `key`: the first 8 bytes of
/// SHA-256(key ‖ 0 ‖ node), stable across builds and machines.
fn weight(key: &str, node: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update([0u8]);
    h.update(node.as_bytes());
    let d = h.finalize();
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes"))
}

/// The node among `nodes` that owns `key` (highest weight, ties by name);
/// `None` when `nodes` is empty.
pub fn owner<'a, I>(key: &str, nodes: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    nodes
        .into_iter()
        .map(|n| (weight(key, n), n))
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, n)| n)
}

#[cfg(test)]
#[path = "placement_tests.rs"]
mod tests;
