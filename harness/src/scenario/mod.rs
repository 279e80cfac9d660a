//! Scripted scenarios that drive a wrapper and the fake daemon together and
//! report what happened as data.
//!
//! Each scenario returns a report whose outcome is a measurement (the
//! wrapper under test may well fail it); a `HarnessError` means the scenario
//! itself could not be carried out.

pub mod down_up;
pub mod hang;
pub mod hostile;
mod live;
pub mod outcome;
pub mod race;
pub mod soak;
pub mod storm;
pub mod sweep;

use std::time::Duration;

use serde::Serializer;

/// Serializes a duration as fractional milliseconds, the unit reports use.
pub(crate) fn serialize_ms<S: Serializer>(
    duration: &Duration,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
}

/// Serializes an optional duration as fractional milliseconds or `null`.
pub(crate) fn serialize_opt_ms<S: Serializer>(
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

/// How [`table_lines`] aligns its columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// The first column left, the others right (figures).
    FirstLeft,
    /// Every column left, trailing spaces trimmed (text).
    Left,
}

/// A plain-text table for people: the header line, a rule (`---|---`), then
/// a line per row; columns as wide as their widest cell, separated by ` | `.
pub fn table_lines<R, S>(header: &[&str], rows: &[R], align: Align) -> Vec<String>
where
    R: AsRef<[S]>,
    S: AsRef<str>,
{
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.as_ref()[i].as_ref().len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let text = cells
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| {
                if i == 0 || align == Align::Left {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect::<Vec<_>>()
            .join(" | ");
        match align {
            Align::FirstLeft => text,
            Align::Left => text.trim_end().to_owned(),
        }
    };
    let mut lines = vec![
        line(&mut header.iter().copied()),
        widths
            .iter()
            .map(|w| "-".repeat(*w))
            .collect::<Vec<_>>()
            .join("-|-"),
    ];
    lines.extend(
        rows.iter()
            .map(|r| line(&mut r.as_ref().iter().map(AsRef::as_ref))),
    );
    lines
}
