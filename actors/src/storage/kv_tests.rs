//! Tests of `kv`.

use super::*;
use crate::storage::kv_conformance::{kv_conformance, kv_conformance_async};
use serde::{Deserialize, Serialize};
use std::process::Command;

#[derive(Debug, PartialEq, Serialize, Deserialize)]
enum State {
    Queued,
    Done { clips: u32 },
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Job {
    id: String,
    state: State,
    tags: Vec<String>,
    score: Option<f64>,
}
crate::record!(State, "test state", 1; Job, "test job", 1);

#[tokio::test]
async fn memory_store_conforms() {
    let kv = MemoryStore::new();
    kv_conformance(&kv);
    kv_conformance_async(&kv).await;
}

#[tokio::test]
async fn sled_store_conforms() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kv = SledStore::open(&dir.path().join("db")).expect("open");
    kv_conformance(&kv);
    kv_conformance_async(&kv).await;
}

/// Sled's async write leaves the calling thread (its flush is a disk
/// sync): the first poll finds it handed to the blocking pool, not done.
#[tokio::test]
async fn sled_writes_from_async_code_run_on_the_blocking_pool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kv = SledStore::open(&dir.path().join("db")).expect("open");
    let mut write = kv.apply_async(vec![KvOp::Put {
        tree: "t".into(),
        key: b"k".to_vec(),
        value: b"v".to_vec(),
    }]);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(
        write.as_mut().poll(&mut cx).is_pending(),
        "the write ran inline on the async thread"
    );
    write.await.expect("applied");
    assert_eq!(kv.get("t", b"k").expect("get"), Some(b"v".to_vec()));
}

#[test]
fn sled_store_keeps_data_across_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    {
        let kv = SledStore::open(&path).expect("open");
        kv.put("t", b"a", b"1").expect("put");
        kv.put("t", b"gone", b"x").expect("put");
        kv.delete("t", b"gone").expect("delete");
        kv.apply(vec![KvOp::Put {
            tree: "u".into(),
            key: b"b".to_vec(),
            value: vec![7; 100_000],
        }])
        .expect("apply");
    }
    // A parallel test's child may briefly hold a copy of the lock's file
    // descriptor (see `SledStore::open_waiting`).
    let kv = SledStore::open_waiting(&path, super::DEFAULT_CACHE_BYTES, Duration::from_secs(10))
        .expect("reopen");
    assert_eq!(kv.get("t", b"a").expect("get"), Some(b"1".to_vec()));
    assert_eq!(kv.get("t", b"gone").expect("get"), None);
    assert_eq!(kv.get("u", b"b").expect("get"), Some(vec![7; 100_000]));
}

#[test]
fn opening_waits_for_the_lock_to_be_let_go() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let held = SledStore::open(&path).expect("open");
    held.put("t", b"a", b"1").expect("put");
    // Held: no wait fails at once, a short wait fails saying why.
    assert!(SledStore::open_with_cache(&path, DEFAULT_CACHE_BYTES).is_err());
    let err = SledStore::open_waiting(&path, DEFAULT_CACHE_BYTES, Duration::from_millis(300))
        .expect_err("still held");
    assert!(
        err.to_string().contains("another process has it open"),
        "{err}"
    );
    // Let go while the next open waits: it opens, with the data.
    let letting_go = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        drop(held);
    });
    let kv = SledStore::open_waiting(&path, DEFAULT_CACHE_BYTES, Duration::from_secs(30))
        .expect("opened once let go");
    letting_go.join().expect("thread");
    assert_eq!(kv.get("t", b"a").expect("get"), Some(b"1".to_vec()));
}

const EXIT_CHILD_DIR: &str = "CLIPFORGE_KV_EXIT_CHILD_DIR";

/// Helper for the next test, run in a child process: writes, then exits
/// without running any destructor, so sled gets no chance to flush on
/// drop. Does nothing in a normal test run.
#[test]
fn exit_child_writes_then_exits() {
    let Some(dir) = std::env::var_os(EXIT_CHILD_DIR) else {
        return;
    };
    let kv = SledStore::open(Path::new(&dir)).expect("open in child");
    kv.put("t", b"put", b"1").expect("put");
    kv.apply(vec![
        KvOp::Put {
            tree: "t".into(),
            key: b"batch".to_vec(),
            value: b"2".to_vec(),
        },
        KvOp::Put {
            tree: "u".into(),
            key: b"batch".to_vec(),
            value: b"3".to_vec(),
        },
    ])
    .expect("apply");
    kv.put("t", b"deleted", b"x").expect("put");
    kv.delete("t", b"deleted").expect("delete");
    std::process::exit(0);
}

#[test]
fn sled_writes_are_durable_when_they_return() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("db");
    let module = module_path!()
        .split_once("::")
        .map_or("", |(_crate, rest)| rest);
    let child_test = format!("{module}::exit_child_writes_then_exits");
    let exe = std::env::current_exe().expect("test executable");
    let child = Command::new(exe)
        .args([child_test.as_str(), "--exact", "--test-threads=1"])
        .env(EXIT_CHILD_DIR, &path)
        .output()
        .expect("run child test process");
    assert!(
        child.status.success(),
        "child process failed: {}\n{}{}",
        child.status,
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );

    let kv = SledStore::open(&path).expect("reopen after child exit");
    assert_eq!(
        kv.get("t", b"put").expect("get"),
        Some(b"1".to_vec()),
        "a put acknowledged before exit was lost (or the child test {child_test} did not run)"
    );
    assert_eq!(kv.get("t", b"batch").expect("get"), Some(b"2".to_vec()));
    assert_eq!(kv.get("u", b"batch").expect("get"), Some(b"3".to_vec()));
    assert_eq!(kv.get("t", b"deleted").expect("get"), None);
}

#[tokio::test]
async fn typed_values_round_trip() {
    let kv = MemoryStore::new();
    let job = Job {
        id: "job-1".into(),
        state: State::Done { clips: 3 },
        tags: vec!["a".into(), "b".into()],
        score: None,
    };
    put_value(&kv, "jobs", b"job-1", &job).expect("put_value");
    assert_eq!(
        get_value_async::<Job>(&kv, "jobs", b"job-1")
            .await
            .expect("get_value"),
        Some(job)
    );
    let none = get_value_async::<Job>(&kv, "jobs", b"none").await;
    assert_eq!(none.expect("get"), None);
    let queued = encode(&State::Queued).expect("encode");
    assert_eq!(decode::<State>(&queued).expect("decode"), State::Queued);
}

#[tokio::test]
async fn undecodable_values_are_corrupt() {
    let kv = MemoryStore::new();
    // A version-1 header, then bytes that are no `Job`.
    kv.put("jobs", b"bad", &[0xff, 0, 1, 0xff, 0xff])
        .expect("put");
    let err = get_value_async::<Job>(&kv, "jobs", b"bad")
        .await
        .expect_err("garbage must not decode");
    assert!(
        matches!(err, StorageError::Corrupt(ref m) if m.contains("\"bad\"")),
        "{err}"
    );

    let mut bytes = encode(&7u64).expect("encode");
    bytes.push(0);
    let err = decode::<u64>(&bytes).expect_err("trailing bytes");
    assert!(matches!(err, StorageError::Corrupt(_)), "{err}");
}
