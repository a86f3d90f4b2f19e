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
