//! Order statistics over recorded samples.
//!
//! Every latency is kept (one `u64` of nanoseconds per call: 80 KB for the
//! default 10 000 calls) and sorted once at the end, so percentiles are
//! exact nearest-rank values rather than bucket approximations, and the
//! bench needs no statistics dependency.

use std::time::Duration;

use serde::Serialize;

/// The distribution of a set of durations, in nanoseconds. Percentiles are
/// nearest-rank: the p-th of `n` sorted samples is the one at rank
/// `ceil(p / 100 * n)`, always a value actually observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// How many samples were summarised.
    pub count: usize,
    /// The smallest sample.
    pub min_ns: u64,
    /// The median (nearest rank).
    pub p50_ns: u64,
    /// The 99th percentile (nearest rank).
    pub p99_ns: u64,
    /// The largest sample.
    pub max_ns: u64,
    /// The arithmetic mean, rounded down.
    pub mean_ns: u64,
}

impl Summary {
    /// Summarises `samples` (nanoseconds), sorting them in place; `None`
    /// when there are none.
    pub fn from_samples(samples: &mut [u64]) -> Option<Self> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let count = samples.len();
        // Rank in 1..=count; the clamp keeps it in range whatever `p`.
        let percentile =
            |p: f64| samples[((p / 100.0 * count as f64).ceil() as usize).clamp(1, count) - 1];
        let total: u128 = samples.iter().map(|&s| u128::from(s)).sum();
        Some(Self {
            count,
            min_ns: samples[0],
            p50_ns: percentile(50.0),
            p99_ns: percentile(99.0),
            max_ns: samples[count - 1],
            mean_ns: u64::try_from(total / count as u128).unwrap_or(u64::MAX),
        })
    }
}

/// A duration in whole nanoseconds, saturating at `u64::MAX` (584 years).
pub fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let summarise = |mut samples: Vec<u64>| {
            let summary = Summary::from_samples(&mut samples).unwrap();
            (summary.p50_ns, summary.p99_ns)
        };
        assert_eq!(summarise((1..=100).collect()), (50, 99));
        assert_eq!(summarise(vec![7]), (7, 7));
        // 20 samples: the median is the 10th, p99 the 20th.
        assert_eq!(summarise((1..=20).map(|x| x * 10).collect()), (100, 200));
    }

    #[test]
    fn summary_sorts_and_summarises() {
        let mut samples = vec![5, 1, 4, 2, 3];
        let summary = Summary::from_samples(&mut samples).unwrap();
        assert_eq!(samples, [1, 2, 3, 4, 5]);
        assert_eq!(
            summary,
            Summary {
                count: 5,
                min_ns: 1,
                p50_ns: 3,
                p99_ns: 5,
                max_ns: 5,
                mean_ns: 3,
            }
        );
        assert_eq!(Summary::from_samples(&mut []), None);
        let mut huge = vec![u64::MAX, u64::MAX];
        assert_eq!(Summary::from_samples(&mut huge).unwrap().mean_ns, u64::MAX);
    }

    #[test]
    fn nanos_saturates() {
        assert_eq!(nanos(Duration::from_micros(3)), 3_000);
        assert_eq!(nanos(Duration::MAX), u64::MAX);
    }
}
