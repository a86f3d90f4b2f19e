//! The object-store conformance suite against `S3Store`, talking to a local
//! `moto_server` (PyPI `moto[server]`) on 127.0.0.1.

use std::io::Read;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clipforge_actors::storage::objects::{
    install_default_crypto_provider, object_store_conformance, ObjectStore, S3Config, S3Store,
};

const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `moto_server`, killed when dropped (also when a test panics).
struct MotoServer {
    child: Child,
    log: tempfile::NamedTempFile,
    endpoint: String,
}

impl MotoServer {
    /// Starts `moto_server` on a free loopback port and waits until it
    /// answers HTTP.
    async fn start() -> MotoServer {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("find a free port on 127.0.0.1")
            .port();
        let log = tempfile::NamedTempFile::new().expect("create the moto_server log file");
        let stderr = log.reopen().expect("open the moto_server log file");
        let child = match Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
        {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!(
                "moto_server is not on PATH; this test needs it: \
                 install it with `python3 -m pip install 'moto[server]'`"
            ),
            Err(e) => panic!("could not start moto_server: {e}"),
        };
        let mut server = MotoServer {
            child,
            log,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        server.wait_until_ready().await;
        server
    }

    async fn wait_until_ready(&mut self) {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("build an HTTP client");
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("poll moto_server") {
                panic!("moto_server exited with {status}:\n{}", self.log_text());
            }
            if http.get(&self.endpoint).send().await.is_ok() {
                return;
            }
            if started.elapsed() > STARTUP_TIMEOUT {
                panic!(
                    "moto_server did not answer on {} within {STARTUP_TIMEOUT:?}:\n{}",
                    self.endpoint,
                    self.log_text()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn log_text(&self) -> String {
        let mut text = String::new();
        match self
            .log
            .reopen()
            .and_then(|mut f| f.read_to_string(&mut text))
        {
            Ok(_) => text,
            Err(e) => format!("(could not read the moto_server log: {e})"),
        }
    }
}

impl Drop for MotoServer {
    fn drop(&mut self) {
        // Errors mean it has already exited, which is the goal.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_store_conforms_against_moto() {
    install_default_crypto_provider();
    let moto = MotoServer::start().await;
    let config = S3Config {
        bucket: "clipforge-conformance".to_string(),
        // Not us-east-1, so bucket creation must name its location.
        region: "eu-west-1".to_string(),
        endpoint_url: Some(moto.endpoint.clone()),
        access_key_id: "test-access-key".to_string(),
        secret_access_key: "test-secret-key".to_string(),
        create_bucket: true,
    };
    let store = S3Store::connect(config.clone())
        .await
        .expect("connect and create the bucket");
    S3Store::connect(config)
        .await
        .expect("connect when the bucket already exists");

    object_store_conformance(&store).await;

    let url = store
        .url("conformance/any", Duration::from_secs(60))
        .await
        .expect("presign");
    assert!(
        url.starts_with(&format!("{}/clipforge-conformance/", moto.endpoint)),
        "a custom endpoint uses path-style URLs: {url}"
    );
    assert!(
        store
            .url("conformance/any", Duration::from_secs(8 * 24 * 3600))
            .await
            .is_err(),
        "S3 presigned URLs cannot live longer than 7 days"
    );
}

#[tokio::test]
async fn s3_config_requires_a_bucket() {
    let config = S3Config {
        bucket: String::new(),
        region: "eu-west-1".to_string(),
        endpoint_url: None,
        access_key_id: "a".to_string(),
        secret_access_key: "b".to_string(),
        create_bucket: false,
    };
    assert!(S3Store::connect(config).await.is_err());
}
