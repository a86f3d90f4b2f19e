//! [`Leases`] in PostgreSQL: one row per lease in `clipforge_leases`, each
//! operation one statement (fenced writes: a check in the batch's own
//! transaction, `kv_postgres.rs`). Expiry is judged on the server's clock
//! (`clock_timestamp()`), so the nodes' clocks do not matter.
//!
//! ```sql
//! clipforge_leases (ns text, key text, holder text, token bigint,
//!                   expires_at timestamptz, primary key (ns, key))
//! ```
//!
//! The table's schema and the fence check are in `kv_postgres_sql.rs`;
//! `kv_postgres.rs` runs them. A released lease keeps its row (expired), so the next acquisition
//! continues its token sequence.

use std::sync::Arc;
use std::time::Duration;

use super::sql::{apply_batch, fetch, write_one};
use super::PostgresStore;
use crate::storage::kv::{KvFuture, KvOp};
use crate::storage::leases::{Fence, Leases};

/// Free (never taken, released, expired) or already the holder's: take it
/// with the next token.
const ACQUIRE: &str = "INSERT INTO clipforge_leases AS l (ns, key, holder, token, expires_at) \
     VALUES ($1, $2, $3, 1, clock_timestamp() + $4::bigint * interval '1 millisecond') \
     ON CONFLICT (ns, key) DO UPDATE \
     SET holder = EXCLUDED.holder, token = l.token + 1, expires_at = EXCLUDED.expires_at \
     WHERE l.expires_at <= clock_timestamp() OR l.holder = EXCLUDED.holder \
     RETURNING token";
const RENEW: &str = "UPDATE clipforge_leases \
     SET expires_at = clock_timestamp() + $5::bigint * interval '1 millisecond' \
     WHERE ns = $1 AND key = $2 AND holder = $3 AND token = $4 \
     AND expires_at > clock_timestamp() RETURNING token";
const RELEASE: &str = "UPDATE clipforge_leases SET expires_at = '-infinity' \
     WHERE ns = $1 AND key = $2 AND holder = $3 AND token = $4";
fn millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

impl Leases for PostgresStore {
    fn acquire<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> KvFuture<'a, Option<Fence>> {
        let ns = self.inner.namespace.clone();
        let (k, h, ms) = (key.to_string(), holder.to_string(), millis(ttl));
        let token = self.run_async(
            move || format!("acquiring the lease {key:?}"),
            move |mut conn| {
                let (ns, k, h) = (ns.clone(), k.clone(), h.clone());
                Box::pin(async move {
                    let r = fetch(&mut conn, ACQUIRE, &[&ns, &k, &h, &ms])
                        .await
                        .map(|rows| rows.first().map(|row| row.get::<_, i64>(0)));
                    (conn, r)
                })
            },
        );
        Box::pin(async move {
            Ok(token.await?.map(|token| Fence {
                key: key.to_string(),
                holder: holder.to_string(),
                token,
            }))
        })
    }

    fn renew<'a>(&'a self, fence: &'a Fence, ttl: Duration) -> KvFuture<'a, bool> {
        let ns = self.inner.namespace.clone();
        let (f, ms) = (Arc::new(fence.clone()), millis(ttl));
        self.run_async(
            move || format!("renewing the lease {:?}", fence.key),
            move |mut conn| {
                let (ns, f) = (ns.clone(), f.clone());
                Box::pin(async move {
                    let r = fetch(&mut conn, RENEW, &[&ns, &f.key, &f.holder, &f.token, &ms])
                        .await
                        .map(|rows| !rows.is_empty());
                    (conn, r)
                })
            },
        )
    }

    fn release<'a>(&'a self, fence: &'a Fence) -> KvFuture<'a, ()> {
        let ns = self.inner.namespace.clone();
        let f = Arc::new(fence.clone());
        self.run_async(
            move || format!("releasing the lease {:?}", fence.key),
            move |mut conn| {
                let (ns, f) = (ns.clone(), f.clone());
                Box::pin(async move {
                    let r =
                        write_one(&mut conn, RELEASE, &[&ns, &f.key, &f.holder, &f.token]).await;
                    (conn, r)
                })
            },
        )
    }

    fn apply_fenced<'a>(&'a self, fence: &'a Fence, batch: Vec<KvOp>) -> KvFuture<'a, ()> {
        let n = batch.len();
        let ns = self.inner.namespace.clone();
        let (f, batch) = (Arc::new(fence.clone()), Arc::new(batch));
        self.run_async(
            move || {
                format!(
                    "applying a batch of {n} writes under the lease {:?}",
                    fence.key
                )
            },
            move |mut conn| {
                let (ns, f, batch) = (ns.clone(), f.clone(), batch.clone());
                Box::pin(async move {
                    let r = apply_batch(&mut conn, &ns, &batch, Some(&f)).await;
                    (conn, r)
                })
            },
        )
    }
}

#[cfg(test)]
#[path = "kv_postgres_leases_tests.rs"]
mod tests;
