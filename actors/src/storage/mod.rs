//! Persistent storage: a key-value store for the service's records
//! ([`kv`]) and an object store for media files ([`objects`]).
//!
//! Both sit behind traits ([`kv::KvStore`], [`objects::ObjectStore`]) with
//! production backends (sled on one node or PostgreSQL for records, S3 for
//! media), a second one for development and tests (in memory, local files)
//! and a conformance suite that every backend must pass. Both report
//! [`kv::StorageError`].

pub mod batch;
pub mod error;
pub mod kv;
pub mod kv_conformance;
pub mod kv_postgres;
pub mod leases;
pub mod links;
pub mod node_leases;
pub mod objects;
pub mod record;
