//! Counters for `/metrics` (Prometheus text format): requests and their
//! latencies, stage durations, projects by outcome.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;

use crate::project::stages::Stage;

const BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, v: f64) {
        for (i, b) in BUCKETS.iter().enumerate() {
            if v <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += v;
        self.count += 1;
    }
}

#[derive(Default)]
struct Inner {
    requests: BTreeMap<(String, u16), u64>,
    latency: Histogram,
    stages: BTreeMap<&'static str, (f64, u64)>,
    projects: BTreeMap<&'static str, u64>,
}

#[derive(Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    pub fn observe_request(&self, method: &str, status: u16, secs: f64) {
        if let Ok(mut m) = self.inner.lock() {
            *m.requests.entry((method.to_string(), status)).or_default() += 1;
            m.latency.observe(secs);
        }
    }

    pub fn observe_stage(&self, stage: Stage, secs: f64) {
        if let Ok(mut m) = self.inner.lock() {
            let e = m.stages.entry(stage.name()).or_default();
            e.0 += secs;
            e.1 += 1;
        }
    }

    pub fn project_finished(&self, outcome: &'static str, _secs: f64) {
        if let Ok(mut m) = self.inner.lock() {
            *m.projects.entry(outcome).or_default() += 1;
        }
    }

    /// Prometheus text; `gauges` are (name, help, value) measured by the caller.
    pub fn render(&self, gauges: &[(&str, &str, f64)]) -> String {
        let mut out = String::new();
        let Ok(m) = self.inner.lock() else { return out };
        let _ = writeln!(
            out,
            "# HELP clipforge_http_requests_total HTTP requests by method and status."
        );
        let _ = writeln!(out, "# TYPE clipforge_http_requests_total counter");
        for ((method, status), n) in &m.requests {
            let _ = writeln!(
                out,
                "clipforge_http_requests_total{{method=\"{method}\",status=\"{status}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP clipforge_http_request_duration_seconds HTTP request latency."
        );
        let _ = writeln!(
            out,
            "# TYPE clipforge_http_request_duration_seconds histogram"
        );
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "clipforge_http_request_duration_seconds_bucket{{le=\"{b}\"}} {}",
                m.latency.counts[i]
            );
        }
        let _ = writeln!(
            out,
            "clipforge_http_request_duration_seconds_bucket{{le=\"+Inf\"}} {}",
            m.latency.count
        );
        let _ = writeln!(
            out,
            "clipforge_http_request_duration_seconds_sum {}",
            m.latency.sum
        );
        let _ = writeln!(
            out,
            "clipforge_http_request_duration_seconds_count {}",
            m.latency.count
        );
        let _ = writeln!(
            out,
            "# HELP clipforge_stage_duration_seconds Time spent in pipeline stages."
        );
        let _ = writeln!(out, "# TYPE clipforge_stage_duration_seconds summary");
        for (stage, (sum, count)) in &m.stages {
            let _ = writeln!(
                out,
                "clipforge_stage_duration_seconds_sum{{stage=\"{stage}\"}} {sum}"
            );
            let _ = writeln!(
                out,
                "clipforge_stage_duration_seconds_count{{stage=\"{stage}\"}} {count}"
            );
        }
        let _ = writeln!(out, "# HELP clipforge_projects_total Projects by outcome.");
        let _ = writeln!(out, "# TYPE clipforge_projects_total counter");
        for (outcome, n) in &m.projects {
            let _ = writeln!(out, "clipforge_projects_total{{outcome=\"{outcome}\"}} {n}");
        }
        for (name, help, value) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} gauge");
            let _ = writeln!(out, "{name} {value}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let m = Metrics::default();
        m.observe_request("GET", 200, 0.02);
        m.observe_stage(Stage::Cut, 1.5);
        let text = m.render(&[("clipforge_queue_depth", "Projects waiting.", 2.0)]);
        assert!(text.contains("clipforge_http_requests_total{method=\"GET\",status=\"200\"} 1"));
        assert!(text.contains("clipforge_http_request_duration_seconds_bucket{le=\"0.025\"} 1"));
        assert!(text.contains("clipforge_http_request_duration_seconds_bucket{le=\"0.01\"} 0"));
        assert!(text.contains("clipforge_stage_duration_seconds_count{stage=\"cut\"} 1"));
        assert!(text.contains("clipforge_queue_depth 2"));
    }
}
