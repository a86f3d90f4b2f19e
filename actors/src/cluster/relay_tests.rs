use super::*;

/// Dropping the rest of a body stops the task reading it, even one
/// waiting for a chunk that never comes (a stream whose client left).
#[tokio::test]
async fn dropping_the_rest_of_a_body_stops_its_reader() {
    let (tx, rx) = mpsc::channel(1);
    let (alive, ended) = oneshot::channel::<()>();
    let reader = tokio::spawn(async move {
        let _alive = alive;
        let _tx = tx;
        std::future::pending::<()>().await;
    });
    let rest = BodyRest::new(rx, reader);
    drop(rest);
    let gone = tokio::time::timeout(Duration::from_secs(10), ended).await;
    assert!(
        gone.expect("the reader stopped").is_err(),
        "it ends without sending"
    );
}

/// Request ids are unique within a run and carry a prefix of their own
/// per run, so a late answer to an earlier run's request matches nothing.
#[test]
fn request_ids_are_unique_and_differ_between_runs() {
    let run = Replies::default();
    let ids: std::collections::HashSet<String> = (0..1000).map(|_| run.next_id()).collect();
    assert_eq!(ids.len(), 1000);
    let prefix = |id: &str| id.split('.').next().map(str::to_string);
    let next = Replies::default().next_id();
    assert_ne!(prefix(&next), prefix(ids.iter().next().unwrap()));
}

/// A streamed body is collected to its end; a complete one is itself.
#[tokio::test]
async fn a_reply_body_collects_whole() {
    assert_eq!(ReplyBody::Complete(b"{}".to_vec()).collect().await, b"{}");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for c in [&b"ab"[..], b"", b"cd"] {
        tx.send(c.to_vec()).unwrap();
    }
    drop(tx);
    assert_eq!(ReplyBody::Stream(rx).collect().await, b"abcd");
}
