//! Figures for people and for JSON reports, one spelling each.

use std::time::Duration;

use serde::Serializer;

/// Serializes a duration as fractional milliseconds, the unit reports use.
pub fn serialize_ms<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
}

/// Serializes an optional duration as fractional milliseconds or `null`.
pub fn serialize_opt_ms<S: Serializer>(
    duration: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match duration {
        Some(d) => serialize_ms(d, serializer),
        None => serializer.serialize_none(),
    }
}

/// Formats a duration in milliseconds for people: `1003 ms`, or with one
/// decimal below 10 ms (`0.7 ms`), where whole milliseconds say too little.
pub fn format_ms(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1000.0;
    if ms < 10.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{} ms", duration.as_millis())
    }
}

/// Formats KiB as MiB with one decimal, or `n/a`.
pub fn format_kib(kib: Option<u64>) -> String {
    kib.map_or_else(
        || "n/a".to_owned(),
        |k| format!("{:.1} MiB", k as f64 / 1024.0),
    )
}

/// Formats a signed KiB growth as MiB with one decimal and a sign, or `n/a`.
pub fn format_growth(kib: Option<i64>) -> String {
    kib.map_or_else(
        || "n/a".to_owned(),
        |k| format!("{:+.1} MiB", k as f64 / 1024.0),
    )
}

/// A duration in a readable unit: `850 ns`, `12.3 µs`, `4.56 ms`, `1.23 s`.
pub fn format_ns(ns: u64) -> String {
    let ns_f = ns as f64;
    if ns < 1_000 {
        format!("{ns} ns")
    } else if ns < 1_000_000 {
        format!("{:.1} µs", ns_f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2} ms", ns_f / 1e6)
    } else {
        format!("{:.2} s", ns_f / 1e9)
    }
}

/// A rate with thousands separators: `45,678 calls/s`.
pub fn format_rate(per_sec: f64) -> String {
    let whole = per_sec.round().max(0.0) as u64;
    let digits = whole.to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(c);
    }
    format!("{grouped} calls/s")
}

/// A ratio: `1.96×`.
pub fn format_ratio(ratio: f64) -> String {
    format!("{ratio:.2}×")
}

/// Bytes in decimal megabytes: `4.2 MB`.
pub fn format_bytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The last `n` lines of `text`, joined with `separator` (for quoting the
/// end of a log in a message).
pub fn last_lines(text: &str, n: usize, separator: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join(separator)
}

/// Escapes `text` for XML and HTML character data and attribute values
/// (`&`, `<`, `>`, `"`, `'`), and drops control characters XML 1.0 does
/// not allow.
pub fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c < ' ' || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Shortens `text` to at most `max` characters, ending in `...` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let kept: String = text.chars().take(max.saturating_sub(3)).collect();
        format!("{kept}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_shortened_to_its_limit() {
        assert_eq!(shorten("abc", 5), "abc");
        assert_eq!(shorten("abcdefgh", 6), "abc...");
    }

    #[test]
    fn figures_read_well() {
        assert_eq!(format_ms(Duration::from_micros(700)), "0.7 ms");
        assert_eq!(format_ms(Duration::from_millis(1003)), "1003 ms");
        assert_eq!(format_kib(Some(1536)), "1.5 MiB");
        assert_eq!(format_kib(None), "n/a");
        assert_eq!(format_growth(Some(1536)), "+1.5 MiB");
        assert_eq!(format_growth(Some(-512)), "-0.5 MiB");
        assert_eq!(format_ns(850), "850 ns");
        assert_eq!(format_ns(12_345), "12.3 µs");
        assert_eq!(format_ns(4_560_000), "4.56 ms");
        assert_eq!(format_ns(1_230_000_000), "1.23 s");
        assert_eq!(format_rate(999.4), "999 calls/s");
        assert_eq!(format_rate(45_678.4), "45,678 calls/s");
        assert_eq!(format_rate(1_234_567.0), "1,234,567 calls/s");
        assert_eq!(format_ratio(0.5), "0.50×");
        assert_eq!(format_bytes(4_096_000), "4.1 MB");
        assert_eq!(last_lines("a\nb\nc\n", 2, " / "), "b / c");
        assert_eq!(last_lines("a", 5, "\n"), "a");
    }
}
