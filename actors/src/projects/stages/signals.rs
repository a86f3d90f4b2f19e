//! Signal features of the media for scoring: loudness per window and
//! scene-change times, with the indexes that answer per-span questions in
//! O(1) or O(log n).

/// Loudness windows quieter than this are silence and do not count.
const SILENT_DB: f32 = -60.0;

/// Signal features measured from the media by other code.
#[derive(Clone, Debug, Default)]
pub struct Signals {
    /// Loudness in dBFS (RMS) per window of `loudness_step` seconds, window i covers [i*step, (i+1)*step).
    pub loudness_db: Vec<f32>,
    pub loudness_step: f64,
    /// Times (seconds) where ffmpeg's scene detection saw a cut.
    pub scene_changes: Vec<f64>,
}

/// Prefix sums over the voiced loudness windows, for O(1) std-dev of any span.
pub(super) struct LoudnessIndex {
    step: f64,
    count: Vec<u32>,
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
}

impl LoudnessIndex {
    pub(super) fn new(signals: &Signals) -> Self {
        let step = signals.loudness_step;
        let n = signals.loudness_db.len();
        let mut index = Self {
            step,
            count: Vec::with_capacity(n + 1),
            sum: Vec::with_capacity(n + 1),
            sum_sq: Vec::with_capacity(n + 1),
        };
        let (mut count, mut sum, mut sum_sq) = (0u32, 0.0f64, 0.0f64);
        index.count.push(count);
        index.sum.push(sum);
        index.sum_sq.push(sum_sq);
        for &db in &signals.loudness_db {
            if db.is_finite() && db >= SILENT_DB {
                // Shifted to be non-negative and small, which keeps the sums precise.
                let v = f64::from(db - SILENT_DB);
                count += 1;
                sum += v;
                sum_sq += v * v;
            }
            index.count.push(count);
            index.sum.push(sum);
            index.sum_sq.push(sum_sq);
        }
        index
    }

    /// Std-dev (dB) of the voiced windows overlapping `[start, end)`, or
    /// `None` when there is too little data to say.
    pub(super) fn variation(&self, start: f64, end: f64) -> Option<f64> {
        let windows = self.count.len() - 1;
        if !(self.step.is_finite() && self.step > 0.0) || windows == 0 {
            return None;
        }
        let lo = (start / self.step).floor().max(0.0) as usize;
        let hi = ((end / self.step).ceil().max(0.0) as usize).min(windows);
        if lo >= hi {
            return None;
        }
        let n = self.count[hi] - self.count[lo];
        if n < 3 {
            return None;
        }
        let n = f64::from(n);
        let mean = (self.sum[hi] - self.sum[lo]) / n;
        let var = (self.sum_sq[hi] - self.sum_sq[lo]) / n - mean * mean;
        Some(var.max(0.0).sqrt())
    }
}

/// Sorted scene-change times.
pub(super) struct SceneIndex {
    times: Vec<f64>,
}

impl SceneIndex {
    pub(super) fn new(times: &[f64]) -> Self {
        let mut times: Vec<f64> = times.iter().copied().filter(|t| t.is_finite()).collect();
        times.sort_by(f64::total_cmp);
        times.dedup();
        Self { times }
    }

    /// Scene changes strictly inside `(start, end)`, per minute.
    pub(super) fn per_minute(&self, start: f64, end: f64) -> f64 {
        let len = end - start;
        if !len.is_finite() || len <= 0.0 {
            return 0.0;
        }
        let hi = self.times.partition_point(|&x| x < end);
        let lo = self.times.partition_point(|&x| x <= start);
        hi.saturating_sub(lo) as f64 * 60.0 / len
    }
}
