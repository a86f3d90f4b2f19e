//! `/metrics` in Prometheus text, through the `metrics` facade and
//! `metrics-exporter-prometheus`: requests by method, route and status and
//! their latency per route, stage durations, projects by outcome, and the
//! gauges the caller measures (actor counts by kind, queue depth).

use std::sync::OnceLock;

use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

const BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];
const STAGE_BUCKETS: [f64; 8] = [1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0];

/// The process's recorder, installed on first use (the facade is global:
/// every `Metrics` of the process renders the same registry).
fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(
                metrics_exporter_prometheus::Matcher::Full(
                    "clipforge_http_request_duration_seconds".into(),
                ),
                &BUCKETS,
            )
            .and_then(|b| {
                b.set_buckets_for_metric(
                    metrics_exporter_prometheus::Matcher::Full(
                        "clipforge_stage_duration_seconds".into(),
                    ),
                    &STAGE_BUCKETS,
                )
            })
            .expect("bucket lists are not empty")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed: /metrics stays empty");
        }
        describe();
        handle
    })
}

fn describe() {
    metrics::describe_counter!(
        "clipforge_http_requests_total",
        "HTTP requests by method, route and status."
    );
    metrics::describe_histogram!(
        "clipforge_http_request_duration_seconds",
        metrics::Unit::Seconds,
        "HTTP request latency by route."
    );
    metrics::describe_histogram!(
        "clipforge_stage_duration_seconds",
        metrics::Unit::Seconds,
        "Time spent in pipeline stages."
    );
    metrics::describe_counter!("clipforge_projects_total", "Projects by outcome.");
}

/// The node's metrics; cheap to call from any thread (no global lock).
pub struct Metrics {
    handle: &'static PrometheusHandle,
}

impl Default for Metrics {
    fn default() -> Self {
        Self { handle: handle() }
    }
}

/// A route label for `path` without unbounded cardinality: id-like
/// segments become `:id`; outside `/api` and `/admin` only the first
/// segment is kept.
pub fn route_label(path: &str) -> String {
    let mut segs = path.split('/').filter(|s| !s.is_empty());
    let first = segs.next().unwrap_or("");
    if first != "api" && first != "admin" {
        return if first.is_empty() {
            "/".into()
        } else {
            format!("/{first}/*")
        };
    }
    let mut out = format!("/{first}");
    for s in segs.take(6) {
        let id_like = s.len() >= 8 && s.bytes().any(|b| b.is_ascii_digit())
            || s.contains(':')
            || s.contains('@');
        out.push('/');
        out.push_str(if id_like { ":id" } else { s });
    }
    out
}

/// A gauge the caller measured: name, labels, help text, value.
pub type Gauge<'a> = (
    &'static str,
    &'a [(&'static str, &'a str)],
    &'static str,
    f64,
);

impl Metrics {
    pub fn observe_request(&self, method: &str, route: &str, status: u16, secs: f64) {
        metrics::counter!(
            "clipforge_http_requests_total",
            "method" => method.to_string(), "route" => route.to_string(), "status" => status.to_string()
        )
        .increment(1);
        metrics::histogram!("clipforge_http_request_duration_seconds", "route" => route.to_string())
            .record(secs);
    }

    /// How long a run of the stage named `stage` (`Stage::name`) took.
    pub fn observe_stage(&self, stage: &'static str, secs: f64) {
        metrics::histogram!("clipforge_stage_duration_seconds", "stage" => stage).record(secs);
    }

    pub fn project_finished(&self, outcome: &'static str, _secs: f64) {
        metrics::counter!("clipforge_projects_total", "outcome" => outcome).increment(1);
    }

    /// Prometheus text; `gauges` are (name, labels, help, value) measured
    /// by the caller at scrape time.
    pub fn render(&self, gauges: &[Gauge<'_>]) -> String {
        for (name, labels, help, value) in gauges {
            metrics::describe_gauge!(*name, *help);
            let labels: Vec<metrics::Label> = labels
                .iter()
                .map(|(k, v)| metrics::Label::new(*k, v.to_string()))
                .collect();
            metrics::gauge!(*name, labels).set(*value);
        }
        self.handle.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::default();
        m.observe_request("GET", "/api/unit-test", 200, 0.02);
        m.observe_stage("cut", 1.5);
        let text = m.render(&[(
            "clipforge_unit_test_depth",
            &[("kind", "project")],
            "Projects waiting.",
            2.0,
        )]);
        assert!(
            text.contains(
                "clipforge_http_requests_total{method=\"GET\",route=\"/api/unit-test\",status=\"200\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains(
            "clipforge_http_request_duration_seconds_bucket{route=\"/api/unit-test\",le=\"0.025\"} 1"
        ));
        assert!(text.contains(
            "clipforge_http_request_duration_seconds_bucket{route=\"/api/unit-test\",le=\"0.01\"} 0"
        ));
        assert!(text.contains("clipforge_stage_duration_seconds_count{stage=\"cut\"} 1"));
        assert!(text.contains("clipforge_unit_test_depth{kind=\"project\"} 2"));
    }

    #[test]
    fn route_labels_have_bounded_cardinality() {
        assert_eq!(
            route_label("/api/projects/3f1c2a9e-1111-4222-8333-944445555666/status"),
            "/api/projects/:id/status"
        );
        assert_eq!(route_label("/api/credits"), "/api/credits");
        assert_eq!(route_label("/admin/actors/user:abc"), "/admin/actors/:id");
        assert_eq!(route_label("/media/projects/x/clip.mp4"), "/media/*");
        assert_eq!(route_label("/"), "/");
    }
}
