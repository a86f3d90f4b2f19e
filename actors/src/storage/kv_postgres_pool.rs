//! The connection pool of [`super::PostgresStore`]: connections opened on
//! demand, at most `pool_size` in use, statements prepared once per
//! connection, and the retry of failed operations.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, Statement};

use crate::storage::kv::StorageError;

/// Re-runs of an operation after a lost connection, a deadlock or a
/// serialization failure.
const RETRIES: u32 = 3;

pub(super) struct Inner {
    /// The private runtime, where every connection's I/O task runs.
    pub(super) handle: tokio::runtime::Handle,
    pub(super) config: tokio_postgres::Config,
    pub(super) namespace: String,
    pub(super) idle: Mutex<Vec<Conn>>,
    pub(super) slots: tokio::sync::Semaphore,
    pub(super) op_timeout: Duration,
}

/// One connection with the statements prepared on it.
pub(super) struct Conn {
    pub(super) client: Client,
    pub(super) statements: HashMap<&'static str, Statement>,
}

impl Conn {
    pub(super) async fn statement(
        &mut self,
        sql: &'static str,
    ) -> std::result::Result<Statement, Failure> {
        if let Some(s) = self.statements.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql).await.map_err(Failure::Query)?;
        self.statements.insert(sql, s.clone());
        Ok(s)
    }
}

pub(super) enum Failure {
    Connect(tokio_postgres::Error),
    Query(tokio_postgres::Error),
    Timeout(Duration),
    Corrupt(String),
    /// The batch's lease is not held any more (`kv_postgres_leases.rs`).
    Fenced {
        key: String,
        token: i64,
    },
    /// A precondition of the batch did not hold (`KvOp::Expect`).
    Conflict(String),
    /// The store's private runtime is shutting down.
    Stopped,
}

impl Failure {
    fn retryable(&self) -> bool {
        match self {
            Failure::Connect(_) => true,
            Failure::Query(e) => {
                e.is_closed()
                    || matches!(
                        e.code(),
                        Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE
                            || *c == SqlState::T_R_DEADLOCK_DETECTED
                    )
            }
            Failure::Timeout(_)
            | Failure::Stopped
            | Failure::Corrupt(_)
            | Failure::Fenced { .. }
            | Failure::Conflict(_) => false,
        }
    }

    pub(super) fn into_storage(self, context: String) -> StorageError {
        match self {
            Failure::Connect(e) => StorageError::Backend(format!(
                "{context}: connecting to PostgreSQL: {}",
                describe(&e)
            )),
            Failure::Query(e) => {
                StorageError::Backend(format!("{context}: PostgreSQL: {}", describe(&e)))
            }
            Failure::Timeout(t) => {
                StorageError::Backend(format!("{context}: PostgreSQL did not answer within {t:?}"))
            }
            Failure::Corrupt(m) => StorageError::Corrupt(format!("{context}: {m}")),
            Failure::Fenced { key, token } => StorageError::Fenced { key, token },
            Failure::Conflict(why) => StorageError::Conflict(why),
            Failure::Stopped => {
                StorageError::Backend(format!("{context}: the PostgreSQL client stopped"))
            }
        }
    }
}

/// The server's message and SQLSTATE when there is one, else the client
/// error with its cause (tokio-postgres' own text is often just "db error").
pub(super) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{} ({})", db.message(), db.code().code());
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

impl Inner {
    async fn checkout(&self) -> std::result::Result<Conn, Failure> {
        loop {
            let conn = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            match conn {
                Some(c) if !c.client.is_closed() => return Ok(c),
                Some(_) => continue,
                None => break,
            }
        }
        // Connected on the private runtime, whose reactor then drives the
        // socket: a caller's runtime may be gone, or its only thread
        // blocked in a blocking call, while the connection is in use.
        let config = self.config.clone();
        let connecting = self.handle.spawn(async move {
            let (client, connection) = config.connect(NoTls).await.map_err(Failure::Connect)?;
            tokio::spawn(async move {
                if let Err(e) = connection.await {
                    tracing::warn!(error = %describe(&e), "PostgreSQL connection closed");
                }
            });
            Ok(client)
        });
        let client = match connecting.await {
            Ok(client) => client?,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return Err(Failure::Stopped),
        };
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    fn checkin(&self, conn: Conn) {
        if !conn.client.is_closed() {
            self.idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
        }
    }

    /// [`Self::attempt`] within the store's time limit for one call.
    pub(super) async fn run<T, F, Fut>(&self, op: &F) -> std::result::Result<T, Failure>
    where
        F: Fn(Conn) -> Fut,
        Fut: Future<Output = (Conn, std::result::Result<T, Failure>)>,
    {
        let limit = self.op_timeout;
        tokio::time::timeout(limit, self.attempt(op))
            .await
            .unwrap_or(Err(Failure::Timeout(limit)))
    }

    /// Runs `op` on a pooled connection, again on another one after a
    /// retryable failure.
    pub(super) async fn attempt<T, F, Fut>(&self, op: &F) -> std::result::Result<T, Failure>
    where
        F: Fn(Conn) -> Fut,
        Fut: Future<Output = (Conn, std::result::Result<T, Failure>)>,
    {
        let mut tries = 0;
        loop {
            let permit = self
                .slots
                .acquire()
                .await
                .expect("the pool is never closed");
            let result = match self.checkout().await {
                Ok(conn) => {
                    let (conn, result) = op(conn).await;
                    // After an error the session may be inside an aborted
                    // transaction: only a clean connection goes back.
                    if result.is_ok() {
                        self.checkin(conn);
                    }
                    result
                }
                Err(e) => Err(e),
            };
            drop(permit);
            // A server that cannot be reached gets one more try only: the
            // caller may be an async worker thread, blocked meanwhile.
            let limit = match &result {
                Err(Failure::Connect(_)) => 1,
                _ => RETRIES,
            };
            match result {
                Err(e) if tries < limit && e.retryable() => {
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(50 * u64::from(tries))).await;
                }
                other => return other,
            }
        }
    }
}
