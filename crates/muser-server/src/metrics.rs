//! Prometheus metrics in the text exposition format: request counts by endpoint and status,
//! token counts, queue depth, running sequences, KV usage, and TTFT / inter-token latency /
//! request duration histograms.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;

use muser_engine::sched::SchedStats;

/// A cumulative histogram with fixed upper bounds (seconds).
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    inner: Mutex<HistData>,
}

#[derive(Debug, Default, Clone)]
struct HistData {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            inner: Mutex::new(HistData {
                counts: vec![0; bounds.len()],
                ..HistData::default()
            }),
        }
    }

    pub fn observe(&self, v: f64) {
        let mut d = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = self.bounds.iter().position(|&b| v <= b) {
            d.counts[i] += 1;
        }
        d.sum += v;
        d.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).count
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let d = self.inner.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        let mut acc = 0;
        for (b, c) in self.bounds.iter().zip(&d.counts) {
            acc += c;
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {acc}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}", d.count);
        let _ = writeln!(out, "{name}_sum {}", d.sum);
        let _ = writeln!(out, "{name}_count {}", d.count);
    }
}

const LATENCY: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];
const DURATION: &[f64] = &[0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

/// Everything `/metrics` reports besides the scheduler's own counters.
#[derive(Debug)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, u16), u64>>,
    pub ttft: Histogram,
    pub itl: Histogram,
    pub duration: Histogram,
    /// `response_format` JSON answers that did not parse as JSON.
    pub response_format_invalid: std::sync::atomic::AtomicU64,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            requests: Mutex::new(BTreeMap::new()),
            ttft: Histogram::new(LATENCY),
            itl: Histogram::new(LATENCY),
            duration: Histogram::new(DURATION),
            response_format_invalid: Default::default(),
        }
    }
}

impl Metrics {
    pub fn request(&self, endpoint: &str, status: u16) {
        let mut m = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry((endpoint.to_string(), status)).or_default() += 1;
    }

    /// The exposition text, with the scheduler's gauges and counters.
    pub fn render(&self, s: &SchedStats, kv_capacity_positions: u64) -> String {
        let mut out = String::new();
        let g = SchedStats::get;
        let _ = writeln!(
            out,
            "# HELP muser_requests_total HTTP requests by endpoint and status.\n# TYPE muser_requests_total counter"
        );
        for ((ep, st), n) in self
            .requests
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "muser_requests_total{{endpoint=\"{ep}\",status=\"{st}\"}} {n}"
            );
        }
        let scalar = |out: &mut String, name: &str, kind: &str, help: &str, v: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}"
            );
        };
        scalar(
            &mut out,
            "muser_queue_depth",
            "gauge",
            "Requests waiting for a sequence slot.",
            g(&s.queue_depth),
        );
        scalar(
            &mut out,
            "muser_running_sequences",
            "gauge",
            "Sequences being prefilled or decoded.",
            g(&s.running),
        );
        scalar(
            &mut out,
            "muser_kv_positions",
            "gauge",
            "Cached positions over all running sequences.",
            g(&s.kv_positions),
        );
        scalar(
            &mut out,
            "muser_kv_capacity_positions",
            "gauge",
            "Positions all sequence slots can hold together.",
            kv_capacity_positions,
        );
        scalar(
            &mut out,
            "muser_kv_bytes",
            "gauge",
            "Bytes held by running sequences' KV caches.",
            g(&s.kv_bytes),
        );
        scalar(
            &mut out,
            "muser_prompt_tokens_total",
            "counter",
            "Prompt tokens prefilled.",
            g(&s.prompt_tokens),
        );
        scalar(
            &mut out,
            "muser_generated_tokens_total",
            "counter",
            "Tokens generated.",
            g(&s.generated_tokens),
        );
        scalar(
            &mut out,
            "muser_steps_total",
            "counter",
            "Batched forward passes.",
            g(&s.steps),
        );
        scalar(
            &mut out,
            "muser_step_rows_total",
            "counter",
            "Rows over all forward passes (rows/steps = mean batch).",
            g(&s.step_rows),
        );
        scalar(
            &mut out,
            "muser_sequences_cancelled_total",
            "counter",
            "Sequences ended because the client went away.",
            g(&s.cancelled),
        );
        scalar(
            &mut out,
            "muser_response_format_invalid_total",
            "counter",
            "JSON-mode answers that were not valid JSON (cut by max_tokens, or text outside the answer channel).",
            self.response_format_invalid
                .load(std::sync::atomic::Ordering::Relaxed),
        );
        self.ttft.render(
            &mut out,
            "muser_time_to_first_token_seconds",
            "Time from request to first generated token.",
        );
        self.itl.render(
            &mut out,
            "muser_inter_token_latency_seconds",
            "Time between consecutive generated tokens of a sequence.",
        );
        self.duration.render(
            &mut out,
            "muser_request_duration_seconds",
            "Time from request to its last token.",
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let h = Histogram::new(&[0.1, 1.0]);
        for v in [0.05, 0.5, 0.7, 3.0] {
            h.observe(v);
        }
        let mut out = String::new();
        h.render(&mut out, "x", "help");
        assert!(out.contains("x_bucket{le=\"0.1\"} 1\n"));
        assert!(out.contains("x_bucket{le=\"1\"} 3\n"));
        assert!(out.contains("x_bucket{le=\"+Inf\"} 4\n"));
        assert!(out.contains("x_count 4\n"));
    }
}
